"""The nvdla package against the ground truth in ../shared: compile, run, errors, int8
scales and profiles (scripts/python runs it)."""

import os
import pathlib
import time

import numpy as np
import pytest

import nvdla

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("NVDLA_SHARED", ROOT.parent / "shared"))
DIGITS = SHARED / "third-party-loadables" / "lenet-mnist"
MNIST = SHARED / "models" / "onnx" / "mnist-cntk.onnx"
OWN_DIGITS = ROOT / "examples" / "digits"

need_shared = pytest.mark.skipif(not MNIST.exists(), reason="../shared not found")


@need_shared
def test_compile_and_run_onnx_fp16():
    sess = nvdla.InferenceSession(str(MNIST))
    inp = sess.get_inputs()
    out = sess.get_outputs()
    assert [i.shape for i in inp] == [[1, 1, 28, 28]]
    assert out[0].shape[:2] == [1, 10]
    for label in range(10):
        (scores,) = sess.run_image(DIGITS / "images" / f"0_{label}.jpg", normalize=255)
        assert scores.shape == (1, 10, 1, 1)
        assert int(np.argmax(scores)) == label
    assert sess.last_run_seconds > 0


@need_shared
def test_run_matches_the_float_interface():
    """run() with an array gives what the image path gives for the same values."""
    sess = nvdla.InferenceSession(str(MNIST))
    x = np.random.default_rng(1).random((1, 1, 28, 28), dtype=np.float32)
    (a,) = sess.run(None, {sess.get_inputs()[0].name: x})
    (b,) = sess.run([sess.get_outputs()[0].name], {sess.get_inputs()[0].name: x})
    assert a.dtype == np.float32 and np.array_equal(a, b)


@need_shared
def test_saved_loadable_and_nvidia_loadable():
    loadable = nvdla.compile(str(MNIST), config="nv_large", precision="fp16")
    assert len(loadable) > 1000
    path = ROOT / "target" / "python-test.nvdla"
    loadable.save(path)
    sess = nvdla.InferenceSession(str(path), config="nv_large")
    x = np.random.default_rng(3).random((1, 1, 28, 28), dtype=np.float32) * 255
    name = sess.get_inputs()[0].name
    (large,) = sess.run(None, {name: x})
    (full,) = nvdla.InferenceSession(str(MNIST)).run(None, {name: x})
    # fp16 on both builds: the same arithmetic.
    assert np.allclose(large, full, rtol=1e-2, atol=1e-2), (large, full)
    theirs = nvdla.InferenceSession(DIGITS / "lenet_nv_full_fp16_nhwc_fast-math.nvdla")
    (p,) = theirs.run_image(DIGITS / "images" / "0_7.jpg", normalize=255)
    assert int(np.argmax(p)) == 7


@need_shared
def test_int8_calibrated_from_arrays_records_scales():
    rng = np.random.default_rng(2)
    samples = [rng.random((1, 1, 28, 28), dtype=np.float32) * 255 for _ in range(4)]
    sess = nvdla.InferenceSession(str(MNIST), config="nv_small", precision="int8",
                                  calibration=samples)
    inp, out = sess.get_inputs()[0], sess.get_outputs()[0]
    assert inp.device_type == "INT8" and inp.scale > 0
    assert out.scale is None or out.scale > 0
    x = samples[0]
    (q,) = sess.run(None, {inp.name: x})
    ref = nvdla.InferenceSession(str(MNIST)).run(None, {inp.name: x})[0]
    # int8 against fp16 on the same input: the same class, close scores.
    assert int(np.argmax(q)) == int(np.argmax(ref))
    assert np.corrcoef(q.ravel(), ref.ravel())[0, 1] > 0.98


@need_shared
def test_int8_calibration_by_input_name():
    """Samples as dicts by input name (a network of several inputs takes them so) give the
    same loadable as arrays of the first input; an unknown name is an error naming it."""
    rng = np.random.default_rng(4)
    samples = [rng.random((1, 1, 28, 28), dtype=np.float32) * 255 for _ in range(3)]
    name = nvdla.InferenceSession(str(MNIST)).get_inputs()[0].name
    by_array = nvdla.compile(str(MNIST), config="nv_small", precision="int8",
                             calibration=samples)
    by_name = nvdla.compile(str(MNIST), config="nv_small", precision="int8",
                            calibration=[{name: x} for x in samples])
    assert by_array.data == by_name.data
    with pytest.raises(nvdla.CompileError, match="no input `nope`"):
        nvdla.compile(str(MNIST), config="nv_small", precision="int8",
                      calibration=[{"nope": samples[0]}])


