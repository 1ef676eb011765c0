//! Every layer type, in tiny networks compiled for nv_full in fp16, run on the virtual
//! platform and compared element-wise with the compiler's CPU fp32 reference.
//!
//! Tolerances are relative to the largest reference value of the output: fp16 storage and
//! arithmetic give about 1e-3 per op; LUT-based functions (sigmoid, tanh, LRN) add their
//! interpolation error (documented in `lut.rs`).

mod common;

use common::*;
use nvdla_compiler::ir::*;

const CONV_TOL: f32 = 4e-3;
const LUT_TOL: f32 = 6e-3;

#[allow(clippy::too_many_arguments)]
fn conv(
    rng: &mut Rng,
    cin: usize,
    k: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 4],
    dilation: [usize; 2],
    groups: usize,
) -> Op {
    let n = k * (cin / groups) * kernel[0] * kernel[1];
    let scale = 1.0 / ((cin / groups * kernel[0] * kernel[1]) as f32).sqrt();
    Op::Conv(Conv {
        window: Window {
            kernel,
            stride,
            pad,
            dilation,
        },
        groups,
        out_channels: k,
        weight: Weights::new(
            vec![k, cin / groups, kernel[0], kernel[1]],
            rng.vec(n, scale),
        )
        .unwrap(),
        bias: Some(Weights::vector(rng.vec(k, 0.5))),
    })
}

fn out_size(i: usize, k: usize, s: usize, p0: usize, p1: usize, d: usize) -> usize {
    (i + p0 + p1 - (d * (k - 1) + 1)) / s + 1
}

/// int8 on nv_small (X1/X2 only, 8-byte atoms) and nv_full, per-filter and per-kernel:
/// errors relative to the largest reference value; the tolerance covers int8 steps of the
/// input, weights and output (about 1/127 each) through a few layers.
fn check_int8(g: &Graph, tol: f32, what: &str) {
    check_int8_on(g, tol, what, &["nv_small", "nv_full"]);
}

fn check_int8_on(g: &Graph, tol: f32, what: &str, configs: &[&str]) {
    let mut rng = Rng(0x51ed_270b_2a3f_91c5);
    let s = g.shape(g.inputs[0]);
    let input = rng.vec(s.elements(), 1.0);
    for &config in configs {
        for per_filter in [true, false] {
            let (got, want) = run_int8(g, config, &input, per_filter);
            let err = max_rel_err(&got, &want);
            eprintln!("{what} int8 {config} per-filter={per_filter}: max relative error {err:.2e}");
            assert!(err <= tol, "{what} int8 {config}: error {err} above {tol}");
        }
    }
}

const INT8_TOL: f32 = 0.04;

fn check(g: &Graph, tol: f32, what: &str) {
    g.check().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let s = g.shape(g.inputs[0]);
    let input = rng.vec(s.elements(), 1.0);
    let (got, want) = run_fp16(g, "nv_full", &input);
    let err = max_rel_err(&got, &want);
    eprintln!("{what}: max relative error {err:.2e}");
    assert!(err <= tol, "{what}: error {err} above {tol}");
}

/// A convolution layer from `x` (`cin` channels, h x w) with the given window.
#[allow(clippy::too_many_arguments)]
fn add_conv(
    g: &mut Graph,
    rng: &mut Rng,
    name: &str,
    x: TensorId,
    k: usize,
    kernel: [usize; 2],
    stride: [usize; 2],
    pad: [usize; 4],
    dilation: [usize; 2],
    groups: usize,
) -> TensorId {
    let s = g.shape(x);
    let oh = out_size(s.h, kernel[0], stride[0], pad[0], pad[2], dilation[0]);
    let ow = out_size(s.w, kernel[1], stride[1], pad[1], pad[3], dilation[1]);
    let op = conv(rng, s.c, k, kernel, stride, pad, dilation, groups);
    add_node(g, name, op, &[x], Shape::new(1, k, oh, ow))
}

fn finish(g: &mut Graph, t: TensorId) {
    g.outputs.push(t);
}

#[test]
fn convolution_padding_bias() {
    let mut rng = Rng(1);
    let (mut g, x) = graph(8, 9, 9);
    let y = add_conv(
        &mut g,
        &mut rng,
        "conv",
        x,
        16,
        [3, 3],
        [1, 1],
        [1, 1, 1, 1],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "conv 3x3 pad 1");
    check_int8(&g, INT8_TOL, "conv 3x3 pad 1");
}

