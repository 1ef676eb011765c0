//! Emission: a planned [`Program`] to a loadable, through `nvdla-loadable`'s builder.
//!
//! The lists are the ones NVIDIA's compiler writes: one memory for the weights (SET from
//! a blob), one for the activation pool, one per network input and output (bound by the
//! runtime), and per task its descriptor memories. Every task's address list starts with
//! its network descriptor and then the shared memories at the same positions, so a data
//! cube means the same memory in every task. Consecutive DLA operations form one DLA1 task,
//! consecutive CPU operations one EMU1 task; tasks run in order, each waiting for an event
//! its predecessor signals.

use crate::engine::*;
use crate::error::{CompileError, Result};
use crate::target::{Precision, Target};
use nvdla_loadable::builder::*;
use nvdla_loadable::codec::Descriptor;
use nvdla_loadable::dla::{self, Consumer, Event, OpType};
use nvdla_loadable::emu;
use nvdla_loadable::schema::*;

/// DLA1 interface version of the descriptors (what NVIDIA's compiler writes).
pub const DLA1_VERSION: Version = Version {
    major: 0,
    minor: 12,
    sub_minor: 3,
};

/// EMU1 interface version.
pub const EMU1_VERSION: Version = Version {
    major: 0,
    minor: 0,
    sub_minor: 1,
};

/// EMU1 interface version of a task holding CPU fallback operations (`--cpu-fallback`):
/// the runtime's [`nvdla_umd::emu::FALLBACK_VERSION`].
pub const EMU1_FALLBACK_VERSION: Version = Version {
    major: nvdla_umd::emu::FALLBACK_VERSION.0,
    minor: nvdla_umd::emu::FALLBACK_VERSION.1,
    sub_minor: nvdla_umd::emu::FALLBACK_VERSION.2,
};

/// EMU1 interface version of a task holding ONNX partitions (`--cpu-fallback`): the
/// runtime's [`nvdla_umd::partition::PARTITION_VERSION`].
pub const EMU1_PARTITION_VERSION: Version = Version {
    major: nvdla_umd::partition::PARTITION_VERSION.0,
    minor: nvdla_umd::partition::PARTITION_VERSION.1,
    sub_minor: nvdla_umd::partition::PARTITION_VERSION.2,
};

/// Memory alignment NVIDIA's compiler writes into the memory list.
const MEM_ALIGN: u32 = 4096;

/// Address-list positions of the shared memories (the same in every task).
struct Shared {
    /// Address-list entries (ids) of the shared memories, in task order after index 0.
    entries: Vec<u16>,
    weights: Option<i16>,
    pool: Option<i16>,
    /// The activation pool in CV-SRAM.
    sram_pool: Option<i16>,
    inputs: Vec<i16>,
    outputs: Vec<i16>,
}

/// Most firmware operations in one DLA task: what our firmware tracks
/// (`nvdla_firmware::engine::DEFAULT_MAX_OPS`); NVIDIA's firmware keeps a network's
/// operations in one list as well.
pub const DLA_TASK_OPS: usize = 1024;

/// Serialise `p` (planned) for `t`.
pub fn emit(p: &Program, t: &Target) -> Result<LoadableSpec> {
    let mut s = LoadableSpec::new();
    let mut shared = Shared {
        entries: Vec::new(),
        weights: None,
        pool: None,
        sram_pool: None,
        inputs: Vec::new(),
        outputs: Vec::new(),
    };
    let mut position = 1i16;
    let mut add_shared = |s: &mut LoadableSpec, shared: &mut Shared, m: MemorySpec| -> i16 {
        let size = m.size;
        let mem = s.add_memory(m);
        let a = s.add_address(AddressSpec {
            mem_id: mem,
            offset: 0,
            size,
        });
        shared.entries.push(a);
        position += 1;
        position - 1
    };

    if !p.blobs.is_empty() {
        let mut data = vec![0u8; p.weight_size as usize];
        for b in &p.blobs {
            let o = b.offset as usize;
            data[o..o + b.data.len()].copy_from_slice(&b.data);
        }
        s.add_blob(BlobSpec {
            name: "weights".into(),
            data,
            ..Default::default()
        });
        let m = MemorySpec {
            flags: (MemoryFlags::ALLOC | MemoryFlags::SET).bits(),
            size: p.weight_size.next_multiple_of(u64::from(MEM_ALIGN)),
            alignment: MEM_ALIGN,
            contents: vec![("weights".into(), 0)],
            ..Default::default()
        };
        shared.weights = Some(add_shared(&mut s, &mut shared, m));
    }
    if p.pool_size > 0 {
        let m = MemorySpec {
            flags: MemoryFlags::ALLOC.bits(),
            size: p.pool_size.next_multiple_of(u64::from(MEM_ALIGN)),
            alignment: MEM_ALIGN,
            ..Default::default()
        };
        shared.pool = Some(add_shared(&mut s, &mut shared, m));
    }
    if p.sram_pool_size > 0 {
        let m = MemorySpec {
            domain: MemoryDomain::SRAM.raw(),
            flags: MemoryFlags::ALLOC.bits(),
            size: p.sram_pool_size.next_multiple_of(u64::from(MEM_ALIGN)),
            alignment: MEM_ALIGN,
            ..Default::default()
        };
        shared.sram_pool = Some(add_shared(&mut s, &mut shared, m));
    }
    for (kind, list) in [
        (MemoryFlags::INPUT, &p.inputs),
        (MemoryFlags::OUTPUT, &p.outputs),
    ] {
        for (bind, &sid) in list.iter().enumerate() {
            let sf = p.surface(sid);
            let tensor = s.add_tensor(tensor_desc(sf, t, s.memory.len() as u16));
            let m = MemorySpec {
                flags: (MemoryFlags::ALLOC | kind).bits(),
                size: u64::from(sf.size),
                alignment: MEM_ALIGN,
                bind_id: bind as u16,
                tensor_desc_id: tensor,
                ..Default::default()
            };
            let pos = add_shared(&mut s, &mut shared, m);
            if kind == MemoryFlags::INPUT {
                shared.inputs.push(pos);
            } else {
                shared.outputs.push(pos);
            }
        }
    }

    // The int8 scales of the network's inputs and outputs, for runtimes that convert
    // real values (nvdla-runtime --input/--output .npy).
    let int8 = |list: &[SurfId]| -> Vec<(usize, f32)> {
        list.iter()
            .enumerate()
            .map(|(i, &sid)| (i, p.surface(sid)))
            .filter(|(_, s)| {
                s.precision == Precision::Int8 && !s.integer && s.scale.is_finite() && s.scale > 0.0
            })
            .map(|(i, s)| (i, s.scale))
            .collect()
    };
    let (si, so) = (int8(&p.inputs), int8(&p.outputs));
    if !si.is_empty() || !so.is_empty() {
        s.add_blob(BlobSpec {
            name: nvdla_umd::tensor::TENSOR_SCALES_BLOB.into(),
            data: nvdla_umd::tensor::encode_tensor_scales(&si, &so),
            ..Default::default()
        });
    }

    // Tasks: maximal runs of DLA / CPU operations, a DLA run cut where it would pass the
    // firmware's operations per task (a batch's passes over a large network).
    let mut tasks: Vec<(bool, Vec<usize>)> = Vec::new();
    let mut dla_ops = 0usize;
    for (i, op) in p.ops.iter().enumerate() {
        let cpu = op.engine() == Engine::Cpu;
        // A convolution is two firmware operations (CONV and its SDP).
        let n = if op.engine() == Engine::Conv { 2 } else { 1 };
        match tasks.last_mut() {
            Some((c, ops)) if *c == cpu && (cpu || dla_ops + n <= DLA_TASK_OPS) => {
                ops.push(i);
                dla_ops += n;
            }
            _ => {
                tasks.push((cpu, vec![i]));
                dla_ops = n;
            }
        }
    }
    if tasks.is_empty() {
        return Err(CompileError::Network(
            "the network has no operation to run".into(),
        ));
    }
    let ctx = Ctx {
        p,
        t,
        shared: &shared,
    };
    let n_tasks = tasks.len();
    for (ti, (cpu, ops)) in tasks.iter().enumerate() {
        let (blobs, relocs) = if *cpu {
            ctx.emu_task(ti, ops)?
        } else {
            ctx.dla_task(ti, ops)?
        };
        let mut addresses = Vec::new();
        let mut blob_addr = Vec::new();
        for (name, sub, interface, version, data) in blobs {
            let size = data.len() as u64;
            s.add_blob(BlobSpec {
                name: name.clone(),
                interface: interface.raw(),
                sub_interface: sub.raw(),
                version,
                data,
            });
            let m = s.add_memory(MemorySpec {
                flags: (MemoryFlags::ALLOC | MemoryFlags::SET).bits(),
                size,
                alignment: MEM_ALIGN,
                contents: vec![(name, 0)],
                ..Default::default()
            });
            let a = s.add_address(AddressSpec {
                mem_id: m,
                offset: 0,
                size,
            });
            blob_addr.push((m, a));
        }
        // [network descriptor, shared..., the task's other lists].
        addresses.push(blob_addr[0].1);
        addresses.extend(&shared.entries);
        addresses.extend(blob_addr[1..].iter().map(|x| x.1));
        for r in relocs {
            // `r.1` names the task blob (index into this task's blob list) it patches.
            let (mem, _) = blob_addr[r.1];
            s.relocs.push(RelocSpec {
                address_id: r.0,
                write_id: mem,
                offset: r.2,
                interface: if *cpu {
                    Interface::EMU1
                } else {
                    Interface::DLA1
                }
                .raw(),
                sub_interface: SubInterface::SURFS.raw(),
                reloc_type: r.3.raw(),
            });
        }
        let mut pre = Vec::new();
        let mut post = Vec::new();
        if ti > 0 {
            pre.push(s.add_event(EventSpec {
                op: EventOp::WAIT.raw(),
                val: ti as u32,
                ..Default::default()
            }));
        }
        if ti + 1 < n_tasks || n_tasks > 1 || ti == 0 {
            post.push(s.add_event(EventSpec {
                op: EventOp::SIGNAL.raw(),
                val: ti as u32 + 1,
                ..Default::default()
            }));
        }
        let id = s.add_task(TaskSpec {
            interface: if *cpu {
                Interface::EMU1
            } else {
                Interface::DLA1
            }
            .raw(),
            instance: -1,
            address_list: addresses,
            pre_actions: pre,
            post_actions: post,
        });
        s.submits.push(vec![id]);
    }
    Ok(s)
}

