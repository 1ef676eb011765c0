//! The Linux backend: the `opendla` kernel module (upstream's or any driver with its ABI)
//! through a DRM render node.
//!
//! The node is found by asking each DRM node under `/dev/dri` for its driver's name
//! (`DRM_IOCTL_VERSION`) and taking the first called [`DRIVER_NAME`]; render nodes
//! (`renderD*`) are tried before primary nodes (`card*`). The four [`Device`] operations
//! are the four ioctls of [`crate::uapi`]; a buffer is mapped by `mmap(2)` of the node at
//! the fake offset `GEM_MMAP` returns, once, and stays mapped until it is destroyed. The
//! kernel's errno is returned unchanged; its diagnosis is in the kernel log.
//!
//! The ioctl requests are the constants of [`crate::uapi`] (one source of truth); the tests
//! check them against `nix`'s own `_IOWR` computation for the target architecture.
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::device::{BufferHandle, Device, DeviceError, Operation, Task};
use crate::shm::Mapping;
use crate::uapi::{self, GemCreateArgs, GemDestroyArgs, GemMapOffsetArgs, NvdlaMemHandle};
use crate::uapi::{DrmPrimeHandle, SubmitArgs, SubmitTask};

/// The DRM driver name of `opendla.ko` (its `drm_driver.name`).
pub const DRIVER_NAME: &str = "nvdla";

/// Where DRM device nodes live.
pub const DRI_DIR: &str = "/dev/dri";

/// `struct drm_version` of `<drm/drm.h>`, the argument of `DRM_IOCTL_VERSION`.
///
/// The `*_len` fields are `__kernel_size_t` and the strings user pointers, so the layout
/// follows the target's pointer width (64 bytes on 64-bit targets, 36 on 32-bit).
#[repr(C)]
#[derive(Debug)]
pub struct DrmVersion {
    /// Out: major version.
    pub version_major: i32,
    /// Out: minor version.
    pub version_minor: i32,
    /// Out: patch level.
    pub version_patchlevel: i32,
    /// In: size of `name`; out: length of the driver name.
    pub name_len: usize,
    /// In: buffer for the driver name (not NUL terminated), or null.
    pub name: *mut u8,
    /// In/out: as `name_len`, for the date.
    pub date_len: usize,
    /// In: buffer for the date, or null.
    pub date: *mut u8,
    /// In/out: as `name_len`, for the description.
    pub desc_len: usize,
    /// In: buffer for the description, or null.
    pub desc: *mut u8,
}

impl Default for DrmVersion {
    fn default() -> Self {
        Self {
            version_major: 0,
            version_minor: 0,
            version_patchlevel: 0,
            name_len: 0,
            name: std::ptr::null_mut(),
            date_len: 0,
            date: std::ptr::null_mut(),
            desc_len: 0,
            desc: std::ptr::null_mut(),
        }
    }
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<DrmVersion>() == 64);
#[cfg(target_pointer_width = "32")]
const _: () = assert!(core::mem::size_of::<DrmVersion>() == 36);

/// `DRM_IOCTL_VERSION` = `DRM_IOWR(0x00, struct drm_version)`.
pub const DRM_IOCTL_VERSION: u32 = uapi::ioc(3, b'd', 0x00, core::mem::size_of::<DrmVersion>());

mod ioctl {
    use super::*;
    nix::ioctl_readwrite_bad!(drm_version, DRM_IOCTL_VERSION, DrmVersion);
    nix::ioctl_readwrite_bad!(nvdla_submit, uapi::DRM_IOCTL_NVDLA_SUBMIT, SubmitArgs);
    nix::ioctl_readwrite_bad!(
        nvdla_gem_create,
        uapi::DRM_IOCTL_NVDLA_GEM_CREATE,
        GemCreateArgs
    );
    nix::ioctl_readwrite_bad!(
        nvdla_gem_mmap,
        uapi::DRM_IOCTL_NVDLA_GEM_MMAP,
        GemMapOffsetArgs
    );
    nix::ioctl_readwrite_bad!(
        nvdla_gem_destroy,
        uapi::DRM_IOCTL_NVDLA_GEM_DESTROY,
        GemDestroyArgs
    );
    nix::ioctl_readwrite_bad!(
        prime_handle_to_fd,
        uapi::DRM_IOCTL_PRIME_HANDLE_TO_FD,
        DrmPrimeHandle
    );
}

