//! Loading a loadable onto a [`Device`] and running it.
//!
//! [`Runtime::load`] parses and validates the loadable, allocates a device buffer for every
//! memory-list entry with the `ALLOC` flag (SRAM-domain ones in the device's CV-SRAM,
//! [`Device::create_sram_buffer`], which the surface descriptors address as `CV`), copies the `SET` contents from their blobs, and records the bindable input and
//! output tensors. [`Runtime::run`] walks the submit list in order: DLA1 tasks go to
//! [`Device::submit`] with their address lists translated to (buffer handle, offset) pairs;
//! EMU1 tasks run on the CPU ([`crate::emu`]); each task's pre-actions (event waits) must be
//! satisfied by the signals of the tasks before it, and its post-actions raise events.
//!
//! Differences from upstream's `Runtime`, and why:
//! - Bindable (`INPUT`/`OUTPUT`) memories are allocated here, at their memory size (or the
//!   tensor's extent if larger), instead of by the application; a caller may still bind its
//!   own buffer ([`Runtime::bind`]). A bindable memory that is also `SET` is filled from its
//!   blobs, so a loadable carrying its own input runs without an image.
//! - Upstream ignores a failed address translation and submits a zero handle; we fail with
//!   the task, slot and memory named.
//! - Upstream never checks events (its tasks run blocking, in order); we check that every
//!   wait is satisfied by an earlier signal, since a violated one would deadlock a
//!   concurrent executor.
//! - Relocations are applied with byte offsets (what the loadables hold); upstream adds the
//!   offset to a `NvU32 *`, scaling it by four, but only ever reaches that code when an
//!   application changes strides, which the upstream tools never do.

use std::time::Instant;

use nvdla_loadable::emu::Layout;
use nvdla_loadable::{
    DataCategory, DataFormat, DataType, Interface, Loadable, MemoryDomain, MemoryFlags,
    PixelFormat, PixelMapping, RelocType, SubInterface,
};
use nvdla_port::device::{BufferAddress, BufferHandle, Device, Task, Timeout};

use crate::dimg::DlaImage;
use crate::emu::{self, SlotMemory};
pub use crate::error::Direction;
use crate::error::{Error, Result};

/// Largest alignment a device buffer is known to satisfy (buffers start on a page).
pub const PAGE_ALIGNMENT: u32 = 4096;

/// Tensor dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dims {
    /// Batch.
    pub n: i32,
    /// Channels.
    pub c: i32,
    /// Height.
    pub h: i32,
    /// Width.
    pub w: i32,
}

/// A tensor descriptor (upstream's `NvDlaTensor`), owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorDesc {
    /// Name.
    pub name: String,
    /// Memory entry holding the tensor.
    pub mem_id: u16,
    /// Byte offset in that memory.
    pub offset: u64,
    /// Size in bytes (`bufferSize`).
    pub size: u64,
    /// Dimensions.
    pub dims: Dims,
    /// Memory order.
    pub data_format: DataFormat,
    /// Element type.
    pub data_type: DataType,
    /// Image or feature.
    pub data_category: DataCategory,
    /// Pixel format.
    pub pixel_format: PixelFormat,
    /// Pixel mapping.
    pub pixel_mapping: PixelMapping,
    /// `stride[0..8]`: bytes per element, per line, per surface, ...
    pub strides: [u32; 8],
}

impl TensorDesc {
    fn from_entry(e: &nvdla_loadable::TensorDescListEntry<'_>) -> Self {
        let [n, c, h, w] = e.dims();
        Self {
            name: e.name().to_string(),
            mem_id: e.mem_id(),
            offset: e.offset(),
            size: e.size(),
            dims: Dims { n, c, h, w },
            data_format: e.data_format(),
            data_type: e.data_type(),
            data_category: e.data_category(),
            pixel_format: e.pixel_format(),
            pixel_mapping: e.pixel_mapping(),
            strides: e.strides(),
        }
    }

    /// Byte range of the tensor inside its memory (`offset .. offset + size`), if it does
    /// not overflow.
    pub fn extent(&self) -> Option<u64> {
        self.offset.checked_add(self.size)
    }
}

/// Options of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunOptions {
    /// Timeout of each DLA task.
    pub timeout: Timeout,
}

/// What a progress report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The task is about to start.
    Start,
    /// The task completed, after this long.
    Done(std::time::Duration),
}

/// One progress report of [`Runtime::run`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// 1-based position of the task in the run.
    pub position: usize,
    /// Number of tasks the run executes.
    pub total: usize,
    /// Task id.
    pub task: usize,
    /// Executor.
    pub interface: Interface,
    /// Submit-list entry it belongs to.
    pub submit: usize,
    /// Start or end.
    pub phase: Phase,
}

