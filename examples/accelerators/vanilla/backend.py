"""The vanilla accelerator: a MAC array without memory of its own that computes one 2-D
convolution (NCHW, stride 1, "same" padding, no bias) per call of vanilla_conv2dnchw.

    aot compile model.onnx --backend examples/accelerators/vanilla/backend.py \
        --target "vanilla_accelerator, c" -o model.tar

Stride-1 same-padded convolutions go to the accelerator; everything else stays generated C.
"""
from aot.relay.dataflow_pattern import is_constant, is_op, wildcard
from aot.uma import UMABackend, call_extern


def conv2d_pattern():
    return is_op("Conv")(wildcard(), is_constant())


def fits(match):
    """What the hardware does: batch 1, one group, stride 1, no dilation, odd square-centred
    kernel with its "same" padding."""
    conv = match.nodes[0]
    a = conv.attrs
    x, w = match.inputs
    if len(a["kernel_shape"]) != 2 or x.type.dtype != "float32" or x.type.shape[0] != 1:
        return False
    kh, kw = a["kernel_shape"]
    return (a["group"] == 1 and list(a["strides"]) == [1, 1] and list(a["dilations"]) == [1, 1]
            and kh % 2 == 1 and kw % 2 == 1 and list(a["pads"]) == [kh // 2, kw // 2, kh // 2, kw // 2])


def lower_conv2d(call):
    x, w = call.inputs
    oc, ic, kh, kw = w.shape
    _, _, ih, iw = x.shape
    return call_extern("vanilla_conv2dnchw", x, w, call.outputs[0], oc, iw, ih, ic, kh, kw)


class VanillaAcceleratorBackend(UMABackend):
    target_name = "vanilla_accelerator"

    def __init__(self):
        super().__init__()
        self._register_pattern("conv2d", conv2d_pattern(), predicate=fits)
        self._register_lowering("conv2d", lower_conv2d)
        self._register_codegen(fmt="c", includes=["vanilla.h"], sources=["src/vanilla.c", "src/vanilla.h"])


VanillaAcceleratorBackend().register()
