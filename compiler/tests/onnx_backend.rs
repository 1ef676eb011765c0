//! The ONNX front end against the ONNX project's own backend tests (onnx 1.22.0's
//! `backend/test/data`, in `shared/models/onnx/backend-tests-1.22.0`), on the compiler's
//! CPU fp32 reference: this checks the front end's semantics independently of the
//! hardware.
//!
//! Every test directory is loaded and classified:
//! - **pass**: the model loads and the reference reproduces every `output_K.pb` of
//!   `test_data_set_0` (|got - want| <= 1e-5 + 1e-4 |want|);
//! - **fail**: it loads but the values differ (or the reference refuses the graph);
//! - **unsupported**: loading gives a clear `CompileError` (an operator or a form the IR
//!   cannot express);
//! - **bug**: anything panics.
//!
//! Graph inputs are first all taken as network inputs; if that does not load, input 0 is
//! the network input and the others are bound as constants (the suite feeds weights, Clip
//! bounds, Reshape shapes, ... as inputs), the way a model stores them as initializers.
//!
//! `node_tests_by_operator` prints a per-operator table (run with `--nocapture`) and
//! requires no bug, no failure, and a pass for each of a list of representative tests of
//! the operators the front end maps.

use nvdla_compiler::frontend::onnx::{self, proto};
use nvdla_compiler::ir::Graph;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn suite() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/models/onnx/backend-tests-1.22.0");
    if p.join("node").is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: {} not found", p.display());
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Pass,
    Fail,
    Unsupported,
    Bug,
}

struct Case {
    name: String,
    op: String,
    outcome: Outcome,
    detail: String,
    /// Largest relative error of a pass.
    err: f32,
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

/// Compares with the ONNX backend runner's default tolerance (`rtol` 1e-3, `atol` 1e-7;
/// some expected outputs are written with four decimals); returns the largest error
/// relative to `max(|want|, 1e-3)`.
fn close(got: &[f32], want: &[f32]) -> Result<f32, String> {
    if got.len() != want.len() {
        return Err(format!("{} values, expected {}", got.len(), want.len()));
    }
    let mut worst = 0f32;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if (g.is_nan() && w.is_nan()) || g == w {
            continue;
        }
        let d = (g - w).abs();
        if d.is_nan() || d > 1e-7 + 1e-3 * w.abs() {
            return Err(format!("element {i}: got {g}, expected {w}"));
        }
        worst = worst.max(d / w.abs().max(1e-3));
    }
    Ok(worst)
}

/// Loads with the non-initializer graph inputs from `bind` onwards bound to `inputs`.
fn load(
    bytes: &[u8],
    names: &[String],
    inputs: &[proto::TensorProto],
    bind: usize,
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
            cpu_fallback: false,
            target: None,
            ..Default::default()
        },
    )
}

fn run_case(dir: &Path) -> (String, Outcome, String, f32) {
    let (op, outcome, detail, err) = match run_case_inner(dir) {
        Ok((op, err)) => (op, Outcome::Pass, String::new(), err),
        Err((op, outcome, detail)) => (op, outcome, detail, 0.0),
    };
    (op, outcome, detail, err)
}

type Failure = (String, Outcome, String);

