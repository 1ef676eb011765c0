//! The six processors: how each turns its operation and surface descriptors into register
//! writes.
//!
//! A *processor* is the firmware's view of one engine (BDMA, the convolution pipeline, SDP,
//! PDP, CDP, RUBIK). Each has two register groups (ping-pong): the `D_*` registers exist
//! twice, and the unit's `S_POINTER.PRODUCER` bit chooses which copy CSB writes land in,
//! while `S_POINTER.CONSUMER` (read-only) tells which copy the hardware executes next. The
//! engine programs an idle group while the other one runs, then starts it by writing
//! `D_OP_ENABLE`. Engines with a read DMA (SDP, PDP, CDP) have a second pointer for their
//! RDMA unit, which may sit on a different group than the engine itself. BDMA has no group
//! registers at all: it takes a queue of transfers and two launch bits.
//!
//! Everything here is stateless: the scheduler ([`crate::engine`]) decides which group to
//! use and when; these functions only compute register values, in the same order and with
//! the same values as NVIDIA's reference firmware, and check every descriptor field they
//! use. Fields are masked to their register width.

use core::cell::Cell;

use nvdla_loadable::dla::{DataCube, MemType, OpDesc, OpType, Precision, SurfaceDesc};

use crate::config::{Feature, HwConfig};
use crate::error::{Error, OpRef};
use crate::hw::Hw;
use crate::regs::{glb, Block};
use crate::task::{list_index, TaskInfo};
use fields::{fld, Fld};

mod bdma;
mod cdp;
mod conv;
mod fields;
mod lut;
mod pdp;
mod rubik;
mod sdp;

/// How many times a status register is read before giving up, on a port without a clock.
pub const POLL_LIMIT: u32 = 100_000;

/// How long a status register is polled before giving up, on a port with a clock
/// ([`Hw::now_ms`]).
pub const POLL_TIMEOUT_MS: u64 = 1_000;

/// Memory behind a data cube that lives in RAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ram {
    /// DRAM through MCIF.
    Mc,
    /// CV-SRAM through CVIF.
    Cv,
}

impl Ram {
    /// `true` for DRAM: every `*_RAM_TYPE` field encodes MC as 1 and CV as 0.
    pub(crate) fn is_mc(self) -> u32 {
        match self {
            Ram::Mc => 1,
            Ram::Cv => 0,
        }
    }
}

/// Everything a processor needs while it programs one operation.
///
/// Register accesses and the most frequent field checks ([`Ctx::wr`], [`Ctx::rd`],
/// [`Ctx::check`], [`Ctx::m1`]) do not stop the caller at the first failure: they record it
/// (the first one only), and from then on no register is read or written. The entry points
/// of this module ([`program`], [`enable`], [`set_producer`], [`consumer_pointers`]) return
/// that first error ([`Ctx::finish`]), so the hardware sees exactly the accesses before it,
/// as if the code had returned there. This keeps one call and no error branch per register
/// and per check in the code, which is most of the firmware's size. Code after such a
/// check must therefore not rely on it (no indexing or unchecked arithmetic with the
/// value): it runs, with its writes dropped.
pub(crate) struct Ctx<'a, H: Hw> {
    /// The hardware.
    pub hw: &'a mut H,
    /// The hardware build.
    pub cfg: &'a HwConfig,
    /// The running task.
    pub task: &'a TaskInfo,
    /// The operation being programmed or enabled.
    pub op: OpRef,
    /// The first failure, once there is one.
    err: Cell<Option<Error>>,
}

impl<'a, H: Hw> Ctx<'a, H> {
    /// A context for `op`.
    pub(crate) fn new(hw: &'a mut H, cfg: &'a HwConfig, task: &'a TaskInfo, op: OpRef) -> Self {
        Ctx {
            hw,
            cfg,
            task,
            op,
            err: Cell::new(None),
        }
    }
}

