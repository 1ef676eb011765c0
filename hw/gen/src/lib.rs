//! `nvdla-hw-gen`: generates `nvdla-hw`'s configuration table (`hw/src/config/generated.rs`)
//! from NVIDIA's project specifications in `nvdla/hw`.
//!
//! - [`spec`] evaluates a build's `spec/defs/<build>.spec` with its `projects.spec`;
//! - [`config_from_spec`] turns the evaluated parameters into an [`nvdla_hw::Config`];
//! - [`render`] writes the table and its provenance ([`nvdla_hw::Source`]) as Rust;
//! - [`regmap`] parses the register manuals (v1 `cmod/include/arnvdla.h`, v2
//!   `spec/manual/NVDLA_*.rdl`) and renders `nvdla-hw`'s register map (`hw/src/regs/`).
//!
//! The binary (`src/main.rs`) reads the specs from a git clone of `nvdla/hw` (bare or
//! not): `nv_full` from branch `nvdlav1`, every other build from `master`.

pub mod regmap;
pub mod spec;

use nvdla_hw::{Config, Features, Generation, MemIf, Source, Throughput};
use spec::Spec;

/// Repository the specs come from.
pub const REPOSITORY: &str = "https://github.com/nvdla/hw";

/// Where the generated table lives, relative to the workspace root.
pub const OUTPUT: &str = "hw/src/config/generated.rs";

