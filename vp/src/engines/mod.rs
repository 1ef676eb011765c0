//! Processing engines and what they share: precisions and feature-cube layout.
//!
//! A feature cube in NVDLA memory is stored in "surfaces" of one memory atom worth of
//! channels (32 B on nv_full/nv_large, 8 B on nv_small): element (x, y, c) lives at
//! `base + (c / cpa) * surface_stride + y * line_stride + x * atom + (c % cpa) * bpe`,
//! where `cpa = atom / bpe` channels are packed per atom (hwarch, "Data Formats",
//! "Feature Data Format"). Engines read whole cubes into plain vectors, compute, and write
//! them back with the same layout, so the inner loops work on slices.

pub mod bdma;
pub mod cdp;
pub mod conv;
pub mod pdp;
pub mod rubik;
pub mod sdp;

use crate::mem::{MemError, Memory, RamType};

/// Why an engine could not complete a layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// A DMA fell outside configured memory.
    #[error(transparent)]
    Mem(#[from] MemError),
    /// The programmed registers describe something the hardware cannot do.
    #[error("{block}: invalid programming: {msg}")]
    Config {
        /// Block name.
        block: &'static str,
        /// What is wrong.
        msg: String,
    },
    /// Valid programming that this model does not implement (yet).
    #[error("{block}: not modelled: {msg}")]
    Unsupported {
        /// Block name.
        block: &'static str,
        /// What is missing.
        msg: String,
    },
}

/// Element precision of a datapath (`*_PRECISION` / `*_DATA` register fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// Signed 8-bit integer.
    Int8,
    /// Signed 16-bit integer.
    Int16,
    /// IEEE half precision.
    Fp16,
}

impl Precision {
    /// Decodes the 2-bit field (0 int8, 1 int16, 2 fp16).
    pub fn from_field(v: u32, block: &'static str) -> Result<Self, EngineError> {
        match v & 3 {
            0 => Ok(Precision::Int8),
            1 => Ok(Precision::Int16),
            2 => Ok(Precision::Fp16),
            _ => Err(EngineError::Config {
                block,
                msg: format!("reserved precision value {v}"),
            }),
        }
    }

    /// Bytes per element.
    pub fn bytes(self) -> u32 {
        match self {
            Precision::Int8 => 1,
            _ => 2,
        }
    }
}

/// Checks a precision against what the model computes for the build
/// ([`HwConfig::computes`](crate::HwConfig::computes)).
pub fn check_precision(
    cfg: &crate::config::HwConfig,
    p: Precision,
    block: &'static str,
) -> Result<(), EngineError> {
    if cfg.computes(p) {
        Ok(())
    } else {
        Err(EngineError::Config {
            block,
            msg: format!("{p:?} is not supported by {}", cfg.name()),
        })
    }
}

/// Where a feature cube lives and how it is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CubeLayout {
    /// Memory interface.
    pub ram: RamType,
    /// Address of element (0, 0, 0).
    pub base: u64,
    /// Bytes between lines.
    pub line_stride: u64,
    /// Bytes between surfaces.
    pub surf_stride: u64,
    /// Width in elements.
    pub w: usize,
    /// Height in elements.
    pub h: usize,
    /// Channels.
    pub c: usize,
    /// Element precision.
    pub prec: Precision,
    /// Memory atom in bytes.
    pub atom: u32,
}

/// Largest cube (in elements) the model will materialise. Register fields allow up to
/// 8192 x 8192 x 8192; a layer beyond this limit is refused with
/// [`EngineError::Unsupported`] instead of exhausting host memory.
pub const MAX_CUBE_ELEMENTS: usize = 1 << 28;

/// Splits `0..n` into parts (a few per core, so a busy core does not hold the others
/// back) and runs `f` on each on rayon's pool; the results come back in order. Callers
/// compute every output element whole within one part, so results do not depend on the
/// number of threads.
pub(crate) fn par_ranges<T: Send>(
    n: usize,
    f: impl Fn(std::ops::Range<usize>) -> T + Sync + Send,
) -> Vec<T> {
    use rayon::prelude::*;
    let parts = (rayon::current_num_threads() * 4).min(n).max(1);
    if parts == 1 || rayon::current_num_threads() == 1 {
        return vec![f(0..n)];
    }
    let per = n.div_ceil(parts);
    (0..n.div_ceil(per))
        .into_par_iter()
        .map(|t| f(t * per..((t + 1) * per).min(n)))
        .collect()
}