impl<H: Hw> Ctx<'_, H> {
    /// Whether nothing failed so far.
    #[inline(always)]
    pub(crate) fn ok(&self) -> bool {
        self.err.get().is_none()
    }

    /// Records `e` unless an earlier failure is recorded.
    #[cold]
    #[inline(never)]
    fn fail(&self, e: Error) {
        if self.ok() {
            self.err.set(Some(e));
        }
    }

    /// Records an [`Error::InvalidField`] (see [`Ctx::fail`]).
    #[cold]
    #[inline(never)]
    fn fail_field(&self, field: Fld, value: u32) {
        self.fail(self.invalid(field, value));
    }

    /// The result of a processor function: the first recorded failure if there is one
    /// (it happened before anything `r` can report), else `r`.
    pub(crate) fn finish<T>(&self, r: Result<T, Error>) -> Result<T, Error> {
        match self.err.get() {
            Some(e) => Err(e),
            None => r,
        }
    }

    /// Writes register `offset` of unit `block` (nothing after a failure; a failed write
    /// is recorded).
    #[inline(always)]
    pub(crate) fn wr(&mut self, block: Block, offset: u32, value: u32) -> Result<(), Error> {
        // One constant per call site: the CSB address when one register map is compiled
        // in, else the unit and the offset inside it (below 4 KiB).
        match HwConfig::ONLY_VERSION {
            Some(v) => self.write_at(block.base(v) + offset, value),
            None => self.write_in(block_index(block) << 12 | (offset & 0xfff), value),
        }
        Ok(())
    }

    #[inline(never)]
    fn write_in(&mut self, reg: u32, value: u32) {
        if self.ok() {
            let block = BLOCKS
                .get((reg >> 12) as usize)
                .copied()
                .unwrap_or(Block::Glb);
            let addr = block.base(self.cfg.version()) + (reg & 0xfff);
            if let Err(e) = self.hw.reg_write(addr, value) {
                self.fail(e.into());
            }
        }
    }

    #[inline(never)]
    fn write_at(&mut self, addr: u32, value: u32) {
        if self.ok() {
            if let Err(e) = self.hw.reg_write(addr, value) {
                self.fail(e.into());
            }
        }
    }

    /// Reads register `offset` of unit `block` (0 without an access after a failure; a
    /// failed read is recorded and reads 0).
    #[inline(always)]
    pub(crate) fn rd(&mut self, block: Block, offset: u32) -> Result<u32, Error> {
        Ok(self.read(block, offset))
    }

    #[inline(never)]
    fn read(&mut self, block: Block, offset: u32) -> u32 {
        if !self.ok() {
            return 0;
        }
        match self.hw.reg_read(block.base(self.cfg.version()) + offset) {
            Ok(v) => v,
            Err(e) => {
                self.fail(e.into());
                0
            }
        }
    }

    /// Reads a register until `done` accepts its value: for at most [`POLL_TIMEOUT_MS`]
    /// when the port has a clock, else at most [`POLL_LIMIT`] times.
    pub(crate) fn poll(
        &mut self,
        block: Block,
        offset: u32,
        done: impl Fn(u32) -> bool,
    ) -> Result<u32, Error> {
        let start = self.hw.now_ms();
        let mut reads = 0u32;
        let last = loop {
            let v = self.read(block, offset);
            if done(v) || !self.ok() {
                return Ok(v);
            }
            reads = reads.saturating_add(1);
            let expired = match (start, self.hw.now_ms()) {
                (Some(t0), Some(now)) => now.saturating_sub(t0) >= POLL_TIMEOUT_MS,
                _ => reads >= POLL_LIMIT,
            };
            if expired {
                break v;
            }
        };
        Err(Error::Timeout {
            block,
            offset,
            last,
        })
    }

    /// Unmasks GLB interrupt sources (`S_INTR_MASK` bits are 1 = masked).
    #[inline(never)]
    pub(crate) fn unmask_interrupts(&mut self, bits: u32) -> Result<(), Error> {
        let mask = self.rd(Block::Glb, glb::S_INTR_MASK)?;
        self.wr(Block::Glb, glb::S_INTR_MASK, mask & !bits)
    }

    /// Fails unless the hardware has `feature`.
    pub(crate) fn need(&self, feature: Feature) -> Result<(), Error> {
        if self.cfg.has(feature) {
            Ok(())
        } else {
            Err(Error::FeatureAbsent {
                op: self.op,
                feature,
            })
        }
    }

    /// An [`Error::InvalidField`] for this operation.
    pub(crate) fn invalid(&self, field: Fld, value: u32) -> Error {
        Error::InvalidField {
            op: self.op,
            field: field.name(),
            value,
        }
    }

    /// Records an [`Error::InvalidField`] unless `ok` (see [`Ctx`]).
    #[inline(always)]
    pub(crate) fn check(&self, ok: bool, field: Fld, value: u32) -> Result<(), Error> {
        if !ok {
            self.fail_field(field, value);
        }
        Ok(())
    }

    /// `parsed`, or `default` after recording an [`Error::InvalidField`] for `raw` (see
    /// [`Ctx`]).
    #[inline(always)]
    pub(crate) fn or_invalid<T, E>(
        &self,
        parsed: Result<T, E>,
        default: T,
        field: Fld,
        raw: u8,
    ) -> T {
        match parsed {
            Ok(v) => v,
            Err(_) => {
                self.fail_field(field, u32::from(raw));
                default
            }
        }
    }

    /// `value - 1` for a count the hardware stores minus one; zero is recorded as an
    /// [`Error::InvalidField`] and gives 0 (see [`Ctx`]).
    #[inline(always)]
    pub(crate) fn m1(&self, value: u32, field: Fld) -> Result<u32, Error> {
        Ok(self.minus_one(value, field))
    }

    #[inline(never)]
    fn minus_one(&self, value: u32, field: Fld) -> u32 {
        match value.checked_sub(1) {
            Some(v) => v,
            None => {
                self.fail_field(field, value);
                0
            }
        }
    }

    /// A precision field, checked against the build's supported data types.
    pub(crate) fn precision(&self, raw: u8, field: Fld) -> Result<Precision, Error> {
        let p = Precision::try_from(raw).map_err(|_| self.invalid(field, u32::from(raw)))?;
        if p != Precision::Int8 {
            self.need(Feature::WidePrecision)?;
        }
        Ok(p)
    }

    /// The memory type of a cube, which must be in RAM (MC, or CV on builds with CV-SRAM);
    /// any other is recorded (see [`Ctx`]) and reads as MC.
    #[inline(always)]
    pub(crate) fn ram(&self, mem_type: u16, field: Fld) -> Result<Ram, Error> {
        Ok(self.ram_of(mem_type, field))
    }

    #[inline(never)]
    fn ram_of(&self, mem_type: u16, field: Fld) -> Ram {
        match MemType::from_raw(u32::from(mem_type)) {
            Ok(MemType::Mc) => Ram::Mc,
            Ok(MemType::Cv) => {
                if let Err(e) = self.need(Feature::Cvsram) {
                    self.fail(e);
                }
                Ram::Cv
            }
            _ => {
                self.fail_field(field, u32::from(mem_type));
                Ram::Mc
            }
        }
    }

    /// Device address of a data cube: its address-list entry plus its offset, checked so
    /// that the cube's `size` bytes lie inside the entry's buffer. A failure is recorded
    /// (see [`Ctx`]) and gives 0.
    #[inline(always)]
    pub(crate) fn cube_addr(&mut self, cube: &DataCube, field: Fld) -> Result<u64, Error> {
        Ok(self.cube_address(cube, field))
    }

    #[inline(never)]
    fn cube_address(&mut self, cube: &DataCube, field: Fld) -> u64 {
        if !self.ok() {
            return 0;
        }
        let r = self.cube_addr_of(cube, field);
        self.value_or_fail(r)
    }

    /// Device address of an operation's input cube ([`Ctx::input_addr_of`]); a failure is
    /// recorded (see [`Ctx`]) and gives 0.
    #[inline(always)]
    pub(crate) fn input_addr(
        &mut self,
        cube: &DataCube,
        bpp: u32,
        field: Fld,
    ) -> Result<u64, Error> {
        Ok(self.input_address(cube, bpp, field))
    }

    #[inline(never)]
    fn input_address(&mut self, cube: &DataCube, bpp: u32, field: Fld) -> u64 {
        if !self.ok() {
            return 0;
        }
        let r = self.input_addr_of(cube, bpp, field);
        self.value_or_fail(r)
    }

    fn value_or_fail(&self, r: Result<u64, Error>) -> u64 {
        match r {
            Ok(v) => v,
            Err(e) => {
                self.fail(e);
                0
            }
        }
    }

    /// [`Ctx::cube_addr`], stopping at a failure.
    fn cube_addr_of(&mut self, cube: &DataCube, field: Fld) -> Result<u64, Error> {
        let index = list_index(Some(self.op), field.name(), cube.address)?;
        let addr = self
            .hw
            .address_at(index, u64::from(cube.offset), cube.size as usize)?;
        Ok(addr.0)
    }

    /// Device address of an operation's input cube. On-the-fly input has none (0). With
    /// dynamic ROIs the network's input layer reads its ROI out of the full input surface,
    /// at the ROI's top-left corner (`bpp` bytes per pixel).
    fn input_addr_of(&mut self, cube: &DataCube, bpp: u32, field: Fld) -> Result<u64, Error> {
        if on_the_fly(cube) {
            return Ok(0);
        }
        let dyn_input = self
            .task
            .dynamic_roi
            .filter(|d| i32::from(d.input_layer) == i32::from(self.op.index));
        match (cube.address, dyn_input) {
            (-1, Some(d)) => {
                let roi = self
                    .task
                    .read_roi(self.hw, self.op.roi)?
                    .ok_or(self.invalid(field, 0))?;
                // Saturating: a huge offset fails the address check.
                let off = (u64::from(roi.top) * u64::from(cube.line_stride))
                    .saturating_add(u64::from(bpp) * u64::from(roi.left));
                Ok(self.hw.address_at(d.surface, off, 1)?.0)
            }
            (_, Some(_)) => Err(Error::NoAddress {
                op: Some(self.op),
                field: field.name(),
                value: cube.address,
            }),
            (_, None) => self.cube_addr_of(cube, field),
        }
    }
}

