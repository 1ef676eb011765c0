//! Graph rewrites and checks around the lowering: batch and cube-size limits, element-wise
//! layers split into two-input ones, sum coefficients fitted to the SDP, and
//! concatenations placed into one surface.

use super::layer_err;
use crate::engine::*;
use crate::error::{CompileError, Result};
use crate::ir::{EltwiseKind, Graph, Node, Op, TensorId};
use crate::target::{Precision, Target};
use std::collections::HashMap;

/// Largest width, height and channel count of a data cube a DLA engine reads or writes
/// (13-bit `*_WIDTH`/`*_HEIGHT`/`*_CHANNEL` registers, programmed minus one).
const MAX_CUBE_DIM: u32 = 8192;

/// Every DLA operation's cubes fit the engines' 13-bit size registers.
pub(super) fn check_cube_limits(p: &Program) -> Result<()> {
    for op in &p.ops {
        if op.engine() == Engine::Cpu {
            continue;
        }
        let mut ids = op.reads();
        ids.extend(op.writes());
        for id in ids {
            let s = p.surface(id);
            if s.c > MAX_CUBE_DIM || s.h > MAX_CUBE_DIM || s.w > MAX_CUBE_DIM {
                return Err(CompileError::layer(
                    op.layers.join("+"),
                    format!("{:?}", op.engine()),
                    format!(
                        "cube `{}` is {}x{}x{} (CxHxW): NVDLA engines take at most {MAX_CUBE_DIM} \
                         channels, lines and pixels per line",
                        s.name, s.c, s.h, s.w
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Largest batch lowered (as that many passes over the network).
const MAX_BATCH: usize = 64;

/// A batch of N > 1 runs as N passes over the network, each on one item of every input
/// and output (every IR operation works per item): all network inputs must have the same
/// batch, and every tensor keeps it.
pub(super) fn check_batch(g: &Graph) -> Result<()> {
    let batch = g.inputs.first().map_or(1, |&i| g.shape(i).n);
    // In a batch, a tensor only partitions run on the whole batch read, itself a network
    // input or such a partition's output, may hold another number of items (a
    // concatenation along the batch axis): no pass ever reads one item of it.
    let cpu_only = |t: TensorId| {
        batch > 1
            && g.producer(t)
                .is_none_or(|p| super::batch_stages::runs_on_whole_batch(&g.nodes[p.0].op))
            && g.consumers(t)
                .iter()
                .all(|c| super::batch_stages::runs_on_whole_batch(&g.nodes[c.0].op))
    };
    for &i in &g.inputs {
        let s = g.shape(i);
        if !(1..=MAX_BATCH).contains(&s.n) || (s.n != batch && !cpu_only(i)) {
            return Err(CompileError::layer(
                g.tensor(i).name.clone(),
                "graph input",
                format!(
                    "batch {} ({s}): network inputs must share one batch of 1 to {MAX_BATCH} \
                     (run as that many passes; NVDLA surfaces hold one item)",
                    s.n
                ),
            ));
        }
    }
    for n in &g.nodes {
        for &o in &n.outputs {
            let s = g.shape(o);
            if s.n != batch && !(cpu_only(o) && (1..=MAX_BATCH).contains(&s.n)) {
                return Err(layer_err(
                    n,
                    format!(
                        "output `{}` has batch {} ({s}) where the network's inputs have {batch}: \
                         a batch runs as one pass per item, so no layer may mix items",
                        g.tensor(o).name,
                        s.n
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A running result of a split element-wise layer: `kind` over `inputs` (tensor,
/// coefficient).
pub(super) struct Partial {
    pub(super) tensor: TensorId,
    pub(super) kind: EltwiseKind,
    pub(super) inputs: Vec<(TensorId, f32)>,
}

/// Element-wise layers of more than two inputs as chains of two-input ones (the SDP
/// combines its input with one operand): `sum(c_i x_i) = (c_0 x_0 + c_1 x_1) + c_2 x_2 ...`.
/// Returns the graph and the running results it added.
pub(super) fn split_eltwise(g: &Graph) -> (Graph, Vec<Partial>) {
    let mut partials = Vec::new();
    let mut out = Graph {
        name: g.name.clone(),
        tensors: g.tensors.clone(),
        nodes: Vec::with_capacity(g.nodes.len()),
        inputs: g.inputs.clone(),
        integer_inputs: g.integer_inputs.clone(),
        integer_outputs: g.integer_outputs.clone(),
        outputs: g.outputs.clone(),
        notes: g.notes.clone(),
    };
    for n in &g.nodes {
        match &n.op {
            Op::Eltwise { kind, coeffs } if n.inputs.len() > 2 && n.outputs.len() == 1 => {
                let coeff = |i: usize| coeffs.get(i).copied().unwrap_or(1.0);
                let shape = g.shape(n.outputs[0]);
                let mut acc = n.inputs[0];
                let last = n.inputs.len() - 1;
                for i in 1..=last {
                    let t = if i == last {
                        n.outputs[0]
                    } else {
                        let t = out.add_tensor(format!("{}#{i}", n.name), shape);
                        partials.push(Partial {
                            tensor: t,
                            kind: *kind,
                            inputs: (0..=i).map(|j| (n.inputs[j], coeff(j))).collect(),
                        });
                        t
                    };
                    let c = if *kind == EltwiseKind::Sum {
                        vec![if i == 1 { coeff(0) } else { 1.0 }, coeff(i)]
                    } else {
                        vec![]
                    };
                    out.nodes.push(Node {
                        name: if i == last {
                            n.name.clone()
                        } else {
                            format!("{}#{i}", n.name)
                        },
                        source_type: n.source_type.clone(),
                        op: Op::Eltwise {
                            kind: *kind,
                            coeffs: c,
                        },
                        inputs: vec![acc, n.inputs[i]],
                        outputs: vec![t],
                    });
                    acc = t;
                }
            }
            _ => out.nodes.push(n.clone()),
        }
    }
    (out, partials)
}

/// Two-input sums with coefficients for an fp16 target without the SDP's Y stage. The
/// SDP adds its operand unscaled, so `c_m x_m + c_o x_o` takes a factor before the sum and
/// one after it (`c_o (x_m c_m / c_o + x_o)`): three stages. With X1 and X2 only (int8
/// folds the last factor into the output converter, fp16 has no such converter):
/// - one coefficient 1: that input becomes the operand (second), the other input's factor
///   goes before the sum: two stages;
/// - neither 1: the sum of `x_0 c_0 / c_1 + x_1` in two stages, then a Power layer scaling
///   by `c_1` (its own SDP operation when it does not fit).
pub(super) fn fit_coefficients(mut g: Graph, t: &Target) -> Graph {
    if t.precision != Precision::Fp16 || t.hw.features.sdp_ew {
        return g;
    }
    let nodes = std::mem::take(&mut g.nodes);
    let mut out = Graph {
        nodes: Vec::with_capacity(nodes.len()),
        ..g
    };
    for n in nodes {
        let (c0, c1) = match &n.op {
            Op::Eltwise {
                kind: EltwiseKind::Sum,
                coeffs,
            } if n.inputs.len() == 2 && coeffs.len() == 2 && n.outputs.len() == 1 => {
                (coeffs[0], coeffs[1])
            }
            _ => {
                out.nodes.push(n);
                continue;
            }
        };
        if c1 == 1.0 || c1 == 0.0 || c0 == 0.0 {
            out.nodes.push(n);
        } else if c0 == 1.0 {
            out.nodes.push(Node {
                op: Op::Eltwise {
                    kind: EltwiseKind::Sum,
                    coeffs: vec![c1, c0],
                },
                inputs: vec![n.inputs[1], n.inputs[0]],
                ..n
            });
        } else {
            let shape = out.shape(n.outputs[0]);
            let unscaled = out.add_tensor(format!("{}#unscaled", n.name), shape);
            out.nodes.push(Node {
                name: format!("{}#unscaled", n.name),
                source_type: n.source_type.clone(),
                op: Op::Eltwise {
                    kind: EltwiseKind::Sum,
                    coeffs: vec![c0 / c1, 1.0],
                },
                inputs: n.inputs.clone(),
                outputs: vec![unscaled],
            });
            out.nodes.push(Node {
                op: Op::Power {
                    power: 1.0,
                    scale: c1,
                    shift: 0.0,
                },
                inputs: vec![unscaled],
                ..n
            });
        }
    }
    out
}

/// Concatenations whose inputs cannot be written into one surface in place (an input
/// starting inside a memory atom, or read elsewhere too) become placements: each input
/// through a 1x1 convolution that puts its channels at their offset of the full width,
/// summed in turn by the SDP of the next placement. Returns the graph and, for each new
/// tensor, the concatenation output whose int8 scale it takes.
pub(super) fn place_concats(g: &Graph, t: &Target) -> (Graph, Vec<(TensorId, TensorId)>) {
    let views = concat_views(g, t);
    let mut out = Graph {
        name: g.name.clone(),
        tensors: g.tensors.clone(),
        nodes: Vec::with_capacity(g.nodes.len()),
        inputs: g.inputs.clone(),
        integer_inputs: g.integer_inputs.clone(),
        integer_outputs: g.integer_outputs.clone(),
        outputs: g.outputs.clone(),
        notes: g.notes.clone(),
    };
    let mut like = Vec::new();
    for n in &g.nodes {
        let viewable = n.inputs.iter().all(|i| views.contains_key(i));
        if !matches!(n.op, Op::Concat) || viewable || n.outputs.len() != 1 || n.inputs.len() < 2 {
            out.nodes.push(n.clone());
            continue;
        }
        let y = n.outputs[0];
        let shape = g.shape(y);
        let total = shape.c;
        let mut offset = 0usize;
        let mut acc: Option<TensorId> = None;
        let last = n.inputs.len() - 1;
        for (i, &x) in n.inputs.iter().enumerate() {
            let c = g.shape(x).c;
            let mut w = vec![0.0f32; total * c];
            for k in 0..c {
                w[(offset + k) * c + k] = 1.0;
            }
            offset += c;
            let placed = if i == 0 && last == 0 {
                y
            } else {
                let t = out.add_tensor(format!("{}#place{i}", g.tensor(y).name), shape);
                like.push((t, y));
                t
            };
            out.nodes.push(Node {
                name: format!("{}#place{i}", n.name),
                source_type: n.source_type.clone(),
                op: Op::Conv(crate::ir::Conv {
                    window: crate::ir::Window {
                        kernel: [1, 1],
                        stride: [1, 1],
                        pad: [0; 4],
                        dilation: [1, 1],
                    },
                    groups: 1,
                    out_channels: total,
                    weight: crate::ir::Weights {
                        dims: vec![total, c, 1, 1],
                        data: w,
                    },
                    bias: None,
                }),
                inputs: vec![x],
                outputs: vec![placed],
            });
            acc = Some(match acc {
                None => placed,
                Some(prev) => {
                    let sum = if i == last {
                        y
                    } else {
                        let t = out.add_tensor(format!("{}#acc{i}", g.tensor(y).name), shape);
                        like.push((t, y));
                        t
                    };
                    out.nodes.push(Node {
                        name: if i == last {
                            n.name.clone()
                        } else {
                            format!("{}#acc{i}", n.name)
                        },
                        source_type: n.source_type.clone(),
                        op: Op::Eltwise {
                            kind: EltwiseKind::Sum,
                            coeffs: vec![],
                        },
                        inputs: vec![prev, placed],
                        outputs: vec![sum],
                    });
                    sum
                }
            });
        }
    }
    (out, like)
}

/// Which concatenation inputs can be written straight into the concatenation's output:
/// each input is produced by a node (not a network input), read by no other
/// concatenation (other layers read it through its view), not a network output, and
/// starts at a channel that begins a memory atom.
///
/// Concatenations whose inputs begin another's (DenseNet: each layer concatenates every
/// earlier output of its block) share the longest one's surface: the shorter ones are
/// views of its first channels, and each input is written once, at the same offset for
/// all of them, instead of being copied into every concatenation. Such an input may also
/// be read by other layers (through its view).
pub(super) fn concat_views(g: &Graph, t: &Target) -> HashMap<TensorId, (TensorId, u32)> {
    let mut views = HashMap::new();
    let cpa = t.channels_per_atom();
    let concats: Vec<usize> = (0..g.nodes.len())
        .filter(|&j| matches!(g.nodes[j].op, Op::Concat) && g.nodes[j].outputs.len() == 1)
        .collect();
    // The longest concatenation whose inputs start with node j's (j itself if none).
    let root = |j: usize| -> usize {
        let ins = &g.nodes[j].inputs;
        concats
            .iter()
            .copied()
            .filter(|&m| g.nodes[m].inputs.starts_with(ins))
            .max_by_key(|&m| (g.nodes[m].inputs.len(), m))
            .unwrap_or(j)
    };
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for &j in &concats {
        let r = root(j);
        match groups.iter_mut().find(|(x, _)| *x == r) {
            Some((_, members)) => members.push(j),
            None => groups.push((r, vec![j])),
        }
    }
    for (r, members) in groups {
        let shared = members.len() > 1;
        let out = g.nodes[r].outputs[0];
        let in_group = |k: &crate::ir::NodeId| members.contains(&k.0);
        let mut offsets = Vec::new();
        let mut c = 0u32;
        let mut ok = true;
        for &i in &g.nodes[r].inputs {
            let aligned = c.is_multiple_of(cpa);
            let produced = g.producer(i).is_some();
            let consumers = g.consumers(i);
            let readers_ok = if shared {
                // Every concatenation reading it is one of the group.
                consumers
                    .iter()
                    .all(|k| !matches!(g.nodes[k.0].op, Op::Concat) || in_group(k))
            } else {
                // Read by no other concatenation: other readers (SPP's poolings, a C2f's
                // bottleneck) read it through its view, written once.
                consumers
                    .iter()
                    .all(|k| !matches!(g.nodes[k.0].op, Op::Concat) || k.0 == r)
            };
            let output = g.outputs.contains(&i);
            let repeated = g.nodes[r].inputs.iter().filter(|&&x| x == i).count() > 1;
            ok &= aligned && produced && readers_ok && !output && !repeated;
            offsets.push((i, c));
            c += g.shape(i).c as u32;
        }
        // The shorter concatenations become views: none may be a network output.
        ok &= members
            .iter()
            .all(|&m| m == r || !g.outputs.contains(&g.nodes[m].outputs[0]));
        if ok {
            for (i, off) in offsets {
                views.insert(i, (out, off));
            }
            for &m in &members {
                if m != r {
                    views.insert(g.nodes[m].outputs[0], (out, 0));
                }
            }
        } else if shared {
            // Each on its own, as if they shared nothing.
            for &m in &members {
                let n = &g.nodes[m];
                let mut offsets = Vec::new();
                let mut c = 0u32;
                let mut ok = true;
                for &i in &n.inputs {
                    ok &= c.is_multiple_of(cpa)
                        && g.producer(i).is_some()
                        && g.consumers(i).len() == 1
                        && !g.outputs.contains(&i)
                        && n.inputs.iter().filter(|&&x| x == i).count() == 1;
                    offsets.push((i, c));
                    c += g.shape(i).c as u32;
                }
                if ok {
                    for (i, off) in offsets {
                        views.insert(i, (n.outputs[0], off));
                    }
                }
            }
        }
    }
    views
}
