//! The firmware and the hardware model carry two register maps generated from different
//! NVIDIA sources: the firmware's from `nvdla/sw`'s `opendla_initial.h` / `opendla_small.h`
//! (`firmware/src/regs/map.rs`), the model's from `nvdla/hw`'s register manuals
//! (`vp/src/regs/map_v1.rs`, `map_v2.rs`). This test checks that they agree: every unit
//! base and every register the firmware can write sits at the address where the model
//! decodes a register of the same name, on each hardware configuration.

use nvdla_firmware::regs::{Block, HwVersion};
use nvdla_vp::{HwConfig, Vp};

/// The firmware's unit modules, their [`Block`] and the model's name for the unit.
const UNITS: &[(&str, Block, &str)] = &[
    ("glb", Block::Glb, "GLB"),
    ("mcif", Block::Mcif, "MCIF"),
    ("cvif", Block::Cvif, "CVIF"),
    ("bdma", Block::Bdma, "BDMA"),
    ("cdma", Block::Cdma, "CDMA"),
    ("csc", Block::Csc, "CSC"),
    ("cmac_a", Block::CmacA, "CMAC_A"),
    ("cmac_b", Block::CmacB, "CMAC_B"),
    ("cacc", Block::Cacc, "CACC"),
    ("sdp_rdma", Block::SdpRdma, "SDP_RDMA"),
    ("sdp", Block::Sdp, "SDP"),
    ("pdp_rdma", Block::PdpRdma, "PDP_RDMA"),
    ("pdp", Block::Pdp, "PDP"),
    ("cdp_rdma", Block::CdpRdma, "CDP_RDMA"),
    ("cdp", Block::Cdp, "CDP"),
    ("rubik", Block::Rubik, "RUBIK"),
];

/// `(unit module, register name, offset)` of every constant in the firmware's map.
fn firmware_registers() -> Vec<(String, String, u32)> {
    let src = include_str!("../../firmware/src/regs/map.rs");
    let mut unit = String::new();
    let mut regs = Vec::new();
    for line in src.lines() {
        let line = line.trim();
        if let Some(m) = line.strip_prefix("pub mod ") {
            unit = m.trim_end_matches(" {").to_string();
        } else if let Some(rest) = line.strip_prefix("pub const ") {
            let (name, rest) = rest.split_once(": u32 = ").expect("a u32 constant");
            let hex = rest.trim_end_matches(';').trim_start_matches("0x");
            let offset = u32::from_str_radix(hex, 16).expect("a hex offset");
            regs.push((unit.clone(), name.to_string(), offset));
        }
    }
    regs
}

#[test]
fn firmware_and_model_agree_on_every_register_address() {
    let regs = firmware_registers();
    assert!(regs.len() > 350, "parsed {} firmware registers", regs.len());
    for cfg in HwConfig::all() {
        // One generation type for both: the firmware's register map and the model's.
        let version: HwVersion = cfg.version();
        let name = cfg.name();
        let vp = Vp::new(cfg);
        let (mut same, mut absent) = (0, Vec::new());
        for (unit, reg, offset) in &regs {
            let &(_, block, vp_name) = UNITS
                .iter()
                .find(|(m, _, _)| m == unit)
                .unwrap_or_else(|| panic!("unit {unit} has no entry in UNITS"));
            let want = block.base(version) + offset;
            match vp.lookup(vp_name, reg) {
                Some(got) => {
                    assert_eq!(
                        got, want,
                        "{name}: {vp_name}.{reg}: model {got:#x}, firmware {want:#x}"
                    );
                    same += 1;
                }
                None => absent.push(format!("{vp_name}.{reg}")),
            }
        }
        // Units a configuration lacks (nv_small: BDMA, RUBIK, CVIF; nv_large: BDMA, RUBIK)
        // are absent from the model; every other register the firmware knows must be
        // decoded.
        let f = vp.config().hw.features;
        let lacks = |unit: &str| match unit {
            "BDMA" => !f.bdma,
            "RUBIK" => !f.rubik,
            "CVIF" => !f.cvif,
            _ => false,
        };
        let unexpected: Vec<_> = absent
            .iter()
            .filter(|r| !lacks(r.split('.').next().unwrap_or("")))
            .collect();
        assert!(
            unexpected.is_empty(),
            "{name}: registers the model does not decode: {unexpected:?}"
        );
        assert!(same > 300, "{name}: only {same} registers compared");
        eprintln!(
            "{name}: {same} registers at the same address, {} in absent units",
            absent.len()
        );
    }
}
