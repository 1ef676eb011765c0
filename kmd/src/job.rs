//! Running one validated task on the hardware through the firmware.
//!
//! The firmware sees the world through [`nvdla_firmware::hw::Hw`]; [`TaskHw`] is that view
//! for one task: registers and memory go to the [`KmdOs`], and address-list index `i`
//! resolves to the device address of entry `i` with the bytes left in its buffer as the
//! region's length, so a descriptor that names a range past its buffer is refused by the
//! firmware before any engine is programmed with it.
//!
//! [`run`] starts the task, then alternates waiting for the interrupt (against the task's
//! deadline) and handing it to the firmware until the firmware reports completion. On any
//! failure the engine drops the task and the hardware is reset before returning, so the next
//! task starts from a clean accelerator; a timeout or a hardware fault carries the engine's
//! state at that moment for diagnosis. A fault the hardware reports ends the task at once
//! with its own errno and is never reported as a timeout.

use alloc::boxed::Box;
use core::fmt;

use nvdla_firmware::hw::{DeviceAddr, Hw, Region};
use nvdla_firmware::{Engine, EngineStatus, HwError, Progress};

use crate::error::Error;
use crate::fallible;
use crate::os::{HwFault, HwFaultKind, KmdOs, Wait};

/// The engine's state for a failure report, on the heap; `None` when even that small
/// allocation fails (the report then omits the state, the errno is unchanged).
pub type StatusReport = Option<Box<[EngineStatus; 1]>>;

/// Timeout value meaning "wait forever" (`u32::MAX` milliseconds, as upstream).
pub const NO_TIMEOUT: u32 = u32::MAX;

/// Why a task did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// The firmware refused the task or failed while running it (bad descriptors, a
    /// hardware access fault, a stall).
    Firmware(nvdla_firmware::Error),
    /// No completion within the task's timeout; the engine state when it was abandoned.
    TimedOut {
        /// Milliseconds waited.
        waited_ms: u64,
        /// The scheduler's view: which operations were programmed, running, done.
        status: StatusReport,
    },
    /// The submitter was killed while waiting ([`Wait::Interrupted`]); the task was
    /// abandoned.
    Interrupted {
        /// Milliseconds from the start of the task.
        after_ms: u64,
        /// The scheduler's view when it was abandoned.
        status: StatusReport,
    },
    /// The hardware reported an error ([`Wait::Fault`]); the engine state when it stopped.
    HardwareFault {
        /// The fault.
        fault: HwFault,
        /// Milliseconds from the start of the task.
        after_ms: u64,
        /// The scheduler's view: which operations were programmed, running, done.
        status: StatusReport,
    },
}

impl JobError {
    /// The errno an ioctl returns for this failure.
    ///
    /// Malformed descriptors are the submitter's fault (`EINVAL`), and so is programming an
    /// engine refuses; a device address the hardware could not reach is `EFAULT`; a stall
    /// or an unexpected hardware state is `EIO`; only a timeout is `ETIMEDOUT`.
    pub fn error(&self) -> Error {
        use nvdla_firmware::Error as F;
        match self {
            JobError::TimedOut { .. } => Error::TimedOut,
            JobError::Interrupted { .. } => Error::Interrupted,
            JobError::HardwareFault { fault, .. } => match fault.kind {
                HwFaultKind::InvalidProgramming => Error::Invalid,
                HwFaultKind::Memory => Error::Fault,
                HwFaultKind::Other => Error::Io,
            },
            JobError::Firmware(F::Hw(HwError::MemoryFault { .. })) => Error::Fault,
            JobError::Firmware(F::Hw(_)) => Error::Invalid,
            JobError::Firmware(F::Stalled { .. } | F::Timeout { .. }) => Error::Io,
            JobError::Firmware(F::Busy) => Error::Busy,
            JobError::Firmware(F::NoTask) => Error::Io,
            JobError::Firmware(_) => Error::Invalid,
        }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::Firmware(e) => write!(f, "firmware: {e}"),
            JobError::TimedOut { waited_ms, status } => {
                write!(f, "timed out after {waited_ms} ms")?;
                write_engine_state(f, status)
            }
            JobError::Interrupted { after_ms, status } => {
                write!(f, "abandoned after {after_ms} ms: the submitter was killed")?;
                write_engine_state(f, status)
            }
            JobError::HardwareFault {
                fault,
                after_ms,
                status,
            } => {
                write!(f, "{}; the task stopped after {after_ms} ms", fault.detail)?;
                write_engine_state(f, status)
            }
        }
    }
}

