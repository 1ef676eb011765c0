//! Sparse weight compression (`--compress-weights`, part of `-O` on builds that have it):
//! a convolution's weights stored as their non-zero elements, a mask bit per element
//! and a byte count per kernel group, which CDMA copies into CBUF and CSC expands
//! (hwarch "Sparse Compression option"; nvdla/doc `format.rst`; the C model's CSC,
//! `get_decompressed_weight`). NVIDIA's compiler never emits it (its `TargetConfig` says
//! no build can). Only nv_full has it (`WEIGHT_COMPRESSION_ENABLE`).
//!
//! The format, for a weight surface in the hardware's order (groups of kernels; in a
//! group channel blocks, kernel positions, kernels, channels):
//! - the mask (WMB): one bit per element of the whole surface, bit `i % 8` of byte
//!   `i / 8` for element `i`, set for a stored element; the groups follow each other bit
//!   by bit; its bytes rounded up to 128 (`D_WMB_BYTES` counts 128-byte units);
//! - the stored elements: those whose bytes are not all zero, in surface order, the
//!   groups back to back; rounded up to 128 bytes (`D_WEIGHT_BYTES`);
//! - the group sizes (WGS): one little-endian 32-bit count per kernel group, the bytes
//!   its elements take.
//!
//! A zero element is stored as a clear bit and comes back as zero bytes, so the
//! surface CSC sees is the uncompressed one byte for byte: results cannot change. What
//! changes is the memory: block-diagonal weights (grouped and depthwise convolutions)
//! and pruned ones shrink to their non-zero elements plus 1/8 (int8) or 1/16 (fp16) of a
//! byte per element, and so does their DRAM traffic.

use crate::engine::{CompressedWeights, HwOpKind, Program};
use crate::target::Target;

/// The three surfaces of compressed weights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compressed {
    /// Stored (non-zero) elements, rounded up to 128 bytes.
    pub data: Vec<u8>,
    /// One bit per element, rounded up to 128 bytes.
    pub mask: Vec<u8>,
    /// Bytes of stored elements per kernel group, 32-bit little-endian each.
    pub group_sizes: Vec<u8>,
}

/// Both stored surfaces are whole 128-byte units (`D_WEIGHT_BYTES`, `D_WMB_BYTES`).
const UNIT: usize = 128;

/// Compresses a weight surface of `kernels` kernels of `bytes_per_kernel` bytes, `group`
/// kernels to a group (the last may have fewer), elements of `bpe` bytes.
pub fn compress(
    surface: &[u8],
    kernels: usize,
    bytes_per_kernel: usize,
    group: usize,
    bpe: usize,
) -> Compressed {
    let bytes = (kernels * bytes_per_kernel).min(surface.len());
    let elements = bytes / bpe;
    let mut mask = vec![0u8; elements.div_ceil(8).next_multiple_of(UNIT)];
    let mut data = Vec::with_capacity(bytes);
    let mut group_sizes = Vec::with_capacity(4 * kernels.div_ceil(group.max(1)));
    for g in surface[..bytes].chunks(group.max(1) * bytes_per_kernel) {
        let start = data.len();
        for e in g.chunks_exact(bpe) {
            if e.iter().any(|&b| b != 0) {
                data.extend_from_slice(e);
            }
        }
        group_sizes.extend_from_slice(&((data.len() - start) as u32).to_le_bytes());
    }
    for (i, e) in surface[..bytes].chunks_exact(bpe).enumerate() {
        if e.iter().any(|&b| b != 0) {
            mask[i / 8] |= 1 << (i % 8);
        }
    }
    // At least one unit: a register of zero units is not a surface.
    data.resize(data.len().max(1).next_multiple_of(UNIT), 0);
    Compressed {
        data,
        mask,
        group_sizes,
    }
}

