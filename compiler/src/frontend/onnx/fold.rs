//! Constant folding: `Constant` nodes, the shape computations exporters write (PyTorch's
//! `Shape -> Gather -> Unsqueeze -> Concat -> Reshape` chains, `ConstantOfShape`,
//! arithmetic on INT64 shapes), and layout ops on constant weights (`Transpose`,
//! `Reshape`, `Squeeze`, ...). A node whose inputs are all constants and whose operator is
//! in [`FOLDABLE`] is evaluated here; its outputs are constants.

use super::build::{NodeCx, Value};
use super::ops::{consts, ints_param, layout_dims};
use super::proto::data_type as dt;
use super::tensor::{self, fmt_dims, Const, Data, MAX_COMPUTED};
use crate::error::Result;

/// Operators evaluated when all their inputs are constants.
pub(crate) const FOLDABLE: &[&str] = &[
    "Identity",
    "Dropout",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Concat",
    "Gather",
    "Cast",
    "CastLike",
    "Slice",
    "Split",
    "ConstantOfShape",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Neg",
    "Abs",
    "Floor",
    "Ceil",
    "Sqrt",
    "Reciprocal",
    "Equal",
    "Greater",
    "Less",
    "GreaterOrEqual",
    "LessOrEqual",
    "And",
    "Or",
    "Xor",
    "Not",
    "Where",
    "Expand",
    "Range",
    "Transpose",
    "Min",
    "Max",
    "Sum",
];

fn all(cx: &NodeCx<'_>) -> Result<Vec<Option<std::rc::Rc<Const>>>> {
    (0..cx.inputs.len())
        .map(|k| cx.constant(k, "input"))
        .collect()
}

fn computed(cx: &NodeCx<'_>, dims: &[usize]) -> Result<usize> {
    tensor::count(dims, MAX_COMPUTED).map_err(|e| cx.err(e))
}

/// A `Constant` node.
pub(crate) fn constant(cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(0, 0)?;
    let c = if let Some(t) = cx.tensor("value")? {
        t
    } else if let Some(f) = cx.float("value_float")? {
        Const::floats(vec![], vec![f])
    } else if let Some(v) = cx.floats("value_floats")? {
        Const::floats(vec![v.len()], v)
    } else if let Some(i) = cx.int("value_int")? {
        Const::ints(vec![], vec![i])
    } else if let Some(v) = cx.ints("value_ints")? {
        Const::ints(vec![v.len()], v)
    } else if cx.has("sparse_value") || cx.has("value_string") || cx.has("value_strings") {
        return Err(cx.err("sparse and string constants are not supported"));
    } else if cx.has("value_floats") {
        Const::floats(vec![0], vec![])
    } else if cx.has("value_ints") {
        Const::ints(vec![0], vec![])
    } else {
        return Err(cx.err("no value attribute"));
    };
    Ok(consts(vec![c]))
}

/// A `Shape` node: the dimensions of any value (opset 15: `start`, `end`).
pub(crate) fn shape(cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(1, 1)?;
    let dims = value_dims(cx)?;
    let r = dims.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let start = clamp(cx.int("start")?.unwrap_or(0));
    let end = clamp(cx.int("end")?.unwrap_or(r));
    let v: Vec<i64> = dims[start..end.max(start)]
        .iter()
        .map(|&d| d as i64)
        .collect();
    Ok(consts(vec![Const::ints(vec![v.len()], v)]))
}

/// A `Size` node.
pub(crate) fn size(cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(1, 1)?;
    let n: usize = value_dims(cx)?.iter().product();
    Ok(consts(vec![Const::ints(vec![], vec![n as i64])]))
}

fn value_dims(cx: &NodeCx<'_>) -> Result<Vec<usize>> {
    match cx.input(0) {
        Some(Value::Unavailable(r)) => Err(cx.err(format!("input `{}`: {r}", cx.in_name(0)))),
        Some(v) => Ok(v.dims().unwrap_or_default().to_vec()),
        None => Err(cx.err("input 0 is missing")),
    }
}

