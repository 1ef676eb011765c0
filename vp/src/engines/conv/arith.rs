//! Datapath arithmetic of the convolution core: the CMAC multiply-add of one atomic-C
//! block and the CACC accumulator, for int8/int16 and fp16.
//!
//! Integer MAC cells sum exact products (22-bit results for int8, 44-bit for int16, wide
//! enough that they never wrap); CACC adds block results into a 48-bit accumulator that
//! saturates, then rounds the sum right by `CLIP_TRUNCATE` (ties away from zero) and
//! saturates it to 32 bits for SDP (`ReshapeSequencerDirectConvCommon`,
//! `nvdlav1:cmod/cacc/NV_NVDLA_cacc.cpp`).
//!
//! fp16 is not IEEE arithmetic. A MAC cell (`calculation_fp16`,
//! `nvdlav1:cmod/cmac/NV_NVDLA_cmac.h`) works on a whole block of channels at once:
//! - a lane takes part only when both operands are non-zero (`+0` and `-0` are masked
//!   out by CSC);
//! - each 5-bit exponent splits into a coarse part (`exp >> 2`) and a fine part
//!   (`exp & 3`, or 1 for a zero exponent) that pre-shifts the 11-bit mantissa (implicit
//!   one unless the exponent is zero), so mantissas are 14-bit integers;
//! - the block exponent is the largest coarse sum `dexp>>2 + wexp>>2` over the active
//!   lanes; each product is aligned to it by a right shift of 4 bits per coarse step;
//! - products come from a radix-4 Booth multiplier whose partial products are reduced
//!   with carry-save adders into two vectors that are shifted separately, then added
//!   with a sign-compensation constant; so the truncation of an aligned product depends
//!   on that carry-save split, which [`booth_product`] reproduces;
//! - the 64 aligned products sum into a 38-bit mantissa; the result is
//!   `(block exponent * 4, mantissa)`, or a NaN marker when an operand is NaN
//!   (the first NaN weight lane wins over the first NaN data lane).
//!
//! CACC keeps an "fp48" accumulator: an 8-bit exponent and a normalised 40-bit two's
//! complement mantissa (`cacc_fp16_add`), and converts it to fp32 for SDP
//! (`cacc_fp48_to_fp32`) with round-half-up on the magnitude.

/// Saturation bounds of the 48-bit integer accumulator.
pub const ACC48_MAX: i64 = (1 << 47) - 1;
/// Lower saturation bound of the 48-bit integer accumulator.
pub const ACC48_MIN: i64 = -(1 << 47);

/// Adds a MAC block result to a 48-bit integer accumulator with saturation.
#[inline]
pub fn acc48_add(acc: i64, v: i64) -> i64 {
    (acc.saturating_add(v)).clamp(ACC48_MIN, ACC48_MAX)
}

/// CACC integer output: `acc / 2^truncate` rounded half away from zero, saturated to
/// 32 bits. Returns the value and whether it saturated.
#[inline]
pub fn cacc_int_out(acc: i64, truncate: u32) -> (i64, bool) {
    let r = crate::arith::shr_round(acc, truncate);
    let s = r.clamp(i64::from(i32::MIN), i64::from(i32::MAX));
    (s, s != r)
}

/// One decoded fp16 operand lane as the MAC cell sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct F16Lane {
    /// Operand is non-zero (CSC mask bit).
    pub active: bool,
    /// Sign bit.
    pub sign: bool,
    /// Coarse exponent `exp >> 2` (0..=7).
    pub coarse: u8,
    /// Mantissa with implicit one, pre-shifted by the fine exponent (up to 14 bits).
    pub mts: u16,
}

impl F16Lane {
    /// Decodes an fp16 bit pattern.
    #[inline]
    pub fn decode(h: u16) -> Self {
        let exp = (h >> 10) & 0x1f;
        let frac = h & 0x3ff;
        let active = h & 0x7fff != 0;
        if !active {
            return F16Lane::default();
        }
        let fine = if exp == 0 { 1 } else { exp & 3 };
        let mant = frac | if exp != 0 { 0x400 } else { 0 };
        F16Lane {
            active,
            sign: h & 0x8000 != 0,
            coarse: (exp >> 2) as u8,
            mts: mant << fine,
        }
    }
}

/// Whether an fp16 bit pattern is a NaN.
#[inline]
pub fn f16_is_nan(h: u16) -> bool {
    h & 0x7c00 == 0x7c00 && h & 0x3ff != 0
}

/// Result of one MAC cell on one block: exponent (6 bits) and 38-bit mantissa, as CMAC
/// hands it to CACC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacF16 {
    /// Block exponent (`0x3f` marks NaN).
    pub exp: u8,
    /// Two's complement mantissa (sign-extended from 38 bits).
    pub mant: i64,
}

impl MacF16 {
    /// The result of a block whose aligned products sum to `sum` (wrapped to the
    /// mantissa's 38 bits as the MAC cell's adder does) at exponent `exp`.
    pub fn from_sum(exp: u8, sum: i64) -> MacF16 {
        MacF16 {
            exp,
            mant: sext(sum as u64, 38),
        }
    }
}

/// Lanes of [`Blocks::mac_deferred`] blocks left for the Booth multiplier, which
/// [`Deferred::resolve`] runs on many lanes at once (eight to an AVX2 register): the
/// lanes shifted by 12 or more are rare in a block but many over a layer's kernels.
#[derive(Debug, Default, Clone)]
pub struct Deferred {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    lanes: arith_avx2::Deferred,
    /// Those of [`WeightRows::mac`].
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    rows: arith_rows::Pending,
}

impl Deferred {
    /// Adds each deferred lane's aligned product to `sums[owner]` and forgets the lanes.
    pub fn resolve(&mut self, sums: &mut [i64]) {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            self.lanes.resolve(sums);
            self.rows.resolve(sums);
        }
        let _ = sums;
    }
}

/// The NaN marker a MAC cell emits for a NaN operand `h`.
pub fn mac_nan(h: u16) -> MacF16 {
    let sign = i64::from(h >> 15);
    let frac = i64::from(h & 0x3ff);
    let raw = (sign << 37) | (frac << 27);
    MacF16 {
        exp: 0x3f,
        mant: sext(raw as u64, 38),
    }
}

#[inline]
fn sext(v: u64, bits: u32) -> i64 {
    let s = 64 - bits;
    ((v << s) as i64) >> s
}

/// One carry-save adder: (sum, carry << 1).
#[inline(always)]
fn csa(a: u32, b: u32, c: u32) -> (u32, u32) {
    (a ^ b ^ c, ((a & b) | (b & c) | (a & c)) << 1)
}

/// Reduces five rows as the MAC cell's adder tree does: each pass compresses the first
/// three rows into (sum, carry) and keeps the rest after them.
#[inline(always)]
fn csa5(v: [u32; 5]) -> (u32, u32) {
    let (s, c) = csa(v[0], v[1], v[2]);
    let (s, c) = csa(s, c, v[3]);
    csa(s, c, v[4])
}

/// Sign-compensation constant added after shifting the two carry-save vectors right by
/// `shift` (a multiple of 4 up to 28; none beyond): `0xaaab_0000` shifted in ones from
/// the top, with the low bit of the shifted-out part kept for shifts past 16.
#[inline(always)]
fn sign_comp(shift: u32) -> u32 {
    match shift {
        0..=16 => ((0xaaab_0000u32 as i32) >> shift) as u32,
        20 => 0xffff_faab,
        24 => 0xffff_ffab,
        28 => 0xffff_fffb,
        _ => 0,
    }
}

/// Booth digit of code `0..8` (three overlapping multiplier bits): magnitude 0, 1 or 2
/// and whether the partial product is negated.
const BOOTH_MAG: [u32; 8] = [0, 1, 1, 2, 2, 1, 1, 0];
const BOOTH_NEG: [u32; 8] = [0, 0, 0, 0, 1, 1, 1, 0];

/// Aligned product of two pre-shifted mantissas as the MAC cell's radix-4 Booth
/// multiplier computes it: `±(w * d) >> shift`, where the two carry-save vectors are
/// truncated separately before the final add (so the result is the floor of the exact
/// aligned product or one less).
#[inline]
pub fn booth_product(negative: bool, w: u32, d: u32, shift: u32) -> i32 {
    if shift >= 32 {
        return 0;
    }
    let flip = if negative { 7 } else { 0 };
    let wm = w << 1;
    let mut pp = [0u32; 8];
    let mut inv = [0u32; 8];
    for i in 0..8 {
        let code = (((wm >> (2 * i)) & 7) ^ flip) as usize;
        let mag = BOOTH_MAG[code];
        let neg = BOOTH_NEG[code];
        // d, 2d or 0; a negated row is the 16-bit complement, a positive one carries
        // the sign-extension one at bit 16.
        let v = ((d << mag) >> 1) & 0u32.wrapping_sub(mag.min(1));
        pp[i] = (v ^ (neg.wrapping_neg() & 0xffff)) | ((1 - neg) << 16);
        inv[i] = neg;
    }
    let (a0, a1) = csa5([
        pp[0],
        (pp[1] << 2) | inv[0],
        (pp[2] << 4) | (inv[1] << 2),
        (pp[3] << 6) | (inv[2] << 4),
        inv[3] << 6,
    ]);
    let (b0, b1) = csa5([
        pp[4] << 8,
        (pp[5] << 10) | (inv[4] << 8),
        (pp[6] << 12) | (inv[5] << 10),
        (pp[7] << 14) | (inv[6] << 12),
        inv[7] << 14,
    ]);
    let (s, c) = csa(a0, a1, b0);
    let (p0, p1) = csa(s, c, b1);
    let r = (p0 >> shift)
        .wrapping_add(p1 >> shift)
        .wrapping_add(sign_comp(shift));
    r as i32
}

/// Decoded operand lanes of one MAC operation, as parallel arrays.
#[derive(Debug, Default, Clone)]
pub struct Lanes {
    /// Coarse exponents.
    pub coarse: Vec<u32>,
    /// Pre-shifted mantissas.
    pub mts: Vec<u32>,
    /// Sign bits.
    pub sign: Vec<u32>,
    /// 1 when the lane is non-zero.
    pub act: Vec<u32>,
}

impl Lanes {
    /// Removes every lane.
    pub fn clear(&mut self) {
        self.coarse.clear();
        self.mts.clear();
        self.sign.clear();
        self.act.clear();
    }

    /// Appends the lane of an fp16 bit pattern.
    #[inline]
    pub fn push(&mut self, h: u16) {
        let l = F16Lane::decode(h);
        self.coarse.push(u32::from(l.coarse));
        self.mts.push(u32::from(l.mts));
        self.sign.push(u32::from(l.sign));
        self.act.push(u32::from(l.active));
    }

