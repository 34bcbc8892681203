"""aot.te schedules and aot.build (tests/host/test_te_build.py) on the GPU targets: TVM's vector add for
CUDA (nvcc) and OpenCL (PoCL), shared-memory staging, the example program."""
import numpy as np

import aot
from aot import te

from test_gpu import nvcc, opencl

from test_te_build import N, _arrays, _bound_schedule, _matmul, _vector_add  # noqa: F401


@nvcc
def test_vector_add_for_cuda_compiles_prints_saves_and_reloads(tmp_path):
    from aot.host import build_host, cuda_device_count
    A, B, C = _vector_add()
    fadd = aot.build(_bound_schedule(C), [A, B, C], target="cuda", name="myadd")
    dev_src = fadd.imported_modules[0].get_source()
    assert "__global__" in dev_src and "blockIdx.x" in dev_src and "threadIdx.x" in dev_src
    assert "tvmgen_myadd_run" in fadd.get_source()
    fadd.export_library(str(tmp_path / "myadd.tar"))
    g = aot.runtime.load_module(str(tmp_path / "myadd.tar"))
    assert g.imported_modules[0].get_source() == dev_src
    assert build_host(g.tar)                # nvcc -Werror all-warnings, then linked
    if cuda_device_count():
        a, b, c = _arrays()
        g(a, b, c)
        np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())


@opencl
def test_vector_add_runs_on_opencl_and_after_reload(tmp_path):
    A, B, C = _vector_add()
    fadd = aot.build(_bound_schedule(C), [A, B, C], target="opencl", name="myadd")
    assert "__kernel" in fadd.imported_modules[0].get_source()
    a, b, c = _arrays()
    fadd(a, b, c)
    np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    fadd.export_library(str(tmp_path / "myadd.tar"))
    g = aot.runtime.load_module(str(tmp_path / "myadd.tar"))
    c2 = np.zeros(N, "float32")
    g(a, b, c2)
    np.testing.assert_array_equal(c2, c.numpy())


@opencl
def test_cache_read_at_a_reduction_loop_stages_shared_memory():
    """TVM's GPU matmul pattern: rows on blocks, columns on threads, the reduction split, and both
    operands staged in shared memory per chunk (s.cache_read + compute_at at the outer chunk)."""
    A, B, C, k = _matmul(64)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].bind(i, te.thread_axis("blockIdx.x"))
    s[C].bind(j, te.thread_axis("threadIdx.x"))
    ko, ki = s[C].split(k, factor=16)
    for t in (A, B):
        s[s.cache_read(t, "shared", [C])].compute_at(s[C], ko)
    f = aot.build(s, [A, B, C], target="opencl", name="mm")
    src = f.imported_modules[0].get_source()
    assert src.count("__local") >= 2 and "barrier(" in src
    rng = np.random.default_rng(1)
    a, b = rng.random((64, 64)).astype("float32"), rng.random((64, 64)).astype("float32")
    c = np.zeros((64, 64), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


@opencl
def test_vector_add_example_runs():
    import subprocess
    import sys
    from conftest import ROOT
    r = subprocess.run([sys.executable, f"{ROOT}/examples/python_api/te_vector_add.py", "opencl"], capture_output=True,
                       text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "vector add matches numpy" in r.stdout
