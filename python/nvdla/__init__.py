"""NVDLA from Python: compile Caffe and ONNX models into loadables and run them on a
device (the built-in virtual platform by default) with ONNX Runtime's session interface.

    import nvdla
    sess = nvdla.InferenceSession("model.onnx")            # compiled on the fly (fp16, nv_full)
    out = sess.run(None, {sess.get_inputs()[0].name: x})  # like onnxruntime

A script written for ONNX Runtime moves to NVDLA by changing the line that makes the
session. Loadables compiled once can be saved and loaded:

    loadable = nvdla.compile(open("model.onnx", "rb").read(), config="nv_small",
                             precision="int8", calibration=[x0, x1])
    loadable.save("model.nvdla")
    sess = nvdla.InferenceSession("model.nvdla", config="nv_small")

Errors are exceptions carrying the compiler's or the runtime's message: CompileError,
DeviceError, LoadError, RunError (all NvdlaError), ValueError for wrong arguments.
"""

import os

import numpy as np

from ._nvdla import (
    CompileError,
    DeviceError,
    LoadError,
    NativeSession,
    NvdlaError,
    RunError,
)
from ._nvdla import compile as _compile

__all__ = [
    "compile",
    "Loadable",
    "InferenceSession",
    "NodeArg",
    "NvdlaError",
    "CompileError",
    "DeviceError",
    "LoadError",
    "RunError",
]


class Loadable:
    """A compiled network: the bytes of an NVDLA loadable."""

    def __init__(self, data, config="nv_full"):
        self.data = bytes(data)
        self.config = config

    def save(self, path):
        with open(path, "wb") as f:
            f.write(self.data)

    @classmethod
    def load(cls, path, config="nv_full"):
        with open(path, "rb") as f:
            return cls(f.read(), config)

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        return f"<nvdla.Loadable {len(self.data)} bytes for {self.config}>"


def compile(model, config="nv_full", precision="fp16", calibration=None, cpu_fallback=False,
            per_filter=False, input_shapes=None, optimize=False, activation_scales="per-channel",
            cvsram=0, input_values=None):
    """Compiles `model` into a Loadable.

    model: a path to an .onnx file, ONNX bytes, or (prototxt_path, caffemodel_path).
    calibration: for int8, an iterable of float32 arrays of the first input (NCHW, batch 1)
    or, for a network of several inputs, of dicts of them by input name,
    which the compiler's fp32 reference runs to find each tensor's range; or a calibration
    table's text (NVIDIA's JSON or a TensorRT cache).
    cpu_fallback: operators no NVDLA engine runs go to the CPU (partitions).
    per_filter: int8 weights with a scale per output channel (else one per layer).
    activation_scales: int8 activations calibrated "per-channel" (the default: a scale per
    channel where the hardware folds it in; the compiler's --activation-scales) or
    "per-tensor".
    input_shapes: {name: shape} fixing an ONNX model's symbolic input dimensions.
    input_values: {name: value or values} binding ONNX inputs to constants (the compiler's
    --input-value; an `If` on a sample rate then takes its branch when compiling).
    optimize: optimize for cycles on the accelerator (the compiler's -O: Winograd
    convolution, image-mode input and compressed weights where the build has them,
    poolings taken from their convolutions on the fly); outputs stay within the
    precision's tolerance.
    cvsram: bytes of on-chip CV-SRAM the activations may use (nv_full; the compiler's
    --cvsram); the loadable then runs on the built-in virtual platform only.
    """
    label = "model"
    if isinstance(model, (str, os.PathLike)):
        label = os.fspath(model)
        with open(model, "rb") as f:
            model = f.read()
    elif isinstance(model, tuple):
        prototxt, caffemodel = model
        with open(prototxt, "r") as f:
            text = f.read()
        with open(caffemodel, "rb") as f:
            weights = f.read()
        model = (text, weights)
    if calibration is not None and not isinstance(calibration, str):
        calibration = [
            {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in a.items()}
            if isinstance(a, dict) else np.ascontiguousarray(a, dtype=np.float32)
            for a in calibration
        ]
    shapes = [(k, [int(d) for d in v]) for k, v in (input_shapes or {}).items()]
    values = [(k, [float(x) for x in np.ravel(v)]) for k, v in (input_values or {}).items()]
    data = _compile(model, config=config, precision=precision, calibration=calibration,
                    cpu_fallback=cpu_fallback, per_filter=per_filter, label=label,
                    input_shapes=shapes, optimize=optimize,
                    activation_scales=activation_scales, cvsram=int(cvsram),
                    input_values=values)
    return Loadable(data, config)


