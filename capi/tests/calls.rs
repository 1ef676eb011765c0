//! The C functions called as a C program would, from Rust: errors come back as codes
//! with a message, null pointers, bad indices and dead handles are refused, nothing
//! panics, a compiled model runs through a session, and threads share a session.

use nvdla::*;
use std::ffi::{CStr, CString};
use std::ptr::{null, null_mut};

fn last_error() -> String {
    // SAFETY: the library returns a NUL-terminated string valid until the next call.
    unsafe { CStr::from_ptr(nvdla_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn shared() -> Option<std::path::PathBuf> {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: ../shared not found");
        None
    }
}

#[test]
fn errors_are_codes_with_messages() {
    let mut s = null_mut();
    let garbage = b"not a loadable";
    // SAFETY: valid pointers and lengths throughout.
    unsafe {
        let st = nvdla_session_open(null(), null(), garbage.as_ptr(), garbage.len(), &mut s);
        assert_eq!(st, nvdla_status::NVDLA_STATUS_ERROR_LOAD);
        assert!(s.is_null());
        assert!(last_error().starts_with("load:"), "{}", last_error());

        let dev = CString::new("nowhere").unwrap();
        let st = nvdla_session_open(
            dev.as_ptr(),
            null(),
            garbage.as_ptr(),
            garbage.len(),
            &mut s,
        );
        assert_eq!(st, nvdla_status::NVDLA_STATUS_ERROR_INVALID_ARGUMENT);
        assert!(last_error().contains("nowhere"), "{}", last_error());

        let st = nvdla_session_open(null(), null(), null(), 5, &mut s);
        assert_eq!(st, nvdla_status::NVDLA_STATUS_ERROR_INVALID_ARGUMENT);
        let st = nvdla_session_run(null_mut());
        assert_eq!(st, nvdla_status::NVDLA_STATUS_ERROR_INVALID_ARGUMENT);
        assert_eq!(last_error(), "session is null");
        assert_eq!(nvdla_session_input_count(null()), 0);
        nvdla_session_free(null_mut());

        let path = CString::new("/nonexistent/x.nvdla").unwrap();
        let st = nvdla_session_open_file(null(), null(), path.as_ptr(), &mut s);
        assert_eq!(st, nvdla_status::NVDLA_STATUS_ERROR_IO);

        let mut out = nvdla_buffer {
            data: null_mut(),
            len: 0,
        };
        let st = nvdla_compile_onnx(garbage.as_ptr(), garbage.len(), null(), &mut out);
        assert_eq!(st, nvdla_status::NVDLA_STATUS_ERROR_COMPILE);
        assert!(out.data.is_null());
        nvdla_buffer_free(&mut out);
    }
}

#[test]
fn a_compiled_model_runs_in_a_session() {
    let Some(root) = shared() else { return };
    let model = std::fs::read(root.join("models/onnx/mnist-cntk.onnx")).unwrap();
    let image = CString::new(
        root.join("third-party-loadables/lenet-mnist/images/0_7.jpg")
            .to_str()
            .unwrap(),
    )
    .unwrap();
    // SAFETY: valid pointers and lengths throughout; the session and buffer are freed once.
    unsafe {
        let mut opts = std::mem::zeroed();
        nvdla_compile_options_init(&mut opts);
        let mut out = nvdla_buffer {
            data: null_mut(),
            len: 0,
        };
        let st = nvdla_compile_onnx(model.as_ptr(), model.len(), &opts, &mut out);
        assert_eq!(st, nvdla_status::NVDLA_STATUS_OK, "{}", last_error());
        assert!(out.len > 0);
        let mut s = null_mut();
        let st = nvdla_session_open(null(), null(), out.data, out.len, &mut s);
        nvdla_buffer_free(&mut out);
        assert_eq!(st, nvdla_status::NVDLA_STATUS_OK, "{}", last_error());
        assert_eq!(nvdla_session_input_count(s), 1);
        let mut info = std::mem::zeroed();
        assert_eq!(
            nvdla_session_output_info(s, 0, &mut info),
            nvdla_status::NVDLA_STATUS_OK
        );
        assert_eq!(info.elements, 10);
        assert_eq!(
            nvdla_session_output_info(s, 1, &mut info),
            nvdla_status::NVDLA_STATUS_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            nvdla_session_set_profiling(s, 1),
            nvdla_status::NVDLA_STATUS_OK
        );
        assert_eq!(
            nvdla_session_set_input_image(s, 0, image.as_ptr(), 255),
            nvdla_status::NVDLA_STATUS_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            nvdla_session_run(s),
            nvdla_status::NVDLA_STATUS_OK,
            "{}",
            last_error()
        );
        let mut scores = [0f32; 10];
        assert_eq!(
            nvdla_session_get_output(s, 0, scores.as_mut_ptr(), 9),
            nvdla_status::NVDLA_STATUS_ERROR_INVALID_ARGUMENT
        );
        assert_eq!(
            nvdla_session_get_output(s, 0, scores.as_mut_ptr(), 10),
            nvdla_status::NVDLA_STATUS_OK
        );
        let best = (0..10)
            .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
            .unwrap();
        assert_eq!(best, 7, "{scores:?}");
        // The cycle model's timeline of the run.
        let n = nvdla_session_op_count(s);
        assert!(n > 0);
        let mut op = std::mem::zeroed();
        assert_eq!(
            nvdla_session_op_timing(s, 0, &mut op),
            nvdla_status::NVDLA_STATUS_OK
        );
        assert_eq!(op.modelled, 1);
        assert!(nvdla_session_total_cycles(s) > 0);
        nvdla_session_free(s);
    }
}

/// Handles are checked (freed, made-up and misaligned ones are refused, freeing twice is
/// harmless), one session serves several threads at once, and freeing it while another
/// thread calls it only turns that thread's later calls into errors.
#[test]
fn handles_are_checked_and_sessions_are_shared_between_threads() {
    let Some(root) = shared() else { return };
    let dir = root.join("third-party-loadables/lenet-mnist");
    let loadable = CString::new(
        dir.join("lenet_nv_full_fp16_nhwc_fast-math.nvdla")
            .to_str()
            .unwrap(),
    )
    .unwrap();
    let image = CString::new(dir.join("images/0_7.jpg").to_str().unwrap()).unwrap();
    let open = || {
        let mut s = null_mut();
        // SAFETY: valid strings and an out pointer.
        let st = unsafe { nvdla_session_open_file(null(), null(), loadable.as_ptr(), &mut s) };
        assert_eq!(st, nvdla_status::NVDLA_STATUS_OK, "{}", last_error());
        s as usize
    };
    // One run: the image in, class 7 out, or the status of the first call that failed.
    let classify = |h: usize| -> Result<[f32; 10], nvdla_status> {
        let s = h as *mut nvdla_session;
        let mut scores = [0f32; 10];
        // SAFETY: a checked handle, valid strings and a 10-float buffer.
        unsafe {
            for st in [
                nvdla_session_set_input_image(s, 0, image.as_ptr(), 255),
                nvdla_session_run(s),
                nvdla_session_get_output(s, 0, scores.as_mut_ptr(), 10),
            ] {
                if st != nvdla_status::NVDLA_STATUS_OK {
                    return Err(st);
                }
            }
        }
        Ok(scores)
    };

    // Use after free, double free, made-up handles.
    let h = open();
    let want = classify(h).expect("a live session runs");
    // SAFETY: any handle value is accepted by the library.
    unsafe { nvdla_session_free(h as *mut nvdla_session) };
    assert_eq!(
        classify(h),
        Err(nvdla_status::NVDLA_STATUS_ERROR_INVALID_ARGUMENT)
    );
    assert!(last_error().contains("not live"), "{}", last_error());
    for bogus in [h, usize::MAX & !0xf, 0x13, 0x10_0000] {
        let s = bogus as *mut nvdla_session;
        // SAFETY: any handle value is accepted by the library.
        unsafe {
            assert_eq!(nvdla_session_input_count(s), 0);
            assert_eq!(nvdla_session_op_count(s), 0);
            assert_eq!(
                nvdla_session_run(s),
                nvdla_status::NVDLA_STATUS_ERROR_INVALID_ARGUMENT
            );
            nvdla_session_free(s);
        }
    }

    // Four threads on one session at once: every run succeeds with the same scores.
    let h = open();
    std::thread::scope(|t| {
        for _ in 0..4 {
            t.spawn(|| {
                for _ in 0..3 {
                    assert_eq!(classify(h), Ok(want));
                }
            });
        }
    });

    // Freed while another thread calls it: that thread's calls succeed until the free,
    // then fail with INVALID_ARGUMENT.
    std::thread::scope(|t| {
        let worker = t.spawn(|| {
            let mut results = Vec::new();
            for _ in 0..20 {
                results.push(classify(h));
            }
            results
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        // SAFETY: any handle value is accepted by the library.
        unsafe { nvdla_session_free(h as *mut nvdla_session) };
        let results = worker.join().unwrap();
        let first_err = results
            .iter()
            .position(Result::is_err)
            .unwrap_or(results.len());
        assert!(results[..first_err].iter().all(|r| *r == Ok(want)));
        assert!(results[first_err..]
            .iter()
            .all(|r| *r == Err(nvdla_status::NVDLA_STATUS_ERROR_INVALID_ARGUMENT)));
    });
}

/// Calls with random handles (live, freed, made up), indices, sizes and null pointers:
/// every answer is a status code (or 0 from the counting functions), never a crash.
#[test]
fn random_calls_get_status_codes() {
    let Some(root) = shared() else { return };
    let loadable = std::fs::read(
        root.join("third-party-loadables/lenet-mnist/lenet_nv_full_fp16_nhwc_fast-math.nvdla"),
    )
    .unwrap();
    let mut live = null_mut();
    let mut freed = null_mut();
    // SAFETY: valid bytes and out pointers.
    unsafe {
        for s in [&mut live, &mut freed] {
            let st = nvdla_session_open(null(), null(), loadable.as_ptr(), loadable.len(), s);
            assert_eq!(st, nvdla_status::NVDLA_STATUS_OK, "{}", last_error());
        }
        nvdla_session_free(freed);
    }
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut values = vec![0.5f32; 2048];
    let mut info = nvdla_tensor_info {
        name: [0; NVDLA_NAME_MAX],
        shape: [0; 4],
        elements: 0,
        data_type: nvdla_data_type::NVDLA_DATA_TYPE_UNKNOWN,
        has_scale: 0,
        scale: 0.0,
        surface_bytes: 0,
    };
    let mut ok = 0;
    for _ in 0..3000 {
        let s = match next() % 4 {
            0 => live,
            1 => freed,
            2 => null_mut(),
            _ => (next() as usize & !0xf) as *mut nvdla_session,
        };
        let index = (next() % 3) as usize;
        let count = [0, 1, 9, 10, 784, 785, 2048][(next() % 7) as usize];
        let ptr = if next() % 5 == 0 {
            null_mut()
        } else {
            values.as_mut_ptr()
        };
        // SAFETY: `ptr` is null or holds 2048 floats (count <= 2048); `info` is writable;
        // any handle value is accepted by the library.
        let st = unsafe {
            match next() % 6 {
                0 => nvdla_session_set_input(s, index, ptr, count),
                1 => nvdla_session_get_output(s, index, ptr, count),
                2 => nvdla_session_input_info(s, index, &mut info),
                3 => nvdla_session_output_info(s, index, null_mut()),
                4 => nvdla_session_op_timing(s, index, null_mut()),
                _ => {
                    let _ = nvdla_session_input_count(s) + nvdla_session_op_count(s);
                    nvdla_session_set_timeout(s, 1000)
                }
            }
        };
        assert_ne!(
            st,
            nvdla_status::NVDLA_STATUS_ERROR_INTERNAL,
            "{}",
            last_error()
        );
        ok += usize::from(st == nvdla_status::NVDLA_STATUS_OK);
    }
    assert!(ok > 0, "some calls on the live session succeed");
    // SAFETY: a live handle, freed once.
    unsafe { nvdla_session_free(live) };
}

#[test]
fn calibration_by_input_name_matches_the_arrays() {
    let Some(root) = shared() else { return };
    let model = std::fs::read(root.join("models/onnx/mnist-cntk.onnx")).unwrap();
    let samples: Vec<Vec<f32>> = (0..3)
        .map(|k| {
            (0..784)
                .map(|i| ((i * 37 + k * 101) % 256) as f32)
                .collect()
        })
        .collect();
    let ptrs: Vec<*const f32> = samples.iter().map(|s| s.as_ptr()).collect();
    let name = CString::new("Input3").unwrap();
    let nope = CString::new("nope").unwrap();
    let named: Vec<nvdla_named_array> = samples
        .iter()
        .map(|s| nvdla_named_array {
            name: name.as_ptr(),
            data: s.as_ptr(),
            elements: s.len(),
        })
        .collect();
    let config = CString::new("nv_small").unwrap();
    let int8 = CString::new("int8").unwrap();
    let empty = || nvdla_buffer {
        data: null_mut(),
        len: 0,
    };
    // SAFETY: valid pointers and lengths throughout; every buffer is freed once.
    unsafe {
        let mut opts: nvdla_compile_options = std::mem::zeroed();
        nvdla_compile_options_init(&mut opts);
        opts.config = config.as_ptr();
        opts.precision = int8.as_ptr();
        let mut by_name = empty();
        let st = nvdla_compile_onnx_calibrated(
            model.as_ptr(),
            model.len(),
            &opts,
            named.as_ptr(),
            named.len(),
            1,
            &mut by_name,
        );
        assert_eq!(st, nvdla_status::NVDLA_STATUS_OK, "{}", last_error());
        opts.calibration_samples = ptrs.as_ptr();
        opts.calibration_count = ptrs.len();
        opts.calibration_elements = 784;
        let mut by_array = empty();
        let st = nvdla_compile_onnx(model.as_ptr(), model.len(), &opts, &mut by_array);
        assert_eq!(st, nvdla_status::NVDLA_STATUS_OK, "{}", last_error());
        assert_eq!(
            std::slice::from_raw_parts(by_name.data, by_name.len),
            std::slice::from_raw_parts(by_array.data, by_array.len)
        );
        nvdla_buffer_free(&mut by_name);
        nvdla_buffer_free(&mut by_array);

        // A name the network does not have; a null name; too few entries for the count.
        let mut out = empty();
        let mut wrong = named[0];
        wrong.name = nope.as_ptr();
        let st = nvdla_compile_onnx_calibrated(
            model.as_ptr(),
            model.len(),
            &opts,
            &wrong,
            1,
            1,
            &mut out,
        );
        assert_eq!(st, nvdla_status::NVDLA_STATUS_ERROR_COMPILE);
        assert!(last_error().contains("nope"), "{}", last_error());
        wrong.name = null();
        let st = nvdla_compile_onnx_calibrated(
            model.as_ptr(),
            model.len(),
            &opts,
            &wrong,
            1,
            1,
            &mut out,
        );
        assert_eq!(st, nvdla_status::NVDLA_STATUS_ERROR_INVALID_ARGUMENT);
        assert_eq!(last_error(), "arrays[0].name is null");
        let st = nvdla_compile_onnx_calibrated(
            model.as_ptr(),
            model.len(),
            &opts,
            null(),
            2,
            1,
            &mut out,
        );
        assert_eq!(st, nvdla_status::NVDLA_STATUS_ERROR_INVALID_ARGUMENT);
        assert!(out.data.is_null());
    }
}
