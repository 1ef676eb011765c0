//! Tests of the graph passes: structure after each rewrite, and the reference interpreter's
//! outputs before and after on random inputs.

use super::*;
use crate::ir::{EltwiseKind, Graph, Op, Pool, PoolKind, Shape, TensorId, Weights};
use crate::reference::run;
use crate::reference::tests::{conv_params, node, window, Rng};

fn s(n: usize, c: usize, h: usize, w: usize) -> Shape {
    Shape::new(n, c, h, w)
}

fn relu() -> Op {
    Op::Activation(Activation::Relu { slope: 0.0 })
}

fn affine_op(scale: Option<Vec<f32>>, bias: Option<Vec<f32>>) -> Op {
    Op::ChannelAffine {
        scale: scale.map(Weights::vector),
        bias: bias.map(Weights::vector),
    }
}

fn batch_norm(rng: &mut Rng, c: usize) -> Op {
    Op::BatchNorm {
        mean: Weights::vector(rng.vec(c)),
        var: Weights::vector(rng.vec_in(c, 0.1, 2.0)),
        eps: 1e-5,
    }
}

fn random_conv(rng: &mut Rng, c: usize, k: usize, groups: usize, bias: bool) -> Conv {
    conv_params(
        window([3, 3], [1, 1], [1; 4], [1, 1]),
        groups,
        k,
        rng.vec(k * (c / groups) * 9),
        [k, c / groups, 3, 3],
        bias.then(|| rng.vec(k)),
    )
}

/// A graph builder: tensors by name, nodes appended in order.
struct Builder {
    g: Graph,
}

impl Builder {
    fn new(input: Shape) -> Self {
        let mut g = Graph {
            name: "test".into(),
            ..Graph::default()
        };
        let x = g.add_tensor("x", input);
        g.inputs = vec![x];
        Self { g }
    }
    /// Add node `name` reading `inputs`, writing a new tensor `name` of shape `out`.
    fn add(&mut self, name: &str, op: Op, inputs: &[TensorId], out: Shape) -> TensorId {
        let t = self.g.add_tensor(name, out);
        self.g.add_node(node(name, op, inputs, &[t]));
        t
    }
    fn finish(mut self, outputs: &[TensorId]) -> Graph {
        self.g.outputs = outputs.to_vec();
        self.g.check().unwrap();
        self.g
    }
}

/// Run `before` and `after` on the same random inputs (several trials) and compare every
/// graph output: max abs error below `1e-5` relative to the output's largest magnitude.
fn assert_equivalent(before: &Graph, after: &Graph, seed: u64) {
    after.check().unwrap();
    assert_eq!(before.inputs, after.inputs);
    assert_eq!(before.outputs, after.outputs);
    for &t in &after.outputs {
        assert_eq!(before.tensor(t).name, after.tensor(t).name);
    }
    let mut rng = Rng::new(seed);
    for _ in 0..3 {
        let inputs: Vec<(TensorId, Vec<f32>)> = before
            .inputs
            .iter()
            .map(|&t| (t, rng.vec_in(before.shape(t).elements(), -2.0, 2.0)))
            .collect();
        let want = run(before, &inputs).unwrap();
        let got = run(after, &inputs).unwrap();
        for &t in &before.outputs {
            let (w, g) = (&want[t.0], &got[t.0]);
            assert_eq!(w.len(), g.len());
            let scale = w.iter().fold(1f32, |m, v| m.max(v.abs()));
            let err = w.iter().zip(g).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            assert!(
                err <= 1e-5 * scale,
                "output `{}`: max error {err} (scale {scale})\nbefore:\n{}after:\n{}",
                before.tensor(t).name,
                dump(before),
                dump(after)
            );
        }
    }
}

/// Apply `pass` to a copy of `g`; the copy and whether it changed.
fn apply(g: &Graph, pass: Pass) -> (Graph, bool) {
    let mut h = g.clone();
    let changed = pass(&mut h).unwrap();
    h.check().unwrap();
    (h, changed)
}