/// Evaluates a [`FOLDABLE`] node on constant inputs.
pub(crate) fn eval(cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    let ins = all(cx)?;
    let x = ins[0].clone().ok_or_else(|| cx.err("input 0 is missing"))?;
    let out = match cx.op() {
        "Identity" | "Dropout" => vec![(*x).clone()],
        "Reshape" | "Flatten" | "Squeeze" | "Unsqueeze" => {
            let dims = layout_dims(cx, &x.dims)?;
            vec![x.reshaped(dims)]
        }
        "Concat" => vec![concat(cx, &ins)?],
        "Gather" => vec![gather(cx, &x, &*req(cx, &ins, 1)?)?],
        "Cast" => {
            let to = cx
                .int("to")?
                .ok_or_else(|| cx.err("attribute `to` is required"))?;
            vec![x.cast(to as i32).map_err(|e| cx.err(e))?]
        }
        "CastLike" => {
            let like = req(cx, &ins, 1)?;
            vec![x.cast(like.dtype).map_err(|e| cx.err(e))?]
        }
        "Slice" => {
            let idx = slice_indices(cx, &x.dims)?;
            vec![gather_axes(cx, &x, &idx)?]
        }
        "Split" => {
            let (axis, sizes) = split_sizes(cx, &x.dims)?;
            let outer: usize = x.dims[..axis].iter().product();
            let inner: usize = x.dims[axis + 1..].iter().product();
            let d = x.dims[axis];
            let mut start = 0;
            let mut outs = Vec::new();
            for s in sizes {
                let mut dims = x.dims.clone();
                dims[axis] = s;
                let flat: Vec<usize> = (0..outer)
                    .flat_map(|o| {
                        let base = (o * d + start) * inner;
                        base..base + s * inner
                    })
                    .collect();
                start += s;
                outs.push(pick(&x, dims, &flat));
            }
            outs
        }
        "ConstantOfShape" => {
            let dims: Vec<usize> = x
                .to_i64()
                .iter()
                .map(|&d| usize::try_from(d).map_err(|_| cx.err(format!("negative dimension {d}"))))
                .collect::<Result<_>>()?;
            let n = computed(cx, &dims)?;
            let v = cx
                .tensor("value")?
                .unwrap_or(Const::floats(vec![1], vec![0.0]));
            if v.len() != 1 {
                return Err(cx.err("`value` must hold one element"));
            }
            let data = match v.data {
                Data::F(f) => Data::F(vec![f[0]; n]),
                Data::I(i) => Data::I(vec![i[0]; n]),
            };
            vec![Const {
                dtype: v.dtype,
                dims,
                data,
            }]
        }
        "Add" | "Sub" | "Mul" | "Div" | "Equal" | "Min" | "Max" | "Sum" | "Greater" | "Less"
        | "GreaterOrEqual" | "LessOrEqual" | "And" | "Or" | "Xor" => {
            let mut acc = (*x).clone();
            if ins.len() < 2 && !matches!(cx.op(), "Min" | "Max" | "Sum") {
                return Err(cx.err("expects 2 inputs"));
            }
            for k in 1..ins.len() {
                acc = arith(cx, &acc, &*req(cx, &ins, k)?)?;
            }
            vec![acc]
        }
        "Neg" | "Abs" | "Floor" | "Ceil" | "Sqrt" | "Reciprocal" => vec![unary(cx, &x)?],
        "Not" => vec![Const {
            dtype: dt::BOOL,
            dims: x.dims.clone(),
            data: Data::I(x.to_i64().iter().map(|&v| i64::from(v == 0)).collect()),
        }],
        "Where" => vec![where_(cx, &x, &*req(cx, &ins, 1)?, &*req(cx, &ins, 2)?)?],
        "Expand" => {
            let shape: Vec<usize> = req(cx, &ins, 1)?
                .to_i64()
                .iter()
                .map(|&d| usize::try_from(d).map_err(|_| cx.err("negative dimension")))
                .collect::<Result<_>>()?;
            let dims = tensor::broadcast(&x.dims, &shape).ok_or_else(|| {
                cx.err(format!(
                    "{} does not broadcast to {}",
                    fmt_dims(&x.dims),
                    fmt_dims(&shape)
                ))
            })?;
            computed(cx, &dims)?;
            let idx = tensor::broadcast_index(&x.dims, &dims);
            vec![pick(&x, dims, &idx)]
        }
        "Range" => vec![range(cx, &x, &*req(cx, &ins, 1)?, &*req(cx, &ins, 2)?)?],
        "Transpose" => vec![transpose(cx, &x)?],
        _ => return Err(cx.err("not foldable")),
    };
    Ok(consts(out))
}

