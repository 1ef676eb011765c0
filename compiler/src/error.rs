//! Compiler errors: every one names where in the model it arose.

use std::path::PathBuf;

/// An error of any compiler phase.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A model file is not well formed (syntax, encoding).
    #[error("{file}: {reason}")]
    Parse {
        /// The file (or a description of it).
        file: String,
        /// What is wrong, with a line/offset where known.
        reason: String,
    },
    /// A layer is malformed, unsupported, or cannot be lowered for the target.
    #[error("layer `{layer}` ({layer_type}): {reason}")]
    Layer {
        /// Layer / node name.
        layer: String,
        /// Its type as the model spells it.
        layer_type: String,
        /// What is wrong.
        reason: String,
    },
    /// The network as a whole is inconsistent (no input, dangling tensor, ...).
    #[error("network: {0}")]
    Network(String),
    /// An option is invalid for this model or target.
    #[error("{0}")]
    Option(String),
}

impl CompileError {
    /// A [`CompileError::Layer`].
    pub fn layer(
        layer: impl Into<String>,
        layer_type: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        CompileError::Layer {
            layer: layer.into(),
            layer_type: layer_type.into(),
            reason: reason.into(),
        }
    }
}

/// Result of a compiler phase.
pub type Result<T, E = CompileError> = std::result::Result<T, E>;