fn ops(g: &Graph) -> Vec<&'static str> {
    g.nodes.iter().map(|n| n.op.name()).collect()
}

// ---------------------------------------------------------------- remove_identities

#[test]
fn identity_in_the_middle_is_removed() {
    let sh = s(1, 3, 2, 2);
    let mut b = Builder::new(sh);
    let a = b.add("relu", relu(), &[TensorId(0)], sh);
    let d = b.add("drop", Op::Identity, &[a], sh);
    let y = b.add("prob", Op::Softmax, &[d], sh);
    let g = b.finish(&[y]);
    let (h, changed) = apply(&g, remove_identities);
    assert!(changed);
    assert_eq!(ops(&h), ["ReLU", "Softmax"]);
    assert_eq!(h.nodes[1].inputs, vec![a]);
    assert_equivalent(&g, &h, 1);
    assert!(!apply(&h, remove_identities).1);
}

#[test]
fn identity_producing_a_graph_output_keeps_the_output_name() {
    let sh = s(1, 3, 2, 2);
    let mut b = Builder::new(sh);
    let a = b.add("relu", relu(), &[TensorId(0)], sh);
    let side = b.add("side", Op::Activation(Activation::Sigmoid), &[a], sh);
    let y = b.add("out", Op::Identity, &[a], sh);
    let g = b.finish(&[y, side]);
    let (h, changed) = apply(&g, remove_identities);
    assert!(changed);
    assert_eq!(ops(&h), ["ReLU", "Sigmoid"]);
    // The relu now writes `out` directly, and the sigmoid reads it.
    assert_eq!(h.nodes[0].outputs, vec![y]);
    assert_eq!(h.nodes[1].inputs, vec![y]);
    assert_eq!(h.tensor(y).name, "out");
    assert_equivalent(&g, &h, 2);
}

#[test]
fn identity_that_would_rename_graph_tensors_stays() {
    let sh = s(1, 2, 1, 1);
    // Graph input straight to graph output.
    let mut b = Builder::new(sh);
    let y = b.add("id", Op::Identity, &[TensorId(0)], sh);
    let g = b.finish(&[y]);
    assert!(!apply(&g, remove_identities).1);
    // Input and output of the identity are both graph outputs.
    let mut b = Builder::new(sh);
    let a = b.add("relu", relu(), &[TensorId(0)], sh);
    let y = b.add("id", Op::Identity, &[a], sh);
    let g = b.finish(&[a, y]);
    assert!(!apply(&g, remove_identities).1);
    assert!(!run_all(&mut g.clone()).unwrap());
}

#[test]
fn split_with_two_outputs_is_removed() {
    let sh = s(1, 2, 2, 2);
    let mut b = Builder::new(sh);
    let a = b.add("relu", relu(), &[TensorId(0)], sh);
    let b1 = b.g.add_tensor("split_1", sh);
    let b2 = b.g.add_tensor("split_2", sh);
    b.g.add_node(node("split", Op::Identity, &[a], &[b1, b2]));
    let y1 = b.add("sig", Op::Activation(Activation::Sigmoid), &[b1], sh);
    let y2 = b.add("tanh", Op::Activation(Activation::Tanh), &[b2], sh);
    let y = b.add(
        "sum",
        Op::Eltwise {
            kind: EltwiseKind::Sum,
            coeffs: vec![],
        },
        &[y1, y2, b2],
        sh,
    );
    let g = b.finish(&[y]);
    let (h, changed) = apply(&g, remove_identities);
    assert!(changed);
    assert_eq!(h.nodes.len(), 4);
    assert_eq!(h.nodes[3].inputs, vec![y1, y2, a]);
    assert_equivalent(&g, &h, 3);
}

#[test]
fn flatten_is_kept() {
    let mut b = Builder::new(s(1, 2, 2, 2));
    let f = b.add("flat", Op::Flatten, &[TensorId(0)], s(1, 8, 1, 1));
    let y = b.add("prob", Op::Softmax, &[f], s(1, 8, 1, 1));
    let g = b.finish(&[y]);
    let mut h = g.clone();
    assert!(!run_all(&mut h).unwrap());
    assert_eq!(h, g);
}

