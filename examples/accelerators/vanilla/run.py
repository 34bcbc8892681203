import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
import aot
from aot.relay.dataflow_pattern import is_constant, is_op, wildcard
from aot.uma import UMABackend, call_extern


class VanillaAcceleratorBackend(UMABackend):      # a MAC array that does stride-1 "same" 3x3 convolutions
    target_name = "vanilla_accelerator"

    def __init__(self):
        super().__init__()
        conv = is_op("Conv")(wildcard(), is_constant()).has_attr({"strides": [1, 1], "pads": [1, 1, 1, 1]})
        self._register_pattern("conv2d", conv)
        self._register_lowering("conv2d", self.lower)
        self._register_codegen(fmt="c", includes=["vanilla.h"], sources=["src/vanilla.c", "src/vanilla.h"])

    def lower(self, call):            # int vanilla_conv2dnchw(ifmap, weights, result, oc, iw, ih, ic, kh, kw)
        (x, w), y = call.inputs, call.outputs[0]
        return call_extern("vanilla_conv2dnchw", x, w, y, w.shape[0], x.shape[3], x.shape[2], *w.shape[1:])


VanillaAcceleratorBackend().register()
rng = np.random.default_rng(0)
w1, w2 = (numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
          for n, s in (("w1", (8, 3, 3, 3)), ("w2", (8, 8, 3, 3))))
model = helper.make_model(helper.make_graph(
    [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),                   # -> accelerator
     helper.make_node("Relu", ["a"], ["r"]),                                            # -> generated C
     helper.make_node("Conv", ["r", "w2"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2])],  # -> generated C
    "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], [w1, w2]),
    opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
res = aot.compile(model, "vanilla.tar", target="vanilla_accelerator, c")   # the MLF, with vanilla.c inside
x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
got = aot.run(res, {"x": x}, sanitize=True)["y"]                          # host gcc, ASan + UBSan
want = ort.InferenceSession(model).run(None, {"x": x})[0]
print("MATCH" if np.allclose(got, want, rtol=1e-4, atol=1e-4) else "MISMATCH", float(np.abs(got - want).max()))
