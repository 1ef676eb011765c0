//! Fuzz the Caffe front end's caffemodel side: protobuf decoding of `NetParameter`
//! (current and legacy layer forms, blob shapes, packed and unpacked values), then weight
//! matching and blob validation against a fixed prototxt that names layers of every kind
//! that carries weights. Any input must give a valid graph or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_compiler::frontend::caffe;

const PROTOTXT: &str = r#"
name: "fuzz"
input: "data"
input_shape { dim: 1 dim: 2 dim: 6 dim: 6 }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 2 kernel_size: 3 pad: 1 } }
layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
layer { name: "prelu" type: "PReLU" bottom: "conv" top: "conv" }
layer { name: "bias" type: "Bias" bottom: "conv" top: "conv" }
layer { name: "deconv" type: "Deconvolution" bottom: "conv" top: "deconv"
        convolution_param { num_output: 2 kernel_size: 2 stride: 2 group: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "deconv" top: "ip"
        inner_product_param { num_output: 2 transpose: true } }
"#;

fuzz_target!(|data: &[u8]| {
    let _ = caffe::decode_caffemodel(data, "fuzz");
    if let Ok(g) = caffe::load(PROTOTXT, data) {
        g.check().expect("the front end must produce a valid graph");
    }
});
