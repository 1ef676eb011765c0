//! The network walk: prototxt layers in order, blob names to IR tensors, in-place layers,
//! inputs and outputs.

use super::layers::{self, count, fmt, LayerIn};
use super::params::{self, Ctx};
use super::proto::V1_LAYER_TYPES;
use super::text::Message;
use super::weights::TrainedWeights;
use crate::error::{CompileError, Result};
use crate::ir::{Graph, Node, Op, Shape, TensorId};
use std::collections::{HashMap, HashSet};

/// Builds the graph of the prototxt `net` with the trained `weights`.
pub(crate) fn build(net: &Message, weights: &TrainedWeights<'_>) -> Result<Graph> {
    let net_ctx = Ctx {
        name: "(net)",
        ty: "NetParameter",
        key: "",
    };
    let mut b = Builder {
        graph: Graph::default(),
        dims: Vec::new(),
        producer: Vec::new(),
        consumed: Vec::new(),
        blobs: HashMap::new(),
        weights,
    };
    b.graph.name = params::string(net_ctx, net, "name")?.unwrap_or_default();
    let current: Vec<_> = net.all("layer").collect();
    let legacy: Vec<_> = net.all("layers").collect();
    if !current.is_empty() && !legacy.is_empty() {
        return Err(CompileError::Network(
            "the prototxt has both `layer` and legacy `layers` fields".into(),
        ));
    }
    b.legacy_inputs(net)?;
    let v1 = current.is_empty();
    for (i, f) in current.iter().chain(&legacy).enumerate() {
        let m = params::as_message(net_ctx, f)?;
        b.layer(i, m, v1)?;
    }
    b.finish()
}

struct Builder<'w, 'a> {
    graph: Graph,
    /// Caffe (N-D) shape of every tensor.
    dims: Vec<Vec<usize>>,
    /// Name of the layer that produced every tensor.
    producer: Vec<String>,
    /// Whether a node reads the tensor.
    consumed: Vec<bool>,
    /// Blob name -> its current tensor (the latest writer's).
    blobs: HashMap<String, TensorId>,
    weights: &'w TrainedWeights<'a>,
}

/// The IR shape of a Caffe shape of at most 4 axes: trailing axes of size 1 added.
fn ir_shape(ctx: Ctx<'_>, dims: &[usize]) -> Result<Shape> {
    match *dims {
        [] => Err(ctx.err("0-D (scalar) blobs are not supported")),
        [n] => Ok(Shape::new(n, 1, 1, 1)),
        [n, c] => Ok(Shape::new(n, c, 1, 1)),
        [n, c, h] => Ok(Shape::new(n, c, h, 1)),
        [n, c, h, w] => Ok(Shape::new(n, c, h, w)),
        _ => Err(ctx.err(format!(
            "{}-D blob {} does not fit the 4-D (N x C x H x W) IR",
            dims.len(),
            fmt(dims)
        ))),
    }
}

