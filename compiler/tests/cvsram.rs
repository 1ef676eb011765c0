//! CV-SRAM placement (`--cvsram SIZE`, nv_full): activations that fit the budget for their
//! lifetime live in an SRAM-domain memory the engines address as `CV`; the outputs are
//! the same bytes as the DRAM build's, the SRAM pool stays within the budget, what a CPU
//! task touches stays in DRAM (fp16: in int8 the CPU function is a CDP lookup), and the
//! cycle model moves the traffic to CVIF.

mod common;

use common::*;
use nvdla_compiler::ir::*;
use nvdla_compiler::target::{Precision, Target};
use nvdla_loadable::{Loadable, MemoryDomain};
use nvdla_umd::runtime::{RunOptions, Runtime};
use nvdla_umd::Direction;

/// conv 3x3 -> relu -> conv 3x3 -> + relu (residual) -> max pool 2x2/2 -> exp (CPU) ->
/// conv 1x1, on 32 channels of 20x16.
fn network(rng: &mut Rng) -> Graph {
    let (mut g, x) = graph(32, 20, 16);
    let s = Shape::new(1, 32, 20, 16);
    let half = Shape::new(1, 32, 10, 8);
    let conv = |rng: &mut Rng, k: usize| conv_op(rng, 32, 32, k, 0.06);
    let relu = Op::Activation(Activation::Relu { slope: 0.0 });
    let c1 = add_node(&mut g, "c1", conv(rng, 3), &[x], s);
    let r1 = add_node(&mut g, "r1", relu.clone(), &[c1], s);
    let c2 = add_node(&mut g, "c2", conv(rng, 3), &[r1], s);
    let sum = Op::Eltwise {
        kind: EltwiseKind::Sum,
        coeffs: Vec::new(),
    };
    let a = add_node(&mut g, "add", sum, &[c2, r1], s);
    let p = add_node(&mut g, "pool", max_pool(2), &[a], half);
    let e = add_node(&mut g, "exp", exp_op(), &[p], half);
    let c3 = add_node(&mut g, "c3", conv(rng, 1), &[e], half);
    g.outputs.push(c3);
    g
}

fn extra(cvsram: u64) -> Extra {
    Extra {
        cpu_fallback: true,
        cvsram,
        ..Extra::default()
    }
}

/// Budgets: none, all of it, and one that holds one of the two 32x20x16 activations
/// the engines alone touch (20 KiB in fp16, 10 KiB in int8), not both.
fn budgets(precision: Precision) -> [u64; 3] {
    let one = if precision == Precision::Fp16 { 20 } else { 10 };
    [0, 1 << 20, (one + 4) << 10]
}

#[test]
fn activations_in_cvsram_give_the_same_bytes_within_the_budget() {
    let mut rng = Rng(0xc5);
    let g = network(&mut rng);
    let input = rng.vec(32 * 20 * 16, 1.0);
    for precision in [Precision::Fp16, Precision::Int8] {
        let mut outputs = Vec::new();
        let mut placed = Vec::new();
        for budget in budgets(precision) {
            let (got, want, c) = match precision {
                Precision::Fp16 => {
                    let (got, want) = run_fp16_opts(&g, "nv_full", &input, extra(budget));
                    let c = compile_with(&g, "nv_full", precision, extra(budget));
                    (got, want, c)
                }
                _ => run_int8_scaled(&g, "nv_full", &input, true, extra(budget), false),
            };
            let cos = cosine(&got, &want);
            assert!(cos > 0.999, "{precision:?} budget {budget}: cosine {cos}");
            outputs.push(got);
            let p = &c.program;
            assert!(
                p.sram_pool_size <= budget,
                "{} > {budget}",
                p.sram_pool_size
            );
            // What the CPU task reads and writes stays in DRAM.
            for op in p
                .ops
                .iter()
                .filter(|o| o.engine() == nvdla_compiler::engine::Engine::Cpu)
            {
                for sid in op.reads().into_iter().chain(op.writes()) {
                    assert!(!p.surface(p.root(sid)).sram, "{}", p.surface(sid).name);
                }
            }
            let in_sram = p.surfaces.iter().filter(|s| s.sram).count();
            placed.push(in_sram);
            // The loadable's SRAM-domain memory, exactly when something is placed.
            let l = Loadable::parse(&c.loadable).unwrap();
            let sram_mems = l
                .memory()
                .iter()
                .filter(|m| m.domain() == MemoryDomain::SRAM)
                .count();
            assert_eq!(sram_mems, usize::from(in_sram > 0), "budget {budget}");
        }
        // Same arithmetic wherever the bytes live.
        assert_eq!(outputs[0], outputs[1], "{precision:?}");
        assert_eq!(outputs[0], outputs[2], "{precision:?}");
        assert_eq!(placed[0], 0);
        // In int8 the exp is a CDP lookup (lower/table.rs): no CPU task, so its input and
        // output may live in SRAM too.
        let want = if precision == Precision::Fp16 {
            [0, 2, 1]
        } else {
            [0, 4, 3]
        };
        assert_eq!(placed, want, "{precision:?}");
    }
}

