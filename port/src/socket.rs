//! The socket backend: a [`Device`] whose driver is a KMD daemon ([`crate::daemon`]) at the
//! other end of a Unix socket.
//!
//! Each [`Device`] call is one request of [`crate::wire`] and its reply. Buffers are the
//! daemon's memfds: the first [`Device::map_buffer`] of a buffer asks for its memfd
//! (`GEM_MMAP`, the descriptor arrives as `SCM_RIGHTS`) and maps it; the mapping is kept
//! until the buffer is destroyed, so tensor data is never copied through the socket. A
//! submit blocks until the daemon has run it. Errors carry the daemon's errno and
//! explanation; a broken connection is `EIO` (or the socket's errno) with the cause.
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::io::{self, IoSliceMut, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;

use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags, UnixAddr};

use crate::device::{BufferHandle, Device, DeviceError, Operation, Task};
use crate::shm::SharedMem;
use crate::wire::{self, errno, Reply, Request, Stats, WireTask, HEADER_LEN};

/// Why a connection to the daemon could not be set up.
#[derive(Debug)]
pub enum ConnectError {
    /// The socket could not be reached.
    Io(io::Error),
    /// The daemon refused the session (wrong version, unknown configuration, too many
    /// clients, ...).
    Refused {
        /// Its errno.
        errno: i32,
        /// Its explanation.
        detail: String,
    },
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Io(e) => write!(f, "{e}"),
            ConnectError::Refused { errno, detail } => {
                write!(f, "daemon refused the session (errno {errno}): {detail}")
            }
        }
    }
}

impl std::error::Error for ConnectError {}

/// A failed exchange with the daemon.
enum CallError {
    /// The daemon answered with an error.
    Driver(i32, String),
    /// The connection or the reply was broken.
    Link(io::Error),
}

struct Buffer {
    size: u64,
    map: Option<SharedMem>,
}

/// A device reached through a KMD daemon's socket.
pub struct SocketDevice {
    stream: UnixStream,
    config: String,
    buffers: BTreeMap<u32, Buffer>,
    /// Set when the connection broke: every later call fails at once.
    broken: bool,
}

impl std::fmt::Debug for SocketDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SocketDevice")
            .field("config", &self.config)
            .field("buffers", &self.buffers.len())
            .finish()
    }
}

impl SocketDevice {
    /// Connects to the daemon at `path` and opens a session on hardware configuration
    /// `config` (`nv_full`, ...), or on the daemon's default with `None`.
    pub fn connect(path: impl AsRef<Path>, config: Option<&str>) -> Result<Self, ConnectError> {
        let stream = UnixStream::connect(path).map_err(ConnectError::Io)?;
        let mut dev = SocketDevice {
            stream,
            config: String::new(),
            buffers: BTreeMap::new(),
            broken: false,
        };
        let hello = Request::Hello {
            magic: wire::MAGIC,
            version: wire::VERSION,
            config: config.unwrap_or("").into(),
        };
        match dev.call(&hello) {
            Ok((Reply::Hello { config, .. }, _)) => {
                dev.config = config;
                Ok(dev)
            }
            Ok(_) => Err(ConnectError::Io(protocol("unexpected reply to HELLO"))),
            Err(CallError::Driver(errno, detail)) => Err(ConnectError::Refused { errno, detail }),
            Err(CallError::Link(e)) => Err(ConnectError::Io(e)),
        }
    }

    /// The hardware configuration the daemon runs this session on.
    pub fn config(&self) -> &str {
        &self.config
    }

    /// The daemon's buffer and client counts.
    pub fn stats(&mut self) -> Result<Stats, DeviceError> {
        match self.call(&Request::Stats) {
            Ok((Reply::Stats(s), _)) => Ok(s),
            Ok(_) => Err(link_error(Operation::Submit, protocol("unexpected reply"))),
            Err(e) => Err(device_error(Operation::Submit, e)),
        }
    }

    /// Sends `req` and reads its reply (and any descriptors that came with it).
    fn call(&mut self, req: &Request) -> Result<(Reply, Vec<OwnedFd>), CallError> {
        if self.broken {
            return Err(CallError::Link(io::Error::new(
                io::ErrorKind::NotConnected,
                "connection to the daemon was lost earlier",
            )));
        }
        let r = self.exchange(req);
        if matches!(r, Err(CallError::Link(_))) {
            self.broken = true;
        }
        r
    }

    fn exchange(&mut self, req: &Request) -> Result<(Reply, Vec<OwnedFd>), CallError> {
        let frame = req
            .encode()
            .map_err(|e| CallError::Driver(e.errno(), e.to_string()))?;
        if let Err(write_err) = self.stream.write_all(&frame) {
            // The daemon may have answered and hung up before reading the request (it refuses
            // a client over its limit that way): its reason is still in our receive buffer.
            return match self.read_reply(req) {
                Err(CallError::Driver(errno, detail)) => Err(CallError::Driver(errno, detail)),
                _ => Err(CallError::Link(write_err)),
            };
        }
        self.read_reply(req)
    }

    /// Reads the reply to `req`: a frame header, then its payload.
    fn read_reply(&mut self, req: &Request) -> Result<(Reply, Vec<OwnedFd>), CallError> {
        let mut fds = Vec::new();
        let mut header = [0u8; HEADER_LEN];
        self.recv_exact(&mut header, &mut fds)
            .map_err(CallError::Link)?;
        let (len, code) =
            wire::parse_header(&header).map_err(|e| CallError::Link(protocol(&e.to_string())))?;
        let mut payload = vec![0u8; len];
        self.recv_exact(&mut payload, &mut fds)
            .map_err(CallError::Link)?;
        if code != 0 {
            let errno = i32::try_from(code).unwrap_or(errno::EIO);
            return Err(CallError::Driver(errno, wire::decode_error(&payload)));
        }
        let reply = Reply::decode(req.op(), &payload)
            .map_err(|e| CallError::Link(protocol(&e.to_string())))?;
        Ok((reply, fds))
    }

