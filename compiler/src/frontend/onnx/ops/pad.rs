//! `Pad` of the spatial axes: in constant mode a pending padding, folded into the
//! following window (or made a padding convolution by the builder); in edge mode an IR
//! `EdgePad` (SDP copies of the border pixels).

use super::common::{input_value, ints_param, MAX_WINDOW};
use crate::error::Result;
use crate::frontend::onnx::build::{ir_shape, Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::fmt_dims;
use crate::ir::Op;

pub(super) fn pad(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let (inner, pending, value0, dims) = match cx.input(0) {
        Some(Value::Padded {
            act,
            pads,
            value,
            dims,
        }) => (act.clone(), *pads, Some(*value), dims.clone()),
        _ => {
            let a = cx.act(0)?;
            let d = a.dims.clone();
            (a, [0; 4], None, d)
        }
    };
    let r = dims.len();
    let mode = cx.string("mode")?.unwrap_or_else(|| "constant".into());
    let edge = mode == "edge" && cx.opset >= 2;
    if mode != "constant" && !edge {
        return Err(cx.err(format!(
            "mode `{mode}`: only constant padding (folded into a following Conv or pooling) \
             and edge padding are supported"
        )));
    }
    if edge && matches!(cx.input(0), Some(Value::Padded { .. })) {
        return Err(cx.err("edge padding of a pending constant padding"));
    }
    let (pads, value) = if cx.opset < 11 {
        cx.arity(1, 1)?;
        let pads = cx
            .ints("pads")?
            .ok_or_else(|| cx.err("attribute `pads` is required"))?;
        (pads, cx.float("value")?.unwrap_or(0.0))
    } else {
        cx.arity(2, 4)?;
        let pads = ints_param(cx, 1, "pads", 11)?.ok_or_else(|| cx.err("pads are required"))?;
        let value = match cx.constant(2, "constant_value")? {
            None => 0.0,
            Some(c) if c.len() == 1 => c.to_f32()[0],
            Some(c) => {
                return Err(cx.err(format!(
                    "constant_value must be a scalar, found {}",
                    fmt_dims(&c.dims)
                )))
            }
        };
        (pads, value)
    };
    // Per-axis (begin, end) for every axis.
    let axes: Vec<usize> = match ints_param(cx, 3, "axes", 18)? {
        None => (0..r).collect(),
        Some(a) => a
            .iter()
            .map(|&x| cx.axis("axes", x, r))
            .collect::<Result<_>>()?,
    };
    if pads.len() != 2 * axes.len() {
        return Err(cx.err(format!(
            "pads has {} values for {} axes",
            pads.len(),
            axes.len()
        )));
    }
    let mut begin = vec![0i64; r];
    let mut end = vec![0i64; r];
    for (i, &a) in axes.iter().enumerate() {
        begin[a] += pads[i];
        end[a] += pads[i + axes.len()];
    }
    if begin
        .iter()
        .chain(&end)
        .any(|&p| !(0..=MAX_WINDOW).contains(&p))
    {
        return Err(cx.err(format!(
            "pads {pads:?}: negative padding (cropping) is not supported"
        )));
    }
    if begin.iter().chain(&end).all(|&p| p == 0) {
        return Ok(vec![input_value(cx, 0)?]);
    }
    let spatial = match r {
        3 | 4 => r - 2,
        _ => 0,
    };
    if (0..r).any(|a| a < 2 && (begin[a] != 0 || end[a] != 0)) || spatial == 0 {
        return Err(cx.err(format!(
            "pads {pads:?} on {}: only the spatial axes of a rank-3 or rank-4 tensor can be \
             padded (folded into a following Conv or pooling)",
            fmt_dims(&dims)
        )));
    }
    if edge {
        let mut pads = [0usize; 4];
        let mut out = dims.clone();
        for i in 0..spatial {
            pads[i] = begin[2 + i] as usize;
            pads[i + 2] = end[2 + i] as usize;
            out[2 + i] += pads[i] + pads[i + 2];
        }
        let (t, _) = b.canonical(cx, 0)?;
        let shape = ir_shape(&out).map_err(|e| cx.err(e))?;
        let t = b.emit(
            cx,
            None,
            Op::EdgePad { pads },
            vec![t],
            cx.out(0).into(),
            shape,
        );
        return Ok(vec![Value::Act(Act { t, dims: out })]);
    }
    // A pending padding of a value laid out after a reshape cannot become a padding
    // convolution later (the builder pads the layout it sees): with the CPU at hand, the
    // padding goes there now, rather than failing at its reader.
    if b.cpu_fallback && ir_shape(&inner.dims).ok() != Some(b.shape(inner.t)) {
        return Err(cx.err("the padded input is laid out after a reshape"));
    }
    if value0.is_some_and(|v| v != value) {
        return Err(cx.err("two Pads with different values"));
    }
    let mut p = pending;
    let mut new_dims = dims.clone();
    for i in 0..spatial {
        p[i] += begin[2 + i] as usize;
        p[i + 2] += end[2 + i] as usize;
        new_dims[2 + i] += (begin[2 + i] + end[2 + i]) as usize;
    }
    Ok(vec![Value::Padded {
        act: inner,
        pads: p,
        value,
        dims: new_dims,
    }])
}
