//! CPU partitions (`--cpu-fallback`): ONNX nodes that no IR operation computes, gathered
//! into ONNX subgraphs that run on the CPU (tract, in `nvdla-runtime` and in the compiler's
//! reference), as ONNX Runtime hands its CPU provider what an accelerator's provider does
//! not take.
//!
//! Assignment, node by node in the model's order:
//! - a node whose activation inputs all come from the CPU stays there unless it is one of
//!   the operators that carry a network's arithmetic (convolutions and matrix products),
//!   so that a chain of reshapes and transposes does not bounce between the engines;
//! - every other node is mapped to the IR first; if the mapping refuses it, it goes to the
//!   CPU, and whatever the attempt added to the graph is taken back.
//!
//! A CPU node joins the open partition when every input it reads from outside the
//! partition was produced before the partition's place in the graph (otherwise the
//! partition would wait for itself); else a new partition opens at the end of the graph.
//! Values a partition computes stay inside it until a hardware node or a graph output
//! needs them: only then does the partition write them to memory (an output of the IR
//! node, laid out as any activation).

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use prost::Message;

use super::build::{ir_shape, Act, Builder, NodeCx, Value};
use super::proto::{
    attribute_type, data_type as dt, AttributeProto, Dimension, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorProto, TensorShapeProto, TensorTypeProto, TypeProto, ValueInfoProto,
};
use super::tensor::{fmt_dims, Const, Data};
use crate::error::{CompileError, Result};
use crate::ir::{CpuPartition, Node, Op, Shape, TensorId};
use crate::lower::table::{is_elementwise, single_source, value_sources, Source};

/// Operators that carry the arithmetic of a network: tried on the hardware even when their
/// inputs come from the CPU.
const HEAVY: &[&str] = &["Conv", "ConvTranspose", "Gemm", "MatMul"];

/// A partition being built.
#[derive(Debug, Default)]
pub(crate) struct Partition {
    /// Index of its IR node.
    node: usize,
    /// Its ONNX nodes, in order.
    nodes: Vec<NodeProto>,
    /// Values read from outside: ONNX name, dimensions, IR tensor.
    inputs: Vec<(String, Vec<usize>, TensorId)>,
    /// Inputs that are network inputs of integers, with their ONNX element type: the
    /// model declares them so, and the runtime casts the binary32 surface's whole
    /// numbers to it (`nvdla_umd::partition::eval`).
    casts: Vec<(String, i32)>,
    /// Constants it reads, by ONNX name.
    consts: Vec<(String, Rc<Const>)>,
    /// Values it writes to memory: ONNX name, dimensions, IR tensor.
    outputs: Vec<(String, Vec<usize>, TensorId)>,
}

/// The CPU side of the builder: the partitions and which IR tensors they write.
#[derive(Debug, Default)]
pub(crate) struct CpuSide {
    partitions: Vec<Partition>,
    /// IR tensor -> (partition, ONNX name) of the values partitions write.
    written: HashMap<TensorId, (usize, String)>,
    /// Values written for other partitions with their leading dimension as channels
    /// (`Builder::materialize`): no engine may read them.
    folded: std::collections::HashSet<TensorId>,
    /// Network inputs of integers and their ONNX element types (`Graph::integer_inputs`).
    pub(crate) integer_inputs: HashMap<TensorId, i32>,
}

/// ONNX element types of network inputs taken as integers (booleans as 0 and 1, an
/// attention mask): held as int16 in memory (the runtime refuses values outside it) and
/// read by CPU partitions only.
pub(crate) const INTEGER_INPUTS: &[i32] = &[
    dt::INT8,
    dt::UINT8,
    dt::INT16,
    dt::UINT16,
    dt::INT32,
    dt::INT64,
    dt::UINT32,
    dt::UINT64,
    dt::BOOL,
];

/// What [`Builder::snapshot`] keeps to take a failed mapping back.
pub(crate) struct Snapshot {
    nodes: usize,
    tensors: usize,
    values: HashMap<String, Value>,
    /// Per partition: its nodes, inputs, constants and outputs.
    partitions: Vec<[usize; 4]>,
    written: HashMap<TensorId, (usize, String)>,
}

