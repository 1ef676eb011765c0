//! Acceptance: Caffe LeNet compiled by our compiler in fp16 for nv_full and nv_large runs
//! through `nvdla-runtime` on the built-in virtual platform, classifies the ten test
//! digits, and its class scores are within 0.02 of the Caffe fp32 reference.

mod common;

use common::infer;
use nvdla_compiler::frontend::{self, ModelFiles};
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

/// `image -> 10 fp32 scores` from `reference_fp32.tsv`.
fn reference(dir: &Path) -> Vec<(String, Vec<f64>)> {
    let text = std::fs::read_to_string(dir.join("reference_fp32.tsv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let scores = f[3]
                .split_whitespace()
                .map(|v| v.parse().unwrap())
                .collect();
            (f[0].to_string(), scores)
        })
        .collect()
}

#[test]
fn lenet_fp16_classifies_and_matches_fp32() {
    let Some(shared) = shared() else { return };
    let model = shared.join("models/caffe/lenet");
    let dir = shared.join("third-party-loadables/lenet-mnist");
    let tmp = std::env::temp_dir().join(format!("nvdla-compiler-lenet-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let refs = reference(&dir);
    assert_eq!(refs.len(), 10);
    for config in ["nv_full", "nv_large"] {
        let graph = frontend::load(&ModelFiles::Caffe {
            prototxt: model.join("lenet.prototxt"),
            caffemodel: model.join("lenet.caffemodel"),
        })
        .unwrap();
        let hw = nvdla_hw::Config::by_name(config).unwrap();
        let target = Target::new(hw, Precision::Fp16).unwrap();
        let compiled =
            nvdla_compiler::compile_graph(graph, &nvdla_compiler::Options::new(target)).unwrap();
        let loadable = tmp.join(format!("lenet_{config}.nvdla"));
        std::fs::write(&loadable, &compiled.loadable).unwrap();
        let mut worst = 0.0f64;
        for (image, want) in &refs {
            let label: usize = image[2..3].parse().unwrap();
            let got = infer(
                &loadable,
                &dir.join("images").join(image),
                config,
                &tmp.join("o.dimg"),
                &["--normalize", "255"],
            );
            assert_eq!(got.len(), 10);
            let top = (0..10).max_by(|&a, &b| got[a].total_cmp(&got[b])).unwrap();
            assert_eq!(top, label, "{config} {image}: {got:?}");
            for (g, w) in got.iter().zip(want) {
                worst = worst.max((g - w).abs());
            }
        }
        eprintln!("{config}: 10/10 top-1, largest |score - fp32| {worst:.6}");
        assert!(
            worst <= 0.02,
            "{config}: scores differ from fp32 by {worst}"
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
