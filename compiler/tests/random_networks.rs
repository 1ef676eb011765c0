//! Random networks: Caffe prototxts generated from a seed (convolutions of every window
//! shape, grouped and depthwise, pooling, activations, LRN, batch-norm, element-wise
//! joins, concatenations, deconvolutions, fully connected heads, odd channel counts and
//! sizes), given random weights, compiled for every configuration in fp16 and int8 (where
//! the build has it), run on the in-process virtual platform and compared with the
//! compiler's fp32 reference.
//!
//! Each (network, configuration, precision) is one of:
//! - **pass**: fp16 within [`FP16_TOL`] of the largest reference magnitude; int8 with a
//!   cosine similarity of at least [`INT8_MIN_COS`]; or either within [`COST_FACTOR`]
//!   times the error of the precision simulated on the reference (every tensor rounded to
//!   fp16, or to its calibrated int8 scale), for networks that amplify rounding (a small
//!   output that is the difference of large terms);
//! - **unsupported**: a compile error naming a layer and a reason (printed, counted);
//! - **fail**: wrong values, a runtime or engine error, or a panic anywhere.
//!
//! `cargo test -p nvdla-compiler --test random_networks -- --nocapture` runs
//! [`DEFAULT_COUNT`] networks (about 15 s). Environment: `NVDLA_RANDOM_NETWORKS=N` and
//! `NVDLA_RANDOM_SEED=S` choose the seeds; `NVDLA_RANDOM_DUMP=DIR` writes each network's
//! prototxt and caffemodel there (for `nvdla-compiler`); `NVDLA_RANDOM_PROTOTXT=F` runs
//! that network instead (weights from the seed: for cutting a failing one down);
//! `NVDLA_RANDOM_DEBUG=1` prints each compiled program as JSON; `NVDLA_RANDOM_RTL=1` runs
//! only the nv_small int8 builds, each also on NVIDIA's RTL (`NVDLA_RTL_HARNESS`), which
//! must write the model's bytes (`scripts/rtl --suites networks`); the cycle model's
//! timeline is printed against the RTL's, and with `NVDLA_RANDOM_RTL_CYCLES=1` it must be
//! within 10 % of it, the whole run and each operation (`scripts/rtl --suites cycles`).
//!
//! What it found when it was written (2026-11-24, 1 000 networks): a ReLU placed on the
//! SDP's Y stage, which has none; Caffe average pooling whose ceil-mode windows run past
//! the padding (wrong divisor at the border); a tanh fused after global pooling without
//! its LUT; int8 partial sums of a channel-split convolution saturating at twice the
//! output's scale. After the fixes: 9 584 passed, 0 failed, 4 416 unsupported.

mod common;

use common::{cosine, device, from_surface, from_surface_i8, to_surface, to_surface_i8, Rng};
use nvdla_compiler::frontend::caffe::{self, synth::random_weights};
use nvdla_compiler::ir::Graph;
use nvdla_compiler::lower::Quant;
use nvdla_compiler::quant::{Calibration, RangeMethod};
use nvdla_compiler::target::{Precision, Target};
use nvdla_umd::runtime::{RunOptions, Runtime};
use nvdla_umd::Direction;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Convolutions compiled in Winograd mode (counted to show the coverage).
static WINOGRAD_LAYERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Builds whose input is an image (counted to show the coverage).
static IMAGE_INPUTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Poolings taken from their convolution on the fly in the `+O` builds.
static FUSED_POOLINGS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Activations given scales per channel in the `+C` builds.
static CHANNEL_SCALED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Networks per run unless `NVDLA_RANDOM_NETWORKS` says otherwise.
const DEFAULT_COUNT: u64 = 300;
/// fp16: largest error relative to the largest reference magnitude.
const FP16_TOL: f32 = 2e-2;
/// int8: smallest cosine similarity with the reference.
const INT8_MIN_COS: f64 = 0.97;
/// Or an error within this many times that of the precision simulated on the reference.
const COST_FACTOR: f32 = 5.0;

/// A blob of the network being generated.
#[derive(Clone)]
struct Blob {
    name: String,
    c: usize,
    h: usize,
    w: usize,
}

/// Generates one random network as prototxt text.
struct Gen {
    rng: Rng,
    text: String,
    blobs: Vec<Blob>,
    layers: usize,
}

