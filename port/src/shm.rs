//! Shared memory for buffer objects: `mmap(2)` mappings and sealed memfds.
//!
//! A GEM buffer reaches user space as a mapping of a file descriptor: on Linux the DRM node
//! at the buffer's fake offset, over the daemon's socket a memfd the daemon created for it.
//! [`Mapping`] owns one `MAP_SHARED` read/write mapping and unmaps it on drop;
//! [`SharedMem`] is a memfd plus its mapping.
//!
//! The daemon maps every memfd it hands out, so a client must not be able to shrink one
//! under it (touching a page past the end of a shrunk file raises `SIGBUS`, which would take
//! the daemon down). [`SharedMem::create`] therefore seals the file's size (`F_SEAL_SHRINK`,
//! `F_SEAL_GROW`) and the seal set itself (`F_SEAL_SEAL`) before the descriptor leaves the
//! process; a client can write the bytes, never resize the file.
//!
//! This module holds the crate's `mmap`/`munmap` calls; the `unsafe` is confined here.
#![allow(unsafe_code)]

use std::io;
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use nix::sys::stat::fstat;
use nix::unistd::ftruncate;

/// Live [`Mapping`]s in this process (for leak checks in tests and daemon statistics).
static LIVE_MAPPINGS: AtomicUsize = AtomicUsize::new(0);

/// Number of [`Mapping`]s alive in this process.
pub fn live_mappings() -> usize {
    LIVE_MAPPINGS.load(Ordering::Relaxed)
}

fn nix_err(e: nix::Error) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

/// One `MAP_SHARED`, read/write mapping of `len` bytes of a file, unmapped on drop.
///
/// The bytes are shared with whoever else maps the same file (the kernel driver and the
/// device, or the daemon): they can change at any time, which is fine for plain bytes but
/// means nothing read from them may be trusted.
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value (nothing else in this process
// refers to it), so moving it to another thread is as safe as moving a `Vec<u8>`.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` from byte `offset` (page aligned) for reading and writing.
    ///
    /// Fails with `EINVAL` for `len == 0` or an offset that does not fit `off_t`.
    pub fn new(fd: BorrowedFd<'_>, offset: u64, len: usize) -> io::Result<Self> {
        let n = NonZeroUsize::new(len).ok_or(io::Error::from_raw_os_error(libc_einval()))?;
        let off = i64::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc_einval()))?;
        // SAFETY: a fresh mapping at an address the kernel chooses (no `MAP_FIXED`), so it
        // cannot alias any Rust object; the returned pointer is valid for `len` bytes until
        // the `munmap` in `drop`. The file may be shorter than `len` (a caller error that
        // would fault on access); callers check the size with `fstat` first where the file
        // comes from another process.
        let p = unsafe {
            mmap(
                None,
                n,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                fd,
                off as _,
            )
        }
        .map_err(nix_err)?;
        LIVE_MAPPINGS.fetch_add(1, Ordering::Relaxed);
        Ok(Self { ptr: p.cast(), len })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: a mapping has at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The mapped bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `len` bytes while `self` lives (see `new`), and u8 has
        // no invalid bit patterns, so bytes another process writes concurrently can never
        // make the slice hold an invalid value; readers treat the content as untrusted.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The mapped bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes this the only reference from this
        // process for the slice's lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what `mmap` returned and were never unmapped; no
        // slice borrowed from `self` outlives it.
        if let Err(e) = unsafe { munmap(self.ptr.cast(), self.len) } {
            log::error!("munmap of {} bytes failed: {e}", self.len);
        }
        LIVE_MAPPINGS.fetch_sub(1, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapping({} bytes at {:p})", self.len, self.ptr)
    }
}

const fn libc_einval() -> i32 {
    nix::errno::Errno::EINVAL as i32
}

/// A memfd of a fixed size and this process's mapping of it.
#[derive(Debug)]
pub struct SharedMem {
    fd: OwnedFd,
    map: Mapping,
}

impl SharedMem {
    /// A new zero-filled memfd of `len` bytes (nonzero), sealed against resizing, mapped.
    ///
    /// Costs no memory until written: the kernel allocates pages on first touch.
    pub fn create(name: &str, len: usize) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc_einval()));
        }
        let fd = memfd_create(name, MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING)
            .map_err(nix_err)?;
        let size = i64::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc_einval()))?;
        ftruncate(&fd, size as _).map_err(nix_err)?;
        fcntl(
            &fd,
            FcntlArg::F_ADD_SEALS(
                SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW | SealFlag::F_SEAL_SEAL,
            ),
        )
        .map_err(nix_err)?;
        let map = Mapping::new(fd.as_fd(), 0, len)?;
        Ok(Self { fd, map })
    }

    /// Maps `len` bytes of a memfd received from another process, after checking that the
    /// file holds at least `len` bytes (a shorter one would fault on access).
    pub fn from_fd(fd: OwnedFd, len: usize) -> io::Result<Self> {
        let st = fstat(&fd).map_err(nix_err)?;
        let size = u64::try_from(st.st_size).unwrap_or(0);
        if size < len as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("shared buffer holds {size} bytes, expected {len}"),
            ));
        }
        let map = Mapping::new(fd.as_fd(), 0, len)?;
        Ok(Self { fd, map })
    }

    /// The memfd (to send to a client).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.map.as_slice()
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.map.as_mut_slice()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Never true.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_mem_is_zeroed_shared_and_sealed() {
        let mut a = SharedMem::create("t", 10_000).unwrap();
        assert!(a.as_slice().iter().all(|&b| b == 0));
        a.as_mut_slice()[9_999] = 7;
        let fd = a.fd().try_clone_to_owned().unwrap();
        let b = SharedMem::from_fd(fd, 10_000).unwrap();
        assert_eq!(b.as_slice()[9_999], 7, "both mappings see one file");
        // The size is sealed: neither shrinking nor growing is allowed.
        assert!(ftruncate(a.fd(), 10).is_err());
        assert!(ftruncate(a.fd(), 20_000).is_err());
        let fd = a.fd().try_clone_to_owned().unwrap();
        assert!(SharedMem::from_fd(fd, 20_000).is_err(), "file too short");
        assert!(SharedMem::create("t", 0).is_err());
    }
}
