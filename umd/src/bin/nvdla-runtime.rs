//! `nvdla-runtime`: run an NVDLA loadable (see [`nvdla_umd::app`]).

fn main() {
    keep_freed_memory();
    let argv: Vec<String> = std::env::args().collect();
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let code = nvdla_umd::app::run(&argv, &nvdla_umd::device::open_device, &mut out, &mut err);
    std::process::exit(code);
}

/// The virtual platform allocates and frees buffers of megabytes for every layer. glibc
/// serves blocks above 128 KiB with `mmap` and unmaps them when freed, so each layer paid
/// for fresh zeroed pages again (about a quarter of ResNet-50's int8 run on the VP).
/// Blocks up to 32 MiB (glibc's largest threshold on 64-bit) now come from the heap, and
/// freed memory stays there for the next layer.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_freed_memory() {
    // SAFETY: `mallopt` only sets allocator parameters. It runs first in `main`, before
    // any other thread exists or anything is allocated by our code; a refused value
    // leaves glibc's default.
    #[allow(unsafe_code)]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_freed_memory() {}
