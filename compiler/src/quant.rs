//! int8 quantization: per-tensor scales (calibration) and the fixed-point encodings the
//! hardware's converters take.
//!
//! Every int8 tensor is symmetric: `real = q * scale`, `q` in -128..=127 (NVDLA int8 has no
//! zero point). Scales come from a calibration table (NVIDIA's JSON or a TensorRT cache,
//! [`Calibration::from_json`], [`Calibration::from_trt_cache`]) or from running the
//! compiler's fp32 reference on sample inputs ([`Calibration::from_activations`]).

use crate::error::{CompileError, Result};
use crate::ir::{Graph, TensorId};
use std::collections::HashMap;

/// Per-tensor scales, and per-channel ones where they were collected.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Calibration {
    /// `real = q * scale` for each calibrated tensor.
    pub scales: HashMap<TensorId, f32>,
    /// Per-channel scales (`real = q * scale[c]`) of the tensors calibrated channel by
    /// channel (`--activation-scales per-channel`): the lowering gives them to the
    /// activations whose producer and readers can take them
    /// ([`crate::lower`]'s channel scales), the others keep [`Calibration::scales`].
    pub channels: HashMap<TensorId, Vec<f32>>,
}

/// How ranges are derived from sample activations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RangeMethod {
    /// The largest magnitude seen.
    MaxAbs,
    /// The given percentile of magnitudes (e.g. 99.99), clipping rare outliers.
    Percentile(f32),
}

/// The names a calibration table may use for tensor `t`: its producing layer's name first
/// (NVIDIA's JSON is keyed by layer: `ip1` is the fully connected output before an
/// in-place ReLU, `relu1` after), then the tensor's own name, then the name without the
/// suffixes our front end and preprocessing add (`ip1@ip1`, `data#preprocessed`).
fn keys(g: &Graph, t: TensorId) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(n) = g.producer(t) {
        v.push(g.nodes[n.0].name.clone());
    }
    let name = &g.tensor(t).name;
    v.push(name.clone());
    for sep in ['@', '#'] {
        if let Some((base, _)) = name.split_once(sep) {
            v.push(base.to_string());
        }
    }
    v
}

impl Calibration {
    /// The scale of `t`, if calibrated.
    pub fn get(&self, t: TensorId) -> Option<f32> {
        self.scales.get(&t).copied()
    }

