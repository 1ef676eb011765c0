//! NVIDIA's nv_small RTL as a device: our KMD and firmware in process, the register bus and
//! the interrupt line over the bridge protocol ([`crate::bridge`]) to the RTL harness
//! (`rtl/harness`, built by `scripts/build-rtl`: the Verilated `NV_nvdla` with an AXI memory
//! slave), and device memory in a RAM file both processes share.
//!
//! The harness runs its clock in lockstep with us: cycles pass only during register
//! transactions and while the KMD waits for the interrupt, so the cycle counts are the
//! hardware's own with an infinitely fast CPU, the same on every run. [`RtlOs`] times every
//! operation from its `D_OP_ENABLE` write to the done interrupt that names it
//! ([`crate::device::DeviceTimings`]).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nvdla_firmware::hw::DeviceAddr;
use nvdla_firmware::HwError;
use nvdla_hw::regs::{self, Unit};
use nvdla_hw::Generation;
use nvdla_kmd::bo::BoConfig;
use nvdla_kmd::{KmdOs, Wait};

use crate::bridge::BridgeClient;
use crate::device::{DeviceError, DeviceTimings, OpTiming, Operation};
use crate::hosted::{HostedDevice, HostedOs};

/// The harness's control page in the register window (rtl/harness/harness.cpp).
mod page {
    pub const BASE: u64 = 0x3f000;
    pub const MAGIC: u64 = BASE;
    pub const CYCLE_LO: u64 = BASE + 0x08;
    pub const CYCLE_HI: u64 = BASE + 0x0c;
    pub const MODE: u64 = BASE + 0x10;
    pub const WAIT_BUDGET: u64 = BASE + 0x14;
    pub const WAIT: u64 = BASE + 0x18;
    pub const MEM_FAULTS: u64 = BASE + 0x1c;
    pub const READ_BEATS: u64 = BASE + 0x20;
    pub const WRITE_BEATS: u64 = BASE + 0x24;
    pub const STALL_LIMIT: u64 = BASE + 0x2c;
    pub const MAGIC_VALUE: u32 = 0x5452_564e;
    /// Register window announced in HELLO (as QEMU's devices).
    pub const WINDOW: u64 = 0x40000;
}

/// Bytes per AXI beat on nv_small's DBB port (`NVDLA_PRIMARY_MEMIF_WIDTH` 64).
const BEAT_BYTES: u64 = 8;
/// Cycles one WAIT may run before we look at the wall clock (about half a second).
const WAIT_BUDGET: u32 = 1 << 16;
/// Cycles without an AXI handshake, with reads outstanding, after which the bus is stuck.
const STALL_LIMIT: u32 = 1 << 18;

/// How to start the harness.
#[derive(Debug, Clone)]
pub struct RtlLaunch {
    /// The harness program (`scripts/build-rtl` prints its path).
    pub harness: PathBuf,
    /// AXI read latency in cycles (the harness's default when `None`).
    pub latency: Option<u32>,
    /// Extra `-v` flags for the harness's log on stderr.
    pub verbose: u8,
}

impl RtlLaunch {
    /// The harness at `harness`, with the log level `NVDLA_RTL_VERBOSE` asks (0 to 3: 1
    /// connections and summaries, 2 every register access and interrupt, 3 every AXI
    /// request) and the read latency `NVDLA_RTL_LATENCY` gives.
    pub fn new(harness: PathBuf) -> Self {
        let num = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
        Self {
            harness,
            latency: num("NVDLA_RTL_LATENCY"),
            verbose: num("NVDLA_RTL_VERBOSE").map_or(0, |v| v.min(3) as u8),
        }
    }

    /// The harness named by `NVDLA_RTL_HARNESS`, else the newest one `scripts/build-rtl`
    /// left in its cache (`$NVDLA_CACHE` or `~/.cache/nvdla-rs`, `rtl/nv_small-*/`); see
    /// [`RtlLaunch::new`].
    pub fn from_env() -> io::Result<Self> {
        if let Some(p) = std::env::var_os("NVDLA_RTL_HARNESS").filter(|p| !p.is_empty()) {
            return Ok(Self::new(PathBuf::from(p)));
        }
        cached_harness().map(Self::new).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "no RTL harness: build it with scripts/build-rtl (it prints the path; set \
                 NVDLA_RTL_HARNESS to it, or use --device rtl:PATH)",
            )
        })
    }
}

