//! Target-independent graph passes, and the `--dump-ir` text dump.
//!
//! Each pass is a function `&mut Graph -> Result<bool>` that returns whether it changed the
//! graph; [`run_all`] applies them until none does. Every pass keeps [`Graph::check`] valid,
//! keeps the graph's input and output tensors (ids and names), and does not change what the
//! network computes beyond `f32` rounding (the tests run the [`reference`](crate::reference)
//! interpreter before and after).
//!
//! Rewrites that remove a node `X: a -> b` reconnect its neighbours in one of two ways:
//! * the readers of `b` read `a` instead (when `b` is not a graph output), or
//! * the producer of `a` produces `b` directly, and `a`'s other readers read `b` (when `b`
//!   is a graph output, so its name survives, and `a` is an intermediate tensor).
//!
//! The tensor left without producer or readers stays in [`Graph::tensors`] (ids are never
//! renumbered); the reference interpreter gives it an empty value.

use crate::error::{CompileError, Result};
use crate::ir::{Activation, Conv, Graph, Node, Op, TensorId, Weights};
use std::fmt::Write as _;

/// Upper bound on [`run_all`]'s rounds; every round shrinks or canonicalises the graph, so
/// reaching it means a pass undoes another.
const MAX_ROUNDS: usize = 1000;

/// A graph pass: whether it changed the graph.
pub type Pass = fn(&mut Graph) -> Result<bool>;

/// Apply every pass until none changes the graph. Returns whether any did.
///
/// Order within a round: [`canonicalize_affine`], [`remove_identities`],
/// [`merge_affine`], [`fold_affine_into_conv`].
///
/// # Errors
///
/// The first error of a pass; [`CompileError::Network`] if a pass breaks the graph's
/// invariants (a compiler bug) or the passes do not settle.
pub fn run_all(g: &mut Graph) -> Result<bool> {
    let passes: [(&str, Pass); 6] = [
        ("canonicalize_affine", canonicalize_affine),
        ("remove_identities", remove_identities),
        ("merge_affine", merge_affine),
        ("fold_affine_into_conv", fold_affine_into_conv),
        ("fold_scale_into_readers", fold_scale_into_readers),
        ("fold_selections", fold_selections),
    ];
    let mut any = false;
    for _ in 0..MAX_ROUNDS {
        let mut changed = false;
        for (name, pass) in passes {
            if pass(g)? {
                g.check()
                    .map_err(|e| CompileError::Network(format!("after pass {name}: {e}")))?;
                changed = true;
            }
        }
        if !changed {
            return Ok(any);
        }
        any = true;
    }
    Err(CompileError::Network(format!(
        "graph passes did not settle after {MAX_ROUNDS} rounds"
    )))
}

/// Remove `Identity` nodes (Dropout, Split, ...), reconnecting their readers to the input.
///
/// An identity stays when removing it would rename a graph input or output: its input is a
/// graph input or output and its output a graph output, or two of its outputs are graph
/// outputs. `Flatten` is not an identity here (it changes the layout the hardware sees).
pub fn remove_identities(g: &mut Graph) -> Result<bool> {
    let mut changed = false;
    let mut i = 0;
    while i < g.nodes.len() {
        if g.nodes[i].op == Op::Identity && bypass(g, i) {
            g.nodes.remove(i);
            changed = true;
        } else {
            i += 1;
        }
    }
    Ok(changed)
}

