//! Element-wise CPU partitions as CDP table lookups (int8).
//!
//! A partition whose every output is an element-wise function of one of its inputs (SiLU's
//! `x * sigmoid(x)`, GELU's `0.5 x (1 + erf(x / sqrt 2))`, Mish, a lone sigmoid on a build
//! without the SDP's lookup table) maps 256 int8 values to 256 int8 values, so in int8 it
//! is a table of 256 entries. The CDP computes it: with `SQSUM_BYPASS` the lookup's input is
//! the converted element itself instead of the square sum over a channel window, and with
//! `MUL_BYPASS` the table's entry is the output instead of being multiplied by the element
//! (hwarch "Channel Data Processor"; the C model's `NV_NVDLA_cdp.cpp`, which the VP's
//! `engines/cdp.rs` follows). The input converter passes the int8 value through
//! unchanged, the LO table holds one entry per value (index select 0, no interpolation),
//! and the output converter passes the entry through. Each entry is the partition itself
//! (tract, the runtime's CPU engine) evaluated on the value the runtime would give it, and
//! rounded as the runtime rounds: outputs are the bytes the CPU partition writes.
//!
//! nv_small has a CDP but no SDP lookup table, so its SiLUs and sigmoids stay on NVDLA
//! instead of each making a CPU partition and a task boundary. A network output that
//! nothing else reads stays on the CPU, which writes it in half precision
//! (`lower/cpu.rs`).

use super::{layer_err, Lowering};
use crate::engine::*;
use crate::error::Result;
use crate::frontend::onnx::proto::{self, NodeProto, TensorProto};
use crate::ir::{Activation, CpuPartition, Node};
use crate::target::Precision;
use nvdla_umd::emu::{round_saturate_i8, FallbackFn};
use std::collections::HashMap;

/// ONNX operators each of whose output elements depends only on the same element of each
/// input (with numpy broadcasting of single-element constants).
const ELEMENTWISE: &[&str] = &[
    "Abs",
    "Acos",
    "Acosh",
    "Add",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "Ceil",
    "Celu",
    "Clip",
    "Cos",
    "Cosh",
    "Div",
    "Elu",
    "Erf",
    "Exp",
    "Floor",
    "Gelu",
    "HardSigmoid",
    "HardSwish",
    "Identity",
    "LeakyRelu",
    "Log",
    "Max",
    "Mean",
    "Min",
    "Mish",
    "Mul",
    "Neg",
    "Pow",
    "PRelu",
    "Reciprocal",
    "Relu",
    "Round",
    "Selu",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Softplus",
    "Softsign",
    "Sqrt",
    "Sub",
    "Sum",
    "Tan",
    "Tanh",
    "ThresholdedRelu",
];

/// What a value of a partition is, as far as the analysis goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Source {
    /// A single-element constant.
    Scalar,
    /// An element-wise function of the partition's input `k`.
    Of(usize),
}

fn elements(t: &TensorProto) -> i64 {
    t.dims.iter().product()
}

/// What each value of a partition is ([`Source`]): its `nodes` in order, the names of its
/// single-element constants and of its inputs. Values that are neither (outputs of other
/// operators, products of two inputs, larger constants) are absent.
pub(crate) fn value_sources<'a>(
    nodes: &'a [NodeProto],
    scalars: impl IntoIterator<Item = &'a str>,
    inputs: impl IntoIterator<Item = &'a str>,
) -> HashMap<&'a str, Source> {
    let mut values: HashMap<&str, Source> =
        scalars.into_iter().map(|n| (n, Source::Scalar)).collect();
    for (k, name) in inputs.into_iter().enumerate() {
        values.entry(name).or_insert(Source::Of(k));
    }
    for n in nodes {
        let outs: Vec<&String> = n.output.iter().filter(|o| !o.is_empty()).collect();
        if outs.len() != 1 || !n.domain.is_empty() {
            continue;
        }
        let src = if n.op_type == "Constant" {
            match n.attribute.iter().find(|a| a.name == "value") {
                Some(a) if a.t.as_ref().map(elements) == Some(1) => Some(Source::Scalar),
                _ => None,
            }
        } else if ELEMENTWISE.contains(&n.op_type.as_str()) {
            single_source(
                n.input
                    .iter()
                    .filter(|i| !i.is_empty())
                    .map(|i| values.get(i.as_str()).copied()),
            )
        } else {
            None
        };
        match src {
            Some(s) => values.insert(outs[0], s),
            None => values.remove(outs[0].as_str()),
        };
    }
    values
}

