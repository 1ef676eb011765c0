//! The runner: walks an image's tasks in order, the accelerator's through the firmware,
//! the CPU's through the EMU.

use embedded_hal::delay::DelayNs;
use nvdla_firmware::hw::{DeviceAddr, Hw, Region};
use nvdla_firmware::regs::{glb, Block};
use nvdla_firmware::{Engine, HwConfig, HwError, Progress, DEFAULT_MAX_OPS};

use crate::image::{
    AddressEntry, Header, ImageError, Interface, TaskEntry, TensorEntry, ADDRESS_ENTRY_SIZE,
    FLAG_MODEL_PRECISIONS, HEADER_SIZE, TASK_ENTRY_SIZE, TENSOR_ENTRY_SIZE,
};
use crate::mmio::{DmaRegion, Registers};

/// Timeout of a DLA task whose entry gives none, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u32 = 30_000;
/// Microseconds between two polls of the interrupt status.
pub const POLL_INTERVAL_US: u32 = 10;

/// What the runner needs of the board besides the accelerator: a clock, a delay, and cache
/// maintenance around tasks.
///
/// [`DelayNs`] (embedded-hal) spaces the polls of the interrupt status; `now_us` bounds the
/// wait. On a CPU whose caches do not snoop the accelerator's accesses, `before_task`
/// cleans and `after_task` invalidates the image's memory (both do nothing by default, which
/// is right for coherent systems and for QEMU).
pub trait Platform: DelayNs {
    /// Microseconds on a monotonic clock.
    fn now_us(&mut self) -> u64;

    /// Called before the accelerator starts a task: make CPU writes to `region` visible to it.
    fn before_task(&mut self, region: &DmaRegion) {
        let _ = region;
    }

    /// Called after a task: make the accelerator's writes to `region` visible to the CPU.
    fn after_task(&mut self, region: &DmaRegion) {
        let _ = region;
    }
}

/// Why a run stopped.
#[derive(Debug)]
pub enum RunError {
    /// The image is unusable.
    Image(ImageError),
    /// The image is for a hardware build index this firmware does not know.
    UnknownBuild(u32),
    /// The image does not fit the memory it was placed in.
    ImageTooLarge {
        /// Bytes the image says it has.
        size: u64,
        /// Bytes of memory reserved for it.
        region: usize,
    },
    /// A register access failed (outside the aperture).
    Hw {
        /// The task.
        task: u32,
        /// What failed.
        error: HwError,
    },
    /// The firmware refused or failed the task.
    Firmware {
        /// The task.
        task: u32,
        /// The firmware's error (which op, list, field).
        error: nvdla_firmware::Error,
    },
    /// No interrupt within the task's timeout.
    Timeout {
        /// The task.
        task: u32,
        /// Milliseconds waited for the interrupt.
        waited_ms: u64,
        /// Operations completed.
        done: u32,
        /// Operations of the task.
        total: u32,
    },
    /// A CPU task failed.
    Emu {
        /// The task.
        task: u32,
        /// The emulator's error (which operation).
        error: nvdla_emu::TaskError,
    },
}

impl From<ImageError> for RunError {
    fn from(e: ImageError) -> Self {
        RunError::Image(e)
    }
}

impl core::fmt::Display for RunError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RunError::Image(e) => write!(f, "{e}"),
            RunError::UnknownBuild(b) => write!(f, "image for unknown hardware build {b}"),
            RunError::ImageTooLarge { size, region } => write!(
                f,
                "image of {size} bytes does not fit its {region}-byte memory region"
            ),
            RunError::Hw { task, error } => write!(f, "task {task}: {error}"),
            RunError::Firmware { task, error } => write!(f, "task {task}: firmware: {error}"),
            RunError::Timeout {
                task,
                waited_ms,
                done,
                total,
            } => write!(
                f,
                "task {task}: no interrupt within {waited_ms} ms ({done} of {total} operations done)"
            ),
            RunError::Emu { task, error } => write!(f, "task {task} (CPU): {error}"),
        }
    }
}

/// How one task went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskReport {
    /// What ran it.
    pub interface: Interface,
    /// Microseconds from start to completion.
    pub micros: u64,
    /// Interrupts handled (DLA tasks).
    pub interrupts: u32,
}

/// Runs the tasks of the image in `mem` on the accelerator behind `csb`.
///
/// No heap and no statics: the engine's state (`MAX_OPS` operations, about 2 KiB by
/// default) lives in the runner, which the caller places on its stack or in a static.
pub struct Runner<R: Registers, P: Platform, const MAX_OPS: usize = DEFAULT_MAX_OPS> {
    csb: R,
    mem: DmaRegion,
    platform: P,
    header: Header,
    engine: Engine<MAX_OPS>,
}