    /// Reads NVIDIA's `--calibtable` JSON: `{"<layer or tensor>": {"scale": s, "min": a,
    /// "max": b, "offset": 0}}`. A `scale` of 0 with `min`/`max` set takes
    /// `max(|min|, |max|) / 127`. Keys that match nothing are ignored (a table may cover
    /// layers our graph passes removed).
    pub fn from_json(g: &Graph, text: &str) -> Result<Self> {
        let bad = |m: String| CompileError::Parse {
            file: "calibration table".into(),
            reason: m,
        };
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad("the top level is not an object".into()))?;
        let mut table = HashMap::new();
        for (k, e) in obj {
            let f = |n: &str| e.get(n).and_then(serde_json::Value::as_f64);
            let scale = match (f("scale"), f("min"), f("max")) {
                (Some(s), _, _) if s > 0.0 => s,
                (_, Some(lo), Some(hi)) if lo.abs().max(hi.abs()) > 0.0 => {
                    lo.abs().max(hi.abs()) / 127.0
                }
                _ => {
                    return Err(bad(format!(
                        "entry `{k}` has neither a positive `scale` nor a `min`/`max` range"
                    )))
                }
            };
            if !scale.is_finite() {
                return Err(bad(format!("entry `{k}`: scale {scale} is not finite")));
            }
            table.insert(k.clone(), scale as f32);
        }
        Ok(Self::from_names(g, &table))
    }

    /// Reads a TensorRT calibration cache: a `TRT-...` header line, then `name: <float32 as
    /// big-endian hex>` lines. Names are tensor (blob) names; `(Unnamed Layer* N) [...]
    /// _output` names the output of the N-th layer as TensorRT's Caffe parser numbers them
    /// (one per layer, in order, which is our node order).
    pub fn from_trt_cache(g: &Graph, text: &str) -> Result<Self> {
        let bad = |line: usize, m: String| CompileError::Parse {
            file: "TensorRT calibration cache".into(),
            reason: format!("line {line}: {m}"),
        };
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, h)) if h.starts_with("TRT-") => {}
            _ => return Err(bad(1, "expected a `TRT-...` header".into())),
        }
        let mut table = HashMap::new();
        let mut unnamed = HashMap::new();
        for (i, line) in lines {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let (name, hex) = line
                .rsplit_once(':')
                .ok_or_else(|| bad(i + 1, "expected `name: hex`".into()))?;
            let bits = u32::from_str_radix(hex.trim(), 16).map_err(|_| {
                bad(
                    i + 1,
                    format!("`{}` is not a hexadecimal float", hex.trim()),
                )
            })?;
            let scale = f32::from_bits(bits);
            if !(scale.is_finite() && scale > 0.0) {
                return Err(bad(i + 1, format!("scale {scale} is not positive")));
            }
            if let Some(rest) = name.strip_prefix("(Unnamed Layer* ") {
                if let Some(n) = rest.split(')').next().and_then(|n| n.parse::<usize>().ok()) {
                    unnamed.insert(n, scale);
                }
                continue;
            }
            table.insert(name.to_string(), scale);
        }
        // Tensor names first (the cache's names are blobs), then unnamed layers.
        let mut scales = HashMap::new();
        for (i, t) in g.tensors.iter().enumerate() {
            if let Some(&s) = table.get(&t.name) {
                scales.insert(TensorId(i), s);
            }
        }
        for (n, s) in unnamed {
            if let Some(node) = g.nodes.get(n) {
                for &o in &node.outputs {
                    scales.insert(o, s);
                }
            }
        }
        Ok(Self {
            scales,
            ..Self::default()
        })
    }

    /// A table keyed by layer or tensor names onto the graph's tensors.
    pub fn from_names(g: &Graph, table: &HashMap<String, f32>) -> Self {
        let mut scales = HashMap::new();
        for i in 0..g.tensors.len() {
            let t = TensorId(i);
            if let Some(s) = keys(g, t).iter().find_map(|k| table.get(k)) {
                scales.insert(t, *s);
            }
        }
        Self {
            scales,
            ..Self::default()
        }
    }

    /// Scales from collected ranges (`None`: a tensor without values), as
    /// [`Calibration::from_activations`] derives them.
    pub fn from_ranges(ranges: &mut [Option<RangeCollector>]) -> Self {
        let mut scales = HashMap::new();
        for (i, r) in ranges.iter_mut().enumerate() {
            let Some(r) = r else { continue };
            let amax = r.range();
            let amax = if amax > 0.0 && amax.is_finite() {
                amax
            } else {
                1.0
            };
            scales.insert(TensorId(i), amax / 127.0);
        }
        Self {
            scales,
            ..Self::default()
        }
    }

    /// Adds per-channel scales from per-channel ranges (`None`: a tensor not collected
    /// by channel). A channel without values, or all zero, takes the tensor's scale.
    pub fn add_channel_ranges(&mut self, ranges: &mut [Option<Vec<RangeCollector>>]) {
        for (i, r) in ranges.iter_mut().enumerate() {
            let (Some(r), Some(&whole)) = (r, self.scales.get(&TensorId(i))) else {
                continue;
            };
            let v: Vec<f32> = r
                .iter_mut()
                .map(|c| {
                    let amax = c.range();
                    if amax > 0.0 && amax.is_finite() {
                        amax / 127.0
                    } else {
                        whole
                    }
                })
                .collect();
            self.channels.insert(TensorId(i), v);
        }
    }

    /// Scales from sample activations: `values[t]` holds every value tensor `t` took over
    /// the samples (the reference's outputs, concatenated).
    pub fn from_activations(values: &[Vec<f32>], method: RangeMethod) -> Self {
        let mut ranges: Vec<Option<RangeCollector>> = values
            .iter()
            .map(|v| {
                (!v.is_empty()).then(|| {
                    let mut c = RangeCollector::new(method, v.len());
                    c.add(v);
                    c
                })
            })
            .collect();
        Self::from_ranges(&mut ranges)
    }

    /// Adds per-channel scales from sample activations (`values[t]` as for
    /// [`Calibration::from_activations`], NCHW of `g`'s shape for tensor `t`), for the
    /// spatial tensors of more than one channel, as `--activation-scales per-channel`
    /// collects them.
    pub fn add_channel_activations(&mut self, g: &Graph, values: &[Vec<f32>], method: RangeMethod) {
        let mut ranges: Vec<Option<Vec<RangeCollector>>> = values
            .iter()
            .enumerate()
            .map(|(t, v)| {
                let s = g.shape(TensorId(t));
                let hw = s.h * s.w;
                if s.c < 2 || hw < 2 || v.is_empty() || v.len() % (s.c * hw) != 0 {
                    return None;
                }
                let mut r = RangeCollector::per_channel(method, s.c, v.len());
                RangeCollector::add_planes(&mut r, v, hw);
                Some(r)
            })
            .collect();
        self.add_channel_ranges(&mut ranges);
    }

    /// The table in NVIDIA's JSON format, keyed by tensor name (layer name for tensors our
    /// front end renamed), readable by [`Calibration::from_json`] and upstream's compiler.
    pub fn to_json(&self, g: &Graph) -> String {
        let mut entries: Vec<(String, f32)> = self
            .scales
            .iter()
            .map(|(t, s)| {
                let key = g
                    .producer(*t)
                    .filter(|_| g.tensor(*t).name.contains('@'))
                    .map(|n| g.nodes[n.0].name.clone())
                    .unwrap_or_else(|| g.tensor(*t).name.clone());
                (key, *s)
            })
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut map = serde_json::Map::new();
        for (k, s) in entries {
            map.insert(
                k,
                serde_json::json!({"scale": s, "min": 0, "max": 0, "offset": 0}),
            );
        }
        serde_json::to_string_pretty(&serde_json::Value::Object(map)).unwrap_or_default()
    }
}

