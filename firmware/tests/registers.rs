//! Register values the firmware computes for NVIDIA's regression loadables, checked
//! against the values their descriptors call for.

mod common;

use common::run_test;
use nvdla_firmware::regs::{
    bdma, cacc, cdma, cdp, cdp_rdma, csc, glb, pdp, pdp_rdma, sdp, sdp_rdma, Block,
};

/// Device address of address-list entry `i`.
fn entry(hw: &common::FakeHw, i: usize) -> u32 {
    hw.list[i].addr.0 as u32
}

#[test]
fn bdma_l0_0_copies_one_cube() {
    let Some((hw, r)) = run_test("BDMA", "BDMA_L0_0") else {
        return;
    };
    r.unwrap();
    let b = Block::Bdma;
    // One transfer of an 8x8x32 int8 cube: 8 lines of 256 bytes, 2 KiB surface.
    assert_eq!(hw.values(b, bdma::CFG_SRC_ADDR_LOW), [entry(&hw, 4)]);
    assert_eq!(hw.values(b, bdma::CFG_SRC_ADDR_HIGH), [0]);
    assert_eq!(hw.values(b, bdma::CFG_DST_ADDR_LOW), [entry(&hw, 5)]);
    assert_eq!(hw.last(b, bdma::CFG_LINE), Some(256 / 32 - 1));
    assert_eq!(hw.last(b, bdma::CFG_CMD), Some(0b11), "DRAM to DRAM");
    assert_eq!(hw.last(b, bdma::CFG_LINE_REPEAT), Some(8 - 1));
    assert_eq!(hw.last(b, bdma::CFG_SRC_LINE), Some(256));
    assert_eq!(hw.last(b, bdma::CFG_DST_LINE), Some(256));
    assert_eq!(hw.last(b, bdma::CFG_SURF_REPEAT), Some(0));
    assert_eq!(hw.last(b, bdma::CFG_SRC_SURF), Some(2048));
    assert_eq!(hw.last(b, bdma::CFG_DST_SURF), Some(2048));
    assert_eq!(hw.values(b, bdma::CFG_OP), [1]);
    // Launched as group 0, after the done interrupts were unmasked.
    assert_eq!(hw.values(b, bdma::CFG_LAUNCH0), [1]);
    assert!(hw.values(b, bdma::CFG_LAUNCH1).is_empty());
    assert_eq!(hw.values(Block::Glb, glb::S_INTR_STATUS), [1 << 6]);
    // The whole BDMA programming sequence, in order.
    let seq: Vec<u32> = hw.writes_to(b).iter().map(|w| w.0).collect();
    assert_eq!(
        seq,
        [
            bdma::CFG_SRC_ADDR_LOW,
            bdma::CFG_SRC_ADDR_HIGH,
            bdma::CFG_DST_ADDR_LOW,
            bdma::CFG_DST_ADDR_HIGH,
            bdma::CFG_LINE,
            bdma::CFG_CMD,
            bdma::CFG_LINE_REPEAT,
            bdma::CFG_SRC_LINE,
            bdma::CFG_DST_LINE,
            bdma::CFG_SURF_REPEAT,
            bdma::CFG_SRC_SURF,
            bdma::CFG_DST_SURF,
            bdma::CFG_OP,
            bdma::CFG_LAUNCH0
        ]
    );
}