impl Gen {
    /// An integer in `lo..=hi`.
    fn int(&mut self, lo: usize, hi: usize) -> usize {
        let u = (self.rng.next() + 1.0) / 2.0;
        (lo + (u * (hi - lo + 1) as f32) as usize).min(hi)
    }

    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.int(0, v.len() - 1)]
    }

    fn chance(&mut self, p: f32) -> bool {
        (self.rng.next() + 1.0) / 2.0 < p
    }

    fn name(&mut self, kind: &str) -> String {
        self.layers += 1;
        format!("{kind}{}", self.layers)
    }

    fn layer(&mut self, body: &str) {
        let _ = writeln!(self.text, "layer {{ {body} }}");
    }

    /// A new blob from `bottom` through a layer of type `ty` with `params`.
    fn add(&mut self, ty: &str, bottoms: &[&Blob], params: &str, c: usize, h: usize, w: usize) {
        let top = self.name(&ty.to_lowercase());
        let b: String = bottoms
            .iter()
            .map(|x| format!("bottom: \"{}\" ", x.name))
            .collect();
        self.layer(&format!(
            "name: \"{top}\" type: \"{ty}\" {b}top: \"{top}\" {params}"
        ));
        self.blobs.push(Blob { name: top, c, h, w });
    }

    /// An in-place layer on `x` (its blob keeps its name).
    fn in_place(&mut self, ty: &str, x: &Blob, params: &str) {
        let name = self.name(&ty.to_lowercase());
        self.layer(&format!(
            "name: \"{name}\" type: \"{ty}\" bottom: \"{0}\" top: \"{0}\" {params}",
            x.name
        ));
    }

    fn conv(&mut self, x: &Blob) {
        let k = self.pick(&[1, 1, 2, 3, 3, 3, 5, 7]).min(x.h.min(x.w) + 2);
        let d = if k > 1 && self.chance(0.15) { 2 } else { 1 };
        let span = d * (k - 1) + 1;
        let pad = self.int(0, k / 2);
        if x.h + 2 * pad < span || x.w + 2 * pad < span {
            return;
        }
        let s = self.pick(&[1, 1, 1, 2, 2, 3]);
        let oh = (x.h + 2 * pad - span) / s + 1;
        let ow = (x.w + 2 * pad - span) / s + 1;
        let (out, group) = match self.int(0, 9) {
            0 if x.c > 1 => (x.c, x.c), // depthwise
            1 if x.c.is_multiple_of(2) => {
                let o = 2 * self.int(1, 24);
                (o, 2)
            }
            _ => (self.pick(&[1, 3, 8, 16, 17, 32, 33, 48, 64, 72]), 1),
        };
        let bias = if self.chance(0.8) {
            ""
        } else {
            "bias_term: false "
        };
        let p = format!(
            "convolution_param {{ num_output: {out} kernel_size: {k} stride: {s} pad: {pad} \
             dilation: {d} group: {group} {bias}}}"
        );
        self.add("Convolution", &[x], &p, out, oh, ow);
    }

    fn pool(&mut self, x: &Blob) {
        let kind = self.pick(&["MAX", "AVE"]);
        if self.chance(0.15) {
            let p = format!("pooling_param {{ pool: {kind} global_pooling: true }}");
            self.add("Pooling", &[x], &p, x.c, 1, 1);
            return;
        }
        let k = self.int(2, 3).min(x.h).min(x.w);
        let s = self.int(1, 2).min(k);
        let pad = if k > 1 { self.int(0, 1) } else { 0 };
        // Caffe rounds up, then drops a window that starts in the padding.
        let out = |i: usize| {
            let mut o = (i + 2 * pad - k).div_ceil(s) + 1;
            if pad > 0 && (o - 1) * s >= i + pad {
                o -= 1;
            }
            o
        };
        let (oh, ow) = (out(x.h), out(x.w));
        let p = format!("pooling_param {{ pool: {kind} kernel_size: {k} stride: {s} pad: {pad} }}");
        self.add("Pooling", &[x], &p, x.c, oh, ow);
    }

    fn deconv(&mut self, x: &Blob) {
        let k = self.int(1, 4);
        let s = self.int(1, 2).min(k);
        let pad = self.int(0, (k - 1) / 2);
        let out = self.pick(&[4, 8, 16, 17]);
        let (oh, ow) = (s * (x.h - 1) + k - 2 * pad, s * (x.w - 1) + k - 2 * pad);
        if oh == 0 || ow == 0 || oh > 48 || ow > 48 {
            return;
        }
        let p = format!(
            "convolution_param {{ num_output: {out} kernel_size: {k} stride: {s} pad: {pad} }}"
        );
        self.add("Deconvolution", &[x], &p, out, oh, ow);
    }

    /// An earlier blob with `x`'s shape, or `x` after a convolution that keeps its shape.
    fn partner(&mut self, x: &Blob, same_channels: bool) -> Blob {
        let same: Vec<Blob> = self
            .blobs
            .iter()
            .filter(|b| {
                b.name != x.name && b.h == x.h && b.w == x.w && (!same_channels || b.c == x.c)
            })
            .cloned()
            .collect();
        if !same.is_empty() && self.chance(0.7) {
            let i = self.int(0, same.len() - 1);
            return same[i].clone();
        }
        let out = if same_channels {
            x.c
        } else {
            self.pick(&[3, 8, 16, 24, 32])
        };
        let p = format!("convolution_param {{ num_output: {out} kernel_size: 3 pad: 1 }}");
        self.add("Convolution", &[x], &p, out, x.h, x.w);
        self.blobs.last().cloned().expect("just added")
    }

    fn step(&mut self) {
        let x = self.blobs.last().cloned().expect("a blob");
        match self.int(0, 18) {
            0..=3 => self.conv(&x),
            4 | 5 => self.pool(&x),
            6 => {
                let p = self.pick(&["", "relu_param { negative_slope: 0.1 }"]);
                self.in_place("ReLU", &x, p);
            }
            7 => {
                let t = self.pick(&["Sigmoid", "TanH", "PReLU"]);
                self.in_place(t, &x, "");
            }
            8 => {
                // alpha up to 1e-2: with larger ones the sums of squares reach the CDP
                // table's per-octave tail (docs/compiler.md, LRN).
                let (size, alpha, k) = (
                    self.pick(&[3, 5]),
                    self.pick(&[1e-4, 1e-3, 1e-2]),
                    self.pick(&[1.0, 2.0]),
                );
                let p =
                    format!("lrn_param {{ local_size: {size} alpha: {alpha} beta: 0.75 k: {k} }}");
                self.add("LRN", &[&x], &p, x.c, x.h, x.w);
            }
            9 => {
                self.in_place("BatchNorm", &x, "");
                self.in_place("Scale", &x, "scale_param { bias_term: true }");
            }
            10 | 11 => {
                let y = self.partner(&x, true);
                let op = self.pick(&["SUM", "SUM", "MAX", "PROD"]);
                let p = format!("eltwise_param {{ operation: {op} }}");
                self.add("Eltwise", &[&x, &y], &p, x.c, x.h, x.w);
            }
            12 | 13 => {
                let y = self.partner(&x, false);
                self.add("Concat", &[&x, &y], "", x.c + y.c, x.h, x.w);
            }
            14 => self.deconv(&x),
            15 => self.in_place("Scale", &x, "scale_param { bias_term: false }"),
            16 => {
                // Three inputs with coefficients (a chain of SDP operations).
                let y = self.partner(&x, true);
                let z = self.partner(&x, true);
                let p = "eltwise_param { operation: SUM coeff: 0.5 coeff: -1 coeff: 2 }";
                self.add("Eltwise", &[&x, &y, &z], p, x.c, x.h, x.w);
            }
            17 => {
                let y = self.partner(&x, false);
                let z = self.partner(&x, false);
                self.add("Concat", &[&x, &y, &z], "", x.c + y.c + z.c, x.h, x.w);
            }
            _ => {
                let p = "power_param { power: 1 scale: 0.5 shift: 0.25 }";
                self.add("Power", &[&x], p, x.c, x.h, x.w);
            }
        }
    }

    /// The network of `seed`.
    fn network(seed: u64) -> String {
        let mut g = Gen {
            rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            text: String::new(),
            blobs: Vec::new(),
            layers: 0,
        };
        // Mostly small; one in five large enough for row splits of the CBUF.
        let (c, h, w) = if g.chance(0.2) {
            (g.pick(&[16, 32, 64]), g.int(32, 64), g.int(32, 64))
        } else {
            (g.pick(&[1, 3, 4, 8, 16, 17]), g.int(5, 24), g.int(5, 24))
        };
        let _ = writeln!(
            g.text,
            "name: \"random{seed}\"\ninput: \"data\"\ninput_shape {{ dim: 1 dim: {c} dim: {h} dim: {w} }}"
        );
        g.blobs.push(Blob {
            name: "data".into(),
            c,
            h,
            w,
        });
        // A first convolution, then random layers.
        let x = g.blobs[0].clone();
        g.conv(&x);
        for _ in 0..g.int(3, 9) {
            g.step();
        }
        if g.chance(0.4) {
            let x = g.blobs.last().cloned().expect("a blob");
            let out = g.int(1, 20);
            let p = format!("inner_product_param {{ num_output: {out} }}");
            g.add("InnerProduct", &[&x], &p, out, 1, 1);
            if g.chance(0.5) {
                let x = g.blobs.last().cloned().expect("a blob");
                g.add("Softmax", &[&x], "", out, 1, 1);
                if g.chance(0.3) {
                    // A CPU task between hardware tasks.
                    let x = g.blobs.last().cloned().expect("a blob");
                    let p = "inner_product_param { num_output: 5 }";
                    g.add("InnerProduct", &[&x], p, 5, 1, 1);
                }
            }
        }
        g.text
    }
}

