//! The engine scheduler: runs one DLA1 task over the processors.
//!
//! # Concepts
//!
//! - **Operations and the dependency graph.** A task is a list of operations, each on one
//!   processor. Operations of the same processor run in a fixed order: the network
//!   descriptor names the first one (`op_head`), and each operation names the next one of
//!   its own processor in its consumer slot for that processor. Across processors, each
//!   operation has a *dependency count*: how many events from other operations must arrive
//!   before it may start. Events are "programmed", "enabled", "completed", and for
//!   convolutions "input data fetched" and "weights fetched"; each operation lists, per
//!   processor, one consumer and the event that consumer waits for, plus an optional *fused
//!   parent* on the preceding processor (e.g. an SDP fed on the fly by a convolution
//!   signals its convolution).
//! - **Ping-pong register groups.** Every processor has two register groups, so the next
//!   operation of a processor is programmed while the current one runs. The scheduler keeps
//!   both groups full: it programs each processor's first two operations up front, and when
//!   a group completes it programs the following operation into the freed group.
//! - **Enabling.** An operation whose dependency count is zero is *enabled* (`D_OP_ENABLE`)
//!   as soon as its group is programmed; otherwise it is enabled by the event that brings
//!   its count to zero.
//! - **Interrupts.** Each group's completion raises a bit in `GLB.S_INTR_STATUS` (CACC's
//!   for convolutions); CDMA raises data-fetched and weights-fetched bits. The interrupt
//!   handler reads the status, acknowledges it (write 1 to clear), and processes the events
//!   group by group: fetch events first, then completion, which updates consumers, marks
//!   the group free, programs the other group if it was waiting, and programs the next
//!   operation of that processor.
//!
//! The programming order and every register value follow NVIDIA's reference firmware, so a
//! register trace of this scheduler matches it write for write.
//!
//! # Memory
//!
//! State is fixed-size: per processor two groups of a few bytes, and per operation (times
//! ROIs) two bytes, the remaining dependency count and the progress, in arrays of
//! `MAX_OPS` entries (a const generic; the default [`DEFAULT_MAX_OPS`] costs 2 KiB).
//! Descriptors are re-read from device memory whenever they are needed, never cached, so
//! the dependency graph in memory is not modified (unlike the reference firmware, which
//! writes decremented counts back).
//!
//! # Validation
//!
//! Before anything is programmed the whole dependency graph is checked: processor types,
//! every consumer and fused-parent index and its processor, event codes, each processor's
//! operation chain (every operation on exactly one chain, no cycles), and that each
//! operation can receive at least as many events as it waits for. While running, an
//! operation receiving more events than it waits for, and a hardware that is idle while
//! operations remain, are errors. After any error the engine drops the task and is idle.

use nvdla_loadable::dla::{Consumer, Event, OpType, OP_NUM};

use crate::config::HwConfig;
use crate::error::{Error, OpRef};
use crate::hw::Hw;
use crate::processors::{self, Ctx, Prepared};
use crate::regs::{glb, Block};
use crate::task::{read_network, TaskInfo};

/// Default capacity of [`Engine`]: operations times ROIs.
pub const DEFAULT_MAX_OPS: usize = 1024;

/// Progress of the running task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Progress {
    /// Operations remain; wait for the next interrupt.
    Running,
    /// Every operation completed; the engine is idle.
    Done,
}

/// Where an operation is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum OpState {
    /// Not yet programmed.
    #[default]
    Waiting = 0,
    /// Its register group is programmed.
    Programmed = 1,
    /// Started in hardware.
    Enabled = 2,
    /// Completed.
    Done = 3,
}

/// What [`Engine::status`] reports about one register group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GroupStatus {
    /// The operation the group holds.
    pub op: Option<OpRef>,
    /// Programmed (not merely reserved).
    pub programmed: bool,
    /// Running in hardware.
    pub active: bool,
}

/// A snapshot of the engine for diagnosis (e.g. of a timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EngineStatus {
    /// A task is running.
    pub running: bool,
    /// Operations completed.
    pub done: u32,
    /// Operations in the task (times ROIs).
    pub total: u32,
    /// Per processor ([`OpType::index`]), its two groups.
    pub groups: [[GroupStatus; 2]; OP_NUM],
}

