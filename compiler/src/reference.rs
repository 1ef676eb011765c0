//! The compiler's CPU fp32 reference: an interpreter of the network IR.
//!
//! [`run`] evaluates every node of a [`Graph`] in its (topological) order and returns the
//! value of every tensor, so that the per-layer comparison tool and the int8 calibrator can
//! read any layer, not only the network outputs. It is the numerical truth the compiled
//! network (fp16 / int8 on the hardware or the VP) is measured against, so it favours
//! accuracy over speed: loops over NCHW row-major data (convolutions over each output plane
//! at once, on every core, in an order that gives the per-output loop's bits).
//!
//! Semantics are Caffe's, as each [`Op`] variant documents; the points where a choice had to
//! be made:
//!
//! * **Precision.** Values are stored as `f32`. Every reduction (convolution,
//!   deconvolution, fully connected, average pooling, eltwise sum/product, softmax, LRN) and
//!   every element-wise formula is computed in `f64` and rounded to `f32` once per output
//!   element, so the reference's own rounding error is a single `f32` rounding and a
//!   comparison measures the compiled network's error, not ours. (Caffe itself accumulates
//!   in `f32` through BLAS; the difference is far below fp16/int8 resolution.)
//! * **Shapes.** Output shapes are the ones recorded in the graph. Convolution checks that
//!   the recorded output is Caffe's `(H + pt + pb - (d*(k-1)+1)) / s + 1` (rounded down).
//!   Deconvolution takes the recorded shape as the truth: contributions that fall outside
//!   it are dropped and positions no input reaches hold only the bias (Caffe's
//!   `(H-1)*s - pt - pb + d*(k-1) + 1` is the usual size; ONNX `output_padding` makes it
//!   larger). Pooling takes the recorded shape (so it is correct for ceil and floor mode
//!   alike) and rejects a window that covers no input element.
//! * **Pooling.** Max ignores padding. Average divides, with `count_include_pad`, by the
//!   window clipped to the padded input (Caffe: `hend = min(hstart + kh, H + pad_bottom)`,
//!   the divisor taken before clipping to the image), without it by the number of valid
//!   elements.
//! * **Broadcasting.** Per-channel constants (`ChannelAffine`, `PRelu`) may have one value
//!   for every channel.
//!
//! Malformed nodes (wrong number of inputs, a constant of the wrong length, shapes that do
//! not fit the op) and missing input values are [`CompileError::Layer`] errors naming the
//! node; nothing here panics on a bad graph.

use crate::error::{CompileError, Result};
use crate::ir::{
    Activation, Conv, EltwiseKind, Graph, Node, Op, Pool, PoolKind, Shape, TensorId, Weights,
    Window,
};

/// Evaluate `graph` on `inputs` (tensor id and its NCHW row-major values, normally one per
/// graph input) and return the value of every tensor, indexed by [`TensorId`]`.0`, each
/// NCHW row-major in the shape `graph.tensors[i].shape`.
///
/// A tensor that is neither given nor produced by a node (one a pass left unused) has an
/// empty value. Values may be given for tensors no node produces only.
///
/// # Errors
///
/// [`CompileError::Network`] if the graph fails [`Graph::check`] or an input value names a
/// tensor that is out of range, given twice, or produced by a node (or has the wrong length
/// and no node reads it). [`CompileError::Layer`], naming the node, for a malformed node or
/// an input value that is missing or of the wrong length where the node reads it.
pub fn run(graph: &Graph, inputs: &[(TensorId, Vec<f32>)]) -> Result<Vec<Vec<f32>>> {
    run_with(graph, inputs, |_, _| {})
}

/// [`run`], with `each` called on every value a node produces before later nodes read it
/// (to simulate a precision: rounding every tensor to its int8 scale, for example).
///
/// # Errors
///
/// As [`run`].
pub fn run_with(
    graph: &Graph,
    inputs: &[(TensorId, Vec<f32>)],
    mut each: impl FnMut(TensorId, &mut [f32]),
) -> Result<Vec<Vec<f32>>> {
    graph.check().map_err(CompileError::Network)?;
    let mut values: Vec<Option<Vec<f32>>> = vec![None; graph.tensors.len()];
    let mut produced = vec![false; graph.tensors.len()];
    let mut read = vec![false; graph.tensors.len()];
    for n in &graph.nodes {
        for t in &n.outputs {
            produced[t.0] = true;
        }
        for t in &n.inputs {
            read[t.0] = true;
        }
    }
    for (t, v) in inputs {
        let Some(tensor) = graph.tensors.get(t.0) else {
            return Err(CompileError::Network(format!(
                "input value for tensor {} which does not exist ({} tensors)",
                t.0,
                graph.tensors.len()
            )));
        };
        if produced[t.0] {
            return Err(CompileError::Network(format!(
                "input value for tensor `{}`, which a node produces",
                tensor.name
            )));
        }
        if values[t.0].is_some() {
            return Err(CompileError::Network(format!(
                "input value for tensor `{}` given twice",
                tensor.name
            )));
        }
        // A wrong length is reported by the node that reads the value (naming it); a value
        // nobody reads is reported here.
        if !read[t.0] && v.len() != tensor.shape.elements() {
            return Err(CompileError::Network(format!(
                "input `{}` has {} values, its shape {} needs {}",
                tensor.name,
                v.len(),
                tensor.shape,
                tensor.shape.elements()
            )));
        }
        values[t.0] = Some(v.clone());
    }
    for node in &graph.nodes {
        let outs = eval_node(graph, node, &values).map_err(|reason| {
            CompileError::layer(node.name.clone(), node.source_type.clone(), reason)
        })?;
        for (t, mut v) in node.outputs.iter().zip(outs) {
            each(*t, &mut v);
            values[t.0] = Some(v);
        }
    }
    Ok(values.into_iter().map(Option::unwrap_or_default).collect())
}