/// Builds the configuration `name` of generation `generation` from its evaluated spec.
///
/// Every value comes from a `%define` of the spec except where the v1 spec
/// (`nvdlav1:spec/defs/projects.spec`) has no parameter at all; there the v1 design's own
/// fixed choice is used, as documented in the generated file:
/// - feature data types: nvdlav1's project specs have no `FEATURE_DATA_TYPE_*` knob; the
///   branch is the "full-precision" NVDLA (its README: 2048 8-bit MACs or 1024 16-bit
///   fixed- or floating-point MACs), i.e. int8, int16 and fp16;
/// - memory address width: no `MEM_ADDRESS_WIDTH_*` knob; v1's address registers are
///   64-bit (`*_ADDR_HIGH`/`*_ADDR_LOW` pairs).
///
/// A v2 spec without these is an error.
pub fn config_from_spec(name: &str, generation: Generation, s: &Spec) -> Result<Config, String> {
    let num = |p: &str| -> Result<u32, String> {
        s.number(p)?
            .ok_or_else(|| format!("{name}: parameter {p} is not defined"))
    };
    let opt = |p: &str| -> Result<u32, String> { Ok(s.number(p)?.unwrap_or(0)) };
    let flag = |p: &str| s.flag(p);

    let ty = |t: &str| {
        (
            flag(&format!("NVDLA_FEATURE_DATA_TYPE_{t}")),
            flag(&format!("NVDLA_WEIGHT_DATA_TYPE_{t}")),
        )
    };
    let (int8, int16, fp16) = (ty("INT8"), ty("INT16"), ty("FP16"));
    let (int8, int16, fp16) = if !(int8.0 || int16.0 || fp16.0) {
        if generation != Generation::V1 {
            return Err(format!("{name}: no NVDLA_FEATURE_DATA_TYPE_* parameter"));
        }
        (true, true, true)
    } else {
        for (t, (feature, weight)) in [("INT8", int8), ("INT16", int16), ("FP16", fp16)] {
            if feature != weight {
                return Err(format!(
                    "{name}: feature and weight data types differ in {t}"
                ));
            }
        }
        (int8.0, int16.0, fp16.0)
    };
    let mem_address_width = match (s.number("NVDLA_MEM_ADDRESS_WIDTH")?, generation) {
        (Some(w), _) => w,
        (None, Generation::V1) => 64,
        (None, Generation::V2) => {
            return Err(format!("{name}: NVDLA_MEM_ADDRESS_WIDTH is not defined"))
        }
    };

    let features = Features {
        bdma: flag("NVDLA_BDMA_ENABLE"),
        rubik: flag("NVDLA_RUBIK_ENABLE"),
        cdp: flag("NVDLA_CDP_ENABLE"),
        pdp: flag("NVDLA_PDP_ENABLE"),
        sdp_lut: flag("NVDLA_SDP_LUT_ENABLE"),
        sdp_bs: flag("NVDLA_SDP_BS_ENABLE"),
        sdp_bn: flag("NVDLA_SDP_BN_ENABLE"),
        sdp_ew: flag("NVDLA_SDP_EW_ENABLE"),
        cvif: flag("NVDLA_SECONDARY_MEMIF_ENABLE"),
        int8,
        int16,
        fp16,
        winograd: flag("NVDLA_WINOGRAD_ENABLE"),
        weight_compression: flag("NVDLA_WEIGHT_COMPRESSION_ENABLE"),
        batch: flag("NVDLA_BATCH_ENABLE"),
    };
    // master's projects.spec sets an absent SDP unit's throughput to 0 itself; v1's sets
    // them regardless (every unit is present) and leaves EW's undefined for `_x`.
    let unit =
        |present: bool, p: &str| -> Result<u32, String> { Ok(if present { opt(p)? } else { 0 }) };
    let throughput = Throughput {
        sdp_bs: unit(features.sdp_bs, "NVDLA_SDP_BS_THROUGHPUT")?,
        sdp_bn: unit(features.sdp_bn, "NVDLA_SDP_BN_THROUGHPUT")?,
        sdp_ew: unit(features.sdp_ew, "NVDLA_SDP_EW_THROUGHPUT")?,
        pdp: unit(features.pdp, "NVDLA_PDP_THROUGHPUT")?,
        cdp: unit(features.cdp, "NVDLA_CDP_THROUGHPUT")?,
    };
    let memif = MemIf {
        primary_width: num("NVDLA_PRIMARY_MEMIF_WIDTH")?,
        primary_latency: num("NVDLA_PRIMARY_MEMIF_LATENCY")?,
        primary_max_burst: num("NVDLA_PRIMARY_MEMIF_MAX_BURST_LENGTH")?,
        secondary_width: unit(features.cvif, "NVDLA_SECONDARY_MEMIF_WIDTH")?,
        // master's projects.spec defines the 256- and 64-cycle latencies without the
        // NVDLA_ prefix (`%define SECONDARY_MEMIF_LATENCY 64`); both names mean the same.
        secondary_latency: match features.cvif {
            false => 0,
            true => match s.number("NVDLA_SECONDARY_MEMIF_LATENCY")? {
                Some(v) => v,
                None => opt("SECONDARY_MEMIF_LATENCY")?,
            },
        },
        secondary_max_burst: unit(features.cvif, "NVDLA_SECONDARY_MEMIF_MAX_BURST_LENGTH")?,
    };
    let c = Config {
        name: Box::leak(name.to_string().into_boxed_str()),
        generation,
        atomic_c: num("NVDLA_MAC_ATOMIC_C_SIZE")?,
        atomic_k: num("NVDLA_MAC_ATOMIC_K_SIZE")?,
        memory_atomic: num("NVDLA_MEMORY_ATOMIC_SIZE")?,
        cbuf_banks: num("NVDLA_CBUF_BANK_NUMBER")?,
        cbuf_bank_width: num("NVDLA_CBUF_BANK_WIDTH")?,
        cbuf_bank_depth: num("NVDLA_CBUF_BANK_DEPTH")?,
        mem_address_width,
        max_batch_size: opt("NVDLA_MAX_BATCH_SIZE")?,
        features,
        throughput,
        memif,
    };
    for (what, v) in [
        ("secondary memory interface width", c.memif.secondary_width),
        (
            "secondary memory interface latency",
            c.memif.secondary_latency,
        ),
        (
            "secondary memory interface burst",
            c.memif.secondary_max_burst,
        ),
    ] {
        if c.features.cvif && v == 0 {
            return Err(format!(
                "{name}: secondary memory interface without a {what}"
            ));
        }
    }
    Ok(c)
}

/// The Rust constant name of build `name` (`nv_small_256` → `NV_SMALL_256`).
pub fn const_name(name: &str) -> String {
    name.to_ascii_uppercase()
}

