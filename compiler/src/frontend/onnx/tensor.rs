//! Constants: `TensorProto`s (initializers, `Constant` nodes, attribute tensors) decoded
//! to dimensions and values, and the element-wise arithmetic constant folding uses.
//!
//! Floating-point types are held as `f32` (the IR's precision; `DOUBLE` is rounded),
//! integer and boolean types as `i64`. Every size is checked before anything is
//! allocated.

use super::proto::{data_type as dt, TensorProto};

/// Largest number of elements of a constant read from the model file (its data is in the
/// file, so this only bounds the decoding).
pub(crate) const MAX_ELEMENTS: usize = 1 << 28;

/// The front end's memory budget for the constants it computes (folding,
/// `ConstantOfShape`, weights it synthesizes), in elements: 2^27 (512 MiB of f32) for the
/// whole model, which one constant may take (a fully connected layer's 4096x9216 weight
/// made by `ConstantOfShape` is 38 M); no input makes the front end allocate more.
pub(crate) const MAX_COMPUTED: usize = 1 << 27;

/// Largest number of elements of an activation (Caffe's and the IR's `2^31 - 1`).
pub(crate) const MAX_ACTIVATION: usize = i32::MAX as usize;

/// Values of a constant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Data {
    /// FLOAT, DOUBLE, FLOAT16, BFLOAT16.
    F(Vec<f32>),
    /// Integer and boolean types.
    I(Vec<i64>),
}

/// A constant tensor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Const {
    /// ONNX element type.
    pub dtype: i32,
    /// Dimensions (empty for a scalar).
    pub dims: Vec<usize>,
    /// `dims.iter().product()` values.
    pub data: Data,
}

/// `AxBxC` (`scalar` for no dimensions).
pub(crate) fn fmt_dims(d: &[usize]) -> String {
    if d.is_empty() {
        return "scalar".into();
    }
    d.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// Element count of `dims` if at most `limit`.
pub(crate) fn count(dims: &[usize], limit: usize) -> Result<usize, String> {
    dims.iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&n| n <= limit)
        .ok_or_else(|| {
            format!(
                "a tensor of shape {} exceeds {limit} elements",
                fmt_dims(dims)
            )
        })
}

/// Whether `t` is a floating-point element type.
pub(crate) fn is_float(t: i32) -> bool {
    matches!(t, dt::FLOAT | dt::DOUBLE | dt::FLOAT16 | dt::BFLOAT16)
}

/// Whether `t` is an integer or boolean element type.
pub(crate) fn is_int(t: i32) -> bool {
    matches!(
        t,
        dt::UINT8
            | dt::INT8
            | dt::UINT16
            | dt::INT16
            | dt::INT32
            | dt::INT64
            | dt::BOOL
            | dt::UINT32
            | dt::UINT64
    )
}

/// `v` as stored in integer type `t` (two's complement wrap-around, booleans 0/1).
pub(crate) fn wrap(v: i64, t: i32) -> i64 {
    match t {
        dt::UINT8 => v as u8 as i64,
        dt::INT8 => v as i8 as i64,
        dt::UINT16 => v as u16 as i64,
        dt::INT16 => v as i16 as i64,
        dt::INT32 => v as i32 as i64,
        dt::UINT32 => v as u32 as i64,
        dt::BOOL => i64::from(v != 0),
        _ => v,
    }
}

/// `v` rounded to float type `t`.
pub(crate) fn round_to(v: f32, t: i32) -> f32 {
    match t {
        dt::FLOAT16 => half::f16::from_f32(v).to_f32(),
        dt::BFLOAT16 => half::bf16::from_f32(v).to_f32(),
        _ => v,
    }
}

impl Const {
    /// A float constant.
    pub fn floats(dims: Vec<usize>, v: Vec<f32>) -> Self {
        Const {
            dtype: dt::FLOAT,
            dims,
            data: Data::F(v),
        }
    }