fn run_case_inner(dir: &Path) -> Result<(String, f32), Failure> {
    let unsupported = |op: &str, e: String| (op.to_string(), Outcome::Unsupported, e);
    let bytes =
        std::fs::read(dir.join("model.onnx")).map_err(|e| unsupported("", e.to_string()))?;
    let model = onnx::decode(&bytes, "model.onnx").map_err(|e| unsupported("", e.to_string()))?;
    let graph = model.graph.clone().unwrap_or_default();
    let op = match graph.node.as_slice() {
        [n] => n.op_type.clone(),
        _ => "(several nodes)".to_string(),
    };
    let fail = |e: String| (op.clone(), Outcome::Fail, e);
    let inits: Vec<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let names: Vec<String> = graph
        .input
        .iter()
        .filter(|i| !inits.contains(&i.name.as_str()))
        .map(|i| i.name.clone())
        .collect();
    let set = dir.join("test_data_set_0");
    let inputs = data(&set, "input").map_err(|e| unsupported(&op, e))?;
    let outputs = data(&set, "output").map_err(|e| unsupported(&op, e))?;
    if inputs.len() != names.len() {
        return Err(unsupported(
            &op,
            format!("{} inputs for {} graph inputs", inputs.len(), names.len()),
        ));
    }
    let mut attempts = vec![names.len()];
    if names.len() > 1 {
        attempts.push(1);
    }
    let mut loaded = None;
    let mut errors = Vec::new();
    for bind in attempts {
        match load(&bytes, &names, &inputs, bind) {
            Ok(g) => {
                loaded = Some((g, bind));
                break;
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    let Some((g, bind)) = loaded else {
        return Err(unsupported(&op, errors.join(" / with constants: ")));
    };
    let mut feed = Vec::new();
    for (k, t) in inputs.iter().take(bind).enumerate() {
        let (_, v) = onnx::float_values(t).map_err(|e| fail(format!("input {k}: {e}")))?;
        feed.push((g.inputs[k], v));
    }
    let values =
        nvdla_compiler::reference::run(&g, &feed).map_err(|e| fail(format!("reference: {e}")))?;
    if g.outputs.len() != outputs.len() {
        return Err(fail(format!(
            "{} outputs, expected {}",
            g.outputs.len(),
            outputs.len()
        )));
    }
    let mut worst = 0f32;
    for (k, (t, want)) in g.outputs.iter().zip(&outputs).enumerate() {
        let (_, want) = onnx::float_values(want).map_err(|e| fail(format!("output {k}: {e}")))?;
        let e = close(&values[t.0], &want).map_err(|e| fail(format!("output {k}: {e}")))?;
        worst = worst.max(e);
    }
    Ok((op, worst))
}

/// Runs every test directory under `root`.
fn run_all(root: &Path) -> Vec<Case> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("model.onnx").exists())
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let name = d.file_name().unwrap().to_string_lossy().into_owned();
            match catch_unwind(AssertUnwindSafe(|| run_case(d))) {
                Ok((op, outcome, detail, err)) => Case {
                    name,
                    op,
                    outcome,
                    detail,
                    err,
                },
                Err(p) => Case {
                    name,
                    op: "?".into(),
                    outcome: Outcome::Bug,
                    err: 0.0,
                    detail: p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default(),
                },
            }
        })
        .collect()
}

/// The operators the front end maps (the table's rows of interest).
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
    "Neg",
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
    "Upsample",
    "Resize",
    "Split",
    "Slice",
    "DepthToSpace",
    "SpaceToDepth",
];

/// Representative tests that must pass on the reference.
const MUST_PASS: &[&str] = &[
    "test_basic_conv_with_padding",
    "test_basic_conv_without_padding",
    "test_conv_with_autopad_same",
    "test_conv_with_strides_and_asymmetric_padding",
    "test_conv_with_strides_no_padding",
    "test_conv_with_strides_padding",
    "test_convtranspose",
    "test_convtranspose_1d",
    "test_convtranspose_dilations",
    "test_convtranspose_kernel_shape",
    "test_convtranspose_output_shape",
    "test_convtranspose_pad",
    "test_convtranspose_pads",
    "test_maxpool_1d_default",
    "test_maxpool_2d_ceil",
    "test_maxpool_2d_default",
    "test_maxpool_2d_pads",
    "test_maxpool_2d_precomputed_same_upper",
    "test_maxpool_2d_same_lower",
    "test_maxpool_2d_strides",
    "test_averagepool_1d_default",
    "test_averagepool_2d_ceil",
    "test_averagepool_2d_default",
    "test_averagepool_2d_pads",
    "test_averagepool_2d_pads_count_include_pad",
    "test_averagepool_2d_precomputed_same_upper",
    "test_averagepool_2d_same_lower",
    "test_averagepool_2d_same_upper",
    "test_averagepool_2d_strides",
    "test_globalaveragepool",
    "test_globalmaxpool",
    "test_relu",
    "test_leakyrelu",
    "test_sigmoid",
    "test_tanh",
    "test_clip",
    "test_clip_splitbounds",
    "test_add",
    "test_sub",
    "test_mul",
    "test_sum_two_inputs",
    "test_mean_two_inputs",
    "test_max_two_inputs",
    "test_min_two_inputs",
    "test_neg",
    "test_batchnorm_epsilon",
    "test_batchnorm_example",
    "test_gemm_default_no_bias",
    "test_gemm_default_single_elem_vector_bias",
    "test_gemm_alpha",
    "test_gemm_beta",
    "test_gemm_transposeB",
    "test_matmul_2d",
    "test_softmax_axis_1",
    "test_softmax_example",
    "test_concat_2d_axis_1",
    "test_concat_3d_axis_1",
    "test_lrn",
    "test_lrn_default",
    "test_flatten_axis1",
    "test_flatten_default_axis",
    "test_reshape_negative_dim",
    "test_reshape_reduced_dims",
    "test_squeeze",
    "test_unsqueeze_axis_0",
    "test_identity",
    "test_dropout_default",
    "test_upsample_nearest",
    "test_resize_upsample_scales_nearest",
    "test_split_equal_parts_2d",
    "test_depthtospace_example",
    "test_depthtospace_crd_mode_example",
    "test_spacetodepth_example",
];

