//! The graph walk: ONNX values to IR tensors and constants, nodes in order, graph inputs
//! and outputs.
//!
//! Every ONNX value is a [`Value`]: a constant, an activation (an IR tensor plus the
//! value's ONNX dimensions), a pending zero padding (a `Pad` waiting for the convolution
//! or pooling it folds into), or an output that exists in ONNX but not in the IR (a
//! `MaxPool`'s indices, a `Dropout`'s mask), which is an error only if something reads it.
//!
//! **Shapes.** An activation of ONNX dimensions `d` normally has the IR shape [`ir_shape`]
//! of `d`: `[N, C, H, W]` as is, fewer axes padded with trailing 1s (`[N, K]` is
//! `N x K x 1 x 1`, `[N, C, L]` is `N x C x L x 1`, `[K]` is `1 x K x 1 x 1`), more axes
//! folded into H. Layout-only ops (`Reshape`, `Flatten`, `Squeeze`, `Unsqueeze`,
//! `Identity`, `Dropout`) emit no node: their result is the same IR tensor with new ONNX
//! dimensions, which is always valid because both are row-major over the same elements.
//! An op that needs the channel layout (per-channel constants, convolution, pooling,
//! concatenation) asks for the canonical IR shape; when the tensor's IR shape differs, an
//! IR `Flatten` gives `N x K x 1 x 1`, and any other change of layout is an error (the IR
//! has no general reshape).

use super::ops;
use super::proto::{attribute_type as at, data_type as dt, AttributeProto, GraphProto, NodeProto};
use super::tensor::{self, fmt_dims, Const, Data, MAX_ACTIVATION};
use super::Options;
use crate::error::{CompileError, Result};
use crate::ir::{Graph, Node, Op, Shape, TensorId};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// Lowest and highest version of the default operator set accepted. Versions 22 to 25
/// changed only the element types the operators mapped here accept; version 6 differs
/// from 7 in the legacy broadcasting of `Add`/`Sub`/`Mul`/`Div`/`PRelu` and the `is_test`
/// attributes, which are read.
pub(crate) const OPSETS: std::ops::RangeInclusive<i64> = 6..=25;

/// An activation: an IR tensor and the ONNX dimensions of the value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Act {
    /// The IR tensor holding the values (row-major, same order as the ONNX value).
    pub t: TensorId,
    /// ONNX dimensions.
    pub dims: Vec<usize>,
}

/// An ONNX value.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    /// A constant.
    Const(Rc<Const>),
    /// An activation.
    Act(Act),
    /// `act` with a pending constant padding of `value` on its spatial axes
    /// (`[top, left, bottom, right]`); `dims` are the padded dimensions.
    Padded {
        /// The unpadded activation.
        act: Act,
        /// `[top, left, bottom, right]`.
        pads: [usize; 4],
        /// Padding value.
        value: f32,
        /// Dimensions after padding.
        dims: Vec<usize>,
    },
    /// A value computed on the CPU, inside CPU partition `part` (`--cpu-fallback`; see
    /// [`super::partition`]); written to memory when the hardware reads it.
    Cpu {
        /// The partition.
        part: usize,
        /// ONNX dimensions.
        dims: Vec<usize>,
        /// Whether its element type is a floating-point one.
        float: bool,
    },
    /// An output the IR does not compute; reading it is an error with this reason.
    Unavailable(String),
}

impl Value {
    /// The ONNX dimensions, if known.
    pub fn dims(&self) -> Option<&[usize]> {
        match self {
            Value::Const(c) => Some(&c.dims),
            Value::Act(a) => Some(&a.dims),
            Value::Padded { dims, .. } | Value::Cpu { dims, .. } => Some(dims),
            Value::Unavailable(_) => None,
        }
    }
}

/// The IR shape of ONNX dimensions `d` (see the module documentation).
pub(crate) fn ir_shape(d: &[usize]) -> Result<Shape, String> {
    tensor::count(d, MAX_ACTIVATION)?;
    if d.contains(&0) {
        return Err(format!(
            "an empty tensor ({}) cannot be an activation",
            fmt_dims(d)
        ));
    }
    Ok(match *d {
        [] => Shape::new(1, 1, 1, 1),
        [k] => Shape::new(1, k, 1, 1),
        [n, c] => Shape::new(n, c, 1, 1),
        [n, c, h] => Shape::new(n, c, h, 1),
        [n, c, h, w] => Shape::new(n, c, h, w),
        _ => Shape::new(
            d[0],
            d[1],
            d[2..d.len() - 1].iter().product(),
            d[d.len() - 1],
        ),
    })
}