/// The name of the DRM driver behind `file` (`DRM_IOCTL_VERSION`); `ENOTTY` and the like for
/// a file that is not a DRM node.
pub fn driver_name(file: &File) -> io::Result<String> {
    let mut name = [0u8; 64];
    let mut v = DrmVersion {
        name_len: name.len(),
        name: name.as_mut_ptr(),
        ..DrmVersion::default()
    };
    // SAFETY: `v` is a valid `drm_version` whose only non-null pointer, `name`, points to
    // `name_len` writable bytes that outlive the call; the kernel writes at most that many
    // (it truncates and reports the full length in `name_len`). `date`/`desc` are null with
    // length 0, which the kernel skips.
    unsafe { ioctl::drm_version(file.as_raw_fd(), &mut v) }.map_err(nix_io)?;
    let n = v.name_len.min(name.len());
    Ok(String::from_utf8_lossy(&name[..n]).into_owned())
}

/// The DRM nodes of `dir` in the order they are tried: render nodes, then primary nodes,
/// each by number.
pub fn candidate_nodes(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut nodes: Vec<(u8, u32, PathBuf)> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let (class, num) = if let Some(n) = name.strip_prefix("renderD") {
                (0, n)
            } else if let Some(n) = name.strip_prefix("card") {
                (1, n)
            } else {
                return None;
            };
            Some((class, num.parse().ok()?, e.path()))
        })
        .collect();
    nodes.sort();
    nodes.into_iter().map(|(_, _, p)| p).collect()
}

/// The first DRM node in `dir` whose driver is [`DRIVER_NAME`].
pub fn find_node_in(dir: &Path) -> Option<PathBuf> {
    candidate_nodes(dir).into_iter().find(|p| {
        let name = File::options()
            .read(true)
            .write(true)
            .open(p)
            .and_then(|f| driver_name(&f));
        match name {
            Ok(n) => {
                log::debug!("linux: {} is driven by {n}", p.display());
                n == DRIVER_NAME
            }
            Err(e) => {
                log::debug!("linux: {}: {e}", p.display());
                false
            }
        }
    })
}

/// The system's `opendla` node, if there is one.
pub fn find_node() -> Option<PathBuf> {
    find_node_in(Path::new(DRI_DIR))
}

fn nix_io(e: nix::Error) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

fn nix_dev(op: Operation, e: nix::Error) -> DeviceError {
    DeviceError::from_errno(op, e as i32)
}

struct Buffer {
    size: u64,
    map: Option<Mapping>,
    /// The buffer's PRIME export: submits name the buffer by this file descriptor, as
    /// upstream's runtime does and opendla.ko requires. `None` if the driver cannot export
    /// (then the GEM handle is sent, which our kernel module also accepts).
    dmabuf: Option<OwnedFd>,
}

impl Buffer {
    /// How a submit's address list names this buffer (GEM handle `handle`).
    fn submit_name(&self, handle: u32) -> u32 {
        self.dmabuf
            .as_ref()
            .and_then(|fd| u32::try_from(fd.as_raw_fd()).ok())
            .unwrap_or(handle)
    }
}

/// An NVDLA driven by a kernel module through its DRM node.
pub struct LinuxDevice {
    file: File,
    path: PathBuf,
    buffers: BTreeMap<u32, Buffer>,
}

impl std::fmt::Debug for LinuxDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxDevice")
            .field("path", &self.path)
            .field("buffers", &self.buffers.len())
            .finish()
    }
}

impl LinuxDevice {
    /// Opens the system's `opendla` node (see [`find_node`]); `NotFound` when there is none.
    pub fn open() -> io::Result<Self> {
        let path = find_node().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "no DRM node of driver '{DRIVER_NAME}' in {DRI_DIR} (is opendla.ko loaded?)"
                ),
            )
        })?;
        Self::open_path(path)
    }

    /// Opens the DRM node at `path`; `InvalidInput` if its driver is not [`DRIVER_NAME`].
    pub fn open_path(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::options().read(true).write(true).open(&path)?;
        let name = driver_name(&file)?;
        if name != DRIVER_NAME {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is driven by '{name}', not '{DRIVER_NAME}'",
                    path.display()
                ),
            ));
        }
        Ok(Self {
            file,
            path,
            buffers: BTreeMap::new(),
        })
    }

    /// The node's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Exports GEM object `handle` as a dma-buf (close-on-exec), or `None` when the driver
    /// refuses.
    fn export(&self, handle: u32) -> Option<OwnedFd> {
        let mut p = DrmPrimeHandle {
            handle,
            flags: nix::fcntl::OFlag::O_CLOEXEC.bits() as u32,
            fd: -1,
        };
        // SAFETY: `p` is a valid `drm_prime_handle` (no pointers), used by the kernel during
        // the call only.
        match unsafe { ioctl::prime_handle_to_fd(self.file.as_raw_fd(), &mut p) } {
            // SAFETY: the kernel just installed `p.fd` in this process for us; nothing else
            // owns it.
            Ok(_) if p.fd >= 0 => Some(unsafe { OwnedFd::from_raw_fd(p.fd) }),
            Ok(_) => None,
            Err(e) => {
                log::debug!(
                    "PRIME export of buffer {handle} refused ({e}): submitting its GEM handle"
                );
                None
            }
        }
    }
}

