//! BDMA: the bridge DMA, which copies strided blocks between DRAM and CV-SRAM.
//!
//! BDMA has no ping-pong register group. Software pushes *transfers* into a small hardware
//! queue (one `CFG_*` register set written per transfer, committed by `CFG_OP.EN`; the
//! queue's free space is `STATUS.FREE_SLOT`), then launches the queued batch as group 0 or 1
//! (`CFG_LAUNCH0/1`); the group number only selects which done interrupt fires.

use nvdla_loadable::dla::{BdmaSurfaceDesc, BdmaTransferDesc, MAX_BDMA_TRANSFERS};

use super::fields::{fld, Fld};
use super::{hi, lo, Ctx};
use crate::config::Feature;
use crate::error::Error;
use crate::hw::Hw;
use crate::regs::{bdma, glb, Block};
use crate::task::list_index;

/// Longest line or surface repeat count the engine accepts.
const MAX_REPEAT: u32 = 8192;

/// Queues every transfer of the operation and unmasks the BDMA done interrupts.
#[inline(never)]
pub(super) fn program<H: Hw>(ctx: &mut Ctx<'_, H>, s: &BdmaSurfaceDesc) -> Result<(), Error> {
    ctx.need(Feature::Bdma)?;
    if s.num_transfers == 0 {
        return Ok(());
    }
    let n = usize::from(s.num_transfers);
    if n > MAX_BDMA_TRANSFERS {
        return Err(ctx.invalid(fld!("dla_bdma_surface_desc.num_transfers"), n as u32));
    }
    let src_ram = ctx.ram(
        u16::from(s.source_type),
        fld!("dla_bdma_surface_desc.source_type"),
    )?;
    let dst_ram = ctx.ram(
        u16::from(s.destination_type),
        fld!("dla_bdma_surface_desc.destination_type"),
    )?;
    let cmd = (bdma::CFG_CMD::SRC_RAM_TYPE.val(src_ram.is_mc())
        + bdma::CFG_CMD::DST_RAM_TYPE.val(dst_ram.is_mc()))
    .value;
    for t in &s.transfers[..n] {
        program_transfer(ctx, t, cmd)?;
    }
    ctx.unmask_interrupts(
        (glb::S_INTR_MASK::BDMA_DONE_MASK0::SET + glb::S_INTR_MASK::BDMA_DONE_MASK1::SET).value,
    )
}

/// Bytes a strided block spans from its first byte (saturating: the checks before it
/// record an error and go on, so the fields may be anything here; a saturated extent
/// fails the range check).
fn extent(line_size: u32, lines: u32, line_stride: u32, surfaces: u32, surf_stride: u32) -> u64 {
    // Each product of two u32 fits in a u64; their sum may not.
    (u64::from(surfaces.saturating_sub(1)) * u64::from(surf_stride))
        .saturating_add(u64::from(lines.saturating_sub(1)) * u64::from(line_stride))
        .saturating_add(u64::from(line_size))
}

