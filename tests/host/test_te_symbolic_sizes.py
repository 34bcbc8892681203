"""te.var: sizes left symbolic through te.compute, the schedule and aot.lower (a split of a
symbolic extent is tail-guarded); a module built without sizes= takes them from each call's
arrays, so one module serves every size (each set of sizes compiled once, with the sizes as
constants so that loops and tails fold). Misuses are refused with a reason."""
import numpy as np
import pytest

import aot
from aot import te
from aot.tir.schedule import ScheduleError


def _vector_add():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[C].parallel(xo)
    s[C].vectorize(xi)
    return n, A, B, C, s


def _arrays(size, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random(size, np.float32), rng.random(size, np.float32), np.zeros(size, np.float32)


@pytest.mark.parametrize("size", [1024, 1000])
def test_a_symbolic_vector_add_builds_and_runs_at_two_sizes(size):
    from aot.tir.printer import func_str
    n, A, B, C, s = _vector_add()
    assert "floordiv((n + 63), 64)" in func_str(te.lower_schedule(s))     # the split stays symbolic
    f = aot.build(s, [A, B, C], "c", name="myadd")       # sizes from each call's arrays
    a, b, c = _arrays(size)
    f(a, b, c)
    np.testing.assert_allclose(c, a + b)
    src = f.get_source()
    assert f"i_outer < {-(-size // 64)};" in src
    assert (f"< {size})" in src) == bool(size % 64)       # a tail guard only where 64 does not divide n
    a, b, c = _arrays(size + 7)                          # the same module at another size
    f(a, b, c)
    np.testing.assert_allclose(c, a + b)


def test_sizes_given_to_build_fix_them():
    n, A, B, C, s = _vector_add()
    f = aot.build(s, [A, B, C], "c", name="myadd", sizes={n: 200})
    assert f.sizes == {"n": 200} and "< 200)" in f.get_source()
    a, b, c = _arrays(200)
    f(a, b, c)
    np.testing.assert_allclose(c, a + b)
    with pytest.raises(aot.AotError, match=r"argument A must be float32\[200\]"):
        f(*_arrays(100))
    g = aot.build(s, [A, B, C], "c", name="myadd")
    assert "int32_t n)" in g.get_source()         # before a call: the kernel with n as a parameter
    with pytest.raises(aot.AotError, match=r"argument B must have shape \[8\] for n=8, not \[9\]"):
        g(np.zeros(8, np.float32), np.zeros(9, np.float32), np.zeros(8, np.float32))
    for size in (64, 65, 64):
        a, b, c = _arrays(size)
        g(a, b, c)
        np.testing.assert_allclose(c, a + b)
    assert sorted(g.modules) == [(64,), (65,)]            # each size compiled once
    with pytest.raises(aot.AotError, match="sizes names m, which the function does not use"):
        aot.build(s, [A, B, C], "c", sizes={"m": 3})


def test_a_symbolic_matmul_with_a_split_reduction():
    n, m, L = te.var("n"), te.var("m"), te.var("l")
    A = te.placeholder((n, L), name="A")
    B = te.placeholder((L, m), name="B")
    k = te.reduce_axis((0, L), "k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=8)
    ko, ki = s[C].split(k, factor=4)
    s[C].parallel(io)
    f = aot.build(s, [A, B, C], "c", name="mm")
    rng = np.random.default_rng(1)
    a, b = rng.random((13, 10), np.float32), rng.random((10, 7), np.float32)
    c = np.zeros((13, 7), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    assert f.module.sizes == {"n": 13, "l": 10, "m": 7}


def test_fuse_split_nparts_and_unroll_on_symbolic_extents():
    """As in TVM these apply to symbolic extents too: the fused extent is n * 4, nparts=2 gives
    parts of ceil(n / 2) with a tail guard, and unroll stays a hint until the size is known."""
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    C = te.compute(A.shape, lambda i, j: A[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    f = s[C].fuse(*C.op.axis)
    o, i = s[C].split(f, nparts=2)
    s[C].unroll(i)
    m = aot.build(s, [A, C], "c", name="sym")
    for size in (5, 6):
        a = np.random.default_rng(size).random((size, 4), np.float32)
        c = np.zeros_like(a)
        m(a, c)
        np.testing.assert_allclose(c, a * 2)
