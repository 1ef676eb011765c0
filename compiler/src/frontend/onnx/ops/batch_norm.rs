//! `BatchNormalization` (inference): an IR `ChannelAffine`.

use super::common::{affine, vector};
use crate::error::Result;
use crate::frontend::onnx::build::{Builder, NodeCx, Value};
use crate::frontend::onnx::tensor::fmt_dims;

pub(super) fn batch_norm(b: &mut Builder, cx: &NodeCx<'_>) -> Result<Vec<Value>> {
    cx.arity(5, 5)?;
    let x = cx.act(0)?;
    if x.dims.len() < 2 {
        return Err(cx.err(format!("input {} has no channel axis", fmt_dims(&x.dims))));
    }
    if cx.int("training_mode")?.unwrap_or(0) != 0 || cx.int("is_test")? == Some(0) {
        return Err(cx.err("training mode is not supported (inference only)"));
    }
    let c = x.dims[1];
    let per_item: usize = x.dims[1..].iter().product();
    if cx.opset < 9 && cx.int("spatial")?.unwrap_or(1) == 0 && per_item != c {
        return Err(cx.err("spatial = 0 (statistics per element) is not supported"));
    }
    let get = |k: usize, what: &str| -> Result<Vec<f64>> {
        let v = cx.required(k, what)?;
        Ok(vector(cx, &v, c, what)?
            .data
            .iter()
            .map(|&x| f64::from(x))
            .collect())
    };
    let (scale, bias, mean, var) = (
        get(1, "scale")?,
        get(2, "B")?,
        get(3, "mean")?,
        get(4, "var")?,
    );
    let eps = f64::from(cx.float("epsilon")?.unwrap_or(1e-5));
    let mut s = Vec::with_capacity(c);
    let mut bb = Vec::with_capacity(c);
    for ch in 0..c {
        let d = var[ch] + eps;
        if d.is_nan() || d <= 0.0 {
            return Err(cx.err(format!(
                "channel {ch}: variance + epsilon = {d} is not positive"
            )));
        }
        let k = scale[ch] / d.sqrt();
        s.push(k as f32);
        bb.push((bias[ch] - mean[ch] * k) as f32);
    }
    let mut outs = affine(b, cx, 0, Some(s), Some(bb), None)?;
    for what in ["running_mean", "running_var", "saved_mean", "saved_var"] {
        outs.push(Value::Unavailable(format!(
            "BatchNormalization's {what} output is training-only"
        )));
    }
    Ok(outs)
}
