//! Packing constants into the layouts the engines read.

use crate::target::{Precision, Target};
use half::f16;

/// A value in the register / memory encoding of `p` (fp16 bits for fp16).
pub fn encode(v: f32, p: Precision) -> i32 {
    match p {
        Precision::Fp16 => i32::from(f16::from_f32(v).to_bits()),
        // int8 values are quantised by the caller.
        Precision::Int8 => v.round().clamp(-128.0, 127.0) as i32,
    }
}

/// `out` with zeros to a multiple of 128 bytes (every weight blob's unit).
fn padded_to_128(mut out: Vec<u8>) -> Vec<u8> {
    let padded = out.len().next_multiple_of(128);
    out.resize(padded, 0);
    out
}

fn push(out: &mut Vec<u8>, v: f32, p: Precision) {
    match p {
        Precision::Fp16 => out.extend_from_slice(&f16::from_f32(v).to_bits().to_le_bytes()),
        Precision::Int8 => out.push(v.round().clamp(-128.0, 127.0) as i8 as u8),
    }
}

/// Direct-convolution weights `w[k][c][r][s]` (`kernels x channels x kh x kw`) in the
/// CBUF order (hwarch "Weight Format"; the same layout the VP's CDMA decodes): groups of
/// kernels-per-group kernels; inside a group, blocks of atomic-C channels; inside a block,
/// kernel positions (row, column); then the kernels of the group; then the block's
/// channels. Padded with zeros to a multiple of 128 bytes.
pub fn conv_weights(
    t: &Target,
    w: &[f32],
    kernels: usize,
    channels: usize,
    kh: usize,
    kw: usize,
) -> Vec<u8> {
    let p = t.precision;
    let group = t.kernels_per_group() as usize;
    let block = t.weight_channel_block() as usize;
    let mut out = Vec::with_capacity(w.len() * p.bytes() as usize + 128);
    for g0 in (0..kernels).step_by(group) {
        let g1 = (g0 + group).min(kernels);
        for c0 in (0..channels).step_by(block) {
            let c1 = (c0 + block).min(channels);
            for r in 0..kh {
                for s in 0..kw {
                    for k in g0..g1 {
                        for c in c0..c1 {
                            push(&mut out, w[((k * channels + c) * kh + r) * kw + s], p);
                        }
                    }
                }
            }
        }
    }
    padded_to_128(out)
}

/// Winograd weight tiles `u[k][c][16]` (`kernels x channels`, from
/// [`crate::lower::winograd::transform_weights`]) in the order CDMA and CSC read them
/// (nvdla/hw `format.rst`, "Winograd weight"; docs/research/winograd.md §2): groups of
/// kernels-per-group kernels; inside a group, channels in fours (`channels_ext`, a
/// multiple of 4; channels past `channels` are zero); then the group's kernels; then the
/// 16 tile positions; then the 4 channels. Padded with zeros to 128 bytes.
pub fn winograd_weights(
    t: &Target,
    u: &[f32],
    kernels: usize,
    channels: usize,
    channels_ext: usize,
) -> Vec<u8> {
    let p = t.precision;
    let group = t.kernels_per_group() as usize;
    let mut out = Vec::with_capacity(kernels * channels_ext * 16 * p.bytes() as usize + 128);
    for g0 in (0..kernels).step_by(group) {
        for c0 in (0..channels_ext).step_by(4) {
            for k in g0..(g0 + group).min(kernels) {
                for pos in 0..16 {
                    for c in c0..c0 + 4 {
                        let v = if c < channels {
                            u[(k * channels + c) * 16 + pos]
                        } else {
                            0.0
                        };
                        push(&mut out, v, p);
                    }
                }
            }
        }
    }
    padded_to_128(out)
}

/// Pre-extended image-mode weights `w[k][kc][r]` (`kernels x kernel_channels x rows`, one
/// column; [`crate::lower::image::pre_extend`]) for post-extension `y_ext`: as
/// [`conv_weights`] for 1; else in each kernel group, per MAC operation of `y_ext` rows
/// (the last one the rows left), the group's kernels, each with its rows of `kc` channels
/// (nvdla/sw `postChnlExtWtsForIMG`; the order the VP's CDMA reads). Padded to 128 bytes.
pub fn image_weights(
    t: &Target,
    w: &[f32],
    kernels: usize,
    kc: usize,
    rows: usize,
    y_ext: usize,
) -> Vec<u8> {
    if y_ext <= 1 {
        return conv_weights(t, w, kernels, kc, rows, 1);
    }
    let p = t.precision;
    let group = t.kernels_per_group() as usize;
    let mut out = Vec::with_capacity(w.len() * p.bytes() as usize + 128);
    for g0 in (0..kernels).step_by(group) {
        for r0 in (0..rows).step_by(y_ext) {
            let r1 = (r0 + y_ext).min(rows);
            for k in g0..(g0 + group).min(kernels) {
                for r in r0..r1 {
                    for e in 0..kc {
                        push(&mut out, w[(k * kc + e) * rows + r], p);
                    }
                }
            }
        }
    }
    padded_to_128(out)
}

