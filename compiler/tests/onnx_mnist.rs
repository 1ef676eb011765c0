//! Acceptance for the ONNX front end on a real model: `shared/models/onnx/mnist-cntk.onnx`
//! (the ONNX model zoo's CNTK MNIST classifier, opset 8: Conv + Relu + MaxPool twice,
//! Reshape, Gemm; input `Input3` 1x1x28x28, output `Plus214_Output_0` 1x10 scores).
//!
//! **Input scaling.** The file does not record it. On the compiler's fp32 reference, with
//! the ten MNIST digits of `shared/third-party-loadables/lenet-mnist/images` (white digits
//! on black, as MNIST), `input_scaling_survey` measures:
//!
//! | input | top-1 | top logit (mean) |
//! | --- | --- | --- |
//! | pixel / 255 | 10/10 | ~21 |
//! | pixel / 256 | 10/10 | ~21 |
//! | raw pixels 0..255 | 10/10 | ~5500 |
//! | 255 - pixel, 1 - pixel / 255 (inverted) | 2/10 | |
//!
//! Top-1 cannot tell the scales apart (a ReLU network without normalisation is nearly
//! scale-equivariant: only the biases break it), but raw pixels drive the logits 255
//! times beyond their trained range, where the biases no longer count; with pixel / 255
//! they are ordinary logits. The model zoo documents the same preprocessing for this model
//! ("color value is scaled to [0.0, 1.0]"). So the input is **pixel / 255**:
//! `nvdla-runtime --image digit.jpg --normalize 255` for fp16 (or compile it in with
//! `--scale 0.0039215686`), and `--calibrate DIR --normalize 255` for int8 (the runtime
//! then feeds `round(pixel * 127 / 255)` with the input scale 1/127).
//!
//! Then: fp16 on nv_full and int8 on nv_small (calibrated on the same jpgs by
//! `nvdla_compiler::calibrate::from_images`), run in process through `nvdla-runtime` on
//! the virtual platform: 10/10 top-1 each, scores compared with the fp32 reference.

mod common;

use common::infer;
use nvdla_compiler::frontend::{self, ModelFiles};
use nvdla_compiler::ir::Graph;
use std::path::{Path, PathBuf};

fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    if p.join("models/onnx/mnist-cntk.onnx").is_file() {
        Some(p)
    } else {
        eprintln!("skipped: shared data not found at {}", p.display());
        None
    }
}