/// The ONNX axis that is the IR's channel axis for a value of rank `r`.
pub(crate) fn channel_axis(r: usize) -> Option<usize> {
    match r {
        0 => None,
        1 => Some(0),
        _ => Some(1),
    }
}

/// One node being mapped: the node, its label for errors, the opset and its inputs.
pub(crate) struct NodeCx<'n> {
    /// The node.
    pub node: &'n NodeProto,
    /// Its name, or `<op>#<index>` when unnamed.
    pub label: String,
    /// Version of the default operator set.
    pub opset: i64,
    /// Resolved inputs (`None`: absent optional input).
    pub inputs: Vec<Option<Value>>,
}

impl NodeCx<'_> {
    /// The operator.
    pub fn op(&self) -> &str {
        &self.node.op_type
    }

    /// A [`CompileError::Layer`] naming this node.
    pub fn err(&self, reason: impl Into<String>) -> CompileError {
        CompileError::layer(self.label.clone(), self.node.op_type.clone(), reason)
    }

    /// Name of output `k` (`""` if absent).
    pub fn out(&self, k: usize) -> &str {
        self.node.output.get(k).map_or("", String::as_str)
    }

    /// Name of input `k` (`""` if absent).
    pub fn in_name(&self, k: usize) -> &str {
        self.node.input.get(k).map_or("", String::as_str)
    }

    /// Input `k`, if present.
    pub fn input(&self, k: usize) -> Option<&Value> {
        self.inputs.get(k).and_then(Option::as_ref)
    }

    /// Requires between `lo` and `hi` inputs (absent optional ones included).
    pub fn arity(&self, lo: usize, hi: usize) -> Result<()> {
        let n = self.inputs.len();
        if n < lo || n > hi {
            return Err(self.err(if lo == hi {
                format!("expects {lo} input(s), found {n}")
            } else {
                format!("expects {lo} to {hi} inputs, found {n}")
            }));
        }
        if (0..lo).any(|k| self.input(k).is_none()) {
            return Err(self.err(format!("expects {lo} non-empty input(s)")));
        }
        Ok(())
    }

    /// Input `k` as an activation (not a constant, not padded).
    pub fn act(&self, k: usize) -> Result<Act> {
        match self.input(k) {
            Some(Value::Act(a)) => Ok(a.clone()),
            Some(Value::Const(_)) => Err(self.err(format!(
                "input `{}` is a constant; this op maps to the IR only when it is computed \
                 by the network",
                self.in_name(k)
            ))),
            Some(Value::Padded { .. }) => Err(self.err(format!(
                "input `{}` comes from a Pad, which the IR can only fold into a following \
                 Conv (zero padding), AveragePool (zero padding) or MaxPool (-inf padding)",
                self.in_name(k)
            ))),
            Some(Value::Unavailable(r)) => {
                Err(self.err(format!("input `{}`: {r}", self.in_name(k))))
            }
            Some(Value::Cpu { .. }) => Err(self.err(format!(
                "input `{}` is computed on the CPU and not in memory",
                self.in_name(k)
            ))),
            None => Err(self.err(format!("input {k} is missing"))),
        }
    }

    /// Input `k` as a constant, if present; an activation is an error naming `what`.
    pub fn constant(&self, k: usize, what: &str) -> Result<Option<Rc<Const>>> {
        match self.input(k) {
            None => Ok(None),
            Some(Value::Const(c)) => Ok(Some(c.clone())),
            Some(_) => Err(self.err(format!(
                "{what} (`{}`) must be a constant (an initializer or computed from constants)",
                self.in_name(k)
            ))),
        }
    }

    /// Input `k` as a required constant.
    pub fn required(&self, k: usize, what: &str) -> Result<Rc<Const>> {
        self.constant(k, what)?
            .ok_or_else(|| self.err(format!("{what} (input {k}) is missing")))
    }

    fn attr(&self, name: &str) -> Result<Option<&AttributeProto>> {
        let mut found = self.node.attribute.iter().filter(|a| a.name == name);
        let a = found.next();
        if found.next().is_some() {
            return Err(self.err(format!("attribute `{name}` is given twice")));
        }
        if let Some(a) = a {
            if !a.ref_attr_name.is_empty() {
                return Err(self.err(format!(
                    "attribute `{name}` refers to a function attribute (`{}`)",
                    a.ref_attr_name
                )));
            }
        }
        Ok(a)
    }

    fn typed(
        &self,
        name: &str,
        want: i32,
        set: impl Fn(&AttributeProto) -> bool,
    ) -> Result<Option<&AttributeProto>> {
        let Some(a) = self.attr(name)? else {
            return Ok(None);
        };
        if a.r#type == want || (a.r#type == at::UNDEFINED && set(a)) {
            return Ok(Some(a));
        }
        const NAMES: [&str; 10] = [
            "undefined",
            "float",
            "int",
            "string",
            "tensor",
            "graph",
            "floats",
            "ints",
            "strings",
            "tensors",
        ];
        let n = |t: i32| NAMES.get(t as usize).copied().unwrap_or("another type");
        Err(self.err(format!(
            "attribute `{name}` is of type {}, expected {}",
            n(a.r#type),
            n(want)
        )))
    }

    /// An INT attribute.
    pub fn int(&self, name: &str) -> Result<Option<i64>> {
        Ok(self.typed(name, at::INT, |_| true)?.map(|a| a.i))
    }

    /// A FLOAT attribute.
    pub fn float(&self, name: &str) -> Result<Option<f32>> {
        Ok(self.typed(name, at::FLOAT, |_| true)?.map(|a| a.f))
    }

    /// An INTS attribute.
    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        Ok(self
            .typed(name, at::INTS, |a| !a.ints.is_empty())?
            .map(|a| a.ints.clone()))
    }

    /// A FLOATS attribute.
    pub fn floats(&self, name: &str) -> Result<Option<Vec<f32>>> {
        Ok(self
            .typed(name, at::FLOATS, |a| !a.floats.is_empty())?
            .map(|a| a.floats.clone()))
    }

    /// A STRING attribute.
    pub fn string(&self, name: &str) -> Result<Option<String>> {
        Ok(self
            .typed(name, at::STRING, |a| !a.s.is_empty())?
            .map(|a| String::from_utf8_lossy(&a.s).into_owned()))
    }

    /// A TENSOR attribute, decoded.
    pub fn tensor(&self, name: &str) -> Result<Option<Const>> {
        let Some(a) = self.typed(name, at::TENSOR, |a| a.t.is_some())? else {
            return Ok(None);
        };
        let t =
            a.t.as_ref()
                .ok_or_else(|| self.err(format!("attribute `{name}` holds no tensor")))?;
        tensor::from_proto(t)
            .map(Some)
            .map_err(|e| self.err(format!("attribute `{name}`: {e}")))
    }

    /// Whether attribute `name` is present.
    pub fn has(&self, name: &str) -> bool {
        self.node.attribute.iter().any(|a| a.name == name)
    }

    /// Axis `a` of a rank-`r` value, negative counting from the end.
    pub fn axis(&self, what: &str, a: i64, r: usize) -> Result<usize> {
        let ri = r as i64;
        if a < -ri || a >= ri {
            return Err(self.err(format!("{what} {a} is out of range for rank {r}")));
        }
        Ok(if a < 0 { a + ri } else { a } as usize)
    }
}

