//! The `.dimg` image format of the upstream runtime (`NvDlaImage`).
//!
//! `nvdla_runtime` writes the output tensor of a network as `output.dimg`, and the
//! regression's md5 is taken over that file, so we must produce it byte for byte. The file is
//! a 36-byte little-endian header followed by the tensor's elements:
//!
//! | offset | size | field |
//! | ---: | ---: | --- |
//! | 0 | 4 | magic `DIMG` |
//! | 4 | 4 | version, always 0 |
//! | 8 | 4 | pixel format ([`PixelFormat`]) |
//! | 12 | 4 | width |
//! | 16 | 4 | height |
//! | 20 | 4 | channels |
//! | 24 | 4 | line stride (bytes between rows) |
//! | 28 | 4 | surface stride (bytes between channel planes or channel groups) |
//! | 32 | 4 | surface size in bytes |
//!
//! The header is upstream's `Metadata` struct written raw (host order; every platform it ran
//! on is little-endian). There are no bit-depth fields: the element size and kind follow from
//! the pixel format. The elements are not the raw surface: they are *packed*, element by
//! element in channel, row, column order, each read from its place in the strided surface
//! (for example `D_F16_CxHWx_x16_F` keeps 16 channels interleaved per pixel). Reading does the
//! reverse, scattering the elements back to a zeroed surface of `size` bytes, so padding
//! bytes of the surface are not stored.
//!
//! The pixel format number is not stable across upstream revisions: the INT8 work of April
//! 2019 (nvdla/sw commit 537e0e8) inserted `D_F8_CxHWx_x8_I` as 41 and shifted every later
//! format by one, without changing the version field. The regression's golden files were
//! made before that, so they use the older table ([`Numbering::Regression`], our default):
//! `CDP_L0_0`'s int16 output says 41, `NN_L0_0`'s fp16 output 42. The nv_small goldens say 40
//! (`D_F8_CxHWx_x32_I`) although their surfaces have the x8 geometry: the old runtime packed
//! them with the x32 rule, aliasing elements, and the md5s depend on that.
//!
//! With "stable hash" (what the runtime always uses) float elements are normalised before
//! writing; see [`DlaImage::write`] for the exact (quirky) rules.

use std::fmt::Write as _;

use thiserror::Error;

use crate::cfmt;

/// The four magic bytes a `.dimg` starts with.
pub const MAGIC: [u8; 4] = *b"DIMG";
/// The only format version upstream writes and accepts.
pub const VERSION: u32 = 0;
/// Length of the header in bytes.
pub const HEADER_LEN: usize = 36;
/// Largest surface [`DlaImage::read`] allocates (1 GiB), so a corrupt size field cannot
/// make it allocate 4 GiB. Upstream indexes the surface with 32-bit signed offsets, so no
/// valid image is above 2 GiB anyway.
pub const MAX_SURFACE_SIZE: u32 = 1 << 30;

macro_rules! pixel_formats {
    ($($name:ident = $val:literal, $cname:literal;)*) => {
        /// Pixel (element) format of an image, numbered as upstream's `PixelFormat` enum.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum PixelFormat {
            $(
                #[doc = concat!("`", $cname, "`")]
                $name = $val,
            )*
        }

        impl PixelFormat {
            /// The format with upstream number `raw`, if any.
            pub const fn from_raw(raw: u32) -> Option<Self> {
                match raw {
                    $($val => Some(Self::$name),)*
                    _ => None,
                }
            }

            /// Upstream's enumerator name (`"D_F16_CxHWx_x16_F"`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$name => $cname,)*
                }
            }
        }
    };
}

