//! The data cubes of DLA1 operations: which ones the hardware reads or
//! writes through memory, whether they fit their buffers, and which
//! descriptor layout ([`Layout`]) a surface list was written in.
//!
//! # Telling the two layouts apart
//!
//! The two revisions of `dla_data_cube` ([`dla::legacy::DataCube`], 28 bytes,
//! and [`DataCube`], 32 bytes with `offset`) share every container stride,
//! so the blobs' sizes cannot tell them apart, and the blob version cannot
//! be trusted either: ONNC writes interface version 1.x into its blobs but
//! lays cubes out the legacy way. [`detect_layout`] therefore decodes every
//! surface both ways and counts, per layout, the cubes in use
//! ([`cubes_in_use`]) that cannot be right ([`cube_fault`]): an undefined
//! memory type, an address index outside the task's list, an empty shape or
//! size, or bytes past the end of the buffer. Read in the other layout, every
//! field from the second on moves by four bytes: a legacy cube read as current
//! has its width and height as its size (65 537 bytes or more) and its
//! reserved field as its height (0); a current cube read as legacy has its
//! offset as its size (usually 0). The layout with fewer faults wins; on a tie
//! (no cube in use, or both readings plausible) the blob version decides
//! ([`Layout::for_version`]).

use crate::codec::Descriptor;
use crate::dla::{self, CommonOpDesc, DataCube, Layout, MemType, OpDesc, OpType, SurfaceDesc};
use crate::loadable::{Loadable, TaskListEntry};
use crate::schema::{Interface, MemoryFlags};

/// One data cube an operation reads or writes through memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CubeUse {
    /// The cube's C name, e.g. `dla_sdp_surface_desc.x1_data`.
    pub name: &'static str,
    /// The cube.
    pub cube: DataCube,
}

fn on_the_fly(c: &DataCube) -> bool {
    c.mem_type == u16::from(MemType::Hw.raw())
}

fn sdp_dma(o: &dla::SdpOp) -> bool {
    o.enable != 0
        && o.op_type != dla::SdpOpType::None.raw()
        && o.mode != dla::SdpOpMode::PerLayer.raw()
}

/// The cubes of `surface` that the firmware programs as memory addresses for
/// operation `op` (as `nvdla-firmware` does): inputs that do not come on the
/// fly from another engine, outputs that go to memory, SDP operand streams
/// that are read per channel or per element, and the weight side data of
/// compressed weights. Cubes with address -1 where the firmware allows it
/// (no output, dynamic-ROI input) are left out. BDMA has no cubes.
pub fn cubes_in_use(op: &OpDesc, surface: &SurfaceDesc) -> [Option<CubeUse>; 5] {
    let mut out = [None; 5];
    let mut n = 0;
    let mut push = |name: &'static str, cube: &DataCube, used: bool| {
        if used && cube.address != -1 {
            out[n] = Some(CubeUse { name, cube: *cube });
            n += 1;
        }
    };
    match (op, surface) {
        (OpDesc::Conv(o), SurfaceDesc::Conv(s)) => {
            let compressed = o.weight_format == dla::WeightFormat::Compressed.raw();
            push("dla_conv_surface_desc.weight_data", &s.weight_data, true);
            push("dla_conv_surface_desc.wmb_data", &s.wmb_data, compressed);
            push("dla_conv_surface_desc.wgs_data", &s.wgs_data, compressed);
            let fly = on_the_fly(&s.src_data);
            push("dla_conv_surface_desc.src_data", &s.src_data, !fly);
            push("dla_conv_surface_desc.dst_data", &s.dst_data, true);
        }
        (OpDesc::Sdp(o), SurfaceDesc::Sdp(s)) => {
            let fly = on_the_fly(&s.src_data);
            push("dla_sdp_surface_desc.src_data", &s.src_data, !fly);
            push(
                "dla_sdp_surface_desc.x1_data",
                &s.x1_data,
                sdp_dma(&o.x1_op),
            );
            push(
                "dla_sdp_surface_desc.x2_data",
                &s.x2_data,
                sdp_dma(&o.x2_op),
            );
            push("dla_sdp_surface_desc.y_data", &s.y_data, sdp_dma(&o.y_op));
            let out_dma = !on_the_fly(&s.dst_data);
            push("dla_sdp_surface_desc.dst_data", &s.dst_data, out_dma);
        }
        (OpDesc::Pdp(_), SurfaceDesc::Pdp(s)) => {
            push(
                "dla_pdp_surface_desc.src_data",
                &s.src_data,
                !on_the_fly(&s.src_data),
            );
            push("dla_pdp_surface_desc.dst_data", &s.dst_data, true);
        }
        (OpDesc::Cdp(_), SurfaceDesc::Cdp(s)) => {
            push(
                "dla_cdp_surface_desc.src_data",
                &s.src_data,
                !on_the_fly(&s.src_data),
            );
            push("dla_cdp_surface_desc.dst_data", &s.dst_data, true);
        }
        (OpDesc::Rubik(_), SurfaceDesc::Rubik(s)) => {
            push(
                "dla_rubik_surface_desc.src_data",
                &s.src_data,
                !on_the_fly(&s.src_data),
            );
            push("dla_rubik_surface_desc.dst_data", &s.dst_data, true);
        }
        _ => {}
    }
    out
}

