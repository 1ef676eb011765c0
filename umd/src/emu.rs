//! The CPU emulator: EMU1 tasks (power, softmax, ONNC's log and the CPU fallback
//! operations) run by the runtime itself.
//!
//! The decoding and the arithmetic live in [`nvdla_emu`] (`no_std`, no heap), which the
//! bare-metal runner uses too, so both produce the same bytes; its documentation lists
//! upstream's quirks that are kept. This module re-exports it and adds the heap-backed
//! helpers of the hosted runtime: a growing [`VecScratch`], a decoded [`EmuTask`] holding
//! every operation, and [`execute_op`] / [`execute_task`] / [`run_task`] without a scratch
//! argument.

pub use nvdla_emu::{
    decode_network, decode_op, power_f32, round_saturate_i8, saturate_i8, EmuError, EmuOp,
    FallbackFn, FallbackOpDesc, Scratch, SlotMemory, TaskError, TaskSummary, FALLBACK_OP_BASE,
    FALLBACK_UNARY, FALLBACK_VERSION,
};
use nvdla_loadable::emu::{Layout, NetworkDesc, OpDesc};

/// Scratch memory on the heap that grows to what an operation needs.
#[derive(Debug, Clone, Default)]
pub struct VecScratch(pub Vec<u8>);

impl Scratch for VecScratch {
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        if self.0.len() < len {
            self.0.resize(len, 0);
        }
        self.0.get_mut(..len)
    }

    fn capacity(&self) -> usize {
        usize::MAX
    }
}

/// A decoded EMU1 task.
#[derive(Debug, Clone, PartialEq)]
pub struct EmuTask {
    /// The network descriptor.
    pub network: NetworkDesc,
    /// Which revision of the interface the blobs use.
    pub layout: Layout,
    /// The operations, in execution order.
    pub ops: Vec<EmuOp>,
}

impl EmuTask {
    /// True if the task's first operation is a power.
    pub fn is_power(&self) -> bool {
        matches!(
            self.ops.first().map(|o| (&o.op, o.fallback.is_none())),
            Some((OpDesc::Power(_), true))
        )
    }

    /// True if the task's first operation is a softmax.
    pub fn is_softmax(&self) -> bool {
        matches!(self.ops.first().map(|o| &o.op), Some(OpDesc::Softmax(_)))
    }
}

/// Decodes the task: network descriptor from slot 0, then every operation and its buffers
/// ([`decode_network`], then [`decode_op`] for each).
pub fn decode_task(mem: &mut dyn SlotMemory) -> Result<EmuTask, EmuError> {
    let summary = decode_network(mem)?;
    let ops = (0..summary.num_operations())
        .map(|i| decode_op(mem, &summary, i))
        .collect::<Result<_, _>>()?;
    Ok(EmuTask {
        network: summary.network,
        layout: summary.layout,
        ops,
    })
}

/// Runs every operation of a decoded task on `mem`, in order.
pub fn execute_task(task: &EmuTask, mem: &mut dyn SlotMemory) -> Result<(), (usize, EmuError)> {
    let mut scratch = VecScratch::default();
    for (i, op) in task.ops.iter().enumerate() {
        nvdla_emu::execute_op(op, mem, &mut scratch).map_err(|e| (i, e))?;
    }
    Ok(())
}

/// Runs one operation on `mem`.
pub fn execute_op(op: &EmuOp, mem: &mut dyn SlotMemory) -> Result<(), EmuError> {
    nvdla_emu::execute_op(op, mem, &mut VecScratch::default())
}

/// [`nvdla_emu::run_task`] with a [`VecScratch`]: decodes the task and runs every
/// operation in order, as the bare-metal runner does.
pub fn run_task(mem: &mut dyn SlotMemory) -> Result<TaskSummary, TaskError> {
    nvdla_emu::run_task(mem, &mut VecScratch::default())
}

/// Softmax of f32 values as upstream computes it (see [`nvdla_emu::softmax_f32`]).
pub fn softmax_f32(x: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; x.len()];
    nvdla_emu::softmax_f32(x, &mut out);
    out
}

/// Why a task with CPU partitions failed: the operation index and the error.
#[cfg(feature = "cpu-partitions")]
#[derive(Debug)]
pub enum HostedTaskError {
    /// An emulator operation (or the task's descriptors) failed.
    Emu(TaskError),
    /// A CPU partition failed.
    Partition {
        /// Operation index.
        op: usize,
        /// Why.
        error: crate::partition::PartitionError,
    },
}

/// The partition operation `index` of the task names, if it is one: its decoded
/// descriptor.
#[cfg(feature = "cpu-partitions")]
fn partition_at(
    mem: &mut dyn SlotMemory,
    task: &TaskSummary,
    index: usize,
) -> Result<Option<crate::partition::PartitionDesc>, HostedTaskError> {
    use crate::partition::{container_desc, PartitionDesc, PartitionError};
    let size = nvdla_loadable::emu::OPERATION_CONTAINER_SIZE;
    let at = |error| HostedTaskError::Partition { op: index, error };
    let list = usize::try_from(task.network.operation_desc_index).ok();
    let Some(ops) = list.and_then(|l| mem.slot(l)) else {
        return Ok(None);
    };
    let Some((slot, len)) = ops
        .get(index * size..(index + 1) * size)
        .and_then(container_desc)
    else {
        return Ok(None);
    };
    let bytes = usize::try_from(slot)
        .ok()
        .filter(|&s| s < mem.slot_count())
        .and_then(|s| mem.slot(s))
        .and_then(|b| b.get(..len as usize))
        .ok_or_else(|| {
            at(PartitionError::Descriptor(format!(
                "{len} bytes at address-list slot {slot}: no such memory"
            )))
        })?
        .to_vec();
    PartitionDesc::decode(&bytes).map(Some).map_err(at)
}

/// [`run_task`] for the hosted runtime: ONNX partition operations
/// ([`crate::partition::FALLBACK_PARTITION`]) run with tract, every other operation as
/// the emulator runs it. Every operation is decoded before the first runs.
#[cfg(feature = "cpu-partitions")]
pub fn run_hosted_task(mem: &mut dyn SlotMemory) -> Result<TaskSummary, HostedTaskError> {
    let emu = |op: Option<usize>| move |error| HostedTaskError::Emu(TaskError { op, error });
    let task = decode_network(mem).map_err(emu(None))?;
    let mut partitions = Vec::with_capacity(task.num_operations());
    for i in 0..task.num_operations() {
        let p = partition_at(mem, &task, i)?;
        if p.is_none() {
            decode_op(mem, &task, i).map_err(emu(Some(i)))?;
        }
        partitions.push(p);
    }
    let mut scratch = VecScratch::default();
    for (i, p) in partitions.iter().enumerate() {
        match p {
            Some(desc) => crate::partition::run(desc, mem)
                .map_err(|error| HostedTaskError::Partition { op: i, error })?,
            None => {
                let op = decode_op(mem, &task, i).map_err(emu(Some(i)))?;
                nvdla_emu::execute_op(&op, mem, &mut scratch).map_err(emu(Some(i)))?;
            }
        }
    }
    Ok(task)
}
