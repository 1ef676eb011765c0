//! The C API of the NVDLA stack (`libnvdla.so`, `libnvdla.a`, `include/nvdla.h`).
//!
//! A board application opens a session (a device with one loadable on it), sets inputs,
//! runs and reads outputs, as it would with NVIDIA's `IRuntime`; and it can compile a
//! model into a loadable in the same library. Everything is a thin layer over
//! [`nvdla_umd::session::Session`] and [`nvdla_compiler::compile`]: the command-line tools
//! use the same code.
//!
//! Conventions (repeated in the header):
//! - Every fallible function returns an [`nvdla_status`]; on failure
//!   [`nvdla_last_error`] returns the message, for the calling thread, until its next call
//!   into the library.
//! - Nothing panics across the boundary: a panic inside becomes
//!   `NVDLA_STATUS_ERROR_INTERNAL` with its message.
//! - Pointers the caller passes are borrowed for the call only, except where a function
//!   says it returns an object the caller owns (free it with the matching `_free`).
//! - Session handles are checked: a freed, made-up or null handle gives
//!   `NVDLA_STATUS_ERROR_INVALID_ARGUMENT` (counts and times give 0), never a crash. A
//!   session may be used from any thread; calls on one session from several threads run one
//!   after the other, and different sessions are independent.
#![warn(missing_docs)]
#![allow(non_camel_case_types)]
#![deny(unsafe_op_in_unsafe_fn)]

use nvdla_umd::session::{Session, SessionError, TensorInfo};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The result of a call.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum nvdla_status {
    /// Success.
    NVDLA_STATUS_OK = 0,
    /// An argument is wrong: a null pointer, an index out of range, an array of the wrong
    /// size, an unknown device or configuration.
    NVDLA_STATUS_ERROR_INVALID_ARGUMENT = 1,
    /// The device could not be opened.
    NVDLA_STATUS_ERROR_DEVICE = 2,
    /// The loadable was refused, or its memory could not be set up.
    NVDLA_STATUS_ERROR_LOAD = 3,
    /// A run failed: a task failed or timed out, or the hardware faulted.
    NVDLA_STATUS_ERROR_RUN = 4,
    /// The compiler refused the model or an option.
    NVDLA_STATUS_ERROR_COMPILE = 5,
    /// A file could not be read.
    NVDLA_STATUS_ERROR_IO = 6,
    /// A bug in the library (a panic, caught at the boundary).
    NVDLA_STATUS_ERROR_INTERNAL = 7,
    /// The library was built without this part (the compiler, or the virtual platform).
    NVDLA_STATUS_ERROR_UNAVAILABLE = 8,
}

use nvdla_status::*;

/// Element type of a tensor on the device (the loadable's `DataType` codes).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum nvdla_data_type {
    /// Unspecified.
    NVDLA_DATA_TYPE_UNKNOWN = 0,
    /// 32-bit float.
    NVDLA_DATA_TYPE_FLOAT = 1,
    /// 16-bit float.
    NVDLA_DATA_TYPE_HALF = 2,
    /// Signed 16-bit integer.
    NVDLA_DATA_TYPE_INT16 = 3,
    /// Signed 8-bit integer.
    NVDLA_DATA_TYPE_INT8 = 4,
    /// Unsigned 8-bit integer.
    NVDLA_DATA_TYPE_UINT8 = 5,
    /// Unsigned 16-bit integer.
    NVDLA_DATA_TYPE_UINT16 = 6,
}

/// Longest tensor name [`nvdla_tensor_info`] holds, with its terminating NUL.
pub const NVDLA_NAME_MAX: usize = 128;

/// One input or output of a session.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nvdla_tensor_info {
    /// Name, NUL-terminated (cut to `NVDLA_NAME_MAX - 1` bytes).
    pub name: [c_char; NVDLA_NAME_MAX],
    /// `N, C, H, W`.
    pub shape: [u32; 4],
    /// Elements of the NCHW float array (`N·C·H·W`).
    pub elements: u64,
    /// Element type on the device.
    pub data_type: nvdla_data_type,
    /// 1 when `scale` holds the compiler's int8 scale (`real = q × scale`).
    pub has_scale: c_int,
    /// The scale, when `has_scale`.
    pub scale: f32,
    /// Bytes of the tensor's surface on the device (the raw layout).
    pub surface_bytes: u64,
}

/// A device with one loaded network (opaque). The library's handles are tokens checked
/// against its table of live sessions, never addresses: a freed or made-up handle gives
/// `NVDLA_STATUS_ERROR_INVALID_ARGUMENT`.
pub struct nvdla_session {
    _opaque: [u8; 0],
}

/// The live sessions by handle token (tokens are never reused), each behind its own lock:
/// calls on one session from several threads run one after the other, and a session freed
/// while another thread is inside a call on it is dropped when that call returns.
static SESSIONS: Mutex<BTreeMap<usize, Arc<Mutex<Session>>>> = Mutex::new(BTreeMap::new());
/// The last token handed out.
static LAST_TOKEN: AtomicUsize = AtomicUsize::new(0);

