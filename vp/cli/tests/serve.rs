//! `nvdla-vp serve`: the daemon binary comes up, serves a client and stops cleanly on
//! SIGTERM (more daemon tests, in process, are in nvdla-port's tests/daemon.rs).

use std::process::Command;
use std::time::{Duration, Instant};

use nvdla_port::device::{BufferHandle, Device};
use nvdla_port::socket::SocketDevice;

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("nvdla-vp-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn sigterm_stops_the_daemon_cleanly() {
    let dir = tmpdir("sigterm");
    let path = dir.join("kmd.sock");
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_nvdla-vp"))
        .args([
            "serve",
            "--socket",
            path.to_str().unwrap(),
            "--config",
            "all",
        ])
        .spawn()
        .unwrap();
    let t = Instant::now();
    let mut dev = loop {
        match SocketDevice::connect(&path, Some("nv_small")) {
            Ok(d) => break d,
            Err(_) if t.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("daemon did not come up: {e}"),
        }
    };
    assert_eq!(dev.config(), "nv_small");
    let h: BufferHandle = dev.create_buffer(100).unwrap();
    dev.map_buffer(h).unwrap()[0] = 1;
    let pid = nix::unistd::Pid::from_raw(daemon.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = daemon.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "daemon ignores SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    assert!(!path.exists(), "socket removed");
    // The mapping outlives the daemon; the connection does not.
    assert_eq!(dev.map_buffer(h).unwrap()[0], 1);
    assert!(dev.create_buffer(100).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
