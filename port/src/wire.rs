//! The daemon protocol: the four `opendla` ioctls as messages on a Unix stream socket.
//!
//! Every message is a frame: an 8-byte header — payload length (`u32`), then a code
//! (`u32`) — followed by the payload. All integers are little-endian. In a request the code
//! is the [`Op`]; in the reply it is `0` for success or the positive errno of the failure,
//! exactly what the ioctl would have returned. A client sends one request and reads its
//! reply before the next, so a reply needs no tag.
//!
//! | op | request payload | success payload |
//! |----|-----------------|-----------------|
//! | `HELLO` | magic `u32` = `"NVDL"`, version `u32`, config: `u16` length + UTF-8 (empty = the daemon's default) | version `u32`, config string |
//! | `GEM_CREATE` | size `u64`, flags `u32`, reserved `u32` | handle `u32` |
//! | `GEM_MMAP` | handle `u32`, reserved `u32` | size `u64`; the buffer's memfd rides along as `SCM_RIGHTS` |
//! | `GEM_DESTROY` | handle `u32` | — |
//! | `SUBMIT` | num_tasks `u16`, flags `u16`, version `u32`, then per task: num_addresses `u32`, timeout `u32`, then num_addresses × (handle `u32`, reserved `u32`, offset `u64`) | tasks `u32`, interrupts `u32` |
//! | `STATS` | — | client's buffers `u64`, all buffers `u64`, clients `u64`, daemon mappings `u64` |
//!
//! A failure's payload is the driver's explanation: `u32` length + UTF-8 (at most
//! [`MAX_DETAIL`] bytes), possibly empty.
//!
//! The field layout of `SUBMIT` is `struct nvdla_submit_args` / `nvdla_ioctl_submit_task` /
//! `nvdla_mem_handle` with the user pointers replaced by the arrays they point to, so the
//! daemon hands the KMD what the kernel would have copied in. Decoding only checks that
//! the counts fit the frame (which bounds every allocation by [`MAX_PAYLOAD`]); limits,
//! reserved fields and handles are the KMD's to reject, with the same errno as the ioctl.
//!
//! A frame longer than [`MAX_PAYLOAD`] is refused before anything is allocated for it (the
//! daemon replies `E2BIG` and closes the connection, as it cannot find the next frame).

use std::fmt;
use std::io::{self, Read};

use crate::uapi::NvdlaMemHandle;

/// `HELLO` magic: the bytes `"NVDL"`.
pub const MAGIC: u32 = u32::from_le_bytes(*b"NVDL");
/// Protocol version spoken by this crate.
pub const VERSION: u32 = 1;
/// Size of a frame header.
pub const HEADER_LEN: usize = 8;
/// Largest payload accepted (4 MiB): above the largest legal submit (24 tasks of 6144
/// addresses is 2.3 MiB).
pub const MAX_PAYLOAD: usize = 4 << 20;
/// Longest error explanation carried in a reply.
pub const MAX_DETAIL: usize = 4096;
/// Longest configuration name in `HELLO`.
pub const MAX_NAME: usize = 64;

/// Positive errno values used by the protocol itself.
pub mod errno {
    /// Malformed message.
    pub const EINVAL: i32 = 22;
    /// Message too long.
    pub const E2BIG: i32 = 7;
    /// Protocol error (wrong magic, version, or order).
    pub const EPROTO: i32 = 71;
    /// Unknown operation.
    pub const ENOSYS: i32 = 38;
    /// I/O error.
    pub const EIO: i32 = 5;
    /// Out of memory or descriptors.
    pub const ENOMEM: i32 = 12;
    /// Too many clients.
    pub const EBUSY: i32 = 16;
    /// No such device configuration.
    pub const ENODEV: i32 = 19;
}

/// A request's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Op {
    /// Opens the session: protocol version and hardware configuration.
    Hello = 1,
    /// `DRM_IOCTL_NVDLA_GEM_CREATE`.
    GemCreate = 2,
    /// `DRM_IOCTL_NVDLA_GEM_MMAP` (+ the `mmap`: the reply carries the memfd).
    GemMmap = 3,
    /// `DRM_IOCTL_NVDLA_GEM_DESTROY`.
    GemDestroy = 4,
    /// `DRM_IOCTL_NVDLA_SUBMIT`.
    Submit = 5,
    /// Buffer and client counts (for monitoring and leak tests).
    Stats = 6,
}

