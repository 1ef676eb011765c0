//! CDMA: feature and image data fetch (with the input converter) and weight fetch
//! (uncompressed and sparse-compressed), producing the cubes CSC reads from CBUF.
//!
//! Feature data arrive in the feature-cube layout ([`CubeLayout`]); every element goes
//! through the optional converter `sat((x - offset) * scale >> truncate)`
//! (`NV_NVDLA_CDMA_CVT_cell`, `nvdlav1:cmod/hls/cdma_libs/cdma_cvt.cpp`; fp16 input passes
//! through) and, for fp16, NaNs are optionally flushed to zero.
//!
//! Image (pixel) data are read line by line from a pitch-linear surface; each pixel is
//! split into its components in R, G, B, A order (Y, U, V, A for YUV), converted with a
//! per-component mean when `MEAN_FORMAT` is enabled, and the line is framed by
//! `PAD_LEFT`/`PAD_RIGHT` pixels of `PAD_VALUE` (`ImageConvDataResponseSequencerCommon`).

use super::Layer;
use crate::engines::{
    check_cube, par_chunks, zeroed, CubeLayout, EngineError, Precision, PARALLEL_ELEMENTS,
};
use crate::fp::int_to_f16;
use crate::mem::{Memory, RamType};

const BLOCK: &str = "CDMA";

fn cfg_err(msg: String) -> EngineError {
    EngineError::Config { block: BLOCK, msg }
}

/// An input cube after CDMA: `[batch][c][y][x]`, elements as signed integers (fp16 as
/// raw bits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputCube {
    /// Width.
    pub w: usize,
    /// Height.
    pub h: usize,
    /// Channels.
    pub c: usize,
    /// Batches.
    pub batches: usize,
    /// Elements.
    pub data: Vec<i32>,
}

/// Weights after CDMA: `[k][c][r][s]` (fp16 as raw bits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weights {
    /// Kernels.
    pub k: usize,
    /// Channels.
    pub c: usize,
    /// Kernel height.
    pub r: usize,
    /// Kernel width.
    pub s: usize,
    /// Elements.
    pub data: Vec<i32>,
}

/// The input converter of CDMA.
#[derive(Debug, Clone, Copy)]
pub struct Converter {
    /// `CVT_EN`.
    pub enabled: bool,
    /// `CVT_OFFSET` (signed 16-bit).
    pub offset: i64,
    /// `CVT_SCALE` (signed 16-bit).
    pub scale: i64,
    /// `CVT_TRUNCATE` (6 bits).
    pub truncate: u32,
}

impl Converter {
    /// Converts an integer input (already sign- or zero-extended) to `out` precision,
    /// subtracting `mean` instead of the offset. Result as the element bit pattern
    /// sign-extended (int) or raw fp16 bits.
    #[inline]
    pub fn convert(&self, x: i64, mean: i64, out: Precision) -> i32 {
        let v = (x - mean) * self.scale;
        let v = crate::arith::shr_round_sat(v, self.truncate, 17);
        match out {
            Precision::Int8 => v.clamp(-128, 127) as i32,
            Precision::Int16 => v.clamp(-32768, 32767) as i32,
            Precision::Fp16 => i32::from(int_to_f16(v)),
        }
    }
}

/// Truncates a value to the element width of `p` (int: sign-extended, fp16: raw bits).
#[inline]
fn to_width(v: i64, p: Precision) -> i32 {
    match p {
        Precision::Int8 => i32::from(v as i8),
        Precision::Int16 => i32::from(v as i16),
        Precision::Fp16 => i32::from(v as u16),
    }
}

/// Reads the feature cube of every batch.
pub fn fetch_feature(l: &Layer, mem: &Memory) -> Result<InputCube, EngineError> {
    let (w, h, c) = (l.cdma_w, l.cdma_h, l.cdma_c);
    let batches = l.batches;
    check_cube(BLOCK, w, h, c.saturating_mul(batches))?;
    let prec = l.prec;
    let atom = u64::from(l.atom);
    let one_by_one = l.line_packed && l.surf_packed && w == 1 && h == 1;
    let mut data = Vec::with_capacity(if batches == 1 { 0 } else { w * h * c * batches });
    for b in 0..batches {
        let layout = CubeLayout {
            ram: l.dain_ram,
            base: l
                .dain_addr
                .wrapping_add((b as u64).wrapping_mul(l.batch_stride)),
            line_stride: l.line_stride,
            // A packed 1x1 cube is fetched as consecutive atoms.
            surf_stride: if one_by_one { atom } else { l.surf_stride },
            w,
            h,
            c,
            prec,
            atom: l.atom,
        };
        let mut raw = layout.read(mem)?;
        if prec == Precision::Fp16 {
            if l.nan_to_zero {
                par_chunks(
                    &mut raw,
                    PARALLEL_ELEMENTS,
                    #[inline(always)]
                    |_, part| {
                        for v in part {
                            if crate::engines::conv::arith::f16_is_nan(*v as u16) {
                                *v = 0;
                            }
                        }
                    },
                );
            }
        } else if l.cvt.enabled {
            par_chunks(
                &mut raw,
                PARALLEL_ELEMENTS,
                #[inline(always)]
                |_, part| {
                    for v in part {
                        *v = l.cvt.convert(i64::from(*v), l.cvt.offset, prec);
                    }
                },
            );
        }
        if batches == 1 {
            data = raw;
        } else {
            data.extend_from_slice(&raw);
        }
    }
    Ok(InputCube {
        w,
        h,
        c,
        batches,
        data,
    })
}

