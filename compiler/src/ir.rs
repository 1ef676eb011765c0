//! The network IR: what every front end produces and every pass reads.
//!
//! A [`Graph`] is data, not a class hierarchy: tensors and nodes in `Vec`s, referred to by
//! index ([`TensorId`], [`NodeId`]). Activations are 4-D NCHW ([`Shape`]); fully connected
//! outputs are `N x K x 1 x 1`. Weights live in the node's [`Op`] as owned [`Weights`], so
//! that folding passes (batch-norm into convolution, ...) rewrite one value.
//!
//! Nodes are kept in a topological order: a node's inputs are graph inputs or outputs of
//! earlier nodes. Front ends establish it and passes preserve it ([`Graph::check`]).

use std::fmt;

/// Index of a tensor in [`Graph::tensors`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TensorId(pub usize);

/// Index of a node in [`Graph::nodes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub usize);

/// An NCHW activation shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Shape {
    /// Batch.
    pub n: usize,
    /// Channels.
    pub c: usize,
    /// Height.
    pub h: usize,
    /// Width.
    pub w: usize,
}

impl Shape {
    /// `n x c x h x w`.
    pub const fn new(n: usize, c: usize, h: usize, w: usize) -> Self {
        Self { n, c, h, w }
    }
    /// Number of elements.
    pub fn elements(&self) -> usize {
        self.n * self.c * self.h * self.w
    }
    /// Elements of one batch item.
    pub fn per_item(&self) -> usize {
        self.c * self.h * self.w
    }
    /// Whether this is a per-channel vector of `full` (`N x C x 1 x 1` of its `N` and
    /// `C`, and not `full` itself), which an element-wise node broadcasts over `full`'s
    /// pixels.
    pub fn is_channel_vector_of(&self, full: Shape) -> bool {
        *self != full && self.n == full.n && self.c == full.c && self.h == 1 && self.w == 1
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}x{}", self.n, self.c, self.h, self.w)
    }
}

/// A constant array (weights, biases, statistics), row-major in the order its op documents.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Weights {
    /// Dimensions, outermost first.
    pub dims: Vec<usize>,
    /// `dims.iter().product()` values.
    pub data: Vec<f32>,
}

impl Weights {
    /// A constant of the given dimensions; `None` if `data` has the wrong length.
    pub fn new(dims: Vec<usize>, data: Vec<f32>) -> Option<Self> {
        (dims.iter().product::<usize>() == data.len()).then_some(Self { dims, data })
    }
    /// A 1-D constant.
    pub fn vector(data: Vec<f32>) -> Self {
        Self {
            dims: vec![data.len()],
            data,
        }
    }
    /// Number of values.
    pub fn len(&self) -> usize {
        self.data.len()
    }
    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// Spatial window parameters shared by convolution and pooling: `[height, width]` pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Window {
    /// Kernel `[h, w]`.
    pub kernel: [usize; 2],
    /// Stride `[h, w]`.
    pub stride: [usize; 2],
    /// Padding `[top, left, bottom, right]`.
    pub pad: [usize; 4],
    /// Dilation `[h, w]` (1 = dense).
    pub dilation: [usize; 2],
}

impl Window {
    /// One pixel, stride 1, no padding: a pointwise (1x1) convolution's window.
    pub const POINTWISE: Window = Window {
        kernel: [1, 1],
        stride: [1, 1],
        pad: [0; 4],
        dilation: [1, 1],
    };

    /// A whole `h x w` plane at once (global pooling).
    pub fn global(h: usize, w: usize) -> Window {
        Window {
            kernel: [h, w],
            ..Window::POINTWISE
        }
    }
}

/// Convolution (and deconvolution) parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Conv {
    /// Window.
    pub window: Window,
    /// Groups (input and output channels are split into this many independent groups;
    /// `groups == input channels == output channels` is depthwise).
    pub groups: usize,
    /// Output channels.
    pub out_channels: usize,
    /// Convolution: `[K, C/groups, kh, kw]`. Deconvolution: `[C, K/groups, kh, kw]`
    /// (Caffe's and ONNX's ConvTranspose layout).
    pub weight: Weights,
    /// `[K]`, if any.
    pub bias: Option<Weights>,
}

