//! The CPU emulator: EMU1 tasks (power, softmax, and ONNC's log) run by the runtime itself.
//!
//! An EMU1 task is, like a DLA1 task, an address list whose entry 0 holds the network
//! descriptor; the network descriptor names the address-list slots of the operation list and
//! of the buffer-descriptor list, and every buffer descriptor names the slot (plus a byte
//! offset) of its surface. Upstream's `Emulator` walks the operations in order and computes
//! each one on the host; this module does the same, with the arithmetic, conversions and
//! quirks of upstream kept exactly:
//!
//! - **power** `y = (shift + scale * x) ^ power`, element by element over the source cube,
//!   with source and destination addressed through their own strides. fp16 data is computed
//!   in f32 (`powf`) and rounded back to half (ties away, see [`crate::fp16`]); int8 data is
//!   multiplied by the input scale factor first, divided by the output scale factor after,
//!   and saturated to i8 (truncating toward zero).
//! - **softmax** over the channels of a 1x1 cube. Upstream reads the channels as *contiguous*
//!   elements from the start of the surface, ignoring strides (correct for the 1x1xC outputs
//!   compilers produce, with at most 16 fp16 or 32 int8 channels per group); so does this
//!   module. The maximum is subtracted before `expf`, the sum is accumulated in f32 in channel
//!   order. int8 data goes through half precision exactly as upstream does.
//! - **log** (`op_type` 2, not in NVIDIA's runtime: ONNC adds it to its patched runtime and
//!   its compiler emits it for ONNX `Log`) `y = ln(x)` element by element over the source
//!   cube, addressed like power. fp16 is computed in f32 (`logf`) and rounded back to half,
//!   as ONNC's runtime does (so `ln 0 = -inf` and a negative input gives NaN). For int8 the
//!   source is multiplied by the input scale factor, the logarithm divided by the output
//!   scale factor, rounded to nearest even (`rintf`, as ONNC) and saturated (`-inf` to
//!   -128, NaN to 0). ONNC's legacy emulator only ever addresses fp16 buffers, so its
//!   int8 path never ran; the scale factors exist only in the current layout (1.0 for
//!   legacy descriptors).
//!
//! - **CPU fallback operations** (`op_type` [`FALLBACK_OP_BASE`] and up, an nvdla-rs
//!   extension, in tasks whose blobs carry EMU interface version
//!   [`FALLBACK_VERSION`]): what `nvdla-compiler --cpu-fallback` emits for operators the
//!   hardware cannot compute. Op type [`FALLBACK_UNARY`] applies a [`FallbackFn`] element
//!   by element, addressed like power: fp16 in f32 rounded back to half (ties to even),
//!   int8 through the scale factors, rounded to nearest even and saturated. An op type of
//!   the range this runtime does not implement is refused by name
//!   ([`EmuError::UnknownFallback`]); NVIDIA's runtime refuses the whole range as unknown
//!   operations.
//!
//! Only the formats upstream's emulator accepts are accepted (fp16 and the two int8 layouts
//! for power and log; fp16 and int8 for softmax); others, and differing source and destination
//! formats, fail as they do there, but with an error instead of a silent failure.
//!
//! # No heap
//!
//! This crate is `no_std` and allocates nothing, so the bare-metal runner and
//! `nvdla-runtime` execute the same code and get the same bytes. [`run_task`] decodes the
//! network descriptor, then each operation straight from the task's memory (twice: once to
//! refuse a malformed task before anything runs, once to run it), and copies each
//! operation's source window (only the bytes the operation reads) into caller-provided
//! [`Scratch`] memory before computing, because source and destination may share a memory.
//! Transcendental functions come from the pure-Rust [`libm`], not from the host's C library.
//! Its `expf`, `logf` and `powf` are FreeBSD's, not the ARM optimized routines glibc uses:
//! they differ from glibc's by one f32 ulp on about 0.45% (`expf`) and 0.32% (`logf`) of
//! all f32 inputs, which moves an fp16 result by one ulp rarely (about 1 softmax output in
//! 100,000 and 2 power outputs in a million, measured on random data; none for `logf` or
//! `expf` of fp16 inputs).
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod fp16;

use nvdla_loadable::codec::DecodeError;
use nvdla_loadable::emu::{
    BufferDesc, BufferFormat, CommonOpDesc, EmuDecodeError, Layout, NetworkDesc, OpBufferDescs,
    OpDesc, OpType, PowerOpDesc, SoftmaxOpDesc,
};
use nvdla_loadable::Descriptor;
use thiserror::Error;

use crate::fp16::{f16_to_f32, f32_to_f16, f32_to_f16_even};

/// First `op_type` of the CPU fallback operations (upstream uses 0 and 1, ONNC 2).
pub const FALLBACK_OP_BASE: u8 = 0x80;
/// `op_type` of an element-wise function ([`FallbackOpDesc`]).
pub const FALLBACK_UNARY: u8 = 0x80;
/// `op_type` of an ONNX partition: a subgraph the hosted runtime runs with an ONNX engine
/// (`nvdla-umd`'s `partition` module). This crate (no heap, no engine) refuses it.
pub const FALLBACK_PARTITION: u8 = 0x81;
/// EMU1 interface version of the blobs of a task holding CPU fallback operations
/// (`nvdla-compiler` writes 0.0.1 otherwise).
pub const FALLBACK_VERSION: (u8, u8, u8) = (0, 1, 0);

/// Why an unknown fallback operation type is refused, for [`EmuError::UnknownFallback`].
fn fallback_hint(op_type: u8) -> &'static str {
    if op_type == FALLBACK_PARTITION {
        "an ONNX partition: it runs in nvdla-runtime built with its cpu-partitions feature, \
         which has an ONNX engine; bare metal and the board runtime without it cannot run it"
    } else {
        "the loadable was compiled with --cpu-fallback by a newer compiler"
    }
}

/// The element-wise functions of [`FALLBACK_UNARY`], by their `func` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FallbackFn {
    /// `e^x`.
    Exp = 0,
    /// `ln x`.
    Log = 1,
    /// `sqrt x`.
    Sqrt = 2,
    /// `|x|`.
    Abs = 3,
    /// `1 / x`.
    Reciprocal = 4,
    /// `floor x`.
    Floor = 5,
    /// `ceil x`.
    Ceil = 6,
    /// Round half to even.
    Round = 7,
    /// `sin x`.
    Sin = 8,
    /// `cos x`.
    Cos = 9,
    /// `tan x`.
    Tan = 10,
    /// `asin x`.
    Asin = 11,
    /// `acos x`.
    Acos = 12,
    /// `atan x`.
    Atan = 13,
    /// `sinh x`.
    Sinh = 14,
    /// `cosh x`.
    Cosh = 15,
    /// `asinh x`.
    Asinh = 16,
    /// `acosh x`.
    Acosh = 17,
    /// `atanh x`.
    Atanh = 18,
    /// `sign x` (0 for 0).
    Sign = 19,
    /// `ln(1 + e^x)`.
    Softplus = 20,
    /// `x / (1 + |x|)`.
    Softsign = 21,
    /// `x` for `x > 0`, else `alpha (e^x - 1)`.
    Elu = 22,
    /// `beta * (x > 0 ? x : alpha (e^x - 1))` (alpha, gamma).
    Selu = 23,
    /// `max(0, min(1, alpha x + beta))`.
    HardSigmoid = 24,
    /// `x * max(0, min(1, x / 6 + 1 / 2))`.
    HardSwish = 25,
    /// `max(0, x) + min(0, alpha (e^(x / alpha) - 1))`.
    Celu = 26,
    /// `x` for `x > alpha`, else 0.
    ThresholdedRelu = 27,
    /// `x tanh(ln(1 + e^x))`.
    Mish = 28,
    /// `x ^ alpha`.
    Pow = 29,
    /// `-x`.
    Neg = 30,
}

