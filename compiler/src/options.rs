//! The one way into the compiler: [`Options`], which the command line, the C API and the
//! Python package fill, and [`compile`] (a model's bytes) or [`crate::compile_graph`] (a
//! graph some front end already built).

use crate::calibrate;
use crate::error::{CompileError, Result};
use crate::frontend::{caffe, onnx};
use crate::ir::Graph;
use crate::preprocess::{self, Preprocess};
use crate::quant::{Calibration, RangeMethod};
use crate::target::{Precision, Target};
use crate::Compiled;
use std::path::PathBuf;

/// Where an int8 build's per-tensor scales come from.
#[derive(Debug, Clone, Default)]
pub enum Calibrate {
    /// None (fp16; an int8 build refuses to compile).
    #[default]
    None,
    /// Scales computed by the caller (for the graph being compiled).
    Given(Calibration),
    /// A calibration table's text: NVIDIA's JSON or a TensorRT cache (`--calibtable`);
    /// `label` names it in errors.
    Table {
        /// The file's contents.
        text: String,
        /// What to call it in messages (its path).
        label: String,
    },
    /// Sample files, images (`.jpg`, `.pgm`) or input tensors (`.npy`, `.pb`), run through
    /// the fp32 reference (`--calibrate DIR`; [`calibrate::from_images`]).
    Samples(Vec<PathBuf>),
    /// Sample values of the network's first input (NCHW `f32`, one array per sample): the
    /// C API's and Python's calibration.
    Arrays(Vec<Vec<f32>>),
    /// Sample values of every input by name (NCHW `f32`, one list of arrays per sample):
    /// Python's calibration of a network of several inputs.
    NamedArrays(Vec<Vec<(String, Vec<f32>)>>),
}

/// Everything a compilation takes besides the model.
#[derive(Debug, Clone)]
pub struct Options {
    /// Hardware build and precision.
    pub target: Target,
    /// Operators the hardware cannot run become CPU operations of the runtime instead of
    /// errors (`--cpu-fallback`); the loadable then declares the fallback interface
    /// ([`crate::emit::EMU1_FALLBACK_VERSION`]).
    pub cpu_fallback: bool,
    /// Every activation keeps its own memory, so each layer's output can be read after a
    /// run (the per-layer comparison, [`crate::compare`]).
    pub keep_activations: bool,
    /// ONNX: shapes of network inputs by name, fixing symbolic dimensions.
    pub input_shapes: Vec<(String, Vec<usize>)>,
    /// ONNX: network inputs given fixed values by name (`--input-value`): they become
    /// constants of the input's declared type and shape, and fold (an `If` on a sample
    /// rate takes its branch).
    pub input_values: Vec<(String, Vec<f64>)>,
    /// Preprocessing compiled into the network (`--mean`, `--scale`, `--channel-order`).
    pub preprocess: Preprocess,
    /// int8 scales.
    pub calibration: Calibrate,
    /// How sample values become a range.
    pub calib_method: RangeMethod,
    /// Image samples and inputs mean `pixel / normalize` (`--normalize`).
    pub normalize: f32,
    /// The scale of an int8 network input the calibration does not cover; `None`: what
    /// the runtime's image conversion implies, `255 / (127 · normalize)`.
    pub input_scale: Option<f32>,
    /// One weight scale per output channel (`--quantizationMode per-filter`) instead of
    /// one per layer.
    pub per_filter: bool,
    /// int8 activations calibrated channel by channel (`--activation-scales
    /// per-channel`, the default; a calibration table has one scale per tensor only):
    /// an activation whose producer is an SDP and whose readers are
    /// convolutions (any groups), fully connected layers or SDP operations reading it as
    /// their input or as a product's operand gets a scale per channel, folded into the
    /// readers' weights and units. Networks whose channels span very different ranges
    /// (folded batch-norms of depthwise blocks, hard-swish) keep their small channels.
    pub channel_scales: bool,
    /// 3x3 stride-1 convolutions in Winograd mode (F(2x2, 3x3)) where the build has it
    /// (`--winograd`, part of `-O`): 2.25x fewer multiplies, outputs within the
    /// precision's tolerance of direct convolution rather than equal to it.
    pub winograd: bool,
    /// A network input whose one reader is a convolution of at most 4 channels becomes
    /// a pitch-linear image read in image mode (`--image-input`, part of `-O`;
    /// [`crate::lower::image`]): the loadable's input is `A8B8G8R8` (int8) or
    /// `A16B16G16R16_F` (fp16), which the runtime fills from the same arrays and images.
    pub image_input: bool,
    /// Bytes of on-chip CV-SRAM the activations may use (`--cvsram SIZE`; 0, the
    /// default: none). Builds with a secondary memory interface (nv_full) only; what fits
    /// for its lifetime is read and written through CVIF instead of DRAM
    /// ([`crate::plan`]). The loadable then needs a device that allocates CV-SRAM (the
    /// built-in virtual platform).
    pub cvsram: u64,
    /// Convolution weights sparse-compressed where the build has it (nv_full) and it
    /// saves a quarter of their bytes or more (`--compress-weights`, part of `-O`;
    /// [`crate::compress`]): the same results from less weight memory and traffic.
    pub compress_weights: bool,
    /// Poolings taken from their convolution's SDP on the fly where the PDP can
    /// (`--fused-pooling`, part of `-O`; [`crate::fly`]): the convolution's result never
    /// goes to memory. Same results, less traffic, the pooling beside the convolution.
    pub fused_pooling: bool,
}

