//! Bad descriptors give typed errors and leave the engine idle.
//!
//! The networks are built here with the project's own loadable builder
//! (`nvdla_loadable::examples`: a one-operation BDMA copy and a one-operation SDP ReLU; the
//! convolution is the SDP example with its descriptors rewritten), then corrupted, so these
//! tests need no ground-truth data.

mod common;

use nvdla_firmware::hw::Hw;
use nvdla_firmware::{Engine, Error, Feature, HwConfig, HwVersion, ListKind};
use nvdla_loadable::dla::{
    self, CommonOpDesc, ConvOpDesc, ConvSurfaceDesc, DataCube, Layout, NetworkDesc,
};
use nvdla_loadable::examples::{bdma_copy, sdp_relu, DLA1_VERSION};
use nvdla_loadable::Descriptor;

/// A one-operation SDP network (op_head[SDP] = 0, surfaces at address-list entry 2), built
/// with the loadable builder and laid out for the fake hardware.
fn sdp_network(version: HwVersion) -> common::FakeHw {
    common::load(
        &sdp_relu(4, 4, Layout::Current, DLA1_VERSION, None).build(),
        version,
    )
}

/// A one-operation BDMA network, as [`sdp_network`].
fn bdma_network(version: HwVersion) -> common::FakeHw {
    common::load(&bdma_copy(4, 4).build(), version)
}

/// A one-operation direct convolution (int8, 4x4x32 input from address-list entry 4, no
/// weights or output cube): [`sdp_network`] with its network, dependency-graph, operation
/// and surface descriptors rewritten in device memory.
fn conv_network() -> common::FakeHw {
    let mut hw = sdp_network(HwVersion::V1);
    let mut net = network(&mut hw);
    net.op_head = [-1, 0, -1, -1, -1, -1];
    hw.write_indexed(0, 0, &net.to_vec()).unwrap();
    patch_graph(&mut hw, 0, 3, dla::OpType::Conv.raw());
    let int8 = dla::Precision::Int8.raw();
    let op = ConvOpDesc {
        conv_mode: dla::ConvMode::Direct.raw(),
        data_format: dla::DataFormat::Feature.raw(),
        in_precision: int8,
        out_precision: int8,
        out_cvt: dla::CvtParam {
            scale: 1,
            ..Default::default()
        },
        batch: 1,
        // A 1x1 kernel over the 4x4x32 input, one bank each, stride and dilation 1.
        input_width_csc: 4,
        input_height_csc: 4,
        input_channel_csc: 32,
        kernel_width_csc: 1,
        kernel_height_csc: 1,
        kernel_channel_csc: 32,
        input_width_cmac: 4,
        input_height_cmac: 4,
        bytes_per_kernel: 32,
        entry_per_slice: 1,
        fetch_grain: 1,
        release: 4,
        data_bank: 1,
        weight_bank: 1,
        dilation_x: 1,
        dilation_y: 1,
        conv_stride_x: 1,
        conv_stride_y: 1,
        ..Default::default()
    };
    let ops = net.operation_desc_index as u16;
    hw.write_indexed(ops, 0, &op.to_vec()).unwrap();
    // A 4x4x32 int8 cube at address-list entry `address` (-1: none).
    let cube = |address: i16| DataCube {
        mem_type: dla::MemType::Mc.raw().into(),
        address,
        size: 4 * 4 * 32,
        width: 4,
        height: 4,
        channel: 32,
        line_stride: 4 * 32,
        surf_stride: 4 * 4 * 32,
        ..Default::default()
    };
    let surf = ConvSurfaceDesc {
        weight_data: cube(-1),
        wmb_data: cube(-1),
        wgs_data: cube(-1),
        src_data: cube(4),
        dst_data: cube(-1),
        ..Default::default()
    };
    let surfs = net.surface_desc_index as u16;
    hw.write_indexed(surfs, 0, &surf.to_vec()).unwrap();
    hw
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
    let mut hw = bdma_network(HwVersion::V2);
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
    let mut hw = sdp_network(HwVersion::V1);
    patch_graph(&mut hw, 0, 3, 9);
    let e = run_err(&mut hw, HwConfig::new(&nvdla_hw::NV_FULL));
    assert!(matches!(e, Error::BadOpType { value: 9, .. }), "{e}");
}

#[test]
fn unreachable_dependency_count_is_detected_before_programming() {
    let mut hw = sdp_network(HwVersion::V1);
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
    let mut hw = sdp_network(HwVersion::V1);
    // op_head[SDP] = 5 in a one-operation network.
    hw.write_indexed(0, 16 + 2 * 2, &5i16.to_le_bytes())
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
    let mut hw = sdp_network(HwVersion::V1);
    let net = network(&mut hw);
    // src_data.address (bytes 2..4 of the SDP surface) = 40.
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
    let mut hw = sdp_network(HwVersion::V1);
    let mut engine: Engine = Engine::new(HwConfig::new(&nvdla_hw::NV_FULL));
    assert_eq!(
        engine.execute_task(&mut hw),
        Ok(nvdla_firmware::Progress::Running)
    );
    // An interrupt that reports nothing leaves the SDP running: still fine.
    assert_eq!(
        engine.handle_interrupt(&mut hw),
        Ok(nvdla_firmware::Progress::Running)
    );
    assert!(engine.status().groups[2][0].active);
    engine.abort();
    assert!(!engine.is_running());
    assert_eq!(engine.handle_interrupt(&mut hw), Err(Error::NoTask));
}

#[test]
fn a_second_task_is_refused_while_one_runs() {
    let mut hw = sdp_network(HwVersion::V1);
    let mut engine: Engine = Engine::new(HwConfig::new(&nvdla_hw::NV_FULL));
    engine.execute_task(&mut hw).unwrap();
    assert_eq!(engine.execute_task(&mut hw), Err(Error::Busy));
}

#[test]
fn too_small_an_engine_refuses_the_network() {
    let mut hw = sdp_network(HwVersion::V1);
    // One operation in an engine with room for none.
    let mut engine: Engine<0> = Engine::new(HwConfig::new(&nvdla_hw::NV_FULL));
    let e = engine.execute_task(&mut hw).unwrap_err();
    assert!(matches!(e, Error::TooManyOps { max: 0, .. }), "{e}");
    assert!(hw.writes.is_empty());
}

/// A convolution waits for CDMA's buffer flush; a flush that never completes ends in a
/// typed timeout. Without a clock the poll gives up after `POLL_LIMIT` reads.
#[test]
fn stuck_flush_times_out_after_the_read_limit_without_a_clock() {
    let mut hw = conv_network();
    hw.flush_done = false;
    let e = run_err(&mut hw, HwConfig::new(&nvdla_hw::NV_FULL));
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    assert_eq!(hw.flush_reads, nvdla_firmware::POLL_LIMIT);
}

/// With a clock the poll gives up after `POLL_TIMEOUT_MS`, however many reads that takes
/// (here one simulated millisecond per register read).
#[test]
fn stuck_flush_times_out_after_the_deadline_with_a_clock() {
    let mut hw = conv_network();
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
