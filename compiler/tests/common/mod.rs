//! Helpers shared by the compiler's integration tests: compile an IR graph, run it on the
//! in-process virtual platform with given input values, and compare with the compiler's
//! own CPU fp32 reference.
#![allow(dead_code)]

pub mod onnx;

use half::f16;
use nvdla_compiler::ir::{Graph, TensorId};
use nvdla_compiler::target::{Precision, Target};
use nvdla_umd::runtime::{RunOptions, Runtime};
use nvdla_umd::Direction;

/// Deterministic xorshift values in `[-1, 1)`.
pub struct Rng(pub u64);

impl Rng {
    /// The next value in `[-1, 1)`.
    pub fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    /// `n` values scaled by `scale`.
    pub fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.next() * scale).collect()
    }
}

/// The device for `config` (the in-process virtual platform).
pub fn device(config: &str) -> Box<dyn nvdla_port::device::Device> {
    let cfg = nvdla_umd::HwConfig::ALL
        .into_iter()
        .find(|c| c.name() == config)
        .expect("known configuration");
    nvdla_umd::open_device(&nvdla_umd::DeviceKind::Vp, cfg).expect("VP device")
}

/// NCHW f32 values to an fp16 NCxHWx surface with `atom`-byte atoms.
pub fn to_surface(v: &[f32], c: usize, h: usize, w: usize, atom: usize, size: usize) -> Vec<u8> {
    let cpa = atom / 2;
    let mut out = vec![0u8; size];
    for ch in 0..c {
        for y in 0..h {
            for x in 0..w {
                let o = ((ch / cpa) * h * w + y * w + x) * atom + (ch % cpa) * 2;
                let b = f16::from_f32(v[(ch * h + y) * w + x])
                    .to_bits()
                    .to_le_bytes();
                out[o..o + 2].copy_from_slice(&b);
            }
        }
    }
    out
}

/// An fp16 NCxHWx surface (line and surface strides given) to NCHW f32 values.
#[allow(clippy::too_many_arguments)]
pub fn from_surface(
    b: &[u8],
    c: usize,
    h: usize,
    w: usize,
    atom: usize,
    line: usize,
    surf: usize,
) -> Vec<f32> {
    let cpa = atom / 2;
    let mut out = vec![0.0; c * h * w];
    for ch in 0..c {
        for y in 0..h {
            for x in 0..w {
                let o = (ch / cpa) * surf + y * line + x * atom + (ch % cpa) * 2;
                out[(ch * h + y) * w + x] =
                    f16::from_bits(u16::from_le_bytes([b[o], b[o + 1]])).to_f32();
            }
        }
    }
    out
}

/// Compiles `g` for `config` in fp16, runs it on the VP with `input` for its only input,
/// and returns (hardware output, reference output) of its only output, NCHW.
pub fn run_fp16(g: &Graph, config: &str, input: &[f32]) -> (Vec<f32>, Vec<f32>) {
    run_fp16_opts(g, config, input, Extra::default())
}

/// Writes `data` into input 0 of `rt`, runs it on `dev`, and returns output 0's
/// descriptor and bytes (the runtime's memory released).
pub fn run_once(
    dev: &mut dyn nvdla_port::device::Device,
    mut rt: Runtime<'_>,
    data: &[u8],
) -> (nvdla_umd::runtime::TensorDesc, Vec<u8>) {
    rt.write_input(dev, 0, data).unwrap();
    rt.run(dev, &RunOptions::default(), &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let to = rt.tensor(Direction::Output, 0).unwrap().clone();
    let out = rt.read_output(dev, 0).unwrap();
    rt.release(dev);
    (to, out)
}

/// The CPU fallback's `exp` (an operation no NVDLA engine computes).
pub fn exp_op() -> nvdla_compiler::ir::Op {
    nvdla_compiler::ir::Op::CpuUnary {
        func: nvdla_umd::emu::FallbackFn::Exp,
        alpha: 0.0,
        beta: 0.0,
    }
}

/// Compile options beyond the target and the scales.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extra {
    /// [`nvdla_compiler::Options::cpu_fallback`].
    pub cpu_fallback: bool,
    /// [`nvdla_compiler::Options::winograd`].
    pub winograd: bool,
    /// [`nvdla_compiler::Options::image_input`].
    pub image_input: bool,
    /// [`nvdla_compiler::Options::cvsram`].
    pub cvsram: u64,
    /// [`nvdla_compiler::Options::compress_weights`].
    pub compress_weights: bool,
    /// [`nvdla_compiler::Options::fused_pooling`].
    pub fused_pooling: bool,
}

impl Extra {
    /// With the CPU fallback.
    pub const CPU_FALLBACK: Extra = Extra {
        cpu_fallback: true,
        winograd: false,
        image_input: false,
        cvsram: 0,
        compress_weights: false,
        fused_pooling: false,
    };

