//! Image input (`--image-input`, part of `-O`): a network input read by one convolution
//! becomes a pitch-linear image of 4 components per pixel (`A8B8G8R8` in int8,
//! `A16B16G16R16_F` in fp16), and the convolution reads it in the convolution core's image
//! mode, as NVIDIA's compiler does for `nhwc` inputs.
//!
//! Why: in feature mode a kernel tap costs a MAC cycle per output and kernel group
//! whatever the channels, so a first layer of 3 channels uses 3 of the 64 lanes of
//! nv_full's MAC cells (ResNet-50's 7x7 stem: 49 cycles per output, 2 % of the MACs). In
//! image mode CSC reads a kernel row of `S` pixels as one vector of `4 S` channels
//! ("pre-extension": the weights are stored as `R x 1` kernels of `4 S` channels), and
//! with post-extension (`D_POST_Y_EXTENSION`) packs 2 or 4 such rows in one MAC
//! operation: the stem takes 4 cycles.
//!
//! Facts (nvdla/sw `ConvCoreNode.cpp`, `calculateEPS`, `optionalChnlExtForIMG`; NVIDIA's
//! nv_full `nhwc` LeNet loadables): `ENTRY_PER_SLICE = ceil((pad_left + W + pad_right) · 4 ·
//! bpe / entry bytes)`; post-extension 4 when `12 · stride_x + 4 S <= atomic C` and `4 S <=
//! atomic C / 4`, 2 when `4 · stride_x + 4 S <= atomic C` and `4 S <= atomic C / 2`, none
//! when the stride exceeds the kernel width; the descriptor's `post_extension` is the
//! factor halved; `PIXEL_SIGN_OVERRIDE` signed (int8 values, not pixels); lines of `4 W ·
//! bpe` bytes rounded up to 32.

use crate::target::Target;

/// Components per pixel of the image formats used.
pub const COMPONENTS: u32 = 4;

/// How a convolution reads an image input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageConv {
    /// Kernel rows per MAC operation (post-extension: 1, 2 or 4).
    pub y_ext: u32,
    /// Channels of a pre-extended kernel row: `4 S`.
    pub kernel_channels: u32,
    /// CBUF entries of one padded input line.
    pub entries_per_slice: u32,
}

/// Bytes between lines of a `w`-pixel image surface of the target's precision.
pub fn line_stride(t: &Target, w: u32) -> u32 {
    (w * COMPONENTS * t.bpe()).next_multiple_of(32)
}

/// The image-mode reading of a convolution (kernel `[h, w]`, stride `[y, x]`, padding
/// `[top, left, bottom, right]`) of a `[c, h, w]` network input, or `None` where it does
/// not apply or does not pay: builds whose MAC cells take fewer than 32 channels
/// (nv_small's 8 gain nothing), more than 4 input channels, groups, dilation, a
/// pre-extended row wider than a MAC cell, or a kernel whose rows do not fit the CBUF
/// beside one kernel group (a larger input is read in row chunks, as in feature mode).
pub fn plan(
    t: &Target,
    input: [u32; 3],
    kernel: [u32; 2],
    stride: [u32; 2],
    pad: [u32; 4],
    dilation: [u32; 2],
    groups: usize,
) -> Option<ImageConv> {
    let [ch, h, w] = input;
    let ac = t.hw.atomic_c;
    let [kh, kw] = kernel;
    let [sy, sx] = stride;
    let kc = COMPONENTS * kw;
    if ac < 32
        || ch > COMPONENTS
        || groups != 1
        || dilation != [1, 1]
        || kc > ac
        || kh > 32
        || !(1..=8).contains(&sy)
        || !(1..=8).contains(&sx)
        || pad.iter().any(|&p| p > 31)
    {
        return None;
    }
    let y_ext = if sx > kw {
        1
    } else if 3 * COMPONENTS * sx + kc <= ac && kc <= ac / 4 {
        4
    } else if COMPONENTS * sx + kc <= ac && kc <= ac / 2 {
        2
    } else {
        1
    };
    let [_, pl, _, pr] = pad;
    let eps = ((pl + w + pr) * COMPONENTS * t.bpe()).div_ceil(t.cbuf_entry_bytes());
    let data_banks = (eps * kh.min(h)).div_ceil(t.cbuf_entries_per_bank());
    let weight_banks = t.min_banks_for_weights(kh * kc * t.bpe());
    (data_banks + weight_banks <= t.hw.cbuf_banks).then_some(ImageConv {
        y_ext,
        kernel_channels: kc,
        entries_per_slice: eps,
    })
}

