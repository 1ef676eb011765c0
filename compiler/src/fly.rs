//! Pooling on the fly (`--fused-pooling`, part of `-O`): a convolution whose result only
//! a pooling reads hands it from its SDP straight to the PDP (`SDP D_FEATURE_MODE_CFG
//! OUTPUT_DST = PDP`, `PDP D_OPERATION_MODE_CFG FLYING_MODE = ON_FLYING`; hwarch
//! "Pooling", the on-the-fly input from SDP), so the convolution's full-size result never
//! goes to memory and back: its write and the PDP's read leave the DRAM traffic, and the
//! pooling runs beside the convolution instead of after it.
//!
//! The chain is bound in the loadable as NVIDIA's firmware binds a convolution to its SDP
//! (`dla_common_op_desc.fused_parent`): the SDP's fused parent is the convolution and the
//! PDP's is the SDP, so the PDP is enabled first, then the SDP, then the convolution. The
//! surface between them is [`SurfKind::OnTheFly`]: the memory plan gives it no bytes and
//! its cubes are `DLA_MEM_HW`.
//!
//! Where it applies: a direct (not Winograd) convolution operation that is the only
//! writer of its whole result, that result read by nothing but one pooling, which the
//! PDP runs in one pass (no strips: in flying mode there is no PDP_RDMA to read a strip
//! with its overlap). NVIDIA's compiler never emits this; the nv_small RTL runs it
//! (`scripts/rtl`, docs/STATUS.md).

use crate::engine::{HwOpKind, Program, SurfId, SurfKind};
use crate::target::Target;

/// Binds every pooling it can to the convolution before it; returns how many.
pub fn pooling(p: &mut Program, t: &Target) -> usize {
    let mut fused = 0;
    let mut i = 0;
    while i + 1 < p.ops.len() {
        if let Some(k) = candidate(p, t, i) {
            // Nothing between the two reads what the pooling writes (its readers come
            // after it), so it may move up next to its convolution.
            let op = p.ops.remove(k);
            p.ops.insert(i + 1, op);
            let HwOpKind::Conv(c) = &p.ops[i].kind else {
                unreachable!("candidate checks the kind")
            };
            let s = c.sdp.dst;
            p.surfaces[s.0].kind = SurfKind::OnTheFly;
            fused += 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    fused
}

/// The index of the pooling operation that may take operation `i`'s result on the fly.
fn candidate(p: &Program, t: &Target, i: usize) -> Option<usize> {
    let HwOpKind::Conv(c) = &p.ops[i].kind else {
        return None;
    };
    let s: SurfId = c.sdp.dst;
    if c.winograd.is_some() || p.surface(s).kind != SurfKind::Pool {
        return None;
    }
    // No other operation touches the surface or a window of it.
    let touches = |op: &crate::engine::HwOp| {
        op.reads()
            .into_iter()
            .chain(op.writes())
            .any(|x| p.root(x) == s)
    };
    let mut readers = p
        .ops
        .iter()
        .enumerate()
        .filter(|&(j, op)| j != i && touches(op));
    let (k, reader) = readers.next()?;
    if readers.next().is_some() || k < i {
        return None;
    }
    let HwOpKind::Pdp(x) = &reader.kind else {
        return None;
    };
    if x.src != s || reader.reads().len() != 1 {
        return None;
    }
    let strips = crate::emit::pdp_strips(t, x, p.surface(x.src).w, p.surface(x.dst).w).ok()?;
    (strips.count == 1).then_some(k)
}
