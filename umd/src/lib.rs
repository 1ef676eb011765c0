//! The NVDLA user-mode runtime (UMD) library.
//!
//! The runtime is what an application links to run a compiled network: it loads the
//! loadable, allocates and fills device buffers through [`nvdla_port::device::Device`],
//! submits DLA tasks, runs CPU (EMU) tasks and writes the output tensor as a `.dimg` file.
//!
//! - [`runtime`]: load (parse, validate, allocate, fill), bind, relocate, run the submit
//!   list with its events, read outputs. Needs only a [`nvdla_port::device::Device`].
//! - [`emu`]: the CPU executor of EMU1 tasks (power, softmax, log, CPU fallback), over
//!   [`nvdla_emu`], the one copy of that arithmetic the bare-metal runner shares.
//! - [`fp16`]: upstream's half-precision conversions (ties away from zero).
//! - [`image`]: PGM/JPEG input and its conversion to the input tensor; output tensors as
//!   `.dimg` images.
//! - [`tensor`]: tensors as numbers: `--input` arrays converted to an input tensor's
//!   precision and layout, outputs as float32 arrays; [`npy`] (NumPy `.npy`) and [`onnx`]
//!   (ONNX `TensorProto`) read and write them.
//! - [`dimg`]: the upstream `.dimg` image format (read, write byte-identical to upstream,
//!   the `--rawdump` text and the `printBuffer` debug view).
//! - [`device`]: choosing a backend ([`device::open_device`], the seam where backends are
//!   wired in) and a host-memory [`device::MockDevice`].
//! - [`app`], [`server`]: the `nvdla-runtime` command and its server mode.
//! - `export` (feature `vp`): `--export-baremetal`, a loadable and its input as a bare-metal
//!   image at fixed addresses, with a linker fragment and a register-level trace.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod app;
mod cfmt;
pub mod device;
pub mod dimg;
pub mod emu;
pub mod error;
#[cfg(feature = "vp")]
pub mod export;
pub mod fp16;
pub mod image;
pub mod npy;
pub mod onnx;
#[cfg(feature = "cpu-partitions")]
pub mod partition;
pub mod report;
pub mod runtime;
pub mod server;
pub mod session;
pub mod tensor;

pub use device::{open_device, DeviceKind, HwConfig, MockDevice};
pub use error::{Direction, Error};
pub use runtime::{RunOptions, Runtime, TensorDesc};
