//! int8 top-1 vs fp32 on the networks of `tests/networks.rs` (exploration draft).

mod common;

use common::{device, from_surface_i8, to_surface_i8, Rng};
use nvdla_compiler::frontend::caffe::{self, synth::random_weights};
use nvdla_compiler::ir::{Graph, Op, TensorId};
use nvdla_compiler::lower::Quant;
use nvdla_compiler::quant::{Calibration, RangeMethod};
use nvdla_compiler::target::{Precision, Target};
use nvdla_umd::runtime::{RunOptions, Runtime};
use nvdla_umd::Direction;
use std::time::Instant;

const RESNET: &str = include_str!("networks/resnet.prototxt");
const INCEPTION: &str = include_str!("networks/inception.prototxt");
const ALEXNET: &str = include_str!("networks/alexnet.prototxt");
const SQUEEZENET: &str = include_str!("networks/squeezenet.prototxt");

fn k() -> usize {
    std::env::var("KCAL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}
const N: usize = 50;

fn network(prototxt: &str, seed: u64) -> (Graph, TensorId) {
    let model = random_weights(prototxt, seed).unwrap_or_else(|e| panic!("{e}"));
    let mut g = caffe::load(prototxt, &model).unwrap_or_else(|e| panic!("{e}"));
    let scores = g
        .nodes
        .iter()
        .find(|n| matches!(n.op, Op::Softmax))
        .map(|n| n.inputs[0])
        .unwrap();
    g.outputs.push(scores);
    (g, scores)
}

fn alexnet_without_lrn() -> String {
    let mut text = String::new();
    for line in ALEXNET.lines() {
        if line.contains("type: \"LRN\"") || line.contains("lrn_param") {
            continue;
        }
        text.push_str(line);
        text.push('\n');
    }
    text.replace("bottom: \"norm1\"", "bottom: \"conv1\"")
        .replace("bottom: \"norm2\"", "bottom: \"conv2\"")
}

fn inputs(g: &Graph, seed: u64, n: usize) -> Vec<Vec<f32>> {
    let len = g.shape(g.inputs[0]).elements();
    (0..n)
        .map(|i| {
            Rng(seed.wrapping_add(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1)))
                .vec(len, 1.0)
        })
        .collect()
}

/// Structured inputs: per channel an offset plus three random plane waves plus noise,
/// clamped to [-1, 1).
fn images(g: &Graph, seed: u64, n: usize) -> Vec<Vec<f32>> {
    let sh = g.shape(g.inputs[0]);
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let mut v = Vec::with_capacity(sh.elements());
            let waves: Vec<[f32; 4]> = (0..3)
                .map(|_| [rng.next() * 3.0, rng.next() * 3.0, rng.next() * 3.2, 0.0])
                .collect();
            for _c in 0..sh.c {
                let a = rng.next() * 0.5;
                let amp: Vec<f32> = (0..3).map(|_| rng.next() * 0.4).collect();
                for y in 0..sh.h {
                    for x in 0..sh.w {
                        let mut val = a + 0.2 * rng.next();
                        for (w, b) in waves.iter().zip(&amp) {
                            let ph = std::f32::consts::TAU
                                * (w[0] * x as f32 / sh.w as f32 + w[1] * y as f32 / sh.h as f32)
                                + w[2];
                            val += b * ph.sin();
                        }
                        v.push(val.clamp(-1.0, 0.999));
                    }
                }
            }
            v
        })
        .collect()
}

