//! The `nvdla-compiler` command line: upstream's flags, output naming, the summary line,
//! and errors that name the layer.

use std::path::PathBuf;
use std::process::Command;

fn lenet() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/models/caffe/lenet");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: {} not found", p.display());
        None
    }
}

fn compiler() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nvdla-compiler"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nvdla-compiler-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn directory_output_is_named_after_the_profile_and_a_summary_is_printed() {
    let Some(m) = lenet() else { return };
    let dir = tmp("dir");
    let out = compiler()
        .args(["--prototxt", m.join("lenet.prototxt").to_str().unwrap()])
        .args(["--caffemodel", m.join("lenet.caffemodel").to_str().unwrap()])
        .args(["-o", dir.to_str().unwrap(), "--profile", "basic"])
        .args(["--configtarget", "opendla-large", "--cprecision", "fp16"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let bytes = std::fs::read(dir.join("basic.nvdla")).unwrap();
    nvdla_loadable::Loadable::parse(&bytes).unwrap();
    let summary = err.lines().last().unwrap();
    assert!(
        summary.starts_with(
            "8 layers -> 7 hardware ops (conv 4, sdp 4, pdp 2, cdp 0, cpu 1), 2 tasks,"
        ),
        "{summary}"
    );
    assert!(
        err.contains("warning: nv_large silicon has no fp16 datapath"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn errors_name_the_layer_and_its_type() {
    let dir = tmp("err");
    let proto = dir.join("bad.prototxt");
    std::fs::write(
        &proto,
        "input: \"data\"\ninput_shape { dim: 1 dim: 3 dim: 8 dim: 8 }\n\
         layer { name: \"odd\" type: \"LRN\" bottom: \"data\" top: \"n\" lrn_param { local_size: 11 } }\n",
    )
    .unwrap();
    let model = dir.join("empty.caffemodel");
    std::fs::write(&model, []).unwrap();
    let out = compiler()
        .args(["--prototxt", proto.to_str().unwrap()])
        .args(["--caffemodel", model.to_str().unwrap()])
        .args(["-o", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "error: layer `odd` (LRN): local_size 11: CDP normalises over 3, 5, 7 or 9 channels"
        ),
        "{err}"
    );
    let unknown = compiler()
        .args(["--prototxt", proto.to_str().unwrap()])
        .args(["--caffemodel", model.to_str().unwrap()])
        .args(["--configtarget", "nv_huge"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(err.contains("unknown --configtarget `nv_huge`"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// The project's digit classifier as `[1, 1, 8, 8]` raw pixel values (its training range).
fn digit(i: usize) -> Vec<f32> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/digits/{i}.pgm"));
    let b = std::fs::read(p).unwrap();
    // P5, 8 8, 255, then 64 bytes.
    b[b.len() - 64..].iter().map(|&v| f32::from(v)).collect()
}

/// An int8 loadable records its inputs' and outputs' scales: `nvdla-runtime --input x.npy
/// --output y.npy` then converts real values without `--input-scale`/`--output-scale`, to
/// the same bytes as with the scales the compiler printed.
#[test]
fn int8_scales_are_recorded_in_the_loadable() {
    use nvdla_umd::tensor::{write_npy, HostTensor};
    let dir = tmp("scales");
    let cal = dir.join("cal");
    std::fs::create_dir_all(&cal).unwrap();
    for i in 0..10 {
        let t = HostTensor::from_f32(vec![1, 1, 8, 8], &digit(i)).unwrap();
        write_npy(&cal.join(format!("d{i}.npy")), &t).unwrap();
    }
    let model = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/digits.onnx");
    let lo = dir.join("d.nvdla");
    let out = compiler()
        .args([
            "--onnx",
            model.to_str().unwrap(),
            "--configtarget",
            "nv_small",
        ])
        .args(["--cprecision", "int8", "--calibrate", cal.to_str().unwrap()])
        .args(["-o", lo.to_str().unwrap()])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{log}");
    let printed = |what: &str| -> String {
        log.lines()
            .find(|l| l.starts_with(what))
            .and_then(|l| l.split("int8 scale ").nth(1))
            .and_then(|s| s.split_whitespace().next())
            .unwrap_or_else(|| panic!("no {what} scale in {log}"))
            .to_string()
    };
    let (si, so) = (printed("input '"), printed("output '"));
    let run = |y: &std::path::Path, scales: &[&str]| -> Vec<u8> {
        let mut argv: Vec<String> = ["nvdla-runtime", "--loadable", lo.to_str().unwrap()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        argv.extend(
            [
                "--config",
                "nv_small",
                "--input",
                cal.join("d7.npy").to_str().unwrap(),
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        argv.extend(["--output".to_string(), y.to_str().unwrap().to_string()]);
        argv.extend(scales.iter().map(|s| s.to_string()));
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let rc = nvdla_umd::app::run(&argv, &nvdla_umd::device::open_device, &mut o, &mut e);
        assert_eq!(rc, 0, "{}", String::from_utf8_lossy(&e));
        std::fs::read(y).unwrap()
    };
    let recorded = run(&dir.join("y1.npy"), &[]);
    let given = run(
        &dir.join("y2.npy"),
        &["--input-scale", &si, "--output-scale", &so],
    );
    assert_eq!(recorded, given);
    // Real probabilities: class 7 near 1.
    let y = nvdla_umd::tensor::read_tensor_file(&dir.join("y1.npy"))
        .unwrap()
        .to_f32_vec();
    let best = (0..10).max_by(|&a, &b| y[a].total_cmp(&y[b])).unwrap();
    assert_eq!(best, 7, "{y:?}");
    assert!(y[7] > 0.9 && y[7] <= 1.0, "{y:?}");
}