impl Op {
    /// The operation with code `code`.
    pub fn from_code(code: u32) -> Option<Op> {
        Some(match code {
            1 => Op::Hello,
            2 => Op::GemCreate,
            3 => Op::GemMmap,
            4 => Op::GemDestroy,
            5 => Op::Submit,
            6 => Op::Stats,
            _ => return None,
        })
    }
}

/// One task of a `SUBMIT` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireTask {
    /// Completion timeout (`SubmitTask::timeout`).
    pub timeout: u32,
    /// The address list (entry 0 is the network descriptor).
    pub addresses: Vec<NvdlaMemHandle>,
}

/// A request, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `HELLO`.
    Hello {
        /// Must be [`MAGIC`].
        magic: u32,
        /// The client's protocol version.
        version: u32,
        /// Hardware configuration wanted (`nv_full`, ...); empty for the daemon's default.
        config: String,
    },
    /// `GEM_CREATE`.
    GemCreate {
        /// Bytes.
        size: u64,
        /// Reserved, must be zero (the KMD rejects others).
        flags: u32,
    },
    /// `GEM_MMAP`.
    GemMmap {
        /// The buffer.
        handle: u32,
    },
    /// `GEM_DESTROY`.
    GemDestroy {
        /// The buffer.
        handle: u32,
    },
    /// `SUBMIT`.
    Submit {
        /// `SubmitArgs::flags`.
        flags: u16,
        /// `SubmitArgs::version`.
        version: u32,
        /// The tasks.
        tasks: Vec<WireTask>,
    },
    /// `STATS`.
    Stats,
}

/// Counts the daemon reports for `STATS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Live buffers of the asking client.
    pub client_buffers: u64,
    /// Live buffers of all clients on the client's device.
    pub buffers: u64,
    /// Connected clients.
    pub clients: u64,
    /// Shared-memory mappings the daemon holds (one per live buffer when nothing leaks).
    pub mappings: u64,
}

/// A successful reply, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `HELLO`.
    Hello {
        /// The daemon's protocol version.
        version: u32,
        /// The configuration the session drives.
        config: String,
    },
    /// `GEM_CREATE`.
    GemCreate {
        /// The new handle.
        handle: u32,
    },
    /// `GEM_MMAP` (the memfd travels beside the frame).
    GemMmap {
        /// The buffer's size.
        size: u64,
    },
    /// `GEM_DESTROY`.
    GemDestroy,
    /// `SUBMIT`.
    Submit {
        /// Tasks run.
        tasks: u32,
        /// Interrupts handled.
        interrupts: u32,
    },
    /// `STATS`.
    Stats(Stats),
}

/// Why a frame could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The payload ended inside a field.
    Truncated {
        /// What was being read.
        field: &'static str,
    },
    /// Bytes left after the last field.
    Trailing {
        /// How many.
        bytes: usize,
    },
    /// An unknown operation code.
    UnknownOp(u32),
    /// A frame longer than [`MAX_PAYLOAD`].
    TooLarge {
        /// Its announced payload length.
        len: u64,
    },
    /// A string that is not UTF-8 or too long.
    BadString {
        /// Which.
        field: &'static str,
    },
}

impl WireError {
    /// The errno a reply to this error carries.
    pub fn errno(&self) -> i32 {
        match self {
            WireError::TooLarge { .. } => errno::E2BIG,
            WireError::UnknownOp(_) => errno::ENOSYS,
            _ => errno::EINVAL,
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Truncated { field } => write!(f, "message truncated in {field}"),
            WireError::Trailing { bytes } => write!(f, "{bytes} unexpected byte(s) after message"),
            WireError::UnknownOp(c) => write!(f, "unknown operation {c}"),
            WireError::TooLarge { len } => {
                write!(
                    f,
                    "message of {len} bytes exceeds the limit of {MAX_PAYLOAD}"
                )
            }
            WireError::BadString { field } => write!(f, "{field}: not UTF-8 or too long"),
        }
    }
}

