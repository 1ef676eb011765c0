//! Tensors whose bytes live in a separate file beside the model (ONNX "external data",
//! what `torch.onnx.export` writes for large models and `onnx.save(...,
//! save_as_external_data=True)` for any): read into the tensor before the front end sees
//! it.
//!
//! A tensor with `data_location = EXTERNAL` names its file with the `location` key
//! (relative to the model's directory), and may give `offset` and `length` in bytes (ONNX
//! `ExternalDataInfo`). As ONNX's checker does, an absolute location or one that leaves
//! the model's directory (`..`) is refused: a model file must not read any file of the
//! machine it is compiled on.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use super::proto::{GraphProto, ModelProto, TensorProto};
use crate::error::{CompileError, Result};

/// `TensorProto.DataLocation.EXTERNAL`.
const EXTERNAL: i32 = 1;

/// Whether `t` keeps its bytes in another file.
fn is_external(t: &TensorProto) -> bool {
    t.data_location == EXTERNAL || !t.external_data.is_empty()
}

/// Reads every external tensor of `model` (initializers, `Constant` values and those of
/// sub-graphs) from the files beside `file`, the model's path. A model without external
/// tensors is left as it is, whatever `file` is.
pub(crate) fn resolve(model: &mut ModelProto, file: &str) -> Result<()> {
    let mut files = Files {
        dir: None,
        file,
        open: HashMap::new(),
    };
    if let Some(g) = model.graph.as_mut() {
        resolve_graph(g, &mut files)?;
    }
    Ok(())
}

struct Files<'a> {
    /// The model's directory, once a tensor needs it.
    dir: Option<PathBuf>,
    /// The model's path, as given.
    file: &'a str,
    /// Files read so far, by location.
    open: HashMap<String, Vec<u8>>,
}

fn resolve_graph(g: &mut GraphProto, files: &mut Files<'_>) -> Result<()> {
    for t in &mut g.initializer {
        files.load(t)?;
    }
    for n in &mut g.node {
        for a in &mut n.attribute {
            if let Some(t) = a.t.as_mut() {
                files.load(t)?;
            }
            for t in &mut a.tensors {
                files.load(t)?;
            }
            if let Some(sub) = a.g.as_mut() {
                resolve_graph(sub, files)?;
            }
            for sub in &mut a.graphs {
                resolve_graph(sub, files)?;
            }
        }
    }
    Ok(())
}

impl Files<'_> {
    /// Fills `t.raw_data` from its external file (nothing for an internal tensor).
    fn load(&mut self, t: &mut TensorProto) -> Result<()> {
        if !is_external(t) {
            return Ok(());
        }
        let err = |reason: String| CompileError::layer(t.name.clone(), "initializer", reason);
        let mut location = None;
        let (mut offset, mut length) = (0u64, None);
        for e in &t.external_data {
            let number = || {
                e.value.parse::<u64>().map_err(|_| {
                    err(format!(
                        "external data `{}` is `{}`, not a byte count",
                        e.key, e.value
                    ))
                })
            };
            match e.key.as_str() {
                "location" => location = Some(e.value.clone()),
                "offset" => offset = number()?,
                "length" => length = Some(number()?),
                _ => {} // "checksum" and future keys
            }
        }
        let location = location.ok_or_else(|| err("external data without a `location`".into()))?;
        let rel = Path::new(&location);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(err(format!(
                "external data location `{location}` must be a path inside the model's \
                 directory"
            )));
        }
        if self.dir.is_none() {
            let model = Path::new(self.file);
            if !model.is_file() {
                return Err(err(format!(
                    "its bytes are in `{location}`, a file beside the model, but the model \
                     was given as bytes (`{}`): compile it from its file",
                    self.file
                )));
            }
            self.dir = Some(model.parent().unwrap_or(Path::new(".")).to_path_buf());
        }
        let dir = self.dir.as_ref().expect("set above");
        if !self.open.contains_key(&location) {
            let path = dir.join(rel);
            let bytes = std::fs::read(&path)
                .map_err(|e| err(format!("external data file `{}`: {e}", path.display())))?;
            self.open.insert(location.clone(), bytes);
        }
        let bytes = &self.open[&location];
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = match length {
            Some(l) => start.saturating_add(usize::try_from(l).unwrap_or(usize::MAX)),
            None => bytes.len(),
        };
        let data = bytes.get(start..end).ok_or_else(|| {
            err(format!(
                "external data bytes {start}..{end} are outside the {} bytes of `{location}`",
                bytes.len()
            ))
        })?;
        t.raw_data = data.to_vec();
        t.external_data.clear();
        t.data_location = 0;
        Ok(())
    }
}