/// The graph under construction.
pub(crate) struct Builder {
    /// The IR graph.
    pub g: Graph,
    /// ONNX value name -> value.
    pub values: HashMap<String, Value>,
    /// The CPU partitions (`--cpu-fallback`).
    pub cpu: super::partition::CpuSide,
    /// The network inputs' tensors (an output that aliases one gets its own Identity).
    graph_input_tensors: HashSet<TensorId>,
    /// Map operators to CPU fallback operations (`--cpu-fallback`).
    pub cpu_fallback: bool,
    /// The build compiled for: nodes it cannot take go to the CPU (with `cpu_fallback`).
    pub target: Option<crate::target::Target>,
    /// Elements of the constants and weights computed so far (folding, synthesized
    /// weights), bounded by [`MAX_TOTAL_COMPUTED`].
    computed: usize,
}

/// Bound on all elements the front end computes for one model, so that no small input
/// (many nodes each folding a large constant) exhausts memory: the budget one constant
/// may take alone ([`tensor::MAX_COMPUTED`]).
const MAX_TOTAL_COMPUTED: usize = tensor::MAX_COMPUTED;

impl Builder {
    /// Adds a node `op` reading `inputs` and writing a new tensor `out_name` of `shape`;
    /// the node is `cx`'s label, suffixed with `/suffix` when one ONNX node makes several.
    pub fn emit(
        &mut self,
        cx: &NodeCx<'_>,
        suffix: Option<&str>,
        op: Op,
        inputs: Vec<TensorId>,
        out_name: String,
        shape: Shape,
    ) -> TensorId {
        let out = self.g.add_tensor(out_name, shape);
        let name = match suffix {
            Some(s) => format!("{}/{s}", cx.label),
            None => cx.label.clone(),
        };
        self.g.add_node(Node {
            name,
            source_type: cx.node.op_type.clone(),
            op,
            inputs,
            outputs: vec![out],
        });
        out
    }

