//! Lowering: the network IR to engine operations for one target.
//!
//! Convolutions and fully connected layers become CONV+SDP pairs, and the element-wise
//! layers that follow them (bias, per-channel affine, ReLU/PReLU, element-wise sums) fold
//! into the SDP's X1/X2/Y stages; element-wise layers with no convolution to ride on become
//! SDP operations reading memory; pooling goes to PDP; softmax to the CPU. Concatenation
//! places its producers into one surface (views), with no copy. Every parameter comes from
//! the [`Target`]; nothing here tests a configuration by name.

mod batch;
mod batch_stages;
mod channel_scales;
mod conv;
mod cpu;
mod crop;
mod deconv;
mod edge_pad;
mod elementwise;
pub mod image;
mod lrn;
mod pool;
mod prepare;
pub(crate) mod table;
pub mod winograd;

use crate::engine::*;
use crate::error::{CompileError, Result};
use crate::ir::{Activation, EltwiseKind, Graph, Node, Op, TensorId};
use crate::quant::Calibration;
use crate::sdp::{SdpStages, Stage};
use crate::target::{Precision, Target};
pub(crate) use conv::stride_split;
use prepare::{
    check_batch, check_cube_limits, concat_views, fit_coefficients, place_concats, split_eltwise,
};
use std::collections::{HashMap, HashSet};

/// An SDP's encoded stages and, in int8, its output converter.
type EncodedSdp = ([Option<crate::engine::SdpStage>; 3], Option<(i16, u8)>);

/// int8 quantization inputs of the lowering.
#[derive(Debug, Clone, Copy)]
pub struct Quant<'a> {
    /// Per-tensor scales (required for int8).
    pub cal: Option<&'a Calibration>,
    /// One weight scale per output channel (`per-filter`) instead of per layer
    /// (`per-kernel`, upstream's default).
    pub per_filter: bool,
    /// Scale of a network input the calibration does not cover: the runtime feeds an int8
    /// input as `round(pixel * 127 / 255)`, so with inputs meaning `pixel / normalize` this
    /// is `255 / (127 * normalize)`.
    pub input_scale: f32,
}

impl Default for Quant<'_> {
    fn default() -> Self {
        Self {
            cal: None,
            per_filter: true,
            input_scale: 255.0 / 127.0,
        }
    }
}

/// Choices of a lowering besides the target and the scales.
#[derive(Debug, Clone, Copy, Default)]
pub struct Settings {
    /// Operations no engine runs become CPU operations ([`crate::Options::cpu_fallback`]).
    pub cpu_fallback: bool,
    /// Winograd convolution where it applies ([`crate::Options::winograd`]).
    pub winograd: bool,
    /// Image-mode input where it applies ([`crate::Options::image_input`]).
    pub image_input: bool,
}

/// Lower `g` for `t`.
pub fn lower(g: &Graph, t: &Target, q: &Quant<'_>) -> Result<Program> {
    lower_with(g, t, q, Settings::default())
}

