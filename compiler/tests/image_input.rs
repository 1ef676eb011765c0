//! Image-mode input (`--image-input`): a first convolution of at most 4 channels reads
//! its input as a pitch-linear image of 4 components per pixel, with pre-extended kernels
//! and post-extension, on nv_full in fp16 and int8; run on the virtual platform (whose
//! image path passes NVIDIA's nhwc loadables) and compared with the feature-mode build
//! and the fp32 reference.

mod common;

use common::*;
use nvdla_compiler::engine::HwOpKind;
use nvdla_compiler::ir::*;
use nvdla_compiler::target::{Precision, Target};

/// A network of input `c x size x size`, a `kh x kw` convolution with stride `stride` and
/// padding `pad` to 24 channels with ReLU, then a 3x3 convolution to 8.
fn network(c: usize, size: usize, k: [usize; 2], stride: usize, pad: usize) -> Graph {
    let mut rng = Rng(0x1a6e + (c * 100 + k[0] * 10 + k[1]) as u64);
    let (mut g, x) = graph(c, size, size);
    let conv =
        |g: &mut Graph, rng: &mut Rng, name: &str, x: TensorId, out, k: [usize; 2], st, pad| {
            let s = g.shape(x);
            let n = out * s.c * k[0] * k[1];
            let scale = 1.0 / ((s.c * k[0] * k[1]) as f32).sqrt();
            let op = Op::Conv(Conv {
                window: Window {
                    kernel: k,
                    stride: [st, st],
                    pad: [pad; 4],
                    dilation: [1, 1],
                },
                groups: 1,
                out_channels: out,
                weight: Weights::new(vec![out, s.c, k[0], k[1]], rng.vec(n, scale)).unwrap(),
                bias: Some(Weights::vector(rng.vec(out, 0.5))),
            });
            let oh = (s.h + 2 * pad - k[0]) / st + 1;
            let ow = (s.w + 2 * pad - k[1]) / st + 1;
            let t = g.add_tensor(name, Shape::new(1, out, oh, ow));
            g.add_node(Node {
                name: name.into(),
                source_type: "Convolution".into(),
                op,
                inputs: vec![x],
                outputs: vec![t],
            });
            t
        };
    let a = conv(&mut g, &mut rng, "stem", x, 24, k, stride, pad);
    let s = g.shape(a);
    let r = g.add_tensor("stem_relu", s);
    g.add_node(Node {
        name: "stem_relu".into(),
        source_type: "ReLU".into(),
        op: Op::Activation(Activation::Relu { slope: 0.0 }),
        inputs: vec![a],
        outputs: vec![r],
    });
    let b = conv(&mut g, &mut rng, "head", r, 8, [3, 3], 1, 1);
    g.outputs.push(b);
    g
}

/// The networks: ResNet's 7x7/2 stem (post-extension 2), a grey 5x5 (LeNet's, 2), a 3x3
/// stride 1 (4), a 2-wide kernel at stride 3 (none: the stride exceeds the kernel), a
/// 3x3/2 on a 480x480 image, read in row chunks (30 CBUF banks in int8, 58 in fp16).
fn networks() -> Vec<(&'static str, Graph, u32)> {
    vec![
        (
            "3x3/2 on 3x480x480, row chunks",
            network(3, 480, [3, 3], 2, 1),
            4,
        ),
        ("7x7/2 on 3x40x40", network(3, 40, [7, 7], 2, 3), 2),
        ("5x5 on 1x28x28", network(1, 28, [5, 5], 1, 0), 2),
        ("3x3 on 3x17x17", network(3, 17, [3, 3], 1, 1), 4),
        ("3x2/3 on 4x20x20", network(4, 20, [3, 2], 3, 1), 1),
    ]
}

/// The post-extension of each image-mode convolution of `g`'s nv_full build.
fn image_convs(g: &Graph, precision: Precision) -> Vec<u32> {
    compile_with(g, "nv_full", precision, IMAGE)
        .program
        .ops
        .iter()
        .filter_map(|op| match &op.kind {
            HwOpKind::Conv(c) => c.image.map(|m| m.y_ext),
            _ => None,
        })
        .collect()
}

