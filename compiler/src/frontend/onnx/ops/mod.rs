//! One ONNX node to IR nodes (or to a constant, an alias, a pending padding).
//!
//! Each mapping follows the operator's definition in the ONNX specification, for every
//! version from opset 7: attributes that later became inputs (`Clip` min/max, `Pad`
//! pads, `Squeeze`/`Unsqueeze` axes, `Split` split, `Upsample` scales, `Slice`
//! starts/ends) are read from whichever form the node uses. What the IR cannot express
//! exactly is an error naming the node and the reason.
//!
//! One file per operator family, so that adding an operator touches one file and this
//! dispatch; helpers shared by several families (input access, window attributes,
//! per-channel constants, the per-channel affine) are in `common`.

mod activation;
mod arithmetic;
mod batch_norm;
mod common;
mod concat;
mod conv;
mod cpu_unary;
mod depth_space;
mod gemm;
mod layout;
mod lrn;
mod pad;
mod pool;
mod reduce;
mod resize;
mod softmax;
mod split_slice;
mod transpose;

use super::build::{Act, Builder, NodeCx, Value};
use super::fold;
use crate::error::Result;
use crate::ir::Activation;
use activation::{clip, hard_sigmoid, prelu, unary};
use arithmetic::{arithmetic, variadic};
use batch_norm::batch_norm;
use common::{affine, input_value};
use concat::concat;
use conv::{conv, conv_transpose};
use cpu_unary::{cpu_unary, fallback_fn};
use depth_space::depth_space;
use gemm::{gemm, matmul};
use layout::dropout;
use lrn::lrn;
use pad::pad;
use pool::{global_pool, pool};
use reduce::reduce;
use resize::upsample;
use softmax::softmax;
use split_slice::{slice, split};
use transpose::transpose;

pub(crate) use common::{consts, ints_param};
pub(crate) use layout::layout_dims;

/// Maps the node of `cx` partly to the CPU and partly to the hardware, for the operators
/// that have such a mapping (`--cpu-fallback`, after [`map`] refused the node): `None`
/// when the operator has none.
pub(crate) fn map_with_cpu(b: &mut Builder, cx: &NodeCx<'_>) -> Option<Result<Vec<Value>>> {
    match cx.op() {
        "Gemm" | "MatMul" => Some(gemm::over_positions(b, cx)),
        _ => None,
    }
}

/// Maps the node of `cx`; returns the values of its outputs, in order.
pub(crate) fn map(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let op = cx.op();
    match op {
        "Constant" => return fold::constant(cx),
        "Shape" => return fold::shape(cx),
        "Size" => return fold::size(cx),
        _ => {}
    }
    let all_const = cx
        .inputs
        .iter()
        .all(|v| matches!(v, None | Some(Value::Const(_))));
    if all_const && cx.input(0).is_some() && fold::FOLDABLE.contains(&op) {
        let v = fold::eval(cx)?;
        let n = v
            .iter()
            .map(|v| match v {
                Value::Const(c) => c.len(),
                _ => 0,
            })
            .sum();
        b.spend(cx, n)?;
        return Ok(v);
    }
    let v = match op {
        "Conv" => conv(b, cx)?,
        "ConvTranspose" => conv_transpose(b, cx)?,
        "MaxPool" | "AveragePool" => pool(b, cx)?,
        "GlobalAveragePool" | "GlobalMaxPool" => global_pool(b, cx)?,
        "Relu" | "LeakyRelu" | "Sigmoid" | "Tanh" | "Erf" => {
            cx.arity(1, 1)?;
            let a = match op {
                "Relu" => Activation::Relu { slope: 0.0 },
                "LeakyRelu" => Activation::Relu {
                    slope: cx.float("alpha")?.unwrap_or(0.01),
                },
                "Sigmoid" => Activation::Sigmoid,
                "Erf" => Activation::Erf,
                _ => Activation::Tanh,
            };
            unary(b, cx, a)?
        }
        "PRelu" => prelu(b, cx)?,
        "HardSigmoid" | "HardSwish" => hard_sigmoid(b, cx)?,
        "Clip" => clip(b, cx)?,
        "Neg" => {
            cx.arity(1, 1)?;
            affine(b, cx, 0, Some(vec![-1.0]), None, None)?
        }
        "Add" | "Sub" | "Mul" | "Div" => arithmetic(b, cx)?,
        "Sum" | "Mean" | "Max" | "Min" => variadic(b, cx)?,
        "BatchNormalization" => batch_norm(b, cx)?,
        "Gemm" => gemm(b, cx)?,
        "MatMul" => matmul(b, cx)?,
        "Softmax" => softmax(b, cx)?,
        "Concat" => concat(b, cx)?,
        "LRN" => lrn(b, cx)?,
        "Identity" => {
            cx.arity(1, 1)?;
            vec![input_value(cx, 0)?]
        }
        "Dropout" => dropout(cx)?,
        "Flatten" | "Reshape" | "Squeeze" | "Unsqueeze" => {
            let a = cx.act(0)?;
            let dims = layout_dims(cx, &a.dims)?;
            vec![Value::Act(Act { t: a.t, dims })]
        }
        "Pad" => pad(b, cx)?,
        "Upsample" | "Resize" => upsample(b, cx)?,
        "DepthToSpace" | "SpaceToDepth" => depth_space(b, cx)?,
        "Split" => split(b, cx)?,
        "Slice" => slice(b, cx)?,
        "Transpose" => transpose(b, cx)?,
        "ReduceMean" | "ReduceMax" | "ReduceSum" => reduce(b, cx)?,
        _ if b.cpu_fallback && fallback_fn(op).is_some() => cpu_unary(b, cx)?,
        _ if fallback_fn(op).is_some() => {
            return Err(cx.err(format!(
                "operator `{op}`: no NVDLA engine computes it (--cpu-fallback runs it on the \
                 CPU, as an operation of nvdla-runtime)"
            )))
        }
        _ => {
            return Err(cx.err(format!(
                "operator `{op}` is not supported: the IR has no operation that computes it{}",
                if all_const && !cx.inputs.is_empty() {
                    " (nor is it one of the computations folded on constant inputs)"
                } else {
                    ""
                }
            )))
        }
    };
    Ok(v)
}
