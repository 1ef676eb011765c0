//! Choosing a device backend, and a host-memory mock device.
//!
//! The runtime needs nothing but a [`Device`]: any backend that implements the trait (the
//! Linux `opendla` DRM node, the in-process virtual platform with our KMD and firmware, a
//! socket to a remote KMD) runs loadables. [`open_device`] is the one place that maps the
//! command line's `--device` and `--config` onto a backend; backends are wired in there.
//!
//! [`MockDevice`] keeps buffers in host memory and records every submit; a closure may
//! "execute" DLA tasks (for example copy memory). It serves the runtime's tests and the
//! `--device mock` command-line choice, which runs EMU tasks for real and DLA tasks not at
//! all.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use nvdla_port::device::{BufferAddress, BufferHandle, Device, DeviceError, Operation, Task};
use nvdla_port::linux::LinuxDevice;
use nvdla_port::rtl::{RtlDevice, RtlLaunch};
use nvdla_port::socket::SocketDevice;
#[cfg(feature = "vp")]
use nvdla_port::vp::VpDevice;
use thiserror::Error;

/// Which kind of device to drive (`--device`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The in-process virtual platform (KMD + firmware + hardware model).
    Vp,
    /// The Linux `opendla` DRM render node.
    Linux,
    /// A KMD behind a Unix socket at this path.
    Socket(PathBuf),
    /// Host memory only: DLA tasks are recorded, not executed (for testing the runtime).
    Mock,
    /// NVIDIA's nv_small RTL under Verilator: the harness program at this path, or the one
    /// `NVDLA_RTL_HARNESS` names (`None`); started for the run, with our KMD and firmware.
    Rtl(Option<PathBuf>),
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceKind::Vp => f.write_str("vp"),
            DeviceKind::Linux => f.write_str("linux"),
            DeviceKind::Socket(p) => write!(f, "socket:{}", p.display()),
            DeviceKind::Mock => f.write_str("mock"),
            DeviceKind::Rtl(None) => f.write_str("rtl"),
            DeviceKind::Rtl(Some(p)) => write!(f, "rtl:{}", p.display()),
        }
    }
}

impl FromStr for DeviceKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "vp" => Ok(DeviceKind::Vp),
            "linux" => Ok(DeviceKind::Linux),
            "mock" => Ok(DeviceKind::Mock),
            "rtl" => Ok(DeviceKind::Rtl(None)),
            _ => {
                if let Some(p) = s.strip_prefix("socket:").filter(|p| !p.is_empty()) {
                    Ok(DeviceKind::Socket(PathBuf::from(p)))
                } else if let Some(p) = s.strip_prefix("rtl:").filter(|p| !p.is_empty()) {
                    Ok(DeviceKind::Rtl(Some(PathBuf::from(p))))
                } else {
                    Err(format!(
                        "unknown device '{s}' (expected vp, linux, socket:PATH, rtl, \
                         rtl:HARNESS or mock)"
                    ))
                }
            }
        }
    }
}

/// Hardware configuration of the accelerator (`--config`): the published builds of the
/// hardware ([`nvdla_port::Build`], from `nvdla-hw`), which the virtual platform models.
pub use nvdla_port::Build as HwConfig;

/// Why a device could not be opened.
#[derive(Debug, Error)]
pub enum OpenDeviceError {
    /// The backend is not built into this runtime (`vp` without the Cargo feature `vp`).
    #[error("device backend {0} not available in this build")]
    NotAvailable(DeviceKind),
    /// The backend exists but failed to open.
    #[error("cannot open device {kind}: {reason}")]
    Failed {
        /// The backend.
        kind: DeviceKind,
        /// What went wrong.
        reason: String,
    },
}

/// The signature of a backend opener; [`open_device`] is the default one. The command-line
/// entry point ([`crate::app::run`]) takes an opener so that tests and embedders can supply
/// their own.
pub type DeviceOpener<'a> =
    dyn Fn(&DeviceKind, HwConfig) -> Result<Box<dyn Device + Send>, OpenDeviceError> + 'a;

/// Opens the device backend `kind` for hardware configuration `config`.
///
/// This is the seam where backends are wired in: each arm returns the backend's
/// `Box<dyn Device>`. `config` selects the virtual platform's hardware; real hardware
/// reports its own.
///
/// Every backend may move between threads (`Send`): a session can run on a worker thread
/// (the Python package releases the GIL while the accelerator runs).
pub fn open_device(
    kind: &DeviceKind,
    config: HwConfig,
) -> Result<Box<dyn Device + Send>, OpenDeviceError> {
    match kind {
        DeviceKind::Mock => Ok(Box::new(MockDevice::new())),
        #[cfg(feature = "vp")]
        DeviceKind::Vp => Ok(Box::new(VpDevice::new(config.into()))),
        #[cfg(not(feature = "vp"))]
        DeviceKind::Vp => Err(OpenDeviceError::NotAvailable(kind.clone())),
        // Real hardware reports its own configuration: `config` does not apply.
        DeviceKind::Linux => match LinuxDevice::open() {
            Ok(d) => Ok(Box::new(d)),
            Err(e) => Err(OpenDeviceError::Failed {
                kind: kind.clone(),
                reason: e.to_string(),
            }),
        },
        DeviceKind::Rtl(path) => {
            let failed = |reason: String| OpenDeviceError::Failed {
                kind: kind.clone(),
                reason,
            };
            let launch = match path {
                Some(p) => RtlLaunch::new(p.clone()),
                None => RtlLaunch::from_env().map_err(|e| failed(e.to_string()))?,
            };
            match RtlDevice::launch(&launch, config) {
                Ok(d) => Ok(Box::new(d)),
                Err(e) => Err(failed(e.to_string())),
            }
        }
        // The daemon may serve several configurations: ask for ours.
        DeviceKind::Socket(path) => match SocketDevice::connect(path, Some(config.name())) {
            Ok(d) => Ok(Box::new(d)),
            Err(e) => Err(OpenDeviceError::Failed {
                kind: kind.clone(),
                reason: e.to_string(),
            }),
        },
    }
}

