//! Padding by the border pixels ([`crate::ir::Op::EdgePad`]): SDP copies through window
//! views. The input goes to the middle of the output; each padding column copies the
//! input's first or last column, then each padding line copies the output's first or last
//! line of input pixels, padded columns included (so the corners repeat the corner
//! pixel). Exact in fp16; int8 copies keep the output's scale.

use super::{layer_err, Lowering};
use crate::error::Result;
use crate::ir::Node;

impl Lowering<'_> {
    pub(super) fn edge_pad(&mut self, n: &Node, pads: [usize; 4]) -> Result<()> {
        let src = self.input(n, 0)?;
        let out_t = self.out_tensor(n)?;
        let out = self.g.shape(out_t);
        let s = self.p.surface(src).clone();
        let [t, l, b, r] = pads.map(|p| u32::try_from(p).unwrap_or(u32::MAX));
        let (h, w) = (s.h, s.w);
        if out.c != s.c as usize
            || Some(out.h)
                != h.checked_add(t)
                    .and_then(|v| v.checked_add(b))
                    .map(|v| v as usize)
            || Some(out.w)
                != w.checked_add(l)
                    .and_then(|v| v.checked_add(r))
                    .map(|v| v as usize)
        {
            return Err(layer_err(
                n,
                format!("edge padding {} by {pads:?} does not give {out}", s.shape()),
            ));
        }
        let name = n.name.clone();
        let dst = self.output_surface(out_t);
        let (oh, ow) = (out.h as u32, out.w as u32);
        let middle = self.window_view(dst, (t, l), (h, w), &format!("{name}#middle"));
        self.sdp_copy(&name, format!("{name}#middle"), src, middle)?;
        let columns = [(0..l, 0), (l + w..ow, w - 1)];
        for (k, (range, from)) in columns.into_iter().enumerate() {
            if range.is_empty() {
                continue;
            }
            let edge = self.window_view(src, (0, from), (h, 1), &format!("{name}#edge{k}"));
            for x in range {
                let to = self.window_view(dst, (t, x), (h, 1), &format!("{name}#col{x}"));
                self.sdp_copy(&name, format!("{name}#col{x}"), edge, to)?;
            }
        }
        let lines = [(0..t, t), (t + h..oh, t + h - 1)];
        for (k, (range, from)) in lines.into_iter().enumerate() {
            if range.is_empty() {
                continue;
            }
            let edge = self.window_view(dst, (from, 0), (1, ow), &format!("{name}#line{k}"));
            for y in range {
                let to = self.window_view(dst, (y, 0), (1, ow), &format!("{name}#row{y}"));
                self.sdp_copy(&name, format!("{name}#row{y}"), edge, to)?;
            }
        }
        Ok(())
    }
}