/// The `GLB.S_INTR_STATUS` bits the scheduler handles: (bit, processor, group, event).
const INTERRUPTS: [(u8, u8, u8, u8); 16] = {
    use glb::S_INTR_STATUS as S;
    [
        (S::CACC_DONE_STATUS0.shift as u8, 1, 0, EV_COMPLETED),
        (S::CACC_DONE_STATUS1.shift as u8, 1, 1, EV_COMPLETED),
        (S::SDP_DONE_STATUS0.shift as u8, 2, 0, EV_COMPLETED),
        (S::SDP_DONE_STATUS1.shift as u8, 2, 1, EV_COMPLETED),
        (S::CDP_DONE_STATUS0.shift as u8, 4, 0, EV_COMPLETED),
        (S::CDP_DONE_STATUS1.shift as u8, 4, 1, EV_COMPLETED),
        (S::RUBIK_DONE_STATUS0.shift as u8, 5, 0, EV_COMPLETED),
        (S::RUBIK_DONE_STATUS1.shift as u8, 5, 1, EV_COMPLETED),
        (S::PDP_DONE_STATUS0.shift as u8, 3, 0, EV_COMPLETED),
        (S::PDP_DONE_STATUS1.shift as u8, 3, 1, EV_COMPLETED),
        (S::BDMA_DONE_STATUS0.shift as u8, 0, 0, EV_COMPLETED),
        (S::BDMA_DONE_STATUS1.shift as u8, 0, 1, EV_COMPLETED),
        (S::CDMA_DAT_DONE_STATUS0.shift as u8, 1, 0, EV_DATA_DONE),
        (S::CDMA_DAT_DONE_STATUS1.shift as u8, 1, 1, EV_DATA_DONE),
        (S::CDMA_WT_DONE_STATUS0.shift as u8, 1, 0, EV_WEIGHT_DONE),
        (S::CDMA_WT_DONE_STATUS1.shift as u8, 1, 1, EV_WEIGHT_DONE),
    ]
};

/// Bits of a group's pending event set.
const EV_COMPLETED: u8 = 1 << 0;
const EV_DATA_DONE: u8 = 1 << 1;
const EV_WEIGHT_DONE: u8 = 1 << 2;

/// An empty consumer link.
const NO_CONSUMER: Consumer = Consumer {
    index: -1,
    event: 0,
    res: 0,
};

#[derive(Debug, Clone, Copy)]
struct Group {
    /// The operation held (prepared, programmed or running).
    op: Option<OpRef>,
    /// Its consumer links and fused parent, from its dependency-graph entry.
    consumers: [Consumer; OP_NUM],
    fused_parent: Consumer,
    /// RDMA register group used with this group.
    rdma_id: u8,
    prepared: Prepared,
    /// Reserved and read, but not programmed yet.
    pending: bool,
    /// Being programmed right now (enables of itself are deferred).
    programming: bool,
    /// Running.
    active: bool,
    /// LUT loaded for this group, -1 for none.
    lut_index: i16,
    /// Events raised and not yet handled.
    events: u8,
}

impl Group {
    const IDLE: Group = Group {
        op: None,
        consumers: [NO_CONSUMER; OP_NUM],
        fused_parent: NO_CONSUMER,
        rdma_id: 0,
        prepared: Prepared {
            rdma_needed: false,
            lut_index: -1,
            empty: false,
        },
        pending: false,
        programming: false,
        active: false,
        lut_index: -1,
        events: 0,
    };
}

#[derive(Debug, Clone, Copy)]
struct Processor {
    ty: OpType,
    /// Bit g set: group g is reserved (prepared, programmed or running).
    group_status: u8,
    /// Bit g set: RDMA group g is in use.
    rdma_status: u8,
    /// The group that completed last.
    last_group: u8,
    /// ROI of the last operation queued.
    roi_index: u8,
    /// The last operation queued: its index and the next operation of this processor.
    tail: Option<(u16, i16)>,
    groups: [Group; 2],
}

impl Processor {
    const fn new(ty: OpType) -> Processor {
        Processor {
            ty,
            group_status: 0,
            rdma_status: 0,
            last_group: 1,
            roi_index: 0,
            tail: None,
            groups: [Group::IDLE; 2],
        }
    }
}