/// The value of input `t` of a node, checked against the tensor's shape.
fn value<'a>(
    graph: &Graph,
    values: &'a [Option<Vec<f32>>],
    t: TensorId,
) -> Result<&'a [f32], String> {
    let tensor = graph.tensor(t);
    let v = values[t.0].as_deref().ok_or_else(|| {
        format!(
            "input `{}` has no value (a graph input that was not given)",
            tensor.name
        )
    })?;
    if v.len() != tensor.shape.elements() {
        return Err(format!(
            "input `{}` has {} values, its shape {} needs {}",
            tensor.name,
            v.len(),
            tensor.shape,
            tensor.shape.elements()
        ));
    }
    Ok(v)
}

/// Evaluate one node: the values of its outputs, in order, or what is wrong with it.
fn eval_node(
    graph: &Graph,
    node: &Node,
    values: &[Option<Vec<f32>>],
) -> Result<Vec<Vec<f32>>, String> {
    let n_in = node.inputs.len();
    if let Op::CpuPartition(p) = &node.op {
        return cpu_partition(graph, node, values, p);
    }
    let want_inputs = match node.op {
        Op::Eltwise { .. } => (2, usize::MAX),
        Op::Concat => (1, usize::MAX),
        _ => (1, 1),
    };
    if n_in < want_inputs.0 || n_in > want_inputs.1 {
        return Err(match want_inputs {
            (lo, usize::MAX) => format!("{n_in} inputs, needs at least {lo}"),
            (lo, _) => format!("{n_in} inputs, needs {lo}"),
        });
    }
    let multi_output = matches!(node.op, Op::Identity);
    if node.outputs.is_empty() || (!multi_output && node.outputs.len() != 1) {
        return Err(format!("{} outputs, needs 1", node.outputs.len()));
    }
    let ins = node
        .inputs
        .iter()
        .map(|&t| value(graph, values, t))
        .collect::<Result<Vec<_>, _>>()?;
    let in_shapes: Vec<Shape> = node.inputs.iter().map(|&t| graph.shape(t)).collect();
    let (x, xs) = (ins[0], in_shapes[0]);
    let ys = graph.shape(node.outputs[0]);
    let y = match &node.op {
        Op::Conv(p) => conv(x, xs, p, ys)?,
        Op::Deconv(p) => deconv(x, xs, p, ys)?,
        Op::FullyConnected { weight, bias } => fully_connected(x, xs, weight, bias.as_ref(), ys)?,
        Op::Pool(p) => pool(x, xs, p, ys)?,
        Op::Activation(a) => {
            same_shape(xs, ys)?;
            activation(x, xs, a)?
        }
        Op::ChannelAffine { scale, bias } => {
            same_shape(xs, ys)?;
            channel_affine(x, xs, scale.as_ref(), bias.as_ref())?
        }
        Op::BatchNorm { mean, var, eps } => {
            same_shape(xs, ys)?;
            batch_norm(x, xs, mean, var, *eps)?
        }
        Op::Power {
            power,
            scale,
            shift,
        } => {
            same_shape(xs, ys)?;
            let (p, a, b) = (f64::from(*power), f64::from(*scale), f64::from(*shift));
            x.iter()
                .map(|&v| {
                    let base = b + a * f64::from(v);
                    (if p == 1.0 { base } else { base.powf(p) }) as f32
                })
                .collect()
        }
        Op::Eltwise { kind, coeffs } => eltwise(&ins, &in_shapes, *kind, coeffs, ys)?,
        Op::Concat => concat(&ins, &in_shapes, ys)?,
        Op::Softmax => {
            same_shape(xs, ys)?;
            softmax(x, xs)
        }
        Op::Lrn {
            size,
            alpha,
            beta,
            k,
        } => {
            same_shape(xs, ys)?;
            lrn(x, xs, *size, *alpha, *beta, *k)?
        }
        Op::Crop { origin, step } => crop(x, xs, *origin, *step, ys)?,
        Op::EdgePad { pads } => edge_pad(x, xs, *pads, ys)?,
        Op::Flatten => {
            let want = Shape::new(xs.n, xs.per_item(), 1, 1);
            if ys != want {
                return Err(format!("output shape {ys}, flattening {xs} gives {want}"));
            }
            x.to_vec()
        }
        Op::Identity => {
            for &t in &node.outputs {
                same_shape(xs, graph.shape(t))?;
            }
            x.to_vec()
        }
        Op::CpuUnary { func, alpha, beta } => {
            same_shape(xs, ys)?;
            x.iter().map(|&v| func.apply(v, *alpha, *beta)).collect()
        }
        Op::CpuPartition(_) => unreachable!("evaluated above"),
    };
    debug_assert_eq!(y.len(), ys.elements());
    Ok(vec![y; node.outputs.len()])
}

