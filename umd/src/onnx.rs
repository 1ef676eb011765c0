//! ONNX `TensorProto` files (`.pb`, as the ONNX test data sets hold inputs and outputs):
//! a small hand-written protobuf decoder for the one message.
//!
//! Fields read (numbers from `onnx.proto`): `dims` (1, packed or not), `data_type` (2),
//! `float_data` (4), `int32_data` (5), `int64_data` (7), `name` (8), `raw_data` (9),
//! `double_data` (10), `uint64_data` (11), `data_location` (14). `segment` (3) and external
//! data (`data_location` EXTERNAL) are refused; the rest (`doc_string`, `string_data`,
//! `external_data` entries, metadata) is skipped by wire type. Element types: FLOAT, UINT8,
//! INT8, UINT16, INT16, INT32, INT64, BOOL (as uint8), FLOAT16, DOUBLE, UINT32, UINT64; the
//! others (strings, bfloat16, 8/4/2-bit floats and integers, complex) are refused by name.
//!
//! The data comes from `raw_data` (little-endian, as ONNX specifies) or from the typed field
//! the type uses (`int32_data` holds INT8..INT16, BOOL and FLOAT16 bits, one value each). Its
//! count must be what `dims` give. A hand-written decoder rather than `prost`: the message is
//! flat, a derived decoder would still need every check below, and it keeps the runtime's
//! dependencies to the ones it has. No recursion, no allocation beyond the input's size, no
//! panic on any input.

use thiserror::Error;

use crate::tensor::{ElementType, HostTensor};

/// Why bytes are not a supported `TensorProto`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TensorProtoError {
    /// The message ends inside a field.
    #[error("truncated {what} at byte {at} (the message is {len} bytes): not a TensorProto, or cut short")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Where it started.
        at: usize,
        /// Message length.
        len: usize,
    },
    /// A varint longer than 10 bytes.
    #[error("malformed varint at byte {at}: not a TensorProto")]
    BadVarint {
        /// Where it started.
        at: usize,
    },
    /// A known field with the wrong wire type, or a wire type that does not exist.
    #[error("field {field} has wire type {wire_type} at byte {at}: not a TensorProto")]
    WireType {
        /// Field number.
        field: u64,
        /// Wire type.
        wire_type: u8,
        /// Where the tag is.
        at: usize,
    },
    /// No `data_type`, or UNDEFINED.
    #[error("data_type is missing (UNDEFINED): not a TensorProto")]
    MissingDataType,
    /// A type this reader does not convert.
    #[error("unsupported data_type {code} ({name}); supported: FLOAT, FLOAT16, DOUBLE, INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64, BOOL")]
    UnsupportedType {
        /// `data_type` value.
        code: u64,
        /// Its name in `onnx.proto`.
        name: &'static str,
    },
    /// A negative dimension.
    #[error("dims[{index}] is {value}")]
    NegativeDim {
        /// Position.
        index: usize,
        /// Value.
        value: i64,
    },
    /// The element count overflows.
    #[error("dims {0:?} are too large")]
    TooLarge(Vec<u64>),
    /// Segmented tensors.
    #[error("segmented tensors (field 'segment') are not supported")]
    Segment,
    /// Data stored outside the file.
    #[error(
        "external data (data_location EXTERNAL) is not supported: save the tensor with its data"
    )]
    ExternalData,
    /// Data both in `raw_data` and a typed field, or in two typed fields.
    #[error("data is both in {0} and {1}")]
    TwoSources(&'static str, &'static str),
    /// Data in a field the type does not use.
    #[error("{field} does not hold {dtype} data")]
    WrongField {
        /// The field that has data.
        field: &'static str,
        /// The tensor's type.
        dtype: &'static str,
    },
    /// The data does not have the element count `dims` give.
    #[error("{field} holds {got} {unit}, dims {dims:?} need {expected}")]
    Count {
        /// Field.
        field: &'static str,
        /// Values or bytes present.
        got: u64,
        /// Values or bytes needed.
        expected: u64,
        /// `values` or `bytes`.
        unit: &'static str,
        /// The dims.
        dims: Vec<u64>,
    },
    /// A typed value outside the element type's range.
    #[error("{field}[{index}] = {value} is out of range for {dtype}")]
    ValueRange {
        /// Field.
        field: &'static str,
        /// Position.
        index: usize,
        /// Value.
        value: i64,
        /// The tensor's type.
        dtype: &'static str,
    },
}