fn check_pdp(test: &str, line: u32, surf: u32) {
    let Some((hw, r)) = run_test("PDP", test) else {
        return;
    };
    r.unwrap();
    let (b, rd) = (Block::Pdp, Block::PdpRdma);
    let src = entry(&hw, 4);
    let dst = entry(&hw, 5);
    assert_eq!(hw.last(rd, pdp_rdma::D_DATA_CUBE_IN_WIDTH), Some(7));
    assert_eq!(hw.last(rd, pdp_rdma::D_DATA_CUBE_IN_HEIGHT), Some(7));
    assert_eq!(hw.last(rd, pdp_rdma::D_DATA_CUBE_IN_CHANNEL), Some(31));
    assert_eq!(hw.last(rd, pdp_rdma::D_SRC_BASE_ADDR_LOW), Some(src));
    assert_eq!(hw.last(rd, pdp_rdma::D_SRC_LINE_STRIDE), Some(line));
    assert_eq!(hw.last(rd, pdp_rdma::D_SRC_SURFACE_STRIDE), Some(surf));
    assert_eq!(hw.last(rd, pdp_rdma::D_SRC_RAM_CFG), Some(1), "MC");
    assert_eq!(hw.last(b, pdp::D_DATA_CUBE_OUT_CHANNEL), Some(31));
    // Max pooling, input from memory, one strip.
    assert_eq!(hw.last(b, pdp::D_OPERATION_MODE_CFG), Some(0x11));
    // 1x1 kernel, stride 1: reciprocal 1.0 in Q16.
    assert_eq!(hw.last(b, pdp::D_POOLING_KERNEL_CFG), Some(0));
    assert_eq!(hw.last(b, pdp::D_RECIP_KERNEL_WIDTH), Some(0x10000));
    assert_eq!(hw.last(b, pdp::D_DST_BASE_ADDR_LOW), Some(dst));
    assert_eq!(hw.last(b, pdp::D_DST_LINE_STRIDE), Some(line));
    assert_eq!(hw.last(b, pdp::D_DST_SURFACE_STRIDE), Some(surf));
    assert_eq!(hw.last(b, pdp::D_DATA_FORMAT), Some(0), "int8");
    // Group 0 programmed and enabled, RDMA first.
    assert_eq!(hw.values(rd, pdp_rdma::D_OP_ENABLE), [1]);
    assert_eq!(hw.values(b, pdp::D_OP_ENABLE), [1]);
    assert_eq!(hw.values(b, pdp::S_POINTER), [0, 0]);
}

#[test]
fn pdp_l0_0_pools_from_memory() {
    check_pdp("PDP_L0_0", 256, 2048);
}

#[test]
fn pdp_l0_0_small_uses_v2_map_and_8_byte_atoms() {
    // nv_small: 8-byte atoms, so an 8x8x32 int8 cube has 64-byte lines.
    check_pdp("PDP_L0_0_small", 64, 512);
}

fn check_sdp(test: &str, line: u32, surf: u32, brdma: u32, dst: usize) {
    let Some((hw, r)) = run_test("SDP", test) else {
        return;
    };
    r.unwrap();
    let (b, rd) = (Block::Sdp, Block::SdpRdma);
    // Source cube from memory through SDP_RDMA; X1 stage is a ReLU (per-layer, no operand
    // stream), X2 and Y bypassed.
    assert_eq!(hw.last(rd, sdp_rdma::D_DATA_CUBE_CHANNEL), Some(31));
    assert_eq!(
        hw.last(rd, sdp_rdma::D_SRC_BASE_ADDR_LOW),
        Some(entry(&hw, 4))
    );
    assert_eq!(hw.last(rd, sdp_rdma::D_SRC_LINE_STRIDE), Some(line));
    assert_eq!(hw.last(rd, sdp_rdma::D_SRC_SURFACE_STRIDE), Some(surf));
    // Operand stream off (bit 0); the other fields follow the unused X1 cube.
    assert_eq!(hw.last(rd, sdp_rdma::D_BRDMA_CFG), Some(brdma));
    assert_eq!(hw.last(b, sdp::D_DST_BASE_ADDR_LOW), Some(entry(&hw, dst)));
    assert_eq!(hw.last(b, sdp::D_DP_BS_CFG), Some(0x1a), "ReLU only");
    assert_eq!(
        hw.last(b, sdp::D_DP_BS_MUL_CFG),
        Some(0),
        "register operand"
    );
    assert_eq!(hw.last(b, sdp::D_DP_BN_CFG), Some(0x5b), "X2 bypassed");
    assert_eq!(hw.last(b, sdp::D_DP_EW_CFG), Some(0x5b), "Y bypassed");
    assert_eq!(hw.last(b, sdp::D_FEATURE_MODE_CFG), Some(0));
    assert_eq!(hw.last(b, sdp::D_DST_DMA_CFG), Some(1));
    assert_eq!(hw.last(b, sdp::D_CVT_SCALE), Some(1));
    assert_eq!(hw.values(rd, sdp_rdma::D_OP_ENABLE), [1]);
    assert_eq!(hw.values(b, sdp::D_OP_ENABLE), [1]);
}

