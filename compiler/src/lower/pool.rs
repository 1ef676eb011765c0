//! Pooling: PDP operations.

use super::{layer_err, Lowering};
use crate::engine::*;
use crate::error::Result;
use crate::ir::{Node, PoolKind, TensorId};
use crate::sdp::{SdpStages, Stage};
use crate::target::Precision;

impl Lowering<'_> {
    /// Global pooling over more than 8x8 pixels, in PDP passes of windows up to 8x8: each
    /// pass pools windows of `a x b` (stride `a x b`) over its input padded to a multiple
    /// of the window, until one window covers what is left (two passes up to 64x64, three
    /// up to 512x512). Max pooling ignores the padding; average pooling counts it as
    /// zeros, so an SDP then scales by `padded area / area`.
    fn global_pool(
        &mut self,
        n: &Node,
        kind: PoolKind,
        src: SurfId,
        out_t: TensorId,
    ) -> Result<()> {
        let t = *self.t;
        let s = self.p.surface(src).clone();
        // The windows along one axis: each the smallest `a` (<= 8, padding <= 7) after
        // which the rest fits one more window, or 8 while it does not; the last window
        // covers the rest.
        let factors = |mut size: u32| -> Vec<u32> {
            let mut v = Vec::new();
            while size > 8 {
                let a = (1..=8)
                    .find(|&a| size.div_ceil(a) <= 8 && a * size.div_ceil(a) - size <= 7)
                    .unwrap_or(8);
                v.push(a);
                size = size.div_ceil(a);
            }
            v.push(size);
            v
        };
        let (mut fh, mut fw) = (factors(s.h), factors(s.w));
        let passes = fh.len().max(fw.len());
        if passes > 4 {
            return Err(layer_err(
                n,
                format!(
                    "global pooling over {}x{} needs more than 4 PDP passes",
                    s.h, s.w
                ),
            ));
        }
        // Windows of 1 before the last one of the shorter axis.
        for f in [&mut fh, &mut fw] {
            while f.len() < passes {
                f.insert(f.len() - 1, 1);
            }
        }
        let max = kind == PoolKind::Max;
        let mut cur = src;
        let (mut h, mut w) = (s.h, s.w);
        for k in 0..passes - 1 {
            let (ah, aw) = (fh[k], fw[k]);
            let (mh, mw) = (h.div_ceil(ah), w.div_ceil(aw));
            let op = PdpOp {
                src: cur,
                dst: cur,
                max,
                kernel: [ah, aw],
                stride: [ah, aw],
                pad: [0, 0, ah * mh - h, aw * mw - w],
                pad_value: 0,
            };
            cur = self.pool_stage(n, &format!("partial{}", k + 1), k + 1, op, [mh, mw]);
            (h, w) = (mh, mw);
        }
        let (mid, mh, mw) = (cur, h, w);
        let padded: u32 = fh.iter().product::<u32>() * fw.iter().product::<u32>();
        let exact = max || padded == s.h * s.w;
        let dst = if exact {
            self.inherit.insert(out_t, s.scale);
            let d = self.output_surface(out_t);
            self.check_scale_kept(n, src, d)?;
            d
        } else {
            let mut g =
                self.surface_geometry(&format!("{}#sum", n.name), s.c, 1, 1, SurfKind::Pool);
            g.scale = s.scale;
            self.p.add_surface(g)
        };
        self.p.ops.push(HwOp {
            layers: vec![n.name.clone()],
            kind: HwOpKind::Pdp(PdpOp {
                src: mid,
                dst,
                max,
                kernel: [mh, mw],
                stride: [mh, mw],
                pad: [0; 4],
                pad_value: 0,
            }),
        });
        if !exact {
            let mut sdp = SdpStages::default();
            let scale = padded as f32 / (s.h * s.w) as f32;
            sdp.push(
                &t,
                Stage::Affine {
                    scale: Some(vec![scale; s.c as usize]),
                    bias: None,
                },
            )
            .map_err(|e| layer_err(n, e))?;
            let unit = self.uniform_unit(dst)?;
            let (last, fused) = self.fuse_elementwise(out_t, &mut sdp, unit.as_deref())?;
            let out = self.output_surface(last);
            let mut layers = vec![format!("{}#scale", n.name)];
            layers.extend(fused);
            // A fused sigmoid or tanh brings its table.
            self.push_sdp(layers, &n.name, (dst, out), &sdp, unit)?;
        }
        Ok(())
    }

    /// One PDP pass of a pooling node `n` done in several (`op` with its destination
    /// replaced): writes a new `mh x mw` surface `<node>#<tag>` of the source's channels
    /// and int8 scale, which it returns; the operation is the node's pass `pass`.
    pub(super) fn pool_stage(
        &mut self,
        n: &Node,
        tag: &str,
        pass: usize,
        mut op: PdpOp,
        [mh, mw]: [u32; 2],
    ) -> SurfId {
        let s = self.p.surface(op.src).clone();
        let mut mid =
            self.surface_geometry(&format!("{}#{tag}", n.name), s.c, mh, mw, SurfKind::Pool);
        mid.scale = s.scale;
        op.dst = self.p.add_surface(mid);
        let dst = op.dst;
        self.p.ops.push(HwOp {
            layers: vec![format!("{}#{pass}", n.name)],
            kind: HwOpKind::Pdp(op),
        });
        dst
    }

    /// Max pooling over windows wider than PDP's 8 (SPP's 9x9 and 13x13, stride 1), as a
    /// chain of PDP max poolings of windows up to 8 at stride 1, the last at the layer's
    /// stride: the maximum over `k1` then over `k2` neighbours is the maximum over
    /// `k1 + k2 - 1`, and a window starting `b1 + b2` before is one padded by `b1` then by
    /// `b2`. Padding (never a maximum) splits over the stages up to each one's limit: an
    /// intermediate value a later stage skips as padding only covers inputs that the
    /// neighbouring value it does read covers too.
    fn max_pool_chain(&mut self, n: &Node, p: &crate::ir::Pool, src: SurfId) -> Result<()> {
        let s = self.p.surface(src).clone();
        let out = self.g.shape(self.out_tensor(n)?);
        // One axis: input `size`, window `k`, stride `st`, begin padding `b`, `outs`
        // outputs: the stages (window, begin, end padding) before the last one, and the
        // last one's window and begin padding.
        let axis = |size: u32, k: u32, st: u32, b: u32, outs: u32| {
            let end = (i64::from(outs) - 1) * i64::from(st) + i64::from(k)
                - i64::from(size)
                - i64::from(b);
            let (mut k_left, mut b_left, mut e_left) = (k, b, end.max(0) as u32);
            // Windows as even as they go (9 = 5 + 5 - 1, 13 = 7 + 7 - 1): the smaller the
            // window, the more outputs a PDP strip holds on the builds of small buffers.
            let mut n_left = (k - 1).div_ceil(7).max(1);
            let mut stages = Vec::new();
            while k_left > 8 || b_left > 7 || e_left > 7 {
                let share = n_left.max(1);
                let ks = ((k_left - 1).div_ceil(share) + 1).min(8);
                n_left = n_left.saturating_sub(1);
                // The padding shared alike ("same" padding keeps every stage's size).
                let (bs, es) = (
                    b_left.div_ceil(share).min(ks - 1).min(7),
                    e_left.div_ceil(share).min(ks - 1).min(7),
                );
                stages.push((ks, bs, es));
                (k_left, b_left, e_left) = (k_left + 1 - ks, b_left - bs, e_left - es);
                if ks == 1 {
                    break; // padding no window can hold: refused below
                }
            }
            (stages, (k_left, b_left))
        };
        let [kh, kw] = p.window.kernel.map(|v| v as u32);
        let [sh, sw] = p.window.stride.map(|v| v as u32);
        let [pt, pl, _, _] = p.window.pad.map(|v| v as u32);
        let (mut rows, (kh_last, pt_last)) = axis(s.h, kh, sh, pt, out.h as u32);
        let (mut cols, (kw_last, pl_last)) = axis(s.w, kw, sw, pl, out.w as u32);
        if kh_last > 8 || kw_last > 8 {
            return Err(layer_err(
                n,
                format!(
                    "max pooling {kh}x{kw} with padding {:?}: more padding than windows",
                    p.window.pad
                ),
            ));
        }
        let stages = rows.len().max(cols.len());
        rows.resize(stages, (1, 0, 0));
        cols.resize(stages, (1, 0, 0));
        let (mut cur, mut h, mut w) = (src, s.h, s.w);
        for (k, (&(kh, pt, pb), &(kw, pl, pr))) in rows.iter().zip(&cols).enumerate() {
            let (mh, mw) = (h + pt + pb + 1 - kh, w + pl + pr + 1 - kw);
            let op = PdpOp {
                src: cur,
                dst: cur,
                max: true,
                kernel: [kh, kw],
                stride: [1, 1],
                pad: [pt, pl, pb, pr],
                pad_value: 0,
            };
            cur = self.pool_stage(n, &format!("stage{}", k + 1), k + 1, op, [mh, mw]);
            (h, w) = (mh, mw);
        }
        let mut last = *p;
        last.window.kernel = [kh_last as usize, kw_last as usize];
        last.window.pad = [pt_last as usize, pl_last as usize, 0, 0];
        self.pool_from(n, &last, cur)
    }

    pub(super) fn pool(&mut self, n: &Node, p: &crate::ir::Pool) -> Result<()> {
        let src = self.input(n, 0)?;
        self.pool_from(n, p, src)
    }

    /// Pooling of node `n` (its output tensor) over surface `src`: its input or a window
    /// of it ([`Lowering::crop`]).
    pub(super) fn pool_from(&mut self, n: &Node, p: &crate::ir::Pool, src: SurfId) -> Result<()> {
        let s = self.p.surface(src).clone();
        let out_t = self.out_tensor(n)?;
        let out = self.g.shape(out_t);
        let [kh, kw] = p.window.kernel.map(|v| v as u32);
        let [sh, sw] = p.window.stride.map(|v| v as u32);
        let [pt, pl, _, _] = p.window.pad.map(|v| v as u32);
        let global = out.h == 1 && out.w == 1 && kh == s.h && kw == s.w && pt == 0 && pl == 0;
        if global && (kh > 8 || kw > 8) {
            return self.global_pool(n, p.kind, src, out_t);
        }
        if p.kind == PoolKind::Max && (kh > 8 || kw > 8 || pt > 7 || pl > 7) {
            return self.max_pool_chain(n, p, src);
        }
        if !(1..=8).contains(&kh) || !(1..=8).contains(&kw) {
            return Err(layer_err(
                n,
                format!(
                    "pooling window {kh}x{kw}: PDP takes 1..=8 (larger windows are not split yet)"
                ),
            ));
        }
        if !(1..=16).contains(&sh) || !(1..=16).contains(&sw) {
            return Err(layer_err(n, format!("stride {sh}x{sw}: PDP takes 1..=16")));
        }
        // Bottom/right padding so that PDP's floor((H + pt + pb - k) / s) + 1 gives the
        // network's output size (Caffe rounds up).
        let pad_end = |size: u32, outn: u32, k: u32, st: u32, start: u32| -> i64 {
            (i64::from(outn) - 1) * i64::from(st) + i64::from(k)
                - i64::from(size)
                - i64::from(start)
        };
        let pb = pad_end(s.h, out.h as u32, kh, sh, pt).max(0) as u32;
        let pr = pad_end(s.w, out.w as u32, kw, sw, pl).max(0) as u32;
        let hw_out = |size: u32, k: u32, st: u32, a: u32, b: u32| (size + a + b - k) / st + 1;
        if hw_out(s.h, kh, sh, pt, pb) != out.h as u32
            || hw_out(s.w, kw, sw, pl, pr) != out.w as u32
        {
            return Err(layer_err(
                n,
                format!(
                    "output {}x{} cannot be produced by PDP from {}x{} (window {kh}x{kw}, \
                     stride {sh}x{sw})",
                    out.h, out.w, s.h, s.w
                ),
            ));
        }
        if [pt, pl, pb, pr].iter().any(|&v| v > 7) {
            return Err(layer_err(n, "PDP padding is at most 7"));
        }
        // Average pooling whose windows do not all divide by the full window (ceil-mode
        // windows past the declared padding; padding excluded from the divisor): the
        // output splits into rectangles of equal divisor, one PDP operation each.
        let segments = if p.kind == PoolKind::Avg {
            let [_, _, db, dr] = p.window.pad.map(|v| v as u32);
            let include = p.count_include_pad;
            let rows = avg_segments(s.h, kh, sh, pt, db, out.h as u32, include);
            let cols = avg_segments(s.w, kw, sw, pl, dr, out.w as u32, include);
            match (rows, cols) {
                (Some(r), Some(c)) if r.len() == 1 && c.len() == 1 => None,
                (Some(r), Some(c)) => Some((r, c)),
                _ => {
                    return Err(layer_err(
                        n,
                        "average pooling with a window that covers no input element or \
                         whose divisor changes without a regular stride: PDP divides every \
                         window of an operation by one size",
                    ))
                }
            }
        } else {
            None
        };
        if let Some((rows, cols)) = &segments {
            let bad = rows
                .iter()
                .chain(cols)
                .find(|g| g.kernel > 8 || g.pad0 > 7 || g.pad1 > 7);
            if let Some(g) = bad {
                return Err(layer_err(
                    n,
                    format!(
                        "average pooling split by divisor needs a {}-wide window with padding \
                         {}/{}: PDP takes windows of 1..=8 and padding up to 7",
                        g.kernel, g.pad0, g.pad1
                    ),
                ));
            }
        }
        // PDP cannot rescale: in int8 the output keeps the input's scale. Where the
        // output's scale is fixed otherwise (a view into a concatenation calibrated to
        // another scale: Inception's and DenseNet's pooling branches), the PDP writes a
        // surface of its own and an SDP pass rescales it into place.
        self.inherit.insert(out_t, s.scale);
        let dst = self.output_surface(out_t);
        let rescale = self.t.precision == Precision::Int8 && {
            let b = self.p.surface(dst).scale;
            (s.scale - b).abs() > s.scale.abs() * 1e-6
        };
        let pooled = if rescale {
            let d = self.p.surface(dst).clone();
            let mut tmp =
                self.surface_geometry(&format!("{}#pooled", n.name), d.c, d.h, d.w, SurfKind::Pool);
            tmp.scale = s.scale;
            self.p.add_surface(tmp)
        } else {
            dst
        };
        self.check_scale_kept(n, src, pooled)?;
        match segments {
            None => self.p.ops.push(HwOp {
                layers: vec![n.name.clone()],
                kind: HwOpKind::Pdp(PdpOp {
                    src,
                    dst: pooled,
                    max: p.kind == PoolKind::Max,
                    kernel: [kh, kw],
                    stride: [sh, sw],
                    pad: [pt, pl, pb, pr],
                    pad_value: 0,
                }),
            }),
            Some((rows, cols)) => {
                for r in &rows {
                    for c in &cols {
                        let tag = format!("{}#y{}x{}", n.name, r.out0, c.out0);
                        let part_in =
                            self.window_view(src, (r.in0, c.in0), (r.in_len, c.in_len), &tag);
                        let part_out = self.window_view(
                            pooled,
                            (r.out0, c.out0),
                            (r.count, c.count),
                            &format!("{tag}#out"),
                        );
                        self.p.ops.push(HwOp {
                            layers: vec![n.name.clone()],
                            kind: HwOpKind::Pdp(PdpOp {
                                src: part_in,
                                dst: part_out,
                                max: false,
                                kernel: [r.kernel, c.kernel],
                                stride: [sh, sw],
                                pad: [r.pad0, c.pad0, r.pad1, c.pad1],
                                pad_value: 0,
                            }),
                        });
                    }
                }
            }
        }
        if rescale {
            self.sdp_copy(&n.name, format!("{}#rescale", n.name), pooled, dst)?;
        }
        Ok(())
    }
}