class NodeArg:
    """An input or output, as onnxruntime.NodeArg: name, shape, type."""

    def __init__(self, info):
        self.name = info["name"]
        self.shape = list(info["shape"])
        self.device_type = info["type"]
        # An integer network input (byte values, token ids) is FLOAT (binary32) on the
        # device, the compiler's only FLOAT tensors, and takes whole numbers; the others
        # take floats (quantized with their scale in int8).
        integer = self.device_type == "FLOAT"
        self.type = "tensor(int64)" if integer else "tensor(float)"
        self.scale = info["scale"]
        self.surface_bytes = info["surface_bytes"]

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape})"


class InferenceSession:
    """onnxruntime.InferenceSession's interface on an NVDLA device.

    path_or_loadable: an .onnx file (compiled on the fly with `precision`, `calibration`,
    `cpu_fallback`, `input_shapes`, `input_values`, `per_filter` and `activation_scales`,
    as `compile`
    takes them), an .nvdla file, a Loadable, or loadable bytes.
    config: the hardware build; device: "vp" (default), "linux", "socket:PATH", "rtl".
    providers and sess_options are accepted for compatibility and ignored.
    """

    def __init__(self, path_or_loadable, sess_options=None, providers=None, config=None,
                 device="vp", precision="fp16", calibration=None, cpu_fallback=False,
                 profiling=False, input_shapes=None, per_filter=False,
                 activation_scales="per-channel", input_values=None, **kwargs):
        del sess_options, providers, kwargs
        loadable = path_or_loadable
        if isinstance(loadable, (str, os.PathLike)):
            path = os.fspath(loadable)
            if path.endswith(".onnx"):
                loadable = compile(path, config=config or "nv_full", precision=precision,
                                   calibration=calibration, cpu_fallback=cpu_fallback,
                                   input_shapes=input_shapes, per_filter=per_filter,
                                   activation_scales=activation_scales,
                                   input_values=input_values)
            else:
                loadable = Loadable.load(path, config or "nv_full")
        elif isinstance(loadable, (bytes, bytearray)):
            loadable = Loadable(loadable, config or "nv_full")
        if not isinstance(loadable, Loadable):
            raise TypeError("an .onnx or .nvdla path, a Loadable, or loadable bytes")
        self.config = config or loadable.config
        self._native = NativeSession(loadable.data, device=device, config=self.config)
        self._inputs = [NodeArg(i) for i in self._native.inputs()]
        self._outputs = [NodeArg(o) for o in self._native.outputs()]
        if profiling:
            self._native.set_profiling(True)

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_providers(self):
        return ["NvdlaExecutionProvider"]

    def run(self, output_names, input_feed, run_options=None):
        """Runs with `input_feed` ({name: array}); returns the outputs named in
        `output_names` (all when None) as float32 arrays."""
        del run_options
        names = [i.name for i in self._inputs]
        for name in input_feed:
            if name not in names:
                raise ValueError(f"unknown input {name!r}: the inputs are {names}")
        for index, arg in enumerate(self._inputs):
            if arg.name not in input_feed:
                raise ValueError(f"missing input {arg.name!r}")
            array = np.ascontiguousarray(input_feed[arg.name], dtype=np.float32)
            self._native.set_input(index, array)
        self._native.run()
        outs = [o.name for o in self._outputs]
        wanted = outs if output_names is None else list(output_names)
        result = []
        for name in wanted:
            if name not in outs:
                raise ValueError(f"unknown output {name!r}: the outputs are {outs}")
            result.append(self._native.output(outs.index(name)))
        return result

    def run_image(self, path, normalize=1):
        """Feeds an image file into input 0 as `nvdla-runtime --image` does, runs, and
        returns every output."""
        self._native.set_input_image(0, os.fspath(path), normalize)
        self._native.run()
        return [self._native.output(i) for i in range(len(self._outputs))]

    @property
    def last_run_seconds(self):
        return self._native.last_run_seconds()

    def profile(self):
        """The last run's operations as dicts (engine, cycles, shape, MACs), when the
        session was made with profiling=True."""
        return self._native.profile()

    def close(self):
        self._native.close()
