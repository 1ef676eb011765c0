//! Device-address (IOVA) allocation.
//!
//! NVDLA reaches memory through its DBB interface with up to 40-bit (or 64-bit) addresses; a
//! driver behind an IOMMU, or one that carves a window of physical memory for the engine,
//! hands every buffer object a range of device addresses in that window. This allocator is a
//! first-fit free list over a fixed window: ranges are page granular (4 KiB, the smallest
//! page an SMMU maps), freed ranges merge with their neighbours, and live ranges never
//! overlap.
//!
//! The free list is a sorted vector whose capacity is kept at least one more than the number
//! of live ranges (reserved, fallibly, by [`IovaAllocator::alloc`]): a window holding `n`
//! ranges has at most `n + 1` free gaps, so [`IovaAllocator::free`] never allocates and never
//! fails for want of memory.

use alloc::vec::Vec;

use crate::error::Error;
use crate::fallible;

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
    /// Free ranges (start, length), sorted, non-overlapping, non-adjacent (always merged).
    free: Vec<(u64, u64)>,
    /// Live (allocated, not yet freed) ranges.
    live: usize,
}

impl IovaAllocator {
    /// A window of `size` bytes at `base`. Both MUST be multiples of [`PAGE_SIZE`], `size`
    /// nonzero and the window must not wrap the 64-bit space; otherwise `EINVAL`. `ENOMEM`
    /// if the free list cannot be allocated.
    pub fn new(base: u64, size: u64) -> Result<Self, Error> {
        if size == 0 || !base.is_multiple_of(PAGE_SIZE) || !size.is_multiple_of(PAGE_SIZE) {
            return Err(Error::Invalid);
        }
        // The window end must be representable: `base + size` may equal 2^64 only if we
        // never compute it, so require it to fit.
        base.checked_add(size).ok_or(Error::Invalid)?;
        let mut free = fallible::vec_with_capacity(2)?;
        free.push((base, size));
        Ok(Self {
            base,
            size,
            free,
            live: 0,
        })
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
        self.free.iter().map(|&(_, l)| l).sum()
    }

    /// Allocates `len` bytes rounded up to pages; returns the start address.
    ///
    /// `EINVAL` for `len == 0`, `EOVERFLOW` if rounding overflows, `ENOMEM` if no free range
    /// is large enough or the free list cannot grow for the next [`free`](Self::free).
    pub fn alloc(&mut self, len: u64) -> Result<DeviceAddr, Error> {
        if len == 0 {
            return Err(Error::Invalid);
        }
        let len = page_align(len).ok_or(Error::Overflow)?;
        let i = self
            .free
            .iter()
            .position(|&(_, flen)| flen >= len)
            .ok_or(Error::NoMemory)?;
        // Room for every gap `live + 1` ranges can leave, so that `free` never allocates.
        let need = (self.live + 2).saturating_sub(self.free.len());
        self.free.try_reserve(need).map_err(|_| Error::NoMemory)?;
        let (start, flen) = self.free[i];
        if flen > len {
            self.free[i] = (start + len, flen - len);
        } else {
            self.free.remove(i);
        }
        self.live += 1;
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
        // Index of the first free range starting at or after `end`; the one before it is the
        // last starting before `end`.
        let next = self.free.partition_point(|&(s, _)| s < end);
        let prev = next.checked_sub(1).map(|p| (p, self.free[p]));
        if let Some((_, (ps, pl))) = prev {
            if ps + pl > start {
                return Err(Error::Invalid);
            }
        }
        if self.live == 0 {
            return Err(Error::Invalid);
        }
        let merge_prev = matches!(prev, Some((_, (ps, pl))) if ps + pl == start);
        let merge_next = self.free.get(next).is_some_and(|&(s, _)| s == end);
        match (merge_prev, merge_next) {
            (true, true) => {
                let nl = self.free[next].1;
                self.free[next - 1].1 += len + nl;
                self.free.remove(next);
            }
            (true, false) => self.free[next - 1].1 += len,
            (false, true) => self.free[next] = (start, len + self.free[next].1),
            // Never grows the vector: `alloc` reserved room for every gap.
            (false, false) => fallible::insert(&mut self.free, next, (start, len))?,
        }
        self.live -= 1;
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
    fn free_never_grows_the_free_list() {
        // Every other page allocated, then freed in an order that leaves the most gaps:
        // the frees must fit in the capacity the allocations reserved.
        let mut a = IovaAllocator::new(0, 64 * PAGE_SIZE).unwrap();
        let ranges: Vec<DeviceAddr> = (0..64).map(|_| a.alloc(PAGE_SIZE).unwrap()).collect();
        let cap = a.free.capacity();
        for r in ranges
            .iter()
            .step_by(2)
            .chain(ranges.iter().skip(1).step_by(2))
        {
            a.free(*r, PAGE_SIZE).unwrap();
            assert_eq!(a.free.capacity(), cap, "a free allocated");
        }
        assert_eq!(a.free, [(0, 64 * PAGE_SIZE)]);
        assert_eq!(a.free(DeviceAddr(0), PAGE_SIZE).err(), Some(Error::Invalid));
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
