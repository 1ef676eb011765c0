//! The NVDLA user-mode runtime (UMD) library.
//!
//! The runtime is what an application links to run a compiled network: it loads the
//! loadable, allocates and fills device buffers through [`nvdla_port::device::Device`],
//! submits DLA tasks, runs CPU (EMU) tasks and writes the output tensor as a `.dimg` file.
//!
//! - [`dimg`]: the upstream `.dimg` image format (read, write byte-identical to upstream,
//!   the `--rawdump` text and the `printBuffer` debug view).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cfmt;
pub mod dimg;
