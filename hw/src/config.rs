//! Configuration parameters of the published NVDLA builds.
//!
//! The types are written here; the values are generated from NVIDIA's project
//! specifications (`spec/defs/<build>.spec` with `projects.spec` of `nvdla/hw`) by
//! `nvdla-hw-gen` (`hw/gen`) into `config/generated.rs`, whose header names the commits
//! it was read from and the command that regenerates it. [`SOURCES`] says the same.

use core::fmt;

// Formatted by its generator (`nvdla-hw-gen` writes rustfmt-like layout), not by rustfmt.
#[rustfmt::skip]
mod generated;

pub use generated::{
    NV_FULL, NV_LARGE, NV_MEDIUM_1024_FULL, NV_MEDIUM_512, NV_SMALL, NV_SMALL_256,
    NV_SMALL_256_FULL, SOURCES,
};

/// Every published build, whatever this crate was compiled with: nv_full (v1), then the
/// v2 builds by name.
pub const PUBLISHED: &[Config] = generated::ALL;

/// The builds compiled in, in [`PUBLISHED`]'s order: all seven, unless Cargo features
/// (`nv_full`, `nv_small`, ...: one per build) narrow the table to the builds they name.
/// Code that only reads parameters through this table (as the firmware does) drops what
/// no compiled-in build has.
pub const ALL: &[Config] = &COMPILED;

/// Whether the Cargo features narrow the table (some build's feature is on).
pub const NARROWED: bool = cfg!(any(
    feature = "nv_full",
    feature = "nv_large",
    feature = "nv_medium_1024_full",
    feature = "nv_medium_512",
    feature = "nv_small",
    feature = "nv_small_256",
    feature = "nv_small_256_full",
));

/// The builds named by the narrowing features.
const FEATURES: [(&str, bool); 7] = [
    ("nv_full", cfg!(feature = "nv_full")),
    ("nv_large", cfg!(feature = "nv_large")),
    ("nv_medium_1024_full", cfg!(feature = "nv_medium_1024_full")),
    ("nv_medium_512", cfg!(feature = "nv_medium_512")),
    ("nv_small", cfg!(feature = "nv_small")),
    ("nv_small_256", cfg!(feature = "nv_small_256")),
    ("nv_small_256_full", cfg!(feature = "nv_small_256_full")),
];

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Whether published build `name` is compiled in.
const fn compiled(name: &str) -> bool {
    if !NARROWED {
        return true;
    }
    let mut i = 0;
    while i < FEATURES.len() {
        if str_eq(FEATURES[i].0, name) {
            return FEATURES[i].1;
        }
        i += 1;
    }
    false
}

const COUNT: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < PUBLISHED.len() {
        if compiled(PUBLISHED[i].name) {
            n += 1;
        }
        i += 1;
    }
    n
};

const COMPILED: [Config; COUNT] = {
    let mut out = [NV_FULL; COUNT];
    let (mut i, mut n) = (0, 0);
    while i < PUBLISHED.len() {
        if compiled(PUBLISHED[i].name) {
            out[n] = PUBLISHED[i];
            n += 1;
        }
        i += 1;
    }
    out
};

/// What the compiled-in builds have between them: a feature is `true` when at least one
/// of [`ALL`] has it. A program that tests `COMPILED_FEATURES.x && config.features.x`
/// lets the compiler drop the code of a feature no compiled-in build has.
pub const COMPILED_FEATURES: Features = {
    let mut u = Features {
        bdma: false,
        rubik: false,
        cdp: false,
        pdp: false,
        sdp_lut: false,
        sdp_bs: false,
        sdp_bn: false,
        sdp_ew: false,
        cvif: false,
        int8: false,
        int16: false,
        fp16: false,
        winograd: false,
        weight_compression: false,
        batch: false,
    };
    let mut i = 0;
    while i < ALL.len() {
        let f = &ALL[i].features;
        u.bdma |= f.bdma;
        u.rubik |= f.rubik;
        u.cdp |= f.cdp;
        u.pdp |= f.pdp;
        u.sdp_lut |= f.sdp_lut;
        u.sdp_bs |= f.sdp_bs;
        u.sdp_bn |= f.sdp_bn;
        u.sdp_ew |= f.sdp_ew;
        u.cvif |= f.cvif;
        u.int8 |= f.int8;
        u.int16 |= f.int16;
        u.fp16 |= f.fp16;
        u.winograd |= f.winograd;
        u.weight_compression |= f.weight_compression;
        u.batch |= f.batch;
        i += 1;
    }
    u
};