/// Low bits of a handle that are always zero (it looks like an aligned pointer).
const TOKEN_SHIFT: u32 = 4;

/// The table, even after a panic elsewhere (it holds only complete entries).
fn sessions() -> std::sync::MutexGuard<'static, BTreeMap<usize, Arc<Mutex<Session>>>> {
    SESSIONS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers a new session and returns its handle.
fn register(session: Session) -> *mut nvdla_session {
    let token = LAST_TOKEN.fetch_add(1, Ordering::Relaxed) + 1;
    sessions().insert(token, Arc::new(Mutex::new(session)));
    std::ptr::without_provenance_mut(token << TOKEN_SHIFT)
}

/// The live session behind handle `s`.
fn session(s: *const nvdla_session) -> Result<Arc<Mutex<Session>>, Failure> {
    if s.is_null() {
        return Err(invalid("session is null"));
    }
    let h = s.addr();
    let token = h >> TOKEN_SHIFT;
    (h & ((1 << TOKEN_SHIFT) - 1) == 0)
        .then(|| sessions().get(&token).cloned())
        .flatten()
        .ok_or_else(|| {
            invalid("session is not live (already freed, or not from nvdla_session_open)")
        })
}

/// Locks a session for one call; a session whose last call panicked is not used again.
fn lock(s: &Mutex<Session>) -> Result<std::sync::MutexGuard<'_, Session>, Failure> {
    s.lock().map_err(|_| {
        (
            NVDLA_STATUS_ERROR_INTERNAL,
            "session unusable: an earlier call on it failed with an internal error".into(),
        )
    })
}

/// `f` on the live session behind `s`, or `default`.
fn query<R>(s: *const nvdla_session, default: R, f: impl FnOnce(&Session) -> R) -> R {
    match session(s) {
        Ok(a) => match lock(&a) {
            Ok(g) => f(&g),
            Err(_) => default,
        },
        Err(_) => default,
    }
}

/// Bytes the library allocated and the caller owns: free with [`nvdla_buffer_free`].
#[repr(C)]
#[derive(Debug)]
pub struct nvdla_buffer {
    /// The bytes (null when `len` is 0).
    pub data: *mut u8,
    /// Their number.
    pub len: usize,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Runs `f`, turning its error or panic into a status and the thread's message.
fn guard(f: impl FnOnce() -> Result<(), (nvdla_status, String)>) -> nvdla_status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            set_error("");
            NVDLA_STATUS_OK
        }
        Ok(Err((status, msg))) => {
            set_error(&msg);
            status
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_error(&format!("internal error (a bug, please report it): {msg}"));
            NVDLA_STATUS_ERROR_INTERNAL
        }
    }
}

type Failure = (nvdla_status, String);

fn invalid(msg: impl Into<String>) -> Failure {
    (NVDLA_STATUS_ERROR_INVALID_ARGUMENT, msg.into())
}

fn session_err(e: SessionError) -> Failure {
    let status = match e {
        SessionError::InvalidArgument(_) => NVDLA_STATUS_ERROR_INVALID_ARGUMENT,
        SessionError::Device(_) => NVDLA_STATUS_ERROR_DEVICE,
        SessionError::Load(_) => NVDLA_STATUS_ERROR_LOAD,
        SessionError::Run(_) => NVDLA_STATUS_ERROR_RUN,
    };
    (status, e.to_string())
}

/// A C string argument, or `default` when null.
///
/// # Safety
/// `p` is null or a NUL-terminated string valid for reads.
unsafe fn str_arg<'a>(p: *const c_char, what: &str, default: &'a str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Ok(default);
    }
    // SAFETY: the caller passes a NUL-terminated string (the function's contract).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| invalid(format!("{what} is not UTF-8")))
}

/// A byte-slice argument (`len` 0 allows a null pointer).
///
/// # Safety
/// `p` is valid for reads of `len` bytes, or `len` is 0.
unsafe fn bytes_arg<'a, T>(p: *const T, len: usize, what: &str) -> Result<&'a [T], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(invalid(format!("{what} is null")));
    }
    // SAFETY: the caller passes `len` readable elements at `p` (the function's contract).
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Writes `v` through `out`.
///
/// # Safety
/// `out` is null or valid for a write of `T`.
unsafe fn put<T>(out: *mut T, v: T, what: &str) -> Result<(), Failure> {
    if out.is_null() {
        return Err(invalid(format!("{what} is null")));
    }
    // SAFETY: the caller's contract.
    unsafe { out.write(v) };
    Ok(())
}

