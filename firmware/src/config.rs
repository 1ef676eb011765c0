//! The hardware configuration: which NVDLA build the firmware drives.
//!
//! NVDLA is a family of configurable designs. The register map depends only on the
//! generation ([`HwVersion`]); the rest — which engines are present, the memory atom size,
//! the optional features — comes from the build's parameters in [`nvdla_hw`], the one
//! description of every published build, chosen once at run time when the driver probes
//! the device (the `compatible` string of upstream's device tree: `nvidia,nv_full`
//! (`nvdla_os_initial`), `nvidia,nv_small`, `nvidia,nv_large`, ...).
//!
//! The firmware refuses an operation that needs a missing feature with
//! [`Error::FeatureAbsent`](crate::Error::FeatureAbsent) rather than programming registers
//! that do not exist.

pub use crate::regs::HwVersion;

/// An optional hardware feature that an operation may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Feature {
    /// The bridge DMA engine.
    Bdma,
    /// The Rubik reshape engine.
    Rubik,
    /// Compressed weights (WMB/WGS side data).
    WeightCompression,
    /// The second memory interface (CV-SRAM).
    Cvsram,
    /// The SDP lookup table.
    SdpLut,
    /// The SDP element-wise (Y) stage.
    SdpEw,
    /// Winograd convolution.
    Winograd,
    /// 16-bit integer and fp16 data (int8-only builds lack them).
    WidePrecision,
}

/// The build the firmware drives: its parameters, and whether int16/fp16 are accepted on
/// a build whose silicon is int8-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HwConfig {
    /// The build's parameters (a copy: reading them through a reference costs the
    /// scheduler about 1.4 KB of code on thumbv7em, the copy about 100 B of RAM).
    pub build: nvdla_hw::Config,
    /// Accept int16 and fp16 data even when the build is int8-only. Silicon of such a
    /// build has no wide datapath, so this is `false` for real hardware; a hardware model
    /// that computes every precision in every build (NVIDIA's C model, and `nvdla-vp`
    /// which follows it) sets it so that networks compiled for it run.
    pub model_wide_precision: bool,
}

impl HwConfig {
    /// The firmware for silicon of `build`.
    pub const fn new(build: &nvdla_hw::Config) -> Self {
        HwConfig {
            build: *build,
            model_wide_precision: false,
        }
    }

    /// The firmware for silicon of the build called `name` (`nv_full`, `nv_small`, ...,
    /// or upstream's `opendla-*` aliases), if it is compiled in.
    pub fn by_name(name: &str) -> Option<HwConfig> {
        nvdla_hw::Config::by_name(name).map(HwConfig::new)
    }

    /// As [`HwConfig::by_name`], saying why not: an unknown name, or a build this firmware
    /// was compiled without (its Cargo features `nv_full`, `nv_small`, ... narrow it).
    pub fn select(name: &str) -> Result<HwConfig, nvdla_hw::SelectError> {
        nvdla_hw::Config::select(name).map(HwConfig::new)
    }

