//! Validation errors, each naming the list, the entry and the field.

use crate::fb::FbError;

/// A list of the loadable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum List {
    /// The root table itself.
    Root,
    /// `task_list`.
    Task,
    /// `memory_list`.
    Memory,
    /// `address_list`.
    Address,
    /// `event_list`.
    Event,
    /// `blobs`.
    Blob,
    /// `tensor_desc_list`.
    TensorDesc,
    /// `reloc_list`.
    Reloc,
    /// `submit_list`.
    Submit,
}

impl List {
    /// The schema's name for the list.
    pub fn name(self) -> &'static str {
        match self {
            List::Root => "loadable",
            List::Task => "task_list",
            List::Memory => "memory_list",
            List::Address => "address_list",
            List::Event => "event_list",
            List::Blob => "blobs",
            List::TensorDesc => "tensor_desc_list",
            List::Reloc => "reloc_list",
            List::Submit => "submit_list",
        }
    }
}

/// Where an error is: `list[entry].field`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Which list.
    pub list: List,
    /// Entry index within the list (0 for the root).
    pub entry: usize,
    /// Schema field name.
    pub field: &'static str,
}

impl core::fmt::Display for Location {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.list == List::Root {
            write!(f, "loadable.{}", self.field)
        } else {
            write!(f, "{}[{}].{}", self.list.name(), self.entry, self.field)
        }
    }
}

/// Why a loadable was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The FlatBuffers structure is broken here.
    Format(FbError),
    /// The required field is absent.
    Missing,
    /// The loadable is of a format version this reader does not support.
    UnsupportedVersion {
        /// Version found (major, minor, sub-minor).
        found: (u8, u8, u8),
    },
    /// Entries must carry their position as id (`id := 0..n-1` in the schema).
    IdNotIndex {
        /// The id found.
        id: u32,
    },
    /// An enum field holds a value the schema does not define.
    UnknownValue {
        /// The raw value.
        value: u32,
    },
    /// A reference to an entry of another list that does not exist.
    Dangling {
        /// The list referred to.
        target: List,
        /// The id referred to.
        id: u32,
    },
    /// A blob named by a memory entry's `contents` does not exist.
    NoSuchBlob,
    /// `offset + size` exceeds the limit (a memory size, usually).
    OutOfRange {
        /// Start offset.
        offset: u64,
        /// Length.
        size: u64,
        /// Bytes available.
        limit: u64,
    },
    /// Two lengths that must agree do not.
    LengthMismatch {
        /// Expected length.
        expected: u64,
        /// Actual length.
        actual: u64,
    },
    /// A count exceeds what the runtime and driver accept.
    TooMany {
        /// Count found.
        count: u64,
        /// Maximum.
        max: u64,
    },
}

/// A rejected loadable: what is wrong and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error {
    /// Where (list, entry, field).
    pub at: Location,
    /// What.
    pub kind: ErrorKind,
}

impl Error {
    pub(crate) fn new(list: List, entry: usize, field: &'static str, kind: ErrorKind) -> Self {
        Self {
            at: Location { list, entry, field },
            kind,
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: ", self.at)?;
        match self.kind {
            ErrorKind::Format(e) => write!(f, "malformed flatbuffer: {e}"),
            ErrorKind::Missing => write!(f, "required field is missing"),
            ErrorKind::UnsupportedVersion { found } => write!(
                f,
                "loadable version {}.{}.{} is not supported (expected 0.7.x)",
                found.0, found.1, found.2
            ),
            ErrorKind::IdNotIndex { id } => write!(f, "id {id} differs from the entry's position"),
            ErrorKind::UnknownValue { value } => write!(f, "unknown value {value}"),
            ErrorKind::Dangling { target, id } => {
                write!(
                    f,
                    "refers to {} id {id}, which does not exist",
                    target.name()
                )
            }
            ErrorKind::NoSuchBlob => write!(f, "names a blob that does not exist"),
            ErrorKind::OutOfRange {
                offset,
                size,
                limit,
            } => write!(
                f,
                "range {offset}+{size} exceeds the {limit} bytes available"
            ),
            ErrorKind::LengthMismatch { expected, actual } => {
                write!(f, "length {actual} where {expected} is required")
            }
            ErrorKind::TooMany { count, max } => {
                write!(f, "{count} entries, at most {max} allowed")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}
