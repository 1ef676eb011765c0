//! Per-task descriptor summaries for `inspect` (filled in once the DLA1/EMU1 codecs land).
use crate::loadable::{Loadable, TaskListEntry};
use serde_json::{json, Value};

/// Describe the descriptors a task's address list points at.
pub fn describe_task(l: &Loadable<'_>, t: &TaskListEntry<'_>) -> Value {
    let net = t.address_list().get(0).and_then(|a| l.blob_at_address(a));
    json!({"task": t.id(), "interface": t.interface().name(),
           "network_blob": net.map(|b| b.name())})
}
