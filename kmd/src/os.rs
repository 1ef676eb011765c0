//! What the KMD needs from the system around it.
//!
//! The driver core is the same on every host; what differs is how it reaches the NVDLA
//! (MMIO through `ioremap`, a CSB bridge, an in-process model), how it learns of the
//! interrupt (an IRQ handler waking a waiter, polling a model), and how it tells time.
//! [`KmdOs`] is that whole surface. A Linux module implements it over `readl`/`writel`, a
//! wait queue and `jiffies`; the in-process virtual platform over the hardware model.

use nvdla_firmware::hw::DeviceAddr;
use nvdla_firmware::HwError;

use alloc::string::String;

/// The outcome of [`KmdOs::wait_for_interrupt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    /// The NVDLA interrupt line is asserted.
    Interrupt,
    /// The deadline passed (or, on a model, no interrupt can ever arrive although nothing
    /// failed) with the line low.
    TimedOut,
    /// The waiting process was killed (a fatal signal): the task is abandoned at once and
    /// fails with `EINTR`.
    Interrupted,
    /// The accelerator reported an error instead of completing, so no interrupt will come:
    /// the task fails at once with the fault's errno, not as a timeout.
    Fault(HwFault),
}

/// What kind of error the accelerator reported ([`Wait::Fault`]), which decides the errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HwFaultKind {
    /// An engine refused its register programming: the task's descriptors ask for something
    /// this hardware cannot do (often a loadable compiled for another configuration):
    /// `EINVAL`.
    InvalidProgramming,
    /// A DMA outside device memory: `EFAULT`.
    Memory,
    /// Anything else (e.g. a feature a hardware model does not implement): `EIO`.
    Other,
}

/// An error the accelerator reported while running a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HwFault {
    /// Its kind.
    pub kind: HwFaultKind,
    /// The OS's account of it (which block, what is wrong), shown first in the error.
    pub detail: String,
}

/// The host services of the driver core.
///
/// Contract every implementation MUST keep:
/// - register accesses are 32-bit, at byte offsets from the NVDLA register base, and reach
///   the hardware in program order;
/// - `mem_read`/`mem_write` access device memory at device addresses (the IOVAs the KMD
///   gave its buffers) and fail with [`HwError::MemoryFault`] outside it, never panic;
/// - `now_ms` is monotonic (never goes back) and does not overflow in the device's life;
/// - `wait_for_interrupt` returns [`Wait::Interrupt`] as soon as the line is asserted
///   (immediately if it already is), [`Wait::Fault`] as soon as the hardware reports an
///   error that ends the task, and [`Wait::TimedOut`] no earlier than `deadline_ms`
///   (`None` waits forever, unless the implementation knows no interrupt can come);
/// - a wait may end early with [`Wait::Interrupted`] when the host kills the waiting task
///   (on Linux, a fatal signal: the wait is killable);
/// - `reset` returns the accelerator to its reset state (every engine idle, register
///   groups cleared, interrupts deasserted) and leaves device memory untouched.
pub trait KmdOs {
    /// Reads the 32-bit register at byte `offset`.
    fn reg_read(&mut self, offset: u32) -> Result<u32, HwError>;

    /// Writes the 32-bit register at byte `offset`.
    fn reg_write(&mut self, offset: u32, value: u32) -> Result<(), HwError>;

    /// Reads device memory.
    fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError>;

    /// Writes device memory.
    fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError>;

    /// Milliseconds on a monotonic clock.
    fn now_ms(&mut self) -> u64;

    /// Waits until the interrupt line is asserted or `deadline_ms` (on [`now_ms`](Self::now_ms)'s
    /// clock) passes.
    fn wait_for_interrupt(&mut self, deadline_ms: Option<u64>) -> Wait;

    /// Resets the accelerator (after a timeout or a failed task).
    fn reset(&mut self);
}