    /// An INT64 constant.
    pub fn ints(dims: Vec<usize>, v: Vec<i64>) -> Self {
        Const {
            dtype: dt::INT64,
            dims,
            data: Data::I(v),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match &self.data {
            Data::F(v) => v.len(),
            Data::I(v) => v.len(),
        }
    }

    /// The values as `f32` (integers converted).
    pub fn to_f32(&self) -> Vec<f32> {
        match &self.data {
            Data::F(v) => v.clone(),
            Data::I(v) => v.iter().map(|&x| x as f32).collect(),
        }
    }

    /// The values as `i64` (floats truncated toward zero, saturating).
    pub fn to_i64(&self) -> Vec<i64> {
        match &self.data {
            Data::F(v) => v.iter().map(|&x| x as i64).collect(),
            Data::I(v) => v.clone(),
        }
    }

    /// The values as `i64` if the type is an integer type.
    pub fn ints_exact(&self) -> Option<&[i64]> {
        match &self.data {
            Data::I(v) => Some(v),
            Data::F(_) => None,
        }
    }

    /// The only value as `f32`, if there is exactly one.
    pub fn scalar_f32(&self) -> Option<f32> {
        (self.len() == 1).then(|| self.to_f32()[0])
    }

    /// The same values with other dimensions (same count).
    pub fn reshaped(&self, dims: Vec<usize>) -> Self {
        Const {
            dtype: self.dtype,
            dims,
            data: self.data.clone(),
        }
    }

    /// Converted to element type `t` (ONNX `Cast`: float to integer truncates toward
    /// zero, integers wrap to the target width, anything to BOOL is `!= 0`).
    pub fn cast(&self, t: i32) -> Result<Self, String> {
        let data = if is_float(t) {
            Data::F(self.to_f32().into_iter().map(|v| round_to(v, t)).collect())
        } else if is_int(t) {
            Data::I(match &self.data {
                Data::F(v) if t == dt::BOOL => v.iter().map(|&x| i64::from(x != 0.0)).collect(),
                Data::F(v) => v.iter().map(|&x| wrap(x as i64, t)).collect(),
                Data::I(v) => v.iter().map(|&x| wrap(x, t)).collect(),
            })
        } else {
            return Err(format!("casting to {} is not supported", dt::name(t)));
        };
        Ok(Const {
            dtype: t,
            dims: self.dims.clone(),
            data,
        })
    }
}

/// Little-endian values of `size` bytes each.
fn chunks(raw: &[u8], size: usize, n: usize) -> Result<std::slice::ChunksExact<'_, u8>, String> {
    if raw.len() != n * size {
        return Err(format!(
            "raw_data holds {} bytes, {n} values of {size} bytes need {}",
            raw.len(),
            n * size
        ));
    }
    Ok(raw.chunks_exact(size))
}

fn check_len(have: usize, n: usize, field: &str) -> Result<(), String> {
    if have != n {
        return Err(format!(
            "{field} holds {have} values, the dimensions need {n}"
        ));
    }
    Ok(())
}

/// Decodes a `TensorProto`. Errors describe what is wrong (the caller names the tensor).
pub(crate) fn from_proto(t: &TensorProto) -> Result<Const, String> {
    if t.data_location == 1 || !t.external_data.is_empty() {
        return Err("external data (a separate weights file) that was not read".into());
    }
    if t.segment.is_some() {
        return Err("segmented tensors are not supported".into());
    }
    let dims = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("negative dimension {d}")))
        .collect::<Result<Vec<usize>, String>>()?;
    let n = count(&dims, MAX_ELEMENTS)?;
    let raw = &t.raw_data;
    let use_raw = !raw.is_empty() || n == 0;
    let ty = t.data_type;
    let data = match ty {
        dt::FLOAT => Data::F(if use_raw {
            chunks(raw, 4, n)?
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        } else {
            check_len(t.float_data.len(), n, "float_data")?;
            t.float_data.clone()
        }),
        dt::DOUBLE => Data::F(if use_raw {
            chunks(raw, 8, n)?
                .map(|b| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    f64::from_le_bytes(a) as f32
                })
                .collect()
        } else {
            check_len(t.double_data.len(), n, "double_data")?;
            t.double_data.iter().map(|&v| v as f32).collect()
        }),
        dt::FLOAT16 | dt::BFLOAT16 => {
            let bits: Vec<u16> = if use_raw {
                chunks(raw, 2, n)?
                    .map(|b| u16::from_le_bytes([b[0], b[1]]))
                    .collect()
            } else {
                check_len(t.int32_data.len(), n, "int32_data")?;
                t.int32_data.iter().map(|&v| v as u16).collect()
            };
            Data::F(
                bits.into_iter()
                    .map(|b| {
                        if ty == dt::FLOAT16 {
                            half::f16::from_bits(b).to_f32()
                        } else {
                            half::bf16::from_bits(b).to_f32()
                        }
                    })
                    .collect(),
            )
        }
        dt::INT64 => Data::I(if use_raw {
            chunks(raw, 8, n)?
                .map(|b| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    i64::from_le_bytes(a)
                })
                .collect()
        } else {
            check_len(t.int64_data.len(), n, "int64_data")?;
            t.int64_data.clone()
        }),
        dt::UINT32 | dt::UINT64 => Data::I(if use_raw {
            let size = if ty == dt::UINT32 { 4 } else { 8 };
            chunks(raw, size, n)?
                .map(|b| {
                    let mut a = [0u8; 8];
                    a[..size].copy_from_slice(b);
                    u64::from_le_bytes(a) as i64
                })
                .collect()
        } else {
            check_len(t.uint64_data.len(), n, "uint64_data")?;
            t.uint64_data.iter().map(|&v| wrap(v as i64, ty)).collect()
        }),
        dt::INT32 | dt::INT16 | dt::INT8 | dt::UINT16 | dt::UINT8 | dt::BOOL => {
            Data::I(if use_raw {
                let size = match ty {
                    dt::INT32 => 4,
                    dt::INT16 | dt::UINT16 => 2,
                    _ => 1,
                };
                chunks(raw, size, n)?
                    .map(|b| {
                        let mut a = [0u8; 4];
                        a[..size].copy_from_slice(b);
                        wrap(i64::from(u32::from_le_bytes(a)), ty)
                    })
                    .collect()
            } else {
                check_len(t.int32_data.len(), n, "int32_data")?;
                t.int32_data
                    .iter()
                    .map(|&v| wrap(i64::from(v), ty))
                    .collect()
            })
        }
        other => {
            return Err(format!(
                "element type {} ({other}) is not supported",
                dt::name(other)
            ))
        }
    };
    Ok(Const {
        dtype: ty,
        dims,
        data,
    })
}