/// Elements below which [`par_chunks`] stays on the calling thread (handing work to the
/// pool costs more than it saves).
pub(crate) const PARALLEL_ELEMENTS: usize = 1 << 16;

/// A vector of `n` zeros, written by rayon's pool when it is large: the calling thread
/// would otherwise clear every page of it alone (glibc's `calloc` clears reused memory
/// with `memset`, fresh memory page fault by page fault).
pub(crate) fn zeroed<T: Copy + Default + Send + Sync>(n: usize) -> Vec<T> {
    use rayon::prelude::*;
    if n < 4 * PARALLEL_ELEMENTS || rayon::current_num_threads() == 1 {
        return vec![T::default(); n];
    }
    let mut v = Vec::with_capacity(n);
    v.par_extend(rayon::iter::repeat_n(T::default(), n));
    v
}

/// Whether [`par_chunks`] and [`par_read_chunks`] hand `len` elements in pieces of `chunk`
/// to rayon's pool: enough of them, more than one piece, and more than one thread.
fn on_pool(len: usize, chunk: usize) -> bool {
    len >= PARALLEL_ELEMENTS && len > chunk && rayon::current_num_threads() > 1
}

/// Runs `f(i, chunk)` on the `i`-th `chunk`-long piece of `data` (the last may be
/// shorter), on rayon's pool when `data` has at least [`PARALLEL_ELEMENTS`] elements, each
/// piece's loops compiled by [`wide`] (give `f` as an `#[inline(always)]` closure); the
/// results come back in order. Every element is written by exactly one call, so results
/// do not depend on the number of threads.
pub(crate) fn par_chunks<T: Send, R: Send>(
    data: &mut [T],
    chunk: usize,
    f: impl Fn(usize, &mut [T]) -> R + Sync + Send,
) -> Vec<R> {
    use rayon::prelude::*;
    let chunk = chunk.max(1);
    if !on_pool(data.len(), chunk) {
        data.chunks_mut(chunk)
            .enumerate()
            .map(|(i, c)| {
                wide(
                    #[inline(always)]
                    || f(i, c),
                )
            })
            .collect()
    } else {
        data.par_chunks_mut(chunk)
            .enumerate()
            .map(|(i, c)| {
                wide(
                    #[inline(always)]
                    || f(i, c),
                )
            })
            .collect()
    }
}

/// [`par_chunks`] for reading: `f(i, chunk)` on each `chunk`-long piece of `data`.
pub(crate) fn par_read_chunks<T: Sync, R: Send>(
    data: &[T],
    chunk: usize,
    f: impl Fn(usize, &[T]) -> R + Sync + Send,
) -> Vec<R> {
    use rayon::prelude::*;
    let chunk = chunk.max(1);
    if !on_pool(data.len(), chunk) {
        data.chunks(chunk)
            .enumerate()
            .map(|(i, c)| {
                wide(
                    #[inline(always)]
                    || f(i, c),
                )
            })
            .collect()
    } else {
        data.par_chunks(chunk)
            .enumerate()
            .map(|(i, c)| {
                wide(
                    #[inline(always)]
                    || f(i, c),
                )
            })
            .collect()
    }
}

/// The widest vector extension [`wide`] compiles its loops for on this CPU.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wide {
    /// The x86-64 baseline (SSE2).
    Baseline,
    /// AVX2 with FMA and BMI2 (Haswell, Zen and later).
    Avx2,
    /// AVX-512 F, DQ, BW and VL.
    Avx512,
}