/// Weights `w[k][c][r][s]` pre-extended for image input: `w'[k][4 s + c][r][0]`, zero for
/// the components past the input's `c` channels.
pub fn pre_extend(w: &[f32], k: usize, c: usize, r: usize, s: usize) -> Vec<f32> {
    let kc = COMPONENTS as usize * s;
    let mut out = vec![0.0f32; k * kc * r];
    for kk in 0..k {
        for cc in 0..c {
            for rr in 0..r {
                for ss in 0..s {
                    let e = ss * COMPONENTS as usize + cc;
                    out[(kk * kc + e) * r + rr] = w[((kk * c + cc) * r + rr) * s + ss];
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Precision;

    /// A `kh x kw` convolution of `c` channels with stride `st` and padding `kh / 2`.
    fn conv(t: &Target, c: u32, size: u32, k: [u32; 2], st: u32) -> Option<ImageConv> {
        plan(t, [c, size, size], k, [st, st], [k[0] / 2; 4], [1, 1], 1)
    }

    #[test]
    fn resnet_stem_takes_post_extension_2() {
        for p in [Precision::Int8, Precision::Fp16] {
            let t = Target::new(&nvdla_hw::NV_FULL, p).unwrap();
            let i = conv(&t, 3, 224, [7, 7], 2).unwrap();
            // 28 channels per row: 8 + 28 <= 64 and 28 <= 32.
            assert_eq!((i.y_ext, i.kernel_channels), (2, 28), "{p:?}");
            // 230 padded pixels of 4 components: 8 (int8) or 15 (fp16) 128-byte entries.
            let eps = if p == Precision::Int8 { 8 } else { 15 };
            assert_eq!(i.entries_per_slice, eps);
        }
        let t = Target::new(&nvdla_hw::NV_FULL, Precision::Int8).unwrap();
        // 3x3: 12 channels per row, post-extension 4 (36 + 12 <= 64, 12 <= 16).
        assert_eq!(conv(&t, 3, 32, [3, 3], 1).unwrap().y_ext, 4);
        // Stride wider than the kernel: no post-extension.
        assert_eq!(conv(&t, 3, 32, [3, 2], 3).unwrap().y_ext, 1);
        // nv_small: 8 channels per MAC cell.
        let small = Target::new(&nvdla_hw::NV_SMALL, Precision::Int8).unwrap();
        assert!(conv(&small, 3, 32, [3, 3], 1).is_none());
        // Too many channels, groups; a large input is read in row chunks.
        assert!(conv(&t, 5, 32, [3, 3], 1).is_none());
        assert!(conv(&t, 3, 1024, [3, 3], 1).is_some());
        assert!(plan(&t, [3, 32, 32], [3, 3], [1, 1], [1; 4], [1, 1], 3).is_none());
    }

    #[test]
    fn pre_extension_puts_a_kernel_row_in_channels() {
        // 1 kernel, 2 channels, 1x2 kernel: w[0][c][0][s] = 10 c + s.
        let w = [0.0, 1.0, 10.0, 11.0];
        let e = pre_extend(&w, 1, 2, 1, 2);
        // Channel 4 s + c.
        assert_eq!(e, [0.0, 10.0, 0.0, 0.0, 1.0, 11.0, 0.0, 0.0]);
    }
}
