//! Bridge DMA: bulk copies between DRAM and CVSRAM.
//!
//! Software fills the `CFG_*` registers and writes `CFG_OP.EN = 1`, which pushes a copy
//! of them into the operation queue (the cmod keeps a config FIFO of free slots reported
//! in `STATUS.FREE_SLOT`). Writing `CFG_LAUNCH0`/`CFG_LAUNCH1` launches every operation
//! queued since the previous launch as group 0/1; the group's done interrupt follows
//! the last write of its last operation (`cmod/bdma/BdmaCore.cpp`).
//!
//! One operation copies `SURF_REPEAT + 1` surfaces of `LINE_REPEAT + 1` lines of
//! `(LINE + 1) * 32` bytes; line and surface addresses advance by their strides on each
//! side independently.

use super::{addr64, EngineError};
use crate::mem::{Memory, RamType};
use crate::regs::{ids, Reg};
use tock_registers::LocalRegisterCopy;

/// Depth of the operation queue (reset value of `STATUS.FREE_SLOT` is 0x14).
pub const QUEUE_DEPTH: usize = 20;

/// Largest single operation the model performs (the register fields allow
/// 256 KiB x 2^24 x 2^24 bytes).
pub const MAX_TRANSFER: u64 = 1 << 32;

/// One queued BDMA operation, decoded from the `CFG_*` registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BdmaOp {
    /// Source address.
    pub src: u64,
    /// Destination address.
    pub dst: u64,
    /// Bytes per line.
    pub line_bytes: u64,
    /// Lines per surface.
    pub lines: u64,
    /// Surfaces.
    pub surfaces: u64,
    /// Source line stride.
    pub src_line: u64,
    /// Destination line stride.
    pub dst_line: u64,
    /// Source surface stride.
    pub src_surf: u64,
    /// Destination surface stride.
    pub dst_surf: u64,
    /// Source memory.
    pub src_ram: RamType,
    /// Destination memory.
    pub dst_ram: RamType,
}

impl BdmaOp {
    /// Decodes an operation from register values fetched by register.
    pub fn decode(get: impl Fn(Reg) -> u32) -> Self {
        use ids::bdma::{CFG_CMD, CFG_LINE};
        let cmd: LocalRegisterCopy<u32, CFG_CMD::Register> = LocalRegisterCopy::new(get(CFG_CMD));
        BdmaOp {
            src: addr64(
                get(ids::bdma::CFG_SRC_ADDR_HIGH),
                get(ids::bdma::CFG_SRC_ADDR_LOW),
            ),
            dst: addr64(
                get(ids::bdma::CFG_DST_ADDR_HIGH),
                get(ids::bdma::CFG_DST_ADDR_LOW),
            ),
            line_bytes: (u64::from(CFG_LINE::SIZE.read(get(CFG_LINE))) + 1) * 32,
            lines: u64::from(get(ids::bdma::CFG_LINE_REPEAT) & 0xff_ffff) + 1,
            surfaces: u64::from(get(ids::bdma::CFG_SURF_REPEAT) & 0xff_ffff) + 1,
            src_line: u64::from(get(ids::bdma::CFG_SRC_LINE)),
            dst_line: u64::from(get(ids::bdma::CFG_DST_LINE)),
            src_surf: u64::from(get(ids::bdma::CFG_SRC_SURF)),
            dst_surf: u64::from(get(ids::bdma::CFG_DST_SURF)),
            src_ram: RamType::from_field(cmd.read(CFG_CMD::SRC_RAM_TYPE)),
            dst_ram: RamType::from_field(cmd.read(CFG_CMD::DST_RAM_TYPE)),
        }
    }