pixel_formats! {
    T_R8 = 0, "T_R8";
    T_R8_I = 1, "T_R8_I";
    T_R10 = 2, "T_R10";
    T_R12 = 3, "T_R12";
    T_R16 = 4, "T_R16";
    T_R16_I = 5, "T_R16_I";
    T_R16_F = 6, "T_R16_F";
    T_A16B16G16R16 = 7, "T_A16B16G16R16";
    T_A16B16G16R16_F = 8, "T_A16B16G16R16_F";
    T_X16B16G16R16 = 9, "T_X16B16G16R16";
    T_A16Y16U16V16 = 10, "T_A16Y16U16V16";
    T_A16Y16U16V16_F = 11, "T_A16Y16U16V16_F";
    T_V16U16Y16A16 = 12, "T_V16U16Y16A16";
    T_A8B8G8R8 = 13, "T_A8B8G8R8";
    T_A8R8G8B8 = 14, "T_A8R8G8B8";
    T_B8G8R8A8 = 15, "T_B8G8R8A8";
    T_R8G8B8A8 = 16, "T_R8G8B8A8";
    T_X8B8G8R8 = 17, "T_X8B8G8R8";
    T_X8R8G8B8 = 18, "T_X8R8G8B8";
    T_B8G8R8X8 = 19, "T_B8G8R8X8";
    T_R8G8B8X8 = 20, "T_R8G8B8X8";
    T_A2B10G10R10 = 21, "T_A2B10G10R10";
    T_A2R10G10B10 = 22, "T_A2R10G10B10";
    T_B10G10R10A2 = 23, "T_B10G10R10A2";
    T_R10G10B10A2 = 24, "T_R10G10B10A2";
    T_A2Y10U10V10 = 25, "T_A2Y10U10V10";
    T_V10U10Y10A2 = 26, "T_V10U10Y10A2";
    T_A8Y8U8V8 = 27, "T_A8Y8U8V8";
    T_V8U8Y8A8 = 28, "T_V8U8Y8A8";
    T_Y8___U8V8_N444 = 29, "T_Y8___U8V8_N444";
    T_Y8___V8U8_N444 = 30, "T_Y8___V8U8_N444";
    T_Y10___U10V10_N444 = 31, "T_Y10___U10V10_N444";
    T_Y10___V10U10_N444 = 32, "T_Y10___V10U10_N444";
    T_Y12___U12V12_N444 = 33, "T_Y12___U12V12_N444";
    T_Y12___V12U12_N444 = 34, "T_Y12___V12U12_N444";
    T_Y16___U16V16_N444 = 35, "T_Y16___U16V16_N444";
    T_Y16___V16U16_N444 = 36, "T_Y16___V16U16_N444";
    D_F8_CHW_I = 37, "D_F8_CHW_I";
    D_F16_CHW_I = 38, "D_F16_CHW_I";
    D_F16_CHW_F = 39, "D_F16_CHW_F";
    D_F8_CxHWx_x32_I = 40, "D_F8_CxHWx_x32_I";
    D_F8_CxHWx_x8_I = 41, "D_F8_CxHWx_x8_I";
    D_F16_CxHWx_x16_I = 42, "D_F16_CxHWx_x16_I";
    D_F16_CxHWx_x16_F = 43, "D_F16_CxHWx_x16_F";
    D_F32_CHW_F = 44, "D_F32_CHW_F";
    D_F32_CxHWx_x8_F = 45, "D_F32_CxHWx_x8_F";
    T_R8G8B8 = 46, "T_R8G8B8";
    T_B8G8R8 = 47, "T_B8G8R8";
}

/// Which table maps pixel formats to the numbers stored in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Numbering {
    /// The table before INT8 support (nvdla/sw before commit 537e0e8): no
    /// `D_F8_CxHWx_x8_I`, so 41 = `D_F16_CxHWx_x16_I` ... 46 = `T_B8G8R8`. Every golden file
    /// of the upstream regression uses it, so it is the default.
    #[default]
    Regression,
    /// The table of the last nvdla/sw release: 41 = `D_F8_CxHWx_x8_I` ... 47 = `T_B8G8R8`
    /// (the discriminants of [`PixelFormat`]).
    Release,
}

impl PixelFormat {
    /// The format stored as `code` under `numbering`.
    pub const fn from_code(code: u32, numbering: Numbering) -> Option<Self> {
        let release = match numbering {
            Numbering::Release => code,
            Numbering::Regression if code >= 41 && code <= 46 => code + 1,
            Numbering::Regression if code >= 47 => return None,
            Numbering::Regression => code,
        };
        Self::from_raw(release)
    }

    /// The number stored for this format under `numbering`; `None` if the table lacks it
    /// (`D_F8_CxHWx_x8_I` under [`Numbering::Regression`]).
    pub const fn code(self, numbering: Numbering) -> Option<u32> {
        let raw = self as u32;
        match numbering {
            Numbering::Release => Some(raw),
            Numbering::Regression => match raw {
                41 => None,
                42..=47 => Some(raw - 1),
                _ => Some(raw),
            },
        }
    }
}