#[test]
fn sdp_x1_l0_0_applies_relu() {
    check_sdp("SDP_X1_L0_0", 256, 2048, 0x39, 6);
}

#[test]
fn sdp_x1_l0_0_small_applies_relu() {
    check_sdp("SDP_X1_L0_0_small", 64, 512, 0x11, 5);
}

#[test]
fn cdp_l0_0_loads_the_lut() {
    let Some((hw, r)) = run_test("CDP", "CDP_L0_0") else {
        return;
    };
    r.unwrap();
    let (b, rd) = (Block::Cdp, Block::CdpRdma);
    assert_eq!(hw.last(rd, cdp_rdma::D_DATA_CUBE_CHANNEL), Some(31));
    assert_eq!(
        hw.last(rd, cdp_rdma::D_SRC_BASE_ADDR_LOW),
        Some(entry(&hw, 6))
    );
    assert_eq!(hw.last(rd, cdp_rdma::D_SRC_LINE_STRIDE), Some(256));
    // Both raw tables: select LE for write, 65 entries, LO for write, 257 entries.
    assert_eq!(hw.values(b, cdp::S_LUT_ACCESS_CFG), [0x20000, 0x30000]);
    assert_eq!(hw.values(b, cdp::S_LUT_ACCESS_DATA).len(), 65 + 257);
    assert_eq!(
        hw.last(b, cdp::S_LUT_CFG),
        Some(0x71),
        "linear, LO priorities"
    );
    assert_eq!(hw.last(b, cdp::D_DST_BASE_ADDR_LOW), Some(entry(&hw, 5)));
    assert_eq!(hw.last(b, cdp::D_LRN_CFG), Some(0), "window of 3");
    assert_eq!(hw.last(b, cdp::D_FUNC_BYPASS), Some(0));
    // LUT programmed before the first enable, RDMA enabled before CDP.
    let seq = hw.writes_to(b);
    let lut = seq
        .iter()
        .position(|w| w.0 == cdp::S_LUT_ACCESS_CFG)
        .unwrap();
    let en = seq.iter().position(|w| w.0 == cdp::D_OP_ENABLE).unwrap();
    assert!(lut < en);
    assert_eq!(hw.values(rd, cdp_rdma::D_OP_ENABLE), [1]);
}

#[test]
fn cdp_l0_0_small_completes_without_sdp_lut() {
    let Some((hw, r)) = run_test("CDP", "CDP_L0_0_small") else {
        return;
    };
    r.unwrap();
    assert_eq!(
        hw.values(Block::Cdp, cdp::S_LUT_ACCESS_DATA).len(),
        65 + 257
    );
    assert_eq!(
        hw.last(Block::CdpRdma, cdp_rdma::D_SRC_LINE_STRIDE),
        Some(64)
    );
}

#[test]
fn conv_d_l0_0_feeds_sdp_on_the_fly() {
    let Some((hw, r)) = run_test("CONV", "CONV_D_L0_0") else {
        return;
    };
    r.unwrap();
    let d = Block::Cdma;
    // 8x8x128 int16 input, 3x3x128 kernels x32, output 8x8x32 on the fly into SDP.
    assert_eq!(hw.last(d, cdma::D_MISC_CFG), Some(0x1100_1100));
    assert_eq!(hw.last(d, cdma::D_DATAIN_SIZE_0), Some(0x0007_0007));
    assert_eq!(hw.last(d, cdma::D_DATAIN_SIZE_1), Some(127));
    assert_eq!(hw.last(d, cdma::D_DAIN_ADDR_LOW_0), Some(entry(&hw, 5)));
    assert_eq!(hw.last(d, cdma::D_WEIGHT_ADDR_LOW), Some(entry(&hw, 4)));
    assert_eq!(hw.last(d, cdma::D_WEIGHT_BYTES), Some(3 * 3 * 128 * 32 * 2));
    assert_eq!(hw.last(d, cdma::D_WEIGHT_SIZE_0), Some(3 * 3 * 128 * 2 - 1));
    assert_eq!(hw.last(d, cdma::D_WEIGHT_SIZE_1), Some(31));
    assert_eq!(hw.last(d, cdma::D_ZERO_PADDING), Some(0x0101_0101));
    assert_eq!(
        hw.last(Block::Csc, csc::D_WEIGHT_SIZE_EXT_0),
        Some(0x0002_0002)
    );
    assert_eq!(hw.last(Block::Csc, csc::D_ATOMICS), Some(63));
    assert_eq!(hw.last(Block::Cacc, cacc::D_DATAOUT_SIZE_1), Some(31));
    // SDP is enabled before the convolution it consumes, then all five units together.
    let order: Vec<(Block, u32)> = hw
        .writes
        .iter()
        .filter(|w| {
            (w.block == Block::Sdp && w.offset == sdp::D_OP_ENABLE)
                || (w.block == Block::Cdma && w.offset == cdma::D_OP_ENABLE)
                || (w.block == Block::Cacc && w.offset == cacc::D_OP_ENABLE)
        })
        .map(|w| (w.block, w.offset))
        .collect();
    assert_eq!(
        order,
        [
            (Block::Sdp, sdp::D_OP_ENABLE),
            (Block::Cacc, cacc::D_OP_ENABLE),
            (Block::Cdma, cdma::D_OP_ENABLE)
        ]
    );
}

