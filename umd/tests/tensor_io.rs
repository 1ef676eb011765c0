//! Tensors as numbers: `.npy` and ONNX `TensorProto` files in and out of `nvdla-runtime`
//! (`--input`, `--input-scale`, `--output F.npy`, `--output-scale`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use md5::{Digest, Md5};
use nvdla_umd::app::{write_npy_outputs, OutputTensor};
use nvdla_umd::device::MockDevice;
use nvdla_umd::dimg::DlaImage;
use nvdla_umd::image;
use nvdla_umd::npy;
use nvdla_umd::onnx;
use nvdla_umd::tensor::{self, ElementType, HostTensor, TensorFileErrorKind};
use nvdla_umd::{Direction, Runtime};

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nvdla-umd-tensor-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `nvdla-runtime` and returns (status, stdout, stderr).
fn run<S: AsRef<str>>(args: &[S], cwd: &Path) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_nvdla-runtime"))
        .args(args.iter().map(AsRef::as_ref))
        .current_dir(cwd)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        err,
    )
}

/// Runs and returns the output file's bytes, failing the test on a non-zero status.
fn run_ok<S: AsRef<str>>(args: &[S], cwd: &Path, output: &Path) -> Vec<u8> {
    let mut all: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    all.extend(["--output", output.to_str().unwrap()]);
    let (code, out, err) = run(&all, cwd);
    assert_eq!(code, 0, "{all:?}: {err}");
    assert!(out.lines().any(|l| l == "Test pass"), "{out}");
    std::fs::read(output).unwrap()
}

fn error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    lines[0].to_string()
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// `bytes` with the first `from` replaced by `to` (same length).
fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let at = bytes.windows(from.len()).position(|w| w == from).unwrap();
    let mut v = bytes.to_vec();
    v[at..at + to.len()].copy_from_slice(to);
    v
}

fn save(dir: &Path, name: &str, t: &HostTensor) -> PathBuf {
    let p = dir.join(name);
    tensor::write_npy(&p, t).unwrap();
    p
}

fn bytes_of<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// A digit's pixels (28x28, one channel).
fn pixels(path: &Path) -> Vec<u8> {
    let img = image::load_image(path).unwrap();
    assert_eq!((img.width, img.height, img.channels), (28, 28, 1));
    img.data
}

/// `--image`'s int8 rule: floor(p * 127 / 255 + 0.5).
fn int8_of(p: u8) -> u8 {
    (f64::from(p) * 127.0 / 255.0 + 0.5).floor() as u8
}

