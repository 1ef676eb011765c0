//! Device-address (IOVA) allocation.
//!
//! NVDLA reaches memory through its DBB interface with up to 40-bit (or 64-bit) addresses; a
//! driver behind an IOMMU, or one that carves a window of physical memory for the engine,
//! hands every buffer object a range of device addresses in that window. This allocator is a
//! first-fit free list over a fixed window: ranges are page granular (4 KiB, the smallest
//! page an SMMU maps), freed ranges merge with their neighbours, and live ranges never
//! overlap.

use alloc::collections::BTreeMap;

use crate::error::Error;

/// Granule of device address allocation (4 KiB).
pub const PAGE_SIZE: u64 = 4096;

/// Rounds `len` up to a multiple of [`PAGE_SIZE`]; `None` on overflow.
pub const fn page_align(len: u64) -> Option<u64> {
    match len.checked_add(PAGE_SIZE - 1) {
        Some(v) => Some(v & !(PAGE_SIZE - 1)),
        None => None,
    }
}

/// A device address (what the engine puts on its memory bus); shared with the firmware.
pub use nvdla_firmware::hw::DeviceAddr;

/// First-fit allocator of page-aligned ranges inside `[base, base + size)`.
#[derive(Debug, Clone)]
pub struct IovaAllocator {
    base: u64,
    size: u64,
    /// Free ranges: start → length, non-overlapping, non-adjacent (always merged).
    free: BTreeMap<u64, u64>,
}

impl IovaAllocator {
    /// A window of `size` bytes at `base`. Both MUST be multiples of [`PAGE_SIZE`], `size`
    /// nonzero and the window must not wrap the 64-bit space; otherwise `EINVAL`.
    pub fn new(base: u64, size: u64) -> Result<Self, Error> {
        if size == 0 || !base.is_multiple_of(PAGE_SIZE) || !size.is_multiple_of(PAGE_SIZE) {
            return Err(Error::Invalid);
        }
        // The window end must be representable: `base + size` may equal 2^64 only if we
        // never compute it, so require it to fit.
        base.checked_add(size).ok_or(Error::Invalid)?;
        let mut free = BTreeMap::new();
        free.insert(base, size);
        Ok(Self { base, size, free })
    }

    /// Start of the window.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Size of the window in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes currently free.
    pub fn free_bytes(&self) -> u64 {
        self.free.values().sum()
    }

    /// Allocates `len` bytes rounded up to pages; returns the start address.
    ///
    /// `EINVAL` for `len == 0`, `EOVERFLOW` if rounding overflows, `ENOMEM` if no free range
    /// is large enough.
    pub fn alloc(&mut self, len: u64) -> Result<DeviceAddr, Error> {
        if len == 0 {
            return Err(Error::Invalid);
        }
        let len = page_align(len).ok_or(Error::Overflow)?;
        let (&start, &flen) = self
            .free
            .iter()
            .find(|(_, &flen)| flen >= len)
            .ok_or(Error::NoMemory)?;
        self.free.remove(&start);
        if flen > len {
            self.free.insert(start + len, flen - len);
        }
        Ok(DeviceAddr(start))
    }

    /// Returns a range obtained from [`alloc`](Self::alloc) with the same `len`.
    ///
    /// `EINVAL` if the range is not page aligned, leaves the window, or overlaps free space
    /// (a double free); the allocator is unchanged then.
    pub fn free(&mut self, addr: DeviceAddr, len: u64) -> Result<(), Error> {
        let start = addr.0;
        let len = page_align(len).ok_or(Error::Overflow)?;
        if len == 0 || !start.is_multiple_of(PAGE_SIZE) {
            return Err(Error::Invalid);
        }
        let end = start.checked_add(len).ok_or(Error::Invalid)?;
        if start < self.base || end > self.base + self.size {
            return Err(Error::Invalid);
        }
        let prev = self.free.range(..end).next_back().map(|(&s, &l)| (s, l));
        if let Some((ps, pl)) = prev {
            if ps + pl > start {
                return Err(Error::Invalid);
            }
        }
        let mut new_start = start;
        let mut new_len = len;
        if let Some((ps, pl)) = prev {
            if ps + pl == start {
                self.free.remove(&ps);
                new_start = ps;
                new_len += pl;
            }
        }
        if let Some(nl) = self.free.remove(&end) {
            new_len += nl;
        }
        self.free.insert(new_start, new_len);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_validation() {
        assert_eq!(IovaAllocator::new(0, 0).err(), Some(Error::Invalid));
        assert_eq!(IovaAllocator::new(1, PAGE_SIZE).err(), Some(Error::Invalid));
        assert_eq!(IovaAllocator::new(0, 100).err(), Some(Error::Invalid));
        assert_eq!(
            IovaAllocator::new(u64::MAX - PAGE_SIZE + 1, 2 * PAGE_SIZE).err(),
            Some(Error::Invalid)
        );
        assert!(IovaAllocator::new(0x8000_0000, 0x1000_0000).is_ok());
    }

    #[test]
    fn alloc_free_merge() {
        let mut a = IovaAllocator::new(0x1000_0000, 4 * PAGE_SIZE).unwrap();
        let x = a.alloc(1).unwrap();
        let y = a.alloc(PAGE_SIZE + 1).unwrap();
        let z = a.alloc(PAGE_SIZE).unwrap();
        assert_eq!(x, DeviceAddr(0x1000_0000));
        assert_eq!(y, DeviceAddr(0x1000_1000));
        assert_eq!(z, DeviceAddr(0x1000_3000));
        assert_eq!(a.alloc(1).err(), Some(Error::NoMemory));
        a.free(y, PAGE_SIZE + 1).unwrap();
        a.free(x, 1).unwrap();
        assert_eq!(a.free(x, 1).err(), Some(Error::Invalid), "double free");
        // x and y merged into three pages.
        assert_eq!(a.alloc(3 * PAGE_SIZE).unwrap(), x);
        a.free(z, PAGE_SIZE).unwrap();
        assert_eq!(a.free_bytes(), PAGE_SIZE);
    }

    #[test]
    fn rejects_bad_requests() {
        let mut a = IovaAllocator::new(0, 2 * PAGE_SIZE).unwrap();
        assert_eq!(a.alloc(0).err(), Some(Error::Invalid));
        assert_eq!(a.alloc(u64::MAX).err(), Some(Error::Overflow));
        assert_eq!(a.alloc(3 * PAGE_SIZE).err(), Some(Error::NoMemory));
        assert_eq!(a.free(DeviceAddr(0x10), 1).err(), Some(Error::Invalid));
        assert_eq!(
            a.free(DeviceAddr(2 * PAGE_SIZE), 1).err(),
            Some(Error::Invalid)
        );
        assert_eq!(a.free(DeviceAddr(0), 1).err(), Some(Error::Invalid));
        assert_eq!(a.free_bytes(), 2 * PAGE_SIZE);
    }
}
