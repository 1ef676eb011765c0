//! Built-in int8 calibration: the compiler's fp32 reference on sample images.
//!
//! Each image is decoded by the runtime's own code (`nvdla_umd::image`: a colour JPEG as
//! B, G, R, grey as one channel) and given to the network the way `nvdla-runtime --image`
//! feeds an int8 input: `q = round(pixel * 127 / 255)`, meaning `pixel / normalize`. Any
//! preprocessing compiled into the graph (`--mean`, `--scale`, `--channel-order`) runs as
//! part of it. The values every tensor takes over all images give its range.
//!
//! The default range is the 99.99th percentile of magnitudes: on small calibration sets
//! it equals the maximum for most tensors, and on large ones it ignores the few extreme
//! activations that would otherwise coarsen every other value's quantization step.
//! `max-abs` keeps every value representable.
//!
//! Tensor files (`.npy`, ONNX `TensorProto` `.pb`, read by the runtime's own code) are the
//! other kind of sample, for networks whose input is not a picture: each holds the input's
//! real values (NCHW, batch 1), and the input's scale comes from their range like every
//! other tensor's; feed the network with `nvdla-runtime --input F --input-scale S`, `S`
//! being the input's scale that `--write-calibtable` records. A directory holds images or
//! tensor files, not both.
//!
//! A network of several inputs (a recurrent model's state beside its signal) takes one
//! subdirectory per sample, holding a tensor file per input named after it (`h.npy`; a
//! `/` or `:` in the name as `_`) or by its position (`0.npy`, `1.npy`, ...).

use crate::error::{CompileError, Result};
use crate::ir::Graph;
use crate::quant::{Calibration, RangeCollector, RangeMethod};
use std::path::{Path, PathBuf};

/// The samples of `dir`, sorted by name: image files (`.jpg`, `.jpeg`, `.pgm`), tensor
/// files (`.npy`, `.pb`), or subdirectories of tensor files, one per sample of a network
/// with several inputs.
pub fn images_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|e| CompileError::Io {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                || p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                    matches!(
                        e.to_ascii_lowercase().as_str(),
                        "jpg" | "jpeg" | "pgm" | "npy" | "pb"
                    )
                })
        })
        .collect();
    v.sort();
    if v.is_empty() {
        return Err(CompileError::Option(format!(
            "--calibrate {}: no .jpg or .pgm images, .npy or .pb tensors or subdirectories \
             of them",
            dir.display()
        )));
    }
    Ok(v)
}

/// The values of every input of `g` for the sample directory `dir` (module docs): a
/// tensor file per input, named after it or by its position.
pub fn inputs_in(g: &Graph, dir: &Path) -> Result<Vec<Vec<f32>>> {
    g.inputs
        .iter()
        .enumerate()
        .map(|(k, &t)| {
            let name: String = g
                .tensor(t)
                .name
                .chars()
                .map(|c| {
                    if matches!(c, '/' | ':' | '\\') {
                        '_'
                    } else {
                        c
                    }
                })
                .collect();
            let file = [name.clone(), k.to_string()]
                .iter()
                .flat_map(|stem| ["npy", "pb"].map(|e| dir.join(format!("{stem}.{e}"))))
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    CompileError::Option(format!(
                        "{}: no tensor file for input {k} `{}` ({name}.npy or {k}.npy)",
                        dir.display(),
                        g.tensor(t).name
                    ))
                })?;
            tensor_for(g, t, &file)
        })
        .collect()
}

/// The network input (NCHW f32) for `image`, as the runtime feeds an int8 input of
/// `g`'s first input's shape, meaning `pixel / normalize`.
pub fn input_for(g: &Graph, image: &Path, normalize: f32) -> Result<Vec<f32>> {
    let input = first_input(g)?;
    let s = g.shape(input);
    let img = nvdla_umd::image::load_image(image).map_err(|e| CompileError::Parse {
        file: image.display().to_string(),
        reason: e.to_string(),
    })?;
    if img.width as usize != s.w || img.height as usize != s.h {
        return Err(CompileError::Option(format!(
            "{}: {}x{} image for an input of {}x{}",
            image.display(),
            img.width,
            img.height,
            s.w,
            s.h
        )));
    }
    let mut x = vec![0.0f32; s.c * s.h * s.w];
    let channels = (img.channels as usize).min(s.c);
    for c in 0..channels {
        for y in 0..s.h {
            for xx in 0..s.w {
                let p = f64::from(img.pixel(xx as u32, y as u32, c as u32));
                let q = (p * 127.0 / 255.0 + 0.5).floor();
                x[(c * s.h + y) * s.w + xx] = (q * 255.0 / 127.0 / f64::from(normalize)) as f32;
            }
        }
    }
    Ok(x)
}