impl FallbackFn {
    /// Every function, in code order.
    pub const ALL: [FallbackFn; 31] = [
        Self::Exp,
        Self::Log,
        Self::Sqrt,
        Self::Abs,
        Self::Reciprocal,
        Self::Floor,
        Self::Ceil,
        Self::Round,
        Self::Sin,
        Self::Cos,
        Self::Tan,
        Self::Asin,
        Self::Acos,
        Self::Atan,
        Self::Sinh,
        Self::Cosh,
        Self::Asinh,
        Self::Acosh,
        Self::Atanh,
        Self::Sign,
        Self::Softplus,
        Self::Softsign,
        Self::Elu,
        Self::Selu,
        Self::HardSigmoid,
        Self::HardSwish,
        Self::Celu,
        Self::ThresholdedRelu,
        Self::Mish,
        Self::Pow,
        Self::Neg,
    ];

    /// The function of code `c`.
    pub fn from_code(c: u8) -> Option<Self> {
        Self::ALL.get(usize::from(c)).copied()
    }

    /// Its code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The function at `x` with parameters `alpha` and `beta`, in f32.
    ///
    /// Transcendental functions are [`libm`]'s; `asinh`, `acosh` and `atanh` use the
    /// formulas of Rust's `std` (on `libm`'s `log1pf`, `logf`, `hypotf` and `sqrtf`), which
    /// the runtime used before this crate existed.
    pub fn apply(self, x: f32, alpha: f32, beta: f32) -> f32 {
        use libm::{expf, expm1f, fabsf, log1pf, logf, sqrtf, tanhf};
        match self {
            Self::Exp => expf(x),
            Self::Log => logf(x),
            Self::Sqrt => sqrtf(x),
            Self::Abs => fabsf(x),
            Self::Reciprocal => 1.0 / x,
            Self::Floor => libm::floorf(x),
            Self::Ceil => libm::ceilf(x),
            Self::Round => libm::roundevenf(x),
            Self::Sin => libm::sinf(x),
            Self::Cos => libm::cosf(x),
            Self::Tan => libm::tanf(x),
            Self::Asin => libm::asinf(x),
            Self::Acos => libm::acosf(x),
            Self::Atan => libm::atanf(x),
            Self::Sinh => libm::sinhf(x),
            Self::Cosh => libm::coshf(x),
            Self::Asinh => {
                // std's `f32::asinh` (libm's `asinhf` rounds 131 and 54848 differently).
                let ax = fabsf(x);
                let ix = 1.0 / ax;
                libm::copysignf(log1pf(ax + (ax / (libm::hypotf(1.0, ix) + ix))), x)
            }
            Self::Acosh => {
                // std's `f32::acosh` (libm's `acoshf` is not NaN for x <= -2).
                if x < 1.0 {
                    f32::NAN
                } else {
                    logf(x + (sqrtf(x - 1.0) * sqrtf(x + 1.0)))
                }
            }
            // std's `f32::atanh`.
            Self::Atanh => 0.5 * log1pf((2.0 * x) / (1.0 - x)),
            Self::Sign => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x
                }
            }
            Self::Softplus => {
                if x > 20.0 {
                    x
                } else {
                    log1pf(expf(x))
                }
            }
            Self::Softsign => x / (1.0 + fabsf(x)),
            Self::Elu => {
                if x > 0.0 {
                    x
                } else {
                    alpha * expm1f(x)
                }
            }
            Self::Selu => {
                if x > 0.0 {
                    beta * x
                } else {
                    beta * alpha * expm1f(x)
                }
            }
            Self::HardSigmoid => (alpha * x + beta).clamp(0.0, 1.0),
            Self::HardSwish => x * (x / 6.0 + 0.5).clamp(0.0, 1.0),
            Self::Celu => x.max(0.0) + (alpha * expm1f(x / alpha)).min(0.0),
            Self::ThresholdedRelu => {
                if x > alpha {
                    x
                } else {
                    0.0
                }
            }
            Self::Mish => {
                let sp = if x > 20.0 { x } else { log1pf(expf(x)) };
                x * tanhf(sp)
            }
            Self::Pow => libm::powf(x, alpha),
            Self::Neg => -x,
        }
    }
}

/// The descriptor of a [`FALLBACK_UNARY`] operation (24 bytes, one operation container):
/// the common header (12 bytes), `func` (1 byte, a [`FallbackFn`] code, then 3 bytes of
/// padding), `alpha` and `beta` (f32). Its buffers are a source and a destination, as
/// power's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FallbackOpDesc {
    /// Common header (`op_type` = [`FALLBACK_UNARY`]).
    pub common: CommonOpDesc,
    /// The function.
    pub func: FallbackFn,
    /// First parameter.
    pub alpha: f32,
    /// Second parameter.
    pub beta: f32,
}

impl FallbackOpDesc {
    /// Encoded size.
    pub const SIZE: usize = 24;

    /// The 24 bytes of the descriptor.
    pub fn encode(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[0] = self.common.op_type;
        b[4..8].copy_from_slice(&self.common.input_scale_factor.to_le_bytes());
        b[8..12].copy_from_slice(&self.common.output_scale_factor.to_le_bytes());
        b[12] = self.func.code();
        b[16..20].copy_from_slice(&self.alpha.to_le_bytes());
        b[20..24].copy_from_slice(&self.beta.to_le_bytes());
        b
    }

    /// Decodes the descriptor from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, EmuError> {
        let b = b.get(..Self::SIZE).ok_or(EmuError::Decode {
            what: "emu fallback operation",
            detail: EmuDecodeError::Decode(DecodeError {
                descriptor: "emu_fallback_op_desc",
                needed: Self::SIZE,
                available: b.len(),
            }),
        })?;
        let f = |o: usize| f32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        if b[0] != FALLBACK_UNARY {
            return Err(EmuError::UnknownFallback { op_type: b[0] });
        }
        let func =
            FallbackFn::from_code(b[12]).ok_or(EmuError::UnknownFallbackFn { func: b[12] })?;
        Ok(Self {
            common: CommonOpDesc {
                op_type: b[0],
                input_scale_factor: f(4),
                output_scale_factor: f(8),
            },
            func,
            alpha: f(16),
            beta: f(20),
        })
    }
}

