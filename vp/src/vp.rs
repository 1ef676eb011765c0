//! The platform: CSB bus, register files, GLB, memory and engines.
//!
//! The CSB is a map of non-overlapping 4 KiB block windows (layout per hardware version).
//! Accesses are 32-bit at byte offsets; a hole or an absent block is logged and ignored
//! (reads return 0), never a panic. Engines are functional: when a block's consumer
//! group is enabled (and its partner blocks are ready), the layer is computed at once,
//! memory is updated, the group completes and the done interrupt is raised.

use crate::config::HwConfig;
use crate::engines::bdma::{Bdma, BdmaOp};
use crate::engines::{cdp, conv, pdp, rubik, sdp, EngineError};
use crate::glb::{Glb, IntrSource};
use crate::mem::Memory;
use crate::regs::{blocks, ids, Block, BlockDef, Reg, RegDef, RegFile, BLOCK_WINDOW};
use std::collections::BTreeMap;

/// Lookup-table RAM of SDP or CDP, accessed through `S_LUT_ACCESS_CFG`/`_DATA`.
#[derive(Debug, Clone)]
pub struct LutRam {
    /// Linear/exponent table (65 entries).
    pub le: [u16; 65],
    /// Linear-only table (257 entries).
    pub lo: [u16; 257],
}

impl Default for LutRam {
    fn default() -> Self {
        LutRam {
            le: [0; 65],
            lo: [0; 257],
        }
    }
}

/// An engine fault: the error state a DMA outside memory or bad programming leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Block that faulted.
    pub block: Block,
    /// What went wrong.
    pub error: EngineError,
}

/// One NVDLA instance.
#[derive(Debug)]
pub struct Vp {
    cfg: HwConfig,
    /// Memory behind MCIF and CVIF.
    pub mem: Memory,
    files: BTreeMap<Block, RegFile>,
    glb: Glb,
    bdma: Bdma,
    sdp_lut: LutRam,
    cdp_lut: LutRam,
    lut_index: [usize; 2],
    events: Vec<(IntrSource, usize)>,
    fault: Option<Fault>,
    log_regs: bool,
    pending: bool,
    cbuf: conv::Cbuf,
    flush_polled: bool,
    /// Done interrupts raised but not yet visible in GLB (see [`Vp::raise`]).
    /// Each with the cycle it arrives at ([`crate::timing`]).
    deferred: std::collections::VecDeque<(IntrSource, usize, u64)>,
    /// Injected hang (see [`Vp::hang`]): engines stop until reset.
    hung: bool,
    /// Operations silicon would overlap that touch the same memory ([`crate::hazard`]).
    hazard: crate::hazard::HazardCheck,
    /// A convolution's own DMA (CDMA's reads), split from its flying SDP's for the check:
    /// the two end at different done interrupts.
    conv_log: Option<Vec<crate::mem::Access>>,
    /// The clock and the timeline ([`crate::timing`]).
    timing: crate::timing::CycleModel,
}

/// A resolved CSB address.
#[derive(Debug, Clone, Copy)]
pub struct CsbTarget {
    /// Block.
    pub block: Block,
    /// Register, when the offset names one.
    pub reg: Option<&'static RegDef>,
    /// Its typed identifier.
    pub id: Option<Reg>,
    /// Byte offset inside the block.
    pub offset: u32,
}

/// CFGROM entries that describe the build. The register description on `master`
/// carries nv_small's values as reset values; the geometry and throughput entries are
/// filled from the parameter table so that nv_large reports itself (capability bit
/// fields and CIF entries keep the description's values).
fn cfgrom_values(cfg: &HwConfig) -> Vec<(Reg, u32)> {
    use ids::cfgrom::*;
    let h = &cfg.hw;
    let mut v = Vec::new();
    for (c, k) in [
        (CFGROM_CDMA_BASE_ATOMIC_C, CFGROM_CDMA_BASE_ATOMIC_K),
        (CFGROM_CSC_BASE_ATOMIC_C, CFGROM_CSC_BASE_ATOMIC_K),
        (CFGROM_CMAC_A_BASE_ATOMIC_C, CFGROM_CMAC_A_BASE_ATOMIC_K),
        (CFGROM_CMAC_B_BASE_ATOMIC_C, CFGROM_CMAC_B_BASE_ATOMIC_K),
        (CFGROM_CACC_BASE_ATOMIC_C, CFGROM_CACC_BASE_ATOMIC_K),
    ] {
        v.push((c, h.atomic_c));
        v.push((k, h.atomic_k));
    }
    for m in [
        CFGROM_CDMA_BASE_ATOMIC_M,
        CFGROM_CSC_BASE_ATOMIC_M,
        CFGROM_SDP_RDMA_BASE_ATOMIC_M,
        CFGROM_PDP_RDMA_BASE_ATOMIC_M,
        CFGROM_CDP_RDMA_BASE_ATOMIC_M,
    ] {
        v.push((m, h.memory_atomic));
    }
    for (num, width, depth) in [
        (
            CFGROM_CDMA_BASE_CBUF_BANK_NUM,
            CFGROM_CDMA_BASE_CBUF_BANK_WIDTH,
            CFGROM_CDMA_BASE_CBUF_BANK_DEPTH,
        ),
        (
            CFGROM_CBUF_BASE_CBUF_BANK_NUM,
            CFGROM_CBUF_BASE_CBUF_BANK_WIDTH,
            CFGROM_CBUF_BASE_CBUF_BANK_DEPTH,
        ),
        (
            CFGROM_CSC_BASE_CBUF_BANK_NUM,
            CFGROM_CSC_BASE_CBUF_BANK_WIDTH,
            CFGROM_CSC_BASE_CBUF_BANK_DEPTH,
        ),
    ] {
        v.push((num, h.cbuf_banks));
        v.push((width, h.cbuf_bank_width));
        v.push((depth, h.cbuf_bank_depth));
    }
    let t = h.throughput;
    v.push((CFGROM_SDP_BS_THROUGHPUT, t.sdp_bs));
    v.push((CFGROM_SDP_BN_THROUGHPUT, t.sdp_bn));
    v.push((CFGROM_SDP_EW_THROUGHPUT, t.sdp_ew));
    v.push((CFGROM_PDP_BASE_THROUGHPUT, t.pdp));
    v.push((CFGROM_CDP_BASE_THROUGHPUT, t.cdp));
    v
}

