//! The two validation passes of [`Loadable::parse`](crate::Loadable::parse).
//!
//! 1. `structure`: every entry table, vector and string is well-formed,
//!    every id equals its position, every closed enum holds a defined value.
//! 2. `references`: ids point at existing entries and byte ranges fit the
//!    memory they refer to.
//!
//! Cheap checks first; each failure names list, entry and field.

use crate::error::{Error, ErrorKind, List};
use crate::fb::{FbError, Offsets, Table};
use crate::loadable::{Loadable, MAX_ADDRESSES_PER_TASK};
use crate::schema::*;

type Fields = &'static [(&'static str, Check)];

/// How to verify one field.
#[derive(Clone, Copy)]
enum Check {
    /// Scalar of this many bytes.
    Scalar(usize),
    /// Inline struct of this many bytes.
    Inline(usize),
    /// String.
    Str,
    /// Vector of scalars of this element size.
    Vec(usize),
    /// Vector of strings.
    Strings,
}

const TASK: Fields = &[
    ("id", Check::Scalar(2)),
    ("interface", Check::Scalar(4)),
    ("instance", Check::Scalar(2)),
    ("address_list", Check::Vec(2)),
    ("pre_actions", Check::Vec(2)),
    ("post_actions", Check::Vec(2)),
];
const MEMORY: Fields = &[
    ("id", Check::Scalar(2)),
    ("domain", Check::Scalar(1)),
    ("flags", Check::Scalar(2)),
    ("size", Check::Scalar(8)),
    ("alignment", Check::Scalar(4)),
    ("contents", Check::Strings),
    ("offsets", Check::Vec(8)),
    ("bind_id", Check::Scalar(2)),
    ("tensor_desc_id", Check::Scalar(2)),
];
const ADDRESS: Fields = &[
    ("id", Check::Scalar(2)),
    ("mem_id", Check::Scalar(2)),
    ("offset", Check::Scalar(8)),
    ("size", Check::Scalar(8)),
];
const EVENT: Fields = &[
    ("id", Check::Scalar(2)),
    ("type", Check::Scalar(1)),
    ("target", Check::Scalar(2)),
    ("val", Check::Scalar(4)),
    ("op", Check::Scalar(1)),
];
const BLOB: Fields = &[
    ("name", Check::Str),
    ("size", Check::Scalar(8)),
    ("interface", Check::Scalar(4)),
    ("sub_interface", Check::Scalar(4)),
    ("version", Check::Inline(3)),
    ("data", Check::Vec(1)),
];
const TENSOR: Fields = &[
    ("name", Check::Str),
    ("id", Check::Scalar(2)),
    ("mem_id", Check::Scalar(2)),
    ("size", Check::Scalar(8)),
    ("offset", Check::Scalar(8)),
    ("data_format", Check::Scalar(1)),
    ("data_type", Check::Scalar(1)),
    ("data_category", Check::Scalar(1)),
    ("pixel_format", Check::Scalar(1)),
    ("pixel_mapping", Check::Scalar(1)),
    ("n", Check::Scalar(4)),
    ("c", Check::Scalar(4)),
    ("h", Check::Scalar(4)),
    ("w", Check::Scalar(4)),
    ("stride_0", Check::Scalar(4)),
    ("stride_1", Check::Scalar(4)),
    ("stride_2", Check::Scalar(4)),
    ("stride_3", Check::Scalar(4)),
    ("stride_4", Check::Scalar(4)),
    ("stride_5", Check::Scalar(4)),
    ("stride_6", Check::Scalar(4)),
    ("stride_7", Check::Scalar(4)),
];
const RELOC: Fields = &[
    ("address_id", Check::Scalar(2)),
    ("write_id", Check::Scalar(2)),
    ("offset", Check::Scalar(8)),
    ("interface", Check::Scalar(4)),
    ("sub_interface", Check::Scalar(4)),
    ("reloc_type", Check::Scalar(1)),
];
const SUBMIT: Fields = &[("id", Check::Scalar(2)), ("task_id", Check::Vec(2))];

fn check_field(t: &Table<'_>, index: u16, check: Check) -> Result<(), FbError> {
    match check {
        Check::Scalar(1) => t.scalar::<u8>(index, 0).map(drop),
        Check::Scalar(2) => t.scalar::<u16>(index, 0).map(drop),
        Check::Scalar(4) => t.scalar::<u32>(index, 0).map(drop),
        Check::Scalar(_) => t.scalar::<u64>(index, 0).map(drop),
        Check::Inline(n) => t.inline_struct(index, n).map(drop),
        Check::Str => t.string(index).map(drop),
        Check::Vec(1) => t.scalars::<u8>(index).map(drop),
        Check::Vec(2) => t.scalars::<u16>(index).map(drop),
        Check::Vec(_) => t.scalars::<u64>(index).map(drop),
        Check::Strings => {
            let v = t.offsets(index)?;
            (0..v.len()).try_for_each(|i| v.string(i).map(drop))
        }
    }
}