/// [`Op::Crop`]: every `step`-th pixel from `origin`, as many as `ys` holds.
fn crop(
    x: &[f32],
    xs: Shape,
    origin: [usize; 2],
    step: [usize; 2],
    ys: Shape,
) -> Result<Vec<f32>, String> {
    let last = |o: usize, s: usize, n: usize| (n > 0).then(|| o + (n - 1) * s);
    let fits = |o, s, n, size| s >= 1 && last(o, s, n).is_some_and(|l| l < size);
    if ys.n != xs.n
        || ys.c != xs.c
        || !fits(origin[0], step[0], ys.h, xs.h)
        || !fits(origin[1], step[1], ys.w, xs.w)
    {
        return Err(format!(
            "cropping {ys} from {xs} at {origin:?} in steps of {step:?} reads past the input"
        ));
    }
    let mut y = Vec::with_capacity(ys.elements());
    for plane in x.chunks_exact(xs.h * xs.w) {
        for oy in 0..ys.h {
            let row = &plane[(origin[0] + oy * step[0]) * xs.w..][..xs.w];
            y.extend((0..ys.w).map(|ox| row[origin[1] + ox * step[1]]));
        }
    }
    Ok(y)
}

/// [`Op::EdgePad`]: the border pixels repeated `pads` times (`[top, left, bottom, right]`).
fn edge_pad(x: &[f32], xs: Shape, pads: [usize; 4], ys: Shape) -> Result<Vec<f32>, String> {
    let [t, l, b, r] = pads;
    if ys.n != xs.n || ys.c != xs.c || ys.h != xs.h + t + b || ys.w != xs.w + l + r {
        return Err(format!("edge padding {xs} by {pads:?} does not give {ys}"));
    }
    let mut y = Vec::with_capacity(ys.elements());
    for plane in x.chunks_exact(xs.h * xs.w) {
        for oy in 0..ys.h {
            let row = &plane[oy.saturating_sub(t).min(xs.h - 1) * xs.w..][..xs.w];
            y.extend((0..ys.w).map(|ox| row[ox.saturating_sub(l).min(xs.w - 1)]));
        }
    }
    Ok(y)
}

/// An ONNX partition, run by the same engine (tract) the runtime runs it with.
fn cpu_partition(
    graph: &Graph,
    node: &Node,
    values: &[Option<Vec<f32>>],
    p: &crate::ir::CpuPartition,
) -> Result<Vec<Vec<f32>>, String> {
    if node.inputs.len() != p.input_dims.len() || node.outputs.len() != p.output_dims.len() {
        return Err(format!(
            "{} inputs and {} outputs, the partition has {} and {}",
            node.inputs.len(),
            node.outputs.len(),
            p.input_dims.len(),
            p.output_dims.len()
        ));
    }
    let ins = node
        .inputs
        .iter()
        .map(|&t| value(graph, values, t))
        .collect::<Result<Vec<_>, _>>()?;
    let inputs: Vec<(Vec<usize>, &[f32])> = p.input_dims.iter().cloned().zip(ins).collect();
    let outs = nvdla_umd::partition::eval(&p.model, &inputs).map_err(|e| e.to_string())?;
    outs.into_iter()
        .zip(&node.outputs)
        .map(|((_, v), &t)| {
            let want = graph.shape(t).elements();
            if v.len() == want {
                Ok(v)
            } else {
                Err(format!(
                    "output `{}`: the partition gave {} values, its shape {} holds {want}",
                    graph.tensor(t).name,
                    v.len(),
                    graph.shape(t)
                ))
            }
        })
        .collect()
}

/// Output shape must equal input shape.
fn same_shape(xs: Shape, ys: Shape) -> Result<(), String> {
    if xs == ys {
        Ok(())
    } else {
        Err(format!("output shape {ys} differs from input shape {xs}"))
    }
}

/// A per-channel constant of length `c` or 1 (or absent: `default`), as a lookup.
fn per_channel<'a>(
    w: Option<&'a Weights>,
    c: usize,
    what: &str,
    default: f32,
) -> Result<impl Fn(usize) -> f64 + 'a, String> {
    let data: &[f32] = match w {
        None => &[],
        Some(w) if w.len() == c || w.len() == 1 => &w.data,
        Some(w) => return Err(format!("{what} has {} values, needs {c} or 1", w.len())),
    };
    Ok(move |ch: usize| {
        f64::from(match data.len() {
            0 => default,
            1 => data[0],
            _ => data[ch],
        })
    })
}

/// A constant of exactly `len` values.
fn exact<'a>(w: &'a Weights, len: usize, what: &str) -> Result<&'a [f32], String> {
    if w.len() == len {
        Ok(&w.data)
    } else {
        Err(format!(
            "{what} has {} values ({:?}), needs {len}",
            w.len(),
            w.dims
        ))
    }
}

