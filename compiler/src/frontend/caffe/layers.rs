//! One Caffe layer to one IR operation, with the output shape Caffe computes.
//!
//! Shapes here are Caffe's N-D blob shapes (`Vec<usize>`, outermost first); the builder
//! turns them into 4-D IR shapes. Each function follows the corresponding Caffe layer's
//! `LayerSetUp`/`Reshape` checks and arithmetic, and reads its trained blobs through
//! [`TrainedWeights::take`], which validates their number and shapes.

use super::params::{self, Ctx, MAX_COUNT};
use super::text::Message;
use super::weights::{Expect, TrainedWeights};
use crate::error::Result;
use crate::ir::{Activation, Conv, EltwiseKind, Op, Pool, PoolKind, Weights, Window};

/// Everything a layer mapping reads.
pub(crate) struct LayerIn<'a, 'w> {
    /// The layer.
    pub ctx: Ctx<'a>,
    /// Its prototxt message.
    pub layer: &'a Message,
    /// Caffe shapes of its bottoms, in order.
    pub inputs: &'a [Vec<usize>],
    /// The caffemodel's blobs.
    pub weights: &'a TrainedWeights<'w>,
}

/// Largest channel count a shared slope is expanded to (a per-channel IR vector).
const MAX_EXPANDED_CHANNELS: usize = 1 << 24;

static EMPTY: Message = Message { fields: Vec::new() };

impl LayerIn<'_, '_> {
    fn param(&self, name: &str) -> Result<&Message> {
        Ok(params::message(self.ctx, self.layer, name)?.unwrap_or(&EMPTY))
    }

    fn bottoms(&self, n: usize) -> Result<()> {
        if self.inputs.len() != n {
            return Err(self.ctx.err(format!(
                "expects {n} bottom blob(s), found {}",
                self.inputs.len()
            )));
        }
        Ok(())
    }

    fn one_bottom(&self) -> Result<&[usize]> {
        self.bottoms(1)?;
        Ok(&self.inputs[0])
    }

    fn four_d(&self) -> Result<[usize; 4]> {
        let x = self.one_bottom()?;
        match *x {
            [n, c, h, w] => Ok([n, c, h, w]),
            _ => Err(self.ctx.err(format!(
                "expects a 4-D (N x C x H x W) input, found {}-D {}",
                x.len(),
                fmt(x)
            ))),
        }
    }
}

/// `AxBxC`.
pub(crate) fn fmt(d: &[usize]) -> String {
    d.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// Element count of `dims`, refused beyond Caffe's limit.
pub(crate) fn count(ctx: Ctx<'_>, dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&c| c <= MAX_COUNT)
        .ok_or_else(|| {
            ctx.err(format!(
                "blob of shape {} exceeds 2^31 - 1 elements",
                fmt(dims)
            ))
        })
}

/// Caffe's `CanonicalAxisIndex`: `-rank <= axis < rank`, negative counts from the end.
fn canonical_axis(ctx: Ctx<'_>, field: &str, axis: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(ctx.err(format!(
            "{field} {axis} is out of range for a {rank}-D blob"
        )));
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// The mapping for Caffe type `kind` (the current spelling), or `None` if the type is not
/// one of these (the builder handles Input, Split and Silence itself).
pub(crate) fn map(kind: &str, l: &LayerIn<'_, '_>) -> Option<Result<(Op, Vec<usize>)>> {
    Some(match kind {
        "Convolution" => convolution(l, false),
        "Deconvolution" => convolution(l, true),
        "InnerProduct" => inner_product(l),
        "Pooling" => pooling(l),
        "ReLU" => relu(l),
        "Sigmoid" => elementwise(l, Op::Activation(Activation::Sigmoid)),
        "TanH" => elementwise(l, Op::Activation(Activation::Tanh)),
        "Softmax" => softmax(l),
        "LRN" => lrn(l),
        "BatchNorm" => batch_norm(l),
        "Scale" => scale(l),
        "Bias" => bias(l),
        "Eltwise" => eltwise(l),
        "Concat" => concat(l),
        "Power" => power(l),
        "Dropout" => dropout(l),
        "Flatten" => flatten(l),
        "Reshape" => reshape(l),
        "PReLU" => prelu(l),
        "Crop" => crop(l),
        _ => return None,
    })
}