/// How the bits of one element are interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementKind {
    /// Unsigned integer.
    Uint,
    /// Two's complement signed integer.
    Int,
    /// IEEE 754 binary16 or binary32.
    Float,
}

/// Where element (x, y, c) lives in the surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// One channel, `y * line_stride + x`.
    Single,
    /// Interleaved channels without padding: `y * ls + x * channels + c`.
    Interleaved,
    /// Four interleaved channels per pixel: `y * ls + x * 4 * bpe + c * bpe`.
    Quad,
    /// Channel groups of `n` interleaved channels, one group per surface:
    /// `(c / n) * ss + y * ls + x * n * bpe + (c % n) * bpe`.
    Grouped(u64),
    /// Planar: `c * ss + y * ls + x * bpe`.
    Planar,
}

impl PixelFormat {
    /// Bytes per element, for the formats upstream can (de)serialize; `None` otherwise.
    pub const fn bytes_per_element(self) -> Option<u8> {
        use PixelFormat::*;
        match self {
            T_R8 | T_R8_I | T_R8G8B8 | T_B8G8R8 | T_A8B8G8R8 | T_A8R8G8B8 | T_B8G8R8A8
            | T_R8G8B8A8 | T_X8B8G8R8 | T_X8R8G8B8 | T_B8G8R8X8 | T_R8G8B8X8 | D_F8_CHW_I
            | D_F8_CxHWx_x32_I | D_F8_CxHWx_x8_I => Some(1),
            T_A16B16G16R16_F | D_F16_CHW_I | D_F16_CHW_F | D_F16_CxHWx_x16_I
            | D_F16_CxHWx_x16_F => Some(2),
            D_F32_CHW_F | D_F32_CxHWx_x8_F => Some(4),
            _ => None,
        }
    }

    /// Element interpretation as upstream classifies it.
    pub const fn kind(self) -> ElementKind {
        use PixelFormat::*;
        match self {
            T_R8_I | T_R16_I | D_F8_CHW_I | D_F16_CHW_I | D_F8_CxHWx_x32_I | D_F8_CxHWx_x8_I
            | D_F16_CxHWx_x16_I => ElementKind::Int,
            T_R16_F | T_A16B16G16R16_F | T_A16Y16U16V16_F | D_F16_CHW_F | D_F32_CHW_F
            | D_F16_CxHWx_x16_F | D_F32_CxHWx_x8_F => ElementKind::Float,
            _ => ElementKind::Uint,
        }
    }

    const fn layout(self) -> Option<Layout> {
        use PixelFormat::*;
        Some(match self {
            T_R8 => Layout::Single,
            T_R8G8B8 | T_B8G8R8 => Layout::Interleaved,
            T_A8B8G8R8 | T_A16B16G16R16_F => Layout::Quad,
            D_F8_CxHWx_x32_I => Layout::Grouped(32),
            D_F8_CxHWx_x8_I | D_F32_CxHWx_x8_F => Layout::Grouped(8),
            D_F16_CxHWx_x16_I | D_F16_CxHWx_x16_F => Layout::Grouped(16),
            D_F8_CHW_I | D_F16_CHW_I | D_F16_CHW_F | D_F32_CHW_F => Layout::Planar,
            _ => return None,
        })
    }

    /// True if images of this format can be read and written (upstream has an element size
    /// and an address rule for it).
    pub const fn is_serializable(self) -> bool {
        self.bytes_per_element().is_some() && self.layout().is_some()
    }
}

