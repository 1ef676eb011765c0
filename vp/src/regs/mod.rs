//! CSB register files.
//!
//! Each block owns a 4 KiB window of the CSB (configuration space bus) address space.
//! Register names, offsets, reset values and access masks are `nvdla-hw`'s register map
//! ([`nvdla_hw::regs`], generated from NVIDIA's register manuals); the engines name
//! registers by typed identifiers (`ids::sdp::D_DATA_FORMAT`, a [`Reg`]) and decode
//! fields with the generated bitfields (`ids::cdma::D_MISC_CFG::PROC_PRECISION`), so a
//! misspelt register or field does not compile. Register storage is indexed by
//! [`Reg::index`].
//!
//! Registers named `D_*` are duplicated: the hardware has two register groups so that
//! software can program the next layer while the current one runs ("ping-pong",
//! hwarch "Programming sequence"). `S_POINTER.PRODUCER` selects the group CSB accesses
//! go to; the read-only `S_POINTER.CONSUMER` names the group the engine executes next.
//! Writing `D_OP_ENABLE = 1` marks the producer group ready; when the engine finishes a
//! group it clears that group's `D_OP_ENABLE` and the consumer pointer flips.

use crate::config::HwVersion;
pub use nvdla_hw::regs::ids;
pub use nvdla_hw::regs::{
    Reg, RegDesc, Unit as Block, UnitDesc as BlockDef, UNIT_WINDOW as BLOCK_WINDOW,
};
use tock_registers::fields::Field;
use tock_registers::{LocalRegisterCopy, RegisterLongName};

/// Static description of one register in one generation.
pub type RegDef = RegDesc;

/// The register map of one hardware version.
pub fn blocks(version: HwVersion) -> &'static [BlockDef] {
    nvdla_hw::regs::units(version)
}

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

/// Marks an offset of the block window that names no register.
const HOLE: u16 = u16::MAX;

/// Register storage of one block.
#[derive(Debug, Clone)]
pub struct RegFile {
    def: &'static BlockDef,
    version: HwVersion,
    /// Register index ([`Reg::index`]) per word of the 4 KiB window (`HOLE`: none).
    by_offset: Box<[u16; (BLOCK_WINDOW / 4) as usize]>,
    /// Description per register index (`None`: not in this generation).
    descs: Vec<Option<&'static RegDesc>>,
    /// Per register index: duplicated per group.
    dual: Vec<bool>,
    /// Single copy of `S_*`/`CFG_*` registers, group 0 copy of `D_*` registers.
    vals: [Vec<u32>; 2],
    /// Group written by CSB accesses (`S_POINTER.PRODUCER`).
    pub producer: usize,
    /// Group executed next (`S_POINTER.CONSUMER`).
    pub consumer: usize,
    /// `D_OP_ENABLE` per group.
    pub enabled: [bool; 2],
    /// `S_POINTER`, `S_STATUS` and `D_OP_ENABLE` when the block has register groups.
    groups: Option<[Reg; 3]>,
}

impl RegFile {
    /// A register file at reset.
    pub fn new(version: HwVersion, def: &'static BlockDef) -> Self {
        let ids = def.unit.regs();
        let mut by_offset = Box::new([HOLE; (BLOCK_WINDOW / 4) as usize]);
        let mut descs = vec![None; ids.len()];
        let mut reset = vec![0; ids.len()];
        let mut dual = vec![false; ids.len()];
        let mut special = [None; 3];
        for r in def.regs {
            let id = ids
                .iter()
                .copied()
                .find(|i| i.offset() == r.offset)
                .expect("every register of the map has an identifier");
            by_offset[(r.offset / 4) as usize] = id.index() as u16;
            descs[id.index()] = Some(r);
            reset[id.index()] = r.reset;
            dual[id.index()] = r.name.starts_with("D_");
            match r.name {
                "S_POINTER" => special[0] = Some(id),
                "S_STATUS" => special[1] = Some(id),
                "D_OP_ENABLE" => special[2] = Some(id),
                _ => {}
            }
        }
        let groups = match special {
            [Some(p), Some(s), Some(e)] => Some([p, s, e]),
            _ => None,
        };
        if groups.is_none() {
            dual.iter_mut().for_each(|d| *d = false);
        }
        RegFile {
            def,
            version,
            by_offset,
            descs,
            dual,
            vals: [reset.clone(), reset],
            producer: 0,
            consumer: 0,
            enabled: [false; 2],
            groups,
        }
    }