/// The `p`-th percentile (0..=100) of `|v|`.
/// The range of one tensor's values over samples seen one at a time, without keeping
/// them: the largest magnitude, the count of finite values and the largest few finite
/// magnitudes, enough to give [`percentile_abs`] of all of them exactly. For percentile
/// `p` of `n` values the answer is the `n - k`-th largest, `k = round(p/100 · (n-1))`,
/// and `n - k <= (1 - p/100)(n - 1) + 1.5`: keeping that many of the largest (for the
/// number of values the samples will give in all) is enough.
#[derive(Debug, Clone)]
pub struct RangeCollector {
    method: RangeMethod,
    /// Finite values seen.
    finite: usize,
    /// Largest magnitude seen (max-abs).
    max: f32,
    /// Candidates for the top `keep` magnitudes (at most `2 · keep`, pruned in place).
    top: Vec<f32>,
    /// How many of the largest magnitudes the percentile may need.
    keep: usize,
    /// Candidates below this magnitude are not among the `keep` largest.
    floor: f32,
}

impl RangeCollector {
    /// A collector for a tensor that will take `total` values in all (its size times the
    /// number of samples).
    pub fn new(method: RangeMethod, total: usize) -> Self {
        let keep = match method {
            RangeMethod::MaxAbs => 0,
            RangeMethod::Percentile(p) => {
                let tail = (1.0 - f64::from(p) / 100.0).max(0.0) * total.saturating_sub(1) as f64;
                (tail.ceil() as usize + 2).min(total.max(1))
            }
        };
        Self {
            method,
            finite: 0,
            max: 0.0,
            top: Vec::new(),
            keep,
            floor: 0.0,
        }
    }

    /// Collectors for the `c` channels of a tensor that will take `total` values in all.
    pub fn per_channel(method: RangeMethod, c: usize, total: usize) -> Vec<Self> {
        vec![Self::new(method, total / c.max(1)); c]
    }