/// Why a `.dimg` could not be read or an image not built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DimgError {
    /// The input ends before the header or the data it announces.
    #[error("dimg truncated: {needed} bytes needed, {got} present")]
    Truncated {
        /// Bytes the header (or header and data) require.
        needed: u64,
        /// Bytes present.
        got: usize,
    },
    /// The input does not start with `DIMG`.
    #[error("not a dimg: magic {found:02x?}, expected \"DIMG\"")]
    BadMagic {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// A version other than 0.
    #[error("dimg version {version} not supported (expected {VERSION})")]
    UnsupportedVersion {
        /// The version field.
        version: u32,
    },
    /// A pixel format number the numbering table does not define.
    #[error("unknown dimg pixel format {raw} ({numbering:?} numbering)")]
    UnknownFormat {
        /// The format field.
        raw: u32,
        /// The table used.
        numbering: Numbering,
    },
    /// A pixel format the numbering table has no number for.
    #[error("pixel format {} has no number in the {numbering:?} table", .format.name())]
    NotRepresentable {
        /// The format.
        format: PixelFormat,
        /// The table asked for.
        numbering: Numbering,
    },
    /// A pixel format upstream defines but cannot (de)serialize.
    #[error("pixel format {} cannot be serialized", .format.name())]
    UnsupportedFormat {
        /// The format.
        format: PixelFormat,
    },
    /// A single-channel format with more than one channel.
    #[error("pixel format {} has one channel, header says {channel}", .format.name())]
    TooManyChannels {
        /// The format.
        format: PixelFormat,
        /// The channel field.
        channel: u32,
    },
    /// Some element ends past the surface (or its offset overflows).
    #[error("element at byte {end_offset} overruns the {size}-byte surface")]
    ElementOutOfBounds {
        /// End of the farthest element (saturated on overflow).
        end_offset: u64,
        /// The size field.
        size: u32,
    },
    /// A surface larger than [`MAX_SURFACE_SIZE`].
    #[error("surface of {size} bytes is above the {MAX_SURFACE_SIZE}-byte limit")]
    SurfaceTooLarge {
        /// The size field.
        size: u32,
    },
    /// Bytes after the last element.
    #[error("{extra} unexpected bytes after the dimg data")]
    TrailingBytes {
        /// How many.
        extra: u64,
    },
    /// A surface buffer whose length is not the header's size.
    #[error("surface buffer is {got} bytes, header says {size}")]
    SurfaceLength {
        /// The size field.
        size: u32,
        /// The buffer length.
        got: usize,
    },
}

/// The `.dimg` header (upstream's `Metadata`), minus magic and version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DimgHeader {
    /// Element format.
    pub format: PixelFormat,
    /// Width in elements.
    pub width: u32,
    /// Height in rows.
    pub height: u32,
    /// Number of channels.
    pub channel: u32,
    /// Bytes from one row to the next.
    pub line_stride: u32,
    /// Bytes from one channel plane (or channel group) to the next.
    pub surface_stride: u32,
    /// Bytes of the whole surface.
    pub size: u32,
}

fn le32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

impl DimgHeader {
    /// Parses the 36-byte header at the start of `bytes` (magic, version and format checked;
    /// geometry not yet, see [`validate`](Self::validate)).
    pub fn parse(bytes: &[u8], numbering: Numbering) -> Result<Self, DimgError> {
        if bytes.len() < HEADER_LEN {
            return Err(DimgError::Truncated {
                needed: HEADER_LEN as u64,
                got: bytes.len(),
            });
        }
        if bytes[..4] != MAGIC {
            let mut found = [0u8; 4];
            found.copy_from_slice(&bytes[..4]);
            return Err(DimgError::BadMagic { found });
        }
        let version = le32(bytes, 4);
        if version != VERSION {
            return Err(DimgError::UnsupportedVersion { version });
        }
        let raw = le32(bytes, 8);
        let format = PixelFormat::from_code(raw, numbering)
            .ok_or(DimgError::UnknownFormat { raw, numbering })?;
        Ok(Self {
            format,
            width: le32(bytes, 12),
            height: le32(bytes, 16),
            channel: le32(bytes, 20),
            line_stride: le32(bytes, 24),
            surface_stride: le32(bytes, 28),
            size: le32(bytes, 32),
        })
    }

    /// The 36 header bytes; `NotRepresentable` if `numbering` has no number for the format.
    pub fn to_bytes(&self, numbering: Numbering) -> Result<[u8; HEADER_LEN], DimgError> {
        let code = self
            .format
            .code(numbering)
            .ok_or(DimgError::NotRepresentable {
                format: self.format,
                numbering,
            })?;
        let mut out = [0u8; HEADER_LEN];
        let fields = [
            u32::from_le_bytes(MAGIC),
            VERSION,
            code,
            self.width,
            self.height,
            self.channel,
            self.line_stride,
            self.surface_stride,
            self.size,
        ];
        for (chunk, v) in out.chunks_exact_mut(4).zip(fields) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        Ok(out)
    }

