//! Acceptance for int8: Caffe LeNet in int8 on nv_small, nv_full and nv_large
//! - with NVIDIA's calibration table `lenet.int8.json`: 10/10 top-1 on the shared MNIST
//!   jpgs, and on nv_small the same int8 outputs as NVIDIA's loadable made from the same
//!   model and table (within 2 LSB; measured: identical);
//! - with the TensorRT cache `lenet.calibration.table`: the same scales as the JSON;
//! - with its own calibration (`--calibrate` on the jpgs, and on the regression's PGM
//!   digits): 10/10 top-1.

mod common;

use nvdla_compiler::calibrate;
use nvdla_compiler::frontend::{self, ModelFiles};
use nvdla_compiler::ir::Graph;
use nvdla_compiler::lower::Quant;
use nvdla_compiler::quant::{Calibration, RangeMethod};
use nvdla_compiler::target::{Precision, Target};
use std::path::{Path, PathBuf};

fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    if p.join("models/caffe/lenet").is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: shared data not found at {}", p.display());
        None
    }
}

fn lenet(shared: &Path) -> Graph {
    let m = shared.join("models/caffe/lenet");
    frontend::load(&ModelFiles::Caffe {
        prototxt: m.join("lenet.prototxt"),
        caffemodel: m.join("lenet.caffemodel"),
    })
    .unwrap()
}

/// The printed class scores of an int8 network, as integers.
fn infer(loadable: &Path, image: &Path, config: &str, out: &Path) -> Vec<i64> {
    common::infer(loadable, image, config, out, &[])
        .into_iter()
        .map(|v| v as i64)
        .collect()
}

fn compile(g: &Graph, config: &str, cal: &Calibration, path: &Path) {
    let hw = nvdla_hw::Config::by_name(config).unwrap();
    let target = Target::new(hw, Precision::Int8).unwrap();
    let quant = Quant {
        cal: Some(cal),
        per_filter: false,
        input_scale: 255.0 / 127.0,
    };
    let c = nvdla_compiler::compile_graph(
        g.clone(),
        &nvdla_compiler::Options::with_quant(target, &quant),
    )
    .unwrap();
    std::fs::write(path, c.loadable).unwrap();
}

fn images(dir: &Path) -> Vec<(PathBuf, usize)> {
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

fn top1(v: &[i64]) -> usize {
    (0..v.len())
        .max_by_key(|&i| (v[i], usize::MAX - i))
        .unwrap()
}

fn tmp(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nvdla-compiler-int8-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn lenet_int8_with_nvidias_table() {
    let Some(shared) = shared() else { return };
    let g = lenet(&shared);
    let json = std::fs::read_to_string(shared.join("models/caffe/lenet/lenet.int8.json")).unwrap();
    let cal = Calibration::from_json(&g, &json).unwrap();
    let dir = shared.join("third-party-loadables/lenet-mnist");
    let nvidia_small = dir.join("lenet_nv_small_int8_nchw_calib_fast-math.nvdla");
    let tmp = tmp("table");
    for config in ["nv_small", "nv_full", "nv_large"] {
        let ours = tmp.join(format!("lenet_{config}.nvdla"));
        compile(&g, config, &cal, &ours);
        for (image, label) in images(&dir.join("images")) {
            let got = infer(&ours, &image, config, &tmp.join("o.dimg"));
            assert_eq!(top1(&got), label, "{config} {}: {got:?}", image.display());
            if config == "nv_small" {
                let theirs = infer(&nvidia_small, &image, config, &tmp.join("n.dimg"));
                let diff = got
                    .iter()
                    .zip(&theirs)
                    .map(|(a, b)| (a - b).abs())
                    .max()
                    .unwrap();
                assert!(
                    diff <= 2,
                    "{}: ours {got:?}, NVIDIA's {theirs:?}",
                    image.display()
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(tmp);
}

#[test]
fn tensorrt_cache_gives_the_json_scales() {
    let Some(shared) = shared() else { return };
    let g = lenet(&shared);
    let m = shared.join("models/caffe/lenet");
    let json = Calibration::from_json(
        &g,
        &std::fs::read_to_string(m.join("lenet.int8.json")).unwrap(),
    )
    .unwrap();
    let trt = Calibration::from_trt_cache(
        &g,
        &std::fs::read_to_string(m.join("lenet.calibration.table")).unwrap(),
    )
    .unwrap();
    // Every tensor the lowering needs (all but the pre-ReLU ip1 output, which the JSON
    // keys by layer and the cache names "(Unnamed Layer* 4)") has the same scale.
    assert_eq!(json.scales.len(), g.tensors.len());
    assert_eq!(trt.scales.len(), g.tensors.len());
    for (t, s) in &json.scales {
        let r = trt.get(*t).unwrap();
        assert!(
            (r - s).abs() <= s * 1e-6,
            "{}: json {s} cache {r}",
            g.tensor(*t).name
        );
    }
}

#[test]
fn lenet_int8_with_its_own_calibration() {
    let Some(shared) = shared() else { return };
    let g = lenet(&shared);
    let dir = shared.join("third-party-loadables/lenet-mnist");
    let tmp = tmp("own");
    for (name, cal_dir) in [
        ("jpgs", dir.join("images")),
        (
            "regression digits",
            shared.join("nvdla-sw-regression/images/digits"),
        ),
    ] {
        let imgs = calibrate::images_in(&cal_dir).unwrap();
        // Caffe's data layer scales pixels by 1/256.
        let cal = calibrate::from_images(
            &g,
            &imgs,
            256.0,
            RangeMethod::Percentile(99.99),
            false,
            &mut |_, _| {},
        )
        .unwrap();
        for config in ["nv_small", "nv_full", "nv_large"] {
            let path = tmp.join(format!("cal_{config}.nvdla"));
            compile(&g, config, &cal, &path);
            let mut right = 0;
            for (image, label) in images(&dir.join("images")) {
                let got = infer(&path, &image, config, &tmp.join("o.dimg"));
                right += usize::from(top1(&got) == label);
            }
            eprintln!("calibrated on {name}: {config} {right}/10");
            assert_eq!(right, 10, "calibrated on {name}, {config}");
        }
    }
    let _ = std::fs::remove_dir_all(tmp);
}
