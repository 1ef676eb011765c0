//! Filling the SDP's three stages from element-wise layers.
//!
//! The SDP applies X1 (BS), X2 (BN) and Y (EW) in that order, each an ALU and a
//! multiplier with an optional activation. X1 and X2 compute `(x alu a) * m`; Y computes
//! `x * m alu a` (NVIDIA's C model, `sdp_y_core.cpp`; our VP follows it). Layers are
//! collected as *what* they compute ([`Stage`]); the encoding (operand order, per-layer
//! register values, per-channel blobs) is chosen once the slot is known, in
//! [`SdpStages::encode`]. Consecutive affine layers merge into one stage.

use crate::engine::{Operand, Program, SdpStage, SurfId};
use crate::error::{CompileError, Result};
use crate::pack;
use crate::target::{Precision, Target};
use nvdla_loadable::dla::{Activation as Act, SdpAluType, SdpOpType};

/// What one stage computes, before encoding.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    /// `x * scale[c] + bias[c]` (either may be absent; vectors of the channel count).
    Affine {
        /// Per-channel multiplier.
        scale: Option<Vec<f32>>,
        /// Per-channel addend.
        bias: Option<Vec<f32>>,
    },
    /// `x >= 0 ? x : x * slope[c]`.
    PRelu(Vec<f32>),
    /// Combine with another surface element by element.
    Eltwise {
        /// ALU function (sum, max) or, with `mul`, a product.
        alu: SdpAluType,
        /// Multiply instead of the ALU.
        mul: bool,
        /// The other operand.
        other: SurfId,
    },
    /// Only an activation (ReLU).
    Pass,
    /// The lookup table `lut` (Y only).
    Lut(usize),
}

/// The stages of one SDP operation being filled.
#[derive(Debug, Clone, Default)]
pub struct SdpStages {
    stages: [Option<(Stage, Act)>; 3],
}

/// Why a layer could not be added.
pub type Refusal = String;

impl SdpStages {
    fn available(t: &Target, i: usize) -> bool {
        let f = &t.hw.features;
        [f.sdp_bs, f.sdp_bn, f.sdp_ew][i]
    }

    /// The last stage in use.
    fn last(&self) -> Option<usize> {
        (0..3).rev().find(|&i| self.stages[i].is_some())
    }

    /// Whether any stage is used.
    pub fn is_empty(&self) -> bool {
        self.last().is_none()
    }

    /// Whether a LUT is already applied.
    pub fn has_lut(&self) -> bool {
        self.stages[2]
            .as_ref()
            .is_some_and(|(s, _)| matches!(s, Stage::Lut(_)))
    }

    /// Adds a stage after the used ones.
    pub fn push(&mut self, t: &Target, stage: Stage) -> std::result::Result<(), Refusal> {
        // Merge an affine into a preceding affine without activation.
        if let Stage::Affine { scale, bias } = &stage {
            if let Some(i) = self.last() {
                if let Some((
                    Stage::Affine {
                        scale: s1,
                        bias: b1,
                    },
                    Act::None,
                )) = &self.stages[i]
                {
                    let (s, b) = compose(
                        s1.as_deref(),
                        b1.as_deref(),
                        scale.as_deref(),
                        bias.as_deref(),
                    );
                    self.stages[i] = Some((Stage::Affine { scale: s, bias: b }, Act::None));
                    return Ok(());
                }
            }
        }
        let start = self.last().map_or(0, |i| i + 1);
        let want_y = matches!(stage, Stage::Lut(_));
        let slot = (start..3)
            .filter(|&i| !want_y || i == 2)
            .find(|&i| Self::available(t, i))
            .ok_or_else(|| {
                let have: Vec<&str> = ["X1", "X2", "Y"]
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| Self::available(t, *i))
                    .map(|(_, s)| *s)
                    .collect();
                format!(
                    "no SDP stage left on {} (it has {})",
                    t.hw.name,
                    have.join(", ")
                )
            })?;
        self.stages[slot] = Some((stage, Act::None));
        Ok(())
    }

    /// Applies ReLU after the last stage (a pass-through stage if it has an activation).
    pub fn relu(&mut self, t: &Target) -> std::result::Result<(), Refusal> {
        match self.last() {
            Some(i)
                if self.stages[i].as_ref().is_some_and(|(s, a)| {
                    *a == Act::None && !matches!(s, Stage::PRelu(_) | Stage::Lut(_))
                }) =>
            {
                if let Some((_, a)) = self.stages[i].as_mut() {
                    *a = Act::Relu;
                }
                Ok(())
            }
            _ => {
                self.push(t, Stage::Pass)?;
                let i = self.last().unwrap_or(0);
                if let Some((_, a)) = self.stages[i].as_mut() {
                    *a = Act::Relu;
                }
                Ok(())
            }
        }
    }

    /// The LUT index used, if any.
    pub fn lut(&self) -> Option<usize> {
        self.stages.iter().flatten().find_map(|(s, _)| match s {
            Stage::Lut(l) => Some(*l),
            _ => None,
        })
    }

    /// Encodes the stages for `t`, adding operand blobs named after `layer` to `p`.
    pub fn encode(
        &self,
        p: &mut Program,
        t: &Target,
        layer: &str,
    ) -> Result<[Option<SdpStage>; 3]> {
        let mut out = [None; 3];
        for (slot, st) in self.stages.iter().enumerate() {
            let Some((stage, act)) = st else { continue };
            out[slot] = Some(encode(p, t, layer, slot, stage, *act)?);
        }
        Ok(out)
    }
}

