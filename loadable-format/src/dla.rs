//! DLA1 descriptors: the packed C structures of `dla_interface.h`.
//!
//! A DLA1 task in a loadable does not carry its hardware programming inline.
//! Instead the compiler emits a handful of blobs, each a plain array of
//! little-endian C structures, and the task's address list points at them.
//! The firmware (and anything that inspects a loadable) reads them back by
//! index:
//!
//! | Blob (address-list slot)             | Element                        | Stride                           |
//! |--------------------------------------|--------------------------------|----------------------------------|
//! | network descriptor (slot 0)          | [`NetworkDesc`]                | one 40-byte record               |
//! | dependency graph (`dependency_graph_index`) | [`CommonOpDesc`]        | 36 bytes ([`CommonOpDesc::SIZE`]) |
//! | operation list (`operation_desc_index`) | one of the [`OpDesc`] variants | [`OPERATION_CONTAINER_SIZE`] (116) |
//! | surface list (`surface_desc_index`)  | one of the [`SurfaceDesc`] variants | [`SURFACE_CONTAINER_SIZE`] (644) |
//! | LUT list (`lut_data_index`)          | [`LutParam`] (at least one, even if unused) | 700 bytes ([`LutParam::SIZE`]) |
//! | statistics (`stat_list_index`)       | one of the [`StatDesc`] variants | [`STAT_CONTAINER_SIZE`] (44)   |
//! | ROI array (`roi_array_index`)        | [`RoiArrayDesc`] then [`RoiDesc`]s | 8-byte header, 16-byte entries |
//!
//! The operation, surface and statistics lists hold C *unions*: every slot
//! is as large as the biggest per-processor variant, and the variant that
//! lives in a slot is chosen by the `op_type` of the matching
//! [`CommonOpDesc`] in the dependency graph. With several ROIs, the lists
//! repeat per ROI: the element for operation `i` of ROI `r` sits at flat
//! index `r * num_operations + i`.
//!
//! Every structure in the header is declared `packed, aligned(4)`: fields
//! follow each other without padding, and the total size is rounded up to a
//! multiple of four. The field lists happen to add up to multiples of four
//! already, so none of the DLA1 structures has any padding at all and
//! decoding then encoding reproduces the input byte for byte. All numeric
//! fields are kept raw (including reserved ones); fields that hold one of the
//! header's `#define` families also have an accessor that returns a typed
//! enum, or [`InvalidValue`] for an undefined number.
//!
//! # Two revisions
//!
//! Blobs written for firmware interface 0.10/0.11 (before April 2019, e.g.
//! NVIDIA's regression flatbuffers) use 28-byte data cubes without the
//! `offset` field, which shifts every field of the surface descriptors that
//! embed cubes. Nothing else changed, container strides included. Pick the
//! revision from the blob's version with [`Layout::for_version`] and decode
//! surfaces with [`SurfaceDesc::decode_layout`]/[`SurfaceDesc::decode_slot_layout`],
//! which convert [`legacy`] records into the current types.

use crate::codec::{ByteReader, ByteWriter, DecodeError, Descriptor, EncodeError};

// ---------------------------------------------------------------------------
// Field codec plumbing shared with `emu`.
// ---------------------------------------------------------------------------

/// One field of a packed descriptor: a fixed number of bytes read and written
/// in place, in C declaration order.
pub(crate) trait Field: Sized {
    /// Bytes the field occupies in the packed layout.
    const LEN: usize;
    /// The in-memory representation is the packed little-endian one: `size_of` is
    /// [`Field::LEN`], every bit pattern is a valid value, and (for structs) the fields
    /// sit at their packed offsets. Such fields are decoded by one copy
    /// (`zerocopy::transmute!`) instead of field by field.
    const PLAIN: bool = false;
    /// Read the field at the reader's position.
    fn read(r: &mut ByteReader<'_>) -> Self;
    /// Write the field at the writer's position.
    fn write(&self, w: &mut ByteWriter<'_>);
}

macro_rules! scalar_field {
    ($($ty:ty => $method:ident),* $(,)?) => {$(
        impl Field for $ty {
            const LEN: usize = core::mem::size_of::<$ty>();
            const PLAIN: bool = cfg!(target_endian = "little");
            fn read(r: &mut ByteReader<'_>) -> Self {
                r.$method()
            }
            fn write(&self, w: &mut ByteWriter<'_>) {
                w.$method(*self);
            }
        }
    )*};
}

scalar_field!(
    u8 => u8,
    i8 => i8,
    u16 => u16,
    i16 => i16,
    u32 => u32,
    i32 => i32,
    u64 => u64,
    i64 => i64,
    f32 => f32,
);

impl<T: Field + Copy + Default, const N: usize> Field for [T; N] {
    const LEN: usize = T::LEN * N;
    const PLAIN: bool = T::PLAIN;
    fn read(r: &mut ByteReader<'_>) -> Self {
        let mut out = [T::default(); N];
        for slot in out.iter_mut() {
            *slot = T::read(r);
        }
        out
    }
    fn write(&self, w: &mut ByteWriter<'_>) {
        for item in self {
            item.write(w);
        }
    }
}

/// Declares a descriptor struct whose fields are laid out back to back in
/// declaration order, followed by zero padding up to the stated C size.
///
/// Generates the struct, its [`Descriptor`] impl and its [`Field`] impl (so
/// it can be nested), plus a compile-time check that the fields fit.
macro_rules! descriptor {
    (
        $(#[$meta:meta])*
        pub struct $name:ident = $cname:literal, size $size:literal {
            $( $(#[$fmeta:meta])* pub $field:ident: $ty:ty, )*
        }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(zerocopy::FromBytes, zerocopy::KnownLayout, zerocopy::Immutable)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            /// Bytes covered by the declared fields (the rest is padding).
            const FIELD_BYTES: usize = 0 $( + <$ty as $crate::dla::Field>::LEN )*;

            /// Every field is plain and at its packed offset (`#[repr(C)]` adds no
            /// padding between them): the first `FIELD_BYTES` bytes of the value are
            /// the packed layout, so decoding is one copy.
            const PLAIN_FIELDS: bool = {
                #[allow(unused_mut)]
                let mut ok = true;
                #[allow(unused_mut)]
                let mut off = 0usize;
                $(
                    ok = ok
                        && <$ty as $crate::dla::Field>::PLAIN
                        && core::mem::offset_of!($name, $field) == off;
                    off += <$ty as $crate::dla::Field>::LEN;
                )*
                ok && off == Self::FIELD_BYTES
                    && core::mem::size_of::<$name>() >= Self::FIELD_BYTES
            };
        }

        const _: () = assert!($name::FIELD_BYTES <= $size, "fields exceed the C size");

        impl $crate::codec::Descriptor for $name {
            const NAME: &'static str = $cname;
            const SIZE: usize = $size;

            fn decode(r: &mut $crate::codec::ByteReader<'_>) -> Self {
                let value = Self {
                    $( $field: <$ty as $crate::dla::Field>::read(r), )*
                };
                r.skip($size - Self::FIELD_BYTES);
                value
            }

            fn decode_from(
                bytes: &[u8],
            ) -> Result<Self, $crate::codec::DecodeError> {
                match bytes.get(..$size) {
                    // The packed layout is the in-memory one: one copy (any bytes
                    // are a valid value; those past the fields land in padding).
                    Some(window) if Self::PLAIN_FIELDS => {
                        // `PLAIN_FIELDS`: the first `FIELD_BYTES` bytes of the value are
                        // the packed layout and the rest is padding, so any bytes make a
                        // valid value. `#[repr(C)]` may round the struct up past the C
                        // size (a `u64` field aligns it to 8); that tail is zeroed.
                        // (`n` is `FIELD_BYTES` here; the `min` keeps the branch
                        // well-formed for the descriptors that never take it.)
                        let n = Self::FIELD_BYTES.min(core::mem::size_of::<Self>());
                        let mut raw = [0u8; core::mem::size_of::<Self>()];
                        raw[..n].copy_from_slice(&window[..n]);
                        Ok(zerocopy::transmute!(raw))
                    }
                    Some(window) => {
                        let mut r = $crate::codec::ByteReader::new(window);
                        Ok(<Self as $crate::codec::Descriptor>::decode(&mut r))
                    }
                    None => Err($crate::codec::DecodeError {
                        descriptor: $cname,
                        needed: $size,
                        available: bytes.len(),
                    }),
                }
            }

            fn encode(&self, w: &mut $crate::codec::ByteWriter<'_>) {
                $( $crate::dla::Field::write(&self.$field, w); )*
                w.zeros($size - Self::FIELD_BYTES);
            }
        }

        impl $crate::dla::Field for $name {
            const LEN: usize = $size;
            const PLAIN: bool =
                Self::PLAIN_FIELDS && core::mem::size_of::<$name>() == $size;
            fn read(r: &mut $crate::codec::ByteReader<'_>) -> Self {
                <Self as $crate::codec::Descriptor>::decode(r)
            }
            fn write(&self, w: &mut $crate::codec::ByteWriter<'_>) {
                <Self as $crate::codec::Descriptor>::encode(self, w)
            }
        }
    };
}
pub(crate) use descriptor;

// ---------------------------------------------------------------------------
// Typed values.
// ---------------------------------------------------------------------------

/// A descriptor field holds a number that its `#define` family does not name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidValue {
    /// The field (`struct.field` in C names) or, for a bare conversion, the
    /// kind of value.
    pub field: &'static str,
    /// The raw number found.
    pub value: u32,
}

impl InvalidValue {
    /// The same error, attributed to `field`.
    pub fn in_field(self, field: &'static str) -> Self {
        Self { field, ..self }
    }
}

impl core::fmt::Display for InvalidValue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "invalid value {} for {}", self.value, self.field)
    }
}

/// Declares a `u8`-backed enum for one `#define` family, with `TryFrom<u8>`,
/// `From<Enum> for u8` and a `from_raw` for wider fields.
macro_rules! raw_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident = $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum $name {
            $( $(#[$vmeta])* $variant = $value, )*
        }

        impl $name {
            /// Every value, in numeric order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),*];

            /// The value named by `raw`, from a field of any width.
            pub fn from_raw(raw: u32) -> Result<Self, $crate::dla::InvalidValue> {
                match raw {
                    $( $value => Ok(Self::$variant), )*
                    _ => Err($crate::dla::InvalidValue { field: $what, value: raw }),
                }
            }

            /// The number stored in descriptors.
            pub fn raw(self) -> u8 {
                self as u8
            }
        }

        impl TryFrom<u8> for $name {
            type Error = $crate::dla::InvalidValue;
            fn try_from(raw: u8) -> Result<Self, Self::Error> {
                Self::from_raw(u32::from(raw))
            }
        }

        impl From<$name> for u8 {
            fn from(v: $name) -> u8 {
                v as u8
            }
        }
    };
}
pub(crate) use raw_enum;

/// Generates typed accessors `fn name(&self) -> Result<Enum, InvalidValue>`
/// over raw numeric fields.
macro_rules! typed_accessors {
    ($ty:ident = $cname:literal { $( $method:ident => $field:ident as $enum:ident, )* }) => {
        impl $ty {
            $(
                #[doc = concat!("`", stringify!($field), "` as a [`", stringify!($enum), "`].")]
                pub fn $method(&self) -> Result<$enum, InvalidValue> {
                    $enum::from_raw(u32::from(self.$field))
                        .map_err(|e| e.in_field(concat!($cname, ".", stringify!($field))))
                }
            )*
        }
    };
}