#[test]
fn files_round_trip() {
    let d = tmpdir("roundtrip");
    for t in ElementType::ALL {
        let n = 2 * 3 * 4;
        let data: Vec<u8> = (0..n * t.size()).map(|i| (i * 7 + 3) as u8).collect();
        let x = HostTensor::new(t, vec![2, 3, 4], data).unwrap();
        let p = save(&d, &format!("{t}.npy"), &x);
        assert_eq!(tensor::read_tensor_file(&p).unwrap(), x, "{t} .npy");
        let pb = d.join(format!("{t}.pb"));
        std::fs::write(&pb, onnx::write("x", &x)).unwrap();
        assert_eq!(tensor::read_tensor_file(&pb).unwrap(), x, "{t} .pb");
    }
    // float32 values survive exactly, NaN and infinities included.
    let v = [
        0.0f32,
        -0.0,
        1.5,
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::INFINITY,
        f32::NAN,
    ];
    let x = HostTensor::from_f32(vec![7], &v).unwrap();
    let back = tensor::read_tensor_file(&save(&d, "f.npy", &x)).unwrap();
    assert_eq!(back.data(), x.data());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn onnx_backend_test_data() {
    let Some(shared) = common::shared("onnx_backend_test_data") else {
        return;
    };
    let node = shared.join("models/onnx/backend-tests-1.22.0/node");
    let set = |test: &str, file: &str| {
        tensor::read_tensor_file(&node.join(test).join("test_data_set_0").join(file)).unwrap()
    };
    // test_relu: x = numpy.random.randn(3, 4, 5) (seed 0), y = max(x, 0).
    let p = onnx::read(&std::fs::read(node.join("test_relu/test_data_set_0/input_0.pb")).unwrap())
        .unwrap();
    assert_eq!(p.name, "x");
    let x = p.tensor;
    assert_eq!(
        (x.element_type(), x.shape()),
        (ElementType::F32, &[3, 4, 5][..])
    );
    let xv = x.to_f32_vec();
    assert_eq!(xv.len(), 60);
    for (got, want) in xv.iter().zip([
        1.764_052_345_967_664_f64,
        0.400_157_208_367_223_1,
        0.978_737_984_105_739_2,
    ]) {
        assert!((f64::from(*got) - want).abs() < 1e-7, "{got} {want}");
    }
    let y = set("test_relu", "output_0.pb");
    assert_eq!(y.shape(), x.shape());
    let want: Vec<f32> = xv.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(y.to_f32_vec(), want);
    // float16 raw_data: ONNX's reference cast (numpy astype, ties to even) equals ours.
    let f = set("test_cast_FLOAT_to_FLOAT16", "input_0.pb");
    let h = set("test_cast_FLOAT_to_FLOAT16", "output_0.pb");
    assert_eq!(h.element_type(), ElementType::F16);
    for i in 0..f.element_count() {
        let (Some(tensor::Number::Float(v)), Some(tensor::Number::Half(b))) =
            (f.number(i), h.number(i))
        else {
            panic!("element {i}");
        };
        let ours = nvdla_umd::fp16::f64_to_f16_even(v);
        assert!(
            ours == b || (ours & 0x7c00 == 0x7c00 && ours & 0x3ff != 0),
            "{v}: {ours:#x} {b:#x}"
        );
    }
    // int8 raw_data: test_sub_int8 computes x - y.
    let a = set("test_sub_int8", "input_0.pb");
    let b = set("test_sub_int8", "input_1.pb");
    let c = set("test_sub_int8", "output_0.pb");
    assert_eq!(c.element_type(), ElementType::I8);
    for i in 0..c.element_count() {
        let n = |t: &HostTensor| match t.number(i) {
            Some(tensor::Number::Int(v)) => v,
            other => panic!("{other:?}"),
        };
        assert_eq!(n(&c), (n(&a) - n(&b)) as i8 as i128, "element {i}");
    }
    // int16 in int32_data.
    let q = set("test_quantizelinear_blocked_symmetric", "output_0.pb");
    assert_eq!(q.element_type(), ElementType::I16);
    assert!(q.element_count() > 0);
    // Every file of the suite parses or is refused with a reason, without a panic.
    let mut parsed = 0;
    let mut refused = 0;
    for test in std::fs::read_dir(&node).unwrap() {
        let dir = test.unwrap().path().join("test_data_set_0");
        let Ok(files) = std::fs::read_dir(&dir) else {
            continue;
        };
        for f in files {
            let f = f.unwrap().path();
            match onnx::read(&std::fs::read(&f).unwrap()) {
                Ok(_) => parsed += 1,
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    refused += 1;
                }
            }
        }
    }
    assert!(parsed > 5000, "{parsed} parsed, {refused} refused");
}

