//! The ONNX front end: the MNIST model from `shared/models`, small models written here
//! with the front end's own prost messages (each attribute-or-input form of the operators
//! whose attributes became inputs over the opsets, the constant folding of PyTorch's
//! shape computations, the mappings onto IR operations, checked on the fp32 reference),
//! error reporting, `--input-shape`, a deterministic mutation test (no panics on damaged
//! input), and the command line.

mod common;

use common::onnx::*;
use nvdla_compiler::frontend::onnx::{self, proto::*};
use nvdla_compiler::frontend::{self, ModelFiles};
use nvdla_compiler::ir::{Activation, EltwiseKind, Graph, Node, Op, PoolKind, Shape};
use nvdla_compiler::CompileError;
use std::path::PathBuf;

// ---------------------------------------------------------------------------------------
// Model writing helpers

fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/models/onnx");
    if p.join("mnist-cntk.onnx").is_file() {
        Some(p)
    } else {
        eprintln!("skipped: {} not found", p.display());
        None
    }
}

fn load(bytes: &[u8]) -> nvdla_compiler::Result<Graph> {
    onnx::load(bytes, &onnx::Options::default())
}

fn ok(bytes: &[u8]) -> Graph {
    load(bytes).unwrap_or_else(|e| panic!("{e}"))
}

fn err(bytes: &[u8]) -> String {
    match load(bytes) {
        Ok(g) => panic!("expected an error, got {} nodes", g.nodes.len()),
        Err(e) => e.to_string(),
    }
}

/// The ops of the graph, in order.
fn ops(g: &Graph) -> Vec<&Op> {
    g.nodes.iter().map(|n| &n.op).collect()
}

fn only(g: &Graph) -> &Node {
    assert_eq!(g.nodes.len(), 1, "{:?}", g.nodes);
    &g.nodes[0]
}

fn out_shape(g: &Graph) -> Shape {
    g.shape(g.outputs[0])
}

/// Deterministic values.
fn seq(n: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) * scale)
        .collect()
}

/// The reference's output for input `x`.
fn run(g: &Graph, x: &[f32]) -> Vec<f32> {
    let v = nvdla_compiler::reference::run(g, &[(g.inputs[0], x.to_vec())]).unwrap();
    v[g.outputs[0].0].clone()
}

fn assert_close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "element {i}: {g} vs {w}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// The real model

#[test]
fn mnist_cntk_loads() {
    let Some(dir) = shared() else { return };
    let g = frontend::load(&ModelFiles::Onnx {
        model: dir.join("mnist-cntk.onnx"),
        input_shapes: vec![],
        cpu_fallback: false,
        target: None,
    })
    .unwrap();
    assert_eq!(g.name, "CNTKGraph");
    assert_eq!(g.inputs.len(), 1);
    assert_eq!(g.tensor(g.inputs[0]).name, "Input3");
    assert_eq!(g.shape(g.inputs[0]), Shape::new(1, 1, 28, 28));
    assert_eq!(g.tensor(g.outputs[0]).name, "Plus214_Output_0");
    assert_eq!(out_shape(&g), Shape::new(1, 10, 1, 1));
    let names: Vec<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
    // The Reshape is layout only; the Gemm (unnamed) reads the pooling output directly.
    assert_eq!(
        names,
        [
            "Convolution28",
            "ReLU32",
            "Pooling66",
            "Convolution110",
            "ReLU114",
            "Pooling160",
            "Gemm#7"
        ]
    );
    let Op::Conv(c) = &g.nodes[0].op else {
        panic!()
    };
    // SAME_UPPER with a 5x5 kernel: 2 on every side.
    assert_eq!(c.window.pad, [2, 2, 2, 2]);
    assert_eq!(g.shape(g.nodes[5].outputs[0]), Shape::new(1, 16, 4, 4));
    let Op::FullyConnected { weight, bias } = &g.nodes[6].op else {
        panic!()
    };
    assert_eq!(weight.dims, [10, 256]);
    assert_eq!(bias.as_ref().unwrap().len(), 10);
    assert_eq!(g.nodes[6].inputs, g.nodes[5].outputs);
}

// ---------------------------------------------------------------------------------------
// Attribute and input forms across opsets

#[test]
fn clip_bounds_as_attributes_and_as_inputs() {
    let old = ok(&model(
        10,
        &[1, 2, 3, 3],
        vec![node(
            "Clip",
            "c",
            &["x"],
            &["y"],
            vec![("min", A::F(-1.0)), ("max", A::F(6.0))],
        )],
        vec![],
    ));
    let new = ok(&model(
        13,
        &[1, 2, 3, 3],
        vec![node("Clip", "c", &["x", "lo", "hi"], &["y"], vec![])],
        vec![tf("lo", &[], vec![-1.0]), tf("hi", &[], vec![6.0])],
    ));
    for g in [&old, &new] {
        assert_eq!(
            only(g).op,
            Op::Activation(Activation::Clip { lo: -1.0, hi: 6.0 })
        );
    }
    // min 0 without max is a ReLU; a missing min (empty name) is -inf.
    let relu = ok(&model(
        13,
        &[1, 2, 3, 3],
        vec![node("Clip", "c", &["x", "lo"], &["y"], vec![])],
        vec![tf("lo", &[], vec![0.0])],
    ));
    assert_eq!(
        only(&relu).op,
        Op::Activation(Activation::Relu { slope: 0.0 })
    );
    let upper = ok(&model(
        13,
        &[1, 2, 3, 3],
        vec![node("Clip", "c", &["x", "", "hi"], &["y"], vec![])],
        vec![tf("hi", &[], vec![6.0])],
    ));
    assert_eq!(
        only(&upper).op,
        Op::Activation(Activation::Clip {
            lo: f32::NEG_INFINITY,
            hi: 6.0
        })
    );
}

fn conv_w(k: i64, c: i64, kh: i64) -> TensorProto {
    tf("w", &[k, c, kh, kh], seq((k * c * kh * kh) as usize, 0.1))
}

