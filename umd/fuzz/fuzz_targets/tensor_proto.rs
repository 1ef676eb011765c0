//! ONNX `TensorProto` messages: decode; a decoded tensor must re-encode (as raw_data) to a
//! message that decodes to the same tensor, and converting it into an input tensor may
//! fail but must not panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_umd::onnx;

mod common;

fuzz_target!(|data: &[u8]| {
    let Some((p, msg)) = data.split_first_chunk::<12>() else {
        return;
    };
    let Ok(t) = onnx::read(msg) else { return };
    let again = onnx::read(&onnx::write(&t.name, &t.tensor)).expect("a written tensor decodes");
    assert_eq!(again.tensor, t.tensor);
    common::convert(p, &t.tensor);
});
