//! CSB register files.
//!
//! Each block owns a 4 KiB window of the CSB (configuration space bus) address space.
//! Register names, offsets, reset values and access masks are tables generated from
//! NVIDIA's register descriptions (`map_v1.rs` from `nvdlav1:cmod/include/arnvdla.h`,
//! `map_v2.rs` from `master:spec/manual/NVDLA_*.rdl`) by `vp/tools/gen_regmap.py`.
//!
//! Registers named `D_*` are duplicated: the hardware has two register groups so that
//! software can program the next layer while the current one runs ("ping-pong",
//! hwarch "Programming sequence"). `S_POINTER.PRODUCER` selects the group CSB accesses
//! go to; the read-only `S_POINTER.CONSUMER` names the group the engine executes next.
//! Writing `D_OP_ENABLE = 1` marks the producer group ready; when the engine finishes a
//! group it clears that group's `D_OP_ENABLE` and the consumer pointer flips.

pub mod fields;
// Generated tables: one register per line, left as the generator writes them.
#[rustfmt::skip]
mod map_v1;
#[rustfmt::skip]
mod map_v2;

use crate::config::HwVersion;
use std::collections::HashMap;
use std::fmt;

/// A CSB block (unit) of the hardware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Block {
    /// Configuration ROM (v2).
    Cfgrom,
    /// Global: version, interrupt mask/set/status.
    Glb,
    /// Global error collector (present in the maps, not modelled beyond storage).
    Gec,
    /// Memory client interface (DRAM).
    Mcif,
    /// Secondary memory client interface (CVSRAM).
    Cvif,
    /// Bridge DMA.
    Bdma,
    /// Convolution DMA.
    Cdma,
    /// Convolution sequence controller.
    Csc,
    /// Convolution MAC array, half A.
    CmacA,
    /// Convolution MAC array, half B.
    CmacB,
    /// Convolution accumulator.
    Cacc,
    /// SDP read DMA.
    SdpRdma,
    /// Single data point processor.
    Sdp,
    /// PDP read DMA.
    PdpRdma,
    /// Planar data processor (pooling).
    Pdp,
    /// CDP read DMA.
    CdpRdma,
    /// Channel data processor (LRN).
    Cdp,
    /// RUBIK data reshape engine.
    Rubik,
}

impl Block {
    /// Every block, in CSB order.
    pub const ALL: [Block; 18] = [
        Block::Cfgrom,
        Block::Glb,
        Block::Gec,
        Block::Mcif,
        Block::Cvif,
        Block::Bdma,
        Block::Cdma,
        Block::Csc,
        Block::CmacA,
        Block::CmacB,
        Block::Cacc,
        Block::SdpRdma,
        Block::Sdp,
        Block::PdpRdma,
        Block::Pdp,
        Block::CdpRdma,
        Block::Cdp,
        Block::Rubik,
    ];

    /// Name as used in register manuals and traces (`NVDLA_<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Block::Cfgrom => "CFGROM",
            Block::Glb => "GLB",
            Block::Gec => "GEC",
            Block::Mcif => "MCIF",
            Block::Cvif => "CVIF",
            Block::Bdma => "BDMA",
            Block::Cdma => "CDMA",
            Block::Csc => "CSC",
            Block::CmacA => "CMAC_A",
            Block::CmacB => "CMAC_B",
            Block::Cacc => "CACC",
            Block::SdpRdma => "SDP_RDMA",
            Block::Sdp => "SDP",
            Block::PdpRdma => "PDP_RDMA",
            Block::Pdp => "PDP",
            Block::CdpRdma => "CDP_RDMA",
            Block::Cdp => "CDP",
            Block::Rubik => "RBK",
        }
    }

    /// Looks a block up by manual name (`RUBIK` is accepted for `RBK`).
    pub fn from_name(s: &str) -> Option<Block> {
        if s == "RUBIK" {
            return Some(Block::Rubik);
        }
        Block::ALL.iter().copied().find(|b| b.name() == s)
    }
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Static description of one register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegDef {
    /// Name without the `NVDLA_<BLOCK>_` prefix and the `_0` suffix.
    pub name: &'static str,
    /// Byte offset inside the block.
    pub offset: u32,
    /// Reset value.
    pub reset: u32,
    /// Bits that read back.
    pub rmask: u32,
    /// Bits software can write.
    pub wmask: u32,
}

impl RegDef {
    /// True for registers duplicated per ping-pong group (`D_*`).
    pub fn is_dual(&self) -> bool {
        self.name.starts_with("D_")
    }
}

/// Static description of one block's register window.
#[derive(Debug)]
pub struct BlockDef {
    /// The block.
    pub block: Block,
    /// CSB byte address of the block.
    pub base: u32,
    /// Its registers.
    pub regs: &'static [RegDef],
}