    /// The static description.
    pub fn def(&self) -> &'static BlockDef {
        self.def
    }

    /// Register identifier at a byte offset (`None` for a hole in the map).
    pub fn id_at(&self, offset: u32) -> Option<Reg> {
        if offset >= BLOCK_WINDOW || offset & 3 != 0 {
            return None;
        }
        match self.by_offset[(offset / 4) as usize] {
            HOLE => None,
            i => Some(self.def.unit.regs()[usize::from(i)]),
        }
    }

    /// Register definition at a byte offset.
    pub fn reg_at(&self, offset: u32) -> Option<&'static RegDef> {
        self.desc(self.id_at(offset)?)
    }

    /// Register definition by manual name (trace input: `NVDLA_<BLOCK>.<NAME>_0`).
    pub fn reg_named(&self, name: &str) -> Option<&'static RegDef> {
        self.def.regs.iter().find(|r| r.name == name)
    }

    /// Description of `r` in this generation (`None`: the generation has no such register).
    pub fn desc(&self, r: Reg) -> Option<&'static RegDef> {
        debug_assert_eq!(r.unit(), self.def.unit, "register of another block");
        self.descs[r.index()]
    }

    /// True when this generation has register `r` (registers of only v1 or only v2).
    pub fn has(&self, r: Reg) -> bool {
        r.gens().has(self.version)
    }

    /// True when this block has ping-pong groups.
    pub fn has_groups(&self) -> bool {
        self.groups.is_some()
    }

    /// `D_OP_ENABLE` of a block with register groups.
    pub fn op_enable(&self) -> Option<Reg> {
        self.groups.map(|g| g[2])
    }

    #[inline]
    fn slot(&self, i: usize, group: usize) -> usize {
        if self.dual[i] {
            group & 1
        } else {
            0
        }
    }

    /// Index of `r`, checking (in debug builds) that it belongs to this block and
    /// generation: reading a register the generation lacks is a model bug, handled
    /// explicitly with [`RegFile::has`].
    #[inline]
    fn index(&self, r: Reg) -> usize {
        debug_assert_eq!(r.unit(), self.def.unit, "register of another block");
        debug_assert!(
            self.descs[r.index()].is_some(),
            "{}+{:#x} does not exist on {:?}",
            self.def.unit,
            r.offset(),
            self.version
        );
        r.index()
    }

    /// Stores a value (masked by nothing) for hardware-side updates of status registers.
    pub fn set_hw(&mut self, r: Reg, value: u32) {
        let i = self.index(r);
        self.vals[0][i] = value;
        self.vals[1][i] = value;
    }

    /// Stores a hardware-updated value (status) into one group's copy of a register.
    pub fn set_group(&mut self, group: usize, r: Reg, value: u32) {
        let i = self.index(r);
        let slot = self.slot(i, group);
        self.vals[slot][i] = value;
    }

    /// Value of register `r` in `group` as the engine sees it.
    #[inline]
    pub fn get(&self, group: usize, r: Reg) -> u32 {
        let i = self.index(r);
        self.vals[self.slot(i, group)][i]
    }

    /// Value of register `r` from the group the engine executes next.
    #[inline]
    pub fn cur(&self, r: Reg) -> u32 {
        self.get(self.consumer, r)
    }

    /// [`RegFile::cur`] as a typed copy for field decoding with the generated bitfields
    /// (`f.cur_as::<ids::pdp::D_POOLING_KERNEL_CFG::Register>(ids::pdp::D_POOLING_KERNEL_CFG)`).
    pub fn cur_as<R: RegisterLongName>(&self, r: Reg) -> LocalRegisterCopy<u32, R> {
        LocalRegisterCopy::new(self.cur(r))
    }

    /// One field of register `r` from the executing group
    /// (`f.field(ids::cdma::D_MISC_CFG, ids::cdma::D_MISC_CFG::PROC_PRECISION)`).
    #[inline]
    pub fn field<R: RegisterLongName>(&self, r: Reg, field: Field<u32, R>) -> u32 {
        field.read(self.cur(r))
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
        let id = self.id_at(offset)?;
        let r = self.descs[id.index()]?;
        let v = match self.groups {
            Some([p, _, _]) if p == id => (self.producer as u32) | ((self.consumer as u32) << 16),
            Some([_, s, _]) if s == id => {
                (self.group_status(0) as u32) | ((self.group_status(1) as u32) << 16)
            }
            Some([_, _, e]) if e == id => u32::from(self.enabled[self.producer]),
            _ => self.vals[self.slot(id.index(), self.producer)][id.index()],
        };
        Some(v & r.rmask)
    }

    /// CSB write of a known register: stores the writable bits. Returns the register
    /// written, or `None` for a hole in the map. Side effects (op enable, pointers) are
    /// handled here for the generic part; the platform reacts to the returned register.
    pub fn write(&mut self, offset: u32, value: u32) -> Option<Reg> {
        let id = self.id_at(offset)?;
        let r = self.descs[id.index()]?;
        let i = id.index();
        let slot = self.slot(i, self.producer);
        let old = self.vals[slot][i];
        self.vals[slot][i] = (old & !r.wmask) | (value & r.wmask);
        match self.groups {
            Some([p, _, _]) if p == id => self.producer = (value & 1) as usize,
            Some([_, _, e]) if e == id && value & 1 == 1 => self.enabled[self.producer] = true,
            _ => {}
        }
        Some(id)
    }

    /// Marks the consumer group done: clears its enable and flips the consumer pointer.
    pub fn complete_group(&mut self) -> usize {
        let g = self.consumer;
        self.enabled[g] = false;
        if let Some([_, _, e]) = self.groups {
            self.vals[g][e.index()] = 0;
        }
        self.consumer ^= 1;
        g
    }

    /// True when the consumer group is enabled.
    pub fn consumer_enabled(&self) -> bool {
        self.groups.is_some() && self.enabled[self.consumer]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(v: HwVersion, b: Block) -> RegFile {
        RegFile::new(v, blocks(v).iter().find(|d| d.unit == b).unwrap())
    }

    #[test]
    fn maps_have_expected_bases() {
        let base = |v, b| blocks(v).iter().find(|d| d.unit == b).map(|d| d.base);
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
        let w = ids::pdp::D_DATA_CUBE_IN_WIDTH.offset();
        let ptr = ids::pdp::S_POINTER.offset();
        let en = ids::pdp::D_OP_ENABLE.offset();
        f.write(w, 7);
        f.write(ptr, 1);
        assert_eq!(f.read(w), Some(0));
        f.write(w, 3);
        assert_eq!(f.get(0, ids::pdp::D_DATA_CUBE_IN_WIDTH), 7);
        assert_eq!(f.get(1, ids::pdp::D_DATA_CUBE_IN_WIDTH), 3);
        assert_eq!(f.read(ptr), Some(1));
        f.write(en, 1);
        assert_eq!(f.read(en), Some(1));
        assert!(!f.consumer_enabled());
        assert_eq!(f.read(ids::pdp::S_STATUS.offset()), Some(2 << 16));
        f.write(ptr, 0);
        f.write(en, 1);
        assert!(f.consumer_enabled());
        let st = ids::pdp::S_STATUS.offset();
        assert_eq!(f.read(st), Some(1 | (2 << 16)));
        assert_eq!(f.complete_group(), 0);
        assert_eq!(f.read(ptr), Some(1 << 16));
        assert!(f.consumer_enabled());
    }

    #[test]
    fn read_only_bits_keep_reset_value() {
        let mut f = file(HwVersion::V1, Block::Glb);
        let ver = f.desc(ids::glb::S_NVDLA_HW_VERSION).unwrap();
        f.write(ver.offset, 0);
        assert_eq!(f.read(ver.offset), Some(ver.reset));
        assert_eq!(f.read(0x800), None);
    }
}
