//! Tensors given and taken as numbers: `--input` files (`.npy`, ONNX `TensorProto` `.pb`)
//! converted into an input tensor's precision and layout, and output tensors converted to
//! float32 arrays for `--output F.npy`.
//!
//! A [`HostTensor`] is an array as a user holds it: an element type, a shape (C order) and the
//! little-endian elements. [`host_to_input`] writes it into the surface of an input tensor
//! as the loadable describes it ([`TensorDesc`]):
//!
//! | pixel format | data type | surface layout |
//! | --- | --- | --- |
//! | `FEATURE` | HALF | NCxHWx, 32-byte atoms of 16 halves (`D_F16_CxHWx_x16_F`) |
//! | `FEATURE` | INT16 | NCxHWx, atoms of 16 (`D_F16_CxHWx_x16_I`) |
//! | `FEATURE` | INT8 | NCxHWx, 32-byte atoms (`D_F8_CxHWx_x32_I`) |
//! | `FEATURE_X8` | INT8 | NCxHWx, 8-byte atoms (`D_F8_CxHWx_x8_I`) |
//! | `A16B16G16R16_F` | HALF | pitch-linear image, 4 interleaved halves per pixel |
//! | `A8B8G8R8` | INT8 / UINT8 | pitch-linear image, 4 interleaved bytes per pixel |
//! | `R8` | INT8 / UINT8 | pitch-linear image, one byte per pixel |
//!
//! Line and surface strides come from the descriptor (`strides[1]`, `strides[2]`); bytes
//! not covered by an element (padding channels of the last atom, line and surface padding)
//! are zero. Any other pixel format, a pixel mapping other than pitch-linear, or a batch
//! above 1 is refused with the reason.
//!
//! The array's shape must be the tensor's logical NCHW dims `[1, C, H, W]`, or `[C, H, W]`
//! (batch 1 left out), or `[1, C]` for a `1 x C x 1 x 1` tensor. Image formats
//! (`A16B16G16R16_F`, `A8B8G8R8`) carry 4 channels whatever the network uses, so for them
//! any C from 1 to the tensor's channel count is accepted and the other channels are zero,
//! as `--image` does with a grey picture.
//!
//! Element conversion, by the tensor's data type:
//! - HALF: float16 data is copied bit for bit; every other type is converted to the nearest
//!   half, ties to even (IEEE, as NumPy's `astype(float16)`).
//! - INT8 / UINT8 / INT16 / UINT16: with a scale S (`--input-scale`, real = q × S) every
//!   element is a real value, quantized as `q = round_ties_even(x / S)` and saturated to the
//!   type's range (NaN is an error). Without a scale, integer data is copied as it is and
//!   must fit the type's range; float data is an error asking for the scale (the loadable
//!   carries none).
//!
//! [`output_to_host`] reads an output tensor back the same way: a float32 array of shape
//! `[1, C, H, W]`, halves converted exactly, integers multiplied by `--output-scale` when
//! given, else written as their integer values.

use std::path::{Path, PathBuf};

use nvdla_loadable::{DataType, PixelFormat as TensorFormat, PixelMapping};
use thiserror::Error;

use crate::dimg::{DimgHeader, DlaImage, Numbering, PixelFormat, MAX_SURFACE_SIZE};
use crate::fp16::{f16_to_f32, f64_to_f16_even};
use crate::npy::NpyError;
use crate::onnx::TensorProtoError;
use crate::runtime::TensorDesc;

/// Element type of a [`HostTensor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// IEEE binary16.
    F16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// Signed 8-bit.
    I8,
    /// Unsigned 8-bit (also booleans).
    U8,
    /// Signed 16-bit.
    I16,
    /// Unsigned 16-bit.
    U16,
    /// Signed 32-bit.
    I32,
    /// Unsigned 32-bit.
    U32,
    /// Signed 64-bit.
    I64,
    /// Unsigned 64-bit.
    U64,
}

impl ElementType {
    /// Every type.
    pub const ALL: [ElementType; 11] = [
        Self::F16,
        Self::F32,
        Self::F64,
        Self::I8,
        Self::U8,
        Self::I16,
        Self::U16,
        Self::I32,
        Self::U32,
        Self::I64,
        Self::U64,
    ];

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            Self::I8 | Self::U8 => 1,
            Self::F16 | Self::I16 | Self::U16 => 2,
            Self::F32 | Self::I32 | Self::U32 => 4,
            Self::F64 | Self::I64 | Self::U64 => 8,
        }
    }

    /// True for the floating-point types.
    pub const fn is_float(self) -> bool {
        matches!(self, Self::F16 | Self::F32 | Self::F64)
    }

    /// NumPy's name of the type (`float32`, `int8`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Self::F16 => "float16",
            Self::F32 => "float32",
            Self::F64 => "float64",
            Self::I8 => "int8",
            Self::U8 => "uint8",
            Self::I16 => "int16",
            Self::U16 => "uint16",
            Self::I32 => "int32",
            Self::U32 => "uint32",
            Self::I64 => "int64",
            Self::U64 => "uint64",
        }
    }
}

impl core::fmt::Display for ElementType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// One element's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// A binary16, as its bits (so it can be copied exactly).
    Half(u16),
    /// Any other float.
    Float(f64),
    /// An integer.
    Int(i128),
}

impl Number {
    /// The value as f64 (exact except for integers beyond 2^53).
    pub fn to_f64(self) -> f64 {
        match self {
            Number::Half(h) => f64::from(f16_to_f32(h)),
            Number::Float(f) => f,
            Number::Int(i) => i as f64,
        }
    }
}

/// A dense array in C order with little-endian elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostTensor {
    dtype: ElementType,
    shape: Vec<u64>,
    data: Vec<u8>,
}

