"""aot.topi's cuda schedules (tests/unit/test_topi.py) built for CUDA as intro_topi builds them: the
device code compiles with nvcc (-Werror all-warnings) and links; where a GPU is present the kernels
run and give numpy's values. The same schedules for OpenCL run on PoCL where it is installed."""
import numpy as np
import pytest

import aot
from aot import te, topi

from test_gpu import nvcc, opencl

RNG = np.random.default_rng(3)


def _reduce():
    a = te.placeholder((100, 10, 10), name="a")
    b = te.placeholder((10, 10), name="b")
    g = topi.sum(topi.elemwise_sum([a + b, a * b]) / 2.0)
    av = RNG.uniform(size=(100, 10, 10)).astype("float32")
    bv = RNG.uniform(size=(10, 10)).astype("float32")
    return [a, b], g, topi.cuda.schedule_reduce, [av, bv], np.sum(np.add(av + bv, av * bv) / 2.0)


def _row_sum():
    A = te.placeholder((300, 70), name="A")
    av = RNG.uniform(size=(300, 70)).astype("float32")
    return [A], topi.sum(A, axis=1), topi.cuda.schedule_reduce, [av], av.sum(axis=1)


def _softmax():
    x = te.placeholder((64, 512), name="x")
    xv = RNG.uniform(-3, 3, size=(64, 512)).astype("float32")
    z = np.exp(xv - xv.max(axis=1, keepdims=True))
    return [x], topi.nn.softmax(x), topi.cuda.schedule_softmax, [xv], z / z.sum(axis=1, keepdims=True)


def _conv():
    data = te.placeholder((1, 3, 40, 36), name="data")
    kernel = te.placeholder((10, 3, 5, 5), name="weight")
    out = topi.nn.relu(topi.cuda.conv2d_nchw(data, kernel, 1, 2, 1))
    dv = RNG.uniform(-1, 1, size=(1, 3, 40, 36)).astype("float32")
    kv = RNG.uniform(-1, 1, size=(10, 3, 5, 5)).astype("float32")
    xp = np.pad(dv, ((0, 0), (0, 0), (2, 2), (2, 2)))
    ref = np.zeros((1, 10, 40, 36))
    for i in range(5):
        for j in range(5):
            ref += np.einsum("nchw,fc->nfhw", xp[:, :, i:i + 40, j:j + 36], kv[:, :, i, j])
    return [data, kernel], out, lambda o: topi.cuda.schedule_conv2d_nchw([o]), [dv, kv], np.maximum(ref, 0)


def _injective():
    a = te.placeholder((300, 257), name="a")
    b = te.placeholder((257,), name="b")
    av, bv = RNG.uniform(size=(300, 257)).astype("float32"), RNG.uniform(size=257).astype("float32")
    return [a, b], topi.nn.relu(a - b), topi.cuda.schedule_injective, [av, bv], np.maximum(av - bv, 0)


CASES = {"reduce": _reduce, "row_sum": _row_sum, "softmax": _softmax, "conv2d": _conv, "injective": _injective}


def _build(case, target):
    ins, out, schedule, arrays, ref = CASES[case]()
    with aot.target.Target(target):
        s = schedule(out)
    return aot.build(s, ins + [out], target), arrays, ref, out


@nvcc
@pytest.mark.parametrize("case", sorted(CASES))
def test_topi_cuda_schedules_compile_with_nvcc_and_run_where_a_gpu_is(case):
    from aot.host import build_host, cuda_device_count
    f, arrays, ref, out = _build(case, "cuda")
    src = f.imported_modules[0].get_source()
    assert "__global__" in src
    assert build_host(f.tar)
    if cuda_device_count():
        res = aot.nd.array(np.zeros(ref.shape, "float32"), aot.cuda(0))
        f(*[aot.nd.array(a, aot.cuda(0)) for a in arrays], res)
        np.testing.assert_allclose(res.numpy(), ref, rtol=1e-5, atol=1e-5)


@opencl
@pytest.mark.parametrize("case", sorted(CASES))
def test_topi_cuda_schedules_run_on_opencl(case):
    f, arrays, ref, out = _build(case, "opencl")
    res = np.zeros(ref.shape, "float32")
    f(*arrays, res)
    np.testing.assert_allclose(res, ref, rtol=1e-5, atol=1e-5)
