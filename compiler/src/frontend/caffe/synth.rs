//! Random trained weights for a prototxt: a `.caffemodel` to test networks with when no
//! trained one is at hand.
//!
//! [`random_weights`] builds the network with the front end itself (the same parsing, test
//! phase filtering, shape arithmetic and checks as [`load`](super::load)), recording the
//! parameter blobs every layer asks for, and writes a binary `NetParameter` with one layer
//! per such request (name, type, blobs with their shapes). Layers without parameters get no
//! entry, as in a caffemodel Caffe writes for a deploy net with in-place layers.
//!
//! Values are deterministic: each layer's come from a splitmix64 stream seeded by the
//! seed and the layer's name, so a layer's weights do not change when other layers are
//! added or removed. Magnitudes keep activations of order 1 through deep networks:
//!
//! | blob | values |
//! |---|---|
//! | convolution / inner product weights | uniform in `±sqrt(6 / fan_in)` (He: standard deviation `sqrt(2 / fan_in)`, which ReLU halves back to variance 1) |
//! | deconvolution weights | the same, `fan_in = C/group * ceil(kh/sh) * ceil(kw/sw)` (the taps one output sums) |
//! | biases (convolution, inner product, Scale, Bias) | uniform in `±0.1` |
//! | BatchNorm mean | uniform in `±0.5` |
//! | BatchNorm variance | uniform in `[0.5, 1.5)` |
//! | BatchNorm moving-average factor | `1` |
//! | Scale factors | uniform in `[0.5, 1.5)` |
//! | PReLU slopes | uniform in `[0, 0.5)` |
//! | anything else | uniform in `±0.1` |

use super::params::{self, Ctx};
use super::proto::{BlobProto, LayerParameter, NetParameter, V1_LAYER_TYPES};
use super::text::{Message, Value};
use super::weights::{Requested, TrainedWeights};
use super::{net, parse_prototxt};
use crate::error::Result;
use std::collections::HashMap;

/// A `.caffemodel` (binary `NetParameter`) holding deterministic pseudo-random parameter
/// blobs, of the shapes the front end expects, for every layer of `prototxt` that has
/// parameters (Convolution, Deconvolution, InnerProduct, BatchNorm, Scale, Bias, PReLU).
/// [`load`](super::load)`(prototxt, &random_weights(prototxt, seed)?)` then succeeds.
///
/// # Errors
///
/// The front end's error if the prototxt does not describe a network it can build (syntax,
/// unsupported layer, inconsistent shapes), and
/// [`CompileError::Layer`](crate::CompileError::Layer) for a layer with parameters but no
/// `name` (a caffemodel matches blobs to layers by name).
pub fn random_weights(prototxt: &str, seed: u64) -> Result<Vec<u8>> {
    let tree = parse_prototxt(prototxt, "prototxt")?;
    let recorder = TrainedWeights::recorder();
    let graph = net::build(&tree, &recorder)?;
    let layers = layer_messages(&tree);
    let mut model = NetParameter {
        name: (!graph.name.is_empty()).then(|| graph.name.clone()),
        ..Default::default()
    };
    for r in recorder.into_requests() {
        let ctx = Ctx {
            name: &r.display,
            ty: &r.ty,
            key: &r.key,
        };
        if r.key.is_empty() {
            return Err(ctx.err("the layer has parameters but no name to match them by"));
        }
        let m = layers.get(r.key.as_str()).copied();
        let mut rng = SplitMix(seed ^ fnv1a(r.key.as_bytes()));
        let blobs = r
            .blobs
            .iter()
            .map(|(what, dims)| {
                let values = values(ctx, m, &r, what, dims, &mut rng)?;
                let shape: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
                Ok(BlobProto::new(&shape, values))
            })
            .collect::<Result<Vec<_>>>()?;
        model.layer.push(LayerParameter {
            name: Some(r.key.clone()),
            r#type: Some(current_type(&r.ty).to_string()),
            blobs,
            ..Default::default()
        });
    }
    Ok(prost::Message::encode_to_vec(&model))
}

/// The current type name of a type as spelled (a legacy enum name such as `CONVOLUTION`
/// becomes `Convolution`).
fn current_type(spelled: &str) -> &str {
    V1_LAYER_TYPES
        .iter()
        .find(|&&(name, _, _)| name == spelled)
        .map_or(spelled, |&(_, _, current)| current)
}

