//! Batches: a network of batch N runs each item's convolutions and poolings in a pass of
//! its own, and its fully connected tail once for all N items side by side (weights read
//! once per batch). Each item's output is the same bytes as the batch-1 build's on that
//! item, in fp16 and int8, on nv_full and nv_small; the weights are stored once.

mod common;

use common::*;
use nvdla_compiler::engine::Engine;
use nvdla_compiler::ir::*;
use nvdla_compiler::quant::{Calibration, RangeMethod};
use nvdla_compiler::target::{Precision, Target};
use nvdla_umd::runtime::Runtime;
use nvdla_umd::Direction;

const C: usize = 8;
const SIZE: usize = 6;

/// conv 3x3 (8 -> 16) + relu -> max pool 2x2 -> flatten -> fc 144 -> 40 + relu -> fc 40
/// -> 10, for `batch` items; weights from `seed`.
fn network(batch: usize, seed: u64) -> Graph {
    let mut rng = Rng(seed);
    let mut g = Graph {
        name: "batch".into(),
        ..Default::default()
    };
    let x = g.add_tensor("data", Shape::new(batch, C, SIZE, SIZE));
    g.inputs.push(x);
    let conv = conv_op(&mut rng, C, 16, 3, 0.2);
    let s = |c, h, w| Shape::new(batch, c, h, w);
    let relu = || Op::Activation(Activation::Relu { slope: 0.0 });
    let c1 = add_node(&mut g, "conv", conv, &[x], s(16, SIZE, SIZE));
    let r1 = add_node(&mut g, "conv_relu", relu(), &[c1], s(16, SIZE, SIZE));
    let p = add_node(&mut g, "pool", max_pool(2), &[r1], s(16, 3, 3));
    let f = add_node(&mut g, "flatten", Op::Flatten, &[p], s(144, 1, 1));
    let fc = |rng: &mut Rng, k: usize, c: usize| Op::FullyConnected {
        weight: Weights::new(vec![k, c], rng.vec(k * c, 0.15)).unwrap(),
        bias: Some(Weights::vector(rng.vec(k, 0.1))),
    };
    let f1 = add_node(&mut g, "fc1", fc(&mut rng, 40, 144), &[f], s(40, 1, 1));
    let r2 = add_node(&mut g, "fc1_relu", relu(), &[f1], s(40, 1, 1));
    let f2 = add_node(&mut g, "fc2", fc(&mut rng, 10, 40), &[r2], s(10, 1, 1));
    g.outputs.push(f2);
    g
}

/// Runs `loadable` on `config`'s model with `items` (device bytes of each input item, in
/// order); the output's bytes per item.
fn run(config: &str, loadable: &[u8], items: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut dev = device(config);
    let rt = Runtime::load(dev.as_mut(), loadable).unwrap();
    let ti = rt.tensor(Direction::Input, 0).unwrap().clone();
    let item = ti.size as usize / items.len();
    let mut data = vec![0u8; ti.size as usize];
    for (b, bytes) in items.iter().enumerate() {
        data[b * item..b * item + bytes.len().min(item)]
            .copy_from_slice(&bytes[..bytes.len().min(item)]);
    }
    let (to, out) = run_once(dev.as_mut(), rt, &data);
    let n = to.size as usize / items.len();
    out.chunks(n).map(<[u8]>::to_vec).collect()
}

