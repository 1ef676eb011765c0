//! The in-process backend: our KMD and firmware driving the virtual platform's hardware
//! model, all in the runtime's process.
//!
//! GEM buffers live in the model's DRAM at the device addresses the KMD gives them (so a
//! device address in a descriptor is a DRAM address, as on a board without an IOMMU). The
//! model's DRAM is sparse and not addressable as one host slice, so each buffer also has a
//! host copy that [`Device::map_buffer`] hands out; [`VpDevice::submit`] writes the host
//! copies of the buffers a submit names into DRAM before it runs and reads them back after
//! (those the host may have changed, and those the model wrote: `Memory::track_writes`),
//! which gives exactly the visibility the [`Device`] contract asks of a mapping.
//!
//! The model computes synchronously: a layer runs when the firmware observes the interrupt
//! line. So when the line is low and no enabled work can make progress, no interrupt will
//! ever come, and [`KmdOs::wait_for_interrupt`] says so at once instead of sleeping until
//! the task's deadline. If an engine faulted (programming it refuses, a DMA outside memory)
//! that is [`Wait::Fault`], and the submit fails with the fault's errno (`EINVAL`, `EFAULT`,
//! `EIO`) and the fault named first; otherwise it is a hang, reported as the timeout it
//! would be on silicon (`ETIMEDOUT`). Either error also names the blocks that were enabled
//! but could not run.

use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use nvdla_firmware::hw::DeviceAddr;
use nvdla_firmware::HwError;
use nvdla_kmd::bo::BoConfig;
use nvdla_kmd::{HwFault, HwFaultKind, KmdOs, Wait};
use nvdla_vp::mem::RamType;
use nvdla_vp::Vp;

use crate::device::{DeviceError, DeviceTimings, OpCost, OpTiming, Operation};
use crate::hosted::{HostedDevice, HostedOs};

/// The hardware configurations the model implements: every published build
/// ([`nvdla_hw::ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum VpConfig {
    /// NVDLA v1, full configuration.
    #[default]
    NvFull,
    /// NVDLA v2, large configuration.
    NvLarge,
    /// NVDLA v2, medium configuration with 1024 MACs and every SDP unit and CV-SRAM.
    NvMedium1024Full,
    /// NVDLA v2, medium configuration with 512 MACs.
    NvMedium512,
    /// NVDLA v2, small configuration (int8 only, no SRAM, BDMA or RUBIK).
    NvSmall,
    /// NVDLA v2, small configuration with 256 MACs.
    NvSmall256,
    /// NVDLA v2, small configuration with 256 MACs, every SDP unit and CV-SRAM.
    NvSmall256Full,
}

impl VpConfig {
    /// Every configuration, in [`nvdla_hw::ALL`]'s order.
    pub const ALL: [VpConfig; 7] = [
        VpConfig::NvFull,
        VpConfig::NvLarge,
        VpConfig::NvMedium1024Full,
        VpConfig::NvMedium512,
        VpConfig::NvSmall,
        VpConfig::NvSmall256,
        VpConfig::NvSmall256Full,
    ];

    /// The build's parameters.
    pub const fn hw(self) -> &'static nvdla_hw::Config {
        match self {
            VpConfig::NvFull => &nvdla_hw::NV_FULL,
            VpConfig::NvLarge => &nvdla_hw::NV_LARGE,
            VpConfig::NvMedium1024Full => &nvdla_hw::NV_MEDIUM_1024_FULL,
            VpConfig::NvMedium512 => &nvdla_hw::NV_MEDIUM_512,
            VpConfig::NvSmall => &nvdla_hw::NV_SMALL,
            VpConfig::NvSmall256 => &nvdla_hw::NV_SMALL_256,
            VpConfig::NvSmall256Full => &nvdla_hw::NV_SMALL_256_FULL,
        }
    }

    /// The name used on command lines and in trace paths.
    pub const fn name(self) -> &'static str {
        self.hw().name
    }

    /// The firmware's configuration for the model of this build: the build's features,
    /// except that precisions follow what the model computes (the model, like NVIDIA's C
    /// model, computes int16/fp16 on the int8-only v2 builds; silicon would not, and the
    /// firmware driving silicon refuses such networks).
    pub(crate) fn firmware(self) -> nvdla_firmware::HwConfig {
        let model = self.model().precisions;
        nvdla_firmware::HwConfig {
            model_wide_precision: model.int16 && model.fp16,
            ..nvdla_firmware::HwConfig::new(self.hw())
        }
    }

    fn model(self) -> nvdla_vp::HwConfig {
        nvdla_vp::HwConfig::new(self.hw())
    }
}