/// Which [`Wide`] tier the CPU runs. `NVDLA_VP_NO_AVX512=1` caps it at AVX2 and
/// `NVDLA_VP_NO_AVX2=1` at the baseline. The same arithmetic either way, only the
/// instructions differ.
#[cfg(target_arch = "x86_64")]
pub(crate) fn wide_tier() -> Wide {
    static WIDE: std::sync::OnceLock<Wide> = std::sync::OnceLock::new();
    *WIDE.get_or_init(|| {
        let off = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty() && v != "0");
        let avx2 = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("bmi2")
            && !off("NVDLA_VP_NO_AVX2");
        let avx512 = avx2
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && !off("NVDLA_VP_NO_AVX512");
        if avx512 {
            Wide::Avx512
        } else if avx2 {
            Wide::Avx2
        } else {
            Wide::Baseline
        }
    })
}

/// Runs `f`, with the loops it inlines compiled for the widest [`Wide`] tier the CPU has
/// (the closure is inlined into the wrapper, which carries the target features; callers
/// mark it `#[inline(always)]`, and so the closures given to [`par_chunks`] and
/// [`par_read_chunks`], which this wraps: LLVM left large ones out of line, compiled for
/// the baseline, and the SDP's 64-bit loops ran scalar on AVX2):
/// 64-bit lanes, maxima and conversions that the x86-64 baseline does element by element.
/// Rust never contracts floating-point operations, so FMA being enabled changes no result.
#[inline(always)]
pub(crate) fn wide<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,bmi2")]
        fn run512<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        #[target_feature(enable = "avx2,fma,bmi2")]
        fn run256<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        match wide_tier() {
            // SAFETY: `wide_tier()` found the CPU features `run512` is compiled for.
            #[allow(unsafe_code)]
            Wide::Avx512 => return unsafe { run512(f) },
            // SAFETY: `wide_tier()` found the CPU features `run256` is compiled for.
            #[allow(unsafe_code)]
            Wide::Avx2 => return unsafe { run256(f) },
            Wide::Baseline => {}
        }
    }
    f()
}

/// Checks `w * h * c` against [`MAX_CUBE_ELEMENTS`].
pub fn check_cube(block: &'static str, w: usize, h: usize, c: usize) -> Result<(), EngineError> {
    match w.checked_mul(h).and_then(|v| v.checked_mul(c)) {
        Some(n) if n <= MAX_CUBE_ELEMENTS => Ok(()),
        _ => Err(EngineError::Unsupported {
            block,
            msg: format!(
                "{w}x{h}x{c} cube exceeds the model's limit of {MAX_CUBE_ELEMENTS} elements"
            ),
        }),
    }
}

/// Whether `surfaces` x `lines` blocks of `len` bytes, `line_stride` and `surf_stride`
/// apart, share no byte, in either of the two layouts a program can use: surfaces of
/// consecutive lines, or lines of consecutive surfaces. Output DMAs that write more than
/// their memory holds over themselves are refused: such strides let a transfer of
/// gigabytes "fit" a small buffer (fuzz target `csb`).
pub fn lines_are_disjoint(
    len: u64,
    lines: u64,
    line_stride: u64,
    surfaces: u64,
    surf_stride: u64,
) -> bool {
    // `apart(n, stride, block)`: n blocks of `block` bytes, `stride` apart, do not overlap.
    let apart = |n: u64, stride: u64, block: u64| n <= 1 || stride >= block;
    let span = |n: u64, stride: u64| {
        n.saturating_sub(1)
            .saturating_mul(stride)
            .saturating_add(len)
    };
    let surface_major =
        apart(lines, line_stride, len) && apart(surfaces, surf_stride, span(lines, line_stride));
    let line_major =
        apart(surfaces, surf_stride, len) && apart(lines, line_stride, span(surfaces, surf_stride));
    surface_major || line_major
}

impl CubeLayout {
    /// Channels per atom.
    pub fn cpa(&self) -> usize {
        (self.atom / self.prec.bytes()).max(1) as usize
    }

    /// Number of surfaces.
    pub fn surfaces(&self) -> usize {
        self.c.div_ceil(self.cpa())
    }

    fn line_addr(&self, s: usize, y: usize) -> u64 {
        self.base
            .wrapping_add((s as u64).wrapping_mul(self.surf_stride))
            .wrapping_add((y as u64).wrapping_mul(self.line_stride))
    }

