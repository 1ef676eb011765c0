//! Convolutions and fully connected layers: CONV+SDP operations.

use super::{image, layer_err, winograd, Lowering};
use crate::engine::*;
use crate::error::Result;
use crate::ir::Node;
use crate::pack;
use crate::sdp::{SdpStages, Stage};
use crate::target::Precision;
use nvdla_loadable::dla::SdpAluType;

impl Lowering<'_> {
    /// A convolution: weights expanded for groups (block-diagonal), then CONV+SDP.
    pub(super) fn conv(&mut self, i: usize, c: &crate::ir::Conv) -> Result<()> {
        let n = &self.g.nodes[i];
        let src = self.input(n, 0)?;
        let s = self.p.surface(src).clone();
        let [kh, kw] = c.window.kernel;
        let groups = c.groups.max(1);
        let cin = s.c as usize;
        let k = c.out_channels;
        if !cin.is_multiple_of(groups) || !k.is_multiple_of(groups) {
            return Err(layer_err(
                n,
                format!("{groups} groups do not divide {cin} input / {k} output channels"),
            ));
        }
        let cpg = cin / groups;
        let kpg = k / groups;
        if c.weight.len() != k * cpg * kh * kw {
            return Err(layer_err(
                n,
                format!(
                    "weights hold {} values, {k}x{cpg}x{kh}x{kw} expected",
                    c.weight.len()
                ),
            ));
        }
        let w = c.window;
        if w.stride.iter().any(|&v| v > MAX_CONV_STRIDE) {
            return self.subsampled_conv(i, c);
        }
        if let Some(q) = self.group_chunk(groups, cpg, kpg) {
            return self.grouped_conv(i, c, q);
        }
        // Dense weights [k][cin][kh][kw], zero outside each kernel's group.
        let dense = if groups == 1 {
            c.weight.data.clone()
        } else {
            block_diagonal(&c.weight.data, 0, k, cin, cpg, kpg, kh * kw)
        };
        let out_t = self.out_tensor(n)?;
        let out_shape = self.g.shape(out_t);
        self.emit_conv(
            i,
            ConvSpec {
                src,
                kernel: [kh as u32, kw as u32],
                stride: [w.stride[0] as u32, w.stride[1] as u32],
                pad: w.pad.map(|v| v as u32),
                dilation: [w.dilation[0] as u32, w.dilation[1] as u32],
                kernels: k as u32,
                out: [out_shape.h as u32, out_shape.w as u32],
                weights: dense,
                bias: c.bias.as_ref().map(|b| b.data.clone()),
                dst: None,
                accumulate: None,
            },
        )
    }

    /// A convolution whose stride exceeds the core's 8 (ViT's 16x16 patches, audio
    /// front ends): the convolution at stride `g` (a divisor of the stride, at most 8)
    /// into a surface of its own, then every `s / g`-th of its pixels picked by 1x1 PDP
    /// poolings ([`stride_split`]). The outputs at the picked positions are the layer's
    /// (`floor(floor(x / g) / p) = floor(x / (g p))` gives the same output size); the
    /// others are computed and dropped, `(s / g)` times the MACs per strided axis. The
    /// intermediate takes the output's int8 scale: the values kept are the output's, and
    /// a dropped value that saturates is never read. The layers after it are separate
    /// SDP operations.
    fn subsampled_conv(&mut self, i: usize, c: &crate::ir::Conv) -> Result<()> {
        let n = &self.g.nodes[i];
        let src = self.input(n, 0)?;
        let s = self.p.surface(src).clone();
        let w = c.window;
        let (Some((gh, ph)), Some((gw, pw))) =
            (stride_split(w.stride[0]), stride_split(w.stride[1]))
        else {
            return Err(layer_err(
                n,
                format!(
                    "stride {}x{}: not a product of a convolution stride of 1..=8 and PDP \
                     strides of 1..=16",
                    w.stride[0], w.stride[1]
                ),
            ));
        };
        let [kh, kw] = c.window.kernel;
        let cin = s.c as usize;
        let groups = c.groups.max(1);
        let k = c.out_channels;
        let (cpg, kpg) = (cin / groups, k / groups);
        let dense = if groups == 1 {
            c.weight.data.clone()
        } else {
            block_diagonal(&c.weight.data, 0, k, cin, cpg, kpg, kh * kw)
        };
        let size = |input: u32, kk: usize, d: usize, p0: usize, p1: usize, st: usize| {
            (input as usize + p0 + p1 - (d * (kk - 1) + 1)) / st + 1
        };
        let mh = size(s.h, kh, w.dilation[0], w.pad[0], w.pad[2], gh);
        let mw = size(s.w, kw, w.dilation[1], w.pad[1], w.pad[3], gw);
        let out_t = self.out_tensor(n)?;
        let mut mid = self.surface_geometry(
            &format!("{}#dense", n.name),
            k as u32,
            mh as u32,
            mw as u32,
            SurfKind::Pool,
        );
        mid.scale = self.scale_of(out_t, false);
        let mid = self.p.add_surface(mid);
        self.emit_conv(
            i,
            ConvSpec {
                src,
                kernel: [kh as u32, kw as u32],
                stride: [gh as u32, gw as u32],
                pad: w.pad.map(|v| v as u32),
                dilation: [w.dilation[0] as u32, w.dilation[1] as u32],
                kernels: k as u32,
                out: [mh as u32, mw as u32],
                weights: dense,
                bias: c.bias.as_ref().map(|b| b.data.clone()),
                dst: Some(mid),
                accumulate: None,
            },
        )?;
        // PDP strides of up to 16 each, the last one writing the layer's output.
        let (mut cur, mut h, mut wd) = (mid, mh, mw);
        let stages = ph.len().max(pw.len());
        for k in 0..stages.saturating_sub(1) {
            let (sy, sx) = (
                ph.get(k).copied().unwrap_or(1),
                pw.get(k).copied().unwrap_or(1),
            );
            let (nh, nw) = ((h - 1) / sy + 1, (wd - 1) / sx + 1);
            let op = PdpOp {
                src: cur,
                dst: cur,
                max: true,
                kernel: [1, 1],
                stride: [sy as u32, sx as u32],
                pad: [0; 4],
                pad_value: 0,
            };
            cur = self.pool_stage(
                n,
                &format!("pick{}", k + 1),
                k + 1,
                op,
                [nh as u32, nw as u32],
            );
            (h, wd) = (nh, nw);
        }
        let last = |v: &[usize]| v.get(stages - 1).copied().unwrap_or(1);
        let pick = crate::ir::Pool {
            kind: crate::ir::PoolKind::Max,
            window: crate::ir::Window {
                kernel: [1, 1],
                stride: [last(&ph), last(&pw)],
                pad: [0; 4],
                dilation: [1, 1],
            },
            ceil_mode: false,
            count_include_pad: false,
        };
        self.pool_from(n, &pick, cur)
    }

    /// Groups per operation when a grouped convolution (depthwise included) is split into
    /// operations over parts of its groups: `None` to run it as one dense convolution.
    ///
    /// One dense convolution holds `groups` times the real weights (zeros outside each
    /// kernel's group: MobileNet v2's depthwise layers take 88 MB in fp16 instead of 7 MB)
    /// and computes as many MACs. A part must start at a multiple of the channels per atom
    /// on both sides (its input and output are channel views), so the smallest part is `q`
    /// groups with `q * cpg` and `q * kpg` such multiples; parts are made larger so that a
    /// layer takes at most [`MAX_GROUP_PARTS`] operations (the firmware runs 1 024 per
    /// task). Split when that leaves at least two parts.
    pub(super) fn group_chunk(&self, groups: usize, cpg: usize, kpg: usize) -> Option<usize> {
        if groups < 2 {
            return None;
        }
        let cpa = self.t.channels_per_atom() as usize;
        let step = |per: usize| cpa / gcd(cpa, per);
        let q0 = lcm(step(cpg), step(kpg));
        let q = q0 * groups.div_ceil(q0 * MAX_GROUP_PARTS).max(1);
        (groups.div_ceil(q) >= 2).then_some(q)
    }

    /// A grouped convolution as convolutions over `q` groups each, reading channel views of
    /// the input and writing channel views of the output, with their own weights (dense
    /// within the part only) and bias; the layers after it are separate SDP operations.
    fn grouped_conv(&mut self, i: usize, c: &crate::ir::Conv, q: usize) -> Result<()> {
        let n = &self.g.nodes[i];
        let src = self.input(n, 0)?;
        let cin = self.p.surface(src).c as usize;
        let [kh, kw] = c.window.kernel;
        let groups = c.groups;
        let (cpg, kpg) = (cin / groups, c.out_channels / groups);
        let out_t = self.out_tensor(n)?;
        let out_shape = self.g.shape(out_t);
        let dst = self.output_surface(out_t);
        let w = c.window;
        for g0 in (0..groups).step_by(q) {
            let g1 = (g0 + q).min(groups);
            let (c0, cn) = (g0 * cpg, (g1 - g0) * cpg);
            let (k0, kn) = (g0 * kpg, (g1 - g0) * kpg);
            let src_v = self.channel_view(src, c0 as u32, cn as u32, format!("{}#in{g0}", n.name));
            let dst_v = self.channel_view(dst, k0 as u32, kn as u32, format!("{}#out{g0}", n.name));
            let weights = block_diagonal(&c.weight.data, k0, kn, cn, cpg, kpg, kh * kw);
            self.emit_conv(
                i,
                ConvSpec {
                    src: src_v,
                    kernel: [kh as u32, kw as u32],
                    stride: [w.stride[0] as u32, w.stride[1] as u32],
                    pad: w.pad.map(|v| v as u32),
                    dilation: [w.dilation[0] as u32, w.dilation[1] as u32],
                    kernels: kn as u32,
                    out: [out_shape.h as u32, out_shape.w as u32],
                    weights,
                    bias: c.bias.as_ref().map(|b| b.data[k0..k0 + kn].to_vec()),
                    dst: Some(dst_v),
                    accumulate: None,
                },
            )?;
        }
        Ok(())
    }

    /// A fully connected layer: a convolution whose kernel covers the whole input cube.
    pub(super) fn fully_connected(
        &mut self,
        i: usize,
        weight: &crate::ir::Weights,
        bias: Option<&crate::ir::Weights>,
    ) -> Result<()> {
        let n = &self.g.nodes[i];
        let src = self.input(n, 0)?;
        let s = self.p.surface(src).clone();
        let per_kernel = (s.c * s.h * s.w / self.tail_items.max(1)) as usize;
        if per_kernel == 0 || !weight.len().is_multiple_of(per_kernel) {
            return Err(layer_err(
                n,
                format!(
                    "{} weights do not divide into kernels of the {}x{}x{} input",
                    weight.len(),
                    s.c,
                    s.h,
                    s.w
                ),
            ));
        }
        let k = weight.len() / per_kernel;
        // A batched tail ([`super::batch`]): the items lie side by side, one kernel wide
        // each; the stride of one item gives one output pixel per item.
        let items = self.tail_items.max(1);
        let w = s.w / items;
        self.emit_conv(
            i,
            ConvSpec {
                src,
                kernel: [s.h, w],
                stride: [1, w],
                pad: [0; 4],
                dilation: [1, 1],
                kernels: k as u32,
                out: [1, items],
                weights: weight.data.clone(),
                bias: bias.map(|b| b.data.clone()),
                dst: None,
                accumulate: None,
            },
        )
    }

    /// Input-channel ranges to split a convolution into when even one output row beside
    /// one kernel group's weights does not fit the CBUF (a fully connected layer over a
    /// large cube: VGG's 7x7x512 -> 4096 needs 25 banks for 16 kernels on nv_full), each
    /// a multiple of the atom's channels so that it is a view of the input. `None` when
    /// it fits whole, or when no split makes it fit.
    fn channel_parts(&self, spec: &ConvSpec, s: &Surface) -> Option<Vec<(u32, u32)>> {
        let t = self.t;
        let [kh, kw] = spec.kernel;
        let rows = ((kh - 1) * spec.dilation[0] + 1).min(s.h);
        let fits = |c: u32| {
            let data = (t.entries_per_slice(s.w, c) * rows).div_ceil(t.cbuf_entries_per_bank());
            data + t.min_banks_for_weights(kh * kw * c * t.bpe()) <= t.hw.cbuf_banks
        };
        if fits(s.c) {
            return None;
        }
        let cpa = t.channels_per_atom();
        let atoms = s.c.div_ceil(cpa);
        let per = (2..=atoms)
            .map(|parts| atoms.div_ceil(parts) * cpa)
            .find(|&per| fits(per))?;
        let mut parts = Vec::new();
        let mut c0 = 0;
        while c0 < s.c {
            let c1 = (c0 + per).min(s.c);
            parts.push((c0, c1));
            c0 = c1;
        }
        Some(parts)
    }

    /// A convolution computed as partial sums over `parts` of its input channels: part j
    /// convolves its channels (a view of the input) and adds part j-1's result in its
    /// SDP; the first adds the bias, the last writes the output and takes the
    /// element-wise layers that follow. int8 partial sums are stored at twice the scale
    /// calibration gave the whole sum (the convolution's output before what follows it):
    /// a partial sum over part of the channels may exceed the whole one's range.
    fn emit_conv_by_channels(
        &mut self,
        i: usize,
        spec: ConvSpec,
        parts: &[(u32, u32)],
    ) -> Result<()> {
        let n = &self.g.nodes[i];
        let name = n.name.clone();
        let c = self.p.surface(spec.src).c as usize;
        let taps = (spec.kernel[0] * spec.kernel[1]) as usize;
        let mut prev = None;
        for (j, &(c0, c1)) in parts.iter().enumerate() {
            let src = self.channel_view(spec.src, c0, c1 - c0, format!("{name}#c{c0}"));
            let (a, b) = (c0 as usize * taps, c1 as usize * taps);
            let weights: Vec<f32> = (0..spec.kernels as usize)
                .flat_map(|k| {
                    spec.weights[k * c * taps + a..k * c * taps + b]
                        .iter()
                        .copied()
                })
                .collect();
            let dst = if j + 1 == parts.len() {
                spec.dst
            } else {
                let mut tmp = self.surface_geometry(
                    &format!("{name}#partial{j}"),
                    spec.kernels,
                    spec.out[0],
                    spec.out[1],
                    SurfKind::Pool,
                );
                let prefix = c1 as usize * taps;
                tmp.scale = self.partial_sum_scale(n, &spec, |k| {
                    let w = &spec.weights[k * c * taps..k * c * taps + prefix];
                    w.iter().map(|&v| f64::from(v).powi(2)).sum()
                })?;
                Some(self.p.add_surface(tmp))
            };
            self.emit_conv(
                i,
                ConvSpec {
                    src,
                    kernel: spec.kernel,
                    stride: spec.stride,
                    pad: spec.pad,
                    dilation: spec.dilation,
                    kernels: spec.kernels,
                    out: spec.out,
                    weights,
                    bias: if j == 0 { spec.bias.clone() } else { None },
                    dst,
                    accumulate: prev,
                },
            )?;
            prev = dst;
        }
        Ok(())
    }

    /// int8: the scale of a running partial sum of convolution `n` ([`Self::emit_conv_by_channels`],
    /// [`Self::emit_conv_by_taps`]) whose kernel `k` has summed weights of squared norm
    /// `norm2(k)` so far; 1 in fp16. The running sum may far exceed the whole sum's range
    /// (the later terms cancel it), so the scale is the larger of twice the output's and
    /// the sum's spread for inputs at their full range with independent signs:
    /// `sqrt(norm2) * (127 * input scale)`, the largest over the kernels, plus the bias.
    fn partial_sum_scale(
        &self,
        n: &Node,
        spec: &ConvSpec,
        norm2: impl Fn(usize) -> f64,
    ) -> Result<f32> {
        if self.t.precision != Precision::Int8 {
            return Ok(1.0);
        }
        let out = self.scale_of(self.out_tensor(n)?, false);
        if !(out.is_finite() && out > 0.0) {
            return Err(layer_err(
                n,
                "no int8 scale for its output, which the partial sums it is split into are \
                 scaled from",
            ));
        }
        let input_range = 127.0 * f64::from(self.p.surface(spec.src).scale);
        let spread = (0..spec.kernels as usize)
            .map(|k| {
                let bias = spec.bias.as_ref().map_or(0.0, |b| f64::from(b[k]).abs());
                norm2(k).sqrt() * input_range + bias
            })
            .fold(0.0f64, f64::max);
        Ok((2.0 * f64::from(out)).max(spread / 127.0) as f32)
    }

    /// A convolution whose kernel exceeds the core's 32x32 (an STFT as a 1-D convolution
    /// of 256 to 512 taps, basic-pitch's constant-Q filters): partial sums over slices of
    /// at most 32x32 taps, each added to the previous one in its SDP, as
    /// [`Self::emit_conv_by_channels`] does over input channels. Output `x` reads input
    /// `x * s - p + d * t`; a slice starting at tap `t0` is a convolution of the input
    /// padded by `p - d * t0`, or of a window of the input starting `d * t0 - p` in when
    /// that is negative (with the end padding the slice's last tap needs). int8 partial
    /// sums take [`Self::partial_sum_scale`].
    fn emit_conv_by_taps(&mut self, i: usize, spec: ConvSpec) -> Result<()> {
        let n = &self.g.nodes[i];
        let name = n.name.clone();
        let s = self.p.surface(spec.src).clone();
        let c = s.c as usize;
        let [kh, kw] = spec.kernel.map(|v| v as usize);
        // Tap ranges along each axis, as even as they go.
        let slices = |k: usize| -> Vec<(usize, usize)> {
            let parts = k.div_ceil(MAX_KERNEL as usize);
            let per = k.div_ceil(parts);
            (0..parts)
                .map(|j| (j * per, ((j + 1) * per).min(k)))
                .collect()
        };
        // One axis of a slice: the source's first element, its length, the padding before
        // and after (`None` when the slice reads padding only: it adds nothing).
        let axis =
            |size: u32, (t0, t1): (usize, usize), a: usize| -> Option<(u32, u32, u32, u32)> {
                let (st, d, p0) = (
                    spec.stride[a] as i64,
                    spec.dilation[a] as i64,
                    spec.pad[a] as i64,
                );
                let first = p0 - d * t0 as i64;
                let (start, pad0) = if first >= 0 { (0, first) } else { (-first, 0) };
                let len = i64::from(size) - start;
                // The last element read, counted from the window's start with its padding.
                let last = (i64::from(spec.out[a]) - 1) * st - pad0 + d * (t1 - t0 - 1) as i64;
                if len < 1 || last < 0 && pad0 > 0 {
                    return None;
                }
                let pad1 = (last - (len - 1)).max(0);
                Some((start as u32, len as u32, pad0 as u32, pad1 as u32))
            };
        let parts: Vec<((usize, usize), (usize, usize))> = slices(kh)
            .into_iter()
            .flat_map(|ys| slices(kw).into_iter().map(move |xs| (ys, xs)))
            .collect();
        let mut prev = None;
        let mut sum_taps = Vec::new();
        for (j, &(ys, xs)) in parts.iter().enumerate() {
            let (Some((y0, h, pt, pb)), Some((x0, w, pl, pr))) =
                (axis(s.h, ys, 0), axis(s.w, xs, 1))
            else {
                return Err(layer_err(
                    n,
                    format!(
                        "kernel {kh}x{kw}: taps {}..{} x {}..{} read padding only",
                        ys.0, ys.1, xs.0, xs.1
                    ),
                ));
            };
            let src = if (y0, x0, h, w) == (0, 0, s.h, s.w) {
                spec.src
            } else {
                self.window_view(spec.src, (y0, x0), (h, w), &format!("{name}#taps{j}"))
            };
            let (sh, sw) = (ys.1 - ys.0, xs.1 - xs.0);
            let mut weights = Vec::with_capacity(spec.kernels as usize * c * sh * sw);
            for kc in 0..spec.kernels as usize * c {
                for y in ys.0..ys.1 {
                    let row = (kc * kh + y) * kw;
                    weights.extend_from_slice(&spec.weights[row + xs.0..row + xs.1]);
                }
            }
            sum_taps.push((ys, xs));
            let dst = if j + 1 == parts.len() {
                spec.dst
            } else {
                let mut tmp = self.surface_geometry(
                    &format!("{name}#partial{j}"),
                    spec.kernels,
                    spec.out[0],
                    spec.out[1],
                    SurfKind::Pool,
                );
                tmp.scale = self.partial_sum_scale(n, &spec, |k| {
                    sum_taps
                        .iter()
                        .flat_map(|&((a, b), (l, r))| {
                            (0..c).flat_map(move |ci| {
                                (a..b).flat_map(move |y| {
                                    (l..r).map(move |x| ((k * c + ci) * kh + y) * kw + x)
                                })
                            })
                        })
                        .map(|e| f64::from(spec.weights[e]).powi(2))
                        .sum()
                })?;
                Some(self.p.add_surface(tmp))
            };
            self.emit_conv(
                i,
                ConvSpec {
                    src,
                    kernel: [sh as u32, sw as u32],
                    stride: spec.stride,
                    pad: [pt, pl, pb, pr],
                    dilation: spec.dilation,
                    kernels: spec.kernels,
                    out: spec.out,
                    weights,
                    bias: if j == 0 { spec.bias.clone() } else { None },
                    dst,
                    accumulate: prev,
                },
            )?;
            prev = dst;
        }
        Ok(())
    }

    /// A convolution of a one-line cube whose line does not fit the CBUF or the 8 192
    /// pixels of a cube (a raw waveform of 44 100 samples as TensorFlow's `conv1d` exports
    /// it, `1 x N`, with a `1 x k` kernel): the same memory read as a column, `N` lines of one pixel whose line
    /// stride is an atom (pixel `x` of the line is line `x` of the column), so that the
    /// convolution runs along the lines and splits into chunks of rows that fit. The
    /// output, and a partial sum it adds, are columns alike; the layers after it are SDP
    /// operations of their own.
    fn emit_conv_as_column(&mut self, i: usize, spec: ConvSpec) -> Result<()> {
        let n = &self.g.nodes[i];
        let dst = match spec.dst {
            Some(d) => d,
            None => {
                let out_t = self.out_tensor(n)?;
                self.output_surface(out_t)
            }
        };
        let src = self.column_view(spec.src);
        let dst = self.column_view(dst);
        let accumulate = spec.accumulate.map(|a| self.column_view(a));
        self.emit_conv(
            i,
            ConvSpec {
                src,
                kernel: [spec.kernel[1], 1],
                stride: [spec.stride[1], 1],
                pad: [spec.pad[1], 0, spec.pad[3], 0],
                dilation: [spec.dilation[1], 1],
                kernels: spec.kernels,
                out: [spec.out[1], 1],
                weights: spec.weights,
                bias: spec.bias,
                dst: Some(dst),
                accumulate,
            },
        )
    }

    /// One-line surface `id` as a column: its pixels as lines of one pixel.
    fn column_view(&mut self, id: SurfId) -> SurfId {
        let mut v = self.p.surface(id).clone();
        v.name = format!("{}#column", v.name);
        v.kind = SurfKind::View {
            parent: id,
            channel_offset: 0,
            x: 0,
            y: 0,
        };
        (v.h, v.w) = (v.w, 1);
        v.line_stride = self.t.atom_of(v.precision);
        self.p.add_surface(v)
    }

    pub(super) fn emit_conv(&mut self, i: usize, spec: ConvSpec) -> Result<()> {
        let n = &self.g.nodes[i];
        let t = *self.t;
        let s = self.p.surface(spec.src).clone();
        let [kh, kw] = spec.kernel;
        if kh > MAX_KERNEL || kw > MAX_KERNEL {
            if s.pixel || spec.accumulate.is_some() {
                return Err(layer_err(
                    n,
                    format!("kernel {kh}x{kw} exceeds the 32x32 the convolution core takes"),
                ));
            }
            return self.emit_conv_by_taps(i, spec);
        }
        if s.h == 1
            && kh == 1
            && spec.out[0] == 1
            && spec.pad[0] == 0
            && spec.pad[2] == 0
            && s.w > 1
            && !s.pixel
            && ((t.entries_per_slice(s.w, s.c)).div_ceil(t.cbuf_entries_per_bank())
                + t.min_banks_for_weights(kw * s.c * t.bpe())
                > t.hw.cbuf_banks
                || s.w as usize > crate::capability::MAX_CUBE
                || spec.out[1] as usize > crate::capability::MAX_CUBE)
        {
            return self.emit_conv_as_column(i, spec);
        }
        if spec.pad.iter().any(|&p| p > 31) {
            return Err(layer_err(
                n,
                "padding above 31 is not supported by the hardware",
            ));
        }
        if spec.stride.iter().any(|&v| v == 0 || v > 8) {
            return Err(layer_err(n, "stride must be 1..=8"));
        }
        if spec.dilation.iter().any(|&v| v == 0 || v > 32) {
            return Err(layer_err(n, "dilation must be 1..=32"));
        }
        // An image input (lower::image_input chose it for this reader).
        let img = if s.pixel {
            let plan = image::plan(
                &t,
                [s.c, s.h, s.w],
                spec.kernel,
                spec.stride,
                spec.pad,
                spec.dilation,
                1,
            );
            if plan.is_none() || spec.accumulate.is_some() {
                return Err(layer_err(
                    n,
                    "internal: an image input read by a convolution without image mode",
                ));
            }
            plan
        } else {
            None
        };
        if spec.accumulate.is_none() && img.is_none() {
            if let Some(parts) = self.channel_parts(&spec, &s) {
                return self.emit_conv_by_channels(i, spec, &parts);
            }
        }
        // An input with scales per channel: channel c's weights carry its factor, and the
        // accumulator counts in the input's one scale (lower::channel_scales).
        let mut spec = spec;
        if let Some(f) = self.channel_factors(spec.src) {
            let per_channel = spec.weights.len() / (spec.kernels as usize * f.len()).max(1);
            for (e, w) in spec.weights.iter_mut().enumerate() {
                *w = (f64::from(*w) * f[e / per_channel.max(1) % f.len()]) as f32;
            }
        }
        let wino = self.winograd_plan(n, &spec);
        // Winograd multiplies 4x4 tiles G g Gᵀ of each kernel channel; image mode takes
        // a kernel row as one vector of 4 components per pixel.
        let transformed = match (&wino, &img) {
            (Some(_), _) => Some(winograd::transform_weights(&spec.weights)),
            (None, Some(_)) => Some(image::pre_extend(
                &spec.weights,
                spec.kernels as usize,
                s.c as usize,
                kh as usize,
                kw as usize,
            )),
            _ => None,
        };
        let weights_in = transformed.as_deref().unwrap_or(&spec.weights);
        let bpk = match (&wino, &img) {
            (Some(g), _) => 16 * g.ext[2] * t.bpe(),
            (None, Some(m)) => kh * m.kernel_channels * t.bpe(),
            _ => kh * kw * s.c * t.bpe(),
        };
        // int8: weights in units of a scale per output channel (per-filter) or one per
        // layer (per-kernel); the accumulator's unit is input scale x weight scale (x
        // 2^PRA_TRUNCATE in Winograd mode, whose input tiles are shifted right by it).
        let per_kernel = weights_in.len() / spec.kernels.max(1) as usize;
        let mut weight_scales = vec![1.0f64; spec.kernels as usize];
        let mut qweights = Vec::new();
        if t.precision == Precision::Int8 {
            let amax: Vec<f64> = weights_in
                .chunks(per_kernel.max(1))
                .map(|k| k.iter().fold(0.0f64, |m, v| m.max(f64::from(v.abs()))))
                .collect();
            let layer_max = amax.iter().fold(0.0f64, |m, v| m.max(*v));
            // Per filter, a dead filter (every weight below 2^-14 of the layer's largest,
            // zeros included) takes the layer's scale: its weights quantize to zero and
            // its channel keeps a unit near the others' (PP-OCRv4's recognizer has one
            // whose largest weight is 1e-17: its own scale put the channel's rescale
            // beyond the span of the SDP's 16-bit multipliers with a common shift).
            let dead = layer_max / 16384.0;
            for (k, a) in amax.iter().enumerate() {
                let a = if self.q.per_filter && *a >= dead {
                    *a
                } else {
                    layer_max
                };
                weight_scales[k] = if a > 0.0 { a / 127.0 } else { 1.0 };
            }
            qweights = weights_in
                .iter()
                .enumerate()
                .map(|(i, w)| (f64::from(*w) / weight_scales[i / per_kernel.max(1)]) as f32)
                .collect();
        }
        let values = if t.precision == Precision::Int8 {
            &qweights
        } else {
            weights_in
        };
        let packed = match (&wino, &img) {
            (Some(g), _) => pack::winograd_weights(
                &t,
                values,
                spec.kernels as usize,
                s.c as usize,
                g.ext[2] as usize,
            ),
            (None, Some(m)) => pack::image_weights(
                &t,
                values,
                spec.kernels as usize,
                m.kernel_channels as usize,
                kh as usize,
                m.y_ext as usize,
            ),
            _ => pack::conv_weights(
                &t,
                values,
                spec.kernels as usize,
                s.c as usize,
                kh as usize,
                kw as usize,
            ),
        };
        let eps = match (&wino, &img) {
            (Some(g), _) => winograd::entries_per_row(&t, g),
            (None, Some(m)) => m.entries_per_slice,
            _ => t.entries_per_slice(s.w, s.c),
        };
        let banks = t.hw.cbuf_banks;
        let total_w = t.banks_for_weights(spec.kernels, bpk);
        let min_w = t.min_banks_for_weights(bpk);
        let data_banks_for = |rows: u32| (eps * rows).div_ceil(t.cbuf_entries_per_bank());
        // Output rows per operation: all, or as many as fit beside one kernel group.
        let rows_in = |o0: u32, o1: u32| -> (u32, u32, u32, u32) {
            // Input rows [top, bottom] of output rows [o0, o1), clamped, and the padding
            // left at each end.
            let first = i64::from(o0) * i64::from(spec.stride[0]) - i64::from(spec.pad[0]);
            let last = i64::from(o1 - 1) * i64::from(spec.stride[0]) - i64::from(spec.pad[0])
                + i64::from(spec.dilation[0] * (kh - 1));
            let top = first.max(0);
            let bottom = last.min(i64::from(s.h) - 1);
            (
                top as u32,
                (bottom - top + 1).max(1) as u32,
                (-first).max(0) as u32,
                (last - (i64::from(s.h) - 1)).max(0) as u32,
            )
        };
        let out_h = spec.out[0];
        // The most input rows a chunk of r output rows reads (one clear of both edges).
        let span = |r: u32| (r - 1) * spec.stride[0] + spec.dilation[0] * (kh - 1) + 1;
        // A single operation (all output rows) makes the CDMA fetch every input row, even
        // rows a strided kernel never reads; a chunk fetches its window.
        let fetched = |r: u32| if r >= out_h { s.h } else { span(r).min(s.h) };
        // A chunk's cubes also fit the 13-bit size registers (a column of a long signal).
        let cube = crate::capability::MAX_CUBE as u32;
        let fits =
            |r: u32| data_banks_for(fetched(r)) + min_w <= banks && fetched(r) <= cube && r <= cube;
        // Winograd: one operation over the extended input (winograd_plan checked the fit).
        let chunk = if wino.is_some()
            || (data_banks_for(s.h) + min_w <= banks && s.h <= cube && out_h <= cube)
        {
            out_h
        } else {
            let mut r = out_h;
            while r > 1 && !fits(r) {
                r -= 1;
            }
            if !fits(r) {
                return Err(layer_err(
                    n,
                    format!(
                        "one output row of this convolution needs more CBUF than {} has \
                         ({} banks for {} input rows of {}x{} and {min_w} for weights)",
                        t.hw.name,
                        data_banks_for(span(1)),
                        span(1),
                        s.w,
                        s.c
                    ),
                ));
            }
            r
        };
        let weights = self.p.add_blob(format!("{}-weights", n.name), packed);
        let mut layers = vec![n.name.clone()];

        // The SDP: bias in X1, then whatever element-wise layers follow.
        let mut sdp = SdpStages::default();
        sdp.no_operands = wino.is_some();
        if let Some(b) = &spec.bias {
            if b.len() != spec.kernels as usize {
                return Err(layer_err(
                    n,
                    format!("{} bias values for {} kernels", b.len(), spec.kernels),
                ));
            }
            if b.iter().any(|&v| v != 0.0) {
                sdp.push(
                    &t,
                    Stage::Affine {
                        scale: None,
                        bias: Some(b.clone()),
                    },
                )
                .map_err(|e| layer_err(n, e))?;
            }
        }
        if let Some(other) = spec.accumulate {
            sdp.push(
                &t,
                Stage::Eltwise {
                    alu: SdpAluType::Sum,
                    mul: false,
                    other,
                },
            )
            .map_err(|e| layer_err(n, e))?;
        }
        let unit: Option<Vec<f64>> = if t.precision == Precision::Int8 {
            let s_src = self.require_scale(spec.src)?;
            let pra = wino.map_or(1.0, |g| f64::from(1u32 << g.pra_truncate));
            Some(weight_scales.iter().map(|w| s_src * w * pra).collect())
        } else {
            None
        };
        let fresh = self.p.surfaces.len();
        let dst = match spec.dst {
            Some(d) => d,
            None => {
                let out_t = self.out_tensor(n)?;
                let (last, fused) = self.fuse_elementwise(out_t, &mut sdp, unit.as_deref())?;
                layers.extend(fused);
                self.output_surface(last)
            }
        };
        if let Some(g) = &wino {
            if dst.0 < fresh || !matches!(self.p.surface(dst).kind, SurfKind::Pool) {
                return Err(layer_err(
                    n,
                    "internal: a Winograd convolution's output is not a new activation",
                ));
            }
            self.pad_for_winograd(dst, g);
        }
        let ds = self.p.surface(dst);
        if ds.c != spec.kernels || ds.h != spec.out[0] || ds.w != spec.out[1] {
            return Err(layer_err(
                n,
                format!(
                    "output {}x{}x{} differs from the convolution's {}x{}x{}",
                    ds.c, ds.h, ds.w, spec.kernels, spec.out[0], spec.out[1]
                ),
            ));
        }
        let (stages, out_cvt) = self.encode_sdp(&sdp, &n.name, dst, unit)?;
        let lut = sdp.lut();
        let mut o0 = 0;
        while o0 < out_h {
            let o1 = (o0 + chunk).min(out_h);
            let whole = o0 == 0 && o1 == out_h;
            let (top, rows, pad_top, pad_bottom) = rows_in(o0, o1);
            // Chunks read a window of the input and write a window of the output, with
            // their element-wise operands windowed alike.
            let window = |p: &mut Program, id: SurfId, y: u32, h: u32| -> SurfId {
                if whole {
                    return id;
                }
                let mut v = p.surface(id).clone();
                v.name = format!("{}@{y}", v.name);
                v.kind = SurfKind::View {
                    parent: id,
                    channel_offset: 0,
                    x: 0,
                    y,
                };
                // An image's window: lines of 4 components per pixel.
                let line = if v.pixel {
                    v.w * image::COMPONENTS * t.bpe()
                } else {
                    v.w * t.atom()
                };
                v.size = v.c.div_ceil(t.channels_per_atom()).saturating_sub(1) * v.surf_stride
                    + (h - 1) * v.line_stride
                    + line;
                v.h = h;
                p.add_surface(v)
            };
            let src = window(&mut self.p, spec.src, top, rows);
            let out = window(&mut self.p, dst, o0, o1 - o0);
            let mut chunk_stages = stages;
            for st in chunk_stages.iter_mut().flatten() {
                if let Operand::PerElement(id) = st.operand {
                    st.operand = Operand::PerElement(window(&mut self.p, id, o0, o1 - o0));
                }
            }
            // The CDMA fetches the whole source cube it is programmed with: all of the
            // input's rows for a single operation, even those a strided or short kernel
            // never reads (a 1x1 stride-2 convolution of 28 rows reads 27).
            let data_banks = match &wino {
                Some(g) => data_banks_for(g.ext[1]),
                None => data_banks_for(if whole { s.h } else { rows }),
            };
            if data_banks + min_w > banks {
                return Err(layer_err(
                    n,
                    format!(
                        "rows {o0}..{o1}: {data_banks} data banks and {min_w} for weights \
                         exceed the {banks} of {}",
                        t.hw.name
                    ),
                ));
            }
            // Upstream's order of preference: all weights resident; else two kernel
            // groups (ping-pong); else one.
            let weight_banks = if data_banks + total_w <= banks {
                total_w
            } else if data_banks + 2 * min_w <= banks {
                2 * min_w
            } else {
                min_w
            };
            self.p.ops.push(HwOp {
                layers: if whole {
                    layers.clone()
                } else {
                    layers.iter().map(|l| format!("{l}@{o0}")).collect()
                },
                kind: HwOpKind::Conv(ConvOp {
                    src,
                    kernel: spec.kernel,
                    stride: spec.stride,
                    pad: [pad_top, spec.pad[1], pad_bottom, spec.pad[3]],
                    dilation: spec.dilation,
                    kernels: spec.kernels,
                    channels: s.c,
                    out: [o1 - o0, spec.out[1]],
                    weights,
                    bytes_per_kernel: bpk,
                    data_banks,
                    weight_banks,
                    entries_per_slice: eps,
                    data_reuse: false,
                    skip_data_release: false,
                    winograd: wino,
                    image: img,
                    compressed: None,
                    sdp: SdpOp {
                        src: None,
                        dst: out,
                        stages: chunk_stages,
                        lut,
                        out_cvt,
                    },
                }),
            });
            o0 = o1;
        }
        Ok(())
    }
}

