//! Typed errors of the firmware and of its hardware interface.
//!
//! Errors carry the values needed to diagnose them (which register, which address, which
//! address-list index) and never allocate.

use core::fmt;

use nvdla_loadable::dla::OpType;
use nvdla_loadable::DecodeError;

use crate::config::Feature;
use crate::hw::DeviceAddr;
use crate::regs::Block;

/// A failed [`Hw`](crate::hw::Hw) access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HwError {
    /// A register offset that is not a multiple of 4.
    UnalignedRegister {
        /// The byte offset asked.
        offset: u32,
    },
    /// A register offset outside the configured hardware's CSB space.
    NoSuchRegister {
        /// The byte offset asked.
        offset: u32,
    },
    /// A device memory access not fully backed by memory.
    MemoryFault {
        /// Start of the access.
        addr: DeviceAddr,
        /// Length of the access in bytes.
        len: usize,
    },
    /// An address-list index at or past the end of the task's address list.
    AddressIndex {
        /// The index asked.
        index: u16,
        /// Number of entries in the list.
        count: u16,
    },
    /// An access through an address-list entry that runs past the end of its buffer.
    OutOfBounds {
        /// The address-list index.
        index: u16,
        /// Offset from the entry's address.
        offset: u64,
        /// Length of the access in bytes.
        len: usize,
        /// Bytes available from the entry's address to the end of its buffer.
        available: u64,
    },
    /// The hardware did not answer a register access (its bus, or the connection to a
    /// simulator serving it, failed).
    Unreachable {
        /// The byte offset asked.
        offset: u32,
    },
}

impl fmt::Display for HwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            HwError::UnalignedRegister { offset } => {
                write!(f, "register offset {offset:#x} is not 4-byte aligned")
            }
            HwError::NoSuchRegister { offset } => {
                write!(f, "no register at CSB offset {offset:#x}")
            }
            HwError::Unreachable { offset } => {
                write!(f, "the hardware did not answer at CSB offset {offset:#x}")
            }
            HwError::MemoryFault { addr, len } => {
                write!(f, "no device memory for {len} bytes at {:#x}", addr.0)
            }
            HwError::AddressIndex { index, count } => {
                write!(
                    f,
                    "address-list index {index} out of range (list has {count})"
                )
            }
            HwError::OutOfBounds {
                index,
                offset,
                len,
                available,
            } => write!(
                f,
                "{len} bytes at offset {offset:#x} of address-list entry {index} exceed its \
                 buffer ({available} bytes available)"
            ),
        }
    }
}

/// An operation of the running task: its index in the dependency graph and its ROI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OpRef {
    /// Index in the dependency graph (per ROI).
    pub index: u16,
    /// Region of interest.
    pub roi: u8,
}

impl fmt::Display for OpRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "operation {} (ROI {})", self.index, self.roi)
    }
}

/// Which descriptor list an index refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ListKind {
    /// The dependency graph / operation list (operation indexes).
    Operations,
    /// The LUT list.
    Luts,
    /// The ROI array.
    Rois,
}

