//! The per-layer comparison: run a network compiled with every activation kept (no
//! memory reuse) on the virtual platform, read each operation's output, and compare it
//! with the compiler's fp32 reference of the same tensor.
//!
//! The tool for debugging a quantized network: the first layer whose error jumps is where
//! the quantization (a scale, a saturation, a bias) goes wrong.

use crate::engine::{HwOp, SurfId, SurfKind, Surface};
use crate::error::{CompileError, Result};
use crate::target::{Precision, Target};
use crate::Compiled;
use nvdla_umd::runtime::{RunOptions, Runtime};
use nvdla_umd::Direction;
use std::path::Path;

/// One operation's output against the reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The source layers the operation implements.
    pub layers: String,
    /// The engine.
    pub engine: String,
    /// The tensor compared.
    pub tensor: String,
    /// `C x H x W`.
    pub shape: [u32; 3],
    /// Largest |hardware - reference|.
    pub max_abs_error: f64,
    /// Largest |reference|.
    pub max_abs_reference: f64,
    /// Cosine similarity of the two (1 = same direction).
    pub cosine: f64,
    /// Signal-to-noise ratio in dB: `10 log10(sum ref^2 / sum (hw - ref)^2)`.
    pub snr_db: f64,
}

/// Reads surface `s` (NCxHWx, or an image of 4 components per pixel) from `bytes` (its
/// memory) as NCHW f32.
fn read_surface(s: &Surface, bytes: &[u8], t: &Target) -> Result<Vec<f32>> {
    read_surface_scaled(s, bytes, t, None)
}

/// [`read_surface`] with int8 scales per channel (`channel_scales`) instead of the
/// surface's one.
fn read_surface_scaled(
    s: &Surface,
    bytes: &[u8],
    t: &Target,
    channel_scales: Option<&[f32]>,
) -> Result<Vec<f32>> {
    // The atom of the surface's own precision (a half-precision surface in an int8
    // network: what only the CPU reads or writes); integers in their own atoms.
    let (bpe, atom) = if s.integer {
        (
            crate::engine::INTEGER_BYTES as usize,
            crate::engine::INTEGER_ATOM as usize,
        )
    } else {
        (
            s.precision.bytes() as usize,
            t.atom_of(s.precision) as usize,
        )
    };
    let cpa = atom / bpe;
    let (c, h, w) = (s.c as usize, s.h as usize, s.w as usize);
    let mut out = vec![0.0f32; c * h * w];
    for ch in 0..c {
        for y in 0..h {
            for x in 0..w {
                let o = if s.pixel {
                    let pixel = crate::lower::image::COMPONENTS as usize * bpe;
                    s.offset as usize + y * s.line_stride as usize + x * pixel + ch * bpe
                } else {
                    s.offset as usize
                        + (ch / cpa) * s.surf_stride as usize
                        + y * s.line_stride as usize
                        + x * atom
                        + (ch % cpa) * bpe
                };
                let b = bytes.get(o..o + bpe).ok_or_else(|| {
                    CompileError::Network(format!("surface `{}` lies outside its memory", s.name))
                })?;
                out[(ch * h + y) * w + x] = match s.precision {
                    _ if s.integer => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                    Precision::Fp16 => {
                        half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32()
                    }
                    Precision::Int8 => {
                        f32::from(b[0] as i8) * channel_scales.map_or(s.scale, |v| v[ch])
                    }
                };
            }
        }
    }
    Ok(out)
}

fn stats(hw: &[f32], reference: &[f32]) -> (f64, f64, f64, f64) {
    let (mut dot, mut nh, mut nr, mut noise, mut max_err, mut max_ref) =
        (0.0, 0.0, 0.0, 0.0, 0.0f64, 0.0f64);
    for (&a, &b) in hw.iter().zip(reference) {
        let (a, b) = (f64::from(a), f64::from(b));
        dot += a * b;
        nh += a * a;
        nr += b * b;
        noise += (a - b) * (a - b);
        max_err = max_err.max((a - b).abs());
        max_ref = max_ref.max(b.abs());
    }
    let cosine = if nh > 0.0 && nr > 0.0 {
        dot / (nh.sqrt() * nr.sqrt())
    } else if nh == nr {
        1.0
    } else {
        0.0
    };
    let snr = if noise > 0.0 {
        10.0 * (nr / noise).log10()
    } else {
        f64::INFINITY
    };
    (max_err, max_ref, cosine, snr)
}