/// Kernel, stride and (if `dilated`) dilation must be non-zero.
fn check_window(w: &Window, dilated: bool) -> Result<(), String> {
    if w.kernel.contains(&0) || w.stride.contains(&0) {
        return Err(format!(
            "kernel {:?} / stride {:?} has a zero",
            w.kernel, w.stride
        ));
    }
    if dilated && w.dilation.contains(&0) {
        return Err(format!("dilation {:?} has a zero (1 is dense)", w.dilation));
    }
    Ok(())
}

/// Group geometry of a (de)convolution: `(in channels per group, out channels per group)`.
fn groups(p: &Conv, xs: Shape, ys: Shape) -> Result<(usize, usize), String> {
    let g = p.groups;
    if g == 0 || !xs.c.is_multiple_of(g) || !p.out_channels.is_multiple_of(g) {
        return Err(format!(
            "{} groups do not divide {} input and {} output channels",
            g, xs.c, p.out_channels
        ));
    }
    if ys.c != p.out_channels || ys.n != xs.n {
        return Err(format!(
            "output shape {ys}, needs batch {} and {} channels",
            xs.n, p.out_channels
        ));
    }
    Ok((xs.c / g, p.out_channels / g))
}

/// The bias of `k` output channels (zeros if absent).
fn bias_values(bias: Option<&Weights>, k: usize) -> Result<Vec<f64>, String> {
    Ok(match bias {
        Some(b) => exact(b, k, "bias")?.iter().map(|&v| f64::from(v)).collect(),
        None => vec![0.0; k],
    })
}

/// Caffe's convolution output size along one axis, if the padded input holds one window.
fn conv_out(
    input: usize,
    pad: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
) -> Option<usize> {
    let extent = dilation * (kernel - 1) + 1;
    (input + pad).checked_sub(extent).map(|r| r / stride + 1)
}

/// Convolution with groups, dilation and asymmetric padding.
fn conv(x: &[f32], xs: Shape, p: &Conv, ys: Shape) -> Result<Vec<f32>, String> {
    let win = &p.window;
    check_window(win, true)?;
    let (cg, kg) = groups(p, xs, ys)?;
    let [kh, kw] = win.kernel;
    let [sh, sw] = win.stride;
    let [dh, dw] = win.dilation;
    let [pt, pl, pb, pr] = win.pad;
    let want_h = conv_out(xs.h, pt + pb, kh, sh, dh);
    let want_w = conv_out(xs.w, pl + pr, kw, sw, dw);
    if want_h != Some(ys.h) || want_w != Some(ys.w) {
        return Err(format!(
            "output shape {ys}, but input {xs} with kernel {kh}x{kw}, stride {sh}x{sw}, \
             dilation {dh}x{dw}, pad {:?} gives {}x{}",
            win.pad,
            want_h.map_or("-".into(), |v| v.to_string()),
            want_w.map_or("-".into(), |v| v.to_string())
        ));
    }
    let k_total = p.out_channels;
    let w = exact(
        &p.weight,
        k_total * cg * kh * kw,
        "weight [K, C/groups, kh, kw]",
    )?;
    let bias = bias_values(p.bias.as_ref(), k_total)?;
    let (h, wd) = (xs.h, xs.w);
    let (oh, ow) = (ys.h, ys.w);
    if w.iter().all(|v| v.is_finite()) && oh * ow > 0 {
        return Ok(conv_padded(x, xs, p, w, &bias, ys, cg, kg));
    }
    let mut y = vec![0f32; ys.elements()];
    // One output plane per task. Within a plane, each tap `(ci, ky, kx)` is added to every
    // output it reaches, taps in that order: every output receives the same products in
    // the same order as a per-output loop over `ci, ky, kx` skipping the padding, so the
    // sums are the same to the bit (the products of two f32 are exact in f64, so a fused
    // multiply-add could not differ either), whatever the thread count.
    let plane_task = |(i, yplane): (usize, &mut [f32])| {
        let (n, ko) = (i / k_total, i % k_total);
        let gi = ko / kg;
        let mut acc = vec![0f64; oh * ow];
        for ci in 0..cg {
            let c = gi * cg + ci;
            let plane = &x[(n * xs.c + c) * h * wd..][..h * wd];
            let wk = &w[(ko * cg + ci) * kh * kw..][..kh * kw];
            for ky in 0..kh {
                for kx in 0..kw {
                    // Outputs whose column `ox * sw + kx * dw - pl` is inside the input.
                    let first = (pl.saturating_sub(kx * dw)).div_ceil(sw);
                    let end = (wd + pl).saturating_sub(kx * dw).div_ceil(sw).min(ow);
                    if first >= end {
                        continue;
                    }
                    let x0 = first * sw + kx * dw - pl;
                    let wv = f64::from(wk[ky * kw + kx]);
                    for oy in 0..oh {
                        let Some(iy) = (oy * sh + ky * dh).checked_sub(pt).filter(|&v| v < h)
                        else {
                            continue;
                        };
                        let row = &plane[iy * wd + x0..];
                        let a = &mut acc[oy * ow + first..oy * ow + end];
                        if sw == 1 {
                            for (o, &v) in a.iter_mut().zip(row) {
                                *o += f64::from(v) * wv;
                            }
                        } else {
                            for (o, &v) in a.iter_mut().zip(row.iter().step_by(sw)) {
                                *o += f64::from(v) * wv;
                            }
                        }
                    }
                }
            }
        }
        for (o, a) in yplane.iter_mut().zip(acc) {
            *o = (a + bias[ko]) as f32;
        }
    };
    if oh * ow > 0 {
        use rayon::prelude::*;
        y.par_chunks_mut(oh * ow).enumerate().for_each(plane_task);
    }
    Ok(y)
}