impl HostTensor {
    /// An array over `data`, which must hold exactly the elements `shape` counts.
    pub fn new(dtype: ElementType, shape: Vec<u64>, data: Vec<u8>) -> Result<Self, TensorError> {
        let expected = shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .and_then(|n| n.checked_mul(dtype.size() as u64));
        if expected != Some(data.len() as u64) {
            return Err(TensorError::DataLength {
                dtype,
                shape,
                expected,
                got: data.len() as u64,
            });
        }
        Ok(Self { dtype, shape, data })
    }

    /// A float32 array.
    pub fn from_f32(shape: Vec<u64>, values: &[f32]) -> Result<Self, TensorError> {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Self::new(ElementType::F32, shape, data)
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.dtype
    }

    /// The dimensions, outermost first.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The elements' bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Number of elements.
    pub fn element_count(&self) -> usize {
        self.data.len() / self.dtype.size()
    }

    /// Element `i` (in C order); `None` past the end.
    pub fn number(&self, i: usize) -> Option<Number> {
        let s = self.dtype.size();
        let b = self
            .data
            .get(i.checked_mul(s)?..i.checked_mul(s)?.checked_add(s)?)?;
        let mut w = [0u8; 8];
        w[..s].copy_from_slice(b);
        let u = u64::from_le_bytes(w);
        Some(match self.dtype {
            ElementType::F16 => Number::Half(u as u16),
            ElementType::F32 => Number::Float(f64::from(f32::from_bits(u as u32))),
            ElementType::F64 => Number::Float(f64::from_bits(u)),
            ElementType::I8 => Number::Int(i128::from(u as u8 as i8)),
            ElementType::U8 => Number::Int(i128::from(u as u8)),
            ElementType::I16 => Number::Int(i128::from(u as u16 as i16)),
            ElementType::U16 => Number::Int(i128::from(u as u16)),
            ElementType::I32 => Number::Int(i128::from(u as u32 as i32)),
            ElementType::U32 => Number::Int(i128::from(u as u32)),
            ElementType::I64 => Number::Int(i128::from(u as i64)),
            ElementType::U64 => Number::Int(i128::from(u)),
        })
    }

    /// Every element as f32 (for inspection and tests).
    pub fn to_f32_vec(&self) -> Vec<f32> {
        (0..self.element_count())
            .filter_map(|i| self.number(i))
            .map(|n| n.to_f64() as f32)
            .collect()
    }
}