/// The library's version, a static NUL-terminated string.
#[no_mangle]
pub extern "C" fn nvdla_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The message of the calling thread's last failed call ("" after a success). The pointer
/// stays valid until the thread's next call into the library.
#[no_mangle]
pub extern "C" fn nvdla_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Opens `device` (`"vp"`, the built-in virtual platform, when null; `"linux"`, the
/// kernel driver; `"socket:PATH"`, a daemon) for hardware configuration `config`
/// (`"nv_full"` when null; the virtual platform's build, real hardware reports its own),
/// and loads the `len` bytes of `loadable` on it. On success `*out` is a session the
/// caller owns (free it with [`nvdla_session_free`]); the bytes are copied.
///
/// # Safety
/// `device` and `config` are null or NUL-terminated strings; `loadable` holds `len`
/// readable bytes; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_open(
    device: *const c_char,
    config: *const c_char,
    loadable: *const u8,
    len: usize,
    out: *mut *mut nvdla_session,
) -> nvdla_status {
    guard(|| {
        // SAFETY: the function's contract.
        let (device, config, bytes) = unsafe {
            (
                str_arg(device, "device", "vp")?,
                str_arg(config, "config", "nv_full")?,
                bytes_arg(loadable, len, "loadable")?,
            )
        };
        if out.is_null() {
            return Err(invalid("out is null"));
        }
        let inner = Session::open(device, config, bytes.to_vec()).map_err(session_err)?;
        let s = register(inner);
        // SAFETY: checked non-null above; the caller's contract makes it writable.
        unsafe { out.write(s) };
        Ok(())
    })
}

/// [`nvdla_session_open`] with the loadable read from the file at `path`.
///
/// # Safety
/// As [`nvdla_session_open`]; `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_open_file(
    device: *const c_char,
    config: *const c_char,
    path: *const c_char,
    out: *mut *mut nvdla_session,
) -> nvdla_status {
    let mut bytes = Vec::new();
    let read = guard(|| {
        if path.is_null() {
            return Err(invalid("path is null"));
        }
        // SAFETY: the function's contract.
        let p = unsafe { str_arg(path, "path", "")? };
        bytes = std::fs::read(p).map_err(|e| (NVDLA_STATUS_ERROR_IO, format!("{p}: {e}")))?;
        Ok(())
    });
    if read != NVDLA_STATUS_OK {
        return read;
    }
    // SAFETY: the function's contract; `bytes` outlives the call.
    unsafe { nvdla_session_open(device, config, bytes.as_ptr(), bytes.len(), out) }
}

/// Releases the session's device memory and frees it (after a call on it that another
/// thread is inside returns). Null, and a handle that is not live (already freed), are
/// ignored.
///
/// # Safety
/// None beyond the handle's: any value is accepted.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_free(s: *mut nvdla_session) {
    if s.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let h = s.addr();
        if h & ((1 << TOKEN_SHIFT) - 1) == 0 {
            let removed = sessions().remove(&(h >> TOKEN_SHIFT));
            drop(removed);
        }
    }));
}

/// Number of inputs (0 for a null session).
///
/// # Safety
/// None for `s`: any handle is checked.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_input_count(s: *const nvdla_session) -> usize {
    // SAFETY: the function's contract.
    query(s, 0, Session::input_count)
}

/// Number of outputs (0 for a null session).
///
/// # Safety
/// None for `s`: any handle is checked.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_output_count(s: *const nvdla_session) -> usize {
    // SAFETY: the function's contract.
    query(s, 0, Session::output_count)
}

fn to_c_info(t: &TensorInfo) -> nvdla_tensor_info {
    let mut name = [0 as c_char; NVDLA_NAME_MAX];
    for (o, &b) in name
        .iter_mut()
        .zip(t.name.as_bytes().iter().take(NVDLA_NAME_MAX - 1))
    {
        *o = b as c_char;
    }
    let data_type = match t.data_type.raw() {
        1 => nvdla_data_type::NVDLA_DATA_TYPE_FLOAT,
        2 => nvdla_data_type::NVDLA_DATA_TYPE_HALF,
        3 => nvdla_data_type::NVDLA_DATA_TYPE_INT16,
        4 => nvdla_data_type::NVDLA_DATA_TYPE_INT8,
        5 => nvdla_data_type::NVDLA_DATA_TYPE_UINT8,
        6 => nvdla_data_type::NVDLA_DATA_TYPE_UINT16,
        _ => nvdla_data_type::NVDLA_DATA_TYPE_UNKNOWN,
    };
    nvdla_tensor_info {
        name,
        shape: t.shape,
        elements: t.elements() as u64,
        data_type,
        has_scale: c_int::from(t.scale.is_some()),
        scale: t.scale.unwrap_or(0.0),
        surface_bytes: t.surface_bytes,
    }
}

/// Describes input `index` into `*out`.
///
/// # Safety
/// `s` is any handle (checked); `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_input_info(
    s: *mut nvdla_session,
    index: usize,
    out: *mut nvdla_tensor_info,
) -> nvdla_status {
    // SAFETY: the function's contract.
    unsafe { tensor_info(s, out, |s| s.input(index)) }
}

