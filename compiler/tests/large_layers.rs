//! Layers that do not map onto one hardware operation as they stand, found by compiling
//! torchvision's topologies exported to ONNX (`scripts/onnx-models`), reduced here to
//! small Caffe networks with random weights:
//!
//! - a fully connected layer whose one kernel group of weights exceeds the CBUF (VGG's
//!   7x7x512 -> 4096: 25 banks for 16 kernels on nv_full): split over its input channels
//!   into partial sums that each SDP adds to the previous one;
//! - a DenseNet block, where each layer concatenates every earlier output of the block:
//!   all of its concatenations share the longest one's surface, with no copies;
//! - int8 max pooling written straight into a concatenation calibrated to another scale
//!   (Inception v3's `Mixed_6a`): the PDP cannot rescale, so an SDP pass does.
//!
//! Each runs on the in-process virtual platform against the compiler's fp32 reference.
//! Tolerances: fp16 1e-2 of the largest reference magnitude (fp16 rounding through a few
//! layers: measured values are printed with `--nocapture`); int8 6e-2 (a few steps of
//! 1/127 of each tensor's range, accumulated over the layers).

mod common;

use common::{max_rel_err, run_fp16, run_int8, Rng};
use nvdla_compiler::engine::HwOpKind;
use nvdla_compiler::frontend::caffe::{self, synth::random_weights};
use nvdla_compiler::ir::Graph;
use nvdla_compiler::target::{Precision, Target};

const FP16_TOL: f32 = 1e-2;
const INT8_TOL: f32 = 6e-2;

fn network(prototxt: &str) -> Graph {
    let model = random_weights(prototxt, 11).unwrap_or_else(|e| panic!("{e}"));
    caffe::load(prototxt, &model).unwrap_or_else(|e| panic!("{e}"))
}

fn input(g: &Graph) -> Vec<f32> {
    Rng(0x9e37_79b9_7f4a_7c15).vec(g.shape(g.inputs[0]).elements(), 1.0)
}

/// The compiled program's operations, by kind: (convolutions, SDPs alone, PDPs).
fn op_counts(g: &Graph, config: &str, precision: Precision) -> (usize, usize, usize) {
    let hw = nvdla_hw::Config::by_name(config).unwrap();
    let target = Target::new(hw, precision).unwrap();
    let reference = nvdla_compiler::reference::run(g, &[(g.inputs[0], input(g))]).unwrap();
    let cal = nvdla_compiler::quant::Calibration::from_activations(
        &reference,
        nvdla_compiler::quant::RangeMethod::MaxAbs,
    );
    let quant = nvdla_compiler::lower::Quant {
        cal: (precision == Precision::Int8).then_some(&cal),
        per_filter: false,
        input_scale: 1.0,
    };
    let c = nvdla_compiler::compile_graph(
        g.clone(),
        &nvdla_compiler::Options::with_quant(target, &quant),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let count = |f: fn(&HwOpKind) -> bool| c.program.ops.iter().filter(|o| f(&o.kind)).count();
    (
        count(|k| matches!(k, HwOpKind::Conv(_))),
        count(|k| matches!(k, HwOpKind::Sdp(_))),
        count(|k| matches!(k, HwOpKind::Pdp(_))),
    )
}

const WIDE_FC: &str = r#"
name: "wide_fc"
input: "data"
input_shape { dim: 1 dim: 320 dim: 7 dim: 7 }
layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc"
        inner_product_param { num_output: 24 } }
layer { name: "relu" type: "ReLU" bottom: "fc" top: "fc" }
"#;

#[test]
fn fully_connected_beyond_the_cbuf_is_summed_over_channel_parts() {
    let g = network(WIDE_FC);
    let x = input(&g);
    // nv_full fp16: 16 kernels x 7x7x320 halves = 490 KiB > 14 banks of 32 KiB.
    // nv_small int8: 8 kernels x 15,680 bytes = 122.5 KiB, beside a data bank > 128 KiB.
    for (config, precision) in [
        ("nv_full", Precision::Fp16),
        ("nv_large", Precision::Fp16),
        ("nv_small", Precision::Int8),
    ] {
        let (convs, _, _) = op_counts(&g, config, precision);
        assert!(
            convs >= 2,
            "{config}: {convs} convolution(s), expected a split"
        );
        let (got, want) = if precision == Precision::Fp16 {
            run_fp16(&g, config, &x)
        } else {
            run_int8(&g, config, &x, false)
        };
        let err = max_rel_err(&got, &want);
        let tol = if precision == Precision::Fp16 {
            FP16_TOL
        } else {
            INT8_TOL
        };
        println!("wide_fc {config} {precision:?}: {convs} partial convolutions, error {err:.2e}");
        assert!(err <= tol, "{config}: error {err} > {tol}");
    }
}