/// Rewrite affine ops to `ChannelAffine` in a canonical form:
/// * `BatchNorm` becomes `ChannelAffine` with `scale = 1/sqrt(var + eps)` and
///   `bias = -mean * scale` (computed in `f64`);
/// * `Power` with `power == 1` becomes `ChannelAffine` with one-element scale and bias;
/// * an all-ones scale and an all-zeros bias are dropped, and a `ChannelAffine` with
///   neither becomes `Identity` (which [`remove_identities`] removes).
///
/// # Errors
///
/// [`CompileError::Layer`] for a `BatchNorm` whose statistics do not have one value per
/// channel or whose `var + eps` is not positive.
pub fn canonicalize_affine(g: &mut Graph) -> Result<bool> {
    let mut changed = false;
    for i in 0..g.nodes.len() {
        let channels = match g.nodes[i].inputs.as_slice() {
            [x] => g.shape(*x).c,
            _ => continue,
        };
        let node = &mut g.nodes[i];
        let new_op = match &node.op {
            Op::BatchNorm { mean, var, eps } => {
                if mean.len() != channels || var.len() != channels {
                    return Err(node_error(
                        node,
                        format!(
                            "{} means and {} variances for {channels} channels",
                            mean.len(),
                            var.len()
                        ),
                    ));
                }
                let mut scale = Vec::with_capacity(channels);
                let mut bias = Vec::with_capacity(channels);
                for (c, (&m, &v)) in mean.data.iter().zip(&var.data).enumerate() {
                    let d = f64::from(v) + f64::from(*eps);
                    if d.is_nan() || d <= 0.0 {
                        return Err(node_error(
                            node,
                            format!("channel {c}: variance + eps = {d} is not positive"),
                        ));
                    }
                    let s = 1.0 / d.sqrt();
                    scale.push(s as f32);
                    bias.push((-f64::from(m) * s) as f32);
                }
                Some(affine(
                    Some(Weights::vector(scale)),
                    Some(Weights::vector(bias)),
                ))
            }
            Op::Power {
                power,
                scale,
                shift,
            } if *power == 1.0 => Some(affine(
                Some(Weights::vector(vec![*scale])),
                Some(Weights::vector(vec![*shift])),
            )),
            Op::ChannelAffine { scale, bias } => {
                let canonical = affine(scale.clone(), bias.clone());
                (canonical != node.op).then_some(canonical)
            }
            _ => None,
        };
        if let Some(op) = new_op {
            node.op = op;
            changed = true;
        }
    }
    Ok(changed)
}

/// Merge a `ChannelAffine` into the `ChannelAffine` before it, when the first one's output
/// is read by the second only and is not a graph output:
/// `(x * s1 + t1) * s2 + t2 = x * (s1 * s2) + (t1 * s2 + t2)`.
///
/// The merged node keeps the first node's name and produces the second one's output.
///
/// # Errors
///
/// [`CompileError::Layer`] for a scale or bias whose length is neither 1 nor the channel
/// count.
pub fn merge_affine(g: &mut Graph) -> Result<bool> {
    let mut changed = false;
    let mut i = 0;
    while i < g.nodes.len() {
        let first = &g.nodes[i];
        let reader = if matches!(first.op, Op::ChannelAffine { .. }) && first.inputs.len() == 1 {
            sole_reader(g, i, |op| matches!(op, Op::ChannelAffine { .. }))
        } else {
            None
        };
        let Some(j) = reader else {
            i += 1;
            continue;
        };
        let c = g.shape(g.nodes[i].outputs[0]).c;
        let (
            Op::ChannelAffine {
                scale: s1,
                bias: t1,
            },
            Op::ChannelAffine {
                scale: s2,
                bias: t2,
            },
        ) = (&g.nodes[i].op, &g.nodes[j].op)
        else {
            i += 1;
            continue;
        };
        let f1 = Affine::of(&g.nodes[i], s1, t1, c)?;
        let f2 = Affine::of(&g.nodes[j], s2, t2, c)?;
        let width = |parts: &[usize]| if parts.iter().all(|&w| w <= 1) { 1 } else { c };
        let scale = (s1.is_some() || s2.is_some()).then(|| {
            let n = width(&[f1.scale_len, f2.scale_len]);
            Weights::vector((0..n).map(|k| (f1.s(k) * f2.s(k)) as f32).collect())
        });
        let bias = (t1.is_some() || t2.is_some()).then(|| {
            // t1 * s2 varies by channel only if t1 is present.
            let n = if f1.bias_len == 0 {
                width(&[f2.bias_len])
            } else {
                width(&[f1.bias_len, f2.scale_len, f2.bias_len])
            };
            Weights::vector(
                (0..n)
                    .map(|k| (f1.t(k) * f2.s(k) + f2.t(k)) as f32)
                    .collect(),
            )
        });
        let second = g.nodes.remove(j);
        let first = &mut g.nodes[i];
        first.op = Op::ChannelAffine { scale, bias };
        first.outputs = second.outputs;
        changed = true;
        // Node i may merge with its new reader too: look at it again.
    }
    Ok(changed)
}