    /// Reads the cube as signed integers (fp16 as its raw 16 bits, zero-extended),
    /// index `(c * h + y) * w + x`.
    pub fn read(&self, mem: &Memory) -> Result<Vec<i32>, EngineError> {
        let (w, h, c) = (self.w, self.h, self.c);
        check_cube("DMA", w, h, c)?;
        // The lines in memory order (one copy each), then their elements sorted into
        // channel planes a surface at a time, in parallel.
        let line_len = w * self.atom as usize;
        let mut raw = zeroed(self.surfaces() * h * line_len);
        if line_len > 0 {
            for (i, line) in raw.chunks_exact_mut(line_len).enumerate() {
                mem.read(self.ram, self.line_addr(i / h, i % h), line)?;
            }
        }
        let mut out = zeroed(w * h * c);
        let (cpa, atom, prec) = (self.cpa(), self.atom as usize, self.prec);
        let plane = w * h;
        par_chunks(
            &mut out,
            cpa * plane,
            #[inline(always)]
            |s, chunk| {
                let surface = &raw[s * h * line_len..][..h * line_len];
                for (k, dst) in chunk.chunks_exact_mut(plane).enumerate() {
                    for (y, row) in dst.chunks_exact_mut(w).enumerate() {
                        let line = &surface[y * line_len..][..line_len];
                        match prec {
                            Precision::Int8 => {
                                for (o, a) in row.iter_mut().zip(line[k..].iter().step_by(atom)) {
                                    *o = i32::from(*a as i8);
                                }
                            }
                            Precision::Int16 | Precision::Fp16 => {
                                let signed = prec == Precision::Int16;
                                for (x, o) in row.iter_mut().enumerate() {
                                    let b = x * atom + 2 * k;
                                    let v = u16::from_le_bytes([line[b], line[b + 1]]);
                                    *o = if signed {
                                        i32::from(v as i16)
                                    } else {
                                        i32::from(v)
                                    };
                                }
                            }
                        }
                    }
                }
            },
        );
        Ok(out)
    }

    /// Checks that every line of the cube lies inside memory, without touching it: an
    /// engine whose output DMA would fault refuses the layer before computing it (the
    /// fault is the same; the work is not done for nothing).
    ///
    /// An output larger than its whole memory, written over itself by overlapping lines,
    /// is refused as unsupported (fuzz target `csb`: a PDP output of 7944x264x64 written
    /// with a 224-byte line stride ran for minutes). Smaller overlapping outputs are
    /// written line after line as the hardware would (a loadable for another build does
    /// that, and its real fault must come first).
    pub fn check(&self, mem: &Memory) -> Result<(), EngineError> {
        check_cube("DMA", self.w, self.h, self.c)?;
        let len = (self.w as u64) * u64::from(self.atom);
        for s in 0..self.surfaces() {
            for y in 0..self.h {
                mem.check(self.ram, self.line_addr(s, y), len)?;
            }
        }
        let total = len
            .saturating_mul(self.h as u64)
            .saturating_mul(self.surfaces() as u64);
        if total > mem.capacity(self.ram) && !self.lines_are_disjoint(len) {
            return Err(EngineError::Unsupported {
                block: "DMA",
                msg: format!(
                    "output of {total} bytes, more than its memory holds, written over \
                     itself: lines of {len} bytes, line stride {}, surface stride {}, {} lines \
                     x {} surfaces",
                    self.line_stride,
                    self.surf_stride,
                    self.h,
                    self.surfaces()
                ),
            });
        }
        Ok(())
    }

    /// Whether no two of the cube's lines of `len` bytes share a byte.
    fn lines_are_disjoint(&self, len: u64) -> bool {
        lines_are_disjoint(
            len,
            self.h as u64,
            self.line_stride,
            self.surfaces() as u64,
            self.surf_stride,
        )
    }