#[test]
fn zero_pad_folds_into_the_convolution_in_both_forms() {
    let conv = node(
        "Conv",
        "conv",
        &["p", "w"],
        &["y"],
        vec![("pads", A::Is(vec![1, 0, 1, 0]))],
    );
    let old = ok(&model(
        10,
        &[1, 2, 5, 5],
        vec![
            node(
                "Pad",
                "pad",
                &["x"],
                &["p"],
                vec![("pads", A::Is(vec![0, 0, 2, 1, 0, 0, 0, 3]))],
            ),
            conv.clone(),
        ],
        vec![conv_w(3, 2, 3)],
    ));
    let new = ok(&model(
        13,
        &[1, 2, 5, 5],
        vec![
            node(
                "Pad",
                "pad",
                &["x", "pads"],
                &["p"],
                vec![("mode", A::S("constant"))],
            ),
            conv,
        ],
        vec![
            conv_w(3, 2, 3),
            ti("pads", &[8], vec![0, 0, 2, 1, 0, 0, 0, 3]),
        ],
    ));
    for g in [&old, &new] {
        let Op::Conv(c) = &only(g).op else { panic!() };
        // [top, left, bottom, right]: the Pad's (2, 1, 0, 3) plus the Conv's (1, 0, 1, 0).
        assert_eq!(c.window.pad, [3, 1, 1, 3]);
        assert_eq!(out_shape(g), Shape::new(1, 3, 7, 7));
    }
    // Opset 18's axes input.
    let axes = ok(&model(
        18,
        &[1, 2, 5, 5],
        vec![
            node("Pad", "pad", &["x", "pads", "", "axes"], &["p"], vec![]),
            node("Conv", "conv", &["p", "w"], &["y"], vec![]),
        ],
        vec![
            conv_w(3, 2, 3),
            ti("pads", &[4], vec![1, 2, 1, 2]),
            ti("axes", &[2], vec![2, 3]),
        ],
    ));
    let Op::Conv(c) = &only(&axes).op else {
        panic!()
    };
    assert_eq!(c.window.pad, [1, 2, 1, 2]);
    // Zero padding does not fold into max pooling; -inf does.
    let e = err(&model(
        13,
        &[1, 2, 5, 5],
        vec![
            node("Pad", "pad", &["x", "pads"], &["p"], vec![]),
            node(
                "MaxPool",
                "mp",
                &["p"],
                &["y"],
                vec![("kernel_shape", A::Is(vec![2, 2]))],
            ),
        ],
        vec![ti("pads", &[8], vec![0, 0, 1, 1, 0, 0, 1, 1])],
    ));
    assert!(
        e.contains("layer `mp` (MaxPool)") && e.contains("padded with 0"),
        "{e}"
    );
    let g = ok(&model(
        13,
        &[1, 2, 5, 5],
        vec![
            node("Pad", "pad", &["x", "pads", "v"], &["p"], vec![]),
            node(
                "MaxPool",
                "mp",
                &["p"],
                &["y"],
                vec![("kernel_shape", A::Is(vec![2, 2]))],
            ),
        ],
        vec![
            ti("pads", &[8], vec![0, 0, 1, 1, 0, 0, 1, 1]),
            tf("v", &[], vec![f32::NEG_INFINITY]),
        ],
    ));
    let Op::Pool(p) = &only(&g).op else { panic!() };
    assert_eq!(p.window.pad, [1, 1, 1, 1]);
    // A Pad whose result is an output, or reflect padding, is refused by name.
    let e = err(&model(
        13,
        &[1, 2, 5, 5],
        vec![node(
            "Pad",
            "pad",
            &["x", "pads"],
            &["y"],
            vec![("mode", A::S("reflect"))],
        )],
        vec![ti("pads", &[8], vec![0, 0, 1, 1, 0, 0, 1, 1])],
    ));
    assert!(e.contains("layer `pad` (Pad): mode `reflect`"), "{e}");
}

#[test]
fn squeeze_and_unsqueeze_axes_as_attributes_and_as_inputs() {
    // [1, 4] -> unsqueeze (2, 3) -> [1, 4, 1, 1] -> conv 1x1 -> squeeze (2, 3) -> [1, 2].
    let w = tf("w", &[2, 4, 1, 1], seq(8, 0.5));
    let old = ok(&model(
        11,
        &[1, 4],
        vec![
            node(
                "Unsqueeze",
                "u",
                &["x"],
                &["u"],
                vec![("axes", A::Is(vec![2, -1]))],
            ),
            node("Conv", "c", &["u", "w"], &["c"], vec![]),
            node(
                "Squeeze",
                "s",
                &["c"],
                &["y"],
                vec![("axes", A::Is(vec![3, 2]))],
            ),
        ],
        vec![w.clone()],
    ));
    let new = ok(&model(
        13,
        &[1, 4],
        vec![
            node("Unsqueeze", "u", &["x", "ax"], &["u"], vec![]),
            node("Conv", "c", &["u", "w"], &["c"], vec![]),
            node("Squeeze", "s", &["c", "ax"], &["y"], vec![]),
        ],
        vec![w, ti("ax", &[2], vec![2, 3])],
    ));
    for g in [&old, &new] {
        // Layout-only ops emit nothing.
        assert!(matches!(ops(g)[..], [Op::Conv(_)]), "{:?}", ops(g));
        assert_eq!(out_shape(g), Shape::new(1, 2, 1, 1));
        assert_eq!(g.tensor(g.outputs[0]).name, "y");
    }
    assert_eq!(
        run(&old, &[1.0, 2.0, 3.0, 4.0]),
        run(&new, &[1.0, 2.0, 3.0, 4.0])
    );
}

#[test]
fn split_sizes_as_attribute_input_and_num_outputs() {
    let forms = [
        model_with(
            11,
            vec![vi("x", &[1, 5, 2, 2])],
            vec![node(
                "Split",
                "s",
                &["x"],
                &["a", "b"],
                vec![("axis", A::I(1)), ("split", A::Is(vec![2, 3]))],
            )],
            vec![],
            &["a", "b"],
        ),
        model_with(
            13,
            vec![vi("x", &[1, 5, 2, 2])],
            vec![node(
                "Split",
                "s",
                &["x", "sp"],
                &["a", "b"],
                vec![("axis", A::I(1))],
            )],
            vec![ti("sp", &[2], vec![2, 3])],
            &["a", "b"],
        ),
        // num_outputs: ceil(5 / 2) = 3, then 2.
        model_with(
            18,
            vec![vi("x", &[1, 5, 2, 2])],
            vec![node(
                "Split",
                "s",
                &["x"],
                &["a", "b"],
                vec![("axis", A::I(1)), ("num_outputs", A::I(2))],
            )],
            vec![],
            &["a", "b"],
        ),
    ];
    let x = seq(20, 1.0);
    for (i, m) in forms.iter().enumerate() {
        let g = ok(m);
        // Each part is a 1x1 convolution selecting its channels.
        assert!(
            ops(&g).iter().all(|o| matches!(o, Op::Conv(_))),
            "{:?}",
            ops(&g)
        );
        let v = nvdla_compiler::reference::run(&g, &[(g.inputs[0], x.clone())]).unwrap();
        let split = if i == 2 { 3 } else { 2 };
        assert_eq!(v[g.outputs[0].0], x[..split * 4]);
        assert_eq!(v[g.outputs[1].0], x[split * 4..]);
    }
}

