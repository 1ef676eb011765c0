//! A verifying, zero-copy FlatBuffers reader: just what the loadable schema needs.
//!
//! FlatBuffers layout in brief (all little-endian): the buffer starts with a
//! `u32` offset to the root table. A table starts with an `i32` *soffset*;
//! `table_pos - soffset` is its vtable, which holds `u16` vtable length, `u16`
//! table length, then one `u16` per field: the field's offset inside the
//! table, or 0 when the field is absent (the schema default applies). Fields
//! that refer to vectors, strings or sub-tables hold a `u32` offset relative
//! to the field's own position. A vector is a `u32` element count followed by
//! the elements; a string is a vector of bytes followed by a NUL.
//!
//! We verify as we go: every position is bounds-checked and every overflow is
//! checked, so hostile input yields [`FbError`], never a panic. The loadable
//! schema has no recursion, so the walk is bounded by the buffer size.
//!
//! Why not the `flatbuffers` crate: its reader links `alloc` and its verifier
//! needs generated code; the loadable reader must run heap-free on
//! microcontrollers and report errors with list/entry/field context.

/// What went wrong at the FlatBuffers level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FbError {
    /// A read at `pos` of `len` bytes falls outside the buffer.
    OutOfBounds {
        /// Byte position of the read.
        pos: usize,
        /// Bytes to read.
        len: usize,
    },
    /// A vtable is shorter than its 4-byte header or has odd length.
    BadVtable {
        /// Byte position of the vtable.
        pos: usize,
    },
    /// A string is not NUL-terminated or not UTF-8.
    BadString {
        /// Byte position of the string's length prefix.
        pos: usize,
    },
    /// A table position is not 4-byte aligned.
    Misaligned {
        /// Byte position of the object.
        pos: usize,
    },
}

impl core::fmt::Display for FbError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            FbError::OutOfBounds { pos, len } => {
                write!(f, "{len} bytes at offset {pos} are outside the buffer")
            }
            FbError::BadVtable { pos } => write!(f, "malformed vtable at offset {pos}"),
            FbError::BadString { pos } => {
                write!(f, "string at offset {pos} is not NUL-terminated UTF-8")
            }
            FbError::Misaligned { pos } => write!(f, "object at offset {pos} is misaligned"),
        }
    }
}

/// Bytes at `pos..pos+len`, checked.
fn slice(buf: &[u8], pos: usize, len: usize) -> Result<&[u8], FbError> {
    pos.checked_add(len)
        .and_then(|end| buf.get(pos..end))
        .ok_or(FbError::OutOfBounds { pos, len })
}

