//! What a build's engines cannot take, asked node by node before lowering: the ONNX front
//! end's partitioner sends such nodes to the CPU (`--cpu-fallback`), as ONNX Runtime asks
//! an execution provider's `GetCapability` before assigning nodes.
//!
//! The rules are the lowering's own refusals that depend on the build or on shapes alone
//! (not on int8 scales or on CBUF fitting, which the lowering decides later and reports as
//! errors): engines a build lacks, window and stride limits of the convolution and
//! pooling cores, the CPU softmax's `1x1xC` cube, and the 13-bit cube sizes.

use crate::ir::{Activation, Graph, Node, Op, PoolKind};
use crate::target::Target;

/// Largest channel count, height or width of a cube (13-bit size registers).
pub(crate) const MAX_CUBE: usize = 8192;

/// Why the build `t` cannot compute node `n` of `g`, if it cannot.
pub fn refusal(g: &Graph, n: &Node, t: &Target) -> Option<String> {
    let f = &t.hw.features;
    for &o in &n.outputs {
        let s = g.shape(o);
        if s.c > MAX_CUBE || s.h > MAX_CUBE || s.w > MAX_CUBE {
            return Some(format!(
                "output {s}: cubes have at most {MAX_CUBE} channels, lines and pixels"
            ));
        }
    }
    let input = |k: usize| n.inputs.get(k).map(|&i| g.shape(i));
    match &n.op {
        Op::Softmax => match input(0) {
            Some(s) if s.h * s.w != 1 => Some(format!(
                "softmax runs over a 1x1 cube of channels; this input is {s}"
            )),
            _ => None,
        },
        Op::Activation(Activation::Sigmoid | Activation::Tanh | Activation::Erf) if !f.sdp_lut => {
            Some(format!(
                "{} has no SDP lookup table for {}",
                t.hw.name,
                n.op.name()
            ))
        }
        Op::Lrn { .. } if !f.cdp => Some(format!("{} has no CDP", t.hw.name)),
        // The SDP reads an element-wise operand beside its main input, not the same tensor
        // twice (`x * x`, LayerNorm's squares): on the CPU, or a CDP lookup in int8.
        Op::Eltwise { .. }
            if n.inputs
                .iter()
                .enumerate()
                .any(|(k, i)| n.inputs[..k].contains(i)) =>
        {
            Some("an element-wise operation of a tensor with itself".into())
        }
        Op::Deconv(c) if c.window.stride != [1, 1] && c.window.dilation != [1, 1] => {
            Some("strided deconvolution with dilation".into())
        }
        Op::Conv(c) => {
            let w = &c.window;
            if let Some(s) = w
                .stride
                .iter()
                .find(|&&s| crate::lower::stride_split(s).is_none())
            {
                Some(format!(
                    "stride {s}: neither 1..=8 nor a multiple of such a stride by PDP \
                     strides of 1..=16"
                ))
            } else if w.dilation.iter().any(|&d| d > 32) {
                Some("dilations above 32".into())
            } else if w.pad.iter().any(|&p| p > 31) {
                Some("padding above 31".into())
            } else {
                None
            }
        }
        Op::Pool(p) => {
            let s = input(0)?;
            let [kh, kw] = p.window.kernel;
            let global = kh == s.h && kw == s.w && p.window.pad == [0; 4];
            // Max pooling of larger windows is a chain of PDP poolings (lower/pool.rs).
            let chained = p.kind == PoolKind::Max;
            if !global && !chained && (kh > 8 || kw > 8) {
                Some(format!("pooling window {kh}x{kw}: PDP takes 1..=8"))
            } else if !global && p.window.stride.iter().any(|&v| v > 16) {
                Some("pooling stride above 16".into())
            } else {
                None
            }
        }
        // A strided crop is a 1x1 PDP pooling (lower/crop.rs).
        Op::Crop { step, .. } if step.iter().any(|&v| v > 16) => {
            Some("crop steps above 16: PDP strides take 1..=16".into())
        }
        _ => None,
    }
}
