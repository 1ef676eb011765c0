//! EMU1 descriptors: the C structures of `emu_interface.h`.
//!
//! EMU1 tasks run on the host CPU (the "emulator" inside the runtime) for the
//! layers the DLA cannot execute, namely power and softmax (NVIDIA's) and
//! log (ONNC's extension, `op_type` 2, see [`OpType::Log`]). Like DLA1 tasks
//! they are described by little-endian C records in memory blobs that the
//! task's address list points at:
//!
//! | Blob (address-list slot)                        | Element                      | Stride |
//! |-------------------------------------------------|------------------------------|--------|
//! | network descriptor (slot 0)                     | [`NetworkDesc`]              | one 256-byte record |
//! | operation list (`operation_desc_index`)         | one of the [`OpDesc`] variants | [`OPERATION_CONTAINER_SIZE`] (24) |
//! | buffer list (`operation_buffer_desc_index`)     | one of the [`OpBufferDescs`] variants | [`OPERATION_BUFFER_CONTAINER_SIZE`] (512) |
//!
//! Operation `i` uses slot `i` of both lists. The slot's variant is given
//! by the `op_type` byte at the start of every operation descriptor (the
//! shared [`CommonOpDesc`]), so [`OpDesc::decode_any`] can pick it without
//! outside information.
//!
//! Unlike the DLA1 header, this one mixes layouts, so padding exists:
//!
//! * [`CommonOpDesc`] is an ordinary (unpacked) struct: `op_type`, three
//!   padding bytes, then two `f32`s at offsets 4 and 8 (12 bytes).
//! * [`PowerOpDesc`] (24 bytes) and [`SoftmaxOpDesc`] (13 bytes of fields,
//!   rounded to 16) are packed with 4-byte alignment.
//! * [`NetworkDesc`] and [`BufferDesc`] are packed but aligned to 256, so
//!   each occupies 256 bytes although its fields take 6 and 26 bytes.
//!   Inside [`BufferDesc`] the fields are packed, so the `u32` after the
//!   leading `i16` sits at the unaligned offset 2.
//!
//! Padding is not kept: decoding skips it and encoding writes zeros (the
//! compiler zero-fills these blobs, so real loadables round-trip exactly).
//!
//! # Two revisions under one version number
//!
//! Loadables from before April 2019 use an older revision of the header
//! ([`legacy`]): no scale factors, no `addressIndexOffset`, a different
//! `format` numbering, and a 16-byte operation-list stride. The emulator
//! version (0.0.1) was not bumped, so [`Layout::from_op_list_len`] tells
//! them apart by the operation list's length, and the `*_layout` decoders
//! convert legacy records into the current types. NVIDIA's `NN_L0_0`
//! regression loadable is legacy; loadables from the last upstream compiler
//! are current.
//!
//! `struct emu_address` and `struct emu_task_desc` from the same header are
//! not modelled: they hold host pointers (`void *hMem`), so their layout
//! depends on the host, and the runtime builds them in its own memory from
//! the loadable's address list; they never appear in a loadable.

use crate::codec::{ByteReader, ByteWriter, DecodeError, Descriptor, EncodeError};
use crate::dla::{container_slot, descriptor, raw_enum, Field, InvalidValue};

/// Maximum address-list entries of an EMU task (`NVDLA_EMU_MAX_BUFFERS_PER_TASK`).
pub const MAX_BUFFERS_PER_TASK: usize = 6144;

/// Stride of the operation list: `sizeof(union emu_operation_container)`,
/// the larger of [`PowerOpDesc`] (24) and [`SoftmaxOpDesc`] (16).
pub const OPERATION_CONTAINER_SIZE: usize = 24;
/// Stride of the buffer list: `sizeof(union emu_operation_buffer_container)`
/// (both members are two 256-byte [`BufferDesc`]s).
pub const OPERATION_BUFFER_CONTAINER_SIZE: usize = 512;

const _: () = assert!(
    OPERATION_CONTAINER_SIZE == PowerOpDesc::SIZE
        && SoftmaxOpDesc::SIZE <= PowerOpDesc::SIZE
        && LogOpDesc::SIZE <= PowerOpDesc::SIZE
);
const _: () = assert!(
    OPERATION_BUFFER_CONTAINER_SIZE == PowerBufferDescs::SIZE
        && OPERATION_BUFFER_CONTAINER_SIZE == SoftmaxBufferDescs::SIZE
        && OPERATION_BUFFER_CONTAINER_SIZE == LogBufferDescs::SIZE
);

raw_enum! {
    /// The kind of an EMU operation (`NVDLA_EMU_OP_*`).
    pub enum OpType = "emu op type" {
        /// `y = (shift + scale * x) ^ power`.
        Power = 0,
        /// Softmax over the channels.
        Softmax = 1,
        /// Natural logarithm, element by element: ONNC's extension of the
        /// emulator (`NVDLA_EMU_OP_LOG` in ONNC's `emu_interface.h` and its
        /// patch of NVIDIA's runtime); NVIDIA's runtime does not know it.
        Log = 2,
    }
}

raw_enum! {
    /// Element format of an EMU buffer (`EMU_FORMAT_*` in the UMD's
    /// `EMUInterface.h`).
    pub enum BufferFormat = "emu buffer format" {
        /// 8-bit integers, 32-byte channel atoms.
        Int8 = 0,
        /// 8-bit integers, 8-byte channel atoms (`EMU_FORMAT_INT8_8`).
        Int8Atom8 = 1,
        /// 16-bit integers.
        Int16 = 2,
        /// IEEE half floats (`EMU_FORMAT_FF16`).
        Fp16 = 3,
        /// Unsigned 8-bit integers.
        Uint8 = 4,
        /// Unsigned 16-bit integers.
        Uint16 = 5,
    }
}

impl BufferFormat {
    /// Bytes per element.
    pub fn bytes_per_element(self) -> u32 {
        match self {
            BufferFormat::Int8 | BufferFormat::Int8Atom8 | BufferFormat::Uint8 => 1,
            BufferFormat::Int16 | BufferFormat::Fp16 | BufferFormat::Uint16 => 2,
        }
    }
}

descriptor! {
    /// `struct emu_network_desc` (256 bytes: 6 bytes of fields, aligned to
    /// 256): the root record of an EMU1 task, at address-list slot 0.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct NetworkDesc = "emu_network_desc", size 256 {
        /// Address-list index of the operation list.
        pub operation_desc_index: i16,
        /// Address-list index of the buffer list.
        pub operation_buffer_desc_index: i16,
        /// Number of operations.
        pub num_operations: u16,
    }
}