#[test]
fn split_num_outputs_must_match_the_outputs() {
    // Found by the `onnx` fuzz target: a num_outputs of 1.5 billion made the front end
    // list that many parts before noticing the node has four outputs.
    let m = model_with(
        18,
        vec![vi("x", &[1, 5, 2, 2])],
        vec![node(
            "Split",
            "s",
            &["x"],
            &["a", "b"],
            vec![("axis", A::I(1)), ("num_outputs", A::I(1_577_058_303))],
        )],
        vec![],
        &["a", "b"],
    );
    let e = err(&m);
    assert!(e.contains("num_outputs 1577058303 but 2 outputs"), "{e}");
}

#[test]
fn upsample_and_resize_scales_in_every_form_become_a_deconvolution() {
    let forms = [
        model(
            7,
            &[1, 2, 3, 3],
            vec![node(
                "Upsample",
                "u",
                &["x"],
                &["y"],
                vec![("scales", A::Fs(vec![1.0, 1.0, 2.0, 3.0]))],
            )],
            vec![],
        ),
        model(
            9,
            &[1, 2, 3, 3],
            vec![node("Upsample", "u", &["x", "s"], &["y"], vec![])],
            vec![tf("s", &[4], vec![1.0, 1.0, 2.0, 3.0])],
        ),
        model(
            10,
            &[1, 2, 3, 3],
            vec![node("Resize", "u", &["x", "s"], &["y"], vec![])],
            vec![tf("s", &[4], vec![1.0, 1.0, 2.0, 3.0])],
        ),
        model(
            11,
            &[1, 2, 3, 3],
            vec![node(
                "Resize",
                "u",
                &["x", "", "s"],
                &["y"],
                vec![("mode", A::S("nearest"))],
            )],
            vec![tf("s", &[4], vec![1.0, 1.0, 2.0, 3.0])],
        ),
        model(
            13,
            &[1, 2, 3, 3],
            vec![node("Resize", "u", &["x", "", "", "z"], &["y"], vec![])],
            vec![ti("z", &[4], vec![1, 2, 6, 9])],
        ),
        model(
            19,
            &[1, 2, 3, 3],
            vec![node(
                "Resize",
                "u",
                &["x", "", "", "z"],
                &["y"],
                vec![("axes", A::Is(vec![2, 3]))],
            )],
            vec![ti("z", &[2], vec![6, 9])],
        ),
    ];
    let x = seq(18, 1.0);
    let mut want = Vec::new();
    for c in 0..2 {
        for oy in 0..6 {
            for ox in 0..9 {
                want.push(x[(c * 3 + oy / 2) * 3 + ox / 3]);
            }
        }
    }
    for m in &forms {
        let g = ok(m);
        let Op::Deconv(d) = &only(&g).op else {
            panic!("{:?}", ops(&g))
        };
        assert_eq!(
            (d.window.kernel, d.window.stride, d.groups),
            ([2, 3], [2, 3], 2)
        );
        assert_eq!(out_shape(&g), Shape::new(1, 2, 6, 9));
        assert_eq!(run(&g, &x), want);
    }
    let e = err(&model(
        13,
        &[1, 2, 3, 3],
        vec![node(
            "Resize",
            "r",
            &["x", "", "s"],
            &["y"],
            vec![("mode", A::S("cubic"))],
        )],
        vec![tf("s", &[4], vec![1.0, 1.0, 2.0, 2.0])],
    ));
    assert!(e.contains("layer `r` (Resize): mode `cubic`"), "{e}");
    let e = err(&model(
        13,
        &[1, 2, 3, 3],
        vec![node(
            "Resize",
            "r",
            &["x", "", "s"],
            &["y"],
            vec![("nearest_mode", A::S("ceil"))],
        )],
        vec![tf("s", &[4], vec![1.0, 1.0, 2.0, 2.0])],
    ));
    assert!(e.contains("does not repeat every pixel"), "{e}");
}

/// ONNX Runtime's linear resize of one axis: the source coordinate clamped to the input,
/// then the two neighbours weighted by the fraction.
fn linear_1d(x: &[f32], o: usize, coord: impl Fn(usize) -> f64) -> Vec<f32> {
    let n = x.len();
    (0..o)
        .map(|p| {
            let c = coord(p).clamp(0.0, (n - 1) as f64);
            let (i, f) = (c.floor() as usize, (c - c.floor()) as f32);
            x[i] * (1.0 - f) + x[(i + 1).min(n - 1)] * f
        })
        .collect()
}

#[test]
fn linear_resize_is_an_edge_padding_and_a_deconvolution() {
    // Bilinear by 2 (half_pixel) and by 3x2 (asymmetric): ONNX Runtime's values, from an
    // IR edge padding of one pixel and a depthwise deconvolution.
    // By 32 (U²-Net's deepest side output): two deconvolutions, lines then columns, since
    // one would compute 1 024 phases of every channel in one cube.
    for (ctm, [fy, fx]) in [
        ("half_pixel", [2usize, 2usize]),
        ("asymmetric", [3, 2]),
        ("half_pixel", [32, 32]),
    ] {
        let (h, w) = (3, 4);
        let m = model(
            13,
            &[1, 2, h as i64, w as i64],
            vec![node(
                "Resize",
                "r",
                &["x", "", "s"],
                &["y"],
                vec![
                    ("mode", A::S("linear")),
                    ("coordinate_transformation_mode", A::S(ctm)),
                ],
            )],
            vec![tf("s", &[4], vec![1.0, 1.0, fy as f32, fx as f32])],
        );
        let g = ok(&m);
        let separable = fy * fx > 64;
        assert!(
            matches!(
                (separable, &ops(&g)[..]),
                (false, [Op::EdgePad { pads: [1, 1, 1, 1] }, Op::Deconv(_)])
                    | (
                        true,
                        [
                            Op::EdgePad { pads: [1, 1, 1, 1] },
                            Op::Deconv(_),
                            Op::Deconv(_)
                        ]
                    )
            ),
            "{:?}",
            ops(&g)
        );
        let coord = |f: usize| {
            move |p: usize| match ctm {
                "half_pixel" => (p as f64 + 0.5) / f as f64 - 0.5,
                _ => p as f64 / f as f64,
            }
        };
        let x: Vec<f32> = seq(2 * h * w, 1.0).iter().map(|v| v * v).collect();
        let mut want = Vec::new();
        for plane in x.chunks(h * w) {
            let rows: Vec<Vec<f32>> = plane
                .chunks(w)
                .map(|r| linear_1d(r, w * fx, coord(fx)))
                .collect();
            let mut out = vec![0.0; h * fy * w * fx];
            for ox in 0..w * fx {
                let col: Vec<f32> = rows.iter().map(|r| r[ox]).collect();
                for (oy, v) in linear_1d(&col, h * fy, coord(fy)).into_iter().enumerate() {
                    out[oy * w * fx + ox] = v;
                }
            }
            want.extend(out);
        }
        assert_eq!(out_shape(&g), Shape::new(1, 2, h * fy, w * fx));
        assert_close(&run(&g, &x), &want);
    }
}

