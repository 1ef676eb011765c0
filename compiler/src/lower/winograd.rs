//! Winograd convolution F(2x2, 3x3) (`CONV_MODE = WINOGRAD`, nv_full's convolution core):
//! when a 3x3 stride-1 convolution takes it, its geometry, and the weight transform.
//!
//! The facts and their sources are in docs/research/winograd.md: CDMA pads the input to
//! an "extended" cube of the output plus 4 in each direction (output rounded up to
//! multiples of 4), CSC transforms each 4x4 input tile (`Bᵀ d B`), CMAC multiplies it by
//! the pre-transformed weight tile `G g Gᵀ` and post-adds (`Aᵀ m A`), CACC and SDP then
//! write the padded output. 16 multiplies per channel, kernel and 2x2 outputs instead of
//! 36.

use super::conv::ConvSpec;
use super::Lowering;
use crate::engine::{SurfKind, Winograd};
use crate::ir::{Node, Op, TensorId};
use crate::target::{Precision, Target};

/// `D_PRA_CFG.PRA_TRUNCATE` of int8 Winograd. `Bᵀ d B` sums four inputs with signs, up
/// to 4 x 128 in magnitude, and saturates to int8 after the shift (precision.rst,
/// "pra_trunc"): 2 never saturates. Measured on ResNet-50 (torchvision, int8, nv_full,
/// cosine to the fp32 output): 0.9773 with 0, 0.9778 with 1, 0.9801 with 2, against
/// 0.9810 for direct convolution; saturation costs more than the two bits.
pub(super) const INT8_PRA_TRUNCATE: u8 = 2;

/// `G` of F(2x2, 3x3) (hwarch "Winograd"; nvdla/hw `format.rst`): `U = G g Gᵀ`.
const G: [[f32; 3]; 4] = [
    [1.0, 0.0, 0.0],
    [0.5, 0.5, 0.5],
    [0.5, -0.5, 0.5],
    [0.0, 0.0, 1.0],
];

/// The 4x4 tile `G g Gᵀ` of every kernel and channel of 3x3 weights `w[k][c][3][3]`, as
/// `u[k][c][16]` (row-major tiles), computed in f32 as NVIDIA's compiler does (`G g`, then
/// `· Gᵀ`).
pub fn transform_weights(w: &[f32]) -> Vec<f32> {
    let mut u = Vec::with_capacity(w.len() / 9 * 16);
    for g in w.chunks_exact(9) {
        let mut t = [[0.0f32; 3]; 4];
        for (i, row) in t.iter_mut().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                *v = (0..3).map(|a| G[i][a] * g[a * 3 + j]).sum();
            }
        }
        for row in &t {
            for gj in &G {
                u.push((0..3).map(|b| row[b] * gj[b]).sum());
            }
        }
    }
    u
}

/// The geometry of a Winograd convolution with a `w x h x c` input, a real output of
/// `out = [h, w]` and padding `[top, left, bottom, right]`, or `None` where the hardware
/// rules exclude it: outputs rounded up to multiples of 4 of at least 8, CDMA's bottom and
/// right padding within their 6-bit fields.
pub fn geometry(t: &Target, input: [u32; 3], out: [u32; 2], pad: [u32; 4]) -> Option<Winograd> {
    let [w, h, c] = input;
    let out_p = [out[0].next_multiple_of(4), out[1].next_multiple_of(4)];
    if out_p[0] < 8 || out_p[1] < 8 {
        return None;
    }
    let ext_w = out_p[1] + 4;
    let ext_h = out_p[0] + 4;
    let bottom = ext_h.checked_sub(h + pad[0])?;
    let right = ext_w.checked_sub(w + pad[1])?;
    if bottom > 63 || right > 63 {
        return None;
    }
    let cpa = t.channels_per_atom();
    Some(Winograd {
        out: out_p,
        ext: [ext_w, ext_h, c.div_ceil(cpa) * cpa],
        pad: [pad[0], pad[1], bottom, right],
        pra_truncate: match t.precision {
            Precision::Int8 => INT8_PRA_TRUNCATE,
            Precision::Fp16 => 0,
        },
    })
}

/// CBUF entries of one extended input row (`ENTRY_PER_SLICE + 1`: CSC reads 4x4 tiles of
/// 4 channels, 128 bytes, per entry; C model `csc`, "entry_per_slice").
pub fn entries_per_row(t: &Target, g: &Winograd) -> u32 {
    g.ext[0] * g.ext[2] * t.bpe() / t.cbuf_entry_bytes()
}