    /// Number of elements (width × height × channels).
    pub fn element_count(&self) -> u64 {
        // u32^3 < 2^96: compute wide, saturate (such an image cannot exist anyway).
        let n = u128::from(self.width) * u128::from(self.height) * u128::from(self.channel);
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    fn bpe(&self) -> Result<u64, DimgError> {
        match (self.format.bytes_per_element(), self.format.layout()) {
            (Some(b), Some(_)) => Ok(u64::from(b)),
            _ => Err(DimgError::UnsupportedFormat {
                format: self.format,
            }),
        }
    }

    /// Byte offset of element (x, y, c) by upstream's address rule, without bounds checks;
    /// `None` on arithmetic overflow or for a format without a rule.
    fn raw_offset(&self, x: u32, y: u32, c: u32) -> Option<u64> {
        let bpe = u64::from(self.format.bytes_per_element()?);
        let (x, y, c) = (u64::from(x), u64::from(y), u64::from(c));
        let ls = u64::from(self.line_stride);
        let ss = u64::from(self.surface_stride);
        let row = y.checked_mul(ls)?;
        let rest = match self.format.layout()? {
            Layout::Single => x.checked_mul(bpe)?,
            Layout::Interleaved => x.checked_mul(u64::from(self.channel))?.checked_add(c)?,
            Layout::Quad => x.checked_mul(4 * bpe)?.checked_add(c * bpe)?,
            Layout::Grouped(n) => (c / n)
                .checked_mul(ss)?
                .checked_add(x.checked_mul(n * bpe)?)?
                .checked_add((c % n) * bpe)?,
            Layout::Planar => c.checked_mul(ss)?.checked_add(x.checked_mul(bpe)?)?,
        };
        // T_R8 multiplies the whole offset by bpe, which is 1.
        row.checked_add(rest)
    }

    /// Checks that upstream could serialize an image with this header: a serializable
    /// format, at most one channel for `T_R8`, and every element inside the surface.
    pub fn validate(&self) -> Result<(), DimgError> {
        let bpe = self.bpe()?;
        if self.element_count() == 0 {
            return Ok(());
        }
        if self.format.layout() == Some(Layout::Single) && self.channel > 1 {
            return Err(DimgError::TooManyChannels {
                format: self.format,
                channel: self.channel,
            });
        }
        // Offsets grow with x and y; in c they grow except across channel groups, where
        // the last channel of the previous group may lie farther than the last channel.
        let (w, h, c) = (self.width - 1, self.height - 1, self.channel - 1);
        let mut candidates = [Some(c), None];
        if let Some(Layout::Grouped(n)) = self.format.layout() {
            let group_start = (u64::from(c) / n) * n;
            if group_start > 0 {
                candidates[1] = u32::try_from(group_start - 1).ok();
            }
        }
        for cc in candidates.into_iter().flatten() {
            let end = self.raw_offset(w, h, cc).and_then(|o| o.checked_add(bpe));
            match end {
                Some(end) if end <= u64::from(self.size) => {}
                _ => {
                    return Err(DimgError::ElementOutOfBounds {
                        end_offset: end.unwrap_or(u64::MAX),
                        size: self.size,
                    })
                }
            }
        }
        Ok(())
    }
}

/// An image: header plus its strided surface of `header.size` bytes.
///
/// Invariant (checked by every constructor): the header passes [`DimgHeader::validate`],
/// its format has a number in the image's [`Numbering`], and the surface is exactly `size`
/// bytes, so every element lies inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DlaImage {
    header: DimgHeader,
    numbering: Numbering,
    header_bytes: [u8; HEADER_LEN],
    surface: Vec<u8>,
}

/// Iterates (x, y, c) in the packed order: channel, then row, then column.
fn packed_order(h: &DimgHeader) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
    // An image without elements (a zero dimension) yields nothing, however large the
    // other dimensions are: a 0 x 2^30 x 2^30 header must not cost 2^60 steps.
    let channels = if h.element_count() == 0 { 0 } else { h.channel };
    (0..channels)
        .flat_map(move |c| (0..h.height).flat_map(move |y| (0..h.width).map(move |x| (x, y, c))))
}