#[test]
fn edge_padding_repeats_the_border_pixels() {
    let m = model(
        13,
        &[1, 1, 2, 3],
        vec![node(
            "Pad",
            "p",
            &["x", "pads"],
            &["y"],
            vec![("mode", A::S("edge"))],
        )],
        vec![ti("pads", &[8], vec![0, 0, 1, 2, 0, 0, 0, 1])],
    );
    let g = ok(&m);
    assert!(matches!(only(&g).op, Op::EdgePad { pads: [1, 2, 0, 1] }));
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    #[rustfmt::skip]
    let want = [
        1.0, 1.0, 1.0, 2.0, 3.0, 3.0,
        1.0, 1.0, 1.0, 2.0, 3.0, 3.0,
        4.0, 4.0, 4.0, 5.0, 6.0, 6.0,
    ];
    assert_eq!(run(&g, &x), want);
}

/// PyTorch's `x.view(x.size(0), -1)`: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
#[test]
fn pytorch_shape_computation_is_folded() {
    for opset in [9, 11, 13] {
        let unsq = if opset >= 13 {
            node("Unsqueeze", "u", &["n", "ax0"], &["n1"], vec![])
        } else {
            node(
                "Unsqueeze",
                "u",
                &["n"],
                &["n1"],
                vec![("axes", A::Is(vec![0]))],
            )
        };
        let g = ok(&model(
            opset,
            &[1, 2, 4, 4],
            vec![
                node(
                    "Conv",
                    "conv",
                    &["x", "w"],
                    &["c"],
                    vec![("pads", A::Is(vec![1, 1, 1, 1]))],
                ),
                node("Shape", "shape", &["c"], &["s"], vec![]),
                node(
                    "Constant",
                    "zero",
                    &[],
                    &["z"],
                    vec![("value", A::T(Box::new(ti("", &[], vec![0]))))],
                ),
                node(
                    "Gather",
                    "gather",
                    &["s", "z"],
                    &["n"],
                    vec![("axis", A::I(0))],
                ),
                unsq,
                node(
                    "Constant",
                    "minus1",
                    &[],
                    &["m"],
                    vec![("value", A::T(Box::new(ti("", &[1], vec![-1]))))],
                ),
                node(
                    "Concat",
                    "cat",
                    &["n1", "m"],
                    &["shape"],
                    vec![("axis", A::I(0))],
                ),
                node(
                    "Cast",
                    "cast",
                    &["shape"],
                    &["shape64"],
                    vec![("to", A::I(7))],
                ),
                node("Reshape", "view", &["c", "shape64"], &["flat"], vec![]),
                node(
                    "Gemm",
                    "fc",
                    &["flat", "fw", "fb"],
                    &["y"],
                    vec![("transB", A::I(1))],
                ),
            ],
            vec![
                conv_w(3, 2, 3),
                tf("fw", &[5, 48], seq(240, 0.01)),
                tf("fb", &[5], seq(5, 0.1)),
                ti("ax0", &[1], vec![0]),
            ],
        ));
        assert!(
            matches!(ops(&g)[..], [Op::Conv(_), Op::FullyConnected { .. }]),
            "{:?}",
            ops(&g)
        );
        assert_eq!(g.nodes[1].inputs, g.nodes[0].outputs);
        assert_eq!(out_shape(&g), Shape::new(1, 5, 1, 1));
    }
}

#[test]
fn slice_starts_and_ends_as_attributes_and_as_inputs() {
    // Slicing the constant shape [1, 6, 2, 2] to its last two dims, then Reshape.
    let tail = |opset: i64| {
        if opset < 10 {
            node(
                "Slice",
                "sl",
                &["s"],
                &["hw"],
                vec![
                    ("starts", A::Is(vec![2])),
                    ("ends", A::Is(vec![i64::MAX])),
                    ("axes", A::Is(vec![0])),
                ],
            )
        } else {
            node("Slice", "sl", &["s", "st", "en"], &["hw"], vec![])
        }
    };
    for opset in [9, 13] {
        let g = ok(&model(
            opset,
            &[1, 6, 2, 2],
            vec![
                node("Shape", "shape", &["x"], &["s"], vec![]),
                tail(opset),
                node(
                    "Concat",
                    "cat",
                    &["head", "hw"],
                    &["ns"],
                    vec![("axis", A::I(0))],
                ),
                node("Reshape", "r", &["x", "ns"], &["r"], vec![]),
                node("Relu", "relu", &["r"], &["y"], vec![]),
            ],
            vec![
                ti("st", &[1], vec![-2]),
                ti("en", &[1], vec![100]),
                ti("head", &[2], vec![1, 6]),
            ],
        ));
        assert_eq!(out_shape(&g), Shape::new(1, 6, 2, 2));
    }
}

#[test]
fn slicing_an_empty_constant_axis_backwards_is_empty() {
    // Slice of a [0]-shaped constant with step -1, concatenated into a Reshape shape.
    let g = ok(&model(
        13,
        &[1, 2, 2, 2],
        vec![
            node(
                "Slice",
                "sl",
                &["e", "st", "en", "ax", "step"],
                &["none"],
                vec![],
            ),
            node(
                "Concat",
                "cat",
                &["shape", "none"],
                &["ns"],
                vec![("axis", A::I(0))],
            ),
            node("Reshape", "r", &["x", "ns"], &["y"], vec![]),
        ],
        vec![
            ti("e", &[0], vec![]),
            ti("st", &[1], vec![-1]),
            ti("en", &[1], vec![i64::MIN]),
            ti("ax", &[1], vec![0]),
            ti("step", &[1], vec![-1]),
            ti("shape", &[2], vec![1, 8]),
        ],
    ));
    assert_eq!(out_shape(&g), Shape::new(1, 2, 2, 2));
    assert_eq!(run(&g, &seq(8, 1.0)), seq(8, 1.0));
}

