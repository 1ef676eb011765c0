//! `DepthToSpace` (DCR, CRD) and `SpaceToDepth`: an IR `Deconv` / `Conv` by the block
//! with 0/1 weights.

use super::common::window_value;
use crate::error::Result;
use crate::frontend::onnx::build::{ir_shape, Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::{self, fmt_dims, MAX_COMPUTED};
use crate::ir::{Conv, Op, Weights, Window};

/// DepthToSpace as a deconvolution and SpaceToDepth as a convolution, both with stride
/// and kernel the block size and 0/1 weights that move each value (exact): DepthToSpace's
/// output channel `c` at phase `(ry, rx)` of each block reads input channel
/// `(ry * b + rx) * C' + c` (DCR) or `c * b^2 + ry * b + rx` (CRD); SpaceToDepth's output
/// channel `(ry * b + rx) * C + c` reads channel `c` at that phase.
pub(super) fn depth_space(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
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
