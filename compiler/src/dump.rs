//! `--dump-ir` / `--dump-graph` in JSON and Graphviz DOT (the text forms are
//! [`crate::passes::dump`] and [`crate::engine::Program::dump`]).

use crate::engine::Program;
use crate::ir::Graph;
use serde_json::json;
use std::fmt::Write as _;

/// The network IR as JSON: tensors with shapes, nodes with their op, inputs and outputs.
pub fn ir_json(g: &Graph) -> String {
    let tensors: Vec<_> = g
        .tensors
        .iter()
        .map(|t| json!({"name": t.name, "shape": [t.shape.n, t.shape.c, t.shape.h, t.shape.w]}))
        .collect();
    let nodes: Vec<_> = g
        .nodes
        .iter()
        .map(|n| {
            json!({
                "name": n.name,
                "op": n.op.name(),
                "source_type": n.source_type,
                "inputs": n.inputs.iter().map(|t| &g.tensors[t.0].name).collect::<Vec<_>>(),
                "outputs": n.outputs.iter().map(|t| &g.tensors[t.0].name).collect::<Vec<_>>(),
            })
        })
        .collect();
    let names = |ids: &[crate::ir::TensorId]| -> Vec<&String> {
        ids.iter().map(|t| &g.tensors[t.0].name).collect()
    };
    serde_json::to_string_pretty(&json!({
        "name": g.name,
        "inputs": names(&g.inputs),
        "outputs": names(&g.outputs),
        "tensors": tensors,
        "nodes": nodes,
    }))
    .unwrap_or_default()
}

/// The network IR as a DOT digraph (nodes are layers, edges are tensors).
pub fn ir_dot(g: &Graph) -> String {
    let mut out = String::from("digraph ir {\n  rankdir=TB;\n  node [shape=box];\n");
    for (i, n) in g.nodes.iter().enumerate() {
        let _ = writeln!(
            out,
            "  n{i} [label=\"{}\\n{}\"];",
            esc(&n.name),
            n.op.name()
        );
    }
    for (i, &t) in g.inputs.iter().enumerate() {
        let _ = writeln!(
            out,
            "  in{i} [shape=ellipse, label=\"{}\"];",
            esc(&g.tensors[t.0].name)
        );
    }
    for (j, n) in g.nodes.iter().enumerate() {
        for &t in &n.inputs {
            let s = g.tensors[t.0].shape;
            let label = format!("{} {}", esc(&g.tensors[t.0].name), s);
            if let Some(p) = g.producer(t) {
                let _ = writeln!(out, "  n{} -> n{j} [label=\"{label}\"];", p.0);
            } else if let Some(k) = g.inputs.iter().position(|&x| x == t) {
                let _ = writeln!(out, "  in{k} -> n{j} [label=\"{label}\"];");
            }
        }
    }
    out + "}\n"
}

/// The engine program as JSON: operations with their engine, layers, surfaces read and
/// written (with placement after planning).
pub fn program_json(p: &Program) -> String {
    let surface = |id: crate::engine::SurfId| {
        let s = p.surface(id);
        json!({
            "name": s.name, "shape": [s.c, s.h, s.w], "kind": format!("{:?}", s.kind),
            "offset": s.offset, "size": s.size, "line_stride": s.line_stride,
            "surf_stride": s.surf_stride, "scale": s.scale,
            "channel_scales": p.channel_scales(id),
        })
    };
    let ops: Vec<_> = p
        .ops
        .iter()
        .map(|o| {
            json!({
                "engine": format!("{:?}", o.engine()),
                "layers": o.layers,
                "reads": o.reads().into_iter().map(surface).collect::<Vec<_>>(),
                "writes": o.writes().into_iter().map(surface).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::to_string_pretty(&json!({
        "ops": ops,
        "pool_bytes": p.pool_size,
        "weight_bytes": p.weight_size,
    }))
    .unwrap_or_default()
}

/// The engine program as a DOT digraph: operations, and an edge from the writer of each
/// surface to its readers.
pub fn program_dot(p: &Program) -> String {
    let mut out = String::from("digraph engines {\n  rankdir=TB;\n  node [shape=box];\n");
    for (i, o) in p.ops.iter().enumerate() {
        let _ = writeln!(
            out,
            "  op{i} [label=\"{:?}\\n{}\"];",
            o.engine(),
            esc(&o.layers.join("+"))
        );
    }
    for (j, o) in p.ops.iter().enumerate() {
        for r in o.reads() {
            let root = p.root(r);
            if let Some(i) = (0..j)
                .rev()
                .find(|&i| p.ops[i].writes().into_iter().any(|w| p.root(w) == root))
            {
                let s = p.surface(r);
                let _ = writeln!(
                    out,
                    "  op{i} -> op{j} [label=\"{} {}x{}x{}\"];",
                    esc(&s.name),
                    s.c,
                    s.h,
                    s.w
                );
            }
        }
    }
    out + "}\n"
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Node, Op, Shape};

    #[test]
    fn dot_and_json_name_every_node() {
        let mut g = Graph::default();
        let x = g.add_tensor("data", Shape::new(1, 1, 2, 2));
        let y = g.add_tensor("y", Shape::new(1, 1, 2, 2));
        g.inputs.push(x);
        g.outputs.push(y);
        g.add_node(Node {
            name: "id\"1".into(),
            source_type: "Dropout".into(),
            op: Op::Identity,
            inputs: vec![x],
            outputs: vec![y],
        });
        let dot = ir_dot(&g);
        assert!(dot.contains("n0 [label=\"id\\\"1\\nIdentity\"]"), "{dot}");
        assert!(dot.contains("in0 -> n0"));
        let v: serde_json::Value = serde_json::from_str(&ir_json(&g)).unwrap();
        assert_eq!(v["nodes"][0]["inputs"][0], "data");
    }
}