@need_shared
def test_optimized_build_classifies_alike_and_takes_fewer_cycles():
    """optimize=True (the compiler's -O): the input becomes an image, read in image mode."""
    plain = nvdla.InferenceSession(nvdla.compile(str(MNIST)), profiling=True)
    fast = nvdla.InferenceSession(nvdla.compile(str(MNIST), optimize=True), profiling=True)
    assert fast.get_inputs()[0].shape == [1, 1, 28, 28]
    for label in (0, 3, 7):
        image = DIGITS / "images" / f"0_{label}.jpg"
        (a,) = plain.run_image(image, normalize=255)
        (b,) = fast.run_image(image, normalize=255)
        assert int(np.argmax(b)) == label
        assert np.allclose(a, b, rtol=1e-2, atol=5e-2), (a, b)
    # Modelled cycles from the first enable to the last done.
    span = [max(op["end"] for op in s.profile()) - min(op["start"] for op in s.profile())
            for s in (plain, fast)]
    assert span[1] < span[0], span


@need_shared
def test_cvsram_build_gives_the_same_scores_through_cvif():
    """cvsram=bytes (the compiler's --cvsram): activations in on-chip SRAM, same bytes."""
    plain = nvdla.InferenceSession(nvdla.compile(str(MNIST)), profiling=True)
    sram = nvdla.InferenceSession(nvdla.compile(str(MNIST), cvsram=1 << 20), profiling=True)
    image = DIGITS / "images" / "0_4.jpg"
    (a,) = plain.run_image(image, normalize=255)
    (b,) = sram.run_image(image, normalize=255)
    assert np.array_equal(a, b)
    assert sum(op["cvsram_bytes"] for op in plain.profile()) == 0
    assert sum(op["cvsram_bytes"] for op in sram.profile()) > 0
    with pytest.raises(nvdla.NvdlaError, match="CV-SRAM"):
        nvdla.compile(str(MNIST), config="nv_small", precision="int8",
                      calibration=[np.zeros((1, 1, 28, 28), np.float32)], cvsram=1 << 20)


@need_shared
def test_profile_is_data():
    sess = nvdla.InferenceSession(str(MNIST), profiling=True)
    sess.run_image(DIGITS / "images" / "0_1.jpg", normalize=255)
    ops = sess.profile()
    assert ops and all(op["modelled"] for op in ops)
    conv = [op for op in ops if op["engine"] == "conv"]
    assert conv and conv[0]["macs"] > 0 and conv[0]["end"] > conv[0]["start"]


def test_errors_are_exceptions_with_messages():
    with pytest.raises(nvdla.CompileError, match="model"):
        nvdla.compile(b"not an onnx model")
    with pytest.raises(ValueError, match="nv_tiny"):
        nvdla.compile(b"x", config="nv_tiny")
    with pytest.raises(nvdla.LoadError):
        nvdla.InferenceSession(b"not a loadable")
    with pytest.raises(ValueError):
        nvdla.InferenceSession(b"x", device="nowhere")


@need_shared
def test_wrong_inputs_are_value_errors():
    sess = nvdla.InferenceSession(str(MNIST))
    name = sess.get_inputs()[0].name
    with pytest.raises(ValueError, match="missing input"):
        sess.run(None, {})
    with pytest.raises(ValueError, match="unknown input"):
        sess.run(None, {name: np.zeros((1, 1, 28, 28), np.float32), "other": np.zeros(1)})
    with pytest.raises(ValueError, match="shape"):
        sess.run(None, {name: np.zeros((3, 3), np.float32)})
    with pytest.raises(ValueError, match="unknown output"):
        sess.run(["nope"], {name: np.zeros((1, 1, 28, 28), np.float32)})


@need_shared
def test_the_gil_is_released_while_running():
    """While a run goes on in another thread, this thread keeps running Python: the
    longest pause it sees is well below the run's length (holding the GIL would stop it
    for the whole run)."""
    import threading

    sess = nvdla.InferenceSession(DIGITS / "lenet_nv_full_fp16_nhwc_fast-math.nvdla")
    image = DIGITS / "images" / "0_5.jpg"
    sess.run_image(image, normalize=255)
    done = threading.Event()
    span = []

    def work():
        t0 = time.perf_counter()
        for _ in range(3):
            sess.run_image(image, normalize=255)
        span.append((t0, time.perf_counter()))
        done.set()

    stamps = []
    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        stamps.append(time.perf_counter())
    t.join()
    (t0, t1) = span[0]
    inside = [s for s in stamps if t0 <= s <= t1]
    gaps = np.diff(inside) if len(inside) > 1 else np.array([t1 - t0])
    assert gaps.max() < 0.5 * (t1 - t0) / 3, (gaps.max(), t1 - t0)