impl Options {
    /// Every optimization for cycles on the accelerator (`-O`) that keeps the precision's
    /// accuracy: image-mode input, Winograd convolution in fp16, compressed weights
    /// where the build has them, and poolings fused to their convolutions. int8 Winograd (only
    /// with [`Options::winograd`] set explicitly) loses two bits of each input tile
    /// (`PRA_TRUNCATE`): ResNet-50's output cosine to fp32 falls from 0.982 to 0.978,
    /// GoogLeNet's from 0.965 to 0.948 (docs/compiler.md, "Winograd").
    pub fn optimize(&mut self) {
        self.winograd = self.target.precision == Precision::Fp16;
        self.image_input = true;
        self.compress_weights = true;
        self.fused_pooling = true;
    }

    /// The defaults of the command line for `target`: no calibration, per-kernel weight
    /// scales, activations calibrated per channel, no preprocessing, `normalize` 1.
    pub fn new(target: Target) -> Self {
        Self {
            target,
            cpu_fallback: false,
            keep_activations: false,
            input_shapes: Vec::new(),
            input_values: Vec::new(),
            preprocess: Preprocess::default(),
            calibration: Calibrate::None,
            calib_method: RangeMethod::Percentile(99.99),
            normalize: 1.0,
            input_scale: None,
            per_filter: false,
            channel_scales: true,
            winograd: false,
            image_input: false,
            cvsram: 0,
            compress_weights: false,
            fused_pooling: false,
        }
    }

    /// Options for `target` with the scales, weight-scale mode and input scale of `quant`
    /// (for callers that computed their own calibration).
    pub fn with_quant(target: Target, quant: &crate::lower::Quant<'_>) -> Self {
        Self {
            calibration: quant
                .cal
                .map_or(Calibrate::None, |c| Calibrate::Given(c.clone())),
            per_filter: quant.per_filter,
            input_scale: Some(quant.input_scale),
            ..Self::new(target)
        }
    }

    /// Options for `config` (a build's name) and `precision` (`fp16`, `int8`).
    pub fn for_build(config: &str, precision: &str) -> Result<Self> {
        let hw = crate::target::build_by_name(config, "configuration")?;
        let precision = crate::target::precision_by_name(precision, "precision")?;
        Ok(Self::new(Target::new(hw, precision)?))
    }

    /// The scale of an uncovered int8 input ([`Options::input_scale`]).
    pub fn effective_input_scale(&self) -> f32 {
        self.input_scale.unwrap_or(255.0 / (127.0 * self.normalize))
    }

    /// Checks what does not depend on the model.
    pub fn check(&self) -> Result<()> {
        if !(self.normalize.is_finite() && self.normalize > 0.0) {
            return Err(CompileError::Option(format!(
                "normalize {} must be positive",
                self.normalize
            )));
        }
        if self.cvsram > 0 && !self.target.hw.features.cvif {
            return Err(CompileError::Option(format!(
                "--cvsram: {} has no secondary memory interface (CV-SRAM)",
                self.target.hw.name
            )));
        }
        if self.target.precision == Precision::Int8 && matches!(self.calibration, Calibrate::None) {
            return Err(CompileError::Option(
                "int8 needs a calibration (--calibtable FILE or --calibrate DIR)".into(),
            ));
        }
        Ok(())
    }

