//! The functions the C glue calls (`nvdla_rs_*`, declared in `nvdla_glue.h`).
//!
//! Conventions: every function returns 0 or a negative Linux errno; out-parameters are
//! written only on success; pointers come from the glue, which guarantees they are valid for
//! the call (user memory has already been copied into the kernel). Nothing here trusts the
//! values: counts, flags, handles and offsets are all checked by the driver core.
//!
//! Locking: a device has two halves, each behind one of the glue's two mutexes. The buffer
//! table (every function but [`nvdla_rs_submit_run`]) is behind the *state* lock, held only
//! for short, non-blocking calls; the hardware runner ([`nvdla_rs_submit_run`], which waits
//! for interrupts) is behind the *hardware* lock. The functions reach their half through the
//! raw device pointer ([`bos`], [`runner`]) and never make a reference to the whole
//! [`NvdlaRs`], so the two halves can be in use at once from two threads.
//!
//! Allocation: everything here and in the driver core allocates fallibly (`ENOMEM`); the
//! global allocator's failure path (the panic handler) is never taken for want of memory.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ffi::c_void;

use nvdla_firmware::{nvdla_hw, HwConfig};
use nvdla_kmd::bo::{BoConfig, BoTable, ClientId};
use nvdla_kmd::fallible;
use nvdla_kmd::submit::{self, MemHandle, SubmitDesc, TaskDesc, ValidatedSubmit};
use nvdla_kmd::{begin_submit, end_submit, Error, Kmd, Runner};

use crate::os::LinuxOs;
use crate::rt;

/// One driver instance, opaque to C: the buffer table and the hardware runner, guarded by
/// the glue's state and hardware locks respectively.
pub struct NvdlaRs {
    bos: BoTable,
    runner: Runner<LinuxOs>,
}

