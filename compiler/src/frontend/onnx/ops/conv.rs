//! `Conv` and `ConvTranspose`: IR `Conv` and `Deconv`, 1-D or 2-D, with their padding
//! (`pads`, `auto_pad`, a zero `Pad` folded into a `Conv`).

use super::common::{
    auto_pad, spatial_axes, vector, window_input, window_list, window_value, AutoPad,
};
use crate::error::Result;
use crate::frontend::onnx::build::{ir_shape, Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::{fmt_dims, Const};
use crate::ir::{Conv, Op, TensorId, Weights, Window};
use std::rc::Rc;

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

pub(super) fn conv(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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

pub(super) fn conv_transpose(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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