raw_enum! {
    /// The processor an operation runs on (`DLA_OP_*`).
    pub enum OpType = "dla op type" {
        /// Bridge DMA: memory-to-memory copies.
        Bdma = 0,
        /// Convolution pipeline (CDMA, CSC, CMAC, CACC).
        Conv = 1,
        /// Single data point processor (bias, batch norm, activation, ...).
        Sdp = 2,
        /// Planar data processor (pooling).
        Pdp = 3,
        /// Channel data processor (local response normalisation).
        Cdp = 4,
        /// Data reshape engine.
        Rubik = 5,
    }
}

impl OpType {
    /// Position of this processor in per-processor arrays such as
    /// [`NetworkDesc::op_head`] and [`CommonOpDesc::consumers`].
    pub fn index(self) -> usize {
        usize::from(self.raw())
    }
}

raw_enum! {
    /// Where a surface lives (`DLA_MEM_*`).
    pub enum MemType = "dla memory type" {
        /// External DRAM through the memory controller.
        Mc = 0,
        /// On-chip CV-SRAM.
        Cv = 1,
        /// Another DLA sub-module (on-the-fly connection, no memory).
        Hw = 2,
    }
}

raw_enum! {
    /// Event a consumer waits for (`DLA_EVENT_*`).
    pub enum Event = "dla event" {
        /// The producer operation finished.
        OpCompleted = 1,
        /// The producer operation's registers were programmed.
        OpProgrammed = 2,
        /// The producer operation was enabled.
        OpEnabled = 3,
        /// The convolution DMA finished fetching weights.
        CdmaWtDone = 4,
        /// The convolution DMA finished fetching input data.
        CdmaDtDone = 5,
    }
}

raw_enum! {
    /// Convolution algorithm (`CONV_MODE_*`).
    pub enum ConvMode = "convolution mode" {
        /// Direct convolution.
        Direct = 0,
        /// Winograd convolution.
        Winograd = 1,
    }
}

raw_enum! {
    /// Arithmetic precision (`PRECISION_*`).
    pub enum Precision = "precision" {
        /// 8-bit integer.
        Int8 = 0,
        /// 16-bit integer.
        Int16 = 1,
        /// IEEE half precision.
        Fp16 = 2,
    }
}

impl Precision {
    /// Bytes per element (`BPE_PRECISION_*`).
    pub fn bytes_per_element(self) -> u32 {
        match self {
            Precision::Int8 => 1,
            Precision::Int16 | Precision::Fp16 => 2,
        }
    }
}

raw_enum! {
    /// Input data / pixel format of a convolution (`FORMAT_T_*`, `FORMAT_FEATURE`).
    ///
    /// Every value except [`DataFormat::Feature`] is an image (pixel) format
    /// for the first layer; the `N444` ones are semi-planar YUV.
    pub enum DataFormat = "data format" {
        /// `R8`.
        R8 = 0,
        /// `R10`.
        R10 = 1,
        /// `R12`.
        R12 = 2,
        /// `R16`.
        R16 = 3,
        /// `R16_I` (signed).
        R16I = 4,
        /// `R16_F` (half float).
        R16F = 5,
        /// `A16B16G16R16`.
        A16B16G16R16 = 6,
        /// `X16B16G16R16`.
        X16B16G16R16 = 7,
        /// `A16B16G16R16_F`.
        A16B16G16R16F = 8,
        /// `A16Y16U16V16`.
        A16Y16U16V16 = 9,
        /// `V16U16Y16A16`.
        V16U16Y16A16 = 10,
        /// `A16Y16U16V16_F`.
        A16Y16U16V16F = 11,
        /// `A8B8G8R8`.
        A8B8G8R8 = 12,
        /// `A8R8G8B8`.
        A8R8G8B8 = 13,
        /// `B8G8R8A8`.
        B8G8R8A8 = 14,
        /// `R8G8B8A8`.
        R8G8B8A8 = 15,
        /// `X8B8G8R8`.
        X8B8G8R8 = 16,
        /// `X8R8G8B8`.
        X8R8G8B8 = 17,
        /// `B8G8R8X8`.
        B8G8R8X8 = 18,
        /// `R8G8B8X8`.
        R8G8B8X8 = 19,
        /// `A2B10G10R10`.
        A2B10G10R10 = 20,
        /// `A2R10G10B10`.
        A2R10G10B10 = 21,
        /// `B10G10R10A2`.
        B10G10R10A2 = 22,
        /// `R10G10B10A2`.
        R10G10B10A2 = 23,
        /// `A2Y10U10V10`.
        A2Y10U10V10 = 24,
        /// `V10U10Y10A2`.
        V10U10Y10A2 = 25,
        /// `A8Y8U8V8`.
        A8Y8U8V8 = 26,
        /// `V8U8Y8A8`.
        V8U8Y8A8 = 27,
        /// `Y8___U8V8_N444` (semi-planar).
        Y8U8V8N444 = 28,
        /// `Y8___V8U8_N444` (semi-planar).
        Y8V8U8N444 = 29,
        /// `Y10___U10V10_N444` (semi-planar).
        Y10U10V10N444 = 30,
        /// `Y10___V10U10_N444` (semi-planar).
        Y10V10U10N444 = 31,
        /// `Y12___U12V12_N444` (semi-planar).
        Y12U12V12N444 = 32,
        /// `Y12___V12U12_N444` (semi-planar).
        Y12V12U12N444 = 33,
        /// `Y16___U16V16_N444` (semi-planar).
        Y16U16V16N444 = 34,
        /// `Y16___V16U16_N444` (semi-planar).
        Y16V16U16N444 = 35,
        /// Feature data (any layer but an image input layer).
        Feature = 36,
    }
}

impl DataFormat {
    /// Whether this is an image (pixel) format rather than feature data.
    pub fn is_pixel(self) -> bool {
        self != DataFormat::Feature
    }
}

raw_enum! {
    /// Memory mapping of image input (`MAP_*`).
    pub enum PixelMapping = "pixel mapping" {
        /// Pitch-linear.
        PitchLinear = 0,
    }
}

raw_enum! {
    /// Weight storage (`WEIGHT_FORMAT_*`).
    pub enum WeightFormat = "weight format" {
        /// Plain weights.
        Uncompressed = 0,
        /// Sparse-compressed weights (with WMB/WGS side data).
        Compressed = 1,
    }
}

raw_enum! {
    /// Mean subtraction for image input (`MEAN_FORMAT_*`).
    pub enum MeanFormat = "mean format" {
        /// No mean subtraction.
        Disable = 0,
        /// Subtract the `mean_*` values.
        Enable = 1,
    }
}

raw_enum! {
    /// SDP activation function (`ACTIVATION_*`).
    pub enum Activation = "activation" {
        /// No activation.
        None = 0,
        /// Rectified linear unit.
        Relu = 1,
        /// Look-up table.
        Lut = 2,
        /// Parametric ReLU.
        Prelu = 3,
    }
}

raw_enum! {
    /// Which of the two LUT tables (`LUT_LINEAR_EXP_TABLE`, `LUT_LINEAR_ONLY_TABLE`).
    pub enum LutTable = "lut table" {
        /// The 65-entry table that can be indexed linearly or exponentially.
        LinearExp = 0,
        /// The 257-entry linear table.
        LinearOnly = 1,
    }
}

raw_enum! {
    /// How the first LUT table is indexed (`LUT_METHOD_*`).
    pub enum LutMethod = "lut method" {
        /// Exponential (log-domain) indexing.
        Exponential = 0,
        /// Linear indexing.
        Linear = 1,
    }
}

raw_enum! {
    /// Which LUT table wins when both apply (`LUT_PRI_*`).
    pub enum LutPriority = "lut priority" {
        /// Prefer the linear/exponential table.
        LinearExp = 0,
        /// Prefer the linear-only table.
        LinearOnly = 1,
    }
}

raw_enum! {
    /// What an SDP sub-unit computes (`SDP_OP_NONE` .. `SDP_OP_BOTH`).
    pub enum SdpOpType = "sdp op type" {
        /// Pass through.
        None = 0,
        /// Multiply.
        Mul = 1,
        /// ALU operation (add/max/min/equal).
        Add = 2,
        /// ALU operation then multiply.
        Both = 3,
    }
}

raw_enum! {
    /// Operation of an SDP ALU (`SDP_ALU_OP_*`).
    pub enum SdpAluType = "sdp alu type" {
        /// Maximum.
        Max = 0,
        /// Minimum.
        Min = 1,
        /// Sum.
        Sum = 2,
        /// Equality.
        Eql = 3,
    }
}

raw_enum! {
    /// Where an SDP operand comes from (`SDP_OP_PER_*`).
    pub enum SdpOpMode = "sdp op mode" {
        /// One operand for the whole layer (in the descriptor).
        PerLayer = 0,
        /// One operand per output channel (from memory).
        PerKernel = 1,
        /// One operand per element (from memory).
        PerPoint = 2,
    }
}

raw_enum! {
    /// Pooling function (`POOL_MODE_*`).
    pub enum PoolMode = "pool mode" {
        /// Average.
        Avg = 0,
        /// Maximum.
        Max = 1,
        /// Minimum.
        Min = 2,
    }
}

raw_enum! {
    /// Pooling window extent (`POOL_SIZE_*`): the stored value is size - 1.
    pub enum PoolSize = "pool size" {
        /// 1 element.
        Size1 = 0,
        /// 2 elements.
        Size2 = 1,
        /// 3 elements.
        Size3 = 2,
        /// 4 elements.
        Size4 = 3,
        /// 5 elements.
        Size5 = 4,
        /// 6 elements.
        Size6 = 5,
        /// 7 elements.
        Size7 = 6,
        /// 8 elements.
        Size8 = 7,
    }
}

impl PoolSize {
    /// The window extent in elements (1 to 8).
    pub fn elements(self) -> u32 {
        u32::from(self.raw()) + 1
    }
}

raw_enum! {
    /// Rubik reshape mode (`RUBIK_MODE_*`).
    pub enum RubikMode = "rubik mode" {
        /// Contract (deconvolution output reshuffle).
        Contract = 0,
        /// Split channels into planes.
        Split = 1,
        /// Merge planes into channels.
        Merge = 2,
    }
}

raw_enum! {
    /// How a 16-bit image input is interpreted (`PIXEL_OVERRIDE_*`).
    pub enum PixelOverride = "pixel override" {
        /// Unsigned.
        Uint = 0,
        /// Signed.
        Int = 1,
    }
}

// ---------------------------------------------------------------------------
// Sizes and strides.
// ---------------------------------------------------------------------------

/// Number of processor types (`DLA_OP_NUM`); length of per-processor arrays.
pub const OP_NUM: usize = 6;
/// Register groups per processor (`DLA_NUM_GROUPS`).
pub const NUM_GROUPS: usize = 2;
/// Maximum transfers in one BDMA operation (`NUM_MAX_BDMA_OPS`).
pub const MAX_BDMA_TRANSFERS: usize = 20;
/// Number of precomputed PDP padding values (`PDP_PAD_VAL_NUM`).
pub const PDP_PAD_VAL_NUM: usize = 7;
/// Entries in the linear/exponential LUT table: `(1 << 6) + 1`.
pub const LUT_LINEAR_EXP_TABLE_ENTRIES: usize = (1 << 6) + 1;
/// Entries in the linear-only LUT table: `(1 << 8) + 1`.
pub const LUT_LINEAR_ONLY_TABLE_ENTRIES: usize = (1 << 8) + 1;

