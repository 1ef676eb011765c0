//! The OS-abstraction layer between the NVDLA user-mode runtime (UMD) and the kernel-mode
//! driver (KMD).
//!
//! On Linux the UMD talks to `opendla.ko` through a DRM render node: it allocates DMA buffers
//! as GEM objects (`GEM_CREATE`), maps them into its address space (`GEM_MMAP` gives the fake
//! offset to pass to `mmap(2)`), frees them (`GEM_DESTROY`) and hands the kernel tasks made of
//! (GEM handle, byte offset) address lists (`SUBMIT`). This crate holds two things:
//!
//! - [`uapi`]: the binary ioctl ABI, laid out exactly as upstream `nvdla_ioctl.h`, so that a
//!   runtime built on this crate can talk to upstream's kernel module and the other way round;
//! - [`device`]: the [`device::Device`] trait, the operations the UMD needs from "a device",
//!   independent of whether the driver is in the kernel, in process or behind a socket.
//!
//! Backends implement [`device::Device`]:
//!
//! - `vp` (Cargo feature `vp`, default): the in-process backend: our KMD and firmware
//!   driving the virtual platform's hardware model;
//! - [`linux`]: a kernel module (upstream `opendla.ko` or one with its ABI) through its DRM
//!   render node;
//! - [`socket`]: a KMD daemon (`daemon`, feature `vp`) in another process, over a Unix
//!   socket speaking [`wire`], with buffers in shared memory ([`shm`]).
//!
//! `unsafe` is denied except in the modules that must call `mmap`, `ioctl` or take over
//! received file descriptors ([`shm`], [`linux`], [`socket`]); each block says why it is
//! sound.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod bridge;
#[cfg(feature = "vp")]
pub mod daemon;
pub mod device;
pub mod hosted;
pub mod linux;
pub mod rtl;
pub mod shm;
pub mod socket;
pub mod uapi;
#[cfg(feature = "vp")]
pub mod vp;
pub mod wire;

/// A published NVDLA build by name (`--config`; [`nvdla_hw::Build`]): what the virtual
/// platform models (`vp::VpConfig` converts both ways) and a daemon serves. Real hardware
/// reports its own.
pub use nvdla_hw::Build;

/// [`Build`] from a command line or a daemon's `HELLO`, with a message naming the choices.
pub fn parse_build(s: &str) -> Result<Build, String> {
    s.parse().map_err(|e| match e {
        nvdla_hw::SelectError::Unknown => {
            let names: Vec<&str> = nvdla_hw::Config::names().collect();
            format!(
                "unknown config '{s}' (expected one of {})",
                names.join(", ")
            )
        }
        e => e.to_string(),
    })
}