impl Lowering<'_> {
    /// The Winograd geometry of convolution `spec` of node `n`, when `--winograd` is on and
    /// the layer takes it: a build with Winograd and 128-byte CBUF entries; a 3x3 kernel
    /// at stride 1 without dilation; a convolution of its own (no partial sums, no
    /// preset destination); an output that is the layer's own new activation (not a
    /// network output, nor a window of a concatenation: the padded rows and columns are
    /// written too); fewer MAC cycles than direct convolution (4 per padded output
    /// against 9 per output); the whole input beside one kernel group in the CBUF.
    pub(super) fn winograd_plan(&self, n: &Node, spec: &ConvSpec) -> Option<Winograd> {
        let t = self.t;
        let s = self.p.surface(spec.src);
        if !(self.winograd && t.hw.features.winograd && t.cbuf_entry_bytes() == 128)
            || s.pixel
            || spec.kernel != [3, 3]
            || spec.stride != [1, 1]
            || spec.dilation != [1, 1]
            || spec.accumulate.is_some()
            || spec.dst.is_some()
        {
            return None;
        }
        let out_t = self.out_tensor(n).ok()?;
        if !self.private_output(out_t) {
            return None;
        }
        let g = geometry(t, [s.w, s.h, s.c], spec.out, spec.pad)?;
        if 4 * g.out[0] * g.out[1] >= 9 * spec.out[0] * spec.out[1] {
            return None;
        }
        let data = (entries_per_row(t, &g) * g.ext[1]).div_ceil(t.cbuf_entries_per_bank());
        let weights = t.min_banks_for_weights(16 * g.ext[2] * t.bpe());
        (data + weights <= t.hw.cbuf_banks).then_some(g)
    }

    /// Whether the surface a convolution producing `t` writes (after the element-wise
    /// layers its SDP may take, which never include one with a second input in Winograd
    /// mode) is a new activation of its own: not a network output, not a concatenation's
    /// window, not already made.
    fn private_output(&self, mut t: TensorId) -> bool {
        let g = self.g;
        loop {
            if g.outputs.contains(&t) || self.views.contains_key(&t) || self.surf.contains_key(&t) {
                return false;
            }
            let consumers = g.consumers(t);
            let [next] = consumers.as_slice() else {
                return true;
            };
            let n = &g.nodes[next.0];
            let fusable = matches!(
                n.op,
                Op::Activation(_)
                    | Op::ChannelAffine { .. }
                    | Op::BatchNorm { .. }
                    | Op::Power { .. }
            ) && n.inputs.len() == 1;
            if self.done[next.0] || !fusable {
                return true;
            }
            match self.out_tensor(n) {
                Ok(out) => t = out,
                Err(_) => return true,
            }
        }
    }

    /// Makes surface `dst` (a new activation) hold Winograd's padded output: lines of
    /// `g.out[1]` pixels, planes of `g.out[0]` lines.
    pub(super) fn pad_for_winograd(&mut self, dst: crate::engine::SurfId, g: &Winograd) {
        let atom = self.t.atom();
        let cpa = self.t.channels_per_atom();
        let s = &mut self.p.surfaces[dst.0];
        debug_assert!(matches!(s.kind, SurfKind::Pool));
        s.line_stride = g.out[1] * atom;
        s.surf_stride = s.line_stride * g.out[0];
        s.size = s.surf_stride * s.c.div_ceil(cpa);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A` is the 2x2 valid convolution (correlation) of the 4x4
    /// tile `d` with the 3x3 kernel `g`.
    #[test]
    fn transformed_weights_give_the_direct_convolution() {
        let g: Vec<f32> = (0..9).map(|i| (i as f32 - 3.5) * 0.25).collect();
        let d: Vec<f32> = (0..16).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
        let u = transform_weights(&g);
        let bt = [
            [1.0, 0.0, -1.0, 0.0],
            [0.0, 1.0, 1.0, 0.0],
            [0.0, -1.0, 1.0, 0.0],
            [0.0, 1.0, 0.0, -1.0f32],
        ];
        let at = [[1.0, 1.0, 1.0, 0.0], [0.0, 1.0, -1.0, -1.0f32]];
        let mut v = [0.0f32; 16];
        for i in 0..4 {
            for j in 0..4 {
                v[i * 4 + j] = (0..4)
                    .flat_map(|a| (0..4).map(move |b| (a, b)))
                    .map(|(a, b)| bt[i][a] * d[a * 4 + b] * bt[j][b])
                    .sum();
            }
        }
        for y in 0..2 {
            for x in 0..2 {
                let got: f32 = (0..4)
                    .flat_map(|a| (0..4).map(move |b| (a, b)))
                    .map(|(a, b)| at[y][a] * u[a * 4 + b] * v[a * 4 + b] * at[x][b])
                    .sum();
                let want: f32 = (0..3)
                    .flat_map(|r| (0..3).map(move |s| (r, s)))
                    .map(|(r, s)| g[r * 3 + s] * d[(y + r) * 4 + x + s])
                    .sum();
                assert!((got - want).abs() < 1e-4, "({y},{x}): {got} vs {want}");
            }
        }
    }

    #[test]
    fn geometry_pads_outputs_to_fours_and_refuses_small_ones() {
        let t = Target::new(&nvdla_hw::NV_FULL, Precision::Fp16).unwrap();
        // 56x56x64, pad 1: output 56x56, extended 60x60x64, bottom/right padding 3.
        let g = geometry(&t, [56, 56, 64], [56, 56], [1, 1, 1, 1]).unwrap();
        assert_eq!(
            (g.out, g.ext, g.pad),
            ([56, 56], [60, 60, 64], [1, 1, 3, 3])
        );
        assert_eq!(entries_per_row(&t, &g), 60);
        // 7x7x20 fp16: output 8x8, channels to 32 (whole 32-byte atoms).
        let g = geometry(&t, [7, 7, 20], [7, 7], [1, 1, 1, 1]).unwrap();
        assert_eq!((g.out, g.ext, g.pad), ([8, 8], [12, 12, 32], [1, 1, 4, 4]));
        // A 4x4 output would be below the hardware's 8.
        assert!(geometry(&t, [4, 4, 16], [4, 4], [1, 1, 1, 1]).is_none());
        let t8 = Target::new(&nvdla_hw::NV_FULL, Precision::Int8).unwrap();
        let g = geometry(&t8, [14, 14, 40], [12, 12], [0; 4]).unwrap();
        assert_eq!(
            (g.ext, g.pad, g.pra_truncate),
            ([16, 16, 64], [0, 0, 2, 2], 2)
        );
    }
}
