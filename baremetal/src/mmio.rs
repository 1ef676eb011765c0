//! The accelerator as the CPU sees it with no OS: its register aperture and the memory it
//! shares with the CPU, both at fixed physical addresses.

use core::sync::atomic::{fence, Ordering};

use nvdla_firmware::hw::DeviceAddr;
use nvdla_firmware::HwError;
use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::registers::ReadWrite;

/// Access to NVDLA's CSB registers by byte offset: [`Csb`] on hardware; a test can put the
/// hardware model behind it.
pub trait Registers {
    /// Reads the 32-bit register at byte `offset`.
    fn read(&self, offset: u32) -> Result<u32, HwError>;
    /// Writes the 32-bit register at byte `offset`; earlier memory writes are visible to
    /// the accelerator before it.
    fn write(&self, offset: u32, value: u32) -> Result<(), HwError>;
}

/// NVDLA's CSB register aperture, memory mapped: 32-bit registers by byte offset.
///
/// Every access is one volatile 32-bit load or store (tock-registers), in program order,
/// as the firmware's [`Hw`](nvdla_firmware::hw::Hw) contract requires.
pub struct Csb<'a> {
    regs: &'a [ReadWrite<u32>],
}

impl<'a> Csb<'a> {
    /// The aperture of `len` bytes at `base`.
    ///
    /// # Safety
    /// `base` must be the virtual address (the physical one without an MMU) of NVDLA's
    /// register aperture, 4-byte aligned, mapped as device memory for `len` bytes for all of
    /// `'a`, and nothing else may create references to it.
    pub unsafe fn new(base: usize, len: usize) -> Csb<'a> {
        // SAFETY: the caller guarantees `len` bytes of device registers at `base`, aligned;
        // `ReadWrite<u32>` is a transparent `UnsafeCell<u32>` accessed only volatilely.
        let regs = unsafe { core::slice::from_raw_parts(base as *const ReadWrite<u32>, len / 4) };
        Csb { regs }
    }

    fn reg(&self, offset: u32) -> Result<&ReadWrite<u32>, HwError> {
        if !offset.is_multiple_of(4) {
            return Err(HwError::UnalignedRegister { offset });
        }
        self.regs
            .get((offset / 4) as usize)
            .ok_or(HwError::NoSuchRegister { offset })
    }

    /// Bytes of the aperture.
    pub fn len(&self) -> usize {
        self.regs.len() * 4
    }

    /// Whether the aperture is empty.
    pub fn is_empty(&self) -> bool {
        self.regs.is_empty()
    }
}

impl Registers for Csb<'_> {
    fn read(&self, offset: u32) -> Result<u32, HwError> {
        Ok(self.reg(offset)?.get())
    }

    /// A register write may start an engine that reads memory: earlier memory writes are
    /// ordered before it.
    fn write(&self, offset: u32, value: u32) -> Result<(), HwError> {
        let r = self.reg(offset)?;
        fence(Ordering::SeqCst);
        r.set(value);
        Ok(())
    }
}

/// The memory the accelerator and the CPU share: the network image, at its physical
/// address. The engines write it by DMA while a task runs, so no Rust reference to it
/// lives across a task; bytes are copied in and out, and a slice is lent only while the
/// accelerator is idle ([`DmaRegion::idle_slice`]).
pub struct DmaRegion {
    phys: u64,
    ptr: *mut u8,
    len: usize,
}

impl DmaRegion {
    /// `len` bytes at CPU address `ptr`, which the accelerator reaches at physical address
    /// `phys`.
    ///
    /// # Safety
    /// The memory must be valid for reads and writes for as long as the region is used, not
    /// be referenced by anything else, and be coherent with the accelerator's view (or the
    /// platform maintains caches around tasks, see [`crate::Platform`]).
    pub unsafe fn new(phys: u64, ptr: *mut u8, len: usize) -> DmaRegion {
        DmaRegion { phys, ptr, len }
    }

    /// Physical address of the first byte.
    pub fn phys(&self) -> u64 {
        self.phys
    }

    /// Bytes in the region.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Offset of `len` bytes at physical `addr`, if they lie inside the region.
    pub fn offset_of(&self, addr: u64, len: usize) -> Option<usize> {
        let start = usize::try_from(addr.checked_sub(self.phys)?).ok()?;
        (start.checked_add(len)? <= self.len).then_some(start)
    }

    /// Copies `buf.len()` bytes at physical `addr` out of the region.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), HwError> {
        let fault = HwError::MemoryFault {
            addr: DeviceAddr(addr),
            len: buf.len(),
        };
        let o = self.offset_of(addr, buf.len()).ok_or(fault)?;
        fence(Ordering::SeqCst);
        // SAFETY: `o..o + buf.len()` lies inside the region (checked above), which the
        // constructor's contract makes valid; `buf` is a distinct Rust buffer.
        unsafe { core::ptr::copy_nonoverlapping(self.ptr.add(o), buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Copies `data` into the region at physical `addr`.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), HwError> {
        let fault = HwError::MemoryFault {
            addr: DeviceAddr(addr),
            len: data.len(),
        };
        let o = self.offset_of(addr, data.len()).ok_or(fault)?;
        // SAFETY: as in `read`.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(o), data.len()) };
        fence(Ordering::SeqCst);
        Ok(())
    }

    /// The whole region as a slice, for CPU work while the accelerator is idle (`&mut self`:
    /// no task can run while it is lent, as running one needs the region too).
    pub fn idle_slice(&mut self) -> &mut [u8] {
        fence(Ordering::SeqCst);
        // SAFETY: the constructor's contract makes the memory valid and unaliased; the
        // accelerator is idle between tasks, and the `&mut self` borrow keeps the runner
        // from starting one while the slice lives.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}
