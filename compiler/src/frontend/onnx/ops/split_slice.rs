//! `Split` and `Slice`: channels by IR 1x1 `Conv`s with a 0/1 selection matrix, lines and
//! columns by an IR `Crop` (a window, evenly stepped).

use crate::error::Result;
use crate::frontend::onnx::build::{channel_axis, ir_shape, Act, Builder, NodeCx, Value};
use crate::frontend::onnx::fold;
use crate::frontend::onnx::tensor::{self, fmt_dims, MAX_COMPUTED};
use crate::ir::{Conv, Op, Weights};

/// Channels `sel` of activation `x`'s channel axis as a new activation (output `out_k`), by a
/// 1x1 convolution with a 0/1 selection matrix (exact for finite values).
fn select_channels(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    x: Act,
    sel: &[usize],
    out_k: usize,
) -> Result<Value> {
    let t = b.canonical_act(cx, &x, cx.in_name(0))?;
    let dims = x.dims;
    let ca = channel_axis(dims.len()).ok_or_else(|| cx.err("input has no channel axis"))?;
    let c = dims[ca];
    if sel.is_empty() {
        return Err(cx.err("an empty slice of channels"));
    }
    if sel.len() == c && sel.iter().enumerate().all(|(i, &s)| i == s) {
        return Ok(Value::Act(Act { t, dims }));
    }
    let n = tensor::count(&[sel.len(), c], MAX_COMPUTED).map_err(|e| cx.err(e))?;
    b.spend(cx, n)?;
    let mut w = vec![0f32; n];
    for (o, &s) in sel.iter().enumerate() {
        w[o * c + s] = 1.0;
    }
    let mut out_dims = dims.clone();
    out_dims[ca] = sel.len();
    let shape = ir_shape(&out_dims).map_err(|e| cx.err(e))?;
    let weight = Weights::new(vec![sel.len(), c, 1, 1], w).ok_or_else(|| cx.err("weight size"))?;
    let op = Op::Conv(Conv::pointwise(weight, None));
    let suffix = (cx.node.output.len() > 1).then(|| format!("{out_k}"));
    let t = b.emit(
        cx,
        suffix.as_deref(),
        op,
        vec![t],
        cx.out(out_k).into(),
        shape,
    );
    Ok(Value::Act(Act { t, dims: out_dims }))
}

pub(super) fn split(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let (t, dims) = b.canonical(cx, 0)?;
    let x = Act { t, dims };
    let sizes = fold::split_sizes(cx, &x.dims)?;
    let (axis, sizes) = sizes;
    if Some(axis) != channel_axis(x.dims.len()) {
        return Err(cx.err(format!(
            "split along axis {axis} of {}: only a split of the channels maps to the IR",
            fmt_dims(&x.dims)
        )));
    }
    let mut outs = Vec::new();
    let mut start = 0;
    for (i, &s) in sizes.iter().enumerate() {
        let sel: Vec<usize> = (start..start + s).collect();
        start += s;
        outs.push(select_channels(b, cx, x.clone(), &sel, i)?);
    }
    Ok(outs)
}

pub(super) fn slice(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let x = cx.act(0)?;
    let idx = fold::slice_indices(cx, &x.dims)?;
    let r = x.dims.len();
    let ch = channel_axis(r);
    // The IR's line and column axes among the ONNX axes (`ir_shape`): rank 3 has lines,
    // rank 4 lines and columns, higher ranks fold the middle axes into the lines.
    let ir_axis = |a: usize| match (r, a) {
        (3, 2) | (4, 2) => Some(0),
        (4, 3) => Some(1),
        (r, a) if r > 4 && a == r - 1 => Some(1),
        _ => None,
    };
    let mut origin = [0usize; 2];
    let mut step = [1usize; 2];
    let mut crop = false;
    for (a, sel) in idx.iter().enumerate() {
        let full = sel.len() == x.dims[a] && sel.iter().enumerate().all(|(i, &s)| i == s);
        if full || Some(a) == ch {
            continue;
        }
        let Some(k) = ir_axis(a) else {
            return Err(cx.err(format!(
                "slicing axis {a} of {}: only slices of the channels, lines and columns map \
                 to the IR",
                fmt_dims(&x.dims)
            )));
        };
        (origin[k], step[k]) = progression(sel).ok_or_else(|| {
            cx.err(format!(
                "slicing axis {a} of {}: only an increasing, evenly stepped selection of \
                 lines or columns is a crop",
                fmt_dims(&x.dims)
            ))
        })?;
        crop = true;
    }
    let mut x = x;
    if crop {
        let (t, dims) = b.canonical(cx, 0)?;
        let mut out_dims = dims.clone();
        for (a, sel) in idx.iter().enumerate() {
            if Some(a) != ch {
                out_dims[a] = sel.len();
            }
        }
        let shape = ir_shape(&out_dims).map_err(|e| cx.err(e))?;
        let name = match ch {
            // A channel selection follows: the crop is an intermediate value.
            Some(c) if idx[c].len() != dims[c] => format!("{}/crop", cx.out(0)),
            _ => cx.out(0).to_string(),
        };
        let op = Op::Crop { origin, step };
        let t = b.emit(cx, Some("crop"), op, vec![t], name, shape);
        x = Act { t, dims: out_dims };
    }
    match ch {
        Some(c) => Ok(vec![select_channels(b, cx, x, &idx[c], 0)?]),
        None => Ok(vec![Value::Act(x)]),
    }
}

/// `(first, step)` of an increasing arithmetic progression (a single index has step 1).
fn progression(sel: &[usize]) -> Option<(usize, usize)> {
    let (&first, rest) = sel.split_first()?;
    let step = rest.first().map_or(Some(1), |&s| s.checked_sub(first))?;
    let even = sel.windows(2).all(|w| w[1].checked_sub(w[0]) == Some(step));
    (step > 0 && even).then_some((first, step))
}