    fn apply(self, o: nvdla_compiler::Options) -> nvdla_compiler::Options {
        nvdla_compiler::Options {
            cpu_fallback: self.cpu_fallback,
            winograd: self.winograd,
            image_input: self.image_input,
            cvsram: self.cvsram,
            compress_weights: self.compress_weights,
            fused_pooling: self.fused_pooling,
            ..o
        }
    }
}

/// [`run_fp16`] with `extra` options.
pub fn run_fp16_opts(g: &Graph, config: &str, input: &[f32], extra: Extra) -> (Vec<f32>, Vec<f32>) {
    let reference = nvdla_compiler::reference::run(g, &[(g.inputs[0], input.to_vec())]).unwrap();
    let want = reference[g.outputs[0].0].clone();
    let hw = nvdla_hw::Config::by_name(config).unwrap();
    let target = Target::new(hw, Precision::Fp16).unwrap();
    let opts = extra.apply(nvdla_compiler::Options::new(target));
    let compiled =
        nvdla_compiler::compile_graph(g.clone(), &opts).unwrap_or_else(|e| panic!("{e}"));
    let mut dev = device(config);
    let rt = Runtime::load(dev.as_mut(), &compiled.loadable).unwrap();
    let ti = rt.tensor(Direction::Input, 0).unwrap().clone();
    let s = g.shape(g.inputs[0]);
    let atom = hw.memory_atomic as usize;
    // Images and integer inputs through the runtime's conversion.
    let data = if is_image(&ti) || ti.data_type == nvdla_loadable::DataType::FLOAT {
        host_input(input, &ti, None)
    } else {
        to_surface(input, s.c, s.h, s.w, atom, ti.size as usize)
    };
    let (to, out) = run_once(dev.as_mut(), rt, &data);
    let o = g.shape(g.outputs[0]);
    // An output only the CPU writes (a partition's) is binary32.
    let got = if to.data_type == nvdla_loadable::DataType::FLOAT {
        host_output(&out, &to)
    } else {
        from_surface(
            &out,
            o.c,
            o.h,
            o.w,
            atom,
            to.strides[1] as usize,
            to.strides[2] as usize,
        )
    };
    (got, want)
}

/// A `k`x`k` convolution of stride 1 with `k / 2` padding from `cin` to `cout` channels,
/// weights `rng.vec(.., scale)` then a bias `rng.vec(cout, 0.1)`.
pub fn conv_op(
    rng: &mut Rng,
    cin: usize,
    cout: usize,
    k: usize,
    scale: f32,
) -> nvdla_compiler::ir::Op {
    let w = rng.vec(cout * cin * k * k, scale);
    grouped_conv_op([cin, cout, k, 1], w, rng.vec(cout, 0.1))
}

/// A `k`x`k` convolution of stride 1 with `k / 2` padding from `cin` to `cout` channels
/// in `groups` groups, weights `w` (`[cout][cin / groups][k][k]`) and bias `bias`.
pub fn grouped_conv_op(
    [cin, cout, k, groups]: [usize; 4],
    w: Vec<f32>,
    bias: Vec<f32>,
) -> nvdla_compiler::ir::Op {
    use nvdla_compiler::ir::{Conv, Op, Weights, Window};
    Op::Conv(Conv {
        window: Window {
            kernel: [k, k],
            stride: [1, 1],
            pad: [k / 2; 4],
            dilation: [1, 1],
        },
        groups,
        out_channels: cout,
        weight: Weights::new(vec![cout, cin / groups, k, k], w).unwrap(),
        bias: Some(Weights::vector(bias)),
    })
}

/// A `k`x`k` max pooling of stride `k`, no padding.
pub fn max_pool(k: usize) -> nvdla_compiler::ir::Op {
    use nvdla_compiler::ir::{Op, Pool, PoolKind, Window};
    Op::Pool(Pool {
        kind: PoolKind::Max,
        window: Window {
            kernel: [k, k],
            stride: [k, k],
            pad: [0; 4],
            dilation: [1, 1],
        },
        ceil_mode: false,
        count_include_pad: false,
    })
}

/// A `k`x`k` pooling of stride `s` padded by `pad` on every side (ceil rounding with
/// `ceil`), the padding counted in averages.
pub fn pool_op(
    kind: nvdla_compiler::ir::PoolKind,
    k: usize,
    s: usize,
    pad: usize,
    ceil: bool,
) -> nvdla_compiler::ir::Op {
    use nvdla_compiler::ir::{Op, Pool, Window};
    Op::Pool(Pool {
        kind,
        window: Window {
            kernel: [k, k],
            stride: [s, s],
            pad: [pad; 4],
            dilation: [1, 1],
        },
        ceil_mode: ceil,
        count_include_pad: true,
    })
}