#[test]
fn convolution_stride_dilation_asymmetric_padding() {
    let mut rng = Rng(2);
    let (mut g, x) = graph(5, 13, 11);
    let y = add_conv(
        &mut g,
        &mut rng,
        "conv",
        x,
        7,
        [3, 2],
        [2, 1],
        [2, 0, 1, 1],
        [2, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "conv stride 2x1 dilation 2x1");
    check_int8(&g, INT8_TOL, "conv stride 2x1 dilation 2x1");
}

#[test]
fn convolution_strides_above_8() {
    // ViT's patch embedding (16x16 at stride 16), and strides that take two PDP picks
    // (12 = 6 x 2 beside 20 = 5 x 4, with padding; 256 = 8 x 16 x 2): the core convolves at
    // stride 8 or less and PDP keeps every few outputs.
    let mut rng = Rng(21);
    let (mut g, x) = graph(3, 64, 48);
    let y = add_conv(
        &mut g,
        &mut rng,
        "patches",
        x,
        24,
        [16, 16],
        [16, 16],
        [0; 4],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "conv 16x16 stride 16");
    check_int8(&g, INT8_TOL, "conv 16x16 stride 16");

    let (mut g, x) = graph(4, 77, 90);
    let y = add_conv(
        &mut g,
        &mut rng,
        "odd",
        x,
        9,
        [5, 7],
        [12, 20],
        [2, 3, 1, 0],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "conv stride 12x20");
    check_int8(&g, INT8_TOL, "conv stride 12x20");

    // An audio front end's 1-D stride of 256: stride 8, then picks of 16 and 2.
    let (mut g, x) = graph(2, 2048, 1);
    let y = add_conv(
        &mut g,
        &mut rng,
        "frames",
        x,
        16,
        [32, 1],
        [256, 1],
        [0; 4],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "conv 32x1 stride 256");
    check_int8(&g, INT8_TOL, "conv 32x1 stride 256");
}

#[test]
fn convolution_kernels_above_32() {
    // Partial sums over slices of at most 32x32 taps: 70x1 padded (slices of 24, 23, 23
    // taps, the first padded, the others windows of the input), 40x36 dilated and strided
    // with padding on every side, and an STFT-like 1x256 at stride 128 (a stride above 8
    // too: stride 8 and a PDP pick of 16).
    // int8: each slice's running sum is stored in int8 steps of its own scale (twice the
    // output's at least), so the error grows with the slices (8 for the 1x256).
    const SLICED_INT8_TOL: f32 = 0.05;
    let mut rng = Rng(23);
    let (mut g, x) = graph(6, 100, 7);
    let y = add_conv(
        &mut g,
        &mut rng,
        "tall",
        x,
        5,
        [70, 1],
        [1, 1],
        [5, 0, 4, 0],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "conv 70x1");
    check_int8(&g, SLICED_INT8_TOL, "conv 70x1");

    let (mut g, x) = graph(5, 90, 80);
    let y = add_conv(
        &mut g,
        &mut rng,
        "wide",
        x,
        9,
        [40, 36],
        [3, 2],
        [7, 3, 2, 31],
        [2, 2],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "conv 40x36 dilated 2");
    check_int8(&g, SLICED_INT8_TOL, "conv 40x36 dilated 2");

    let (mut g, x) = graph(1, 1, 2048);
    let y = add_conv(
        &mut g,
        &mut rng,
        "stft",
        x,
        32,
        [1, 256],
        [1, 128],
        [0; 4],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "conv 1x256 stride 128");
    check_int8(&g, SLICED_INT8_TOL, "conv 1x256 stride 128");
}

#[test]
fn convolution_of_long_lines() {
    // One line wider than a cube's 8 192 pixels (a waveform as TensorFlow's conv1d has
    // it), and one of 44 100 samples that does not fit the CBUF either: read as columns
    // of one pixel per line, in chunks of rows.
    let mut rng = Rng(29);
    let (mut g, x) = graph(2, 1, 20000);
    let y = add_conv(
        &mut g,
        &mut rng,
        "line",
        x,
        8,
        [1, 7],
        [1, 3],
        [0, 3, 0, 3],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "conv 1x7 over 20 000 pixels");
    check_int8(&g, INT8_TOL, "conv 1x7 over 20 000 pixels");

    let (mut g, x) = graph(1, 1, 44100);
    let y = add_conv(
        &mut g,
        &mut rng,
        "audio",
        x,
        16,
        [1, 16],
        [1, 8],
        [0; 4],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "conv 1x16 stride 8 over 44 100 samples");
    check_int8(&g, INT8_TOL, "conv 1x16 stride 8 over 44 100 samples");
}

#[test]
fn convolution_many_channels_and_kernels() {
    let mut rng = Rng(3);
    let (mut g, x) = graph(70, 6, 6);
    let y = add_conv(
        &mut g,
        &mut rng,
        "conv",
        x,
        40,
        [3, 3],
        [1, 1],
        [0; 4],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "conv 70 channels 40 kernels");
}

#[test]
fn grouped_and_depthwise_convolution() {
    let mut rng = Rng(4);
    let (mut g, x) = graph(8, 7, 7);
    let a = add_conv(
        &mut g,
        &mut rng,
        "grouped",
        x,
        12,
        [3, 3],
        [1, 1],
        [1; 4],
        [1, 1],
        2,
    );
    let b = add_conv(
        &mut g,
        &mut rng,
        "depthwise",
        a,
        12,
        [3, 3],
        [1, 1],
        [1; 4],
        [1, 1],
        12,
    );
    finish(&mut g, b);
    check(&g, CONV_TOL, "grouped + depthwise conv");
    check_int8(&g, INT8_TOL, "grouped + depthwise conv");
}

#[test]
fn fully_connected_after_flatten() {
    let mut rng = Rng(5);
    let (mut g, x) = graph(6, 4, 4);
    let f = add_node(
        &mut g,
        "flatten",
        Op::Flatten,
        &[x],
        Shape::new(1, 96, 1, 1),
    );
    let fc = Op::FullyConnected {
        weight: Weights::new(vec![30, 96], rng.vec(30 * 96, 0.1)).unwrap(),
        bias: Some(Weights::vector(rng.vec(30, 0.5))),
    };
    let y = add_node(&mut g, "fc", fc, &[f], Shape::new(1, 30, 1, 1));
    let r = add_node(
        &mut g,
        "relu",
        Op::Activation(Activation::Relu { slope: 0.0 }),
        &[y],
        Shape::new(1, 30, 1, 1),
    );
    finish(&mut g, r);
    check(&g, CONV_TOL, "flatten + fully connected + relu");
    check_int8(&g, INT8_TOL, "flatten + fully connected + relu");
}

fn pool(kind: PoolKind, k: usize, s: usize, pad: usize, ceil: bool) -> Op {
    pool_op(kind, k, s, pad, ceil)
}

#[test]
fn max_pooling_ceil_mode() {
    let (mut g, x) = graph(20, 9, 9);
    // Caffe: ceil((9 - 3) / 2) + 1 = 4.
    let y = add_node(
        &mut g,
        "pool",
        pool(PoolKind::Max, 3, 2, 0, true),
        &[x],
        Shape::new(1, 20, 4, 4),
    );
    finish(&mut g, y);
    check(&g, 1e-3, "max pool 3x3/2 ceil");
    check_int8(&g, INT8_TOL, "max pool 3x3/2 ceil");
}

#[test]
fn average_pooling_with_padding() {
    let (mut g, x) = graph(16, 8, 8);
    // (8 + 2 - 3) / 1 + 1 = 8.
    let y = add_node(
        &mut g,
        "pool",
        pool(PoolKind::Avg, 3, 1, 1, false),
        &[x],
        Shape::new(1, 16, 8, 8),
    );
    finish(&mut g, y);
    check(&g, 2e-3, "average pool 3x3/1 pad 1");
    check_int8(&g, INT8_TOL, "average pool 3x3/1 pad 1");
}

#[test]
fn global_average_pooling() {
    let (mut g, x) = graph(24, 7, 7);
    let y = add_node(
        &mut g,
        "gap",
        pool(PoolKind::Avg, 7, 1, 0, false),
        &[x],
        Shape::new(1, 24, 1, 1),
    );
    finish(&mut g, y);
    check(&g, 2e-3, "global average pool 7x7");
}

#[test]
fn standalone_activations_after_pooling() {
    let mut rng = Rng(6);
    let (mut g, x) = graph(16, 6, 6);
    let p = add_node(
        &mut g,
        "pool",
        pool(PoolKind::Max, 2, 2, 0, false),
        &[x],
        Shape::new(1, 16, 3, 3),
    );
    let l = add_node(
        &mut g,
        "leaky",
        Op::Activation(Activation::Relu { slope: 0.1 }),
        &[p],
        Shape::new(1, 16, 3, 3),
    );
    let pr = Op::Activation(Activation::PRelu {
        slopes: Weights::vector(rng.vec(16, 0.5)),
    });
    let y = add_node(&mut g, "prelu", pr, &[l], Shape::new(1, 16, 3, 3));
    finish(&mut g, y);
    check(&g, 2e-3, "leaky relu + prelu on SDP");
    check_int8(&g, INT8_TOL, "leaky relu + prelu on SDP");
}

#[test]
fn clip_relu6_and_general_bounds() {
    let mut rng = Rng(16);
    let (mut g, x) = graph(8, 5, 5);
    let c = add_conv(
        &mut g,
        &mut rng,
        "conv",
        x,
        16,
        [3, 3],
        [1, 1],
        [1; 4],
        [1, 1],
        1,
    );
    let r6 = add_node(
        &mut g,
        "relu6",
        Op::Activation(Activation::Clip { lo: 0.0, hi: 0.6 }),
        &[c],
        Shape::new(1, 16, 5, 5),
    );
    let p = add_node(
        &mut g,
        "pool",
        pool(PoolKind::Max, 1, 1, 0, false),
        &[r6],
        Shape::new(1, 16, 5, 5),
    );
    let y = add_node(
        &mut g,
        "clip",
        Op::Activation(Activation::Clip { lo: 0.1, hi: 0.4 }),
        &[p],
        Shape::new(1, 16, 5, 5),
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "relu6 (fused) + clip (SDP from memory)");
    check_int8(&g, INT8_TOL, "relu6 + clip");
}

/// A 1x1 convolution `conv` of `k` kernels from `x`.
fn conv_1x1(g: &mut Graph, rng: &mut Rng, x: TensorId, k: usize) -> TensorId {
    add_conv(g, rng, "conv", x, k, [1, 1], [1, 1], [0; 4], [1, 1], 1)
}

/// Node `name` (`op` on `x`) whose output has `x`'s shape.
fn same_shape(g: &mut Graph, name: &str, op: Op, x: TensorId) -> TensorId {
    let s = g.shape(x);
    add_node(g, name, op, &[x], s)
}

#[test]
fn sigmoid_and_tanh() {
    let mut rng = Rng(7);
    let (mut g, x) = graph(8, 5, 5);
    let c = conv_1x1(&mut g, &mut rng, x, 8);
    let s = same_shape(&mut g, "sigmoid", Op::Activation(Activation::Sigmoid), c);
    let p = same_shape(&mut g, "pool", pool(PoolKind::Max, 1, 1, 0, false), s);
    let t = same_shape(&mut g, "tanh", Op::Activation(Activation::Tanh), p);
    finish(&mut g, t);
    check(&g, LUT_TOL, "sigmoid (fused) + tanh (SDP from memory)");
    // nv_small has no LUT; nv_full and nv_large do.
    check_int8_on(&g, INT8_TOL, "sigmoid + tanh", &["nv_full", "nv_large"]);
}

#[test]
fn erf_on_the_lut() {
    // GELU's erf (PP-OCRv6, vision transformers): fused after a convolution, and from
    // memory after a pooling and a scale by 3 (inputs beyond [-4, 4], where it is flat).
    let mut rng = Rng(11);
    let (mut g, x) = graph(8, 5, 5);
    let c = conv_1x1(&mut g, &mut rng, x, 8);
    let e = same_shape(&mut g, "erf", Op::Activation(Activation::Erf), c);
    let p = same_shape(&mut g, "pool", pool(PoolKind::Max, 1, 1, 0, false), c);
    let scale = Op::ChannelAffine {
        scale: Some(Weights::vector(vec![3.0])),
        bias: None,
    };
    let scaled = same_shape(&mut g, "scale", scale, p);
    let e2 = same_shape(&mut g, "erf2", Op::Activation(Activation::Erf), scaled);
    finish(&mut g, e);
    finish(&mut g, e2);
    check(&g, LUT_TOL, "erf (fused, and after a pooling)");
    check_int8_on(&g, INT8_TOL, "erf", &["nv_full"]);
}

#[test]
fn softmax_on_the_cpu() {
    let mut rng = Rng(8);
    let (mut g, x) = graph(12, 3, 3);
    let fc = Op::FullyConnected {
        weight: Weights::new(vec![10, 108], rng.vec(1080, 0.3)).unwrap(),
        bias: None,
    };
    let y = add_node(&mut g, "fc", fc, &[x], Shape::new(1, 10, 1, 1));
    let s = add_node(&mut g, "prob", Op::Softmax, &[y], Shape::new(1, 10, 1, 1));
    finish(&mut g, s);
    check(&g, 2e-3, "fully connected + softmax");
    check_int8(&g, INT8_TOL, "fully connected + softmax");
}

#[test]
fn lrn_across_channels() {
    let (mut g, x) = graph(20, 4, 4);
    let op = Op::Lrn {
        size: 5,
        alpha: 1e-4 * 1000.0,
        beta: 0.75,
        k: 1.0,
    };
    let y = add_node(&mut g, "norm", op, &[x], Shape::new(1, 20, 4, 4));
    finish(&mut g, y);
    check(&g, LUT_TOL, "LRN 5");
    check_int8(&g, INT8_TOL, "LRN 5");
}

#[test]
fn lrn_strong_normalisation() {
    // alpha 1: sums of squares around the knee, where one LUT entry per octave errs by
    // several percent; the linear table takes them.
    let (mut g, x) = graph(16, 4, 4);
    let op = Op::Lrn {
        size: 5,
        alpha: 1.0,
        beta: 0.75,
        k: 1.0,
    };
    let y = add_node(&mut g, "norm", op, &[x], Shape::new(1, 16, 4, 4));
    finish(&mut g, y);
    check(&g, LUT_TOL, "LRN 5, alpha 1");
    check_int8(&g, INT8_TOL, "LRN 5, alpha 1");
    let mut g2 = g.clone();
    g2.nodes[0].op = Op::Lrn {
        size: 3,
        alpha: 1e-4,
        beta: 0.75,
        k: 2.0,
    };
    check(&g2, LUT_TOL, "LRN 3, alpha 1e-4, k 2");
    check_int8(&g2, INT8_TOL, "LRN 3, alpha 1e-4, k 2");
}

#[test]
fn batchnorm_and_scale_fold_and_standalone() {
    let mut rng = Rng(9);
    let (mut g, x) = graph(16, 6, 6);
    let c = add_conv(
        &mut g,
        &mut rng,
        "conv",
        x,
        16,
        [3, 3],
        [1, 1],
        [1; 4],
        [1, 1],
        1,
    );
    let bn = |rng: &mut Rng| Op::BatchNorm {
        mean: Weights::vector(rng.vec(16, 0.5)),
        var: Weights::vector(rng.vec(16, 0.5).iter().map(|v| v.abs() + 0.5).collect()),
        eps: 1e-5,
    };
    let sc = |rng: &mut Rng| Op::ChannelAffine {
        scale: Some(Weights::vector(rng.vec(16, 1.0))),
        bias: Some(Weights::vector(rng.vec(16, 1.0))),
    };
    let b1 = add_node(&mut g, "bn1", bn(&mut rng), &[c], Shape::new(1, 16, 6, 6));
    let s1 = add_node(
        &mut g,
        "scale1",
        sc(&mut rng),
        &[b1],
        Shape::new(1, 16, 6, 6),
    );
    let p = add_node(
        &mut g,
        "pool",
        pool(PoolKind::Max, 2, 2, 0, false),
        &[s1],
        Shape::new(1, 16, 3, 3),
    );
    let b2 = add_node(&mut g, "bn2", bn(&mut rng), &[p], Shape::new(1, 16, 3, 3));
    let s2 = add_node(
        &mut g,
        "scale2",
        sc(&mut rng),
        &[b2],
        Shape::new(1, 16, 3, 3),
    );
    let r = add_node(
        &mut g,
        "relu",
        Op::Activation(Activation::Relu { slope: 0.0 }),
        &[s2],
        Shape::new(1, 16, 3, 3),
    );
    finish(&mut g, r);
    check(&g, CONV_TOL, "batchnorm + scale, folded and on SDP");
    check_int8(&g, INT8_TOL, "batchnorm + scale, folded and on SDP");
}

#[test]
fn power_affine() {
    let (mut g, x) = graph(8, 4, 4);
    let op = Op::Power {
        power: 1.0,
        scale: 0.5,
        shift: -0.25,
    };
    let y = add_node(&mut g, "power", op, &[x], Shape::new(1, 8, 4, 4));
    finish(&mut g, y);
    check(&g, 2e-3, "power 1 (scale, shift)");
    check_int8(&g, INT8_TOL, "power 1 (scale, shift)");
}

fn eltwise_net(kind: EltwiseKind, coeffs: Vec<f32>, inputs: usize) -> Graph {
    let mut rng = Rng(10);
    let (mut g, x) = graph(16, 5, 5);
    let branches: Vec<TensorId> = (0..inputs)
        .map(|i| {
            add_conv(
                &mut g,
                &mut rng,
                &format!("b{i}"),
                x,
                16,
                [3, 3],
                [1, 1],
                [1; 4],
                [1, 1],
                1,
            )
        })
        .collect();
    let e = add_node(
        &mut g,
        "eltwise",
        Op::Eltwise { kind, coeffs },
        &branches,
        Shape::new(1, 16, 5, 5),
    );
    finish(&mut g, e);
    g
}

#[test]
fn eltwise_sum_prod_max() {
    check(
        &eltwise_net(EltwiseKind::Sum, vec![], 2),
        CONV_TOL,
        "eltwise sum",
    );
    check(
        &eltwise_net(EltwiseKind::Prod, vec![], 2),
        CONV_TOL,
        "eltwise prod",
    );
    check(
        &eltwise_net(EltwiseKind::Max, vec![], 2),
        CONV_TOL,
        "eltwise max",
    );
    check(
        &eltwise_net(EltwiseKind::Sum, vec![0.5, -2.0], 2),
        CONV_TOL,
        "eltwise sum with coefficients",
    );
}

/// Sums with coefficients on a build whose SDP has X1 and X2 only (nv_small): the SDP adds
/// its operand unscaled, so both coefficients need a factor before and after the sum. fp16
/// puts a unit coefficient's input second or scales in another operation; int8 folds the
/// factor after the sum into the output converter.
#[test]
fn eltwise_coefficients_on_a_build_without_the_y_stage() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for (coeffs, inputs) in [
        (vec![0.5, -2.0], 2),
        (vec![1.0, 3.0], 2),
        (vec![-0.5, 1.0], 2),
        (vec![0.5, -1.0, 2.0], 3),
    ] {
        let g = eltwise_net(EltwiseKind::Sum, coeffs.clone(), inputs);
        let input = rng.vec(g.shape(g.inputs[0]).elements(), 1.0);
        let (got, want) = run_fp16(&g, "nv_small", &input);
        let err = max_rel_err(&got, &want);
        eprintln!("sum {coeffs:?} fp16 nv_small: max relative error {err:.2e}");
        assert!(err <= CONV_TOL, "sum {coeffs:?} fp16 nv_small: error {err}");
        check_int8_on(&g, INT8_TOL, &format!("sum {coeffs:?}"), &["nv_small"]);
    }
}

