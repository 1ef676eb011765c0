//! The parts of Caffe's `caffe.proto` that a `.caffemodel` is read through.
//!
//! Hand-written [`prost`] messages with Caffe's field numbers; every other field of the
//! real schema (layer parameters, `diff`, solver state) is skipped as unknown while
//! decoding. The trained network is a `NetParameter` whose layers carry their parameter
//! blobs, either in the current form (`layer`, a `LayerParameter`, field 100) or in the
//! legacy one (`layers`, a `V1LayerParameter`, field 2; the oldest files keep name and
//! blobs in a nested `V0LayerParameter`).
//!
//! The same types encode, which the tests use to write small models.

/// `BlobShape`: the dimensions of a blob, outermost first.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BlobShape {
    /// Dimensions (field 1, packed).
    #[prost(int64, repeated, tag = "1")]
    pub dim: Vec<i64>,
}

/// `BlobProto`: one parameter array.
///
/// The shape is `shape`, or, if any of them is present, the legacy 4-D
/// `num x channels x height x width`. The values are `double_data` when it is not empty,
/// else `data`; both decode whether packed or not.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BlobProto {
    /// Legacy dimension 0 (field 1).
    #[prost(int64, optional, tag = "1")]
    pub num: Option<i64>,
    /// Legacy dimension 1 (field 2).
    #[prost(int64, optional, tag = "2")]
    pub channels: Option<i64>,
    /// Legacy dimension 2 (field 3).
    #[prost(int64, optional, tag = "3")]
    pub height: Option<i64>,
    /// Legacy dimension 3 (field 4).
    #[prost(int64, optional, tag = "4")]
    pub width: Option<i64>,
    /// Single-precision values (field 5).
    #[prost(float, repeated, tag = "5")]
    pub data: Vec<f32>,
    /// Shape (field 7).
    #[prost(message, optional, tag = "7")]
    pub shape: Option<BlobShape>,
    /// Double-precision values (field 8).
    #[prost(double, repeated, tag = "8")]
    pub double_data: Vec<f64>,
}

impl BlobProto {
    /// A blob of `dims` (in `shape`) holding `data`.
    pub fn new(dims: &[i64], data: Vec<f32>) -> Self {
        Self {
            shape: Some(BlobShape { dim: dims.to_vec() }),
            data,
            ..Default::default()
        }
    }

    /// The dimensions as Caffe reads them: legacy `num/channels/height/width` if any is
    /// present (absent ones 0), else `shape`, else `None` (no shape recorded).
    pub fn dims(&self) -> Option<Vec<i64>> {
        if self.num.is_some()
            || self.channels.is_some()
            || self.height.is_some()
            || self.width.is_some()
        {
            Some(vec![
                self.num.unwrap_or(0),
                self.channels.unwrap_or(0),
                self.height.unwrap_or(0),
                self.width.unwrap_or(0),
            ])
        } else {
            self.shape.as_ref().map(|s| s.dim.clone())
        }
    }

    /// Number of values stored.
    pub fn value_count(&self) -> usize {
        if self.double_data.is_empty() {
            self.data.len()
        } else {
            self.double_data.len()
        }
    }

    /// The values as `f32` (`double_data` rounded if that is what is stored).
    pub fn values(&self) -> Vec<f32> {
        if self.double_data.is_empty() {
            self.data.clone()
        } else {
            self.double_data.iter().map(|&v| v as f32).collect()
        }
    }
}

/// `LayerParameter` (current form): only what weight loading needs.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LayerParameter {
    /// Layer name (field 1).
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// Layer type (field 2).
    #[prost(string, optional, tag = "2")]
    pub r#type: Option<String>,
    /// Input blob names (field 3).
    #[prost(string, repeated, tag = "3")]
    pub bottom: Vec<String>,
    /// Output blob names (field 4).
    #[prost(string, repeated, tag = "4")]
    pub top: Vec<String>,
    /// Trained parameters (field 7).
    #[prost(message, repeated, tag = "7")]
    pub blobs: Vec<BlobProto>,
}

/// `V0LayerParameter` (the oldest form, nested in a V1 layer as field 1).
#[derive(Clone, PartialEq, prost::Message)]
pub struct V0LayerParameter {
    /// Layer name (field 1).
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// Layer type (field 2).
    #[prost(string, optional, tag = "2")]
    pub r#type: Option<String>,
    /// Trained parameters (field 50).
    #[prost(message, repeated, tag = "50")]
    pub blobs: Vec<BlobProto>,
}

