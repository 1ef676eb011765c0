//! Fuzz the ONNX front end: protobuf decoding of `ModelProto` (graph, nodes, attributes,
//! tensors in every encoding), then the whole graph walk (constant folding, shape
//! arithmetic, every operator mapping). Any input must give a valid graph or an error,
//! never a panic; a small graph must also run on the fp32 reference without panicking
//! (its shapes are the ones the front end recorded).
//!
//! Seeds: `shared/models/onnx/mnist-cntk.onnx` and the backend tests' `model.onnx` files,
//! e.g. `cp ../../../shared/models/onnx/backend-tests-1.22.0/node/*/model.onnx`-style
//! copies into `corpus/onnx/`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_compiler::frontend::onnx;

/// Graphs up to this many elements in all are also run on the reference.
const RUN_LIMIT: usize = 1 << 16;

fuzz_target!(|data: &[u8]| {
    let _ = onnx::decode(data, "fuzz");
    if let Ok(g) = onnx::load(data, &onnx::Options::default()) {
        g.check().expect("the front end must produce a valid graph");
        let total: usize = g.tensors.iter().map(|t| t.shape.elements()).sum();
        let weights_ok = g.nodes.len() < 64;
        if total <= RUN_LIMIT && weights_ok {
            let inputs: Vec<_> = g
                .inputs
                .iter()
                .map(|&t| (t, vec![0.5f32; g.shape(t).elements()]))
                .collect();
            let _ = nvdla_compiler::reference::run(&g, &inputs);
        }
    }
});
