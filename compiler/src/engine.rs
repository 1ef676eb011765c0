//! The engine program: what the lowering produces and the emitter serialises.
//!
//! Hardware operations ([`HwOp`]) in execution order, the feature surfaces they read and
//! write ([`Surface`]), and the constant blobs (weights, operands) they reference. The
//! memory plan fills in where each surface and blob lives.

use crate::ir::Shape;
use crate::target::Precision;
use std::fmt::Write as _;

/// Index of a surface in [`Program::surfaces`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SurfId(pub usize);

/// Index of a constant blob in [`Program::blobs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlobId(pub usize);

/// Where a surface lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SurfKind {
    /// An intermediate activation in the shared activation pool.
    Pool,
    /// Network input number `n` (its own memory, filled by the runtime).
    Input(usize),
    /// Network output number `n` (its own memory, read by the runtime).
    Output(usize),
    /// Passed from a convolution's SDP to the PDP on the fly ([`crate::fly`]): never in
    /// memory.
    OnTheFly,
    /// A window of another surface: channels `channel_offset..` (concatenation without
    /// copies) and/or pixels from (`x`, `y`) (a cropped deconvolution result), read and
    /// written with the parent's strides.
    View {
        /// The surface it is part of.
        parent: SurfId,
        /// First channel (a multiple of the channels per atom).
        channel_offset: u32,
        /// First column.
        x: u32,
        /// First line.
        y: u32,
    },
}

/// A feature surface (NCxHWx: atoms of channels, then lines, then surfaces).
#[derive(Debug, Clone, PartialEq)]
pub struct Surface {
    /// Name (the IR tensor it holds).
    pub name: String,
    /// Channels, height, width (batch 1).
    pub c: u32,
    /// Height.
    pub h: u32,
    /// Width.
    pub w: u32,
    /// Element precision.
    pub precision: Precision,
    /// Where it lives.
    pub kind: SurfKind,
    /// Bytes between lines.
    pub line_stride: u32,
    /// Bytes between surfaces (groups of channels-per-atom channels).
    pub surf_stride: u32,
    /// Bytes in all.
    pub size: u32,
    /// Byte offset in its memory (after planning; views: parent offset + their start).
    pub offset: u64,
    /// int8: the real value of one LSB (`real = q * scale`); 1 for fp16.
    pub scale: f32,
    /// int8: a scale per channel instead (`real = q * channel_scales[c]`, each at most
    /// `scale`), on activations calibrated channel by channel
    /// ([`crate::Options::channel_scales`]). Set on the surface that owns the memory;
    /// [`Program::channel_scales`] gives a view's share.
    pub channel_scales: Option<Vec<f32>>,
    /// Batch items held back to back (network inputs and outputs of a batch > 1, whose
    /// items the operations read and write through views; `size` covers all of them).
    pub batch: u32,
    /// A pitch-linear image of 4 components per pixel (`A8B8G8R8` in int8,
    /// `A16B16G16R16_F` in fp16) instead of a feature cube: a network input read in image
    /// mode ([`crate::lower::image`]).
    pub pixel: bool,
    /// A pool surface placed in CV-SRAM by the memory plan ([`crate::Options::cvsram`]):
    /// its bytes are in the SRAM pool, and the engines address it as `CV`. Views follow
    /// their root.
    pub sram: bool,
    /// A network input of integers (`Graph::integer_inputs`): whole numbers in IEEE
    /// binary32 (exact to 2^24: byte values, token ids of any vocabulary), 8 channels of
    /// 4 bytes per 32-byte atom (the feature layout, hwarch "Feature Data Format"; the
    /// `.dimg` format `D_F32_CxHWx_x8_F`) whatever the build's precision and atom. Only
    /// CPU partitions read it. Also a network output a CPU partition writes and nothing
    /// else reads (any binary32 values, as the partition computed them).
    pub integer: bool,
}

/// Bytes of an atom of [`Surface::integer`] surfaces.
pub const INTEGER_ATOM: u32 = 32;
/// Bytes of an element of [`Surface::integer`] surfaces.
pub const INTEGER_BYTES: u32 = 4;
/// Channels per atom of [`Surface::integer`] surfaces.
pub const INTEGER_CHANNELS_PER_ATOM: u32 = INTEGER_ATOM / INTEGER_BYTES;

