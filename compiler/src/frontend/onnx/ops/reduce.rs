//! `ReduceMean`, `ReduceMax` and `ReduceSum` where an engine computes them:
//! - over all the pixels (`x.mean([2, 3])`, the head of ShuffleNet, EfficientNet's
//!   exports): IR global `Pool`, average or max; a sum is the average times the pixel
//!   count (an IR `Power` after it);
//! - `ReduceMean` and `ReduceSum` over the channels: an IR 1x1 `Conv` to one channel with
//!   weights `1 / C` or 1.
//!
//! Other axes (the batch, part of the pixels) and other reductions stay errors
//! (`--cpu-fallback` runs them on the CPU).

use super::common::ints_param;
use crate::error::Result;
use crate::frontend::onnx::build::{Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::fmt_dims;
use crate::ir::{Conv, Op, Pool, PoolKind, Shape, Weights, Window};

pub(super) fn reduce(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let op = cx.op();
    // Axes became an input in opset 13 (ReduceSum) and 18 (the others).
    let since = if op == "ReduceSum" { 13 } else { 18 };
    cx.arity(1, if cx.opset >= since { 2 } else { 1 })?;
    let (x, dims) = b.canonical(cx, 0)?;
    let r = dims.len();
    let axes = ints_param(cx, 1, "axes", since)?.unwrap_or_default();
    if axes.is_empty() {
        return Err(cx.err(if cx.int("noop_with_empty_axes")? == Some(1) {
            "an empty reduction is an identity (not mapped)".to_string()
        } else {
            format!(
                "a reduction of every axis of {}: it includes the batch",
                fmt_dims(&dims)
            )
        }));
    }
    let mut on = vec![false; r];
    for &a in &axes {
        let a = cx.axis("axes", a, r)?;
        if std::mem::replace(&mut on[a], true) {
            return Err(cx.err(format!("axis {a} is reduced twice")));
        }
    }
    let keep = cx.int("keepdims")?.unwrap_or(1) != 0;
    let out_dims: Vec<usize> = (0..r)
        .filter_map(|a| match (on[a], keep) {
            (true, true) => Some(1),
            (true, false) => None,
            (false, _) => Some(dims[a]),
        })
        .collect();
    let s = b.shape(x);
    let pixels = r >= 3 && !on[0] && !on[1] && on[2..].iter().all(|&v| v);
    let channels = r >= 2 && on.iter().enumerate().all(|(a, &v)| v == (a == 1));
    let (node_op, shape) = if pixels {
        let kind = if op == "ReduceMax" {
            PoolKind::Max
        } else {
            PoolKind::Avg
        };
        let pool = Op::Pool(Pool {
            kind,
            window: Window::global(s.h, s.w),
            ceil_mode: false,
            count_include_pad: false,
        });
        (pool, Shape::new(s.n, s.c, 1, 1))
    } else if channels && op != "ReduceMax" {
        let w = if op == "ReduceMean" {
            1.0 / s.c as f32
        } else {
            1.0
        };
        b.spend(cx, s.c)?;
        let weight =
            Weights::new(vec![1, s.c, 1, 1], vec![w; s.c]).ok_or_else(|| cx.err("weight size"))?;
        let conv = Op::Conv(Conv::pointwise(weight, None));
        (conv, Shape::new(s.n, 1, s.h, s.w))
    } else {
        return Err(cx.err(format!(
            "{op} over axes {axes:?} of {}: NVDLA reduces all the pixels (pooling) or, for \
             a mean or a sum, the channels (a convolution)",
            fmt_dims(&dims)
        )));
    };
    let sum = pixels && op == "ReduceSum" && s.h * s.w > 1;
    let name = if sum {
        format!("{}/mean", cx.out(0))
    } else {
        cx.out(0).to_string()
    };
    let mut t = b.emit(cx, None, node_op, vec![x], name, shape);
    if sum {
        let scale = (s.h * s.w) as f32;
        let op = Op::Power {
            power: 1.0,
            scale,
            shift: 0.0,
        };
        t = b.emit(cx, Some("sum"), op, vec![t], cx.out(0).into(), shape);
    }
    Ok(vec![Value::Act(Act { t, dims: out_dims })])
}
