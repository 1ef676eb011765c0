//! The convolution pipeline: CDMA → CBUF → CSC → CMAC_A/B → CACC, feeding SDP on the fly.
//!
//! A hardware layer runs when the consumer groups of CDMA, CSC, CMAC_A, CMAC_B and CACC
//! are enabled (and SDP, which receives the accumulator output). [`Layer::decode`] reads
//! and cross-checks the registers of all five blocks — precisions, modes, sizes,
//! strides, CBUF banks and entries — so that bad programming becomes a typed
//! [`EngineError`], never a panic. [`run`] then fetches data and weights (or reuses what
//! the [`Cbuf`] model holds), convolves ([`compute`] for direct convolution,
//! [`winograd`] for Winograd) and returns the CACC output cube for SDP.
//!
//! Modelled: direct convolution on feature data, image input (pitch-linear pixel
//! formats, pixel x offset, converter with per-channel mean, padding, channel
//! pre-extension, post-extension), int8/int16/fp16, padding value, strides, dilation,
//! batches, packed and unpacked surfaces, partial last channel blocks, compressed
//! weights, data/weight reuse; Winograd convolution on nv_full (`CONV_MODE = WINOGRAD`,
//! int8/int16/fp16): CDMA's padding and stride-to-channel extension in CBUF
//! ([`cdma::fetch_winograd`]), the 4x4 pre-transformed weight tiles
//! ([`cdma::fetch_weights_winograd`], compressed or not), CSC's pre-addition with
//! `PRA_TRUNCATE`, CMAC's post-addition and CACC as in direct convolution. Winograd
//! layers must have feature input, one batch, the same input and processing precision,
//! 4x4 kernels over the extended channels and outputs in multiples of 4 that fit the
//! extended input; SDP must be in Winograd output mode (checked by `Vp`). CSC's stride,
//! dilation, padding and pad value registers are not used in Winograd mode (CSC's
//! Winograd sequencer does not read them).

pub mod arith;
pub mod cdma;
pub mod compute;
pub mod int_simd;
pub mod winograd;

use crate::config::{HwConfig, HwVersion};
use crate::engines::{addr64, check_precision, EngineError, Precision};
use crate::mem::{Memory, RamType};
use crate::regs::{ids, RegFile};
use cdma::{InputCube, Weights, WinoInput};
use compute::Geom;

/// Everything the pipeline needs from the five register files, validated.
#[derive(Debug, Clone)]
pub struct Layer {
    /// Processing precision.
    pub prec: Precision,
    /// CDMA input precision.
    pub in_prec: Precision,
    /// Image (pixel) input instead of feature data.
    pub image: bool,
    /// Reuse the data in CBUF instead of fetching.
    pub data_reuse: bool,
    /// Reuse the weights in CBUF instead of fetching.
    pub weight_reuse: bool,
    /// Keep the data in CBUF after the layer.
    pub skip_data_rls: bool,
    /// Keep the weights in CBUF after the layer.
    pub skip_weight_rls: bool,
    /// CDMA data cube width.
    pub cdma_w: usize,
    /// CDMA data cube height.
    pub cdma_h: usize,
    /// CDMA data cube channels.
    pub cdma_c: usize,
    /// Batches.
    pub batches: usize,
    /// Memory atom in bytes.
    pub atom: u32,
    /// Data memory.
    pub dain_ram: RamType,
    /// Data (or image plane 0) address.
    pub dain_addr: u64,
    /// Image plane 1 address.
    pub dain_addr1: u64,
    /// Line stride.
    pub line_stride: u64,
    /// Image plane 1 line stride.
    pub uv_line_stride: u64,
    /// Surface stride.
    pub surf_stride: u64,
    /// Batch stride.
    pub batch_stride: u64,
    /// `LINE_PACKED`.
    pub line_packed: bool,
    /// `SURF_PACKED`.
    pub surf_packed: bool,
    /// Pixel format code.
    pub pixel_format: u32,
    /// Pitch-linear pixel mapping.
    pub pitch_linear: bool,
    /// `PIXEL_SIGN_OVERRIDE`.
    pub sign_override: bool,
    /// `PIXEL_X_OFFSET`.
    pub pixel_x_offset: usize,
    /// Image left padding (pixels).
    pub pad_left: usize,
    /// Image right padding (pixels).
    pub pad_right: usize,
    /// CDMA padding value (image padding).
    pub cdma_pad_value: u16,
    /// Per-channel mean enabled (`MEAN_FORMAT`).
    pub mean_enabled: bool,
    /// Means of R/Y, G/U, B/V, A/X.
    pub mean: [i64; 4],
    /// Input converter.
    pub cvt: cdma::Converter,
    /// Flush fp16 NaN inputs to zero.
    pub nan_to_zero: bool,
    /// Compressed weights.
    pub compressed: bool,
    /// Weight memory.
    pub weight_ram: RamType,
    /// Weight address.
    pub weight_addr: u64,
    /// Weight bytes.
    pub weight_bytes: u64,
    /// WGS address.
    pub wgs_addr: u64,
    /// WMB address.
    pub wmb_addr: u64,
    /// WMB bytes.
    pub wmb_bytes: u64,
    /// Convolution geometry (CSC).
    pub geom: Geom,
    /// CSC input channels (image: components per pixel).
    pub csc_c: usize,
    /// CSC x stride in pixels (image input; the geometry then steps one column).
    pub image_sx: usize,
    /// Weight geometry.
    pub wgeom: cdma::WeightGeom,
    /// CACC truncation.
    pub truncate: u32,
    /// CDMA data banks.
    pub data_banks: u32,
    /// CDMA weight banks.
    pub weight_banks: u32,
    /// Winograd convolution (`CONV_MODE = WINOGRAD`), `None` for direct convolution.
    pub wino: Option<Wino>,
}