/// Stride of the operation list: `sizeof(union dla_operation_container)`,
/// the largest operation descriptor ([`SdpOpDesc`], 116 bytes).
pub const OPERATION_CONTAINER_SIZE: usize = 116;
/// Stride of the surface list: `sizeof(union dla_surface_container)`, the
/// largest surface descriptor ([`BdmaSurfaceDesc`], 644 bytes).
pub const SURFACE_CONTAINER_SIZE: usize = 644;
/// Stride of the statistics list: `sizeof(union dla_stat_container)`, the
/// largest statistics record ([`SdpStatDesc`] and [`CdpStatDesc`], 44 bytes).
pub const STAT_CONTAINER_SIZE: usize = 44;
/// Stride of the dependency graph: `sizeof(struct dla_common_op_desc)`.
pub const DEPENDENCY_ENTRY_SIZE: usize = CommonOpDesc::SIZE;
/// Stride of the LUT list: `sizeof(struct dla_lut_param)`.
pub const LUT_ENTRY_SIZE: usize = LutParam::SIZE;

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

// The container strides are the largest member of each union (all members
// are 4-aligned and 4-multiple in size, so the union adds no padding).
const _: () = assert!(
    OPERATION_CONTAINER_SIZE
        == max(
            max(max(BdmaOpDesc::SIZE, ConvOpDesc::SIZE), SdpOpDesc::SIZE),
            max(max(PdpOpDesc::SIZE, CdpOpDesc::SIZE), RubikOpDesc::SIZE)
        )
);
const _: () = assert!(
    SURFACE_CONTAINER_SIZE
        == max(
            max(
                max(BdmaSurfaceDesc::SIZE, ConvSurfaceDesc::SIZE),
                SdpSurfaceDesc::SIZE
            ),
            max(
                max(PdpSurfaceDesc::SIZE, CdpSurfaceDesc::SIZE),
                RubikSurfaceDesc::SIZE
            )
        )
);
const _: () = assert!(
    STAT_CONTAINER_SIZE
        == max(
            max(
                max(BdmaStatDesc::SIZE, ConvStatDesc::SIZE),
                SdpStatDesc::SIZE
            ),
            max(
                max(PdpStatDesc::SIZE, CdpStatDesc::SIZE),
                RubikStatDesc::SIZE
            )
        )
);

/// Slot `index` of a list whose elements are `stride` bytes apart.
///
/// Fails (naming `container`) unless the whole slot lies inside `list`, as
/// the firmware always reads complete slots.
pub fn container_slot<'a>(
    list: &'a [u8],
    stride: usize,
    index: usize,
    container: &'static str,
) -> Result<&'a [u8], DecodeError> {
    let slot = index
        .checked_mul(stride)
        .and_then(|start| Some(start..start.checked_add(stride)?));
    match slot.as_ref().and_then(|range| list.get(range.clone())) {
        Some(bytes) => Ok(bytes),
        None => Err(DecodeError {
            descriptor: container,
            needed: slot.map_or(usize::MAX, |range| range.end),
            available: list.len(),
        }),
    }
}

/// Decode element `index` of a packed array of `D` (stride `D::SIZE`), such
/// as the dependency graph ([`CommonOpDesc`]) or the LUT list ([`LutParam`]).
pub fn decode_at<D: Descriptor>(list: &[u8], index: usize) -> Result<D, DecodeError> {
    container_slot(list, D::SIZE, index, D::NAME).and_then(D::decode_from)
}

// ---------------------------------------------------------------------------
// Network and dependency graph.
// ---------------------------------------------------------------------------

descriptor! {
    /// `struct dla_network_desc` (40 bytes): the root record of a DLA1 task,
    /// always at address-list slot 0. The `*_index` fields are address-list
    /// indices of the other blobs (-1 when absent).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct NetworkDesc = "dla_network_desc", size 40 {
        /// Address-list index of the operation list.
        pub operation_desc_index: i16,
        /// Address-list index of the surface list.
        pub surface_desc_index: i16,
        /// Address-list index of the dependency graph.
        pub dependency_graph_index: i16,
        /// Address-list index of the LUT list.
        pub lut_data_index: i16,
        /// Address-list index of the ROI array (used with `dynamic_roi`).
        pub roi_array_index: i16,
        /// Address-list index of the input surface (used with `dynamic_roi`).
        pub surface_index: i16,
        /// Address-list index of the statistics list.
        pub stat_list_index: i16,
        /// Reserved.
        pub reserved1: i16,
        /// Per processor ([`OpType::index`]): first operation of that type,
        /// or -1.
        pub op_head: [i16; OP_NUM],
        /// Number of ROIs.
        pub num_rois: u16,
        /// Operations per ROI.
        pub num_operations: u16,
        /// Entries in the LUT list.
        pub num_luts: u16,
        /// Entries in the task's address list.
        pub num_addresses: u16,
        /// Index of the operation that reads the ROI input (with `dynamic_roi`).
        pub input_layer: i16,
        /// Non-zero when ROIs are read from the ROI array at run time.
        pub dynamic_roi: u8,
        /// Reserved.
        pub reserved0: u8,
    }
}

impl NetworkDesc {
    /// First operation of processor `op` (-1 when it has none).
    pub fn head(&self, op: OpType) -> i16 {
        self.op_head[op.index()]
    }

    /// Whether ROIs come from the ROI array at run time.
    pub fn is_dynamic_roi(&self) -> bool {
        self.dynamic_roi != 0
    }
}

descriptor! {
    /// `struct dla_consumer` (4 bytes): one edge of the dependency graph.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Consumer = "dla_consumer", size 4 {
        /// Dependency-graph index of the consumer, or -1 for none.
        pub index: i16,
        /// [`Event`] the consumer waits for.
        pub event: u8,
        /// Reserved.
        pub res: u8,
    }
}

typed_accessors!(Consumer = "dla_consumer" {
    event => event as Event,
});

impl Consumer {
    /// Whether this slot names a consumer (`index != -1`).
    pub fn is_present(&self) -> bool {
        self.index != -1
    }
}

descriptor! {
    /// `struct dla_common_op_desc` (36 bytes): one node of the dependency
    /// graph, shared by all processor types.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CommonOpDesc = "dla_common_op_desc", size 36 {
        /// Index of this operation (the firmware sets it).
        pub index: i16,
        /// ROI this operation belongs to.
        pub roi_index: i8,
        /// [`OpType`]: which union variant the operation/surface slots hold.
        pub op_type: u8,
        /// Number of producers that must signal before this operation runs.
        pub dependency_count: u8,
        /// Reserved.
        pub reserved0: [u8; 3],
        /// Per processor ([`OpType::index`]): the next operation of that type
        /// that depends on this one.
        pub consumers: [Consumer; OP_NUM],
        /// The operation this one is fused with, if any.
        pub fused_parent: Consumer,
    }
}

typed_accessors!(CommonOpDesc = "dla_common_op_desc" {
    op_type => op_type as OpType,
});

descriptor! {
    /// `struct dla_roi_array_desc` (8 bytes): header of the ROI array.
    ///
    /// The firmware reads `array_length` as a 64-bit value, i.e. together
    /// with `array_reserved`, so the reserved word must be zero.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RoiArrayDesc = "dla_roi_array_desc", size 8 {
        /// Number of [`RoiDesc`] entries that follow.
        pub array_length: u32,
        /// Reserved (high half of the length as the firmware reads it).
        pub array_reserved: u32,
    }
}

descriptor! {
    /// `struct dla_roi_desc` (16 bytes): one region of interest, in pixels.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RoiDesc = "dla_roi_desc", size 16 {
        /// Left edge.
        pub left: u32,
        /// Top edge.
        pub top: u32,
        /// Right edge.
        pub right: u32,
        /// Bottom edge.
        pub bottom: u32,
    }
}

// ---------------------------------------------------------------------------
// BDMA.
// ---------------------------------------------------------------------------

descriptor! {
    /// `struct dla_bdma_transfer_desc` (32 bytes): one strided copy.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct BdmaTransferDesc = "dla_bdma_transfer_desc", size 32 {
        /// Address-list index of the source.
        pub source_address: i16,
        /// Address-list index of the destination.
        pub destination_address: i16,
        /// Bytes per line.
        pub line_size: u32,
        /// Lines per surface.
        pub line_repeat: u32,
        /// Source line stride in bytes.
        pub source_line: u32,
        /// Destination line stride in bytes.
        pub destination_line: u32,
        /// Number of surfaces.
        pub surface_repeat: u32,
        /// Source surface stride in bytes.
        pub source_surface: u32,
        /// Destination surface stride in bytes.
        pub destination_surface: u32,
    }
}

descriptor! {
    /// `struct dla_bdma_surface_desc` (644 bytes, the largest surface
    /// descriptor): up to [`MAX_BDMA_TRANSFERS`] copies.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct BdmaSurfaceDesc = "dla_bdma_surface_desc", size 644 {
        /// [`MemType`] of all sources.
        pub source_type: u8,
        /// [`MemType`] of all destinations.
        pub destination_type: u8,
        /// Transfers in use.
        pub num_transfers: u16,
        /// The transfers; only the first `num_transfers` are meaningful.
        pub transfers: [BdmaTransferDesc; MAX_BDMA_TRANSFERS],
    }
}

typed_accessors!(BdmaSurfaceDesc = "dla_bdma_surface_desc" {
    source_type => source_type as MemType,
    destination_type => destination_type as MemType,
});

impl BdmaSurfaceDesc {
    /// The transfers in use (`num_transfers`, capped at [`MAX_BDMA_TRANSFERS`]).
    pub fn active_transfers(&self) -> &[BdmaTransferDesc] {
        let n = usize::from(self.num_transfers).min(MAX_BDMA_TRANSFERS);
        &self.transfers[..n]
    }
}

descriptor! {
    /// `struct dla_bdma_op_desc` (4 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct BdmaOpDesc = "dla_bdma_op_desc", size 4 {
        /// Transfers in the matching surface descriptor.
        pub num_transfers: u16,
        /// Reserved.
        pub reserved0: u16,
    }
}

descriptor! {
    /// `struct dla_bdma_stat_desc` (12 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct BdmaStatDesc = "dla_bdma_stat_desc", size 12 {
        /// Read stall cycles.
        pub read_stall: u32,
        /// Write stall cycles.
        pub write_stall: u32,
        /// Run time.
        pub runtime: u32,
    }
}

// ---------------------------------------------------------------------------
// Shared building blocks.
// ---------------------------------------------------------------------------

descriptor! {
    /// `struct dla_cvt_param` (8 bytes): a converter `(x - offset) * scale >> truncate`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CvtParam = "dla_cvt_param", size 8 {
        /// Scale.
        pub scale: i16,
        /// Right shift.
        pub truncate: u8,
        /// Non-zero to enable the converter.
        pub enable: u8,
        /// Offset.
        pub offset: i32,
    }
}

descriptor! {
    /// `struct dla_data_cube` (32 bytes): location and shape of a surface.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct DataCube = "dla_data_cube", size 32 {
        /// [`MemType`] (C field `type`).
        pub mem_type: u16,
        /// Address-list index of the memory, or -1.
        pub address: i16,
        /// Byte offset within that memory.
        pub offset: u32,
        /// Size in bytes.
        pub size: u32,
        /// Width in elements.
        pub width: u16,
        /// Height in elements.
        pub height: u16,
        /// Channels.
        pub channel: u16,
        /// Reserved.
        pub reserved0: u16,
        /// Line stride in bytes.
        pub line_stride: u32,
        /// Surface stride in bytes.
        pub surf_stride: u32,
        /// Plane stride in bytes (Rubik only).
        pub plane_stride: u32,
    }
}

