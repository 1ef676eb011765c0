//! Zero-copy views of a validated loadable.
//!
//! [`Loadable::parse`] walks the whole buffer once: it verifies the
//! FlatBuffers structure of every table, vector and string, then the
//! cross-references between lists (ids, offsets and sizes). After that the
//! views below read fields straight from the buffer; their accessors cannot
//! fail, because every read they do was checked by `parse`.

use crate::error::{Error, ErrorKind, List};
use crate::fb::{FbError, Offsets, Scalars, Table};
use crate::schema::*;

/// Most addresses one task may use (the driver's `NVDLA_MAX_BUFFERS_PER_TASK`).
pub const MAX_ADDRESSES_PER_TASK: usize = 6144;

/// When blobs are not sorted by name, at most this many name comparisons are
/// spent resolving memory contents before the loadable is refused (bounds the
/// work a hostile file can cause).
const UNSORTED_LOOKUP_BUDGET: u64 = 50_000_000;

/// Schema field indexes (vtable slot order) per table.
mod field {
    pub mod root {
        pub const VERSION: u16 = 0;
        pub const TASKS: u16 = 1;
        pub const MEMORY: u16 = 2;
        pub const ADDRESSES: u16 = 3;
        pub const EVENTS: u16 = 4;
        pub const BLOBS: u16 = 5;
        pub const TENSORS: u16 = 6;
        pub const RELOCS: u16 = 7;
        pub const SUBMITS: u16 = 8;
    }
}

/// Reads of verified fields: the error case was excluded by `parse`.
fn ok<T: Default>(r: Result<T, FbError>) -> T {
    r.unwrap_or_default()
}

impl<T: crate::fb::Scalar> Default for Scalars<'_, T> {
    fn default() -> Self {
        Scalars::empty()
    }
}

macro_rules! view {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name<'a>(Table<'a>);
    };
}

view!(
    /// `TaskListEntry`: one unit of work for one executor.
    TaskListEntry
);
view!(
    /// `MemoryListEntry`: one buffer to allocate.
    MemoryListEntry
);
view!(
    /// `AddressListEntry`: a window (offset, size) into a memory entry.
    AddressListEntry
);
view!(
    /// `EventListEntry`: a wait or signal used to order tasks.
    EventListEntry
);
view!(
    /// `Blob`: named data (descriptors, weights) copied into memory.
    Blob
);
view!(
    /// `TensorDescListEntry`: shape and layout of an input or output tensor.
    TensorDescListEntry
);
view!(
    /// `RelocListEntry`: a stride field to rewrite when a tensor is rebound.
    RelocListEntry
);
view!(
    /// `SubmitListEntry`: tasks submitted together, in id order.
    SubmitListEntry
);

impl<'a> TaskListEntry<'a> {
    /// Position in the task list.
    pub fn id(&self) -> u16 {
        ok(self.0.scalar(0, 0))
    }
    /// Executor.
    pub fn interface(&self) -> Interface {
        Interface::from_raw(ok(self.0.scalar(1, 0))).unwrap_or(Interface::NONE)
    }
    /// Executor instance, -1 for any.
    pub fn instance(&self) -> i16 {
        ok(self.0.scalar(2, 0))
    }
    /// Address-list ids; entry 0 is the task's network descriptor.
    pub fn address_list(&self) -> Scalars<'a, u16> {
        ok(self.0.scalars(3))
    }
    /// Event ids to wait on before the task runs.
    pub fn pre_actions(&self) -> Scalars<'a, u16> {
        ok(self.0.scalars(4))
    }
    /// Event ids to signal after the task completes.
    pub fn post_actions(&self) -> Scalars<'a, u16> {
        ok(self.0.scalars(5))
    }
}

