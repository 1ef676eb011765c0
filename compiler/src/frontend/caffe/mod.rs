//! Caffe front end: `.prototxt` (network, protobuf text) + `.caffemodel` (trained
//! weights, binary protobuf `NetParameter`) to an [`ir::Graph`](crate::ir::Graph).
//!
//! The prototxt drives the graph: its layers, in order, become nodes (layers excluded from
//! the test phase by `include`/`exclude` rules are skipped, as Caffe does for a deploy
//! net). Trained blobs come from the caffemodel layer of the same name; caffemodel layers
//! the prototxt does not name are ignored, and a layer that needs weights the caffemodel
//! lacks is an error naming it. Both the current `layer { type: "..." }` form and the
//! legacy `layers { type: ENUM }` (V1) form are read, in either file.
//!
//! Inputs: `input:` with `input_shape { dim }` or four `input_dim:` each, or an `Input`
//! layer with `input_param { shape { dim } }`. Shapes are Caffe's, computed as its layers
//! do (convolution floors; pooling rounds up unless `round_mode: FLOOR`, then drops a last
//! window that would start in the trailing padding); blobs of fewer than 4 axes (the
//! `N x K` of InnerProduct) become `N x K x 1 x 1`.
//!
//! Blob names: every layer output is a new IR tensor. An in-place layer (`top` equal to
//! its `bottom`, e.g. ReLU) gives its output the blob's name and renames the tensor it
//! overwrote to `blob@producer` (`conv1@conv1` is the convolution's output before the
//! in-place ReLU), so the final writer of a blob carries the Caffe name. Graph outputs are
//! the tensors no layer reads.
//!
//! Errors are [`CompileError::Layer`] naming the layer and its type, or
//! [`CompileError::Parse`] (with line and column) for text that is not protobuf text
//! format and bytes that are not a `NetParameter`; nothing here panics on bad input.
//!
//! Modules: [`text`] (the text-format parser), [`proto`] (the binary messages), [`synth`]
//! (random trained weights for a prototxt, for tests), and the private layer mapping.

mod layers;
mod net;
mod params;
pub mod proto;
pub mod synth;
pub mod text;
mod weights;

use super::ModelFiles;
use crate::error::{CompileError, Result};
use crate::ir::Graph;
use std::path::Path;

/// Loads the model of `files` (which must be [`ModelFiles::Caffe`]).
pub fn load_files(files: &ModelFiles) -> Result<Graph> {
    let ModelFiles::Caffe {
        prototxt,
        caffemodel,
    } = files
    else {
        return Err(CompileError::Option(
            "the Caffe front end reads Caffe models only".into(),
        ));
    };
    let read = |p: &Path| {
        std::fs::read(p).map_err(|source| CompileError::Io {
            path: p.to_path_buf(),
            source,
        })
    };
    let text = read(prototxt)?;
    let model = read(caffemodel)?;
    let mut graph = load_labeled(
        &String::from_utf8_lossy(&text),
        &prototxt.display().to_string(),
        &model,
        &caffemodel.display().to_string(),
    )?;
    if graph.name.is_empty() {
        if let Some(stem) = prototxt.file_stem() {
            graph.name = stem.to_string_lossy().into_owned();
        }
    }
    Ok(graph)
}

/// Loads a model from the prototxt text and the caffemodel bytes.
pub fn load(prototxt: &str, caffemodel: &[u8]) -> Result<Graph> {
    load_labeled(prototxt, "prototxt", caffemodel, "caffemodel")
}

/// Parses a prototxt into its text-format tree (syntax only).
pub fn parse_prototxt(prototxt: &str, file: &str) -> Result<text::Message> {
    text::parse(prototxt).map_err(|e| CompileError::Parse {
        file: file.to_string(),
        reason: e.to_string(),
    })
}

/// Decodes a caffemodel (encoding only).
pub fn decode_caffemodel(caffemodel: &[u8], file: &str) -> Result<proto::NetParameter> {
    proto::decode(caffemodel).map_err(|e| CompileError::Parse {
        file: file.to_string(),
        reason: format!("not a Caffe NetParameter: {e}"),
    })
}

fn load_labeled(prototxt: &str, pfile: &str, caffemodel: &[u8], mfile: &str) -> Result<Graph> {
    let net = parse_prototxt(prototxt, pfile)?;
    let model = decode_caffemodel(caffemodel, mfile)?;
    let weights = weights::TrainedWeights::index(&model);
    net::build(&net, &weights)
}