/// Consecutive outputs of one average-pooling axis whose windows have one divisor, and
/// the PDP window that computes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AvgSegment {
    /// First output.
    out0: u32,
    /// Outputs.
    count: u32,
    /// First input element read.
    in0: u32,
    /// Input elements read.
    in_len: u32,
    /// PDP window: the divisor.
    kernel: u32,
    /// PDP padding before and after (zeros that count in the divisor).
    pad0: u32,
    pad1: u32,
}

/// The segments of one axis of average pooling: input `size`, window `k`, stride `st`,
/// declared padding `p0`/`p1`, `n` outputs (Caffe's ceil mode may add a last window that
/// runs past `p1`). A window's divisor is its extent clipped to the padded input
/// (`count_include_pad`: Caffe's `min(start + k, size + pad)`, ONNX the same) or to the
/// input (padding excluded). `None` when a window covers no input or outputs of one
/// divisor do not step by the stride.
fn avg_segments(
    size: u32,
    k: u32,
    st: u32,
    p0: u32,
    p1: u32,
    n: u32,
    include_pad: bool,
) -> Option<Vec<AvgSegment>> {
    let (size, k, st, p0, p1) = (
        i64::from(size),
        i64::from(k),
        i64::from(st),
        i64::from(p0),
        i64::from(p1),
    );
    // (clipped start, divisor) of each output.
    let window = |o: i64| {
        let start = o * st - p0;
        let (lo, hi) = if include_pad {
            (-p0, size + p1)
        } else {
            (0, size)
        };
        let (a, b) = (start.max(lo), (start + k).min(hi));
        (a, b - a)
    };
    let mut segs: Vec<(i64, i64, i64, i64)> = Vec::new(); // (out0, count, start0, len)
    for o in 0..i64::from(n) {
        let (a, len) = window(o);
        if len <= 0 || a + len <= 0 || a >= size {
            return None;
        }
        match segs.last_mut() {
            Some(g) if g.3 == len && a == g.2 + g.1 * st => g.1 += 1,
            _ => segs.push((o, 1, a, len)),
        }
    }
    segs.into_iter()
        .map(|(out0, count, a, len)| {
            let end = a + (count - 1) * st + len; // one past the last element windowed
            let in0 = a.max(0);
            let in_end = end.min(size);
            Some(AvgSegment {
                out0: u32::try_from(out0).ok()?,
                count: u32::try_from(count).ok()?,
                in0: u32::try_from(in0).ok()?,
                in_len: u32::try_from(in_end - in0).ok()?,
                kernel: u32::try_from(len).ok()?,
                pad0: u32::try_from(in0 - a).ok()?,
                pad1: u32::try_from(end - in_end).ok()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{avg_segments, AvgSegment};

    fn seg(
        out0: u32,
        count: u32,
        in0: u32,
        in_len: u32,
        kernel: u32,
        pad: (u32, u32),
    ) -> AvgSegment {
        AvgSegment {
            out0,
            count,
            in0,
            in_len,
            kernel,
            pad0: pad.0,
            pad1: pad.1,
        }
    }

    #[test]
    fn average_pooling_splits_where_the_divisor_changes() {
        // Regular: 3x3 stride 1 pad 1 on 5, padding counted: one operation as before.
        assert_eq!(
            avg_segments(5, 3, 1, 1, 1, 5, true),
            Some(vec![seg(0, 5, 0, 5, 3, (1, 1))])
        );
        // Caffe ceil mode (4 -> 3 with 3/2 pad 1): the last window [3, 6) runs past the
        // padded input [-1, 5), so its divisor is 2.
        assert_eq!(
            avg_segments(4, 3, 2, 1, 1, 3, true),
            Some(vec![seg(0, 2, 0, 4, 3, (1, 0)), seg(2, 1, 3, 1, 2, (0, 1))])
        );
        // Padding excluded: the first and last windows hold 2 elements, the others 3.
        assert_eq!(
            avg_segments(5, 3, 1, 1, 1, 5, false),
            Some(vec![
                seg(0, 1, 0, 2, 2, (0, 0)),
                seg(1, 3, 0, 5, 3, (0, 0)),
                seg(4, 1, 3, 2, 2, (0, 0)),
            ])
        );
        // A window that covers no input.
        assert_eq!(avg_segments(2, 2, 2, 0, 0, 3, true), None);
    }
}