impl<'a> MemoryListEntry<'a> {
    /// Position in the memory list.
    pub fn id(&self) -> u16 {
        ok(self.0.scalar(0, 0))
    }
    /// Where to allocate.
    pub fn domain(&self) -> MemoryDomain {
        MemoryDomain::from_raw(ok(self.0.scalar(1, 0))).unwrap_or(MemoryDomain::SYSTEM)
    }
    /// What to do with the buffer.
    pub fn flags(&self) -> MemoryFlags {
        MemoryFlags::from_bits_retain(ok(self.0.scalar(2, 0)))
    }
    /// Size in bytes.
    pub fn size(&self) -> u64 {
        ok(self.0.scalar(3, 0))
    }
    /// Alignment in bytes, 0 when unconstrained.
    pub fn alignment(&self) -> u32 {
        ok(self.0.scalar(4, 0))
    }
    /// Number of (blob name, offset) content pairs.
    pub fn contents_len(&self) -> usize {
        ok(self.0.offsets(5)).len()
    }
    /// Content pair `i`: blob name (empty = none) and offset in the buffer.
    pub fn content(&self, i: usize) -> Option<(&'a str, u64)> {
        let names = ok(self.0.offsets(5));
        let offsets: Scalars<'a, u64> = ok(self.0.scalars(6));
        if i >= names.len() {
            return None;
        }
        Some((ok(names.string(i)), offsets.get(i).unwrap_or(0)))
    }
    /// Number of entries in `offsets` (equals `contents_len()` after validation).
    pub fn offsets_len(&self) -> usize {
        ok(self.0.scalars::<u64>(6)).len()
    }
    /// Bind id for inputs and outputs.
    pub fn bind_id(&self) -> u16 {
        ok(self.0.scalar(7, 0))
    }
    /// Tensor descriptor id for inputs and outputs.
    pub fn tensor_desc_id(&self) -> u16 {
        ok(self.0.scalar(8, 0))
    }
}

impl AddressListEntry<'_> {
    /// Position in the address list.
    pub fn id(&self) -> u16 {
        ok(self.0.scalar(0, 0))
    }
    /// Memory entry the address points into.
    pub fn mem_id(&self) -> u16 {
        ok(self.0.scalar(1, 0))
    }
    /// Offset within the memory entry.
    pub fn offset(&self) -> u64 {
        ok(self.0.scalar(2, 0))
    }
    /// Size of the window (0 = unspecified).
    pub fn size(&self) -> u64 {
        ok(self.0.scalar(3, 0))
    }
}

impl EventListEntry<'_> {
    /// Position in the event list.
    pub fn id(&self) -> u16 {
        ok(self.0.scalar(0, 0))
    }
    /// Event chain kind.
    pub fn event_type(&self) -> EventType {
        EventType::from_raw(ok(self.0.scalar(1, 0))).unwrap_or(EventType::EVENTTYPE0)
    }
    /// Event chain id.
    pub fn target(&self) -> u16 {
        ok(self.0.scalar(2, 0))
    }
    /// Value to wait for or to set.
    pub fn val(&self) -> u32 {
        ok(self.0.scalar(3, 0))
    }
    /// Wait or signal.
    pub fn op(&self) -> EventOp {
        EventOp::from_raw(ok(self.0.scalar(4, 0))).unwrap_or(EventOp::WAIT)
    }
}

impl<'a> Blob<'a> {
    /// Name, referenced by memory entries' contents.
    pub fn name(&self) -> &'a str {
        ok(self.0.string(0)).unwrap_or("")
    }
    /// Declared size (equals `data().len()` after validation).
    pub fn size(&self) -> u64 {
        ok(self.0.scalar(1, 0))
    }
    /// Interface the data is for (NONE for raw data).
    pub fn interface(&self) -> Interface {
        Interface::from_raw(ok(self.0.scalar(2, 0))).unwrap_or(Interface::NONE)
    }
    /// What the data is (network descriptor, op list, ...).
    pub fn sub_interface(&self) -> SubInterface {
        SubInterface::from_raw(ok(self.0.scalar(3, 0)))
    }
    /// Interface version the data targets.
    pub fn version(&self) -> Version {
        ok(self.0.inline_struct(4, 3))
            .map(Version::from_bytes)
            .unwrap_or_default()
    }
    /// The bytes.
    pub fn data(&self) -> &'a [u8] {
        ok(self.0.bytes(5))
    }
}

impl<'a> TensorDescListEntry<'a> {
    /// Tensor name.
    pub fn name(&self) -> &'a str {
        ok(self.0.string(0)).unwrap_or("")
    }
    /// Position in the tensor list.
    pub fn id(&self) -> u16 {
        ok(self.0.scalar(1, 0))
    }
    /// Memory entry holding the tensor.
    pub fn mem_id(&self) -> u16 {
        ok(self.0.scalar(2, 0))
    }
    /// Size in bytes.
    pub fn size(&self) -> u64 {
        ok(self.0.scalar(3, 0))
    }
    /// Offset in the memory entry.
    pub fn offset(&self) -> u64 {
        ok(self.0.scalar(4, 0))
    }
    /// Memory order.
    pub fn data_format(&self) -> DataFormat {
        DataFormat::from_raw(ok(self.0.scalar(5, 0)))
    }
    /// Element type.
    pub fn data_type(&self) -> DataType {
        DataType::from_raw(ok(self.0.scalar(6, 0)))
    }
    /// Image, feature, ...
    pub fn data_category(&self) -> DataCategory {
        DataCategory::from_raw(ok(self.0.scalar(7, 0)))
    }
    /// Pixel format.
    pub fn pixel_format(&self) -> PixelFormat {
        PixelFormat::from_raw(ok(self.0.scalar(8, 0)))
    }
    /// Pixel mapping.
    pub fn pixel_mapping(&self) -> PixelMapping {
        PixelMapping::from_raw(ok(self.0.scalar(9, 0)))
    }
    /// Dimensions `[n, c, h, w]`.
    pub fn dims(&self) -> [i32; 4] {
        [10, 11, 12, 13].map(|f| ok(self.0.scalar(f, 0)))
    }
    /// The eight stride fields `stride_0..stride_7` (bytes per element, line, surface, ...).
    pub fn strides(&self) -> [u32; 8] {
        [14, 15, 16, 17, 18, 19, 20, 21].map(|f| ok(self.0.scalar(f, 0)))
    }
}