fn check_list(items: Offsets<'_>, list: List, fields: Fields) -> Result<(), Error> {
    let id_index = fields.iter().position(|(name, _)| *name == "id");
    for entry in 0..items.len() {
        let t = items
            .table(entry)
            .map_err(|e| Error::new(list, entry, "(table)", ErrorKind::Format(e)))?;
        for (index, (name, check)) in fields.iter().enumerate() {
            check_field(&t, index as u16, *check)
                .map_err(|e| Error::new(list, entry, name, ErrorKind::Format(e)))?;
        }
        if let Some(f) = id_index {
            let id = t.scalar::<u16>(f as u16, 0).unwrap_or(0);
            if id as usize != entry {
                return Err(Error::new(
                    list,
                    entry,
                    "id",
                    ErrorKind::IdNotIndex { id: id as u32 },
                ));
            }
        }
    }
    Ok(())
}

fn unknown(list: List, entry: usize, field: &'static str, value: u32) -> Error {
    Error::new(list, entry, field, ErrorKind::UnknownValue { value })
}

/// Pass 1: structure, ids, closed enums.
pub(crate) fn structure(l: &Loadable<'_>) -> Result<(), Error> {
    // The Loadable's private Offsets are reached through the entry lists.
    check_list(raw(l, List::Task), List::Task, TASK)?;
    check_list(raw(l, List::Memory), List::Memory, MEMORY)?;
    check_list(raw(l, List::Address), List::Address, ADDRESS)?;
    check_list(raw(l, List::Event), List::Event, EVENT)?;
    check_list(raw(l, List::Blob), List::Blob, BLOB)?;
    check_list(raw(l, List::TensorDesc), List::TensorDesc, TENSOR)?;
    check_list(raw(l, List::Reloc), List::Reloc, RELOC)?;
    check_list(raw(l, List::Submit), List::Submit, SUBMIT)?;

    for (i, t) in raw_tables(l, List::Task) {
        let v = t.scalar::<u32>(1, 0).unwrap_or(0);
        if !matches!(
            Interface::from_raw(v),
            Some(Interface::DLA1 | Interface::EMU1)
        ) {
            return Err(unknown(List::Task, i, "interface", v));
        }
    }
    for (i, t) in raw_tables(l, List::Memory) {
        let d = t.scalar::<u8>(1, 0).unwrap_or(0);
        if MemoryDomain::from_raw(d).is_none() {
            return Err(unknown(List::Memory, i, "domain", d as u32));
        }
        let f = t.scalar::<u16>(2, 0).unwrap_or(0);
        if MemoryFlags::from_bits(f).is_none() {
            return Err(unknown(List::Memory, i, "flags", f as u32));
        }
    }
    for (i, t) in raw_tables(l, List::Event) {
        let ty = t.scalar::<u8>(1, 0).unwrap_or(0);
        if EventType::from_raw(ty).is_none() {
            return Err(unknown(List::Event, i, "type", ty as u32));
        }
        let op = t.scalar::<u8>(4, 0).unwrap_or(0);
        if EventOp::from_raw(op).is_none() {
            return Err(unknown(List::Event, i, "op", op as u32));
        }
    }
    for (i, t) in raw_tables(l, List::Blob) {
        let v = t.scalar::<u32>(2, 0).unwrap_or(0);
        if Interface::from_raw(v).is_none() {
            return Err(unknown(List::Blob, i, "interface", v));
        }
    }
    for (i, t) in raw_tables(l, List::Reloc) {
        let v = t.scalar::<u32>(3, 0).unwrap_or(0);
        if Interface::from_raw(v).is_none() {
            return Err(unknown(List::Reloc, i, "interface", v));
        }
    }
    Ok(())
}

fn raw<'a>(l: &Loadable<'a>, list: List) -> Offsets<'a> {
    l.raw_list(list)
}

fn raw_tables<'a>(l: &Loadable<'a>, list: List) -> impl Iterator<Item = (usize, Table<'a>)> {
    let items = l.raw_list(list);
    (0..items.len()).filter_map(move |i| items.table(i).ok().map(|t| (i, t)))
}

/// Whether blob names are in strictly increasing order (enables binary search).
pub(crate) fn blobs_sorted(l: &Loadable<'_>) -> bool {
    let blobs = l.blobs();
    (1..blobs.len()).all(|i| match (blobs.get(i - 1), blobs.get(i)) {
        (Some(a), Some(b)) => a.name() < b.name(),
        _ => false,
    })
}

fn fits(
    list: List,
    entry: usize,
    field: &'static str,
    offset: u64,
    size: u64,
    limit: u64,
) -> Result<(), Error> {
    match offset.checked_add(size) {
        Some(end) if end <= limit => Ok(()),
        _ => Err(Error::new(
            list,
            entry,
            field,
            ErrorKind::OutOfRange {
                offset,
                size,
                limit,
            },
        )),
    }
}