/// Runs `c` (compiled with [`crate::Options::keep_activations`]) on `device` (the VP, or the
/// RTL) of `t`'s configuration with `image` fed as `nvdla-runtime --image` feeds it
/// (`normalize`: its `--normalize`), or, for a tensor file (`.npy`, `.pb`), as
/// `nvdla-runtime --input` feeds it, and compares every operation's output with the
/// reference.
pub fn compare(
    c: &Compiled,
    t: &Target,
    image: &Path,
    normalize: u8,
    device: &nvdla_umd::DeviceKind,
) -> Result<Vec<Row>> {
    let dev_err =
        |e: String| CompileError::Network(format!("running on the virtual platform: {e}"));
    let cfg = nvdla_umd::HwConfig::ALL
        .into_iter()
        .find(|v| v.name() == t.hw.name)
        .ok_or_else(|| dev_err(format!("no model of {}", t.hw.name)))?;
    let mut dev = nvdla_umd::open_device(device, cfg).map_err(|e| dev_err(e.to_string()))?;
    let dev = dev.as_mut();
    let mut rt = Runtime::load(dev, &c.loadable).map_err(|e| dev_err(e.to_string()))?;
    let result = (|| {
        let ti = rt
            .tensor(Direction::Input, 0)
            .map_err(|e| dev_err(e.to_string()))?
            .clone();
        let parse = |reason: String| CompileError::Parse {
            file: image.display().to_string(),
            reason,
        };
        let data = if crate::calibrate::is_tensor_file(image) {
            // A tensor of the input's real values, fed as `nvdla-runtime --input` feeds
            // it (int8: quantized with the scale the loadable records).
            let host =
                nvdla_umd::tensor::read_tensor_file(image).map_err(|e| parse(e.to_string()))?;
            let scale = (ti.data_type != nvdla_loadable::DataType::HALF)
                .then(|| rt.recorded_scale(Direction::Input, 0))
                .flatten();
            nvdla_umd::tensor::host_to_input(&host, &ti, scale).map_err(|e| parse(e.to_string()))?
        } else {
            let img = nvdla_umd::image::load_image(image).map_err(|e| parse(e.to_string()))?;
            let opts = nvdla_umd::image::ImageOptions {
                normalize,
                ..Default::default()
            };
            nvdla_umd::image::image_to_tensor(&img, &ti, &opts)
                .map_err(|e| dev_err(e.to_string()))?
        };
        rt.write_input(dev, 0, &data)
            .map_err(|e| dev_err(e.to_string()))?;
        rt.run(dev, &RunOptions::default(), &mut |_| {})
            .map_err(|e| dev_err(e.to_string()))?;
        // The memories: pool (index after the weights, see emit), inputs, outputs.
        let p = &c.program;
        let pool_mem = usize::from(!p.blobs.is_empty());
        let pool = if p.pool_size > 0 {
            let h = rt
                .buffer(pool_mem)
                .ok_or_else(|| dev_err("no pool buffer".into()))?;
            dev.map_buffer(h)
                .map_err(|e| dev_err(e.to_string()))?
                .to_vec()
        } else {
            Vec::new()
        };
        let input_bytes = rt
            .read_tensor(dev, Direction::Input, 0)
            .map_err(|e| dev_err(e.to_string()))?;
        let mut outputs = Vec::new();
        for i in 0..p.outputs.len() {
            outputs.push(rt.read_output(dev, i).map_err(|e| dev_err(e.to_string()))?);
        }
        let mem = Memories {
            pool,
            input: input_bytes,
            outputs,
        };
        // The reference sees what the hardware was fed.
        let input_surface = p.surface(p.inputs[0]);
        let x = read_surface(input_surface, mem.of(p, input_surface), t)?;
        let g = &c.graph;
        let values = crate::reference::run(g, &[(g.inputs[0], x)])?;
        // Each tensor is compared once it is whole: after the last operation writing it
        // (or a part of it: the strips of a split convolution, the channels of a
        // concatenation), labelled with every layer that wrote it.
        let targets: Vec<Option<(SurfId, usize)>> =
            p.ops.iter().map(|op| whole_tensor(op, p, g)).collect();
        let mut rows = Vec::new();
        for (i, op) in p.ops.iter().enumerate() {
            let Some((sid, tid)) = targets[i] else {
                continue;
            };
            if targets[i + 1..].iter().any(|t| t.map(|t| t.0) == Some(sid)) {
                continue;
            }
            let mut layers: Vec<String> = Vec::new();
            for (o, t) in p.ops.iter().zip(&targets) {
                if t.map(|t| t.0) != Some(sid) {
                    continue;
                }
                for l in &o.layers {
                    // Strips of one layer are named `layer@first-line`.
                    let base = l.split_once('@').map_or(l.as_str(), |(b, _)| b);
                    if !layers.iter().any(|x| x == base) {
                        layers.push(base.to_string());
                    }
                }
            }
            rows.extend(row(op, &layers, sid, tid, p, &values, &mem, t)?);
        }
        Ok(rows)
    })();
    rt.release(dev);
    result
}

