//! `Gemm` and `MatMul` by a constant: IR `FullyConnected` when the rows are the network's
//! batch items; with `--cpu-fallback`, a 1x1 convolution over the rows as positions when
//! they are a sequence computed on the CPU (see [`over_positions`]).

use std::rc::Rc;

use crate::error::Result;
use crate::frontend::onnx::build::{Act, Builder, NodeCx, Value};
use crate::frontend::onnx::proto::{data_type as dt, AttributeProto, NodeProto};
use crate::frontend::onnx::tensor::{self, fmt_dims, Const, Data};
use crate::ir::{Conv, Op, Shape, Weights};

/// Rows of an activation times a constant matrix: what `Gemm` and `MatMul` map to.
struct Product {
    /// Rows.
    m: usize,
    /// Values per row.
    kk: usize,
    /// Columns of the result.
    n: usize,
    /// `[n, kk]`, the factor (`alpha`) applied.
    weight: Vec<f32>,
    /// One value per result column (`beta` applied), if any.
    bias: Option<Vec<f32>>,
    /// The result's ONNX dimensions.
    out_dims: Vec<usize>,
    /// The activation holds the matrix transposed (`K x M`, Gemm's `transA`).
    transposed: bool,
}

/// The dimensions of activation input `k` (known whether it is in memory or on the CPU).
fn act_dims(cx: &NodeCx<'_>, k: usize) -> Result<Vec<usize>> {
    match cx.input(k) {
        Some(v @ (Value::Act(_) | Value::Cpu { .. })) => Ok(v.dims().unwrap_or(&[]).to_vec()),
        _ => cx.act(k).map(|a| a.dims),
    }
}

fn gemm_product(cx: &NodeCx<'_>) -> Result<Product> {
    cx.arity(2, 3)?;
    let a = act_dims(cx, 0)?;
    let bw = cx.required(1, "B")?;
    let c = cx.constant(2, "C")?;
    let alpha = cx.float("alpha")?.unwrap_or(1.0);
    let beta = cx.float("beta")?.unwrap_or(1.0);
    let ta = cx.int("transA")?.unwrap_or(0) != 0;
    let tb = cx.int("transB")?.unwrap_or(0) != 0;
    let [a0, a1] = a[..] else {
        return Err(cx.err(format!("A must be 2-D, found {}", fmt_dims(&a))));
    };
    let (m, kk) = if ta { (a1, a0) } else { (a0, a1) };
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
    Ok(Product {
        m,
        kk,
        n,
        weight,
        bias,
        out_dims: vec![m, n],
        transposed: ta && a0 != 1 && a1 != 1,
    })
}

fn matmul_product(cx: &NodeCx<'_>) -> Result<Product> {
    cx.arity(2, 2)?;
    let a = act_dims(cx, 0)?;
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
    let r = a.len();
    if r == 0 || a[r - 1] != kk {
        return Err(cx.err(format!(
            "A {} and B {} do not multiply",
            fmt_dims(&a),
            fmt_dims(&w.dims)
        )));
    }
    let m: usize = a[..r - 1].iter().product();
    let wv = w.to_f32();
    let mut weight = vec![0f32; n * kk];
    for o in 0..n {
        for i in 0..kk {
            weight[o * kk + i] = wv[i * n + o];
        }
    }
    let mut out_dims = a[..r - 1].to_vec();
    if !b_vec {
        out_dims.push(n);
    }
    Ok(Product {
        m,
        kk,
        n,
        weight,
        bias: None,
        out_dims,
        transposed: false,
    })
}

fn product(cx: &NodeCx<'_>) -> Result<Product> {
    match cx.op() {
        "Gemm" => gemm_product(cx),
        _ => matmul_product(cx),
    }
}

/// A fully connected IR node on input `k` computing `p`.
fn fully_connected(b: &mut Builder, cx: &NodeCx<'_>, k: usize, p: Product) -> Result<Vec<Value>> {
    let Product {
        m,
        kk,
        n,
        weight,
        bias,
        out_dims,
        transposed,
    } = p;
    let x = cx.act(k)?;
    if transposed {
        return Err(cx.err(format!(
            "transA on {}: the IR cannot transpose a computed matrix (only a vector)",
            fmt_dims(&x.dims)
        )));
    }
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
    let p = gemm_product(cx)?;
    fully_connected(b, cx, 0, p)
}

pub(super) fn matmul(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let p = matmul_product(cx)?;
    fully_connected(b, cx, 0, p)
}

