"""The GPU schedules of TVM's scheduling tutorials, written here in their style: a row sum split
by rfactor and reduced across threads with a store predicate, and a direct convolution staged
through shared and local caches with virtual threads. Each builds for CUDA (nvcc -Werror
all-warnings, linked) and runs on OpenCL (PoCL) against numpy; on a machine with an NVIDIA GPU the
CUDA build runs too."""
import numpy as np
import pytest

import aot
from aot import te

from test_gpu import nvcc, opencl


def _row_sum():
    n = te.var("n")
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, kin = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, kin)
    bo, bi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s[B].bind(bi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    return s, [A, B]


def _conv(size=14, cin=32, cout=64, kernel=3):
    data = te.placeholder((size, size, cin, 1), name="data")
    weight = te.placeholder((kernel, kernel, cin, cout), name="weight")
    pad = kernel // 2
    padded = te.compute((size + 2 * pad, size + 2 * pad, cin, 1),
                        lambda y, x, c, b: aot.tir.if_then_else(
                            aot.tir.all(y >= pad, y - pad < size, x >= pad, x - pad < size),
                            data[y - pad, x - pad, c, b], 0.0), name="padded")
    rc = te.reduce_axis((0, cin), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    out = te.compute((size, size, cout, 1),
                     lambda y, x, f, b: te.sum(padded[y + ry, x + rx, rc, b] * weight[ry, rx, rc, f],
                                               axis=[ry, rx, rc]), name="out")
    s = te.create_schedule(out.op)
    s[padded].compute_inline()
    PS = s.cache_read(padded, "shared", [out])
    WS = s.cache_read(weight, "shared", [out])
    OL = s.cache_write(out, "local")
    y, x, f, b = s[out].op.axis
    yx = s[out].fuse(y, x)
    fo, fi = s[out].split(f, factor=16)
    s[out].bind(yx, te.thread_axis("blockIdx.x"))
    s[out].bind(fo, te.thread_axis("blockIdx.y"))
    vo, vi = s[out].split(fi, nparts=2)
    s[out].bind(vo, te.thread_axis("vthread"))
    s[out].bind(vi, te.thread_axis("threadIdx.x"))
    s[OL].compute_at(s[out], vi)
    ry_, rx_, rc_ = s[OL].op.reduce_axis
    rco, rci = s[OL].split(rc_, factor=8)
    s[OL].reorder(rco, ry_, rx_, rci, *s[OL].op.axis)
    s[PS].compute_at(s[OL], rx_)
    s[WS].compute_at(s[OL], rx_)
    return s, [data, weight, out]


def _conv_reference(d, w):
    size, _, cin, _ = d.shape
    k = w.shape[0]
    p = np.pad(d[..., 0], ((k // 2, k // 2), (k // 2, k // 2), (0, 0)))
    out = np.zeros((size, size, w.shape[3]), np.float64)
    for ry in range(k):
        for rx in range(k):
            out += np.einsum("yxc,cf->yxf", p[ry:ry + size, rx:rx + size], w[ry, rx])
    return out[..., None]


CASES = {
    "row_sum": (_row_sum, lambda rng: [rng.standard_normal((64, 64)).astype("float32"), np.zeros(64, "float32")],
                lambda a: a[0].sum(axis=1)),
    "conv": (_conv, lambda rng: [rng.standard_normal((14, 14, 32, 1)).astype("float32"),
                                 rng.standard_normal((3, 3, 32, 64)).astype("float32"),
                                 np.zeros((14, 14, 64, 1), "float32")],
             lambda a: _conv_reference(a[0], a[1])),
}


@nvcc
@pytest.mark.parametrize("case", sorted(CASES))
def test_builds_for_cuda_and_compiles_with_nvcc(case):
    from aot.host import build_host, cuda_device_count
    make, arrays, ref = CASES[case]
    s, args = make()
    f = aot.build(s, args, target="cuda", name=case)
    a = arrays(np.random.default_rng(0))
    if isinstance(f, aot.module.SymbolicModule):
        f = f._for(a)                        # the sizes of these arrays, as a call would take them
    src = f.imported_modules[0].get_source()
    assert "__global__" in src and "threadIdx.x" in src
    assert build_host(f.tar)                 # nvcc -Werror all-warnings, then linked
    if cuda_device_count():
        f(*a)
        np.testing.assert_allclose(a[-1], ref(a), rtol=1e-4, atol=1e-4)


@opencl
@pytest.mark.parametrize("case", sorted(CASES))
def test_runs_on_opencl_as_numpy(case):
    make, arrays, ref = CASES[case]
    s, args = make()
    f = aot.build(s, args, target="opencl", name=case)
    a = arrays(np.random.default_rng(1))
    f(*a)
    np.testing.assert_allclose(a[-1], ref(a), rtol=1e-4, atol=1e-4)