impl core::fmt::Display for Progress {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let what = match self.interface {
            Interface::DLA1 => "DLA1 (accelerator)",
            Interface::EMU1 => "EMU1 (cpu)",
            Interface::NONE => "NONE",
        };
        match self.phase {
            Phase::Start => write!(
                f,
                "task {}/{}: id {} {} submit {} ...",
                self.position, self.total, self.task, what, self.submit
            ),
            Phase::Done(d) => write!(
                f,
                "task {}/{}: id {} {} done in {:.3} ms",
                self.position,
                self.total,
                self.task,
                what,
                d.as_secs_f64() * 1e3
            ),
        }
    }
}

#[derive(Debug, Clone)]
struct Mem {
    handle: Option<BufferHandle>,
    /// Size of the buffer behind `handle`.
    size: u64,
    /// Whether the runtime created (and so destroys) the buffer.
    owned: bool,
    domain: MemoryDomain,
    flags: MemoryFlags,
}

/// A loaded network on a device.
///
/// The runtime does not own the device: every call that touches memory takes it, so any
/// [`Device`] implementation can drive it. Call [`release`](Self::release) to free the
/// buffers; a dropped runtime leaves them to the device (which frees them when it closes).
#[derive(Debug)]
pub struct Runtime<'l> {
    loadable: Loadable<'l>,
    mem: Vec<Mem>,
    tensors: Vec<TensorDesc>,
    /// Memory ids of the inputs, by bind id.
    inputs: Vec<usize>,
    /// Memory ids of the outputs, by bind id.
    outputs: Vec<usize>,
}

/// Reads `len` bytes at `at` from a device buffer.
fn read_at(
    dev: &mut dyn Device,
    at: BufferAddress,
    len: usize,
) -> core::result::Result<Vec<u8>, String> {
    let buf = dev.map_buffer(at.handle).map_err(|e| e.to_string())?;
    usize::try_from(at.offset)
        .ok()
        .and_then(|o| buf.get(o..o.checked_add(len)?))
        .map(<[u8]>::to_vec)
        .ok_or_else(|| {
            format!(
                "{len} bytes at offset {} run past the end of {} ({} bytes)",
                at.offset,
                at.handle,
                buf.len()
            )
        })
}

/// Writes `data` at `at` into a device buffer.
fn write_at(
    dev: &mut dyn Device,
    at: BufferAddress,
    data: &[u8],
) -> core::result::Result<(), String> {
    let buf = dev.map_buffer(at.handle).map_err(|e| e.to_string())?;
    let len = buf.len();
    usize::try_from(at.offset)
        .ok()
        .and_then(|o| buf.get_mut(o..o.checked_add(data.len())?))
        .map(|dst| dst.copy_from_slice(data))
        .ok_or_else(|| {
            format!(
                "{} bytes at offset {} run past the end of {} ({len} bytes)",
                data.len(),
                at.offset,
                at.handle
            )
        })
}

fn dev_err(context: String) -> impl FnOnce(nvdla_port::device::DeviceError) -> Error {
    move |source| Error::Device { context, source }
}

impl<'l> Runtime<'l> {
    /// Parses `bytes`, validates it, allocates and fills its memory on `dev`.
    ///
    /// On failure every buffer already created is destroyed again.
    pub fn load(dev: &mut dyn Device, bytes: &'l [u8]) -> Result<Self> {
        let loadable = Loadable::parse(bytes)?;
        if loadable.submits().is_empty() {
            return Err(Error::EmptyList("submit_list"));
        }
        if loadable.tasks().is_empty() {
            return Err(Error::EmptyList("task_list"));
        }
        if loadable.memory().is_empty() {
            return Err(Error::EmptyList("memory_list"));
        }
        let tensors: Vec<TensorDesc> = loadable
            .tensors()
            .iter()
            .map(|t| TensorDesc::from_entry(&t))
            .collect();
        let mut rt = Runtime {
            loadable,
            mem: Vec::new(),
            tensors,
            inputs: Vec::new(),
            outputs: Vec::new(),
        };
        match rt.init(dev).and_then(|()| rt.upgrade_legacy_surfaces(dev)) {
            Ok(()) => Ok(rt),
            Err(e) => {
                rt.release(dev);
                Err(e)
            }
        }
    }