/// Fold a `ChannelAffine` into the `Conv`, `Deconv` or `FullyConnected` before it, when the
/// layer's output is read by the affine only and is not a graph output: output channel
/// `k`'s weights are multiplied by `s[k]` and its bias becomes `b[k] * s[k] + t[k]`.
///
/// The layer keeps its name and produces the affine's output.
///
/// # Errors
///
/// [`CompileError::Layer`] for an affine constant whose length is neither 1 nor the channel
/// count, or a layer whose weights do not fit its shapes.
pub fn fold_affine_into_conv(g: &mut Graph) -> Result<bool> {
    let mut changed = false;
    let mut i = 0;
    while i < g.nodes.len() {
        let is_layer = matches!(
            g.nodes[i].op,
            Op::Conv(_) | Op::Deconv(_) | Op::FullyConnected { .. }
        );
        let reader = if is_layer {
            sole_reader(g, i, |op| matches!(op, Op::ChannelAffine { .. }))
        } else {
            None
        };
        let Some(j) = reader else {
            i += 1;
            continue;
        };
        let k = g.shape(g.nodes[i].outputs[0]).c;
        let in_channels = match g.nodes[i].inputs.as_slice() {
            [x] => g.shape(*x).c,
            _ => {
                i += 1;
                continue;
            }
        };
        let Op::ChannelAffine { scale, bias } = &g.nodes[j].op else {
            i += 1;
            continue;
        };
        let f = Affine::of(&g.nodes[j], scale, bias, k)?;
        let has_bias = bias.is_some();
        let layer = &g.nodes[i];
        let (weight, layer_bias, per_output) = match &layer.op {
            Op::Conv(p) => (&p.weight, &p.bias, conv_weight_channels(layer, p, k)?),
            Op::Deconv(p) => (
                &p.weight,
                &p.bias,
                deconv_weight_channels(layer, p, in_channels, k)?,
            ),
            Op::FullyConnected { weight, bias } => {
                if k == 0 || weight.len() % k != 0 {
                    return Err(node_error(
                        layer,
                        format!(
                            "weight has {} values, not a multiple of {k} outputs",
                            weight.len()
                        ),
                    ));
                }
                let per = weight.len() / k;
                (weight, bias, (0..weight.len()).map(|e| e / per).collect())
            }
            _ => unreachable!("matched as a layer"),
        };
        if let Some(b) = layer_bias {
            if b.len() != k {
                return Err(node_error(
                    layer,
                    format!("bias has {} values for {k} outputs", b.len()),
                ));
            }
        }
        let new_weight = Weights {
            dims: weight.dims.clone(),
            data: weight
                .data
                .iter()
                .zip(&per_output)
                .map(|(&w, &ko)| (f64::from(w) * f.s(ko)) as f32)
                .collect(),
        };
        let new_bias = match layer_bias {
            Some(b) => Some(Weights {
                dims: b.dims.clone(),
                data: (0..k)
                    .map(|ko| (f64::from(b.data[ko]) * f.s(ko) + f.t(ko)) as f32)
                    .collect(),
            }),
            None if has_bias => Some(Weights::vector((0..k).map(|ko| f.t(ko) as f32).collect())),
            None => None,
        };
        let affine_node = g.nodes.remove(j);
        let layer = &mut g.nodes[i];
        match &mut layer.op {
            Op::Conv(p) | Op::Deconv(p) => {
                p.weight = new_weight;
                p.bias = new_bias;
            }
            Op::FullyConnected { weight, bias } => {
                *weight = new_weight;
                *bias = new_bias;
            }
            _ => unreachable!("matched as a layer"),
        }
        layer.outputs = affine_node.outputs;
        changed = true;
        // A second affine after this one has been merged already or will be next round;
        // look at node i again anyway.
    }
    Ok(changed)
}

