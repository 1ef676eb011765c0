//! A loaded network that owns everything it needs: the library face of the runtime, used
//! by the C API (`capi/`) and the Python package.
//!
//! [`Runtime`] borrows the loadable's bytes and takes the device on every call, which suits
//! a command that runs once. An application that loads a network once and runs it for
//! every camera frame wants one object: [`Session`] holds the device, the loadable's bytes
//! and the runtime over them (a self-referential pair, built with `self_cell`), and converts
//! between caller arrays (`f32`, NCHW) and the tensors' surfaces with the same code as
//! `nvdla-runtime --input` and `--output F.npy` ([`crate::tensor`]).
//!
//! Threading: a session is `Send` (every device backend is) and is used from one thread at
//! a time (every method takes `&mut self` or `&self`).

use crate::device::{open_device, DeviceKind, HwConfig};
use crate::error::Direction;
use crate::runtime::{RunOptions, Runtime, TensorDesc};
use crate::tensor::{self, HostTensor};
use nvdla_loadable::DataType;
use nvdla_port::device::{Device, DeviceTimings, Timeout};
use std::fmt;
use std::time::Instant;

self_cell::self_cell!(
    /// The loadable's bytes and the runtime over them.
    struct Loaded {
        owner: Vec<u8>,
        #[covariant]
        dependent: Runtime,
    }
);

impl fmt::Debug for Loaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Loaded")
            .field("bytes", &self.borrow_owner().len())
            .finish()
    }
}

/// What went wrong, with the runtime's or the device's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionError {
    /// A caller argument is wrong (unknown device or configuration, index out of range,
    /// array of the wrong size).
    InvalidArgument(String),
    /// The device could not be opened.
    Device(String),
    /// The loadable was refused or could not be placed in memory.
    Load(String),
    /// A run failed (a task failed, timed out, or the hardware faulted).
    Run(String),
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            SessionError::Device(m) => write!(f, "device: {m}"),
            SessionError::Load(m) => write!(f, "load: {m}"),
            SessionError::Run(m) => write!(f, "run: {m}"),
        }
    }
}

impl std::error::Error for SessionError {}

/// One input or output as a caller sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    /// The name the compiler gave it (the model's tensor name).
    pub name: String,
    /// `[N, C, H, W]`.
    pub shape: [u32; 4],
    /// Element type on the device.
    pub data_type: DataType,
    /// Bytes of its surface on the device (the raw layout, with the memory atoms).
    pub surface_bytes: u64,
    /// For integer tensors, `real = q × scale` as the compiler recorded it.
    pub scale: Option<f32>,
}

impl TensorInfo {
    /// Elements of the NCHW array (`N·C·H·W`).
    pub fn elements(&self) -> usize {
        self.shape.iter().map(|&d| d as usize).product()
    }
}

/// A device with one network loaded on it.
pub struct Session {
    dev: Box<dyn Device + Send>,
    loaded: Loaded,
    run_options: RunOptions,
    last_seconds: f64,
    last_timings: Option<DeviceTimings>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("loaded", &self.loaded)
            .field("last_seconds", &self.last_seconds)
            .finish_non_exhaustive()
    }
}

/// Opens device `kind` (`vp`, `linux`, `socket:PATH`, `rtl[:PATH]`, `mock`) for hardware
/// configuration `config` (the virtual platform's; real hardware reports its own).
pub fn open(kind: &str, config: &str) -> Result<Box<dyn Device + Send>, SessionError> {
    let kind: DeviceKind = kind.parse().map_err(SessionError::InvalidArgument)?;
    let config: HwConfig =
        nvdla_port::parse_build(config).map_err(SessionError::InvalidArgument)?;
    open_device(&kind, config).map_err(|e| SessionError::Device(e.to_string()))
}

impl Session {
    /// Loads `loadable` onto `dev`: parses and validates it, allocates its memory and
    /// writes its weights.
    pub fn load(mut dev: Box<dyn Device + Send>, loadable: Vec<u8>) -> Result<Self, SessionError> {
        let loaded = Loaded::try_new(loadable, |bytes| {
            Runtime::load(dev.as_mut(), bytes).map_err(|e| SessionError::Load(e.to_string()))
        })?;
        Ok(Session {
            dev,
            loaded,
            run_options: RunOptions::default(),
            last_seconds: 0.0,
            last_timings: None,
        })
    }

    /// Opens a device ([`open`]) and loads `loadable` on it.
    pub fn open(kind: &str, config: &str, loadable: Vec<u8>) -> Result<Self, SessionError> {
        Self::load(open(kind, config)?, loadable)
    }

    /// Waits at most `ms` milliseconds for each task of a run (`None`: forever).
    pub fn set_timeout(&mut self, ms: Option<u32>) {
        self.run_options.timeout = ms.map_or(Timeout::Never, Timeout::Millis);
    }

