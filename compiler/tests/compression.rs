//! Sparse weight compression (`--compress-weights`, nv_full): a depthwise convolution too
//! narrow to split by groups, a grouped one and a pruned dense one give the same output
//! bytes with compressed weights as without, in fp16 and int8, from less weight memory;
//! builds without compression (nv_small) ignore the option.

mod common;

use common::*;
use nvdla_compiler::engine::HwOpKind;
use nvdla_compiler::ir::*;
use nvdla_compiler::target::Precision;
use nvdla_umd::runtime::Runtime;
use nvdla_umd::Direction;

/// A convolution of `groups` groups, `k`x`k` with padding `k / 2`, `zeros` of every 10
/// weights set to zero (pruning).
fn conv(rng: &mut Rng, cin: usize, cout: usize, k: usize, groups: usize, zeros: usize) -> Op {
    let n = cout * cin / groups * k * k;
    let w: Vec<f32> = (0..n)
        .map(|i| {
            let v = rng.next() * 0.3;
            if i * 7 % 10 < zeros {
                0.0
            } else {
                v
            }
        })
        .collect();
    grouped_conv_op([cin, cout, k, groups], w, rng.vec(cout, 0.1))
}

/// depthwise 3x3 on 12 channels -> 1x1 to 64 -> grouped 3x3 (16 groups of 4, narrower
/// than an atom: block-diagonal within each part) -> relu ->
/// pruned 3x3 (70 % zeros) to 32, on 12x14.
fn network() -> Graph {
    let mut rng = Rng(0xc0);
    let (mut g, x) = graph(12, 12, 14);
    let shape = |c| Shape::new(1, c, 12, 14);
    let relu = Op::Activation(Activation::Relu { slope: 0.0 });
    let d = add_node(
        &mut g,
        "dw",
        conv(&mut rng, 12, 12, 3, 12, 0),
        &[x],
        shape(12),
    );
    let e = add_node(
        &mut g,
        "expand",
        conv(&mut rng, 12, 64, 1, 1, 0),
        &[d],
        shape(64),
    );
    let gr = add_node(
        &mut g,
        "grouped",
        conv(&mut rng, 64, 64, 3, 16, 0),
        &[e],
        shape(64),
    );
    let r = add_node(&mut g, "relu", relu, &[gr], shape(64));
    let p = add_node(
        &mut g,
        "pruned",
        conv(&mut rng, 64, 32, 3, 1, 7),
        &[r],
        shape(32),
    );
    g.outputs.push(p);
    g
}

/// The output bytes of `compiled` on `config` for `input`, and its weight bytes.
fn run(compiled: &nvdla_compiler::Compiled, config: &str, input: &[f32]) -> Vec<u8> {
    let mut dev = device(config);
    let rt = Runtime::load(dev.as_mut(), &compiled.loadable).unwrap();
    let ti = rt.tensor(Direction::Input, 0).unwrap().clone();
    let scale = compiled.program.surface(compiled.program.inputs[0]).scale;
    let data = host_input(input, &ti, Some(scale));
    run_once(dev.as_mut(), rt, &data).1
}

/// The layers whose convolutions read compressed weights.
fn compressed_layers(c: &nvdla_compiler::Compiled) -> Vec<String> {
    c.program
        .ops
        .iter()
        .filter(|op| matches!(&op.kind, HwOpKind::Conv(conv) if conv.compressed.is_some()))
        .map(|op| op.layers[0].clone())
        .collect()
}

#[test]
fn compressed_weights_give_the_same_bytes_from_less_memory() {
    let g = network();
    let input = Rng(5).vec(12 * 12 * 14, 1.0);
    let on = Extra {
        compress_weights: true,
        ..Extra::default()
    };
    for precision in [Precision::Fp16, Precision::Int8] {
        let plain = compile_with(&g, "nv_full", precision, Extra::default());
        let packed = compile_with(&g, "nv_full", precision, on);
        assert!(compressed_layers(&plain).is_empty());
        let layers = compressed_layers(&packed);
        // The dense 1x1 expansion stays as it is (no quarter saved).
        for name in ["dw", "grouped", "pruned"] {
            assert!(
                layers.iter().any(|l| l.starts_with(name)),
                "{precision:?}: {name} not compressed ({layers:?})"
            );
        }
        assert!(
            !layers.iter().any(|l| l.starts_with("expand")),
            "{layers:?}"
        );
        let (a, b) = (plain.program.weight_size, packed.program.weight_size);
        assert!(2 * b < a, "{precision:?}: weights {a} -> {b} bytes");
        let want = run(&plain, "nv_full", &input);
        let got = run(&packed, "nv_full", &input);
        assert_eq!(got, want, "{precision:?}: output bytes differ");
        // And the plain build is right, so both are.
        if precision == Precision::Fp16 {
            let (hw, reference) = run_fp16(&g, "nv_full", &input);
            assert!(max_rel_err(&hw, &reference) < 0.02);
        }
    }
}

#[test]
fn compressed_winograd_weights_give_the_same_bytes() {
    // With -O's other optimizations (image mode does not apply: the input has 12
    // channels): 3x3 layers in Winograd mode, their weights compressed where it pays.
    let g = network();
    let input = Rng(6).vec(12 * 12 * 14, 1.0);
    let o = |compress_weights| Extra {
        winograd: true,
        image_input: true,
        compress_weights,
        ..Extra::default()
    };
    for precision in [Precision::Fp16, Precision::Int8] {
        let plain = compile_with(&g, "nv_full", precision, o(false));
        let packed = compile_with(&g, "nv_full", precision, o(true));
        let modes = |c: &nvdla_compiler::Compiled| {
            c.program
                .ops
                .iter()
                .filter_map(|op| match &op.kind {
                    HwOpKind::Conv(conv) if conv.compressed.is_some() => {
                        Some((conv.winograd.is_some(), conv.image.is_some()))
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        let m = modes(&packed);
        assert!(m.len() >= 2, "{precision:?}: {m:?}");
        if precision == Precision::Fp16 {
            assert!(
                m.iter().any(|&(w, _)| w),
                "no Winograd layer compressed: {m:?}"
            );
        }
        let want = run(&plain, "nv_full", &input);
        let got = run(&packed, "nv_full", &input);
        assert_eq!(got, want, "{precision:?}: output bytes differ");
    }
}

#[test]
fn builds_without_compression_ignore_the_option() {
    let on = Extra {
        compress_weights: true,
        ..Extra::default()
    };
    let c = compile_with(&network(), "nv_small", Precision::Int8, on);
    assert!(compressed_layers(&c).is_empty());
}
