//! int8 activations with a scale per channel (`--activation-scales per-channel`): a block
//! whose channels span a factor of 180 in range (a convolution, a hard-swish written as
//! `x * clip(x + 3, 0, 6)`, a depthwise convolution, a pointwise one), compiled for
//! nv_small and nv_full with one scale per tensor and with scales per channel, run on the
//! virtual platform and compared with the fp32 reference.

mod common;

use common::*;
use nvdla_compiler::engine::SurfKind;
use nvdla_compiler::ir::*;

const C: usize = 16;
const SIZE: usize = 20;

/// A `k x k` convolution of `x` to `out` channels in `groups` groups, padded to keep the
/// size.
fn conv(
    g: &mut Graph,
    name: &str,
    x: TensorId,
    [out, k, groups]: [usize; 3],
    w: Vec<f32>,
    bias: Vec<f32>,
) -> TensorId {
    let s = g.shape(x);
    let op = grouped_conv_op([s.c, out, k, groups], w, bias);
    add_node(g, name, op, &[x], Shape::new(1, out, s.h, s.w))
}

/// The block: channel k of the first convolution's output has a range about 2^(k/2)
/// times channel 0's, and the last convolution weighs channel k by 2^(-k/2).
fn network() -> Graph {
    let mut rng = Rng(0xc4a1);
    let (mut g, x) = graph(8, SIZE, SIZE);
    let per = 8 * 9;
    let w1: Vec<f32> = (0..C * per)
        .map(|i| rng.next() * 0.12 * 2f32.powf((i / per) as f32 / 2.0))
        .collect();
    let b1 = rng.vec(C, 0.3);
    let a = conv(&mut g, "conv1", x, [C, 3, 1], w1, b1);
    let s = g.shape(a);
    let plus3 = add_node(
        &mut g,
        "plus3",
        Op::ChannelAffine {
            scale: None,
            bias: Some(Weights::vector(vec![3.0])),
        },
        &[a],
        s,
    );
    let r = add_node(
        &mut g,
        "relu6",
        Op::Activation(Activation::Clip { lo: 0.0, hi: 6.0 }),
        &[plus3],
        s,
    );
    let hs = add_node(
        &mut g,
        "hswish",
        Op::Eltwise {
            kind: EltwiseKind::Prod,
            coeffs: Vec::new(),
        },
        &[a, r],
        s,
    );
    let w2 = rng.vec(C * 9, 0.3);
    let d = conv(&mut g, "depthwise", hs, [C, 3, C], w2, rng.vec(C, 0.2));
    let relu = add_node(
        &mut g,
        "relu",
        Op::Activation(Activation::Relu { slope: 0.0 }),
        &[d],
        s,
    );
    // Each channel weighs in the output as much as the others: the small ones count.
    let w3: Vec<f32> = (0..8 * C)
        .map(|i| rng.next() * 0.25 * 2f32.powf(-((i % C) as f32) / 2.0))
        .collect();
    let out = conv(&mut g, "pointwise", relu, [8, 1, 1], w3, rng.vec(8, 0.1));
    g.outputs.push(out);
    g
}

/// The activations of `c` with scales per channel (the surfaces that own them).
fn scaled(c: &nvdla_compiler::Compiled) -> usize {
    c.program
        .surfaces
        .iter()
        .filter(|s| s.channel_scales.is_some() && !matches!(s.kind, SurfKind::View { .. }))
        .count()
}

#[test]
fn scales_per_channel_keep_the_small_channels() {
    let g = network();
    let input = Rng(77).vec(8 * SIZE * SIZE, 1.0);
    for config in ["nv_small", "nv_full"] {
        let (pt, want, one) = run_int8_scaled(&g, config, &input, true, Extra::default(), false);
        let (pc, _, per) = run_int8_scaled(&g, config, &input, true, Extra::default(), true);
        let (none, scaled) = (scaled(&one), scaled(&per));
        let (e_pt, e_pc) = (max_rel_err(&pt, &want), max_rel_err(&pc, &want));
        let (c_pt, c_pc) = (cosine(&pt, &want), cosine(&pc, &want));
        eprintln!(
            "{config}: one scale per tensor: cosine {c_pt:.5}, error {e_pt:.4}; scales per \
             channel ({scaled} activations): cosine {c_pc:.5}, error {e_pc:.4}"
        );
        assert_eq!(none, 0);
        // The first convolution's output and the hard-swish product (the clip's output
        // is read by the product only, as its operand: it may keep one scale).
        assert!(
            scaled >= 2,
            "{config}: {scaled} activations with scales per channel"
        );
        assert!(c_pc > 0.999, "{config}: cosine {c_pc}");
        assert!(e_pc < e_pt / 4.0, "{config}: error {e_pc} against {e_pt}");
    }
}