/// A task blob: name, sub-interface, interface, version, bytes.
type TaskBlob = (String, SubInterface, Interface, Version, Vec<u8>);
/// A relocation: address-list entry (input/output) it names, index of the task blob it
/// patches, byte offset in that blob, which stride.
type Reloc = (u16, usize, u64, RelocType);

/// The tensor descriptor of network input or output surface `sf` in memory `mem_id`.
fn tensor_desc(sf: &Surface, t: &Target, mem_id: u16) -> TensorSpec {
    let atom = t.atom_of(sf.precision);
    let (format, category, surf_stride) = if sf.pixel {
        // An image input (lower::image): 4 interleaved components per pixel.
        (DataFormat::NHWC, DataCategory::IMAGE, 0)
    } else {
        (DataFormat::NCxHWx, DataCategory::FEATURE, sf.surf_stride)
    };
    let (data_type, pixel) = match (sf.precision, sf.pixel, atom) {
        _ if sf.integer => (DataType::FLOAT, PixelFormat::FEATURE),
        (Precision::Fp16, true, _) => (DataType::HALF, PixelFormat::A16B16G16R16_F),
        (Precision::Int8, true, _) => (DataType::INT8, PixelFormat::A8B8G8R8),
        (Precision::Fp16, false, 8) => (DataType::HALF, PixelFormat::FEATURE_X8),
        (Precision::Fp16, false, _) => (DataType::HALF, PixelFormat::FEATURE),
        (Precision::Int8, false, 8) => (DataType::INT8, PixelFormat::FEATURE_X8),
        (Precision::Int8, false, _) => (DataType::INT8, PixelFormat::FEATURE),
    };
    // strides[3]: bytes between batch items (0 for one item).
    let item = if sf.batch > 1 { sf.size / sf.batch } else { 0 };
    TensorSpec {
        name: sf.name.clone(),
        mem_id,
        size: u64::from(sf.size),
        offset: 0,
        data_format: format.raw(),
        data_type: data_type.raw(),
        data_category: category.raw(),
        pixel_format: pixel.raw(),
        pixel_mapping: PixelMapping::PITCH_LINEAR.raw(),
        dims: [
            sf.batch.max(1) as i32,
            sf.c as i32,
            sf.h as i32,
            sf.w as i32,
        ],
        strides: [
            if sf.integer {
                crate::engine::INTEGER_BYTES
            } else {
                sf.precision.bytes()
            },
            sf.line_stride,
            surf_stride,
            item,
            0,
            0,
            0,
            0,
        ],
    }
}

struct Ctx<'a> {
    p: &'a Program,
    t: &'a Target,
    shared: &'a Shared,
}

/// One DLA operation of a task.
struct DlaOp {
    ty: OpType,
    /// Index of the program operation it comes from.
    op: usize,
}