#[test]
fn eltwise_with_three_inputs() {
    check(
        &eltwise_net(EltwiseKind::Sum, vec![], 3),
        CONV_TOL,
        "eltwise sum of 3",
    );
    check(
        &eltwise_net(EltwiseKind::Max, vec![], 3),
        CONV_TOL,
        "eltwise max of 3",
    );
}

#[test]
fn concat_without_copies() {
    let mut rng = Rng(11);
    let (mut g, x) = graph(8, 6, 6);
    let a = add_conv(
        &mut g,
        &mut rng,
        "a",
        x,
        16,
        [1, 1],
        [1, 1],
        [0; 4],
        [1, 1],
        1,
    );
    let b = add_conv(
        &mut g,
        &mut rng,
        "b",
        x,
        32,
        [3, 3],
        [1, 1],
        [1; 4],
        [1, 1],
        1,
    );
    let c = add_node(
        &mut g,
        "concat",
        Op::Concat,
        &[a, b],
        Shape::new(1, 48, 6, 6),
    );
    let y = add_conv(
        &mut g,
        &mut rng,
        "after",
        c,
        8,
        [1, 1],
        [1, 1],
        [0; 4],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "concat of two convolutions");
    check_int8(&g, INT8_TOL, "concat of two convolutions");
}

#[allow(clippy::too_many_arguments)]
fn add_deconv(
    g: &mut Graph,
    rng: &mut Rng,
    name: &str,
    x: TensorId,
    k: usize,
    kernel: usize,
    stride: usize,
    pad: usize,
    groups: usize,
) -> TensorId {
    let s = g.shape(x);
    let o = (s.h - 1) * stride + kernel - 2 * pad;
    let ow = (s.w - 1) * stride + kernel - 2 * pad;
    let n = s.c * (k / groups) * kernel * kernel;
    let op = Op::Deconv(Conv {
        window: Window {
            kernel: [kernel, kernel],
            stride: [stride, stride],
            pad: [pad; 4],
            dilation: [1, 1],
        },
        groups,
        out_channels: k,
        weight: Weights::new(vec![s.c, k / groups, kernel, kernel], rng.vec(n, 0.3)).unwrap(),
        bias: Some(Weights::vector(rng.vec(k, 0.5))),
    });
    add_node(g, name, op, &[x], Shape::new(1, k, o, ow))
}

