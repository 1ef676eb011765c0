//! The Caffe front end: LeNet from `shared/models`, every supported layer type on small
//! hand-written networks (weights encoded here with the front end's own prost messages),
//! the legacy forms, in-place layers, Caffe's shape arithmetic, error reporting, and a
//! deterministic mutation test (no panics on damaged input).

use nvdla_compiler::frontend::caffe::{
    self,
    proto::{
        BlobProto, BlobShape, LayerParameter, NetParameter, V0LayerParameter, V1LayerParameter,
    },
};
use nvdla_compiler::frontend::{self, ModelFiles};
use nvdla_compiler::ir::{
    Activation, EltwiseKind, Graph, Node, Op, PoolKind, Shape, TensorId, Weights,
};
use nvdla_compiler::{CompileError, Result};
use prost::Message as _;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------------------------------
// Helpers

fn lenet_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/models/caffe/lenet")
}

/// The LeNet files, or `None` (with a message) when `shared/` is not there.
fn lenet() -> Option<(String, Vec<u8>)> {
    let dir = lenet_dir();
    let (p, m) = (dir.join("lenet.prototxt"), dir.join("lenet.caffemodel"));
    match (std::fs::read_to_string(&p), std::fs::read(&m)) {
        (Ok(p), Ok(m)) => Some((p, m)),
        _ => {
            eprintln!("skipped: {} not found", dir.display());
            None
        }
    }
}

fn blob(dims: &[i64], data: Vec<f32>) -> BlobProto {
    BlobProto::new(dims, data)
}

/// `n` values `start, start + step, ...`.
fn seq(n: usize, start: f32, step: f32) -> Vec<f32> {
    (0..n).map(|i| start + step * i as f32).collect()
}

/// A caffemodel holding `layers` (name, blobs) in the current form.
fn model(layers: Vec<(&str, Vec<BlobProto>)>) -> Vec<u8> {
    NetParameter {
        name: Some("t".into()),
        layer: layers
            .into_iter()
            .map(|(name, blobs)| LayerParameter {
                name: Some(name.into()),
                blobs,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
    .encode_to_vec()
}

/// A prototxt with input `data` of `dims` followed by `body`.
fn net(dims: &[usize], body: &str) -> String {
    let dims: String = dims.iter().map(|d| format!(" dim: {d}")).collect();
    format!("name: \"t\"\ninput: \"data\"\ninput_shape {{{dims} }}\n{body}")
}

fn node<'g>(g: &'g Graph, name: &str) -> &'g Node {
    g.nodes
        .iter()
        .find(|n| n.name == name)
        .unwrap_or_else(|| panic!("no node `{name}` in {:?}", names(g)))
}

fn names(g: &Graph) -> Vec<&str> {
    g.nodes.iter().map(|n| n.name.as_str()).collect()
}

fn tensor(g: &Graph, name: &str) -> TensorId {
    TensorId(
        g.tensors
            .iter()
            .position(|t| t.name == name)
            .unwrap_or_else(|| panic!("no tensor `{name}`")),
    )
}

/// Shape of the (first) output of node `name`.
fn out(g: &Graph, name: &str) -> Shape {
    g.shape(node(g, name).outputs[0])
}

fn s(n: usize, c: usize, h: usize, w: usize) -> Shape {
    Shape::new(n, c, h, w)
}

/// The `(layer, type, reason)` of a layer error; panics on anything else.
fn layer_err(r: Result<Graph>) -> (String, String, String) {
    match r {
        Err(CompileError::Layer {
            layer,
            layer_type,
            reason,
        }) => (layer, layer_type, reason),
        Err(e) => panic!("expected a layer error, got: {e}"),
        Ok(g) => panic!("expected a layer error, got a graph of {:?}", names(&g)),
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

fn sum(w: &Weights) -> f64 {
    w.data.iter().map(|&v| f64::from(v)).sum()
}

// ---------------------------------------------------------------------------------------
// LeNet

#[test]
fn lenet_graph() {
    let Some((p, m)) = lenet() else { return };
    let g = caffe::load(&p, &m).unwrap();
    assert_eq!(g.name, "LeNet");
    assert_eq!(
        names(&g),
        ["conv1", "pool1", "conv2", "pool2", "ip1", "relu1", "ip2", "prob"]
    );
    let types: Vec<_> = g.nodes.iter().map(|n| n.source_type.as_str()).collect();
    assert_eq!(
        types,
        [
            "Convolution",
            "Pooling",
            "Convolution",
            "Pooling",
            "InnerProduct",
            "ReLU",
            "InnerProduct",
            "Softmax"
        ]
    );
    assert_eq!(g.inputs.len(), 1);
    assert_eq!(g.tensor(g.inputs[0]).name, "data");
    assert_eq!(g.shape(g.inputs[0]), s(1, 1, 28, 28));
    assert_eq!(out(&g, "conv1"), s(1, 20, 24, 24));
    assert_eq!(out(&g, "pool1"), s(1, 20, 12, 12));
    assert_eq!(out(&g, "conv2"), s(1, 50, 8, 8));
    assert_eq!(out(&g, "pool2"), s(1, 50, 4, 4));
    assert_eq!(out(&g, "ip1"), s(1, 500, 1, 1));
    assert_eq!(out(&g, "relu1"), s(1, 500, 1, 1));
    assert_eq!(out(&g, "ip2"), s(1, 10, 1, 1));
    assert_eq!(out(&g, "prob"), s(1, 10, 1, 1));
    // Outputs: only `prob`; the in-place ReLU's output carries the blob name `ip1`.
    assert_eq!(g.outputs, vec![tensor(&g, "prob")]);
    assert_eq!(node(&g, "relu1").outputs, vec![tensor(&g, "ip1")]);
    assert_eq!(node(&g, "ip1").outputs, vec![tensor(&g, "ip1@ip1")]);
    assert_eq!(node(&g, "ip2").inputs, vec![tensor(&g, "ip1")]);
    assert_eq!(node(&g, "relu1").inputs, node(&g, "ip1").outputs);

    let Op::Conv(c1) = &node(&g, "conv1").op else {
        panic!()
    };
    assert_eq!(c1.weight.dims, [20, 1, 5, 5]);
    assert_eq!((c1.window.kernel, c1.window.stride), ([5, 5], [1, 1]));
    assert_eq!((c1.window.pad, c1.groups, c1.out_channels), ([0; 4], 1, 20));
    // Values read independently from the file's bytes.
    assert_eq!(c1.weight.data[0], -0.264_792_95);
    assert_eq!(c1.weight.data[499], -0.276_778_76);
    assert!(close(sum(&c1.weight), 4.527_782, 1e-5));
    let b1 = c1.bias.as_ref().unwrap();
    assert_eq!(b1.dims, [20]);
    assert!(close(sum(b1), -1.612_148, 1e-5));
    let Op::Conv(c2) = &node(&g, "conv2").op else {
        panic!()
    };
    assert_eq!(c2.weight.dims, [50, 20, 5, 5]);
    assert!(close(sum(&c2.weight), -79.204_757, 1e-5));
    let Op::Pool(p1) = node(&g, "pool1").op else {
        panic!()
    };
    assert_eq!(p1.kind, PoolKind::Max);
    assert_eq!((p1.window.kernel, p1.window.stride), ([2, 2], [2, 2]));
    assert!(p1.ceil_mode);
    let Op::FullyConnected { weight, bias } = &node(&g, "ip1").op else {
        panic!()
    };
    assert_eq!(weight.dims, [500, 800]);
    assert_eq!(weight.data[0], -0.046_191_648);
    assert!(close(sum(weight), -22.389_303, 1e-5));
    assert!(close(sum(bias.as_ref().unwrap()), 0.362_428, 1e-4));
    let Op::FullyConnected { weight, bias } = &node(&g, "ip2").op else {
        panic!()
    };
    assert_eq!(weight.dims, [10, 500]);
    assert!(close(sum(weight), 1.260_940, 1e-5));
    assert_eq!(bias.as_ref().unwrap().data[1], 0.102_577_36);
    assert_eq!(
        node(&g, "relu1").op,
        Op::Activation(Activation::Relu { slope: 0.0 })
    );
    assert_eq!(node(&g, "prob").op, Op::Softmax);
}

#[test]
fn lenet_through_the_registry() {
    let dir = lenet_dir();
    if !dir.join("lenet.caffemodel").exists() {
        eprintln!("skipped: {} not found", dir.display());
        return;
    }
    let g = frontend::load(&ModelFiles::Caffe {
        prototxt: dir.join("lenet.prototxt"),
        caffemodel: dir.join("lenet.caffemodel"),
    })
    .unwrap();
    assert_eq!(g.nodes.len(), 8);
    let missing = frontend::load(&ModelFiles::Caffe {
        prototxt: dir.join("lenet.prototxt"),
        caffemodel: dir.join("no-such.caffemodel"),
    });
    assert!(matches!(missing, Err(CompileError::Io { .. })));
}

// ---------------------------------------------------------------------------------------
// Convolution family

#[test]
fn convolution_parameters() {
    let p = net(
        &[2, 4, 11, 9],
        r#"layer { name: "c" type: "Convolution" bottom: "data" top: "c"
             convolution_param { num_output: 6 kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1
                                 pad_h: 1 pad_w: 0 group: 2 bias_term: false dilation: 2 } }
           layer { name: "d" type: "Convolution" bottom: "data" top: "d"
             convolution_param { num_output: 3 kernel_size: 3 kernel_size: 1 stride: 2 stride: 3
                                 pad: 1 } }
           layer { name: "e" type: "Convolution" bottom: "data" top: "e"
             convolution_param { num_output: 1 kernel_size: [5] pad: [2, 1] dilation: [1, 2] } }"#,
    );
    let m = model(vec![
        ("c", vec![blob(&[6, 2, 3, 2], seq(72, 0.0, 1.0))]),
        (
            "d",
            vec![
                blob(&[3, 4, 3, 1], seq(36, 0.5, 0.0)),
                blob(&[3], vec![1., 2., 3.]),
            ],
        ),
        (
            "e",
            vec![blob(&[1, 4, 5, 5], vec![0.1; 100]), blob(&[1], vec![7.0])],
        ),
    ]);
    let g = caffe::load(&p, &m).unwrap();
    // (11 + 2 - (2*(3-1)+1)) / 2 + 1 = 5; (9 - (2*(2-1)+1)) / 1 + 1 = 7.
    assert_eq!(out(&g, "c"), s(2, 6, 5, 7));
    let Op::Conv(c) = &node(&g, "c").op else {
        panic!()
    };
    assert_eq!(c.window.kernel, [3, 2]);
    assert_eq!(c.window.stride, [2, 1]);
    assert_eq!(c.window.pad, [1, 0, 1, 0]);
    assert_eq!(c.window.dilation, [2, 2]);
    assert_eq!((c.groups, c.out_channels), (2, 6));
    assert_eq!(c.weight.dims, [6, 2, 3, 2]);
    assert_eq!(c.weight.data[71], 71.0);
    assert!(c.bias.is_none());
    // (11 + 2 - 3) / 2 + 1 = 6; (9 + 2 - 1) / 3 + 1 = 4.
    assert_eq!(out(&g, "d"), s(2, 3, 6, 4));
    let Op::Conv(d) = &node(&g, "d").op else {
        panic!()
    };
    assert_eq!((d.window.kernel, d.window.stride), ([3, 1], [2, 3]));
    assert_eq!(d.bias.as_ref().unwrap().data, [1., 2., 3.]);
    // kernel 5x5, pad 2x1, dilation 1x2: (11+4-5)/1+1 = 11; (9+2-9)/1+1 = 3.
    assert_eq!(out(&g, "e"), s(2, 1, 11, 3));
}

#[test]
fn depthwise_and_grouped_deconvolution() {
    let p = net(
        &[1, 8, 5, 5],
        r#"layer { name: "dw" type: "Convolution" bottom: "data" top: "dw"
             convolution_param { num_output: 8 group: 8 kernel_size: 3 pad: 1 } }
           layer { name: "up" type: "Deconvolution" bottom: "dw" top: "up"
             convolution_param { num_output: 4 group: 2 kernel_size: 4 stride: 2 pad: 1 } }"#,
    );
    let m = model(vec![
        (
            "dw",
            vec![blob(&[8, 1, 3, 3], vec![1.0; 72]), blob(&[8], vec![0.0; 8])],
        ),
        (
            "up",
            vec![
                blob(&[8, 2, 4, 4], seq(256, 0.0, 1.0)),
                blob(&[4], vec![0.5; 4]),
            ],
        ),
    ]);
    let g = caffe::load(&p, &m).unwrap();
    assert_eq!(out(&g, "dw"), s(1, 8, 5, 5));
    let Op::Conv(dw) = &node(&g, "dw").op else {
        panic!()
    };
    assert_eq!(
        (dw.groups, dw.weight.dims.as_slice()),
        (8, &[8, 1, 3, 3][..])
    );
    // Deconvolution: 2 * (5 - 1) + 4 - 2 = 10.
    assert_eq!(out(&g, "up"), s(1, 4, 10, 10));
    let Op::Deconv(up) = &node(&g, "up").op else {
        panic!()
    };
    assert_eq!(node(&g, "up").source_type, "Deconvolution");
    assert_eq!(up.weight.dims, [8, 2, 4, 4], "[C, K/g, kh, kw]");
    assert_eq!((up.groups, up.out_channels), (2, 4));
    assert_eq!(up.weight.data[255], 255.0);
}

#[test]
fn convolution_errors() {
    let conv = |param: &str, c: usize| {
        let p = net(
            &[1, c, 6, 6],
            &format!(
                r#"layer {{ name: "c" type: "Convolution" bottom: "data" top: "c"
                   convolution_param {{ {param} }} }}"#
            ),
        );
        caffe::load(&p, &model(vec![]))
    };
    let reason = |param: &str, c: usize| layer_err(conv(param, c)).2;
    assert!(reason("kernel_size: 3", 2).contains("num_output"));
    assert!(reason("num_output: 2", 2).contains("kernel_size"));
    assert!(reason("num_output: 2 kernel_size: 3 kernel_h: 3 kernel_w: 3", 2).contains("not both"));
    assert!(reason("num_output: 2 kernel_h: 3", 2).contains("both required"));
    assert!(reason("num_output: 2 kernel_size: [1, 2, 3]", 2).contains("once per spatial"));
    assert!(reason("num_output: 2 kernel_size: 3 group: 2", 3).contains("multiple of group"));
    assert!(reason("num_output: 3 kernel_size: 3 group: 2", 2).contains("multiple of group"));
    assert!(reason("num_output: 2 kernel_size: 7", 2).contains("larger than the padded input"));
    assert!(reason("num_output: 2 kernel_size: 0", 2).contains("nonzero"));
    assert!(reason("num_output: 2 kernel_size: 3 stride: 0", 2).contains("nonzero"));
    assert!(reason("num_output: 2 kernel_size: 3 axis: 2", 2).contains("axis"));
    assert!(reason("num_output: -2 kernel_size: 3", 2).contains("non-negative"));
    // Well-formed but no weights.
    let (layer, ty, r) = layer_err(conv("num_output: 2 kernel_size: 3", 2));
    assert_eq!((layer.as_str(), ty.as_str()), ("c", "Convolution"));
    assert!(r.contains("no trained weights"), "{r}");
}