    /// Accounts for `n` computed elements; an error once the total exceeds the bound.
    pub fn spend(&mut self, cx: &NodeCx<'_>, n: usize) -> Result<()> {
        self.computed = self.computed.saturating_add(n);
        if self.computed > MAX_TOTAL_COMPUTED {
            return Err(cx.err(format!(
                "the constants computed so far exceed {MAX_TOTAL_COMPUTED} elements"
            )));
        }
        Ok(())
    }

    /// The IR shape of `t`.
    pub fn shape(&self, t: TensorId) -> Shape {
        self.g.shape(t)
    }

    /// Input `k` of `cx` (an activation) in its canonical IR shape, flattening it with an
    /// IR `Flatten` if that is the difference; the flattened tensor replaces the value.
    pub fn canonical(&mut self, cx: &NodeCx<'_>, k: usize) -> Result<(TensorId, Vec<usize>)> {
        let a = cx.act(k)?;
        let t = self.canonical_act(cx, &a, cx.in_name(k))?;
        if t != a.t {
            self.values.insert(
                cx.in_name(k).to_string(),
                Value::Act(Act {
                    t,
                    dims: a.dims.clone(),
                }),
            );
        }
        Ok((t, a.dims))
    }

    /// [`Builder::canonical`] for an activation `a` (named `name` in errors).
    pub fn canonical_act(&mut self, cx: &NodeCx<'_>, a: &Act, name: &str) -> Result<TensorId> {
        let want = ir_shape(&a.dims).map_err(|e| cx.err(e))?;
        let s = self.shape(a.t);
        if s == want {
            return Ok(a.t);
        }
        if want == Shape::new(s.n, s.per_item(), 1, 1) {
            let out_name = if name.is_empty() {
                format!("{}/flat", self.g.tensor(a.t).name)
            } else {
                name.to_string()
            };
            let t = self.g.add_tensor(out_name, want);
            self.g.add_node(Node {
                name: format!("{}/flatten", cx.label),
                source_type: "Flatten".into(),
                op: Op::Flatten,
                inputs: vec![a.t],
                outputs: vec![t],
            });
            return Ok(t);
        }
        Err(cx.err(format!(
            "input `{name}` ({}) is laid out as {s} after a reshape; the IR cannot change \
             that to {want} (it has no reshape other than flattening to N x K x 1 x 1)",
            fmt_dims(&a.dims)
        )))
    }
}

