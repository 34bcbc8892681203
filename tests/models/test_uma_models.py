"""A plug-in NPU backend (tests/host/test_uma.py) on a whole model: MobileNet's (VWW) pointwise and dense
layers."""
import os

import numpy as np
import onnx
import pytest

from conftest import ort_run

from test_uma import MODELS, aot_meta, backend, members, run_npu_client  # noqa: F401


@pytest.mark.slow
def test_npu_runs_the_pointwise_and_dense_parts_of_vww(tmp_path):
    import aot
    backend("npu")
    path = os.path.join(MODELS, "visual_wake_words", "vww_96_float.onnx")
    res = aot.compile(path, target="npu, c")
    meta = aot_meta(res.tar)
    ext = meta["external_functions"]
    ops = [[n["op"] for n in f["nodes"]] for f in ext]
    assert ops.count(["Conv", "Relu"]) == 13 and ops[-1] == ["MatMul", "Add"]   # 13 pointwise convs, the dense
    assert all(f["device"] == "npu" for f in ext)
    # depthwise and 3x3 convolutions stay generated C, interleaved with the NPU's functions
    names = meta["kernels"]
    assert any(k.startswith("tvmgen_default_fused_conv") for k in names)
    assert [k for k in names if "_npu_main_" in k] == [f"tvmgen_default_npu_main_{k}" for k in range(14)]
    lib1 = members(res.tar)["codegen/host/src/default_lib1.c"].decode()
    assert lib1.count("TVMDeviceNpuActivate(device_context_npu)") == 14
    x = np.random.default_rng(7).random((1, 96, 96, 3)).astype(np.float32)
    got, stats = run_npu_client(res.tar, x, tmp_path)
    ref = ort_run(onnx.load(path), {"input_1": x})
    np.testing.assert_allclose(got, list(ref.values())[0], rtol=1e-4, atol=1e-5)
    # Open (which zeroes the counters) ran again in the second run, and Close at its end
    assert stats["jobs"] == 14 and stats["open"] == 0 and stats["active"] == 0
    assert stats["null_device_rc"] == -1
