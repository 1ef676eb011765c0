//! Memory plan: where every constant blob and activation surface lives.
//!
//! Blobs are laid out back to back in one weight memory, identical ones once. Activations share one pool,
//! reused by liveness (as MNN's memory planner does): a surface occupies its bytes from
//! the operation that writes it to the last operation that reads it, and a later surface
//! takes the lowest offset free for its whole lifetime (first fit). Network inputs and
//! outputs have memories of their own, which the runtime binds.
//!
//! With a CV-SRAM budget ([`crate::Options::cvsram`], builds with a secondary memory
//! interface), a second pool in SRAM is planned the same way first: a surface goes there
//! when it fits the budget for its whole lifetime, else to the DRAM pool. Only surfaces
//! the engines alone touch qualify (not those a CPU task reads or writes: the runtime
//! hands the CPU no SRAM), so the SRAM pool is scratch the host never maps.

use crate::engine::{Engine, HwOpKind, Program, SurfId, SurfKind};
use crate::target::Target;

/// Alignment of every blob and surface in bytes (the largest memory atom of any
/// configuration is 32 bytes; CDMA weight and SDP operand reads are happy with 256).
pub const ALIGN: u64 = 256;

/// Fill in blob and surface offsets and the memory sizes; with `reuse` false every
/// activation keeps its own bytes (for reading every layer's output after a run, so in
/// DRAM). `cvsram` bytes of CV-SRAM hold what fits of the activations (0: none).
pub fn plan(p: &mut Program, t: &Target, reuse: bool, cvsram: u64) {
    // Identical blobs (a batch's passes over the same layers, repeated LUTs) share
    // their bytes.
    let mut off = 0u64;
    let mut offsets = Vec::with_capacity(p.blobs.len());
    let mut seen: std::collections::HashMap<&[u8], u64> = std::collections::HashMap::new();
    for b in &p.blobs {
        let at = *seen.entry(b.data.as_slice()).or_insert_with(|| {
            let at = off;
            off = (off + b.data.len() as u64).next_multiple_of(ALIGN);
            at
        });
        offsets.push(at);
    }
    for (b, at) in p.blobs.iter_mut().zip(offsets) {
        b.offset = at;
    }
    p.weight_size = off;

    // Lifetimes of pool surfaces (views count for their root). A pooling taken on the
    // fly (crate::fly) writes while its convolution reads: one step of time.
    let n = p.surfaces.len();
    let mut first = vec![usize::MAX; n];
    let mut last = vec![0usize; n];
    let mut step = 0;
    for (k, op) in p.ops.iter().enumerate() {
        let on_the_fly = matches!(&op.kind, HwOpKind::Pdp(x)
            if p.surface(p.root(x.src)).kind == SurfKind::OnTheFly);
        if !on_the_fly {
            step = k;
        }
        let i = step;
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
    // Surfaces a CPU task touches stay in DRAM.
    let mut cpu = vec![false; n];
    for op in p.ops.iter().filter(|op| op.engine() == Engine::Cpu) {
        for s in op.reads().into_iter().chain(op.writes()) {
            cpu[p.root(s).0] = true;
        }
    }
    let sram_budget = if reuse { cvsram } else { 0 };
    let mut dram = Pool::default();
    let mut sram = Pool::default();
    // Larger, earlier surfaces first gives tighter packing; order by first use.
    let mut order: Vec<usize> = (0..n)
        .filter(|&i| p.surfaces[i].kind == SurfKind::Pool && first[i] != usize::MAX)
        .collect();
    order.sort_by_key(|&i| (first[i], std::cmp::Reverse(p.surfaces[i].size)));
    for i in order {
        let size = u64::from(p.surfaces[i].size).next_multiple_of(ALIGN);
        let life = (first[i], last[i]);
        let in_sram = !cpu[i] && sram.fits(size, life, reuse, sram_budget);
        let at = if in_sram {
            sram.place(size, life, reuse)
        } else {
            dram.place(size, life, reuse)
        };
        p.surfaces[i].offset = at;
        p.surfaces[i].sram = in_sram;
    }
    p.pool_size = dram.size;
    p.sram_pool_size = sram.size;

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
            p.surfaces[i].sram = p.surfaces[id.0].sram;
        }
    }
}

/// One activation pool: the ranges placed so far with their lifetimes (first and last
/// operation), and its size.
#[derive(Default)]
struct Pool {
    placed: Vec<(u64, u64, (usize, usize))>,
    size: u64,
}

impl Pool {
    /// The lowest offset where `size` bytes are free for lifetime `life` (for every
    /// lifetime without `reuse`).
    fn first_fit(&self, size: u64, life: (usize, usize), reuse: bool) -> u64 {
        let mut busy: Vec<(u64, u64)> = self
            .placed
            .iter()
            .filter(|(_, _, (f, l))| !reuse || (*f <= life.1 && life.0 <= *l))
            .map(|&(s, e, _)| (s, e))
            .collect();
        busy.sort_unstable();
        let mut at = 0u64;
        for (s, e) in busy {
            if at + size <= s {
                break;
            }
            at = at.max(e);
        }
        at
    }

    /// Whether `size` bytes fit below `budget` for lifetime `life`.
    fn fits(&self, size: u64, life: (usize, usize), reuse: bool, budget: u64) -> bool {
        size <= budget && self.first_fit(size, life, reuse) + size <= budget
    }

    /// Places `size` bytes for lifetime `life`; their offset.
    fn place(&mut self, size: u64, life: (usize, usize), reuse: bool) -> u64 {
        let at = self.first_fit(size, life, reuse);
        self.placed.push((at, at + size, life));
        self.size = self.size.max(at + size);
        at
    }
}