/// The newest harness in `scripts/build-rtl`'s cache.
fn cached_harness() -> Option<PathBuf> {
    let cache = std::env::var_os("NVDLA_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(|c| PathBuf::from(c).join("nvdla-rs"))
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/nvdla-rs"))
                })
        })?;
    std::fs::read_dir(cache.join("rtl"))
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("nv_small-"))
        .map(|e| e.path().join("nvdla-rtl-harness"))
        .filter(|p| p.is_file())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
}

/// The engines whose done interrupts end an operation, by the unit whose `D_OP_ENABLE`
/// starts it. A convolution starts when CDMA is enabled (the firmware enables it last,
/// after CACC, CMAC and CSC) and ends with CACC's done.
const ENGINES: [(Unit, &str); 5] = [
    (Unit::Cdma, "conv"),
    (Unit::Sdp, "sdp"),
    (Unit::Pdp, "pdp"),
    (Unit::Cdp, "cdp"),
    (Unit::Rubik, "rubik"),
];

/// GLB `S_INTR_STATUS` bits (v2) of each engine's done, per group.
fn done_bits(engine: &str) -> Option<[u32; 2]> {
    use nvdla_hw::regs::v2::glb::S_INTR_STATUS as S;
    Some(match engine {
        "conv" => [
            S::CACC_DONE_STATUS0.val(1).value,
            S::CACC_DONE_STATUS1.val(1).value,
        ],
        "sdp" => [
            S::SDP_DONE_STATUS0.val(1).value,
            S::SDP_DONE_STATUS1.val(1).value,
        ],
        "pdp" => [
            S::PDP_DONE_STATUS0.val(1).value,
            S::PDP_DONE_STATUS1.val(1).value,
        ],
        "cdp" => [
            S::CDP_DONE_STATUS0.val(1).value,
            S::CDP_DONE_STATUS1.val(1).value,
        ],
        "rubik" => [
            S::RUBIK_DONE_STATUS0.val(1).value,
            S::RUBIK_DONE_STATUS1.val(1).value,
        ],
        _ => return None,
    })
}

/// What the operations of the current submit did, as they happen.
#[derive(Debug, Default)]
struct Profiler {
    /// The producer group of each unit (`S_POINTER` bit 0), by [`Unit::ALL`] index.
    producer: [u8; 18],
    ops: Vec<OpTiming>,
    first_cycle: Option<u64>,
    last_irq: u64,
    /// Done bits already attributed and not yet cleared.
    seen: u32,
    beats_at_start: (u32, u32),
}

/// A running RTL harness: the simulator process, the bridge connection to it in lockstep
/// mode, and the RAM file it answers the DBB port from. Dropping it ends the process.
pub struct RtlHarness {
    client: BridgeClient,
    ram: File,
    ram_base: u64,
    ram_size: u64,
    child: Child,
    dir: PathBuf,
}

/// What a lockstep wait for the interrupt line ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineWait {
    /// The line is high.
    Raised,
    /// The cycle budget of one wait passed with the line low.
    Budget,
    /// The memory bus stalled (reads outstanding, no AXI handshake for a long time).
    Stalled,
}

/// [`KmdOs`] over the RTL harness.
pub struct RtlOs {
    hw: RtlHarness,
    clock: Instant,
    profiler: Profiler,
    /// Why the last wait found no interrupt coming.
    hang: Option<String>,
}

fn unreachable(offset: u32) -> impl FnOnce(io::Error) -> HwError {
    move |e| {
        log::error!("rtl: harness connection failed: {e}");
        HwError::Unreachable { offset }
    }
}

fn mem_io(addr: DeviceAddr, len: usize) -> impl FnOnce(io::Error) -> HwError {
    move |e| {
        log::error!("rtl: RAM file access failed: {e}");
        HwError::MemoryFault { addr, len }
    }
}

fn unit_index(u: Unit) -> usize {
    Unit::ALL.iter().position(|x| *x == u).unwrap_or(0)
}

/// The unit and register name of CSB byte address `addr` on v2.
fn reg_at(addr: u32) -> Option<(Unit, &'static str)> {
    let (unit, off) = regs::decode(Generation::V2, addr)?;
    let desc = regs::units(Generation::V2)
        .iter()
        .find(|u| u.unit == unit)?;
    let r = desc.regs.iter().find(|r| r.offset == off)?;
    Some((unit, r.name))
}

