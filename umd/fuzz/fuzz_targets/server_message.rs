//! Server mode framing: a stream of `<size>\n<bytes>` messages from an untrusted client.
#![no_main]

use std::io::BufReader;

use libfuzzer_sys::fuzz_target;
use nvdla_umd::server::read_message;

fuzz_target!(|data: &[u8]| {
    let mut r = BufReader::new(data);
    for _ in 0..64 {
        match read_message(&mut r) {
            Ok(m) => assert!(m.len() <= data.len()),
            Err(_) => break,
        }
    }
});