const DENSE_BLOCK: &str = r#"
name: "dense_block"
input: "data"
input_shape { dim: 1 dim: 8 dim: 12 dim: 12 }
layer { name: "stem" type: "Convolution" bottom: "data" top: "x0"
        convolution_param { num_output: 32 kernel_size: 3 pad: 1 } }
layer { name: "l1" type: "Convolution" bottom: "x0" top: "n1"
        convolution_param { num_output: 16 kernel_size: 3 pad: 1 } }
layer { name: "c1" type: "Concat" bottom: "x0" bottom: "n1" top: "c1" }
layer { name: "bn1" type: "Scale" bottom: "c1" top: "b1" scale_param { bias_term: true } }
layer { name: "r1" type: "ReLU" bottom: "b1" top: "b1" }
layer { name: "l2" type: "Convolution" bottom: "b1" top: "n2"
        convolution_param { num_output: 16 kernel_size: 3 pad: 1 } }
layer { name: "c2" type: "Concat" bottom: "x0" bottom: "n1" bottom: "n2" top: "c2" }
layer { name: "bn2" type: "Scale" bottom: "c2" top: "b2" scale_param { bias_term: true } }
layer { name: "r2" type: "ReLU" bottom: "b2" top: "b2" }
layer { name: "l3" type: "Convolution" bottom: "b2" top: "n3"
        convolution_param { num_output: 16 kernel_size: 3 pad: 1 } }
layer { name: "c3" type: "Concat" bottom: "x0" bottom: "n1" bottom: "n2" bottom: "n3" top: "c3" }
layer { name: "head" type: "Convolution" bottom: "c3" top: "out"
        convolution_param { num_output: 16 kernel_size: 1 } }
"#;

#[test]
fn dense_block_concatenations_share_one_surface() {
    let g = network(DENSE_BLOCK);
    let x = input(&g);
    for (config, precision) in [("nv_full", Precision::Fp16), ("nv_small", Precision::Int8)] {
        // Five convolutions and two standalone SDPs (scale + ReLU): no placement copies.
        let (convs, sdps, _) = op_counts(&g, config, precision);
        assert_eq!(
            (convs, sdps),
            (5, 2),
            "{config}: placements instead of views?"
        );
        let (got, want) = if precision == Precision::Fp16 {
            run_fp16(&g, config, &x)
        } else {
            run_int8(&g, config, &x, false)
        };
        let err = max_rel_err(&got, &want);
        let tol = if precision == Precision::Fp16 {
            FP16_TOL
        } else {
            INT8_TOL
        };
        println!("dense_block {config} {precision:?}: error {err:.2e}");
        assert!(err <= tol, "{config}: error {err} > {tol}");
    }
}

const POOL_INTO_CONCAT: &str = r#"
name: "pool_into_concat"
input: "data"
input_shape { dim: 1 dim: 8 dim: 12 dim: 12 }
layer { name: "stem" type: "Convolution" bottom: "data" top: "x"
        convolution_param { num_output: 16 kernel_size: 3 pad: 1 } }
layer { name: "pool" type: "Pooling" bottom: "x" top: "p"
        pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "branch" type: "Convolution" bottom: "x" top: "b"
        convolution_param { num_output: 16 kernel_size: 3 stride: 2 pad: 1 } }
layer { name: "wider" type: "Power" bottom: "b" top: "b" power_param { scale: 4 } }
layer { name: "cat" type: "Concat" bottom: "p" bottom: "b" top: "cat" }
layer { name: "head" type: "Convolution" bottom: "cat" top: "out"
        convolution_param { num_output: 16 kernel_size: 1 } }
"#;

#[test]
fn int8_pooling_into_a_concatenation_of_another_scale_is_rescaled() {
    let g = network(POOL_INTO_CONCAT);
    let x = input(&g);
    // The branch is four times wider than the pooling's input, so the concatenation's
    // calibrated scale differs from the one the PDP keeps: one SDP pass rescales.
    let (_, sdps, pdps) = op_counts(&g, "nv_small", Precision::Int8);
    assert_eq!((sdps, pdps), (1, 1));
    let (got, want) = run_int8(&g, "nv_small", &x, false);
    let err = max_rel_err(&got, &want);
    println!("pool_into_concat nv_small int8: error {err:.2e}");
    assert!(err <= INT8_TOL, "error {err} > {INT8_TOL}");
    let (got, want) = run_fp16(&g, "nv_full", &x);
    assert!(max_rel_err(&got, &want) <= FP16_TOL);
}