    /// Has the device estimate (the model) or measure (the RTL) cycles per operation;
    /// [`Session::timings`] returns them after each run.
    pub fn set_profiling(&mut self, on: bool) {
        self.dev.set_profiling(on);
    }

    fn rt(&self) -> &Runtime<'_> {
        self.loaded.borrow_dependent()
    }

    fn dir_count(&self, dir: Direction) -> usize {
        self.rt().tensor_count(dir)
    }

    /// Number of inputs.
    pub fn input_count(&self) -> usize {
        self.dir_count(Direction::Input)
    }

    /// Number of outputs.
    pub fn output_count(&self) -> usize {
        self.dir_count(Direction::Output)
    }

    fn desc(&self, dir: Direction, i: usize) -> Result<&TensorDesc, SessionError> {
        let n = self.dir_count(dir);
        if i >= n {
            return Err(SessionError::InvalidArgument(format!(
                "{dir:?} {i}: the network has {n}"
            )));
        }
        self.rt()
            .tensor(dir, i)
            .map_err(|e| SessionError::InvalidArgument(e.to_string()))
    }

    fn info(&self, dir: Direction, i: usize) -> Result<TensorInfo, SessionError> {
        let t = self.desc(dir, i)?;
        let d = t.dims;
        let dim = |v: i32| u32::try_from(v).unwrap_or(0);
        Ok(TensorInfo {
            name: t.name.clone(),
            shape: [dim(d.n), dim(d.c), dim(d.h), dim(d.w)],
            data_type: t.data_type,
            surface_bytes: t.size,
            scale: if t.data_type == DataType::HALF {
                None
            } else {
                self.rt().recorded_scale(dir, i)
            },
        })
    }

    /// Input `i`'s name, shape, type and scale.
    pub fn input(&self, i: usize) -> Result<TensorInfo, SessionError> {
        self.info(Direction::Input, i)
    }

    /// Output `i`'s name, shape, type and scale.
    pub fn output(&self, i: usize) -> Result<TensorInfo, SessionError> {
        self.info(Direction::Output, i)
    }

    /// Sets input `i` from an NCHW `f32` array of its shape. Integer inputs are quantized
    /// with `scale` (`real = q × scale`, rounded to even, saturated), or with the scale the
    /// compiler recorded when `scale` is `None`; fp16 inputs are rounded to even.
    pub fn set_input(
        &mut self,
        i: usize,
        values: &[f32],
        scale: Option<f32>,
    ) -> Result<(), SessionError> {
        let info = self.input(i)?;
        if values.len() != info.elements() {
            return Err(SessionError::InvalidArgument(format!(
                "input {i} '{}' has {} elements ({:?}), {} given",
                info.name,
                info.elements(),
                info.shape,
                values.len()
            )));
        }
        let scale = if info.data_type == DataType::HALF {
            None
        } else {
            scale.or(info.scale)
        };
        let shape = info.shape.iter().map(|&d| u64::from(d)).collect();
        let host = HostTensor::from_f32(shape, values)
            .map_err(|e| SessionError::InvalidArgument(e.to_string()))?;
        let t = self.desc(Direction::Input, i)?.clone();
        let data = tensor::host_to_input(&host, &t, scale)
            .map_err(|e| SessionError::InvalidArgument(e.to_string()))?;
        self.set_input_surface(i, &data)
    }

    /// Sets input `i` from an image file (JPEG or PGM) as `nvdla-runtime --image` does, with
    /// its `--normalize` and `--mean` in `opts`.
    pub fn set_input_image(
        &mut self,
        i: usize,
        path: &std::path::Path,
        opts: &crate::image::ImageOptions,
    ) -> Result<(), SessionError> {
        let img = crate::image::load_image(path)
            .map_err(|e| SessionError::InvalidArgument(format!("{}: {e}", path.display())))?;
        let t = self.desc(Direction::Input, i)?.clone();
        let data = crate::image::image_to_tensor(&img, &t, opts)
            .map_err(|e| SessionError::InvalidArgument(format!("{}: {e}", path.display())))?;
        self.set_input_surface(i, &data)
    }

    /// Sets input `i` from the bytes of its surface (the device layout, `surface_bytes`).
    pub fn set_input_surface(&mut self, i: usize, data: &[u8]) -> Result<(), SessionError> {
        self.desc(Direction::Input, i)?;
        let Session { dev, loaded, .. } = self;
        loaded
            .with_dependent_mut(|_, rt| rt.write_input(dev.as_mut(), i, data))
            .map_err(|e| SessionError::InvalidArgument(e.to_string()))
    }

    /// Runs every task of the network on the inputs last set.
    pub fn run(&mut self) -> Result<(), SessionError> {
        let Session {
            dev,
            loaded,
            run_options,
            ..
        } = self;
        let start = Instant::now();
        loaded
            .with_dependent_mut(|_, rt| rt.run(dev.as_mut(), run_options, &mut |_| {}))
            .map_err(|e| SessionError::Run(e.to_string()))?;
        self.last_seconds = start.elapsed().as_secs_f64();
        self.last_timings = self.dev.take_timings();
        Ok(())
    }

    /// Seconds the last [`Session::run`] took (wall time, on this thread).
    pub fn last_run_seconds(&self) -> f64 {
        self.last_seconds
    }

    /// The last run's per-operation cycles, when profiling is on or the device measures.
    pub fn timings(&self) -> Option<&DeviceTimings> {
        self.last_timings.as_ref()
    }

    /// The bytes of output `i`'s surface (the device layout).
    pub fn output_surface(&mut self, i: usize) -> Result<Vec<u8>, SessionError> {
        self.desc(Direction::Output, i)?;
        let Session { dev, loaded, .. } = self;
        loaded
            .borrow_dependent()
            .read_output(dev.as_mut(), i)
            .map_err(|e| SessionError::Run(e.to_string()))
    }

    /// Output `i` as an NCHW `f32` array: fp16 exactly, integers times `scale` (or the
    /// recorded scale when `None`; as they are when there is neither).
    pub fn output_values(
        &mut self,
        i: usize,
        scale: Option<f32>,
    ) -> Result<Vec<f32>, SessionError> {
        let info = self.output(i)?;
        let data = self.output_surface(i)?;
        let t = self.desc(Direction::Output, i)?;
        let scale = if info.data_type == DataType::HALF {
            None
        } else {
            scale.or(info.scale)
        };
        let host = tensor::output_to_host(t, &data, scale)
            .map_err(|e| SessionError::Run(e.to_string()))?;
        Ok(host.to_f32_vec())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let Session { dev, loaded, .. } = self;
        loaded.with_dependent_mut(|_, rt| rt.release(dev.as_mut()));
    }
}

