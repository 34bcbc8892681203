"""A fused unit: convolution + bias + optional ReLU in one call of fused_conv2d_bias_relu.

    aot compile model.onnx --backend examples/accelerators/conv_bias_relu/backend.py \
        --target "conv_bias_relu, c" -o model.tar

The composite pattern takes Conv with its bias, or Conv followed by an Add of a per-channel
constant, each optionally followed by Relu; any stride and padding, one group, no dilation.
"""
from aot.relay.dataflow_pattern import is_constant, is_op, wildcard
from aot.uma import UMABackend, call_extern


def conv_bias_relu_pattern():
    with_bias = is_op("Conv")(wildcard(), is_constant(), is_constant())
    add_bias = is_op("Add")(is_op("Conv")(wildcard(), is_constant()), is_constant())
    return (with_bias | add_bias).optional(lambda x: is_op("Relu")(x))


def fits(match):
    conv = next(n for n in match.nodes if n.op == "Conv")
    a = conv.attrs
    x, w, b = match.inputs
    return (len(a["kernel_shape"]) == 2 and a["group"] == 1 and list(a["dilations"]) == [1, 1]
            and x.type.shape[0] == 1 and x.type.dtype == "float32" and b.type.size == w.type.shape[0]
            and tuple(b.type.shape) in ((w.type.shape[0],), (1, w.type.shape[0], 1, 1), (w.type.shape[0], 1, 1)))


def lower(call):
    x, w, b = call.inputs
    y = call.outputs[0]
    a = call.node("Conv").attrs
    _, ic, ih, iw = x.shape
    oc, _, kh, kw = w.shape
    return call_extern("fused_conv2d_bias_relu", x, w, b, y, ic, ih, iw, oc, kh, kw,
                       a["strides"][0], a["strides"][1], a["pads"][0], a["pads"][1], y.shape[2], y.shape[3],
                       1 if call.has("Relu") else 0)


class ConvBiasReluBackend(UMABackend):
    target_name = "conv_bias_relu"

    def __init__(self):
        super().__init__()
        self._register_pattern("conv2d_bias_relu", conv_bias_relu_pattern(), predicate=fits)
        self._register_lowering("conv2d_bias_relu", lower)
        self._register_codegen(fmt="c", includes=["conv_bias_relu.h"],
                               sources=["src/conv_bias_relu.c", "src/conv_bias_relu.h"])


ConvBiasReluBackend().register()
