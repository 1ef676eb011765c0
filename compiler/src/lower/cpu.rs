//! Operations the runtime runs on the CPU: softmax, and (`--cpu-fallback`) element-wise
//! functions no engine computes and ONNX partitions.

use super::{layer_err, Lowering};
use crate::engine::*;
use crate::error::Result;
use crate::ir::{CpuPartition, Node};
use crate::target::Precision;
use nvdla_umd::emu::FallbackFn;
use std::sync::Arc;

impl Lowering<'_> {
    /// Softmax, on the CPU over a 1x1 cube of channels.
    pub(super) fn softmax(&mut self, n: &Node) -> Result<()> {
        let src = self.input(n, 0)?;
        let s = self.p.surface(src);
        if s.h != 1 || s.w != 1 {
            return Err(layer_err(
                n,
                format!(
                    "softmax runs on the CPU over a 1x1 cube of channels; this input is \
                     {}x{}x{}",
                    s.c, s.h, s.w
                ),
            ));
        }
        let dst = self.output_surface(self.out_tensor(n)?);
        self.p.ops.push(HwOp {
            layers: vec![n.name.clone()],
            kind: HwOpKind::Cpu(CpuOp::Softmax { src, dst }),
        });
        Ok(())
    }

    /// An element-wise function no engine computes, on the CPU (`--cpu-fallback`).
    pub(super) fn cpu_unary(
        &mut self,
        n: &Node,
        func: &FallbackFn,
        alpha: &f32,
        beta: &f32,
    ) -> Result<()> {
        if !self.cpu_fallback {
            return Err(layer_err(
                n,
                format!(
                    "{func:?}: no NVDLA engine computes it (compile with \
                     --cpu-fallback to run it on the CPU)"
                ),
            ));
        }
        if self.table_unary(n, *func, *alpha, *beta)? {
            return Ok(());
        }
        let src = self.input(n, 0)?;
        let dst = self.output_surface(self.out_tensor(n)?);
        if self.t.precision == Precision::Int8 {
            self.require_scale(src)?;
            self.require_scale(dst)?;
        }
        self.p.ops.push(HwOp {
            layers: vec![n.name.clone()],
            kind: HwOpKind::Cpu(CpuOp::Unary {
                src,
                dst,
                func: *func,
                alpha: *alpha,
                beta: *beta,
            }),
        });
        Ok(())
    }

    /// An ONNX partition, on the CPU (`--cpu-fallback`).
    pub(super) fn cpu_partition(&mut self, n: &Node, part: &Arc<CpuPartition>) -> Result<()> {
        let g = self.g;
        if !self.cpu_fallback {
            return Err(layer_err(
                n,
                "an ONNX partition runs on the CPU: compile with --cpu-fallback",
            ));
        }
        if self.table_partition(n, part)? {
            return Ok(());
        }
        let inputs = (0..n.inputs.len())
            .map(|k| self.input(n, k))
            .collect::<Result<Vec<_>>>()?;
        let outputs: Vec<SurfId> = n.outputs.iter().map(|&t| self.output_surface(t)).collect();
        // A network output of integers, or one nothing else reads: binary32, whatever the
        // build's precision, as the partition computed it (ONNX Runtime's output; a YOLO
        // head concatenates boxes in pixels with class scores below 1, which no int8
        // scale holds; a product of a tensor's elements exceeds half precision).
        for (&t, &id) in n.outputs.iter().zip(&outputs) {
            let only_cpu =
                g.consumers(t).is_empty() && matches!(self.p.surface(id).kind, SurfKind::Output(_));
            if g.integer_outputs.contains(&t) || only_cpu {
                self.integer_surface(id);
            }
        }
        if self.t.precision == Precision::Int8 {
            for &id in inputs.iter().chain(&outputs) {
                let s = self.p.surface(id);
                if s.precision == Precision::Int8 && !s.integer {
                    self.require_scale(id)?;
                }
            }
        }
        let partition = self.partition_for_surfaces(n, part, &inputs, &outputs)?;
        self.p.ops.push(HwOp {
            layers: vec![n.name.clone()],
            kind: HwOpKind::Cpu(CpuOp::Partition {
                inputs,
                outputs,
                partition,
            }),
        });
        Ok(())
    }

    /// Partition `part` as it runs on surfaces `inputs` and `outputs`: as it is on one item
    /// or on a batch's surfaces of every item ([`super::batch_stages`]); with one item's
    /// dimensions on one item's surfaces in a batch's pass (an element-wise partition).
    fn partition_for_surfaces(
        &self,
        n: &Node,
        part: &Arc<CpuPartition>,
        inputs: &[SurfId],
        outputs: &[SurfId],
    ) -> Result<Arc<CpuPartition>> {
        let g = self.g;
        let batch = g.inputs.first().map_or(1, |&i| g.shape(i).n);
        if batch == 1 || super::batch_stages::runs_on_whole_batch(&n.op) {
            return Ok(part.clone());
        }
        let items: Vec<u32> = inputs
            .iter()
            .chain(outputs)
            .map(|&id| self.p.surface(id).batch.max(1))
            .collect();
        let one_item = |dims: &[Vec<usize>]| -> Result<Vec<Vec<usize>>> {
            dims.iter()
                .map(|d| match d.split_first() {
                    Some((&first, rest)) if first == batch && items.iter().all(|&k| k == 1) => {
                        Ok([&[1][..], rest].concat())
                    }
                    _ => Err(layer_err(
                        n,
                        format!(
                            "a CPU partition in one item's pass of a batch of {batch} has a \
                             tensor of dimensions {d:?}"
                        ),
                    )),
                })
                .collect()
        };
        Ok(Arc::new(CpuPartition {
            input_dims: one_item(&part.input_dims)?,
            output_dims: one_item(&part.output_dims)?,
            ..(**part).clone()
        }))
    }
}
