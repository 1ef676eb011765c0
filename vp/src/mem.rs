//! Memory behind the two DMA interfaces.
//!
//! NVDLA reaches system memory (DBB, "MC" in register fields) through MCIF and on-chip
//! SRAM ("CV", CVSRAM) through CVIF when the build has a secondary memory interface.
//! Both are modelled as sparse byte spaces made of 4 KiB pages created on first write,
//! so a 64-bit address space costs only what is touched. Unwritten bytes read as zero.
//!
//! Every access is checked: an access outside the configured window of its memory is a
//! [`MemError`], which the engines turn into an error state instead of a panic.
//!
//! DRAM can instead be a file ([`Memory::with_dram_file`]): the guest RAM of a QEMU
//! machine (`memory-backend-file,share=on`), so that the model's DMA lands in the guest's
//! physical memory. The file is accessed with positioned reads and writes (`pread`/`pwrite`
//! through [`FileExt`]); with `share=on` QEMU maps the same page cache, so both sides see
//! each other's stores. Address `A` is at file offset `A - base`; the window is the file.
//!
//! The CVSRAM window follows the v1 synthesis testbench (`verif/synth_tb/syn_tb_defines.vh`:
//! `CVSRAM_ADDR_START = 0x5000_0000`, `DLA_ADDR_MASK = 0xffff_ffff_f000_0000`, i.e. 256 MiB).

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

const PAGE_SHIFT: u32 = 12;
const PAGE_SIZE: usize = 1 << PAGE_SHIFT;

/// Which memory interface an access goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RamType {
    /// System memory through MCIF (register value `MC` = 1).
    Dram,
    /// On-chip SRAM through CVIF (register value `CV` = 0).
    Sram,
}

impl RamType {
    /// Decodes the one-bit `*_RAM_TYPE` register field (0 = CV, 1 = MC).
    pub fn from_field(bit: u32) -> Self {
        if bit & 1 == 1 {
            RamType::Dram
        } else {
            RamType::Sram
        }
    }
}

/// A memory access that does not fit the configured memory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemError {
    /// The range is outside the window of that memory.
    #[error("{ram:?} access of {len} bytes at {addr:#x} is outside configured memory")]
    OutOfRange {
        /// Memory addressed.
        ram: RamType,
        /// First byte.
        addr: u64,
        /// Length in bytes.
        len: u64,
    },
    /// The build has no such memory (CVSRAM without a secondary interface).
    #[error("{ram:?} access at {addr:#x}: this configuration has no such memory")]
    Absent {
        /// Memory addressed.
        ram: RamType,
        /// First byte.
        addr: u64,
    },
    /// The file behind DRAM failed the access (an I/O error or a file shorter than its
    /// window).
    #[error("{ram:?} access of {len} bytes at {addr:#x}: backing file: {kind}")]
    Io {
        /// Memory addressed.
        ram: RamType,
        /// First byte.
        addr: u64,
        /// Length in bytes.
        len: u64,
        /// What the file access reported.
        kind: std::io::ErrorKind,
    },
}

/// A sparse byte-addressed space.
#[derive(Debug, Default, Clone)]
pub struct SparseMem {
    pages: HashMap<u64, Box<[u8; PAGE_SIZE]>>,
}

impl SparseMem {
    /// An empty space (all zero).
    pub fn new() -> Self {
        Self::default()
    }

    /// Copies bytes starting at `addr` into `buf`. The caller has range-checked.
    fn read(&self, mut addr: u64, buf: &mut [u8]) {
        let mut done = 0;
        while done < buf.len() {
            let off = (addr as usize) & (PAGE_SIZE - 1);
            let n = (PAGE_SIZE - off).min(buf.len() - done);
            match self.pages.get(&(addr >> PAGE_SHIFT)) {
                Some(p) => buf[done..done + n].copy_from_slice(&p[off..off + n]),
                None => buf[done..done + n].fill(0),
            }
            done += n;
            addr = addr.wrapping_add(n as u64);
        }
    }

    /// Copies `data` to `addr`. The caller has range-checked.
    fn write(&mut self, mut addr: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let off = (addr as usize) & (PAGE_SIZE - 1);
            let n = (PAGE_SIZE - off).min(data.len() - done);
            let page = self
                .pages
                .entry(addr >> PAGE_SHIFT)
                .or_insert_with(|| Box::new([0; PAGE_SIZE]));
            page[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
            addr = addr.wrapping_add(n as u64);
        }
    }

    /// Number of pages allocated.
    pub fn pages(&self) -> usize {
        self.pages.len()
    }
}

/// DRAM backed by a file: address `base + off` is file offset `off`.
#[derive(Debug, Clone)]
pub struct FileMem {
    file: Arc<File>,
    base: u64,
}