// ---------------------------------------------------------------- canonicalize_affine

#[test]
fn batch_norm_becomes_channel_affine() {
    let mut rng = Rng::new(4);
    let sh = s(2, 4, 3, 3);
    let mut b = Builder::new(sh);
    let y = b.add("bn", batch_norm(&mut rng, 4), &[TensorId(0)], sh);
    let g = b.finish(&[y]);
    let (h, changed) = apply(&g, canonicalize_affine);
    assert!(changed);
    let Op::ChannelAffine {
        scale: Some(sc),
        bias: Some(bi),
    } = &h.nodes[0].op
    else {
        panic!("{:?}", h.nodes[0].op)
    };
    let Op::BatchNorm { mean, var, eps } = &g.nodes[0].op else {
        unreachable!()
    };
    for c in 0..4 {
        let want = 1.0 / (var.data[c] + eps).sqrt();
        assert!((sc.data[c] - want).abs() <= 1e-6 * want);
        assert!((bi.data[c] + mean.data[c] * want).abs() <= 1e-6 * want.max(1.0));
    }
    assert_eq!(h.nodes[0].name, "bn");
    assert_equivalent(&g, &h, 4);
    assert!(!apply(&h, canonicalize_affine).1);
}

#[test]
fn power_one_becomes_affine_and_trivial_affines_identities() {
    let sh = s(1, 3, 2, 2);
    let power = |power, scale, shift| Op::Power {
        power,
        scale,
        shift,
    };
    let mut b = Builder::new(sh);
    let a = b.add("p1", power(1.0, 0.5, -1.0), &[TensorId(0)], sh);
    let c = b.add("p2", power(1.0, 1.0, 0.0), &[a], sh);
    let d = b.add("p3", power(2.0, 1.0, 0.5), &[c], sh);
    let e = b.add(
        "ones",
        affine_op(Some(vec![1.0, 1.0, 1.0]), Some(vec![0.0, 0.25, 0.0])),
        &[d],
        sh,
    );
    let y = b.add(
        "nothing",
        affine_op(Some(vec![1.0]), Some(vec![0.0; 3])),
        &[e],
        sh,
    );
    let g = b.finish(&[y]);
    let (h, changed) = apply(&g, canonicalize_affine);
    assert!(changed);
    assert_eq!(h.nodes[0].op, affine_op(Some(vec![0.5]), Some(vec![-1.0])));
    assert_eq!(h.nodes[1].op, Op::Identity);
    assert_eq!(h.nodes[2].op, g.nodes[2].op, "power 2 stays");
    assert_eq!(h.nodes[3].op, affine_op(None, Some(vec![0.0, 0.25, 0.0])));
    assert_eq!(h.nodes[4].op, Op::Identity);
    assert_equivalent(&g, &h, 5);
    // Whole pipeline: the two identities go (the last one's output is the graph output,
    // so `p3`'s affine successor takes its name).
    let mut all = g.clone();
    assert!(run_all(&mut all).unwrap());
    assert_eq!(ops(&all), ["Scale", "Power", "Scale"]);
    assert_eq!(all.nodes[2].outputs, vec![y]);
    assert_equivalent(&g, &all, 6);
}

#[test]
fn malformed_batch_norm_is_a_layer_error() {
    let sh = s(1, 3, 1, 1);
    let mut b = Builder::new(sh);
    let op = Op::BatchNorm {
        mean: Weights::vector(vec![0.0; 2]),
        var: Weights::vector(vec![1.0; 2]),
        eps: 1e-5,
    };
    let y = b.add("bn", op, &[TensorId(0)], sh);
    let mut g = b.finish(&[y]);
    let err = canonicalize_affine(&mut g).unwrap_err();
    assert!(
        matches!(&err, CompileError::Layer { layer, .. } if layer == "bn"),
        "{err}"
    );
}

// ---------------------------------------------------------------- merge_affine