/// Builds the IR graph of `graph` under default-domain opset `opset`.
pub(crate) fn build(graph: &GraphProto, opset: i64, opts: &Options) -> Result<Graph> {
    let mut b = Builder {
        g: Graph {
            name: graph.name.clone(),
            ..Default::default()
        },
        values: HashMap::new(),
        graph_input_tensors: HashSet::new(),
        cpu: Default::default(),
        cpu_fallback: opts.cpu_fallback,
        target: opts.target,
        computed: 0,
    };
    let input_err = |name: &str, reason: String| CompileError::layer(name, "graph input", reason);
    for t in &graph.initializer {
        let c = tensor::from_proto(t)
            .map_err(|e| CompileError::layer(t.name.clone(), "initializer", e))?;
        b.values.insert(t.name.clone(), Value::Const(Rc::new(c)));
    }
    for t in &opts.constants {
        let c = tensor::from_proto(t)
            .map_err(|e| CompileError::layer(t.name.clone(), "bound constant", e))?;
        if !graph.input.iter().any(|i| i.name == t.name) {
            return Err(CompileError::Option(format!(
                "no graph input named `{}` to bind a constant to",
                t.name
            )));
        }
        b.values.insert(t.name.clone(), Value::Const(Rc::new(c)));
    }
    for (name, values) in &opts.input_values {
        let c = bound_value(graph, name, values)?;
        b.values.insert(name.clone(), Value::Const(Rc::new(c)));
    }
    let activation_inputs: Vec<&str> = graph
        .input
        .iter()
        .filter(|vi| !b.values.contains_key(&vi.name))
        .map(|vi| vi.name.as_str())
        .collect();
    for (name, _) in &opts.input_shapes {
        if !activation_inputs.contains(&name.as_str()) {
            return Err(CompileError::Option(format!(
                "--input-shape {name}: the model has no such input (its inputs: {})",
                activation_inputs.join(", ")
            )));
        }
    }
    for vi in &graph.input {
        if b.values.contains_key(&vi.name) {
            continue; // an initializer's declaration, or bound to a constant
        }
        let tt = vi
            .r#type
            .as_ref()
            .and_then(|t| t.tensor_type.as_ref())
            .ok_or_else(|| input_err(&vi.name, "is not a tensor".into()))?;
        // FLOAT16 is the hardware's own fp16; FLOAT inputs are rounded to it (or quantized).
        // Integers (byte values, token ids) go to CPU partitions as int16.
        let integer = super::partition::INTEGER_INPUTS.contains(&tt.elem_type);
        if !integer && !matches!(tt.elem_type, dt::FLOAT | dt::FLOAT16) {
            return Err(input_err(
                &vi.name,
                format!(
                    "element type {}: only FLOAT and FLOAT16 inputs, and integer inputs read \
                     by CPU partitions (--cpu-fallback), are supported",
                    super::proto::data_type::name(tt.elem_type)
                ),
            ));
        }
        if integer && !opts.cpu_fallback {
            return Err(input_err(
                &vi.name,
                format!(
                    "element type {}: integer inputs are read by CPU partitions only; \
                     compile with --cpu-fallback",
                    super::proto::data_type::name(tt.elem_type)
                ),
            ));
        }
        let given = opts.input_shapes.iter().find(|(n, _)| *n == vi.name);
        let declared: Option<Vec<Option<usize>>> = tt.shape.as_ref().map(|s| {
            s.dim
                .iter()
                .map(|d| d.dim_value.filter(|&v| v > 0).map(|v| v as usize))
                .collect()
        });
        let dims = match (given, declared) {
            (Some((_, g)), Some(d)) if g.len() != d.len() => {
                return Err(input_err(
                    &vi.name,
                    format!(
                        "--input-shape gives {} dimensions, the model declares {}",
                        g.len(),
                        d.len()
                    ),
                ))
            }
            (Some((_, g)), _) => g.clone(),
            (None, None) => {
                return Err(input_err(
                    &vi.name,
                    "the model does not declare its shape; give it with --input-shape \
                     name=NxCxHxW"
                        .into(),
                ))
            }
            (None, Some(mut d)) => {
                // A symbolic batch (dimension 0, every other fixed) is taken as 1.
                if d.len() >= 2 && d[0].is_none() && d[1..].iter().all(Option::is_some) {
                    d[0] = Some(1);
                    b.g.notes.push(format!(
                        "input `{}`: its symbolic batch dimension is taken as 1 (--input-shape \
                         sets another)",
                        vi.name
                    ));
                }
                if let Some(i) = d.iter().position(Option::is_none) {
                    let shown: Vec<String> = d
                        .iter()
                        .map(|x| x.map_or("?".into(), |v| v.to_string()))
                        .collect();
                    return Err(input_err(
                        &vi.name,
                        format!(
                            "dimension {i} of {} is not fixed; give the shape with \
                             --input-shape {}={}",
                            shown.join("x"),
                            vi.name,
                            shown
                                .iter()
                                .map(|s| if s == "?" { "1" } else { s.as_str() })
                                .collect::<Vec<_>>()
                                .join("x")
                        ),
                    ));
                }
                d.into_iter().flatten().collect()
            }
        };
        let mut shape = ir_shape(&dims).map_err(|e| input_err(&vi.name, e))?;
        // A later input whose leading dimension is not the network's batch of one (a
        // recurrent state `[2, 1, 128]`) keeps it as channels, for CPU partitions only
        // (as values partitions pass each other do): no engine may read it.
        let batch = b.g.inputs.first().map(|&i| b.g.shape(i).n);
        let folded = opts.cpu_fallback && batch == Some(1) && shape.n != 1;
        if folded {
            shape = Shape::new(1, shape.n * shape.c, shape.h, shape.w);
        }
        let t = b.g.add_tensor(vi.name.clone(), shape);
        if folded {
            b.fold_input(t);
        }
        b.g.inputs.push(t);
        b.graph_input_tensors.insert(t);
        if integer {
            b.g.integer_inputs.push(t);
            b.cpu.integer_inputs.insert(t, tt.elem_type);
        }
        b.values
            .insert(vi.name.clone(), Value::Act(Act { t, dims }));
    }
    for (i, node) in graph.node.iter().enumerate() {
        b.node(i, node, opset)?;
    }
    b.outputs(graph)?;
    b.finish_partitions(opset)?;
    Ok(b.g)
}

