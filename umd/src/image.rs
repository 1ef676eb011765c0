//! Input images and output tensors, converted as upstream's runtime application does.
//!
//! Input (`--image`): a PGM (P5 binary or P2 text, maximum value 255) or a JPEG (greyscale,
//! or colour which is decoded to BGR as upstream does for its Caffe models) is decoded to an
//! 8-bit image, then copied into the input tensor by upstream's `createImageCopy` rules:
//!
//! | tensor pixel format | data type | layout written |
//! | --- | --- | --- |
//! | `R8` | any | `T_R8` |
//! | `FEATURE` | HALF / INT8 | `D_F16_CxHWx_x16_F` / `D_F8_CxHWx_x32_I` |
//! | `FEATURE_X8` | INT8 | `D_F8_CxHWx_x8_I` |
//! | `A16B16G16R16_F` | (HALF) | `T_A16B16G16R16_F` |
//! | `A8B8G8R8` | (INT8) | `T_A8B8G8R8` |
//!
//! Only the image's own channels are written (a grey image fills channel 0 of a 4-channel
//! tensor; the rest stays zero). HALF elements are `half((p - mean[c]) / normalize)`,
//! computed in f32 and rounded ties-away ([`crate::fp16`]); `normalize` is an 8-bit value as
//! upstream parses it (`atoi` stored in a `NvU8`). INT8 elements ignore mean and normalize
//! and compress 0..255 to 0..127: `floor(p * 127 / 255 + 0.5)` in double precision. Other
//! data types write nothing, as upstream.
//!
//! Output: the output tensor becomes a [`DlaImage`] by upstream's `Tensor2DIMG` rules
//! (`FEATURE`: HALF → `x16_F`, INT16 → `x16_I`, INT8 → `x32_I`; `FEATURE_X8` the same but INT8
//! → `x8_I`; anything else is written as `x16_F` with a warning, as upstream does).
//!
//! JPEG decoding uses the `jpeg-decoder` crate; its integer IDCT is not libjpeg's `ISLOW`
//! bit for bit, so a JPEG pixel may differ from upstream's by one grey level.

use std::path::Path;

use nvdla_loadable::{DataType, PixelFormat as TensorFormat};
use thiserror::Error;

use crate::dimg::{DimgError, DimgHeader, DlaImage, Numbering, PixelFormat};
use crate::fp16::f32_to_f16;
use crate::runtime::TensorDesc;

/// Why an image could not be read or converted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ImageError {
    /// Reading the file failed.
    #[error("cannot read {path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// The file extension is neither `.pgm` nor `.jpg`.
    #[error("unknown image type '{0}' (expected a .pgm or .jpg file)")]
    UnknownType(String),
    /// The PGM is malformed or unsupported.
    #[error("bad PGM: {0}")]
    Pgm(String),
    /// The JPEG is malformed or unsupported.
    #[error("bad JPEG: {0}")]
    Jpeg(String),
    /// The image does not match the tensor's width or height.
    #[error("image is {got_w}x{got_h}, the input tensor expects {want_w}x{want_h}")]
    SizeMismatch {
        /// Image width.
        got_w: u32,
        /// Image height.
        got_h: u32,
        /// Tensor width.
        want_w: i32,
        /// Tensor height.
        want_h: i32,
    },
    /// The image has more channels than an input can take, or the tensor more than the
    /// conversion handles.
    #[error("image has {image} channels, tensor {tensor}: at most 4 image and 16 tensor channels are supported")]
    Channels {
        /// Image channels.
        image: u32,
        /// Tensor channels.
        tensor: i32,
    },
    /// The tensor's pixel format / data type has no conversion.
    #[error("tensor of pixel format {pixel} and data type {data} is not supported")]
    Unsupported {
        /// Pixel format.
        pixel: String,
        /// Data type.
        data: String,
    },
    /// The tensor geometry does not hold its elements.
    #[error("tensor geometry: {0}")]
    Geometry(#[from] DimgError),
}

/// A decoded 8-bit image: rows of `width * channels` bytes, channels interleaved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceImage {
    /// `T_R8` (grey) or `T_B8G8R8` (colour, blue first).
    pub format: PixelFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Channels per pixel (1 or 3).
    pub channels: u32,
    /// The pixels.
    pub data: Vec<u8>,
}

impl SourceImage {
    /// Channel `c` of pixel (x, y).
    pub fn pixel(&self, x: u32, y: u32, c: u32) -> u8 {
        let i =
            (y as usize * self.width as usize + x as usize) * self.channels as usize + c as usize;
        self.data.get(i).copied().unwrap_or(0)
    }
}