impl Surface {
    /// The shape `1 x c x h x w`.
    pub fn shape(&self) -> Shape {
        Shape::new(1, self.c as usize, self.h as usize, self.w as usize)
    }
}

/// A constant blob: packed weights or operand data, in device layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Blob {
    /// What it is (for dumps).
    pub name: String,
    /// Bytes.
    pub data: Vec<u8>,
    /// Offset in the weight memory (after planning).
    pub offset: u64,
}

/// A per-layer or stored operand of an SDP stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Operand {
    /// One value for the whole layer (already in the operand's register encoding).
    PerLayer(i32),
    /// One value (or ALU/MUL pair) per channel, from a blob.
    PerChannel(BlobId),
    /// One value per element, from a surface of the output's shape.
    PerElement(SurfId),
    /// One value per channel, from a computed `C x 1 x 1` surface (squeeze-and-excitation's
    /// `x * s`): the read DMA's per-kernel mode, whose `C` values lie back to back as in
    /// a dense `1 x 1` feature cube.
    PerChannelSurface(SurfId),
}

impl Operand {
    /// The computed surface the operand is read from, if any.
    pub fn surface(&self) -> Option<SurfId> {
        match *self {
            Operand::PerElement(id) | Operand::PerChannelSurface(id) => Some(id),
            Operand::PerLayer(_) | Operand::PerChannel(_) => None,
        }
    }

    /// The operand for element-wise combination with surface `other` of `p`: per channel
    /// when `other` is a single pixel (a vector broadcast over the pixels; for a
    /// single-pixel main input the two modes read the same values).
    pub fn of_surface(p: &Program, other: SurfId) -> Self {
        let s = p.surface(other);
        if s.h == 1 && s.w == 1 {
            Operand::PerChannelSurface(other)
        } else {
            Operand::PerElement(other)
        }
    }
}

/// What one SDP stage computes: `act((x alu a) * m)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SdpStage {
    /// `SDP_OP_*`: ADD (ALU only), MUL, BOTH.
    pub op_type: nvdla_loadable::dla::SdpOpType,
    /// ALU function.
    pub alu_type: nvdla_loadable::dla::SdpAluType,
    /// Where the operands come from (both ALU and MUL, interleaved for BOTH).
    pub operand: Operand,
    /// Per-layer ALU operand when `operand` is not per layer: unused (0).
    pub alu_value: i32,
    /// Per-layer multiplier operand (register encoding) when `operand` is per layer.
    pub mul_value: i32,
    /// Activation after the stage.
    pub act: nvdla_loadable::dla::Activation,
    /// Left shift of the ALU operand (int8).
    pub shift: u8,
    /// Right shift after the multiplier (int8).
    pub truncate: u8,
    /// Operand element precision (int8 one byte, int16 two, fp16).
    pub operand_precision: nvdla_loadable::dla::Precision,
}

/// An SDP operation (fused behind a convolution or reading memory).
#[derive(Debug, Clone, PartialEq)]
pub struct SdpOp {
    /// Input surface, or `None` when fed by the convolution it is fused with.
    pub src: Option<SurfId>,
    /// Output surface.
    pub dst: SurfId,
    /// X1 (BS), X2 (BN), Y (EW) stages.
    pub stages: [Option<SdpStage>; 3],
    /// Index in [`Program::luts`] of the LUT the Y stage applies, if any.
    pub lut: Option<usize>,
    /// int8 output converter `(scale, shift)`: `out = v * scale >> shift`, saturated.
    pub out_cvt: Option<(i16, u8)>,
}