/// Whether `path` names a tensor file (`.npy`, `.pb`) rather than an image.
pub fn is_tensor_file(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "npy" | "pb"))
}

/// The network input (NCHW f32) a tensor file holds: `g`'s first input's elements, as
/// `[1, C, H, W]`, `[C, H, W]` or any shape with that many elements.
pub fn tensor_input_for(g: &Graph, path: &Path) -> Result<Vec<f32>> {
    tensor_for(g, first_input(g)?, path)
}

/// The values of input `input` of `g` a tensor file holds (one item).
fn tensor_for(g: &Graph, input: crate::ir::TensorId, path: &Path) -> Result<Vec<f32>> {
    let s = g.shape(input);
    let t = nvdla_umd::tensor::read_tensor_file(path).map_err(|e| CompileError::Parse {
        file: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let want = s.c * s.h * s.w;
    if t.element_count() != want {
        return Err(CompileError::Option(format!(
            "{}: {} elements (shape {:?}) for an input of {}x{}x{}",
            path.display(),
            t.element_count(),
            t.shape(),
            s.c,
            s.h,
            s.w
        )));
    }
    let v = t.to_f32_vec();
    if v.iter().any(|x| !x.is_finite()) {
        return Err(CompileError::Option(format!(
            "{}: a calibration input holds NaN or infinity",
            path.display()
        )));
    }
    Ok(v)
}

/// The network's first input (the one samples feed).
fn first_input(g: &Graph) -> Result<crate::ir::TensorId> {
    g.inputs
        .first()
        .copied()
        .ok_or_else(|| CompileError::Network("the network has no input".into()))
}

/// Runs the reference on every sample (images or tensor files, see [`images_in`]) and
/// derives per-tensor scales with `method`, and per-channel ones too with `per_channel`.
pub fn from_images(
    g: &Graph,
    images: &[PathBuf],
    normalize: f32,
    method: RangeMethod,
    per_channel: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Calibration> {
    let input = first_input(g)?;
    let tensors = images.iter().filter(|p| is_tensor_file(p)).count();
    let dirs = images.iter().filter(|p| p.is_dir()).count();
    if (tensors != 0 || dirs != 0) && tensors + dirs != images.len() || tensors * dirs != 0 {
        return Err(CompileError::Option(
            "--calibrate: the directory mixes images, tensor files and sample directories".into(),
        ));
    }
    if dirs == 0 && g.inputs.len() > 1 {
        return Err(CompileError::Option(format!(
            "--calibrate: the network has {} inputs ({}); give one subdirectory per sample \
             holding a tensor file per input, named after it",
            g.inputs.len(),
            g.inputs
                .iter()
                .map(|&t| format!("`{}`", g.tensor(t).name))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let sample = |i: usize| {
        if dirs != 0 {
            inputs_in(g, &images[i])
        } else if tensors != 0 {
            tensor_input_for(g, &images[i]).map(|x| vec![x])
        } else {
            input_for(g, &images[i], normalize).map(|x| vec![x])
        }
    };
    let mut cal = collect(g, images.len(), &sample, method, per_channel, progress)?;
    // An image input's scale is what the runtime's conversion implies, not its range; a
    // tensor input's is its range, like any other tensor's.
    if tensors == 0 && dirs == 0 {
        cal.scales.insert(input, 255.0 / (127.0 * normalize));
    }
    Ok(cal)
}

/// Runs the reference on sample values of the network's first input (NCHW `f32`, one
/// array per sample: one item, or the whole batch) and derives per-tensor scales with `method`; the input's scale
/// is its range, as for tensor files.
pub fn from_arrays(
    g: &Graph,
    samples: &[Vec<f32>],
    method: RangeMethod,
    per_channel: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Calibration> {
    let input = first_input(g)?;
    let shape = g.shape(input);
    let item = shape.c * shape.h * shape.w;
    if samples.is_empty() {
        return Err(CompileError::Option("calibration: no samples".into()));
    }
    for (i, s) in samples.iter().enumerate() {
        if s.len() != shape.elements() && s.len() != item {
            return Err(CompileError::Option(format!(
                "calibration sample {i}: {} values, the input `{}` ({}) has {} ({item} per \
                 item)",
                s.len(),
                g.tensor(input).name,
                shape,
                shape.elements()
            )));
        }
        if s.iter().any(|x| !x.is_finite()) {
            return Err(CompileError::Option(format!(
                "calibration sample {i} holds NaN or infinity"
            )));
        }
    }
    if g.inputs.len() > 1 {
        return Err(CompileError::Option(format!(
            "calibration samples give the first input only; the network has {} (calibrate \
             with --calibrate DIR, one subdirectory per sample)",
            g.inputs.len()
        )));
    }
    collect(
        g,
        samples.len(),
        &|i| Ok(vec![samples[i].clone()]),
        method,
        per_channel,
        progress,
    )
}

/// Runs the reference on samples of every input of `g` by name (NCHW `f32`, one item or
/// the whole batch each) and derives the scales as [`from_arrays`] does.
pub fn from_named_arrays(
    g: &Graph,
    samples: &[Vec<(String, Vec<f32>)>],
    method: RangeMethod,
    per_channel: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Calibration> {
    if samples.is_empty() {
        return Err(CompileError::Option("calibration: no samples".into()));
    }
    let mut ordered = Vec::with_capacity(samples.len());
    for (i, sample) in samples.iter().enumerate() {
        if let Some((name, _)) = sample
            .iter()
            .find(|(n, _)| !g.inputs.iter().any(|&t| g.tensor(t).name == *n))
        {
            return Err(CompileError::Option(format!(
                "calibration sample {i}: the network has no input `{name}`"
            )));
        }
        let mut values = Vec::with_capacity(g.inputs.len());
        for &t in &g.inputs {
            let name = &g.tensor(t).name;
            let v = sample.iter().find(|(n, _)| n == name).ok_or_else(|| {
                CompileError::Option(format!(
                    "calibration sample {i}: no values for input `{name}`"
                ))
            })?;
            let s = g.shape(t);
            let item = s.c * s.h * s.w;
            if v.1.len() != s.elements() && v.1.len() != item {
                return Err(CompileError::Option(format!(
                    "calibration sample {i}: {} values for input `{name}` ({s}), which has {}",
                    v.1.len(),
                    s.elements()
                )));
            }
            if v.1.iter().any(|x| !x.is_finite()) {
                return Err(CompileError::Option(format!(
                    "calibration sample {i}: input `{name}` holds NaN or infinity"
                )));
            }
            values.push(v.1.clone());
        }
        ordered.push(values);
    }
    collect(
        g,
        ordered.len(),
        &|i| Ok(ordered[i].clone()),
        method,
        per_channel,
        progress,
    )
}

/// The range method of each tensor of `g`: `method`, except for the values on their way
/// to a network output, which keep their largest values (`max-abs`): what matters there
/// is rare (a detection's score among thousands of empty anchors, the top class's logit),
/// and a percentile would clip exactly that. Those are the outputs themselves and what
/// only CPU partitions that write an output read (logits reshaped or concatenated there).
fn range_methods(g: &Graph, method: RangeMethod) -> Vec<RangeMethod> {
    let writes_output = |n: &crate::ir::Node| n.outputs.iter().any(|o| g.outputs.contains(o));
    let mut readers: Vec<Vec<&crate::ir::Node>> = vec![Vec::new(); g.tensors.len()];
    for n in &g.nodes {
        for &i in &n.inputs {
            readers[i.0].push(n);
        }
    }
    (0..g.tensors.len())
        .map(|t| {
            let r = &readers[t];
            let near_output = g.outputs.contains(&crate::ir::TensorId(t))
                || (!r.is_empty()
                    && r.iter().all(|n| {
                        matches!(n.op, crate::ir::Op::CpuPartition(_)) && writes_output(n)
                    }));
            if near_output {
                RangeMethod::MaxAbs
            } else {
                method
            }
        })
        .collect()
}

/// The reference on samples `0..n` (`sample(i)` is every input's values, in the graph's
/// order), their values streamed into per-tensor range collectors.
fn collect(
    g: &Graph,
    n: usize,
    sample: &(dyn Fn(usize) -> Result<Vec<Vec<f32>>> + Sync),
    method: RangeMethod,
    per_channel: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Calibration> {
    let input = first_input(g)?;
    // A network of batch N runs a one-item sample as N copies of it, and its ranges come
    // from the first item's values (those of the sample alone: a percentile of N copies
    // would fall on another rank).
    let shape = g.shape(input);
    let batch_of = |xs: Vec<Vec<f32>>| {
        let one_item = xs
            .first()
            .is_some_and(|x| x.len() * shape.n == shape.elements());
        if shape.n > 1 && one_item {
            (xs.into_iter().map(|x| x.repeat(shape.n)).collect(), shape.n)
        } else {
            (xs, 1)
        }
    };
    // Each sample's values go into per-tensor range collectors and are dropped: memory does
    // not grow with the number of samples. The ranges are those of all values at once. As
    // many samples run at once as there are cores (the collectors' result does not depend
    // on the order values arrive in).
    use rayon::prelude::*;
    let mut ranges: Vec<Option<RangeCollector>> = vec![None; g.tensors.len()];
    // Per channel: the spatial tensors of more than one channel.
    let by_channel = |t: usize| {
        let s = g.shape(crate::ir::TensorId(t));
        per_channel && s.c > 1 && s.h * s.w > 1
    };
    let range_method = range_methods(g, method);
    let mut channel_ranges: Vec<Option<Vec<RangeCollector>>> = vec![None; g.tensors.len()];
    let indices: Vec<usize> = (0..n).collect();
    let mut done = 0;
    for chunk in indices.chunks(rayon::current_num_threads().max(1)) {
        let outs: Vec<Vec<Vec<f32>>> = chunk
            .par_iter()
            .map(|&i| {
                let (xs, copies) = batch_of(sample(i)?);
                let feed: Vec<_> = g.inputs.iter().copied().zip(xs).collect();
                let mut out = crate::reference::run(g, &feed)?;
                for v in &mut out {
                    v.truncate(v.len() / copies);
                }
                Ok(out)
            })
            .collect::<Result<_>>()?;
        for out in outs {
            ranges
                .par_iter_mut()
                .zip(channel_ranges.par_iter_mut())
                .zip(out)
                .enumerate()
                .for_each(|(t, ((r, cr), v))| {
                    if v.is_empty() {
                        return;
                    }
                    let m = range_method[t];
                    r.get_or_insert_with(|| RangeCollector::new(m, v.len() * n))
                        .add(&v);
                    if by_channel(t) {
                        let s = g.shape(crate::ir::TensorId(t));
                        let hw = s.h * s.w;
                        let cr = cr.get_or_insert_with(|| {
                            RangeCollector::per_channel(m, s.c, v.len() * n)
                        });
                        RangeCollector::add_planes(cr, &v, hw);
                    }
                });
            done += 1;
            progress(done, n);
        }
    }
    let mut cal = Calibration::from_ranges(&mut ranges);
    cal.add_channel_ranges(&mut channel_ranges);
    Ok(cal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CpuPartition, Node, Op, Shape};
    use std::sync::Arc;

    fn node(
        g: &mut Graph,
        op: Op,
        inputs: Vec<crate::ir::TensorId>,
        out: &str,
    ) -> crate::ir::TensorId {
        let t = g.add_tensor(out, Shape::new(1, 4, 2, 2));
        g.add_node(Node {
            name: out.into(),
            source_type: "test".into(),
            op,
            inputs,
            outputs: vec![t],
        });
        t
    }

    const DEFAULT: RangeMethod = RangeMethod::Percentile(99.99);

    #[test]
    fn values_on_their_way_to_an_output_keep_their_largest() {
        let mut g = Graph::default();
        let x = g.add_tensor("x", Shape::new(1, 4, 2, 2));
        g.inputs.push(x);
        let cpu = || Op::CpuPartition(Arc::new(CpuPartition::default()));
        let a = node(&mut g, Op::Flatten, vec![x], "a");
        // `a` feeds a partition that writes a hidden value; `b` one that writes the output.
        let hidden = node(&mut g, cpu(), vec![a], "hidden");
        let b = node(&mut g, Op::Flatten, vec![hidden], "b");
        let y = node(&mut g, cpu(), vec![b], "y");
        let z = node(&mut g, Op::Flatten, vec![b], "z");
        g.outputs = vec![y, z];
        let m = range_methods(&g, DEFAULT);
        let of = |t: crate::ir::TensorId| m[t.0];
        assert_eq!(of(a), DEFAULT);
        assert_eq!(of(hidden), DEFAULT);
        // `b` is also read by a hardware node: it keeps the default.
        assert_eq!(of(b), DEFAULT);
        assert_eq!(of(y), RangeMethod::MaxAbs);
        assert_eq!(of(z), RangeMethod::MaxAbs);
        g.outputs = vec![y];
        g.nodes.pop();
        let m = range_methods(&g, DEFAULT);
        assert_eq!(m[b.0], RangeMethod::MaxAbs);
    }
    #[test]
    fn a_network_of_two_inputs_calibrates_on_sample_directories() {
        use nvdla_umd::tensor::{write_npy, HostTensor};
        let mut g = Graph::default();
        let a = g.add_tensor("state/a:0", Shape::new(1, 4, 2, 2));
        let b = g.add_tensor("b", Shape::new(1, 4, 2, 2));
        g.inputs = vec![a, b];
        let sum = Op::Eltwise {
            kind: crate::ir::EltwiseKind::Sum,
            coeffs: Vec::new(),
        };
        let y = node(&mut g, sum, vec![a, b], "y");
        g.outputs = vec![y];
        let dir = std::env::temp_dir().join(format!("nvdla-cal-two-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let write = |sub: &str, file: &str, peak: f32| {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d).unwrap();
            let v: Vec<f32> = (0..16).map(|i| peak * (i as f32 - 7.5) / 7.5).collect();
            let t = HostTensor::from_f32(vec![1, 4, 2, 2], &v).unwrap();
            write_npy(&d.join(file), &t).unwrap();
        };
        // By name (`/` and `:` as `_`) in one sample, by position in the other.
        write("s0", "state_a_0.npy", 2.0);
        write("s0", "b.npy", 0.5);
        write("s1", "0.npy", 1.0);
        write("s1", "1.npy", 8.0);
        let samples = images_in(&dir).unwrap();
        assert_eq!(samples.len(), 2);
        let cal = from_images(
            &g,
            &samples,
            1.0,
            RangeMethod::MaxAbs,
            false,
            &mut |_, _| {},
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let scale = |t: crate::ir::TensorId| cal.scales[&t];
        assert!((scale(a) - 2.0 / 127.0).abs() < 1e-7, "{}", scale(a));
        assert!((scale(b) - 8.0 / 127.0).abs() < 1e-7, "{}", scale(b));
        assert!((scale(y) - 9.0 / 127.0).abs() < 1e-6, "{}", scale(y));
        // The same samples as arrays by name (Python's dicts), in any order.
        let ramp = |peak: f32| (0..16).map(|i| peak * (i as f32 - 7.5) / 7.5).collect();
        let named = vec![
            vec![
                ("b".to_string(), ramp(0.5)),
                ("state/a:0".to_string(), ramp(2.0)),
            ],
            vec![
                ("state/a:0".to_string(), ramp(1.0)),
                ("b".to_string(), ramp(8.0)),
            ],
        ];
        let by_name = from_named_arrays(&g, &named, RangeMethod::MaxAbs, false, &mut |_, _| {})
            .unwrap_or_else(|e| panic!("{e}"));
        for t in [a, b, y] {
            assert_eq!(by_name.scales[&t], cal.scales[&t]);
        }
        // A missing input names it; flat tensor files feed the first input only: refused.
        std::fs::remove_file(dir.join("s1/1.npy")).unwrap();
        let e = from_images(
            &g,
            &samples,
            1.0,
            RangeMethod::MaxAbs,
            false,
            &mut |_, _| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no tensor file for input 1 `b`"), "{e}");
        write("", "flat.npy", 1.0);
        let flat = vec![dir.join("flat.npy")];
        let e = from_images(&g, &flat, 1.0, RangeMethod::MaxAbs, false, &mut |_, _| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("the network has 2 inputs"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
