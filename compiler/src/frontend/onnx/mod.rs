//! ONNX front end: a `.onnx` model (binary protobuf `ModelProto`) to an
//! [`ir::Graph`](crate::ir::Graph).
//!
//! The model is decoded with hand-written [`prost`] messages ([`proto`]); the graph's
//! nodes, in their (topological) order, become IR nodes. Default-domain opsets 6 to 25 are
//! read (versions after 21 only widened the element types of the operators mapped here;
//! version 6's legacy `broadcast`/`axis` attributes and `is_test` flags are honoured);
//! attributes that became inputs over the versions (`Reshape` shape, `Clip` min/max, `Pad`
//! pads, `Squeeze`/`Unsqueeze` axes, `Split` split, `Upsample`/`Resize` scales, `Slice`
//! starts/ends) are read in the form the model's opset uses.
//!
//! **Values.** Initializers (including graph inputs that have one, as older exporters
//! write weights) and `Constant` nodes are constants; nodes whose inputs are all constant
//! and that compute shapes (`Shape`, `Gather`, `Unsqueeze`, `Concat`, `Cast`, `Slice`,
//! `ConstantOfShape`, arithmetic, `Transpose` of weights, ...) are folded, so PyTorch's
//! shape computations in front of `Reshape`/`Flatten` disappear. Every other graph input
//! is a network input; its element type must be FLOAT or FLOAT16 and its shape fixed, by the model or
//! by [`Options::input_shapes`] (`--input-shape name=1x3x224x224`).
//!
//! **Shapes.** IR tensors are NCHW; an ONNX value of rank 2 `[N, K]` is `N x K x 1 x 1`,
//! rank 3 `[N, C, L]` is `N x C x L x 1` (1-D convolution and pooling run as `L x 1`
//! windows). Layout-only ops emit no node: their result is the same IR tensor with new
//! ONNX dimensions (both row-major over the same elements); an op that needs the channel
//! layout gets it, through an IR `Flatten` when that is the difference, or an error.
//!
//! **Operators** (to IR operations, exact up to `f32` rounding):
//!
//! | ONNX | IR |
//! | --- | --- |
//! | Conv (group, dilations, pads, auto_pad, strides; a zero `Pad` before it folded in) | Conv |
//! | ConvTranspose (output_padding, output_shape, auto_pad) | Deconv |
//! | MaxPool, AveragePool (pads, auto_pad, ceil_mode, count_include_pad), GlobalAveragePool, GlobalMaxPool | Pool |
//! | Relu, LeakyRelu, PRelu (scalar or per-channel slope), Sigmoid, Tanh, Clip | Activation (Clip with min 0 and no max is ReLU) |
//! | Add/Sub/Mul/Div with a scalar or per-channel constant, Neg, BatchNormalization | ChannelAffine |
//! | Add/Sub/Mul, Sum, Mean, Max of same-shape tensors; Min as `-max(-a, -b)` | Eltwise (+ ChannelAffine) |
//! | Gemm (alpha, beta, transB; transA of a vector), MatMul by a constant | FullyConnected |
//! | Softmax over the channel layout (opset < 13: axis 1 flattened; 13+: the axis) | Softmax (+ Flatten) |
//! | Concat along channels, LRN (odd size) | Concat, Lrn |
//! | Upsample/Resize nearest by integer factors | Deconv (depthwise, ones) |
//! | Split/Slice of channels | Conv 1x1 with a 0/1 selection (exact for finite values) |
//! | Slice of lines and columns, evenly stepped (YOLOv5's Focus, crops) | Crop (+ Conv for channels) |
//! | Transpose moving only axes of size 1 / permuting the axes that make up the channels (ShuffleNet's channel shuffle) | alias / Conv 1x1 with a permutation |
//! | ReduceMean/ReduceMax/ReduceSum over all the pixels; ReduceMean/ReduceSum over the channels | Pool (global; + Power for a sum) / Conv 1x1 to one channel |
//! | DepthToSpace (DCR, CRD), SpaceToDepth | Deconv / Conv by the block with 0/1 weights |
//! | a constant Pad no window folds | depthwise Conv 1x1 of ones with the padding |
//! | Exp, Log, Sqrt, Abs, Elu, Pow by a scalar, ... (`cpu_fallback` only) | CpuUnary |
//! | Max/Min with a scalar constant | Activation Clip |
//! | Pad (constant 0 before Conv/AveragePool, -inf before MaxPool) | the window's padding |
//! | Flatten, Reshape, Squeeze, Unsqueeze, Identity, Dropout | layout only / alias |
//!
//! Not expressible in the IR, refused with the reason: layout changes other than
//! flattening (a Transpose between channels and pixels, a Reshape that a later channel op
//! cannot read), slices of the batch or with negative steps, broadcasting
//! other than scalar/per-channel, division by a computed tensor, pooling dilation, 3-D
//! windows, softmax over a non-channel layout, non-constant padding (a constant Pad that
//! no window folds becomes a padding convolution),
//! linear/cubic resizing, concatenation off the channel axis, other reductions and other
//! element-wise functions (Exp, Sqrt, Elu, ...; with [`Options::cpu_fallback`] these
//! become IR `CpuUnary` nodes, run by the runtime on the CPU), network inputs other than FLOAT and FLOAT16,
//! training-mode BatchNormalization/Dropout and their extra outputs, MaxPool's indices.
//!
//! Errors are [`CompileError::Layer`] naming the node (`<op>#<index>` when unnamed), its
//! operator and the reason, or [`CompileError::Parse`] for bytes that are not a
//! `ModelProto`; nothing here panics on bad input (see the `onnx` fuzz target).