const TYPES: [OpType; OP_NUM] = [
    OpType::Bdma,
    OpType::Conv,
    OpType::Sdp,
    OpType::Pdp,
    OpType::Cdp,
    OpType::Rubik,
];

/// The scheduler for one NVDLA instance. `MAX_OPS` bounds operations times ROIs per task.
pub struct Engine<const MAX_OPS: usize = DEFAULT_MAX_OPS> {
    cfg: HwConfig,
    task: Option<TaskInfo>,
    procs: [Processor; OP_NUM],
    /// Remaining dependency count per operation (flat index `roi * num_ops + index`).
    /// Indexes are taken `% MAX_OPS`: every flat index is below `MAX_OPS` (a task with
    /// more is refused before it starts), so that changes nothing but lets the compiler
    /// drop the bounds checks and their panics.
    deps: [u8; MAX_OPS],
    /// [`OpState`] per operation.
    states: [OpState; MAX_OPS],
    /// Operations completed (counted at their last ROI, as the reference firmware does).
    done: u32,
}

impl<const MAX_OPS: usize> Engine<MAX_OPS> {
    /// An idle engine for hardware build `cfg`.
    pub const fn new(cfg: HwConfig) -> Self {
        Engine {
            cfg,
            task: None,
            procs: [
                Processor::new(OpType::Bdma),
                Processor::new(OpType::Conv),
                Processor::new(OpType::Sdp),
                Processor::new(OpType::Pdp),
                Processor::new(OpType::Cdp),
                Processor::new(OpType::Rubik),
            ],
            deps: [0; MAX_OPS],
            states: [OpState::Waiting; MAX_OPS],
            done: 0,
        }
    }

    /// The hardware build this engine drives.
    pub fn config(&self) -> &HwConfig {
        &self.cfg
    }

    /// Whether a task is running.
    pub fn is_running(&self) -> bool {
        self.task.is_some()
    }

    /// Drops the running task (after a timeout or reset); the engine becomes idle. The
    /// hardware itself is not touched: the caller resets it.
    pub fn abort(&mut self) {
        if self.task.is_some() {
            warn!("engine: task aborted with {} operations done", self.done);
        }
        self.clear();
    }

    fn clear(&mut self) {
        self.task = None;
        for (p, ty) in self.procs.iter_mut().zip(TYPES) {
            *p = Processor::new(ty);
        }
        self.done = 0;
    }

    /// The progress of operation `op` of the running (or last) task.
    pub fn op_state(&self, op: OpRef) -> Option<OpState> {
        let t = self.task.as_ref()?;
        if op.index >= t.num_ops || u16::from(op.roi) >= t.num_rois {
            return None;
        }
        self.states.get(t.flat(op)).copied()
    }

    /// A snapshot for diagnosis.
    pub fn status(&self) -> EngineStatus {
        let mut s = EngineStatus {
            running: self.task.is_some(),
            done: self.done,
            total: self.task.map_or(0, |t| u32::from(t.num_ops)),
            ..Default::default()
        };
        for (p, out) in self.procs.iter().zip(s.groups.iter_mut()) {
            for (g, o) in p.groups.iter().zip(out.iter_mut()) {
                *o = GroupStatus {
                    op: g.op,
                    programmed: g.op.is_some() && !g.pending,
                    active: g.active,
                };
            }
        }
        s
    }

    /// Starts the task whose address list `hw` exposes: reads and checks the network and
    /// its dependency graph, programs the first operations of every processor and enables
    /// those without dependencies.
    ///
    /// Returns [`Progress::Done`] for a task without operations; otherwise call
    /// [`Engine::handle_interrupt`] on every NVDLA interrupt until it returns `Done`.
    pub fn execute_task<H: Hw>(&mut self, hw: &mut H) -> Result<Progress, Error> {
        if self.task.is_some() {
            return Err(Error::Busy);
        }
        if !self.cfg.is_compiled() {
            return Err(Error::ConfigNotCompiled {
                name: self.cfg.name(),
            });
        }
        self.clear();
        let r = self.start(hw);
        self.settle(hw, r)
    }

    /// Handles one NVDLA interrupt: reads and acknowledges `GLB.S_INTR_STATUS`, then
    /// processes the events it reports.
    pub fn handle_interrupt<H: Hw>(&mut self, hw: &mut H) -> Result<Progress, Error> {
        if self.task.is_none() {
            return Err(Error::NoTask);
        }
        let r = self.interrupt(hw);
        self.settle(hw, r)
    }

