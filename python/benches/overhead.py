"""Overhead of the Python package (`scripts/python --bench`):

1. LeNet (NVIDIA's nv_full fp16 loadable) through `InferenceSession.run` against the same
   session's own run time measured inside Rust (`last_run_seconds`): the cost of Python,
   numpy conversion and the binding per call.
2. 100 digit images through one session against 100 `nvdla-runtime` processes on the same
   images (process start, loadable parsing and memory setup each time), as a ratio.
"""

import pathlib
import subprocess
import sys
import time

import numpy as np

import nvdla

root = pathlib.Path(__file__).resolve().parents[2]
shared = root.parent / "shared"
digits = shared / "third-party-loadables" / "lenet-mnist"
loadable = digits / "lenet_nv_full_fp16_nhwc_fast-math.nvdla"
runtime = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else root / "target/release/nvdla-runtime"
images = sorted((digits / "images").glob("0_*.jpg")) * 10

sess = nvdla.InferenceSession(loadable)
name = sess.get_inputs()[0].name
x = np.zeros(sess.get_inputs()[0].shape, np.float32)
x[0, 0, 10:18, 12:16] = 1.0
sess.run(None, {name: x})
calls, inner = [], []
for _ in range(50):
    t0 = time.perf_counter()
    sess.run(None, {name: x})
    calls.append(time.perf_counter() - t0)
    inner.append(sess.last_run_seconds)
call, run = float(np.median(calls)), float(np.median(inner))
print(f"LeNet run(): {call * 1e3:.3f} ms per call from Python, {run * 1e3:.3f} ms of it the "
      f"session's run in Rust: Python costs {100 * (call / run - 1):+.1f} % (median of 50)")

t0 = time.perf_counter()
for img in images:
    sess.run_image(img, normalize=255)
one_session = time.perf_counter() - t0
t0 = time.perf_counter()
for img in images:
    subprocess.run([str(runtime), "--loadable", str(loadable), "--image", str(img),
                    "--normalize", "255"], check=True, capture_output=True)
processes = time.perf_counter() - t0
print(f"{len(images)} images: one session {one_session:.2f} s, {len(images)} nvdla-runtime "
      f"processes {processes:.2f} s: the session takes {one_session / processes:.2f}x the time")
