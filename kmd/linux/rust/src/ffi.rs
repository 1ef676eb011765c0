//! The functions the C glue calls (`nvdla_rs_*`, declared in `nvdla_glue.h`).
//!
//! Conventions: every function returns 0 or a negative Linux errno; out-parameters are
//! written only on success; pointers come from the glue, which guarantees they are valid for
//! the call (user memory has already been copied into the kernel). Calls on one device are
//! serialized by the glue's device mutex. Nothing here trusts the values: counts, flags,
//! handles and offsets are all checked by the driver core.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ffi::c_void;

use nvdla_firmware::{nvdla_hw, HwConfig};
use nvdla_kmd::bo::{BoConfig, ClientId};
use nvdla_kmd::submit::{self, MemHandle, SubmitDesc, TaskDesc};
use nvdla_kmd::{Error, Kmd};

use crate::os::LinuxOs;
use crate::rt;

/// One driver instance, opaque to C.
pub struct NvdlaRs {
    kmd: Kmd<LinuxOs>,
}

/// `struct nvdla_mem_handle` of the uapi (the glue copies address lists into arrays of it).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NvdlaMemHandle {
    /// Buffer handle.
    pub handle: u32,
    /// Reserved, must be zero.
    pub reserved: u32,
    /// Byte offset in the buffer.
    pub offset: u64,
}
const _: () = assert!(core::mem::size_of::<NvdlaMemHandle>() == 16);

/// One task after `copy_from_user`: the glue's `struct nvdla_rs_task`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NvdlaRsTask {
    /// Entries at `addresses`.
    pub num_addresses: u32,
    /// Timeout in milliseconds (`u32::MAX`: none).
    pub timeout: u32,
    /// Kernel copy of the address list (may be null when `num_addresses` is 0).
    pub addresses: *const NvdlaMemHandle,
}

/// Hardware configuration selectors of [`nvdla_rs_new`] (`enum nvdla_hw` of
/// `nvdla_glue.h`) and the builds they select.
const HW_BUILDS: [(u32, &nvdla_hw::Config); 7] = [
    (0, &nvdla_hw::NV_FULL),
    (1, &nvdla_hw::NV_SMALL),
    (2, &nvdla_hw::NV_LARGE),
    (3, &nvdla_hw::NV_MEDIUM_1024_FULL),
    (4, &nvdla_hw::NV_MEDIUM_512),
    (5, &nvdla_hw::NV_SMALL_256),
    (6, &nvdla_hw::NV_SMALL_256_FULL),
];

fn errno(e: Error) -> i32 {
    -e.errno()
}

fn result(r: Result<(), Error>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => errno(e),
    }
}

/// Borrows the device behind `rs`, or `None` for null.
///
/// # Safety
/// `rs` must be null or a pointer returned by [`nvdla_rs_new`] and not yet freed, with no
/// other reference to it alive (the glue's mutex).
unsafe fn device<'a>(rs: *mut NvdlaRs) -> Option<&'a mut NvdlaRs> {
    // SAFETY: the caller's contract.
    unsafe { rs.as_mut() }
}

/// Creates the driver for the glue device `ctx` (passed back to every `nvdla_glue_*` call)
/// with buffers in the device-address window `[iova_base, iova_base + iova_size)` and
/// hardware `hw` (0 nv_full, 1 nv_small, 2 nv_large, 3 nv_medium_1024_full,
/// 4 nv_medium_512, 5 nv_small_256, 6 nv_small_256_full). Resets the hardware. Writes the
/// offset of the interrupt status register to `*intr_status`. Null on failure (logged).
///
/// # Safety
/// `ctx` must outlive the returned device; `intr_status` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_new(
    ctx: *mut c_void,
    hw: u32,
    iova_base: u64,
    iova_size: u64,
    max_bo_size: u64,
    debug: bool,
    intr_status: *mut u32,
) -> *mut NvdlaRs {
    rt::init_logging(debug);
    let hw = match HW_BUILDS.iter().find(|(id, _)| *id == hw) {
        Some((_, build)) => HwConfig::new(build),
        None => {
            rt::log_line(
                log::Level::Error,
                format_args!("unknown hardware configuration {hw}"),
            );
            return core::ptr::null_mut();
        }
    };
    let os = LinuxOs::new(ctx, &hw);
    let status_offset = os.intr_status_offset();
    let bos = BoConfig {
        iova_base,
        iova_size,
        max_bo_size: max_bo_size.min(iova_size),
        ..BoConfig::default()
    };
    match Kmd::new(os, hw, bos) {
        Ok(kmd) => {
            // SAFETY: the caller's contract.
            unsafe { intr_status.write(status_offset) };
            Box::into_raw(Box::new(NvdlaRs { kmd }))
        }
        Err(e) => {
            rt::log_line(
                log::Level::Error,
                format_args!(
                    "cannot create the driver: {e} (window {iova_base:#x}+{iova_size:#x})"
                ),
            );
            core::ptr::null_mut()
        }
    }
}