/// Lower `g` for `t` with `settings`.
pub fn lower_with(g: &Graph, t: &Target, q: &Quant<'_>, settings: Settings) -> Result<Program> {
    check_batch(g)?;
    let (split, partials) = split_eltwise(g);
    let split = fit_coefficients(split, t);
    let (placed, like) = place_concats(&split, t);
    let g = &placed;
    if t.precision == Precision::Int8 && q.cal.is_none() {
        return Err(CompileError::Option(
            "int8 needs a calibration (--calibtable or --calibrate)".into(),
        ));
    }
    let mut l = Lowering {
        g,
        t,
        q: *q,
        p: Program::default(),
        surf: HashMap::new(),
        views: concat_views(g, t),
        done: vec![false; g.nodes.len()],
        inherit: HashMap::new(),
        cpu_fallback: settings.cpu_fallback,
        winograd: settings.winograd,
        channel_scales_kept: HashSet::new(),
        tail_items: 1,
        pass: batch::Pass::default(),
    };
    // Tensors the concatenation rewrite added take the concatenation's scale.
    for (new, orig) in like {
        let scale = l.scale_of(orig, false);
        l.inherit.insert(new, scale);
    }
    // The running results of a split element-wise layer, where the calibration has none
    // (it was made on the network before the split): the largest value their inputs can
    // give, so that no partial result saturates.
    for p in partials {
        if l.scale_of(p.tensor, false).is_finite() {
            continue;
        }
        let scales: Vec<(f32, f32)> = p
            .inputs
            .iter()
            .map(|&(x, c)| (l.scale_of(x, false), c))
            .collect();
        let scale = match p.kind {
            EltwiseKind::Sum => scales.iter().map(|(s, c)| s * c.abs()).sum(),
            EltwiseKind::Max => scales.iter().map(|(s, _)| *s).fold(0.0, f32::max),
            EltwiseKind::Prod => scales.iter().map(|(s, _)| s * 127.0).product::<f32>() / 127.0,
        };
        l.inherit.insert(p.tensor, scale);
    }
    for (i, &input) in g.inputs.iter().enumerate() {
        let s = l.new_surface(input, SurfKind::Input(i));
        if g.integer_inputs.contains(&input) {
            l.integer_surface(s);
        } else if l.t.precision == Precision::Int8 && l.read_by_cpu_only(input) {
            // Only the CPU reads it: half precision, as a network output only the CPU
            // writes, instead of int8 steps of one scale (a recurrent state, a
            // matrix product's operand).
            l.half_surface(s);
        }
        l.p.inputs.push(s);
    }
    let batch = g.inputs.first().map_or(1, |&i| g.shape(i).n);
    if settings.image_input {
        for (i, &input) in g.inputs.iter().enumerate() {
            let id = l.p.inputs[i];
            l.image_input(input, id);
        }
    }
    if batch == 1 {
        for i in 0..g.nodes.len() {
            if !l.done[i] {
                l.node(i)?;
            }
        }
    } else {
        // N sequential passes over the network, one per batch item: item b of every
        // network input and output is a view of its memory at b times the item's size.
        let mut full_inputs = Vec::new();
        // Each with its own items: the batch, except where only partitions that run on
        // the whole batch read or write it ([`check_batch`]).
        for &input in &g.inputs {
            let id = l.surf[&input];
            l.batch_surface(id, g.shape(input).n);
            full_inputs.push(id);
        }
        let mut full_outputs = Vec::new();
        for (i, &o) in g.outputs.iter().enumerate() {
            let id = l.new_surface(o, SurfKind::Output(i));
            l.batch_surface(id, g.shape(o).n);
            full_outputs.push(id);
        }
        if let Some(stages) = batch_stages::plan(g) {
            // CPU partitions run once for the whole batch, between levels of passes.
            let full = g
                .inputs
                .iter()
                .zip(&full_inputs)
                .chain(g.outputs.iter().zip(&full_outputs))
                .map(|(&t, &id)| (t, id))
                .collect();
            l.lower_stages(&stages, batch, full)?;
        } else {
            l.lower_passes(batch, &full_inputs, &full_outputs)?;
        }
        for (&t, &full) in g.outputs.iter().zip(&full_outputs) {
            l.surf.insert(t, full);
        }
    }
    for &o in &g.outputs {
        let s = *l.surf.get(&o).ok_or_else(|| {
            CompileError::Network(format!("output `{}` is never computed", g.tensor(o).name))
        })?;
        if !matches!(l.p.surface(s).kind, SurfKind::Output(_)) {
            return Err(CompileError::Network(format!(
                "output `{}` is also a network input or an alias of another tensor; \
                 not supported",
                g.tensor(o).name
            )));
        }
        l.p.outputs.push(s);
    }
    check_cube_limits(&l.p)?;
    Ok(l.p)
}