impl DlaImage {
    /// An image over an existing surface, numbered as the regression goldens.
    pub fn new(header: DimgHeader, surface: Vec<u8>) -> Result<Self, DimgError> {
        Self::new_with(header, surface, Numbering::default())
    }

    /// An image over an existing surface, written with `numbering`.
    pub fn new_with(
        header: DimgHeader,
        surface: Vec<u8>,
        numbering: Numbering,
    ) -> Result<Self, DimgError> {
        header.validate()?;
        let header_bytes = header.to_bytes(numbering)?;
        if surface.len() != header.size as usize {
            return Err(DimgError::SurfaceLength {
                size: header.size,
                got: surface.len(),
            });
        }
        Ok(Self {
            header,
            numbering,
            header_bytes,
            surface,
        })
    }

    /// An image with a zero-filled surface, numbered as the regression goldens.
    pub fn zeroed(header: DimgHeader) -> Result<Self, DimgError> {
        Self::zeroed_with(header, Numbering::default())
    }

    /// An image with a zero-filled surface, written with `numbering`.
    pub fn zeroed_with(header: DimgHeader, numbering: Numbering) -> Result<Self, DimgError> {
        header.validate()?;
        if header.size > MAX_SURFACE_SIZE {
            return Err(DimgError::SurfaceTooLarge { size: header.size });
        }
        Self::new_with(header, vec![0; header.size as usize], numbering)
    }

    /// Parses a `.dimg` file numbered as the regression goldens ([`Numbering::Regression`]).
    pub fn read(bytes: &[u8]) -> Result<Self, DimgError> {
        Self::read_with(bytes, Numbering::default())
    }

    /// Parses a `.dimg` file. Everything is checked before the surface is allocated: magic,
    /// version, format, geometry against the surface size, the size limit, and that the
    /// input holds exactly the announced elements. Never panics.
    pub fn read_with(bytes: &[u8], numbering: Numbering) -> Result<Self, DimgError> {
        let header = DimgHeader::parse(bytes, numbering)?;
        let bpe = header.bpe()?;
        header.validate()?;
        if header.size > MAX_SURFACE_SIZE {
            return Err(DimgError::SurfaceTooLarge { size: header.size });
        }
        let needed = header
            .element_count()
            .checked_mul(bpe)
            .and_then(|d| d.checked_add(HEADER_LEN as u64))
            .unwrap_or(u64::MAX);
        let got = bytes.len() as u64;
        if got < needed {
            return Err(DimgError::Truncated {
                needed,
                got: bytes.len(),
            });
        }
        if got > needed {
            return Err(DimgError::TrailingBytes {
                extra: got - needed,
            });
        }
        let mut image = Self::zeroed_with(header, numbering)?;
        let bpe = bpe as usize;
        let data = &bytes[HEADER_LEN..];
        for (i, (x, y, c)) in packed_order(&header).enumerate() {
            let off = image.offset(x, y, c);
            image.surface[off..off + bpe].copy_from_slice(&data[i * bpe..(i + 1) * bpe]);
        }
        Ok(image)
    }

    /// The header.
    pub fn header(&self) -> &DimgHeader {
        &self.header
    }

    /// The format numbering [`write`](Self::write) uses.
    pub fn numbering(&self) -> Numbering {
        self.numbering
    }

    /// The surface bytes (strided, `size` long).
    pub fn surface(&self) -> &[u8] {
        &self.surface
    }

    /// Mutable surface bytes.
    pub fn surface_mut(&mut self) -> &mut [u8] {
        &mut self.surface
    }

    /// Consumes the image, returning the surface.
    pub fn into_surface(self) -> Vec<u8> {
        self.surface
    }

    fn bpe(&self) -> usize {
        usize::from(self.header.format.bytes_per_element().unwrap_or(1))
    }

    /// Offset of an element known to exist (the invariant makes it fit).
    fn offset(&self, x: u32, y: u32, c: u32) -> usize {
        self.header.raw_offset(x, y, c).unwrap_or(0) as usize
    }