/// Frees a device from [`nvdla_rs_new`] (null is ignored).
///
/// # Safety
/// `rs` must be null or from [`nvdla_rs_new`], not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_free(rs: *mut NvdlaRs) {
    if !rs.is_null() {
        // SAFETY: the caller's contract: `rs` came from `Box::into_raw` in `nvdla_rs_new`.
        drop(unsafe { Box::from_raw(rs) });
    }
}

/// GEM_CREATE. On success `*handle` is the new buffer and `*iova`/`*len` its device range
/// (the glue zeroes it).
///
/// # Safety
/// `rs` as [`device`]; the out-pointers valid for writes.
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_gem_create(
    rs: *mut NvdlaRs,
    client: u32,
    size: u64,
    flags: u32,
    handle: *mut u32,
    iova: *mut u64,
    len: *mut u64,
) -> i32 {
    // SAFETY: the caller's contract.
    let Some(d) = (unsafe { device(rs) }) else {
        return errno(Error::Invalid);
    };
    let client = ClientId(client);
    let h = match d.kmd.gem_create(client, size, flags) {
        Ok(h) => h,
        Err(e) => return errno(e),
    };
    match d.kmd.bo(client, h.get()) {
        Ok(bo) => {
            // SAFETY: the caller's contract.
            unsafe {
                handle.write(h.get());
                iova.write(bo.iova.0);
                len.write(bo.iova_len);
            }
            0
        }
        Err(e) => errno(e),
    }
}

/// GEM_MMAP: `*offset` is the fake offset to pass to `mmap(2)`.
///
/// # Safety
/// `rs` as [`device`]; `offset` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_gem_mmap(
    rs: *mut NvdlaRs,
    client: u32,
    handle: u32,
    offset: *mut u64,
) -> i32 {
    // SAFETY: the caller's contract.
    let Some(d) = (unsafe { device(rs) }) else {
        return errno(Error::Invalid);
    };
    match d.kmd.gem_mmap(ClientId(client), handle) {
        Ok(o) => {
            // SAFETY: the caller's contract.
            unsafe { offset.write(o) };
            0
        }
        Err(e) => errno(e),
    }
}

/// GEM_DESTROY (`EBUSY` while a task runs on the buffer or user space maps it).
///
/// # Safety
/// `rs` as [`device`].
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_gem_destroy(rs: *mut NvdlaRs, client: u32, handle: u32) -> i32 {
    // SAFETY: the caller's contract.
    let Some(d) = (unsafe { device(rs) }) else {
        return errno(Error::Invalid);
    };
    result(d.kmd.gem_destroy(ClientId(client), handle))
}

/// `mmap(2)` of the fake `offset`: finds `client`'s buffer, pins it until
/// [`nvdla_rs_mmap_release`], and returns its handle and device range.
///
/// # Safety
/// `rs` as [`device`]; the out-pointers valid for writes.
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_mmap_lookup(
    rs: *mut NvdlaRs,
    client: u32,
    offset: u64,
    handle: *mut u32,
    iova: *mut u64,
    len: *mut u64,
) -> i32 {
    // SAFETY: the caller's contract.
    let Some(d) = (unsafe { device(rs) }) else {
        return errno(Error::Invalid);
    };
    let client = ClientId(client);
    let (h, bo) = match d.kmd.bos().by_mmap_offset(client, offset) {
        Ok((h, bo)) => (h.get(), *bo),
        Err(e) => return errno(e),
    };
    if let Err(e) = d.kmd.pin_bo(client, h) {
        return errno(e);
    }
    // SAFETY: the caller's contract.
    unsafe {
        handle.write(h);
        iova.write(bo.iova.0);
        len.write(bo.iova_len);
    }
    0
}

