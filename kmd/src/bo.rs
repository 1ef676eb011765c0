//! Buffer objects: the memory a client shares with the engine.
//!
//! Like a DRM GEM object, a buffer object (BO) is a zero-filled allocation named by a small
//! integer handle. Each BO has an owner (the client — on Linux, the open DRM file — that
//! created it); every other client sees the handle as nonexistent (`ENOENT`), so one process
//! cannot make the engine read or write another's memory. A BO has a device address range
//! from the [`IovaAllocator`] for its whole page-rounded size and
//! a fake mmap offset the client passes to `mmap(2)` to see its bytes.
//!
//! While a task that uses a BO runs, or user space maps or exports it, the BO is pinned;
//! destroying a pinned BO is refused with `EBUSY` so the engine never writes into memory
//! that was freed and reused. When the owner closes its file while some of its BOs are
//! pinned (a mapping or an exported dma-buf outlives the file), those BOs become orphans:
//! invisible to every client (a later client may get the same id), and freed when their
//! last pin is dropped.
//!
//! The table only does bookkeeping: the backing memory itself belongs to the OS layer, which
//! allocates it at the BO's device address. It is a vector sorted by handle, grown fallibly
//! (`ENOMEM`) by [`BoTable::create`] only; nothing else allocates.

use alloc::vec::Vec;
use core::num::NonZeroU32;

use crate::error::Error;
use crate::iova::{page_align, DeviceAddr, IovaAllocator, PAGE_SIZE};

/// A client of the driver (one open device file). Handles are only valid for their owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientId(pub u32);

/// A BO handle as user space sees it; never zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BoHandle(NonZeroU32);

impl BoHandle {
    /// Wraps a raw handle from user space; `None` for zero.
    pub const fn new(raw: u32) -> Option<Self> {
        match NonZeroU32::new(raw) {
            Some(v) => Some(Self(v)),
            None => None,
        }
    }

    /// The raw value.
    pub const fn get(self) -> u32 {
        self.0.get()
    }
}

/// Base of the fake mmap offsets (as DRM's `DRM_FILE_PAGE_OFFSET_START`, above anything a
/// real file offset would use).
pub const MMAP_OFFSET_BASE: u64 = 1 << 32;

/// Limits of a [`BoTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoConfig {
    /// Start of the device address window (page aligned).
    pub iova_base: u64,
    /// Size of the device address window (page aligned, nonzero).
    pub iova_size: u64,
    /// Largest BO size accepted by [`BoTable::create`] (before page rounding).
    pub max_bo_size: u64,
    /// Most live BOs over all clients.
    pub max_bos: usize,
    /// On-chip SRAM behind the secondary memory interface (CVIF), as a window of its own
    /// (start, size; page aligned): BOs created with [`BO_FLAG_CVSRAM`] take their device
    /// addresses here. `None` on builds and platforms without one (the flag is `EINVAL`).
    pub cvsram: Option<(u64, u64)>,
}

impl Default for BoConfig {
    /// A 1 GiB window at 0x8000_0000 (DRAM base of the NVDLA virtual platform), BOs up to
    /// 256 MiB, 65 536 BOs.
    fn default() -> Self {
        Self {
            iova_base: 0x8000_0000,
            iova_size: 1 << 30,
            max_bo_size: 256 << 20,
            max_bos: 65_536,
            cvsram: None,
        }
    }
}

/// [`BoTable::create`] flag: place the BO in CV-SRAM ([`BoConfig::cvsram`]) instead of
/// DRAM. Such a BO is on-chip scratch for the engines (a loadable's SRAM-domain memory,
/// which the surface descriptors address as `CV`): its device address is a CVIF address.
pub const BO_FLAG_CVSRAM: u32 = 1;

/// Flags accepted by [`BoTable::create`]; any other set bit is `EINVAL`.
pub const BO_FLAGS_KNOWN: u32 = BO_FLAG_CVSRAM;

/// One live buffer object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bo {
    /// The creating client.
    pub owner: ClientId,
    /// Size asked at creation; offsets must be below it.
    pub size: u64,
    /// Device address of byte 0.
    pub iova: DeviceAddr,
    /// Length of the device address range (size rounded up to pages).
    pub iova_len: u64,
    /// Fake offset for `mmap(2)`.
    pub mmap_offset: u64,
    /// In CV-SRAM ([`BO_FLAG_CVSRAM`]): `iova` is a CVIF address.
    pub cvsram: bool,
    /// Number of running tasks, user mappings and exports using the BO; nonzero forbids
    /// destruction.
    pub pin_count: u32,
    /// The owner closed its file while the BO was pinned: only [`BoTable::unpin`] reaches
    /// it, and the last unpin frees it.
    pub orphaned: bool,
}