    fn init(&mut self, dev: &mut dyn Device) -> Result<()> {
        self.init_bindable()?;
        let entries: Vec<_> = self.loadable.memory().iter().collect();
        for (mi, m) in entries.iter().enumerate() {
            let flags = m.flags();
            let mut mem = Mem {
                handle: None,
                size: 0,
                owned: false,
                domain: m.domain(),
                flags,
            };
            if flags.contains(MemoryFlags::ALLOC) {
                let mut size = m.size();
                if flags.intersects(MemoryFlags::INPUT | MemoryFlags::OUTPUT) {
                    let t = self.tensor_of(mi)?;
                    size = size.max(t.extent().unwrap_or(u64::MAX));
                }
                let align = m.alignment();
                if align > PAGE_ALIGNMENT || (align != 0 && !align.is_power_of_two()) {
                    log::warn!(
                        "memory_list[{mi}]: alignment {align} is not guaranteed (buffers are page aligned)"
                    );
                }
                let sram = m.domain() == MemoryDomain::SRAM;
                if sram
                    && flags.intersects(MemoryFlags::SET | MemoryFlags::INPUT | MemoryFlags::OUTPUT)
                {
                    return Err(Error::Binding {
                        mem: mi,
                        what: "an SRAM-domain memory is engine scratch: it cannot be SET or \
                               bound as an input or output"
                            .into(),
                    });
                }
                if size > 0 {
                    let made = if sram {
                        dev.create_sram_buffer(size)
                    } else {
                        dev.create_buffer(size)
                    };
                    let h = made.map_err(dev_err(format!(
                        "allocating memory_list[{mi}] ({size} bytes, {:?})",
                        m.domain()
                    )))?;
                    mem.handle = Some(h);
                    mem.size = size;
                    mem.owned = true;
                }
            }
            self.mem.push(mem);
            if flags.contains(MemoryFlags::SET) {
                self.fill(dev, mi)?;
            }
        }
        Ok(())
    }

    /// Rewrites legacy (pre-0.12) DLA1 surface lists into the current layout, in the
    /// device buffers, once per list (tasks may share one).
    ///
    /// The firmware reads one descriptor layout; loadables built before interface 0.12
    /// (NVIDIA's regression corpus among them) and ONNC's (which write 1.x as the version)
    /// carry the older data-cube layout, which [`nvdla_loadable::upgrade`] converts in
    /// place. The layout is detected from the descriptors the loadable's blobs hold
    /// ([`nvdla_loadable::cubes::detect_layout`]); for lists not filled from blobs, the
    /// network descriptor's blob version decides.
    fn upgrade_legacy_surfaces(&mut self, dev: &mut dyn Device) -> Result<()> {
        use nvdla_loadable::dla::{self, Layout as DlaLayout, NetworkDesc};
        use nvdla_loadable::Descriptor;
        let mut done: Vec<BufferAddress> = Vec::new();
        for ti in 0..self.loadable.tasks().len() {
            let task = self.loadable.tasks().get(ti).ok_or(Error::Descriptor {
                task: ti,
                what: "no such task".into(),
            })?;
            if task.interface() != Interface::DLA1 {
                continue;
            }
            let Some(net_id) = task.address_list().iter().next() else {
                continue;
            };
            let Some(blob) = self.loadable.blob_at_address(net_id) else {
                continue;
            };
            let v = blob.version();
            let by_version = DlaLayout::for_version(v.major, v.minor);
            let layout =
                nvdla_loadable::cubes::dla_task(&self.loadable, &task).map_or(by_version, |t| {
                    if t.layout != by_version {
                        log::info!(
                            "task {ti}: DLA descriptors use the {:?} data-cube layout although \
                             their version {v} names {by_version:?} (detected from the surfaces)",
                            t.layout
                        );
                    }
                    t.layout
                });
            if layout != DlaLayout::Legacy {
                continue;
            }
            let bad = |what: String| Error::Descriptor { task: ti, what };
            let slots = self.translate(ti, "DLA1")?;
            let at = |index: i16, what: &str| -> Result<BufferAddress> {
                usize::try_from(index)
                    .ok()
                    .and_then(|i| slots.get(i))
                    .and_then(|(_, a)| *a)
                    .ok_or_else(|| {
                        bad(format!(
                            "network descriptor: {what} = {index} is not in the address list"
                        ))
                    })
            };
            let net_addr = at(0, "address list entry 0")?;
            let net_bytes = read_at(dev, net_addr, NetworkDesc::SIZE)
                .map_err(|e| bad(format!("network descriptor: {e}")))?;
            let net = NetworkDesc::decode_from(&net_bytes)
                .map_err(|e| bad(format!("network descriptor: {e}")))?;
            if net.surface_desc_index < 0 {
                continue;
            }
            let surf_addr = at(net.surface_desc_index, "surface_desc_index")?;
            if done.contains(&surf_addr) {
                continue;
            }
            let n = usize::from(net.num_operations) * usize::from(net.num_rois.max(1));
            let deps_addr = at(net.dependency_graph_index, "dependency_graph_index")?;
            let deps = read_at(dev, deps_addr, n * dla::DEPENDENCY_ENTRY_SIZE)
                .map_err(|e| bad(format!("dependency graph: {e}")))?;
            let mut surf = read_at(dev, surf_addr, n * dla::SURFACE_CONTAINER_SIZE)
                .map_err(|e| bad(format!("surface list: {e}")))?;
            nvdla_loadable::upgrade::surfaces_to_current(&deps, &mut surf, n)
                .map_err(|e| bad(format!("legacy surface list: {e}")))?;
            write_at(dev, surf_addr, &surf).map_err(|e| bad(format!("surface list: {e}")))?;
            log::debug!("task {ti}: legacy surface list of {n} operations upgraded");
            done.push(surf_addr);
        }
        Ok(())
    }