/// What a Winograd layer adds to [`Layer`]: where CDMA puts the input and the geometry
/// CSC computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wino {
    /// CDMA padding and stride.
    pub input: WinoInput,
    /// CSC geometry (extended input, outputs, `PRA_TRUNCATE`).
    pub geom: winograd::Geom,
}

fn cfg_err(block: &'static str, msg: impl Into<String>) -> EngineError {
    EngineError::Config {
        block,
        msg: msg.into(),
    }
}

/// Bytes of one CBUF entry: 128 on NVDLA v1 (a 64-channel 16-bit atom), the bank width
/// on v2.
pub fn cbuf_entry_bytes(cfg: &HwConfig) -> u32 {
    match cfg.version() {
        HwVersion::V1 => cfg.hw.atomic_c * 2,
        HwVersion::V2 => cfg.hw.cbuf_bank_width,
    }
}

/// Entries of one CBUF bank.
pub fn cbuf_entries_per_bank(cfg: &HwConfig) -> u64 {
    cfg.hw.cbuf_bytes() / u64::from(cfg.hw.cbuf_banks) / u64::from(cbuf_entry_bytes(cfg))
}

/// CBUF entries one line (slice) of a feature cube occupies: whole entries of atoms,
/// and a trailing partial entry shared by 2 or 4 neighbouring pixels
/// (`DirectConvDataResponseSequencerCommon`).
pub fn entries_per_slice(cfg: &HwConfig, w: usize, c: usize, prec: Precision) -> usize {
    let atom = cfg.hw.memory_atomic as usize;
    let atoms = (c * prec.bytes() as usize).div_ceil(atom);
    let per_entry = (cbuf_entry_bytes(cfg) as usize / atom).max(1);
    let mut n = atoms / per_entry * w;
    let cripple = atoms % per_entry;
    if cripple > 0 {
        n += if cripple > per_entry / 2 {
            w
        } else if cripple * 2 == per_entry {
            w.div_ceil(2)
        } else {
            w.div_ceil(4)
        };
    }
    n
}

