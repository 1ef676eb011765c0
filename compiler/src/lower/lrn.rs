//! Local response normalisation: CDP.

use super::{layer_err, Lowering};
use crate::engine::*;
use crate::error::Result;
use crate::ir::Node;
use crate::target::Precision;

impl Lowering<'_> {
    /// Local response normalisation across `size` channels, on the CDP.
    pub(super) fn lrn(
        &mut self,
        n: &Node,
        size: &usize,
        alpha: &f32,
        beta: &f32,
        k: &f32,
    ) -> Result<()> {
        if !self.t.hw.features.cdp {
            return Err(layer_err(n, format!("{} has no CDP", self.t.hw.name)));
        }
        if ![3, 5, 7, 9].contains(size) {
            return Err(layer_err(
                n,
                format!("local_size {size}: CDP normalises over 3, 5, 7 or 9 channels"),
            ));
        }
        let src = self.input(n, 0)?;
        let dst = self.output_surface(self.out_tensor(n)?);
        let (table, out_cvt) = if self.t.precision == Precision::Int8 {
            let (s_in, s_out) = (self.require_scale(src)?, self.require_scale(dst)?);
            let (table, r) = crate::lut::lrn_int8(*size as u32, *alpha, *beta, *k, s_in);
            // R * f * q at the output's scale; the shifter has 6 bits.
            let (m, shift) = crate::quant::fixed_point(s_in / (r * s_out), 32767, 63);
            if m == 0 {
                return Err(layer_err(
                    n,
                    format!(
                        "int8 LRN: input scale {s_in:e} over output scale {s_out:e} \
                         is out of the CDP output converter's range"
                    ),
                ));
            }
            (table, (m as i16, shift as u8))
        } else {
            (crate::lut::lrn(*size as u32, *alpha, *beta, *k), (1, 0))
        };
        self.p.luts.push(table);
        let lut = self.p.luts.len() - 1;
        self.p.ops.push(HwOp {
            layers: vec![n.name.clone()],
            kind: HwOpKind::Cdp(CdpOp {
                src,
                dst,
                local_size: *size as u32,
                lut,
                out_cvt,
                lookup: false,
            }),
        });
        Ok(())
    }
}