/// The input an element-wise operator's result is a function of, given what its operands
/// are (`None` for an operand that is neither a scalar nor such a function): one input for
/// all of them, or nothing.
pub(crate) fn single_source(operands: impl IntoIterator<Item = Option<Source>>) -> Option<Source> {
    let mut of = None;
    for s in operands {
        match s? {
            Source::Scalar => {}
            Source::Of(k) if of.is_none() || of == Some(k) => of = Some(k),
            Source::Of(_) => return None,
        }
    }
    of.map(Source::Of)
}

/// Whether ONNX operator `op` is element-wise ([`ELEMENTWISE`]).
pub(crate) fn is_elementwise(op: &str) -> bool {
    ELEMENTWISE.contains(&op)
}

/// For each output of `part`, the input it is an element-wise function of, if every
/// output is one (through [`ELEMENTWISE`] operators and single-element constants) and has
/// that input's dimensions.
pub(crate) fn elementwise_sources(part: &CpuPartition) -> Option<Vec<usize>> {
    let model = proto::decode(&part.model).ok()?;
    let g = model.graph?;
    let values = value_sources(
        &g.node,
        g.initializer
            .iter()
            .filter(|t| elements(t) == 1)
            .map(|t| t.name.as_str()),
        g.input.iter().map(|v| v.name.as_str()),
    );
    let sources = g
        .output
        .iter()
        .map(|o| match values.get(o.name.as_str())? {
            &Source::Of(k) => Some(k),
            Source::Scalar => None,
        })
        .collect::<Option<Vec<_>>>()?;
    let same_dims = sources.iter().enumerate().all(|(o, &k)| {
        matches!((part.output_dims.get(o), part.input_dims.get(k)), (Some(a), Some(b)) if a == b)
    });
    (sources.len() == part.output_dims.len() && same_dims).then_some(sources)
}

/// First input value the table's LO entries start below: entry `i` holds the output for
/// `q = TABLE_START + i`, `q` in `-128..=127` at entries 1 to 256. The CDP takes an input
/// at the start itself as below the table (`d = x - start <= 0`), and the last entry's
/// input (127) as past its end, where a zero slope gives the last entry.
const TABLE_START: i32 = -129;

/// The int8 output the runtime writes for the value `v` at scale `s` (ties to even,
/// saturated, NaN as 0: `nvdla_umd::partition`).
fn quantize(v: f32, s: f32) -> i16 {
    let q = f64::from(v) / f64::from(s);
    if q.is_nan() {
        0
    } else {
        q.round_ties_even().clamp(-128.0, 127.0) as i16
    }
}

impl Lowering<'_> {
    /// An element-wise partition as CDP lookups, one per output, if this build and
    /// precision can (module docs); `false` leaves it to the CPU.
    pub(super) fn table_partition(&mut self, n: &Node, part: &CpuPartition) -> Result<bool> {
        let g = self.g;
        if self.t.precision != Precision::Int8 || !self.t.hw.features.cdp {
            return Ok(false);
        }
        let Some(sources) = elementwise_sources(part) else {
            return Ok(false);
        };
        if n.outputs
            .iter()
            .any(|&t| g.outputs.contains(&t) && g.consumers(t).is_empty())
        {
            return Ok(false);
        }
        let inputs = (0..n.inputs.len())
            .map(|k| self.input(n, k))
            .collect::<Result<Vec<_>>>()?;
        let outputs: Vec<SurfId> = n.outputs.iter().map(|&t| self.output_surface(t)).collect();
        for &id in inputs.iter().chain(&outputs) {
            if self.p.surface(id).precision != Precision::Int8
                || self.p.channel_scales(id).is_some()
            {
                return Ok(false);
            }
            self.require_scale(id)?;
        }
        // Every input takes the 256 values, each at its own scale, as the runtime reads
        // them (`f32::from(q) * scale`); each output is then its table.
        let values: Vec<Vec<f32>> = inputs
            .iter()
            .map(|&id| {
                let s = self.p.surface(id).scale;
                (-128i16..=127).map(|q| f32::from(q) * s).collect()
            })
            .collect();
        let feed: Vec<(Vec<usize>, &[f32])> = values.iter().map(|v| (vec![256], &v[..])).collect();
        let outs = nvdla_umd::partition::eval(&part.model, &feed).map_err(|e| {
            layer_err(
                n,
                format!("evaluating the element-wise partition for its tables: {e}"),
            )
        })?;
        for ((o, &dst), &k) in outputs.iter().enumerate().zip(&sources) {
            let ys = &outs
                .get(o)
                .filter(|(_, v)| v.len() == 256)
                .ok_or_else(|| {
                    layer_err(
                        n,
                        format!("output {o} of the partition is not element-wise"),
                    )
                })?
                .1;
            let s = self.p.surface(dst).scale;
            self.lookup(n, inputs[k], dst, |q| quantize(ys[(q + 128) as usize], s));
        }
        Ok(true)
    }
}