/// Fold a per-channel scale without bias (`--scale` preprocessing, Caffe's `Scale` layer
/// without `bias_term`) into the convolutions that read its output: `conv(s · x, W) =
/// conv(x, W · s)` per input channel, exactly, the zero padding included. The scale's
/// output must be read by convolutions only (any groups) and not be a graph output. The
/// convolutions then read the scale's input: a network input stays an image for image
/// mode ([`crate::lower::image`]), and one SDP pass goes.
pub fn fold_scale_into_readers(g: &mut Graph) -> Result<bool> {
    let mut changed = false;
    let mut i = 0;
    while i < g.nodes.len() {
        let node = &g.nodes[i];
        let (
            Op::ChannelAffine {
                scale: Some(scale),
                bias,
            },
            [x],
            [y],
        ) = (&node.op, node.inputs.as_slice(), node.outputs.as_slice())
        else {
            i += 1;
            continue;
        };
        let (x, y) = (*x, *y);
        let c = g.shape(x).c;
        let no_bias = bias
            .as_ref()
            .is_none_or(|b| b.data.iter().all(|&v| v == 0.0));
        let readers: Vec<usize> = (0..g.nodes.len())
            .filter(|&j| g.nodes[j].inputs.contains(&y))
            .collect();
        let all_convs = !readers.is_empty()
            && readers.iter().all(|&j| {
                let n = &g.nodes[j];
                // Well-formed weights only (the lowering reports the others).
                matches!(&n.op, Op::Conv(p) if p.groups >= 1
                    && c.is_multiple_of(p.groups)
                    && p.out_channels.is_multiple_of(p.groups)
                    && p.weight.len()
                        == p.out_channels * (c / p.groups) * p.window.kernel[0] * p.window.kernel[1])
                    && n.inputs.as_slice() == [y]
            });
        if !no_bias || !all_convs || is_output(g, y) || !(scale.len() == 1 || scale.len() == c) {
            i += 1;
            continue;
        }
        let s: Vec<f64> = (0..c)
            .map(|ch| f64::from(scale.data[if scale.len() == 1 { 0 } else { ch }]))
            .collect();
        for &j in &readers {
            let Op::Conv(p) = &mut g.nodes[j].op else {
                unreachable!("checked: a convolution")
            };
            let cpg = c / p.groups;
            let kpg = (p.out_channels / p.groups).max(1);
            let per_channel = (p.window.kernel[0] * p.window.kernel[1]).max(1);
            for (e, w) in p.weight.data.iter_mut().enumerate() {
                let ko = e / (cpg * per_channel);
                let ci = e / per_channel % cpg;
                let ch = (ko / kpg) * cpg + ci;
                *w = (f64::from(*w) * s[ch]) as f32;
            }
        }
        g.nodes.remove(i);
        redirect(g, y, x);
        changed = true;
    }
    Ok(changed)
}

/// The input channel each output channel of `p` copies, when `p` is a channel selection:
/// a 1x1 convolution of stride 1 without padding, groups or bias whose weights have one 1
/// per output channel and zeros elsewhere (how the ONNX front end maps `Split`, `Slice`
/// of channels and the channel shuffle's `Transpose`).
fn selection(p: &Conv, c: usize) -> Option<Vec<usize>> {
    let w = &p.window;
    let plain = w.kernel == [1, 1]
        && w.stride == [1, 1]
        && w.pad == [0; 4]
        && w.dilation == [1, 1]
        && p.groups == 1
        && p.bias
            .as_ref()
            .is_none_or(|b| b.data.iter().all(|&v| v == 0.0))
        && c > 0
        && p.weight.len() == p.out_channels * c;
    if !plain {
        return None;
    }
    p.weight
        .data
        .chunks_exact(c)
        .map(|row| {
            let mut one = row.iter().enumerate().filter(|(_, &v)| v != 0.0);
            match (one.next(), one.next()) {
                (Some((i, &1.0)), None) => Some(i),
                _ => None,
            }
        })
        .collect()
}

