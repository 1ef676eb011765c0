//! Element-wise operators no NVDLA engine computes (`Exp`, `Log`, `Sqrt`, `Abs`, `Elu`,
//! `Pow` by a scalar, ...): IR `CpuUnary` nodes with `--cpu-fallback`, an error otherwise.

use crate::error::Result;
use crate::frontend::onnx::build::{Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::fmt_dims;
use crate::ir::Op;
use nvdla_umd::emu::FallbackFn;

/// The CPU fallback function of an element-wise operator (`--cpu-fallback`).
pub(super) fn fallback_fn(op: &str) -> Option<FallbackFn> {
    Some(match op {
        "Exp" => FallbackFn::Exp,
        "Log" => FallbackFn::Log,
        "Sqrt" => FallbackFn::Sqrt,
        "Abs" => FallbackFn::Abs,
        "Reciprocal" => FallbackFn::Reciprocal,
        "Floor" => FallbackFn::Floor,
        "Ceil" => FallbackFn::Ceil,
        "Round" => FallbackFn::Round,
        "Sin" => FallbackFn::Sin,
        "Cos" => FallbackFn::Cos,
        "Tan" => FallbackFn::Tan,
        "Asin" => FallbackFn::Asin,
        "Acos" => FallbackFn::Acos,
        "Atan" => FallbackFn::Atan,
        "Sinh" => FallbackFn::Sinh,
        "Cosh" => FallbackFn::Cosh,
        "Asinh" => FallbackFn::Asinh,
        "Acosh" => FallbackFn::Acosh,
        "Atanh" => FallbackFn::Atanh,
        "Sign" => FallbackFn::Sign,
        "Softplus" => FallbackFn::Softplus,
        "Softsign" => FallbackFn::Softsign,
        "Elu" => FallbackFn::Elu,
        "Selu" => FallbackFn::Selu,
        "Celu" => FallbackFn::Celu,
        "ThresholdedRelu" => FallbackFn::ThresholdedRelu,
        "Mish" => FallbackFn::Mish,
        "Pow" => FallbackFn::Pow,
        _ => return None,
    })
}

/// An element-wise operator run on the CPU (`--cpu-fallback`).
pub(super) fn cpu_unary(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let func = fallback_fn(cx.op()).ok_or_else(|| cx.err("no CPU fallback"))?;
    let (alpha, beta) = match func {
        FallbackFn::Pow => {
            cx.arity(2, 2)?;
            let e = cx.required(1, "exponent")?;
            let v = e.scalar_f32().ok_or_else(|| {
                cx.err(format!(
                    "the exponent must be a scalar constant, found {}",
                    fmt_dims(&e.dims)
                ))
            })?;
            (v, 0.0)
        }
        _ => {
            cx.arity(1, 1)?;
            match func {
                FallbackFn::Elu | FallbackFn::Celu | FallbackFn::ThresholdedRelu => {
                    (cx.float("alpha")?.unwrap_or(1.0), 0.0)
                }
                FallbackFn::Selu => (
                    cx.float("alpha")?.unwrap_or(1.673_263_2),
                    cx.float("gamma")?.unwrap_or(1.050_701),
                ),
                _ => (0.0, 0.0),
            }
        }
    };
    let x = cx.act(0)?;
    let s = b.shape(x.t);
    let t = b.emit(
        cx,
        None,
        Op::CpuUnary { func, alpha, beta },
        vec![x.t],
        cx.out(0).into(),
        s,
    );
    Ok(vec![Value::Act(Act { t, dims: x.dims })])
}
