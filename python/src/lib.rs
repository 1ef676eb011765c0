//! The `nvdla` Python package's extension module (`nvdla._nvdla`): the compiler
//! ([`nvdla_compiler::compile`] with [`nvdla_compiler::Options`]) and sessions
//! ([`nvdla_umd::session::Session`]), with numpy arrays in and out. `python/nvdla/__init__.py`
//! builds ONNX Runtime's `InferenceSession` interface on top.
//!
//! The GIL is released while a model compiles and while a session runs.

use numpy::{PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use nvdla_compiler::{Calibrate, Model, Options};
use nvdla_umd::session::{Session, SessionError, TensorInfo};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(
    _nvdla,
    NvdlaError,
    PyException,
    "An error of the NVDLA stack."
);
create_exception!(
    _nvdla,
    CompileError,
    NvdlaError,
    "The compiler refused the model or an option."
);
create_exception!(
    _nvdla,
    DeviceError,
    NvdlaError,
    "The device could not be opened."
);
create_exception!(
    _nvdla,
    LoadError,
    NvdlaError,
    "The loadable was refused or could not be loaded."
);
create_exception!(
    _nvdla,
    RunError,
    NvdlaError,
    "A run failed (a task, a timeout, the hardware)."
);

fn session_err(e: SessionError) -> PyErr {
    let msg = e.to_string();
    match e {
        SessionError::InvalidArgument(_) => pyo3::exceptions::PyValueError::new_err(msg),
        SessionError::Device(_) => DeviceError::new_err(msg),
        SessionError::Load(_) => LoadError::new_err(msg),
        SessionError::Run(_) => RunError::new_err(msg),
    }
}

/// Compiles a model into a loadable (bytes).
///
/// `model`: ONNX bytes, or `(prototxt_text, caffemodel_bytes)`. `calibration`: for int8,
/// a list of float32 arrays of the first input (NCHW), or a calibration table's text.
/// `input_shapes`: `[(name, dims)]` fixing an ONNX model's symbolic input dimensions.
/// `input_values`: `[(name, values)]` binding ONNX inputs to constants (`--input-value`).
#[pyfunction]
#[pyo3(signature = (model, config="nv_full", precision="fp16", calibration=None, cpu_fallback=false, per_filter=false, label="model", input_shapes=None, optimize=false, activation_scales="per-channel", cvsram=0, input_values=None))]
#[allow(clippy::too_many_arguments)]
fn compile<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    config: &str,
    precision: &str,
    calibration: Option<&Bound<'py, PyAny>>,
    cpu_fallback: bool,
    per_filter: bool,
    label: &str,
    input_shapes: Option<Vec<(String, Vec<usize>)>>,
    optimize: bool,
    activation_scales: &str,
    cvsram: u64,
    input_values: Option<Vec<(String, Vec<f64>)>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let model = if let Ok(b) = model.extract::<Vec<u8>>() {
        Model::Onnx {
            bytes: b,
            label: label.to_string(),
        }
    } else if let Ok((prototxt, caffemodel)) = model.extract::<(String, Vec<u8>)>() {
        Model::Caffe {
            prototxt,
            caffemodel,
        }
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "model: ONNX bytes, or (prototxt text, caffemodel bytes)",
        ));
    };
    let mut opts = Options::for_build(config, precision)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    opts.cpu_fallback = cpu_fallback;
    opts.per_filter = per_filter;
    opts.channel_scales = match activation_scales {
        "per-tensor" => false,
        "per-channel" => true,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "activation_scales: `{other}` is neither `per-tensor` nor `per-channel`"
            )))
        }
    };
    if optimize {
        opts.optimize();
    }
    opts.cvsram = cvsram;
    opts.input_shapes = input_shapes.unwrap_or_default();
    opts.input_values = input_values.unwrap_or_default();
    if let Some(c) = calibration {
        opts.calibration = if let Ok(text) = c.extract::<String>() {
            Calibrate::Table {
                text,
                label: "calibration table".into(),
            }
        } else {
            let kind_err = || {
                pyo3::exceptions::PyTypeError::new_err(
                    "calibration: an iterable of float32 numpy arrays (the first input) or of \
                     dicts of them by input name, or a table's text",
                )
            };
            let values = |a: &Bound<'py, PyAny>| -> PyResult<Vec<f32>> {
                let a: PyReadonlyArrayDyn<'py, f32> = a.extract().map_err(|_| kind_err())?;
                Ok(a.as_array().iter().copied().collect())
            };
            let (mut samples, mut named) = (Vec::new(), Vec::new());
            for item in c.try_iter()? {
                let item = item?;
                if let Ok(d) = item.downcast::<PyDict>() {
                    let mut sample = Vec::new();
                    for (k, v) in d.iter() {
                        sample.push((k.extract::<String>().map_err(|_| kind_err())?, values(&v)?));
                    }
                    named.push(sample);
                } else {
                    samples.push(values(&item)?);
                }
            }
            match (samples.is_empty(), named.is_empty()) {
                (_, true) => Calibrate::Arrays(samples),
                (true, false) => Calibrate::NamedArrays(named),
                (false, false) => {
                    return Err(pyo3::exceptions::PyTypeError::new_err(
                        "calibration: arrays and dicts of arrays mixed",
                    ))
                }
            }
        };
    }
    let compiled = py
        .allow_threads(|| nvdla_compiler::compile(&model, &opts, &mut |_| {}))
        .map_err(|e| CompileError::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &compiled.loadable))
}

fn info_dict<'py>(py: Python<'py>, t: &TensorInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &t.name)?;
    d.set_item("shape", t.shape.to_vec())?;
    d.set_item("type", t.data_type.to_string())?;
    d.set_item("scale", t.scale)?;
    d.set_item("surface_bytes", t.surface_bytes)?;
    Ok(d)
}