/// Drops the pin of a mapping made by [`nvdla_rs_mmap_lookup`] (the VMA was closed).
///
/// # Safety
/// `rs` as [`device`].
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_mmap_release(rs: *mut NvdlaRs, client: u32, handle: u32) -> i32 {
    // SAFETY: the caller's contract.
    let Some(d) = (unsafe { device(rs) }) else {
        return errno(Error::Invalid);
    };
    result(d.kmd.unpin_bo(ClientId(client), handle))
}

/// The client's file was closed: frees its buffers. Returns how many were still busy.
///
/// # Safety
/// `rs` as [`device`].
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_close_client(rs: *mut NvdlaRs, client: u32) -> u32 {
    // SAFETY: the caller's contract.
    let Some(d) = (unsafe { device(rs) }) else {
        return 0;
    };
    u32::try_from(d.kmd.close_client(ClientId(client))).unwrap_or(u32::MAX)
}

/// The submit header's checks, before the glue copies anything else from user space.
#[no_mangle]
pub extern "C" fn nvdla_rs_check_submit(num_tasks: u16, flags: u16, version: u32) -> i32 {
    match submit::check_header(usize::from(num_tasks), flags, version) {
        Ok(()) => 0,
        Err(e) => -e.errno(),
    }
}

/// A task's address count check, before the glue copies its address list.
#[no_mangle]
pub extern "C" fn nvdla_rs_check_task(task: u32, num_addresses: u32) -> i32 {
    let task = usize::try_from(task).unwrap_or(usize::MAX);
    let n = usize::try_from(num_addresses).unwrap_or(usize::MAX);
    match submit::check_task_count(task, n) {
        Ok(()) => 0,
        Err(e) => -e.errno(),
    }
}

/// SUBMIT: validates and runs `num_tasks` tasks at `tasks`, waiting for them.
///
/// # Safety
/// `rs` as [`device`]; `tasks` points to `num_tasks` tasks whose `addresses` point to
/// `num_addresses` entries each (kernel memory, valid for the call).
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_submit(
    rs: *mut NvdlaRs,
    client: u32,
    tasks: *const NvdlaRsTask,
    num_tasks: u16,
    flags: u16,
    version: u32,
) -> i32 {
    // SAFETY: the caller's contract.
    let Some(d) = (unsafe { device(rs) }) else {
        return errno(Error::Invalid);
    };
    let raw: &[NvdlaRsTask] = if num_tasks == 0 || tasks.is_null() {
        &[]
    } else {
        // SAFETY: the caller's contract: `num_tasks` valid tasks at `tasks`.
        unsafe { core::slice::from_raw_parts(tasks, usize::from(num_tasks)) }
    };
    let mut lists: Vec<Vec<MemHandle>> = Vec::new();
    if lists.try_reserve_exact(raw.len()).is_err() {
        return errno(Error::NoMemory);
    }
    for t in raw {
        let entries: &[NvdlaMemHandle] = if t.num_addresses == 0 || t.addresses.is_null() {
            &[]
        } else {
            // SAFETY: the caller's contract: `num_addresses` entries at `addresses`.
            unsafe { core::slice::from_raw_parts(t.addresses, t.num_addresses as usize) }
        };
        let mut list = Vec::new();
        if list.try_reserve_exact(entries.len()).is_err() {
            return errno(Error::NoMemory);
        }
        list.extend(entries.iter().map(|m| MemHandle {
            handle: m.handle,
            reserved: m.reserved,
            offset: m.offset,
        }));
        lists.push(list);
    }
    let descs: Vec<TaskDesc<'_>> = raw
        .iter()
        .zip(&lists)
        .map(|(t, list)| TaskDesc {
            timeout: t.timeout,
            addresses: list,
        })
        .collect();
    let desc = SubmitDesc {
        flags,
        version,
        tasks: &descs,
    };
    match d.kmd.submit(ClientId(client), &desc) {
        Ok(_) => 0,
        Err(failure) => {
            rt::log_line(log::Level::Warn, format_args!("client {client}: {failure}"));
            -failure.error().errno()
        }
    }
}
