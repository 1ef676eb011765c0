//! CPU partitions: parts of an ONNX model that no NVDLA engine computes, carried in the
//! loadable as ONNX subgraphs and run on the host by [tract](https://github.com/sonos/tract)
//! (`nvdla-compiler --cpu-fallback`), as ONNX Runtime runs the nodes its accelerator
//! execution provider does not take on its CPU provider.
//!
//! # Why tract
//!
//! A partition can hold any ONNX operator (a YOLO head's reshapes, transposes, softmax over
//! another axis, an OCR recognizer's attention). Writing a second ONNX interpreter would
//! repeat years of someone else's work; tract is a pure-Rust, well-kept ONNX inference
//! engine (opsets up to 21, no C++ toolchain, builds for aarch64 boards), so the same code
//! runs in the compiler (its fp32 reference and calibration) and in `nvdla-runtime`.
//!
//! # In the loadable
//!
//! An EMU1 operation of type [`FALLBACK_PARTITION`] (24-byte container: the type, one
//! reserved byte, the address-list slot of its descriptor as an `i16` and the descriptor's
//! size as a `u32`, zeros after) names a task blob holding a [`PartitionDesc`]: a header,
//! one 64-byte [`TensorBinding`] per input and output (where its feature surface lies, its
//! geometry and precision, and its ONNX dimensions) and the ONNX model itself. Its tasks
//! carry EMU interface version [`PARTITION_VERSION`]. NVIDIA's runtime refuses the
//! operation type as an unknown EMU operation, the bare-metal runner (no heap, no tract)
//! with [`nvdla_emu::EmuError::UnknownFallback`]. The operation's buffer-descriptor pair
//! names its first input and first output (for tools that list buffers); the runtime reads
//! the bindings.
//!
//! Feature surfaces are read and written as the hardware lays them out (hwarch "Feature
//! Data Format": groups of `channels_per_group` channels, each group a plane of lines of
//! pixels, one atom per pixel): fp16 values exactly, int8 values times their scale; the
//! outputs are rounded to half (ties to even) or to int8 steps (ties to even, saturated).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use nvdla_emu::fp16::{f16_to_f32, f32_to_f16_even};
use nvdla_emu::SlotMemory;
use thiserror::Error;
use tract_onnx::prelude::*;

pub use nvdla_emu::FALLBACK_PARTITION;
/// EMU interface version of tasks holding a partition.
pub const PARTITION_VERSION: (u8, u8, u8) = (0, 2, 0);

const MAGIC: &[u8; 4] = b"NVPT";
const FORMAT_VERSION: u16 = 1;
const HEADER_LEN: usize = 24;
/// Bytes of one [`TensorBinding`].
pub const BINDING_LEN: usize = 64;
/// Most ONNX dimensions a boundary tensor may have.
pub const MAX_RANK: usize = 6;
/// Offset of `line_stride` in a binding (relocated for bound network tensors).
pub const LINE_STRIDE_AT: usize = 24;
/// Offset of `surf_stride` in a binding.
pub const SURF_STRIDE_AT: usize = 28;

/// Why a partition could not be decoded or run.
#[derive(Debug, Error)]
pub enum PartitionError {
    /// The descriptor is malformed.
    #[error("partition descriptor: {0}")]
    Descriptor(String),
    /// A tensor's memory is missing or too small.
    #[error("partition {dir} {index}: {reason}")]
    Memory {
        /// `input` or `output`.
        dir: &'static str,
        /// Its index.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// tract could not load or run the model.
    #[error("partition model: {0}")]
    Model(String),
}

fn model_err(e: impl std::fmt::Display) -> PartitionError {
    // tract's errors chain their causes: keep them all.
    PartitionError::Model(format!("{e:#}"))
}

/// Largest finite half-precision value.
const HALF_MAX: f32 = 65504.0;

/// Element precision of a boundary surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SurfacePrecision {
    /// Half precision.
    Fp16,
    /// int8 with `real = q * scale`.
    Int8,
    /// IEEE binary32 holding whole numbers: a network input of integers (byte values,
    /// token ids), 8 channels per 32-byte atom (`D_F32_CxHWx_x8_F`). A fraction is an
    /// error when the partition reads it.
    Float32,
}