/// A direct convolution (fully connected layers are convolutions too).
#[derive(Debug, Clone, PartialEq)]
pub struct ConvOp {
    /// Input surface.
    pub src: SurfId,
    /// Kernel `[h, w]`.
    pub kernel: [u32; 2],
    /// Stride `[h, w]`.
    pub stride: [u32; 2],
    /// Padding `[top, left, bottom, right]`.
    pub pad: [u32; 4],
    /// Dilation `[h, w]`.
    pub dilation: [u32; 2],
    /// Kernels (output channels).
    pub kernels: u32,
    /// Kernel channels (= input channels).
    pub channels: u32,
    /// Output `[h, w]`.
    pub out: [u32; 2],
    /// Packed weights.
    pub weights: BlobId,
    /// Bytes per kernel.
    pub bytes_per_kernel: u32,
    /// CBUF banks for input data.
    pub data_banks: u32,
    /// CBUF banks for weights.
    pub weight_banks: u32,
    /// Entries per input slice.
    pub entries_per_slice: u32,
    /// Reuse the input data already in CBUF (split convolutions).
    pub data_reuse: bool,
    /// Keep the input data in CBUF after this operation.
    pub skip_data_release: bool,
    /// Winograd mode (`None`: direct convolution).
    pub winograd: Option<Winograd>,
    /// Image-mode input (`None`: feature input).
    pub image: Option<crate::lower::image::ImageConv>,
    /// Sparse-compressed weights (`weights` then holds the stored elements;
    /// [`crate::compress`]).
    pub compressed: Option<CompressedWeights>,
    /// The SDP operation fed on the fly.
    pub sdp: SdpOp,
}

/// The side surfaces of compressed weights ([`crate::compress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressedWeights {
    /// One mask bit per weight element.
    pub wmb: BlobId,
    /// Stored bytes per kernel group.
    pub wgs: BlobId,
}

/// What a Winograd convolution (F(2x2, 3x3), nv_full; docs/research/winograd.md) programs
/// beyond a direct one. The weights are 4x4 tiles `G g Gᵀ` per kernel and channel, and
/// `bytes_per_kernel` is `16 · channels[2] · bpe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Winograd {
    /// The output `[h, w]` CACC and SDP produce: the real one rounded up to multiples of 4
    /// (at least 8, programming guide "Winograd"). The destination surface's lines and
    /// planes hold it; the rows and columns past the real output are scratch.
    pub out: [u32; 2],
    /// The input cube CSC sees, `[w, h, c]`: the output plus 4 in each direction after
    /// CDMA pads it, and the channels rounded up to whole memory atoms.
    pub ext: [u32; 3],
    /// CDMA's padding `[top, left, bottom, right]`: the layer's top and left, the bottom
    /// and right that make the extended input.
    pub pad: [u32; 4],
    /// `D_PRA_CFG.PRA_TRUNCATE`: integer input tiles `Bᵀ d B` shifted right by this much
    /// before saturating to the precision (0 for fp16).
    pub pra_truncate: u8,
}

/// Pooling on PDP.
#[derive(Debug, Clone, PartialEq)]
pub struct PdpOp {
    /// Input.
    pub src: SurfId,
    /// Output.
    pub dst: SurfId,
    /// Max or average.
    pub max: bool,
    /// Kernel `[h, w]` (1..=8).
    pub kernel: [u32; 2],
    /// Stride `[h, w]`.
    pub stride: [u32; 2],
    /// Padding `[top, left, bottom, right]`.
    pub pad: [u32; 4],
    /// Padding value (register encoding) for average pooling.
    pub pad_value: i32,
}

/// Local response normalisation on CDP.
#[derive(Debug, Clone, PartialEq)]
pub struct CdpOp {
    /// Input.
    pub src: SurfId,
    /// Output.
    pub dst: SurfId,
    /// Window in channels.
    pub local_size: u32,
    /// Index of the LUT in [`Program::luts`].
    pub lut: usize,
    /// Output converter `(scale, shift)`: `(1, 0)` in fp16; in int8 it takes the LUT
    /// entry times the input to the output's scale.
    pub out_cvt: (i16, u8),
    /// A lookup of each element alone (`SQSUM_BYPASS` and `MUL_BYPASS`): the table's
    /// entry for the input value is the output (lower/table.rs); otherwise LRN.
    pub lookup: bool,
}

/// RUBIK contract: the phases of a strided deconvolution (computed as one convolution
/// with `stride_x * stride_y` groups of channels) interleaved into the full output.
#[derive(Debug, Clone, PartialEq)]
pub struct RubikOp {
    /// The phase cube.
    pub src: SurfId,
    /// The full deconvolution output.
    pub dst: SurfId,
    /// Deconvolution stride `[h, w]`.
    pub stride: [u32; 2],
}