impl Lowering<'_> {
    /// A CPU fallback function (`CpuUnary`) as a CDP lookup, if this build and precision
    /// can: entries as the runtime's emulator computes them (`f32` input `q * scale`,
    /// divided by the output's scale in `f32`, rounded to even and saturated:
    /// `nvdla_emu`'s `unary`). `false` leaves it to the CPU.
    pub(super) fn table_unary(
        &mut self,
        n: &Node,
        func: FallbackFn,
        alpha: f32,
        beta: f32,
    ) -> Result<bool> {
        if self.t.precision != Precision::Int8 || !self.t.hw.features.cdp {
            return Ok(false);
        }
        let g = self.g;
        let out = self.out_tensor(n)?;
        if g.outputs.contains(&out) && g.consumers(out).is_empty() {
            return Ok(false);
        }
        let src = self.input(n, 0)?;
        let dst = self.output_surface(out);
        for id in [src, dst] {
            if self.p.surface(id).precision != Precision::Int8
                || self.p.channel_scales(id).is_some()
            {
                return Ok(false);
            }
            self.require_scale(id)?;
        }
        let (si, so) = (self.p.surface(src).scale, self.p.surface(dst).scale);
        self.lookup(n, src, dst, |q| {
            let x = f32::from(q as i16) * si;
            i16::from(round_saturate_i8(func.apply(x, alpha, beta) / so))
        });
        Ok(true)
    }

    /// A sigmoid, tanh or erf on a build without the SDP's lookup table: a CDP lookup in
    /// int8, each entry the function of `q * scale` rounded to the output's step (ties to
    /// even, as the CPU would); refused otherwise.
    pub(super) fn table_activation(&mut self, n: &Node, a: &Activation) -> Result<()> {
        if self.t.precision != Precision::Int8 || !self.t.hw.features.cdp {
            return Err(layer_err(
                n,
                format!(
                    "{} has no SDP lookup table for {} (a CDP lookup needs int8)",
                    self.t.hw.name,
                    n.op.name()
                ),
            ));
        }
        let f = match a {
            Activation::Sigmoid => crate::sdp::LutFn::Sigmoid,
            Activation::Tanh => crate::sdp::LutFn::Tanh,
            _ => crate::sdp::LutFn::Erf,
        };
        let src = self.input(n, 0)?;
        let dst = self.output_surface(self.out_tensor(n)?);
        for id in [src, dst] {
            if self.p.channel_scales(id).is_some() {
                return Err(layer_err(
                    n,
                    "a CDP lookup reads and writes one scale per tensor",
                ));
            }
        }
        let (si, so) = (self.require_scale(src)?, self.require_scale(dst)?);
        self.lookup(n, src, dst, |q| {
            let y = f.eval(f64::from(q) * si) / so;
            if y.is_nan() {
                0
            } else {
                y.round_ties_even().clamp(-128.0, 127.0) as i16
            }
        });
        Ok(())
    }

    /// One CDP lookup from `src` to `dst` (int8): `entry(q)` is the output for the input
    /// `q` in `-128..=127`.
    fn lookup(&mut self, n: &Node, src: SurfId, dst: SurfId, entry: impl Fn(i32) -> i16) {
        let table = crate::lut::int8_linear(TABLE_START, 0, |x| entry((x as i32).clamp(-128, 127)));
        self.p.luts.push(table);
        let lut = self.p.luts.len() - 1;
        self.p.ops.push(HwOp {
            layers: vec![n.name.clone()],
            kind: HwOpKind::Cdp(CdpOp {
                src,
                dst,
                local_size: 3,
                lut,
                out_cvt: (1, 0),
                lookup: true,
            }),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontend::onnx::proto::{GraphProto, ModelProto, ValueInfoProto};
    use prost::Message;

    fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
        NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.to_string()],
            name: output.to_string(),
            op_type: op.to_string(),
            ..Default::default()
        }
    }

    fn vi(name: &str) -> ValueInfoProto {
        ValueInfoProto {
            name: name.to_string(),
            r#type: None,
        }
    }

    fn part(
        nodes: Vec<NodeProto>,
        consts: &[(&str, Vec<i64>)],
        ins: &[&str],
        outs: &[&str],
    ) -> CpuPartition {
        let model = ModelProto {
            graph: Some(GraphProto {
                node: nodes,
                initializer: consts
                    .iter()
                    .map(|(n, d)| TensorProto {
                        name: n.to_string(),
                        dims: d.clone(),
                        data_type: 1,
                        float_data: vec![0.5; d.iter().product::<i64>() as usize],
                        ..Default::default()
                    })
                    .collect(),
                input: ins.iter().map(|n| vi(n)).collect(),
                output: outs.iter().map(|n| vi(n)).collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        CpuPartition {
            model: model.encode_to_vec(),
            input_dims: vec![vec![1, 8, 4, 4]; ins.len()],
            output_dims: vec![vec![1, 8, 4, 4]; outs.len()],
            ops: Vec::new(),
        }
    }

    #[test]
    fn silu_and_gelu_are_elementwise_of_their_input() {
        let silu = part(
            vec![node("Sigmoid", &["x"], "s"), node("Mul", &["x", "s"], "y")],
            &[],
            &["x"],
            &["y"],
        );
        assert_eq!(elementwise_sources(&silu), Some(vec![0]));
        let gelu = part(
            vec![
                node("Div", &["x", "r2"], "a"),
                node("Erf", &["a"], "e"),
                node("Add", &["e", "one"], "b"),
                node("Mul", &["x", "b"], "c"),
                node("Mul", &["c", "half"], "y"),
            ],
            &[("r2", vec![]), ("one", vec![1]), ("half", vec![1, 1, 1, 1])],
            &["x"],
            &["y"],
        );
        assert_eq!(elementwise_sources(&gelu), Some(vec![0]));
        // Two SiLUs of two inputs in one partition: each output has its own input.
        let two = part(
            vec![
                node("Sigmoid", &["x1"], "s1"),
                node("Mul", &["x1", "s1"], "y1"),
                node("Sigmoid", &["x0"], "s0"),
                node("Mul", &["s0", "x0"], "y0"),
            ],
            &[],
            &["x0", "x1"],
            &["y0", "y1"],
        );
        assert_eq!(elementwise_sources(&two), Some(vec![0, 1]));
    }

    #[test]
    fn products_of_two_inputs_and_channel_constants_are_not() {
        let mixed = part(
            vec![node("Mul", &["x0", "x1"], "y")],
            &[],
            &["x0", "x1"],
            &["y"],
        );
        assert_eq!(elementwise_sources(&mixed), None);
        let per_channel = part(
            vec![node("Mul", &["x", "w"], "y")],
            &[("w", vec![1, 8, 1, 1])],
            &["x"],
            &["y"],
        );
        assert_eq!(elementwise_sources(&per_channel), None);
        let softmax = part(vec![node("Softmax", &["x"], "y")], &[], &["x"], &["y"]);
        assert_eq!(elementwise_sources(&softmax), None);
        let constant_output = part(
            vec![node("Neg", &["c"], "y")],
            &[("c", vec![])],
            &["x"],
            &["y"],
        );
        assert_eq!(elementwise_sources(&constant_output), None);
    }

    #[test]
    fn quantize_rounds_as_the_runtime() {
        assert_eq!(quantize(0.25, 0.5), 0);
        assert_eq!(quantize(0.75, 0.5), 2);
        assert_eq!(quantize(-100.0, 0.5), -128);
        assert_eq!(quantize(f32::NAN, 0.5), 0);
        assert_eq!(quantize(f32::INFINITY, 0.5), 127);
    }
}