const IMAGE: Extra = Extra {
    cpu_fallback: false,
    winograd: false,
    image_input: true,
    cvsram: 0,
    compress_weights: false,
    fused_pooling: false,
};

#[test]
fn first_convolutions_read_images_with_their_post_extension() {
    for (what, g, y_ext) in networks() {
        for p in [Precision::Fp16, Precision::Int8] {
            let convs = image_convs(&g, p);
            assert!(
                !convs.is_empty() && convs.iter().all(|&y| y == y_ext),
                "{what} {p:?}"
            );
            assert_eq!(convs.len() > 1, what.contains("chunks"), "{what} {p:?}");
        }
    }
}

#[test]
fn int8_image_mode_equals_feature_mode() {
    // Integer products and sums are exact in either order: the same bytes.
    for (what, g, _) in networks() {
        let input = Rng(17).vec(g.shape(g.inputs[0]).elements(), 1.0);
        for per_filter in [true, false] {
            let (image, want) = run_int8_opts(&g, "nv_full", &input, per_filter, IMAGE);
            let (feature, _) = run_int8(&g, "nv_full", &input, per_filter);
            let err = max_rel_err(&image, &want);
            let differ = image.iter().zip(&feature).filter(|(a, b)| a != b).count();
            assert!(
                differ == 0,
                "{what} per-filter={per_filter}: {differ} of {} values differ from feature \
                 mode (error {err:.2e}, feature {:.2e})",
                image.len(),
                max_rel_err(&feature, &want)
            );
            assert!(err <= 0.04, "{what}: int8 error {err}");
        }
    }
}

#[test]
fn fp16_image_mode_matches_the_reference() {
    for (what, g, _) in networks() {
        let input = Rng(19).vec(g.shape(g.inputs[0]).elements(), 1.0);
        let (got, want) = run_fp16_opts(&g, "nv_full", &input, IMAGE);
        let (feature, _) = run_fp16(&g, "nv_full", &input);
        let err = max_rel_err(&got, &want);
        eprintln!(
            "{what}: image {err:.2e}, feature {:.2e}",
            max_rel_err(&feature, &want)
        );
        assert!(err <= 4e-3, "{what}: fp16 error {err}");
    }
}

#[test]
fn inputs_with_other_readers_or_channels_stay_features() {
    // 8 channels; a build whose MAC cells take 8 channels (nv_small).
    let g = network(8, 16, [3, 3], 1, 1);
    assert!(image_convs(&g, Precision::Fp16).is_empty());
    let g = network(3, 16, [3, 3], 1, 1);
    let c = compile_with(&g, "nv_small", Precision::Int8, IMAGE);
    assert!(!c.program.surface(c.program.inputs[0]).pixel);
}

/// The per-layer comparison (`nvdla-compiler --compare`) of an `-O` build reads the
/// image input's surface and every layer's output, close to the reference.
#[test]
fn per_layer_comparison_reads_image_and_padded_surfaces() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    let model = root.join("models/onnx/mnist-cntk.onnx");
    let image = root.join("third-party-loadables/lenet-mnist/images/0_3.jpg");
    if !model.is_file() || !image.is_file() {
        eprintln!("skipped: shared data not found at {}", root.display());
        return;
    }
    let t = Target::new(&nvdla_hw::NV_FULL, Precision::Fp16).unwrap();
    let mut opts = nvdla_compiler::Options::new(t);
    opts.optimize();
    opts.keep_activations = true;
    let m = nvdla_compiler::Model::onnx_file(&model).unwrap();
    let c = nvdla_compiler::compile(&m, &opts, &mut |_| {}).unwrap();
    assert!(c.program.surface(c.program.inputs[0]).pixel);
    let rows =
        nvdla_compiler::compare::compare(&c, &t, &image, 255, &nvdla_umd::DeviceKind::Vp).unwrap();
    assert!(rows.len() >= 4, "{} rows", rows.len());
    for r in &rows {
        assert!(r.cosine > 0.9999, "{}: cosine {}", r.tensor, r.cosine);
    }
}

