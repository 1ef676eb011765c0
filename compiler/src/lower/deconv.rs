//! Deconvolutions (transposed convolutions).

use super::conv::ConvSpec;
use super::{layer_err, Lowering};
use crate::engine::*;
use crate::error::Result;

impl Lowering<'_> {
    /// A deconvolution (transposed convolution). Stride 1: a convolution with the kernel
    /// flipped and the padding complemented. Stride s > 1 (dilation 1): one convolution
    /// computing the `sy * sx` output phases as channel groups (phase `(ry, rx)` at
    /// `(q*sy + ry, p*sx + rx)` sums `in[q - m] * w[ry + m*sy]`), RUBIK contract to
    /// interleave them, and a window of the result for the padding's crop.
    pub(super) fn deconv(&mut self, i: usize, c: &crate::ir::Conv) -> Result<()> {
        let n = &self.g.nodes[i];
        let t = *self.t;
        let src = self.input(n, 0)?;
        let s = self.p.surface(src).clone();
        let out_t = self.out_tensor(n)?;
        let out = self.g.shape(out_t);
        let [kh, kw] = c.window.kernel;
        let [sy, sx] = c.window.stride;
        let [dy, dx] = c.window.dilation.map(|d| d.max(1));
        let [pt, pl, pb, pr] = c.window.pad;
        let groups = c.groups.max(1);
        let cin = s.c as usize;
        let k = c.out_channels;
        if !cin.is_multiple_of(groups) || !k.is_multiple_of(groups) || kh == 0 || kw == 0 {
            return Err(layer_err(
                n,
                format!("{groups} groups do not divide {cin} input / {k} output channels"),
            ));
        }
        let (cpg, kpg) = (cin / groups, k / groups);
        if c.weight.len() != cin * kpg * kh * kw {
            return Err(layer_err(
                n,
                format!(
                    "weights hold {} values, {cin}x{kpg}x{kh}x{kw} expected",
                    c.weight.len()
                ),
            ));
        }
        // w[ci][ko][y][x] of the deconvolution, 0 across groups.
        let wt = |ko: usize, ci: usize, y: usize, x: usize| -> f32 {
            if ci / cpg != ko / kpg {
                return 0.0;
            }
            c.weight.data[((ci * kpg + ko % kpg) * kh + y) * kw + x]
        };
        if sy == 1 && sx == 1 {
            let full = |k: usize, d: usize| d * (k - 1);
            let pads = [
                full(kh, dy).checked_sub(pt),
                full(kw, dx).checked_sub(pl),
                full(kh, dy).checked_sub(pb),
                full(kw, dx).checked_sub(pr),
            ];
            let Some(pad) = pads.into_iter().collect::<Option<Vec<usize>>>() else {
                return Err(layer_err(n, "padding larger than the dilated kernel"));
            };
            let mut dense = vec![0.0f32; k * cin * kh * kw];
            for ko in 0..k {
                for ci in 0..cin {
                    for y in 0..kh {
                        for x in 0..kw {
                            dense[((ko * cin + ci) * kh + y) * kw + x] =
                                wt(ko, ci, kh - 1 - y, kw - 1 - x);
                        }
                    }
                }
            }
            return self.emit_conv(
                i,
                ConvSpec {
                    src,
                    kernel: [kh as u32, kw as u32],
                    stride: [1, 1],
                    pad: [pad[0] as u32, pad[1] as u32, pad[2] as u32, pad[3] as u32],
                    dilation: [dy as u32, dx as u32],
                    kernels: k as u32,
                    out: [out.h as u32, out.w as u32],
                    weights: dense,
                    bias: c.bias.as_ref().map(|b| b.data.clone()),
                    dst: None,
                    accumulate: None,
                },
            );
        }
        let rubik = t.hw.features.rubik;
        if dy != 1 || dx != 1 {
            return Err(layer_err(
                n,
                "strided deconvolution with dilation is not supported",
            ));
        }
        let name = &n.name;
        // A nearest-neighbour upsampling (each input pixel repeated over its sy x sx
        // block: a depthwise kernel of ones as large as the stride) without RUBIK: every
        // phase is the input itself, so the copies read it directly.
        let nearest = groups == cin
            && k == cin
            && [kh, kw] == [sy, sx]
            && [pt, pl, pb, pr] == [0; 4]
            && c.bias.is_none()
            && c.weight.data.iter().all(|&v| v == 1.0)
            && [out.h, out.w] == [s.h as usize * sy, s.w as usize * sx];
        if !rubik && nearest {
            let dst = self.output_surface(out_t);
            let phases = vec![src; sy * sx];
            return self.interleave(name, &phases, dst, [sy, sx]);
        }
        let (my, mx) = (kh.div_ceil(sy), kw.div_ceil(sx));
        let cpa = t.channels_per_atom() as usize;
        let kpad = k.next_multiple_of(cpa);
        let phases = sy * sx;
        let kk = phases * kpad;
        // Phase rows and columns: the natural result, or more where output_padding (an
        // output larger than the natural one) needs rows no input reaches (bias only).
        let hp = (s.h as usize + my - 1).max((out.h + pt).div_ceil(sy));
        let wp = (s.w as usize + mx - 1).max((out.w + pl).div_ceil(sx));
        let (full_h, full_w) = (hp * sy, wp * sx);
        if out.h + pt > full_h || out.w + pl > full_w {
            return Err(layer_err(
                n,
                format!(
                    "output {}x{} does not fit the deconvolution's {full_h}x{full_w}",
                    out.h, out.w
                ),
            ));
        }
        // The phase convolution's weights over input channels `c0..c0 + cn` for output
        // channels `k0..k0 + kn` of the phases `phs`, and their bias.
        let phase_weights = |phs: &[usize], (c0, cn): (usize, usize), (k0, kn): (usize, usize)| {
            let mut weights = vec![0.0f32; phs.len() * kn * cn * my * mx];
            let mut bias = vec![0.0f32; phs.len() * kn];
            for (pi, &ph) in phs.iter().enumerate() {
                let (ry, rx) = (ph / sx, ph % sx);
                for ko in 0..kn {
                    bias[pi * kn + ko] = c.bias.as_ref().map_or(0.0, |b| b.data[k0 + ko]);
                    for ci in 0..cn {
                        for jy in 0..my {
                            for jx in 0..mx {
                                let y = ry + (my - 1 - jy) * sy;
                                let x = rx + (mx - 1 - jx) * sx;
                                if y < kh && x < kw {
                                    weights[(((pi * kn + ko) * cn + ci) * my + jy) * mx + jx] =
                                        wt(k0 + ko, c0 + ci, y, x);
                                }
                            }
                        }
                    }
                }
            }
            (weights, bias)
        };
        let phase_s = self.surface_geometry(
            &format!("{name}#phases"),
            kk as u32,
            hp as u32,
            wp as u32,
            SurfKind::Pool,
        );
        let mut phase_s = phase_s;
        // int8: RUBIK moves bytes, so the phases carry the output's scale.
        phase_s.scale = self.scale_of(out_t, false);
        let phase_id = self.p.add_surface(phase_s);
        let spec = |src: SurfId, kernels: usize, weights: Vec<f32>, bias: Vec<f32>, dst: SurfId| {
            ConvSpec {
                src,
                kernel: [my as u32, mx as u32],
                stride: [1, 1],
                pad: [
                    (my - 1) as u32,
                    (mx - 1) as u32,
                    (hp - s.h as usize) as u32,
                    (wp - s.w as usize) as u32,
                ],
                dilation: [1, 1],
                kernels: kernels as u32,
                out: [hp as u32, wp as u32],
                weights,
                bias: c.bias.is_some().then_some(bias),
                dst: Some(dst),
                accumulate: None,
            }
        };
        // Grouped phase kernels larger than 1x1 (depthwise: a linear resize's taps) run per
        // part of the groups and per phase, each convolution dense within its part only,
        // into the phase's channels: one dense convolution would hold `groups` times the
        // weights and MACs. A 1x1 phase kernel (a nearest upsampling on a build with
        // RUBIK) stays one convolution: split, YOLOv8n's two took 94 more operations and
        // 1.5 % more modelled cycles for 0.65 MB less weights (2026-11-28).
        let parts = self.group_chunk(groups, cpg, kpg).filter(|_| my * mx > 1);
        match parts {
            Some(q) => {
                for g0 in (0..groups).step_by(q) {
                    let g1 = (g0 + q).min(groups);
                    let (c0, cn) = (g0 * cpg, (g1 - g0) * cpg);
                    let (k0, kn) = (g0 * kpg, (g1 - g0) * kpg);
                    let from =
                        self.channel_view(src, c0 as u32, cn as u32, format!("{name}#in{g0}"));
                    for ph in 0..phases {
                        let (weights, bias) = phase_weights(&[ph], (c0, cn), (k0, kn));
                        let to = self.channel_view(
                            phase_id,
                            (ph * kpad + k0) as u32,
                            kn as u32,
                            format!("{name}#phase{ph}out{g0}"),
                        );
                        self.emit_conv(i, spec(from, kn, weights, bias, to))?;
                    }
                }
            }
            None => {
                // One convolution computing every phase; the padding channels between
                // phases get zero kernels.
                let all: Vec<usize> = (0..phases).collect();
                let (w, b) = phase_weights(&all, (0, cin), (0, k));
                let mut weights = vec![0.0f32; kk * cin * my * mx];
                let mut bias = vec![0.0f32; kk];
                let per = k * cin * my * mx;
                for ph in 0..phases {
                    let at = ph * kpad * cin * my * mx;
                    weights[at..at + per].copy_from_slice(&w[ph * per..(ph + 1) * per]);
                    bias[ph * kpad..ph * kpad + k].copy_from_slice(&b[ph * k..(ph + 1) * k]);
                }
                self.emit_conv(i, spec(src, kk, weights, bias, phase_id))?;
            }
        }
        let full_s = self.surface_geometry(
            &format!("{name}#full"),
            k as u32,
            full_h as u32,
            full_w as u32,
            SurfKind::Pool,
        );
        let mut full_s = full_s;
        full_s.scale = self.scale_of(out_t, false);
        let full_id = self.p.add_surface(full_s);
        if rubik {
            self.p.ops.push(HwOp {
                layers: vec![n.name.clone()],
                kind: HwOpKind::Rubik(RubikOp {
                    src: phase_id,
                    dst: full_id,
                    stride: [sy as u32, sx as u32],
                }),
            });
        } else {
            let phases: Vec<SurfId> = (0..phases)
                .map(|ph| {
                    let v = self.channel_view(
                        phase_id,
                        (ph * kpad) as u32,
                        k as u32,
                        format!("{name}#phase{ph}"),
                    );
                    // Only the phase's rows and columns the result holds.
                    let ps = &mut self.p.surfaces[v.0];
                    ps.h = hp as u32;
                    ps.w = wp as u32;
                    v
                })
                .collect();
            self.interleave(name, &phases, full_id, [sy, sx])?;
        }
        // The output: a window of the full result at the padding's offset.
        let mut view = self.p.surface(full_id).clone();
        view.name = self.g.tensor(out_t).name.clone();
        view.h = out.h as u32;
        view.w = out.w as u32;
        // The bytes the window spans from its first atom.
        view.size = (k as u32).div_ceil(t.channels_per_atom()).saturating_sub(1) * view.surf_stride
            + (view.h - 1) * view.line_stride
            + view.w * t.atom();
        view.kind = SurfKind::View {
            parent: full_id,
            channel_offset: 0,
            x: pl as u32,
            y: pt as u32,
        };
        let needs_copy = self.g.outputs.contains(&out_t) || self.views.contains_key(&out_t);
        let view_id = self.p.add_surface(view);
        if !needs_copy {
            self.surf.insert(out_t, view_id);
            return Ok(());
        }
        let dst = self.output_surface(out_t);
        self.sdp_copy(&n.name, format!("{name}#crop"), view_id, dst)
    }

    /// Interleaves the phases of a strided result without RUBIK: `phases[ry * sx + rx]`
    /// (the result's channels over `hp x wp`) goes to lines `ry, ry + sy, ...` and columns
    /// `rx, rx + sx, ...` of `full`. The SDP writes one memory atom per pixel and can skip
    /// lines and surfaces but not pixels, so each copy reads the phase's columns as lines
    /// of one pixel (`line_stride` one atom) and writes them `sx` atoms apart: one copy
    /// per phase and line of the phase, or, when fewer, per phase and atom of channels
    /// (the phase's lines then stand in for the surfaces: `surf_stride` the line stride,
    /// `sy` lines apart in `full`). Bytes move unchanged in fp16; int8 is rescaled to
    /// `full`'s scale as any SDP copy.
    fn interleave(
        &mut self,
        layer: &str,
        phases: &[SurfId],
        full: SurfId,
        [sy, sx]: [usize; 2],
    ) -> Result<()> {
        let t = *self.t;
        let (atom, cpa) = (t.atom(), t.channels_per_atom());
        let fs = self.p.surface(full).clone();
        for (ph, &src) in phases.iter().enumerate() {
            let (ry, rx) = ((ph / sx) as u32, (ph % sx) as u32);
            let ps = self.p.surface(src).clone();
            let (hp, wp, k) = (ps.h, ps.w, ps.c);
            let groups = k.div_ceil(cpa);
            let line = sy as u32 * fs.line_stride;
            let pixel = sx as u32 * atom;
            if groups < hp && self.p.channel_scales(src).is_none() {
                for g in 0..groups {
                    // Channels of one atom over every line: the lines as surfaces.
                    let from = self.strided_view(
                        src,
                        format!("{layer}#p{ph}g{g}"),
                        (g * cpa, 0, 0),
                        (hp * cpa, wp, 1),
                        (atom, ps.line_stride),
                    );
                    let to = self.strided_view(
                        full,
                        format!("{layer}#to{ph}g{g}"),
                        (g * cpa, ry, rx),
                        (hp * cpa, wp, 1),
                        (pixel, line),
                    );
                    self.sdp_copy(layer, format!("{layer}#interleave{ph}g{g}"), from, to)?;
                }
            } else {
                for q in 0..hp {
                    let from = self.strided_view(
                        src,
                        format!("{layer}#p{ph}l{q}"),
                        (0, q, 0),
                        (k, wp, 1),
                        (atom, ps.surf_stride),
                    );
                    let to = self.strided_view(
                        full,
                        format!("{layer}#to{ph}l{q}"),
                        (0, q * sy as u32 + ry, rx),
                        (k, wp, 1),
                        (pixel, fs.surf_stride),
                    );
                    self.sdp_copy(layer, format!("{layer}#interleave{ph}l{q}"), from, to)?;
                }
            }
        }
        Ok(())
    }

    /// A view of `base` from channel `c0`, line `y`, column `x` (in `base`'s
    /// coordinates) holding `c x h x w` with its own strides: what the SDP reads or
    /// writes when its lines or surfaces are not the tensor's.
    fn strided_view(
        &mut self,
        base: SurfId,
        name: String,
        (c0, y, x): (u32, u32, u32),
        (c, h, w): (u32, u32, u32),
        (line_stride, surf_stride): (u32, u32),
    ) -> SurfId {
        let bs = self.p.surface(base).clone();
        let kind = match bs.kind {
            SurfKind::View {
                parent,
                channel_offset,
                x: px,
                y: py,
            } => SurfKind::View {
                parent,
                channel_offset: channel_offset + c0,
                x: px + x,
                y: py + y,
            },
            _ => SurfKind::View {
                parent: base,
                channel_offset: c0,
                x,
                y,
            },
        };
        let mut v = bs;
        v.name = name;
        v.kind = kind;
        (v.c, v.h, v.w) = (c, h, w);
        (v.line_stride, v.surf_stride) = (line_stride, surf_stride);
        v.size = (c.div_ceil(self.t.channels_per_atom()) - 1) * surf_stride
            + (h - 1) * line_stride
            + w * self.t.atom();
        self.p.add_surface(v)
    }
}