#[test]
fn the_fully_connected_tail_runs_once_for_the_batch_with_the_same_bytes() {
    const BATCH: usize = 4;
    for (config, precision) in [("nv_full", Precision::Fp16), ("nv_small", Precision::Int8)] {
        let one = network(1, 0xba7c);
        let many = network(BATCH, 0xba7c);
        let hw = nvdla_hw::Config::by_name(config).unwrap();
        let atom = hw.memory_atomic as usize;
        let target = Target::new(hw, precision).unwrap();
        let mut rng = Rng(0x17e5);
        let inputs: Vec<Vec<f32>> = (0..BATCH).map(|_| rng.vec(C * SIZE * SIZE, 1.0)).collect();
        // One calibration (on the items, through the batch-1 network) for both builds.
        let mut values: Vec<Vec<f32>> = Vec::new();
        for x in &inputs {
            let v = nvdla_compiler::reference::run(&one, &[(one.inputs[0], x.clone())]).unwrap();
            if values.is_empty() {
                values = v;
            } else {
                for (a, b) in values.iter_mut().zip(v) {
                    a.extend(b);
                }
            }
        }
        let cal = Calibration::from_activations(&values, RangeMethod::MaxAbs);
        let quant = nvdla_compiler::lower::Quant {
            cal: (precision == Precision::Int8).then_some(&cal),
            per_filter: true,
            input_scale: 1.0,
        };
        let opts = nvdla_compiler::Options::with_quant(target, &quant);
        let c1 = nvdla_compiler::compile_graph(one, &opts).unwrap();
        let cn = nvdla_compiler::compile_graph(many, &opts).unwrap();
        let in_scale = c1.program.surface(c1.program.inputs[0]).scale;
        let bytes: Vec<Vec<u8>> = inputs
            .iter()
            .map(|x| match precision {
                Precision::Fp16 => to_surface(x, C, SIZE, SIZE, atom, 2 * C * SIZE * SIZE * 2),
                _ => to_surface_i8(
                    x,
                    (C, SIZE, SIZE),
                    atom,
                    C.div_ceil(atom) * atom * 36,
                    in_scale,
                ),
            })
            .collect();
        let want: Vec<Vec<u8>> = bytes
            .iter()
            .map(|b| run(config, &c1.loadable, std::slice::from_ref(b)).remove(0))
            .collect();
        let got = run(config, &cn.loadable, &bytes);
        assert_eq!(got, want, "{config} {precision:?}");
        // The convolution per item, each fully connected layer once, and the output
        // copied into each item.
        let ops_of = |layer: &str, engine: Engine| {
            cn.program
                .ops
                .iter()
                .filter(|o| o.engine() == engine && o.layers.iter().any(|l| l == layer))
                .count()
        };
        assert_eq!(ops_of("conv", Engine::Conv), BATCH, "{config}");
        assert_eq!(ops_of("fc1", Engine::Conv), 1, "{config}");
        assert_eq!(ops_of("fc2", Engine::Conv), 1, "{config}");
        assert_eq!(ops_of("fc2", Engine::Sdp), BATCH, "{config}");
        // Identical blobs (the passes' convolution weights) are stored once.
        assert_eq!(cn.program.weight_size, c1.program.weight_size, "{config}");
    }
}

#[test]
fn a_softmax_after_the_tail_keeps_the_network_per_item() {
    let mut g = network(2, 3);
    let out = g.outputs[0];
    let sm = add_node(&mut g, "prob", Op::Softmax, &[out], Shape::new(2, 10, 1, 1));
    g.outputs = vec![sm];
    let t = Target::new(
        nvdla_hw::Config::by_name("nv_full").unwrap(),
        Precision::Fp16,
    )
    .unwrap();
    let c = nvdla_compiler::compile_graph(g, &nvdla_compiler::Options::new(t)).unwrap();
    let fc1 = c
        .program
        .ops
        .iter()
        .filter(|o| o.layers.iter().any(|l| l == "fc1"))
        .count();
    assert_eq!(fc1, 2);
}

/// More operations than the firmware tracks in one task (a batch's passes over a deep
/// network: 9 items x 64 convolutions = 1 152 firmware operations) go in several DLA
/// tasks, one after the other, with the same bytes.
#[test]
fn more_operations_than_a_task_holds_go_in_several_tasks() {
    let chain = |batch: usize| {
        let mut rng = Rng(0xdee9);
        let mut g = Graph {
            name: "chain".into(),
            ..Default::default()
        };
        let mut x = g.add_tensor("data", Shape::new(batch, 8, 4, 4));
        g.inputs.push(x);
        for i in 0..64 {
            let op = conv_op(&mut rng, 8, 8, 3, 0.3);
            x = add_node(
                &mut g,
                &format!("c{i}"),
                op,
                &[x],
                Shape::new(batch, 8, 4, 4),
            );
        }
        g.outputs.push(x);
        g
    };
    let t = Target::new(
        nvdla_hw::Config::by_name("nv_full").unwrap(),
        Precision::Fp16,
    )
    .unwrap();
    let opts = nvdla_compiler::Options::new(t);
    let one = nvdla_compiler::compile_graph(chain(1), &opts).unwrap();
    let many = nvdla_compiler::compile_graph(chain(9), &opts).unwrap();
    assert_eq!((one.tasks, many.tasks), (1, 2));
    let atom = 32;
    let mut rng = Rng(5);
    let items: Vec<Vec<u8>> = (0..9)
        .map(|_| to_surface(&rng.vec(8 * 16, 1.0), 8, 4, 4, atom, 16 * atom))
        .collect();
    let want: Vec<Vec<u8>> = items
        .iter()
        .map(|b| run("nv_full", &one.loadable, std::slice::from_ref(b)).remove(0))
        .collect();
    assert_eq!(run("nv_full", &many.loadable, &items), want);
}