/// A `[h, w]` pair given as a repeated field (one value for both, or one per dimension)
/// or as `<field>_h` and `<field>_w` (both required, not together with the list).
fn pair(
    l: &LayerIn<'_, '_>,
    p: &Message,
    list: &str,
    h: &str,
    w: &str,
    default: Option<usize>,
) -> Result<[usize; 2]> {
    let ctx = l.ctx;
    let values = params::sizes(ctx, p, list)?;
    if p.has(h) || p.has(w) {
        if !values.is_empty() {
            return Err(ctx.err(format!("give either {list} or {h}/{w}, not both")));
        }
        return match (params::size(ctx, p, h)?, params::size(ctx, p, w)?) {
            (Some(a), Some(b)) => Ok([a, b]),
            _ => Err(ctx.err(format!("{h} and {w} are both required"))),
        };
    }
    match (values.as_slice(), default) {
        ([v], _) => Ok([*v, *v]),
        ([a, b], _) => Ok([*a, *b]),
        ([], Some(d)) => Ok([d, d]),
        ([], None) => Err(ctx.err(format!("{list} (or {h} and {w}) must be specified"))),
        _ => Err(ctx.err(format!(
            "{list} must be given once or once per spatial dimension (2), found {}",
            values.len()
        ))),
    }
}

fn positive(ctx: Ctx<'_>, what: &str, v: [usize; 2]) -> Result<()> {
    if v.contains(&0) {
        return Err(ctx.err(format!("{what} must be nonzero, found {}x{}", v[0], v[1])));
    }
    Ok(())
}

fn convolution(l: &LayerIn<'_, '_>, deconv: bool) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    let [n, c, h, w] = l.four_d()?;
    let p = l.param("convolution_param")?;
    let k_out = params::size(ctx, p, "num_output")?.unwrap_or(0);
    if k_out == 0 {
        return Err(ctx.err("num_output must be positive"));
    }
    let bias_term = params::boolean(ctx, p, "bias_term")?.unwrap_or(true);
    let axis = params::int(ctx, p, "axis")?.unwrap_or(1);
    if canonical_axis(ctx, "axis", axis, 4)? != 1 {
        return Err(ctx.err(format!("only axis 1 (channels) is supported, found {axis}")));
    }
    let kernel = pair(l, p, "kernel_size", "kernel_h", "kernel_w", None)?;
    positive(ctx, "kernel size", kernel)?;
    let stride = pair(l, p, "stride", "stride_h", "stride_w", Some(1))?;
    positive(ctx, "stride", stride)?;
    let pad = pair(l, p, "pad", "pad_h", "pad_w", Some(0))?;
    let dilation = match params::sizes(ctx, p, "dilation")?.as_slice() {
        [] => [1, 1],
        [d] => [*d, *d],
        [a, b] => [*a, *b],
        d => {
            return Err(ctx.err(format!(
                "dilation must be given once or once per spatial dimension (2), found {}",
                d.len()
            )))
        }
    };
    positive(ctx, "dilation", dilation)?;
    let group = params::size(ctx, p, "group")?.unwrap_or(1);
    if group == 0 {
        return Err(ctx.err("group must be positive"));
    }
    if c % group != 0 {
        return Err(ctx.err(format!(
            "input channels ({c}) must be a multiple of group ({group})"
        )));
    }
    if k_out % group != 0 {
        return Err(ctx.err(format!(
            "num_output ({k_out}) must be a multiple of group ({group})"
        )));
    }
    let mut out = [0usize; 2];
    for (i, input) in [h, w].into_iter().enumerate() {
        // All operands are below 2^31: no overflow in u128/i128.
        let extent = dilation[i] as i128 * (kernel[i] as i128 - 1) + 1;
        let o = if deconv {
            stride[i] as i128 * (input as i128 - 1) + extent - 2 * pad[i] as i128
        } else {
            let span = input as i128 + 2 * pad[i] as i128 - extent;
            if span < 0 {
                return Err(ctx.err(format!(
                    "kernel extent {extent} is larger than the padded input ({} + 2x{})",
                    input, pad[i]
                )));
            }
            span / stride[i] as i128 + 1
        };
        if o < 1 || o > MAX_COUNT as i128 {
            return Err(ctx.err(format!(
                "output {} would be {o}",
                if i == 0 { "height" } else { "width" }
            )));
        }
        out[i] = o as usize;
    }
    let wdims = if deconv {
        vec![c, k_out / group, kernel[0], kernel[1]]
    } else {
        vec![k_out, c / group, kernel[0], kernel[1]]
    };
    count(ctx, &wdims)?;
    let mut expect = vec![Expect {
        what: "weights",
        dims: wdims.clone(),
    }];
    if bias_term {
        expect.push(Expect {
            what: "bias",
            dims: vec![k_out],
        });
    }
    let mut blobs = l.weights.take(ctx, &expect)?.into_iter();
    let weight = Weights {
        dims: wdims,
        data: blobs.next().unwrap_or_default(),
    };
    let bias = blobs.next().map(Weights::vector);
    let conv = Conv {
        window: Window {
            kernel,
            stride,
            pad: [pad[0], pad[1], pad[0], pad[1]],
            dilation,
        },
        groups: group,
        out_channels: k_out,
        weight,
        bias,
    };
    let op = if deconv {
        Op::Deconv(conv)
    } else {
        Op::Conv(conv)
    };
    Ok((op, vec![n, k_out, out[0], out[1]]))
}

