//! `Transpose` of an activation, where it keeps the pixels in place:
//! - moving only axes of size 1 changes no element's position: an alias with new
//!   dimensions;
//! - permuting axes that together make up the channels (ShuffleNet's channel shuffle,
//!   `Reshape(N, g, C/g, H, W)`, `Transpose(0, 2, 1, 3, 4)`, `Reshape(N, C, H, W)`): a
//!   channel permutation, one IR 1x1 `Conv` with a 0/1 matrix (exact).
//!
//! Any other transpose moves data between the channel and spatial axes, which no NVDLA
//! engine does in one pass on every build; it stays an error (`--cpu-fallback` runs it on
//! the CPU).

use crate::error::Result;
use crate::frontend::onnx::build::{Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::{self, fmt_dims, MAX_COMPUTED};
use crate::ir::{Conv, Op, Shape, Weights};

pub(super) fn transpose(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(1, 1)?;
    let x = cx.act(0)?;
    let r = x.dims.len();
    let perm: Vec<usize> = match cx.ints("perm")? {
        Some(p) => p
            .iter()
            .map(|&a| cx.axis("perm", a, r))
            .collect::<Result<_>>()?,
        None => (0..r).rev().collect(),
    };
    let mut seen = vec![false; r];
    if perm.len() != r || perm.iter().any(|&a| std::mem::replace(&mut seen[a], true)) {
        return Err(cx.err(format!(
            "perm {perm:?} is not a permutation of the {r} axes"
        )));
    }
    let out_dims: Vec<usize> = perm.iter().map(|&a| x.dims[a]).collect();
    // The axes that are not 1 in their order: kept, so no element moves.
    let moving = |order: &mut dyn Iterator<Item = usize>| -> Vec<usize> {
        order.filter(|&a| x.dims[a] != 1).collect()
    };
    if moving(&mut perm.iter().copied()) == moving(&mut (0..r)) {
        return Ok(vec![Value::Act(Act {
            t: x.t,
            dims: out_dims,
        })]);
    }
    let s = b.shape(x.t);
    let sel = channel_permutation(&x.dims, &perm, s).ok_or_else(|| {
        cx.err(format!(
            "perm {perm:?} of {} moves data between the channels and the pixels: no NVDLA \
             engine transposes a cube in one pass on every build",
            fmt_dims(&x.dims)
        ))
    })?;
    let n = tensor::count(&[s.c, s.c], MAX_COMPUTED).map_err(|e| cx.err(e))?;
    b.spend(cx, n)?;
    let mut w = vec![0f32; n];
    for (o, &i) in sel.iter().enumerate() {
        w[o * s.c + i] = 1.0;
    }
    let weight = Weights::new(vec![s.c, s.c, 1, 1], w).ok_or_else(|| cx.err("weight size"))?;
    let op = Op::Conv(Conv::pointwise(weight, None));
    let t = b.emit(cx, None, op, vec![x.t], cx.out(0).into(), s);
    Ok(vec![Value::Act(Act { t, dims: out_dims })])
}

/// For a value of ONNX dimensions `dims` over an IR tensor of shape `s` (row-major, so
/// that `dims[1..k]` flatten to the channels and `dims[k..]` to the pixels for some `k`),
/// the input channel of each output channel when `perm` permutes only axes `1..k`; `None`
/// when it moves anything else.
fn channel_permutation(dims: &[usize], perm: &[usize], s: Shape) -> Option<Vec<usize>> {
    let r = dims.len();
    if r < 2 || dims[0] != s.n || perm[0] != 0 {
        return None;
    }
    let k = (2..=r).find(|&k| {
        dims[1..k].iter().product::<usize>() == s.c
            && dims[k..].iter().product::<usize>() == s.h * s.w
            && perm[k..].iter().enumerate().all(|(j, &a)| a == k + j)
    })?;
    // Row-major strides of the input's channel axes.
    let axes = &perm[1..k];
    let mut stride = vec![1usize; r];
    for a in (1..k - 1).rev() {
        stride[a] = stride[a + 1] * dims[a + 1];
    }
    let out_sizes: Vec<usize> = axes.iter().map(|&a| dims[a]).collect();
    let mut sel = Vec::with_capacity(s.c);
    for mut o in 0..s.c {
        // The output channel's digits, last axis first; each is the index along input
        // axis `axes[j]`.
        let mut i = 0;
        for j in (0..axes.len()).rev() {
            i += (o % out_sizes[j]) * stride[axes[j]];
            o /= out_sizes[j];
        }
        sel.push(i);
    }
    Some(sel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffle_of_two_groups_interleaves_the_halves() {
        // (1, 2, 3, 4, 4) -> (1, 3, 2, 4, 4): output channel 2m + g reads g * 3 + m.
        let sel = channel_permutation(&[1, 2, 3, 4, 4], &[0, 2, 1, 3, 4], Shape::new(1, 6, 4, 4));
        assert_eq!(sel, Some(vec![0, 3, 1, 4, 2, 5]));
        // Pixels flattened to one axis.
        let sel = channel_permutation(&[1, 3, 2, 16], &[0, 2, 1, 3], Shape::new(1, 6, 4, 4));
        assert_eq!(sel, Some(vec![0, 2, 4, 1, 3, 5]));
        // A transpose that moves pixels into the channels is not a permutation of them.
        let sel = channel_permutation(&[1, 6, 4, 4], &[0, 2, 1, 3], Shape::new(1, 6, 4, 4));
        assert_eq!(sel, None);
    }
}