/// Why an EMU task or operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Error)]
pub enum EmuError {
    /// A descriptor could not be decoded.
    #[error("{what}: {detail}")]
    Decode {
        /// Which descriptor.
        what: &'static str,
        /// Decoder error.
        detail: EmuDecodeError,
    },
    /// The operation list's length fits neither descriptor layout.
    #[error("operation list of {len} bytes does not hold {num_operations} operations in either EMU layout")]
    UnknownLayout {
        /// Bytes available for the operation list.
        len: usize,
        /// Operations the network descriptor announces.
        num_operations: u16,
    },
    /// A descriptor names an address-list slot the task does not have (or that has no
    /// host-visible memory, such as SRAM).
    #[error("{what} names address-list slot {index}, which the task does not map")]
    BadSlot {
        /// Which reference.
        what: &'static str,
        /// The slot index.
        index: i64,
    },
    /// Source and destination formats differ (upstream does not support it either).
    #[error("source format {src} and destination format {dst} differ")]
    FormatMismatch {
        /// Source `format` field.
        src: u16,
        /// Destination `format` field.
        dst: u16,
    },
    /// The operation does not support the data format.
    #[error("{op} does not support buffer format {format}")]
    UnsupportedFormat {
        /// The operation.
        op: &'static str,
        /// The `format` field.
        format: u16,
    },
    /// A CPU fallback operation (`op_type` from [`FALLBACK_OP_BASE`]) this runtime does
    /// not implement.
    #[error("CPU fallback operation type {op_type:#04x} is not implemented by this runtime ({})", fallback_hint(*.op_type))]
    UnknownFallback {
        /// The `op_type` byte.
        op_type: u8,
    },
    /// A fallback element-wise function code this runtime does not implement.
    #[error("CPU fallback function {func} is not implemented by this runtime (the loadable was compiled with --cpu-fallback by a newer compiler)")]
    UnknownFallbackFn {
        /// The `func` byte.
        func: u8,
    },
    /// An element lies outside the memory behind its slot.
    #[error("{what} element at byte {end} overruns its {size}-byte memory")]
    OutOfBounds {
        /// Source or destination.
        what: &'static str,
        /// End of the element relative to the slot's memory window.
        end: u64,
        /// Bytes available.
        size: u64,
    },
    /// The [`Scratch`] memory cannot hold an operation's source window.
    #[error("the source window of {need} bytes does not fit the {have}-byte scratch memory")]
    ScratchTooSmall {
        /// Bytes the operation reads from its source.
        need: usize,
        /// Bytes the scratch memory has ([`Scratch::capacity`]).
        have: usize,
    },
}

impl EmuError {
    fn decode(what: &'static str, detail: impl Into<EmuDecodeError>) -> Self {
        EmuError::Decode {
            what,
            detail: detail.into(),
        }
    }
}

/// A failed EMU task: the operation that failed (`None` for the task itself: its network
/// descriptor, slots or layout) and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskError {
    /// Index of the operation in the task, if an operation failed (to decode or to run).
    pub op: Option<usize>,
    /// Why.
    pub error: EmuError,
}

impl core::fmt::Display for TaskError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.op {
            Some(i) => write!(f, "operation {i}: {}", self.error),
            None => self.error.fmt(f),
        }
    }
}

impl core::error::Error for TaskError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// One decoded EMU operation: its descriptor and its buffers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EmuOp {
    /// The operation descriptor (with scale factors 1.0 for legacy blobs). For a CPU
    /// fallback operation, a power descriptor holding its common header only.
    pub op: OpDesc,
    /// Its source and destination buffers.
    pub buffers: OpBufferDescs,
    /// The CPU fallback operation, if it is one (then `op` is not executed).
    pub fallback: Option<FallbackOpDesc>,
}

/// What [`decode_network`] finds: the network descriptor and the descriptor layout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskSummary {
    /// The network descriptor.
    pub network: NetworkDesc,
    /// Which revision of the interface the blobs use.
    pub layout: Layout,
}

impl TaskSummary {
    /// Number of operations of the task.
    pub fn num_operations(&self) -> usize {
        usize::from(self.network.num_operations)
    }
}

/// Host access to the memory of an EMU task's address-list slots.
///
/// `slot` is the index into the task's address list; the window starts at that address
/// entry's offset inside its memory and runs to the end of the memory.
pub trait SlotMemory {
    /// Number of slots of the task.
    fn slot_count(&self) -> usize;
    /// The bytes of slot `slot`, from the address's offset to the end of its memory; `None`
    /// if the slot has no host-visible memory.
    fn slot(&mut self, slot: usize) -> Option<&mut [u8]>;
    /// Length of the data the loadable placed at slot `slot` (the blob that fills it), if
    /// known; used to tell the two EMU descriptor layouts apart.
    fn content_len(&self, slot: usize) -> Option<usize> {
        let _ = slot;
        None
    }
}

/// Memory an operation's source window is copied to before computing (source and
/// destination may share a memory).
pub trait Scratch {
    /// `len` bytes of scratch memory (their content is overwritten), or `None` if there
    /// are not that many.
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]>;
    /// The most bytes [`Scratch::buffer`] can give (`usize::MAX` if it grows on demand);
    /// reported by [`EmuError::ScratchTooSmall`].
    fn capacity(&self) -> usize;
}

impl Scratch for [u8] {
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        self.get_mut(..len)
    }
    fn capacity(&self) -> usize {
        self.len()
    }
}

/// A borrowed buffer: `[u8]` is unsized, so a `&mut dyn Scratch` over a slice `buf` is
/// `&mut &mut buf[..]`.
impl Scratch for &mut [u8] {
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        self.get_mut(..len)
    }
    fn capacity(&self) -> usize {
        self.len()
    }
}

impl<const N: usize> Scratch for [u8; N] {
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        self.get_mut(..len)
    }
    fn capacity(&self) -> usize {
        N
    }
}

fn slot_index(what: &'static str, index: i64, count: usize) -> Result<usize, EmuError> {
    usize::try_from(index)
        .ok()
        .filter(|&i| i < count)
        .ok_or(EmuError::BadSlot { what, index })
}

/// The memory of slot `index`, or [`EmuError::BadSlot`] naming `what`.
fn slot<'a>(
    mem: &'a mut dyn SlotMemory,
    what: &'static str,
    index: i64,
) -> Result<&'a mut [u8], EmuError> {
    let i = slot_index(what, index, mem.slot_count())?;
    mem.slot(i).ok_or(EmuError::BadSlot { what, index })
}

const NETWORK: &str = "task address list entry 0";
const OP_LIST: &str = "emu_network_desc.operation_desc_index";
const BUF_LIST: &str = "emu_network_desc.operation_buffer_desc_index";

/// Decodes the network descriptor (slot 0) and tells the descriptor layout.
///
/// The operation list's length (the blob that fills it, see [`SlotMemory::content_len`], or
/// else its memory) tells the legacy (pre-INT8) and current layouts apart. The slots of the
/// operation and buffer lists must be mapped.
pub fn decode_network(mem: &mut dyn SlotMemory) -> Result<TaskSummary, EmuError> {
    let network = NetworkDesc::decode_from(slot(mem, NETWORK, 0)?)
        .map_err(|e| EmuError::decode("emu_network_desc", e))?;
    let ops_len = slot(mem, OP_LIST, i64::from(network.operation_desc_index))?.len();
    slot(
        mem,
        BUF_LIST,
        i64::from(network.operation_buffer_desc_index),
    )?;
    let n = network.num_operations;
    let op_list_len = usize::try_from(network.operation_desc_index)
        .ok()
        .and_then(|i| mem.content_len(i));
    let layout = match op_list_len {
        Some(len) => Layout::from_op_list_len(len, n),
        None => Layout::from_op_list_len(ops_len, n),
    }
    .or_else(|| {
        // The memory may be larger than the list (rounded allocation): prefer the current
        // layout when both fit, as the last compiler writes it.
        let cur = usize::from(n) * Layout::Current.operation_container_size();
        let leg = usize::from(n) * Layout::Legacy.operation_container_size();
        if n == 0 {
            None
        } else if op_list_len.is_none() && ops_len >= cur {
            Some(Layout::Current)
        } else if op_list_len.is_none() && ops_len >= leg {
            Some(Layout::Legacy)
        } else {
            None
        }
    });
    let layout = match (layout, n) {
        (Some(l), _) => l,
        (None, 0) => Layout::Current,
        (None, _) => {
            return Err(EmuError::UnknownLayout {
                len: op_list_len.unwrap_or(ops_len),
                num_operations: n,
            })
        }
    };
    Ok(TaskSummary { network, layout })
}