fn inner_product(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    let x = l.one_bottom()?;
    let p = l.param("inner_product_param")?;
    let k_out = params::size(ctx, p, "num_output")?.unwrap_or(0);
    if k_out == 0 {
        return Err(ctx.err("num_output must be positive"));
    }
    let bias_term = params::boolean(ctx, p, "bias_term")?.unwrap_or(true);
    let transpose = params::boolean(ctx, p, "transpose")?.unwrap_or(false);
    let axis = params::int(ctx, p, "axis")?.unwrap_or(1);
    if canonical_axis(ctx, "axis", axis, x.len())? != 1 {
        return Err(ctx.err(format!(
            "only axis 1 is supported (one inner product per batch item), found {axis}"
        )));
    }
    let k_in: usize = x[1..].iter().product();
    let wdims = if transpose {
        vec![k_in, k_out]
    } else {
        vec![k_out, k_in]
    };
    count(ctx, &wdims)?;
    let mut expect = vec![Expect {
        what: "weights",
        dims: wdims,
    }];
    if bias_term {
        expect.push(Expect {
            what: "bias",
            dims: vec![k_out],
        });
    }
    let mut blobs = l.weights.take(ctx, &expect)?.into_iter();
    let raw = blobs.next().unwrap_or_default();
    let data = if transpose {
        // Stored [K_in, K_out]; the IR wants [K_out, K_in].
        let mut t = vec![0.0; raw.len()];
        for (i, row) in raw.chunks_exact(k_out).enumerate() {
            for (k, &v) in row.iter().enumerate() {
                t[k * k_in + i] = v;
            }
        }
        t
    } else {
        raw
    };
    let weight = Weights {
        dims: vec![k_out, k_in],
        data,
    };
    let bias = blobs.next().map(Weights::vector);
    Ok((Op::FullyConnected { weight, bias }, vec![x[0], k_out]))
}

/// Caffe's pooled size: rounded up (or down), then, if there is any padding, the last
/// window must start inside the image or its leading padding.
fn pooled(
    ctx: Ctx<'_>,
    input: usize,
    k: usize,
    s: usize,
    p: usize,
    ceil: bool,
    padded: bool,
) -> Result<usize> {
    let (input, k, s, p) = (input as i128, k as i128, s as i128, p as i128);
    let span = input + 2 * p - k;
    let q = if ceil {
        -((-span).div_euclid(s))
    } else {
        span.div_euclid(s)
    };
    let mut out = q + 1;
    if padded && (out - 1) * s >= input + p {
        out -= 1;
    }
    if out < 1 || out > MAX_COUNT as i128 {
        return Err(ctx.err(format!(
            "pooled size would be {out} (input {input}, kernel {k}, stride {s}, pad {p})"
        )));
    }
    if padded && (out - 1) * s >= input + p {
        return Err(ctx.err("the last pooling window starts beyond the padded input"));
    }
    // Without padding Caffe keeps a rounded-up window that starts past the input (a
    // kernel smaller than the stride): it would pool nothing.
    if (out - 1) * s - p >= input {
        return Err(ctx.err(format!(
            "the last pooling window starts beyond the input (input {input}, kernel {k}, \
             stride {s}): it covers no element"
        )));
    }
    Ok(out as usize)
}