/// `s2 * (s1 * x + b1) + b2`.
fn compose(
    s1: Option<&[f32]>,
    b1: Option<&[f32]>,
    s2: Option<&[f32]>,
    b2: Option<&[f32]>,
) -> (Option<Vec<f32>>, Option<Vec<f32>>) {
    let n = [s1, b1, s2, b2]
        .iter()
        .flatten()
        .map(|v| v.len())
        .max()
        .unwrap_or(0);
    let get = |v: Option<&[f32]>, i: usize, d: f32| v.map_or(d, |v| v[i]);
    let scale: Vec<f32> = (0..n).map(|i| get(s1, i, 1.0) * get(s2, i, 1.0)).collect();
    let bias: Vec<f32> = (0..n)
        .map(|i| get(b1, i, 0.0) * get(s2, i, 1.0) + get(b2, i, 0.0))
        .collect();
    (
        scale.iter().any(|&v| v != 1.0).then_some(scale),
        bias.iter().any(|&v| v != 0.0).then_some(bias),
    )
}

fn uniform(v: &[f32]) -> bool {
    v.iter().all(|&x| x == v[0])
}

/// A per-layer operand: the stage's precision for X1/X2, fp32 bits for Y in fp16 (the Y
/// unit computes in fp32 and takes 32-bit register operands).
fn per_layer(v: f32, slot: usize, p: Precision) -> i32 {
    if slot == 2 && p == Precision::Fp16 {
        v.to_bits() as i32
    } else {
        pack::encode(v, p)
    }
}

fn encode(
    p: &mut Program,
    t: &Target,
    layer: &str,
    slot: usize,
    stage: &Stage,
    act: Act,
) -> Result<SdpStage> {
    let prec = t.precision;
    let base = SdpStage {
        op_type: SdpOpType::None,
        alu_type: SdpAluType::Sum,
        operand: Operand::PerLayer(0),
        alu_value: 0,
        mul_value: 0,
        act,
    };
    Ok(match stage {
        Stage::Pass => base,
        Stage::Lut(_) => SdpStage {
            act: Act::Lut,
            ..base
        },
        Stage::Eltwise { alu, mul, other } => SdpStage {
            op_type: if *mul { SdpOpType::Mul } else { SdpOpType::Add },
            alu_type: *alu,
            operand: Operand::PerElement(*other),
            ..base
        },
        Stage::PRelu(slopes) => {
            if uniform(slopes) {
                SdpStage {
                    op_type: SdpOpType::Mul,
                    mul_value: per_layer(slopes[0], slot, prec),
                    act: Act::Prelu,
                    ..base
                }
            } else {
                let blob = p.add_blob(
                    format!("{layer}-slopes"),
                    pack::per_channel(t, None, Some(slopes)),
                );
                SdpStage {
                    op_type: SdpOpType::Mul,
                    operand: Operand::PerChannel(blob),
                    act: Act::Prelu,
                    ..base
                }
            }
        }
        Stage::Affine { scale, bias } => {
            let op_type = match (scale, bias) {
                (None, None) => return Ok(base),
                (Some(_), None) => SdpOpType::Mul,
                (None, Some(_)) => SdpOpType::Add,
                (Some(_), Some(_)) => SdpOpType::Both,
            };
            // X1/X2: (x + a) * m, so a = b / s; Y: x * m + a.
            let alu: Option<Vec<f32>> = match (scale, bias) {
                (Some(s), Some(b)) if slot < 2 => {
                    if s.iter().zip(b).any(|(s, b)| *s == 0.0 && *b != 0.0) {
                        return Err(CompileError::layer(
                            layer,
                            "Scale",
                            "a zero scale with a non-zero bias cannot be encoded in one stage",
                        ));
                    }
                    Some(
                        s.iter()
                            .zip(b)
                            .map(|(s, b)| if *s == 0.0 { 0.0 } else { b / s })
                            .collect(),
                    )
                }
                (_, b) => b.clone(),
            };
            let all_uniform =
                scale.as_deref().is_none_or(uniform) && alu.as_deref().is_none_or(uniform);
            if all_uniform {
                SdpStage {
                    op_type,
                    alu_value: per_layer(alu.as_ref().map_or(0.0, |a| a[0]), slot, prec),
                    mul_value: per_layer(scale.as_ref().map_or(1.0, |s| s[0]), slot, prec),
                    ..base
                }
            } else {
                let blob = p.add_blob(
                    format!("{layer}-affine"),
                    pack::per_channel(t, alu.as_deref(), scale.as_deref()),
                );
                SdpStage {
                    op_type,
                    operand: Operand::PerChannel(blob),
                    ..base
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affines_merge() {
        let (s, b) = compose(Some(&[2.0]), Some(&[1.0]), Some(&[3.0]), Some(&[0.5]));
        assert_eq!(s, Some(vec![6.0]));
        assert_eq!(b, Some(vec![3.5]));
        let (s, b) = compose(Some(&[2.0]), None, Some(&[0.5]), None);
        assert_eq!((s, b), (None, None));
    }

    #[test]
    fn stages_fill_in_order_and_lut_takes_y() {
        let t = Target::new(&nvdla_hw::NV_FULL, Precision::Fp16).unwrap();
        let mut s = SdpStages::default();
        s.push(
            &t,
            Stage::Affine {
                scale: None,
                bias: Some(vec![1.0]),
            },
        )
        .unwrap();
        s.relu(&t).unwrap();
        s.push(&t, Stage::Lut(0)).unwrap();
        assert!(s.stages[0].is_some() && s.stages[1].is_none() && s.stages[2].is_some());
        assert!(s.push(&t, Stage::Pass).is_err());
        let small = Target::new(&nvdla_hw::NV_SMALL, Precision::Int8).unwrap();
        assert!(SdpStages::default().push(&small, Stage::Lut(0)).is_err());
    }
}
