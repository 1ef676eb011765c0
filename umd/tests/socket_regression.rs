//! The process split end to end: `nvdla-runtime --device socket:PATH` against the KMD
//! daemon (`nvdla_port::daemon`, here in a thread of the test) on NVIDIA's regression
//! loadables. Every output must be byte-identical to the in-process (`--device vp`) run of
//! the same loadable, and so match golden exactly where the in-process run does.

mod common;

use std::path::Path;
use std::process::Command;

use md5::{Digest, Md5};
use nvdla_port::daemon::{Daemon, DaemonConfig};
use nvdla_port::vp::VpConfig;

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

/// Runs the runtime and returns the md5 of its output (`none` when it wrote none).
fn run(loadable: &Path, test: &str, device: &str, dir: &Path) -> String {
    let out = dir.join(format!("{test}-{}.dimg", device.len()));
    let _ = std::fs::remove_file(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_nvdla-runtime"))
        .args(["--loadable", loadable.to_str().unwrap()])
        .args(["--config", config_of(test)])
        .args(["--device", device])
        .args(["--output", out.to_str().unwrap()])
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{test} on {device}: {stderr}");
    std::fs::read(&out)
        .map(|b| hex(&Md5::digest(&b)))
        .unwrap_or_else(|_| "none".into())
}

#[test]
fn regression_over_the_socket_matches_in_process() {
    let Some(shared) = common::shared("regression_over_the_socket_matches_in_process") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("nvdla-umd-socket-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("kmd.sock");
    let cfg = DaemonConfig {
        configs: vec![VpConfig::NvFull, VpConfig::NvLarge, VpConfig::NvSmall],
        ..DaemonConfig::default()
    };
    let daemon = Daemon::bind(&sock, &cfg).unwrap();
    let stop = daemon.shutdown_handle();
    let thread = std::thread::spawn(move || daemon.run());
    let device = format!("socket:{}", sock.display());

    let mut report = Vec::new();
    let mut differ = Vec::new();
    let (mut pass, mut total) = (0, 0);
    for (test, path) in common::regression_loadables(&shared) {
        let Some(golden) = common::golden(&shared, &test) else {
            continue;
        };
        let expected = hex(&Md5::digest(&golden));
        let local = run(&path, &test, "vp", &dir);
        let remote = run(&path, &test, &device, &dir);
        total += 1;
        let verdict = if remote == expected {
            pass += 1;
            "PASS"
        } else {
            "FAIL"
        };
        report.push(format!("{verdict} {test} (socket {remote}, vp {local})"));
        if local != remote {
            differ.push(test);
        }
    }
    stop.shutdown();
    thread.join().unwrap().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "{}\nover the socket: {pass} passed, {} failed",
        report.join("\n"),
        total - pass
    );
    assert!(
        differ.is_empty(),
        "socket and in-process outputs differ: {differ:?}"
    );
}