mod build;
mod external;
mod fold;
mod ops;
mod partition;
pub mod proto;
mod tensor;

use super::ModelFiles;
use crate::error::{CompileError, Result};
use crate::ir::Graph;
pub use tensor::float_values;

/// What the model file does not say.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Shapes of network inputs by name (`--input-shape`): they replace the declared
    /// shape, which must have the same rank; needed where a dimension is symbolic.
    pub input_shapes: Vec<(String, Vec<usize>)>,
    /// Graph inputs given constant values (by `TensorProto::name`), as if they were
    /// initializers (tests of the ONNX backend suite feed weights as inputs).
    pub constants: Vec<proto::TensorProto>,
    /// Network inputs given fixed values by name (`--input-value`): constants of the
    /// input's declared type and shape (a sample rate that selects an `If` branch).
    pub input_values: Vec<(String, Vec<f64>)>,
    /// Map the operators the hardware cannot compute but the CPU fallback can
    /// (`--cpu-fallback`; see [`crate::Options::cpu_fallback`]).
    pub cpu_fallback: bool,
    /// The build compiled for: with `cpu_fallback`, nodes its engines cannot take
    /// ([`crate::capability`]) go to the CPU too.
    pub target: Option<crate::target::Target>,
}

/// Loads the model of `files` (which must be [`ModelFiles::Onnx`]).
pub fn load_files(files: &ModelFiles) -> Result<Graph> {
    let ModelFiles::Onnx {
        model,
        input_shapes,
        cpu_fallback,
        target,
    } = files
    else {
        return Err(CompileError::Option(
            "the ONNX front end reads ONNX models only".into(),
        ));
    };
    let bytes = std::fs::read(model).map_err(|source| CompileError::Io {
        path: model.clone(),
        source,
    })?;
    let opts = Options {
        input_shapes: input_shapes.clone(),
        constants: Vec::new(),
        input_values: Vec::new(),
        cpu_fallback: *cpu_fallback,
        target: *target,
    };
    let mut g = load_labeled(&bytes, &model.display().to_string(), &opts)?;
    if g.name.is_empty() {
        if let Some(stem) = model.file_stem() {
            g.name = stem.to_string_lossy().into_owned();
        }
    }
    Ok(g)
}

/// Loads a model from its bytes.
pub fn load(bytes: &[u8], opts: &Options) -> Result<Graph> {
    load_labeled(bytes, "model", opts)
}

/// Decodes a model file (encoding only).
pub fn decode(bytes: &[u8], file: &str) -> Result<proto::ModelProto> {
    proto::decode(bytes).map_err(|e| CompileError::Parse {
        file: file.to_string(),
        reason: format!("not an ONNX ModelProto: {e}"),
    })
}

/// The default-domain opset a model imports.
pub fn opset(model: &proto::ModelProto) -> Result<i64> {
    let v = model
        .opset_import
        .iter()
        .filter(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version)
        .max()
        .ok_or_else(|| {
            CompileError::Network(
                "the model imports no version of the default ONNX operator set".into(),
            )
        })?;
    if !build::OPSETS.contains(&v) {
        return Err(CompileError::Network(format!(
            "opset {v} is not supported (versions {} to {})",
            build::OPSETS.start(),
            build::OPSETS.end()
        )));
    }
    Ok(v)
}

/// Builds the graph of a decoded model.
pub fn build(model: &proto::ModelProto, opts: &Options) -> Result<Graph> {
    let opset = opset(model)?;
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| CompileError::Network("the model has no graph".into()))?;
    let g = build::build(graph, opset, opts)?;
    g.check().map_err(CompileError::Network)?;
    Ok(g)
}

/// [`load`], naming the model `file` in errors.
/// Tensors kept in a separate file (external data) are read from beside `file` when it
/// is the model's path.
pub fn load_labeled(bytes: &[u8], file: &str, opts: &Options) -> Result<Graph> {
    let mut model = decode(bytes, file)?;
    external::resolve(&mut model, file)?;
    build(&model, opts)
}