/// The register map of one hardware version.
pub fn blocks(version: HwVersion) -> &'static [BlockDef] {
    match version {
        HwVersion::V1 => map_v1::BLOCKS,
        HwVersion::V2 => map_v2::BLOCKS,
    }
}

/// Size of each block's CSB window in bytes.
pub const BLOCK_WINDOW: u32 = 0x1000;

/// Run state of one ping-pong group as reported by `S_STATUS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupStatus {
    /// Not enabled.
    Idle = 0,
    /// Executing.
    Running = 1,
    /// Enabled, waiting for its turn or for a partner block.
    Pending = 2,
}

/// Register storage of one block.
#[derive(Debug, Clone)]
pub struct RegFile {
    def: &'static BlockDef,
    by_offset: HashMap<u32, usize>,
    by_name: HashMap<&'static str, usize>,
    /// Single copy of `S_*`/`CFG_*` registers, group 0 copy of `D_*` registers.
    vals: [Vec<u32>; 2],
    /// Group written by CSB accesses (`S_POINTER.PRODUCER`).
    pub producer: usize,
    /// Group executed next (`S_POINTER.CONSUMER`).
    pub consumer: usize,
    /// `D_OP_ENABLE` per group.
    pub enabled: [bool; 2],
    has_groups: bool,
}

impl RegFile {
    /// A register file at reset.
    pub fn new(def: &'static BlockDef) -> Self {
        let by_offset = def
            .regs
            .iter()
            .enumerate()
            .map(|(i, r)| (r.offset, i))
            .collect();
        let by_name = def
            .regs
            .iter()
            .enumerate()
            .map(|(i, r)| (r.name, i))
            .collect();
        let reset: Vec<u32> = def.regs.iter().map(|r| r.reset).collect();
        let has_groups = def.regs.iter().any(|r| r.name == "S_POINTER");
        RegFile {
            def,
            by_offset,
            by_name,
            vals: [reset.clone(), reset],
            producer: 0,
            consumer: 0,
            enabled: [false; 2],
            has_groups,
        }
    }

