//! The bare-metal network image: a loadable laid out at fixed physical addresses.
//!
//! `nvdla-runtime --export-baremetal DIR` loads a loadable and its input as the runtime
//! always does, but with every buffer at a fixed physical address from a chosen base, and
//! writes that memory as one file, `image.bin`, to be placed at the base ahead of time
//! (linked into the program, flashed, or loaded by a debugger or QEMU's loader device).
//! Nothing is relocated or allocated at run time: descriptors already hold the addresses
//! the engines will use.
//!
//! The image starts with a header and the tables the runner walks; the buffers follow,
//! page aligned. All numbers are little-endian; offsets are from the image's first byte.
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | magic `NVDLABM1` |
//! | 8 | 4 | format version ([`VERSION`]) |
//! | 12 | 4 | header size ([`HEADER_SIZE`]) |
//! | 16 | 8 | base: the physical address the image was laid out for |
//! | 24 | 8 | size of the image in bytes |
//! | 32 | 4 | hardware build (index into `nvdla_hw::Build::ALL`) |
//! | 36 | 4 | task count |
//! | 40 | 4 | task table offset ([`TaskEntry`], 16 bytes each, in run order) |
//! | 44 | 4 | output count |
//! | 48 | 4 | output table offset ([`TensorEntry`], 32 bytes each, by bind id) |
//! | 52 | 4 | input count |
//! | 56 | 4 | input table offset ([`TensorEntry`]) |
//! | 60 | 4 | flags ([`FLAG_MODEL_PRECISIONS`]) |
//! | 64 | 8 | scratch address: memory for CPU tasks to copy a source window into |
//! | 72 | 8 | scratch size |
//!
//! A task's address list is a table of [`AddressEntry`] (24 bytes): the translated entries
//! the firmware reads descriptors through (`Hw::address`), exactly what a kernel driver
//! gives it after validating a submit.

use nvdla_firmware::hw::{DeviceAddr, Region};

/// The image's first 8 bytes.
pub const MAGIC: [u8; 8] = *b"NVDLABM1";
/// The format version this crate reads and writes.
pub const VERSION: u32 = 1;
/// Header flag: the network needs int16/fp16 on a build whose datapath is int8 only. The
/// hardware model computes every precision on every build (as NVIDIA's C model does), so
/// an image exported from a run on it may; silicon of such a build cannot. The runner then
/// lets the firmware accept those precisions, for the model.
pub const FLAG_MODEL_PRECISIONS: u32 = 1;
/// Bytes of the header.
pub const HEADER_SIZE: usize = 80;
/// Bytes of one task entry.
pub const TASK_ENTRY_SIZE: usize = 16;
/// Bytes of one address-list entry.
pub const ADDRESS_ENTRY_SIZE: usize = 24;
/// Bytes of one tensor entry.
pub const TENSOR_ENTRY_SIZE: usize = 32;

/// What runs a task (the loadable's task interface numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interface {
    /// A DLA1 task: the firmware programs the accelerator.
    Dla,
    /// An EMU1 task: the CPU computes it.
    Emu,
}

impl Interface {
    /// The number stored in the image (the loadable's: DLA1 = 1, EMU1 = 2).
    pub const fn code(self) -> u32 {
        match self {
            Interface::Dla => 1,
            Interface::Emu => 2,
        }
    }

    /// The interface stored as `code`.
    pub const fn from_code(code: u32) -> Option<Self> {
        match code {
            1 => Some(Interface::Dla),
            2 => Some(Interface::Emu),
            _ => None,
        }
    }
}

/// One task of the run, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskEntry {
    /// What runs it.
    pub interface: Interface,
    /// Entries in its address list.
    pub address_count: u32,
    /// Offset of its address list in the image.
    pub address_table: u32,
    /// Milliseconds a DLA task may take before the runner gives up (0: the runner's default).
    pub timeout_ms: u32,
}

/// One translated address-list entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddressEntry {
    /// Physical address of the entry (its buffer's address plus the entry's offset); 0 for
    /// an entry with no CPU-visible memory (an EMU task's SRAM slot).
    pub addr: u64,
    /// Bytes from `addr` to the end of the entry's buffer.
    pub len: u64,
    /// Bytes of the loadable's content at this entry, 0 if none or unknown (tells the two
    /// EMU descriptor layouts apart).
    pub content_len: u64,
}