impl RtlHarness {
    /// Starts the harness with a RAM file of `ram_size` bytes at device address `ram_base`
    /// and connects to it, with the clock in lockstep with the caller.
    pub fn launch(cfg: &RtlLaunch, ram_base: u64, ram_size: u64) -> io::Result<Self> {
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let shm = Path::new("/dev/shm");
        let tmp = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let dir = tmp.join(format!("nvdla-rtl-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let ram_path = dir.join("ram");
        let sock = dir.join("sock");
        let ram = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&ram_path)?;
        ram.set_len(ram_size)?;
        let mut cmd = Command::new(&cfg.harness);
        cmd.arg("--socket")
            .arg(&sock)
            .arg("--ram")
            .arg(&ram_path)
            .arg("--ram-base")
            .arg(format!("{ram_base:#x}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        // The harness prints its diagnostics on stderr, ours.
        if let Some(l) = cfg.latency {
            cmd.arg("--latency").arg(l.to_string());
        }
        for _ in 0..cfg.verbose {
            cmd.arg("-v");
        }
        // Harness options for experiments (e.g. `--read-order interleave`).
        if let Ok(extra) = std::env::var("NVDLA_RTL_ARGS") {
            cmd.args(extra.split_whitespace());
        }
        let mut child = cmd.spawn().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot start the RTL harness {}: {e}",
                    cfg.harness.display()
                ),
            )
        })?;
        let started = Instant::now();
        let client = loop {
            if let Some(status) = child.try_wait()? {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(io::Error::other(format!(
                    "the RTL harness exited before listening ({status})"
                )));
            }
            if sock.exists() {
                if let Ok(c) = BridgeClient::connect(&sock, page::WINDOW) {
                    break c;
                }
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                let _ = std::fs::remove_dir_all(&dir);
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the RTL harness did not listen within 60 s",
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let mut os = Self {
            client,
            ram,
            ram_base,
            ram_size,
            child,
            dir,
        };
        let magic = os.client.read32(page::MAGIC)?;
        if magic != page::MAGIC_VALUE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not an RTL harness (control page reads {magic:#x})"),
            ));
        }
        os.client.write32(page::MODE, 1)?;
        os.client.write32(page::WAIT_BUDGET, WAIT_BUDGET)?;
        os.client.write32(page::STALL_LIMIT, STALL_LIMIT)?;
        log::info!(
            "rtl: harness {} started in {} ms",
            cfg.harness.display(),
            started.elapsed().as_millis()
        );
        Ok(os)
    }

    /// The harness's clock: cycles since it started.
    pub fn cycle(&mut self) -> io::Result<u64> {
        let lo = self.client.read32(page::CYCLE_LO)?;
        let hi = self.client.read32(page::CYCLE_HI)?;
        Ok(u64::from(hi) << 32 | u64::from(lo))
    }

    /// AXI read and write beats so far (low 32 bits, wrapping).
    pub fn beats(&mut self) -> io::Result<(u32, u32)> {
        Ok((
            self.client.read32(page::READ_BEATS)?,
            self.client.read32(page::WRITE_BEATS)?,
        ))
    }

    /// DMA accesses outside the RAM file so far.
    pub fn mem_faults(&mut self) -> io::Result<u32> {
        self.client.read32(page::MEM_FAULTS)
    }

    /// Reads the CSB register at byte offset `offset`.
    pub fn csb_read(&mut self, offset: u32) -> io::Result<u32> {
        self.client.read32(u64::from(offset))
    }

    /// Writes the CSB register at byte offset `offset`.
    pub fn csb_write(&mut self, offset: u32, value: u32) -> io::Result<()> {
        self.client.write32(u64::from(offset), value)
    }

    /// Runs the clock until the interrupt line is high, for at most one wait's budget.
    pub fn wait_line(&mut self) -> io::Result<LineWait> {
        Ok(match self.client.read32(page::WAIT)? {
            1 => LineWait::Raised,
            2 => LineWait::Stalled,
            _ => LineWait::Budget,
        })
    }

    /// Resets the accelerator (memory untouched).
    pub fn reset(&mut self) -> io::Result<()> {
        self.client.reset()
    }

