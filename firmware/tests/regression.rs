//! Runs NVIDIA's regression loadables on a fake NVDLA and checks the register values the
//! firmware computes from their descriptors.

mod common;

use common::run_test;

macro_rules! completes {
    ($($name:ident: $unit:literal, $test:literal;)*) => {$(
        #[test]
        fn $name() {
            let Some((hw, r)) = run_test($unit, $test) else { return };
            let n = r.unwrap_or_else(|e| panic!("{}: {e}", $test));
            assert!(n > 0);
            assert!(hw.pending.is_empty());
        }
    )*};
}

completes! {
    bdma_l0_0_completes: "BDMA", "BDMA_L0_0";
    conv_d_l0_0_completes: "CONV", "CONV_D_L0_0";
    conv_d_l0_0_small_completes: "CONV", "CONV_D_L0_0_small";
    conv_d_l0_0_large_completes: "CONV", "CONV_D_L0_0_large";
    sdp_x1_l0_0_completes: "SDP", "SDP_X1_L0_0";
    sdp_x1_l0_0_small_completes: "SDP", "SDP_X1_L0_0_small";
    sdp_x1_l0_0_large_completes: "SDP", "SDP_X1_L0_0_large";
    pdp_l0_0_completes: "PDP", "PDP_L0_0";
    pdp_l0_0_small_completes: "PDP", "PDP_L0_0_small";
    pdp_l0_0_large_completes: "PDP", "PDP_L0_0_large";
    cdp_l0_0_completes: "CDP", "CDP_L0_0";
    cdp_l0_0_small_completes: "CDP", "CDP_L0_0_small";
    cdp_l0_0_large_completes: "CDP", "CDP_L0_0_large";
    rbk_l0_0_completes: "RBK", "RBK_L0_0";
    nn_l0_0_completes: "NN", "NN_L0_0";
}