/// The device used when the command line names none: the Linux DRM node when an
/// `opendla` node exists, else the in-process virtual platform (a runtime built without
/// the `vp` feature: always the Linux node).
pub fn default_device() -> DeviceKind {
    if !cfg!(feature = "vp") || nvdla_port::linux::find_node().is_some() {
        DeviceKind::Linux
    } else {
        DeviceKind::Vp
    }
}

/// A DLA task as the mock device saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedTask {
    /// Its address list.
    pub addresses: Vec<BufferAddress>,
    /// Its timeout, as the ioctl value.
    pub timeout: u32,
}

/// The hook a [`MockDevice`] calls for each submitted DLA task; it may read and write the
/// buffers (`buffers[handle]`) to emulate the hardware, or fail with an errno.
pub type ExecuteHook =
    Box<dyn FnMut(&RecordedTask, &mut BTreeMap<u32, Vec<u8>>) -> Result<(), i32> + Send>;

/// A [`Device`] in host memory: buffers are vectors, submits are recorded and validated as
/// the KMD validates them, and optionally executed by a hook.
pub struct MockDevice {
    buffers: BTreeMap<u32, Vec<u8>>,
    next: u32,
    /// Every DLA task submitted, in order.
    pub submitted: Vec<RecordedTask>,
    /// Every handle created, in order, with its size.
    pub created: Vec<(BufferHandle, u64)>,
    /// Every handle destroyed, in order.
    pub destroyed: Vec<BufferHandle>,
    hook: Option<ExecuteHook>,
}

impl Default for MockDevice {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MockDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockDevice")
            .field("buffers", &self.buffers.len())
            .field("submitted", &self.submitted.len())
            .finish()
    }
}

const EINVAL: i32 = 22;
const ENOENT: i32 = 2;
const ENOMEM: i32 = 12;

/// Largest buffer the mock allocates (1 GiB).
pub const MOCK_MAX_BUFFER: u64 = 1 << 30;

impl MockDevice {
    /// An empty device that records DLA tasks without executing them.
    pub fn new() -> Self {
        Self {
            buffers: BTreeMap::new(),
            next: 1,
            submitted: Vec::new(),
            created: Vec::new(),
            destroyed: Vec::new(),
            hook: None,
        }
    }

    /// A device that runs `hook` for every DLA task.
    pub fn with_hook(hook: ExecuteHook) -> Self {
        let mut d = Self::new();
        d.hook = Some(hook);
        d
    }

    /// The bytes of a live buffer.
    pub fn buffer(&self, handle: BufferHandle) -> Option<&[u8]> {
        self.buffers.get(&handle.get()).map(Vec::as_slice)
    }

    /// Number of live buffers.
    pub fn live_buffers(&self) -> usize {
        self.buffers.len()
    }
}

impl Device for MockDevice {
    fn create_buffer(&mut self, size: u64) -> Result<BufferHandle, DeviceError> {
        let err = |errno| DeviceError::from_errno(Operation::CreateBuffer, errno);
        if size == 0 {
            return Err(err(EINVAL));
        }
        if size > MOCK_MAX_BUFFER {
            return Err(err(ENOMEM));
        }
        let raw = self.next;
        self.next = self.next.checked_add(1).ok_or(err(ENOMEM))?;
        let handle = BufferHandle::new(raw).ok_or(err(ENOMEM))?;
        self.buffers.insert(raw, vec![0; size as usize]);
        self.created.push((handle, size));
        Ok(handle)
    }

    fn map_buffer(&mut self, handle: BufferHandle) -> Result<&mut [u8], DeviceError> {
        self.buffers
            .get_mut(&handle.get())
            .map(Vec::as_mut_slice)
            .ok_or(DeviceError::from_errno(Operation::MapBuffer, ENOENT))
    }

    fn destroy_buffer(&mut self, handle: BufferHandle) -> Result<(), DeviceError> {
        self.buffers
            .remove(&handle.get())
            .map(|_| self.destroyed.push(handle))
            .ok_or(DeviceError::from_errno(Operation::DestroyBuffer, ENOENT))
    }

    fn submit(&mut self, tasks: &[Task<'_>]) -> Result<(), DeviceError> {
        let err = |errno| DeviceError::from_errno(Operation::Submit, errno);
        // Validate everything first, as the KMD does: counts, handles, offsets.
        for t in tasks {
            if t.addresses.is_empty()
                || t.addresses.len() > nvdla_port::uapi::MAX_BUFFERS_PER_TASK as usize
            {
                return Err(err(EINVAL));
            }
        }
        for t in tasks {
            for a in t.addresses {
                if !self.buffers.contains_key(&a.handle.get()) {
                    return Err(err(ENOENT));
                }
            }
        }
        for t in tasks {
            for a in t.addresses {
                let size = self.buffers[&a.handle.get()].len() as u64;
                if a.offset >= size {
                    return Err(err(EINVAL));
                }
            }
        }
        for t in tasks {
            let rec = RecordedTask {
                addresses: t.addresses.to_vec(),
                timeout: t.timeout.to_uapi(),
            };
            if let Some(hook) = self.hook.as_mut() {
                hook(&rec, &mut self.buffers).map_err(err)?;
            }
            self.submitted.push(rec);
        }
        Ok(())
    }
}
