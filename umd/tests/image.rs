//! Input image decoding and conversion to the lenet loadables' input tensors.

mod common;

use nvdla_umd::device::MockDevice;
use nvdla_umd::image::{self, ImageError, ImageOptions};
use nvdla_umd::{Direction, Runtime};

fn input_tensor(shared: &std::path::Path, name: &str) -> nvdla_umd::TensorDesc {
    let bytes = common::lenet(shared, name);
    let mut dev = MockDevice::new();
    let rt = Runtime::load(&mut dev, &bytes).unwrap();
    rt.tensor(Direction::Input, 0).unwrap().clone()
}

fn digit(shared: &std::path::Path, name: &str) -> image::SourceImage {
    image::load_image(&shared.join("nvdla-sw-regression/images/digits").join(name)).unwrap()
}

#[test]
fn pgm_digits_decode() {
    let Some(shared) = common::shared("pgm_digits_decode") else {
        return;
    };
    let raw = std::fs::read(shared.join("nvdla-sw-regression/images/digits/eight.pgm")).unwrap();
    let img = digit(&shared, "eight.pgm");
    assert_eq!((img.width, img.height, img.channels), (28, 28, 1));
    // P5 header "P5\n28 28\n255\n" is 13 bytes; the raster follows.
    assert_eq!(img.data, raw[13..]);
    // The same picture as P2 text decodes to the same pixels.
    let mut p2 = String::from("P2\n# converted\n28 28\n255\n");
    for (i, p) in img.data.iter().enumerate() {
        p2.push_str(&p.to_string());
        p2.push(if i % 28 == 27 { '\n' } else { ' ' });
    }
    assert_eq!(image::decode_pgm(p2.as_bytes()).unwrap(), img);
}

#[test]
fn pgm_rejections_are_clear() {
    for (bytes, what) in [
        (&b"P6\n1 1\n255\n\x00\x00\x00"[..], "magic"),
        (b"P5\n2 2\n65535\n", "maximum value"),
        (b"P5\n2 2\n255\n\x01", "truncated"),
        (b"P2\n2 1\n255\n1 300\n", "above 255"),
        (b"P5\nx 2\n255\n", "not a number"),
    ] {
        let e = image::decode_pgm(bytes).unwrap_err().to_string();
        assert!(e.contains(what), "{e}");
    }
}

#[test]
fn jpeg_digits_decode() {
    let Some(shared) = common::shared("jpeg_digits_decode") else {
        return;
    };
    let dir = shared.join("third-party-loadables/lenet-mnist/images");
    for i in 0..10 {
        let img = image::load_image(&dir.join(format!("0_{i}.jpg"))).unwrap();
        assert_eq!((img.width, img.height, img.channels), (28, 28, 1));
        // MNIST: black background, a bright stroke.
        assert!(img.data[0] < 16, "0_{i}.jpg corner {}", img.data[0]);
        assert!(img.data.iter().any(|&p| p > 200), "0_{i}.jpg has no stroke");
    }
    assert!(matches!(
        image::load_image(&dir.join("nope.bmp")),
        Err(ImageError::UnknownType(_))
    ));
}

#[test]
fn jpeg_larger_than_any_input_is_refused_from_its_header() {
    let Some(shared) = common::shared("jpeg_larger_than_any_input_is_refused_from_its_header")
    else {
        return;
    };
    let mut jpg =
        std::fs::read(shared.join("third-party-loadables/lenet-mnist/images/0_3.jpg")).unwrap();
    // The baseline frame header (FF C0, length, precision, height, width): declare the
    // 11292x64284 frame the image fuzz target found taking 22 s and 2.7 GB to decode.
    let sof = jpg.windows(2).position(|w| w == [0xff, 0xc0]).unwrap();
    jpg[sof + 5..sof + 9].copy_from_slice(&[0xfb, 0x1c, 0x2c, 0x1c]);
    let e = image::decode_jpeg(&jpg).unwrap_err().to_string();
    assert!(e.contains("11292x64284") && e.contains("8192"), "{e}");
    // One past the limit, in width only.
    jpg[sof + 5..sof + 9].copy_from_slice(&[0x00, 0x1c, 0x20, 0x01]);
    let e = image::decode_jpeg(&jpg).unwrap_err().to_string();
    assert!(e.contains("8193x28"), "{e}");
}

#[test]
fn fp16_image_input_a16b16g16r16() {
    let Some(shared) = common::shared("fp16_image_input_a16b16g16r16") else {
        return;
    };
    let t = input_tensor(&shared, "lenet_nv_full_fp16_nhwc_fast-math.nvdla");
    let img = digit(&shared, "five.pgm");
    let opts = ImageOptions {
        normalize: 255,
        mean: [10.0, 0.0, 0.0, 0.0],
        ..ImageOptions::default()
    };
    let data = image::image_to_tensor(&img, &t, &opts).unwrap();
    assert_eq!(data.len() as u64, t.size);
    let ls = t.strides[1] as usize;
    for y in 0..28usize {
        for x in 0..28usize {
            let o = y * ls + x * 8;
            let p = f32::from(img.data[y * 28 + x]);
            assert_eq!(
                u16::from_le_bytes([data[o], data[o + 1]]),
                common::f16((p - 10.0) / 255.0),
                "({x},{y})"
            );
            // Channels 1..3 (G, B, A) stay zero for a grey image.
            assert!(data[o + 2..o + 8].iter().all(|&b| b == 0));
        }
    }
    // Default options: the pixel value itself.
    let data = image::image_to_tensor(&img, &t, &ImageOptions::default()).unwrap();
    assert_eq!(
        common::h2f(u16::from_le_bytes([data[0], data[1]])),
        f32::from(img.data[0])
    );
}