/// Decodes operation `index` of the task (its descriptor and its buffers) from the
/// operation and buffer lists in `mem`.
pub fn decode_op(
    mem: &mut dyn SlotMemory,
    task: &TaskSummary,
    index: usize,
) -> Result<EmuOp, EmuError> {
    let layout = task.layout;
    let ops = slot(mem, OP_LIST, i64::from(task.network.operation_desc_index))?;
    let (op, fallback) = 'op: {
        if layout == Layout::Current {
            let size = Layout::Current.operation_container_size();
            let container = index
                .checked_mul(size)
                .and_then(|start| ops.get(start..start.checked_add(size)?));
            if let Some(b) = container.filter(|b| b[0] >= FALLBACK_OP_BASE) {
                let f = FallbackOpDesc::decode(b)?;
                let op = OpDesc::Power(PowerOpDesc {
                    common: f.common,
                    ..Default::default()
                });
                break 'op (op, Some(f));
            }
        }
        let op = OpDesc::decode_slot_layout(layout, ops, index)
            .map_err(|e| EmuError::decode("emu operation", e))?;
        (op, None)
    };
    let op_type = if fallback.is_some() {
        OpType::Power
    } else {
        op.op_type()
    };
    let bufs = slot(
        mem,
        BUF_LIST,
        i64::from(task.network.operation_buffer_desc_index),
    )?;
    let buffers = OpBufferDescs::decode_slot_layout(layout, op_type, bufs, index)
        .map_err(|e| EmuError::decode("emu operation buffers", e))?;
    Ok(EmuOp {
        op,
        buffers,
        fallback,
    })
}

/// Decodes the task's network descriptor and runs every operation in order.
///
/// Every operation is decoded before the first one runs, so a malformed task changes no
/// memory; each is then decoded again right before it runs (no heap to keep them in): an
/// operation writing into the task's own descriptor lists changes what later operations
/// do, in both runners alike.
pub fn run_task(
    mem: &mut dyn SlotMemory,
    scratch: &mut dyn Scratch,
) -> Result<TaskSummary, TaskError> {
    let task = decode_network(mem).map_err(|error| TaskError { op: None, error })?;
    let at = |i: usize| move |error| TaskError { op: Some(i), error };
    for i in 0..task.num_operations() {
        decode_op(mem, &task, i).map_err(at(i))?;
    }
    for i in 0..task.num_operations() {
        let op = decode_op(mem, &task, i).map_err(at(i))?;
        execute_op(&op, mem, scratch).map_err(at(i))?;
    }
    Ok(task)
}

/// Bytes of the source window an operation reads (from the window's start): the end of
/// its last source element. 0 for an empty cube or a format the operation refuses (it
/// fails before reading).
fn source_extent(op: &EmuOp, src: &BufferDesc) -> u64 {
    let format = src.format().ok();
    if op.fallback.is_none() {
        if let OpDesc::Softmax(_) = op.op {
            let n = u64::from(src.channel);
            return match format {
                Some(BufferFormat::Fp16) => n * 2,
                Some(BufferFormat::Int8 | BufferFormat::Int8Atom8) => n,
                _ => 0,
            };
        }
    }
    let (group_bytes, bpe) = match format {
        Some(BufferFormat::Fp16) => (32u64, 2u64),
        Some(BufferFormat::Int8) => (32, 1),
        Some(BufferFormat::Int8Atom8) => (8, 1),
        _ => return 0,
    };
    let (w, h, c) = (
        u64::from(src.width),
        u64::from(src.height),
        u64::from(src.channel),
    );
    if w == 0 || h == 0 || c == 0 {
        return 0;
    }
    // The offset grows with w and h; over the channels it is largest at the last channel
    // or at the last channel of the group before the last.
    let per_group = group_bytes / bpe;
    let channel = |c: u64| (c / per_group) * u64::from(src.surf_stride) + (c % per_group) * bpe;
    let last_group = (c - 1) / per_group;
    let mut max = channel(c - 1);
    if last_group > 0 {
        max = max.max(channel(last_group * per_group - 1));
    }
    max + (h - 1) * u64::from(src.line_stride) + (w - 1) * group_bytes + bpe
}

/// Runs one operation on `mem`, its source window copied to `scratch` first.
pub fn execute_op(
    op: &EmuOp,
    mem: &mut dyn SlotMemory,
    scratch: &mut dyn Scratch,
) -> Result<(), EmuError> {
    let src = op.buffers.src_data();
    let dst = op.buffers.dst_data();
    if src.format != dst.format {
        return Err(EmuError::FormatMismatch {
            src: src.format,
            dst: dst.format,
        });
    }
    // Copy the bytes of the source window the operation reads: source and destination may
    // share a memory. Elements past the window are reported against its full size.
    let src_mem = slot(
        mem,
        "emu_buffer_desc.addressIndex (src)",
        i64::from(src.address_index),
    )?;
    let src_window = window_mut(src_mem, src, "source")?;
    let src_size = src_window.len() as u64;
    let need = usize::try_from(source_extent(op, src))
        .unwrap_or(usize::MAX)
        .min(src_window.len());
    let have = scratch.capacity();
    let copy = scratch
        .buffer(need)
        .and_then(|b| b.get_mut(..need))
        .ok_or(EmuError::ScratchTooSmall { need, have })?;
    copy.copy_from_slice(&src_window[..need]);
    let s = Source {
        bytes: copy,
        size: src_size,
    };
    let dst_mem = slot(
        mem,
        "emu_buffer_desc.addressIndex (dst)",
        i64::from(dst.address_index),
    )?;
    let d = window_mut(dst_mem, dst, "destination")?;
    if let Some(f) = &op.fallback {
        return unary(f, src, dst, s, d);
    }
    match &op.op {
        OpDesc::Power(p) => power(p, src, dst, s, d),
        OpDesc::Softmax(o) => softmax(o, src, dst, s, d),
        OpDesc::Log(l) => log(&l.common, src, dst, s, d),
    }
}

/// The copied source bytes, and the size of the window they were copied from.
#[derive(Clone, Copy)]
struct Source<'a> {
    bytes: &'a [u8],
    size: u64,
}

fn window_mut<'a>(
    bytes: &'a mut [u8],
    d: &BufferDesc,
    what: &'static str,
) -> Result<&'a mut [u8], EmuError> {
    let size = bytes.len() as u64;
    bytes
        .get_mut(d.address_index_offset as usize..)
        .ok_or(EmuError::OutOfBounds {
            what,
            end: u64::from(d.address_index_offset),
            size,
        })
}

