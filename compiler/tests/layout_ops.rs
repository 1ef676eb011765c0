//! Operators that move pixels without arithmetic, mapped to NVDLA engines instead of CPU
//! partitions (issue 26): spatial `Slice` (YOLOv5's Focus, crops) as IR `Crop` (a window
//! view, a 1x1 PDP pooling for steps), ShuffleNet's channel shuffle
//! (`Reshape`-`Transpose`-`Reshape`) as a channel permutation, and `ReduceMean`/`ReduceSum`
//! over the pixels or the channels. Each model is checked against its definition computed
//! here by index arithmetic (not the compiler's reference): fp16 on nv_full and nv_small
//! bit for bit (the inputs are exact in fp16), int8 within a step of the input's scale.

mod common;

use common::onnx::*;
use common::*;
use nvdla_compiler::frontend::onnx;
use nvdla_compiler::frontend::onnx::proto::{NodeProto, TensorProto};
use nvdla_compiler::ir::{Graph, Op};
use nvdla_compiler::target::{Precision, Target};

/// Values exact in fp16 and int8 alike: multiples of 1/8 in [-8, 8).
fn exact_input(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    rng.vec(n, 1.0)
        .iter()
        .map(|v| ((v * 64.0).round().clamp(-64.0, 63.0)) / 8.0)
        .collect()
}

