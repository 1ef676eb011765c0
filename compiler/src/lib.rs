//! The NVDLA compiler: Caffe and ONNX models to loadables.
//!
//! One way in: fill [`Options`] and call [`compile`] with a [`Model`]'s bytes, or
//! [`compile_graph`] with a graph a front end built. The pipeline (`docs/compiler.md`): front end -> [`ir::Graph`] -> graph passes ->
//! lowering to engine operations for one hardware configuration (from `nvdla-hw`) ->
//! schedule and memory plan -> emission through `nvdla-loadable`'s builder.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod calibrate;
pub mod capability;
pub mod compare;
pub mod compress;
pub mod dump;
pub mod emit;
pub mod engine;
pub mod error;
pub mod fly;
pub mod frontend;
pub mod ir;
pub mod lower;
pub mod lut;
pub mod options;
pub mod pack;
pub mod passes;
pub mod plan;
pub mod preprocess;
pub mod quant;
pub mod reference;
pub mod sdp;
pub mod target;

pub use error::{CompileError, Result};
pub use options::{compile, Calibrate, Model, Options};

use std::time::Instant;

/// What one compilation produced, for the summary line and the tests.
#[derive(Debug)]
pub struct Compiled {
    /// The loadable's bytes.
    pub loadable: Vec<u8>,
    /// The engine program (planned).
    pub program: engine::Program,
    /// The graph after the graph passes.
    pub graph: ir::Graph,
    /// Layers of the source model.
    pub source_layers: usize,
    /// Tasks in the loadable.
    pub tasks: usize,
    /// Sum of the memory-list sizes.
    pub memory_bytes: u64,
    /// Compile time in seconds (front end and calibration excluded).
    pub seconds: f64,
    /// The int8 scales used (`None` for fp16).
    pub calibration: Option<quant::Calibration>,
}

/// Compiles a graph (from any front end) with `opts`, calibrating it first when
/// [`Options::calibration`] asks for it.
pub fn compile_graph(graph: ir::Graph, opts: &Options) -> Result<Compiled> {
    opts.check()?;
    let cal = opts.calibrate(&graph, &mut |_| {})?;
    compile_calibrated(graph, opts, cal)
}

/// [`compile_graph`] with the scales already computed.
pub(crate) fn compile_calibrated(
    mut graph: ir::Graph,
    opts: &Options,
    calibration: Option<quant::Calibration>,
) -> Result<Compiled> {
    let start = Instant::now();
    let target = &opts.target;
    let quant = lower::Quant {
        cal: calibration.as_ref(),
        per_filter: opts.per_filter,
        input_scale: opts.effective_input_scale(),
    };
    let source_layers = graph.nodes.len();
    graph.check().map_err(CompileError::Network)?;
    passes::run_all(&mut graph)?;
    let settings = lower::Settings {
        cpu_fallback: opts.cpu_fallback,
        winograd: opts.winograd,
        image_input: opts.image_input,
    };
    let mut program = lower::lower_with(&graph, target, &quant, settings)?;
    if opts.compress_weights {
        compress::weights(&mut program, target);
    }
    if opts.fused_pooling && !opts.keep_activations {
        fly::pooling(&mut program, target);
    }
    plan::plan(&mut program, target, !opts.keep_activations, opts.cvsram);
    let spec = emit::emit(&program, target)?;
    let loadable = spec.build();
    Ok(Compiled {
        tasks: spec.tasks.len(),
        memory_bytes: spec.memory.iter().map(|m| m.size).sum(),
        loadable,
        program,
        graph,
        source_layers,
        seconds: start.elapsed().as_secs_f64(),
        calibration,
    })
}

impl Compiled {
    /// Where the network runs, when CPU partitions take part of it: IR nodes and MACs on
    /// NVDLA against ONNX nodes and MACs on the CPU, and the CPU's operators by count.
    /// Partitions of element-wise functions that the CDP computes as tables
    /// (`lower/table.rs`) count on NVDLA's side, with their operators.
    pub fn partition_summary(&self) -> Option<String> {
        let g = &self.graph;
        let on_cpu: std::collections::HashSet<&str> = self
            .program
            .ops
            .iter()
            .filter(|o| {
                matches!(
                    o.kind,
                    engine::HwOpKind::Cpu(engine::CpuOp::Partition { .. })
                )
            })
            .flat_map(|o| o.layers.iter().map(String::as_str))
            .collect();
        let mut parts = Vec::new();
        let mut tables = Vec::new();
        for n in &g.nodes {
            if let ir::Op::CpuPartition(p) = &n.op {
                if on_cpu.contains(n.name.as_str()) {
                    parts.push(&**p);
                } else {
                    tables.push(&**p);
                }
            }
        }
        if parts.is_empty() && tables.is_empty() {
            return None;
        }
        let hw_nodes = g
            .nodes
            .iter()
            .filter(|n| !matches!(n.op, ir::Op::CpuPartition(_) | ir::Op::CpuUnary { .. }))
            .count();
        let macs = |ps: &[&ir::CpuPartition]| -> u64 {
            ps.iter()
                .map(|p| nvdla_umd::partition::macs(&p.model, &p.input_dims).unwrap_or(0))
                .sum()
        };
        let by_op = |ps: &[&ir::CpuPartition]| -> String {
            let mut ops: Vec<(&str, usize)> = Vec::new();
            for o in ps.iter().flat_map(|p| &p.ops) {
                match ops.iter_mut().find(|(n, _)| n == o) {
                    Some((_, c)) => *c += 1,
                    None => ops.push((o, 1)),
                }
            }
            ops.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            ops.iter()
                .map(|(o, c)| format!("{o} {c}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        // MACs are the convolutions' and fully connected layers' (the IR's) against tract's
        // multiply-adds in the CPU's partitions; tables count none.
        let hw_macs: u64 = g.nodes.iter().map(|n| g.macs(n)).sum();
        let cpu_macs = macs(&parts);
        let total = (hw_macs + cpu_macs).max(1) as f64;
        let nodes = |ps: &[&ir::CpuPartition]| ps.iter().map(|p| p.ops.len()).sum::<usize>();
        let mut line = format!(
            "NVDLA: {hw_nodes} IR nodes, {hw_macs} MACs ({:.2} %)",
            100.0 * hw_macs as f64 / total
        );
        if !tables.is_empty() {
            line += &format!(
                ", and {} element-wise partitions of {} ONNX nodes as CDP tables: {}",
                tables.len(),
                nodes(&tables),
                by_op(&tables)
            );
        }
        if parts.is_empty() {
            line += "; CPU: none";
        } else {
            line += &format!(
                "; CPU: {} partitions of {} ONNX nodes, {cpu_macs} MACs ({:.2} %): {}",
                parts.len(),
                nodes(&parts),
                100.0 * cpu_macs as f64 / total,
                by_op(&parts)
            );
        }
        Some(line)
    }

    /// The one-line summary: layers, operations per engine, tasks, memory, weights, time.
    pub fn summary(&self) -> String {
        use engine::Engine::*;
        let p = &self.program;
        format!(
            "{} layers -> {} hardware ops (conv {}, sdp {}, pdp {}, cdp {}, cpu {}), {} tasks, \
             {} bytes of memory ({} of weights), {:.3} s",
            self.source_layers,
            p.ops.len(),
            p.count(Conv),
            p.count(Conv) + p.count(Sdp),
            p.count(Pdp),
            p.count(Cdp),
            p.count(Cpu),
            self.tasks,
            self.memory_bytes,
            p.weight_size,
            self.seconds
        )
    }
}
