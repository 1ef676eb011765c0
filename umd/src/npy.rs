//! The NumPy `.npy` format (versions 1.0, 2.0 and 3.0): read and write.
//!
//! A file is the magic `\x93NUMPY`, a major and a minor version byte, the header length
//! (little-endian `u16` in version 1, `u32` in versions 2 and 3), the header — a Python dict
//! literal such as `{'descr': '<f4', 'fortran_order': False, 'shape': (1, 28, 28), }`, padded
//! with spaces and ended by a newline — and then the array's elements.
//!
//! Supported element types (`descr`): `<f2`, `<f4`, `<f8`, `|i1`, `|u1`, `|b1` (read as
//! `u1`), `<i2`, `<u2`, `<i4`, `<u4`, `<i8`, `<u8`; for one-byte types any byte-order
//! character. Big-endian (`>`) multi-byte data, structured or object types and Fortran order
//! are refused with the reason. The parser checks everything against the input before it
//! allocates (the elements are at most the input's length), never panics and has no
//! recursion, so any byte string is safe to give it.
//!
//! [`write()`] produces what `numpy.save` produces for the same array: version 1.0 (2.0 if the
//! header does not fit), the header padded so that the data starts on a 64-byte boundary.

use thiserror::Error;

use crate::tensor::{ElementType, HostTensor};

/// The six bytes a `.npy` file starts with.
pub const MAGIC: [u8; 6] = *b"\x93NUMPY";

/// Why bytes are not a supported `.npy` array.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NpyError {
    /// The file does not start with `\x93NUMPY`.
    #[error("not a .npy file: magic {found:02x?}, expected \"\\x93NUMPY\"")]
    BadMagic {
        /// The first bytes (up to six).
        found: Vec<u8>,
    },
    /// A format version other than 1.0, 2.0 or 3.0.
    #[error(".npy format version {major}.{minor} not supported (1.0, 2.0, 3.0)")]
    UnsupportedVersion {
        /// Major version byte.
        major: u8,
        /// Minor version byte.
        minor: u8,
    },
    /// The file ends inside the preamble, the header or the data.
    #[error("truncated {what}: {needed} bytes needed, {got} present")]
    Truncated {
        /// Which part.
        what: &'static str,
        /// Bytes the part needs.
        needed: u64,
        /// Bytes present.
        got: u64,
    },
    /// The header dict is malformed.
    #[error("bad header: {0}")]
    BadHeader(String),
    /// An element type this reader does not handle.
    #[error(
        "unsupported dtype {0:?} (supported: <f2 <f4 <f8 |i1 |u1 |b1 <i2 <u2 <i4 <u4 <i8 <u8)"
    )]
    UnsupportedDtype(String),
    /// Big-endian multi-byte elements.
    #[error("big-endian dtype {0:?} is not supported (save little-endian data: numpy's '<' types, e.g. a.astype('<f4'))")]
    BigEndian(String),
    /// Column-major data.
    #[error("fortran_order True is not supported (save a C-order array: numpy.ascontiguousarray)")]
    FortranOrder,
    /// The element count overflows.
    #[error("shape {0:?} is too large")]
    TooLarge(Vec<u64>),
    /// Bytes after the last element.
    #[error("{extra} bytes after the {expected} bytes of array data")]
    TrailingBytes {
        /// Bytes the shape and dtype announce.
        expected: u64,
        /// Bytes beyond them.
        extra: u64,
    },
}

/// The `descr` of an element type as NumPy writes it.
pub fn descr(t: ElementType) -> &'static str {
    match t {
        ElementType::F16 => "<f2",
        ElementType::F32 => "<f4",
        ElementType::F64 => "<f8",
        ElementType::I8 => "|i1",
        ElementType::U8 => "|u1",
        ElementType::I16 => "<i2",
        ElementType::U16 => "<u2",
        ElementType::I32 => "<i4",
        ElementType::U32 => "<u4",
        ElementType::I64 => "<i8",
        ElementType::U64 => "<u8",
    }
}