/// Byte offset of element (w, h, c) by upstream's `getAddrOffset`: channels grouped
/// 32 bytes (fp16: 16 channels, int8: 32) or 8 bytes (`INT8_8`) per surface.
fn element_offset(d: &BufferDesc, w: u32, h: u32, c: u32) -> Result<u64, EmuError> {
    let format = d.format().map_err(|_| EmuError::UnsupportedFormat {
        op: "power",
        format: d.format,
    })?;
    let (group_bytes, bpe) = match format {
        BufferFormat::Fp16 => (32u64, 2u64),
        BufferFormat::Int8 => (32, 1),
        BufferFormat::Int8Atom8 => (8, 1),
        _ => {
            return Err(EmuError::UnsupportedFormat {
                op: "power",
                format: d.format,
            })
        }
    };
    let per_group = group_bytes / bpe;
    let (w, h, c) = (u64::from(w), u64::from(h), u64::from(c));
    Ok((c / per_group) * u64::from(d.surf_stride)
        + h * u64::from(d.line_stride)
        + w * group_bytes
        + (c % per_group) * bpe)
}

fn element<'a>(
    s: Source<'a>,
    off: u64,
    len: usize,
    what: &'static str,
) -> Result<&'a [u8], EmuError> {
    let start = usize::try_from(off).unwrap_or(usize::MAX);
    s.bytes
        .get(start..start.saturating_add(len))
        .ok_or(EmuError::OutOfBounds {
            what,
            end: off.saturating_add(len as u64),
            size: s.size,
        })
}

fn element_mut<'a>(
    bytes: &'a mut [u8],
    off: u64,
    len: usize,
    what: &'static str,
) -> Result<&'a mut [u8], EmuError> {
    let size = bytes.len() as u64;
    let start = usize::try_from(off).unwrap_or(usize::MAX);
    bytes
        .get_mut(start..start.saturating_add(len))
        .ok_or(EmuError::OutOfBounds {
            what,
            end: off.saturating_add(len as u64),
            size,
        })
}

/// `saturate<float, int8>` of upstream: clamp, then convert truncating toward zero. A NaN
/// passes the clamp and converts to 0 (what x86's `cvttss2si` gives, truncated to 8 bits).
pub fn saturate_i8(v: f32) -> i8 {
    if v.is_nan() {
        return 0;
    }
    v.clamp(-128.0, 127.0) as i8
}

/// The power formula on one f32, as upstream evaluates it (no fused multiply-add).
pub fn power_f32(p: &PowerOpDesc, x: f32) -> f32 {
    let base = p.shift + p.scale * x;
    libm::powf(base, p.power)
}

fn power(
    p: &PowerOpDesc,
    src: &BufferDesc,
    dst: &BufferDesc,
    s: Source<'_>,
    d: &mut [u8],
) -> Result<(), EmuError> {
    let format = src.format().map_err(|_| EmuError::UnsupportedFormat {
        op: "power",
        format: src.format,
    })?;
    for c in 0..u32::from(src.channel) {
        for h in 0..u32::from(src.height) {
            for w in 0..u32::from(src.width) {
                let so = element_offset(src, w, h, c)?;
                let dof = element_offset(dst, w, h, c)?;
                match format {
                    BufferFormat::Fp16 => {
                        let e = element(s, so, 2, "source")?;
                        let x = f16_to_f32(u16::from_le_bytes([e[0], e[1]]));
                        let y = f32_to_f16(power_f32(p, x));
                        element_mut(d, dof, 2, "destination")?.copy_from_slice(&y.to_le_bytes());
                    }
                    BufferFormat::Int8 | BufferFormat::Int8Atom8 => {
                        let e = element(s, so, 1, "source")?;
                        let x = f32::from(e[0] as i8) * p.common.input_scale_factor;
                        let y = power_f32(p, x) / p.common.output_scale_factor;
                        element_mut(d, dof, 1, "destination")?[0] = saturate_i8(y) as u8;
                    }
                    _ => {
                        return Err(EmuError::UnsupportedFormat {
                            op: "power",
                            format: src.format,
                        })
                    }
                }
            }
        }
    }
    Ok(())
}

/// `rintf` then `saturate<float, int8>`: round to nearest, ties to even, then clamp; NaN
/// gives 0 (see [`saturate_i8`]).
pub fn round_saturate_i8(v: f32) -> i8 {
    saturate_i8(libm::roundevenf(v))
}

/// ONNC's log: natural logarithm of every element of the source cube.
fn log(
    common: &CommonOpDesc,
    src: &BufferDesc,
    dst: &BufferDesc,
    s: Source<'_>,
    d: &mut [u8],
) -> Result<(), EmuError> {
    map_elements(
        "log",
        src,
        dst,
        s,
        d,
        |x| f32_to_f16(libm::logf(x)),
        |q| {
            let x = f32::from(q) * common.input_scale_factor;
            round_saturate_i8(libm::logf(x) / common.output_scale_factor)
        },
    )
}

/// A CPU fallback function of every element of the source cube (addressed like power):
/// fp16 computed in f32 and rounded to half (ties to even); int8 through the scale
/// factors, rounded to nearest even and saturated.
fn unary(
    f: &FallbackOpDesc,
    src: &BufferDesc,
    dst: &BufferDesc,
    s: Source<'_>,
    d: &mut [u8],
) -> Result<(), EmuError> {
    let apply = |x: f32| f.func.apply(x, f.alpha, f.beta);
    map_elements(
        "cpu fallback",
        src,
        dst,
        s,
        d,
        |x| f32_to_f16_even(apply(x)),
        |q| {
            let x = f32::from(q) * f.common.input_scale_factor;
            round_saturate_i8(apply(x) / f.common.output_scale_factor)
        },
    )
}

/// Every element of the source cube through `half` (fp16: the value as f32 to half bits)
/// or `int8` (the int8 value to the int8 result), each buffer addressed through its own
/// strides; formats other than fp16 and the two int8 layouts are refused as `op`.
fn map_elements(
    op: &'static str,
    src: &BufferDesc,
    dst: &BufferDesc,
    s: Source<'_>,
    d: &mut [u8],
    half: impl Fn(f32) -> u16,
    int8: impl Fn(i8) -> i8,
) -> Result<(), EmuError> {
    let unsupported = || EmuError::UnsupportedFormat {
        op,
        format: src.format,
    };
    let fp16 = match src.format().map_err(|_| unsupported())? {
        BufferFormat::Fp16 => true,
        BufferFormat::Int8 | BufferFormat::Int8Atom8 => false,
        _ => return Err(unsupported()),
    };
    for c in 0..u32::from(src.channel) {
        for h in 0..u32::from(src.height) {
            for w in 0..u32::from(src.width) {
                let so = element_offset(src, w, h, c)?;
                let dof = element_offset(dst, w, h, c)?;
                if fp16 {
                    let e = element(s, so, 2, "source")?;
                    let y = half(f16_to_f32(u16::from_le_bytes([e[0], e[1]])));
                    element_mut(d, dof, 2, "destination")?.copy_from_slice(&y.to_le_bytes());
                } else {
                    let e = element(s, so, 1, "source")?;
                    element_mut(d, dof, 1, "destination")?[0] = int8(e[0] as i8) as u8;
                }
            }
        }
    }
    Ok(())
}

/// The maximum of `x` and the sum of `expf(v - max)` over it, in order, in f32: the first
/// two passes of upstream's softmax.
fn softmax_max_sum(x: impl Iterator<Item = f32> + Clone) -> (f32, f32) {
    let mut max = f32::NEG_INFINITY;
    for v in x.clone() {
        if v > max {
            max = v;
        }
    }
    let mut sum = 0.0f32;
    for v in x {
        sum += libm::expf(v - max);
    }
    (max, sum)
}

