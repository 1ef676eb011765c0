//! NVIDIA's regression corpus through the whole stack: `nvdla-runtime` on the built-in
//! virtual platform (runtime → port → KMD → firmware → hardware model), md5 of the output
//! `.dimg` against golden. `scripts/regression` prints the same table for people.

mod common;

use std::process::Command;

use md5::{Digest, Md5};

/// Tests that match golden today. The number only goes up: a test in this list that
/// fails is a regression; a test outside it that passes is reported so the list can grow.
const EXPECTED_PASS: &[&str] = &[
    "BDMA_L0_0",
    "CDP_L0_0",
    "CDP_L0_0_large",
    "CDP_L0_0_small",
    "CONV_D_L0_0",
    "CONV_D_L0_0_large",
    "CONV_D_L0_0_small",
    "NN_L0_0",
    "PDP_L0_0",
    "PDP_L0_0_large",
    "PDP_L0_0_small",
    "RBK_L0_0",
    "SDP_X1_L0_0",
    "SDP_X1_L0_0_large",
    "SDP_X1_L0_0_small",
];

fn config_of(test: &str) -> &'static str {
    if test.ends_with("_small") {
        "nv_small"
    } else if test.ends_with("_large") {
        "nv_large"
    } else {
        "nv_full"
    }
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn regression_md5_on_the_virtual_platform() {
    let Some(shared) = common::shared("regression_md5_on_the_virtual_platform") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("nvdla-umd-regression-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut report = Vec::new();
    let mut regressions = Vec::new();
    for (test, path) in common::regression_loadables(&shared) {
        let Some(golden) = common::golden(&shared, &test) else {
            continue;
        };
        let out = dir.join(format!("{test}.dimg"));
        let o = Command::new(env!("CARGO_BIN_EXE_nvdla-runtime"))
            .args(["--loadable", path.to_str().unwrap()])
            .args(["--config", config_of(&test)])
            .args(["--output", out.to_str().unwrap()])
            .current_dir(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!stderr.contains("panicked"), "{test}: {stderr}");
        let expected = hex(&Md5::digest(&golden));
        let got = std::fs::read(&out)
            .map(|b| hex(&Md5::digest(&b)))
            .unwrap_or_else(|_| "none".into());
        let pass = got == expected;
        report.push(format!(
            "{} {test}{}",
            if pass { "PASS" } else { "FAIL" },
            if pass {
                String::new()
            } else {
                format!(" (expected {expected}, got {got})")
            }
        ));
        if pass && !EXPECTED_PASS.contains(&test.as_str()) {
            eprintln!("{test} now passes: add it to EXPECTED_PASS");
        }
        if !pass && EXPECTED_PASS.contains(&test.as_str()) {
            regressions.push(format!("{test}: got {got}, expected {expected}; {stderr}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("{}", report.join("\n"));
    assert!(
        regressions.is_empty(),
        "regressions:\n{}",
        regressions.join("\n")
    );
}