impl Ctx<'_> {
    /// Address-list position of the memory holding surface `id`, and the address-list
    /// entry id when it is a network input/output (for relocations).
    fn surface_address(&self, id: SurfId) -> (i16, Option<u16>) {
        let root = self.p.root(id);
        match self.p.surface(root).kind {
            SurfKind::Input(i) => {
                let pos = self.shared.inputs[i];
                (pos, Some(self.shared.entries[pos as usize - 1]))
            }
            SurfKind::Output(i) => {
                let pos = self.shared.outputs[i];
                (pos, Some(self.shared.entries[pos as usize - 1]))
            }
            _ if self.p.surface(root).sram => (self.shared.sram_pool.unwrap_or(-1), None),
            _ => (self.shared.pool.unwrap_or(-1), None),
        }
    }

    /// The memory interface of surface `id`: CV for the CV-SRAM pool, else MC.
    fn mem_type(&self, id: SurfId) -> u16 {
        let ram = if self.p.surface(self.p.root(id)).sram {
            dla::MemType::Cv
        } else {
            dla::MemType::Mc
        };
        ram.raw().into()
    }

    fn cube(&self, id: SurfId) -> (dla::DataCube, Option<u16>) {
        let s = self.p.surface(id);
        // From SDP to PDP inside the accelerator (crate::fly): no memory, but the
        // surface's own (packed) strides, which the convolution checks.
        let on_chip = self.p.surface(self.p.root(id)).kind == SurfKind::OnTheFly;
        let (mem_type, (address, io), offset, size) = if on_chip {
            (dla::MemType::Hw.raw().into(), (-1, None), 0, 0)
        } else {
            let at = self.surface_address(id);
            (self.mem_type(id), at, s.offset as u32, s.size)
        };
        (
            dla::DataCube {
                mem_type,
                address,
                offset,
                size,
                width: s.w as u16,
                height: s.h as u16,
                channel: s.c as u16,
                reserved0: 0,
                line_stride: s.line_stride,
                surf_stride: s.surf_stride,
                plane_stride: 0,
            },
            io,
        )
    }

    /// A cube over blob `b`, its size the whole blob.
    fn blob_cube(&self, b: BlobId, w: u32, h: u32, c: u32) -> dla::DataCube {
        let blob = &self.p.blobs[b.0];
        let atom = self.t.atom();
        dla::DataCube {
            mem_type: dla::MemType::Mc.raw().into(),
            address: self.shared.weights.unwrap_or(-1),
            offset: blob.offset as u32,
            size: blob.data.len() as u32,
            width: w as u16,
            height: h as u16,
            channel: c as u16,
            reserved0: 0,
            line_stride: atom,
            surf_stride: atom,
            plane_stride: 0,
        }
    }

    fn dla_task(&self, ti: usize, ops: &[usize]) -> Result<(Vec<TaskBlob>, Vec<Reloc>)> {
        let p = self.p;
        let t = self.t;
        let prec = t.precision.dla().raw();
        // Flatten to DLA operations: a convolution is CONV then its SDP.
        let mut dops: Vec<DlaOp> = Vec::new();
        for &i in ops {
            match &p.ops[i].kind {
                HwOpKind::Conv(_) => {
                    dops.push(DlaOp {
                        ty: OpType::Conv,
                        op: i,
                    });
                    dops.push(DlaOp {
                        ty: OpType::Sdp,
                        op: i,
                    });
                }
                HwOpKind::Sdp(_) => dops.push(DlaOp {
                    ty: OpType::Sdp,
                    op: i,
                }),
                HwOpKind::Pdp(_) => dops.push(DlaOp {
                    ty: OpType::Pdp,
                    op: i,
                }),
                HwOpKind::Cdp(_) => dops.push(DlaOp {
                    ty: OpType::Cdp,
                    op: i,
                }),
                HwOpKind::Rubik(_) => dops.push(DlaOp {
                    ty: OpType::Rubik,
                    op: i,
                }),
                HwOpKind::Cpu(_) => unreachable!("CPU operations form EMU tasks"),
            }
        }
        let n = dops.len();
        if n > i16::MAX as usize {
            return Err(CompileError::Network(format!("{n} operations in one task")));
        }

        // Dependencies.
        let none = Consumer {
            index: -1,
            event: Event::OpCompleted.raw(),
            res: 0,
        };
        let mut deps: Vec<dla::CommonOpDesc> = (0..n)
            .map(|j| dla::CommonOpDesc {
                index: j as i16,
                roi_index: 0,
                op_type: dops[j].ty.raw(),
                dependency_count: 0,
                reserved0: [0; 3],
                consumers: [none; dla::OP_NUM],
                fused_parent: none,
            })
            .collect();
        // Required "completed" edges: producer -> reader, and reader -> later writer of
        // overlapping pool bytes (the pool is reused).
        let mut need: Vec<Vec<usize>> = vec![Vec::new(); n];
        // A surface passed from SDP to PDP on the fly (crate::fly) is in no memory.
        let on_chip = |id: SurfId| p.surface(p.root(id)).kind == SurfKind::OnTheFly;
        // The SDP operation at `j` feeds the PDP operation after it on the fly.
        let to_pdp = |j: usize| {
            matches!(&p.ops[dops[j].op].kind, HwOpKind::Conv(c) if on_chip(c.sdp.dst))
                && dops[j].ty == OpType::Sdp
        };
        let writes_of = |j: usize| -> Option<SurfId> {
            match (&p.ops[dops[j].op].kind, dops[j].ty) {
                (HwOpKind::Conv(_), OpType::Conv) => None,
                (HwOpKind::Conv(c), _) if on_chip(c.sdp.dst) => None,
                (k, _) => Some(match k {
                    HwOpKind::Conv(c) => c.sdp.dst,
                    HwOpKind::Sdp(s) => s.dst,
                    HwOpKind::Pdp(x) => x.dst,
                    HwOpKind::Cdp(x) => x.dst,
                    HwOpKind::Rubik(x) => x.dst,
                    HwOpKind::Cpu(_) => unreachable!(),
                }),
            }
        };
        let reads_of = |j: usize| -> Vec<SurfId> {
            match (&p.ops[dops[j].op].kind, dops[j].ty) {
                (HwOpKind::Conv(c), OpType::Conv) => vec![c.src],
                (HwOpKind::Conv(c), _) => sdp_operands(&c.sdp),
                (HwOpKind::Sdp(s), _) => {
                    let mut v: Vec<SurfId> = s.src.into_iter().collect();
                    v.extend(sdp_operands(s));
                    v
                }
                (HwOpKind::Pdp(x), _) if on_chip(x.src) => Vec::new(),
                (HwOpKind::Pdp(x), _) => vec![x.src],
                (HwOpKind::Cdp(x), _) => vec![x.src],
                (HwOpKind::Rubik(x), _) => vec![x.src],
                (HwOpKind::Cpu(_), _) => unreachable!(),
            }
        };
        // Each flying chain is CONV, SDP, PDP in a row within the task.
        for j in 0..n {
            if to_pdp(j) && !(j + 1 < n && dops[j + 1].ty == OpType::Pdp) {
                return Err(CompileError::Network(format!(
                    "task {ti} operation {j}: an SDP feeding PDP on the fly without its PDP after it"
                )));
            }
        }
        let span = |id: SurfId| -> (SurfId, u64, u64) {
            let s = p.surface(id);
            (p.root(id), s.offset, s.offset + u64::from(s.size))
        };
        // One memory: the same root, or both in the same activation pool (DRAM's or
        // CV-SRAM's).
        let same_memory = |a: SurfId, b: SurfId| {
            let (sa, sb) = (p.surface(p.root(a)), p.surface(p.root(b)));
            p.root(a) == p.root(b)
                || (sa.kind == SurfKind::Pool && sb.kind == SurfKind::Pool && sa.sram == sb.sram)
        };
        let overlaps = |a: SurfId, b: SurfId| {
            let (_, sa, ea) = span(a);
            let (_, sb, eb) = span(b);
            same_memory(a, b) && sa < eb && sb < ea
        };
        for (j, dop) in dops.iter().enumerate() {
            for r in reads_of(j) {
                // The last writer of every byte read: a read surface may have several
                // (the members of a concatenation, written by different engines in any
                // order), so walk back until each of its bytes has its writer. Earlier
                // writers of a byte are ordered before the last one by the write-after-
                // write edges below.
                let (_, s, e) = span(r);
                let mut uncovered = vec![(s, e)];
                for k in (0..j).rev() {
                    let Some(w) = writes_of(k).filter(|&w| same_memory(w, r)) else {
                        continue;
                    };
                    let (_, ws, we) = span(w);
                    if !uncovered.iter().any(|&(a, b)| a < we && ws < b) {
                        continue;
                    }
                    need[k].push(j);
                    uncovered = uncovered
                        .into_iter()
                        .flat_map(|(a, b)| {
                            if a < we && ws < b {
                                [(a, ws.max(a)), (we.min(b), b)]
                            } else {
                                [(a, b), (b, b)]
                            }
                        })
                        .filter(|(a, b)| a < b)
                        .collect();
                    if uncovered.is_empty() {
                        break;
                    }
                }
            }
            if let Some(w) = writes_of(j) {
                // A convolution's flying SDP writes nothing before its convolution runs, so
                // the convolution (the operation before it) is the one to hold back until
                // earlier users of the bytes it overwrites are done; the SDP itself can then
                // be enabled early, and the convolution starts as soon as its input is
                // ready (NVIDIA's compiler schedules LeNet so).
                // Likewise a pooling on the fly: its convolution is two operations back.
                let flying = matches!(p.ops[dop.op].kind, HwOpKind::Conv(_))
                    && dop.ty == OpType::Sdp
                    && j > 0;
                let pooling_on_the_fly = j >= 2 && to_pdp(j - 1);
                let waiter = if pooling_on_the_fly {
                    j - 2
                } else if flying {
                    j - 1
                } else {
                    j
                };
                for (k, readers) in need.iter_mut().enumerate().take(waiter) {
                    if reads_of(k).iter().any(|&r| overlaps(w, r))
                        || writes_of(k).is_some_and(|x| overlaps(w, x))
                    {
                        readers.push(waiter);
                    }
                }
            }
        }
        // A convolution has no edge to the SDP engine of its own (its flying SDP is bound to
        // it), so the SDP operations that must wait for it wait for its flying SDP, which
        // completes after it: that SDP's chain to the next one then carries "completed".
        // (Without this, a batch's second SDP overwrote what the first item's convolution
        // was still reading: ONNX's test_ConstantPad2d.)
        for j in 0..n.saturating_sub(1) {
            let fused = matches!(p.ops[dops[j].op].kind, HwOpKind::Conv(_))
                && dops[j].ty == OpType::Conv
                && dops[j + 1].ty == OpType::Sdp;
            if fused {
                let (to_sdp, rest): (Vec<usize>, Vec<usize>) = need[j]
                    .iter()
                    .partition(|&&k| dops[k].ty == OpType::Sdp && k > j + 1);
                need[j] = rest;
                need[j + 1].extend(to_sdp);
            }
        }
        // Data edges, one per engine: the earliest reader of each engine; later ones of
        // that engine follow it through the chain of completions.
        const ENGINES: [OpType; 5] = [
            OpType::Conv,
            OpType::Sdp,
            OpType::Pdp,
            OpType::Cdp,
            OpType::Rubik,
        ];
        let mut edges: Vec<[Option<usize>; 5]> = (0..n)
            .map(|j| {
                let ty = dops[j].ty;
                let fused =
                    matches!(p.ops[dops[j].op].kind, HwOpKind::Conv(_)) && ty == OpType::Conv;
                ENGINES.map(|other| {
                    if other == ty
                        || (fused && other == OpType::Sdp)
                        || (to_pdp(j) && other == OpType::Pdp)
                    {
                        return None;
                    }
                    need[j]
                        .iter()
                        .copied()
                        .filter(|&k| dops[k].ty == other)
                        .min()
                })
            })
            .collect();
        // An edge is implied when a later operation of the same engine (which completes
        // after it) has an edge to the same or an earlier reader of that engine (which
        // runs before it on the reader's chain): drop those, so that no operation waits
        // for more than the 255 events its count holds (the first RUBIK operation of a
        // network whose pool it reuses had 290 producers).
        for ty in ENGINES {
            let mut best = [usize::MAX; 5];
            for j in (0..n).rev().filter(|&j| dops[j].ty == ty) {
                for (e, b) in edges[j].iter_mut().zip(best.iter_mut()) {
                    if let Some(t) = *e {
                        if *b <= t {
                            *e = None;
                        } else {
                            *b = t;
                        }
                    }
                }
            }
        }
        let mut count = vec![0u32; n];
        for j in 0..n {
            let ty = dops[j].ty;
            // The next operation of the same engine follows this one: the engine runs its
            // two register groups in turn, so it may be programmed (and enabled) as soon
            // as this one is, and runs when this one is done (NVIDIA's compiler chains
            // an engine's operations so). When a later operation of the engine uses what
            // this one writes (or overwrites what it reads), the next one waits for it to
            // complete instead, and the later ones follow the next.
            if let Some(next) = (j + 1..n).find(|&k| dops[k].ty == ty) {
                let same_engine_data =
                    need[j].iter().any(|&k| k > j && dops[k].ty == ty) || ty != OpType::Sdp;
                // An SDP feeding the PDP waits for the PDP's enable, so the next SDP
                // operation waits for its enable in turn: enabled out of order, the next
                // one's SDP_RDMA group (the one this SDP leaves free) would be enabled
                // before this SDP and look like its own (the model's attribution, and
                // the order NVIDIA's firmware keeps).
                deps[j].consumers[ty.index()] = Consumer {
                    index: next as i16,
                    event: if same_engine_data {
                        Event::OpCompleted.raw()
                    } else if to_pdp(j) {
                        Event::OpEnabled.raw()
                    } else {
                        Event::OpProgrammed.raw()
                    },
                    res: 0,
                };
                count[next] += 1;
            }
            // A convolution feeds its SDP on the fly, and an SDP its PDP (crate::fly): the
            // one fed may start once the feeder is programmed, and the feeder once the
            // one fed is enabled (upstream's `fused_parent`).
            let fused = matches!(p.ops[dops[j].op].kind, HwOpKind::Conv(_)) && ty == OpType::Conv;
            let fed = if fused {
                Some(OpType::Sdp)
            } else if to_pdp(j) {
                Some(OpType::Pdp)
            } else {
                None
            };
            if let Some(fed) = fed {
                deps[j].consumers[fed.index()] = Consumer {
                    index: (j + 1) as i16,
                    event: Event::OpProgrammed.raw(),
                    res: 0,
                };
                count[j + 1] += 1;
                deps[j + 1].fused_parent = Consumer {
                    index: j as i16,
                    event: Event::OpEnabled.raw(),
                    res: 0,
                };
                count[j] += 1;
            }
            for (other, k) in ENGINES.iter().zip(edges[j]) {
                if let Some(k) = k {
                    deps[j].consumers[other.index()] = Consumer {
                        index: k as i16,
                        event: Event::OpCompleted.raw(),
                        res: 0,
                    };
                    count[k] += 1;
                }
            }
            if fused {
                // Readers of type SDP other than the fused one (none write memory from a
                // convolution itself): nothing else to do.
            }
        }
        for (j, (d, c)) in deps.iter_mut().zip(count).enumerate() {
            d.dependency_count = u8::try_from(c).map_err(|_| {
                CompileError::Network(format!(
                    "task {ti} operation {j} waits for {c} events; its count holds 255"
                ))
            })?;
        }

        // Operation and surface descriptors.
        let mut op_list = vec![0u8; n * dla::OPERATION_CONTAINER_SIZE];
        let mut surf_list = vec![0u8; n * dla::SURFACE_CONTAINER_SIZE];
        let mut relocs: Vec<Reloc> = Vec::new();
        // Blob indices in this task: 0 network, 1 deps, 2 ops, 3 surfs, 4 luts.
        const SURFS: usize = 3;
        let cube_reloc = |relocs: &mut Vec<Reloc>, io: Option<u16>, j: usize, at: usize| {
            if let Some(a) = io {
                let base = (j * dla::SURFACE_CONTAINER_SIZE + at) as u64;
                relocs.push((a, SURFS, base + 20, RelocType::LINE));
                relocs.push((a, SURFS, base + 24, RelocType::SURFACE));
            }
        };
        let enc = |r: std::result::Result<(), nvdla_loadable::EncodeError>| {
            r.map_err(|e| CompileError::Network(format!("descriptor encoding: {e:?}")))
        };
        for (j, d) in dops.iter().enumerate() {
            let op_slot = &mut op_list[j * dla::OPERATION_CONTAINER_SIZE..];
            let surf_slot = &mut surf_list[j * dla::SURFACE_CONTAINER_SIZE..];
            match (&p.ops[d.op].kind, d.ty) {
                (HwOpKind::Conv(c), OpType::Conv) => {
                    let (mut src, io) = self.cube(c.src);
                    cube_reloc(&mut relocs, io, j, 96);
                    let dst_s = p.surface(c.sdp.dst);
                    if c.image.is_some() {
                        // CDMA and CSC read every pixel's 4 components.
                        src.channel = crate::lower::image::COMPONENTS as u16;
                    }
                    // Winograd: CSC sees the extended input and 4x4 kernels, CDMA pads the
                    // input to it (docs/research/winograd.md §3).
                    // Image mode: kernels pre-extended to one column of 4 S channels.
                    let (csc_in, kernel, kc, cmac, pad) = match (&c.winograd, &c.image) {
                        (Some(g), _) => (
                            [g.ext[0] as u16, g.ext[1] as u16, g.ext[2] as u16],
                            [4u16, 4],
                            g.ext[2] as u16,
                            [g.out[1] as u16, g.out[0] as u16],
                            g.pad,
                        ),
                        (None, Some(m)) => (
                            [src.width, src.height, src.channel],
                            [1, c.kernel[0] as u16],
                            m.kernel_channels as u16,
                            [c.out[1] as u16, c.out[0] as u16],
                            c.pad,
                        ),
                        _ => (
                            [src.width, src.height, src.channel],
                            [c.kernel[1] as u16, c.kernel[0] as u16],
                            c.channels as u16,
                            [c.out[1] as u16, c.out[0] as u16],
                            c.pad,
                        ),
                    };
                    let desc = dla::ConvOpDesc {
                        conv_mode: if c.winograd.is_some() {
                            dla::ConvMode::Winograd.raw()
                        } else {
                            dla::ConvMode::Direct.raw()
                        },
                        data_reuse: u8::from(c.data_reuse),
                        skip_data_rls: u8::from(c.skip_data_release),
                        entry_per_slice: c.entries_per_slice as u16,
                        data_format: match (&c.image, t.precision) {
                            (None, _) => dla::DataFormat::Feature.raw(),
                            (Some(_), Precision::Int8) => dla::DataFormat::A8B8G8R8.raw(),
                            (Some(_), Precision::Fp16) => dla::DataFormat::A16B16G16R16F.raw(),
                        },
                        // Image components are the int8 values themselves (signed), as in
                        // NVIDIA's nhwc loadables; post-extension is coded as its half.
                        pixel_override: u8::from(c.image.is_some()),
                        post_extension: c.image.map_or(0, |m| (m.y_ext / 2) as u8),
                        pixel_mapping: 0,
                        fetch_grain: 1,
                        batch: 1,
                        weight_format: u8::from(c.compressed.is_some()),
                        data_bank: c.data_banks as u8,
                        weight_bank: c.weight_banks as u8,
                        release: c.winograd.map_or(p.surface(c.src).h, |g| g.ext[1]) as u16,
                        input_width_csc: csc_in[0],
                        input_height_csc: csc_in[1],
                        input_channel_csc: csc_in[2],
                        kernel_width_csc: kernel[0],
                        kernel_height_csc: kernel[1],
                        kernel_channel_csc: kc,
                        input_width_cmac: cmac[0],
                        input_height_cmac: cmac[1],
                        bytes_per_kernel: c.bytes_per_kernel,
                        conv_stride_x: c.stride[1] as u8,
                        conv_stride_y: c.stride[0] as u8,
                        pad_x_left: pad[1] as u8,
                        pad_x_right: pad[3] as u8,
                        pad_y_top: pad[0] as u8,
                        pad_y_bottom: pad[2] as u8,
                        pra_truncate: c.winograd.map_or(0, |g| g.pra_truncate),
                        dilation_x: c.dilation[1] as u8,
                        dilation_y: c.dilation[0] as u8,
                        in_precision: prec,
                        out_precision: prec,
                        // int8 input passes the CDMA converter with scale 1 (as upstream).
                        in_cvt: dla::CvtParam {
                            scale: 1,
                            enable: u8::from(t.precision == Precision::Int8),
                            ..Default::default()
                        },
                        out_cvt: dla::CvtParam {
                            scale: 1,
                            truncate: 0,
                            enable: 1,
                            offset: 0,
                        },
                        ..Default::default()
                    };
                    let mut weight =
                        self.blob_cube(c.weights, kernel[0].into(), kernel[1].into(), kc.into());
                    // Compressed: the stored elements, already whole 128-byte units.
                    if c.compressed.is_none() {
                        weight.size = conv_weight_bytes(t, c.kernels, c.bytes_per_kernel);
                    }
                    let side = |b: BlobId| self.blob_cube(b, 0, 0, 0);
                    let mut dst = self.cube(c.sdp.dst).0;
                    dst.mem_type = dla::MemType::Hw.raw().into();
                    dst.address = -1;
                    dst.offset = 0;
                    dst.channel = c.kernels as u16;
                    if let Some(g) = &c.winograd {
                        dst.width = g.out[1] as u16;
                        dst.height = g.out[0] as u16;
                    }
                    let _ = dst_s;
                    let surf = dla::ConvSurfaceDesc {
                        weight_data: weight,
                        wmb_data: c.compressed.map_or_else(Default::default, |x| side(x.wmb)),
                        wgs_data: c.compressed.map_or_else(Default::default, |x| side(x.wgs)),
                        src_data: src,
                        dst_data: dst,
                        ..Default::default()
                    };
                    enc(dla::OpDesc::Conv(desc).encode_into(op_slot))?;
                    enc(dla::SurfaceDesc::Conv(surf).encode_into(surf_slot))?;
                }
                (HwOpKind::Conv(c), _) => {
                    let mut src = self.cube(c.sdp.dst).0;
                    src.mem_type = dla::MemType::Hw.raw().into();
                    src.address = -1;
                    src.offset = 0;
                    let (mut desc, mut surf) = self.sdp(&c.sdp, src, j, &mut relocs)?;
                    if let Some(g) = &c.winograd {
                        // SDP in Winograd output mode takes and writes the padded output.
                        desc.conv_mode = dla::ConvMode::Winograd.raw();
                        for cube in [&mut surf.src_data, &mut surf.dst_data] {
                            cube.width = g.out[1] as u16;
                            cube.height = g.out[0] as u16;
                        }
                    }
                    enc(dla::OpDesc::Sdp(desc).encode_into(op_slot))?;
                    enc(dla::SurfaceDesc::Sdp(surf).encode_into(surf_slot))?;
                }
                (HwOpKind::Sdp(s), _) => {
                    let Some(src_id) = s.src else {
                        return Err(CompileError::Network("SDP without input".into()));
                    };
                    let (src, io) = self.cube(src_id);
                    cube_reloc(&mut relocs, io, j, 0);
                    let (desc, surf) = self.sdp(s, src, j, &mut relocs)?;
                    enc(dla::OpDesc::Sdp(desc).encode_into(op_slot))?;
                    enc(dla::SurfaceDesc::Sdp(surf).encode_into(surf_slot))?;
                }
                (HwOpKind::Pdp(x), _) => {
                    let (src, io) = self.cube(x.src);
                    cube_reloc(&mut relocs, io, j, 0);
                    let (dst, io) = self.cube(x.dst);
                    cube_reloc(&mut relocs, io, j, 32);
                    let size = |k: u32| (k - 1) as u8;
                    let strips = pdp_strips(t, x, p.surface(x.src).w, p.surface(x.dst).w)?;
                    let desc = dla::PdpOpDesc {
                        split_num: strips.count,
                        partial_in_width_first: strips.input[0],
                        partial_in_width_mid: strips.input[1],
                        partial_in_width_last: strips.input[2],
                        partial_width_first: strips.output[0],
                        partial_width_mid: strips.output[1],
                        partial_width_last: strips.output[2],
                        pool_mode: if x.max {
                            dla::PoolMode::Max.raw()
                        } else {
                            dla::PoolMode::Avg.raw()
                        },
                        pool_width: size(x.kernel[1]),
                        pool_height: size(x.kernel[0]),
                        stride_x: x.stride[1] as u8,
                        stride_y: x.stride[0] as u8,
                        pad_left: x.pad[1] as u8,
                        pad_right: x.pad[3] as u8,
                        pad_top: x.pad[0] as u8,
                        pad_bottom: x.pad[2] as u8,
                        precision: prec,
                        padding_value: [x.pad_value; dla::PDP_PAD_VAL_NUM],
                        ..Default::default()
                    };
                    let surf = dla::PdpSurfaceDesc {
                        src_data: src,
                        dst_data: dst,
                    };
                    enc(dla::OpDesc::Pdp(desc).encode_into(op_slot))?;
                    enc(dla::SurfaceDesc::Pdp(surf).encode_into(surf_slot))?;
                }
                (HwOpKind::Cdp(x), _) => {
                    let (src, io) = self.cube(x.src);
                    cube_reloc(&mut relocs, io, j, 0);
                    let (dst, io) = self.cube(x.dst);
                    cube_reloc(&mut relocs, io, j, 32);
                    let unit = dla::CvtParam {
                        scale: 1,
                        ..Default::default()
                    };
                    let desc = dla::CdpOpDesc {
                        in_precision: prec,
                        out_precision: prec,
                        lut_index: x.lut as i16,
                        in_cvt: unit,
                        out_cvt: dla::CvtParam {
                            scale: x.out_cvt.0,
                            truncate: x.out_cvt.1,
                            ..Default::default()
                        },
                        local_size: x.local_size as u8,
                        bypass_sqsum: u8::from(x.lookup),
                        bypass_out_mul: u8::from(x.lookup),
                        reserved0: 0,
                    };
                    let surf = dla::CdpSurfaceDesc {
                        src_data: src,
                        dst_data: dst,
                    };
                    enc(dla::OpDesc::Cdp(desc).encode_into(op_slot))?;
                    enc(dla::SurfaceDesc::Cdp(surf).encode_into(surf_slot))?;
                }
                (HwOpKind::Rubik(x), _) => {
                    let (src, io) = self.cube(x.src);
                    cube_reloc(&mut relocs, io, j, 0);
                    let (dst, io) = self.cube(x.dst);
                    cube_reloc(&mut relocs, io, j, 32);
                    let desc = dla::RubikOpDesc {
                        mode: dla::RubikMode::Contract.raw(),
                        precision: prec,
                        stride_x: x.stride[1] as u8,
                        stride_y: x.stride[0] as u8,
                    };
                    let surf = dla::RubikSurfaceDesc {
                        src_data: src,
                        dst_data: dst,
                    };
                    enc(dla::OpDesc::Rubik(desc).encode_into(op_slot))?;
                    enc(dla::SurfaceDesc::Rubik(surf).encode_into(surf_slot))?;
                }
                (HwOpKind::Cpu(_), _) => unreachable!(),
            }
        }

        let mut head = [-1i16; dla::OP_NUM];
        for (j, d) in dops.iter().enumerate().rev() {
            head[d.ty.index()] = j as i16;
        }
        let luts = &p.luts;
        let net = dla::NetworkDesc {
            operation_desc_index: 0,
            surface_desc_index: 0,
            dependency_graph_index: 0,
            lut_data_index: -1,
            roi_array_index: -1,
            surface_index: -1,
            stat_list_index: -1,
            reserved1: 0,
            op_head: head,
            num_rois: 1,
            num_operations: n as u16,
            num_luts: luts.len() as u16,
            num_addresses: 0,
            input_layer: 0,
            dynamic_roi: 0,
            reserved0: 0,
        };
        let shared = self.shared.entries.len() as i16;
        // Address list: [network, shared..., deps, ops, surfs, luts?].
        let net = dla::NetworkDesc {
            dependency_graph_index: shared + 1,
            operation_desc_index: shared + 2,
            surface_desc_index: shared + 3,
            lut_data_index: if luts.is_empty() { -1 } else { shared + 4 },
            num_addresses: (shared + if luts.is_empty() { 4 } else { 5 }) as u16,
            ..net
        };
        let mut dep_list = vec![0u8; n * dla::DEPENDENCY_ENTRY_SIZE];
        for (j, d) in deps.iter().enumerate() {
            d.encode_into(&mut dep_list[j * dla::DEPENDENCY_ENTRY_SIZE..])
                .map_err(|e| CompileError::Network(format!("descriptor encoding: {e:?}")))?;
        }
        let name = |s: &str| format!("task-{ti}-{s}");
        let mut blobs: Vec<TaskBlob> = vec![
            (
                name("addr0"),
                SubInterface::ADDR0,
                Interface::DLA1,
                DLA1_VERSION,
                net.to_vec(),
            ),
            (
                name("dep_graph"),
                SubInterface::DEPS,
                Interface::DLA1,
                DLA1_VERSION,
                dep_list,
            ),
            (
                name("op_list"),
                SubInterface::OPS,
                Interface::DLA1,
                DLA1_VERSION,
                op_list,
            ),
            (
                name("surf_list"),
                SubInterface::SURFS,
                Interface::DLA1,
                DLA1_VERSION,
                surf_list,
            ),
        ];
        if !luts.is_empty() {
            let mut lut_list = vec![0u8; luts.len() * dla::LUT_ENTRY_SIZE];
            for (k, l) in luts.iter().enumerate() {
                l.encode_into(&mut lut_list[k * dla::LUT_ENTRY_SIZE..])
                    .map_err(|e| CompileError::Network(format!("descriptor encoding: {e:?}")))?;
            }
            blobs.push((
                name("lut_list"),
                SubInterface::LUTS,
                Interface::DLA1,
                DLA1_VERSION,
                lut_list,
            ));
        }
        Ok((blobs, relocs))
    }

    fn sdp(
        &self,
        s: &SdpOp,
        src: dla::DataCube,
        j: usize,
        relocs: &mut Vec<Reloc>,
    ) -> Result<(dla::SdpOpDesc, dla::SdpSurfaceDesc)> {
        let prec = self.t.precision.dla().raw();
        let (dst, io) = self.cube(s.dst);
        if let Some(a) = io {
            let base = (j * dla::SURFACE_CONTAINER_SIZE + 128) as u64;
            relocs.push((a, 3, base + 20, RelocType::LINE));
            relocs.push((a, 3, base + 24, RelocType::SURFACE));
        }
        let mut ops = [dla::SdpOp::default(); 3];
        let mut cubes = [dla::DataCube::default(); 3];
        // The cube of a computed operand surface, with the stride relocations of a network
        // tensor, for stage `k`.
        let mut operand_cube = |sid: SurfId, k: usize| -> dla::DataCube {
            let (c, io) = self.cube(sid);
            if let Some(a) = io {
                let base = (j * dla::SURFACE_CONTAINER_SIZE + 32 * (k + 1)) as u64;
                relocs.push((a, 3, base + 20, RelocType::LINE));
                relocs.push((a, 3, base + 24, RelocType::SURFACE));
            }
            c
        };
        for (k, st) in s.stages.iter().enumerate() {
            let Some(st) = st else { continue };
            let (mode, alu, mul) = match st.operand {
                crate::engine::Operand::PerLayer(_) => {
                    (dla::SdpOpMode::PerLayer, st.alu_value, st.mul_value)
                }
                crate::engine::Operand::PerChannel(b) => {
                    cubes[k] = self.blob_cube(b, 1, 1, u32::from(dst.channel));
                    (dla::SdpOpMode::PerKernel, 0, 0)
                }
                crate::engine::Operand::PerChannelSurface(sid) => {
                    let v = self.p.surface(sid);
                    let dense = v.line_stride == self.t.atom() && v.surf_stride == self.t.atom();
                    if v.c != u32::from(dst.channel) || !dense {
                        return Err(CompileError::Network(format!(
                            "per-channel operand `{}` ({}x{}x{}, strides {}/{}) is not a dense \
                             vector of the output's {} channels",
                            v.name, v.c, v.h, v.w, v.line_stride, v.surf_stride, dst.channel
                        )));
                    }
                    cubes[k] = operand_cube(sid, k);
                    (dla::SdpOpMode::PerKernel, 0, 0)
                }
                crate::engine::Operand::PerElement(sid) => {
                    cubes[k] = operand_cube(sid, k);
                    (dla::SdpOpMode::PerPoint, 0, 0)
                }
            };
            ops[k] = dla::SdpOp {
                enable: 1,
                alu_type: st.alu_type.raw(),
                op_type: st.op_type.raw(),
                mode: mode.raw(),
                act: st.act.raw(),
                shift_value: st.shift,
                truncate: st.truncate,
                precision: st.operand_precision.raw(),
                alu_operand: alu,
                mul_operand: mul,
                cvt: dla::SdpCvt::default(),
            };
        }
        let desc = dla::SdpOpDesc {
            src_precision: prec,
            dst_precision: prec,
            lut_index: s.lut.map_or(-1, |l| l as i16),
            out_cvt: match s.out_cvt {
                Some((scale, truncate)) => dla::CvtParam {
                    scale,
                    truncate,
                    enable: 1,
                    offset: 0,
                },
                None => dla::CvtParam {
                    scale: 1,
                    ..Default::default()
                },
            },
            conv_mode: dla::ConvMode::Direct.raw(),
            batch_num: 1,
            reserved0: 0,
            batch_stride: 0,
            x1_op: ops[0],
            x2_op: ops[1],
            y_op: ops[2],
        };
        let surf = dla::SdpSurfaceDesc {
            src_data: src,
            x1_data: cubes[0],
            x2_data: cubes[1],
            y_data: cubes[2],
            dst_data: dst,
        };
        Ok((desc, surf))
    }

    fn emu_task(&self, ti: usize, ops: &[usize]) -> Result<(Vec<TaskBlob>, Vec<Reloc>)> {
        let p = self.p;
        let n = ops.len();
        let mut op_list = vec![0u8; n * emu::OPERATION_CONTAINER_SIZE];
        let mut buf_list = vec![0u8; n * emu::OPERATION_BUFFER_CONTAINER_SIZE];
        let mut relocs = Vec::new();
        let format = match self.t.precision {
            Precision::Fp16 => emu::BufferFormat::Fp16,
            Precision::Int8 if self.t.atom() == 8 => emu::BufferFormat::Int8Atom8,
            Precision::Int8 => emu::BufferFormat::Int8,
        };
        let buffer = |id: SurfId| -> (emu::BufferDesc, Option<u16>) {
            let s = p.surface(id);
            let (address, io) = self.surface_address(id);
            (
                emu::BufferDesc {
                    address_index: address,
                    address_index_offset: s.offset as u32,
                    size: s.size,
                    format: format.raw().into(),
                    width: s.w as u16,
                    height: s.h as u16,
                    channel: s.c as u16,
                    line_stride: s.line_stride,
                    surf_stride: s.surf_stride,
                },
                io,
            )
        };
        let mut fallback = false;
        let shared = self.shared.entries.len() as i16;
        // Partition descriptors: task blobs after the two lists.
        let mut partitions: Vec<Vec<u8>> = Vec::new();
        for (k, &i) in ops.iter().enumerate() {
            let HwOpKind::Cpu(cpu) = &p.ops[i].kind else {
                unreachable!("EMU tasks hold CPU operations only")
            };
            // A partition of constants only reads nothing: its buffer pair names its output.
            let dst = cpu.writes()[0];
            let src = cpu.reads().first().copied().unwrap_or(dst);
            let (s, sio) = buffer(src);
            let (d, dio) = buffer(dst);
            for (io, at) in [(sio, 0u64), (dio, 256u64)] {
                if let Some(a) = io {
                    let base = (k * emu::OPERATION_BUFFER_CONTAINER_SIZE) as u64 + at;
                    relocs.push((a, 2, base + 18, RelocType::LINE));
                    relocs.push((a, 2, base + 22, RelocType::SURFACE));
                }
            }
            let common = |op_type: u8| emu::CommonOpDesc {
                op_type,
                input_scale_factor: p.surface(src).scale,
                output_scale_factor: p.surface(dst).scale,
            };
            let slot = &mut op_list[k * emu::OPERATION_CONTAINER_SIZE..];
            match cpu {
                CpuOp::Softmax { .. } => emu::OpDesc::Softmax(emu::SoftmaxOpDesc {
                    common: common(emu::OpType::Softmax.raw()),
                    axis: 1,
                })
                .encode_into(slot)
                .map_err(|e| CompileError::Network(format!("descriptor encoding: {e:?}")))?,
                CpuOp::Unary {
                    func, alpha, beta, ..
                } => {
                    fallback = true;
                    let d = nvdla_umd::emu::FallbackOpDesc {
                        common: common(nvdla_umd::emu::FALLBACK_UNARY),
                        func: *func,
                        alpha: *alpha,
                        beta: *beta,
                    };
                    slot[..nvdla_umd::emu::FallbackOpDesc::SIZE].copy_from_slice(&d.encode());
                }
                CpuOp::Partition {
                    inputs,
                    outputs,
                    partition,
                } => {
                    let blob_index = 3 + partitions.len();
                    let binding = |id: SurfId, dims: &[usize]| {
                        let s = p.surface(id);
                        nvdla_umd::partition::TensorBinding {
                            address_index: self.surface_address(id).0,
                            precision: match s.precision {
                                _ if s.integer => nvdla_umd::partition::SurfacePrecision::Float32,
                                Precision::Fp16 => nvdla_umd::partition::SurfacePrecision::Fp16,
                                Precision::Int8 => nvdla_umd::partition::SurfacePrecision::Int8,
                            },
                            channels_per_group: if s.integer {
                                crate::engine::INTEGER_CHANNELS_PER_ATOM as u8
                            } else {
                                self.t.channels_per_atom_of(s.precision) as u8
                            },
                            offset: s.offset as u32,
                            size: s.size,
                            channel: s.c,
                            height: s.h,
                            width: s.w,
                            line_stride: s.line_stride,
                            surf_stride: s.surf_stride,
                            scale: s.scale,
                            items: s.batch.max(1),
                            dims: dims.to_vec(),
                        }
                    };
                    let desc = nvdla_umd::partition::PartitionDesc {
                        inputs: inputs
                            .iter()
                            .zip(&partition.input_dims)
                            .map(|(&id, d)| binding(id, d))
                            .collect(),
                        outputs: outputs
                            .iter()
                            .zip(&partition.output_dims)
                            .map(|(&id, d)| binding(id, d))
                            .collect(),
                        model: partition.model.clone(),
                    };
                    // Bound network tensors may come with other strides.
                    for (b, &id) in inputs.iter().chain(outputs).enumerate() {
                        if let Some(a) = self.surface_address(id).1 {
                            let at = nvdla_umd::partition::PartitionDesc::binding_offset(b);
                            for (field, ty) in [
                                (nvdla_umd::partition::LINE_STRIDE_AT, RelocType::LINE),
                                (nvdla_umd::partition::SURF_STRIDE_AT, RelocType::SURFACE),
                            ] {
                                relocs.push((a, blob_index, (at + field) as u64, ty));
                            }
                        }
                    }
                    let bytes = desc.encode();
                    let container = nvdla_umd::partition::container(
                        shared + blob_index as i16,
                        bytes.len() as u32,
                    );
                    slot[..container.len()].copy_from_slice(&container);
                    partitions.push(bytes);
                }
            }
            // Both members are a source and a destination buffer.
            emu::OpBufferDescs::Softmax(emu::SoftmaxBufferDescs {
                src_data: s,
                dst_data: d,
            })
            .encode_into(&mut buf_list[k * emu::OPERATION_BUFFER_CONTAINER_SIZE..])
            .map_err(|e| CompileError::Network(format!("descriptor encoding: {e:?}")))?;
        }
        // A task with CPU fallback operations declares the fallback interface version, so
        // that a runtime can tell before decoding them.
        let version = if !partitions.is_empty() {
            EMU1_PARTITION_VERSION
        } else if fallback {
            EMU1_FALLBACK_VERSION
        } else {
            EMU1_VERSION
        };
        let net = emu::NetworkDesc {
            operation_desc_index: shared + 1,
            operation_buffer_desc_index: shared + 2,
            num_operations: n as u16,
        };
        let name = |s: &str| format!("task-{ti}-{s}");
        Ok((
            vec![
                (
                    name("addr0"),
                    SubInterface::ADDR0,
                    Interface::EMU1,
                    version,
                    net.to_vec(),
                ),
                (
                    name("op_list"),
                    SubInterface::OPS,
                    Interface::EMU1,
                    version,
                    op_list,
                ),
                (
                    name("op_buf_list"),
                    SubInterface::SURFS,
                    Interface::EMU1,
                    version,
                    buf_list,
                ),
            ]
            .into_iter()
            .chain(partitions.into_iter().enumerate().map(|(j, bytes)| {
                (
                    name(&format!("partition{j}")),
                    SubInterface::SURFS,
                    Interface::EMU1,
                    version,
                    bytes,
                )
            }))
            .collect(),
            relocs,
        ))
    }
}