impl AddressEntry {
    /// The entry as the firmware's [`Region`], `None` if it has no memory.
    pub fn region(&self) -> Option<Region> {
        (self.addr != 0 && self.len != 0).then_some(Region {
            addr: DeviceAddr(self.addr),
            len: self.len,
        })
    }
}

/// One input or output tensor's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TensorEntry {
    /// Physical address of the tensor's first byte.
    pub addr: u64,
    /// Bytes of the tensor (its surface, as the runtime reads an output back).
    pub size: u64,
    /// Bind id of the tensor.
    pub bind_id: u32,
}

/// The image's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Physical address the image was laid out for (where its first byte must be).
    pub base: u64,
    /// Bytes of the image.
    pub size: u64,
    /// Hardware build index (`nvdla_hw::Build::ALL`).
    pub build: u32,
    /// Tasks, in run order.
    pub task_count: u32,
    /// Offset of the task table.
    pub task_table: u32,
    /// Output tensors.
    pub output_count: u32,
    /// Offset of the output table.
    pub output_table: u32,
    /// Input tensors.
    pub input_count: u32,
    /// Offset of the input table.
    pub input_table: u32,
    /// Physical address of the CPU tasks' scratch memory.
    pub scratch_addr: u64,
    /// Bytes of scratch memory.
    pub scratch_size: u64,
    /// Flags ([`FLAG_MODEL_PRECISIONS`]).
    pub flags: u32,
}

/// Why an image cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageError {
    /// Shorter than its header or tables say.
    Truncated {
        /// What was being read.
        what: &'static str,
    },
    /// The first bytes are not [`MAGIC`].
    BadMagic,
    /// A format version this runner does not read.
    Version(u32),
    /// The image was laid out for another address than where it is.
    WrongBase {
        /// Where the image says it must be.
        expected: u64,
        /// Where it is.
        actual: u64,
    },
    /// A table or entry lies outside the image.
    OutOfImage {
        /// Which table or entry.
        what: &'static str,
        /// Its index, when it is an entry.
        index: u32,
    },
    /// A task names an interface this runner does not know.
    Interface {
        /// The task.
        task: u32,
        /// The stored number.
        code: u32,
    },
}

impl core::fmt::Display for ImageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            ImageError::Truncated { what } => write!(f, "image truncated in its {what}"),
            ImageError::BadMagic => write!(f, "not a bare-metal image (bad magic)"),
            ImageError::Version(v) => {
                write!(f, "image format version {v}, this runner reads {VERSION}")
            }
            ImageError::WrongBase { expected, actual } => write!(
                f,
                "image laid out for {expected:#x} but placed at {actual:#x}"
            ),
            ImageError::OutOfImage { what, index } => {
                write!(f, "{what} {index} lies outside the image")
            }
            ImageError::Interface { task, code } => {
                write!(f, "task {task}: unknown interface {code}")
            }
        }
    }
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(o..o + 4) {
        w.copy_from_slice(s);
    }
    u32::from_le_bytes(w)
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from(u32_at(b, o)) | (u64::from(u32_at(b, o + 4)) << 32)
}

impl Header {
    /// Decodes and checks the header in `bytes` (at least [`HEADER_SIZE`] bytes), for an
    /// image whose first byte is at physical address `placed_at`.
    pub fn decode(bytes: &[u8], placed_at: u64) -> Result<Header, ImageError> {
        let b = bytes
            .get(..HEADER_SIZE)
            .ok_or(ImageError::Truncated { what: "header" })?;
        if b[..8] != MAGIC {
            return Err(ImageError::BadMagic);
        }
        let version = u32_at(b, 8);
        if version != VERSION || u32_at(b, 12) as usize != HEADER_SIZE {
            return Err(ImageError::Version(version));
        }
        let h = Header {
            base: u64_at(b, 16),
            size: u64_at(b, 24),
            build: u32_at(b, 32),
            task_count: u32_at(b, 36),
            task_table: u32_at(b, 40),
            output_count: u32_at(b, 44),
            output_table: u32_at(b, 48),
            input_count: u32_at(b, 52),
            input_table: u32_at(b, 56),
            scratch_addr: u64_at(b, 64),
            scratch_size: u64_at(b, 72),
            flags: u32_at(b, 60),
        };
        if h.base != placed_at {
            return Err(ImageError::WrongBase {
                expected: h.base,
                actual: placed_at,
            });
        }
        h.table(h.task_table, h.task_count, TASK_ENTRY_SIZE, "task table")?;
        h.table(
            h.output_table,
            h.output_count,
            TENSOR_ENTRY_SIZE,
            "output table",
        )?;
        h.table(
            h.input_table,
            h.input_count,
            TENSOR_ENTRY_SIZE,
            "input table",
        )?;
        if h.scratch_size > 0 {
            h.span(h.scratch_addr, h.scratch_size, "scratch", 0)?;
        }
        Ok(h)
    }