/// Describes output `index` into `*out`.
///
/// # Safety
/// `s` is any handle (checked); `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_output_info(
    s: *mut nvdla_session,
    index: usize,
    out: *mut nvdla_tensor_info,
) -> nvdla_status {
    // SAFETY: the function's contract.
    unsafe { tensor_info(s, out, |s| s.output(index)) }
}

/// Writes what `describe` says of the session into `*out`.
///
/// # Safety
/// As [`nvdla_session_input_info`].
unsafe fn tensor_info(
    s: *mut nvdla_session,
    out: *mut nvdla_tensor_info,
    describe: impl FnOnce(&Session) -> Result<TensorInfo, SessionError>,
) -> nvdla_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let arc = session(s)?;
        let mut locked = lock(&arc)?;
        let s = &mut *locked;
        let info = describe(s).map_err(session_err)?;
        // SAFETY: the caller's contract.
        unsafe { put(out, to_c_info(&info), "out") }
    })
}

/// Sets input `index` from `count` floats in NCHW order (`count` must be the input's
/// `elements`). int8 inputs are quantized with the compiler's recorded scale, fp16 inputs
/// rounded to even.
///
/// # Safety
/// `s` is any handle (checked); `values` holds `count` readable floats.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_set_input(
    s: *mut nvdla_session,
    index: usize,
    values: *const f32,
    count: usize,
) -> nvdla_status {
    // SAFETY: the function's contract.
    unsafe { set_input(s, index, values, count, None) }
}

/// [`nvdla_session_set_input`] quantizing an int8 input with `scale` (`real = q × scale`).
///
/// # Safety
/// As [`nvdla_session_set_input`].
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_set_input_scaled(
    s: *mut nvdla_session,
    index: usize,
    values: *const f32,
    count: usize,
    scale: f32,
) -> nvdla_status {
    // SAFETY: the function's contract.
    unsafe { set_input(s, index, values, count, Some(scale)) }
}

/// # Safety
/// As [`nvdla_session_set_input`].
unsafe fn set_input(
    s: *mut nvdla_session,
    index: usize,
    values: *const f32,
    count: usize,
    scale: Option<f32>,
) -> nvdla_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let arc = session(s)?;
        let mut locked = lock(&arc)?;
        let s = &mut *locked;
        // SAFETY: the function's contract.
        let v = unsafe { bytes_arg(values, count, "values")? };
        s.set_input(index, v, scale).map_err(session_err)
    })
}

/// Sets input `index` from an image file (JPEG or PGM) as `nvdla-runtime --image` does:
/// pixels divided by `normalize` (1 to 255; 0 means 1).
///
/// # Safety
/// `s` is any handle (checked); `path` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_set_input_image(
    s: *mut nvdla_session,
    index: usize,
    path: *const c_char,
    normalize: u32,
) -> nvdla_status {
    guard(|| {
        // SAFETY: the function's contract.
        let arc = session(s)?;
        let mut locked = lock(&arc)?;
        let s = &mut *locked;
        // SAFETY: the function's contract.
        let p = unsafe { str_arg(path, "path", "")? };
        if path.is_null() {
            return Err(invalid("path is null"));
        }
        let normalize = u8::try_from(normalize.max(1))
            .map_err(|_| invalid(format!("normalize {normalize}: 1 to 255")))?;
        let opts = nvdla_umd::image::ImageOptions {
            normalize,
            ..Default::default()
        };
        s.set_input_image(index, std::path::Path::new(p), &opts)
            .map_err(session_err)
    })
}

/// Sets input `index` from `len` bytes of its device surface (`surface_bytes`, the raw
/// layout the loadable describes).
///
/// # Safety
/// `s` is any handle (checked); `data` holds `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_set_input_surface(
    s: *mut nvdla_session,
    index: usize,
    data: *const u8,
    len: usize,
) -> nvdla_status {
    guard(|| {
        // SAFETY: the function's contract.
        let arc = session(s)?;
        let mut locked = lock(&arc)?;
        let s = &mut *locked;
        // SAFETY: the function's contract.
        let d = unsafe { bytes_arg(data, len, "data")? };
        s.set_input_surface(index, d).map_err(session_err)
    })
}

/// Waits at most `ms` milliseconds for each task of a run (0: forever, the default).
///
/// # Safety
/// None for `s`: any handle is checked.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_set_timeout(s: *mut nvdla_session, ms: u32) -> nvdla_status {
    guard(|| {
        // SAFETY: the function's contract.
        let arc = session(s)?;
        let mut locked = lock(&arc)?;
        let s = &mut *locked;
        s.set_timeout((ms != 0).then_some(ms));
        Ok(())
    })
}

/// With `on` non-zero, each run records per-operation cycles: estimated by the virtual
/// platform's cycle model, measured by the RTL ([`nvdla_session_op_timing`]).
///
/// # Safety
/// None for `s`: any handle is checked.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_set_profiling(
    s: *mut nvdla_session,
    on: c_int,
) -> nvdla_status {
    guard(|| {
        // SAFETY: the function's contract.
        let arc = session(s)?;
        let mut locked = lock(&arc)?;
        let s = &mut *locked;
        s.set_profiling(on != 0);
        Ok(())
    })
}