/// Appends node `name` (`op` reading `inputs`) writing a new tensor `name` of shape `out`.
pub fn add_node(
    g: &mut Graph,
    name: &str,
    op: nvdla_compiler::ir::Op,
    inputs: &[TensorId],
    out: nvdla_compiler::ir::Shape,
) -> TensorId {
    let t = g.add_tensor(name, out);
    g.add_node(nvdla_compiler::ir::Node {
        name: name.into(),
        source_type: op.name().into(),
        op,
        inputs: inputs.to_vec(),
        outputs: vec![t],
    });
    t
}

/// `g` compiled for `config` in `precision` with `extra` options (int8: calibrated on a
/// random input with max-abs ranges, per-filter weight scales).
pub fn compile_with(
    g: &Graph,
    config: &str,
    precision: Precision,
    extra: Extra,
) -> nvdla_compiler::Compiled {
    use nvdla_compiler::quant::{Calibration, RangeMethod};
    let input = Rng(3).vec(g.shape(g.inputs[0]).elements(), 1.0);
    let values = nvdla_compiler::reference::run(g, &[(g.inputs[0], input)]).unwrap();
    let cal = Calibration::from_activations(&values, RangeMethod::MaxAbs);
    let t = Target::new(nvdla_hw::Config::by_name(config).unwrap(), precision).unwrap();
    let quant = nvdla_compiler::lower::Quant {
        cal: (precision == Precision::Int8).then_some(&cal),
        per_filter: true,
        input_scale: 1.0,
    };
    let opts = extra.apply(nvdla_compiler::Options::with_quant(t, &quant));
    nvdla_compiler::compile_graph(g.clone(), &opts).unwrap_or_else(|e| panic!("{e}"))
}

/// Whether input tensor `t` is an image (the compiler's image-mode input).
pub fn is_image(t: &nvdla_umd::runtime::TensorDesc) -> bool {
    t.data_category == nvdla_loadable::DataCategory::IMAGE
}

/// NCHW values as the bytes of input `t` (a feature cube or an image), through the
/// runtime's conversion (`nvdla-runtime --input`); int8 with `scale`.
pub fn host_input(v: &[f32], t: &nvdla_umd::runtime::TensorDesc, scale: Option<f32>) -> Vec<u8> {
    let d = t.dims;
    let shape = vec![1, d.c as u64, d.h as u64, d.w as u64];
    let host = nvdla_umd::tensor::HostTensor::from_f32(shape, v).unwrap();
    nvdla_umd::tensor::host_to_input(&host, t, scale).unwrap()
}

/// Output bytes `b` of tensor `t` as NCHW f32 values, through the runtime's conversion.
pub fn host_output(b: &[u8], t: &nvdla_umd::runtime::TensorDesc) -> Vec<f32> {
    nvdla_umd::tensor::output_to_host(t, b, None)
        .unwrap()
        .to_f32_vec()
}

/// Largest |got - want| relative to the largest |want| (at least 1).
pub fn max_rel_err(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    got.iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs() / scale)
        .fold(0.0, f32::max)
}

/// A graph with one input of `shape` named `data`.
pub fn graph(c: usize, h: usize, w: usize) -> (Graph, TensorId) {
    let mut g = Graph {
        name: "test".into(),
        ..Default::default()
    };
    let x = g.add_tensor("data", nvdla_compiler::ir::Shape::new(1, c, h, w));
    g.inputs.push(x);
    (g, x)
}

/// NCHW f32 values to an int8 NCxHWx surface (`q = round(v / scale)`).
pub fn to_surface_i8(
    v: &[f32],
    (c, h, w): (usize, usize, usize),
    atom: usize,
    size: usize,
    scale: f32,
) -> Vec<u8> {
    let mut out = vec![0u8; size];
    for ch in 0..c {
        for y in 0..h {
            for x in 0..w {
                let o = ((ch / atom) * h * w + y * w + x) * atom + ch % atom;
                out[o] = nvdla_compiler::quant::q8(v[(ch * h + y) * w + x], scale) as u8;
            }
        }
    }
    out
}

/// An int8 NCxHWx surface to NCHW f32 values (`q * scale`).
pub fn from_surface_i8(
    b: &[u8],
    (c, h, w): (usize, usize, usize),
    atom: usize,
    (line, surf): (usize, usize),
    scale: f32,
) -> Vec<f32> {
    let mut out = vec![0.0; c * h * w];
    for ch in 0..c {
        for y in 0..h {
            for x in 0..w {
                let o = (ch / atom) * surf + y * line + x * atom + ch % atom;
                out[(ch * h + y) * w + x] = f32::from(b[o] as i8) * scale;
            }
        }
    }
    out
}