#[test]
fn nn_l0_0_from_its_own_input_matches_golden() {
    let Some(shared) = common::shared("nn_l0_0_from_its_own_input_matches_golden") else {
        return;
    };
    // NN_L0_0's input is a FEATURE fp16 tensor (NCxHWx, 1x1x28x28, line stride 896). Its
    // memory is INPUT without SET contents (no regression loadable sets its bindable
    // input), so what the loadable holds for it is zeros: read it back as numbers and feed
    // it through --input as every file type; the output must be the golden one.
    let bytes = common::nn_l0_0(&shared);
    let mut dev = MockDevice::new();
    let rt = Runtime::load(&mut dev, &bytes).unwrap();
    let t = rt.tensor(Direction::Input, 0).unwrap().clone();
    let surface = rt.read_tensor(&mut dev, Direction::Input, 0).unwrap();
    let own = tensor::input_to_host(&t, &surface, None).unwrap();
    assert_eq!(own.shape(), &[1, 1, 28, 28]);
    assert_eq!(tensor::host_to_input(&own, &t, None).unwrap(), surface);
    let golden = common::golden(&shared, "NN_L0_0").unwrap();
    let d = tmpdir("nn-golden");
    let loadable = shared.join("nvdla-sw-regression/flatbufs/kmd/NN/NN_L0_0_fbuf");
    let l = loadable.to_str().unwrap();
    let halves: Vec<u8> = own
        .to_f32_vec()
        .iter()
        .flat_map(|&v| nvdla_umd::fp16::f32_to_f16_even(v).to_le_bytes())
        .collect();
    let as_f16 = HostTensor::new(ElementType::F16, vec![1, 28, 28], halves).unwrap();
    let pb = d.join("own.pb");
    std::fs::write(&pb, onnx::write("data", &own)).unwrap();
    for input in [
        save(&d, "own.npy", &own),
        save(&d, "own16.npy", &as_f16),
        pb,
    ] {
        let out = run_ok(
            &["--loadable", l, "--input", input.to_str().unwrap()],
            &d,
            &d.join("o.dimg"),
        );
        assert_eq!(
            hex(&Md5::digest(&out)),
            hex(&Md5::digest(&golden)),
            "{}",
            input.display()
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn nn_l0_0_input_matches_image() {
    let Some(shared) = common::shared("nn_l0_0_input_matches_image") else {
        return;
    };
    // A real digit through the FEATURE fp16 layout: --image writes half(p); the same
    // pixels as float32 numbers must give the same output, and differ from zeros'.
    let d = tmpdir("nn-image");
    let loadable = shared.join("nvdla-sw-regression/flatbufs/kmd/NN/NN_L0_0_fbuf");
    let l = loadable.to_str().unwrap();
    let pgm = shared.join("nvdla-sw-regression/images/digits/seven.pgm");
    let px = pixels(&pgm);
    let values: Vec<f32> = px.iter().map(|&p| f32::from(p)).collect();
    let npy = save(
        &d,
        "seven.npy",
        &HostTensor::from_f32(vec![1, 1, 28, 28], &values).unwrap(),
    );
    let by_image = run_ok(
        &["--loadable", l, "--image", pgm.to_str().unwrap()],
        &d,
        &d.join("i.dimg"),
    );
    let by_input = run_ok(
        &["--loadable", l, "--input", npy.to_str().unwrap()],
        &d,
        &d.join("n.dimg"),
    );
    assert_eq!(by_image, by_input);
    let golden = common::golden(&shared, "NN_L0_0").unwrap();
    assert_ne!(by_input, golden, "the digit did not reach the network");
    // --output .npy holds the values of the .dimg, in NCHW.
    let out = d.join("scores.npy");
    run_ok(
        &["--loadable", l, "--input", npy.to_str().unwrap()],
        &d,
        &out,
    );
    let scores = tensor::read_tensor_file(&out).unwrap();
    assert_eq!(
        (scores.element_type(), scores.shape()),
        (ElementType::F32, &[1, 10, 1, 1][..])
    );
    let img = DlaImage::read(&by_image).unwrap();
    let from_dimg: Vec<f32> = (0..10)
        .map(|c| img.value(0, 0, c).unwrap() as f32)
        .collect();
    assert_eq!(scores.to_f32_vec(), from_dimg);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn lenet_int8_feature_x8_input_matches_image() {
    let Some(shared) = common::shared("lenet_int8_feature_x8_input_matches_image") else {
        return;
    };
    let dir = shared.join("third-party-loadables/lenet-mnist");
    let loadable = dir.join("lenet_nv_small_int8_nchw_calib_fast-math.nvdla");
    let l = loadable.to_str().unwrap();
    let jpg = dir.join("images/0_3.jpg");
    let d = tmpdir("lenet-small");
    let q: Vec<u8> = pixels(&jpg).into_iter().map(int8_of).collect();
    let cfg = ["--config", "nv_small"];
    let base = [&["--loadable", l][..], &cfg[..]].concat();
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let by_image = run_ok(
        &with(&["--image", jpg.to_str().unwrap()]),
        &d,
        &d.join("i.dimg"),
    );
    // uint8 and int8 data equal to what --image writes: copied, identical output.
    let u8s = save(
        &d,
        "u8.npy",
        &HostTensor::new(ElementType::U8, vec![1, 1, 28, 28], q.clone()).unwrap(),
    );
    let i8s = save(
        &d,
        "i8.npy",
        &HostTensor::new(ElementType::I8, vec![1, 28, 28], q.clone()).unwrap(),
    );
    for f in [&u8s, &i8s] {
        let out = run_ok(
            &with(&["--input", f.to_str().unwrap()]),
            &d,
            &d.join("n.dimg"),
        );
        assert_eq!(out, by_image, "{}", f.display());
    }
    // Real values p / 255 with --input-scale 1/127 quantize to the same integers.
    let real: Vec<f32> = pixels(&jpg).iter().map(|&p| f32::from(p) / 255.0).collect();
    let f32s = save(
        &d,
        "real.npy",
        &HostTensor::from_f32(vec![1, 1, 28, 28], &real).unwrap(),
    );
    let scale = (1.0f32 / 127.0).to_string();
    let out = run_ok(
        &with(&["--input", f32s.to_str().unwrap(), "--input-scale", &scale]),
        &d,
        &d.join("s.dimg"),
    );
    assert_eq!(out, by_image);
    // Without the scale, float data is refused, asking for it.
    let (code, _, err) = run(
        &with(&["--input", f32s.to_str().unwrap(), "--device", "mock"]),
        &d,
    );
    assert_eq!(code, 1);
    let e = error_line(&err);
    assert!(e.contains("real.npy") && e.contains("--input-scale"), "{e}");
    // int8 outputs: raw integers, or times --output-scale.
    let raw = d.join("raw.npy");
    run_ok(&with(&["--input", u8s.to_str().unwrap()]), &d, &raw);
    let raw = tensor::read_tensor_file(&raw).unwrap().to_f32_vec();
    let top = raw.iter().cloned().fold(f32::MIN, f32::max);
    assert_eq!(raw.iter().position(|&v| v == top), Some(3), "{raw:?}");
    assert_eq!(top.fract(), 0.0);
    let scaled = d.join("scaled.npy");
    run_ok(
        &with(&["--input", u8s.to_str().unwrap(), "--output-scale", "0.5"]),
        &d,
        &scaled,
    );
    let scaled = tensor::read_tensor_file(&scaled).unwrap().to_f32_vec();
    assert_eq!(scaled, raw.iter().map(|v| v * 0.5).collect::<Vec<_>>());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn lenet_image_formats_input_matches_image() {
    let Some(shared) = common::shared("lenet_image_formats_input_matches_image") else {
        return;
    };
    // The nv_full loadables take pitch-linear IMAGE inputs (A16B16G16R16_F fp16, A8B8G8R8
    // int8) with 4 channels; a one-channel array fills channel 0, as --image does.
    let dir = shared.join("third-party-loadables/lenet-mnist");
    let jpg = dir.join("images/0_3.jpg");
    let px = pixels(&jpg);
    let d = tmpdir("lenet-full");
    let fp16 = dir.join("lenet_nv_full_fp16_nhwc_fast-math.nvdla");
    let l = fp16.to_str().unwrap();
    let values: Vec<f32> = px.iter().map(|&p| f32::from(p)).collect();
    let npy = save(
        &d,
        "p.npy",
        &HostTensor::from_f32(vec![1, 1, 28, 28], &values).unwrap(),
    );
    let a = run_ok(
        &["--loadable", l, "--image", jpg.to_str().unwrap()],
        &d,
        &d.join("a.dimg"),
    );
    let b = run_ok(
        &["--loadable", l, "--input", npy.to_str().unwrap()],
        &d,
        &d.join("b.dimg"),
    );
    assert_eq!(a, b);
    // With --normalize 255 (scripts/networks): the halves --image computes, as float16 data.
    let halves = bytes_of(&px, |p| {
        nvdla_umd::fp16::f32_to_f16(f32::from(p) / 255.0).to_le_bytes()
    });
    let npy16 = save(
        &d,
        "h.npy",
        &HostTensor::new(ElementType::F16, vec![1, 28, 28], halves).unwrap(),
    );
    let a = run_ok(
        &[
            "--loadable",
            l,
            "--image",
            jpg.to_str().unwrap(),
            "--normalize",
            "255",
        ],
        &d,
        &d.join("a.dimg"),
    );
    let b = run_ok(
        &["--loadable", l, "--input", npy16.to_str().unwrap()],
        &d,
        &d.join("b.dimg"),
    );
    assert_eq!(a, b);
    let out = d.join("scores.npy");
    let (code, stdout, err) = run(
        &[
            "--loadable",
            l,
            "--input",
            npy16.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        &d,
    );
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("top-1: class 3"), "{stdout}");
    let scores = tensor::read_tensor_file(&out).unwrap().to_f32_vec();
    assert!(scores[3] > 0.9, "{scores:?}");
    // int8 image.
    let int8 = dir.join("lenet_nv_full_int8_nhwc_calib_fast-math.nvdla");
    let l = int8.to_str().unwrap();
    let q: Vec<u8> = px.iter().map(|&p| int8_of(p)).collect();
    let npy8 = save(
        &d,
        "q.npy",
        &HostTensor::new(ElementType::U8, vec![1, 1, 28, 28], q).unwrap(),
    );
    let a = run_ok(
        &["--loadable", l, "--image", jpg.to_str().unwrap()],
        &d,
        &d.join("a.dimg"),
    );
    let b = run_ok(
        &["--loadable", l, "--input", npy8.to_str().unwrap()],
        &d,
        &d.join("b.dimg"),
    );
    assert_eq!(a, b);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_files_are_one_line_naming_file_and_reason() {
    let Some(shared) = common::shared("bad_files_are_one_line_naming_file_and_reason") else {
        return;
    };
    let d = tmpdir("bad");
    let loadable = shared.join("nvdla-sw-regression/flatbufs/kmd/NN/NN_L0_0_fbuf");
    let l = loadable.to_str().unwrap();
    let good = save(
        &d,
        "good.npy",
        &HostTensor::from_f32(vec![1, 1, 28, 28], &[0.0; 784]).unwrap(),
    );
    let bytes = std::fs::read(&good).unwrap();
    let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "magic.npy",
            b"PK\x03\x04 not numpy".to_vec(),
            "not a .npy file",
        ),
        (
            "truncated.npy",
            bytes[..bytes.len() - 10].to_vec(),
            "truncated data: 3136 bytes needed, 3126 present",
        ),
        (
            "complex.npy",
            replace(&bytes, b"<f4", b"<c8"),
            "unsupported dtype \"<c8\"",
        ),
        ("big.npy", replace(&bytes, b"<f4", b">f4"), "big-endian"),
        ("bad.pb", vec![0x08, 0x02, 0x10, 0x10], "BFLOAT16"),
        (
            "short.pb",
            vec![0x08, 0x1c, 0x08, 0x1c, 0x10, 0x01, 0x4a, 0x04, 0, 0, 0, 0],
            "raw_data holds 4 bytes",
        ),
        ("image.txt", b"1 2 3".to_vec(), "unknown tensor file type"),
    ];
    let shape = npy::write(&HostTensor::from_f32(vec![1, 3, 28, 28], &[0.0; 3 * 784]).unwrap());
    cases.push((
        "rgb.npy",
        shape,
        "shape [1, 3, 28, 28] does not match input tensor 'data' (NCHW 1x1x28x28)",
    ));
    for (name, content, reason) in cases {
        let p = d.join(name);
        std::fs::write(&p, content).unwrap();
        let (code, out, err) = run(
            &[
                "--loadable",
                l,
                "--device",
                "mock",
                "--input",
                p.to_str().unwrap(),
            ],
            &d,
        );
        assert_eq!(code, 1, "{name}: {err}");
        assert!(!out.contains("Test pass"));
        let e = error_line(&err);
        assert!(e.contains(&p.display().to_string()), "{name}: {e}");
        assert!(e.contains(reason), "{name}: {reason:?} not in {e}");
    }
    let missing = d.join("missing.npy");
    let (_, _, err) = run(
        &[
            "--loadable",
            l,
            "--device",
            "mock",
            "--input",
            missing.to_str().unwrap(),
        ],
        &d,
    );
    assert!(
        error_line(&err).contains("missing.npy: cannot read"),
        "{err}"
    );
    // Flag combinations.
    for (args, what) in [
        (
            vec!["--input", "x.npy", "--image", "y.pgm"],
            "cannot be used with",
        ),
        (
            vec!["--input-scale", "0.5"],
            "--input-scale applies to --input",
        ),
        (
            vec!["--input", good.to_str().unwrap(), "--input-scale=-1"],
            "positive",
        ),
        (
            vec!["--output-scale", "2"],
            "--output-scale applies to .npy outputs",
        ),
        (vec!["--output", "x.npy", "--rawdump"], "--rawdump"),
        (
            vec![
                "--input",
                good.to_str().unwrap(),
                "--input",
                good.to_str().unwrap(),
            ],
            "2 --input files given, the loadable has 1",
        ),
        (
            vec![
                "--input",
                good.to_str().unwrap(),
                "--output",
                "o.npy",
                "--output-scale",
                "1",
                "--output-scale",
                "2",
            ],
            "--output-scale is given 2 times for 1",
        ),
    ] {
        let all = [&["--loadable", l, "--device", "mock"][..], &args[..]].concat();
        let (code, _, err) = run(&all, &d);
        assert_eq!(code, 1, "{args:?}");
        let e = error_line(&err);
        assert!(e.contains(what), "{what:?} not in {e}");
    }
    assert!(matches!(
        *tensor::read_tensor_file(&d.join("magic.npy"))
            .unwrap_err()
            .kind,
        TensorFileErrorKind::Npy(npy::NpyError::BadMagic { .. })
    ));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn several_outputs_are_numbered() {
    use nvdla_loadable::{DataCategory, DataFormat, DataType, PixelFormat, PixelMapping};
    use nvdla_umd::runtime::{Dims, TensorDesc};
    let d = tmpdir("outputs");
    let desc = |name: &str, dt: DataType, c: i32| TensorDesc {
        name: name.into(),
        mem_id: 0,
        offset: 0,
        size: 32,
        dims: Dims {
            n: 1,
            c,
            h: 1,
            w: 1,
        },
        data_format: DataFormat::NCxHWx,
        data_type: dt,
        data_category: DataCategory::FEATURE,
        pixel_format: PixelFormat::FEATURE,
        pixel_mapping: PixelMapping::PITCH_LINEAR,
        strides: [1, 32, 32, 0, 0, 0, 0, 0],
    };
    let mut half = vec![0u8; 32];
    half[2..4].copy_from_slice(&0x3e00u16.to_le_bytes()); // 1.5 in channel 1
    let mut int8 = vec![0u8; 32];
    int8[..3].copy_from_slice(&[1, 0xfe, 7]);
    let outputs = [
        OutputTensor {
            desc: desc("a", DataType::HALF, 2),
            data: half,
            recorded_scale: None,
        },
        OutputTensor {
            desc: desc("b", DataType::INT8, 3),
            data: int8.clone(),
            recorded_scale: None,
        },
        OutputTensor {
            desc: desc("c", DataType::INT8, 3),
            data: int8,
            recorded_scale: None,
        },
    ];
    let (mut out, mut err) = (Vec::new(), Vec::new());
    write_npy_outputs(
        &d.join("y.npy"),
        &outputs,
        &[1.0, 0.25, 2.0],
        &mut out,
        &mut err,
    )
    .unwrap();
    let read = |n: &str| tensor::read_tensor_file(&d.join(n)).unwrap();
    assert_eq!(read("y.npy").to_f32_vec(), [0.0, 1.5]);
    assert_eq!(read("y_1.npy").to_f32_vec(), [0.25, -0.5, 1.75]);
    assert_eq!(read("y_2.npy").to_f32_vec(), [2.0, -4.0, 14.0]);
    assert_eq!(read("y_2.npy").shape(), &[1, 3, 1, 1]);
    let text = String::from_utf8(err).unwrap();
    assert!(text.contains("'a' is HALF"), "{text}");
    let _ = std::fs::remove_dir_all(&d);
}
