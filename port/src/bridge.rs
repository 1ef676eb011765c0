//! The MMIO/DMA bridge protocol of QEMU's `mmio-sock` devices (docs/kernel-module.md, "The
//! bridge protocol"): the wire format both sides share, and [`BridgeClient`], the device side
//! (what QEMU's bridge does), with which the runtime drives hardware served over the protocol
//! (the RTL harness).
//!
//! One UNIX stream socket; every message is 24 little-endian bytes: `kind`, `len` (access
//! size; IRQ: level), `addr` (window offset; IRQ: vector), `value`.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// Device → host: first message; `addr` = protocol version, `value` = window size.
pub const HELLO: u32 = 0x01;
/// Device → host: read of `len` bytes at `addr`; answered by [`READ_REPLY`].
pub const READ: u32 = 0x02;
/// Device → host: posted write of `value` (`len` bytes) at `addr`.
pub const WRITE: u32 = 0x03;
/// Device → host: reset the device model; answered by [`RESET_DONE`].
pub const RESET: u32 = 0x04;
/// Host → device: `value` = the data read.
pub const READ_REPLY: u32 = 0x81;
/// Host → device: the model is in its reset state.
pub const RESET_DONE: u32 = 0x84;
/// Host → device: interrupt `addr` (vector) at `len` (level), at any time.
pub const IRQ: u32 = 0x85;
/// The protocol version both sides speak.
pub const VERSION: u64 = 1;
/// Every message is this long.
pub const MSG_LEN: usize = 24;

/// One bridge message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msg {
    /// What the message is ([`HELLO`], [`READ`], ...).
    pub kind: u32,
    /// Access size in bytes; IRQ: level.
    pub len: u32,
    /// Byte offset in the window; IRQ: vector.
    pub addr: u64,
    /// Data written or read; HELLO: window size.
    pub value: u64,
}

impl Msg {
    /// Decodes the wire form.
    pub fn decode(b: &[u8; MSG_LEN]) -> Self {
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | (u64::from(u32_at(o + 4)) << 32);
        Msg {
            kind: u32_at(0),
            len: u32_at(4),
            addr: u64_at(8),
            value: u64_at(16),
        }
    }

    /// The wire form.
    pub fn encode(&self) -> [u8; MSG_LEN] {
        let mut b = [0; MSG_LEN];
        b[0..4].copy_from_slice(&self.kind.to_le_bytes());
        b[4..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..16].copy_from_slice(&self.addr.to_le_bytes());
        b[16..24].copy_from_slice(&self.value.to_le_bytes());
        b
    }
}

/// The device side of a bridge connection: 32-bit register reads and writes in a window,
/// resets, and the interrupt line as the host last reported it.
#[derive(Debug)]
pub struct BridgeClient {
    stream: UnixStream,
    line: bool,
    irqs: u64,
}

fn protocol(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

impl BridgeClient {
    /// Connects to the host at `path` and announces a window of `window` bytes.
    pub fn connect(path: &Path, window: u64) -> io::Result<Self> {
        let stream = UnixStream::connect(path)?;
        let mut c = Self {
            stream,
            line: false,
            irqs: 0,
        };
        c.send(Msg {
            kind: HELLO,
            len: 0,
            addr: VERSION,
            value: window,
        })?;
        Ok(c)
    }

    fn send(&mut self, m: Msg) -> io::Result<()> {
        self.stream.write_all(&m.encode())
    }

    fn recv(&mut self) -> io::Result<Msg> {
        let mut b = [0u8; MSG_LEN];
        self.stream.read_exact(&mut b)?;
        Ok(Msg::decode(&b))
    }

    /// Receives until a message of kind `want`, taking IRQ messages on the way.
    fn expect(&mut self, want: u32) -> io::Result<Msg> {
        loop {
            let m = self.recv()?;
            match m.kind {
                IRQ => self.note_irq(m),
                k if k == want => return Ok(m),
                k => {
                    return Err(protocol(format!(
                        "bridge: expected message kind {want:#x}, got {k:#x}"
                    )))
                }
            }
        }
    }

    fn note_irq(&mut self, m: Msg) {
        let level = m.len != 0;
        if level && !self.line {
            self.irqs += 1;
        }
        self.line = level;
    }

    /// Reads the 32-bit register at byte offset `addr`.
    pub fn read32(&mut self, addr: u64) -> io::Result<u32> {
        self.send(Msg {
            kind: READ,
            len: 4,
            addr,
            value: 0,
        })?;
        let m = self.expect(READ_REPLY)?;
        // The value is 32 bits wide on a 4-byte read.
        Ok(m.value as u32)
    }

    /// Writes the 32-bit register at byte offset `addr` (posted).
    pub fn write32(&mut self, addr: u64, value: u32) -> io::Result<()> {
        self.send(Msg {
            kind: WRITE,
            len: 4,
            addr,
            value: u64::from(value),
        })
    }

    /// Resets the device model and waits until it is done.
    pub fn reset(&mut self) -> io::Result<()> {
        self.send(Msg {
            kind: RESET,
            len: 0,
            addr: 0,
            value: 0,
        })?;
        self.expect(RESET_DONE).map(|_| ())
    }

    /// Closes the connection (the host sees the end of the stream).
    pub fn shutdown(&self) -> io::Result<()> {
        self.stream.shutdown(std::net::Shutdown::Both)
    }

    /// The interrupt line as the host last reported it.
    pub fn line(&self) -> bool {
        self.line
    }

    /// Rising edges of the line the host reported so far.
    pub fn interrupts(&self) -> u64 {
        self.irqs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_little_endian() {
        let m = Msg {
            kind: READ,
            len: 4,
            addr: 0x3f008,
            value: 0x0102_0304_0506_0708,
        };
        let b = m.encode();
        assert_eq!(&b[0..4], &[2, 0, 0, 0]);
        assert_eq!(&b[8..12], &[0x08, 0xf0, 0x03, 0]);
        assert_eq!(b[16], 0x08);
        assert_eq!(Msg::decode(&b), m);
    }

    #[test]
    fn client_takes_interrupts_between_replies() {
        let (a, mut host) = UnixStream::pair().unwrap();
        let mut c = BridgeClient {
            stream: a,
            line: false,
            irqs: 0,
        };
        let t = std::thread::spawn(move || {
            let mut b = [0u8; MSG_LEN];
            host.read_exact(&mut b).unwrap();
            let req = Msg::decode(&b);
            assert_eq!((req.kind, req.addr), (READ, 0xc));
            for m in [
                Msg {
                    kind: IRQ,
                    len: 1,
                    addr: 0,
                    value: 0,
                },
                Msg {
                    kind: READ_REPLY,
                    len: 4,
                    addr: 0xc,
                    value: 0x10_0000,
                },
            ] {
                host.write_all(&m.encode()).unwrap();
            }
            // The next request is answered with a message of the wrong kind.
            host.read_exact(&mut b).unwrap();
            host.write_all(
                &Msg {
                    kind: RESET_DONE,
                    len: 0,
                    addr: 0,
                    value: 0,
                }
                .encode(),
            )
            .unwrap();
        });
        assert_eq!(c.read32(0xc).unwrap(), 0x10_0000);
        assert!(c.line());
        assert_eq!(c.interrupts(), 1);
        // A reply of the wrong kind is a protocol error, not a hang or a panic.
        let e = c.read32(0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        t.join().unwrap();
    }
}