#[test]
fn consecutive_affines_merge() {
    let mut rng = Rng::new(6);
    let sh = s(2, 3, 2, 2);
    let mut b = Builder::new(sh);
    let a = b.add("bn", batch_norm(&mut rng, 3), &[TensorId(0)], sh);
    let c = b.add(
        "scale",
        affine_op(Some(rng.vec(3)), Some(rng.vec(3))),
        &[a],
        sh,
    );
    let d = b.add("mul", affine_op(Some(vec![0.5]), None), &[c], sh);
    let e = b.add("add", affine_op(None, Some(vec![0.75])), &[d], sh);
    let y = b.add("relu", relu(), &[e], sh);
    let g = b.finish(&[y]);
    let (h, _) = apply(&g, canonicalize_affine);
    let (h, changed) = apply(&h, merge_affine);
    assert!(changed);
    assert_eq!(ops(&h), ["Scale", "ReLU"]);
    assert_eq!(h.nodes[0].name, "bn");
    assert_eq!(h.nodes[0].outputs, vec![e]);
    assert_equivalent(&g, &h, 7);
    // Two one-element affines stay one-element.
    let mut b = Builder::new(sh);
    let a = b.add("mul", affine_op(Some(vec![2.0]), None), &[TensorId(0)], sh);
    let y = b.add("add", affine_op(Some(vec![3.0]), Some(vec![1.0])), &[a], sh);
    let g = b.finish(&[y]);
    let (h, changed) = apply(&g, merge_affine);
    assert!(changed);
    assert_eq!(h.nodes[0].op, affine_op(Some(vec![6.0]), Some(vec![1.0])));
    assert_eq!(h.nodes[0].outputs, vec![y]);
    // A per-channel scale after a scale-only affine: the bias stays one value.
    let mut b = Builder::new(sh);
    let a = b.add("mul", affine_op(Some(vec![2.0]), None), &[TensorId(0)], sh);
    let y = b.add(
        "add",
        affine_op(Some(vec![3.0, 4.0, 5.0]), Some(vec![1.0])),
        &[a],
        sh,
    );
    let g = b.finish(&[y]);
    let (h, changed) = apply(&g, merge_affine);
    assert!(changed);
    assert_eq!(
        h.nodes[0].op,
        affine_op(Some(vec![6.0, 8.0, 10.0]), Some(vec![1.0]))
    );
    assert_equivalent(&g, &h, 8);
}

#[test]
fn affines_do_not_merge_across_a_shared_or_output_tensor() {
    let sh = s(1, 2, 1, 2);
    // The intermediate is a graph output.
    let mut b = Builder::new(sh);
    let a = b.add("a", affine_op(Some(vec![2.0]), None), &[TensorId(0)], sh);
    let y = b.add("b", affine_op(Some(vec![3.0]), None), &[a], sh);
    let g = b.finish(&[a, y]);
    assert!(!apply(&g, merge_affine).1);
    // The intermediate has two readers.
    let mut b = Builder::new(sh);
    let a = b.add("a", affine_op(Some(vec![2.0]), None), &[TensorId(0)], sh);
    let y = b.add("b", affine_op(Some(vec![3.0]), None), &[a], sh);
    let z = b.add("c", relu(), &[a], sh);
    let g = b.finish(&[y, z]);
    assert!(!apply(&g, merge_affine).1);
}

#[test]
fn bad_affine_length_is_a_layer_error() {
    let sh = s(1, 3, 1, 1);
    let mut b = Builder::new(sh);
    let a = b.add(
        "a",
        affine_op(Some(vec![2.0, 1.0]), None),
        &[TensorId(0)],
        sh,
    );
    let y = b.add("b", affine_op(Some(vec![3.0]), None), &[a], sh);
    let mut g = b.finish(&[y]);
    let err = merge_affine(&mut g).unwrap_err();
    assert!(
        matches!(&err, CompileError::Layer { layer, .. } if layer == "a"),
        "{err}"
    );
}

// ---------------------------------------------------------------- fold_affine_into_conv

