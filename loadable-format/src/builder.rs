//! Building loadables programmatically (feature `alloc`).
//!
//! [`LoadableSpec`] is an owned description of every list; [`LoadableSpec::build`]
//! serializes it to FlatBuffers bytes that [`Loadable::parse`] accepts and that
//! follow the layout rules of the reference C++ implementation (naturally
//! aligned scalars, vtables before their tables, NUL-terminated strings), so
//! the upstream runtime can read them too. Entry ids are positions: the
//! builder writes `id = index` for every list.
//!
//! The writer lays the buffer out front to back (parents before children,
//! since FlatBuffers offsets point forward) and patches offsets once the
//! children are placed. We do not use the `flatbuffers` crate's builder: its
//! struct-field API needs an `unsafe` trait impl, and this crate forbids
//! `unsafe`.

use crate::loadable::Loadable;
use crate::schema::*;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

/// A task of the task list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskSpec {
    /// Executor: DLA1 or EMU1.
    pub interface: u32,
    /// Instance, -1 for any.
    pub instance: i16,
    /// Address-list ids; the first is the network descriptor.
    pub address_list: Vec<u16>,
    /// Event ids waited on.
    pub pre_actions: Vec<u16>,
    /// Event ids signalled.
    pub post_actions: Vec<u16>,
}

/// A memory-list entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemorySpec {
    /// Domain (0 = system, 1 = SRAM).
    pub domain: u8,
    /// `MemoryFlags` bits.
    pub flags: u16,
    /// Size in bytes.
    pub size: u64,
    /// Alignment in bytes.
    pub alignment: u32,
    /// (blob name, offset) pairs filling the buffer.
    pub contents: Vec<(String, u64)>,
    /// Bind id.
    pub bind_id: u16,
    /// Tensor descriptor id.
    pub tensor_desc_id: u16,
}

/// An address-list entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddressSpec {
    /// Memory id.
    pub mem_id: u16,
    /// Offset in the memory.
    pub offset: u64,
    /// Size of the window.
    pub size: u64,
}

/// An event-list entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventSpec {
    /// `EventType` value.
    pub event_type: u8,
    /// Event chain id.
    pub target: u16,
    /// Value.
    pub val: u32,
    /// `EventOp` value.
    pub op: u8,
}

/// A blob.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlobSpec {
    /// Name (referenced by memory contents).
    pub name: String,
    /// Interface value.
    pub interface: u32,
    /// Sub-interface value.
    pub sub_interface: u32,
    /// Interface version.
    pub version: Version,
    /// The bytes (the blob's `size` is their length).
    pub data: Vec<u8>,
}

/// A tensor descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TensorSpec {
    /// Name.
    pub name: String,
    /// Memory id.
    pub mem_id: u16,
    /// Size in bytes.
    pub size: u64,
    /// Offset in the memory.
    pub offset: u64,
    /// `DataFormat` value.
    pub data_format: u8,
    /// `DataType` value.
    pub data_type: u8,
    /// `DataCategory` value.
    pub data_category: u8,
    /// `PixelFormat` value.
    pub pixel_format: u8,
    /// `PixelMapping` value.
    pub pixel_mapping: u8,
    /// `[n, c, h, w]`.
    pub dims: [i32; 4],
    /// `stride_0..stride_7`.
    pub strides: [u32; 8],
}

/// A relocation entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelocSpec {
    /// Address id.
    pub address_id: u16,
    /// Memory id written.
    pub write_id: u16,
    /// Byte offset.
    pub offset: u64,
    /// Interface value.
    pub interface: u32,
    /// Sub-interface value.
    pub sub_interface: u32,
    /// `RelocType` value.
    pub reloc_type: u8,
}

/// An owned loadable: every list, ids implied by position.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LoadableSpec {
    /// Format version (defaults to 0.7.0 in [`LoadableSpec::new`]).
    pub version: Version,
    /// Task list.
    pub tasks: Vec<TaskSpec>,
    /// Memory list.
    pub memory: Vec<MemorySpec>,
    /// Address list.
    pub addresses: Vec<AddressSpec>,
    /// Event list.
    pub events: Vec<EventSpec>,
    /// Blobs (written sorted by name, as the upstream compiler does).
    pub blobs: Vec<BlobSpec>,
    /// Tensor descriptors.
    pub tensors: Vec<TensorSpec>,
    /// Relocations.
    pub relocs: Vec<RelocSpec>,
    /// Submit list: task ids per entry.
    pub submits: Vec<Vec<u16>>,
}