    /// Adds NCHW values (planes of `hw` values, channel after channel, item after item)
    /// to per-channel collectors.
    pub fn add_planes(channels: &mut [Self], values: &[f32], hw: usize) {
        let c = channels.len().max(1);
        for (i, plane) in values.chunks(hw.max(1)).enumerate() {
            channels[i % c].add(plane);
        }
    }

    /// Adds one sample's values.
    pub fn add(&mut self, values: &[f32]) {
        // Magnitudes as bit patterns, which order as the values do (NaN above infinity):
        // the largest, the finite count and the candidates of a chunk in one loop that
        // vectorises; the candidates (few: the floor rises as they come) taken after.
        const INF: u32 = 0x7f80_0000;
        for chunk in values.chunks(4096) {
            let floor = if self.keep > 0 {
                self.floor.to_bits()
            } else {
                u32::MAX
            };
            let (mut max, mut finite, mut candidates) = (0u32, 0u32, 0u32);
            for &x in chunk {
                let b = x.to_bits() & 0x7fff_ffff;
                let fin = b < INF;
                max = max.max(if b <= INF { b } else { 0 });
                finite += u32::from(fin);
                candidates += u32::from(fin && b >= floor);
            }
            // NaN is no magnitude; infinity is the largest.
            self.max = self.max.max(f32::from_bits(max));
            self.finite += finite as usize;
            if candidates == 0 {
                continue;
            }
            for &x in chunk {
                let a = x.abs();
                if a.is_finite() && a >= self.floor {
                    self.top.push(a);
                    if self.top.len() >= 2 * self.keep.max(64) {
                        self.prune();
                    }
                }
            }
        }
    }

    /// Keeps the `keep` largest candidates; the smallest of them is the new floor.
    fn prune(&mut self) {
        if self.top.len() > self.keep {
            let cut = self.top.len() - self.keep;
            self.top.select_nth_unstable_by(cut, f32::total_cmp);
            self.top.drain(..cut);
        }
        self.floor = self.top.iter().copied().fold(f32::INFINITY, f32::min);
    }

    /// The tensor's range: as [`percentile_abs`] or the max-abs of every value added.
    pub fn range(&mut self) -> f32 {
        match self.method {
            RangeMethod::MaxAbs => self.max,
            RangeMethod::Percentile(p) => {
                let n = self.finite;
                if n == 0 {
                    return 0.0;
                }
                let k = (((p / 100.0) * (n - 1) as f32).round() as usize).min(n - 1);
                // The (n - k)-th largest.
                let rank = n - k;
                self.prune();
                if rank > self.top.len() {
                    // More values than announced: not reachable through [`Self::new`]'s
                    // total; fall back to the smallest kept.
                    return self.top.iter().copied().fold(0.0, f32::max).min(self.floor);
                }
                self.top.sort_unstable_by(|a, b| b.total_cmp(a));
                self.top[rank - 1]
            }
        }
    }
}

/// The percentile of magnitudes by sorting every value: the definition
/// [`RangeCollector`] reproduces.
#[cfg(test)]
fn percentile_abs(v: &[f32], p: f32) -> f32 {
    let mut a: Vec<f32> = v
        .iter()
        .map(|x| x.abs())
        .filter(|x| x.is_finite())
        .collect();
    if a.is_empty() {
        return 0.0;
    }
    let k = (((p / 100.0) * (a.len() - 1) as f32).round() as usize).min(a.len() - 1);
    let (_, x, _) = a.select_nth_unstable_by(k, f32::total_cmp);
    *x
}

/// `r ~= m * 2^-shift` with `|m| <= max_m` and `shift <= max_shift`, as precise as
/// those allow (the largest shift that keeps `m` in range). Returns `(m, shift)`.
pub fn fixed_point(r: f64, max_m: i64, max_shift: u32) -> (i64, u32) {
    if r == 0.0 || !r.is_finite() {
        return (0, 0);
    }
    let mut shift = 0u32;
    while shift < max_shift && (r.abs() * 2f64.powi(shift as i32 + 1)).round() <= max_m as f64 {
        shift += 1;
    }
    let m = (r * 2f64.powi(shift as i32)).round() as i64;
    (m.clamp(-max_m, max_m), shift)
}