#[test]
fn affine_folds_into_conv() {
    let mut rng = Rng::new(8);
    for (groups, with_bias, affine_bias) in [
        (1, true, true),
        (1, false, true),
        (1, true, false),
        (2, false, false),
        (4, true, true),
    ] {
        let (c, k) = (4, 8);
        let mut b = Builder::new(s(2, c, 5, 5));
        let conv = Op::Conv(random_conv(&mut rng, c, k, groups, with_bias));
        let a = b.add("conv", conv, &[TensorId(0)], s(2, k, 5, 5));
        let op = affine_op(Some(rng.vec(k)), affine_bias.then(|| rng.vec(k)));
        let y = b.add("scale", op, &[a], s(2, k, 5, 5));
        let g = b.finish(&[y]);
        let (h, changed) = apply(&g, fold_affine_into_conv);
        assert!(changed);
        assert_eq!(ops(&h), ["Convolution"]);
        assert_eq!(h.nodes[0].name, "conv");
        assert_eq!(h.nodes[0].outputs, vec![y]);
        let Op::Conv(p) = &h.nodes[0].op else {
            unreachable!()
        };
        assert_eq!(p.bias.is_some(), with_bias || affine_bias);
        assert_equivalent(&g, &h, 9);
    }
}

#[test]
fn input_scale_folds_into_the_convolutions_that_read_it() {
    let mut rng = Rng::new(10);
    let c = 4;
    // The --scale preprocessing: one scale, or one per channel; two readers, one grouped.
    for per_channel in [false, true] {
        let scale = if per_channel { rng.vec(c) } else { vec![0.25] };
        let mut b2 = Builder::new(s(1, c, 6, 6));
        let y = b2.add(
            "scale",
            affine_op(Some(scale), None),
            &[TensorId(0)],
            s(1, c, 6, 6),
        );
        let a = b2.add(
            "a",
            Op::Conv(random_conv(&mut rng, c, 8, 1, true)),
            &[y],
            s(1, 8, 6, 6),
        );
        let g2 = b2.add(
            "b",
            Op::Conv(random_conv(&mut rng, c, 8, 2, false)),
            &[y],
            s(1, 8, 6, 6),
        );
        let g = b2.finish(&[a, g2]);
        let (h, changed) = apply(&g, fold_scale_into_readers);
        assert!(changed);
        assert_eq!(ops(&h), ["Convolution", "Convolution"]);
        assert!(h.nodes.iter().all(|n| n.inputs == [TensorId(0)]));
        assert_equivalent(&g, &h, 11);
    }
    // Not with a bias (the zero padding would change), nor with a reader that is no
    // convolution, nor for a graph output.
    for case in ["bias", "relu reader", "graph output"] {
        let mut b = Builder::new(s(1, c, 6, 6));
        let bias = (case == "bias").then(|| vec![1.0]);
        let y = b.add(
            "scale",
            affine_op(Some(vec![0.5]), bias),
            &[TensorId(0)],
            s(1, c, 6, 6),
        );
        let a = b.add(
            "a",
            Op::Conv(random_conv(&mut rng, c, 8, 1, true)),
            &[y],
            s(1, 8, 6, 6),
        );
        let g = match case {
            "relu reader" => {
                let r = b.add("r", relu(), &[y], s(1, c, 6, 6));
                b.finish(&[a, r])
            }
            "graph output" => b.finish(&[a, y]),
            _ => b.finish(&[a]),
        };
        assert!(!apply(&g, fold_scale_into_readers).1, "{case}");
    }
}