/// A decoded `TensorProto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorProto {
    /// The `name` field (empty if absent).
    pub name: String,
    /// Its array.
    pub tensor: HostTensor,
}

/// `data_type` values of `onnx.proto` and what they become.
fn data_type(code: u64) -> Result<(ElementType, &'static str), TensorProtoError> {
    let unsupported = |name| Err(TensorProtoError::UnsupportedType { code, name });
    Ok(match code {
        0 => return Err(TensorProtoError::MissingDataType),
        1 => (ElementType::F32, "FLOAT"),
        2 => (ElementType::U8, "UINT8"),
        3 => (ElementType::I8, "INT8"),
        4 => (ElementType::U16, "UINT16"),
        5 => (ElementType::I16, "INT16"),
        6 => (ElementType::I32, "INT32"),
        7 => (ElementType::I64, "INT64"),
        8 => return unsupported("STRING"),
        9 => (ElementType::U8, "BOOL"),
        10 => (ElementType::F16, "FLOAT16"),
        11 => (ElementType::F64, "DOUBLE"),
        12 => (ElementType::U32, "UINT32"),
        13 => (ElementType::U64, "UINT64"),
        14 => return unsupported("COMPLEX64"),
        15 => return unsupported("COMPLEX128"),
        16 => return unsupported("BFLOAT16"),
        17 => return unsupported("FLOAT8E4M3FN"),
        18 => return unsupported("FLOAT8E4M3FNUZ"),
        19 => return unsupported("FLOAT8E5M2"),
        20 => return unsupported("FLOAT8E5M2FNUZ"),
        21 => return unsupported("UINT4"),
        22 => return unsupported("INT4"),
        23 => return unsupported("FLOAT4E2M1"),
        24 => return unsupported("FLOAT8E8M0"),
        25 => return unsupported("UINT2"),
        26 => return unsupported("INT2"),
        _ => return unsupported("unknown"),
    })
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn truncated(&self, what: &'static str, at: usize) -> TensorProtoError {
        TensorProtoError::Truncated {
            what,
            at,
            len: self.b.len(),
        }
    }

    fn varint(&mut self, what: &'static str) -> Result<u64, TensorProtoError> {
        let at = self.pos;
        let mut v: u64 = 0;
        for i in 0..10 {
            let byte = *self
                .b
                .get(self.pos)
                .ok_or_else(|| self.truncated(what, at))?;
            self.pos += 1;
            v |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(TensorProtoError::BadVarint { at })
    }

    fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], TensorProtoError> {
        let at = self.pos;
        let end = at.checked_add(n).ok_or_else(|| self.truncated(what, at))?;
        let s = self
            .b
            .get(at..end)
            .ok_or_else(|| self.truncated(what, at))?;
        self.pos = end;
        Ok(s)
    }

    fn len_delimited(&mut self, what: &'static str) -> Result<&'a [u8], TensorProtoError> {
        let at = self.pos;
        let n = self.varint(what)?;
        let n = usize::try_from(n).map_err(|_| self.truncated(what, at))?;
        self.bytes(n, what)
    }

    fn done(&self) -> bool {
        self.pos >= self.b.len()
    }
}

/// A repeated scalar field, packed (wire type 2) or one value per tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scalar {
    Varint,
    Fixed32,
    Fixed64,
}

fn repeated(
    r: &mut Reader<'_>,
    wire: u8,
    kind: Scalar,
    field: u64,
    at: usize,
    out: &mut Vec<u64>,
) -> Result<(), TensorProtoError> {
    let what = "repeated field";
    let one = |r: &mut Reader<'_>| -> Result<u64, TensorProtoError> {
        match kind {
            Scalar::Varint => r.varint(what),
            Scalar::Fixed32 => {
                let b = r.bytes(4, what)?;
                Ok(u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            }
            Scalar::Fixed64 => {
                let b = r.bytes(8, what)?;
                let mut w = [0u8; 8];
                w.copy_from_slice(b);
                Ok(u64::from_le_bytes(w))
            }
        }
    };
    let single = match kind {
        Scalar::Varint => 0,
        Scalar::Fixed32 => 5,
        Scalar::Fixed64 => 1,
    };
    if wire == single {
        out.push(one(r)?);
        Ok(())
    } else if wire == 2 {
        let payload = r.len_delimited(what)?;
        let mut inner = Reader { b: payload, pos: 0 };
        while !inner.done() {
            out.push(one(&mut inner)?);
        }
        Ok(())
    } else {
        Err(TensorProtoError::WireType {
            field,
            wire_type: wire,
            at,
        })
    }
}