/// Writes the generated file: a header naming `sources` and the command `command` that
/// regenerates it, [`nvdla_hw::SOURCES`], one constant per configuration and `ALL`.
///
/// `builds` pairs each configuration with the index in `sources` of the source it was
/// read from. The output depends on nothing else (not on the path of the clone), so
/// regenerating from the same commits gives the same bytes.
pub fn render(sources: &[Source], builds: &[(usize, Config)], command: &str) -> String {
    let mut o = String::new();
    let mut line = |s: &str| {
        o.push_str(s);
        o.push('\n');
    };
    line("// @generated by nvdla-hw-gen (hw/gen). Do not edit: regenerate.");
    line("//");
    line(&format!("// Sources, from {REPOSITORY}:"));
    for s in sources {
        line(&format!("// - branch {}, commit {}:", s.branch, s.commit));
        for f in s.files {
            line(&format!("//   {f}"));
        }
    }
    line("//");
    line("// Regenerate from the workspace root, with a clone of nvdla/hw that has both");
    line("// branches (e.g. `git clone --mirror https://github.com/nvdla/hw nvdla-hw.git`):");
    line("//");
    line(&format!("//     {command}"));
    line("//");
    line("// The v1 spec has no data-type and no address-width parameters: nv_full gets the");
    line("// v1 design's int8 + int16 + fp16 (\"full precision\") and 64-bit addresses.");
    line("");
    line("use super::{Config, Features, Generation, MemIf, Source, Throughput};");
    line("");
    line("/// The files the constants below were generated from.");
    line("pub const SOURCES: &[Source] = &[");
    for s in sources {
        line("    Source {");
        line(&format!("        repository: {:?},", s.repository));
        line(&format!("        branch: {:?},", s.branch));
        line(&format!("        commit: {:?},", s.commit));
        line("        files: &[");
        for f in s.files {
            line(&format!("            {f:?},"));
        }
        line("        ],");
        line("    },");
    }
    line("];");
    for (src, c) in builds {
        let s = &sources[*src];
        let file = s
            .files
            .iter()
            .find(|f| f.ends_with(&format!("/{}.spec", c.name)))
            .copied()
            .unwrap_or("?");
        line("");
        line(&format!("/// `{}`: `{}:{file}`.", c.name, s.branch));
        line(&format!(
            "pub const {}: Config = Config {{",
            const_name(c.name)
        ));
        line(&format!("    name: {:?},", c.name));
        line(&format!("    generation: Generation::{:?},", c.generation));
        for (k, v) in [
            ("atomic_c", c.atomic_c),
            ("atomic_k", c.atomic_k),
            ("memory_atomic", c.memory_atomic),
            ("cbuf_banks", c.cbuf_banks),
            ("cbuf_bank_width", c.cbuf_bank_width),
            ("cbuf_bank_depth", c.cbuf_bank_depth),
            ("mem_address_width", c.mem_address_width),
            ("max_batch_size", c.max_batch_size),
        ] {
            line(&format!("    {k}: {v},"));
        }
        let f = c.features;
        line("    features: Features {");
        for (k, v) in [
            ("bdma", f.bdma),
            ("rubik", f.rubik),
            ("cdp", f.cdp),
            ("pdp", f.pdp),
            ("sdp_lut", f.sdp_lut),
            ("sdp_bs", f.sdp_bs),
            ("sdp_bn", f.sdp_bn),
            ("sdp_ew", f.sdp_ew),
            ("cvif", f.cvif),
            ("int8", f.int8),
            ("int16", f.int16),
            ("fp16", f.fp16),
            ("winograd", f.winograd),
            ("weight_compression", f.weight_compression),
            ("batch", f.batch),
        ] {
            line(&format!("        {k}: {v},"));
        }
        line("    },");
        let t = c.throughput;
        line("    throughput: Throughput {");
        for (k, v) in [
            ("sdp_bs", t.sdp_bs),
            ("sdp_bn", t.sdp_bn),
            ("sdp_ew", t.sdp_ew),
            ("pdp", t.pdp),
            ("cdp", t.cdp),
        ] {
            line(&format!("        {k}: {v},"));
        }
        line("    },");
        let m = c.memif;
        line("    memif: MemIf {");
        for (k, v) in [
            ("primary_width", m.primary_width),
            ("primary_latency", m.primary_latency),
            ("primary_max_burst", m.primary_max_burst),
            ("secondary_width", m.secondary_width),
            ("secondary_latency", m.secondary_latency),
            ("secondary_max_burst", m.secondary_max_burst),
        ] {
            line(&format!("        {k}: {v},"));
        }
        line("    },");
        line("};");
    }
    line("");
    line("/// Every build: nv_full (v1), then the v2 builds by name.");
    let names: Vec<String> = builds.iter().map(|(_, c)| const_name(c.name)).collect();
    let one_line = format!("pub const ALL: &[Config] = &[{}];", names.join(", "));
    // rustfmt's layout: one line when it fits in 100 columns, else one name per line.
    if one_line.len() <= 100 {
        line(&one_line);
    } else {
        line("pub const ALL: &[Config] = &[");
        for n in &names {
            line(&format!("    {n},"));
        }
        line("];");
    }
    o
}

