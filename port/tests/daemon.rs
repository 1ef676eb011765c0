//! The process split: the KMD daemon ([`nvdla_port::daemon`]) and its client backend
//! ([`SocketDevice`]): the device contract over the socket, the same results as in
//! process, and robustness against clients that misbehave or die.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use nvdla_port::daemon::{Daemon, DaemonConfig, ShutdownHandle};
use nvdla_port::device::{Device, DeviceError};
use nvdla_port::socket::{ConnectError, SocketDevice};
use nvdla_port::vp::{VpConfig, VpDevice};
use nvdla_port::wire::{self, FrameRead, Op, Request, Stats};

const ENOENT: i32 = 2;
const EINVAL: i32 = 22;

/// A daemon serving from a thread of the test process.
struct TestDaemon {
    path: PathBuf,
    dir: PathBuf,
    stop: ShutdownHandle,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nvdla-port-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

impl TestDaemon {
    fn start(name: &str, configs: &[VpConfig]) -> Self {
        let dir = tmpdir(name);
        let path = dir.join("kmd.sock");
        let cfg = DaemonConfig {
            configs: configs.to_vec(),
            max_clients: 16,
            ..DaemonConfig::default()
        };
        let d = Daemon::bind(&path, &cfg).unwrap();
        let stop = d.shutdown_handle();
        let thread = Some(std::thread::spawn(move || d.run()));
        Self {
            path,
            dir,
            stop,
            thread,
        }
    }