#[test]
fn deconvolution_stride_1() {
    let mut rng = Rng(12);
    let (mut g, x) = graph(6, 5, 5);
    let y = add_deconv(&mut g, &mut rng, "deconv", x, 10, 3, 1, 1, 1);
    finish(&mut g, y);
    check(&g, CONV_TOL, "deconvolution 3x3 stride 1 pad 1");
}

#[test]
fn deconvolution_stride_2_with_rubik() {
    let mut rng = Rng(13);
    let (mut g, x) = graph(8, 4, 5);
    // 4x4 kernel, stride 2, pad 1: the usual 2x upsampling.
    let y = add_deconv(&mut g, &mut rng, "up", x, 12, 4, 2, 1, 1);
    let r = add_node(
        &mut g,
        "relu",
        Op::Activation(Activation::Relu { slope: 0.0 }),
        &[y],
        Shape::new(1, 12, 8, 10),
    );
    finish(&mut g, r);
    check(&g, CONV_TOL, "deconvolution 4x4 stride 2 pad 1 + relu");
}

#[test]
fn deconvolution_stride_2_without_rubik() {
    // nv_small has no RUBIK: the phases are interleaved by SDP copies through strided
    // views. 12 channels over 4 lines copy per atom of channels (2 copies a phase, the
    // phases being 5 lines with the kernel's overlap); 40 channels over 2 lines copy per
    // line of the phases (3 copies a phase).
    for (c, h, w, k) in [(8, 4, 5, 12), (6, 2, 7, 40)] {
        let mut rng = Rng(16);
        let (mut g, x) = graph(c, h, w);
        let y = add_deconv(&mut g, &mut rng, "up", x, k, 4, 2, 1, 1);
        finish(&mut g, y);
        check_int8_on(
            &g,
            INT8_TOL,
            "deconvolution 4x4 stride 2 pad 1",
            &["nv_small"],
        );
    }
}