/// Whether a node of type `op` reads only its input's dimensions (Shape and Size fold to
/// constants from them): it neither runs on the CPU nor has a CPU value written out.
pub(crate) fn reads_dims_only(op: &str) -> bool {
    matches!(op, "Shape" | "Size")
}

fn tensor_proto(name: &str, c: &Const) -> TensorProto {
    let mut t = TensorProto {
        name: name.to_string(),
        dims: c.dims.iter().map(|&d| d as i64).collect(),
        ..Default::default()
    };
    match &c.data {
        Data::F(v) => {
            t.data_type = dt::FLOAT;
            t.float_data = v.clone();
        }
        Data::I(v) => {
            // Integer constants keep their type (shapes are INT64, indices INT32 or INT64).
            t.data_type = c.dtype;
            match c.dtype {
                dt::INT64 => t.int64_data = v.clone(),
                dt::UINT32 | dt::UINT64 => t.uint64_data = v.iter().map(|&x| x as u64).collect(),
                _ => t.int32_data = v.iter().map(|&x| x as i32).collect(),
            }
        }
    }
    t
}

fn value_info(name: &str, dims: Option<&[usize]>) -> ValueInfoProto {
    ValueInfoProto {
        name: name.to_string(),
        r#type: dims.map(|d| TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: dt::FLOAT,
                shape: Some(TensorShapeProto {
                    dim: d
                        .iter()
                        .map(|&v| Dimension {
                            dim_value: Some(v as i64),
                            dim_param: None,
                        })
                        .collect(),
                }),
            }),
        }),
    }
}

impl Partition {
    /// The partition as an ONNX model whose outputs are `outputs`.
    fn model(&self, opset: i64, outputs: &[&str]) -> Vec<u8> {
        ModelProto {
            ir_version: 8,
            producer_name: "nvdla-compiler".into(),
            producer_version: env!("CARGO_PKG_VERSION").into(),
            graph: Some(GraphProto {
                node: self.nodes.clone(),
                name: "cpu_partition".into(),
                initializer: self
                    .consts
                    .iter()
                    .map(|(n, c)| tensor_proto(n, c))
                    .collect(),
                input: self
                    .inputs
                    .iter()
                    .map(|(n, d, _)| {
                        let mut v = value_info(n, Some(d));
                        if let Some((_, to)) = self.casts.iter().find(|(c, _)| c == n) {
                            if let Some(t) = v.r#type.as_mut().and_then(|t| t.tensor_type.as_mut())
                            {
                                t.elem_type = *to;
                            }
                        }
                        v
                    })
                    .collect(),
                output: outputs.iter().map(|n| value_info(n, None)).collect(),
                value_info: Vec::new(),
            }),
            opset_import: vec![OperatorSetIdProto {
                domain: String::new(),
                version: opset,
            }],
        }
        .encode_to_vec()
    }

    fn input_dims(&self) -> Vec<Vec<usize>> {
        self.inputs.iter().map(|(_, d, _)| d.clone()).collect()
    }
}

impl Snapshot {
    /// Nodes of the graph when it was taken.
    pub(crate) fn nodes(&self) -> usize {
        self.nodes
    }
}

impl Builder {
    /// Why the build compiled for cannot take one of the IR nodes from index `first` on.
    pub(crate) fn refusal(&self, first: usize) -> Option<String> {
        let t = self.target.as_ref()?;
        self.g.nodes[first..].iter().find_map(|n| {
            crate::capability::refusal(&self.g, n, t).map(|r| format!("{}: {r}", n.name))
        })
    }