fn pooling(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    let [n, c, h, w] = l.four_d()?;
    let p = l.param("pooling_param")?;
    let kind = match params::enumeration(ctx, p, "pool", &[("MAX", 0), ("AVE", 1), ("STOCHASTIC", 2)])?
        .unwrap_or(0)
    {
        0 => PoolKind::Max,
        1 => PoolKind::Avg,
        _ => return Err(ctx.err("STOCHASTIC pooling is not supported (it is random at training and a weighted average at test)")),
    };
    let global = params::boolean(ctx, p, "global_pooling")?.unwrap_or(false);
    let kernel = if global {
        if p.has("kernel_size") || p.has("kernel_h") || p.has("kernel_w") {
            return Err(ctx.err("with global_pooling the kernel size cannot be specified"));
        }
        [h, w]
    } else {
        pair(l, p, "kernel_size", "kernel_h", "kernel_w", None)?
    };
    positive(ctx, "kernel size", kernel)?;
    let stride = pair(l, p, "stride", "stride_h", "stride_w", Some(1))?;
    positive(ctx, "stride", stride)?;
    let pad = pair(l, p, "pad", "pad_h", "pad_w", Some(0))?;
    if global && (pad != [0, 0] || stride != [1, 1]) {
        return Err(ctx.err("with global_pooling only pad 0 and stride 1 are allowed"));
    }
    if params::sizes(ctx, p, "dilation")?.iter().any(|&d| d != 1) {
        return Err(ctx.err("dilated pooling is not supported"));
    }
    let padded = pad != [0, 0];
    if padded && (pad[0] >= kernel[0] || pad[1] >= kernel[1]) {
        return Err(ctx.err(format!(
            "pad ({}x{}) must be smaller than the kernel ({}x{})",
            pad[0], pad[1], kernel[0], kernel[1]
        )));
    }
    let ceil =
        params::enumeration(ctx, p, "round_mode", &[("CEIL", 0), ("FLOOR", 1)])?.unwrap_or(0) == 0;
    let oh = pooled(ctx, h, kernel[0], stride[0], pad[0], ceil, padded)?;
    let ow = pooled(ctx, w, kernel[1], stride[1], pad[1], ceil, padded)?;
    let pool = Pool {
        kind,
        window: Window {
            kernel,
            stride,
            pad: [pad[0], pad[1], pad[0], pad[1]],
            dilation: [1, 1],
        },
        ceil_mode: ceil,
        // Caffe's AVE divides by the window clipped to the padded input
        // [-pad, H + pad): padding counts, overhang past it (ceil mode) does not.
        count_include_pad: true,
    };
    Ok((Op::Pool(pool), vec![n, c, oh, ow]))
}

fn elementwise(l: &LayerIn<'_, '_>, op: Op) -> Result<(Op, Vec<usize>)> {
    let x = l.one_bottom()?;
    Ok((op, x.to_vec()))
}

fn relu(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let p = l.param("relu_param")?;
    let slope = params::float(l.ctx, p, "negative_slope")?.unwrap_or(0.0);
    elementwise(l, Op::Activation(Activation::Relu { slope }))
}

fn softmax(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let x = l.one_bottom()?;
    let p = l.param("softmax_param")?;
    let axis = params::int(l.ctx, p, "axis")?.unwrap_or(1);
    if canonical_axis(l.ctx, "axis", axis, x.len())? != 1 {
        return Err(l.ctx.err(format!(
            "only softmax over channels (axis 1) is supported, found axis {axis}"
        )));
    }
    Ok((Op::Softmax, x.to_vec()))
}