/// [`conv`] for finite weights, on zero-padded input planes: the same bits.
///
/// With finite weights a padding tap's product is ±0, and adding ±0 leaves an f64 sum
/// unchanged unless the sum is -0, which a sum that starts at +0 never is (in
/// round-to-nearest, `+0 + -0` and `x + -x` are +0). So every output may add all its taps,
/// in the per-output loop's order `ci, ky, kx`, reading zeros where that loop skipped.
/// The input is split into `sh · sw` stride phases of rows `wq` wide, so that for a tap
/// the inputs of all outputs, taken as positions `oy · wq + ox` (columns past `ow` are
/// computed and dropped), are one contiguous run of a phase plane; each channel's taps
/// are applied in one pass over the output plane, the running sum held in a register.
#[allow(clippy::too_many_arguments)]
fn conv_padded(
    x: &[f32],
    xs: Shape,
    p: &Conv,
    w: &[f32],
    bias: &[f64],
    ys: Shape,
    cg: usize,
    kg: usize,
) -> Vec<f32> {
    let win = &p.window;
    let [kh, kw] = win.kernel;
    let [sh, sw] = win.stride;
    let [dh, dw] = win.dilation;
    let [pt, pl, _, _] = win.pad;
    let (h, wd) = (xs.h, xs.w);
    let (oh, ow) = (ys.h, ys.w);
    let k_total = p.out_channels;
    let hp = (oh - 1) * sh + (kh - 1) * dh + 1;
    let wp = (ow - 1) * sw + (kw - 1) * dw + 1;
    let (hq, wq) = (hp.div_ceil(sh), wp.div_ceil(sw));
    let phases = sh * sw;
    let plane_len = hq * wq;
    let npos = oh * wq;
    // Tap offsets: phase plane and position within it, in `ky, kx` order.
    let taps: Vec<usize> = (0..kh)
        .flat_map(|ky| (0..kw).map(move |kx| (ky, kx)))
        .map(|(ky, kx)| {
            let (yy, xx) = (ky * dh, kx * dw);
            ((yy % sh) * sw + xx % sw) * plane_len + (yy / sh) * wq + xx / sw
        })
        .collect();
    let reach = taps.iter().max().copied().unwrap_or(0) + npos;
    let chan_len = (phases * plane_len).max(reach);
    // Phase planes of every channel of every batch item, in f64.
    let mut planes = vec![0f64; xs.n * xs.c * chan_len];
    use rayon::prelude::*;
    planes
        .par_chunks_exact_mut(chan_len)
        .enumerate()
        .for_each(|(nc, dst)| {
            let src = &x[nc * h * wd..][..h * wd];
            for py in 0..sh {
                for px in 0..sw {
                    let base = (py * sw + px) * plane_len;
                    for yq in 0..hq {
                        let Some(iy) = (yq * sh + py).checked_sub(pt).filter(|&v| v < h) else {
                            continue;
                        };
                        // Plane columns `xq` whose input column `xq * sw + px - pl` exists.
                        let first = pl.saturating_sub(px).div_ceil(sw).min(wq);
                        let end = (wd + pl).saturating_sub(px).div_ceil(sw).clamp(first, wq);
                        if first == end {
                            continue;
                        }
                        let src = &src[iy * wd + first * sw + px - pl..];
                        let row = &mut dst[base + yq * wq + first..][..end - first];
                        for (o, &v) in row.iter_mut().zip(src.iter().step_by(sw)) {
                            *o = f64::from(v);
                        }
                    }
                }
            }
        });
    // The passes' loops compiled for the widest vector extension the CPU has (pulp's
    // run-time dispatch).
    let arch = pulp::Arch::new();
    let mut y = vec![0f32; ys.elements()];
    let plane_task = |(i, yplane): (usize, &mut [f32])| {
        let (n, ko) = (i / k_total, i % k_total);
        let gi = ko / kg;
        let mut acc = vec![0f64; npos];
        // The (channel, tap) products of every output in order `ci, ky, kx`, eight per
        // pass over the plane with the running sum in a register.
        let wk = &w[ko * cg * kh * kw..][..cg * kh * kw];
        let pairs = (0..cg).flat_map(|ci| {
            let src = &planes[(n * xs.c + gi * cg + ci) * chan_len..][..chan_len];
            taps.iter()
                .enumerate()
                .map(move |(t, &off)| (&src[off..][..npos], (ci, t)))
        });
        let mut batch: Vec<(&[f64], f64)> = Vec::with_capacity(PASS);
        let flush = |batch: &mut Vec<(&[f64], f64)>, acc: &mut [f64]| {
            if batch.len() == PASS {
                let t: [&[f64]; PASS] = std::array::from_fn(|j| batch[j].0);
                let wv: [f64; PASS] = std::array::from_fn(|j| batch[j].1);
                arch.dispatch(Pass { t, wv, acc });
            } else {
                for &(src, wv) in batch.iter() {
                    for (a, &v) in acc.iter_mut().zip(src) {
                        *a += v * wv;
                    }
                }
            }
            batch.clear();
        };
        for (src, (ci, t)) in pairs {
            batch.push((src, f64::from(wk[ci * kh * kw + t])));
            if batch.len() == PASS {
                flush(&mut batch, &mut acc);
            }
        }
        flush(&mut batch, &mut acc);
        for (oy, row) in yplane.chunks_exact_mut(ow).enumerate() {
            for (o, &a) in row.iter_mut().zip(&acc[oy * wq..]) {
                *o = (a + bias[ko]) as f32;
            }
        }
    };
    y.par_chunks_mut(oh * ow).enumerate().for_each(plane_task);
    y
}