impl std::error::Error for WireError {}

/// A bounds-checked little-endian reader over a payload.
struct Rd<'a> {
    b: &'a [u8],
}

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], WireError> {
        if self.b.len() < n {
            return Err(WireError::Truncated { field });
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn u16(&mut self, field: &'static str) -> Result<u16, WireError> {
        let b = self.take(2, field)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, field: &'static str) -> Result<u32, WireError> {
        let b = self.take(4, field)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, field: &'static str) -> Result<u64, WireError> {
        let lo = u64::from(self.u32(field)?);
        let hi = u64::from(self.u32(field)?);
        Ok(lo | hi << 32)
    }
    fn str16(&mut self, field: &'static str, max: usize) -> Result<String, WireError> {
        let n = usize::from(self.u16(field)?);
        self.string(n, field, max)
    }
    fn str32(&mut self, field: &'static str, max: usize) -> Result<String, WireError> {
        let n = self.u32(field)? as usize;
        self.string(n, field, max)
    }
    fn string(&mut self, n: usize, field: &'static str, max: usize) -> Result<String, WireError> {
        if n > max {
            return Err(WireError::BadString { field });
        }
        let b = self.take(n, field)?;
        String::from_utf8(b.to_vec()).map_err(|_| WireError::BadString { field })
    }
    fn remaining(&self) -> usize {
        self.b.len()
    }
    fn end(self) -> Result<(), WireError> {
        match self.b.len() {
            0 => Ok(()),
            bytes => Err(WireError::Trailing { bytes }),
        }
    }
}

/// Builds a frame.
struct Wr {
    b: Vec<u8>,
}

impl Wr {
    fn new(code: u32) -> Self {
        let mut b = Vec::with_capacity(64);
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&code.to_le_bytes());
        Self { b }
    }
    fn u16(mut self, v: u16) -> Self {
        self.b.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.b.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.b.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// A string cut to `max` bytes at a character boundary, with a `u16` length.
    fn str16(self, s: &str, max: usize) -> Self {
        let s = clip(s, max.min(usize::from(u16::MAX)));
        let mut w = self.u16(s.len() as u16);
        w.b.extend_from_slice(s.as_bytes());
        w
    }
    fn str32(self, s: &str, max: usize) -> Self {
        let s = clip(s, max);
        let mut w = self.u32(s.len() as u32);
        w.b.extend_from_slice(s.as_bytes());
        w
    }
    fn finish(mut self) -> Vec<u8> {
        // Callers never build more than MAX_PAYLOAD (< 4 GiB), so the length fits.
        let len = (self.b.len() - HEADER_LEN) as u32;
        self.b[..4].copy_from_slice(&len.to_le_bytes());
        self.b
    }
}

fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Splits a frame header into (payload length, code); [`WireError::TooLarge`] when the
/// payload exceeds [`MAX_PAYLOAD`].
pub fn parse_header(h: &[u8; HEADER_LEN]) -> Result<(usize, u32), WireError> {
    let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
    let code = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    if len as usize > MAX_PAYLOAD {
        return Err(WireError::TooLarge {
            len: u64::from(len),
        });
    }
    Ok((len as usize, code))
}

/// What [`read_frame`] found.
#[derive(Debug)]
pub enum FrameRead {
    /// A whole frame: its code and payload.
    Frame(u32, Vec<u8>),
    /// The peer closed the connection between frames.
    Eof,
    /// The header announced too large a payload (nothing more was read).
    TooLarge(WireError),
}

/// Reads one frame; the payload allocation is bounded by [`MAX_PAYLOAD`].
///
/// An end of stream inside a frame is an `UnexpectedEof` error.
pub fn read_frame(r: &mut impl Read) -> io::Result<FrameRead> {
    let mut h = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        match r.read(&mut h[got..]) {
            Ok(0) if got == 0 => return Ok(FrameRead::Eof),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let (len, code) = match parse_header(&h) {
        Ok(v) => v,
        Err(e) => return Ok(FrameRead::TooLarge(e)),
    };
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)?;
    Ok(FrameRead::Frame(code, payload))
}

impl Request {
    /// The request's operation.
    pub fn op(&self) -> Op {
        match self {
            Request::Hello { .. } => Op::Hello,
            Request::GemCreate { .. } => Op::GemCreate,
            Request::GemMmap { .. } => Op::GemMmap,
            Request::GemDestroy { .. } => Op::GemDestroy,
            Request::Submit { .. } => Op::Submit,
            Request::Stats => Op::Stats,
        }
    }

    /// The whole frame.
    ///
    /// A `SUBMIT` whose encoding would exceed [`MAX_PAYLOAD`] is `TooLarge` (the daemon
    /// would refuse it anyway).
    pub fn encode(&self) -> Result<Vec<u8>, WireError> {
        let w = Wr::new(self.op() as u32);
        let frame = match self {
            Request::Hello {
                magic,
                version,
                config,
            } => w.u32(*magic).u32(*version).str16(config, MAX_NAME).finish(),
            Request::GemCreate { size, flags } => w.u64(*size).u32(*flags).u32(0).finish(),
            Request::GemMmap { handle } => w.u32(*handle).u32(0).finish(),
            Request::GemDestroy { handle } => w.u32(*handle).finish(),
            Request::Submit {
                flags,
                version,
                tasks,
            } => {
                let len = 8 + tasks
                    .iter()
                    .map(|t| 8 + 16 * t.addresses.len() as u64)
                    .sum::<u64>();
                if len > MAX_PAYLOAD as u64 || tasks.len() > usize::from(u16::MAX) {
                    return Err(WireError::TooLarge { len });
                }
                let mut w = w.u16(tasks.len() as u16).u16(*flags).u32(*version);
                for t in tasks {
                    w = w.u32(t.addresses.len() as u32).u32(t.timeout);
                    for a in &t.addresses {
                        w = w.u32(a.handle).u32(a.reserved).u64(a.offset);
                    }
                }
                w.finish()
            }
            Request::Stats => w.finish(),
        };
        Ok(frame)
    }

    /// Decodes the payload of a request with code `code`.
    pub fn decode(code: u32, payload: &[u8]) -> Result<Request, WireError> {
        let op = Op::from_code(code).ok_or(WireError::UnknownOp(code))?;
        let mut r = Rd { b: payload };
        let req = match op {
            Op::Hello => Request::Hello {
                magic: r.u32("magic")?,
                version: r.u32("version")?,
                config: r.str16("config", MAX_NAME)?,
            },
            Op::GemCreate => {
                let size = r.u64("size")?;
                let flags = r.u32("flags")?;
                // The reserved padding word is ignored, as the ioctl has none.
                r.u32("reserved")?;
                Request::GemCreate { size, flags }
            }
            Op::GemMmap => {
                let handle = r.u32("handle")?;
                r.u32("reserved")?;
                Request::GemMmap { handle }
            }
            Op::GemDestroy => Request::GemDestroy {
                handle: r.u32("handle")?,
            },
            Op::Submit => {
                let num_tasks = r.u16("num_tasks")?;
                let flags = r.u16("flags")?;
                let version = r.u32("version")?;
                // Each task takes at least 8 bytes: never reserve more than the frame holds.
                if usize::from(num_tasks) * 8 > r.remaining() {
                    return Err(WireError::Truncated { field: "tasks" });
                }
                let mut tasks = Vec::with_capacity(usize::from(num_tasks));
                for _ in 0..num_tasks {
                    let n = r.u32("num_addresses")? as usize;
                    let timeout = r.u32("timeout")?;
                    if n.saturating_mul(16) > r.remaining() {
                        return Err(WireError::Truncated {
                            field: "address_list",
                        });
                    }
                    let mut addresses = Vec::with_capacity(n);
                    for _ in 0..n {
                        addresses.push(NvdlaMemHandle {
                            handle: r.u32("handle")?,
                            reserved: r.u32("reserved")?,
                            offset: r.u64("offset")?,
                        });
                    }
                    tasks.push(WireTask { timeout, addresses });
                }
                Request::Submit {
                    flags,
                    version,
                    tasks,
                }
            }
            Op::Stats => Request::Stats,
        };
        r.end()?;
        Ok(req)
    }
}

impl Reply {
    /// The whole success frame.
    pub fn encode(&self) -> Vec<u8> {
        let w = Wr::new(0);
        match self {
            Reply::Hello { version, config } => w.u32(*version).str16(config, MAX_NAME),
            Reply::GemCreate { handle } => w.u32(*handle),
            Reply::GemMmap { size } => w.u64(*size),
            Reply::GemDestroy => w,
            Reply::Submit { tasks, interrupts } => w.u32(*tasks).u32(*interrupts),
            Reply::Stats(s) => w
                .u64(s.client_buffers)
                .u64(s.buffers)
                .u64(s.clients)
                .u64(s.mappings),
        }
        .finish()
    }

    /// Decodes the payload of a success reply to a request of `op`.
    pub fn decode(op: Op, payload: &[u8]) -> Result<Reply, WireError> {
        let mut r = Rd { b: payload };
        let rep = match op {
            Op::Hello => Reply::Hello {
                version: r.u32("version")?,
                config: r.str16("config", MAX_NAME)?,
            },
            Op::GemCreate => Reply::GemCreate {
                handle: r.u32("handle")?,
            },
            Op::GemMmap => Reply::GemMmap {
                size: r.u64("size")?,
            },
            Op::GemDestroy => Reply::GemDestroy,
            Op::Submit => Reply::Submit {
                tasks: r.u32("tasks")?,
                interrupts: r.u32("interrupts")?,
            },
            Op::Stats => Reply::Stats(Stats {
                client_buffers: r.u64("client_buffers")?,
                buffers: r.u64("buffers")?,
                clients: r.u64("clients")?,
                mappings: r.u64("mappings")?,
            }),
        };
        r.end()?;
        Ok(rep)
    }
}

/// A failure reply frame: positive `errno` (zero is turned into `EIO`) and explanation.
pub fn encode_error(errno: i32, detail: &str) -> Vec<u8> {
    let code = if errno > 0 {
        errno as u32
    } else {
        errno::EIO as u32
    };
    Wr::new(code).str32(detail, MAX_DETAIL).finish()
}

/// The explanation in a failure reply's payload (lossy: a malformed one is replaced by a
/// description of the problem).
pub fn decode_error(payload: &[u8]) -> String {
    let mut r = Rd { b: payload };
    match r.str32("detail", MAX_DETAIL) {
        Ok(s) => s,
        Err(e) => format!("(malformed error reply: {e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(frame: &[u8]) -> (u32, &[u8]) {
        let h: [u8; 8] = frame[..8].try_into().unwrap();
        let (len, code) = parse_header(&h).unwrap();
        assert_eq!(len, frame.len() - 8);
        (code, &frame[8..])
    }

    #[test]
    fn requests_round_trip() {
        let reqs = [
            Request::Hello {
                magic: MAGIC,
                version: VERSION,
                config: "nv_small".into(),
            },
            Request::GemCreate {
                size: 1 << 33,
                flags: 3,
            },
            Request::GemMmap { handle: 9 },
            Request::GemDestroy { handle: 7 },
            Request::Submit {
                flags: 1,
                version: 0,
                tasks: vec![
                    WireTask {
                        timeout: 100,
                        addresses: vec![
                            NvdlaMemHandle {
                                handle: 1,
                                reserved: 0,
                                offset: 0x40,
                            },
                            NvdlaMemHandle {
                                handle: 2,
                                reserved: 5,
                                offset: u64::MAX,
                            },
                        ],
                    },
                    WireTask {
                        timeout: u32::MAX,
                        addresses: vec![],
                    },
                ],
            },
            Request::Stats,
        ];
        for r in reqs {
            let f = r.encode().unwrap();
            let (code, p) = split(&f);
            assert_eq!(Request::decode(code, p).unwrap(), r);
        }
    }

    #[test]
    fn replies_round_trip() {
        let reps = [
            (
                Op::Hello,
                Reply::Hello {
                    version: 1,
                    config: "nv_full".into(),
                },
            ),
            (Op::GemCreate, Reply::GemCreate { handle: 3 }),
            (Op::GemMmap, Reply::GemMmap { size: 4097 }),
            (Op::GemDestroy, Reply::GemDestroy),
            (
                Op::Submit,
                Reply::Submit {
                    tasks: 1,
                    interrupts: 4,
                },
            ),
            (
                Op::Stats,
                Reply::Stats(Stats {
                    client_buffers: 1,
                    buffers: 2,
                    clients: 3,
                    mappings: 4,
                }),
            ),
        ];
        for (op, r) in reps {
            let f = r.encode();
            let (code, p) = split(&f);
            assert_eq!(code, 0);
            assert_eq!(Reply::decode(op, p).unwrap(), r);
        }
        let f = encode_error(2, "no such buffer");
        let (code, p) = split(&f);
        assert_eq!((code, decode_error(p).as_str()), (2, "no such buffer"));
        let long = "é".repeat(MAX_DETAIL);
        let f = encode_error(0, &long);
        let (code, p) = split(&f);
        assert_eq!(code, errno::EIO as u32);
        assert!(decode_error(p).len() <= MAX_DETAIL);
    }

    #[test]
    fn malformed_requests_are_errors() {
        assert_eq!(Request::decode(99, &[]), Err(WireError::UnknownOp(99)));
        assert_eq!(
            Request::decode(Op::GemCreate as u32, &[0; 15]),
            Err(WireError::Truncated { field: "reserved" })
        );
        assert_eq!(
            Request::decode(Op::GemDestroy as u32, &[0; 5]),
            Err(WireError::Trailing { bytes: 1 })
        );
        // A count that promises more than the frame holds is refused before allocation.
        let mut p = vec![0xff, 0xff, 0, 0, 0, 0, 0, 0];
        assert!(Request::decode(Op::Submit as u32, &p).is_err());
        p = vec![1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
        assert_eq!(
            Request::decode(Op::Submit as u32, &p),
            Err(WireError::Truncated {
                field: "address_list"
            })
        );
        // Bad UTF-8 and overlong names.
        let p = [b"NVDL".as_slice(), &[1, 0, 0, 0], &[2, 0], &[0xff, 0xfe]].concat();
        assert_eq!(
            Request::decode(Op::Hello as u32, &p),
            Err(WireError::BadString { field: "config" })
        );
        let p = [b"NVDL".as_slice(), &[1, 0, 0, 0], &[200, 0], &[b'a'; 200]].concat();
        assert!(Request::decode(Op::Hello as u32, &p).is_err());
    }

    #[test]
    fn oversized_frames_are_refused_unread() {
        let mut h = [0u8; 8];
        h[..4].copy_from_slice(&(MAX_PAYLOAD as u32 + 1).to_le_bytes());
        assert!(matches!(parse_header(&h), Err(WireError::TooLarge { .. })));
        let mut r = std::io::Cursor::new(h.to_vec());
        assert!(matches!(
            read_frame(&mut r).unwrap(),
            FrameRead::TooLarge(_)
        ));
        let mut r = std::io::Cursor::new(Vec::new());
        assert!(matches!(read_frame(&mut r).unwrap(), FrameRead::Eof));
        let mut r = std::io::Cursor::new(vec![1, 0, 0]);
        assert!(read_frame(&mut r).is_err());
    }

    #[test]
    fn largest_legal_submit_fits() {
        let tasks = (0..24)
            .map(|_| WireTask {
                timeout: 0,
                addresses: vec![NvdlaMemHandle::default(); 6144],
            })
            .collect();
        let f = Request::Submit {
            flags: 0,
            version: 0,
            tasks,
        }
        .encode()
        .unwrap();
        assert!(f.len() - HEADER_LEN <= MAX_PAYLOAD);
        let (code, p) = split(&f);
        assert!(Request::decode(code, p).is_ok());
    }
}
