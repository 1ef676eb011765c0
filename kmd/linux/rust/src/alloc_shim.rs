//! The global allocator: `kvmalloc`/`kvfree` through the glue.
//!
//! Every Rust call runs in process context with one of the device's mutexes held, so the glue
//! may sleep (`GFP_KERNEL`). A null return is an ordinary failure: the driver core only
//! allocates through `try_reserve`-style APIs (`nvdla_kmd::fallible`) and answers `ENOMEM`;
//! the allocation-error handler (which would reach the panic path) is never called for it. `kmalloc` aligns power-of-two sizes naturally and everything to at least
//! `ARCH_KMALLOC_MINALIGN`; `vmalloc` to pages. The glue turns a request for a larger
//! alignment into a power-of-two size (or refuses alignments above a page), so the pointer
//! returned here is always aligned as asked, or null.

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;

extern "C" {
    fn nvdla_glue_alloc(size: usize, align: usize) -> *mut c_void;
    fn nvdla_glue_free(ptr: *mut c_void);
}

struct KernelAlloc;

// SAFETY: `nvdla_glue_alloc` returns either null or a block of at least `size` bytes aligned to
// `align`, exclusively ours until passed to `nvdla_glue_free`, which accepts exactly the
// pointers `nvdla_glue_alloc` returned; both are safe to call from any process context.
unsafe impl GlobalAlloc for KernelAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: FFI call with plain integer arguments; see the impl's contract above.
        unsafe { nvdla_glue_alloc(layout.size(), layout.align()).cast() }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above (GlobalAlloc's caller contract).
        unsafe { nvdla_glue_free(ptr.cast()) }
    }
}

#[global_allocator]
static ALLOCATOR: KernelAlloc = KernelAlloc;
