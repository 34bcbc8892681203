"""`aot debug` on a .tflite model: every kernel's output compared with TensorFlow Lite Micro (the
tflite-micro wheel), which runs a copy of the model listing every operator output as an output."""
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from test_debug import corrupt_kernel
from tflite_build import ModelBuilder
from tflm_oracle import run_tflm, tflm_available

pytestmark = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")

RNG = np.random.default_rng(7)
W = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
B = RNG.standard_normal(4).astype(np.float32)
FW = (RNG.standard_normal((10, 64)) * 0.1).astype(np.float32)
X = RNG.standard_normal((1, 8, 8, 3)).astype(np.float32)


def float_model():
    """conv (fused ReLU) -> max pool -> reshape -> fully connected -> softmax, NHWC."""
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 8, 8, 3], "float32")
    w = mb.tensor("w", [4, 3, 3, 3], "float32", data=W)
    b = mb.tensor("b", [4], "float32", data=B)
    c = mb.tensor("conv", [1, 8, 8, 4], "float32")
    mb.op("CONV_2D", [x, w, b], [c], padding="SAME", fused_activation_function="RELU")
    p = mb.tensor("pool", [1, 4, 4, 4], "float32")
    mb.op("MAX_POOL_2D", [c], [p], padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    r = mb.tensor("flat", [1, 64], "float32")
    mb.op("RESHAPE", [p, mb.tensor("shape", [2], "int32", data=np.array([1, 64], np.int32))], [r])
    y = mb.tensor("y", [1, 10], "float32")
    mb.op("FULLY_CONNECTED", [r, mb.tensor("fw", [10, 64], "float32", data=FW)], [y])
    z = mb.tensor("z", [1, 10], "float32")
    mb.op("SOFTMAX", [y], [z], beta=1.0)
    return mb.finish(inputs=[x], outputs=[z])


def int8_model():
    """int8 conv (fused ReLU, folded into the kernel's clamp) -> max pool -> average pool."""
    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 8, 8, 3], "int8", scale=0.05, zero_point=-3)
    ws = np.array([0.02, 0.03, 0.025, 0.04], np.float32)
    w = mb.tensor("w", [4, 3, 3, 3], "int8", data=rng.integers(-100, 100, (4, 3, 3, 3)).astype(np.int8), scale=ws,
                  zero_point=0, quantized_dimension=0)
    b = mb.tensor("b", [4], "int32", data=rng.integers(-500, 500, 4).astype(np.int32), scale=0.05 * ws, zero_point=0)
    c = mb.tensor("conv", [1, 8, 8, 4], "int8", scale=0.1, zero_point=-128)
    mb.op("CONV_2D", [x, w, b], [c], padding="SAME", fused_activation_function="RELU")
    p = mb.tensor("pool", [1, 4, 4, 4], "int8", scale=0.1, zero_point=-128)
    mb.op("MAX_POOL_2D", [c], [p], padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    a = mb.tensor("avg", [1, 2, 2, 4], "int8", scale=0.1, zero_point=-128)
    mb.op("AVERAGE_POOL_2D", [p], [a], padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    return mb.finish(inputs=[x], outputs=[a])


def numpy_conv_relu(x, w, b):
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((1, 8, 8, 4), np.float64)
    for i in range(8):
        for j in range(8):
            out[0, i, j] = np.einsum("hwc,ohwc->o", xp[0, i:i + 3, j:j + 3], w) + b
    return np.maximum(out, 0)


def test_the_reference_is_tflms_own_run():
    """The TFLM outputs of every operator: the model's output as TFLM gives it unchanged, and each
    intermediate as numpy computes it from the one before."""
    from aot.debug import tflite_reference
    data = float_model()
    refs = tflite_reference(data, {"x": X}, ["conv_act", "pool", "y", "z"], ["conv", "conv_act", "pool", "y", "z"])
    np.testing.assert_array_equal(refs["z"], run_tflm(data, [X])[0])
    np.testing.assert_allclose(refs["conv_act"], numpy_conv_relu(X, W, B), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(refs["pool"], refs["conv_act"].reshape(1, 4, 2, 4, 2, 4).max(axis=(2, 4)))
    np.testing.assert_allclose(refs["y"], refs["pool"].reshape(1, 64) @ FW.T, rtol=1e-5, atol=1e-5)
    assert "conv" not in refs      # the value before the fused ReLU: TFLite has no such tensor


def test_float_model_matches_tflm():
    import aot
    rep = aot.debug(float_model(), {"x": X})        # the API function, as for an ONNX model
    assert [r["tensor"] for r in rep.rows] == ["conv_act", "pool", "y", "z"]
    assert [r["status"] for r in rep.rows] == ["ok"] * 4, rep.table()
    assert rep.ok and "all 4 compared kernel outputs match TFLite Micro" in rep.summary()


def test_int8_model_matches_tflm_exactly():
    from aot.debug import debug
    xq = np.random.default_rng(2).integers(-128, 127, (1, 8, 8, 3)).astype(np.int8)
    rep = debug(int8_model(), {"x": xq})
    assert [r["status"] for r in rep.rows] == ["ok"] * 3, rep.table()
    assert all(r["max_abs"] == 0 for r in rep.rows)


def test_corrupted_kernel_is_named():
    from aot.debug import debug_mlf, instrument
    data = float_model()
    rep = debug_mlf(corrupt_kernel(instrument(data).tar, 1), data, {"x": X})
    assert [r["status"] for r in rep.rows] == ["ok"] + ["DIVERGES"] * 3, rep.table()
    assert rep.first_divergent["kernel"] == 1 and rep.first_divergent["tensor"] == "pool"


def test_cli_debug_takes_a_tflite_model(tmp_path):
    from aot.debug import instrument
    path, inputs = tmp_path / "m.tflite", tmp_path / "in.npz"
    path.write_bytes(float_model())
    np.savez(inputs, x=X)
    env = dict(os.environ, PYTHONPATH=ROOT)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "aot", "debug", str(path), "--inputs", str(inputs), *args],
                              capture_output=True, text=True, env=env)
    r = run()
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "all 4 compared kernel outputs match TFLite Micro"
    bad = tmp_path / "bad.tar"
    bad.write_bytes(corrupt_kernel(instrument(float_model()).tar, 2))
    r = run("--mlf", str(bad))
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines()[-1].startswith("first divergent kernel: 2 tvmgen_default_fused_gemm (nodes y")
    other = tmp_path / "other.tar"
    other.write_bytes(instrument(int8_model()).tar)
    r = run("--mlf", str(other))
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "was not compiled from this model" in r.stderr
