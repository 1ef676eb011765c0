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

use nvdla_loadable::dla::{DataCube, MemType, OpDesc, OpType, Precision, SurfaceDesc};

use crate::config::{Feature, HwConfig};
use crate::error::{Error, OpRef};
use crate::hw::Hw;
use crate::regs::{glb, Block};
use crate::task::{list_index, TaskInfo};

mod bdma;
mod cdp;
mod conv;
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
pub(crate) struct Ctx<'a, H: Hw> {
    /// The hardware.
    pub hw: &'a mut H,
    /// The hardware build.
    pub cfg: &'a HwConfig,
    /// The running task.
    pub task: &'a TaskInfo,
    /// The operation being programmed or enabled.
    pub op: OpRef,
}

impl<H: Hw> Ctx<'_, H> {
    /// Writes register `offset` of unit `block`.
    pub(crate) fn wr(&mut self, block: Block, offset: u32, value: u32) -> Result<(), Error> {
        self.hw
            .reg_write(block.base(self.cfg.version()) + offset, value)?;
        Ok(())
    }

    /// Reads register `offset` of unit `block`.
    pub(crate) fn rd(&mut self, block: Block, offset: u32) -> Result<u32, Error> {
        Ok(self.hw.reg_read(block.base(self.cfg.version()) + offset)?)
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
            let v = self.rd(block, offset)?;
            if done(v) {
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
    pub(crate) fn invalid(&self, field: &'static str, value: u32) -> Error {
        Error::InvalidField {
            op: self.op,
            field,
            value,
        }
    }

    /// Fails with [`Error::InvalidField`] unless `ok`.
    pub(crate) fn check(&self, ok: bool, field: &'static str, value: u32) -> Result<(), Error> {
        if ok {
            Ok(())
        } else {
            Err(self.invalid(field, value))
        }
    }

    /// `value - 1` for a count the hardware stores minus one; zero is rejected.
    pub(crate) fn m1(&self, value: u32, field: &'static str) -> Result<u32, Error> {
        value.checked_sub(1).ok_or(self.invalid(field, value))
    }

    /// A precision field, checked against the build's supported data types.
    pub(crate) fn precision(&self, raw: u8, field: &'static str) -> Result<Precision, Error> {
        let p = Precision::try_from(raw).map_err(|_| self.invalid(field, u32::from(raw)))?;
        if p != Precision::Int8 {
            self.need(Feature::WidePrecision)?;
        }
        Ok(p)
    }

    /// The memory type of a cube, which must be in RAM (MC, or CV on builds with CV-SRAM).
    pub(crate) fn ram(&self, mem_type: u16, field: &'static str) -> Result<Ram, Error> {
        match MemType::from_raw(u32::from(mem_type)) {
            Ok(MemType::Mc) => Ok(Ram::Mc),
            Ok(MemType::Cv) => {
                self.need(Feature::Cvsram)?;
                Ok(Ram::Cv)
            }
            _ => Err(self.invalid(field, u32::from(mem_type))),
        }
    }

    /// Device address of a data cube: its address-list entry plus its offset, checked so
    /// that the cube's `size` bytes lie inside the entry's buffer.
    pub(crate) fn cube_addr(&mut self, cube: &DataCube, field: &'static str) -> Result<u64, Error> {
        let index = list_index(Some(self.op), field, cube.address)?;
        let addr = self
            .hw
            .address_at(index, u64::from(cube.offset), cube.size as usize)?;
        Ok(addr.0)
    }

    /// Device address of an operation's input cube. On-the-fly input has none (0). With
    /// dynamic ROIs the network's input layer reads its ROI out of the full input surface,
    /// at the ROI's top-left corner (`bpp` bytes per pixel).
    pub(crate) fn input_addr(
        &mut self,
        cube: &DataCube,
        bpp: u32,
        field: &'static str,
    ) -> Result<u64, Error> {
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
                let off = u64::from(roi.top) * u64::from(cube.line_stride)
                    + u64::from(bpp) * u64::from(roi.left);
                Ok(self.hw.address_at(d.surface, off, 1)?.0)
            }
            (_, Some(_)) => Err(Error::NoAddress {
                op: Some(self.op),
                field,
                value: cube.address,
            }),
            (_, None) => self.cube_addr(cube, field),
        }
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
        (_, SurfaceDesc::Bdma(s)) => p.empty = s.num_transfers == 0,
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
        OpType::Rubik => ctx.wr(Block::Rubik, crate::regs::rubik::S_POINTER, g),
    }
}

/// Which groups the hardware will consume next: `(engine group, rdma group)`.
pub(crate) fn consumer_pointers<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    ty: OpType,
) -> Result<(u8, u8), Error> {
    use crate::regs::{bdma, cacc, cdp, cdp_rdma, pdp, pdp_rdma, rubik, sdp, sdp_rdma};
    let pointer = |v: u32| cacc::S_POINTER::CONSUMER.read(v) as u8;
    Ok(match ty {
        OpType::Bdma => {
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
        OpType::Rubik => (pointer(ctx.rd(Block::Rubik, rubik::S_POINTER)?), 0),
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
    match (op, surface) {
        (OpDesc::Bdma(_), SurfaceDesc::Bdma(s)) => bdma::program(ctx, s).map(|_| -1),
        (OpDesc::Conv(o), SurfaceDesc::Conv(s)) => conv::program(ctx, group, o, s).map(|_| -1),
        (OpDesc::Sdp(o), SurfaceDesc::Sdp(s)) => sdp::program(ctx, rdma_needed, o, s),
        (OpDesc::Pdp(o), SurfaceDesc::Pdp(s)) => pdp::program(ctx, o, s).map(|_| -1),
        (OpDesc::Cdp(o), SurfaceDesc::Cdp(s)) => cdp::program(ctx, o, s),
        (OpDesc::Rubik(o), SurfaceDesc::Rubik(s)) => rubik::program(ctx, o, s).map(|_| -1),
        // Both are read with the same op type, so they always match.
        _ => Err(ctx.invalid("op_type", u32::from(op.op_type().raw()))),
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
    use crate::regs::{cdp, cdp_rdma, pdp, pdp_rdma, rubik, sdp, sdp_rdma};
    const ON: u32 = 1;
    match ty {
        OpType::Bdma => return bdma::enable(ctx, group, prepared.empty),
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
        OpType::Rubik => ctx.wr(Block::Rubik, rubik::D_OP_ENABLE, ON)?,
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