#[test]
fn int8_image_input_a8b8g8r8_and_feature_x8() {
    let Some(shared) = common::shared("int8_image_input") else {
        return;
    };
    let img = digit(&shared, "nine.pgm");
    let scaled = |p: u8| ((f64::from(p) * 127.0 / 255.0 + 0.5).floor()) as u8;
    // nv_full int8: A8B8G8R8 image, 4 bytes per pixel.
    let t = input_tensor(&shared, "lenet_nv_full_int8_nhwc_calib_fast-math.nvdla");
    let opts = ImageOptions {
        normalize: 7,
        mean: [100.0; 4],
        ..ImageOptions::default()
    }; // ignored for int8
    let data = image::image_to_tensor(&img, &t, &opts).unwrap();
    let ls = t.strides[1] as usize;
    for y in 0..28usize {
        for x in 0..28usize {
            let p = img.data[y * 28 + x];
            assert_eq!(data[y * ls + x * 4], scaled(p));
            assert_eq!(data[y * ls + x * 4 + 1..y * ls + x * 4 + 4], [0, 0, 0]);
        }
    }
    assert_eq!(scaled(255), 127);
    assert_eq!(scaled(1), 0);
    assert_eq!(scaled(3), 1);
    // nv_small int8: FEATURE_X8, channel groups of 8 bytes.
    let t = input_tensor(&shared, "lenet_nv_small_int8_nchw_calib_fast-math.nvdla");
    let data = image::image_to_tensor(&img, &t, &opts).unwrap();
    let ls = t.strides[1] as usize;
    for y in 0..28usize {
        for x in 0..28usize {
            assert_eq!(data[y * ls + x * 8], scaled(img.data[y * 28 + x]));
        }
    }
}

#[test]
fn mismatches_are_errors() {
    let Some(shared) = common::shared("mismatches_are_errors") else {
        return;
    };
    let t = input_tensor(&shared, "lenet_nv_full_fp16_nhwc_fast-math.nvdla");
    let small = image::decode_pgm(b"P5\n2 2\n255\n\x01\x02\x03\x04").unwrap();
    let e = image::image_to_tensor(&small, &t, &ImageOptions::default()).unwrap_err();
    assert!(matches!(e, ImageError::SizeMismatch { .. }));
    assert_eq!(
        e.to_string(),
        "image is 2x2, the input tensor expects 28x28"
    );
    // A colour image into the 1-channel FEATURE input of NN_L0_0.
    let bytes = common::nn_l0_0(&shared);
    let mut dev = MockDevice::new();
    let rt = Runtime::load(&mut dev, &bytes).unwrap();
    let t = rt.tensor(Direction::Input, 0).unwrap();
    let colour = image::SourceImage {
        format: nvdla_umd::dimg::PixelFormat::T_B8G8R8,
        width: 28,
        height: 28,
        channels: 3,
        data: vec![9; 28 * 28 * 3],
    };
    assert!(matches!(
        image::image_to_tensor(&colour, t, &ImageOptions::default()),
        Err(ImageError::Channels { .. })
    ));
}

#[test]
fn half_data_into_a_one_byte_pixel_format_is_refused() {
    // Found by the image fuzz target: an R8 tensor of data type HALF panicked writing a
    // two-byte half into a one-byte element.
    use nvdla_loadable::{DataCategory, DataFormat, DataType, PixelFormat, PixelMapping};
    let img = image::decode_pgm(b"P5\n2 2\n255\n\x01\x02\x03\x04").unwrap();
    let tensor = |pixel_format, data_type| nvdla_umd::TensorDesc {
        name: "data".into(),
        mem_id: 0,
        offset: 0,
        size: 256,
        dims: nvdla_umd::runtime::Dims {
            n: 1,
            c: 1,
            h: 2,
            w: 2,
        },
        data_format: DataFormat::NCHW,
        data_type,
        data_category: DataCategory::IMAGE,
        pixel_format,
        pixel_mapping: PixelMapping::PITCH_LINEAR,
        strides: [0, 64, 0, 0, 0, 0, 0, 0],
    };
    for pixel in [PixelFormat::R8, PixelFormat::A8B8G8R8] {
        let e = image::image_to_tensor(
            &img,
            &tensor(pixel, DataType::HALF),
            &ImageOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(e, ImageError::Unsupported { .. }), "{e}");
        assert!(e.to_string().contains("data type"), "{e}");
    }
    // R8 int8 is fine: the pixels, scaled to 127, one byte each on 64-byte lines.
    let data = image::image_to_tensor(
        &img,
        &tensor(PixelFormat::R8, DataType::INT8),
        &ImageOptions::default(),
    )
    .unwrap();
    assert_eq!([data[0], data[1], data[64], data[65]], [0, 1, 1, 2]);
}

#[test]
fn option_parsing() {
    assert_eq!(image::parse_mean("1,2.5,,3").unwrap(), [1.0, 2.5, 3.0, 0.0]);
    assert!(image::parse_mean("1,2,3,4,5").is_err());
    assert!(image::parse_mean("a").is_err());
    assert_eq!(image::parse_normalize("255").unwrap(), 255);
    assert!(image::parse_normalize("0").is_err());
    assert!(image::parse_normalize("256").is_err());
}