    /// Fills `buf` from the socket, collecting any descriptors passed alongside.
    fn recv_exact(&mut self, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<()> {
        let mut got = 0;
        while got < buf.len() {
            let mut cmsg = nix::cmsg_space!([std::os::fd::RawFd; 4]);
            let mut iov = [IoSliceMut::new(&mut buf[got..])];
            let msg = match recvmsg::<UnixAddr>(
                self.stream.as_raw_fd(),
                &mut iov,
                Some(&mut cmsg),
                MsgFlags::MSG_CMSG_CLOEXEC,
            ) {
                Ok(m) => m,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io::Error::from_raw_os_error(e as i32)),
            };
            if msg.bytes == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the daemon closed the connection",
                ));
            }
            got += msg.bytes;
            if let Ok(cmsgs) = msg.cmsgs() {
                for c in cmsgs {
                    if let ControlMessageOwned::ScmRights(raw) = c {
                        for r in raw {
                            // SAFETY: the kernel just installed `r` in this process for this
                            // message; nothing else refers to it, so we own it.
                            fds.push(unsafe { OwnedFd::from_raw_fd(r) });
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn protocol(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("daemon protocol: {what}"),
    )
}

fn link_error(op: Operation, e: io::Error) -> DeviceError {
    DeviceError::from_errno(op, e.raw_os_error().unwrap_or(errno::EIO))
        .with_detail(format!("daemon connection: {e}"))
}

fn device_error(op: Operation, e: CallError) -> DeviceError {
    match e {
        CallError::Driver(errno, detail) if detail.is_empty() => DeviceError::from_errno(op, errno),
        CallError::Driver(errno, detail) => DeviceError::from_errno(op, errno).with_detail(detail),
        CallError::Link(e) => link_error(op, e),
    }
}

impl Device for SocketDevice {
    fn create_buffer(&mut self, size: u64) -> Result<BufferHandle, DeviceError> {
        let op = Operation::CreateBuffer;
        match self.call(&Request::GemCreate { size, flags: 0 }) {
            Ok((Reply::GemCreate { handle }, _)) => {
                let h = BufferHandle::new(handle)
                    .ok_or_else(|| link_error(op, protocol("daemon returned handle 0")))?;
                self.buffers.insert(handle, Buffer { size, map: None });
                Ok(h)
            }
            Ok(_) => Err(link_error(op, protocol("unexpected reply"))),
            Err(e) => Err(device_error(op, e)),
        }
    }

    fn map_buffer(&mut self, handle: BufferHandle) -> Result<&mut [u8], DeviceError> {
        let op = Operation::MapBuffer;
        let size = match self.buffers.get(&handle.get()) {
            Some(b) if b.map.is_some() => None,
            Some(b) => Some(b.size),
            // Not ours: let the daemon say so (ENOENT), as the ioctl would.
            None => Some(0),
        };
        if let Some(size) = size {
            let (reply, mut fds) = self
                .call(&Request::GemMmap {
                    handle: handle.get(),
                })
                .map_err(|e| device_error(op, e))?;
            let Reply::GemMmap { size: daemon_size } = reply else {
                return Err(link_error(op, protocol("unexpected reply")));
            };
            if size == 0 || daemon_size != size || fds.len() != 1 {
                return Err(link_error(
                    op,
                    protocol(&format!(
                        "GEM_MMAP of {handle}: {} descriptor(s), size {daemon_size} (expected {size})",
                        fds.len()
                    )),
                ));
            }
            let len =
                usize::try_from(size).map_err(|_| DeviceError::from_errno(op, errno::ENOMEM))?;
            let fd = fds.remove(0);
            let map = SharedMem::from_fd(fd, len).map_err(|e| link_error(op, e))?;
            if let Some(b) = self.buffers.get_mut(&handle.get()) {
                b.map = Some(map);
            }
        }
        self.buffers
            .get_mut(&handle.get())
            .and_then(|b| b.map.as_mut())
            .map(SharedMem::as_mut_slice)
            .ok_or_else(|| DeviceError::from_errno(op, 2))
    }

    fn destroy_buffer(&mut self, handle: BufferHandle) -> Result<(), DeviceError> {
        let op = Operation::DestroyBuffer;
        match self.call(&Request::GemDestroy {
            handle: handle.get(),
        }) {
            Ok((Reply::GemDestroy, _)) => {
                self.buffers.remove(&handle.get());
                Ok(())
            }
            Ok(_) => Err(link_error(op, protocol("unexpected reply"))),
            Err(e) => Err(device_error(op, e)),
        }
    }

    fn submit(&mut self, tasks: &[Task<'_>]) -> Result<(), DeviceError> {
        let op = Operation::Submit;
        let req = Request::Submit {
            flags: 0,
            version: 0,
            tasks: tasks
                .iter()
                .map(|t| WireTask {
                    timeout: t.timeout.to_uapi(),
                    addresses: t.addresses.iter().map(|a| a.to_uapi()).collect(),
                })
                .collect(),
        };
        match self.call(&req) {
            Ok((Reply::Submit { tasks, interrupts }, _)) => {
                log::debug!("socket: submit done: {tasks} task(s), {interrupts} interrupt(s)");
                Ok(())
            }
            Ok(_) => Err(link_error(op, protocol("unexpected reply"))),
            Err(e) => Err(device_error(op, e)),
        }
    }
}

impl Drop for SocketDevice {
    fn drop(&mut self) {
        // Closing the connection frees every buffer on the daemon's side; unmap ours.
        self.buffers.clear();
    }
}
