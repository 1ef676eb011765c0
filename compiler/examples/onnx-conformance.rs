//! ONNX backend conformance on the hardware model: every test directory of ONNX's backend
//! suites (`node`, `pytorch-converted`, `pytorch-operator`, `simple`) compiled by
//! nvdla-compiler and run on the in-process virtual platform (`scripts/onnx-conformance`
//! wraps it; `docs/compiler.md` has the tolerances and the reasons for what is
//! unsupported).
//!
//! ```sh
//! cargo run --release -p nvdla-compiler --example onnx-conformance -- \
//!     [--suite-dir DIR] [--json FILE] [--cpu-fallback] [--timeout SECONDS] [-v] [FILTER...]
//! ```
//!
//! For each test:
//! - **fp16, nv_full**: the model is compiled, every `test_data_set_*` is fed and every
//!   `output_K.pb` compared: pass when `|got - want| <= FP16_RTOL * |want| + FP16_ATOL *
//!   max|want|` element by element (NaN matching NaN, infinities equal);
//! - **int8, nv_small**, for tests made only of the conv/pool/element-wise family
//!   ([`INT8_FAMILY`]): calibrated (max-abs) on the compiler's fp32 reference run on the
//!   test's own inputs; pass when `|got - want| <= INT8_STEPS` steps of the output's
//!   scale (`max|want| / 127`);
//! - **unsupported**: a `CompileError` naming the node, its operator and the reason;
//! - **fail**: wrong values, or a runtime error; a panic or a test that exceeds the time
//!   limit is a failure too (a bug), reported as such.
//!
//! Prints a per-operator table, the failures, and as its last line
//! `N passed, M failed, K unsupported` over all runs (fp16 and int8). Exit status 1 when
//! anything failed.

use nvdla_compiler::frontend::onnx::{self, proto};
use nvdla_compiler::ir::Graph;
use nvdla_compiler::lower::Quant;
use nvdla_compiler::quant::{Calibration, RangeMethod};
use nvdla_compiler::target::{Precision, Target};
use nvdla_umd::runtime::{RunOptions, Runtime};
use nvdla_umd::tensor::{host_to_input, output_to_host, HostTensor};
use nvdla_umd::Direction;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// fp16: relative tolerance per element (a few half-precision ulps: inputs, weights and
/// results are each rounded to 11 significant bits).
const FP16_RTOL: f32 = 4e-3;
/// fp16: absolute tolerance relative to the output's largest magnitude (sums of many
/// rounded products cancel; LUT interpolation of sigmoid/tanh).
const FP16_ATOL: f32 = 4e-3;
/// int8: tolerance in steps of the output's scale (`max|want| / 127`).
const INT8_STEPS: f32 = 4.0;

/// Operators whose tests also run in int8 on nv_small (every node of the test must be
/// one of them).
const INT8_FAMILY: &[&str] = &[
    "Conv",
    "ConvTranspose",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "Relu",
    "LeakyRelu",
    "PRelu",
    "Clip",
    "Add",
    "Sub",
    "Mul",
    "Sum",
    "Max",
    "Min",
    "Mean",
    "Neg",
    "BatchNormalization",
    "Concat",
    "LRN",
    "Gemm",
    "MatMul",
    "Identity",
    "Dropout",
    "Flatten",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "Pad",
    "Constant",
    "DepthToSpace",
    "SpaceToDepth",
    // Element-wise functions: with --cpu-fallback in CPU partitions, or CDP lookups where
    // an engine reads the result (lower/table.rs).
    "Sigmoid",
    "Tanh",
    "Erf",
    "Softplus",
    "Softsign",
    "Elu",
    "Selu",
    "Celu",
    "HardSigmoid",
    "HardSwish",
    "Exp",
    "Abs",
];

/// The operators issue 17 puts in scope (each of their tests must pass or be unsupported
/// for a documented hardware reason).
const IN_SCOPE: &[&str] = &[
    "Conv",
    "ConvTranspose",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "Relu",
    "LeakyRelu",
    "PRelu",
    "Clip",
    "Sigmoid",
    "Tanh",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Sum",
    "Mean",
    "Max",
    "Min",
    "BatchNormalization",
    "Gemm",
    "MatMul",
    "Softmax",
    "Concat",
    "LRN",
    "Flatten",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "Identity",
    "Dropout",
    "Pad",
    "DepthToSpace",
    "SpaceToDepth",
    "Upsample",
    "Resize",
];

