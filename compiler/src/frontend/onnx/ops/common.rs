//! Helpers shared by several operator files: an input as it is, window attributes
//! (`kernel_shape`, `strides`, `dilations`, `pads`, `auto_pad`, a folded `Pad`), constants
//! applied per channel and the per-channel affine, and integer parameters that are an
//! attribute or an input depending on the opset.

use crate::error::Result;
use crate::frontend::onnx::build::{channel_axis, Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::{self, fmt_dims, Const};
use crate::ir::{Op, TensorId, Weights};
use std::rc::Rc;

/// Largest kernel, stride, dilation or padding accepted (keeps all window arithmetic far
/// from overflow).
pub(super) const MAX_WINDOW: i64 = 1 << 16;

/// Input `k` as it is (activation, constant or padded), for aliasing ops.
pub(super) fn input_value(cx: &NodeCx<'_>, k: usize) -> Result<Value> {
    match cx.input(k) {
        Some(Value::Unavailable(r)) => Err(cx.err(format!("input `{}`: {r}", cx.in_name(k)))),
        Some(v) => Ok(v.clone()),
        None => Err(cx.err(format!("input {k} is missing"))),
    }
}

/// A non-negative integer attribute value in `lo..=MAX_WINDOW`.
pub(super) fn window_value(cx: &NodeCx<'_>, what: &str, v: i64, lo: i64) -> Result<usize> {
    if v < lo || v > MAX_WINDOW {
        return Err(cx.err(format!("{what} {v} is out of range ({lo} to {MAX_WINDOW})")));
    }
    Ok(v as usize)
}

/// INTS attribute `name` with `n` values each in `lo..=MAX_WINDOW`, or `default` repeated.
pub(super) fn window_list(
    cx: &NodeCx<'_>,
    name: &str,
    n: usize,
    lo: i64,
    default: usize,
) -> Result<Vec<usize>> {
    match cx.ints(name)? {
        None => Ok(vec![default; n]),
        Some(v) if v.len() != n => {
            Err(cx.err(format!("`{name}` has {} values, expected {n}", v.len())))
        }
        Some(v) => v.iter().map(|&x| window_value(cx, name, x, lo)).collect(),
    }
}

/// Padding mode of convolution and pooling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AutoPad {
    NotSet,
    SameUpper,
    SameLower,
    Valid,
}

pub(super) fn auto_pad(cx: &NodeCx<'_>) -> Result<AutoPad> {
    match cx.string("auto_pad")?.as_deref() {
        None | Some("NOTSET") | Some("") => Ok(AutoPad::NotSet),
        Some("SAME_UPPER") => Ok(AutoPad::SameUpper),
        Some("SAME_LOWER") => Ok(AutoPad::SameLower),
        Some("VALID") => Ok(AutoPad::Valid),
        Some(o) => Err(cx.err(format!("unknown auto_pad `{o}`"))),
    }
}

/// Number of spatial axes of a convolution/pooling input: 1 (`[N, C, L]`) or 2.
pub(super) fn spatial_axes(cx: &NodeCx<'_>, dims: &[usize]) -> Result<usize> {
    match dims.len() {
        3 => Ok(1),
        4 => Ok(2),
        r => Err(cx.err(format!(
            "input of rank {r} ({}): only 1-D and 2-D windows (rank 3 or 4 inputs) map to the IR",
            fmt_dims(dims)
        ))),
    }
}

/// The windowed op's input `k`: its canonical IR tensor, unpadded dims, and the padding
/// `[top, left, bottom, right]` of a `Pad` folded into it (only a padding of `value`).
pub(super) fn window_input(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    k: usize,
    value: Option<f32>,
) -> Result<(TensorId, Vec<usize>, [usize; 4])> {
    match cx.input(k) {
        Some(Value::Padded {
            act,
            pads,
            value: v,
            ..
        }) => {
            if value != Some(*v) {
                return Err(cx.err(format!(
                    "input `{}` is padded with {v} by a Pad; {} only folds a padding of {}",
                    cx.in_name(k),
                    cx.op(),
                    value.map_or("no value".to_string(), |x| x.to_string())
                )));
            }
            let (act, pads) = (act.clone(), *pads);
            let t = b.canonical_act(cx, &act, cx.in_name(k))?;
            Ok((t, act.dims, pads))
        }
        _ => {
            let (t, dims) = b.canonical(cx, k)?;
            Ok((t, dims, [0; 4]))
        }
    }
}

