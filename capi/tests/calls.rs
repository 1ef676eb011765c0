//! The C functions called as a C program would, from Rust: errors come back as codes
//! with a message, null pointers and bad indices are refused, nothing panics, and a
//! compiled model runs through a session.

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
