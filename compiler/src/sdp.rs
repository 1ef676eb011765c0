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
use nvdla_loadable::dla::{Activation as Act, LutParam, SdpAluType, SdpOpType};

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
    /// `max(x, value)` or `min(x, value)` with one value for every element (clipping).
    Bound {
        /// [`SdpAluType::Max`] or [`SdpAluType::Min`].
        alu: SdpAluType,
        /// The bound.
        value: f32,
    },
    /// The lookup table `lut` (Y only) computing `f`.
    Lut(usize, LutFn),
}

/// The function a LUT stage computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LutFn {
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `tanh(x)`.
    Tanh,
    /// `erf(x)`.
    Erf,
}

impl LutFn {
    /// The function.
    pub fn eval(self, x: f64) -> f64 {
        match self {
            LutFn::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            LutFn::Tanh => x.tanh(),
            LutFn::Erf => crate::lut::erf(x),
        }
    }
    /// Half the input range its table covers (the function is flat beyond).
    fn range(self) -> f64 {
        match self {
            LutFn::Sigmoid => 16.0,
            LutFn::Tanh => 8.0,
            LutFn::Erf => 4.0,
        }
    }

    /// Its fp16 table.
    pub fn table(self) -> LutParam {
        match self {
            LutFn::Sigmoid => crate::lut::sigmoid(),
            LutFn::Tanh => crate::lut::tanh(),
            LutFn::Erf => crate::lut::erf_table(),
        }
    }
}