/// The float values and dimensions of a `TensorProto` (for tests and tools that read the
/// backend tests' `input_K.pb` / `output_K.pb`).
pub fn float_values(t: &TensorProto) -> Result<(Vec<usize>, Vec<f32>), String> {
    let c = from_proto(t)?;
    Ok((c.dims.clone(), c.to_f32()))
}

/// Numpy broadcasting of two shapes.
pub(crate) fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let at = |d: &[usize], i: usize| {
        let off = r - d.len();
        if i < off {
            1
        } else {
            d[i - off]
        }
    };
    (0..r)
        .map(|i| {
            let (x, y) = (at(a, i), at(b, i));
            if x == y || y == 1 {
                Some(x)
            } else if x == 1 {
                Some(y)
            } else {
                None
            }
        })
        .collect()
}

/// Row-major strides of `dims`.
pub(crate) fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// For each element of `out` (a broadcast of `dims`), the index of the element of a
/// tensor of `dims` it reads.
pub(crate) fn broadcast_index(dims: &[usize], out: &[usize]) -> Vec<usize> {
    let n: usize = out.iter().product();
    let off = out.len() - dims.len();
    let src = strides(dims);
    let dst = strides(out);
    (0..n)
        .map(|e| {
            let mut idx = 0;
            for (i, &d) in dims.iter().enumerate() {
                let o = (e / dst[i + off]) % out[i + off];
                if d != 1 {
                    idx += o * src[i];
                }
            }
            idx
        })
        .collect()
}

/// An element-wise binary operation on two constants, with broadcasting.
pub(crate) fn binary(
    a: &Const,
    b: &Const,
    f: impl Fn(f64, f64) -> f64,
    i: impl Fn(i64, i64) -> Result<i64, String>,
) -> Result<Const, String> {
    let dims = broadcast(&a.dims, &b.dims).ok_or_else(|| {
        format!(
            "shapes {} and {} do not broadcast",
            fmt_dims(&a.dims),
            fmt_dims(&b.dims)
        )
    })?;
    count(&dims, MAX_COMPUTED)?;
    let ia = broadcast_index(&a.dims, &dims);
    let ib = broadcast_index(&b.dims, &dims);
    let data = match (&a.data, &b.data) {
        (Data::I(x), Data::I(y)) => Data::I(
            ia.iter()
                .zip(&ib)
                .map(|(&p, &q)| i(x[p], y[q]).map(|v| wrap(v, a.dtype)))
                .collect::<Result<_, _>>()?,
        ),
        _ => {
            let (x, y) = (a.to_f32(), b.to_f32());
            Data::F(
                ia.iter()
                    .zip(&ib)
                    .map(|(&p, &q)| f(f64::from(x[p]), f64::from(y[q])) as f32)
                    .collect(),
            )
        }
    };
    let dtype = if matches!(data, Data::F(_)) && !is_float(a.dtype) {
        dt::FLOAT
    } else {
        a.dtype
    };
    Ok(Const { dtype, dims, data })
}