/// The units by [`block_index`].
const BLOCKS: [Block; 16] = [
    Block::Glb,
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

/// Index of `b` in [`BLOCKS`].
const fn block_index(b: Block) -> u32 {
    match b {
        Block::Glb => 0,
        Block::Mcif => 1,
        Block::Cvif => 2,
        Block::Bdma => 3,
        Block::Cdma => 4,
        Block::Csc => 5,
        Block::CmacA => 6,
        Block::CmacB => 7,
        Block::Cacc => 8,
        Block::SdpRdma => 9,
        Block::Sdp => 10,
        Block::PdpRdma => 11,
        Block::Pdp => 12,
        Block::CdpRdma => 13,
        Block::Cdp => 14,
        Block::Rubik => 15,
    }
}

/// Whether a cube is the on-the-fly connection between two engines rather than memory.
pub(crate) fn on_the_fly(cube: &DataCube) -> bool {
    cube.mem_type == u16::from(MemType::Hw.raw())
}

/// The high half of a 64-bit address.
pub(crate) fn hi(addr: u64) -> u32 {
    (addr >> 32) as u32
}

/// The low half of a 64-bit address.
pub(crate) fn lo(addr: u64) -> u32 {
    addr as u32
}

/// Facts the scheduler keeps about a prepared operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prepared {
    /// The operation uses its engine's read DMA (and so its RDMA register group).
    pub rdma_needed: bool,
    /// The LUT the operation needs (-1 for none).
    pub lut_index: i16,
    /// A BDMA operation without transfers: it completes in software.
    pub empty: bool,
}

