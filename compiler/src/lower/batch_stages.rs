//! Batches with CPU partitions. A batch of N > 1 runs as N passes over the network, one per
//! item ([`super::lower_with`]). A CPU partition is free to mix the items (a reshape that
//! folds the batch, a softmax or a product along it) and runs once, over the whole batch, so
//! it cannot sit inside one item's pass. The network is therefore cut into levels at its
//! partitions: what reads only the network's inputs and per-item results is level 0; a
//! partition whose inputs are at level L runs once after every item's pass over level L,
//! and its outputs are at level L + 1. The engines' layers of each level run item by item as
//! before. A partition reads and writes surfaces of the whole batch (N items back to back,
//! `TensorBinding::items` in the runtime), and each item's pass writes or reads its item of
//! them through a view, as it does the network's inputs and outputs.
//!
//! Element-wise partitions (one function of one input per output,
//! [`super::table::elementwise_sources`]) do not mix items: they stay in the items' passes
//! (as CDP lookups, or on the CPU item by item, with one item's dimensions).

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::{table, Lowering};
use crate::engine::{SurfId, SurfKind};
use crate::error::Result;
use crate::ir::{Graph, Op, TensorId};

/// The levels of a batched network with CPU partitions.
#[derive(Debug)]
pub(super) struct Stages {
    /// Per node: its level.
    level: Vec<usize>,
    /// Per node: a partition run once for the whole batch at the end of its level.
    whole_batch: Vec<bool>,
    /// Levels in all.
    levels: usize,
}

/// Whether node operation `op` runs once for the whole batch.
pub(super) fn runs_on_whole_batch(op: &Op) -> bool {
    matches!(op, Op::CpuPartition(p) if table::elementwise_sources(p).is_none())
}

/// The levels of `g` (nodes in the order they are lowered), or `None` when no partition
/// runs on the whole batch (the plain passes then).
pub(super) fn plan(g: &Graph) -> Option<Stages> {
    let mut tensor_level: HashMap<TensorId, usize> = HashMap::new();
    let mut level = vec![0; g.nodes.len()];
    let mut whole_batch = vec![false; g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        let l = n
            .inputs
            .iter()
            .filter_map(|t| tensor_level.get(t))
            .max()
            .copied()
            .unwrap_or(0);
        level[i] = l;
        whole_batch[i] = runs_on_whole_batch(&n.op);
        for &o in &n.outputs {
            tensor_level.insert(o, l + usize::from(whole_batch[i]));
        }
    }
    let levels = level.iter().max().map_or(1, |&m| m + 1);
    whole_batch.contains(&true).then_some(Stages {
        level,
        whole_batch,
        levels,
    })
}

/// One item's pass: its surfaces and the nodes lowered in it.
struct ItemPass {
    surf: HashMap<TensorId, SurfId>,
    done: Vec<bool>,
    /// Its views of the surfaces of the whole batch.
    views: HashMap<TensorId, SurfId>,
}

impl Lowering<'_> {
    /// Lowers a batch of `batch` items level by level ([`Stages`]); `full` holds the
    /// network's inputs and outputs, each a surface of the whole batch.
    pub(super) fn lower_stages(
        &mut self,
        st: &Stages,
        batch: usize,
        mut full: HashMap<TensorId, SurfId>,
    ) -> Result<()> {
        let g = self.g;
        // The partitions' inputs and outputs: surfaces of the whole batch.
        for (i, n) in g.nodes.iter().enumerate() {
            if !st.whole_batch[i] {
                continue;
            }
            for &t in n.inputs.iter().chain(&n.outputs) {
                if let Entry::Vacant(e) = full.entry(t) {
                    let id = self.new_surface(t, SurfKind::Pool);
                    self.batch_surface(id, g.shape(t).n);
                    e.insert(id);
                }
            }
        }
        let mut items: Vec<ItemPass> = (0..batch)
            .map(|b| {
                // (None of a tensor of another number of items: no pass reads it.)
                let views: HashMap<TensorId, SurfId> = full
                    .iter()
                    .filter(|(&t, _)| g.shape(t).n == batch)
                    .map(|(&t, &f)| (t, self.item_view(f, b)))
                    .collect();
                ItemPass {
                    surf: views.clone(),
                    done: vec![false; g.nodes.len()],
                    views,
                }
            })
            .collect();
        for level in 0..st.levels {
            for (b, item) in items.iter_mut().enumerate() {
                self.pass.item = b;
                std::mem::swap(&mut self.surf, &mut item.surf);
                std::mem::swap(&mut self.done, &mut item.done);
                let lowered = (0..g.nodes.len())
                    .filter(|&i| st.level[i] == level && !st.whole_batch[i])
                    .try_for_each(|i| if self.done[i] { Ok(()) } else { self.node(i) });
                std::mem::swap(&mut self.surf, &mut item.surf);
                std::mem::swap(&mut self.done, &mut item.done);
                lowered?;
            }
            let partitions: Vec<usize> = (0..g.nodes.len())
                .filter(|&i| st.level[i] == level && st.whole_batch[i])
                .collect();
            // An input an item's pass left in another surface (an alias of another tensor,
            // a view) is copied into its item of the whole batch's surface.
            for &i in &partitions {
                let n = &g.nodes[i];
                for &t in &n.inputs {
                    for (b, item) in items.iter().enumerate() {
                        let (Some(&have), Some(&want)) = (item.surf.get(&t), item.views.get(&t))
                        else {
                            continue;
                        };
                        if have != want {
                            let name = format!("{}#item{b}", g.tensor(t).name);
                            self.sdp_copy(&n.name, name, have, want)?;
                        }
                    }
                }
            }
            self.surf = full.clone();
            for i in partitions {
                self.node(i)?;
            }
        }
        self.surf = full;
        Ok(())
    }
}
