"""An NPU with its own memory: the host copies operands into the NPU's SRAM, starts a matrix
multiply (with an optional bias and ReLU), and copies the result back, all through a device
context that the application owns (TVM's device API).

    aot compile vww.onnx --backend examples/accelerators/npu/backend.py --target "npu, c" -o vww.tar

The NPU takes dense layers (MatMul [+ Add bias] [+ Relu]) and pointwise 1x1 convolutions, which
are matrix products in NCHW ([oc, ic] x [ic, h*w]); depthwise and 3x3 convolutions stay on the
CPU. The application passes its npu_device in struct tvmgen_<mod>_devices, and the executor
calls TVMDeviceNpuOpen/Activate/Deactivate/Close around the NPU's work.

Target option: -sram_words=N (default 262144), the NPU memory the compiler may use; operations
whose operands do not fit stay on the CPU.
"""
from aot.relay.dataflow_pattern import is_constant, is_op, wildcard
from aot.uma import UMABackend, call_extern

DEFAULT_SRAM_WORDS = 262144


def with_epilogue(p):
    """p, p + bias, p + ReLU, p + bias + ReLU."""
    p = p.optional(lambda x: is_op("Add")(x, is_constant()))
    return p.optional(lambda x: is_op("Relu")(x))


def dense_pattern():
    return with_epilogue(is_op("MatMul")(wildcard(), is_constant()))


def pointwise_pattern():
    conv = is_op("Conv")(wildcard(), is_constant(), is_constant()) | is_op("Conv")(wildcard(), is_constant())
    return conv.optional(lambda x: is_op("Relu")(x))


def _mkn(call):
    """(M, K, N, host operand A, host operand B) of the product, and where the bias goes."""
    if call.has("Conv"):
        x, w = call.inputs[0], call.inputs[1]
        oc, ic = w.shape[0], w.shape[1]
        hw = x.shape[2] * x.shape[3]
        return oc, ic, hw, w, x, 1           # [oc, ic] x [ic, h*w]; bias per row
    x, w = call.inputs[0], call.inputs[1]
    return x.shape[0], x.shape[1], w.shape[1], x, w, 2     # [m, k] x [k, n]; bias per column


class NpuBackend(UMABackend):
    target_name = "npu"

    def __init__(self):
        super().__init__()
        self._register_target_attr("sram_words", str(DEFAULT_SRAM_WORDS))
        self._register_pattern("dense", dense_pattern(), predicate=self.dense_fits)
        self._register_pattern("pointwise_conv", pointwise_pattern(), predicate=self.pointwise_fits)
        self._register_lowering("dense", self.lower_matmul)
        self._register_lowering("pointwise_conv", self.lower_matmul)
        self._register_device_context()
        self._register_codegen(fmt="c", includes=["npu.h"], sources=["src/npu.c", "src/npu.h"])

    def sram_words(self):
        return int(self.get_target_attr("sram_words"))

    def fits(self, m, k, n):
        return m * k + k * n + n + m * n <= self.sram_words()   # A, B, bias (at most n), C

    def dense_fits(self, match):
        x, w = match.inputs[0], match.inputs[1]
        if len(x.type.shape) != 2 or len(w.type.shape) != 2 or x.type.dtype != "float32":
            return False
        bias = [v for v in match.inputs[2:]]
        if bias and tuple(bias[0].type.shape) != (w.type.shape[1],):
            return False               # only a per-column bias vector is a bias-add
        return self.fits(x.type.shape[0], x.type.shape[1], w.type.shape[1])

    def pointwise_fits(self, match):
        conv = next(n for n in match.nodes if n.op == "Conv")
        a = conv.attrs
        x, w = match.inputs[0], match.inputs[1]
        if (list(a["kernel_shape"]) != [1, 1] or list(a["strides"]) != [1, 1] or a["group"] != 1
                or any(a["pads"]) or x.type.shape[0] != 1 or x.type.dtype != "float32"):
            return False
        return self.fits(w.type.shape[0], w.type.shape[1], x.type.shape[2] * x.type.shape[3])

    def lower_matmul(self, call):
        m, k, n, a_host, b_host, bias_axis = _mkn(call)
        has_bias = len(call.inputs) > 2
        a, b = 0, m * k
        bias = b + k * n
        c = bias + (m if bias_axis == 1 else n) if has_bias else bias
        dev = call.device
        calls = [call_extern("npu_write", dev, a, a_host, m * k),
                 call_extern("npu_write", dev, b, b_host, k * n)]
        if has_bias:
            calls.append(call_extern("npu_write", dev, bias, call.inputs[2], call.inputs[2].size))
        calls.append(call_extern("npu_matmul", dev, a, b, bias, c, m, k, n, bias_axis if has_bias else 0,
                                 1 if call.has("Relu") else 0))
        calls.append(call_extern("npu_read", dev, call.outputs[0], c, m * n))
        return calls


NpuBackend().register()