/// Balances the classes: the classifier's bias minus the mean, over `xs`, of each class's
/// pre-activation (a trained classifier's classes are about equally likely).
fn center(g: &mut Graph, scores: TensorId, xs: &[Vec<f32>]) {
    let mut t = scores;
    let node = loop {
        let n = g.producer(t).unwrap();
        match &g.nodes[n.0].op {
            Op::Conv(_) | Op::FullyConnected { .. } => break n,
            _ => t = g.nodes[n.0].inputs[0],
        }
    };
    let out = g.nodes[node.0].outputs[0];
    let sh = g.shape(out);
    let plane = sh.h * sh.w;
    let mut mean = vec![0.0f64; sh.c];
    for x in xs {
        let v = nvdla_compiler::reference::run(g, &[(g.inputs[0], x.clone())]).unwrap();
        for (c, m) in mean.iter_mut().enumerate() {
            *m += v[out.0][c * plane..(c + 1) * plane]
                .iter()
                .map(|&a| f64::from(a))
                .sum::<f64>()
                / (plane * xs.len()) as f64;
        }
    }
    let bias = match &mut g.nodes[node.0].op {
        Op::Conv(c) => &mut c.bias,
        Op::FullyConnected { bias, .. } => bias,
        _ => unreachable!(),
    };
    let b = bias.get_or_insert_with(|| {
        nvdla_compiler::ir::Weights::new(vec![sh.c], vec![0.0; sh.c]).unwrap()
    });
    for (b, m) in b.data.iter_mut().zip(&mean) {
        *b -= *m as f32;
    }
}