/// `--compare` with a tensor file: the input's real values fed as `nvdla-runtime --input`
/// feeds them (networks whose preprocessing an image cannot express), fp16 and int8.
#[test]
fn per_layer_comparison_reads_a_tensor_file() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    let model = root.join("models/onnx/mnist-cntk.onnx");
    if !model.is_file() {
        eprintln!("skipped: shared data not found at {}", root.display());
        return;
    }
    // A .npy of 1x1x28x28 float32 values in [0, 1).
    let dir = std::env::temp_dir().join(format!("nvdla-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("x.npy");
    std::fs::write(&input, npy([1, 1, 28, 28], 12345)).unwrap();
    let m = nvdla_compiler::Model::onnx_file(&model).unwrap();
    for (hw, prec, min_cosine) in [
        (&nvdla_hw::NV_FULL, Precision::Fp16, 0.9999),
        (&nvdla_hw::NV_SMALL, Precision::Int8, 0.99),
    ] {
        let t = Target::new(hw, prec).unwrap();
        let mut opts = nvdla_compiler::Options::new(t);
        opts.keep_activations = true;
        if prec == Precision::Int8 {
            opts.calibration = nvdla_compiler::Calibrate::Samples(vec![input.clone()]);
        }
        let c = nvdla_compiler::compile(&m, &opts, &mut |_| {}).unwrap();
        let rows = nvdla_compiler::compare::compare(&c, &t, &input, 1, &nvdla_umd::DeviceKind::Vp)
            .unwrap();
        assert!(rows.len() >= 4, "{} rows", rows.len());
        for r in &rows {
            assert!(
                r.cosine > min_cosine,
                "{prec:?} {}: cosine {}",
                r.tensor,
                r.cosine
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A `.npy` of float32 values in [0, 1) of shape `shape` (a deterministic sequence from
/// `seed`).
fn npy(shape: [usize; 4], seed: u32) -> Vec<u8> {
    let mut x = seed;
    let n: usize = shape.iter().product();
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}, {}, {}), }}",
        shape[0], shape[1], shape[2], shape[3]
    );
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for _ in 0..n {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        out.extend_from_slice(&((x >> 8) as f32 / (1u32 << 24) as f32).to_le_bytes());
    }
    out
}

/// A convolution too big for the convolution buffer runs as row chunks, each writing a
/// part of the output: `--compare` shows the tensor once, when it is whole, under the
/// layer's own name.
#[test]
fn per_layer_comparison_joins_a_split_convolution() {
    let g = network(3, 480, [3, 3], 2, 1);
    let t = Target::new(&nvdla_hw::NV_FULL, Precision::Fp16).unwrap();
    let mut opts = nvdla_compiler::Options::new(t);
    opts.keep_activations = true;
    let c = nvdla_compiler::compile_graph(g, &opts).unwrap();
    let chunks = c
        .program
        .ops
        .iter()
        .filter(|op| op.layers.iter().any(|l| l.starts_with("stem@")))
        .count();
    assert!(chunks > 1, "the stem is not split ({chunks} operations)");
    let dir = std::env::temp_dir().join(format!("nvdla-compare-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("x.npy");
    std::fs::write(&input, npy([1, 3, 480, 480], 777)).unwrap();
    let rows =
        nvdla_compiler::compare::compare(&c, &t, &input, 1, &nvdla_umd::DeviceKind::Vp).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let stem: Vec<_> = rows
        .iter()
        .filter(|r| r.layers.starts_with("stem"))
        .collect();
    assert_eq!(stem.len(), 1, "{rows:?}");
    assert_eq!(stem[0].layers, "stem+stem_relu");
    assert_eq!(stem[0].shape, [24, 240, 240]);
    assert!(rows.iter().any(|r| r.layers == "head"), "{rows:?}");
    for r in &rows {
        assert!(r.cosine > 0.9999, "{}: cosine {}", r.tensor, r.cosine);
    }
}