impl Layer {
    /// Decodes and validates the consumer groups of the five blocks.
    pub fn decode(
        cfg: &HwConfig,
        cdma: &RegFile,
        csc: &RegFile,
        cmac: [&RegFile; 2],
        cacc: &RegFile,
    ) -> Result<Layer, EngineError> {
        use ids::cdma::D_MISC_CFG as CDMA_MISC;
        let misc = cdma.cur_as::<CDMA_MISC::Register>(ids::cdma::D_MISC_CFG);
        let winograd = misc.matches_all(CDMA_MISC::CONV_MODE::WINOGRAD);
        let prec = Precision::from_field(misc.read(CDMA_MISC::PROC_PRECISION), "CDMA")?;
        let in_prec = Precision::from_field(misc.read(CDMA_MISC::IN_PRECISION), "CDMA")?;
        // (convolution mode, processing precision) of the other four blocks.
        macro_rules! mode_prec {
            ($f:expr, $unit:ident) => {{
                use ids::$unit::D_MISC_CFG as M;
                let v = $f.cur_as::<M::Register>(ids::$unit::D_MISC_CFG);
                (
                    v.matches_all(M::CONV_MODE::WINOGRAD),
                    v.read(M::PROC_PRECISION),
                )
            }};
        }
        for (blk, (wino, proc)) in [
            ("CSC", mode_prec!(csc, csc)),
            ("CMAC_A", mode_prec!(cmac[0], cmac_a)),
            ("CMAC_B", mode_prec!(cmac[1], cmac_b)),
            ("CACC", mode_prec!(cacc, cacc)),
        ] {
            if wino != winograd {
                return Err(cfg_err(blk, "convolution mode differs from CDMA"));
            }
            if Precision::from_field(proc, blk)? != prec {
                return Err(cfg_err(blk, "processing precision differs from CDMA"));
            }
        }
        check_precision(cfg, prec, "CDMA")?;
        check_precision(cfg, in_prec, "CDMA")?;
        if winograd && !cfg.hw.features.winograd {
            return Err(cfg_err(
                "CDMA",
                format!("{} has no Winograd convolution", cfg.name()),
            ));
        }
        let fmt = cdma.cur(ids::cdma::D_DATAIN_FORMAT);
        let image = fmt & 1 == 1;
        if (csc.cur(ids::csc::D_DATAIN_FORMAT) & 1 == 1) != image {
            return Err(cfg_err("CSC", "input format differs from CDMA"));
        }
        let size0 = cdma.cur(ids::cdma::D_DATAIN_SIZE_0);
        let cdma_w = ids::cdma::D_DATAIN_SIZE_0::DATAIN_WIDTH.read(size0) as usize + 1;
        let cdma_h = ids::cdma::D_DATAIN_SIZE_0::DATAIN_HEIGHT.read(size0) as usize + 1;
        let cdma_c = cdma.field(
            ids::cdma::D_DATAIN_SIZE_1,
            ids::cdma::D_DATAIN_SIZE_1::DATAIN_CHANNEL,
        ) as usize
            + 1;
        let batches = cdma.field(
            ids::cdma::D_BATCH_NUMBER,
            ids::cdma::D_BATCH_NUMBER::BATCHES,
        ) as usize
            + 1;
        for (blk, n) in [
            (
                "CSC",
                csc.field(ids::csc::D_BATCH_NUMBER, ids::csc::D_BATCH_NUMBER::BATCHES),
            ),
            (
                "CACC",
                cacc.field(
                    ids::cacc::D_BATCH_NUMBER,
                    ids::cacc::D_BATCH_NUMBER::BATCHES,
                ),
            ),
        ] {
            if n as usize + 1 != batches {
                return Err(cfg_err(blk, "batch number differs from CDMA"));
            }
        }
        if batches > 1 && (!cfg.hw.features.batch || image || winograd) {
            return Err(cfg_err(
                "CDMA",
                "batches need batch mode, feature input and direct convolution",
            ));
        }
        if winograd && image {
            return Err(cfg_err("CDMA", "Winograd convolution needs feature input"));
        }

        // CSC geometry.
        let ext0 = csc.cur(ids::csc::D_DATAIN_SIZE_EXT_0);
        let csc_w = ids::csc::D_DATAIN_SIZE_EXT_0::DATAIN_WIDTH_EXT.read(ext0) as usize + 1;
        let csc_h = ids::csc::D_DATAIN_SIZE_EXT_0::DATAIN_HEIGHT_EXT.read(ext0) as usize + 1;
        let csc_c = csc.field(
            ids::csc::D_DATAIN_SIZE_EXT_1,
            ids::csc::D_DATAIN_SIZE_EXT_1::DATAIN_CHANNEL_EXT,
        ) as usize
            + 1;
        let wsz0 = csc.cur(ids::csc::D_WEIGHT_SIZE_EXT_0);
        let ks = ids::csc::D_WEIGHT_SIZE_EXT_0::WEIGHT_WIDTH_EXT.read(wsz0) as usize + 1;
        let kr = ids::csc::D_WEIGHT_SIZE_EXT_0::WEIGHT_HEIGHT_EXT.read(wsz0) as usize + 1;
        let wsz1 = csc.cur(ids::csc::D_WEIGHT_SIZE_EXT_1);
        let kc = ids::csc::D_WEIGHT_SIZE_EXT_1::WEIGHT_CHANNEL_EXT.read(wsz1) as usize + 1;
        let kk = ids::csc::D_WEIGHT_SIZE_EXT_1::WEIGHT_KERNEL.read(wsz1) as usize + 1;
        let out0 = csc.cur(ids::csc::D_DATAOUT_SIZE_0);
        let out_w = ids::csc::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.read(out0) as usize + 1;
        let out_h = ids::csc::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.read(out0) as usize + 1;
        let out_c = csc.field(
            ids::csc::D_DATAOUT_SIZE_1,
            ids::csc::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL,
        ) as usize
            + 1;
        let cacc0 = cacc.cur(ids::cacc::D_DATAOUT_SIZE_0);
        if ids::cacc::D_DATAOUT_SIZE_0::DATAOUT_WIDTH.read(cacc0) as usize + 1 != out_w
            || ids::cacc::D_DATAOUT_SIZE_0::DATAOUT_HEIGHT.read(cacc0) as usize + 1 != out_h
            || cacc.field(
                ids::cacc::D_DATAOUT_SIZE_1,
                ids::cacc::D_DATAOUT_SIZE_1::DATAOUT_CHANNEL,
            ) as usize
                + 1
                != out_c
        {
            return Err(cfg_err("CACC", "output cube differs from CSC"));
        }
        if out_c != kk {
            return Err(cfg_err(
                "CSC",
                format!("{out_c} output channels for {kk} kernels"),
            ));
        }
        let stride = csc.cur(ids::csc::D_CONV_STRIDE_EXT);
        let sx = ids::csc::D_CONV_STRIDE_EXT::CONV_X_STRIDE_EXT.read(stride) as usize + 1;
        let sy = ids::csc::D_CONV_STRIDE_EXT::CONV_Y_STRIDE_EXT.read(stride) as usize + 1;
        let dil = csc.cur(ids::csc::D_DILATION_EXT);
        let dx = ids::csc::D_DILATION_EXT::X_DILATION_EXT.read(dil) as usize + 1;
        let dy = ids::csc::D_DILATION_EXT::Y_DILATION_EXT.read(dil) as usize + 1;
        let pad = csc.cur(ids::csc::D_ZERO_PADDING);
        let pl = ids::csc::D_ZERO_PADDING::PAD_LEFT.read(pad) as usize;
        let pt = ids::csc::D_ZERO_PADDING::PAD_TOP.read(pad) as usize;
        let pad_raw = csc.field(
            ids::csc::D_ZERO_PADDING_VALUE,
            ids::csc::D_ZERO_PADDING_VALUE::PAD_VALUE,
        );
        let pad_value = match prec {
            Precision::Int8 => i32::from(pad_raw as u8 as i8),
            Precision::Int16 => i32::from(pad_raw as u16 as i16),
            Precision::Fp16 => pad_raw as i32,
        };
        let y_ext = 1usize
            << csc.field(
                ids::csc::D_POST_Y_EXTENSION,
                ids::csc::D_POST_Y_EXTENSION::Y_EXTENSION,
            );
        if y_ext > 4 {
            return Err(cfg_err("CSC", "reserved post-extension value"));
        }
        let lanes = cfg.hw.atomic_c as usize;
        let bpe = prec.bytes() as usize;
        let group = if prec == Precision::Int8 {
            cfg.hw.atomic_k as usize
        } else {
            (cfg.hw.atomic_k / 2) as usize
        };

        let mut wino = None;
        let mut geom = Geom {
            in_w: csc_w,
            in_h: csc_h,
            in_c: kc,
            out_w,
            out_h,
            k: kk,
            r: kr,
            s: ks,
            sx,
            sy,
            dx,
            dy,
            pl,
            pt,
            pad: pad_value,
            lanes,
            y_ext: 1,
        };
        if winograd {
            // CSC's Winograd sequencer reads neither the CSC stride, dilation, padding
            // nor pad value: CDMA has padded and channel-extended the input in CBUF.
            let zp = cdma.cur(ids::cdma::D_ZERO_PADDING);
            let st = cdma.cur(ids::cdma::D_CONV_STRIDE);
            let input = WinoInput {
                pad_left: ids::cdma::D_ZERO_PADDING::PAD_LEFT.read(zp) as usize,
                pad_right: ids::cdma::D_ZERO_PADDING::PAD_RIGHT.read(zp) as usize,
                pad_top: ids::cdma::D_ZERO_PADDING::PAD_TOP.read(zp) as usize,
                pad_bottom: ids::cdma::D_ZERO_PADDING::PAD_BOTTOM.read(zp) as usize,
                sx: ids::cdma::D_CONV_STRIDE::CONV_X_STRIDE.read(st) as usize + 1,
                sy: ids::cdma::D_CONV_STRIDE::CONV_Y_STRIDE.read(st) as usize + 1,
            };
            let (ew, eh, ec) = input
                .extended(cdma_w, cdma_h, cdma_c, prec, cfg.hw.memory_atomic)
                .map_err(|m| cfg_err("CDMA", m))?;
            if (csc_w, csc_h, csc_c) != (ew, eh, ec) {
                return Err(cfg_err(
                    "CSC",
                    format!(
                        "input cube {csc_w}x{csc_h}x{csc_c}, CDMA's Winograd extension of \
                         {cdma_w}x{cdma_h}x{cdma_c} is {ew}x{eh}x{ec}"
                    ),
                ));
            }
            if (ks, kr) != (4, 4) || kc != ec {
                return Err(cfg_err(
                    "CSC",
                    format!("Winograd kernels are 4x4x{ec}, not {ks}x{kr}x{kc}"),
                ));
            }
            if !out_w.is_multiple_of(4)
                || !out_h.is_multiple_of(4)
                || out_w + 4 > ew
                || out_h + 4 > eh
            {
                return Err(cfg_err(
                    "CSC",
                    format!(
                        "Winograd output {out_w}x{out_h} must be a multiple of 4 and at \
                         most the {ew}x{eh} extended input less 4"
                    ),
                ));
            }
            if y_ext != 1 {
                return Err(cfg_err("CSC", "post-extension needs image input"));
            }
            if in_prec != prec {
                return Err(cfg_err(
                    "CDMA",
                    "Winograd convolution cannot change precision",
                ));
            }
            geom.in_w = ew;
            geom.in_h = eh;
            geom.in_c = ec;
            geom.sx = 1;
            geom.sy = 1;
            geom.dx = 1;
            geom.dy = 1;
            geom.pl = 0;
            geom.pt = 0;
            wino = Some(Wino {
                input,
                geom: winograd::Geom {
                    in_w: ew,
                    in_h: eh,
                    in_c: ec,
                    out_w,
                    out_h,
                    k: kk,
                    pra_truncate: csc.field(ids::csc::D_PRA_CFG, ids::csc::D_PRA_CFG::PRA_TRUNCATE),
                },
            });
        } else if image {
            if ks != 1 {
                return Err(cfg_err(
                    "CSC",
                    "image input needs weight width 1 (pre-extended)",
                ));
            }
            if y_ext > 1 && kc > lanes / y_ext {
                return Err(cfg_err(
                    "CSC",
                    format!("post-extension {y_ext} with {kc} channels per kernel row"),
                ));
            }
            if csc_h != cdma_h {
                return Err(cfg_err("CSC", "input height differs from CDMA"));
            }
            // The equivalent cube is one column per output position.
            geom.in_w = out_w;
            geom.sx = 1;
            geom.dx = 1;
            geom.dy = 1;
            geom.pl = 0;
            geom.y_ext = y_ext;
        } else {
            if (csc_w, csc_h, csc_c) != (cdma_w, cdma_h, cdma_c) {
                return Err(cfg_err(
                    "CSC",
                    format!(
                        "input cube {csc_w}x{csc_h}x{csc_c} differs from CDMA's \
                         {cdma_w}x{cdma_h}x{cdma_c}"
                    ),
                ));
            }
            if kc != csc_c {
                return Err(cfg_err(
                    "CSC",
                    format!("{kc} kernel channels for {csc_c} input channels"),
                ));
            }
            if y_ext != 1 {
                return Err(cfg_err("CSC", "post-extension needs image input"));
            }
            if in_prec != prec {
                return Err(cfg_err(
                    "CDMA",
                    "direct convolution cannot change precision",
                ));
            }
        }
        let wgeom = cdma::WeightGeom {
            k: kk,
            c: kc,
            r: kr,
            s: ks,
            group,
            block: lanes,
            bpe,
            y_ext: geom.y_ext,
        };
        let wgeom = if winograd {
            cdma::WeightGeom {
                block: winograd::SUPER,
                ..wgeom
            }
        } else {
            wgeom
        };

        // CDMA weight registers against CSC's.
        let bpk = cdma.field(
            ids::cdma::D_WEIGHT_SIZE_0,
            ids::cdma::D_WEIGHT_SIZE_0::BYTE_PER_KERNEL,
        ) as usize
            + 1;
        if bpk != wgeom.bytes_per_kernel() {
            return Err(cfg_err(
                "CDMA",
                format!(
                    "BYTE_PER_KERNEL {bpk} but CSC's kernel is {}x{}x{} ({} bytes)",
                    ks,
                    kr,
                    kc,
                    wgeom.bytes_per_kernel()
                ),
            ));
        }
        if cdma.field(
            ids::cdma::D_WEIGHT_SIZE_1,
            ids::cdma::D_WEIGHT_SIZE_1::WEIGHT_KERNEL,
        ) as usize
            + 1
            != kk
        {
            return Err(cfg_err("CDMA", "kernel count differs from CSC"));
        }
        let compressed = cdma.cur(ids::cdma::D_WEIGHT_FORMAT) & 1 == 1;
        if (csc.cur(ids::csc::D_WEIGHT_FORMAT) & 1 == 1) != compressed {
            return Err(cfg_err("CSC", "weight format differs from CDMA"));
        }
        if compressed && !cfg.hw.features.weight_compression {
            return Err(cfg_err(
                "CDMA",
                format!("{} has no weight compression", cfg.name()),
            ));
        }
        let weight_bytes = u64::from(cdma.cur(ids::cdma::D_WEIGHT_BYTES));
        if u64::from(csc.cur(ids::csc::D_WEIGHT_BYTES)) != weight_bytes {
            return Err(cfg_err("CSC", "WEIGHT_BYTES differs from CDMA"));
        }

        // CBUF banks and entries.
        let bank = cdma.cur(ids::cdma::D_BANK);
        let data_banks = ids::cdma::D_BANK::DATA_BANK.read(bank) + 1;
        let weight_banks = ids::cdma::D_BANK::WEIGHT_BANK.read(bank) + 1;
        if csc.cur(ids::csc::D_BANK) != bank {
            return Err(cfg_err("CSC", "bank allocation differs from CDMA"));
        }
        if data_banks + weight_banks > cfg.hw.cbuf_banks {
            return Err(cfg_err(
                "CDMA",
                format!(
                    "{data_banks} data + {weight_banks} weight banks exceed the {} CBUF banks",
                    cfg.hw.cbuf_banks
                ),
            ));
        }
        // The field is 12 bits on v1 and 14 bits on v2 (`master:spec/manual/NVDLA_CDMA.rdl`,
        // `NVDLA_CSC.rdl`: reset_mask 0x3fff); the register map's write mask keeps
        // exactly the field (nv_small `dc_8192x1x1_2x3x1x41` programs 0x1fff: 8192
        // one-atom entries).
        let entries = cdma.cur(ids::cdma::D_ENTRY_PER_SLICE) as usize + 1;
        if csc.cur(ids::csc::D_ENTRY_PER_SLICE) as usize + 1 != entries {
            return Err(cfg_err("CSC", "ENTRY_PER_SLICE differs from CDMA"));
        }
        if let Some(w) = &wino {
            // One entry holds a 4x4 tile of 8 bytes of channels; ENTRY_PER_SLICE counts
            // a quarter of the entries of 4 extended rows.
            let want = w.geom.in_w * w.geom.in_c * bpe / 128;
            if entries != want {
                return Err(cfg_err(
                    "CDMA",
                    format!(
                        "ENTRY_PER_SLICE {entries}, a Winograd {}x{} line takes {want}",
                        w.geom.in_w, w.geom.in_c
                    ),
                ));
            }
        } else if !image {
            let want = entries_per_slice(cfg, cdma_w, cdma_c, prec);
            if entries != want {
                return Err(cfg_err(
                    "CDMA",
                    format!("ENTRY_PER_SLICE {entries}, a {cdma_w}x{cdma_c} line takes {want}"),
                ));
            }
        }
        let capacity = u64::from(data_banks) * cbuf_entries_per_bank(cfg);
        let rows = wino.map_or(cdma_h, |w| w.geom.in_h);
        let needed = (entries as u64) * (rows as u64) * (batches as u64);
        if needed > capacity {
            return Err(cfg_err(
                "CDMA",
                format!(
                    "input needs {needed} CBUF entries, {data_banks} data banks hold {capacity}"
                ),
            ));
        }

        let mg0 = cdma.cur(ids::cdma::D_MEAN_GLOBAL_0);
        let mg1 = cdma.cur(ids::cdma::D_MEAN_GLOBAL_1);
        let s16 = |v: u32| i64::from(v as u16 as i16);
        let cvt_cfg = cdma.cur(ids::cdma::D_CVT_CFG);
        let zp = cdma.cur(ids::cdma::D_ZERO_PADDING);
        let map = cdma.cur(ids::cdma::D_DAIN_MAP);
        Ok(Layer {
            prec,
            in_prec,
            image,
            data_reuse: misc.is_set(CDMA_MISC::DATA_REUSE),
            weight_reuse: misc.is_set(CDMA_MISC::WEIGHT_REUSE),
            skip_data_rls: misc.is_set(CDMA_MISC::SKIP_DATA_RLS),
            skip_weight_rls: misc.is_set(CDMA_MISC::SKIP_WEIGHT_RLS),
            cdma_w,
            cdma_h,
            cdma_c,
            batches,
            atom: cfg.hw.memory_atomic,
            dain_ram: RamType::from_field(cdma.cur(ids::cdma::D_DAIN_RAM_TYPE)),
            dain_addr: addr64(
                cdma.cur(ids::cdma::D_DAIN_ADDR_HIGH_0),
                cdma.cur(ids::cdma::D_DAIN_ADDR_LOW_0),
            ),
            dain_addr1: addr64(
                cdma.cur(ids::cdma::D_DAIN_ADDR_HIGH_1),
                cdma.cur(ids::cdma::D_DAIN_ADDR_LOW_1),
            ),
            line_stride: u64::from(cdma.cur(ids::cdma::D_LINE_STRIDE)),
            uv_line_stride: u64::from(cdma.cur(ids::cdma::D_LINE_UV_STRIDE)),
            surf_stride: u64::from(cdma.cur(ids::cdma::D_SURF_STRIDE)),
            batch_stride: u64::from(cdma.cur(ids::cdma::D_BATCH_STRIDE)),
            line_packed: map & 1 == 1,
            surf_packed: (map >> 16) & 1 == 1,
            pixel_format: ids::cdma::D_DATAIN_FORMAT::PIXEL_FORMAT.read(fmt),
            pitch_linear: ids::cdma::D_DATAIN_FORMAT::PIXEL_MAPPING.read(fmt) == 0,
            sign_override: ids::cdma::D_DATAIN_FORMAT::PIXEL_SIGN_OVERRIDE.read(fmt) == 1,
            pixel_x_offset: cdma.field(
                ids::cdma::D_PIXEL_OFFSET,
                ids::cdma::D_PIXEL_OFFSET::PIXEL_X_OFFSET,
            ) as usize,
            pad_left: ids::cdma::D_ZERO_PADDING::PAD_LEFT.read(zp) as usize,
            pad_right: ids::cdma::D_ZERO_PADDING::PAD_RIGHT.read(zp) as usize,
            cdma_pad_value: cdma.field(
                ids::cdma::D_ZERO_PADDING_VALUE,
                ids::cdma::D_ZERO_PADDING_VALUE::PAD_VALUE,
            ) as u16,
            mean_enabled: cdma.cur(ids::cdma::D_MEAN_FORMAT) & 1 == 1,
            mean: [s16(mg0), s16(mg0 >> 16), s16(mg1), s16(mg1 >> 16)],
            cvt: cdma::Converter {
                enabled: cvt_cfg & 1 == 1,
                offset: s16(cdma.cur(ids::cdma::D_CVT_OFFSET)),
                scale: s16(cdma.cur(ids::cdma::D_CVT_SCALE)),
                truncate: ids::cdma::D_CVT_CFG::CVT_TRUNCATE.read(cvt_cfg),
            },
            nan_to_zero: cdma.cur(ids::cdma::D_NAN_FLUSH_TO_ZERO) & 1 == 1,
            compressed,
            weight_ram: RamType::from_field(cdma.cur(ids::cdma::D_WEIGHT_RAM_TYPE)),
            weight_addr: addr64(
                cdma.cur(ids::cdma::D_WEIGHT_ADDR_HIGH),
                cdma.cur(ids::cdma::D_WEIGHT_ADDR_LOW),
            ),
            weight_bytes,
            wgs_addr: addr64(
                cdma.cur(ids::cdma::D_WGS_ADDR_HIGH),
                cdma.cur(ids::cdma::D_WGS_ADDR_LOW),
            ),
            wmb_addr: addr64(
                cdma.cur(ids::cdma::D_WMB_ADDR_HIGH),
                cdma.cur(ids::cdma::D_WMB_ADDR_LOW),
            ),
            wmb_bytes: u64::from(cdma.cur(ids::cdma::D_WMB_BYTES)),
            geom,
            csc_c,
            image_sx: sx,
            wgeom,
            truncate: cacc.field(ids::cacc::D_CLIP_CFG, ids::cacc::D_CLIP_CFG::CLIP_TRUNCATE),
            data_banks,
            weight_banks,
            wino,
        })
    }
}

