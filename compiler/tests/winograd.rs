//! Winograd convolution (`--winograd`): 3x3 stride-1 layers compiled in Winograd mode for
//! nv_full, run on the virtual platform (whose Winograd datapath is bit-exact to NVIDIA's C
//! model cells) and compared with the fp32 reference, in fp16 and int8; and the layers
//! that must stay direct.

mod common;

use common::*;
use nvdla_compiler::engine::HwOpKind;
use nvdla_compiler::ir::*;
use nvdla_compiler::target::Precision;

/// A `k x k` convolution of `x` to `out` channels with stride `stride` and padding `pad`.
#[allow(clippy::too_many_arguments)]
fn conv(
    g: &mut Graph,
    rng: &mut Rng,
    name: &str,
    x: TensorId,
    out: usize,
    k: usize,
    stride: usize,
    pad: usize,
) -> TensorId {
    let s = g.shape(x);
    let scale = 1.0 / ((s.c * k * k) as f32).sqrt();
    let op = Op::Conv(Conv {
        window: Window {
            kernel: [k, k],
            stride: [stride, stride],
            pad: [pad; 4],
            dilation: [1, 1],
        },
        groups: 1,
        out_channels: out,
        weight: Weights::new(vec![out, s.c, k, k], rng.vec(out * s.c * k * k, scale)).unwrap(),
        bias: Some(Weights::vector(rng.vec(out, 0.5))),
    });
    let size = |i: usize| (i + 2 * pad - k) / stride + 1;
    add_node(g, name, op, &[x], Shape::new(1, out, size(s.h), size(s.w)))
}

fn relu(g: &mut Graph, name: &str, x: TensorId) -> TensorId {
    let s = g.shape(x);
    add_node(
        g,
        name,
        Op::Activation(Activation::Relu { slope: 0.0 }),
        &[x],
        s,
    )
}

/// Input 20x13x13, then: two 3x3 convolutions with ReLU (outputs 13x13, padded to
/// 16x16) and a third one without, 24 channels (not a multiple of the atom's); a residual
/// sum with the first (an element-wise operand the Winograd SDP does not take: an SDP
/// operation of its own); a 3x3 one without padding (11x11 out, padded to 12x12); a 2x2
/// max pooling, a stride-2 3x3 convolution (direct) and a 1x1 output layer.
fn network() -> Graph {
    let mut rng = Rng(0x3a9d_1c57);
    let (mut g, x) = graph(20, 13, 13);
    let a = conv(&mut g, &mut rng, "a", x, 24, 3, 1, 1);
    let a = relu(&mut g, "a_relu", a);
    let c = conv(&mut g, &mut rng, "c", a, 24, 3, 1, 1);
    let c = relu(&mut g, "c_relu", c);
    let d = conv(&mut g, &mut rng, "d", c, 24, 3, 1, 1);
    let sd = g.shape(d);
    let sum = add_node(
        &mut g,
        "sum",
        Op::Eltwise {
            kind: EltwiseKind::Sum,
            coeffs: vec![],
        },
        &[d, a],
        sd,
    );
    let b = conv(&mut g, &mut rng, "b", sum, 24, 3, 1, 0);
    let sb = g.shape(b);
    let p = add_node(
        &mut g,
        "pool",
        Op::Pool(Pool {
            kind: PoolKind::Max,
            window: Window {
                kernel: [2, 2],
                stride: [2, 2],
                pad: [0; 4],
                dilation: [1, 1],
            },
            ceil_mode: false,
            count_include_pad: true,
        }),
        &[b],
        Shape::new(1, sb.c, sb.h / 2, sb.w / 2),
    );
    let e = conv(&mut g, &mut rng, "e", p, 32, 3, 2, 1);
    assert_eq!(g.shape(e).h, 3);
    let f = conv(&mut g, &mut rng, "f", e, 8, 1, 1, 0);
    g.outputs.push(f);
    g
}

/// The layers compiled in Winograd mode.
fn winograd_layers(g: &Graph, precision: Precision) -> Vec<String> {
    let extra = Extra {
        winograd: true,
        ..Extra::default()
    };
    compile_with(g, "nv_full", precision, extra)
        .program
        .ops
        .iter()
        .filter(|op| matches!(&op.kind, HwOpKind::Conv(c) if c.winograd.is_some()))
        .map(|op| op.layers[0].clone())
        .collect()
}

#[test]
fn winograd_takes_the_3x3_stride_1_layers_with_outputs_of_their_own() {
    let g = network();
    // "a" and "c" with their ReLU fused, "d" without its sum, "b"; not "e" (stride 2).
    for p in [Precision::Fp16, Precision::Int8] {
        assert_eq!(winograd_layers(&g, p), ["a", "c", "d", "b"], "{p:?}");
    }
}

#[test]
fn winograd_fp16_matches_the_reference() {
    let g = network();
    let input = Rng(11).vec(g.shape(g.inputs[0]).elements(), 1.0);
    let extra = Extra {
        winograd: true,
        ..Extra::default()
    };
    let (got, want) = run_fp16_opts(&g, "nv_full", &input, extra);
    let err = max_rel_err(&got, &want);
    let (direct, _) = run_fp16(&g, "nv_full", &input);
    let direct_err = max_rel_err(&direct, &want);
    eprintln!("fp16: Winograd error {err:.2e}, direct {direct_err:.2e}");
    assert!(err <= 2e-3, "Winograd fp16 error {err}");
}

#[test]
fn winograd_int8_matches_the_reference() {
    let g = network();
    let input = Rng(13).vec(g.shape(g.inputs[0]).elements(), 1.0);
    for per_filter in [true, false] {
        let extra = Extra {
            winograd: true,
            ..Extra::default()
        };
        let (got, want) = run_int8_opts(&g, "nv_full", &input, per_filter, extra);
        let err = max_rel_err(&got, &want);
        let (direct, _) = run_int8(&g, "nv_full", &input, per_filter);
        let direct_err = max_rel_err(&direct, &want);
        eprintln!(
            "int8 per-filter={per_filter}: Winograd error {err:.2e}, direct {direct_err:.2e}"
        );
        assert!(err <= 0.03, "Winograd int8 error {err}");
    }
}

#[test]
fn small_outputs_network_outputs_and_builds_without_winograd_stay_direct() {
    let mut rng = Rng(5);
    // A 4x4 output (padded to 4, below the hardware's 8) and a network output.
    let (mut g, x) = graph(16, 6, 6);
    let a = conv(&mut g, &mut rng, "a", x, 16, 3, 1, 0);
    let b = conv(&mut g, &mut rng, "b", a, 16, 3, 1, 1);
    g.outputs.push(b);
    assert!(winograd_layers(&g, Precision::Fp16).is_empty());
    // nv_small has no Winograd (and no fp16): the option changes nothing.
    let extra = Extra {
        winograd: true,
        ..Extra::default()
    };
    let c = compile_with(&network(), "nv_small", Precision::Int8, extra);
    assert!(c
        .program
        .ops
        .iter()
        .all(|op| !matches!(&op.kind, HwOpKind::Conv(c) if c.winograd.is_some())));
}
