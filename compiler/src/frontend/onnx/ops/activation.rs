//! `Relu`, `LeakyRelu`, `Sigmoid`, `Tanh` (through [`unary`]), `PRelu`, `Clip`,
//! `HardSigmoid` and `HardSwish`: IR activations.

use super::common::{legacy_aligned, per_channel};
use crate::error::Result;
use crate::frontend::onnx::build::{Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::fmt_dims;
use crate::ir::{Activation, EltwiseKind, Op, Weights};
use std::rc::Rc;

/// HardSigmoid `max(0, min(1, alpha x + beta))` as an affine and a clip (two SDP
/// stages: X1's affine and ReLU, X2's minimum); HardSwish `x * HardSigmoid(x)` with
/// alpha 1/6 and beta 1/2, the same and a product with `x`.
pub(super) fn hard_sigmoid(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(1, 1)?;
    let swish = cx.op() == "HardSwish";
    let (alpha, beta) = if swish {
        (1.0 / 6.0, 0.5)
    } else {
        (
            cx.float("alpha")?.unwrap_or(0.2),
            cx.float("beta")?.unwrap_or(0.5),
        )
    };
    if !(alpha.is_finite() && beta.is_finite()) {
        return Err(cx.err(format!("alpha {alpha} and beta {beta} must be finite")));
    }
    let x = cx.act(0)?;
    let s = b.shape(x.t);
    let out = cx.out(0);
    let lin = b.emit(
        cx,
        Some("affine"),
        Op::ChannelAffine {
            scale: Some(Weights::vector(vec![alpha])),
            bias: Some(Weights::vector(vec![beta])),
        },
        vec![x.t],
        format!("{out}/affine"),
        s,
    );
    let clip = Op::Activation(Activation::Clip { lo: 0.0, hi: 1.0 });
    let t = if swish {
        let h = b.emit(cx, Some("clip"), clip, vec![lin], format!("{out}/clip"), s);
        b.emit(
            cx,
            None,
            Op::Eltwise {
                kind: EltwiseKind::Prod,
                coeffs: vec![],
            },
            vec![x.t, h],
            out.into(),
            s,
        )
    } else {
        b.emit(cx, None, clip, vec![lin], out.into(), s)
    };
    Ok(vec![Value::Act(Act { t, dims: x.dims })])
}

pub(super) fn unary(b: &mut Builder, cx: &NodeCx<'_>, a: Activation) -> Result<Vec<Value>> {
    let x = cx.act(0)?;
    let s = b.shape(x.t);
    let t = b.emit(cx, None, Op::Activation(a), vec![x.t], cx.out(0).into(), s);
    Ok(vec![Value::Act(Act { t, dims: x.dims })])
}

pub(super) fn prelu(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(2, 2)?;
    let x = cx.act(0)?;
    let mut slope = cx.required(1, "slope")?;
    if cx.opset < 7 && slope.len() > 1 && x.dims.len() >= 2 {
        // Opset 6: a slope per channel.
        slope = Rc::new(legacy_aligned(cx, &slope, 1, x.dims.len())?);
    }
    let (v, out) = per_channel(&slope, &x.dims).map_err(|e| cx.err(e))?;
    if out != x.dims {
        return Err(cx.err(format!(
            "slope {} changes the output rank",
            fmt_dims(&slope.dims)
        )));
    }
    let t = if v.len() > 1 {
        b.canonical(cx, 0)?.0
    } else {
        x.t
    };
    let s = b.shape(t);
    let t = b.emit(
        cx,
        None,
        Op::Activation(Activation::PRelu {
            slopes: Weights::vector(v),
        }),
        vec![t],
        cx.out(0).into(),
        s,
    );
    Ok(vec![Value::Act(Act { t, dims: x.dims })])
}

pub(super) fn clip(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let (lo, hi) = if cx.opset < 11 {
        cx.arity(1, 1)?;
        (
            cx.float("min")?.unwrap_or(f32::NEG_INFINITY),
            cx.float("max")?.unwrap_or(f32::INFINITY),
        )
    } else {
        cx.arity(1, 3)?;
        let bound = |k: usize, what: &str, default: f32| -> Result<f32> {
            match cx.constant(k, what)? {
                None => Ok(default),
                Some(c) => c.scalar_f32().ok_or_else(|| {
                    cx.err(format!(
                        "{what} must be a scalar, found {}",
                        fmt_dims(&c.dims)
                    ))
                }),
            }
        };
        (
            bound(1, "min", f32::NEG_INFINITY)?,
            bound(2, "max", f32::INFINITY)?,
        )
    };
    if lo.is_nan() || hi.is_nan() {
        return Err(cx.err("clip bounds are NaN"));
    }
    if lo == 0.0 && hi == f32::INFINITY {
        return unary(b, cx, Activation::Relu { slope: 0.0 });
    }
    // ONNX: min > max gives max everywhere.
    let lo = lo.min(hi);
    unary(b, cx, Activation::Clip { lo, hi })
}