/// Compresses the weights of every convolution where the build has weight compression
/// and it pays: at most three quarters of the bytes (stored elements and mask). A
/// blob is compressed only when every convolution reading it (direct, Winograd or
/// image mode: CSC expands the surface the same way, whatever its layout) leaves CBUF's
/// last bank to the mask (its data and weight banks at most `banks - 1`) and its kernel
/// groups' masks fit in that bank (programming guide, "Weight compression": under
/// 32 KiB less 128 bytes on nv_full).
pub fn weights(p: &mut Program, t: &Target) {
    if !t.hw.features.weight_compression {
        return;
    }
    let banks = t.hw.cbuf_banks;
    let bank_bytes = (t.hw.cbuf_bytes() / u64::from(banks)) as usize;
    let group = t.kernels_per_group() as usize;
    let bpe = t.bpe() as usize;
    // Per blob: (kernels, bytes per kernel) when every reader allows compression.
    let mut candidates: Vec<Option<(usize, usize)>> = vec![None; p.blobs.len()];
    let mut refused = vec![false; p.blobs.len()];
    for op in &p.ops {
        let HwOpKind::Conv(c) = &op.kind else {
            continue;
        };
        let b = c.weights.0;
        let group_mask = group * c.bytes_per_kernel as usize / bpe / 8;
        let fits = c.data_banks + c.weight_banks < banks && group_mask + UNIT <= bank_bytes;
        let shape = (c.kernels as usize, c.bytes_per_kernel as usize);
        match candidates[b] {
            _ if !fits => refused[b] = true,
            Some(s) if s != shape => refused[b] = true,
            _ => candidates[b] = Some(shape),
        }
    }
    for (b, shape) in candidates.into_iter().enumerate() {
        let Some((kernels, bpk)) = shape.filter(|_| !refused[b]) else {
            continue;
        };
        let blob = &p.blobs[b];
        let c = compress(&blob.data, kernels, bpk, group, bpe);
        if 4 * (c.data.len() + c.mask.len()) > 3 * kernels * bpk {
            continue;
        }
        let name = blob.name.clone();
        let Compressed {
            data,
            mask,
            group_sizes,
        } = c;
        p.blobs[b].data = data;
        let wmb = p.add_blob(format!("{name}-wmb"), mask);
        let wgs = p.add_blob(format!("{name}-wgs"), group_sizes);
        for op in &mut p.ops {
            if let HwOpKind::Conv(conv) = &mut op.kind {
                if conv.weights.0 == b {
                    conv.compressed = Some(CompressedWeights { wmb, wgs });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_bits_stored_elements_and_group_sizes() {
        // Three kernels of four 2-byte elements, two kernels to a group.
        let surface: Vec<u8> = [
            [0x00, 0x00],
            [0x01, 0x3c],
            [0x00, 0x00],
            [0x00, 0x80], // -0: stored (not all bytes zero)
            [0x02, 0x00],
            [0x00, 0x00],
            [0x00, 0x00],
            [0x00, 0x00],
            [0x03, 0x00],
            [0x04, 0x00],
            [0x00, 0x00],
            [0x05, 0x00],
        ]
        .concat();
        let c = compress(&surface, 3, 8, 2, 2);
        assert_eq!(c.mask.len(), 128);
        assert_eq!(&c.mask[..2], &[0b0001_1010, 0b0000_1011]);
        assert!(c.mask[2..].iter().all(|&b| b == 0));
        assert_eq!(c.data.len(), 128);
        assert_eq!(
            &c.data[..12],
            &[0x01, 0x3c, 0x00, 0x80, 0x02, 0x00, 0x03, 0x00, 0x04, 0x00, 0x05, 0x00]
        );
        // Group 0 (kernels 0 and 1) stores three elements, group 1 (kernel 2) three.
        assert_eq!(c.group_sizes, [6, 0, 0, 0, 6, 0, 0, 0]);
    }

    #[test]
    fn all_zero_weights_still_take_one_unit() {
        let c = compress(&[0u8; 64], 4, 16, 32, 1);
        assert_eq!(c.data, vec![0u8; 128]);
        assert_eq!(c.group_sizes, [0, 0, 0, 0]);
        assert_eq!(c.mask, vec![0u8; 128]);
    }
}
