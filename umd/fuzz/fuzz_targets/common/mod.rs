//! Shared by the tensor-file targets: an input tensor descriptor made of fuzz bytes, and
//! the conversions both ways.

use nvdla_loadable::{DataCategory, DataFormat, DataType, PixelFormat, PixelMapping};
use nvdla_umd::runtime::{Dims, TensorDesc};
use nvdla_umd::tensor::{self, HostTensor};

/// Converts `t` into a tensor described by the 12 bytes `p` and reads the surface back.
pub fn convert(p: &[u8; 12], t: &HostTensor) {
    let dim = |i: usize| t.shape().get(i).map_or(1, |&d| d.min(64) as i32);
    let n = t.shape().len();
    let (c, h, w) = if p[0] & 1 == 0 && n >= 3 {
        (dim(n - 3), dim(n - 2), dim(n - 1))
    } else {
        (
            i32::from(p[1] % 40),
            i32::from(p[2] % 9),
            i32::from(p[3] % 9),
        )
    };
    let formats = [
        PixelFormat::FEATURE,
        PixelFormat::FEATURE_X8,
        PixelFormat::A16B16G16R16_F,
        PixelFormat::A8B8G8R8,
        PixelFormat::R8,
        PixelFormat::from_raw(p[4]),
    ];
    let desc = TensorDesc {
        name: "data".into(),
        mem_id: 0,
        offset: 0,
        size: u64::from(u16::from_le_bytes([p[5], p[6]])) * 8,
        dims: Dims {
            n: i32::from(p[7] % 3),
            c,
            h,
            w,
        },
        data_format: DataFormat::NCxHWx,
        data_type: DataType::from_raw(p[8] % 8),
        data_category: DataCategory::FEATURE,
        pixel_format: formats[usize::from(p[9]) % formats.len()],
        pixel_mapping: PixelMapping::from_raw(p[10] % 3),
        strides: [
            1,
            u32::from(p[11]) * 8,
            u32::from(p[11]) * 8 * h.max(0) as u32,
            0,
            0,
            0,
            0,
            0,
        ],
    };
    let scale = (p[0] & 2 != 0).then_some(0.125f32);
    if let Ok(surface) = tensor::host_to_input(t, &desc, scale) {
        assert_eq!(surface.len() as u64, desc.size);
        let back = tensor::input_to_host(&desc, &surface, scale).expect("a written surface reads");
        assert_eq!(back.shape()[1..], [c as u64, h as u64, w as u64]);
    }
    let _ = tensor::output_to_host(&desc, &vec![0; desc.size as usize], scale);
}
