//! `Upsample` and `Resize` by integer factors: nearest-neighbour as a depthwise IR
//! `Deconv` of ones; linear (bilinear) as an IR `EdgePad` of one pixel (the clamped
//! neighbours at the borders) and a depthwise `Deconv` whose kernel holds each phase's two
//! interpolation weights per axis.

use super::common::MAX_WINDOW;
use crate::capability::MAX_CUBE;
use crate::error::Result;
use crate::frontend::onnx::build::{ir_shape, Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::{self, fmt_dims, MAX_COMPUTED};
use crate::ir::{Conv, Op, Weights, Window};

/// The input coordinate output `x` maps to under `ctm` (ONNX `Resize`).
fn source_coordinate(
    cx: &NodeCx<'_>,
    x: usize,
    input: usize,
    output: usize,
    scale: f64,
    ctm: &str,
) -> Result<f64> {
    let xf = x as f64;
    Ok(match ctm {
        "half_pixel" | "half_pixel_symmetric" => (xf + 0.5) / scale - 0.5,
        "pytorch_half_pixel" => {
            if output > 1 {
                (xf + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        "align_corners" => {
            if output == 1 {
                0.0
            } else {
                xf * (input as f64 - 1.0) / (output as f64 - 1.0)
            }
        }
        "asymmetric" => xf / scale,
        "tf_half_pixel_for_nn" => (xf + 0.5) / scale,
        other => {
            return Err(cx.err(format!(
                "coordinate_transformation_mode `{other}` is not supported"
            )))
        }
    })
}

/// The input index nearest-neighbour resizing reads for output `x` (ONNX `Resize`).
fn nearest_source(
    cx: &NodeCx<'_>,
    x: usize,
    input: usize,
    output: usize,
    scale: f64,
    ctm: &str,
    nearest: &str,
) -> Result<usize> {
    let orig = source_coordinate(cx, x, input, output, scale, ctm)?;
    let i = match nearest {
        "round_prefer_floor" => {
            if orig.fract() == 0.5 || orig.fract() == -0.5 {
                orig.floor()
            } else {
                orig.round()
            }
        }
        "round_prefer_ceil" => {
            if orig.fract() == 0.5 || orig.fract() == -0.5 {
                orig.ceil()
            } else {
                orig.round()
            }
        }
        "floor" => orig.floor(),
        "ceil" => orig.ceil(),
        other => return Err(cx.err(format!("nearest_mode `{other}` is not supported"))),
    };
    Ok(i.clamp(0.0, input as f64 - 1.0) as usize)
}

pub(super) fn upsample(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let resize = cx.op() == "Resize";
    if cx.opset < 7 {
        return Err(cx.err("Upsample before opset 7 is experimental and not supported"));
    }
    let x = cx.act(0)?;
    let r = x.dims.len();
    let mode = cx.string("mode")?.unwrap_or_else(|| "nearest".into());
    // Upsample-7 calls its linear mode `bilinear` in some exporters.
    let linear = matches!(mode.as_str(), "linear" | "bilinear");
    if mode != "nearest" && !linear {
        return Err(cx.err(format!(
            "mode `{mode}`: only nearest-neighbour and linear resizing by integer factors map \
             to the IR (a deconvolution)"
        )));
    }
    let floats = |k: usize, what: &str| -> Result<Option<Vec<f64>>> {
        Ok(cx
            .constant(k, what)?
            .filter(|c| c.len() > 0)
            .map(|c| c.to_f32().iter().map(|&v| f64::from(v)).collect()))
    };
    let (scales, sizes) = if !resize {
        if cx.opset < 9 {
            cx.arity(1, 1)?;
            let s = cx
                .floats("scales")?
                .ok_or_else(|| cx.err("attribute `scales` is required"))?;
            (
                Some(s.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()),
                None,
            )
        } else {
            cx.arity(2, 2)?;
            (floats(1, "scales")?, None)
        }
    } else if cx.opset < 11 {
        cx.arity(2, 2)?;
        (floats(1, "scales")?, None)
    } else {
        cx.arity(1, 4)?;
        let sizes = match cx.constant(3, "sizes")? {
            Some(c) if c.len() > 0 => Some(c.to_i64()),
            _ => None,
        };
        (floats(2, "scales")?, sizes)
    };
    // Per-axis factors over all r axes.
    let axes: Vec<usize> = match (resize && cx.opset >= 18)
        .then(|| cx.ints("axes"))
        .transpose()?
        .flatten()
    {
        None => (0..r).collect(),
        Some(a) => a
            .iter()
            .map(|&v| cx.axis("axes", v, r))
            .collect::<Result<_>>()?,
    };
    let mut out = x.dims.clone();
    let mut scale = vec![1f64; r];
    match (scales, sizes) {
        (Some(s), None) => {
            if s.len() != axes.len() {
                return Err(cx.err(format!(
                    "scales has {} values for {} axes",
                    s.len(),
                    axes.len()
                )));
            }
            for (i, &a) in axes.iter().enumerate() {
                if !(s[i] > 0.0 && s[i] <= MAX_WINDOW as f64) {
                    return Err(cx.err(format!("scale {} is out of range", s[i])));
                }
                scale[a] = s[i];
                out[a] = (x.dims[a] as f64 * s[i]).floor() as usize;
            }
        }
        (None, Some(z)) => {
            if z.len() != axes.len() {
                return Err(cx.err(format!(
                    "sizes has {} values for {} axes",
                    z.len(),
                    axes.len()
                )));
            }
            let policy = cx.string("keep_aspect_ratio_policy")?;
            if policy.as_deref().is_some_and(|p| p != "stretch") {
                return Err(cx.err("keep_aspect_ratio_policy other than stretch is not supported"));
            }
            for (i, &a) in axes.iter().enumerate() {
                if z[i] < 1 || z[i] > MAX_WINDOW * x.dims[a] as i64 {
                    return Err(cx.err(format!("size {} is out of range", z[i])));
                }
                out[a] = z[i] as usize;
                scale[a] = z[i] as f64 / x.dims[a] as f64;
            }
        }
        _ => return Err(cx.err("exactly one of scales and sizes must be given")),
    }
    if r < 3 || out[0] != x.dims[0] || out[1] != x.dims[1] || r > 4 {
        return Err(cx.err(format!(
            "resizing {} to {}: only the spatial axes of a rank-3 or rank-4 tensor can be \
             resized",
            fmt_dims(&x.dims),
            fmt_dims(&out)
        )));
    }
    let (ctm, nearest) = if !resize {
        ("asymmetric".to_string(), "floor".to_string())
    } else {
        (
            cx.string("coordinate_transformation_mode")?
                .unwrap_or_else(|| {
                    if cx.opset < 11 {
                        "asymmetric"
                    } else {
                        "half_pixel"
                    }
                    .into()
                }),
            cx.string("nearest_mode")?.unwrap_or_else(|| {
                if cx.opset < 11 {
                    "floor"
                } else {
                    "round_prefer_floor"
                }
                .into()
            }),
        )
    };
    let shape = ir_shape(&out).map_err(|e| cx.err(e))?;
    let mut factor = [1usize; 2];
    // Linear: per axis, the deconvolution kernel of `3 * factor` taps (identity by default).
    let mut taps = [vec![0.0, 1.0, 0.0], vec![0.0, 1.0, 0.0]];
    for i in 0..r - 2 {
        let (inp, o) = (x.dims[2 + i], out[2 + i]);
        if o.checked_rem(inp) != Some(0) || o == 0 {
            return Err(cx.err(format!(
                "axis {}: {inp} to {o} is not an integer factor",
                2 + i
            )));
        }
        let f = o / inp;
        if o > 1 << 20 {
            return Err(cx.err(format!("axis {}: output size {o} is too large", 2 + i)));
        }
        if linear {
            taps[i] = linear_taps(cx, 2 + i, inp, o, f, scale[2 + i], &ctm)?;
            factor[i] = f;
            continue;
        }
        for p in 0..o {
            if nearest_source(cx, p, inp, o, scale[2 + i], &ctm, &nearest)? != p / f {
                return Err(cx.err(format!(
                    "axis {}: this resize ({ctm}, {nearest}) does not repeat every pixel {f} \
                     times, so it is not a deconvolution",
                    2 + i
                )));
            }
        }
        factor[i] = f;
    }
    if factor == [1, 1] {
        return Ok(vec![Value::Act(Act { t: x.t, dims: out })]);
    }
    let (t, _) = b.canonical(cx, 0)?;
    let c = x.dims[1];
    if linear {
        return linear_resize(b, cx, t, c, factor, &taps, shape, out);
    }
    let n = tensor::count(&[c, factor[0], factor[1]], MAX_COMPUTED).map_err(|e| cx.err(e))?;
    b.spend(cx, n)?;
    let op = depthwise_deconv(cx, c, factor, factor, [0; 4], vec![1.0; n])?;
    let t = b.emit(cx, None, op, vec![t], cx.out(0).into(), shape);
    Ok(vec![Value::Act(Act { t, dims: out })])
}

/// The `3 * f` deconvolution taps of a linear resize by `f` along axis `axis` (`inp` to
/// `o`): output `f * i + r` reads input `i + d` (`d` in -1, 0, 1) with tap `r + f * (1 -
/// d)`, over an input padded by one border pixel on each side (ONNX Runtime clamps the
/// coordinate; with two taps a fraction away from the border, the clamped pixel is the
/// same). Every output's source coordinate must be its phase's plus `i`.
fn linear_taps(
    cx: &NodeCx<'_>,
    axis: usize,
    inp: usize,
    o: usize,
    f: usize,
    scale: f64,
    ctm: &str,
) -> Result<Vec<f32>> {
    let mut taps = vec![0f32; 3 * f];
    for r in 0..f.min(o) {
        let c = source_coordinate(cx, r, inp, o, scale, ctm)?;
        let lo = c.floor();
        if !(-1.0..=0.0).contains(&lo) {
            return Err(cx.err(format!(
                "axis {axis}: output {r} reads input {c}: not a linear resize by {f} with \
                 neighbours next to its pixel"
            )));
        }
        let frac = (c - lo) as f32;
        let d = lo as i64;
        taps[(r as i64 + f as i64 * (1 - d)) as usize] += 1.0 - frac;
        taps[(r as i64 + f as i64 * (1 - (d + 1))) as usize] += frac;
    }
    for p in 0..o {
        let c = source_coordinate(cx, p, inp, o, scale, ctm)?;
        let want = source_coordinate(cx, p % f, inp, o, scale, ctm)? + (p / f) as f64;
        if (c - want).abs() > 1e-9 {
            return Err(cx.err(format!(
                "axis {axis}: this resize ({ctm}) does not repeat its phases every {f} \
                 outputs, so it is not a deconvolution"
            )));
        }
    }
    Ok(taps)
}

/// A linear resize of `t` (`c` channels) by `factor`: the input padded by its border
/// pixels, then a depthwise deconvolution of kernel `3 * factor` (the outer product of the
/// axes' taps), stride `factor`, cropped by `2 * factor` on each side.
#[allow(clippy::too_many_arguments)]
fn linear_resize(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    t: crate::ir::TensorId,
    c: usize,
    factor: [usize; 2],
    taps: &[Vec<f32>; 2],
    shape: crate::ir::Shape,
    out: Vec<usize>,
) -> Result<Vec<Value>> {
    let s = b.shape(t);
    let padded = crate::ir::Shape::new(s.n, s.c, s.h + 2, s.w + 2);
    let name = format!("{}/edge", cx.out(0));
    let p = b.emit(
        cx,
        Some("edge"),
        Op::EdgePad { pads: [1; 4] },
        vec![t],
        name,
        padded,
    );
    if factor.iter().all(|&f| f > 1) && factor[0] * factor[1] * c.next_multiple_of(32) > MAX_CUBE {
        return separable_resize(b, cx, (p, padded), c, factor, taps, shape, out);
    }
    let kernel = [taps[0].len(), taps[1].len()];
    let per = kernel[0] * kernel[1];
    let n = tensor::count(&[c, per], MAX_COMPUTED).map_err(|e| cx.err(e))?;
    b.spend(cx, n)?;
    let mut weight = Vec::with_capacity(n);
    for _ in 0..c {
        for &wy in &taps[0] {
            weight.extend(taps[1].iter().map(|&wx| wy * wx));
        }
    }
    let pad = [2 * factor[0], 2 * factor[1], 2 * factor[0], 2 * factor[1]];
    let op = depthwise_deconv(cx, c, kernel, factor, pad, weight)?;
    let t = b.emit(cx, None, op, vec![p], cx.out(0).into(), shape);
    Ok(vec![Value::Act(Act { t, dims: out })])
}

/// A linear resize too large for one deconvolution, one axis at a time: the lines, then
/// the columns, each a depthwise deconvolution of one axis's taps.
///
/// One deconvolution computes `fy * fx` phases of every channel as channels of one cube
/// (a RUBIK contract interleaves them), and a cube holds at most [`MAX_CUBE`] channels: a
/// 32x resize of U²-Net's side outputs takes 1 024 phases of 16 or 32 channels (one
/// channel padded to an atom). The bilinear kernel is the outer product of the axes'
/// taps, so two passes give the same values with `fy + fx` phases: the lines over the
/// padded columns, which the second pass crops.
#[allow(clippy::too_many_arguments)]
fn separable_resize(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    (p, padded): (crate::ir::TensorId, crate::ir::Shape),
    c: usize,
    factor: [usize; 2],
    taps: &[Vec<f32>; 2],
    shape: crate::ir::Shape,
    out: Vec<usize>,
) -> Result<Vec<Value>> {
    let pass = |b: &mut Builder, input, axis: usize, name: String, to: crate::ir::Shape| {
        let k = taps[axis].len();
        let n = tensor::count(&[c, k], MAX_COMPUTED).map_err(|e| cx.err(e))?;
        b.spend(cx, n)?;
        let (mut kernel, mut stride, mut pad) = ([1, 1], [1, 1], [0; 4]);
        kernel[axis] = k;
        stride[axis] = factor[axis];
        (pad[axis], pad[axis + 2]) = (2 * factor[axis], 2 * factor[axis]);
        let weight = (0..c).flat_map(|_| taps[axis].iter().copied()).collect();
        let op = depthwise_deconv(cx, c, kernel, stride, pad, weight)?;
        let tag = if axis == 0 { "lines" } else { "columns" };
        Ok(b.emit(cx, Some(tag), op, vec![input], name, to))
    };
    let lines = crate::ir::Shape::new(shape.n, c, shape.h, padded.w);
    let y = pass(b, p, 0, format!("{}/lines", cx.out(0)), lines)?;
    let t = pass(b, y, 1, cx.out(0).into(), shape)?;
    Ok(vec![Value::Act(Act { t, dims: out })])
}

/// A depthwise deconvolution of `c` channels without bias: each channel's `kernel` taps
/// (`weight`, `[c, 1, kh, kw]`), `stride`, `pad` cropped.
fn depthwise_deconv(
    cx: &NodeCx<'_>,
    c: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 4],
    weight: Vec<f32>,
) -> Result<Op> {
    Ok(Op::Deconv(Conv {
        window: Window {
            kernel,
            stride,
            pad,
            dilation: [1, 1],
        },
        groups: c,
        out_channels: c,
        weight: Weights::new(vec![c, 1, kernel[0], kernel[1]], weight)
            .ok_or_else(|| cx.err("weight size"))?,
        bias: None,
    }))
}