/// Whether a compiled-in build has register-map generation `g`.
pub const fn generation_compiled(g: Generation) -> bool {
    let mut i = 0;
    while i < ALL.len() {
        if ALL[i].generation as u8 == g as u8 {
            return true;
        }
        i += 1;
    }
    false
}

/// Why [`Config::select`] found no build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SelectError {
    /// No published build has this name.
    Unknown,
    /// A published build, left out of this program by its Cargo features.
    NotCompiled {
        /// The build's name.
        name: &'static str,
    },
}

impl fmt::Display for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectError::Unknown => f.write_str("no NVDLA build has this name"),
            SelectError::NotCompiled { name } => write!(
                f,
                "{name} is not compiled into this program (its Cargo features select other builds)"
            ),
        }
    }
}

/// Where generated values come from: files of one commit of NVIDIA's `nvdla/hw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Source {
    /// Repository (`https://github.com/nvdla/hw`).
    pub repository: &'static str,
    /// Branch (or other ref) the commit was taken from.
    pub branch: &'static str,
    /// Commit hash.
    pub commit: &'static str,
    /// Files read at that commit.
    pub files: &'static [&'static str],
}

/// Register-map generation of the hardware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Generation {
    /// NVDLA v1 (nv_full, branch `nvdlav1`): GLB at CSB 0x0000, BDMA at 0x4000, no CFGROM.
    V1,
    /// NVDLA v2 (every build of branch `master`): CFGROM at 0x0000, GLB at 0x1000.
    V2,
}

/// A data precision of the datapath.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Precision {
    /// 8-bit integer.
    Int8,
    /// 16-bit integer.
    Int16,
    /// IEEE half precision.
    Fp16,
}

impl Precision {
    /// Every precision, narrowest first.
    pub const ALL: [Precision; 3] = [Precision::Int8, Precision::Int16, Precision::Fp16];

    /// Bytes of one element.
    pub const fn bytes(self) -> u32 {
        match self {
            Precision::Int8 => 1,
            Precision::Int16 | Precision::Fp16 => 2,
        }
    }
}

/// Optional units and datapath features of one build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Features {
    /// Bridge DMA (`BDMA_ENABLE`).
    pub bdma: bool,
    /// RUBIK reshape engine (`RUBIK_ENABLE`).
    pub rubik: bool,
    /// Channel data processor, LRN (`CDP_ENABLE`).
    pub cdp: bool,
    /// Planar data processor, pooling (`PDP_ENABLE`).
    pub pdp: bool,
    /// SDP lookup table in the Y unit (`SDP_LUT_ENABLE`).
    pub sdp_lut: bool,
    /// SDP X1 (BS) unit (`SDP_BS_ENABLE`).
    pub sdp_bs: bool,
    /// SDP X2 (BN) unit (`SDP_BN_ENABLE`).
    pub sdp_bn: bool,
    /// SDP Y (EW) unit (`SDP_EW_ENABLE`).
    pub sdp_ew: bool,
    /// Secondary memory interface to on-chip SRAM through CVIF (`SECONDARY_MEMIF_ENABLE`).
    pub cvif: bool,
    /// int8 feature data (`FEATURE_DATA_TYPE_INT8`).
    pub int8: bool,
    /// int16 feature data. No v2 spec defines it (`projects.spec` on `master` requires
    /// `FEATURE_DATA_TYPE_INT8`); the v1 build is full precision.
    pub int16: bool,
    /// fp16 feature data. As for [`int16`](Self::int16).
    pub fp16: bool,
    /// Winograd convolution (`WINOGRAD_ENABLE`).
    pub winograd: bool,
    /// Weight compression (`WEIGHT_COMPRESSION_ENABLE`).
    pub weight_compression: bool,
    /// Batch mode (`BATCH_ENABLE`).
    pub batch: bool,
}

/// Elements per cycle of the post-processing units (`*_THROUGHPUT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Throughput {
    /// SDP X1 (`SDP_BS_THROUGHPUT`, 0 when absent).
    pub sdp_bs: u32,
    /// SDP X2 (`SDP_BN_THROUGHPUT`, 0 when absent).
    pub sdp_bn: u32,
    /// SDP Y (`SDP_EW_THROUGHPUT`, 0 when absent).
    pub sdp_ew: u32,
    /// PDP (`PDP_THROUGHPUT`).
    pub pdp: u32,
    /// CDP (`CDP_THROUGHPUT`).
    pub cdp: u32,
}

