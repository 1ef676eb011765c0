//! `MaxPool`, `AveragePool` (a `Pad` folded in), `GlobalAveragePool` and `GlobalMaxPool`:
//! IR `Pool`.

use super::common::{auto_pad, spatial_axes, window_input, window_list, window_value, AutoPad};
use crate::error::Result;
use crate::frontend::onnx::build::{ir_shape, Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::fmt_dims;
use crate::ir::{Op, Pool, PoolKind, Shape, Window};

pub(super) fn pool(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(1, 1)?;
    let max = cx.op() == "MaxPool";
    let fold_value = if max { f32::NEG_INFINITY } else { 0.0 };
    let (x, dims, pend) = window_input(b, cx, 0, Some(fold_value))?;
    let sp = spatial_axes(cx, &dims)?;
    let kernel = match cx.ints("kernel_shape")? {
        Some(k) if k.len() == sp => k
            .iter()
            .map(|&v| window_value(cx, "kernel_shape", v, 1))
            .collect::<Result<Vec<_>>>()?,
        Some(k) => {
            return Err(cx.err(format!(
                "kernel_shape has {} values for {sp} spatial axes",
                k.len()
            )))
        }
        None => return Err(cx.err("kernel_shape is required")),
    };
    let strides = window_list(cx, "strides", sp, 1, 1)?;
    let dil = window_list(cx, "dilations", sp, 1, 1)?;
    if dil.iter().any(|&d| d != 1) {
        return Err(cx.err(format!(
            "dilations {dil:?}: the IR's pooling has no dilation"
        )));
    }
    let pads = window_list(cx, "pads", 2 * sp, 0, 0)?;
    let ceil = cx.int("ceil_mode")?.unwrap_or(0) != 0;
    let mut include_pad = !max && cx.int("count_include_pad")?.unwrap_or(0) != 0;
    let mode = auto_pad(cx)?;
    let folded = pend.iter().any(|&p| p > 0);
    let mut out_sp = Vec::new();
    let mut pad = [0usize; 4];
    let mut rounded_up = false;
    for i in 0..sp {
        let (pb0, pe0) = (pend[i], pend[i + 2]);
        let input = dims[2 + i] + pb0 + pe0;
        let (k, s) = (kernel[i], strides[i]);
        let (pb, pe) = match mode {
            AutoPad::NotSet => (pads[i], pads[i + sp]),
            AutoPad::Valid => (0, 0),
            AutoPad::SameUpper | AutoPad::SameLower => {
                let out = input.div_ceil(s);
                let total = ((out - 1) * s + k).saturating_sub(input);
                let begin = if mode == AutoPad::SameUpper {
                    total / 2
                } else {
                    total - total / 2
                };
                (begin, total - begin)
            }
        };
        let span = input + pb + pe;
        if span < k {
            return Err(cx.err(format!(
                "kernel {k} is larger than the padded input ({span})"
            )));
        }
        let floor_out = (span - k) / s + 1;
        let out = match mode {
            AutoPad::SameUpper | AutoPad::SameLower => input.div_ceil(s),
            _ if ceil => {
                let mut o = (span - k).div_ceil(s) + 1;
                // A last window that would start in the end padding is dropped.
                if o > 1 && (o - 1) * s >= input + pb {
                    o -= 1;
                }
                o
            }
            _ => floor_out,
        };
        rounded_up |= out > floor_out;
        out_sp.push(out);
        pad[i] = pb + pb0;
        pad[i + 2] = pe + pe0;
    }
    if folded && !max {
        // The Pad's zeros count as elements; the pool's own padding must count too.
        if !include_pad && (0..sp).any(|i| pad[i] > pend[i] || pad[i + 2] > pend[i + 2]) {
            return Err(cx.err(
                "a Pad before an AveragePool that pads again without count_include_pad: the \
                 two paddings would be counted differently",
            ));
        }
        include_pad = true;
    }
    let pair = |v: &[usize], d: usize| if sp == 2 { [v[0], v[1]] } else { [v[0], d] };
    let p = Pool {
        kind: if max { PoolKind::Max } else { PoolKind::Avg },
        window: Window {
            kernel: pair(&kernel, 1),
            stride: pair(&strides, 1),
            pad,
            dilation: [1, 1],
        },
        ceil_mode: rounded_up,
        count_include_pad: include_pad,
    };
    let mut out_dims = vec![dims[0], dims[1]];
    out_dims.extend(&out_sp);
    let shape = ir_shape(&out_dims).map_err(|e| cx.err(e))?;
    let t = b.emit(cx, None, Op::Pool(p), vec![x], cx.out(0).into(), shape);
    let mut outs = vec![Value::Act(Act { t, dims: out_dims })];
    if max {
        outs.push(Value::Unavailable(
            "MaxPool's Indices output is not supported (the IR has no argmax)".into(),
        ));
    }
    Ok(outs)
}

pub(super) fn global_pool(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(1, 1)?;
    let (x, dims) = b.canonical(cx, 0)?;
    if dims.len() < 3 {
        return Err(cx.err(format!("input {} has no spatial axes", fmt_dims(&dims))));
    }
    let s = b.shape(x);
    let p = Pool {
        kind: if cx.op() == "GlobalMaxPool" {
            PoolKind::Max
        } else {
            PoolKind::Avg
        },
        window: Window::global(s.h, s.w),
        ceil_mode: false,
        count_include_pad: false,
    };
    let mut out_dims = dims.clone();
    for d in &mut out_dims[2..] {
        *d = 1;
    }
    let t = b.emit(
        cx,
        None,
        Op::Pool(p),
        vec![x],
        cx.out(0).into(),
        Shape::new(s.n, s.c, 1, 1),
    );
    Ok(vec![Value::Act(Act { t, dims: out_dims })])
}