/// The command line that regenerates the file from a clone at `CLONE`, for the header.
pub fn command(v1_ref: &str, v2_ref: &str) -> String {
    let mut c = String::from("cargo run -p nvdla-hw-gen --");
    if v1_ref != DEFAULT_V1_REF {
        c.push_str(&format!(" --v1-ref {v1_ref}"));
    }
    if v2_ref != DEFAULT_V2_REF {
        c.push_str(&format!(" --v2-ref {v2_ref}"));
    }
    c.push_str(" nvdla-hw.git");
    c
}

/// Branch of `nvdla/hw` with the v1 (nv_full) spec.
pub const DEFAULT_V1_REF: &str = "nvdlav1";
/// Branch of `nvdla/hw` with the v2 specs.
pub const DEFAULT_V2_REF: &str = "master";

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed table is exactly what [`render`] writes for the committed values:
    /// nobody edited it by hand, and rendering is a pure function of the table.
    #[test]
    fn committed_table_is_reproducible() {
        let committed = include_str!("../../src/config/generated.rs");
        let builds: Vec<(usize, Config)> = nvdla_hw::ALL
            .iter()
            .map(|c| {
                let src = nvdla_hw::SOURCES
                    .iter()
                    .position(|s| {
                        s.files
                            .iter()
                            .any(|f| f.ends_with(&format!("/{}.spec", c.name)))
                    })
                    .expect("every build names its source");
                (src, *c)
            })
            .collect();
        let cmd = committed
            .lines()
            .find_map(|l| l.strip_prefix("//     "))
            .expect("the header names the command");
        assert!(cmd.starts_with("cargo run -p nvdla-hw-gen --"));
        let again = render(nvdla_hw::SOURCES, &builds, cmd);
        assert!(again == committed, "hw/src/config/generated.rs differs from what nvdla-hw-gen renders for its values; regenerate it");
        assert_eq!(render(nvdla_hw::SOURCES, &builds, cmd), again);
    }

    const PROJECTS_V2: &str = "\
#if defined(FEATURE_DATA_TYPE_INT8)
    %define NVDLA_FEATURE_DATA_TYPE_INT8
#else
    #error \"int8\"
#endif
#if defined(WEIGHT_DATA_TYPE_INT8)
    %define NVDLA_WEIGHT_DATA_TYPE_INT8
#endif
#if defined(SECONDARY_MEMIF_ENABLE)
    %define NVDLA_SECONDARY_MEMIF_ENABLE
#endif
#if defined(SDP_BS_ENABLE)
    %define NVDLA_SDP_BS_ENABLE
 #if defined(SDP_BS_THROUGHPUT_2)
     %define NVDLA_SDP_BS_THROUGHPUT 2
 #endif
#else
     %define NVDLA_SDP_BS_THROUGHPUT 0
#endif
#if defined(PDP_ENABLE)
    %define NVDLA_PDP_ENABLE
#endif
%define NVDLA_PDP_THROUGHPUT 1
%define NVDLA_MAC_ATOMIC_C_SIZE 32
%define NVDLA_MAC_ATOMIC_K_SIZE 8
%define NVDLA_MEMORY_ATOMIC_SIZE 8
%define NVDLA_CBUF_BANK_NUMBER 32
%define NVDLA_CBUF_BANK_WIDTH 32
%define NVDLA_CBUF_BANK_DEPTH 128
%define NVDLA_PRIMARY_MEMIF_WIDTH 64
%define NVDLA_PRIMARY_MEMIF_LATENCY 64
%define NVDLA_PRIMARY_MEMIF_MAX_BURST_LENGTH 4
#if defined(SECONDARY_MEMIF_LATENCY_64)
    %define SECONDARY_MEMIF_LATENCY   64
#endif
%define NVDLA_SECONDARY_MEMIF_WIDTH 64
%define NVDLA_SECONDARY_MEMIF_MAX_BURST_LENGTH 4
#if defined(MEM_ADDRESS_WIDTH_32)
    %define NVDLA_MEM_ADDRESS_WIDTH 32
