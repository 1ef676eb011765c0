//! The KMD daemon: our driver, firmware and hardware model in a process of their own,
//! serving runtimes over a Unix socket ([`crate::wire`]).
//!
//! This is the process split of a board — runtime in one address space, driver in another —
//! without a kernel module. Each connection is one client of the driver (as an open DRM file
//! is): it gets its own [`ClientId`], so its handles are invisible to every other client,
//! and when the connection ends, however it ends, [`Kmd::close_client`] frees whatever it
//! left behind.
//!
//! Buffers are memfds (see [`crate::shm`]): the daemon creates one per `GEM_CREATE`, maps it,
//! and passes the descriptor to the client on `GEM_MMAP`; the client maps the same pages,
//! so tensor data never crosses the socket. The model's DRAM is sparse and not
//! host-addressable, so a submit copies the memfds of the buffers it names into the
//! model's DRAM at their device addresses before running and back afterwards — the same
//! visibility the [`crate::device::Device`] contract asks of the in-process backend, with
//! the copy done by the daemon instead of by a socket.
//!
//! One thread per client; each hardware instance (one per configured [`VpConfig`]) is a
//! [`Kmd`] behind a mutex, which a submit holds for its whole run, as the single hardware
//! queue of `opendla.ko` serialises submits. Nothing a client sends is trusted: frames are
//! bounded ([`crate::wire::MAX_PAYLOAD`]), malformed ones get an error reply, an oversized
//! one an error reply and a closed connection; a client that disappears mid-submit is
//! noticed when its reply cannot be sent. The number of clients is bounded.
//!
//! [`serve`] runs a daemon until `SIGTERM`, `SIGINT` or `SIGHUP`; [`Daemon`] is the same
//! with a programmatic [`ShutdownHandle`] for embedding and tests.

use std::collections::BTreeMap;
use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::{send, sendmsg, ControlMessage, MsgFlags, UnixAddr};
use nvdla_kmd::bo::{BoConfig, ClientId};
use nvdla_kmd::submit::{MemHandle, SubmitDesc, TaskDesc};
use nvdla_kmd::Kmd;
use nvdla_vp::mem::RamType;

use crate::hosted::failure_detail;
use crate::shm::SharedMem;
use crate::vp::{VpConfig, VpOs};
use crate::wire::{self, errno, FrameRead, Reply, Request, Stats, WireTask};

/// How a daemon is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonConfig {
    /// The hardware instances to serve, one model each; a client picks one by name in
    /// `HELLO`, the first is the default. Duplicates are ignored.
    pub configs: Vec<VpConfig>,
    /// Most clients connected at once; more are refused with `EBUSY`.
    pub max_clients: usize,
    /// Device-address window and buffer limits of each instance's driver.
    pub bo: BoConfig,
}

impl Default for DaemonConfig {
    /// One `nv_full` instance, 64 clients, the KMD's default buffer limits.
    fn default() -> Self {
        Self {
            configs: vec![VpConfig::NvFull],
            max_clients: 64,
            bo: BoConfig::default(),
        }
    }
}

/// One hardware instance: driver + firmware + model.
struct Instance {
    config: VpConfig,
    kmd: Mutex<Kmd<VpOs>>,
}

/// What the accept loop and the client threads share.
struct Shared {
    instances: Vec<Instance>,
    /// A clone of every live client's socket, to shut them down on exit.
    clients: Mutex<BTreeMap<u32, UnixStream>>,
    next_client: AtomicU32,
    /// Buffer mappings the daemon holds over all clients.
    mappings: AtomicU64,
    max_clients: usize,
}

/// A lock that survives a panicked holder: the daemon must keep serving other clients, and
/// the KMD's state stays consistent at every point a panic could occur (none is expected).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Stops a running [`Daemon`] from any thread.
#[derive(Clone)]
pub struct ShutdownHandle {
    flag: Arc<AtomicBool>,
    wake: Arc<UnixStream>,
}

impl ShutdownHandle {
    /// Asks the daemon to stop: it stops accepting, disconnects every client (a submit in
    /// progress completes first), frees their buffers, removes its socket and returns.
    pub fn shutdown(&self) {
        self.flag.store(true, Ordering::SeqCst);
        // The byte only wakes the poll; if the pipe is full the daemon is awake anyway.
        let _ = (&*self.wake).write(&[1]);
    }
}

