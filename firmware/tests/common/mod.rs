//! Test harness: a fake NVDLA that records register writes and completes enabled
//! operations in order, and a loader that lays a regression loadable out in its memory the
//! way the runtime and kernel driver would.
#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use nvdla_firmware::hw::{DeviceAddr, Hw, Region};
use nvdla_firmware::regs::{self, Block, HwVersion};
use nvdla_firmware::{Engine, Error, HwConfig, HwError, Progress};
use nvdla_loadable::dla::{self, Layout, NetworkDesc};
use nvdla_loadable::{Descriptor, Interface, Loadable};

/// Where device memory starts.
pub const MEM_BASE: u64 = 0x8000_0000;

/// One recorded register access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write {
    pub block: Block,
    pub offset: u32,
    pub value: u32,
}

/// A fake NVDLA: register file, sparse-free flat memory, interrupt simulation.
pub struct FakeHw {
    pub version: HwVersion,
    pub regs: HashMap<u32, u32>,
    pub writes: Vec<Write>,
    pub mem: Vec<u8>,
    pub list: Vec<Region>,
    /// Completion interrupts still to raise, in enable order: GLB status bits.
    pub pending: VecDeque<u32>,
    /// Producer group last selected per unit.
    producer: HashMap<Block, u32>,
    /// Consumer group per unit (toggles on each completion).
    consumer: HashMap<Block, u32>,
    pub status: u32,
    pub interrupts: usize,
    /// CDMA reports its buffer flushed (false: a stuck flush, for poll timeouts).
    pub flush_done: bool,
    /// Reads of CDMA `S_CBUF_FLUSH_STATUS`.
    pub flush_reads: u32,
    /// A simulated clock in milliseconds that advances by one per register read; `None`:
    /// the port has no clock.
    pub clock_ms: Option<u64>,
}

impl FakeHw {
    pub fn new(version: HwVersion) -> Self {
        FakeHw {
            version,
            regs: HashMap::new(),
            writes: Vec::new(),
            mem: Vec::new(),
            list: Vec::new(),
            pending: VecDeque::new(),
            producer: HashMap::new(),
            consumer: HashMap::new(),
            status: 0,
            interrupts: 0,
            flush_done: true,
            flush_reads: 0,
            clock_ms: None,
        }
    }

    fn abs(&self, b: Block, off: u32) -> u32 {
        b.base(self.version) + off
    }

    /// Moves the next completion into `GLB.S_INTR_STATUS`; `false` when nothing is pending.
    pub fn raise(&mut self) -> bool {
        match self.pending.pop_front() {
            Some(bits) => {
                self.status |= bits;
                self.interrupts += 1;
                true
            }
            None => false,
        }
    }

    /// The writes to one unit.
    pub fn writes_to(&self, b: Block) -> Vec<(u32, u32)> {
        self.writes
            .iter()
            .filter(|w| w.block == b)
            .map(|w| (w.offset, w.value))
            .collect()
    }

    /// Values written to one register, in order.
    pub fn values(&self, b: Block, off: u32) -> Vec<u32> {
        self.writes
            .iter()
            .filter(|w| w.block == b && w.offset == off)
            .map(|w| w.value)
            .collect()
    }

    /// The last value written to one register.
    pub fn last(&self, b: Block, off: u32) -> Option<u32> {
        self.values(b, off).last().copied()
    }

    fn on_enable(&mut self, b: Block) {
        use regs::glb::S_INTR_STATUS as S;
        let g = *self.producer.get(&b).unwrap_or(&0);
        let pick = |f0: tock_registers::fields::Field<u32, S::Register>,
                    f1: tock_registers::fields::Field<u32, S::Register>| {
            if g == 0 {
                f0.mask << f0.shift
            } else {
                f1.mask << f1.shift
            }
        };
        match b {
            Block::Cacc => {
                let fetch = pick(S::CDMA_DAT_DONE_STATUS0, S::CDMA_DAT_DONE_STATUS1)
                    | pick(S::CDMA_WT_DONE_STATUS0, S::CDMA_WT_DONE_STATUS1);
                self.pending.push_back(fetch);
                self.pending
                    .push_back(pick(S::CACC_DONE_STATUS0, S::CACC_DONE_STATUS1));
            }
            Block::Sdp => self
                .pending
                .push_back(pick(S::SDP_DONE_STATUS0, S::SDP_DONE_STATUS1)),
            Block::Pdp => self
                .pending
                .push_back(pick(S::PDP_DONE_STATUS0, S::PDP_DONE_STATUS1)),
            Block::Cdp => self
                .pending
                .push_back(pick(S::CDP_DONE_STATUS0, S::CDP_DONE_STATUS1)),
            Block::Rubik => self
                .pending
                .push_back(pick(S::RUBIK_DONE_STATUS0, S::RUBIK_DONE_STATUS1)),
            _ => {}
        }
        // The hardware consumes groups alternately.
        *self.consumer.entry(b).or_insert(0) ^= 1;
    }
}