/// How a pixel format stores its components.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comp {
    /// 8-bit components.
    U8,
    /// 16-bit unsigned components.
    U16,
    /// 16-bit signed components.
    I16,
    /// fp16 components.
    F16,
    /// 10-bit components packed in 32 bits (2-bit alpha), scaled to 16 bits.
    Packed10,
}

/// Pixel format description: planes, bytes per pixel, components and the memory order
/// of the R/G/B/A (or Y/U/V/A) components.
#[derive(Debug, Clone, Copy)]
struct PixelFormat {
    comp: Comp,
    /// Bytes per pixel in plane 0 (the only plane of packed formats).
    bpp0: u64,
    /// Bytes per pixel in plane 1 (semi-planar chroma), 0 for single-plane formats.
    bpp1: u64,
    /// Components per pixel after the split.
    elements: usize,
    /// For each output component, its index in memory order (element units), or the
    /// bit position of a 10-bit packed field.
    order: [u8; 4],
    /// Input precision the format implies.
    in_prec: Precision,
}

fn pixel_format(code: u32) -> Option<PixelFormat> {
    use Comp::*;
    let f = |comp, bpp0, bpp1, elements, order, in_prec| PixelFormat {
        comp,
        bpp0,
        bpp1,
        elements,
        order,
        in_prec,
    };
    let (i8p, i16p, f16p) = (Precision::Int8, Precision::Int16, Precision::Fp16);
    Some(match code {
        0 => f(U8, 1, 0, 1, [0, 0, 0, 0], i8p),                 // R8
        1..=3 => f(U16, 2, 0, 1, [0, 0, 0, 0], i16p),           // R10, R12, R16
        4 => f(I16, 2, 0, 1, [0, 0, 0, 0], i16p),               // R16_I
        5 => f(F16, 2, 0, 1, [0, 0, 0, 0], f16p),               // R16_F
        6 | 7 => f(U16, 8, 0, 4, [0, 1, 2, 3], i16p),           // A16B16G16R16, X16B16G16R16
        8 => f(F16, 8, 0, 4, [0, 1, 2, 3], f16p),               // A16B16G16R16_F
        9 => f(I16, 8, 0, 4, [2, 1, 0, 3], i16p),               // A16Y16U16V16
        10 => f(U16, 8, 0, 4, [1, 2, 3, 0], i16p),              // V16U16Y16A16
        11 => f(F16, 8, 0, 4, [2, 1, 0, 3], f16p),              // A16Y16U16V16_F
        12 | 16 => f(U8, 4, 0, 4, [0, 1, 2, 3], i8p),           // A8B8G8R8, X8B8G8R8
        13 | 17 | 26 => f(U8, 4, 0, 4, [2, 1, 0, 3], i8p),      // A8R8G8B8, X8R8G8B8, A8Y8U8V8
        14 | 18 | 27 => f(U8, 4, 0, 4, [1, 2, 3, 0], i8p),      // B8G8R8A8, B8G8R8X8, V8U8Y8A8
        15 | 19 => f(U8, 4, 0, 4, [3, 2, 1, 0], i8p),           // R8G8B8A8, R8G8B8X8
        20 => f(Packed10, 4, 0, 4, [0, 10, 20, 30], i16p),      // A2B10G10R10
        21 | 24 => f(Packed10, 4, 0, 4, [20, 10, 0, 30], i16p), // A2R10G10B10, A2Y10U10V10
        22 | 25 => f(Packed10, 4, 0, 4, [2, 12, 22, 0], i16p),  // B10G10R10A2, V10U10Y10A2
        23 => f(Packed10, 4, 0, 4, [22, 12, 2, 0], i16p),       // R10G10B10A2
        28 => f(U8, 1, 2, 3, [0, 2, 1, 0], i8p),                // Y8___U8V8_N444
        29 => f(U8, 1, 2, 3, [0, 1, 2, 0], i8p),                // Y8___V8U8_N444
        30 | 32 | 34 => f(U16, 2, 4, 3, [0, 2, 1, 0], i16p),    // Y1x___U1xV1x_N444
        31 | 33 | 35 => f(U16, 2, 4, 3, [0, 1, 2, 0], i16p),    // Y1x___V1xU1x_N444
        _ => return None,
    })
}

/// Image data after CDMA: per line `pad_left + width + pad_right` pixels of
/// `elements` components, in processing precision.
#[derive(Debug, Clone)]
pub struct ImageLines {
    /// Lines.
    pub h: usize,
    /// Elements per line.
    pub line_len: usize,
    /// `h * line_len` elements.
    pub data: Vec<i32>,
}