/// `Gemm` or `MatMul` by a constant over the rows of a matrix that is not the network's
/// batch (a sequence model's steps, a transformer's tokens): the CPU writes the matrix
/// transposed, `[1, K, M]`, so that the rows are the positions of a surface of `K`
/// channels; NVDLA multiplies it as a 1x1 convolution of `N` kernels; the CPU reads the
/// `[1, N, M]` result back transposed. The NVDLA side does the `M x K x N` products; the
/// CPU moves `M x (K + N)` values. Needs `--cpu-fallback` (the transpositions are CPU
/// nodes) and a network of one item.
pub(super) fn over_positions(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let p = product(cx)?;
    if p.m < 2 {
        return Err(cx.err("a single row is a fully connected layer"));
    }
    let batch = b.g.inputs.first().map_or(1, |&i| b.g.shape(i).n);
    if !b.cpu_fallback || batch != 1 {
        return Err(cx.err("rows as positions need --cpu-fallback and a network of one item"));
    }
    let first = b.g.nodes.len();
    let (m, kk, n) = (p.m, p.kk, p.n);
    let x = cx.in_name(0).to_string();
    let x_value = cx.input(0).cloned();
    let positions = format!("{x}::nvdla/positions");
    if p.transposed {
        cpu_reshape(b, cx, &x, x_value, &positions, &[1, kk, m])?;
    } else {
        let rows = format!("{x}::nvdla/rows");
        cpu_reshape(b, cx, &x, x_value, &rows, &[1, m, kk])?;
        let v = b.values.get(&rows).cloned();
        cpu_transpose(b, cx, &rows, v, &positions)?;
    }
    let input = b.write_out(&cx.label, &positions)?;
    // Results of more than 8 192 columns (a recognizer's classes) in several convolutions,
    // each within the hardware's channel count, concatenated on the CPU.
    let pieces = n.div_ceil(crate::capability::MAX_CUBE);
    let y = cx.out(0).to_string();
    let mut results = Vec::with_capacity(pieces);
    for piece in 0..pieces {
        let (lo, hi) = (n * piece / pieces, n * (piece + 1) / pieces);
        let weight = Weights::new(vec![hi - lo, kk, 1, 1], p.weight[lo * kk..hi * kk].to_vec())
            .ok_or_else(|| cx.err("weight size"))?;
        let bias = p.bias.as_ref().map(|v| Weights::vector(v[lo..hi].to_vec()));
        let name = if pieces == 1 {
            format!("{y}::nvdla/positions")
        } else {
            format!("{y}::nvdla/positions{piece}")
        };
        let t = b.emit(
            cx,
            (pieces > 1).then(|| format!("{piece}")).as_deref(),
            Op::Conv(Conv::pointwise(weight, bias)),
            vec![input.t],
            name.clone(),
            Shape::new(1, hi - lo, m, 1),
        );
        let v = Value::Act(Act {
            t,
            dims: vec![1, hi - lo, m],
        });
        b.values.insert(name.clone(), v.clone());
        results.push((name, Some(v)));
    }
    if let Some(why) = b.refusal(first) {
        return Err(cx.err(why));
    }
    let (result, result_value) = if pieces == 1 {
        results.pop().expect("one piece")
    } else {
        let name = format!("{y}::nvdla/positions");
        let axis = AttributeProto {
            name: "axis".into(),
            r#type: crate::frontend::onnx::proto::attribute_type::INT,
            i: 1,
            ..Default::default()
        };
        let v = cpu_op(b, cx, "Concat", results, vec![axis], &name)?;
        (name, Some(v))
    };
    let rows = format!("{y}::nvdla/rows");
    cpu_transpose(b, cx, &result, result_value, &rows)?;
    let v = b.values.get(&rows).cloned();
    // The last node writes the ONNX output itself: the caller binds its name.
    let out = cpu_reshape(b, cx, &rows, v, &y, &p.out_dims)?;
    b.values.remove(&y);
    Ok(vec![out])
}

/// Runs one synthetic ONNX node on the CPU: `op` reading `inputs` (name, value) and
/// writing `out`, whose value is bound and returned.
fn cpu_op(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    op: &str,
    inputs: Vec<(String, Option<Value>)>,
    attribute: Vec<AttributeProto>,
    out: &str,
) -> Result<Value> {
    let node = NodeProto {
        input: inputs.iter().map(|(n, _)| n.clone()).collect(),
        output: vec![out.to_string()],
        name: format!("{}/{op}", out),
        op_type: op.into(),
        attribute,
        ..Default::default()
    };
    let sub = NodeCx {
        node: &node,
        label: cx.label.clone(),
        opset: cx.opset,
        inputs: inputs.into_iter().map(|(_, v)| v).collect(),
    };
    let v = b
        .cpu_node(&sub, None)?
        .into_iter()
        .next()
        .ok_or_else(|| cx.err(format!("no value for `{out}`")))?;
    b.values.insert(out.to_string(), v.clone());
    Ok(v)
}

/// `x` (value `v`) reshaped to `dims` on the CPU as `out`.
fn cpu_reshape(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    x: &str,
    v: Option<Value>,
    out: &str,
    dims: &[usize],
) -> Result<Value> {
    let shape = format!("{out}/shape");
    let c = Const {
        dtype: dt::INT64,
        dims: vec![dims.len()],
        data: Data::I(dims.iter().map(|&d| d as i64).collect()),
    };
    let inputs = vec![(x.to_string(), v), (shape, Some(Value::Const(Rc::new(c))))];
    cpu_op(b, cx, "Reshape", inputs, Vec::new(), out)
}

/// `x` (value `v`, `[1, A, B]`) as `[1, B, A]` on the CPU, named `out`.
fn cpu_transpose(
    b: &mut Builder,
    cx: &NodeCx<'_>,
    x: &str,
    v: Option<Value>,
    out: &str,
) -> Result<Value> {
    let perm = AttributeProto {
        name: "perm".into(),
        r#type: crate::frontend::onnx::proto::attribute_type::INTS,
        ints: vec![0, 2, 1],
        ..Default::default()
    };
    cpu_op(
        b,
        cx,
        "Transpose",
        vec![(x.to_string(), v)],
        vec![perm],
        out,
    )
}
