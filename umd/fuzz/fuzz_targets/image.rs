//! Image input: PGM/JPEG decoding and conversion into an input tensor whose format, type,
//! category and size come from the input too. Errors are fine; panics, hangs and huge
//! allocations are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_loadable::{DataCategory, DataFormat, DataType, PixelFormat, PixelMapping};
use nvdla_umd::image::{decode_jpeg, decode_pgm, image_to_tensor, ImageOptions};
use nvdla_umd::runtime::{Dims, TensorDesc};

fuzz_target!(|data: &[u8]| {
    // 8 bytes of tensor parameters, then the image file.
    let Some((p, file)) = data.split_first_chunk::<8>() else {
        return;
    };
    let img = match p[0] & 1 {
        0 => decode_pgm(file),
        _ => decode_jpeg(file),
    };
    let Ok(img) = img else { return };
    let c = i32::from(p[1] % 5);
    let t = TensorDesc {
        name: "data".into(),
        mem_id: 0,
        offset: 0,
        size: u64::from(u16::from_le_bytes([p[6], p[7]])) * 64,
        dims: Dims {
            n: 1,
            c: if p[0] & 2 == 0 { c } else { img.channels as i32 },
            h: img.height as i32,
            w: img.width as i32,
        },
        data_format: DataFormat::from_raw(p[2] % 4),
        data_type: DataType::from_raw(p[3] % 8),
        data_category: DataCategory::from_raw(p[4] % 5),
        pixel_format: PixelFormat::from_raw(p[5] % 40),
        pixel_mapping: PixelMapping::PITCH_LINEAR,
        strides: [0; 8],
    };
    let opts = ImageOptions {
        normalize: p[6].max(1),
        mean: [f32::from(p[7]), 0.5, -3.0, 0.0],
        ..ImageOptions::default()
    };
    let _ = image_to_tensor(&img, &t, &opts);
});