fn parse_descr(d: &str) -> Result<ElementType, NpyError> {
    let unsupported = || NpyError::UnsupportedDtype(d.to_string());
    let (order, code) = match d.as_bytes().first() {
        Some(b'<' | b'>' | b'|' | b'=') => (d.as_bytes()[0], &d[1..]),
        _ => (b'|', d),
    };
    let t = match code {
        "f2" | "e" => ElementType::F16,
        "f4" | "f" => ElementType::F32,
        "f8" | "d" => ElementType::F64,
        "i1" | "b" => ElementType::I8,
        "u1" | "B" | "b1" | "?" => ElementType::U8,
        "i2" | "h" => ElementType::I16,
        "u2" | "H" => ElementType::U16,
        "i4" | "i" => ElementType::I32,
        "u4" | "I" => ElementType::U32,
        "i8" | "q" => ElementType::I64,
        "u8" | "Q" => ElementType::U64,
        _ => return Err(unsupported()),
    };
    // A one-byte type has no byte order; a wider one must be little-endian.
    if t.size() > 1 && order != b'<' {
        return Err(NpyError::BigEndian(d.to_string()));
    }
    Ok(t)
}

/// A value of the header dict.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
}

/// A cursor over the header text.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn skip_ws(&mut self) {
        while self.s.get(self.pos).is_some_and(u8::is_ascii_whitespace) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn bad(&self, what: &str) -> NpyError {
        NpyError::BadHeader(format!("{what} at byte {} of the header", self.pos))
    }

    fn expect(&mut self, c: u8) -> Result<(), NpyError> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.bad(&format!("expected '{}'", c as char)))
        }
    }

    fn string(&mut self) -> Result<String, NpyError> {
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(self.bad("expected a quoted string")),
        };
        self.pos += 1;
        let start = self.pos;
        while let Some(&c) = self.s.get(self.pos) {
            if c == q {
                let text = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
                self.pos += 1;
                return Ok(text);
            }
            if c == b'\\' {
                return Err(self.bad("escape sequences are not supported in strings"));
            }
            self.pos += 1;
        }
        Err(self.bad("unterminated string"))
    }

    fn integer(&mut self) -> Result<u64, NpyError> {
        self.skip_ws();
        let start = self.pos;
        let mut v: u64 = 0;
        while let Some(&c) = self.s.get(self.pos).filter(|c| c.is_ascii_digit()) {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(c - b'0')))
                .ok_or_else(|| self.bad("dimension too large"))?;
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.bad("expected a dimension (non-negative integer)"));
        }
        // Python 2 wrote longs as `3L`.
        if matches!(self.s.get(self.pos), Some(b'L' | b'l')) {
            self.pos += 1;
        }
        Ok(v)
    }

    fn value(&mut self) -> Result<Value, NpyError> {
        match self.peek() {
            Some(b'\'' | b'"') => Ok(Value::Str(self.string()?)),
            Some(b'(') => {
                self.pos += 1;
                let mut dims = Vec::new();
                loop {
                    if self.peek() == Some(b')') {
                        self.pos += 1;
                        break;
                    }
                    dims.push(self.integer()?);
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b')') => {}
                        _ => return Err(self.bad("expected ',' or ')' in the shape")),
                    }
                }
                Ok(Value::Tuple(dims))
            }
            Some(b'T') if self.s[self.pos..].starts_with(b"True") => {
                self.pos += 4;
                Ok(Value::Bool(true))
            }
            Some(b'F') if self.s[self.pos..].starts_with(b"False") => {
                self.pos += 5;
                Ok(Value::Bool(false))
            }
            Some(b'[') => Err(NpyError::UnsupportedDtype(
                "a structured (record) dtype".into(),
            )),
            _ => Err(self.bad("expected a string, True, False or a tuple")),
        }
    }
}

/// The three fields of a header.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
}