#[test]
fn nearest_upsampling_without_rubik() {
    // A depthwise deconvolution of ones as large as its stride (ONNX's nearest Resize and
    // Upsample): on nv_small the input itself is copied into every phase, no convolution.
    // Per atom of channels (16 channels over 3 lines; 20 over 6 at a factor 3), and per
    // line (40 channels over 3 lines).
    for (c, h, w, f) in [(16, 3, 5, 2), (20, 6, 4, 3), (40, 3, 5, 2)] {
        let (mut g, x) = graph(c, h, w);
        let op = Op::Deconv(Conv {
            window: Window {
                kernel: [f, f],
                stride: [f, f],
                ..Window::POINTWISE
            },
            groups: c,
            out_channels: c,
            weight: Weights::new(vec![c, 1, f, f], vec![1.0; c * f * f]).unwrap(),
            bias: None,
        });
        let y = add_node(&mut g, "up", op, &[x], Shape::new(1, c, h * f, w * f));
        let r = add_node(
            &mut g,
            "relu",
            Op::Activation(Activation::Relu { slope: 0.0 }),
            &[y],
            Shape::new(1, c, h * f, w * f),
        );
        finish(&mut g, r);
        check_int8_on(&g, INT8_TOL, "nearest upsampling", &["nv_small"]);
        let input = vec![1.0; c * h * w];
        let (_, _, compiled) =
            run_int8_scaled(&g, "nv_small", &input, false, Extra::default(), false);
        // No convolution: f x f phases of copies.
        assert_eq!(
            compiled.program.count(nvdla_compiler::engine::Engine::Conv),
            0
        );
    }
}

