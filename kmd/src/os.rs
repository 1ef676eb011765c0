//! What the KMD needs from the system around it.
//!
//! The driver core is the same on every host; what differs is how it reaches the NVDLA
//! (MMIO through `ioremap`, a CSB bridge, an in-process model), how it learns of the
//! interrupt (an IRQ handler waking a waiter, polling a model), and how it tells time.
//! [`KmdOs`] is that whole surface. A Linux module implements it over `readl`/`writel`, a
//! wait queue and `jiffies`; the in-process virtual platform over the hardware model.

use nvdla_firmware::hw::DeviceAddr;
use nvdla_firmware::HwError;

/// The outcome of [`KmdOs::wait_for_interrupt`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// The NVDLA interrupt line is asserted.
    Interrupt,
    /// The deadline passed (or, on a model, no interrupt can ever arrive) with the line low.
    TimedOut,
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
///   (immediately if it already is) and [`Wait::TimedOut`] no earlier than `deadline_ms`
///   (`None` waits forever, unless the implementation knows no interrupt can come);
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
