//! Lowering: the network IR to engine operations for one target.
//!
//! Convolutions and fully connected layers become CONV+SDP pairs, and the element-wise
//! layers that follow them (bias, per-channel affine, ReLU/PReLU, element-wise sums) fold
//! into the SDP's X1/X2/Y stages; element-wise layers with no convolution to ride on become
//! SDP operations reading memory; pooling goes to PDP; softmax to the CPU. Concatenation
//! places its producers into one surface (views), with no copy. Every parameter comes from
//! the [`Target`]; nothing here tests a configuration by name.

use crate::engine::*;
use crate::error::{CompileError, Result};
use crate::ir::{Activation, EltwiseKind, Graph, Node, Op, PoolKind, TensorId};
use crate::pack;
use crate::quant::Calibration;
use crate::sdp::{Refusal, SdpStages, Stage};
use crate::target::{Precision, Target};
use nvdla_loadable::dla::SdpAluType;
use std::collections::HashMap;

/// An SDP's encoded stages and, in int8, its output converter.
type EncodedSdp = ([Option<crate::engine::SdpStage>; 3], Option<(i16, u8)>);

/// int8 quantization inputs of the lowering.
#[derive(Debug, Clone, Copy)]
pub struct Quant<'a> {
    /// Per-tensor scales (required for int8).
    pub cal: Option<&'a Calibration>,
    /// One weight scale per output channel (`per-filter`) instead of per layer
    /// (`per-kernel`, upstream's default).
    pub per_filter: bool,
    /// Scale of a network input the calibration does not cover: the runtime feeds an int8
    /// input as `round(pixel * 127 / 255)`, so with inputs meaning `pixel / normalize` this
    /// is `255 / (127 * normalize)`.
    pub input_scale: f32,
}

impl Default for Quant<'_> {
    fn default() -> Self {
        Self {
            cal: None,
            per_filter: true,
            input_scale: 255.0 / 127.0,
        }
    }
}

/// Lower `g` for `t`.
pub fn lower(g: &Graph, t: &Target, q: &Quant<'_>) -> Result<Program> {
    lower_with(g, t, q, &crate::CompileOptions::default())
}

/// Lower `g` for `t` with compile options (the CPU fallback).
pub fn lower_with(
    g: &Graph,
    t: &Target,
    q: &Quant<'_>,
    opts: &crate::CompileOptions,
) -> Result<Program> {
    check_batch(g)?;
    let (split, partials) = split_eltwise(g);
    let split = fit_coefficients(split, t);
    let (placed, like) = place_concats(&split, t);
    let g = &placed;
    if t.precision == Precision::Int8 && q.cal.is_none() {
        return Err(CompileError::Option(
            "int8 needs a calibration (--calibtable or --calibrate)".into(),
        ));
    }
    let mut l = Lowering {
        g,
        t,
        q: *q,
        p: Program::default(),
        surf: HashMap::new(),
        views: concat_views(g, t),
        done: vec![false; g.nodes.len()],
        inherit: HashMap::new(),
        cpu_fallback: opts.cpu_fallback,
    };
    // Tensors the concatenation rewrite added take the concatenation's scale.
    for (new, orig) in like {
        let scale = l.scale_of(orig, false);
        l.inherit.insert(new, scale);
    }
    // The running results of a split element-wise layer, where the calibration has none
    // (it was made on the network before the split): the largest value their inputs can
    // give, so that no partial result saturates.
    for p in partials {
        if l.scale_of(p.tensor, false).is_finite() {
            continue;
        }
        let scales: Vec<(f32, f32)> = p
            .inputs
            .iter()
            .map(|&(x, c)| (l.scale_of(x, false), c))
            .collect();
        let scale = match p.kind {
            EltwiseKind::Sum => scales.iter().map(|(s, c)| s * c.abs()).sum(),
            EltwiseKind::Max => scales.iter().map(|(s, _)| *s).fold(0.0, f32::max),
            EltwiseKind::Prod => scales.iter().map(|(s, _)| s * 127.0).product::<f32>() / 127.0,
        };
        l.inherit.insert(p.tensor, scale);
    }
    for (i, &input) in g.inputs.iter().enumerate() {
        let s = l.new_surface(input, SurfKind::Input(i));
        l.p.inputs.push(s);
    }
    let batch = g.inputs.first().map_or(1, |&i| g.shape(i).n);
    if batch == 1 {
        for i in 0..g.nodes.len() {
            if !l.done[i] {
                l.node(i)?;
            }
        }
    } else {
        // N sequential passes over the network, one per batch item: item b of every
        // network input and output is a view of its memory at b times the item's size.
        let mut full_inputs = Vec::new();
        for &input in &g.inputs {
            let id = l.surf[&input];
            l.batch_surface(id, batch);
            full_inputs.push(id);
        }
        let mut full_outputs = Vec::new();
        for (i, &o) in g.outputs.iter().enumerate() {
            let id = l.new_surface(o, SurfKind::Output(i));
            l.batch_surface(id, batch);
            full_outputs.push(id);
        }
        for b in 0..batch {
            l.surf.clear();
            l.done = vec![false; g.nodes.len()];
            for (&t, &full) in g.inputs.iter().zip(&full_inputs) {
                let v = l.item_view(full, b);
                l.surf.insert(t, v);
            }
            for (&t, &full) in g.outputs.iter().zip(&full_outputs) {
                let v = l.item_view(full, b);
                l.surf.insert(t, v);
            }
            for i in 0..g.nodes.len() {
                if !l.done[i] {
                    l.node(i)?;
                }
            }
        }
        for (&t, &full) in g.outputs.iter().zip(&full_outputs) {
            l.surf.insert(t, full);
        }
    }
    for &o in &g.outputs {
        let s = *l.surf.get(&o).ok_or_else(|| {
            CompileError::Network(format!("output `{}` is never computed", g.tensor(o).name))
        })?;
        if !matches!(l.p.surface(s).kind, SurfKind::Output(_)) {
            return Err(CompileError::Network(format!(
                "output `{}` is also a network input or an alias of another tensor; \
                 not supported",
                g.tensor(o).name
            )));
        }
        l.p.outputs.push(s);
    }
    check_cube_limits(&l.p)?;
    Ok(l.p)
}

/// Largest width, height and channel count of a data cube a DLA engine reads or writes
/// (13-bit `*_WIDTH`/`*_HEIGHT`/`*_CHANNEL` registers, programmed minus one).
const MAX_CUBE_DIM: u32 = 8192;

/// Every DLA operation's cubes fit the engines' 13-bit size registers.
fn check_cube_limits(p: &Program) -> Result<()> {
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

struct Lowering<'a> {
    g: &'a Graph,
    t: &'a Target,
    q: Quant<'a>,
    /// int8 scales forced on tensors (pooling keeps its input's scale).
    inherit: HashMap<TensorId, f32>,
    p: Program,
    /// The surface holding each computed tensor.
    surf: HashMap<TensorId, SurfId>,
    /// Tensors that are channel windows of a concatenation's output.
    views: HashMap<TensorId, (TensorId, u32)>,
    /// Nodes already lowered (fused into an earlier operation).
    done: Vec<bool>,
    /// Operations the hardware cannot run go to the CPU (`--cpu-fallback`).
    cpu_fallback: bool,
}

/// Largest batch lowered (as that many passes over the network).
const MAX_BATCH: usize = 64;

