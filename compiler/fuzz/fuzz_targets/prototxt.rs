//! Fuzz the Caffe front end's prototxt side: the text-format parser, then the whole
//! network walk (shapes, parameters, in-place renaming) against fixed weights with LeNet's
//! layer names and shapes, so that mutations of LeNet's prototxt get past weight loading.
//! Any input must give a valid graph or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_compiler::frontend::caffe::{
    self,
    proto::{BlobProto, LayerParameter, NetParameter},
};
use prost::Message;
use std::sync::OnceLock;

/// LeNet-shaped weights (conv1, conv2, ip1, ip2) plus a few small layers.
fn weights() -> &'static [u8] {
    static W: OnceLock<Vec<u8>> = OnceLock::new();
    W.get_or_init(|| {
        let layer = |name: &str, blobs: &[&[i64]]| LayerParameter {
            name: Some(name.into()),
            blobs: blobs
                .iter()
                .map(|d| BlobProto::new(d, vec![0.5; d.iter().product::<i64>() as usize]))
                .collect(),
            ..Default::default()
        };
        NetParameter {
            layer: vec![
                layer("conv1", &[&[20, 1, 5, 5], &[20]]),
                layer("conv2", &[&[50, 20, 5, 5], &[50]]),
                layer("ip1", &[&[500, 800], &[500]]),
                layer("ip2", &[&[10, 500], &[10]]),
                layer("bn", &[&[20], &[20], &[1]]),
                layer("scale", &[&[20], &[20]]),
                layer("prelu", &[&[20]]),
            ],
            ..Default::default()
        }
        .encode_to_vec()
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = caffe::parse_prototxt(&text, "fuzz");
    if let Ok(g) = caffe::load(&text, weights()) {
        g.check().expect("the front end must produce a valid graph");
    }
});