/// A CPU (EMU) operation.
#[derive(Debug, Clone, PartialEq)]
pub enum CpuOp {
    /// Softmax over channels of a `1 x C x 1 x 1` cube.
    Softmax {
        /// Input.
        src: SurfId,
        /// Output.
        dst: SurfId,
    },
    /// A CPU fallback element-wise function (`--cpu-fallback`; the runtime's EMU op type
    /// `nvdla_umd::emu::FALLBACK_UNARY`).
    Unary {
        /// Input.
        src: SurfId,
        /// Output (same shape).
        dst: SurfId,
        /// The function.
        func: nvdla_umd::emu::FallbackFn,
        /// First parameter.
        alpha: f32,
        /// Second parameter.
        beta: f32,
    },
    /// An ONNX partition run by the runtime with tract (`--cpu-fallback`; EMU op type
    /// `nvdla_umd::partition::FALLBACK_PARTITION`).
    Partition {
        /// Inputs, in the partition's order.
        inputs: Vec<SurfId>,
        /// Outputs, in the partition's order.
        outputs: Vec<SurfId>,
        /// The model and the ONNX dimensions of its inputs and outputs.
        partition: std::sync::Arc<crate::ir::CpuPartition>,
    },
}

impl CpuOp {
    /// Input surfaces.
    pub fn reads(&self) -> Vec<SurfId> {
        match self {
            CpuOp::Softmax { src, .. } | CpuOp::Unary { src, .. } => vec![*src],
            CpuOp::Partition { inputs, .. } => inputs.clone(),
        }
    }
    /// Output surfaces.
    pub fn writes(&self) -> Vec<SurfId> {
        match self {
            CpuOp::Softmax { dst, .. } | CpuOp::Unary { dst, .. } => vec![*dst],
            CpuOp::Partition { outputs, .. } => outputs.clone(),
        }
    }
    /// Whether it is a CPU fallback operation (which NVIDIA's runtime does not run).
    pub fn is_fallback(&self) -> bool {
        matches!(self, CpuOp::Unary { .. } | CpuOp::Partition { .. })
    }
}

/// The engine that runs an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Engine {
    /// Convolution pipeline (with its fused SDP).
    Conv,
    /// SDP from memory.
    Sdp,
    /// PDP.
    Pdp,
    /// CDP.
    Cdp,
    /// RUBIK.
    Rubik,
    /// The CPU (EMU task).
    Cpu,
}

/// One hardware (or CPU) operation.
#[derive(Debug, Clone, PartialEq)]
pub enum HwOpKind {
    /// Convolution + SDP.
    Conv(ConvOp),
    /// SDP reading memory.
    Sdp(SdpOp),
    /// Pooling.
    Pdp(PdpOp),
    /// LRN.
    Cdp(CdpOp),
    /// Deconvolution reshuffle.
    Rubik(RubikOp),
    /// CPU.
    Cpu(CpuOp),
}

/// An operation and the source layers it implements.
#[derive(Debug, Clone, PartialEq)]
pub struct HwOp {
    /// Names of the IR nodes folded into it.
    pub layers: Vec<String>,
    /// What it does.
    pub kind: HwOpKind,
}

impl HwOp {
    /// The engine it runs on.
    pub fn engine(&self) -> Engine {
        match self.kind {
            HwOpKind::Conv(_) => Engine::Conv,
            HwOpKind::Sdp(_) => Engine::Sdp,
            HwOpKind::Pdp(_) => Engine::Pdp,
            HwOpKind::Cdp(_) => Engine::Cdp,
            HwOpKind::Rubik(_) => Engine::Rubik,
            HwOpKind::Cpu(_) => Engine::Cpu,
        }
    }

    /// Surfaces read.
    pub fn reads(&self) -> Vec<SurfId> {
        let sdp_reads = |s: &SdpOp| {
            let mut v: Vec<SurfId> = s.src.into_iter().collect();
            v.extend(
                s.stages
                    .iter()
                    .flatten()
                    .filter_map(|st| st.operand.surface()),
            );
            v
        };
        match &self.kind {
            HwOpKind::Conv(c) => {
                let mut v = vec![c.src];
                v.extend(sdp_reads(&c.sdp));
                v
            }
            HwOpKind::Sdp(s) => sdp_reads(s),
            HwOpKind::Pdp(p) => vec![p.src],
            HwOpKind::Cdp(c) => vec![c.src],
            HwOpKind::Rubik(r) => vec![r.src],
            HwOpKind::Cpu(c) => c.reads(),
        }
    }

