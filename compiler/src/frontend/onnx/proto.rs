//! The parts of ONNX's `onnx.proto` that a model is read through.
//!
//! Hand-written [`prost`] messages with ONNX's field numbers (as the Caffe front end does:
//! no protoc, no generated code). Fields the front end does not read (documentation,
//! metadata, training information, functions,
//! sparse tensors, sequence and map types) are skipped as unknown while decoding, so a
//! model that uses them still decodes; a node that needs them is refused by the mapping.
//!
//! `oneof` fields are written as optional fields with the oneof's numbers (decoding is the
//! same). The same types encode, which the tests use to write small models.

/// `TensorProto.DataType` values the front end names.
pub mod data_type {
    /// `FLOAT` (f32).
    pub const FLOAT: i32 = 1;
    /// `UINT8`.
    pub const UINT8: i32 = 2;
    /// `INT8`.
    pub const INT8: i32 = 3;
    /// `UINT16`.
    pub const UINT16: i32 = 4;
    /// `INT16`.
    pub const INT16: i32 = 5;
    /// `INT32`.
    pub const INT32: i32 = 6;
    /// `INT64`.
    pub const INT64: i32 = 7;
    /// `STRING`.
    pub const STRING: i32 = 8;
    /// `BOOL`.
    pub const BOOL: i32 = 9;
    /// `FLOAT16`.
    pub const FLOAT16: i32 = 10;
    /// `DOUBLE` (f64).
    pub const DOUBLE: i32 = 11;
    /// `UINT32`.
    pub const UINT32: i32 = 12;
    /// `UINT64`.
    pub const UINT64: i32 = 13;
    /// `BFLOAT16`.
    pub const BFLOAT16: i32 = 16;

    /// The ONNX name of a data type.
    pub fn name(t: i32) -> &'static str {
        match t {
            0 => "UNDEFINED",
            FLOAT => "FLOAT",
            UINT8 => "UINT8",
            INT8 => "INT8",
            UINT16 => "UINT16",
            INT16 => "INT16",
            INT32 => "INT32",
            INT64 => "INT64",
            STRING => "STRING",
            BOOL => "BOOL",
            FLOAT16 => "FLOAT16",
            DOUBLE => "DOUBLE",
            UINT32 => "UINT32",
            UINT64 => "UINT64",
            14 => "COMPLEX64",
            15 => "COMPLEX128",
            BFLOAT16 => "BFLOAT16",
            17..=20 => "FLOAT8",
            21 | 22 => "INT4/UINT4",
            23 => "FLOAT4E2M1",
            _ => "unknown",
        }
    }
}

/// `AttributeProto.AttributeType` values.
pub mod attribute_type {
    /// Not recorded (older writers): the type follows from the field that is set.
    pub const UNDEFINED: i32 = 0;
    /// `f`.
    pub const FLOAT: i32 = 1;
    /// `i`.
    pub const INT: i32 = 2;
    /// `s`.
    pub const STRING: i32 = 3;
    /// `t`.
    pub const TENSOR: i32 = 4;
    /// `g` (not decoded).
    pub const GRAPH: i32 = 5;
    /// `floats`.
    pub const FLOATS: i32 = 6;
    /// `ints`.
    pub const INTS: i32 = 7;
    /// `strings`.
    pub const STRINGS: i32 = 8;
    /// `tensors`.
    pub const TENSORS: i32 = 9;
}

/// `OperatorSetIdProto`: an operator set the model uses.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    /// Domain (`""` or `ai.onnx` is the default operator set) (field 1).
    #[prost(string, tag = "1")]
    pub domain: String,
    /// Version (field 2).
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// `TensorProto`: a constant (initializer, attribute value, test data).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// Dimensions, outermost first (field 1).
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    /// Element type, a [`data_type`] value (field 2).
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// Present for a segment of a split tensor (field 3; refused).
    #[prost(message, optional, tag = "3")]
    pub segment: Option<Segment>,
    /// FLOAT values (field 4).
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16 and BFLOAT16 (bit patterns)
    /// values (field 5).
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    /// STRING values (field 6; refused).
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub string_data: Vec<Vec<u8>>,
    /// INT64 values (field 7).
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    /// Name (field 8).
    #[prost(string, tag = "8")]
    pub name: String,
    /// Values as little-endian bytes of the element type (field 9).
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
    /// DOUBLE values (field 10).
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    /// UINT32 and UINT64 values (field 11).
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
    /// Where external data lives (field 13; refused).
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    /// `DEFAULT` (0) or `EXTERNAL` (1) (field 14).
    #[prost(int32, tag = "14")]
    pub data_location: i32,
}