#[test]
fn affine_folds_into_deconv_and_fully_connected() {
    let mut rng = Rng::new(10);
    // Deconvolution 4 -> 6 channels, 2 groups, stride 2.
    let (c, k, g_) = (4, 6, 2);
    let mut b = Builder::new(s(1, c, 3, 3));
    let p = conv_params(
        window([3, 3], [2, 2], [1; 4], [1, 1]),
        g_,
        k,
        rng.vec(c * (k / g_) * 9),
        [c, k / g_, 3, 3],
        Some(rng.vec(k)),
    );
    let a = b.add("up", Op::Deconv(p), &[TensorId(0)], s(1, k, 5, 5));
    let y = b.add("bn", batch_norm(&mut rng, k), &[a], s(1, k, 5, 5));
    let g = b.finish(&[y]);
    let mut h = g.clone();
    assert!(run_all(&mut h).unwrap());
    assert_eq!(ops(&h), ["Deconvolution"]);
    assert_equivalent(&g, &h, 11);
    // Fully connected then a one-element affine (Power).
    let mut b = Builder::new(s(2, 3, 2, 2));
    let fc = Op::FullyConnected {
        weight: Weights::new(vec![5, 12], rng.vec(60)).unwrap(),
        bias: None,
    };
    let a = b.add("ip", fc, &[TensorId(0)], s(2, 5, 1, 1));
    let power = Op::Power {
        power: 1.0,
        scale: -0.5,
        shift: 0.25,
    };
    let y = b.add("pow", power, &[a], s(2, 5, 1, 1));
    let g = b.finish(&[y]);
    let mut h = g.clone();
    assert!(run_all(&mut h).unwrap());
    assert_eq!(ops(&h), ["FullyConnected"]);
    assert_equivalent(&g, &h, 12);
}

#[test]
fn affine_does_not_fold_into_a_shared_conv_output() {
    let mut rng = Rng::new(12);
    let mut b = Builder::new(s(1, 2, 4, 4));
    let conv = Op::Conv(random_conv(&mut rng, 2, 3, 1, true));
    let a = b.add("conv", conv, &[TensorId(0)], s(1, 3, 4, 4));
    let y = b.add(
        "scale",
        affine_op(Some(rng.vec(3)), None),
        &[a],
        s(1, 3, 4, 4),
    );
    let z = b.add("relu", relu(), &[a], s(1, 3, 4, 4));
    let g = b.finish(&[y, z]);
    assert!(!apply(&g, fold_affine_into_conv).1);
    // Nor when the conv output is a graph output.
    let mut b = Builder::new(s(1, 2, 4, 4));
    let conv = Op::Conv(random_conv(&mut rng, 2, 3, 1, true));
    let a = b.add("conv", conv, &[TensorId(0)], s(1, 3, 4, 4));
    let y = b.add(
        "scale",
        affine_op(Some(rng.vec(3)), None),
        &[a],
        s(1, 3, 4, 4),
    );
    let g = b.finish(&[a, y]);
    assert!(!apply(&g, fold_affine_into_conv).1);
}

// ---------------------------------------------------------------- run_all, dump

/// conv -> BatchNorm -> Scale -> Power(1) -> ReLU -> Dropout -> fc -> Scale(1 value) ->
/// Softmax becomes conv -> ReLU -> fc -> Softmax.
#[test]
fn run_all_reaches_a_fixed_point() {
    let mut rng = Rng::new(13);
    let mut b = Builder::new(s(2, 3, 6, 6));
    let sh = s(2, 4, 6, 6);
    let conv = Op::Conv(random_conv(&mut rng, 3, 4, 1, true));
    let t = b.add("conv1", conv, &[TensorId(0)], sh);
    let t = b.add("bn1", batch_norm(&mut rng, 4), &[t], sh);
    let t = b.add(
        "scale1",
        affine_op(Some(rng.vec(4)), Some(rng.vec(4))),
        &[t],
        sh,
    );
    let power = Op::Power {
        power: 1.0,
        scale: 0.5,
        shift: 0.1,
    };
    let t = b.add("pow1", power, &[t], sh);
    let t = b.add("relu1", relu(), &[t], sh);
    let t = b.add("drop1", Op::Identity, &[t], sh);
    let pool = Op::Pool(Pool {
        kind: PoolKind::Avg,
        window: window([3, 3], [2, 2], [1; 4], [1, 1]),
        ceil_mode: true,
        count_include_pad: true,
    });
    let t = b.add("pool1", pool, &[t], s(2, 4, 4, 4));
    let fc = Op::FullyConnected {
        weight: Weights::new(vec![10, 64], rng.vec(640)).unwrap(),
        bias: Some(Weights::vector(rng.vec(10))),
    };
    let t = b.add("ip1", fc, &[t], s(2, 10, 1, 1));
    let t = b.add(
        "scale2",
        affine_op(Some(vec![0.5]), Some(vec![1.0])),
        &[t],
        s(2, 10, 1, 1),
    );
    let y = b.add("prob", Op::Softmax, &[t], s(2, 10, 1, 1));
    let g = b.finish(&[y]);
    let mut h = g.clone();
    assert!(run_all(&mut h).unwrap());
    assert_eq!(
        ops(&h),
        [
            "Convolution",
            "ReLU",
            "Pooling",
            "FullyConnected",
            "Softmax"
        ]
    );
    assert!(h.nodes.len() < g.nodes.len());
    assert_equivalent(&g, &h, 14);
    let settled = h.clone();
    assert!(!run_all(&mut h).unwrap());
    assert_eq!(h, settled);
}