/// Image conversions: how `--normalize` and `--mean` adjust HALF inputs, and which pixel
/// format numbers output `.dimg` headers carry (`--dimg-numbering`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImageOptions {
    /// Divisor (`--normalize`, an 8-bit value as upstream stores it; default 1).
    pub normalize: u8,
    /// Per-channel mean subtracted first (`--mean`).
    pub mean: [f32; 4],
    /// Pixel format numbering of output images (default: the regression goldens').
    pub dimg_numbering: Numbering,
}

impl Default for ImageOptions {
    fn default() -> Self {
        Self {
            normalize: 1,
            mean: [0.0; 4],
            dimg_numbering: Numbering::Regression,
        }
    }
}

/// `--mean a,b,c[,d]`: up to four comma-separated numbers (empty fields are skipped, as
/// upstream's `strtok` does); missing ones are 0. Unlike upstream's `atof`, a field that is
/// not a number is an error rather than 0.
pub fn parse_mean(s: &str) -> Result<[f32; 4], String> {
    let mut mean = [0.0f32; 4];
    let tokens: Vec<&str> = s.split([',', '\n']).filter(|t| !t.is_empty()).collect();
    if tokens.len() > 4 {
        return Err(format!(
            "--mean takes at most 4 values, got {} ('{s}')",
            tokens.len()
        ));
    }
    for (m, t) in mean.iter_mut().zip(tokens) {
        *m = t
            .trim()
            .parse::<f32>()
            .map_err(|_| format!("--mean value '{t}' is not a number"))?;
    }
    Ok(mean)
}

/// `--normalize V`: upstream stores `atoi(V)` in 8 bits, so 256 silently became 0 (a
/// division by zero); we accept exactly the values it handled meaningfully, 1..=255.
pub fn parse_normalize(s: &str) -> Result<u8, String> {
    match s.trim().parse::<u8>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(format!(
            "--normalize value '{s}' must be an integer from 1 to 255"
        )),
    }
}

/// Reads and decodes an image file, choosing the decoder by extension (`.pgm`, `.jpg`).
pub fn load_image(path: &Path) -> Result<SourceImage, ImageError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let read = || {
        std::fs::read(path).map_err(|e| ImageError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    };
    match ext.as_str() {
        "pgm" => decode_pgm(&read()?),
        "jpg" | "jpeg" => decode_jpeg(&read()?),
        _ => Err(ImageError::UnknownType(path.display().to_string())),
    }
}

/// Decodes a PGM (P5 or P2) with maximum value 255.
pub fn decode_pgm(bytes: &[u8]) -> Result<SourceImage, ImageError> {
    let mut pos = 0usize;
    // Reads one header token, skipping whitespace and comments.
    let token = |pos: &mut usize| -> Option<String> {
        loop {
            match bytes.get(*pos)? {
                b'#' => {
                    while *bytes.get(*pos)? != b'\n' {
                        *pos += 1;
                    }
                }
                c if c.is_ascii_whitespace() => *pos += 1,
                _ => break,
            }
        }
        let start = *pos;
        while bytes
            .get(*pos)
            .is_some_and(|c| !c.is_ascii_whitespace() && *c != b'#')
        {
            *pos += 1;
        }
        Some(String::from_utf8_lossy(&bytes[start..*pos]).into_owned())
    };
    let magic = token(&mut pos).ok_or_else(|| ImageError::Pgm("empty file".into()))?;
    let binary = match magic.as_str() {
        "P5" => true,
        "P2" => false,
        m => return Err(ImageError::Pgm(format!("magic '{m}' is not P5 or P2"))),
    };
    let number = |what: &str, pos: &mut usize| -> Result<u32, ImageError> {
        let t = token(pos).ok_or_else(|| ImageError::Pgm(format!("missing {what}")))?;
        t.parse::<u32>()
            .map_err(|_| ImageError::Pgm(format!("{what} '{t}' is not a number")))
    };
    let width = number("width", &mut pos)?;
    let height = number("height", &mut pos)?;
    let maxval = number("maximum value", &mut pos)?;
    if maxval != 255 {
        return Err(ImageError::Pgm(format!(
            "maximum value {maxval} not supported (only 255)"
        )));
    }
    let n = (width as usize)
        .checked_mul(height as usize)
        .filter(|&n| n <= 1 << 28)
        .ok_or_else(|| ImageError::Pgm(format!("{width}x{height} is too large")))?;
    let data = if binary {
        // Exactly one whitespace byte separates the header from the raster.
        let start = pos + 1;
        bytes
            .get(start..start + n)
            .ok_or_else(|| {
                ImageError::Pgm(format!(
                    "raster truncated: {n} bytes needed, {} present",
                    bytes.len().saturating_sub(start)
                ))
            })?
            .to_vec()
    } else {
        let mut v = Vec::with_capacity(n);
        for i in 0..n {
            let p = number("pixel", &mut pos).map_err(|_| {
                ImageError::Pgm(format!("raster truncated or malformed at pixel {i} of {n}"))
            })?;
            if p > 255 {
                return Err(ImageError::Pgm(format!("pixel {i} is {p}, above 255")));
            }
            v.push(p as u8);
        }
        v
    };
    Ok(SourceImage {
        format: PixelFormat::T_R8,
        width,
        height,
        channels: 1,
        data,
    })
}