/// `TensorProto.Segment`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Segment {
    /// First element (field 1).
    #[prost(int64, tag = "1")]
    pub begin: i64,
    /// End (field 2).
    #[prost(int64, tag = "2")]
    pub end: i64,
}

/// `StringStringEntryProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    /// Key (field 1).
    #[prost(string, tag = "1")]
    pub key: String,
    /// Value (field 2).
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `TensorShapeProto.Dimension`: a size, a symbolic name, or neither (unknown).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    /// Known size (oneof `value`, field 1).
    #[prost(int64, optional, tag = "1")]
    pub dim_value: Option<i64>,
    /// Symbolic size (oneof `value`, field 2).
    #[prost(string, optional, tag = "2")]
    pub dim_param: Option<String>,
}

/// `TensorShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    /// Dimensions, outermost first (field 1).
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

/// `TypeProto.Tensor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorTypeProto {
    /// Element type, a [`data_type`] value (field 1).
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    /// Shape; absent means the rank is unknown too (field 2).
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// `TypeProto`: only the tensor type (oneof `value`, field 1) is decoded; sequences, maps,
/// optionals and sparse tensors leave it absent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    /// Dense tensor type (field 1).
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TensorTypeProto>,
}

/// `ValueInfoProto`: a graph input, output or intermediate value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    /// Name (field 1).
    #[prost(string, tag = "1")]
    pub name: String,
    /// Type (field 2).
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
}

/// `AttributeProto`: a node attribute. Sparse tensors and type protos are not decoded.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    /// Name (field 1).
    #[prost(string, tag = "1")]
    pub name: String,
    /// Float value (field 2).
    #[prost(float, tag = "2")]
    pub f: f32,
    /// Integer value (field 3).
    #[prost(int64, tag = "3")]
    pub i: i64,
    /// String value (field 4).
    #[prost(bytes = "vec", tag = "4")]
    pub s: Vec<u8>,
    /// Tensor value (field 5).
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    /// Sub-graph (field 6): an `If` branch, a `Loop` or `Scan` body.
    #[prost(message, optional, tag = "6")]
    pub g: Option<GraphProto>,
    /// Float list (field 7).
    #[prost(float, repeated, tag = "7")]
    pub floats: Vec<f32>,
    /// Integer list (field 8).
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
    /// String list (field 9).
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub strings: Vec<Vec<u8>>,
    /// Tensor list (field 10).
    #[prost(message, repeated, tag = "10")]
    pub tensors: Vec<TensorProto>,
    /// Sub-graph list (field 11).
    #[prost(message, repeated, tag = "11")]
    pub graphs: Vec<GraphProto>,
    /// Type, an [`attribute_type`] value (field 20).
    #[prost(int32, tag = "20")]
    pub r#type: i32,
    /// Reference to an attribute of the enclosing function (field 21; refused).
    #[prost(string, tag = "21")]
    pub ref_attr_name: String,
}

/// `NodeProto`: one operator application.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    /// Input value names; `""` is an absent optional input (field 1).
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    /// Output value names; `""` is an unused optional output (field 2).
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    /// Name (field 3).
    #[prost(string, tag = "3")]
    pub name: String,
    /// Operator (field 4).
    #[prost(string, tag = "4")]
    pub op_type: String,
    /// Attributes (field 5).
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
    /// Operator domain (field 7).
    #[prost(string, tag = "7")]
    pub domain: String,
}

/// `GraphProto`: the network.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    /// Nodes in topological order (field 1).
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    /// Name (field 2).
    #[prost(string, tag = "2")]
    pub name: String,
    /// Constants (field 5).
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    /// Inputs; those with an initializer of the same name are constants (field 11).
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    /// Outputs (field 12).
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    /// Types of intermediate values (field 13).
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
}

/// `ModelProto`: a model file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    /// IR version (field 1).
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    /// Producer (field 2).
    #[prost(string, tag = "2")]
    pub producer_name: String,
    /// Producer version (field 3).
    #[prost(string, tag = "3")]
    pub producer_version: String,
    /// The graph (field 7).
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    /// Operator sets (field 8).
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
}

/// Decodes a model file.
pub fn decode(bytes: &[u8]) -> Result<ModelProto, prost::DecodeError> {
    <ModelProto as prost::Message>::decode(bytes)
}

/// Decodes a serialized `TensorProto` (the backend tests' `input_K.pb`, `output_K.pb`).
pub fn decode_tensor(bytes: &[u8]) -> Result<TensorProto, prost::DecodeError> {
    <TensorProto as prost::Message>::decode(bytes)
}