fn req(
    cx: &NodeCx<'_>,
    ins: &[Option<std::rc::Rc<Const>>],
    k: usize,
) -> Result<std::rc::Rc<Const>> {
    ins.get(k)
        .cloned()
        .flatten()
        .ok_or_else(|| cx.err(format!("input {k} is missing")))
}

/// The elements of `c` at flat indices `idx`, as a constant of `dims`.
fn pick(c: &Const, dims: Vec<usize>, idx: &[usize]) -> Const {
    let data = match &c.data {
        Data::F(v) => Data::F(idx.iter().map(|&i| v[i]).collect()),
        Data::I(v) => Data::I(idx.iter().map(|&i| v[i]).collect()),
    };
    Const {
        dtype: c.dtype,
        dims,
        data,
    }
}

/// The sub-tensor of `c` taking, along each axis, the listed indices.
pub(crate) fn gather_axes(cx: &NodeCx<'_>, c: &Const, idx: &[Vec<usize>]) -> Result<Const> {
    let dims: Vec<usize> = idx.iter().map(Vec::len).collect();
    let n = computed(cx, &dims)?;
    let st = tensor::strides(&c.dims);
    let ost = tensor::strides(&dims);
    let flat: Vec<usize> = (0..n)
        .map(|e| {
            idx.iter()
                .enumerate()
                .map(|(a, ix)| ix[(e / ost[a]) % dims[a]] * st[a])
                .sum()
        })
        .collect();
    Ok(pick(c, dims, &flat))
}

fn concat(cx: &NodeCx<'_>, ins: &[Option<std::rc::Rc<Const>>]) -> Result<Const> {
    let cs: Vec<std::rc::Rc<Const>> = ins.iter().flatten().cloned().collect();
    let r = cs[0].dims.len();
    let axis = cx
        .int("axis")?
        .ok_or_else(|| cx.err("attribute `axis` is required"))?;
    let a = cx.axis("axis", axis, r)?;
    for c in &cs {
        if c.dims.len() != r
            || c.dims
                .iter()
                .zip(&cs[0].dims)
                .enumerate()
                .any(|(i, (p, q))| i != a && p != q)
        {
            return Err(cx.err(format!(
                "shapes {} and {} differ off axis {a}",
                fmt_dims(&cs[0].dims),
                fmt_dims(&c.dims)
            )));
        }
    }
    let mut dims = cs[0].dims.clone();
    dims[a] = cs.iter().map(|c| c.dims[a]).sum();
    computed(cx, &dims)?;
    let outer: usize = dims[..a].iter().product();
    let inner: usize = dims[a + 1..].iter().product();
    let float = cs.iter().any(|c| matches!(c.data, Data::F(_)));
    let fs: Vec<Vec<f32>> = if float {
        cs.iter().map(|c| c.to_f32()).collect()
    } else {
        Vec::new()
    };
    let mut f = Vec::new();
    let mut i = Vec::new();
    for o in 0..outer {
        for (k, c) in cs.iter().enumerate() {
            let block = c.dims[a] * inner;
            let range = o * block..(o + 1) * block;
            if float {
                f.extend_from_slice(&fs[k][range]);
            } else if let Data::I(v) = &c.data {
                i.extend_from_slice(&v[range]);
            }
        }
    }
    Ok(Const {
        dtype: if float && !tensor::is_float(cs[0].dtype) {
            dt::FLOAT
        } else {
            cs[0].dtype
        },
        dims,
        data: if float { Data::F(f) } else { Data::I(i) },
    })
}