/// Products of one pass of [`conv_padded`].
const PASS: usize = 8;

/// One pass of [`conv_padded`]: `acc[i] += t[j][i] · wv[j]` for `j` in order, each output's
/// running sum in a register. The loop runs across outputs, each output's sum in the same
/// order, and Rust never fuses a multiply and an add, so its bits are the same whatever
/// vector extension pulp compiles it for.
struct Pass<'a> {
    t: [&'a [f64]; PASS],
    wv: [f64; PASS],
    acc: &'a mut [f64],
}

impl pulp::WithSimd for Pass<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let Pass { t, wv, acc } = self;
        for (i, a) in acc.iter_mut().enumerate() {
            let mut s = *a;
            for j in 0..PASS {
                s += t[j][i] * wv[j];
            }
            *a = s;
        }
    }
}

/// Transposed convolution: every input element scatters `x * w` into the output.
fn deconv(x: &[f32], xs: Shape, p: &Conv, ys: Shape) -> Result<Vec<f32>, String> {
    let win = &p.window;
    check_window(win, true)?;
    let (cg, kg) = groups(p, xs, ys)?;
    let [kh, kw] = win.kernel;
    let [sh, sw] = win.stride;
    let [dh, dw] = win.dilation;
    let [pt, pl, _, _] = win.pad;
    let k_total = p.out_channels;
    let w = exact(
        &p.weight,
        xs.c * kg * kh * kw,
        "weight [C, K/groups, kh, kw]",
    )?;
    let bias = bias_values(p.bias.as_ref(), k_total)?;
    let (oh, ow) = (ys.h, ys.w);
    let mut acc = vec![0f64; ys.elements()];
    for n in 0..xs.n {
        for c in 0..xs.c {
            let gi = c / cg;
            for iy in 0..xs.h {
                for ix in 0..xs.w {
                    let v = f64::from(x[((n * xs.c + c) * xs.h + iy) * xs.w + ix]);
                    for kk in 0..kg {
                        let ko = gi * kg + kk;
                        let wk = &w[(c * kg + kk) * kh * kw..][..kh * kw];
                        let plane = &mut acc[(n * k_total + ko) * oh * ow..][..oh * ow];
                        for ky in 0..kh {
                            let Some(oy) = (iy * sh + ky * dh).checked_sub(pt).filter(|&v| v < oh)
                            else {
                                continue;
                            };
                            for kx in 0..kw {
                                let Some(ox) =
                                    (ix * sw + kx * dw).checked_sub(pl).filter(|&v| v < ow)
                                else {
                                    continue;
                                };
                                plane[oy * ow + ox] += v * f64::from(wk[ky * kw + kx]);
                            }
                        }
                    }
                }
            }
        }
    }
    let plane = oh * ow;
    Ok(acc
        .iter()
        .enumerate()
        .map(|(i, &a)| (a + bias[(i / plane) % k_total]) as f32)
        .collect())
}

/// Fully connected: each batch item flattened in CHW order times `weight [K, C*H*W]`.
fn fully_connected(
    x: &[f32],
    xs: Shape,
    weight: &Weights,
    bias: Option<&Weights>,
    ys: Shape,
) -> Result<Vec<f32>, String> {
    let k = ys.c;
    if ys != Shape::new(xs.n, k, 1, 1) {
        return Err(format!("output shape {ys}, needs {}xKx1x1", xs.n));
    }
    let per = xs.per_item();
    let w = exact(weight, k * per, "weight [K, C*H*W]")?;
    let bias = bias_values(bias, k)?;
    let mut y = Vec::with_capacity(ys.elements());
    for n in 0..xs.n {
        let item = &x[n * per..][..per];
        for (ko, b) in bias.iter().enumerate() {
            let row = &w[ko * per..][..per];
            let acc: f64 = item
                .iter()
                .zip(row)
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum();
            y.push((acc + b) as f32);
        }
    }
    Ok(y)
}