fn program_transfer<H: Hw>(
    ctx: &mut Ctx<'_, H>,
    t: &BdmaTransferDesc,
    cmd: u32,
) -> Result<(), Error> {
    const F: Fld = fld!("dla_bdma_transfer_desc");
    // Wait for room in the transfer queue.
    ctx.poll(Block::Bdma, bdma::STATUS, |v| {
        bdma::STATUS::FREE_SLOT.read(v) != 0
    })?;

    ctx.check(
        (1..=MAX_REPEAT).contains(&t.line_repeat),
        fld!("dla_bdma_transfer_desc.line_repeat"),
        t.line_repeat,
    )?;
    ctx.check(
        (1..=MAX_REPEAT).contains(&t.surface_repeat),
        fld!("dla_bdma_transfer_desc.surface_repeat"),
        t.surface_repeat,
    )?;
    ctx.check(
        t.line_size != 0 && t.line_size.is_multiple_of(32),
        fld!("dla_bdma_transfer_desc.line_size"),
        t.line_size,
    )?;
    ctx.check(
        t.source_line >= t.line_size,
        fld!("dla_bdma_transfer_desc.source_line"),
        t.source_line,
    )?;
    ctx.check(
        t.destination_line >= t.line_size,
        fld!("dla_bdma_transfer_desc.destination_line"),
        t.destination_line,
    )?;
    ctx.check(
        u64::from(t.source_surface) >= u64::from(t.source_line) * u64::from(t.line_repeat),
        fld!("dla_bdma_transfer_desc.source_surface"),
        t.source_surface,
    )?;
    ctx.check(
        u64::from(t.destination_surface)
            >= u64::from(t.destination_line) * u64::from(t.line_repeat),
        fld!("dla_bdma_transfer_desc.destination_surface"),
        t.destination_surface,
    )?;

    // Both blocks must lie inside their buffers.
    let src_len = extent(
        t.line_size,
        t.line_repeat,
        t.source_line,
        t.surface_repeat,
        t.source_surface,
    );
    let dst_len = extent(
        t.line_size,
        t.line_repeat,
        t.destination_line,
        t.surface_repeat,
        t.destination_surface,
    );
    let src_index = list_index(
        Some(ctx.op),
        fld!("dla_bdma_transfer_desc.source_address").name(),
        t.source_address,
    )?;
    let dst_index = list_index(
        Some(ctx.op),
        fld!("dla_bdma_transfer_desc.destination_address").name(),
        t.destination_address,
    )?;
    let too_big = |len: u64| ctx.invalid(F, len.min(u64::from(u32::MAX)) as u32);
    let src = ctx
        .hw
        .address_at(
            src_index,
            0,
            usize::try_from(src_len).map_err(|_| too_big(src_len))?,
        )?
        .0;
    let dst = ctx
        .hw
        .address_at(
            dst_index,
            0,
            usize::try_from(dst_len).map_err(|_| too_big(dst_len))?,
        )?
        .0;

    ctx.wr(Block::Bdma, bdma::CFG_SRC_ADDR_LOW, lo(src))?;
    ctx.wr(Block::Bdma, bdma::CFG_SRC_ADDR_HIGH, hi(src))?;
    ctx.wr(Block::Bdma, bdma::CFG_DST_ADDR_LOW, lo(dst))?;
    ctx.wr(Block::Bdma, bdma::CFG_DST_ADDR_HIGH, hi(dst))?;
    // Line size in 32-byte units, minus one.
    ctx.wr(
        Block::Bdma,
        bdma::CFG_LINE,
        bdma::CFG_LINE::SIZE
            .val((t.line_size >> 5).wrapping_sub(1))
            .value,
    )?;
    ctx.wr(Block::Bdma, bdma::CFG_CMD, cmd)?;
    ctx.wr(
        Block::Bdma,
        bdma::CFG_LINE_REPEAT,
        t.line_repeat.wrapping_sub(1),
    )?;
    ctx.wr(Block::Bdma, bdma::CFG_SRC_LINE, t.source_line)?;
    ctx.wr(Block::Bdma, bdma::CFG_DST_LINE, t.destination_line)?;
    ctx.wr(
        Block::Bdma,
        bdma::CFG_SURF_REPEAT,
        t.surface_repeat.wrapping_sub(1),
    )?;
    ctx.wr(Block::Bdma, bdma::CFG_SRC_SURF, t.source_surface)?;
    ctx.wr(Block::Bdma, bdma::CFG_DST_SURF, t.destination_surface)?;
    // Commit the transfer to the queue.
    ctx.wr(Block::Bdma, bdma::CFG_OP, bdma::CFG_OP::EN::ENABLE.value)
}

/// Launches the queued transfers as `group`. An operation without transfers completes at
/// once, in software (returns `true`).
pub(super) fn enable<H: Hw>(ctx: &mut Ctx<'_, H>, group: u8, empty: bool) -> Result<bool, Error> {
    if empty {
        return Ok(true);
    }
    if group == 0 {
        ctx.wr(
            Block::Bdma,
            bdma::CFG_LAUNCH0,
            bdma::CFG_LAUNCH0::GRP0_LAUNCH::YES.value,
        )?;
    } else {
        ctx.wr(
            Block::Bdma,
            bdma::CFG_LAUNCH1,
            bdma::CFG_LAUNCH1::GRP1_LAUNCH::YES.value,
        )?;
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::extent;

    #[test]
    fn extent_saturates_instead_of_overflowing() {
        assert_eq!(extent(32, 2, 64, 3, 256), 2 * 256 + 64 + 32);
        // Fields a failed check let through (fuzz: baremetal_image, "attempt to add
        // with overflow"): the sum of two u32 x u32 products exceeds u64.
        assert_eq!(
            extent(u32::MAX, u32::MAX, u32::MAX, u32::MAX, u32::MAX),
            u64::MAX
        );
    }
}