impl Conv {
    /// A 1x1 convolution without groups: `weight` is `[K, C, 1, 1]`, `K` its first
    /// dimension.
    pub fn pointwise(weight: Weights, bias: Option<Weights>) -> Conv {
        Conv {
            window: Window::POINTWISE,
            groups: 1,
            out_channels: weight.dims.first().copied().unwrap_or(0),
            weight,
            bias,
        }
    }
}

/// Pooling kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Maximum.
    Max,
    /// Average.
    Avg,
}

/// Pooling parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pool {
    /// Max or average.
    pub kind: PoolKind,
    /// Window (dilation is always 1). For global pooling the front end sets the kernel to
    /// the input's spatial size.
    pub window: Window,
    /// Output size rounds up (Caffe's default, ONNX `ceil_mode`) instead of down.
    pub ceil_mode: bool,
    /// Average pooling divides by the full window including padding (Caffe's behaviour,
    /// ONNX `count_include_pad`), instead of by the valid elements only.
    pub count_include_pad: bool,
}

/// An element-wise activation.
#[derive(Debug, Clone, PartialEq)]
pub enum Activation {
    /// `max(x, 0) + slope * min(x, 0)` (ReLU is slope 0).
    Relu {
        /// Negative slope.
        slope: f32,
    },
    /// Per-channel negative slope `[C]`.
    PRelu {
        /// Slopes.
        slopes: Weights,
    },
    /// `min(max(x, lo), hi)`.
    Clip {
        /// Lower bound.
        lo: f32,
        /// Upper bound.
        hi: f32,
    },
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `tanh(x)`.
    Tanh,
    /// The error function `erf(x)` (GELU's `0.5 x (1 + erf(x / sqrt 2))`).
    Erf,
}

/// Element-wise combination of several same-shape inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EltwiseKind {
    /// `sum(coeff_i * x_i)`.
    Sum,
    /// Product.
    Prod,
    /// Maximum.
    Max,
}

/// An operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Convolution: one input.
    Conv(Conv),
    /// Transposed convolution (Caffe Deconvolution): one input.
    Deconv(Conv),
    /// Fully connected (Caffe InnerProduct, ONNX Gemm): input flattened per item,
    /// `weight [K, C*H*W]`, output `N x K x 1 x 1`.
    FullyConnected {
        /// `[K, C*H*W]`.
        weight: Weights,
        /// `[K]`, if any.
        bias: Option<Weights>,
    },
    /// Pooling: one input.
    Pool(Pool),
    /// Activation: one input.
    Activation(Activation),
    /// Per-channel affine `x * scale[c] + bias[c]` (Caffe Scale, folded batch-norm):
    /// one input; absent scale means 1, absent bias 0. A one-element vector applies to
    /// every channel.
    ChannelAffine {
        /// `[C]` or `[1]`.
        scale: Option<Weights>,
        /// `[C]` or `[1]`.
        bias: Option<Weights>,
    },
    /// Batch normalisation with statistics: `(x - mean[c]) / sqrt(var[c] + eps)`.
    /// (Caffe's moving-average factor is already applied by the front end.)
    BatchNorm {
        /// `[C]`.
        mean: Weights,
        /// `[C]`.
        var: Weights,
        /// Epsilon.
        eps: f32,
    },
    /// `(shift + scale * x) ^ power` element-wise (Caffe Power).
    Power {
        /// Exponent.
        power: f32,
        /// Multiplier.
        scale: f32,
        /// Addend.
        shift: f32,
    },
    /// Element-wise over two or more same-shape inputs. With exactly two inputs the
    /// second may instead be a per-channel vector `N x C x 1 x 1` of the first's `N` and
    /// `C`, broadcast over its pixels (squeeze-and-excitation's `x * s`); the output has
    /// the first input's shape.
    Eltwise {
        /// Sum, product or maximum.
        kind: EltwiseKind,
        /// Per-input coefficients (sum only; empty = all 1).
        coeffs: Vec<f32>,
    },
    /// Concatenation along channels (axis 1) of two or more inputs.
    Concat,
    /// Softmax over channels (axis 1) of one input.
    Softmax,
    /// Local response normalisation across channels (Caffe LRN ACROSS_CHANNELS):
    /// `x / (k + alpha / size * sum(x^2 over size channels)) ^ beta`.
    Lrn {
        /// Window in channels (odd).
        size: usize,
        /// Alpha.
        alpha: f32,
        /// Beta.
        beta: f32,
        /// k.
        k: f32,
    },
    /// A window of the pixels, every `step`-th line and column from `origin` (ONNX `Slice`
    /// of the spatial axes, YOLOv5's Focus `x[..., ::2, ::2]`, Caffe `Crop`): output
    /// pixel `(y, x)` is input pixel `(origin[0] + y * step[0], origin[1] + x * step[1])`;
    /// the output's shape gives the count. Channels unchanged; one input.
    Crop {
        /// First line and column.
        origin: [usize; 2],
        /// Line and column steps (at least 1).
        step: [usize; 2],
    },
    /// Padding by the border pixels (ONNX `Pad` in `edge` mode; a bilinear resize's
    /// clamped neighbours): output pixel `(y, x)` is input pixel `(clamp(y - top),
    /// clamp(x - left))`, each coordinate clamped to the input. Channels unchanged; one
    /// input.
    EdgePad {
        /// `[top, left, bottom, right]`.
        pads: [usize; 4],
    },
    /// A layout-only reshape to `C*H*W x 1 x 1` per item (Caffe Flatten); data unchanged.
    Flatten,
    /// Output equals input (Dropout at inference, Identity, Split).
    Identity,
    /// Part of an ONNX model that no NVDLA engine computes, run by the runtime on the CPU
    /// (`--cpu-fallback`): an ONNX subgraph whose inputs and outputs are the node's, in
    /// order, each holding its values row-major in the ONNX dimensions the partition
    /// records.
    CpuPartition(std::sync::Arc<CpuPartition>),
    /// An element-wise function the hardware cannot compute, run by the runtime on the
    /// CPU (`--cpu-fallback`): one input, same shape.
    CpuUnary {
        /// The function (the runtime's CPU fallback table).
        func: nvdla_umd::emu::FallbackFn,
        /// First parameter (Elu/Selu/Celu alpha, HardSigmoid alpha, Pow exponent, ...).
        alpha: f32,
        /// Second parameter (Selu gamma, HardSigmoid beta).
        beta: f32,
    },
}