/// Max or average pooling over the output shape recorded in the graph.
fn pool(x: &[f32], xs: Shape, p: &Pool, ys: Shape) -> Result<Vec<f32>, String> {
    let win = &p.window;
    check_window(win, false)?;
    if win.dilation.iter().any(|&d| d > 1) {
        return Err(format!(
            "pooling dilation {:?} is not supported",
            win.dilation
        ));
    }
    if ys.n != xs.n || ys.c != xs.c {
        return Err(format!(
            "output shape {ys} changes batch or channels of {xs}"
        ));
    }
    let [kh, kw] = win.kernel;
    let [sh, sw] = win.stride;
    let [pt, pl, pb, pr] = win.pad;
    // Caffe: start = o*s - pad, end = min(start + k, size + pad_end), the divisor taken
    // here, then both clipped to [0, size).
    let span = |o: usize, s: usize, k: usize, p0: usize, p1: usize, size: usize| {
        let start = (o * s) as isize - p0 as isize;
        let end = (start + k as isize).min((size + p1) as isize);
        let full = (end - start).max(0) as usize;
        let (lo, hi) = (start.max(0) as usize, end.clamp(0, size as isize) as usize);
        (lo, hi, full)
    };
    let mut y = Vec::with_capacity(ys.elements());
    for nc in 0..xs.n * xs.c {
        let plane = &x[nc * xs.h * xs.w..][..xs.h * xs.w];
        for oy in 0..ys.h {
            let (y0, y1, fh) = span(oy, sh, kh, pt, pb, xs.h);
            for ox in 0..ys.w {
                let (x0, x1, fw) = span(ox, sw, kw, pl, pr, xs.w);
                if y0 >= y1 || x0 >= x1 {
                    return Err(format!(
                        "pooling window of output ({oy}, {ox}) covers no input element \
                         (input {xs}, output {ys}, kernel {kh}x{kw}, stride {sh}x{sw}, pad {:?})",
                        win.pad
                    ));
                }
                let rows = (y0..y1).map(|iy| &plane[iy * xs.w + x0..iy * xs.w + x1]);
                y.push(match p.kind {
                    PoolKind::Max => rows
                        .flat_map(|r| r.iter().copied())
                        .fold(f32::NEG_INFINITY, f32::max),
                    PoolKind::Avg => {
                        let sum: f64 = rows.flat_map(|r| r.iter().map(|&v| f64::from(v))).sum();
                        let count = if p.count_include_pad {
                            fh * fw
                        } else {
                            (y1 - y0) * (x1 - x0)
                        };
                        (sum / count as f64) as f32
                    }
                });
            }
        }
    }
    Ok(y)
}

/// Element-wise activations.
fn activation(x: &[f32], xs: Shape, a: &Activation) -> Result<Vec<f32>, String> {
    Ok(match a {
        Activation::Relu { slope } => x
            .iter()
            .map(|&v| if v > 0.0 { v } else { v * slope })
            .collect(),
        Activation::PRelu { slopes } => {
            let slope = per_channel(Some(slopes), xs.c, "slopes", 0.0)?;
            let plane = xs.h * xs.w;
            x.iter()
                .enumerate()
                .map(|(i, &v)| {
                    if v > 0.0 {
                        v
                    } else {
                        (f64::from(v) * slope((i / plane) % xs.c)) as f32
                    }
                })
                .collect()
        }
        Activation::Clip { lo, hi } => {
            if lo > hi {
                return Err(format!("clip bounds {lo} > {hi}"));
            }
            x.iter().map(|&v| v.max(*lo).min(*hi)).collect()
        }
        Activation::Sigmoid => x
            .iter()
            .map(|&v| (1.0 / (1.0 + (-f64::from(v)).exp())) as f32)
            .collect(),
        Activation::Tanh => x.iter().map(|&v| f64::from(v).tanh() as f32).collect(),
        Activation::Erf => x
            .iter()
            .map(|&v| crate::lut::erf(f64::from(v)) as f32)
            .collect(),
    })
}

/// `x * scale[c] + bias[c]`.
fn channel_affine(
    x: &[f32],
    xs: Shape,
    scale: Option<&Weights>,
    bias: Option<&Weights>,
) -> Result<Vec<f32>, String> {
    let s = per_channel(scale, xs.c, "scale", 1.0)?;
    let b = per_channel(bias, xs.c, "bias", 0.0)?;
    let plane = xs.h * xs.w;
    Ok(x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = (i / plane) % xs.c;
            (f64::from(v) * s(c) + b(c)) as f32
        })
        .collect())
}

/// `(x - mean[c]) / sqrt(var[c] + eps)`.
fn batch_norm(
    x: &[f32],
    xs: Shape,
    mean: &Weights,
    var: &Weights,
    eps: f32,
) -> Result<Vec<f32>, String> {
    let mean = exact(mean, xs.c, "mean")?;
    let var = exact(var, xs.c, "variance")?;
    let inv: Vec<f64> = var
        .iter()
        .enumerate()
        .map(|(c, &v)| {
            let d = f64::from(v) + f64::from(eps);
            if d > 0.0 {
                Ok(1.0 / d.sqrt())
            } else {
                Err(format!("channel {c}: variance + eps = {d} is not positive"))
            }
        })
        .collect::<Result<_, _>>()?;
    let plane = xs.h * xs.w;
    Ok(x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = (i / plane) % xs.c;
            ((f64::from(v) - f64::from(mean[c])) * inv[c]) as f32
        })
        .collect())
}