/// Largest JPEG width or height accepted: NVDLA's data cube width and height fields are
/// 13 bits (8192), in every register generation.
pub const MAX_JPEG_SIDE: u16 = 8192;

/// Decodes a JPEG: greyscale stays one channel, colour becomes BGR.
///
/// A frame wider or taller than [`MAX_JPEG_SIDE`] is refused from its header, before
/// decoding: a few hundred bytes can declare an 11292x64284 frame (fuzz target `image`:
/// 22 s of CPU and 2.7 GB to decode), and no NVDLA input is that large.
pub fn decode_jpeg(bytes: &[u8]) -> Result<SourceImage, ImageError> {
    let mut dec = jpeg_decoder::Decoder::new(bytes);
    dec.read_info()
        .map_err(|e| ImageError::Jpeg(e.to_string()))?;
    if let Some(info) = dec.info() {
        if info.width > MAX_JPEG_SIDE || info.height > MAX_JPEG_SIDE {
            return Err(ImageError::Jpeg(format!(
                "{}x{} frame: larger than {MAX_JPEG_SIDE} per side, the largest data cube \
                 NVDLA takes (13-bit width and height fields)",
                info.width, info.height
            )));
        }
    }
    let pixels = dec.decode().map_err(|e| ImageError::Jpeg(e.to_string()))?;
    let info = dec
        .info()
        .ok_or_else(|| ImageError::Jpeg("no frame header".into()))?;
    let (width, height) = (u32::from(info.width), u32::from(info.height));
    match info.pixel_format {
        jpeg_decoder::PixelFormat::L8 => Ok(SourceImage {
            format: PixelFormat::T_R8,
            width,
            height,
            channels: 1,
            data: pixels,
        }),
        jpeg_decoder::PixelFormat::RGB24 => {
            let mut data = pixels;
            for px in data.chunks_exact_mut(3) {
                px.swap(0, 2);
            }
            Ok(SourceImage {
                format: PixelFormat::T_B8G8R8,
                width,
                height,
                channels: 3,
                data,
            })
        }
        other => Err(ImageError::Jpeg(format!(
            "colour space {other:?} not supported"
        ))),
    }
}

fn unsupported(t: &TensorDesc) -> ImageError {
    ImageError::Unsupported {
        pixel: t.pixel_format.to_string(),
        data: t.data_type.to_string(),
    }
}

/// The layout an image is copied into for tensor `t` (upstream's `createImageCopy`).
pub fn input_format(t: &TensorDesc) -> Result<(PixelFormat, u32), ImageError> {
    let ss = t.strides[2];
    Ok(match (t.pixel_format, t.data_type) {
        (TensorFormat::R8, _) => (PixelFormat::T_R8, 0),
        (TensorFormat::FEATURE, DataType::HALF) => (PixelFormat::D_F16_CxHWx_x16_F, ss),
        (TensorFormat::FEATURE, DataType::FLOAT) => (PixelFormat::D_F32_CxHWx_x8_F, ss),
        (TensorFormat::FEATURE, DataType::INT8) => (PixelFormat::D_F8_CxHWx_x32_I, ss),
        (TensorFormat::FEATURE_X8, DataType::INT8) => (PixelFormat::D_F8_CxHWx_x8_I, ss),
        (TensorFormat::A16B16G16R16_F, _) => (PixelFormat::T_A16B16G16R16_F, 0),
        (TensorFormat::A8B8G8R8, _) => (PixelFormat::T_A8B8G8R8, 0),
        _ => return Err(unsupported(t)),
    })
}

fn dim(v: i32) -> u32 {
    u32::try_from(v).unwrap_or(0)
}