impl LoadableSpec {
    /// An empty loadable of the current format version.
    pub fn new() -> Self {
        Self {
            version: LOADABLE_VERSION,
            ..Self::default()
        }
    }

    /// Add a memory entry; returns its id.
    pub fn add_memory(&mut self, m: MemorySpec) -> u16 {
        self.memory.push(m);
        (self.memory.len() - 1) as u16
    }
    /// Add an address entry; returns its id.
    pub fn add_address(&mut self, a: AddressSpec) -> u16 {
        self.addresses.push(a);
        (self.addresses.len() - 1) as u16
    }
    /// Add a blob.
    pub fn add_blob(&mut self, b: BlobSpec) {
        self.blobs.push(b);
    }
    /// Add an event; returns its id.
    pub fn add_event(&mut self, e: EventSpec) -> u16 {
        self.events.push(e);
        (self.events.len() - 1) as u16
    }
    /// Add a task; returns its id.
    pub fn add_task(&mut self, t: TaskSpec) -> u16 {
        self.tasks.push(t);
        (self.tasks.len() - 1) as u16
    }
    /// Add a tensor descriptor; returns its id.
    pub fn add_tensor(&mut self, t: TensorSpec) -> u16 {
        self.tensors.push(t);
        (self.tensors.len() - 1) as u16
    }

    /// An owned copy of a parsed loadable.
    pub fn from_loadable(l: &Loadable<'_>) -> Self {
        Self {
            version: l.version(),
            tasks: l
                .tasks()
                .iter()
                .map(|t| TaskSpec {
                    interface: t.interface().raw(),
                    instance: t.instance(),
                    address_list: t.address_list().iter().collect(),
                    pre_actions: t.pre_actions().iter().collect(),
                    post_actions: t.post_actions().iter().collect(),
                })
                .collect(),
            memory: l
                .memory()
                .iter()
                .map(|m| MemorySpec {
                    domain: m.domain().raw(),
                    flags: m.flags().bits(),
                    size: m.size(),
                    alignment: m.alignment(),
                    contents: (0..m.contents_len())
                        .filter_map(|i| m.content(i))
                        .map(|(n, o)| (n.to_string(), o))
                        .collect(),
                    bind_id: m.bind_id(),
                    tensor_desc_id: m.tensor_desc_id(),
                })
                .collect(),
            addresses: l
                .addresses()
                .iter()
                .map(|a| AddressSpec {
                    mem_id: a.mem_id(),
                    offset: a.offset(),
                    size: a.size(),
                })
                .collect(),
            events: l
                .events()
                .iter()
                .map(|e| EventSpec {
                    event_type: e.event_type().raw(),
                    target: e.target(),
                    val: e.val(),
                    op: e.op().raw(),
                })
                .collect(),
            blobs: l
                .blobs()
                .iter()
                .map(|b| BlobSpec {
                    name: b.name().to_string(),
                    interface: b.interface().raw(),
                    sub_interface: b.sub_interface().raw(),
                    version: b.version(),
                    data: b.data().to_vec(),
                })
                .collect(),
            tensors: l
                .tensors()
                .iter()
                .map(|t| TensorSpec {
                    name: t.name().to_string(),
                    mem_id: t.mem_id(),
                    size: t.size(),
                    offset: t.offset(),
                    data_format: t.data_format().raw(),
                    data_type: t.data_type().raw(),
                    data_category: t.data_category().raw(),
                    pixel_format: t.pixel_format().raw(),
                    pixel_mapping: t.pixel_mapping().raw(),
                    dims: t.dims(),
                    strides: t.strides(),
                })
                .collect(),
            relocs: l
                .relocs()
                .iter()
                .map(|r| RelocSpec {
                    address_id: r.address_id(),
                    write_id: r.write_id(),
                    offset: r.offset(),
                    interface: r.interface().raw(),
                    sub_interface: r.sub_interface().raw(),
                    reloc_type: r.reloc_type().raw(),
                })
                .collect(),
            submits: l
                .submits()
                .iter()
                .map(|s| s.task_ids().iter().collect())
                .collect(),
        }
    }

