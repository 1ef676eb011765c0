//! The text formats of the trace players: v2 `.cfg` command lists and `.dat` surface files.
//! Malformed input gives an error with file and line, never a panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use nvdla_vp::trace::{cfg, dat};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = cfg::parse(Path::new("fuzz.cfg"), text);
    if let Ok(chunks) = dat::parse(Path::new("fuzz.dat"), text) {
        let _ = dat::flatten(&chunks);
    }
});