/// The largest convolution stride the convolution core takes (`D_CONV_STRIDE_EXT`: 3
/// bits per axis, stride - 1).
pub(crate) const MAX_CONV_STRIDE: usize = 8;

/// The largest PDP stride (`D_POOLING_KERNEL_CFG`: 4 bits per axis, stride - 1).
pub(crate) const MAX_PDP_STRIDE: usize = 16;

/// The largest kernel width or height the convolution core takes.
const MAX_KERNEL: u32 = 32;

/// Most PDP passes that pick a strided convolution's outputs.
const MAX_PICK_PASSES: usize = 3;

/// A convolution stride `s` as a stride `g` of the convolution core times the strides of
/// PDP passes that pick every `p`-th output, `g * p1 * p2 ... = s`: the largest such `g`
/// (the fewest MACs dropped), passes as few as go. `None` when no split exists (a prime
/// factor above 16) or takes more than [`MAX_PICK_PASSES`] passes.
pub(crate) fn stride_split(s: usize) -> Option<(usize, Vec<usize>)> {
    if (1..=MAX_CONV_STRIDE).contains(&s) {
        return Some((s, Vec::new()));
    }
    (1..=MAX_CONV_STRIDE)
        .rev()
        .filter(|g| s.is_multiple_of(*g))
        .find_map(|g| {
            let mut left = s / g;
            let mut passes = Vec::new();
            while left > 1 {
                let p = (2..=MAX_PDP_STRIDE.min(left))
                    .rev()
                    .find(|p| left.is_multiple_of(*p))?;
                passes.push(p);
                left /= p;
            }
            (passes.len() <= MAX_PICK_PASSES).then_some((g, passes))
        })
}