    /// The scales for `graph` from [`Options::calibration`] (`None` without one).
    /// `progress` hears about long calibrations (`calibrating: i/n samples`).
    pub fn calibrate(
        &self,
        graph: &Graph,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Option<Calibration>> {
        let mut samples_done = |i: usize, n: usize| {
            if i == n || i.is_multiple_of(10) {
                progress(&format!("calibrating: {i}/{n} samples"));
            }
        };
        Ok(match &self.calibration {
            Calibrate::None => None,
            Calibrate::Given(c) => Some(c.clone()),
            Calibrate::Table { text, label } => {
                let cal = if text.trim_start().starts_with("TRT-") {
                    Calibration::from_trt_cache(graph, text)
                } else {
                    Calibration::from_json(graph, text)
                }
                .map_err(|e| match e {
                    CompileError::Parse { reason, .. } => CompileError::Parse {
                        file: label.clone(),
                        reason,
                    },
                    e => e,
                })?;
                progress(&format!(
                    "calibration table {label}: {} tensors",
                    cal.scales.len()
                ));
                Some(cal)
            }
            Calibrate::Samples(files) => Some(calibrate::from_images(
                graph,
                files,
                self.normalize,
                self.calib_method,
                self.channel_scales,
                &mut samples_done,
            )?),
            Calibrate::Arrays(samples) => Some(calibrate::from_arrays(
                graph,
                samples,
                self.calib_method,
                self.channel_scales,
                &mut samples_done,
            )?),
            Calibrate::NamedArrays(samples) => Some(calibrate::from_named_arrays(
                graph,
                samples,
                self.calib_method,
                self.channel_scales,
                &mut samples_done,
            )?),
        })
    }
}

/// A model to compile, as bytes.
#[derive(Debug, Clone)]
pub enum Model {
    /// An ONNX `ModelProto`.
    Onnx {
        /// The file's bytes.
        bytes: Vec<u8>,
        /// Its name in messages (a path), and the network's name when it has none.
        label: String,
    },
    /// A Caffe network.
    Caffe {
        /// The network definition (protobuf text).
        prototxt: String,
        /// The trained weights (binary protobuf).
        caffemodel: Vec<u8>,
    },
}

impl Model {
    /// Reads an ONNX file.
    pub fn onnx_file(path: &std::path::Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|source| CompileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Model::Onnx {
            bytes,
            label: path.display().to_string(),
        })
    }

    /// Reads a Caffe network's two files.
    pub fn caffe_files(prototxt: &std::path::Path, caffemodel: &std::path::Path) -> Result<Self> {
        let read = |p: &std::path::Path| {
            std::fs::read(p).map_err(|source| CompileError::Io {
                path: p.to_path_buf(),
                source,
            })
        };
        let text = String::from_utf8(read(prototxt)?).map_err(|e| CompileError::Parse {
            file: prototxt.display().to_string(),
            reason: format!("not UTF-8 text: {e}"),
        })?;
        Ok(Model::Caffe {
            prototxt: text,
            caffemodel: read(caffemodel)?,
        })
    }

    /// The network, through its front end, with `opts`' input shapes and CPU fallback,
    /// and its preprocessing applied.
    pub fn graph(&self, opts: &Options) -> Result<Graph> {
        let mut g = match self {
            Model::Onnx { bytes, label } => {
                let o = onnx::Options {
                    input_shapes: opts.input_shapes.clone(),
                    constants: Vec::new(),
                    input_values: opts.input_values.clone(),
                    cpu_fallback: opts.cpu_fallback,
                    target: Some(opts.target),
                };
                let mut g = onnx::load_labeled(bytes, label, &o)?;
                if g.name.is_empty() {
                    if let Some(stem) = std::path::Path::new(label).file_stem() {
                        g.name = stem.to_string_lossy().into_owned();
                    }
                }
                g
            }
            Model::Caffe {
                prototxt,
                caffemodel,
            } => {
                if !opts.input_shapes.is_empty() {
                    return Err(CompileError::Option(
                        "input shapes apply to ONNX models".into(),
                    ));
                }
                caffe::load(prototxt, caffemodel)?
            }
        };
        preprocess::apply(&mut g, &opts.preprocess)?;
        Ok(g)
    }
}

/// Compiles `model` with `opts`: front end, preprocessing, calibration, compilation.
/// `progress` hears what takes time (the command line prints it; libraries may ignore it).
pub fn compile(model: &Model, opts: &Options, progress: &mut dyn FnMut(&str)) -> Result<Compiled> {
    opts.check()?;
    let graph = model.graph(opts)?;
    for note in &graph.notes {
        progress(&format!("note: {note}"));
    }
    progress(&format!(
        "compiling {} layers for {} {}",
        graph.nodes.len(),
        opts.target.hw.name,
        match opts.target.precision {
            Precision::Fp16 => "fp16",
            Precision::Int8 => "int8",
        }
    ));
    let cal = opts.calibrate(&graph, progress)?;
    crate::compile_calibrated(graph, opts, cal)
}