    /// Serialize to FlatBuffers bytes.
    pub fn build(&self) -> Vec<u8> {
        let mut w = Writer::default();
        let root_slot = w.reserve_u32();
        let mut blobs: Vec<&BlobSpec> = self.blobs.iter().collect();
        blobs.sort_by(|a, b| a.name.cmp(&b.name));

        let v = self.version;
        let root = w.table(&[
            (0, Field::Struct(vec![v.major, v.minor, v.sub_minor])),
            (1, Field::Child),
            (2, Field::Child),
            (3, Field::Child),
            (4, Field::Child),
            (5, Field::Child),
            (6, Field::Child),
            (7, Field::Child),
            (8, Field::Child),
        ]);
        w.patch(root_slot, root.pos);

        let slots = w.table_vector(root.child(1), self.tasks.len());
        for (i, (t, slot)) in self.tasks.iter().zip(slots).enumerate() {
            let tb = w.table(&[
                (0, Field::U16(i as u16)),
                (1, Field::U32(t.interface)),
                (2, Field::U16(t.instance as u16)),
                (3, Field::Child),
                (4, Field::Child),
                (5, Field::Child),
            ]);
            w.patch(slot, tb.pos);
            w.u16_vector(tb.child(3), &t.address_list);
            w.u16_vector(tb.child(4), &t.pre_actions);
            w.u16_vector(tb.child(5), &t.post_actions);
        }

        let slots = w.table_vector(root.child(2), self.memory.len());
        for (i, (m, slot)) in self.memory.iter().zip(slots).enumerate() {
            let tb = w.table(&[
                (0, Field::U16(i as u16)),
                (1, Field::U8(m.domain)),
                (2, Field::U16(m.flags)),
                (3, Field::U64(m.size)),
                (4, Field::U32(m.alignment)),
                (5, Field::Child),
                (6, Field::Child),
                (7, Field::U16(m.bind_id)),
                (8, Field::U16(m.tensor_desc_id)),
            ]);
            w.patch(slot, tb.pos);
            let names = w.table_vector(tb.child(5), m.contents.len());
            for ((name, _), s) in m.contents.iter().zip(names) {
                let p = w.string(name);
                w.patch(s, p);
            }
            let offsets: Vec<u64> = m.contents.iter().map(|(_, o)| *o).collect();
            w.u64_vector(tb.child(6), &offsets);
        }

        let slots = w.table_vector(root.child(3), self.addresses.len());
        for (i, (a, slot)) in self.addresses.iter().zip(slots).enumerate() {
            let tb = w.table(&[
                (0, Field::U16(i as u16)),
                (1, Field::U16(a.mem_id)),
                (2, Field::U64(a.offset)),
                (3, Field::U64(a.size)),
            ]);
            w.patch(slot, tb.pos);
        }

        let slots = w.table_vector(root.child(4), self.events.len());
        for (i, (e, slot)) in self.events.iter().zip(slots).enumerate() {
            let tb = w.table(&[
                (0, Field::U16(i as u16)),
                (1, Field::U8(e.event_type)),
                (2, Field::U16(e.target)),
                (3, Field::U32(e.val)),
                (4, Field::U8(e.op)),
            ]);
            w.patch(slot, tb.pos);
        }

        let slots = w.table_vector(root.child(5), blobs.len());
        for (b, slot) in blobs.iter().zip(slots) {
            let v = b.version;
            let tb = w.table(&[
                (0, Field::Child),
                (1, Field::U64(b.data.len() as u64)),
                (2, Field::U32(b.interface)),
                (3, Field::U32(b.sub_interface)),
                (4, Field::Struct(vec![v.major, v.minor, v.sub_minor])),
                (5, Field::Child),
            ]);
            w.patch(slot, tb.pos);
            let p = w.string(&b.name);
            w.patch(tb.child(0), p);
            w.u8_vector(tb.child(5), &b.data);
        }

        let slots = w.table_vector(root.child(6), self.tensors.len());
        for (i, (t, slot)) in self.tensors.iter().zip(slots).enumerate() {
            let mut fields = vec![
                (0, Field::Child),
                (1, Field::U16(i as u16)),
                (2, Field::U16(t.mem_id)),
                (3, Field::U64(t.size)),
                (4, Field::U64(t.offset)),
                (5, Field::U8(t.data_format)),
                (6, Field::U8(t.data_type)),
                (7, Field::U8(t.data_category)),
                (8, Field::U8(t.pixel_format)),
                (9, Field::U8(t.pixel_mapping)),
            ];
            for (k, d) in t.dims.iter().enumerate() {
                fields.push((10 + k as u16, Field::U32(*d as u32)));
            }
            for (k, s) in t.strides.iter().enumerate() {
                fields.push((14 + k as u16, Field::U32(*s)));
            }
            let tb = w.table(&fields);
            w.patch(slot, tb.pos);
            let p = w.string(&t.name);
            w.patch(tb.child(0), p);
        }

        let slots = w.table_vector(root.child(7), self.relocs.len());
        for (r, slot) in self.relocs.iter().zip(slots) {
            let tb = w.table(&[
                (0, Field::U16(r.address_id)),
                (1, Field::U16(r.write_id)),
                (2, Field::U64(r.offset)),
                (3, Field::U32(r.interface)),
                (4, Field::U32(r.sub_interface)),
                (5, Field::U8(r.reloc_type)),
            ]);
            w.patch(slot, tb.pos);
        }

        let slots = w.table_vector(root.child(8), self.submits.len());
        for (i, (s, slot)) in self.submits.iter().zip(slots).enumerate() {
            let tb = w.table(&[(0, Field::U16(i as u16)), (1, Field::Child)]);
            w.patch(slot, tb.pos);
            w.u16_vector(tb.child(1), s);
        }
        w.buf
    }
}

