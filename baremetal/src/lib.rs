//! Running NVDLA networks with no operating system.
//!
//! Users run NVDLA without Linux: FireSim and Chipyard SoCs, FPGA soft cores, SoC bring-up.
//! This crate is what such a program needs, `no_std` and without heap:
//!
//! - [`image`]: the network image `nvdla-runtime --export-baremetal` writes, a loadable and
//!   its input laid out at fixed physical addresses (descriptors already point at them), so
//!   nothing is allocated or relocated at run time;
//! - [`mmio`]: the accelerator as the CPU sees it, its CSB register aperture ([`Csb`],
//!   volatile 32-bit accesses through tock-registers, behind the [`Registers`] trait) and
//!   the memory it shares with the CPU ([`DmaRegion`]);
//! - [`run`]: the [`Runner`], which walks the image's tasks in order: DLA tasks through
//!   the firmware's scheduler ([`nvdla_firmware::Engine`]) with polled completion and a
//!   timeout from the board's clock ([`Platform`], over embedded-hal's `DelayNs`), CPU
//!   tasks (softmax, power, ...) through the same emulator code as `nvdla-runtime`
//!   ([`nvdla_emu`]), so results are identical byte for byte.
//!
//! ```no_run
//! # use nvdla_baremetal::{Csb, DmaRegion, Platform, Runner};
//! # fn demo(platform: impl Platform) -> Result<(), nvdla_baremetal::RunError> {
//! // SAFETY (example): the board maps NVDLA's registers at 0x0c00_0000 and reserves
//! // 64 MiB at 0x4800_0000 for the image, placed there before the program starts.
//! let csb = unsafe { Csb::new(0x0c00_0000, 0x4_0000) };
//! let mem = unsafe { DmaRegion::new(0x4800_0000, 0x4800_0000 as *mut u8, 64 << 20) };
//! let mut runner: Runner<_, _> = Runner::new(csb, mem, platform)?;
//! runner.run(|task, report| { let _ = (task, report); })?;
//! let out = runner.output(0)?; // the output tensor's address and size
//! # let _ = out; Ok(()) }
//! ```
//!
//! Porting to a board: `docs/porting.md`, "Bare metal".
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]

pub mod image;
pub mod mmio;
pub mod run;

pub use image::{Header, ImageError, Interface};
pub use mmio::{Csb, DmaRegion, Registers};
pub use nvdla_emu;
pub use run::{Platform, RunError, Runner, TaskReport};