/// Reads and converts a pitch-linear image.
pub fn fetch_image(l: &Layer, mem: &Memory) -> Result<ImageLines, EngineError> {
    let pf = pixel_format(l.pixel_format)
        .ok_or_else(|| cfg_err(format!("reserved pixel format {}", l.pixel_format)))?;
    if !l.pitch_linear {
        return Err(EngineError::Unsupported {
            block: BLOCK,
            msg: "block-linear pixel mapping".into(),
        });
    }
    if pf.in_prec != l.in_prec {
        return Err(cfg_err(format!(
            "pixel format {} needs input precision {:?}, IN_PRECISION is {:?}",
            l.pixel_format, pf.in_prec, l.in_prec
        )));
    }
    if pf.in_prec == Precision::Fp16 && l.prec != Precision::Fp16 {
        return Err(cfg_err("fp16 pixels convert to fp16 only".into()));
    }
    if !l.cvt.enabled && pf.in_prec.bytes() != l.prec.bytes() {
        return Err(cfg_err(format!(
            "{:?} pixels need the converter to reach {:?}",
            pf.in_prec, l.prec
        )));
    }
    let (w, h) = (l.cdma_w, l.cdma_h);
    let e = pf.elements;
    let pixels = l.pad_left + w + l.pad_right;
    check_cube(BLOCK, pixels, h, e)?;
    let line_len = pixels * e;
    let x0 = l.pixel_x_offset as u64;
    let fetch0 = (x0 + w as u64) * pf.bpp0;
    if fetch0 > l.line_stride && h > 1 {
        return Err(cfg_err(format!(
            "line stride {:#x} shorter than a line ({fetch0:#x} bytes)",
            l.line_stride
        )));
    }
    let pad = to_width(i64::from(l.cdma_pad_value), l.prec);
    let means = [l.mean[0], l.mean[1], l.mean[2], l.mean[3]];
    let mut data = vec![pad; h * line_len];
    let mut p0 = vec![0u8; fetch0 as usize];
    let mut p1 = vec![0u8; ((x0 + w as u64) * pf.bpp1) as usize];
    for y in 0..h {
        let a0 = l
            .dain_addr
            .wrapping_add((y as u64).wrapping_mul(l.line_stride));
        mem.read(l.dain_ram, a0, &mut p0)?;
        if pf.bpp1 != 0 {
            let a1 = l
                .dain_addr1
                .wrapping_add((y as u64).wrapping_mul(l.uv_line_stride));
            mem.read(l.dain_ram, a1, &mut p1)?;
        }
        let line = &mut data[y * line_len..(y + 1) * line_len];
        for x in 0..w {
            let px = (x0 as usize) + x;
            for (i, slot) in line[(l.pad_left + x) * e..(l.pad_left + x + 1) * e]
                .iter_mut()
                .enumerate()
            {
                let (raw, signed) = component(&pf, &p0, &p1, px, i, l.sign_override);
                let mean = if l.mean_enabled {
                    means[i]
                } else {
                    l.cvt.offset
                };
                *slot = if pf.comp == Comp::F16 {
                    // fp16 pixels pass the converter unchanged.
                    let hbits = raw as u16;
                    if l.nan_to_zero && crate::engines::conv::arith::f16_is_nan(hbits) {
                        0
                    } else {
                        i32::from(hbits)
                    }
                } else if l.cvt.enabled {
                    l.cvt.convert(signed, mean, l.prec)
                } else {
                    // Without the converter the pixel is stored as its signed value
                    // truncated to the element width.
                    to_width(raw as i64, l.prec)
                };
            }
        }
    }
    Ok(ImageLines { h, line_len, data })
}

/// Component `i` (output order) of pixel `px`: (raw bits, value as the converter sees it).
fn component(
    pf: &PixelFormat,
    p0: &[u8],
    p1: &[u8],
    px: usize,
    i: usize,
    sign_override: bool,
) -> (i32, i64) {
    let o = pf.order[i] as usize;
    let rd8 = |b: &[u8], at: usize| b.get(at).copied().unwrap_or(0);
    let rd16 = |b: &[u8], at: usize| u16::from_le_bytes([rd8(b, at), rd8(b, at + 1)]);
    let u8v = |v: u8| -> (i32, i64) {
        let raw = i32::from(v as i8);
        let val = if sign_override {
            i64::from(v as i8)
        } else {
            i64::from(v)
        };
        (raw, val)
    };
    // Signedness of 16-bit components follows PIXEL_SIGN_OVERRIDE only
    // (`process_one_element_16`), whatever the format name says.
    let u16v = |v: u16, _signed: bool| -> (i32, i64) {
        let raw = i32::from(v as i16);
        let val = if sign_override {
            i64::from(v as i16)
        } else {
            i64::from(v)
        };
        (raw, val)
    };
    match (pf.comp, pf.bpp1 != 0) {
        (Comp::U8, false) => u8v(rd8(p0, px * pf.elements + o)),
        (Comp::U8, true) => {
            if i == 0 {
                u8v(rd8(p0, px))
            } else {
                u8v(rd8(p1, px * 2 + (o - 1)))
            }
        }
        (Comp::U16 | Comp::I16, true) => {
            if i == 0 {
                u16v(rd16(p0, px * 2), false)
            } else {
                u16v(rd16(p1, px * 4 + (o - 1) * 2), false)
            }
        }
        (Comp::U16, false) => u16v(rd16(p0, (px * pf.elements + o) * 2), false),
        (Comp::I16, false) => u16v(rd16(p0, (px * pf.elements + o) * 2), true),
        (Comp::F16, _) => {
            let v = rd16(p0, (px * pf.elements + o) * 2);
            (i32::from(v), 0)
        }
        (Comp::Packed10, _) => {
            let word = u32::from_le_bytes([
                rd8(p0, px * 4),
                rd8(p0, px * 4 + 1),
                rd8(p0, px * 4 + 2),
                rd8(p0, px * 4 + 3),
            ]);
            let v = if i == 3 {
                // 2-bit alpha moved to the top of 16 bits.
                ((word >> o) & 3) << 14
            } else {
                ((word >> o) & 0x3ff) << 6
            };
            u16v(v as u16, false)
        }
    }
}