/// DRAM and CV-SRAM bytes of a run of `loadable` on nv_full's model, with the estimator's
/// 10 bytes per cycle of DRAM; and the modelled cycles.
fn profile(loadable: &[u8], input: &[u8]) -> (u64, u64, u64) {
    let mut dev = device("nv_full");
    dev.set_profiling(true);
    dev.set_memory_timing(&nvdla_port::device::MemoryTiming {
        dram_bytes_per_cycle: Some(10.0),
        ..Default::default()
    });
    let mut rt = Runtime::load(dev.as_mut(), loadable).unwrap();
    rt.write_input(dev.as_mut(), 0, input).unwrap();
    rt.run(dev.as_mut(), &RunOptions::default(), &mut |_| {})
        .unwrap();
    rt.release(dev.as_mut());
    let t = dev.take_timings().expect("profiled");
    let (mut dram, mut sram) = (0, 0);
    for op in &t.ops {
        let c = op.cost.as_ref().expect("modelled");
        dram += c.dram_bytes;
        sram += c.sram_bytes;
    }
    let cycles = t.ops.iter().filter_map(|o| o.done).max().unwrap_or(0);
    (dram, sram, cycles)
}

#[test]
fn the_cycle_model_moves_the_traffic_to_cvif() {
    let g = network(&mut Rng(0xc5));
    let mut runs = Vec::new();
    for budget in [0, 1 << 20] {
        let c = compile_with(&g, "nv_full", Precision::Fp16, extra(budget));
        let mut dev = device("nv_full");
        let mut rt = Runtime::load(dev.as_mut(), &c.loadable).unwrap();
        let size = rt.tensor(Direction::Input, 0).unwrap().size as usize;
        rt.release(dev.as_mut());
        runs.push(profile(&c.loadable, &vec![0x3c; size]));
    }
    let ((dram0, sram0, cycles0), (dram1, sram1, cycles1)) = (runs[0], runs[1]);
    assert_eq!(sram0, 0);
    assert!(sram1 > 0 && dram1 < dram0, "{runs:?}");
    // Nothing is lost or made up: the same bytes move, through two interfaces.
    assert_eq!(dram0, dram1 + sram1, "{runs:?}");
    assert!(cycles1 < cycles0, "{runs:?}");
}

#[test]
fn refused_where_the_build_or_the_device_has_no_cvsram() {
    let g = network(&mut Rng(1));
    let t = Target::new(
        nvdla_hw::Config::by_name("nv_small").unwrap(),
        Precision::Fp16,
    );
    if let Ok(t) = t {
        let o = nvdla_compiler::Options {
            cvsram: 1 << 20,
            ..nvdla_compiler::Options::new(t)
        };
        assert!(nvdla_compiler::compile_graph(g.clone(), &o).is_err());
    }
    let t = Target::new(
        nvdla_hw::Config::by_name("nv_small").unwrap(),
        Precision::Int8,
    )
    .unwrap();
    let o = nvdla_compiler::Options {
        cvsram: 1 << 20,
        ..nvdla_compiler::Options::new(t)
    };
    let e = nvdla_compiler::compile_graph(g.clone(), &o)
        .unwrap_err()
        .to_string();
    assert!(e.contains("CV-SRAM"), "{e}");
    // nv_full's loadable on a device without CV-SRAM (the mock) fails at load, naming the
    // memory.
    let c = compile_with(&g, "nv_full", Precision::Fp16, extra(1 << 20));
    let mut dev = nvdla_umd::device::MockDevice::new();
    let Err(e) = Runtime::load(&mut dev, &c.loadable) else {
        panic!("a device without CV-SRAM loaded it");
    };
    let e = e.to_string();
    assert!(e.contains("CV-SRAM") && e.contains("memory_list["), "{e}");
}