    fn offset_of(&self, addr: u64, len: usize) -> io::Result<u64> {
        match addr.checked_sub(self.ram_base) {
            Some(o)
                if o.checked_add(len as u64)
                    .is_some_and(|end| end <= self.ram_size) =>
            {
                Ok(o)
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{len} bytes at {addr:#x} are outside the RTL's memory ({:#x}+{:#x})",
                    self.ram_base, self.ram_size
                ),
            )),
        }
    }

    /// Reads device memory (the RAM file) at device address `addr`.
    pub fn mem_read(&self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        let off = self.offset_of(addr, buf.len())?;
        self.ram.read_exact_at(buf, off)
    }

    /// Writes device memory at device address `addr`.
    pub fn mem_write(&self, addr: u64, data: &[u8]) -> io::Result<()> {
        let off = self.offset_of(addr, data.len())?;
        self.ram.write_all_at(data, off)
    }
}

impl RtlOs {
    /// Starts the harness (see [`RtlHarness::launch`]).
    pub fn launch(cfg: &RtlLaunch, ram_base: u64, ram_size: u64) -> io::Result<Self> {
        Ok(Self {
            hw: RtlHarness::launch(cfg, ram_base, ram_size)?,
            clock: Instant::now(),
            profiler: Profiler::default(),
            hang: None,
        })
    }

    /// The harness.
    pub fn harness(&mut self) -> &mut RtlHarness {
        &mut self.hw
    }

    fn cycle(&mut self) -> io::Result<u64> {
        self.hw.cycle()
    }

    /// Starts timing at the first register access of a submit.
    fn begin(&mut self) -> io::Result<()> {
        if self.profiler.first_cycle.is_none() {
            self.profiler.first_cycle = Some(self.cycle()?);
            self.profiler.beats_at_start = self.hw.beats()?;
        }
        Ok(())
    }

    fn after_write(&mut self, offset: u32, value: u32) -> io::Result<()> {
        let Some((unit, name)) = reg_at(offset) else {
            return Ok(());
        };
        match name {
            "S_POINTER" => self.profiler.producer[unit_index(unit)] = (value & 1) as u8,
            "D_OP_ENABLE" if value & 1 == 1 => {
                if let Some(&(_, engine)) = ENGINES.iter().find(|(u, _)| *u == unit) {
                    let enabled = self.cycle()?;
                    let group = self.profiler.producer[unit_index(unit)];
                    self.profiler.ops.push(OpTiming {
                        engine,
                        group,
                        enabled,
                        done: None,
                        cost: None,
                    });
                }
            }
            // Write-one-to-clear: cleared done bits may be attributed again.
            "S_INTR_STATUS" if unit == Unit::Glb => self.profiler.seen &= !value,
            _ => {}
        }
        Ok(())
    }

    fn after_read(&mut self, offset: u32, value: u32) {
        if reg_at(offset) != Some((Unit::Glb, "S_INTR_STATUS")) {
            return;
        }
        let new = value & !self.profiler.seen;
        self.profiler.seen |= value;
        for &(_, engine) in &ENGINES {
            let Some(bits) = done_bits(engine) else {
                continue;
            };
            for (group, bit) in bits.into_iter().enumerate() {
                if new & bit == 0 {
                    continue;
                }
                let at = self.profiler.last_irq;
                if let Some(op) = self.profiler.ops.iter_mut().find(|o| {
                    o.engine == engine && usize::from(o.group) == group && o.done.is_none()
                }) {
                    op.done = Some(at);
                }
            }
        }
    }
}

