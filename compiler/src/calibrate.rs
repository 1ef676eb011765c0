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

use crate::error::{CompileError, Result};
use crate::ir::Graph;
use crate::quant::{Calibration, RangeMethod};
use std::path::{Path, PathBuf};

/// The image files (`.jpg`, `.jpeg`, `.pgm`) of `dir`, sorted by name.
pub fn images_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|e| CompileError::Io {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "jpg" | "jpeg" | "pgm"))
        })
        .collect();
    v.sort();
    if v.is_empty() {
        return Err(CompileError::Option(format!(
            "--calibrate {}: no .jpg or .pgm images",
            dir.display()
        )));
    }
    Ok(v)
}

/// The network input (NCHW f32) for `image`, as the runtime feeds an int8 input of
/// `g`'s first input's shape, meaning `pixel / normalize`.
pub fn input_for(g: &Graph, image: &Path, normalize: f32) -> Result<Vec<f32>> {
    let input = *g
        .inputs
        .first()
        .ok_or_else(|| CompileError::Network("the network has no input".into()))?;
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

/// Runs the reference on every image and derives per-tensor scales with `method`.
pub fn from_images(
    g: &Graph,
    images: &[PathBuf],
    normalize: f32,
    method: RangeMethod,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Calibration> {
    let input = g.inputs[0];
    let mut values: Vec<Vec<f32>> = vec![Vec::new(); g.tensors.len()];
    for (i, path) in images.iter().enumerate() {
        let x = input_for(g, path, normalize)?;
        let out = crate::reference::run(g, &[(input, x)])?;
        for (acc, v) in values.iter_mut().zip(out) {
            acc.extend(v);
        }
        progress(i + 1, images.len());
    }
    let mut cal = Calibration::from_activations(&values, method);
    // The input's scale is what the runtime's conversion implies, not its range.
    cal.scales.insert(input, 255.0 / (127.0 * normalize));
    Ok(cal)
}
