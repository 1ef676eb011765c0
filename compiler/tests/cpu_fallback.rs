//! `--cpu-fallback`: an element-wise function no NVDLA engine computes is an error naming
//! the layer without it, and with it an EMU operation of the runtime between hardware
//! tasks, declared by the fallback interface version; the result matches the reference.

mod common;

use common::*;
use nvdla_compiler::ir::*;
use nvdla_compiler::target::{Precision, Target};

/// conv 3x3 -> exp (CPU) -> relu -> conv 1x1, on 20 channels of 6x5.
fn network(rng: &mut Rng) -> Graph {
    let (mut g, x) = graph(20, 6, 5);
    let s = Shape::new(1, 20, 6, 5);
    let conv = |rng: &mut Rng, k: usize| conv_op(rng, 20, 20, k, 0.1);
    let c1 = add_node(&mut g, "c1", conv(rng, 3), &[x], s);
    let e = add_node(&mut g, "exp", exp_op(), &[c1], s);
    let r = add_node(
        &mut g,
        "relu",
        Op::Activation(Activation::Relu { slope: 0.0 }),
        &[e],
        s,
    );
    let c2 = add_node(&mut g, "c2", conv(rng, 1), &[r], s);
    g.outputs.push(c2);
    g
}

#[test]
fn refused_without_fallback() {
    let g = network(&mut Rng(7));
    let target = Target::new(
        nvdla_hw::Config::by_name("nv_full").unwrap(),
        Precision::Fp16,
    )
    .unwrap();
    let e = nvdla_compiler::compile_graph(g, &nvdla_compiler::Options::new(target))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("layer `exp` (CpuUnary)") && e.contains("--cpu-fallback"),
        "{e}"
    );
}

#[test]
fn runs_on_the_cpu_between_hardware_tasks() {
    let mut rng = Rng(11);
    let g = network(&mut rng);
    let input = rng.vec(20 * 6 * 5, 1.0);
    let (got, want) = run_fp16_opts(&g, "nv_full", &input, Extra::CPU_FALLBACK);
    let err = max_rel_err(&got, &want);
    assert!(err < 1e-2, "{err}");
    // The EMU task's blobs declare the fallback interface version.
    let target = Target::new(
        nvdla_hw::Config::by_name("nv_full").unwrap(),
        Precision::Fp16,
    )
    .unwrap();
    let opts = nvdla_compiler::Options {
        cpu_fallback: true,
        ..nvdla_compiler::Options::new(target)
    };
    let c = nvdla_compiler::compile_graph(g, &opts).unwrap();
    assert_eq!(c.tasks, 3);
    let l = nvdla_loadable::Loadable::parse(&c.loadable).unwrap();
    let v = nvdla_compiler::emit::EMU1_FALLBACK_VERSION;
    let emu: Vec<_> = l
        .blobs()
        .iter()
        .filter(|b| b.interface() == nvdla_loadable::schema::Interface::EMU1)
        .collect();
    assert_eq!(emu.len(), 3);
    for b in emu {
        let bv = b.version();
        assert_eq!(
            (bv.major, bv.minor, bv.sub_minor),
            (v.major, v.minor, v.sub_minor)
        );
    }
}