fn parse_header(text: &[u8]) -> Result<Header, NpyError> {
    let mut lx = Lexer { s: text, pos: 0 };
    lx.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        if lx.peek() == Some(b'}') {
            lx.pos += 1;
            break;
        }
        let key = lx.string()?;
        lx.expect(b':')?;
        let value = lx.value()?;
        let slot = match (key.as_str(), value) {
            ("descr", Value::Str(s)) => descr.replace(s).is_some(),
            ("fortran_order", Value::Bool(b)) => fortran.replace(b).is_some(),
            ("shape", Value::Tuple(t)) => shape.replace(t).is_some(),
            ("descr" | "fortran_order" | "shape", v) => {
                return Err(NpyError::BadHeader(format!(
                    "'{key}' has the wrong kind of value ({v:?})"
                )))
            }
            (other, _) => {
                return Err(NpyError::BadHeader(format!("unexpected key '{other}'")));
            }
        };
        if slot {
            return Err(NpyError::BadHeader(format!("duplicate key '{key}'")));
        }
        match lx.peek() {
            Some(b',') => lx.pos += 1,
            Some(b'}') => {}
            _ => return Err(lx.bad("expected ',' or '}'")),
        }
    }
    if lx.peek().is_some() {
        return Err(lx.bad("text after the dict"));
    }
    let missing = |k: &str| NpyError::BadHeader(format!("missing key '{k}'"));
    Ok(Header {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran_order: fortran.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
    })
}

/// Parses a `.npy` file into a tensor (shape as stored, elements little-endian).
pub fn read(bytes: &[u8]) -> Result<HostTensor, NpyError> {
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        return Err(NpyError::BadMagic {
            found: bytes[..bytes.len().min(MAGIC.len())].to_vec(),
        });
    }
    let truncated = |what, needed: usize| NpyError::Truncated {
        what,
        needed: needed as u64,
        got: bytes.len() as u64,
    };
    let (major, minor) = match bytes.get(6..8) {
        Some(v) => (v[0], v[1]),
        None => return Err(truncated("preamble", 8)),
    };
    let (len_size, header_len) = match (major, minor) {
        (1, 0) => {
            let b = bytes.get(8..10).ok_or_else(|| truncated("preamble", 10))?;
            (2, usize::from(u16::from_le_bytes([b[0], b[1]])))
        }
        (2 | 3, 0) => {
            let b = bytes.get(8..12).ok_or_else(|| truncated("preamble", 12))?;
            let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            (4, usize::try_from(n).unwrap_or(usize::MAX))
        }
        _ => return Err(NpyError::UnsupportedVersion { major, minor }),
    };
    let start: usize = 8 + len_size;
    let data_start = start.saturating_add(header_len);
    let header = bytes
        .get(start..data_start)
        .ok_or_else(|| truncated("header", data_start))?;
    let h = parse_header(header)?;
    let dtype = parse_descr(&h.descr)?;
    if h.fortran_order {
        return Err(NpyError::FortranOrder);
    }
    let count = h
        .shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .and_then(|n| n.checked_mul(dtype.size() as u64))
        .ok_or_else(|| NpyError::TooLarge(h.shape.clone()))?;
    let data = &bytes[data_start..];
    let have = data.len() as u64;
    if have < count {
        return Err(NpyError::Truncated {
            what: "data",
            needed: count,
            got: have,
        });
    }
    if have > count {
        return Err(NpyError::TrailingBytes {
            expected: count,
            extra: have - count,
        });
    }
    HostTensor::new(dtype, h.shape, data.to_vec()).map_err(|e| NpyError::BadHeader(e.to_string()))
}

