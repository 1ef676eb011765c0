//! CPU partitions (`--cpu-fallback`): ONNX nodes no NVDLA engine computes (a transpose, a
//! softmax over the width, a reduction, and on builds without a LUT a sigmoid) run on the
//! CPU with tract between hardware tasks; the network's output on the virtual platform
//! matches the compiler's reference (which runs the partitions with the same engine) in
//! fp16 and int8; without the option the first such node is an error naming it.

mod common;

use common::onnx::*;
use common::*;
use nvdla_compiler::frontend::onnx;
use nvdla_compiler::ir::{Graph, Op};
use nvdla_compiler::target::{Precision, Target};
use nvdla_umd::runtime::Runtime;
use nvdla_umd::Direction;

/// conv 3x3 (8 -> 16) + relu, Transpose of H and W (CPU), conv 1x1 + sigmoid, softmax
/// over the width (CPU) and a mean over the width kept as a column (CPU), their product
/// (broadcast over the width, CPU), conv 1x1 (16 -> 8): three CPU nodes between hardware
/// layers, two partitions.
fn model() -> Vec<u8> {
    let mut rng = Rng(0x0c0f_fee0);
    let mut w = |n: usize, s: f32| rng.vec(n, s);
    let nodes = vec![
        node(
            "Conv",
            "c1",
            &["x", "w1", "b1"],
            &["c1"],
            vec![("pads", A::Is(vec![1; 4]))],
        ),
        node("Relu", "r1", &["c1"], &["r1"], vec![]),
        node(
            "Transpose",
            "t",
            &["r1"],
            &["t"],
            vec![("perm", A::Is(vec![0, 1, 3, 2]))],
        ),
        node("Conv", "c2", &["t", "w2", "b2"], &["c2"], vec![]),
        node("Sigmoid", "s", &["c2"], &["s"], vec![]),
        node("Softmax", "sm", &["s"], &["sm"], vec![("axis", A::I(3))]),
        node(
            "ReduceMean",
            "m",
            &["sm"],
            &["m"],
            vec![("axes", A::Is(vec![3])), ("keepdims", A::I(1))],
        ),
        node("Mul", "p", &["sm", "m"], &["p"], vec![]),
        node("Conv", "c3", &["p", "w3", "b3"], &["y"], vec![]),
    ];
    let inits = vec![
        tf("w1", &[16, 8, 3, 3], w(16 * 8 * 9, 0.2)),
        tf("b1", &[16], w(16, 0.1)),
        tf("w2", &[16, 16, 1, 1], w(256, 0.3)),
        tf("b2", &[16], w(16, 0.1)),
        tf("w3", &[8, 16, 1, 1], w(128, 4.0)),
        tf("b3", &[8], w(8, 0.1)),
    ];
    model_with(13, vec![vi("x", &[1, 8, 7, 5])], nodes, inits, &["y"])
}

fn load(config: &str, precision: Precision, fallback: bool) -> nvdla_compiler::Result<Graph> {
    load_for(&model(), config, precision, fallback)
}

/// `model` read for `config` in `precision`, with `--cpu-fallback` when `fallback`.
fn load_for(
    model: &[u8],
    config: &str,
    precision: Precision,
    fallback: bool,
) -> nvdla_compiler::Result<Graph> {
    let hw = nvdla_hw::Config::by_name(config).unwrap();
    onnx::load(
        model,
        &onnx::Options {
            cpu_fallback: fallback,
            target: Some(Target::new(hw, precision).unwrap()),
            ..Default::default()
        },
    )
}

