"""-libs=cudnn: 2-D convolutions (NCHW float32, any stride, dilation and groups, symmetric
padding, with or without the bias input) through cudnnConvolutionForward + cudnnAddTensor.
The algorithm works in a scratch of WORKSPACE_BYTES that the static plan gives each call. A
batch norm or an activation after it stays a generated kernel (TVM's fusion boundary)."""
from __future__ import annotations

from aot.uma import UMABackend, call_extern

WORKSPACE_BYTES = 16 << 20


def _fits(node):
    a = node.attrs
    x = node.inputs[0]
    return (len(a["kernel_shape"]) == 2 and x.type.dtype == "float32" and node.inputs[1].is_const
            and list(a["pads"][:2]) == list(a["pads"][2:]))


def lower(call):
    node = call.node("Conv")
    a = node.attrs
    x, w = call.inputs[0], call.inputs[1]
    bias = call.inputs[2] if len(call.inputs) > 2 else 0
    y = call.outputs[0]
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    return call_extern("aot_cudnn_conv2d", call.device, x, w, bias, y, call.scratch(WORKSPACE_BYTES), WORKSPACE_BYTES,
                       n, c, h, wd, k, r, s, a["group"], a["pads"][0], a["pads"][1], a["strides"][0], a["strides"][1],
                       a["dilations"][0], a["dilations"][1], y.shape[2], y.shape[3])


class CudnnBackend(UMABackend):
    target_name = "cudnn"

    def __init__(self):
        super().__init__(merge_compiler_regions=False)     # one library call per function
        self._register_op("Conv", predicate=_fits)
        self._register_lowering("Conv", lower)
        self._register_device_context(create="aot_cudnn_create", destroy="aot_cudnn_destroy")
        self._register_codegen(fmt="c", includes=["aot_cudnn.h"], sources=["aot_cudnn.c", "aot_cudnn.h"])
