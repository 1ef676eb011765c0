//! Puts the linker script and the image's linker fragment where the linker finds them.
//!
//! `NVDLA_IMAGE_LD` names the `nvdla-image.ld` that `nvdla-runtime --export-baremetal`
//! wrote for the image the program will run; without it a default fragment is used (an
//! image of up to 512 MiB at 0x4800_0000).
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    std::fs::copy(here.join("link.x"), out.join("link.x")).expect("copying link.x");
    let fragment = std::env::var_os("NVDLA_IMAGE_LD")
        .map(PathBuf::from)
        .unwrap_or_else(|| here.join("default-image.ld"));
    std::fs::copy(&fragment, out.join("nvdla-image.ld"))
        .unwrap_or_else(|e| panic!("copying {}: {e}", fragment.display()));
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=link.x");
    println!("cargo:rerun-if-changed=default-image.ld");
    println!("cargo:rerun-if-changed={}", fragment.display());
    println!("cargo:rerun-if-env-changed=NVDLA_IMAGE_LD");
}
