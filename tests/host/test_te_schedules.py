"""aot.te schedules built and run on the host, in the style of TVM's schedule tutorials: every
schedule of an intermediate stage, cache, rfactor and symbolic size gives numpy's values."""
import numpy as np
import pytest

import aot
from aot import te

RNG = np.random.default_rng(11)


def _run(s, args, shapes, ref, target="llvm", rtol=1e-5):
    f = aot.build(s, args, target, name="k")
    ins = [RNG.random(sh).astype("float32") for sh in shapes[:-1]]
    out = np.zeros(shapes[-1], "float32")
    f(*ins, out)
    np.testing.assert_allclose(out, ref(*ins), rtol=rtol, atol=1e-5)
    return f


def _packed_gemm(n, bn):
    """opt_gemm's operator: B packed into (n / bn, n, bn) blocks, read back by the matmul."""
    k = te.reduce_axis((0, n), "k")
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    packedB = te.compute((n / bn, n, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    C = te.compute((n, n), lambda x, y: te.sum(A[x, k] * packedB[y // bn, k, aot.tir.indexmod(y, bn)], axis=k),
                   name="C")
    return A, B, packedB, C


@pytest.mark.parametrize("parallel", [False, True])
def test_packing_and_a_global_write_cache_per_tile(parallel):
    """opt_gemm's last schedules: the packing vectorized and parallel, each tile accumulated in a
    C.global cache whose reduction is split, reordered, unrolled and vectorized."""
    n, bn = 64, 16
    A, B, packedB, C = _packed_gemm(n, bn)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    if parallel:
        s[C].parallel(xo)
    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    f = _run(s, [A, B, C], [(n, n), (n, n), (n, n)], lambda a, b: a @ b)
    assert f.get_source().count("#pragma omp parallel for") == (2 if parallel else 1)


def test_blocking_with_the_reduction_between_tile_and_element_loops():
    n = 48
    A, B, _, _ = _packed_gemm(n, 16)
    k = te.reduce_axis((0, n), "k")
    C = te.compute((n, n), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")
    for order in ("ko ki xi yi", "ko xi ki yi"):
        s = te.create_schedule(C.op)
        xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 32, 32)      # 48 = 32 + 16: tail tiles
        ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=5)                # 48 = 9 * 5 + 3: a tail too
        named = dict(ko=ko, ki=ki, xi=xi, yi=yi)
        s[C].reorder(xo, yo, *[named[v] for v in order.split()])
        s[C].vectorize(yi)
        _run(s, [A, B, C], [(n, n), (n, n), (n, n)], lambda a, b: a @ b)


@pytest.mark.parametrize("where", ["root", "at_outer", "at_inner", "inline"])
def test_an_intermediate_stage_anywhere(where):
    m = te.var("m")
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((m,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    if where == "at_outer":
        s[B].compute_at(s[C], xo)
    elif where == "at_inner":
        s[B].compute_at(s[C], xi)
    elif where == "inline":
        s[B].compute_inline()
    f = aot.build(s, [A, C], "llvm", name="chain")
    for size in (13, 16):          # one module, every size
        a = RNG.random(size).astype("float32")
        c = np.zeros(size, "float32")
        f(a, c)
        np.testing.assert_allclose(c, (a + 1) * 2)


def test_a_stage_attached_to_a_window_reads_its_halo():
    """A 1-D blur whose input stage is computed per output block: each block computes the
    block plus the two elements its window reaches beyond it."""
    n = 40
    A = te.placeholder((n + 2,), name="A")
    B = te.compute((n + 2,), lambda i: A[i] * 3.0, name="B")
    r = te.reduce_axis((0, 3), "r")
    C = te.compute((n,), lambda i: te.sum(B[i + r], axis=r), name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=16)       # 40 = 2 * 16 + 8
    s[B].compute_at(s[C], xo)
    from aot.tir.stmt import Allocate, walk_stmts
    (alloc,) = [x for x in walk_stmts(te.lower_schedule(s, [A, C]).body) if isinstance(x, Allocate)]
    assert alloc.buffer.shape == (18,)
    _run(s, [A, C], [(n + 2,), (n,)], lambda a: sum(3 * a[d:d + n] for d in range(3)))


def test_cache_read_local_and_global_caches_at_loops():
    n = 32
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), "k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    BB = s.cache_read(B, "global", [C])
    io, ii = s[C].split(C.op.axis[0], factor=8)
    ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=8)
    s[C].reorder(io, ko, ii, C.op.axis[1], ki)
    s[AA].compute_at(s[C], io)
    s[BB].compute_at(s[C], ko)
    _run(s, [A, B, C], [(n, n), (n, n), (n, n)], lambda a, b: a @ b)


@pytest.mark.parametrize("factor_axis", [0, 1])
def test_rfactor_on_the_host(factor_axis):
    n, m = 20, 37
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(s[B].op.reduce_axis[0], factor=8)       # 37 = 4 * 8 + 5: the tail is masked
    BF = s.rfactor(B, ki, factor_axis=factor_axis)
    assert BF.shape == ((8, n) if factor_axis == 0 else (n, 8))
    s[BF].parallel(s[BF].op.axis[0])
    _run(s, [A, B], [(n, m), (n,)], lambda a: a.sum(axis=1), rtol=1e-4)


def test_comm_reducer_conv_and_symbolic_sizes_from_reduction_tutorial():
    n, m = te.var("n"), te.var("m")
    product = te.comm_reducer(lambda x, y: x * y, lambda t: aot.tir.const(1, dtype=t), name="product")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: product(A[i, k], axis=k), name="B")
    f = aot.build(te.create_schedule(B.op), [A, B], "llvm", name="prod")
    a = (RNG.random((5, 6)) + 0.5).astype("float32")
    b = np.zeros(5, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.prod(axis=1), rtol=1e-5)

    Input = te.placeholder((n, n), name="Input")
    Filter = te.placeholder((3, 3), name="Filter")
    di, dj = te.reduce_axis((0, 3), name="di"), te.reduce_axis((0, 3), name="dj")
    Output = te.compute((n - 2, n - 2), lambda i, j: te.sum(Input[i + di, j + dj] * Filter[di, dj], axis=[di, dj]),
                        name="Output")
    g = aot.build(te.create_schedule(Output.op), [Input, Filter, Output], "llvm", name="conv")
    x, w = RNG.random((9, 9)).astype("float32"), RNG.random((3, 3)).astype("float32")
    y = np.zeros((7, 7), "float32")
    g(x, w, y)
    ref = sum(x[p:p + 7, q:q + 7] * w[p, q] for p in range(3) for q in range(3))
    np.testing.assert_allclose(y, ref, rtol=1e-5)


def test_broadcast_arithmetic_on_tensors():
    a = te.placeholder((6, 4, 5), name="a")
    b = te.placeholder((4, 5), name="b")
    e = (a + b) * a / 2.0
    s = te.create_schedule(e.op)
    _run(s, [a, b, e], [(6, 4, 5), (4, 5), (6, 4, 5)], lambda x, y: (x + y) * x / 2)


def test_a_symbolic_module_saved_and_loaded_serves_every_size(tmp_path):
    from aot.contrib import cc
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    f = aot.build(s, [A, B, C], "llvm", name="myadd")
    assert "int32_t n)" in f.get_source()           # before a call: n a parameter of the kernel
    f.save(str(tmp_path / "myadd.o"))
    cc.create_shared(str(tmp_path / "myadd.so"), [str(tmp_path / "myadd.o")])
    g = aot.runtime.load_module(str(tmp_path / "myadd.so"))
    for size in (7, 300):
        a, b = RNG.random(size).astype("float32"), RNG.random(size).astype("float32")
        c = np.zeros(size, "float32")
        g(a, b, c)
        np.testing.assert_allclose(c, a + b)


def _serial_emulation(func):
    """func's GPU kernel with every thread run one after another: bound loops become serial
    loops and barriers vanish. Valid where each thread's iteration fills the shared memory it
    reads (the cooperative fills are nested loops over every thread), so it checks a CUDA
    schedule's index arithmetic on the host."""
    from aot.tir.stmt import Allocate, Seq, StmtMutator, walk_stmts

    class Serial(StmtMutator):
        def visit_For(self, s):
            body = self.visit(s.body)
            kind = "serial" if s.kind == "thread_binding" else s.kind
            from aot.tir.stmt import For
            return For(s.var, s.min, s.extent, body, kind)

        def visit_Barrier(self, s):
            return Seq([])
    for x in walk_stmts(func.body):
        if isinstance(x, Allocate) and x.buffer.scope == "shared":
            x.buffer.scope = "global"       # this lowering's own buffers: a C array instead
    return func.with_body(Serial().visit(func.body))


def test_opt_conv_cuda_schedule_computes_the_convolution():
    """opt_conv_cuda's schedule (shared and local caches, vthreads, cooperative fetches) at a
    small size, its kernel emulated thread by thread on the host, against numpy."""
    batch, in_channel, out_channel, in_size, kernel, pad = 64, 8, 64, 4, 3, 1
    A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
    W = te.placeholder((kernel, kernel, in_channel, out_channel), name="W")
    out_size = in_size - kernel + 2 * pad + 1
    Apad = te.compute((in_size + 2 * pad, in_size + 2 * pad, in_channel, batch),
                      lambda yy, xx, cc, nn: aot.tir.if_then_else(
                          aot.tir.all(yy >= pad, yy - pad < in_size, xx >= pad, xx - pad < in_size),
                          A[yy - pad, xx - pad, cc, nn], aot.tir.const(0.0, "float32")), name="Apad")
    rc, ry, rx = te.reduce_axis((0, in_channel), "rc"), te.reduce_axis((0, kernel), "ry"), te.reduce_axis((0, kernel), "rx")
    B = te.compute((out_size, out_size, out_channel, batch),
                   lambda yy, xx, ff, nn: te.sum(Apad[yy + ry, xx + rx, rc, nn] * W[ry, rx, rc, ff], axis=[ry, rx, rc]),
                   name="B")
    s = te.create_schedule(B.op)
    s[Apad].compute_inline()
    AA, WW = s.cache_read(Apad, "shared", [B]), s.cache_read(W, "shared", [B])
    AL, WL = s.cache_read(AA, "local", [B]), s.cache_read(WW, "local", [B])
    BL = s.cache_write(B, "local")
    thread_x, thread_y = te.thread_axis((0, 8), "threadIdx.x"), te.thread_axis((0, 8), "threadIdx.y")
    hi, wi, fi, ni = s[B].op.axis
    bz = s[B].fuse(hi, wi)
    by, fi = s[B].split(fi, factor=64)
    bx, ni = s[B].split(ni, factor=64)
    s[B].bind(bz, te.thread_axis("blockIdx.z"))
    s[B].bind(by, te.thread_axis("blockIdx.y"))
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    tyz, fi = s[B].split(fi, nparts=2)
    txz, ni = s[B].split(ni, nparts=2)
    ty, fi = s[B].split(fi, nparts=8)
    tx, ni = s[B].split(ni, nparts=8)
    s[B].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)
    s[B].bind(tyz, te.thread_axis((0, 2), "vthread", name="vy"))
    s[B].bind(txz, te.thread_axis((0, 2), "vthread", name="vx"))
    s[B].bind(ty, thread_y)
    s[B].bind(tx, thread_x)
    s[BL].compute_at(s[B], tx)
    yi, xi, fi, ni = s[BL].op.axis
    ry, rx, rc = s[BL].op.reduce_axis
    rco, rci = s[BL].split(rc, factor=8)
    s[BL].reorder(rco, ry, rx, rci, fi, ni)
    for cache in (AA, WW):
        s[cache].compute_at(s[BL], rx)
        yi, xi, ci, ni = s[cache].op.axis
        ty, ci = s[cache].split(ci, nparts=8)
        tx, ni = s[cache].split(ni, nparts=8)
        _, ni = s[cache].split(ni, factor=4)
        s[cache].reorder(ty, tx, yi, xi, ci, ni)
        s[cache].bind(ty, thread_y)
        s[cache].bind(tx, thread_x)
        s[cache].vectorize(ni)
    s[AL].compute_at(s[BL], rci)
    s[WL].compute_at(s[BL], rci)
    src = aot.build(s, [A, W, B], "cuda").imported_modules[0].get_source()
    assert src.count("__syncthreads();") == 4 and "__shared__ float Apad_shared[256];" in src
    f = aot.build(_serial_emulation(te.lower_schedule(s, [A, W, B], "conv")), target="c")
    a = RNG.random(A.shape).astype("float32")
    w = RNG.random(W.shape).astype("float32")
    b = np.zeros((out_size, out_size, out_channel, batch), "float32")
    f(a, w, b)
    ap = np.pad(a, ((pad, pad), (pad, pad), (0, 0), (0, 0)))
    ref = sum(np.einsum("yxcn,cf->yxfn", ap[p:p + out_size, q:q + out_size], w[p, q]) for p in range(3) for q in range(3))
    np.testing.assert_allclose(b, ref, rtol=1e-4)


def test_tuple_outputs_and_an_argmax_reducer():
    """tuple_inputs.py: two outputs of one compute (one loop nest), an argmax reducer over
    (index, value) pairs, and the two-output stage computed at its reader's rows."""
    m, n = 6, 9
    A0 = te.placeholder((m, n), name="A0")
    A1 = te.placeholder((m, n), name="A1")
    B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A1[i, j] * 3), name="B")
    s = te.create_schedule(B0.op)
    f = aot.build(s, [A0, A1, B0, B1], "llvm", name="two")
    a0, a1 = RNG.random((m, n)).astype("float32"), RNG.random((m, n)).astype("float32")
    b0, b1 = np.zeros((m, n), "float32"), np.zeros((m, n), "float32")
    f(a0, a1, b0, b1)
    np.testing.assert_allclose(b0, a0 + 2)
    np.testing.assert_allclose(b1, a1 * 3)

    def fcombine(x, y):
        return aot.tir.Select(x[1] >= y[1], x[0], y[0]), aot.tir.Select(x[1] >= y[1], x[1], y[1])

    argmax = te.comm_reducer(fcombine, lambda t0, t1: (aot.tir.const(-1, t0), te.min_value(t1)), name="argmax")
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="int32")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    g = aot.build(te.create_schedule(T0.op), [idx, val, T0, T1], "llvm", name="argmax")
    iv = np.tile(np.arange(n, dtype="int32"), (m, 1))
    vv = RNG.integers(-50, 50, (m, n)).astype("int32")
    t0, t1 = np.zeros(m, "int32"), np.zeros(m, "int32")
    g(iv, vv, t0, t1)
    np.testing.assert_array_equal(t1, vv.max(axis=1))
    np.testing.assert_array_equal(vv[np.arange(m), t0], vv.max(axis=1))

    B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A0[i, j] * 3), name="B")
    C = te.compute((m, n), lambda i, j: A1[i, j] + B0[i, j], name="C")
    s = te.create_schedule(C.op)
    s[B0].compute_at(s[C], C.op.axis[0])
    c = np.zeros((m, n), "float32")
    aot.build(s, [A0, A1, C], "llvm", name="at")(a0, a1, c)
    np.testing.assert_allclose(c, a1 + (a0 + 2), rtol=1e-6)