/// A common shift for several ratios: the largest shift that keeps every `|m| <= max_m`.
/// Returns the multipliers and the shift.
pub fn fixed_point_common(r: &[f64], max_m: i64, max_shift: u32) -> (Vec<i64>, u32) {
    let peak = r.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let (_, shift) = fixed_point(peak, max_m, max_shift);
    let m = r
        .iter()
        .map(|x| ((x * 2f64.powi(shift as i32)).round() as i64).clamp(-max_m, max_m))
        .collect();
    (m, shift)
}

/// Quantizes `v` with `scale` to int8.
pub fn q8(v: f32, scale: f32) -> i8 {
    (v / scale).round().clamp(-128.0, 127.0) as i8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Shape;

    #[test]
    fn fixed_point_is_precise_and_in_range() {
        let (m, s) = fixed_point(0.001234, 32767, 31);
        assert!(m <= 32767 && m > 16383, "{m}");
        assert!((m as f64 / 2f64.powi(s as i32) - 0.001234).abs() < 1e-7);
        assert_eq!(fixed_point(0.0, 32767, 31), (0, 0));
        let (m, s) = fixed_point(-3.0, 32767, 31);
        assert_eq!(m as f64 / 2f64.powi(s as i32), -3.0);
        let (ms, s) = fixed_point_common(&[0.5, 0.001], 32767, 31);
        assert_eq!(s, 15);
        assert_eq!(ms, [16384, 33]);
    }

    #[test]
    fn trt_cache_matches_json_scales() {
        let mut g = Graph::default();
        let x = g.add_tensor("data", Shape::new(1, 1, 1, 1));
        g.inputs.push(x);
        let json = r#"{"data": {"scale": 0.007845180109143257, "min": 0, "max": 0, "offset": 0}}"#;
        let a = Calibration::from_json(&g, json).unwrap();
        let b = Calibration::from_trt_cache(&g, "TRT-7202-EntropyCalibration2\ndata: 3c008912\n")
            .unwrap();
        assert_eq!(a.get(x), b.get(x));
        assert!(Calibration::from_trt_cache(&g, "nonsense").is_err());
        assert!(Calibration::from_json(&g, "{\"data\": {}}").is_err());
    }

    #[test]
    fn collector_gives_the_percentile_of_everything_it_saw() {
        let mut seed = 3u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((seed >> 33) as f32 / 2f32.powi(31) - 0.5) * 8.0
        };
        for (n, parts, p) in [
            (10_000, 7, 99.99),
            (30_001, 3, 99.9),
            (5, 2, 99.99),
            (1000, 10, 50.0),
        ] {
            // NaN and infinities among them: no magnitude, and the largest (not finite).
            let all: Vec<f32> = (0..n)
                .map(|i| match i % 997 {
                    13 => f32::NAN,
                    14 => -f32::NAN,
                    500 if n > 10_000 => f32::NEG_INFINITY,
                    _ => next(),
                })
                .collect();
            for method in [RangeMethod::Percentile(p), RangeMethod::MaxAbs] {
                let mut c = RangeCollector::new(method, n);
                for chunk in all.chunks(n.div_ceil(parts)) {
                    c.add(chunk);
                }
                let want = match method {
                    RangeMethod::MaxAbs => all.iter().fold(0.0f32, |m, x| m.max(x.abs())),
                    RangeMethod::Percentile(p) => percentile_abs(&all, p),
                };
                assert_eq!(
                    c.range().to_bits(),
                    want.to_bits(),
                    "{n} {parts} {method:?}"
                );
            }
        }
    }

    #[test]
    fn percentile_clips_outliers() {
        let mut v = vec![1.0f32; 9999];
        v.push(100.0);
        assert_eq!(percentile_abs(&v, 99.9), 1.0);
        assert_eq!(percentile_abs(&v, 100.0), 100.0);
    }
}