fn model(shared: &Path) -> Graph {
    frontend::load(&ModelFiles::Onnx {
        model: shared.join("models/onnx/mnist-cntk.onnx"),
        input_shapes: Vec::new(),
        cpu_fallback: false,
        target: None,
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The digit images with their labels (`0_<label>.jpg`).
fn images(shared: &Path) -> Vec<(PathBuf, usize)> {
    let dir = shared.join("third-party-loadables/lenet-mnist/images");
    let mut v: Vec<(PathBuf, usize)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jpg"))
        .map(|p| {
            let label = p.file_stem().unwrap().to_str().unwrap()[2..3]
                .parse()
                .unwrap();
            (p, label)
        })
        .collect();
    v.sort();
    v
}

/// Grey pixel values 0..255 of `image`, row-major, decoded by the runtime's own code.
fn pixels(image: &Path) -> Vec<f32> {
    let img = nvdla_umd::image::load_image(image).unwrap();
    let mut v = Vec::new();
    for y in 0..img.height {
        for x in 0..img.width {
            v.push(f32::from(img.pixel(x, y, 0)));
        }
    }
    v
}

fn argmax(v: &[f32]) -> usize {
    (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap()
}

/// The fp32 reference's scores for `image` with the input `f(pixel)`.
fn reference_scores(g: &Graph, image: &Path, f: impl Fn(f32) -> f32) -> Vec<f32> {
    let x: Vec<f32> = pixels(image).into_iter().map(f).collect();
    let mut out = nvdla_compiler::reference::run(g, &[(g.inputs[0], x)]).unwrap();
    std::mem::take(&mut out[g.outputs[0].0])
}

/// Top-1 count of the fp32 reference with the input `f(pixel)`, and the mean top logit.
fn reference_top1(g: &Graph, shared: &Path, f: impl Fn(f32) -> f32 + Copy) -> (usize, f32) {
    let imgs = images(shared);
    let mut right = 0;
    let mut top = 0.0;
    for (p, label) in &imgs {
        let s = reference_scores(g, p, f);
        right += usize::from(argmax(&s) == *label);
        top += s[argmax(&s)];
    }
    (right, top / imgs.len() as f32)
}

fn tmp(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nvdla-onnx-mnist-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Top-1 of the hardware scores, and the largest |score - fp32 reference| (in the
/// reference's units) over the images.
fn run_all(
    g: &Graph,
    shared: &Path,
    loadable: &Path,
    config: &str,
    args: &[&str],
    unit: f64,
    dir: &Path,
) -> (usize, f64) {
    let mut right = 0;
    let mut worst = 0f64;
    for (image, label) in images(shared) {
        let got = infer(loadable, &image, config, &dir.join("o.dimg"), args);
        let want = reference_scores(g, &image, |p| p / 255.0);
        assert_eq!(got.len(), 10);
        let top = (0..10).max_by(|&a, &b| got[a].total_cmp(&got[b])).unwrap();
        if top != label {
            eprintln!(
                "{config} {}: top {top}, label {label}: {got:?}",
                image.display()
            );
        }
        right += usize::from(top == label);
        for (g, w) in got.iter().zip(&want) {
            worst = worst.max((g * unit - f64::from(*w)).abs());
        }
    }
    (right, worst)
}

#[test]
fn mnist_fp16_nv_full() {
    use nvdla_compiler::target::{Precision, Target};
    let Some(shared) = shared() else { return };
    let g = model(&shared);
    let hw = nvdla_hw::Config::by_name("nv_full").unwrap();
    let target = Target::new(hw, Precision::Fp16).unwrap();
    let compiled = nvdla_compiler::compile_graph(g.clone(), &nvdla_compiler::Options::new(target))
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{}", compiled.summary());
    let dir = tmp("fp16");
    let loadable = dir.join("mnist_nv_full_fp16.nvdla");
    std::fs::write(&loadable, &compiled.loadable).unwrap();
    let (right, worst) = run_all(
        &g,
        &shared,
        &loadable,
        "nv_full",
        &["--normalize", "255"],
        1.0,
        &dir,
    );
    eprintln!("fp16 nv_full: {right}/10 top-1, largest |score - fp32| {worst:.4}");
    assert_eq!(right, 10);
    assert!(worst < 0.1, "fp16 scores differ from fp32 by {worst}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn mnist_int8_nv_small() {
    use nvdla_compiler::lower::Quant;
    use nvdla_compiler::quant::RangeMethod;
    use nvdla_compiler::target::{Precision, Target};
    let Some(shared) = shared() else { return };
    let g = model(&shared);
    let imgs = nvdla_compiler::calibrate::images_in(
        &shared.join("third-party-loadables/lenet-mnist/images"),
    )
    .unwrap();
    let normalize = 255.0;
    let cal = nvdla_compiler::calibrate::from_images(
        &g,
        &imgs,
        normalize,
        RangeMethod::Percentile(99.99),
        false,
        &mut |_, _| {},
    )
    .unwrap();
    let hw = nvdla_hw::Config::by_name("nv_small").unwrap();
    let target = Target::new(hw, Precision::Int8).unwrap();
    let quant = Quant {
        cal: Some(&cal),
        per_filter: false,
        input_scale: 255.0 / (127.0 * normalize),
    };
    let compiled = nvdla_compiler::compile_graph(
        g.clone(),
        &nvdla_compiler::Options::with_quant(target, &quant),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{}", compiled.summary());
    let out_scale = f64::from(compiled.program.surface(compiled.program.outputs[0]).scale);
    let dir = tmp("int8");
    let loadable = dir.join("mnist_nv_small_int8.nvdla");
    std::fs::write(&loadable, &compiled.loadable).unwrap();
    let (right, worst) = run_all(&g, &shared, &loadable, "nv_small", &[], out_scale, &dir);
    eprintln!("int8 nv_small: {right}/10 top-1, largest |score - fp32| {worst:.4} (output scale {out_scale})");
    assert_eq!(right, 10);
    assert!(worst < 1.0, "int8 scores differ from fp32 by {worst}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn input_scaling_survey() {
    let Some(shared) = shared() else { return };
    let g = model(&shared);
    type Scaling = (&'static str, fn(f32) -> f32);
    let candidates: [Scaling; 5] = [
        ("raw pixels 0..255", |p| p),
        ("pixel / 255", |p| p / 255.0),
        ("pixel / 256", |p| p / 256.0),
        ("255 - pixel", |p| 255.0 - p),
        ("1 - pixel / 255", |p| 1.0 - p / 255.0),
    ];
    let mut results = Vec::new();
    for (name, f) in candidates {
        let (top1, logit) = reference_top1(&g, &shared, f);
        eprintln!("{name}: {top1}/10, mean top logit {logit:.1}");
        results.push((top1, logit));
    }
    assert_eq!(results[1].0, 10, "pixel / 255");
    assert!((5.0..100.0).contains(&results[1].1), "pixel / 255 logits");
    assert!(
        results[0].1 > 100.0 * results[1].1 / 2.0,
        "raw pixels scale the logits"
    );
    assert!(results[3].0 < 5 && results[4].0 < 5, "inverted inputs");
}