/// A bound daemon, ready to [`run`](Daemon::run).
pub struct Daemon {
    listener: UnixListener,
    path: PathBuf,
    shared: Arc<Shared>,
    flag: Arc<AtomicBool>,
    wake_rx: UnixStream,
    wake_tx: Arc<UnixStream>,
    signals: Option<SignalFd>,
}

impl Daemon {
    /// Creates the hardware instances and listens on `path`.
    ///
    /// A stale socket file at `path` (nobody accepting on it) is replaced; a live one is
    /// `AddrInUse`; any other existing file is `AlreadyExists`.
    pub fn bind(path: impl AsRef<Path>, cfg: &DaemonConfig) -> io::Result<Daemon> {
        let path = path.as_ref().to_path_buf();
        let mut configs: Vec<VpConfig> = Vec::new();
        for c in &cfg.configs {
            if !configs.contains(c) {
                configs.push(*c);
            }
        }
        if configs.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no hardware configuration to serve",
            ));
        }
        let mut instances = Vec::new();
        for c in configs {
            let kmd = Kmd::new(VpOs::new(c), c.firmware(), cfg.bo)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("driver: {e}")))?;
            instances.push(Instance {
                config: c,
                kmd: Mutex::new(kmd),
            });
        }
        remove_stale_socket(&path)?;
        let listener = UnixListener::bind(&path)?;
        listener.set_nonblocking(true)?;
        let (wake_rx, wake_tx) = UnixStream::pair()?;
        wake_rx.set_nonblocking(true)?;
        wake_tx.set_nonblocking(true)?;
        Ok(Daemon {
            listener,
            path,
            shared: Arc::new(Shared {
                instances,
                clients: Mutex::new(BTreeMap::new()),
                next_client: AtomicU32::new(1),
                mappings: AtomicU64::new(0),
                max_clients: cfg.max_clients,
            }),
            flag: Arc::new(AtomicBool::new(false)),
            wake_rx,
            wake_tx: Arc::new(wake_tx),
            signals: None,
        })
    }

    /// Also stops when a signal of `signals` (blocked in every thread) arrives.
    pub fn stop_on_signals(mut self, signals: SignalFd) -> Self {
        self.signals = Some(signals);
        self
    }

    /// A handle that stops [`run`](Daemon::run).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            flag: self.flag.clone(),
            wake: self.wake_tx.clone(),
        }
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serves clients until shut down; then disconnects them, waits for their threads,
    /// and removes the socket file.
    pub fn run(mut self) -> io::Result<()> {
        let names: Vec<&str> = self
            .shared
            .instances
            .iter()
            .map(|i| i.config.name())
            .collect();
        log::info!(
            "daemon: serving {} on {}",
            names.join(", "),
            self.path.display()
        );
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        let result = self.accept_loop(&mut threads);
        // Disconnect everyone: a reading thread sees end of file, a submitting one fails
        // to send its reply; both then free their client's buffers and exit.
        for s in lock(&self.shared.clients).values() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        for t in threads {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
        log::info!("daemon: stopped");
        result
    }

    fn accept_loop(&mut self, threads: &mut Vec<JoinHandle<()>>) -> io::Result<()> {
        loop {
            if self.flag.load(Ordering::SeqCst) {
                return Ok(());
            }
            let mut fds = vec![
                PollFd::new(self.listener.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.wake_rx.as_fd(), PollFlags::POLLIN),
            ];
            if let Some(s) = &self.signals {
                fds.push(PollFd::new(s.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io::Error::from_raw_os_error(e as i32)),
            }
            let signalled = fds
                .get(2)
                .and_then(PollFd::revents)
                .is_some_and(|r| r.contains(PollFlags::POLLIN));
            drop(fds);
            if signalled {
                if let Some(Ok(Some(info))) = self.signals.as_ref().map(SignalFd::read_signal) {
                    log::info!("daemon: signal {}, shutting down", info.ssi_signo);
                }
                return Ok(());
            }
            let mut drain = [0u8; 16];
            while matches!((&self.wake_rx).read(&mut drain), Ok(n) if n > 0) {}
            threads.retain(|t| !t.is_finished());
            loop {
                match self.listener.accept() {
                    Ok((stream, _)) => {
                        if let Some(t) = self.admit(stream) {
                            threads.push(t);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // Out of descriptors and the like: refuse this one, keep serving.
                    Err(e) => {
                        log::warn!("daemon: accept: {e}");
                        break;
                    }
                }
            }
        }
    }

    /// Registers a new connection and starts its thread, or refuses it.
    fn admit(&self, stream: UnixStream) -> Option<JoinHandle<()>> {
        if stream.set_nonblocking(false).is_err() {
            return None;
        }
        let id = self.shared.next_client.fetch_add(1, Ordering::Relaxed);
        {
            let mut clients = lock(&self.shared.clients);
            if clients.len() >= self.shared.max_clients {
                drop(clients);
                log::warn!("daemon: refusing client {id}: too many clients");
                let _ = send_frame(
                    &stream,
                    &wire::encode_error(errno::EBUSY, "too many clients"),
                    None,
                );
                return None;
            }
            let clone = stream.try_clone().ok()?;
            clients.insert(id, clone);
        }
        let shared = self.shared.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("nvdla-client-{id}"))
            .spawn(move || Session::new(shared, ClientId(id)).run(stream));
        match spawned {
            Ok(t) => Some(t),
            Err(e) => {
                log::warn!("daemon: cannot start a thread for client {id}: {e}");
                lock(&self.shared.clients).remove(&id);
                None
            }
        }
    }
}

/// Replaces a stale socket file at `path`, refuses a live one or a non-socket.
fn remove_stale_socket(path: &Path) -> io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        ));
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("a daemon is already serving {}", path.display()),
        )),
        Err(_) => std::fs::remove_file(path),
    }
}