/// The constant `--input-value name=values` gives graph input `name`: its declared type
/// and shape (every dimension fixed), the values rounded to an integer type.
fn bound_value(graph: &GraphProto, name: &str, values: &[f64]) -> Result<Const> {
    let err = |reason: String| CompileError::Option(format!("--input-value {name}: {reason}"));
    let vi = graph
        .input
        .iter()
        .find(|i| i.name == *name)
        .ok_or_else(|| {
            let names: Vec<&str> = graph.input.iter().map(|i| i.name.as_str()).collect();
            err(format!(
                "the model has no such input (its inputs: {})",
                names.join(", ")
            ))
        })?;
    let tt = vi
        .r#type
        .as_ref()
        .and_then(|t| t.tensor_type.as_ref())
        .ok_or_else(|| err("the input is not a tensor".into()))?;
    let dims: Vec<usize> = match &tt.shape {
        None => vec![values.len()],
        Some(s) => s
            .dim
            .iter()
            .map(|d| d.dim_value.filter(|&v| v > 0).map(|v| v as usize))
            .collect::<Option<_>>()
            .ok_or_else(|| err("the input's shape is not fixed".into()))?,
    };
    let n: usize = dims.iter().product();
    if n != values.len() {
        return Err(err(format!(
            "{} values given, the input has {n} ({})",
            values.len(),
            fmt_dims(&dims)
        )));
    }
    Ok(match tt.elem_type {
        dt::FLOAT | dt::FLOAT16 | dt::DOUBLE | dt::BFLOAT16 => Const {
            dtype: tt.elem_type,
            dims,
            data: Data::F(values.iter().map(|&v| v as f32).collect()),
        },
        t if super::partition::INTEGER_INPUTS.contains(&t) || t == dt::BOOL => {
            if let Some(v) = values.iter().find(|v| v.fract() != 0.0 || !v.is_finite()) {
                return Err(err(format!(
                    "{v} is not a whole number; the input is {}",
                    super::proto::data_type::name(t)
                )));
            }
            Const {
                dtype: t,
                dims,
                data: Data::I(values.iter().map(|&v| v as i64).collect()),
            }
        }
        t => {
            return Err(err(format!(
                "element type {} cannot be given",
                super::proto::data_type::name(t)
            )))
        }
    })
}

impl Builder {
    /// A constant padding of `act` as IR nodes: a depthwise 1x1 convolution of ones with
    /// the padding (zeros), between a subtraction and an addition of `value` otherwise.
    fn materialize_pad(
        &mut self,
        label: &str,
        act: &Act,
        pads: [usize; 4],
        value: f32,
        dims: &[usize],
    ) -> Result<TensorId> {
        let err = |r: String| CompileError::layer(label, "Pad", r);
        if !value.is_finite() {
            return Err(err(format!(
                "a padding of {value} is only folded into a following pooling"
            )));
        }
        let shape = ir_shape(dims).map_err(err)?;
        let s = self.shape(act.t);
        if ir_shape(&act.dims).ok() != Some(s) {
            return Err(err("the padded input is laid out after a reshape".into()));
        }
        let c = s.c;
        let affine = |v: f32| Op::ChannelAffine {
            scale: None,
            bias: Some(crate::ir::Weights::vector(vec![v])),
        };
        let mut x = act.t;
        let name = format!("{label}/pad");
        if value != 0.0 {
            x = self.add(&format!("{name}/shift"), affine(-value), x, s);
        }
        let conv = Op::Conv(crate::ir::Conv {
            window: crate::ir::Window {
                kernel: [1, 1],
                stride: [1, 1],
                pad: pads,
                dilation: [1, 1],
            },
            groups: c,
            out_channels: c,
            weight: crate::ir::Weights::new(vec![c, 1, 1, 1], vec![1.0; c])
                .ok_or_else(|| err("weight size".into()))?,
            bias: None,
        });
        let mut y = self.add(&name, conv, x, shape);
        if value != 0.0 {
            y = self.add(&format!("{name}/unshift"), affine(value), y, shape);
        }
        Ok(y)
    }

