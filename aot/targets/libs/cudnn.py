"""-libs=cudnn: 2-D convolutions (NCHW float32, any stride, dilation and groups, symmetric
padding, with or without the bias input) through cuDNN. A convolution with its bias followed
by a Relu is one cudnnConvolutionBiasActivationForward; otherwise cudnnConvolutionForward (+
cudnnAddTensor for the bias). Each call site's descriptors and algorithm are made once at the
host's init (call.at_init): the algorithm is timed there on the GPU, among those whose working
memory is at most SCRATCH_LIMIT, and the library context holds one device scratch sized to the
largest choice (so the static plan reserves nothing for it). Float32 FMA math, or TF32 tensor
cores with the target's -tf32. Its calls only enqueue on the module's stream: a CUDA graph may
record them. A batch norm or another activation after it stays a generated kernel (TVM's fusion
boundary)."""
from __future__ import annotations

from ...ir.pattern import is_constant, is_op, wildcard
from ...uma import UMABackend, call_extern
from . import tf32

# PyTorch's cudnn.benchmark lets an algorithm take what the GPU has free; a fixed limit keeps
# init's memory predictable (an algorithm needing more is rare at batch 1 and never the only one)
SCRATCH_LIMIT = 256 << 20


def _fits(node):
    a = node.attrs
    x = node.inputs[0]
    return (len(a["kernel_shape"]) == 2 and x.type.dtype == "float32" and node.inputs[1].is_const
            and list(a["pads"][:2]) == list(a["pads"][2:]))


def _fits_match(match):
    return _fits(next(n for n in match.nodes if n.op == "Conv"))


def lower(call, tf32):
    node = call.node("Conv")
    a = node.attrs
    x, w = call.inputs[0], call.inputs[1]
    bias = call.inputs[2] if len(call.inputs) > 2 else 0
    relu = 1 if call.has("Relu") else 0
    y = call.outputs[0]
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    params = (n, c, h, wd, k, r, s, a["group"], a["pads"][0], a["pads"][1], a["strides"][0], a["strides"][1],
              a["dilations"][0], a["dilations"][1], y.shape[2], y.shape[3])
    call.at_init(call_extern("aot_cudnn_conv2d_plan", call.device, *params, 0 if bias == 0 else 1, relu, tf32,
                             SCRATCH_LIMIT))
    return call_extern("aot_cudnn_conv2d", call.device, x, w, bias, y, *params, relu, tf32)


class CudnnBackend(UMABackend):
    target_name = "cudnn"

    def __init__(self):
        super().__init__(merge_compiler_regions=False)     # one library call per function
        conv_bias = is_op("Conv")(wildcard(), is_constant(), is_constant())
        self._register_pattern("conv2d_bias_relu", is_op("Relu")(conv_bias), predicate=_fits_match)
        self._register_lowering("conv2d_bias_relu", self._lower)
        self._register_op("Conv", predicate=_fits)
        self._register_lowering("Conv", self._lower)
        self._register_device_context(create="aot_cudnn_create", destroy="aot_cudnn_destroy", graph_safe=True)
        self._register_codegen(fmt="c", includes=["aot_cudnn.h"], sources=["aot_cudnn.c", "aot_cudnn.h"])

    def _lower(self, call):
        return lower(call, tf32(self))


BACKEND = CudnnBackend