/// A constant of exactly `n` values (any shape) as a vector.
pub(super) fn vector(cx: &NodeCx<'_>, c: &Const, n: usize, what: &str) -> Result<Weights> {
    if c.len() != n {
        return Err(cx.err(format!(
            "{what} has {} values ({}), expected {n}",
            c.len(),
            fmt_dims(&c.dims)
        )));
    }
    Ok(Weights::vector(c.to_f32()))
}

/// A constant applied element-wise to an activation of `dims`: its values if it is a
/// scalar or varies only along the channel axis (with the channel count), and the
/// dimensions of the broadcast result.
pub(super) fn per_channel(c: &Const, dims: &[usize]) -> Result<(Vec<f32>, Vec<usize>), String> {
    let out = tensor::broadcast(dims, &c.dims).ok_or_else(|| {
        format!(
            "the constant of shape {} does not broadcast with {}",
            fmt_dims(&c.dims),
            fmt_dims(dims)
        )
    })?;
    let off = out.len() - dims.len();
    if out[off..] != *dims || out[..off].iter().any(|&d| d != 1) {
        return Err(format!(
            "the constant of shape {} would broadcast the input {} to {}",
            fmt_dims(&c.dims),
            fmt_dims(dims),
            fmt_dims(&out)
        ));
    }
    let v = c.to_f32();
    if v.len() == 1 {
        return Ok((v, out));
    }
    let r = out.len();
    let ch = channel_axis(dims.len()).map(|a| a + off);
    let coff = r - c.dims.len();
    for (i, &d) in c.dims.iter().enumerate() {
        if d != 1 && Some(coff + i) != ch {
            return Err(format!(
                "the constant of shape {} varies along axis {} of {}: only scalars and \
                 per-channel constants map to the IR's per-channel affine",
                fmt_dims(&c.dims),
                coff + i,
                fmt_dims(&out)
            ));
        }
    }
    Ok((v, out))
}

/// `x * scale + bias` on input `k` (scale and bias: one value or one per channel).
pub(super) fn affine(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    k: usize,
    scale: Option<Vec<f32>>,
    bias: Option<Vec<f32>>,
    dims: Option<Vec<usize>>,
) -> Result<Vec<Value>> {
    let x = cx.act(k)?;
    let wide =
        scale.as_ref().is_some_and(|v| v.len() > 1) || bias.as_ref().is_some_and(|v| v.len() > 1);
    let t = if wide { b.canonical(cx, k)?.0 } else { x.t };
    let s = b.shape(t);
    let t = b.emit(
        cx,
        None,
        Op::ChannelAffine {
            scale: scale.map(Weights::vector),
            bias: bias.map(Weights::vector),
        },
        vec![t],
        cx.out(0).into(),
        s,
    );
    Ok(vec![Value::Act(Act {
        t,
        dims: dims.unwrap_or(x.dims),
    })])
}

/// Before opset 7, a constant operand `c` of a tensor of rank `r` is aligned at `axis`
/// (not at the end): its dimensions as numpy broadcasting reads them.
pub(super) fn legacy_aligned(cx: &NodeCx<'_>, c: &Const, axis: i64, r: usize) -> Result<Const> {
    let a = cx.axis("axis", axis, r)?;
    if a + c.dims.len() > r {
        return Err(cx.err(format!(
            "operand {} does not fit at axis {a} of a rank-{r} tensor",
            fmt_dims(&c.dims)
        )));
    }
    let mut dims = c.dims.clone();
    dims.resize(r - a, 1);
    Ok(c.reshaped(dims))
}

/// Constant input `k` or INTS attribute `name` (by opset: the attribute before
/// `input_since`), as integers; `None` if absent.
pub(crate) fn ints_param(
    cx: &NodeCx<'_>,
    k: usize,
    name: &str,
    input_since: i64,
) -> Result<Option<Vec<i64>>> {
    if cx.opset >= input_since {
        match cx.constant(k, name)? {
            None => Ok(None),
            Some(c) => match c.ints_exact() {
                Some(v) => Ok(Some(v.to_vec())),
                None => Err(cx.err(format!("`{name}` must be an integer tensor"))),
            },
        }
    } else {
        cx.ints(name)
    }
}

/// Wraps constants as values.
pub(crate) fn consts(v: Vec<Const>) -> Vec<Value> {
    v.into_iter().map(|c| Value::Const(Rc::new(c))).collect()
}
