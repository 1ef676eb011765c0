use std::path::Path;

use md5::{Digest, Md5};

use super::*;

fn md5_hex(data: &[u8]) -> String {
    Md5::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/nvdla-sw-regression/golden"
);

/// (test name, file bytes, md5 from lead.md5) of every golden output present.
fn goldens() -> Vec<(String, Vec<u8>, String)> {
    let dir = Path::new(GOLDEN);
    let Ok(entries) = std::fs::read_dir(dir) else {
        println!("skipping: {} is absent", dir.display());
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let d = e.path().join("dla");
        let (Ok(bytes), Ok(md5)) = (
            std::fs::read(d.join("o_000000.dimg")),
            std::fs::read_to_string(d.join("lead.md5")),
        ) else {
            continue;
        };
        let md5 = md5
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        out.push((e.file_name().to_string_lossy().into_owned(), bytes, md5));
    }
    out.sort();
    out
}

#[test]
fn golden_dimgs_round_trip_with_md5() {
    let goldens = goldens();
    for (name, bytes, md5) in &goldens {
        let img = DlaImage::read(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let again = img.write();
        assert_eq!(&again, bytes, "{name}: re-serialization differs");
        assert_eq!(&md5_hex(&again), md5, "{name}: md5");
        // Reading what we wrote gives the same image.
        assert_eq!(DlaImage::read(&again).unwrap(), img, "{name}");
    }
    if !goldens.is_empty() {
        println!(
            "{} golden dimg files round-trip with matching md5",
            goldens.len()
        );
        assert!(
            goldens.len() >= 15,
            "expected the regression's golden outputs"
        );
    }
}

/// A small image of every serializable layout, for tests that should not need /work/shared.
fn synthetic() -> Vec<DlaImage> {
    let mut v = Vec::new();
    let mk = |format, width, height, channel, line_stride, surface_stride, size| DimgHeader {
        format,
        width,
        height,
        channel,
        line_stride,
        surface_stride,
        size,
    };
    for h in [
        mk(PixelFormat::D_F16_CxHWx_x16_F, 3, 2, 20, 96, 192, 384),
        mk(PixelFormat::D_F8_CxHWx_x32_I, 2, 2, 33, 64, 128, 256),
        mk(PixelFormat::D_F32_CxHWx_x8_F, 2, 1, 9, 64, 64, 128),
        mk(PixelFormat::D_F32_CHW_F, 3, 2, 2, 12, 24, 48),
        mk(PixelFormat::T_R8G8B8, 2, 2, 3, 8, 0, 16),
        mk(PixelFormat::T_A8B8G8R8, 2, 1, 4, 8, 0, 8),
        mk(PixelFormat::T_R8, 5, 2, 1, 8, 0, 16),
        mk(PixelFormat::D_F16_CHW_I, 1, 1, 3, 2, 2, 6),
    ] {
        let mut img = DlaImage::zeroed(h).unwrap();
        let mut seed = 7u32;
        for c in 0..h.channel {
            for y in 0..h.height {
                for x in 0..h.width {
                    for b in img.element_mut(x, y, c).unwrap() {
                        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                        *b = (seed >> 16) as u8;
                    }
                }
            }
        }
        v.push(img);
    }
    v
}

#[test]
fn synthetic_round_trip() {
    for img in synthetic() {
        // Without stable hashing the elements come back bit for bit.
        let bytes = img.write_with(false);
        let back = DlaImage::read(&bytes).unwrap();
        assert_eq!(back, img, "{:?}", img.header());
        assert_eq!(
            bytes.len() as u64,
            HEADER_LEN as u64
                + img.header().element_count()
                    * u64::from(img.header().format.bytes_per_element().unwrap())
        );
    }
}

#[test]
fn header_layout() {
    // The NN_L0_0 golden header: fp16 x16 groups, 1x1x10, strides 32, size 32.
    let bytes: [u8; 36] = [
        b'D', b'I', b'M', b'G', 0, 0, 0, 0, 42, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 10, 0, 0, 0, 32,
        0, 0, 0, 32, 0, 0, 0, 32, 0, 0, 0,
    ];
    let h = DimgHeader::parse(&bytes, Numbering::Release).unwrap();
    assert_eq!(
        h,
        DimgHeader {
            format: PixelFormat::D_F16_CxHWx_x16_I,
            width: 1,
            height: 1,
            channel: 10,
            line_stride: 32,
            surface_stride: 32,
            size: 32
        }
    );
    assert_eq!(h.to_bytes(Numbering::Release).unwrap(), bytes);
    assert_eq!(h.format.name(), "D_F16_CxHWx_x16_I");
    assert_eq!(h.format.kind(), ElementKind::Int);
    // Header only: the data is missing.
    assert_eq!(
        DlaImage::read_with(&bytes, Numbering::Release),
        Err(DimgError::Truncated {
            needed: 56,
            got: 36
        })
    );
}

#[test]
fn numbering_tables() {
    use PixelFormat::*;
    let reg = Numbering::Regression;
    let rel = Numbering::Release;
    assert_eq!(PixelFormat::from_code(41, reg), Some(D_F16_CxHWx_x16_I));
    assert_eq!(PixelFormat::from_code(42, reg), Some(D_F16_CxHWx_x16_F));
    assert_eq!(PixelFormat::from_code(46, reg), Some(T_B8G8R8));
    assert_eq!(PixelFormat::from_code(47, reg), None);
    assert_eq!(PixelFormat::from_code(41, rel), Some(D_F8_CxHWx_x8_I));
    assert_eq!(PixelFormat::from_code(47, rel), Some(T_B8G8R8));
    assert_eq!(D_F8_CxHWx_x8_I.code(reg), None);
    for n in [reg, rel] {
        for code in 0..64 {
            if let Some(f) = PixelFormat::from_code(code, n) {
                assert_eq!(f.code(n), Some(code));
            }
        }
    }
    let h = DimgHeader {
        format: D_F8_CxHWx_x8_I,
        width: 1,
        height: 1,
        channel: 1,
        line_stride: 8,
        surface_stride: 8,
        size: 8,
    };
    assert_eq!(
        DlaImage::zeroed(h),
        Err(DimgError::NotRepresentable {
            format: D_F8_CxHWx_x8_I,
            numbering: reg
        })
    );
    let img = DlaImage::zeroed_with(h, rel).unwrap();
    assert_eq!(img.write()[8], 41);
    assert_eq!(DlaImage::read_with(&img.write(), rel).unwrap(), img);
}

#[test]
fn pixel_format_table() {
    for raw in 0..64 {
        match PixelFormat::from_raw(raw) {
            Some(f) => {
                assert!(raw <= 47);
                assert_eq!(f as u32, raw);
            }
            None => assert!(raw > 47),
        }
    }
    assert!(PixelFormat::D_F16_CxHWx_x16_F.is_serializable());
    // Upstream has a size but no address rule for these, or no size at all.
    assert!(!PixelFormat::T_R8_I.is_serializable());
    assert!(!PixelFormat::T_R16.is_serializable());
    assert!(!PixelFormat::T_A8R8G8B8.is_serializable());
    assert_eq!(PixelFormat::D_F32_CxHWx_x8_F.bytes_per_element(), Some(4));
    assert_eq!(PixelFormat::T_R16_F.kind(), ElementKind::Float);
    assert_eq!(PixelFormat::T_R10.kind(), ElementKind::Uint);
}

fn header_bytes(f: impl FnOnce(&mut DimgHeader)) -> Vec<u8> {
    let mut h = DimgHeader {
        format: PixelFormat::D_F8_CHW_I,
        width: 2,
        height: 2,
        channel: 2,
        line_stride: 2,
        surface_stride: 4,
        size: 8,
    };
    f(&mut h);
    let mut v = h.to_bytes(Numbering::Regression).unwrap().to_vec();
    v.resize(HEADER_LEN + 8, 0);
    v
}

#[test]
fn rejections() {
    let ok = header_bytes(|_| {});
    assert!(DlaImage::read(&ok).is_ok());
    assert_eq!(
        DlaImage::read(&ok[..10]),
        Err(DimgError::Truncated {
            needed: 36,
            got: 10
        })
    );
    assert_eq!(
        DlaImage::read(&ok[..40]),
        Err(DimgError::Truncated {
            needed: 44,
            got: 40
        })
    );
    let mut long = ok.clone();
    long.push(0);
    assert_eq!(
        DlaImage::read(&long),
        Err(DimgError::TrailingBytes { extra: 1 })
    );
    let mut bad = ok.clone();
    bad[0] = b'X';
    assert_eq!(
        DlaImage::read(&bad),
        Err(DimgError::BadMagic { found: *b"XIMG" })
    );
    let mut bad = ok.clone();
    bad[4] = 1;
    assert_eq!(
        DlaImage::read(&bad),
        Err(DimgError::UnsupportedVersion { version: 1 })
    );
    let mut bad = ok.clone();
    bad[8] = 48;
    assert_eq!(
        DlaImage::read(&bad),
        Err(DimgError::UnknownFormat {
            raw: 48,
            numbering: Numbering::Regression
        })
    );
    bad[8] = 47;
    assert!(
        DlaImage::read(&bad).is_err(),
        "47 is past the regression table"
    );
    let bad = header_bytes(|h| h.format = PixelFormat::T_R16);
    assert_eq!(
        DlaImage::read(&bad),
        Err(DimgError::UnsupportedFormat {
            format: PixelFormat::T_R16
        })
    );
    let bad = header_bytes(|h| h.format = PixelFormat::T_R8);
    assert_eq!(
        DlaImage::read(&bad),
        Err(DimgError::TooManyChannels {
            format: PixelFormat::T_R8,
            channel: 2
        })
    );
    let bad = header_bytes(|h| h.size = 7);
    assert_eq!(
        DlaImage::read(&bad),
        Err(DimgError::ElementOutOfBounds {
            end_offset: 8,
            size: 7
        })
    );
    let bad = header_bytes(|h| h.surface_stride = u32::MAX);
    assert!(matches!(
        DlaImage::read(&bad),
        Err(DimgError::ElementOutOfBounds { .. })
    ));
    let bad = header_bytes(|h| {
        h.size = MAX_SURFACE_SIZE + 1;
    });
    assert_eq!(
        DlaImage::read(&bad),
        Err(DimgError::SurfaceTooLarge {
            size: MAX_SURFACE_SIZE + 1
        })
    );
    let h = DimgHeader::parse(&ok, Numbering::Regression).unwrap();
    assert_eq!(
        DlaImage::new(h, vec![0; 9]),
        Err(DimgError::SurfaceLength { size: 8, got: 9 })
    );
}

#[test]
fn grouped_layout_checks_the_previous_group() {
    // 33 channels in groups of 32: channel 31 (group 0, slot 31) lies past channel 32
    // (group 1, slot 0) when the surface stride is small.
    let h = DimgHeader {
        format: PixelFormat::D_F8_CxHWx_x32_I,
        width: 1,
        height: 1,
        channel: 33,
        line_stride: 32,
        surface_stride: 8,
        size: 16,
    };
    assert_eq!(
        h.validate(),
        Err(DimgError::ElementOutOfBounds {
            end_offset: 32,
            size: 16
        })
    );
    assert!(DimgHeader { size: 32, ..h }.validate().is_ok());
}

#[test]
fn empty_image() {
    let h = DimgHeader {
        format: PixelFormat::D_F16_CHW_F,
        width: 0,
        height: 5,
        channel: 5,
        line_stride: 0,
        surface_stride: 0,
        size: 0,
    };
    let img = DlaImage::zeroed(h).unwrap();
    assert_eq!(
        img.write(),
        h.to_bytes(Numbering::Regression).unwrap().to_vec()
    );
    assert_eq!(DlaImage::read(&img.write()).unwrap(), img);
    assert_eq!(img.raw_dump(), "");
}

/// Every truncation and every single-bit flip of real (or synthetic) files: no panic, and
/// whatever parses re-serializes to something that parses to the same image.
#[test]
fn truncate_and_bit_flip() {
    let mut files: Vec<Vec<u8>> = goldens()
        .into_iter()
        .map(|(_, b, _)| b)
        .filter(|b| b.len() <= 5000)
        .collect();
    files.extend(synthetic().iter().map(DlaImage::write));
    let mut parsed = 0usize;
    for f in &files {
        for len in 0..f.len() {
            assert!(DlaImage::read(&f[..len]).is_err(), "truncated to {len}");
        }
        // Header bits all, data bits a sample (every 61st byte: any data is valid).
        let positions = (0..f.len()).filter(|&i| i < HEADER_LEN || i % 61 == 0);
        for i in positions {
            for bit in 0..8 {
                let mut g = f.clone();
                g[i] ^= 1 << bit;
                if let Ok(img) = DlaImage::read(&g) {
                    parsed += 1;
                    let w = img.write_with(false);
                    // Compare serializations, not surfaces: a flipped size bit may give a
                    // large (lazily zeroed) surface that a comparison would touch.
                    assert_eq!(DlaImage::read(&w).map(|i| i.write_with(false)), Ok(w));
                    let _ = img.raw_dump();
                }
            }
        }
    }
    assert!(parsed > 0);
}

/// xorshift64*, the same generator as the C++ reference program.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn planar(format: PixelFormat, bpe: u32, elements: &[u8]) -> DlaImage {
    let h = DimgHeader {
        format,
        width: 256,
        height: 256,
        channel: 1,
        line_stride: 256 * bpe,
        surface_stride: 65536 * bpe,
        size: 65536 * bpe,
    };
    DlaImage::new(h, elements.to_vec()).unwrap()
}