    /// Surface written.
    pub fn writes(&self) -> Vec<SurfId> {
        match &self.kind {
            HwOpKind::Conv(c) => vec![c.sdp.dst],
            HwOpKind::Sdp(s) => vec![s.dst],
            HwOpKind::Pdp(p) => vec![p.dst],
            HwOpKind::Cdp(c) => vec![c.dst],
            HwOpKind::Rubik(r) => vec![r.dst],
            HwOpKind::Cpu(c) => c.writes(),
        }
    }
}

/// A compiled network before serialisation.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// Feature surfaces.
    pub surfaces: Vec<Surface>,
    /// Constant blobs (weights and operands).
    pub blobs: Vec<Blob>,
    /// LUTs for SDP/CDP.
    pub luts: Vec<nvdla_loadable::dla::LutParam>,
    /// Operations in execution order.
    pub ops: Vec<HwOp>,
    /// Network inputs, in binding order.
    pub inputs: Vec<SurfId>,
    /// Network outputs, in binding order.
    pub outputs: Vec<SurfId>,
    /// Bytes of the activation pool (after planning).
    pub pool_size: u64,
    /// Bytes of the activation pool in CV-SRAM (after planning; 0 without one).
    pub sram_pool_size: u64,
    /// Bytes of the weight memory (after planning).
    pub weight_size: u64,
}

impl Program {
    /// Add a surface; returns its id.
    pub fn add_surface(&mut self, s: Surface) -> SurfId {
        self.surfaces.push(s);
        SurfId(self.surfaces.len() - 1)
    }

    /// Add a blob; returns its id.
    pub fn add_blob(&mut self, name: impl Into<String>, data: Vec<u8>) -> BlobId {
        self.blobs.push(Blob {
            name: name.into(),
            data,
            offset: 0,
        });
        BlobId(self.blobs.len() - 1)
    }

    /// The surface `id`.
    pub fn surface(&self, id: SurfId) -> &Surface {
        &self.surfaces[id.0]
    }

    /// int8: the per-channel scales of `id`'s channels, if its memory holds an
    /// activation with a scale per channel ([`Surface::channel_scales`]).
    pub fn channel_scales(&self, id: SurfId) -> Option<Vec<f32>> {
        let c = self.surface(id).c as usize;
        let mut offset = 0usize;
        let mut at = id;
        loop {
            let s = self.surface(at);
            match s.kind {
                SurfKind::View {
                    parent,
                    channel_offset,
                    ..
                } => {
                    offset += channel_offset as usize;
                    at = parent;
                }
                _ => {
                    return s
                        .channel_scales
                        .as_ref()?
                        .get(offset..offset + c)
                        .map(<[f32]>::to_vec)
                }
            }
        }
    }

    /// The surface that owns `id`'s memory (itself unless it is a view).
    pub fn root(&self, mut id: SurfId) -> SurfId {
        while let SurfKind::View { parent, .. } = self.surfaces[id.0].kind {
            id = parent;
        }
        id
    }

    /// Operations per engine, for the summary line.
    pub fn count(&self, e: Engine) -> usize {
        self.ops.iter().filter(|o| o.engine() == e).count()
    }

    /// A text listing of the operations (for `--dump-graph`).
    pub fn dump(&self) -> String {
        let mut out = String::new();
        let s = |id: SurfId| {
            let x = self.surface(id);
            format!("{}[{}x{}x{}]", x.name, x.c, x.h, x.w)
        };
        for (i, op) in self.ops.iter().enumerate() {
            let _ = write!(out, "{i:3} {:?} ({}): ", op.engine(), op.layers.join("+"));
            let reads: Vec<String> = op.reads().into_iter().map(s).collect();
            let writes: Vec<String> = op.writes().into_iter().map(s).collect();
            let _ = writeln!(out, "{} -> {}", reads.join(", "), writes.join(", "));
        }
        out
    }
}