/// Compiles `g` for `config` in int8, calibrated (max-abs) on the reference's values for
/// `input` itself, runs it on the VP, and returns (hardware output, reference output).
pub fn run_int8(g: &Graph, config: &str, input: &[f32], per_filter: bool) -> (Vec<f32>, Vec<f32>) {
    run_int8_opts(g, config, input, per_filter, Extra::default())
}

/// [`run_int8`] with `extra` options.
pub fn run_int8_opts(
    g: &Graph,
    config: &str,
    input: &[f32],
    per_filter: bool,
    extra: Extra,
) -> (Vec<f32>, Vec<f32>) {
    let (got, want, _) = run_int8_scaled(g, config, input, per_filter, extra, false);
    (got, want)
}

/// [`run_int8_opts`], calibrated per channel too when `channel_scales` (activations with
/// scales per channel where the compiler can give them); also returns the compiled
/// network.
pub fn run_int8_scaled(
    g: &Graph,
    config: &str,
    input: &[f32],
    per_filter: bool,
    extra: Extra,
    channel_scales: bool,
) -> (Vec<f32>, Vec<f32>, nvdla_compiler::Compiled) {
    use nvdla_compiler::quant::{Calibration, RangeMethod};
    let reference = nvdla_compiler::reference::run(g, &[(g.inputs[0], input.to_vec())]).unwrap();
    let want = reference[g.outputs[0].0].clone();
    let mut cal = Calibration::from_activations(&reference, RangeMethod::MaxAbs);
    if channel_scales {
        cal.add_channel_activations(g, &reference, RangeMethod::MaxAbs);
    }
    let hw = nvdla_hw::Config::by_name(config).unwrap();
    let target = Target::new(hw, Precision::Int8).unwrap();
    let quant = nvdla_compiler::lower::Quant {
        cal: Some(&cal),
        per_filter,
        input_scale: 1.0,
    };
    let opts = extra.apply(nvdla_compiler::Options::with_quant(target, &quant));
    let compiled =
        nvdla_compiler::compile_graph(g.clone(), &opts).unwrap_or_else(|e| panic!("{e}"));
    let mut dev = device(config);
    let rt = Runtime::load(dev.as_mut(), &compiled.loadable).unwrap();
    let ti = rt.tensor(Direction::Input, 0).unwrap().clone();
    let atom = hw.memory_atomic as usize;
    let in_scale = compiled.program.surface(compiled.program.inputs[0]).scale;
    // Through the runtime's conversion (ties to even), feature and image inputs alike.
    let data = host_input(input, &ti, Some(in_scale));
    let (to, out) = run_once(dev.as_mut(), rt, &data);
    let o = g.shape(g.outputs[0]);
    // The scale the compiler gave the output (pooling keeps its input's, for example).
    let out_scale = compiled.program.surface(compiled.program.outputs[0]).scale;
    let (line, surf) = (to.strides[1] as usize, to.strides[2] as usize);
    // An output only the CPU writes (a partition's) is binary32 in either precision.
    let got = if to.data_type == nvdla_loadable::DataType::FLOAT {
        host_output(&out, &to)
    } else if to.data_type == nvdla_loadable::DataType::HALF {
        let cpa = target.channels_per_atom_of(Precision::Fp16) as usize;
        from_surface(&out, o.c, o.h, o.w, 2 * cpa, line, surf)
    } else {
        from_surface_i8(&out, (o.c, o.h, o.w), atom, (line, surf), out_scale)
    };
    (got, want, compiled)
}

/// Cosine similarity of `a` and `b` (1 when both are zero, 0 when one is).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 {
        return if na == nb { 1.0 } else { 0.0 };
    }
    dot / (na * nb)
}

/// Runs `nvdla-runtime` in process on `image` (extra arguments `args`); returns the
/// printed class scores.
pub fn infer(
    loadable: &std::path::Path,
    image: &std::path::Path,
    config: &str,
    out: &std::path::Path,
    args: &[&str],
) -> Vec<f64> {
    let mut argv: Vec<String> = [
        "nvdla-runtime",
        "--loadable",
        loadable.to_str().unwrap(),
        "--image",
        image.to_str().unwrap(),
        "--device",
        "vp",
        "--config",
        config,
        "--output",
        out.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    argv.extend(args.iter().map(|s| s.to_string()));
    let (mut o, mut e) = (Vec::new(), Vec::new());
    let rc = nvdla_umd::app::run(&argv, &nvdla_umd::device::open_device, &mut o, &mut e);
    let text = String::from_utf8_lossy(&o).into_owned() + &String::from_utf8_lossy(&e);
    assert_eq!(rc, 0, "{text}");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("class scores: "))
        .unwrap_or_else(|| panic!("no class scores in: {text}"));
    line.split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect()
}