/// The memories read back after the run.
struct Memories {
    pool: Vec<u8>,
    input: Vec<u8>,
    outputs: Vec<Vec<u8>>,
}

impl Memories {
    /// The bytes of the memory holding `s`.
    fn of(&self, p: &crate::engine::Program, s: &Surface) -> &[u8] {
        let mut root = s;
        while let SurfKind::View { parent, .. } = root.kind {
            root = p.surface(parent);
        }
        match root.kind {
            SurfKind::Input(_) => &self.input,
            SurfKind::Output(i) => self.outputs.get(i).map_or(&[][..], |v| &v[..]),
            _ => &self.pool,
        }
    }
}

/// The surface holding a whole graph tensor that `op` writes (its first output, or
/// the view of one it writes into) and the tensor's index.
fn whole_tensor(
    op: &HwOp,
    p: &crate::engine::Program,
    g: &crate::ir::Graph,
) -> Option<(SurfId, usize)> {
    // A CPU partition is compared on its first output.
    let mut sid = op.writes()[0];
    loop {
        let s = p.surface(sid);
        if let Some(tid) = g.tensors.iter().position(|t| t.name == s.name) {
            let shape = g.tensors[tid].shape;
            if (shape.c, shape.h, shape.w) == (s.c as usize, s.h as usize, s.w as usize) {
                return Some((sid, tid));
            }
        }
        // Operations inside a lowering (deconvolution phases, row chunks, strips) write
        // views with no tensor of their own: look at what they are part of.
        match s.kind {
            SurfKind::View { parent, .. } => sid = parent,
            _ => return None,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn row(
    op: &HwOp,
    layers: &[String],
    sid: SurfId,
    tid: usize,
    p: &crate::engine::Program,
    values: &[Vec<f32>],
    mem: &Memories,
    t: &Target,
) -> Result<Option<Row>> {
    let s = p.surface(sid);
    let hw = match read_surface_scaled(s, mem.of(p, s), t, p.channel_scales(sid).as_deref()) {
        Ok(v) => v,
        // A CPU partition writing a network output writes it in the host's layout, not
        // as a surface: nothing to compare there.
        Err(_) if op.engine() == crate::engine::Engine::Cpu => return Ok(None),
        Err(e) => return Err(e),
    };
    let (max_abs_error, max_abs_reference, cosine, snr_db) = stats(&hw, &values[tid]);
    Ok(Some(Row {
        layers: layers.join("+"),
        engine: format!("{:?}", op.engine()),
        tensor: s.name.clone(),
        shape: [s.c, s.h, s.w],
        max_abs_error,
        max_abs_reference,
        cosine,
        snr_db,
    }))
}

/// The rows as a text table.
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<28} {:<6} {:<14} {:>12} {:>12} {:>9} {:>8}\n",
        "layer", "engine", "shape", "max |err|", "max |ref|", "cosine", "SNR dB"
    );
    for r in rows {
        out += &format!(
            "{:<28} {:<6} {:<14} {:>12.6} {:>12.6} {:>9.6} {:>8.1}\n",
            r.layers,
            r.engine,
            format!("{}x{}x{}", r.shape[0], r.shape[1], r.shape[2]),
            r.max_abs_error,
            r.max_abs_reference,
            r.cosine,
            r.snr_db
        );
    }
    out
}

/// The rows as JSON.
pub fn json(rows: &[Row]) -> String {
    let v: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "layers": r.layers, "engine": r.engine, "tensor": r.tensor,
                "shape": r.shape, "max_abs_error": r.max_abs_error,
                "max_abs_reference": r.max_abs_reference, "cosine": r.cosine,
                "snr_db": if r.snr_db.is_finite() { serde_json::json!(r.snr_db) } else { serde_json::json!(null) },
            })
        })
        .collect();
    serde_json::to_string_pretty(&v).unwrap_or_default()
}