def test_scan_cumulative_sum_and_two_states():
    """scan.py: a cumulative sum along the first axis, a step of two stages (one computed at the
    other's blocks), and two states updated together."""
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    s_scan = te.scan(s_init, s_update, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    xo, xi = s[s_update].split(s_update.op.axis[1], factor=4)
    f = aot.build(s, [X, s_scan], "llvm", name="cumsum")
    x = RNG.random((7, 10)).astype("float32")
    y = np.zeros_like(x)
    f(x, y)
    np.testing.assert_allclose(y, np.cumsum(x, axis=0), rtol=1e-5)

    s1 = te.compute((m, n), lambda t, i: s_state[t - 1, i] * 2, name="s1")
    s2 = te.compute((m, n), lambda t, i: s1[t, i] + X[t, i], name="s2")
    s_scan = te.scan(s_init, s2, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    xo, xi = s[s2].split(s2.op.axis[1], factor=4)
    s[s1].compute_at(s[s2], xo)
    y = np.zeros_like(x)
    aot.build(s, [X, s_scan], "llvm", name="twice")(x, y)
    ref = x.copy()
    for t in range(1, 7):
        ref[t] = ref[t - 1] * 2 + x[t]
    np.testing.assert_allclose(y, ref, rtol=1e-5)

    L = te.var("l")
    st1, st2 = te.placeholder((m, n)), te.placeholder((m, L))
    i1 = te.compute((1, n), lambda _, i: X[0, i])
    i2 = te.compute((1, L), lambda _, i: 0.0)
    u1 = te.compute((m, n), lambda t, i: st1[t - 1, i] + X[t, i])
    u2 = te.compute((m, L), lambda t, i: st2[t - 1, i] + st1[t - 1, 0])
    r1, r2 = te.scan([i1, i2], [u1, u2], [st1, st2], inputs=[X])
    g = aot.build(te.create_schedule(r1.op), [X, r1, r2], "llvm", name="both")
    y1, y2 = np.zeros_like(x), np.zeros((7, 3), "float32")
    g(x, y1, y2)
    np.testing.assert_allclose(y1, np.cumsum(x, axis=0), rtol=1e-5)
    ref2 = np.zeros((7, 3), "float32")
    for t in range(1, 7):
        ref2[t] = ref2[t - 1] + y1[t - 1, 0]
    np.testing.assert_allclose(y2, ref2, rtol=1e-5)


@pytest.mark.parametrize("order", ["ki ko ic jc", "ic ko jc ki"])
def test_a_tail_tile_cache_is_written_whole(order):
    """A write cache of a tile that passes the tensor's edge (13 x 12 in 3 x 5 tiles): every element
    of the cache is set (the C compiler sees none read unset) and the result is numpy's."""
    M, N, K = 13, 12, 9
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), "k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 3, 5)
    s[CC].compute_at(s[C], yo)
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=2)
    ic, jc = s[CC].op.axis
    named = dict(ko=ko, ki=ki, ic=ic, jc=jc)
    s[CC].reorder(*[named[v] for v in order.split()])
    _run(s, [A, B, C], [(M, K), (K, N), (M, N)], lambda a, b: a @ b)
