//! [`KmdOs`] over the Linux glue: MMIO, the DMA carve-out, `ktime`, the IRQ wait queue.
//!
//! Registers: the glue bounds-checks the offset against the mapped aperture (a register
//! outside it is `NoSuchRegister`, never an access out of the mapping). Device memory: every
//! buffer lives in one coherent DMA allocation made at probe, so a device address is the
//! allocation's CPU address plus its offset from the allocation's DMA address; the glue
//! checks the whole range against the allocation.
//!
//! Interrupts: the glue's hard IRQ handler masks the line (`disable_irq_nosync`), because
//! the GLB interrupt is level-triggered and only the firmware, later and in process context,
//! clears its status; it then wakes the waiter. The next wait (or the end of the submit)
//! unmasks it. Before sleeping, the glue's wait also reads `GLB S_INTR_STATUS` itself, so an
//! edge lost while masked (MSI is edge-triggered) cannot strand a task. The wait is killable:
//! a fatal signal ends it with [`Wait::Interrupted`] (the task fails with `EINTR`).

use core::ffi::c_void;

use nvdla_firmware::hw::DeviceAddr;
use nvdla_firmware::regs::{glb, Block};
use nvdla_firmware::{HwConfig, HwError};
use nvdla_kmd::{KmdOs, Wait};

extern "C" {
    fn nvdla_glue_reg_read(ctx: *mut c_void, offset: u32, value: *mut u32) -> i32;
    fn nvdla_glue_reg_write(ctx: *mut c_void, offset: u32, value: u32) -> i32;
    fn nvdla_glue_mem_read(ctx: *mut c_void, addr: u64, buf: *mut u8, len: usize) -> i32;
    fn nvdla_glue_mem_write(ctx: *mut c_void, addr: u64, buf: *const u8, len: usize) -> i32;
    fn nvdla_glue_now_ms(ctx: *mut c_void) -> u64;
    fn nvdla_glue_wait_irq(ctx: *mut c_void, deadline_ms: u64, forever: bool) -> i32;
    fn nvdla_glue_reset(ctx: *mut c_void);
}

/// The host services of one device, reached through the glue's device context.
pub struct LinuxOs {
    /// The glue's `struct nvdla_device *`, opaque here.
    ctx: *mut c_void,
    /// Byte offset of `GLB S_INTR_STATUS` for this hardware generation.
    intr_status: u32,
}

impl LinuxOs {
    /// Services of the glue device `ctx` for hardware `hw`.
    ///
    /// `ctx` must stay valid until this value is dropped (the glue frees the Rust device
    /// before its own context).
    pub fn new(ctx: *mut c_void, hw: &HwConfig) -> Self {
        Self {
            ctx,
            intr_status: Block::Glb.base(hw.version()) + glb::S_INTR_STATUS,
        }
    }

    /// Byte offset of the interrupt status register (the glue's IRQ handler reads it to
    /// tell whether a shared line is ours).
    pub fn intr_status_offset(&self) -> u32 {
        self.intr_status
    }
}

impl KmdOs for LinuxOs {
    fn reg_read(&mut self, offset: u32) -> Result<u32, HwError> {
        if !offset.is_multiple_of(4) {
            return Err(HwError::UnalignedRegister { offset });
        }
        let mut value = 0u32;
        // SAFETY: `ctx` is valid (constructor contract); `value` is a live local.
        match unsafe { nvdla_glue_reg_read(self.ctx, offset, &mut value) } {
            0 => Ok(value),
            _ => Err(HwError::NoSuchRegister { offset }),
        }
    }

    fn reg_write(&mut self, offset: u32, value: u32) -> Result<(), HwError> {
        if !offset.is_multiple_of(4) {
            return Err(HwError::UnalignedRegister { offset });
        }
        // SAFETY: `ctx` is valid (constructor contract).
        match unsafe { nvdla_glue_reg_write(self.ctx, offset, value) } {
            0 => Ok(()),
            _ => Err(HwError::NoSuchRegister { offset }),
        }
    }

    fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError> {
        // SAFETY: `ctx` is valid; `buf` is a live, writable slice of `buf.len()` bytes.
        match unsafe { nvdla_glue_mem_read(self.ctx, addr.0, buf.as_mut_ptr(), buf.len()) } {
            0 => Ok(()),
            _ => Err(HwError::MemoryFault {
                addr,
                len: buf.len(),
            }),
        }
    }

    fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError> {
        // SAFETY: `ctx` is valid; `data` is a live slice of `data.len()` bytes.
        match unsafe { nvdla_glue_mem_write(self.ctx, addr.0, data.as_ptr(), data.len()) } {
            0 => Ok(()),
            _ => Err(HwError::MemoryFault {
                addr,
                len: data.len(),
            }),
        }
    }

    fn now_ms(&mut self) -> u64 {
        // SAFETY: `ctx` is valid (constructor contract).
        unsafe { nvdla_glue_now_ms(self.ctx) }
    }

    fn wait_for_interrupt(&mut self, deadline_ms: Option<u64>) -> Wait {
        // (The glue first reads S_INTR_STATUS: a status bit set while the line was masked
        // may not produce a new MSI edge.)
        let (deadline, forever) = match deadline_ms {
            Some(d) => (d, false),
            None => (0, true),
        };
        // SAFETY: `ctx` is valid (constructor contract).
        match unsafe { nvdla_glue_wait_irq(self.ctx, deadline, forever) } {
            1 => Wait::Interrupt,
            0 => Wait::TimedOut,
            _ => Wait::Interrupted,
        }
    }

    fn reset(&mut self) {
        // SAFETY: `ctx` is valid (constructor contract).
        unsafe { nvdla_glue_reset(self.ctx) }
    }
}
