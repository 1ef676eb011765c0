//! Typed errors of the firmware and of its hardware interface.
//!
//! Errors carry the values needed to diagnose them (which register, which address, which
//! address-list index) and never allocate.

use core::fmt;

use crate::hw::DeviceAddr;

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

/// A firmware failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The hardware interface refused an access.
    Hw(HwError),
}

impl From<HwError> for Error {
    fn from(e: HwError) -> Self {
        Error::Hw(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Hw(e) => write!(f, "hardware access failed: {e}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for HwError {}

#[cfg(feature = "std")]
impl std::error::Error for Error {}