/// A batch of N > 1 runs as N passes over the network, each on one item of every input
/// and output (every IR operation works per item): all network inputs must have the same
/// batch, and every tensor keeps it.
fn check_batch(g: &Graph) -> Result<()> {
    let batch = g.inputs.first().map_or(1, |&i| g.shape(i).n);
    for &i in &g.inputs {
        let s = g.shape(i);
        if s.n != batch || !(1..=MAX_BATCH).contains(&s.n) {
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
            if s.n != batch {
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
struct Partial {
    tensor: TensorId,
    kind: EltwiseKind,
    inputs: Vec<(TensorId, f32)>,
}

/// Element-wise layers of more than two inputs as chains of two-input ones (the SDP
/// combines its input with one operand): `sum(c_i x_i) = (c_0 x_0 + c_1 x_1) + c_2 x_2 ...`.
/// Returns the graph and the running results it added.
fn split_eltwise(g: &Graph) -> (Graph, Vec<Partial>) {
    let mut partials = Vec::new();
    let mut out = Graph {
        name: g.name.clone(),
        tensors: g.tensors.clone(),
        nodes: Vec::with_capacity(g.nodes.len()),
        inputs: g.inputs.clone(),
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
fn fit_coefficients(mut g: Graph, t: &Target) -> Graph {
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
fn place_concats(g: &Graph, t: &Target) -> (Graph, Vec<(TensorId, TensorId)>) {
    let views = concat_views(g, t);
    let mut out = Graph {
        name: g.name.clone(),
        tensors: g.tensors.clone(),
        nodes: Vec::with_capacity(g.nodes.len()),
        inputs: g.inputs.clone(),
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
/// each input is produced by a node (not a network input), read only by the
/// concatenation, not a network output, and starts at a channel that begins a memory atom.
///
/// Concatenations whose inputs begin another's (DenseNet: each layer concatenates every
/// earlier output of its block) share the longest one's surface: the shorter ones are
/// views of its first channels, and each input is written once, at the same offset for
/// all of them, instead of being copied into every concatenation. Such an input may also
/// be read by other layers (through its view).
fn concat_views(g: &Graph, t: &Target) -> HashMap<TensorId, (TensorId, u32)> {
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
                consumers.len() == 1
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

fn layer_err(n: &Node, reason: impl Into<String>) -> CompileError {
    CompileError::layer(&n.name, &n.source_type, reason)
}

impl Lowering<'_> {
    /// Creates the surface for tensor `tid`.
    fn new_surface(&mut self, tid: TensorId, kind: SurfKind) -> SurfId {
        let shape = self.g.shape(tid);
        let (c, h, w) = (shape.c as u32, shape.h as u32, shape.w as u32);
        let mut s = self.surface_geometry(&self.g.tensor(tid).name, c, h, w, kind);
        s.scale = self.scale_of(tid, matches!(kind, SurfKind::Input(_)));
        let id = self.p.add_surface(s);
        self.surf.insert(tid, id);
        id
    }

    /// Makes network input or output surface `id` hold `batch` items back to back.
    fn batch_surface(&mut self, id: SurfId, batch: usize) {
        let s = &mut self.p.surfaces[id.0];
        s.batch = batch as u32;
        s.size *= batch as u32;
    }

    /// Item `b` of batched surface `full`: a view `b` item sizes into its memory.
    fn item_view(&mut self, full: SurfId, b: usize) -> SurfId {
        let fs = self.p.surface(full).clone();
        let item = fs.size / fs.batch.max(1);
        let mut v = fs;
        v.name = format!("{}#item{b}", v.name);
        v.batch = 1;
        v.size = item;
        v.kind = SurfKind::View {
            parent: full,
            channel_offset: 0,
            x: 0,
            // Item b starts b * item bytes in: that many lines of the parent.
            y: b as u32 * (item / v.line_stride.max(1)),
        };
        self.p.add_surface(v)
    }

    fn surface_geometry(&self, name: &str, c: u32, h: u32, w: u32, kind: SurfKind) -> Surface {
        let atom = self.t.atom();
        let line_stride = w * atom;
        let surf_stride = line_stride * h;
        let size = surf_stride * c.div_ceil(self.t.channels_per_atom());
        Surface {
            name: name.to_string(),
            c,
            h,
            w,
            precision: self.t.precision,
            kind,
            line_stride,
            surf_stride,
            size,
            offset: 0,
            scale: 1.0,
            batch: 1,
        }
    }

    /// The int8 scale of tensor `tid` (1 for fp16; NaN when uncalibrated, reported where
    /// it is needed).
    fn scale_of(&self, tid: TensorId, input: bool) -> f32 {
        if self.t.precision != Precision::Int8 {
            return 1.0;
        }
        if let Some(&s) = self.inherit.get(&tid) {
            return s;
        }
        match self.q.cal.and_then(|c| c.get(tid)) {
            Some(s) => s,
            None if input => self.q.input_scale,
            None => f32::NAN,
        }
    }

    /// The int8 scale of surface `id`, or an error naming its tensor.
    fn require_scale(&self, id: SurfId) -> Result<f64> {
        let s = self.p.surface(id);
        if s.scale.is_finite() && s.scale > 0.0 {
            Ok(f64::from(s.scale))
        } else {
            Err(CompileError::Network(format!(
                "no int8 scale for tensor `{}`: the calibration table has no entry for it \
                 (nor for the layer that produces it)",
                s.name
            )))
        }
    }

    /// int8: an operation that cannot rescale (PDP, RUBIK) must write the scale it reads;
    /// a destination whose scale is fixed otherwise (a concatenation) may differ.
    fn check_scale_kept(&self, n: &Node, src: SurfId, dst: SurfId) -> Result<()> {
        let (a, b) = (self.p.surface(src).scale, self.p.surface(dst).scale);
        if self.t.precision == Precision::Int8 && (a - b).abs() > a.abs() * 1e-6 {
            return Err(layer_err(
                n,
                format!(
                    "int8: writes a tensor of scale {b:e} (e.g. a concatenation's) but cannot \
                     rescale its input of scale {a:e}"
                ),
            ));
        }
        Ok(())
    }

    /// For int8, the unit of an SDP reading surface `id` from memory: its scale on every
    /// channel.
    fn uniform_unit(&self, id: SurfId) -> Result<Option<Vec<f64>>> {
        if self.t.precision != Precision::Int8 {
            return Ok(None);
        }
        let s = self.require_scale(id)?;
        Ok(Some(vec![s; self.p.surface(id).c as usize]))
    }

    /// Encodes an SDP operation's stages: fp16 directly; int8 from the input's unit
    /// (`unit`, real value of one LSB of the int32 input per channel) to `dst`'s scale.
    fn encode_sdp(
        &mut self,
        sdp: &SdpStages,
        layer: &str,
        dst: SurfId,
        unit: Option<Vec<f64>>,
    ) -> Result<EncodedSdp> {
        let t = *self.t;
        if t.precision != Precision::Int8 {
            return Ok((sdp.encode(&mut self.p, &t, layer)?, None));
        }
        let out_scale = self.require_scale(dst)?;
        let unit =
            unit.ok_or_else(|| CompileError::Network(format!("{layer}: no int8 input unit")))?;
        for other in sdp.operands() {
            self.require_scale(other)?;
        }
        let scales: Vec<f64> = self.p.surfaces.iter().map(|s| f64::from(s.scale)).collect();
        let scale_of = move |id: SurfId| scales[id.0];
        let (stages, cvt) = sdp.encode_int8(&mut self.p, &t, layer, &unit, out_scale, &scale_of)?;
        Ok((stages, Some(cvt)))
    }

    /// The surface an operation writes tensor `tid` to.
    fn output_surface(&mut self, tid: TensorId) -> SurfId {
        if let Some(&s) = self.surf.get(&tid) {
            return s;
        }
        if let Some(i) = self.g.outputs.iter().position(|&o| o == tid) {
            return self.new_surface(tid, SurfKind::Output(i));
        }
        if let Some(&(parent, offset)) = self.views.get(&tid) {
            let parent_surface = self.output_surface(parent);
            let ps = self.p.surface(parent_surface).clone();
            let shape = self.g.shape(tid);
            let mut s = ps.clone();
            s.name = self.g.tensor(tid).name.clone();
            s.c = shape.c as u32;
            s.kind = SurfKind::View {
                parent: parent_surface,
                channel_offset: offset,
                x: 0,
                y: 0,
            };
            s.size = ps.surf_stride * s.c.div_ceil(self.t.channels_per_atom());
            let id = self.p.add_surface(s);
            self.surf.insert(tid, id);
            return id;
        }
        self.new_surface(tid, SurfKind::Pool)
    }

    /// The surface holding an already computed tensor.
    fn input(&self, n: &Node, k: usize) -> Result<SurfId> {
        let tid = *n
            .inputs
            .get(k)
            .ok_or_else(|| layer_err(n, format!("expects at least {} inputs", k + 1)))?;
        self.surf.get(&tid).copied().ok_or_else(|| {
            layer_err(
                n,
                format!(
                    "input `{}` is not computed before it",
                    self.g.tensor(tid).name
                ),
            )
        })
    }

    fn out_tensor(&self, n: &Node) -> Result<TensorId> {
        match n.outputs.as_slice() {
            [t] => Ok(*t),
            _ => Err(layer_err(n, "expects exactly one output")),
        }
    }

    fn node(&mut self, i: usize) -> Result<()> {
        let g = self.g;
        let n = &g.nodes[i];
        self.done[i] = true;
        match &n.op {
            Op::Conv(c) => self.conv(i, c),
            Op::FullyConnected { weight, bias } => self.fully_connected(i, weight, bias.as_ref()),
            Op::Pool(p) => self.pool(n, p),
            Op::Softmax => {
                let src = self.input(n, 0)?;
                let s = self.p.surface(src);
                if s.h != 1 || s.w != 1 {
                    return Err(layer_err(
                        n,
                        format!(
                            "softmax runs on the CPU over a 1x1 cube of channels; this input is \
                             {}x{}x{}",
                            s.c, s.h, s.w
                        ),
                    ));
                }
                let dst = self.output_surface(self.out_tensor(n)?);
                self.p.ops.push(HwOp {
                    layers: vec![n.name.clone()],
                    kind: HwOpKind::Cpu(CpuOp::Softmax { src, dst }),
                });
                Ok(())
            }
            Op::Flatten | Op::Identity => {
                let src = self.input(n, 0)?;
                let out = self.out_tensor(n)?;
                if matches!(n.op, Op::Flatten) {
                    let s = self.p.surface(src);
                    let feeds_fc = g.consumers(out).iter().all(|&c| {
                        matches!(g.nodes[c.0].op, Op::FullyConnected { .. } | Op::Softmax)
                    });
                    if !(feeds_fc || s.h == 1 && s.w == 1) {
                        return Err(layer_err(
                            n,
                            "flattening a spatial cube is only supported in front of a fully \
                             connected layer",
                        ));
                    }
                }
                if g.outputs.contains(&out) {
                    let s = self.p.surface(src);
                    let o = g.shape(out);
                    if (s.c as usize, s.h as usize, s.w as usize) != (o.c, o.h, o.w) {
                        return Err(layer_err(
                            n,
                            "a network output that flattens a spatial cube needs a copy \
                             that changes the layout (not implemented)",
                        ));
                    }
                    // A network output that is an alias of another tensor (a network
                    // input, another output, a reshape): an SDP pass-through copies it.
                    let t = *self.t;
                    let mut sdp = SdpStages::default();
                    sdp.push(&t, Stage::Pass).map_err(|e| layer_err(n, e))?;
                    self.inherit.insert(out, s.scale);
                    let dst = self.output_surface(out);
                    let unit = self.uniform_unit(src)?;
                    let (stages, out_cvt) = self.encode_sdp(&sdp, &n.name, dst, unit)?;
                    self.p.ops.push(HwOp {
                        layers: vec![n.name.clone()],
                        kind: HwOpKind::Sdp(SdpOp {
                            src: Some(src),
                            dst,
                            stages,
                            lut: sdp.lut(),
                            out_cvt,
                        }),
                    });
                    return Ok(());
                }
                self.surf.insert(out, src);
                Ok(())
            }
            Op::Concat => {
                let out = self.out_tensor(n)?;
                // A concatenation that begins a longer one lives in that one's surface.
                let surface_of = self.views.get(&out).map_or(out, |v| v.0);
                let all_views = n
                    .inputs
                    .iter()
                    .all(|t| self.views.get(t).map(|v| v.0) == Some(surface_of));
                if !all_views {
                    return Err(layer_err(
                        n,
                        format!(
                            "inputs must start at multiples of {} channels and feed only this \
                             concatenation (copies are not implemented)",
                            self.t.channels_per_atom()
                        ),
                    ));
                }
                // The producers already wrote their windows of the output surface.
                self.output_surface(out);
                Ok(())
            }
            Op::ChannelAffine { .. }
            | Op::BatchNorm { .. }
            | Op::Activation(_)
            | Op::Power { .. }
            | Op::Eltwise { .. } => self.standalone_sdp(i),
            Op::Deconv(c) => self.deconv(i, c),
            Op::CpuUnary { func, alpha, beta } => {
                if !self.cpu_fallback {
                    return Err(layer_err(
                        n,
                        format!(
                            "{func:?}: no NVDLA engine computes it (compile with \
                             --cpu-fallback to run it on the CPU)"
                        ),
                    ));
                }
                let src = self.input(n, 0)?;
                let dst = self.output_surface(self.out_tensor(n)?);
                if self.t.precision == Precision::Int8 {
                    self.require_scale(src)?;
                    self.require_scale(dst)?;
                }
                self.p.ops.push(HwOp {
                    layers: vec![n.name.clone()],
                    kind: HwOpKind::Cpu(CpuOp::Unary {
                        src,
                        dst,
                        func: *func,
                        alpha: *alpha,
                        beta: *beta,
                    }),
                });
                Ok(())
            }
            Op::CpuPartition(part) => {
                if !self.cpu_fallback {
                    return Err(layer_err(
                        n,
                        "an ONNX partition runs on the CPU: compile with --cpu-fallback",
                    ));
                }
                // Batches run as one pass per item, which a partition (free to mix the
                // items) cannot follow.
                if let Some(&t) = n
                    .inputs
                    .iter()
                    .chain(&n.outputs)
                    .find(|&&t| g.shape(t).n != 1)
                {
                    return Err(layer_err(
                        n,
                        format!(
                            "`{}` ({}): CPU partitions run on networks of batch 1",
                            g.tensor(t).name,
                            g.shape(t)
                        ),
                    ));
                }
                let inputs = (0..n.inputs.len())
                    .map(|k| self.input(n, k))
                    .collect::<Result<Vec<_>>>()?;
                let outputs: Vec<SurfId> =
                    n.outputs.iter().map(|&t| self.output_surface(t)).collect();
                if self.t.precision == Precision::Int8 {
                    // A network output nothing else reads keeps the partition's precision
                    // better in half precision than in int8 steps of one scale (a YOLO
                    // head concatenates boxes in pixels with class scores below 1).
                    for (&t, &id) in n.outputs.iter().zip(&outputs) {
                        if g.consumers(t).is_empty()
                            && matches!(self.p.surface(id).kind, SurfKind::Output(_))
                        {
                            let s = self.p.surface(id).clone();
                            let mut h = self.surface_geometry(&s.name, s.c, s.h, s.w, s.kind);
                            let atom = self.t.atom_of(Precision::Fp16);
                            h.precision = Precision::Fp16;
                            h.line_stride = s.w * atom;
                            h.surf_stride = h.line_stride * s.h;
                            h.size = h.surf_stride
                                * s.c.div_ceil(self.t.channels_per_atom_of(Precision::Fp16));
                            self.p.surfaces[id.0] = h;
                        }
                    }
                    for &id in inputs.iter().chain(&outputs) {
                        if self.p.surface(id).precision == Precision::Int8 {
                            self.require_scale(id)?;
                        }
                    }
                }
                self.p.ops.push(HwOp {
                    layers: vec![n.name.clone()],
                    kind: HwOpKind::Cpu(CpuOp::Partition {
                        inputs,
                        outputs,
                        partition: part.clone(),
                    }),
                });
                Ok(())
            }
            Op::Lrn {
                size,
                alpha,
                beta,
                k,
            } => {
                if !self.t.hw.features.cdp {
                    return Err(layer_err(n, format!("{} has no CDP", self.t.hw.name)));
                }
                if ![3, 5, 7, 9].contains(size) {
                    return Err(layer_err(
                        n,
                        format!("local_size {size}: CDP normalises over 3, 5, 7 or 9 channels"),
                    ));
                }
                let src = self.input(n, 0)?;
                let dst = self.output_surface(self.out_tensor(n)?);
                let (table, out_cvt) = if self.t.precision == Precision::Int8 {
                    let (s_in, s_out) = (self.require_scale(src)?, self.require_scale(dst)?);
                    let (table, r) = crate::lut::lrn_int8(*size as u32, *alpha, *beta, *k, s_in);
                    // R * f * q at the output's scale; the shifter has 6 bits.
                    let (m, shift) = crate::quant::fixed_point(s_in / (r * s_out), 32767, 63);
                    if m == 0 {
                        return Err(layer_err(
                            n,
                            format!(
                                "int8 LRN: input scale {s_in:e} over output scale {s_out:e} \
                                 is out of the CDP output converter's range"
                            ),
                        ));
                    }
                    (table, (m as i16, shift as u8))
                } else {
                    (crate::lut::lrn(*size as u32, *alpha, *beta, *k), (1, 0))
                };
                self.p.luts.push(table);
                let lut = self.p.luts.len() - 1;
                self.p.ops.push(HwOp {
                    layers: vec![n.name.clone()],
                    kind: HwOpKind::Cdp(CdpOp {
                        src,
                        dst,
                        local_size: *size as u32,
                        lut,
                        out_cvt,
                    }),
                });
                Ok(())
            }
        }
    }

    /// A convolution: weights expanded for groups (block-diagonal), then CONV+SDP.
    fn conv(&mut self, i: usize, c: &crate::ir::Conv) -> Result<()> {
        let n = &self.g.nodes[i];
        let src = self.input(n, 0)?;
        let s = self.p.surface(src).clone();
        let [kh, kw] = c.window.kernel;
        let groups = c.groups.max(1);
        let cin = s.c as usize;
        let k = c.out_channels;
        if !cin.is_multiple_of(groups) || !k.is_multiple_of(groups) {
            return Err(layer_err(
                n,
                format!("{groups} groups do not divide {cin} input / {k} output channels"),
            ));
        }
        let cpg = cin / groups;
        let kpg = k / groups;
        if c.weight.len() != k * cpg * kh * kw {
            return Err(layer_err(
                n,
                format!(
                    "weights hold {} values, {k}x{cpg}x{kh}x{kw} expected",
                    c.weight.len()
                ),
            ));
        }
        if let Some(q) = self.group_chunk(groups, cpg, kpg) {
            return self.grouped_conv(i, c, q);
        }
        // Dense weights [k][cin][kh][kw], zero outside each kernel's group.
        let dense = if groups == 1 {
            c.weight.data.clone()
        } else {
            let mut d = vec![0.0f32; k * cin * kh * kw];
            for ko in 0..k {
                let gi = ko / kpg;
                for ci in 0..cpg {
                    for p in 0..kh * kw {
                        d[(ko * cin + gi * cpg + ci) * kh * kw + p] =
                            c.weight.data[(ko * cpg + ci) * kh * kw + p];
                    }
                }
            }
            d
        };
        let w = c.window;
        let out_t = self.out_tensor(n)?;
        let out_shape = self.g.shape(out_t);
        self.emit_conv(
            i,
            ConvSpec {
                src,
                kernel: [kh as u32, kw as u32],
                stride: [w.stride[0] as u32, w.stride[1] as u32],
                pad: w.pad.map(|v| v as u32),
                dilation: [w.dilation[0] as u32, w.dilation[1] as u32],
                kernels: k as u32,
                out: [out_shape.h as u32, out_shape.w as u32],
                weights: dense,
                bias: c.bias.as_ref().map(|b| b.data.clone()),
                dst: None,
                accumulate: None,
            },
        )
    }

    /// Groups per operation when a grouped convolution (depthwise included) is split into
    /// operations over parts of its groups: `None` to run it as one dense convolution.
    ///
    /// One dense convolution holds `groups` times the real weights (zeros outside each
    /// kernel's group: MobileNet v2's depthwise layers take 88 MB in fp16 instead of 7 MB)
    /// and computes as many MACs. A part must start at a multiple of the channels per atom
    /// on both sides (its input and output are channel views), so the smallest part is `q`
    /// groups with `q * cpg` and `q * kpg` such multiples; parts are made larger so that a
    /// layer takes at most [`MAX_GROUP_PARTS`] operations (the firmware runs 1 024 per
    /// task). Split when that leaves at least two parts.
    fn group_chunk(&self, groups: usize, cpg: usize, kpg: usize) -> Option<usize> {
        if groups < 2 {
            return None;
        }
        let cpa = self.t.channels_per_atom() as usize;
        let step = |per: usize| cpa / gcd(cpa, per);
        let q0 = lcm(step(cpg), step(kpg));
        let q = q0 * groups.div_ceil(q0 * MAX_GROUP_PARTS).max(1);
        (groups.div_ceil(q) >= 2).then_some(q)
    }

    /// A grouped convolution as convolutions over `q` groups each, reading channel views of
    /// the input and writing channel views of the output, with their own weights (dense
    /// within the part only) and bias; the layers after it are separate SDP operations.
    fn grouped_conv(&mut self, i: usize, c: &crate::ir::Conv, q: usize) -> Result<()> {
        let n = &self.g.nodes[i];
        let src = self.input(n, 0)?;
        let cin = self.p.surface(src).c as usize;
        let [kh, kw] = c.window.kernel;
        let groups = c.groups;
        let (cpg, kpg) = (cin / groups, c.out_channels / groups);
        let out_t = self.out_tensor(n)?;
        let out_shape = self.g.shape(out_t);
        let dst = self.output_surface(out_t);
        let w = c.window;
        for g0 in (0..groups).step_by(q) {
            let g1 = (g0 + q).min(groups);
            let (c0, cn) = (g0 * cpg, (g1 - g0) * cpg);
            let (k0, kn) = (g0 * kpg, (g1 - g0) * kpg);
            let src_v = self.channel_view(src, c0 as u32, cn as u32, format!("{}#in{g0}", n.name));
            let dst_v = self.channel_view(dst, k0 as u32, kn as u32, format!("{}#out{g0}", n.name));
            // Weights [kn][cn][kh][kw], zero outside each kernel's group.
            let mut weights = vec![0.0f32; kn * cn * kh * kw];
            for ko in 0..kn {
                let gi = ko / kpg;
                for ci in 0..cpg {
                    for p in 0..kh * kw {
                        weights[(ko * cn + gi * cpg + ci) * kh * kw + p] =
                            c.weight.data[((k0 + ko) * cpg + ci) * kh * kw + p];
                    }
                }
            }
            self.emit_conv(
                i,
                ConvSpec {
                    src: src_v,
                    kernel: [kh as u32, kw as u32],
                    stride: [w.stride[0] as u32, w.stride[1] as u32],
                    pad: w.pad.map(|v| v as u32),
                    dilation: [w.dilation[0] as u32, w.dilation[1] as u32],
                    kernels: kn as u32,
                    out: [out_shape.h as u32, out_shape.w as u32],
                    weights,
                    bias: c.bias.as_ref().map(|b| b.data[k0..k0 + kn].to_vec()),
                    dst: Some(dst_v),
                    accumulate: None,
                },
            )?;
        }
        Ok(())
    }

    /// A deconvolution (transposed convolution). Stride 1: a convolution with the kernel
    /// flipped and the padding complemented. Stride s > 1 (dilation 1): one convolution
    /// computing the `sy * sx` output phases as channel groups (phase `(ry, rx)` at
    /// `(q*sy + ry, p*sx + rx)` sums `in[q - m] * w[ry + m*sy]`), RUBIK contract to
    /// interleave them, and a window of the result for the padding's crop.
    fn deconv(&mut self, i: usize, c: &crate::ir::Conv) -> Result<()> {
        let n = &self.g.nodes[i];
        let t = *self.t;
        let src = self.input(n, 0)?;
        let s = self.p.surface(src).clone();
        let out_t = self.out_tensor(n)?;
        let out = self.g.shape(out_t);
        let [kh, kw] = c.window.kernel;
        let [sy, sx] = c.window.stride;
        let [dy, dx] = c.window.dilation.map(|d| d.max(1));
        let [pt, pl, pb, pr] = c.window.pad;
        let groups = c.groups.max(1);
        let cin = s.c as usize;
        let k = c.out_channels;
        if !cin.is_multiple_of(groups) || !k.is_multiple_of(groups) || kh == 0 || kw == 0 {
            return Err(layer_err(
                n,
                format!("{groups} groups do not divide {cin} input / {k} output channels"),
            ));
        }
        let (cpg, kpg) = (cin / groups, k / groups);
        if c.weight.len() != cin * kpg * kh * kw {
            return Err(layer_err(
                n,
                format!(
                    "weights hold {} values, {cin}x{kpg}x{kh}x{kw} expected",
                    c.weight.len()
                ),
            ));
        }
        // w[ci][ko][y][x] of the deconvolution, 0 across groups.
        let wt = |ko: usize, ci: usize, y: usize, x: usize| -> f32 {
            if ci / cpg != ko / kpg {
                return 0.0;
            }
            c.weight.data[((ci * kpg + ko % kpg) * kh + y) * kw + x]
        };
        if sy == 1 && sx == 1 {
            let full = |k: usize, d: usize| d * (k - 1);
            let pads = [
                full(kh, dy).checked_sub(pt),
                full(kw, dx).checked_sub(pl),
                full(kh, dy).checked_sub(pb),
                full(kw, dx).checked_sub(pr),
            ];
            let Some(pad) = pads.into_iter().collect::<Option<Vec<usize>>>() else {
                return Err(layer_err(n, "padding larger than the dilated kernel"));
            };
            let mut dense = vec![0.0f32; k * cin * kh * kw];
            for ko in 0..k {
                for ci in 0..cin {
                    for y in 0..kh {
                        for x in 0..kw {
                            dense[((ko * cin + ci) * kh + y) * kw + x] =
                                wt(ko, ci, kh - 1 - y, kw - 1 - x);
                        }
                    }
                }
            }
            return self.emit_conv(
                i,
                ConvSpec {
                    src,
                    kernel: [kh as u32, kw as u32],
                    stride: [1, 1],
                    pad: [pad[0] as u32, pad[1] as u32, pad[2] as u32, pad[3] as u32],
                    dilation: [dy as u32, dx as u32],
                    kernels: k as u32,
                    out: [out.h as u32, out.w as u32],
                    weights: dense,
                    bias: c.bias.as_ref().map(|b| b.data.clone()),
                    dst: None,
                    accumulate: None,
                },
            );
        }
        if !t.hw.features.rubik {
            return Err(layer_err(
                n,
                format!(
                    "deconvolution with stride {sy}x{sx} needs RUBIK, which {} does not have",
                    t.hw.name
                ),
            ));
        }
        if dy != 1 || dx != 1 {
            return Err(layer_err(
                n,
                "strided deconvolution with dilation is not supported",
            ));
        }
        let (my, mx) = (kh.div_ceil(sy), kw.div_ceil(sx));
        let cpa = t.channels_per_atom() as usize;
        let kpad = k.next_multiple_of(cpa);
        let phases = sy * sx;
        let kk = phases * kpad;
        // Phase rows and columns: the natural result, or more where output_padding (an
        // output larger than the natural one) needs rows no input reaches (bias only).
        let hp = (s.h as usize + my - 1).max((out.h + pt).div_ceil(sy));
        let wp = (s.w as usize + mx - 1).max((out.w + pl).div_ceil(sx));
        let (full_h, full_w) = (hp * sy, wp * sx);
        if out.h + pt > full_h || out.w + pl > full_w {
            return Err(layer_err(
                n,
                format!(
                    "output {}x{} does not fit the deconvolution's {full_h}x{full_w}",
                    out.h, out.w
                ),
            ));
        }
        let mut weights = vec![0.0f32; kk * cin * my * mx];
        let mut bias = vec![0.0f32; kk];
        for ry in 0..sy {
            for rx in 0..sx {
                let ph = ry * sx + rx;
                for ko in 0..k {
                    bias[ph * kpad + ko] = c.bias.as_ref().map_or(0.0, |b| b.data[ko]);
                    for ci in 0..cin {
                        for jy in 0..my {
                            for jx in 0..mx {
                                let y = ry + (my - 1 - jy) * sy;
                                let x = rx + (mx - 1 - jx) * sx;
                                if y < kh && x < kw {
                                    weights[(((ph * kpad + ko) * cin + ci) * my + jy) * mx + jx] =
                                        wt(ko, ci, y, x);
                                }
                            }
                        }
                    }
                }
            }
        }
        let name = &n.name;
        let phase_s = self.surface_geometry(
            &format!("{name}#phases"),
            kk as u32,
            hp as u32,
            wp as u32,
            SurfKind::Pool,
        );
        let mut phase_s = phase_s;
        // int8: RUBIK moves bytes, so the phases carry the output's scale.
        phase_s.scale = self.scale_of(out_t, false);
        let phase_id = self.p.add_surface(phase_s);
        self.emit_conv(
            i,
            ConvSpec {
                src,
                kernel: [my as u32, mx as u32],
                stride: [1, 1],
                pad: [
                    (my - 1) as u32,
                    (mx - 1) as u32,
                    (hp - s.h as usize) as u32,
                    (wp - s.w as usize) as u32,
                ],
                dilation: [1, 1],
                kernels: kk as u32,
                out: [hp as u32, wp as u32],
                weights,
                bias: c.bias.is_some().then_some(bias),
                dst: Some(phase_id),
                accumulate: None,
            },
        )?;
        let full_s = self.surface_geometry(
            &format!("{name}#full"),
            k as u32,
            full_h as u32,
            full_w as u32,
            SurfKind::Pool,
        );
        let mut full_s = full_s;
        full_s.scale = self.scale_of(out_t, false);
        let full_id = self.p.add_surface(full_s);
        self.p.ops.push(HwOp {
            layers: vec![n.name.clone()],
            kind: HwOpKind::Rubik(RubikOp {
                src: phase_id,
                dst: full_id,
                stride: [sy as u32, sx as u32],
            }),
        });
        // The output: a window of the full result at the padding's offset.
        let mut view = self.p.surface(full_id).clone();
        view.name = self.g.tensor(out_t).name.clone();
        view.h = out.h as u32;
        view.w = out.w as u32;
        // The bytes the window spans from its first atom.
        view.size = (k as u32).div_ceil(t.channels_per_atom()).saturating_sub(1) * view.surf_stride
            + (view.h - 1) * view.line_stride
            + view.w * t.atom();
        view.kind = SurfKind::View {
            parent: full_id,
            channel_offset: 0,
            x: pl as u32,
            y: pt as u32,
        };
        let needs_copy = self.g.outputs.contains(&out_t) || self.views.contains_key(&out_t);
        let view_id = self.p.add_surface(view);
        if !needs_copy {
            self.surf.insert(out_t, view_id);
            return Ok(());
        }
        let dst = self.output_surface(out_t);
        let mut sdp = SdpStages::default();
        sdp.push(&t, Stage::Pass).map_err(|e| layer_err(n, e))?;
        let unit = self.uniform_unit(view_id)?;
        let (stages, out_cvt) = self.encode_sdp(&sdp, &n.name, dst, unit)?;
        self.p.ops.push(HwOp {
            layers: vec![format!("{name}#crop")],
            kind: HwOpKind::Sdp(SdpOp {
                src: Some(view_id),
                dst,
                stages,
                lut: None,
                out_cvt,
            }),
        });
        Ok(())
    }

    /// A fully connected layer: a convolution whose kernel covers the whole input cube.
    fn fully_connected(
        &mut self,
        i: usize,
        weight: &crate::ir::Weights,
        bias: Option<&crate::ir::Weights>,
    ) -> Result<()> {
        let n = &self.g.nodes[i];
        let src = self.input(n, 0)?;
        let s = self.p.surface(src).clone();
        let per_kernel = (s.c * s.h * s.w) as usize;
        if per_kernel == 0 || !weight.len().is_multiple_of(per_kernel) {
            return Err(layer_err(
                n,
                format!(
                    "{} weights do not divide into kernels of the {}x{}x{} input",
                    weight.len(),
                    s.c,
                    s.h,
                    s.w
                ),
            ));
        }
        let k = weight.len() / per_kernel;
        self.emit_conv(
            i,
            ConvSpec {
                src,
                kernel: [s.h, s.w],
                stride: [1, 1],
                pad: [0; 4],
                dilation: [1, 1],
                kernels: k as u32,
                out: [1, 1],
                weights: weight.data.clone(),
                bias: bias.map(|b| b.data.clone()),
                dst: None,
                accumulate: None,
            },
        )
    }

    /// Input-channel ranges to split a convolution into when even one output row beside
    /// one kernel group's weights does not fit the CBUF (a fully connected layer over a
    /// large cube: VGG's 7x7x512 -> 4096 needs 25 banks for 16 kernels on nv_full), each
    /// a multiple of the atom's channels so that it is a view of the input. `None` when
    /// it fits whole, or when no split makes it fit.
    fn channel_parts(&self, spec: &ConvSpec, s: &Surface) -> Option<Vec<(u32, u32)>> {
        let t = self.t;
        let [kh, kw] = spec.kernel;
        let rows = ((kh - 1) * spec.dilation[0] + 1).min(s.h);
        let fits = |c: u32| {
            let data = (t.entries_per_slice(s.w, c) * rows).div_ceil(t.cbuf_entries_per_bank());
            data + t.min_banks_for_weights(kh * kw * c * t.bpe()) <= t.hw.cbuf_banks
        };
        if fits(s.c) {
            return None;
        }
        let cpa = t.channels_per_atom();
        let atoms = s.c.div_ceil(cpa);
        let per = (2..=atoms)
            .map(|parts| atoms.div_ceil(parts) * cpa)
            .find(|&per| fits(per))?;
        let mut parts = Vec::new();
        let mut c0 = 0;
        while c0 < s.c {
            let c1 = (c0 + per).min(s.c);
            parts.push((c0, c1));
            c0 = c1;
        }
        Some(parts)
    }

    /// Channels `c0..c0 + c` of surface `id`, read in place.
    fn channel_view(&mut self, id: SurfId, c0: u32, c: u32, name: String) -> SurfId {
        let ps = self.p.surface(id).clone();
        let (parent, offset, x, y) = match ps.kind {
            SurfKind::View {
                parent,
                channel_offset,
                x,
                y,
            } => (parent, channel_offset + c0, x, y),
            _ => (id, c0, 0, 0),
        };
        let mut v = ps;
        v.name = name;
        v.c = c;
        v.kind = SurfKind::View {
            parent,
            channel_offset: offset,
            x,
            y,
        };
        v.size = (c.div_ceil(self.t.channels_per_atom()) - 1) * v.surf_stride
            + (v.h - 1) * v.line_stride
            + v.w * self.t.atom();
        self.p.add_surface(v)
    }

    /// Lines `y0..y0 + h` and columns `x0..x0 + w` of surface `id`, read and written in
    /// place with its strides.
    fn window_view(
        &mut self,
        id: SurfId,
        (y0, x0): (u32, u32),
        (h, w): (u32, u32),
        name: &str,
    ) -> SurfId {
        let ps = self.p.surface(id).clone();
        let (parent, channel_offset, x, y) = match ps.kind {
            SurfKind::View {
                parent,
                channel_offset,
                x,
                y,
            } => (parent, channel_offset, x + x0, y + y0),
            _ => (id, 0, x0, y0),
        };
        let mut v = ps;
        v.name = name.to_string();
        v.h = h;
        v.w = w;
        v.kind = SurfKind::View {
            parent,
            channel_offset,
            x,
            y,
        };
        v.size = (v.c.div_ceil(self.t.channels_per_atom()) - 1) * v.surf_stride
            + (h - 1) * v.line_stride
            + w * self.t.atom();
        self.p.add_surface(v)
    }

    /// A convolution computed as partial sums over `parts` of its input channels: part j
    /// convolves its channels (a view of the input) and adds part j-1's result in its
    /// SDP; the first adds the bias, the last writes the output and takes the
    /// element-wise layers that follow. int8 partial sums are stored at twice the scale
    /// calibration gave the whole sum (the convolution's output before what follows it):
    /// a partial sum over part of the channels may exceed the whole one's range.
    fn emit_conv_by_channels(
        &mut self,
        i: usize,
        spec: ConvSpec,
        parts: &[(u32, u32)],
    ) -> Result<()> {
        let n = &self.g.nodes[i];
        let name = n.name.clone();
        let c = self.p.surface(spec.src).c as usize;
        let taps = (spec.kernel[0] * spec.kernel[1]) as usize;
        // int8: the running sum over the first parts is stored at a scale of its own. It
        // may far exceed the whole sum's range (the later channels cancel it), so the
        // scale is the larger of twice the output's and the sum's spread for inputs at
        // their full range with independent signs: sqrt(sum w^2) * (127 * input scale),
        // the largest over the kernels, plus the bias.
        let out_scale = if self.t.precision == Precision::Int8 {
            let s = self.scale_of(self.out_tensor(n)?, false);
            if !(s.is_finite() && s > 0.0) {
                return Err(layer_err(
                    n,
                    "no int8 scale for its output, which its partial sums over parts of \
                     the input channels (the weights of one kernel group exceed the CBUF) \
                     are scaled from",
                ));
            }
            Some(f64::from(s))
        } else {
            None
        };
        let input_range = 127.0 * f64::from(self.p.surface(spec.src).scale);
        let partial_scale = |c1: usize| -> f32 {
            let Some(out) = out_scale else { return 1.0 };
            let spread = (0..spec.kernels as usize)
                .map(|k| {
                    let w = &spec.weights[k * c * taps..k * c * taps + c1 * taps];
                    let norm = w.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>().sqrt();
                    let bias = spec.bias.as_ref().map_or(0.0, |b| f64::from(b[k]).abs());
                    norm * input_range + bias
                })
                .fold(0.0f64, f64::max);
            (2.0 * out).max(spread / 127.0) as f32
        };
        let mut prev = None;
        for (j, &(c0, c1)) in parts.iter().enumerate() {
            let src = self.channel_view(spec.src, c0, c1 - c0, format!("{name}#c{c0}"));
            let (a, b) = (c0 as usize * taps, c1 as usize * taps);
            let weights: Vec<f32> = (0..spec.kernels as usize)
                .flat_map(|k| {
                    spec.weights[k * c * taps + a..k * c * taps + b]
                        .iter()
                        .copied()
                })
                .collect();
            let dst = if j + 1 == parts.len() {
                spec.dst
            } else {
                let mut tmp = self.surface_geometry(
                    &format!("{name}#partial{j}"),
                    spec.kernels,
                    spec.out[0],
                    spec.out[1],
                    SurfKind::Pool,
                );
                tmp.scale = partial_scale(c1 as usize);
                Some(self.p.add_surface(tmp))
            };
            self.emit_conv(
                i,
                ConvSpec {
                    src,
                    kernel: spec.kernel,
                    stride: spec.stride,
                    pad: spec.pad,
                    dilation: spec.dilation,
                    kernels: spec.kernels,
                    out: spec.out,
                    weights,
                    bias: if j == 0 { spec.bias.clone() } else { None },
                    dst,
                    accumulate: prev,
                },
            )?;
            prev = dst;
        }
        Ok(())
    }

    fn emit_conv(&mut self, i: usize, spec: ConvSpec) -> Result<()> {
        let n = &self.g.nodes[i];
        let t = *self.t;
        let s = self.p.surface(spec.src).clone();
        let [kh, kw] = spec.kernel;
        if kh > 32 || kw > 32 {
            return Err(layer_err(
                n,
                format!("kernel {kh}x{kw} exceeds the 32x32 the convolution core takes"),
            ));
        }
        if spec.pad.iter().any(|&p| p > 31) {
            return Err(layer_err(
                n,
                "padding above 31 is not supported by the hardware",
            ));
        }
        if spec.stride.iter().any(|&v| v == 0 || v > 8) {
            return Err(layer_err(n, "stride must be 1..=8"));
        }
        if spec.dilation.iter().any(|&v| v == 0 || v > 32) {
            return Err(layer_err(n, "dilation must be 1..=32"));
        }
        if spec.accumulate.is_none() {
            if let Some(parts) = self.channel_parts(&spec, &s) {
                return self.emit_conv_by_channels(i, spec, &parts);
            }
        }
        let bpk = kh * kw * s.c * t.bpe();
        // int8: weights in units of a scale per output channel (per-filter) or one per
        // layer (per-kernel); the accumulator's unit is input scale x weight scale.
        let per_kernel = (kh * kw * s.c) as usize;
        let mut weight_scales = vec![1.0f64; spec.kernels as usize];
        let mut qweights = Vec::new();
        if t.precision == Precision::Int8 {
            let amax: Vec<f64> = spec
                .weights
                .chunks(per_kernel.max(1))
                .map(|k| k.iter().fold(0.0f64, |m, v| m.max(f64::from(v.abs()))))
                .collect();
            let layer_max = amax.iter().fold(0.0f64, |m, v| m.max(*v));
            for (k, a) in amax.iter().enumerate() {
                let a = if self.q.per_filter { *a } else { layer_max };
                weight_scales[k] = if a > 0.0 { a / 127.0 } else { 1.0 };
            }
            qweights = spec
                .weights
                .iter()
                .enumerate()
                .map(|(i, w)| (f64::from(*w) / weight_scales[i / per_kernel.max(1)]) as f32)
                .collect();
        }
        let packed = pack::conv_weights(
            &t,
            if t.precision == Precision::Int8 {
                &qweights
            } else {
                &spec.weights
            },
            spec.kernels as usize,
            s.c as usize,
            kh as usize,
            kw as usize,
        );
        let eps = t.entries_per_slice(s.w, s.c);
        let banks = t.hw.cbuf_banks;
        let total_w = t.banks_for_weights(spec.kernels, bpk);
        let min_w = t.min_banks_for_weights(bpk);
        let data_banks_for = |rows: u32| (eps * rows).div_ceil(t.cbuf_entries_per_bank());
        // Output rows per operation: all, or as many as fit beside one kernel group.
        let rows_in = |o0: u32, o1: u32| -> (u32, u32, u32, u32) {
            // Input rows [top, bottom] of output rows [o0, o1), clamped, and the padding
            // left at each end.
            let first = i64::from(o0) * i64::from(spec.stride[0]) - i64::from(spec.pad[0]);
            let last = i64::from(o1 - 1) * i64::from(spec.stride[0]) - i64::from(spec.pad[0])
                + i64::from(spec.dilation[0] * (kh - 1));
            let top = first.max(0);
            let bottom = last.min(i64::from(s.h) - 1);
            (
                top as u32,
                (bottom - top + 1).max(1) as u32,
                (-first).max(0) as u32,
                (last - (i64::from(s.h) - 1)).max(0) as u32,
            )
        };
        let out_h = spec.out[0];
        // The most input rows a chunk of r output rows reads (one clear of both edges).
        let span = |r: u32| (r - 1) * spec.stride[0] + spec.dilation[0] * (kh - 1) + 1;
        // A single operation (all output rows) makes the CDMA fetch every input row, even
        // rows a strided kernel never reads; a chunk fetches its window.
        let fetched = |r: u32| if r >= out_h { s.h } else { span(r).min(s.h) };
        let fits = |r: u32| data_banks_for(fetched(r)) + min_w <= banks;
        let chunk = if data_banks_for(s.h) + min_w <= banks {
            out_h
        } else {
            let mut r = out_h;
            while r > 1 && !fits(r) {
                r -= 1;
            }
            if !fits(r) {
                return Err(layer_err(
                    n,
                    format!(
                        "one output row of this convolution needs more CBUF than {} has \
                         ({} banks for {} input rows of {}x{} and {min_w} for weights)",
                        t.hw.name,
                        data_banks_for(span(1)),
                        span(1),
                        s.w,
                        s.c
                    ),
                ));
            }
            r
        };
        let weights = self.p.add_blob(format!("{}-weights", n.name), packed);
        let mut layers = vec![n.name.clone()];

        // The SDP: bias in X1, then whatever element-wise layers follow.
        let mut sdp = SdpStages::default();
        if let Some(b) = &spec.bias {
            if b.len() != spec.kernels as usize {
                return Err(layer_err(
                    n,
                    format!("{} bias values for {} kernels", b.len(), spec.kernels),
                ));
            }
            if b.iter().any(|&v| v != 0.0) {
                sdp.push(
                    &t,
                    Stage::Affine {
                        scale: None,
                        bias: Some(b.clone()),
                    },
                )
                .map_err(|e| layer_err(n, e))?;
            }
        }
        if let Some(other) = spec.accumulate {
            sdp.push(
                &t,
                Stage::Eltwise {
                    alu: SdpAluType::Sum,
                    mul: false,
                    other,
                },
            )
            .map_err(|e| layer_err(n, e))?;
        }
        let unit: Option<Vec<f64>> = if t.precision == Precision::Int8 {
            let s_src = self.require_scale(spec.src)?;
            Some(weight_scales.iter().map(|w| s_src * w).collect())
        } else {
            None
        };
        let dst = match spec.dst {
            Some(d) => d,
            None => {
                let out_t = self.out_tensor(n)?;
                let (last, fused) = self.fuse_elementwise(out_t, &mut sdp, unit.as_deref())?;
                layers.extend(fused);
                self.output_surface(last)
            }
        };
        let ds = self.p.surface(dst);
        if ds.c != spec.kernels || ds.h != spec.out[0] || ds.w != spec.out[1] {
            return Err(layer_err(
                n,
                format!(
                    "output {}x{}x{} differs from the convolution's {}x{}x{}",
                    ds.c, ds.h, ds.w, spec.kernels, spec.out[0], spec.out[1]
                ),
            ));
        }
        let (stages, out_cvt) = self.encode_sdp(&sdp, &n.name, dst, unit)?;
        let lut = sdp.lut();
        let mut o0 = 0;
        while o0 < out_h {
            let o1 = (o0 + chunk).min(out_h);
            let whole = o0 == 0 && o1 == out_h;
            let (top, rows, pad_top, pad_bottom) = rows_in(o0, o1);
            // Chunks read a window of the input and write a window of the output, with
            // their element-wise operands windowed alike.
            let window = |p: &mut Program, id: SurfId, y: u32, h: u32| -> SurfId {
                if whole {
                    return id;
                }
                let mut v = p.surface(id).clone();
                v.name = format!("{}@{y}", v.name);
                v.kind = SurfKind::View {
                    parent: id,
                    channel_offset: 0,
                    x: 0,
                    y,
                };
                v.size = v.c.div_ceil(t.channels_per_atom()).saturating_sub(1) * v.surf_stride
                    + (h - 1) * v.line_stride
                    + v.w * t.atom();
                v.h = h;
                p.add_surface(v)
            };
            let src = window(&mut self.p, spec.src, top, rows);
            let out = window(&mut self.p, dst, o0, o1 - o0);
            let mut chunk_stages = stages;
            for st in chunk_stages.iter_mut().flatten() {
                if let Operand::PerElement(id) = st.operand {
                    st.operand = Operand::PerElement(window(&mut self.p, id, o0, o1 - o0));
                }
            }
            // The CDMA fetches the whole source cube it is programmed with: all of the
            // input's rows for a single operation, even those a strided or short kernel
            // never reads (a 1x1 stride-2 convolution of 28 rows reads 27).
            let data_banks = data_banks_for(if whole { s.h } else { rows });
            if data_banks + min_w > banks {
                return Err(layer_err(
                    n,
                    format!(
                        "rows {o0}..{o1}: {data_banks} data banks and {min_w} for weights \
                         exceed the {banks} of {}",
                        t.hw.name
                    ),
                ));
            }
            // Upstream's order of preference: all weights resident; else two kernel
            // groups (ping-pong); else one.
            let weight_banks = if data_banks + total_w <= banks {
                total_w
            } else if data_banks + 2 * min_w <= banks {
                2 * min_w
            } else {
                min_w
            };
            self.p.ops.push(HwOp {
                layers: if whole {
                    layers.clone()
                } else {
                    layers.iter().map(|l| format!("{l}@{o0}")).collect()
                },
                kind: HwOpKind::Conv(ConvOp {
                    src,
                    kernel: spec.kernel,
                    stride: spec.stride,
                    pad: [pad_top, spec.pad[1], pad_bottom, spec.pad[3]],
                    dilation: spec.dilation,
                    kernels: spec.kernels,
                    channels: s.c,
                    out: [o1 - o0, spec.out[1]],
                    weights,
                    bytes_per_kernel: bpk,
                    data_banks,
                    weight_banks,
                    entries_per_slice: eps,
                    data_reuse: false,
                    skip_data_release: false,
                    sdp: SdpOp {
                        src: None,
                        dst: out,
                        stages: chunk_stages,
                        lut,
                        out_cvt,
                    },
                }),
            });
            o0 = o1;
        }
        Ok(())
    }

    /// Folds the element-wise layers that follow tensor `t` into `sdp` while they can be:
    /// `t` feeds only that layer, is not a network output, and the layer's other inputs
    /// are already computed. Returns the last tensor computed and the layers fused.
    /// `unit` (int8): the SDP input's unit, to check that the int8 plan of the chain still
    /// fits the build's stages before a layer joins it.
    fn fuse_elementwise(
        &mut self,
        mut t: TensorId,
        sdp: &mut SdpStages,
        unit: Option<&[f64]>,
    ) -> Result<(TensorId, Vec<String>)> {
        let g = self.g;
        let mut fused = Vec::new();
        loop {
            if g.outputs.contains(&t) || self.views.contains_key(&t) {
                break;
            }
            let consumers = g.consumers(t);
            let [next] = consumers.as_slice() else { break };
            let j = next.0;
            if self.done[j] {
                break;
            }
            let n = &g.nodes[j];
            let Ok(out) = self.out_tensor(n) else { break };
            let (before, luts) = (sdp.clone(), self.p.luts.len());
            match self.elementwise_stages(n, t, sdp)? {
                Ok(()) if unit.is_some_and(|u| !self.int8_fits(sdp, u, out)) => {
                    // Too many int8 stages: the chain goes on in another SDP operation.
                    *sdp = before;
                    self.p.luts.truncate(luts);
                    break;
                }
                Ok(()) => {
                    self.done[j] = true;
                    fused.push(n.name.clone());
                    t = out;
                }
                Err(_) => break,
            }
        }
        Ok((t, fused))
    }

    /// Whether `sdp`, ending in tensor `out`, has an int8 plan that fits the build (from the
    /// input unit `unit`); true when `out` has no scale yet (encoding then says why).
    fn int8_fits(&self, sdp: &SdpStages, unit: &[f64], out: TensorId) -> bool {
        let out_scale = f64::from(self.scale_of(out, false));
        if !(out_scale.is_finite() && out_scale > 0.0) {
            return true;
        }
        let scale_of = |id: SurfId| f64::from(self.p.surface(id).scale);
        sdp.fits_int8(self.t, unit, out_scale, &scale_of)
    }

    /// Adds the SDP stages for element-wise node `n` whose main input is `main`. The
    /// inner `Err` says why the SDP cannot take it here (stages full, operand not computed
    /// yet, not element-wise); `sdp` is then unchanged.
    fn elementwise_stages(
        &mut self,
        n: &Node,
        main: TensorId,
        sdp: &mut SdpStages,
    ) -> Result<std::result::Result<(), Refusal>> {
        let t = *self.t;
        let c = self.g.shape(main).c;
        let snapshot = sdp.clone();
        let r = match &n.op {
            Op::Activation(Activation::Relu { slope }) if *slope == 0.0 => sdp.relu(&t),
            Op::Activation(Activation::Relu { slope }) => {
                sdp.push(&t, Stage::PRelu(vec![*slope; c]))
            }
            Op::Activation(Activation::PRelu { slopes }) => {
                sdp.push(&t, Stage::PRelu(broadcast(&slopes.data, c, n)?))
            }
            Op::Activation(Activation::Clip { lo, hi }) => {
                // ReLU6 and friends: ReLU for a bound at 0, then the upper bound.
                let snap = sdp.clone();
                let mut r = if *lo == 0.0 {
                    sdp.relu(&t)
                } else if lo.is_finite() {
                    sdp.push(
                        &t,
                        Stage::Bound {
                            alu: SdpAluType::Max,
                            value: *lo,
                        },
                    )
                } else {
                    Ok(())
                };
                if r.is_ok() && hi.is_finite() {
                    r = sdp.push(
                        &t,
                        Stage::Bound {
                            alu: SdpAluType::Min,
                            value: *hi,
                        },
                    );
                }
                if r.is_err() {
                    *sdp = snap;
                }
                r
            }
            Op::Activation(a @ (Activation::Sigmoid | Activation::Tanh)) => {
                if !t.hw.features.sdp_lut {
                    return Err(layer_err(
                        n,
                        format!("{} has no SDP lookup table for {}", t.hw.name, n.op.name()),
                    ));
                }
                if sdp.has_lut() {
                    Err("one LUT per SDP operation".to_string())
                } else {
                    let lut = self.p.luts.len();
                    let f = match a {
                        Activation::Sigmoid => crate::sdp::LutFn::Sigmoid,
                        _ => crate::sdp::LutFn::Tanh,
                    };
                    let r = sdp.push(&t, Stage::Lut(lut, f));
                    if r.is_ok() {
                        self.p.luts.push(match a {
                            Activation::Sigmoid => crate::lut::sigmoid(),
                            _ => crate::lut::tanh(),
                        });
                    }
                    r
                }
            }
            Op::ChannelAffine { scale, bias } => {
                let scale = scale
                    .as_ref()
                    .map(|s| broadcast(&s.data, c, n))
                    .transpose()?;
                let bias = bias
                    .as_ref()
                    .map(|b| broadcast(&b.data, c, n))
                    .transpose()?;
                sdp.push(&t, Stage::Affine { scale, bias })
            }
            Op::BatchNorm { mean, var, eps } => {
                let m = broadcast(&mean.data, c, n)?;
                let v = broadcast(&var.data, c, n)?;
                let scale: Vec<f32> = v.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
                let bias: Vec<f32> = m.iter().zip(&scale).map(|(m, s)| -m * s).collect();
                sdp.push(
                    &t,
                    Stage::Affine {
                        scale: Some(scale),
                        bias: Some(bias),
                    },
                )
            }
            Op::Power {
                power,
                scale,
                shift,
            } if *power == 1.0 => sdp.push(
                &t,
                Stage::Affine {
                    scale: Some(vec![*scale; c]),
                    bias: Some(vec![*shift; c]),
                },
            ),
            Op::Eltwise { kind, coeffs } if n.inputs.len() == 2 => {
                let main_first = n.inputs[0] == main;
                let other_t = if main_first { n.inputs[1] } else { n.inputs[0] };
                let (ms, os) = (self.g.shape(main), self.g.shape(other_t));
                match self.surf.get(&other_t) {
                    _ if other_t == main => Err("an operand twice".to_string()),
                    _ if os != ms && !os.is_channel_vector_of(ms) => Err(format!(
                        "its main input {ms} is broadcast over the other, {os}: the SDP \
                         reads a per-element or per-channel operand"
                    )),
                    None => Err("its other operand is not computed yet".to_string()),
                    Some(&other) => {
                        let (alu, mul) = match kind {
                            EltwiseKind::Sum => (SdpAluType::Sum, false),
                            EltwiseKind::Max => (SdpAluType::Max, false),
                            EltwiseKind::Prod => (SdpAluType::Sum, true),
                        };
                        let coeff = |i: usize| coeffs.get(i).copied().unwrap_or(1.0);
                        let (cm, co) = if main_first {
                            (coeff(0), coeff(1))
                        } else {
                            (coeff(1), coeff(0))
                        };
                        let elt = Stage::Eltwise { alu, mul, other };
                        if *kind != EltwiseKind::Sum || (cm == 1.0 && co == 1.0) {
                            sdp.push(&t, elt)
                        } else if co == 0.0 {
                            sdp.push(
                                &t,
                                Stage::Affine {
                                    scale: Some(vec![cm; c]),
                                    bias: None,
                                },
                            )
                        } else {
                            // c_m x_m + c_o x_o = c_o (x_m c_m / c_o + x_o); the factor
                            // after the sum only when c_o is not 1.
                            sdp.push(
                                &t,
                                Stage::Affine {
                                    scale: Some(vec![cm / co; c]),
                                    bias: None,
                                },
                            )
                            .and_then(|()| sdp.push(&t, elt))
                            .and_then(|()| {
                                if co == 1.0 {
                                    return Ok(());
                                }
                                sdp.push(
                                    &t,
                                    Stage::Affine {
                                        scale: Some(vec![co; c]),
                                        bias: None,
                                    },
                                )
                            })
                        }
                    }
                }
            }
            _ => Err(format!("{} is not an SDP operation", n.op.name())),
        };
        if r.is_err() {
            *sdp = snapshot;
        }
        Ok(r)
    }

    /// Element-wise layers with no convolution before them: SDP reading memory.
    fn standalone_sdp(&mut self, i: usize) -> Result<()> {
        let n = &self.g.nodes[i];
        let t = *self.t;
        let src = self.input(n, 0)?;
        let main = n.inputs[0];
        let mut sdp = SdpStages::default();
        let mut layers = vec![n.name.clone()];
        if let Err(why) = self.elementwise_stages(n, main, &mut sdp)? {
            return Err(layer_err(n, why));
        }
        let out = self.out_tensor(n)?;
        if sdp.is_empty() {
            // An identity (e.g. scale 1): alias instead of copying.
            if !self.g.outputs.contains(&out) && !self.views.contains_key(&out) {
                self.surf.insert(out, src);
                return Ok(());
            }
            sdp.push(&t, Stage::Pass).map_err(|e| layer_err(n, e))?;
        }
        let unit = self.uniform_unit(src)?;
        let (last, fused) = self.fuse_elementwise(out, &mut sdp, unit.as_deref())?;
        layers.extend(fused);
        let dst = self.output_surface(last);
        let (stages, out_cvt) = self.encode_sdp(&sdp, &n.name, dst, unit)?;
        self.p.ops.push(HwOp {
            layers,
            kind: HwOpKind::Sdp(SdpOp {
                src: Some(src),
                dst,
                stages,
                lut: sdp.lut(),
                out_cvt,
            }),
        });
        Ok(())
    }

    /// Global pooling over more than 8x8 pixels, in PDP passes of windows up to 8x8: each
    /// pass pools windows of `a x b` (stride `a x b`) over its input padded to a multiple
    /// of the window, until one window covers what is left (two passes up to 64x64, three
    /// up to 512x512). Max pooling ignores the padding; average pooling counts it as
    /// zeros, so an SDP then scales by `padded area / area`.
    fn global_pool(
        &mut self,
        n: &Node,
        kind: PoolKind,
        src: SurfId,
        out_t: TensorId,
    ) -> Result<()> {
        let t = *self.t;
        let s = self.p.surface(src).clone();
        // The windows along one axis: each the smallest `a` (<= 8, padding <= 7) after
        // which the rest fits one more window, or 8 while it does not; the last window
        // covers the rest.
        let factors = |mut size: u32| -> Vec<u32> {
            let mut v = Vec::new();
            while size > 8 {
                let a = (1..=8)
                    .find(|&a| size.div_ceil(a) <= 8 && a * size.div_ceil(a) - size <= 7)
                    .unwrap_or(8);
                v.push(a);
                size = size.div_ceil(a);
            }
            v.push(size);
            v
        };
        let (mut fh, mut fw) = (factors(s.h), factors(s.w));
        let passes = fh.len().max(fw.len());
        if passes > 4 {
            return Err(layer_err(
                n,
                format!(
                    "global pooling over {}x{} needs more than 4 PDP passes",
                    s.h, s.w
                ),
            ));
        }
        // Windows of 1 before the last one of the shorter axis.
        for f in [&mut fh, &mut fw] {
            while f.len() < passes {
                f.insert(f.len() - 1, 1);
            }
        }
        let max = kind == PoolKind::Max;
        let mut cur = src;
        let (mut h, mut w) = (s.h, s.w);
        for k in 0..passes - 1 {
            let (ah, aw) = (fh[k], fw[k]);
            let (mh, mw) = (h.div_ceil(ah), w.div_ceil(aw));
            let mut mid = self.surface_geometry(
                &format!("{}#partial{}", n.name, k + 1),
                s.c,
                mh,
                mw,
                SurfKind::Pool,
            );
            mid.scale = s.scale;
            let mid = self.p.add_surface(mid);
            self.p.ops.push(HwOp {
                layers: vec![format!("{}#{}", n.name, k + 1)],
                kind: HwOpKind::Pdp(PdpOp {
                    src: cur,
                    dst: mid,
                    max,
                    kernel: [ah, aw],
                    stride: [ah, aw],
                    pad: [0, 0, ah * mh - h, aw * mw - w],
                    pad_value: 0,
                }),
            });
            (cur, h, w) = (mid, mh, mw);
        }
        let (mid, mh, mw) = (cur, h, w);
        let padded: u32 = fh.iter().product::<u32>() * fw.iter().product::<u32>();
        let exact = max || padded == s.h * s.w;
        let dst = if exact {
            self.inherit.insert(out_t, s.scale);
            let d = self.output_surface(out_t);
            self.check_scale_kept(n, src, d)?;
            d
        } else {
            let mut g =
                self.surface_geometry(&format!("{}#sum", n.name), s.c, 1, 1, SurfKind::Pool);
            g.scale = s.scale;
            self.p.add_surface(g)
        };
        self.p.ops.push(HwOp {
            layers: vec![n.name.clone()],
            kind: HwOpKind::Pdp(PdpOp {
                src: mid,
                dst,
                max,
                kernel: [mh, mw],
                stride: [mh, mw],
                pad: [0; 4],
                pad_value: 0,
            }),
        });
        if !exact {
            let mut sdp = SdpStages::default();
            let scale = padded as f32 / (s.h * s.w) as f32;
            sdp.push(
                &t,
                Stage::Affine {
                    scale: Some(vec![scale; s.c as usize]),
                    bias: None,
                },
            )
            .map_err(|e| layer_err(n, e))?;
            let unit = self.uniform_unit(dst)?;
            let (last, fused) = self.fuse_elementwise(out_t, &mut sdp, unit.as_deref())?;
            let out = self.output_surface(last);
            let (stages, out_cvt) = self.encode_sdp(&sdp, &n.name, out, unit)?;
            let mut layers = vec![format!("{}#scale", n.name)];
            layers.extend(fused);
            self.p.ops.push(HwOp {
                layers,
                kind: HwOpKind::Sdp(SdpOp {
                    src: Some(dst),
                    dst: out,
                    stages,
                    // A fused sigmoid or tanh brings its table.
                    lut: sdp.lut(),
                    out_cvt,
                }),
            });
        }
        Ok(())
    }

    fn pool(&mut self, n: &Node, p: &crate::ir::Pool) -> Result<()> {
        let src = self.input(n, 0)?;
        let s = self.p.surface(src).clone();
        let out_t = self.out_tensor(n)?;
        let out = self.g.shape(out_t);
        let [kh, kw] = p.window.kernel.map(|v| v as u32);
        let [sh, sw] = p.window.stride.map(|v| v as u32);
        let [pt, pl, _, _] = p.window.pad.map(|v| v as u32);
        let global = out.h == 1 && out.w == 1 && kh == s.h && kw == s.w && pt == 0 && pl == 0;
        if global && (kh > 8 || kw > 8) {
            return self.global_pool(n, p.kind, src, out_t);
        }
        if !(1..=8).contains(&kh) || !(1..=8).contains(&kw) {
            return Err(layer_err(
                n,
                format!(
                    "pooling window {kh}x{kw}: PDP takes 1..=8 (larger windows are not split yet)"
                ),
            ));
        }
        if !(1..=16).contains(&sh) || !(1..=16).contains(&sw) {
            return Err(layer_err(n, format!("stride {sh}x{sw}: PDP takes 1..=16")));
        }
        // Bottom/right padding so that PDP's floor((H + pt + pb - k) / s) + 1 gives the
        // network's output size (Caffe rounds up).
        let pad_end = |size: u32, outn: u32, k: u32, st: u32, start: u32| -> i64 {
            (i64::from(outn) - 1) * i64::from(st) + i64::from(k)
                - i64::from(size)
                - i64::from(start)
        };
        let pb = pad_end(s.h, out.h as u32, kh, sh, pt).max(0) as u32;
        let pr = pad_end(s.w, out.w as u32, kw, sw, pl).max(0) as u32;
        let hw_out = |size: u32, k: u32, st: u32, a: u32, b: u32| (size + a + b - k) / st + 1;
        if hw_out(s.h, kh, sh, pt, pb) != out.h as u32
            || hw_out(s.w, kw, sw, pl, pr) != out.w as u32
        {
            return Err(layer_err(
                n,
                format!(
                    "output {}x{} cannot be produced by PDP from {}x{} (window {kh}x{kw}, \
                     stride {sh}x{sw})",
                    out.h, out.w, s.h, s.w
                ),
            ));
        }
        if [pt, pl, pb, pr].iter().any(|&v| v > 7) {
            return Err(layer_err(n, "PDP padding is at most 7"));
        }
        // Average pooling whose windows do not all divide by the full window (ceil-mode
        // windows past the declared padding; padding excluded from the divisor): the
        // output splits into rectangles of equal divisor, one PDP operation each.
        let segments = if p.kind == PoolKind::Avg {
            let [_, _, db, dr] = p.window.pad.map(|v| v as u32);
            let include = p.count_include_pad;
            let rows = avg_segments(s.h, kh, sh, pt, db, out.h as u32, include);
            let cols = avg_segments(s.w, kw, sw, pl, dr, out.w as u32, include);
            match (rows, cols) {
                (Some(r), Some(c)) if r.len() == 1 && c.len() == 1 => None,
                (Some(r), Some(c)) => Some((r, c)),
                _ => {
                    return Err(layer_err(
                        n,
                        "average pooling with a window that covers no input element or \
                         whose divisor changes without a regular stride: PDP divides every \
                         window of an operation by one size",
                    ))
                }
            }
        } else {
            None
        };
        if let Some((rows, cols)) = &segments {
            let bad = rows
                .iter()
                .chain(cols)
                .find(|g| g.kernel > 8 || g.pad0 > 7 || g.pad1 > 7);
            if let Some(g) = bad {
                return Err(layer_err(
                    n,
                    format!(
                        "average pooling split by divisor needs a {}-wide window with padding \
                         {}/{}: PDP takes windows of 1..=8 and padding up to 7",
                        g.kernel, g.pad0, g.pad1
                    ),
                ));
            }
        }
        // PDP cannot rescale: in int8 the output keeps the input's scale. Where the
        // output's scale is fixed otherwise (a view into a concatenation calibrated to
        // another scale: Inception's and DenseNet's pooling branches), the PDP writes a
        // surface of its own and an SDP pass rescales it into place.
        self.inherit.insert(out_t, s.scale);
        let dst = self.output_surface(out_t);
        let rescale = self.t.precision == Precision::Int8 && {
            let b = self.p.surface(dst).scale;
            (s.scale - b).abs() > s.scale.abs() * 1e-6
        };
        let pooled = if rescale {
            let d = self.p.surface(dst).clone();
            let mut tmp =
                self.surface_geometry(&format!("{}#pooled", n.name), d.c, d.h, d.w, SurfKind::Pool);
            tmp.scale = s.scale;
            self.p.add_surface(tmp)
        } else {
            dst
        };
        self.check_scale_kept(n, src, pooled)?;
        match segments {
            None => self.p.ops.push(HwOp {
                layers: vec![n.name.clone()],
                kind: HwOpKind::Pdp(PdpOp {
                    src,
                    dst: pooled,
                    max: p.kind == PoolKind::Max,
                    kernel: [kh, kw],
                    stride: [sh, sw],
                    pad: [pt, pl, pb, pr],
                    pad_value: 0,
                }),
            }),
            Some((rows, cols)) => {
                for r in &rows {
                    for c in &cols {
                        let tag = format!("{}#y{}x{}", n.name, r.out0, c.out0);
                        let part_in =
                            self.window_view(src, (r.in0, c.in0), (r.in_len, c.in_len), &tag);
                        let part_out = self.window_view(
                            pooled,
                            (r.out0, c.out0),
                            (r.count, c.count),
                            &format!("{tag}#out"),
                        );
                        self.p.ops.push(HwOp {
                            layers: vec![n.name.clone()],
                            kind: HwOpKind::Pdp(PdpOp {
                                src: part_in,
                                dst: part_out,
                                max: false,
                                kernel: [r.kernel, c.kernel],
                                stride: [sh, sw],
                                pad: [r.pad0, c.pad0, r.pad1, c.pad1],
                                pad_value: 0,
                            }),
                        });
                    }
                }
            }
        }
        if rescale {
            let t = *self.t;
            let mut sdp = SdpStages::default();
            sdp.push(&t, Stage::Pass).map_err(|e| layer_err(n, e))?;
            let unit = self.uniform_unit(pooled)?;
            let (stages, out_cvt) = self.encode_sdp(&sdp, &n.name, dst, unit)?;
            self.p.ops.push(HwOp {
                layers: vec![format!("{}#rescale", n.name)],
                kind: HwOpKind::Sdp(SdpOp {
                    src: Some(pooled),
                    dst,
                    stages,
                    lut: None,
                    out_cvt,
                }),
            });
        }
        Ok(())
    }
}

/// Most operations one grouped convolution is split into ([`Lowering::group_chunk`]).
const MAX_GROUP_PARTS: usize = 16;

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: usize, b: usize) -> usize {
    a / gcd(a, b) * b
}

struct ConvSpec {
    src: SurfId,
    kernel: [u32; 2],
    stride: [u32; 2],
    pad: [u32; 4],
    dilation: [u32; 2],
    kernels: u32,
    out: [u32; 2],
    weights: Vec<f32>,
    bias: Option<Vec<f32>>,
    /// Write here and fuse nothing after (an intermediate of a lowering).
    dst: Option<SurfId>,
    /// Add this surface (a partial sum over other input channels) in the SDP.
    accumulate: Option<SurfId>,
}

/// Consecutive outputs of one average-pooling axis whose windows have one divisor, and
/// the PDP window that computes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AvgSegment {
    /// First output.
    out0: u32,
    /// Outputs.
    count: u32,
    /// First input element read.
    in0: u32,
    /// Input elements read.
    in_len: u32,
    /// PDP window: the divisor.
    kernel: u32,
    /// PDP padding before and after (zeros that count in the divisor).
    pad0: u32,
    pad1: u32,
}

/// The segments of one axis of average pooling: input `size`, window `k`, stride `st`,
/// declared padding `p0`/`p1`, `n` outputs (Caffe's ceil mode may add a last window that
/// runs past `p1`). A window's divisor is its extent clipped to the padded input
/// (`count_include_pad`: Caffe's `min(start + k, size + pad)`, ONNX the same) or to the
/// input (padding excluded). `None` when a window covers no input or outputs of one
/// divisor do not step by the stride.
fn avg_segments(
    size: u32,
    k: u32,
    st: u32,
    p0: u32,
    p1: u32,
    n: u32,
    include_pad: bool,
) -> Option<Vec<AvgSegment>> {
    let (size, k, st, p0, p1) = (
        i64::from(size),
        i64::from(k),
        i64::from(st),
        i64::from(p0),
        i64::from(p1),
    );
    // (clipped start, divisor) of each output.
    let window = |o: i64| {
        let start = o * st - p0;
        let (lo, hi) = if include_pad {
            (-p0, size + p1)
        } else {
            (0, size)
        };
        let (a, b) = (start.max(lo), (start + k).min(hi));
        (a, b - a)
    };
    let mut segs: Vec<(i64, i64, i64, i64)> = Vec::new(); // (out0, count, start0, len)
    for o in 0..i64::from(n) {
        let (a, len) = window(o);
        if len <= 0 || a + len <= 0 || a >= size {
            return None;
        }
        match segs.last_mut() {
            Some(g) if g.3 == len && a == g.2 + g.1 * st => g.1 += 1,
            _ => segs.push((o, 1, a, len)),
        }
    }
    segs.into_iter()
        .map(|(out0, count, a, len)| {
            let end = a + (count - 1) * st + len; // one past the last element windowed
            let in0 = a.max(0);
            let in_end = end.min(size);
            Some(AvgSegment {
                out0: u32::try_from(out0).ok()?,
                count: u32::try_from(count).ok()?,
                in0: u32::try_from(in0).ok()?,
                in_len: u32::try_from(in_end - in0).ok()?,
                kernel: u32::try_from(len).ok()?,
                pad0: u32::try_from(in0 - a).ok()?,
                pad1: u32::try_from(end - in_end).ok()?,
            })
        })
        .collect()
}

/// A per-channel vector of length `c` from one of length `c` or 1.
fn broadcast(v: &[f32], c: usize, n: &Node) -> Result<Vec<f32>> {
    match v.len() {
        1 => Ok(vec![v[0]; c]),
        l if l == c => Ok(v.to_vec()),
        l => Err(layer_err(n, format!("{l} values for {c} channels"))),
    }
}

#[cfg(test)]
mod tests {
    use super::{avg_segments, AvgSegment};

    fn seg(
        out0: u32,
        count: u32,
        in0: u32,
        in_len: u32,
        kernel: u32,
        pad: (u32, u32),
    ) -> AvgSegment {
        AvgSegment {
            out0,
            count,
            in0,
            in_len,
            kernel,
            pad0: pad.0,
            pad1: pad.1,
        }
    }

    #[test]
    fn average_pooling_splits_where_the_divisor_changes() {
        // Regular: 3x3 stride 1 pad 1 on 5, padding counted: one operation as before.
        assert_eq!(
            avg_segments(5, 3, 1, 1, 1, 5, true),
            Some(vec![seg(0, 5, 0, 5, 3, (1, 1))])
        );
        // Caffe ceil mode (4 -> 3 with 3/2 pad 1): the last window [3, 6) runs past the
        // padded input [-1, 5), so its divisor is 2.
        assert_eq!(
            avg_segments(4, 3, 2, 1, 1, 3, true),
            Some(vec![seg(0, 2, 0, 4, 3, (1, 0)), seg(2, 1, 3, 1, 2, (0, 1))])
        );
        // Padding excluded: the first and last windows hold 2 elements, the others 3.
        assert_eq!(
            avg_segments(5, 3, 1, 1, 1, 5, false),
            Some(vec![
                seg(0, 1, 0, 2, 2, (0, 0)),
                seg(1, 3, 0, 5, 3, (0, 0)),
                seg(4, 1, 3, 2, 2, (0, 0)),
            ])
        );
        // A window that covers no input.
        assert_eq!(avg_segments(2, 2, 2, 0, 0, 3, true), None);
    }
}
