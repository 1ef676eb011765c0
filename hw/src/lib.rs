//! The one description of the NVDLA hardware.
//!
//! NVDLA is a parameterised design: the same RTL is built with different atomic sizes,
//! convolution-buffer geometry and optional units. NVIDIA published seven builds:
//! `nv_full` (NVDLA v1, branch `nvdlav1` of `nvdla/hw`) and, on branch `master`,
//! `nv_large`, `nv_medium_1024_full`, `nv_medium_512`, `nv_small`, `nv_small_256` and
//! `nv_small_256_full`. [`Config`] holds the parameters of one build; every other crate
//! (firmware, driver, model, compiler) reads them from here instead of testing a build by
//! name.
//!
//! [`regs`] is the register map of both generations (unit bases, register offsets, reset
//! values, access masks and `register_bitfields!` fields), generated from NVIDIA's register
//! manuals like the configuration table is from its project specs.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
pub mod regs;

pub use config::*;
