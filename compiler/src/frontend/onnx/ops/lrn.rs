//! `LRN` (odd window sizes): IR `Lrn`.

use super::common::window_value;
use crate::error::Result;
use crate::frontend::onnx::build::{Act, Builder, NodeCx, Value};
use crate::ir::Op;

pub(super) fn lrn(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(1, 1)?;
    let size = cx
        .int("size")?
        .ok_or_else(|| cx.err("attribute `size` is required"))?;
    let size = window_value(cx, "size", size, 1)?;
    if size & 1 == 0 {
        return Err(cx.err(format!(
            "size {size}: the IR's LRN window is centred (odd sizes); an even ONNX window is \
             asymmetric"
        )));
    }
    let (t, dims) = b.canonical(cx, 0)?;
    if dims.len() < 2 {
        return Err(cx.err("input has no channel axis"));
    }
    let op = Op::Lrn {
        size,
        alpha: cx.float("alpha")?.unwrap_or(1e-4),
        beta: cx.float("beta")?.unwrap_or(0.75),
        k: cx.float("bias")?.unwrap_or(1.0),
    };
    let s = b.shape(t);
    let t = b.emit(cx, None, op, vec![t], cx.out(0).into(), s);
    Ok(vec![Value::Act(Act { t, dims })])
}
