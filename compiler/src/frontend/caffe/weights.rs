//! Trained parameters from the `.caffemodel`, matched to prototxt layers by name.

use super::params::Ctx;
use super::proto::{BlobProto, NetParameter};
use crate::error::Result;
use std::cell::RefCell;
use std::collections::HashMap;

/// The caffemodel's parameter blobs by layer name (a later layer of the same name wins, as
/// in Caffe's `CopyTrainedLayersFrom`).
pub(crate) struct TrainedWeights<'a> {
    by_name: HashMap<&'a str, &'a [BlobProto]>,
    /// Set by [`TrainedWeights::recorder`]: [`take`](Self::take) records what each layer
    /// asks for instead of reading blobs.
    requests: Option<RefCell<Vec<Requested>>>,
}

/// The parameter blobs one layer asked for (in a [`TrainedWeights::recorder`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Requested {
    /// The layer's `name` field (weights are matched by it).
    pub key: String,
    /// The name for messages (the position of an unnamed layer).
    pub display: String,
    /// The type as the prototxt spells it.
    pub ty: String,
    /// `(what, Caffe shape)` of every blob, in order.
    pub blobs: Vec<(String, Vec<usize>)>,
}

/// One blob a layer expects: what it is (for messages) and its Caffe shape.
pub(crate) struct Expect<'e> {
    pub what: &'e str,
    pub dims: Vec<usize>,
}

fn fmt_dims<T: std::fmt::Display>(d: &[T]) -> String {
    if d.is_empty() {
        "a scalar".to_string()
    } else {
        d.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join("x")
    }
}

impl<'a> TrainedWeights<'a> {
    /// Indexes both the current (`layer`) and legacy (`layers`, V0 inside V1) layer lists.
    pub fn index(net: &'a NetParameter) -> Self {
        let mut by_name = HashMap::new();
        for l in &net.layers {
            let v0 = l.layer.as_ref();
            let name = l
                .name
                .as_deref()
                .or_else(|| v0.and_then(|v| v.name.as_deref()))
                .unwrap_or("");
            let blobs: &[BlobProto] = match v0 {
                Some(v) if l.blobs.is_empty() => &v.blobs,
                _ => &l.blobs,
            };
            by_name.insert(name, blobs);
        }
        for l in &net.layer {
            by_name.insert(l.name.as_deref().unwrap_or(""), &l.blobs[..]);
        }
        Self {
            by_name,
            requests: None,
        }
    }

    /// No trained weights: [`take`](Self::take) records every layer's request and gives
    /// zeros of the requested shapes, so that a network is built (and its blob shapes
    /// learned) without a caffemodel. [`into_requests`](Self::into_requests) returns them.
    pub fn recorder() -> Self {
        Self {
            by_name: HashMap::new(),
            requests: Some(RefCell::new(Vec::new())),
        }
    }

    /// The requests a [`recorder`](Self::recorder) saw, in layer order (empty otherwise).
    pub fn into_requests(self) -> Vec<Requested> {
        self.requests.map(RefCell::into_inner).unwrap_or_default()
    }

    /// The layer's blobs as `f32` vectors, after checking their number, their recorded
    /// shapes (compared with dimensions of size 1 removed, so that the legacy 4-D form
    /// `1x1x1xK` matches `K`, as Caffe's own check allows) and their value counts.
    pub fn take(&self, ctx: Ctx<'_>, expect: &[Expect<'_>]) -> Result<Vec<Vec<f32>>> {
        if let Some(requests) = &self.requests {
            requests.borrow_mut().push(Requested {
                key: ctx.key.to_string(),
                display: ctx.name.to_string(),
                ty: ctx.ty.to_string(),
                blobs: expect
                    .iter()
                    .map(|e| (e.what.to_string(), e.dims.clone()))
                    .collect(),
            });
            return Ok(expect
                .iter()
                .map(|e| vec![0.0; e.dims.iter().product()])
                .collect());
        }
        let Some(blobs) = self.by_name.get(ctx.key) else {
            return Err(ctx.err("the caffemodel has no trained weights for this layer"));
        };
        if blobs.len() != expect.len() {
            let whats: Vec<_> = expect.iter().map(|e| e.what).collect();
            return Err(ctx.err(format!(
                "the caffemodel holds {} parameter blob(s) for this layer, expected {} ({})",
                blobs.len(),
                expect.len(),
                whats.join(", ")
            )));
        }
        let mut out = Vec::with_capacity(blobs.len());
        for (i, (b, e)) in blobs.iter().zip(expect).enumerate() {
            let want: usize = e.dims.iter().product();
            let count = b.value_count();
            let recorded = b.dims();
            if let Some(dims) = &recorded {
                if dims.iter().any(|&d| d < 0) {
                    return Err(ctx.err(format!(
                        "blob {i} ({}) has a negative dimension: {}",
                        e.what,
                        fmt_dims(dims)
                    )));
                }
                let squeezed: Vec<i64> = dims.iter().copied().filter(|&d| d != 1).collect();
                let want_sq: Vec<i64> = e
                    .dims
                    .iter()
                    .filter(|&&d| d != 1)
                    .map(|&d| d as i64)
                    .collect();
                if squeezed != want_sq {
                    return Err(ctx.err(format!(
                        "blob {i} ({}) has shape {} but the layer needs {}",
                        e.what,
                        fmt_dims(dims),
                        fmt_dims(&e.dims)
                    )));
                }
            }
            if count != want {
                return Err(ctx.err(format!(
                    "blob {i} ({}) holds {count} values but shape {} needs {want}",
                    e.what,
                    fmt_dims(&e.dims)
                )));
            }
            out.push(b.values());
        }
        Ok(out)
    }
}