typed_accessors!(DataCube = "dla_data_cube" {
    mem_type => mem_type as MemType,
});

// ---------------------------------------------------------------------------
// Convolution.
// ---------------------------------------------------------------------------

descriptor! {
    /// `struct dla_conv_surface_desc` (172 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct ConvSurfaceDesc = "dla_conv_surface_desc", size 172 {
        /// Weights.
        pub weight_data: DataCube,
        /// Weight mask bits (compressed weights).
        pub wmb_data: DataCube,
        /// Weight group sizes (compressed weights).
        pub wgs_data: DataCube,
        /// Input.
        pub src_data: DataCube,
        /// Output.
        pub dst_data: DataCube,
        /// Offset of the U plane from the input address (planar YUV).
        pub offset_u: i64,
        /// Line stride of the second plane (32-byte aligned).
        pub in_line_uv_stride: u32,
    }
}

descriptor! {
    /// `struct dla_conv_op_desc` (92 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct ConvOpDesc = "dla_conv_op_desc", size 92 {
        /// [`ConvMode`].
        pub conv_mode: u8,
        /// Reuse input data from the previous operation.
        pub data_reuse: u8,
        /// Reuse weights from the previous operation.
        pub weight_reuse: u8,
        /// Keep input data in the buffer after this operation.
        pub skip_data_rls: u8,
        /// Keep weights in the buffer after this operation.
        pub skip_weight_rls: u8,
        /// Reserved.
        pub reserved0: u8,
        /// Convolution-buffer entries per input slice.
        pub entry_per_slice: u16,
        /// [`DataFormat`].
        pub data_format: u8,
        /// [`PixelMapping`].
        pub pixel_mapping: u8,
        /// Free slices needed before fetching.
        pub fetch_grain: u16,
        /// Reserved.
        pub reserved_b: [u8; 8],
        /// Batch size.
        pub batch: u8,
        /// [`WeightFormat`].
        pub weight_format: u8,
        /// Convolution-buffer banks for data.
        pub data_bank: u8,
        /// Convolution-buffer banks for weights.
        pub weight_bank: u8,
        /// Bytes between the cubes of a batch.
        pub batch_stride: u32,
        /// Post-extension (image input).
        pub post_extension: u8,
        /// [`PixelOverride`].
        pub pixel_override: u8,
        /// Slices to release after this operation.
        pub release: u16,
        /// Input width seen by CSC.
        pub input_width_csc: u16,
        /// Input height seen by CSC.
        pub input_height_csc: u16,
        /// Input channels seen by CSC.
        pub input_channel_csc: u16,
        /// Kernel width seen by CSC.
        pub kernel_width_csc: u16,
        /// Kernel height seen by CSC.
        pub kernel_height_csc: u16,
        /// Kernel channels seen by CSC.
        pub kernel_channel_csc: u16,
        /// Input width seen by CMAC.
        pub input_width_cmac: u16,
        /// Input height seen by CMAC.
        pub input_height_cmac: u16,
        /// Bytes per kernel.
        pub bytes_per_kernel: u32,
        /// Mean for R (RGB) or Y (YUV).
        pub mean_ry: i16,
        /// Mean for G (RGB) or U (YUV).
        pub mean_gu: i16,
        /// Mean for B (RGB) or V (YUV).
        pub mean_bv: i16,
        /// Mean for A/X.
        pub mean_ax: i16,
        /// [`MeanFormat`].
        pub mean_format: u8,
        /// Horizontal stride.
        pub conv_stride_x: u8,
        /// Vertical stride.
        pub conv_stride_y: u8,
        /// Left padding.
        pub pad_x_left: u8,
        /// Right padding.
        pub pad_x_right: u8,
        /// Top padding.
        pub pad_y_top: u8,
        /// Bottom padding.
        pub pad_y_bottom: u8,
        /// Horizontal dilation.
        pub dilation_x: u8,
        /// Vertical dilation.
        pub dilation_y: u8,
        /// Reserved.
        pub reserved2: [u8; 2],
        /// Truncation of the pre-activation (Winograd) stage.
        pub pra_truncate: u8,
        /// Input [`Precision`].
        pub in_precision: u8,
        /// MAC [`Precision`].
        pub out_precision: u8,
        /// Padding value (at byte offset 74: not naturally aligned).
        pub pad_val: i16,
        /// Input converter.
        pub in_cvt: CvtParam,
        /// Output converter (truncate only).
        pub out_cvt: CvtParam,
    }
}

typed_accessors!(ConvOpDesc = "dla_conv_op_desc" {
    conv_mode => conv_mode as ConvMode,
    data_format => data_format as DataFormat,
    pixel_mapping => pixel_mapping as PixelMapping,
    weight_format => weight_format as WeightFormat,
    pixel_override => pixel_override as PixelOverride,
    mean_format => mean_format as MeanFormat,
    in_precision => in_precision as Precision,
    out_precision => out_precision as Precision,
});

descriptor! {
    /// `struct dla_conv_stat_desc` (40 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct ConvStatDesc = "dla_conv_stat_desc", size 40 {
        /// Data read stall cycles.
        pub data_read_stall: u32,
        /// Weight read stall cycles.
        pub weight_read_stall: u32,
        /// Data read latency.
        pub data_read_latency: u32,
        /// Weight read latency.
        pub weight_read_latency: u32,
        /// Saturated outputs.
        pub saturation_count: u32,
        /// NaN inputs.
        pub nan_data_num: u32,
        /// NaN weights.
        pub nan_weight_num: u32,
        /// Infinite inputs.
        pub inf_data_num: u32,
        /// Infinite weights.
        pub inf_weight_num: u32,
        /// Run time.
        pub runtime: u32,
    }
}

// ---------------------------------------------------------------------------
// LUT.
// ---------------------------------------------------------------------------

descriptor! {
    /// `union dla_lut_offset` (2 bytes), kept raw.
    ///
    /// The union overlays `int8_t exp_offset`, `int8_t frac_bits` and
    /// `uint16_t reserved0`; the `int8_t` members are the low byte.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct LutOffset = "dla_lut_offset", size 2 {
        /// All 16 bits (`reserved0`).
        pub raw: u16,
    }
}

impl LutOffset {
    /// Log-domain offset subtracted before an exponential lookup.
    pub fn exp_offset(&self) -> i8 {
        self.raw.to_le_bytes()[0] as i8
    }

    /// Right shift applied before a linear lookup.
    pub fn frac_bits(&self) -> i8 {
        self.raw.to_le_bytes()[0] as i8
    }

    /// An offset holding `exp_offset` (high byte zero).
    pub fn from_exp_offset(v: i8) -> Self {
        Self {
            raw: u16::from(v as u8),
        }
    }

    /// An offset holding `frac_bits` (high byte zero).
    pub fn from_frac_bits(v: i8) -> Self {
        Self::from_exp_offset(v)
    }
}

descriptor! {
    /// `struct dla_float_data` (4 bytes): `scale >> shifter` as a number
    /// for the integer pipelines.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct FloatData = "dla_float_data", size 4 {
        /// Mantissa.
        pub scale: i16,
        /// Right shift.
        pub shifter: i8,
        /// Reserved.
        pub reserved0: u8,
    }
}

descriptor! {
    /// `union dla_slope` (4 bytes), kept raw.
    ///
    /// Integer pipelines store a [`FloatData`] (`data_i`); the FP16 pipeline
    /// stores a half-float bit pattern in the low 16 bits (`data_f`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Slope = "dla_slope", size 4 {
        /// All 32 bits, little-endian.
        pub raw: u32,
    }
}

impl Slope {
    /// The slope as the integer-pipeline [`FloatData`] member.
    pub fn data_i(&self) -> FloatData {
        let b = self.raw.to_le_bytes();
        FloatData {
            scale: i16::from_le_bytes([b[0], b[1]]),
            shifter: b[2] as i8,
            reserved0: b[3],
        }
    }

    /// The slope as the FP16 member (half-float bits).
    pub fn data_f(&self) -> u16 {
        (self.raw & 0xffff) as u16
    }

    /// A slope holding `data_i`.
    pub fn from_data_i(v: FloatData) -> Self {
        let s = v.scale.to_le_bytes();
        Self {
            raw: u32::from_le_bytes([s[0], s[1], v.shifter as u8, v.reserved0]),
        }
    }

    /// A slope holding `data_f` (upper 16 bits zero).
    pub fn from_data_f(bits: u16) -> Self {
        Self {
            raw: u32::from(bits),
        }
    }
}

descriptor! {
    /// `struct dla_lut_param` (700 bytes): one SDP/CDP look-up table.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct LutParam = "dla_lut_param", size 700 {
        /// The 65-entry table (exponential or linear indexing).
        pub linear_exp_table: [i16; LUT_LINEAR_EXP_TABLE_ENTRIES],
        /// The 257-entry linear table.
        pub linear_only_table: [i16; LUT_LINEAR_ONLY_TABLE_ENTRIES],
        /// Index offset of the first table.
        pub linear_exp_offset: LutOffset,
        /// Index offset of the second table.
        pub linear_only_offset: LutOffset,
        /// Input range start of the first table.
        pub linear_exp_start: u64,
        /// Input range end of the first table.
        pub linear_exp_end: u64,
        /// Input range start of the second table.
        pub linear_only_start: u64,
        /// Input range end of the second table.
        pub linear_only_end: u64,
        /// Slope below the first table's range.
        pub linear_exp_underflow_slope: Slope,
        /// Slope above the first table's range.
        pub linear_exp_overflow_slope: Slope,
        /// Slope below the second table's range.
        pub linear_only_underflow_slope: Slope,
        /// Slope above the second table's range.
        pub linear_only_overflow_slope: Slope,
        /// [`LutPriority`] when both tables hit.
        pub hybrid_priority: u8,
        /// [`LutPriority`] when both underflow.
        pub underflow_priority: u8,
        /// [`LutPriority`] when both overflow.
        pub overflow_priority: u8,
        /// [`LutMethod`] of the first table.
        pub method: u8,
    }
}

impl Default for LutParam {
    fn default() -> Self {
        Self {
            linear_exp_table: [0; LUT_LINEAR_EXP_TABLE_ENTRIES],
            linear_only_table: [0; LUT_LINEAR_ONLY_TABLE_ENTRIES],
            linear_exp_offset: LutOffset::default(),
            linear_only_offset: LutOffset::default(),
            linear_exp_start: 0,
            linear_exp_end: 0,
            linear_only_start: 0,
            linear_only_end: 0,
            linear_exp_underflow_slope: Slope::default(),
            linear_exp_overflow_slope: Slope::default(),
            linear_only_underflow_slope: Slope::default(),
            linear_only_overflow_slope: Slope::default(),
            hybrid_priority: 0,
            underflow_priority: 0,
            overflow_priority: 0,
            method: 0,
        }
    }
}

typed_accessors!(LutParam = "dla_lut_param" {
    hybrid_priority => hybrid_priority as LutPriority,
    underflow_priority => underflow_priority as LutPriority,
    overflow_priority => overflow_priority as LutPriority,
    method => method as LutMethod,
});

// ---------------------------------------------------------------------------
// SDP.
// ---------------------------------------------------------------------------

