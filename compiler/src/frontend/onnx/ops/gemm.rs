//! `Gemm` and `MatMul` by a constant: IR `FullyConnected`.

use crate::error::Result;
use crate::frontend::onnx::build::{Act, Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::{self, fmt_dims};
use crate::ir::{Op, Shape, Weights};

/// A fully connected IR node on input `k` (rows `m` of `kk` values each) with weight
/// `[n, kk]`; output dims `out_dims`.
#[allow(clippy::too_many_arguments)]
fn fully_connected(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    k: usize,
    m: usize,
    kk: usize,
    n: usize,
    weight: Vec<f32>,
    bias: Option<Vec<f32>>,
    out_dims: Vec<usize>,
) -> Result<Vec<Value>> {
    let x = cx.act(k)?;
    let s = b.shape(x.t);
    let t = if s.n == m && s.per_item() == kk {
        x.t
    } else {
        let t = b.canonical(cx, k)?.0;
        let s = b.shape(t);
        if !(s.n == m && s.per_item() == kk) {
            return Err(cx.err(format!(
                "input {} cannot be read as {m} rows of {kk} values by the IR's fully \
                 connected layer",
                fmt_dims(&x.dims)
            )));
        }
        t
    };
    let weight = Weights::new(vec![n, kk], weight).ok_or_else(|| cx.err("weight size"))?;
    let t = b.emit(
        cx,
        None,
        Op::FullyConnected {
            weight,
            bias: bias.map(Weights::vector),
        },
        vec![t],
        cx.out(0).into(),
        Shape::new(m, n, 1, 1),
    );
    Ok(vec![Value::Act(Act { t, dims: out_dims })])
}

pub(super) fn gemm(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(2, 3)?;
    let a = cx.act(0)?;
    let bw = cx.required(1, "B")?;
    let c = cx.constant(2, "C")?;
    let alpha = cx.float("alpha")?.unwrap_or(1.0);
    let beta = cx.float("beta")?.unwrap_or(1.0);
    let ta = cx.int("transA")?.unwrap_or(0) != 0;
    let tb = cx.int("transB")?.unwrap_or(0) != 0;
    let [a0, a1] = a.dims[..] else {
        return Err(cx.err(format!("A must be 2-D, found {}", fmt_dims(&a.dims))));
    };
    let (m, kk) = if ta {
        if a0 != 1 && a1 != 1 {
            return Err(cx.err(format!(
                "transA on {}: the IR cannot transpose a computed matrix (only a vector)",
                fmt_dims(&a.dims)
            )));
        }
        (a1, a0)
    } else {
        (a0, a1)
    };
    let [b0, b1] = bw.dims[..] else {
        return Err(cx.err(format!("B must be 2-D, found {}", fmt_dims(&bw.dims))));
    };
    let (bk, n) = if tb { (b1, b0) } else { (b0, b1) };
    if bk != kk {
        return Err(cx.err(format!("A' is {m}x{kk} but B' is {bk}x{n}")));
    }
    let bv = bw.to_f32();
    let mut weight = vec![0f32; n * kk];
    for o in 0..n {
        for i in 0..kk {
            let v = if tb { bv[o * kk + i] } else { bv[i * n + o] };
            weight[o * kk + i] = alpha * v;
        }
    }
    let bias = match c {
        None => None,
        Some(c) => {
            let out = tensor::broadcast(&[m, n], &c.dims);
            if out.as_deref() != Some(&[m, n][..]) {
                return Err(cx.err(format!(
                    "C of shape {} does not broadcast to {m}x{n}",
                    fmt_dims(&c.dims)
                )));
            }
            let idx = tensor::broadcast_index(&c.dims, &[m, n]);
            let cv = c.to_f32();
            if (0..m * n).any(|e| cv[idx[e]] != cv[idx[e % n]]) {
                return Err(
                    cx.err("C varies along the rows: only a bias per output column maps to the IR")
                );
            }
            Some((0..n).map(|o| beta * cv[idx[o]]).collect())
        }
    };
    fully_connected(b, cx, 0, m, kk, n, weight, bias, vec![m, n])
}

pub(super) fn matmul(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(2, 2)?;
    let a = cx.act(0)?;
    let w = cx.required(1, "B (the second operand)")?;
    let (kk, n, b_vec) = match w.dims[..] {
        [k] => (k, 1, true),
        [k, n] => (k, n, false),
        _ => {
            return Err(cx.err(format!(
                "B of shape {}: only a 1-D or 2-D constant maps to a fully connected layer",
                fmt_dims(&w.dims)
            )))
        }
    };
    let r = a.dims.len();
    if r == 0 || a.dims[r - 1] != kk {
        return Err(cx.err(format!(
            "A {} and B {} do not multiply",
            fmt_dims(&a.dims),
            fmt_dims(&w.dims)
        )));
    }
    let m: usize = a.dims[..r - 1].iter().product();
    let wv = w.to_f32();
    let mut weight = vec![0f32; n * kk];
    for o in 0..n {
        for i in 0..kk {
            weight[o * kk + i] = wv[i * n + o];
        }
    }
    let mut out_dims = a.dims[..r - 1].to_vec();
    if !b_vec {
        out_dims.push(n);
    }
    fully_connected(b, cx, 0, m, kk, n, weight, None, out_dims)
}