fn lrn(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    let dims = l.four_d()?;
    let p = l.param("lrn_param")?;
    let size = params::size(ctx, p, "local_size")?.unwrap_or(5);
    if size % 2 != 1 {
        return Err(ctx.err(format!("local_size must be odd, found {size}")));
    }
    let region = params::enumeration(
        ctx,
        p,
        "norm_region",
        &[("ACROSS_CHANNELS", 0), ("WITHIN_CHANNEL", 1)],
    )?
    .unwrap_or(0);
    if region != 0 {
        return Err(ctx.err("WITHIN_CHANNEL normalisation is not supported"));
    }
    let alpha = params::float(ctx, p, "alpha")?.unwrap_or(1.0);
    let beta = params::float(ctx, p, "beta")?.unwrap_or(0.75);
    let k = params::float(ctx, p, "k")?.unwrap_or(1.0);
    Ok((
        Op::Lrn {
            size,
            alpha,
            beta,
            k,
        },
        dims.to_vec(),
    ))
}

/// Channels as Caffe's per-channel layers read them: axis 1, or 1 for a 1-D blob.
fn channels(x: &[usize]) -> usize {
    x.get(1).copied().unwrap_or(1)
}

fn batch_norm(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    let x = l.one_bottom()?;
    let p = l.param("batch_norm_param")?;
    if !params::boolean(ctx, p, "use_global_stats")?.unwrap_or(true) {
        return Err(ctx.err(
            "use_global_stats: false normalises with the statistics of each batch; \
             only stored statistics (use_global_stats: true, the test-phase default) are supported",
        ));
    }
    let eps = params::float(ctx, p, "eps")?.unwrap_or(1e-5);
    let c = channels(x);
    let mut blobs = l
        .weights
        .take(
            ctx,
            &[
                Expect {
                    what: "mean",
                    dims: vec![c],
                },
                Expect {
                    what: "variance",
                    dims: vec![c],
                },
                Expect {
                    what: "moving-average factor",
                    dims: vec![1],
                },
            ],
        )?
        .into_iter();
    let (mut mean, mut var) = (
        blobs.next().unwrap_or_default(),
        blobs.next().unwrap_or_default(),
    );
    let factor = blobs.next().and_then(|f| f.first().copied()).unwrap_or(1.0);
    let scale = if factor == 0.0 { 0.0 } else { 1.0 / factor };
    mean.iter_mut().for_each(|v| *v *= scale);
    var.iter_mut().for_each(|v| *v *= scale);
    Ok((
        Op::BatchNorm {
            mean: Weights::vector(mean),
            var: Weights::vector(var),
            eps,
        },
        x.to_vec(),
    ))
}

/// The parameter shape of Scale/Bias (`axis`, `num_axes` over bottom 0) and whether it is
/// per channel (else a scalar); shapes that vary along other axes are refused.
fn channel_param(l: &LayerIn<'_, '_>, p: &Message, x: &[usize]) -> Result<(Vec<usize>, bool)> {
    let ctx = l.ctx;
    let axis = params::int(ctx, p, "axis")?.unwrap_or(1);
    let axis = canonical_axis(ctx, "axis", axis, x.len())?;
    let num_axes = params::int(ctx, p, "num_axes")?.unwrap_or(1);
    let end = match num_axes {
        -1 => x.len(),
        n if n >= 0 && (axis as i64).saturating_add(n) <= x.len() as i64 => axis + n as usize,
        n => {
            return Err(ctx.err(format!(
                "num_axes {n} from axis {axis} does not fit a {}-D input",
                x.len()
            )))
        }
    };
    let dims = x[axis..end].to_vec();
    for (i, &d) in dims.iter().enumerate() {
        if axis + i != 1 && d != 1 {
            return Err(ctx.err(format!(
                "a parameter of shape {} (axis {axis}) varies along axis {}; \
                 only per-channel or scalar parameters are supported",
                fmt(&dims),
                axis + i
            )));
        }
    }
    Ok((dims, (axis..end).contains(&1)))
}