fn skip(r: &mut Reader<'_>, wire: u8, field: u64, at: usize) -> Result<(), TensorProtoError> {
    match wire {
        0 => r.varint("field").map(|_| ()),
        1 => r.bytes(8, "field").map(|_| ()),
        2 => r.len_delimited("field").map(|_| ()),
        5 => r.bytes(4, "field").map(|_| ()),
        _ => Err(TensorProtoError::WireType {
            field,
            wire_type: wire,
            at,
        }),
    }
}

/// Decodes a serialized `TensorProto`.
pub fn read(bytes: &[u8]) -> Result<TensorProto, TensorProtoError> {
    let mut r = Reader { b: bytes, pos: 0 };
    let mut dims: Vec<u64> = Vec::new();
    let mut dtype: u64 = 0;
    let mut name = String::new();
    let mut raw: Option<&[u8]> = None;
    // Typed fields, as raw 64-bit words in arrival order.
    let (mut floats, mut int32s, mut int64s, mut doubles, mut uint64s) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    while !r.done() {
        let at = r.pos;
        let tag = r.varint("tag")?;
        let (field, wire) = (tag >> 3, (tag & 7) as u8);
        let wrong = || TensorProtoError::WireType {
            field,
            wire_type: wire,
            at,
        };
        match field {
            1 => repeated(&mut r, wire, Scalar::Varint, field, at, &mut dims)?,
            2 if wire == 0 => dtype = r.varint("data_type")?,
            3 => return Err(TensorProtoError::Segment),
            4 => repeated(&mut r, wire, Scalar::Fixed32, field, at, &mut floats)?,
            5 => repeated(&mut r, wire, Scalar::Varint, field, at, &mut int32s)?,
            7 => repeated(&mut r, wire, Scalar::Varint, field, at, &mut int64s)?,
            8 if wire == 2 => {
                name = String::from_utf8_lossy(r.len_delimited("name")?).into_owned();
            }
            9 if wire == 2 => {
                // Repeated occurrences of a bytes field: the last one wins.
                raw = Some(r.len_delimited("raw_data")?);
            }
            10 => repeated(&mut r, wire, Scalar::Fixed64, field, at, &mut doubles)?,
            11 => repeated(&mut r, wire, Scalar::Varint, field, at, &mut uint64s)?,
            14 if wire == 0 => {
                if r.varint("data_location")? == 1 {
                    return Err(TensorProtoError::ExternalData);
                }
            }
            2 | 8 | 9 | 14 => return Err(wrong()),
            _ => skip(&mut r, wire, field, at)?,
        }
    }
    let dims: Vec<u64> = dims
        .iter()
        .enumerate()
        .map(|(index, &d)| {
            let value = d as i64;
            if value < 0 {
                Err(TensorProtoError::NegativeDim { index, value })
            } else {
                Ok(value as u64)
            }
        })
        .collect::<Result<_, _>>()?;
    let (et, tname) = data_type(dtype)?;
    let count = dims
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .filter(|n| n.checked_mul(et.size() as u64).is_some())
        .ok_or_else(|| TensorProtoError::TooLarge(dims.clone()))?;
    let typed: [(&'static str, &Vec<u64>); 5] = [
        ("float_data", &floats),
        ("int32_data", &int32s),
        ("int64_data", &int64s),
        ("double_data", &doubles),
        ("uint64_data", &uint64s),
    ];
    let mut present = typed.iter().filter(|(_, v)| !v.is_empty());
    let first = present.next();
    if let Some((second, _)) = present.next() {
        return Err(TensorProtoError::TwoSources(
            first.map_or("", |f| f.0),
            second,
        ));
    }
    let data = match (raw, first) {
        (Some(_), Some((f, _))) => return Err(TensorProtoError::TwoSources("raw_data", f)),
        (Some(raw), None) => {
            let expected = count * et.size() as u64;
            if raw.len() as u64 != expected {
                return Err(TensorProtoError::Count {
                    field: "raw_data",
                    got: raw.len() as u64,
                    expected,
                    unit: "bytes",
                    dims,
                });
            }
            raw.to_vec()
        }
        (None, None) if count == 0 => Vec::new(),
        (None, None) => {
            return Err(TensorProtoError::Count {
                field: "the data fields",
                got: 0,
                expected: count,
                unit: "values",
                dims,
            })
        }
        (None, Some(&(field, values))) => {
            let expected_field = match et {
                ElementType::F32 => "float_data",
                ElementType::F64 => "double_data",
                ElementType::I64 => "int64_data",
                ElementType::U32 | ElementType::U64 => "uint64_data",
                _ => "int32_data",
            };
            if field != expected_field {
                return Err(TensorProtoError::WrongField {
                    field,
                    dtype: tname,
                });
            }
            if values.len() as u64 != count {
                return Err(TensorProtoError::Count {
                    field,
                    got: values.len() as u64,
                    expected: count,
                    unit: "values",
                    dims,
                });
            }
            typed_bytes(et, tname, field, values)?
        }
    };
    let tensor = HostTensor::new(et, dims, data).map_err(|_| TensorProtoError::Count {
        field: "data",
        got: 0,
        expected: count,
        unit: "values",
        dims: Vec::new(),
    })?;
    Ok(TensorProto { name, tensor })
}

/// Little-endian element bytes from the words of a typed field.
fn typed_bytes(
    et: ElementType,
    tname: &'static str,
    field: &'static str,
    values: &[u64],
) -> Result<Vec<u8>, TensorProtoError> {
    let size = et.size();
    let mut out = Vec::with_capacity(values.len() * size);
    for (index, &w) in values.iter().enumerate() {
        // int32_data values are int32 varints (sign-extended to 64 bits on the wire);
        // FLOAT16 and BOOL keep their bits or 0/1 in them.
        let range = |lo: i64, hi: i64| -> Result<i64, TensorProtoError> {
            let v = w as i64;
            if v < lo || v > hi {
                Err(TensorProtoError::ValueRange {
                    field,
                    index,
                    value: v,
                    dtype: tname,
                })
            } else {
                Ok(v)
            }
        };
        match et {
            ElementType::F32 | ElementType::F64 | ElementType::I64 | ElementType::U64 => {
                out.extend_from_slice(&w.to_le_bytes()[..size]);
            }
            ElementType::U32 => {
                let v = u32::try_from(w).map_err(|_| TensorProtoError::ValueRange {
                    field,
                    index,
                    value: w as i64,
                    dtype: tname,
                })?;
                out.extend_from_slice(&v.to_le_bytes());
            }
            ElementType::I8 => out.push(range(-128, 127)? as i8 as u8),
            ElementType::U8 => out.push(range(0, 255)? as u8),
            ElementType::I16 => {
                out.extend_from_slice(&(range(-32768, 32767)? as i16).to_le_bytes())
            }
            ElementType::U16 | ElementType::F16 => {
                out.extend_from_slice(&(range(0, 65535)? as u16).to_le_bytes())
            }
            ElementType::I32 => out.extend_from_slice(
                &(range(i64::from(i32::MIN), i64::from(i32::MAX))? as i32).to_le_bytes(),
            ),
        }
    }
    Ok(out)
}

/// Serializes `t` as a `TensorProto` with `raw_data` (for tests and tools).
pub fn write(name: &str, t: &HostTensor) -> Vec<u8> {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let code = match t.element_type() {
        ElementType::F32 => 1,
        ElementType::U8 => 2,
        ElementType::I8 => 3,
        ElementType::U16 => 4,
        ElementType::I16 => 5,
        ElementType::I32 => 6,
        ElementType::I64 => 7,
        ElementType::F16 => 10,
        ElementType::F64 => 11,
        ElementType::U32 => 12,
        ElementType::U64 => 13,
    };
    let mut out = Vec::new();
    for &d in t.shape() {
        out.push(0x08);
        varint(&mut out, d);
    }
    out.push(0x10);
    varint(&mut out, code);
    if !name.is_empty() {
        out.push(0x42);
        varint(&mut out, name.len() as u64);
        out.extend_from_slice(name.as_bytes());
    }
    out.push(0x4a);
    varint(&mut out, t.data().len() as u64);
    out.extend_from_slice(t.data());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_and_typed_data() {
        let t = HostTensor::new(
            ElementType::F32,
            vec![2, 2],
            [1.0f32, -2.0, 0.5, 3.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        )
        .unwrap();
        let bytes = write("x", &t);
        let p = read(&bytes).unwrap();
        assert_eq!((p.name.as_str(), &p.tensor), ("x", &t));
        // The same as packed float_data (field 4) and as unpacked.
        let mut packed = vec![0x0a, 0x02, 0x02, 0x02, 0x10, 0x01, 0x22, 16];
        packed.extend_from_slice(t.data());
        assert_eq!(read(&packed).unwrap().tensor, t);
        let mut unpacked = vec![0x08, 0x02, 0x08, 0x02, 0x10, 0x01];
        for c in t.data().chunks(4) {
            unpacked.push(0x25);
            unpacked.extend_from_slice(c);
        }
        assert_eq!(read(&unpacked).unwrap().tensor, t);
        // INT8 in int32_data, negative values as 10-byte varints.
        let mut i8s = vec![0x08, 0x03, 0x10, 0x03, 0x2a];
        let mut payload = vec![0x05];
        payload.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        payload.push(0x7f);
        i8s.push(payload.len() as u8);
        i8s.extend_from_slice(&payload);
        let p = read(&i8s).unwrap();
        assert_eq!(p.tensor.element_type(), ElementType::I8);
        assert_eq!(p.tensor.data(), &[5, 0xff, 0x7f]);
        // Scalars (no dims) and empty tensors.
        let s = read(&[0x10, 0x07, 0x3a, 0x01, 0x2a]).unwrap();
        assert_eq!(
            (s.tensor.shape(), s.tensor.data()),
            (&[][..], &42i64.to_le_bytes()[..])
        );
        let e = read(&[0x08, 0x00, 0x10, 0x01]).unwrap();
        assert_eq!(e.tensor.element_count(), 0);
    }

    #[test]
    fn rejections_say_why() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"\x93NUMPY\x01\x00".to_vec(), "wire type"),
            (vec![0x08, 0x02], "data_type is missing"),
            (vec![0x08, 0x02, 0x10, 0x08], "STRING"),
            (vec![0x08, 0x02, 0x10, 0x10], "BFLOAT16"),
            (
                vec![0x08, 0x02, 0x10, 0x01, 0x4a, 0x04, 0, 0, 0, 0],
                "raw_data holds 4 bytes, dims [2] need 8",
            ),
            (
                vec![0x08, 0x02, 0x10, 0x01, 0x4a, 0x09, 0],
                "truncated raw_data",
            ),
            (vec![0x08, 0x02, 0x10, 0x01], "need 2"),
            (
                vec![0x08, 0x01, 0x10, 0x03, 0x28, 0x80, 0x02],
                "int32_data[0] = 256 is out of range for INT8",
            ),
            (
                vec![0x08, 0x01, 0x10, 0x01, 0x28, 0x01],
                "int32_data does not hold FLOAT",
            ),
            (
                vec![
                    0x08, 0x01, 0x10, 0x01, 0x25, 0, 0, 0, 0, 0x4a, 0x04, 0, 0, 0, 0,
                ],
                "both",
            ),
            (vec![0x08, 0x01, 0x10, 0x01, 0x70, 0x01], "external"),
            (vec![0x08, 0x7f, 0x10, 0x01, 0x1a, 0x00], "segment"),
            (
                vec![
                    0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x10, 0x01,
                ],
                "dims[0] is -1",
            ),
            (
                vec![
                    0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x08, 0xff, 0x01,
                    0x10, 0x01,
                ],
                "too large",
            ),
            (
                vec![0x08; 1].into_iter().chain([0x80; 11]).collect(),
                "varint",
            ),
            (vec![0x10, 0x01, 0x0b], "wire type 3"),
            (vec![0x12, 0x00], "field 2 has wire type 2"),
        ];
        for (bytes, what) in cases {
            let e = read(&bytes).unwrap_err().to_string();
            assert!(e.contains(what), "{what:?} not in {e:?}");
        }
    }
}
