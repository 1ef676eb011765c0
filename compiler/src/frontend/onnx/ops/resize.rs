//! `Upsample` and `Resize`, nearest-neighbour by integer factors: a depthwise IR `Deconv`
//! of ones.

use super::common::MAX_WINDOW;
use crate::error::Result;
use crate::frontend::onnx::build::{ir_shape, Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::{self, fmt_dims, MAX_COMPUTED};
use crate::ir::{Conv, Op, Weights, Window};

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
    let xf = x as f64;
    let orig = match ctm {
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
    };
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
    if mode != "nearest" {
        return Err(cx.err(format!(
            "mode `{mode}`: only nearest-neighbour resizing by integer factors maps to the IR \
             (a deconvolution)"
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
    let n = tensor::count(&[c, factor[0], factor[1]], MAX_COMPUTED).map_err(|e| cx.err(e))?;
    b.spend(cx, n)?;
    let op = Op::Deconv(Conv {
        window: Window {
            kernel: factor,
            stride: factor,
            pad: [0; 4],
            dilation: [1, 1],
        },
        groups: c,
        out_channels: c,
        weight: Weights::new(vec![c, 1, factor[0], factor[1]], vec![1.0; n])
            .ok_or_else(|| cx.err("weight size"))?,
        bias: None,
    });
    let t = b.emit(cx, None, op, vec![t], cx.out(0).into(), shape);
    Ok(vec![Value::Act(Act { t, dims: out })])
}