impl Drop for RtlHarness {
    fn drop(&mut self) {
        // Closing the connection ends the harness; give it a moment, then make sure.
        let _ = self.client.shutdown();
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl KmdOs for RtlOs {
    fn reg_read(&mut self, offset: u32) -> Result<u32, HwError> {
        if !offset.is_multiple_of(4) {
            return Err(HwError::UnalignedRegister { offset });
        }
        self.begin().map_err(unreachable(offset))?;
        let v = self.hw.csb_read(offset).map_err(unreachable(offset))?;
        self.after_read(offset, v);
        Ok(v)
    }

    fn reg_write(&mut self, offset: u32, value: u32) -> Result<(), HwError> {
        if !offset.is_multiple_of(4) {
            return Err(HwError::UnalignedRegister { offset });
        }
        self.begin().map_err(unreachable(offset))?;
        self.hw
            .csb_write(offset, value)
            .map_err(unreachable(offset))?;
        self.after_write(offset, value).map_err(unreachable(offset))
    }

    fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError> {
        let len = buf.len();
        self.hw.mem_read(addr.0, buf).map_err(mem_io(addr, len))
    }

    fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError> {
        self.hw
            .mem_write(addr.0, data)
            .map_err(mem_io(addr, data.len()))
    }

    fn now_ms(&mut self) -> u64 {
        u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn wait_for_interrupt(&mut self, deadline_ms: Option<u64>) -> Wait {
        loop {
            let r = match self.hw.wait_line() {
                Ok(r) => r,
                Err(e) => {
                    self.hang = Some(format!("RTL harness connection failed: {e}"));
                    return Wait::TimedOut;
                }
            };
            match r {
                LineWait::Raised => {
                    self.hang = None;
                    match self.cycle() {
                        Ok(c) => self.profiler.last_irq = c,
                        Err(e) => log::error!("rtl: cannot read the cycle counter: {e}"),
                    }
                    return Wait::Interrupt;
                }
                LineWait::Stalled => {
                    let cycle = self.cycle().unwrap_or(0);
                    let why = format!(
                        "RTL: hung at cycle {cycle} (no AXI handshake for {STALL_LIMIT} cycles \
                         with reads outstanding, or no activity at all for 16 times as long; \
                         the harness's log has the state)"
                    );
                    log::error!("{why}");
                    self.hang = Some(why);
                    return Wait::TimedOut;
                }
                LineWait::Budget => {}
            }
            if deadline_ms.is_some_and(|d| self.now_ms() >= d) {
                let cycle = self.cycle().unwrap_or(0);
                self.hang = Some(format!("RTL: no interrupt by cycle {cycle}"));
                return Wait::TimedOut;
            }
        }
    }

    fn reset(&mut self) {
        if let Err(e) = self.hw.reset() {
            log::error!("rtl: reset failed: {e}");
        }
        self.profiler.producer = [0; 18];
        self.profiler.seen = 0;
    }
}

impl HostedOs for RtlOs {
    fn diagnosis(&self, _failure: &nvdla_kmd::SubmitFailure) -> Option<String> {
        self.hang.clone()
    }

    fn take_timings(&mut self) -> Option<DeviceTimings> {
        let p = std::mem::take(&mut self.profiler);
        self.profiler.producer = p.producer;
        let first = p.first_cycle?;
        let end = p
            .ops
            .iter()
            .filter_map(|o| o.done)
            .max()
            .unwrap_or(p.last_irq)
            .max(p.last_irq);
        let (r, w) = self.hw.beats().unwrap_or(p.beats_at_start);
        let faults = self.hw.mem_faults().unwrap_or(0);
        if faults > 0 {
            log::warn!("rtl: {faults} AXI access(es) outside device memory so far");
        }
        Some(DeviceTimings {
            ops: p.ops,
            total_cycles: end.saturating_sub(first),
            bytes_read: u64::from(r.wrapping_sub(p.beats_at_start.0)) * BEAT_BYTES,
            bytes_written: u64::from(w.wrapping_sub(p.beats_at_start.1)) * BEAT_BYTES,
            modelled: false,
        })
    }
}

/// NVIDIA's nv_small RTL behind the harness, with our KMD and firmware, as a
/// [`crate::device::Device`].
pub type RtlDevice = HostedDevice<RtlOs>;

impl HostedDevice<RtlOs> {
    /// Starts the harness `cfg` and opens it as build `build` (the RTL is nv_small's).
    pub fn launch(cfg: &RtlLaunch, build: nvdla_hw::Build) -> Result<Self, DeviceError> {
        let hw = build.hw();
        if hw.name != nvdla_hw::NV_SMALL.name {
            return Err(
                DeviceError::new(Operation::Submit, nvdla_kmd::Error::Invalid).with_detail(
                    format!(
                        "the RTL is nv_small's; --config {} is another build",
                        hw.name
                    ),
                ),
            );
        }
        let bo = BoConfig::default();
        let os = RtlOs::launch(cfg, bo.iova_base, bo.iova_size).map_err(|e| {
            DeviceError::new(Operation::Submit, nvdla_kmd::Error::Io).with_detail(e.to_string())
        })?;
        // Silicon firmware: nv_small computes int8 only.
        Self::with_os(os, nvdla_firmware::HwConfig::new(hw), bo)
    }
}
