import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SHARED = os.path.join(ROOT, "..", "shared")


@pytest.fixture(scope="session", autouse=True)
def _cache_dir(tmp_path_factory):
    # a fresh build cache per test session: no stale binaries from earlier code
    os.environ["AOT_CACHE_DIR"] = str(tmp_path_factory.mktemp("aot-cache"))


def make_model(nodes, inputs, outputs, initializers=(), opset=13):
    """A ModelProto onnxruntime can load (IR version pinned to one it supports)."""
    from onnx import helper
    g = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset >= 15 else 7
    if opset >= 19:
        m.ir_version = 9
    return m


def vi(name, shape, dtype=None):
    from onnx import TensorProto, helper
    return helper.make_tensor_value_info(name, dtype or TensorProto.FLOAT, shape)


def init(name, arr):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.asarray(arr), name)


def ort_run(model, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def check_model(model, feeds, rtol=1e-4, atol=1e-5, sanitize=True):
    """Compile with aot, run on the host (ASan+UBSan by default), compare with onnxruntime."""
    import aot
    ref = ort_run(model, feeds)
    res = aot.compile(model.SerializeToString())
    out = aot.run(res, feeds, sanitize=sanitize)
    for k, r in ref.items():
        assert out[k].shape == r.shape, (k, out[k].shape, r.shape)
        assert out[k].dtype == r.dtype, (k, out[k].dtype, r.dtype)
        np.testing.assert_allclose(out[k], r, rtol=rtol, atol=atol, err_msg=k)
    return res, out