/// Softmax of f32 values as upstream computes it: max, `expf(x - max)` summed in order in
/// f32, then each `expf(x - max) / sum`, written to `out` (as many as both hold).
pub fn softmax_f32(x: &[f32], out: &mut [f32]) {
    let (max, sum) = softmax_max_sum(x.iter().copied());
    for (o, &v) in out.iter_mut().zip(x) {
        *o = libm::expf(v - max) / sum;
    }
}

fn softmax(
    op: &SoftmaxOpDesc,
    src: &BufferDesc,
    dst: &BufferDesc,
    s: Source<'_>,
    d: &mut [u8],
) -> Result<(), EmuError> {
    let format = src.format().map_err(|_| EmuError::UnsupportedFormat {
        op: "softmax",
        format: src.format,
    })?;
    let n = usize::from(src.channel);
    match format {
        BufferFormat::Fp16 => {
            let input = element(s, 0, n * 2, "source")?;
            let x = input
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])));
            let (max, sum) = softmax_max_sum(x.clone());
            let out = element_mut(d, 0, n * 2, "destination")?;
            for (o, v) in out.chunks_exact_mut(2).zip(x) {
                let y = libm::expf(v - max) / sum;
                o.copy_from_slice(&f32_to_f16(y).to_le_bytes());
            }
            Ok(())
        }
        BufferFormat::Int8 | BufferFormat::Int8Atom8 => softmax_int8(op, src, dst, s, d),
        _ => Err(EmuError::UnsupportedFormat {
            op: "softmax",
            format: src.format,
        }),
    }
}