/// Random chains of affine-ish ops after a convolution: whatever the passes do, the
/// network computes the same.
#[test]
fn random_chains_are_preserved() {
    let mut rng = Rng::new(99);
    for trial in 0..40 {
        let c = 1 + (rng.next_u64() % 4) as usize;
        let k = 1 + (rng.next_u64() % 5) as usize;
        let sh = s(1, k, 4, 4);
        let mut b = Builder::new(s(1, c, 4, 4));
        let with_bias = rng.next_u64().is_multiple_of(2);
        let conv = Op::Conv(random_conv(&mut rng, c, k, 1, with_bias));
        let mut t = b.add("conv", conv, &[TensorId(0)], sh);
        let mut outputs = Vec::new();
        for i in 0..1 + rng.next_u64() % 6 {
            let op = match rng.next_u64() % 7 {
                0 => batch_norm(&mut rng, k),
                1 => affine_op(Some(rng.vec(k)), None),
                2 => affine_op(None, Some(rng.vec(1))),
                3 => Op::Power {
                    power: 1.0,
                    scale: rng.uniform(-2.0, 2.0),
                    shift: rng.uniform(-1.0, 1.0),
                },
                4 => Op::Identity,
                5 => relu(),
                _ => affine_op(Some(vec![1.0; k]), None),
            };
            t = b.add(&format!("n{i}"), op, &[t], sh);
            if rng.next_u64().is_multiple_of(5) {
                outputs.push(t);
            }
        }
        if !outputs.contains(&t) {
            outputs.push(t);
        }
        let g = b.finish(&outputs);
        let mut h = g.clone();
        run_all(&mut h).unwrap();
        assert!(h.nodes.len() <= g.nodes.len(), "trial {trial}");
        assert_equivalent(&g, &h, 100 + trial);
        assert!(
            !run_all(&mut h).unwrap(),
            "trial {trial}: not a fixed point"
        );
    }
}

#[test]
fn dump_lists_every_node() {
    let mut rng = Rng::new(15);
    let mut b = Builder::new(s(1, 2, 4, 4));
    let conv = Op::Conv(random_conv(&mut rng, 2, 3, 1, true));
    let a = b.add("conv1", conv, &[TensorId(0)], s(1, 3, 4, 4));
    let y = b.add(
        "scale1",
        affine_op(Some(vec![2.0]), Some(rng.vec(3))),
        &[a],
        s(1, 3, 4, 4),
    );
    let g = b.finish(&[y]);
    let text = dump(&g);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].contains("`test`: 2 nodes"), "{text}");
    assert!(lines[1].contains("input  x 1x2x4x4"), "{text}");
    assert!(
        lines[2].contains("conv1: Convolution (x 1x2x4x4) -> (conv1 1x3x4x4)"),
        "{text}"
    );
    assert!(
        lines[2].contains(
            "k=3x3 s=1x1 pad=[1, 1, 1, 1] d=1x1 groups=1 out=3 weight[3, 2, 3, 3] bias[3]"
        ),
        "{text}"
    );
    assert!(
        lines[3].contains("scale1: Scale (conv1 1x3x4x4) -> (scale1 1x3x4x4)  scale=2 bias[3]"),
        "{text}"
    );
    assert!(lines[4].contains("output scale1 1x3x4x4"), "{text}");
}

