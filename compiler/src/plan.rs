//! Memory plan: where every constant blob and activation surface lives.
//!
//! Blobs are laid out back to back in one weight memory. Activations share one pool,
//! reused by liveness (as MNN's memory planner does): a surface occupies its bytes from
//! the operation that writes it to the last operation that reads it, and a later surface
//! takes the lowest offset free for its whole lifetime (first fit). Network inputs and
//! outputs have memories of their own, which the runtime binds.

use crate::engine::{Program, SurfId, SurfKind};
use crate::target::Target;

/// Alignment of every blob and surface in bytes (the largest memory atom of any
/// configuration is 32 bytes; CDMA weight and SDP operand reads are happy with 256).
pub const ALIGN: u64 = 256;

/// Fill in blob and surface offsets and the memory sizes; with `reuse` false every
/// activation keeps its own bytes (for reading every layer's output after a run).
pub fn plan(p: &mut Program, t: &Target, reuse: bool) {
    let mut off = 0u64;
    for b in &mut p.blobs {
        b.offset = off;
        off = (off + b.data.len() as u64).next_multiple_of(ALIGN);
    }
    p.weight_size = off;

    // Lifetimes of pool surfaces (views count for their root).
    let n = p.surfaces.len();
    let mut first = vec![usize::MAX; n];
    let mut last = vec![0usize; n];
    for (i, op) in p.ops.iter().enumerate() {
        for w in op.writes() {
            let w = p.root(w).0;
            first[w] = first[w].min(i);
            last[w] = last[w].max(i);
        }
        for r in op.reads() {
            let r = p.root(r).0;
            first[r] = first[r].min(i);
            last[r] = last[r].max(i);
        }
    }
    let mut placed: Vec<(u64, u64, usize, usize)> = Vec::new(); // (start, end, first, last)
    let mut pool = 0u64;
    // Larger, earlier surfaces first gives tighter packing; order by first use.
    let mut order: Vec<usize> = (0..n)
        .filter(|&i| p.surfaces[i].kind == SurfKind::Pool && first[i] != usize::MAX)
        .collect();
    order.sort_by_key(|&i| (first[i], std::cmp::Reverse(p.surfaces[i].size)));
    for i in order {
        let size = u64::from(p.surfaces[i].size).next_multiple_of(ALIGN);
        let mut busy: Vec<(u64, u64)> = placed
            .iter()
            .filter(|(_, _, f, l)| !reuse || (*f <= last[i] && first[i] <= *l))
            .map(|(s, e, _, _)| (*s, *e))
            .collect();
        busy.sort();
        let mut at = 0u64;
        for (s, e) in busy {
            if at + size <= s {
                break;
            }
            at = at.max(e);
        }
        placed.push((at, at + size, first[i], last[i]));
        p.surfaces[i].offset = at;
        pool = pool.max(at + size);
    }
    p.pool_size = pool;

    // Views: their parent's offset plus their first channel's surface.
    for i in 0..n {
        if let SurfKind::View { .. } = p.surfaces[i].kind {
            let mut off = 0u64;
            let mut id = SurfId(i);
            while let SurfKind::View {
                parent,
                channel_offset,
                x,
                y,
            } = p.surfaces[id.0].kind
            {
                let ps = &p.surfaces[parent.0];
                // Not line_stride / w: a Winograd output's lines are padded.
                let atom = u64::from(t.atom_of(ps.precision));
                let cpa = atom / u64::from(ps.precision.bytes());
                off += u64::from(channel_offset) / cpa.max(1) * u64::from(ps.surf_stride)
                    + u64::from(y) * u64::from(ps.line_stride)
                    + u64::from(x) * atom;
                id = parent;
            }
            p.surfaces[i].offset = p.surfaces[id.0].offset + off;
        }
    }
}
