//! The device a runtime drives: buffers it can allocate and see, and tasks it can submit.
//!
//! [`Device`] is the UMD's whole view of the driver, modelled on the four `opendla` ioctls
//! (see [`crate::uapi`]). A backend (Linux DRM node, in-process KMD, socket, ...) implements
//! it; the runtime is written against the trait only.
//!
//! Handles are [`BufferHandle`] newtypes so that a byte offset or a count cannot be passed
//! where a buffer is expected, and they are never zero (zero is not a valid GEM handle).

use core::fmt;
use core::num::NonZeroU32;

use crate::uapi;

/// A buffer object (GEM) handle, valid on the [`Device`] that created it. Never zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BufferHandle(NonZeroU32);

impl BufferHandle {
    /// Wraps a raw handle; `None` for zero, which no driver hands out.
    pub const fn new(raw: u32) -> Option<Self> {
        match NonZeroU32::new(raw) {
            Some(v) => Some(Self(v)),
            None => None,
        }
    }

    /// The raw value as carried in the ioctl structures.
    pub const fn get(self) -> u32 {
        self.0.get()
    }
}

impl fmt::Display for BufferHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bo#{}", self.0)
    }
}

/// One address-list entry: `offset` bytes into buffer `handle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferAddress {
    /// The buffer.
    pub handle: BufferHandle,
    /// Byte offset inside the buffer; the device rejects it unless it is below the size.
    pub offset: u64,
}

impl BufferAddress {
    /// The ioctl form of this entry (reserved field zero).
    pub const fn to_uapi(self) -> uapi::NvdlaMemHandle {
        uapi::NvdlaMemHandle {
            handle: self.handle.get(),
            reserved: 0,
            offset: self.offset,
        }
    }
}

/// How long the driver waits for a task to complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Timeout {
    /// Wait forever ([`uapi::NO_TIMEOUT`]).
    #[default]
    Never,
    /// Give up after this many milliseconds (never [`uapi::NO_TIMEOUT`]).
    Millis(u32),
}

impl Timeout {
    /// The value of `SubmitTask::timeout`.
    pub const fn to_uapi(self) -> u32 {
        match self {
            Timeout::Never => uapi::NO_TIMEOUT,
            // NO_TIMEOUT itself would mean "never": clamp one below.
            Timeout::Millis(ms) if ms == uapi::NO_TIMEOUT => uapi::NO_TIMEOUT - 1,
            Timeout::Millis(ms) => ms,
        }
    }
}

/// One DLA task: its address list (entry 0 is the network descriptor) and timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task<'a> {
    /// The address list, at most [`uapi::MAX_BUFFERS_PER_TASK`] entries.
    pub addresses: &'a [BufferAddress],
    /// Completion timeout.
    pub timeout: Timeout,
}

/// Which device operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// [`Device::create_buffer`] (GEM_CREATE).
    CreateBuffer,
    /// [`Device::map_buffer`] (GEM_MMAP + mmap).
    MapBuffer,
    /// [`Device::destroy_buffer`] (GEM_DESTROY).
    DestroyBuffer,
    /// [`Device::submit`] (SUBMIT).
    Submit,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::CreateBuffer => "GEM_CREATE",
            Operation::MapBuffer => "GEM_MMAP",
            Operation::DestroyBuffer => "GEM_DESTROY",
            Operation::Submit => "SUBMIT",
        })
    }
}

/// A failed device operation: what was attempted, the driver's errno, and the driver's
/// account of it when the backend has one.
///
/// Backends report the driver's (or the OS's) positive errno unchanged, so the value means
/// the same whether the KMD runs in the kernel or in process. A kernel driver can only
/// return the errno (its diagnosis goes to the kernel log); an in-process or remote KMD
/// also returns its message in `detail` (which task, which operation, engine state).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeviceError {
    /// The operation.
    pub op: Operation,
    /// Positive Linux errno (`EINVAL` = 22, ...).
    pub errno: i32,
    /// The driver's explanation, if it gave one.
    pub detail: Option<String>,
}

impl DeviceError {
    /// The errno as the KMD's error enum, if it is one the KMD produces.
    pub fn kind(&self) -> Option<nvdla_kmd::error::Error> {
        nvdla_kmd::error::Error::from_errno(self.errno)
    }

