//! Element-wise layers: folded into the SDP of the operation before them, or SDP
//! operations of their own reading memory.

use super::{broadcast, layer_err, Lowering};
use crate::error::Result;
use crate::ir::{Activation, EltwiseKind, Node, Op, TensorId};
use crate::sdp::{Refusal, SdpStages, Stage};
use nvdla_loadable::dla::SdpAluType;

impl Lowering<'_> {
    /// Folds the element-wise layers that follow tensor `t` into `sdp` while they can be:
    /// `t` feeds only that layer, is not a network output, and the layer's other inputs
    /// are already computed. Returns the last tensor computed and the layers fused.
    /// `unit` (int8): the SDP input's unit, to check that the int8 plan of the chain still
    /// fits the build's stages before a layer joins it.
    pub(super) fn fuse_elementwise(
        &mut self,
        mut t: TensorId,
        sdp: &mut SdpStages,
        unit: Option<&[f64]>,
    ) -> Result<(TensorId, Vec<String>)> {
        let g = self.g;
        let mut fused = Vec::new();
        loop {
            if g.outputs.contains(&t) || self.views.contains_key(&t) {
                break;
            }
            let consumers = g.consumers(t);
            let [next] = consumers.as_slice() else { break };
            let j = next.0;
            if self.done[j] {
                break;
            }
            let n = &g.nodes[j];
            let Ok(out) = self.out_tensor(n) else { break };
            let (before, luts) = (sdp.clone(), self.p.luts.len());
            match self.elementwise_stages(n, t, sdp)? {
                Ok(()) if unit.is_some_and(|u| !self.int8_fits(sdp, u, out)) => {
                    // Too many int8 stages: the chain goes on in another SDP operation.
                    *sdp = before;
                    self.p.luts.truncate(luts);
                    break;
                }
                Ok(()) => {
                    self.done[j] = true;
                    fused.push(n.name.clone());
                    t = out;
                }
                Err(_) => break,
            }
        }
        Ok((t, fused))
    }

    /// Whether `sdp`, ending in tensor `out`, has an int8 plan that fits the build (from the
    /// input unit `unit`); true when `out` has no scale yet (encoding then says why).
    fn int8_fits(&self, sdp: &SdpStages, unit: &[f64], out: TensorId) -> bool {
        let out_scale = f64::from(self.scale_of(out, false));
        if !(out_scale.is_finite() && out_scale > 0.0) {
            return true;
        }
        let scale_of = self.operand_scales(sdp);
        sdp.fits_int8(self.t, unit, out_scale, &scale_of)
    }

    /// Adds the SDP stages for element-wise node `n` whose main input is `main`. The
    /// inner `Err` says why the SDP cannot take it here (stages full, operand not computed
    /// yet, not element-wise); `sdp` is then unchanged.
    fn elementwise_stages(
        &mut self,
        n: &Node,
        main: TensorId,
        sdp: &mut SdpStages,
    ) -> Result<std::result::Result<(), Refusal>> {
        let t = *self.t;
        let c = self.g.shape(main).c;
        let snapshot = sdp.clone();
        let r = match &n.op {
            Op::Activation(Activation::Relu { slope }) if *slope == 0.0 => sdp.relu(&t),
            Op::Activation(Activation::Relu { slope }) => {
                sdp.push(&t, Stage::PRelu(vec![*slope; c]))
            }
            Op::Activation(Activation::PRelu { slopes }) => {
                sdp.push(&t, Stage::PRelu(broadcast(&slopes.data, c, n)?))
            }
            Op::Activation(Activation::Clip { lo, hi }) => {
                // ReLU6 and friends: ReLU for a bound at 0, then the upper bound.
                let snap = sdp.clone();
                let mut r = if *lo == 0.0 {
                    sdp.relu(&t)
                } else if lo.is_finite() {
                    sdp.push(
                        &t,
                        Stage::Bound {
                            alu: SdpAluType::Max,
                            value: *lo,
                        },
                    )
                } else {
                    Ok(())
                };
                if r.is_ok() && hi.is_finite() {
                    r = sdp.push(
                        &t,
                        Stage::Bound {
                            alu: SdpAluType::Min,
                            value: *hi,
                        },
                    );
                }
                if r.is_err() {
                    *sdp = snap;
                }
                r
            }
            Op::Activation(a @ (Activation::Sigmoid | Activation::Tanh | Activation::Erf)) => {
                if !t.hw.features.sdp_lut {
                    // Not fused into an SDP: alone, a CDP lookup where the build can
                    // (lower/table.rs), else refused there.
                    return Ok(Err(format!(
                        "{} has no SDP lookup table for {}",
                        t.hw.name,
                        n.op.name()
                    )));
                }
                if sdp.has_lut() {
                    Err("one LUT per SDP operation".to_string())
                } else {
                    let lut = self.p.luts.len();
                    let f = match a {
                        Activation::Sigmoid => crate::sdp::LutFn::Sigmoid,
                        Activation::Erf => crate::sdp::LutFn::Erf,
                        _ => crate::sdp::LutFn::Tanh,
                    };
                    let r = sdp.push(&t, Stage::Lut(lut, f));
                    if r.is_ok() {
                        self.p.luts.push(f.table());
                    }
                    r
                }
            }
            Op::ChannelAffine { scale, bias } => {
                let scale = scale
                    .as_ref()
                    .map(|s| broadcast(&s.data, c, n))
                    .transpose()?;
                let bias = bias
                    .as_ref()
                    .map(|b| broadcast(&b.data, c, n))
                    .transpose()?;
                sdp.push(&t, Stage::Affine { scale, bias })
            }
            Op::BatchNorm { mean, var, eps } => {
                let m = broadcast(&mean.data, c, n)?;
                let v = broadcast(&var.data, c, n)?;
                let scale: Vec<f32> = v.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
                let bias: Vec<f32> = m.iter().zip(&scale).map(|(m, s)| -m * s).collect();
                sdp.push(
                    &t,
                    Stage::Affine {
                        scale: Some(scale),
                        bias: Some(bias),
                    },
                )
            }
            Op::Power {
                power,
                scale,
                shift,
            } if *power == 1.0 => sdp.push(
                &t,
                Stage::Affine {
                    scale: Some(vec![*scale; c]),
                    bias: Some(vec![*shift; c]),
                },
            ),
            Op::Eltwise { kind, coeffs } if n.inputs.len() == 2 => {
                let main_first = n.inputs[0] == main;
                let other_t = if main_first { n.inputs[1] } else { n.inputs[0] };
                let (ms, os) = (self.g.shape(main), self.g.shape(other_t));
                match self.surf.get(&other_t) {
                    _ if other_t == main => Err("an operand twice".to_string()),
                    _ if os != ms && !os.is_channel_vector_of(ms) => Err(format!(
                        "its main input {ms} is broadcast over the other, {os}: the SDP \
                         reads a per-element or per-channel operand"
                    )),
                    None => Err("its other operand is not computed yet".to_string()),
                    Some(&other) => {
                        let (alu, mul) = match kind {
                            EltwiseKind::Sum => (SdpAluType::Sum, false),
                            EltwiseKind::Max => (SdpAluType::Max, false),
                            EltwiseKind::Prod => (SdpAluType::Sum, true),
                        };
                        let coeff = |i: usize| coeffs.get(i).copied().unwrap_or(1.0);
                        let (cm, co) = if main_first {
                            (coeff(0), coeff(1))
                        } else {
                            (coeff(1), coeff(0))
                        };
                        let elt = Stage::Eltwise { alu, mul, other };
                        if *kind != EltwiseKind::Sum || (cm == 1.0 && co == 1.0) {
                            sdp.push(&t, elt)
                        } else if co == 0.0 {
                            sdp.push(
                                &t,
                                Stage::Affine {
                                    scale: Some(vec![cm; c]),
                                    bias: None,
                                },
                            )
                        } else {
                            // c_m x_m + c_o x_o = c_o (x_m c_m / c_o + x_o); the factor
                            // after the sum only when c_o is not 1.
                            sdp.push(
                                &t,
                                Stage::Affine {
                                    scale: Some(vec![cm / co; c]),
                                    bias: None,
                                },
                            )
                            .and_then(|()| sdp.push(&t, elt))
                            .and_then(|()| {
                                if co == 1.0 {
                                    return Ok(());
                                }
                                sdp.push(
                                    &t,
                                    Stage::Affine {
                                        scale: Some(vec![co; c]),
                                        bias: None,
                                    },
                                )
                            })
                        }
                    }
                }
            }
            _ => Err(format!("{} is not an SDP operation", n.op.name())),
        };
        if r.is_err() {
            *sdp = snapshot;
        }
        Ok(r)
    }

    /// Element-wise layers with no convolution before them: SDP reading memory.
    pub(super) fn standalone_sdp(&mut self, i: usize) -> Result<()> {
        let n = &self.g.nodes[i];
        let t = *self.t;
        let src = self.input(n, 0)?;
        let main = n.inputs[0];
        let mut sdp = SdpStages::default();
        let mut layers = vec![n.name.clone()];
        if let Err(why) = self.elementwise_stages(n, main, &mut sdp)? {
            return Err(layer_err(n, why));
        }
        let out = self.out_tensor(n)?;
        if sdp.is_empty() {
            // An identity (e.g. scale 1): alias instead of copying (not an input with
            // scales per channel, which only this reader was known to take).
            if !self.g.outputs.contains(&out)
                && !self.views.contains_key(&out)
                && self.p.channel_scales(src).is_none()
            {
                self.surf.insert(out, src);
                return Ok(());
            }
            sdp.push(&t, Stage::Pass).map_err(|e| layer_err(n, e))?;
        }
        let unit = self.uniform_unit(src)?;
        let (last, fused) = self.fuse_elementwise(out, &mut sdp, unit.as_deref())?;
        layers.extend(fused);
        let dst = self.output_surface(last);
        self.push_sdp(layers, &n.name, (src, dst), &sdp, unit)
    }
}