/// Where one input or output of a partition lies and how to read it.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorBinding {
    /// Task address-list slot of its memory.
    pub address_index: i16,
    /// Element precision.
    pub precision: SurfacePrecision,
    /// Channels per atom (a group of channels stored together per pixel).
    pub channels_per_group: u8,
    /// Byte offset in the slot's memory window.
    pub offset: u32,
    /// Bytes of the surface.
    pub size: u32,
    /// Channels.
    pub channel: u32,
    /// Lines.
    pub height: u32,
    /// Pixels per line.
    pub width: u32,
    /// Bytes between lines.
    pub line_stride: u32,
    /// Bytes between channel groups.
    pub surf_stride: u32,
    /// int8: the real value of one step.
    pub scale: f32,
    /// Items back to back, each `size / items` bytes with the geometry above (a batch's
    /// N items read and written at once; 1 otherwise). Byte 37 of the binding, where 0
    /// also means 1 (the reserved byte of descriptors before batches).
    pub items: u32,
    /// The ONNX dimensions (their product is `items * channel * height * width`).
    pub dims: Vec<usize>,
}

impl TensorBinding {
    fn bytes_per_element(&self) -> usize {
        match self.precision {
            SurfacePrecision::Fp16 => 2,
            SurfacePrecision::Int8 => 1,
            SurfacePrecision::Float32 => 4,
        }
    }

    /// Byte offset of element (`c`, `y`, `x`) from the surface's start (64-bit: the
    /// fields are `u32`, so no product overflows, on 32-bit hosts either).
    fn element_offset(&self, c: usize, y: usize, x: usize) -> u64 {
        let g = u64::from(self.channels_per_group);
        let bpe = self.bytes_per_element() as u64;
        let (c, y, x) = (c as u64, y as u64, x as u64);
        // Saturating: a damaged descriptor's offsets end past any memory, never wrap.
        ((c / g).saturating_mul(u64::from(self.surf_stride)))
            .saturating_add(y.saturating_mul(u64::from(self.line_stride)))
            .saturating_add(x.saturating_mul(g * bpe))
            .saturating_add((c % g) * bpe)
    }

    /// Bytes from the start of one item to the end of its last element.
    fn item_extent(&self) -> u64 {
        let (c, h, w) = (
            self.channel as usize,
            self.height as usize,
            self.width as usize,
        );
        let g = usize::from(self.channels_per_group);
        // The largest offset is at the last line and pixel of the last channel, or of the
        // last channel of the group before the last.
        let mut last = self.element_offset(c - 1, h - 1, w - 1);
        if c > g {
            last = last.max(self.element_offset((c - 1) / g * g - 1, h - 1, w - 1));
        }
        last.saturating_add(self.bytes_per_element() as u64)
    }

    /// Bytes from one item's start to the next's.
    fn item_stride(&self) -> u64 {
        u64::from(self.size) / u64::from(self.items.max(1))
    }

    /// Bytes from the surface's start to the end of its last item's last element.
    fn extent(&self) -> u64 {
        (u64::from(self.items.max(1)) - 1)
            .saturating_mul(self.item_stride())
            .saturating_add(self.item_extent())
    }

    /// Elements of the surface, all items (`None` when the product overflows).
    fn checked_elements(&self) -> Option<usize> {
        (self.items as usize)
            .checked_mul(self.channel as usize)?
            .checked_mul(self.height as usize)?
            .checked_mul(self.width as usize)
    }

