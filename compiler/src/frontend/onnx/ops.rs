//! One ONNX node to IR nodes (or to a constant, an alias, a pending padding).
//!
//! Each mapping follows the operator's definition in the ONNX specification, for every
//! version from opset 7: attributes that later became inputs (`Clip` min/max, `Pad`
//! pads, `Squeeze`/`Unsqueeze` axes, `Split` split, `Upsample` scales, `Slice`
//! starts/ends) are read from whichever form the node uses. What the IR cannot express
//! exactly is an error naming the node and the reason.

use super::build::{channel_axis, ir_shape, Act, Builder, NodeCx, Value};
use super::fold;
use super::tensor::{self, fmt_dims, Const, MAX_COMPUTED};
use crate::error::Result;
use crate::ir::{
    Activation, Conv, EltwiseKind, Op, Pool, PoolKind, Shape, TensorId, Weights, Window,
};
use nvdla_umd::emu::FallbackFn;
use std::rc::Rc;

/// Largest kernel, stride, dilation or padding accepted (keeps all window arithmetic far
/// from overflow).
const MAX_WINDOW: i64 = 1 << 16;

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
        "Relu" | "LeakyRelu" | "Sigmoid" | "Tanh" => {
            cx.arity(1, 1)?;
            let a = match op {
                "Relu" => Activation::Relu { slope: 0.0 },
                "LeakyRelu" => Activation::Relu {
                    slope: cx.float("alpha")?.unwrap_or(0.01),
                },
                "Sigmoid" => Activation::Sigmoid,
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
        "Pad" => pad(cx)?,
        "Upsample" | "Resize" => upsample(b, cx)?,
        "DepthToSpace" | "SpaceToDepth" => depth_space(b, cx)?,
        "Split" => split(b, cx)?,
        "Slice" => slice(b, cx)?,
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

/// The CPU fallback function of an element-wise operator (`--cpu-fallback`).
fn fallback_fn(op: &str) -> Option<FallbackFn> {
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
fn cpu_unary(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

/// HardSigmoid `max(0, min(1, alpha x + beta))` as an affine and a clip (two SDP
/// stages: X1's affine and ReLU, X2's minimum); HardSwish `x * HardSigmoid(x)` with
/// alpha 1/6 and beta 1/2, the same and a product with `x`.
fn hard_sigmoid(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

/// Input `k` as it is (activation, constant or padded), for aliasing ops.
fn input_value(cx: &NodeCx<'_>, k: usize) -> Result<Value> {
    match cx.input(k) {
        Some(Value::Unavailable(r)) => Err(cx.err(format!("input `{}`: {r}", cx.in_name(k)))),
        Some(v) => Ok(v.clone()),
        None => Err(cx.err(format!("input {k} is missing"))),
    }
}

/// A non-negative integer attribute value in `lo..=MAX_WINDOW`.
fn window_value(cx: &NodeCx<'_>, what: &str, v: i64, lo: i64) -> Result<usize> {
    if v < lo || v > MAX_WINDOW {
        return Err(cx.err(format!("{what} {v} is out of range ({lo} to {MAX_WINDOW})")));
    }
    Ok(v as usize)
}

/// INTS attribute `name` with `n` values each in `lo..=MAX_WINDOW`, or `default` repeated.
fn window_list(
    cx: &NodeCx<'_>,
    name: &str,
    n: usize,
    lo: i64,
    default: usize,
) -> Result<Vec<usize>> {
    match cx.ints(name)? {
        None => Ok(vec![default; n]),
        Some(v) if v.len() != n => {
            Err(cx.err(format!("`{name}` has {} values, expected {n}", v.len())))
        }
        Some(v) => v.iter().map(|&x| window_value(cx, name, x, lo)).collect(),
    }
}

/// Padding mode of convolution and pooling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AutoPad {
    NotSet,
    SameUpper,
    SameLower,
    Valid,
}

fn auto_pad(cx: &NodeCx<'_>) -> Result<AutoPad> {
    match cx.string("auto_pad")?.as_deref() {
        None | Some("NOTSET") | Some("") => Ok(AutoPad::NotSet),
        Some("SAME_UPPER") => Ok(AutoPad::SameUpper),
        Some("SAME_LOWER") => Ok(AutoPad::SameLower),
        Some("VALID") => Ok(AutoPad::Valid),
        Some(o) => Err(cx.err(format!("unknown auto_pad `{o}`"))),
    }
}

/// Number of spatial axes of a convolution/pooling input: 1 (`[N, C, L]`) or 2.
fn spatial_axes(cx: &NodeCx<'_>, dims: &[usize]) -> Result<usize> {
    match dims.len() {
        3 => Ok(1),
        4 => Ok(2),
        r => Err(cx.err(format!(
            "input of rank {r} ({}): only 1-D and 2-D windows (rank 3 or 4 inputs) map to the IR",
            fmt_dims(dims)
        ))),
    }
}

/// The windowed op's input `k`: its canonical IR tensor, unpadded dims, and the padding
/// `[top, left, bottom, right]` of a `Pad` folded into it (only a padding of `value`).
fn window_input(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    k: usize,
    value: Option<f32>,
) -> Result<(TensorId, Vec<usize>, [usize; 4])> {
    match cx.input(k) {
        Some(Value::Padded {
            act,
            pads,
            value: v,
            ..
        }) => {
            if value != Some(*v) {
                return Err(cx.err(format!(
                    "input `{}` is padded with {v} by a Pad; {} only folds a padding of {}",
                    cx.in_name(k),
                    cx.op(),
                    value.map_or("no value".to_string(), |x| x.to_string())
                )));
            }
            let (act, pads) = (act.clone(), *pads);
            let t = b.canonical_act(cx, &act, cx.in_name(k))?;
            Ok((t, act.dims, pads))
        }
        _ => {
            let (t, dims) = b.canonical(cx, k)?;
            Ok((t, dims, [0; 4]))
        }
    }
}

/// Convolution output size along one axis, with the padding actually used.
#[allow(clippy::too_many_arguments)]
fn conv_axis(
    cx: &NodeCx<'_>,
    mode: AutoPad,
    input: usize,
    k: usize,
    s: usize,
    d: usize,
    pb: usize,
    pe: usize,
) -> Result<(usize, usize, usize)> {
    let ek = d * (k - 1) + 1;
    let (pb, pe) = match mode {
        AutoPad::NotSet => (pb, pe),
        AutoPad::Valid => (0, 0),
        AutoPad::SameUpper | AutoPad::SameLower => {
            let out = input.div_ceil(s);
            let total = ((out - 1) * s + ek).saturating_sub(input);
            let begin = if mode == AutoPad::SameUpper {
                total / 2
            } else {
                total - total / 2
            };
            (begin, total - begin)
        }
    };
    let span = input + pb + pe;
    if span < ek {
        return Err(cx.err(format!(
            "the window ({ek} with dilation) is larger than the padded input ({span})"
        )));
    }
    Ok((pb, pe, (span - ek) / s + 1))
}

fn conv(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(2, 3)?;
    let (x, dims, pend) = window_input(b, cx, 0, Some(0.0))?;
    let sp = spatial_axes(cx, &dims)?;
    let w = cx.required(1, "weight")?;
    let bias = cx.constant(2, "bias")?;
    let c = dims[1];
    let group = window_value(cx, "group", cx.int("group")?.unwrap_or(1), 1)?;
    if w.dims.len() != dims.len() {
        return Err(cx.err(format!(
            "weight of shape {} for an input of rank {}",
            fmt_dims(&w.dims),
            dims.len()
        )));
    }
    let m = w.dims[0];
    if c.checked_rem(group) != Some(0)
        || m.checked_rem(group) != Some(0)
        || w.dims[1] * group != c
        || m == 0
    {
        return Err(cx.err(format!(
            "weight {} does not fit {c} input channels in {group} group(s)",
            fmt_dims(&w.dims)
        )));
    }
    let kernel: Vec<usize> = w.dims[2..].to_vec();
    if let Some(ks) = cx.ints("kernel_shape")? {
        if ks.len() != sp || ks.iter().zip(&kernel).any(|(&a, &b)| a != b as i64) {
            return Err(cx.err(format!(
                "kernel_shape {ks:?} differs from the weight's {}",
                fmt_dims(&kernel)
            )));
        }
    }
    for &k in &kernel {
        window_value(cx, "kernel size", k as i64, 1)?;
    }
    let strides = window_list(cx, "strides", sp, 1, 1)?;
    let dil = window_list(cx, "dilations", sp, 1, 1)?;
    let pads = window_list(cx, "pads", 2 * sp, 0, 0)?;
    let mode = auto_pad(cx)?;
    let mut out_sp = Vec::new();
    let mut pad = [0usize; 4];
    for i in 0..sp {
        let (pb0, pe0) = (pend[i], pend[i + 2]);
        let input = dims[2 + i] + pb0 + pe0;
        let (pb, pe, o) = conv_axis(
            cx,
            mode,
            input,
            kernel[i],
            strides[i],
            dil[i],
            pads[i],
            pads[i + sp],
        )?;
        out_sp.push(o);
        pad[i] = pb + pb0;
        pad[i + 2] = pe + pe0;
    }
    let layout = [m, c / group];
    emit_conv_node(
        b,
        cx,
        x,
        &dims,
        (sp, &kernel, &strides, &dil),
        pad,
        &out_sp,
        layout,
        &w,
        bias,
        m,
        group,
        Op::Conv,
    )
}

/// A constant of exactly `n` values (any shape) as a vector.
fn vector(cx: &NodeCx<'_>, c: &Const, n: usize, what: &str) -> Result<Weights> {
    if c.len() != n {
        return Err(cx.err(format!(
            "{what} has {} values ({}), expected {n}",
            c.len(),
            fmt_dims(&c.dims)
        )));
    }
    Ok(Weights::vector(c.to_f32()))
}

fn conv_transpose(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(2, 3)?;
    let (x, dims) = b.canonical(cx, 0)?;
    let sp = spatial_axes(cx, &dims)?;
    let w = cx.required(1, "weight")?;
    let bias = cx.constant(2, "bias")?;
    let c = dims[1];
    let group = window_value(cx, "group", cx.int("group")?.unwrap_or(1), 1)?;
    if w.dims.len() != dims.len()
        || w.dims[0] != c
        || c.checked_rem(group) != Some(0)
        || w.dims[1] == 0
    {
        return Err(cx.err(format!(
            "weight {} does not fit {c} input channels in {group} group(s) (expected \
             [C, M/group, k...])",
            fmt_dims(&w.dims)
        )));
    }
    let m = w.dims[1] * group;
    let kernel: Vec<usize> = w.dims[2..].to_vec();
    if let Some(ks) = cx.ints("kernel_shape")? {
        if ks.len() != sp || ks.iter().zip(&kernel).any(|(&a, &b)| a != b as i64) {
            return Err(cx.err(format!(
                "kernel_shape {ks:?} differs from the weight's {}",
                fmt_dims(&kernel)
            )));
        }
    }
    for &k in &kernel {
        window_value(cx, "kernel size", k as i64, 1)?;
    }
    let strides = window_list(cx, "strides", sp, 1, 1)?;
    let dil = window_list(cx, "dilations", sp, 1, 1)?;
    let opad = window_list(cx, "output_padding", sp, 0, 0)?;
    let pads = window_list(cx, "pads", 2 * sp, 0, 0)?;
    let mode = auto_pad(cx)?;
    let out_shape = match cx.ints("output_shape")? {
        None => None,
        Some(v) => {
            let v = if v.len() == sp + 2 {
                v[2..].to_vec()
            } else {
                v
            };
            if v.len() != sp {
                return Err(cx.err(format!(
                    "output_shape has {} values, expected {sp}",
                    v.len()
                )));
            }
            Some(
                v.iter()
                    .map(|&o| window_value(cx, "output_shape", o, 1).map(|_| o as usize))
                    .collect::<Result<Vec<usize>>>()?,
            )
        }
    };
    let mut out_sp = Vec::new();
    let mut pad = [0usize; 4];
    for i in 0..sp {
        let ek = dil[i] * (kernel[i] - 1) + 1;
        let natural = (strides[i] * (dims[2 + i] - 1) + opad[i] + ek) as i64;
        let target = match (&out_shape, mode) {
            (Some(o), _) => Some(o[i] as i64),
            (None, AutoPad::SameUpper | AutoPad::SameLower) => {
                Some((dims[2 + i] * strides[i]) as i64)
            }
            _ => None,
        };
        let (begin, end, out) = match target {
            Some(out) => {
                let total = natural - out;
                let begin = if mode == AutoPad::SameUpper {
                    total.div_euclid(2)
                } else {
                    total - total.div_euclid(2)
                };
                (begin, total - begin, out)
            }
            None if mode == AutoPad::Valid => (0, 0, natural),
            None => {
                let (pb, pe) = (pads[i] as i64, pads[i + sp] as i64);
                (pb, pe, natural - pb - pe)
            }
        };
        if begin < 0 || out < 1 {
            return Err(cx.err(format!(
                "axis {}: padding {begin}/{end} and output size {out} are not representable",
                i + 2
            )));
        }
        out_sp.push(out as usize);
        pad[i] = begin as usize;
        // The IR's end padding is Caffe's (output = (H-1)*s + ek - begin - end); the
        // recorded output size covers output_padding beyond it.
        pad[i + 2] = (end - opad[i] as i64).max(0) as usize;
    }
    let layout = [c, m / group];
    emit_conv_node(
        b,
        cx,
        x,
        &dims,
        (sp, &kernel, &strides, &dil),
        pad,
        &out_sp,
        layout,
        &w,
        bias,
        m,
        group,
        Op::Deconv,
    )
}

/// What Conv and ConvTranspose share once their geometry is known: the IR window from
/// ONNX's 1-D or 2-D attributes (`axes`: spatial axes, kernel, strides, dilations), the
/// weights laid out as `[layout[0], layout[1], kh, kw]`, the bias, and the node emitted
/// as `op` of the resulting [`Conv`].
#[allow(clippy::too_many_arguments)]
fn emit_conv_node(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    x: TensorId,
    dims: &[usize],
    (sp, kernel, strides, dil): (usize, &[usize], &[usize], &[usize]),
    pad: [usize; 4],
    out_sp: &[usize],
    layout: [usize; 2],
    w: &Const,
    bias: Option<Rc<Const>>,
    m: usize,
    group: usize,
    op: fn(Conv) -> Op,
) -> Result<Vec<Value>> {
    let pair = |v: &[usize], d: usize| if sp == 2 { [v[0], v[1]] } else { [v[0], d] };
    let window = Window {
        kernel: pair(kernel, 1),
        stride: pair(strides, 1),
        pad,
        dilation: pair(dil, 1),
    };
    let weight = Weights::new(
        vec![layout[0], layout[1], window.kernel[0], window.kernel[1]],
        w.to_f32(),
    )
    .ok_or_else(|| cx.err("weight has the wrong number of values"))?;
    let bias = bias.map(|bv| vector(cx, &bv, m, "bias")).transpose()?;
    let mut out_dims = vec![dims[0], m];
    out_dims.extend(out_sp);
    let shape = ir_shape(&out_dims).map_err(|e| cx.err(e))?;
    let t = b.emit(
        cx,
        None,
        op(Conv {
            window,
            groups: group,
            out_channels: m,
            weight,
            bias,
        }),
        vec![x],
        cx.out(0).into(),
        shape,
    );
    Ok(vec![Value::Act(Act { t, dims: out_dims })])
}

fn pool(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

fn global_pool(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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
        window: Window {
            kernel: [s.h, s.w],
            stride: [1, 1],
            pad: [0; 4],
            dilation: [1, 1],
        },
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

fn unary(b: &mut Builder, cx: &NodeCx<'_>, a: Activation) -> Result<Vec<Value>> {
    let x = cx.act(0)?;
    let s = b.shape(x.t);
    let t = b.emit(cx, None, Op::Activation(a), vec![x.t], cx.out(0).into(), s);
    Ok(vec![Value::Act(Act { t, dims: x.dims })])
}

/// A constant applied element-wise to an activation of `dims`: its values if it is a
/// scalar or varies only along the channel axis (with the channel count), and the
/// dimensions of the broadcast result.
fn per_channel(c: &Const, dims: &[usize]) -> Result<(Vec<f32>, Vec<usize>), String> {
    let out = tensor::broadcast(dims, &c.dims).ok_or_else(|| {
        format!(
            "the constant of shape {} does not broadcast with {}",
            fmt_dims(&c.dims),
            fmt_dims(dims)
        )
    })?;
    let off = out.len() - dims.len();
    if out[off..] != *dims || out[..off].iter().any(|&d| d != 1) {
        return Err(format!(
            "the constant of shape {} would broadcast the input {} to {}",
            fmt_dims(&c.dims),
            fmt_dims(dims),
            fmt_dims(&out)
        ));
    }
    let v = c.to_f32();
    if v.len() == 1 {
        return Ok((v, out));
    }
    let r = out.len();
    let ch = channel_axis(dims.len()).map(|a| a + off);
    let coff = r - c.dims.len();
    for (i, &d) in c.dims.iter().enumerate() {
        if d != 1 && Some(coff + i) != ch {
            return Err(format!(
                "the constant of shape {} varies along axis {} of {}: only scalars and \
                 per-channel constants map to the IR's per-channel affine",
                fmt_dims(&c.dims),
                coff + i,
                fmt_dims(&out)
            ));
        }
    }
    Ok((v, out))
}

/// `x * scale + bias` on input `k` (scale and bias: one value or one per channel).
fn affine(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    k: usize,
    scale: Option<Vec<f32>>,
    bias: Option<Vec<f32>>,
    dims: Option<Vec<usize>>,
) -> Result<Vec<Value>> {
    let x = cx.act(k)?;
    let wide =
        scale.as_ref().is_some_and(|v| v.len() > 1) || bias.as_ref().is_some_and(|v| v.len() > 1);
    let t = if wide { b.canonical(cx, k)?.0 } else { x.t };
    let s = b.shape(t);
    let t = b.emit(
        cx,
        None,
        Op::ChannelAffine {
            scale: scale.map(Weights::vector),
            bias: bias.map(Weights::vector),
        },
        vec![t],
        cx.out(0).into(),
        s,
    );
    Ok(vec![Value::Act(Act {
        t,
        dims: dims.unwrap_or(x.dims),
    })])
}

/// Before opset 7, a constant operand `c` of a tensor of rank `r` is aligned at `axis`
/// (not at the end): its dimensions as numpy broadcasting reads them.
fn legacy_aligned(cx: &NodeCx<'_>, c: &Const, axis: i64, r: usize) -> Result<Const> {
    let a = cx.axis("axis", axis, r)?;
    if a + c.dims.len() > r {
        return Err(cx.err(format!(
            "operand {} does not fit at axis {a} of a rank-{r} tensor",
            fmt_dims(&c.dims)
        )));
    }
    let mut dims = c.dims.clone();
    dims.resize(r - a, 1);
    Ok(c.reshaped(dims))
}

fn prelu(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

fn clip(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

fn arithmetic(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

fn variadic(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

fn batch_norm(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(5, 5)?;
    let x = cx.act(0)?;
    if x.dims.len() < 2 {
        return Err(cx.err(format!("input {} has no channel axis", fmt_dims(&x.dims))));
    }
    if cx.int("training_mode")?.unwrap_or(0) != 0 || cx.int("is_test")? == Some(0) {
        return Err(cx.err("training mode is not supported (inference only)"));
    }
    let c = x.dims[1];
    let per_item: usize = x.dims[1..].iter().product();
    if cx.opset < 9 && cx.int("spatial")?.unwrap_or(1) == 0 && per_item != c {
        return Err(cx.err("spatial = 0 (statistics per element) is not supported"));
    }
    let get = |k: usize, what: &str| -> Result<Vec<f64>> {
        let v = cx.required(k, what)?;
        Ok(vector(cx, &v, c, what)?
            .data
            .iter()
            .map(|&x| f64::from(x))
            .collect())
    };
    let (scale, bias, mean, var) = (
        get(1, "scale")?,
        get(2, "B")?,
        get(3, "mean")?,
        get(4, "var")?,
    );
    let eps = f64::from(cx.float("epsilon")?.unwrap_or(1e-5));
    let mut s = Vec::with_capacity(c);
    let mut bb = Vec::with_capacity(c);
    for ch in 0..c {
        let d = var[ch] + eps;
        if d.is_nan() || d <= 0.0 {
            return Err(cx.err(format!(
                "channel {ch}: variance + epsilon = {d} is not positive"
            )));
        }
        let k = scale[ch] / d.sqrt();
        s.push(k as f32);
        bb.push((bias[ch] - mean[ch] * k) as f32);
    }
    let mut outs = affine(b, cx, 0, Some(s), Some(bb), None)?;
    for what in ["running_mean", "running_var", "saved_mean", "saved_var"] {
        outs.push(Value::Unavailable(format!(
            "BatchNormalization's {what} output is training-only"
        )));
    }
    Ok(outs)
}

/// A fully connected IR node on input `k` (rows `m` of `kk` values each) with weight
/// `[n, kk]`; output dims `out_dims`.
#[allow(clippy::too_many_arguments)]
fn fully_connected(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    k: usize,
    m: usize,
    kk: usize,
    n: usize,
    weight: Vec<f32>,
    bias: Option<Vec<f32>>,
    out_dims: Vec<usize>,
) -> Result<Vec<Value>> {
    let x = cx.act(k)?;
    let s = b.shape(x.t);
    let t = if s.n == m && s.per_item() == kk {
        x.t
    } else {
        let t = b.canonical(cx, k)?.0;
        let s = b.shape(t);
        if !(s.n == m && s.per_item() == kk) {
            return Err(cx.err(format!(
                "input {} cannot be read as {m} rows of {kk} values by the IR's fully \
                 connected layer",
                fmt_dims(&x.dims)
            )));
        }
        t
    };
    let weight = Weights::new(vec![n, kk], weight).ok_or_else(|| cx.err("weight size"))?;
    let t = b.emit(
        cx,
        None,
        Op::FullyConnected {
            weight,
            bias: bias.map(Weights::vector),
        },
        vec![t],
        cx.out(0).into(),
        Shape::new(m, n, 1, 1),
    );
    Ok(vec![Value::Act(Act { t, dims: out_dims })])
}

fn gemm(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(2, 3)?;
    let a = cx.act(0)?;
    let bw = cx.required(1, "B")?;
    let c = cx.constant(2, "C")?;
    let alpha = cx.float("alpha")?.unwrap_or(1.0);
    let beta = cx.float("beta")?.unwrap_or(1.0);
    let ta = cx.int("transA")?.unwrap_or(0) != 0;
    let tb = cx.int("transB")?.unwrap_or(0) != 0;
    let [a0, a1] = a.dims[..] else {
        return Err(cx.err(format!("A must be 2-D, found {}", fmt_dims(&a.dims))));
    };
    let (m, kk) = if ta {
        if a0 != 1 && a1 != 1 {
            return Err(cx.err(format!(
                "transA on {}: the IR cannot transpose a computed matrix (only a vector)",
                fmt_dims(&a.dims)
            )));
        }
        (a1, a0)
    } else {
        (a0, a1)
    };
    let [b0, b1] = bw.dims[..] else {
        return Err(cx.err(format!("B must be 2-D, found {}", fmt_dims(&bw.dims))));
    };
    let (bk, n) = if tb { (b1, b0) } else { (b0, b1) };
    if bk != kk {
        return Err(cx.err(format!("A' is {m}x{kk} but B' is {bk}x{n}")));
    }
    let bv = bw.to_f32();
    let mut weight = vec![0f32; n * kk];
    for o in 0..n {
        for i in 0..kk {
            let v = if tb { bv[o * kk + i] } else { bv[i * n + o] };
            weight[o * kk + i] = alpha * v;
        }
    }
    let bias = match c {
        None => None,
        Some(c) => {
            let out = tensor::broadcast(&[m, n], &c.dims);
            if out.as_deref() != Some(&[m, n][..]) {
                return Err(cx.err(format!(
                    "C of shape {} does not broadcast to {m}x{n}",
                    fmt_dims(&c.dims)
                )));
            }
            let idx = tensor::broadcast_index(&c.dims, &[m, n]);
            let cv = c.to_f32();
            if (0..m * n).any(|e| cv[idx[e]] != cv[idx[e % n]]) {
                return Err(
                    cx.err("C varies along the rows: only a bias per output column maps to the IR")
                );
            }
            Some((0..n).map(|o| beta * cv[idx[o]]).collect())
        }
    };
    fully_connected(b, cx, 0, m, kk, n, weight, bias, vec![m, n])
}

fn matmul(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(2, 2)?;
    let a = cx.act(0)?;
    let w = cx.required(1, "B (the second operand)")?;
    let (kk, n, b_vec) = match w.dims[..] {
        [k] => (k, 1, true),
        [k, n] => (k, n, false),
        _ => {
            return Err(cx.err(format!(
                "B of shape {}: only a 1-D or 2-D constant maps to a fully connected layer",
                fmt_dims(&w.dims)
            )))
        }
    };
    let r = a.dims.len();
    if r == 0 || a.dims[r - 1] != kk {
        return Err(cx.err(format!(
            "A {} and B {} do not multiply",
            fmt_dims(&a.dims),
            fmt_dims(&w.dims)
        )));
    }
    let m: usize = a.dims[..r - 1].iter().product();
    let wv = w.to_f32();
    let mut weight = vec![0f32; n * kk];
    for o in 0..n {
        for i in 0..kk {
            weight[o * kk + i] = wv[i * n + o];
        }
    }
    let mut out_dims = a.dims[..r - 1].to_vec();
    if !b_vec {
        out_dims.push(n);
    }
    fully_connected(b, cx, 0, m, kk, n, weight, None, out_dims)
}

fn softmax(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

fn concat(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

fn lrn(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

fn dropout(cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

/// Constant input `k` or INTS attribute `name` (by opset: the attribute before
/// `input_since`), as integers; `None` if absent.
pub(crate) fn ints_param(
    cx: &NodeCx<'_>,
    k: usize,
    name: &str,
    input_since: i64,
) -> Result<Option<Vec<i64>>> {
    if cx.opset >= input_since {
        match cx.constant(k, name)? {
            None => Ok(None),
            Some(c) => match c.ints_exact() {
                Some(v) => Ok(Some(v.to_vec())),
                None => Err(cx.err(format!("`{name}` must be an integer tensor"))),
            },
        }
    } else {
        cx.ints(name)
    }
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

fn pad(cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let (inner, pending, value0, dims) = match cx.input(0) {
        Some(Value::Padded {
            act,
            pads,
            value,
            dims,
        }) => (act.clone(), *pads, Some(*value), dims.clone()),
        _ => {
            let a = cx.act(0)?;
            let d = a.dims.clone();
            (a, [0; 4], None, d)
        }
    };
    let r = dims.len();
    let mode = cx.string("mode")?.unwrap_or_else(|| "constant".into());
    if mode != "constant" {
        return Err(cx.err(format!(
            "mode `{mode}`: only constant padding (folded into a following Conv or pooling) \
             is supported"
        )));
    }
    let (pads, value) = if cx.opset < 11 {
        cx.arity(1, 1)?;
        let pads = cx
            .ints("pads")?
            .ok_or_else(|| cx.err("attribute `pads` is required"))?;
        (pads, cx.float("value")?.unwrap_or(0.0))
    } else {
        cx.arity(2, 4)?;
        let pads = ints_param(cx, 1, "pads", 11)?.ok_or_else(|| cx.err("pads are required"))?;
        let value = match cx.constant(2, "constant_value")? {
            None => 0.0,
            Some(c) if c.len() == 1 => c.to_f32()[0],
            Some(c) => {
                return Err(cx.err(format!(
                    "constant_value must be a scalar, found {}",
                    fmt_dims(&c.dims)
                )))
            }
        };
        (pads, value)
    };
    // Per-axis (begin, end) for every axis.
    let axes: Vec<usize> = match ints_param(cx, 3, "axes", 18)? {
        None => (0..r).collect(),
        Some(a) => a
            .iter()
            .map(|&x| cx.axis("axes", x, r))
            .collect::<Result<_>>()?,
    };
    if pads.len() != 2 * axes.len() {
        return Err(cx.err(format!(
            "pads has {} values for {} axes",
            pads.len(),
            axes.len()
        )));
    }
    let mut begin = vec![0i64; r];
    let mut end = vec![0i64; r];
    for (i, &a) in axes.iter().enumerate() {
        begin[a] += pads[i];
        end[a] += pads[i + axes.len()];
    }
    if begin
        .iter()
        .chain(&end)
        .any(|&p| !(0..=MAX_WINDOW).contains(&p))
    {
        return Err(cx.err(format!(
            "pads {pads:?}: negative padding (cropping) is not supported"
        )));
    }
    if begin.iter().chain(&end).all(|&p| p == 0) {
        return Ok(vec![input_value(cx, 0)?]);
    }
    let spatial = match r {
        3 | 4 => r - 2,
        _ => 0,
    };
    if (0..r).any(|a| a < 2 && (begin[a] != 0 || end[a] != 0)) || spatial == 0 {
        return Err(cx.err(format!(
            "pads {pads:?} on {}: only the spatial axes of a rank-3 or rank-4 tensor can be \
             padded (folded into a following Conv or pooling)",
            fmt_dims(&dims)
        )));
    }
    if value0.is_some_and(|v| v != value) {
        return Err(cx.err("two Pads with different values"));
    }
    let mut p = pending;
    let mut new_dims = dims.clone();
    for i in 0..spatial {
        p[i] += begin[2 + i] as usize;
        p[i + 2] += end[2 + i] as usize;
        new_dims[2 + i] += (begin[2 + i] + end[2 + i]) as usize;
    }
    Ok(vec![Value::Padded {
        act: inner,
        pads: p,
        value,
        dims: new_dims,
    }])
}

/// The input index nearest-neighbour resizing reads for output `x` (ONNX `Resize`).
fn nearest_source(
    cx: &NodeCx<'_>,
    x: usize,
    input: usize,
    output: usize,
    scale: f64,
    ctm: &str,
    nearest: &str,
) -> Result<usize> {
    let xf = x as f64;
    let orig = match ctm {
        "half_pixel" | "half_pixel_symmetric" => (xf + 0.5) / scale - 0.5,
        "pytorch_half_pixel" => {
            if output > 1 {
                (xf + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        "align_corners" => {
            if output == 1 {
                0.0
            } else {
                xf * (input as f64 - 1.0) / (output as f64 - 1.0)
            }
        }
        "asymmetric" => xf / scale,
        "tf_half_pixel_for_nn" => (xf + 0.5) / scale,
        other => {
            return Err(cx.err(format!(
                "coordinate_transformation_mode `{other}` is not supported"
            )))
        }
    };
    let i = match nearest {
        "round_prefer_floor" => {
            if orig.fract() == 0.5 || orig.fract() == -0.5 {
                orig.floor()
            } else {
                orig.round()
            }
        }
        "round_prefer_ceil" => {
            if orig.fract() == 0.5 || orig.fract() == -0.5 {
                orig.ceil()
            } else {
                orig.round()
            }
        }
        "floor" => orig.floor(),
        "ceil" => orig.ceil(),
        other => return Err(cx.err(format!("nearest_mode `{other}` is not supported"))),
    };
    Ok(i.clamp(0.0, input as f64 - 1.0) as usize)
}

fn upsample(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let resize = cx.op() == "Resize";
    if cx.opset < 7 {
        return Err(cx.err("Upsample before opset 7 is experimental and not supported"));
    }
    let x = cx.act(0)?;
    let r = x.dims.len();
    let mode = cx.string("mode")?.unwrap_or_else(|| "nearest".into());
    if mode != "nearest" {
        return Err(cx.err(format!(
            "mode `{mode}`: only nearest-neighbour resizing by integer factors maps to the IR \
             (a deconvolution)"
        )));
    }
    let floats = |k: usize, what: &str| -> Result<Option<Vec<f64>>> {
        Ok(cx
            .constant(k, what)?
            .filter(|c| c.len() > 0)
            .map(|c| c.to_f32().iter().map(|&v| f64::from(v)).collect()))
    };
    let (scales, sizes) = if !resize {
        if cx.opset < 9 {
            cx.arity(1, 1)?;
            let s = cx
                .floats("scales")?
                .ok_or_else(|| cx.err("attribute `scales` is required"))?;
            (
                Some(s.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()),
                None,
            )
        } else {
            cx.arity(2, 2)?;
            (floats(1, "scales")?, None)
        }
    } else if cx.opset < 11 {
        cx.arity(2, 2)?;
        (floats(1, "scales")?, None)
    } else {
        cx.arity(1, 4)?;
        let sizes = match cx.constant(3, "sizes")? {
            Some(c) if c.len() > 0 => Some(c.to_i64()),
            _ => None,
        };
        (floats(2, "scales")?, sizes)
    };
    // Per-axis factors over all r axes.
    let axes: Vec<usize> = match (resize && cx.opset >= 18)
        .then(|| cx.ints("axes"))
        .transpose()?
        .flatten()
    {
        None => (0..r).collect(),
        Some(a) => a
            .iter()
            .map(|&v| cx.axis("axes", v, r))
            .collect::<Result<_>>()?,
    };
    let mut out = x.dims.clone();
    let mut scale = vec![1f64; r];
    match (scales, sizes) {
        (Some(s), None) => {
            if s.len() != axes.len() {
                return Err(cx.err(format!(
                    "scales has {} values for {} axes",
                    s.len(),
                    axes.len()
                )));
            }
            for (i, &a) in axes.iter().enumerate() {
                if !(s[i] > 0.0 && s[i] <= MAX_WINDOW as f64) {
                    return Err(cx.err(format!("scale {} is out of range", s[i])));
                }
                scale[a] = s[i];
                out[a] = (x.dims[a] as f64 * s[i]).floor() as usize;
            }
        }
        (None, Some(z)) => {
            if z.len() != axes.len() {
                return Err(cx.err(format!(
                    "sizes has {} values for {} axes",
                    z.len(),
                    axes.len()
                )));
            }
            let policy = cx.string("keep_aspect_ratio_policy")?;
            if policy.as_deref().is_some_and(|p| p != "stretch") {
                return Err(cx.err("keep_aspect_ratio_policy other than stretch is not supported"));
            }
            for (i, &a) in axes.iter().enumerate() {
                if z[i] < 1 || z[i] > MAX_WINDOW * x.dims[a] as i64 {
                    return Err(cx.err(format!("size {} is out of range", z[i])));
                }
                out[a] = z[i] as usize;
                scale[a] = z[i] as f64 / x.dims[a] as f64;
            }
        }
        _ => return Err(cx.err("exactly one of scales and sizes must be given")),
    }
    if r < 3 || out[0] != x.dims[0] || out[1] != x.dims[1] || r > 4 {
        return Err(cx.err(format!(
            "resizing {} to {}: only the spatial axes of a rank-3 or rank-4 tensor can be \
             resized",
            fmt_dims(&x.dims),
            fmt_dims(&out)
        )));
    }
    let (ctm, nearest) = if !resize {
        ("asymmetric".to_string(), "floor".to_string())
    } else {
        (
            cx.string("coordinate_transformation_mode")?
                .unwrap_or_else(|| {
                    if cx.opset < 11 {
                        "asymmetric"
                    } else {
                        "half_pixel"
                    }
                    .into()
                }),
            cx.string("nearest_mode")?.unwrap_or_else(|| {
                if cx.opset < 11 {
                    "floor"
                } else {
                    "round_prefer_floor"
                }
                .into()
            }),
        )
    };
    let shape = ir_shape(&out).map_err(|e| cx.err(e))?;
    let mut factor = [1usize; 2];
    for i in 0..r - 2 {
        let (inp, o) = (x.dims[2 + i], out[2 + i]);
        if o.checked_rem(inp) != Some(0) || o == 0 {
            return Err(cx.err(format!(
                "axis {}: {inp} to {o} is not an integer factor",
                2 + i
            )));
        }
        let f = o / inp;
        if o > 1 << 20 {
            return Err(cx.err(format!("axis {}: output size {o} is too large", 2 + i)));
        }
        for p in 0..o {
            if nearest_source(cx, p, inp, o, scale[2 + i], &ctm, &nearest)? != p / f {
                return Err(cx.err(format!(
                    "axis {}: this resize ({ctm}, {nearest}) does not repeat every pixel {f} \
                     times, so it is not a deconvolution",
                    2 + i
                )));
            }
        }
        factor[i] = f;
    }
    if factor == [1, 1] {
        return Ok(vec![Value::Act(Act { t: x.t, dims: out })]);
    }
    let (t, _) = b.canonical(cx, 0)?;
    let c = x.dims[1];
    let n = tensor::count(&[c, factor[0], factor[1]], MAX_COMPUTED).map_err(|e| cx.err(e))?;
    b.spend(cx, n)?;
    let op = Op::Deconv(Conv {
        window: Window {
            kernel: factor,
            stride: factor,
            pad: [0; 4],
            dilation: [1, 1],
        },
        groups: c,
        out_channels: c,
        weight: Weights::new(vec![c, 1, factor[0], factor[1]], vec![1.0; n])
            .ok_or_else(|| cx.err("weight size"))?,
        bias: None,
    });
    let t = b.emit(cx, None, op, vec![t], cx.out(0).into(), shape);
    Ok(vec![Value::Act(Act { t, dims: out })])
}

/// DepthToSpace as a deconvolution and SpaceToDepth as a convolution, both with stride
/// and kernel the block size and 0/1 weights that move each value (exact): DepthToSpace's
/// output channel `c` at phase `(ry, rx)` of each block reads input channel
/// `(ry * b + rx) * C' + c` (DCR) or `c * b^2 + ry * b + rx` (CRD); SpaceToDepth's output
/// channel `(ry * b + rx) * C + c` reads channel `c` at that phase.
fn depth_space(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(1, 1)?;
    let (t, dims) = b.canonical(cx, 0)?;
    let [n, c, h, w] = dims[..] else {
        return Err(cx.err(format!("input {}: only rank-4 tensors", fmt_dims(&dims))));
    };
    let bs = cx
        .int("blocksize")?
        .ok_or_else(|| cx.err("attribute `blocksize` is required"))?;
    let bs = window_value(cx, "blocksize", bs, 1)?;
    let bb = bs * bs;
    let to_space = cx.op() == "DepthToSpace";
    let crd = match cx.string("mode")?.as_deref() {
        None | Some("DCR") => false,
        Some("CRD") if to_space => true,
        Some(m) => return Err(cx.err(format!("mode `{m}` is not supported"))),
    };
    let (ci, co, out_dims) = if to_space {
        if c % bb != 0 {
            return Err(cx.err(format!("{c} channels are not a multiple of {bb}")));
        }
        (c, c / bb, vec![n, c / bb, h * bs, w * bs])
    } else {
        if h % bs != 0 || w % bs != 0 {
            return Err(cx.err(format!("{h}x{w} is not a multiple of the block {bs}")));
        }
        (c, c * bb, vec![n, c * bb, h / bs, w / bs])
    };
    let count = tensor::count(&[ci, co, bb], MAX_COMPUTED).map_err(|e| cx.err(e))?;
    b.spend(cx, count)?;
    let mut wv = vec![0f32; count];
    let window = Window {
        kernel: [bs, bs],
        stride: [bs, bs],
        pad: [0; 4],
        dilation: [1, 1],
    };
    let op = if to_space {
        // Deconvolution weight [C, C', b, b].
        for o in 0..co {
            for ry in 0..bs {
                for rx in 0..bs {
                    let i = if crd {
                        o * bb + ry * bs + rx
                    } else {
                        (ry * bs + rx) * co + o
                    };
                    wv[((i * co + o) * bs + ry) * bs + rx] = 1.0;
                }
            }
        }
        Op::Deconv(Conv {
            window,
            groups: 1,
            out_channels: co,
            weight: Weights::new(vec![ci, co, bs, bs], wv).ok_or_else(|| cx.err("weight size"))?,
            bias: None,
        })
    } else {
        // Convolution weight [C * b^2, C, b, b].
        for i in 0..ci {
            for ry in 0..bs {
                for rx in 0..bs {
                    let o = (ry * bs + rx) * ci + i;
                    wv[((o * ci + i) * bs + ry) * bs + rx] = 1.0;
                }
            }
        }
        Op::Conv(Conv {
            window,
            groups: 1,
            out_channels: co,
            weight: Weights::new(vec![co, ci, bs, bs], wv).ok_or_else(|| cx.err("weight size"))?,
            bias: None,
        })
    };
    let shape = ir_shape(&out_dims).map_err(|e| cx.err(e))?;
    let t = b.emit(cx, None, op, vec![t], cx.out(0).into(), shape);
    Ok(vec![Value::Act(Act { t, dims: out_dims })])
}

/// Channels `sel` of input `k`'s channel axis as a new activation (output `out_k`), by a
/// 1x1 convolution with a 0/1 selection matrix (exact for finite values).
fn select_channels(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    k: usize,
    sel: &[usize],
    out_k: usize,
) -> Result<Value> {
    let (t, dims) = b.canonical(cx, k)?;
    let ca = channel_axis(dims.len()).ok_or_else(|| cx.err("input has no channel axis"))?;
    let c = dims[ca];
    if sel.is_empty() {
        return Err(cx.err("an empty slice of channels"));
    }
    if sel.len() == c && sel.iter().enumerate().all(|(i, &s)| i == s) {
        return Ok(Value::Act(Act { t, dims }));
    }
    let n = tensor::count(&[sel.len(), c], MAX_COMPUTED).map_err(|e| cx.err(e))?;
    b.spend(cx, n)?;
    let mut w = vec![0f32; n];
    for (o, &s) in sel.iter().enumerate() {
        w[o * c + s] = 1.0;
    }
    let mut out_dims = dims.clone();
    out_dims[ca] = sel.len();
    let shape = ir_shape(&out_dims).map_err(|e| cx.err(e))?;
    let op = Op::Conv(Conv {
        window: Window {
            kernel: [1, 1],
            stride: [1, 1],
            pad: [0; 4],
            dilation: [1, 1],
        },
        groups: 1,
        out_channels: sel.len(),
        weight: Weights::new(vec![sel.len(), c, 1, 1], w).ok_or_else(|| cx.err("weight size"))?,
        bias: None,
    });
    let suffix = (cx.node.output.len() > 1).then(|| format!("{out_k}"));
    let t = b.emit(
        cx,
        suffix.as_deref(),
        op,
        vec![t],
        cx.out(out_k).into(),
        shape,
    );
    Ok(Value::Act(Act { t, dims: out_dims }))
}

fn split(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let x = cx.act(0)?;
    let sizes = fold::split_sizes(cx, &x.dims)?;
    let (axis, sizes) = sizes;
    if Some(axis) != channel_axis(x.dims.len()) {
        return Err(cx.err(format!(
            "split along axis {axis} of {}: only a split of the channels maps to the IR",
            fmt_dims(&x.dims)
        )));
    }
    let mut outs = Vec::new();
    let mut start = 0;
    for (i, &s) in sizes.iter().enumerate() {
        let sel: Vec<usize> = (start..start + s).collect();
        start += s;
        outs.push(select_channels(b, cx, 0, &sel, i)?);
    }
    Ok(outs)
}

fn slice(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let x = cx.act(0)?;
    let idx = fold::slice_indices(cx, &x.dims)?;
    let ch = channel_axis(x.dims.len());
    for (a, sel) in idx.iter().enumerate() {
        let full = sel.len() == x.dims[a] && sel.iter().enumerate().all(|(i, &s)| i == s);
        if !full && Some(a) != ch {
            return Err(cx.err(format!(
                "slicing axis {a} of {}: only slices of the channels map to the IR",
                fmt_dims(&x.dims)
            )));
        }
    }
    match ch {
        Some(c) => Ok(vec![select_channels(b, cx, 0, &idx[c], 0)?]),
        None => Ok(vec![Value::Act(x)]),
    }
}

/// Wraps constants as values.
pub(crate) fn consts(v: Vec<Const>) -> Vec<Value> {
    v.into_iter().map(|c| Value::Const(Rc::new(c))).collect()
}