    /// Performs the copy, line by line in hardware order.
    pub fn run(&self, mem: &mut Memory) -> Result<(), EngineError> {
        let total = self
            .line_bytes
            .saturating_mul(self.lines)
            .saturating_mul(self.surfaces);
        if total > MAX_TRANSFER {
            return Err(EngineError::Unsupported {
                block: "BDMA",
                msg: format!(
                    "transfer of {total} bytes exceeds the model's limit of {MAX_TRANSFER}"
                ),
            });
        }
        if total > mem.capacity(self.dst_ram)
            && !super::lines_are_disjoint(
                self.line_bytes,
                self.lines,
                self.dst_line,
                self.surfaces,
                self.dst_surf,
            )
        {
            return Err(EngineError::Unsupported {
                block: "BDMA",
                msg: format!(
                    "transfer of {total} bytes, more than its destination holds, written over \
                     itself: lines of {} bytes, line stride {}, surface stride {}, {} lines x \
                     {} surfaces",
                    self.line_bytes, self.dst_line, self.dst_surf, self.lines, self.surfaces
                ),
            });
        }
        let mut buf = vec![0u8; self.line_bytes as usize];
        for s in 0..self.surfaces {
            for l in 0..self.lines {
                let so = s
                    .wrapping_mul(self.src_surf)
                    .wrapping_add(l.wrapping_mul(self.src_line));
                let d_o = s
                    .wrapping_mul(self.dst_surf)
                    .wrapping_add(l.wrapping_mul(self.dst_line));
                mem.read(self.src_ram, self.src.wrapping_add(so), &mut buf)?;
                mem.write(self.dst_ram, self.dst.wrapping_add(d_o), &buf)?;
            }
        }
        Ok(())
    }
}

/// BDMA queue state.
#[derive(Debug, Clone, Default)]
pub struct Bdma {
    queue: Vec<BdmaOp>,
}

impl Bdma {
    /// `CFG_OP.EN` written: queue the operation. Returns false when the queue is full
    /// (the write is dropped, as the hardware would stall the CSB).
    pub fn push(&mut self, op: BdmaOp) -> bool {
        if self.queue.len() >= QUEUE_DEPTH {
            return false;
        }
        self.queue.push(op);
        true
    }

    /// Free queue slots for `STATUS.FREE_SLOT`.
    pub fn free_slots(&self) -> usize {
        QUEUE_DEPTH - self.queue.len()
    }

    /// Takes the queued operations for a launch.
    pub fn take(&mut self) -> Vec<BdmaOp> {
        std::mem::take(&mut self.queue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_copy_dram_to_sram() {
        let mut mem = Memory::new(64, true);
        let src: Vec<u8> = (0..=255).collect();
        mem.write(RamType::Dram, 0x8000_0000, &src).unwrap();
        let op = BdmaOp {
            src: 0x8000_0000,
            dst: 0x5000_0000,
            line_bytes: 32,
            lines: 2,
            surfaces: 2,
            src_line: 64,
            dst_line: 32,
            src_surf: 128,
            dst_surf: 64,
            src_ram: RamType::Dram,
            dst_ram: RamType::Sram,
        };
        op.run(&mut mem).unwrap();
        let got = mem.read_vec(RamType::Sram, 0x5000_0000, 128).unwrap();
        let mut want = Vec::new();
        for s in 0..2 {
            for l in 0..2 {
                let o = s * 128 + l * 64;
                want.extend_from_slice(&src[o..o + 32]);
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn out_of_memory_is_error() {
        let mut mem = Memory::new(32, false);
        let op = BdmaOp::decode(|n| match n {
            ids::bdma::CFG_SRC_ADDR_LOW => 0xffff_ffe0,
            ids::bdma::CFG_LINE => 1,
            ids::bdma::CFG_CMD => 3,
            _ => 0,
        });
        assert!(op.run(&mut mem).is_err());
    }

    #[test]
    fn overlapping_destination_lines_are_refused() {
        let mut mem = Memory::new(64, false);
        mem.set_dram_window(crate::mem::Window {
            base: 0x8000_0000,
            size: 32 << 20,
        });
        // The fuzz case's shape: many long lines written over one another.
        let op = BdmaOp {
            src: 0x8000_0000,
            dst: 0x8100_0000,
            line_bytes: 8192,
            lines: 1 << 16,
            surfaces: 4,
            src_line: 0,
            dst_line: 32,
            src_surf: 0,
            dst_surf: 0,
            src_ram: RamType::Dram,
            dst_ram: RamType::Dram,
        };
        let e = op.run(&mut mem);
        assert!(matches!(e, Err(EngineError::Unsupported { .. })), "{e:?}");
        // Reading one source line many times into distinct lines is a fill, and allowed.
        let fill = BdmaOp {
            lines: 4,
            surfaces: 1,
            dst_line: 8192,
            ..op
        };
        fill.run(&mut mem).unwrap();
    }
}