/// The memory interfaces (`PRIMARY_MEMIF_*`, `SECONDARY_MEMIF_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemIf {
    /// Data width of the primary interface (MCIF, DRAM) in bits (`PRIMARY_MEMIF_WIDTH`).
    pub primary_width: u32,
    /// Latency the primary interface's read buffers are sized for, in cycles
    /// (`PRIMARY_MEMIF_LATENCY`).
    pub primary_latency: u32,
    /// Longest burst of the primary interface, in memory atoms
    /// (`PRIMARY_MEMIF_MAX_BURST_LENGTH`).
    pub primary_max_burst: u32,
    /// Data width of the secondary interface (CVIF, SRAM) in bits; 0 without one.
    pub secondary_width: u32,
    /// Latency of the secondary interface in cycles; 0 without one.
    pub secondary_latency: u32,
    /// Longest burst of the secondary interface in memory atoms; 0 without one.
    pub secondary_max_burst: u32,
}

/// One hardware build: geometry and feature set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Config {
    /// Build name (`nv_full`, `nv_large`, `nv_small`, ...).
    pub name: &'static str,
    /// Register-map generation.
    pub generation: Generation,
    /// MAC atomic C: input channels consumed per MAC cycle (`MAC_ATOMIC_C_SIZE_*`).
    pub atomic_c: u32,
    /// MAC atomic K: output kernels per MAC cycle (`MAC_ATOMIC_K_SIZE_*`).
    pub atomic_k: u32,
    /// Memory atom in bytes: the unit of every DMA and of the channel packing of a
    /// feature cube (`MEMORY_ATOMIC_SIZE_*`).
    pub memory_atomic: u32,
    /// Convolution buffer banks (`CBUF_BANK_NUMBER_*`).
    pub cbuf_banks: u32,
    /// Convolution buffer bank width in bytes (`CBUF_BANK_WIDTH_*`).
    pub cbuf_bank_width: u32,
    /// Convolution buffer bank depth in entries (`CBUF_BANK_DEPTH_*`).
    pub cbuf_bank_depth: u32,
    /// Memory address width in bits (`MEM_ADDRESS_WIDTH_*`; the v1 spec has no such
    /// parameter and its address registers are 64-bit).
    pub mem_address_width: u32,
    /// Largest batch (`MAX_BATCH_SIZE_*`), 0 when the spec gives none (`_x`). The spec
    /// sets it independently of [`Features::batch`], which says whether batch mode exists.
    pub max_batch_size: u32,
    /// Optional units and datapath features.
    pub features: Features,
    /// Post-processing throughputs.
    pub throughput: Throughput,
    /// Memory interfaces.
    pub memif: MemIf,
}

impl Config {
    /// Total convolution buffer size in bytes.
    pub const fn cbuf_bytes(&self) -> u64 {
        self.cbuf_banks as u64 * self.cbuf_bank_width as u64 * self.cbuf_bank_depth as u64
    }

    /// Pooling output lines the PDP holds at once for a window `kernel_h` high moved
    /// `stride_h` lines at a time (`buffer_lines_num` of `NV_NVDLA_PDP_CORE_cal2d.v`): one
    /// when the stride is at least the window; for stride 1 the window height, for 2 half
    /// of it rounded up, for 3 two (three above 6), for more two.
    pub const fn pdp_buffered_lines(kernel_h: u32, stride_h: u32) -> u32 {
        if stride_h >= kernel_h {
            1
        } else {
            match stride_h {
                1 => kernel_h,
                2 => kernel_h.div_ceil(2),
                3 => {
                    if kernel_h <= 6 {
                        2
                    } else {
                        3
                    }
                }
                _ => 2,
            }
        }
    }