/// Builds the direct-convolution equivalent of image input as CSC reads it: channel
/// `e` of position `(x, y)` is element `x * stride_x * channels + e` of line `y`
/// (CSC "pre-extension": a kernel row of `S` pixels is one `S*C`-channel vector).
pub fn image_as_cube(
    lines: &ImageLines,
    out_w: usize,
    stride_x: usize,
    in_c: usize,
    kc: usize,
) -> Result<InputCube, EngineError> {
    check_cube(BLOCK, out_w, lines.h, kc)?;
    let mut data = vec![0i32; kc * lines.h * out_w];
    for e in 0..kc {
        for y in 0..lines.h {
            let line = &lines.data[y * lines.line_len..(y + 1) * lines.line_len];
            let row = &mut data[(e * lines.h + y) * out_w..(e * lines.h + y + 1) * out_w];
            for (x, v) in row.iter_mut().enumerate() {
                // Elements past the line are the zero fill of its last CBUF entry.
                *v = line.get(x * stride_x * in_c + e).copied().unwrap_or(0);
            }
        }
    }
    Ok(InputCube {
        w: out_w,
        h: lines.h,
        c: kc,
        batches: 1,
        data,
    })
}

/// Reads `len` bytes of a weight surface.
fn read_bytes(mem: &Memory, ram: RamType, addr: u64, len: u64) -> Result<Vec<u8>, EngineError> {
    if len > (1 << 30) {
        return Err(EngineError::Unsupported {
            block: BLOCK,
            msg: format!("weight surface of {len} bytes exceeds the model's 1 GiB limit"),
        });
    }
    Ok(mem.read_vec(ram, addr, len as usize)?)
}

/// Weight geometry as CSC walks it: kernel groups, channel blocks, kernel positions.
#[derive(Debug, Clone, Copy)]
pub struct WeightGeom {
    /// Kernels.
    pub k: usize,
    /// Channels per kernel (after image pre-extension).
    pub c: usize,
    /// Kernel height.
    pub r: usize,
    /// Kernel width.
    pub s: usize,
    /// Kernels per group.
    pub group: usize,
    /// Channels per block (atomic C).
    pub block: usize,
    /// Bytes per element.
    pub bpe: usize,
    /// Post-extension rows per MAC operation (image mode, 1 otherwise).
    pub y_ext: usize,
}

impl WeightGeom {
    /// Bytes per kernel.
    pub fn bytes_per_kernel(&self) -> usize {
        self.r * self.s * self.c * self.bpe
    }

    /// Byte offset of element (k, c, r, s) in the uncompressed weight surface
    /// (hwarch "Weight Format": groups of kernels; inside a group channel blocks, then
    /// kernel positions, then kernels, then the channels of the block).
    pub fn offset(&self, k: usize, c: usize, r: usize, s: usize) -> usize {
        let g = k / self.group;
        let kpg = self.group.min(self.k - g * self.group);
        let kk = k - g * self.group;
        let base = g * self.group * self.bytes_per_kernel();
        if self.y_ext > 1 {
            // One block; each MAC operation covers `y_ext` rows of `c` elements.
            let op = r / self.y_ext;
            let rows_full = self.y_ext;
            let op_rows = rows_full.min(self.r - op * self.y_ext);
            let op_start = op * rows_full * self.c * self.bpe * kpg;
            return base
                + op_start
                + kk * op_rows * self.c * self.bpe
                + ((r % self.y_ext) * self.c + c) * self.bpe;
        }
        let cb = c / self.block;
        let blk = self.block.min(self.c - cb * self.block);
        let block_stride = self.block * self.bpe * self.r * self.s * kpg;
        base + cb * block_stride
            + (r * self.s + s) * blk * self.bpe * kpg
            + kk * blk * self.bpe
            + (c - cb * self.block) * self.bpe
    }
}

/// Reads the weight surface of `g.k` kernels as CBUF holds it (uncompressed bytes).
fn weight_surface(l: &Layer, g: &WeightGeom, mem: &Memory) -> Result<Vec<u8>, EngineError> {
    let bpk = g.bytes_per_kernel();
    let total =
        g.k.checked_mul(bpk)
            .filter(|&t| t <= 1 << 30)
            .ok_or_else(|| EngineError::Unsupported {
                block: BLOCK,
                msg: "weights exceed the model's 1 GiB limit".into(),
            })?;
    if l.compressed {
        decompress(l, g, total, mem)
    } else {
        if (l.weight_bytes as usize) < total {
            return Err(cfg_err(format!(
                "WEIGHT_BYTES {:#x} smaller than {} kernels of {bpk} bytes",
                l.weight_bytes, g.k
            )));
        }
        read_bytes(mem, l.weight_ram, l.weight_addr, total as u64)
    }
}

/// The weight element at byte `o` of a surface: int8, int16, or fp16 bits.
#[inline]
fn weight_element(prec: Precision, bpe: usize, raw: &[u8], o: usize) -> i32 {
    match bpe {
        1 => i32::from(raw[o] as i8),
        _ => {
            let v = u16::from_le_bytes([raw[o], raw[o + 1]]);
            if prec == Precision::Fp16 {
                i32::from(v)
            } else {
                i32::from(v as i16)
            }
        }
    }
}