/// Why an array cannot become an input tensor, or an output tensor an array.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum TensorError {
    /// Data length and shape disagree.
    #[error("{got} bytes of {dtype} data, shape {shape:?} needs {}", .expected.map_or("more than 2^64".to_string(), |e| e.to_string()))]
    DataLength {
        /// Element type.
        dtype: ElementType,
        /// Shape.
        shape: Vec<u64>,
        /// Bytes the shape needs (`None`: overflow).
        expected: Option<u64>,
        /// Bytes present.
        got: u64,
    },
    /// The array's shape does not fit the tensor.
    #[error("shape {got:?} does not match {dir} tensor '{name}' ({dims}); accepted: {accepted}")]
    ShapeMismatch {
        /// `input` or `output`.
        dir: &'static str,
        /// Tensor name.
        name: String,
        /// The array's shape.
        got: Vec<u64>,
        /// The tensor's NCHW dims, as `NCHW 1x1x28x28`.
        dims: String,
        /// The shapes accepted, in words.
        accepted: String,
    },
    /// Float data for an integer tensor, without a scale.
    #[error("{dtype} data for {data_type} tensor '{name}' needs a scale: pass --input-scale S (real = q * S; the loadable does not record one)")]
    NeedScale {
        /// The array's element type.
        dtype: ElementType,
        /// The tensor's data type.
        data_type: String,
        /// Tensor name.
        name: String,
    },
    /// An integer element outside the tensor type's range (no scale given).
    #[error("element {index} is {value}, outside the {data_type} range {min}..={max} (pass --input-scale to quantize real values)")]
    OutOfRange {
        /// Element index in C order.
        index: usize,
        /// Its value.
        value: i128,
        /// The tensor's data type.
        data_type: String,
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// An integer for a FLOAT tensor (an integer network input) that binary32 does not
    /// hold exactly.
    #[error("element {index} is {value}: an integer input holds whole numbers up to 2^24 in magnitude (binary32)")]
    BeyondExact {
        /// Element index in C order.
        index: usize,
        /// Its value.
        value: i128,
    },
    /// A NaN to quantize.
    #[error("element {index} is NaN and cannot be quantized to {data_type}")]
    NotANumber {
        /// Element index in C order.
        index: usize,
        /// The tensor's data type.
        data_type: String,
    },
    /// The tensor's format or type has no conversion.
    #[error("{dir} tensor '{name}': {reason}")]
    Unsupported {
        /// `input` or `output`.
        dir: &'static str,
        /// Tensor name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The descriptor's geometry does not hold its elements.
    #[error("{dir} tensor '{name}': geometry: {reason}")]
    Geometry {
        /// `input` or `output`.
        dir: &'static str,
        /// Tensor name.
        name: String,
        /// Why.
        reason: String,
    },
}

/// What went wrong with a tensor file.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum TensorFileErrorKind {
    /// Reading failed.
    #[error("cannot read: {0}")]
    Read(String),
    /// Writing failed.
    #[error("cannot write: {0}")]
    Write(String),
    /// The extension names no known format.
    #[error("unknown tensor file type (expected .npy or an ONNX TensorProto .pb)")]
    UnknownType,
    /// A malformed or unsupported `.npy`.
    #[error("{0}")]
    Npy(#[from] NpyError),
    /// A malformed or unsupported `TensorProto`.
    #[error("ONNX TensorProto: {0}")]
    TensorProto(#[from] TensorProtoError),
    /// The array does not fit the tensor.
    #[error("{0}")]
    Tensor(#[from] TensorError),
}

/// A tensor file that cannot be read, converted or written: the file and the reason.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{}: {kind}", .path.display())]
pub struct TensorFileError {
    /// The file.
    pub path: PathBuf,
    /// Why (boxed: the reasons carry shapes and names).
    pub kind: Box<TensorFileErrorKind>,
}

impl TensorFileError {
    /// `kind` about `path`.
    pub fn new(path: &Path, kind: impl Into<TensorFileErrorKind>) -> Self {
        Self {
            path: path.to_path_buf(),
            kind: Box::new(kind.into()),
        }
    }
}

fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default()
}

/// True if `path` names a `.npy` file (by extension, any case).
pub fn is_npy_path(path: &Path) -> bool {
    extension(path) == "npy"
}

/// Reads an array: `.npy` by NumPy's format, `.pb` as a serialized ONNX `TensorProto`.
pub fn read_tensor_file(path: &Path) -> Result<HostTensor, TensorFileError> {
    let err = |k: TensorFileErrorKind| TensorFileError::new(path, k);
    let ext = extension(path);
    if ext != "npy" && ext != "pb" {
        return Err(err(TensorFileErrorKind::UnknownType));
    }
    let bytes = std::fs::read(path).map_err(|e| err(TensorFileErrorKind::Read(e.to_string())))?;
    if ext == "npy" {
        crate::npy::read(&bytes).map_err(|e| err(e.into()))
    } else {
        crate::onnx::read(&bytes)
            .map(|p| p.tensor)
            .map_err(|e| err(e.into()))
    }
}

/// Writes `t` as a `.npy` file.
pub fn write_npy(path: &Path, t: &HostTensor) -> Result<(), TensorFileError> {
    std::fs::write(path, crate::npy::write(t))
        .map_err(|e| TensorFileError::new(path, TensorFileErrorKind::Write(e.to_string())))
}

/// The file of output `i` when `--output` is `base`: `base` itself for output 0, else
/// `base` with `_<i>` inserted before the extension (`out.npy`, `out_1.npy`, ...).
pub fn output_path(base: &Path, i: usize) -> PathBuf {
    if i == 0 {
        return base.to_path_buf();
    }
    let stem = base
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match base.extension() {
        Some(ext) => format!("{stem}_{i}.{}", ext.to_string_lossy()),
        None => format!("{stem}_{i}"),
    };
    base.with_file_name(name)
}

/// How a tensor's elements are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    Half,
    Int {
        min: i64,
        max: i64,
        bytes: usize,
    },
    /// IEEE binary32 (a network input of integers, `nvdla-compiler`'s: exact to 2^24).
    Float,
}

/// Largest integer a binary32 holds exactly (and every one below it).
const F32_EXACT: i128 = 1 << 24;

impl Element {
    fn of(t: &TensorDesc) -> Option<Self> {
        Some(match t.data_type {
            DataType::HALF => Element::Half,
            DataType::FLOAT => Element::Float,
            DataType::INT8 => Element::Int {
                min: -128,
                max: 127,
                bytes: 1,
            },
            DataType::UINT8 => Element::Int {
                min: 0,
                max: 255,
                bytes: 1,
            },
            DataType::INT16 => Element::Int {
                min: -32768,
                max: 32767,
                bytes: 2,
            },
            DataType::UINT16 => Element::Int {
                min: 0,
                max: 65535,
                bytes: 2,
            },
            _ => return None,
        })
    }

    fn bytes(self) -> usize {
        match self {
            Element::Half => 2,
            Element::Int { bytes, .. } => bytes,
            Element::Float => 4,
        }
    }
}

/// The checked geometry of a tensor: its element encoding, its layout as a `.dimg` header
/// and its NCHW dims.
struct Geometry {
    element: Element,
    /// One item's surface.
    header: DimgHeader,
    /// True for the 4-channel image formats (fewer channels accepted on input).
    image: bool,
    /// Batch items (`dims.n`), each a surface of `header` at `batch_stride` bytes from
    /// the previous (`strides[3]`).
    items: u32,
    batch_stride: u32,
}

fn dir_name(input: bool) -> &'static str {
    if input {
        "input"
    } else {
        "output"
    }
}

fn dims_text(t: &TensorDesc) -> String {
    let d = t.dims;
    format!("NCHW {}x{}x{}x{}", d.n, d.c, d.h, d.w)
}