fn sdp_operands(s: &SdpOp) -> Vec<SurfId> {
    s.stages
        .iter()
        .flatten()
        .filter_map(|st| st.operand.surface())
        .collect()
}

/// A pooling in vertical strips: how many, and the input and output widths of the first,
/// the middle ones and the last (`dla_pdp_op_desc`'s split fields; 0 for strips that do
/// not exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PdpStrips {
    pub count: u8,
    pub input: [u16; 3],
    pub output: [u16; 3],
}

/// The strips pooling `x` (input `in_w`, output `out_w` wide) needs on `t`: one while the
/// output line fits the PDP's line banks (`nvdla_hw::Config::pdp_line_pixels`), else strips
/// of that many outputs. The input strips partition the input columns without overlap,
/// each ending at the last column its last output reads (NVIDIA's
/// `pdp_16x6x16_4x2_split_max_int8_0` trace: inputs 2, 12, 2 for outputs 1, 6, 2); the PDP
/// keeps the window's overlap itself. An unsplit pooling wider than the banks never
/// finishes on NVIDIA's nv_small RTL (docs/rtl.md, "Wide pooling").
pub(crate) fn pdp_strips(t: &Target, x: &PdpOp, in_w: u32, out_w: u32) -> Result<PdpStrips> {
    let single = PdpStrips {
        count: 1,
        input: [0; 3],
        output: [0; 3],
    };
    let lines = nvdla_hw::Config::pdp_buffered_lines(x.kernel[0], x.stride[0]);
    let Some(cap) = t.hw.pdp_line_pixels(lines, t.bpe()) else {
        return Ok(single);
    };
    if out_w <= cap {
        return Ok(single);
    }
    // The last input column output `o` reads.
    let end = |o: u32| -> i64 {
        (i64::from(o) * i64::from(x.stride[1]) - i64::from(x.pad[1]) + i64::from(x.kernel[1]) - 1)
            .min(i64::from(in_w) - 1)
    };
    let fits = |v: i64| (1..=i64::from(u16::MAX)).contains(&v);
    // Strips of `per` outputs (the last one the rest): their input widths, if the
    // registers can describe them. A last strip whose outputs read only the right
    // padding has no input, so narrower strips are tried after the widest.
    let strips = |per: u32| -> Option<(u32, i64, i64, i64)> {
        let n = out_w.div_ceil(per);
        let first_in = end(per - 1) + 1;
        let mut mids = (1..n - 1).map(|k| end((k + 1) * per - 1) - end(k * per - 1));
        let mid_in = mids.next().unwrap_or(0);
        let last_in = end(out_w - 1) - end(per * (n - 1) - 1);
        let uniform = mids.all(|m| m == mid_in);
        let ok = n <= 64 && uniform && fits(first_in) && fits(last_in) && (n == 2 || fits(mid_in));
        ok.then_some((n, first_in, mid_in, last_in))
    };
    let Some((per, (n, first_in, mid_in, last_in))) = (1..=cap)
        .rev()
        .find_map(|per| strips(per).map(|s| (per, s)))
    else {
        return Err(CompileError::Network(format!(
            "a {}x{} pooling with {out_w} outputs per line needs strips of at most {cap}              outputs, which the PDP's strip registers cannot describe",
            x.kernel[0], x.kernel[1]
        )));
    };
    let (cap, last_out) = (per, out_w - per * (n - 1));
    let w = |v: i64| v as u16;
    Ok(PdpStrips {
        count: n as u8,
        input: [w(first_in), if n > 2 { w(mid_in) } else { 0 }, w(last_in)],
        output: [
            cap as u16,
            if n > 2 { cap as u16 } else { 0 },
            last_out as u16,
        ],
    })
}