impl Op {
    /// The op's name as the compiler prints it.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Conv(_) => "Convolution",
            Op::Deconv(_) => "Deconvolution",
            Op::FullyConnected { .. } => "FullyConnected",
            Op::Pool(_) => "Pooling",
            Op::Activation(Activation::Relu { .. }) => "ReLU",
            Op::Activation(Activation::PRelu { .. }) => "PReLU",
            Op::Activation(Activation::Clip { .. }) => "Clip",
            Op::Activation(Activation::Sigmoid) => "Sigmoid",
            Op::Activation(Activation::Tanh) => "TanH",
            Op::Activation(Activation::Erf) => "Erf",
            Op::ChannelAffine { .. } => "Scale",
            Op::BatchNorm { .. } => "BatchNorm",
            Op::Power { .. } => "Power",
            Op::Eltwise { .. } => "Eltwise",
            Op::Concat => "Concat",
            Op::Softmax => "Softmax",
            Op::Lrn { .. } => "LRN",
            Op::Crop { .. } => "Crop",
            Op::EdgePad { .. } => "EdgePad",
            Op::Flatten => "Flatten",
            Op::Identity => "Identity",
            Op::CpuUnary { .. } => "CpuUnary",
            Op::CpuPartition(_) => "CpuPartition",
        }
    }
}

/// An ONNX subgraph run on the CPU ([`Op::CpuPartition`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpuPartition {
    /// The ONNX model (a serialized `ModelProto`): the partition's inputs are its graph
    /// inputs (f32) and its outputs its graph outputs, in the node's order.
    pub model: Vec<u8>,
    /// The ONNX dimensions of each input.
    pub input_dims: Vec<Vec<usize>>,
    /// The ONNX dimensions of each output.
    pub output_dims: Vec<Vec<usize>>,
    /// The ONNX operators of its nodes, in order (for summaries).
    pub ops: Vec<String>,
}

/// A tensor: an activation flowing between nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Name (Caffe blob / ONNX value name).
    pub name: String,
    /// Shape, filled by the front end or by shape inference.
    pub shape: Shape,
}

/// A node: one operation of the source model.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Layer / node name of the source model (for errors and dumps).
    pub name: String,
    /// Layer type as the source model spells it (`Convolution`, `Conv`, ...).
    pub source_type: String,
    /// The operation.
    pub op: Op,
    /// Input tensors.
    pub inputs: Vec<TensorId>,
    /// Output tensors (one for every op today).
    pub outputs: Vec<TensorId>,
}