    /// Number of lanes.
    pub fn len(&self) -> usize {
        self.act.len()
    }

    /// No lanes.
    pub fn is_empty(&self) -> bool {
        self.act.is_empty()
    }
}

/// One MAC cell on one block of lanes (data `d`, weights `w`).
#[inline]
pub fn mac_f16(d: &Lanes, w: &Lanes) -> MacF16 {
    let n = d.len().min(w.len());
    let (dc, wc) = (&d.coarse[..n], &w.coarse[..n]);
    let (da, wa) = (&d.act[..n], &w.act[..n]);
    let (dm, wm) = (&d.mts[..n], &w.mts[..n]);
    let (ds, ws) = (&d.sign[..n], &w.sign[..n]);
    let mut max = 0u32;
    for i in 0..n {
        max = max.max((dc[i] + wc[i]) & (da[i] & wa[i]).wrapping_neg());
    }
    let mut sum: i64 = 0;
    for i in 0..n {
        if da[i] & wa[i] == 0 {
            continue;
        }
        let shift = (max - dc[i] - wc[i]) * 4;
        let neg = ds[i] != ws[i];
        let v = if shift == 0 {
            // The Booth result is exact when nothing is shifted out.
            let p = (dm[i] * wm[i]) as i32;
            if neg {
                -p
            } else {
                p
            }
        } else {
            booth_product(neg, wm[i], dm[i], shift)
        };
        sum += i64::from(v);
    }
    MacF16 {
        exp: (max * 4) as u8,
        mant: sext(sum as u64, 38),
    }
}

/// [`mac_f16`] on fp16 bit patterns.
pub fn mac_f16_block(d: &[u16], w: &[u16]) -> MacF16 {
    let (mut a, mut b) = (Lanes::default(), Lanes::default());
    d.iter().for_each(|&h| a.push(h));
    w.iter().for_each(|&h| b.push(h));
    mac_f16(&a, &b)
}

/// Coarse exponent of an inactive lane in [`Blocks`]: a coarse sum with it is negative.
const INACTIVE: i16 = -64;

/// Blocks are padded with inactive lanes to a multiple of this.
pub const LANE_CHUNK: usize = 16;

/// Most lanes the block kernel sums in 32-bit partial sums (see [`mac_f16_fast`]).
const MAX_GROUP: usize = 64;

/// MAC operand blocks of `lanes` lanes each (padded with inactive lanes, which take no
/// part in the block exponent or the sum), stored one after the other in the layout of
/// [`mac_f16_fast`]: structure of arrays of 16-bit lanes, and on x86_64 the same lanes
/// eight to an SSE2 register.
#[derive(Debug, Clone)]
pub struct Blocks {
    lanes: usize,
    /// The active lanes of each block when there are at most [`SPARSE_LANES`] of them
    /// (depthwise and grouped convolutions' block-diagonal weights, few-channel inputs):
    /// their blocks take [`Blocks::mac_sparse`], lane by lane.
    sparse: Vec<Sparse>,
    /// Coarse exponent (`exp >> 2`) of an active lane, negative for an inactive one.
    coarse: Vec<i16>,
    /// Pre-shifted mantissa with the sign applied (|v| <= 0x3ff8), 0 when inactive.
    val: Vec<i16>,
    /// `val >> 7` (arithmetic): with `lo`, `val = 128 * hi + lo`.
    hi: Vec<i16>,
    /// `val & 127`.
    lo: Vec<i16>,
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    regs: sse2::Regs,
    /// The same lanes sixteen to an AVX2 register, when the CPU has AVX2 (then `wide`).
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    regs256: arith_avx2::Regs,
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    wide: bool,
    /// The same lanes thirty-two to an AVX-512 register, when the CPU has AVX-512 and
    /// the blocks are a multiple of 32 lanes (then `wide512`, and not `wide`).
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    regs512: arith_avx512::Regs,
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    wide512: bool,
}

/// Active lanes a block may have for [`Blocks::mac_sparse`].
pub const SPARSE_LANES: usize = 6;

/// The active lanes of a block, when it has at most [`SPARSE_LANES`] (`n` is `u8::MAX`
/// for a block with more).
#[derive(Debug, Clone, Copy)]
struct Sparse {
    n: u8,
    lanes: [u8; SPARSE_LANES],
}

/// One block of [`Blocks`].
#[derive(Debug, Clone, Copy)]
pub struct BlockRef<'a> {
    coarse: &'a [i16],
    val: &'a [i16],
    hi: &'a [i16],
    lo: &'a [i16],
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    data: &'a [[safe_arch::m128i; 5]],
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    weight: &'a [[safe_arch::m128i; 2]],
}

impl Blocks {
    /// Empty, for blocks of up to `lanes` lanes.
    pub fn new(lanes: usize) -> Self {
        let lanes = lanes.max(1).div_ceil(LANE_CHUNK) * LANE_CHUNK;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        let wide512 = lanes.is_multiple_of(32) && arith_avx512::available();
        Blocks {
            lanes,
            sparse: Vec::new(),
            coarse: Vec::new(),
            val: Vec::new(),
            hi: Vec::new(),
            lo: Vec::new(),
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            regs: sse2::Regs::default(),
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            regs256: arith_avx2::Regs::default(),
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            wide: !wide512 && arith_avx2::available(),
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            regs512: arith_avx512::Regs::default(),
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            wide512,
        }
    }

