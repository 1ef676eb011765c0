//! Batched fully connected layers: with a batch of N > 1 items, the network's fully
//! connected tail runs once for the whole batch instead of once per item, so its weights
//! are read once per batch (NVIDIA's performance estimator batches AlexNet's fully
//! connected layers the same way, "Fully-Connected Layer Batch Size").
//!
//! The tensors the tail reads from the per-item part (AlexNet's last pooling, ResNet's
//! global average) live side by side in one surface N times as wide: each item's pass
//! writes its window of it. A fully connected layer of the tail is then one convolution
//! whose kernel covers one item and whose stride is one item's width, so that output
//! pixel `b` is item `b`'s result (the same products summed in the same order as one
//! item's convolution: the outputs are the same bits). The per-pixel layers after it
//! (activations, affines) run on the N pixels, and the tail's network outputs are copied
//! item by item into the batched output memory.
//!
//! The tail is what follows fully connected layers and reads nothing else: it must not
//! feed a layer of the per-item part (a softmax on the CPU keeps the network per item),
//! and the per-item tensors it reads must be computed (not network inputs or
//! concatenations) and at most 8 columns wide per item (the convolution's largest stride).

use std::collections::HashSet;

use crate::engine::{SurfId, SurfKind};
use crate::error::{CompileError, Result};
use crate::ir::{Activation, Graph, NodeId, Op, TensorId};

/// The convolution core's largest stride (`CONV_X_STRIDE` + 1).
const MAX_STRIDE: usize = 8;

/// The layers lowered once for a whole batch.
#[derive(Debug, Clone)]
pub(super) struct Tail {
    /// Per node: lowered once for the batch.
    pub nodes: Vec<bool>,
    /// Tensors the tail reads from the per-item part (aliases followed), each held in a
    /// surface of `N` items side by side.
    pub heads: Vec<TensorId>,
    /// The tail's inputs as its nodes name them, with the head each is an alias of.
    pub reads: Vec<(TensorId, TensorId)>,
}

/// Whether `op` computes each pixel from the same pixel of its inputs (so it runs on the
/// batch's N pixels as on one).
fn per_pixel(op: &Op) -> bool {
    matches!(
        op,
        Op::Activation(
            Activation::Relu { .. } | Activation::PRelu { .. } | Activation::Clip { .. }
        ) | Op::ChannelAffine { .. }
            | Op::BatchNorm { .. }
            | Op::Identity
    )
}

/// Whether `op` only renames its input (its output is the same surface).
fn alias(op: &Op) -> bool {
    matches!(op, Op::Identity | Op::Flatten)
}

/// The fully connected tail of `g` for a batch of `batch` items, if it has one that can
/// run batched.
pub(super) fn tail(g: &Graph, batch: usize) -> Option<Tail> {
    if batch < 2 {
        return None;
    }
    let producer = |t: TensorId| g.producer(t).map(|NodeId(i)| i);
    let mut nodes = vec![false; g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        let from_tail = |t: &TensorId| producer(*t).is_some_and(|p| nodes[p]);
        nodes[i] = match &n.op {
            Op::FullyConnected { .. } => true,
            op if per_pixel(op) => !n.inputs.is_empty() && n.inputs.iter().all(from_tail),
            _ => false,
        };
    }
    if !nodes.contains(&true) {
        return None;
    }
    // Closed: what the tail computes feeds only the tail (or is a network output).
    let in_tail = || {
        g.nodes
            .iter()
            .enumerate()
            .filter(|(i, _)| nodes[*i])
            .map(|(_, n)| n)
    };
    for n in in_tail() {
        for &o in &n.outputs {
            if g.consumers(o).iter().any(|c| !nodes[c.0]) {
                return None;
            }
        }
    }
    let mut heads = Vec::new();
    let mut reads = Vec::new();
    for n in in_tail() {
        for &t in &n.inputs {
            if producer(t).is_some_and(|p| nodes[p]) {
                continue;
            }
            // Follow renames to the tensor an operation computes.
            let mut real = t;
            while let Some(p) = producer(real) {
                let pn = &g.nodes[p];
                if !alias(&pn.op) {
                    break;
                }
                real = *pn.inputs.first()?;
            }
            let p = producer(real)?;
            if matches!(g.nodes[p].op, Op::Concat) || g.outputs.contains(&real) {
                return None;
            }
            if !(1..=MAX_STRIDE).contains(&g.shape(real).w) {
                return None;
            }
            if !heads.contains(&real) {
                heads.push(real);
            }
            if !reads.contains(&(t, real)) {
                reads.push((t, real));
            }
        }
    }
    // Only fully connected layers read the per-item part.
    let read_set: HashSet<TensorId> = reads.iter().map(|r| r.0).collect();
    if in_tail().any(|n| {
        !matches!(n.op, Op::FullyConnected { .. }) && n.inputs.iter().any(|t| read_set.contains(t))
    }) {
        return None;
    }
    Some(Tail {
        nodes,
        heads,
        reads,
    })
}