/// Sends one whole frame, with `fd` as `SCM_RIGHTS` on its first byte. `MSG_NOSIGNAL`: a
/// client that went away is an `EPIPE` error here, not a `SIGPIPE` for the daemon.
fn send_frame(sock: &UnixStream, frame: &[u8], fd: Option<BorrowedFd<'_>>) -> io::Result<()> {
    let raw = fd.map(|f| [f.as_raw_fd()]);
    let cmsgs: Vec<ControlMessage<'_>> = raw
        .as_ref()
        .map(|r| vec![ControlMessage::ScmRights(r)])
        .unwrap_or_default();
    let nix_io = |e: nix::Error| io::Error::from_raw_os_error(e as i32);
    let mut sent = loop {
        match sendmsg::<UnixAddr>(
            sock.as_raw_fd(),
            &[IoSlice::new(frame)],
            &cmsgs,
            MsgFlags::MSG_NOSIGNAL,
            None,
        ) {
            Err(nix::errno::Errno::EINTR) => continue,
            r => break r.map_err(nix_io)?,
        }
    };
    while sent < frame.len() {
        match send(sock.as_raw_fd(), &frame[sent..], MsgFlags::MSG_NOSIGNAL) {
            Ok(n) => sent += n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(nix_io(e)),
        }
    }
    Ok(())
}

/// A failed request: errno and explanation.
type Failure = (i32, String);

fn kmd_failure(e: nvdla_kmd::Error) -> Failure {
    (e.errno(), e.to_string())
}

/// A buffer's memfd as the daemon holds it (counted in [`Shared::mappings`]).
struct DaemonBuf {
    mem: SharedMem,
    shared: Arc<Shared>,
}