/// Fold channel selections ([`selection`]) into the convolutions that read them:
/// `conv(x[sel], W) = conv(x, W')` with `W'[k, c] = sum of W[k, o] over sel[o] = c`, exact
/// (a reindexing; a channel selected twice adds two weights). A selection read by
/// selections composes with them the same way. The readers must be convolutions without
/// groups reading the selection alone; a selection some other node (a concatenation, an
/// element-wise layer) or the network's output still reads stays for those, as does one
/// whose fold would more than double the weights involved. ShuffleNet
/// v2's shuffle and split then cost no operation before each branch's first convolution,
/// and a split's half read by a convolution (YOLOv8's C2f) one operation fewer.
pub fn fold_selections(g: &mut Graph) -> Result<bool> {
    let mut changed = false;
    let mut dead = Vec::new();
    for i in 0..g.nodes.len() {
        let node = &g.nodes[i];
        let (Op::Conv(p), [x], [y]) = (&node.op, node.inputs.as_slice(), node.outputs.as_slice())
        else {
            continue;
        };
        let (x, y) = (*x, *y);
        let c = g.shape(x).c;
        let Some(sel) = selection(p, c) else {
            continue;
        };
        let selection_weights = p.weight.len();
        for j in 0..g.nodes.len() {
            let reader = &g.nodes[j];
            let Op::Conv(q) = &reader.op else { continue };
            let k = (q.window.kernel[0] * q.window.kernel[1]).max(1);
            // The folded weights may grow (the channels the selection drops get zeros),
            // but at most to twice the reader's and the selection's together: selecting a
            // few of many channels is cheaper as its own operation.
            let grown = q.out_channels.checked_mul(c).and_then(|v| v.checked_mul(k));
            let budget = q
                .weight
                .len()
                .saturating_add(selection_weights)
                .saturating_mul(2);
            if j == i
                || reader.inputs.as_slice() != [y]
                || q.groups != 1
                || q.weight.len() != q.out_channels * sel.len() * k
                || grown.is_none_or(|n| n > budget)
            {
                continue;
            }
            let mut w = vec![0f32; q.out_channels * c * k];
            for (dst, src) in w
                .chunks_exact_mut(c * k)
                .zip(q.weight.data.chunks_exact(sel.len() * k))
            {
                for (o, &ci) in sel.iter().enumerate() {
                    for t in 0..k {
                        dst[ci * k + t] += src[o * k + t];
                    }
                }
            }
            let dims = vec![q.out_channels, c, q.window.kernel[0], q.window.kernel[1]];
            let weight = Weights::new(dims, w)
                .ok_or_else(|| node_error(reader, "folded selection: weight size".into()))?;
            let Op::Conv(q) = &mut g.nodes[j].op else {
                unreachable!("checked: a convolution")
            };
            q.weight = weight;
            g.nodes[j].inputs = vec![x];
            changed = true;
        }
        // The selection itself goes once nothing reads it.
        if !is_output(g, y) && reads(g, y) == 0 {
            dead.push(i);
        }
    }
    for &i in dead.iter().rev() {
        g.nodes.remove(i);
    }
    Ok(changed)
}

/// A text dump of the graph for `--dump-ir`: a header, the inputs, one line per node
/// (index, name, op, source type if it differs, inputs and outputs with shapes, key
/// attributes) and the outputs.
pub fn dump(g: &Graph) -> String {
    let mut s = String::new();
    let tensor = |t: TensorId| match g.tensors.get(t.0) {
        Some(x) => format!("{} {}", x.name, x.shape),
        None => format!("<bad tensor {}>", t.0),
    };
    let list = |ts: &[TensorId]| ts.iter().map(|&t| tensor(t)).collect::<Vec<_>>().join(", ");
    let _ = writeln!(
        s,
        "graph `{}`: {} nodes, {} tensors",
        g.name,
        g.nodes.len(),
        g.tensors.len()
    );
    for &t in &g.inputs {
        let _ = writeln!(s, "  input  {}", tensor(t));
    }
    for (i, n) in g.nodes.iter().enumerate() {
        let op = n.op.name();
        let source = if n.source_type.is_empty() || n.source_type == op {
            String::new()
        } else {
            format!(" [{}]", n.source_type)
        };
        let attrs = attributes(&n.op);
        let _ = writeln!(
            s,
            "  #{i:<3} {}: {op}{source} ({}) -> ({}){}{attrs}",
            n.name,
            list(&n.inputs),
            list(&n.outputs),
            if attrs.is_empty() { "" } else { "  " },
        );
    }
    for &t in &g.outputs {
        let _ = writeln!(s, "  output {}", tensor(t));
    }
    s
}

