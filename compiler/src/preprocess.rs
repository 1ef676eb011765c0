//! Input preprocessing that belongs to the model.
//!
//! Frameworks train on preprocessed pixels: a mean subtracted, a scale, a channel order.
//! NVIDIA's runtime feeds raw 8-bit pixels (a colour JPEG as B, G, R) and applies only the
//! `--mean`/`--normalize` a user gives by hand, so a model compiled without its
//! preprocessing gives wrong answers unless the user knows all three. With
//! [`Preprocess`], the compiler puts the preprocessing into the network itself: the
//! loadable takes the runtime's raw pixels and `nvdla-runtime --image raw.jpg` gives what
//! the framework gave.
//!
//! The rewrite is a graph operation in front of the first layer: a per-channel affine
//! `(pixel - mean[c]) * scale` (one SDP pass), or, when the channel order must change, a
//! 1x1 convolution with the permutation and the affine folded into its weights.

use crate::error::{CompileError, Result};
use crate::ir::{Conv, Graph, Node, Op, Weights};

/// Channel order of the model's colour input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelOrder {
    /// Red, green, blue (PyTorch, TensorFlow models).
    Rgb,
    /// Blue, green, red (Caffe models; what the runtime feeds).
    Bgr,
}

/// The preprocessing a model expects: `model[c] = (pixel[order(c)] - mean[c]) * scale`.
#[derive(Debug, Clone, PartialEq)]
pub struct Preprocess {
    /// Per-channel mean in the model's channel order (empty: 0; one value: every channel).
    pub mean: Vec<f32>,
    /// Multiplier after the mean.
    pub scale: f32,
    /// The model's channel order (the runtime feeds BGR).
    pub order: ChannelOrder,
}

impl Default for Preprocess {
    fn default() -> Self {
        Self {
            mean: Vec::new(),
            scale: 1.0,
            order: ChannelOrder::Bgr,
        }
    }
}

impl Preprocess {
    /// Whether it changes nothing.
    pub fn is_identity(&self) -> bool {
        self.mean.iter().all(|&m| m == 0.0) && self.scale == 1.0 && self.order == ChannelOrder::Bgr
    }
}

/// Puts `pre` in front of the graph's first input.
pub fn apply(g: &mut Graph, pre: &Preprocess) -> Result<()> {
    if pre.is_identity() {
        return Ok(());
    }
    let Some(&input) = g.inputs.first() else {
        return Err(CompileError::Network("no input to preprocess".into()));
    };
    let shape = g.shape(input);
    let c = shape.c;
    let mean: Vec<f32> = match pre.mean.len() {
        0 => vec![0.0; c],
        1 => vec![pre.mean[0]; c],
        n if n == c => pre.mean.clone(),
        n => {
            return Err(CompileError::Option(format!(
                "--mean has {n} values for an input of {c} channels"
            )))
        }
    };
    let swap = pre.order == ChannelOrder::Rgb;
    if swap && c != 3 {
        return Err(CompileError::Option(format!(
            "--channel-order rgb needs a 3-channel input, `{}` has {c}",
            g.tensor(input).name
        )));
    }
    // The raw input takes the original name (the runtime binds it); the model's input
    // becomes the preprocessing's output.
    let name = g.tensor(input).name.clone();
    g.tensors[input.0].name = format!("{name}#preprocessed");
    let raw = g.add_tensor(name, shape);
    let scale = vec![pre.scale; c];
    let bias: Vec<f32> = mean.iter().map(|m| -m * pre.scale).collect();
    let op = if swap {
        // out[k] = scale * in[2 - k] - mean[k] * scale.
        let mut w = vec![0.0f32; c * c];
        for k in 0..c {
            w[k * c + (c - 1 - k)] = pre.scale;
        }
        Op::Conv(Conv::pointwise(
            Weights::new(vec![c, c, 1, 1], w).expect("c*c values"),
            Some(Weights::vector(bias)),
        ))
    } else {
        Op::ChannelAffine {
            scale: Some(Weights::vector(scale)),
            bias: Some(Weights::vector(bias)),
        }
    };
    g.nodes.insert(
        0,
        Node {
            name: "preprocess".into(),
            source_type: "Preprocess".into(),
            op,
            inputs: vec![raw],
            outputs: vec![input],
        },
    );
    g.inputs[0] = raw;
    g.check().map_err(CompileError::Network)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Shape;

    #[test]
    fn rgb_model_gets_a_permuting_convolution() {
        let mut g = Graph::default();
        let x = g.add_tensor("data", Shape::new(1, 3, 2, 2));
        g.inputs.push(x);
        g.outputs.push(x);
        let pre = Preprocess {
            mean: vec![10.0, 20.0, 30.0],
            scale: 0.5,
            order: ChannelOrder::Rgb,
        };
        apply(&mut g, &pre).unwrap();
        let raw = g.inputs[0];
        assert_eq!(g.tensor(raw).name, "data");
        // Runtime pixel (B, G, R) = (1, 2, 3) -> model (R, G, B) = ((3-10)/2, (2-20)/2, (1-30)/2).
        let input: Vec<f32> = [1.0, 2.0, 3.0].iter().flat_map(|&v| [v; 4]).collect();
        let out = crate::reference::run(&g, &[(raw, input)]).unwrap();
        assert_eq!(out[x.0][0], -3.5);
        assert_eq!(out[x.0][4], -9.0);
        assert_eq!(out[x.0][8], -14.5);
    }
}