impl Device for LinuxDevice {
    fn create_buffer(&mut self, size: u64) -> Result<BufferHandle, DeviceError> {
        let op = Operation::CreateBuffer;
        let mut a = GemCreateArgs {
            handle: 0,
            flags: 0,
            size,
        };
        // SAFETY: `a` is a valid `nvdla_gem_create_args` (no pointers) that the kernel reads
        // and writes during the call only.
        unsafe { ioctl::nvdla_gem_create(self.file.as_raw_fd(), &mut a) }
            .map_err(|e| nix_dev(op, e))?;
        let h = BufferHandle::new(a.handle).ok_or_else(|| {
            DeviceError::from_errno(op, 5).with_detail("kernel returned handle 0")
        })?;
        let dmabuf = self.export(a.handle);
        self.buffers.insert(
            h.get(),
            Buffer {
                size,
                map: None,
                dmabuf,
            },
        );
        Ok(h)
    }

    fn map_buffer(&mut self, handle: BufferHandle) -> Result<&mut [u8], DeviceError> {
        let op = Operation::MapBuffer;
        let size = match self.buffers.get(&handle.get()) {
            Some(b) if b.map.is_some() => None,
            Some(b) => Some(b.size),
            None => return Err(DeviceError::from_errno(op, 2)),
        };
        if let Some(size) = size {
            let mut a = GemMapOffsetArgs {
                handle: handle.get(),
                reserved: 0,
                offset: 0,
            };
            // SAFETY: `a` is a valid `nvdla_gem_map_offset_args` (no pointers), used by the
            // kernel during the call only.
            unsafe { ioctl::nvdla_gem_mmap(self.file.as_raw_fd(), &mut a) }
                .map_err(|e| nix_dev(op, e))?;
            let len = usize::try_from(size).map_err(|_| DeviceError::from_errno(op, 12))?;
            let map = Mapping::new(self.file.as_fd(), a.offset, len).map_err(|e| {
                DeviceError::from_errno(op, e.raw_os_error().unwrap_or(5))
                    .with_detail(format!("mmap: {e}"))
            })?;
            if let Some(b) = self.buffers.get_mut(&handle.get()) {
                b.map = Some(map);
            }
        }
        self.buffers
            .get_mut(&handle.get())
            .and_then(|b| b.map.as_mut())
            .map(Mapping::as_mut_slice)
            .ok_or_else(|| DeviceError::from_errno(op, 2))
    }

    fn destroy_buffer(&mut self, handle: BufferHandle) -> Result<(), DeviceError> {
        let op = Operation::DestroyBuffer;
        // Unmap and close the export first: the kernel keeps the object alive (and our
        // module refuses to destroy it) while it is mapped or exported.
        if let Some(b) = self.buffers.get_mut(&handle.get()) {
            b.map = None;
            b.dmabuf = None;
        }
        let mut a = GemDestroyArgs {
            handle: handle.get(),
        };
        // SAFETY: `a` is a valid `nvdla_gem_destroy_args` (no pointers).
        unsafe { ioctl::nvdla_gem_destroy(self.file.as_raw_fd(), &mut a) }
            .map_err(|e| nix_dev(op, e))?;
        self.buffers.remove(&handle.get());
        Ok(())
    }