    /// Output pixels one pooling line may hold in the PDP's line banks when `lines` lines
    /// are buffered, for elements of `bytes` bytes; wider poolings go in vertical strips
    /// (`SPLIT_NUM`, partial widths). Known from NVIDIA's nv_small RTL
    /// (`NV_NVDLA_PDP_CORE_cal2d.v`, PDP throughput 1): 8 banks of 128 entries of one
    /// element each, merged 8, 4, 2 or 1 per line for 1, 2, 3-4 or 5-8 lines (docs/rtl.md,
    /// "Wide pooling"). `None` for the other builds (wider PDPs or atoms: their RTL is not
    /// at hand to read).
    pub const fn pdp_line_pixels(&self, lines: u32, bytes: u32) -> Option<u32> {
        if self.throughput.pdp != 1
            || self.memory_atomic != 8
            || lines == 0
            || lines > 8
            || bytes == 0
        {
            return None;
        }
        let merge = match lines {
            1 => 8,
            2 => 4,
            3 | 4 => 2,
            _ => 1,
        };
        let elements_per_atom = self.memory_atomic / bytes;
        if elements_per_atom == 0 {
            return None;
        }
        Some(128 / elements_per_atom * merge)
    }

    /// Whether the datapath takes feature data of precision `p` (weights have the same
    /// precision as feature data in every published build).
    pub const fn supports(&self, p: Precision) -> bool {
        match p {
            Precision::Int8 => self.features.int8,
            Precision::Int16 => self.features.int16,
            Precision::Fp16 => self.features.fp16,
        }
    }

    /// The feature-data precisions of the build, narrowest first.
    pub fn precisions(&self) -> impl Iterator<Item = Precision> + '_ {
        Precision::ALL.into_iter().filter(|p| self.supports(*p))
    }

    /// The compiled-in build called `name`, accepting upstream's `opendla-full`,
    /// `opendla-large` and `opendla-small` aliases; [`SelectError::NotCompiled`] for a
    /// published build left out by the Cargo features.
    pub fn select(name: &str) -> Result<&'static Config, SelectError> {
        let name = match name {
            "opendla-full" => "nv_full",
            "opendla-large" => "nv_large",
            "opendla-small" => "nv_small",
            n => n,
        };
        if let Some(c) = ALL.iter().find(|c| c.name == name) {
            return Ok(c);
        }
        match PUBLISHED.iter().find(|c| c.name == name) {
            Some(c) => Err(SelectError::NotCompiled { name: c.name }),
            None => Err(SelectError::Unknown),
        }
    }

    /// The compiled-in build called `name` ([`Config::select`] without the reason).
    pub fn by_name(name: &str) -> Option<&'static Config> {
        Config::select(name).ok()
    }

    /// Whether a program built with these Cargo features may drive this build: always
    /// with the full table (which also serves parameters of no published build), and
    /// with a narrowed table only the builds it names (by name: such a program reads the
    /// parameters from its table).
    pub fn is_compiled(&self) -> bool {
        !NARROWED || ALL.iter().any(|c| c.name == self.name)
    }

    /// The names of every compiled-in build, in the order of [`ALL`], for messages
    /// (`nv_full, nv_large, ...`).
    pub fn names() -> impl Iterator<Item = &'static str> {
        ALL.iter().map(|c| c.name)
    }
}

/// A published build, by name: what command lines select (`--config nv_small`) and what a
/// hardware model is built as. [`Build::hw`] gives its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Build {
    /// NVDLA v1, full configuration.
    #[default]
    NvFull,
    /// NVDLA v2, large configuration.
    NvLarge,
    /// NVDLA v2, medium configuration with 1024 MACs and every SDP unit and CV-SRAM.
    NvMedium1024Full,
    /// NVDLA v2, medium configuration with 512 MACs.
    NvMedium512,
    /// NVDLA v2, small configuration (int8 only, no SRAM, BDMA or RUBIK).
    NvSmall,
    /// NVDLA v2, small configuration with 256 MACs.
    NvSmall256,
    /// NVDLA v2, small configuration with 256 MACs, every SDP unit and CV-SRAM.
    NvSmall256Full,
}

impl Build {
    /// Every published build, in [`PUBLISHED`]'s order (whatever the Cargo features).
    pub const ALL: [Build; 7] = [
        Build::NvFull,
        Build::NvLarge,
        Build::NvMedium1024Full,
        Build::NvMedium512,
        Build::NvSmall,
        Build::NvSmall256,
        Build::NvSmall256Full,
    ];

