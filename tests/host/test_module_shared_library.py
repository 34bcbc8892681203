"""A built te module saved as an object file, linked by contrib.cc into a shared library, loaded
back by runtime.load_module and called through ctypes; export_library(.so) in one step."""
import numpy as np
import pytest

import aot as tvm
from aot import te
from aot.contrib import cc, utils


@pytest.fixture(scope="module")
def fadd():
    A = te.placeholder((256,), name="A")
    B = te.placeholder((256,), name="B")
    C = te.compute(A.shape, lambda i: A[i] * B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    return tvm.build(s, [A, B, C], "llvm", name="mymuladd")


def _arrays():
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(256).astype("float32") for _ in range(2))
    return a, b, a * b + np.float32(1.0)


def test_save_object_then_create_shared_then_load(fadd):
    t = utils.tempdir()
    fadd.save(t.relpath("m.o"))
    cc.create_shared(t.relpath("m.so"), [t.relpath("m.o")])
    assert t.listdir() == ["m.o", "m.so"]
    g = tvm.runtime.load_module(t.relpath("m.so"))
    a, b, want = _arrays()
    c = tvm.nd.array(np.zeros(256, "float32"))
    g(tvm.nd.array(a), tvm.nd.array(b), c)
    tvm.testing.assert_allclose(c.numpy(), want, rtol=1e-6)
    assert g.time_evaluator(g.entry_name, tvm.cpu(0), number=3)(a, b, c).mean > 0


def test_export_library_so_and_tar(fadd):
    t = utils.tempdir()
    fadd.export_library(t.relpath("m.so"))
    fadd.export_library(t.relpath("m.tar"))
    a, b, want = _arrays()
    for name in ("m.so", "m.tar"):
        c = np.zeros(256, "float32")
        tvm.runtime.load_module(t.relpath(name))(a, b, c)
        np.testing.assert_allclose(c, want, rtol=1e-6)


def test_load_module_refuses_a_foreign_library(tmp_path):
    import shutil
    import subprocess
    (tmp_path / "x.c").write_text("int f(void);\nint f(void) { return 1; }\n")
    subprocess.run([shutil.which("gcc"), "-shared", "-fPIC", "-o", str(tmp_path / "x.so"), str(tmp_path / "x.c")],
                   check=True)
    with pytest.raises(tvm.AotError, match="not a shared library made from an aot module"):
        tvm.runtime.load_module(str(tmp_path / "x.so"))
    with pytest.raises(tvm.AotError, match="no such object file"):
        cc.create_shared(str(tmp_path / "y.so"), [str(tmp_path / "missing.o")])


def test_a_symbolic_module_saves_as_data_and_serves_every_size(tmp_path):
    import io
    import tarfile
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: A[i] * 3.0, name="B")
    s = te.create_schedule(B.op)
    f = tvm.build(s, [A, B], "llvm", name="triple")
    f.export_library(str(tmp_path / "t.tar"))
    with tarfile.open(tmp_path / "t.tar") as t:
        payload = t.extractfile(t.getmembers()[0]).read()
    assert b'"script"' in payload and b"T.prim_func" in payload      # text, not code
    g = tvm.runtime.load_module(str(tmp_path / "t.tar"))
    for size in (5, 17):
        a = np.arange(size, dtype="float32")
        b = np.zeros(size, "float32")
        g(a, b)
        np.testing.assert_allclose(b, a * 3)
    bad = io.BytesIO()
    with tarfile.open(fileobj=bad, mode="w") as t:
        info = tarfile.TarInfo(t_name := "./aot_symbolic_module.json")
        data = b'{"format": "aot-symbolic-module/1", "script": "def x(:", "target": "c", "name": "x", "sizes": []}'
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    (tmp_path / "bad.tar").write_bytes(bad.getvalue())
    assert t_name
    with pytest.raises(tvm.AotError, match="load_module"):
        tvm.runtime.load_module(str(tmp_path / "bad.tar"))


def test_get_function_by_the_modules_name(fadd):
    f = fadd.get_function("mymuladd")
    assert f is fadd.get_function(fadd.entry_name)
    a, b, want = _arrays()
    c = np.zeros(256, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-6)
    with pytest.raises(tvm.AotError, match="no function 'other'"):
        fadd.get_function("other")