    /// Elements of a decoded surface (checked when decoding).
    fn elements(&self) -> usize {
        self.checked_elements().unwrap_or(usize::MAX)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.address_index.to_le_bytes());
        out.push(match self.precision {
            SurfacePrecision::Fp16 => 0,
            SurfacePrecision::Int8 => 1,
            SurfacePrecision::Float32 => 2,
        });
        out.push(self.channels_per_group);
        for v in [
            self.offset,
            self.size,
            self.channel,
            self.height,
            self.width,
            self.line_stride,
            self.surf_stride,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.scale.to_le_bytes());
        out.push(self.dims.len() as u8);
        out.push(u8::try_from(self.items).unwrap_or(u8::MAX));
        out.extend_from_slice(&[0; 2]);
        for k in 0..MAX_RANK {
            let d = self.dims.get(k).copied().unwrap_or(0) as u32;
            out.extend_from_slice(&d.to_le_bytes());
        }
        debug_assert_eq!(out.len() - start, BINDING_LEN);
    }

    fn decode(b: &[u8], what: &str) -> Result<Self, PartitionError> {
        let bad = |m: String| PartitionError::Descriptor(format!("{what}: {m}"));
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let precision = match b[2] {
            0 => SurfacePrecision::Fp16,
            1 => SurfacePrecision::Int8,
            2 => SurfacePrecision::Float32,
            p => return Err(bad(format!("precision {p} (0 fp16, 1 int8, 2 f32)"))),
        };
        let rank = usize::from(b[36]);
        if rank > MAX_RANK {
            return Err(bad(format!("rank {rank} above {MAX_RANK}")));
        }
        let t = TensorBinding {
            address_index: i16::from_le_bytes([b[0], b[1]]),
            precision,
            channels_per_group: b[3],
            offset: u32_at(4),
            size: u32_at(8),
            channel: u32_at(12),
            height: u32_at(16),
            width: u32_at(20),
            line_stride: u32_at(24),
            surf_stride: u32_at(28),
            scale: f32::from_bits(u32_at(32)),
            items: u32::from(b[37].max(1)),
            dims: (0..rank).map(|k| u32_at(40 + 4 * k) as usize).collect(),
        };
        if t.channels_per_group == 0 || t.channel == 0 || t.height == 0 || t.width == 0 {
            return Err(bad("an empty surface or no channels per group".into()));
        }
        let n = t
            .dims
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| bad("dimensions overflow".into()))?;
        if Some(n) != t.checked_elements() {
            return Err(bad(format!(
                "dimensions {:?} hold {n} elements, the surface of {} items of {}x{}x{} holds {}",
                t.dims,
                t.items,
                t.channel,
                t.height,
                t.width,
                t.elements()
            )));
        }
        // The compiler writes 1 for half-precision surfaces; a NaN would not even equal
        // itself (the fuzz target's round trip found one).
        if !(t.scale.is_finite() && t.scale > 0.0) {
            return Err(bad(format!("scale {}", t.scale)));
        }
        // Strides large enough that elements do not overlap.
        let atom = usize::from(t.channels_per_group) * t.bytes_per_element();
        let line = u64::from(t.width) * atom as u64;
        let plane = u64::from(t.height - 1) * u64::from(t.line_stride) + line;
        if (t.height > 1 && u64::from(t.line_stride) < line)
            || (t.channel > u32::from(t.channels_per_group) && u64::from(t.surf_stride) < plane)
        {
            return Err(bad(format!(
                "strides {}/{} below a {}x{} plane of {atom}-byte atoms",
                t.line_stride, t.surf_stride, t.height, t.width
            )));
        }
        if !t.size.is_multiple_of(t.items) {
            return Err(bad(format!(
                "{} bytes are not {} items of one size",
                t.size, t.items
            )));
        }
        if t.item_extent() > t.item_stride() {
            return Err(bad(format!(
                "an item's last element ends at byte {}, past its {} bytes",
                t.item_extent(),
                t.item_stride()
            )));
        }
        Ok(t)
    }
}

/// A partition: its boundary tensors and its ONNX model.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionDesc {
    /// Inputs, in the model's input order.
    pub inputs: Vec<TensorBinding>,
    /// Outputs, in the model's output order.
    pub outputs: Vec<TensorBinding>,
    /// The ONNX model (a serialized `ModelProto`).
    pub model: Vec<u8>,
}