#[cfg(all(test, feature = "vp"))]
mod tests {
    use super::*;

    fn shared() -> Option<std::path::PathBuf> {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared");
        p.is_dir().then_some(p)
    }

    #[test]
    fn errors_name_what_is_wrong() {
        assert!(matches!(
            open("nowhere", "nv_full"),
            Err(SessionError::InvalidArgument(_))
        ));
        assert!(matches!(
            open("vp", "nv_tiny"),
            Err(SessionError::InvalidArgument(_))
        ));
        let dev = open("vp", "nv_full").unwrap();
        let e = Session::load(dev, b"not a loadable".to_vec()).unwrap_err();
        assert!(matches!(e, SessionError::Load(_)), "{e}");
    }

    /// NVIDIA's nv_full LeNet loadable (fp16), loaded once: ten digit images give their
    /// ten classes (as `nvdla-runtime --image I --normalize 255` does), and a float array
    /// input is checked.
    #[test]
    fn one_session_runs_many_inputs() {
        let Some(root) = shared() else {
            eprintln!("skipped: ../shared not found");
            return;
        };
        let dir = root.join("third-party-loadables/lenet-mnist");
        let Ok(bytes) = std::fs::read(dir.join("lenet_nv_full_fp16_nhwc_fast-math.nvdla")) else {
            eprintln!("skipped: {} not found", dir.display());
            return;
        };
        let mut s = Session::open("vp", "nv_full", bytes).unwrap();
        assert_eq!((s.input_count(), s.output_count()), (1, 1));
        let info = s.input(0).unwrap();
        // An image input of four channels (NVIDIA's nhwc build).
        assert_eq!(info.shape, [1, 4, 28, 28]);
        assert!(s.set_input(0, &[0.0; 3], None).is_err());
        // Caffe's LeNet scales pixels by 1/256, which NVIDIA's build leaves to the user.
        let opts = crate::image::ImageOptions {
            normalize: 255,
            ..Default::default()
        };
        let mut first = Vec::new();
        for digit in 0..10 {
            let img = dir.join(format!("images/0_{digit}.jpg"));
            s.set_input_image(0, &img, &opts).unwrap();
            s.run().unwrap();
            let p = s.output_values(0, None).unwrap();
            let best = (0..p.len()).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap();
            assert_eq!(best, digit, "{}: {p:?}", img.display());
            first.push(p);
        }
        // The same input again gives the same bits: the device writes the weights only
        // once and reads back only what the hardware wrote, and nothing is left over.
        for digit in [3, 0, 9] {
            let img = dir.join(format!("images/0_{digit}.jpg"));
            s.set_input_image(0, &img, &opts).unwrap();
            s.run().unwrap();
            let p = s.output_values(0, None).unwrap();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&p), bits(&first[digit]), "digit {digit} again");
        }
        assert!(s.last_run_seconds() > 0.0);
        // Float arrays go through the same conversion as `--input`.
        s.set_input(0, &vec![0.5; info.elements()], None).unwrap();
        s.run().unwrap();
        assert_eq!(s.output_values(0, None).unwrap().len(), 10);
    }
}
