//! The processors record the first bad field or failed register access and stop touching the
//! hardware there (`processors::Ctx`): the register writes of a failing operation are
//! exactly the beginning of those of the valid one, and the error is the first one found.

mod common;

use nvdla_firmware::hw::Hw;
use nvdla_firmware::{Engine, Error, HwConfig, HwVersion};
use nvdla_loadable::dla::{Layout, NetworkDesc, SdpOpDesc, SdpSurfaceDesc};
use nvdla_loadable::examples::{sdp_relu, DLA1_VERSION};
use nvdla_loadable::Descriptor;

fn sdp_network() -> common::FakeHw {
    common::load(
        &sdp_relu(4, 4, Layout::Current, DLA1_VERSION, None).build(),
        HwVersion::V1,
    )
}

fn network(hw: &mut common::FakeHw) -> NetworkDesc {
    NetworkDesc::decode_from(&hw.read_entry(0, 0, NetworkDesc::SIZE)).unwrap()
}

/// Runs `hw`'s task on nv_full; the engine is idle afterwards.
fn run(hw: &mut common::FakeHw) -> Result<usize, Error> {
    let mut engine: Engine = Engine::new(HwConfig::new(&nvdla_hw::NV_FULL));
    let r = common::run(&mut engine, hw);
    assert!(!engine.is_running());
    r
}

/// The network with its SDP surface descriptor changed by `edit`.
fn with_surface(edit: impl FnOnce(&mut SdpSurfaceDesc)) -> common::FakeHw {
    let mut hw = sdp_network();
    let list = network(&mut hw).surface_desc_index as u16;
    let bytes = hw.read_entry(list, 0, SdpSurfaceDesc::SIZE);
    let mut s = SdpSurfaceDesc::decode_from(&bytes).unwrap();
    edit(&mut s);
    hw.write_indexed(list, 0, &s.to_vec()).unwrap();
    hw
}

/// The network with its SDP operation descriptor changed by `edit`.
fn with_op(edit: impl FnOnce(&mut SdpOpDesc)) -> common::FakeHw {
    let mut hw = sdp_network();
    let list = network(&mut hw).operation_desc_index as u16;
    let bytes = hw.read_entry(list, 0, SdpOpDesc::SIZE);
    let mut o = SdpOpDesc::decode_from(&bytes).unwrap();
    edit(&mut o);
    hw.write_indexed(list, 0, &o.to_vec()).unwrap();
    hw
}

fn assert_prefix(bad: &common::FakeHw, good: &common::FakeHw) {
    assert!(bad.writes.len() < good.writes.len());
    assert_eq!(bad.writes[..], good.writes[..bad.writes.len()]);
}

#[test]
fn a_bad_field_midway_stops_the_writes_there() {
    let mut good = sdp_network();
    run(&mut good).expect("the valid network runs");

    // Checked while SDP_RDMA is being programmed: some writes precede it.
    let mut bad = with_surface(|s| s.src_data.width = 0);
    let e = run(&mut bad).expect_err("a zero width");
    assert!(
        matches!(
            e,
            Error::InvalidField {
                field: "dla_sdp_surface_desc.src_data.width",
                value: 0,
                ..
            }
        ),
        "{e}"
    );
    assert!(!bad.writes.is_empty());
    assert_prefix(&bad, &good);
}

#[test]
fn the_first_of_two_bad_fields_is_reported() {
    let mut good = sdp_network();
    run(&mut good).expect("the valid network runs");

    // An unknown X1 operation type is found before the zero width, and the width's
    // failure (later) does not replace it.
    let mut bad = with_op(|o| o.x1_op.op_type = 9);
    let list = network(&mut bad).surface_desc_index as u16;
    let mut s =
        SdpSurfaceDesc::decode_from(&bad.read_entry(list, 0, SdpSurfaceDesc::SIZE)).unwrap();
    s.src_data.width = 0;
    bad.write_indexed(list, 0, &s.to_vec()).unwrap();
    let e = run(&mut bad).expect_err("two bad fields");
    assert!(
        matches!(
            e,
            Error::InvalidField {
                field: "dla_sdp_op_desc.x1_op",
                value: 9,
                ..
            }
        ),
        "{e}"
    );
    assert_prefix(&bad, &good);
}