fn table(cases: &[Case], title: &str) {
    let mut by_op: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    for c in cases {
        let e = by_op.entry(c.op.as_str()).or_default();
        e[c.outcome as usize] += 1;
    }
    let total = |o: Outcome| cases.iter().filter(|c| c.outcome == o).count();
    eprintln!(
        "{title}: {} tests: {} pass, {} fail, {} unsupported, {} bug",
        cases.len(),
        total(Outcome::Pass),
        total(Outcome::Fail),
        total(Outcome::Unsupported),
        total(Outcome::Bug)
    );
    let loose: Vec<String> = cases
        .iter()
        .filter(|c| c.outcome == Outcome::Pass && c.err > 1e-4)
        .map(|c| format!("{} ({:.1e})", c.name, c.err))
        .collect();
    eprintln!("passes beyond 1e-4 relative error: {loose:?}");
    eprintln!(
        "{:<22} {:>5} {:>5} {:>12} {:>4}",
        "operator", "pass", "fail", "unsupported", "bug"
    );
    for op in IN_SCOPE {
        let [p, f, u, b] = by_op.get(op).copied().unwrap_or_default();
        if p + f + u + b > 0 {
            eprintln!("{op:<22} {p:>5} {f:>5} {u:>12} {b:>4}");
        }
    }
    let (mut p, mut f, mut u, mut b) = (0, 0, 0, 0);
    for (op, c) in &by_op {
        if !IN_SCOPE.contains(op) {
            p += c[0];
            f += c[1];
            u += c[2];
            b += c[3];
        }
    }
    eprintln!("{:<22} {p:>5} {f:>5} {u:>12} {b:>4}", "(other operators)");
    let verbose = std::env::var_os("ONNX_BACKEND_VERBOSE").is_some();
    for c in cases {
        if matches!(c.outcome, Outcome::Fail | Outcome::Bug)
            || (c.outcome == Outcome::Unsupported && (verbose || IN_SCOPE.contains(&c.op.as_str())))
        {
            eprintln!("  {:?} {} ({}): {}", c.outcome, c.name, c.op, c.detail);
        }
    }
}

#[test]
fn node_tests_by_operator() {
    let Some(suite) = suite() else { return };
    let cases = run_all(&suite.join("node"));
    table(&cases, "node");
    let bugs: Vec<&Case> = cases.iter().filter(|c| c.outcome == Outcome::Bug).collect();
    assert!(
        bugs.is_empty(),
        "panics: {:?}",
        bugs.iter()
            .map(|c| (&c.name, &c.detail))
            .collect::<Vec<_>>()
    );
    let fails: Vec<&Case> = cases
        .iter()
        .filter(|c| c.outcome == Outcome::Fail)
        .collect();
    assert!(
        fails.is_empty(),
        "wrong values: {:?}",
        fails
            .iter()
            .map(|c| (&c.name, &c.detail))
            .collect::<Vec<_>>()
    );
    for name in MUST_PASS {
        let c = cases
            .iter()
            .find(|c| c.name == *name)
            .unwrap_or_else(|| panic!("{name} is not in the suite"));
        assert_eq!(c.outcome, Outcome::Pass, "{name}: {}", c.detail);
    }
}

#[test]
fn pytorch_and_simple_tests() {
    let Some(suite) = suite() else { return };
    for dir in ["pytorch-converted", "pytorch-operator", "simple"] {
        let cases = run_all(&suite.join(dir));
        table(&cases, dir);
        let bad: Vec<(&String, &String)> = cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Bug | Outcome::Fail))
            .map(|c| (&c.name, &c.detail))
            .collect();
        assert!(bad.is_empty(), "{dir}: {bad:?}");
    }
}
