"""TVM's namespace pieces the tutorials reach first: tvm.testing, tvm.device, tvm.contrib.utils,
tvm.lower of a te schedule."""
import os

import numpy as np
import pytest

import aot as tvm
from aot import te


def test_assert_allclose_takes_arrays_and_checks_shapes():
    a = tvm.nd.array(np.ones(4, "float32"))
    tvm.testing.assert_allclose(a.numpy(), np.ones(4))
    tvm.testing.assert_allclose(a, np.ones(4))
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(np.ones(4), np.ones(5))
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(np.ones(4), np.full(4, 1.001), rtol=1e-5)


def test_tempdir_relpath_listdir_and_removal():
    t = tvm.contrib.utils.tempdir()
    with open(t.relpath("x.txt"), "w") as f:
        f.write("1")
    assert t.listdir() == ["x.txt"] and str(t / "p").startswith(t.path)
    path = t.path
    del t
    assert not os.path.exists(path)


def test_lower_returns_a_printable_module():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    mod = tvm.lower(s, [A, B], simple_mode=True)
    text = str(mod)
    # a symbolic size: TVM's handles and match_buffer, the body through the matched buffers
    assert "def main(A: T.handle, B: T.handle):" in text and "n = T.int32()" in text
    assert "A_1 = T.match_buffer(A, (n,))" in text and "B_1[" in text and "A_1[" in text
    assert "* T.float32(2.0)" in text
    assert mod["main"].name == "main"


def test_devices_by_tvm_names():
    assert tvm.device("llvm") == tvm.cpu(0) and tvm.device("cpu", 1).device_id == 1
    assert tvm.cl(0) == tvm.opencl(0) and tvm.device("cuda").device_type == 2
    with pytest.raises(tvm.AotError, match="device 'rocm'"):
        tvm.device("rocm")


def test_packages_not_offered_import_and_refuse_by_name():
    from aot import autotvm, auto_scheduler, rpc      # noqa: F401  (a ported program's imports pass)
    import aot.meta_schedule                          # noqa: F401
    with pytest.raises(tvm.AotError, match=r"tvm.autotvm.task: autotuning is not offered"):
        autotvm.task.create("matmul", args=(), target="llvm")
    with pytest.raises(tvm.AotError, match=r"tvm.rpc.connect: RPC to a remote device is not offered"):
        rpc.connect("127.0.0.1", 9090)