fn geometry(t: &TensorDesc, input: bool) -> Result<Geometry, TensorError> {
    let dir = dir_name(input);
    let unsupported = |reason: String| TensorError::Unsupported {
        dir,
        name: t.name.clone(),
        reason,
    };
    let bad = |reason: String| TensorError::Geometry {
        dir,
        name: t.name.clone(),
        reason,
    };
    if t.pixel_mapping != PixelMapping::PITCH_LINEAR {
        return Err(unsupported(format!(
            "pixel mapping {} is not supported (only PITCH_LINEAR)",
            t.pixel_mapping
        )));
    }
    let element = Element::of(t).ok_or_else(|| {
        unsupported(format!(
            "data type {} is not supported (HALF, INT8, UINT8, INT16, UINT16)",
            t.data_type
        ))
    })?;
    let (format, image) = match (t.pixel_format, t.data_type) {
        (TensorFormat::FEATURE, DataType::HALF) => (PixelFormat::D_F16_CxHWx_x16_F, false),
        (TensorFormat::FEATURE, DataType::FLOAT) => (PixelFormat::D_F32_CxHWx_x8_F, false),
        (TensorFormat::FEATURE, DataType::INT16 | DataType::UINT16) => {
            (PixelFormat::D_F16_CxHWx_x16_I, false)
        }
        (TensorFormat::FEATURE, DataType::INT8 | DataType::UINT8) => {
            (PixelFormat::D_F8_CxHWx_x32_I, false)
        }
        (TensorFormat::FEATURE_X8, DataType::INT8 | DataType::UINT8) => {
            (PixelFormat::D_F8_CxHWx_x8_I, false)
        }
        (TensorFormat::A16B16G16R16_F, DataType::HALF) => (PixelFormat::T_A16B16G16R16_F, true),
        (TensorFormat::A8B8G8R8, DataType::INT8 | DataType::UINT8) => {
            (PixelFormat::T_A8B8G8R8, true)
        }
        (TensorFormat::R8, DataType::INT8 | DataType::UINT8) => (PixelFormat::T_R8, false),
        (p, d) => {
            return Err(unsupported(format!(
                "pixel format {p} with data type {d} is not supported (FEATURE: HALF, INT8, \
                 INT16, FLOAT; FEATURE_X8: INT8; A16B16G16R16_F: HALF; A8B8G8R8 and R8: INT8, UINT8)"
            )))
        }
    };
    debug_assert_eq!(
        format.bytes_per_element().map(usize::from),
        Some(element.bytes())
    );
    let d = t.dims;
    let dim = |v: i32, what: &str| {
        u32::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| bad(format!("{what} {v} is not positive ({})", dims_text(t))))
    };
    let (c, h, w) = (
        dim(d.c, "channels")?,
        dim(d.h, "height")?,
        dim(d.w, "width")?,
    );
    let items = dim(d.n, "batch")?;
    let total = u32::try_from(t.size)
        .ok()
        .filter(|&s| s <= MAX_SURFACE_SIZE)
        .ok_or_else(|| {
            bad(format!(
                "size {} is above the {MAX_SURFACE_SIZE}-byte limit",
                t.size
            ))
        })?;
    // A batch: items back to back at the batch stride, each its own surface.
    let (size, batch_stride) = if items > 1 {
        let stride = t.strides[3];
        if stride == 0 || u64::from(stride) * u64::from(items) > u64::from(total) {
            return Err(bad(format!(
                "batch of {items} at a batch stride of {stride} bytes does not fit the \
                 {total}-byte tensor"
            )));
        }
        (stride, stride)
    } else {
        (total, 0)
    };
    let header = DimgHeader {
        format,
        width: w,
        height: h,
        channel: c,
        line_stride: t.strides[1],
        surface_stride: t.strides[2],
        size,
    };
    header.validate().map_err(|e| bad(e.to_string()))?;
    // Rows and channel groups must not overlap: an inconsistent descriptor (a pixel format
    // that does not match the strides) would otherwise alias elements silently.
    let bpe = u64::from(element.bytes() as u32);
    let group = match format {
        PixelFormat::D_F16_CxHWx_x16_F | PixelFormat::D_F16_CxHWx_x16_I => 16,
        PixelFormat::D_F8_CxHWx_x32_I => 32,
        PixelFormat::D_F8_CxHWx_x8_I => 8,
        PixelFormat::T_A16B16G16R16_F | PixelFormat::T_A8B8G8R8 => 4,
        _ => 1,
    };
    let row = u64::from(w) * group * bpe;
    let ls = u64::from(header.line_stride);
    if h > 1 && ls < row {
        return Err(bad(format!(
            "line stride {ls} is below the {row} bytes of a row ({w} x {group} x {bpe}): the \
             pixel format {} does not match the strides {:?}",
            t.pixel_format,
            &t.strides[..3]
        )));
    }
    if image && c > 4 {
        return Err(bad(format!(
            "{c} channels in pixel format {}, which holds 4",
            t.pixel_format
        )));
    }
    if !image && u64::from(c) > group {
        let plane = u64::from(h - 1) * ls + row;
        let ss = u64::from(header.surface_stride);
        if ss < plane {
            return Err(bad(format!(
                "surface stride {ss} is below the {plane} bytes of a channel group: the pixel \
                 format {} does not match the strides {:?}",
                t.pixel_format,
                &t.strides[..3]
            )));
        }
    }
    Ok(Geometry {
        element,
        header,
        image,
        items,
        batch_stride,
    })
}

/// The channel count `shape` gives for tensor `t`, if it is an accepted shape.
fn match_shape(shape: &[u64], g: &Geometry) -> Option<u32> {
    let (c, h, w) = (g.header.channel, g.header.height, g.header.width);
    let chw = |s: &[u64]| -> Option<u32> {
        if s[1] == u64::from(h) && s[2] == u64::from(w) {
            u32::try_from(s[0]).ok()
        } else {
            None
        }
    };
    let n = u64::from(g.items);
    // Any shape with the tensor's dimensions in the same order once the dimensions of 1
    // are dropped holds the same elements in the same order (an ONNX model's own input
    // shape, `[1, 64, 1]` or `[64]`, for a 1x64x1x1 tensor).
    let squeezed = |s: &[u64]| -> Vec<u64> { s.iter().copied().filter(|&d| d != 1).collect() };
    let same_elements =
        !g.image && squeezed(shape) == squeezed(&[n, u64::from(c), u64::from(h), u64::from(w)]);
    let got = match shape {
        [b, rest @ ..] if rest.len() == 3 && *b == n && chw(rest).is_some() => chw(rest)?,
        s if s.len() == 3 && n == 1 && chw(s).is_some() => chw(s)?,
        [b, k] if *b == n && h == 1 && w == 1 => u32::try_from(*k).ok()?,
        _ if same_elements => c,
        _ => return None,
    };
    let ok = got == c || (g.image && got >= 1 && got <= c);
    ok.then_some(got)
}