    /// The build's parameters.
    pub const fn hw(self) -> &'static Config {
        match self {
            Build::NvFull => &NV_FULL,
            Build::NvLarge => &NV_LARGE,
            Build::NvMedium1024Full => &NV_MEDIUM_1024_FULL,
            Build::NvMedium512 => &NV_MEDIUM_512,
            Build::NvSmall => &NV_SMALL,
            Build::NvSmall256 => &NV_SMALL_256,
            Build::NvSmall256Full => &NV_SMALL_256_FULL,
        }
    }

    /// The name used on command lines and in trace paths (`nv_full`, ...).
    pub const fn name(self) -> &'static str {
        self.hw().name
    }

    /// The published build with exactly these parameters.
    pub fn of(config: &Config) -> Option<Build> {
        Build::ALL.into_iter().find(|b| b.hw() == config)
    }
}

impl fmt::Display for Build {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl core::str::FromStr for Build {
    type Err = SelectError;
    /// A compiled-in build by name, upstream's `opendla-*` aliases included
    /// ([`Config::select`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Config::select(s).and_then(|c| Build::of(c).ok_or(SelectError::Unknown))
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1024;

    #[test]
    fn seven_builds_with_unique_names() {
        if NARROWED {
            return; // see narrowed_table
        }
        let names: [&str; 7] = [
            "nv_full",
            "nv_large",
            "nv_medium_1024_full",
            "nv_medium_512",
            "nv_small",
            "nv_small_256",
            "nv_small_256_full",
        ];
        assert_eq!(ALL.len(), names.len());
        for (c, n) in ALL.iter().zip(names) {
            assert_eq!(c.name, n);
            assert_eq!(Config::by_name(n), Some(c));
        }
        assert!(Config::names().eq(names));
    }

    #[test]
    fn the_default_build_compiles_all_seven() {
        if NARROWED {
            return; // see narrowed_table
        }
        assert_eq!(ALL, PUBLISHED);
        assert!(FEATURES.iter().map(|f| f.0).eq(Config::names()));
        assert_eq!(Config::select("nv_huge"), Err(SelectError::Unknown));
        assert!(NV_SMALL.is_compiled());
        let f = COMPILED_FEATURES;
        assert!(f.bdma && f.rubik && f.sdp_lut && f.winograd && f.fp16 && f.cvif);
        assert!(generation_compiled(Generation::V1) && generation_compiled(Generation::V2));
    }

    /// `cargo test -p nvdla-hw --features nv_small` (or any other narrowing).
    #[test]
    fn narrowed_table() {
        if !NARROWED {
            return;
        }
        assert!(!ALL.is_empty() && ALL.len() < PUBLISHED.len());
        for c in PUBLISHED {
            let on = FEATURES.iter().any(|f| f.1 && f.0 == c.name);
            assert_eq!(ALL.contains(c), on, "{c}");
            assert_eq!(c.is_compiled(), on, "{c}");
            match Config::select(c.name) {
                Ok(s) => assert!(on && s == c),
                Err(e) => assert!(!on && e == SelectError::NotCompiled { name: c.name }),
            }
        }
        let u = COMPILED_FEATURES;
        assert_eq!(u.bdma, ALL.iter().any(|c| c.features.bdma));
        assert_eq!(u.sdp_lut, ALL.iter().any(|c| c.features.sdp_lut));
        for g in [Generation::V1, Generation::V2] {
            assert_eq!(
                generation_compiled(g),
                ALL.iter().any(|c| c.generation == g)
            );
        }
    }

    #[test]
    fn builds_by_name() {
        assert!(Build::ALL.iter().map(|b| b.hw()).eq(PUBLISHED.iter()));
        for b in Build::ALL {
            assert_eq!(Build::of(b.hw()), Some(b));
            let parsed: Result<Build, _> = b.name().parse();
            assert_eq!(parsed.is_ok(), b.hw().is_compiled(), "{b}");
        }
        assert_eq!("nv_huge".parse::<Build>(), Err(SelectError::Unknown));
        if !NARROWED {
            assert_eq!("opendla-small".parse::<Build>(), Ok(Build::NvSmall));
        }
    }

    #[test]
    fn aliases() {
        if NARROWED {
            return; // see narrowed_table
        }
        assert_eq!(Config::by_name("opendla-full"), Some(&NV_FULL));
        assert_eq!(Config::by_name("opendla-large"), Some(&NV_LARGE));
        assert_eq!(Config::by_name("opendla-small"), Some(&NV_SMALL));
        assert_eq!(Config::by_name("nv_huge"), None);
        assert_eq!(Config::by_name(""), None);
    }