#[derive(Debug, PartialEq, Eq, Clone, Copy, PartialOrd, Ord)]
enum Outcome {
    Pass,
    Unsupported,
    Fail,
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// Compiles `g` for `config` in `precision` and runs it on the VP with `input`; returns
/// the output (NCHW) or the outcome and reason.
fn run(
    g: &Graph,
    config: &str,
    precision: Precision,
    cal: &Calibration,
    input: &[f32],
) -> Result<Vec<f32>, (Outcome, String)> {
    let (config, optimize) = match config.split_once('+') {
        Some((c, "O")) => (c, true),
        _ => (config, false),
    };
    // `+C`: int8 activations with scales per channel, the calibration's own.
    let (config, cal) = match config.split_once('+') {
        Some((c, "C")) => (c, cal),
        _ => (
            config,
            &Calibration {
                channels: Default::default(),
                ..cal.clone()
            },
        ),
    };
    let hw = nvdla_hw::Config::by_name(config).expect("known configuration");
    let target = Target::new(hw, precision).map_err(|e| (Outcome::Unsupported, e.to_string()))?;
    let quant = Quant {
        cal: (precision == Precision::Int8).then_some(cal),
        per_filter: true,
        input_scale: 1.0,
    };
    // To find the first layer where the RTL and the model part, every layer keeps its own
    // memory (NVDLA_RANDOM_RTL_LAYERS=1).
    let compiled = if on_rtl(config, precision) && std::env::var("NVDLA_RANDOM_RTL_LAYERS").is_ok()
    {
        nvdla_compiler::compile_graph(
            g.clone(),
            &nvdla_compiler::Options {
                keep_activations: true,
                winograd: optimize,
                image_input: optimize,
                compress_weights: optimize,
                fused_pooling: optimize,
                ..nvdla_compiler::Options::with_quant(target, &quant)
            },
        )
    } else {
        nvdla_compiler::compile_graph(
            g.clone(),
            &nvdla_compiler::Options {
                winograd: optimize,
                image_input: optimize,
                compress_weights: optimize,
                fused_pooling: optimize,
                ..nvdla_compiler::Options::with_quant(target, &quant)
            },
        )
    }
    .map_err(|e| (Outcome::Unsupported, e.to_string()))?;
    if std::env::var("NVDLA_RANDOM_DEBUG").is_ok() {
        eprintln!(
            "{config} {precision:?}:\n{}",
            nvdla_compiler::dump::program_json(&compiled.program)
        );
    }
    let wino = compiled
        .program
        .ops
        .iter()
        .filter(|op| {
            matches!(&op.kind, nvdla_compiler::engine::HwOpKind::Conv(c) if c.winograd.is_some())
        })
        .count();
    WINOGRAD_LAYERS.fetch_add(wino, std::sync::atomic::Ordering::Relaxed);
    let fused = compiled
        .program
        .surfaces
        .iter()
        .filter(|s| s.kind == nvdla_compiler::engine::SurfKind::OnTheFly)
        .count();
    FUSED_POOLINGS.fetch_add(fused, std::sync::atomic::Ordering::Relaxed);
    let scaled = compiled
        .program
        .surfaces
        .iter()
        .filter(|s| s.channel_scales.is_some())
        .count();
    CHANNEL_SCALED.fetch_add(scaled, std::sync::atomic::Ordering::Relaxed);
    if compiled.program.surface(compiled.program.inputs[0]).pixel {
        IMAGE_INPUTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let fail = |e: String| (Outcome::Fail, e);
    // What `nvdla-loadable check` says of the loadable: no cube outside its buffer and no
    // warning (an activation the hardware would drop, biases quantized to zero).
    let parsed = nvdla_loadable::Loadable::parse(&compiled.loadable)
        .map_err(|e| fail(format!("parse: {e}")))?;
    nvdla_loadable::cubes::check(&parsed).map_err(|e| fail(format!("check: {e}")))?;
    if let Some(w) = nvdla_loadable::lint::warnings(&parsed).first() {
        return Err(fail(format!("check warns: {w}")));
    }
    let mut dev = device(config);
    let mut rt =
        Runtime::load(dev.as_mut(), &compiled.loadable).map_err(|e| fail(format!("load: {e}")))?;
    let ti = rt
        .tensor(Direction::Input, 0)
        .map_err(|e| fail(e.to_string()))?
        .clone();
    let s = g.shape(g.inputs[0]);
    let atom = hw.memory_atomic as usize;
    let int8 = precision == Precision::Int8;
    let data = if common::is_image(&ti) {
        let scale = compiled.program.surface(compiled.program.inputs[0]).scale;
        common::host_input(input, &ti, int8.then_some(scale))
    } else if int8 {
        let scale = compiled.program.surface(compiled.program.inputs[0]).scale;
        to_surface_i8(input, (s.c, s.h, s.w), atom, ti.size as usize, scale)
    } else {
        to_surface(input, s.c, s.h, s.w, atom, ti.size as usize)
    };
    rt.write_input(dev.as_mut(), 0, &data)
        .map_err(|e| fail(e.to_string()))?;
    let on_rtl = on_rtl(config, precision);
    dev.set_profiling(on_rtl);
    rt.run(dev.as_mut(), &RunOptions::default(), &mut |_| {})
        .map_err(|e| fail(format!("run: {e}")))?;
    let modelled = dev.take_timings();
    let to = rt
        .tensor(Direction::Output, 0)
        .map_err(|e| fail(e.to_string()))?
        .clone();
    let out = rt
        .read_output(dev.as_mut(), 0)
        .map_err(|e| fail(e.to_string()))?;
    let pool = pool_bytes(&rt, dev.as_mut(), &compiled.program);
    rt.release(dev.as_mut());
    if on_rtl {
        // NVIDIA's RTL must write the same bytes as the model.
        let (rtl, rtl_pool, measured) =
            run_on_rtl(&compiled.loadable, &data, &compiled.program).map_err(fail)?;
        if let (Some(m), Some(r)) = (&modelled, &measured) {
            let verdict = compare_cycles(m, r);
            eprintln!("  cycles: {verdict}");
            if std::env::var("NVDLA_RANDOM_RTL_CYCLES").is_ok_and(|v| v == "1")
                && verdict.starts_with("off")
            {
                return Err(fail(format!("the cycle model is {verdict}")));
            }
        }
        if let Some(i) = (0..out.len().max(rtl.len())).find(|&i| out.get(i) != rtl.get(i)) {
            let head = |v: &[u8]| format!("{:02x?}", &v[..v.len().min(32)]);
            return Err(fail(format!(
                "the RTL's output differs from the model's at byte {i} of {} (model {}, RTL {}){}",
                out.len(),
                head(&out),
                head(&rtl),
                first_divergence(&compiled.program, &pool, &rtl_pool)
            )));
        }
    }
    let o = g.shape(g.outputs[0]);
    let (line, surf) = (to.strides[1] as usize, to.strides[2] as usize);
    Ok(if int8 {
        let scale = compiled.program.surface(compiled.program.outputs[0]).scale;
        from_surface_i8(&out, (o.c, o.h, o.w), atom, (line, surf), scale)
    } else {
        from_surface(&out, o.c, o.h, o.w, atom, line, surf)
    })
}

/// With `NVDLA_RANDOM_RTL=1`, the nv_small int8 builds (default and `+O`) also run on
/// NVIDIA's RTL (the harness `NVDLA_RTL_HARNESS` names; `scripts/build-rtl`) and must
/// match the model byte for byte; the other builds and precisions are skipped.
fn rtl_mode() -> bool {
    std::env::var("NVDLA_RANDOM_RTL").is_ok_and(|v| v == "1")
}

fn on_rtl(config: &str, precision: Precision) -> bool {
    rtl_mode() && config == "nv_small" && precision == Precision::Int8
}

/// The activation pool after a run (empty when the program has none).
fn pool_bytes(
    rt: &Runtime<'_>,
    dev: &mut dyn nvdla_port::device::Device,
    p: &nvdla_compiler::engine::Program,
) -> Vec<u8> {
    if p.pool_size == 0 {
        return Vec::new();
    }
    let index = usize::from(!p.blobs.is_empty());
    rt.buffer(index)
        .and_then(|h| dev.map_buffer(h).ok().map(|b| b.to_vec()))
        .unwrap_or_default()
}

/// The first operation (in program order) whose pooled output differs between two runs.
fn first_divergence(p: &nvdla_compiler::engine::Program, a: &[u8], b: &[u8]) -> String {
    use nvdla_compiler::engine::SurfKind;
    for (n, op) in p.ops.iter().enumerate() {
        for w in op.writes() {
            let s = p.surface(w);
            if !matches!(s.kind, SurfKind::Pool) {
                continue;
            }
            let r = s.offset as usize..(s.offset as usize + s.size as usize);
            if let (Some(x), Some(y)) = (a.get(r.clone()), b.get(r)) {
                if x != y {
                    let head = |v: &[u8]| format!("{:02x?}", &v[..v.len().min(32)]);
                    return format!(
                        "; first differing operation: #{n} writing `{}` ({op:?}); model {}, RTL {}",
                        s.name,
                        head(x),
                        head(y)
                    );
                }
            }
        }
    }
    String::new()
}

/// The cycle model's timeline against the RTL's: `within ...` when the whole run and every
/// operation are within 10 % (operations shorter than 2 000 cycles: within 200 cycles),
/// else `off ...` with the worst.
fn compare_cycles(
    model: &nvdla_port::device::DeviceTimings,
    rtl: &nvdla_port::device::DeviceTimings,
) -> String {
    let rel = |m: u64, r: u64| (m as f64 - r as f64) / (r.max(1) as f64);
    let total = rel(model.total_cycles, rtl.total_cycles);
    let mut worst: Option<(usize, f64)> = None;
    let mut bad = model.ops.len() != rtl.ops.len();
    let mut list = String::new();
    for (i, (m, r)) in model.ops.iter().zip(&rtl.ops).enumerate() {
        let (Some(mc), Some(rc)) = (m.cycles(), r.cycles()) else {
            continue;
        };
        let e = rel(mc, rc);
        let ok = m.engine == r.engine && (e.abs() <= 0.10 || (rc < 2000 && mc.abs_diff(rc) <= 200));
        if !ok {
            bad = true;
            if list.len() < 600 {
                list.push_str(&format!(
                    "\n    #{i} {} {}: model {mc}, RTL {rc} ({:+.1} %)",
                    m.engine,
                    m.cost.as_ref().map_or("", |c| c.shape.as_str()),
                    e * 100.0
                ));
            }
            if worst.is_none_or(|(_, w)| e.abs() > w.abs()) {
                worst = Some((i, e));
            }
        }
    }
    bad |= total.abs() > 0.10;
    format!(
        "{} (model {} cycles, RTL {}: {:+.1} %; {} vs {} operations{})",
        if bad { "off" } else { "within 10 %" },
        model.total_cycles,
        rtl.total_cycles,
        total * 100.0,
        model.ops.len(),
        rtl.ops.len(),
        worst.map_or(String::new(), |(i, e)| format!(
            "; worst operation #{i} {} {:+.1} %",
            model.ops[i].engine,
            e * 100.0
        ))
    ) + &list
}

/// The output surface, the activation pool and the cycles of a run on the RTL.
type RtlRun = (Vec<u8>, Vec<u8>, Option<nvdla_port::device::DeviceTimings>);

/// Runs `loadable` with input surface `data` on the RTL.
fn run_on_rtl(
    loadable: &[u8],
    data: &[u8],
    p: &nvdla_compiler::engine::Program,
) -> Result<RtlRun, String> {
    let cfg = nvdla_umd::HwConfig::ALL
        .into_iter()
        .find(|c| c.name() == "nv_small")
        .expect("nv_small");
    let mut dev = nvdla_umd::open_device(&nvdla_umd::DeviceKind::Rtl(None), cfg)
        .map_err(|e| format!("RTL: {e}"))?;
    let mut rt = Runtime::load(dev.as_mut(), loadable).map_err(|e| format!("RTL load: {e}"))?;
    rt.write_input(dev.as_mut(), 0, data)
        .map_err(|e| format!("RTL: {e}"))?;
    rt.run(dev.as_mut(), &RunOptions::default(), &mut |_| {})
        .map_err(|e| format!("RTL run: {e}"))?;
    let out = rt
        .read_output(dev.as_mut(), 0)
        .map_err(|e| format!("RTL: {e}"))?;
    let timings = dev.take_timings();
    if let Some(t) = &timings {
        eprintln!(
            "  RTL: {} cycles, {} operations",
            t.total_cycles,
            t.ops.len()
        );
    }
    let pool = pool_bytes(&rt, dev.as_mut(), p);
    rt.release(dev.as_mut());
    Ok((out, pool, timings))
}

/// Largest `|got - want|` relative to the largest `|want|`; NaN counts as infinite.
fn max_rel_err(got: &[f32], want: &[f32]) -> f32 {
    let peak = want.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
    got.iter()
        .zip(want)
        .map(|(g, w)| {
            if g.is_nan() {
                f32::INFINITY
            } else {
                (g - w).abs() / peak
            }
        })
        .fold(0.0f32, f32::max)
}

/// Judges one run against the reference: fp16 within [`FP16_TOL`], int8 with a cosine of
/// at least [`INT8_MIN_COS`]; or, where the network amplifies rounding (a small output
/// that is the difference of large terms), an error within [`COST_FACTOR`] times `cost`,
/// the error of the precision simulated on the fp32 reference (every tensor rounded).
fn judge(precision: Precision, got: &[f32], want: &[f32], cost: f32) -> (Outcome, String) {
    if got.len() != want.len() {
        return (
            Outcome::Fail,
            format!("{} values, expected {}", got.len(), want.len()),
        );
    }
    let err = max_rel_err(got, want);
    let c = cosine(got, want);
    let pass = err <= COST_FACTOR * cost
        || match precision {
            Precision::Int8 => c >= INT8_MIN_COS,
            Precision::Fp16 => err <= FP16_TOL,
        };
    let o = if pass { Outcome::Pass } else { Outcome::Fail };
    (
        o,
        format!("cosine {c:.4}, error {err:.2e} (the precision simulated: {cost:.2e})"),
    )
}

/// Every configuration NVIDIA published, nv_full and nv_small with the optimizations of
/// `-O` (Winograd convolution, image-mode input, compressed weights, poolings fused to
/// their convolutions), and nv_full and nv_small in int8 with activation scales per
/// channel (`+C`, `--activation-scales per-channel`).
const CONFIGS: [&str; 11] = [
    "nv_full",
    "nv_full+O",
    "nv_small+O",
    "nv_full+C",
    "nv_small+C",
    "nv_large",
    "nv_medium_1024_full",
    "nv_medium_512",
    "nv_small",
    "nv_small_256",
    "nv_small_256_full",
];

#[test]
fn random_networks_compile_and_match_the_reference_on_every_configuration() {
    let count = std::env::var("NVDLA_RANDOM_NETWORKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_COUNT);
    let first: u64 = std::env::var("NVDLA_RANDOM_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let (mut pass, mut unsupported, mut failures) = (0, Vec::new(), Vec::new());
    let mut cosines = Vec::new();
    for seed in first..first + count {
        // NVDLA_RANDOM_PROTOTXT=F runs that network (weights from the seed) instead.
        let text = match std::env::var("NVDLA_RANDOM_PROTOTXT") {
            Ok(f) => std::fs::read_to_string(f).expect("NVDLA_RANDOM_PROTOTXT"),
            Err(_) => Gen::network(seed),
        };
        let bad = |e: nvdla_compiler::CompileError| -> Graph {
            panic!("seed {seed}: the generator wrote a bad network: {e}\n{text}")
        };
        let model = random_weights(&text, seed).unwrap_or_else(|e| {
            bad(e);
            Vec::new()
        });
        if let Ok(dir) = std::env::var("NVDLA_RANDOM_DUMP") {
            // The network as files, for nvdla-compiler --compare and the like.
            let _ = std::fs::write(format!("{dir}/random{seed}.prototxt"), &text);
            let _ = std::fs::write(format!("{dir}/random{seed}.caffemodel"), &model);
        }
        let g = caffe::load(&text, &model).unwrap_or_else(bad);
        let input = Rng(seed ^ 0x5eed).vec(g.shape(g.inputs[0]).elements(), 1.0);
        let values = nvdla_compiler::reference::run(&g, &[(g.inputs[0], input.clone())])
            .unwrap_or_else(|e| panic!("seed {seed}: reference: {e}"));
        let want = values[g.outputs[0].0].clone();
        let mut cal = Calibration::from_activations(&values, RangeMethod::MaxAbs);
        cal.add_channel_activations(&g, &values, RangeMethod::MaxAbs);
        // Each precision simulated on the fp32 reference: the input and every node's
        // output rounded to it (int8: to the tensor's calibrated scale). Its error is what
        // the precision itself costs this network.
        let simulated = |round: &dyn Fn(nvdla_compiler::ir::TensorId, &mut [f32])| {
            let mut x = input.clone();
            round(g.inputs[0], &mut x);
            nvdla_compiler::reference::run_with(&g, &[(g.inputs[0], x)], round)
                .map(|v| max_rel_err(&v[g.outputs[0].0], &want))
                .unwrap_or(f32::INFINITY)
        };
        let int8_cost = simulated(&|t, v| {
            if let Some(scale) = cal.get(t).filter(|s| *s > 0.0) {
                for x in v.iter_mut() {
                    *x = f32::from(nvdla_compiler::quant::q8(*x, scale)) * scale;
                }
            }
        });
        let fp16_cost = simulated(&|_, v| {
            for x in v.iter_mut() {
                *x = half::f16::from_f32(*x).to_f32();
            }
        });
        let mut line = format!("seed {seed:>4} ({} layers):", g.nodes.len());
        for config in CONFIGS {
            for precision in [Precision::Fp16, Precision::Int8] {
                // On the RTL: nv_small's int8 builds, by default and with -O.
                let base = config.split('+').next().unwrap_or(config);
                if rtl_mode() && (!on_rtl(base, precision) || config.ends_with("+C")) {
                    continue;
                }
                if config.ends_with("+C") && precision != Precision::Int8 {
                    continue;
                }
                let r = catch_unwind(AssertUnwindSafe(|| {
                    run(&g, config, precision, &cal, &input)
                }))
                .unwrap_or_else(|p| Err((Outcome::Fail, format!("panic: {}", panic_text(&*p)))));
                let (outcome, detail) = match r {
                    Ok(got) => {
                        let cost = match precision {
                            Precision::Int8 => int8_cost,
                            Precision::Fp16 => fp16_cost,
                        };
                        judge(precision, &got, &want, cost)
                    }
                    Err(e) => e,
                };
                let tag = format!("{config} {precision:?}");
                match outcome {
                    Outcome::Pass => {
                        pass += 1;
                        if precision == Precision::Int8 {
                            let per_channel = config.ends_with("+C");
                            cosines.push((per_channel, cosine_of(&detail)));
                        }
                    }
                    Outcome::Unsupported => {
                        // A build without the precision is no finding.
                        if !detail.contains("datapath") {
                            unsupported.push(format!("seed {seed} {tag}: {detail}"));
                        }
                    }
                    Outcome::Fail => failures.push(format!("seed {seed} {tag}: {detail}")),
                }
                let mark = match outcome {
                    Outcome::Pass => ".",
                    Outcome::Unsupported => "u",
                    Outcome::Fail => "F",
                };
                line.push_str(mark);
            }
            line.push(' ');
        }
        eprintln!("{line}");
        if failures
            .iter()
            .any(|f| f.starts_with(&format!("seed {seed} ")))
        {
            eprintln!("{text}");
        }
    }
    for (per_channel, label) in [(false, "int8"), (true, "int8 with scales per channel")] {
        let mut c: Vec<f64> = cosines
            .iter()
            .filter(|(p, _)| *p == per_channel)
            .map(|(_, c)| *c)
            .collect();
        c.sort_by(f64::total_cmp);
        if !c.is_empty() {
            eprintln!(
                "{label} cosine: smallest {:.4}, median {:.4}, mean {:.4}",
                c[0],
                c[c.len() / 2],
                c.iter().sum::<f64>() / c.len() as f64
            );
        }
    }
    eprintln!(
        "unsupported ({}):\n{}",
        unsupported.len(),
        unsupported.join("\n")
    );
    eprintln!(
        "{} convolutions in Winograd mode, {} poolings fused to their convolution, {} builds \
         with an image input, {} activations with scales per channel",
        WINOGRAD_LAYERS.load(std::sync::atomic::Ordering::Relaxed),
        FUSED_POOLINGS.load(std::sync::atomic::Ordering::Relaxed),
        IMAGE_INPUTS.load(std::sync::atomic::Ordering::Relaxed),
        CHANNEL_SCALED.load(std::sync::atomic::Ordering::Relaxed)
    );
    eprintln!(
        "{pass} passed, {} failed, {} unsupported",
        failures.len(),
        unsupported.len()
    );
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}

fn cosine_of(detail: &str) -> f64 {
    detail
        .strip_prefix("cosine ")
        .and_then(|v| v.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}
