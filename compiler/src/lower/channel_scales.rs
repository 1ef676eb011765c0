//! int8 activations with a scale per channel ([`crate::Options::channel_scales`]).
//!
//! One scale per tensor crushes the channels whose range is far below the tensor's
//! largest: a folded batch-norm before a hard-swish spans channels of range 3 to 65 in
//! PP-PicoDet's backbone, and a chain of such tensors loses most of the signal (cosine to
//! fp32 0.70 after 12 layers of PP-LCNet, the same with ONNX Runtime's QDQ at our scales).
//! NVDLA's data paths are per channel where it counts, so a tensor can carry a scale per
//! channel (`real = q * s[c]`) at no cost in operations:
//! - the SDP that writes it ends with a per-channel factor `scale / s[c]` in the unit of
//!   its value, which its output stage absorbs ([`crate::sdp::SdpStages::scale_output`]);
//! - a convolution or fully connected layer reading it folds `s[c] / scale` into the
//!   weights of input channel `c` (exact: `conv(x, W)` over `x[c] = q[c] s[c]`);
//! - an SDP reading it as its input counts its value in the per-channel unit `s[c]`, and a
//!   product's operand multiplies the unit by `s[c]` (the X stages' multipliers are per
//!   channel).
//!
//! Everything else (pooling, which cannot rescale; sums and maxima of two tensors, whose
//! operand is shifted by one amount; a clip read alone, whose bound needs one unit and
//! would take a third X stage; concatenations, CPU partitions, network inputs and
//! outputs) keeps the tensor's one scale, so a tensor gets scales per channel only when its
//! producer and every reader are among the above. Each scale is kept within
//! [`MAX_SPAN`] of the tensor's own so that the SDP's 16-bit per-channel multipliers with
//! a common shift keep their precision.

use super::Lowering;
use crate::engine::SurfId;
use crate::ir::{Activation, EltwiseKind, Node, Op, TensorId};
use crate::target::{Precision, Target};

/// The smallest per-channel scale as a fraction of the tensor's: 5 more bits for a
/// channel of 1/32 the tensor's range; the per-channel multipliers of the SDP stage that
/// rescales keep at least 10 bits.
pub(super) const MAX_SPAN: f32 = 32.0;

impl Lowering<'_> {
    /// The per-channel scales tensor `tid` takes: calibrated by channel, written by an SDP
    /// and read only where a scale per channel folds in (module docs); `None` otherwise.
    pub(super) fn channel_scales_for(&self, tid: TensorId) -> Option<Vec<f32>> {
        if self.t.precision != Precision::Int8 {
            return None;
        }
        let g = self.g;
        let whole = self.q.cal?.get(tid)?;
        let per = self.q.cal?.channels.get(&tid)?;
        let shape = g.shape(tid);
        if per.len() != shape.c
            || shape.h * shape.w <= 1
            || !(whole.is_finite() && whole > 0.0)
            || self.inherit.contains_key(&tid)
            || g.outputs.contains(&tid)
            || g.inputs.contains(&tid)
            || self.views.contains_key(&tid)
            || self.views.values().any(|v| v.0 == tid)
        {
            return None;
        }
        let writer = g.producer(tid)?;
        if !writer_takes(&g.nodes[writer.0], self.t) {
            return None;
        }
        let readers = g.consumers(tid);
        if readers.is_empty()
            || !readers
                .iter()
                .all(|r| reader_takes(&g.nodes[r.0], tid, self.t))
        {
            return None;
        }
        Some(
            per.iter()
                .map(|&s| {
                    if s.is_finite() && s > 0.0 {
                        s.clamp(whole / MAX_SPAN, whole)
                    } else {
                        whole
                    }
                })
                .collect(),
        )
    }

    /// The factors `s[c] / scale` of surface `id`'s channels, if it has scales per
    /// channel.
    pub(super) fn channel_factors(&self, id: SurfId) -> Option<Vec<f64>> {
        let cs = self.p.channel_scales(id)?;
        let whole = f64::from(self.p.surface(id).scale);
        Some(cs.iter().map(|&s| f64::from(s) / whole).collect())
    }
}

/// Whether the operations `n` lowers to write its output through an SDP.
fn writer_takes(n: &Node, t: &Target) -> bool {
    match &n.op {
        Op::Conv(_) | Op::ChannelAffine { .. } | Op::BatchNorm { .. } | Op::Eltwise { .. } => true,
        Op::Power { power, .. } => *power == 1.0,
        Op::Activation(a) => sdp_activation(a, t),
        _ => false,
    }
}

/// Whether `n` reads `tid` where a scale per channel folds in.
fn reader_takes(n: &Node, tid: TensorId, t: &Target) -> bool {
    let first = n.inputs.first() == Some(&tid) && n.inputs.len() == 1;
    match &n.op {
        Op::Conv(_)
        | Op::FullyConnected { .. }
        | Op::ChannelAffine { .. }
        | Op::BatchNorm { .. } => first,
        Op::Power { power, .. } => first && *power == 1.0,
        // A bound needs one unit for all channels: a clip reading the tensor would take an
        // X stage to requantize, a ReLU before it a second and the bound a third.
        Op::Activation(Activation::Clip { .. }) => false,
        Op::Activation(a) => first && sdp_activation(a, t),
        // A product takes per-channel units on either side; a sum or maximum shifts its
        // operand by one amount for all channels.
        Op::Eltwise {
            kind: EltwiseKind::Prod,
            ..
        } => n.inputs.len() == 2 && n.inputs[0] != n.inputs[1],
        _ => false,
    }
}

/// Activations an SDP computes on this build (the others go to the CPU).
fn sdp_activation(a: &Activation, t: &Target) -> bool {
    match a {
        Activation::Relu { .. } | Activation::PRelu { .. } | Activation::Clip { .. } => true,
        Activation::Sigmoid | Activation::Tanh | Activation::Erf => t.hw.features.sdp_lut,
    }
}