#[test]
fn edge_padding() {
    // SDP copies of the border columns and lines (ONNX Pad in edge mode, and the first
    // step of a linear resize), between two convolutions.
    let mut rng = Rng(17);
    let (mut g, x) = graph(12, 5, 6);
    let c = add_conv(
        &mut g,
        &mut rng,
        "c1",
        x,
        12,
        [1, 1],
        [1, 1],
        [0; 4],
        [1, 1],
        1,
    );
    let p = add_node(
        &mut g,
        "pad",
        Op::EdgePad { pads: [2, 1, 1, 3] },
        &[c],
        Shape::new(1, 12, 8, 10),
    );
    let y = add_conv(
        &mut g,
        &mut rng,
        "c2",
        p,
        8,
        [3, 3],
        [1, 1],
        [0; 4],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, CONV_TOL, "edge padding");
    check_int8_on(&g, INT8_TOL, "edge padding", &["nv_small"]);
}

#[test]
fn bilinear_upsampling() {
    // A linear resize by 2 (half_pixel) as the ONNX front end builds it: an edge padding
    // of one pixel, then a depthwise deconvolution whose 6x6 kernel is the outer product
    // of the taps [0, 1/4, 3/4, 3/4, 1/4, 0], stride 2, cropped by 4. 40 channels: the
    // phases run per part of the groups (3x3 phase kernels).
    let taps = [0.0, 0.25, 0.75, 0.75, 0.25, 0.0];
    let (c, h, w) = (40, 4, 5);
    let (mut g, x) = graph(c, h, w);
    let p = add_node(
        &mut g,
        "edge",
        Op::EdgePad { pads: [1; 4] },
        &[x],
        Shape::new(1, c, h + 2, w + 2),
    );
    let kernel: Vec<f32> = taps
        .iter()
        .flat_map(|a| taps.iter().map(move |b| a * b))
        .collect();
    let op = Op::Deconv(Conv {
        window: Window {
            kernel: [6, 6],
            stride: [2, 2],
            pad: [4; 4],
            dilation: [1, 1],
        },
        groups: c,
        out_channels: c,
        weight: Weights::new(vec![c, 1, 6, 6], kernel.repeat(c)).unwrap(),
        bias: None,
    });
    let y = add_node(&mut g, "up", op, &[p], Shape::new(1, c, 2 * h, 2 * w));
    finish(&mut g, y);
    check(&g, CONV_TOL, "bilinear upsampling");
    check_int8_on(&g, INT8_TOL, "bilinear upsampling", &["nv_small"]);
}

#[test]
fn grouped_deconvolution_as_output() {
    let mut rng = Rng(14);
    let (mut g, x) = graph(16, 3, 3);
    // Depthwise (bilinear-style) 3x stride-2 upsampling, cropped, as the network output.
    let y = add_deconv(&mut g, &mut rng, "up", x, 16, 3, 2, 1, 16);
    finish(&mut g, y);
    check(
        &g,
        CONV_TOL,
        "grouped deconvolution stride 2 as network output",
    );
}

#[test]
fn convolution_split_by_rows_for_the_cbuf() {
    let mut rng = Rng(15);
    // 64 fp16 channels of 96 pixels take 96 CBUF entries a line: 96 lines are 36 banks of
    // nv_full's 16; the convolution runs in row chunks with overlapping halos.
    let (mut g, x) = graph(64, 96, 96);
    let c = add_conv(
        &mut g,
        &mut rng,
        "big",
        x,
        16,
        [3, 3],
        [2, 2],
        [1; 4],
        [1, 1],
        1,
    );
    let y = add_conv(
        &mut g,
        &mut rng,
        "next",
        c,
        16,
        [5, 5],
        [1, 1],
        [2; 4],
        [1, 1],
        1,
    );
    let s = g.shape(y);
    let e = add_node(
        &mut g,
        "sum",
        Op::Eltwise {
            kind: EltwiseKind::Sum,
            coeffs: vec![],
        },
        &[c, y],
        s,
    );
    finish(&mut g, e);
    check(&g, CONV_TOL, "convolution split by rows");
    check_int8(&g, INT8_TOL, "convolution split by rows");
}

#[test]
fn global_pooling_larger_than_the_pdp_window() {
    // 13x13 (SqueezeNet's last pooling): 7x7 windows over 14x14 (zero padded), then 2x2.
    let (mut g, x) = graph(40, 13, 13);
    let a = add_node(
        &mut g,
        "gap",
        pool(PoolKind::Avg, 13, 1, 0, false),
        &[x],
        Shape::new(1, 40, 1, 1),
    );
    finish(&mut g, a);
    check(&g, 2e-3, "global average pool 13x13");
    let (mut g, x) = graph(24, 10, 9);
    let op = Op::Pool(Pool {
        kind: PoolKind::Max,
        window: Window {
            kernel: [10, 9],
            stride: [1, 1],
            pad: [0; 4],
            dilation: [1, 1],
        },
        ceil_mode: false,
        count_include_pad: true,
    });
    let m = add_node(&mut g, "gmp", op, &[x], Shape::new(1, 24, 1, 1));
    finish(&mut g, m);
    check(&g, 1e-3, "global max pool 10x9");
    // Beyond 64 pixels per axis: three passes (80: 8, 2, 5; 96: 8, 2, 6 beside 12: 2, 1, 6),
    // as PP-OCR's squeeze-and-excitation pools 80x80 and 12x96 maps.
    for (h, w) in [(80, 80), (12, 96)] {
        for kind in [PoolKind::Avg, PoolKind::Max] {
            let (mut g, x) = graph(16, h, w);
            let op = Op::Pool(Pool {
                kind,
                window: Window {
                    kernel: [h, w],
                    stride: [1, 1],
                    pad: [0; 4],
                    dilation: [1, 1],
                },
                ceil_mode: false,
                count_include_pad: true,
            });
            let m = add_node(&mut g, "global", op, &[x], Shape::new(1, 16, 1, 1));
            finish(&mut g, m);
            let what = format!("global {kind:?} pool {h}x{w}");
            check(&g, 2e-3, &what);
            check_int8_on(&g, INT8_TOL, &what, &["nv_small"]);
        }
    }
}