    /// Encodes the header.
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[..8].copy_from_slice(&MAGIC);
        let mut put32 = |o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_le_bytes());
        put32(8, VERSION);
        put32(12, HEADER_SIZE as u32);
        put32(32, self.build);
        put32(36, self.task_count);
        put32(40, self.task_table);
        put32(44, self.output_count);
        put32(48, self.output_table);
        put32(52, self.input_count);
        put32(56, self.input_table);
        put32(60, self.flags);
        b[16..24].copy_from_slice(&self.base.to_le_bytes());
        b[24..32].copy_from_slice(&self.size.to_le_bytes());
        b[64..72].copy_from_slice(&self.scratch_addr.to_le_bytes());
        b[72..80].copy_from_slice(&self.scratch_size.to_le_bytes());
        b
    }

    /// Checks that `count` entries of `size` bytes at `offset` lie inside the image.
    fn table(
        &self,
        offset: u32,
        count: u32,
        size: usize,
        what: &'static str,
    ) -> Result<(), ImageError> {
        let end = u64::from(count)
            .checked_mul(size as u64)
            .and_then(|n| n.checked_add(u64::from(offset)));
        match end {
            Some(end) if end <= self.size && (count == 0 || offset as usize >= HEADER_SIZE) => {
                Ok(())
            }
            _ => Err(ImageError::OutOfImage { what, index: 0 }),
        }
    }

    /// Checks that `len` bytes at physical address `addr` lie inside the image.
    pub fn span(
        &self,
        addr: u64,
        len: u64,
        what: &'static str,
        index: u32,
    ) -> Result<(), ImageError> {
        let bad = ImageError::OutOfImage { what, index };
        let start = addr.checked_sub(self.base).ok_or(bad)?;
        let end = start.checked_add(len).ok_or(bad)?;
        if end > self.size {
            return Err(bad);
        }
        Ok(())
    }

    /// Offset of entry `i` of a table at `table` with `size`-byte entries.
    fn entry(table: u32, i: u32, size: usize) -> usize {
        table as usize + i as usize * size
    }

    /// Offset of task `i`'s entry (check `i < task_count` first).
    pub fn task_offset(&self, i: u32) -> usize {
        Self::entry(self.task_table, i, TASK_ENTRY_SIZE)
    }

    /// Offset of output `i`'s entry.
    pub fn output_offset(&self, i: u32) -> usize {
        Self::entry(self.output_table, i, TENSOR_ENTRY_SIZE)
    }

    /// Offset of input `i`'s entry.
    pub fn input_offset(&self, i: u32) -> usize {
        Self::entry(self.input_table, i, TENSOR_ENTRY_SIZE)
    }
}

impl TaskEntry {
    /// Decodes task `index`'s entry and checks its address list lies inside the image.
    pub fn decode(
        b: &[u8; TASK_ENTRY_SIZE],
        h: &Header,
        index: u32,
    ) -> Result<TaskEntry, ImageError> {
        let code = u32_at(b, 0);
        let interface =
            Interface::from_code(code).ok_or(ImageError::Interface { task: index, code })?;
        let t = TaskEntry {
            interface,
            address_count: u32_at(b, 4),
            address_table: u32_at(b, 8),
            timeout_ms: u32_at(b, 12),
        };
        h.table(
            t.address_table,
            t.address_count,
            ADDRESS_ENTRY_SIZE,
            "address list",
        )
        .map_err(|_| ImageError::OutOfImage {
            what: "address list of task",
            index,
        })?;
        Ok(t)
    }

    /// Encodes the entry.
    pub fn encode(&self) -> [u8; TASK_ENTRY_SIZE] {
        let mut b = [0u8; TASK_ENTRY_SIZE];
        b[0..4].copy_from_slice(&self.interface.code().to_le_bytes());
        b[4..8].copy_from_slice(&self.address_count.to_le_bytes());
        b[8..12].copy_from_slice(&self.address_table.to_le_bytes());
        b[12..16].copy_from_slice(&self.timeout_ms.to_le_bytes());
        b
    }

    /// Offset of address-list entry `i` (check `i < address_count` first).
    pub fn address_offset(&self, i: u32) -> usize {
        Header::entry(self.address_table, i, ADDRESS_ENTRY_SIZE)
    }
}

