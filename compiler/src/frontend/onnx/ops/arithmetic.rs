//! `Add`, `Sub`, `Mul`, `Div` and the variadic `Sum`, `Mean`, `Max`, `Min`: IR `Eltwise`
//! between computed tensors, `ChannelAffine` (or a clip) with a constant. (`Neg` is an
//! affine in the dispatch.)

use super::common::{affine, legacy_aligned, per_channel};
use crate::error::Result;
use crate::frontend::onnx::build::{Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::fmt_dims;
use crate::ir::{Activation, EltwiseKind, Op, TensorId, Weights};
use std::rc::Rc;

pub(super) fn arithmetic(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(2, 2)?;
    let op = cx.op();
    match (cx.input(0), cx.input(1)) {
        (Some(Value::Act(_)), Some(Value::Act(_))) => {
            let (kind, coeffs) = match op {
                "Add" => (EltwiseKind::Sum, vec![]),
                "Sub" => (EltwiseKind::Sum, vec![1.0, -1.0]),
                "Mul" => (EltwiseKind::Prod, vec![]),
                _ => {
                    return Err(cx.err(
                        "dividing by a computed tensor is not supported (the IR has no \
                         reciprocal)",
                    ))
                }
            };
            eltwise(b, cx, &[0, 1], kind, coeffs, None)
        }
        (Some(Value::Act(x)), Some(Value::Const(c)))
        | (Some(Value::Const(c)), Some(Value::Act(x))) => {
            let act_first = matches!(cx.input(0), Some(Value::Act(_)));
            let k = if act_first { 0 } else { 1 };
            let mut c = c.clone();
            if cx.opset < 7 && cx.int("broadcast")?.unwrap_or(0) != 0 {
                if !act_first {
                    return Err(cx.err("legacy broadcasting of a tensor onto a constant"));
                }
                if let Some(axis) = cx.int("axis")? {
                    c = Rc::new(legacy_aligned(cx, &c, axis, x.dims.len())?);
                }
            }
            let (v, dims) = per_channel(&c, &x.dims).map_err(|e| cx.err(e))?;
            let (scale, bias) = match (op, act_first) {
                ("Add", _) => (None, Some(v)),
                ("Sub", true) => (None, Some(v.iter().map(|x| -x).collect())),
                ("Sub", false) => (Some(vec![-1.0]), Some(v)),
                ("Mul", _) => (Some(v), None),
                ("Div", true) => (Some(v.iter().map(|x| 1.0 / x).collect()), None),
                _ => {
                    return Err(cx.err(
                        "dividing a constant by a computed tensor is not supported (the IR \
                         has no reciprocal)",
                    ))
                }
            };
            affine(b, cx, k, scale, bias, Some(dims))
        }
        _ => {
            cx.act(0)?;
            cx.act(1)?;
            unreachable!("act() rejects every other input")
        }
    }
}

/// An element-wise IR node over inputs `ks` (same ONNX dimensions); the final node is the
/// ONNX output unless `suffix` is given.
fn eltwise(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    ks: &[usize],
    kind: EltwiseKind,
    coeffs: Vec<f32>,
    suffix: Option<&str>,
) -> Result<Vec<Value>> {
    let acts: Vec<Act> = ks.iter().map(|&k| cx.act(k)).collect::<Result<_>>()?;
    if let [a, v] = acts.as_slice() {
        // A per-channel vector broadcast over the other's pixels (squeeze-and-excitation):
        // the full tensor goes first, its coefficient with it.
        for (full, vector, swap) in [(0, 1, false), (1, 0, true)] {
            let (f, x) = (&[a, v][full], &[a, v][vector]);
            if channel_vector_dims(&x.dims, &f.dims) {
                let f_t = b.canonical(cx, ks[full])?.0;
                let v_t = b.canonical(cx, ks[vector])?.0;
                if !b.shape(v_t).is_channel_vector_of(b.shape(f_t)) {
                    break;
                }
                let mut coeffs = coeffs;
                if swap && coeffs.len() == 2 {
                    coeffs.swap(0, 1);
                }
                let s = b.shape(f_t);
                let name = match suffix {
                    Some(sfx) => format!("{}/{sfx}", cx.out(0)),
                    None => cx.out(0).to_string(),
                };
                let dims = f.dims.clone();
                let t = b.emit(
                    cx,
                    suffix,
                    Op::Eltwise { kind, coeffs },
                    vec![f_t, v_t],
                    name,
                    s,
                );
                return Ok(vec![Value::Act(Act { t, dims })]);
            }
        }
    }
    let dims = acts[0].dims.clone();
    if let Some(a) = acts.iter().find(|a| a.dims != dims) {
        return Err(cx.err(format!(
            "inputs of shapes {} and {}: broadcasting between two computed tensors is \
             supported for a per-channel vector (N x C x 1 x 1) only",
            fmt_dims(&dims),
            fmt_dims(&a.dims)
        )));
    }
    let mut ts: Vec<TensorId> = acts.iter().map(|a| a.t).collect();
    if ts.iter().any(|&t| b.shape(t) != b.shape(ts[0])) {
        ts = ks
            .iter()
            .map(|&k| b.canonical(cx, k).map(|r| r.0))
            .collect::<Result<_>>()?;
    }
    let s = b.shape(ts[0]);
    let name = match suffix {
        Some(sfx) => format!("{}/{sfx}", cx.out(0)),
        None => cx.out(0).to_string(),
    };
    let t = b.emit(cx, suffix, Op::Eltwise { kind, coeffs }, ts, name, s);
    Ok(vec![Value::Act(Act { t, dims })])
}

/// Whether ONNX dimensions `v` are a per-channel vector of `full`: the same rank (at least
/// three), batch and channels, and 1 along every spatial axis.
fn channel_vector_dims(v: &[usize], full: &[usize]) -> bool {
    v.len() == full.len()
        && v.len() >= 3
        && v != full
        && v[..2] == full[..2]
        && v[2..].iter().all(|&d| d == 1)
}

pub(super) fn variadic(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let n = cx.inputs.len();
    if n == 0 || cx.inputs.iter().any(Option::is_none) {
        return Err(cx.err("expects one or more non-empty inputs"));
    }
    let op = cx.op();
    let consts: Vec<usize> = (0..n)
        .filter(|&k| matches!(cx.input(k), Some(Value::Const(_))))
        .collect();
    if !consts.is_empty() {
        // One tensor and one constant.
        if n != 2 || consts.len() != 1 {
            return Err(cx.err("constants among more than two inputs are not supported"));
        }
        let k = 1 - consts[0];
        let x = cx.act(k)?;
        let c = cx.required(consts[0], "operand")?;
        let (v, dims) = per_channel(&c, &x.dims).map_err(|e| cx.err(e))?;
        return match op {
            "Sum" => affine(b, cx, k, None, Some(v), Some(dims)),
            "Mean" => affine(
                b,
                cx,
                k,
                Some(vec![0.5]),
                Some(v.iter().map(|x| x * 0.5).collect()),
                Some(dims),
            ),
            _ => {
                if v.len() != 1 || dims != x.dims {
                    return Err(cx.err(
                        "Max/Min with a per-channel constant is not supported (only a scalar, \
                         as a clip)",
                    ));
                }
                let a = if op == "Max" {
                    Activation::Clip {
                        lo: v[0],
                        hi: f32::INFINITY,
                    }
                } else {
                    Activation::Clip {
                        lo: f32::NEG_INFINITY,
                        hi: v[0],
                    }
                };
                let s = b.shape(x.t);
                let t = b.emit(cx, None, Op::Activation(a), vec![x.t], cx.out(0).into(), s);
                Ok(vec![Value::Act(Act { t, dims: x.dims })])
            }
        };
    }
    let ks: Vec<usize> = (0..n).collect();
    if n == 1 {
        return Ok(vec![Value::Act(cx.act(0)?)]);
    }
    match op {
        "Sum" => eltwise(b, cx, &ks, EltwiseKind::Sum, vec![], None),
        "Mean" => eltwise(b, cx, &ks, EltwiseKind::Sum, vec![1.0 / n as f32; n], None),
        "Max" => eltwise(b, cx, &ks, EltwiseKind::Max, vec![], None),
        _ => {
            // min(a, b, ...) = -max(-a, -b, ...), exact.
            let acts: Vec<Act> = ks.iter().map(|&k| cx.act(k)).collect::<Result<_>>()?;
            let dims = acts[0].dims.clone();
            if let Some(a) = acts.iter().find(|a| a.dims != dims) {
                return Err(cx.err(format!(
                    "inputs of shapes {} and {}: broadcasting between two computed tensors \
                     is not supported",
                    fmt_dims(&dims),
                    fmt_dims(&a.dims)
                )));
            }
            let mut ts: Vec<TensorId> = acts.iter().map(|a| a.t).collect();
            if ts.iter().any(|&t| b.shape(t) != b.shape(ts[0])) {
                ts = ks
                    .iter()
                    .map(|&k| b.canonical(cx, k).map(|r| r.0))
                    .collect::<Result<_>>()?;
            }
            let s = b.shape(ts[0]);
            let neg = || Op::ChannelAffine {
                scale: Some(Weights::vector(vec![-1.0])),
                bias: None,
            };
            let negs: Vec<TensorId> = ts
                .iter()
                .enumerate()
                .map(|(i, &t)| {
                    b.emit(
                        cx,
                        Some(&format!("neg{i}")),
                        neg(),
                        vec![t],
                        format!("{}/neg{i}", cx.out(0)),
                        s,
                    )
                })
                .collect();
            let m = b.emit(
                cx,
                Some("max"),
                Op::Eltwise {
                    kind: EltwiseKind::Max,
                    coeffs: vec![],
                },
                negs,
                format!("{}/max", cx.out(0)),
                s,
            );
            let t = b.emit(cx, None, neg(), vec![m], cx.out(0).into(), s);
            Ok(vec![Value::Act(Act { t, dims })])
        }
    }
}