/// The stages of one SDP operation being filled.
#[derive(Debug, Clone, Default)]
pub struct SdpStages {
    stages: [Option<(Stage, Act)>; 3],
    /// A per-channel factor after the last stage that takes no stage of its own: int8
    /// counts it in the unit of the value, which the output converter absorbs (set only
    /// in int8, when a scale-only affine finds no stage left: `c_m x_m + c_o x_o` on an
    /// X1/X2-only build is `c_o (x_m c_m / c_o + x_o)`, the `c_o` here).
    post_scale: Option<Vec<f32>>,
    /// Operands read from other surfaces are refused: a Winograd convolution's SDP
    /// (NVIDIA's compiler refuses them too; per-element reads would need the operand in
    /// Winograd's padded geometry).
    pub no_operands: bool,
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
            .is_some_and(|(s, _)| matches!(s, Stage::Lut(..)))
    }

    /// Adds a stage after the used ones.
    pub fn push(&mut self, t: &Target, stage: Stage) -> std::result::Result<(), Refusal> {
        if self.no_operands && matches!(stage, Stage::Eltwise { .. }) {
            return Err("a Winograd convolution's SDP reads no other surface".into());
        }
        if let Some(post) = &mut self.post_scale {
            // Only another factor can follow a folded scale.
            return match &stage {
                Stage::Affine {
                    scale: Some(scale),
                    bias: None,
                } if scale.len() == post.len() && foldable(scale) => {
                    post.iter_mut().zip(scale).for_each(|(p, s)| *p *= s);
                    Ok(())
                }
                _ => Err("no SDP stage left after a scale folded into the output converter".into()),
            };
        }
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
        let want_y = matches!(stage, Stage::Lut(..));
        let slot = (start..3)
            .filter(|&i| !want_y || i == 2)
            .find(|&i| Self::available(t, i));
        if let (
            None,
            Stage::Affine {
                scale: Some(scale),
                bias: None,
            },
        ) = (slot, &stage)
        {
            if t.precision == Precision::Int8 && foldable(scale) && !self.is_empty() {
                self.post_scale = Some(scale.clone());
                return Ok(());
            }
        }
        let slot = slot.ok_or_else(|| {
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
    /// Only X1 and X2 have a ReLU: the Y unit has none (its activations are PReLU and the
    /// LUT; `dla_sdp_op_desc.y_op.act = RELU` is ignored by the firmware, hwarch "SDP"),
    /// so ReLU after a Y stage is refused and starts another SDP operation.
    pub fn relu(&mut self, t: &Target) -> std::result::Result<(), Refusal> {
        // relu(s v) = s relu(v) for s > 0: the ReLU goes before a positive folded scale.
        if let Some(post) = &self.post_scale {
            if !post.iter().all(|&s| s > 0.0) {
                return Err(
                    "a ReLU after a negative scale folded into the output converter".into(),
                );
            }
        }
        let slot = match self.last() {
            Some(i)
                if self.stages[i].as_ref().is_some_and(|(s, a)| {
                    *a == Act::None && !matches!(s, Stage::PRelu(_) | Stage::Lut(..))
                }) =>
            {
                i
            }
            last => {
                let start = last.map_or(0, |i| i + 1);
                (start..2)
                    .find(|&i| Self::available(t, i))
                    .ok_or_else(|| "no SDP stage with a ReLU left (Y has none)".to_string())?
            }
        };
        if slot == 2 {
            return Err("the Y stage has no ReLU".into());
        }
        let entry = self.stages[slot].get_or_insert((Stage::Pass, Act::None));
        entry.1 = Act::Relu;
        Ok(())
    }

    /// These stages with the result multiplied by a positive per-channel `factor` at
    /// the end, in int8's unit of the value (no stage of its own where the plan
    /// requantizes last anyway): how an SDP writes an activation with scales per
    /// channel ([`crate::engine::Surface::channel_scales`]).
    pub fn scale_output(&self, factor: &[f64]) -> SdpStages {
        let mut out = self.clone();
        let post = out
            .post_scale
            .get_or_insert_with(|| vec![1.0; factor.len()]);
        for (p, f) in post.iter_mut().zip(factor) {
            *p = (f64::from(*p) * f) as f32;
        }
        out
    }

    /// The per-element operand surfaces.
    pub fn operands(&self) -> Vec<SurfId> {
        self.stages
            .iter()
            .flatten()
            .filter_map(|(s, _)| match s {
                Stage::Eltwise { other, .. } => Some(*other),
                _ => None,
            })
            .collect()
    }

    /// The LUT index used, if any.
    pub fn lut(&self) -> Option<usize> {
        self.stages.iter().flatten().find_map(|(s, _)| match s {
            Stage::Lut(l, _) => Some(*l),
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
        if self.post_scale.is_some() {
            return Err(CompileError::layer(
                layer,
                "SDP",
                "a scale folded into the output converter is for int8 only",
            ));
        }
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

/// Whether a per-channel factor can be counted in the value's unit: finite and non-zero.
fn foldable(scale: &[f32]) -> bool {
    scale.iter().all(|&a| a != 0.0 && a.is_finite())
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
        shift: 0,
        truncate: 0,
        operand_precision: prec.dla(),
    };
    Ok(match stage {
        Stage::Pass => base,
        Stage::Bound { alu, value } => SdpStage {
            op_type: SdpOpType::Add,
            alu_type: *alu,
            alu_value: per_layer(*value, slot, prec),
            ..base
        },
        Stage::Lut(..) => SdpStage {
            act: Act::Lut,
            ..base
        },
        Stage::Eltwise { alu, mul, other } => SdpStage {
            op_type: if *mul { SdpOpType::Mul } else { SdpOpType::Add },
            alu_type: *alu,
            operand: Operand::of_surface(p, *other),
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

/// What an int8 SDP operation computes on its int32 input, and how its output is
/// quantized: the stages and the output converter `(scale, shift)`.
pub type Int8Encoding = ([Option<SdpStage>; 3], (i16, u8));

/// One stage of the int8 plan, before encoding.
enum Phys {
    /// `v' = (a*u/T) * (v + b/(a*u))`: from per-channel unit `u` to the unit `T` (uniform
    /// unless [`balance_rescales`] spread it).
    Affine {
        a: Vec<f64>,
        b: Vec<f64>,
        u: Vec<f64>,
        target: Vec<f64>,
        act: Act,
    },
    /// Negative values times `slope`.
    PRelu(Vec<f64>),
    /// `v alu (q_other << shift)` or `v * q_other`.
    Eltwise {
        alu: SdpAluType,
        mul: bool,
        other: SurfId,
        shift: u8,
        act: Act,
    },
    /// Only an activation.
    Pass(Act),
    /// The lookup table (Y).
    Lut,
    /// `v max|min value` (in the value's unit).
    Bound {
        alu: SdpAluType,
        value: f64,
        act: Act,
    },
}

/// Largest multiplier of a stage or converter (int16) and largest shifts.
const MAX_M: i64 = 32767;
const MAX_TRUNCATE: u32 = 63;
const MAX_ALU_SHIFT: u32 = 31;

/// Bits of headroom kept below the output unit in intermediate stages.
const GUARD_BITS: i32 = 8;

impl SdpStages {
    /// Encodes the stages for int8: the input is an int32 value whose real value is
    /// `v * unit[c]`, the output is int8 with `real = q * out_scale`; `scale_of` gives the
    /// scale of a per-element operand surface. X1/X2 compute `(v + a << shift) * m >> t`;
    /// the output converter `v * scale >> shift` makes the last step to `out_scale` and
    /// saturates.
    pub fn encode_int8(
        &self,
        p: &mut Program,
        t: &Target,
        layer: &str,
        unit: &[f64],
        out_scale: f64,
        scale_of: &dyn Fn(SurfId, usize) -> f64,
    ) -> Result<Int8Encoding> {
        let err = |m: String| CompileError::layer(layer, "SDP", m);
        let plan = self.plan_int8(t, unit, out_scale, scale_of).map_err(err)?;
        for (l, table) in plan.luts {
            p.luts[l] = table;
        }
        let phys = plan.phys;
        let lut = matches!(phys.last(), Some(Phys::Lut));
        let slots: Vec<usize> = (0..2).filter(|&i| Self::available(t, i)).collect();
        let arith = phys.len() - usize::from(lut);
        let mut out = [None; 3];
        for (ph, &slot) in phys[..arith].iter().zip(&slots) {
            out[slot] = Some(encode_int8_stage(p, t, layer, ph).map_err(err)?);
        }
        if lut {
            out[2] = Some(encode_int8_stage(p, t, layer, &Phys::Lut).map_err(err)?);
        }
        Ok((out, plan.cvt))
    }

    /// Whether [`Self::encode_int8`] can encode these stages (the int8 plan fits the
    /// build's X1/X2 stages besides a LUT), without encoding them. The lowering asks it
    /// before fusing another element-wise layer, so that a chain too long for int8 goes
    /// on in another SDP operation.
    pub fn fits_int8(
        &self,
        t: &Target,
        unit: &[f64],
        out_scale: f64,
        scale_of: &dyn Fn(SurfId, usize) -> f64,
    ) -> bool {
        self.plan_int8(t, unit, out_scale, scale_of).is_ok()
    }

    /// The int8 plan: the physical stages, the LUT tables to install (index, table) and
    /// the output converter; an error when it needs more stages than the build has.
    fn plan_int8(
        &self,
        t: &Target,
        unit: &[f64],
        out_scale: f64,
        scale_of: &dyn Fn(SurfId, usize) -> f64,
    ) -> std::result::Result<Int8Plan, String> {
        let c = unit.len();
        let mut luts = Vec::new();
        let post = self.post_scale.clone().map(|scale| Stage::Affine {
            scale: Some(scale),
            bias: None,
        });
        let sem: Vec<(&Stage, Act)> = self
            .stages
            .iter()
            .flatten()
            .map(|(s, a)| (s, *a))
            .chain(post.as_ref().map(|s| (s, Act::None)))
            .collect();
        // The unit an eltwise operand needs the value in: its scale / 2^shift, near the
        // output's unit with guard bits.
        let elt_target = |other: SurfId| -> (f64, u8) {
            // A sum's or maximum's operand has one scale (lower::channel_scales).
            let so = scale_of(other, 0);
            let sh = ((so / out_scale).log2().round() as i32 + GUARD_BITS)
                .clamp(0, MAX_ALU_SHIFT as i32);
            (so / 2f64.powi(sh), sh as u8)
        };
        let mut phys: Vec<Phys> = Vec::new();
        let mut u: Vec<f64> = unit.to_vec();
        for (i, (stage, act)) in sem.iter().enumerate() {
            // The unit the next eltwise (if this stage feeds one) needs.
            let next_elt = sem.get(i + 1).and_then(|(s, _)| match s {
                Stage::Eltwise {
                    mul: false, other, ..
                } => Some(elt_target(*other)),
                _ => None,
            });
            let intermediate = sem[i + 1..]
                .iter()
                .any(|(s, _)| matches!(s, Stage::Affine { .. } | Stage::Eltwise { .. }));
            let target = next_elt.map_or(
                if intermediate {
                    out_scale / 2f64.powi(GUARD_BITS)
                } else {
                    out_scale
                },
                |(tu, _)| tu,
            );
            match stage {
                // A multiplication alone changes only the unit the value is counted in
                // (real = v * u): the next requantizing step absorbs it. A negative unit
                // would turn a later ReLU, bound or PReLU around, so a negative factor is
                // folded only when every later stage requantizes first (an affine, a sum
                // or maximum with an operand, the LUT) and the output converter ends it.
                Stage::Affine {
                    scale: Some(scale),
                    bias: None,
                } if *act == Act::None
                    && scale.iter().all(|&a| a != 0.0 && a.is_finite())
                    && (scale.iter().all(|&a| a > 0.0)
                        || sem[i + 1..].iter().all(|(s, _)| {
                            matches!(
                                s,
                                Stage::Affine { .. }
                                    | Stage::Eltwise { mul: false, .. }
                                    | Stage::Lut(..)
                            )
                        })) =>
                {
                    for (x, &a) in u.iter_mut().zip(scale) {
                        *x *= f64::from(a);
                    }
                }
                Stage::Affine { scale, bias } => {
                    let a: Vec<f64> = (0..c)
                        .map(|k| scale.as_ref().map_or(1.0, |s| f64::from(s[k])))
                        .collect();
                    let b: Vec<f64> = (0..c)
                        .map(|k| bias.as_ref().map_or(0.0, |s| f64::from(s[k])))
                        .collect();
                    phys.push(Phys::Affine {
                        a,
                        b,
                        u: u.clone(),
                        target: vec![target; c],
                        act: *act,
                    });
                    u = vec![target; c];
                }
                Stage::PRelu(sl) => {
                    phys.push(Phys::PRelu(sl.iter().map(|&v| f64::from(v)).collect()));
                }
                Stage::Pass => phys.push(Phys::Pass(*act)),
                Stage::Bound { alu, value } => {
                    // The bound in the value's unit, which must be one for all channels.
                    let uniform_now = u.iter().all(|&x| (x - u[0]).abs() <= u[0].abs() * 1e-9);
                    if !uniform_now {
                        phys.push(Phys::Affine {
                            a: vec![1.0; c],
                            b: vec![0.0; c],
                            u: u.clone(),
                            target: vec![target; c],
                            act: Act::None,
                        });
                        u = vec![target; c];
                    }
                    phys.push(Phys::Bound {
                        alu: *alu,
                        value: f64::from(*value) / u[0],
                        act: *act,
                    });
                }
                Stage::Eltwise { alu, mul, other } => {
                    let shift = if *mul {
                        0
                    } else {
                        let (tu, sh) = elt_target(*other);
                        let uniform_at = u.iter().all(|&x| (x - tu).abs() <= tu * 1e-9);
                        if !uniform_at {
                            phys.push(Phys::Affine {
                                a: vec![1.0; c],
                                b: vec![0.0; c],
                                u: u.clone(),
                                target: vec![tu; c],
                                act: Act::None,
                            });
                            u = vec![tu; c];
                        }
                        sh
                    };
                    if *mul {
                        for (k, x) in u.iter_mut().enumerate() {
                            *x *= scale_of(*other, k);
                        }
                    }
                    phys.push(Phys::Eltwise {
                        alu: *alu,
                        mul: *mul,
                        other: *other,
                        shift,
                        act: *act,
                    });
                }
                Stage::Lut(l, f) => {
                    // The table's input: an integer at unit `2R / 2^16`, so that its 256
                    // steps of 2^8 span [-R, R] with 8 bits of interpolation.
                    let r = f.range();
                    let u_in = 2.0 * r / 65536.0;
                    let at = u.iter().all(|&x| (x - u_in).abs() <= u_in * 1e-9);
                    if !at {
                        phys.push(Phys::Affine {
                            a: vec![1.0; c],
                            b: vec![0.0; c],
                            u: u.clone(),
                            target: vec![u_in; c],
                            act: Act::None,
                        });
                    }
                    // Its output: the function at unit out_scale / 2^8 (int16 entries).
                    let u_out = out_scale / 2f64.powi(GUARD_BITS);
                    let table = crate::lut::int8_linear(-32768, 8, |x| {
                        (f.eval(x * u_in) / u_out).round().clamp(-32768.0, 32767.0) as i16
                    });
                    luts.push((*l, table));
                    phys.push(Phys::Lut);
                    u = vec![u_out; c];
                }
            }
        }
        balance_rescales(&mut phys);
        // A unit that differs per channel needs a stage to make it uniform for the output
        // converter.
        let uniform = u.iter().all(|&x| (x - u[0]).abs() <= u[0].abs() * 1e-9);
        if !uniform {
            phys.push(Phys::Affine {
                a: vec![1.0; c],
                b: vec![0.0; c],
                u: u.clone(),
                target: vec![out_scale; c],
                act: Act::None,
            });
            u = vec![out_scale; c];
        }
        let (cvt_m, cvt_s) = crate::quant::fixed_point(u[0] / out_scale, MAX_M, MAX_TRUNCATE);
        if cvt_m == 0 {
            return Err(format!(
                "the output scale {out_scale:e} is out of range of the converter for unit {:e}",
                u[0]
            ));
        }

        // Slots: X1 and X2; the Y unit (which computes in another order) only for the LUT.
        let lut = matches!(phys.last(), Some(Phys::Lut));
        let slots: Vec<usize> = (0..2).filter(|&i| Self::available(t, i)).collect();
        let arith = phys.len() - usize::from(lut);
        if arith > slots.len() {
            return Err(format!(
                "needs {arith} SDP stages besides a LUT in int8, {} has {}",
                t.hw.name,
                slots.len()
            ));
        }
        Ok(Int8Plan {
            phys,
            luts,
            cvt: (cvt_m as i16, cvt_s as u8),
        })
    }
}

/// Smallest quantized multiplier a rescale keeps before [`balance_rescales`] spreads it.
const MIN_RESCALE_M: i64 = 8;

/// Spreads a second rescale's per-channel span over the first (int8): an affine after a
/// ReLU (Keras' Conv, ReLU, BatchNormalization: scales from 5e-4 to 31 in fastmrz's
/// segmenter) needs multipliers `a[k] * T1 / T2` that one 16-bit multiplier with a common
/// shift cannot hold. When the second of two consecutive affine stages would keep fewer
/// than [`MIN_RESCALE_M`] of its smallest multiplier, the first writes channel `k` in the
/// unit `T1 * g[k]`, `g[k] = sqrt(max m / m[k])`: both stages then span the square root.
/// A positive factor per channel commutes with the first stage's ReLU. The intermediate of
/// a channel the second stage shrinks is coarser by `g[k]`, an error that stage divides by
/// more than `g[k]`.
fn balance_rescales(phys: &mut [Phys]) {
    for i in 1..phys.len() {
        let (head, tail) = phys.split_at_mut(i);
        let (
            Some(Phys::Affine {
                target: t1,
                act: act1,
                ..
            }),
            Some(Phys::Affine {
                a: a2,
                u: u2,
                target: t2,
                ..
            }),
        ) = (head.last_mut(), tail.first_mut())
        else {
            continue;
        };
        if !matches!(act1, Act::None | Act::Relu) || u2 != t1 {
            continue;
        }
        let m: Vec<f64> = (0..a2.len())
            .map(|k| (a2[k] * u2[k] / t2[k]).abs())
            .collect();
        let (q, _) = crate::quant::fixed_point_common(&m, MAX_M, MAX_TRUNCATE);
        let thin = m
            .iter()
            .zip(&q)
            .any(|(&r, &q)| r != 0.0 && r.is_finite() && q.abs() < MIN_RESCALE_M);
        let top = m
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .fold(0.0f64, f64::max);
        if !thin || top == 0.0 {
            continue;
        }
        for k in 0..m.len() {
            if m[k] > 0.0 && m[k].is_finite() {
                t1[k] *= (top / m[k]).sqrt();
            }
        }
        u2.clone_from(t1);
    }
}

/// What [`SdpStages::plan_int8`] decides.
struct Int8Plan {
    phys: Vec<Phys>,
    luts: Vec<(usize, LutParam)>,
    cvt: (i16, u8),
}

fn encode_int8_stage(
    p: &mut Program,
    t: &Target,
    layer: &str,
    ph: &Phys,
) -> std::result::Result<SdpStage, String> {
    use nvdla_loadable::dla::Precision as DP;
    let base = SdpStage {
        op_type: SdpOpType::None,
        alu_type: SdpAluType::Sum,
        operand: Operand::PerLayer(0),
        alu_value: 0,
        mul_value: 0,
        act: Act::None,
        shift: 0,
        truncate: 0,
        operand_precision: DP::Int16,
    };
    Ok(match ph {
        Phys::Pass(act) => SdpStage { act: *act, ..base },
        Phys::Lut => SdpStage {
            act: Act::Lut,
            ..base
        },
        Phys::Bound { alu, value, act } => {
            let mut sh = 0u32;
            while sh < MAX_ALU_SHIFT && value.abs() / 2f64.powi(sh as i32) > MAX_M as f64 {
                sh += 1;
            }
            SdpStage {
                op_type: SdpOpType::Add,
                alu_type: *alu,
                alu_value: ((value / 2f64.powi(sh as i32)).round() as i64).clamp(-MAX_M, MAX_M)
                    as i32,
                shift: sh as u8,
                act: *act,
                ..base
            }
        }
        Phys::PRelu(slopes) => {
            let (m, tr) = crate::quant::fixed_point_common(slopes, MAX_M, MAX_TRUNCATE);
            let operand = if m.iter().all(|&x| x == m[0]) {
                Operand::PerLayer(0)
            } else {
                Operand::PerChannel(p.add_blob(
                    format!("{layer}-slopes"),
                    crate::pack::per_channel_i16(t, None, Some(&m)),
                ))
            };
            SdpStage {
                op_type: SdpOpType::Mul,
                operand,
                mul_value: m[0] as i32,
                truncate: tr as u8,
                act: Act::Prelu,
                ..base
            }
        }
        Phys::Eltwise {
            alu,
            mul,
            other,
            shift,
            act,
        } => SdpStage {
            op_type: if *mul { SdpOpType::Mul } else { SdpOpType::Add },
            alu_type: *alu,
            operand: Operand::of_surface(p, *other),
            shift: *shift,
            act: *act,
            operand_precision: DP::Int8,
            ..base
        },
        Phys::Affine {
            a,
            b,
            u,
            target,
            act,
        } => {
            let c = a.len();
            let mut alu = vec![0.0f64; c];
            let mut mul = vec![0.0f64; c];
            for k in 0..c {
                let au = a[k] * u[k];
                if au == 0.0 {
                    if b[k] != 0.0 {
                        return Err(
                            "a channel scaled by 0 with a bias cannot be encoded in int8".into(),
                        );
                    }
                    continue;
                }
                alu[k] = b[k] / au;
                mul[k] = au / target[k];
            }
            let has_alu = alu.iter().any(|&x| x != 0.0);
            // ALU operand: int16 after a common left shift.
            let peak = alu.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let mut sh = 0u32;
            while sh < MAX_ALU_SHIFT && peak / 2f64.powi(sh as i32) > MAX_M as f64 {
                sh += 1;
            }
            let alu_q: Vec<i64> = alu
                .iter()
                .map(|x| ((x / 2f64.powi(sh as i32)).round() as i64).clamp(-MAX_M, MAX_M))
                .collect();
            let (mul_q, tr) = crate::quant::fixed_point_common(&mul, MAX_M, MAX_TRUNCATE);
            if mul.iter().zip(&mul_q).any(|(r, q)| *r != 0.0 && *q == 0) {
                return Err(format!(
                    "per-channel rescale factors span more than the 16-bit multiplier holds \
                     (from {:e} to {:e})",
                    mul.iter()
                        .filter(|x| **x != 0.0)
                        .fold(f64::MAX, |m, x| m.min(x.abs())),
                    mul.iter().fold(0.0f64, |m, x| m.max(x.abs()))
                ));
            }
            let op_type = if has_alu {
                SdpOpType::Both
            } else {
                SdpOpType::Mul
            };
            let same = |v: &[i64]| v.iter().all(|&x| x == v[0]);
            let operand = if same(&mul_q) && same(&alu_q) {
                Operand::PerLayer(0)
            } else {
                Operand::PerChannel(p.add_blob(
                    format!("{layer}-requant"),
                    crate::pack::per_channel_i16(t, has_alu.then_some(&alu_q[..]), Some(&mul_q)),
                ))
            };
            SdpStage {
                op_type,
                operand,
                alu_value: alu_q[0] as i32,
                mul_value: mul_q[0] as i32,
                shift: sh as u8,
                truncate: tr as u8,
                act: *act,
                ..base
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
        s.push(&t, Stage::Lut(0, LutFn::Sigmoid)).unwrap();
        assert!(s.stages[0].is_some() && s.stages[1].is_none() && s.stages[2].is_some());
        assert!(s.push(&t, Stage::Pass).is_err());
        let small = Target::new(&nvdla_hw::NV_SMALL, Precision::Int8).unwrap();
        assert!(SdpStages::default()
            .push(&small, Stage::Lut(0, LutFn::Sigmoid))
            .is_err());
    }

    #[test]
    fn relu_never_lands_on_the_y_stage() {
        let t = Target::new(&nvdla_hw::NV_FULL, Precision::Fp16).unwrap();
        let affine = || Stage::Affine {
            scale: Some(vec![2.0]),
            bias: Some(vec![1.0]),
        };
        // X1 affine, X2 PReLU, Y affine: a ReLU after Y needs another operation.
        let mut s = SdpStages::default();
        s.push(&t, affine()).unwrap();
        s.push(&t, Stage::PRelu(vec![0.1])).unwrap();
        s.push(&t, affine()).unwrap();
        assert!(s.stages[2].is_some());
        let before = format!("{s:?}");
        assert!(s.relu(&t).is_err());
        assert_eq!(format!("{s:?}"), before, "a refused ReLU changes nothing");
        // X1 PReLU, then ReLU: a pass-through X2 takes it.
        let mut s = SdpStages::default();
        s.push(&t, Stage::PRelu(vec![0.1])).unwrap();
        s.relu(&t).unwrap();
        assert!(matches!(s.stages[1], Some((Stage::Pass, Act::Relu))));
    }

    #[test]
    fn a_wide_rescale_after_a_relu_spreads_over_both_stages() {
        // Keras' conv bias and ReLU, then a batch-norm whose scales span 6.5e4.
        let a2 = vec![4.8e-4, 31.2, 1.0, -2.0];
        let c = a2.len();
        let stage = |a: Vec<f64>, u: f64, t: f64, act: Act| Phys::Affine {
            a,
            b: vec![0.25; c],
            u: vec![u; c],
            target: vec![t; c],
            act,
        };
        let mut phys = vec![
            stage(vec![1.0; c], 1e-3, 2f64.powi(-12), Act::Relu),
            stage(a2.clone(), 2f64.powi(-12), 2f64.powi(-4), Act::None),
        ];
        let muls = |p: &[Phys]| -> Vec<Vec<f64>> {
            p.iter()
                .map(|s| match s {
                    Phys::Affine { a, u, target, .. } => {
                        (0..c).map(|k| (a[k] * u[k] / target[k]).abs()).collect()
                    }
                    _ => unreachable!(),
                })
                .collect()
        };
        let before = muls(&phys);
        let (q, _) = crate::quant::fixed_point_common(&before[1], MAX_M, MAX_TRUNCATE);
        assert!(q.iter().any(|&q| q.abs() < MIN_RESCALE_M), "{q:?}");
        balance_rescales(&mut phys);
        let after = muls(&phys);
        for m in &after {
            let (q, _) = crate::quant::fixed_point_common(m, MAX_M, MAX_TRUNCATE);
            assert!(q.iter().all(|&q| q.abs() >= 64), "{q:?}");
        }
        // The same rescale overall, channel by channel.
        for k in 0..c {
            let (x, y) = (before[0][k] * before[1][k], after[0][k] * after[1][k]);
            assert!((x - y).abs() <= 1e-12 * x, "channel {k}: {x} {y}");
        }
        // A narrow span is left alone.
        let mut narrow = vec![
            stage(vec![1.0; c], 1e-3, 2f64.powi(-12), Act::Relu),
            stage(
                vec![0.5, 2.0, 1.0, -1.0],
                2f64.powi(-12),
                2f64.powi(-4),
                Act::None,
            ),
        ];
        let before = muls(&narrow);
        balance_rescales(&mut narrow);
        assert_eq!(muls(&narrow), before);
    }

    #[test]
    fn int8_folds_a_trailing_scale_into_the_output_converter() {
        // c_m x_m + c_o x_o on an X1/X2-only build: c_o (x_m c_m / c_o + x_o).
        let int8 = Target::new(&nvdla_hw::NV_SMALL, Precision::Int8).unwrap();
        let fp16 = Target::new(&nvdla_hw::NV_SMALL, Precision::Fp16).unwrap();
        let scale = |v: f32| Stage::Affine {
            scale: Some(vec![v; 2]),
            bias: None,
        };
        let sum = || Stage::Eltwise {
            alu: SdpAluType::Sum,
            mul: false,
            other: SurfId(1),
        };
        let mut s = SdpStages::default();
        s.push(&int8, scale(0.25)).unwrap();
        s.push(&int8, sum()).unwrap();
        s.push(&int8, scale(2.0)).unwrap();
        assert_eq!(s.post_scale, Some(vec![2.0; 2]));
        s.relu(&int8).unwrap();
        assert!(matches!(
            s.stages[1],
            Some((Stage::Eltwise { .. }, Act::Relu))
        ));
        // A further factor composes, anything else is refused unchanged.
        s.push(&int8, scale(-3.0)).unwrap();
        assert_eq!(s.post_scale, Some(vec![-6.0; 2]));
        let before = format!("{s:?}");
        assert!(s.relu(&int8).is_err());
        assert!(s.push(&int8, Stage::Pass).is_err());
        assert_eq!(format!("{s:?}"), before);
        // The plan: a requantizing affine and the sum in X1 and X2, the factor in the
        // converter. The sum counts in the operand's unit with 8 guard bits (2^-12), so
        // the converter multiplies by -6 * 2^-12 / 2^-4 = -6/256.
        let plan = s.plan_int8(&int8, &[2f64.powi(-8); 2], 2f64.powi(-4), &|_, _| {
            2f64.powi(-4)
        });
        let plan = plan.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.phys.len(), 2);
        assert!(matches!(plan.phys[1], Phys::Eltwise { .. }));
        let (m, sh) = plan.cvt;
        assert!(
            (f64::from(m) / 2f64.powi(i32::from(sh)) + 6.0 / 256.0).abs() < 1e-6,
            "{m} >> {sh}"
        );
        // fp16 has no converter scale: the third stage is refused.
        let mut s = SdpStages::default();
        s.push(&fp16, scale(0.25)).unwrap();
        s.push(&fp16, sum()).unwrap();
        assert!(s.push(&fp16, scale(2.0)).is_err());
        // Nor is a zero factor folded (it would lose the unit).
        let mut s = SdpStages::default();
        s.push(&int8, scale(0.25)).unwrap();
        s.push(&int8, sum()).unwrap();
        assert!(s.push(&int8, scale(0.0)).is_err());
    }
}