const SUITES: &[&str] = &["node", "pytorch-converted", "pytorch-operator", "simple"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Pass,
    Fail,
    Unsupported,
}

#[derive(Debug, Clone)]
struct Run {
    outcome: Outcome,
    detail: String,
    /// Largest error in units of the tolerance (pass: at most 1).
    err: f32,
}

impl Run {
    fn unsupported(detail: impl Into<String>) -> Self {
        Run {
            outcome: Outcome::Unsupported,
            detail: detail.into(),
            err: 0.0,
        }
    }
    fn fail(detail: impl Into<String>) -> Self {
        Run {
            outcome: Outcome::Fail,
            detail: detail.into(),
            err: 0.0,
        }
    }
}

struct Case {
    suite: &'static str,
    name: String,
    op: String,
    fp16: Run,
    int8: Option<Run>,
    seconds: f64,
}

struct Args {
    root: PathBuf,
    json: Option<PathBuf>,
    fallback: bool,
    timeout: Duration,
    verbose: bool,
    filters: Vec<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: onnx-conformance [--suite-dir DIR] [--json FILE] [--cpu-fallback] \
         [--timeout SECONDS] [-v] [FILTER...]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/models/onnx/backend-tests-1.22.0"),
        json: None,
        fallback: false,
        timeout: Duration::from_secs(60),
        verbose: false,
        filters: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--suite-dir" => a.root = it.next().map(PathBuf::from).unwrap_or_else(|| usage()),
            "--json" => a.json = Some(it.next().map(PathBuf::from).unwrap_or_else(|| usage())),
            "--cpu-fallback" => a.fallback = true,
            "--timeout" => {
                a.timeout = Duration::from_secs_f64(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| usage()),
                )
            }
            "-v" | "--verbose" => a.verbose = true,
            "-h" | "--help" => usage(),
            s if s.starts_with('-') => usage(),
            s => a.filters.push(s.to_string()),
        }
    }
    a
}

fn read_tensor(p: &Path) -> Result<proto::TensorProto, String> {
    let b = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
    proto::decode_tensor(&b).map_err(|e| format!("{}: {e}", p.display()))
}

/// `input_K.pb` / `output_K.pb` of a data set, in order.
fn data(dir: &Path, kind: &str) -> Result<Vec<proto::TensorProto>, String> {
    let mut v = Vec::new();
    for k in 0.. {
        let p = dir.join(format!("{kind}_{k}.pb"));
        if !p.exists() {
            break;
        }
        v.push(read_tensor(&p)?);
    }
    Ok(v)
}

struct DataSet {
    inputs: Vec<proto::TensorProto>,
    outputs: Vec<proto::TensorProto>,
}

/// Loads with the non-initializer graph inputs from `bind` onwards bound to `inputs`.
fn load(
    bytes: &[u8],
    names: &[String],
    inputs: &[proto::TensorProto],
    bind: usize,
    fallback: bool,
) -> nvdla_compiler::Result<Graph> {
    let constants = names
        .iter()
        .zip(inputs)
        .skip(bind)
        .map(|(n, t)| proto::TensorProto {
            name: n.clone(),
            ..t.clone()
        })
        .collect();
    onnx::load(
        bytes,
        &onnx::Options {
            input_shapes: Vec::new(),
            constants,
            cpu_fallback: fallback,
            target: None,
            ..Default::default()
        },
    )
}

/// A test's model, data sets and operator.
struct Test {
    bytes: Vec<u8>,
    names: Vec<String>,
    sets: Vec<DataSet>,
    ops: Vec<String>,
}