#[test]
fn opset_6_legacy_broadcast_is_per_channel() {
    let g = ok(&model(
        6,
        &[1, 3, 2, 2],
        vec![node(
            "Add",
            "add",
            &["x", "b"],
            &["y"],
            vec![("broadcast", A::I(1)), ("axis", A::I(1))],
        )],
        vec![tf("b", &[3], vec![1.0, 2.0, 3.0])],
    ));
    assert_eq!(
        only(&g).op,
        Op::ChannelAffine {
            scale: None,
            bias: Some(nvdla_compiler::ir::Weights::vector(vec![1.0, 2.0, 3.0]))
        }
    );
    // The same constant at opset 7 broadcasts along the last axis: not per channel.
    let e = err(&model(
        7,
        &[1, 3, 2, 3],
        vec![node("Add", "add", &["x", "b"], &["y"], vec![])],
        vec![tf("b", &[3], vec![1.0, 2.0, 3.0])],
    ));
    assert!(e.contains("varies along axis 3"), "{e}");
}

// ---------------------------------------------------------------------------------------
// Mappings, checked on the reference

#[test]
fn arithmetic_with_constants_becomes_a_channel_affine() {
    let x = seq(12, 0.5);
    let c = [2.0f32, -4.0, 0.5];
    type Case = (&'static str, bool, fn(f32, f32) -> f32);
    let cases: [Case; 5] = [
        ("Add", true, |x, c| x + c),
        ("Sub", true, |x, c| x - c),
        ("Sub", false, |x, c| c - x),
        ("Mul", false, |x, c| x * c),
        ("Div", true, |x, c| x / c),
    ];
    for (op, act_first, f) in cases {
        let ins: [&str; 2] = if act_first { ["x", "c"] } else { ["c", "x"] };
        let g = ok(&model(
            13,
            &[1, 3, 2, 2],
            vec![node(op, "o", &ins, &["y"], vec![])],
            vec![tf("c", &[3, 1, 1], c.to_vec())],
        ));
        assert!(matches!(only(&g).op, Op::ChannelAffine { .. }));
        let want: Vec<f32> = x.iter().enumerate().map(|(i, &v)| f(v, c[i / 4])).collect();
        assert_close(&run(&g, &x), &want);
    }
    let e = err(&model(
        13,
        &[1, 3, 2, 2],
        vec![node("Div", "d", &["c", "x"], &["y"], vec![])],
        vec![tf("c", &[1], vec![1.0])],
    ));
    assert!(
        e.contains("layer `d` (Div): dividing a constant by a computed tensor"),
        "{e}"
    );
}

#[test]
fn min_of_two_tensors_is_minus_the_max_of_their_negations() {
    let bytes = model_with(
        13,
        vec![vi("x", &[1, 2, 2, 2])],
        vec![
            node("Neg", "n", &["x"], &["nx"], vec![]),
            node("Min", "m", &["x", "nx"], &["y"], vec![]),
        ],
        vec![],
        &["y"],
    );
    let g = ok(&bytes);
    assert!(ops(&g).iter().any(|o| matches!(
        o,
        Op::Eltwise {
            kind: EltwiseKind::Max,
            ..
        }
    )));
    let x = seq(8, 1.0);
    let want: Vec<f32> = x.iter().map(|v| -v.abs()).collect();
    assert_eq!(run(&g, &x), want);
}

#[test]
fn gemm_attributes_and_matmul() {
    // y = 0.5 * x @ B^T + 2 * C, B [3, 4], C [3].
    let b = seq(12, 0.25);
    let c = vec![1.0, -1.0, 0.5];
    let g = ok(&model(
        13,
        &[1, 4],
        vec![node(
            "Gemm",
            "g",
            &["x", "b", "c"],
            &["y"],
            vec![
                ("alpha", A::F(0.5)),
                ("beta", A::F(2.0)),
                ("transB", A::I(1)),
            ],
        )],
        vec![tf("b", &[3, 4], b.clone()), tf("c", &[3], c.clone())],
    ));
    let x = vec![1.0, 2.0, -1.0, 0.5];
    let want: Vec<f32> = (0..3)
        .map(|o| 0.5 * (0..4).map(|i| x[i] * b[o * 4 + i]).sum::<f32>() + 2.0 * c[o])
        .collect();
    assert_close(&run(&g, &x), &want);
    // MatMul by a constant [4, 3] (no transposition).
    let m = ok(&model(
        13,
        &[1, 4],
        vec![node("MatMul", "mm", &["x", "b"], &["y"], vec![])],
        vec![tf("b", &[4, 3], b.clone())],
    ));
    let want: Vec<f32> = (0..3)
        .map(|o| (0..4).map(|i| x[i] * b[i * 3 + o]).sum())
        .collect();
    assert_close(&run(&m, &x), &want);
    let e = err(&model(
        13,
        &[2, 4],
        vec![node(
            "Gemm",
            "g",
            &["x", "b"],
            &["y"],
            vec![("transA", A::I(1))],
        )],
        vec![tf("b", &[2, 3], seq(6, 1.0))],
    ));
    assert!(e.contains("layer `g` (Gemm): transA"), "{e}");
}

#[test]
fn pooling_shapes_follow_onnx() {
    let pool = |opset: i64, op: &str, attrs: Vec<(&str, A)>| {
        ok(&model(
            opset,
            &[1, 1, 5, 5],
            vec![node(op, "p", &["x"], &["y"], attrs)],
            vec![],
        ))
    };
    // Ceil mode: ceil((5 - 2) / 2) + 1 = 3.
    let g = pool(
        13,
        "MaxPool",
        vec![
            ("kernel_shape", A::Is(vec![2, 2])),
            ("strides", A::Is(vec![2, 2])),
            ("ceil_mode", A::I(1)),
        ],
    );
    let Op::Pool(p) = &only(&g).op else { panic!() };
    assert!(p.ceil_mode && p.kind == PoolKind::Max);
    assert_eq!(out_shape(&g), Shape::new(1, 1, 3, 3));
    // SAME_UPPER, stride 2: ceil(5 / 2) = 3, padding 1 at the end.
    let g = pool(
        13,
        "AveragePool",
        vec![
            ("kernel_shape", A::Is(vec![3, 3])),
            ("strides", A::Is(vec![2, 2])),
            ("auto_pad", A::S("SAME_UPPER")),
        ],
    );
    let Op::Pool(p) = &only(&g).op else { panic!() };
    assert_eq!((p.window.pad, p.count_include_pad), ([1, 1, 1, 1], false));
    let g = pool(
        13,
        "AveragePool",
        vec![
            ("kernel_shape", A::Is(vec![2, 2])),
            ("auto_pad", A::S("SAME_LOWER")),
        ],
    );
    let Op::Pool(p) = &only(&g).op else { panic!() };
    assert_eq!(p.window.pad, [1, 1, 0, 0]);
    let g = pool(13, "GlobalAveragePool", vec![]);
    assert_eq!(out_shape(&g), Shape::new(1, 1, 1, 1));
    // MaxPool's indices are an error only when something reads them.
    let with_indices = |outputs: &[&str]| {
        model_with(
            13,
            vec![vi("x", &[1, 1, 5, 5])],
            vec![node(
                "MaxPool",
                "p",
                &["x"],
                &["y", "idx"],
                vec![("kernel_shape", A::Is(vec![2, 2]))],
            )],
            vec![],
            outputs,
        )
    };
    ok(&with_indices(&["y"]));
    let e = err(&with_indices(&["y", "idx"]));
    assert!(
        e.contains("layer `idx` (graph output): MaxPool's Indices output is not supported"),
        "{e}"
    );
}

#[test]
fn conv_transpose_output_shape_and_padding() {
    let w = tf("w", &[2, 3, 3, 3], seq(54, 0.1));
    // output_padding 1: 2 * (3 - 1) + 1 + 3 - 0 = 8.
    let g = ok(&model(
        13,
        &[1, 2, 3, 3],
        vec![node(
            "ConvTranspose",
            "d",
            &["x", "w"],
            &["y"],
            vec![
                ("strides", A::Is(vec![2, 2])),
                ("output_padding", A::Is(vec![1, 1])),
            ],
        )],
        vec![w.clone()],
    ));
    assert_eq!(out_shape(&g), Shape::new(1, 3, 8, 8));
    // output_shape 6x6 with stride 2: total padding 7 - 6 = 1, at the end (not SAME_UPPER).
    let g = ok(&model(
        13,
        &[1, 2, 3, 3],
        vec![node(
            "ConvTranspose",
            "d",
            &["x", "w"],
            &["y"],
            vec![
                ("strides", A::Is(vec![2, 2])),
                ("output_shape", A::Is(vec![6, 6])),
            ],
        )],
        vec![w],
    ));
    let Op::Deconv(d) = &only(&g).op else {
        panic!()
    };
    assert_eq!(d.window.pad, [1, 1, 0, 0]);
    assert_eq!(out_shape(&g), Shape::new(1, 3, 6, 6));
}

#[test]
fn softmax_axes_by_opset() {
    // Opset 11, axis 1 of [1, 2, 3, 3]: over all 18 values (a Flatten first).
    let g = ok(&model(
        11,
        &[1, 2, 3, 3],
        vec![node("Softmax", "s", &["x"], &["y"], vec![])],
        vec![],
    ));
    assert!(matches!(ops(&g)[..], [Op::Flatten, Op::Softmax]));
    let y = run(&g, &seq(18, 0.1));
    assert!((y.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    // Opset 13, axis 1: over the channels at every position.
    let g = ok(&model(
        13,
        &[1, 2, 3, 3],
        vec![node(
            "Softmax",
            "s",
            &["x"],
            &["y"],
            vec![("axis", A::I(1))],
        )],
        vec![],
    ));
    assert!(matches!(ops(&g)[..], [Op::Softmax]));
    // Opset 13, default (last) axis of a 4-D tensor: not over channels.
    let e = err(&model(
        13,
        &[1, 2, 3, 3],
        vec![node("Softmax", "s", &["x"], &["y"], vec![])],
        vec![],
    ));
    assert!(
        e.contains("layer `s` (Softmax): softmax over axis 3"),
        "{e}"
    );
}

#[test]
fn batch_norm_becomes_one_affine() {
    let g = ok(&model(
        15,
        &[1, 2, 1, 2],
        vec![node(
            "BatchNormalization",
            "bn",
            &["x", "s", "b", "m", "v"],
            &["y"],
            vec![("epsilon", A::F(0.0))],
        )],
        vec![
            tf("s", &[2], vec![2.0, 1.0]),
            tf("b", &[2], vec![1.0, 0.0]),
            tf("m", &[2], vec![1.0, -1.0]),
            tf("v", &[2], vec![4.0, 1.0]),
        ],
    ));
    assert!(matches!(only(&g).op, Op::ChannelAffine { .. }));
    assert_close(&run(&g, &[1.0, 3.0, -1.0, 1.0]), &[1.0, 3.0, 0.0, 2.0]);
}

#[test]
fn outputs_that_alias_inputs_or_each_other_get_a_copy() {
    let g = ok(&model_with(
        13,
        vec![vi("x", &[1, 2])],
        vec![
            node("Identity", "i", &["x"], &["y"], vec![]),
            node("Dropout", "d", &["x"], &["z"], vec![]),
        ],
        vec![],
        &["y", "z"],
    ));
    assert_eq!(g.outputs.len(), 2);
    assert!(g.nodes.iter().all(|n| n.op == Op::Identity));
    assert_eq!(g.tensor(g.outputs[0]).name, "y");
    assert_eq!(run(&g, &[1.0, 2.0]), [1.0, 2.0]);
}

// ---------------------------------------------------------------------------------------
// Inputs and shapes

#[test]
fn dynamic_dimensions_need_input_shape() {
    // A symbolic batch alone is taken as 1, and the graph says so.
    let bytes = model(
        13,
        &[-1, 3, 4, 4],
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![],
    );
    let g = ok(&bytes);
    assert_eq!(g.shape(g.inputs[0]), Shape::new(1, 3, 4, 4));
    assert!(
        g.notes[0].contains("input `x`: its symbolic batch dimension is taken as 1"),
        "{:?}",
        g.notes
    );
    // Other symbolic dimensions need --input-shape.
    let bytes = model(
        13,
        &[-1, 3, -1, 4],
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![],
    );
    let e = err(&bytes);
    assert!(
        e.contains("layer `x` (graph input)") && e.contains("--input-shape x=1x3x1x4"),
        "{e}"
    );
    let opts = onnx::Options {
        input_shapes: vec![("x".into(), vec![1, 3, 4, 4])],
        ..Default::default()
    };
    let g = onnx::load(&bytes, &opts).unwrap();
    assert_eq!(g.shape(g.inputs[0]), Shape::new(1, 3, 4, 4));
    let bad = onnx::Options {
        input_shapes: vec![("x".into(), vec![1, 3, 4])],
        ..Default::default()
    };
    assert!(onnx::load(&bytes, &bad)
        .unwrap_err()
        .to_string()
        .contains("gives 3 dimensions"));
    let unknown = onnx::Options {
        input_shapes: vec![("data".into(), vec![1, 3, 4, 4])],
        ..Default::default()
    };
    let e = onnx::load(&bytes, &unknown).unwrap_err().to_string();
    assert!(
        e.contains("--input-shape data: the model has no such input (its inputs: x)"),
        "{e}"
    );
}

#[test]
fn float16_inputs_are_accepted_and_integer_inputs_refused_by_name() {
    let typed = |t: i32| {
        let mut x = vi("x", &[1, 2, 3, 3]);
        if let Some(tt) = x.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) {
            tt.elem_type = t;
        }
        model_with(
            13,
            vec![x],
            vec![node("Relu", "r", &["x"], &["y"], vec![])],
            vec![],
            &["y"],
        )
    };
    // FLOAT16 is NVDLA's own fp16: the same network as a FLOAT input.
    let g = ok(&typed(data_type::FLOAT16));
    assert_eq!(g.shape(g.inputs[0]), Shape::new(1, 2, 3, 3));
    let x = seq(18, 0.5);
    let want: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    assert_close(&run(&g, &x), &want);
    // Integers are for CPU partitions (`--cpu-fallback`); DOUBLE for nothing.
    let e = err(&typed(data_type::INT8));
    assert!(
        e.contains("layer `x` (graph input)")
            && e.contains("element type INT8: integer inputs are read by CPU partitions only")
            && e.contains("--cpu-fallback"),
        "{e}"
    );
    let e = err(&typed(data_type::DOUBLE));
    assert!(
        e.contains("layer `x` (graph input)")
            && e.contains("element type DOUBLE: only FLOAT and FLOAT16"),
        "{e}"
    );
}

#[test]
fn initializers_declared_as_inputs_are_constants() {
    // Older exporters list weights among the graph inputs.
    let g = ok(&model_with(
        8,
        vec![vi("x", &[1, 2, 3, 3]), vi("w", &[3, 2, 3, 3])],
        vec![node("Conv", "c", &["x", "w"], &["y"], vec![])],
        vec![conv_w(3, 2, 3)],
        &["y"],
    ));
    assert_eq!(g.inputs.len(), 1);
    assert!(matches!(only(&g).op, Op::Conv(_)));
}

// ---------------------------------------------------------------------------------------
// Errors

#[test]
fn errors_name_the_node_its_operator_and_the_reason() {
    let e = err(&model(
        13,
        &[1, 2],
        vec![
            node("Relu", "", &["x"], &["r"], vec![]),
            node("Hardmax", "", &["r"], &["y"], vec![]),
        ],
        vec![],
    ));
    assert!(
        e.starts_with("layer `Hardmax#1` (Hardmax): operator `Hardmax` is not supported"),
        "{e}"
    );
    let e = err(&model(
        13,
        &[1, 2, 3, 3],
        vec![node("Conv", "conv1", &["x", "x"], &["y"], vec![])],
        vec![],
    ));
    assert!(
        e.contains("layer `conv1` (Conv): weight (`x`) must be a constant"),
        "{e}"
    );
    let e = err(&model(
        13,
        &[1, 2],
        vec![node("Relu", "r", &["nope"], &["y"], vec![])],
        vec![],
    ));
    assert!(e.contains("layer `r` (Relu): input `nope` is not"), "{e}");
    let e = err(&model(
        13,
        &[1, 2],
        vec![node("Relu", "r", &["x"], &["x"], vec![])],
        vec![],
    ));
    assert!(e.contains("output `x` is already defined"), "{e}");
    let e = err(&model(
        13,
        &[1, 2, 4, 4],
        vec![node("LRN", "n", &["x"], &["y"], vec![("size", A::I(4))])],
        vec![],
    ));
    assert!(e.contains("layer `n` (LRN): size 4"), "{e}");
    let mut bytes = model(
        13,
        &[1, 2],
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![],
    );
    bytes.push(0xff);
    let e = err(&bytes);
    assert!(e.contains("not an ONNX ModelProto"), "{e}");
    let e = err(&model(
        5,
        &[1, 2],
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![],
    ));
    assert!(e.contains("opset 5 is not supported"), "{e}");
    let mut ext = tf("w", &[1], vec![]);
    ext.data_location = 1;
    let e = err(&model(
        13,
        &[1, 1, 1, 1],
        vec![node("Mul", "m", &["x", "w"], &["y"], vec![])],
        vec![ext],
    ));
    assert!(e.contains("layer `w` (initializer): external data"), "{e}");
    let wrong = tf("w", &[2, 2], vec![1.0]);
    let e = err(&model(
        13,
        &[1, 1, 1, 1],
        vec![node("Mul", "m", &["x", "w"], &["y"], vec![])],
        vec![wrong],
    ));
    assert!(
        e.contains("float_data holds 1 values, the dimensions need 4"),
        "{e}"
    );
    // An attribute the operator does not have is ignored; one of the wrong type is named.
    ok(&model(
        13,
        &[1, 2],
        vec![node(
            "Relu",
            "r",
            &["x"],
            &["y"],
            vec![("alpha", A::S("no"))],
        )],
        vec![],
    ));
    let e = err(&model(
        13,
        &[1, 2],
        vec![node(
            "LeakyRelu",
            "l",
            &["x"],
            &["y"],
            vec![("alpha", A::S("no"))],
        )],
        vec![],
    ));
    assert!(
        e.contains("attribute `alpha` is of type string, expected float"),
        "{e}"
    );
}

/// Every error is a `CompileError` (`Layer`, or `Parse` for undecodable bytes); no input
/// panics. Deterministic byte mutations of the MNIST model and of hand-written models.
#[test]
fn damaged_models_give_errors_not_panics() {
    let mut seeds = vec![
        model(
            13,
            &[1, 2, 5, 5],
            vec![
                node("Pad", "p", &["x", "pads"], &["p"], vec![]),
                node("Conv", "c", &["p", "w"], &["c"], vec![("group", A::I(1))]),
                node(
                    "MaxPool",
                    "m",
                    &["c"],
                    &["y"],
                    vec![("kernel_shape", A::Is(vec![2, 2])), ("ceil_mode", A::I(1))],
                ),
            ],
            vec![
                conv_w(3, 2, 3),
                ti("pads", &[8], vec![0, 0, 1, 1, 0, 0, 1, 1]),
            ],
        ),
        model(
            18,
            &[1, 4, 2, 2],
            vec![
                node(
                    "Split",
                    "s",
                    &["x"],
                    &["a", "b"],
                    vec![("axis", A::I(1)), ("num_outputs", A::I(2))],
                ),
                node("Sum", "sum", &["a", "b"], &["y"], vec![]),
            ],
            vec![],
        ),
    ];
    if let Some(dir) = shared() {
        seeds.push(std::fs::read(dir.join("mnist-cntk.onnx")).unwrap());
    }
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut panics = Vec::new();
    let (mut loaded, mut errors) = (0, 0);
    for (s, seed) in seeds.iter().enumerate() {
        for i in 0..600 {
            let mut b = seed.clone();
            match i % 4 {
                0 => {
                    let n = (next() % 4 + 1) as usize;
                    for _ in 0..n {
                        let p = (next() as usize) % b.len();
                        b[p] = next() as u8;
                    }
                }
                1 => {
                    let p = (next() as usize) % b.len();
                    b.truncate(p);
                }
                2 => {
                    let p = (next() as usize) % b.len();
                    b[p] ^= 1 << (next() % 8);
                }
                _ => {
                    let p = (next() as usize) % b.len();
                    let q = (next() as usize) % b.len();
                    let v = b[q];
                    b.insert(p, v);
                }
            }
            match std::panic::catch_unwind(|| load(&b)) {
                Ok(Ok(g)) => {
                    g.check().unwrap();
                    loaded += 1;
                }
                Ok(Err(e)) => {
                    assert!(
                        matches!(
                            e,
                            CompileError::Layer { .. }
                                | CompileError::Parse { .. }
                                | CompileError::Network(_)
                                | CompileError::Option(_)
                        ),
                        "{e:?}"
                    );
                    errors += 1;
                }
                Err(_) => panics.push((s, i)),
            }
        }
    }
    eprintln!("mutations: {loaded} loaded, {errors} errors");
    assert!(panics.is_empty(), "panics at (seed, mutation) {panics:?}");
}

// ---------------------------------------------------------------------------------------
// Command line

fn compiler() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_nvdla-compiler"))
}

#[test]
fn command_line_takes_exactly_one_model() {
    let Some(dir) = shared() else { return };
    let tmp = std::env::temp_dir().join(format!("nvdla-onnx-cli-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let m = dir.join("mnist-cntk.onnx");
    let out = compiler()
        .args(["--onnx", m.to_str().unwrap(), "-o", tmp.to_str().unwrap()])
        .args(["--input-shape", "Input3=1x1x28x28"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    nvdla_loadable::Loadable::parse(&std::fs::read(tmp.join("fast-math.nvdla")).unwrap()).unwrap();
    assert!(
        stderr
            .lines()
            .last()
            .unwrap()
            .starts_with("7 layers -> 5 hardware ops"),
        "{stderr}"
    );
    for (args, want) in [
        (
            vec![],
            "error: no model: give --prototxt F --caffemodel F (Caffe) or --onnx F (ONNX)",
        ),
        (
            vec!["--onnx", m.to_str().unwrap(), "--prototxt", "a.prototxt"],
            "error: give one model",
        ),
        (
            vec!["--prototxt", "a.prototxt"],
            "error: --prototxt needs --caffemodel",
        ),
        (
            vec![
                "--onnx",
                m.to_str().unwrap(),
                "--input-shape",
                "data=1x1x28x28",
            ],
            "error: --input-shape data: the model has no such input",
        ),
        (
            vec!["--onnx", m.to_str().unwrap(), "--input-shape", "Input3=1x0"],
            "is not a positive dimension",
        ),
    ] {
        let out = compiler()
            .args(&args)
            .args(["-o", tmp.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(tmp);
}

/// A fully connected layer whose 4096x9216 weight a `ConstantOfShape` makes (38 M
/// elements): within the front end's memory budget for computed constants, which it
/// exceeded as a per-constant cap of 16 M.
#[test]
fn large_computed_weights_fit_the_budget() {
    let shape = ti("shape", &[2], vec![4096, 9216]);
    let value = TensorProto {
        dims: vec![1],
        ..tf("value", &[1], vec![0.001])
    };
    let g = ok(&model(
        13,
        &[1, 9216],
        vec![
            node(
                "ConstantOfShape",
                "w",
                &["shape"],
                &["w"],
                vec![("value", A::T(Box::new(value)))],
            ),
            node("Gemm", "fc", &["x", "w"], &["y"], vec![("transB", A::I(1))]),
        ],
        vec![shape],
    ));
    assert_eq!(out_shape(&g), Shape::new(1, 4096, 1, 1));
}

/// Weights in a file beside the model (ONNX external data, `torch.onnx.export`'s large
/// models): read from the model's directory, with `offset` and `length`; a location
/// outside it, a range past the file's end and a model given as bytes are errors.
#[test]
fn external_weights_are_read_from_beside_the_model() {
    use prost::Message;
    let w: Vec<f32> = (0..2 * 3 * 9).map(|i| (i as f32 - 20.0) * 0.05).collect();
    let internal = model(
        13,
        &[1, 3, 5, 5],
        vec![node("Conv", "c", &["x", "w"], &["y"], vec![])],
        vec![tf("w", &[2, 3, 3, 3], w.clone())],
    );
    let m = ModelProto::decode(internal.as_slice()).unwrap();
    let raw: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
    let entry = |k: &str, v: String| StringStringEntryProto {
        key: k.into(),
        value: v,
    };
    let external = |location: &str, offset: usize, length: usize| {
        let mut m = m.clone();
        let t = &mut m.graph.as_mut().unwrap().initializer[0];
        t.float_data.clear();
        t.raw_data.clear();
        t.data_location = 1;
        t.external_data = vec![
            entry("location", location.into()),
            entry("offset", offset.to_string()),
            entry("length", length.to_string()),
        ];
        m.encode_to_vec()
    };
    let dir = std::env::temp_dir().join(format!("nvdla-external-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The weights after 16 bytes of something else.
    let mut file = vec![0xee; 16];
    file.extend_from_slice(&raw);
    std::fs::write(dir.join("m.onnx.data"), &file).unwrap();
    let path = dir.join("m.onnx");
    let opts = onnx::Options::default();
    let load_at = |bytes: Vec<u8>| {
        std::fs::write(&path, &bytes).unwrap();
        onnx::load_labeled(&bytes, path.to_str().unwrap(), &opts)
    };
    let g = load_at(external("m.onnx.data", 16, raw.len())).unwrap_or_else(|e| panic!("{e}"));
    let want = ok(&internal);
    let x: Vec<f32> = (0..75).map(|i| (i % 7) as f32 * 0.1).collect();
    assert_eq!(run(&g, &x), run(&want, &x));
    let e = load_at(external("../m.onnx.data", 16, raw.len()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("inside the model's directory"), "{e}");
    let e = load_at(external("m.onnx.data", 16, raw.len() + 4))
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside the 232 bytes"), "{e}");
    let e = onnx::load_labeled(&external("m.onnx.data", 16, raw.len()), "model", &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("given as bytes"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