/// Runs the network on the inputs last set. Blocks until it is done, it fails, or a task
/// exceeds the timeout.
///
/// # Safety
/// None for `s`: any handle is checked.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_run(s: *mut nvdla_session) -> nvdla_status {
    guard(|| {
        // SAFETY: the function's contract.
        let arc = session(s)?;
        let mut locked = lock(&arc)?;
        let s = &mut *locked;
        s.run().map_err(session_err)
    })
}

/// Wall-clock seconds of the last run (0 before any, or for a null session).
///
/// # Safety
/// None for `s`: any handle is checked.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_last_run_seconds(s: *const nvdla_session) -> f64 {
    // SAFETY: the function's contract.
    query(s, 0.0, Session::last_run_seconds)
}

/// Reads output `index` as `count` floats in NCHW order (`count` must be its
/// `elements`): fp16 exactly, int8 times the compiler's recorded scale.
///
/// # Safety
/// `s` is any handle (checked); `values` is valid for writes of `count` floats.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_get_output(
    s: *mut nvdla_session,
    index: usize,
    values: *mut f32,
    count: usize,
) -> nvdla_status {
    guard(|| {
        // SAFETY: the function's contract.
        let arc = session(s)?;
        let mut locked = lock(&arc)?;
        let s = &mut *locked;
        let v = s.output_values(index, None).map_err(session_err)?;
        if count != v.len() {
            return Err(invalid(format!(
                "output {index} has {} elements, room for {count} given",
                v.len()
            )));
        }
        if values.is_null() {
            return Err(invalid("values is null"));
        }
        // SAFETY: the caller provides `count` writable floats at `values`.
        unsafe { std::slice::from_raw_parts_mut(values, count) }.copy_from_slice(&v);
        Ok(())
    })
}

/// Copies output `index`'s device surface (`surface_bytes`) into `data` (`len` bytes, at
/// least `surface_bytes`); `*written` is set to the bytes copied.
///
/// # Safety
/// `s` is any handle (checked); `data` is valid for writes of `len` bytes; `written`
/// is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_get_output_surface(
    s: *mut nvdla_session,
    index: usize,
    data: *mut u8,
    len: usize,
    written: *mut usize,
) -> nvdla_status {
    guard(|| {
        // SAFETY: the function's contract.
        let arc = session(s)?;
        let mut locked = lock(&arc)?;
        let s = &mut *locked;
        let v = s.output_surface(index).map_err(session_err)?;
        if len < v.len() {
            return Err(invalid(format!(
                "output {index}'s surface is {} bytes, room for {len} given",
                v.len()
            )));
        }
        if data.is_null() {
            return Err(invalid("data is null"));
        }
        // SAFETY: the caller provides `len >= v.len()` writable bytes at `data`.
        unsafe { std::slice::from_raw_parts_mut(data, v.len()) }.copy_from_slice(&v);
        if !written.is_null() {
            // SAFETY: non-null, and writable by the contract.
            unsafe { written.write(v.len()) };
        }
        Ok(())
    })
}

/// One operation of the last profiled run.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nvdla_op_timing {
    /// Engine, NUL-terminated: `conv`, `sdp`, `pdp`, `cdp`, `rubik`, `bdma`.
    pub engine: [c_char; 8],
    /// Register group (0 or 1).
    pub group: u32,
    /// Cycle its enable was written.
    pub enabled: u64,
    /// Cycle of its done interrupt (when `finished`).
    pub done: u64,
    /// 1 when it finished.
    pub finished: c_int,
    /// 1 when the cycles are the cycle model's estimate, 0 when measured (the RTL).
    pub modelled: c_int,
}

/// Operations the last run recorded (0 without profiling or before a run).
///
/// # Safety
/// None for `s`: any handle is checked.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_op_count(s: *const nvdla_session) -> usize {
    // SAFETY: the function's contract.
    query(s, 0, |s| s.timings().map_or(0, |t| t.ops.len()))
}

/// Cycles of the last run from submit to its last interrupt (0 when not recorded).
///
/// # Safety
/// None for `s`: any handle is checked.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_total_cycles(s: *const nvdla_session) -> u64 {
    // SAFETY: the function's contract.
    query(s, 0, |s| s.timings().map_or(0, |t| t.total_cycles))
}