/// Serializes `t` as `numpy.save` would (C order, little-endian).
pub fn write(t: &HostTensor) -> Vec<u8> {
    let dims: Vec<String> = t.shape().iter().map(u64::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        descr(t.element_type())
    );
    // Version 1.0 if the padded header length fits in 16 bits, else 2.0.
    let padded = |preamble: usize, len: usize| (preamble + len + 1).div_ceil(64) * 64 - preamble;
    let (major, preamble) = if padded(10, header.len()) <= usize::from(u16::MAX) {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    let total = padded(preamble, header.len());
    while header.len() + 1 < total {
        header.push(' ');
    }
    header.push('\n');
    let mut out = Vec::with_capacity(preamble + header.len() + t.data().len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&[major, 0]);
    if major == 1 {
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(t.data());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(version: u8, header: &str, data: &[u8]) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[version, 0]);
        if version == 1 {
            v.extend_from_slice(&(header.len() as u16).to_le_bytes());
        } else {
            v.extend_from_slice(&(header.len() as u32).to_le_bytes());
        }
        v.extend_from_slice(header.as_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn writes_what_numpy_saves() {
        // numpy.save(f, numpy.arange(6, dtype='<f4').reshape(2, 3))
        let data: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let t = HostTensor::new(ElementType::F32, vec![2, 3], data.clone()).unwrap();
        let bytes = write(&t);
        let head = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        let mut expected = MAGIC.to_vec();
        expected.extend_from_slice(&[1, 0, 118, 0]);
        expected.extend_from_slice(head.as_bytes());
        expected.resize(127, b' ');
        expected.push(b'\n');
        expected.extend_from_slice(&data);
        assert_eq!(bytes, expected);
        assert_eq!(read(&bytes).unwrap(), t);
        // One dimension keeps Python's trailing comma; zero dimensions are a scalar.
        let one = HostTensor::new(ElementType::U8, vec![3], vec![1, 2, 3]).unwrap();
        let b = write(&one);
        assert!(String::from_utf8_lossy(&b).contains("'shape': (3,), }"));
        assert_eq!(read(&b).unwrap(), one);
        let scalar = HostTensor::new(ElementType::F64, vec![], 2.5f64.to_le_bytes().to_vec());
        let scalar = scalar.unwrap();
        let b = write(&scalar);
        assert!(String::from_utf8_lossy(&b).contains("'shape': (), }"));
        assert_eq!(read(&b).unwrap(), scalar);
        assert_eq!(b.len() % 64, 8);
    }

    #[test]
    fn every_type_round_trips() {
        for t in ElementType::ALL {
            let n = 5 * t.size();
            let data: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
            let x = HostTensor::new(t, vec![1, 5], data).unwrap();
            assert_eq!(read(&write(&x)).unwrap(), x, "{t:?}");
        }
    }

    #[test]
    fn versions_and_header_spellings() {
        let data = [1u8, 2, 3, 4];
        for (v, h) in [
            (
                1,
                "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2), }\n",
            ),
            (
                2,
                "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2)}",
            ),
            (
                3,
                "{\"shape\": (2,2), \"descr\": \"|u1\", \"fortran_order\": False}  \n",
            ),
            (
                1,
                "{'descr': 'u1', 'fortran_order': False, 'shape': (2L, 2L), }",
            ),
            (
                1,
                "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }",
            ),
        ] {
            let t = read(&npy(v, h, &data)).unwrap_or_else(|e| panic!("{h}: {e}"));
            assert_eq!(t.element_type(), ElementType::U8);
            assert_eq!(t.data(), &data);
            assert_eq!(t.element_count(), 4);
        }
    }

    #[test]
    fn rejections_say_why() {
        let ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
        let f = [0u8; 8];
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"PK\x03\x04zipfile".to_vec(), "magic"),
            (b"\x93NUM".to_vec(), "magic"),
            (MAGIC.to_vec(), "truncated preamble"),
            (npy(4, ok, &f), "version 4.0"),
            (npy(1, ok, &f[..7]), "truncated data: 8 bytes needed, 7 present"),
            (npy(1, ok, &[0; 9]), "1 bytes after"),
            (
                npy(1, &ok.replace("<f4", ">f4"), &f),
                "big-endian dtype \">f4\"",
            ),
            (npy(1, &ok.replace("<f4", "<c8"), &f), "unsupported dtype \"<c8\""),
            (npy(1, &ok.replace("<f4", "|O"), &f), "unsupported dtype"),
            (
                npy(1, &ok.replace("False", "True"), &f),
                "fortran_order",
            ),
            (npy(1, &ok.replace("'shape': (2,), ", ""), &f), "missing key 'shape'"),
            (npy(1, &ok.replace("(2,)", "(-2,)"), &f), "dimension"),
            (npy(1, &ok.replace("(2,)", "(2,"), &f), "expected"),
            (npy(1, &ok.replace("}", ", 'x': 1}"), &f), "bad header"),
            (
                npy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", &f),
                "structured",
            ),
            (
                npy(
                    1,
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16)}",
                    &f,
                ),
                "too large",
            ),
        ];
        for (bytes, what) in cases {
            let e = read(&bytes).unwrap_err().to_string();
            assert!(e.contains(what), "{what:?} not in {e:?}");
        }
        // A header length past the end.
        let mut b = npy(1, ok, &f);
        b[8] = 0xff;
        assert!(matches!(
            read(&b),
            Err(NpyError::Truncated { what: "header", .. })
        ));
    }
}