/// A submit between [`nvdla_rs_submit_prepare`] and [`nvdla_rs_submit_finish`], opaque to C:
/// validated, its buffers pinned.
pub struct NvdlaRsSubmit {
    submit: ValidatedSubmit,
    client: u32,
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

/// Borrows the buffer table of the device behind `rs`, or `None` for null.
///
/// # Safety
/// `rs` must be null or a pointer returned by [`nvdla_rs_new`] and not yet freed, with no
/// other reference to its buffer table alive (the glue's state lock).
unsafe fn bos<'a>(rs: *mut NvdlaRs) -> Option<&'a mut BoTable> {
    if rs.is_null() {
        return None;
    }
    // SAFETY: the caller's contract; only the `bos` field is borrowed (no reference to the
    // whole device is made, so the runner may be borrowed by another thread meanwhile).
    Some(unsafe { &mut *core::ptr::addr_of_mut!((*rs).bos) })
}

/// Borrows the hardware runner of the device behind `rs`, or `None` for null.
///
/// # Safety
/// As [`bos`], for the runner (the glue's hardware lock).
unsafe fn runner<'a>(rs: *mut NvdlaRs) -> Option<&'a mut Runner<LinuxOs>> {
    if rs.is_null() {
        return None;
    }
    // SAFETY: as in `bos`, for the disjoint `runner` field.
    Some(unsafe { &mut *core::ptr::addr_of_mut!((*rs).runner) })
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
    let made = Kmd::new(os, hw, bos).and_then(|kmd| {
        let (bos, runner) = kmd.into_parts();
        fallible::try_box(NvdlaRs { bos, runner })
    });
    match made {
        Ok(rs) => {
            // SAFETY: the caller's contract.
            unsafe { intr_status.write(status_offset) };
            // A one-element array is laid out as its element: the pointer is the device's.
            Box::into_raw(rs).cast::<NvdlaRs>()
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
        // SAFETY: the caller's contract: `rs` came from `Box::into_raw` of a
        // `Box<[NvdlaRs; 1]>` in `nvdla_rs_new`.
        drop(unsafe { Box::from_raw(rs.cast::<[NvdlaRs; 1]>()) });
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
    let Some(bos) = (unsafe { bos(rs) }) else {
        return errno(Error::Invalid);
    };
    let client = ClientId(client);
    let h = match bos.create(client, size, flags) {
        Ok(h) => h,
        Err(e) => return errno(e),
    };
    match bos.lookup(client, h.get()) {
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
    let Some(bos) = (unsafe { bos(rs) }) else {
        return errno(Error::Invalid);
    };
    match bos.mmap_offset(ClientId(client), handle) {
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
    let Some(bos) = (unsafe { bos(rs) }) else {
        return errno(Error::Invalid);
    };
    result(bos.destroy(ClientId(client), handle).map(|_| ()))
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
    let Some(bos) = (unsafe { bos(rs) }) else {
        return errno(Error::Invalid);
    };
    let client = ClientId(client);
    let (h, bo) = match bos.by_mmap_offset(client, offset) {
        Ok((h, bo)) => (h.get(), *bo),
        Err(e) => return errno(e),
    };
    if let Err(e) = bos.pin(client, h) {
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
    let Some(bos) = (unsafe { bos(rs) }) else {
        return errno(Error::Invalid);
    };
    result(bos.unpin(ClientId(client), handle))
}

/// The client's file was closed: frees its buffers. Returns how many were still busy.
///
/// # Safety
/// `rs` as [`device`].
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_close_client(rs: *mut NvdlaRs, client: u32) -> u32 {
    // SAFETY: the caller's contract.
    let Some(bos) = (unsafe { bos(rs) }) else {
        return 0;
    };
    u32::try_from(bos.release_client(ClientId(client))).unwrap_or(u32::MAX)
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

/// SUBMIT, step 1 (state lock held): validates `num_tasks` tasks at `tasks` for `client`
/// and pins their buffers. On success `*out` is the prepared submit, which the glue must
/// pass to [`nvdla_rs_submit_finish`] whatever happens next.
///
/// # Safety
/// `rs` as [`bos`]; `tasks` points to `num_tasks` tasks whose `addresses` point to
/// `num_addresses` entries each (kernel memory, valid for the call); `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_submit_prepare(
    rs: *mut NvdlaRs,
    client: u32,
    tasks: *const NvdlaRsTask,
    num_tasks: u16,
    flags: u16,
    version: u32,
    out: *mut *mut NvdlaRsSubmit,
) -> i32 {
    // SAFETY: the caller's contract.
    let Some(bos) = (unsafe { bos(rs) }) else {
        return errno(Error::Invalid);
    };
    let raw: &[NvdlaRsTask] = if num_tasks == 0 || tasks.is_null() {
        &[]
    } else {
        // SAFETY: the caller's contract: `num_tasks` valid tasks at `tasks`.
        unsafe { core::slice::from_raw_parts(tasks, usize::from(num_tasks)) }
    };
    let prepared = (|| {
        let mut lists: Vec<Vec<MemHandle>> = fallible::vec_with_capacity(raw.len())?;
        for t in raw {
            let entries: &[NvdlaMemHandle] = if t.num_addresses == 0 || t.addresses.is_null() {
                &[]
            } else {
                // SAFETY: the caller's contract: `num_addresses` entries at `addresses`.
                unsafe { core::slice::from_raw_parts(t.addresses, t.num_addresses as usize) }
            };
            let mut list = fallible::vec_with_capacity(entries.len())?;
            list.extend(entries.iter().map(|m| MemHandle {
                handle: m.handle,
                reserved: m.reserved,
                offset: m.offset,
            }));
            lists.push(list);
        }
        let mut descs = fallible::vec_with_capacity(raw.len())?;
        descs.extend(raw.iter().zip(&lists).map(|(t, list)| TaskDesc {
            timeout: t.timeout,
            addresses: list,
        }));
        let desc = SubmitDesc {
            flags,
            version,
            tasks: &descs,
        };
        // The submit's own allocation first: once its buffers are pinned, nothing may fail.
        let mut slot: Vec<NvdlaRsSubmit> = fallible::vec_with_capacity(1)?;
        let submit = begin_submit(bos, ClientId(client), &desc).map_err(|failure| {
            rt::log_line(log::Level::Warn, format_args!("client {client}: {failure}"));
            failure.error()
        })?;
        slot.push(NvdlaRsSubmit { submit, client });
        // `into_boxed_slice` does not reallocate (capacity 1, length 1); the conversion
        // cannot fail (length 1).
        Box::<[NvdlaRsSubmit; 1]>::try_from(slot.into_boxed_slice()).map_err(|_| Error::NoMemory)
    })();
    match prepared {
        Ok(b) => {
            // SAFETY: the caller's contract.
            unsafe { out.write(Box::into_raw(b).cast::<NvdlaRsSubmit>()) };
            0
        }
        Err(e) => errno(e),
    }
}

/// SUBMIT, step 2 (hardware lock held, state lock not held): runs the prepared submit's
/// tasks in order, waiting for each (killable: a fatal signal abandons the task with
/// `EINTR`). Null `rs` (the device went away since step 1) is `ENODEV`.
///
/// # Safety
/// `rs` null or as [`runner`]; `submit` from [`nvdla_rs_submit_prepare`], not yet finished.
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_submit_run(
    rs: *mut NvdlaRs,
    submit: *const NvdlaRsSubmit,
) -> i32 {
    const ENODEV: i32 = 19;
    // SAFETY: the caller's contract.
    let Some(runner) = (unsafe { runner(rs) }) else {
        return -ENODEV;
    };
    // SAFETY: the caller's contract: a live prepared submit, only read here.
    let Some(s) = (unsafe { submit.as_ref() }) else {
        return errno(Error::Invalid);
    };
    match runner.run(&s.submit) {
        Ok(_) => 0,
        Err(failure) => {
            let client = s.client;
            rt::log_line(log::Level::Warn, format_args!("client {client}: {failure}"));
            -failure.error().errno()
        }
    }
}

/// SUBMIT, step 3 (state lock held): drops the pins of a prepared submit and frees it. `rs`
/// may be null (the device went away: nothing to unpin). Never fails, never allocates.
///
/// # Safety
/// `rs` null or as [`bos`]; `submit` from [`nvdla_rs_submit_prepare`], not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn nvdla_rs_submit_finish(rs: *mut NvdlaRs, submit: *mut NvdlaRsSubmit) {
    if submit.is_null() {
        return;
    }
    // SAFETY: the caller's contract: `submit` came from `Box::into_raw` of a
    // `Box<[NvdlaRsSubmit; 1]>` in `nvdla_rs_submit_prepare`.
    let [s] = *unsafe { Box::from_raw(submit.cast::<[NvdlaRsSubmit; 1]>()) };
    // SAFETY: the caller's contract.
    if let Some(bos) = unsafe { bos(rs) } {
        end_submit(bos, &s.submit);
    }
}