    /// Removes every block.
    pub fn clear(&mut self) {
        self.sparse.clear();
        self.coarse.clear();
        self.val.clear();
        self.hi.clear();
        self.lo.clear();
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            self.regs.clear();
            self.regs256.clear();
            self.regs512.clear();
        }
    }

    /// Appends the block of fp16 bit patterns `h` (at most `lanes` of them; more are
    /// ignored).
    pub fn push_block(&mut self, h: &[u16]) {
        let start = self.val.len();
        for i in 0..self.lanes {
            let l = F16Lane::decode(h.get(i).copied().unwrap_or(0));
            let (c, v) = if l.active {
                let m = l.mts as i16;
                (i16::from(l.coarse), if l.sign { -m } else { m })
            } else {
                (INACTIVE, 0)
            };
            self.coarse.push(c);
            self.val.push(v);
            self.hi.push(v >> 7);
            self.lo.push(v & 127);
        }
        let mut sparse = Sparse {
            n: 0,
            lanes: [0; SPARSE_LANES],
        };
        for (i, _) in self.coarse[start..]
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != INACTIVE)
        {
            if usize::from(sparse.n) == SPARSE_LANES {
                sparse.n = u8::MAX;
                break;
            }
            sparse.lanes[usize::from(sparse.n)] = i as u8;
            sparse.n += 1;
        }
        self.sparse.push(sparse);
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            // The new lanes in register-sized runs: coarse, hi, lo and val.
            let new = [
                &self.coarse[start..],
                &self.hi[start..],
                &self.lo[start..],
                &self.val[start..],
            ];
            fn runs(
                new: [&[i16]; 4],
                width: usize,
                mut push: impl FnMut(&[i16], &[i16], &[i16], &[i16]),
            ) {
                let [c, h, l, v] = new.map(|x| x.chunks_exact(width));
                for (((c, h), l), v) in c.zip(h).zip(l).zip(v) {
                    push(c, h, l, v);
                }
            }
            runs(new, 8, |c, h, l, v| self.regs.push(c, h, l, v));
            if self.wide {
                runs(new, 16, |c, h, l, v| self.regs256.push(c, h, l, v));
            }
            if self.wide512 {
                runs(new, 32, |c, h, l, v| self.regs512.push(c, h, l, v));
            }
        }
        let _ = start;
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.val.len() / self.lanes
    }

    /// No blocks.
    pub fn is_empty(&self) -> bool {
        self.val.is_empty()
    }

    /// [`mac_f16_fast`] on data block `di` of `self` and weight block `wi` of `w`.
    #[inline]
    pub fn mac(&self, di: usize, w: &Blocks, wi: usize) -> MacF16 {
        if let Some((exp, sum)) = self.mac_sparse(di, w, wi) {
            return MacF16::from_sum(exp, sum);
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            let (dr, wr) = (
                di * self.lanes..(di + 1) * self.lanes,
                wi * w.lanes..(wi + 1) * w.lanes,
            );
            if self.wide512 && w.wide512 {
                return self.mac_avx512(di, w, wi);
            }
            if self.wide && w.wide {
                return self.mac_avx2(di, w, wi);
            }
            let (dn, wn) = (self.lanes / 8, w.lanes / 8);
            sse2::mac_block(
                &self.regs.data[di * dn..(di + 1) * dn],
                &w.regs.weight[wi * wn..(wi + 1) * wn],
                [
                    &self.coarse[dr.clone()],
                    &self.val[dr],
                    &w.coarse[wr.clone()],
                    &w.val[wr],
                ],
            )
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        mac_f16_portable(self.block(di), w.block(wi))
    }

    /// [`Blocks::mac`] in two steps, for blocks without NaN operands: returns the block
    /// exponent and the sum of the aligned products except those of the lanes left in
    /// `deferred` for block `owner`; once [`Deferred::resolve`] has added them to the
    /// sums, [`MacF16::from_sum`] gives what [`Blocks::mac`] gives. (Lanes are deferred
    /// on CPUs with AVX2; elsewhere the sum is complete.)
    #[inline]
    pub fn mac_deferred(
        &self,
        di: usize,
        w: &Blocks,
        wi: usize,
        owner: u32,
        deferred: &mut Deferred,
    ) -> (u8, i64) {
        if let Some(r) = self.mac_sparse(di, w, wi) {
            return r;
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if self.wide512 && w.wide512 {
            let (dn, wn) = (self.lanes / 32, w.lanes / 32);
            let (d, wt) = (
                &self.regs512.data[di * dn..(di + 1) * dn],
                &w.regs512.weight[wi * wn..(wi + 1) * wn],
            );
            // SAFETY: `wide512` is set only when `arith_avx512::available()` found AVX-512
            // F and BW (and AVX2) on this CPU (`Blocks::new`), checked above for both.
            #[allow(unsafe_code)]
            return unsafe {
                arith_avx512::mac_block_deferred(
                    d,
                    wt,
                    self.lanes_of(di, w, wi),
                    owner,
                    &mut deferred.lanes,
                )
            };
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if self.wide && w.wide {
            let (dn, wn) = (self.lanes / 16, w.lanes / 16);
            let (dr, wr) = (
                di * self.lanes..(di + 1) * self.lanes,
                wi * w.lanes..(wi + 1) * w.lanes,
            );
            let lanes = [
                &self.coarse[dr.clone()],
                &self.val[dr],
                &w.coarse[wr.clone()],
                &w.val[wr],
            ];
            let (d, wt) = (
                &self.regs256.data[di * dn..(di + 1) * dn],
                &w.regs256.weight[wi * wn..(wi + 1) * wn],
            );
            // SAFETY: `wide` is set only when `arith_avx2::available()` found AVX2 on
            // this CPU (`Blocks::new`), checked above for both block sets.
            #[allow(unsafe_code)]
            return unsafe {
                arith_avx2::mac_block_deferred(d, wt, lanes, owner, &mut deferred.lanes)
            };
        }
        let _ = (owner, &deferred);
        let m = self.mac(di, w, wi);
        (m.exp, m.mant)
    }

    /// The block exponent and the sum of the aligned products when weight block `wi` of
    /// `w` or data block `di` has at most [`SPARSE_LANES`] active lanes, lane by lane:
    /// only lanes active on both sides take part in the block exponent (the largest
    /// coarse sum) and the sum, each lane's product aligned as the vector kernels and
    /// the Booth multiplier align it ([`lane_product`]). `None` for a dense pair.
    #[inline]
    fn mac_sparse(&self, di: usize, w: &Blocks, wi: usize) -> Option<(u8, i64)> {
        let (ws, ds) = (w.sparse[wi], self.sparse[di]);
        let lanes = if ws.n <= ds.n { ws } else { ds };
        if lanes.n == u8::MAX {
            return None;
        }
        let (d0, w0) = (di * self.lanes, wi * w.lanes);
        // Lane `i`'s coarse sum and signed mantissas, when it is active on both sides.
        let lane = |i: u8| -> Option<(i32, i32, i32)> {
            let i = usize::from(i);
            let (dc, wc) = (self.coarse[d0 + i], w.coarse[w0 + i]);
            (dc != INACTIVE && wc != INACTIVE).then(|| {
                (
                    i32::from(dc) + i32::from(wc),
                    i32::from(self.val[d0 + i]),
                    i32::from(w.val[w0 + i]),
                )
            })
        };
        let active = &lanes.lanes[..usize::from(lanes.n)];
        if let [i] = active {
            // One lane: aligned by 0 bits, its exact product.
            return Some(
                lane(*i).map_or((0, 0), |(c, dv, wv)| ((c * 4) as u8, i64::from(dv * wv))),
            );
        }
        let Some(max) = active
            .iter()
            .filter_map(|&i| lane(i))
            .map(|(c, _, _)| c)
            .max()
        else {
            return Some((0, 0));
        };
        let t8 = booth8_errors();
        let sum = active
            .iter()
            .filter_map(|&i| lane(i))
            .map(|(c, dv, wv)| i64::from(lane_product(max, c, dv, wv, t8)))
            .sum();
        Some(((max * 4) as u8, sum))
    }

    /// The lane arrays of data block `di` and weight block `wi` of `w`: data coarse and
    /// value, weight coarse and value (for the AVX-512 kernels).
    #[cfg(target_arch = "x86_64")]
    fn lanes_of<'a>(&'a self, di: usize, w: &'a Blocks, wi: usize) -> [&'a [i16]; 4] {
        let (dr, wr) = (
            di * self.lanes..(di + 1) * self.lanes,
            wi * w.lanes..(wi + 1) * w.lanes,
        );
        [
            &self.coarse[dr.clone()],
            &self.val[dr],
            &w.coarse[wr.clone()],
            &w.val[wr],
        ]
    }

    /// [`Blocks::mac`] on the AVX-512 registers (both block sets must be `wide512`).
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[allow(unsafe_code)]
    #[inline]
    fn mac_avx512(&self, di: usize, w: &Blocks, wi: usize) -> MacF16 {
        let (dn, wn) = (self.lanes / 32, w.lanes / 32);
        let (d, wt) = (
            &self.regs512.data[di * dn..(di + 1) * dn],
            &w.regs512.weight[wi * wn..(wi + 1) * wn],
        );
        assert!(self.wide512 && w.wide512);
        // SAFETY: `wide512` is set only when `arith_avx512::available()` found AVX-512 F
        // and BW (and AVX2) on this CPU (`Blocks::new`), and the assertion above checks
        // it for both block sets.
        unsafe { arith_avx512::mac_block(d, wt, self.lanes_of(di, w, wi)) }
    }

    /// [`Blocks::mac`] on the AVX2 registers (both block sets must be `wide`).
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[allow(unsafe_code)]
    #[inline]
    fn mac_avx2(&self, di: usize, w: &Blocks, wi: usize) -> MacF16 {
        let (dn, wn) = (self.lanes / 16, w.lanes / 16);
        let (dr, wr) = (
            di * self.lanes..(di + 1) * self.lanes,
            wi * w.lanes..(wi + 1) * w.lanes,
        );
        let (d, wt) = (
            &self.regs256.data[di * dn..(di + 1) * dn],
            &w.regs256.weight[wi * wn..(wi + 1) * wn],
        );
        let lanes = [
            &self.coarse[dr.clone()],
            &self.val[dr],
            &w.coarse[wr.clone()],
            &w.val[wr],
        ];
        assert!(self.wide && w.wide);
        // SAFETY: `wide` is set only when `arith_avx2::available()` found AVX2 on this CPU
        // (`Blocks::new`), and the assertion above checks it for both block sets, so the
        // `#[target_feature(enable = "avx2")]` kernel runs on a CPU that has the feature.
        unsafe { arith_avx2::mac_block(d, wt, lanes) }
    }

    /// Block `i`.
    pub fn block(&self, i: usize) -> BlockRef<'_> {
        let r = i * self.lanes..(i + 1) * self.lanes;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        let g = i * self.lanes / 8..(i + 1) * self.lanes / 8;
        BlockRef {
            coarse: &self.coarse[r.clone()],
            val: &self.val[r.clone()],
            hi: &self.hi[r.clone()],
            lo: &self.lo[r],
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            data: &self.regs.data[g.clone()],
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            weight: &self.regs.weight[g],
        }
    }
}

/// Truncation errors of the Booth multiplier at shift 8: bit set when
/// `booth_product(negative, w, d, 8)` is one less than `x >> 8`, `x = ±w·d`.
///
/// Checked exhaustively over all 14-bit `w`, `d` and both signs
/// (`booth_shift_8_table_is_exact`, run with `--ignored`): the error is 0 or 1, it is 0
/// whenever the low byte of `x` exceeds 8, and otherwise it is determined by the sign,
/// that low byte, `w & 15` and `d & 7`. The bitmap is indexed by [`booth8_index`]
/// (2560 bits, so it stays in the L1 cache).
fn booth8_errors() -> &'static [u64; 40] {
    static TABLE: std::sync::OnceLock<[u64; 40]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [0u64; 40];
        // The error depends on the low 8 bits of w and d only (checked exhaustively).
        for neg in [false, true] {
            for w in 0..256u32 {
                for d in 0..256u32 {
                    let p = (w * d) as i32;
                    let x = if neg { -p } else { p };
                    if booth_product(neg, w, d, 8) != x >> 8 {
                        let i = booth8_index(neg, x, w, d);
                        t[i / 64] |= 1 << (i % 64);
                    }
                }
            }
        }
        t
    })
}

/// Bit of [`booth8_errors`] for sign `neg`, product `x` and magnitudes `w`, `d`: a low
/// byte of 9 or more selects rows that are all zero.
#[inline(always)]
fn booth8_index(neg: bool, x: i32, w: u32, d: u32) -> usize {
    let low = (x & 0xff).min(9) as usize;
    ((usize::from(neg) * 10 + low) * 16 + (w & 15) as usize) * 8 + (d & 7) as usize
}

/// Aligned Booth product of one active lane (`c` its coarse sum, `dv`/`wv` signed
/// mantissas), shortcutting the shifts where the truncation is known exactly.
#[inline]
fn lane_product(max: i32, c: i32, dv: i32, wv: i32, t8: &[u64; 40]) -> i32 {
    let shift = (4 * (max - c)) as u32;
    let p = dv * wv;
    if shift <= 8 {
        // Shift 0: exact. Shift 4: the floor (the carry-save truncation never loses a
        // carry there, checked exhaustively). Shift 8: the floor less the tabulated
        // error.
        let i = booth8_index((dv ^ wv) < 0, p, wv.unsigned_abs(), dv.unsigned_abs());
        let e = ((t8[i / 64] >> (i % 64)) & 1) as i32;
        (p >> shift) - (e & -i32::from(shift == 8))
    } else {
        booth_product((dv ^ wv) < 0, wv.unsigned_abs(), dv.unsigned_abs(), shift)
    }
}

/// One MAC cell on one block: the result of [`mac_f16`], computed without the Booth
/// multiplier for the lanes aligned by 0 or 4 bits (the common case).
///
/// For every lane the aligned product is exact when the shift is 0, and the floor of the
/// exact product when it is 4 (the carry-save truncation never loses a carry there,
/// checked exhaustively). With the data mantissa split as `d = 128 * hi + lo`:
/// - shift 0: `Σ w·d = 128·Σ w·hi + Σ w·lo`, two 16x16-bit multiply-add reductions
///   (`pmaddwd`) whose sums stay within 2^27 for 64 lanes;
/// - shift 4: `Σ floor(w·d / 16) = 8·Σ w·hi + Σ floor(w·lo / 16)`, since `128·w·hi`
///   is a multiple of 16; the last products are under 2^21, the sum under 2^27.
///
/// Lanes shifted by 8 take the floor less a tabulated truncation error; the rare larger
/// shifts run the Booth multiplier. On x86_64 the kernel runs on SSE2 registers
/// (`sse2::mac`), elsewhere in plain Rust ([`mac_f16_portable`]).
#[inline]
pub fn mac_f16_fast(d: BlockRef<'_>, w: BlockRef<'_>) -> MacF16 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        sse2::mac_block(d.data, w.weight, [d.coarse, d.val, w.coarse, w.val])
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    mac_f16_portable(d, w)
}

/// [`mac_f16_fast`] in plain Rust: the path of targets without SSE2, and a second
/// oracle of the SSE2 kernel in tests.
pub fn mac_f16_portable(d: BlockRef<'_>, w: BlockRef<'_>) -> MacF16 {
    let n = d.val.len().min(w.val.len());
    let mut max = 2 * INACTIVE;
    for (&a, &b) in d.coarse[..n].iter().zip(&w.coarse[..n]) {
        max = max.max(a + b);
    }
    if max < 0 {
        return MacF16 { exp: 0, mant: 0 };
    }
    let t8 = booth8_errors();
    let mut sum: i64 = 0;
    let mut start = 0;
    while start < n {
        let end = n.min(start + MAX_GROUP);
        sum += mac_group(d, w, start..end, max, t8);
        start = end;
    }
    MacF16 {
        exp: (max * 4) as u8,
        mant: sext(sum as u64, 38),
    }
}