fn accepted_text(g: &Geometry) -> String {
    let (c, h, w) = (g.header.channel, g.header.height, g.header.width);
    let n = g.items;
    let chw = |c: &str| {
        if n == 1 {
            format!("[1, {c}, {h}, {w}] or [{c}, {h}, {w}]")
        } else {
            format!("[{n}, {c}, {h}, {w}]")
        }
    };
    if g.image {
        let mut s = chw("C");
        if h == 1 && w == 1 {
            s.push_str(&format!(" or [{n}, C]"));
        }
        format!("{s} with C from 1 to {c} (image format: missing channels are zero)")
    } else {
        let mut s = chw(&c.to_string());
        if h == 1 && w == 1 {
            s.push_str(&format!(" or [{n}, {c}]"));
        }
        s.push_str(" (or any shape of these dimensions with others of 1)");
        s
    }
}

/// Converts `src` into the bytes of input tensor `t` (`t.size` bytes, its whole surface).
/// `scale` is `--input-scale` (real = q × scale), used by integer tensors only.
pub fn host_to_input(
    src: &HostTensor,
    t: &TensorDesc,
    scale: Option<f32>,
) -> Result<Vec<u8>, TensorError> {
    let g = geometry(t, true)?;
    let channels = match_shape(src.shape(), &g).ok_or_else(|| TensorError::ShapeMismatch {
        dir: "input",
        name: t.name.clone(),
        got: src.shape().to_vec(),
        dims: dims_text(t),
        accepted: accepted_text(&g),
    })?;
    let data_type = t.data_type.to_string();
    if let (Element::Int { .. }, None) = (g.element, scale) {
        if src.element_type().is_float() {
            return Err(TensorError::NeedScale {
                dtype: src.element_type(),
                data_type,
                name: t.name.clone(),
            });
        }
    }
    let geometry_err = |reason: String| TensorError::Geometry {
        dir: "input",
        name: t.name.clone(),
        reason,
    };
    let mut surface = vec![0u8; t.size as usize];
    let mut index = 0usize;
    for b in 0..g.items as usize {
        let mut image = DlaImage::zeroed_with(g.header, Numbering::Release)
            .map_err(|e| geometry_err(e.to_string()))?;
        fill_item(
            &mut image, src, &g, channels, scale, &mut index, &t.name, &data_type,
        )?;
        let at = b * g.batch_stride as usize;
        let bytes = image.into_surface();
        surface[at..at + bytes.len()].copy_from_slice(&bytes);
    }
    Ok(surface)
}

/// Writes item values of `src` from element `index` on into `image` (one item's
/// surface), advancing `index`.
#[allow(clippy::too_many_arguments)]
fn fill_item(
    image: &mut DlaImage,
    src: &HostTensor,
    g: &Geometry,
    channels: u32,
    scale: Option<f32>,
    index: &mut usize,
    name: &str,
    data_type: &str,
) -> Result<(), TensorError> {
    let geometry_err = |reason: String| TensorError::Geometry {
        dir: "input",
        name: name.to_string(),
        reason,
    };
    let data_type = data_type.to_string();
    let (h, w) = (g.header.height, g.header.width);
    for c in 0..channels {
        for y in 0..h {
            for x in 0..w {
                let index_now = *index;
                let n = src
                    .number(index_now)
                    .ok_or_else(|| geometry_err(format!("element {index_now} missing")))?;
                let e = image
                    .element_mut(x, y, c)
                    .ok_or_else(|| geometry_err(format!("element ({x}, {y}, {c}) outside")))?;
                match g.element {
                    Element::Half => {
                        let bits = match n {
                            Number::Half(b) => b,
                            other => f64_to_f16_even(other.to_f64()),
                        };
                        e.copy_from_slice(&bits.to_le_bytes());
                    }
                    Element::Float => {
                        // Integers exactly, or refused; floats rounded to binary32.
                        let v = match n {
                            Number::Int(i) if i.abs() > F32_EXACT => {
                                return Err(TensorError::BeyondExact {
                                    index: index_now,
                                    value: i,
                                })
                            }
                            other => other.to_f64() as f32,
                        };
                        e.copy_from_slice(&v.to_le_bytes());
                    }
                    Element::Int { min, max, bytes } => {
                        let q: i64 = match (scale, n) {
                            (Some(s), n) => {
                                let x = n.to_f64() / f64::from(s);
                                if x.is_nan() {
                                    return Err(TensorError::NotANumber {
                                        index: index_now,
                                        data_type,
                                    });
                                }
                                x.round_ties_even().clamp(min as f64, max as f64) as i64
                            }
                            (None, Number::Int(v))
                                if v >= i128::from(min) && v <= i128::from(max) =>
                            {
                                v as i64
                            }
                            (None, Number::Int(v)) => {
                                return Err(TensorError::OutOfRange {
                                    index: index_now,
                                    value: v,
                                    data_type,
                                    min,
                                    max,
                                })
                            }
                            (None, _) => unreachable!("float data without a scale is refused"),
                        };
                        e.copy_from_slice(&q.to_le_bytes()[..bytes]);
                    }
                }
                *index += 1;
            }
        }
    }
    Ok(())
}

/// Output tensor `t` with surface `data` as a float32 array of shape `[1, C, H, W]`: halves
/// exactly, integers times `scale` (`--output-scale`) or as they are.
pub fn output_to_host(
    t: &TensorDesc,
    data: &[u8],
    scale: Option<f32>,
) -> Result<HostTensor, TensorError> {
    tensor_values(t, data, false, scale)
}