#[test]
fn max_pooling_wider_than_the_pdp_window() {
    // SPP (YOLOv3/v4/X): 9x9 and 13x13 at stride 1 with "same" padding (4 and 6), chains
    // of PDP max poolings (8 then 2; 8 then 6); a 13x11 window at stride 2 with padding
    // 6/5 beyond the PDP's 7 on one side; a 17x3 window (three stages by rows); and a
    // 5x5 window padded by 4 over 13 columns, whose 17 outputs go in PDP strips on
    // nv_small (12 + 5: the last strip reads one input column and the padding).
    // (kernel, stride, padding, input height and width)
    type Case = ([usize; 2], [usize; 2], [usize; 4], [usize; 2]);
    let cases: [Case; 5] = [
        ([9, 9], [1, 1], [4; 4], [20, 19]),
        ([13, 13], [1, 1], [6; 4], [20, 19]),
        ([13, 11], [2, 2], [6, 5, 6, 5], [20, 19]),
        ([17, 3], [1, 1], [8, 1, 8, 1], [20, 19]),
        ([5, 5], [1, 1], [4; 4], [13, 13]),
    ];
    for (kernel, stride, pad, [h, w]) in cases {
        let (mut g, x) = graph(24, h, w);
        let op = Op::Pool(Pool {
            kind: PoolKind::Max,
            window: Window {
                kernel,
                stride,
                pad,
                dilation: [1, 1],
            },
            ceil_mode: false,
            count_include_pad: false,
        });
        let oh = out_size(h, kernel[0], stride[0], pad[0], pad[2], 1);
        let ow = out_size(w, kernel[1], stride[1], pad[1], pad[3], 1);
        let m = add_node(&mut g, "pool", op, &[x], Shape::new(1, 24, oh, ow));
        finish(&mut g, m);
        let what = format!("max pool {kernel:?} stride {stride:?} pad {pad:?}");
        // The input's fp16 rounding only: maxima are exact.
        check(&g, 1e-3, &what);
        check_int8_on(&g, INT8_TOL, &what, &["nv_small"]);
    }
}

/// Squeeze-and-excitation (MobileNetV3, EfficientNet, PP-LCNet): `x * s` where `s` is a
/// per-channel vector computed from `x` (global pooling, two 1x1 convolutions, ReLU, a hard
/// sigmoid). The product is an SDP operation reading `x` and `s` from memory, `s` through
/// the per-kernel operand mode; 24 channels leave a partly filled last atom. The same with a
/// per-channel sum and maximum.
fn squeeze_excite_net(kind: EltwiseKind) -> Graph {
    let mut rng = Rng(0x5e5e);
    let (mut g, x) = graph(8, 7, 6);
    let full = Shape::new(1, 24, 7, 6);
    let vec_shape = Shape::new(1, 24, 1, 1);
    let y = add_conv(
        &mut g,
        &mut rng,
        "expand",
        x,
        24,
        [3, 3],
        [1, 1],
        [1; 4],
        [1, 1],
        1,
    );
    let gap = add_node(
        &mut g,
        "squeeze",
        Op::Pool(Pool {
            kind: PoolKind::Avg,
            window: Window {
                kernel: [7, 6],
                stride: [1, 1],
                pad: [0; 4],
                dilation: [1, 1],
            },
            ceil_mode: false,
            count_include_pad: true,
        }),
        &[y],
        vec_shape,
    );
    let r = add_conv(
        &mut g,
        &mut rng,
        "reduce",
        gap,
        8,
        [1, 1],
        [1, 1],
        [0; 4],
        [1, 1],
        1,
    );
    let r = add_node(
        &mut g,
        "relu",
        Op::Activation(Activation::Relu { slope: 0.0 }),
        &[r],
        Shape::new(1, 8, 1, 1),
    );
    let e = add_conv(
        &mut g,
        &mut rng,
        "excite",
        r,
        24,
        [1, 1],
        [1, 1],
        [0; 4],
        [1, 1],
        1,
    );
    let a = add_node(
        &mut g,
        "hsig/affine",
        Op::ChannelAffine {
            scale: Some(Weights::vector(vec![0.2])),
            bias: Some(Weights::vector(vec![0.5])),
        },
        &[e],
        vec_shape,
    );
    let s = add_node(
        &mut g,
        "hsig",
        Op::Activation(Activation::Clip { lo: 0.0, hi: 1.0 }),
        &[a],
        vec_shape,
    );
    let m = add_node(
        &mut g,
        "scale",
        Op::Eltwise {
            kind,
            coeffs: vec![],
        },
        &[y, s],
        full,
    );
    let out = add_conv(
        &mut g,
        &mut rng,
        "project",
        m,
        16,
        [1, 1],
        [1, 1],
        [0; 4],
        [1, 1],
        1,
    );
    finish(&mut g, out);
    g
}

