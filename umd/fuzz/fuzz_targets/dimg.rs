//! `.dimg` files: parse, then serialize, dump and print what parsed; a parsed image must
//! serialize back to bytes that parse to the same image.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nvdla_umd::dimg::DlaImage;

fuzz_target!(|data: &[u8]| {
    let Ok(img) = DlaImage::read(data) else { return };
    let bytes = img.write_with(false);
    let again = DlaImage::read(&bytes).expect("a written image parses");
    assert_eq!(again.header(), img.header());
    let _ = img.raw_dump();
    let _ = img.print_buffer(true);
    let h = img.header();
    for c in 0..h.channel.min(4) {
        let _ = img.value(0, 0, c);
    }
});
