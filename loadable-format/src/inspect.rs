//! A readable summary of a loadable, as JSON or text (feature `cli`).
//!
//! [`summarize`] builds one JSON value holding everything `nvdla-loadable
//! inspect` shows; [`render_text`] prints that same value as indented text,
//! so the two output modes cannot drift apart.

use crate::loadable::Loadable;
use crate::schema::*;
use serde_json::{json, Map, Value};

fn flags_text(f: MemoryFlags) -> String {
    if f.is_empty() {
        return "NONE".into();
    }
    f.iter_names().map(|(n, _)| n).collect::<Vec<_>>().join("|")
}

/// Everything `inspect` reports about a loadable.
pub fn summarize(l: &Loadable<'_>) -> Value {
    let tasks: Vec<Value> = l
        .tasks()
        .iter()
        .map(|t| {
            json!({
                "id": t.id(),
                "interface": t.interface().name(),
                "instance": t.instance(),
                "address_list": t.address_list().iter().collect::<Vec<_>>(),
                "pre_actions": t.pre_actions().iter().collect::<Vec<_>>(),
                "post_actions": t.post_actions().iter().collect::<Vec<_>>(),
            })
        })
        .collect();
    let memory: Vec<Value> = l
        .memory()
        .iter()
        .map(|m| {
            let contents: Vec<Value> = (0..m.contents_len())
                .filter_map(|i| m.content(i))
                .filter(|(n, _)| !n.is_empty())
                .map(|(n, o)| json!(format!("{n}@{o}")))
                .collect();
            let mut v = json!({
                "id": m.id(),
                "domain": m.domain().name(),
                "flags": flags_text(m.flags()),
                "size": m.size(),
                "alignment": m.alignment(),
                "contents": contents,
            });
            if m.flags()
                .intersects(MemoryFlags::INPUT | MemoryFlags::OUTPUT)
            {
                v["bind_id"] = json!(m.bind_id());
                v["tensor_desc_id"] = json!(m.tensor_desc_id());
            }
            v
        })
        .collect();
    let addresses: Vec<Value> = l
        .addresses()
        .iter()
        .map(
            |a| json!({"id": a.id(), "mem_id": a.mem_id(), "offset": a.offset(), "size": a.size()}),
        )
        .collect();
    let events: Vec<Value> = l
        .events()
        .iter()
        .map(|e| {
            json!({"id": e.id(), "type": e.event_type().name(), "target": e.target(),
                   "val": e.val(), "op": e.op().name()})
        })
        .collect();
    let blobs: Vec<Value> = l
        .blobs()
        .iter()
        .map(|b| {
            json!({"name": b.name(), "size": b.size(), "interface": b.interface().name(),
                   "sub_interface": b.sub_interface().to_string(),
                   "version": b.version().to_string()})
        })
        .collect();
    let tensors: Vec<Value> = l
        .tensors()
        .iter()
        .map(|t| {
            let [n, c, h, w] = t.dims();
            json!({
                "id": t.id(), "name": t.name(), "mem_id": t.mem_id(),
                "offset": t.offset(), "size": t.size(),
                "shape": format!("{n}x{c}x{h}x{w}"),
                "data_type": t.data_type().to_string(),
                "data_format": t.data_format().to_string(),
                "data_category": t.data_category().to_string(),
                "pixel_format": t.pixel_format().to_string(),
                "pixel_mapping": t.pixel_mapping().to_string(),
                "strides": t.strides(),
            })
        })
        .collect();
    let relocs: Vec<Value> = l
        .relocs()
        .iter()
        .map(|r| {
            json!({"address_id": r.address_id(), "write_id": r.write_id(), "offset": r.offset(),
                   "interface": r.interface().name(), "sub_interface": r.sub_interface().to_string(),
                   "type": r.reloc_type().to_string()})
        })
        .collect();
    let submits: Vec<Value> = l
        .submits()
        .iter()
        .map(|s| json!({"id": s.id(), "task_ids": s.task_ids().iter().collect::<Vec<_>>()}))
        .collect();
    let networks: Vec<Value> = l
        .tasks()
        .iter()
        .map(|t| crate::inspect_tasks::describe_task(l, &t))
        .collect();

    json!({
        "version": l.version().to_string(),
        "tasks": tasks,
        "memory": memory,
        "addresses": addresses,
        "events": events,
        "blobs": blobs,
        "tensors": tensors,
        "relocs": relocs,
        "submits": submits,
        "task_descriptors": networks,
    })
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

/// One line for an object whose values are scalars or scalar arrays.
fn flat_object(m: &Map<String, Value>) -> Option<String> {
    let mut parts = Vec::new();
    for (k, v) in m {
        match v {
            Value::Array(a) if a.iter().all(is_scalar) => parts.push(format!(
                "{k}=[{}]",
                a.iter().map(scalar_text).collect::<Vec<_>>().join(",")
            )),
            Value::Array(_) | Value::Object(_) => return None,
            _ => parts.push(format!("{k}={}", scalar_text(v))),
        }
    }
    Some(parts.join(" "))
}

fn render(out: &mut String, key: &str, v: &Value, depth: usize) {
    let pad = "  ".repeat(depth);
    match v {
        Value::Object(m) => {
            if let (Some(line), false) = (flat_object(m), key.is_empty()) {
                out.push_str(&format!("{pad}{key}: {line}\n"));
                return;
            }
            if !key.is_empty() {
                out.push_str(&format!("{pad}{key}:\n"));
            }
            let inner = if key.is_empty() { depth } else { depth + 1 };
            for (k, v) in m {
                render(out, k, v, inner);
            }
        }
        Value::Array(a) if a.iter().all(is_scalar) => out.push_str(&format!(
            "{pad}{key}: [{}]\n",
            a.iter().map(scalar_text).collect::<Vec<_>>().join(", ")
        )),
        Value::Array(a) => {
            out.push_str(&format!("{pad}{key} ({}):\n", a.len()));
            for (i, item) in a.iter().enumerate() {
                render(out, &format!("[{i}]"), item, depth + 1);
            }
        }
        _ => out.push_str(&format!("{pad}{key}: {}\n", scalar_text(v))),
    }
}

/// Render a summary as indented text: one line per entry where it fits.
pub fn render_text(summary: &Value) -> String {
    let mut out = String::new();
    render(&mut out, "", summary, 0);
    out
}
