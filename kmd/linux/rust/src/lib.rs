//! The Rust half of `nvdla.ko`: [`nvdla_kmd::Kmd`] behind a C ABI for the kbuild glue.
//!
//! The C side (`kmd/linux/nvdla_drv.c`) owns everything Linux: the DRM device, the ioctl
//! entry points and their `copy_from_user`, the MMIO mapping, the interrupt handler and its
//! wait queue, the DMA carve-out the buffers live in, and the module's lifetime. This crate
//! owns the driver's decisions: buffer handles and their owners, submit validation, the
//! firmware's scheduling of every operation, timeouts and the engine-state diagnosis.
//!
//! The boundary in both directions:
//! - C calls the `nvdla_rs_*` functions exported here, always in process context, with the
//!   device's state lock held, or its hardware lock for the run of a submit (see [`ffi`]);
//! - this crate calls the `nvdla_glue_*` functions (declared in `nvdla_glue.h`) for register
//!   and memory access, time, the interrupt wait, reset, allocation and logging.
//!
//! The kernel has no floating point in module code and no unwinder, so the crate is built
//! for `aarch64-unknown-none-softfloat` with `panic = "abort"`; allocation goes to
//! `kvmalloc`/`kvfree` ([`alloc_shim`]) and a panic to the glue's error path ([`rt`]). The
//! driver core is written not to panic on any input; the panic path is a last resort.
#![no_std]
#![warn(missing_docs)]

extern crate alloc;

mod alloc_shim;
pub mod ffi;
mod os;
mod rt;