/// The prototxt's layer messages (current and legacy form) by `name` (a later layer of the
/// same name wins, as weights are matched).
fn layer_messages(net: &Message) -> HashMap<&str, &Message> {
    let mut out = HashMap::new();
    for f in net.all("layer").chain(net.all("layers")) {
        let Value::Message(m) = &f.value else {
            continue;
        };
        if let Some(name) = m.get("name").and_then(|f| match &f.value {
            Value::Scalar(s) => s.as_str(),
            Value::Message(_) => None,
        }) {
            out.insert(name, m);
        }
    }
    out
}

/// The values of one blob (`what` as the layer names it, Caffe shape `dims`).
fn values(
    ctx: Ctx<'_>,
    layer: Option<&Message>,
    r: &Requested,
    what: &str,
    dims: &[usize],
    rng: &mut SplitMix,
) -> Result<Vec<f32>> {
    let n: usize = dims.iter().product();
    let uniform = |rng: &mut SplitMix, lo: f32, hi: f32| -> Vec<f32> {
        (0..n).map(|_| lo + (hi - lo) * rng.unit()).collect()
    };
    Ok(match what {
        "weights" => {
            let fan_in = fan_in(ctx, layer, current_type(&r.ty), dims)?.max(1);
            let a = (6.0 / fan_in as f64).sqrt() as f32;
            uniform(rng, -a, a)
        }
        "mean" => uniform(rng, -0.5, 0.5),
        "variance" | "scale" => uniform(rng, 0.5, 1.5),
        "moving-average factor" => vec![1.0; n],
        "slopes" => uniform(rng, 0.0, 0.5),
        _ => uniform(rng, -0.1, 0.1),
    })
}

/// Inputs one output of the layer sums, for a weight blob of shape `dims`.
fn fan_in(ctx: Ctx<'_>, layer: Option<&Message>, ty: &str, dims: &[usize]) -> Result<usize> {
    static EMPTY: Message = Message { fields: Vec::new() };
    let layer = layer.unwrap_or(&EMPTY);
    let param = |name: &str| -> Result<&Message> {
        Ok(params::message(ctx, layer, name)?.unwrap_or(&EMPTY))
    };
    Ok(match (ty, dims) {
        ("InnerProduct", [a, b]) => {
            let transpose =
                params::boolean(ctx, param("inner_product_param")?, "transpose")?.unwrap_or(false);
            if transpose {
                *a
            } else {
                *b
            }
        }
        ("Deconvolution", [c, _, kh, kw]) => {
            let p = param("convolution_param")?;
            let group = params::size(ctx, p, "group")?.unwrap_or(1).max(1);
            let stride = |list: &str, single: &str, i: usize| -> Result<usize> {
                let s = match params::size(ctx, p, single)? {
                    Some(s) => s,
                    None => {
                        let v = params::sizes(ctx, p, list)?;
                        v.get(i).or(v.first()).copied().unwrap_or(1)
                    }
                };
                Ok(s.max(1))
            };
            let (sh, sw) = (
                stride("stride", "stride_h", 0)?,
                stride("stride", "stride_w", 1)?,
            );
            c / group * kh.div_ceil(sh) * kw.div_ceil(sw)
        }
        (_, [_, rest @ ..]) => rest.iter().product(),
        (_, []) => 1,
    })
}