// ---------------------------------------------------------------- fold_selections

/// A channel selection: output channel `o` copies input channel `sel[o]`.
fn select(sel: &[usize], c: usize) -> Op {
    let mut w = vec![0.0; sel.len() * c];
    for (o, &i) in sel.iter().enumerate() {
        w[o * c + i] = 1.0;
    }
    Op::Conv(conv_params(
        window([1, 1], [1, 1], [0; 4], [1, 1]),
        1,
        sel.len(),
        w,
        [sel.len(), c, 1, 1],
        None,
    ))
}

#[test]
fn selections_fold_into_convolutions_and_compose() {
    let mut rng = Rng::new(12);
    let c = 6;
    // A shuffle (a permutation), a split of its first half into a 3x3 convolution and of
    // its second half into a ReLU, and a channel picked twice into a 1x1 convolution.
    let mut b = Builder::new(s(1, c, 5, 5));
    let shuffle = b.add(
        "shuffle",
        select(&[0, 3, 1, 4, 2, 5], c),
        &[TensorId(0)],
        s(1, c, 5, 5),
    );
    let lo = b.add("lo", select(&[0, 1, 2], c), &[shuffle], s(1, 3, 5, 5));
    let hi = b.add("hi", select(&[3, 4, 5], c), &[shuffle], s(1, 3, 5, 5));
    let conv = b.add(
        "conv",
        Op::Conv(random_conv(&mut rng, 3, 4, 1, true)),
        &[lo],
        s(1, 4, 5, 5),
    );
    let r = b.add("r", relu(), &[hi], s(1, 3, 5, 5));
    let twice = b.add(
        "twice",
        select(&[1, 1, 0], c),
        &[TensorId(0)],
        s(1, 3, 5, 5),
    );
    let one = b.add(
        "one",
        Op::Conv(random_conv(&mut rng, 3, 2, 1, false)),
        &[twice],
        s(1, 2, 5, 5),
    );
    let g = b.finish(&[conv, r, one]);
    let mut h = g.clone();
    let mut rounds = 0;
    while fold_selections(&mut h).unwrap() {
        h.check().unwrap();
        rounds += 1;
        assert!(rounds < 5);
    }
    // The shuffle went into both halves; the low half and the doubled pick into their
    // convolutions; the high half stays for its ReLU.
    assert_eq!(
        ops(&h),
        ["Convolution", "Convolution", "ReLU", "Convolution"]
    );
    assert_equivalent(&g, &h, 13);
    // Not into a grouped convolution, nor when the selection has a bias or weights other
    // than ones, nor when folding would more than double the weights (one channel of six
    // into a 3x3 convolution: 216 weights for 36 + 6).
    for case in ["grouped", "bias", "scaled", "one of six"] {
        let mut b = Builder::new(s(1, c, 4, 4));
        let picked: &[usize] = if case == "one of six" {
            &[2]
        } else {
            &[1, 0, 3, 2]
        };
        let mut op = select(picked, c);
        if let Op::Conv(p) = &mut op {
            match case {
                "bias" => p.bias = Some(Weights::vector(vec![0.5; picked.len()])),
                "scaled" => p.weight.data[1] = 2.0,
                _ => {}
            }
        }
        let n = picked.len();
        let sel = b.add("sel", op, &[TensorId(0)], s(1, n, 4, 4));
        let groups = if case == "grouped" { 2 } else { 1 };
        let k = b.add(
            "k",
            Op::Conv(random_conv(&mut rng, n, 4, groups, false)),
            &[sel],
            s(1, 4, 4, 4),
        );
        let g = b.finish(&[k]);
        assert!(!apply(&g, fold_selections).1, "{case}");
    }
}
