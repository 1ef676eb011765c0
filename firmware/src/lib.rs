//! The NVDLA firmware: the engine scheduler that programs the accelerator.
//!
//! NVDLA has no command processor of its own. Software running next to it (the kernel
//! driver on a headless NVDLA, a microcontroller on a headed one) writes each engine's
//! configuration registers over the CSB bus, reads the task's descriptors from memory through
//! addresses the driver translated, and reacts to interrupts. This crate is that software,
//! `no_std` and without heap so it can run on a microcontroller. It reaches the outside world
//! only through the [`hw::Hw`] trait.
//!
//! - [`hw`]: the [`hw::Hw`] trait (registers, device memory, address-list translation) and
//!   the [`hw::DeviceAddr`] newtype;
//! - [`error`]: typed errors.
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod error;
pub mod hw;

pub use error::{Error, HwError};