fn read_test(dir: &Path) -> Result<Test, String> {
    let bytes = std::fs::read(dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let model = onnx::decode(&bytes, "model.onnx").map_err(|e| e.to_string())?;
    let graph = model.graph.clone().unwrap_or_default();
    let ops = graph.node.iter().map(|n| n.op_type.clone()).collect();
    let inits: Vec<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let names: Vec<String> = graph
        .input
        .iter()
        .filter(|i| !inits.contains(&i.name.as_str()))
        .map(|i| i.name.clone())
        .collect();
    let mut set_dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("test_data_set_"))
        })
        .collect();
    set_dirs.sort();
    let mut sets = Vec::new();
    for s in &set_dirs {
        sets.push(DataSet {
            inputs: data(s, "input")?,
            outputs: data(s, "output")?,
        });
    }
    Ok(Test {
        bytes,
        names,
        sets,
        ops,
    })
}

/// Element-wise comparison; the largest error in units of the tolerance `tol(want)`.
fn compare(got: &[f32], want: &[f32], tol: &dyn Fn(f32) -> f32) -> Result<f32, String> {
    if got.len() != want.len() {
        return Err(format!("{} values, expected {}", got.len(), want.len()));
    }
    let mut worst = 0f32;
    let mut first = None;
    let mut bad = 0usize;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if (g.is_nan() && w.is_nan()) || g == w {
            continue;
        }
        let d = (g - w).abs();
        let t = tol(w);
        if d.is_nan() || d > t {
            bad += 1;
            first.get_or_insert(format!(
                "element {i}: got {g}, expected {w} (tolerance {t:.3e})"
            ));
            continue;
        }
        if t > 0.0 {
            worst = worst.max(d / t);
        }
    }
    match first {
        Some(f) => Err(format!("{bad} of {} elements differ; {f}", want.len())),
        None => Ok(worst),
    }
}

fn device(config: &str) -> Result<Box<dyn nvdla_port::device::Device + Send>, String> {
    let cfg = nvdla_umd::HwConfig::ALL
        .into_iter()
        .find(|c| c.name() == config)
        .ok_or_else(|| format!("no configuration {config}"))?;
    nvdla_umd::open_device(&nvdla_umd::DeviceKind::Vp, cfg).map_err(|e| e.to_string())
}

/// The descriptor of one item of a tensor of `n` items.
fn item_desc(t: &nvdla_umd::TensorDesc, n: usize) -> nvdla_umd::TensorDesc {
    let mut item = t.clone();
    if n > 1 {
        item.dims.n = 1;
        item.size = t.size / n as u64;
        item.strides[3] = 0;
    }
    item
}

/// Runs `loadable` on the VP of `config` with `inputs` (NCHW values of each network input,
/// written at `in_scales` for int8); returns each output's values (times `out_scales`).
fn execute(
    loadable: &[u8],
    config: &str,
    inputs: &[(nvdla_compiler::ir::Shape, Vec<f32>)],
    in_scales: Option<&[f32]>,
    out_scales: Option<&[f32]>,
) -> Result<Vec<Vec<f32>>, String> {
    let mut dev = device(config)?;
    let mut rt = Runtime::load(dev.as_mut(), loadable).map_err(|e| format!("load: {e}"))?;
    for (k, (s, v)) in inputs.iter().enumerate() {
        let t = rt
            .tensor(Direction::Input, k)
            .map_err(|e| e.to_string())?
            .clone();
        // A batch is N items back to back (strides[3] apart), each converted as one.
        let n = s.n.max(1);
        let item = item_desc(&t, n);
        let per = s.c * s.h * s.w;
        let mut bytes = Vec::new();
        for b in 0..n {
            let shape = vec![1, s.c as u64, s.h as u64, s.w as u64];
            let host = HostTensor::from_f32(shape, &v[b * per..(b + 1) * per])
                .map_err(|e| e.to_string())?;
            bytes.extend(
                host_to_input(&host, &item, in_scales.map(|s| s[k]))
                    .map_err(|e| format!("input {k}: {e}"))?,
            );
        }
        rt.write_input(dev.as_mut(), k, &bytes)
            .map_err(|e| format!("input {k}: {e}"))?;
    }
    rt.run(dev.as_mut(), &RunOptions::default(), &mut |_| {})
        .map_err(|e| format!("run: {e}"))?;
    let mut outs = Vec::new();
    for k in 0..rt.tensor_count(Direction::Output) {
        let t = rt
            .tensor(Direction::Output, k)
            .map_err(|e| e.to_string())?
            .clone();
        let bytes = rt
            .read_output(dev.as_mut(), k)
            .map_err(|e| format!("output {k}: {e}"))?;
        let n = t.dims.n.max(1) as usize;
        let item = item_desc(&t, n);
        let size = item.size as usize;
        let mut values = Vec::new();
        for b in 0..n {
            let chunk = bytes
                .get(b * size..(b + 1) * size)
                .ok_or_else(|| format!("output {k}: short"))?;
            let host = output_to_host(&item, chunk, out_scales.map(|s| s[k]))
                .map_err(|e| format!("output {k}: {e}"))?;
            values.extend(host.to_f32_vec());
        }
        outs.push(values);
    }
    rt.release(dev.as_mut());
    Ok(outs)
}