fn read_u16(buf: &[u8], pos: usize) -> Result<u16, FbError> {
    let b = slice(buf, pos, 2)?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

fn read_u32(buf: &[u8], pos: usize) -> Result<u32, FbError> {
    let b = slice(buf, pos, 4)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Follow the `u32` forward offset stored at `pos`.
fn follow(buf: &[u8], pos: usize) -> Result<usize, FbError> {
    let off = read_u32(buf, pos)? as usize;
    let target = pos
        .checked_add(off)
        .ok_or(FbError::OutOfBounds { pos, len: off })?;
    if target >= buf.len() {
        return Err(FbError::OutOfBounds {
            pos: target,
            len: 1,
        });
    }
    Ok(target)
}

/// A scalar that can sit in a table field or a vector.
pub trait Scalar: Copy + Default + 'static {
    /// Size in bytes.
    const SIZE: usize;
    /// Decode from exactly `SIZE` little-endian bytes.
    fn from_le(b: &[u8]) -> Self;
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            fn from_le(b: &[u8]) -> Self {
                let mut a = [0u8; core::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
scalar!(u8, i8, u16, i16, u32, i32, u64, i64);

/// A verified table header: fields can be looked up by index.
#[derive(Clone, Copy, Debug)]
pub struct Table<'a> {
    buf: &'a [u8],
    pos: usize,
    vtable: usize,
    vtable_len: u16,
    table_len: u16,
}

impl<'a> Table<'a> {
    /// The root table of a buffer.
    pub fn root(buf: &'a [u8]) -> Result<Self, FbError> {
        let pos = follow(buf, 0)?;
        Self::at(buf, pos)
    }

    /// The table at `pos`, with its vtable checked.
    pub fn at(buf: &'a [u8], pos: usize) -> Result<Self, FbError> {
        if !pos.is_multiple_of(4) {
            return Err(FbError::Misaligned { pos });
        }
        let soff = read_u32(buf, pos)? as i32 as i64;
        let vtable = pos as i64 - soff;
        if vtable < 0 || vtable as u64 > buf.len() as u64 {
            return Err(FbError::OutOfBounds {
                pos: vtable.max(0) as usize,
                len: 4,
            });
        }
        let vtable = vtable as usize;
        let vtable_len = read_u16(buf, vtable)?;
        let table_len = read_u16(buf, vtable + 2)?;
        if vtable_len < 4 || vtable_len % 2 != 0 {
            return Err(FbError::BadVtable { pos: vtable });
        }
        slice(buf, vtable, vtable_len as usize)?;
        if table_len < 4 {
            return Err(FbError::BadVtable { pos: vtable });
        }
        slice(buf, pos, table_len as usize)?;
        Ok(Self {
            buf,
            pos,
            vtable,
            vtable_len,
            table_len,
        })
    }

    /// Byte position of the table (for error context).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Absolute position of field `index`'s value, if present, checked to
    /// hold `size` bytes inside the table.
    fn field(&self, index: u16, size: usize) -> Result<Option<usize>, FbError> {
        let slot = 4 + 2 * index as usize;
        if slot + 2 > self.vtable_len as usize {
            return Ok(None);
        }
        let field_offset = read_u16(self.buf, self.vtable + slot)?;
        if field_offset == 0 {
            return Ok(None);
        }
        // The vtable's table length is not a bound on fields: flatc's C++
        // builder records a length that can stop short of an inline struct
        // placed last (seen in every regression loadable), and its verifier
        // checks fields against the buffer only. So do we.
        let _ = self.table_len;
        let p = self.pos + field_offset as usize;
        slice(self.buf, p, size)?;
        Ok(Some(p))
    }

    /// A scalar field, or `default` when absent.
    pub fn scalar<T: Scalar>(&self, index: u16, default: T) -> Result<T, FbError> {
        match self.field(index, T::SIZE)? {
            Some(p) => Ok(T::from_le(slice(self.buf, p, T::SIZE)?)),
            None => Ok(default),
        }
    }

    /// An inline struct field of `size` bytes.
    pub fn inline_struct(&self, index: u16, size: usize) -> Result<Option<&'a [u8]>, FbError> {
        match self.field(index, size)? {
            Some(p) => Ok(Some(slice(self.buf, p, size)?)),
            None => Ok(None),
        }
    }

    /// Position an offset field points to.
    fn target(&self, index: u16) -> Result<Option<usize>, FbError> {
        match self.field(index, 4)? {
            Some(p) => Ok(Some(follow(self.buf, p)?)),
            None => Ok(None),
        }
    }

    /// A string field.
    pub fn string(&self, index: u16) -> Result<Option<&'a str>, FbError> {
        match self.target(index)? {
            Some(p) => Ok(Some(string_at(self.buf, p)?)),
            None => Ok(None),
        }
    }

    /// A vector-of-scalars field (empty when absent).
    pub fn scalars<T: Scalar>(&self, index: u16) -> Result<Scalars<'a, T>, FbError> {
        match self.target(index)? {
            Some(p) => {
                let len = read_u32(self.buf, p)? as usize;
                let bytes_len = len.checked_mul(T::SIZE).ok_or(FbError::OutOfBounds {
                    pos: p,
                    len: usize::MAX,
                })?;
                let bytes = slice(self.buf, p + 4, bytes_len)?;
                Ok(Scalars {
                    bytes,
                    _t: core::marker::PhantomData,
                })
            }
            None => Ok(Scalars::empty()),
        }
    }

    /// A vector-of-bytes field (empty when absent).
    pub fn bytes(&self, index: u16) -> Result<&'a [u8], FbError> {
        Ok(self.scalars::<u8>(index)?.bytes)
    }

    /// A vector of offsets (to tables or strings): positions of the elements.
    pub fn offsets(&self, index: u16) -> Result<Offsets<'a>, FbError> {
        match self.target(index)? {
            Some(p) => {
                let len = read_u32(self.buf, p)? as usize;
                let bytes_len = len.checked_mul(4).ok_or(FbError::OutOfBounds {
                    pos: p,
                    len: usize::MAX,
                })?;
                slice(self.buf, p + 4, bytes_len)?;
                Ok(Offsets {
                    buf: self.buf,
                    start: p + 4,
                    len,
                })
            }
            None => Ok(Offsets {
                buf: self.buf,
                start: 0,
                len: 0,
            }),
        }
    }
}