// ---------------------------------------------------------------------------------------
// InnerProduct

#[test]
fn inner_product_and_transpose() {
    let p = net(
        &[2, 2, 1, 3],
        r#"layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc"
             inner_product_param { num_output: 2 } }
           layer { name: "fct" type: "InnerProduct" bottom: "data" top: "fct"
             inner_product_param { num_output: 2 transpose: true bias_term: false } }"#,
    );
    // [K=2, 6] and its transpose stored as [6, 2].
    let w: Vec<f32> = seq(12, 0.0, 1.0);
    let mut wt = vec![0.0; 12];
    for k in 0..2 {
        for i in 0..6 {
            wt[i * 2 + k] = w[k * 6 + i];
        }
    }
    let m = model(vec![
        (
            "fc",
            vec![blob(&[2, 6], w.clone()), blob(&[2], vec![1.0, -1.0])],
        ),
        ("fct", vec![blob(&[6, 2], wt)]),
    ]);
    let g = caffe::load(&p, &m).unwrap();
    assert_eq!(out(&g, "fc"), s(2, 2, 1, 1));
    let Op::FullyConnected { weight, bias } = &node(&g, "fc").op else {
        panic!()
    };
    assert_eq!(
        (weight.dims.as_slice(), weight.data.as_slice()),
        (&[2, 6][..], &w[..])
    );
    assert_eq!(bias.as_ref().unwrap().data, [1.0, -1.0]);
    let Op::FullyConnected { weight, bias } = &node(&g, "fct").op else {
        panic!()
    };
    assert_eq!(weight.dims, [2, 6]);
    assert_eq!(weight.data, w, "transposed back to [K, C*H*W]");
    assert!(bias.is_none());

    // A transposed blob given without `transpose` is a shape error; axis 2 is refused.
    let p2 = p.replace("transpose: true", "");
    let (layer, _, r) = layer_err(caffe::load(&p2, &m));
    assert_eq!(layer, "fct");
    assert!(r.contains("shape 6x2") && r.contains("needs 2x6"), "{r}");
    let p3 = p.replace("num_output: 2 }", "num_output: 2 axis: 2 }");
    assert!(layer_err(caffe::load(&p3, &m)).2.contains("axis"));
}

// ---------------------------------------------------------------------------------------
// Pooling

fn pool_shape(input: [usize; 4], param: &str) -> Result<Graph> {
    let p = net(
        &input,
        &format!(
            r#"layer {{ name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param {{ {param} }} }}"#
        ),
    );
    caffe::load(&p, &model(vec![]))
}