/// The sum of aligned products of lanes `r` (at most [`MAX_GROUP`]).
#[inline]
fn mac_group(
    d: BlockRef<'_>,
    w: BlockRef<'_>,
    r: std::ops::Range<usize>,
    max: i16,
    t8: &[u64; 40],
) -> i64 {
    let (dc, wc) = (&d.coarse[r.clone()], &w.coarse[r.clone()]);
    let (dh, dl, dv) = (&d.hi[r.clone()], &d.lo[r.clone()], &d.val[r.clone()]);
    let wv = &w.val[r];
    let n = wv.len();
    let (dc, wc, dh, dl, dv) = (&dc[..n], &wc[..n], &dh[..n], &dl[..n], &dv[..n]);
    // Shift 0 lanes: hi and lo parts, each a multiply-add reduction.
    let (mut s0h, mut s0l) = (0i32, 0i32);
    for i in 0..n {
        let k0 = -i16::from(dc[i] + wc[i] == max);
        s0h += i32::from(dh[i] & k0) * i32::from(wv[i]);
        s0l += i32::from(dl[i] & k0) * i32::from(wv[i]);
    }
    // Shift 4 lanes.
    let (mut s1h, mut s1l) = (0i32, 0i32);
    for i in 0..n {
        let k1 = -i16::from(dc[i] + wc[i] == max - 1);
        s1h += i32::from(dh[i] & k1) * i32::from(wv[i]);
        s1l += (i32::from(dl[i] & k1) * i32::from(wv[i])) >> 4;
    }
    let mut sum = 128 * i64::from(s0h) + i64::from(s0l) + 8 * i64::from(s1h) + i64::from(s1l);
    // Larger shifts, one lane at a time.
    for i in 0..n {
        let c = dc[i] + wc[i];
        if c >= 0 && c < max - 1 {
            let (c, m) = (i32::from(c), i32::from(max));
            sum += i64::from(lane_product(m, c, i32::from(dv[i]), i32::from(wv[i]), t8));
        }
    }
    sum
}

/// The block kernel on SSE2 registers of eight 16-bit lanes (`safe_arch` wraps the
/// intrinsics, so the crate stays free of `unsafe`).
///
/// Per register: the coarse sums `c = dc + wc`, masks `k0 = (c == max)` and
/// `k1 = (c == max - 1)`, then two multiply-add reductions (`pmaddwd`) of the weights
/// with `a_h = 16·hi` (k0) or `hi` (k1) and `a_l = 16·lo` (k0) or `lo` (k1), and the
/// remainders `(w·lo) mod 16` of the k1 lanes (`pmullw`). With the mantissa split
/// `d = 128·hi + lo` (see [`mac_f16_fast`]):
/// `16 · Σ = 128·Σ w·a_h + Σ w·a_l − Σ_k1 (w·lo mod 16)`, an exact division by 16.
/// Bounds: |16·hi|, 16·lo <= 2048 and |w| <= 0x3ff8, so a 32-bit register lane, which
/// gets two products per register of lanes, holds 16 products (a group of 64 lanes)
/// below 2^30; the remainders, at most 15 per register, stay below 2^7 in 16-bit lanes.
/// Lanes shifted by 8 or more are flagged with `movemask` and computed one at a time.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[path = "arith_avx2.rs"]
mod arith_avx2;

#[path = "arith_columns.rs"]
mod arith_columns;
pub use arith_columns::WeightColumns;

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[path = "arith_avx512.rs"]
mod arith_avx512;

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[path = "arith_rows.rs"]
mod arith_rows;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[path = "arith_rows_avx2.rs"]
mod arith_rows_avx2;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub use arith_rows::{DataLanes, WeightRows, WIDTH as ROW_WIDTH};

/// The weight rows need AVX-512: elsewhere they are never built.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
mod no_rows {
    use super::{Deferred, Fp48};

    /// Kernels of a row.
    pub const ROW_WIDTH: usize = 16;

    /// Never built on this architecture.
    #[derive(Debug, Clone)]
    pub enum WeightRows {}

    impl WeightRows {
        /// As on x86_64.
        pub const MAX_OWNERS: usize = 1 << 23;

        /// Never.
        pub fn available() -> bool {
            false
        }

        /// Never.
        pub fn build(
            _: usize,
            _: usize,
            _: usize,
            _: impl Fn(usize, usize, &mut [u16]) + Sync,
        ) -> Option<Self> {
            None
        }

        /// Never called: there are no rows.
        pub fn sum_exact(&self, _: &[u8], _: &[i64], _: usize, _: usize) -> [Option<Fp48>; 16] {
            match *self {}
        }

        /// Never called: there are no rows.
        pub fn mac(
            &self,
            _: &[()],
            _: usize,
            _: std::ops::Range<usize>,
            _: usize,
            _: (&mut [u8], &mut [i64]),
            _: &mut Deferred,
        ) {
            match *self {}
        }
    }

    /// No lanes.
    #[derive(Debug, Clone, Default)]
    pub struct DataLanes;

    impl DataLanes {
        /// No lanes.
        pub fn clear(&mut self) {}

        /// No lanes.
        pub fn push_block(&mut self, _: &[u16]) {}

        /// No lanes.
        pub fn append(&mut self, _: &DataLanes) {}

        /// No lanes.
        pub fn block(&self, _: usize) -> &[()] {
            &[]
        }
    }
}
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
pub use no_rows::{DataLanes, WeightRows, ROW_WIDTH};

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use super::{booth8_errors, lane_product, sext, MacF16};
    use safe_arch::{
        add_i16_m128i, add_i32_m128i, bitand_m128i, bitor_m128i, cmp_eq_mask_i16_m128i,
        cmp_gt_mask_i16_m128i, extract_i16_as_i32_m128i, get_i32_from_m128i_s, m128i,
        max_i16_m128i, move_mask_i8_m128i, mul_i16_horizontal_add_m128i, mul_i16_keep_low_m128i,
        set_splat_i16_m128i, shuffle_ai_f32_all_m128i, shuffle_ai_i16_l64all_m128i, sub_i32_m128i,
        zeroed_m128i,
    };

    /// Registers per group: 64 lanes (the bound above).
    const GROUP: usize = 8;

    /// Lanes eight to a register, interleaved per register: as data
    /// `[c, hi, 16·hi, lo, 16·lo]`, as weights `[c, val]` (the kernel reads 32 bytes of
    /// weights per eight lanes, so a layer's weights stay in cache).
    #[derive(Debug, Default, Clone)]
    pub(super) struct Regs {
        pub(super) data: Vec<[m128i; 5]>,
        pub(super) weight: Vec<[m128i; 2]>,
    }

    fn reg(x: &[i16], scale: i16) -> m128i {
        let mut a = [0i16; 8];
        for (o, &v) in a.iter_mut().zip(x) {
            *o = v * scale;
        }
        m128i::from(a)
    }

    impl Regs {
        pub(super) fn clear(&mut self) {
            self.data.clear();
            self.weight.clear();
        }

        /// Appends eight lanes given as arrays.
        pub(super) fn push(&mut self, c: &[i16], hi: &[i16], lo: &[i16], val: &[i16]) {
            let cr = reg(c, 1);
            self.data
                .push([cr, reg(hi, 1), reg(hi, 16), reg(lo, 1), reg(lo, 16)]);
            self.weight.push([cr, reg(val, 1)]);
        }
    }

    /// Sum of the four 32-bit lanes (pairs first, in 32 bits: see the bounds above).
    #[inline(always)]
    fn sum_i32(v: m128i) -> i64 {
        let t = add_i32_m128i(v, shuffle_ai_f32_all_m128i::<0x4e>(v));
        i64::from(get_i32_from_m128i_s(t))
            + i64::from(get_i32_from_m128i_s(shuffle_ai_f32_all_m128i::<0x55>(t)))
    }

    /// Largest of the eight 16-bit lanes.
    #[inline(always)]
    fn max_i16(v: m128i) -> i16 {
        let v = max_i16_m128i(v, shuffle_ai_f32_all_m128i::<0x4e>(v));
        let v = max_i16_m128i(v, shuffle_ai_f32_all_m128i::<0xb1>(v));
        let v = max_i16_m128i(v, shuffle_ai_i16_l64all_m128i::<0xb1>(v));
        extract_i16_as_i32_m128i::<0>(v) as i16
    }

    /// The MAC cell on one block given as data and weight registers.
    #[inline(always)]
    /// `lanes` holds the same lanes as arrays: data coarse and value, weight coarse and
    /// value.
    pub(super) fn mac_block(d: &[[m128i; 5]], w: &[[m128i; 2]], lanes: [&[i16]; 4]) -> MacF16 {
        let n = d.len().min(w.len());
        let (d, w) = (&d[..n], &w[..n]);
        let mut m = set_splat_i16_m128i(i16::MIN);
        for (a, b) in d.iter().zip(w) {
            m = max_i16_m128i(m, add_i16_m128i(a[0], b[0]));
        }
        let max = max_i16(m);
        if max < 0 {
            return MacF16 { exp: 0, mant: 0 };
        }
        MacF16 {
            exp: (max * 4) as u8,
            mant: sext(mac(d, w, max, lanes) as u64, 38),
        }
    }

    /// The sum of the aligned products of all lanes, for block exponent `max`.
    #[inline(always)]
    fn mac(dv: &[[m128i; 5]], wv: &[[m128i; 2]], max: i16, lanes: [&[i16]; 4]) -> i64 {
        let max0 = set_splat_i16_m128i(max);
        let max1 = set_splat_i16_m128i(max - 1);
        let minus1 = set_splat_i16_m128i(-1);
        let fifteen = set_splat_i16_m128i(15);
        let ones = set_splat_i16_m128i(1);
        let mut total: i64 = 0;
        for (g, (dg, wg)) in dv.chunks(GROUP).zip(wv.chunks(GROUP)).enumerate() {
            let (mut ah, mut al, mut rem) = (zeroed_m128i(), zeroed_m128i(), zeroed_m128i());
            // Two mask bits per lane, four registers to a word.
            let mut slow = [0u64; GROUP / 4];
            for (j, (dr, wr)) in dg.iter().zip(wg).enumerate() {
                let [dc, h, h16, l, l16] = *dr;
                let [wc, w] = *wr;
                let c = add_i16_m128i(dc, wc);
                let k0 = cmp_eq_mask_i16_m128i(c, max0);
                let k1 = cmp_eq_mask_i16_m128i(c, max1);
                let lo1 = bitand_m128i(l, k1);
                let a_h = bitor_m128i(bitand_m128i(h16, k0), bitand_m128i(h, k1));
                let a_l = bitor_m128i(bitand_m128i(l16, k0), lo1);
                ah = add_i32_m128i(ah, mul_i16_horizontal_add_m128i(a_h, w));
                al = add_i32_m128i(al, mul_i16_horizontal_add_m128i(a_l, w));
                let r = bitand_m128i(mul_i16_keep_low_m128i(w, lo1), fifteen);
                rem = add_i16_m128i(rem, r);
                // Active (c >= 0) and shifted by 8 or more (c < max - 1).
                let s = bitand_m128i(
                    cmp_gt_mask_i16_m128i(c, minus1),
                    cmp_gt_mask_i16_m128i(max1, c),
                );
                slow[j / 4] |= u64::from(move_mask_i8_m128i(s) as u16) << (16 * (j % 4));
            }
            // al - rem per 32-bit lane (rem < 2^10), then the lane sums.
            let al = sub_i32_m128i(al, mul_i16_horizontal_add_m128i(rem, ones));
            let sixteen = 128 * sum_i32(ah) + sum_i32(al);
            debug_assert_eq!(sixteen % 16, 0);
            total += sixteen >> 4;
            if slow != [0; GROUP / 4] {
                total += slow_lanes(lanes, g * GROUP * 8, max, slow);
            }
        }
        total
    }

    /// The lanes flagged in `slow` (two bits per lane; lane `base` first), one at a
    /// time.
    #[inline(never)]
    pub(super) fn slow_lanes(
        lanes: [&[i16]; 4],
        base: usize,
        max: i16,
        slow: [u64; GROUP / 4],
    ) -> i64 {
        let [dc, dv, wc, wv] = lanes;
        let t8 = booth8_errors();
        let mut total = 0;
        for (word, mut bits) in slow.into_iter().enumerate() {
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= !(3u64 << b);
                let i = base + word * 32 + b / 2;
                let c = i32::from(dc[i] + wc[i]);
                let p = lane_product(i32::from(max), c, dv[i].into(), wv[i].into(), t8);
                total += i64::from(p);
            }
        }
        total
    }
}