impl FileMem {
    fn io_err(&self, addr: u64, len: usize, e: &std::io::Error) -> MemError {
        MemError::Io {
            ram: RamType::Dram,
            addr,
            len: len as u64,
            kind: e.kind(),
        }
    }

    /// The caller has range-checked, so `addr >= base`.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemError> {
        self.file
            .read_exact_at(buf, addr - self.base)
            .map_err(|e| self.io_err(addr, buf.len(), &e))
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.file
            .write_all_at(data, addr - self.base)
            .map_err(|e| self.io_err(addr, data.len(), &e))
    }
}

/// Where DRAM lives.
#[derive(Debug, Clone)]
enum Dram {
    Sparse(SparseMem),
    File(FileMem),
}

/// An address window `[base, base + size)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First address.
    pub base: u64,
    /// Size in bytes (0 = empty window; `u64::MAX` with base 0 covers everything).
    pub size: u64,
}

impl Window {
    /// True when `[addr, addr + len)` lies inside the window.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        let Some(off) = addr.checked_sub(self.base) else {
            return false;
        };
        off.checked_add(len).is_some_and(|end| end <= self.size)
    }
}

/// Default CVSRAM window of the v1 testbench.
pub const CVSRAM_WINDOW: Window = Window {
    base: 0x5000_0000,
    size: 0x1000_0000,
};

/// One DMA access range (for the hazard check, [`crate::hazard`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The memory.
    pub ram: RamType,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// A write (else a read).
    pub write: bool,
}

/// The engines' DMA accesses while recording ([`Memory::start_log`]), merged into ranges.
#[derive(Debug, Default)]
struct AccessLog(std::sync::Mutex<Option<Vec<Access>>>);

impl Clone for AccessLog {
    /// A copy of the memory does not record.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl AccessLog {
    fn note(&self, ram: RamType, addr: u64, len: u64, write: bool) {
        let Ok(mut g) = self.0.lock() else { return };
        if let Some(v) = g.as_mut() {
            note_range(v, ram, addr, len, write);
        }
    }
}

/// Adds an access of `len` bytes at `addr` to `ranges`, extending one of the last few of
/// its kind when they touch (engines read and write line after line).
fn note_range(ranges: &mut Vec<Access>, ram: RamType, addr: u64, len: u64, write: bool) {
    if len == 0 {
        return;
    }
    let end = addr.saturating_add(len);
    if let Some(last) = ranges
        .iter_mut()
        .rev()
        .take(4)
        .find(|a| a.ram == ram && a.write == write && a.start <= end && addr <= a.end)
    {
        last.start = last.start.min(addr);
        last.end = last.end.max(end);
        return;
    }
    ranges.push(Access {
        ram,
        start: addr,
        end,
        write,
    });
}

/// DRAM and (optionally) CVSRAM of one platform.
#[derive(Debug, Clone)]
pub struct Memory {
    dram: Dram,
    dram_window: Window,
    sram: Option<(Window, SparseMem)>,
    log: AccessLog,
    /// Every write since [`Memory::track_writes`], merged into ranges (`None`: not
    /// tracking).
    writes: Option<Vec<Access>>,
}

impl Memory {
    /// Memory for a build with the given address width and CVSRAM presence.
    pub fn new(address_width: u32, has_sram: bool) -> Self {
        let size = if address_width >= 64 {
            u64::MAX
        } else {
            1u64 << address_width
        };
        Memory {
            dram: Dram::Sparse(SparseMem::new()),
            dram_window: Window { base: 0, size },
            sram: has_sram.then(|| (CVSRAM_WINDOW, SparseMem::new())),
            log: AccessLog::default(),
            writes: None,
        }
    }