fn scale(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    if l.inputs.len() == 2 {
        return Err(
            ctx.err("a Scale with a second bottom (a scale computed at run time) is not supported")
        );
    }
    let x = l.one_bottom()?;
    let p = l.param("scale_param")?;
    let (dims, _) = channel_param(l, p, x)?;
    let bias_term = params::boolean(ctx, p, "bias_term")?.unwrap_or(false);
    let mut expect = vec![Expect {
        what: "scale",
        dims: dims.clone(),
    }];
    if bias_term {
        expect.push(Expect { what: "bias", dims });
    }
    let mut blobs = l.weights.take(ctx, &expect)?.into_iter();
    let scale = blobs.next().map(Weights::vector);
    let bias = blobs.next().map(Weights::vector);
    Ok((Op::ChannelAffine { scale, bias }, x.to_vec()))
}

fn bias(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    if l.inputs.len() == 2 {
        return Err(
            ctx.err("a Bias with a second bottom (a bias computed at run time) is not supported")
        );
    }
    let x = l.one_bottom()?;
    let p = l.param("bias_param")?;
    let (dims, _) = channel_param(l, p, x)?;
    let mut blobs = l
        .weights
        .take(ctx, &[Expect { what: "bias", dims }])?
        .into_iter();
    let bias = blobs.next().map(Weights::vector);
    Ok((Op::ChannelAffine { scale: None, bias }, x.to_vec()))
}

fn eltwise(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    if l.inputs.len() < 2 {
        return Err(ctx.err(format!(
            "expects at least 2 bottom blobs, found {}",
            l.inputs.len()
        )));
    }
    let x = &l.inputs[0];
    if let Some((i, other)) = l.inputs.iter().enumerate().find(|(_, s)| *s != x) {
        return Err(ctx.err(format!(
            "bottom {i} has shape {} but bottom 0 has {}",
            fmt(other),
            fmt(x)
        )));
    }
    let p = l.param("eltwise_param")?;
    let kind =
        match params::enumeration(ctx, p, "operation", &[("PROD", 0), ("SUM", 1), ("MAX", 2)])?
            .unwrap_or(1)
        {
            0 => EltwiseKind::Prod,
            2 => EltwiseKind::Max,
            _ => EltwiseKind::Sum,
        };
    let mut coeffs = params::floats(ctx, p, "coeff")?;
    // Caffe: one coefficient per bottom or none; none for PROD; MAX ignores them.
    if !coeffs.is_empty() && coeffs.len() != l.inputs.len() {
        return Err(ctx.err(format!(
            "{} coefficients for {} bottoms (one per bottom needed)",
            coeffs.len(),
            l.inputs.len()
        )));
    }
    match kind {
        EltwiseKind::Prod if !coeffs.is_empty() => {
            return Err(ctx.err("coefficients are only allowed for SUM"))
        }
        EltwiseKind::Max => coeffs.clear(),
        _ => {}
    }
    Ok((Op::Eltwise { kind, coeffs }, x.clone()))
}

fn concat(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    let Some(x) = l.inputs.first() else {
        return Err(ctx.err("expects at least 1 bottom blob"));
    };
    let p = l.param("concat_param")?;
    let axis = if p.has("concat_dim") {
        if p.has("axis") {
            return Err(ctx.err("give either axis or concat_dim, not both"));
        }
        let d = params::size(ctx, p, "concat_dim")?.unwrap_or(1);
        if d >= x.len() {
            return Err(ctx.err(format!(
                "concat_dim {d} out of range for a {}-D blob",
                x.len()
            )));
        }
        d
    } else {
        let a = params::int(ctx, p, "axis")?.unwrap_or(1);
        canonical_axis(ctx, "axis", a, x.len())?
    };
    if axis != 1 {
        return Err(ctx.err(format!(
            "only concatenation along channels (axis 1) is supported, found axis {axis}"
        )));
    }
    let mut out = x.clone();
    for (i, b) in l.inputs.iter().enumerate().skip(1) {
        let same_rest = b.len() == x.len()
            && b.iter()
                .zip(x)
                .enumerate()
                .all(|(d, (u, v))| d == 1 || u == v);
        if !same_rest {
            return Err(ctx.err(format!(
                "bottom {i} has shape {} which differs from bottom 0 ({}) outside axis 1",
                fmt(b),
                fmt(x)
            )));
        }
        out[1] = out[1]
            .checked_add(b[1])
            .filter(|&c| c <= MAX_COUNT)
            .ok_or_else(|| ctx.err("too many channels"))?;
    }
    let op = if l.inputs.len() == 1 {
        Op::Identity
    } else {
        Op::Concat
    };
    Ok((op, out))
}

