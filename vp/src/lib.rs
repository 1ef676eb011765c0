//! NVDLA virtual platform: a bit-exact functional model of the NVDLA hardware.
//!
//! Module map:
//! - [`config`]: the modelled build: [`nvdla_hw`]'s parameters of any published build plus
//!   the model's precision policy (int16/fp16 everywhere, as NVIDIA's C model).
//! - [`mem`]: sparse DRAM and CVSRAM with checked DMA accesses.
//! - [`regs`]: generated register maps (v1 and v2) and per-block register files with
//!   ping-pong groups.
//! - [`glb`]: interrupt status, mask, set, write-1-to-clear and the IRQ line.
//! - [`vp`]: the platform: CSB bus dispatch, engine launch and completion.
//! - [`engines`]: BDMA, SDP, PDP, CDP, RUBIK and the shared feature-cube layout.
//! - [`arith`]: fixed-point helpers shared by the engines.
//! - [`fp`]: fp16/fp17/fp32 bit-pattern arithmetic of the datapaths.
//! - [`timing`]: the cycle model: a clock, per-operation cycle estimates, the timeline.
//! - [`trace`]: players for v1 `input.txn` and v2 `.cfg` trace tests.
//! - [`bench`]: convolution throughput of the model against a plain reference.
// `unsafe` only to call the AVX2 convolution kernel once the CPU is known to have AVX2
// (`engines::conv::arith`).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod arith;
pub mod bench;
pub mod config;
pub mod engines;
pub mod fp;
pub mod glb;
pub mod hazard;
pub mod mem;
pub mod regs;
pub mod timing;
pub mod trace;
pub mod vp;

pub use config::{HwConfig, HwVersion, ModelPrecisions, ModelSdpUnits};
/// The hardware description the model is configured from.
pub use nvdla_hw;
pub use vp::Vp;