/// Decodes `[k][c][r][s]` weights from a weight surface, element offsets by `offset`.
fn decode_weights(
    prec: Precision,
    g: &WeightGeom,
    raw: &[u8],
    offset: impl Fn(usize, usize, usize, usize) -> usize,
) -> Weights {
    let mut data = vec![0i32; g.k * g.c * g.r * g.s];
    let mut i = 0;
    for k in 0..g.k {
        for c in 0..g.c {
            for r in 0..g.r {
                for s in 0..g.s {
                    data[i] = weight_element(prec, g.bpe, raw, offset(k, c, r, s));
                    i += 1;
                }
            }
        }
    }
    Weights {
        k: g.k,
        c: g.c,
        r: g.r,
        s: g.s,
        data,
    }
}

/// Fetches and decodes the weights (`[k][c][r][s]`).
pub fn fetch_weights(l: &Layer, g: &WeightGeom, mem: &Memory) -> Result<Weights, EngineError> {
    let raw = weight_surface(l, g, mem)?;
    if g.y_ext > 1 {
        return Ok(decode_weights(l.prec, g, &raw, |k, c, r, s| {
            g.offset(k, c, r, s)
        }));
    }
    Ok(decode_weights_in_order(l.prec, g, &raw))
}

/// [`decode_weights`] at [`WeightGeom::offset`] for direct convolution, walking the
/// surface in its own order (kernel groups, channel blocks, kernel positions, kernels,
/// channels of the block) so that it reads each byte once, in sequence.
fn decode_weights_in_order(prec: Precision, g: &WeightGeom, raw: &[u8]) -> Weights {
    let taps = g.r * g.s;
    let mut data = zeroed(g.k * g.c * taps);
    let group = g.group.max(1);
    // Kernel groups in parallel: group `i` holds kernels `i * group ..`, whose elements
    // are one run of `data`.
    par_chunks(
        &mut data,
        group * g.c * taps,
        #[inline(always)]
        |i, kernels| {
            let g0 = i * group;
            let kpg = group.min(g.k - g0);
            let base = g0 * g.bytes_per_kernel();
            for c0 in (0..g.c).step_by(g.block.max(1)) {
                let blk = g.block.min(g.c - c0);
                let mut o = base + c0 * g.bpe * taps * kpg;
                for t in 0..taps {
                    for k in 0..kpg {
                        let dst = kernels[(k * g.c + c0) * taps + t..]
                            .iter_mut()
                            .step_by(taps);
                        let src = &raw[o..o + blk * g.bpe];
                        // One loop per element type, without a branch per element.
                        match (g.bpe, prec) {
                            (1, _) => dst.zip(src).for_each(|(d, &b)| *d = i32::from(b as i8)),
                            (_, Precision::Fp16) => {
                                dst.zip(src.chunks_exact(g.bpe)).for_each(|(d, b)| {
                                    *d = i32::from(u16::from_le_bytes([b[0], b[1]]))
                                })
                            }
                            _ => dst.zip(src.chunks_exact(g.bpe)).for_each(|(d, b)| {
                                *d = i32::from(i16::from_le_bytes([b[0], b[1]]))
                            }),
                        }
                        o += blk * g.bpe;
                    }
                }
            }
        },
    );
    Weights {
        k: g.k,
        c: g.c,
        r: g.r,
        s: g.s,
        data,
    }
}

/// Byte offset of element (k, c, r, s) of a Winograd weight surface of 4x4 tiles
/// (`g.r = g.s = 4`): kernel groups as in direct convolution; inside a group, blocks of
/// 4 channels, then kernels, then the 16 tile positions (row-major), then the 4
/// channels of the block (`SendWeightToMacSequencerWinoConvCommon`,
/// `cmod/csc/NV_NVDLA_csc.cpp`; the compiler's `execWtTrnsOpsForWG` writes this order).
pub fn winograd_weight_offset(g: &WeightGeom, k: usize, c: usize, r: usize, s: usize) -> usize {
    let sup = super::winograd::SUPER;
    let grp = k / g.group;
    let kpg = g.group.min(g.k - grp * g.group);
    let kk = k - grp * g.group;
    let tile = 16 * sup * g.bpe;
    grp * g.group * g.bytes_per_kernel()
        + (c / sup) * tile * kpg
        + kk * tile
        + ((r * 4 + s) * sup + c % sup) * g.bpe
}

/// Fetches and decodes Winograd weights (`[k][c][4][4]`, the pre-transformed tiles).
pub fn fetch_weights_winograd(
    l: &Layer,
    g: &WeightGeom,
    mem: &Memory,
) -> Result<Weights, EngineError> {
    if (g.r, g.s) != (4, 4) || !g.c.is_multiple_of(super::winograd::SUPER) {
        return Err(cfg_err(format!(
            "Winograd weights are 4x4 tiles in channels of fours, not {}x{}x{}",
            g.s, g.r, g.c
        )));
    }
    let raw = weight_surface(l, g, mem)?;
    Ok(decode_weights(l.prec, g, &raw, |k, c, r, s| {
        winograd_weight_offset(g, k, c, r, s)
    }))
}