/// 64-bit FNV-1a, to give every layer its own stream.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// splitmix64: small, fast, and good enough for test weights.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` (24 random bits: exact in `f32`).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontend::caffe::{decode_caffemodel, load};
    use crate::ir::{Activation, Op};

    const NET: &str = r#"
        name: "synth"
        input: "data"
        input_shape { dim: 1 dim: 3 dim: 12 dim: 12 }
        layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
                convolution_param { num_output: 8 kernel_size: 3 pad: 1 } }
        layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
        layer { name: "sc1" type: "Scale" bottom: "conv1" top: "conv1"
                scale_param { bias_term: true } }
        layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
        layer { name: "conv2" type: "Convolution" bottom: "conv1" top: "conv2"
                convolution_param { num_output: 6 kernel_size: 3 group: 2 bias_term: false } }
        layer { name: "prelu" type: "PReLU" bottom: "conv2" top: "conv2" }
        layer { name: "shared" type: "PReLU" bottom: "conv2" top: "conv2"
                prelu_param { channel_shared: true } }
        layer { name: "bias" type: "Bias" bottom: "conv2" top: "conv2" }
        layer { name: "up" type: "Deconvolution" bottom: "conv2" top: "up"
                convolution_param { num_output: 4 kernel_size: 4 stride: 2 } }
        layer { name: "pool" type: "Pooling" bottom: "up" top: "pool"
                pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
        layer { name: "drop" type: "Dropout" bottom: "pool" top: "pool" }
        layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip"
                inner_product_param { num_output: 5 } }
        layer { name: "ipt" type: "InnerProduct" bottom: "ip" top: "ipt"
                inner_product_param { num_output: 7 transpose: true bias_term: false } }
        layer { name: "prob" type: "Softmax" bottom: "ipt" top: "prob" }
    "#;

    fn shapes(model: &NetParameter) -> Vec<(String, String, Vec<Vec<i64>>)> {
        model
            .layer
            .iter()
            .map(|l| {
                (
                    l.name.clone().unwrap(),
                    l.r#type.clone().unwrap(),
                    l.blobs.iter().map(|b| b.dims().unwrap()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn every_parameter_blob_of_the_right_shape_and_nothing_else() {
        let bytes = random_weights(NET, 7).unwrap();
        let model = decode_caffemodel(&bytes, "synth").unwrap();
        assert_eq!(model.name.as_deref(), Some("synth"));
        let s = |n: &str, t: &str, d: &[&[i64]]| {
            (
                n.to_string(),
                t.to_string(),
                d.iter().map(|x| x.to_vec()).collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            shapes(&model),
            vec![
                s("conv1", "Convolution", &[&[8, 3, 3, 3], &[8]]),
                s("bn1", "BatchNorm", &[&[8], &[8], &[1]]),
                s("sc1", "Scale", &[&[8], &[8]]),
                s("conv2", "Convolution", &[&[6, 4, 3, 3]]),
                s("prelu", "PReLU", &[&[6]]),
                s("shared", "PReLU", &[&[]]),
                s("bias", "Bias", &[&[6]]),
                s("up", "Deconvolution", &[&[6, 4, 4, 4], &[4]]),
                s("ip", "InnerProduct", &[&[5, 4 * 11 * 11], &[5]]),
                s("ipt", "InnerProduct", &[&[5, 7]]),
            ]
        );
        // And the front end takes it.
        let g = load(NET, &bytes).unwrap();
        assert_eq!(g.nodes.len(), 14);
    }

    #[test]
    fn values_are_in_their_documented_ranges() {
        let bytes = random_weights(NET, 1).unwrap();
        let model = decode_caffemodel(&bytes, "synth").unwrap();
        let blobs = |n: &str| -> Vec<Vec<f32>> {
            let l = model
                .layer
                .iter()
                .find(|l| l.name.as_deref() == Some(n))
                .unwrap();
            l.blobs.iter().map(BlobProto::values).collect()
        };
        let within = |v: &[f32], lo: f32, hi: f32| v.iter().all(|&x| x >= lo && x < hi);
        let conv1 = blobs("conv1");
        let a = (6.0f32 / 27.0).sqrt();
        assert!(within(&conv1[0], -a, a));
        // Spread, not a constant: the sample's standard deviation is near a / sqrt(3).
        let sd = (conv1[0].iter().map(|x| x * x).sum::<f32>() / 216.0).sqrt();
        assert!((sd - a / 3f32.sqrt()).abs() < 0.2 * a, "{sd} vs {a}");
        assert!(within(&conv1[1], -0.1, 0.1));
        let bn = blobs("bn1");
        assert!(within(&bn[0], -0.5, 0.5));
        assert!(within(&bn[1], 0.5, 1.5));
        assert_eq!(bn[2], vec![1.0]);
        let sc = blobs("sc1");
        assert!(within(&sc[0], 0.5, 1.5) && within(&sc[1], -0.1, 0.1));
        // Grouped: fan-in is 4 channels x 3 x 3.
        let a2 = (6.0f32 / 36.0).sqrt();
        assert!(within(&blobs("conv2")[0], -a2, a2));
        assert!(blobs("conv2")[0].iter().any(|&x| x.abs() > 0.8 * a2));
        assert!(within(&blobs("prelu")[0], 0.0, 0.5));
        assert_eq!(blobs("shared")[0].len(), 1);
        // Deconvolution 6 -> 4, kernel 4, stride 2: each output sums 6 x 2 x 2 taps.
        let ad = (6.0f32 / 24.0).sqrt();
        assert!(within(&blobs("up")[0], -ad, ad));
        assert!(blobs("up")[0].iter().any(|&x| x.abs() > 0.8 * ad));
        // Transposed inner product [K_in = 5, K_out = 7]: fan-in 5.
        let at = (6.0f32 / 5.0).sqrt();
        assert!(within(&blobs("ipt")[0], -at, at));
        assert!(blobs("ipt")[0].iter().any(|&x| x.abs() > 0.7 * at));
        let ai = (6.0f32 / 484.0).sqrt();
        assert!(within(&blobs("ip")[0], -ai, ai));
        // The loaded graph carries them (BatchNorm with factor 1 unchanged).
        let g = load(NET, &bytes).unwrap();
        let Op::BatchNorm { var, .. } = &g.nodes[1].op else {
            panic!("{:?}", g.nodes[1].op)
        };
        assert_eq!(var.data, bn[1]);
        let Op::Activation(Activation::PRelu { slopes }) = &g.nodes[6].op else {
            panic!("{:?}", g.nodes[6].op)
        };
        assert_eq!(slopes.data, vec![blobs("shared")[0][0]; 6]);
    }

    #[test]
    fn deterministic_per_seed_and_per_layer() {
        let a = random_weights(NET, 3).unwrap();
        assert_eq!(a, random_weights(NET, 3).unwrap());
        assert_ne!(a, random_weights(NET, 4).unwrap());
        // A layer's values depend on its name, not on the layers before it.
        let fewer = NET.replace(
            r#"layer { name: "bias" type: "Bias" bottom: "conv2" top: "conv2" }"#,
            "",
        );
        assert_ne!(fewer, NET);
        let one = |bytes: &[u8], name: &str| {
            decode_caffemodel(bytes, "m")
                .unwrap()
                .layer
                .into_iter()
                .find(|l| l.name.as_deref() == Some(name))
                .unwrap()
        };
        let b = random_weights(&fewer, 3).unwrap();
        assert_eq!(one(&a, "ip"), one(&b, "ip"));
        assert_ne!(one(&a, "conv1").blobs[0], one(&a, "conv2").blobs[0]);
    }

    #[test]
    fn legacy_layers_and_test_phase_rules() {
        let net = r#"
            input: "data"
            input_dim: 1 input_dim: 2 input_dim: 5 input_dim: 5
            layers { name: "c" type: CONVOLUTION bottom: "data" top: "c"
                     convolution_param { num_output: 3 kernel_size: 3 } }
            layers { name: "train_only" type: INNER_PRODUCT bottom: "c" top: "t"
                     include { phase: TRAIN } inner_product_param { num_output: 2 } }
            layers { name: "ip" type: INNER_PRODUCT bottom: "c" top: "ip"
                     inner_product_param { num_output: 4 } }
        "#;
        let bytes = random_weights(net, 0).unwrap();
        let model = decode_caffemodel(&bytes, "m").unwrap();
        let got = shapes(&model);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1, "Convolution");
        assert_eq!(got[0].2, vec![vec![3, 2, 3, 3], vec![3]]);
        assert_eq!(got[1].1, "InnerProduct");
        assert_eq!(got[1].2, vec![vec![4, 27], vec![4]]);
        let g = load(net, &bytes).unwrap();
        assert_eq!(g.nodes.len(), 2);
    }

    #[test]
    fn front_end_errors_come_through() {
        let e = random_weights("layer {", 0).unwrap_err().to_string();
        assert!(e.starts_with("prototxt:"), "{e}");
        let bad = r#"
            input: "data" input_shape { dim: 1 dim: 3 dim: 4 dim: 4 }
            layer { name: "c" type: "Convolution" bottom: "data" top: "c"
                    convolution_param { num_output: 4 kernel_size: 3 group: 2 } }
        "#;
        let e = random_weights(bad, 0).unwrap_err().to_string();
        assert!(e.contains("multiple of group"), "{e}");
        let unnamed = r#"
            input: "data" input_shape { dim: 1 dim: 3 dim: 4 dim: 4 }
            layer { type: "Convolution" bottom: "data" top: "c"
                    convolution_param { num_output: 4 kernel_size: 3 } }
        "#;
        let e = random_weights(unnamed, 0).unwrap_err().to_string();
        assert!(e.contains("no name"), "{e}");
        // A network without parameters gives an empty (but valid) model.
        let plain = r#"
            input: "data" input_shape { dim: 1 dim: 3 dim: 4 dim: 4 }
            layer { name: "r" type: "ReLU" bottom: "data" top: "r" }
        "#;
        let bytes = random_weights(plain, 0).unwrap();
        assert!(decode_caffemodel(&bytes, "m").unwrap().layer.is_empty());
        load(plain, &bytes).unwrap();
    }
}