impl RelocListEntry<'_> {
    /// Address-list id whose binding triggers the rewrite.
    pub fn address_id(&self) -> u16 {
        ok(self.0.scalar(0, 0))
    }
    /// Memory id of the descriptor to patch.
    pub fn write_id(&self) -> u16 {
        ok(self.0.scalar(1, 0))
    }
    /// Byte offset of the 32-bit field to patch.
    pub fn offset(&self) -> u64 {
        ok(self.0.scalar(2, 0))
    }
    /// Interface of the descriptor patched.
    pub fn interface(&self) -> Interface {
        Interface::from_raw(ok(self.0.scalar(3, 0))).unwrap_or(Interface::NONE)
    }
    /// Which descriptor list is patched.
    pub fn sub_interface(&self) -> SubInterface {
        SubInterface::from_raw(ok(self.0.scalar(4, 0)))
    }
    /// Which stride is written.
    pub fn reloc_type(&self) -> RelocType {
        RelocType::from_raw(ok(self.0.scalar(5, 0)))
    }
}

impl<'a> SubmitListEntry<'a> {
    /// Position in the submit list.
    pub fn id(&self) -> u16 {
        ok(self.0.scalar(0, 0))
    }
    /// Tasks submitted together.
    pub fn task_ids(&self) -> Scalars<'a, u16> {
        ok(self.0.scalars(1))
    }
}

/// A list of entries of one kind.
#[derive(Clone, Copy, Debug)]
pub struct EntryList<'a, E> {
    items: Offsets<'a>,
    wrap: fn(Table<'a>) -> E,
}

impl<'a, E> EntryList<'a, E> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// Entry `i` (which is also its id).
    pub fn get(&self, i: usize) -> Option<E> {
        if i >= self.items.len() {
            return None;
        }
        self.items.table(i).ok().map(self.wrap)
    }
    /// Iterate in order.
    pub fn iter(&self) -> impl Iterator<Item = E> + use<'_, 'a, E> {
        (0..self.len()).filter_map(move |i| self.get(i))
    }
}

/// A parsed and validated loadable, borrowing its buffer.
#[derive(Clone, Copy, Debug)]
pub struct Loadable<'a> {
    version: Version,
    tasks: Offsets<'a>,
    memory: Offsets<'a>,
    addresses: Offsets<'a>,
    events: Offsets<'a>,
    blobs: Offsets<'a>,
    tensors: Offsets<'a>,
    relocs: Offsets<'a>,
    submits: Offsets<'a>,
    blobs_sorted: bool,
}