/// All live buffer objects of a device.
#[derive(Debug, Clone)]
pub struct BoTable {
    cfg: BoConfig,
    iova: IovaAllocator,
    /// Addresses of the CV-SRAM window, when the configuration has one.
    sram: Option<IovaAllocator>,
    /// Live BOs (handle, BO), sorted by handle.
    bos: Vec<(u32, Bo)>,
    next_handle: u32,
}

impl BoTable {
    /// An empty table; `EINVAL` if the window in `cfg` is invalid.
    pub fn new(cfg: BoConfig) -> Result<Self, Error> {
        let sram = match cfg.cvsram {
            Some((base, size)) => Some(IovaAllocator::new(base, size)?),
            None => None,
        };
        Ok(Self {
            iova: IovaAllocator::new(cfg.iova_base, cfg.iova_size)?,
            sram,
            cfg,
            bos: Vec::new(),
            next_handle: 1,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &BoConfig {
        &self.cfg
    }

    /// Number of live BOs.
    pub fn len(&self) -> usize {
        self.bos.len()
    }

    /// True if there is no live BO.
    pub fn is_empty(&self) -> bool {
        self.bos.is_empty()
    }

    /// Creates a BO of `size` bytes for `client` (GEM_CREATE).
    ///
    /// Checks, in order: `flags` has only known bits, and [`BO_FLAG_CVSRAM`] only with a
    /// CV-SRAM window (`EINVAL`), `size` is nonzero
    /// (`EINVAL`), `size` is at most `max_bo_size` (`E2BIG`) and does not overflow when
    /// rounded to pages (`EOVERFLOW`), the BO count limit (`ENOMEM`), then device address
    /// space and memory for the table (`ENOMEM`).
    pub fn create(&mut self, client: ClientId, size: u64, flags: u32) -> Result<BoHandle, Error> {
        if flags & !BO_FLAGS_KNOWN != 0 {
            log::debug!("bo: create: unknown flags {flags:#x}");
            return Err(Error::Invalid);
        }
        let cvsram = flags & BO_FLAG_CVSRAM != 0;
        if cvsram && self.sram.is_none() {
            log::debug!("bo: create: no CV-SRAM on this device");
            return Err(Error::Invalid);
        }
        if size == 0 {
            log::debug!("bo: create: zero size");
            return Err(Error::Invalid);
        }
        let iova_len = page_align(size).ok_or(Error::Overflow)?;
        if size > self.cfg.max_bo_size {
            log::debug!("bo: create: size {size:#x} above limit");
            return Err(Error::TooBig);
        }
        if self.bos.len() >= self.cfg.max_bos {
            log::debug!("bo: create: too many buffers");
            return Err(Error::NoMemory);
        }
        let handle = self.free_handle().ok_or(Error::NoMemory)?;
        self.bos.try_reserve(1).map_err(|_| Error::NoMemory)?;
        let iova = match (cvsram, self.sram.as_mut()) {
            (true, Some(sram)) => sram.alloc(iova_len)?,
            _ => self.iova.alloc(iova_len)?,
        };
        let mmap_offset = MMAP_OFFSET_BASE + u64::from(handle.get()) * PAGE_SIZE;
        let at = self.bos.partition_point(|&(h, _)| h < handle.get());
        // Within the capacity reserved above: does not allocate.
        self.bos.insert(
            at,
            (
                handle.get(),
                Bo {
                    owner: client,
                    size,
                    iova,
                    iova_len,
                    mmap_offset,
                    cvsram,
                    pin_count: 0,
                    orphaned: false,
                },
            ),
        );
        Ok(handle)
    }

    /// Index of `handle` in the table.
    fn index(&self, handle: u32) -> Option<usize> {
        self.bos.binary_search_by_key(&handle, |&(h, _)| h).ok()
    }

    fn get(&self, handle: u32) -> Option<&Bo> {
        self.index(handle).map(|i| &self.bos[i].1)
    }

    fn get_mut(&mut self, handle: u32) -> Option<&mut Bo> {
        self.index(handle).map(|i| &mut self.bos[i].1)
    }

    fn remove(&mut self, handle: u32) {
        if let Some(i) = self.index(handle) {
            self.bos.remove(i);
        }
    }

    /// Next unused nonzero handle, searching from `next_handle` and wrapping.
    fn free_handle(&mut self) -> Option<BoHandle> {
        // `max_bos` < 2^32 - 1 in practice, so a free value exists; bound the search anyway.
        for _ in 0..=self.bos.len() {
            let h = self.next_handle;
            self.next_handle = self.next_handle.wrapping_add(1).max(1);
            if self.index(h).is_none() {
                return BoHandle::new(h);
            }
        }
        None
    }

    /// The BO `handle` of `client`; `ENOENT` if it does not exist or belongs to another
    /// client (the two are indistinguishable to the caller on purpose).
    pub fn lookup(&self, client: ClientId, handle: u32) -> Result<&Bo, Error> {
        match self.get(handle) {
            Some(bo) if bo.owner == client && !bo.orphaned => Ok(bo),
            _ => Err(Error::NoEntry),
        }
    }

    fn lookup_mut(&mut self, client: ClientId, handle: u32) -> Result<&mut Bo, Error> {
        match self.get_mut(handle) {
            Some(bo) if bo.owner == client && !bo.orphaned => Ok(bo),
            _ => Err(Error::NoEntry),
        }
    }

    /// The fake mmap offset of a BO (GEM_MMAP); `ENOENT` as [`lookup`](Self::lookup).
    pub fn mmap_offset(&self, client: ClientId, handle: u32) -> Result<u64, Error> {
        Ok(self.lookup(client, handle)?.mmap_offset)
    }

    /// The BO behind an mmap offset, as the `mmap(2)` handler needs it: the handle and the
    /// BO if `offset` is exactly one of `client`'s BOs' offsets, else `EINVAL`.
    pub fn by_mmap_offset(&self, client: ClientId, offset: u64) -> Result<(BoHandle, &Bo), Error> {
        let rel = offset.checked_sub(MMAP_OFFSET_BASE).ok_or(Error::Invalid)?;
        if rel % PAGE_SIZE != 0 {
            return Err(Error::Invalid);
        }
        let h = u32::try_from(rel / PAGE_SIZE).map_err(|_| Error::Invalid)?;
        let bo = self.lookup(client, h).map_err(|_| Error::Invalid)?;
        Ok((BoHandle::new(h).ok_or(Error::Invalid)?, bo))
    }

    /// Destroys a BO (GEM_DESTROY): `ENOENT` if not the client's, `EBUSY` while pinned.
    pub fn destroy(&mut self, client: ClientId, handle: u32) -> Result<Bo, Error> {
        let bo = *self.lookup(client, handle)?;
        if bo.pin_count != 0 {
            log::debug!(
                "bo: destroy: handle {handle} pinned by {} task(s)",
                bo.pin_count
            );
            return Err(Error::Busy);
        }
        self.free_range(&bo)?;
        self.remove(handle);
        Ok(bo)
    }

    /// Destroys every BO of a client (its device file was closed). Pinned BOs become
    /// orphans, freed by their last [`unpin`](Self::unpin); their count is returned.
    /// Never allocates (it runs on the file-release path, which cannot fail).
    pub fn release_client(&mut self, client: ClientId) -> usize {
        let mut orphans = 0;
        let mut i = 0;
        while i < self.bos.len() {
            let (h, bo) = self.bos[i];
            if bo.owner != client || bo.orphaned {
                i += 1;
                continue;
            }
            if self.destroy(client, h).is_ok() {
                continue; // removed: the next BO is now at `i`
            }
            self.bos[i].1.orphaned = true;
            orphans += 1;
            i += 1;
        }
        orphans
    }

    /// Pins a BO for a task: it cannot be destroyed until [`unpin`](Self::unpin).
    /// `ENOENT` as [`lookup`](Self::lookup), `EOVERFLOW` if pinned 2^32 - 1 times.
    pub fn pin(&mut self, client: ClientId, handle: u32) -> Result<(), Error> {
        let bo = self.lookup_mut(client, handle)?;
        bo.pin_count = bo.pin_count.checked_add(1).ok_or(Error::Overflow)?;
        Ok(())
    }

    /// Drops one pin; `EINVAL` if the BO is not pinned. This also reaches the client's
    /// orphans, and frees an orphan when its last pin goes.
    pub fn unpin(&mut self, client: ClientId, handle: u32) -> Result<(), Error> {
        let bo = match self.get_mut(handle) {
            Some(bo) if bo.owner == client => bo,
            _ => return Err(Error::NoEntry),
        };
        bo.pin_count = bo.pin_count.checked_sub(1).ok_or(Error::Invalid)?;
        if bo.orphaned && bo.pin_count == 0 {
            let bo = *bo;
            self.remove(handle);
            self.free_range(&bo)?;
        }
        Ok(())
    }

    /// Returns `bo`'s device addresses to the window they came from.
    fn free_range(&mut self, bo: &Bo) -> Result<(), Error> {
        match (bo.cvsram, self.sram.as_mut()) {
            (true, Some(sram)) => sram.free(bo.iova, bo.iova_len),
            _ => self.iova.free(bo.iova, bo.iova_len),
        }
    }

    /// Number of orphaned BOs (see the module documentation).
    pub fn orphans(&self) -> usize {
        self.bos.iter().filter(|(_, bo)| bo.orphaned).count()
    }

    /// Iterates over live BOs as (handle, BO), in handle order.
    pub fn iter(&self) -> impl Iterator<Item = (BoHandle, &Bo)> + '_ {
        self.bos
            .iter()
            .filter_map(|(h, bo)| BoHandle::new(*h).map(|h| (h, bo)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: ClientId = ClientId(1);
    const B: ClientId = ClientId(2);

    fn small() -> BoTable {
        BoTable::new(BoConfig {
            iova_base: 0x4000_0000,
            iova_size: 16 * PAGE_SIZE,
            max_bo_size: 8 * PAGE_SIZE,
            max_bos: 4,
            cvsram: None,
        })
        .unwrap()
    }

    #[test]
    fn create_lookup_destroy() {
        let mut t = small();
        let h = t.create(A, 100, 0).unwrap();
        assert_ne!(h.get(), 0);
        let bo = *t.lookup(A, h.get()).unwrap();
        assert_eq!(bo.size, 100);
        assert_eq!(bo.iova_len, PAGE_SIZE);
        assert_eq!(bo.iova.0 % PAGE_SIZE, 0);
        assert_eq!(t.mmap_offset(A, h.get()).unwrap(), bo.mmap_offset);
        let (h2, bo2) = t.by_mmap_offset(A, bo.mmap_offset).unwrap();
        assert_eq!((h2, *bo2), (h, bo));
        assert_eq!(t.destroy(A, h.get()).unwrap(), bo);
        assert_eq!(t.lookup(A, h.get()).err(), Some(Error::NoEntry));
        assert_eq!(t.destroy(A, h.get()).err(), Some(Error::NoEntry));
        assert!(t.is_empty());
    }

    #[test]
    fn cvsram_buffers_take_addresses_of_their_own_window() {
        let mut t = BoTable::new(BoConfig {
            cvsram: Some((0x5000_0000, 4 * PAGE_SIZE)),
            ..small().cfg
        })
        .unwrap();
        let d = t.create(A, 100, 0).unwrap();
        let s = t.create(A, 3 * PAGE_SIZE, BO_FLAG_CVSRAM).unwrap();
        let (bd, bs) = (
            *t.lookup(A, d.get()).unwrap(),
            *t.lookup(A, s.get()).unwrap(),
        );
        assert!(!bd.cvsram && bs.cvsram);
        assert_eq!(bd.iova.0, 0x4000_0000);
        assert_eq!(bs.iova.0, 0x5000_0000);
        // One page of SRAM is left; DRAM still has 15.
        assert_eq!(
            t.create(A, 2 * PAGE_SIZE, BO_FLAG_CVSRAM).err(),
            Some(Error::NoMemory)
        );
        t.create(A, 2 * PAGE_SIZE, 0).unwrap();
        t.destroy(A, s.get()).unwrap();
        let again = t.create(A, 4 * PAGE_SIZE, BO_FLAG_CVSRAM).unwrap();
        assert_eq!(t.lookup(A, again.get()).unwrap().iova.0, 0x5000_0000);
        // Pinned and orphaned: the last unpin frees the SRAM range.
        t.pin(A, again.get()).unwrap();
        t.release_client(A);
        t.unpin(A, again.get()).unwrap();
        assert!(t.create(B, 4 * PAGE_SIZE, BO_FLAG_CVSRAM).is_ok());
        // Without a window the flag is refused.
        assert_eq!(
            small().create(A, 1, BO_FLAG_CVSRAM).err(),
            Some(Error::Invalid)
        );
    }

    #[test]
    fn create_rejections() {
        let mut t = small();
        assert_eq!(t.create(A, 0, 0).err(), Some(Error::Invalid));
        assert_eq!(t.create(A, 1, 2).err(), Some(Error::Invalid));
        assert_eq!(t.create(A, 1, 0x8000_0000).err(), Some(Error::Invalid));
        assert_eq!(t.create(A, u64::MAX, 0).err(), Some(Error::Overflow));
        assert_eq!(t.create(A, 8 * PAGE_SIZE + 1, 0).err(), Some(Error::TooBig));
        // The window holds 16 pages: two 8-page BOs fill it.
        t.create(A, 8 * PAGE_SIZE, 0).unwrap();
        t.create(A, 8 * PAGE_SIZE, 0).unwrap();
        assert_eq!(t.create(A, 1, 0).err(), Some(Error::NoMemory));
        let mut t = small();
        for _ in 0..4 {
            t.create(A, 1, 0).unwrap();
        }
        assert_eq!(t.create(B, 1, 0).err(), Some(Error::NoMemory), "max_bos");
    }

    #[test]
    fn other_clients_see_nothing() {
        let mut t = small();
        let h = t.create(A, 1, 0).unwrap().get();
        assert_eq!(t.lookup(B, h).err(), Some(Error::NoEntry));
        assert_eq!(t.mmap_offset(B, h).err(), Some(Error::NoEntry));
        assert_eq!(t.pin(B, h).err(), Some(Error::NoEntry));
        assert_eq!(t.destroy(B, h).err(), Some(Error::NoEntry));
        let off = t.mmap_offset(A, h).unwrap();
        assert_eq!(t.by_mmap_offset(B, off).err(), Some(Error::Invalid));
        assert_eq!(t.by_mmap_offset(A, off + 1).err(), Some(Error::Invalid));
        assert_eq!(t.by_mmap_offset(A, 0).err(), Some(Error::Invalid));
        assert!(t.lookup(A, h).is_ok());
        assert_eq!(t.lookup(A, 0).err(), Some(Error::NoEntry));
    }

    #[test]
    fn pinned_bo_cannot_be_destroyed() {
        let mut t = small();
        let h = t.create(A, 1, 0).unwrap().get();
        t.pin(A, h).unwrap();
        t.pin(A, h).unwrap();
        assert_eq!(t.destroy(A, h).err(), Some(Error::Busy));
        t.unpin(A, h).unwrap();
        assert_eq!(t.destroy(A, h).err(), Some(Error::Busy));
        t.unpin(A, h).unwrap();
        assert_eq!(t.unpin(A, h).err(), Some(Error::Invalid));
        t.destroy(A, h).unwrap();
    }

    #[test]
    fn release_client_orphans_pinned_until_unpinned() {
        let mut t = small();
        let a1 = t.create(A, 1, 0).unwrap().get();
        let a2 = t.create(A, 1, 0).unwrap().get();
        let b1 = t.create(B, 1, 0).unwrap().get();
        t.pin(A, a2).unwrap();
        t.pin(A, a2).unwrap();
        assert_eq!(t.release_client(A), 1);
        assert_eq!(t.lookup(A, a1).err(), Some(Error::NoEntry));
        // The orphan is invisible, even to a new client that gets the same id...
        assert_eq!(t.lookup(A, a2).err(), Some(Error::NoEntry));
        assert_eq!(t.destroy(A, a2).err(), Some(Error::NoEntry));
        assert_eq!(t.pin(A, a2).err(), Some(Error::NoEntry));
        let mmap = MMAP_OFFSET_BASE + u64::from(a2) * PAGE_SIZE;
        assert_eq!(t.by_mmap_offset(A, mmap).err(), Some(Error::Invalid));
        assert_eq!(t.release_client(A), 0, "already orphaned");
        assert!(t.lookup(B, b1).is_ok());
        // ...its pins still drop, and the last one frees it.
        assert_eq!((t.len(), t.orphans()), (2, 1));
        t.unpin(A, a2).unwrap();
        assert_eq!((t.len(), t.orphans()), (2, 1));
        t.unpin(A, a2).unwrap();
        assert_eq!((t.len(), t.orphans()), (1, 0));
        assert_eq!(t.unpin(A, a2).err(), Some(Error::NoEntry));
        // Its device addresses are free again: two 8-page BOs fill the 16-page window.
        t.release_client(B);
        assert!(t.is_empty());
        t.create(B, 8 * PAGE_SIZE, 0).unwrap();
        t.create(B, 8 * PAGE_SIZE, 0).unwrap();
    }

    #[test]
    fn handles_are_not_reused_immediately() {
        let mut t = small();
        let h1 = t.create(A, 1, 0).unwrap();
        t.destroy(A, h1.get()).unwrap();
        let h2 = t.create(A, 1, 0).unwrap();
        assert_ne!(h1, h2, "a stale handle must not name a new buffer at once");
    }
}
