//! `nvdla-vp serve --qemu-socket`: the hardware model behind QEMU's `mmio-sock-pci` bridge.
//!
//! QEMU's bridge device (`vp/qemu/mmio-sock-pci.c`) forwards every guest access to its BAR0
//! over a UNIX stream socket and turns our interrupt messages into MSIs (or the INTx level).
//! Here BAR0 is the NVDLA's CSB aperture: a BAR0 offset is a CSB byte address of the model.
//! The model's DRAM is the guest's RAM: QEMU backs it with a shared file
//! (`memory-backend-file,share=on`), and guest physical address `A` is at file offset
//! `A - ram_base`, so the model's DMA reads and writes guest memory directly. Protocol:
//! docs/kernel-module.md, "The bridge protocol".
//!
//! The model computes lazily: enabled work runs when something observes completion (the
//! interrupt line or GLB status). The guest cannot observe the line except through us, so
//! after every register access we observe it ([`Vp::irq_pending`]) and send `IRQ` on each
//! change of level; with MSI the device turns a rising edge into one message, so a done
//! interrupt that the model holds back until software clears the previous one (see
//! `Vp::raise`) arrives as its own MSI after that clearing write.
//!
//! Everything from the socket is untrusted: sizes, offsets and kinds are checked, and a
//! malformed message ends the connection with an error, never a panic.

use nvdla_vp::mem::Memory;
use nvdla_vp::{HwConfig, Vp};
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

// The wire format is shared with the device side (`nvdla_port::bridge`, the RTL backend).
use nvdla_port::bridge::{
    Msg, HELLO, IRQ, MSG_LEN, READ, READ_REPLY, RESET, RESET_DONE, VERSION, WRITE,
};

/// What `serve --qemu-socket` was asked to do.
#[derive(Debug, Clone)]
pub struct BridgeConfig {
    /// UNIX socket to listen on (QEMU's `-device mmio-sock-pci,socket=PATH`).
    pub socket: PathBuf,
    /// The guest RAM file (QEMU's `memory-backend-file,mem-path=FILE,share=on`).
    pub guest_ram: PathBuf,
    /// Guest physical address of the first byte of the file (`virt`: 0x4000_0000).
    pub ram_base: u64,
    /// The hardware configuration of the model.
    pub hw: HwConfig,
    /// Fault injection: after this many interrupts the model hangs ([`Vp::hang`]) until
    /// the driver resets it; once per connection.
    pub hang_after_irqs: Option<u64>,
}

/// Counters of one connection, printed when it ends.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    /// BAR0 reads.
    pub reads: u64,
    /// BAR0 writes.
    pub writes: u64,
    /// Device resets.
    pub resets: u64,
    /// Interrupt messages sent with level 1.
    pub irqs: u64,
}

/// Why the bridge stopped.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// Socket or file trouble.
    #[error("{what}: {err}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        err: std::io::Error,
    },
    /// The device sent something the protocol does not allow.
    #[error("protocol error: {0}")]
    Protocol(String),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BridgeError {
    let what = what.into();
    move |err| BridgeError::Io { what, err }
}

/// The device state of one connection.
struct Device {
    vp: Vp,
    bar0_size: u64,
    irq_level: bool,
    stats: Stats,
    /// Interrupts left before the injected hang, if one is armed.
    hang_in: Option<u64>,
}

impl Device {
    /// A BAR0 read of `len` bytes at `addr`; the CSB is 32-bit, so narrower reads take
    /// their bytes from the containing word and 8-byte reads are two CSB reads.
    fn read(&mut self, addr: u64, len: u32) -> u64 {
        match (len, u32::try_from(addr)) {
            (8, Ok(a)) if a % 4 == 0 => {
                let lo = self.vp.csb_read(a);
                let hi = a.checked_add(4).map_or(0, |a| self.vp.csb_read(a));
                u64::from(lo) | (u64::from(hi) << 32)
            }
            (1 | 2 | 4, Ok(a)) => {
                let word = self.vp.csb_read(a & !3);
                let shift = (a & 3) * 8;
                let mask = if len == 4 {
                    u32::MAX
                } else {
                    (1 << (len * 8)) - 1
                };
                u64::from((word >> shift) & mask)
            }
            _ => {
                log::warn!("bridge: BAR0 read of {len} bytes at {addr:#x} ignored");
                all_ones(len)
            }
        }
    }

    /// A BAR0 write. The CSB takes whole aligned words; anything else is logged and
    /// dropped (a register would otherwise see a partial value).
    fn write(&mut self, addr: u64, len: u32, value: u64) {
        match (len, u32::try_from(addr)) {
            (4, Ok(a)) if a % 4 == 0 => self.vp.csb_write(a, value as u32),
            (8, Ok(a)) if a % 4 == 0 => {
                self.vp.csb_write(a, value as u32);
                if let Some(hi) = a.checked_add(4) {
                    self.vp.csb_write(hi, (value >> 32) as u32);
                }
            }
            _ => log::warn!("bridge: BAR0 write of {len} bytes at {addr:#x} = {value:#x} dropped"),
        }
    }
}

