"""TensorIR functions made by te.create_prim_func and scheduled with aot.tir.Schedule, and printed
TVMScript read back: each built with the host compiler ("llvm" is the host C path) and run against
numpy, as TVM's tensor_ir_blitz_course does it."""
import numpy as np
import pytest

import aot as tvm
from aot import te, tir
from aot.ir.module import IRModule
from aot.tir.expr import Const, ge, lt, select
from aot.tir.script import parse, script


def _matmul(n=16):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), "k")
    C = te.compute((n, n), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")
    return A, B, C


@pytest.mark.parametrize("schedule", ["none", "tiled", "parallel_vectorized"])
def test_create_prim_func_scheduled_and_built(schedule):
    A, B, C = _matmul()
    sch = tir.Schedule(IRModule({"main": te.create_prim_func([A, B, C])}))
    i, j, k = sch.get_loops(sch.get_block("C"))
    if schedule == "tiled":
        i0, i1 = sch.split(i, factors=[4, 4])
        j0, j1 = sch.split(j, factors=[None, 8])
        sch.reorder(i0, j0, k, i1, j1)
    elif schedule == "parallel_vectorized":
        sch.parallel(i)
        j0, j1 = sch.split(j, factors=[None, 4])
        sch.vectorize(j1)
        assert "T.parallel(16)" in sch.mod.script() and "T.vectorized(4)" in sch.mod.script()
    assert 'with T.block("C"):' in sch.mod.script()
    mod = tvm.build(sch.mod, target="llvm")
    rng = np.random.default_rng(1)
    a, b = rng.random((16, 16), np.float32), rng.random((16, 16), np.float32)
    c = tvm.nd.array(np.zeros((16, 16), np.float32))
    mod(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5)


def test_a_padding_stage_is_the_functions_own_buffer():
    data = te.placeholder((1, 2, 6, 6), name="data")
    kernel = te.placeholder((3, 2, 3, 3), name="kernel")
    pad = te.compute((1, 2, 8, 8), lambda n, c, h, w: select(
        tvm.tir.all(ge(h, 1), lt(h, 7), ge(w, 1), lt(w, 7)), data[n, c, h - 1, w - 1], Const(0.0, "float32")),
        name="pad_temp")
    rc, ry, rx = te.reduce_axis((0, 2), "rc"), te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    rcv, ryv, rxv = (getattr(r, "var", r) for r in (rc, ry, rx))
    conv = te.compute((1, 3, 6, 6), lambda n, f, y, x: te.sum(
        pad[n, rcv, y + ryv, x + rxv] * kernel[f, rcv, ryv, rxv], axis=[rc, ry, rx]), name="conv2d_nchw")
    func = te.create_prim_func([data, kernel, conv])
    assert "pad_temp = T.alloc_buffer((1, 2, 8, 8))" in func.script()
    rng = np.random.default_rng(2)
    d, w = rng.random((1, 2, 6, 6), np.float32), rng.random((3, 2, 3, 3), np.float32)
    out = np.zeros((1, 3, 6, 6), np.float32)
    tvm.build(func, target="llvm")(d, w, out)
    dp = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros_like(out)
    for y in range(6):
        for x in range(6):
            ref[0, :, y, x] = np.einsum("cij,fcij->f", dp[0, :, y:y + 3, x:x + 3], w)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_printed_lowered_text_reads_back_and_computes_the_same():
    A = te.placeholder((32, 24), name="A")
    B = te.compute((32, 24), lambda i, j: A[i, j] * 3.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[1], factor=5)        # a tail: the guard prints and reads back too
    text = str(tvm.lower(s, [A, B], simple_mode=True))
    assert "A_1 = T.Buffer((768,), data=A.data)" in text
    func = parse(text)
    assert script(parse(script(func))) == script(func)
    a = np.random.default_rng(3).random((32, 24)).astype(np.float32)
    b = np.zeros((32, 24), np.float32)
    tvm.build(func, target="llvm")(a, b)
    np.testing.assert_allclose(b, a * 3 + 1, rtol=1e-6)


def test_a_bound_tensorir_schedule_builds_for_cuda():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda *i: A(*i) + 1.0, name="B")
    sch = tir.Schedule(IRModule({"main": te.create_prim_func([A, B])}))
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, i1, i2 = sch.split(i, factors=[2, 2, 2])
    sch.reorder(i0, i2, i1)
    sch.bind(i0, "blockIdx.x")
    sch.bind(i2, "threadIdx.x")
    mod = tvm.build(sch.mod, target="cuda")
    src = mod.imported_modules[0].get_source()
    assert "blockIdx.x" in src and "threadIdx.x" in src


def test_compute_inline_folds_the_padding_into_the_convolution():
    from aot import topi
    data = te.placeholder((1, 3, 7, 7), name="data")
    weight = te.placeholder((4, 3, 3, 3), name="weight")
    conv = topi.nn.conv2d_nchw(data, weight, 1, 1, 1)
    sch = tir.Schedule(te.create_prim_func([data, weight, conv]))
    sch.compute_inline(sch.get_block("pad_temp"))
    text = sch.mod.script()
    assert "pad_temp" not in text and "T.if_then_else(" in text and 'T.block("conv2d_nchw")' in text
    with pytest.raises(tvm.AotError, match="compute_inline conv2d_nchw: the block is a reduction"):
        sch.compute_inline(sch.get_block("conv2d_nchw"))
    rng = np.random.default_rng(6)
    d, w = rng.random((1, 3, 7, 7), np.float32), rng.random((4, 3, 3, 3), np.float32)
    out = np.zeros((1, 4, 7, 7), np.float32)
    tvm.build(sch.mod, target="llvm")(d, w, out)
    dp = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros_like(out)
    for y in range(7):
        for x in range(7):
            ref[0, :, y, x] = np.einsum("cij,fcij->f", dp[0, :, y:y + 3, x:x + 3], w)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