struct Lowering<'a> {
    g: &'a Graph,
    t: &'a Target,
    q: Quant<'a>,
    /// int8 scales forced on tensors (pooling keeps its input's scale).
    inherit: HashMap<TensorId, f32>,
    p: Program,
    /// The surface holding each computed tensor.
    surf: HashMap<TensorId, SurfId>,
    /// Tensors that are channel windows of a concatenation's output.
    views: HashMap<TensorId, (TensorId, u32)>,
    /// Nodes already lowered (fused into an earlier operation).
    done: Vec<bool>,
    /// Operations the hardware cannot run go to the CPU (`--cpu-fallback`).
    cpu_fallback: bool,
    /// Winograd convolution where it applies (`--winograd`).
    winograd: bool,
    /// Surfaces with scales per channel that an SDP has been encoded to write
    /// ([`Lowering::encode_sdp`]): they keep them.
    channel_scales_kept: HashSet<SurfId>,
    /// Items side by side in the surfaces being made: the batch while its fully connected
    /// tail is lowered ([`batch`]), else 1.
    tail_items: u32,
    /// A batch's pass: the item being lowered, the batch, the tensors its fully connected
    /// tail reads (written into windows of a surface of the whole batch) and those
    /// surfaces once made.
    pass: batch::Pass,
}

fn layer_err(n: &Node, reason: impl Into<String>) -> CompileError {
    CompileError::layer(&n.name, &n.source_type, reason)
}