descriptor! {
    /// `struct dla_sdp_surface_desc` (160 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SdpSurfaceDesc = "dla_sdp_surface_desc", size 160 {
        /// Input (offline mode, i.e. not fed by convolution).
        pub src_data: DataCube,
        /// Operands of the X1 sub-unit.
        pub x1_data: DataCube,
        /// Operands of the X2 sub-unit.
        pub x2_data: DataCube,
        /// Operands of the Y sub-unit.
        pub y_data: DataCube,
        /// Output.
        pub dst_data: DataCube,
    }
}

descriptor! {
    /// `struct dla_sdp_cvt` (16 bytes): operand converters of one sub-unit.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SdpCvt = "dla_sdp_cvt", size 16 {
        /// ALU operand converter.
        pub alu_cvt: CvtParam,
        /// Multiplier operand converter.
        pub mul_cvt: CvtParam,
    }
}

descriptor! {
    /// `struct dla_sdp_op` (32 bytes): one SDP sub-unit (X1, X2 or Y).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SdpOp = "dla_sdp_op", size 32 {
        /// Non-zero when the sub-unit is used.
        pub enable: u8,
        /// [`SdpAluType`].
        pub alu_type: u8,
        /// [`SdpOpType`] (C field `type`).
        pub op_type: u8,
        /// [`SdpOpMode`].
        pub mode: u8,
        /// [`Activation`].
        pub act: u8,
        /// Left shift of the ALU operand.
        pub shift_value: u8,
        /// Right shift after the multiplier.
        pub truncate: u8,
        /// Operand [`Precision`].
        pub precision: u8,
        /// ALU operand (per-layer mode).
        pub alu_operand: i32,
        /// Multiplier operand (per-layer mode).
        pub mul_operand: i32,
        /// Operand converters.
        pub cvt: SdpCvt,
    }
}

typed_accessors!(SdpOp = "dla_sdp_op" {
    alu_type => alu_type as SdpAluType,
    op_type => op_type as SdpOpType,
    mode => mode as SdpOpMode,
    act => act as Activation,
    precision => precision as Precision,
});

descriptor! {
    /// `struct dla_sdp_op_desc` (116 bytes, the largest operation descriptor).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SdpOpDesc = "dla_sdp_op_desc", size 116 {
        /// Input [`Precision`].
        pub src_precision: u8,
        /// Output [`Precision`].
        pub dst_precision: u8,
        /// LUT-list index, or -1.
        pub lut_index: i16,
        /// Output converter.
        pub out_cvt: CvtParam,
        /// [`ConvMode`] of the feeding convolution.
        pub conv_mode: u8,
        /// Batch size.
        pub batch_num: u8,
        /// Reserved.
        pub reserved0: u16,
        /// Bytes between the cubes of a batch (when `batch_num > 1`).
        pub batch_stride: u32,
        /// X1 sub-unit.
        pub x1_op: SdpOp,
        /// X2 sub-unit.
        pub x2_op: SdpOp,
        /// Y sub-unit.
        pub y_op: SdpOp,
    }
}

typed_accessors!(SdpOpDesc = "dla_sdp_op_desc" {
    src_precision => src_precision as Precision,
    dst_precision => dst_precision as Precision,
    conv_mode => conv_mode as ConvMode,
});

descriptor! {
    /// `struct dla_sdp_stat_desc` (44 bytes, the largest statistics record).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SdpStatDesc = "dla_sdp_stat_desc", size 44 {
        /// NaN inputs.
        pub nan_input_num: u32,
        /// Infinite inputs.
        pub inf_input_num: u32,
        /// NaN outputs.
        pub nan_output_num: u32,
        /// Write stall cycles.
        pub wdma_write_stall: u32,
        /// LUT underflows.
        pub lut_underflow: u32,
        /// LUT overflows.
        pub lut_overflow: u32,
        /// LUT hybrid hits.
        pub lut_hybrid: u32,
        /// Hits in the first table.
        pub lut_le_hit: u32,
        /// Hits in the second table.
        pub lut_lo_hit: u32,
        /// Saturated outputs.
        pub saturation_count: u32,
        /// Run time.
        pub runtime: u32,
    }
}

// ---------------------------------------------------------------------------
// PDP.
// ---------------------------------------------------------------------------

descriptor! {
    /// `struct dla_pdp_surface_desc` (64 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct PdpSurfaceDesc = "dla_pdp_surface_desc", size 64 {
        /// Input.
        pub src_data: DataCube,
        /// Output.
        pub dst_data: DataCube,
    }
}

descriptor! {
    /// `struct dla_pdp_op_desc` (52 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct PdpOpDesc = "dla_pdp_op_desc", size 52 {
        /// Input width of the first split.
        pub partial_in_width_first: u16,
        /// Input width of middle splits.
        pub partial_in_width_mid: u16,
        /// Input width of the last split.
        pub partial_in_width_last: u16,
        /// Output width of the first split.
        pub partial_width_first: u16,
        /// Output width of middle splits.
        pub partial_width_mid: u16,
        /// Output width of the last split.
        pub partial_width_last: u16,
        /// Number of horizontal splits.
        pub split_num: u8,
        /// [`PoolMode`].
        pub pool_mode: u8,
        /// [`PoolSize`] horizontally.
        pub pool_width: u8,
        /// [`PoolSize`] vertically.
        pub pool_height: u8,
        /// Horizontal stride.
        pub stride_x: u8,
        /// Vertical stride.
        pub stride_y: u8,
        /// Left padding.
        pub pad_left: u8,
        /// Right padding.
        pub pad_right: u8,
        /// Top padding.
        pub pad_top: u8,
        /// Bottom padding.
        pub pad_bottom: u8,
        /// [`Precision`].
        pub precision: u8,
        /// Reserved.
        pub reserved0: u8,
        /// Padding values: entry `k` is `(k + 1)` times the base value.
        pub padding_value: [i32; PDP_PAD_VAL_NUM],
    }
}

typed_accessors!(PdpOpDesc = "dla_pdp_op_desc" {
    pool_mode => pool_mode as PoolMode,
    pool_width => pool_width as PoolSize,
    pool_height => pool_height as PoolSize,
    precision => precision as Precision,
});

descriptor! {
    /// `struct dla_pdp_stat_desc` (20 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct PdpStatDesc = "dla_pdp_stat_desc", size 20 {
        /// Infinite inputs.
        pub inf_input_num: u32,
        /// NaN inputs.
        pub nan_input_num: u32,
        /// NaN outputs.
        pub nan_output_num: u32,
        /// Write stall cycles.
        pub write_stall: u32,
        /// Run time.
        pub runtime: u32,
    }
}

// ---------------------------------------------------------------------------
// CDP.
// ---------------------------------------------------------------------------

descriptor! {
    /// `struct dla_cdp_surface_desc` (64 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CdpSurfaceDesc = "dla_cdp_surface_desc", size 64 {
        /// Input.
        pub src_data: DataCube,
        /// Output.
        pub dst_data: DataCube,
    }
}

descriptor! {
    /// `struct dla_cdp_op_desc` (24 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CdpOpDesc = "dla_cdp_op_desc", size 24 {
        /// Input [`Precision`].
        pub in_precision: u8,
        /// Output [`Precision`].
        pub out_precision: u8,
        /// LUT-list index, or -1.
        pub lut_index: i16,
        /// Input converter.
        pub in_cvt: CvtParam,
        /// Output converter.
        pub out_cvt: CvtParam,
        /// Normalisation window (channels).
        pub local_size: u8,
        /// Non-zero to bypass the square-sum stage.
        pub bypass_sqsum: u8,
        /// Non-zero to bypass the output multiplier.
        pub bypass_out_mul: u8,
        /// Reserved.
        pub reserved0: u8,
    }
}

typed_accessors!(CdpOpDesc = "dla_cdp_op_desc" {
    in_precision => in_precision as Precision,
    out_precision => out_precision as Precision,
});

descriptor! {
    /// `struct dla_cdp_stat_desc` (44 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct CdpStatDesc = "dla_cdp_stat_desc", size 44 {
        /// NaN inputs.
        pub nan_input_num: u32,
        /// Infinite inputs.
        pub inf_input_num: u32,
        /// NaN outputs.
        pub nan_output_num: u32,
        /// Write stall cycles.
        pub write_stall: u32,
        /// LUT underflows.
        pub lut_uflow: u32,
        /// LUT overflows.
        pub lut_oflow: u32,
        /// LUT hybrid hits.
        pub lut_hybrid: u32,
        /// Hits in the first table.
        pub lut_le_hit: u32,
        /// Hits in the second table.
        pub lut_lo_hit: u32,
        /// Saturated outputs.
        pub saturation_count: u32,
        /// Run time.
        pub runtime: u32,
    }
}

// ---------------------------------------------------------------------------
// Rubik.
// ---------------------------------------------------------------------------

descriptor! {
    /// `struct dla_rubik_surface_desc` (64 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RubikSurfaceDesc = "dla_rubik_surface_desc", size 64 {
        /// Input.
        pub src_data: DataCube,
        /// Output.
        pub dst_data: DataCube,
    }
}

descriptor! {
    /// `struct dla_rubik_op_desc` (4 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RubikOpDesc = "dla_rubik_op_desc", size 4 {
        /// [`RubikMode`].
        pub mode: u8,
        /// [`Precision`].
        pub precision: u8,
        /// Horizontal stride.
        pub stride_x: u8,
        /// Vertical stride.
        pub stride_y: u8,
    }
}

typed_accessors!(RubikOpDesc = "dla_rubik_op_desc" {
    mode => mode as RubikMode,
    precision => precision as Precision,
});

descriptor! {
    /// `struct dla_rubik_stat_desc` (12 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct RubikStatDesc = "dla_rubik_stat_desc", size 12 {
        /// Read stall cycles.
        pub read_stall: u32,
        /// Write stall cycles.
        pub write_stall: u32,
        /// Run time.
        pub runtime: u32,
    }
}

// ---------------------------------------------------------------------------
// Task status.
// ---------------------------------------------------------------------------

descriptor! {
    /// `struct dla_task_status` (16 bytes): a status notifier written by the
    /// engine (not part of a loadable).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct TaskStatus = "dla_task_status", size 16 {
        /// When the notifier was written.
        pub timestamp: u64,
        /// Status word captured from the engine.
        pub status_engine: u32,
        /// Unused.
        pub subframe: u16,
        /// Status word configured by an action list.
        pub status_task: u16,
    }
}

// ---------------------------------------------------------------------------
// Union containers.
// ---------------------------------------------------------------------------

/// Generates an enum over the per-processor members of one C union, with
/// decoding by [`OpType`] and encoding.
macro_rules! container_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident = $cname:literal, stride $stride:ident {
            $( $(#[$vmeta:meta])* $variant:ident($ty:ident), )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $( $(#[$vmeta])* $variant($ty), )*
        }

        impl $name {
            #[doc = concat!("Decode the `", $cname, "` member for `op_type` from the start of `bytes`.")]
            ///
            /// `bytes` needs to hold only that member, not a whole slot.
            pub fn decode(op_type: OpType, bytes: &[u8]) -> Result<Self, DecodeError> {
                Ok(match op_type {
                    $( OpType::$variant => Self::$variant(<$ty>::decode_from(bytes)?), )*
                })
            }

            #[doc = concat!("Decode slot `index` of a list of `", $cname, "` (stride [`", stringify!($stride), "`]).")]
            ///
            /// `index` is flat: `roi * num_operations + operation`. The whole
            /// slot must be inside `list`.
            pub fn decode_slot(op_type: OpType, list: &[u8], index: usize) -> Result<Self, DecodeError> {
                Self::decode(op_type, container_slot(list, $stride, index, $cname)?)
            }

            /// The processor this variant belongs to.
            pub fn op_type(&self) -> OpType {
                match self {
                    $( Self::$variant(_) => OpType::$variant, )*
                }
            }

            /// Size of the member itself (at most the container stride).
            pub fn encoded_size(&self) -> usize {
                match self {
                    $( Self::$variant(_) => <$ty>::SIZE, )*
                }
            }

            /// Encode the member into the start of `out` (which needs
            /// [`Self::encoded_size`] bytes; the rest of a slot is untouched).
            pub fn encode_into(&self, out: &mut [u8]) -> Result<(), EncodeError> {
                match self {
                    $( Self::$variant(d) => d.encode_into(out), )*
                }
            }
        }

        $(
            impl From<$ty> for $name {
                fn from(d: $ty) -> Self {
                    Self::$variant(d)
                }
            }
        )*
    };
}

