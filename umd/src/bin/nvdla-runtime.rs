//! `nvdla-runtime`: run an NVDLA loadable (see [`nvdla_umd::app`]).

fn main() {
    // The model's per-layer buffers reuse freed memory.
    #[cfg(feature = "vp")]
    nvdla_port::vp::keep_freed_memory();
    let argv: Vec<String> = std::env::args().collect();
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let code = nvdla_umd::app::run(&argv, &nvdla_umd::device::open_device, &mut out, &mut err);
    std::process::exit(code);
}