impl<R: Registers, P: Platform, const MAX_OPS: usize> Runner<R, P, MAX_OPS> {
    /// A runner for the image at the start of `mem` on the accelerator behind `csb`
    /// (normally a [`Csb`](crate::Csb)): checks the image's header and that it was laid out
    /// for this address, and configures the firmware for its hardware build.
    pub fn new(csb: R, mem: DmaRegion, platform: P) -> Result<Self, RunError> {
        let mut raw = [0u8; HEADER_SIZE];
        mem.read(mem.phys(), &mut raw)
            .map_err(|_| ImageError::Truncated { what: "header" })?;
        let header = Header::decode(&raw, mem.phys())?;
        if header.size > mem.len() as u64 {
            return Err(RunError::ImageTooLarge {
                size: header.size,
                region: mem.len(),
            });
        }
        let build = nvdla_firmware::nvdla_hw::Build::ALL
            .get(header.build as usize)
            .ok_or(RunError::UnknownBuild(header.build))?;
        let engine = Engine::new(HwConfig {
            model_wide_precision: header.flags & FLAG_MODEL_PRECISIONS != 0,
            ..HwConfig::new(build.hw())
        });
        Ok(Runner {
            csb,
            mem,
            platform,
            header,
            engine,
        })
    }

    /// The image's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The board support.
    pub fn platform(&mut self) -> &mut P {
        &mut self.platform
    }

    /// The image's memory.
    pub fn memory(&self) -> &DmaRegion {
        &self.mem
    }

    fn entry<const N: usize>(&self, offset: usize) -> Result<[u8; N], RunError> {
        let mut b = [0u8; N];
        self.mem
            .read(self.header.base + offset as u64, &mut b)
            .map_err(|_| ImageError::Truncated { what: "tables" })?;
        Ok(b)
    }

    /// Task `i`'s entry.
    pub fn task(&self, i: u32) -> Result<TaskEntry, RunError> {
        if i >= self.header.task_count {
            return Err(ImageError::OutOfImage {
                what: "task",
                index: i,
            }
            .into());
        }
        let b = self.entry::<TASK_ENTRY_SIZE>(self.header.task_offset(i))?;
        Ok(TaskEntry::decode(&b, &self.header, i)?)
    }

    /// Output tensor `i`'s entry, checked to lie inside the image.
    pub fn output(&self, i: u32) -> Result<TensorEntry, RunError> {
        if i >= self.header.output_count {
            return Err(ImageError::OutOfImage {
                what: "output",
                index: i,
            }
            .into());
        }
        let t =
            TensorEntry::decode(&self.entry::<TENSOR_ENTRY_SIZE>(self.header.output_offset(i))?);
        self.header.span(t.addr, t.size, "output", i)?;
        Ok(t)
    }

    /// Input tensor `i`'s entry, checked to lie inside the image.
    pub fn input(&self, i: u32) -> Result<TensorEntry, RunError> {
        if i >= self.header.input_count {
            return Err(ImageError::OutOfImage {
                what: "input",
                index: i,
            }
            .into());
        }
        let t = TensorEntry::decode(&self.entry::<TENSOR_ENTRY_SIZE>(self.header.input_offset(i))?);
        self.header.span(t.addr, t.size, "input", i)?;
        Ok(t)
    }

    /// Runs every task in order; `each` is told how each one went.
    pub fn run(&mut self, mut each: impl FnMut(u32, &TaskReport)) -> Result<(), RunError> {
        for i in 0..self.header.task_count {
            let report = self.run_task(i)?;
            each(i, &report);
        }
        Ok(())
    }

    /// Runs task `i`.
    pub fn run_task(&mut self, i: u32) -> Result<TaskReport, RunError> {
        let task = self.task(i)?;
        let start = self.platform.now_us();
        let interrupts = match task.interface {
            Interface::Dla => self.run_dla(i, &task)?,
            Interface::Emu => {
                self.run_emu(i, &task)?;
                0
            }
        };
        Ok(TaskReport {
            interface: task.interface,
            micros: self.platform.now_us().saturating_sub(start),
            interrupts,
        })
    }

    fn run_dla(&mut self, i: u32, task: &TaskEntry) -> Result<u32, RunError> {
        let timeout_ms = match task.timeout_ms {
            0 => DEFAULT_TIMEOUT_MS,
            t => t,
        };
        let glb = Block::Glb.base(self.engine.config().version());
        self.platform.before_task(&self.mem);
        let mut hw = TaskHw {
            csb: &self.csb,
            mem: &self.mem,
            platform: &mut self.platform,
            header: &self.header,
            task,
        };
        let fw = |error| RunError::Firmware { task: i, error };
        let hw_err = |error| RunError::Hw { task: i, error };
        let mut progress = self.engine.execute_task(&mut hw).map_err(fw)?;
        let mut interrupts = 0;
        while progress == Progress::Running {
            // Polled completion: the interrupt line is high while an unmasked status bit is
            // set (hwarch, "Interrupt"); the firmware reads and acknowledges the status.
            let start = hw.platform.now_us();
            loop {
                let status = hw.csb.read(glb + glb::S_INTR_STATUS).map_err(hw_err)?;
                let mask = hw.csb.read(glb + glb::S_INTR_MASK).map_err(hw_err)?;
                if status & !mask != 0 {
                    break;
                }
                let waited_ms = hw.platform.now_us().saturating_sub(start) / 1000;
                if waited_ms >= u64::from(timeout_ms) {
                    let s = self.engine.status();
                    self.engine.abort();
                    return Err(RunError::Timeout {
                        task: i,
                        waited_ms,
                        done: s.done,
                        total: s.total,
                    });
                }
                hw.platform.delay_us(POLL_INTERVAL_US);
            }
            interrupts += 1;
            progress = match self.engine.handle_interrupt(&mut hw) {
                Ok(p) => p,
                Err(e) => {
                    self.engine.abort();
                    return Err(fw(e));
                }
            };
        }
        self.platform.after_task(&self.mem);
        Ok(interrupts)
    }