/// The NaN marker of a block, if any operand is NaN: the first NaN weight lane, else
/// the first NaN data lane (masked lanes included).
pub fn block_nan(d: &[u16], w: &[u16]) -> Option<MacF16> {
    if let Some(&h) = w.iter().find(|&&h| f16_is_nan(h)) {
        return Some(mac_nan(h));
    }
    d.iter().find(|&&h| f16_is_nan(h)).map(|&h| mac_nan(h))
}

/// CACC fp48 accumulator: 8-bit exponent, 40-bit two's complement mantissa.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fp48 {
    /// Exponent (255 marks NaN).
    pub exp: u8,
    /// Mantissa, sign-extended from 40 bits.
    pub mant: i64,
}

const M40: u64 = (1 << 40) - 1;

#[inline]
fn bit(v: i64, n: u32) -> bool {
    (v >> n) & 1 != 0
}

/// The highest bit of `v` at or below `top` that differs from `sign`, or -1.
#[inline]
fn top_bit_differing(v: i64, sign: bool, top: u32) -> i32 {
    let x = if sign { !v } else { v } as u64 & ((2u64 << top) - 1);
    63 - x.leading_zeros() as i32
}

impl Fp48 {
    /// The accumulator after adding block results `(exp, sum)` ([`MacF16::from_sum`])
    /// one by one from zero, when no step can round: `None` otherwise.
    ///
    /// In [`Fp48::accumulate`]'s units a block result `(e, m)` is `m · 2^(e + 51)` and the
    /// accumulator `mant · 2^exp` with `mant` normalised (bit 38 differs from the sign).
    /// When every nonzero result is a multiple of `2^lo` and the sum of their magnitudes
    /// is below `2^(lo + 37)`, every operand and partial sum has its leading bit at most
    /// at `lo + 36`, so the accumulator's lowest bit sits below `2^lo`: no alignment
    /// shifts out a set bit, an overflow's one-bit shift drops a zero and nothing rounds.
    /// The result is then the exact sum, normalised.
    pub fn sum_exact(exps: &[u8], sums: &[i64]) -> Option<Fp48> {
        // The lowest exponent of a nonzero result (a NaN marker: no exact sum).
        let mut emin = u8::MAX;
        for (&e, &s) in exps.iter().zip(sums) {
            if sext(s as u64, 38) != 0 {
                if e == 0x3f {
                    return None;
                }
                emin = emin.min(e);
            }
        }
        if emin == u8::MAX {
            return Some(Fp48::default());
        }
        // In units of 2^(emin + 51): exponents below the NaN marker and 38-bit mantissas
        // stay within 101 bits. `lo` above is `emin + 51` plus the trailing zeros of the
        // OR of the magnitudes.
        let (mut total, mut magnitude, mut ones) = (0i128, 0u128, 0u128);
        for (&e, &s) in exps.iter().zip(sums) {
            let m = sext(s as u64, 38);
            if m != 0 {
                let v = i128::from(m) << (e - emin);
                total += v;
                magnitude += v.unsigned_abs();
                ones |= v.unsigned_abs();
            }
        }
        Self::from_exact(emin, total, magnitude, ones)
    }

    /// The end of [`Fp48::sum_exact`]: the accumulator holding `total` (in units of
    /// `2^(emin + 51)`), when the magnitudes summing to `magnitude` (ORed into `ones`)
    /// meet its condition; `None` otherwise.
    pub fn from_exact(emin: u8, total: i128, magnitude: u128, ones: u128) -> Option<Fp48> {
        let zeros = ones.trailing_zeros();
        let lo = i32::from(emin) + 51 + zeros as i32;
        // Every result and the sum of their magnitudes below 2^(lo + 37).
        if magnitude >> zeros >= 1 << 37 {
            return None;
        }
        let total = (total >> zeros) as i64;
        if total == 0 {
            return Some(Fp48::default());
        }
        let lead = top_bit_differing(total, total < 0, 62);
        let exp = lo - (38 - lead);
        (1..255).contains(&exp).then(|| Fp48 {
            exp: exp as u8,
            mant: total << (38 - lead),
        })
    }

    /// Adds one MAC block result.
    #[inline]
    pub fn accumulate(self, mac: MacF16) -> Fp48 {
        if mac.mant == 0 {
            return self;
        }
        if self.exp == 0xff || mac.exp == 0x3f {
            return self.accumulate_nan(mac);
        }
        // Normalise the 38-bit MAC mantissa so that bit 36 differs from the sign, and
        // widen it to 40 bits (two more low bits).
        let m = mac.mant;
        let sh0 = (36 - top_bit_differing(m, bit(m, 37), 36)) as u32;
        let mut mac_ext = sext((m as u64) << (sh0 + 2), 40);
        let mac_exp = (i32::from(mac.exp) - sh0 as i32 + 49) & 0xff;

        let mut acc_ext = self.mant;
        let acc_exp = if self.mant == 0 {
            0
        } else {
            i32::from(self.exp)
        };

        // Align the smaller operand to the bigger exponent, keeping the bits shifted out
        // (top-aligned in `out`); equal exponents shift nothing.
        let diff = mac_exp - acc_exp;
        let bigger = mac_exp.max(acc_exp);
        let d = diff.unsigned_abs();
        let x = if diff > 0 { acc_ext } else { mac_ext };
        let ds = d.min(40);
        let low = (x as u64) & ((1u64 << ds) - 1);
        let (xs, mut out) = if d <= 40 {
            (x >> ds, (low << (40 - ds)) & M40)
        } else {
            (0, 0)
        };
        if diff > 0 {
            acc_ext = xs;
        } else {
            mac_ext = xs;
        }

        let sum_tmp = sext((acc_ext.wrapping_add(mac_ext)) as u64, 40);
        let s39 = bit(sum_tmp, 39);
        let (sum, mut exp, round) =
            if bit(mac_ext, 39) == bit(acc_ext, 39) && bit(mac_ext, 39) != s39 {
                // Overflow: one bit right.
                let high_bit1 = bit(sum_tmp, 0);
                let sign = u64::from(bit(mac_ext, 39)) << 39;
                let sum = sext(sign | ((sum_tmp as u64 & M40) >> 1), 40);
                let round = high_bit1 && (!bit(sum, 39) || out != 0);
                (sum, bigger + 1, round)
            } else {
                // Normalise left by `n1` (0 when bit 38 already differs from the sign),
                // shifting in the bits shifted out.
                let n1 = (38 - top_bit_differing(sum_tmp, s39, 38)) as u32;
                let sum = sext((((sum_tmp as u64) << n1) | (out >> (40 - n1))) & M40, 40);
                out = (out << n1) & M40;
                let guard0 = (out >> 39) & 1 != 0;
                let sticky0 = out & ((1 << 39) - 1) != 0;
                let round = guard0 && (!bit(sum, 39) || sticky0);
                (sum, bigger - n1 as i32, round)
            };
        let neg = bit(sum, 39);
        let rounded = sext((sum as u64).wrapping_add(u64::from(round)), 40);
        let fin = if bit(rounded, 39) != neg {
            exp += 1;
            let sign = u64::from(neg) << 39;
            sext(sign | ((rounded as u64 & M40) >> 1), 40)
        } else {
            rounded
        };
        Fp48 {
            exp: if fin == 0 { 0 } else { (exp & 0xff) as u8 },
            mant: fin,
        }
    }

    /// [`Fp48::accumulate`] when the accumulator or the block result is NaN.
    #[cold]
    fn accumulate_nan(self, mac: MacF16) -> Fp48 {
        if self.exp == 0xff {
            // NaN accumulator keeps its top 11 mantissa bits.
            return Fp48 {
                exp: 0xff,
                mant: sext(self.mant as u64 & (0x7ff << 29), 40),
            };
        }
        let top = ((mac.mant as u64) >> 27) & 0x7ff;
        Fp48 {
            exp: 0xff,
            mant: sext(top << 29, 40),
        }
    }