fn power(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    let p = l.param("power_param")?;
    let op = Op::Power {
        power: params::float(ctx, p, "power")?.unwrap_or(1.0),
        scale: params::float(ctx, p, "scale")?.unwrap_or(1.0),
        shift: params::float(ctx, p, "shift")?.unwrap_or(0.0),
    };
    elementwise(l, op)
}

fn dropout(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    let p = l.param("dropout_param")?;
    let ratio = params::float(ctx, p, "dropout_ratio")?.unwrap_or(0.5);
    // BVLC Caffe copies at test time (training scales by 1 / (1 - ratio)); forks with
    // `scale_train: false` scale by (1 - ratio) at test time instead.
    let op = if params::boolean(ctx, p, "scale_train")?.unwrap_or(true) {
        Op::Identity
    } else {
        Op::ChannelAffine {
            scale: Some(Weights::vector(vec![1.0 - ratio])),
            bias: None,
        }
    };
    elementwise(l, op)
}

/// Accepts a Caffe output shape that is `N x (C*H*W)` followed by ones: the IR's Flatten.
fn flatten_like(l: &LayerIn<'_, '_>, x: &[usize], out: Vec<usize>) -> Result<(Op, Vec<usize>)> {
    let per_item: usize = x[1..].iter().product();
    let ok =
        out.len() >= 2 && out[0] == x[0] && out[1] == per_item && out[2..].iter().all(|&d| d == 1);
    if !ok {
        return Err(l.ctx.err(format!(
            "reshaping {} to {} is not a flatten (N x C*H*W); only flattening is supported",
            fmt(x),
            fmt(&out)
        )));
    }
    Ok((Op::Flatten, out))
}

/// Caffe `Crop` (FCN's score maps): the first bottom cut to the second's shape from
/// `axis` (default 2) on, starting at `offset` (none: 0; one: for every cropped axis; or one
/// per axis). The lines and columns are an IR `Crop`; the second bottom gives the shape
/// only (the builder drops it as an input). Cropping the batch or the channels is refused.
fn crop(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    l.bottoms(2)?;
    let (x, r) = (&l.inputs[0], &l.inputs[1]);
    if x.len() != 4 || r.len() != 4 {
        return Err(ctx.err(format!(
            "crops 4-D blobs (N x C x H x W), found {} and {}",
            fmt(x),
            fmt(r)
        )));
    }
    let p = l.param("crop_param")?;
    let axis = params::int(ctx, p, "axis")?.unwrap_or(2);
    let axis = canonical_axis(ctx, "axis", axis, 4)?;
    if axis < 2 {
        return Err(ctx.err(format!(
            "axis {axis}: cropping the batch or the channels is not supported (lines and \
             columns are)"
        )));
    }
    let given = params::sizes(ctx, p, "offset")?;
    let offsets = match given.len() {
        0 => vec![0; 4 - axis],
        1 => vec![given[0]; 4 - axis],
        n if n == 4 - axis => given,
        n => {
            return Err(ctx.err(format!(
                "{n} offsets for {} cropped axes (give one, or one per axis)",
                4 - axis
            )))
        }
    };
    let mut out = x.clone();
    let mut origin = [0usize; 2];
    for (a, &o) in (axis..4).zip(&offsets) {
        if o.checked_add(r[a]).is_none_or(|end| end > x[a]) || r[a] == 0 {
            return Err(ctx.err(format!(
                "cropping {} lines or columns at {o} from {} along axis {a} reads past the input",
                r[a], x[a]
            )));
        }
        out[a] = r[a];
        origin[a - 2] = o;
    }
    Ok((
        Op::Crop {
            origin,
            step: [1, 1],
        },
        out,
    ))
}

