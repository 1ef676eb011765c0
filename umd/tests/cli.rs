//! The `nvdla-runtime` binary: messages, exit codes, outputs.

mod common;

use std::process::Command;

fn runtime() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nvdla-runtime"))
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("nvdla-umd-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs and returns (status, stdout, stderr).
fn run(args: &[&str], cwd: &std::path::Path) -> (i32, String, String) {
    let o = runtime().args(args).current_dir(cwd).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn one_error_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    lines[0]
}

#[test]
fn bad_loadable_is_one_line_and_exit_1() {
    let d = tmpdir("bad");
    let f = d.join("bad.nvdla");
    std::fs::write(&f, b"this is not a flatbuffer at all").unwrap();
    let (code, out, err) = run(&["--loadable", f.to_str().unwrap(), "--device", "mock"], &d);
    assert_eq!(code, 1);
    assert!(one_error_line(&err).contains("invalid loadable"), "{err}");
    assert!(!out.contains("Test pass"));
    let (code, _, err) = run(&["--loadable", "/nonexistent/x", "--device", "mock"], &d);
    assert_eq!(code, 1);
    assert!(
        one_error_line(&err).contains("cannot read loadable"),
        "{err}"
    );
}

#[test]
fn usage_errors() {
    let d = tmpdir("usage");
    let (code, _, err) = run(&[], &d);
    assert_eq!(code, 1);
    assert!(one_error_line(&err).contains("--loadable"));
    let (code, _, err) = run(&["--frobnicate"], &d);
    assert_eq!(code, 1);
    one_error_line(&err);
    let (code, _, err) = run(&["--loadable", "x", "--mean", "1,2,3,4,5"], &d);
    assert_eq!(code, 1);
    assert!(one_error_line(&err).contains("at most 4"), "{err}");
    let (code, _, err) = run(&["--loadable", "x", "--normalize", "0"], &d);
    assert_eq!(code, 1);
    one_error_line(&err);
    let (code, out, _) = run(&["-h"], &d);
    assert_eq!(code, 0);
    for flag in [
        "--loadable",
        "--image",
        "--normalize",
        "--mean",
        "--rawdump",
        "-s",
        "--device",
    ] {
        assert!(out.contains(flag), "help lacks {flag}");
    }
}

#[test]
fn unreachable_backend_is_reported() {
    let Some(shared) = common::shared("unreachable_backend_is_reported") else {
        return;
    };
    let d = tmpdir("vp");
    let f = shared.join("nvdla-sw-regression/flatbufs/kmd/NN/NN_L0_0_fbuf");
    let missing = d.join("no-daemon.sock");
    let socket = format!("socket:{}", missing.display());
    let mut devices = vec![socket.as_str()];
    if nvdla_port::linux::find_node().is_none() {
        devices.push("linux");
    }
    for dev in devices {
        let (code, _, err) = run(&["--loadable", f.to_str().unwrap(), "--device", dev], &d);
        assert_eq!(code, 1);
        let line = one_error_line(&err);
        assert!(line.contains("cannot open device"), "{line}");
    }
}

#[test]
fn mock_run_writes_dimg_and_rawdump() {
    let Some(shared) = common::shared("mock_run_writes_dimg_and_rawdump") else {
        return;
    };
    let d = tmpdir("mock");
    let f = shared.join("nvdla-sw-regression/flatbufs/kmd/NN/NN_L0_0_fbuf");
    let f = f.to_str().unwrap();
    let (code, out, err) = run(&["--loadable", f, "--device", "mock"], &d);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l == "Test pass"), "{out}");
    // One progress line per task.
    assert_eq!(
        err.lines().filter(|l| l.contains(" done in ")).count(),
        3,
        "{err}"
    );
    let dimg = std::fs::read(d.join("output.dimg")).unwrap();
    assert_eq!(&dimg[..4], b"DIMG");
    // Zero input on a mock DLA: softmax of ten zeros is 0.1 (fp16 0x2e66) everywhere.
    for i in 0..10 {
        assert_eq!(dimg[36 + 2 * i..38 + 2 * i], [0x66, 0x2e]);
    }
    let (code, _, err) = run(
        &[
            "--loadable",
            f,
            "--device",
            "mock",
            "--rawdump",
            "--output",
            "raw.txt",
        ],
        &d,
    );
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(d.join("raw.txt")).unwrap();
    assert_eq!(text, "0.0999756 ".repeat(10));
    // An image into a loadable whose input is a 28x28 feature cube.
    let img = shared.join("nvdla-sw-regression/images/digits/eight.pgm");
    let (code, _, err) = run(
        &[
            "--loadable",
            f,
            "--device",
            "mock",
            "--image",
            img.to_str().unwrap(),
        ],
        &d,
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(
        &[
            "--loadable",
            f,
            "--device",
            "mock",
            "--image",
            "missing.pgm",
        ],
        &d,
    );
    assert_eq!(code, 1);
    assert!(one_error_line(&err).contains("does not exist"));
}

/// A loadable compiled for nv_small, run with the default nv_full: one error line that
/// names the engine fault first, with `EINVAL` (not a timeout), and suggests the other
/// configurations; exit 1.
#[test]
fn wrong_configuration_is_explained() {
    let Some(shared) = common::shared("wrong_configuration_is_explained") else {
        return;
    };
    let d = tmpdir("wrongcfg");
    let f = shared.join("nvdla-sw-regression/flatbufs/kmd/CONV/CONV_D_L0_0_small_fbuf");
    let (code, out, err) = run(&["--loadable", f.to_str().unwrap()], &d);
    assert_eq!(code, 1);
    assert!(!out.contains("Test pass"), "{out}");
    let line = one_error_line(&err);
    assert!(
        line.contains(
            "SUBMIT failed: EINVAL (errno 22): task 0: engine fault in CDMA: CDMA: invalid \
             programming"
        ),
        "{line}"
    );
    assert!(
        !line.contains("ETIMEDOUT") && !line.contains("timed out"),
        "{line}"
    );
    assert!(
        line.contains("pass it with --config: nv_large, nv_medium_1024_full, ")
            && line.contains(" or nv_small_256_full)"),
        "{line}"
    );
}
