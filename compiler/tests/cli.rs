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