fn partitions(g: &Graph) -> Vec<Vec<String>> {
    g.nodes
        .iter()
        .filter_map(|n| match &n.op {
            Op::CpuPartition(p) => Some(p.ops.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn refused_without_fallback() {
    let e = load("nv_full", Precision::Fp16, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("layer `t` (Transpose)"), "{e}");
}

#[test]
fn partitions_are_merged_between_hardware_layers() {
    let g = load("nv_full", Precision::Fp16, true).unwrap();
    // The sigmoid has a LUT on nv_full; the softmax, mean and product join one partition.
    assert_eq!(
        partitions(&g),
        vec![
            vec!["Transpose".to_string()],
            vec!["Softmax".into(), "ReduceMean".into(), "Mul".into()]
        ]
    );
    // nv_small has no LUT: the sigmoid joins the second partition.
    let g = load("nv_small", Precision::Int8, true).unwrap();
    assert_eq!(partitions(&g)[1][0], "Sigmoid", "{:?}", partitions(&g));
}

#[test]
fn fp16_on_the_vp_matches_the_reference() {
    let mut rng = Rng(7);
    let input = rng.vec(8 * 7 * 5, 1.0);
    for config in ["nv_full", "nv_small"] {
        let g = load(config, Precision::Fp16, true).unwrap();
        let (got, want) = run_fp16_opts(&g, config, &input, Extra::CPU_FALLBACK);
        let err = max_rel_err(&got, &want);
        eprintln!("fp16 {config}: max relative error {err:.2e}");
        assert!(err <= 4e-3, "fp16 {config}: error {err}");
    }
}

#[test]
fn int8_on_the_vp_matches_the_reference() {
    let mut rng = Rng(8);
    let input = rng.vec(8 * 7 * 5, 1.0);
    for config in ["nv_small", "nv_full"] {
        let g = load(config, Precision::Int8, true).unwrap();
        let (got, want) = run_int8_opts(&g, config, &input, true, Extra::CPU_FALLBACK);
        let err = max_rel_err(&got, &want);
        eprintln!("int8 {config}: max relative error {err:.2e}");
        assert!(err <= 0.04, "int8 {config}: error {err}");
    }
}

/// The model compiled for nv_full in fp16 with CPU partitions.
fn partitioned_loadable() -> Vec<u8> {
    let g = load("nv_full", Precision::Fp16, true).unwrap();
    let hw = nvdla_hw::Config::by_name("nv_full").unwrap();
    let target = Target::new(hw, Precision::Fp16).unwrap();
    let opts = nvdla_compiler::Options {
        cpu_fallback: true,
        ..nvdla_compiler::Options::new(target)
    };
    nvdla_compiler::compile_graph(g, &opts).unwrap().loadable
}

#[test]
fn the_loadable_declares_its_partitions() {
    let loadable = partitioned_loadable();
    let l = nvdla_loadable::Loadable::parse(&loadable).unwrap();
    let v = nvdla_compiler::emit::EMU1_PARTITION_VERSION;
    let descs: Vec<_> = l
        .blobs()
        .iter()
        .filter(|b| b.name().contains("partition"))
        .collect();
    assert_eq!(descs.len(), 2);
    for b in descs {
        let bv = b.version();
        assert_eq!(
            (bv.major, bv.minor, bv.sub_minor),
            (v.major, v.minor, v.sub_minor)
        );
        // The descriptor decodes, with an ONNX model inside.
        let d = nvdla_umd::partition::PartitionDesc::decode(b.data()).unwrap();
        let m = onnx::decode(&d.model, "partition").unwrap();
        assert!(!m.graph.unwrap().node.is_empty());
    }
}

/// The first partition descriptor of [`partitioned_loadable`], as bytes.
fn first_partition_blob() -> Vec<u8> {
    let loadable = partitioned_loadable();
    let l = nvdla_loadable::Loadable::parse(&loadable).unwrap();
    let blob = l
        .blobs()
        .iter()
        .find(|b| b.name().contains("partition"))
        .unwrap()
        .data()
        .to_vec();
    blob
}

/// Memory slots for running a descriptor outside a loadable.
struct Slots(Vec<Vec<u8>>);

impl nvdla_umd::emu::SlotMemory for Slots {
    fn slot_count(&self) -> usize {
        self.0.len()
    }
    fn slot(&mut self, slot: usize) -> Option<&mut [u8]> {
        self.0.get_mut(slot).map(|v| v.as_mut_slice())
    }
}

/// A partition descriptor is untrusted input: truncated or with bytes changed (header,
/// bindings, the model), it decodes to an error or to a descriptor that runs to an error
/// or to values, never a panic.
#[test]
fn damaged_descriptors_give_errors_not_panics() {
    use nvdla_umd::partition::PartitionDesc;
    let blob = first_partition_blob();
    let good = PartitionDesc::decode(&blob).unwrap();
    assert_eq!(PartitionDesc::decode(&good.encode()).unwrap(), good);
    let slots = || Slots(vec![vec![0x3c; 1 << 16]; 12]);
    // The intact descriptor runs on memory of its own.
    nvdla_umd::partition::run(&good, &mut slots()).unwrap();
    for n in (0..blob.len()).step_by(7) {
        let _ = PartitionDesc::decode(&blob[..n]);
    }
    let mut rng = Rng(0xdec0de);
    let (mut decoded, mut ran) = (0, 0);
    for _ in 0..400 {
        let mut b = blob.clone();
        for _ in 0..1 + (rng.next().abs() * 3.0) as usize {
            // Mostly the header and bindings, sometimes the model.
            let span = if rng.next() > 0.0 {
                24 + 64 * 4
            } else {
                b.len()
            };
            let i = (rng.next().abs() * span as f32) as usize % b.len();
            b[i] ^= 1 << ((rng.next().abs() * 8.0) as u32 % 8);
        }
        if let Ok(d) = PartitionDesc::decode(&b) {
            decoded += 1;
            if nvdla_umd::partition::run(&d, &mut slots()).is_ok() {
                ran += 1;
            }
        }
    }
    eprintln!("400 damaged descriptors: {decoded} decoded, {ran} ran");
}

/// A sequence between CPU nodes multiplied by constant matrices (a recognizer's
/// classifier over its steps, a transformer's projections): conv 1x1 (8 -> 16), its 24
/// positions as rows (Reshape and Transpose: CPU), MatMul by 16x40, Softmax over the
/// columns (CPU), the matrix transposed (CPU), Gemm with `transA` by 40x8200 plus a bias:
/// 8 200 columns, more than a cube's 8 192 channels; the output as `1x24x8200x1`.
fn sequence_model() -> Vec<u8> {
    let mut rng = Rng(0x5e9_0e4c);
    let mut w = |n: usize, s: f32| rng.vec(n, s);
    let nodes = vec![
        node("Conv", "c1", &["x", "w1", "b1"], &["c1"], vec![]),
        node("Reshape", "flat", &["c1", "s1"], &["flat"], vec![]),
        node(
            "Transpose",
            "rows",
            &["flat"],
            &["rows"],
            vec![("perm", A::Is(vec![0, 2, 1]))],
        ),
        node("MatMul", "mm", &["rows", "w2"], &["mm"], vec![]),
        node("Softmax", "sm", &["mm"], &["sm"], vec![("axis", A::I(-1))]),
        node("Reshape", "sm2", &["sm", "s2"], &["sm2"], vec![]),
        node(
            "Transpose",
            "cols",
            &["sm2"],
            &["cols"],
            vec![("perm", A::Is(vec![1, 0]))],
        ),
        node(
            "Gemm",
            "fc",
            &["cols", "w3", "b3"],
            &["fc"],
            vec![("transA", A::I(1))],
        ),
        node("Reshape", "y", &["fc", "s3"], &["y"], vec![]),
    ];
    let inits = vec![
        tf("w1", &[16, 8, 1, 1], w(128, 0.4)),
        tf("b1", &[16], w(16, 0.1)),
        ti("s1", &[3], vec![1, 16, 24]),
        tf("w2", &[16, 40], w(640, 0.5)),
        ti("s2", &[2], vec![24, 40]),
        tf("w3", &[40, 8200], w(40 * 8200, 2.0)),
        tf("b3", &[8200], w(8200, 0.1)),
        ti("s3", &[4], vec![1, 24, 8200, 1]),
    ];
    model_with(13, vec![vi("x", &[1, 8, 6, 4])], nodes, inits, &["y"])
}

fn load_sequence(config: &str, precision: Precision) -> nvdla_compiler::Result<Graph> {
    load_for(&sequence_model(), config, precision, true)
}

#[test]
fn products_over_a_sequence_run_on_the_hardware() {
    let g = load_sequence("nv_full", Precision::Fp16).unwrap();
    // Both products are 1x1 convolutions over the 24 rows as positions; the CPU keeps the
    // layout changes and the softmax.
    let convs: Vec<(String, usize)> = g
        .nodes
        .iter()
        .filter(|n| matches!(n.op, Op::Conv(_)))
        .map(|n| (n.name.clone(), g.shape(n.outputs[0]).c))
        .collect();
    assert_eq!(
        convs,
        vec![
            ("c1".to_string(), 16),
            ("mm".into(), 40),
            ("fc/0".into(), 4100),
            ("fc/1".into(), 4100)
        ]
    );
    for ops in partitions(&g) {
        assert!(!ops.iter().any(|o| o == "MatMul" || o == "Gemm"), "{ops:?}");
    }
    let mut rng = Rng(9);
    let input = rng.vec(8 * 6 * 4, 1.0);
    let (got, want) = run_fp16_opts(&g, "nv_full", &input, Extra::CPU_FALLBACK);
    assert_eq!(got.len(), 24 * 8200);
    let err = max_rel_err(&got, &want);
    eprintln!("fp16 nv_full: max relative error {err:.2e}");
    assert!(err <= 4e-3, "fp16: error {err}");
    let g = load_sequence("nv_small", Precision::Int8).unwrap();
    let (got, want) = run_int8_opts(&g, "nv_small", &input, true, Extra::CPU_FALLBACK);
    let err = max_rel_err(&got, &want);
    eprintln!("int8 nv_small: max relative error {err:.2e}");
    assert!(err <= 0.04, "int8: error {err}");
}

/// conv 3x3 (4 -> 8), its square `Mul(c, c)` (the SDP reads one operand beside its main
/// input, not the same tensor twice), conv 1x1 (8 -> 4).
fn square_model() -> Vec<u8> {
    let mut rng = Rng(0x5e1f);
    let mut w = |n: usize, s: f32| rng.vec(n, s);
    let nodes = vec![
        node(
            "Conv",
            "c1",
            &["x", "w1", "b1"],
            &["c1"],
            vec![("pads", A::Is(vec![1; 4]))],
        ),
        node("Mul", "sq", &["c1", "c1"], &["sq"], vec![]),
        node("Conv", "c2", &["sq", "w2", "b2"], &["y"], vec![]),
    ];
    let inits = vec![
        tf("w1", &[8, 4, 3, 3], w(8 * 4 * 9, 0.3)),
        tf("b1", &[8], w(8, 0.1)),
        tf("w2", &[4, 8, 1, 1], w(32, 0.5)),
        tf("b2", &[4], w(4, 0.1)),
    ];
    model_with(13, vec![vi("x", &[1, 4, 6, 5])], nodes, inits, &["y"])
}

#[test]
fn a_tensor_times_itself_runs_on_the_cpu_or_as_a_lookup() {
    let input = Rng(5).vec(4 * 6 * 5, 1.0);
    for (config, precision) in [("nv_full", Precision::Fp16), ("nv_small", Precision::Int8)] {
        let g =
            load_for(&square_model(), config, precision, true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(partitions(&g), vec![vec!["Mul".to_string()]]);
        let (got, want) = match precision {
            Precision::Fp16 => run_fp16_opts(&g, config, &input, Extra::CPU_FALLBACK),
            _ => run_int8_opts(&g, config, &input, true, Extra::CPU_FALLBACK),
        };
        let cos = cosine(&got, &want);
        eprintln!("{config} {precision:?}: cosine {cos:.5}");
        assert!(cos > 0.999, "{config}: cosine {cos}");
    }
}

/// A sequence read by two partitions (captcha-whisperer's CRNN, reduced): conv 3x3 (3 -> 8)
/// and ReLU over 4x6, its columns as 6 steps of 32 (`Transpose`, `Reshape` to
/// `[6, 1, 32]`), steps 0 and 1 through a fully connected layer and a sigmoid (NVDLA),
/// stacked (`fwd`), and the sequence reversed (`Slice` with step -1) in a later partition
/// for a backward step (`bwd`). The steps leave the first partition for the second: they
/// must not reach the engines as a batch of 6.
fn sequence_partitions_model() -> Vec<u8> {
    let mut rng = Rng(0x5e9);
    let mut w = |n: usize, s: f32| rng.vec(n, s);
    let step = |k: &str, idx: &str, out: &str| {
        let (g, m) = (format!("g{k}"), format!("m{k}"));
        vec![
            node("Gather", &g, &["seq", idx], &[&g], vec![("axis", A::I(0))]),
            node(
                "Gemm",
                &m,
                &[&g, "gw", "gb"],
                &[&m],
                vec![("transB", A::I(1))],
            ),
            node("Sigmoid", out, &[&m], &[out], vec![]),
        ]
    };
    let mut nodes = vec![
        node(
            "Conv",
            "c",
            &["x", "cw"],
            &["c"],
            vec![("pads", A::Is(vec![1; 4]))],
        ),
        node("Relu", "r", &["c"], &["r"], vec![]),
        node(
            "Transpose",
            "t",
            &["r"],
            &["t"],
            vec![("perm", A::Is(vec![3, 0, 1, 2]))],
        ),
        node("Reshape", "seq", &["t", "shp"], &["seq"], vec![]),
    ];
    nodes.extend(step("0", "i0", "y0"));
    nodes.extend(step("1", "i1", "y1"));
    nodes.extend([
        node("Unsqueeze", "u0", &["y0", "ax"], &["u0"], vec![]),
        node("Unsqueeze", "u1", &["y1", "ax"], &["u1"], vec![]),
        node(
            "Concat",
            "fwd",
            &["u0", "u1"],
            &["fwd"],
            vec![("axis", A::I(0))],
        ),
        node(
            "Slice",
            "rev",
            &["seq", "st", "en", "ax", "step"],
            &["rev"],
            vec![],
        ),
    ]);
    let mut back = step("2", "i0", "bwd");
    back[0].input[0] = "rev".into();
    nodes.extend(back);
    let inits = vec![
        tf("cw", &[8, 3, 3, 3], w(8 * 27, 0.4)),
        ti("shp", &[3], vec![6, 1, 32]),
        tf("gw", &[16, 32], w(16 * 32, 0.3)),
        tf("gb", &[16], w(16, 0.2)),
        ti("i0", &[], vec![0]),
        ti("i1", &[], vec![1]),
        ti("st", &[1], vec![-1]),
        ti("en", &[1], vec![-7]),
        ti("ax", &[1], vec![0]),
        ti("step", &[1], vec![-1]),
    ];
    model_with(
        13,
        vec![vi("x", &[1, 3, 4, 6])],
        nodes,
        inits,
        &["fwd", "bwd"],
    )
}

#[test]
fn a_sequence_passed_between_partitions_is_not_a_batch() {
    let input = Rng(9).vec(3 * 4 * 6, 1.0);
    let g = load_for(
        &sequence_partitions_model(),
        "nv_full",
        Precision::Fp16,
        true,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // The second partition reads the steps the first wrote (the sequence, reversed there).
    let parts = partitions(&g);
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert!(parts[1].contains(&"Slice".to_string()), "{parts:?}");
    let (got, want) = run_fp16_opts(&g, "nv_full", &input, Extra::CPU_FALLBACK);
    let err = max_rel_err(&got, &want);
    eprintln!("fp16: max relative error {err:.2e}");
    assert!(err <= 4e-3, "error {err}");
}

/// A partition whose half-precision output holds finite values beyond half precision
/// fails by name instead of handing the engines infinities.
#[test]
fn values_beyond_half_precision_are_an_error() {
    use nvdla_umd::partition::PartitionDesc;
    let blob = first_partition_blob();
    let mut d = PartitionDesc::decode(&blob).unwrap();
    assert_eq!((d.inputs.len(), d.outputs.len()), (1, 1));
    // The same binding, the values times 1e6 (the memory holds 1.06 in every half).
    let dims: Vec<i64> = d.inputs[0].dims.iter().map(|&v| v as i64).collect();
    let times = |k: f32| {
        let transpose = vec![("perm", A::Is(vec![0, 1, 3, 2]))];
        let nodes = vec![
            node("Transpose", "t", &["x"], &["t"], transpose),
            node("Mul", "y", &["t", "big"], &["y"], vec![]),
        ];
        let big = vec![tf("big", &[], vec![k])];
        model_with(13, vec![vi("x", &dims)], nodes, big, &["y"])
    };
    d.model = times(1e6);
    let mut slots = Slots(vec![vec![0x3c; 1 << 16]; 12]);
    let e = nvdla_umd::partition::run(&d, &mut slots)
        .unwrap_err()
        .to_string();
    assert!(e.contains("beyond half precision"), "{e}");
    // Times 1e3 fits.
    d.model = times(1e3);
    nvdla_umd::partition::run(&d, &mut slots).unwrap();
}

/// Token ids in (int64 `ids`, 1 x 12), looked up in an embedding table of 20 rows of 8
/// (`Gather`, CPU), turned into 8 channels of 12 (`Transpose`, `Unsqueeze`, CPU), then a
/// 1x3 convolution (8 -> 4) and ReLU on NVDLA: a network input of integers.
fn token_model() -> Vec<u8> {
    let mut rng = Rng(0x70_4e);
    let nodes = vec![
        node(
            "Gather",
            "emb",
            &["table", "ids"],
            &["e"],
            vec![("axis", A::I(0))],
        ),
        node(
            "Transpose",
            "t",
            &["e"],
            &["et"],
            vec![("perm", A::Is(vec![0, 2, 1]))],
        ),
        node("Unsqueeze", "u", &["et", "axes"], &["u"], vec![]),
        node(
            "Conv",
            "c",
            &["u", "w", "b"],
            &["c"],
            vec![("pads", A::Is(vec![0, 1, 0, 1]))],
        ),
        node("Relu", "r", &["c"], &["y"], vec![]),
    ];
    let inits = vec![
        tf("table", &[20, 8], rng.vec(160, 1.0)),
        ti("axes", &[1], vec![2]),
        tf("w", &[4, 8, 1, 3], rng.vec(96, 0.4)),
        tf("b", &[4], rng.vec(4, 0.1)),
    ];
    let mut ids = vi("ids", &[1, 12]);
    if let Some(t) = ids.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) {
        t.elem_type = nvdla_compiler::frontend::onnx::proto::data_type::INT64;
    }
    model_with(13, vec![ids], nodes, inits, &["y"])
}

#[test]
fn integer_inputs_reach_their_partition_exactly() {
    let load =
        |config: &str, precision, fallback| load_for(&token_model(), config, precision, fallback);
    let e = load("nv_full", Precision::Fp16, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("ids") && e.contains("--cpu-fallback"), "{e}");
    // Ids 0..19, each at least once, in a shuffled order.
    let ids: Vec<f32> = (0..12).map(|i| ((i * 7 + 3) % 20) as f32).collect();
    for (config, precision) in [("nv_full", Precision::Fp16), ("nv_small", Precision::Int8)] {
        let g = load(config, precision, true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(g.integer_inputs, g.inputs);
        assert_eq!(
            partitions(&g),
            vec![vec![
                "Gather".to_string(),
                "Transpose".into(),
                "Unsqueeze".into()
            ]]
        );
        let (got, want, input) = match precision {
            Precision::Fp16 => {
                let (got, want) = run_fp16_opts(&g, config, &ids, Extra::CPU_FALLBACK);
                let c = compile_with(&g, config, precision, Extra::CPU_FALLBACK);
                (got, want, c)
            }
            _ => {
                let (got, want, c) =
                    run_int8_scaled(&g, config, &ids, true, Extra::CPU_FALLBACK, false);
                (got, want, c)
            }
        };
        // The input is binary32 in the loadable, whatever the build's precision.
        let mut dev = device(config);
        let rt = nvdla_umd::runtime::Runtime::load(dev.as_mut(), &input.loadable).unwrap();
        let ti = rt
            .tensor(nvdla_umd::runtime::Direction::Input, 0)
            .unwrap()
            .clone();
        assert_eq!(ti.data_type, nvdla_loadable::DataType::FLOAT);
        assert_eq!(
            rt.recorded_scale(nvdla_umd::runtime::Direction::Input, 0),
            None
        );
        let cos = cosine(&got, &want);
        let err = max_rel_err(&got, &want);
        eprintln!("{config} {precision:?}: cosine {cos:.6}, max relative error {err:.2e}");
        assert!(cos > 0.9995, "{config}: cosine {cos}");
        if precision == Precision::Fp16 {
            assert!(err <= 4e-3, "{config}: error {err}");
        }
        // Ids of large vocabularies are exact (8 channels of 4 bytes per atom); beyond
        // 2^24 they are refused, naming the element.
        let with = |v: i32| {
            let mut x: Vec<i32> = ids.iter().map(|&v| v as i32).collect();
            x[5] = v;
            let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
            let host = nvdla_umd::tensor::HostTensor::new(
                nvdla_umd::tensor::ElementType::I32,
                vec![1, 12],
                bytes,
            )
            .unwrap();
            nvdla_umd::tensor::host_to_input(&host, &ti, None)
        };
        let b = with(250_001).unwrap();
        assert_eq!(f32::from_le_bytes(b[20..24].try_into().unwrap()), 250_001.0);
        let e = with((1 << 24) + 1).unwrap_err().to_string();
        assert!(e.contains("element 5 is 16777217"), "{e}");
    }
}

/// An `If` on a sample rate (an int64 scalar input, as Silero VAD selects its 16 kHz or
/// 8 kHz network): the 16 kHz branch is a 3x3 convolution and, behind a second `If` on
/// the input's channel count (a shape test, known when compiling), a ReLU; the 8 kHz
/// branch the same convolution and a tanh. A recurrent state `[2, 1, 8]` doubled on the
/// CPU is a second output.
fn branch_model() -> Vec<u8> {
    use nvdla_compiler::frontend::onnx::proto::{
        attribute_type, data_type, AttributeProto, GraphProto,
    };
    let mut rng = Rng(0x1f);
    let graph =
        |nodes: Vec<nvdla_compiler::frontend::onnx::proto::NodeProto>, out: &str| GraphProto {
            node: nodes,
            name: out.into(),
            output: vec![vi(out, &[])],
            ..Default::default()
        };
    let attr = |name: &str, g: GraphProto| AttributeProto {
        name: name.into(),
        g: Some(g),
        r#type: attribute_type::GRAPH,
        ..Default::default()
    };
    let conv = |out: &str| {
        node(
            "Conv",
            out,
            &["x", "w", "b"],
            &[out],
            vec![("pads", A::Is(vec![1; 4]))],
        )
    };
    let mut wide = node("If", "if_wide", &["wide"], &["a16"], vec![]);
    wide.attribute = vec![
        attr(
            "then_branch",
            graph(
                vec![node("Relu", "relu", &["c16"], &["r16"], vec![])],
                "r16",
            ),
        ),
        attr(
            "else_branch",
            graph(
                vec![node("Sigmoid", "sig", &["c16"], &["s16"], vec![])],
                "s16",
            ),
        ),
    ];
    let then16 = graph(
        vec![
            conv("c16"),
            node("Shape", "shape", &["x"], &["dims"], vec![]),
            node(
                "Gather",
                "channels",
                &["dims", "one"],
                &["ch"],
                vec![("axis", A::I(0))],
            ),
            node("Equal", "is4", &["ch", "four"], &["wide"], vec![]),
            wide,
        ],
        "a16",
    );
    let else8 = graph(
        vec![conv("c8"), node("Tanh", "tanh", &["c8"], &["t8"], vec![])],
        "t8",
    );
    let mut pick = node("If", "rate", &["is16k"], &["y"], vec![]);
    pick.attribute = vec![attr("then_branch", then16), attr("else_branch", else8)];
    let nodes = vec![
        node("Equal", "eq", &["sr", "k16"], &["is16k"], vec![]),
        pick,
        node("Mul", "double", &["state", "two"], &["state_next"], vec![]),
    ];
    let inits = vec![
        tf("w", &[8, 4, 3, 3], rng.vec(8 * 4 * 9, 0.3)),
        tf("b", &[8], rng.vec(8, 0.1)),
        ti("k16", &[], vec![16000]),
        ti("one", &[], vec![1]),
        ti("four", &[], vec![4]),
        tf("two", &[], vec![2.0]),
    ];
    let mut sr = vi("sr", &[]);
    if let Some(t) = sr.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) {
        t.elem_type = data_type::INT64;
    }
    model_with(
        13,
        vec![vi("x", &[1, 4, 6, 5]), vi("state", &[2, 1, 8]), sr],
        nodes,
        inits,
        &["y", "state_next"],
    )
}

#[test]
fn an_if_on_a_bound_input_takes_its_branch() {
    use nvdla_compiler::ir::Activation;
    let load = |sr: Option<f64>| {
        let hw = nvdla_hw::Config::by_name("nv_full").unwrap();
        onnx::load(
            &branch_model(),
            &onnx::Options {
                cpu_fallback: true,
                input_values: sr
                    .map(|v| vec![("sr".to_string(), vec![v])])
                    .unwrap_or_default(),
                target: Some(Target::new(hw, Precision::Fp16).unwrap()),
                ..Default::default()
            },
        )
    };
    let activations = |g: &Graph| -> Vec<Activation> {
        g.nodes
            .iter()
            .filter_map(|n| match &n.op {
                Op::Activation(a) => Some(a.clone()),
                _ => None,
            })
            .collect()
    };
    // 16 kHz: the convolution and, the input having 4 channels, the ReLU.
    let g = load(Some(16000.0)).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(activations(&g).as_slice(), [Activation::Relu { .. }]),
        "{:?}",
        activations(&g)
    );
    // The state keeps its leading 2 as channels, for the CPU only.
    assert_eq!(g.inputs.len(), 2);
    assert_eq!(
        g.shape(g.inputs[1]),
        nvdla_compiler::ir::Shape::new(1, 2, 8, 1)
    );
    assert_eq!(partitions(&g), vec![vec!["Mul".to_string()]]);
    let input = Rng(9).vec(4 * 6 * 5, 1.0);
    let state: Vec<f32> = (0..16).map(|i| i as f32 * 0.25).collect();
    let reference = nvdla_compiler::reference::run(
        &g,
        &[(g.inputs[0], input.clone()), (g.inputs[1], state.clone())],
    )
    .unwrap();
    let doubled: Vec<f32> = state.iter().map(|v| v * 2.0).collect();
    assert_eq!(reference[g.outputs[1].0], doubled);
    // 8 kHz: the tanh.
    let g8 = load(Some(8000.0)).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(activations(&g8).as_slice(), [Activation::Tanh]),
        "{:?}",
        activations(&g8)
    );
    // A fractional rate for an integer input, and an unknown input, are errors.
    let e = load(Some(16000.5)).unwrap_err().to_string();
    assert!(
        e.contains("--input-value sr") && e.contains("whole number"),
        "{e}"
    );
    let hw = nvdla_hw::Config::by_name("nv_full").unwrap();
    let e = onnx::load(
        &branch_model(),
        &onnx::Options {
            cpu_fallback: true,
            input_values: vec![("rate".into(), vec![1.0])],
            target: Some(Target::new(hw, Precision::Fp16).unwrap()),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("no such input") && e.contains("sr"), "{e}");
}

/// An NHWC input turned to NCHW on the CPU (a Keras export's first `Transpose`), then a
/// 3x3 convolution: in int8 the input only the CPU reads is half precision, and the
/// per-layer comparison (`--compare`) reads it in its own layout.
#[test]
fn the_per_layer_comparison_reads_an_input_only_the_cpu_reads() {
    let mut rng = Rng(0x4c);
    let nodes = vec![
        node(
            "Transpose",
            "t",
            &["x"],
            &["xt"],
            vec![("perm", A::Is(vec![0, 3, 1, 2]))],
        ),
        node(
            "Conv",
            "c",
            &["xt", "w", "b"],
            &["y"],
            vec![("pads", A::Is(vec![1; 4]))],
        ),
    ];
    let inits = vec![
        tf("w", &[8, 3, 3, 3], rng.vec(8 * 27, 0.3)),
        tf("b", &[8], rng.vec(8, 0.1)),
    ];
    let model = model_with(13, vec![vi("x", &[1, 6, 5, 3])], nodes, inits, &["y"]);
    let dir = std::env::temp_dir().join(format!("nvdla-cpu-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("x.npy");
    let values = Rng(11).vec(6 * 5 * 3, 1.0);
    let host = nvdla_umd::tensor::HostTensor::from_f32(vec![1, 6, 5, 3], &values).unwrap();
    nvdla_umd::tensor::write_npy(&input, &host).unwrap();
    let m = nvdla_compiler::Model::Onnx {
        bytes: model,
        label: "nhwc".into(),
    };
    let t = Target::new(&nvdla_hw::NV_SMALL, Precision::Int8).unwrap();
    let mut opts = nvdla_compiler::Options::new(t);
    opts.cpu_fallback = true;
    opts.keep_activations = true;
    opts.calibration = nvdla_compiler::Calibrate::Samples(vec![input.clone()]);
    let c = nvdla_compiler::compile(&m, &opts, &mut |_| {}).unwrap();
    let x = c.program.surface(c.program.inputs[0]);
    assert_eq!(x.precision, Precision::Fp16, "the input only the CPU reads");
    let rows = nvdla_compiler::compare::compare(&c, &t, &input, 1, &nvdla_umd::DeviceKind::Vp)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rows.len(), 2);
    for r in &rows {
        eprintln!("{}: cosine {:.6}", r.tensor, r.cosine);
        assert!(r.cosine > 0.999, "{}: cosine {}", r.tensor, r.cosine);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A class index out of the network (`ArgMax` over the channels of a convolution, int64):
/// a graph output of integers, written by its partition as binary32, in fp16 and int8.
#[test]
fn integer_outputs_leave_as_whole_numbers() {
    let mut rng = Rng(0xa7);
    let nodes = vec![
        node(
            "Conv",
            "c",
            &["x", "w", "b"],
            &["c"],
            vec![("pads", A::Is(vec![1; 4]))],
        ),
        node(
            "ArgMax",
            "am",
            &["c"],
            &["idx"],
            vec![("axis", A::I(1)), ("keepdims", A::I(1))],
        ),
    ];
    let inits = vec![
        tf("w", &[6, 3, 3, 3], rng.vec(6 * 27, 0.5)),
        tf("b", &[6], rng.vec(6, 0.1)),
    ];
    let model = model_with(13, vec![vi("x", &[1, 3, 4, 5])], nodes, inits, &["idx"]);
    let input = Rng(12).vec(3 * 4 * 5, 1.0);
    for (config, precision) in [("nv_full", Precision::Fp16), ("nv_small", Precision::Int8)] {
        let g = load_for(&model, config, precision, true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(g.integer_outputs, g.outputs);
        let want = nvdla_compiler::reference::run(&g, &[(g.inputs[0], input.clone())]).unwrap()
            [g.outputs[0].0]
            .clone();
        assert!(want
            .iter()
            .all(|v| v.fract() == 0.0 && (0.0..6.0).contains(v)));
        let c = compile_with(&g, config, precision, Extra::CPU_FALLBACK);
        let mut dev = device(config);
        let rt = nvdla_umd::runtime::Runtime::load(dev.as_mut(), &c.loadable).unwrap();
        let ti = rt
            .tensor(nvdla_umd::runtime::Direction::Input, 0)
            .unwrap()
            .clone();
        let scale =
            (precision == Precision::Int8).then(|| c.program.surface(c.program.inputs[0]).scale);
        let (to, out) = run_once(dev.as_mut(), rt, &host_input(&input, &ti, scale));
        assert_eq!(to.data_type, nvdla_loadable::DataType::FLOAT);
        let got = nvdla_umd::tensor::output_to_host(&to, &out, None).unwrap();
        let got: Vec<f32> = (0..got.element_count())
            .map(|i| got.number(i).unwrap().to_f64() as f32)
            .collect();
        // Ties between channels aside, the hardware's convolution picks the same classes.
        let same = got.iter().zip(&want).filter(|(a, b)| a == b).count();
        eprintln!(
            "{config}: {same} of {} indices as the reference",
            want.len()
        );
        assert!(got
            .iter()
            .all(|v| v.fract() == 0.0 && (0.0..6.0).contains(v)));
        assert!(same + 1 >= want.len(), "{config}: {same} of {}", want.len());
    }
}

/// Batch 3: conv 3x3 (8 -> 8) + relu, a softmax over the batch axis (a CPU partition that
/// mixes the items), conv 1x1 (8 -> 4), a cosine (an element-wise CPU partition).
fn batch_model() -> Vec<u8> {
    let mut rng = Rng(0xba7c4);
    let mut w = |n: usize, s: f32| rng.vec(n, s);
    let nodes = vec![
        node(
            "Conv",
            "c1",
            &["x", "w1", "b1"],
            &["c1"],
            vec![("pads", A::Is(vec![1; 4]))],
        ),
        node("Relu", "r1", &["c1"], &["r1"], vec![]),
        node("Softmax", "sm", &["r1"], &["sm"], vec![("axis", A::I(0))]),
        node("Conv", "c2", &["sm", "w2", "b2"], &["c2"], vec![]),
        node("Mul", "sq", &["c2", "c2"], &["y"], vec![]),
    ];
    let inits = vec![
        tf("w1", &[8, 8, 3, 3], w(8 * 8 * 9, 0.3)),
        tf("b1", &[8], w(8, 0.1)),
        tf("w2", &[4, 8, 1, 1], w(32, 2.0)),
        tf("b2", &[4], w(4, 0.1)),
    ];
    model_with(13, vec![vi("x", &[3, 8, 5, 5])], nodes, inits, &["y"])
}

/// A batch's CPU partitions: the one that mixes the items runs once, between every item's
/// pass over the layers before it and every item's pass over the layers after it, on
/// surfaces of the whole batch; the element-wise one runs in each item's pass. The output
/// matches the reference, which runs the partitions on the whole batch.
#[test]
fn a_partition_that_mixes_the_items_runs_once_for_the_batch() {
    const N: usize = 3;
    let (c, h, w) = (8, 5, 5);
    let g = load_for(&batch_model(), "nv_full", Precision::Fp16, true).unwrap();
    assert_eq!(
        partitions(&g),
        vec![vec!["Softmax".to_string()], vec!["Mul".into()]]
    );
    let input = Rng(0x5eed).vec(N * c * h * w, 1.0);
    let want = nvdla_compiler::reference::run(&g, &[(g.inputs[0], input.clone())]).unwrap()
        [g.outputs[0].0]
        .clone();
    let hw = nvdla_hw::Config::by_name("nv_full").unwrap();
    let opts = nvdla_compiler::Options {
        cpu_fallback: true,
        ..nvdla_compiler::Options::new(Target::new(hw, Precision::Fp16).unwrap())
    };
    let compiled = nvdla_compiler::compile_graph(g.clone(), &opts).unwrap();
    let runs = |layer: &str| {
        compiled
            .program
            .ops
            .iter()
            .filter(|o| o.layers.iter().any(|l| l == layer))
            .count()
    };
    assert_eq!(runs("cpu_partition0"), 1, "the softmax over the batch");
    assert_eq!(runs("cpu_partition1"), N, "the square, item by item");
    assert_eq!(runs("c2"), N);
    // The softmax's descriptor binds surfaces of 3 items; another item count in its
    // first binding (byte 37) no longer matches the dimensions.
    use nvdla_umd::partition::PartitionDesc;
    let l = nvdla_loadable::Loadable::parse(&compiled.loadable).unwrap();
    let descs: Vec<PartitionDesc> = l
        .blobs()
        .iter()
        .filter(|b| b.name().contains("partition"))
        .map(|b| PartitionDesc::decode(b.data()).unwrap())
        .collect();
    let items: Vec<Vec<u32>> = descs
        .iter()
        .map(|d| d.inputs.iter().chain(&d.outputs).map(|t| t.items).collect())
        .collect();
    assert!(items.contains(&vec![3, 3]), "{items:?}");
    assert!(items.contains(&vec![1, 1]), "{items:?}");
    let whole = descs.iter().find(|d| d.inputs[0].items == 3).unwrap();
    let mut blob = whole.encode();
    blob[PartitionDesc::binding_offset(0) + 37] = 2;
    let e = PartitionDesc::decode(&blob).unwrap_err().to_string();
    assert!(e.contains("2 items"), "{e}");
    let mut dev = device("nv_full");
    let rt = Runtime::load(dev.as_mut(), &compiled.loadable).unwrap();
    let ti = rt.tensor(Direction::Input, 0).unwrap().clone();
    let item = ti.size as usize / N;
    let atom = hw.memory_atomic as usize;
    let data: Vec<u8> = input
        .chunks(c * h * w)
        .flat_map(|x| to_surface(x, c, h, w, atom, item))
        .collect();
    let (to, out) = run_once(dev.as_mut(), rt, &data);
    let got: Vec<f32> = out
        .chunks(to.size as usize / N)
        .flat_map(|b| {
            from_surface(
                b,
                4,
                h,
                w,
                atom,
                to.strides[1] as usize,
                to.strides[2] as usize,
            )
        })
        .collect();
    let err = max_rel_err(&got, &want);
    eprintln!("batch of {N}, fp16 nv_full: max relative error {err:.2e}");
    assert!(err <= 4e-3, "error {err}");
}