impl Hw for FakeHw {
    fn reg_read(&mut self, offset: u32) -> Result<u32, HwError> {
        if !offset.is_multiple_of(4) {
            return Err(HwError::UnalignedRegister { offset });
        }
        let (b, off) =
            Block::decode(self.version, offset).ok_or(HwError::NoSuchRegister { offset })?;
        if let Some(t) = &mut self.clock_ms {
            *t += 1;
        }
        Ok(match (b, off) {
            (Block::Glb, regs::glb::S_INTR_STATUS) => self.status,
            (Block::Cdma, regs::cdma::S_CBUF_FLUSH_STATUS) => {
                self.flush_reads += 1;
                u32::from(self.flush_done)
            }
            // One free transfer slot, both groups idle.
            (Block::Bdma, regs::bdma::STATUS) => 0x100 | 1,
            (_, 0x0) => 0, // S_STATUS: idle
            (_, 0x4) if b != Block::Glb && b != Block::Bdma => {
                let c = *self.consumer.get(&b).unwrap_or(&0);
                (c << 16) | *self.producer.get(&b).unwrap_or(&0)
            }
            _ => *self.regs.get(&offset).unwrap_or(&0),
        })
    }

    fn reg_write(&mut self, offset: u32, value: u32) -> Result<(), HwError> {
        if !offset.is_multiple_of(4) {
            return Err(HwError::UnalignedRegister { offset });
        }
        let (b, off) =
            Block::decode(self.version, offset).ok_or(HwError::NoSuchRegister { offset })?;
        self.writes.push(Write {
            block: b,
            offset: off,
            value,
        });
        match (b, off) {
            (Block::Glb, regs::glb::S_INTR_STATUS) => self.status &= !value,
            (Block::Bdma, regs::bdma::CFG_LAUNCH0) | (Block::Bdma, regs::bdma::CFG_LAUNCH1) => {
                use regs::glb::S_INTR_STATUS as S;
                let f = if off == regs::bdma::CFG_LAUNCH0 {
                    S::BDMA_DONE_STATUS0
                } else {
                    S::BDMA_DONE_STATUS1
                };
                self.pending.push_back(f.mask << f.shift);
            }
            (b, 0x4) if b != Block::Glb && b != Block::Bdma => {
                self.producer.insert(b, value & 1);
            }
            // D_OP_ENABLE of the unit whose done interrupt ends the operation.
            (Block::Cacc, regs::cacc::D_OP_ENABLE)
            | (Block::Sdp, regs::sdp::D_OP_ENABLE)
            | (Block::Pdp, regs::pdp::D_OP_ENABLE)
            | (Block::Cdp, regs::cdp::D_OP_ENABLE)
            | (Block::Rubik, regs::rubik::D_OP_ENABLE)
                if value & 1 == 1 =>
            {
                self.on_enable(b)
            }
            _ => {}
        }
        self.regs.insert(offset, value);
        Ok(())
    }

    fn mem_read(&mut self, addr: DeviceAddr, buf: &mut [u8]) -> Result<(), HwError> {
        let r = self.range(addr, buf.len())?;
        buf.copy_from_slice(&self.mem[r]);
        Ok(())
    }

    fn mem_write(&mut self, addr: DeviceAddr, data: &[u8]) -> Result<(), HwError> {
        let r = self.range(addr, data.len())?;
        self.mem[r].copy_from_slice(data);
        Ok(())
    }

    fn now_ms(&mut self) -> Option<u64> {
        self.clock_ms
    }

    fn address(&self, index: u16) -> Result<Region, HwError> {
        self.list
            .get(usize::from(index))
            .copied()
            .ok_or(HwError::AddressIndex {
                index,
                count: self.list.len() as u16,
            })
    }
}

impl FakeHw {
    fn range(&self, addr: DeviceAddr, len: usize) -> Result<std::ops::Range<usize>, HwError> {
        let fault = HwError::MemoryFault { addr, len };
        let start = addr.0.checked_sub(MEM_BASE).ok_or(fault)? as usize;
        let end = start.checked_add(len).ok_or(fault)?;
        if end > self.mem.len() {
            return Err(fault);
        }
        Ok(start..end)
    }

    /// Reads `len` bytes at `off` of address-list entry `index`.
    pub fn read_entry(&mut self, index: u16, off: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.read_indexed(index, off, &mut v).unwrap();
        v
    }
}

/// The shared regression directory, if present.
pub fn shared() -> Option<PathBuf> {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/nvdla-sw-regression/flatbufs/kmd");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipping: {} is absent", p.display());
        None
    }
}