impl Drop for DaemonBuf {
    fn drop(&mut self) {
        self.shared.mappings.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One connected client.
struct Session {
    shared: Arc<Shared>,
    client: ClientId,
    /// Index into `shared.instances`, once `HELLO` chose one.
    instance: Option<usize>,
    bufs: BTreeMap<u32, DaemonBuf>,
}

impl Session {
    fn new(shared: Arc<Shared>, client: ClientId) -> Self {
        Self {
            shared,
            client,
            instance: None,
            bufs: BTreeMap::new(),
        }
    }

    fn run(mut self, stream: UnixStream) {
        let id = self.client.0;
        log::debug!("daemon: client {id} connected");
        let mut reader = &stream;
        let why = loop {
            match wire::read_frame(&mut reader) {
                Ok(FrameRead::Frame(code, payload)) => {
                    let outcome = match Request::decode(code, &payload) {
                        Ok(req) => self.handle(req),
                        Err(e) => {
                            log::debug!("daemon: client {id}: {e}");
                            Err((e.errno(), e.to_string()))
                        }
                    };
                    drop(payload);
                    let sent = match outcome {
                        Ok((reply, fd_of)) => {
                            let fd = fd_of.and_then(|h| self.bufs.get(&h)).map(|b| b.mem.fd());
                            send_frame(&stream, &reply.encode(), fd)
                        }
                        Err((errno, detail)) => {
                            send_frame(&stream, &wire::encode_error(errno, &detail), None)
                        }
                    };
                    if let Err(e) = sent {
                        break format!("reply failed: {e}");
                    }
                }
                Ok(FrameRead::Eof) => break "disconnected".into(),
                Ok(FrameRead::TooLarge(e)) => {
                    let _ = send_frame(
                        &stream,
                        &wire::encode_error(e.errno(), &e.to_string()),
                        None,
                    );
                    break format!("closed: {e}");
                }
                Err(e) => break format!("connection error: {e}"),
            }
        };
        self.close(&why);
        lock(&self.shared.clients).remove(&id);
    }

    /// Frees everything the client left behind.
    fn close(&mut self, why: &str) {
        let id = self.client.0;
        let n = self.bufs.len();
        if let Some(i) = self.instance {
            let mut kmd = lock(&self.shared.instances[i].kmd);
            self.bufs.clear();
            let busy = kmd.close_client(self.client);
            if busy > 0 {
                log::error!("daemon: client {id}: {busy} buffer(s) still in use at close");
            }
        }
        self.bufs.clear();
        log::debug!("daemon: client {id} {why}; freed {n} buffer(s)");
    }

    fn instance_index(&self) -> Result<usize, Failure> {
        self.instance
            .ok_or((errno::EPROTO, "HELLO must come first".into()))
    }

    fn instance(&self) -> Result<&Instance, Failure> {
        Ok(&self.shared.instances[self.instance_index()?])
    }

    /// Carries out one request: the reply, and the handle whose memfd goes with it.
    fn handle(&mut self, req: Request) -> Result<(Reply, Option<u32>), Failure> {
        match req {
            Request::Hello {
                magic,
                version,
                config,
            } => self.hello(magic, version, &config).map(|r| (r, None)),
            Request::GemCreate { size, flags } => {
                let inst = self.instance()?;
                let mut kmd = lock(&inst.kmd);
                let h = kmd
                    .gem_create(self.client, size, flags)
                    .map_err(kmd_failure)?;
                // The KMD bounded `size` (max_bo_size), so it fits in memory terms.
                let mem = usize::try_from(size)
                    .map_err(|_| io::Error::from_raw_os_error(errno::ENOMEM))
                    .and_then(|n| SharedMem::create(&format!("nvdla-bo-{h:?}"), n));
                let mem = match mem {
                    Ok(m) => m,
                    Err(e) => {
                        let _ = kmd.gem_destroy(self.client, h.get());
                        return Err((errno::ENOMEM, format!("shared memory: {e}")));
                    }
                };
                drop(kmd);
                self.shared.mappings.fetch_add(1, Ordering::Relaxed);
                let buf = DaemonBuf {
                    mem,
                    shared: self.shared.clone(),
                };
                self.bufs.insert(h.get(), buf);
                Ok((Reply::GemCreate { handle: h.get() }, None))
            }
            Request::GemMmap { handle } => {
                let inst = self.instance()?;
                let size = {
                    let kmd = lock(&inst.kmd);
                    kmd.gem_mmap(self.client, handle).map_err(kmd_failure)?;
                    kmd.bo(self.client, handle).map_err(kmd_failure)?.size
                };
                if !self.bufs.contains_key(&handle) {
                    return Err(kmd_failure(nvdla_kmd::Error::NoEntry));
                }
                Ok((Reply::GemMmap { size }, Some(handle)))
            }
            Request::GemDestroy { handle } => {
                let inst = self.instance()?;
                lock(&inst.kmd)
                    .gem_destroy(self.client, handle)
                    .map_err(kmd_failure)?;
                self.bufs.remove(&handle);
                Ok((Reply::GemDestroy, None))
            }
            Request::Submit {
                flags,
                version,
                tasks,
            } => self.submit(flags, version, &tasks).map(|r| (r, None)),
            Request::Stats => {
                let inst = self.instance()?;
                let kmd = lock(&inst.kmd);
                let client_buffers = kmd
                    .bos()
                    .iter()
                    .filter(|(_, b)| b.owner == self.client)
                    .count();
                let stats = Stats {
                    client_buffers: client_buffers as u64,
                    buffers: kmd.bos().len() as u64,
                    clients: lock(&self.shared.clients).len() as u64,
                    mappings: self.shared.mappings.load(Ordering::Relaxed),
                };
                Ok((Reply::Stats(stats), None))
            }
        }
    }

    fn hello(&mut self, magic: u32, version: u32, config: &str) -> Result<Reply, Failure> {
        if magic != wire::MAGIC {
            return Err((errno::EPROTO, format!("bad magic {magic:#010x}")));
        }
        if version != wire::VERSION {
            return Err((
                errno::EPROTO,
                format!(
                    "client speaks protocol version {version}, daemon {}",
                    wire::VERSION
                ),
            ));
        }
        if self.instance.is_some() {
            return Err((errno::EPROTO, "HELLO sent twice".into()));
        }
        let i = if config.is_empty() {
            0
        } else {
            let want: VpConfig = config.parse().map_err(|e| (errno::ENODEV, e))?;
            self.shared
                .instances
                .iter()
                .position(|i| i.config == want)
                .ok_or_else(|| {
                    let names: Vec<&str> = self
                        .shared
                        .instances
                        .iter()
                        .map(|i| i.config.name())
                        .collect();
                    (
                        errno::ENODEV,
                        format!("daemon serves {}, not {want}", names.join(", ")),
                    )
                })?
        };
        self.instance = Some(i);
        Ok(Reply::Hello {
            version: wire::VERSION,
            config: self.shared.instances[i].config.name().into(),
        })
    }

    fn submit(&mut self, flags: u16, version: u32, tasks: &[WireTask]) -> Result<Reply, Failure> {
        let shared = self.shared.clone();
        let inst = &shared.instances[self.instance_index()?];
        let lists: Vec<Vec<MemHandle>> = tasks
            .iter()
            .map(|t| t.addresses.iter().map(|&a| a.into()).collect())
            .collect();
        let descs: Vec<TaskDesc<'_>> = tasks
            .iter()
            .zip(&lists)
            .map(|(t, l)| TaskDesc {
                timeout: t.timeout,
                addresses: l,
            })
            .collect();
        let desc = SubmitDesc {
            flags,
            version,
            tasks: &descs,
        };
        let mut used: Vec<u32> = lists.iter().flatten().map(|a| a.handle).collect();
        used.sort_unstable();
        used.dedup();
        // Handles that are not this client's are left for the KMD to reject.
        used.retain(|h| self.bufs.contains_key(h));

        let mut kmd = lock(&inst.kmd);
        let io = |e| (errno::EIO, format!("device memory: {e:?}"));
        for &h in &used {
            let Ok(bo) = kmd.bo(self.client, h).copied() else {
                continue;
            };
            let mem = &mut kmd.os_mut().vp_mut().mem;
            mem.write(RamType::Dram, bo.iova.0, self.bufs[&h].mem.as_slice())
                .map_err(io)?;
        }
        let result = kmd.submit(self.client, &desc);
        for &h in &used {
            let Ok(bo) = kmd.bo(self.client, h).copied() else {
                continue;
            };
            let Some(buf) = self.bufs.get_mut(&h) else {
                continue;
            };
            let mem = &mut kmd.os_mut().vp_mut().mem;
            mem.read(RamType::Dram, bo.iova.0, buf.mem.as_mut_slice())
                .map_err(io)?;
        }
        match result {
            Ok(report) => Ok(Reply::Submit {
                tasks: u32::try_from(report.tasks).unwrap_or(u32::MAX),
                interrupts: report.interrupts,
            }),
            Err(failure) => Err((failure.error().errno(), failure_detail(&kmd, &failure))),
        }
    }
}

/// Runs a daemon on `path` until `SIGTERM`, `SIGINT` or `SIGHUP`, then shuts down cleanly
/// (see [`ShutdownHandle::shutdown`]).
///
/// Blocks those signals in the calling thread and receives them through a `signalfd`, so
/// call it before starting other threads (they inherit the mask; a thread that does not
/// block them would take the default action, ending the process without cleanup).
pub fn serve(path: impl AsRef<Path>, cfg: &DaemonConfig) -> io::Result<()> {
    let mut mask = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        mask.add(s);
    }
    let nix_io = |e: nix::Error| io::Error::from_raw_os_error(e as i32);
    mask.thread_block().map_err(nix_io)?;
    let fd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(nix_io)?;
    Daemon::bind(path, cfg)?.stop_on_signals(fd).run()
}