/// Most operations one grouped convolution is split into ([`Lowering::group_chunk`]).
const MAX_GROUP_PARTS: usize = 16;

/// Dense weights `[kn][cin][taps]` of kernels `k0..k0 + kn` of a grouped convolution
/// (weights `[k][cpg][taps]`, `kpg` kernels per group), reading `cin` input channels that
/// start at `k0`'s group: zero outside each kernel's group.
fn block_diagonal(
    w: &[f32],
    k0: usize,
    kn: usize,
    cin: usize,
    cpg: usize,
    kpg: usize,
    taps: usize,
) -> Vec<f32> {
    let mut d = vec![0.0f32; kn * cin * taps];
    for ko in 0..kn {
        let gi = ko / kpg;
        for ci in 0..cpg {
            let to = (ko * cin + gi * cpg + ci) * taps;
            let from = ((k0 + ko) * cpg + ci) * taps;
            d[to..to + taps].copy_from_slice(&w[from..from + taps]);
        }
    }
    d
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: usize, b: usize) -> usize {
    a / gcd(a, b) * b
}

pub(super) struct ConvSpec {
    pub(super) src: SurfId,
    pub(super) kernel: [u32; 2],
    pub(super) stride: [u32; 2],
    pub(super) pad: [u32; 4],
    pub(super) dilation: [u32; 2],
    pub(super) kernels: u32,
    pub(super) out: [u32; 2],
    pub(super) weights: Vec<f32>,
    pub(super) bias: Option<Vec<f32>>,
    /// Write here and fuse nothing after (an intermediate of a lowering).
    pub(super) dst: Option<SurfId>,
    /// Add this surface (a partial sum over other input channels) in the SDP.
    pub(super) accumulate: Option<SurfId>,
}

#[cfg(test)]
mod tests {
    use super::stride_split;

    #[test]
    fn strides_split_into_a_core_stride_and_pdp_picks() {
        assert_eq!(stride_split(8), Some((8, vec![])));
        assert_eq!(stride_split(16), Some((8, vec![2])));
        assert_eq!(stride_split(14), Some((7, vec![2])));
        assert_eq!(stride_split(32), Some((8, vec![4])));
        assert_eq!(stride_split(20), Some((5, vec![4])));
        assert_eq!(stride_split(256), Some((8, vec![16, 2])));
        assert_eq!(stride_split(11), Some((1, vec![11])));
        // A prime factor above 16, and more than three picks.
        assert_eq!(stride_split(17), None);
        assert_eq!(stride_split(8 * 16 * 16 * 16 * 2), None);
    }
}