/// The loadable file of a regression test, e.g. `("BDMA", "BDMA_L0_0")`.
pub fn loadable_path(unit: &str, test: &str) -> Option<PathBuf> {
    Some(shared()?.join(unit).join(format!("{test}_fbuf")))
}

/// The hardware build a regression test targets (by its name suffix).
pub fn config_for(test: &str) -> HwConfig {
    if test.ends_with("_small") {
        HwConfig::new(&nvdla_hw::NV_SMALL)
    } else if test.ends_with("_large") {
        HwConfig::new(&nvdla_hw::NV_LARGE)
    } else {
        HwConfig::new(&nvdla_hw::NV_FULL)
    }
}

/// Lays out the loadable's memory (each entry 4 KiB-aligned from [`MEM_BASE`], `SET`
/// contents copied from blobs), binds the first DLA1 task's address list, and upgrades a
/// legacy surface list as the runtime does.
pub fn load(bytes: &[u8], version: HwVersion) -> FakeHw {
    let l = Loadable::parse(bytes).expect("loadable parses");
    let mut hw = FakeHw::new(version);
    let mut bases: HashMap<u16, (u64, u64)> = HashMap::new();
    let mut next = MEM_BASE;
    for m in l.memory().iter() {
        let align = u64::from(m.alignment()).max(4096);
        next = next.div_ceil(align) * align;
        bases.insert(m.id(), (next, m.size()));
        next += m.size().max(1);
    }
    hw.mem = vec![0; (next - MEM_BASE) as usize];
    for m in l.memory().iter() {
        let (base, size) = bases[&m.id()];
        for i in 0..m.contents_len() {
            let Some((name, off)) = m.content(i) else {
                continue;
            };
            let Some(blob) = l.blob(name) else { continue };
            let data = blob.data();
            let start = (base - MEM_BASE + off) as usize;
            let n = data.len().min((size - off) as usize);
            hw.mem[start..start + n].copy_from_slice(&data[..n]);
        }
    }
    let task = l
        .tasks()
        .iter()
        .find(|t| t.interface() == Interface::DLA1)
        .expect("a DLA1 task");
    let ids: Vec<u16> = task.address_list().iter().collect();
    let addrs = l.addresses();
    for id in &ids {
        let a = addrs
            .iter()
            .find(|a| a.id() == *id)
            .expect("address id in the address list");
        let (base, size) = bases[&a.mem_id()];
        hw.list.push(Region {
            addr: DeviceAddr(base + a.offset()),
            len: (size - a.offset()).max(1),
        });
    }
    // Legacy (pre-0.12) surface lists are upgraded in place before the task runs; the
    // layout is the one the descriptors show (as the runtime decides it).
    let net_blob = l.blob_at_address(ids[0]).expect("network descriptor blob");
    let v = net_blob.version();
    let layout = nvdla_loadable::cubes::dla_task(&l, &task)
        .map_or(Layout::for_version(v.major, v.minor), |t| t.layout);
    if layout == Layout::Legacy {
        let net = NetworkDesc::decode_from(&hw.read_entry(0, 0, NetworkDesc::SIZE)).unwrap();
        let n = usize::from(net.num_operations) * usize::from(net.num_rois.max(1));
        let dep_i = net.dependency_graph_index as u16;
        let surf_i = net.surface_desc_index as u16;
        let deps = hw.read_entry(dep_i, 0, n * dla::DEPENDENCY_ENTRY_SIZE);
        let mut surf = hw.read_entry(surf_i, 0, n * dla::SURFACE_CONTAINER_SIZE);
        nvdla_loadable::upgrade::surfaces_to_current(&deps, &mut surf, n).unwrap();
        hw.write_indexed(surf_i, 0, &surf).unwrap();
    }
    hw
}

/// Runs the loaded task to completion: returns the number of interrupts taken.
pub fn run(engine: &mut Engine, hw: &mut FakeHw) -> Result<usize, Error> {
    let mut p = engine.execute_task(hw)?;
    let mut n = 0;
    while p == Progress::Running {
        assert!(hw.raise(), "engine waits but no operation is running");
        n += 1;
        assert!(n < 10_000, "runaway");
        p = engine.handle_interrupt(hw)?;
    }
    Ok(n)
}

/// Loads and runs a regression test; `None` when the shared data is absent.
pub fn run_test(unit: &str, test: &str) -> Option<(FakeHw, Result<usize, Error>)> {
    let path = loadable_path(unit, test)?;
    let bytes = std::fs::read(path).unwrap();
    let cfg = config_for(test);
    let mut hw = load(&bytes, cfg.version());
    let mut engine: Engine = Engine::new(cfg);
    let r = run(&mut engine, &mut hw);
    assert!(!engine.is_running(), "engine idle after the task");
    Some((hw, r))
}