    /// What a failed hardware mapping must take back.
    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot {
            nodes: self.g.nodes.len(),
            tensors: self.g.tensors.len(),
            values: self.values.clone(),
            partitions: self
                .cpu
                .partitions
                .iter()
                .map(|p| {
                    [
                        p.nodes.len(),
                        p.inputs.len(),
                        p.consts.len(),
                        p.outputs.len(),
                    ]
                })
                .collect(),
            written: self.cpu.written.clone(),
        }
    }

    /// Takes back everything added since `s`.
    pub(crate) fn restore(&mut self, s: Snapshot) {
        self.g.nodes.truncate(s.nodes);
        self.g.tensors.truncate(s.tensors);
        self.values = s.values;
        self.cpu.written = s.written;
        self.cpu.folded.retain(|t| t.0 < s.tensors);
        self.cpu.partitions.truncate(s.partitions.len());
        for (p, [nodes, inputs, consts, outputs]) in
            self.cpu.partitions.iter_mut().zip(s.partitions)
        {
            p.nodes.truncate(nodes);
            p.inputs.truncate(inputs);
            let kept = &p.inputs;
            p.casts.retain(|(n, _)| kept.iter().any(|(k, _, _)| k == n));
            p.consts.truncate(consts);
            p.outputs.truncate(outputs);
            if let Some(node) = self.g.nodes.get_mut(p.node) {
                node.inputs = p.inputs.iter().map(|i| i.2).collect();
                node.outputs = p.outputs.iter().map(|o| o.2).collect();
            }
        }
    }

    /// Value `name` in memory: written by its partition if it was computed on the CPU.
    pub(crate) fn write_out(&mut self, label: &str, name: &str) -> Result<Act> {
        self.materialize(label, name, false, false)
    }

    /// Has partition `part` write value `name` (computed on the CPU) to memory: it becomes
    /// an activation the hardware can read.
    /// A value only CPUs read (`for_cpu`: a graph output that no engine reads, a value
    /// another partition reads) keeps a leading dimension other than the network's batch as
    /// channels (a sequence model's `[T, 1, classes]`, an LSTM's steps read by the next
    /// partition): the surface holds its elements in the same order, and an engine may
    /// not read it afterwards (it would take the steps for channels).
    /// A graph output of integers (`graph_output`: an `ArgMax`, a mask,
    /// `NonMaxSuppression`'s indices) is written as binary32 (`Graph::integer_outputs`),
    /// cast inside the partition; any other integer value stays on the CPU.
    fn materialize(
        &mut self,
        label: &str,
        name: &str,
        for_cpu: bool,
        graph_output: bool,
    ) -> Result<Act> {
        let Some(Value::Cpu { part, dims, float }) = self.values.get(name).cloned() else {
            return match self.values.get(name) {
                Some(Value::Act(a)) if !for_cpu && self.cpu.folded.contains(&a.t) => {
                    Err(CompileError::layer(
                        label,
                        "CpuPartition",
                        format!(
                            "`{name}` ({}) leaves its CPU partition with its leading dimension as \
                             channels, for the CPU: an engine cannot read it as one item",
                            fmt_dims(&a.dims)
                        ),
                    ))
                }
                Some(Value::Act(a)) => Ok(a.clone()),
                _ => Err(CompileError::layer(
                    label,
                    "CpuPartition",
                    format!("no value `{name}`"),
                )),
            };
        };
        let err = |r: String| CompileError::layer(label, "CpuPartition", r);
        if dims.len() > MAX_RANK {
            return Err(err(format!(
                "`{name}` has {} dimensions; a tensor leaving a CPU partition has at most \
                 {MAX_RANK}",
                dims.len()
            )));
        }
        let integer = !float;
        if integer && !graph_output {
            return Err(err(format!(
                "`{name}` is a tensor of integers computed on the CPU: NVDLA feature data is \
                 fp16 or int8"
            )));
        }
        let mut shape = ir_shape(&dims).map_err(|e| err(format!("`{name}`: {e}")))?;
        let batch = self.g.inputs.first().map_or(1, |&i| self.g.shape(i).n);
        if !for_cpu && shape.n != batch {
            return Err(err(format!(
                "`{name}` ({}) would reach the engines as {} items where the network has \
                 {batch}: a batch runs as one pass per item",
                fmt_dims(&dims),
                shape.n
            )));
        }
        let folded = for_cpu && shape.n != batch && batch == 1;
        if folded {
            shape = Shape::new(1, shape.n * shape.c, shape.h, shape.w);
        }
        let t = self.g.add_tensor(name, shape);
        if folded {
            self.cpu.folded.insert(t);
        }
        let p = &mut self.cpu.partitions[part];
        // An integer output leaves as FLOAT: a `Cast` at the end of the partition.
        let written = if integer {
            let cast = format!("{name}/as_float");
            p.nodes.push(NodeProto {
                input: vec![name.to_string()],
                output: vec![cast.clone()],
                name: cast.clone(),
                op_type: "Cast".into(),
                attribute: vec![AttributeProto {
                    name: "to".into(),
                    i: i64::from(dt::FLOAT),
                    r#type: attribute_type::INT,
                    ..Default::default()
                }],
                ..Default::default()
            });
            self.g.integer_outputs.push(t);
            cast
        } else {
            name.to_string()
        };
        p.outputs.push((written.clone(), dims.clone(), t));
        self.g.nodes[p.node].outputs.push(t);
        self.cpu.written.insert(t, (part, written));
        let a = Act { t, dims };
        self.values.insert(name.to_string(), Value::Act(a.clone()));
        Ok(a)
    }

    /// The inputs of `cx` with every value computed on the CPU written to memory.
    pub(crate) fn materialize_inputs(&mut self, cx: &NodeCx<'_>) -> Result<Vec<Option<Value>>> {
        let mut out = cx.inputs.clone();
        for (k, v) in out.iter_mut().enumerate() {
            match v {
                Some(Value::Cpu { .. }) => {
                    *v = Some(Value::Act(self.materialize(
                        &cx.label,
                        cx.in_name(k),
                        false,
                        false,
                    )?));
                }
                // Written for the CPU alone: refused (see `materialize`).
                Some(Value::Act(a)) if self.cpu.folded.contains(&a.t) => {
                    return Err(cx.err(format!(
                        "input `{}` ({}) leaves its CPU partition with its leading dimension \
                         as channels, for the CPU: an engine cannot read it as one item",
                        cx.in_name(k),
                        fmt_dims(&a.dims)
                    )));
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// The graph output `name` as an activation (written by its partition if it was
    /// computed on the CPU).
    pub(crate) fn cpu_output(&mut self, name: &str) -> Result<Act> {
        self.materialize(name, name, true, true)
    }

    /// Whether the node of `cx` stays on the CPU without trying the hardware: every
    /// activation it reads comes from the CPU, and it is not one of the operators that
    /// carry a network's arithmetic, so that a chain of reshapes and transposes does not
    /// bounce between the engines. Values a partition computes as a table
    /// ([`Self::table_value`]) count as the hardware's: a split or a pooling after a SiLU
    /// stays on the engines.
    pub(crate) fn stays_on_cpu(&self, cx: &NodeCx<'_>) -> bool {
        if reads_dims_only(cx.op()) || HEAVY.contains(&cx.op()) {
            return false;
        }
        let mut acts = cx
            .inputs
            .iter()
            .enumerate()
            .filter_map(|(k, v)| Some((k, v.as_ref()?)))
            .filter(|(_, v)| !matches!(v, Value::Const(_)))
            .peekable();
        acts.peek().is_some()
            && acts.all(|(k, v)| match v {
                Value::Cpu { part, .. } => !self.table_value(*part, cx.in_name(k)),
                _ => false,
            })
    }

    /// The sources of the values partition `part` computes, if this build computes
    /// element-wise partitions as tables (int8 with a CDP).
    fn table_sources(&self, part: usize) -> Option<HashMap<&str, Source>> {
        let t = self.target.as_ref()?;
        if t.precision != crate::target::Precision::Int8 || !t.hw.features.cdp {
            return None;
        }
        let p = self.cpu.partitions.get(part)?;
        Some(value_sources(
            &p.nodes,
            p.consts
                .iter()
                .filter(|(_, c)| c.dims.iter().product::<usize>() == 1)
                .map(|(n, _)| n.as_str()),
            p.inputs.iter().map(|(n, _, _)| n.as_str()),
        ))
    }

    /// Whether value `name` of partition `part` is an element-wise function of one of its
    /// inputs on a build that computes such values as tables (`lower/table.rs`).
    fn table_value(&self, part: usize, name: &str) -> bool {
        self.table_sources(part)
            .is_some_and(|s| matches!(s.get(name), Some(Source::Of(_))))
    }

    /// Whether the element-wise node of `cx` completes a function of one tensor that the
    /// open partition computes: it reads that tensor (the partition's input `X`) or values
    /// the partition computes from `X` alone, at least one of the latter, and scalars. It
    /// then joins the partition, which an int8 build with a CDP computes as one table
    /// (`lower/table.rs`): SiLU's `x * sigmoid(x)` as one lookup instead of a lookup and a
    /// product of two tensors on the SDP.
    pub(crate) fn completes_table(&self, cx: &NodeCx<'_>) -> bool {
        if !is_elementwise(cx.op()) || cx.node.output.iter().filter(|o| !o.is_empty()).count() != 1
        {
            return false;
        }
        let Some(open) = self.cpu.partitions.len().checked_sub(1) else {
            return false;
        };
        let Some(sources) = self.table_sources(open) else {
            return false;
        };
        let p = &self.cpu.partitions[open];
        let mut computed = false;
        let mut operands = Vec::new();
        for (k, v) in cx.inputs.iter().enumerate() {
            let Some(v) = v else { continue };
            operands.push(match v {
                Value::Const(c) if c.dims.iter().product::<usize>() == 1 => Some(Source::Scalar),
                Value::Cpu { part, .. } if *part == open => {
                    computed = true;
                    sources.get(cx.in_name(k)).copied()
                }
                Value::Act(a) => p.inputs.iter().position(|i| i.2 == a.t).map(Source::Of),
                _ => None,
            });
        }
        computed
            && single_source(operands).is_some()
            && cx
                .inputs
                .iter()
                .all(|v| v.as_ref().is_none_or(|v| self.readable_by(open, v)))
    }

    /// Whether input `v` of a CPU node can be read by partition `open`.
    fn readable_by(&self, open: usize, v: &Value) -> bool {
        let pos = self.cpu.partitions[open].node;
        match v {
            Value::Const(_) | Value::Cpu { .. } => true,
            Value::Act(a) => match self.cpu.written.get(&a.t) {
                // Read inside the partition (reshaped if it was reshaped on the way).
                Some((p, _)) if *p == open => true,
                _ => self.g.producer(a.t).is_none_or(|n| n.0 < pos),
            },
            Value::Padded { .. } | Value::Unavailable(_) => false,
        }
    }

    /// Maps the node of `cx` to the CPU: it joins the open partition or opens one; its
    /// outputs are values computed on the CPU. `refusal` is why the hardware did not take
    /// it, reported if the CPU cannot run it either.
    pub(crate) fn cpu_node(
        &mut self,
        cx: &NodeCx<'_>,
        refusal: Option<CompileError>,
    ) -> Result<Vec<Value>> {
        let fail = |why: String| -> CompileError {
            match &refusal {
                Some(CompileError::Layer {
                    layer,
                    layer_type,
                    reason,
                }) => CompileError::layer(
                    layer.clone(),
                    layer_type.clone(),
                    format!("{reason}; on the CPU: {why}"),
                ),
                _ => CompileError::layer(cx.label.clone(), cx.op().to_string(), why),
            }
        };
        for (k, v) in cx.inputs.iter().enumerate() {
            match v {
                Some(Value::Unavailable(r)) => {
                    return Err(fail(format!("input `{}`: {r}", cx.in_name(k))))
                }
                Some(Value::Padded { .. }) => {
                    return Err(fail(format!(
                        "input `{}` is a pending Pad that only Conv and pooling fold",
                        cx.in_name(k)
                    )))
                }
                _ => {}
            }
        }
        if let Some(why) = self.beyond_tract(cx) {
            return Err(fail(why));
        }
        let open = self.cpu.partitions.len().checked_sub(1);
        let joins = open.is_some_and(|o| {
            cx.inputs
                .iter()
                .all(|v| v.as_ref().is_none_or(|v| self.readable_by(o, v)))
        });
        let part = match (open, joins) {
            (Some(o), true) => o,
            _ => {
                let node = self.g.add_node(Node {
                    name: format!("cpu_partition{}", self.cpu.partitions.len()),
                    source_type: "CpuPartition".into(),
                    op: Op::CpuPartition(Arc::new(CpuPartition::default())),
                    inputs: Vec::new(),
                    outputs: Vec::new(),
                });
                self.cpu.partitions.push(Partition {
                    node: node.0,
                    ..Default::default()
                });
                self.cpu.partitions.len() - 1
            }
        };
        let mut proto = cx.node.clone();
        for (k, v) in cx.inputs.iter().enumerate() {
            let Some(v) = v else { continue };
            let name = cx.in_name(k).to_string();
            match v {
                Value::Const(c) => {
                    let p = &mut self.cpu.partitions[part];
                    if !p.consts.iter().any(|(n, _)| *n == name) {
                        p.consts.push((name, c.clone()));
                    }
                }
                Value::Cpu { part: q, .. } if *q == part => {}
                Value::Cpu { .. } => {
                    let a = self.materialize(&cx.label, &name, true, false)?;
                    self.bind_input(part, &name, a);
                }
                Value::Act(a) => match self.cpu.written.get(&a.t).cloned() {
                    Some((q, n)) if q == part && n == name => {}
                    Some((q, n)) if q == part => {
                        // The value this partition wrote, reshaped on the way back: reshape
                        // it inside the partition instead of reading it back.
                        let alias = format!("{name}/cpu_reshape");
                        let shape = format!("{alias}/shape");
                        let p = &mut self.cpu.partitions[part];
                        let dims: Vec<i64> = a.dims.iter().map(|&d| d as i64).collect();
                        p.consts.push((
                            shape.clone(),
                            Rc::new(Const {
                                dtype: dt::INT64,
                                dims: vec![dims.len()],
                                data: Data::I(dims),
                            }),
                        ));
                        p.nodes.push(NodeProto {
                            input: vec![n, shape],
                            output: vec![alias.clone()],
                            name: alias.clone(),
                            op_type: "Reshape".into(),
                            ..Default::default()
                        });
                        proto.input[k] = alias;
                    }
                    _ if a.dims.len() > MAX_RANK => {
                        return Err(fail(format!(
                            "input `{name}` has {} dimensions; a tensor entering a CPU \
                             partition has at most {MAX_RANK}",
                            a.dims.len()
                        )))
                    }
                    _ => self.bind_input(part, &name, a.clone()),
                },
                _ => unreachable!("refused above"),
            }
        }
        self.cpu.partitions[part].nodes.push(proto);
        // The node's output dimensions, as tract infers them from the partition so far.
        let outs: Vec<&str> = cx
            .node
            .output
            .iter()
            .filter(|n| !n.is_empty())
            .map(String::as_str)
            .collect();
        let p = &self.cpu.partitions[part];
        let model = p.model(cx.opset, &outs);
        let facts = nvdla_umd::partition::output_facts(&model, &p.input_dims()).map_err(|e| {
            self.cpu.partitions[part].nodes.pop();
            fail(format!("tract cannot run it: {e}"))
        })?;
        let mut facts = facts.into_iter();
        Ok(cx
            .node
            .output
            .iter()
            .map(|n| {
                if n.is_empty() {
                    return Value::Unavailable("an absent output".into());
                }
                match facts.next() {
                    Some((dims, float)) => Value::Cpu { part, dims, float },
                    None => Value::Unavailable(format!("tract gives no shape for `{n}`")),
                }
            })
            .collect())
    }

    /// Why tract, which types the node's outputs, would still fail to run it (a limit of
    /// its evaluation that typing does not show), if it would.
    fn beyond_tract(&self, cx: &NodeCx<'_>) -> Option<String> {
        let op = cx.op();
        if op == "Dropout" {
            let nonzero = |k: usize| match cx.inputs.get(k) {
                Some(Some(Value::Const(c))) => c.to_f32().iter().any(|&v| v != 0.0),
                Some(Some(_)) => true,
                _ => false,
            };
            // The ratio defaults to 0.5; training mode to false.
            let ratio = cx.inputs.get(1).is_none_or(|v| v.is_none()) || nonzero(1);
            if ratio && nonzero(2) {
                return Some("Dropout in training mode (random) is not run".into());
            }
        }
        if op.starts_with("Reduce") {
            let boolean = cx.inputs.iter().flatten().any(|v| {
                matches!(v, Value::Act(a)
                    if self.cpu.integer_inputs.get(&a.t) == Some(&dt::BOOL))
            });
            if boolean {
                return Some(format!(
                    "{op} of booleans is not run (tract reduces numbers)"
                ));
            }
        }
        None
    }

    /// Makes `a` (ONNX value `name`) an input of partition `part`.
    fn bind_input(&mut self, part: usize, name: &str, a: Act) {
        let p = &mut self.cpu.partitions[part];
        if p.inputs.iter().any(|(n, _, _)| n == name) {
            return;
        }
        if let Some(&to) = self.cpu.integer_inputs.get(&a.t) {
            p.casts.push((name.to_string(), to));
        }
        p.inputs.push((name.to_string(), a.dims, a.t));
        self.g.nodes[p.node].inputs.push(a.t);
    }

    /// Marks network input `t` as holding a leading dimension other than the batch as
    /// channels: engines refuse it, CPU partitions read it.
    pub(crate) fn fold_input(&mut self, t: TensorId) {
        self.cpu.folded.insert(t);
    }

    /// Makes `to` a name of value `from`, which partition `part` computes (an `If`'s output
    /// is its branch's): an `Identity` in the partition.
    pub(crate) fn alias_cpu_value(&mut self, part: usize, from: &str, to: &str) {
        self.cpu.partitions[part].nodes.push(NodeProto {
            input: vec![from.to_string()],
            output: vec![to.to_string()],
            name: format!("{to}/alias"),
            op_type: "Identity".into(),
            ..Default::default()
        });
    }

    /// Whether the node of `cx` reads a network input of integers: it runs on the CPU.
    pub(crate) fn reads_integer_input(&self, cx: &NodeCx<'_>) -> bool {
        cx.inputs
            .iter()
            .flatten()
            .any(|v| matches!(v, Value::Act(a) if self.cpu.integer_inputs.contains_key(&a.t)))
    }

    /// Gives every partition its model; a partition that writes nothing is dropped.
    pub(crate) fn finish_partitions(&mut self, opset: i64) -> Result<()> {
        let mut dead = Vec::new();
        for p in &self.cpu.partitions {
            if p.outputs.is_empty() {
                dead.push(p.node);
                continue;
            }
            let names: Vec<&str> = p.outputs.iter().map(|o| o.0.as_str()).collect();
            let model = p.model(opset, &names);
            let input_dims = p.input_dims();
            // The dimensions tract gives must be the ones the graph was built with.
            let facts = nvdla_umd::partition::output_facts(&model, &input_dims)
                .map_err(|e| CompileError::Network(format!("CPU partition {}: {e}", p.node)))?;
            for ((name, dims, _), (got, _)) in p.outputs.iter().zip(&facts) {
                if dims != got {
                    return Err(CompileError::Network(format!(
                        "CPU partition output `{name}`: {} when built, {} now",
                        fmt_dims(dims),
                        fmt_dims(got)
                    )));
                }
            }
            self.g.nodes[p.node].op = Op::CpuPartition(Arc::new(CpuPartition {
                model,
                input_dims,
                output_dims: p.outputs.iter().map(|o| o.1.clone()).collect(),
                ops: p.nodes.iter().map(|n| n.op_type.clone()).collect(),
            }));
        }
        if !dead.is_empty() {
            let mut i = 0;
            self.g.nodes.retain(|_| {
                i += 1;
                !dead.contains(&(i - 1))
            });
        }
        Ok(())
    }
}

/// Most dimensions a boundary tensor may have (the runtime's descriptor holds six).
pub(crate) const MAX_RANK: usize = nvdla_umd::partition::MAX_RANK;
