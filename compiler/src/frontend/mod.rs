//! Front ends: model files in, one [`Graph`](crate::ir::Graph) out.
//!
//! A small registry maps a model format to its parser, as TNN's model interpreters and
//! ONNX Runtime's model loaders do; the command line picks the entry from its flags.

pub mod caffe;
pub mod onnx;

use crate::error::Result;
use crate::ir::Graph;
use std::path::PathBuf;

/// The files of one model, by format.
#[derive(Debug, Clone)]
pub enum ModelFiles {
    /// Caffe: network definition (protobuf text) and trained weights (protobuf binary).
    Caffe {
        /// `.prototxt`.
        prototxt: PathBuf,
        /// `.caffemodel`.
        caffemodel: PathBuf,
    },
    /// ONNX: one `.onnx` file (binary protobuf `ModelProto`, weights inside).
    Onnx {
        /// `.onnx`.
        model: PathBuf,
        /// Shapes of network inputs by name, fixing dimensions the model leaves symbolic
        /// (`--input-shape name=1x3x224x224`).
        input_shapes: Vec<(String, Vec<usize>)>,
        /// Map operators only the CPU can compute to CPU fallback operations
        /// (`--cpu-fallback`).
        cpu_fallback: bool,
        /// The build compiled for: with `cpu_fallback`, nodes its engines cannot take
        /// ([`crate::capability`]) go to the CPU too.
        target: Option<crate::target::Target>,
    },
}

/// A front end.
pub struct FrontEnd {
    /// Format name (`caffe`, `onnx`).
    pub format: &'static str,
    /// Reads the model.
    pub load: fn(&ModelFiles) -> Result<Graph>,
}

/// Every front end.
pub const REGISTRY: &[FrontEnd] = &[
    FrontEnd {
        format: "caffe",
        load: caffe::load_files,
    },
    FrontEnd {
        format: "onnx",
        load: onnx::load_files,
    },
];

/// Load a model with the front end for its format.
pub fn load(files: &ModelFiles) -> Result<Graph> {
    let format = match files {
        ModelFiles::Caffe { .. } => "caffe",
        ModelFiles::Onnx { .. } => "onnx",
    };
    let fe = REGISTRY
        .iter()
        .find(|f| f.format == format)
        .expect("every ModelFiles variant has a registry entry");
    (fe.load)(files)
}
