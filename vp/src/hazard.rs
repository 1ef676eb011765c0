//! The hazard check: operations that silicon would run side by side touching the same
//! memory.
//!
//! The model runs one operation at a time, when something observes completion, so a
//! missing dependency between two operations never shows in its output. On silicon (and on
//! NVIDIA's RTL) an operation runs from the register write that enables it until its done
//! interrupt, and the engines overlap. This check records, for each operation the model
//! runs, the memory it actually read and wrote and the interval in which silicon would run
//! it: from its enabling register write to the status read in which software first sees
//! all of its done interrupts (both measured in CSB accesses). Two operations whose
//! intervals overlap, on different engines, conflict when one writes memory the other reads
//! or writes: a [`Hazard`]. Operations on the same engine never overlap (an engine runs its
//! register groups in turn).

use std::collections::HashMap;
use std::fmt;

use crate::glb::IntrSource;
use crate::mem::{Access, RamType};
use crate::regs::Block;

/// Operations kept for comparison (older ones are long finished).
const KEEP: usize = 64;

/// One operation the model ran.
#[derive(Debug, Clone)]
struct OpRecord {
    /// The engines it occupied (a convolution with its flying SDP: CDMA, SDP, ...).
    engines: Vec<Block>,
    /// A name for messages.
    name: String,
    /// CSB access count at its enabling write.
    enabled: u64,
    /// Done interrupts it raised and software has not seen yet.
    outstanding: Vec<(IntrSource, usize)>,
    /// CSB access count when software had seen all of them.
    done: Option<u64>,
    reads: Vec<Access>,
    writes: Vec<Access>,
}

/// Two operations that overlap on silicon and touch the same memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hazard {
    /// The operation enabled first.
    pub first: String,
    /// The other.
    pub second: String,
    /// What conflicts: `writes ... read by`, `writes ... written by`.
    pub what: String,
}

impl fmt::Display for Hazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hazard: {} and {} run side by side on silicon, and {}",
            self.first, self.second, self.what
        )
    }
}

/// The check's state (part of [`crate::Vp`]).
#[derive(Debug, Default)]
pub struct HazardCheck {
    seq: u64,
    enables: HashMap<(Block, usize), u64>,
    ops: Vec<OpRecord>,
    hazards: Vec<Hazard>,
    count: u64,
}

fn overlap(a: &[Access], b: &[Access]) -> Option<(RamType, u64, u64)> {
    for x in a {
        for y in b {
            if x.ram == y.ram && x.start < y.end && y.start < x.end {
                return Some((x.ram, x.start.max(y.start), x.end.min(y.end)));
            }
        }
    }
    None
}

impl HazardCheck {
    /// Counts a CSB access (the check's clock).
    pub fn tick(&mut self) {
        self.seq += 1;
    }

    /// `block`'s group `group` was enabled now.
    pub fn enabled(&mut self, block: Block, group: usize) {
        self.enables.insert((block, group), self.seq);
    }

    /// When `block`'s group `group` was last enabled.
    pub fn enable_time(&self, block: Block, group: usize) -> u64 {
        self.enables
            .get(&(block, group))
            .copied()
            .unwrap_or(self.seq)
    }

    /// Software read GLB status `status`: operations whose done bits are all seen are over.
    pub fn status_read(&mut self, status: u32) {
        let now = self.seq;
        for op in self.ops.iter_mut().filter(|o| o.done.is_none()) {
            op.outstanding
                .retain(|(src, g)| status & (1u32 << (src.bit() + *g as u32)) == 0);
            if op.outstanding.is_empty() {
                op.done = Some(now);
            }
        }
    }