impl<'a> Loadable<'a> {
    /// Verify `buf` completely and return views into it.
    pub fn parse(buf: &'a [u8]) -> Result<Self, Error> {
        let root_err = |field: &'static str| {
            move |e: FbError| Error::new(List::Root, 0, field, ErrorKind::Format(e))
        };
        let root = Table::root(buf).map_err(root_err("root"))?;
        let version = root
            .inline_struct(field::root::VERSION, 3)
            .map_err(root_err("version"))?
            .map(Version::from_bytes)
            .ok_or(Error::new(List::Root, 0, "version", ErrorKind::Missing))?;
        if version.major != LOADABLE_VERSION.major || version.minor != LOADABLE_VERSION.minor {
            return Err(Error::new(
                List::Root,
                0,
                "version",
                ErrorKind::UnsupportedVersion {
                    found: (version.major, version.minor, version.sub_minor),
                },
            ));
        }
        let list = |index: u16, name: &'static str| root.offsets(index).map_err(root_err(name));
        let mut l = Loadable {
            version,
            tasks: list(field::root::TASKS, "task_list")?,
            memory: list(field::root::MEMORY, "memory_list")?,
            addresses: list(field::root::ADDRESSES, "address_list")?,
            events: list(field::root::EVENTS, "event_list")?,
            blobs: list(field::root::BLOBS, "blobs")?,
            tensors: list(field::root::TENSORS, "tensor_desc_list")?,
            relocs: list(field::root::RELOCS, "reloc_list")?,
            submits: list(field::root::SUBMITS, "submit_list")?,
            blobs_sorted: false,
        };
        crate::validate::structure(&l)?;
        l.blobs_sorted = crate::validate::blobs_sorted(&l);
        crate::validate::references(&l)?;
        Ok(l)
    }

    /// Format version.
    pub fn version(&self) -> Version {
        self.version
    }
    /// The task list.
    pub fn tasks(&self) -> EntryList<'a, TaskListEntry<'a>> {
        EntryList {
            items: self.tasks,
            wrap: TaskListEntry,
        }
    }
    /// The memory list.
    pub fn memory(&self) -> EntryList<'a, MemoryListEntry<'a>> {
        EntryList {
            items: self.memory,
            wrap: MemoryListEntry,
        }
    }
    /// The address list.
    pub fn addresses(&self) -> EntryList<'a, AddressListEntry<'a>> {
        EntryList {
            items: self.addresses,
            wrap: AddressListEntry,
        }
    }
    /// The event list.
    pub fn events(&self) -> EntryList<'a, EventListEntry<'a>> {
        EntryList {
            items: self.events,
            wrap: EventListEntry,
        }
    }
    /// The blobs.
    pub fn blobs(&self) -> EntryList<'a, Blob<'a>> {
        EntryList {
            items: self.blobs,
            wrap: Blob,
        }
    }
    /// The tensor descriptors.
    pub fn tensors(&self) -> EntryList<'a, TensorDescListEntry<'a>> {
        EntryList {
            items: self.tensors,
            wrap: TensorDescListEntry,
        }
    }
    /// The relocations.
    pub fn relocs(&self) -> EntryList<'a, RelocListEntry<'a>> {
        EntryList {
            items: self.relocs,
            wrap: RelocListEntry,
        }
    }
    /// The submit list.
    pub fn submits(&self) -> EntryList<'a, SubmitListEntry<'a>> {
        EntryList {
            items: self.submits,
            wrap: SubmitListEntry,
        }
    }

    /// The blob called `name`.
    pub fn blob(&self, name: &str) -> Option<Blob<'a>> {
        let mut unlimited = u64::MAX;
        self.find_blob(name, &mut unlimited)
    }

    /// Blob lookup: binary search when names are sorted (as the compiler
    /// writes them), else a linear scan charged to `budget`.
    pub(crate) fn find_blob(&self, name: &str, budget: &mut u64) -> Option<Blob<'a>> {
        let blobs = self.blobs();
        if self.blobs_sorted {
            let (mut lo, mut hi) = (0usize, blobs.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let b = blobs.get(mid)?;
                match b.name().cmp(name) {
                    core::cmp::Ordering::Less => lo = mid + 1,
                    core::cmp::Ordering::Greater => hi = mid,
                    core::cmp::Ordering::Equal => return Some(b),
                }
            }
            None
        } else {
            for b in blobs.iter() {
                if *budget == 0 {
                    return None;
                }
                *budget -= 1;
                if b.name() == name {
                    return Some(b);
                }
            }
            None
        }
    }

    /// The memory entry and byte range an address-list id designates.
    pub fn resolve_address(&self, address_id: u16) -> Option<(MemoryListEntry<'a>, u64, u64)> {
        let a = self.addresses().get(address_id as usize)?;
        let m = self.memory().get(a.mem_id() as usize)?;
        Some((m, a.offset(), a.size()))
    }

    /// The blob that fills the memory behind an address-list id, if any (the
    /// first content of a SET memory entry placed at the address's offset).
    pub fn blob_at_address(&self, address_id: u16) -> Option<Blob<'a>> {
        let (m, offset, _) = self.resolve_address(address_id)?;
        if !m.flags().contains(MemoryFlags::SET) {
            return None;
        }
        (0..m.contents_len())
            .filter_map(|i| m.content(i))
            .find(|&(name, at)| at == offset && !name.is_empty())
            .and_then(|(name, _)| self.blob(name))
    }

    pub(crate) fn unsorted_budget() -> u64 {
        UNSORTED_LOOKUP_BUDGET
    }

    /// The raw offsets vector of a list (for the validator).
    pub(crate) fn raw_list(&self, list: List) -> Offsets<'a> {
        match list {
            List::Task => self.tasks,
            List::Memory => self.memory,
            List::Address => self.addresses,
            List::Event => self.events,
            List::Blob => self.blobs,
            List::TensorDesc => self.tensors,
            List::Reloc => self.relocs,
            List::Submit | List::Root => self.submits,
        }
    }
}