    /// The bytes of element (x, y, c); `None` outside the image.
    pub fn element(&self, x: u32, y: u32, c: u32) -> Option<&[u8]> {
        let h = &self.header;
        if x >= h.width || y >= h.height || c >= h.channel {
            return None;
        }
        let off = self.offset(x, y, c);
        self.surface.get(off..off + self.bpe())
    }

    /// The value of element (x, y, c) as a number (integers as they are, fp16/fp32
    /// converted); `None` outside the image or for an element size without a numeric
    /// reading.
    pub fn value(&self, x: u32, y: u32, c: u32) -> Option<f64> {
        let e = self.element(x, y, c)?;
        Some(match (self.header.format.kind(), e.len()) {
            (ElementKind::Float, 2) => {
                f64::from(crate::fp16::f16_to_f32(u16::from_le_bytes([e[0], e[1]])))
            }
            (ElementKind::Float, 4) => f64::from(f32::from_le_bytes([e[0], e[1], e[2], e[3]])),
            (ElementKind::Int, 1) => f64::from(e[0] as i8),
            (ElementKind::Int, 2) => f64::from(i16::from_le_bytes([e[0], e[1]])),
            (ElementKind::Uint, 1) => f64::from(e[0]),
            (ElementKind::Uint, 2) => f64::from(u16::from_le_bytes([e[0], e[1]])),
            _ => return None,
        })
    }

    /// Mutable bytes of element (x, y, c); `None` outside the image.
    pub fn element_mut(&mut self, x: u32, y: u32, c: u32) -> Option<&mut [u8]> {
        let h = &self.header;
        if x >= h.width || y >= h.height || c >= h.channel {
            return None;
        }
        let off = self.offset(x, y, c);
        let bpe = self.bpe();
        self.surface.get_mut(off..off + bpe)
    }