/// `struct emu_common_op_desc` (12 bytes, not packed): the header every
/// operation descriptor starts with.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Default,
    zerocopy::FromBytes,
    zerocopy::KnownLayout,
    zerocopy::Immutable,
)]
#[repr(C)]
pub struct CommonOpDesc {
    /// [`OpType`] of the operation.
    pub op_type: u8,
    /// Scale applied to inputs (offset 4, after three padding bytes).
    pub input_scale_factor: f32,
    /// Scale applied to outputs.
    pub output_scale_factor: f32,
}

/// Padding between `op_type` and `input_scale_factor`.
const COMMON_OP_PADDING: usize = 3;

impl Descriptor for CommonOpDesc {
    const NAME: &'static str = "emu_common_op_desc";
    const SIZE: usize = 12;

    fn decode(r: &mut ByteReader<'_>) -> Self {
        let op_type = r.u8();
        r.skip(COMMON_OP_PADDING);
        Self {
            op_type,
            input_scale_factor: r.f32(),
            output_scale_factor: r.f32(),
        }
    }

    fn encode(&self, w: &mut ByteWriter<'_>) {
        w.u8(self.op_type);
        w.zeros(COMMON_OP_PADDING);
        w.f32(self.input_scale_factor);
        w.f32(self.output_scale_factor);
    }
}

impl Field for CommonOpDesc {
    const LEN: usize = 12;
    fn read(r: &mut ByteReader<'_>) -> Self {
        Self::decode(r)
    }
    fn write(&self, w: &mut ByteWriter<'_>) {
        self.encode(w)
    }
}

impl CommonOpDesc {
    /// `op_type` as an [`OpType`].
    pub fn op_type(&self) -> Result<OpType, InvalidValue> {
        OpType::from_raw(u32::from(self.op_type))
            .map_err(|e| e.in_field("emu_common_op_desc.op_type"))
    }
}

descriptor! {
    /// `struct emu_power_op_desc` (24 bytes): `y = (shift + scale * x) ^ power`.
    #[derive(Debug, Clone, Copy, PartialEq, Default)]
    pub struct PowerOpDesc = "emu_power_op_desc", size 24 {
        /// Common header (`op_type` = [`OpType::Power`]).
        pub common: CommonOpDesc,
        /// Exponent.
        pub power: f32,
        /// Input multiplier.
        pub scale: f32,
        /// Input offset.
        pub shift: f32,
    }
}

descriptor! {
    /// `struct emu_softmax_op_desc` (16 bytes: 13 bytes of fields, aligned
    /// to 4).
    #[derive(Debug, Clone, Copy, PartialEq, Default)]
    pub struct SoftmaxOpDesc = "emu_softmax_op_desc", size 16 {
        /// Common header (`op_type` = [`OpType::Softmax`]).
        pub common: CommonOpDesc,
        /// Axis to normalise over.
        pub axis: u8,
    }
}

descriptor! {
    /// `struct emu_log_op_desc` (12 bytes: the common header only), ONNC's
    /// extension; the current-layout counterpart of [`legacy::LogOpDesc`].
    #[derive(Debug, Clone, Copy, PartialEq, Default)]
    pub struct LogOpDesc = "emu_log_op_desc", size 12 {
        /// Common header (`op_type` = [`OpType::Log`]).
        pub common: CommonOpDesc,
    }
}

descriptor! {
    /// `struct emu_buffer_desc` (256 bytes: 26 bytes of packed fields,
    /// aligned to 256): one input or output surface.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct BufferDesc = "emu_buffer_desc", size 256 {
        /// Address-list index of the memory (C `addressIndex`).
        pub address_index: i16,
        /// Byte offset within that memory (C `addressIndexOffset`; at the
        /// unaligned offset 2).
        pub address_index_offset: u32,
        /// Size in bytes.
        pub size: u32,
        /// [`BufferFormat`].
        pub format: u16,
        /// Width in elements.
        pub width: u16,
        /// Height in elements.
        pub height: u16,
        /// Channels.
        pub channel: u16,
        /// Line stride in bytes.
        pub line_stride: u32,
        /// Surface stride in bytes.
        pub surf_stride: u32,
    }
}

impl BufferDesc {
    /// `format` as a [`BufferFormat`].
    pub fn format(&self) -> Result<BufferFormat, InvalidValue> {
        BufferFormat::from_raw(u32::from(self.format))
            .map_err(|e| e.in_field("emu_buffer_desc.format"))
    }
}

descriptor! {
    /// `struct emu_power_buffer_descs` (512 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct PowerBufferDescs = "emu_power_buffer_descs", size 512 {
        /// Input.
        pub src_data: BufferDesc,
        /// Output (offset 256).
        pub dst_data: BufferDesc,
    }
}

descriptor! {
    /// `struct emu_softmax_buffer_descs` (512 bytes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct SoftmaxBufferDescs = "emu_softmax_buffer_descs", size 512 {
        /// Input.
        pub src_data: BufferDesc,
        /// Output (offset 256).
        pub dst_data: BufferDesc,
    }
}

descriptor! {
    /// `struct emu_log_buffer_descs` (512 bytes), ONNC's extension.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct LogBufferDescs = "emu_log_buffer_descs", size 512 {
        /// Input.
        pub src_data: BufferDesc,
        /// Output (offset 256).
        pub dst_data: BufferDesc,
    }
}

/// A member of `union emu_operation_container`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OpDesc {
    /// Power.
    Power(PowerOpDesc),
    /// Softmax.
    Softmax(SoftmaxOpDesc),
    /// Log (ONNC).
    Log(LogOpDesc),
}

impl OpDesc {
    /// Decode the member for `op_type` from the start of `bytes` (which
    /// needs to hold only that member).
    pub fn decode(op_type: OpType, bytes: &[u8]) -> Result<Self, DecodeError> {
        Ok(match op_type {
            OpType::Power => Self::Power(PowerOpDesc::decode_from(bytes)?),
            OpType::Softmax => Self::Softmax(SoftmaxOpDesc::decode_from(bytes)?),
            OpType::Log => Self::Log(LogOpDesc::decode_from(bytes)?),
        })
    }

    /// Decode the member named by the leading `op_type` byte (as the runtime
    /// does); an unknown byte is reported as [`EmuDecodeError::Invalid`].
    pub fn decode_any(bytes: &[u8]) -> Result<Self, EmuDecodeError> {
        let common = CommonOpDesc::decode_from(bytes)?;
        let op_type = common.op_type()?;
        Ok(Self::decode(op_type, bytes)?)
    }