/// Operation `index` of the last run ([`nvdla_session_op_count`]) into `*out`.
///
/// # Safety
/// `s` is any handle (checked); `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvdla_session_op_timing(
    s: *mut nvdla_session,
    index: usize,
    out: *mut nvdla_op_timing,
) -> nvdla_status {
    guard(|| {
        // SAFETY: the function's contract.
        let arc = session(s)?;
        let mut locked = lock(&arc)?;
        let s = &mut *locked;
        let t = s
            .timings()
            .ok_or_else(|| invalid("no timings: turn profiling on before the run"))?;
        let op = t
            .ops
            .get(index)
            .ok_or_else(|| invalid(format!("operation {index}: the run has {}", t.ops.len())))?;
        let mut engine = [0 as c_char; 8];
        for (o, &b) in engine.iter_mut().zip(op.engine.as_bytes().iter().take(7)) {
            *o = b as c_char;
        }
        let v = nvdla_op_timing {
            engine,
            group: u32::from(op.group),
            enabled: op.enabled,
            done: op.done.unwrap_or(0),
            finished: c_int::from(op.done.is_some()),
            modelled: c_int::from(t.modelled),
        };
        // SAFETY: the function's contract.
        unsafe { put(out, v, "out") }
    })
}

/// Options of [`nvdla_compile_onnx`] and [`nvdla_compile_caffe`]; fill with
/// [`nvdla_compile_options_init`] first, then change what you need.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nvdla_compile_options {
    /// Hardware build (`"nv_full"`, `"nv_small"`, ...); null: `"nv_full"`.
    pub config: *const c_char,
    /// `"fp16"` or `"int8"`; null: `"fp16"`.
    pub precision: *const c_char,
    /// Non-zero: operators no engine runs go to the CPU (`--cpu-fallback`).
    pub cpu_fallback: c_int,
    /// int8: `calibration_count` sample arrays of the first input, NCHW floats,
    /// `calibration_elements` each (the compiler runs its fp32 reference on them).
    pub calibration_samples: *const *const f32,
    /// Number of calibration arrays.
    pub calibration_count: usize,
    /// Floats in each calibration array.
    pub calibration_elements: usize,
    /// int8: a calibration table's text instead (NVIDIA's JSON or a TensorRT cache),
    /// NUL-terminated; null: none.
    pub calibration_table: *const c_char,
    /// Non-zero: one int8 weight scale per output channel instead of per layer.
    pub per_filter: c_int,
    /// Non-zero: optimize for cycles on the accelerator (`-O`: Winograd convolution,
    /// image-mode input and compressed weights where the build has them, poolings taken
    /// from their convolutions on the fly); outputs stay within the precision's tolerance.
    pub optimize: c_int,
    /// Non-zero: int8 activations calibrated from samples keep one scale each
    /// (`--activation-scales per-tensor`) instead of a scale per channel where the
    /// hardware folds it in.
    pub per_tensor_activations: c_int,
    /// Bytes of on-chip CV-SRAM the activations may use (`--cvsram`; 0: none). Builds with
    /// a secondary memory interface (nv_full) only; the loadable then runs on devices that
    /// allocate CV-SRAM (the built-in virtual platform).
    pub cvsram_bytes: u64,
}

/// One input's values in a calibration sample of [`nvdla_compile_onnx_calibrated`].
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct nvdla_named_array {
    /// The network input's name, NUL-terminated.
    pub name: *const c_char,
    /// Its values, NCHW floats (batch 1).
    pub data: *const f32,
    /// Number of floats at `data`.
    pub elements: usize,
}

/// The defaults: nv_full, fp16, no CPU fallback, no calibration, per-layer weight scales,
/// activation scales per channel, no optimizations, no CV-SRAM.
///
/// # Safety
/// `opts` is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvdla_compile_options_init(opts: *mut nvdla_compile_options) {
    if opts.is_null() {
        return;
    }
    // SAFETY: non-null and writable by the contract.
    unsafe {
        opts.write(nvdla_compile_options {
            config: std::ptr::null(),
            precision: std::ptr::null(),
            cpu_fallback: 0,
            calibration_samples: std::ptr::null(),
            calibration_count: 0,
            calibration_elements: 0,
            calibration_table: std::ptr::null(),
            per_filter: 0,
            optimize: 0,
            per_tensor_activations: 0,
            cvsram_bytes: 0,
        })
    };
}

#[cfg(feature = "compiler")]
mod compile {
    use super::*;
    use nvdla_compiler::{Calibrate, Model, Options};

