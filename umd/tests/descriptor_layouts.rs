//! Loadables in both DLA data-cube layouts, whatever their blob version says: ONNC's
//! (interface version 1.3 in the blobs, legacy 28-byte cubes, and its EMU `Log`) reproduce
//! ONNC's expected `--rawdump` text exactly, and the project's own builder's SDP ReLU
//! loadable gives the same, correct output in every layout/version combination.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use nvdla_loadable::dla::Layout;
use nvdla_loadable::examples::sdp_relu;
use nvdla_loadable::Version;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nvdla-umd-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `nvdla-runtime` in `cwd` and returns (exit code, stderr).
fn run(args: &[&str], cwd: &Path) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_nvdla-runtime"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn onnc_loadables_reproduce_onncs_rawdump() {
    let Some(shared) = common::shared("onnc_loadables_reproduce_onncs_rawdump") else {
        return;
    };
    let root = shared.join("third-party-loadables/onnc-tutorial");
    if !root.is_dir() {
        eprintln!("onnc_loadables_reproduce_onncs_rawdump: skipped, {root:?} absent");
        return;
    }
    for name in ["test_Add", "test_Log", "test_Relu_Log_Relu"] {
        let dir = root.join(name);
        let cwd = tmpdir(&format!("onnc-{name}"));
        let loadable = dir.join(format!("{name}.nvdla"));
        let image = dir.join("input1x5x7.pgm");
        let (code, stderr) = run(
            &[
                "--loadable",
                loadable.to_str().unwrap(),
                "--image",
                image.to_str().unwrap(),
                "--rawdump",
            ],
            &cwd,
        );
        assert_eq!(code, 0, "{name}: {stderr}");
        let got = std::fs::read_to_string(cwd.join("output.dimg")).unwrap();
        let want = std::fs::read_to_string(dir.join(format!("{name}.output.dimg"))).unwrap();
        assert_eq!(got, want, "{name}");
        let _ = std::fs::remove_dir_all(&cwd);
    }
}

#[test]
fn builder_sdp_relu_runs_in_both_layouts() {
    let cwd = tmpdir("sdp-relu-layouts");
    let v = |major, minor| Version {
        major,
        minor,
        sub_minor: 0,
    };
    // The ramp `i % 251` as int8 through ReLU, sorted.
    let mut expected: Vec<u8> = (0..2048u32)
        .map(|i| ((i % 251) as u8 as i8).max(0) as u8)
        .collect();
    expected.sort_unstable();
    let mut outputs = Vec::new();
    for (layout, version) in [
        (Layout::Current, v(0, 12)),
        (Layout::Legacy, v(0, 11)),
        // Versions that name the other layout: ONNC writes 1.x with legacy cubes.
        (Layout::Legacy, v(1, 3)),
        (Layout::Current, v(0, 11)),
    ] {
        let file = cwd.join(format!("relu-{layout:?}-{version}.nvdla"));
        std::fs::write(&file, sdp_relu(8, 8, layout, version, None).build()).unwrap();
        let out = cwd.join(format!("relu-{layout:?}-{version}.dimg"));
        let (code, stderr) = run(
            &[
                "--loadable",
                file.to_str().unwrap(),
                "--output",
                out.to_str().unwrap(),
            ],
            &cwd,
        );
        assert_eq!(code, 0, "{layout:?} {version}: {stderr}");
        let dimg = std::fs::read(&out).unwrap();
        // The .dimg orders the elements its own way; as a multiset they are the ReLU'd ramp.
        let mut payload = dimg[dimg.len() - 2048..].to_vec();
        payload.sort_unstable();
        assert!(
            payload == expected,
            "{layout:?} {version}: not the ReLU of the ramp"
        );
        outputs.push(dimg);
    }
    assert!(
        outputs.windows(2).all(|w| w[0] == w[1]),
        "the four builds differ"
    );

    // A cube larger than its buffer is refused by the firmware, naming the entry, in the
    // detected (legacy) layout, as it would be in the current one.
    let file = cwd.join("relu-oversized.nvdla");
    std::fs::write(
        &file,
        sdp_relu(8, 8, Layout::Legacy, v(1, 3), Some(4096)).build(),
    )
    .unwrap();
    let (code, stderr) = run(&["--loadable", file.to_str().unwrap()], &cwd);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("4096 bytes at offset 0x0 of address-list entry 5 exceed its buffer"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&cwd);
}