/// Whether a layer with these `include`/`exclude` rules is in the test-phase network
/// (Caffe's `StateMeetsRule` for phase TEST, level 0, no stages).
fn in_test_net(ctx: Ctx<'_>, layer: &Message) -> Result<bool> {
    let meets = |rule: &Message| -> Result<bool> {
        if let Some(phase) = params::enumeration(ctx, rule, "phase", &[("TRAIN", 0), ("TEST", 1)])?
        {
            if phase != 1 {
                return Ok(false);
            }
        }
        if params::int(ctx, rule, "min_level")?.is_some_and(|l| 0 < l) {
            return Ok(false);
        }
        if params::int(ctx, rule, "max_level")?.is_some_and(|l| 0 > l) {
            return Ok(false);
        }
        // The net has no stages: any required stage fails, `not_stage` always passes.
        Ok(params::strings(ctx, rule, "stage")?.is_empty())
    };
    let include = params::messages(ctx, layer, "include")?;
    let exclude = params::messages(ctx, layer, "exclude")?;
    if !include.is_empty() && !exclude.is_empty() {
        return Err(ctx.err("give include or exclude rules, not both"));
    }
    if !include.is_empty() {
        for r in include {
            if meets(r)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    for r in exclude {
        if meets(r)? {
            return Ok(false);
        }
    }
    Ok(true)
}

impl Builder<'_, '_> {
    /// `input:` with `input_shape { dim }` or four `input_dim:` per input.
    fn legacy_inputs(&mut self, net: &Message) -> Result<()> {
        let ctx = Ctx {
            name: "input",
            ty: "Input",
            key: "",
        };
        let names = params::strings(ctx, net, "input")?;
        let shapes = params::messages(ctx, net, "input_shape")?;
        let dims = params::ints(ctx, net, "input_dim")?;
        if names.is_empty() {
            if !shapes.is_empty() || !dims.is_empty() {
                return Err(CompileError::Network(
                    "input_shape/input_dim given without `input`".into(),
                ));
            }
            return Ok(());
        }
        if !shapes.is_empty() && !dims.is_empty() {
            return Err(CompileError::Network(
                "give input_shape or the deprecated input_dim, not both".into(),
            ));
        }
        let per_input: Vec<Vec<i64>> = if !shapes.is_empty() {
            if shapes.len() != names.len() {
                return Err(CompileError::Network(format!(
                    "{} inputs but {} input_shape entries",
                    names.len(),
                    shapes.len()
                )));
            }
            shapes
                .iter()
                .map(|s| params::ints(ctx, s, "dim"))
                .collect::<Result<_>>()?
        } else {
            if dims.len() != 4 * names.len() {
                return Err(CompileError::Network(format!(
                    "input_dim must be given 4 times per input: {} values for {} input(s)",
                    dims.len(),
                    names.len()
                )));
            }
            dims.chunks(4).map(<[i64]>::to_vec).collect()
        };
        for (name, d) in names.iter().zip(per_input) {
            let ctx = Ctx {
                name,
                ty: "Input",
                key: name,
            };
            self.add_input(ctx, name, &d)?;
        }
        Ok(())
    }

    fn add_input(&mut self, ctx: Ctx<'_>, top: &str, dims: &[i64]) -> Result<()> {
        let dims: Vec<usize> = dims
            .iter()
            .map(|&d| {
                usize::try_from(d)
                    .ok()
                    .filter(|&d| d > 0)
                    .ok_or_else(|| ctx.err(format!("input `{top}` has dimension {d}")))
            })
            .collect::<Result<_>>()?;
        let t = self.define_top(ctx, 0, top, &[], dims)?;
        self.graph.inputs.push(t);
        Ok(())
    }

    /// A new tensor for `top` (the `index`th top of the layer); in place (`top` equal to
    /// the bottom of the same index, as Caffe requires) the earlier tensor of that blob is
    /// renamed `blob@producer` and the new one keeps the blob's name.
    fn define_top(
        &mut self,
        ctx: Ctx<'_>,
        index: usize,
        top: &str,
        bottoms: &[String],
        dims: Vec<usize>,
    ) -> Result<TensorId> {
        count(ctx, &dims)?;
        if let Some(d) = dims.iter().position(|&d| d == 0) {
            return Err(ctx.err(format!(
                "top `{top}` would have an empty axis {d} ({})",
                fmt(&dims)
            )));
        }
        let shape = ir_shape(ctx, &dims)?;
        if let Some(&old) = self.blobs.get(top) {
            if bottoms.get(index).map(String::as_str) != Some(top) {
                return Err(ctx.err(format!(
                    "top `{top}` is produced by more than one layer (only in-place reuse, \
                     top i == bottom i, is allowed)"
                )));
            }
            let renamed = format!("{top}@{}", self.producer[old.0]);
            self.graph.tensors[old.0].name = renamed;
        }
        let id = self.graph.add_tensor(top, shape);
        self.dims.push(dims);
        self.producer.push(ctx.name.to_string());
        self.consumed.push(false);
        self.blobs.insert(top.to_string(), id);
        Ok(id)
    }

    fn bottom(&self, ctx: Ctx<'_>, name: &str) -> Result<TensorId> {
        self.blobs.get(name).copied().ok_or_else(|| {
            ctx.err(format!(
                "bottom `{name}` is not produced by any earlier layer or input"
            ))
        })
    }

    fn node(&mut self, ctx: Ctx<'_>, name: String, op: Op, inputs: Vec<TensorId>, out: TensorId) {
        for t in &inputs {
            self.consumed[t.0] = true;
        }
        self.graph.add_node(Node {
            name,
            source_type: ctx.ty.to_string(),
            op,
            inputs,
            outputs: vec![out],
        });
    }

    fn layer(&mut self, index: usize, m: &Message, v1: bool) -> Result<()> {
        let position = format!("#{index}");
        let anon = Ctx {
            name: &position,
            ty: "",
            key: "",
        };
        let key = params::string(anon, m, "name")?.unwrap_or_default();
        let display = if key.is_empty() {
            position.clone()
        } else {
            key.clone()
        };
        let named = Ctx {
            name: &display,
            ty: "",
            key: &key,
        };
        let (spelled, kind): (String, String) = if v1 {
            let n = params::enumeration(
                named,
                m,
                "type",
                &V1_LAYER_TYPES
                    .iter()
                    .map(|&(n, v, _)| (n, v))
                    .collect::<Vec<_>>(),
            )?
            .ok_or_else(|| named.err("layer has no type"))?;
            let (spelled, _, kind) = V1_LAYER_TYPES
                .iter()
                .find(|&&(_, v, _)| v == n)
                .copied()
                .unwrap_or(("NONE", 0, ""));
            (spelled.to_string(), kind.to_string())
        } else {
            let t =
                params::string(named, m, "type")?.ok_or_else(|| named.err("layer has no type"))?;
            (t.clone(), t)
        };
        let ctx = Ctx {
            name: &display,
            ty: &spelled,
            key: &key,
        };
        if !in_test_net(ctx, m)? {
            return Ok(());
        }
        let bottoms = params::strings(ctx, m, "bottom")?;
        let tops = params::strings(ctx, m, "top")?;
        match kind.as_str() {
            "Input" => {
                if !bottoms.is_empty() {
                    return Err(ctx.err("an Input layer takes no bottoms"));
                }
                let empty = Message::default();
                let p = params::message(ctx, m, "input_param")?.unwrap_or(&empty);
                let shapes = params::messages(ctx, p, "shape")?;
                if tops.is_empty() {
                    return Err(ctx.err("an Input layer needs at least one top"));
                }
                if shapes.len() != 1 && shapes.len() != tops.len() {
                    return Err(ctx.err(format!(
                        "input_param needs one shape, or one per top ({}), found {}",
                        tops.len(),
                        shapes.len()
                    )));
                }
                for (i, top) in tops.iter().enumerate() {
                    let dims =
                        params::ints(ctx, shapes[if shapes.len() == 1 { 0 } else { i }], "dim")?;
                    self.add_input(ctx, top, &dims)?;
                }
                Ok(())
            }
            "Silence" => {
                for b in &bottoms {
                    let t = self.bottom(ctx, b)?;
                    self.consumed[t.0] = true;
                }
                if !tops.is_empty() {
                    return Err(ctx.err("a Silence layer has no tops"));
                }
                Ok(())
            }
            "Split" => {
                let [b] = bottoms.as_slice() else {
                    return Err(ctx.err(format!("expects 1 bottom blob, found {}", bottoms.len())));
                };
                let input = self.bottom(ctx, b)?;
                if tops.is_empty() {
                    return Err(ctx.err("a Split layer needs at least one top"));
                }
                let dims = self.dims[input.0].clone();
                for (i, top) in tops.iter().enumerate() {
                    let out = self.define_top(ctx, i, top, &bottoms, dims.clone())?;
                    let name = if tops.len() == 1 {
                        display.clone()
                    } else {
                        format!("{display}/{top}")
                    };
                    self.node(ctx, name, Op::Identity, vec![input], out);
                }
                Ok(())
            }
            _ => {
                let inputs = bottoms
                    .iter()
                    .map(|b| self.bottom(ctx, b))
                    .collect::<Result<Vec<_>>>()?;
                let in_dims: Vec<Vec<usize>> =
                    inputs.iter().map(|t| self.dims[t.0].clone()).collect();
                let l = LayerIn {
                    ctx,
                    layer: m,
                    inputs: &in_dims,
                    weights: self.weights,
                };
                let Some(mapped) = layers::map(&kind, &l) else {
                    return Err(ctx.err(format!("unsupported layer type `{spelled}`")));
                };
                let (op, out_dims) = mapped?;
                // A crop's second bottom only gives the output's shape.
                let inputs = if matches!(op, Op::Crop { .. }) {
                    inputs[..1].to_vec()
                } else {
                    inputs
                };
                let [top] = tops.as_slice() else {
                    return Err(ctx.err(format!("expects 1 top blob, found {}", tops.len())));
                };
                let out = self.define_top(ctx, 0, top, &bottoms, out_dims)?;
                self.node(ctx, display.clone(), op, inputs, out);
                Ok(())
            }
        }
    }

    fn finish(mut self) -> Result<Graph> {
        if self.graph.inputs.is_empty() {
            return Err(CompileError::Network(
                "no input: declare one with `input:` or an Input layer".into(),
            ));
        }
        let is_input: HashSet<TensorId> = self.graph.inputs.iter().copied().collect();
        self.graph.outputs = (0..self.graph.tensors.len())
            .map(TensorId)
            .filter(|t| !self.consumed[t.0] && !is_input.contains(t))
            .collect();
        if self.graph.outputs.is_empty() {
            return Err(CompileError::Network("the network has no output".into()));
        }
        // Unique tensor names: live blobs keep theirs, renamed earlier versions yield.
        let live: HashSet<TensorId> = self.blobs.values().copied().collect();
        let mut used: HashSet<String> = live
            .iter()
            .map(|t| self.graph.tensors[t.0].name.clone())
            .collect();
        for (i, t) in self.graph.tensors.iter_mut().enumerate() {
            if live.contains(&TensorId(i)) {
                continue;
            }
            let mut name = t.name.clone();
            let mut k = 1;
            while used.contains(&name) {
                name = format!("{}#{k}", t.name);
                k += 1;
            }
            used.insert(name.clone());
            t.name = name;
        }
        self.graph.check().map_err(CompileError::Network)?;
        Ok(self.graph)
    }
}
