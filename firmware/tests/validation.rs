//! Bad descriptors give typed errors and leave the engine idle.

mod common;

use nvdla_firmware::hw::Hw;
use nvdla_firmware::{Engine, Error, Feature, HwConfig, HwVersion, ListKind};
use nvdla_loadable::dla::{CommonOpDesc, NetworkDesc};
use nvdla_loadable::Descriptor;

fn loaded(unit: &str, test: &str, version: HwVersion) -> Option<common::FakeHw> {
    let bytes = std::fs::read(common::loadable_path(unit, test)?).unwrap();
    Some(common::load(&bytes, version))
}

fn network(hw: &mut common::FakeHw) -> NetworkDesc {
    NetworkDesc::decode_from(&hw.read_entry(0, 0, NetworkDesc::SIZE)).unwrap()
}

/// Patches one byte of dependency-graph entry `op`.
fn patch_graph(hw: &mut common::FakeHw, op: usize, byte: usize, value: u8) {
    let net = network(hw);
    let off = (op * CommonOpDesc::SIZE + byte) as u64;
    hw.write_indexed(net.dependency_graph_index as u16, off, &[value])
        .unwrap();
}

fn run_err(hw: &mut common::FakeHw, cfg: HwConfig) -> Error {
    let mut engine: Engine = Engine::new(cfg);
    let e = common::run(&mut engine, hw).expect_err("must fail");
    assert!(!engine.is_running());
    e
}

#[test]
fn bdma_on_nv_small_is_a_missing_feature() {
    let Some(mut hw) = loaded("BDMA", "BDMA_L0_0", HwVersion::V2) else {
        return;
    };
    let e = run_err(&mut hw, HwConfig::new(&nvdla_hw::NV_SMALL));
    assert!(
        matches!(
            e,
            Error::FeatureAbsent {
                feature: Feature::Bdma,
                ..
            }
        ),
        "{e}"
    );
    assert!(hw.writes.is_empty(), "nothing programmed");
}

#[test]
fn unknown_op_type_is_rejected() {
    let Some(mut hw) = loaded("PDP", "PDP_L0_0", HwVersion::V1) else {
        return;
    };
    patch_graph(&mut hw, 0, 3, 9);
    let e = run_err(&mut hw, HwConfig::new(&nvdla_hw::NV_FULL));
    assert!(matches!(e, Error::BadOpType { value: 9, .. }), "{e}");
}

#[test]
fn unreachable_dependency_count_is_detected_before_programming() {
    let Some(mut hw) = loaded("PDP", "PDP_L0_0", HwVersion::V1) else {
        return;
    };
    patch_graph(&mut hw, 0, 4, 1); // dependency_count = 1, nobody signals it
    let e = run_err(&mut hw, HwConfig::new(&nvdla_hw::NV_FULL));
    assert!(
        matches!(
            e,
            Error::Unsatisfiable {
                needed: 1,
                possible: 0,
                ..
            }
        ),
        "{e}"
    );
    assert!(hw.writes.is_empty());
}

#[test]
fn bad_op_head_is_rejected() {
    let Some(mut hw) = loaded("PDP", "PDP_L0_0", HwVersion::V1) else {
        return;
    };
    // op_head[PDP] = 5 in a one-operation network.
    hw.write_indexed(0, 16 + 2 * 3, &5i16.to_le_bytes())
        .unwrap();
    let e = run_err(&mut hw, HwConfig::new(&nvdla_hw::NV_FULL));
    assert!(
        matches!(
            e,
            Error::BadIndex {
                list: ListKind::Operations,
                index: 5,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn bad_address_index_in_a_surface_is_rejected() {
    let Some(mut hw) = loaded("PDP", "PDP_L0_0", HwVersion::V1) else {
        return;
    };
    let net = network(&mut hw);
    // src_data.address (bytes 2..4 of the PDP surface) = 40.
    hw.write_indexed(net.surface_desc_index as u16, 2, &40i16.to_le_bytes())
        .unwrap();
    let e = run_err(&mut hw, HwConfig::new(&nvdla_hw::NV_FULL));
    assert!(
        matches!(
            e,
            Error::Hw(nvdla_firmware::HwError::AddressIndex { index: 40, .. })
        ),
        "{e}"
    );
}

#[test]
fn stalled_hardware_is_reported() {
    let Some(mut hw) = loaded("PDP", "PDP_L0_0", HwVersion::V1) else {
        return;
    };
    let mut engine: Engine = Engine::new(HwConfig::new(&nvdla_hw::NV_FULL));
    assert_eq!(
        engine.execute_task(&mut hw),
        Ok(nvdla_firmware::Progress::Running)
    );
    // An interrupt that reports nothing leaves the PDP running: still fine.
    assert_eq!(
        engine.handle_interrupt(&mut hw),
        Ok(nvdla_firmware::Progress::Running)
    );
    assert!(engine.status().groups[3][0].active);
    engine.abort();
    assert!(!engine.is_running());
    assert_eq!(engine.handle_interrupt(&mut hw), Err(Error::NoTask));
}

#[test]
fn a_second_task_is_refused_while_one_runs() {
    let Some(mut hw) = loaded("PDP", "PDP_L0_0", HwVersion::V1) else {
        return;
    };
    let mut engine: Engine = Engine::new(HwConfig::new(&nvdla_hw::NV_FULL));
    engine.execute_task(&mut hw).unwrap();
    assert_eq!(engine.execute_task(&mut hw), Err(Error::Busy));
}

#[test]
fn too_small_an_engine_refuses_the_network() {
    let Some(mut hw) = loaded("NN", "NN_L0_0", HwVersion::V1) else {
        return;
    };
    let mut engine: Engine<4> = Engine::new(HwConfig::new(&nvdla_hw::NV_FULL));
    let e = engine.execute_task(&mut hw).unwrap_err();
    assert!(matches!(e, Error::TooManyOps { max: 4, .. }), "{e}");
}

/// A convolution waits for CDMA's buffer flush; a flush that never completes ends in a
/// typed timeout. Without a clock the poll gives up after `POLL_LIMIT` reads.
#[test]
fn stuck_flush_times_out_after_the_read_limit_without_a_clock() {
    let Some(mut hw) = loaded("CONV", "CONV_D_L0_0", HwVersion::V1) else {
        return;
    };
    hw.flush_done = false;
    let e = run_err(&mut hw, HwConfig::new(&nvdla_hw::NV_FULL));
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    assert_eq!(hw.flush_reads, nvdla_firmware::POLL_LIMIT);
}

/// With a clock the poll gives up after `POLL_TIMEOUT_MS`, however many reads that takes
/// (here one simulated millisecond per register read).
#[test]
fn stuck_flush_times_out_after_the_deadline_with_a_clock() {
    let Some(mut hw) = loaded("CONV", "CONV_D_L0_0", HwVersion::V1) else {
        return;
    };
    hw.flush_done = false;
    hw.clock_ms = Some(0);
    let e = run_err(&mut hw, HwConfig::new(&nvdla_hw::NV_FULL));
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    // One tick per register read, one read per poll iteration: about POLL_TIMEOUT_MS reads.
    let reads = u64::from(hw.flush_reads);
    assert!(
        (nvdla_firmware::POLL_TIMEOUT_MS - 1..=nvdla_firmware::POLL_TIMEOUT_MS + 1)
            .contains(&reads),
        "{reads} reads"
    );
}