/// All 65 536 fp16 bit patterns in one image.
fn all_halves() -> DlaImage {
    let bytes: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
    planar(PixelFormat::D_F16_CHW_F, 2, &bytes)
}

/// Special fp32 values, then xorshift draws (raw bit patterns, and moderate exponents).
fn f32_sample() -> DlaImage {
    const SPECIAL: [u32; 16] = [
        0,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xffc0_0001,
        0x4f00_0000,
        0x3f80_0000,
        1,
        0x8000_0001,
        0x7f7f_ffff,
        0x0080_0000,
        0x3eaa_aaab,
        0x4974_2400,
        0x4991_c3c0,
        0x3586_37bd,
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut bytes = Vec::with_capacity(65536 * 4);
    for i in 0..65536u32 {
        let bits = if i < 16 {
            SPECIAL[i as usize]
        } else if i % 3 == 0 {
            rng.next() as u32
        } else {
            let r = rng.next();
            ((100 + (r % 56) as u32) << 23) | ((r >> 32) as u32 & 0x807f_ffff)
        };
        bytes.extend_from_slice(&bits.to_le_bytes());
    }
    planar(PixelFormat::D_F32_CHW_F, 4, &bytes)
}

// The md5s below are of the output of a C++ program that follows upstream's packData(asRaw)
// and printBuffer code (iostream `<<` of half_float::half / float, snprintf "%6.3f,") with
// upstream's half.h, built with g++ 12 / glibc on x86_64, over the same inputs.

#[test]
fn raw_dump_fp16_matches_upstream() {
    let s = all_halves().raw_dump();
    assert_eq!(s.len(), 582_607);
    assert_eq!(md5_hex(s.as_bytes()), "9f6e87869d93cf49447f4bc26775bcc3");
}

#[test]
fn raw_dump_fp32_matches_upstream() {
    let s = f32_sample().raw_dump();
    assert!(s.starts_with("0 -0 inf -inf 2.14329e+09 2.14329e+09 0 1 1.4013e-45 "));
    assert_eq!(s.len(), 721_527);
    assert_eq!(md5_hex(s.as_bytes()), "24136ccf08b00422536f658a09df64f4");
}

#[test]
fn print_buffer_fp16_matches_upstream() {
    let s = all_halves().print_buffer(false);
    assert_eq!(s.len(), 552_284);
    assert_eq!(md5_hex(s.as_bytes()), "9e7a7c31ce34e998492664450fcc96da");
}

#[test]
fn print_buffer_fp32_matches_upstream() {
    let s = f32_sample().print_buffer(false);
    assert_eq!(s.len(), 772_292);
    assert_eq!(md5_hex(s.as_bytes()), "289434707044d5c118b50f1ac4b56094");
}

#[test]
fn print_buffer_borders_and_ints() {
    let h = DimgHeader {
        format: PixelFormat::D_F8_CHW_I,
        width: 2,
        height: 1,
        channel: 1,
        line_stride: 2,
        surface_stride: 2,
        size: 2,
    };
    let img = DlaImage::new(h, vec![0xff, 7]).unwrap();
    assert_eq!(img.print_buffer(true), " ----\n|  -1    7 |\n ----\n");
    assert_eq!(img.raw_dump(), "-1 7 ");
}

#[test]
fn stable_hash_quirks() {
    let mut e = 0x7800u16.to_le_bytes().to_vec();
    e.extend_from_slice(&0x8000u16.to_le_bytes());
    e.extend_from_slice(&0xfe00u16.to_le_bytes());
    e.extend_from_slice(&0x3c00u16.to_le_bytes());
    let h = DimgHeader {
        format: PixelFormat::D_F16_CHW_F,
        width: 4,
        height: 1,
        channel: 1,
        line_stride: 8,
        surface_stride: 8,
        size: 8,
    };
    let img = DlaImage::new(h, e).unwrap();
    assert_eq!(
        &img.write()[HEADER_LEN..],
        &[0x00, 0x00, 0x00, 0x80, 0xc0, 0x77, 0x00, 0x3c]
    );
    assert_eq!(img.raw_dump(), "0 -0 31744 1 ");
    let f: Vec<u8> = [2_147_483_648.0f32, -0.0, f32::NAN, 1.5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let h = DimgHeader {
        format: PixelFormat::D_F32_CHW_F,
        line_stride: 16,
        surface_stride: 16,
        size: 16,
        ..h
    };
    let img = DlaImage::new(h, f).unwrap();
    let w = img.write();
    let vals: Vec<u32> = w[HEADER_LEN..]
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(vals, [0, 0x8000_0000, 0x4eff_8000, 0x3fc0_0000]);
}

/// Found by fuzzing: a header with a zero width and huge height and channel count is a
/// valid empty image; dumping it must not walk its rows.
#[test]
fn empty_image_with_huge_dimensions_dumps_nothing() {
    let mut bytes = b"DIMG".to_vec();
    for v in [0u32, 42, 0, 0x4141_4140, 65, 0x4141_0000, 0x4141, 0] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let img = DlaImage::read(&bytes).expect("an empty image is valid");
    assert_eq!(img.header().element_count(), 0);
    assert_eq!(img.raw_dump(), "");
    assert_eq!(img.print_buffer(true), "");
    assert_eq!(img.write_with(false).len(), 36);
}