    /// Whether this firmware was compiled for the build (always, without narrowing
    /// features); [`Engine::execute_task`](crate::Engine::execute_task) refuses any other
    /// with [`Error::ConfigNotCompiled`](crate::Error::ConfigNotCompiled).
    pub fn is_compiled(&self) -> bool {
        // As `nvdla_hw::Config::is_compiled`, comparing the names byte by byte: a short
        // loop rather than a call to `memcmp`, the only one in the firmware.
        let same =
            |a: &str, b: &str| a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y);
        !nvdla_hw::NARROWED || nvdla_hw::ALL.iter().any(|c| same(c.name, self.build.name))
    }

    /// The parameters the scheduler reads: the one compiled-in build when the firmware is
    /// narrowed to one (constants, so the compiler folds every test of them), else
    /// [`HwConfig::build`]. The engine refuses a build that is not compiled in before
    /// reading any of them.
    const fn params(&self) -> &nvdla_hw::Config {
        match nvdla_hw::ALL {
            [only] => only,
            _ => &self.build,
        }
    }

    /// Name of the build (`nv_full`, `nv_small`, ...).
    pub const fn name(&self) -> &'static str {
        self.build.name
    }

    /// Register map generation.
    pub const fn version(&self) -> HwVersion {
        match HwConfig::ONLY_VERSION {
            Some(v) => v,
            None => self.params().generation,
        }
    }

    /// The register-map generation of every compiled-in build, if they share one.
    pub const ONLY_VERSION: Option<HwVersion> = match (
        nvdla_hw::generation_compiled(HwVersion::V1),
        nvdla_hw::generation_compiled(HwVersion::V2),
    ) {
        (true, false) => Some(HwVersion::V1),
        (false, true) => Some(HwVersion::V2),
        _ => None,
    };

    /// Smallest memory access in bytes (`MEMORY_ATOMIC_SIZE`); surfaces are aligned to it.
    pub const fn atom_size(&self) -> u32 {
        self.params().memory_atomic
    }

    /// Whether this build has `feature` (never, for a feature no compiled-in build has).
    pub const fn has(&self, feature: Feature) -> bool {
        let f = &self.params().features;
        let any = &nvdla_hw::COMPILED_FEATURES;
        match feature {
            Feature::Bdma => any.bdma && f.bdma,
            Feature::Rubik => any.rubik && f.rubik,
            Feature::WeightCompression => any.weight_compression && f.weight_compression,
            Feature::Cvsram => any.cvif && f.cvif,
            Feature::SdpLut => any.sdp_lut && f.sdp_lut,
            Feature::SdpEw => any.sdp_ew && f.sdp_ew,
            Feature::Winograd => any.winograd && f.winograd,
            Feature::WidePrecision => (f.int16 && f.fp16) || self.model_wide_precision,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_compiled_out_is_a_typed_error() {
        use crate::hw::{DeviceAddr, Hw, Region};
        use crate::{Engine, Error, HwError};
        /// Refuses every access: the engine must refuse before it makes any.
        struct Nothing;
        impl Hw for Nothing {
            fn reg_read(&mut self, offset: u32) -> Result<u32, HwError> {
                Err(HwError::NoSuchRegister { offset })
            }
            fn reg_write(&mut self, offset: u32, _: u32) -> Result<(), HwError> {
                Err(HwError::NoSuchRegister { offset })
            }
            fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError> {
                let len = buf.len();
                Err(HwError::MemoryFault { addr, len })
            }
            fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError> {
                let len = data.len();
                Err(HwError::MemoryFault { addr, len })
            }
            fn address(&self, index: u16) -> Result<Region, HwError> {
                Err(HwError::AddressIndex { index, count: 0 })
            }
        }
        let no_network = Err(Error::Hw(HwError::AddressIndex { index: 0, count: 0 }));
        for c in nvdla_hw::PUBLISHED {
            let cfg = HwConfig::new(c);
            let r = Engine::<8>::new(cfg).execute_task(&mut Nothing);
            if c.is_compiled() {
                assert_eq!(HwConfig::select(c.name), Ok(cfg));
                assert_eq!(r, no_network, "{}", c.name);
            } else {
                let name = c.name;
                let not_compiled = nvdla_hw::SelectError::NotCompiled { name };
                assert_eq!(HwConfig::select(name), Err(not_compiled));
                assert_eq!(r, Err(Error::ConfigNotCompiled { name }));
            }
        }
    }

    #[test]
    fn features_follow_the_build() {
        if nvdla_hw::NARROWED {
            return; // a_build_compiled_out_is_a_typed_error
        }
        let full = HwConfig::new(&nvdla_hw::NV_FULL);
        assert_eq!(full.version(), HwVersion::V1);
        assert_eq!(full.atom_size(), 32);
        for f in [
            Feature::Bdma,
            Feature::Rubik,
            Feature::WeightCompression,
            Feature::Cvsram,
            Feature::SdpLut,
            Feature::SdpEw,
            Feature::Winograd,
            Feature::WidePrecision,
        ] {
            assert!(full.has(f), "{f:?}");
        }
        let small = HwConfig::by_name("nv_small").unwrap();
        assert_eq!((small.version(), small.atom_size()), (HwVersion::V2, 8));
        assert!(!small.has(Feature::Bdma) && !small.has(Feature::Cvsram));
        assert!(!small.has(Feature::WidePrecision));
        let large = HwConfig::by_name("opendla-large").unwrap();
        assert_eq!(large.name(), "nv_large");
        assert!(large.has(Feature::Cvsram) && !large.has(Feature::WidePrecision));
        let model = HwConfig {
            model_wide_precision: true,
            ..large
        };
        assert!(model.has(Feature::WidePrecision) && !model.has(Feature::Rubik));
        for c in nvdla_hw::ALL {
            assert_eq!(HwConfig::by_name(c.name).map(|h| h.build), Some(*c));
        }
        assert!(HwConfig::by_name("nv_huge").is_none());
    }
}