#[test]
fn pooling_shapes_follow_caffe() {
    let o = |input: [usize; 4], param: &str| out(&pool_shape(input, param).unwrap(), "p");
    // ceil((6 - 3) / 2) + 1 = 3 (floor would give 2).
    assert_eq!(
        o([1, 1, 6, 6], "pool: MAX kernel_size: 3 stride: 2"),
        s(1, 1, 3, 3)
    );
    assert_eq!(
        o(
            [1, 1, 6, 6],
            "pool: MAX kernel_size: 3 stride: 2 round_mode: FLOOR"
        ),
        s(1, 1, 2, 2)
    );
    // Padding: ceil((5 + 2 - 2) / 2) + 1 = 4, but window 3 would start at 6 >= 5 + 1: 3.
    assert_eq!(
        o([1, 1, 5, 5], "pool: AVE kernel_size: 2 stride: 2 pad: 1"),
        s(1, 1, 3, 3)
    );
    // Padding where the last window does start inside: ceil((7+2-3)/2)+1 = 4, 6 < 8.
    assert_eq!(
        o([1, 1, 7, 7], "pool: MAX kernel_size: 3 stride: 2 pad: 1"),
        s(1, 1, 4, 4)
    );
    // Without padding the clip rule does not apply (Caffe): ceil((7-1)/3)+1 = 3, the last
    // window at 6 (over 5 its start would be past the input: refused, `pooling_errors`).
    assert_eq!(o([1, 1, 7, 7], "kernel_size: 1 stride: 3"), s(1, 1, 3, 3));
    // Kernel larger than the input by less than the stride: ceil(-1/2) + 1 = 1.
    assert_eq!(o([1, 1, 2, 2], "kernel_size: 3 stride: 2"), s(1, 1, 1, 1));
    // Rectangular: AlexNet-like 55 -> 27; h/w parameters.
    assert_eq!(
        o(
            [1, 3, 55, 13],
            "kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 0 pad_w: 1"
        ),
        s(1, 3, 27, 14)
    );
    let g = pool_shape([2, 3, 7, 5], "pool: AVE global_pooling: true").unwrap();
    assert_eq!(out(&g, "p"), s(2, 3, 1, 1));
    let Op::Pool(p) = node(&g, "p").op else {
        panic!()
    };
    assert_eq!(p.kind, PoolKind::Avg);
    assert_eq!(
        (p.window.kernel, p.window.stride, p.window.pad),
        ([7, 5], [1, 1], [0; 4])
    );
    assert!(p.ceil_mode && p.count_include_pad);
    let g = pool_shape([1, 1, 5, 5], "pool: AVE kernel_size: 3 stride: 2 pad: 1").unwrap();
    let Op::Pool(p) = node(&g, "p").op else {
        panic!()
    };
    assert_eq!(p.window.pad, [1, 1, 1, 1]);
    assert_eq!(p.window.dilation, [1, 1]);
    assert!(p.count_include_pad, "Caffe's AVE counts padding");
    // Enum by number: 1 = AVE.
    let g = pool_shape([1, 1, 4, 4], "pool: 1 kernel_size: 2 stride: 2").unwrap();
    assert!(matches!(node(&g, "p").op, Op::Pool(p) if p.kind == PoolKind::Avg));
}

#[test]
fn pooling_errors() {
    let r = |input: [usize; 4], param: &str| layer_err(pool_shape(input, param)).2;
    assert!(r([1, 1, 4, 4], "pool: STOCHASTIC kernel_size: 2").contains("STOCHASTIC"));
    assert!(r([1, 1, 4, 4], "kernel_size: 2 pad: 2").contains("smaller than the kernel"));
    assert!(r([1, 1, 4, 4], "global_pooling: true kernel_size: 2").contains("global_pooling"));
    assert!(r([1, 1, 4, 4], "global_pooling: true stride: 2").contains("global_pooling"));
    assert!(r([1, 1, 4, 4], "stride: 2").contains("kernel_size"));
    assert!(r([1, 1, 4, 4], "kernel_size: 2 pad: 1 pad_h: 1 pad_w: 1").contains("not both"));
    assert!(r([1, 1, 2, 2], "kernel_size: 5 stride: 1").contains("pooled size"));
    // Rounded up, a 1-wide window with stride 2 over 8 would start at 8: no element.
    assert!(r([1, 1, 1, 8], "kernel_size: 1 stride: 2").contains("covers no element"));
    assert!(r([1, 1, 4, 4], "pool: MIN kernel_size: 2").contains("one of MAX, AVE"));
    // A 2-D input (InnerProduct output) cannot be pooled.
    let p = net(
        &[1, 4],
        r#"layer { name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param { kernel_size: 1 } }"#,
    );
    assert!(layer_err(caffe::load(&p, &model(vec![]))).2.contains("4-D"));
}

// ---------------------------------------------------------------------------------------
// Activations, softmax, LRN

