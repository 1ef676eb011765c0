//! Write a one-operation BDMA copy loadable, built with the project's own
//! builder: `cargo run -p nvdla-loadable --example bdma_copy -- OUT.nvdla`.
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(out) = std::env::args_os().nth(1) else {
        eprintln!("usage: bdma_copy OUT.nvdla");
        return ExitCode::FAILURE;
    };
    let bytes = nvdla_loadable::examples::bdma_copy(8, 8).build();
    if let Err(e) = std::fs::write(&out, &bytes) {
        eprintln!("bdma_copy: cannot write {}: {e}", out.to_string_lossy());
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {} bytes to {}", bytes.len(), out.to_string_lossy());
    ExitCode::SUCCESS
}