    /// Decode slot `index` of an operation list (stride
    /// [`OPERATION_CONTAINER_SIZE`]), choosing the member by its `op_type`.
    pub fn decode_slot(list: &[u8], index: usize) -> Result<Self, EmuDecodeError> {
        let slot = container_slot(
            list,
            OPERATION_CONTAINER_SIZE,
            index,
            "emu_operation_container",
        )?;
        Self::decode_any(slot)
    }

    /// The operation kind of this variant.
    pub fn op_type(&self) -> OpType {
        match self {
            Self::Power(_) => OpType::Power,
            Self::Softmax(_) => OpType::Softmax,
            Self::Log(_) => OpType::Log,
        }
    }

    /// The shared header.
    pub fn common(&self) -> &CommonOpDesc {
        match self {
            Self::Power(d) => &d.common,
            Self::Softmax(d) => &d.common,
            Self::Log(d) => &d.common,
        }
    }

    /// Size of the member itself (at most [`OPERATION_CONTAINER_SIZE`]).
    pub fn encoded_size(&self) -> usize {
        match self {
            Self::Power(_) => PowerOpDesc::SIZE,
            Self::Softmax(_) => SoftmaxOpDesc::SIZE,
            Self::Log(_) => LogOpDesc::SIZE,
        }
    }

    /// Encode the member into the start of `out`.
    pub fn encode_into(&self, out: &mut [u8]) -> Result<(), EncodeError> {
        match self {
            Self::Power(d) => d.encode_into(out),
            Self::Softmax(d) => d.encode_into(out),
            Self::Log(d) => d.encode_into(out),
        }
    }
}

impl From<PowerOpDesc> for OpDesc {
    fn from(d: PowerOpDesc) -> Self {
        Self::Power(d)
    }
}

impl From<SoftmaxOpDesc> for OpDesc {
    fn from(d: SoftmaxOpDesc) -> Self {
        Self::Softmax(d)
    }
}

impl From<LogOpDesc> for OpDesc {
    fn from(d: LogOpDesc) -> Self {
        Self::Log(d)
    }
}

/// A member of `union emu_operation_buffer_container`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpBufferDescs {
    /// Power.
    Power(PowerBufferDescs),
    /// Softmax.
    Softmax(SoftmaxBufferDescs),
    /// Log (ONNC).
    Log(LogBufferDescs),
}

impl OpBufferDescs {
    /// Decode the member for `op_type` from the start of `bytes`.
    pub fn decode(op_type: OpType, bytes: &[u8]) -> Result<Self, DecodeError> {
        Ok(match op_type {
            OpType::Power => Self::Power(PowerBufferDescs::decode_from(bytes)?),
            OpType::Softmax => Self::Softmax(SoftmaxBufferDescs::decode_from(bytes)?),
            OpType::Log => Self::Log(LogBufferDescs::decode_from(bytes)?),
        })
    }

    /// Decode slot `index` of a buffer list (stride
    /// [`OPERATION_BUFFER_CONTAINER_SIZE`]) for an operation of `op_type`.
    pub fn decode_slot(op_type: OpType, list: &[u8], index: usize) -> Result<Self, DecodeError> {
        let slot = container_slot(
            list,
            OPERATION_BUFFER_CONTAINER_SIZE,
            index,
            "emu_operation_buffer_container",
        )?;
        Self::decode(op_type, slot)
    }

    /// The operation kind of this variant.
    pub fn op_type(&self) -> OpType {
        match self {
            Self::Power(_) => OpType::Power,
            Self::Softmax(_) => OpType::Softmax,
            Self::Log(_) => OpType::Log,
        }
    }

    /// Input surface.
    pub fn src_data(&self) -> &BufferDesc {
        match self {
            Self::Power(d) => &d.src_data,
            Self::Softmax(d) => &d.src_data,
            Self::Log(d) => &d.src_data,
        }
    }

    /// Output surface.
    pub fn dst_data(&self) -> &BufferDesc {
        match self {
            Self::Power(d) => &d.dst_data,
            Self::Softmax(d) => &d.dst_data,
            Self::Log(d) => &d.dst_data,
        }
    }

    /// Encode the member into the start of `out` (512 bytes).
    pub fn encode_into(&self, out: &mut [u8]) -> Result<(), EncodeError> {
        match self {
            Self::Power(d) => d.encode_into(out),
            Self::Softmax(d) => d.encode_into(out),
            Self::Log(d) => d.encode_into(out),
        }
    }
}

/// Why an EMU descriptor could not be decoded: too few bytes, or a value
/// (`op_type`, a legacy `format`) that decides how to read or convert it is
/// undefined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmuDecodeError {
    /// The bytes ran out.
    Decode(DecodeError),
    /// An `op_type` (or legacy `format`) names nothing.
    Invalid(InvalidValue),
}

impl From<DecodeError> for EmuDecodeError {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

impl From<InvalidValue> for EmuDecodeError {
    fn from(e: InvalidValue) -> Self {
        Self::Invalid(e)
    }
}

impl core::fmt::Display for EmuDecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Decode(e) => e.fmt(f),
            Self::Invalid(e) => e.fmt(f),
        }
    }
}

// ---------------------------------------------------------------------------
// Interface revisions.
// ---------------------------------------------------------------------------

/// Which revision of `emu_interface.h` an EMU1 blob was written against.
///
/// In April 2019 (INT8 support) the header gained the two scale factors of
/// [`CommonOpDesc`] and `addressIndexOffset` in [`BufferDesc`], but the
/// emulator version stayed 0.0.1, so blob versions cannot tell the two
/// apart. The operation list can: the compiler sizes it as exactly
/// `num_operations` slots, 16 bytes each before the change and 24 after
/// ([`Layout::from_op_list_len`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Before the INT8 change (see [`legacy`]).
    Legacy,
    /// The current header.
    Current,
}

impl Layout {
    /// Stride of the operation list in this layout.
    pub fn operation_container_size(self) -> usize {
        match self {
            Layout::Legacy => legacy::OPERATION_CONTAINER_SIZE,
            Layout::Current => OPERATION_CONTAINER_SIZE,
        }
    }

    /// The layout whose operation list of `num_operations` slots is exactly
    /// `op_list_len` bytes long, if any.
    pub fn from_op_list_len(op_list_len: usize, num_operations: u16) -> Option<Self> {
        let n = usize::from(num_operations);
        if n == 0 {
            None
        } else if op_list_len == n * OPERATION_CONTAINER_SIZE {
            Some(Layout::Current)
        } else if op_list_len == n * legacy::OPERATION_CONTAINER_SIZE {
            Some(Layout::Legacy)
        } else {
            None
        }
    }
}

