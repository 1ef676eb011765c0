//! Keep the two entry points as GC roots, and leave the port's C functions unresolved
//! (the image is measured, never run).
fn main() {
    for arg in [
        "--entry=nvdla_execute_task",
        "--undefined=nvdla_interrupt",
        "--unresolved-symbols=ignore-all",
    ] {
        println!("cargo:rustc-link-arg={arg}");
    }
}