    /// Builds an error from a KMD error.
    pub fn from_kmd(op: Operation, e: nvdla_kmd::error::Error) -> Self {
        Self::new(op, e)
    }

    /// An error of `op` with the KMD's errno `e` and no detail.
    pub fn new(op: Operation, e: nvdla_kmd::error::Error) -> Self {
        Self::from_errno(op, e.errno())
    }

    /// An error of `op` with a raw positive errno and no detail.
    pub fn from_errno(op: Operation, errno: i32) -> Self {
        Self {
            op,
            errno,
            detail: None,
        }
    }

    /// The same error with the driver's explanation attached.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            Some(k) => write!(f, "{} failed: {} (errno {})", self.op, k.name(), self.errno)?,
            None => write!(f, "{} failed: errno {}", self.op, self.errno)?,
        }
        match &self.detail {
            Some(d) => write!(f, ": {d}"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for DeviceError {}

/// A device as the runtime sees it.
///
/// Contract every implementation MUST keep:
/// - `create_buffer` MUST reject `size == 0` and return a handle that is distinct from every
///   other live handle of this device; the buffer MUST read as zero until written.
/// - `map_buffer` MUST give a slice of exactly the size asked at creation (not rounded up),
///   backed by the memory the device reads and writes at that buffer's device address; what
///   the runtime writes there MUST be visible to the next `submit`, and what the device wrote
///   during a completed `submit` MUST be visible through the next `map_buffer`.
/// - `destroy_buffer` MUST fail with `ENOENT` for an unknown handle, and MUST NOT free a buffer
///   a running task still uses (it fails with `EBUSY` or defers the release).
/// - `submit` MUST validate the whole submit before anything runs (counts, then handles with
///   `ENOENT`, then offsets against buffer sizes with `EINVAL`), and MUST return only when every
///   task has completed, failed, or timed out (`ETIMEDOUT`).
/// - No method may panic on bad arguments; every failure is a [`DeviceError`].
pub trait Device {
    /// Allocates a zeroed buffer of `size` bytes (GEM_CREATE).
    fn create_buffer(&mut self, size: u64) -> Result<BufferHandle, DeviceError>;

    /// Allocates a buffer of `size` bytes in the on-chip CV-SRAM behind the secondary
    /// memory interface (GEM_CREATE with [`nvdla_kmd::bo::BO_FLAG_CVSRAM`]): a loadable's
    /// SRAM-domain memory, scratch that only the engines touch (its surfaces are addressed
    /// as `CV`). It has no host mapping. Devices without CV-SRAM refuse, as the default does.
    fn create_sram_buffer(&mut self, size: u64) -> Result<BufferHandle, DeviceError> {
        let _ = size;
        Err(
            DeviceError::new(Operation::CreateBuffer, nvdla_kmd::Error::Invalid)
                .with_detail("this device has no CV-SRAM to allocate"),
        )
    }

    /// Host access to the bytes of a buffer (GEM_MMAP + `mmap`).
    fn map_buffer(&mut self, handle: BufferHandle) -> Result<&mut [u8], DeviceError>;

    /// Releases a buffer (GEM_DESTROY); its handle becomes invalid.
    fn destroy_buffer(&mut self, handle: BufferHandle) -> Result<(), DeviceError>;

    /// Runs `tasks` in order and waits for them (SUBMIT).
    fn submit(&mut self, tasks: &[Task<'_>]) -> Result<(), DeviceError>;

    /// What the hardware timed during the submits since the last call: the RTL's measured
    /// cycles, or the in-process model's estimates when profiling is on
    /// ([`Device::set_profiling`]); the default says nothing.
    fn take_timings(&mut self) -> Option<DeviceTimings> {
        None
    }

    /// Asks a device that can estimate cycles (the in-process model) to keep its timeline
    /// for [`Device::take_timings`]. Devices that measure (the RTL) always do; the others
    /// ignore it.
    fn set_profiling(&mut self, _on: bool) {}

    /// The memory timing a device that estimates cycles should assume instead of its
    /// defaults (the in-process model; docs/performance.md). The others ignore it.
    fn set_memory_timing(&mut self, _t: &MemoryTiming) {}
}

/// Memory timing for a cycle model: each field replaces the model's default when set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MemoryTiming {
    /// DRAM (MCIF) bytes per cycle.
    pub dram_bytes_per_cycle: Option<f64>,
    /// DRAM read latency in cycles.
    pub dram_latency: Option<u64>,
    /// CVSRAM (CVIF) bytes per cycle.
    pub sram_bytes_per_cycle: Option<f64>,
    /// CVSRAM read latency in cycles.
    pub sram_latency: Option<u64>,
}

/// One hardware operation as the device timed it, in clock cycles of the accelerator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpTiming {
    /// The engine: `conv` (CDMA enabled to CACC done), `sdp`, `pdp`, `cdp`, `rubik`.
    pub engine: &'static str,
    /// The register group (0 or 1) the operation was programmed in.
    pub group: u8,
    /// Cycle of the `D_OP_ENABLE` write that started it.
    pub enabled: u64,
    /// Cycle at which its done interrupt was seen (`None`: it never finished).
    pub done: Option<u64>,
    /// The cycle model's account of it (`None` from a device that measures, the RTL).
    pub cost: Option<OpCost>,
}

/// The cycle model's account of one operation (the in-process model with profiling on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpCost {
    /// Cycle it started (its engine free).
    pub start: u64,
    /// Cycle of its done interrupt.
    pub end: u64,
    /// Its shape: `SxR/stride C>K WxH` (a convolution) or `WxHxC` (the cube an engine
    /// processes).
    pub shape: String,
    /// Multiply-adds.
    pub macs: u64,
    /// Multiply-adds the MAC array does per cycle at this precision (0: not a convolution).
    pub peak_macs_per_cycle: u64,
    /// Datapath cycles at full rate (MAC array or the engine's throughput).
    pub compute_cycles: u64,
    /// Cycles its memory traffic takes at the interfaces' bandwidth.
    pub memory_cycles: u64,
    /// DRAM bytes read and written.
    pub dram_bytes: u64,
    /// CVSRAM bytes read and written.
    pub sram_bytes: u64,
    /// What bounded it: `MAC`, `engine`, `DRAM`, `CVSRAM` or `fixed`.
    pub pole: &'static str,
}

impl OpTiming {
    /// Cycles from enable to done.
    pub fn cycles(&self) -> Option<u64> {
        self.done.map(|d| d.saturating_sub(self.enabled))
    }
}

/// What a device timed during one or more submits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceTimings {
    /// Every operation, in the order it was enabled.
    pub ops: Vec<OpTiming>,
    /// Cycles from each submit's first register access to its last interrupt, summed.
    pub total_cycles: u64,
    /// Bytes the accelerator read from and wrote to memory during the submit.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Cycles a model estimated, rather than hardware measured.
    pub modelled: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_is_never_zero() {
        assert!(BufferHandle::new(0).is_none());
        assert_eq!(BufferHandle::new(7).map(BufferHandle::get), Some(7));
        assert_eq!(
            core::mem::size_of::<Option<BufferHandle>>(),
            core::mem::size_of::<u32>()
        );
    }

    #[test]
    fn timeout_encoding() {
        assert_eq!(Timeout::Never.to_uapi(), uapi::NO_TIMEOUT);
        assert_eq!(Timeout::Millis(100).to_uapi(), 100);
        assert_eq!(Timeout::Millis(u32::MAX).to_uapi(), u32::MAX - 1);
    }

    #[test]
    fn address_to_uapi_zeroes_reserved() {
        let a = BufferAddress {
            handle: BufferHandle::new(3).unwrap(),
            offset: 0x40,
        };
        assert_eq!(
            a.to_uapi(),
            uapi::NvdlaMemHandle {
                handle: 3,
                reserved: 0,
                offset: 0x40
            }
        );
    }

    #[test]
    fn error_display_names_errno() {
        let e = DeviceError::from_kmd(Operation::Submit, nvdla_kmd::error::Error::NoEntry);
        assert_eq!(e.errno, 2);
        assert_eq!(e.to_string(), "SUBMIT failed: ENOENT (errno 2)");
        let e = DeviceError::from_errno(Operation::MapBuffer, 1234);
        assert_eq!(e.to_string(), "GEM_MMAP failed: errno 1234");
        let e = DeviceError::new(Operation::Submit, nvdla_kmd::error::Error::TimedOut)
            .with_detail("task 0: timed out");
        assert_eq!(
            e.to_string(),
            "SUBMIT failed: ETIMEDOUT (errno 110): task 0: timed out"
        );
    }
}