/// What is wrong with a cube in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CubeFault {
    /// `type` is not MC, CV or HW.
    MemType(u16),
    /// `address` is not an index of the task's address list.
    Address {
        /// The index.
        index: i16,
        /// Entries in the task's address list.
        count: usize,
    },
    /// Size, width, height or channel is zero.
    Empty,
    /// `offset + size` runs past the end of the buffer.
    TooLarge {
        /// Bytes available from the start of the address-list entry.
        available: u64,
    },
}

impl core::fmt::Display for CubeFault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CubeFault::MemType(t) => write!(f, "undefined memory type {t}"),
            CubeFault::Address { index, count } => write!(
                f,
                "address index {index} is outside the task's address list ({count} entries)"
            ),
            CubeFault::Empty => write!(f, "size or a dimension is zero"),
            CubeFault::TooLarge { available } => {
                write!(f, "exceeds its buffer ({available} bytes available)")
            }
        }
    }
}

/// The first fault of a cube in use, if any. `count` is the length of the
/// task's address list; `available(i)` the bytes from the start of
/// address-list entry `i` to the end of its buffer, if known.
pub fn cube_fault(
    cube: &DataCube,
    count: usize,
    available: &dyn Fn(usize) -> Option<u64>,
) -> Option<CubeFault> {
    if MemType::from_raw(u32::from(cube.mem_type)).is_err() {
        return Some(CubeFault::MemType(cube.mem_type));
    }
    let Some(index) = usize::try_from(cube.address).ok().filter(|&i| i < count) else {
        return Some(CubeFault::Address {
            index: cube.address,
            count,
        });
    };
    if cube.size == 0 || cube.width == 0 || cube.height == 0 || cube.channel == 0 {
        return Some(CubeFault::Empty);
    }
    let end = u64::from(cube.offset) + u64::from(cube.size);
    match available(index) {
        Some(available) if end > available => Some(CubeFault::TooLarge { available }),
        _ => None,
    }
}

/// The dependency graph, operation list and surface list of a DLA1 task,
/// and the number of entries to read from them (operations × ROIs).
#[derive(Debug, Clone, Copy)]
pub struct SurfaceLists<'a> {
    /// The dependency graph (`dla_common_op_desc` array).
    pub dependency_graph: &'a [u8],
    /// The operation list.
    pub operations: &'a [u8],
    /// The surface list.
    pub surfaces: &'a [u8],
    /// Entries (`num_operations * max(num_rois, 1)`).
    pub count: usize,
}

impl SurfaceLists<'_> {
    /// The entries the dependency graph actually holds, at most [`SurfaceLists::count`]
    /// (entries past its end cannot be decoded, so a huge count costs nothing).
    pub fn entries(&self) -> usize {
        self.count
            .min(self.dependency_graph.len() / dla::DEPENDENCY_ENTRY_SIZE)
    }
}

/// Cubes in use that [`cube_fault`] rejects when the surface list is read in
/// `layout`; an operation whose descriptors do not decode counts once per
/// cube it could have had (5), BDMA operations count nothing.
pub fn layout_faults(
    layout: Layout,
    lists: &SurfaceLists<'_>,
    addresses: usize,
    available: &dyn Fn(usize) -> Option<u64>,
) -> usize {
    let mut faults = 0;
    for i in 0..lists.entries() {
        let Some(ty) = dla::decode_at::<CommonOpDesc>(lists.dependency_graph, i)
            .ok()
            .and_then(|d| d.op_type().ok())
        else {
            continue;
        };
        if ty == OpType::Bdma {
            continue;
        }
        let op = OpDesc::decode_slot(ty, lists.operations, i);
        let surface = SurfaceDesc::decode_slot_layout(layout, ty, lists.surfaces, i);
        let (Ok(op), Ok(surface)) = (op, surface) else {
            faults += 5;
            continue;
        };
        faults += cubes_in_use(&op, &surface)
            .iter()
            .flatten()
            .filter(|c| cube_fault(&c.cube, addresses, available).is_some())
            .count();
    }
    faults
}

/// The layout the surface list is in: the one whose cubes in use are
/// consistent ([`layout_faults`]), `by_version` when both readings are
/// equally good. See the module documentation.
pub fn detect_layout(
    by_version: Layout,
    lists: &SurfaceLists<'_>,
    addresses: usize,
    available: &dyn Fn(usize) -> Option<u64>,
) -> Layout {
    let other = match by_version {
        Layout::Legacy => Layout::Current,
        Layout::Current => Layout::Legacy,
    };
    let mine = layout_faults(by_version, lists, addresses, available);
    if mine == 0 {
        return by_version;
    }
    if layout_faults(other, lists, addresses, available) < mine {
        other
    } else {
        by_version
    }
}