/// Input tensor `t` with surface `data` (what the runtime holds for it) as a float32 array,
/// like [`output_to_host`] (used to build `--input` files from a loadable's own input).
pub fn input_to_host(
    t: &TensorDesc,
    data: &[u8],
    scale: Option<f32>,
) -> Result<HostTensor, TensorError> {
    tensor_values(t, data, true, scale)
}

fn tensor_values(
    t: &TensorDesc,
    data: &[u8],
    input: bool,
    scale: Option<f32>,
) -> Result<HostTensor, TensorError> {
    let g = geometry(t, input)?;
    let geometry_err = |reason: String| TensorError::Geometry {
        dir: dir_name(input),
        name: t.name.clone(),
        reason,
    };
    let (c, h, w) = (g.header.channel, g.header.height, g.header.width);
    let signed = matches!(t.data_type, DataType::INT8 | DataType::INT16);
    let item = g.header.size as usize;
    let mut values = Vec::with_capacity(g.header.element_count() as usize * g.items as usize);
    for b in 0..g.items as usize {
        let at = b * g.batch_stride as usize;
        let bytes = data
            .get(at..at + item)
            .ok_or_else(|| geometry_err(format!("item {b} past the {} bytes", data.len())))?;
        let image = DlaImage::new_with(g.header, bytes.to_vec(), Numbering::Release)
            .map_err(|e| geometry_err(e.to_string()))?;
        item_values(&image, &g, signed, scale, &mut values)
            .map_err(|(x, y, ci)| geometry_err(format!("element ({x}, {y}, {ci}) outside")))?;
    }
    HostTensor::from_f32(
        vec![u64::from(g.items), u64::from(c), u64::from(h), u64::from(w)],
        &values,
    )
}

/// Appends one item's values (NCHW order) from `image`; the element outside its surface
/// on failure.
fn item_values(
    image: &DlaImage,
    g: &Geometry,
    signed: bool,
    scale: Option<f32>,
    values: &mut Vec<f32>,
) -> Result<(), (u32, u32, u32)> {
    let (c, h, w) = (g.header.channel, g.header.height, g.header.width);
    for ci in 0..c {
        for y in 0..h {
            for x in 0..w {
                let e = image.element(x, y, ci).ok_or((x, y, ci))?;
                let v = match (g.element, e.len()) {
                    (Element::Half, _) => f16_to_f32(u16::from_le_bytes([e[0], e[1]])),
                    (Element::Float, _) => f32::from_le_bytes([e[0], e[1], e[2], e[3]]),
                    (Element::Int { .. }, len) => {
                        let q = match (len, signed) {
                            (1, true) => f64::from(e[0] as i8),
                            (1, false) => f64::from(e[0]),
                            (_, true) => f64::from(i16::from_le_bytes([e[0], e[1]])),
                            (_, false) => f64::from(u16::from_le_bytes([e[0], e[1]])),
                        };
                        (q * scale.map_or(1.0, f64::from)) as f32
                    }
                };
                values.push(v);
            }
        }
    }
    Ok(())
}

/// Name of the blob in which `nvdla-compiler` records the int8 scales of a loadable's
/// network inputs and outputs (an nvdla-rs convention: NVIDIA's runtime loads blobs by
/// the memories that name them, and no memory names this one, so it ignores it).
pub const TENSOR_SCALES_BLOB: &str = "nvdla-rs-tensor-scales";

/// The recorded scales blob: one line per int8 tensor, `input|output <bind id> <scale>`.
pub fn encode_tensor_scales(inputs: &[(usize, f32)], outputs: &[(usize, f32)]) -> Vec<u8> {
    let mut s = String::new();
    for (dir, list) in [("input", inputs), ("output", outputs)] {
        for (i, v) in list {
            s.push_str(&format!("{dir} {i} {v:e}\n"));
        }
    }
    s.into_bytes()
}