/// `V1LayerParameter` (legacy form).
#[derive(Clone, PartialEq, prost::Message)]
pub struct V1LayerParameter {
    /// Nested V0 layer (field 1).
    #[prost(message, optional, tag = "1")]
    pub layer: Option<V0LayerParameter>,
    /// Input blob names (field 2).
    #[prost(string, repeated, tag = "2")]
    pub bottom: Vec<String>,
    /// Output blob names (field 3).
    #[prost(string, repeated, tag = "3")]
    pub top: Vec<String>,
    /// Layer name (field 4).
    #[prost(string, optional, tag = "4")]
    pub name: Option<String>,
    /// Layer type, a `V1LayerParameter.LayerType` value (field 5).
    #[prost(int32, optional, tag = "5")]
    pub r#type: Option<i32>,
    /// Trained parameters (field 6).
    #[prost(message, repeated, tag = "6")]
    pub blobs: Vec<BlobProto>,
}

/// `NetParameter`: a network with its trained layers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NetParameter {
    /// Network name (field 1).
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// Legacy layers (field 2).
    #[prost(message, repeated, tag = "2")]
    pub layers: Vec<V1LayerParameter>,
    /// Layers (field 100).
    #[prost(message, repeated, tag = "100")]
    pub layer: Vec<LayerParameter>,
}

/// The `V1LayerParameter.LayerType` values: `(enum name, number, current type name)`.
pub const V1_LAYER_TYPES: &[(&str, i64, &str)] = &[
    ("NONE", 0, ""),
    ("ABSVAL", 35, "AbsVal"),
    ("ACCURACY", 1, "Accuracy"),
    ("ARGMAX", 30, "ArgMax"),
    ("BNLL", 2, "BNLL"),
    ("CONCAT", 3, "Concat"),
    ("CONTRASTIVE_LOSS", 37, "ContrastiveLoss"),
    ("CONVOLUTION", 4, "Convolution"),
    ("DATA", 5, "Data"),
    ("DECONVOLUTION", 39, "Deconvolution"),
    ("DROPOUT", 6, "Dropout"),
    ("DUMMY_DATA", 32, "DummyData"),
    ("EUCLIDEAN_LOSS", 7, "EuclideanLoss"),
    ("ELTWISE", 25, "Eltwise"),
    ("EXP", 38, "Exp"),
    ("FLATTEN", 8, "Flatten"),
    ("HDF5_DATA", 9, "HDF5Data"),
    ("HDF5_OUTPUT", 10, "HDF5Output"),
    ("HINGE_LOSS", 28, "HingeLoss"),
    ("IM2COL", 11, "Im2col"),
    ("IMAGE_DATA", 12, "ImageData"),
    ("INFOGAIN_LOSS", 13, "InfogainLoss"),
    ("INNER_PRODUCT", 14, "InnerProduct"),
    ("LRN", 15, "LRN"),
    ("MEMORY_DATA", 29, "MemoryData"),
    ("MULTINOMIAL_LOGISTIC_LOSS", 16, "MultinomialLogisticLoss"),
    ("MVN", 34, "MVN"),
    ("POOLING", 17, "Pooling"),
    ("POWER", 26, "Power"),
    ("RELU", 18, "ReLU"),
    ("SIGMOID", 19, "Sigmoid"),
    ("SIGMOID_CROSS_ENTROPY_LOSS", 27, "SigmoidCrossEntropyLoss"),
    ("SILENCE", 36, "Silence"),
    ("SOFTMAX", 20, "Softmax"),
    ("SOFTMAX_LOSS", 21, "SoftmaxWithLoss"),
    ("SPLIT", 22, "Split"),
    ("SLICE", 33, "Slice"),
    ("TANH", 23, "TanH"),
    ("WINDOW_DATA", 24, "WindowData"),
    ("THRESHOLD", 31, "Threshold"),
];

/// Decodes a `.caffemodel`.
pub fn decode(bytes: &[u8]) -> Result<NetParameter, prost::DecodeError> {
    <NetParameter as prost::Message>::decode(bytes)
}