/// The key attributes of an op, for [`dump`].
fn attributes(op: &Op) -> String {
    let w = |w: &Weights| format!("{:?}", w.dims);
    let opt = |name: &str, v: &Option<Weights>| match v {
        Some(v) if v.len() == 1 => format!(" {name}={}", v.data[0]),
        Some(v) => format!(" {name}{}", w(v)),
        None => String::new(),
    };
    let window = |win: &crate::ir::Window| {
        format!(
            "k={}x{} s={}x{} pad={:?}",
            win.kernel[0], win.kernel[1], win.stride[0], win.stride[1], win.pad
        )
    };
    match op {
        Op::Conv(p) | Op::Deconv(p) => format!(
            "{} d={}x{} groups={} out={} weight{}{}",
            window(&p.window),
            p.window.dilation[0],
            p.window.dilation[1],
            p.groups,
            p.out_channels,
            w(&p.weight),
            opt("bias", &p.bias)
        ),
        Op::FullyConnected { weight, bias } => format!("weight{}{}", w(weight), opt("bias", bias)),
        Op::Pool(p) => format!(
            "{:?} {}{}{}",
            p.kind,
            window(&p.window),
            if p.ceil_mode { " ceil" } else { " floor" },
            match p.kind {
                crate::ir::PoolKind::Avg if p.count_include_pad => " count_include_pad",
                crate::ir::PoolKind::Avg => " count_valid",
                crate::ir::PoolKind::Max => "",
            }
        ),
        Op::Activation(Activation::Relu { slope }) if *slope != 0.0 => format!("slope={slope}"),
        Op::Activation(Activation::PRelu { slopes }) => format!("slopes{}", w(slopes)),
        Op::Activation(Activation::Clip { lo, hi }) => format!("lo={lo} hi={hi}"),
        Op::Activation(_) => String::new(),
        Op::ChannelAffine { scale, bias } => {
            format!("{}{}", opt("scale", scale), opt("bias", bias))
                .trim_start()
                .to_string()
        }
        Op::BatchNorm { mean, eps, .. } => format!("channels={} eps={eps}", mean.len()),
        Op::Power {
            power,
            scale,
            shift,
        } => format!("power={power} scale={scale} shift={shift}"),
        Op::Eltwise { kind, coeffs } if coeffs.is_empty() => format!("{kind:?}"),
        Op::Eltwise { kind, coeffs } => format!("{kind:?} coeffs={coeffs:?}"),
        Op::Lrn {
            size,
            alpha,
            beta,
            k,
        } => format!("size={size} alpha={alpha} beta={beta} k={k}"),
        Op::CpuUnary { func, alpha, beta } => format!("{func:?} alpha={alpha} beta={beta}"),
        Op::CpuPartition(p) => format!("{} ONNX nodes: {}", p.ops.len(), p.ops.join(" ")),
        Op::Crop { origin, step } => format!(
            "origin={}x{} step={}x{}",
            origin[0], origin[1], step[0], step[1]
        ),
        Op::EdgePad { pads } => format!("edge pads={pads:?}"),
        Op::Concat | Op::Softmax | Op::Flatten | Op::Identity => String::new(),
    }
}

/// A [`CompileError::Layer`] naming `node`.
fn node_error(node: &Node, reason: String) -> CompileError {
    CompileError::layer(node.name.clone(), node.source_type.clone(), reason)
}

/// `ChannelAffine` in canonical form: all-ones scale and all-zeros bias dropped, nothing
/// left becomes `Identity`.
fn affine(scale: Option<Weights>, bias: Option<Weights>) -> Op {
    let scale = scale.filter(|s| s.data.iter().any(|&v| v != 1.0));
    let bias = bias.filter(|b| b.data.iter().any(|&v| v != 0.0));
    if scale.is_none() && bias.is_none() {
        Op::Identity
    } else {
        Op::ChannelAffine { scale, bias }
    }
}

/// A `ChannelAffine`'s constants as per-channel lookups (absent or one value broadcast).
struct Affine<'a> {
    scale: &'a [f32],
    bias: &'a [f32],
    /// 0 (absent), 1 or the channel count.
    scale_len: usize,
    /// 0 (absent), 1 or the channel count.
    bias_len: usize,
}

impl<'a> Affine<'a> {
    /// Check the constants of `node` against `channels`.
    fn of(
        node: &Node,
        scale: &'a Option<Weights>,
        bias: &'a Option<Weights>,
        channels: usize,
    ) -> Result<Self> {
        let get = |w: &'a Option<Weights>, what: &str| -> Result<&'a [f32]> {
            match w {
                None => Ok(&[]),
                Some(w) if w.len() == 1 || w.len() == channels => Ok(&w.data),
                Some(w) => Err(node_error(
                    node,
                    format!("{what} has {} values, needs {channels} or 1", w.len()),
                )),
            }
        };
        let (scale, bias) = (get(scale, "scale")?, get(bias, "bias")?);
        Ok(Self {
            scale,
            bias,
            scale_len: scale.len(),
            bias_len: bias.len(),
        })
    }

    /// Scale of channel `c`.
    fn s(&self, c: usize) -> f64 {
        f64::from(match self.scale {
            [] => 1.0,
            [v] => *v,
            v => v[c],
        })
    }

    /// Bias of channel `c`.
    fn t(&self, c: usize) -> f64 {
        f64::from(match self.bias {
            [] => 0.0,
            [v] => *v,
            v => v[c],
        })
    }
}