/// A firmware failure. After any error the engine has dropped the task and is idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The hardware interface refused an access.
    Hw(HwError),
    /// A descriptor could not be decoded (short read).
    Decode(DecodeError),
    /// An address-list index field (`i16` in the descriptors) is negative where an address
    /// is required.
    NoAddress {
        /// The operation, if the field belongs to one.
        op: Option<OpRef>,
        /// The descriptor field.
        field: &'static str,
        /// The value found.
        value: i16,
    },
    /// An index into one of the task's lists is out of range.
    BadIndex {
        /// The list.
        list: ListKind,
        /// The index found.
        index: i32,
        /// Entries in the list.
        count: u32,
        /// Where the index was found (descriptor field).
        field: &'static str,
    },
    /// A dependency-graph entry names an unknown processor type.
    BadOpType {
        /// The operation.
        op: OpRef,
        /// The raw `op_type`.
        value: u8,
    },
    /// A link in the dependency graph points at an operation of the wrong processor
    /// (consumer slot `i` must name a processor-`i` operation; a fused parent must run on
    /// the preceding processor; `op_head[i]` must be a processor-`i` operation).
    OpTypeMismatch {
        /// The operation holding the link.
        op: OpRef,
        /// The operation it names.
        target: u16,
        /// The processor type the link requires.
        expected: OpType,
        /// The processor type of the target.
        found: OpType,
    },
    /// A descriptor field holds a value outside its range.
    InvalidField {
        /// The operation.
        op: OpRef,
        /// The descriptor field.
        field: &'static str,
        /// The value found.
        value: u32,
    },
    /// The operation needs hardware this configuration does not have.
    FeatureAbsent {
        /// The operation.
        op: OpRef,
        /// The missing feature.
        feature: Feature,
    },
    /// The network has more operations (times ROIs) than the engine can track.
    TooManyOps {
        /// `num_operations * num_rois` of the network.
        ops: u32,
        /// The engine's capacity.
        max: u32,
    },
    /// An operation waits for more events than its producers can ever send, or is not on
    /// its processor's operation chain, so the task could never complete.
    Unsatisfiable {
        /// The operation.
        op: OpRef,
        /// Its dependency count.
        needed: u8,
        /// Events that can reach it.
        possible: u32,
    },
    /// An operation received more events than its dependency count.
    DependencyUnderflow {
        /// The operation.
        op: OpRef,
    },
    /// The hardware is idle, no event is pending, and the task is not complete.
    Stalled {
        /// Operations completed.
        done: u32,
        /// Operations in the task.
        total: u32,
    },
    /// A status register did not reach the expected state in time.
    Timeout {
        /// The unit.
        block: Block,
        /// Register offset inside the unit.
        offset: u32,
        /// The last value read.
        last: u32,
    },
    /// The engine's [`HwConfig`](crate::HwConfig) is a build this firmware was compiled
    /// without (Cargo features `nv_full`, `nv_small`, ... narrow it).
    ConfigNotCompiled {
        /// The build's name.
        name: &'static str,
    },
    /// A task is already running.
    Busy,
    /// No task is running.
    NoTask,
}

impl From<HwError> for Error {
    fn from(e: HwError) -> Self {
        Error::Hw(e)
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::Decode(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Hw(e) => write!(f, "hardware access failed: {e}"),
            Error::Decode(e) => write!(f, "descriptor: {e}"),
            Error::NoAddress { op, field, value } => {
                write!(f, "{field} = {value} is not an address-list index")?;
                if let Some(op) = op {
                    write!(f, " in {op}")?;
                }
                Ok(())
            }
            Error::BadIndex {
                list,
                index,
                count,
                field,
            } => write!(
                f,
                "{field} = {index} is outside the {list:?} list ({count} entries)"
            ),
            Error::BadOpType { op, value } => write!(f, "{op} has unknown op_type {value}"),
            Error::OpTypeMismatch {
                op,
                target,
                expected,
                found,
            } => write!(
                f,
                "{op} links to operation {target} as a {expected:?} operation, but it is {found:?}"
            ),
            Error::InvalidField { op, field, value } => {
                write!(f, "{op}: {field} = {value} is out of range")
            }
            Error::FeatureAbsent { op, feature } => {
                write!(f, "{op} needs {feature:?}, which this hardware lacks")
            }
            Error::TooManyOps { ops, max } => {
                write!(
                    f,
                    "network has {ops} operations, the engine tracks at most {max}"
                )
            }
            Error::Unsatisfiable {
                op,
                needed,
                possible,
            } => write!(
                f,
                "{op} waits for {needed} events but only {possible} can ever arrive"
            ),
            Error::DependencyUnderflow { op } => {
                write!(f, "{op} received more events than its dependency count")
            }
            Error::Stalled { done, total } => write!(
                f,
                "task stalled: hardware idle with {done} of {total} operations done"
            ),
            Error::Timeout {
                block,
                offset,
                last,
            } => write!(
                f,
                "timed out polling {} register {offset:#x} (last value {last:#x})",
                block.name()
            ),
            Error::ConfigNotCompiled { name } => write!(
                f,
                "this firmware was compiled without the {name} configuration"
            ),
            Error::Busy => write!(f, "a task is already running"),
            Error::NoTask => write!(f, "no task is running"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for HwError {}

#[cfg(feature = "std")]
impl std::error::Error for Error {}