    /// Records an operation that ran: `engines` (the first names it), enabled at
    /// `enabled`, raising `dones`, with the memory accesses `log`. Checks it against the
    /// operations silicon would run beside it.
    pub fn ran(
        &mut self,
        engines: Vec<Block>,
        enabled: u64,
        dones: Vec<(IntrSource, usize)>,
        log: Vec<Access>,
    ) {
        self.count += 1;
        let (writes, reads): (Vec<Access>, Vec<Access>) = log.into_iter().partition(|a| a.write);
        let name = format!(
            "operation {} ({}, enabled at CSB access {enabled})",
            self.count,
            engines
                .iter()
                .map(|b| b.name())
                .collect::<Vec<_>>()
                .join("+")
        );
        let op = OpRecord {
            engines,
            name,
            enabled,
            outstanding: dones,
            done: None,
            reads,
            writes,
        };
        for a in &self.ops {
            if a.engines.iter().any(|e| op.engines.contains(e)) {
                continue;
            }
            // Silicon runs `a` from its enable until software sees it done, and `op` from
            // its enable until later than now (its done is not seen yet): they overlap
            // unless software saw `a` done before enabling `op`.
            if a.done.is_some_and(|d| d <= op.enabled) {
                continue;
            }
            let (first, second) = if a.enabled <= op.enabled {
                (a, &op)
            } else {
                (&op, a)
            };
            let conflict = overlap(&first.writes, &second.reads)
                .map(|r| ("reads", first, second, r))
                .or_else(|| {
                    overlap(&second.writes, &first.reads).map(|r| ("reads", second, first, r))
                })
                .or_else(|| {
                    overlap(&first.writes, &second.writes).map(|r| ("writes", first, second, r))
                });
            if let Some((verb, w, other, (ram, lo, hi))) = conflict {
                let h = Hazard {
                    first: first.name.clone(),
                    second: second.name.clone(),
                    what: format!(
                        "{} {verb} {ram:?} {lo:#x}..{hi:#x}, which {} writes",
                        other.name, w.name
                    ),
                };
                log::error!("{h}");
                self.hazards.push(h);
            }
        }
        self.ops.push(op);
        if self.ops.len() > KEEP {
            self.ops.remove(0);
        }
    }

    /// Every hazard found since reset.
    pub fn hazards(&self) -> &[Hazard] {
        &self.hazards
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(start: u64, end: u64, write: bool) -> Access {
        Access {
            ram: RamType::Dram,
            start,
            end,
            write,
        }
    }

    /// PDP writes 0x1000..0x1100; SDP reads 0x1080..0x1180.
    fn pdp_then_sdp(observe_pdp_done_first: bool) -> HazardCheck {
        let mut h = HazardCheck::default();
        h.tick();
        h.enabled(Block::Pdp, 0);
        let pdp_enabled = h.enable_time(Block::Pdp, 0);
        h.ran(
            vec![Block::Pdp],
            pdp_enabled,
            vec![(IntrSource::Pdp, 0)],
            vec![acc(0x0, 0x800, false), acc(0x1000, 0x1100, true)],
        );
        h.tick();
        if observe_pdp_done_first {
            h.status_read(1 << IntrSource::Pdp.bit());
            h.tick();
        }
        h.enabled(Block::Sdp, 1);
        let sdp_enabled = h.enable_time(Block::Sdp, 1);
        h.ran(
            vec![Block::Sdp],
            sdp_enabled,
            vec![(IntrSource::Sdp, 1)],
            vec![acc(0x1080, 0x1180, false), acc(0x2000, 0x2100, true)],
        );
        h
    }

    #[test]
    fn a_reader_enabled_before_its_producer_was_seen_done_is_a_hazard() {
        let h = pdp_then_sdp(false);
        assert_eq!(h.hazards().len(), 1);
        let msg = h.hazards()[0].to_string();
        assert!(
            msg.contains("(SDP") && msg.contains("reads Dram 0x1080..0x1100"),
            "{msg}"
        );
        assert!(msg.contains("which operation 1 (PDP"), "{msg}");
    }

    #[test]
    fn a_reader_enabled_after_its_producer_was_seen_done_is_not() {
        assert!(pdp_then_sdp(true).hazards().is_empty());
    }

    #[test]
    fn one_engine_runs_its_groups_in_turn() {
        let mut h = HazardCheck::default();
        for g in 0..2 {
            h.tick();
            h.enabled(Block::Sdp, g);
            let at = h.enable_time(Block::Sdp, g);
            h.ran(
                vec![Block::Sdp],
                at,
                vec![(IntrSource::Sdp, g)],
                vec![acc(0x1000, 0x1100, g == 0), acc(0x3000, 0x3100, true)],
            );
        }
        assert!(h.hazards().is_empty());
    }

    #[test]
    fn overlapping_writes_and_disjoint_memory() {
        let mut h = HazardCheck::default();
        h.ran(
            vec![Block::Pdp],
            1,
            vec![(IntrSource::Pdp, 0)],
            vec![acc(0x0, 0x10, true)],
        );
        h.ran(
            vec![Block::Cdp],
            2,
            vec![(IntrSource::Cdp, 0)],
            vec![acc(0x20, 0x30, true)],
        );
        assert!(h.hazards().is_empty(), "disjoint");
        h.ran(
            vec![Block::Rubik],
            3,
            vec![(IntrSource::Rubik, 0)],
            vec![acc(0x8, 0x28, true)],
        );
        assert_eq!(h.hazards().len(), 2, "{:?}", h.hazards());
        assert!(h.hazards()[0].what.contains("writes Dram 0x8..0x10"));
    }
}