impl OpDesc {
    /// Like [`OpDesc::decode_any`], for a blob in the given `layout`.
    ///
    /// Legacy descriptors are converted to the current types with both
    /// scale factors 1.0 (the emulator only applies them to INT8 data).
    pub fn decode_any_layout(layout: Layout, bytes: &[u8]) -> Result<Self, EmuDecodeError> {
        if layout == Layout::Current {
            return Self::decode_any(bytes);
        }
        let common = legacy::CommonOpDesc::decode_from(bytes)?;
        let op_type = OpType::from_raw(u32::from(common.op_type))
            .map_err(|e| e.in_field("emu_common_op_desc.op_type"))?;
        Ok(match op_type {
            OpType::Power => Self::Power(legacy::PowerOpDesc::decode_from(bytes)?.into()),
            OpType::Softmax => Self::Softmax(legacy::SoftmaxOpDesc::decode_from(bytes)?.into()),
            OpType::Log => Self::Log(legacy::LogOpDesc::decode_from(bytes)?.into()),
        })
    }

    /// Like [`OpDesc::decode_slot`], for a blob in the given `layout` (and
    /// that layout's stride).
    pub fn decode_slot_layout(
        layout: Layout,
        list: &[u8],
        index: usize,
    ) -> Result<Self, EmuDecodeError> {
        let slot = container_slot(
            list,
            layout.operation_container_size(),
            index,
            "emu_operation_container",
        )?;
        Self::decode_any_layout(layout, slot)
    }
}

impl OpBufferDescs {
    /// Like [`OpBufferDescs::decode`], for a blob in the given `layout`.
    ///
    /// Legacy buffers get `address_index_offset` 0 and their `format`
    /// renumbered (see [`legacy::FORMAT_FP16`]); a legacy format without a
    /// current equivalent is an [`EmuDecodeError::Invalid`].
    pub fn decode_layout(
        layout: Layout,
        op_type: OpType,
        bytes: &[u8],
    ) -> Result<Self, EmuDecodeError> {
        if layout == Layout::Current {
            return Ok(Self::decode(op_type, bytes)?);
        }
        Ok(match op_type {
            OpType::Power => Self::Power(legacy::PowerBufferDescs::decode_from(bytes)?.try_into()?),
            OpType::Softmax => {
                Self::Softmax(legacy::SoftmaxBufferDescs::decode_from(bytes)?.try_into()?)
            }
            OpType::Log => Self::Log(legacy::LogBufferDescs::decode_from(bytes)?.try_into()?),
        })
    }

    /// Like [`OpBufferDescs::decode_slot`], for a blob in the given
    /// `layout` (the stride is 512 bytes in both).
    pub fn decode_slot_layout(
        layout: Layout,
        op_type: OpType,
        list: &[u8],
        index: usize,
    ) -> Result<Self, EmuDecodeError> {
        let slot = container_slot(
            list,
            OPERATION_BUFFER_CONTAINER_SIZE,
            index,
            "emu_operation_buffer_container",
        )?;
        Self::decode_layout(layout, op_type, slot)
    }
}

/// Descriptors of the pre-INT8 interface ([`Layout::Legacy`]).
///
/// The network descriptor and the buffer-list stride are unchanged. The
/// common header is a lone `op_type` byte, so the power parameters start at
/// the unaligned offset 1; buffer descriptors lack `addressIndexOffset`, and
/// their `format` uses an older numbering ([`legacy::FORMAT_FP16`]).
///
/// Operation descriptors convert into the current types with scale factors
/// 1.0; buffer descriptors with offset 0 and FP16 renumbered (other legacy
/// formats have no defined meaning and fail). The reverse conversions fail
/// unless those values are neutral.
pub mod legacy {
    use crate::dla::descriptor;

    use super::{
        BufferDesc as CurBuffer, BufferFormat, CommonOpDesc as CurCommon, InvalidValue,
        LogBufferDescs as CurLogBuffers, LogOpDesc as CurLog, PowerBufferDescs as CurPowerBuffers,
        PowerOpDesc as CurPower, SoftmaxBufferDescs as CurSoftmaxBuffers,
        SoftmaxOpDesc as CurSoftmax,
    };

    /// The legacy `format` value for FP16 data (16 channels per 32-byte
    /// atom), the only format the legacy emulator accepts. The current
    /// numbering ([`BufferFormat`]) puts FP16 at 3 and uses 2 for INT16.
    pub const FORMAT_FP16: u16 = 2;

    /// Stride of a legacy operation list: the legacy [`PowerOpDesc`] (13
    /// bytes of fields, aligned to 4).
    pub const OPERATION_CONTAINER_SIZE: usize = 16;