/// Inspects a freshly read operation: RDMA use, LUT, empty BDMA.
pub(crate) fn prepare(op: &OpDesc, surface: &SurfaceDesc) -> Prepared {
    let mut p = Prepared {
        rdma_needed: false,
        lut_index: -1,
        empty: false,
    };
    match (op, surface) {
        (OpDesc::Sdp(o), SurfaceDesc::Sdp(s)) => {
            p.rdma_needed = sdp::rdma_needed(o, s);
            p.lut_index = o.lut_index;
        }
        (OpDesc::Pdp(_), SurfaceDesc::Pdp(s)) => {
            p.rdma_needed = !on_the_fly(&s.src_data);
        }
        (OpDesc::Cdp(o), _) => {
            p.rdma_needed = true;
            p.lut_index = o.lut_index;
        }
        (_, SurfaceDesc::Bdma(s)) if nvdla_hw::COMPILED_FEATURES.bdma => {
            p.empty = s.num_transfers == 0
        }
        _ => {}
    }
    p
}

/// Selects register group `group` (and RDMA group `rdma`) as the target of CSB writes.
pub(crate) fn set_producer<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    ty: OpType,
    group: u8,
    rdma: u8,
) -> Result<(), Error> {
    let r = set_producer_of(ctx, ty, group, rdma);
    ctx.finish(r)
}