    /// The static description.
    pub fn def(&self) -> &'static BlockDef {
        self.def
    }

    /// Register definition at a byte offset.
    pub fn reg_at(&self, offset: u32) -> Option<&'static RegDef> {
        let def = self.def;
        self.by_offset.get(&offset).map(|&i| &def.regs[i])
    }

    /// Register definition by name.
    pub fn reg_named(&self, name: &str) -> Option<&'static RegDef> {
        let def = self.def;
        self.by_name.get(name).map(|&i| &def.regs[i])
    }

    /// True when this block has ping-pong groups.
    pub fn has_groups(&self) -> bool {
        self.has_groups
    }

    fn slot(&self, i: usize, group: usize) -> usize {
        if self.has_groups && self.def.regs[i].is_dual() {
            group & 1
        } else {
            0
        }
    }

    /// Raw stored value of register index `i` as seen from `group`.
    fn stored(&self, i: usize, group: usize) -> u32 {
        self.vals[self.slot(i, group)][i]
    }

    /// Stores a value (masked by nothing) for hardware-side updates of status registers.
    pub fn set_hw(&mut self, name: &str, value: u32) {
        if let Some(&i) = self.by_name.get(name) {
            self.vals[0][i] = value;
            self.vals[1][i] = value;
        }
    }

    /// Stores a hardware-updated value (status) into one group's copy of a register.
    pub fn set_group(&mut self, group: usize, name: &str, value: u32) {
        if let Some(&i) = self.by_name.get(name) {
            let slot = self.slot(i, group);
            self.vals[slot][i] = value;
        }
    }

    /// Value of a named register in `group` as the engine sees it (0 when the register
    /// does not exist in this map).
    pub fn get(&self, group: usize, name: &str) -> u32 {
        self.by_name.get(name).map_or(0, |&i| self.stored(i, group))
    }

    /// Value of a named register from the group the engine executes next.
    pub fn cur(&self, name: &str) -> u32 {
        self.get(self.consumer, name)
    }

    /// [`RegFile::cur`] as a typed copy for field decoding (see [`fields`]).
    pub fn cur_as<R: tock_registers::RegisterLongName>(
        &self,
        name: &str,
    ) -> tock_registers::LocalRegisterCopy<u32, R> {
        tock_registers::LocalRegisterCopy::new(self.cur(name))
    }

    /// Status of one group for `S_STATUS`: an enabled consumer group is running (the
    /// model completes it when time passes, see `Vp::run_pending`), an enabled
    /// producer-only group waits its turn.
    pub fn group_status(&self, group: usize) -> GroupStatus {
        let g = group & 1;
        if !self.enabled[g] {
            GroupStatus::Idle
        } else if g == self.consumer {
            GroupStatus::Running
        } else {
            GroupStatus::Pending
        }
    }

    /// CSB read of a known register (`None` for a hole in the map).
    pub fn read(&self, offset: u32) -> Option<u32> {
        let &i = self.by_offset.get(&offset)?;
        let r = &self.def.regs[i];
        let v = match r.name {
            "S_POINTER" if self.has_groups => {
                (self.producer as u32) | ((self.consumer as u32) << 16)
            }
            "S_STATUS" if self.has_groups => {
                (self.group_status(0) as u32) | ((self.group_status(1) as u32) << 16)
            }
            "D_OP_ENABLE" if self.has_groups => u32::from(self.enabled[self.producer]),
            _ => self.stored(i, self.producer),
        };
        Some(v & r.rmask)
    }

    /// CSB write of a known register: stores the writable bits. Returns the register
    /// written, or `None` for a hole in the map. Side effects (op enable, pointers) are
    /// handled here for the generic part; the platform reacts to the returned name.
    pub fn write(&mut self, offset: u32, value: u32) -> Option<&'static RegDef> {
        let &i = self.by_offset.get(&offset)?;
        let r = &self.def.regs[i];
        let slot = self.slot(i, self.producer);
        let old = self.vals[slot][i];
        self.vals[slot][i] = (old & !r.wmask) | (value & r.wmask);
        if self.has_groups {
            match r.name {
                "S_POINTER" => self.producer = (value & 1) as usize,
                "D_OP_ENABLE" if value & 1 == 1 => self.enabled[self.producer] = true,
                _ => {}
            }
        }
        Some(r)
    }

    /// Marks the consumer group done: clears its enable and flips the consumer pointer.
    pub fn complete_group(&mut self) -> usize {
        let g = self.consumer;
        self.enabled[g] = false;
        if let Some(&i) = self.by_name.get("D_OP_ENABLE") {
            self.vals[g][i] = 0;
        }
        self.consumer ^= 1;
        g
    }

    /// True when the consumer group is enabled.
    pub fn consumer_enabled(&self) -> bool {
        self.has_groups && self.enabled[self.consumer]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(v: HwVersion, b: Block) -> RegFile {
        RegFile::new(blocks(v).iter().find(|d| d.block == b).unwrap())
    }

    #[test]
    fn maps_have_expected_bases() {
        let base = |v, b| blocks(v).iter().find(|d| d.block == b).map(|d| d.base);
        assert_eq!(base(HwVersion::V1, Block::Glb), Some(0));
        assert_eq!(base(HwVersion::V1, Block::Bdma), Some(0x4000));
        assert_eq!(base(HwVersion::V1, Block::Rubik), Some(0x10000));
        assert_eq!(base(HwVersion::V2, Block::Cfgrom), Some(0));
        assert_eq!(base(HwVersion::V2, Block::Glb), Some(0x1000));
        assert_eq!(base(HwVersion::V2, Block::Cdp), Some(0xd000));
    }

    #[test]
    fn ping_pong_groups() {
        let mut f = file(HwVersion::V1, Block::Pdp);
        let w = f.reg_named("D_DATA_CUBE_IN_WIDTH").unwrap().offset;
        let ptr = f.reg_named("S_POINTER").unwrap().offset;
        let en = f.reg_named("D_OP_ENABLE").unwrap().offset;
        f.write(w, 7);
        f.write(ptr, 1);
        assert_eq!(f.read(w), Some(0));
        f.write(w, 3);
        assert_eq!(f.get(0, "D_DATA_CUBE_IN_WIDTH"), 7);
        assert_eq!(f.get(1, "D_DATA_CUBE_IN_WIDTH"), 3);
        assert_eq!(f.read(ptr), Some(1));
        f.write(en, 1);
        assert_eq!(f.read(en), Some(1));
        assert!(!f.consumer_enabled());
        assert_eq!(
            f.read(f.reg_named("S_STATUS").unwrap().offset),
            Some(2 << 16)
        );
        f.write(ptr, 0);
        f.write(en, 1);
        assert!(f.consumer_enabled());
        let st = f.reg_named("S_STATUS").unwrap().offset;
        assert_eq!(f.read(st), Some(1 | (2 << 16)));
        assert_eq!(f.complete_group(), 0);
        assert_eq!(f.read(ptr), Some(1 << 16));
        assert!(f.consumer_enabled());
    }

    #[test]
    fn read_only_bits_keep_reset_value() {
        let mut f = file(HwVersion::V1, Block::Glb);
        let ver = f.reg_named("S_NVDLA_HW_VERSION").unwrap();
        f.write(ver.offset, 0);
        assert_eq!(f.read(ver.offset), Some(ver.reset));
        assert_eq!(f.read(0x800), None);
    }
}
