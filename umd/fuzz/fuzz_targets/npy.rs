//! `.npy` files: parse; a parsed array must write back to bytes that parse to the same
//! array, and converting it into an input tensor (whose format, type and geometry come
//! from the input too) may fail but must not panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_umd::npy;

mod common;

fuzz_target!(|data: &[u8]| {
    // 12 bytes of tensor parameters, then the file.
    let Some((p, file)) = data.split_first_chunk::<12>() else {
        return;
    };
    let Ok(t) = npy::read(file) else { return };
    let again = npy::read(&npy::write(&t)).expect("a written array parses");
    assert_eq!(again, t);
    common::convert(p, &t);
});