fn set_producer_of<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    ty: OpType,
    group: u8,
    rdma: u8,
) -> Result<(), Error> {
    let g = u32::from(group);
    let r = u32::from(rdma);
    match ty {
        // BDMA has no register groups; the launch bit picks the queue.
        OpType::Bdma => Ok(()),
        OpType::Conv => conv::set_producer(ctx, g),
        OpType::Sdp => {
            ctx.wr(Block::Sdp, crate::regs::sdp::S_POINTER, g)?;
            ctx.wr(Block::SdpRdma, crate::regs::sdp_rdma::S_POINTER, r)
        }
        OpType::Pdp => {
            ctx.wr(Block::Pdp, crate::regs::pdp::S_POINTER, g)?;
            ctx.wr(Block::PdpRdma, crate::regs::pdp_rdma::S_POINTER, r)
        }
        // CDP always uses the same group for its RDMA.
        OpType::Cdp => {
            ctx.wr(Block::Cdp, crate::regs::cdp::S_POINTER, g)?;
            ctx.wr(Block::CdpRdma, crate::regs::cdp_rdma::S_POINTER, g)
        }
        OpType::Rubik if nvdla_hw::COMPILED_FEATURES.rubik => {
            ctx.wr(Block::Rubik, crate::regs::rubik::S_POINTER, g)
        }
        // Not compiled in: its operations are refused before they get here.
        OpType::Rubik => Ok(()),
    }
}

/// Which groups the hardware will consume next: `(engine group, rdma group)`.
pub(crate) fn consumer_pointers<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    ty: OpType,
) -> Result<(u8, u8), Error> {
    let r = consumer_pointers_of(ctx, ty);
    ctx.finish(r)
}

fn consumer_pointers_of<H: Hw>(ctx: &mut Ctx<'_, H>, ty: OpType) -> Result<(u8, u8), Error> {
    use crate::regs::{bdma, cacc, cdp, cdp_rdma, pdp, pdp_rdma, rubik, sdp, sdp_rdma};
    let pointer = |v: u32| cacc::S_POINTER::CONSUMER.read(v) as u8;
    let any = &nvdla_hw::COMPILED_FEATURES;
    Ok(match ty {
        OpType::Bdma if any.bdma => {
            // BDMA has no pointer: a busy group 0 means the next launch goes to group 1.
            let st = ctx.rd(Block::Bdma, bdma::STATUS)?;
            (bdma::STATUS::GRP0_BUSY.read(st) as u8, 0)
        }
        OpType::Conv => (pointer(ctx.rd(Block::Cacc, cacc::S_POINTER)?), 0),
        OpType::Sdp => {
            let g = pointer(ctx.rd(Block::Sdp, sdp::S_POINTER)?);
            (g, pointer(ctx.rd(Block::SdpRdma, sdp_rdma::S_POINTER)?))
        }
        OpType::Pdp => {
            let g = pointer(ctx.rd(Block::Pdp, pdp::S_POINTER)?);
            (g, pointer(ctx.rd(Block::PdpRdma, pdp_rdma::S_POINTER)?))
        }
        OpType::Cdp => {
            let g = pointer(ctx.rd(Block::Cdp, cdp::S_POINTER)?);
            (g, pointer(ctx.rd(Block::CdpRdma, cdp_rdma::S_POINTER)?))
        }
        OpType::Rubik if any.rubik => (pointer(ctx.rd(Block::Rubik, rubik::S_POINTER)?), 0),
        // Not compiled in: their operations are refused before they get here.
        OpType::Bdma | OpType::Rubik => (0, 0),
    })
}

