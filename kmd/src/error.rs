//! Errno-style errors.
//!
//! The KMD answers ioctls, so its errors are the Linux errno values user space already knows
//! (`ENOENT` for an unknown handle, `EINVAL` for a bad field, ...). [`Error::errno`] gives the
//! positive Linux value; an ioctl handler returns its negation.

use core::fmt;

/// A KMD failure, one variant per errno the driver produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// `EPERM`: the caller may not do this.
    NotPermitted,
    /// `ENOENT`: no such buffer handle (or not the caller's).
    NoEntry,
    /// `EIO`: the hardware failed.
    Io,
    /// `E2BIG`: a count is above its limit (tasks per submit, addresses per task).
    TooBig,
    /// `ENOMEM`: out of memory or out of device address space.
    NoMemory,
    /// `EFAULT`: a user pointer could not be read or written.
    Fault,
    /// `EBUSY`: the object is in use (e.g. a buffer pinned by a running task).
    Busy,
    /// `EINVAL`: an argument is invalid (reserved field set, offset out of range, ...).
    Invalid,
    /// `EOVERFLOW`: a size or address computation would overflow.
    Overflow,
    /// `ETIMEDOUT`: a task did not complete within its timeout.
    TimedOut,
    /// `EINTR`: the submitter was killed while its task ran; the task was abandoned.
    Interrupted,
}

impl Error {
    /// Every variant, for tables and tests.
    pub const ALL: [Error; 11] = [
        Error::NotPermitted,
        Error::NoEntry,
        Error::Io,
        Error::TooBig,
        Error::NoMemory,
        Error::Fault,
        Error::Busy,
        Error::Invalid,
        Error::Overflow,
        Error::TimedOut,
        Error::Interrupted,
    ];

    /// The positive Linux errno value (asm-generic numbering, shared by x86, arm, arm64 and
    /// riscv).
    pub const fn errno(self) -> i32 {
        match self {
            Error::NotPermitted => 1,
            Error::NoEntry => 2,
            Error::Io => 5,
            Error::TooBig => 7,
            Error::NoMemory => 12,
            Error::Fault => 14,
            Error::Busy => 16,
            Error::Invalid => 22,
            Error::Overflow => 75,
            Error::TimedOut => 110,
            Error::Interrupted => 4,
        }
    }

    /// The symbolic errno name (`"ENOENT"`).
    pub const fn name(self) -> &'static str {
        match self {
            Error::NotPermitted => "EPERM",
            Error::NoEntry => "ENOENT",
            Error::Io => "EIO",
            Error::TooBig => "E2BIG",
            Error::NoMemory => "ENOMEM",
            Error::Fault => "EFAULT",
            Error::Busy => "EBUSY",
            Error::Invalid => "EINVAL",
            Error::Overflow => "EOVERFLOW",
            Error::TimedOut => "ETIMEDOUT",
            Error::Interrupted => "EINTR",
        }
    }

    /// The variant for a positive errno, if the KMD produces it.
    pub fn from_errno(errno: i32) -> Option<Error> {
        Error::ALL.into_iter().find(|e| e.errno() == errno)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.errno())
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_values() {
        assert_eq!(Error::Invalid.errno(), 22);
        assert_eq!(Error::NoEntry.errno(), 2);
        assert_eq!(Error::NoMemory.errno(), 12);
        assert_eq!(Error::Busy.errno(), 16);
        assert_eq!(Error::TooBig.errno(), 7);
        assert_eq!(Error::TimedOut.errno(), 110);
        assert_eq!(Error::Fault.errno(), 14);
        assert_eq!(Error::Interrupted.errno(), 4);
    }

    #[test]
    fn round_trip_and_unique() {
        for e in Error::ALL {
            assert_eq!(Error::from_errno(e.errno()), Some(e));
            assert!(e.name().starts_with('E'));
        }
        assert_eq!(Error::from_errno(0), None);
        assert_eq!(Error::from_errno(-22), None);
    }
}
