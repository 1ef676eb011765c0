//! Core of the NVDLA kernel-mode driver (KMD), independent of any operating system.
//!
//! A kernel driver for an accelerator owns three things on behalf of untrusted user
//! processes: the memory the device may touch (buffer objects, each mapped at a device
//! address), the checks that a job only names memory its submitter owns, and the queue of
//! jobs on the hardware. On Linux `opendla.ko` does this through DRM GEM objects; this crate
//! is the same logic as plain Rust (`no_std` + `alloc`) so it can run inside a kernel, in a
//! user process next to a virtual platform, or on a microcontroller.
//!
//! - [`error`]: errno-style errors, mapped to the Linux values the ioctl ABI returns;
//! - [`iova`]: the device-address (IOVA) window allocator, 4 KiB granular;
//! - [`bo`]: buffer objects: creation, per-client ownership, mmap offsets, pinning;
//! - [`submit`]: validation of a submit (cheapest checks first) and translation of
//!   (handle, offset) address lists to device addresses;
//! - [`os`]: [`os::KmdOs`], the host services (registers, device memory, clock, interrupt
//!   wait, reset) the driver needs;
//! - [`job`]: running one task through the firmware with its timeout, reset and diagnosis;
//! - [`driver`]: [`Kmd`], the four `opendla` operations over one NVDLA;
//! - [`fallible`]: allocation that answers `ENOMEM` instead of aborting: the core never
//!   calls an infallible allocating API (in a kernel, a failed allocation must not panic).
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod bo;
pub mod driver;
pub mod error;
pub mod fallible;
pub mod iova;
pub mod job;
pub mod os;
pub mod submit;

pub use driver::{begin_submit, end_submit, Kmd, Runner, SubmitFailure, SubmitReport};
pub use error::Error;
pub use os::{HwFault, HwFaultKind, KmdOs, Wait};