    fn run_emu(&mut self, i: u32, task: &TaskEntry) -> Result<(), RunError> {
        let mut slots = [AddressEntry::default(); MAX_EMU_SLOTS];
        let n = task.address_count as usize;
        if n > MAX_EMU_SLOTS {
            return Err(ImageError::OutOfImage {
                what: "address list (too long for a CPU task) of task",
                index: i,
            }
            .into());
        }
        for (j, slot) in slots.iter_mut().enumerate().take(n) {
            let b = self.entry::<ADDRESS_ENTRY_SIZE>(task.address_offset(j as u32))?;
            *slot = AddressEntry::decode(&b);
        }
        let base = self.header.base;
        let scratch_at = self.header.scratch_addr;
        let scratch_len = self.header.scratch_size as usize;
        let memory = self.mem.idle_slice();
        // The scratch area is carved off the end of the image's memory, so that it and
        // the slots can be borrowed at once.
        let split = scratch_at
            .checked_sub(base)
            .and_then(|o| usize::try_from(o).ok())
            .filter(|&o| scratch_len > 0 && o <= memory.len())
            .unwrap_or(memory.len());
        let (memory, scratch) = memory.split_at_mut(split);
        let keep = scratch_len.min(scratch.len());
        let scratch = &mut scratch[..keep];
        let mut view = EmuSlots {
            memory,
            base,
            slots: &slots[..n],
        };
        let mut scratch = scratch;
        nvdla_emu::run_task(&mut view, &mut scratch)
            .map(|_| ())
            .map_err(|error| RunError::Emu { task: i, error })
    }
}

/// Longest address list of a CPU task (upstream's EMU tasks use 3 to 5 entries).
pub const MAX_EMU_SLOTS: usize = 64;

/// An EMU task's address list over the image's memory.
struct EmuSlots<'m> {
    memory: &'m mut [u8],
    base: u64,
    slots: &'m [AddressEntry],
}

impl nvdla_emu::SlotMemory for EmuSlots<'_> {
    fn slot_count(&self) -> usize {
        self.slots.len()
    }

    fn slot(&mut self, slot: usize) -> Option<&mut [u8]> {
        let e = self.slots.get(slot)?;
        e.region()?;
        let start = usize::try_from(e.addr.checked_sub(self.base)?).ok()?;
        let end = start.checked_add(usize::try_from(e.len).ok()?)?;
        self.memory.get_mut(start..end)
    }

    fn content_len(&self, slot: usize) -> Option<usize> {
        let c = self.slots.get(slot)?.content_len;
        (c != 0).then(|| usize::try_from(c).ok()).flatten()
    }
}

/// The firmware's view of the hardware during one task.
struct TaskHw<'r, R, P> {
    csb: &'r R,
    mem: &'r DmaRegion,
    platform: &'r mut P,
    header: &'r Header,
    task: &'r TaskEntry,
}

impl<R: Registers, P: Platform> Hw for TaskHw<'_, R, P> {
    fn reg_read(&mut self, offset: u32) -> Result<u32, HwError> {
        self.csb.read(offset)
    }

    fn reg_write(&mut self, offset: u32, value: u32) -> Result<(), HwError> {
        self.csb.write(offset, value)
    }

    fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError> {
        self.mem.read(addr.0, buf)
    }

    fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError> {
        self.mem.write(addr.0, data)
    }

    fn now_ms(&mut self) -> Option<u64> {
        Some(self.platform.now_us() / 1000)
    }

    fn address(&self, index: u16) -> Result<Region, HwError> {
        let count = u16::try_from(self.task.address_count).unwrap_or(u16::MAX);
        let missing = HwError::AddressIndex { index, count };
        if u32::from(index) >= self.task.address_count {
            return Err(missing);
        }
        let mut b = [0u8; ADDRESS_ENTRY_SIZE];
        let at = self.header.base + self.task.address_offset(u32::from(index)) as u64;
        self.mem.read(at, &mut b).map_err(|_| missing)?;
        let e = AddressEntry::decode(&b);
        let region = e.region().ok_or(missing)?;
        // The entry's memory must be the image's: the firmware trusts what it returns.
        self.mem
            .offset_of(e.addr, usize::try_from(e.len).map_err(|_| missing)?)
            .ok_or(HwError::MemoryFault {
                addr: region.addr,
                len: usize::try_from(e.len).unwrap_or(usize::MAX),
            })?;
        Ok(region)
    }
}
