"""te.extern, tir.decl_buffer with strides, access_ptr and tensorize as lowered (no compiler)."""
import pytest

import aot as tvm
from aot import te
from aot.errors import AotError


def test_extern_lowers_to_its_call_on_the_real_buffers():
    A = te.placeholder((16,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed("my.func", ins[0], outs[0], 2.5), name="B")
    text = str(tvm.lower(te.create_schedule(B.op), [A, B], simple_mode=True))
    assert 'T.call_packed("my.func", A.data, B.data' in text


def test_scalar_argument_is_an_input():
    bias = te.var("bias", dtype="float32")
    A = te.placeholder((4,), name="A")
    C = te.compute(A.shape, lambda i: A[i] + bias, name="C")
    f = tvm.lower(te.create_schedule(C.op), [A, C, bias])["main"]
    assert [b.name for b in f.params] == ["A", "bias", "C"] and f.num_inputs == 2
    with pytest.raises(AotError, match="te.var"):
        te.var("flag", dtype="bool")


def test_decl_buffer_strides_and_access_ptr():
    s1 = te.var("s1")
    b = tvm.tir.decl_buffer((4, 8), "float32", name="B", offset_factor=1, strides=[s1, 1])
    assert b.strides[0] is s1
    p = b.access_ptr("r")
    assert p.buffer is b and p.offset is b.elem_offset
    c = tvm.tir.decl_buffer((4, 8), "float32", name="C")
    assert [x.value for x in c.strides] == [8, 1]
    with pytest.raises(AotError, match="access mask"):
        c.access_ptr("x")
    with pytest.raises(AotError, match="strides"):
        tvm.tir.decl_buffer((4, 8), "float32", name="D", strides=[1])


def test_tensorize_binds_the_regions():
    N, M, L = 8, 32, 16
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((M, L), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=16)
    s[C].reorder(x, yo, yi, k)
    a = te.placeholder((L,), name="a")
    b = te.placeholder((16, L), name="b")
    kk = te.reduce_axis((0, L), name="k")
    c = te.compute((16,), lambda i: te.sum(a[kk] * b[i, kk], axis=kk), name="c")
    bufs = {a: tvm.tir.decl_buffer(a.shape, name="A", offset_factor=1, strides=[1]),
            b: tvm.tir.decl_buffer(b.shape, name="B", offset_factor=1, strides=[te.var("s1"), 1]),
            c: tvm.tir.decl_buffer(c.shape, name="C", offset_factor=1, strides=[1])}

    def intrin(ins, outs):
        return tvm.tir.call_extern("int32", "gemv", outs[0].access_ptr("w"), ins[0].access_ptr("r"),
                                   ins[1].access_ptr("r"), ins[1].strides[0])
    s[C].tensorize(yi, te.decl_tensor_intrin(c.op, intrin, binds=bufs))
    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "C.data, i * 32 + j_outer * 16," in text
    assert "A.data, i * 16," in text
    assert "B.data, j_outer * 256," in text and text.rstrip().endswith(", 16))")