/// Per-channel operand data: one value (or an ALU, MUL pair) per channel, `C` elements
/// packed, padded to whole memory atoms.
pub fn per_channel(t: &Target, alu: Option<&[f32]>, mul: Option<&[f32]>) -> Vec<u8> {
    let p = t.precision;
    let n = alu.or(mul).map_or(0, |v| v.len());
    let mut out = Vec::new();
    for i in 0..n {
        if let Some(a) = alu {
            push(&mut out, a[i], p);
        }
        if let Some(m) = mul {
            push(&mut out, m[i], p);
        }
    }
    let padded = out.len().next_multiple_of(t.atom() as usize);
    out.resize(padded.max(t.atom() as usize), 0);
    out
}

/// Per-channel int16 operands (ALU, MUL pairs when both), padded to whole atoms.
pub fn per_channel_i16(t: &Target, alu: Option<&[i64]>, mul: Option<&[i64]>) -> Vec<u8> {
    let n = alu.or(mul).map_or(0, <[i64]>::len);
    let mut out = Vec::with_capacity(n * 4);
    for i in 0..n {
        for v in [alu, mul].into_iter().flatten() {
            out.extend_from_slice(&(v[i].clamp(-32768, 32767) as i16).to_le_bytes());
        }
    }
    let padded = out.len().next_multiple_of(t.atom() as usize);
    out.resize(padded.max(t.atom() as usize), 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_order_groups_blocks_positions_kernels_channels() {
        let t = Target::new(&nvdla_hw::NV_FULL, Precision::Fp16).unwrap();
        // 2 kernels, 2 channels, 1x2 kernel: w[k][c][0][s] = k*100 + c*10 + s.
        let mut w = vec![0.0; 8];
        for k in 0..2 {
            for c in 0..2 {
                for s in 0..2 {
                    w[(k * 2 + c) * 2 + s] = (k * 100 + c * 10 + s) as f32;
                }
            }
        }
        let b = conv_weights(&t, &w, 2, 2, 1, 2);
        assert_eq!(b.len(), 128);
        let vals: Vec<f32> = b[..16]
            .chunks(2)
            .map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
            .collect();
        // s=0: k0 c0, k0 c1, k1 c0, k1 c1; then s=1.
        assert_eq!(vals, [0.0, 10.0, 100.0, 110.0, 1.0, 11.0, 101.0, 111.0]);
    }

    #[test]
    fn winograd_order_groups_channel_fours_kernels_positions_channels() {
        let t = Target::new(&nvdla_hw::NV_FULL, Precision::Fp16).unwrap();
        // 2 kernels, 5 channels (extended to 8): u[k][c][pos] = k*1000 + c*100 + pos.
        let u: Vec<f32> = (0..2 * 5 * 16)
            .map(|i| ((i / 80) * 1000 + (i / 16 % 5) * 100 + i % 16) as f32)
            .collect();
        let b = winograd_weights(&t, &u, 2, 5, 8);
        assert_eq!(b.len(), 2 * 8 * 16 * 2);
        let vals: Vec<f32> = b
            .chunks(2)
            .map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
            .collect();
        // Channels 0-3 of kernel 0, position 0, then position 1.
        assert_eq!(
            &vals[..8],
            &[0.0, 100.0, 200.0, 300.0, 1.0, 101.0, 201.0, 301.0]
        );
        // Kernel 1 follows kernel 0's 16 positions.
        assert_eq!(vals[64], 1000.0);
        // Channels 4-7: channel 4, then zeros.
        assert_eq!(&vals[128..132], &[400.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn per_channel_pairs() {
        let t = Target::new(&nvdla_hw::NV_FULL, Precision::Fp16).unwrap();
        let b = per_channel(&t, Some(&[1.0, 2.0]), Some(&[3.0, 4.0]));
        assert_eq!(b.len(), 32);
        assert_eq!(&b[..2], &f16::from_f32(1.0).to_bits().to_le_bytes());
        assert_eq!(&b[2..4], &f16::from_f32(3.0).to_bits().to_le_bytes());
    }
}