fn all_ones(len: u32) -> u64 {
    match len {
        1..=7 => (1u64 << (len * 8)) - 1,
        _ => u64::MAX,
    }
}

/// Listens on `cfg.socket`, serves one QEMU connection until QEMU closes it, and returns
/// its counters.
pub fn serve(cfg: &BridgeConfig) -> Result<Stats, BridgeError> {
    remove_stale_socket(&cfg.socket)?;
    let listener =
        UnixListener::bind(&cfg.socket).map_err(io(format!("bind {}", cfg.socket.display())))?;
    log::info!("bridge: listening on {}", cfg.socket.display());
    let (stream, _) = listener.accept().map_err(io("accept"))?;
    drop(listener);
    let _ = std::fs::remove_file(&cfg.socket);
    serve_connection(stream, cfg)
}

/// A socket file left by an earlier run is replaced; any other file is an error.
fn remove_stale_socket(path: &Path) -> Result<(), BridgeError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(io(format!("remove {}", path.display())))
        }
        Ok(_) => Err(BridgeError::Io {
            what: format!("{}", path.display()),
            err: std::io::Error::new(std::io::ErrorKind::AlreadyExists, "exists, not a socket"),
        }),
        Err(_) => Ok(()),
    }
}

fn send(stream: &mut UnixStream, m: Msg) -> Result<(), BridgeError> {
    stream.write_all(&m.encode()).map_err(io("send"))
}