/// Sum (with coefficients), product or maximum of same-shape inputs.
fn eltwise(
    ins: &[&[f32]],
    shapes: &[Shape],
    kind: EltwiseKind,
    coeffs: &[f32],
    ys: Shape,
) -> Result<Vec<f32>, String> {
    // The second of two inputs may be a per-channel vector broadcast over the pixels.
    let vector = shapes.len() == 2 && shapes[1].is_channel_vector_of(ys);
    if let Some(s) = shapes
        .iter()
        .enumerate()
        .find(|&(i, &s)| s != ys && !(i == 1 && vector))
        .map(|(_, s)| s)
    {
        return Err(format!("input shape {s} differs from output shape {ys}"));
    }
    let pixels = ys.h * ys.w;
    // Element `e` of input `i`: a vector input has one value per item and channel.
    let at = |i: usize, e: usize| -> f32 {
        if i == 1 && vector {
            ins[1][e / pixels]
        } else {
            ins[i][e]
        }
    };
    if kind == EltwiseKind::Sum {
        if !coeffs.is_empty() && coeffs.len() != ins.len() {
            return Err(format!(
                "{} coefficients for {} inputs",
                coeffs.len(),
                ins.len()
            ));
        }
    } else if coeffs.iter().any(|&c| c != 1.0) {
        return Err("coefficients apply to a sum only".into());
    }
    let coeff = |i: usize| f64::from(coeffs.get(i).copied().unwrap_or(1.0));
    Ok((0..ys.elements())
        .map(|e| match kind {
            EltwiseKind::Sum => (0..ins.len())
                .map(|i| coeff(i) * f64::from(at(i, e)))
                .sum::<f64>() as f32,
            EltwiseKind::Prod => {
                (0..ins.len()).map(|i| f64::from(at(i, e))).product::<f64>() as f32
            }
            EltwiseKind::Max => (0..ins.len())
                .map(|i| at(i, e))
                .fold(f32::NEG_INFINITY, f32::max),
        })
        .collect())
}

/// Concatenation along channels.
fn concat(ins: &[&[f32]], shapes: &[Shape], ys: Shape) -> Result<Vec<f32>, String> {
    let channels: usize = shapes.iter().map(|s| s.c).sum();
    if let Some(s) = shapes
        .iter()
        .find(|s| (s.n, s.h, s.w) != (ys.n, ys.h, ys.w))
    {
        return Err(format!(
            "input shape {s} does not fit output {ys} (batch, height, width)"
        ));
    }
    if channels != ys.c {
        return Err(format!(
            "inputs have {channels} channels in all, output {}",
            ys.c
        ));
    }
    let mut y = Vec::with_capacity(ys.elements());
    for n in 0..ys.n {
        for (x, s) in ins.iter().zip(shapes) {
            y.extend_from_slice(&x[n * s.per_item()..][..s.per_item()]);
        }
    }
    Ok(y)
}

/// Softmax over channels at every (n, h, w), with the maximum subtracted first.
fn softmax(x: &[f32], xs: Shape) -> Vec<f32> {
    let plane = xs.h * xs.w;
    let mut y = vec![0f32; x.len()];
    let mut e = vec![0f64; xs.c];
    for n in 0..xs.n {
        for p in 0..plane {
            let at = |c: usize| (n * xs.c + c) * plane + p;
            let max = (0..xs.c)
                .map(|c| x[at(c)])
                .fold(f32::NEG_INFINITY, f32::max);
            for (c, e) in e.iter_mut().enumerate() {
                *e = (f64::from(x[at(c)]) - f64::from(max)).exp();
            }
            let sum: f64 = e.iter().sum();
            for (c, e) in e.iter().enumerate() {
                y[at(c)] = (e / sum) as f32;
            }
        }
    }
    y
}

/// Caffe LRN across channels: `x * (k + alpha/size * sum of x^2 over the size channels
/// centred on c, clipped at the edges) ^ -beta`.
fn lrn(
    x: &[f32],
    xs: Shape,
    size: usize,
    alpha: f32,
    beta: f32,
    k: f32,
) -> Result<Vec<f32>, String> {
    if size.is_multiple_of(2) {
        return Err(format!("local size {size} is not odd"));
    }
    let half = size / 2;
    let plane = xs.h * xs.w;
    let (alpha, beta, k) = (f64::from(alpha), f64::from(beta), f64::from(k));
    let mut y = vec![0f32; x.len()];
    // prefix[c] = sum of squares of channels below c.
    let mut prefix = vec![0f64; xs.c + 1];
    for n in 0..xs.n {
        for p in 0..plane {
            let at = |c: usize| (n * xs.c + c) * plane + p;
            for c in 0..xs.c {
                let v = f64::from(x[at(c)]);
                prefix[c + 1] = prefix[c] + v * v;
            }
            for c in 0..xs.c {
                let lo = c.saturating_sub(half);
                let hi = (c + half + 1).min(xs.c);
                let scale = k + alpha / size as f64 * (prefix[hi] - prefix[lo]);
                y[at(c)] = (f64::from(x[at(c)]) * scale.powf(-beta)) as f32;
            }
        }
    }
    Ok(y)
}

#[cfg(test)]
pub(crate) mod tests;