    /// After the scheduler ran: drains software events, detects completion and stalls, and
    /// returns to idle on error or completion.
    fn settle<H: Hw>(&mut self, hw: &mut H, r: Result<(), Error>) -> Result<Progress, Error> {
        let r = r.and_then(|()| self.process_events(hw)).and_then(|()| {
            let Some(t) = self.task else {
                return Ok(Progress::Done);
            };
            if self.done >= u32::from(t.num_ops) {
                info!("engine: task complete, {} operations", self.done);
                return Ok(Progress::Done);
            }
            let busy = self
                .procs
                .iter()
                .any(|p| p.groups.iter().any(|g| g.active || g.events != 0));
            if busy {
                Ok(Progress::Running)
            } else {
                Err(Error::Stalled {
                    done: self.done,
                    total: u32::from(t.num_ops),
                })
            }
        });
        match r {
            Ok(Progress::Running) => {}
            Ok(Progress::Done) => self.clear(),
            Err(e) => {
                error!("engine: task failed, engine idle");
                let _ = &e;
                self.clear();
            }
        }
        r
    }

    fn start<H: Hw>(&mut self, hw: &mut H) -> Result<(), Error> {
        let net = read_network(hw)?;
        let t = TaskInfo::from_network(hw, &net)?;
        if t.num_ops == 0 {
            info!("engine: empty task");
            return Ok(());
        }
        let total = t.total_ops();
        if total as usize > MAX_OPS {
            return Err(Error::TooManyOps {
                ops: total,
                max: MAX_OPS as u32,
            });
        }
        info!(
            "engine: task with {} operations, {} ROIs",
            t.num_ops, t.num_rois
        );
        self.check_graph(hw, &t)?;
        self.task = Some(t);
        self.initiate(hw)
    }

    /// Reads the whole dependency graph: records every dependency count, and checks types,
    /// links, chains and that every count can be met.
    #[inline(never)]
    fn check_graph<H: Hw>(&mut self, hw: &mut H, t: &TaskInfo) -> Result<(), Error> {
        let n = usize::from(t.num_ops);
        let total = t.total_ops() as usize;
        // Events that can reach each operation (saturating at 255).
        let mut incoming = Scratch::<MAX_OPS>::new();
        for roi in 0..t.num_rois {
            for index in 0..t.num_ops {
                let op = OpRef {
                    index,
                    roi: roi as u8,
                };
                let c = t.read_common(hw, op)?;
                let ty = TaskInfo::op_type_of(&c, op)?;
                processors::present(&self.cfg, ty, op)?;
                let flat = t.flat(op);
                self.deps[flat % MAX_OPS] = c.dependency_count;
                self.states[flat % MAX_OPS] = OpState::Waiting;
                for (slot, link) in c.consumers.iter().enumerate() {
                    if let Some(target) = self.check_link(hw, t, op, ty, link, TYPES[slot])? {
                        incoming.bump(t.flat(target));
                    }
                }
                if c.fused_parent.is_present() {
                    let parent_ty = match ty.index().checked_sub(1).and_then(|i| TYPES.get(i)) {
                        Some(&t) => t,
                        None => {
                            return Err(Error::InvalidField {
                                op,
                                field: "dla_common_op_desc.fused_parent",
                                value: c.fused_parent.index as u32,
                            })
                        }
                    };
                    if let Some(target) =
                        self.check_link(hw, t, op, ty, &c.fused_parent, parent_ty)?
                    {
                        incoming.bump(t.flat(target));
                    }
                }
            }
        }
        // Every count must be reachable.
        for flat in 0..total {
            let possible = incoming.get(flat);
            if u32::from(self.deps[flat % MAX_OPS]) > possible {
                return Err(Error::Unsatisfiable {
                    op: OpRef {
                        index: flat.checked_rem(n).unwrap_or(0) as u16,
                        roi: flat.checked_div(n).unwrap_or(0) as u8,
                    },
                    needed: self.deps[flat % MAX_OPS],
                    possible,
                });
            }
        }
        // Every operation must be on exactly one processor chain (checked on ROI 0; the
        // chains repeat per ROI).
        let seen = &mut incoming;
        seen.clear();
        for (i, &head) in t.op_head.iter().enumerate() {
            let mut cur = head;
            while cur != -1 {
                let op = t.op_ref(cur, 0, "dla_common_op_desc.consumers")?;
                let flat = t.flat(op);
                if seen.get(flat) != 0 {
                    // A cycle or a second chain through the same operation.
                    return Err(Error::Unsatisfiable {
                        op,
                        needed: self.deps[flat % MAX_OPS],
                        possible: 0,
                    });
                }
                seen.bump(flat);
                let c = t.read_common(hw, op)?;
                let ty = TaskInfo::op_type_of(&c, op)?;
                if ty != TYPES[i] {
                    return Err(Error::OpTypeMismatch {
                        op,
                        target: op.index,
                        expected: TYPES[i],
                        found: ty,
                    });
                }
                cur = c.consumers[i].index;
            }
        }
        if let Some(missing) = (0..n).find(|&i| seen.get(i) == 0) {
            return Err(Error::Unsatisfiable {
                op: OpRef {
                    index: missing as u16,
                    roi: 0,
                },
                needed: self.deps[missing % MAX_OPS],
                possible: 0,
            });
        }
        Ok(())
    }