fn gather(cx: &NodeCx<'_>, data: &Const, indices: &Const) -> Result<Const> {
    let r = data.dims.len();
    if r == 0 {
        return Err(cx.err("Gather on a scalar"));
    }
    let a = cx.axis("axis", cx.int("axis")?.unwrap_or(0), r)?;
    let ix = indices
        .ints_exact()
        .ok_or_else(|| cx.err("indices must be integers"))?;
    let d = data.dims[a] as i64;
    let ix: Vec<usize> = ix
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + d } else { i };
            if (0..d).contains(&j) {
                Ok(j as usize)
            } else {
                Err(cx.err(format!("index {i} is out of range for axis of size {d}")))
            }
        })
        .collect::<Result<_>>()?;
    let mut dims = data.dims[..a].to_vec();
    dims.extend(&indices.dims);
    dims.extend(&data.dims[a + 1..]);
    computed(cx, &dims)?;
    let outer: usize = data.dims[..a].iter().product();
    let inner: usize = data.dims[a + 1..].iter().product();
    let mut flat = Vec::new();
    for o in 0..outer {
        for &j in &ix {
            let base = (o * data.dims[a] + j) * inner;
            flat.extend(base..base + inner);
        }
    }
    Ok(pick(data, dims, &flat))
}

fn arith(cx: &NodeCx<'_>, a: &Const, b: &Const) -> Result<Const> {
    let op = cx.op();
    let r = tensor::binary(
        a,
        b,
        |x, y| match op {
            "Add" | "Sum" => x + y,
            "Sub" => x - y,
            "Mul" => x * y,
            "Div" => x / y,
            "Equal" => f64::from(u8::from(x == y)),
            "Greater" => f64::from(u8::from(x > y)),
            "Less" => f64::from(u8::from(x < y)),
            "GreaterOrEqual" => f64::from(u8::from(x >= y)),
            "LessOrEqual" => f64::from(u8::from(x <= y)),
            "And" => f64::from(u8::from(x != 0.0 && y != 0.0)),
            "Or" => f64::from(u8::from(x != 0.0 || y != 0.0)),
            "Xor" => f64::from(u8::from((x != 0.0) != (y != 0.0))),
            "Min" => x.min(y),
            _ => x.max(y),
        },
        |x, y| match op {
            "Add" | "Sum" => Ok(x.wrapping_add(y)),
            "Sub" => Ok(x.wrapping_sub(y)),
            "Mul" => Ok(x.wrapping_mul(y)),
            "Div" => x
                .checked_div(y)
                .ok_or_else(|| "integer division by zero".to_string()),
            "Equal" => Ok(i64::from(x == y)),
            "Greater" => Ok(i64::from(x > y)),
            "Less" => Ok(i64::from(x < y)),
            "GreaterOrEqual" => Ok(i64::from(x >= y)),
            "LessOrEqual" => Ok(i64::from(x <= y)),
            "And" => Ok(i64::from(x != 0 && y != 0)),
            "Or" => Ok(i64::from(x != 0 || y != 0)),
            "Xor" => Ok(i64::from((x != 0) != (y != 0))),
            "Min" => Ok(x.min(y)),
            _ => Ok(x.max(y)),
        },
    )
    .map_err(|e| cx.err(e))?;
    let boolean = matches!(
        op,
        "Equal" | "Greater" | "Less" | "GreaterOrEqual" | "LessOrEqual" | "And" | "Or" | "Xor"
    );
    Ok(if boolean {
        Const {
            dtype: dt::BOOL,
            dims: r.dims.clone(),
            data: Data::I(r.to_i64()),
        }
    } else {
        r
    })
}

fn unary(cx: &NodeCx<'_>, x: &Const) -> Result<Const> {
    let op = cx.op();
    Ok(match &x.data {
        Data::I(v) if matches!(op, "Neg" | "Abs" | "Floor" | "Ceil") => Const {
            dtype: x.dtype,
            dims: x.dims.clone(),
            data: Data::I(
                v.iter()
                    .map(|&i| match op {
                        "Neg" => tensor::wrap(i.wrapping_neg(), x.dtype),
                        "Abs" => tensor::wrap(i.wrapping_abs(), x.dtype),
                        _ => i,
                    })
                    .collect(),
            ),
        },
        _ => Const::floats(
            x.dims.clone(),
            x.to_f32()
                .iter()
                .map(|&v| match op {
                    "Neg" => -v,
                    "Abs" => v.abs(),
                    "Floor" => v.floor(),
                    "Ceil" => v.ceil(),
                    "Sqrt" => v.sqrt(),
                    _ => 1.0 / v,
                })
                .collect(),
        ),
    })
}