fn present(cfg: &HwConfig, b: Block) -> bool {
    match b {
        Block::Bdma => cfg.hw.features.bdma,
        Block::Rubik => cfg.hw.features.rubik,
        Block::Cvif => cfg.hw.features.cvif,
        Block::Cdp | Block::CdpRdma => cfg.hw.features.cdp,
        Block::Pdp | Block::PdpRdma => cfg.hw.features.pdp,
        _ => true,
    }
}

impl Vp {
    /// A platform at reset.
    pub fn new(cfg: HwConfig) -> Self {
        let mut files: BTreeMap<Block, RegFile> = blocks(cfg.version())
            .iter()
            .filter(|d| present(&cfg, d.unit))
            .map(|d: &'static BlockDef| (d.unit, RegFile::new(cfg.version(), d)))
            .collect();
        if let Some(rom) = files.get_mut(&Block::Cfgrom) {
            for (r, v) in cfgrom_values(&cfg) {
                rom.set_hw(r, v);
            }
        }
        Vp {
            mem: Memory::new(cfg.hw.mem_address_width, cfg.hw.features.cvif),
            cfg,
            files,
            glb: Glb::default(),
            bdma: Bdma::default(),
            sdp_lut: LutRam::default(),
            cdp_lut: LutRam::default(),
            lut_index: [0; 2],
            events: Vec::new(),
            fault: None,
            log_regs: false,
            pending: false,
            cbuf: conv::Cbuf::default(),
            flush_polled: false,
            deferred: Default::default(),
            timing: crate::timing::CycleModel::new(
                &cfg,
                crate::timing::TimingParams::for_config(&cfg),
            ),
            hung: false,
            hazard: Default::default(),
            conv_log: None,
        }
    }

    /// Hardware reset: registers, queues, LUTs, the convolution buffer and the interrupt
    /// state return to their reset values; memory behind MCIF and CVIF keeps its contents
    /// (and its backend), as resetting the accelerator does not clear the memories.
    pub fn reset(&mut self) {
        let mem = std::mem::replace(&mut self.mem, Memory::new(0, false));
        let log_regs = self.log_regs;
        *self = Vp::new(self.cfg);
        self.mem = mem;
        self.log_regs = log_regs;
    }

    /// Fault injection for testing drivers: the accelerator hangs. From now on enabled
    /// work never runs and no further done interrupt reaches GLB (one already visible
    /// stays), as when a real engine stalls on a bus that never answers; registers still
    /// answer. Only [`Vp::reset`] recovers.
    pub fn hang(&mut self) {
        log::warn!("fault injection: the accelerator hangs until reset");
        self.hung = true;
    }

    /// Whether an injected hang is in effect.
    pub fn is_hung(&self) -> bool {
        self.hung
    }

    /// The hardware configuration.
    pub fn config(&self) -> &HwConfig {
        &self.cfg
    }

    /// Prints every register write with block and register name.
    pub fn set_log_regs(&mut self, on: bool) {
        self.log_regs = on;
    }

    /// Register file of a block, if the build has it.
    pub fn regs(&self, b: Block) -> Option<&RegFile> {
        self.files.get(&b)
    }

    /// Level of the GLB interrupt line. Observing it lets time pass: enabled work
    /// completes first.
    pub fn irq_pending(&mut self) -> bool {
        self.run_pending();
        self.deliver();
        self.glb.irq_pending()
    }

    /// Lets time pass: every enabled layer whose inputs are ready completes.
    ///
    /// `D_OP_ENABLE` only marks a group ready, so software reading registers right after
    /// enabling still sees the layer in flight (`D_OP_ENABLE` reads 1), as on silicon.
    /// Work runs when something observes completion: the interrupt line, GLB status,
    /// or an explicit call (trace `wait`, memory checks).
    pub fn run_pending(&mut self) {
        if self.pending {
            self.pending = false;
            self.kick();
        }
    }

    /// GLB interrupt state.
    pub fn glb(&self) -> &Glb {
        &self.glb
    }

    /// The fault that stopped an engine, if any.
    pub fn fault(&self) -> Option<&Fault> {
        self.fault.as_ref()
    }

    /// Done events raised so far, in order (source, group). Lets time pass first.
    pub fn events(&mut self) -> &[(IntrSource, usize)] {
        self.run_pending();
        &self.events
    }

    /// Blocks whose consumer group is enabled but has not run (waiting for a partner
    /// block or for data).
    pub fn pending_blocks(&mut self) -> Vec<Block> {
        self.run_pending();
        self.files
            .iter()
            .filter(|(_, f)| f.consumer_enabled())
            .map(|(b, _)| *b)
            .collect()
    }

    /// Resolves a CSB byte address.
    pub fn resolve(&self, addr: u32) -> Option<CsbTarget> {
        let base = addr & !(BLOCK_WINDOW - 1);
        let f = self.files.values().find(|f| f.def().base == base)?;
        let offset = addr - base;
        Some(CsbTarget {
            block: f.def().unit,
            reg: f.reg_at(offset),
            id: f.id_at(offset),
            offset,
        })
    }

    /// Finds a register by block and name (`NVDLA_<BLOCK>.<NAME>_0` in traces).
    pub fn lookup(&self, block: &str, reg: &str) -> Option<u32> {
        let b = Block::from_name(block)?;
        let f = self.files.get(&b)?;
        Some(f.def().base + f.reg_named(reg)?.offset)
    }

    /// CSB byte address of register `r`, if the build has its block and the generation
    /// the register.
    pub fn addr(&self, r: Reg) -> Option<u32> {
        let f = self.files.get(&r.unit())?;
        f.desc(r)?;
        Some(f.def().base + r.offset())
    }

    /// Hazards found since reset: operations that silicon would run side by side (one
    /// enabled before software saw the other done) and that touch the same memory, one
    /// of them writing it ([`crate::hazard`]).
    pub fn hazards(&self) -> &[crate::hazard::Hazard] {
        self.hazard.hazards()
    }

    /// The cycle model: the clock, the memory timing and the operations timed
    /// ([`crate::timing`]).
    pub fn timing(&self) -> &crate::timing::CycleModel {
        &self.timing
    }

    /// The cycle model, mutable (to set its memory timing or take its timeline).
    pub fn timing_mut(&mut self) -> &mut crate::timing::CycleModel {
        &mut self.timing
    }

    /// 32-bit CSB read.
    pub fn csb_read(&mut self, addr: u32) -> u32 {
        self.hazard.tick();
        self.timing.csb(false);
        let Some(t) = self.resolve(addr) else {
            log::warn!("CSB read of unmapped address {addr:#x}");
            return 0;
        };
        let (Some(reg), Some(id)) = (t.reg, t.id) else {
            log::warn!("CSB read of unknown register {}+{:#x}", t.block, t.offset);
            return 0;
        };
        match id {
            ids::glb::S_INTR_STATUS => {
                // Polling the status lets time pass.
                self.run_pending();
                let status = self.glb.status() & reg.rmask;
                self.hazard.status_read(status);
                self.timing.status_read(status);
                return status;
            }
            ids::glb::S_INTR_MASK => return self.glb.mask() & reg.rmask,
            // The convolution buffer is flushed after reset. v2 reports FLUSH_DONE at
            // once (v2 traces poll it for 1 before the first layer); on v1 the flush
            // is still running at the first read (v1 googlenet_conv2_3x3_int16 reads
            // 0) and done by the next, so firmware polling it before its first
            // convolution layer sees it complete.
            ids::cdma::S_CBUF_FLUSH_STATUS => {
                if self.cfg.version() == crate::config::HwVersion::V2 || self.flush_polled {
                    return 1;
                }
                self.flush_polled = true;
                return 0;
            }
            ids::bdma::STATUS => {
                // FREE_SLOT[7:0], IDLE[8]; operations complete at launch, so always idle.
                return (self.bdma.free_slots() as u32) | (1 << 8);
            }
            ids::sdp::S_LUT_ACCESS_DATA => return u32::from(self.lut_read(Block::Sdp)),
            ids::cdp::S_LUT_ACCESS_DATA => return u32::from(self.lut_read(Block::Cdp)),
            _ => {}
        }
        self.files
            .get(&t.block)
            .and_then(|f| f.read(t.offset))
            .unwrap_or(0)
    }

    /// 32-bit CSB write.
    pub fn csb_write(&mut self, addr: u32, value: u32) {
        self.hazard.tick();
        self.timing.csb(true);
        let Some(t) = self.resolve(addr) else {
            log::warn!("CSB write of unmapped address {addr:#x} = {value:#x}");
            return;
        };
        let (Some(reg), Some(id)) = (t.reg, t.id) else {
            log::warn!(
                "CSB write of unknown register {}+{:#x} = {value:#x}",
                t.block,
                t.offset
            );
            return;
        };
        if self.log_regs {
            use std::io::Write;
            // A closed stdout (e.g. piped into `head`) must not stop the model.
            let _ = writeln!(
                std::io::stdout().lock(),
                "csb write NVDLA_{}.{}_0 ({addr:#07x}) = {value:#010x}",
                t.block,
                reg.name
            );
        }
        match id {
            ids::glb::S_INTR_STATUS => return self.glb.write_status(value),
            ids::glb::S_INTR_SET => return self.glb.write_set(value),
            ids::glb::S_INTR_MASK => return self.glb.write_mask(value),
            ids::sdp::S_LUT_ACCESS_DATA | ids::cdp::S_LUT_ACCESS_DATA => {
                self.lut_write(t.block, value as u16);
            }
            ids::sdp::S_LUT_ACCESS_CFG | ids::cdp::S_LUT_ACCESS_CFG => {
                self.lut_index[usize::from(t.block == Block::Cdp)] = (value & 0x3ff) as usize;
            }
            _ => {}
        }
        let Some(f) = self.files.get_mut(&t.block) else {
            return;
        };
        f.write(t.offset, value);
        let op_enable = f.op_enable();
        if op_enable == Some(id) && value & 1 == 1 {
            let group = f.producer;
            self.hazard.enabled(t.block, group);
            self.timing.enabled(t.block, group);
        }
        match id {
            ids::bdma::CFG_OP if value & 1 == 1 => {
                let f = &self.files[&Block::Bdma];
                let op = BdmaOp::decode(|n| f.get(0, n));
                if !self.bdma.push(op) {
                    log::warn!("BDMA: operation queue full, CFG_OP dropped");
                }
            }
            ids::bdma::CFG_LAUNCH0 | ids::bdma::CFG_LAUNCH1 if value & 1 == 1 => {
                let group = usize::from(id == ids::bdma::CFG_LAUNCH1);
                self.hazard.enabled(Block::Bdma, group);
                self.timing.enabled(Block::Bdma, group);
                self.observed(Block::Bdma, group, |vp| {
                    vp.bdma_launch(group);
                    vp.fault.is_none()
                });
            }
            _ if op_enable == Some(id) && value & 1 == 1 => self.pending = true,
            _ => {}
        }
    }

    fn lut_cfg(&self, b: Block) -> (bool, usize) {
        let cfg = self.files.get(&b).map_or(0, |f| {
            f.get(
                0,
                if b == Block::Cdp {
                    ids::cdp::S_LUT_ACCESS_CFG
                } else {
                    ids::sdp::S_LUT_ACCESS_CFG
                },
            )
        });
        let lo = cfg & (1 << 16) != 0;
        (lo, self.lut_index[usize::from(b == Block::Cdp)])
    }

    fn lut_write(&mut self, b: Block, v: u16) {
        let (lo, idx) = self.lut_cfg(b);
        let lut = if b == Block::Cdp {
            &mut self.cdp_lut
        } else {
            &mut self.sdp_lut
        };
        let slot = if lo {
            lut.lo.get_mut(idx)
        } else {
            lut.le.get_mut(idx)
        };
        match slot {
            Some(s) => *s = v,
            None => log::warn!("{b}: LUT write past the end of the table (index {idx})"),
        }
        self.lut_index[usize::from(b == Block::Cdp)] += 1;
    }

    fn lut_read(&mut self, b: Block) -> u16 {
        let (lo, idx) = self.lut_cfg(b);
        let lut = if b == Block::Cdp {
            &self.cdp_lut
        } else {
            &self.sdp_lut
        };
        let v = if lo { lut.lo.get(idx) } else { lut.le.get(idx) };
        let v = v.copied().unwrap_or(0);
        self.lut_index[usize::from(b == Block::Cdp)] += 1;
        v
    }

    fn set_fault(&mut self, block: Block, error: EngineError) {
        log::error!("{block}: {error}");
        if self.fault.is_none() {
            self.fault = Some(Fault { block, error });
        }
    }

    /// Records a done interrupt. One layer can finish several units in one model step
    /// (CDMA data, CDMA weights, CACC, SDP), but on silicon their interrupts arrive one
    /// after the other, and software that clears the whole status word after each
    /// interrupt must still see every one. So a done bit reaches GLB only while the
    /// interrupt line is low, and arrives when software waits for the line
    /// ([`Vp::irq_pending`]) after clearing the unmasked bits before it. A status read
    /// right after enabling a layer sees nothing yet (v1 googlenet_conv2_3x3_int16);
    /// masked bits pass straight through.
    fn raise(&mut self, src: IntrSource, group: usize) {
        self.events.push((src, group));
        self.deferred.push_back((src, group, self.timing.now()));
    }

    fn deliver(&mut self) {
        if self.hung {
            return;
        }
        // In the order silicon raises them: the earliest first (the first of equals),
        // the clock advancing to it as software waits.
        while !self.glb.irq_pending() {
            let Some(i) = (0..self.deferred.len()).min_by_key(|&i| self.deferred[i].2) else {
                break;
            };
            let Some((src, group, at)) = self.deferred.remove(i) else {
                break;
            };
            self.timing.advance_to(at);
            self.glb.raise(src, group);
        }
    }

    fn bdma_launch(&mut self, group: usize) {
        if self.hung {
            return;
        }
        let ops = self.bdma.take();
        for op in &ops {
            if let Err(e) = op.run(&mut self.mem) {
                self.set_fault(Block::Bdma, e);
                return;
            }
        }
        self.raise(IntrSource::Bdma, group);
    }

    fn enabled(&self, b: Block) -> bool {
        self.files.get(&b).is_some_and(|f| f.consumer_enabled())
    }

    fn complete(&mut self, b: Block) -> usize {
        self.files.get_mut(&b).map_or(0, |f| f.complete_group())
    }

    /// Runs every engine whose programmed group is ready, until nothing changes.
    fn kick(&mut self) {
        if self.hung {
            return;
        }
        // The engines run on a thread of rayon's pool, not on the caller's: their serial
        // parts then share the cores with the one other worker instead of with every
        // worker spinning for work (a third runnable thread on a 2-core machine). Results
        // do not depend on the thread that computes them.
        if rayon::current_thread_index().is_none() && rayon::current_num_threads() > 1 {
            rayon::scope(|_| self.run_ready());
        } else {
            self.run_ready();
        }
    }

    /// [`Vp::kick`]'s work: every layer that can run, until none can.
    fn run_ready(&mut self) {
        loop {
            let mut progressed = false;
            if self.enabled(Block::Sdp) && self.observed_consumer(Block::Sdp, Self::try_sdp) {
                progressed = true;
            }
            if self.enabled(Block::Pdp) && self.observed_consumer(Block::Pdp, Self::try_pdp) {
                progressed = true;
            }
            if self.enabled(Block::Cdp) && self.observed_consumer(Block::Cdp, Self::try_cdp) {
                progressed = true;
            }
            if self.enabled(Block::Rubik) && self.observed_consumer(Block::Rubik, Self::try_rubik) {
                progressed = true;
            }
            if self.enabled(Block::Cacc) && self.observed_consumer(Block::Cdma, Self::try_conv) {
                progressed = true;
            }
            if !progressed || self.fault.is_some() {
                break;
            }
        }
    }

    /// Runs `run` (an engine's operation, started by `trigger`'s consumer group) and
    /// records what it touched for the hazard check.
    fn observed_consumer(&mut self, trigger: Block, run: fn(&mut Self) -> bool) -> bool {
        let group = self.files.get(&trigger).map_or(0, |f| f.consumer);
        self.observed(trigger, group, run)
    }

    fn observed(
        &mut self,
        trigger: Block,
        group: usize,
        run: impl FnOnce(&mut Self) -> bool,
    ) -> bool {
        let enabled = self.hazard.enable_time(trigger, group);
        let work = self.work_of(trigger);
        let before = self.events.len();
        self.mem.start_log();
        let ran = run(self);
        let log = self.mem.take_log();
        let conv_log = self.conv_log.take();
        if !ran || self.events.len() == before {
            return ran;
        }
        {
            let dones = &self.events[before..];
            let mut all = log.clone();
            all.extend(conv_log.iter().flatten().copied());
            let at = self.timing.ran(&work, group, &all, dones);
            let n = dones.len().min(self.deferred.len());
            let first = self.deferred.len() - n;
            for (d, t) in self.deferred.iter_mut().skip(first).zip(at) {
                d.2 = t;
            }
        }
        let engine_of = |src: IntrSource| match src {
            IntrSource::Sdp => Block::Sdp,
            IntrSource::Cdp => Block::Cdp,
            IntrSource::Pdp => Block::Pdp,
            IntrSource::Bdma => Block::Bdma,
            IntrSource::Rubik => Block::Rubik,
            IntrSource::CdmaDat | IntrSource::CdmaWt | IntrSource::Cacc => Block::Cdma,
        };
        let engines = |dones: &[(IntrSource, usize)]| {
            let mut v: Vec<Block> = Vec::new();
            for (src, _) in dones {
                let b = engine_of(*src);
                if !v.contains(&b) {
                    v.push(b);
                }
            }
            v
        };
        let dones = self.events[before..].to_vec();
        match conv_log {
            // A convolution: CDMA's part, then its flying SDP's (and PDP's).
            Some(conv_log) => {
                let (conv, rest): (Vec<_>, Vec<_>) = dones
                    .into_iter()
                    .partition(|(src, _)| engine_of(*src) == Block::Cdma);
                self.hazard.ran(vec![Block::Cdma], enabled, conv, conv_log);
                if !rest.is_empty() {
                    let e = engines(&rest);
                    self.hazard.ran(e, enabled, rest, log);
                }
            }
            None => {
                let mut e = engines(&dones);
                if !e.contains(&trigger) {
                    e.insert(0, trigger);
                }
                self.hazard.ran(e, enabled, dones, log);
            }
        }
        ran
    }

    /// What the operation `trigger` starts would compute, for the cycle model
    /// ([`crate::timing::work_of`]).
    fn work_of(&self, trigger: Block) -> Vec<(crate::timing::Track, crate::timing::Work)> {
        let to_pdp = self.cfg.hw.features.pdp && self.sdp_plan().to_pdp;
        crate::timing::work_of(&self.cfg, &self.files, trigger, to_pdp)
    }

    /// SDP's plan for its consumer group. SDP_RDMA's consumer group counts as this layer's
    /// (an operand stream left on completes with it) only if it was enabled no later than
    /// SDP's group: the firmware may enable the next layer's RDMA group while this layer
    /// runs, and that one waits for its own layer.
    fn sdp_plan(&self) -> sdp::Plan {
        let sdp_f = &self.files[&Block::Sdp];
        let rdma_f = &self.files[&Block::SdpRdma];
        let with_layer = rdma_f.consumer_enabled()
            && self.hazard.enable_time(Block::SdpRdma, rdma_f.consumer)
                <= self.hazard.enable_time(Block::Sdp, sdp_f.consumer);
        sdp::plan(&self.cfg, sdp_f, rdma_f, with_layer)
    }

    fn try_sdp(&mut self) -> bool {
        let rdma_f = &self.files[&Block::SdpRdma];
        let plan = self.sdp_plan();
        if plan.needs_rdma && !rdma_f.consumer_enabled() {
            return false;
        }
        if plan.from_cacc {
            // Input comes from the convolution pipeline, which feeds it through
            // `sdp_from_cacc`; nothing to do until then.
            return false;
        }
        if plan.to_pdp && !self.enabled(Block::Pdp) {
            return false;
        }
        self.run_sdp(None)
    }

    /// Runs the enabled SDP group on accumulator output from CACC (flying mode).
    /// `data` is the CACC output cube, index `(c * h + y) * w + x`.
    pub fn sdp_from_cacc(&mut self, data: &[i64]) -> bool {
        if !self.enabled(Block::Sdp) {
            return false;
        }
        self.run_sdp(Some(data))
    }

    fn run_sdp(&mut self, cacc: Option<&[i64]>) -> bool {
        let sdp_f = &self.files[&Block::Sdp];
        let rdma_f = &self.files[&Block::SdpRdma];
        let plan = self.sdp_plan();
        let res = sdp::run(&self.cfg, sdp_f, rdma_f, &self.sdp_lut, &mut self.mem, cacc);
        match res {
            Ok(out) => {
                if plan.needs_rdma {
                    self.complete(Block::SdpRdma);
                }
                if let (Some(unequal), Some(f)) = (out.unequal, self.files.get_mut(&Block::Sdp)) {
                    let g = f.consumer;
                    f.set_group(g, ids::sdp::D_STATUS, u32::from(unequal));
                }
                let g = self.complete(Block::Sdp);
                self.raise(IntrSource::Sdp, g);
                if let Some(cube) = out.to_pdp {
                    self.run_pdp(Some(cube));
                }
                true
            }
            Err(e) => {
                self.set_fault(Block::Sdp, e);
                false
            }
        }
    }

    fn try_pdp(&mut self) -> bool {
        let pdp_f = &self.files[&Block::Pdp];
        if pdp::on_the_fly(pdp_f) {
            return false; // waits for SDP
        }
        if !self.enabled(Block::PdpRdma) {
            return false;
        }
        self.run_pdp(None)
    }

    fn run_pdp(&mut self, input: Option<sdp::Cube>) -> bool {
        let pdp_f = &self.files[&Block::Pdp];
        let rdma_f = &self.files[&Block::PdpRdma];
        let from_mem = input.is_none();
        match pdp::run(&self.cfg, pdp_f, rdma_f, &mut self.mem, input) {
            Ok(()) => {
                if from_mem {
                    self.complete(Block::PdpRdma);
                }
                let g = self.complete(Block::Pdp);
                self.raise(IntrSource::Pdp, g);
                true
            }
            Err(e) => {
                self.set_fault(Block::Pdp, e);
                false
            }
        }
    }

    fn try_cdp(&mut self) -> bool {
        if !self.enabled(Block::CdpRdma) {
            return false;
        }
        let res = cdp::run(
            &self.cfg,
            &self.files[&Block::Cdp],
            &self.files[&Block::CdpRdma],
            &self.cdp_lut,
            &mut self.mem,
        );
        match res {
            Ok(()) => {
                self.complete(Block::CdpRdma);
                let g = self.complete(Block::Cdp);
                self.raise(IntrSource::Cdp, g);
                true
            }
            Err(e) => {
                self.set_fault(Block::Cdp, e);
                false
            }
        }
    }

    /// Runs a convolution layer when CDMA, CSC, CMAC_A/B and CACC all have their
    /// consumer group enabled and SDP is ready to take the accumulator output.
    fn try_conv(&mut self) -> bool {
        let conv_blocks = [
            Block::Cdma,
            Block::Csc,
            Block::CmacA,
            Block::CmacB,
            Block::Cacc,
        ];
        if !conv_blocks.iter().all(|&b| self.enabled(b)) || !self.enabled(Block::Sdp) {
            return false;
        }
        let plan = self.sdp_plan();
        if !plan.from_cacc {
            return false; // SDP reads memory; the layer waits for a flying SDP group
        }
        if (plan.needs_rdma && !self.enabled(Block::SdpRdma))
            || (plan.to_pdp && !self.enabled(Block::Pdp))
        {
            return false;
        }
        // SDP's output must be reachable before the convolution is worth computing.
        let dst = sdp::output_layout(
            &self.cfg,
            &self.files[&Block::Sdp],
            &self.files[&Block::SdpRdma],
            true,
        )
        .and_then(|d| d.map_or(Ok(()), |d| d.check(&self.mem)));
        if let Err(e) = dst {
            self.set_fault(Block::Sdp, e);
            return false;
        }
        let f = &self.files;
        let layer = conv::Layer::decode(
            &self.cfg,
            &f[&Block::Cdma],
            &f[&Block::Csc],
            [&f[&Block::CmacA], &f[&Block::CmacB]],
            &f[&Block::Cacc],
        )
        .and_then(|l| {
            // CACC delivers Winograd tiles in their own order; only SDP in Winograd
            // output mode puts them in place (and expects nothing else).
            if l.wino.is_some() == sdp::winograd_output(&f[&Block::Sdp]) {
                Ok(l)
            } else {
                Err(EngineError::Config {
                    block: "SDP",
                    msg: "Winograd output mode differs from the convolution mode".into(),
                })
            }
        });
        let out = layer.and_then(|l| conv::run(&self.cfg, &l, &mut self.cbuf, &self.mem));
        // CDMA's reads end with its done interrupts; what the SDP does is its own.
        self.conv_log = Some(self.mem.take_log());
        self.mem.start_log();
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                let block = match &e {
                    EngineError::Config { block, .. } | EngineError::Unsupported { block, .. } => {
                        Block::from_name(block).unwrap_or(Block::Cdma)
                    }
                    EngineError::Mem(_) => Block::Cdma,
                };
                self.set_fault(block, e);
                return false;
            }
        };
        let g = self.complete(Block::Cdma);
        self.raise(IntrSource::CdmaDat, g);
        self.raise(IntrSource::CdmaWt, g);
        for b in [Block::Csc, Block::CmacA, Block::CmacB] {
            self.complete(b);
        }
        if let Some(f) = self.files.get_mut(&Block::Cacc) {
            let cg = f.consumer;
            f.set_group(cg, ids::cacc::D_OUT_SATURATION, out.saturated);
        }
        let g = self.complete(Block::Cacc);
        self.raise(IntrSource::Cacc, g);
        self.run_sdp(Some(&out.cube));
        true
    }

    fn try_rubik(&mut self) -> bool {
        match rubik::run(&self.cfg, &self.files[&Block::Rubik], &mut self.mem) {
            Ok(()) => {
                let g = self.complete(Block::Rubik);
                self.raise(IntrSource::Rubik, g);
                true
            }
            Err(e) => {
                self.set_fault(Block::Rubik, e);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_clears_registers_and_keeps_memory() {
        let mut vp = Vp::new(HwConfig::new(&nvdla_hw::NV_FULL));
        vp.mem.host_write(0x8000_0000, &[7; 16]).unwrap();
        let mask = vp.addr(ids::glb::S_INTR_MASK).unwrap();
        let reset_mask = vp.csb_read(mask);
        vp.csb_write(mask, 0);
        let set = vp.addr(ids::glb::S_INTR_SET).unwrap();
        vp.csb_write(set, 1);
        vp.reset();
        assert_eq!(vp.csb_read(mask), reset_mask);
        assert!(!vp.irq_pending());
        assert_eq!(
            vp.mem
                .read_vec(crate::mem::RamType::Dram, 0x8000_0000, 16)
                .unwrap(),
            vec![7; 16]
        );
    }

    /// Found by fuzzing (vp/fuzz csb): an SDP layer of 2869x8x7696 elements writing to an
    /// address outside memory. The fault must come from the output check before the
    /// computation (it used to compute 176 M elements first).
    #[test]
    fn sdp_with_unreachable_output_faults_before_computing() {
        use crate::mem::Window;
        let mut vp = Vp::new(HwConfig::new(&nvdla_hw::NV_FULL));
        vp.mem.set_dram_window(Window {
            base: 0x8000_0000,
            size: 16 << 20,
        });
        let mut w = |r: Reg, v: u32| {
            let a = vp.addr(r).unwrap();
            vp.csb_write(a, v)
        };
        use ids::{sdp, sdp_rdma};
        for (width, height, channel) in [
            (
                sdp_rdma::D_DATA_CUBE_WIDTH,
                sdp_rdma::D_DATA_CUBE_HEIGHT,
                sdp_rdma::D_DATA_CUBE_CHANNEL,
            ),
            (
                sdp::D_DATA_CUBE_WIDTH,
                sdp::D_DATA_CUBE_HEIGHT,
                sdp::D_DATA_CUBE_CHANNEL,
            ),
        ] {
            w(width, 0xb34);
            w(height, 7);
            w(channel, 0x1e0f);
        }
        w(ids::sdp_rdma::D_SRC_BASE_ADDR_LOW, 0x8020_0000);
        w(ids::sdp_rdma::D_SRC_LINE_STRIDE, 0x100);
        w(ids::sdp_rdma::D_SRC_SURFACE_STRIDE, 0x800);
        w(ids::sdp_rdma::D_SRC_DMA_CFG, 1);
        w(ids::sdp_rdma::D_FEATURE_MODE_CFG, 0x54); // int16 in and processing
        w(ids::sdp::D_DATA_FORMAT, 5); // int16 processing and output
        for r in [
            ids::sdp_rdma::D_BRDMA_CFG,
            ids::sdp_rdma::D_NRDMA_CFG,
            ids::sdp_rdma::D_ERDMA_CFG,
        ] {
            w(r, 1); // operand DMA off
        }
        for r in [
            ids::sdp::D_DP_BS_CFG,
            ids::sdp::D_DP_BN_CFG,
            ids::sdp::D_DP_EW_CFG,
        ] {
            w(r, 1); // units bypassed
        }
        w(ids::sdp::D_DST_DMA_CFG, 1);
        w(ids::sdp::D_DST_BASE_ADDR_LOW, 0); // below the DRAM window
        w(ids::sdp_rdma::D_OP_ENABLE, 1);
        w(ids::sdp::D_OP_ENABLE, 1);
        assert!(!vp.irq_pending());
        let f = vp.fault().expect("the layer faults");
        assert_eq!(f.block, Block::Sdp);
        assert!(matches!(f.error, EngineError::Mem(_)), "{:?}", f.error);
    }

    #[test]
    fn cfgrom_describes_the_build() {
        let mut small = Vp::new(HwConfig::new(&nvdla_hw::NV_SMALL));
        let mut large = Vp::new(HwConfig::new(&nvdla_hw::NV_LARGE));
        let a = small.addr(ids::cfgrom::CFGROM_CDMA_BASE_ATOMIC_C).unwrap();
        assert_eq!(a, 0x38);
        assert_eq!(small.csb_read(a), 8);
        assert_eq!(large.csb_read(a), 64);
        let b = large
            .addr(ids::cfgrom::CFGROM_CBUF_BASE_CBUF_BANK_NUM)
            .unwrap();
        assert_eq!(large.csb_read(b), 16);
        assert_eq!(small.csb_read(b), 32);
        assert!(Vp::new(HwConfig::new(&nvdla_hw::NV_FULL))
            .addr(ids::cfgrom::CFGROM_HW_VERSION)
            .is_none());
    }

    #[test]
    fn unknown_addresses_are_ignored() {
        let mut vp = Vp::new(HwConfig::new(&nvdla_hw::NV_SMALL));
        vp.csb_write(0x4000_0000, 1);
        assert_eq!(vp.csb_read(0x4000_0000), 0);
        // BDMA is absent on nv_small (0x10000 on v2).
        vp.csb_write(0x10030, 1);
        assert_eq!(vp.csb_read(0x10040), 0);
        assert_eq!(vp.csb_read(0x1ffc), 0);
    }

    #[test]
    fn bdma_copy_raises_group_interrupt() {
        let mut vp = Vp::new(HwConfig::new(&nvdla_hw::NV_FULL));
        vp.mem.host_write(0x8000_0000, &[7; 64]).unwrap();
        let w = |vp: &mut Vp, n: Reg, v: u32| {
            let a = vp.addr(n).unwrap();
            vp.csb_write(a, v)
        };
        w(&mut vp, ids::bdma::CFG_SRC_ADDR_LOW, 0x8000_0000);
        w(&mut vp, ids::bdma::CFG_DST_ADDR_LOW, 0x8100_0000);
        w(&mut vp, ids::bdma::CFG_LINE, 1);
        w(&mut vp, ids::bdma::CFG_CMD, 3);
        w(&mut vp, ids::bdma::CFG_OP, 1);
        w(&mut vp, ids::bdma::CFG_LAUNCH1, 1);
        assert!(vp.irq_pending());
        assert_eq!(vp.glb().status(), 1 << 7);
        assert_eq!(
            vp.mem
                .read_vec(crate::mem::RamType::Dram, 0x8100_0000, 64)
                .unwrap(),
            vec![7; 64]
        );
        let st = vp.addr(ids::glb::S_INTR_STATUS).unwrap();
        vp.csb_write(st, 0xffff_ffff);
        assert!(!vp.irq_pending());
    }

    #[test]
    fn bdma_fault_is_reported() {
        let mut vp = Vp::new(HwConfig::new(&nvdla_hw::NV_FULL));
        let a = vp.addr(ids::bdma::CFG_CMD).unwrap();
        vp.csb_write(a, 0); // CVSRAM to CVSRAM at address 0: outside the SRAM window
        vp.csb_write(vp.addr(ids::bdma::CFG_OP).unwrap(), 1);
        vp.csb_write(vp.addr(ids::bdma::CFG_LAUNCH0).unwrap(), 1);
        assert!(vp.fault().is_some());
        assert!(!vp.irq_pending());
    }

    /// One BDMA copy of 64 bytes from 0x8000_0000 to `dst`, launched on group 1.
    fn bdma_copy(vp: &mut Vp, dst: u32) {
        for (n, v) in [
            (ids::bdma::CFG_SRC_ADDR_LOW, 0x8000_0000),
            (ids::bdma::CFG_DST_ADDR_LOW, dst),
            (ids::bdma::CFG_LINE, 1),
            (ids::bdma::CFG_CMD, 3),
            (ids::bdma::CFG_OP, 1),
            (ids::bdma::CFG_LAUNCH1, 1),
        ] {
            let a = vp.addr(n).unwrap();
            vp.csb_write(a, v);
        }
    }

    #[test]
    fn injected_hang_stops_engines_until_reset() {
        let mut vp = Vp::new(HwConfig::new(&nvdla_hw::NV_FULL));
        vp.mem.host_write(0x8000_0000, &[7; 64]).unwrap();
        let dram = |vp: &Vp, a: u64| vp.mem.read_vec(crate::mem::RamType::Dram, a, 64).unwrap();
        vp.hang();
        assert!(vp.is_hung());
        bdma_copy(&mut vp, 0x8100_0000);
        assert!(!vp.irq_pending(), "a hung accelerator raises nothing");
        assert_eq!(vp.glb().status(), 0);
        assert_eq!(dram(&vp, 0x8100_0000), vec![0; 64], "nor copies");
        // Registers still answer.
        let mask = vp.addr(ids::glb::S_INTR_MASK).unwrap();
        let reset_mask = vp.csb_read(mask);
        vp.csb_write(mask, 0);
        assert_eq!(vp.csb_read(mask), 0);
        vp.csb_write(mask, reset_mask);
        vp.reset();
        assert!(!vp.is_hung());
        bdma_copy(&mut vp, 0x8200_0000);
        assert!(vp.irq_pending());
        assert_eq!(vp.glb().status(), 1 << 7);
        assert_eq!(dram(&vp, 0x8200_0000), vec![7; 64]);
    }
}