impl AddressEntry {
    /// Decodes an entry.
    pub fn decode(b: &[u8; ADDRESS_ENTRY_SIZE]) -> AddressEntry {
        AddressEntry {
            addr: u64_at(b, 0),
            len: u64_at(b, 8),
            content_len: u64_at(b, 16),
        }
    }

    /// Encodes the entry.
    pub fn encode(&self) -> [u8; ADDRESS_ENTRY_SIZE] {
        let mut b = [0u8; ADDRESS_ENTRY_SIZE];
        b[0..8].copy_from_slice(&self.addr.to_le_bytes());
        b[8..16].copy_from_slice(&self.len.to_le_bytes());
        b[16..24].copy_from_slice(&self.content_len.to_le_bytes());
        b
    }
}

impl TensorEntry {
    /// Decodes an entry.
    pub fn decode(b: &[u8; TENSOR_ENTRY_SIZE]) -> TensorEntry {
        TensorEntry {
            addr: u64_at(b, 0),
            size: u64_at(b, 8),
            bind_id: u32_at(b, 16),
        }
    }

    /// Encodes the entry.
    pub fn encode(&self) -> [u8; TENSOR_ENTRY_SIZE] {
        let mut b = [0u8; TENSOR_ENTRY_SIZE];
        b[0..8].copy_from_slice(&self.addr.to_le_bytes());
        b[8..16].copy_from_slice(&self.size.to_le_bytes());
        b[16..20].copy_from_slice(&self.bind_id.to_le_bytes());
        b
    }
}

/// Builds the header and tables of an image (the exporter's side).
#[cfg(feature = "std")]
#[derive(Debug, Clone)]
pub struct ImageBuilder {
    base: u64,
    build: u32,
    flags: u32,
    tasks: std::vec::Vec<(Interface, u32, std::vec::Vec<AddressEntry>)>,
    outputs: std::vec::Vec<TensorEntry>,
    inputs: std::vec::Vec<TensorEntry>,
}

#[cfg(feature = "std")]
impl ImageBuilder {
    /// An empty image for physical address `base` and hardware build index `build`.
    pub fn new(base: u64, build: u32) -> Self {
        Self {
            base,
            build,
            flags: 0,
            tasks: std::vec::Vec::new(),
            outputs: std::vec::Vec::new(),
            inputs: std::vec::Vec::new(),
        }
    }

    /// Sets header flags ([`FLAG_MODEL_PRECISIONS`]).
    pub fn flags(&mut self, flags: u32) {
        self.flags = flags;
    }

    /// Appends a task (run order).
    pub fn task(
        &mut self,
        interface: Interface,
        timeout_ms: u32,
        list: std::vec::Vec<AddressEntry>,
    ) {
        self.tasks.push((interface, timeout_ms, list));
    }

    /// Appends an output tensor.
    pub fn output(&mut self, t: TensorEntry) {
        self.outputs.push(t);
    }

    /// Appends an input tensor.
    pub fn input(&mut self, t: TensorEntry) {
        self.inputs.push(t);
    }

    /// Bytes the header and tables take (the buffers start after, page aligned).
    pub fn tables_len(&self) -> usize {
        HEADER_SIZE
            + self.tasks.len() * TASK_ENTRY_SIZE
            + (self.outputs.len() + self.inputs.len()) * TENSOR_ENTRY_SIZE
            + self
                .tasks
                .iter()
                .map(|t| t.2.len() * ADDRESS_ENTRY_SIZE)
                .sum::<usize>()
    }