fn where_(cx: &NodeCx<'_>, c: &Const, x: &Const, y: &Const) -> Result<Const> {
    let dims = tensor::broadcast(&c.dims, &x.dims)
        .and_then(|d| tensor::broadcast(&d, &y.dims))
        .ok_or_else(|| cx.err("shapes do not broadcast"))?;
    computed(cx, &dims)?;
    let (ic, ix, iy) = (
        tensor::broadcast_index(&c.dims, &dims),
        tensor::broadcast_index(&x.dims, &dims),
        tensor::broadcast_index(&y.dims, &dims),
    );
    let cv = c.to_i64();
    let float = matches!(x.data, Data::F(_)) || matches!(y.data, Data::F(_));
    let n = ic.len();
    let data = if float {
        let (xv, yv) = (x.to_f32(), y.to_f32());
        Data::F(
            (0..n)
                .map(|e| if cv[ic[e]] != 0 { xv[ix[e]] } else { yv[iy[e]] })
                .collect(),
        )
    } else {
        let (xv, yv) = (x.to_i64(), y.to_i64());
        Data::I(
            (0..n)
                .map(|e| if cv[ic[e]] != 0 { xv[ix[e]] } else { yv[iy[e]] })
                .collect(),
        )
    };
    Ok(Const {
        dtype: x.dtype,
        dims,
        data,
    })
}

fn range(cx: &NodeCx<'_>, start: &Const, limit: &Const, delta: &Const) -> Result<Const> {
    if start.len() != 1 || limit.len() != 1 || delta.len() != 1 {
        return Err(cx.err("start, limit and delta must be scalars"));
    }
    match (&start.data, &limit.data, &delta.data) {
        (Data::I(s), Data::I(l), Data::I(d)) => {
            let (s, l, d) = (s[0] as i128, l[0] as i128, d[0] as i128);
            if d == 0 {
                return Err(cx.err("delta is 0"));
            }
            let n = ((l - s + d - d.signum()) / d).max(0);
            if n > MAX_COMPUTED as i128 {
                return Err(cx.err(format!("{n} elements")));
            }
            let v: Vec<i64> = (0..n).map(|i| (s + i * d) as i64).collect();
            Ok(Const {
                dtype: start.dtype,
                dims: vec![v.len()],
                data: Data::I(v),
            })
        }
        _ => {
            let (s, l, d) = (
                f64::from(start.to_f32()[0]),
                f64::from(limit.to_f32()[0]),
                f64::from(delta.to_f32()[0]),
            );
            let n = ((l - s) / d).ceil().max(0.0);
            if n > MAX_COMPUTED as f64 {
                return Err(cx.err("too many elements"));
            }
            let v: Vec<f32> = (0..n as usize).map(|i| (s + i as f64 * d) as f32).collect();
            Ok(Const::floats(vec![v.len()], v))
        }
    }
}

fn transpose(cx: &NodeCx<'_>, x: &Const) -> Result<Const> {
    let r = x.dims.len();
    let perm: Vec<usize> = match cx.ints("perm")? {
        None => (0..r).rev().collect(),
        Some(p) => p
            .iter()
            .map(|&a| cx.axis("perm", a, r))
            .collect::<Result<_>>()?,
    };
    let mut seen = vec![false; r];
    if perm.len() != r || perm.iter().any(|&a| std::mem::replace(&mut seen[a], true)) {
        return Err(cx.err(format!("perm {perm:?} is not a permutation of {r} axes")));
    }
    let dims: Vec<usize> = perm.iter().map(|&a| x.dims[a]).collect();
    let st = tensor::strides(&x.dims);
    let ost = tensor::strides(&dims);
    let n = x.len();
    let flat: Vec<usize> = (0..n)
        .map(|e| {
            perm.iter()
                .enumerate()
                .map(|(i, &a)| ((e / ost[i]) % dims[i]) * st[a])
                .sum()
        })
        .collect();
    Ok(pick(x, dims, &flat))
}