    /// The compiler's options from the C struct.
    ///
    /// # Safety
    /// `o` is null or a filled `nvdla_compile_options` whose pointers are valid.
    unsafe fn options(o: *const nvdla_compile_options) -> Result<Options, Failure> {
        let mut c = std::mem::MaybeUninit::uninit();
        // SAFETY: `c` is writable.
        unsafe { nvdla_compile_options_init(c.as_mut_ptr()) };
        // SAFETY: initialised just above; else the caller's struct.
        let o = match unsafe { o.as_ref() } {
            Some(o) => *o,
            None => unsafe { c.assume_init() },
        };
        // SAFETY: the caller's contract covers every pointer in the struct.
        let (config, precision) = unsafe {
            (
                str_arg(o.config, "config", "nv_full")?,
                str_arg(o.precision, "precision", "fp16")?,
            )
        };
        let mut opts = Options::for_build(config, precision)
            .map_err(|e| (NVDLA_STATUS_ERROR_INVALID_ARGUMENT, e.to_string()))?;
        opts.cpu_fallback = o.cpu_fallback != 0;
        opts.per_filter = o.per_filter != 0;
        opts.channel_scales = o.per_tensor_activations == 0;
        opts.cvsram = o.cvsram_bytes;
        if o.optimize != 0 {
            opts.optimize();
        }
        if !o.calibration_table.is_null() {
            // SAFETY: as above.
            let text = unsafe { str_arg(o.calibration_table, "calibration_table", "")? };
            opts.calibration = Calibrate::Table {
                text: text.to_string(),
                label: "calibration table".into(),
            };
        } else if o.calibration_count > 0 {
            // SAFETY: as above.
            let ptrs = unsafe {
                bytes_arg(
                    o.calibration_samples,
                    o.calibration_count,
                    "calibration_samples",
                )?
            };
            let mut samples = Vec::with_capacity(ptrs.len());
            for (i, &p) in ptrs.iter().enumerate() {
                // SAFETY: as above.
                let v = unsafe {
                    bytes_arg(
                        p,
                        o.calibration_elements,
                        &format!("calibration sample {i}"),
                    )?
                };
                samples.push(v.to_vec());
            }
            opts.calibration = Calibrate::Arrays(samples);
        }
        Ok(opts)
    }

    pub(super) fn compile_to(
        model: Model,
        opts: &Options,
        out: *mut nvdla_buffer,
    ) -> Result<(), Failure> {
        if out.is_null() {
            return Err(invalid("out is null"));
        }
        let compiled = nvdla_compiler::compile(&model, opts, &mut |_| {})
            .map_err(|e| (NVDLA_STATUS_ERROR_COMPILE, e.to_string()))?;
        let bytes = compiled.loadable.into_boxed_slice();
        let len = bytes.len();
        let data = Box::into_raw(bytes).cast::<u8>();
        // SAFETY: checked non-null; writable by the callers' contracts.
        unsafe { out.write(nvdla_buffer { data, len }) };
        Ok(())
    }

    /// ONNX model `bytes` compiled into `out`.
    fn compile_onnx(bytes: &[u8], opts: &Options, out: *mut nvdla_buffer) -> Result<(), Failure> {
        let model = Model::Onnx {
            bytes: bytes.to_vec(),
            label: "model".into(),
        };
        compile_to(model, opts, out)
    }

    /// # Safety
    /// As [`super::nvdla_compile_onnx`].
    pub(super) unsafe fn onnx(
        model: *const u8,
        len: usize,
        opts: *const nvdla_compile_options,
        out: *mut nvdla_buffer,
    ) -> nvdla_status {
        guard(|| {
            // SAFETY: the function's contract.
            let (bytes, opts) = unsafe { (bytes_arg(model, len, "model")?, options(opts)?) };
            compile_onnx(bytes, &opts, out)
        })
    }

    /// # Safety
    /// As [`super::nvdla_compile_onnx_calibrated`].
    pub(super) unsafe fn onnx_calibrated(
        model: *const u8,
        len: usize,
        opts: *const nvdla_compile_options,
        arrays: *const nvdla_named_array,
        samples: usize,
        inputs_per_sample: usize,
        out: *mut nvdla_buffer,
    ) -> nvdla_status {
        guard(|| {
            if inputs_per_sample == 0 && samples > 0 {
                return Err(invalid("inputs_per_sample is 0"));
            }
            let total = samples
                .checked_mul(inputs_per_sample)
                .ok_or_else(|| invalid("samples x inputs_per_sample overflows"))?;
            // SAFETY: the function's contract.
            let (bytes, mut opts, arrays) = unsafe {
                (
                    bytes_arg(model, len, "model")?,
                    options(opts)?,
                    bytes_arg(arrays, total, "arrays")?,
                )
            };
            let mut named = Vec::with_capacity(samples);
            for (k, sample) in arrays.chunks(inputs_per_sample.max(1)).enumerate() {
                let mut inputs = Vec::with_capacity(sample.len());
                for (j, a) in sample.iter().enumerate() {
                    let what = format!("arrays[{}]", k * inputs_per_sample + j);
                    if a.name.is_null() {
                        return Err(invalid(format!("{what}.name is null")));
                    }
                    // SAFETY: as above.
                    let (name, values) = unsafe {
                        (
                            str_arg(a.name, &format!("{what}.name"), "")?,
                            bytes_arg(a.data, a.elements, &format!("{what}.data"))?,
                        )
                    };
                    inputs.push((name.to_string(), values.to_vec()));
                }
                named.push(inputs);
            }
            if !named.is_empty() {
                opts.calibration = Calibrate::NamedArrays(named);
            }
            compile_onnx(bytes, &opts, out)
        })
    }