#[test]
fn conv_d_l0_0_small_programs_v2_units() {
    let Some((hw, r)) = run_test("CONV", "CONV_D_L0_0_small") else {
        return;
    };
    r.unwrap();
    // nv_small is int8 only.
    assert_eq!(
        hw.last(Block::Cdma, cdma::D_MISC_CFG).map(|v| (v >> 8) & 3),
        Some(0)
    );
    assert_eq!(hw.values(Block::Cacc, cacc::D_OP_ENABLE), [1]);
    assert_eq!(hw.values(Block::Sdp, sdp::D_OP_ENABLE), [1]);
}

#[test]
fn nn_l0_0_enables_every_operation_in_alternating_groups() {
    use nvdla_loadable::dla::{CommonOpDesc, NetworkDesc, OpType};
    use nvdla_loadable::Descriptor;
    let Some((mut hw, r)) = run_test("NN", "NN_L0_0") else {
        return;
    };
    let interrupts = r.unwrap();
    // Operations per processor, from the dependency graph.
    let net = NetworkDesc::decode_from(&hw.read_entry(0, 0, NetworkDesc::SIZE)).unwrap();
    let n = usize::from(net.num_operations);
    let graph = hw.read_entry(net.dependency_graph_index as u16, 0, n * CommonOpDesc::SIZE);
    let mut per_type = [0usize; 6];
    for i in 0..n {
        let c: CommonOpDesc = nvdla_loadable::dla::decode_at(&graph, i).unwrap();
        per_type[usize::from(c.op_type)] += 1;
    }
    assert!(
        interrupts >= n,
        "{interrupts} interrupts for {n} operations"
    );
    assert_eq!(
        hw.values(Block::Cacc, cacc::D_OP_ENABLE).len(),
        per_type[OpType::Conv.index()]
    );
    assert_eq!(
        hw.values(Block::Sdp, sdp::D_OP_ENABLE).len(),
        per_type[OpType::Sdp.index()]
    );
    assert_eq!(
        hw.values(Block::Pdp, pdp::D_OP_ENABLE).len(),
        per_type[OpType::Pdp.index()]
    );
    assert_eq!(
        hw.values(Block::Cdp, cdp::D_OP_ENABLE).len(),
        per_type[OpType::Cdp.index()]
    );
    // Every enable is preceded by the producer-pointer write of its group, and every
    // engine's enables alternate between its two groups.
    for (b, en, ptr) in [
        (Block::Sdp, sdp::D_OP_ENABLE, sdp::S_POINTER),
        (Block::Pdp, pdp::D_OP_ENABLE, pdp::S_POINTER),
        (Block::Cacc, cacc::D_OP_ENABLE, cacc::S_POINTER),
    ] {
        let mut groups = vec![];
        let mut cur = None;
        for w in hw.writes.iter().filter(|w| w.block == b) {
            if w.offset == ptr {
                cur = Some(w.value & 1);
            }
            if w.offset == en {
                groups.push(cur.expect("producer set before enable"));
            }
        }
        assert!(!groups.is_empty());
        for (i, g) in groups.iter().enumerate() {
            assert_eq!(*g, (i % 2) as u32, "{b:?} enable {i} uses group {g}");
        }
    }
}