    /// The tensor descriptor of bindable memory `mi`.
    fn tensor_of(&self, mi: usize) -> Result<&TensorDesc> {
        let m = self.loadable.memory().get(mi).ok_or(Error::Binding {
            mem: mi,
            what: "no such memory".into(),
        })?;
        let id = usize::from(m.tensor_desc_id());
        self.tensors.get(id).ok_or(Error::Binding {
            mem: mi,
            what: format!(
                "tensor_desc_id {id} out of range ({} tensors)",
                self.tensors.len()
            ),
        })
    }

    /// Sorts bindable memories by bind id and checks ids are 0..n without duplicates.
    fn init_bindable(&mut self) -> Result<()> {
        let mut ins: Vec<(u16, usize)> = Vec::new();
        let mut outs: Vec<(u16, usize)> = Vec::new();
        for (mi, m) in self.loadable.memory().iter().enumerate() {
            let f = m.flags();
            let list = if f.contains(MemoryFlags::INPUT) {
                &mut ins
            } else if f.contains(MemoryFlags::OUTPUT) {
                &mut outs
            } else {
                continue;
            };
            list.push((m.bind_id(), mi));
            let t = self.tensor_of(mi)?;
            if usize::from(t.mem_id) != mi {
                log::warn!(
                    "memory_list[{mi}]: tensor '{}' says memory {}, using {mi}",
                    t.name,
                    t.mem_id
                );
            }
        }
        for (list, dir) in [(&mut ins, Direction::Input), (&mut outs, Direction::Output)] {
            list.sort_unstable();
            for (i, &(bind, mi)) in list.iter().enumerate() {
                if usize::from(bind) != i {
                    let what = if i > 0 && list[i - 1].0 == bind {
                        format!("duplicate {dir} bind id {bind}")
                    } else {
                        format!("{dir} bind id {bind} leaves a gap (expected {i})")
                    };
                    return Err(Error::Binding { mem: mi, what });
                }
            }
        }
        self.inputs = ins.into_iter().map(|(_, m)| m).collect();
        self.outputs = outs.into_iter().map(|(_, m)| m).collect();
        Ok(())
    }

    /// Copies the SET contents of memory `mi` from their blobs.
    fn fill(&mut self, dev: &mut dyn Device, mi: usize) -> Result<()> {
        let m = match self.loadable.memory().get(mi) {
            Some(m) => m,
            None => return Ok(()),
        };
        let Some(handle) = self.mem[mi].handle else {
            if m.contents_len() > 0 {
                return Err(Error::Binding {
                    mem: mi,
                    what: "SET memory has contents but no allocation".into(),
                });
            }
            return Ok(());
        };
        let size = self.mem[mi].size;
        let buf = dev
            .map_buffer(handle)
            .map_err(dev_err(format!("mapping memory_list[{mi}]")))?;
        for ci in 0..m.contents_len() {
            let Some((name, offset)) = m.content(ci) else {
                continue;
            };
            let blob = self.loadable.blob(name).ok_or_else(|| Error::BlobMissing {
                mem: mi,
                name: name.to_string(),
            })?;
            let data = blob.data();
            let len = data.len() as u64;
            let overflow = || Error::ContentOverflow {
                mem: mi,
                name: name.to_string(),
                offset,
                len,
                size,
            };
            let end = offset.checked_add(len).ok_or_else(overflow)?;
            if end > size || end > buf.len() as u64 {
                return Err(overflow());
            }
            buf[offset as usize..end as usize].copy_from_slice(data);
        }
        Ok(())
    }

