//! `Concat` along the channel axis: IR `Concat`.

use crate::error::Result;
use crate::frontend::onnx::build::{channel_axis, ir_shape, Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::fmt_dims;
use crate::ir::{Op, TensorId};

pub(super) fn concat(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let n = cx.inputs.len();
    if n == 0 || cx.inputs.iter().any(Option::is_none) {
        return Err(cx.err("expects one or more non-empty inputs"));
    }
    let acts: Vec<Act> = (0..n).map(|k| cx.act(k)).collect::<Result<_>>()?;
    let r = acts[0].dims.len();
    let axis = cx
        .int("axis")?
        .ok_or_else(|| cx.err("attribute `axis` is required"))?;
    let a = cx.axis("axis", axis, r)?;
    for x in &acts {
        let same = x.dims.len() == r
            && x.dims
                .iter()
                .zip(&acts[0].dims)
                .enumerate()
                .all(|(i, (p, q))| i == a || p == q);
        if !same {
            return Err(cx.err(format!(
                "input shapes {} and {} differ off axis {a}",
                fmt_dims(&acts[0].dims),
                fmt_dims(&x.dims)
            )));
        }
    }
    if n == 1 {
        return Ok(vec![Value::Act(acts[0].clone())]);
    }
    if Some(a) != channel_axis(r) {
        return Err(cx.err(format!(
            "concatenation along axis {a} of rank-{r} tensors: the IR concatenates along \
             channels (axis {}) only",
            channel_axis(r).map_or("-".into(), |c| c.to_string())
        )));
    }
    let ts: Vec<TensorId> = (0..n)
        .map(|k| b.canonical(cx, k).map(|r| r.0))
        .collect::<Result<_>>()?;
    let mut dims = acts[0].dims.clone();
    dims[a] = acts.iter().map(|x| x.dims[a]).sum();
    let shape = ir_shape(&dims).map_err(|e| cx.err(e))?;
    let t = b.emit(cx, None, Op::Concat, ts, cx.out(0).into(), shape);
    Ok(vec![Value::Act(Act { t, dims })])
}