/// Where CDMA puts a Winograd input: padding and convolution stride
/// (`D_ZERO_PADDING`, `D_CONV_STRIDE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WinoInput {
    /// Left padding.
    pub pad_left: usize,
    /// Right padding.
    pub pad_right: usize,
    /// Top padding.
    pub pad_top: usize,
    /// Bottom padding.
    pub pad_bottom: usize,
    /// Stride x.
    pub sx: usize,
    /// Stride y.
    pub sy: usize,
}

impl WinoInput {
    /// Channels of the input after rounding up to whole memory atoms.
    pub fn padded_channels(c: usize, prec: Precision, atom: u32) -> usize {
        let cpa = (atom / prec.bytes()).max(1) as usize;
        c.div_ceil(cpa) * cpa
    }

    /// The extended cube `(W', H', C')` of a `w x h x c` input, or why CDMA cannot
    /// build it (`WinoConvDataResponseSequencerCommon` fails unless the padded width
    /// and height are multiples of 4 strides).
    pub fn extended(
        &self,
        w: usize,
        h: usize,
        c: usize,
        prec: Precision,
        atom: u32,
    ) -> Result<(usize, usize, usize), String> {
        let tw = self.pad_left + w + self.pad_right;
        let th = self.pad_top + h + self.pad_bottom;
        if !tw.is_multiple_of(4 * self.sx) || !th.is_multiple_of(4 * self.sy) {
            return Err(format!(
                "padded input {tw}x{th} is not a multiple of 4 strides ({}x{})",
                self.sx, self.sy
            ));
        }
        let cpad = Self::padded_channels(c, prec, atom);
        Ok((tw / self.sx, th / self.sy, cpad * self.sx * self.sy))
    }
}

/// Reads a feature cube for Winograd convolution and builds the extended cube CSC sees
/// (`WinoConvDataResponseSequencerCommon`): the input is padded by `PAD_*` elements of
/// `PAD_VALUE` (all channels, including those past `C` in the last atom, which come
/// from memory like the others), and the stride is folded into channels: channel
/// `(ry * sx + rx) * C_pad + c` of position `(X, Y)` is channel `c` of padded position
/// `(X * sx + rx, Y * sy + ry)`, `C_pad` being `C` rounded up to whole atoms. fp16 NaNs
/// (padding included) are optionally flushed to zero; the converter does not apply.
pub fn fetch_winograd(l: &Layer, p: &WinoInput, mem: &Memory) -> Result<InputCube, EngineError> {
    let (w, h, prec) = (l.cdma_w, l.cdma_h, l.prec);
    let (ew, eh, ec) = p.extended(w, h, l.cdma_c, prec, l.atom).map_err(cfg_err)?;
    check_cube(BLOCK, ew, eh, ec)?;
    let cpad = WinoInput::padded_channels(l.cdma_c, prec, l.atom);
    let raw = CubeLayout {
        ram: l.dain_ram,
        base: l.dain_addr,
        line_stride: l.line_stride,
        surf_stride: l.surf_stride,
        w,
        h,
        c: cpad,
        prec,
        atom: l.atom,
    }
    .read(mem)?;
    let pad = to_width(i64::from(l.cdma_pad_value), prec);
    let mut data = vec![pad; ec * eh * ew];
    for ry in 0..p.sy {
        for rx in 0..p.sx {
            for c in 0..cpad {
                let ch = (ry * p.sx + rx) * cpad + c;
                for yy in 0..eh {
                    let py = yy * p.sy + ry;
                    if py < p.pad_top || py >= p.pad_top + h {
                        continue;
                    }
                    let src = &raw[(c * h + py - p.pad_top) * w..][..w];
                    let dst = &mut data[(ch * eh + yy) * ew..][..ew];
                    for (xx, d) in dst.iter_mut().enumerate() {
                        let px = xx * p.sx + rx;
                        if px >= p.pad_left && px < p.pad_left + w {
                            *d = src[px - p.pad_left];
                        }
                    }
                }
            }
        }
    }
    if prec == Precision::Fp16 && l.nan_to_zero {
        for v in &mut data {
            if crate::engines::conv::arith::f16_is_nan(*v as u16) {
                *v = 0;
            }
        }
    }
    Ok(InputCube {
        w: ew,
        h: eh,
        c: ec,
        batches: 1,
        data,
    })
}