/// A network.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Graph {
    /// Model name.
    pub name: String,
    /// All tensors.
    pub tensors: Vec<Tensor>,
    /// Nodes in topological order.
    pub nodes: Vec<Node>,
    /// Network inputs.
    pub inputs: Vec<TensorId>,
    /// Network inputs of integers (an ONNX `int32` or `int64` input: byte values, token
    /// ids, a sample rate) that only CPU partitions read: held as int16 in memory, the
    /// partitions cast them back. No engine reads them.
    pub integer_inputs: Vec<TensorId>,
    /// Network outputs of integers a CPU partition writes (an `ArgMax`, a mask,
    /// `NonMaxSuppression`'s indices): binary32 in memory, exact to 2^24.
    pub integer_outputs: Vec<TensorId>,
    /// Network outputs.
    pub outputs: Vec<TensorId>,
    /// What the front end assumed where the model left something open (a symbolic batch
    /// taken as 1), for the command line to print.
    pub notes: Vec<String>,
}

impl Graph {
    /// Add a tensor; returns its id.
    pub fn add_tensor(&mut self, name: impl Into<String>, shape: Shape) -> TensorId {
        self.tensors.push(Tensor {
            name: name.into(),
            shape,
        });
        TensorId(self.tensors.len() - 1)
    }

    /// Add a node; returns its id.
    pub fn add_node(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        NodeId(self.nodes.len() - 1)
    }

    /// Multiply-accumulates of node `n` per run (convolutions, deconvolutions and fully
    /// connected layers; 0 for the others).
    pub fn macs(&self, n: &Node) -> u64 {
        let (Some(&x), Some(&y)) = (n.inputs.first(), n.outputs.first()) else {
            return 0;
        };
        let (xs, ys) = (self.shape(x), self.shape(y));
        let m = match &n.op {
            Op::Conv(c) => {
                ys.elements() * (xs.c / c.groups.max(1)) * c.window.kernel[0] * c.window.kernel[1]
            }
            Op::Deconv(c) => {
                xs.elements()
                    * (c.out_channels / c.groups.max(1))
                    * c.window.kernel[0]
                    * c.window.kernel[1]
            }
            Op::FullyConnected { .. } => ys.elements() * xs.per_item(),
            _ => 0,
        };
        m as u64
    }

    /// The tensor `id`.
    pub fn tensor(&self, id: TensorId) -> &Tensor {
        &self.tensors[id.0]
    }

    /// The shape of tensor `id`.
    pub fn shape(&self, id: TensorId) -> Shape {
        self.tensors[id.0].shape
    }

    /// The node that produces `t`, if any.
    pub fn producer(&self, t: TensorId) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.outputs.contains(&t))
            .map(NodeId)
    }

    /// The nodes that read `t`.
    pub fn consumers(&self, t: TensorId) -> Vec<NodeId> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.inputs.contains(&t))
            .map(|(i, _)| NodeId(i))
            .collect()
    }

    /// Check the structural invariants: ids in range, topological order, every tensor
    /// produced at most once, outputs produced. Returns a description of the first
    /// violation.
    pub fn check(&self) -> Result<(), String> {
        let mut defined = vec![false; self.tensors.len()];
        for &t in &self.inputs {
            let d = defined
                .get_mut(t.0)
                .ok_or_else(|| format!("graph input {} out of range", t.0))?;
            *d = true;
        }
        for n in &self.nodes {
            for &t in &n.inputs {
                match defined.get(t.0) {
                    None => return Err(format!("node `{}`: input {} out of range", n.name, t.0)),
                    Some(false) => {
                        return Err(format!(
                            "node `{}`: input `{}` is not produced before it",
                            n.name, self.tensors[t.0].name
                        ))
                    }
                    Some(true) => {}
                }
            }
            for &t in &n.outputs {
                match defined.get_mut(t.0) {
                    None => return Err(format!("node `{}`: output {} out of range", n.name, t.0)),
                    Some(true) => {
                        return Err(format!(
                            "node `{}`: output `{}` is produced twice",
                            n.name, self.tensors[t.0].name
                        ))
                    }
                    Some(d) => *d = true,
                }
            }
        }
        for &t in &self.outputs {
            if !defined.get(t.0).copied().unwrap_or(false) {
                return Err(format!("graph output {} is never produced", t.0));
            }
        }
        Ok(())
    }
}