fn flatten(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    let x = l.one_bottom()?;
    let p = l.param("flatten_param")?;
    let axis = params::int(ctx, p, "axis")?.unwrap_or(1);
    let end = params::int(ctx, p, "end_axis")?.unwrap_or(-1);
    let axis = canonical_axis(ctx, "axis", axis, x.len())?;
    let end = canonical_axis(ctx, "end_axis", end, x.len())?;
    if end < axis {
        return Err(ctx.err(format!("end_axis {end} is before axis {axis}")));
    }
    let mut out = x[..axis].to_vec();
    out.push(x[axis..=end].iter().product());
    out.extend_from_slice(&x[end + 1..]);
    flatten_like(l, x, out)
}

fn reshape(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    let x = l.one_bottom()?;
    let p = l.param("reshape_param")?;
    let shape = params::message(ctx, p, "shape")?.unwrap_or(&EMPTY);
    let new = params::ints(ctx, shape, "dim")?;
    let rank = x.len() as i64;
    let axis = params::int(ctx, p, "axis")?.unwrap_or(0);
    let start = if axis >= 0 { axis } else { rank + axis + 1 };
    if !(0..=rank).contains(&start) {
        return Err(ctx.err(format!("axis {axis} out of range for a {rank}-D input")));
    }
    let num_axes = params::int(ctx, p, "num_axes")?.unwrap_or(-1);
    if num_axes < -1 {
        return Err(ctx.err("num_axes must be >= 0, or -1 for all"));
    }
    let end = if num_axes == -1 {
        rank
    } else {
        start.saturating_add(num_axes)
    };
    if end > rank {
        return Err(ctx.err("axis + num_axes is out of range"));
    }
    let (start, end) = (start as usize, end as usize);
    let mut inferred = None;
    let mut out: Vec<usize> = x[..start].to_vec();
    for (i, &d) in new.iter().enumerate() {
        out.push(match d {
            0 => *x.get(start + i).ok_or_else(|| {
                ctx.err("new shape contains a 0, but there is no corresponding bottom axis to copy")
            })?,
            -1 => {
                if inferred.replace(start + i).is_some() {
                    return Err(ctx.err("new shape contains more than one -1"));
                }
                1
            }
            d if d > 0 && d <= MAX_COUNT as i64 => d as usize,
            d => return Err(ctx.err(format!("invalid dimension {d} in the new shape"))),
        });
    }
    out.extend_from_slice(&x[end..]);
    let total: usize = x.iter().product();
    if let Some(i) = inferred {
        let explicit = out
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .unwrap_or(0);
        if explicit == 0 || !total.is_multiple_of(explicit) {
            return Err(ctx.err(format!(
                "input count {total} is not divisible by the product of the given dimensions"
            )));
        }
        out[i] = total / explicit;
    }
    let got = out.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if got != Some(total) {
        return Err(ctx.err(format!(
            "output shape {} does not hold the input's {total} elements",
            fmt(&out)
        )));
    }
    flatten_like(l, x, out)
}

fn prelu(l: &LayerIn<'_, '_>) -> Result<(Op, Vec<usize>)> {
    let ctx = l.ctx;
    let x = l.one_bottom()?;
    if x.len() < 2 {
        return Err(ctx.err("the input needs at least 2 axes"));
    }
    let p = l.param("prelu_param")?;
    let shared = params::boolean(ctx, p, "channel_shared")?.unwrap_or(false);
    let c = x[1];
    let dims = if shared { vec![] } else { vec![c] };
    let mut blobs = l
        .weights
        .take(
            ctx,
            &[Expect {
                what: "slopes",
                dims,
            }],
        )?
        .into_iter();
    let mut slopes = blobs.next().unwrap_or_default();
    if shared {
        if c > MAX_EXPANDED_CHANNELS {
            return Err(ctx.err(format!("{c} channels are too many for a shared slope")));
        }
        let s = slopes.first().copied().unwrap_or(0.0);
        slopes = vec![s; c];
    }
    Ok((
        Op::Activation(Activation::PRelu {
            slopes: Weights::vector(slopes),
        }),
        x.to_vec(),
    ))
}