impl PartitionDesc {
    /// The descriptor blob.
    pub fn encode(&self) -> Vec<u8> {
        let tensors = self.inputs.len() + self.outputs.len();
        let model_offset = HEADER_LEN + tensors * BINDING_LEN;
        let mut out = Vec::with_capacity(model_offset + self.model.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(self.inputs.len() as u16).to_le_bytes());
        out.extend_from_slice(&(self.outputs.len() as u16).to_le_bytes());
        out.extend_from_slice(&[0; 2]);
        out.extend_from_slice(&(model_offset as u32).to_le_bytes());
        out.extend_from_slice(&(self.model.len() as u32).to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        for t in self.inputs.iter().chain(&self.outputs) {
            t.encode(&mut out);
        }
        out.extend_from_slice(&self.model);
        out
    }

    /// Byte offset of binding `k` (inputs first, then outputs) in the blob.
    pub fn binding_offset(k: usize) -> usize {
        HEADER_LEN + k * BINDING_LEN
    }

    /// Decodes and checks a descriptor blob.
    pub fn decode(b: &[u8]) -> Result<Self, PartitionError> {
        let bad = |m: String| PartitionError::Descriptor(m);
        if b.len() < HEADER_LEN || &b[..4] != MAGIC {
            return Err(bad(format!("{} bytes without the `NVPT` header", b.len())));
        }
        let u16_at = |o: usize| usize::from(u16::from_le_bytes([b[o], b[o + 1]]));
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]) as usize;
        let version = u16_at(4) as u16;
        if version != FORMAT_VERSION {
            return Err(bad(format!(
                "format version {version}; this runtime reads {FORMAT_VERSION}"
            )));
        }
        let (ni, no) = (u16_at(6), u16_at(8));
        if no == 0 {
            return Err(bad(format!("{ni} inputs and no outputs")));
        }
        let table_end = HEADER_LEN + (ni + no) * BINDING_LEN;
        let (mo, ml) = (u32_at(12), u32_at(16));
        if mo < table_end || mo.checked_add(ml).is_none_or(|e| e > b.len()) {
            return Err(bad(format!(
                "model at {mo} ({ml} bytes) outside the {}-byte blob after its {} bindings",
                b.len(),
                ni + no
            )));
        }
        if b.len() < table_end {
            return Err(bad(format!("{} bindings past the blob's end", ni + no)));
        }
        let binding = |k: usize, what: String| {
            let o = Self::binding_offset(k);
            TensorBinding::decode(&b[o..o + BINDING_LEN], &what)
        };
        let inputs = (0..ni)
            .map(|k| binding(k, format!("input {k}")))
            .collect::<Result<_, _>>()?;
        let outputs = (0..no)
            .map(|k| binding(ni + k, format!("output {k}")))
            .collect::<Result<_, _>>()?;
        Ok(PartitionDesc {
            inputs,
            outputs,
            model: b[mo..mo + ml].to_vec(),
        })
    }
}

/// A loaded, optimized model.
type Plan = Arc<TypedRunnableModel>;

/// A model's bytes and the dimensions of its inputs.
type PlanKey = (Vec<u8>, Vec<Vec<usize>>);
/// Plans by model and input dimensions.
type PlanCache = Mutex<HashMap<PlanKey, Plan>>;
/// Values of a model's inputs or outputs: dimensions and f32 elements.
pub type Values = Vec<(Vec<usize>, Vec<f32>)>;

/// Models already loaded, by model bytes and input dimensions: a partition is optimized
/// once per process, not once per inference.
fn cache() -> &'static PlanCache {
    static CACHE: OnceLock<PlanCache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Runs `f`, turning a panic inside tract into an error (a model from a loadable is
/// untrusted input).
fn guarded<T>(f: impl FnOnce() -> Result<T, PartitionError>) -> Result<T, PartitionError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        Err(PartitionError::Model(format!("tract failed: {why}")))
    })
}

fn typed_model(model: &[u8], input_dims: &[Vec<usize>]) -> Result<TypedModel, PartitionError> {
    guarded(|| typed_model_unguarded(model, input_dims))
}

/// Largest axis index an attribute may name: tensors of a partition have at most a few
/// dimensions, and tract sizes some tables by the largest axis it is given (a `perm` of
/// `2^30` from damaged model bytes allocated 8 GB).
const MAX_AXIS: i64 = 64;