#endif
";

    fn v2(knobs: &str) -> Result<Config, String> {
        let s = spec::evaluate(
            "x.spec",
            &format!("{knobs}\n#include \"projects.spec\"\n"),
            &[("projects.spec", PROJECTS_V2)],
        )
        .map_err(|e| e.to_string())?;
        config_from_spec("x", Generation::V2, &s)
    }

    #[test]
    fn config_from_a_small_spec() {
        let c = v2(
            "#define FEATURE_DATA_TYPE_INT8\n#define WEIGHT_DATA_TYPE_INT8\n\
                    #define SDP_BS_ENABLE\n#define SDP_BS_THROUGHPUT_2\n#define PDP_ENABLE\n\
                    #define SECONDARY_MEMIF_ENABLE\n#define SECONDARY_MEMIF_LATENCY_64\n\
                    #define MEM_ADDRESS_WIDTH_32",
        )
        .unwrap();
        assert_eq!(c.name, "x");
        assert_eq!((c.atomic_c, c.atomic_k, c.memory_atomic), (32, 8, 8));
        assert_eq!(c.cbuf_bytes(), 128 * 1024);
        assert_eq!(c.mem_address_width, 32);
        assert_eq!(c.max_batch_size, 0);
        assert!(c.features.int8 && !c.features.int16 && !c.features.fp16);
        assert!(c.features.sdp_bs && !c.features.sdp_bn && !c.features.cdp);
        assert!(c.features.pdp && c.features.cvif);
        assert_eq!(c.throughput.sdp_bs, 2);
        assert_eq!(c.throughput.pdp, 1);
        assert_eq!(c.throughput.cdp, 0);
        assert_eq!(c.memif.secondary_latency, 64);
        assert_eq!(c.memif.secondary_width, 64);
    }

    #[test]
    fn v2_without_types_or_address_width_is_refused() {
        // #error reached.
        assert!(v2("#define MEM_ADDRESS_WIDTH_32").is_err());
        // Feature type without the matching weight type.
        let e = v2("#define FEATURE_DATA_TYPE_INT8\n#define MEM_ADDRESS_WIDTH_32").unwrap_err();
        assert!(e.contains("differ in INT8"), "{e}");
        let e = v2("#define FEATURE_DATA_TYPE_INT8\n#define WEIGHT_DATA_TYPE_INT8").unwrap_err();
        assert!(e.contains("NVDLA_MEM_ADDRESS_WIDTH"), "{e}");
        // A secondary interface needs its latency.
        let e = v2(
            "#define FEATURE_DATA_TYPE_INT8\n#define WEIGHT_DATA_TYPE_INT8\n\
                    #define MEM_ADDRESS_WIDTH_32\n#define SECONDARY_MEMIF_ENABLE",
        )
        .unwrap_err();
        assert!(e.contains("latency"), "{e}");
    }

    #[test]
    fn v1_defaults_only_where_the_spec_is_silent() {
        let s = spec::evaluate(
            "v1.spec",
            "%define NVDLA_MAC_ATOMIC_C_SIZE 64\n%define NVDLA_MAC_ATOMIC_K_SIZE 32\n\
             %define NVDLA_MEMORY_ATOMIC_SIZE 32\n%define NVDLA_CBUF_BANK_NUMBER 16\n\
             %define NVDLA_CBUF_BANK_WIDTH 64\n%define NVDLA_CBUF_BANK_DEPTH 512\n\
             %define NVDLA_PRIMARY_MEMIF_WIDTH 512\n%define NVDLA_PRIMARY_MEMIF_LATENCY 1200\n\
             %define NVDLA_PRIMARY_MEMIF_MAX_BURST_LENGTH 1\n%define NVDLA_MAX_BATCH_SIZE 32\n",
            &[],
        )
        .unwrap();
        let c = config_from_spec("v1", Generation::V1, &s).unwrap();
        assert!(c.features.int8 && c.features.int16 && c.features.fp16);
        assert_eq!(c.mem_address_width, 64);
        assert_eq!(c.max_batch_size, 32);
        assert!(config_from_spec("v2", Generation::V2, &s).is_err());
    }

    #[test]
    fn render_names_its_sources_and_command() {
        let c = nvdla_hw::NV_SMALL;
        let src = [Source {
            repository: REPOSITORY,
            branch: "master",
            commit: "0123456789abcdef0123456789abcdef01234567",
            files: &["spec/defs/projects.spec", "spec/defs/nv_small.spec"],
        }];
        let out = render(&src, &[(0, c)], &command("nvdlav1", "master"));
        assert!(out.starts_with("// @generated by nvdla-hw-gen"));
        assert!(
            out.contains("// - branch master, commit 0123456789abcdef0123456789abcdef01234567:")
        );
        assert!(out.contains("//     cargo run -p nvdla-hw-gen -- nvdla-hw.git\n"));
        assert!(out.contains("/// `nv_small`: `master:spec/defs/nv_small.spec`."));
        assert!(out.contains("pub const NV_SMALL: Config = Config {\n    name: \"nv_small\",\n"));
        assert!(out.ends_with("pub const ALL: &[Config] = &[NV_SMALL];\n"));
        assert_eq!(
            command("a", "b"),
            "cargo run -p nvdla-hw-gen -- --v1-ref a --v2-ref b nvdla-hw.git"
        );
    }
}
