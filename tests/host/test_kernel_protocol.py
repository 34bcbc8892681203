"""The executor's kernel protocol: a group handed to an external C function (with planned
scratch, literal arguments and shipped sources) runs in the same static executor as the
generated kernels; results are checked against onnxruntime."""
import json
import tarfile
import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import aot
from aot.compiler import Options, compile_model
from aot.executor import ExternalCall, ExternalKernel, GeneratedKernel

ROWS, COLS = 3, 7

# an "accelerator library": softmax over rows, exps staged in caller-provided scratch
SOFTMAX_C = r"""
#include <math.h>
#include <stdint.h>
int32_t acme_softmax(const float* x, float* y, uint8_t* scratch, int32_t rows, int32_t cols) {
  float* e = (float*)(void*)scratch;
  int32_t r, c;
  for (r = 0; r < rows; ++r) {
    float m = x[r * cols], s = 0.0f;
    for (c = 1; c < cols; ++c) m = x[r * cols + c] > m ? x[r * cols + c] : m;
    for (c = 0; c < cols; ++c) { e[c] = expf(x[r * cols + c] - m); s += e[c]; }
    for (c = 0; c < cols; ++c) y[r * cols + c] = e[c] / s;
  }
  return 0;
}
"""


def _model():
    bias = numpy_helper.from_array(np.linspace(-1, 1, ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS), "bias")
    nodes = [helper.make_node("Add", ["x", "bias"], ["a"]),
             helper.make_node("Softmax", ["a"], ["s"], axis=1),
             helper.make_node("Mul", ["s", "s"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, COLS])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, COLS])], [bias])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _acme(group, symbol):
    if group.op_names != ["Softmax"]:
        return None
    return ExternalKernel("acme_softmax", scratch_bytes=COLS * 4, literals=(ROWS, COLS),
                          sources={"acme_softmax.c": SOFTMAX_C})


def test_external_call_runs_in_the_executor_with_planned_scratch():
    m = _model()
    res = compile_model(m.SerializeToString(), Options(external=_acme))
    kinds = [type(c).__name__ for c in res.plan.calls]
    assert kinds == ["GeneratedKernel", "ExternalCall", "GeneratedKernel"]
    ext = res.plan.calls[1]
    assert isinstance(ext, ExternalCall) and ext.args[-1].size == COLS * 4
    # the scratch is a planned buffer of one step, reported with the tensors
    rows = {r["name"]: r for r in res.plan.tensors}
    scratch = rows["acme_softmax scratch"]
    assert scratch["first"] == scratch["last"] == 1 and scratch["bytes"] == COLS * 4
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        names = t.getnames()
        lib1 = t.extractfile("./codegen/host/src/default_lib1.c" if "./codegen/host/src/default_lib1.c" in names
                             else "codegen/host/src/default_lib1.c").read().decode()
        meta = json.loads(t.extractfile([n for n in names if n.endswith("metadata.json")][0]).read())
    assert any(n.endswith("codegen/host/src/acme_softmax.c") for n in names)
    assert "int32_t acme_softmax(const float*, float*, uint8_t*, int32_t, int32_t);" in lib1
    assert "acme_softmax(" in lib1.split("__tvm_main__")[-1] and "INT32_C(3), INT32_C(7))" in lib1
    ops = meta["modules"]["default"]["memory"]["functions"]["operator_functions"]
    assert {"function_name": "acme_softmax", "workspace": [{"device": 1, "workspace_size_bytes": COLS * 4}]} in ops

    x = np.random.default_rng(3).standard_normal((ROWS, COLS)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = aot.run(res, {"x": x}, sanitize=True)
    np.testing.assert_allclose(got["y"], want, rtol=1e-5, atol=1e-6)


def test_in_place_is_proven_only_for_generated_kernels():
    """The external call's output may not take its input's storage (no loop IR to prove it
    safe), while the generated elementwise kernel after it still may."""
    res = compile_model(_model().SerializeToString(), Options(external=_acme))
    rows = {r["name"]: r for r in res.plan.tensors}
    assert "in_place_of" not in rows["s"]
    assert all(isinstance(c, (GeneratedKernel, ExternalCall)) for c in res.plan.calls)


def test_external_source_may_not_replace_generated_files():
    def bad(group, symbol):
        if group.op_names != ["Softmax"]:
            return None
        return ExternalKernel("acme_softmax", sources={"default_lib1.c": SOFTMAX_C})
    with pytest.raises(aot.AotError, match="would replace a generated file"):
        compile_model(_model().SerializeToString(), Options(external=bad))