/// Refuses attributes no model of ours has and tract would trust: axis indices (`axis`,
/// `axes`, `perm`) beyond [`MAX_AXIS`], and sub-graphs.
fn check_model(m: &tract_onnx::pb::ModelProto) -> Result<(), PartitionError> {
    let graph = m
        .graph
        .as_ref()
        .ok_or_else(|| PartitionError::Model("the model has no graph".into()))?;
    for n in &graph.node {
        for a in &n.attribute {
            let axes = matches!(a.name.as_str(), "axis" | "axes" | "perm");
            if axes && (a.i.abs() > MAX_AXIS || a.ints.iter().any(|v| v.abs() > MAX_AXIS)) {
                return Err(PartitionError::Model(format!(
                    "node `{}` ({}): attribute `{}` names an axis beyond {MAX_AXIS}",
                    n.name, n.op_type, a.name
                )));
            }
            // tract follows a transpose's cycles: a `perm` that is not a permutation
            // loops until memory runs out.
            if a.name == "perm" {
                let mut v = a.ints.clone();
                v.sort_unstable();
                if v.iter().enumerate().any(|(k, &x)| x != k as i64) {
                    return Err(PartitionError::Model(format!(
                        "node `{}` ({}): `perm` {:?} is not a permutation",
                        n.name, n.op_type, a.ints
                    )));
                }
            }
            if a.g.is_some() || !a.graphs.is_empty() {
                return Err(PartitionError::Model(format!(
                    "node `{}` ({}): sub-graphs are not run in partitions",
                    n.name, n.op_type
                )));
            }
        }
    }
    Ok(())
}

/// The tract type of ONNX integer element type `t` (`TensorProto.DataType`).
fn integer_datum_type(t: i32) -> Option<DatumType> {
    Some(match t {
        2 => DatumType::U8,
        3 => DatumType::I8,
        4 => DatumType::U16,
        5 => DatumType::I16,
        6 => DatumType::I32,
        7 => DatumType::I64,
        9 => DatumType::Bool,
        12 => DatumType::U32,
        13 => DatumType::U64,
        _ => return None,
    })
}

fn typed_model_unguarded(
    model: &[u8],
    input_dims: &[Vec<usize>],
) -> Result<TypedModel, PartitionError> {
    let onnx = tract_onnx::onnx();
    let proto = onnx
        .proto_model_for_read(&mut &model[..])
        .map_err(model_err)?;
    check_model(&proto)?;
    // Inputs are FLOAT, or the integer type an integer network input declares (the
    // runtime reads it as whole numbers in binary32 and casts it).
    let declared: Vec<DatumType> = proto
        .graph
        .as_ref()
        .map(|g| {
            g.input
                .iter()
                .map(|i| {
                    let t = i
                        .r#type
                        .as_ref()
                        .and_then(|t| t.value.as_ref())
                        .map(|tract_onnx::pb::type_proto::Value::TensorType(t)| t.elem_type)
                        .unwrap_or(1);
                    integer_datum_type(t).unwrap_or(DatumType::F32)
                })
                .collect()
        })
        .unwrap_or_default();
    let mut m = onnx.model_for_proto_model(&proto).map_err(model_err)?;
    for (k, d) in input_dims.iter().enumerate() {
        let dt = declared.get(k).copied().unwrap_or(DatumType::F32);
        m = m
            .with_input_fact(k, dt.fact(d.as_slice()).into())
            .map_err(model_err)?;
    }
    m.into_typed().map_err(model_err)
}

fn plan(model: &[u8], input_dims: &[Vec<usize>]) -> Result<Plan, PartitionError> {
    let key = (model.to_vec(), input_dims.to_vec());
    if let Some(p) = cache().lock().ok().and_then(|c| c.get(&key).cloned()) {
        return Ok(p);
    }
    let p = guarded(|| {
        typed_model_unguarded(model, input_dims)?
            .into_optimized()
            .map_err(model_err)?
            .into_runnable()
            .map_err(model_err)
    })?;
    if let Ok(mut c) = cache().lock() {
        c.insert(key, p.clone());
    }
    Ok(p)
}

/// The dimensions and whether the element type is a floating-point one, of each output of
/// `model` fed inputs of `input_dims` (f32), as tract infers them.
pub fn output_facts(
    model: &[u8],
    input_dims: &[Vec<usize>],
) -> Result<Vec<(Vec<usize>, bool)>, PartitionError> {
    let m = typed_model(model, input_dims)?;
    (0..m.output_outlets().map_err(model_err)?.len())
        .map(|k| {
            let f = m.output_fact(k).map_err(model_err)?;
            let dims = f
                .shape
                .as_concrete()
                .ok_or_else(|| {
                    PartitionError::Model(format!("output {k} has symbolic shape {:?}", f.shape))
                })?
                .to_vec();
            Ok((dims, f.datum_type.is_float()))
        })
        .collect()
}

