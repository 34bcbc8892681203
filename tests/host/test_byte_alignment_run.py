"""The C target's byte-alignment options (TVM's -constants-byte-alignment and
-workspace-byte-alignment) give C that builds warning-free and runs right: the host test
program compares the outputs with numpy's."""
import numpy as np
import pytest

import aot as tvm
from aot import relay
from aot.micro.testing.aot_test_utils import AOT_DEFAULT_RUNNER
from aot.testing.aot import AOTTestModel, compile_and_run


@pytest.mark.parametrize("target,ws_align", [("c -constants-byte-alignment=4", 8),
                                             ("c -constants-byte-alignment=64", 256),
                                             ("c -workspace-byte-alignment=128 -constants-byte-alignment=32", 128)])
def test_aligned_constants_and_workspace_build_and_run(target, ws_align):
    rng = np.random.default_rng(7)
    w1, w2 = rng.standard_normal((1, 10)).astype("float32"), rng.standard_normal((1, 10)).astype("float32")
    wd = rng.standard_normal((10, 10)).astype("float32")
    x = relay.var("x", shape=(1, 10))
    # dense, softmax and dense again are three kernels: two intermediates in the workspace
    h = relay.nn.softmax(relay.nn.dense(relay.add(x, relay.const(w1)), relay.const(wd)))
    y = relay.multiply(relay.nn.dense(h, relay.const(wd)), relay.const(w2))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    xv = rng.standard_normal((1, 10)).astype("float32")
    a = (xv + w1) @ wd.T
    e = np.exp(a - a.max())
    want = ((e / e.sum()) @ wd.T) * w2
    assert compile_and_run(AOTTestModel(module=mod, inputs={"x": xv}, outputs={"output": want}), AOT_DEFAULT_RUNNER,
                           "c", True, target=target, workspace_byte_alignment=ws_align)
