//! The checked-in C header (`capi/include/nvdla.h`) is what cbindgen makes from the
//! source: a stale header fails here. `NVDLA_BLESS=1` rewrites it.

use std::path::PathBuf;

#[test]
fn header_matches_the_source() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).unwrap();
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen")
        .write(&mut generated);
    let generated = String::from_utf8(generated).unwrap();
    let path = dir.join("include/nvdla.h");
    if std::env::var_os("NVDLA_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == generated,
        "{} is stale: regenerate it with NVDLA_BLESS=1 cargo test -p nvdla-capi --test header",
        path.display()
    );
}