/// Appends ` with D of T operations done` and the per-processor group state of `status`
/// (`; SDP: g0 op 3 running, g1 op 5 programmed`), naming only processors that hold an
/// operation.
fn write_engine_state(f: &mut fmt::Formatter<'_>, status: &StatusReport) -> fmt::Result {
    let Some([status]) = status.as_deref() else {
        return write!(f, " (engine state not recorded: out of memory)");
    };
    write!(
        f,
        " with {} of {} operations done",
        status.done, status.total
    )?;
    const NAMES: [&str; 6] = ["BDMA", "CONV", "SDP", "PDP", "CDP", "RUBIK"];
    for (name, groups) in NAMES.iter().zip(status.groups.iter()) {
        if groups.iter().all(|g| g.op.is_none()) {
            continue;
        }
        write!(f, "; {name}:")?;
        for (i, g) in groups.iter().enumerate() {
            if let Some(op) = g.op {
                let state = if g.active {
                    "running"
                } else if g.programmed {
                    "programmed"
                } else {
                    "reserved"
                };
                write!(f, " g{i} {op} {state}")?;
            }
        }
    }
    Ok(())
}

/// The firmware's view of the hardware while one task runs.
pub struct TaskHw<'a, O: KmdOs> {
    os: &'a mut O,
    addresses: &'a [Region],
}

impl<'a, O: KmdOs> TaskHw<'a, O> {
    /// A view of `os` with the task's translated address list.
    pub fn new(os: &'a mut O, addresses: &'a [Region]) -> Self {
        Self { os, addresses }
    }
}

impl<O: KmdOs> Hw for TaskHw<'_, O> {
    fn reg_read(&mut self, offset: u32) -> Result<u32, HwError> {
        self.os.reg_read(offset)
    }

    fn reg_write(&mut self, offset: u32, value: u32) -> Result<(), HwError> {
        self.os.reg_write(offset, value)
    }

    fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError> {
        self.os.mem_read(addr, buf)
    }

    fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError> {
        self.os.mem_write(addr, data)
    }

    fn now_ms(&mut self) -> Option<u64> {
        Some(self.os.now_ms())
    }

    fn address(&self, index: u16) -> Result<Region, HwError> {
        self.addresses
            .get(usize::from(index))
            .copied()
            .ok_or(HwError::AddressIndex {
                index,
                count: u16::try_from(self.addresses.len()).unwrap_or(u16::MAX),
            })
    }
}

/// Runs one task to completion: `addresses` is its translated address list, `timeout_ms`
/// its timeout ([`NO_TIMEOUT`] waits forever). Returns the number of interrupts handled.
///
/// On failure the engine is idle and the hardware has been reset.
pub fn run<O: KmdOs, const N: usize>(
    engine: &mut Engine<N>,
    os: &mut O,
    addresses: &[Region],
    timeout_ms: u32,
) -> Result<u32, JobError> {
    let start = os.now_ms();
    let deadline = (timeout_ms != NO_TIMEOUT).then(|| start.saturating_add(u64::from(timeout_ms)));
    let result = drive(engine, os, addresses, deadline, start);
    if result.is_err() {
        engine.abort();
        os.reset();
    }
    result
}

fn drive<O: KmdOs, const N: usize>(
    engine: &mut Engine<N>,
    os: &mut O,
    addresses: &[Region],
    deadline: Option<u64>,
    start: u64,
) -> Result<u32, JobError> {
    let mut progress = engine
        .execute_task(&mut TaskHw::new(os, addresses))
        .map_err(JobError::Firmware)?;
    let mut interrupts = 0u32;
    while progress == Progress::Running {
        match os.wait_for_interrupt(deadline) {
            Wait::Interrupt => {}
            Wait::TimedOut => {
                let s = engine.status();
                let waited_ms = os.now_ms().saturating_sub(start);
                log::error!(
                    "task timed out after {waited_ms} ms ({} of {} operations done)",
                    s.done,
                    s.total
                );
                let status = fallible::try_box(s).ok();
                return Err(JobError::TimedOut { waited_ms, status });
            }
            Wait::Interrupted => {
                let s = engine.status();
                let after_ms = os.now_ms().saturating_sub(start);
                log::warn!(
                    "task abandoned after {after_ms} ms: the submitter was killed ({} of {} \
                     operations done)",
                    s.done,
                    s.total
                );
                let status = fallible::try_box(s).ok();
                return Err(JobError::Interrupted { after_ms, status });
            }
            Wait::Fault(fault) => {
                let s = engine.status();
                let after_ms = os.now_ms().saturating_sub(start);
                log::error!(
                    "hardware fault after {after_ms} ms ({} of {} operations done): {}",
                    s.done,
                    s.total,
                    fault.detail
                );
                let status = fallible::try_box(s).ok();
                return Err(JobError::HardwareFault {
                    fault,
                    after_ms,
                    status,
                });
            }
        }
        interrupts += 1;
        progress = engine
            .handle_interrupt(&mut TaskHw::new(os, addresses))
            .map_err(JobError::Firmware)?;
    }
    Ok(interrupts)
}