/// The scale recorded in blob `data` for bindable tensor `bind_id` of direction `dir`
/// (`input` or `output`); `None` when absent or malformed.
pub fn recorded_tensor_scale(data: &[u8], dir: &str, bind_id: usize) -> Option<f32> {
    std::str::from_utf8(data).ok()?.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let (d, i, v) = (w.next()?, w.next()?, w.next()?);
        (d == dir && i.parse::<usize>().ok()? == bind_id)
            .then(|| v.parse::<f32>().ok())
            .flatten()
            .filter(|s| s.is_finite() && *s > 0.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Dims;
    use nvdla_loadable::{DataCategory, DataFormat};

    fn desc(
        pf: TensorFormat,
        dt: DataType,
        c: i32,
        h: i32,
        w: i32,
        strides: [u32; 3],
    ) -> TensorDesc {
        TensorDesc {
            name: "data".into(),
            mem_id: 0,
            offset: 0,
            size: 0,
            dims: Dims { n: 1, c, h, w },
            data_format: DataFormat::NCxHWx,
            data_type: dt,
            data_category: DataCategory::FEATURE,
            pixel_format: pf,
            pixel_mapping: PixelMapping::PITCH_LINEAR,
            strides: [1, strides[0], strides[1], strides[2], 0, 0, 0, 0],
        }
    }

    /// A feature tensor with packed strides and its whole size.
    fn feature(dt: DataType, x8: bool, c: i32, h: i32, w: i32) -> TensorDesc {
        let bpe = if dt == DataType::HALF || dt == DataType::INT16 {
            2
        } else {
            1
        };
        let atom = if x8 { 8 } else { 32 };
        let ls = w as u32 * atom;
        let ss = ls * h as u32;
        let groups = (c as u32 * bpe).div_ceil(atom);
        let pf = if x8 {
            TensorFormat::FEATURE_X8
        } else {
            TensorFormat::FEATURE
        };
        let mut t = desc(pf, dt, c, h, w, [ls, ss, 0]);
        t.strides[0] = bpe;
        t.size = u64::from(ss * groups);
        t
    }

    fn f32s(shape: Vec<u64>, v: &[f32]) -> HostTensor {
        HostTensor::from_f32(shape, v).unwrap()
    }

    #[test]
    fn fp16_feature_layout_and_padding() {
        // 20 channels of 2x3: two 32-byte atoms per pixel, the second half empty.
        let t = feature(DataType::HALF, false, 20, 2, 3);
        assert_eq!(t.size, 2 * 2 * 3 * 32);
        let v: Vec<f32> = (0..120).map(|i| i as f32 * 0.5 - 7.0).collect();
        let bytes = host_to_input(&f32s(vec![1, 20, 2, 3], &v), &t, None).unwrap();
        assert_eq!(bytes.len() as u64, t.size);
        let half = |off: usize| f16_to_f32(u16::from_le_bytes([bytes[off], bytes[off + 1]]));
        for c in 0..20usize {
            for y in 0..2usize {
                for x in 0..3usize {
                    let off = (c / 16) * 192 + y * 96 + x * 32 + (c % 16) * 2;
                    assert_eq!(half(off), v[(c * 2 + y) * 3 + x], "c{c} y{y} x{x}");
                }
            }
        }
        // Channels 20..32 of the second group are zero.
        for y in 0..2usize {
            for x in 0..3usize {
                let off = 192 + y * 96 + x * 32 + 8;
                assert!(bytes[off..off + 24].iter().all(|&b| b == 0));
            }
        }
        // Reading it back gives the same numbers; [C, H, W] is accepted too.
        let back = input_to_host(&t, &bytes, None).unwrap();
        assert_eq!(back.shape(), &[1, 20, 2, 3]);
        assert_eq!(back.to_f32_vec(), v);
        let again = host_to_input(&f32s(vec![20, 2, 3], &v), &t, None).unwrap();
        assert_eq!(again, bytes);
    }

    #[test]
    fn batches_are_items_at_the_batch_stride() {
        // Three items of 20 channels of 2x3 in fp16, each its own surface, 400 bytes
        // apart (16 bytes of padding after each 384-byte item).
        let mut t = feature(DataType::HALF, false, 20, 2, 3);
        let item = t.size as u32;
        t.dims.n = 3;
        t.strides[3] = item + 16;
        t.size = u64::from(3 * (item + 16));
        let v: Vec<f32> = (0..360).map(|i| i as f32 * 0.25 - 40.0).collect();
        let bytes = host_to_input(&f32s(vec![3, 20, 2, 3], &v), &t, None).unwrap();
        assert_eq!(bytes.len() as u64, t.size);
        let one = feature(DataType::HALF, false, 20, 2, 3);
        for b in 0..3usize {
            let alone =
                host_to_input(&f32s(vec![1, 20, 2, 3], &v[b * 120..][..120]), &one, None).unwrap();
            let at = b * (item as usize + 16);
            assert_eq!(&bytes[at..at + item as usize], &alone[..], "item {b}");
        }
        let back = output_to_host(&t, &bytes, None).unwrap();
        assert_eq!(back.shape(), &[3, 20, 2, 3]);
        assert_eq!(back.to_f32_vec(), v);
        // One item's array, or a batch stride that overruns the tensor, are refused.
        assert!(host_to_input(&f32s(vec![1, 20, 2, 3], &v[..120]), &t, None).is_err());
        t.strides[3] = item * 2;
        assert!(host_to_input(&f32s(vec![3, 20, 2, 3], &v), &t, None).is_err());
    }

    #[test]
    fn fp16_rounds_ties_to_even_and_copies_halves() {
        let t = feature(DataType::HALF, false, 2, 1, 1);
        let tie = 1.0 + 2f32.powi(-11);
        let bytes = host_to_input(&f32s(vec![1, 2], &[tie, 65519.0]), &t, None).unwrap();
        assert_eq!(&bytes[..4], &[0x00, 0x3c, 0xff, 0x7b]);
        // float16 data: bit-exact (a NaN payload survives).
        let h = HostTensor::new(
            ElementType::F16,
            vec![2, 1, 1],
            vec![0x01, 0x7e, 0x01, 0x3c],
        )
        .unwrap();
        let bytes = host_to_input(&h, &t, None).unwrap();
        assert_eq!(&bytes[..4], &[0x01, 0x7e, 0x01, 0x3c]);
    }

    #[test]
    fn int8_needs_scale_for_floats_and_range_for_integers() {
        let t = feature(DataType::INT8, false, 3, 1, 2);
        let v = [0.5f32, -1.0, 0.26, 100.0, -100.0, 0.0];
        let e = host_to_input(&f32s(vec![1, 3, 1, 2], &v), &t, None).unwrap_err();
        assert!(matches!(e, TensorError::NeedScale { .. }), "{e}");
        assert!(e.to_string().contains("--input-scale"), "{e}");
        // q = round_ties_even(x / 0.5), saturated.
        let b = host_to_input(&f32s(vec![1, 3, 1, 2], &v), &t, Some(0.5)).unwrap();
        let q = |c: usize, x: usize| b[x * 32 + c] as i8;
        assert_eq!(
            [q(0, 0), q(0, 1), q(1, 0), q(1, 1), q(2, 0), q(2, 1)],
            [1, -2, 1, 127, -128, 0]
        );
        // Integers are copied; out of range is an error naming the element.
        let i = HostTensor::new(
            ElementType::I32,
            vec![3, 1, 2],
            (0..6i32)
                .flat_map(|v| (v * 50 - 100).to_le_bytes())
                .collect(),
        )
        .unwrap();
        let e = host_to_input(&i, &t, None).unwrap_err();
        assert!(e.to_string().contains("element 5 is 150"), "{e}");
        let u = HostTensor::new(ElementType::U8, vec![3, 1, 2], vec![0, 1, 2, 127, 5, 6]).unwrap();
        let b = host_to_input(&u, &t, None).unwrap();
        assert_eq!(
            [b[0], b[32], b[1], b[33], b[2], b[34]],
            [0, 1, 2, 127, 5, 6]
        );
        let back = input_to_host(&t, &b, Some(0.25)).unwrap();
        assert_eq!(back.to_f32_vec(), [0.0, 0.25, 0.5, 31.75, 1.25, 1.5]);
        let nan = f32s(vec![1, 3, 1, 2], &[f32::NAN; 6]);
        assert!(matches!(
            host_to_input(&nan, &t, Some(1.0)),
            Err(TensorError::NotANumber { index: 0, .. })
        ));
    }

    #[test]
    fn x8_int16_and_image_layouts() {
        let t = feature(DataType::INT8, true, 10, 1, 1);
        assert_eq!(t.size, 16);
        let u = HostTensor::new(ElementType::I8, vec![1, 10], (0..10).collect()).unwrap();
        let b = host_to_input(&u, &t, None).unwrap();
        assert_eq!(b, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0]);
        let t16 = feature(DataType::INT16, false, 2, 1, 2);
        let i = HostTensor::new(
            ElementType::I16,
            vec![2, 1, 2],
            [-1i16, 2, 300, -400]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        )
        .unwrap();
        let b = host_to_input(&i, &t16, None).unwrap();
        let at = |o: usize| i16::from_le_bytes([b[o], b[o + 1]]);
        assert_eq!([at(0), at(32), at(2), at(34)], [-1, 2, 300, -400]);
        // A16B16G16R16_F image: 4 halves per pixel, 1 channel given, 3 zero.
        let mut img = desc(
            TensorFormat::A16B16G16R16_F,
            DataType::HALF,
            4,
            2,
            2,
            [16, 0, 0],
        );
        img.size = 32;
        let b = host_to_input(&f32s(vec![1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]), &img, None).unwrap();
        let half = |o: usize| f16_to_f32(u16::from_le_bytes([b[o], b[o + 1]]));
        assert_eq!([half(0), half(8), half(16), half(24)], [1.0, 2.0, 3.0, 4.0]);
        assert!([2, 4, 6, 10, 12, 14].iter().all(|&o| half(o) == 0.0));
        // Five channels do not fit the four of the image.
        let e = host_to_input(&f32s(vec![5, 2, 2], &[0.0; 20]), &img, None).unwrap_err();
        assert!(e.to_string().contains("C from 1 to 4"), "{e}");
    }

    #[test]
    fn shape_and_format_errors_name_both_shapes() {
        let t = feature(DataType::HALF, false, 1, 28, 28);
        let e = host_to_input(&f32s(vec![1, 3, 28, 28], &[0.0; 3 * 784]), &t, None).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("[1, 3, 28, 28]") && s.contains("1x1x28x28"),
            "{s}"
        );
        assert!(s.contains("[1, 1, 28, 28] or [1, 28, 28]"), "{s}");
        let e = host_to_input(&f32s(vec![784], &[0.0; 784]), &t, None).unwrap_err();
        assert!(matches!(e, TensorError::ShapeMismatch { .. }));
        // Dimensions of 1 dropped, the same dimensions in the same order: the same
        // elements (an ONNX model's own shape, `[1, 64, 1]` for a 1x64x1x1 tensor).
        let seq: Vec<f32> = (0..784).map(|i| i as f32).collect();
        let want = host_to_input(&f32s(vec![1, 1, 28, 28], &seq), &t, None).unwrap();
        for shape in [vec![28, 28], vec![1, 28, 1, 28], vec![28, 1, 28]] {
            assert_eq!(host_to_input(&f32s(shape, &seq), &t, None).unwrap(), want);
        }
        let column = feature(DataType::HALF, false, 64, 1, 1);
        let v: Vec<f32> = (0..64).map(|i| i as f32).collect();
        let want = host_to_input(&f32s(vec![1, 64, 1, 1], &v), &column, None).unwrap();
        assert_eq!(
            host_to_input(&f32s(vec![1, 64, 1], &v), &column, None).unwrap(),
            want
        );
        assert_eq!(
            host_to_input(&f32s(vec![64], &v), &column, None).unwrap(),
            want
        );
        let mut yuv = t.clone();
        yuv.pixel_format = TensorFormat::A16Y16U16V16_F;
        let e = host_to_input(&f32s(vec![1, 1, 28, 28], &[0.0; 784]), &yuv, None).unwrap_err();
        assert!(e.to_string().contains("not supported"), "{e}");
        // The nv_small regression outputs: FEATURE (x32) with x8 strides.
        let mut bad = feature(DataType::INT8, false, 32, 8, 8);
        bad.strides[1] = 64;
        bad.strides[2] = 512;
        bad.size = 2048;
        let e = output_to_host(&bad, &[0; 2048], None).unwrap_err();
        assert!(e.to_string().contains("line stride 64"), "{e}");
    }

    #[test]
    fn output_paths() {
        let p = Path::new("dir/out.npy");
        assert_eq!(output_path(p, 0), Path::new("dir/out.npy"));
        assert_eq!(output_path(p, 1), Path::new("dir/out_1.npy"));
        assert_eq!(output_path(Path::new("o"), 2), Path::new("o_2"));
        assert!(is_npy_path(Path::new("X.NPY")));
        assert!(!is_npy_path(Path::new("x.dimg")));
    }
}