fn softmax_int8(
    op: &SoftmaxOpDesc,
    src: &BufferDesc,
    dst: &BufferDesc,
    s: Source<'_>,
    d: &mut [u8],
) -> Result<(), EmuError> {
    let n = usize::from(src.channel);
    let input = element(s, 0, n, "source")?;
    // Scale into half precision (int8 * float, rounded to half).
    let scale = op.common.input_scale_factor;
    let halves = input
        .iter()
        .map(move |&b| f16_to_f32(f32_to_f16(f32::from(b as i8) * scale)));
    let (max, sum) = softmax_max_sum(halves.clone());
    // Upstream writes dst.channel outputs from a dst.channel-sized half buffer whose first
    // src.channel entries were computed; with differing counts the rest is uninitialised
    // there, so we require them equal.
    let m = usize::from(dst.channel);
    if m != n {
        return Err(EmuError::OutOfBounds {
            what: "destination (channel count differs from source)",
            end: m as u64,
            size: n as u64,
        });
    }
    let out = element_mut(d, 0, m, "destination")?;
    for (o, v) in out.iter_mut().zip(halves) {
        let y = f16_to_f32(f32_to_f16(libm::expf(v - max) / sum));
        *o = saturate_i8(y / op.common.output_scale_factor) as u8;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;
    use std::vec;
    use std::vec::Vec;

    /// Runs `op` with a scratch buffer that is large enough.
    fn exec(op: &EmuOp, mem: &mut dyn SlotMemory) -> Result<(), EmuError> {
        let mut scratch = [0u8; 4096];
        execute_op(op, mem, &mut scratch)
    }
    use nvdla_loadable::emu::{CommonOpDesc, PowerBufferDescs, SoftmaxBufferDescs};

    struct Mem(Vec<Vec<u8>>);
    impl SlotMemory for Mem {
        fn slot_count(&self) -> usize {
            self.0.len()
        }
        fn slot(&mut self, slot: usize) -> Option<&mut [u8]> {
            self.0.get_mut(slot).map(Vec::as_mut_slice)
        }
    }

    fn buf(
        slot: i16,
        format: BufferFormat,
        w: u16,
        h: u16,
        c: u16,
        ls: u32,
        ss: u32,
    ) -> BufferDesc {
        BufferDesc {
            address_index: slot,
            address_index_offset: 0,
            size: 0,
            format: format as u16,
            width: w,
            height: h,
            channel: c,
            line_stride: ls,
            surf_stride: ss,
        }
    }

    fn common(op_type: u8, input: f32, output: f32) -> CommonOpDesc {
        CommonOpDesc {
            op_type,
            input_scale_factor: input,
            output_scale_factor: output,
        }
    }

    #[test]
    fn power_fp16_strided_against_f64() {
        // 3x2x20 fp16 cube (two channel groups), y = (1 + 0.5 x)^2.
        let (w, h, c) = (3u16, 2u16, 20u16);
        let ls = 3 * 32;
        let ss = ls * 2;
        let src = buf(0, BufferFormat::Fp16, w, h, c, ls, ss);
        let dst = buf(1, BufferFormat::Fp16, w, h, c, ls, ss);
        let mut input = vec![0u8; (ss * 2) as usize];
        let val = |x: u32, y: u32, z: u32| (x as f32) * 0.75 - (y as f32) + (z as f32) * 0.0625;
        for z in 0..u32::from(c) {
            for y in 0..u32::from(h) {
                for x in 0..u32::from(w) {
                    let o = element_offset(&src, x, y, z).unwrap() as usize;
                    input[o..o + 2].copy_from_slice(&f32_to_f16(val(x, y, z)).to_le_bytes());
                }
            }
        }
        let op = EmuOp {
            op: OpDesc::Power(PowerOpDesc {
                common: common(0, 1.0, 1.0),
                power: 2.0,
                scale: 0.5,
                shift: 1.0,
            }),
            buffers: OpBufferDescs::Power(PowerBufferDescs {
                src_data: src,
                dst_data: dst,
            }),
            fallback: None,
        };
        let mut mem = Mem(vec![input.clone(), vec![0xee; input.len()]]);
        exec(&op, &mut mem).unwrap();
        for z in 0..u32::from(c) {
            for y in 0..u32::from(h) {
                for x in 0..u32::from(w) {
                    let o = element_offset(&dst, x, y, z).unwrap() as usize;
                    let got = f16_to_f32(u16::from_le_bytes([mem.0[1][o], mem.0[1][o + 1]]));
                    let xin = f64::from(f16_to_f32(f32_to_f16(val(x, y, z))));
                    let want = (1.0 + 0.5 * xin).powi(2);
                    let ulp = 2f64.powi((want.abs().log2().floor() as i32).max(-14) - 10);
                    assert!(
                        (f64::from(got) - want).abs() <= ulp / 2.0 + 1e-6,
                        "{x},{y},{z}: {got} vs {want}"
                    );
                }
            }
        }
        // Bytes between elements (channel padding of the second group) are untouched.
        let pad = element_offset(&dst, 0, 0, 20).unwrap() as usize;
        assert_eq!(mem.0[1][pad], 0xee);
    }

    #[test]
    fn power_int8_scales_and_saturates() {
        let src = buf(0, BufferFormat::Int8Atom8, 1, 1, 4, 8, 8);
        let dst = buf(0, BufferFormat::Int8Atom8, 1, 1, 4, 8, 8);
        let op = EmuOp {
            op: OpDesc::Power(PowerOpDesc {
                common: common(0, 0.5, 0.25),
                power: 1.0,
                scale: 3.0,
                shift: 0.0,
            }),
            buffers: OpBufferDescs::Power(PowerBufferDescs {
                src_data: src,
                dst_data: dst,
            }),
            fallback: None,
        };
        // In place: x * 0.5 * 3 / 0.25 = 6x, truncated toward zero, saturated.
        let mut mem = Mem(vec![vec![1, 0xff, 30, 0x80, 0, 0, 0, 0]]);
        exec(&op, &mut mem).unwrap();
        assert_eq!(mem.0[0][..4], [6, (-6i8) as u8, 127, (-128i8) as u8]);
    }

    #[test]
    fn softmax_int8_goes_through_half() {
        let src = buf(0, BufferFormat::Int8, 1, 1, 3, 32, 32);
        let dst = buf(1, BufferFormat::Int8, 1, 1, 3, 32, 32);
        let op = EmuOp {
            op: OpDesc::Softmax(SoftmaxOpDesc {
                common: common(1, 0.1, 1.0 / 127.0),
                axis: 1,
            }),
            buffers: OpBufferDescs::Softmax(SoftmaxBufferDescs {
                src_data: src,
                dst_data: dst,
            }),
            fallback: None,
        };
        let mut mem = Mem(vec![vec![10, 20, 0], vec![0; 3]]);
        exec(&op, &mut mem).unwrap();
        // Independently: logits 1, 2, 0 → softmax ≈ 0.2447, 0.6652, 0.0900; × 127, truncated.
        let got: Vec<i8> = mem.0[1].iter().map(|&b| b as i8).collect();
        assert_eq!(got, vec![31, 84, 11]);
    }

    #[test]
    fn mismatched_and_unsupported_formats_fail() {
        let op = |sf, df| EmuOp {
            op: OpDesc::Softmax(SoftmaxOpDesc {
                common: common(1, 1.0, 1.0),
                axis: 1,
            }),
            buffers: OpBufferDescs::Softmax(SoftmaxBufferDescs {
                src_data: buf(0, sf, 1, 1, 2, 32, 32),
                dst_data: buf(0, df, 1, 1, 2, 32, 32),
            }),
            fallback: None,
        };
        let mut mem = Mem(vec![vec![0; 64]]);
        assert!(matches!(
            exec(&op(BufferFormat::Fp16, BufferFormat::Int8), &mut mem),
            Err(EmuError::FormatMismatch { .. })
        ));
        assert!(matches!(
            exec(&op(BufferFormat::Int16, BufferFormat::Int16), &mut mem),
            Err(EmuError::UnsupportedFormat { .. })
        ));
        // A slot the task does not have.
        let mut bad = op(BufferFormat::Fp16, BufferFormat::Fp16);
        if let OpBufferDescs::Softmax(b) = &mut bad.buffers {
            b.dst_data.address_index = 7;
        }
        assert!(matches!(
            exec(&bad, &mut mem),
            Err(EmuError::BadSlot { .. })
        ));
        // Elements past the memory.
        let mut big = op(BufferFormat::Fp16, BufferFormat::Fp16);
        if let OpBufferDescs::Softmax(b) = &mut big.buffers {
            b.src_data.channel = 100;
        }
        assert!(matches!(
            exec(&big, &mut mem),
            Err(EmuError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn log_fp16_and_int8() {
        use nvdla_loadable::emu::{LogBufferDescs, LogOpDesc};
        let op = |format, input: f32, output: f32| EmuOp {
            op: OpDesc::Log(LogOpDesc {
                common: common(2, input, output),
            }),
            buffers: OpBufferDescs::Log(LogBufferDescs {
                src_data: buf(0, format, 4, 1, 1, 128, 128),
                dst_data: buf(1, format, 4, 1, 1, 128, 128),
            }),
            fallback: None,
        };
        // fp16, one channel, four pixels 32 bytes apart: 0, 1, 2, -1.
        let mut input = vec![0u8; 128];
        for (i, v) in [0.0f32, 1.0, 2.0, -1.0].iter().enumerate() {
            input[i * 32..i * 32 + 2].copy_from_slice(&f32_to_f16(*v).to_le_bytes());
        }
        let mut mem = Mem(vec![input, vec![0; 128]]);
        exec(&op(BufferFormat::Fp16, 1.0, 1.0), &mut mem).unwrap();
        let out: Vec<f32> = (0..4)
            .map(|i| f16_to_f32(u16::from_le_bytes([mem.0[1][i * 32], mem.0[1][i * 32 + 1]])))
            .collect();
        assert_eq!(out[0], f32::NEG_INFINITY);
        assert_eq!(out[1], 0.0);
        // ln 2 = 0.693147..., the nearest half is 0.693359375 (ONNC's expected output).
        assert_eq!(out[2], 0.693_359_4);
        assert!(out[3].is_nan());
        // int8 with scales: ln(x * 1.0) / 0.25, rounded to even, saturated.
        let mut input = vec![0u8; 128];
        for (i, v) in [0i8, 1, 3, -5].iter().enumerate() {
            input[i * 32] = *v as u8;
        }
        let mut mem = Mem(vec![input, vec![0x55; 128]]);
        exec(&op(BufferFormat::Int8, 1.0, 0.25), &mut mem).unwrap();
        let out: Vec<i8> = (0..4).map(|i| mem.0[1][i * 32] as i8).collect();
        // ln 3 / 0.25 = 4.394 -> 4.
        assert_eq!(out, vec![-128, 0, 4, 0]);
        // int16 is not an emulator format.
        assert!(matches!(
            exec(&op(BufferFormat::Int16, 1.0, 1.0), &mut mem),
            Err(EmuError::UnsupportedFormat { op: "log", .. })
        ));
    }

    #[test]
    fn fallback_unary_runs_and_unknown_fallback_ops_are_refused() {
        use nvdla_loadable::emu::PowerBufferDescs;
        let desc = FallbackOpDesc {
            common: common(FALLBACK_UNARY, 1.0, 1.0),
            func: FallbackFn::Elu,
            alpha: 0.5,
            beta: 0.0,
        };
        let bytes = desc.encode();
        assert_eq!(FallbackOpDesc::decode(&bytes).unwrap(), desc);
        let op = |f: FallbackOpDesc, format| EmuOp {
            op: OpDesc::Power(PowerOpDesc {
                common: f.common,
                ..Default::default()
            }),
            buffers: OpBufferDescs::Power(PowerBufferDescs {
                src_data: buf(0, format, 4, 1, 1, 128, 128),
                dst_data: buf(1, format, 4, 1, 1, 128, 128),
            }),
            fallback: Some(f),
        };
        // fp16: elu(x) with alpha 0.5 on 2, 0, -1, -4.
        let mut input = vec![0u8; 128];
        for (i, v) in [2.0f32, 0.0, -1.0, -4.0].iter().enumerate() {
            input[i * 32..i * 32 + 2].copy_from_slice(&f32_to_f16(*v).to_le_bytes());
        }
        let mut mem = Mem(vec![input, vec![0; 128]]);
        exec(&op(desc, BufferFormat::Fp16), &mut mem).unwrap();
        let out: Vec<f32> = (0..4)
            .map(|i| f16_to_f32(u16::from_le_bytes([mem.0[1][i * 32], mem.0[1][i * 32 + 1]])))
            .collect();
        let want = [2.0, 0.0, 0.5 * libm::expm1f(-1.0), 0.5 * libm::expm1f(-4.0)];
        for (g, w) in out.iter().zip(want) {
            assert!((g - w).abs() <= w.abs() * 1e-3, "{out:?} vs {want:?}");
        }
        // int8: exp(x * 0.1) / 0.05, rounded to even and saturated.
        let exp = FallbackOpDesc {
            common: common(FALLBACK_UNARY, 0.1, 0.05),
            func: FallbackFn::Exp,
            alpha: 0.0,
            beta: 0.0,
        };
        let mut input = vec![0u8; 128];
        for (i, v) in [0i8, 10, -10, 100].iter().enumerate() {
            input[i * 32] = *v as u8;
        }
        let mut mem = Mem(vec![input, vec![0; 128]]);
        exec(&op(exp, BufferFormat::Int8), &mut mem).unwrap();
        let out: Vec<i8> = (0..4).map(|i| mem.0[1][i * 32] as i8).collect();
        assert_eq!(out, vec![20, 54, 7, 127]);
        // Op types of the range this runtime does not implement, and unknown functions.
        let mut other = bytes;
        other[0] = FALLBACK_PARTITION;
        let e = FallbackOpDesc::decode(&other).unwrap_err();
        assert_eq!(e, EmuError::UnknownFallback { op_type: 0x81 });
        assert!(e.to_string().contains("an ONNX partition"), "{e}");
        other[0] = FALLBACK_OP_BASE + 2;
        let e = FallbackOpDesc::decode(&other).unwrap_err();
        assert!(e.to_string().contains("--cpu-fallback"), "{e}");
        let mut other = bytes;
        other[12] = 200;
        assert_eq!(
            FallbackOpDesc::decode(&other).unwrap_err(),
            EmuError::UnknownFallbackFn { func: 200 }
        );
        // Every code maps back to its function.
        for f in FallbackFn::ALL {
            assert_eq!(FallbackFn::from_code(f.code()), Some(f));
        }
    }

    /// A task of two operations in place on slot 3 (one fp16 channel of 4 pixels):
    /// a power `y = 2x` then a fallback `neg`. Slots: network, operations, buffers, data.
    fn two_op_task() -> Mem {
        use nvdla_loadable::emu::{
            PowerBufferDescs, OPERATION_BUFFER_CONTAINER_SIZE, OPERATION_CONTAINER_SIZE,
        };
        let mut net = vec![0u8; NetworkDesc::SIZE];
        NetworkDesc {
            operation_desc_index: 1,
            operation_buffer_desc_index: 2,
            num_operations: 2,
        }
        .encode_into(&mut net)
        .unwrap();
        let mut ops = vec![0u8; 2 * OPERATION_CONTAINER_SIZE];
        OpDesc::Power(PowerOpDesc {
            common: common(0, 1.0, 1.0),
            power: 1.0,
            scale: 2.0,
            shift: 0.0,
        })
        .encode_into(&mut ops)
        .unwrap();
        let neg = FallbackOpDesc {
            common: common(FALLBACK_UNARY, 1.0, 1.0),
            func: FallbackFn::Neg,
            alpha: 0.0,
            beta: 0.0,
        };
        ops[OPERATION_CONTAINER_SIZE..].copy_from_slice(&neg.encode());
        let mut bufs = vec![0u8; 2 * OPERATION_BUFFER_CONTAINER_SIZE];
        let data = buf(3, BufferFormat::Fp16, 4, 1, 1, 128, 128);
        for i in 0..2 {
            OpBufferDescs::Power(PowerBufferDescs {
                src_data: data,
                dst_data: data,
            })
            .encode_into(&mut bufs[i * OPERATION_BUFFER_CONTAINER_SIZE..])
            .unwrap();
        }
        let mut input = vec![0u8; 128];
        for (i, v) in [1.0f32, -2.0, 0.5, 3.0].iter().enumerate() {
            input[i * 32..i * 32 + 2].copy_from_slice(&f32_to_f16(*v).to_le_bytes());
        }
        Mem(vec![net, ops, bufs, input])
    }

    fn pixels(m: &Mem) -> Vec<f32> {
        (0..4)
            .map(|i| f16_to_f32(u16::from_le_bytes([m.0[3][i * 32], m.0[3][i * 32 + 1]])))
            .collect()
    }

    #[test]
    fn run_task_runs_in_order_with_the_exact_scratch() {
        // The source window read is 3 pixels * 32 bytes + one fp16 element.
        let need = 3 * 32 + 2;
        let mut mem = two_op_task();
        let mut small = [0u8; 98 - 1];
        let e = run_task(&mut mem, &mut small).unwrap_err();
        assert_eq!(
            e,
            TaskError {
                op: Some(0),
                error: EmuError::ScratchTooSmall {
                    need,
                    have: need - 1
                }
            }
        );
        assert!(e.to_string().starts_with("operation 0: "), "{e}");
        assert_eq!(pixels(&mem), [1.0, -2.0, 0.5, 3.0]);
        let mut exact = vec![0u8; need];
        let summary = run_task(&mut mem, &mut &mut exact[..]).unwrap();
        assert_eq!(summary.layout, Layout::Current);
        assert_eq!(summary.num_operations(), 2);
        assert_eq!(pixels(&mem), [-2.0, 4.0, -1.0, -6.0]);
    }

    #[test]
    fn run_task_refuses_a_malformed_task_before_running() {
        let mut scratch = [0u8; 256];
        // The second operation names an unknown fallback function: nothing runs.
        let mut mem = two_op_task();
        mem.0[1][24 + 12] = 200;
        assert_eq!(
            run_task(&mut mem, &mut scratch),
            Err(TaskError {
                op: Some(1),
                error: EmuError::UnknownFallbackFn { func: 200 }
            })
        );
        assert_eq!(pixels(&mem), [1.0, -2.0, 0.5, 3.0]);
        // A missing buffer list is the task's error.
        let mut mem = two_op_task();
        mem.0.truncate(2);
        assert!(matches!(
            run_task(&mut mem, &mut scratch),
            Err(TaskError {
                op: None,
                error: EmuError::BadSlot { index: 2, .. }
            })
        ));
        // A short network descriptor.
        let mut mem = two_op_task();
        mem.0[0].truncate(4);
        assert!(matches!(
            run_task(&mut mem, &mut scratch),
            Err(TaskError {
                op: None,
                error: EmuError::Decode { .. }
            })
        ));
    }

    #[test]
    fn source_extent_covers_every_element() {
        // Strides smaller than a channel group make the last channel not the farthest.
        for (c, ss) in [(17u16, 0u32), (40, 8), (16, 64), (1, 0)] {
            let src = buf(0, BufferFormat::Fp16, 2, 3, c, 64, ss);
            let op = EmuOp {
                op: OpDesc::Power(PowerOpDesc::default()),
                buffers: OpBufferDescs::Power(nvdla_loadable::emu::PowerBufferDescs {
                    src_data: src,
                    dst_data: src,
                }),
                fallback: None,
            };
            let mut max = 0;
            for z in 0..u32::from(c) {
                for y in 0..3 {
                    for x in 0..2 {
                        max = max.max(element_offset(&src, x, y, z).unwrap() + 2);
                    }
                }
            }
            assert_eq!(source_extent(&op, &src), max, "c={c} ss={ss}");
        }
    }

    #[test]
    fn round_saturate_rounds_ties_to_even() {
        assert_eq!(round_saturate_i8(2.5), 2);
        assert_eq!(round_saturate_i8(3.5), 4);
        assert_eq!(round_saturate_i8(-2.5), -2);
        assert_eq!(round_saturate_i8(f32::NEG_INFINITY), -128);
        assert_eq!(round_saturate_i8(f32::NAN), 0);
    }

    #[test]
    fn saturate_matches_upstream() {
        assert_eq!(saturate_i8(1e9), 127);
        assert_eq!(saturate_i8(-1e9), -128);
        assert_eq!(saturate_i8(-1.9), -1);
        assert_eq!(saturate_i8(126.99), 126);
        assert_eq!(saturate_i8(f32::NAN), 0);
    }
}