/// The string at `pos` (length-prefixed, NUL-terminated, UTF-8).
fn string_at(buf: &[u8], pos: usize) -> Result<&str, FbError> {
    let len = read_u32(buf, pos)? as usize;
    let with_nul = len.checked_add(1).ok_or(FbError::BadString { pos })?;
    let bytes = slice(buf, pos + 4, with_nul)?;
    if bytes[len] != 0 {
        return Err(FbError::BadString { pos });
    }
    core::str::from_utf8(&bytes[..len]).map_err(|_| FbError::BadString { pos })
}

/// A verified vector of little-endian scalars, read lazily.
#[derive(Clone, Copy, Debug)]
pub struct Scalars<'a, T> {
    bytes: &'a [u8],
    _t: core::marker::PhantomData<T>,
}

impl<'a, T: Scalar> Scalars<'a, T> {
    /// An empty vector.
    pub fn empty() -> Self {
        Self {
            bytes: &[],
            _t: core::marker::PhantomData,
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / T::SIZE
    }
    /// Whether the vector is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Element `i`.
    pub fn get(&self, i: usize) -> Option<T> {
        let start = i.checked_mul(T::SIZE)?;
        self.bytes.get(start..start + T::SIZE).map(T::from_le)
    }
    /// Iterate over the elements.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = T> + 'a {
        self.bytes.chunks_exact(T::SIZE).map(T::from_le)
    }
}

/// A verified-length vector of offsets to tables or strings.
#[derive(Clone, Copy, Debug, Default)]
pub struct Offsets<'a> {
    buf: &'a [u8],
    start: usize,
    len: usize,
}

impl<'a> Offsets<'a> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the vector is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Element `i` as a table.
    pub fn table(&self, i: usize) -> Result<Table<'a>, FbError> {
        let p = self.element(i)?;
        Table::at(self.buf, p)
    }
    /// Element `i` as a string.
    pub fn string(&self, i: usize) -> Result<&'a str, FbError> {
        let p = self.element(i)?;
        string_at(self.buf, p)
    }
    fn element(&self, i: usize) -> Result<usize, FbError> {
        if i >= self.len {
            return Err(FbError::OutOfBounds {
                pos: self.start + 4 * i,
                len: 4,
            });
        }
        follow(self.buf, self.start + 4 * i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-assembled buffer: root table with a u16 field (index 0) = 7
    /// and a string field (index 1) = "hi".
    fn sample() -> [u8; 32] {
        let mut b = [0u8; 32];
        // root offset -> table at 12
        b[0..4].copy_from_slice(&12u32.to_le_bytes());
        // vtable at 4: len 8, table len 12, field0 @ +8, field1 @ +4
        b[4..6].copy_from_slice(&8u16.to_le_bytes());
        b[6..8].copy_from_slice(&12u16.to_le_bytes());
        b[8..10].copy_from_slice(&8u16.to_le_bytes());
        b[10..12].copy_from_slice(&4u16.to_le_bytes());
        // table at 12: soffset = 12 - 4 = 8
        b[12..16].copy_from_slice(&8i32.to_le_bytes());
        // field1 at 16: offset to string at 24 -> 8
        b[16..20].copy_from_slice(&8u32.to_le_bytes());
        // field0 at 20: u16 7
        b[20..22].copy_from_slice(&7u16.to_le_bytes());
        // string at 24: len 2, "hi\0"
        b[24..28].copy_from_slice(&2u32.to_le_bytes());
        b[28] = b'h';
        b[29] = b'i';
        b[30] = 0;
        b
    }

    #[test]
    fn reads_fields() {
        let b = sample();
        let t = Table::root(&b).unwrap();
        assert_eq!(t.scalar::<u16>(0, 0).unwrap(), 7);
        assert_eq!(t.string(1).unwrap(), Some("hi"));
        // absent field: default
        assert_eq!(t.scalar::<u32>(5, 42).unwrap(), 42);
    }

    #[test]
    fn rejects_unterminated_string() {
        let mut b = sample();
        b[30] = b'!';
        let t = Table::root(&b).unwrap();
        assert_eq!(t.string(1), Err(FbError::BadString { pos: 24 }));
    }

    #[test]
    fn rejects_field_past_buffer() {
        let mut b = sample();
        b[8..10].copy_from_slice(&30u16.to_le_bytes()); // field0 at 12+30 > 32
        let t = Table::root(&b).unwrap();
        assert!(matches!(
            t.scalar::<u16>(0, 0),
            Err(FbError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let b = sample();
        for n in 0..b.len() {
            let r = Table::root(&b[..n]).and_then(|t| {
                t.scalar::<u16>(0, 0)?;
                t.string(1)
            });
            assert!(r.is_err() || n >= 31, "len {n}");
        }
    }
}
