//! Layout-only operators: `Flatten`, `Reshape`, `Squeeze`, `Unsqueeze` (new ONNX
//! dimensions over the same IR tensor, see [`layout_dims`]) and `Dropout` (an alias at
//! inference). (`Identity` is an alias in the dispatch.)

use super::common::{input_value, ints_param};
use crate::error::Result;
use crate::frontend::onnx::build::{NodeCx, Value};
use crate::frontend::onnx::tensor::{self, fmt_dims};

pub(super) fn dropout(cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(1, 3)?;
    if cx.opset >= 12 {
        // The ratio does not matter at inference.
        if let Some(t) = cx.constant(2, "training_mode")? {
            if t.to_i64().iter().any(|&v| v != 0) {
                return Err(cx.err("training_mode is true (inference only)"));
            }
        }
    } else if cx.int("is_test")? == Some(0) {
        return Err(cx.err("is_test = 0 (training) is not supported"));
    }
    Ok(vec![
        input_value(cx, 0)?,
        Value::Unavailable("Dropout's mask output is not supported".into()),
    ])
}

/// Output dimensions of `Flatten`, `Reshape`, `Squeeze` or `Unsqueeze` on `d`.
pub(crate) fn layout_dims(cx: &NodeCx<'_>, d: &[usize]) -> Result<Vec<usize>> {
    let r = d.len();
    let total: usize = d.iter().product();
    match cx.op() {
        "Flatten" => {
            cx.arity(1, 1)?;
            let axis = cx.int("axis")?.unwrap_or(1);
            let ri = r as i64;
            if axis < -ri || axis > ri {
                return Err(cx.err(format!("axis {axis} is out of range for rank {r}")));
            }
            let a = if axis < 0 { axis + ri } else { axis } as usize;
            Ok(vec![d[..a].iter().product(), d[a..].iter().product()])
        }
        "Reshape" => {
            cx.arity(2, 2)?;
            let shape = cx.required(1, "shape")?;
            let shape = shape
                .ints_exact()
                .ok_or_else(|| cx.err("`shape` must be an INT64 tensor"))?;
            let allowzero = cx.int("allowzero")?.unwrap_or(0) != 0;
            let mut out = Vec::with_capacity(shape.len());
            let mut infer = None;
            for (i, &s) in shape.iter().enumerate() {
                out.push(match s {
                    0 if !allowzero => *d.get(i).ok_or_else(|| {
                        cx.err(format!("shape[{i}] = 0 copies a dimension the input lacks"))
                    })?,
                    -1 => {
                        if infer.replace(i).is_some() {
                            return Err(cx.err("shape has more than one -1"));
                        }
                        1
                    }
                    s if s >= 0 => usize::try_from(s).map_err(|_| cx.err("shape too large"))?,
                    s => return Err(cx.err(format!("shape[{i}] = {s} is invalid"))),
                });
            }
            let known = tensor::count(&out, usize::MAX).map_err(|e| cx.err(e))?;
            if let Some(i) = infer {
                if total.checked_rem(known) != Some(0) {
                    return Err(cx.err(format!("cannot reshape {} to {shape:?}", fmt_dims(d))));
                }
                out[i] = total / known;
            } else if known != total {
                return Err(cx.err(format!(
                    "cannot reshape {} ({total} elements) to {}",
                    fmt_dims(d),
                    fmt_dims(&out)
                )));
            }
            Ok(out)
        }
        "Squeeze" => {
            cx.arity(1, 2)?;
            match ints_param(cx, 1, "axes", 13)? {
                None => Ok(d.iter().copied().filter(|&x| x != 1).collect()),
                Some(axes) => {
                    let mut drop = vec![false; r];
                    for a in axes {
                        let a = cx.axis("axes", a, r)?;
                        if d[a] != 1 {
                            return Err(cx.err(format!("axis {a} of {} is not 1", fmt_dims(d))));
                        }
                        drop[a] = true;
                    }
                    Ok(d.iter()
                        .zip(drop)
                        .filter(|(_, x)| !x)
                        .map(|(&v, _)| v)
                        .collect())
                }
            }
        }
        _ => {
            cx.arity(1, 2)?;
            let axes = ints_param(cx, 1, "axes", 13)?.ok_or_else(|| cx.err("axes are required"))?;
            let n = r + axes.len();
            let mut new = vec![false; n];
            for a in axes {
                let a = cx.axis("axes", a, n)?;
                if std::mem::replace(&mut new[a], true) {
                    return Err(cx.err(format!("axis {a} is given twice")));
                }
            }
            let mut it = d.iter();
            Ok(new
                .iter()
                .map(|&x| if x { 1 } else { *it.next().unwrap_or(&1) })
                .collect())
        }
    }
}