    /// Adds a one-input node `name` of `op` whose output has `shape`.
    fn add(&mut self, name: &str, op: Op, x: TensorId, shape: Shape) -> TensorId {
        let t = self.g.add_tensor(name, shape);
        self.g.add_node(Node {
            name: name.to_string(),
            source_type: "Pad".into(),
            op,
            inputs: vec![x],
            outputs: vec![t],
        });
        t
    }

    fn node(&mut self, index: usize, node: &NodeProto, opset: i64) -> Result<()> {
        let label = if node.name.is_empty() {
            format!("{}#{index}", node.op_type)
        } else {
            node.name.clone()
        };
        let err = |reason: String| CompileError::layer(label.clone(), node.op_type.clone(), reason);
        if !(node.domain.is_empty() || node.domain == "ai.onnx") {
            return Err(err(format!(
                "operator domain `{}` is not supported (only the default ONNX domain)",
                node.domain
            )));
        }
        let mut inputs = Vec::with_capacity(node.input.len());
        for name in &node.input {
            if name.is_empty() {
                inputs.push(None);
                continue;
            }
            let v = self.values.get(name).cloned().ok_or_else(|| {
                err(format!(
                    "input `{name}` is not a graph input, an initializer or the output of an \
                     earlier node"
                ))
            })?;
            inputs.push(Some(v));
        }
        // Trailing absent inputs are the same as fewer inputs.
        while matches!(inputs.last(), Some(None)) {
            inputs.pop();
        }
        // An `If` whose condition is known when compiling (a shape test, an input bound to
        // a constant) is the branch it takes.
        if node.op_type == "If" {
            if let Some(Some(Value::Const(c))) = inputs.first() {
                let c = c.clone();
                return self.inline_if(&label, node, &c, opset);
            }
        }
        // A pending Pad read by an op that cannot fold it becomes a padding
        // convolution of its own.
        if !matches!(
            node.op_type.as_str(),
            "Conv" | "MaxPool" | "AveragePool" | "Pad" | "Identity" | "Dropout"
        ) {
            for v in inputs.iter_mut().flatten() {
                if let Value::Padded {
                    act,
                    pads,
                    value,
                    dims,
                } = v
                {
                    let t = self.materialize_pad(&label, act, *pads, *value, dims)?;
                    *v = Value::Act(Act {
                        t,
                        dims: dims.clone(),
                    });
                }
            }
        }
        let mut cx = NodeCx {
            node,
            label: label.clone(),
            opset,
            inputs,
        };
        // Shape and Size read dimensions only: a value computed on the CPU stays there.
        let outs = if !self.cpu_fallback || super::partition::reads_dims_only(&node.op_type) {
            ops::map(self, &cx)?
        } else if self.reads_integer_input(&cx)
            || self.stays_on_cpu(&cx)
            || self.completes_table(&cx)
        {
            self.cpu_node(&cx, None)?
        } else {
            // The hardware first; what it refuses goes to the CPU, and whatever the
            // attempt added is taken back.
            let snapshot = self.snapshot();
            let original = cx.inputs.clone();
            let mapped = self
                .materialize_inputs(&cx)
                .and_then(|inputs| {
                    cx.inputs = inputs;
                    ops::map(self, &cx)
                })
                .and_then(|outs| match self.refusal(snapshot.nodes()) {
                    Some(why) => Err(cx.err(why)),
                    None => Ok(outs),
                });
            match mapped {
                Ok(outs) => outs,
                Err(refusal) => {
                    self.restore(snapshot);
                    cx.inputs = original;
                    // A mapping that shares the node between the engines, else the CPU.
                    let snapshot = self.snapshot();
                    match ops::map_with_cpu(self, &cx) {
                        Some(Ok(outs)) => outs,
                        Some(Err(_)) | None => {
                            self.restore(snapshot);
                            self.cpu_node(&cx, Some(refusal))?
                        }
                    }
                }
            }
        };
        for (k, name) in node.output.iter().enumerate() {
            if name.is_empty() {
                continue;
            }
            let v = outs.get(k).cloned().unwrap_or_else(|| {
                Value::Unavailable(format!(
                    "output {k} of {} `{label}` is not supported",
                    node.op_type
                ))
            });
            if self.values.contains_key(name) {
                return Err(err(format!(
                    "output `{name}` is already defined (by an input, an initializer or an \
                     earlier node)"
                )));
            }
            self.values.insert(name.clone(), v);
        }
        Ok(())
    }

