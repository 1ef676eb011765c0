//! IEEE binary16 conversions exactly as the upstream runtime performs them (ties away from
//! zero), and the IEEE default rounding for tensors given as numbers.
//!
//! They live in [`nvdla_emu::fp16`], shared with the bare-metal runner; this module
//! re-exports them under their old path.

pub use nvdla_emu::fp16::*;
