"""aot.script and aot.tir.Schedule: TVM's TensorIR programs read as written, every loop-IR node
kind survives print -> parse -> print unchanged, parsed functions compute what the originals do
(built and run, compared with numpy), and invalid uses are refused with a reason."""
import numpy as np
import pytest

import aot
from aot import te, tir
from aot.script import tir as T
from aot.tir.schedule import ScheduleError
from aot.tir.script import ScriptError, parse, script

N = 8


@aot.script.ir_module
class VectorAdd:
    @T.prim_func
    def main(a: T.handle, b: T.handle):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        A = T.match_buffer(a, (8,), dtype="float32")
        B = T.match_buffer(b, (8,), dtype="float32")
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + 1.0


@aot.script.ir_module
class MatMul:
    @T.prim_func
    def main(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i, j, k in T.grid(16, 16, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_tvm_tensorir_tutorial_vector_add():
    """Printed as script, scheduled with split/reorder, built for C, run."""
    text = VectorAdd.script()
    assert "def main(A: T.Buffer((8,), \"float32\"), B: T.Buffer((8,), \"float32\"))" in text
    sch = tir.Schedule(VectorAdd)
    (i,) = sch.get_loops(sch.get_block("B"))
    i_0, i_1 = sch.split(i, factors=[2, 4])
    sch.reorder(i_1, i_0)
    mod = aot.build(sch.mod, target="c")
    a = aot.nd.array(np.arange(N, dtype="float32"))
    b = aot.nd.array(np.zeros(N, "float32"))
    mod(a, b)
    np.testing.assert_array_equal(b.numpy(), np.arange(N) + 1)


@pytest.mark.parametrize("schedule", ["none", "split_reorder_k", "tiles_vectorize"])
def test_matmul_with_init_runs_and_schedules(schedule):
    sch = tir.Schedule(MatMul)
    i, j, k = sch.get_loops(sch.get_block("C"))
    if schedule == "split_reorder_k":
        ko, ki = sch.split(k, factors=[None, 4])
        sch.reorder(ko, i, j, ki)          # the init runs at the first k of each element, wherever k is
    elif schedule == "tiles_vectorize":
        io, ii = sch.split(i, factors=[4, 4])
        jo, ji = sch.split(j, factors=[None, 8])
        sch.reorder(io, jo, k, ii, ji)
        sch.vectorize(ji)
    f = aot.build(sch, target="c")
    rng = np.random.default_rng(0)
    a, b = rng.random((16, 16), np.float32), rng.random((16, 16), np.float32)
    c = np.zeros((16, 16), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


EVERY_KIND = '''
# from tvm.script import tir as T

@T.prim_func
def every_kind(A: T.Buffer((4, 8), "float32"), X: T.Buffer((8,), "int32"), B: T.Buffer((4, 8), "float32"), Y: T.Buffer((8,), "int32")):
    for i in range(4):
        for j in T.vectorized(8):
            B[i, j] = T.if_then_else(A[i, j] > T.float32(0.0) and not j == 3, T.exp(A[i, j]), -A[i, j])
    for u in T.unroll(2):
        tmp = T.allocate([2], "float32", "local")
        tmp_1 = T.Buffer((2,), data=tmp, scope="local")
        tmp_1[0] = T.max(A[u, 0], T.float32(0.5))
        tmp_1[1] = T.min(tmp_1[0] / T.float32(3.0), T.Cast("float32", X[u]))
        if tmp_1[0] >= tmp_1[1] or u != 1:
            B[0, u] = B[0, u] + tmp_1[1]
        else:
            B[0, u] = T.float32(2.5)
    for p in T.parallel(8):
        Y[p] = X[p] // 3 + X[p] % 3 + (T.Div(X[p], 3) - T.truncmod(X[p], 3)) + (X[p] << 2 >> 1 & 255 | X[p] ^ ~X[p])
    for q in range(8):
        Y[q] = Y[q] + T.rdbpot(T.srdhm(X[q], 1073741824), 1)
        Y[q] = Y[q] + T.Cast("int32", T.Cast("int64", X[q]) * T.int64(3))
'''

GPU_KINDS = '''
# from tvm.script import tir as T

@T.prim_func
def gpu_kinds(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        s = T.allocate([32], "float32", "shared")
        for tx in T.thread_binding(32, thread="threadIdx.x"):
            s_1 = T.Buffer((32,), data=s, scope="shared")
            s_1[tx] = A[bx * 32 + tx]
            T.tvm_storage_sync("shared")
            B[bx * 32 + tx] = s_1[31 - tx] * T.float32(2.0)
'''


def _every_kind_reference(a, x):
    b = np.where((a > 0) & (np.arange(8) != 3), np.exp(a), -a).astype(np.float32)
    for u in range(2):
        t0 = max(a[u, 0], np.float32(0.5))
        t1 = min(t0 / np.float32(3), np.float32(x[u]))
        b.reshape(-1)[u] = b.reshape(-1)[u] + t1 if (t0 >= t1 or u != 1) else np.float32(2.5)
    x64 = x.astype(np.int64)
    trunc_div, trunc_mod = (np.abs(x64) // 3) * np.sign(x64), np.sign(x64) * (np.abs(x64) % 3)
    y = (x64 // 3 + x64 % 3) + (trunc_div - trunc_mod) + ((((x64 << 2) >> 1) & 255) | (x64 ^ ~x64))
    hi = (x64 * 1073741824 + np.where(x64 >= 0, 1 << 30, 1 - (1 << 30)))
    srdhm = np.trunc(hi / 2.0 ** 31).astype(np.int64)
    rdb = (srdhm >> 1) + ((srdhm & 1) > (0 + (srdhm < 0)))
    return b, (y + rdb + x64 * 3).astype(np.int32)


@pytest.mark.parametrize("text", [EVERY_KIND, GPU_KINDS], ids=["c_kinds", "gpu_kinds"])
def test_print_parse_print_is_a_fixed_point(text):
    f = parse(text)
    once = script(f)
    assert script(parse(once)) == once
    assert once.strip() == text.strip()          # the text was written in the printer's form


def test_a_parsed_function_computes_what_its_text_says():
    f = aot.build(parse(EVERY_KIND), target="c")
    rng = np.random.default_rng(3)
    a = rng.normal(0, 1, (4, 8)).astype(np.float32)
    x = rng.integers(-1000, 1000, 8).astype(np.int32)
    b, y = np.zeros((4, 8), np.float32), np.zeros(8, np.int32)
    f(a, x, b, y)
    rb, ry = _every_kind_reference(a, x)
    np.testing.assert_allclose(b, rb, rtol=1e-6)
    np.testing.assert_array_equal(y, ry)


def test_the_compilers_own_lowering_round_trips_and_computes_the_same():
    """A te-lowered reduction (accumulator in a local allocation) prints, parses back, and the
    parsed function gives the same values as the original when both are built."""
    A = te.placeholder((6, 5), name="A")
    k = te.reduce_axis((0, 5), "k")
    C = te.compute((6,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    text = script(s.func)
    assert "T.allocate" in text and script(parse(text)) == text
    a = np.random.default_rng(0).random((6, 5)).astype(np.float32)
    c1, c2 = np.zeros(6, np.float32), np.zeros(6, np.float32)
    aot.build(s, [A, C])(a, c1)
    aot.build(parse(text), target="c")(a, c2)
    np.testing.assert_array_equal(c1, c2)
    np.testing.assert_allclose(c1, (a * a).sum(axis=1), rtol=1e-6)


BAD_SCRIPTS = {
    "unknown_name": ("def f(A: T.Buffer((4,), 'float32'), B: T.Buffer((4,), 'float32')):\n"
                     "    for i in range(4):\n        B[i] = A[i] + nope\n", "unknown name 'nope'"),
    "bad_loop": ("def f(A: T.Buffer((4,), 'float32'), B: T.Buffer((4,), 'float32')):\n"
                 "    for i in [0, 1]:\n        B[i] = A[i]\n", "a loop iterates over"),
    "store_type": ("def f(A: T.Buffer((4,), 'int32'), B: T.Buffer((4,), 'float32')):\n"
                   "    for i in range(4):\n        B[i] = A[i]\n", "storing int32 into B"),
    "no_match": ("def f(a: T.handle, B: T.Buffer((4,), 'float32')):\n"
                 "    for i in range(4):\n        B[i] = 1.0\n", "have no T.match_buffer"),
    "no_annotation": ("def f(A, B):\n    B[0] = A[0]\n", "must be annotated"),
    "writes_input_first": ("def f(B: T.Buffer((4,), 'float32'), A: T.Buffer((4,), 'float32')):\n"
                           "    for i in range(4):\n        B[i] = A[i]\n", "list the buffers the function only reads"),
    "dims": ("def f(A: T.Buffer((4, 4), 'float32'), B: T.Buffer((4,), 'float32')):\n"
             "    for i in range(4):\n        B[i] = A[i, 0, 0]\n", "2 dimensions, 3 indices"),
    "init_without_reduce": ("def f(A: T.Buffer((4,), 'float32'), B: T.Buffer((4,), 'float32')):\n"
                            "    for i in range(4):\n        with T.block('B'):\n"
                            "            vi = T.axis.spatial(4, i)\n            with T.init():\n"
                            "                B[vi] = 0.0\n            B[vi] = A[vi]\n", r"T\.init\(\) needs a reduction axis"),
}


@pytest.mark.parametrize("name", sorted(BAD_SCRIPTS))
def test_bad_scripts_are_refused_with_the_line(name):
    text, msg = BAD_SCRIPTS[name]
    with pytest.raises(ScriptError, match=msg):
        parse(text)


def test_invalid_schedule_uses_are_refused():
    sch = tir.Schedule(MatMul)
    with pytest.raises(ScheduleError, match="no block 'D'"):
        sch.get_block("D")
    blk = sch.get_block("C")
    i, j, k = sch.get_loops(blk)
    with pytest.raises(ScheduleError, match="at most one of them None"):
        sch.split(i, factors=[None, None])
    with pytest.raises(ScheduleError, match="do not cover the extent 16"):
        sch.split(i, factors=[2, 4])
    io, ii = sch.split(i, factors=[4, 4])
    with pytest.raises(ScheduleError, match="is not a loop of main"):
        sch.split(i, factors=[2, 8])
    with pytest.raises(ScheduleError, match="only a cache_read or cache_write block"):
        sch.compute_at(blk, io)
    with pytest.raises(ScheduleError, match="writes 1 buffer"):
        sch.cache_write(blk, 1, "local")
    with pytest.raises(ScheduleError, match="scope 'shared' is not 'local'"):
        sch.cache_write(blk, 0, "shared")
    with pytest.raises(ScheduleError, match="only a cache_write block"):
        sch.reverse_compute_at(blk, io)
    with pytest.raises(ScheduleError, match="reads 2 buffers, not 3"):
        sch.cache_read(blk, 2, "shared")
    with pytest.raises(ScheduleError, match="unknown thread tag"):
        sch.bind(j, "warp.x")
    with pytest.raises(ScheduleError, match="may write the same element"):
        sch.parallel(k)
    cw = sch.cache_write(blk, 0, "local")
    sch.reverse_compute_at(cw, k)
    with pytest.raises(ScheduleError, match="already placed"):
        sch.reverse_compute_at(cw, j)


def _fused_parallel(sch, i, j, k):
    sch.parallel(sch.fuse(i, j))


def _cache_at_k(sch, i, j, k):
    ko, ki = sch.split(k, factors=[None, 4])
    sch.compute_at(sch.cache_read(sch.get_block("C"), 0, "local"), ko)


def _cache_write_tile(sch, i, j, k):
    """TVM's pattern: the block accumulates an 8x8 tile in a local buffer (its T.init form reads
    C, so the tile starts as C's values), written back under the tile's loop."""
    io, ii = sch.split(i, factors=[None, 8])
    jo, ji = sch.split(j, factors=[None, 8])
    sch.reorder(io, jo, k, ii, ji)
    cw = sch.cache_write(sch.get_block("C"), 0, "local")
    sch.reverse_compute_at(cw, jo)
    sch.vectorize(ji)
    text = sch.mod.script()
    assert 'T.allocate([8, 8], "float32", "local")' in text
    once = script(sch.mod["main"])
    assert script(parse(text)) == once and script(parse(once)) == once     # the cached form round-trips


TIR_VALID = {
    "cache_write_local": _cache_write_tile,
    "fuse_parallel": _fused_parallel,
    "unroll": lambda sch, i, j, k: sch.unroll(sch.split(j, factors=[None, 4])[1]),
    "split_three": lambda sch, i, j, k: sch.split(i, factors=[2, None, 2]),
    "cache_read_local": _cache_at_k,
}


@pytest.mark.parametrize("name", sorted(TIR_VALID))
def test_every_valid_tir_primitive_keeps_the_values(name):
    sch = tir.Schedule(MatMul)
    TIR_VALID[name](sch, *sch.get_loops(sch.get_block("C")))
    rng = np.random.default_rng(4)
    a, b = rng.random((16, 16), np.float32), rng.random((16, 16), np.float32)
    c = np.zeros((16, 16), np.float32)
    aot.build(sch, target="c")(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_bind_and_decompose_reduction_on_a_te_lowered_function():
    """decompose_reduction on the compiler's accumulator form; bind builds for OpenCL's C dialect."""
    A = te.placeholder((16, 16), name="A")
    k = te.reduce_axis((0, 16), "k")
    C = te.compute((16,), lambda i: te.sum(A[i, k], axis=k), name="C")
    sch = tir.Schedule(te.create_schedule(C.op).func)
    blk = sch.get_block("C")
    (i, kk) = sch.get_loops(blk)
    sch.decompose_reduction(blk, kk)
    assert "T.allocate" not in sch.mod.script()
    a = np.random.default_rng(5).random((16, 16)).astype(np.float32)
    c = np.zeros(16, np.float32)
    aot.build(sch, target="c")(a, c)
    np.testing.assert_allclose(c, a.sum(axis=1), rtol=1e-5)
    sch.bind(i, "threadIdx.x")
    assert 'threadIdx_x = T.launch_thread("threadIdx.x", 16)' in sch.mod.script()     # the lowered style