fn exists(
    list: List,
    entry: usize,
    field: &'static str,
    target: List,
    id: u16,
    len: usize,
) -> Result<(), Error> {
    if (id as usize) < len {
        Ok(())
    } else {
        Err(Error::new(
            list,
            entry,
            field,
            ErrorKind::Dangling {
                target,
                id: id as u32,
            },
        ))
    }
}

/// Pass 2: cross-references and ranges.
pub(crate) fn references(l: &Loadable<'_>) -> Result<(), Error> {
    let memory = l.memory();
    let n_mem = memory.len();
    let n_addr = l.addresses().len();
    let n_events = l.events().len();
    let n_tasks = l.tasks().len();
    let n_tensors = l.tensors().len();
    let mem_size = |id: u16| memory.get(id as usize).map(|m| m.size()).unwrap_or(0);

    for (i, b) in l.blobs().iter().enumerate() {
        if b.size() != b.data().len() as u64 {
            return Err(Error::new(
                List::Blob,
                i,
                "data",
                ErrorKind::LengthMismatch {
                    expected: b.size(),
                    actual: b.data().len() as u64,
                },
            ));
        }
    }

    let mut budget = Loadable::unsorted_budget();
    for (i, m) in memory.iter().enumerate() {
        let offsets_len = m.offsets_len();
        if offsets_len != m.contents_len() {
            return Err(Error::new(
                List::Memory,
                i,
                "offsets",
                ErrorKind::LengthMismatch {
                    expected: m.contents_len() as u64,
                    actual: offsets_len as u64,
                },
            ));
        }
        let flags = m.flags();
        if flags.intersects(MemoryFlags::INPUT | MemoryFlags::OUTPUT) {
            exists(
                List::Memory,
                i,
                "tensor_desc_id",
                List::TensorDesc,
                m.tensor_desc_id(),
                n_tensors,
            )?;
        }
        if !flags.contains(MemoryFlags::SET) {
            continue;
        }
        for c in 0..m.contents_len() {
            let Some((name, offset)) = m.content(c) else {
                continue;
            };
            if name.is_empty() {
                continue;
            }
            let blob = l.find_blob(name, &mut budget).ok_or(Error::new(
                List::Memory,
                i,
                "contents",
                ErrorKind::NoSuchBlob,
            ))?;
            fits(List::Memory, i, "offsets", offset, blob.size(), m.size())?;
        }
    }

    for (i, a) in l.addresses().iter().enumerate() {
        exists(List::Address, i, "mem_id", List::Memory, a.mem_id(), n_mem)?;
        fits(
            List::Address,
            i,
            "size",
            a.offset(),
            a.size(),
            mem_size(a.mem_id()),
        )?;
    }

    for (i, t) in l.tasks().iter().enumerate() {
        let addrs = t.address_list();
        if addrs.is_empty() {
            return Err(Error::new(
                List::Task,
                i,
                "address_list",
                ErrorKind::Missing,
            ));
        }
        if addrs.len() > MAX_ADDRESSES_PER_TASK {
            return Err(Error::new(
                List::Task,
                i,
                "address_list",
                ErrorKind::TooMany {
                    count: addrs.len() as u64,
                    max: MAX_ADDRESSES_PER_TASK as u64,
                },
            ));
        }
        for id in addrs.iter() {
            exists(List::Task, i, "address_list", List::Address, id, n_addr)?;
        }
        for id in t.pre_actions().iter() {
            exists(List::Task, i, "pre_actions", List::Event, id, n_events)?;
        }
        for id in t.post_actions().iter() {
            exists(List::Task, i, "post_actions", List::Event, id, n_events)?;
        }
    }

    for (i, s) in l.submits().iter().enumerate() {
        for id in s.task_ids().iter() {
            exists(List::Submit, i, "task_id", List::Task, id, n_tasks)?;
        }
    }

    for (i, t) in l.tensors().iter().enumerate() {
        exists(
            List::TensorDesc,
            i,
            "mem_id",
            List::Memory,
            t.mem_id(),
            n_mem,
        )?;
        fits(
            List::TensorDesc,
            i,
            "size",
            t.offset(),
            t.size(),
            mem_size(t.mem_id()),
        )?;
    }

    for (i, r) in l.relocs().iter().enumerate() {
        exists(
            List::Reloc,
            i,
            "address_id",
            List::Address,
            r.address_id(),
            n_addr,
        )?;
        exists(
            List::Reloc,
            i,
            "write_id",
            List::Memory,
            r.write_id(),
            n_mem,
        )?;
        // The patched field is a 32-bit stride at a byte offset.
        fits(
            List::Reloc,
            i,
            "offset",
            r.offset(),
            4,
            mem_size(r.write_id()),
        )?;
    }
    Ok(())
}