/// The output channel of every value of a convolution's `[K, C/g, kh, kw]` weight.
fn conv_weight_channels(node: &Node, p: &Conv, k: usize) -> Result<Vec<usize>> {
    if p.out_channels != k || k == 0 || !p.weight.len().is_multiple_of(k) {
        return Err(node_error(
            node,
            format!(
                "weight has {} values for {} outputs (output tensor has {k} channels)",
                p.weight.len(),
                p.out_channels
            ),
        ));
    }
    let per = p.weight.len() / k;
    Ok((0..p.weight.len()).map(|e| e / per).collect())
}

/// The output channel of every value of a deconvolution's `[C, K/g, kh, kw]` weight.
fn deconv_weight_channels(node: &Node, p: &Conv, c: usize, k: usize) -> Result<Vec<usize>> {
    let g = p.groups;
    let taps = p.window.kernel[0] * p.window.kernel[1];
    if p.out_channels != k
        || g == 0
        || !c.is_multiple_of(g)
        || !k.is_multiple_of(g)
        || p.weight.len() != c * (k / g) * taps
    {
        return Err(node_error(
            node,
            format!(
                "weight has {} values, {c} inputs, {k} outputs, {g} groups and a {}x{} kernel \
                 need [C, K/groups, kh, kw]",
                p.weight.len(),
                p.window.kernel[0],
                p.window.kernel[1]
            ),
        ));
    }
    let (cg, kg) = (c / g, k / g);
    Ok((0..p.weight.len())
        .map(|e| {
            let row = e / taps; // c * kg + kk
            let (ci, kk) = (row / kg, row % kg);
            (ci / cg) * kg + kk
        })
        .collect())
}

/// Whether `t` is a graph output.
fn is_output(g: &Graph, t: TensorId) -> bool {
    g.outputs.contains(&t)
}

/// How many node input slots read `t`.
fn reads(g: &Graph, t: TensorId) -> usize {
    g.nodes
        .iter()
        .map(|n| n.inputs.iter().filter(|&&x| x == t).count())
        .sum()
}

/// Every node input slot reading `from` reads `to` instead.
fn redirect(g: &mut Graph, from: TensorId, to: TensorId) {
    for n in &mut g.nodes {
        for x in &mut n.inputs {
            if *x == from {
                *x = to;
            }
        }
    }
}

/// The node that alone reads node `i`'s single output, if that output is not a graph
/// output, the reader matches `want` and has one input and one output. Node `i` must have
/// one output too.
fn sole_reader(g: &Graph, i: usize, want: impl Fn(&Op) -> bool) -> Option<usize> {
    let node = &g.nodes[i];
    let [out] = node.outputs.as_slice() else {
        return None;
    };
    if is_output(g, *out) || reads(g, *out) != 1 {
        return None;
    }
    let j = g.nodes.iter().position(|n| n.inputs.contains(out))?;
    let reader = &g.nodes[j];
    (j > i && want(&reader.op) && reader.inputs.len() == 1 && reader.outputs.len() == 1)
        .then_some(j)
}

/// Reconnect around the identity node `i` (one input `a`, outputs that are copies of it) so
/// that it can be removed; false (and nothing changed) if that would rename a graph input
/// or output.
fn bypass(g: &mut Graph, i: usize) -> bool {
    let node = &g.nodes[i];
    let [a] = node.inputs.as_slice() else {
        return false;
    };
    let a = *a;
    if node.outputs.iter().any(|&b| g.shape(b) != g.shape(a)) {
        return false; // malformed; the reference reports it
    }
    let outputs = node.outputs.clone();
    let kept: Vec<TensorId> = outputs
        .iter()
        .copied()
        .filter(|&b| is_output(g, b))
        .collect();
    let rename_to = match kept.as_slice() {
        [] => None,
        [b] => {
            let Some(producer) = g.producer(a) else {
                return false;
            };
            if is_output(g, a) || g.inputs.contains(&a) {
                return false;
            }
            Some((*b, producer))
        }
        _ => return false,
    };
    for &b in &outputs {
        if Some(b) != rename_to.map(|r| r.0) {
            redirect(g, b, a);
        }
    }
    if let Some((b, p)) = rename_to {
        for t in &mut g.nodes[p.0].outputs {
            if *t == a {
                *t = b;
            }
        }
        redirect(g, a, b);
    }
    true
}

#[cfg(test)]
mod tests;
