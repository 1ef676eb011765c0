//! The firmware's only window on the world: the [`Hw`] trait.
//!
//! Three kinds of access reach the hardware:
//!
//! - **CSB registers**: NVDLA's configuration space bus, 32-bit registers addressed by byte
//!   offset from the start of the NVDLA register aperture (GLB at 0x0000, then one block per
//!   unit). On silicon this is MMIO, on the virtual platform a function call.
//! - **Device memory**: what the engines read and write through DBB (DRAM) or CVSRAM,
//!   addressed by [`DeviceAddr`]. The firmware reads descriptors from it (re-reading them
//!   when needed) and never writes to it: [`Hw::mem_write`] and [`Hw::write_indexed`]
//!   (upstream's `dla_data_write`) are part of the trait for hosts and tests, but nothing in
//!   this firmware calls them; it writes back no descriptor, status or statistics (it does
//!   not read `stat_list_index`). The runtime, not the firmware, rewrites legacy surface
//!   lists in device memory, before the task is submitted.
//! - **The task's address list**: the kernel driver validated the submit and translated
//!   every (buffer, offset) entry to a device address; the network descriptor refers to its
//!   op, surface, dependency and LUT lists by index into this list.
//!
//! Implementations live in the kernel driver (Linux, in-process) and in tests; the firmware
//! is written against the trait only.

use crate::error::HwError;

/// An address on the engine's memory bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DeviceAddr(pub u64);

impl DeviceAddr {
    /// `self + off`, `None` on overflow.
    pub const fn checked_add(self, off: u64) -> Option<DeviceAddr> {
        match self.0.checked_add(off) {
            Some(v) => Some(DeviceAddr(v)),
            None => None,
        }
    }
}

/// One translated address-list entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Region {
    /// Device address of the entry (buffer address + the entry's offset).
    pub addr: DeviceAddr,
    /// Bytes from `addr` to the end of the entry's buffer (always at least 1).
    pub len: u64,
}

/// Access to the NVDLA hardware and to the running task's memory.
///
/// Contract every implementation MUST keep:
/// - `reg_read`/`reg_write` MUST reject an offset that is not a multiple of 4
///   ([`HwError::UnalignedRegister`]) and one outside the hardware's register space
///   ([`HwError::NoSuchRegister`]) without touching the hardware; otherwise each call is
///   exactly one 32-bit bus access, in program order (no merging, caching or reordering of
///   register accesses: writes to `D_OP_ENABLE` start engines).
/// - `mem_read`/`mem_write` MUST either transfer all bytes or none and fail with
///   [`HwError::MemoryFault`]; an access MUST NOT wrap around the address space. A zero-length
///   access succeeds. Data written by `mem_write` MUST be visible to the engines when the
///   next register write is issued (the implementation flushes or orders as its platform
///   needs).
/// - `address` MUST return the translated entry `index` of the current task's address list,
///   or [`HwError::AddressIndex`] if there is no such entry; the region it returns MUST lie
///   inside one buffer the task's submitter owns.
/// - No method may panic.
pub trait Hw {
    /// Reads the 32-bit CSB register at byte `offset`.
    fn reg_read(&mut self, offset: u32) -> Result<u32, HwError>;

    /// Writes the 32-bit CSB register at byte `offset`.
    fn reg_write(&mut self, offset: u32, value: u32) -> Result<(), HwError>;

    /// Reads `buf.len()` bytes of device memory at `addr`.
    fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError>;

    /// Writes `data` to device memory at `addr`.
    fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError>;

    /// Entry `index` of the current task's address list.
    fn address(&self, index: u16) -> Result<Region, HwError>;

    /// Milliseconds on a monotonic clock, if the port has one (default: none).
    ///
    /// With a clock, a status poll gives up after
    /// [`POLL_TIMEOUT_MS`](crate::POLL_TIMEOUT_MS) whatever the bus speed (a register read
    /// takes nanoseconds over MMIO and tens of microseconds over a simulator's socket);
    /// without one it gives up after [`POLL_LIMIT`](crate::POLL_LIMIT) reads. If the port
    /// has a clock it MUST be monotonic.
    fn now_ms(&mut self) -> Option<u64> {
        None
    }

    /// Device address `offset` bytes into entry `index`, checked so that `len` bytes from it
    /// stay inside the entry's buffer ([`HwError::OutOfBounds`] otherwise).
    fn address_at(&self, index: u16, offset: u64, len: usize) -> Result<DeviceAddr, HwError> {
        let region = self.address(index)?;
        let out_of_bounds = HwError::OutOfBounds {
            index,
            offset,
            len,
            available: region.len,
        };
        let end = offset.checked_add(len as u64).ok_or(out_of_bounds)?;
        if end > region.len {
            return Err(out_of_bounds);
        }
        region.addr.checked_add(offset).ok_or(out_of_bounds)
    }