/// What the convolution buffer holds between layers: the last loaded input cube and
/// weights, so that a layer with `DATA_REUSE`/`WEIGHT_REUSE` computes with them
/// instead of fetching. Released contents stay physically in the banks until
/// overwritten, so reuse after a release still finds them (logged). Each is tagged
/// with whether it was loaded for Winograd convolution: CBUF then holds a different
/// arrangement (CSC reuses data only in the same convolution mode).
#[derive(Debug, Default, Clone)]
pub struct Cbuf {
    data: Option<Held<InputCube>>,
    weights: Option<Held<Weights>>,
}

/// One CBUF content.
#[derive(Debug, Clone)]
struct Held<T> {
    content: T,
    released: bool,
    winograd: bool,
}

impl Cbuf {
    /// Forgets everything (reset).
    pub fn clear(&mut self) {
        *self = Cbuf::default();
    }
}

/// The result of one convolution layer.
#[derive(Debug, Clone)]
pub struct ConvOutput {
    /// CACC output of batch 0, `(k * h + y) * w + x`, for SDP.
    pub cube: Vec<i64>,
    /// All batches.
    pub batches: usize,
    /// Results CACC saturated.
    pub saturated: u32,
}

/// Runs one layer: fetch (or reuse), convolve, accumulate.
pub fn run(
    _cfg: &HwConfig,
    layer: &Layer,
    cbuf: &mut Cbuf,
    mem: &Memory,
) -> Result<ConvOutput, EngineError> {
    let g = &layer.geom;
    let winograd = layer.wino.is_some();
    let input = if layer.data_reuse {
        match &cbuf.data {
            Some(h)
                if h.winograd == winograd
                    && (h.content.w, h.content.h, h.content.c) == (g.in_w, g.in_h, g.in_c) =>
            {
                if h.released {
                    log::warn!("CDMA: data reuse after the data were released");
                }
                h.content.clone()
            }
            _ => {
                return Err(cfg_err(
                    "CDMA",
                    "DATA_REUSE set but CBUF holds no input of this shape and mode",
                ))
            }
        }
    } else if let Some(w) = &layer.wino {
        cdma::fetch_winograd(layer, &w.input, mem)?
    } else if layer.image {
        let lines = cdma::fetch_image(layer, mem)?;
        cdma::image_as_cube(&lines, g.out_w, layer.image_sx, layer.csc_c, g.in_c)?
    } else {
        cdma::fetch_feature(layer, mem)?
    };
    let weights = if layer.weight_reuse {
        match &cbuf.weights {
            Some(h)
                if h.winograd == winograd
                    && (h.content.k, h.content.c, h.content.r, h.content.s)
                        == (g.k, g.in_c, g.r, g.s) =>
            {
                if h.released {
                    log::warn!("CDMA: weight reuse after the weights were released");
                }
                h.content.clone()
            }
            _ => {
                return Err(cfg_err(
                    "CDMA",
                    "WEIGHT_REUSE set but CBUF holds no weights of this shape and mode",
                ))
            }
        }
    } else if winograd {
        cdma::fetch_weights_winograd(layer, &layer.wgeom, mem)?
    } else {
        cdma::fetch_weights(layer, &layer.wgeom, mem)?
    };
    let acc = match &layer.wino {
        Some(w) => winograd::conv(&w.geom, layer.prec, &input, &weights, layer.truncate)?,
        None => compute::conv(g, layer.prec, &input, &weights, layer.truncate)?,
    };
    let per_batch = g.k * g.out_h * g.out_w;
    let mut cube = acc.data;
    cube.truncate(per_batch);
    cbuf.data = Some(Held {
        content: input,
        released: !layer.skip_data_rls,
        winograd,
    });
    cbuf.weights = Some(Held {
        content: weights,
        released: !layer.skip_weight_rls,
        winograd,
    });
    Ok(ConvOutput {
        cube,
        batches: layer.batches,
        saturated: acc.saturated,
    })
}