    /// # Safety
    /// As [`super::nvdla_compile_caffe`].
    pub(super) unsafe fn caffe(
        prototxt: *const c_char,
        caffemodel: *const u8,
        len: usize,
        opts: *const nvdla_compile_options,
        out: *mut nvdla_buffer,
    ) -> nvdla_status {
        guard(|| {
            if prototxt.is_null() {
                return Err(invalid("prototxt is null"));
            }
            // SAFETY: the function's contract.
            let (text, weights, opts) = unsafe {
                (
                    str_arg(prototxt, "prototxt", "")?,
                    bytes_arg(caffemodel, len, "caffemodel")?,
                    options(opts)?,
                )
            };
            let model = Model::Caffe {
                prototxt: text.to_string(),
                caffemodel: weights.to_vec(),
            };
            compile_to(model, &opts, out)
        })
    }
}

#[cfg(not(feature = "compiler"))]
fn no_compiler() -> nvdla_status {
    guard(|| {
        Err((
            NVDLA_STATUS_ERROR_UNAVAILABLE,
            "this libnvdla was built without the compiler".into(),
        ))
    })
}

/// Compiles the `len` bytes of an ONNX model with `opts` (null: the defaults) into a
/// loadable the caller owns in `*out` (free it with [`nvdla_buffer_free`]).
/// `NVDLA_STATUS_ERROR_UNAVAILABLE` from a library built without the compiler.
///
/// # Safety
/// `model` holds `len` readable bytes; `opts` is null or filled with valid pointers;
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn nvdla_compile_onnx(
    model: *const u8,
    len: usize,
    opts: *const nvdla_compile_options,
    out: *mut nvdla_buffer,
) -> nvdla_status {
    #[cfg(feature = "compiler")]
    // SAFETY: the function's contract.
    return unsafe { compile::onnx(model, len, opts, out) };
    #[cfg(not(feature = "compiler"))]
    {
        let _ = (model, len, opts, out);
        no_compiler()
    }
}

/// [`nvdla_compile_onnx`] calibrated on samples of every network input (int8): `arrays`
/// holds `samples x inputs_per_sample` entries, sample after sample, each naming the input
/// its values are for (a network of several inputs; the options' own calibration fields
/// are ignored when `samples` is not 0). An input a sample leaves out, or a name the
/// network does not have, is an `NVDLA_STATUS_ERROR_COMPILE` naming it.
///
/// # Safety
/// As [`nvdla_compile_onnx`]; `arrays` holds `samples x inputs_per_sample` readable
/// entries (or `samples` is 0), each with a NUL-terminated `name` and `elements` readable
/// floats at `data`. The library copies what it reads; nothing is kept after the call.
#[no_mangle]
pub unsafe extern "C" fn nvdla_compile_onnx_calibrated(
    model: *const u8,
    len: usize,
    opts: *const nvdla_compile_options,
    arrays: *const nvdla_named_array,
    samples: usize,
    inputs_per_sample: usize,
    out: *mut nvdla_buffer,
) -> nvdla_status {
    #[cfg(feature = "compiler")]
    // SAFETY: the function's contract.
    return unsafe {
        compile::onnx_calibrated(model, len, opts, arrays, samples, inputs_per_sample, out)
    };
    #[cfg(not(feature = "compiler"))]
    {
        let _ = (model, len, opts, arrays, samples, inputs_per_sample, out);
        no_compiler()
    }
}

/// Compiles a Caffe network (`prototxt`, NUL-terminated text; `caffemodel`, `len` bytes
/// of weights) like [`nvdla_compile_onnx`].
///
/// # Safety
/// As [`nvdla_compile_onnx`]; `prototxt` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nvdla_compile_caffe(
    prototxt: *const c_char,
    caffemodel: *const u8,
    len: usize,
    opts: *const nvdla_compile_options,
    out: *mut nvdla_buffer,
) -> nvdla_status {
    #[cfg(feature = "compiler")]
    // SAFETY: the function's contract.
    return unsafe { compile::caffe(prototxt, caffemodel, len, opts, out) };
    #[cfg(not(feature = "compiler"))]
    {
        let _ = (prototxt, caffemodel, len, opts, out);
        no_compiler()
    }
}

/// Frees a buffer the library returned and sets it to empty. Null or empty is ignored.
///
/// # Safety
/// `b` is null or a buffer the library filled, not freed before.
#[no_mangle]
pub unsafe extern "C" fn nvdla_buffer_free(b: *mut nvdla_buffer) {
    // SAFETY: the function's contract.
    let Some(b) = (unsafe { b.as_mut() }) else {
        return;
    };
    if !b.data.is_null() {
        let slice = std::ptr::slice_from_raw_parts_mut(b.data, b.len);
        // SAFETY: `data`/`len` came from `Box<[u8]>::into_raw` in this library, once.
        drop(unsafe { Box::from_raw(slice) });
    }
    b.data = std::ptr::null_mut();
    b.len = 0;
}