    /// Reads `buf.len()` bytes at `offset` into address-list entry `index` (upstream's
    /// `dla_data_read`), bounds-checked against the entry's buffer.
    fn read_indexed(&mut self, index: u16, offset: u64, buf: &mut [u8]) -> Result<(), HwError> {
        let addr = self.address_at(index, offset, buf.len())?;
        self.mem_read(addr, buf)
    }

    /// Writes `data` at `offset` into address-list entry `index` (upstream's
    /// `dla_data_write`), bounds-checked against the entry's buffer.
    fn write_indexed(&mut self, index: u16, offset: u64, data: &[u8]) -> Result<(), HwError> {
        let addr = self.address_at(index, offset, data.len())?;
        self.mem_write(addr, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny fixed-size hardware: 16 registers, 256 bytes of memory at 0x1000, and a
    /// two-entry address list.
    struct FakeHw {
        regs: [u32; 16],
        mem: [u8; 256],
        list: [Region; 2],
    }

    const MEM_BASE: u64 = 0x1000;

    impl FakeHw {
        fn new() -> Self {
            Self {
                regs: [0; 16],
                mem: [0; 256],
                list: [
                    Region {
                        addr: DeviceAddr(MEM_BASE),
                        len: 64,
                    },
                    Region {
                        addr: DeviceAddr(MEM_BASE + 0x80),
                        len: 16,
                    },
                ],
            }
        }

        fn reg_index(offset: u32) -> Result<usize, HwError> {
            if !offset.is_multiple_of(4) {
                return Err(HwError::UnalignedRegister { offset });
            }
            let i = (offset / 4) as usize;
            if i >= 16 {
                return Err(HwError::NoSuchRegister { offset });
            }
            Ok(i)
        }

        fn range(addr: DeviceAddr, len: usize) -> Result<core::ops::Range<usize>, HwError> {
            let fault = HwError::MemoryFault { addr, len };
            let start = addr.0.checked_sub(MEM_BASE).ok_or(fault)?;
            let end = start.checked_add(len as u64).ok_or(fault)?;
            if end > 256 {
                return Err(fault);
            }
            Ok(start as usize..end as usize)
        }
    }

    impl Hw for FakeHw {
        fn reg_read(&mut self, offset: u32) -> Result<u32, HwError> {
            Ok(self.regs[Self::reg_index(offset)?])
        }
        fn reg_write(&mut self, offset: u32, value: u32) -> Result<(), HwError> {
            self.regs[Self::reg_index(offset)?] = value;
            Ok(())
        }
        fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError> {
            buf.copy_from_slice(&self.mem[Self::range(addr, buf.len())?]);
            Ok(())
        }
        fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError> {
            self.mem[Self::range(addr, data.len())?].copy_from_slice(data);
            Ok(())
        }
        fn address(&self, index: u16) -> Result<Region, HwError> {
            self.list
                .get(usize::from(index))
                .copied()
                .ok_or(HwError::AddressIndex { index, count: 2 })
        }
    }

    #[test]
    fn indexed_access_is_bounds_checked() {
        let mut hw = FakeHw::new();
        hw.write_indexed(1, 12, &[1, 2, 3, 4]).unwrap();
        let mut b = [0u8; 4];
        hw.mem_read(DeviceAddr(MEM_BASE + 0x80 + 12), &mut b)
            .unwrap();
        assert_eq!(b, [1, 2, 3, 4]);
        hw.read_indexed(1, 12, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3, 4]);
        assert_eq!(
            hw.read_indexed(1, 13, &mut b),
            Err(HwError::OutOfBounds {
                index: 1,
                offset: 13,
                len: 4,
                available: 16
            })
        );
        assert!(matches!(
            hw.read_indexed(0, u64::MAX, &mut b),
            Err(HwError::OutOfBounds { .. })
        ));
        assert_eq!(
            hw.read_indexed(2, 0, &mut b),
            Err(HwError::AddressIndex { index: 2, count: 2 })
        );
        // Zero-length access at the very end is fine.
        hw.read_indexed(0, 64, &mut []).unwrap();
    }

    #[test]
    fn fake_keeps_the_register_contract() {
        let mut hw = FakeHw::new();
        hw.reg_write(0x3c, 7).unwrap();
        assert_eq!(hw.reg_read(0x3c), Ok(7));
        assert_eq!(
            hw.reg_read(0x3d),
            Err(HwError::UnalignedRegister { offset: 0x3d })
        );
        assert_eq!(
            hw.reg_write(0x40, 0),
            Err(HwError::NoSuchRegister { offset: 0x40 })
        );
        let mut b = [0u8; 2];
        assert_eq!(
            hw.mem_read(DeviceAddr(MEM_BASE + 255), &mut b),
            Err(HwError::MemoryFault {
                addr: DeviceAddr(MEM_BASE + 255),
                len: 2
            })
        );
    }

    #[test]
    fn display_names_context() {
        extern crate std;
        use std::string::ToString;
        let e = crate::Error::from(HwError::AddressIndex { index: 9, count: 3 });
        assert_eq!(
            e.to_string(),
            "hardware access failed: address-list index 9 out of range (list has 3)"
        );
    }
}