/// Programs the selected register group for one operation. Returns the LUT it loaded
/// (-1 for none).
pub(crate) fn program<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    group: u8,
    rdma_needed: bool,
    op: &OpDesc,
    surface: &SurfaceDesc,
) -> Result<i16, Error> {
    let r = program_op(ctx, group, rdma_needed, op, surface);
    ctx.finish(r)
}

fn program_op<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    group: u8,
    rdma_needed: bool,
    op: &OpDesc,
    surface: &SurfaceDesc,
) -> Result<i16, Error> {
    // BDMA and RUBIK descriptors are never read when no compiled-in build has them
    // (`task::compiled_unit`); the guards let the compiler drop their arms.
    let any = &nvdla_hw::COMPILED_FEATURES;
    match (op, surface) {
        (OpDesc::Bdma(_), SurfaceDesc::Bdma(s)) if any.bdma => bdma::program(ctx, s).map(|_| -1),
        (OpDesc::Conv(o), SurfaceDesc::Conv(s)) => conv::program(ctx, group, o, s).map(|_| -1),
        (OpDesc::Sdp(o), SurfaceDesc::Sdp(s)) => sdp::program(ctx, rdma_needed, o, s),
        (OpDesc::Pdp(o), SurfaceDesc::Pdp(s)) => pdp::program(ctx, o, s).map(|_| -1),
        (OpDesc::Cdp(o), SurfaceDesc::Cdp(s)) => cdp::program(ctx, o, s),
        (OpDesc::Rubik(o), SurfaceDesc::Rubik(s)) if any.rubik => {
            rubik::program(ctx, o, s).map(|_| -1)
        }
        // Both are read with the same op type, so they always match.
        _ => Err(ctx.invalid(fld!("op_type"), u32::from(op.op_type().raw()))),
    }
}

/// Starts the programmed group. Returns `true` when the operation completed at once in
/// software (a BDMA operation without transfers).
pub(crate) fn enable<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    ty: OpType,
    group: u8,
    prepared: &Prepared,
) -> Result<bool, Error> {
    let r = enable_op(ctx, ty, group, prepared);
    ctx.finish(r)
}

fn enable_op<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    ty: OpType,
    group: u8,
    prepared: &Prepared,
) -> Result<bool, Error> {
    use crate::regs::{cdp, cdp_rdma, pdp, pdp_rdma, rubik, sdp, sdp_rdma};
    const ON: u32 = 1;
    let any = &nvdla_hw::COMPILED_FEATURES;
    match ty {
        OpType::Bdma if any.bdma => return bdma::enable(ctx, group, prepared.empty),
        OpType::Conv => conv::enable(ctx)?,
        OpType::Sdp => {
            if prepared.rdma_needed {
                ctx.wr(Block::SdpRdma, sdp_rdma::D_OP_ENABLE, ON)?;
            }
            ctx.wr(Block::Sdp, sdp::D_OP_ENABLE, ON)?;
        }
        OpType::Pdp => {
            if prepared.rdma_needed {
                ctx.wr(Block::PdpRdma, pdp_rdma::D_OP_ENABLE, ON)?;
            }
            ctx.wr(Block::Pdp, pdp::D_OP_ENABLE, ON)?;
        }
        OpType::Cdp => {
            ctx.wr(Block::CdpRdma, cdp_rdma::D_OP_ENABLE, ON)?;
            ctx.wr(Block::Cdp, cdp::D_OP_ENABLE, ON)?;
        }
        OpType::Rubik if any.rubik => ctx.wr(Block::Rubik, rubik::D_OP_ENABLE, ON)?,
        // Not compiled in: their operations are refused before they get here.
        OpType::Bdma | OpType::Rubik => {}
    }
    Ok(false)
}

/// Checks that processor `ty` exists on this build.
pub(crate) fn present(cfg: &HwConfig, ty: OpType, op: OpRef) -> Result<(), Error> {
    let feature = match ty {
        OpType::Bdma => Feature::Bdma,
        OpType::Rubik => Feature::Rubik,
        _ => return Ok(()),
    };
    if cfg.has(feature) {
        Ok(())
    } else {
        Err(Error::FeatureAbsent { op, feature })
    }
}