/// The build a configuration models ([`crate::Build`], the runtime's `--config`).
impl From<VpConfig> for nvdla_hw::Build {
    fn from(c: VpConfig) -> Self {
        nvdla_hw::Build::ALL[c as usize]
    }
}

/// The model of a build: every published build has one.
impl From<nvdla_hw::Build> for VpConfig {
    fn from(b: nvdla_hw::Build) -> Self {
        VpConfig::ALL[b as usize]
    }
}

impl fmt::Display for VpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for VpConfig {
    type Err = String;
    /// A build by name, upstream's `opendla-*` aliases included.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hw = nvdla_hw::Config::by_name(s);
        VpConfig::ALL
            .into_iter()
            .find(|c| Some(c.hw()) == hw)
            .ok_or_else(|| {
                let names: Vec<&str> = nvdla_hw::Config::names().collect();
                format!(
                    "unknown config '{s}' (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// One hardware-visible event of a recorded run ([`VpDevice::start_recording`]): what a
/// register-level testbench needs to replay it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The host made `bytes` at device address `addr` visible to the engines (buffer
    /// contents that differ from what the model's memory held, written before a task).
    Load {
        /// Device address of the first byte.
        addr: u64,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// A CSB register write (byte offset).
    RegWrite {
        /// Byte offset of the register.
        offset: u32,
        /// Value written.
        value: u32,
    },
    /// A CSB register read and the value it returned.
    RegRead {
        /// Byte offset of the register.
        offset: u32,
        /// Value read.
        value: u32,
    },
    /// The driver waited for the NVDLA interrupt, and it came.
    Interrupt,
}

/// [`KmdOs`] over the hardware model: registers are its CSB, device memory its DRAM.
pub struct VpOs {
    vp: Vp,
    config: VpConfig,
    clock: Instant,
    /// Why the last wait found no interrupt coming (for the error message).
    hang: Option<String>,
    /// The events of a recorded run, while recording.
    record: Option<Vec<Recorded>>,
    /// Hazards already reported (the model keeps them all).
    hazards_reported: usize,
    /// Report the cycle model's timeline ([`HostedOs::take_timings`]).
    profile: bool,
    /// Model cycle of the first register access since the timeline was last taken.
    first_cycle: Option<u64>,
    /// Model cycle of the last interrupt.
    last_irq: u64,
}

impl VpOs {
    /// A model of `config` at reset.
    pub fn new(config: VpConfig) -> Self {
        Self {
            vp: Vp::new(config.model()),
            config,
            clock: Instant::now(),
            hang: None,
            record: None,
            hazards_reported: 0,
            profile: false,
            first_cycle: None,
            last_irq: 0,
        }
    }

    fn begin(&mut self) {
        if self.first_cycle.is_none() {
            self.first_cycle = Some(self.vp.timing().now());
        }
    }

    fn note(&mut self, event: Recorded) {
        if let Some(r) = &mut self.record {
            r.push(event);
        }
    }

    /// The hardware model.
    pub fn vp(&self) -> &Vp {
        &self.vp
    }

    /// The hardware model, mutable (e.g. to load memory directly in tests).
    pub fn vp_mut(&mut self) -> &mut Vp {
        &mut self.vp
    }

    /// The model's account of the last wait that found no interrupt coming.
    pub fn last_hang(&self) -> Option<&str> {
        self.hang.as_deref()
    }
}

fn fault(addr: DeviceAddr, len: usize) -> HwError {
    HwError::MemoryFault { addr, len }
}

impl KmdOs for VpOs {
    fn reg_read(&mut self, offset: u32) -> Result<u32, HwError> {
        if !offset.is_multiple_of(4) {
            return Err(HwError::UnalignedRegister { offset });
        }
        self.begin();
        let value = self.vp.csb_read(offset);
        self.note(Recorded::RegRead { offset, value });
        Ok(value)
    }

    fn reg_write(&mut self, offset: u32, value: u32) -> Result<(), HwError> {
        if !offset.is_multiple_of(4) {
            return Err(HwError::UnalignedRegister { offset });
        }
        self.begin();
        self.vp.csb_write(offset, value);
        self.note(Recorded::RegWrite { offset, value });
        Ok(())
    }

    fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError> {
        let len = buf.len();
        self.vp
            .mem
            .read(RamType::Dram, addr.0, buf)
            .map_err(|_| fault(addr, len))
    }

    fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError> {
        self.vp
            .mem
            .write(RamType::Dram, addr.0, data)
            .map_err(|_| fault(addr, data.len()))
    }

    fn now_ms(&mut self) -> u64 {
        u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn wait_for_interrupt(&mut self, _deadline_ms: Option<u64>) -> Wait {
        // Observing the line lets the model run every enabled layer whose inputs are
        // ready; if it is still low, nothing enabled can ever complete.
        let line = self.vp.irq_pending();
        // Two operations that silicon would overlap touched the same memory: on a board
        // (or the RTL) the result would depend on timing. The model's own result is
        // right, but the network is not: fail it (docs/rtl.md, "The hazard check").
        if let Some(h) = self.vp.hazards().get(self.hazards_reported) {
            self.hazards_reported = self.vp.hazards().len();
            let detail = h.to_string();
            log::error!("vp: {detail}");
            self.hang = None;
            return Wait::Fault(HwFault {
                kind: HwFaultKind::Other,
                detail,
            });
        }
        if line {
            self.hang = None;
            self.last_irq = self.vp.timing().now();
            self.note(Recorded::Interrupt);
            return Wait::Interrupt;
        }
        let stuck = self.vp.pending_blocks();
        let why = if stuck.is_empty() {
            String::from("hardware idle, no interrupt pending")
        } else {
            let names: Vec<String> = stuck.iter().map(|b| b.to_string()).collect();
            format!("hardware: enabled but cannot run: {}", names.join(", "))
        };
        if let Some(f) = self.vp.fault() {
            use nvdla_vp::engines::EngineError;
            let kind = match f.error {
                EngineError::Config { .. } => HwFaultKind::InvalidProgramming,
                EngineError::Mem(_) => HwFaultKind::Memory,
                EngineError::Unsupported { .. } => HwFaultKind::Other,
            };
            let detail = format!("engine fault in {}: {}; {why}", f.block, f.error);
            log::error!("vp: {detail}");
            self.hang = None;
            return Wait::Fault(HwFault { kind, detail });
        }
        log::error!("vp: no interrupt will arrive ({why})");
        self.hang = Some(why);
        Wait::TimedOut
    }

    fn reset(&mut self) {
        // A fresh model with the old memory: registers, groups, interrupts and faults at
        // their reset values, memory untouched (as the NVDLA's reset leaves DRAM alone).
        let mem = std::mem::replace(&mut self.vp.mem, Vp::new(self.config.model()).mem);
        // The clock runs on through a reset.
        let fresh = Vp::new(self.config.model());
        let mut old = std::mem::replace(&mut self.vp, fresh);
        self.vp.mem = mem;
        std::mem::swap(self.vp.timing_mut(), old.timing_mut());
        self.hazards_reported = 0;
    }
}

impl HostedOs for VpOs {
    fn logs_writes(&self) -> bool {
        true
    }

    fn start_write_log(&mut self) {
        self.vp.mem.track_writes();
    }

    fn take_write_log(&mut self) -> Option<Vec<(u64, u64)>> {
        // Host buffers live in DRAM (CV-SRAM buffers have no host copy).
        let w = self.vp.mem.take_writes()?;
        Some(
            w.iter()
                .filter(|a| a.ram == RamType::Dram)
                .map(|a| (a.start, a.end))
                .collect(),
        )
    }

    fn before_load(&mut self, addr: u64, bytes: &[u8]) {
        if self.record.is_none() {
            return;
        }
        let mut held = vec![0u8; bytes.len()];
        // Memory the model cannot read counts as changed; the write that follows reports
        // the fault.
        let _ = self.vp.mem.read(RamType::Dram, addr, &mut held);
        for (start, end) in changed_ranges(&held, bytes) {
            self.note(Recorded::Load {
                addr: addr + start as u64,
                bytes: bytes[start..end].to_vec(),
            });
        }
    }

    /// The model's account of a hang.
    fn diagnosis(&self, failure: &nvdla_kmd::SubmitFailure) -> Option<String> {
        let hang = self.last_hang()?;
        matches!(failure.error(), nvdla_kmd::Error::TimedOut).then(|| hang.to_string())
    }

    /// The cycle model's timeline of the submit (with profiling on): one entry per
    /// operation in the order the firmware enabled it, `done` when software saw its done
    /// interrupt, as the RTL reports them.
    fn take_timings(&mut self) -> Option<DeviceTimings> {
        let mut ops = self.vp.timing_mut().take_ops();
        let first = self.first_cycle.take();
        if !self.profile {
            return None;
        }
        let first = first?;
        ops.sort_by_key(|o| o.enabled);
        let end = ops
            .iter()
            .map(|o| o.seen.unwrap_or(o.end))
            .max()
            .unwrap_or(self.last_irq)
            .max(self.last_irq);
        let (mut read, mut written) = (0, 0);
        let ops = ops
            .into_iter()
            .map(|o| {
                read += o.dram_read + o.sram_read;
                written += o.dram_write + o.sram_write;
                OpTiming {
                    engine: o.track.name(),
                    group: o.group as u8,
                    enabled: o.enabled,
                    done: Some(o.seen.unwrap_or(o.end)),
                    cost: Some(OpCost {
                        start: o.start,
                        end: o.end,
                        shape: o.shape,
                        macs: o.macs,
                        peak_macs_per_cycle: o.peak_macs_per_cycle,
                        compute_cycles: o.compute_cycles,
                        memory_cycles: o.memory_cycles,
                        dram_bytes: o.dram_read + o.dram_write,
                        sram_bytes: o.sram_read + o.sram_write,
                        pole: o.pole.name(),
                    }),
                }
            })
            .collect();
        Some(DeviceTimings {
            ops,
            total_cycles: end.saturating_sub(first),
            bytes_read: read,
            bytes_written: written,
            modelled: true,
        })
    }

    fn set_profiling(&mut self, on: bool) {
        self.profile = on;
    }

    fn set_memory_timing(&mut self, t: &crate::device::MemoryTiming) {
        let mut p = *self.vp.timing().params();
        if let Some(b) = t.dram_bytes_per_cycle {
            p.dram_bytes_per_cycle = b;
        }
        if let Some(l) = t.dram_latency {
            p.dram_latency = l;
        }
        if let Some(b) = t.sram_bytes_per_cycle {
            p.sram_bytes_per_cycle = b;
        }
        if let Some(l) = t.sram_latency {
            p.sram_latency = l;
        }
        self.vp.timing_mut().set_params(p);
    }
}

/// An in-process NVDLA: [`nvdla_kmd::Kmd`] + firmware + the hardware model, as a
/// [`crate::device::Device`].
pub type VpDevice = HostedDevice<VpOs>;

impl HostedDevice<VpOs> {
    /// A device with hardware configuration `config`, at reset.
    pub fn new(config: VpConfig) -> Self {
        // Builds with a secondary memory interface get the model's CV-SRAM window for
        // SRAM-domain memories (Device::create_sram_buffer).
        let sram = nvdla_vp::mem::CVSRAM_WINDOW;
        let bo = BoConfig {
            cvsram: config.hw().features.cvif.then_some((sram.base, sram.size)),
            ..BoConfig::default()
        };
        Self::with_os(VpOs::new(config), config.firmware(), bo)
            .unwrap_or_else(|e| unreachable!("default BO windows are valid: {e}"))
    }

    /// A device whose buffers get device addresses in `[base, base + size)` (page aligned),
    /// first fit in creation order: a fixed memory map, as a bare-metal image needs.
    pub fn with_window(config: VpConfig, base: u64, size: u64) -> Result<Self, DeviceError> {
        let bo = BoConfig {
            iova_base: base,
            iova_size: size,
            max_bo_size: size,
            ..BoConfig::default()
        };
        Self::with_os(VpOs::new(config), config.firmware(), bo)
    }

    /// Reads the model's DRAM at device address `addr` (what the engines see, which differs
    /// from a buffer's host copy between a CPU write and the next submit).
    pub fn read_device_memory(&self, addr: u64, buf: &mut [u8]) -> Result<(), DeviceError> {
        self.kmd
            .os()
            .vp()
            .mem
            .read(RamType::Dram, addr, buf)
            .map_err(|_| DeviceError::new(Operation::MapBuffer, nvdla_kmd::Error::Fault))
    }

    /// Starts recording every register access, interrupt and memory load (see
    /// [`Recorded`]); the model's memory is compared with the buffers from now on.
    pub fn start_recording(&mut self) {
        self.kmd.os_mut().record = Some(Vec::new());
    }

    /// Stops recording and returns what was recorded.
    pub fn take_recording(&mut self) -> Vec<Recorded> {
        self.kmd.os_mut().record.take().unwrap_or_default()
    }
}

/// The byte ranges where `new` differs from `old` (same length), merged across gaps of
/// fewer than 64 equal bytes.
fn changed_ranges(old: &[u8], new: &[u8]) -> Vec<(usize, usize)> {
    const GAP: usize = 64;
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, _) in old.iter().zip(new).enumerate().filter(|(_, (a, b))| a != b) {
        match out.last_mut() {
            Some((_, end)) if i < *end + GAP => *end = i + 1,
            _ => out.push((i, i + 1)),
        }
    }
    out
}

/// Sets glibc's allocator to keep freed memory, for processes that run the model (the
/// runtime, the daemon, the benchmark); call it first in `main`, before any thread. The
/// model allocates and frees buffers of megabytes for every layer; glibc serves blocks
/// above 128 KiB with `mmap` and unmaps them when freed, so each layer paid for fresh
/// zeroed pages again (about a quarter of ResNet-50's int8 run). Blocks up to 32 MiB
/// (glibc's largest threshold on 64-bit) now come from the heap, and freed memory stays
/// there for the next layer. Elsewhere than glibc it does nothing.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets allocator parameters; the caller runs it before any
    // other thread exists. A refused value leaves glibc's default.
    #[allow(unsafe_code)]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_ranges_merge_small_gaps() {
        let old = vec![0u8; 300];
        let mut new = old.clone();
        new[3] = 1;
        new[10] = 1;
        new[200] = 2;
        assert_eq!(changed_ranges(&old, &new), vec![(3, 11), (200, 201)]);
        assert!(changed_ranges(&old, &old).is_empty());
    }

    #[test]
    fn every_published_build_is_a_config() {
        let names: Vec<&str> = VpConfig::ALL.iter().map(|c| c.name()).collect();
        let hw: Vec<&str> = nvdla_hw::Config::names().collect();
        assert_eq!(names, hw);
        for c in VpConfig::ALL {
            assert_eq!(c.name().parse::<VpConfig>(), Ok(c));
            assert_eq!(c.to_string(), c.name());
        }
        assert_eq!("opendla-small".parse::<VpConfig>(), Ok(VpConfig::NvSmall));
        assert!("nv_huge"
            .parse::<VpConfig>()
            .unwrap_err()
            .contains("nv_small_256_full"));
    }

    #[test]
    fn every_build_has_a_model() {
        for (c, b) in VpConfig::ALL.into_iter().zip(nvdla_hw::Build::ALL) {
            assert_eq!(VpConfig::from(b), c);
            assert_eq!(nvdla_hw::Build::from(c), b);
            assert_eq!(c.hw(), b.hw());
        }
    }

    #[test]
    fn firmware_accepts_what_the_model_computes() {
        use nvdla_firmware::Feature;
        for c in VpConfig::ALL {
            let fw = c.firmware();
            assert_eq!(&fw.build, c.hw());
            // The model computes int16/fp16 everywhere, so its firmware accepts them.
            assert!(fw.has(Feature::WidePrecision), "{c}");
            assert_eq!(fw.has(Feature::Bdma), c.hw().features.bdma, "{c}");
        }
        // Silicon firmware of an int8-only build does not.
        let silicon = nvdla_firmware::HwConfig::new(VpConfig::NvSmall256.hw());
        assert!(!silicon.has(Feature::WidePrecision));
    }
}