    fn submit(&mut self, tasks: &[Task<'_>]) -> Result<(), DeviceError> {
        let op = Operation::Submit;
        let num_tasks = u16::try_from(tasks.len()).map_err(|_| DeviceError::from_errno(op, 22))?;
        let lists: Vec<Vec<NvdlaMemHandle>> = tasks
            .iter()
            .map(|t| {
                t.addresses
                    .iter()
                    .map(|a| {
                        let mut m = a.to_uapi();
                        if let Some(b) = self.buffers.get(&m.handle) {
                            m.handle = b.submit_name(m.handle);
                        }
                        m
                    })
                    .collect()
            })
            .collect();
        let mut raw = Vec::with_capacity(tasks.len());
        for (t, l) in tasks.iter().zip(&lists) {
            raw.push(SubmitTask {
                num_addresses: u32::try_from(l.len())
                    .map_err(|_| DeviceError::from_errno(op, 22))?,
                timeout: t.timeout.to_uapi(),
                address_list: l.as_ptr() as u64,
            });
        }
        let mut args = SubmitArgs {
            tasks: raw.as_ptr() as u64,
            num_tasks,
            flags: 0,
            version: 0,
        };
        // SAFETY: `args.tasks` points to `num_tasks` valid `SubmitTask`s in `raw`, each
        // `address_list` to `num_addresses` valid entries in `lists`; both vectors outlive
        // the call and the kernel only reads them (it copies them in before using them).
        unsafe { ioctl::nvdla_submit(self.file.as_raw_fd(), &mut args) }
            .map_err(|e| nix_dev(op, e))?;
        Ok(())
    }
}

impl Drop for LinuxDevice {
    fn drop(&mut self) {
        // Unmap before the file closes; closing the file frees the kernel objects.
        self.buffers.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    /// `nix` computes `_IOWR` for the target architecture itself: the request numbers of
    /// [`uapi`] (asm-generic encoding) must agree with it on every target we build for.
    #[test]
    fn request_numbers_agree_with_nix() {
        let n = |nr, size| nix::request_code_readwrite!(b'd', nr, size) as u32;
        assert_eq!(
            uapi::DRM_IOCTL_NVDLA_SUBMIT,
            n(0x40, size_of::<SubmitArgs>())
        );
        assert_eq!(
            uapi::DRM_IOCTL_NVDLA_GEM_CREATE,
            n(0x41, size_of::<GemCreateArgs>())
        );
        assert_eq!(
            uapi::DRM_IOCTL_NVDLA_GEM_MMAP,
            n(0x42, size_of::<GemMapOffsetArgs>())
        );
        assert_eq!(
            uapi::DRM_IOCTL_NVDLA_GEM_DESTROY,
            n(0x43, size_of::<GemDestroyArgs>())
        );
        assert_eq!(DRM_IOCTL_VERSION, n(0x00, size_of::<DrmVersion>()));
    }

    /// `struct drm_version` as laid out by gcc for x86_64/aarch64 Linux: three ints, 4 bytes
    /// of padding, then six 8-byte fields.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn drm_version_layout() {
        assert_eq!(offset_of!(DrmVersion, version_patchlevel), 8);
        assert_eq!(offset_of!(DrmVersion, name_len), 16);
        assert_eq!(offset_of!(DrmVersion, name), 24);
        assert_eq!(offset_of!(DrmVersion, date_len), 32);
        assert_eq!(offset_of!(DrmVersion, desc), 56);
        // DRM_IOCTL_VERSION on x86_64 and arm64 Linux (from <drm/drm.h>).
        assert_eq!(DRM_IOCTL_VERSION, 0xc040_6400);
    }

    #[test]
    fn non_drm_files_are_not_nodes() {
        let d = std::env::temp_dir().join(format!("nvdla-port-dri-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        for n in [
            "card1",
            "renderD129",
            "renderD128",
            "card0",
            "controlD64",
            "cardX",
        ] {
            std::fs::write(d.join(n), b"").unwrap();
        }
        let names: Vec<String> = candidate_nodes(&d)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["renderD128", "renderD129", "card0", "card1"]);
        // Regular files answer DRM_IOCTL_VERSION with ENOTTY: none is an nvdla node.
        assert_eq!(find_node_in(&d), None);
        let f = File::open(d.join("card0")).unwrap();
        assert!(driver_name(&f).is_err());
        assert!(LinuxDevice::open_path(d.join("card0")).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// On a machine with `opendla.ko` loaded, a buffer round trip through the kernel.
    #[test]
    fn kernel_buffer_round_trip_when_present() {
        let Some(node) = find_node() else {
            eprintln!("skipped: no '{DRIVER_NAME}' DRM node in {DRI_DIR}");
            return;
        };
        let mut dev = LinuxDevice::open_path(&node).unwrap();
        let h = dev.create_buffer(5000).unwrap();
        let b = dev.map_buffer(h).unwrap();
        assert_eq!(b.len(), 5000);
        assert!(b.iter().all(|&x| x == 0));
        b[4999] = 1;
        assert_eq!(dev.map_buffer(h).unwrap()[4999], 1);
        dev.destroy_buffer(h).unwrap();
        assert!(dev.destroy_buffer(h).is_err());
    }
}