/// Expands sparse-compressed weights. One weight mask (WMB) covers every kernel group,
/// one bit per element (bit `i % 8` of byte `i / 8` for element `i` of the uncompressed
/// surface; groups follow each other bit by bit); a set bit takes the next stored
/// element, a clear one is zero. The stored elements of each group follow those of the
/// previous group without a gap, and the group sizes (WGS, 32-bit each) must equal the
/// bytes each group's mask marks. WEIGHT_BYTES and WMB_BYTES are the stored bytes and the
/// mask bytes, each rounded up to 128 (hwarch "Sparse Compression option"; the C model's
/// CSC, `get_decompressed_weight`, fails on any other value).
fn decompress(
    l: &Layer,
    g: &WeightGeom,
    total: usize,
    mem: &Memory,
) -> Result<Vec<u8>, EngineError> {
    let groups = g.k.div_ceil(g.group);
    let wgs = read_bytes(mem, l.weight_ram, l.wgs_addr, groups as u64 * 4)?;
    let elements = total / g.bpe;
    let wmb_need = elements.div_ceil(8).next_multiple_of(128) as u64;
    if l.wmb_bytes != wmb_need {
        return Err(cfg_err(format!(
            "WMB_BYTES {:#x}: the kernels' mask takes {wmb_need:#x} (one bit per element, \
             rounded up to 128)",
            l.wmb_bytes
        )));
    }
    let wmb = read_bytes(mem, l.weight_ram, l.wmb_addr, wmb_need)?;
    let packed = read_bytes(mem, l.weight_ram, l.weight_addr, l.weight_bytes)?;
    let mut out = vec![0u8; total];
    let bpk = g.bytes_per_kernel();
    let (mut elem, mut src) = (0usize, 0usize);
    for gi in 0..groups {
        let size = u32::from_le_bytes([
            wgs[4 * gi],
            wgs[4 * gi + 1],
            wgs[4 * gi + 2],
            wgs[4 * gi + 3],
        ]) as usize;
        let kpg = g.group.min(g.k - gi * g.group);
        let start_byte = gi * g.group * bpk;
        let group_start = src;
        for e in 0..kpg * bpk / g.bpe {
            let bit = (wmb[elem / 8] >> (elem % 8)) & 1;
            elem += 1;
            if bit == 1 {
                let dst = start_byte + e * g.bpe;
                let bytes = packed.get(src..src + g.bpe).ok_or_else(|| {
                    cfg_err(format!(
                        "compressed weights run past WEIGHT_BYTES in group {gi}"
                    ))
                })?;
                out[dst..dst + g.bpe].copy_from_slice(bytes);
                src += g.bpe;
            }
        }
        if src - group_start != size {
            return Err(cfg_err(format!(
                "kernel group {gi}: WMB marks {} bytes, WGS says {size}",
                src - group_start
            )));
        }
    }
    let stored = src.next_multiple_of(128) as u64;
    if l.weight_bytes != stored {
        return Err(cfg_err(format!(
            "WEIGHT_BYTES {:#x}: the mask marks {stored:#x} (rounded up to 128)",
            l.weight_bytes
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The in-order weight decoder reads every element where [`WeightGeom::offset`] says.
    #[test]
    fn weights_decoded_in_surface_order_match_the_offsets() {
        for (k, c, r, sw, group, block, bpe) in [
            (70, 37, 3, 2, 32, 64, 1),
            (5, 8, 1, 1, 16, 8, 2),
            (33, 130, 3, 3, 16, 64, 2),
            (1, 3, 7, 7, 32, 32, 1),
        ] {
            let g = WeightGeom {
                k,
                c,
                r,
                s: sw,
                group,
                block,
                bpe,
                y_ext: 1,
            };
            let n = k * g.bytes_per_kernel();
            let raw: Vec<u8> = (0..n).map(|i| (i * 7 + i / 251) as u8).collect();
            let prec = if bpe == 1 {
                Precision::Int8
            } else {
                Precision::Int16
            };
            let want = decode_weights(prec, &g, &raw, |k, c, r, s| g.offset(k, c, r, s));
            assert_eq!(decode_weights_in_order(prec, &g, &raw), want, "{g:?}");
        }
    }

    #[test]
    fn pixel_components_come_out_in_rgba_order() {
        // One pixel with bytes 10, 20, 30, 40 in memory.
        let p0 = [10u8, 20, 30, 40];
        let get = |code: u32| -> Vec<i64> {
            let pf = pixel_format(code).unwrap();
            (0..4)
                .map(|i| component(&pf, &p0, &[], 0, i, false).1)
                .collect()
        };
        assert_eq!(get(12), [10, 20, 30, 40]); // A8B8G8R8: R first in memory
        assert_eq!(get(13), [30, 20, 10, 40]); // A8R8G8B8: B first
        assert_eq!(get(14), [20, 30, 40, 10]); // B8G8R8A8: A first
        assert_eq!(get(15), [40, 30, 20, 10]); // R8G8B8A8: A first, R last
                                               // A2B10G10R10: R in bits 0..9, scaled to 16 bits.
        let word = (3u32 << 30) | (0x3ff << 20) | (0x155 << 10) | 1;
        let pf = pixel_format(20).unwrap();
        let c: Vec<i64> = (0..4)
            .map(|i| component(&pf, &word.to_le_bytes(), &[], 0, i, false).1)
            .collect();
        assert_eq!(c, [1 << 6, 0x155 << 6, 0x3ff << 6, 3 << 14]);
        // Sign override reads 8-bit components as signed.
        let pf = pixel_format(0).unwrap();
        assert_eq!(component(&pf, &[200], &[], 0, 0, true).1, -56);
        assert_eq!(component(&pf, &[200], &[], 0, 0, false).1, 200);
        assert!(pixel_format(36).is_none());
    }

    #[test]
    fn converter_subtracts_scales_rounds_and_saturates() {
        let c = Converter {
            enabled: true,
            offset: 0,
            scale: 3,
            truncate: 2,
        };
        // (200 - 128) * 3 / 4 = 54
        assert_eq!(c.convert(200, 128, Precision::Int8), 54);
        // (1 - 0) * 3 / 4 = 0.75 -> 1; (-1) * 3 / 4 = -0.75 -> -1 (ties away from zero)
        assert_eq!(c.convert(1, 0, Precision::Int8), 1);
        assert_eq!(c.convert(-1, 0, Precision::Int8), -1);
        assert_eq!(c.convert(255, -255, Precision::Int8), 127);
        assert_eq!(c.convert(255, -255, Precision::Int16), 383);
        // fp16 output: 54 -> 0x52c0
        assert_eq!(c.convert(200, 128, Precision::Fp16), 0x52c0);
    }

    #[test]
    fn image_pre_extension_takes_line_segments() {
        // 2 lines of 4 pixels x 2 components (already padded).
        let lines = ImageLines {
            h: 2,
            line_len: 8,
            data: (0..16).collect(),
        };
        // Kernel 2 pixels wide (4 channels), stride 2: outputs at pixels 0 and 2.
        let cube = image_as_cube(&lines, 2, 2, 2, 4).unwrap();
        let at = |e: usize, y: usize, x: usize| cube.data[(e * 2 + y) * 2 + x];
        assert_eq!([at(0, 0, 0), at(3, 0, 0)], [0, 3]);
        assert_eq!([at(0, 0, 1), at(3, 0, 1)], [4, 7]);
        assert_eq!([at(0, 1, 1), at(3, 1, 1)], [12, 15]);
        // Past the line end reads the zero fill.
        let cube = image_as_cube(&lines, 2, 3, 2, 4).unwrap();
        assert_eq!(cube.data[(3 * 2) * 2 + 1], 0);
    }

    #[test]
    fn weight_offsets_follow_the_group_block_position_kernel_order() {
        // int8, 70 channels (blocks of 64 + 6), 2x1 kernel, 3 kernels in groups of 2.
        let g = WeightGeom {
            k: 3,
            c: 70,
            r: 2,
            s: 1,
            group: 2,
            block: 64,
            bpe: 1,
            y_ext: 1,
        };
        assert_eq!(g.offset(0, 0, 0, 0), 0);
        assert_eq!(g.offset(0, 1, 0, 0), 1);
        assert_eq!(g.offset(1, 0, 0, 0), 64); // next kernel of the group
        assert_eq!(g.offset(0, 0, 1, 0), 128); // next kernel position
        assert_eq!(g.offset(0, 64, 0, 0), 256); // second channel block (6 wide)
        assert_eq!(g.offset(1, 64, 0, 0), 262);
        assert_eq!(g.offset(0, 64, 1, 0), 268);
        assert_eq!(g.offset(2, 0, 0, 0), 2 * 140); // second group
        assert_eq!(g.offset(2, 69, 1, 0), 3 * 140 - 1); // last byte
    }

    #[test]
    fn post_extension_weight_offsets_follow_the_cmodel_stripe_order() {
        // `SendWeightToMacSequencerDirectConvCommon` (nvdlav1 cmod/csc) with
        // post_y_extension > 1: byte `kernel * super_atom + stripe * ideal_super_atom *
        // kernels_in_group + group * byte_per_kernel * KERNEL_PER_GROUP`, where a super
        // atom is `y_ext` rows of `C` elements (the last stripe: the remaining rows), rows
        // then channels inside it.
        for (k, c, r, group, bpe, y_ext) in [
            (20, 20, 5, 16, 2, 2), // LeNet conv1, fp16 (NVIDIA's nv_full loadable)
            (20, 20, 5, 32, 1, 2), // the same in int8
            (7, 12, 7, 4, 2, 4),
            (5, 8, 6, 32, 1, 4),
            (3, 16, 4, 16, 2, 4),
            (35, 30, 3, 16, 2, 2),
        ] {
            let g = WeightGeom {
                k,
                c,
                r,
                s: 1,
                group,
                block: 64,
                bpe,
                y_ext,
            };
            let stripes = r.div_ceil(y_ext);
            let ideal = c * bpe * y_ext;
            let last = c * bpe * if r % y_ext == 0 { y_ext } else { r % y_ext };
            let mut hit = vec![0u8; k * g.bytes_per_kernel()];
            for kk in 0..k {
                let kg = kk / group;
                let in_group = group.min(k - kg * group);
                for rr in 0..r {
                    let st = rr / y_ext;
                    let atom = if st == stripes - 1 { last } else { ideal };
                    let base = (kk % group) * atom
                        + st * ideal * in_group
                        + kg * g.bytes_per_kernel() * group;
                    for cc in 0..c {
                        let want = base + ((rr % y_ext) * c + cc) * bpe;
                        assert_eq!(g.offset(kk, cc, rr, 0), want, "{k} {c} {r} {y_ext}");
                        hit[want] += 1;
                    }
                }
            }
            // A bijection onto the weight surface (each element once).
            assert!(hit.chunks(bpe).all(|e| e[0] == 1), "{k} {c} {r} {y_ext}");
        }
        // LeNet conv1 in fp16: kernel row 2 is read from element 640, where NVIDIA's
        // compiler (`execWtTrnsOpsForIMGPostCE`) stores row 3 (docs/vp.md).
        let g = WeightGeom {
            k: 20,
            c: 20,
            r: 5,
            s: 1,
            group: 16,
            block: 64,
            bpe: 2,
            y_ext: 2,
        };
        assert_eq!(g.offset(0, 0, 2, 0), 640 * 2);
        assert_eq!(g.offset(1, 0, 2, 0), 680 * 2);
        assert_eq!(g.offset(0, 0, 4, 0), 1280 * 2);
        assert_eq!(g.offset(16, 0, 2, 0), (1600 + 160) * 2);
    }
}
