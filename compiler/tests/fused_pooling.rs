//! Poolings on the fly (`--fused-pooling`, part of `-O`): a pooling that alone reads a
//! convolution's result takes it from the SDP, with the same output bytes as the unfused
//! build and less memory; a result read by anything else stays in memory.

mod common;

use common::*;
use nvdla_compiler::engine::SurfKind;
use nvdla_compiler::ir::*;
use nvdla_compiler::target::Precision;
use nvdla_umd::runtime::{RunOptions, Runtime};
use nvdla_umd::Direction;

fn pool(kind: PoolKind, k: usize, s: usize, pad: usize) -> Op {
    pool_op(kind, k, s, pad, false)
}

/// conv 3x3 8>16 + ReLU -> max 3x3/2 pad 1 (ResNet's stem pooling) -> conv 3x3 16>16 ->
/// average 2x2/2 -> conv 1x1 16>8, whose result a max 2x2/2 pooling and a 1x1
/// convolution both read (not fused), on 20x22.
fn network() -> Graph {
    let mut rng = Rng(0xf1);
    let (mut g, x) = graph(8, 20, 22);
    let relu = Op::Activation(Activation::Relu { slope: 0.0 });
    let c1 = add_node(
        &mut g,
        "conv1",
        conv_op(&mut rng, 8, 16, 3, 0.3),
        &[x],
        Shape::new(1, 16, 20, 22),
    );
    let r1 = add_node(&mut g, "relu1", relu, &[c1], Shape::new(1, 16, 20, 22));
    let p1 = add_node(
        &mut g,
        "pool1",
        pool(PoolKind::Max, 3, 2, 1),
        &[r1],
        Shape::new(1, 16, 10, 11),
    );
    let c2 = add_node(
        &mut g,
        "conv2",
        conv_op(&mut rng, 16, 16, 3, 0.2),
        &[p1],
        Shape::new(1, 16, 10, 11),
    );
    let p2 = add_node(
        &mut g,
        "pool2",
        pool(PoolKind::Avg, 2, 2, 0),
        &[c2],
        Shape::new(1, 16, 5, 5),
    );
    let c3 = add_node(
        &mut g,
        "conv3",
        conv_op(&mut rng, 16, 8, 1, 0.3),
        &[p2],
        Shape::new(1, 8, 5, 5),
    );
    let p3 = add_node(
        &mut g,
        "pool3",
        pool(PoolKind::Max, 2, 2, 0),
        &[c3],
        Shape::new(1, 8, 2, 2),
    );
    let c4 = add_node(
        &mut g,
        "conv4",
        conv_op(&mut rng, 8, 8, 1, 0.3),
        &[c3],
        Shape::new(1, 8, 5, 5),
    );
    g.outputs.push(p3);
    g.outputs.push(c4);
    g
}

/// Every output's bytes of `compiled` on `config` for `input`.
fn run(compiled: &nvdla_compiler::Compiled, config: &str, input: &[f32]) -> Vec<Vec<u8>> {
    let mut dev = device(config);
    let mut rt = Runtime::load(dev.as_mut(), &compiled.loadable).unwrap();
    let ti = rt.tensor(Direction::Input, 0).unwrap().clone();
    let scale = compiled.program.surface(compiled.program.inputs[0]).scale;
    rt.write_input(dev.as_mut(), 0, &host_input(input, &ti, Some(scale)))
        .unwrap();
    rt.run(dev.as_mut(), &RunOptions::default(), &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let outputs = (0..compiled.program.outputs.len())
        .map(|i| rt.read_output(dev.as_mut(), i).unwrap())
        .collect();
    rt.release(dev.as_mut());
    outputs
}

/// The poolings taken on the fly: the layers of the operations reading an on-chip surface.
fn fused(c: &nvdla_compiler::Compiled) -> Vec<String> {
    c.program
        .ops
        .iter()
        .filter(|op| {
            op.reads()
                .iter()
                .any(|&s| c.program.surface(s).kind == SurfKind::OnTheFly)
        })
        .map(|op| op.layers.join("+"))
        .collect()
}

#[test]
fn poolings_on_the_fly_give_the_same_bytes_from_less_memory() {
    let g = network();
    let input = Rng(9).vec(8 * 20 * 22, 1.0);
    let on = Extra {
        fused_pooling: true,
        ..Extra::default()
    };
    for (config, precision) in [
        ("nv_full", Precision::Fp16),
        ("nv_full", Precision::Int8),
        ("nv_small", Precision::Int8),
    ] {
        let plain = compile_with(&g, config, precision, Extra::default());
        let fly = compile_with(&g, config, precision, on);
        assert!(fused(&plain).is_empty());
        assert_eq!(
            fused(&fly),
            ["pool1", "pool2"],
            "{config} {precision:?}: pool3's input is read by conv4 too"
        );
        assert!(
            fly.program.pool_size < plain.program.pool_size,
            "{config} {precision:?}: activations {} -> {} bytes",
            plain.program.pool_size,
            fly.program.pool_size
        );
        let want = run(&plain, config, &input);
        let got = run(&fly, config, &input);
        assert_eq!(got, want, "{config} {precision:?}: output bytes differ");
    }
}