/// Multiply-accumulates of one run of `model` fed inputs of `input_dims`, as tract counts
/// them (its operators' fused multiply-add costs).
pub fn macs(model: &[u8], input_dims: &[Vec<usize>]) -> Result<u64, PartitionError> {
    let m = typed_model(model, input_dims)?;
    let mut total = 0u64;
    for node in m.nodes() {
        let facts = m.node_input_facts(node.id).map_err(model_err)?;
        for (cost, n) in node.op.cost(&facts).map_err(model_err)? {
            if matches!(cost, tract_onnx::tract_core::ops::Cost::FMA(_)) {
                total += n.to_i64().unwrap_or(0).max(0) as u64;
            }
        }
    }
    Ok(total)
}

/// Runs `model` on f32 inputs of the given dimensions; every output as f32 with its
/// dimensions.
pub fn eval(model: &[u8], inputs: &[(Vec<usize>, &[f32])]) -> Result<Values, PartitionError> {
    let dims: Vec<Vec<usize>> = inputs.iter().map(|(d, _)| d.clone()).collect();
    let p = plan(model, &dims)?;
    let tensors: TVec<TValue> = inputs
        .iter()
        .enumerate()
        .map(|(k, (d, v))| {
            let t = Tensor::from_shape(d, v)?;
            let dt = p.model().input_fact(k)?.datum_type;
            Ok(if dt == DatumType::F32 {
                t
            } else {
                t.cast_to_dt(dt)?.into_owned()
            }
            .into_tvalue())
        })
        .collect::<TractResult<_>>()
        .map_err(model_err)?;
    let out = guarded(|| p.run(tensors).map_err(model_err))?;
    out.iter()
        .map(|t| {
            let f = t.cast_to::<f32>().map_err(model_err)?;
            Ok((
                t.shape().to_vec(),
                f.to_plain_array_view::<f32>()
                    .map_err(model_err)?
                    .iter()
                    .copied()
                    .collect(),
            ))
        })
        .collect()
}

fn surface<'m>(
    mem: &'m mut dyn SlotMemory,
    t: &TensorBinding,
    dir: &'static str,
    index: usize,
) -> Result<&'m mut [u8], PartitionError> {
    let err = |reason: String| PartitionError::Memory { dir, index, reason };
    let slot = usize::try_from(t.address_index)
        .ok()
        .filter(|&s| s < mem.slot_count())
        .ok_or_else(|| {
            err(format!(
                "address-list slot {} does not exist",
                t.address_index
            ))
        })?;
    let window = mem
        .slot(slot)
        .ok_or_else(|| err(format!("slot {slot} has no host-visible memory")))?;
    let start = t.offset as usize;
    // The extent is at most `size` (a u32), checked when decoding.
    let end = start.saturating_add(t.extent() as usize);
    let len = window.len();
    window.get_mut(start..end).ok_or_else(|| {
        err(format!(
            "bytes {start}..{end} outside the {len} bytes of slot {slot}"
        ))
    })
}

/// Byte offsets of `t`'s elements in dense order: item, channel, line, pixel.
fn element_offsets(t: &TensorBinding) -> impl Iterator<Item = usize> + '_ {
    let (c, h, w) = (t.channel as usize, t.height as usize, t.width as usize);
    (0..t.items as usize).flat_map(move |item| {
        let base = item * t.item_stride() as usize;
        (0..c).flat_map(move |ch| {
            (0..h)
                .flat_map(move |y| (0..w).map(move |x| base + t.element_offset(ch, y, x) as usize))
        })
    })
}

/// Reads a boundary surface as dense f32 values in item, channel, line, pixel order.
fn read_surface(bytes: &[u8], t: &TensorBinding) -> Vec<f32> {
    element_offsets(t)
        .map(|o| match t.precision {
            SurfacePrecision::Fp16 => f16_to_f32(u16::from_le_bytes([bytes[o], bytes[o + 1]])),
            SurfacePrecision::Int8 => f32::from(bytes[o] as i8) * t.scale,
            SurfacePrecision::Float32 => {
                f32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]])
            }
        })
        .collect()
}