container_enum! {
    /// A member of `union dla_operation_container`: the processor-specific
    /// operation parameters.
    pub enum OpDesc = "dla_operation_container", stride OPERATION_CONTAINER_SIZE {
        /// BDMA.
        Bdma(BdmaOpDesc),
        /// Convolution.
        Conv(ConvOpDesc),
        /// SDP.
        Sdp(SdpOpDesc),
        /// PDP.
        Pdp(PdpOpDesc),
        /// CDP.
        Cdp(CdpOpDesc),
        /// Rubik.
        Rubik(RubikOpDesc),
    }
}

container_enum! {
    /// A member of `union dla_surface_container`: the processor-specific
    /// surfaces.
    // No heap in no_std: the BDMA variant (644 bytes) is stored inline.
    #[allow(clippy::large_enum_variant)]
    pub enum SurfaceDesc = "dla_surface_container", stride SURFACE_CONTAINER_SIZE {
        /// BDMA.
        Bdma(BdmaSurfaceDesc),
        /// Convolution.
        Conv(ConvSurfaceDesc),
        /// SDP.
        Sdp(SdpSurfaceDesc),
        /// PDP.
        Pdp(PdpSurfaceDesc),
        /// CDP.
        Cdp(CdpSurfaceDesc),
        /// Rubik.
        Rubik(RubikSurfaceDesc),
    }
}

container_enum! {
    /// A member of `union dla_stat_container`: the processor-specific
    /// statistics the firmware writes back.
    pub enum StatDesc = "dla_stat_container", stride STAT_CONTAINER_SIZE {
        /// BDMA.
        Bdma(BdmaStatDesc),
        /// Convolution.
        Conv(ConvStatDesc),
        /// SDP.
        Sdp(SdpStatDesc),
        /// PDP.
        Pdp(PdpStatDesc),
        /// CDP.
        Cdp(CdpStatDesc),
        /// Rubik.
        Rubik(RubikStatDesc),
    }
}

// ---------------------------------------------------------------------------
// Interface revisions.
// ---------------------------------------------------------------------------

/// Which revision of `dla_interface.h` a DLA1 blob was written against.
///
/// The header changed once without changing any struct name or the size of
/// any container: in April 2019 (firmware interface 0.12) `dla_data_cube`
/// gained `uint32_t offset` after `address`, growing from 28 to 32 bytes and
/// with it every surface descriptor that embeds data cubes. Loadables built
/// before that (blob version 0.10 or 0.11, e.g. NVIDIA's 2018 regression
/// flatbuffers) must be decoded with [`Layout::Legacy`]; decoding them with
/// the current layout yields nonsense from the second field on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Before interface 0.12: data cubes without `offset` (see [`legacy`]).
    Legacy,
    /// Interface 0.12 and later: the current header.
    Current,
}

impl Layout {
    /// The layout for a blob whose loadable version field is
    /// `major.minor.*` (0.12 and later are [`Layout::Current`]).
    pub fn for_version(major: u8, minor: u8) -> Self {
        if (major, minor) >= (0, 12) {
            Layout::Current
        } else {
            Layout::Legacy
        }
    }

    /// `sizeof(struct dla_data_cube)` in this layout.
    pub fn data_cube_size(self) -> usize {
        match self {
            Layout::Legacy => legacy::DataCube::SIZE,
            Layout::Current => DataCube::SIZE,
        }
    }
}

impl SurfaceDesc {
    /// Like [`SurfaceDesc::decode`], for a blob in the given `layout`.
    ///
    /// Legacy surfaces are converted to the current types, with every data
    /// cube's `offset` set to 0 (the meaning the field has when absent).
    pub fn decode_layout(
        layout: Layout,
        op_type: OpType,
        bytes: &[u8],
    ) -> Result<Self, DecodeError> {
        if layout == Layout::Current {
            return Self::decode(op_type, bytes);
        }
        Ok(match op_type {
            OpType::Bdma => Self::Bdma(BdmaSurfaceDesc::decode_from(bytes)?),
            OpType::Conv => Self::Conv(legacy::ConvSurfaceDesc::decode_from(bytes)?.into()),
            OpType::Sdp => Self::Sdp(legacy::SdpSurfaceDesc::decode_from(bytes)?.into()),
            OpType::Pdp => Self::Pdp(legacy::PdpSurfaceDesc::decode_from(bytes)?.into()),
            OpType::Cdp => Self::Cdp(legacy::CdpSurfaceDesc::decode_from(bytes)?.into()),
            OpType::Rubik => Self::Rubik(legacy::RubikSurfaceDesc::decode_from(bytes)?.into()),
        })
    }

    /// Like [`SurfaceDesc::decode_slot`], for a blob in the given `layout`
    /// (the slot stride, [`SURFACE_CONTAINER_SIZE`], is the same in both).
    pub fn decode_slot_layout(
        layout: Layout,
        op_type: OpType,
        list: &[u8],
        index: usize,
    ) -> Result<Self, DecodeError> {
        let slot = container_slot(list, SURFACE_CONTAINER_SIZE, index, "dla_surface_container")?;
        Self::decode_layout(layout, op_type, slot)
    }
}

/// Descriptors of the pre-0.12 interface ([`Layout::Legacy`]) that differ
/// from the current ones: the data cube and the surfaces that embed it.
///
/// Everything else (network, dependency graph, operation, LUT, statistics
/// and BDMA descriptors, and all container strides) is unchanged. Each type
/// converts losslessly into its current counterpart (`offset` = 0) and back
/// as long as every `offset` is 0.
pub mod legacy {
    use super::{
        CdpSurfaceDesc as CurCdp, ConvSurfaceDesc as CurConv, DataCube as CurCube, InvalidValue,
        PdpSurfaceDesc as CurPdp, RubikSurfaceDesc as CurRubik, SdpSurfaceDesc as CurSdp,
    };