    /// Checks one consumer or fused-parent link of `op`; returns the operation it signals
    /// if the event can ever fire.
    fn check_link<H: Hw>(
        &self,
        hw: &mut H,
        t: &TaskInfo,
        op: OpRef,
        ty: OpType,
        link: &Consumer,
        expected: OpType,
    ) -> Result<Option<OpRef>, Error> {
        if !link.is_present() {
            return Ok(None);
        }
        let target = t.op_ref(link.index, op.roi, "dla_common_op_desc.consumers")?;
        let tc = t.read_common(hw, target)?;
        let found = TaskInfo::op_type_of(&tc, target)?;
        if found != expected {
            return Err(Error::OpTypeMismatch {
                op,
                target: target.index,
                expected,
                found,
            });
        }
        let event = link.event().map_err(|e| Error::InvalidField {
            op,
            field: "dla_consumer.event",
            value: e.value,
        })?;
        // Only the convolution DMA reports data and weight fetches.
        let fires = match event {
            Event::CdmaDtDone | Event::CdmaWtDone => ty == OpType::Conv,
            _ => true,
        };
        Ok(fires.then_some(target))
    }

    fn ctx<'a, H: Hw>(
        cfg: &'a HwConfig,
        task: &'a TaskInfo,
        hw: &'a mut H,
        op: OpRef,
    ) -> Ctx<'a, H> {
        Ctx::new(hw, cfg, task, op)
    }

    fn task(&self) -> Result<TaskInfo, Error> {
        self.task.ok_or(Error::NoTask)
    }

    /// Queues the first operations of every processor.
    fn initiate<H: Hw>(&mut self, hw: &mut H) -> Result<(), Error> {
        let t = self.task()?;
        for (i, &head) in t.op_head.iter().enumerate() {
            if head == -1 {
                continue;
            }
            let op = t.op_ref(head, 0, "dla_network_desc.op_head")?;
            match self.submit(hw, i, op) {
                Ok(()) | Err(Error::Busy) => {}
                Err(e) => return Err(e),
            }
            self.dequeue(hw, i)?;
        }
        Ok(())
    }

    /// Picks the free group of processor `p` (and its RDMA group).
    fn free_group<H: Hw>(&mut self, hw: &mut H, p: usize) -> Result<(u8, u8), Error> {
        let t = self.task()?;
        let proc = &self.procs[p];
        let mut ctx = Self::ctx(&self.cfg, &t, hw, OpRef::default());
        let (hw_group, hw_rdma) = processors::consumer_pointers(&mut ctx, proc.ty)?;
        if proc.group_status == 0b11 {
            return Err(Error::Busy);
        }
        // With both groups free, continue where the hardware will consume next;
        // otherwise take the other one.
        let group = match proc.group_status {
            0 => hw_group,
            s => u8::from(s & 1 != 0),
        };
        let rdma = match proc.rdma_status {
            0 => hw_rdma,
            s => u8::from(s & 1 != 0),
        };
        Ok((group, rdma))
    }

    /// Reserves a group for `op`, reads its descriptors, and programs (and enables) it if
    /// the processor allows.
    fn submit<H: Hw>(&mut self, hw: &mut H, p: usize, op: OpRef) -> Result<(), Error> {
        let t = self.task()?;
        let (gid, rdma) = self.free_group(hw, p)?;
        let ty = self.procs[p].ty;
        debug!(
            "engine: prepare {} op {} roi {} in group {}",
            ty.index(),
            op.index,
            op.roi,
            gid
        );
        let common = t.read_common(hw, op)?;
        let found = TaskInfo::op_type_of(&common, op)?;
        if found != ty {
            return Err(Error::OpTypeMismatch {
                op,
                target: op.index,
                expected: ty,
                found,
            });
        }
        // Bound by reference: moving them out of the results would copy them.
        let (od, sd) = (t.read_op(hw, ty, op), t.read_surface(hw, ty, op));
        let (od, sd) = match (&od, &sd) {
            (Ok(od), Ok(sd)) => (od, sd),
            (Err(e), _) | (_, Err(e)) => return Err(*e),
        };
        let prepared = processors::prepare(od, sd);
        let proc = &mut self.procs[p];
        let g = &mut proc.groups[usize::from(gid)];
        *g = Group {
            op: Some(op),
            consumers: common.consumers,
            fused_parent: common.fused_parent,
            rdma_id: rdma,
            prepared,
            pending: true,
            ..Group::IDLE
        };
        proc.group_status |= 1 << gid;
        if prepared.rdma_needed {
            proc.rdma_status |= 1 << rdma;
        }
        proc.tail = Some((op.index, common.consumers[p].index));

        if !self.is_ready(p, gid) {
            debug!("engine: group {} waits for the LUT or BDMA queue", gid);
            return Ok(());
        }
        self.program(hw, p, gid)?;
        if self.deps[t.flat(op) % MAX_OPS] == 0 {
            self.enable(hw, p, op)?;
        }
        Ok(())
    }

    /// Whether group `gid` of processor `p` may be programmed now.
    fn is_ready(&self, p: usize, gid: u8) -> bool {
        let proc = &self.procs[p];
        let g = &proc.groups[usize::from(gid)];
        let other = &proc.groups[usize::from(gid ^ 1)];
        let other_reserved = proc.group_status & (1 << (gid ^ 1)) != 0;
        match proc.ty {
            // BDMA has one transfer queue: do not queue behind a batch not yet launched.
            OpType::Bdma => !other_reserved || other.active,
            // One LUT serves both groups, and it is locked while the engine runs.
            OpType::Sdp | OpType::Cdp => {
                let want = g.prepared.lut_index;
                want == -1 || other.lut_index == want || (other.lut_index == -1 && !other.active)
            }
            _ => true,
        }
    }

    /// Programs group `gid` of processor `p` with its prepared operation.
    fn program<H: Hw>(&mut self, hw: &mut H, p: usize, gid: u8) -> Result<(), Error> {
        let t = self.task()?;
        let ty = self.procs[p].ty;
        let g = self.procs[p].groups[usize::from(gid)];
        let op = g.op.ok_or(Error::NoTask)?;
        info!(
            "engine: program processor {} op {} roi {} group {}",
            p, op.index, op.roi, gid
        );
        self.procs[p].groups[usize::from(gid)].programming = true;
        // Bound by reference: moving them out of the results would copy them.
        let (od, sd) = (t.read_op(hw, ty, op), t.read_surface(hw, ty, op));
        let (od, sd) = match (&od, &sd) {
            (Ok(od), Ok(sd)) => (od, sd),
            (Err(e), _) | (_, Err(e)) => return Err(*e),
        };
        let lut = {
            let mut ctx = Self::ctx(&self.cfg, &t, hw, op);
            processors::set_producer(&mut ctx, ty, gid, g.rdma_id)?;
            processors::program(&mut ctx, gid, g.prepared.rdma_needed, od, sd)?
        };
        let flat = t.flat(op);
        self.states[flat % MAX_OPS] = OpState::Programmed;
        let grp = &mut self.procs[p].groups[usize::from(gid)];
        if lut >= 0 {
            grp.lut_index = lut;
        }
        grp.pending = false;
        let r = self.update_consumers(hw, p, gid, Event::OpProgrammed);
        self.procs[p].groups[usize::from(gid)].programming = false;
        r
    }

    /// Starts `op` if its group is programmed and not yet running.
    fn enable<H: Hw>(&mut self, hw: &mut H, p: usize, op: OpRef) -> Result<(), Error> {
        let t = self.task()?;
        // `p` is a processor index (a consumer slot or its predecessor): always present.
        let Some(proc) = self.procs.get(p) else {
            return Ok(());
        };
        let Some(gid) = (0..2u8).find(|&g| {
            let grp = &proc.groups[usize::from(g)];
            proc.group_status & (1 << g) != 0 && grp.op == Some(op) && !grp.pending
        }) else {
            // Not programmed yet: it is enabled when its group gets programmed.
            return Ok(());
        };
        let g = proc.groups[usize::from(gid)];
        if g.programming || g.active {
            return Ok(());
        }
        info!(
            "engine: enable processor {} op {} roi {} group {}",
            p, op.index, op.roi, gid
        );
        let ty = proc.ty;
        let finished = {
            let mut ctx = Self::ctx(&self.cfg, &t, hw, op);
            processors::set_producer(&mut ctx, ty, gid, g.rdma_id)?;
            processors::enable(&mut ctx, ty, gid, &g.prepared)?
        };
        self.states[t.flat(op) % MAX_OPS] = OpState::Enabled;
        let grp = &mut self.procs[p].groups[usize::from(gid)];
        grp.active = true;
        if finished {
            // Nothing for the hardware to do: complete in software.
            grp.events |= EV_COMPLETED;
        }
        self.update_consumers(hw, p, gid, Event::OpEnabled)
    }

    /// Sends `event` from group `gid` of processor `p` to its consumers and fused parent.
    fn update_consumers<H: Hw>(
        &mut self,
        hw: &mut H,
        p: usize,
        gid: u8,
        event: Event,
    ) -> Result<(), Error> {
        let g = self.procs[p].groups[usize::from(gid)];
        let Some(op) = g.op else {
            return Ok(());
        };
        for (slot, link) in g.consumers.iter().enumerate() {
            self.update_dependency(hw, slot, link, event, op.roi)?;
        }
        if let Some(parent) = p.checked_sub(1) {
            self.update_dependency(hw, parent, &g.fused_parent, event, op.roi)?;
        }
        Ok(())
    }

    fn update_dependency<H: Hw>(
        &mut self,
        hw: &mut H,
        p: usize,
        link: &Consumer,
        event: Event,
        roi: u8,
    ) -> Result<(), Error> {
        if !link.is_present() || link.event != event.raw() {
            return Ok(());
        }
        let t = self.task()?;
        let op = t.op_ref(link.index, roi, "dla_common_op_desc.consumers")?;
        let flat = t.flat(op);
        let left = self.deps[flat % MAX_OPS]
            .checked_sub(1)
            .ok_or(Error::DependencyUnderflow { op })?;
        self.deps[flat % MAX_OPS] = left;
        debug!(
            "engine: op {} roi {} needs {} more events",
            op.index, op.roi, left
        );
        if left == 0 {
            self.enable(hw, p, op)?;
        }
        Ok(())
    }

    /// Queues the next operation of processor `p` (the same operation for the next ROI,
    /// or the next one on the chain) into its free group.
    fn dequeue<H: Hw>(&mut self, hw: &mut H, p: usize) -> Result<(), Error> {
        let t = self.task()?;
        let proc = &mut self.procs[p];
        let Some((tail, next)) = proc.tail else {
            return Ok(());
        };
        let index = if u16::from(proc.roi_index) + 1 >= t.num_rois {
            if next == -1 {
                return Ok(());
            }
            proc.roi_index = 0;
            next
        } else {
            proc.roi_index += 1;
            tail as i16
        };
        let op = t.op_ref(index, proc.roi_index, "dla_common_op_desc.consumers")?;
        self.submit(hw, p, op)
    }

    /// Reads and acknowledges the interrupt status and records the events per group.
    fn interrupt<H: Hw>(&mut self, hw: &mut H) -> Result<(), Error> {
        let base = Block::Glb.base(self.cfg.version());
        let status = hw.reg_read(base + glb::S_INTR_STATUS)?;
        trace!("engine: interrupt status {}", status);
        for &(bit, p, g, ev) in &INTERRUPTS {
            let grp = self
                .procs
                .get_mut(usize::from(p))
                .and_then(|proc| proc.groups.get_mut(usize::from(g)));
            if let (true, Some(grp)) = (status & (1 << bit) != 0, grp) {
                if grp.active {
                    grp.events |= ev;
                } else {
                    warn!("engine: interrupt for idle group {} of processor {}", g, p);
                }
            }
        }
        // Write 1 to clear exactly the bits handled; a bit raised since the read stays set
        // and raises the interrupt again.
        hw.reg_write(base + glb::S_INTR_STATUS, status)?;
        Ok(())
    }

    /// Handles recorded events until none is left (software completions can raise more).
    fn process_events<H: Hw>(&mut self, hw: &mut H) -> Result<(), Error> {
        // Each pass completes at least one operation or stops.
        for _ in 0..=MAX_OPS + 1 {
            if self.task.is_none() {
                return Ok(());
            }
            let mut any = false;
            for p in 0..OP_NUM {
                any |= self.handle_events(hw, p)?;
            }
            if !any {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Handles the events of processor `p`, starting with the group that did not complete
    /// last (the older one).
    fn handle_events<H: Hw>(&mut self, hw: &mut H, p: usize) -> Result<bool, Error> {
        let mut gid = (self.procs[p].last_group ^ 1) & 1;
        let mut any = false;
        for _ in 0..2 {
            let ev = core::mem::take(&mut self.procs[p].groups[usize::from(gid)].events);
            if ev != 0 {
                any = true;
            }
            if ev & EV_WEIGHT_DONE != 0 {
                self.update_consumers(hw, p, gid, Event::CdmaWtDone)?;
            }
            if ev & EV_DATA_DONE != 0 {
                self.update_consumers(hw, p, gid, Event::CdmaDtDone)?;
            }
            if ev & EV_COMPLETED != 0 {
                self.complete(hw, p, gid)?;
            }
            gid ^= 1;
        }
        Ok(any)
    }

    /// Completion of group `gid` of processor `p`.
    fn complete<H: Hw>(&mut self, hw: &mut H, p: usize, gid: u8) -> Result<(), Error> {
        let t = self.task()?;
        let g = self.procs[p].groups[usize::from(gid)];
        let Some(op) = g.op else {
            return Ok(());
        };
        info!(
            "engine: completed processor {} op {} roi {}",
            p, op.index, op.roi
        );
        if u16::from(op.roi) + 1 == t.num_rois {
            self.done += 1;
        }
        self.states[t.flat(op) % MAX_OPS] = OpState::Done;
        {
            let proc = &mut self.procs[p];
            proc.group_status &= !(1 << gid);
            let grp = &mut proc.groups[usize::from(gid)];
            if grp.prepared.rdma_needed {
                proc.rdma_status &= !(1 << grp.rdma_id);
                grp.prepared.rdma_needed = false;
                grp.rdma_id = 0;
            }
            grp.active = false;
            grp.lut_index = -1;
            proc.last_group = gid;
        }
        self.update_consumers(hw, p, gid, Event::OpCompleted)?;
        self.procs[p].groups[usize::from(gid)] = Group::IDLE;

        if self.done >= u32::from(t.num_ops) {
            return Ok(());
        }
        let next = gid ^ 1;
        if self.procs[p].groups[usize::from(next)].pending && self.is_ready(p, next) {
            self.program(hw, p, next)?;
            if let Some(op) = self.procs[p].groups[usize::from(next)].op {
                if self.deps[t.flat(op) % MAX_OPS] == 0 {
                    self.enable(hw, p, op)?;
                }
            }
        }
        self.dequeue(hw, p)
    }
}

/// Saturating per-operation counters used while checking the graph.
struct Scratch<const N: usize> {
    counts: [u8; N],
}

impl<const N: usize> Scratch<N> {
    fn new() -> Self {
        Scratch { counts: [0; N] }
    }
    fn bump(&mut self, i: usize) {
        if let Some(c) = self.counts.get_mut(i) {
            *c = c.saturating_add(1);
        }
    }
    fn clear(&mut self) {
        self.counts = [0; N];
    }
    fn get(&self, i: usize) -> u32 {
        self.counts.get(i).map_or(0, |&c| u32::from(c))
    }
}