    /// Memory whose DRAM is `file` at `base` (`[base, base + file length)`; accesses
    /// outside it are [`MemError::OutOfRange`]), with sparse CVSRAM when `has_sram`.
    /// The file is not resized: its length when this is called is the window.
    pub fn with_dram_file(file: File, base: u64, has_sram: bool) -> std::io::Result<Self> {
        let size = file.metadata()?.len();
        if base.checked_add(size).is_none() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "DRAM file window wraps the address space",
            ));
        }
        Ok(Memory {
            dram: Dram::File(FileMem {
                file: Arc::new(file),
                base,
            }),
            dram_window: Window { base, size },
            sram: has_sram.then(|| (CVSRAM_WINDOW, SparseMem::new())),
            log: AccessLog::default(),
            writes: None,
        })
    }

    /// The DRAM window.
    pub fn dram_window(&self) -> Window {
        self.dram_window
    }

    /// Replaces the DRAM window (accesses outside it become errors).
    pub fn set_dram_window(&mut self, w: Window) {
        self.dram_window = w;
    }

    /// Bytes `ram` holds: the DRAM window's size, CVSRAM's, or 0 when absent.
    pub fn capacity(&self, ram: RamType) -> u64 {
        match ram {
            RamType::Dram => self.dram_window.size,
            RamType::Sram => self.sram.as_ref().map_or(0, |(w, _)| w.size),
        }
    }

    /// Range-checks an access.
    fn check_range(&self, ram: RamType, addr: u64, len: u64) -> Result<(), MemError> {
        match ram {
            RamType::Dram if self.dram_window.contains(addr, len) => Ok(()),
            RamType::Dram => Err(MemError::OutOfRange { ram, addr, len }),
            RamType::Sram => match &self.sram {
                Some((w, _)) if w.contains(addr, len) => Ok(()),
                Some(_) => Err(MemError::OutOfRange { ram, addr, len }),
                None => Err(MemError::Absent { ram, addr }),
            },
        }
    }

    /// Checks that `len` bytes at `addr` are inside the memory `ram`, without accessing
    /// them (engines check their output before computing it).
    pub fn check(&self, ram: RamType, addr: u64, len: u64) -> Result<(), MemError> {
        self.check_range(ram, addr, len)
    }

    /// Starts recording the DMA accesses ([`Memory::read`], [`Memory::write`]; the host's
    /// are not DMA).
    pub fn start_log(&self) {
        if let Ok(mut g) = self.log.0.lock() {
            *g = Some(Vec::new());
        }
    }

    /// Stops recording and returns the accesses since [`Memory::start_log`].
    pub fn take_log(&self) -> Vec<Access> {
        self.log
            .0
            .lock()
            .ok()
            .and_then(|mut g| g.take())
            .unwrap_or_default()
    }

    /// DMA read.
    pub fn read(&self, ram: RamType, addr: u64, buf: &mut [u8]) -> Result<(), MemError> {
        self.log.note(ram, addr, buf.len() as u64, false);
        self.raw_read(ram, addr, buf)
    }

    fn raw_read(&self, ram: RamType, addr: u64, buf: &mut [u8]) -> Result<(), MemError> {
        self.check_range(ram, addr, buf.len() as u64)?;
        match (ram, &self.dram, &self.sram) {
            (RamType::Dram, Dram::Sparse(m), _) => m.read(addr, buf),
            (RamType::Dram, Dram::File(f), _) => f.read(addr, buf)?,
            (RamType::Sram, _, Some((_, m))) => m.read(addr, buf),
            (RamType::Sram, _, None) => return Err(MemError::Absent { ram, addr }),
        }
        Ok(())
    }

    /// DMA write.
    pub fn write(&mut self, ram: RamType, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.log.note(ram, addr, data.len() as u64, true);
        if let Some(w) = &mut self.writes {
            note_range(w, ram, addr, data.len() as u64, true);
        }
        self.raw_write(ram, addr, data)
    }

    /// Starts recording every write ([`Memory::write`] and the host's), forgetting those
    /// recorded before: a device that keeps host copies of buffers reads back only those
    /// that were written.
    pub fn track_writes(&mut self) {
        self.writes = Some(Vec::new());
    }

    /// Stops recording and returns the ranges written since [`Memory::track_writes`]
    /// (`None` if it was not called).
    pub fn take_writes(&mut self) -> Option<Vec<Access>> {
        self.writes.take()
    }

    fn raw_write(&mut self, ram: RamType, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.check_range(ram, addr, data.len() as u64)?;
        match (ram, &mut self.dram, &mut self.sram) {
            (RamType::Dram, Dram::Sparse(m), _) => m.write(addr, data),
            (RamType::Dram, Dram::File(f), _) => f.write(addr, data)?,
            (RamType::Sram, _, Some((_, m))) => m.write(addr, data),
            (RamType::Sram, _, None) => return Err(MemError::Absent { ram, addr }),
        }
        Ok(())
    }

    /// Reads `len` bytes into a new vector.
    pub fn read_vec(&self, ram: RamType, addr: u64, len: usize) -> Result<Vec<u8>, MemError> {
        let mut v = vec![0; len];
        self.read(ram, addr, &mut v)?;
        Ok(v)
    }

    /// Which memory a host (testbench) address belongs to: CVSRAM inside its window,
    /// DRAM otherwise.
    pub fn host_ram(&self, addr: u64) -> RamType {
        match &self.sram {
            Some((w, _)) if w.contains(addr, 1) => RamType::Sram,
            _ => RamType::Dram,
        }
    }

    /// Host write by address (see [`Memory::host_ram`]).
    pub fn host_write(&mut self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        let ram = self.host_ram(addr);
        if let Some(w) = &mut self.writes {
            note_range(w, ram, addr, data.len() as u64, true);
        }
        self.raw_write(ram, addr, data)
    }

    /// Host read by address (see [`Memory::host_ram`]).
    pub fn host_read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemError> {
        self.raw_read(self.host_ram(addr), addr, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_tracking_merges_touching_writes_and_counts_the_hosts() {
        let mut m = Memory::new(64, true);
        m.write(RamType::Dram, 0x1000, &[1; 16]).unwrap();
        assert_eq!(m.take_writes(), None, "not tracking");
        m.track_writes();
        m.write(RamType::Dram, 0x2000, &[1; 16]).unwrap();
        m.write(RamType::Dram, 0x2010, &[2; 16]).unwrap();
        m.write(RamType::Sram, CVSRAM_WINDOW.base, &[3; 8]).unwrap();
        m.host_write(0x9000, &[4; 4]).unwrap();
        let mut buf = [0u8; 8];
        m.read(RamType::Dram, 0x5000, &mut buf).unwrap();
        m.write(RamType::Dram, 0x3000, &[]).unwrap();
        let w: Vec<(RamType, u64, u64)> = m
            .take_writes()
            .unwrap()
            .iter()
            .map(|a| (a.ram, a.start, a.end))
            .collect();
        assert_eq!(
            w,
            [
                (RamType::Dram, 0x2000, 0x2020),
                (RamType::Sram, CVSRAM_WINDOW.base, CVSRAM_WINDOW.base + 8),
                (RamType::Dram, 0x9000, 0x9004),
            ]
        );
        assert_eq!(m.take_writes(), None, "taking stops the tracking");
    }

    #[test]
    fn sparse_round_trip_across_pages() {
        let mut m = Memory::new(64, true);
        let data: Vec<u8> = (0..10000u32).map(|i| i as u8).collect();
        m.write(RamType::Dram, 0xffff_ffff_0000_0ff0, &data)
            .unwrap();
        let back = m
            .read_vec(RamType::Dram, 0xffff_ffff_0000_0ff0, data.len())
            .unwrap();
        assert_eq!(back, data);
        assert_eq!(m.read_vec(RamType::Dram, 0x1234, 4).unwrap(), vec![0; 4]);
    }

    #[test]
    fn out_of_range_is_an_error() {
        let mut m = Memory::new(32, false);
        assert!(m.write(RamType::Dram, 0xffff_fffe, &[0; 4]).is_err());
        assert!(m.write(RamType::Dram, u64::MAX, &[0; 4]).is_err());
        assert!(matches!(
            m.write(RamType::Sram, 0x5000_0000, &[0]),
            Err(MemError::Absent { .. })
        ));
        let mut m = Memory::new(64, true);
        assert!(m.write(RamType::Dram, u64::MAX - 1, &[0; 4]).is_err());
        assert!(m.write(RamType::Sram, 0x4fff_ffff, &[0; 2]).is_err());
        assert!(m.write(RamType::Sram, 0x5fff_fffe, &[0; 2]).is_ok());
        assert_eq!(m.host_ram(0x5000_0000), RamType::Sram);
        assert_eq!(m.host_ram(0x8000_0000), RamType::Dram);
    }

    #[test]
    fn file_dram_is_the_file_and_checked() {
        let path = std::env::temp_dir().join(format!("nvdla-vp-mem-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.set_len(3 * PAGE_SIZE as u64).unwrap();
        let base = 0x4000_0000;
        let mut m = Memory::with_dram_file(file, base, true).unwrap();
        assert_eq!(
            m.dram_window(),
            Window {
                base,
                size: 3 * PAGE_SIZE as u64
            }
        );
        m.write(RamType::Dram, base + 0xffe, &[1, 2, 3, 4]).unwrap();
        assert_eq!(
            m.read_vec(RamType::Dram, base + 0xffe, 4).unwrap(),
            [1, 2, 3, 4]
        );
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(on_disk[0xffe..0x1002], [1, 2, 3, 4]);
        // Outside the window (below, across the end, wrapping): errors, file untouched.
        assert!(m.write(RamType::Dram, base - 1, &[0; 2]).is_err());
        assert!(m.write(RamType::Dram, base + 0x2fff, &[0; 2]).is_err());
        assert!(m.read(RamType::Dram, u64::MAX - 1, &mut [0; 4]).is_err());
        assert!(m.write(RamType::Dram, base + 0x2fff, &[9]).is_ok());
        // CVSRAM stays sparse.
        m.write(RamType::Sram, 0x5000_0000, &[5]).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            3 * PAGE_SIZE as u64
        );
        // A file shrunk behind the model's back gives an I/O error, not a panic.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(16)
            .unwrap();
        assert!(matches!(
            m.read(RamType::Dram, base + 0x1000, &mut [0; 4]),
            Err(MemError::Io { .. })
        ));
        std::fs::remove_file(&path).unwrap();
    }
}