#[test]
fn activations_softmax_lrn() {
    let p = net(
        &[1, 4, 3, 3],
        r#"layer { name: "r" type: "ReLU" bottom: "data" top: "r" relu_param { negative_slope: 0.1 } }
           layer { name: "sg" type: "Sigmoid" bottom: "r" top: "sg" }
           layer { name: "th" type: "TanH" bottom: "sg" top: "th" }
           layer { name: "n" type: "LRN" bottom: "th" top: "n"
                   lrn_param { local_size: 3 alpha: 1e-4 beta: 0.75 k: 2 norm_region: ACROSS_CHANNELS } }
           layer { name: "n2" type: "LRN" bottom: "n" top: "n2" }
           layer { name: "sm" type: "Softmax" bottom: "n2" top: "sm" softmax_param { axis: -3 } }"#,
    );
    let g = caffe::load(&p, &model(vec![])).unwrap();
    assert_eq!(
        node(&g, "r").op,
        Op::Activation(Activation::Relu { slope: 0.1 })
    );
    assert_eq!(node(&g, "sg").op, Op::Activation(Activation::Sigmoid));
    assert_eq!(node(&g, "th").op, Op::Activation(Activation::Tanh));
    assert_eq!(
        node(&g, "n").op,
        Op::Lrn {
            size: 3,
            alpha: 1e-4,
            beta: 0.75,
            k: 2.0
        }
    );
    assert_eq!(
        node(&g, "n2").op,
        Op::Lrn {
            size: 5,
            alpha: 1.0,
            beta: 0.75,
            k: 1.0
        }
    );
    assert_eq!(node(&g, "sm").op, Op::Softmax);
    assert_eq!(out(&g, "sm"), s(1, 4, 3, 3));
    assert_eq!(g.outputs, vec![tensor(&g, "sm")]);

    let one = |layer: &str| {
        let p = net(&[1, 4, 3, 3], layer);
        layer_err(caffe::load(&p, &model(vec![]))).2
    };
    assert!(one(
        r#"layer { name: "x" type: "Softmax" bottom: "data" top: "x" softmax_param { axis: 2 } }"#
    )
    .contains("axis 1"));
    assert!(one(
        r#"layer { name: "x" type: "Softmax" bottom: "data" top: "x" softmax_param { axis: 4 } }"#
    )
    .contains("out of range"));
    assert!(one(r#"layer { name: "x" type: "LRN" bottom: "data" top: "x" lrn_param { norm_region: WITHIN_CHANNEL } }"#)
        .contains("WITHIN_CHANNEL"));
    assert!(one(
        r#"layer { name: "x" type: "LRN" bottom: "data" top: "x" lrn_param { local_size: 4 } }"#
    )
    .contains("odd"));
    assert!(
        one(r#"layer { name: "x" type: "ReLU" bottom: "data" bottom: "data" top: "x" }"#)
            .contains("expects 1 bottom")
    );
}

// ---------------------------------------------------------------------------------------
// BatchNorm, Scale, Bias, PReLU, Power

#[test]
fn batch_norm_scale_bias() {
    let p = net(
        &[1, 3, 2, 2],
        r#"layer { name: "bn" type: "BatchNorm" bottom: "data" top: "bn"
                   batch_norm_param { use_global_stats: true } }
           layer { name: "bn0" type: "BatchNorm" bottom: "bn" top: "bn0" batch_norm_param { eps: 0.001 } }
           layer { name: "sc" type: "Scale" bottom: "bn0" top: "sc" scale_param { bias_term: true } }
           layer { name: "sc1" type: "Scale" bottom: "sc" top: "sc1" scale_param { num_axes: 0 } }
           layer { name: "bi" type: "Bias" bottom: "sc1" top: "bi" }
           layer { name: "pr" type: "PReLU" bottom: "bi" top: "pr" }
           layer { name: "ps" type: "PReLU" bottom: "pr" top: "ps" prelu_param { channel_shared: true } }
           layer { name: "pw" type: "Power" bottom: "ps" top: "pw"
                   power_param { power: 2 scale: 0.5 shift: -1 } }
           layer { name: "pd" type: "Power" bottom: "pw" top: "pd" }"#,
    );
    let m = model(vec![
        (
            "bn",
            vec![
                blob(&[3], vec![2.0, 4.0, 6.0]),
                blob(&[3], vec![8.0, 10.0, 12.0]),
                blob(&[1], vec![2.0]),
            ],
        ),
        (
            "bn0",
            vec![
                blob(&[3], vec![1.0; 3]),
                blob(&[3], vec![1.0; 3]),
                blob(&[1], vec![0.0]),
            ],
        ),
        (
            "sc",
            vec![
                blob(&[3], vec![1.0, 2.0, 3.0]),
                blob(&[3], vec![0.1, 0.2, 0.3]),
            ],
        ),
        ("sc1", vec![blob(&[], vec![5.0])]),
        ("bi", vec![blob(&[3], vec![-1.0, 0.0, 1.0])]),
        ("pr", vec![blob(&[3], vec![0.25, 0.5, 0.75])]),
        ("ps", vec![blob(&[], vec![0.2])]),
    ]);
    let g = caffe::load(&p, &m).unwrap();
    // Statistics divided by the moving-average factor 2; a zero factor zeroes them.
    let Op::BatchNorm { mean, var, eps } = &node(&g, "bn").op else {
        panic!()
    };
    assert_eq!(
        (mean.data.as_slice(), var.data.as_slice()),
        (&[1.0, 2.0, 3.0][..], &[4.0, 5.0, 6.0][..])
    );
    assert_eq!(*eps, 1e-5);
    let Op::BatchNorm { mean, var, eps } = &node(&g, "bn0").op else {
        panic!()
    };
    assert_eq!(
        (mean.data.as_slice(), var.data.as_slice(), *eps),
        (&[0.0; 3][..], &[0.0; 3][..], 0.001)
    );
    let Op::ChannelAffine { scale, bias } = &node(&g, "sc").op else {
        panic!()
    };
    assert_eq!(scale.as_ref().unwrap().data, [1.0, 2.0, 3.0]);
    assert_eq!(bias.as_ref().unwrap().data, [0.1, 0.2, 0.3]);
    assert_eq!(
        node(&g, "sc1").op,
        Op::ChannelAffine {
            scale: Some(Weights::vector(vec![5.0])),
            bias: None
        }
    );
    assert_eq!(
        node(&g, "bi").op,
        Op::ChannelAffine {
            scale: None,
            bias: Some(Weights::vector(vec![-1.0, 0.0, 1.0]))
        }
    );
    assert_eq!(
        node(&g, "pr").op,
        Op::Activation(Activation::PRelu {
            slopes: Weights::vector(vec![0.25, 0.5, 0.75])
        })
    );
    assert_eq!(
        node(&g, "ps").op,
        Op::Activation(Activation::PRelu {
            slopes: Weights::vector(vec![0.2; 3])
        })
    );
    assert_eq!(
        node(&g, "pw").op,
        Op::Power {
            power: 2.0,
            scale: 0.5,
            shift: -1.0
        }
    );
    assert_eq!(
        node(&g, "pd").op,
        Op::Power {
            power: 1.0,
            scale: 1.0,
            shift: 0.0
        }
    );
    assert_eq!(out(&g, "pd"), s(1, 3, 2, 2));

    // Errors: runtime scale, batch statistics, blob count, a scale over H.
    let one = |layer: &str, m: Vec<u8>| {
        let p = net(&[1, 3, 2, 2], layer);
        layer_err(caffe::load(&p, &m)).2
    };
    assert!(one(
        r#"layer { name: "x" type: "Scale" bottom: "data" bottom: "data" top: "x" }"#,
        model(vec![])
    )
    .contains("second bottom"));
    assert!(one(
        r#"layer { name: "x" type: "BatchNorm" bottom: "data" top: "x" batch_norm_param { use_global_stats: false } }"#,
        model(vec![])
    )
    .contains("use_global_stats"));
    assert!(one(
        r#"layer { name: "x" type: "Scale" bottom: "data" top: "x" scale_param { bias_term: true } }"#,
        model(vec![("x", vec![blob(&[3], vec![1.0; 3])])])
    )
    .contains("1 parameter blob(s) for this layer, expected 2"));
    assert!(one(
        r#"layer { name: "x" type: "Scale" bottom: "data" top: "x" scale_param { num_axes: 2 } }"#,
        model(vec![("x", vec![blob(&[3, 2], vec![1.0; 6])])])
    )
    .contains("per-channel"));
    assert!(one(
        r#"layer { name: "x" type: "BatchNorm" bottom: "data" top: "x" }"#,
        model(vec![(
            "x",
            vec![
                blob(&[3], vec![1.0; 3]),
                blob(&[4], vec![1.0; 4]),
                blob(&[1], vec![1.0])
            ]
        )])
    )
    .contains("blob 1 (variance) has shape 4"));
}

// ---------------------------------------------------------------------------------------
// Eltwise, Concat, Split, Dropout, Flatten, Reshape

#[test]
fn eltwise_concat_split() {
    let p = net(
        &[1, 2, 3, 3],
        r#"layer { name: "sp" type: "Split" bottom: "data" top: "a" top: "b" top: "c" }
           layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" bottom: "c" top: "sum"
                   eltwise_param { operation: SUM coeff: 1 coeff: -1 coeff: 0.5 } }
           layer { name: "prod" type: "Eltwise" bottom: "a" bottom: "sum" top: "prod"
                   eltwise_param { operation: PROD } }
           layer { name: "max" type: "Eltwise" bottom: "prod" bottom: "b" bottom: "c" bottom: "a" top: "max"
                   eltwise_param { operation: MAX coeff: [1, 2, 3, 4] } }
           layer { name: "plain" type: "Eltwise" bottom: "max" bottom: "max" top: "plain" }
           layer { name: "cat" type: "Concat" bottom: "plain" bottom: "a" bottom: "sum" top: "cat" }
           layer { name: "cat1" type: "Concat" bottom: "cat" top: "cat1" concat_param { concat_dim: 1 } }
           layer { name: "drop" type: "Dropout" bottom: "cat1" top: "drop" dropout_param { dropout_ratio: 0.3 } }"#,
    );
    let g = caffe::load(&p, &model(vec![])).unwrap();
    // Split: one Identity per top, named layer/top.
    for t in ["a", "b", "c"] {
        let n = node(&g, &format!("sp/{t}"));
        assert_eq!(n.op, Op::Identity);
        assert_eq!(n.inputs, vec![tensor(&g, "data")]);
        assert_eq!(n.outputs, vec![tensor(&g, t)]);
        assert_eq!(n.source_type, "Split");
    }
    assert_eq!(
        node(&g, "sum").op,
        Op::Eltwise {
            kind: EltwiseKind::Sum,
            coeffs: vec![1.0, -1.0, 0.5]
        }
    );
    assert_eq!(node(&g, "sum").inputs.len(), 3);
    assert_eq!(
        node(&g, "prod").op,
        Op::Eltwise {
            kind: EltwiseKind::Prod,
            coeffs: vec![]
        }
    );
    assert_eq!(node(&g, "max").inputs.len(), 4);
    assert!(matches!(
        node(&g, "max").op,
        Op::Eltwise {
            kind: EltwiseKind::Max,
            ..
        }
    ));
    assert!(
        matches!(&node(&g, "plain").op, Op::Eltwise { kind: EltwiseKind::Sum, coeffs } if coeffs.is_empty())
    );
    assert_eq!(node(&g, "cat").op, Op::Concat);
    assert_eq!(out(&g, "cat"), s(1, 6, 3, 3));
    assert_eq!(node(&g, "cat1").op, Op::Identity, "one-input concat copies");
    assert_eq!(node(&g, "drop").op, Op::Identity);
    assert_eq!(g.outputs, vec![tensor(&g, "drop")]);

    let one = |dims: &[usize], layer: &str| {
        let p = net(dims, layer);
        layer_err(caffe::load(&p, &model(vec![]))).2
    };
    let two = r#"layer { name: "sp" type: "Split" bottom: "data" top: "a" top: "b" } "#;
    assert!(one(
        &[1, 2, 3, 3],
        &format!(r#"{two} layer {{ name: "e" type: "Eltwise" bottom: "a" top: "e" }}"#)
    )
    .contains("at least 2"));
    assert!(one(&[1, 2, 3, 3], &format!(r#"{two} layer {{ name: "e" type: "Eltwise" bottom: "a" bottom: "b" top: "e" eltwise_param {{ coeff: 1 }} }}"#))
        .contains("one per bottom"));
    assert!(one(&[1, 2, 3, 3], &format!(r#"{two} layer {{ name: "e" type: "Eltwise" bottom: "a" bottom: "b" top: "e" eltwise_param {{ operation: PROD coeff: 1 coeff: 1 }} }}"#))
        .contains("only allowed for SUM"));
    assert!(one(&[1, 2, 3, 3], &format!(r#"{two} layer {{ name: "cat" type: "Concat" bottom: "a" bottom: "b" top: "cat" concat_param {{ axis: 2 }} }}"#))
        .contains("axis 1"));
    let pooled = format!(
        r#"{two} layer {{ name: "p" type: "Pooling" bottom: "a" top: "p" pooling_param {{ kernel_size: 2 }} }}"#
    );
    assert!(one(
        &[1, 2, 3, 3],
        &format!(
            r#"{pooled} layer {{ name: "e" type: "Eltwise" bottom: "p" bottom: "b" top: "e" }}"#
        )
    )
    .contains("bottom 1 has shape 1x2x3x3"));
    assert!(one(
        &[1, 2, 3, 3],
        &format!(
            r#"{pooled} layer {{ name: "cat" type: "Concat" bottom: "p" bottom: "b" top: "cat" }}"#
        )
    )
    .contains("outside axis 1"));
}

#[test]
fn dropout_scale_train_false_scales_at_test_time() {
    let p = net(
        &[1, 2, 1, 1],
        r#"layer { name: "d" type: "Dropout" bottom: "data" top: "d"
                   dropout_param { dropout_ratio: 0.25 scale_train: false } }"#,
    );
    let g = caffe::load(&p, &model(vec![])).unwrap();
    assert_eq!(
        node(&g, "d").op,
        Op::ChannelAffine {
            scale: Some(Weights::vector(vec![0.75])),
            bias: None
        }
    );
}

#[test]
fn flatten_and_reshape() {
    let p = net(
        &[2, 3, 4, 5],
        r#"layer { name: "f" type: "Flatten" bottom: "data" top: "f" }
           layer { name: "r" type: "Reshape" bottom: "data" top: "r" reshape_param { shape { dim: 0 dim: -1 } } }
           layer { name: "r4" type: "Reshape" bottom: "data" top: "r4"
                   reshape_param { shape { dim: 2 dim: 60 dim: 1 dim: 1 } } }
           layer { name: "ra" type: "Reshape" bottom: "data" top: "ra"
                   reshape_param { shape { dim: -1 } axis: 1 } }
           layer { name: "fe" type: "Flatten" bottom: "data" top: "fe" flatten_param { axis: 1 end_axis: 3 } }"#,
    );
    let g = caffe::load(&p, &model(vec![])).unwrap();
    for n in ["f", "r", "r4", "ra", "fe"] {
        assert_eq!(node(&g, n).op, Op::Flatten, "{n}");
        assert_eq!(out(&g, n), s(2, 60, 1, 1), "{n}");
    }
    // An FC after a flatten sees C*H*W inputs.
    let p = net(
        &[1, 2, 2, 2],
        r#"layer { name: "f" type: "Flatten" bottom: "data" top: "f" }
           layer { name: "fc" type: "InnerProduct" bottom: "f" top: "fc" inner_product_param { num_output: 1 bias_term: false } }"#,
    );
    let g = caffe::load(&p, &model(vec![("fc", vec![blob(&[1, 8], vec![1.0; 8])])])).unwrap();
    assert_eq!(out(&g, "fc"), s(1, 1, 1, 1));

    let one = |layer: &str| {
        let p = net(&[2, 3, 4, 5], layer);
        layer_err(caffe::load(&p, &model(vec![]))).2
    };
    assert!(one(r#"layer { name: "r" type: "Reshape" bottom: "data" top: "r" reshape_param { shape { dim: 0 dim: 3 dim: -1 } } }"#)
        .contains("not a flatten"));
    assert!(one(r#"layer { name: "r" type: "Reshape" bottom: "data" top: "r" reshape_param { shape { dim: 0 dim: 7 dim: -1 } } }"#)
        .contains("divisible"));
    assert!(one(r#"layer { name: "r" type: "Reshape" bottom: "data" top: "r" reshape_param { shape { dim: -1 dim: -1 } } }"#)
        .contains("more than one -1"));
    assert!(one(r#"layer { name: "r" type: "Reshape" bottom: "data" top: "r" reshape_param { shape { dim: 2 dim: 61 } } }"#)
        .contains("does not hold"));
    assert!(one(
        r#"layer { name: "f" type: "Flatten" bottom: "data" top: "f" flatten_param { axis: 2 } }"#
    )
    .contains("not a flatten"));
    assert!(one(r#"layer { name: "f" type: "Flatten" bottom: "data" top: "f" flatten_param { end_axis: 2 } }"#)
        .contains("not a flatten"));
}

// ---------------------------------------------------------------------------------------
// Inputs, legacy forms, phases, in-place layers

#[test]
fn input_forms() {
    let body = r#"layer { name: "r" type: "ReLU" bottom: "data" top: "r" }"#;
    let by_dim =
        format!("input: \"data\"\ninput_dim: 1\ninput_dim: 3\ninput_dim: 5\ninput_dim: 7\n{body}");
    let by_layer = format!(
        "layer {{ name: \"in\" type: \"Input\" top: \"data\" input_param {{ shape: {{ dim: 1 dim: 3 dim: 5 dim: 7 }} }} }}\n{body}"
    );
    for p in [net(&[1, 3, 5, 7], body), by_dim, by_layer] {
        let g = caffe::load(&p, &model(vec![])).unwrap();
        assert_eq!(g.inputs, vec![tensor(&g, "data")]);
        assert_eq!(g.shape(g.inputs[0]), s(1, 3, 5, 7));
        assert_eq!(out(&g, "r"), s(1, 3, 5, 7));
    }
    // Two inputs from one Input layer with one shape each; 2-D inputs become N x C x 1 x 1.
    let p = r#"layer { name: "in" type: "Input" top: "x" top: "y"
                       input_param { shape { dim: 1 dim: 4 } shape { dim: 1 dim: 4 } } }
               layer { name: "e" type: "Eltwise" bottom: "x" bottom: "y" top: "e" }"#;
    let g = caffe::load(p, &model(vec![])).unwrap();
    assert_eq!(g.inputs.len(), 2);
    assert_eq!(out(&g, "e"), s(1, 4, 1, 1));

    let net_err = |p: &str| match caffe::load(p, &model(vec![])) {
        Err(CompileError::Network(m)) => m,
        other => panic!("expected a network error, got {other:?}"),
    };
    assert!(net_err(&format!(
        "input: \"data\"\ninput_dim: 1\ninput_dim: 3\n{body}"
    ))
    .contains("4 times"));
    assert!(net_err("name: \"empty\"").contains("no input"));
    let (_, _, r) = layer_err(caffe::load(
        &format!("input: \"data\"\ninput_shape {{ dim: 1 dim: 0 }}\n{body}"),
        &model(vec![]),
    ));
    assert!(r.contains("dimension 0"), "{r}");
    let (_, _, r) = layer_err(caffe::load(
        &format!("input: \"data\"\ninput_shape {{ dim: 1 dim: 2 dim: 3 dim: 4 dim: 5 }}\n{body}"),
        &model(vec![]),
    ));
    assert!(r.contains("5-D"), "{r}");
}

#[test]
fn legacy_v1_layers() {
    let p = r#"name: "old"
input: "data"
input_dim: 1 input_dim: 1 input_dim: 6 input_dim: 6
layers { name: "conv" type: CONVOLUTION bottom: "data" top: "conv"
         blobs_lr: 1 blobs_lr: 2
         convolution_param { num_output: 2 kernel_size: 3 } }
layers { name: "relu" type: RELU bottom: "conv" top: "conv" }
layers { name: "pool" type: POOLING bottom: "conv" top: "pool" pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
layers { name: "fc" type: INNER_PRODUCT bottom: "pool" top: "fc" inner_product_param { num_output: 3 } }
layers { name: "drop" type: DROPOUT bottom: "fc" top: "fc" }
layers { name: "prob" type: 20 bottom: "fc" top: "prob" }
layers { name: "loss" type: SOFTMAX_LOSS bottom: "fc" bottom: "label" top: "loss" include { phase: TRAIN } }
"#;
    // The caffemodel in the legacy form too (V1 messages, legacy 4-D blob shapes, doubles).
    let m = NetParameter {
        layers: vec![
            V1LayerParameter {
                name: Some("conv".into()),
                r#type: Some(4),
                blobs: vec![
                    BlobProto {
                        num: Some(2),
                        channels: Some(1),
                        height: Some(3),
                        width: Some(3),
                        data: seq(18, 1.0, 1.0),
                        ..Default::default()
                    },
                    BlobProto {
                        num: Some(1),
                        channels: Some(1),
                        height: Some(1),
                        width: Some(2),
                        double_data: vec![0.25, -0.5],
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
            V1LayerParameter {
                name: Some("fc".into()),
                blobs: vec![
                    BlobProto {
                        num: Some(1),
                        channels: Some(1),
                        height: Some(3),
                        width: Some(8),
                        data: vec![0.5; 24],
                        ..Default::default()
                    },
                    BlobProto {
                        num: Some(1),
                        channels: Some(1),
                        height: Some(1),
                        width: Some(3),
                        data: vec![1.0, 2.0, 3.0],
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
        ],
        ..Default::default()
    }
    .encode_to_vec();
    let g = caffe::load(p, &m).unwrap();
    assert_eq!(g.name, "old");
    assert_eq!(names(&g), ["conv", "relu", "pool", "fc", "drop", "prob"]);
    assert_eq!(node(&g, "conv").source_type, "CONVOLUTION");
    assert_eq!(node(&g, "prob").source_type, "SOFTMAX");
    assert_eq!(out(&g, "conv"), s(1, 2, 4, 4));
    assert_eq!(out(&g, "pool"), s(1, 2, 2, 2));
    assert_eq!(out(&g, "prob"), s(1, 3, 1, 1));
    let Op::Conv(c) = &node(&g, "conv").op else {
        panic!()
    };
    assert_eq!(c.weight.data, seq(18, 1.0, 1.0));
    assert_eq!(c.bias.as_ref().unwrap().data, [0.25, -0.5]);
    assert_eq!(node(&g, "relu").outputs, vec![tensor(&g, "conv")]);
    assert_eq!(node(&g, "drop").outputs, vec![tensor(&g, "fc")]);
    assert_eq!(node(&g, "fc").outputs, vec![tensor(&g, "fc@fc")]);
    assert_eq!(g.outputs, vec![tensor(&g, "prob")]);

    // An unsupported V1 type is named as spelled; V0 blobs nested in a V1 layer load.
    let bad = p.replace("type: RELU", "type: BNLL");
    let (layer, ty, r) = layer_err(caffe::load(&bad, &m));
    assert_eq!((layer.as_str(), ty.as_str()), ("relu", "BNLL"));
    assert!(r.contains("unsupported layer type `BNLL`"), "{r}");
    let v0 = NetParameter {
        layers: vec![V1LayerParameter {
            layer: Some(V0LayerParameter {
                name: Some("fc".into()),
                r#type: Some("innerproduct".into()),
                blobs: vec![blob(&[3, 4], vec![1.0; 12]), blob(&[3], vec![0.0; 3])],
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
    .encode_to_vec();
    let p0 = "input: \"data\" input_dim: 1 input_dim: 4 input_dim: 1 input_dim: 1\n\
              layers { name: \"fc\" type: INNER_PRODUCT bottom: \"data\" top: \"fc\" inner_product_param { num_output: 3 } }";
    assert_eq!(out(&caffe::load(p0, &v0).unwrap(), "fc"), s(1, 3, 1, 1));
    // Both forms in one prototxt is refused, as Caffe does.
    let both = format!("{p}\nlayer {{ name: \"x\" type: \"ReLU\" bottom: \"prob\" top: \"x\" }}");
    assert!(matches!(
        caffe::load(&both, &m),
        Err(CompileError::Network(_))
    ));
}

#[test]
fn phase_rules() {
    let p = net(
        &[1, 2, 2, 2],
        r#"layer { name: "acc" type: "Accuracy" bottom: "data" top: "acc" include { phase: TRAIN } }
           layer { name: "r" type: "ReLU" bottom: "data" top: "r" include { phase: TEST } }
           layer { name: "x" type: "Data" top: "x" exclude { phase: TEST } }
           layer { name: "s" type: "Sigmoid" bottom: "r" top: "s" include { stage: "deploy" } }
           layer { name: "t" type: "TanH" bottom: "r" top: "t" exclude { not_stage: "deploy" } }
           layer { name: "u" type: "TanH" bottom: "r" top: "u" include { min_level: 1 } }"#,
    );
    let g = caffe::load(&p, &model(vec![])).unwrap();
    assert_eq!(names(&g), ["r"]);
}

#[test]
fn in_place_chain_keeps_the_blob_name_on_the_last_writer() {
    let p = net(
        &[1, 2, 3, 3],
        r#"layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
                   convolution_param { num_output: 2 kernel_size: 1 bias_term: false } }
           layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
           layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
           layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
           layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1" pooling_param { kernel_size: 3 } }
           layer { name: "relu2" type: "ReLU" bottom: "pool1" top: "pool1" }
           layer { name: "side" type: "Sigmoid" bottom: "conv1" top: "side" }"#,
    );
    let m = model(vec![
        ("conv1", vec![blob(&[2, 2, 1, 1], vec![1.0; 4])]),
        (
            "bn1",
            vec![
                blob(&[2], vec![0.0; 2]),
                blob(&[2], vec![1.0; 2]),
                blob(&[1], vec![1.0]),
            ],
        ),
        (
            "scale1",
            vec![blob(&[2], vec![1.0; 2]), blob(&[2], vec![0.0; 2])],
        ),
    ]);
    let g = caffe::load(&p, &m).unwrap();
    let chain = ["conv1", "bn1", "scale1", "relu1"];
    for w in chain.windows(2) {
        assert_eq!(node(&g, w[1]).inputs, node(&g, w[0]).outputs, "{w:?}");
    }
    assert_eq!(node(&g, "conv1").outputs, vec![tensor(&g, "conv1@conv1")]);
    assert_eq!(node(&g, "bn1").outputs, vec![tensor(&g, "conv1@bn1")]);
    assert_eq!(node(&g, "scale1").outputs, vec![tensor(&g, "conv1@scale1")]);
    assert_eq!(node(&g, "relu1").outputs, vec![tensor(&g, "conv1")]);
    assert_eq!(node(&g, "pool1").inputs, vec![tensor(&g, "conv1")]);
    assert_eq!(node(&g, "side").inputs, vec![tensor(&g, "conv1")]);
    assert_eq!(node(&g, "relu2").outputs, vec![tensor(&g, "pool1")]);
    // Outputs in creation order, by their Caffe names.
    let outs: Vec<_> = g
        .outputs
        .iter()
        .map(|&t| g.tensor(t).name.as_str())
        .collect();
    assert_eq!(outs, ["pool1", "side"]);
    // Every tensor name is unique.
    let mut all: Vec<_> = g.tensors.iter().map(|t| &t.name).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), g.tensors.len());
    g.check().unwrap();
}

// ---------------------------------------------------------------------------------------
// Errors

#[test]
fn error_reporting() {
    let relu = r#"layer { name: "r" type: "ReLU" bottom: "data" top: "r" }"#;
    // Unknown type.
    let p = net(
        &[1, 1, 2, 2],
        r#"layer { name: "x" type: "Fancy" bottom: "data" top: "x" }"#,
    );
    let (layer, ty, r) = layer_err(caffe::load(&p, &model(vec![])));
    assert_eq!((layer.as_str(), ty.as_str()), ("x", "Fancy"));
    assert!(r.contains("unsupported layer type `Fancy`"), "{r}");
    // Missing weights, wrong size, wrong count.
    let fc = net(
        &[1, 1, 2, 2],
        r#"layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc" inner_product_param { num_output: 2 } }"#,
    );
    let (layer, ty, r) = layer_err(caffe::load(&fc, &model(vec![("other", vec![])])));
    assert_eq!((layer.as_str(), ty.as_str()), ("fc", "InnerProduct"));
    assert!(r.contains("no trained weights"), "{r}");
    let (_, _, r) = layer_err(caffe::load(
        &fc,
        &model(vec![(
            "fc",
            vec![blob(&[2, 4], vec![0.0; 7]), blob(&[2], vec![0.0; 2])],
        )]),
    ));
    assert!(r.contains("holds 7 values"), "{r}");
    let (_, _, r) = layer_err(caffe::load(
        &fc,
        &model(vec![(
            "fc",
            vec![blob(&[2, 5], vec![0.0; 10]), blob(&[2], vec![0.0; 2])],
        )]),
    ));
    assert!(r.contains("shape 2x5"), "{r}");
    let (_, _, r) = layer_err(caffe::load(
        &fc,
        &model(vec![("fc", vec![blob(&[2, 4], vec![0.0; 8])])]),
    ));
    assert!(r.contains("expected 2"), "{r}");
    // Unshaped blobs are checked by count alone.
    let unshaped = BlobProto {
        data: vec![0.0; 8],
        ..Default::default()
    };
    let g = caffe::load(
        &fc,
        &model(vec![("fc", vec![unshaped, blob(&[2], vec![0.0; 2])])]),
    )
    .unwrap();
    assert_eq!(out(&g, "fc"), s(1, 2, 1, 1));
    // Caffemodel layers that the prototxt does not name are ignored.
    let g = caffe::load(
        &net(&[1, 1, 2, 2], relu),
        &model(vec![("ghost", vec![blob(&[1], vec![1.0])])]),
    );
    assert!(g.is_ok());
    // Dangling bottom, duplicate top, wrong top count, missing type, a value not a message.
    let one = |body: &str| layer_err(caffe::load(&net(&[1, 1, 2, 2], body), &model(vec![])));
    assert!(
        one(r#"layer { name: "r" type: "ReLU" bottom: "nope" top: "r" }"#)
            .2
            .contains("`nope`")
    );
    assert!(one(&format!("{relu} {relu}"))
        .2
        .contains("more than one layer"));
    assert!(
        one(r#"layer { name: "r" type: "ReLU" bottom: "data" top: "a" top: "b" }"#)
            .2
            .contains("1 top")
    );
    assert!(one(r#"layer { name: "r" bottom: "data" top: "r" }"#)
        .2
        .contains("no type"));
    assert!(
        one(r#"layer { name: "r" type: "ReLU" bottom: "data" top: "r" relu_param: 3 }"#)
            .2
            .contains("must be a message")
    );
    let (_, _, r) = one(r#"layer { name: "r" type: "ReLU" bottom: "data" top: "r"
        relu_param { negative_slope: "x" } }"#);
    assert!(r.contains("line 5"), "{r}");
    // Nameless layers are named by position.
    assert_eq!(
        one(r#"layer { type: "Nope" bottom: "data" top: "r" }"#).0,
        "#0"
    );
}

#[test]
fn syntax_and_encoding_errors() {
    let parse = |p: &str| match caffe::load(p, &model(vec![])) {
        Err(CompileError::Parse { file, reason }) => (file, reason),
        other => panic!("expected a parse error, got {other:?}"),
    };
    let (file, reason) =
        parse("name: \"x\"\ninput: \"data\"\nlayer {\n  name: \"a\"\n  type \"ReLU\"\n}\n");
    assert_eq!(file, "prototxt");
    assert!(reason.starts_with("line 5, column 8"), "{reason}");
    let (_, reason) = parse("layer {\n name: \"a\"\n");
    assert!(
        reason.contains("line 3") && reason.contains("expected `}`"),
        "{reason}"
    );
    let (_, reason) = parse("name: 'unterminated\n");
    assert!(
        reason.contains("line 1") && reason.contains("unterminated"),
        "{reason}"
    );
    let (_, reason) = parse("a: 1\nb: 2\nc: @\n");
    assert!(reason.starts_with("line 3, column 4"), "{reason}");
    // Not a caffemodel.
    match caffe::load(&net(&[1, 1, 1, 1], ""), &[0xff, 0xff, 0xff]) {
        Err(CompileError::Parse { file, reason }) => {
            assert_eq!(file, "caffemodel");
            assert!(reason.contains("NetParameter"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn text_format_variants() {
    // Comments, `<>` messages, `:` before messages, separators, string escapes and
    // concatenation, exponents, hex, `[ ]` lists, enum numbers, `True`.
    let p = "# LeNet-ish\nname: 'a\\'b' \"c\"\ninput: \"da\" \"ta\" input_shape: < dim: [1, 0x2, 3, 3] >;\n\
             layer: { name: \"r\", type: \"ReLU\"; bottom: \"data\" top: \"r\" relu_param < negative_slope: 5e-1 > }\n\
             layer { name: \"p\" type: \"Pooling\" bottom: \"r\" top: \"p\" pooling_param { pool: 1 kernel_size: 3 global_pooling: False } }\n\
             layer { name: \"b\" type: \"BatchNorm\" bottom: \"p\" top: \"b\" batch_norm_param { use_global_stats: True eps: 1E-3 } }";
    let m = model(vec![(
        "b",
        vec![
            blob(&[2], vec![0.0; 2]),
            blob(&[2], vec![1.0; 2]),
            blob(&[1], vec![1.0]),
        ],
    )]);
    let g = caffe::load(p, &m).unwrap();
    assert_eq!(g.name, "a'bc");
    assert_eq!(g.shape(g.inputs[0]), s(1, 2, 3, 3));
    assert_eq!(
        node(&g, "r").op,
        Op::Activation(Activation::Relu { slope: 0.5 })
    );
    assert_eq!(out(&g, "p"), s(1, 2, 1, 1));
    assert!(matches!(node(&g, "b").op, Op::BatchNorm { eps, .. } if eps == 1e-3));
}

/// A blob message with unpacked floats (the `[packed = true]` of caffe.proto is only what
/// Caffe writes; a reader must take both).
#[derive(Clone, PartialEq, prost::Message)]
struct UnpackedBlob {
    #[prost(float, repeated, packed = "false", tag = "5")]
    data: Vec<f32>,
    #[prost(message, optional, tag = "7")]
    shape: Option<BlobShape>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct UnpackedLayer {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(message, repeated, tag = "7")]
    blobs: Vec<UnpackedBlob>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct UnpackedNet {
    #[prost(message, repeated, tag = "100")]
    layer: Vec<UnpackedLayer>,
}

#[test]
fn unpacked_floats_decode() {
    let bytes = UnpackedNet {
        layer: vec![UnpackedLayer {
            name: Some("fc".into()),
            blobs: vec![
                UnpackedBlob {
                    data: vec![1.0, 2.0, 3.0, 4.0],
                    shape: Some(BlobShape { dim: vec![2, 2] }),
                },
                UnpackedBlob {
                    data: vec![-1.0, -2.0],
                    shape: Some(BlobShape { dim: vec![2] }),
                },
            ],
        }],
    }
    .encode_to_vec();
    // Unpacked: one tag per value (0x2d = field 5, wire type 5).
    assert_eq!(bytes.iter().filter(|&&b| b == 0x2d).count(), 6);
    let p = net(
        &[1, 2, 1, 1],
        r#"layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc" inner_product_param { num_output: 2 } }"#,
    );
    let g = caffe::load(&p, &bytes).unwrap();
    let Op::FullyConnected { weight, bias } = &node(&g, "fc").op else {
        panic!()
    };
    assert_eq!(weight.data, [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(bias.as_ref().unwrap().data, [-1.0, -2.0]);
}

// ---------------------------------------------------------------------------------------
// Robustness: deterministic mutations, no panics

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "<",
    ">",
    ":",
    ";",
    ",",
    "[",
    "]",
    "-",
    "\"",
    "'",
    "#",
    "\n",
    "0",
    "-1",
    "1e9",
    "99999999999",
    "0x7fffffff",
    "nan",
    "inf",
    "-inf",
    "layer",
    "layers",
    "top",
    "bottom",
    "\"data\"",
    "\"conv1\"",
    "\"ip1\"",
    "type",
    "\"Eltwise\"",
    "\"Concat\"",
    "\"Deconvolution\"",
    "CONVOLUTION",
    "pool",
    "AVE",
    "kernel_size",
    "stride",
    "pad",
    "group",
    "num_output",
    "global_pooling: true",
    "transpose: true",
    "axis: -1",
    "input_dim",
    "input",
    "\\x",
];

fn mutate_text(rng: &mut XorShift, base: &str) -> String {
    let mut b = base.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(b.len() + 1);
        match rng.below(5) {
            0 if !b.is_empty() => {
                let n = 1 + rng.below(16);
                let end = (at + n).min(b.len());
                b.drain(at.min(end)..end);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                b.splice(at..at, t.bytes().chain([b' ']));
            }
            2 if at < b.len() => b[at] = (rng.next() & 0x7f) as u8,
            3 => {
                // Duplicate a random span (repeats layers, fields, braces).
                let from = rng.below(b.len());
                let n = rng.below(200).min(b.len() - from);
                let span: Vec<u8> = b[from..from + n].to_vec();
                b.splice(at..at, span);
            }
            _ => {
                // Replace a number with another.
                if let Some(pos) = b[at.min(b.len())..].iter().position(u8::is_ascii_digit) {
                    let p = at + pos;
                    let digits = ["0", "1", "2", "3", "7", "65535", "-3", "2147483648"];
                    let d = digits[rng.below(digits.len())];
                    b.splice(p..p + 1, d.bytes());
                }
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn mutate_bytes(rng: &mut XorShift, base: &[u8], hot: &[usize]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        // Mostly near message boundaries (tags, lengths), sometimes anywhere.
        let at = if !hot.is_empty() && rng.below(4) != 0 {
            (hot[rng.below(hot.len())] + rng.below(24)).min(b.len())
        } else {
            rng.below(b.len() + 1)
        };
        match rng.below(5) {
            0 if at < b.len() => b[at] ^= 1 << rng.below(8),
            1 if at < b.len() => b[at] = rng.next() as u8,
            2 => b.truncate(at),
            3 => {
                let n = 1 + rng.below(8);
                let end = (at + n).min(b.len());
                b.drain(at..end);
            }
            _ => {
                let v: Vec<u8> = (0..1 + rng.below(6)).map(|_| rng.next() as u8).collect();
                b.splice(at..at, v);
            }
        }
    }
    b
}

/// Offsets where each layer message, its blobs and their shapes start (of `NetParameter`
/// field 100), found by walking the encoding: mutations there hit structure, not floats.
fn structure_offsets(bytes: &[u8]) -> Vec<usize> {
    fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for s in 0..10 {
            let c = *b.get(*i)?;
            *i += 1;
            v |= u64::from(c & 0x7f) << (7 * s);
            if c < 0x80 {
                return Some(v);
            }
        }
        None
    }
    fn walk(b: &[u8], base: usize, depth: usize, out: &mut Vec<usize>) {
        let mut i = 0;
        while i < b.len() {
            out.push(base + i);
            let Some(key) = varint(b, &mut i) else { return };
            match key & 7 {
                0 => {
                    if varint(b, &mut i).is_none() {
                        return;
                    }
                }
                1 => i += 8,
                5 => i += 4,
                2 => {
                    let Some(len) = varint(b, &mut i) else { return };
                    let start = i;
                    i = i.saturating_add(len as usize);
                    let field = key >> 3;
                    // Descend into layers (100), blobs (7) and shapes (7 inside blobs).
                    if depth < 3 && (field == 100 || field == 7) && i <= b.len() {
                        walk(&b[start..i], base + start, depth + 1, out);
                    }
                }
                _ => return,
            }
        }
    }
    let mut out = Vec::new();
    walk(bytes, 0, 0, &mut out);
    out
}

/// A small network using every supported layer type, and its weights.
fn zoo() -> (String, Vec<u8>) {
    let p = net(
        &[1, 4, 8, 8],
        r#"layer { name: "c" type: "Convolution" bottom: "data" top: "c" convolution_param { num_output: 4 kernel_size: 3 pad: 1 group: 2 } }
           layer { name: "bn" type: "BatchNorm" bottom: "c" top: "c" }
           layer { name: "sc" type: "Scale" bottom: "c" top: "c" scale_param { bias_term: true } }
           layer { name: "pr" type: "PReLU" bottom: "c" top: "c" }
           layer { name: "sp" type: "Split" bottom: "c" top: "s1" top: "s2" }
           layer { name: "d" type: "Deconvolution" bottom: "s1" top: "d" convolution_param { num_output: 4 kernel_size: 2 stride: 2 group: 4 bias_term: false } }
           layer { name: "p" type: "Pooling" bottom: "d" top: "p" pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 } }
           layer { name: "p2" type: "Pooling" bottom: "p" top: "p2" pooling_param { kernel_size: 2 stride: 1 } }
           layer { name: "e" type: "Eltwise" bottom: "p2" bottom: "s2" bottom: "s2" top: "e" eltwise_param { coeff: 1 coeff: 2 coeff: 3 } }
           layer { name: "cat" type: "Concat" bottom: "e" bottom: "s2" top: "cat" }
           layer { name: "n" type: "LRN" bottom: "cat" top: "n" lrn_param { local_size: 3 } }
           layer { name: "b" type: "Bias" bottom: "n" top: "n" }
           layer { name: "pw" type: "Power" bottom: "n" top: "pw" power_param { power: 2 } }
           layer { name: "f" type: "Flatten" bottom: "pw" top: "f" }
           layer { name: "fc" type: "InnerProduct" bottom: "f" top: "fc" inner_product_param { num_output: 3 } }
           layer { name: "dr" type: "Dropout" bottom: "fc" top: "fc" }
           layer { name: "sm" type: "Softmax" bottom: "fc" top: "sm" }"#,
    );
    let m = model(vec![
        (
            "c",
            vec![blob(&[4, 2, 3, 3], vec![0.1; 72]), blob(&[4], vec![0.0; 4])],
        ),
        (
            "bn",
            vec![
                blob(&[4], vec![0.0; 4]),
                blob(&[4], vec![1.0; 4]),
                blob(&[1], vec![1.0]),
            ],
        ),
        (
            "sc",
            vec![blob(&[4], vec![1.0; 4]), blob(&[4], vec![0.0; 4])],
        ),
        ("pr", vec![blob(&[4], vec![0.1; 4])]),
        ("d", vec![blob(&[4, 1, 2, 2], vec![1.0; 16])]),
        ("b", vec![blob(&[8], vec![0.5; 8])]),
        (
            "fc",
            vec![blob(&[3, 512], vec![0.01; 1536]), blob(&[3], vec![0.0; 3])],
        ),
    ]);
    (p, m)
}

#[test]
fn zoo_loads() {
    let (p, m) = zoo();
    let g = caffe::load(&p, &m).unwrap();
    assert_eq!(out(&g, "d"), s(1, 4, 16, 16));
    // ceil((16 + 2 - 3) / 2) + 1 = 9, and 8 * 2 = 16 < 17 keeps it.
    assert_eq!(out(&g, "p"), s(1, 4, 9, 9));
    assert_eq!(out(&g, "p2"), s(1, 4, 8, 8));
    assert_eq!(out(&g, "cat"), s(1, 8, 8, 8));
    assert_eq!(out(&g, "sm"), s(1, 3, 1, 1));
    assert_eq!(g.nodes.len(), 18);
}

#[test]
fn random_mutations_never_panic() {
    let (zoo_p, zoo_m) = zoo();
    let lenet = lenet();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut outcomes = [0usize; 2];
    let mut run = |p: &str, m: &[u8], what: &str, i: usize| {
        let r = std::panic::catch_unwind(|| caffe::load(p, m));
        match r {
            Ok(Ok(g)) => {
                g.check().unwrap();
                outcomes[0] += 1;
            }
            Ok(Err(_)) => outcomes[1] += 1,
            Err(_) => panic!("{what} mutation {i} panicked; prototxt:\n{p}"),
        }
    };
    // Prototxt mutations against the matching weights.
    for i in 0..2000 {
        let p = mutate_text(&mut rng, &zoo_p);
        run(&p, &zoo_m, "zoo prototxt", i);
    }
    let zoo_hot = structure_offsets(&zoo_m);
    for i in 0..1500 {
        let m = mutate_bytes(&mut rng, &zoo_m, &zoo_hot);
        run(&zoo_p, &m, "zoo caffemodel", i);
    }
    if let Some((lp, lm)) = &lenet {
        for i in 0..800 {
            let p = mutate_text(&mut rng, lp);
            run(&p, lm, "lenet prototxt", i);
        }
        let hot = structure_offsets(lm);
        for i in 0..300 {
            let m = mutate_bytes(&mut rng, lm, &hot);
            run(lp, &m, "lenet caffemodel", i);
        }
    }
    eprintln!("mutations: {} loaded, {} refused", outcomes[0], outcomes[1]);
    // Both outcomes occur: the mutations are neither all fatal nor all harmless.
    assert!(outcomes[0] > 50 && outcomes[1] > 500, "{outcomes:?}");
}

#[test]
fn crop_cuts_lines_and_columns_to_the_reference_shape() {
    // FCN's `Crop`: the data cut to the pooled blob's 5x4 at lines 3.., columns 2...
    let body = |param: &str| {
        format!(
            "layer {{ name: \"pool\" type: \"Pooling\" bottom: \"data\" top: \"pool\"
               pooling_param {{ pool: MAX kernel_size: 2 stride: 2 }} }}
             layer {{ name: \"crop\" type: \"Crop\" bottom: \"data\" bottom: \"pool\" top: \"crop\"
               {param} }}"
        )
    };
    let p = net(
        &[1, 4, 10, 8],
        &body("crop_param { axis: 2 offset: 3 offset: 2 }"),
    );
    let g = caffe::load(&p, &model(vec![])).unwrap();
    let crop = node(&g, "crop");
    assert_eq!(
        crop.op,
        Op::Crop {
            origin: [3, 2],
            step: [1, 1]
        }
    );
    assert_eq!(crop.inputs, vec![g.inputs[0]]);
    assert_eq!(g.shape(crop.outputs[0]), Shape::new(1, 4, 5, 4));
    let x = seq(4 * 10 * 8, 0.0, 1.0);
    let values = nvdla_compiler::reference::run(&g, &[(g.inputs[0], x.clone())]).unwrap();
    let want: Vec<f32> = (0..4)
        .flat_map(|c| (3..8).flat_map(move |y| (2..6).map(move |xx| (c * 80 + y * 8 + xx) as f32)))
        .collect();
    assert_eq!(values[crop.outputs[0].0], want);
    // One offset for both axes; the default axis and offset 0.
    let g = caffe::load(
        &net(&[1, 4, 10, 8], &body("crop_param { offset: 1 }")),
        &model(vec![]),
    )
    .unwrap();
    assert!(matches!(
        node(&g, "crop").op,
        Op::Crop { origin: [1, 1], .. }
    ));
    let g = caffe::load(&net(&[1, 4, 10, 8], &body("")), &model(vec![])).unwrap();
    assert!(matches!(
        node(&g, "crop").op,
        Op::Crop { origin: [0, 0], .. }
    ));
    // Past the input, or cropping the channels: errors naming the layer.
    for (param, want) in [
        ("crop_param { offset: 6 }", "reads past the input"),
        ("crop_param { axis: 1 }", "the batch or the channels"),
        (
            "crop_param { offset: 1 offset: 1 offset: 1 }",
            "3 offsets for 2",
        ),
    ] {
        let e = caffe::load(&net(&[1, 4, 10, 8], &body(param)), &model(vec![]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("crop") && e.contains(want), "{param}: {e}");
    }
}