fn load(model: &[u8], config: &str, precision: Precision) -> Graph {
    let hw = nvdla_hw::Config::by_name(config).unwrap();
    onnx::load(
        model,
        &onnx::Options {
            target: Some(Target::new(hw, precision).unwrap()),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// `Slice` of lines and columns (axes 2 and 3), its constants from [`slice_inits`].
fn slice(name: &str, x: &str) -> NodeProto {
    node(
        "Slice",
        name,
        &[
            x,
            &format!("{name}_s"),
            &format!("{name}_e"),
            "axes23",
            &format!("{name}_st"),
        ],
        &[name],
        vec![],
    )
}

/// The constants of [`slice`] `name`.
fn slice_inits(name: &str, starts: [i64; 2], ends: [i64; 2], steps: [i64; 2]) -> Vec<TensorProto> {
    vec![
        ti(&format!("{name}_s"), &[2], starts.to_vec()),
        ti(&format!("{name}_e"), &[2], ends.to_vec()),
        ti(&format!("{name}_st"), &[2], steps.to_vec()),
    ]
}

/// `x[:, :, y0::sy, x0::sx]` of a `c x h x w` cube, lines and columns up to `ends`.
fn crop_of(
    x: &[f32],
    (c, h, w): (usize, usize, usize),
    origin: [usize; 2],
    ends: [usize; 2],
    step: [usize; 2],
) -> Vec<f32> {
    let mut out = Vec::new();
    for ch in 0..c {
        for y in (origin[0]..ends[0].min(h)).step_by(step[0]) {
            for xx in (origin[1]..ends[1].min(w)).step_by(step[1]) {
                out.push(x[(ch * h + y) * w + xx]);
            }
        }
    }
    out
}

/// YOLOv5's Focus on a 3x11x10 input: the four phases of a 2x2 grid concatenated along
/// the channels (odd height: the first phase row keeps 6 lines, the second 5; so the
/// phases are cropped to 5 lines first, as the exporters write it).
fn focus_model() -> Vec<u8> {
    let phases = [
        ("p0", [0, 0]),
        ("p1", [1, 0]),
        ("p2", [0, 1]),
        ("p3", [1, 1]),
    ];
    let mut nodes = Vec::new();
    let mut inits = vec![ti("axes23", &[2], vec![2, 3])];
    for (name, [y0, x0]) in phases {
        nodes.push(slice(name, "x"));
        inits.extend(slice_inits(name, [y0, x0], [10, 10], [2, 2]));
    }
    nodes.push(node(
        "Concat",
        "y",
        &["p0", "p1", "p2", "p3"],
        &["y"],
        vec![("axis", A::I(1))],
    ));
    model_with(13, vec![vi("x", &[1, 3, 11, 10])], nodes, inits, &["y"])
}

fn focus_want(x: &[f32]) -> Vec<f32> {
    [[0, 0], [1, 0], [0, 1], [1, 1]]
        .iter()
        .flat_map(|&o| crop_of(x, (3, 11, 10), o, [10, 10], [2, 2]))
        .collect()
}

/// A crop read in place by a convolution (1x1, identity weights) of a 16-channel input;
/// with `strided`, a crop of three lines in steps of 4 and three columns in steps of 3
/// that is the network's output.
fn crop_model(strided: bool) -> Vec<u8> {
    let mut inits = vec![ti("axes23", &[2], vec![2, 3])];
    let nodes = if strided {
        inits.extend(slice_inits("y", [1, 2], [13, 11], [4, 3]));
        vec![slice("y", "x")]
    } else {
        let mut eye = vec![0f32; 16 * 16];
        for i in 0..16 {
            eye[i * 16 + i] = 1.0;
        }
        inits.push(tf("eye", &[16, 16, 1, 1], eye));
        inits.extend(slice_inits("a", [2, 1], [9, 8], [1, 1]));
        vec![
            slice("a", "x"),
            node("Conv", "y", &["a", "eye"], &["y"], vec![]),
        ]
    };
    model_with(13, vec![vi("x", &[1, 16, 12, 11])], nodes, inits, &["y"])
}

/// ShuffleNet v2's channel shuffle of 12 channels in 3 groups, then a mean over the
/// pixels (keepdims 0), as the network's head reads it.
fn shuffle_model() -> Vec<u8> {
    let nodes = vec![
        node("Reshape", "r1", &["x", "s5"], &["r1"], vec![]),
        node(
            "Transpose",
            "t",
            &["r1"],
            &["t"],
            vec![("perm", A::Is(vec![0, 2, 1, 3, 4]))],
        ),
        node("Reshape", "y", &["t", "s4"], &["y"], vec![]),
    ];
    let inits = vec![
        ti("s5", &[5], vec![1, 3, 4, 5, 6]),
        ti("s4", &[4], vec![1, 12, 5, 6]),
    ];
    model_with(13, vec![vi("x", &[1, 12, 5, 6])], nodes, inits, &["y"])
}

fn shuffle_want(x: &[f32]) -> Vec<f32> {
    // Output channel 3m + g reads input channel 4g + m.
    let px = 5 * 6;
    (0..12)
        .flat_map(|o| {
            let (m, g) = (o / 3, o % 3);
            x[(4 * g + m) * px..][..px].to_vec()
        })
        .collect()
}

/// `ReduceMean` over the pixels (keepdims 0) and `ReduceSum` over the channels.
fn reduce_model(op: &str, axes: &[i64], keep: i64) -> Vec<u8> {
    let nodes = vec![node(
        op,
        "y",
        &["x"],
        &["y"],
        vec![("axes", A::Is(axes.to_vec())), ("keepdims", A::I(keep))],
    )];
    model_with(11, vec![vi("x", &[1, 8, 4, 4])], nodes, vec![], &["y"])
}

fn ops(g: &Graph) -> Vec<&'static str> {
    g.nodes.iter().map(|n| n.op.name()).collect()
}

/// Runs `model` in fp16 on nv_full and nv_small and in int8 on nv_small and nv_full;
/// checks the output against `want` (fp16 exactly, int8 within one step of the scale).
fn check(model: &[u8], input: &[f32], want: &[f32]) {
    for config in ["nv_full", "nv_small"] {
        let g = load(model, config, Precision::Fp16);
        let (got, reference) = run_fp16(&g, config, input);
        assert_eq!(reference, want, "reference {config}");
        let bad = got.iter().zip(want).position(|(a, b)| a != b);
        assert!(
            bad.is_none(),
            "fp16 {config}: element {bad:?} {:?}",
            ops(&g)
        );
        let g = load(model, config, Precision::Int8);
        let (got, _) = run_int8(&g, config, input, false);
        let amax = want.iter().fold(0f32, |m, v| m.max(v.abs()));
        let err = got
            .iter()
            .zip(want)
            .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        // Calibrated max-abs on this input: one step is amax / 127 (the input's and the
        // output's scales may differ by a rounding each).
        assert!(
            err <= 1.01 * amax / 127.0,
            "int8 {config}: error {err}, max {amax}"
        );
    }
}

#[test]
fn focus_is_four_strided_crops_on_the_pdp() {
    let model = focus_model();
    let g = load(&model, "nv_full", Precision::Fp16);
    assert_eq!(ops(&g), ["Crop", "Crop", "Crop", "Crop", "Concat"]);
    let Op::Crop { origin, step } = &g.nodes[1].op else {
        panic!()
    };
    assert_eq!((*origin, *step), ([1, 0], [2, 2]));
    let x = exact_input(3 * 11 * 10, 1);
    check(&model, &x, &focus_want(&x));
}

#[test]
fn crops_in_place_and_strided() {
    let x = exact_input(16 * 12 * 11, 2);
    let model = crop_model(false);
    assert_eq!(
        ops(&load(&model, "nv_full", Precision::Fp16)),
        ["Crop", "Convolution"]
    );
    check(
        &model,
        &x,
        &crop_of(&x, (16, 12, 11), [2, 1], [9, 8], [1, 1]),
    );
    let want = crop_of(&x, (16, 12, 11), [1, 2], [13, 11], [4, 3]);
    assert_eq!(want.len(), 16 * 3 * 3);
    check(&crop_model(true), &x, &want);
}

#[test]
fn channel_shuffle_is_one_permutation() {
    let model = shuffle_model();
    let g = load(&model, "nv_small", Precision::Int8);
    assert_eq!(ops(&g), ["Convolution"]);
    let x = exact_input(12 * 5 * 6, 3);
    check(&model, &x, &shuffle_want(&x));
}

#[test]
fn reductions_over_pixels_and_channels() {
    let x = exact_input(8 * 16, 4);
    let model = reduce_model("ReduceMean", &[2, 3], 0);
    assert_eq!(ops(&load(&model, "nv_full", Precision::Fp16)), ["Pooling"]);
    let mean: Vec<f32> = x.chunks(16).map(|p| p.iter().sum::<f32>() / 16.0).collect();
    let g = load(&model, "nv_full", Precision::Fp16);
    let (got, _) = run_fp16(&g, "nv_full", &x);
    assert!(max_rel_err(&got, &mean) < 2e-3, "{got:?} {mean:?}");
    let model = reduce_model("ReduceSum", &[1], 1);
    let g = load(&model, "nv_small", Precision::Fp16);
    assert_eq!(ops(&g), ["Convolution"]);
    let sum: Vec<f32> = (0..16)
        .map(|p| (0..8).map(|c| x[c * 16 + p]).sum())
        .collect();
    let (got, _) = run_fp16(&g, "nv_small", &x);
    assert!(max_rel_err(&got, &sum) < 2e-3, "{got:?} {sum:?}");
    // A reduction of one spatial axis stays an error naming the choices.
    let hw = nvdla_hw::Config::by_name("nv_full").unwrap();
    let e = onnx::load(
        &reduce_model("ReduceMean", &[3], 1),
        &onnx::Options {
            target: Some(Target::new(hw, Precision::Fp16).unwrap()),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("reduces all the pixels"), "{e}");
}

/// A transpose that moves only axes of size 1 (a pooled `1 x C x 1 x 1` to `1 x 1 x 1 x C`,
/// as NHWC exports write it before the classifier) is an alias: no IR node.
#[test]
fn transpose_of_unit_axes_is_an_alias() {
    let nodes = vec![
        node("GlobalAveragePool", "p", &["x"], &["p"], vec![]),
        node(
            "Transpose",
            "t",
            &["p"],
            &["t"],
            vec![("perm", A::Is(vec![0, 2, 3, 1]))],
        ),
        node("Reshape", "y", &["t", "s2"], &["y"], vec![]),
    ];
    let model = model_with(
        13,
        vec![vi("x", &[1, 8, 3, 3])],
        nodes,
        vec![ti("s2", &[2], vec![1, 8])],
        &["y"],
    );
    let g = load(&model, "nv_full", Precision::Fp16);
    assert_eq!(ops(&g), ["Pooling"]);
    let x = exact_input(8 * 9, 5);
    let mean: Vec<f32> = x.chunks(9).map(|p| p.iter().sum::<f32>() / 9.0).collect();
    let (got, _) = run_fp16(&g, "nv_full", &x);
    assert!(max_rel_err(&got, &mean) < 2e-3, "{got:?} {mean:?}");
}
