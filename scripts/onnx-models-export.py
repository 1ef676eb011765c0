#!/usr/bin/env python3
"""Exports torchvision's classic topologies to ONNX, the way PyTorch users do, with
reference outputs from ONNX Runtime. Used by scripts/onnx-models; run it through that
script, which prepares the Python environment.

    onnx-models-export.py OUT_DIR MODEL[,MODEL...] [--opset N] [--calib N] [--ort-int8]

For each model: OUT_DIR/<model>/model.onnx (torch.onnx.export, TorchScript exporter,
constant folding on, batch 1), input.npy (a deterministic N(0,1) input), output.npy (ONNX
Runtime's CPU result for it), sensitivity.txt (how far the output moves when the input
is perturbed by fp16's rounding, relative to its largest magnitude) and calib/<k>.npy (N calibration inputs from the same
distribution, other seeds). With --ort-int8, also output.ort-int8.npy: ONNX Runtime's own
int8 result (static QDQ quantization, symmetric, one scale per tensor, MinMax calibration on
the same calib inputs), the yardstick for nvdla-compiler's int8. Weights are torchvision's random initialisation with a fixed
seed: no download. BatchNorm layers get random affine parameters and running statistics
measured on random inputs (as training would leave them), so that activations stay in the
range a trained network has rather than growing layer by layer past fp16's 65504.
"""
import os
import sys

import numpy as np
import onnxruntime as ort
import torch
import torchvision

MODELS = {
    # name: (constructor, input side)
    "alexnet": (lambda: torchvision.models.alexnet(), 224),
    "vgg11": (lambda: torchvision.models.vgg11(), 224),
    "vgg16": (lambda: torchvision.models.vgg16(), 224),
    "resnet18": (lambda: torchvision.models.resnet18(), 224),
    "resnet50": (lambda: torchvision.models.resnet50(), 224),
    "squeezenet1_0": (lambda: torchvision.models.squeezenet1_0(), 224),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(), 224),
    "googlenet": (lambda: torchvision.models.googlenet(aux_logits=False, init_weights=True), 224),
    "inception_v3": (lambda: torchvision.models.inception_v3(aux_logits=False, init_weights=True), 299),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), 224),
    "densenet121": (lambda: torchvision.models.densenet121(), 224),
    # The edge designs of issue 26: channel shuffle (ShuffleNet v2), squeeze-and-excitation
    # with hard-swish (MobileNetV3) and with SiLU (EfficientNet, RegNetY).
    "shufflenet_v2_x1_0": (lambda: torchvision.models.shufflenet_v2_x1_0(), 224),
    "mobilenet_v3_small": (lambda: torchvision.models.mobilenet_v3_small(), 224),
    "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(), 224),
    "regnet_y_400mf": (lambda: torchvision.models.regnet_y_400mf(), 224),
}


def initialise(model, gen, shape):
    """He-normal convolutions and fully connected layers (torchvision's GoogLeNet and
    Inception v3 use std 0.01, which with BatchNorm's eps lets the signal die: the output
    no longer depends on the input), then BatchNorm statistics measured on random
    inputs."""
    for m in model.modules():
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            fan_in = m.weight[0].numel()
            m.weight.data.copy_(torch.randn(m.weight.shape, generator=gen) * (2.0 / fan_in) ** 0.5)
            if m.bias is not None:
                m.bias.data.copy_(torch.randn(m.bias.shape, generator=gen) * 0.01)
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    for m in bns:
        n = m.num_features
        m.weight.data.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
        m.bias.data.copy_(torch.randn(n, generator=gen) * 0.1)
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the batches below
    if bns:
        model.train()
        with torch.no_grad():
            for _ in range(4):
                model(torch.randn((2,) + shape[1:], generator=gen))
    model.eval()


def ort_int8_output(d, path, x):
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod,
                                          QuantFormat, QuantType, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self):
            files = sorted(os.listdir(os.path.join(d, "calib")))
            self.it = iter([{"input": np.load(os.path.join(d, "calib", f))} for f in files])

        def get_next(self):
            return next(self.it, None)

    pre, q = os.path.join(d, "ort-pre.onnx"), os.path.join(d, "ort-int8.onnx")
    quant_pre_process(path, pre, skip_symbolic_shape=True)
    quantize_static(pre, q, Reader(), quant_format=QuantFormat.QDQ, per_channel=False,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax,
                    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
    sess = ort.InferenceSession(q, providers=["CPUExecutionProvider"])
    return sess.run(None, {"input": x})[0].astype(np.float32)


def main():
    args = sys.argv[1:]
    opset, calib = 13, 4
    ort_int8 = "--ort-int8" in args
    if ort_int8:
        args.remove("--ort-int8")
    if "--opset" in args:
        i = args.index("--opset")
        opset = int(args[i + 1])
        del args[i : i + 2]
    if "--calib" in args:
        i = args.index("--calib")
        calib = int(args[i + 1])
        del args[i : i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    out, names = args[0], args[1].split(",")
    for name in names:
        if name not in MODELS:
            sys.exit(f"unknown model {name}; known: {', '.join(MODELS)}")
        ctor, side = MODELS[name]
        d = os.path.join(out, name)
        os.makedirs(os.path.join(d, "calib"), exist_ok=True)
        torch.manual_seed(1)
        model = ctor().eval()
        shape = (1, 3, side, side)
        initialise(model, torch.Generator().manual_seed(2), shape)
        x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
        path = os.path.join(d, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(
                model,
                torch.from_numpy(x),
                path,
                opset_version=opset,
                do_constant_folding=True,
                input_names=["input"],
                output_names=["logits"],
                dynamo=False,
            )
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        y = sess.run(None, {"input": x})[0]
        # How much the output moves when the input is rounded to fp16's precision (a
        # relative 2^-11 perturbation): a floor for any fp16 implementation's error.
        jitter = np.random.default_rng(4).uniform(-(2.0**-11), 2.0**-11, shape)
        y2 = sess.run(None, {"input": (x * (1 + jitter)).astype(np.float32)})[0]
        sensitivity = float(np.abs(y2 - y).max() / max(np.abs(y).max(), 1e-12))
        with open(os.path.join(d, "sensitivity.txt"), "w") as f:
            f.write(f"{sensitivity:.3e}\n")
        np.save(os.path.join(d, "input.npy"), x)
        np.save(os.path.join(d, "output.npy"), y.astype(np.float32))
        for k in range(calib):
            c = np.random.default_rng(100 + k).standard_normal(shape).astype(np.float32)
            np.save(os.path.join(d, "calib", f"{k}.npy"), c)
        if ort_int8:
            np.save(os.path.join(d, "output.ort-int8.npy"), ort_int8_output(d, path, x))
        print(f"{name}: {shape} -> {tuple(y.shape)}, opset {opset}, top-1 {int(y.argmax())}, "
              f"sensitivity {sensitivity:.1e}")


if __name__ == "__main__":
    main()