    #[test]
    fn key_values() {
        // nv_full: 16 banks x 64 B x 512 = 512 KiB, 64x32 MACs, 32-byte atoms, everything.
        assert_eq!(NV_FULL.generation, Generation::V1);
        assert_eq!((NV_FULL.atomic_c, NV_FULL.atomic_k), (64, 32));
        assert_eq!(NV_FULL.memory_atomic, 32);
        assert_eq!(NV_FULL.cbuf_bytes(), 512 * KIB);
        assert!(NV_FULL.precisions().eq(Precision::ALL));
        let f = NV_FULL.features;
        assert!(f.bdma && f.rubik && f.winograd && f.weight_compression && f.batch && f.cvif);
        assert_eq!(NV_FULL.mem_address_width, 64);
        assert_eq!(NV_FULL.max_batch_size, 32);

        // nv_small: 8x8 MACs, 8-byte atoms, 32 banks x 8 B x 512 = 128 KiB, 32-bit address.
        assert_eq!(NV_SMALL.generation, Generation::V2);
        assert_eq!((NV_SMALL.atomic_c, NV_SMALL.atomic_k), (8, 8));
        assert_eq!(NV_SMALL.memory_atomic, 8);
        assert_eq!(NV_SMALL.cbuf_bytes(), 128 * KIB);
        assert_eq!(NV_SMALL.mem_address_width, 32);
        let f = NV_SMALL.features;
        assert!(!f.bdma && !f.rubik && !f.cvif && !f.sdp_lut && !f.sdp_ew);
        assert_eq!(NV_SMALL.throughput.sdp_ew, 0);
        assert_eq!(NV_SMALL.memif.secondary_width, 0);

        // nv_large: nv_full's geometry as a v2 build without BDMA, RUBIK, Winograd.
        assert_eq!(NV_LARGE.cbuf_bytes(), 512 * KIB);
        assert_eq!((NV_LARGE.atomic_c, NV_LARGE.atomic_k), (64, 32));
        assert_eq!(
            (NV_LARGE.features.bdma, NV_LARGE.features.cvif),
            (false, true)
        );

        // nv_small_256: 32x8 MACs, 32 banks x 32 B x 128 = 128 KiB.
        assert_eq!((NV_SMALL_256.atomic_c, NV_SMALL_256.atomic_k), (32, 8));
        assert_eq!(NV_SMALL_256.cbuf_bytes(), 128 * KIB);
        let f = NV_SMALL_256_FULL.features;
        assert_eq!((f.sdp_lut, f.sdp_ew, f.cvif), (true, true, true));

        // nv_medium_512 / nv_medium_1024_full: 32 banks x 32 B x 512 = 512 KiB.
        assert_eq!((NV_MEDIUM_512.atomic_c, NV_MEDIUM_512.atomic_k), (32, 16));
        assert_eq!(NV_MEDIUM_512.memory_atomic, 16);
        assert_eq!(NV_MEDIUM_512.cbuf_bytes(), 512 * KIB);
        assert_eq!(
            (NV_MEDIUM_1024_FULL.atomic_c, NV_MEDIUM_1024_FULL.atomic_k),
            (32, 32)
        );
        assert_eq!(NV_MEDIUM_1024_FULL.cbuf_bytes(), 512 * KIB);
    }

    #[test]
    fn v2_builds_are_int8_only_as_specified() {
        for c in ALL.iter().filter(|c| c.generation == Generation::V2) {
            assert!(c.precisions().eq([Precision::Int8]), "{c}");
            assert!(
                !c.features.bdma && !c.features.rubik && !c.features.winograd,
                "{c}"
            );
        }
    }

    #[test]
    fn consistent() {
        for c in ALL {
            let t = c.throughput;
            let f = c.features;
            assert_eq!(t.sdp_bs != 0, f.sdp_bs, "{c}");
            assert_eq!(t.sdp_bn != 0, f.sdp_bn, "{c}");
            assert_eq!(t.sdp_ew != 0, f.sdp_ew, "{c}");
            assert_eq!(c.memif.secondary_width != 0, f.cvif, "{c}");
            assert!(f.int8, "{c}");
            for v in [c.atomic_c, c.atomic_k, c.memory_atomic, c.cbuf_banks] {
                assert!(v.is_power_of_two(), "{c}");
            }
            assert!(c.atomic_c >= c.atomic_k, "{c}");
            assert!(matches!(c.mem_address_width, 32 | 64), "{c}");
        }
    }
}