    descriptor! {
        /// Pre-0.12 `struct dla_data_cube` (28 bytes): no `offset` field.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct DataCube = "dla_data_cube (legacy)", size 28 {
            /// [`MemType`](super::MemType) (C field `type`).
            pub mem_type: u16,
            /// Address-list index of the memory, or -1.
            pub address: i16,
            /// Size in bytes.
            pub size: u32,
            /// Width in elements.
            pub width: u16,
            /// Height in elements.
            pub height: u16,
            /// Channels.
            pub channel: u16,
            /// Reserved.
            pub reserved0: u16,
            /// Line stride in bytes.
            pub line_stride: u32,
            /// Surface stride in bytes.
            pub surf_stride: u32,
            /// Plane stride in bytes (Rubik only).
            pub plane_stride: u32,
        }
    }

    impl From<DataCube> for CurCube {
        fn from(c: DataCube) -> Self {
            CurCube {
                mem_type: c.mem_type,
                address: c.address,
                offset: 0,
                size: c.size,
                width: c.width,
                height: c.height,
                channel: c.channel,
                reserved0: c.reserved0,
                line_stride: c.line_stride,
                surf_stride: c.surf_stride,
                plane_stride: c.plane_stride,
            }
        }
    }

    impl TryFrom<CurCube> for DataCube {
        type Error = InvalidValue;
        /// Fails when `offset` is not 0 (the legacy layout cannot hold it).
        fn try_from(c: CurCube) -> Result<Self, InvalidValue> {
            if c.offset != 0 {
                return Err(InvalidValue {
                    field: "dla_data_cube.offset",
                    value: c.offset,
                });
            }
            Ok(DataCube {
                mem_type: c.mem_type,
                address: c.address,
                size: c.size,
                width: c.width,
                height: c.height,
                channel: c.channel,
                reserved0: c.reserved0,
                line_stride: c.line_stride,
                surf_stride: c.surf_stride,
                plane_stride: c.plane_stride,
            })
        }
    }

    descriptor! {
        /// Pre-0.12 `struct dla_conv_surface_desc` (152 bytes).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct ConvSurfaceDesc = "dla_conv_surface_desc (legacy)", size 152 {
            /// Weights.
            pub weight_data: DataCube,
            /// Weight mask bits.
            pub wmb_data: DataCube,
            /// Weight group sizes.
            pub wgs_data: DataCube,
            /// Input.
            pub src_data: DataCube,
            /// Output.
            pub dst_data: DataCube,
            /// Offset of the U plane from the input address.
            pub offset_u: i64,
            /// Line stride of the second plane.
            pub in_line_uv_stride: u32,
        }
    }

    impl From<ConvSurfaceDesc> for CurConv {
        fn from(s: ConvSurfaceDesc) -> Self {
            CurConv {
                weight_data: s.weight_data.into(),
                wmb_data: s.wmb_data.into(),
                wgs_data: s.wgs_data.into(),
                src_data: s.src_data.into(),
                dst_data: s.dst_data.into(),
                offset_u: s.offset_u,
                in_line_uv_stride: s.in_line_uv_stride,
            }
        }
    }

    impl TryFrom<CurConv> for ConvSurfaceDesc {
        type Error = InvalidValue;
        fn try_from(s: CurConv) -> Result<Self, InvalidValue> {
            Ok(ConvSurfaceDesc {
                weight_data: s.weight_data.try_into()?,
                wmb_data: s.wmb_data.try_into()?,
                wgs_data: s.wgs_data.try_into()?,
                src_data: s.src_data.try_into()?,
                dst_data: s.dst_data.try_into()?,
                offset_u: s.offset_u,
                in_line_uv_stride: s.in_line_uv_stride,
            })
        }
    }

    descriptor! {
        /// Pre-0.12 `struct dla_sdp_surface_desc` (140 bytes).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct SdpSurfaceDesc = "dla_sdp_surface_desc (legacy)", size 140 {
            /// Input.
            pub src_data: DataCube,
            /// X1 operands.
            pub x1_data: DataCube,
            /// X2 operands.
            pub x2_data: DataCube,
            /// Y operands.
            pub y_data: DataCube,
            /// Output.
            pub dst_data: DataCube,
        }
    }

    impl From<SdpSurfaceDesc> for CurSdp {
        fn from(s: SdpSurfaceDesc) -> Self {
            CurSdp {
                src_data: s.src_data.into(),
                x1_data: s.x1_data.into(),
                x2_data: s.x2_data.into(),
                y_data: s.y_data.into(),
                dst_data: s.dst_data.into(),
            }
        }
    }

    impl TryFrom<CurSdp> for SdpSurfaceDesc {
        type Error = InvalidValue;
        fn try_from(s: CurSdp) -> Result<Self, InvalidValue> {
            Ok(SdpSurfaceDesc {
                src_data: s.src_data.try_into()?,
                x1_data: s.x1_data.try_into()?,
                x2_data: s.x2_data.try_into()?,
                y_data: s.y_data.try_into()?,
                dst_data: s.dst_data.try_into()?,
            })
        }
    }

    /// The three legacy two-cube surfaces (PDP, CDP, Rubik).
    macro_rules! src_dst_surface {
        ($($name:ident = $cname:literal => $cur:ident,)*) => {$(
            descriptor! {
                #[doc = concat!("Pre-0.12 `struct ", $cname, "` (56 bytes).")]
                #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
                pub struct $name = $cname, size 56 {
                    /// Input.
                    pub src_data: DataCube,
                    /// Output.
                    pub dst_data: DataCube,
                }
            }

            impl From<$name> for $cur {
                fn from(s: $name) -> Self {
                    $cur {
                        src_data: s.src_data.into(),
                        dst_data: s.dst_data.into(),
                    }
                }
            }

            impl TryFrom<$cur> for $name {
                type Error = InvalidValue;
                fn try_from(s: $cur) -> Result<Self, InvalidValue> {
                    Ok($name {
                        src_data: s.src_data.try_into()?,
                        dst_data: s.dst_data.try_into()?,
                    })
                }
            }
        )*};
    }

    src_dst_surface! {
        PdpSurfaceDesc = "dla_pdp_surface_desc" => CurPdp,
        CdpSurfaceDesc = "dla_cdp_surface_desc" => CurCdp,
        RubikSurfaceDesc = "dla_rubik_surface_desc" => CurRubik,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Debug;

    /// The test byte pattern: byte `i` is `i * 37 + 11` (mod 256).
    fn pattern<const N: usize>() -> [u8; N] {
        let mut out = [0u8; N];
        for (i, b) in out.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        out
    }

    /// `SIZE` matches the C sizeof; decode/encode reproduces every byte; a
    /// short input is rejected; a short output is rejected.
    fn check<D: Descriptor + PartialEq + Debug>(c_sizeof: usize) {
        assert_eq!(D::SIZE, c_sizeof, "{}", D::NAME);
        let bytes = pattern::<1024>();
        let input = &bytes[..D::SIZE];
        let decoded = D::decode_from(input).unwrap();
        let mut out = [0u8; 1024];
        decoded.encode_into(&mut out[..D::SIZE]).unwrap();
        assert_eq!(&out[..D::SIZE], input, "{} round trip", D::NAME);
        // `decode_from` (one copy where the layout allows) equals the field-by-field codec.
        let mut r = ByteReader::new(input);
        assert_eq!(D::decode(&mut r), decoded, "{} copy decoding", D::NAME);
        assert_eq!(D::decode_from(&out[..D::SIZE]).unwrap(), decoded);
        // Extra trailing bytes are ignored.
        assert_eq!(D::decode_from(&bytes).unwrap(), decoded);

        let err = D::decode_from(&input[..D::SIZE - 1]).unwrap_err();
        assert_eq!(
            err,
            DecodeError {
                descriptor: D::NAME,
                needed: D::SIZE,
                available: D::SIZE - 1
            }
        );
        assert!(D::decode_from(&[]).is_err());
        let err = decoded.encode_into(&mut out[..D::SIZE - 1]).unwrap_err();
        assert_eq!((err.needed, err.available), (D::SIZE, D::SIZE - 1));
    }

    /// The descriptors the firmware reads decode by one copy on little-endian targets
    /// (its code size depends on it).
    #[cfg(target_endian = "little")]
    const _: () = assert!(
        NetworkDesc::PLAIN_FIELDS
            && CommonOpDesc::PLAIN_FIELDS
            && RoiDesc::PLAIN_FIELDS
            && BdmaSurfaceDesc::PLAIN_FIELDS
            && ConvOpDesc::PLAIN_FIELDS
            && ConvSurfaceDesc::PLAIN_FIELDS
            && SdpOpDesc::PLAIN_FIELDS
            && SdpSurfaceDesc::PLAIN_FIELDS
            && PdpOpDesc::PLAIN_FIELDS
            && PdpSurfaceDesc::PLAIN_FIELDS
            && CdpOpDesc::PLAIN_FIELDS
            && CdpSurfaceDesc::PLAIN_FIELDS
            && RubikOpDesc::PLAIN_FIELDS
            && RubikSurfaceDesc::PLAIN_FIELDS
            && LutParam::PLAIN_FIELDS
    );

    // Expected sizes were measured with g++ (x86-64) on the upstream header:
    // sizeof(struct dla_*) printed by a test program.
    #[test]
    fn sizes_and_round_trips() {
        check::<NetworkDesc>(40); // dla_network_desc: 8*2 + 6*2 + 4*2 + 2+1+1
        check::<Consumer>(4); // dla_consumer: 2+1+1
        check::<CommonOpDesc>(36); // dla_common_op_desc: 8 + 7*4
        check::<RoiArrayDesc>(8); // dla_roi_array_desc: 2*4
        check::<RoiDesc>(16); // dla_roi_desc: 4*4
        check::<BdmaTransferDesc>(32); // dla_bdma_transfer_desc: 2*2 + 7*4
        check::<BdmaSurfaceDesc>(644); // dla_bdma_surface_desc: 4 + 20*32
        check::<BdmaOpDesc>(4); // dla_bdma_op_desc: 2*2
        check::<BdmaStatDesc>(12); // dla_bdma_stat_desc: 3*4
        check::<CvtParam>(8); // dla_cvt_param: 2+1+1+4
        check::<DataCube>(32); // dla_data_cube: 4 + 8 + 8 + 12
        check::<ConvSurfaceDesc>(172); // dla_conv_surface_desc: 5*32 + 8 + 4
        check::<ConvOpDesc>(92); // dla_conv_op_desc: 76 + 2*8
        check::<ConvStatDesc>(40); // dla_conv_stat_desc: 10*4
        check::<LutOffset>(2); // union dla_lut_offset
        check::<FloatData>(4); // dla_float_data: 2+1+1
        check::<Slope>(4); // union dla_slope
        check::<LutParam>(700); // dla_lut_param: 65*2 + 257*2 + 2*2 + 4*8 + 4*4 + 4
        check::<SdpSurfaceDesc>(160); // dla_sdp_surface_desc: 5*32
        check::<SdpCvt>(16); // dla_sdp_cvt: 2*8
        check::<SdpOp>(32); // dla_sdp_op: 8 + 2*4 + 16
        check::<SdpOpDesc>(116); // dla_sdp_op_desc: 4 + 8 + 4 + 4 + 3*32
        check::<SdpStatDesc>(44); // dla_sdp_stat_desc: 11*4
        check::<PdpSurfaceDesc>(64); // dla_pdp_surface_desc: 2*32
        check::<PdpOpDesc>(52); // dla_pdp_op_desc: 6*2 + 12 + 7*4
        check::<PdpStatDesc>(20); // dla_pdp_stat_desc: 5*4
        check::<CdpSurfaceDesc>(64); // dla_cdp_surface_desc: 2*32
        check::<CdpOpDesc>(24); // dla_cdp_op_desc: 4 + 2*8 + 4
        check::<CdpStatDesc>(44); // dla_cdp_stat_desc: 11*4
        check::<RubikSurfaceDesc>(64); // dla_rubik_surface_desc: 2*32
        check::<RubikOpDesc>(4); // dla_rubik_op_desc: 4*1
        check::<RubikStatDesc>(12); // dla_rubik_stat_desc: 3*4
        check::<TaskStatus>(16); // dla_task_status: 8+4+2+2
    }

    #[test]
    fn container_strides_match_c() {
        // sizeof(union dla_operation_container), dla_surface_container,
        // dla_stat_container as measured with g++.
        assert_eq!(OPERATION_CONTAINER_SIZE, 116);
        assert_eq!(SURFACE_CONTAINER_SIZE, 644);
        assert_eq!(STAT_CONTAINER_SIZE, 44);
        assert_eq!(DEPENDENCY_ENTRY_SIZE, 36);
        assert_eq!(LUT_ENTRY_SIZE, 700);
    }

    /// Byte offsets measured with `offsetof` in the C test program.
    #[test]
    fn field_offsets_match_c() {
        let mut conv = ConvOpDesc {
            bytes_per_kernel: 0x1122_3344,
            pra_truncate: 0x55,
            pad_val: -2,
            ..Default::default()
        };
        conv.in_cvt.scale = 0x0102;
        let mut b = [0u8; 92];
        conv.encode_into(&mut b).unwrap();
        assert_eq!(&b[48..52], &[0x44, 0x33, 0x22, 0x11]); // bytes_per_kernel @ 48
        assert_eq!(b[71], 0x55); // pra_truncate @ 71
        assert_eq!(&b[74..76], &[0xfe, 0xff]); // pad_val @ 74
        assert_eq!(&b[76..78], &[0x02, 0x01]); // in_cvt @ 76

        let lut = LutParam {
            linear_exp_offset: LutOffset::from_exp_offset(-3),
            linear_only_offset: LutOffset { raw: 0xabcd },
            linear_exp_start: 0x0807_0605_0403_0201,
            linear_exp_underflow_slope: Slope::from_data_i(FloatData {
                scale: -2,
                shifter: 5,
                reserved0: 0,
            }),
            linear_only_overflow_slope: Slope::from_data_f(0x3c00),
            method: LutMethod::Linear.raw(),
            ..Default::default()
        };
        let mut b = [0u8; 700];
        lut.encode_into(&mut b).unwrap();
        assert_eq!(&b[644..646], &[0xfd, 0x00]); // linear_exp_offset @ 644
        assert_eq!(&b[646..648], &[0xcd, 0xab]); // linear_only_offset @ 646
        assert_eq!(b[648], 0x01); // linear_exp_start @ 648
        assert_eq!(&b[680..684], &[0xfe, 0xff, 5, 0]); // underflow slope @ 680
        assert_eq!(&b[692..696], &[0x00, 0x3c, 0, 0]); // only overflow slope @ 692
        assert_eq!(b[699], 1); // method @ 699
        let back = LutParam::decode_from(&b).unwrap();
        assert_eq!(back.linear_exp_offset.exp_offset(), -3);
        assert_eq!(back.linear_exp_underflow_slope.data_i().scale, -2);
        assert_eq!(back.linear_exp_underflow_slope.data_i().shifter, 5);
        assert_eq!(back.linear_only_overflow_slope.data_f(), 0x3c00);
        assert_eq!(back.method(), Ok(LutMethod::Linear));

        let sdp = SdpOpDesc {
            x1_op: SdpOp {
                enable: 0x77,
                ..Default::default()
            },
            y_op: SdpOp {
                enable: 0x88,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut b = [0u8; 116];
        sdp.encode_into(&mut b).unwrap();
        assert_eq!(b[20], 0x77); // x1_op @ 20
        assert_eq!(b[84], 0x88); // y_op @ 84

        let pdp = PdpOpDesc {
            padding_value: [-1, 0, 0, 0, 0, 0, 9],
            ..Default::default()
        };
        let mut b = [0u8; 52];
        pdp.encode_into(&mut b).unwrap();
        assert_eq!(&b[24..28], &[0xff; 4]); // padding_value @ 24
        assert_eq!(b[48], 9);

        let surf = ConvSurfaceDesc {
            offset_u: 0x0102,
            in_line_uv_stride: 0x0304,
            ..Default::default()
        };
        let mut b = [0u8; 172];
        surf.encode_into(&mut b).unwrap();
        assert_eq!(&b[160..162], &[0x02, 0x01]); // offset_u @ 160
        assert_eq!(&b[168..170], &[0x04, 0x03]); // in_line_uv_stride @ 168

        let mut common = CommonOpDesc::default();
        common.consumers[0].index = 0x1234;
        common.fused_parent.event = 0x42;
        let mut b = [0u8; 36];
        common.encode_into(&mut b).unwrap();
        assert_eq!(&b[8..10], &[0x34, 0x12]); // consumers @ 8
        assert_eq!(b[34], 0x42); // fused_parent.event @ 32 + 2

        let net = NetworkDesc {
            op_head: [7, 0, 0, 0, 0, 0],
            input_layer: 0x0506,
            ..Default::default()
        };
        let mut b = [0u8; 40];
        net.encode_into(&mut b).unwrap();
        assert_eq!(b[16], 7); // op_head @ 16
        assert_eq!(&b[36..38], &[0x06, 0x05]); // input_layer @ 36
    }

    #[test]
    fn typed_accessors_and_errors() {
        let mut op = CommonOpDesc {
            op_type: 4,
            ..Default::default()
        };
        assert_eq!(op.op_type(), Ok(OpType::Cdp));
        op.op_type = 9;
        let err = op.op_type().unwrap_err();
        assert_eq!(
            err,
            InvalidValue {
                field: "dla_common_op_desc.op_type",
                value: 9
            }
        );
        #[cfg(feature = "std")]
        assert_eq!(
            err.to_string(),
            "invalid value 9 for dla_common_op_desc.op_type"
        );
        assert_eq!(OpType::try_from(5), Ok(OpType::Rubik));
        assert_eq!(OpType::try_from(6).unwrap_err().field, "dla op type");
        assert_eq!(u8::from(OpType::Sdp), 2);

        for (i, f) in DataFormat::ALL.iter().enumerate() {
            assert_eq!(usize::from(f.raw()), i);
            assert_eq!(DataFormat::try_from(i as u8), Ok(*f));
        }
        assert_eq!(DataFormat::ALL.len(), 37);
        assert!(DataFormat::try_from(37).is_err());
        assert!(!DataFormat::Feature.is_pixel());
        assert!(DataFormat::R8.is_pixel());

        assert_eq!(Event::try_from(0).unwrap_err().value, 0);
        assert_eq!(Event::try_from(5), Ok(Event::CdmaDtDone));
        assert_eq!(MemType::from_raw(2), Ok(MemType::Hw));
        assert_eq!(Precision::Fp16.bytes_per_element(), 2);
        assert_eq!(PoolSize::Size8.elements(), 8);
        assert_eq!(PoolSize::ALL.len(), 8);

        let cube = DataCube {
            mem_type: 0x100,
            ..Default::default()
        };
        assert_eq!(
            cube.mem_type(),
            Err(InvalidValue {
                field: "dla_data_cube.mem_type",
                value: 0x100
            })
        );

        let sdp = SdpOp {
            op_type: 3,
            alu_type: 2,
            mode: 1,
            act: 3,
            precision: 1,
            ..Default::default()
        };
        assert_eq!(sdp.op_type(), Ok(SdpOpType::Both));
        assert_eq!(sdp.alu_type(), Ok(SdpAluType::Sum));
        assert_eq!(sdp.mode(), Ok(SdpOpMode::PerKernel));
        assert_eq!(sdp.act(), Ok(Activation::Prelu));
        assert_eq!(sdp.precision(), Ok(Precision::Int16));

        let mut net = NetworkDesc::default();
        net.op_head[OpType::Pdp.index()] = 3;
        assert_eq!(net.head(OpType::Pdp), 3);

        let mut bdma = BdmaSurfaceDesc {
            num_transfers: 2,
            ..Default::default()
        };
        assert_eq!(bdma.active_transfers().len(), 2);
        bdma.num_transfers = 999;
        assert_eq!(bdma.active_transfers().len(), MAX_BDMA_TRANSFERS);
    }

    #[test]
    fn containers_decode_by_op_type() {
        let list = pattern::<{ 3 * OPERATION_CONTAINER_SIZE }>();
        for op in OpType::ALL {
            let d = OpDesc::decode_slot(*op, &list, 2).unwrap();
            assert_eq!(d.op_type(), *op);
            let start = 2 * OPERATION_CONTAINER_SIZE;
            let mut out = [0u8; OPERATION_CONTAINER_SIZE];
            d.encode_into(&mut out).unwrap();
            let n = d.encoded_size();
            assert_eq!(&out[..n], &list[start..start + n]);
            assert_eq!(OpDesc::decode(*op, &list[start..]).unwrap(), d);
        }
        let err = OpDesc::decode_slot(OpType::Bdma, &list, 3).unwrap_err();
        assert_eq!(err.descriptor, "dla_operation_container");
        assert_eq!((err.needed, err.available), (4 * 116, 3 * 116));
        assert!(OpDesc::decode_slot(OpType::Bdma, &list, usize::MAX).is_err());
        // A member shorter than the slot decodes from a short tail.
        assert!(OpDesc::decode(OpType::Rubik, &[1, 2, 3, 4]).is_ok());
        assert!(OpDesc::decode(OpType::Sdp, &[0; 115]).is_err());

        let surfaces = pattern::<{ 2 * SURFACE_CONTAINER_SIZE }>();
        for op in OpType::ALL {
            let s = SurfaceDesc::decode_slot(*op, &surfaces, 1).unwrap();
            assert_eq!(s.op_type(), *op);
            assert!(s.encoded_size() <= SURFACE_CONTAINER_SIZE);
        }
        let stats = pattern::<{ STAT_CONTAINER_SIZE }>();
        for op in OpType::ALL {
            let s = StatDesc::decode_slot(*op, &stats, 0).unwrap();
            assert_eq!(s.op_type(), *op);
            assert!(s.encoded_size() <= STAT_CONTAINER_SIZE);
        }
        let conv = ConvStatDesc::default();
        assert_eq!(StatDesc::from(conv), StatDesc::Conv(conv));

        let graph = pattern::<{ 2 * 36 }>();
        let second: CommonOpDesc = decode_at(&graph, 1).unwrap();
        assert_eq!(second, CommonOpDesc::decode_from(&graph[36..]).unwrap());
        assert!(decode_at::<CommonOpDesc>(&graph, 2).is_err());
    }

    #[test]
    fn legacy_sizes_and_round_trips() {
        // Measured with g++ on the 2018 header (nvdla/sw 38235bb,
        // kmd/firmware/include/dla_interface.h).
        check::<legacy::DataCube>(28); // 2+2 + 4 + 4*2 + 3*4
        check::<legacy::ConvSurfaceDesc>(152); // 5*28 + 8 + 4
        check::<legacy::SdpSurfaceDesc>(140); // 5*28
        check::<legacy::PdpSurfaceDesc>(56); // 2*28
        check::<legacy::CdpSurfaceDesc>(56);
        check::<legacy::RubikSurfaceDesc>(56);
        assert_eq!(Layout::Legacy.data_cube_size(), 28);
        assert_eq!(Layout::Current.data_cube_size(), 32);
    }

    /// Offsets measured with `offsetof` on the 2018 header.
    #[test]
    fn legacy_field_offsets_match_c() {
        let cube = legacy::DataCube {
            size: 0x0403_0201,
            line_stride: 0x1413_1211,
            plane_stride: 0x2423_2221,
            ..Default::default()
        };
        let mut b = [0u8; 28];
        cube.encode_into(&mut b).unwrap();
        assert_eq!(&b[4..8], &[1, 2, 3, 4]); // size @ 4
        assert_eq!(&b[16..20], &[0x11, 0x12, 0x13, 0x14]); // line_stride @ 16
        assert_eq!(&b[24..28], &[0x21, 0x22, 0x23, 0x24]); // plane_stride @ 24

        let surf = legacy::ConvSurfaceDesc {
            offset_u: 0x0102,
            in_line_uv_stride: 0x0304,
            ..Default::default()
        };
        let mut b = [0u8; 152];
        surf.encode_into(&mut b).unwrap();
        assert_eq!(&b[140..142], &[0x02, 0x01]); // offset_u @ 140
        assert_eq!(&b[148..150], &[0x04, 0x03]); // in_line_uv_stride @ 148
    }

    #[test]
    fn layout_selection_and_conversion() {
        assert_eq!(Layout::for_version(0, 10), Layout::Legacy);
        assert_eq!(Layout::for_version(0, 11), Layout::Legacy);
        assert_eq!(Layout::for_version(0, 12), Layout::Current);
        assert_eq!(Layout::for_version(0, 13), Layout::Current);
        assert_eq!(Layout::for_version(1, 0), Layout::Current);

        // An 8x8x32 int8 cube as NVIDIA's 2018 PDP regression test has it.
        let src = legacy::DataCube {
            mem_type: MemType::Mc.raw().into(),
            address: 4,
            size: 2048,
            width: 8,
            height: 8,
            channel: 32,
            reserved0: 0,
            line_stride: 256,
            surf_stride: 2048,
            plane_stride: 0,
        };
        let old = legacy::PdpSurfaceDesc {
            src_data: src,
            dst_data: legacy::DataCube { address: 5, ..src },
        };
        let mut list = [0u8; 2 * SURFACE_CONTAINER_SIZE];
        old.encode_into(&mut list[SURFACE_CONTAINER_SIZE..])
            .unwrap();
        let cur = SurfaceDesc::decode_slot_layout(Layout::Legacy, OpType::Pdp, &list, 1).unwrap();
        let SurfaceDesc::Pdp(pdp) = cur else {
            panic!("{cur:?}")
        };
        assert_eq!(pdp.src_data.offset, 0);
        assert_eq!(pdp.src_data.size, 2048);
        assert_eq!((pdp.dst_data.address, pdp.dst_data.channel), (5, 32));
        assert_eq!(pdp.src_data.mem_type(), Ok(MemType::Mc));
        assert_eq!(legacy::PdpSurfaceDesc::try_from(pdp), Ok(old));
        // Read with the wrong revision, the same bytes are garbage.
        let wrong = SurfaceDesc::decode_slot(OpType::Pdp, &list, 1).unwrap();
        assert_ne!(wrong, cur);

        // The current layout cannot be narrowed when an offset is in use.
        let mut moved = pdp;
        moved.dst_data.offset = 64;
        assert_eq!(
            legacy::PdpSurfaceDesc::try_from(moved),
            Err(InvalidValue {
                field: "dla_data_cube.offset",
                value: 64
            })
        );

        // Every processor decodes in both layouts; BDMA is the same in both.
        let bytes = pattern::<SURFACE_CONTAINER_SIZE>();
        for op in OpType::ALL {
            let s = SurfaceDesc::decode_layout(Layout::Legacy, *op, &bytes).unwrap();
            assert_eq!(s.op_type(), *op);
        }
        assert_eq!(
            SurfaceDesc::decode_layout(Layout::Legacy, OpType::Bdma, &bytes),
            SurfaceDesc::decode(OpType::Bdma, &bytes)
        );
        assert_eq!(
            SurfaceDesc::decode_layout(Layout::Current, OpType::Conv, &bytes),
            SurfaceDesc::decode(OpType::Conv, &bytes)
        );
        let conv = legacy::ConvSurfaceDesc::decode_from(&bytes).unwrap();
        let back = legacy::ConvSurfaceDesc::try_from(ConvSurfaceDesc::from(conv));
        assert_eq!(back, Ok(conv));
        let sdp = legacy::SdpSurfaceDesc::decode_from(&bytes).unwrap();
        assert_eq!(
            legacy::SdpSurfaceDesc::try_from(SdpSurfaceDesc::from(sdp)),
            Ok(sdp)
        );
    }
}