/// The weight bytes a direct convolution's CDMA fetches and its CSC consumes (the cube size
/// the firmware writes to CDMA and CSC `D_WEIGHT_BYTES`): the packed kernels rounded up to
/// a whole CBUF entry, not the blob's 128-byte padding. CDMA_WT writes every fetched entry
/// into the CBUF's weight ring and CSC releases only the entries its kernel groups use, so
/// a difference between the two shifts the ring and the next convolution reads the wrong
/// weights: on NVIDIA's nv_small RTL (8-byte entries) a second small convolution computed
/// with zero weights (docs/rtl.md, "Weight bytes"). NVIDIA's nv_small LeNet programs the
/// same rule (504 bytes for 20 kernels of 25).
pub(crate) fn conv_weight_bytes(t: &Target, kernels: u32, bytes_per_kernel: u32) -> u32 {
    (kernels * bytes_per_kernel).next_multiple_of(t.cbuf_entry_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conv_weight_bytes_are_the_kernels_rounded_to_a_cbuf_entry() {
        let small = Target::new(&nvdla_hw::NV_SMALL, Precision::Int8).unwrap();
        let full = Target::new(&nvdla_hw::NV_FULL, Precision::Int8).unwrap();
        // nv_small: 8-byte entries. 8 kernels of 4 bytes are 32 bytes, not the blob's 128
        // (the RTL's weight ring went out of step with 128); NVIDIA's LeNet conv1 (20
        // kernels of 25 bytes) programs 504.
        assert_eq!(conv_weight_bytes(&small, 8, 4), 32);
        assert_eq!(conv_weight_bytes(&small, 20, 25), 504);
        // nv_full: 128-byte entries.
        assert_eq!(conv_weight_bytes(&full, 8, 4), 128);
        assert_eq!(conv_weight_bytes(&full, 32, 27), 896);
    }

    fn pool(kernel: u32, stride: u32, pad: u32) -> PdpOp {
        PdpOp {
            src: SurfId(0),
            dst: SurfId(1),
            max: false,
            kernel: [kernel; 2],
            stride: [stride; 2],
            pad: [pad; 4],
            pad_value: 0,
        }
    }

    #[test]
    fn wide_poolings_go_in_strips_that_partition_the_input() {
        let small = Target::new(&nvdla_hw::NV_SMALL, Precision::Int8).unwrap();
        let full = Target::new(&nvdla_hw::NV_FULL, Precision::Int8).unwrap();
        // 3x3 stride 1 buffers 3 lines: 32 outputs per line fit (they ran on the RTL).
        let one = pdp_strips(&small, &pool(3, 1, 0), 32, 30).unwrap();
        assert_eq!(one.count, 1);
        // 56 wide (54 outputs, seed 95's hang): 32 + 22 outputs, inputs 34 + 22.
        let two = pdp_strips(&small, &pool(3, 1, 0), 56, 54).unwrap();
        assert_eq!(
            (two.count, two.output, two.input),
            (2, [32, 0, 22], [34, 0, 22])
        );
        // Stride 2, padding 1: 2 lines buffered, 64 outputs per line; 300 outputs.
        let five = pdp_strips(&small, &pool(3, 2, 1), 600, 300).unwrap();
        assert_eq!(five.count, 5);
        assert_eq!(five.output, [64, 64, 44]);
        assert_eq!(five.input, [128, 128, 88]);
        let total =
            u32::from(five.input[0]) + 3 * u32::from(five.input[1]) + u32::from(five.input[2]);
        assert_eq!(total, 600);
        // 5x5 stride 1 padding 4 over 13 columns (a stage of SPP's 9x9 pooling): 17
        // outputs, 16 per strip; a 16 + 1 split would leave the last output only the
        // right padding to read (so would 15 + 2 to 13 + 4), so the strips take 12 + 5
        // outputs of inputs 12 + 1.
        let padded = pdp_strips(&small, &pool(5, 1, 4), 13, 17).unwrap();
        assert_eq!(
            (padded.count, padded.output, padded.input),
            (2, [12, 0, 5], [12, 0, 1])
        );
        // Builds whose PDP geometry is not known from an RTL keep one strip.
        assert_eq!(pdp_strips(&full, &pool(3, 1, 0), 56, 54).unwrap().count, 1);
    }
}
