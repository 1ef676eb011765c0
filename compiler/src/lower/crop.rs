//! Crops and strided crops ([`crate::ir::Op::Crop`]): a window view of the input, read in
//! place where nothing else needs the pixels in memory of their own, otherwise copied by
//! a 1x1 PDP pooling whose stride is the crop's step (exact in fp16 and int8, no
//! weights; the output keeps the input's int8 scale).

use super::{layer_err, Lowering};
use crate::error::Result;
use crate::ir::{Node, Pool, PoolKind, Window};

impl Lowering<'_> {
    pub(super) fn crop(&mut self, n: &Node, origin: [usize; 2], step: [usize; 2]) -> Result<()> {
        let src = self.input(n, 0)?;
        let out_t = self.out_tensor(n)?;
        let out = self.g.shape(out_t);
        let s = self.p.surface(src).clone();
        let narrow = |v: usize| u32::try_from(v).ok();
        let (Some(y0), Some(x0), Some(sy), Some(sx), Some(oh), Some(ow)) = (
            narrow(origin[0]),
            narrow(origin[1]),
            narrow(step[0]),
            narrow(step[1]),
            narrow(out.h),
            narrow(out.w),
        ) else {
            return Err(layer_err(n, "crop origin, step or size out of range"));
        };
        if sy == 0 || sx == 0 || oh == 0 || ow == 0 || out.c != s.c as usize {
            return Err(layer_err(
                n,
                format!(
                    "cropping {out} from {}: steps and sizes start at 1",
                    s.shape()
                ),
            ));
        }
        // The lines and columns from the first pixel read to the last.
        let span = |o: u32, st: u32, cnt: u32| {
            (cnt - 1)
                .checked_mul(st)
                .and_then(|v| v.checked_add(1))
                .and_then(|e| o.checked_add(e).map(|end| (e, end)))
        };
        let (Some((eh, end_y)), Some((ew, end_x))) = (span(y0, sy, oh), span(x0, sx, ow)) else {
            return Err(layer_err(n, "crop extent out of range"));
        };
        if end_y > s.h || end_x > s.w {
            return Err(layer_err(
                n,
                format!(
                    "cropping {oh}x{ow} pixels at ({y0}, {x0}) in steps of {sy}x{sx} reads past \
                     the {}x{} input",
                    s.h, s.w
                ),
            ));
        }
        let name = self.g.tensor(out_t).name.clone();
        let window = self.window_view(src, (y0, x0), (eh, ew), &format!("{name}#window"));
        let needs_copy = self.g.outputs.contains(&out_t) || self.views.contains_key(&out_t);
        if [sy, sx] == [1, 1] && !needs_copy {
            // Consumers read the window with the input's strides.
            self.p.surfaces[window.0].name = name;
            self.surf.insert(out_t, window);
            return Ok(());
        }
        let pool = Pool {
            kind: PoolKind::Max,
            window: Window {
                kernel: [1, 1],
                stride: [step[0], step[1]],
                pad: [0; 4],
                dilation: [1, 1],
            },
            ceil_mode: false,
            count_include_pad: false,
        };
        self.pool_from(n, &pool, window)
    }
}