    /// Converts to the fp32 bit pattern CACC delivers to SDP.
    pub fn to_f32_bits(self) -> u32 {
        let m = self.mant;
        let sign = u32::from(bit(m, 39));
        if self.exp == 0xff {
            let payload = ((m as u64 >> 29) & 0x3ff) as u32;
            return (sign << 31) | (0xff << 23) | payload;
        }
        let low39 = (m as u64) & ((1 << 39) - 1);
        if sign == 1 && low39 == 0 {
            let e = u32::from(self.exp).wrapping_add(65) & 0xff;
            return (1 << 31) | (e << 23);
        }
        let mag = if sign == 1 {
            (!low39).wrapping_add(1) & ((1 << 39) - 1)
        } else {
            low39
        };
        let mut exp = if m == 0 {
            0
        } else {
            u32::from(self.exp).wrapping_add(64) & 0xff
        };
        let frac = if (mag >> 14) & 1 == 1 {
            // Round half up on the magnitude (25 bits: sign position + 24).
            let t = ((u64::from(sign) << 24) | (mag >> 15)) + 1;
            if ((t >> 24) & 1) as u32 != sign {
                exp = (exp + 1) & 0xff;
                ((t >> 1) & 0x7f_ffff) as u32
            } else {
                (t & 0x7f_ffff) as u32
            }
        } else {
            ((mag >> 15) & 0x7f_ffff) as u32
        };
        (sign << 31) | (exp << 23) | frac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32v(b: u32) -> f32 {
        f32::from_bits(b)
    }

    fn h(v: f32) -> u16 {
        // Exact for the small values used here.
        let b = v.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        if v == 0.0 {
            return sign;
        }
        let e = ((b >> 23) & 0xff) as i32 - 127 + 15;
        let m = ((b >> 13) & 0x3ff) as u16;
        sign | ((e as u16) << 10) | m
    }

    // The MAC cell's multiplier written the way the C model spells it (match on the
    // Booth code, generic 3:2 reduction, the constant table), as an oracle for the
    // branch-free version.
    fn csa_reduce(v: &mut [u32], mut n: usize) {
        while n >= 3 {
            let groups = n / 3;
            for j in 0..groups {
                let (a, b, c) = (v[3 * j], v[3 * j + 1], v[3 * j + 2]);
                v[2 * j] = a ^ b ^ c;
                v[2 * j + 1] = ((a & b) | (b & c) | (a & c)) << 1;
            }
            for j in groups * 3..n {
                v[j - groups] = v[j];
            }
            n -= groups;
        }
    }
    fn sign_comp_table(shift: u32) -> u32 {
        match shift {
            0 => 0xaaab_0000,
            4 => 0xfaaa_b000,
            8 => 0xffaa_ab00,
            12 => 0xfffa_aab0,
            16 => 0xffff_aaab,
            20 => 0xffff_faab,
            24 => 0xffff_ffab,
            28 => 0xffff_fffb,
            _ => 0,
        }
    }
    fn booth_literal(negative: bool, w: u32, d: u32, shift: u32) -> i32 {
        if shift >= 32 {
            return 0;
        }
        let flip = if negative { 7 } else { 0 };
        let mut wm = w << 1;
        let mut pp = [0u32; 8];
        let mut inv = [0u32; 8];
        for i in 0..8 {
            let code = (wm & 7) ^ flip;
            wm >>= 2;
            let (p, n) = match code {
                1 | 2 => (d | 0x1_0000, 0),
                3 => ((d << 1) | 0x1_0000, 0),
                4 => (!(d << 1) & 0xffff, 1),
                5 | 6 => (!d & 0xffff, 1),
                _ => (0x1_0000, 0),
            };
            pp[i] = p;
            inv[i] = n;
        }
        // Ten rows: Booth rows with the inversion "+1" of the previous row tucked in.
        let mut v = [
            pp[0],
            (pp[1] << 2) | inv[0],
            (pp[2] << 4) | (inv[1] << 2),
            (pp[3] << 6) | (inv[2] << 4),
            inv[3] << 6,
            pp[4] << 8,
            (pp[5] << 10) | (inv[4] << 8),
            (pp[6] << 12) | (inv[5] << 10),
            (pp[7] << 14) | (inv[6] << 12),
            inv[7] << 14,
        ];
        csa_reduce(&mut v[0..5], 5);
        csa_reduce(&mut v[5..10], 5);
        v[2] = v[5];
        v[3] = v[6];
        csa_reduce(&mut v[0..4], 4);
        let s = (v[0] >> shift)
            .wrapping_add(v[1] >> shift)
            .wrapping_add(sign_comp_table(shift));
        s as i32
    }

    // The accumulator as first written (bit-by-bit normalisation loops): the oracle for
    // the leading-zero version.
    fn accumulate_loops(acc: Fp48, mac: MacF16) -> Fp48 {
        if mac.mant == 0 {
            return acc;
        }
        if acc.exp == 0xff {
            // NaN accumulator keeps its top 11 mantissa bits.
            return Fp48 {
                exp: 0xff,
                mant: sext(acc.mant as u64 & (0x7ff << 29), 40),
            };
        }
        if mac.exp == 0x3f {
            let top = ((mac.mant as u64) >> 27) & 0x7ff;
            return Fp48 {
                exp: 0xff,
                mant: sext(top << 29, 40),
            };
        }
        // Normalise the 38-bit MAC mantissa so that bit 36 differs from the sign.
        let m = mac.mant;
        let s37 = bit(m, 37);
        let mut i: i32 = 36;
        if s37 == bit(m, 36) {
            while i >= 0 && bit(m, i as u32) == s37 {
                i -= 1;
            }
        }
        let sh0 = (36 - i) as u32;
        let m_reg = sext((m as u64) << sh0, 38);
        let mut mac_ext = sext((m_reg as u64) << 2, 40);
        let mac_exp = (i32::from(mac.exp) - sh0 as i32 + 49) & 0xff;

        let mut acc_ext = acc.mant;
        let acc_exp = if acc.mant == 0 { 0 } else { i32::from(acc.exp) };

        // Align to the bigger exponent, keeping the bits shifted out (top-aligned).
        let mut out: u64 = 0;
        let mut bigger = mac_exp;
        let shift_out = |x: &mut i64, diff: i32, out: &mut u64| {
            if diff <= 40 {
                let d = diff as u32;
                let low = (*x as u64) & ((1u64 << d) - 1);
                *out = (low << (40 - d)) & M40;
                *x >>= d;
            } else {
                *x = 0;
            }
        };
        if mac_exp > acc_exp {
            shift_out(&mut acc_ext, mac_exp - acc_exp, &mut out);
        } else if mac_exp < acc_exp {
            bigger = acc_exp;
            shift_out(&mut mac_ext, acc_exp - mac_exp, &mut out);
        }

        let sum_tmp = sext((acc_ext.wrapping_add(mac_ext)) as u64, 40);
        let mut overflow = false;
        let mut high_bit1 = false;
        let sum: i64;
        let mut exp = bigger;
        if bit(mac_ext, 39) == bit(acc_ext, 39) && bit(mac_ext, 39) != bit(sum_tmp, 39) {
            high_bit1 = bit(sum_tmp, 0);
            overflow = true;
            let sign = u64::from(bit(mac_ext, 39)) << 39;
            sum = sext(sign | ((sum_tmp as u64 & M40) >> 1), 40);
            exp = bigger + 1;
        } else if bit(sum_tmp, 38) == bit(sum_tmp, 39) {
            let s39 = bit(sum_tmp, 39);
            let mut j: i32 = 38;
            while j >= 0 && bit(sum_tmp, j as u32) == s39 {
                j -= 1;
            }
            let n1 = (38 - j) as u32;
            let v = (((sum_tmp as u64) << n1) | (out >> (40 - n1))) & M40;
            sum = sext(v, 40);
            out = (out << n1) & M40;
            exp = bigger - n1 as i32;
        } else {
            sum = sum_tmp;
        }

        let guard0 = (out >> 39) & 1 != 0;
        let sticky0 = out & ((1 << 39) - 1) != 0;
        let sticky1 = out != 0;
        let neg = bit(sum, 39);
        let round = if overflow {
            if neg {
                high_bit1 && sticky1
            } else {
                high_bit1
            }
        } else if neg {
            guard0 && sticky0
        } else {
            guard0
        };
        let rounded = sext((sum as u64).wrapping_add(u64::from(round)), 40);
        let fin = if bit(rounded, 39) != neg {
            exp += 1;
            let sign = u64::from(neg) << 39;
            sext(sign | ((rounded as u64 & M40) >> 1), 40)
        } else {
            rounded
        };
        Fp48 {
            exp: if fin == 0 { 0 } else { (exp & 0xff) as u8 },
            mant: fin,
        }
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 32) as u32
        }
        fn below(&mut self, n: u32) -> u32 {
            self.next() % n
        }
    }

    /// An fp16 pattern from a mix of classes: any bits (NaN and infinity patterns
    /// included), signed zeros, subnormals, extreme exponents, and exponents near a
    /// block centre so that every alignment (0, 4, 8, 12, ... bits) occurs often.
    fn random_f16(r: &mut Rng, centre: u32) -> u16 {
        let sign = ((r.next() & 1) << 15) as u16;
        let frac = (r.next() & 0x3ff) as u16;
        match r.below(10) {
            0 => r.next() as u16,
            1 => sign,
            2 => sign | frac.max(1),
            3 => sign | [0x7bff, 0x7c00, 0x0001, 0x0400, 0x03ff, 0x7fff][r.below(6) as usize],
            _ => {
                let e = (centre as i32 + r.below(13) as i32 - 6).clamp(0, 31) as u16;
                sign | (e << 10) | frac
            }
        }
    }

    fn lanes_of(h: &[u16]) -> Lanes {
        let mut a = Lanes::default();
        h.iter().for_each(|&x| a.push(x));
        a
    }

    /// Both fast kernels (SSE2 where built, and the portable one) against the Booth path.
    fn check_fast(dh: &[u16], wh: &[u16], filler: &[u16]) -> MacF16 {
        let want = mac_f16(&lanes_of(dh), &lanes_of(wh));
        let n = dh.len().max(wh.len()).max(filler.len());
        let (mut db, mut wb) = (Blocks::new(n), Blocks::new(n));
        // A block before and after, so that block offsets are exercised.
        for b in [&mut db, &mut wb] {
            b.push_block(filler);
        }
        db.push_block(dh);
        wb.push_block(wh);
        for b in [&mut db, &mut wb] {
            b.push_block(filler);
        }
        let (d, w) = (db.block(1), wb.block(1));
        assert_eq!(mac_f16_fast(d, w), want, "{dh:04x?} {wh:04x?}");
        assert_eq!(mac_f16_portable(d, w), want, "{dh:04x?} {wh:04x?}");
        // The kernel the convolution calls: AVX2 where the CPU has it.
        assert_eq!(db.mac(1, &wb, 1), want, "{dh:04x?} {wh:04x?}");
        // The same in two steps, among other blocks' deferred lanes.
        let mut deferred = Deferred::default();
        let mut sums = Vec::new();
        let mut exps = Vec::new();
        for (i, j) in [(0, 2), (1, 1), (2, 0)] {
            let (e, s) = db.mac_deferred(i, &wb, j, sums.len() as u32, &mut deferred);
            exps.push(e);
            sums.push(s);
        }
        deferred.resolve(&mut sums);
        for (k, (i, j)) in [(0, 2), (1, 1), (2, 0)].into_iter().enumerate() {
            let m = MacF16::from_sum(exps[k], sums[k]);
            assert_eq!(m, db.mac(i, &wb, j), "{dh:04x?} {wh:04x?} block {i} x {j}");
        }
        want
    }

    #[test]
    fn fast_mac_matches_booth_path_random() {
        let mut r = Rng(0x0f16);
        let mut shifts = [0u32; 4];
        for it in 0..60_000 {
            let n = [64, 16, 32, 8, 1, 3, 70, 130][it % 8];
            let (cd, cw) = (r.below(32), r.below(32));
            let dh: Vec<u16> = (0..n).map(|_| random_f16(&mut r, cd)).collect();
            let wh: Vec<u16> = (0..n).map(|_| random_f16(&mut r, cw)).collect();
            let filler: Vec<u16> = (0..n).map(|_| random_f16(&mut r, 15)).collect();
            let want = check_fast(&dh, &wh, &filler);
            let (dl, wl) = (lanes_of(&dh), lanes_of(&wh));
            for i in 0..n {
                if dl.act[i] & wl.act[i] == 1 {
                    let m = want.exp as u32 / 4;
                    let sh = (m - dl.coarse[i] - wl.coarse[i]) as usize;
                    shifts[sh.min(3)] += 1;
                }
            }
        }
        // Every alignment class was exercised many times.
        assert!(shifts.iter().all(|&c| c > 50_000), "{shifts:?}");
    }

    #[test]
    fn sparse_blocks_match_booth_path() {
        // 64-lane blocks where one side has 0 to 8 active lanes (block-diagonal weights of
        // depthwise convolutions, inputs of few channels): the lane-by-lane path up to
        // `SPARSE_LANES`, the vector kernels above it.
        let mut r = Rng(0x5ba5);
        for it in 0..40_000 {
            let (cd, cw) = (r.below(32), r.below(32));
            let dense: Vec<u16> = (0..64).map(|_| random_f16(&mut r, cd)).collect();
            let mut few = vec![0u16; 64];
            for _ in 0..it % 9 {
                few[r.below(64) as usize] = random_f16(&mut r, cw);
            }
            let filler: Vec<u16> = (0..64).map(|_| random_f16(&mut r, 15)).collect();
            if it % 2 == 0 {
                check_fast(&dense, &few, &filler);
            } else {
                check_fast(&few, &dense, &filler);
            }
        }
    }

    #[test]
    fn columns_match_the_block_kernel() {
        // Layers of 1 to SPARSE_LANES channels: every (data block, kernel) of the columns
        // against the Booth path, over kernel runs starting anywhere (a convolution's
        // chunks of kernels), with zero and NaN-free extreme lanes on both sides.
        let mut r = Rng(0xc01);
        let mut shifts = [0u32; 4];
        for it in 0..400 {
            let channels = 1 + it % SPARSE_LANES;
            let (lanes, kernels, ops) = (64, 1 + r.below(40) as usize, 1 + it % 3);
            let (cd, cw) = (r.below(32), r.below(32));
            let f16 = |r: &mut Rng, centre| loop {
                let h = random_f16(r, centre);
                if !f16_is_nan(h) {
                    return h;
                }
            };
            let mut wb = Blocks::new(lanes);
            let mut wh = Vec::new();
            for _ in 0..kernels * ops {
                let w: Vec<u16> = (0..channels).map(|_| f16(&mut r, cw)).collect();
                wb.push_block(&w);
                wh.push(w);
            }
            let cols = WeightColumns::new(&wb, kernels, ops, channels).expect("few channels");
            let mut db = Blocks::new(lanes);
            let dh: Vec<Vec<u16>> = (0..ops)
                .map(|_| (0..channels).map(|_| f16(&mut r, cd)).collect())
                .collect();
            dh.iter().for_each(|d| db.push_block(d));
            let start = r.below(kernels as u32) as usize;
            let ks = start..kernels;
            let (mut exps, mut sums) = (vec![0u8; ks.len() * ops], vec![0i64; ks.len() * ops]);
            for (op, d) in dh.iter().enumerate() {
                assert!(cols.mac(&db, op, op, ks.clone(), (ops, op), (&mut exps, &mut sums)));
                for k in ks.clone() {
                    let want = mac_f16(&lanes_of(d), &lanes_of(&wh[k * ops + op]));
                    let at = (k - start) * ops + op;
                    let got = MacF16::from_sum(exps[at], sums[at]);
                    assert_eq!(got, want, "{d:04x?} {:04x?}", wh[k * ops + op]);
                    let (dl, wl) = (lanes_of(d), lanes_of(&wh[k * ops + op]));
                    for i in (0..channels).filter(|&i| dl.act[i] & wl.act[i] == 1) {
                        let sh = want.exp as u32 / 4 - dl.coarse[i] - wl.coarse[i];
                        shifts[(sh as usize).min(3)] += 1;
                    }
                }
            }
        }
        // Every alignment class was exercised.
        assert!(shifts.iter().all(|&c| c > 1_000), "{shifts:?}");
        // A data block with a lane beyond the columns' channels is not theirs.
        let mut wb = Blocks::new(64);
        wb.push_block(&[0x3c00, 0x3c00]);
        let cols = WeightColumns::new(&wb, 1, 1, 2).expect("two channels");
        let mut db = Blocks::new(64);
        db.push_block(&[0x3c00, 0, 0x3c00]);
        let (mut e, mut s) = ([0u8], [0i64]);
        assert!(!cols.mac(&db, 0, 0, 0..1, (1, 0), (&mut e, &mut s)));
    }

    #[test]
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    fn rows_match_the_block_kernel() {
        // Dense blocks of 32 and 64 lanes, a third of the data lanes zero (a ReLU's
        // output), every (data block, kernel) of the weight rows against the Booth path,
        // over kernel chunks starting at any row and deferred lanes of many blocks
        // resolved together.
        if !WeightRows::available() {
            eprintln!("no AVX-512 or AVX2: the weight rows are not used on this CPU");
            return;
        }
        let mut r = Rng(0x2075);
        let mut shifts = [0u32; 6];
        for it in 0..300 {
            let lanes = [64, 32][it % 2];
            let (kernels, ops) = (1 + r.below(40) as usize, 1 + it % 4);
            let (cd, cw) = (r.below(32), r.below(32));
            let f16 = |r: &mut Rng, centre| loop {
                let h = random_f16(r, centre);
                if !f16_is_nan(h) {
                    return h;
                }
            };
            let wh: Vec<Vec<u16>> = (0..kernels * ops)
                .map(|_| (0..lanes).map(|_| f16(&mut r, cw)).collect())
                .collect();
            let rows = WeightRows::build(kernels, ops, lanes, |k, op, b| {
                b.copy_from_slice(&wh[k * ops + op])
            })
            .expect("available");
            let dh: Vec<Vec<u16>> = (0..ops)
                .map(|_| {
                    (0..lanes)
                        .map(|_| if r.below(3) == 0 { 0 } else { f16(&mut r, cd) })
                        .collect()
                })
                .collect();
            let mut dl = DataLanes::default();
            dh.iter().for_each(|d| dl.push_block(d));
            let start = ROW_WIDTH * r.below(kernels.div_ceil(ROW_WIDTH) as u32) as usize;
            let ks = start..kernels;
            // Results by operation, then kernel, each operation's kernels a whole row.
            let kpad = ks.len().next_multiple_of(ROW_WIDTH);
            let (mut exps, mut sums) = (vec![0u8; kpad * ops], vec![0i64; kpad * ops]);
            let mut deferred = Deferred::default();
            for op in 0..ops {
                let at = op * kpad;
                rows.mac(
                    dl.block(op),
                    op,
                    ks.clone(),
                    at,
                    (&mut exps, &mut sums),
                    &mut deferred,
                );
            }
            deferred.resolve(&mut sums);
            for (op, d) in dh.iter().enumerate() {
                for k in ks.clone() {
                    let want = mac_f16(&lanes_of(d), &lanes_of(&wh[k * ops + op]));
                    let at = op * kpad + k - start;
                    let got = MacF16::from_sum(exps[at], sums[at]);
                    assert_eq!(got, want, "{d:04x?} {:04x?}", wh[k * ops + op]);
                    let (dl, wl) = (lanes_of(d), lanes_of(&wh[k * ops + op]));
                    for i in (0..lanes).filter(|&i| dl.act[i] & wl.act[i] == 1) {
                        let sh = want.exp as u32 / 4 - dl.coarse[i] - wl.coarse[i];
                        shifts[(sh as usize).min(5)] += 1;
                    }
                }
            }
        }
        // Every alignment class was exercised, the deferred ones too.
        assert!(shifts.iter().all(|&c| c > 1_000), "{shifts:?}");
        // The largest products, 64 of them aligned by 0 bits: the 32-bit sums widen.
        for (d, w) in [(0x7bff, 0x7bff), (0x7bff, 0xfbff), (0xfbff, 0xfbff)] {
            let (dh, wh) = (vec![d; 64], vec![w; 64]);
            let rows =
                WeightRows::build(1, 1, 64, |_, _, b| b.copy_from_slice(&wh)).expect("available");
            let (mut exps, mut sums) = ([0u8; ROW_WIDTH], [0i64; ROW_WIDTH]);
            let mut deferred = Deferred::default();
            let mut dl = DataLanes::default();
            dl.push_block(&dh);
            rows.mac(
                dl.block(0),
                0,
                0..1,
                0,
                (&mut exps, &mut sums),
                &mut deferred,
            );
            deferred.resolve(&mut sums);
            let want = mac_f16(&lanes_of(&dh), &lanes_of(&wh));
            assert_eq!(MacF16::from_sum(exps[0], sums[0]), want);
        }
    }

    #[test]
    fn exact_sums_equal_the_accumulation() {
        // Block results as CACC receives them: mantissas of every size (single exact
        // products up to full blocks), exponents close together and far apart, signs
        // mixed so that sums cancel; each sequence the fast sum takes must give what
        // accumulating one by one gives.
        let mut r = Rng(0xacc);
        let (mut taken, mut total) = (0, 0);
        for it in 0..300_000 {
            let n = 1 + r.below(30) as usize;
            let base = r.below(57);
            let spread = [0, 4, 8, 16, 57][it % 5];
            let bits = [8, 22, 30, 38][r.below(4) as usize];
            let mut exps = Vec::with_capacity(n);
            let mut sums = Vec::with_capacity(n);
            for _ in 0..n {
                exps.push((base + r.below(spread + 1)).min(56) as u8 & !3);
                let v = (i64::from(r.next()) << 32 | i64::from(r.next())) >> (64 - bits);
                sums.push(if r.below(6) == 0 { 0 } else { v });
            }
            let want = exps.iter().zip(&sums).fold(Fp48::default(), |a, (&e, &s)| {
                a.accumulate(MacF16::from_sum(e, s))
            });
            total += 1;
            if let Some(got) = Fp48::sum_exact(&exps, &sums) {
                taken += 1;
                assert_eq!(got, want, "{exps:?} {sums:?}");
            }
        }
        // Both paths were exercised.
        assert!(taken > total / 10 && taken < total, "{taken} of {total}");
    }

    #[test]
    fn fast_mac_on_single_lane_products() {
        // One lane against a second lane that sets the block exponent: every shift.
        let mut r = Rng(99);
        for _ in 0..200_000 {
            let d = [r.next() as u16, r.next() as u16];
            let w = [r.next() as u16, r.next() as u16];
            check_fast(&d, &w, &[]);
        }
    }

    #[test]
    fn fast_mac_worst_case_magnitudes() {
        // Largest mantissas (0x3ff8 after the fine shift) in all 64 lanes, both signs:
        // the partial sums' bounds.
        for (sd, sw) in [(0, 0), (0x8000, 0), (0, 0x8000), (0x8000, 0x8000)] {
            let d = [0x7bffu16 | sd; 64];
            let w = [0x7bffu16 | sw; 64];
            check_fast(&d, &w, &[]);
            // Half the lanes one coarse step lower (shift 4), with the largest mantissa.
            let mut w2 = w;
            for x in w2.iter_mut().step_by(2) {
                *x = 0x6bff | sw;
            }
            check_fast(&d, &w2, &[]);
            // All lanes but one two coarse steps lower (shift 8), largest mantissas: the
            // bounds of the shift-8 sums.
            let mut w3 = [0x5bffu16 | sw; 64];
            w3[0] = w[0];
            check_fast(&d, &w3, &[]);
        }
    }

    #[test]
    fn booth_shift_8_table_random() {
        let t = booth8_errors();
        let mut r = Rng(8);
        for _ in 0..300_000 {
            let (w, d, neg) = (r.below(1 << 14), r.below(1 << 14), r.next() & 1 == 1);
            let p = (w * d) as i32;
            let x = if neg { -p } else { p };
            let idx = booth8_index(neg, x, w, d);
            let e = ((t[idx / 64] >> (idx % 64)) & 1) as i32;
            assert_eq!(booth_product(neg, w, d, 8), (x >> 8) - e);
            assert_eq!(booth_product(neg, w, d, 4), x >> 4);
        }
    }

    /// The facts the fast path rests on, over every 14-bit multiplier and multiplicand
    /// and both signs (2^29 products per shift; run with
    /// `cargo test --release -p nvdla-vp -- --ignored booth_shift`).
    #[test]
    #[ignore]
    fn booth_shift_4_is_floor_exhaustive() {
        for neg in [false, true] {
            for w in 0..1u32 << 14 {
                for d in 0..1u32 << 14 {
                    let p = (w * d) as i32;
                    let x = if neg { -p } else { p };
                    assert_eq!(booth_product(neg, w, d, 4), x >> 4, "{neg} {w} {d}");
                }
            }
        }
    }

    #[test]
    #[ignore]
    fn booth_shift_8_table_is_exact() {
        let t = booth8_errors();
        for neg in [false, true] {
            for w in 0..1u32 << 14 {
                for d in 0..1u32 << 14 {
                    let p = (w * d) as i32;
                    let x = if neg { -p } else { p };
                    let idx = booth8_index(neg, x, w, d);
                    let e = ((t[idx / 64] >> (idx % 64)) & 1) as i32;
                    assert_eq!(booth_product(neg, w, d, 8), (x >> 8) - e, "{neg} {w} {d}");
                    assert!(e == 0 || x & 0xff <= 8, "{neg} {w} {d}");
                }
            }
        }
    }

    /// The deferred lanes' carry kernel (`arith_avx2::booth_carries`): the floor of the
    /// exact aligned product less its carry is the Booth multiplier's result, for every
    /// 14-bit magnitude pair, both signs and the shifts it takes (4 to 16).
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[test]
    #[ignore]
    fn booth_shift_carries_exhaustive() {
        use rayon::prelude::*;
        for s in [4u16, 8, 12, 16] {
            (0..1i32 << 14).into_par_iter().for_each(|w| {
                for neg in [false, true] {
                    // Deferred lanes are active: a negative product has no zero operand.
                    let wv = if neg { -w } else { w } as i16;
                    for d0 in (0..1i32 << 14).step_by(32) {
                        let d: [i16; 32] = std::array::from_fn(|j| (d0 + j as i32) as i16);
                        let c = arith_avx2::booth_carries(&d, &[wv; 32], &[s; 32]);
                        // The weight rows' form in registers, where the CPU has it.
                        let r = arith_avx512::available().then(|| {
                            // SAFETY: `available()` found AVX-512 F and BW.
                            #[allow(unsafe_code)]
                            unsafe {
                                use core::arch::x86_64::{_mm512_loadu_si512, _mm512_set1_epi16};
                                arith_rows::carries(
                                    _mm512_loadu_si512(d.as_ptr().cast()),
                                    _mm512_set1_epi16(wv),
                                    _mm512_set1_epi16(s as i16),
                                )
                            }
                        });
                        for (j, &dj) in d.iter().enumerate() {
                            if neg && (w == 0 || dj == 0) {
                                continue;
                            }
                            let x = i32::from(dj) * i32::from(wv);
                            let want = booth_product(neg, w as u32, dj as u32, u32::from(s));
                            let got = (x >> s) - i32::from(c[j]);
                            assert_eq!(got, want, "shift {s}: {dj} x {wv}");
                            if let Some(r) = r {
                                let got = (x >> s) - i32::from(r >> j & 1 == 1);
                                assert_eq!(got, want, "registers, shift {s}: {dj} x {wv}");
                            }
                        }
                    }
                }
            });
        }
    }

    #[test]
    fn accumulate_matches_loop_form() {
        let mut r = Rng(48);
        let mut acc = Fp48::default();
        let mut acc2 = Fp48::default();
        for it in 0..1_000_000 {
            if it % 50 == 0 {
                acc = Fp48::default();
                acc2 = acc;
            }
            let bits = r.below(39);
            let raw = (u64::from(r.next()) << 32 | u64::from(r.next())) & ((1u64 << bits) - 1);
            let mant = if r.next() & 1 == 1 {
                sext(raw.wrapping_neg(), 38)
            } else {
                sext(raw, 38)
            };
            let exp = match r.below(20) {
                0 => 0x3f,
                1 => 0,
                _ => r.below(0x3f) as u8,
            };
            let mac = MacF16 { exp, mant };
            acc = acc.accumulate(mac);
            acc2 = accumulate_loops(acc2, mac);
            assert_eq!(acc, acc2, "{mac:?}");
        }
    }

    #[test]
    fn booth_matches_literal_form() {
        let mut s = 4242u32;
        for _ in 0..200_000 {
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let w = (s >> 2) & 0x3fff;
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let d = (s >> 2) & 0x3fff;
            let neg = s & 1 == 1;
            let sh = ((s >> 1) % 9) * 4;
            assert_eq!(
                booth_product(neg, w, d, sh),
                booth_literal(neg, w, d, sh),
                "{w} {d} {sh}"
            );
        }
    }

    #[test]
    fn booth_is_exact_without_shift_random() {
        let mut s = 777u32;
        for _ in 0..50000 {
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let w = (s >> 2) & 0x3fff;
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let d = (s >> 2) & 0x3fff;
            let p = (w * d) as i32;
            assert_eq!(booth_product(false, w, d, 0), p);
            assert_eq!(booth_product(true, w, d, 0), -p);
        }
    }

    #[test]
    fn booth_is_exact_without_shift() {
        for &(w, d) in &[
            (0x400u32, 0x400u32),
            (0x7ff, 0x3ff),
            (0x3fff, 0x3fff),
            (5, 7),
        ] {
            assert_eq!(booth_product(false, w, d, 0), (w * d) as i32);
            assert_eq!(booth_product(true, w, d, 0), -((w * d) as i32));
        }
    }

    #[test]
    fn booth_shift_is_within_one_of_exact() {
        let mut s = 12345u32;
        for _ in 0..20000 {
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let w = (s >> 3) & 0x3fff;
            let d = (s >> 17) & 0x3fff;
            let neg = s & 1 == 1;
            let sh = ((s >> 1) % 8) * 4;
            let p = i64::from(w) * i64::from(d);
            let exact = (if neg { -p } else { p }) >> sh;
            let got = i64::from(booth_product(neg, w, d, sh));
            assert!(
                (got - exact).abs() <= 1,
                "w={w} d={d} sh={sh} {got} vs {exact}"
            );
        }
    }

    #[test]
    fn block_of_simple_values() {
        // 1.5 * 2 + (-0.5) * 4 = 1.0
        let d = [h(1.5), h(-0.5), 0, h(3.0)];
        let w = [h(2.0), h(4.0), h(7.0), 0];
        let r = mac_f16_block(&d, &w);
        let acc = Fp48::default().accumulate(r);
        assert_eq!(f32v(acc.to_f32_bits()), 1.0);
    }

    #[test]
    fn accumulation_matches_float_for_exact_values() {
        let mut acc = Fp48::default();
        let mut want = 0f32;
        for i in 0..50 {
            let a = (i as f32 - 20.0) * 0.25;
            let b = 3.0 - i as f32 * 0.125;
            let r = mac_f16_block(&[h(a)], &[h(b)]);
            acc = acc.accumulate(r);
            want += a * b;
        }
        assert_eq!(f32v(acc.to_f32_bits()), want);
    }

    #[test]
    fn nan_propagates() {
        let nan = 0x7e01u16;
        let m = block_nan(&[0x3c00, nan], &[0x3c00, 0x3c00]).unwrap();
        let acc = Fp48::default()
            .accumulate(MacF16 {
                exp: 1,
                mant: 4 << 20,
            })
            .accumulate(m);
        let f = acc.to_f32_bits();
        assert_eq!(f >> 23 & 0xff, 0xff);
        assert_ne!(f & 0x7f_ffff, 0);
    }

    #[test]
    fn int_truncation_rounds_half_away() {
        assert_eq!(cacc_int_out(5, 1), (3, false));
        assert_eq!(cacc_int_out(-5, 1), (-3, false));
        assert_eq!(cacc_int_out(1 << 40, 0), (i64::from(i32::MAX), true));
        assert_eq!(acc48_add(ACC48_MAX, 5), ACC48_MAX);
    }
}