/// The graph of a test (all graph inputs as network inputs, else input 0 with the others
/// bound as constants, as the suite feeds weights and shapes as inputs), the number of
/// network inputs, or the loading error.
fn load_test(
    t: &Test,
    set: &DataSet,
    fallback: bool,
    compile: &dyn Fn(&Graph) -> nvdla_compiler::Result<nvdla_compiler::Compiled>,
) -> Result<(Graph, usize, nvdla_compiler::Compiled), String> {
    if set.inputs.len() != t.names.len() {
        return Err(format!(
            "{} inputs for {} graph inputs",
            set.inputs.len(),
            t.names.len()
        ));
    }
    let mut attempts = vec![t.names.len()];
    if t.names.len() > 1 {
        attempts.push(1);
    }
    let mut errors = Vec::new();
    for bind in attempts {
        match load(&t.bytes, &t.names, &set.inputs, bind, fallback)
            .and_then(|g| compile(&g).map(|c| (g, c)))
        {
            Ok((g, c)) => return Ok((g, bind, c)),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(errors.join(" / with constants: "))
}

/// The network inputs of data set `set` (the first `bind` inputs) as IR shapes and values.
fn feed(
    g: &Graph,
    set: &DataSet,
    bind: usize,
) -> Result<Vec<(nvdla_compiler::ir::Shape, Vec<f32>)>, String> {
    let mut v = Vec::new();
    for k in 0..bind {
        let (_, x) = onnx::float_values(&set.inputs[k]).map_err(|e| format!("input {k}: {e}"))?;
        let shape = g.shape(g.inputs[k]);
        // An empty tensor (a dimension of 0, which the front end takes as symbolic).
        if x.len() != shape.elements() {
            return Err(format!(
                "input {k}: the data set has {} values, the compiled input {shape} holds {}",
                x.len(),
                shape.elements()
            ));
        }
        v.push((shape, x));
    }
    Ok(v)
}

fn expected(set: &DataSet) -> Result<Vec<Vec<f32>>, String> {
    set.outputs
        .iter()
        .enumerate()
        .map(|(k, o)| {
            onnx::float_values(o)
                .map(|x| x.1)
                .map_err(|e| format!("output {k}: {e}"))
        })
        .collect()
}

fn max_abs(v: &[f32]) -> f32 {
    v.iter()
        .filter(|x| x.is_finite())
        .fold(0f32, |m, x| m.max(x.abs()))
}

/// fp16 on nv_full.
fn run_fp16(t: &Test, fallback: bool) -> Run {
    let hw = nvdla_hw::Config::by_name("nv_full").expect("nv_full");
    let target = Target::new(hw, Precision::Fp16).expect("fp16 target");
    let mut worst = 0f32;
    let mut compiled: Option<(Vec<u8>, usize, Graph)> = None;
    for (si, set) in t.sets.iter().enumerate() {
        // Recompiled per data set only when inputs are bound as constants.
        if compiled.as_ref().is_none_or(|c| c.1 != t.names.len()) {
            let opts = nvdla_compiler::Options {
                cpu_fallback: fallback,
                ..nvdla_compiler::Options::with_quant(target, &Quant::default())
            };
            let compile = |g: &Graph| nvdla_compiler::compile_graph(g.clone(), &opts);
            match load_test(t, set, fallback, &compile) {
                Ok((g, bind, c)) => compiled = Some((c.loadable, bind, g)),
                Err(e) => return Run::unsupported(e),
            }
        }
        let (loadable, bind, g) = compiled.as_ref().expect("compiled");
        let want = match expected(set) {
            Ok(w) => w,
            Err(e) => return Run::fail(e),
        };
        let inputs = match feed(g, set, *bind) {
            Ok(x) => x,
            Err(e) => return Run::unsupported(e),
        };
        let got = match execute(loadable, "nv_full", &inputs, None, None) {
            Ok(x) => x,
            Err(e) => return Run::fail(format!("data set {si}: {e}")),
        };
        if got.len() != want.len() {
            return Run::fail(format!("{} outputs, expected {}", got.len(), want.len()));
        }
        for (k, (gv, wv)) in got.iter().zip(&want).enumerate() {
            let range = max_abs(wv);
            let tol = |w: f32| FP16_RTOL * w.abs() + FP16_ATOL * range;
            match compare(gv, wv, &tol) {
                Ok(e) => worst = worst.max(e),
                Err(e) => {
                    if let Some(why) = beyond_fp16(g, &inputs, k, wv, &tol) {
                        return Run::unsupported(format!("data set {si}, output {k}: {why}"));
                    }
                    return Run::fail(format!("data set {si}, output {k}: {e}"));
                }
            }
        }
    }
    Run {
        outcome: Outcome::Pass,
        detail: String::new(),
        err: worst,
    }
}

/// Whether the test asks for more than fp16 inputs carry: the compiler's fp32 reference,
/// fed the inputs rounded to half precision (what an fp16 network input holds), already
/// misses output `k`'s tolerance. Returns the reason.
fn beyond_fp16(
    g: &Graph,
    inputs: &[(nvdla_compiler::ir::Shape, Vec<f32>)],
    k: usize,
    want: &[f32],
    tol: &dyn Fn(f32) -> f32,
) -> Option<String> {
    let feed: Vec<_> = g
        .inputs
        .iter()
        .zip(inputs)
        .map(|(&id, (_, v))| {
            let r = v.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect();
            (id, r)
        })
        .collect();
    let values = nvdla_compiler::reference::run(g, &feed).ok()?;
    let got = values.get(g.outputs.get(k)?.0)?;
    compare(got, want, tol).err().map(|e| {
        format!(
            "the inputs differ below fp16 resolution: the fp32 reference on fp16-rounded \
             inputs gives {e}"
        )
    })
}

/// int8 on nv_small, calibrated on the reference's activations for the test's inputs.
fn run_int8(t: &Test, fallback: bool) -> Run {
    let hw = nvdla_hw::Config::by_name("nv_small").expect("nv_small");
    let target = Target::new(hw, Precision::Int8).expect("int8 target");
    let mut worst = 0f32;
    for (si, set) in t.sets.iter().enumerate() {
        // Calibrated on the reference's activations for this data set's inputs.
        let compile = |g: &Graph| {
            let inputs = feed(g, set, g.inputs.len())
                .map_err(|e| nvdla_compiler::CompileError::Network(format!("inputs: {e}")))?;
            let feed_ref: Vec<_> = g
                .inputs
                .iter()
                .zip(inputs)
                .map(|(&id, (_, v))| (id, v))
                .collect();
            let reference = nvdla_compiler::reference::run(g, &feed_ref)?;
            let cal = Calibration::from_activations(&reference, RangeMethod::MaxAbs);
            let quant = Quant {
                cal: Some(&cal),
                per_filter: true,
                input_scale: 1.0,
            };
            let opts = nvdla_compiler::Options {
                cpu_fallback: fallback,
                ..nvdla_compiler::Options::with_quant(target, &quant)
            };
            nvdla_compiler::compile_graph(g.clone(), &opts)
        };
        let (g, bind, c) = match load_test(t, set, fallback, &compile) {
            Ok(x) => x,
            Err(e) => return Run::unsupported(e),
        };
        let inputs = match feed(&g, set, bind) {
            Ok(x) => x,
            Err(e) => return Run::unsupported(e),
        };
        let p = &c.program;
        let in_scales: Vec<f32> = p.inputs.iter().map(|&s| p.surface(s).scale).collect();
        let out_scales: Vec<f32> = p.outputs.iter().map(|&s| p.surface(s).scale).collect();
        let want = match expected(set) {
            Ok(w) => w,
            Err(e) => return Run::fail(e),
        };
        let got = match execute(
            &c.loadable,
            "nv_small",
            &inputs,
            Some(&in_scales),
            Some(&out_scales),
        ) {
            Ok(x) => x,
            Err(e) => return Run::fail(format!("data set {si}: {e}")),
        };
        if got.len() != want.len() {
            return Run::fail(format!("{} outputs, expected {}", got.len(), want.len()));
        }
        for (k, (gv, wv)) in got.iter().zip(&want).enumerate() {
            let step = max_abs(wv).max(1e-6) / 127.0;
            let tol = |_: f32| INT8_STEPS * step;
            match compare(gv, wv, &tol) {
                Ok(e) => worst = worst.max(e),
                Err(e) => return Run::fail(format!("data set {si}, output {k}: {e}")),
            }
        }
    }
    Run {
        outcome: Outcome::Pass,
        detail: String::new(),
        err: worst,
    }
}

fn op_label(ops: &[String]) -> String {
    let real: Vec<&String> = ops.iter().filter(|o| *o != "Constant").collect();
    match real.as_slice() {
        [one] => (*one).clone(),
        [] => ops.first().cloned().unwrap_or_else(|| "(no nodes)".into()),
        _ => "(several nodes)".into(),
    }
}

fn run_case(dir: &Path, fallback: bool) -> (String, Run, Option<Run>) {
    let t = match read_test(dir) {
        Ok(t) => t,
        Err(e) => return ("?".into(), Run::unsupported(e), None),
    };
    let op = op_label(&t.ops);
    let fp16 = run_fp16(&t, fallback);
    let int8 = t
        .ops
        .iter()
        .all(|o| INT8_FAMILY.contains(&o.as_str()))
        .then(|| run_int8(&t, fallback));
    (op, fp16, int8)
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".into())
}

/// Runs one test on a thread of its own, with a time limit; a panic or a timeout is a
/// failure marked as a bug.
fn guarded(dir: &Path, fallback: bool, timeout: Duration) -> (String, Run, Option<Run>) {
    let (tx, rx) = mpsc::channel();
    let d = dir.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("conformance-case".into())
        .stack_size(256 << 20)
        .spawn(move || {
            let r = catch_unwind(AssertUnwindSafe(|| run_case(&d, fallback)));
            let _ = tx.send(r);
        });
    if let Err(e) = spawned {
        return (
            "?".into(),
            Run::fail(format!("BUG: cannot spawn: {e}")),
            None,
        );
    }
    match rx.recv_timeout(timeout) {
        Ok(Ok(r)) => r,
        Ok(Err(p)) => (
            "?".into(),
            Run::fail(format!("BUG: panic: {}", panic_text(p.as_ref()))),
            None,
        ),
        Err(_) => (
            "?".into(),
            Run::fail(format!("BUG: no result within {} s", timeout.as_secs_f64())),
            None,
        ),
    }
}

fn json_escape(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn main() {
    let args = parse_args();
    // Panics are reported per test; keep their messages out of the table.
    std::panic::set_hook(Box::new(|_| {}));
    let start = Instant::now();
    let mut cases = Vec::new();
    for &suite in SUITES {
        let dir = args.root.join(suite);
        let Ok(rd) = std::fs::read_dir(&dir) else {
            eprintln!("onnx-conformance: {} not found", dir.display());
            std::process::exit(2);
        };
        let mut dirs: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("model.onnx").exists())
            .collect();
        dirs.sort();
        for d in dirs {
            let name = d
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            if !args.filters.is_empty() && !args.filters.iter().any(|f| name.contains(f.as_str())) {
                continue;
            }
            let t0 = Instant::now();
            let (op, fp16, int8) = guarded(&d, args.fallback, args.timeout);
            cases.push(Case {
                suite,
                name,
                op,
                fp16,
                int8,
                seconds: t0.elapsed().as_secs_f64(),
            });
        }
    }
    report(&args, &cases, start.elapsed());
}

fn report(args: &Args, cases: &[Case], elapsed: Duration) {
    // op -> [fp16 pass, fail, unsupported, int8 pass, fail, unsupported]
    let mut by_op: BTreeMap<&str, [usize; 6]> = BTreeMap::new();
    for c in cases {
        let e = by_op.entry(c.op.as_str()).or_default();
        e[c.fp16.outcome as usize] += 1;
        if let Some(r) = &c.int8 {
            e[3 + r.outcome as usize] += 1;
        }
    }
    println!(
        "ONNX backend tests on the VP (fp16 nv_full; int8 nv_small for the conv/pool/eltwise \
         family){}",
        if args.fallback {
            ", with --cpu-fallback"
        } else {
            ""
        }
    );
    println!(
        "{:<24} {:>5} {:>5} {:>6} | {:>5} {:>5} {:>6}",
        "operator", "fp16", "fail", "unsup", "int8", "fail", "unsup"
    );
    let row = |name: &str, v: [usize; 6]| {
        println!(
            "{name:<24} {:>5} {:>5} {:>6} | {:>5} {:>5} {:>6}",
            v[0], v[1], v[2], v[3], v[4], v[5]
        );
    };
    let mut other = [0usize; 6];
    for (op, v) in &by_op {
        if IN_SCOPE.contains(op) {
            row(op, *v);
        } else {
            for i in 0..6 {
                other[i] += v[i];
            }
        }
    }
    println!("(in scope above; all other operators and multi-node tests:)");
    row("(other)", other);
    for (op, v) in &by_op {
        if !IN_SCOPE.contains(op) && (args.verbose || v[1] + v[4] > 0 || v[0] + v[3] > 0) {
            row(&format!("  {op}"), *v);
        }
    }
    let mut totals = [0usize; 6];
    for v in by_op.values() {
        for i in 0..6 {
            totals[i] += v[i];
        }
    }
    row("total", totals);
    println!();
    for c in cases {
        let show = |tag: &str, r: &Run| {
            let in_scope = IN_SCOPE.contains(&c.op.as_str());
            if r.outcome == Outcome::Fail
                || (r.outcome == Outcome::Unsupported && (args.verbose || in_scope))
            {
                println!(
                    "{:?} {tag} {}/{} ({}): {}",
                    r.outcome, c.suite, c.name, c.op, r.detail
                );
            }
        };
        show("fp16", &c.fp16);
        if let Some(r) = &c.int8 {
            show("int8", r);
        }
    }
    let slow: Vec<String> = {
        let mut v: Vec<&Case> = cases.iter().collect();
        v.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        v.iter()
            .take(5)
            .map(|c| format!("{} {:.1}s", c.name, c.seconds))
            .collect()
    };
    println!(
        "{} tests in {:.1} s; slowest: {}",
        cases.len(),
        elapsed.as_secs_f64(),
        slow.join(", ")
    );
    if let Some(path) = &args.json {
        let mut s = String::from("[\n");
        for (i, c) in cases.iter().enumerate() {
            let run = |r: &Run| {
                format!(
                    "{{\"outcome\": \"{:?}\", \"detail\": {}, \"err\": {}}}",
                    r.outcome,
                    json_escape(&r.detail),
                    if r.err.is_finite() { r.err } else { -1.0 }
                )
            };
            s.push_str(&format!(
                "  {{\"suite\": \"{}\", \"test\": {}, \"op\": {}, \"fp16\": {}, \"int8\": {}, \
                 \"seconds\": {:.3}}}{}\n",
                c.suite,
                json_escape(&c.name),
                json_escape(&c.op),
                run(&c.fp16),
                c.int8.as_ref().map_or("null".into(), run),
                c.seconds,
                if i + 1 < cases.len() { "," } else { "" }
            ));
        }
        s.push_str("]\n");
        if let Err(e) = std::fs::write(path, s) {
            eprintln!("onnx-conformance: {}: {e}", path.display());
        }
    }
    let (p, f, u) = (
        totals[0] + totals[3],
        totals[1] + totals[4],
        totals[2] + totals[5],
    );
    println!("{p} passed, {f} failed, {u} unsupported");
    if f > 0 {
        std::process::exit(1);
    }
}