/// The axis and part sizes of a `Split` of a value of `dims` (attribute `split` before
/// opset 13, input from 13, `num_outputs` from 18, else equal parts per output).
pub(crate) fn split_sizes(cx: &NodeCx<'_>, dims: &[usize]) -> Result<(usize, Vec<usize>)> {
    let r = dims.len();
    let a = cx.axis("axis", cx.int("axis")?.unwrap_or(0), r)?;
    let d = dims[a];
    let parts = cx.node.output.len();
    let sizes: Vec<usize> = match ints_param(cx, 1, "split", 13)? {
        Some(v) => v
            .iter()
            .map(|&s| usize::try_from(s).map_err(|_| cx.err(format!("split size {s}"))))
            .collect::<Result<_>>()?,
        None => {
            let n = match cx.int("num_outputs")? {
                Some(n) if n >= 1 => n as usize,
                Some(n) => return Err(cx.err(format!("num_outputs {n}"))),
                None => parts,
            };
            if n == 0 {
                return Err(cx.err("no outputs"));
            }
            // Checked before the parts are listed: a huge `num_outputs` would otherwise
            // build a list that long (found by the `onnx` fuzz target).
            if n != parts {
                return Err(cx.err(format!("num_outputs {n} but {parts} outputs")));
            }
            if cx.has("num_outputs") {
                let each = d.div_ceil(n);
                (0..n)
                    .map(|i| each.min(d.saturating_sub(i * each)))
                    .collect()
            } else {
                if d.checked_rem(n) != Some(0) {
                    return Err(cx.err(format!("{d} does not split into {n} equal parts")));
                }
                vec![d / n; n]
            }
        }
    };
    if sizes.iter().sum::<usize>() != d || sizes.len() != parts {
        return Err(cx.err(format!(
            "split sizes {sizes:?} do not fit axis {a} of {} into {parts} outputs",
            fmt_dims(dims)
        )));
    }
    Ok((a, sizes))
}

/// For each axis of a value of `dims`, the indices a `Slice` keeps (attributes before
/// opset 10, inputs from 10; numpy clamping; any non-zero step).
pub(crate) fn slice_indices(cx: &NodeCx<'_>, dims: &[usize]) -> Result<Vec<Vec<usize>>> {
    let r = dims.len();
    let (starts, ends, axes, steps) = if cx.opset < 10 {
        cx.arity(1, 1)?;
        (cx.ints("starts")?, cx.ints("ends")?, cx.ints("axes")?, None)
    } else {
        cx.arity(3, 5)?;
        (
            ints_param(cx, 1, "starts", 10)?,
            ints_param(cx, 2, "ends", 10)?,
            ints_param(cx, 3, "axes", 10)?,
            ints_param(cx, 4, "steps", 10)?,
        )
    };
    let starts = starts.ok_or_else(|| cx.err("starts are required"))?;
    let ends = ends.ok_or_else(|| cx.err("ends are required"))?;
    let n = starts.len();
    let axes = axes.unwrap_or_else(|| (0..n as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; n]);
    if ends.len() != n || axes.len() != n || steps.len() != n {
        return Err(cx.err("starts, ends, axes and steps differ in length"));
    }
    if let Some(d) = dims.iter().find(|&&d| d > MAX_COMPUTED) {
        return Err(cx.err(format!("an axis of size {d} is too large to slice")));
    }
    let mut idx: Vec<Vec<usize>> = dims.iter().map(|&d| (0..d).collect()).collect();
    let mut seen = vec![false; r];
    for i in 0..n {
        let a = cx.axis("axes", axes[i], r)?;
        if std::mem::replace(&mut seen[a], true) {
            return Err(cx.err(format!("axis {a} is sliced twice")));
        }
        let d = dims[a] as i128;
        let step = steps[i] as i128;
        if step == 0 {
            return Err(cx.err("step 0"));
        }
        let norm = |v: i64| {
            let v = v as i128;
            if v < 0 {
                v + d
            } else {
                v
            }
        };
        let (mut s, mut e) = (norm(starts[i]), norm(ends[i]));
        if d == 0 {
            idx[a] = Vec::new();
            continue;
        }
        if step > 0 {
            s = s.clamp(0, d);
            e = e.clamp(0, d);
        } else {
            s = s.clamp(0, d - 1);
            e = e.clamp(-1, d - 1);
        }
        let mut v = Vec::new();
        let mut p = s;
        while (step > 0 && p < e) || (step < 0 && p > e) {
            v.push(p as usize);
            p += step;
        }
        idx[a] = v;
    }
    Ok(idx)
}