impl Lowering<'_> {
    /// Makes network input `tid` (surface `id`) an image when its one reader is a
    /// convolution that reads it in image mode ([`image::plan`]).
    fn image_input(&mut self, tid: TensorId, id: SurfId) {
        let g = self.g;
        let consumers = g.consumers(tid);
        let [reader] = consumers.as_slice() else {
            return;
        };
        let n = &g.nodes[reader.0];
        let Op::Conv(c) = &n.op else { return };
        if n.inputs.first() != Some(&tid) {
            return;
        }
        let s = self.p.surface(id);
        let w = c.window;
        let plan = image::plan(
            self.t,
            [s.c, s.h, s.w],
            w.kernel.map(|v| v as u32),
            w.stride.map(|v| v as u32),
            w.pad.map(|v| v as u32),
            w.dilation.map(|v| v as u32),
            c.groups,
        );
        if plan.is_none() {
            return;
        }
        let line = image::line_stride(self.t, s.w);
        let s = &mut self.p.surfaces[id.0];
        s.pixel = true;
        s.line_stride = line;
        s.surf_stride = 0;
        s.size = line * s.h;
    }

    /// Whether every reader of tensor `tid` is a CPU partition that runs on the CPU (not
    /// an element-wise one the CDP looks up, [`table::elementwise_sources`]).
    fn read_by_cpu_only(&self, tid: TensorId) -> bool {
        let readers = self.g.consumers(tid);
        !readers.is_empty()
            && readers.iter().all(|r| match &self.g.nodes[r.0].op {
                Op::CpuPartition(p) => {
                    !(self.t.hw.features.cdp && table::elementwise_sources(p).is_some())
                }
                _ => false,
            })
    }

    /// Makes surface `id` half precision in the feature layout (in an int8 network).
    fn half_surface(&mut self, id: SurfId) {
        let s = self.p.surface(id).clone();
        let mut h = self.surface_geometry(&s.name, s.c, s.h, s.w, s.kind);
        let atom = self.t.atom_of(Precision::Fp16);
        h.precision = Precision::Fp16;
        h.line_stride = s.w * atom;
        h.surf_stride = h.line_stride * s.h;
        h.size = h.surf_stride * s.c.div_ceil(self.t.channels_per_atom_of(Precision::Fp16));
        h.batch = s.batch;
        h.size *= s.batch.max(1);
        self.p.surfaces[id.0] = h;
    }

    /// Makes network input or output surface `id` one of integers ([`Surface::integer`]).
    fn integer_surface(&mut self, id: SurfId) {
        use crate::engine::{INTEGER_ATOM, INTEGER_CHANNELS_PER_ATOM};
        let s = &mut self.p.surfaces[id.0];
        s.integer = true;
        s.scale = 1.0;
        s.line_stride = s.w * INTEGER_ATOM;
        s.surf_stride = s.line_stride * s.h;
        s.size = s.surf_stride * s.c.div_ceil(INTEGER_CHANNELS_PER_ATOM) * s.batch.max(1);
    }

    /// Creates the surface for tensor `tid`.
    fn new_surface(&mut self, tid: TensorId, kind: SurfKind) -> SurfId {
        let shape = self.g.shape(tid);
        let (c, h, w) = (
            shape.c as u32,
            shape.h as u32,
            shape.w as u32 * self.tail_items,
        );
        let mut s = self.surface_geometry(&self.g.tensor(tid).name, c, h, w, kind);
        s.scale = self.scale_of(tid, matches!(kind, SurfKind::Input(_)));
        if kind == SurfKind::Pool {
            s.channel_scales = self.channel_scales_for(tid);
        }
        let id = self.p.add_surface(s);
        self.surf.insert(tid, id);
        id
    }

    /// Makes network input or output surface `id` hold `batch` items back to back.
    fn batch_surface(&mut self, id: SurfId, batch: usize) {
        let s = &mut self.p.surfaces[id.0];
        s.batch = batch as u32;
        s.size *= batch as u32;
    }

    /// Item `b` of batched surface `full`: a view `b` item sizes into its memory.
    fn item_view(&mut self, full: SurfId, b: usize) -> SurfId {
        let fs = self.p.surface(full).clone();
        let item = fs.size / fs.batch.max(1);
        let mut v = fs;
        v.name = format!("{}#item{b}", v.name);
        v.batch = 1;
        v.size = item;
        v.kind = SurfKind::View {
            parent: full,
            channel_offset: 0,
            x: 0,
            // Item b starts b * item bytes in: that many lines of the parent.
            y: b as u32 * (item / v.line_stride.max(1)),
        };
        self.p.add_surface(v)
    }

    fn surface_geometry(&self, name: &str, c: u32, h: u32, w: u32, kind: SurfKind) -> Surface {
        let atom = self.t.atom();
        let line_stride = w * atom;
        let surf_stride = line_stride * h;
        let size = surf_stride * c.div_ceil(self.t.channels_per_atom());
        Surface {
            name: name.to_string(),
            c,
            h,
            w,
            precision: self.t.precision,
            kind,
            line_stride,
            surf_stride,
            size,
            offset: 0,
            scale: 1.0,
            channel_scales: None,
            batch: 1,
            pixel: false,
            sram: false,
            integer: false,
        }
    }

    /// The int8 scale of tensor `tid` (1 for fp16; NaN when uncalibrated, reported where
    /// it is needed).
    fn scale_of(&self, tid: TensorId, input: bool) -> f32 {
        if self.t.precision != Precision::Int8 {
            return 1.0;
        }
        if let Some(&s) = self.inherit.get(&tid) {
            return s;
        }
        match self.q.cal.and_then(|c| c.get(tid)) {
            Some(s) => s,
            None if input => self.q.input_scale,
            None => f32::NAN,
        }
    }

    /// The int8 scale of surface `id`, or an error naming its tensor.
    fn require_scale(&self, id: SurfId) -> Result<f64> {
        let s = self.p.surface(id);
        if s.scale.is_finite() && s.scale > 0.0 {
            Ok(f64::from(s.scale))
        } else {
            Err(CompileError::Network(format!(
                "no int8 scale for tensor `{}`: the calibration table has no entry for it \
                 (nor for the layer that produces it)",
                s.name
            )))
        }
    }

    /// int8: an operation that cannot rescale (PDP, RUBIK) must write the scale it reads;
    /// a destination whose scale is fixed otherwise (a concatenation) may differ.
    fn check_scale_kept(&self, n: &Node, src: SurfId, dst: SurfId) -> Result<()> {
        let (a, b) = (self.p.surface(src).scale, self.p.surface(dst).scale);
        if self.t.precision == Precision::Int8 && (a - b).abs() > a.abs() * 1e-6 {
            return Err(layer_err(
                n,
                format!(
                    "int8: writes a tensor of scale {b:e} (e.g. a concatenation's) but cannot \
                     rescale its input of scale {a:e}"
                ),
            ));
        }
        Ok(())
    }

    /// For int8, the unit of an SDP reading surface `id` from memory: its scale on every
    /// channel, or its scales per channel.
    fn uniform_unit(&self, id: SurfId) -> Result<Option<Vec<f64>>> {
        if self.t.precision != Precision::Int8 {
            return Ok(None);
        }
        let s = self.require_scale(id)?;
        if let Some(cs) = self.p.channel_scales(id) {
            return Ok(Some(cs.iter().map(|&v| f64::from(v)).collect()));
        }
        Ok(Some(vec![s; self.p.surface(id).c as usize]))
    }

    /// The int8 scale of channel `k` of an SDP operand surface, for every operand of
    /// `sdp` (per channel where the surface has scales per channel).
    fn operand_scales(&self, sdp: &SdpStages) -> impl Fn(SurfId, usize) -> f64 {
        let per: HashMap<SurfId, Vec<f32>> = sdp
            .operands()
            .into_iter()
            .filter_map(|id| Some((id, self.p.channel_scales(id)?)))
            .collect();
        let scales: Vec<f64> = self.p.surfaces.iter().map(|s| f64::from(s.scale)).collect();
        move |id: SurfId, k: usize| {
            per.get(&id)
                .and_then(|v| v.get(k))
                .map_or(scales[id.0], |&v| f64::from(v))
        }
    }

    /// Encodes an SDP operation's stages: fp16 directly; int8 from the input's unit
    /// (`unit`, real value of one LSB of the int32 input per channel) to `dst`'s scale.
    fn encode_sdp(
        &mut self,
        sdp: &SdpStages,
        layer: &str,
        dst: SurfId,
        unit: Option<Vec<f64>>,
    ) -> Result<EncodedSdp> {
        let t = *self.t;
        if t.precision != Precision::Int8 {
            return Ok((sdp.encode(&mut self.p, &t, layer)?, None));
        }
        let out_scale = self.require_scale(dst)?;
        let unit =
            unit.ok_or_else(|| CompileError::Network(format!("{layer}: no int8 input unit")))?;
        for other in sdp.operands() {
            self.require_scale(other)?;
        }
        let scale_of = self.operand_scales(sdp);
        // A destination with scales per channel: the value ends divided by each channel's
        // factor. When that needs an SDP stage the build does not have, the destination
        // keeps its one scale, unless an operation already writes part of it per channel.
        if let Some(f) = self.channel_factors(dst) {
            let root = self.p.root(dst);
            let inverse: Vec<f64> = f.iter().map(|x| 1.0 / x).collect();
            let scaled = sdp.scale_output(&inverse);
            match scaled.encode_int8(&mut self.p, &t, layer, &unit, out_scale, &scale_of) {
                Ok((stages, cvt)) => {
                    self.channel_scales_kept.insert(root);
                    return Ok((stages, Some(cvt)));
                }
                Err(e) if self.channel_scales_kept.contains(&root) => return Err(e),
                Err(_) => self.p.surfaces[root.0].channel_scales = None,
            }
        }
        let (stages, cvt) = sdp.encode_int8(&mut self.p, &t, layer, &unit, out_scale, &scale_of)?;
        Ok((stages, Some(cvt)))
    }

    /// Pushes an SDP operation reading `src` (int8 unit `unit`) through `sdp` into `dst`,
    /// encoded for layer `layer` and named `layers`.
    fn push_sdp(
        &mut self,
        layers: Vec<String>,
        layer: &str,
        (src, dst): (SurfId, SurfId),
        sdp: &SdpStages,
        unit: Option<Vec<f64>>,
    ) -> Result<()> {
        let (stages, out_cvt) = self.encode_sdp(sdp, layer, dst, unit)?;
        self.p.ops.push(HwOp {
            layers,
            kind: HwOpKind::Sdp(SdpOp {
                src: Some(src),
                dst,
                stages,
                lut: sdp.lut(),
                out_cvt,
            }),
        });
        Ok(())
    }

    /// An SDP pass-through copying `src` to `dst` (same shape, int8 rescaled to `dst`'s
    /// scale), named `name`, for layer `layer`.
    fn sdp_copy(&mut self, layer: &str, name: String, src: SurfId, dst: SurfId) -> Result<()> {
        let t = *self.t;
        let mut sdp = SdpStages::default();
        sdp.push(&t, Stage::Pass)
            .map_err(|e| CompileError::layer(layer, "copy", e))?;
        let unit = self.uniform_unit(src)?;
        self.push_sdp(vec![name], layer, (src, dst), &sdp, unit)
    }

    /// The surface an operation writes tensor `tid` to.
    fn output_surface(&mut self, tid: TensorId) -> SurfId {
        if let Some(&s) = self.surf.get(&tid) {
            return s;
        }
        if let Some(s) = self.head_window(tid) {
            return s;
        }
        if let Some(i) = self.g.outputs.iter().position(|&o| o == tid) {
            // A batched tail's outputs are copied item by item afterwards.
            if self.tail_items == 1 {
                return self.new_surface(tid, SurfKind::Output(i));
            }
        }
        if let Some(&(parent, offset)) = self.views.get(&tid) {
            let parent_surface = self.output_surface(parent);
            let ps = self.p.surface(parent_surface).clone();
            let shape = self.g.shape(tid);
            let mut s = ps.clone();
            s.name = self.g.tensor(tid).name.clone();
            s.c = shape.c as u32;
            s.kind = SurfKind::View {
                parent: parent_surface,
                channel_offset: offset,
                x: 0,
                y: 0,
            };
            s.size = ps.surf_stride * s.c.div_ceil(self.t.channels_per_atom());
            let id = self.p.add_surface(s);
            self.surf.insert(tid, id);
            return id;
        }
        self.new_surface(tid, SurfKind::Pool)
    }

    /// The surface holding an already computed tensor.
    fn input(&self, n: &Node, k: usize) -> Result<SurfId> {
        let tid = *n
            .inputs
            .get(k)
            .ok_or_else(|| layer_err(n, format!("expects at least {} inputs", k + 1)))?;
        self.surf.get(&tid).copied().ok_or_else(|| {
            layer_err(
                n,
                format!(
                    "input `{}` is not computed before it",
                    self.g.tensor(tid).name
                ),
            )
        })
    }

    fn out_tensor(&self, n: &Node) -> Result<TensorId> {
        match n.outputs.as_slice() {
            [t] => Ok(*t),
            _ => Err(layer_err(n, "expects exactly one output")),
        }
    }

    fn node(&mut self, i: usize) -> Result<()> {
        let g = self.g;
        let n = &g.nodes[i];
        self.done[i] = true;
        match &n.op {
            Op::Conv(c) => self.conv(i, c),
            Op::FullyConnected { weight, bias } => self.fully_connected(i, weight, bias.as_ref()),
            Op::Pool(p) => self.pool(n, p),
            Op::Crop { origin, step } => self.crop(n, *origin, *step),
            Op::EdgePad { pads } => self.edge_pad(n, *pads),
            Op::Softmax => self.softmax(n),
            Op::Flatten | Op::Identity => {
                let src = self.input(n, 0)?;
                let out = self.out_tensor(n)?;
                if matches!(n.op, Op::Flatten) {
                    let s = self.p.surface(src);
                    let feeds_fc = g.consumers(out).iter().all(|&c| {
                        matches!(g.nodes[c.0].op, Op::FullyConnected { .. } | Op::Softmax)
                    });
                    if !(feeds_fc || s.h == 1 && s.w == 1) {
                        return Err(layer_err(
                            n,
                            "flattening a spatial cube is only supported in front of a fully \
                             connected layer",
                        ));
                    }
                }
                if g.outputs.contains(&out) {
                    let s = self.p.surface(src);
                    let o = g.shape(out);
                    if (s.c as usize, s.h as usize, s.w as usize) != (o.c, o.h, o.w) {
                        return Err(layer_err(
                            n,
                            "a network output that flattens a spatial cube needs a copy \
                             that changes the layout (not implemented)",
                        ));
                    }
                    // A network output that is an alias of another tensor (a network
                    // input, another output, a reshape): an SDP pass-through copies it.
                    self.inherit.insert(out, s.scale);
                    let dst = self.output_surface(out);
                    return self.sdp_copy(&n.name, n.name.clone(), src, dst);
                }
                self.surf.insert(out, src);
                Ok(())
            }
            Op::Concat => {
                let out = self.out_tensor(n)?;
                // A concatenation that begins a longer one lives in that one's surface.
                let surface_of = self.views.get(&out).map_or(out, |v| v.0);
                let all_views = n
                    .inputs
                    .iter()
                    .all(|t| self.views.get(t).map(|v| v.0) == Some(surface_of));
                if !all_views {
                    return Err(layer_err(
                        n,
                        format!(
                            "inputs must start at multiples of {} channels and feed only this \
                             concatenation (copies are not implemented)",
                            self.t.channels_per_atom()
                        ),
                    ));
                }
                // The producers already wrote their windows of the output surface.
                self.output_surface(out);
                Ok(())
            }
            Op::Activation(a @ (Activation::Sigmoid | Activation::Tanh | Activation::Erf))
                if !self.t.hw.features.sdp_lut =>
            {
                self.table_activation(n, a)
            }
            Op::ChannelAffine { .. }
            | Op::BatchNorm { .. }
            | Op::Activation(_)
            | Op::Power { .. }
            | Op::Eltwise { .. } => self.standalone_sdp(i),
            Op::Deconv(c) => self.deconv(i, c),
            Op::CpuUnary { func, alpha, beta } => self.cpu_unary(n, func, alpha, beta),
            Op::CpuPartition(part) => self.cpu_partition(n, part),
            Op::Lrn {
                size,
                alpha,
                beta,
                k,
            } => self.lrn(n, size, alpha, beta, k),
        }
    }

    /// Channels `c0..c0 + c` of surface `id`, read in place.
    fn channel_view(&mut self, id: SurfId, c0: u32, c: u32, name: String) -> SurfId {
        let ps = self.p.surface(id).clone();
        let (parent, offset, x, y) = match ps.kind {
            SurfKind::View {
                parent,
                channel_offset,
                x,
                y,
            } => (parent, channel_offset + c0, x, y),
            _ => (id, c0, 0, 0),
        };
        let mut v = ps;
        v.name = name;
        v.c = c;
        v.kind = SurfKind::View {
            parent,
            channel_offset: offset,
            x,
            y,
        };
        v.size = (c.div_ceil(self.t.channels_per_atom()) - 1) * v.surf_stride
            + (v.h - 1) * v.line_stride
            + v.w * self.t.atom();
        self.p.add_surface(v)
    }

    /// Lines `y0..y0 + h` and columns `x0..x0 + w` of surface `id`, read and written in
    /// place with its strides.
    fn window_view(
        &mut self,
        id: SurfId,
        (y0, x0): (u32, u32),
        (h, w): (u32, u32),
        name: &str,
    ) -> SurfId {
        let ps = self.p.surface(id).clone();
        let (parent, channel_offset, x, y) = match ps.kind {
            SurfKind::View {
                parent,
                channel_offset,
                x,
                y,
            } => (parent, channel_offset, x + x0, y + y0),
            _ => (id, 0, x0, y0),
        };
        let mut v = ps;
        v.name = name.to_string();
        v.h = h;
        v.w = w;
        v.kind = SurfKind::View {
            parent,
            channel_offset,
            x,
            y,
        };
        v.size = (v.c.div_ceil(self.t.channels_per_atom()) - 1) * v.surf_stride
            + (h - 1) * v.line_stride
            + w * self.t.atom();
        self.p.add_surface(v)
    }
}

/// A per-channel vector of length `c` from one of length `c` or 1.
fn broadcast(v: &[f32], c: usize, n: &Node) -> Result<Vec<f32>> {
    match v.len() {
        1 => Ok(vec![v[0]; c]),
        l if l == c => Ok(v.to_vec()),
        l => Err(layer_err(n, format!("{l} values for {c} channels"))),
    }
}
