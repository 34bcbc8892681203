"""te.extern with tir.call_packed of registered Python functions, scalar te.var arguments,
contrib.cblas, and tensorize with te.decl_tensor_intrin and pragma import_llvm, in the style of
TVM's extern_op and tensorize tutorials; expected values from numpy."""
import shutil

import numpy as np
import pytest

import aot as tvm
from aot import te
from aot.errors import AotError


def test_extern_packed_python_function_and_scalar():
    calls = []

    @tvm.register_func("aot.test.scale_add", override=True)
    def scale_add(x, y, k):
        calls.append(k)
        tvm.nd.array(x.numpy() * k).copyto(y)

    n = 37
    bias = te.var("bias", dtype="float32")
    A = te.placeholder((n,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed("aot.test.scale_add", ins[0], outs[0], 3),
                  name="B")
    C = te.compute(B.shape, lambda i: B[i] + bias, name="C")
    s = te.create_schedule(C.op)
    f = tvm.build(s, [A, C, bias], "llvm")
    a = np.random.uniform(size=(n,)).astype("float32")
    c = tvm.nd.array(np.zeros((n,), "float32"))
    f(tvm.nd.array(a), c, 0.5)
    np.testing.assert_allclose(c.numpy(), a * 3 + 0.5, rtol=1e-6)
    assert calls == [3]
    assert tvm.get_global_func("aot.test.scale_add") is scale_add
    assert tvm.get_global_func("aot.test.nothing", allow_missing=True) is None


def test_packed_function_error_is_raised():
    @tvm.register_func("aot.test.fails", override=True)
    def fails(x, y):
        raise ValueError("boom")

    A = te.placeholder((4,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed("aot.test.fails", ins[0], outs[0]), name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B], "llvm")
    with pytest.raises(ValueError, match="boom"):
        f(np.zeros(4, "float32"), np.zeros(4, "float32"))
    with pytest.raises(AotError, match="runs only where it was built"):
        f.export_library("/tmp/never.so")


@pytest.mark.skipif(tvm.get_global_func("tvm.contrib.cblas.matmul", allow_missing=True) is None,
                    reason="no CBLAS library on this machine")
def test_cblas_matmul_transposed():
    from aot.contrib import cblas
    A = te.placeholder((12, 5), name="A")
    B = te.placeholder((7, 12), name="B")
    C = cblas.matmul(A, B, transa=True, transb=True)
    f = tvm.build(te.create_schedule(C.op), [A, B, C], "llvm")
    a = np.random.uniform(size=(12, 5)).astype("float32")
    b = np.random.uniform(size=(7, 12)).astype("float32")
    c = np.zeros((5, 7), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a.T @ b.T, rtol=1e-5)


def _gemv(m, l, with_reset):
    a = te.placeholder((l,), name="a")
    b = te.placeholder((m, l), name="b")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((m,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
    Ab = tvm.tir.decl_buffer(a.shape, a.dtype, name="A", offset_factor=1, strides=[1])
    Bb = tvm.tir.decl_buffer(b.shape, b.dtype, name="B", offset_factor=1, strides=[te.var("s1"), 1])
    Cb = tvm.tir.decl_buffer(c.shape, c.dtype, name="C", offset_factor=1, strides=[1])

    def intrin_func(ins, outs):
        aa, bb = ins
        cc = outs[0]

        def body():
            ib = tvm.tir.ir_builder.create()
            ib.emit(tvm.tir.call_extern("int32", "gemv_update", cc.access_ptr("w"), aa.access_ptr("r"),
                                        bb.access_ptr("r"), m, l, bb.strides[0]))
            return ib.get()

        def reset():
            ib = tvm.tir.ir_builder.create()
            ib.emit(tvm.tir.call_extern("int32", "gemv_reset", cc.access_ptr("w"), m))
            return ib.get()
        if with_reset == "no_reset":      # the body at the first outer reduction step, the update after
            return body(), None, body()
        return (body(), reset(), body()) if with_reset else body()
    return te.decl_tensor_intrin(c.op, intrin_func, binds={a: Ab, b: Bb, c: Cb})


GEMV_CC = """
extern "C" int gemv_update(float *cc, float *aa, float *bb, int m, int l, int stride) {
  for (int i = 0; i < m; ++i) for (int j = 0; j < l; ++j) cc[i] += aa[j] * bb[i * stride + j];
  return 0;
}
extern "C" int gemv_reset(float *cc, int m) { for (int i = 0; i < m; ++i) cc[i] = 0.0f; return 0; }
"""


def _matmul_nt(n, m, l):
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((m, l), name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    return A, B, C


@pytest.mark.skipif(shutil.which("clang") is None, reason="no clang")
@pytest.mark.parametrize("split_reduction", [False, True, "no_reset"])
def test_tensorize_gemv(split_reduction):
    from aot.contrib import clang
    n, m, l, factor = 24, 32, 48, 16
    A, B, C = _matmul_nt(n, m, l)
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=factor)
    if split_reduction:
        zo, zi = s[C].split(z, factor=factor)
        s[C].reorder(x, yo, zo, yi, zi)
        s[C].tensorize(yi, _gemv(factor, factor, split_reduction))
    else:
        s[C].reorder(x, yo, yi, z)
        s[C].tensorize(yi, _gemv(factor, l, False))
    s[C].pragma(x, "import_llvm", clang.create_llvm(GEMV_CC))
    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "gemv_update" in text and ("gemv_reset" in text) == (split_reduction is True)
    f = tvm.build(s, [A, B, C], target="llvm", name="gemv")
    assert "gemv_update(" in f.get_source()
    a = np.random.uniform(size=(n, l)).astype("float32")
    b = np.random.uniform(size=(m, l)).astype("float32")
    c = np.full((n, m), 7.0 if split_reduction is True else 0.0, "float32")   # the reset clears it
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-4)


def test_tensorize_refuses_a_mismatched_region():
    n, m, l = 8, 32, 16
    A, B, C = _matmul_nt(n, m, l)
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=8)
    s[C].reorder(x, yo, yi, C.op.reduce_axis[0])
    s[C].tensorize(yi, _gemv(16, l, False))
    with pytest.raises(AotError, match="tensorize"):
        tvm.lower(s, [A, B, C])


def test_tensorize_split_reduction_needs_an_update():
    A, B, C = _matmul_nt(8, 16, 32)
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    zo, zi = s[C].split(C.op.reduce_axis[0], factor=16)
    s[C].reorder(x, zo, y, zi)
    s[C].tensorize(y, _gemv(16, 16, False))
    with pytest.raises(AotError, match="no reduce_update"):
        tvm.lower(s, [A, B, C])


def test_extern_ir_builder_body_reads_and_writes_the_real_buffers():
    n = 10
    A = te.placeholder((n,), name="A")

    def body(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, n, name="i") as i:
            b[i] = a[i] * 2.0
        return ib.get()
    B = te.extern((n,), [A], body, name="B")
    C = te.compute((n,), lambda i: B[i] + 1.0, name="C")
    f = tvm.build(te.create_schedule(C.op), [A, C], "llvm")
    a = np.random.uniform(size=n).astype("float32")
    c = np.zeros(n, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)
