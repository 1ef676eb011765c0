//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// `../shared` beside the project root, or `None` (after saying so) when absent.
pub fn shared(test: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    if p.join("nvdla-sw-regression").is_dir() {
        Some(p)
    } else {
        eprintln!("{test}: skipped, shared data not found at {}", p.display());
        None
    }
}

pub fn nn_l0_0(shared: &std::path::Path) -> Vec<u8> {
    std::fs::read(shared.join("nvdla-sw-regression/flatbufs/kmd/NN/NN_L0_0_fbuf")).unwrap()
}

pub fn lenet(shared: &std::path::Path, name: &str) -> Vec<u8> {
    std::fs::read(shared.join("third-party-loadables/lenet-mnist").join(name)).unwrap()
}

/// Every regression loadable with its golden directory name prefix.
pub fn regression_loadables(shared: &std::path::Path) -> Vec<(String, PathBuf)> {
    let mut v = Vec::new();
    let root = shared.join("nvdla-sw-regression/flatbufs/kmd");
    for unit in std::fs::read_dir(&root).unwrap() {
        for f in std::fs::read_dir(unit.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let test = name.trim_end_matches("_fbuf").to_string();
            v.push((test, p));
        }
    }
    v.sort();
    v
}

/// The golden output of regression test `test`.
pub fn golden(shared: &std::path::Path, test: &str) -> Option<Vec<u8>> {
    let dir = shared.join("nvdla-sw-regression/golden");
    for e in std::fs::read_dir(dir).ok()? {
        let p = e.ok()?.path();
        let n = p.file_name()?.to_string_lossy().into_owned();
        // `<TEST>_<6 hex>`
        if n.len() == test.len() + 7 && n.starts_with(test) && n.as_bytes()[test.len()] == b'_' {
            return std::fs::read(p.join("dla/o_000000.dimg")).ok();
        }
    }
    None
}

pub fn f16(v: f32) -> u16 {
    nvdla_umd::fp16::f32_to_f16(v)
}

pub fn h2f(h: u16) -> f32 {
    nvdla_umd::fp16::f16_to_f32(h)
}
