//! `Softmax`: IR `Softmax` over the channel layout (with a `Flatten` when needed).

use crate::error::Result;
use crate::frontend::onnx::build::{Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::fmt_dims;
use crate::ir::{Op, Shape};

pub(super) fn softmax(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(1, 1)?;
    let x = cx.act(0)?;
    let r = x.dims.len();
    if r == 0 {
        return Err(cx.err("softmax of a scalar"));
    }
    let new = cx.opset >= 13;
    let axis = cx.int("axis")?.unwrap_or(if new { -1 } else { 1 });
    let a = cx.axis("axis", axis, r)?;
    let outer: usize = x.dims[..a].iter().product();
    let (ext, inner): (usize, usize) = if new {
        (x.dims[a], x.dims[a + 1..].iter().product())
    } else {
        (x.dims[a..].iter().product(), 1)
    };
    let s = b.shape(x.t);
    let t = if s.n == outer && s.c == ext && s.h * s.w == inner {
        x.t
    } else if inner == 1 && s.n == outer {
        let want = Shape::new(outer, ext, 1, 1);
        b.emit(
            cx,
            Some("flatten"),
            Op::Flatten,
            vec![x.t],
            format!("{}/flat", cx.out(0)),
            want,
        )
    } else {
        return Err(cx.err(format!(
            "softmax over axis {a} of {} (groups of {ext} values {inner} apart, {outer} \
             times): the IR's softmax runs over channels, which this layout ({s}) does not \
             give",
            fmt_dims(&x.dims)
        )));
    };
    let s = b.shape(t);
    let t = b.emit(cx, None, Op::Softmax, vec![t], cx.out(0).into(), s);
    Ok(vec![Value::Act(Act { t, dims: x.dims })])
}