/// The descriptor blobs of one DLA1 task of a loadable.
#[derive(Debug, Clone, Copy)]
pub struct DlaTask<'a> {
    /// The network descriptor (address-list entry 0).
    pub network: dla::NetworkDesc,
    /// The layout the network descriptor's blob version names.
    pub by_version: Layout,
    /// The layout the surface list is in ([`detect_layout`]).
    pub layout: Layout,
    /// The lists, from the blobs that fill them.
    pub lists: SurfaceLists<'a>,
}

/// Bytes from the start of the buffer behind `address_id` to the end of its
/// memory (None unless the runtime allocates that memory).
fn address_available(l: &Loadable<'_>, address_id: u16) -> Option<u64> {
    let (m, offset, _) = l.resolve_address(address_id)?;
    if !m.flags().contains(MemoryFlags::ALLOC) {
        return None;
    }
    m.size().checked_sub(offset)
}

/// The task's address-list entry `index` (an index into the task's list) as
/// the bytes available in its buffer.
fn task_available(l: &Loadable<'_>, task: &TaskListEntry<'_>, index: usize) -> Option<u64> {
    address_available(l, task.address_list().get(index)?)
}

/// Decodes the network descriptor of DLA1 task `task` and finds the blobs of
/// its dependency graph, operation list and surface list; None unless all of
/// them are filled from blobs. The layout is detected from the content.
pub fn dla_task<'a>(l: &Loadable<'a>, task: &TaskListEntry<'a>) -> Option<DlaTask<'a>> {
    if task.interface() != Interface::DLA1 {
        return None;
    }
    let list = task.address_list();
    let blob = |index: i16| {
        usize::try_from(index)
            .ok()
            .and_then(|i| list.get(i))
            .and_then(|a| l.blob_at_address(a))
    };
    let net_blob = blob(0)?;
    let network = dla::NetworkDesc::decode_from(net_blob.data()).ok()?;
    let v = net_blob.version();
    let by_version = Layout::for_version(v.major, v.minor);
    let lists = SurfaceLists {
        dependency_graph: blob(network.dependency_graph_index)?.data(),
        operations: blob(network.operation_desc_index)?.data(),
        surfaces: blob(network.surface_desc_index)?.data(),
        count: usize::from(network.num_operations) * usize::from(network.num_rois.max(1)),
    };
    let available = |i: usize| task_available(l, task, i);
    let layout = detect_layout(by_version, &lists, list.len(), &available);
    Some(DlaTask {
        network,
        by_version,
        layout,
        lists,
    })
}

/// A cube in use that does not fit the buffer it names, or names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CubeError {
    /// Task index.
    pub task: usize,
    /// Operation (flat index: ROI × operations + operation).
    pub op: usize,
    /// Its processor.
    pub op_type: OpType,
    /// The cube's C name.
    pub cube: &'static str,
    /// The layout the surface list was read in.
    pub layout: Layout,
    /// The cube's `address` (address-list index).
    pub address: i16,
    /// The cube's `offset`.
    pub offset: u32,
    /// The cube's `size`.
    pub size: u32,
    /// What is wrong.
    pub fault: CubeFault,
}

impl core::fmt::Display for CubeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "task {} operation {} ({:?}): {} ({:?} layout) at address-list entry {} + {:#x}, \
             {} bytes: {}",
            self.task,
            self.op,
            self.op_type,
            self.cube,
            self.layout,
            self.address,
            self.offset,
            self.size,
            self.fault
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for CubeError {}

/// Checks every data cube in use of every DLA1 task whose descriptors come
/// from blobs, read in the detected layout: each must name an entry of the
/// task's address list and fit the memory behind it. Cubes of operations
/// whose descriptors do not decode are not checked here (the firmware rejects
/// those); neither are shapes, which only the firmware can judge per build.
pub fn check(l: &Loadable<'_>) -> Result<(), CubeError> {
    for (ti, task) in l.tasks().iter().enumerate() {
        let Some(t) = dla_task(l, &task) else {
            continue;
        };
        let count = task.address_list().len();
        let available = |i: usize| task_available(l, &task, i);
        for i in 0..t.lists.entries() {
            let Some(ty) = dla::decode_at::<CommonOpDesc>(t.lists.dependency_graph, i)
                .ok()
                .and_then(|d| d.op_type().ok())
            else {
                continue;
            };
            let op = OpDesc::decode_slot(ty, t.lists.operations, i);
            let surface = SurfaceDesc::decode_slot_layout(t.layout, ty, t.lists.surfaces, i);
            let (Ok(op), Ok(surface)) = (op, surface) else {
                continue;
            };
            for c in cubes_in_use(&op, &surface).iter().flatten() {
                let fault = match cube_fault(&c.cube, count, &available) {
                    Some(f @ (CubeFault::Address { .. } | CubeFault::TooLarge { .. })) => f,
                    _ => continue,
                };
                return Err(CubeError {
                    task: ti,
                    op: i,
                    op_type: ty,
                    cube: c.name,
                    layout: t.layout,
                    address: c.cube.address,
                    offset: c.cube.offset,
                    size: c.cube.size,
                    fault,
                });
            }
        }
    }
    Ok(())
}