/// A table field to write.
enum Field {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    /// Inline struct bytes (alignment 1).
    Struct(Vec<u8>),
    /// An offset to a child (vector, string or table), patched later.
    Child,
}

impl Field {
    fn size_align(&self) -> (usize, usize) {
        match self {
            Field::U8(_) => (1, 1),
            Field::U16(_) => (2, 2),
            Field::U32(_) | Field::Child => (4, 4),
            Field::U64(_) => (8, 8),
            Field::Struct(b) => (b.len(), 1),
        }
    }
}

/// A written table: its position and where its child offsets go.
struct Written {
    pos: usize,
    children: Vec<(u16, usize)>,
}

impl Written {
    fn child(&self, slot: u16) -> usize {
        self.children
            .iter()
            .find(|(s, _)| *s == slot)
            .map(|(_, p)| *p)
            .unwrap_or(0)
    }
}

#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn pad_to(&mut self, align: usize) {
        while !self.buf.len().is_multiple_of(align) {
            self.buf.push(0);
        }
    }

    fn reserve_u32(&mut self) -> usize {
        self.pad_to(4);
        let p = self.buf.len();
        self.buf.extend_from_slice(&[0; 4]);
        p
    }

    /// Point the u32 offset slot at `slot` to `target` (which lies after it).
    fn patch(&mut self, slot: usize, target: usize) {
        let rel = (target - slot) as u32;
        self.buf[slot..slot + 4].copy_from_slice(&rel.to_le_bytes());
    }

    /// Write a vtable then its table; returns the table's position.
    fn table(&mut self, fields: &[(u16, Field)]) -> Written {
        // Scalars equal to their default (0 throughout this schema) are left
        // out, as FlatBuffers builders do by default; readers supply them.
        let fields: Vec<&(u16, Field)> = fields
            .iter()
            .filter(|(_, f)| {
                !matches!(
                    f,
                    Field::U8(0) | Field::U16(0) | Field::U32(0) | Field::U64(0)
                )
            })
            .collect();
        // Lay out the object: soffset, then fields largest-alignment first.
        let mut order: Vec<usize> = (0..fields.len()).collect();
        order.sort_by_key(|&i| core::cmp::Reverse(fields[i].1.size_align().1));
        let mut offsets = vec![0u16; fields.iter().map(|f| f.0 as usize + 1).max().unwrap_or(0)];
        let mut obj_len = 4usize;
        for &i in &order {
            let (size, align) = fields[i].1.size_align();
            // The table starts 8-aligned, so in-object alignment is absolute.
            obj_len = obj_len.next_multiple_of(align);
            offsets[fields[i].0 as usize] = obj_len as u16;
            obj_len += size;
        }
        let obj_len = obj_len.next_multiple_of(4);

        // vtable, placed so that the table that follows it is 8-aligned.
        let vt_len = 4 + 2 * offsets.len();
        self.pad_to(2);
        while !(self.buf.len() + vt_len).is_multiple_of(8) {
            self.buf.push(0);
        }
        let vt = self.buf.len();
        self.buf.extend_from_slice(&(vt_len as u16).to_le_bytes());
        self.buf.extend_from_slice(&(obj_len as u16).to_le_bytes());
        for o in &offsets {
            self.buf.extend_from_slice(&o.to_le_bytes());
        }
        let pos = self.buf.len();
        self.buf.resize(pos + obj_len, 0);
        self.buf[pos..pos + 4].copy_from_slice(&((pos - vt) as i32).to_le_bytes());
        let mut children = Vec::new();
        for &(slot, f) in &fields {
            let at = pos + offsets[*slot as usize] as usize;
            match f {
                Field::U8(v) => self.buf[at] = *v,
                Field::U16(v) => self.buf[at..at + 2].copy_from_slice(&v.to_le_bytes()),
                Field::U32(v) => self.buf[at..at + 4].copy_from_slice(&v.to_le_bytes()),
                Field::U64(v) => self.buf[at..at + 8].copy_from_slice(&v.to_le_bytes()),
                Field::Struct(b) => self.buf[at..at + b.len()].copy_from_slice(b),
                Field::Child => children.push((*slot, at)),
            }
        }
        Written { pos, children }
    }

    /// A vector header whose elements (of `align`) start aligned.
    fn vector_header(&mut self, len: usize, align: usize) -> usize {
        self.pad_to(4);
        while !(self.buf.len() + 4).is_multiple_of(align.max(4)) {
            self.buf.push(0);
        }
        let p = self.buf.len();
        self.buf.extend_from_slice(&(len as u32).to_le_bytes());
        p
    }

    /// A vector of offsets pointed to by `slot`; returns the element slots.
    fn table_vector(&mut self, slot: usize, len: usize) -> Vec<usize> {
        let p = self.vector_header(len, 4);
        self.patch(slot, p);
        let first = self.buf.len();
        self.buf.resize(first + 4 * len, 0);
        (0..len).map(|i| first + 4 * i).collect()
    }

    fn u8_vector(&mut self, slot: usize, v: &[u8]) {
        let p = self.vector_header(v.len(), 1);
        self.patch(slot, p);
        self.buf.extend_from_slice(v);
    }

    fn u16_vector(&mut self, slot: usize, v: &[u16]) {
        let p = self.vector_header(v.len(), 2);
        self.patch(slot, p);
        for x in v {
            self.buf.extend_from_slice(&x.to_le_bytes());
        }
    }

    fn u64_vector(&mut self, slot: usize, v: &[u64]) {
        let p = self.vector_header(v.len(), 8);
        self.patch(slot, p);
        for x in v {
            self.buf.extend_from_slice(&x.to_le_bytes());
        }
    }

    fn string(&mut self, s: &str) -> usize {
        let p = self.vector_header(s.len(), 1);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-BDMA-task loadable, as small as the format allows.
    pub(crate) fn tiny() -> LoadableSpec {
        let mut s = LoadableSpec::new();
        s.add_blob(BlobSpec {
            name: "task-0-addr0".into(),
            interface: Interface::DLA1.raw(),
            sub_interface: SubInterface::ADDR0.raw(),
            version: Version {
                major: 0,
                minor: 12,
                sub_minor: 0,
            },
            data: vec![7; 44],
        });
        let m = s.add_memory(MemorySpec {
            flags: (MemoryFlags::ALLOC | MemoryFlags::SET).bits(),
            size: 4096,
            alignment: 4096,
            contents: vec![("task-0-addr0".into(), 0)],
            ..Default::default()
        });
        let a = s.add_address(AddressSpec {
            mem_id: m,
            offset: 0,
            size: 4096,
        });
        let e = s.add_event(EventSpec {
            op: EventOp::SIGNAL.raw(),
            val: 1,
            ..Default::default()
        });
        let t = s.add_task(TaskSpec {
            interface: Interface::DLA1.raw(),
            instance: -1,
            address_list: vec![a],
            post_actions: vec![e],
            ..Default::default()
        });
        s.submits.push(vec![t]);
        s
    }

    #[test]
    fn build_parse_equal() {
        let spec = tiny();
        let bytes = spec.build();
        let l = Loadable::parse(&bytes).unwrap();
        assert_eq!(LoadableSpec::from_loadable(&l), spec);
        assert_eq!(l.blob_at_address(0).unwrap().data(), &[7; 44][..]);
    }

    #[test]
    fn scalars_are_naturally_aligned() {
        let bytes = tiny().build();
        let l = Loadable::parse(&bytes).unwrap();
        // The memory entry's u64 size sits at an 8-aligned position.
        let size = l.memory().get(0).unwrap().size();
        let pos = bytes
            .windows(8)
            .position(|w| w == size.to_le_bytes())
            .unwrap();
        assert_eq!(pos % 8, 0);
    }
}