    descriptor! {
        /// Pre-INT8 `struct emu_common_op_desc` (1 byte).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct CommonOpDesc = "emu_common_op_desc (legacy)", size 1 {
            /// [`OpType`](super::OpType) of the operation.
            pub op_type: u8,
        }
    }

    descriptor! {
        /// Pre-INT8 `struct emu_power_op_desc` (16 bytes: 13 of fields).
        #[derive(Debug, Clone, Copy, PartialEq, Default)]
        pub struct PowerOpDesc = "emu_power_op_desc (legacy)", size 16 {
            /// Common header.
            pub common: CommonOpDesc,
            /// Exponent (offset 1).
            pub power: f32,
            /// Input multiplier.
            pub scale: f32,
            /// Input offset.
            pub shift: f32,
        }
    }

    descriptor! {
        /// Pre-INT8 `struct emu_softmax_op_desc` (4 bytes: 2 of fields).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct SoftmaxOpDesc = "emu_softmax_op_desc (legacy)", size 4 {
            /// Common header.
            pub common: CommonOpDesc,
            /// Axis to normalise over.
            pub axis: u8,
        }
    }

    descriptor! {
        /// ONNC's `struct emu_log_op_desc` (4 bytes: the `op_type` byte,
        /// aligned to 4), written by ONNC in this layout.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct LogOpDesc = "emu_log_op_desc (legacy)", size 4 {
            /// Common header.
            pub common: CommonOpDesc,
        }
    }

    descriptor! {
        /// Pre-INT8 `struct emu_buffer_desc` (256 bytes: 22 of fields).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct BufferDesc = "emu_buffer_desc (legacy)", size 256 {
            /// Address-list index of the memory.
            pub address_index: i16,
            /// Size in bytes (offset 2).
            pub size: u32,
            /// [`BufferFormat`].
            pub format: u16,
            /// Width in elements.
            pub width: u16,
            /// Height in elements.
            pub height: u16,
            /// Channels.
            pub channel: u16,
            /// Line stride in bytes.
            pub line_stride: u32,
            /// Surface stride in bytes.
            pub surf_stride: u32,
        }
    }

    descriptor! {
        /// Pre-INT8 `struct emu_power_buffer_descs` (512 bytes).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct PowerBufferDescs = "emu_power_buffer_descs (legacy)", size 512 {
            /// Input.
            pub src_data: BufferDesc,
            /// Output (offset 256).
            pub dst_data: BufferDesc,
        }
    }

    descriptor! {
        /// Pre-INT8 `struct emu_softmax_buffer_descs` (512 bytes).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct SoftmaxBufferDescs = "emu_softmax_buffer_descs (legacy)", size 512 {
            /// Input.
            pub src_data: BufferDesc,
            /// Output (offset 256).
            pub dst_data: BufferDesc,
        }
    }

    descriptor! {
        /// ONNC's `struct emu_log_buffer_descs` (512 bytes).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct LogBufferDescs = "emu_log_buffer_descs (legacy)", size 512 {
            /// Input.
            pub src_data: BufferDesc,
            /// Output (offset 256).
            pub dst_data: BufferDesc,
        }
    }

    fn common_from(c: CommonOpDesc) -> CurCommon {
        CurCommon {
            op_type: c.op_type,
            input_scale_factor: 1.0,
            output_scale_factor: 1.0,
        }
    }

    fn common_to(c: CurCommon) -> Result<CommonOpDesc, InvalidValue> {
        for (field, v) in [
            (
                "emu_common_op_desc.input_scale_factor",
                c.input_scale_factor,
            ),
            (
                "emu_common_op_desc.output_scale_factor",
                c.output_scale_factor,
            ),
        ] {
            if v.to_bits() != 1.0f32.to_bits() {
                return Err(InvalidValue {
                    field,
                    value: v.to_bits(),
                });
            }
        }
        Ok(CommonOpDesc { op_type: c.op_type })
    }

    impl From<PowerOpDesc> for CurPower {
        fn from(d: PowerOpDesc) -> Self {
            CurPower {
                common: common_from(d.common),
                power: d.power,
                scale: d.scale,
                shift: d.shift,
            }
        }
    }

    impl TryFrom<CurPower> for PowerOpDesc {
        type Error = InvalidValue;
        /// Fails unless both scale factors are exactly 1.0.
        fn try_from(d: CurPower) -> Result<Self, InvalidValue> {
            Ok(PowerOpDesc {
                common: common_to(d.common)?,
                power: d.power,
                scale: d.scale,
                shift: d.shift,
            })
        }
    }

    impl From<SoftmaxOpDesc> for CurSoftmax {
        fn from(d: SoftmaxOpDesc) -> Self {
            CurSoftmax {
                common: common_from(d.common),
                axis: d.axis,
            }
        }
    }

    impl TryFrom<CurSoftmax> for SoftmaxOpDesc {
        type Error = InvalidValue;
        /// Fails unless both scale factors are exactly 1.0.
        fn try_from(d: CurSoftmax) -> Result<Self, InvalidValue> {
            Ok(SoftmaxOpDesc {
                common: common_to(d.common)?,
                axis: d.axis,
            })
        }
    }

    impl From<LogOpDesc> for CurLog {
        fn from(d: LogOpDesc) -> Self {
            CurLog {
                common: common_from(d.common),
            }
        }
    }

    impl TryFrom<CurLog> for LogOpDesc {
        type Error = InvalidValue;
        /// Fails unless both scale factors are exactly 1.0.
        fn try_from(d: CurLog) -> Result<Self, InvalidValue> {
            Ok(LogOpDesc {
                common: common_to(d.common)?,
            })
        }
    }

    impl BufferDesc {
        /// `format` in the legacy numbering, as a current [`BufferFormat`].
        pub fn format(&self) -> Result<BufferFormat, InvalidValue> {
            if self.format == FORMAT_FP16 {
                Ok(BufferFormat::Fp16)
            } else {
                Err(InvalidValue {
                    field: "emu_buffer_desc.format (legacy)",
                    value: u32::from(self.format),
                })
            }
        }
    }

    impl TryFrom<BufferDesc> for CurBuffer {
        type Error = InvalidValue;
        /// Renumbers `format` (fails for anything but [`FORMAT_FP16`]).
        fn try_from(b: BufferDesc) -> Result<Self, InvalidValue> {
            Ok(CurBuffer {
                address_index: b.address_index,
                address_index_offset: 0,
                size: b.size,
                format: u16::from(b.format()?.raw()),
                width: b.width,
                height: b.height,
                channel: b.channel,
                line_stride: b.line_stride,
                surf_stride: b.surf_stride,
            })
        }
    }

    impl TryFrom<CurBuffer> for BufferDesc {
        type Error = InvalidValue;
        /// Fails unless `address_index_offset` is 0 and the format is FP16.
        fn try_from(b: CurBuffer) -> Result<Self, InvalidValue> {
            if b.address_index_offset != 0 {
                return Err(InvalidValue {
                    field: "emu_buffer_desc.addressIndexOffset",
                    value: b.address_index_offset,
                });
            }
            if b.format()? != BufferFormat::Fp16 {
                return Err(InvalidValue {
                    field: "emu_buffer_desc.format",
                    value: u32::from(b.format),
                });
            }
            Ok(BufferDesc {
                address_index: b.address_index,
                size: b.size,
                format: FORMAT_FP16,
                width: b.width,
                height: b.height,
                channel: b.channel,
                line_stride: b.line_stride,
                surf_stride: b.surf_stride,
            })
        }
    }

    impl TryFrom<PowerBufferDescs> for CurPowerBuffers {
        type Error = InvalidValue;
        fn try_from(d: PowerBufferDescs) -> Result<Self, InvalidValue> {
            Ok(CurPowerBuffers {
                src_data: d.src_data.try_into()?,
                dst_data: d.dst_data.try_into()?,
            })
        }
    }

    impl TryFrom<CurPowerBuffers> for PowerBufferDescs {
        type Error = InvalidValue;
        fn try_from(d: CurPowerBuffers) -> Result<Self, InvalidValue> {
            Ok(PowerBufferDescs {
                src_data: d.src_data.try_into()?,
                dst_data: d.dst_data.try_into()?,
            })
        }
    }

    impl TryFrom<SoftmaxBufferDescs> for CurSoftmaxBuffers {
        type Error = InvalidValue;
        fn try_from(d: SoftmaxBufferDescs) -> Result<Self, InvalidValue> {
            Ok(CurSoftmaxBuffers {
                src_data: d.src_data.try_into()?,
                dst_data: d.dst_data.try_into()?,
            })
        }
    }

    impl TryFrom<CurSoftmaxBuffers> for SoftmaxBufferDescs {
        type Error = InvalidValue;
        fn try_from(d: CurSoftmaxBuffers) -> Result<Self, InvalidValue> {
            Ok(SoftmaxBufferDescs {
                src_data: d.src_data.try_into()?,
                dst_data: d.dst_data.try_into()?,
            })
        }
    }

    impl TryFrom<LogBufferDescs> for CurLogBuffers {
        type Error = InvalidValue;
        fn try_from(d: LogBufferDescs) -> Result<Self, InvalidValue> {
            Ok(CurLogBuffers {
                src_data: d.src_data.try_into()?,
                dst_data: d.dst_data.try_into()?,
            })
        }
    }

    impl TryFrom<CurLogBuffers> for LogBufferDescs {
        type Error = InvalidValue;
        fn try_from(d: CurLogBuffers) -> Result<Self, InvalidValue> {
            Ok(LogBufferDescs {
                src_data: d.src_data.try_into()?,
                dst_data: d.dst_data.try_into()?,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Debug;

    fn pattern<const N: usize>() -> [u8; N] {
        let mut out = [0u8; N];
        for (i, b) in out.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(11);
        }
        out
    }

    /// `SIZE` matches C; decode/encode reproduces every byte outside
    /// `padding` (half-open byte ranges the encoder zeroes); short inputs fail.
    ///
    /// `same` compares two decodes (f32 fields are compared by bits, since
    /// a pattern can decode to NaN).
    fn check<D: Descriptor + Debug>(
        c_sizeof: usize,
        padding: &[(usize, usize)],
        same: fn(&D, &D) -> bool,
    ) {
        assert_eq!(D::SIZE, c_sizeof, "{}", D::NAME);
        let bytes = pattern::<1024>();
        let input = &bytes[..D::SIZE];
        let decoded = D::decode_from(input).unwrap();
        let mut out = [0u8; 1024];
        decoded.encode_into(&mut out[..D::SIZE]).unwrap();
        let mut expected = [0u8; 1024];
        expected[..D::SIZE].copy_from_slice(input);
        for &(start, end) in padding {
            expected[start..end].fill(0);
        }
        assert_eq!(&out[..D::SIZE], &expected[..D::SIZE], "{}", D::NAME);
        assert!(same(&D::decode_from(&out[..D::SIZE]).unwrap(), &decoded));

        let err = D::decode_from(&input[..D::SIZE - 1]).unwrap_err();
        assert_eq!((err.needed, err.available), (D::SIZE, D::SIZE - 1));
        assert_eq!(err.descriptor, D::NAME);
        assert!(decoded.encode_into(&mut out[..D::SIZE - 1]).is_err());
    }

    fn common_bits(c: &CommonOpDesc) -> (u8, u32, u32) {
        (
            c.op_type,
            c.input_scale_factor.to_bits(),
            c.output_scale_factor.to_bits(),
        )
    }

    // Expected sizes were measured with g++ (x86-64) on the upstream header.
    #[test]
    fn sizes_and_round_trips() {
        // emu_network_desc: 3*2 bytes of fields, aligned(256) -> 256
        check::<NetworkDesc>(256, &[(6, 256)], |a, b| a == b);
        // emu_common_op_desc: 1 + 3 padding + 2*4 = 12
        check::<CommonOpDesc>(12, &[(1, 4)], |a, b| common_bits(a) == common_bits(b));
        // emu_power_op_desc: 12 + 3*4 = 24
        check::<PowerOpDesc>(24, &[(1, 4)], |a, b| {
            common_bits(&a.common) == common_bits(&b.common)
                && [a.power, a.scale, a.shift].map(f32::to_bits)
                    == [b.power, b.scale, b.shift].map(f32::to_bits)
        });
        // emu_softmax_op_desc: 12 + 1 = 13, aligned(4) -> 16
        check::<SoftmaxOpDesc>(16, &[(1, 4), (13, 16)], |a, b| {
            common_bits(&a.common) == common_bits(&b.common) && a.axis == b.axis
        });
        // emu_buffer_desc: 2+4+4+2+2+2+2+4+4 = 26, aligned(256) -> 256
        check::<BufferDesc>(256, &[(26, 256)], |a, b| a == b);
        // emu_power_buffer_descs / emu_softmax_buffer_descs: 2*256
        check::<PowerBufferDescs>(512, &[(26, 256), (282, 512)], |a, b| a == b);
        check::<SoftmaxBufferDescs>(512, &[(26, 256), (282, 512)], |a, b| a == b);
        // ONNC's emu_log_op_desc: the 12-byte header alone; buffers as softmax.
        check::<LogOpDesc>(12, &[(1, 4)], |a, b| {
            common_bits(&a.common) == common_bits(&b.common)
        });
        check::<LogBufferDescs>(512, &[(26, 256), (282, 512)], |a, b| a == b);
    }

    #[test]
    fn container_strides_match_c() {
        // sizeof(union emu_operation_container) and
        // sizeof(union emu_operation_buffer_container), measured with g++.
        assert_eq!(OPERATION_CONTAINER_SIZE, 24);
        assert_eq!(OPERATION_BUFFER_CONTAINER_SIZE, 512);
    }

    /// Byte offsets measured with `offsetof` in the C test program.
    #[test]
    fn field_offsets_match_c() {
        let buf = BufferDesc {
            address_index: -1,
            address_index_offset: 0x0403_0201,
            size: 0x0807_0605,
            format: BufferFormat::Fp16.raw().into(),
            line_stride: 0x1312_1110,
            surf_stride: 0x1716_1514,
            ..Default::default()
        };
        let mut b = [0u8; 256];
        buf.encode_into(&mut b).unwrap();
        assert_eq!(&b[0..2], &[0xff, 0xff]);
        assert_eq!(&b[2..6], &[1, 2, 3, 4]); // addressIndexOffset @ 2
        assert_eq!(&b[6..10], &[5, 6, 7, 8]); // size @ 6
        assert_eq!(&b[10..12], &[3, 0]); // format @ 10
        assert_eq!(&b[18..22], &[0x10, 0x11, 0x12, 0x13]); // line_stride @ 18
        assert_eq!(&b[22..26], &[0x14, 0x15, 0x16, 0x17]); // surf_stride @ 22
        assert_eq!(
            BufferDesc::decode_from(&b).unwrap().format(),
            Ok(BufferFormat::Fp16)
        );

        let power = PowerOpDesc {
            common: CommonOpDesc {
                op_type: 0,
                input_scale_factor: 1.0,
                output_scale_factor: 2.0,
            },
            power: 3.0,
            scale: 0.5,
            shift: -1.0,
        };
        let mut b = [0u8; 24];
        power.encode_into(&mut b).unwrap();
        assert_eq!(&b[4..8], &1.0f32.to_le_bytes()); // input_scale_factor @ 4
        assert_eq!(&b[8..12], &2.0f32.to_le_bytes());
        assert_eq!(&b[12..16], &3.0f32.to_le_bytes()); // power @ 12
        assert_eq!(&b[20..24], &(-1.0f32).to_le_bytes());
        assert_eq!(PowerOpDesc::decode_from(&b).unwrap(), power);

        let softmax = SoftmaxOpDesc {
            common: CommonOpDesc {
                op_type: 1,
                ..Default::default()
            },
            axis: 0x5a,
        };
        let mut b = [0xffu8; 16];
        softmax.encode_into(&mut b).unwrap();
        assert_eq!(b[12], 0x5a); // axis @ 12
        assert_eq!(&b[13..16], &[0, 0, 0]);

        let net = NetworkDesc {
            operation_desc_index: 1,
            operation_buffer_desc_index: 2,
            num_operations: 0x0304,
        };
        let mut b = [0u8; 256];
        net.encode_into(&mut b).unwrap();
        assert_eq!(&b[..6], &[1, 0, 2, 0, 4, 3]); // num_operations @ 4

        let descs = PowerBufferDescs {
            dst_data: BufferDesc {
                address_index: 0x0102,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut b = [0u8; 512];
        descs.encode_into(&mut b).unwrap();
        assert_eq!(&b[256..258], &[2, 1]); // dst_data @ 256
    }

    #[test]
    fn ops_decode_by_op_type() {
        let power = PowerOpDesc {
            common: CommonOpDesc {
                op_type: OpType::Power.raw(),
                input_scale_factor: 1.5,
                output_scale_factor: 0.25,
            },
            power: 2.0,
            scale: 1.0,
            shift: 0.0,
        };
        let softmax = SoftmaxOpDesc {
            common: CommonOpDesc {
                op_type: OpType::Softmax.raw(),
                input_scale_factor: 1.0,
                output_scale_factor: 1.0,
            },
            axis: 2,
        };
        let mut list = [0u8; 2 * OPERATION_CONTAINER_SIZE];
        OpDesc::from(power).encode_into(&mut list).unwrap();
        OpDesc::from(softmax)
            .encode_into(&mut list[OPERATION_CONTAINER_SIZE..])
            .unwrap();

        let first = OpDesc::decode_slot(&list, 0).unwrap();
        assert_eq!(first, OpDesc::Power(power));
        assert_eq!(first.op_type(), OpType::Power);
        assert_eq!(first.common().op_type(), Ok(OpType::Power));
        assert_eq!(first.encoded_size(), 24);
        let second = OpDesc::decode_slot(&list, 1).unwrap();
        assert_eq!(second, OpDesc::Softmax(softmax));
        assert_eq!(second.encoded_size(), 16);
        assert_eq!(
            OpDesc::decode(OpType::Softmax, &list[24..]).unwrap(),
            second
        );

        match OpDesc::decode_slot(&list, 2) {
            Err(EmuDecodeError::Decode(e)) => {
                assert_eq!(e.descriptor, "emu_operation_container");
                assert_eq!((e.needed, e.available), (72, 48));
            }
            other => panic!("{other:?}"),
        }
        list[0] = 7;
        assert_eq!(
            OpDesc::decode_slot(&list, 0),
            Err(EmuDecodeError::Invalid(InvalidValue {
                field: "emu_common_op_desc.op_type",
                value: 7
            }))
        );
        assert_eq!(OpType::try_from(2), Ok(OpType::Log));
        assert!(OpType::try_from(3).is_err());
        assert_eq!(u8::from(OpType::Softmax), 1);

        let buffers = pattern::<{ 2 * OPERATION_BUFFER_CONTAINER_SIZE }>();
        let b = OpBufferDescs::decode_slot(OpType::Softmax, &buffers, 1).unwrap();
        assert_eq!(b.op_type(), OpType::Softmax);
        assert_eq!(
            *b.src_data(),
            BufferDesc::decode_from(&buffers[512..]).unwrap()
        );
        assert_eq!(
            *b.dst_data(),
            BufferDesc::decode_from(&buffers[768..]).unwrap()
        );
        assert!(OpBufferDescs::decode_slot(OpType::Power, &buffers, 2).is_err());
        let mut out = [0u8; 512];
        b.encode_into(&mut out).unwrap();
        assert_eq!(&out[..26], &buffers[512..538]);
        assert_eq!(BufferFormat::Int8Atom8.bytes_per_element(), 1);
        assert_eq!(BufferFormat::ALL.len(), 6);
    }

    #[test]
    fn legacy_sizes_and_round_trips() {
        // Measured with g++ on the 2018 header (nvdla/sw 38235bb,
        // umd/core/common/include/priv/emu/emu1/A/emu_interface.h).
        // emu_common_op_desc: 1 (op_type only, unpacked)
        check::<legacy::CommonOpDesc>(1, &[], |a, b| a == b);
        // emu_power_op_desc: 1 + 3*4 = 13, aligned(4) -> 16
        check::<legacy::PowerOpDesc>(16, &[(13, 16)], |a, b| {
            a.common == b.common
                && [a.power, a.scale, a.shift].map(f32::to_bits)
                    == [b.power, b.scale, b.shift].map(f32::to_bits)
        });
        // emu_softmax_op_desc: 1 + 1 = 2, aligned(4) -> 4
        check::<legacy::SoftmaxOpDesc>(4, &[(2, 4)], |a, b| a == b);
        // emu_buffer_desc: 2+4+2+2+2+2+4+4 = 22, aligned(256) -> 256
        check::<legacy::BufferDesc>(256, &[(22, 256)], |a, b| a == b);
        check::<legacy::PowerBufferDescs>(512, &[(22, 256), (278, 512)], |a, b| a == b);
        check::<legacy::SoftmaxBufferDescs>(512, &[(22, 256), (278, 512)], |a, b| a == b);
        // ONNC's emu_log_op_desc: 1 byte, aligned(4) -> 4
        check::<legacy::LogOpDesc>(4, &[(1, 4)], |a, b| a == b);
        check::<legacy::LogBufferDescs>(512, &[(22, 256), (278, 512)], |a, b| a == b);
        // sizeof(union emu_operation_container) in the 2018 header.
        assert_eq!(legacy::OPERATION_CONTAINER_SIZE, 16);
        assert_eq!(Layout::Legacy.operation_container_size(), 16);
        assert_eq!(Layout::Current.operation_container_size(), 24);
    }

    /// Offsets measured with `offsetof` on the 2018 header.
    #[test]
    fn legacy_field_offsets_match_c() {
        let power = legacy::PowerOpDesc {
            common: legacy::CommonOpDesc { op_type: 0 },
            power: 1.0,
            scale: 2.0,
            shift: 3.0,
        };
        let mut b = [0u8; 16];
        power.encode_into(&mut b).unwrap();
        assert_eq!(&b[1..5], &1.0f32.to_le_bytes()); // power @ 1
        assert_eq!(&b[9..13], &3.0f32.to_le_bytes()); // shift @ 9

        let softmax = legacy::SoftmaxOpDesc {
            common: legacy::CommonOpDesc { op_type: 1 },
            axis: 7,
        };
        let mut b = [0u8; 4];
        softmax.encode_into(&mut b).unwrap();
        assert_eq!(b, [1, 7, 0, 0]); // axis @ 1

        let buf = legacy::BufferDesc {
            size: 0x0403_0201,
            format: legacy::FORMAT_FP16,
            line_stride: 0x1413_1211,
            surf_stride: 0x2423_2221,
            ..Default::default()
        };
        let mut b = [0u8; 256];
        buf.encode_into(&mut b).unwrap();
        assert_eq!(&b[2..6], &[1, 2, 3, 4]); // size @ 2
        assert_eq!(&b[6..8], &[2, 0]); // format @ 6
        assert_eq!(&b[14..18], &[0x11, 0x12, 0x13, 0x14]); // line_stride @ 14
        assert_eq!(&b[18..22], &[0x21, 0x22, 0x23, 0x24]); // surf_stride @ 18
    }

    #[test]
    fn layout_selection_and_conversion() {
        assert_eq!(Layout::from_op_list_len(16, 1), Some(Layout::Legacy));
        assert_eq!(Layout::from_op_list_len(24, 1), Some(Layout::Current));
        assert_eq!(Layout::from_op_list_len(48, 2), Some(Layout::Current));
        assert_eq!(Layout::from_op_list_len(48, 3), Some(Layout::Legacy));
        assert_eq!(Layout::from_op_list_len(20, 1), None);
        assert_eq!(Layout::from_op_list_len(0, 0), None);

        // The two EMU operation lists of NVIDIA's 2018 NN_L0_0 loadable: an
        // identity power (power 1, scale 1, shift 0), then softmax on axis 1.
        let mut power_list = [0u8; 16];
        power_list[1..5].copy_from_slice(&1.0f32.to_le_bytes());
        power_list[5..9].copy_from_slice(&1.0f32.to_le_bytes());
        let mut softmax_list = [0u8; 16];
        softmax_list[..2].copy_from_slice(&[1, 1]);
        let layout = Layout::from_op_list_len(power_list.len(), 1).unwrap();
        let op = OpDesc::decode_slot_layout(layout, &power_list, 0).unwrap();
        let OpDesc::Power(p) = op else {
            panic!("{op:?}")
        };
        assert_eq!((p.power, p.scale, p.shift), (1.0, 1.0, 0.0));
        assert_eq!(
            (p.common.input_scale_factor, p.common.output_scale_factor),
            (1.0, 1.0)
        );
        let op = OpDesc::decode_slot_layout(layout, &softmax_list, 0).unwrap();
        assert_eq!(op.op_type(), OpType::Softmax);
        let OpDesc::Softmax(sm) = op else {
            panic!("{op:?}")
        };
        assert_eq!(sm.axis, 1);
        assert_eq!(
            legacy::SoftmaxOpDesc::try_from(sm),
            Ok(legacy::SoftmaxOpDesc {
                common: legacy::CommonOpDesc { op_type: 1 },
                axis: 1
            })
        );
        assert!(legacy::PowerOpDesc::try_from(p).is_ok());
        let mut scaled = p;
        scaled.common.input_scale_factor = 0.5;
        assert_eq!(
            legacy::PowerOpDesc::try_from(scaled).unwrap_err().field,
            "emu_common_op_desc.input_scale_factor"
        );
        softmax_list[0] = 9;
        assert!(matches!(
            OpDesc::decode_slot_layout(layout, &softmax_list, 0),
            Err(EmuDecodeError::Invalid(_))
        ));
        assert!(matches!(
            OpDesc::decode_slot_layout(layout, &power_list, 1),
            Err(EmuDecodeError::Decode(_))
        ));
        // The current decoder reads the same slot differently.
        assert!(OpDesc::decode_slot_layout(Layout::Current, &power_list, 0).is_err());

        // Buffers: legacy FP16 (2) becomes BufferFormat::Fp16 (3).
        let src = legacy::BufferDesc {
            address_index: 2,
            size: 25088,
            format: legacy::FORMAT_FP16,
            width: 28,
            height: 28,
            channel: 1,
            line_stride: 896,
            surf_stride: 25088,
        };
        let old = legacy::PowerBufferDescs {
            src_data: src,
            dst_data: legacy::BufferDesc {
                address_index: 1,
                ..src
            },
        };
        let mut list = [0u8; 512];
        old.encode_into(&mut list).unwrap();
        let cur =
            OpBufferDescs::decode_slot_layout(Layout::Legacy, OpType::Power, &list, 0).unwrap();
        assert_eq!(cur.src_data().format(), Ok(BufferFormat::Fp16));
        assert_eq!(cur.src_data().format, 3);
        assert_eq!(cur.dst_data().address_index, 1);
        assert_eq!(cur.src_data().address_index_offset, 0);
        let OpBufferDescs::Power(pb) = cur else {
            panic!("{cur:?}")
        };
        assert_eq!(legacy::PowerBufferDescs::try_from(pb), Ok(old));
        assert_eq!(src.format(), Ok(BufferFormat::Fp16));

        let mut int16 = pb;
        int16.src_data.format = BufferFormat::Int16.raw().into();
        assert!(legacy::PowerBufferDescs::try_from(int16).is_err());
        let mut offset = pb;
        offset.dst_data.address_index_offset = 4;
        assert!(legacy::PowerBufferDescs::try_from(offset).is_err());

        list[6] = 3; // not a legacy format
        assert_eq!(
            OpBufferDescs::decode_layout(Layout::Legacy, OpType::Softmax, &list),
            Err(EmuDecodeError::Invalid(InvalidValue {
                field: "emu_buffer_desc.format (legacy)",
                value: 3
            }))
        );
        assert!(OpBufferDescs::decode_layout(Layout::Current, OpType::Softmax, &list).is_ok());
    }
}