/// The state of a batch's per-item passes that its tail needs.
#[derive(Debug, Clone, Default)]
pub(super) struct Pass {
    /// The batch (0 outside a batched lowering).
    pub batch: usize,
    /// The item being lowered.
    pub item: usize,
    /// The tail's heads, each with its surface of the whole batch once made.
    pub heads: Vec<(TensorId, Option<SurfId>)>,
}

impl super::Lowering<'_> {
    /// Lowers a batch of `batch` items as that many passes over the network, one per item,
    /// and its fully connected tail, if it has one, once for the whole batch;
    /// `full_inputs` and `full_outputs` are the network's inputs and outputs, each a
    /// surface of the whole batch.
    pub(super) fn lower_passes(
        &mut self,
        batch: usize,
        full_inputs: &[SurfId],
        full_outputs: &[SurfId],
    ) -> Result<()> {
        let g = self.g;
        // The fully connected tail runs once for the batch, on the items side by side.
        let tail = tail(g, batch).filter(|t| {
            t.heads
                .iter()
                .all(|h| !self.views.contains_key(h) && !g.inputs.contains(h))
        });
        if let Some(t) = &tail {
            self.pass.batch = batch;
            self.pass.heads = t.heads.iter().map(|&h| (h, None)).collect();
        }
        for b in 0..batch {
            self.pass.item = b;
            self.surf.clear();
            self.done = tail
                .as_ref()
                .map_or_else(|| vec![false; g.nodes.len()], |t| t.nodes.clone());
            for (&t, &full) in g.inputs.iter().zip(full_inputs) {
                let v = self.item_view(full, b);
                self.surf.insert(t, v);
            }
            for (&t, &full) in g.outputs.iter().zip(full_outputs) {
                let v = self.item_view(full, b);
                self.surf.insert(t, v);
            }
            for i in 0..g.nodes.len() {
                if !self.done[i] {
                    self.node(i)?;
                }
            }
        }
        if let Some(tail) = &tail {
            self.batch_tail(tail, full_outputs, batch)?;
        }
        Ok(())
    }

    /// Item `pass.item`'s window of head `tid`'s surface of the whole batch (made on
    /// first use, when the producer has set the tensor's int8 scale); `None` for other
    /// tensors.
    pub(super) fn head_window(&mut self, tid: TensorId) -> Option<SurfId> {
        let k = self.pass.heads.iter().position(|h| h.0 == tid)?;
        let batch = self.pass.batch;
        let wide = match self.pass.heads[k].1 {
            Some(w) => w,
            None => {
                self.tail_items = batch as u32;
                let w = self.new_surface(tid, SurfKind::Pool);
                self.tail_items = 1;
                let s = &mut self.p.surfaces[w.0];
                s.name = format!("{}#batch", s.name);
                self.pass.heads[k].1 = Some(w);
                w
            }
        };
        let s = self.g.shape(tid);
        let b = self.pass.item;
        let name = format!("{}#item{b}", self.g.tensor(tid).name);
        let v = self.window_view(wide, (0, (b * s.w) as u32), (s.h as u32, s.w as u32), &name);
        self.surf.insert(tid, v);
        Some(v)
    }

    /// Lowers `tail` once for `batch` items side by side, reading the heads' surfaces of
    /// the whole batch, and copies its network outputs into the items of the batched
    /// outputs `full_outputs`.
    pub(super) fn batch_tail(
        &mut self,
        tail: &Tail,
        full_outputs: &[SurfId],
        batch: usize,
    ) -> Result<()> {
        let g = self.g;
        self.surf.clear();
        for &(read, head) in &tail.reads {
            let wide = self
                .pass
                .heads
                .iter()
                .find(|h| h.0 == head)
                .and_then(|h| h.1);
            let Some(wide) = wide else {
                return Err(CompileError::Network(format!(
                    "`{}`: no item pass computed it",
                    g.tensor(head).name
                )));
            };
            self.surf.insert(read, wide);
        }
        self.pass.heads.clear();
        self.tail_items = batch as u32;
        self.done = tail.nodes.iter().map(|&t| !t).collect();
        let lowered =
            (0..g.nodes.len()).try_for_each(|i| if self.done[i] { Ok(()) } else { self.node(i) });
        self.tail_items = 1;
        lowered?;
        for (k, &o) in g.outputs.iter().enumerate() {
            let from_tail = g.producer(o).is_some_and(|NodeId(p)| tail.nodes[p]);
            let (Some(&src), true) = (self.surf.get(&o), from_tail) else {
                continue;
            };
            let s = self.p.surface(src).clone();
            let w = s.w / batch as u32;
            for b in 0..batch {
                let name = format!("{}#item{b}", s.name);
                let item = self.window_view(src, (0, b as u32 * w), (s.h, w), &name);
                let dst = self.item_view(full_outputs[k], b);
                let layer = &g.tensor(o).name;
                self.sdp_copy(layer, layer.clone(), item, dst)?;
            }
        }
        Ok(())
    }
}