fn argmax(v: &[f32]) -> usize {
    (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 {
        return if na == nb { 1.0 } else { 0.0 };
    }
    dot / (na * nb)
}

fn calibrate(g: &Graph, xs: &[Vec<f32>], method: RangeMethod) -> Calibration {
    let mut values: Vec<Vec<f32>> = vec![Vec::new(); g.tensors.len()];
    for x in xs {
        let out = nvdla_compiler::reference::run(g, &[(g.inputs[0], x.clone())]).unwrap();
        for (acc, v) in values.iter_mut().zip(out) {
            acc.extend(v);
        }
    }
    Calibration::from_activations(&values, method)
}

fn run_all(
    g: &Graph,
    config: &str,
    per_filter: bool,
    cal: &Calibration,
    xs: &[Vec<f32>],
    out_index: usize,
) -> Vec<Vec<f32>> {
    let hw = nvdla_hw::Config::by_name(config).unwrap();
    let target = Target::new(hw, Precision::Int8).unwrap();
    let quant = Quant {
        cal: Some(cal),
        per_filter,
        input_scale: 1.0,
    };
    let compiled = nvdla_compiler::compile_graph_with(g.clone(), &target, &quant)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut dev = device(config);
    let mut rt = Runtime::load(dev.as_mut(), &compiled.loadable).unwrap();
    let ti = rt.tensor(Direction::Input, 0).unwrap().clone();
    let s = g.shape(g.inputs[0]);
    let atom = hw.memory_atomic as usize;
    let in_scale = compiled.program.surface(compiled.program.inputs[0]).scale;
    let to = rt.tensor(Direction::Output, out_index).unwrap().clone();
    let o = g.shape(g.outputs[out_index]);
    let out_scale = compiled
        .program
        .surface(compiled.program.outputs[out_index])
        .scale;
    let mut res = Vec::new();
    for x in xs {
        let data = to_surface_i8(x, (s.c, s.h, s.w), atom, ti.size as usize, in_scale);
        rt.write_input(dev.as_mut(), 0, &data).unwrap();
        rt.run(dev.as_mut(), &RunOptions::default(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{e}"));
        let out = rt.read_output(dev.as_mut(), out_index).unwrap();
        res.push(from_surface_i8(
            &out,
            (o.c, o.h, o.w),
            atom,
            (to.strides[1] as usize, to.strides[2] as usize),
            out_scale,
        ));
    }
    rt.release(dev.as_mut());
    res
}

fn explore(name: &str, g: &Graph, scores: TensorId) {
    let mut g = g.clone();
    if std::env::var("CENTER").is_ok() {
        let fit = images(&g, 0x5555_0001, 32);
        center(&mut g, scores, &fit);
    }
    let g = &g;
    let out_index = g.outputs.iter().position(|&o| o == scores).unwrap();
    let t0 = Instant::now();
    let (cal_x, eval_x) = if std::env::var("IMAGES").is_ok() {
        (images(g, 0x1234_5678, k()), images(g, 0xabcd_ef01, N))
    } else {
        (inputs(g, 0x1234_5678, k()), inputs(g, 0xabcd_ef01, N))
    };
    let want: Vec<Vec<f32>> = eval_x
        .iter()
        .map(|x| {
            nvdla_compiler::reference::run(g, &[(g.inputs[0], x.clone())]).unwrap()[scores.0]
                .clone()
        })
        .collect();
    let classes: Vec<usize> = want.iter().map(|w| argmax(w)).collect();
    let mut hist = vec![0; want[0].len()];
    for &c in &classes {
        hist[c] += 1;
    }
    let margins: Vec<f32> = want
        .iter()
        .map(|w| {
            let mut s = w.clone();
            s.sort_by(|a, b| b.total_cmp(a));
            let span = s[0] - s[s.len() - 1];
            (s[0] - s[1]) / span
        })
        .collect();
    let mut m = margins.clone();
    m.sort_by(f32::total_cmp);
    eprintln!("{name}: fp32 classes {hist:?}, relative top1-top2 margin min {:.4} median {:.4}; ref {:.2}s", m[0], m[m.len() / 2], t0.elapsed().as_secs_f64());
    if std::env::var("ONLYREF").is_ok() {
        return;
    }
    for (mname, method) in [
        ("max-abs", RangeMethod::MaxAbs),
        ("p99.99", RangeMethod::Percentile(99.99)),
    ] {
        let cal = calibrate(g, &cal_x, method);
        for config in ["nv_small", "nv_full"] {
            for per_filter in [true, false] {
                let t = Instant::now();
                let got = run_all(g, config, per_filter, &cal, &eval_x, out_index);
                let agree = got
                    .iter()
                    .zip(&classes)
                    .filter(|(g, &c)| argmax(g) == c)
                    .count();
                let top = cal.get(scores).unwrap() * 127.0;
                let sat = got
                    .iter()
                    .filter(|g| g.iter().any(|&v| v >= top * 0.9999))
                    .count();
                let flips: Vec<String> = got
                    .iter()
                    .zip(&classes)
                    .zip(&margins)
                    .filter(|((g, &c), _)| argmax(g) != c)
                    .map(|(_, m)| format!("{m:.3}"))
                    .collect();
                let cos: Vec<f64> = got.iter().zip(&want).map(|(a, b)| cosine(a, b)).collect();
                let mean = cos.iter().sum::<f64>() / cos.len() as f64;
                let min = cos.iter().copied().fold(1.0, f64::min);
                let rel = got
                    .iter()
                    .zip(&want)
                    .map(|(a, b)| common::max_rel_err(a, b))
                    .fold(0.0, f32::max);
                eprintln!(
                    "{name:10} {config:8} {:10} {mname:8} {agree}/{N} cos mean {mean:.4} min {min:.4} maxrel {rel:.3} sat {sat} flips at margins {flips:?} ({:.2}s)",
                    if per_filter { "per-filter" } else { "per-kernel" },
                    t.elapsed().as_secs_f64()
                );
            }
        }
    }
}

#[test]
fn resnet() {
    let (g, s) = network(RESNET, 1);
    explore("resnet", &g, s);
}

#[test]
fn inception() {
    let (g, s) = network(INCEPTION, 2);
    explore("inception", &g, s);
}

#[test]
fn alexnet() {
    let (g, s) = network(&alexnet_without_lrn(), 3);
    explore("alexnet", &g, s);
}

#[test]
fn squeezenet() {
    let (g, s) = network(SQUEEZENET, 4);
    explore("squeezenet", &g, s);
}

fn per_layer(
    name: &str,
    g: &Graph,
    scores: TensorId,
    config: &str,
    per_filter: bool,
    method: RangeMethod,
) {
    let mut g = g.clone();
    let fit = images(&g, 0x5555_0001, 32);
    center(&mut g, scores, &fit);
    let cal_x = images(&g, 0x1234_5678, k());
    let eval_x = images(&g, 0xabcd_ef01, 10);
    let cal = calibrate(&g, &cal_x, method);
    let refs: Vec<Vec<Vec<f32>>> = eval_x
        .iter()
        .map(|x| nvdla_compiler::reference::run(&g, &[(g.inputs[0], x.clone())]).unwrap())
        .collect();
    let mut lines = Vec::new();
    for n in &g.nodes {
        for &t in &n.outputs {
            let mut h = g.clone();
            h.outputs = vec![t];
            let hw = nvdla_hw::Config::by_name(config).unwrap();
            let target = Target::new(hw, Precision::Int8).unwrap();
            let quant = Quant {
                cal: Some(&cal),
                per_filter,
                input_scale: 1.0,
            };
            if let Err(e) = nvdla_compiler::compile_graph_with(h.clone(), &target, &quant) {
                lines.push(format!(
                    "{:28} {:>10}  refused: {e}",
                    g.tensor(t).name,
                    n.op.name()
                ));
                continue;
            }
            let got = run_all(&h, config, per_filter, &cal, &eval_x, 0);
            let scale = cal.get(t).unwrap_or(f32::NAN);
            let (mut e2, mut r2, mut q2, mut sat, mut cnt, mut e1) =
                (0.0f64, 0.0f64, 0.0f64, 0usize, 0usize, 0.0f64);
            for (gv, rv) in got.iter().zip(&refs) {
                let want = &rv[t.0];
                for (a, b) in gv.iter().zip(want) {
                    e2 += f64::from(a - b).powi(2);
                    e1 += f64::from(a - b);
                    r2 += f64::from(*b).powi(2);
                    let q = f32::from(nvdla_compiler::quant::q8(*b, scale)) * scale;
                    q2 += f64::from(q - b).powi(2);
                    if b.abs() > 127.5 * scale {
                        sat += 1;
                    }
                    cnt += 1;
                }
            }
            lines.push(format!(
                "{:28} {:>10}  rel rms {:.4}  (quantizing the reference alone {:.4})  saturated {:.4}%  mean err/step {:+.3}",
                g.tensor(t).name, n.op.name(), (e2 / r2).sqrt(), (q2 / r2).sqrt(), 100.0 * sat as f64 / cnt as f64, e1 / cnt as f64 / f64::from(scale)
            ));
        }
    }
    eprintln!(
        "{name} {config} per_filter={per_filter} {method:?}\n{}",
        lines.join("\n")
    );
}

#[test]
#[ignore]
fn diag() {
    let which = std::env::var("NET").unwrap_or_default();
    let (g, s) = match which.as_str() {
        "resnet" => network(RESNET, 1),
        "inception" => network(INCEPTION, 2),
        "alexnet" => network(&alexnet_without_lrn(), 3),
        _ => network(SQUEEZENET, 4),
    };
    let pf = std::env::var("PK").is_err();
    per_layer(&which, &g, s, "nv_full", pf, RangeMethod::MaxAbs);
}

/// Layer-local error: each node run on the hardware's own values of its inputs
/// (reference of the node alone), in steps of the output's scale.
fn local(
    name: &str,
    g: &Graph,
    scores: TensorId,
    config: &str,
    per_filter: bool,
    method: RangeMethod,
) {
    let mut g = g.clone();
    let fit = images(&g, 0x5555_0001, 32);
    center(&mut g, scores, &fit);
    let cal_x = images(&g, 0x1234_5678, k());
    let eval_x = images(&g, 0xabcd_ef01, 10);
    let cal = calibrate(&g, &cal_x, method);
    let hw = nvdla_hw::Config::by_name(config).unwrap();
    let target = Target::new(hw, Precision::Int8).unwrap();
    let quant = Quant {
        cal: Some(&cal),
        per_filter,
        input_scale: 1.0,
    };
    let mut lines = Vec::new();
    for n in &g.nodes {
        if n.inputs.iter().any(|t| g.inputs.contains(t)) {
            continue;
        }
        let mut h = g.clone();
        h.outputs = n.inputs.clone();
        h.outputs.push(n.outputs[0]);
        if let Err(e) = nvdla_compiler::compile_graph_with(h.clone(), &target, &quant) {
            lines.push(format!("{:28} refused: {e}", n.name));
            continue;
        }
        let k = n.inputs.len();
        let outs: Vec<Vec<Vec<f32>>> = (0..=k)
            .map(|i| run_all(&h, config, per_filter, &cal, &eval_x, i))
            .collect();
        let mut single = g.clone();
        single.nodes = vec![n.clone()];
        single.inputs = n.inputs.clone();
        single.outputs = n.outputs.clone();
        let compiled = nvdla_compiler::compile_graph_with(h.clone(), &target, &quant).unwrap();
        let scale = f64::from(compiled.program.surface(compiled.program.outputs[k]).scale);
        let own = f64::from(cal.get(n.outputs[0]).unwrap_or(f32::NAN));
        let (mut e1, mut e2, mut cnt, mut worst) = (0.0f64, 0.0f64, 0usize, 0.0f64);
        for j in 0..eval_x.len() {
            let ins: Vec<(TensorId, Vec<f32>)> =
                (0..k).map(|i| (n.inputs[i], outs[i][j].clone())).collect();
            let want = &nvdla_compiler::reference::run(&single, &ins).unwrap()[n.outputs[0].0];
            for (a, b) in outs[k][j].iter().zip(want) {
                let q = f64::from(b.clamp(-128.0 * scale as f32, 127.0 * scale as f32));
                let d = (f64::from(*a) - q) / scale;
                e1 += d;
                e2 += d * d;
                worst = worst.max(d.abs());
                cnt += 1;
            }
        }
        lines.push(format!(
            "{:28} {:>14} step/own {:.2} local error in steps: mean {:+.3} rms {:.3} max {:.2}",
            n.name,
            n.op.name(),
            scale / own,
            e1 / cnt as f64,
            (e2 / cnt as f64).sqrt(),
            worst
        ));
    }
    eprintln!("{name} {config} per_filter={per_filter} {method:?} (rounding alone: rms 0.289, max 0.5)\n{}", lines.join("\n"));
}

#[test]
#[ignore]
fn diag_local() {
    let which = std::env::var("NET").unwrap_or_default();
    let (g, s) = match which.as_str() {
        "resnet" => network(RESNET, 1),
        "inception" => network(INCEPTION, 2),
        "alexnet" => network(&alexnet_without_lrn(), 3),
        _ => network(SQUEEZENET, 4),
    };
    let pf = std::env::var("PK").is_err();
    let config = std::env::var("CFG").unwrap_or("nv_full".into());
    local(&which, &g, s, &config, pf, RangeMethod::MaxAbs);
}

/// Top-1 agreement when the network runs in int8 up to tensor T (on the VP) and in fp32
/// after it, for every single-tensor cut T.
fn cuts(
    name: &str,
    g: &Graph,
    scores: TensorId,
    config: &str,
    per_filter: bool,
    method: RangeMethod,
) {
    let mut g = g.clone();
    let fit = images(&g, 0x5555_0001, 32);
    center(&mut g, scores, &fit);
    let cal_x = images(&g, 0x1234_5678, k());
    let nx: usize = std::env::var("NX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(N);
    let eval_x = images(&g, 0xabcd_ef01, nx);
    let cal = calibrate(&g, &cal_x, method);
    let want: Vec<usize> = eval_x
        .iter()
        .map(|x| {
            argmax(
                &nvdla_compiler::reference::run(&g, &[(g.inputs[0], x.clone())]).unwrap()[scores.0],
            )
        })
        .collect();
    let hw = nvdla_hw::Config::by_name(config).unwrap();
    let target = Target::new(hw, Precision::Int8).unwrap();
    let quant = Quant {
        cal: Some(&cal),
        per_filter,
        input_scale: 1.0,
    };
    let mut lines = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let t = n.outputs[0];
        // Tensors computed by nodes 0..=i.
        let mut before = vec![false; g.tensors.len()];
        for &x in &g.inputs {
            before[x.0] = true;
        }
        for m in &g.nodes[..=i] {
            for &o in &m.outputs {
                before[o.0] = true;
            }
        }
        if before[scores.0] && t != scores {
            continue;
        }
        let tail: Vec<_> = g.nodes[i + 1..].to_vec();
        let cut = tail
            .iter()
            .all(|m| m.inputs.iter().all(|x| !before[x.0] || *x == t));
        if !cut {
            continue;
        }
        let mut h = g.clone();
        h.outputs = vec![t];
        if let Err(e) = nvdla_compiler::compile_graph_with(h.clone(), &target, &quant) {
            lines.push(format!("{:28} refused: {e}", n.name));
            continue;
        }
        let got = run_all(&h, config, per_filter, &cal, &eval_x, 0);
        let mut tg = g.clone();
        tg.nodes = tail;
        tg.inputs = vec![t];
        tg.outputs = vec![scores];
        let agree = got
            .iter()
            .zip(&want)
            .filter(|(v, &c)| {
                let s = if t == scores {
                    (*v).clone()
                } else {
                    nvdla_compiler::reference::run(&tg, &[(t, (*v).clone())]).unwrap()[scores.0]
                        .clone()
                };
                argmax(&s) == c
            })
            .count();
        lines.push(format!(
            "int8 through {:28} {:>14}: {agree}/{}",
            n.name,
            n.op.name(),
            eval_x.len()
        ));
        if matches!(n.op, Op::Pool(_)) && n.inputs.len() == 1 {
            // What-if: the pooling computed from the hardware's input, quantized at the
            // input's scale (what the PDP does) or at its own calibrated scale.
            let mut h = g.clone();
            h.outputs = vec![n.inputs[0]];
            let got_in = run_all(&h, config, per_filter, &cal, &eval_x, 0);
            let mut single = g.clone();
            single.nodes = vec![n.clone()];
            single.inputs = n.inputs.clone();
            single.outputs = vec![t];
            for (what, sc) in [
                ("input's scale", cal.get(n.inputs[0]).unwrap()),
                ("own scale", cal.get(t).unwrap()),
            ] {
                let agree = got_in
                    .iter()
                    .zip(&want)
                    .filter(|(v, &c)| {
                        let p =
                            nvdla_compiler::reference::run(&single, &[(n.inputs[0], (*v).clone())])
                                .unwrap()[t.0]
                                .clone();
                        let p: Vec<f32> = p
                            .iter()
                            .map(|&x| f32::from(nvdla_compiler::quant::q8(x, sc)) * sc)
                            .collect();
                        let s = nvdla_compiler::reference::run(&tg, &[(t, p)]).unwrap()[scores.0]
                            .clone();
                        argmax(&s) == c
                    })
                    .count();
                lines.push(format!(
                    "    simulated {} quantized at its {what} ({:.2} x own): {agree}/{}",
                    n.name,
                    sc / cal.get(t).unwrap(),
                    eval_x.len()
                ));
            }
        }
    }
    eprintln!(
        "{name} {config} per_filter={per_filter} {method:?}\n{}",
        lines.join("\n")
    );
}

#[test]
#[ignore]
fn diag_cuts() {
    let which = std::env::var("NET").unwrap_or_default();
    let (g, s) = match which.as_str() {
        "resnet" => network(RESNET, 1),
        "inception" => network(INCEPTION, 2),
        "alexnet" => network(&alexnet_without_lrn(), 3),
        _ => network(SQUEEZENET, 4),
    };
    let pf = std::env::var("PK").is_err();
    let config = std::env::var("CFG").unwrap_or("nv_full".into());
    let m = if std::env::var("PCT").is_ok() {
        RangeMethod::Percentile(99.99)
    } else {
        RangeMethod::MaxAbs
    };
    cuts(&which, &g, s, &config, pf, m);
}
