//! Writing small ONNX models with the front end's own prost messages.

use nvdla_compiler::frontend::onnx::proto::*;
use prost::Message as _;

pub fn tf(name: &str, dims: &[i64], data: Vec<f32>) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: data_type::FLOAT,
        float_data: data,
        ..Default::default()
    }
}

pub fn ti(name: &str, dims: &[i64], data: Vec<i64>) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: data_type::INT64,
        int64_data: data,
        ..Default::default()
    }
}

/// A FLOAT value of `dims` (`-1`: a symbolic dimension `N`).
pub fn vi(name: &str, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: data_type::FLOAT,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| {
                            if d < 0 {
                                Dimension {
                                    dim_value: None,
                                    dim_param: Some("N".into()),
                                }
                            } else {
                                Dimension {
                                    dim_value: Some(d),
                                    dim_param: None,
                                }
                            }
                        })
                        .collect(),
                }),
            }),
        }),
    }
}

pub enum A {
    I(i64),
    Is(Vec<i64>),
    F(f32),
    Fs(Vec<f32>),
    S(&'static str),
    T(Box<TensorProto>),
}

pub fn node(op: &str, name: &str, ins: &[&str], outs: &[&str], attrs: Vec<(&str, A)>) -> NodeProto {
    NodeProto {
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: outs.iter().map(|s| s.to_string()).collect(),
        name: name.into(),
        op_type: op.into(),
        attribute: attrs
            .into_iter()
            .map(|(n, a)| {
                let mut p = AttributeProto {
                    name: n.into(),
                    ..Default::default()
                };
                match a {
                    A::I(v) => {
                        p.r#type = attribute_type::INT;
                        p.i = v;
                    }
                    A::Is(v) => {
                        p.r#type = attribute_type::INTS;
                        p.ints = v;
                    }
                    A::F(v) => {
                        p.r#type = attribute_type::FLOAT;
                        p.f = v;
                    }
                    A::Fs(v) => {
                        p.r#type = attribute_type::FLOATS;
                        p.floats = v;
                    }
                    A::S(v) => {
                        p.r#type = attribute_type::STRING;
                        p.s = v.as_bytes().to_vec();
                    }
                    A::T(t) => {
                        p.r#type = attribute_type::TENSOR;
                        p.t = Some(*t);
                    }
                }
                p
            })
            .collect(),
        domain: String::new(),
    }
}

/// A model: one input `x` of `in_dims`, the nodes, initializers, output `y`.
pub fn model_with(
    opset: i64,
    inputs: Vec<ValueInfoProto>,
    nodes: Vec<NodeProto>,
    inits: Vec<TensorProto>,
    outputs: &[&str],
) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        producer_name: "test".into(),
        producer_version: String::new(),
        graph: Some(GraphProto {
            node: nodes,
            name: "t".into(),
            initializer: inits,
            input: inputs,
            output: outputs.iter().map(|o| vi(o, &[])).collect(),
            value_info: vec![],
        }),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
    }
    .encode_to_vec()
}

pub fn model(
    opset: i64,
    in_dims: &[i64],
    nodes: Vec<NodeProto>,
    inits: Vec<TensorProto>,
) -> Vec<u8> {
    model_with(opset, vec![vi("x", in_dims)], nodes, inits, &["y"])
}
