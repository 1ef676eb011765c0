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
//! - [`regs`]: the register map (units, per-generation base addresses, tock-registers
//!   bit fields);
//! - [`config`]: the build the firmware drives ([`HwConfig`], over [`nvdla_hw`]'s table of
//!   the published builds) and the features operations need;
//! - [`engine`]: the scheduler ([`Engine`]): dependency graph, ping-pong register groups,
//!   events and interrupt handling;
//! - `processors` (private): per-engine register programming (BDMA, convolution, SDP, PDP,
//!   CDP, RUBIK, LUTs);
//! - `task` (private): reading the task's descriptors from device memory;
//! - [`error`]: typed errors.
//!
//! ```no_run
//! # fn demo(hw: &mut impl nvdla_firmware::hw::Hw) -> Result<(), nvdla_firmware::Error> {
//! use nvdla_firmware::{nvdla_hw, Engine, HwConfig, Progress};
//! let mut engine: Engine = Engine::new(HwConfig::new(&nvdla_hw::NV_FULL));
//! let mut progress = engine.execute_task(hw)?;
//! while progress == Progress::Running {
//!     // ... wait for the NVDLA interrupt ...
//!     progress = engine.handle_interrupt(hw)?;
//! }
//! # Ok(()) }
//! ```
//!
//! Logging goes through `log` (feature `log`, default) or `defmt` (feature `defmt`); without
//! either, log statements compile to nothing.
//!
//! Features `nv_full`, `nv_large`, `nv_medium_1024_full`, `nv_medium_512`, `nv_small`,
//! `nv_small_256` and `nv_small_256_full` compile the firmware for those builds only (see
//! [`nvdla_hw::ALL`]): what none of them has is left out of the code, and an engine
//! configured for another build refuses to start ([`Error::ConfigNotCompiled`]). Without
//! them every build is selectable at run time.
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[macro_use]
mod fmt;

pub mod config;
pub mod engine;
pub mod error;
pub mod hw;
mod processors;
pub mod regs;
mod task;

pub use config::{Feature, HwConfig, HwVersion};
pub use engine::{Engine, EngineStatus, OpState, Progress, DEFAULT_MAX_OPS};
pub use error::{Error, HwError, ListKind, OpRef};
/// The hardware description the firmware is configured from.
pub use nvdla_hw;
pub use processors::{POLL_LIMIT, POLL_TIMEOUT_MS};
pub use task::MAX_ROIS;