/// A device with one loaded network.
#[pyclass(module = "nvdla._nvdla")]
struct NativeSession {
    // A pyclass is shared between threads; a session is used by one at a time.
    inner: std::sync::Mutex<Option<Session>>,
}

impl NativeSession {
    fn with<T>(&self, f: impl FnOnce(&mut Session) -> PyResult<T>) -> PyResult<T> {
        let mut g = self
            .inner
            .lock()
            .map_err(|_| NvdlaError::new_err("the session was poisoned by an earlier panic"))?;
        let s = g
            .as_mut()
            .ok_or_else(|| NvdlaError::new_err("the session is closed"))?;
        f(s)
    }
}

#[pymethods]
impl NativeSession {
    /// Opens `device` for `config` and loads the loadable's bytes.
    #[new]
    #[pyo3(signature = (loadable, device="vp", config="nv_full"))]
    fn new(py: Python<'_>, loadable: Vec<u8>, device: &str, config: &str) -> PyResult<Self> {
        let s = py
            .allow_threads(|| Session::open(device, config, loadable))
            .map_err(session_err)?;
        Ok(Self {
            inner: std::sync::Mutex::new(Some(s)),
        })
    }

    fn inputs<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.with(|s| {
            (0..s.input_count())
                .map(|i| info_dict(py, &s.input(i).map_err(session_err)?))
                .collect()
        })
    }

    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.with(|s| {
            (0..s.output_count())
                .map(|i| info_dict(py, &s.output(i).map_err(session_err)?))
                .collect()
        })
    }

    /// Sets input `index` from a float32 array of its shape (int8 inputs quantized with
    /// `scale`, or the compiler's recorded scale).
    #[pyo3(signature = (index, array, scale=None))]
    fn set_input(
        &self,
        index: usize,
        array: PyReadonlyArrayDyn<'_, f32>,
        scale: Option<f32>,
    ) -> PyResult<()> {
        self.with(|s| {
            let info = s.input(index).map_err(session_err)?;
            let want: Vec<usize> = info.shape.iter().map(|&d| d as usize).collect();
            if array.shape() != want.as_slice() && array.len() != info.elements() {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "input {index} '{}' has shape {:?}, the array {:?}",
                    info.name,
                    info.shape,
                    array.shape()
                )));
            }
            let v: Vec<f32> = array.as_array().iter().copied().collect();
            s.set_input(index, &v, scale).map_err(session_err)
        })
    }

    /// Sets input `index` from an image file as `nvdla-runtime --image` does.
    #[pyo3(signature = (index, path, normalize=1))]
    fn set_input_image(&self, index: usize, path: &str, normalize: u8) -> PyResult<()> {
        let opts = nvdla_umd::image::ImageOptions {
            normalize: normalize.max(1),
            ..Default::default()
        };
        self.with(|s| {
            s.set_input_image(index, std::path::Path::new(path), &opts)
                .map_err(session_err)
        })
    }

    /// Runs the network (the GIL is released meanwhile).
    fn run(&self, py: Python<'_>) -> PyResult<()> {
        self.with(|s| py.allow_threads(|| s.run()).map_err(session_err))
    }

    /// Output `index` as a float32 array of its shape.
    #[pyo3(signature = (index, scale=None))]
    fn output<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        scale: Option<f32>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
        let (v, shape) = self.with(|s| {
            let info = s.output(index).map_err(session_err)?;
            let v = s.output_values(index, scale).map_err(session_err)?;
            let shape: Vec<usize> = info.shape.iter().map(|&d| d as usize).collect();
            Ok((v, shape))
        })?;
        numpy::PyArray1::from_vec(py, v).reshape(shape)
    }

    fn set_profiling(&self, on: bool) -> PyResult<()> {
        self.with(|s| {
            s.set_profiling(on);
            Ok(())
        })
    }

    fn set_timeout(&self, ms: Option<u32>) -> PyResult<()> {
        self.with(|s| {
            s.set_timeout(ms);
            Ok(())
        })
    }

    fn last_run_seconds(&self) -> PyResult<f64> {
        self.with(|s| Ok(s.last_run_seconds()))
    }

    /// The last run's operations (with profiling on): a list of dicts.
    fn profile<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.with(|s| {
            let Some(t) = s.timings() else {
                return Ok(Vec::new());
            };
            t.ops
                .iter()
                .map(|op| {
                    let d = PyDict::new(py);
                    d.set_item("engine", op.engine)?;
                    d.set_item("group", op.group)?;
                    d.set_item("enabled", op.enabled)?;
                    d.set_item("done", op.done)?;
                    d.set_item("modelled", t.modelled)?;
                    if let Some(c) = &op.cost {
                        d.set_item("shape", &c.shape)?;
                        d.set_item("macs", c.macs)?;
                        d.set_item("start", c.start)?;
                        d.set_item("end", c.end)?;
                        d.set_item("dram_bytes", c.dram_bytes)?;
                        d.set_item("cvsram_bytes", c.sram_bytes)?;
                        d.set_item("pole", c.pole)?;
                    }
                    Ok(d)
                })
                .collect()
        })
    }

    /// Releases the device memory; the session cannot be used afterwards.
    fn close(&self) {
        if let Ok(mut g) = self.inner.lock() {
            *g = None;
        }
    }
}

#[pymodule]
fn _nvdla(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_class::<NativeSession>()?;
    let py = m.py();
    m.add("NvdlaError", py.get_type::<NvdlaError>())?;
    m.add("CompileError", py.get_type::<CompileError>())?;
    m.add("DeviceError", py.get_type::<DeviceError>())?;
    m.add("LoadError", py.get_type::<LoadError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    Ok(())
}