    /// Writes a cube given in the order of [`CubeLayout::read`]. Values are stored as
    /// their low 8 or 16 bits; channels past `c` in the last surface are written as zero
    /// (the write DMA always writes whole atoms), as are elements `data` lacks.
    pub fn write(&self, mem: &mut Memory, data: &[i32]) -> Result<(), EngineError> {
        let (w, h, c) = (self.w, self.h, self.c);
        check_cube("DMA", w, h, c)?;
        // The lines built a surface at a time in parallel, then written in memory order.
        let line_len = w * self.atom as usize;
        let mut raw = zeroed(self.surfaces() * h * line_len);
        let (cpa, atom, bpe) = (self.cpa(), self.atom as usize, self.prec.bytes() as usize);
        let plane = w * h;
        par_chunks(
            &mut raw,
            h * line_len,
            #[inline(always)]
            |s, surface| {
                for k in 0..cpa.min(c.saturating_sub(s * cpa)) {
                    let src = data.get((s * cpa + k) * plane..).unwrap_or(&[]);
                    for (y, line) in surface.chunks_exact_mut(line_len).enumerate() {
                        let row = src.get(y * w..).unwrap_or(&[]);
                        let row = &row[..row.len().min(w)];
                        if bpe == 1 {
                            for (o, &v) in line[k..].iter_mut().step_by(atom).zip(row) {
                                *o = v as u8;
                            }
                        } else {
                            for (x, &v) in row.iter().enumerate() {
                                let b = x * atom + 2 * k;
                                line[b..b + 2].copy_from_slice(&(v as u16).to_le_bytes());
                            }
                        }
                    }
                }
            },
        );
        if line_len > 0 {
            for (i, line) in raw.chunks_exact(line_len).enumerate() {
                mem.write(self.ram, self.line_addr(i / h, i % h), line)?;
            }
        }
        Ok(())
    }
}

/// Joins a HIGH/LOW register pair into a 64-bit address.
pub fn addr64(high: u32, low: u32) -> u64 {
    (u64::from(high) << 32) | u64::from(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cube_round_trip_int16_partial_surface() {
        let mut mem = Memory::new(64, false);
        let l = CubeLayout {
            ram: RamType::Dram,
            base: 0x1000,
            line_stride: 0x40,
            surf_stride: 0x100,
            w: 2,
            h: 2,
            c: 20,
            prec: Precision::Int16,
            atom: 32,
        };
        let data: Vec<i32> = (0..80).map(|i| i * 300 - 12000).collect();
        l.write(&mut mem, &data).unwrap();
        assert_eq!(l.read(&mem).unwrap(), data);
        // channel 17 of (x=1, y=1): surface 1, offset 0x100 + 0x40 + 32 + 2
        let v = mem
            .read_vec(RamType::Dram, 0x1000 + 0x100 + 0x40 + 32 + 2, 2)
            .unwrap();
        assert_eq!(
            i16::from_le_bytes([v[0], v[1]]) as i32,
            data[(17 * 2 + 1) * 2 + 1]
        );
    }

    #[test]
    fn overlapping_output_lines_are_refused_before_computing() {
        let mut mem = Memory::new(64, false);
        mem.set_dram_window(crate::mem::Window {
            base: 0,
            size: 16 << 20,
        });
        let layout = |line_stride, surf_stride, w, h| CubeLayout {
            ram: RamType::Dram,
            base: 0,
            line_stride,
            surf_stride,
            w,
            h,
            c: 64,
            prec: Precision::Int16,
            atom: 32,
        };
        // Packed surface-major and line-interleaved layouts, and a single line per
        // surface whose line stride is irrelevant, are accepted.
        assert!(layout(0x40, 0x80, 2, 2).check(&mem).is_ok());
        assert!(layout(0x100, 0x40, 2, 2).check(&mem).is_ok());
        assert!(layout(0, 0x40, 2, 1).check(&mem).is_ok());
        // The fuzz case: lines far longer than their stride.
        let e = layout(0xe0, 0x620, 7944, 264).check(&mem);
        assert!(matches!(e, Err(EngineError::Unsupported { .. })), "{e:?}");
        // Small overlapping outputs are written as the hardware would.
        assert!(layout(0x40, 0x40, 2, 2).check(&mem).is_ok());
    }
}