/// Writes dense f32 values (item, channel, line, pixel order) into a boundary surface.
fn write_surface(bytes: &mut [u8], t: &TensorBinding, v: &[f32]) {
    for (o, &x) in element_offsets(t).zip(v) {
        match t.precision {
            SurfacePrecision::Fp16 => {
                bytes[o..o + 2].copy_from_slice(&f32_to_f16_even(x).to_le_bytes());
            }
            SurfacePrecision::Int8 => {
                let q = f64::from(x) / f64::from(t.scale);
                let q = if q.is_nan() {
                    0
                } else {
                    q.round_ties_even().clamp(-128.0, 127.0) as i8
                };
                bytes[o] = q as u8;
            }
            SurfacePrecision::Float32 => {
                bytes[o..o + 4].copy_from_slice(&x.to_le_bytes());
            }
        }
    }
}

/// Runs a partition: reads its inputs from the task's memory, runs the model, writes its
/// outputs.
pub fn run(desc: &PartitionDesc, mem: &mut dyn SlotMemory) -> Result<(), PartitionError> {
    let mut values = Vec::with_capacity(desc.inputs.len());
    for (k, t) in desc.inputs.iter().enumerate() {
        let v = read_surface(surface(mem, t, "input", k)?, t);
        // An integer input: whole numbers (the partition casts them to its type).
        if t.precision == SurfacePrecision::Float32 {
            if let Some((i, x)) = v.iter().enumerate().find(|(_, x)| x.fract() != 0.0) {
                return Err(PartitionError::Memory {
                    dir: "input",
                    index: k,
                    reason: format!("element {i} is {x}: an integer input holds whole numbers"),
                });
            }
        }
        values.push(v);
    }
    let inputs: Vec<(Vec<usize>, &[f32])> = desc
        .inputs
        .iter()
        .zip(&values)
        .map(|(t, v)| (t.dims.clone(), v.as_slice()))
        .collect();
    let outs = eval(&desc.model, &inputs)?;
    if outs.len() != desc.outputs.len() {
        return Err(PartitionError::Model(format!(
            "{} outputs, the descriptor binds {}",
            outs.len(),
            desc.outputs.len()
        )));
    }
    for (k, (t, (dims, v))) in desc.outputs.iter().zip(&outs).enumerate() {
        if v.len() != t.elements() {
            return Err(PartitionError::Memory {
                dir: "output",
                index: k,
                reason: format!(
                    "the model gave {dims:?}, the surface holds {}x{}x{}",
                    t.channel, t.height, t.width
                ),
            });
        }
        // A finite value beyond half precision would reach the engines as infinity: the
        // network's result would be wrong with nothing to say so (an STFT's power
        // spectrum of int16-scale audio, 2.9e11, fed to a product on NVDLA).
        if t.precision == SurfacePrecision::Fp16 {
            let over = v
                .iter()
                .filter(|x| x.is_finite() && x.abs() > HALF_MAX)
                .count();
            if over > 0 {
                let peak = v
                    .iter()
                    .filter(|x| x.is_finite())
                    .fold(0f32, |m, x| m.max(x.abs()));
                return Err(PartitionError::Memory {
                    dir: "output",
                    index: k,
                    reason: format!(
                        "{over} of {} values are beyond half precision (largest magnitude \
                         {peak:e}, half holds {HALF_MAX}): the engines reading it would see \
                         infinities; scale the network's input down or keep the reader on \
                         the CPU",
                        v.len()
                    ),
                });
            }
        }
        write_surface(surface(mem, t, "output", k)?, t, v);
    }
    Ok(())
}

/// The descriptor an operation container of type [`FALLBACK_PARTITION`] names: its
/// address-list slot and size.
pub fn container_desc(container: &[u8]) -> Option<(i16, u32)> {
    (container.len() >= 8 && container[0] == FALLBACK_PARTITION).then(|| {
        (
            i16::from_le_bytes([container[2], container[3]]),
            u32::from_le_bytes([container[4], container[5], container[6], container[7]]),
        )
    })
}

/// The 24-byte operation container naming the descriptor at `slot` of `size` bytes.
pub fn container(slot: i16, size: u32) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[0] = FALLBACK_PARTITION;
    b[2..4].copy_from_slice(&slot.to_le_bytes());
    b[4..8].copy_from_slice(&size.to_le_bytes());
    b
}