    /// Element bytes in packed order, normalised when `stable` (see [`write`](Self::write)).
    fn packed_elements(&self, stable: bool) -> impl Iterator<Item = [u8; 4]> + '_ {
        let bpe = self.bpe();
        let float = self.header.format.kind() == ElementKind::Float;
        packed_order(&self.header).map(move |(x, y, c)| {
            let off = self.offset(x, y, c);
            let mut e = [0u8; 4];
            e[..bpe].copy_from_slice(&self.surface[off..off + bpe]);
            if stable && float {
                stabilize(&mut e, bpe);
            }
            e
        })
    }

    /// Serializes as `nvdla_runtime` writes `output.dimg` (stable hash on).
    ///
    /// Stable hashing is meant to make float outputs compare equal across runs by mapping
    /// negative zero to zero and every NaN to one value. Upstream compares and assigns
    /// integer literals to the float, which converts them as numbers, not bit patterns; we
    /// reproduce what it actually does, since the golden md5s depend on it:
    /// - fp16: the value 32768.0 (bits 0x7800) becomes +0.0; any NaN becomes 31744.0
    ///   (bits 0x77c0); negative zero stays.
    /// - fp32: the value 2147483648.0 becomes +0.0; any NaN becomes 2143289344.0
    ///   (bits 0x4eff8000); negative zero stays.
    ///
    /// Integer elements are copied unchanged.
    pub fn write(&self) -> Vec<u8> {
        self.write_with(true)
    }

    /// Serializes, with or without stable hashing (see [`write`](Self::write)).
    pub fn write_with(&self, stable_hash: bool) -> Vec<u8> {
        let bpe = self.bpe();
        let n = self.header.element_count() as usize;
        let mut out = Vec::with_capacity(HEADER_LEN + n * bpe);
        out.extend_from_slice(&self.header_bytes);
        for e in self.packed_elements(stable_hash) {
            out.extend_from_slice(&e[..bpe]);
        }
        out
    }

    /// The text `nvdla_runtime --rawdump` writes instead of the `.dimg`: every element in
    /// packed order, stable-hashed, printed as a decimal number (floats as C's `%g`)
    /// followed by one space. No header, no newline.
    pub fn raw_dump(&self) -> String {
        let bpe = self.bpe();
        let kind = self.header.format.kind();
        let mut s = String::new();
        for e in self.packed_elements(true) {
            let _ = match (kind, bpe) {
                (ElementKind::Float, 2) => {
                    let v = f16_to_f64(u16::from_le_bytes([e[0], e[1]]));
                    write!(s, "{} ", cfmt::fmt_g(v))
                }
                (ElementKind::Float, _) => {
                    let v = f32::from_le_bytes(e);
                    write!(s, "{} ", cfmt::fmt_g(f64::from(v)))
                }
                (ElementKind::Int, 1) => write!(s, "{} ", e[0] as i8),
                (ElementKind::Int, _) => write!(s, "{} ", i16::from_le_bytes([e[0], e[1]])),
                (ElementKind::Uint, 1) => write!(s, "{} ", e[0]),
                (ElementKind::Uint, _) => write!(s, "{} ", u16::from_le_bytes([e[0], e[1]])),
            };
        }
        s
    }

    /// Upstream's `printBuffer` debug view: one text line per row, channel after channel,
    /// floats as `%6.3f,` padded to 8 columns, integers as `%4d`; with `borders`, each
    /// channel is framed by `-` lines and rows by `|`.
    pub fn print_buffer(&self, borders: bool) -> String {
        let bpe = self.bpe();
        let kind = self.header.format.kind();
        let h = &self.header;
        // Border width per element: upstream uses 8 for fp16 and 2 * bpe otherwise, which is
        // also 8 for fp32.
        let chars_per_element = if kind == ElementKind::Float {
            8
        } else {
            2 * bpe
        };
        let rule = |s: &mut String| {
            s.push(' ');
            for _ in 0..(h.width as usize).saturating_mul(chars_per_element) {
                s.push('-');
            }
            s.push('\n');
        };
        let mut s = String::new();
        if h.element_count() == 0 {
            // Nothing to show (and rows of nothing could be 2^32 lines).
            return s;
        }
        for c in 0..h.channel {
            if borders {
                rule(&mut s);
            }
            for y in 0..h.height {
                if borders {
                    s.push('|');
                }
                for x in 0..h.width {
                    let off = self.offset(x, y, c);
                    let e = &self.surface[off..off + bpe];
                    let _ = match (kind, bpe) {
                        (ElementKind::Float, _) => {
                            let v = if bpe == 2 {
                                f16_to_f64(u16::from_le_bytes([e[0], e[1]]))
                            } else {
                                f64::from(f32::from_le_bytes([e[0], e[1], e[2], e[3]]))
                            };
                            write!(s, "{:<8}", format!("{},", cfmt::fmt_f6_3(v)))
                        }
                        (ElementKind::Int, 1) => write!(s, "{:4} ", e[0] as i8),
                        (ElementKind::Int, _) => {
                            write!(s, "{:4}", i16::from_le_bytes([e[0], e[1]]))
                        }
                        (ElementKind::Uint, 1) => write!(s, "{:4}", e[0]),
                        (ElementKind::Uint, _) => {
                            write!(s, "{:4}", u16::from_le_bytes([e[0], e[1]]))
                        }
                    };
                }
                if borders {
                    s.push('|');
                }
                s.push('\n');
            }
            if borders {
                rule(&mut s);
            }
        }
        s
    }
}

/// Upstream's stable-hash normalisation of one float element (see [`DlaImage::write`]).
fn stabilize(e: &mut [u8; 4], bpe: usize) {
    if bpe == 2 {
        let bits = u16::from_le_bytes([e[0], e[1]]);
        let out = if bits == 0x7800 {
            0x0000 // 32768.0 == (int)0x8000
        } else if bits & 0x7c00 == 0x7c00 && bits & 0x03ff != 0 {
            0x77c0 // half(31744.0), the number 0x7C00
        } else {
            bits
        };
        e[..2].copy_from_slice(&out.to_le_bytes());
    } else {
        let v = f32::from_le_bytes(*e);
        let out = if v == 2_147_483_648.0 {
            0.0 // == (int)0x80000000 as a number
        } else if v.is_nan() {
            2_143_289_344.0 // (float)0x7FBFFFFF, rounded to float
        } else {
            v
        };
        *e = out.to_le_bytes();
    }
}

/// Exact binary16 → f64.
fn f16_to_f64(bits: u16) -> f64 {
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    let mag = match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    };
    // Negation sets the sign bit even of NaN and zero (C prints "-nan", "-0").
    if bits & 0x8000 != 0 {
        -mag
    } else {
        mag
    }
}

#[cfg(test)]
mod tests;