    /// The nodes of the branch an `If` takes on constant condition `cond`, as nodes of
    /// the graph; the `If`'s outputs are the branch's.
    fn inline_if(&mut self, label: &str, node: &NodeProto, cond: &Const, opset: i64) -> Result<()> {
        let err = |reason: String| CompileError::layer(label, "If", reason);
        let taken = match &cond.data {
            Data::F(v) if v.len() == 1 => v[0] != 0.0,
            Data::I(v) if v.len() == 1 => v[0] != 0,
            _ => {
                return Err(err(format!(
                    "the condition has {} elements; it must have one",
                    cond.len()
                )))
            }
        };
        let which = if taken { "then_branch" } else { "else_branch" };
        let branch = node
            .attribute
            .iter()
            .find(|a| a.name == which)
            .and_then(|a| a.g.as_ref())
            .ok_or_else(|| err(format!("no `{which}` graph")))?;
        if branch.output.len() != node.output.len() {
            return Err(err(format!(
                "`{which}` has {} outputs, the node {}",
                branch.output.len(),
                node.output.len()
            )));
        }
        for t in &branch.initializer {
            let c = tensor::from_proto(t)
                .map_err(|e| CompileError::layer(t.name.clone(), "initializer", e))?;
            if self.values.contains_key(&t.name) {
                return Err(err(format!("`{which}` redefines `{}`", t.name)));
            }
            self.values.insert(t.name.clone(), Value::Const(Rc::new(c)));
        }
        for (i, n) in branch.node.iter().enumerate() {
            self.node(i, n, opset)?;
        }
        for (out, b) in node.output.iter().zip(&branch.output) {
            if out.is_empty() {
                continue;
            }
            let v = self.values.get(&b.name).cloned().ok_or_else(|| {
                err(format!(
                    "`{which}` does not compute its output `{}`",
                    b.name
                ))
            })?;
            if self.values.contains_key(out) {
                return Err(err(format!("output `{out}` is already defined")));
            }
            if let Value::Cpu { part, .. } = &v {
                self.alias_cpu_value(*part, &b.name, out);
            }
            self.values.insert(out.clone(), v);
        }
        Ok(())
    }

    fn outputs(&mut self, graph: &GraphProto) -> Result<()> {
        if graph.output.is_empty() {
            return Err(CompileError::Network("the graph has no outputs".into()));
        }
        for vi in &graph.output {
            let err = |reason: String| CompileError::layer(vi.name.clone(), "graph output", reason);
            let act = match self.values.get(&vi.name) {
                None => return Err(err("no node produces it".into())),
                Some(Value::Act(a)) => a.clone(),
                Some(Value::Const(_)) => {
                    return Err(err(
                        "it is a constant (computed from initializers only); the IR has no \
                         constant outputs"
                            .into(),
                    ))
                }
                Some(Value::Padded {
                    act,
                    pads,
                    value,
                    dims,
                }) => {
                    let (act, pads, value, dims) = (act.clone(), *pads, *value, dims.clone());
                    let t = self.materialize_pad(&vi.name, &act, pads, value, &dims)?;
                    Act { t, dims }
                }
                Some(Value::Cpu { .. }) => self.cpu_output(&vi.name)?,
                Some(Value::Unavailable(r)) => return Err(err(r.clone())),
            };
            let t = if self.graph_input_tensors.contains(&act.t) || self.g.outputs.contains(&act.t)
            {
                // An output that is a graph input or another output: copy it.
                let shape = self.shape(act.t);
                let t = self.g.add_tensor(vi.name.clone(), shape);
                self.g.add_node(Node {
                    name: format!("{}/identity", vi.name),
                    source_type: "Identity".into(),
                    op: Op::Identity,
                    inputs: vec![act.t],
                    outputs: vec![t],
                });
                t
            } else {
                // The output aliases the tensor it was reshaped from: that tensor carries
                // the output's name.
                self.g.tensors[act.t.0].name = vi.name.clone();
                act.t
            };
            self.g.outputs.push(t);
        }
        Ok(())
    }
}