#[test]
fn squeeze_and_excitation_multiplies_by_a_computed_vector() {
    for (kind, what) in [
        (EltwiseKind::Prod, "squeeze-excite x * s"),
        (EltwiseKind::Sum, "per-channel x + s"),
        (EltwiseKind::Max, "per-channel max(x, s)"),
    ] {
        let g = squeeze_excite_net(kind);
        check(&g, CONV_TOL, what);
        let mut rng = Rng(0x77);
        let input = rng.vec(g.shape(g.inputs[0]).elements(), 1.0);
        let (got, want) = run_fp16(&g, "nv_small", &input);
        let err = max_rel_err(&got, &want);
        eprintln!("{what} fp16 nv_small: max relative error {err:.2e}");
        assert!(err <= CONV_TOL, "{what} fp16 nv_small: error {err}");
        check_int8(&g, INT8_TOL, what);
    }
}

/// Grouped convolutions wide enough to split (depthwise over 96 channels, 4 groups of 32
/// to 32): operations over parts of the groups, each with weights dense within its part
/// only, then a ReLU and a 1x1 convolution; fp16 and int8, on builds of 32-byte and
/// 8-byte atoms. The weights take a fraction of the dense block-diagonal ones.
#[test]
fn grouped_convolutions_split_by_groups() {
    let mut rng = Rng(0x9f0f);
    let (mut g, x) = graph(32, 9, 8);
    let e = add_conv(
        &mut g,
        &mut rng,
        "expand",
        x,
        96,
        [1, 1],
        [1, 1],
        [0; 4],
        [1, 1],
        1,
    );
    let d = add_conv(
        &mut g,
        &mut rng,
        "depthwise",
        e,
        96,
        [3, 3],
        [2, 2],
        [1; 4],
        [1, 1],
        96,
    );
    let ds = g.shape(d);
    let r = add_node(
        &mut g,
        "relu",
        Op::Activation(Activation::Relu { slope: 0.0 }),
        &[d],
        ds,
    );
    let gr = add_conv(
        &mut g,
        &mut rng,
        "grouped",
        r,
        128,
        [3, 3],
        [1, 1],
        [1; 4],
        [1, 1],
        4,
    );
    let p = add_conv(
        &mut g,
        &mut rng,
        "project",
        gr,
        16,
        [1, 1],
        [1, 1],
        [0; 4],
        [1, 1],
        1,
    );
    finish(&mut g, p);
    check(&g, CONV_TOL, "grouped convolutions split by groups");
    let mut rng = Rng(0x31);
    let input = rng.vec(g.shape(g.inputs[0]).elements(), 1.0);
    let (got, want) = run_fp16(&g, "nv_small", &input);
    let err = max_rel_err(&got, &want);
    eprintln!("split groups fp16 nv_small: max relative error {err:.2e}");
    assert!(err <= CONV_TOL, "fp16 nv_small: error {err}");
    check_int8(&g, INT8_TOL, "grouped convolutions split by groups");
    // Weights: the depthwise layer's 96 kernels of 16 channels (its part) instead of 96,
    // the grouped layer's 128 of 32 instead of 128.
    let t = nvdla_compiler::target::Target::new(
        nvdla_hw::Config::by_name("nv_full").unwrap(),
        nvdla_compiler::target::Precision::Fp16,
    )
    .unwrap();
    let c = nvdla_compiler::compile_graph(g.clone(), &nvdla_compiler::Options::new(t)).unwrap();
    let dense = 2 * 9 * (96 * 96 + 128 * 128) + 2 * (96 * 32 + 16 * 128);
    eprintln!(
        "weights: {} bytes split, {dense} dense block-diagonal (fp16, nv_full); {} operations",
        c.program.weight_size,
        c.program.ops.len()
    );
    assert!(
        c.program.weight_size * 3 < dense as u64,
        "{}",
        c.program.weight_size
    );
}

/// 300 convolutions (600 DLA operations reusing two pool buffers) before the network's
/// first pooling: every one of them reads or writes bytes the pooling overwrites, and the
/// pooling is the first PDP operation of each one's readers. An operation's dependency
/// count is one byte: the edges implied by the engines' chains of completions are dropped
/// so that it waits for few events (290 wrapped to 34 and the firmware refused the task).
#[test]
fn long_chains_wait_for_few_events() {
    let mut rng = Rng(0x10ad);
    let (mut g, x) = graph(16, 6, 6);
    let mut t = x;
    for i in 0..300 {
        t = add_conv(
            &mut g,
            &mut rng,
            &format!("c{i}"),
            t,
            16,
            [1, 1],
            [1, 1],
            [0; 4],
            [1, 1],
            1,
        );
    }
    let p = add_node(
        &mut g,
        "pool",
        pool(PoolKind::Max, 2, 2, 0, false),
        &[t],
        Shape::new(1, 16, 3, 3),
    );
    // The pooling writes the pool (a convolution makes the output).
    let y = add_conv(
        &mut g,
        &mut rng,
        "out",
        p,
        16,
        [1, 1],
        [1, 1],
        [0; 4],
        [1, 1],
        1,
    );
    finish(&mut g, y);
    check(&g, 2e-2, "300 convolutions then a pooling");
}

/// A dead filter (PP-OCRv4's recognizer has one whose largest weight is 1e-17) and an
/// all-zero one, quantized per filter: they take the layer's scale, so that the SDP's
/// 16-bit multipliers still bring every channel to one unit.
#[test]
fn int8_per_filter_with_dead_filters() {
    let mut rng = Rng(0xdead);
    let (mut g, x) = graph(8, 5, 5);
    let mut op = conv(&mut rng, 8, 16, [3, 3], [1, 1], [1; 4], [1, 1], 1);
    if let Op::Conv(c) = &mut op {
        let per = 8 * 9;
        c.weight.data[3 * per..4 * per]
            .iter_mut()
            .for_each(|w| *w *= 1e-17);
        c.weight.data[5 * per..6 * per]
            .iter_mut()
            .for_each(|w| *w = 0.0);
    }
    let y = add_node(&mut g, "conv", op, &[x], Shape::new(1, 16, 5, 5));
    finish(&mut g, y);
    check_int8(&g, INT8_TOL, "dead filters per filter");
}