/// Serves one connection: messages until the device closes the socket.
pub fn serve_connection(mut stream: UnixStream, cfg: &BridgeConfig) -> Result<Stats, BridgeError> {
    let mut dev: Option<Device> = None;
    let mut buf = [0u8; MSG_LEN];
    loop {
        match stream.read_exact(&mut buf) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(io("receive")(e)),
        }
        let m = Msg::decode(&buf);
        if m.kind == HELLO {
            if m.addr != VERSION {
                return Err(BridgeError::Protocol(format!(
                    "device speaks protocol {}, this host {VERSION}",
                    m.addr
                )));
            }
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&cfg.guest_ram)
                .map_err(io(format!("guest RAM {}", cfg.guest_ram.display())))?;
            let mem = Memory::with_dram_file(file, cfg.ram_base, cfg.hw.hw.features.cvif)
                .map_err(io(format!("guest RAM {}", cfg.guest_ram.display())))?;
            let w = mem.dram_window();
            log::info!(
                "bridge: hello, protocol {}, BAR0 {:#x} bytes; {} model, DRAM = guest RAM \
                 [{:#x}, {:#x})",
                m.addr,
                m.value,
                cfg.hw,
                w.base,
                w.base.saturating_add(w.size)
            );
            let mut vp = Vp::new(cfg.hw);
            vp.mem = mem;
            dev = Some(Device {
                vp,
                bar0_size: m.value,
                irq_level: false,
                stats: Stats::default(),
                hang_in: cfg.hang_after_irqs,
            });
            continue;
        }
        let Some(d) = dev.as_mut() else {
            return Err(BridgeError::Protocol(format!(
                "message {:#x} before HELLO",
                m.kind
            )));
        };
        match m.kind {
            READ | WRITE => {
                let fits = matches!(m.len, 1 | 2 | 4 | 8)
                    && m.addr
                        .checked_add(u64::from(m.len))
                        .is_some_and(|end| end <= d.bar0_size);
                if m.kind == READ {
                    d.stats.reads += 1;
                    let value = if fits {
                        d.read(m.addr, m.len)
                    } else {
                        log::warn!(
                            "bridge: read of {} bytes at {:#x} outside BAR0",
                            m.len,
                            m.addr
                        );
                        all_ones(m.len)
                    };
                    log::trace!("bridge: read  {:#07x}/{} -> {value:#x}", m.addr, m.len);
                    send(
                        &mut stream,
                        Msg {
                            kind: READ_REPLY,
                            len: m.len,
                            addr: m.addr,
                            value,
                        },
                    )?;
                } else {
                    d.stats.writes += 1;
                    log::trace!("bridge: write {:#07x}/{} <- {:#x}", m.addr, m.len, m.value);
                    if fits {
                        d.write(m.addr, m.len, m.value);
                    } else {
                        log::warn!(
                            "bridge: write of {} bytes at {:#x} outside BAR0",
                            m.len,
                            m.addr
                        );
                    }
                }
                // Let the model run what the access enabled, and forward a change of the
                // interrupt line.
                let level = d.vp.irq_pending();
                if level != d.irq_level {
                    d.irq_level = level;
                    if level {
                        d.stats.irqs += 1;
                        if let Some(n) = d.hang_in {
                            d.hang_in = n.checked_sub(1).filter(|&left| left > 0);
                            if d.hang_in.is_none() {
                                d.vp.hang();
                            }
                        }
                    }
                    log::trace!("bridge: interrupt line {}", u8::from(level));
                    send(
                        &mut stream,
                        Msg {
                            kind: IRQ,
                            len: u32::from(level),
                            addr: 0,
                            value: 0,
                        },
                    )?;
                }
            }
            RESET => {
                d.vp.reset();
                d.stats.resets += 1;
                log::debug!("bridge: reset");
                if d.irq_level {
                    d.irq_level = false;
                    send(
                        &mut stream,
                        Msg {
                            kind: IRQ,
                            len: 0,
                            addr: 0,
                            value: 0,
                        },
                    )?;
                }
                send(
                    &mut stream,
                    Msg {
                        kind: RESET_DONE,
                        len: 0,
                        addr: 0,
                        value: 0,
                    },
                )?;
            }
            other => {
                return Err(BridgeError::Protocol(format!(
                    "unexpected message kind {other:#x}"
                )))
            }
        }
        if let Some(f) = d.vp.fault() {
            log::trace!("bridge: model fault: {}: {}", f.block, f.error);
        }
    }
    Ok(dev.map(|d| d.stats).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u32, len: u32, addr: u64, value: u64) -> [u8; MSG_LEN] {
        Msg {
            kind,
            len,
            addr,
            value,
        }
        .encode()
    }

    fn recv(s: &mut UnixStream) -> Msg {
        let mut b = [0; MSG_LEN];
        s.read_exact(&mut b).unwrap();
        Msg::decode(&b)
    }

    fn setup(name: &str) -> (BridgeConfig, PathBuf) {
        let ram = std::env::temp_dir().join(format!("nvdla-bridge-{name}-{}", std::process::id()));
        let f = std::fs::File::create(&ram).unwrap();
        f.set_len(1 << 20).unwrap();
        let cfg = BridgeConfig {
            socket: PathBuf::new(),
            guest_ram: ram.clone(),
            ram_base: 0x4000_0000,
            hw: HwConfig::new(&nvdla_vp::nvdla_hw::NV_FULL),
            hang_after_irqs: None,
        };
        (cfg, ram)
    }

    /// A BDMA copy inside guest RAM, programmed over the bridge, completes with an
    /// interrupt message and lands in the file.
    #[test]
    fn bdma_copy_over_the_bridge() {
        let (cfg, ram) = setup("bdma");
        std::fs::write(&ram, {
            let mut v = vec![0u8; 1 << 20];
            v[0x1000..0x1040].fill(0xab);
            v
        })
        .unwrap();
        let (mut dev, host) = UnixStream::pair().unwrap();
        let c = cfg.clone();
        let t = std::thread::spawn(move || serve_connection(host, &c).unwrap());
        dev.write_all(&msg(HELLO, 0, 1, 0x40000)).unwrap();
        dev.write_all(&msg(RESET, 0, 0, 0)).unwrap();
        assert_eq!(recv(&mut dev).kind, RESET_DONE);
        let vp = Vp::new(HwConfig::new(&nvdla_vp::nvdla_hw::NV_FULL));
        let reg = |b: &str, r: &str| u64::from(vp.lookup(b, r).unwrap());
        let w = |dev: &mut UnixStream, a: u64, v: u64| dev.write_all(&msg(WRITE, 4, a, v)).unwrap();
        w(&mut dev, reg("GLB", "S_INTR_MASK"), 0);
        w(&mut dev, reg("BDMA", "CFG_SRC_ADDR_LOW"), 0x4000_1000);
        w(&mut dev, reg("BDMA", "CFG_DST_ADDR_LOW"), 0x4000_2000);
        w(&mut dev, reg("BDMA", "CFG_LINE"), 1); // two 32-byte atoms
        w(&mut dev, reg("BDMA", "CFG_CMD"), 3); // both in DRAM
        w(&mut dev, reg("BDMA", "CFG_LINE_REPEAT"), 0);
        w(&mut dev, reg("BDMA", "CFG_SRC_LINE"), 0x40);
        w(&mut dev, reg("BDMA", "CFG_DST_LINE"), 0x40);
        w(&mut dev, reg("BDMA", "CFG_SURF_REPEAT"), 0);
        w(&mut dev, reg("BDMA", "CFG_SRC_SURF"), 0x40);
        w(&mut dev, reg("BDMA", "CFG_DST_SURF"), 0x40);
        w(&mut dev, reg("BDMA", "CFG_OP"), 1);
        w(&mut dev, reg("BDMA", "CFG_LAUNCH0"), 1);
        let irq = recv(&mut dev);
        assert_eq!((irq.kind, irq.len), (IRQ, 1));
        // Malformed accesses are answered, not fatal.
        dev.write_all(&msg(READ, 3, 0x10, 0)).unwrap();
        assert_eq!(recv(&mut dev).value, 0xff_ffff);
        dev.write_all(&msg(READ, 4, u64::MAX - 1, 0)).unwrap();
        assert_eq!(recv(&mut dev).value, 0xffff_ffff);
        drop(dev);
        let stats = t.join().unwrap();
        assert_eq!(stats.irqs, 1);
        let data = std::fs::read(&ram).unwrap();
        assert_eq!(data[0x2000..0x2040], [0xab; 0x40]);
        std::fs::remove_file(&ram).unwrap();
    }

    #[test]
    fn garbage_ends_the_connection_with_an_error() {
        let (cfg, ram) = setup("garbage");
        for first in [
            msg(READ, 4, 0, 0),
            msg(HELLO, 0, 7, 0),
            msg(0xdead, 1, 2, 3),
        ] {
            let (mut dev, host) = UnixStream::pair().unwrap();
            dev.write_all(&first).unwrap();
            drop(dev);
            let c = cfg.clone();
            assert!(serve_connection(host, &c).is_err());
        }
        let (mut dev, host) = UnixStream::pair().unwrap();
        dev.write_all(&msg(HELLO, 0, 1, 0x40000)).unwrap();
        dev.write_all(&msg(0x7f, 0, 0, 0)).unwrap();
        dev.write_all(&[1, 2, 3]).unwrap(); // a truncated message
        drop(dev);
        assert!(serve_connection(host, &cfg).is_err());
        std::fs::remove_file(&ram).unwrap();
    }

    /// `--hang-after-irqs 1`: the second copy never completes (no interrupt, no data)
    /// until the driver resets the device; then copies work again.
    #[test]
    fn injected_hang_lasts_until_reset() {
        let (mut cfg, ram) = setup("hang");
        cfg.hang_after_irqs = Some(1);
        std::fs::write(&ram, {
            let mut v = vec![0u8; 1 << 20];
            v[0x1000..0x1020].fill(0x5a);
            v
        })
        .unwrap();
        let (mut dev, host) = UnixStream::pair().unwrap();
        let c = cfg.clone();
        let t = std::thread::spawn(move || serve_connection(host, &c).unwrap());
        dev.write_all(&msg(HELLO, 0, 1, 0x40000)).unwrap();
        let vp = Vp::new(HwConfig::new(&nvdla_vp::nvdla_hw::NV_FULL));
        let reg = |b: &str, r: &str| u64::from(vp.lookup(b, r).unwrap());
        let copy = |dev: &mut UnixStream, dst: u64| {
            for (r, v) in [
                ("CFG_SRC_ADDR_LOW", 0x4000_1000),
                ("CFG_DST_ADDR_LOW", dst),
                ("CFG_LINE", 0),
                ("CFG_CMD", 3),
                ("CFG_OP", 1),
                ("CFG_LAUNCH0", 1),
            ] {
                dev.write_all(&msg(WRITE, 4, reg("BDMA", r), v)).unwrap();
            }
        };
        let status = reg("GLB", "S_INTR_STATUS");
        dev.write_all(&msg(WRITE, 4, reg("GLB", "S_INTR_MASK"), 0))
            .unwrap();
        copy(&mut dev, 0x4000_2000);
        assert_eq!(recv(&mut dev).len, 1, "first copy interrupts");
        dev.write_all(&msg(WRITE, 4, status, 0xffff_ffff)).unwrap();
        assert_eq!(recv(&mut dev).len, 0, "line drops after clearing");
        copy(&mut dev, 0x4000_3000);
        dev.write_all(&msg(READ, 4, status, 0)).unwrap();
        let r = recv(&mut dev);
        assert_eq!(
            (r.kind, r.value),
            (READ_REPLY, 0),
            "hung: no interrupt, no status"
        );
        dev.write_all(&msg(RESET, 0, 0, 0)).unwrap();
        assert_eq!(recv(&mut dev).kind, RESET_DONE);
        dev.write_all(&msg(WRITE, 4, reg("GLB", "S_INTR_MASK"), 0))
            .unwrap();
        copy(&mut dev, 0x4000_4000);
        assert_eq!(recv(&mut dev).len, 1, "works again after reset");
        drop(dev);
        let stats = t.join().unwrap();
        assert_eq!((stats.irqs, stats.resets), (2, 1));
        let data = std::fs::read(&ram).unwrap();
        assert_eq!(data[0x2000..0x2020], [0x5a; 0x20]);
        assert_eq!(data[0x3000..0x3020], [0; 0x20]);
        assert_eq!(data[0x4000..0x4020], [0x5a; 0x20]);
        std::fs::remove_file(&ram).unwrap();
    }
}
