//! The runtime's errors: each says what was being done, on which list entry or task, and why.

use nvdla_port::device::DeviceError;
use thiserror::Error;

use crate::emu::EmuError;
use crate::image::ImageError;

/// Input or output side of a bindable tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// A network input.
    Input,
    /// A network output.
    Output,
}

impl core::fmt::Display for Direction {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Direction::Input => "input",
            Direction::Output => "output",
        })
    }
}

/// Everything that can go wrong while loading or running a loadable.
#[derive(Debug, Error)]
pub enum Error {
    /// The loadable failed parsing or validation.
    #[error("invalid loadable: {0}")]
    Loadable(#[from] nvdla_loadable::Error),
    /// A list the runtime needs is empty.
    #[error("invalid loadable: {0} is empty (need at least one entry)")]
    EmptyList(&'static str),
    /// A device operation failed.
    #[error("{context}: {source}")]
    Device {
        /// What the runtime was doing.
        context: String,
        /// The driver's error.
        source: DeviceError,
    },
    /// A memory entry's content names a blob that does not exist.
    #[error("memory_list[{mem}]: content blob '{name}' not found")]
    BlobMissing {
        /// Memory id.
        mem: usize,
        /// Blob name.
        name: String,
    },
    /// A blob does not fit its memory at its offset.
    #[error("memory_list[{mem}]: blob '{name}' ({len} bytes at offset {offset}) overruns the {size}-byte memory")]
    ContentOverflow {
        /// Memory id.
        mem: usize,
        /// Blob name.
        name: String,
        /// Offset in the memory.
        offset: u64,
        /// Blob length.
        len: u64,
        /// Memory size.
        size: u64,
    },
    /// Bindable memory is malformed (duplicate ids, gaps, bad tensor reference).
    #[error("memory_list[{mem}]: {what}")]
    Binding {
        /// Memory id.
        mem: usize,
        /// What is wrong.
        what: String,
    },
    /// No bindable tensor with that id.
    #[error("no {dir} tensor with bind id {bind_id} (the loadable has {count})")]
    NoSuchTensor {
        /// Input or output.
        dir: Direction,
        /// The id asked for.
        bind_id: usize,
        /// How many there are.
        count: usize,
    },
    /// Data for a tensor does not fit it.
    #[error("{dir} tensor {bind_id}: {len} bytes given, the tensor holds {size}")]
    TensorSize {
        /// Input or output.
        dir: Direction,
        /// The bind id.
        bind_id: usize,
        /// Bytes given.
        len: usize,
        /// Bytes of the tensor.
        size: u64,
    },
    /// A task's address list cannot be translated.
    #[error("task {task}: address list entry {slot}: {what}")]
    Address {
        /// Task id.
        task: usize,
        /// Position in the task's address list.
        slot: usize,
        /// What is wrong.
        what: String,
    },
    /// A DLA task's descriptors cannot be prepared (legacy surface-list upgrade).
    #[error("task {task}: {what}")]
    Descriptor {
        /// Task id.
        task: usize,
        /// What is wrong.
        what: String,
    },
    /// A task waits for an event nothing signalled before it.
    #[error("task {task}: waits for event {event} (sync point {target} >= {want}), but it is at {have} and no earlier task raises it")]
    EventNeverSignalled {
        /// Task id.
        task: usize,
        /// Event id.
        event: usize,
        /// Sync point.
        target: u16,
        /// Value waited for.
        want: u32,
        /// Value reached.
        have: u32,
    },
    /// A task for an executor the runtime does not know.
    #[error("task {task}: interface {interface} cannot be executed")]
    BadInterface {
        /// Task id.
        task: usize,
        /// Its interface.
        interface: String,
    },
    /// An EMU1 task failed.
    #[error("task {task} (EMU1){}: {source}", .op.map(|o| format!(" operation {o}")).unwrap_or_default())]
    Emu {
        /// Task id.
        task: usize,
        /// Operation index, when one failed.
        op: Option<usize>,
        /// Why.
        source: EmuError,
    },
    /// A CPU partition of an EMU1 task failed.
    #[cfg(feature = "cpu-partitions")]
    #[error("task {task} (EMU1) operation {op} (ONNX partition on the CPU): {source}")]
    Partition {
        /// Task id.
        task: usize,
        /// Operation index.
        op: usize,
        /// Why.
        source: crate::partition::PartitionError,
    },
    /// A relocation cannot be applied.
    #[error("reloc_list[{index}]: {what}")]
    Reloc {
        /// Reloc entry.
        index: usize,
        /// What is wrong.
        what: String,
    },
    /// The output tensor cannot be expressed as a `.dimg`.
    #[error("output tensor: {0}")]
    Output(ImageError),
    /// The input image cannot be converted.
    #[error("input image: {0}")]
    Image(#[from] ImageError),
}

/// Result alias of the runtime.
pub type Result<T, E = Error> = core::result::Result<T, E>;