    /// Writes the header and tables into the first [`Self::tables_len`] bytes of `image`
    /// (the memory from the base, buffers already in place), with `scratch` bytes of
    /// scratch memory at physical address `scratch_addr`.
    pub fn write(
        &self,
        image: &mut [u8],
        scratch_addr: u64,
        scratch: u64,
    ) -> Result<(), ImageError> {
        if image.len() < self.tables_len() {
            return Err(ImageError::Truncated { what: "tables" });
        }
        let count =
            |n: usize| u32::try_from(n).map_err(|_| ImageError::Truncated { what: "tables" });
        let task_table = HEADER_SIZE;
        let output_table = task_table + self.tasks.len() * TASK_ENTRY_SIZE;
        let input_table = output_table + self.outputs.len() * TENSOR_ENTRY_SIZE;
        let mut lists = input_table + self.inputs.len() * TENSOR_ENTRY_SIZE;
        let header = Header {
            base: self.base,
            size: image.len() as u64,
            build: self.build,
            task_count: count(self.tasks.len())?,
            task_table: count(task_table)?,
            output_count: count(self.outputs.len())?,
            output_table: count(output_table)?,
            input_count: count(self.inputs.len())?,
            input_table: count(input_table)?,
            scratch_addr,
            scratch_size: scratch,
            flags: self.flags,
        };
        image[..HEADER_SIZE].copy_from_slice(&header.encode());
        for (i, (interface, timeout_ms, list)) in self.tasks.iter().enumerate() {
            let e = TaskEntry {
                interface: *interface,
                address_count: count(list.len())?,
                address_table: count(lists)?,
                timeout_ms: *timeout_ms,
            };
            let o = task_table + i * TASK_ENTRY_SIZE;
            image[o..o + TASK_ENTRY_SIZE].copy_from_slice(&e.encode());
            for a in list {
                image[lists..lists + ADDRESS_ENTRY_SIZE].copy_from_slice(&a.encode());
                lists += ADDRESS_ENTRY_SIZE;
            }
        }
        for (i, t) in self.outputs.iter().enumerate() {
            let o = output_table + i * TENSOR_ENTRY_SIZE;
            image[o..o + TENSOR_ENTRY_SIZE].copy_from_slice(&t.encode());
        }
        for (i, t) in self.inputs.iter().enumerate() {
            let o = input_table + i * TENSOR_ENTRY_SIZE;
            image[o..o + TENSOR_ENTRY_SIZE].copy_from_slice(&t.encode());
        }
        Ok(())
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    #[test]
    fn header_and_tables_round_trip() {
        let base = 0x4800_0000;
        let mut b = ImageBuilder::new(base, 4);
        let list = std::vec![
            AddressEntry {
                addr: base + 0x1000,
                len: 0x100,
                content_len: 0x40
            },
            AddressEntry {
                addr: 0,
                len: 0,
                content_len: 0
            },
        ];
        b.task(Interface::Dla, 500, list.clone());
        b.task(Interface::Emu, 0, list[..1].to_vec());
        b.output(TensorEntry {
            addr: base + 0x2000,
            size: 20,
            bind_id: 0,
        });
        let mut image = std::vec![0u8; 0x3000];
        b.write(&mut image, base + 0x2800, 0x800).unwrap();
        let h = Header::decode(&image, base).unwrap();
        assert_eq!(
            (h.build, h.task_count, h.output_count, h.input_count),
            (4, 2, 1, 0)
        );
        assert_eq!((h.scratch_addr, h.scratch_size), (base + 0x2800, 0x800));
        let t0 = TaskEntry::decode(
            image[h.task_offset(0)..][..TASK_ENTRY_SIZE]
                .try_into()
                .unwrap(),
            &h,
            0,
        )
        .unwrap();
        assert_eq!(
            (t0.interface, t0.address_count, t0.timeout_ms),
            (Interface::Dla, 2, 500)
        );
        let a1 = AddressEntry::decode(
            image[t0.address_offset(1)..][..ADDRESS_ENTRY_SIZE]
                .try_into()
                .unwrap(),
        );
        assert_eq!(a1.region(), None);
        let o = TensorEntry::decode(
            image[h.output_offset(0)..][..TENSOR_ENTRY_SIZE]
                .try_into()
                .unwrap(),
        );
        assert_eq!(o.size, 20);
        assert_eq!(
            Header::decode(&image, base + 0x1000),
            Err(ImageError::WrongBase {
                expected: base,
                actual: base + 0x1000
            })
        );
    }

    #[test]
    fn damaged_headers_are_refused() {
        let base = 0x4800_0000;
        let mut image = std::vec![0u8; 0x200];
        ImageBuilder::new(base, 0).write(&mut image, 0, 0).unwrap();
        let mut bad = image.clone();
        bad[0] = b'X';
        assert_eq!(Header::decode(&bad, base), Err(ImageError::BadMagic));
        assert!(Header::decode(&image[..40], base).is_err());
        let mut huge = image.clone();
        huge[36..40].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            Header::decode(&huge, base),
            Err(ImageError::OutOfImage { .. })
        ));
        let mut scratch = image;
        scratch[64..72].copy_from_slice(&(base + 0x100).to_le_bytes());
        scratch[72..80].copy_from_slice(&0x1000u64.to_le_bytes());
        assert!(matches!(
            Header::decode(&scratch, base),
            Err(ImageError::OutOfImage { .. })
        ));
    }
}