/// Converts `img` into the bytes of input tensor `t` (`t.size` bytes).
pub fn image_to_tensor(
    img: &SourceImage,
    t: &TensorDesc,
    opts: &ImageOptions,
) -> Result<Vec<u8>, ImageError> {
    if i64::from(img.width) != i64::from(t.dims.w) || i64::from(img.height) != i64::from(t.dims.h) {
        return Err(ImageError::SizeMismatch {
            got_w: img.width,
            got_h: img.height,
            want_w: t.dims.w,
            want_h: t.dims.h,
        });
    }
    if i64::from(img.channels) != i64::from(t.dims.c) {
        // Upstream reports this and carries on: a grey digit feeds a 4-channel image input.
        log::info!(
            "image has {} channel(s), tensor '{}' {}: filling the first {}",
            img.channels,
            t.name,
            t.dims.c,
            img.channels.min(dim(t.dims.c))
        );
    }
    let (format, surface_stride) = input_format(t)?;
    // A half takes two bytes; R8 and A8B8G8R8 surfaces hold one per element. Upstream
    // writes the half anyway, over the next element (and past the buffer at the last).
    if t.data_type == DataType::HALF && format.bytes_per_element().is_some_and(|b| b < 2) {
        return Err(unsupported(t));
    }
    if t.dims.c > 16 || img.channels > 4 {
        return Err(ImageError::Channels {
            image: img.channels,
            tensor: t.dims.c,
        });
    }
    let size = u32::try_from(t.size)
        .map_err(|_| ImageError::Geometry(DimgError::SurfaceTooLarge { size: u32::MAX }))?;
    let header = DimgHeader {
        format,
        width: dim(t.dims.w),
        height: dim(t.dims.h),
        channel: dim(t.dims.c),
        line_stride: t.strides[1],
        surface_stride,
        size,
    };
    let mut out = DlaImage::zeroed_with(header, Numbering::Release)?;
    let channels = img.channels.min(dim(t.dims.c));
    if img.channels > dim(t.dims.c) {
        return Err(ImageError::Channels {
            image: img.channels,
            tensor: t.dims.c,
        });
    }
    match t.data_type {
        DataType::HALF | DataType::INT8 => {}
        other => log::warn!("input data type {other}: upstream writes no pixels, neither do we"),
    }
    for y in 0..img.height {
        for x in 0..img.width {
            for c in 0..channels {
                let p = img.pixel(x, y, c);
                let Some(e) = out.element_mut(x, y, c) else {
                    continue;
                };
                match t.data_type {
                    DataType::HALF => {
                        let v = (f32::from(p) - opts.mean[c as usize]) / f32::from(opts.normalize);
                        let h = f32_to_f16(v).to_le_bytes();
                        if let Some(e) = e.get_mut(..2) {
                            e.copy_from_slice(&h);
                        }
                    }
                    DataType::INT8 => {
                        let v = (f64::from(p) * 127.0 / 255.0 + 0.5).floor();
                        e[0] = (v as i8) as u8;
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(out.into_surface())
}

/// The `.dimg` format of output tensor `t` (upstream's `Tensor2DIMG`).
pub fn output_format(t: &TensorDesc) -> Result<PixelFormat, ImageError> {
    use PixelFormat::*;
    let feature = |x8: bool| match t.data_type {
        DataType::HALF => Some(D_F16_CxHWx_x16_F),
        // An integer output a CPU partition writes (`nvdla-compiler`'s only FLOAT tensors).
        DataType::FLOAT if !x8 => Some(D_F32_CxHWx_x8_F),
        DataType::INT16 => Some(D_F16_CxHWx_x16_I),
        DataType::INT8 if x8 => Some(D_F8_CxHWx_x8_I),
        DataType::INT8 => Some(D_F8_CxHWx_x32_I),
        _ => None,
    };
    let f = match t.pixel_format {
        TensorFormat::FEATURE => feature(false),
        TensorFormat::FEATURE_X8 => feature(true),
        other => {
            log::warn!("unexpected output pixel format {other}, writing it as D_F16_CxHWx_x16_F");
            Some(D_F16_CxHWx_x16_F)
        }
    };
    f.ok_or_else(|| unsupported(t))
}

/// Output tensor `t` with surface `data` as a `.dimg` image, its pixel format numbered by
/// `numbering`; under [`Numbering::Regression`] a format that table lacks
/// (`D_F8_CxHWx_x8_I`) takes its release number.
pub fn output_image(
    t: &TensorDesc,
    data: Vec<u8>,
    numbering: Numbering,
) -> Result<DlaImage, ImageError> {
    let format = output_format(t)?;
    let header = DimgHeader {
        format,
        width: dim(t.dims.w),
        height: dim(t.dims.h),
        channel: dim(t.dims.c),
        line_stride: t.strides[1],
        surface_stride: t.strides[2],
        size: u32::try_from(data.len())
            .map_err(|_| DimgError::SurfaceTooLarge { size: u32::MAX })?,
    };
    let numbering = match numbering {
        Numbering::Regression if format.code(Numbering::Regression).is_some() => {
            Numbering::Regression
        }
        _ => Numbering::Release,
    };
    Ok(DlaImage::new_with(header, data, numbering)?)
}