    /// The parsed loadable.
    pub fn loadable(&self) -> &Loadable<'l> {
        &self.loadable
    }

    /// Number of bindable tensors in direction `dir`.
    pub fn tensor_count(&self, dir: Direction) -> usize {
        self.bindable(dir).len()
    }

    fn bindable(&self, dir: Direction) -> &[usize] {
        match dir {
            Direction::Input => &self.inputs,
            Direction::Output => &self.outputs,
        }
    }

    fn bound_mem(&self, dir: Direction, bind_id: usize) -> Result<usize> {
        let list = self.bindable(dir);
        list.get(bind_id).copied().ok_or(Error::NoSuchTensor {
            dir,
            bind_id,
            count: list.len(),
        })
    }

    /// The int8 scale `nvdla-compiler` recorded for bindable tensor `bind_id`
    /// ([`crate::tensor::TENSOR_SCALES_BLOB`]), if any.
    pub fn recorded_scale(&self, dir: Direction, bind_id: usize) -> Option<f32> {
        let blob = self
            .loadable
            .blobs()
            .iter()
            .find(|b| b.name() == crate::tensor::TENSOR_SCALES_BLOB)?;
        let d = match dir {
            Direction::Input => "input",
            Direction::Output => "output",
        };
        crate::tensor::recorded_tensor_scale(blob.data(), d, bind_id)
    }

    /// The descriptor of bindable tensor `bind_id`.
    pub fn tensor(&self, dir: Direction, bind_id: usize) -> Result<&TensorDesc> {
        let mi = self.bound_mem(dir, bind_id)?;
        self.tensor_of(mi)
    }

    /// The device buffer of memory entry `mem_id`, if allocated (or bound).
    pub fn buffer(&self, mem_id: usize) -> Option<BufferHandle> {
        self.mem.get(mem_id).and_then(|m| m.handle)
    }

    /// Binds an application buffer of `size` bytes to bindable tensor `bind_id` (upstream's
    /// `bind{Input,Output}Tensor`). The runtime's own buffer for it is released; the bound
    /// one is not released by the runtime.
    pub fn bind(
        &mut self,
        dev: &mut dyn Device,
        dir: Direction,
        bind_id: usize,
        handle: BufferHandle,
        size: u64,
    ) -> Result<()> {
        let mi = self.bound_mem(dir, bind_id)?;
        let need = self
            .tensor_of(mi)?
            .extent()
            .unwrap_or(u64::MAX)
            .max(self.loadable.memory().get(mi).map_or(0, |m| m.size()));
        if size < need {
            return Err(Error::TensorSize {
                dir,
                bind_id,
                len: size as usize,
                size: need,
            });
        }
        let m = &mut self.mem[mi];
        if let (Some(old), true) = (m.handle, m.owned) {
            dev.destroy_buffer(old).map_err(dev_err(format!(
                "releasing memory_list[{mi}] for rebinding"
            )))?;
        }
        *m = Mem {
            handle: Some(handle),
            size,
            owned: false,
            ..m.clone()
        };
        Ok(())
    }

    /// Writes `data` at the start of input tensor `bind_id` (the rest of the tensor is left
    /// as it is).
    pub fn write_input(&mut self, dev: &mut dyn Device, bind_id: usize, data: &[u8]) -> Result<()> {
        let dir = Direction::Input;
        let mi = self.bound_mem(dir, bind_id)?;
        let t = self.tensor_of(mi)?;
        let (offset, size) = (t.offset, t.size);
        if data.len() as u64 > size {
            return Err(Error::TensorSize {
                dir,
                bind_id,
                len: data.len(),
                size,
            });
        }
        let handle = self.mem[mi].handle.ok_or(Error::Binding {
            mem: mi,
            what: "input memory is not allocated".into(),
        })?;
        let buf = dev
            .map_buffer(handle)
            .map_err(dev_err(format!("mapping input {bind_id}")))?;
        let dst = buf
            .get_mut(offset as usize..offset as usize + data.len())
            .ok_or(Error::TensorSize {
                dir,
                bind_id,
                len: data.len(),
                size,
            })?;
        dst.copy_from_slice(data);
        Ok(())
    }

    /// The bytes of output tensor `bind_id` (`size` bytes from its offset).
    pub fn read_output(&self, dev: &mut dyn Device, bind_id: usize) -> Result<Vec<u8>> {
        self.read_tensor(dev, Direction::Output, bind_id)
    }

    /// The bytes of a bindable tensor.
    pub fn read_tensor(
        &self,
        dev: &mut dyn Device,
        dir: Direction,
        bind_id: usize,
    ) -> Result<Vec<u8>> {
        let (at, size) = self.tensor_location(dir, bind_id)?;
        let buf = dev
            .map_buffer(at.handle)
            .map_err(dev_err(format!("mapping {dir} {bind_id}")))?;
        let start = at.offset as usize;
        buf.get(start..start.saturating_add(size as usize))
            .map(<[u8]>::to_vec)
            .ok_or(Error::TensorSize {
                dir,
                bind_id,
                len: buf.len(),
                size: at.offset.saturating_add(size),
            })
    }

    /// Output tensor `bind_id` as the `.dimg` image upstream writes, with pixel formats
    /// numbered by `numbering`.
    pub fn output_image(
        &self,
        dev: &mut dyn Device,
        bind_id: usize,
        numbering: crate::dimg::Numbering,
    ) -> Result<DlaImage> {
        let t = self.tensor(Direction::Output, bind_id)?.clone();
        let data = self.read_output(dev, bind_id)?;
        crate::image::output_image(&t, data, numbering).map_err(Error::Output)
    }

    /// Changes the strides of a bindable tensor and patches every descriptor the loadable's
    /// relocations name for it (upstream's `set{Input,Output}TensorDesc` stride rewrite):
    /// `LINE` relocations get `strides[1]`, `SURFACE` ones `strides[2]`.
    pub fn set_strides(
        &mut self,
        dev: &mut dyn Device,
        dir: Direction,
        bind_id: usize,
        strides: [u32; 8],
    ) -> Result<()> {
        let mi = self.bound_mem(dir, bind_id)?;
        let tid = usize::from(
            self.loadable
                .memory()
                .get(mi)
                .map_or(0, |m| m.tensor_desc_id()),
        );
        let addresses: Vec<u16> = self
            .loadable
            .addresses()
            .iter()
            .filter(|a| usize::from(a.mem_id()) == mi)
            .map(|a| a.id())
            .collect();
        let relocs: Vec<_> = self.loadable.relocs().iter().enumerate().collect();
        for (ri, r) in relocs {
            if !addresses.contains(&r.address_id()) {
                continue;
            }
            if r.interface() == Interface::NONE {
                continue;
            }
            let value = match r.sub_interface() {
                SubInterface::DEPS => {
                    return Err(Error::Reloc {
                        index: ri,
                        what: format!(
                            "cannot rewrite the dependency graph (memory {})",
                            r.write_id()
                        ),
                    })
                }
                SubInterface::OPS | SubInterface::SURFS => match r.reloc_type() {
                    RelocType::LINE => strides[1],
                    RelocType::SURFACE => strides[2],
                    other => {
                        return Err(Error::Reloc {
                            index: ri,
                            what: format!("reloc type {other} cannot be applied"),
                        })
                    }
                },
                _ => continue,
            };
            let wi = usize::from(r.write_id());
            let Some(handle) = self.mem.get(wi).and_then(|m| m.handle) else {
                continue;
            };
            let buf = dev
                .map_buffer(handle)
                .map_err(dev_err(format!("mapping memory_list[{wi}] for reloc {ri}")))?;
            let off = r.offset();
            let field = usize::try_from(off)
                .ok()
                .and_then(|o| Some(o..o.checked_add(4)?))
                .and_then(|range| buf.get_mut(range))
                .ok_or_else(|| Error::Reloc {
                    index: ri,
                    what: format!(
                        "offset {off} is outside memory {wi} ({} bytes)",
                        self.mem[wi].size
                    ),
                })?;
            field.copy_from_slice(&value.to_le_bytes());
        }
        if let Some(t) = self.tensors.get_mut(tid) {
            t.strides = strides;
        }
        Ok(())
    }

    /// Number of tasks one run executes (the entries of every submit).
    pub fn task_count(&self) -> usize {
        self.loadable
            .submits()
            .iter()
            .map(|s| s.task_ids().len())
            .sum()
    }

    /// Runs the submit list once.
    ///
    /// `progress` is told when each task starts and ends. Contents whose blob name contains
    /// `dep_graph` are copied in again first, as upstream does, because the firmware
    /// consumes the dependency counts it finds there.
    pub fn run(
        &mut self,
        dev: &mut dyn Device,
        opts: &RunOptions,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        for mi in 0..self.mem.len() {
            let Some(m) = self.loadable.memory().get(mi) else {
                continue;
            };
            if m.flags().contains(MemoryFlags::SET)
                && (0..m.contents_len())
                    .filter_map(|i| m.content(i))
                    .any(|(name, _)| name.contains("dep_graph"))
            {
                self.fill(dev, mi)?;
            }
        }
        // Sync point values, raised by signals.
        let mut sync: std::collections::BTreeMap<u16, u32> = Default::default();
        let total = self.task_count();
        let mut position = 0;
        let submits: Vec<_> = self.loadable.submits().iter().collect();
        for (si, s) in submits.iter().enumerate() {
            for tid in s.task_ids().iter() {
                let ti = usize::from(tid);
                let task = self.loadable.tasks().get(ti).ok_or(Error::Address {
                    task: ti,
                    slot: 0,
                    what: "submit names a task that does not exist".into(),
                })?;
                position += 1;
                let interface = task.interface();
                self.actions(ti, task.pre_actions().iter(), &mut sync)?;
                progress(&Progress {
                    position,
                    total,
                    task: ti,
                    interface,
                    submit: si,
                    phase: Phase::Start,
                });
                let start = Instant::now();
                match interface {
                    Interface::DLA1 => self.run_dla(dev, ti, opts)?,
                    Interface::EMU1 => self.run_emu(dev, ti)?,
                    other => {
                        return Err(Error::BadInterface {
                            task: ti,
                            interface: other.to_string(),
                        })
                    }
                }
                progress(&Progress {
                    position,
                    total,
                    task: ti,
                    interface,
                    submit: si,
                    phase: Phase::Done(start.elapsed()),
                });
                self.actions(ti, task.post_actions().iter(), &mut sync)?;
            }
        }
        Ok(())
    }

    fn actions(
        &self,
        ti: usize,
        events: impl Iterator<Item = u16>,
        sync: &mut std::collections::BTreeMap<u16, u32>,
    ) -> Result<()> {
        for ei in events {
            let e = self
                .loadable
                .events()
                .get(usize::from(ei))
                .ok_or(Error::Address {
                    task: ti,
                    slot: 0,
                    what: format!("event {ei} does not exist"),
                })?;
            let have = sync.get(&e.target()).copied().unwrap_or(0);
            match e.op() {
                nvdla_loadable::EventOp::WAIT => {
                    if have < e.val() {
                        return Err(Error::EventNeverSignalled {
                            task: ti,
                            event: usize::from(ei),
                            target: e.target(),
                            want: e.val(),
                            have,
                        });
                    }
                }
                nvdla_loadable::EventOp::SIGNAL => {
                    sync.insert(e.target(), e.val().max(have));
                }
            }
        }
        Ok(())
    }

    /// Translates task `ti`'s address list: (memory id, buffer, offset) per slot.
    fn translate(&self, ti: usize, what: &str) -> Result<Vec<(usize, Option<BufferAddress>)>> {
        let task = self.loadable.tasks().get(ti).ok_or(Error::Address {
            task: ti,
            slot: 0,
            what: "no such task".into(),
        })?;
        let list = task.address_list();
        if list.len() > nvdla_port::uapi::MAX_BUFFERS_PER_TASK as usize {
            return Err(Error::Address {
                task: ti,
                slot: list.len(),
                what: format!(
                    "{} entries exceed the limit of {}",
                    list.len(),
                    nvdla_port::uapi::MAX_BUFFERS_PER_TASK
                ),
            });
        }
        let mut out = Vec::with_capacity(list.len());
        for (slot, aid) in list.iter().enumerate() {
            let bad = |what: String| Error::Address {
                task: ti,
                slot,
                what,
            };
            let a = self
                .loadable
                .addresses()
                .get(usize::from(aid))
                .ok_or_else(|| bad(format!("address id {aid} does not exist")))?;
            let mi = usize::from(a.mem_id());
            let m = self.mem.get(mi).ok_or_else(|| {
                bad(format!(
                    "address {aid} names memory {mi}, which does not exist"
                ))
            })?;
            let Some(handle) = m.handle else {
                if what == "EMU1" {
                    out.push((mi, None));
                    continue;
                }
                return Err(bad(format!(
                    "address {aid} -> memory {mi} has no buffer (flags {:?}, size 0 or not ALLOC)",
                    m.flags
                )));
            };
            if a.offset() >= m.size {
                return Err(bad(format!(
                    "address {aid}: offset {} is outside memory {mi} ({} bytes)",
                    a.offset(),
                    m.size
                )));
            }
            out.push((
                mi,
                Some(BufferAddress {
                    handle,
                    offset: a.offset(),
                }),
            ));
        }
        Ok(out)
    }

    fn run_dla(&mut self, dev: &mut dyn Device, ti: usize, opts: &RunOptions) -> Result<()> {
        let addresses: Vec<BufferAddress> = self
            .translate(ti, "DLA1")?
            .into_iter()
            .filter_map(|(_, a)| a)
            .collect();
        if addresses.is_empty() {
            return Err(Error::Address {
                task: ti,
                slot: 0,
                what: "empty address list (entry 0 must be the network descriptor)".into(),
            });
        }
        dev.submit(&[Task {
            addresses: &addresses,
            timeout: opts.timeout,
        }])
        .map_err(dev_err(format!("task {ti} (DLA1)")))
    }

    fn run_emu(&mut self, dev: &mut dyn Device, ti: usize) -> Result<()> {
        let translated = self.translate(ti, "EMU1")?;
        let task = self.loadable.tasks().get(ti);
        let mut slots = Vec::with_capacity(translated.len());
        for (slot, (mi, addr)) in translated.into_iter().enumerate() {
            // Upstream hands the emulator no host address for SRAM.
            let addr = addr.filter(|_| self.mem[mi].domain != MemoryDomain::SRAM);
            let content = task
                .and_then(|t| t.address_list().get(slot))
                .and_then(|aid| self.loadable.blob_at_address(aid))
                .map(|b| b.data().len());
            slots.push(EmuSlot { addr, content });
        }
        let mut mem = DeviceSlots { dev, slots };
        #[cfg(feature = "cpu-partitions")]
        let summary = emu::run_hosted_task(&mut mem).map_err(|e| match e {
            emu::HostedTaskError::Emu(e) => Error::Emu {
                task: ti,
                op: e.op,
                source: e.error,
            },
            emu::HostedTaskError::Partition { op, error } => Error::Partition {
                task: ti,
                op,
                source: error,
            },
        })?;
        #[cfg(not(feature = "cpu-partitions"))]
        let summary = emu::run_task(&mut mem).map_err(|e| Error::Emu {
            task: ti,
            op: e.op,
            source: e.error,
        })?;
        log::debug!(
            "task {ti}: EMU1 {:?} layout, {} operation(s)",
            summary.layout,
            summary.num_operations()
        );
        if summary.layout == Layout::Legacy {
            log::debug!("task {ti}: legacy (pre-INT8) EMU descriptors");
        }
        Ok(())
    }

    /// Task ids in the order [`run`](Self::run) executes them (every submit's tasks).
    pub fn run_order(&self) -> Vec<usize> {
        self.loadable
            .submits()
            .iter()
            .flat_map(|s| s.task_ids().iter().map(usize::from).collect::<Vec<_>>())
            .collect()
    }

    /// Task `ti`'s executor and address list as the device sees it: per slot, the buffer
    /// and offset (none for an EMU slot without CPU-visible memory, as [`run`](Self::run)
    /// hands the emulator) and the length of the loadable's content placed there. For
    /// exporters that lay the run out elsewhere (`--export-baremetal`).
    pub fn task_slots(&self, ti: usize) -> Result<(Interface, Vec<TaskSlot>)> {
        let task = self.loadable.tasks().get(ti).ok_or(Error::Address {
            task: ti,
            slot: 0,
            what: "no such task".into(),
        })?;
        let interface = task.interface();
        let what = if interface == Interface::EMU1 {
            "EMU1"
        } else {
            "DLA1"
        };
        let translated = self.translate(ti, what)?;
        Ok((
            interface,
            translated
                .into_iter()
                .enumerate()
                .map(|(slot, (mi, addr))| TaskSlot {
                    buffer: addr.filter(|_| {
                        interface != Interface::EMU1 || self.mem[mi].domain != MemoryDomain::SRAM
                    }),
                    content_len: task
                        .address_list()
                        .get(slot)
                        .and_then(|aid| self.loadable.blob_at_address(aid))
                        .map(|b| b.data().len()),
                })
                .collect(),
        ))
    }

    /// Every buffer the runtime created or was given, by memory id.
    pub fn buffers(&self) -> Vec<BufferHandle> {
        self.mem.iter().filter_map(|m| m.handle).collect()
    }

    /// Where bindable tensor `bind_id` lives: its buffer and byte offset, and its size.
    pub fn tensor_location(&self, dir: Direction, bind_id: usize) -> Result<(BufferAddress, u64)> {
        let mi = self.bound_mem(dir, bind_id)?;
        let t = self.tensor_of(mi)?;
        let handle = self.mem[mi].handle.ok_or(Error::Binding {
            mem: mi,
            what: format!("{dir} memory is not allocated"),
        })?;
        Ok((
            BufferAddress {
                handle,
                offset: t.offset,
            },
            t.size,
        ))
    }

    /// Destroys every buffer the runtime created.
    pub fn release(&mut self, dev: &mut dyn Device) {
        for (mi, m) in self.mem.iter_mut().enumerate() {
            if let (Some(h), true) = (m.handle, m.owned) {
                if let Err(e) = dev.destroy_buffer(h) {
                    log::warn!("releasing memory_list[{mi}]: {e}");
                }
            }
            m.handle = None;
        }
    }
}

/// One address-list slot of a task as the device sees it ([`Runtime::task_slots`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSlot {
    /// The buffer and offset; `None` for an EMU slot with no CPU-visible memory.
    pub buffer: Option<BufferAddress>,
    /// Bytes of the loadable's content at this slot, if it places any.
    pub content_len: Option<usize>,
}

struct EmuSlot {
    addr: Option<BufferAddress>,
    content: Option<usize>,
}

/// An EMU task's address list over device memory.
struct DeviceSlots<'a> {
    dev: &'a mut dyn Device,
    slots: Vec<EmuSlot>,
}

impl SlotMemory for DeviceSlots<'_> {
    fn slot_count(&self) -> usize {
        self.slots.len()
    }

    fn slot(&mut self, slot: usize) -> Option<&mut [u8]> {
        let a = self.slots.get(slot)?.addr?;
        let buf = self.dev.map_buffer(a.handle).ok()?;
        buf.get_mut(usize::try_from(a.offset).ok()?..)
    }

    fn content_len(&self, slot: usize) -> Option<usize> {
        self.slots.get(slot)?.content
    }
}