    fn connect(&self, config: Option<&str>) -> SocketDevice {
        SocketDevice::connect(&self.path, config).unwrap()
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        self.stop.shutdown();
        if let Some(t) = self.thread.take() {
            t.join().unwrap().unwrap();
        }
        assert!(!self.path.exists(), "the daemon removes its socket");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn errno(r: Result<impl std::fmt::Debug, DeviceError>) -> i32 {
    r.expect_err("must fail").errno
}

// --- the device contract over the socket ------------------------------------------------

#[test]
fn socket_device_keeps_the_device_contract() {
    let d = TestDaemon::start("contract", &[VpConfig::NvFull]);
    let mut dev = d.connect(None);
    assert_eq!(dev.config(), "nv_full");
    assert_eq!(errno(dev.create_buffer(0)), EINVAL);
    let h = dev.create_buffer(5000).unwrap();
    let b = dev.map_buffer(h).unwrap();
    assert_eq!(b.len(), 5000, "exactly the size asked");
    assert!(b.iter().all(|&x| x == 0), "zeroed");
    b[4999] = 0x5a;
    assert_eq!(dev.map_buffer(h).unwrap()[4999], 0x5a);
    let s = dev.stats().unwrap();
    assert_eq!((s.client_buffers, s.buffers, s.mappings), (1, 1, 1));
    dev.destroy_buffer(h).unwrap();
    assert_eq!(errno(dev.destroy_buffer(h)), ENOENT);
    assert_eq!(errno(dev.map_buffer(h)), ENOENT);
    let s = dev.stats().unwrap();
    assert_eq!((s.client_buffers, s.buffers, s.mappings), (0, 0, 0));
}

#[test]
fn clients_have_separate_handle_namespaces() {
    let d = TestDaemon::start("namespaces", &[VpConfig::NvFull]);
    let mut a = d.connect(None);
    let mut b = d.connect(Some("nv_full"));
    let ha = a.create_buffer(64).unwrap();
    assert_eq!(errno(b.map_buffer(ha)), ENOENT);
    assert_eq!(errno(b.destroy_buffer(ha)), ENOENT);
    let l = bdma(&mut a);
    assert_eq!(errno(submit(&mut b, &l.addresses)), ENOENT);
    submit(&mut a, &l.addresses).unwrap();
    assert_eq!(b.stats().unwrap().client_buffers, 0);
    assert_eq!(b.stats().unwrap().clients, 2);
    drop(a);
    // The daemon frees a's buffers when it notices the connection closed.
    let s = wait_for(&mut b, |s| s.clients == 1);
    assert_eq!((s.buffers, s.mappings), (0, 0));
}

#[test]
fn unknown_configuration_is_refused() {
    let d = TestDaemon::start("configs", &[VpConfig::NvSmall]);
    match SocketDevice::connect(&d.path, Some("nv_full")) {
        Err(ConnectError::Refused { errno, detail }) => {
            assert_eq!(errno, 19, "ENODEV");
            assert!(detail.contains("nv_small"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert!(SocketDevice::connect(&d.path, Some("nv_tiny")).is_err());
    assert_eq!(d.connect(None).config(), "nv_small");
}

/// Every buffer of `l` on `dev`, in order.
fn snapshot(dev: &mut dyn Device, l: &Loaded) -> Vec<Vec<u8>> {
    l.buffers
        .iter()
        .flatten()
        .map(|&h| dev.map_buffer(h).unwrap().to_vec())
        .collect()
}

/// Runs `bytes` in process and over the socket; both must end with identical memory.
fn same_as_in_process(d: &TestDaemon, config: VpConfig, bytes: &[u8], what: &str) {
    let mut local = VpDevice::new(config);
    let mut remote = d.connect(Some(config.name()));
    let ll = load(&mut local, bytes);
    let lr = load(&mut remote, bytes);
    let rl = submit(&mut local, &ll.addresses).map_err(|e| e.errno);
    let rr = submit(&mut remote, &lr.addresses).map_err(|e| e.errno);
    assert_eq!(rl, rr, "{what}: same outcome");
    assert!(
        snapshot(&mut local, &ll) == snapshot(&mut remote, &lr),
        "{what}: same memory after the submit"
    );
}

#[test]
fn bdma_over_the_socket_matches_in_process() {
    let d = TestDaemon::start("bdma", &[VpConfig::NvFull]);
    let bytes = nvdla_loadable::examples::bdma_copy(8, 8).build();
    same_as_in_process(&d, VpConfig::NvFull, &bytes, "bdma_copy");
    let mut dev = d.connect(None);
    good_task_succeeds(&mut dev);
}

#[test]
fn regression_loadables_over_the_socket_match_in_process() {
    let Some(root) = shared() else {
        return;
    };
    let d = TestDaemon::start(
        "regression",
        &[VpConfig::NvFull, VpConfig::NvLarge, VpConfig::NvSmall],
    );
    let mut n = 0;
    for unit in std::fs::read_dir(root.join("flatbufs/kmd")).unwrap() {
        for f in std::fs::read_dir(unit.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            let test = p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace("_fbuf", "");
            let bytes = std::fs::read(&p).unwrap();
            same_as_in_process(&d, config_of(&test), &bytes, &test);
            n += 1;
        }
    }
    eprintln!("{n} regression loadables: identical in process and over the socket");
}

// --- robustness -------------------------------------------------------------------------

/// Polls the daemon's counts until `done` holds (10 s at most).
fn wait_for(dev: &mut SocketDevice, done: impl Fn(&Stats) -> bool) -> Stats {
    let t = Instant::now();
    loop {
        let s = dev.stats().unwrap();
        if done(&s) || t.elapsed() > Duration::from_secs(10) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn raw(path: &Path) -> UnixStream {
    let s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn frame(code: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_le_bytes().to_vec();
    f.extend_from_slice(&code.to_le_bytes());
    f.extend_from_slice(payload);
    f
}

fn hello() -> Vec<u8> {
    Request::Hello {
        magic: wire::MAGIC,
        version: wire::VERSION,
        config: String::new(),
    }
    .encode()
    .unwrap()
}

/// Sends `bytes` and returns the reply's code (`None`: the daemon closed the connection).
fn exchange(s: &mut UnixStream, bytes: &[u8]) -> Option<u32> {
    s.write_all(bytes).ok()?;
    match wire::read_frame(s) {
        Ok(FrameRead::Frame(code, _)) => Some(code),
        _ => None,
    }
}

/// A child process (this test binary, running [`child_client_for_kill_tests`]) that loads a
/// loadable on the daemon and submits it in a loop until killed.
fn spawn_child(path: &Path, mode: &str) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_client_for_kill_tests",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("NVDLA_TEST_CHILD_SOCKET", path)
        .env("NVDLA_TEST_CHILD_MODE", mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until it has buffers (and, in "submit" mode, is submitting).
    let mut out = c.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut b = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("CHILD READY") {
        let n = out.read(&mut b).unwrap();
        assert!(
            n > 0,
            "child exited early: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&b[..n]);
    }
    c.stdout = Some(out);
    c
}

/// Not a test by itself: the client process that [`clients_that_die_or_misbehave_do_not_hurt_the_daemon`]
/// kills.
#[test]
#[ignore]
fn child_client_for_kill_tests() {
    let Ok(path) = std::env::var("NVDLA_TEST_CHILD_SOCKET") else {
        return;
    };
    let mode = std::env::var("NVDLA_TEST_CHILD_MODE").unwrap_or_default();
    let mut dev = SocketDevice::connect(&path, None).unwrap();
    // The largest loadable at hand keeps the daemon busy longest per submit.
    let bytes = shared()
        .and_then(|r| std::fs::read(r.join("flatbufs/kmd/CDP/CDP_L0_0_fbuf")).ok())
        .unwrap_or_else(|| nvdla_loadable::examples::bdma_copy(64, 64).build());
    let l = load(&mut dev, &bytes);
    for _ in 0..20 {
        let h = dev.create_buffer(1 << 20).unwrap();
        dev.map_buffer(h).unwrap()[12345] = 1;
    }
    if mode == "submit" {
        submit(&mut dev, &l.addresses).unwrap();
    }
    println!("CHILD READY");
    std::io::stdout().flush().unwrap();
    loop {
        if mode == "submit" {
            let _ = submit(&mut dev, &l.addresses);
        } else {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[test]
fn clients_that_die_or_misbehave_do_not_hurt_the_daemon() {
    let d = TestDaemon::start("robust", &[VpConfig::NvFull]);
    let mut good = d.connect(None);
    let keep = good.create_buffer(4096).unwrap();
    good.map_buffer(keep).unwrap().fill(0x77);

    // Clients killed while submitting, and while idle with buffers mapped.
    for (i, mode) in ["submit", "idle", "submit", "submit", "idle", "submit"]
        .iter()
        .enumerate()
    {
        let mut c = spawn_child(&d.path, mode);
        std::thread::sleep(Duration::from_millis(3 * i as u64));
        c.kill().unwrap();
        c.wait().unwrap();
    }

    let p = &d.path;
    // An unknown operation gets ENOSYS, and the connection stays usable.
    let mut s = raw(p);
    assert_eq!(exchange(&mut s, &frame(99, b"xyz")), Some(38));
    // Anything before HELLO is a protocol error.
    let create = Request::GemCreate { size: 64, flags: 0 }.encode().unwrap();
    assert_eq!(exchange(&mut s, &create), Some(71));
    assert_eq!(exchange(&mut s, &hello()), Some(0));
    assert_eq!(exchange(&mut s, &hello()), Some(71), "HELLO twice");
    // Truncated and overlong payloads.
    assert_eq!(
        exchange(&mut s, &frame(Op::GemCreate as u32, &[1; 7])),
        Some(22)
    );
    assert_eq!(
        exchange(&mut s, &frame(Op::GemDestroy as u32, &[1; 9])),
        Some(22)
    );
    // A submit promising 65535 tasks in 8 bytes, and one with far too many real tasks.
    let mut p8 = vec![0xff, 0xff, 0, 0, 0, 0, 0, 0];
    assert_eq!(exchange(&mut s, &frame(Op::Submit as u32, &p8)), Some(22));
    p8 = vec![0xe8, 0x03, 0, 0, 0, 0, 0, 0];
    for _ in 0..1000 {
        p8.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
        p8.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    }
    assert_eq!(
        exchange(&mut s, &frame(Op::Submit as u32, &p8)),
        Some(7),
        "E2BIG"
    );
    // Buffers too large for the device, and handles that are not ours.
    let huge = Request::GemCreate {
        size: 1 << 40,
        flags: 0,
    };
    assert_ne!(exchange(&mut s, &huge.encode().unwrap()), Some(0));
    let mmap = Request::GemMmap { handle: keep.get() };
    assert_eq!(exchange(&mut s, &mmap.encode().unwrap()), Some(2));
    // Buffers left behind by a connection that just closes.
    for _ in 0..10 {
        assert_eq!(exchange(&mut s, &create), Some(0));
    }
    // An oversized frame: E2BIG, then the daemon hangs up.
    assert_eq!(
        exchange(&mut s, &[0xff, 0xff, 0xff, 0xff, 5, 0, 0, 0]),
        Some(7)
    );
    let mut b = [0u8; 1];
    assert_eq!(s.read(&mut b).unwrap_or(0), 0, "connection closed");

    // Noise, and a frame cut short by a disconnect.
    let mut x: u32 = 12345;
    let noise: Vec<u8> = (0..65536)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        })
        .collect();
    let mut s = raw(p);
    let _ = s.write_all(&noise);
    drop(s);
    let mut s = raw(p);
    s.write_all(&hello()).unwrap();
    s.write_all(&frame(Op::Submit as u32, &[0; 100])[..50])
        .unwrap();
    drop(s);

    // The daemon is still serving: only the good client is left, with only its buffer.
    let st = wait_for(&mut good, |s| s.clients == 1 && s.buffers == 1);
    assert_eq!(
        st,
        Stats {
            client_buffers: 1,
            buffers: 1,
            clients: 1,
            mappings: 1
        },
        "no buffer of a dead or misbehaving client is left"
    );
    assert!(good.map_buffer(keep).unwrap().iter().all(|&b| b == 0x77));
    good_task_succeeds(&mut good);
    let after = good.stats().unwrap();
    assert_eq!((after.buffers, after.mappings), (1, 1));
}

#[test]
fn too_many_clients_are_refused() {
    let dir = tmpdir("maxclients");
    let path = dir.join("kmd.sock");
    let cfg = DaemonConfig {
        max_clients: 2,
        ..DaemonConfig::default()
    };
    let d = Daemon::bind(&path, &cfg).unwrap();
    let stop = d.shutdown_handle();
    let t = std::thread::spawn(move || d.run());
    let _a = SocketDevice::connect(&path, None).unwrap();
    let mut b = SocketDevice::connect(&path, None).unwrap();
    match SocketDevice::connect(&path, None) {
        Err(ConnectError::Refused { errno, .. }) => assert_eq!(errno, 16),
        other => panic!("{other:?}"),
    }
    drop(_a);
    wait_for(&mut b, |s| s.clients == 1);
    assert!(SocketDevice::connect(&path, None).is_ok());
    stop.shutdown();
    t.join().unwrap().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_live_socket_is_not_taken_over_but_a_stale_one_is() {
    let d = TestDaemon::start("stale", &[VpConfig::NvFull]);
    let e = Daemon::bind(&d.path, &DaemonConfig::default())
        .err()
        .unwrap();
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
    let stale = d.dir.join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    drop(Daemon::bind(&stale, &DaemonConfig::default()).unwrap());
    let file = d.dir.join("file");
    std::fs::write(&file, b"").unwrap();
    assert!(Daemon::bind(&file, &DaemonConfig::default()).is_err());
}
