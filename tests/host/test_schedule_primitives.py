"""Lowering -> a schedule written here -> render -> gcc, through public names only: the path a
user (and every per-target rule in aot/schedules/) takes. Results are checked against numpy."""
import os
import subprocess

import numpy as np
import pytest

from aot import te
from aot.te.lower import lower
from aot.tir import schedule as tsch
from aot.tir.flatten import flatten
from aot.tir.printer import func_str
from aot.tir.verify import verify_accesses
from codegen_c.c_renderer import CRenderer

RNG = np.random.default_rng(7)
M, K, N = 6, 12, 10


def _matmul():
    a = te.placeholder((M, K), "float32", "A")
    b = te.placeholder((K, N), "float32", "B")
    k = te.reduce_axis(K, "k")
    c = te.compute((M, N), lambda i, j: te.sum(a(i, k.var) * b(k.var, j), k), "C", ["i", "j"])
    return a, b, c


def _build_and_run(func, tmp_path, n_out=M * N, sanitize=True):
    """Render func (params A[M,K], B[K,N], C[...]) with a driver, build warning-free (and with
    ASan/UBSan), run on random inputs; returns (inputs, output)."""
    A = RNG.standard_normal((M, K)).astype(np.float32)
    B = RNG.standard_normal((K, N)).astype(np.float32)
    r = CRenderer()
    text = r.function(func)
    src = "#include <stdint.h>\n#include <math.h>\n" + r.helper_definitions() + "\n" + text
    driver = f"""
#include <stdio.h>
#include <stdint.h>
int32_t {func.name}(const float* restrict, const float* restrict, float* restrict);
int main(void) {{
  static float a[{M * K}], b[{K * N}], c[{n_out}];
  int i;
  for (i = 0; i < {M * K}; ++i) if (scanf("%f", &a[i]) != 1) return 1;
  for (i = 0; i < {K * N}; ++i) if (scanf("%f", &b[i]) != 1) return 1;
  if ({func.name}(a, b, c) != 0) return 2;
  for (i = 0; i < {n_out}; ++i) printf("%.9g\\n", c[i]);
  return 0;
}}
"""
    (tmp_path / "k.c").write_text(src)
    (tmp_path / "m.c").write_text(driver)
    flags = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1"]
    if sanitize:
        flags += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    exe = str(tmp_path / "x")
    subprocess.run(["gcc", *flags, str(tmp_path / "k.c"), str(tmp_path / "m.c"), "-o", exe, "-lm"], check=True)
    inp = " ".join(f"{v:.9g}" for v in np.concatenate([A.ravel(), B.ravel()]))
    out = subprocess.run([exe], input=inp, capture_output=True, text=True, check=True,
                         env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0")).stdout
    return (A, B), np.array([float(v) for v in out.split()], np.float32), src


def test_lowering_keeps_the_expression_loop_variables():
    a, b, c = _matmul()
    f = lower([a, b, c], "plain")
    loops = [x.var for x in tsch.find_loops(f.body, c.op.axis[0]) + tsch.find_loops(f.body, c.op.axis[1])
             + tsch.find_loops(f.body, c.op.reduce_axis[0])]
    assert len(loops) == 3        # i, j and the reduce axis k are the loops, by identity


def test_user_schedule_split_reorder_reduce_split_unroll_parallel(tmp_path):
    a, b, c = _matmul()
    f = lower([a, b, c], "mm_scheduled")
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    s = f.body
    s, jo, ji = tsch.split(s, j, 4)          # 10 = 4 + 4 + 2: a guarded tail
    s = tsch.reorder(s, [jo, i, ji])          # column blocks outermost
    s, ko, ki = tsch.split(s, k, 3)           # the reduce axis itself
    s = tsch.unroll(s, ki)                    # three multiply-adds straight-line
    s = tsch.parallel(s, jo)
    f = flatten(f.with_body(s))
    text = func_str(f)
    assert "parallel" in text and "k_i" not in text and "k_o" in text
    rep = verify_accesses(f)
    assert rep.unproven == 0
    (A, B), got, src = _build_and_run(f, tmp_path)
    np.testing.assert_allclose(got.reshape(M, N), A @ B, rtol=1e-5, atol=1e-5)
    # column blocks are the outermost loop: the parallel one, whose body is a function of its own
    assert "for (int32_t j_o = 0; j_o < 3; ++j_o) {\n    mm_scheduled_parallel_0(A, B, C, j_o);" in src


def test_register_tile_from_primitives(tmp_path):
    """The CPU rule's own recipe, spelled out: split the column axis, move the lanes inside the
    reduction with one accumulator slot each, vectorize them."""
    a, b, c = _matmul()
    f = lower([a, b, c], "mm_tiled")
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    s, jo, ji = tsch.split(f.body, j, 5)
    s = tsch.reorder(s, [jo, ji])
    s = tsch.hoist_allocate(s, ji)
    s = tsch.fission(s, ji)
    s = tsch.reorder(s, [k, ji])
    s = tsch.vectorize(s, ji)
    f = flatten(f.with_body(s))
    assert "[5, 1], local" in func_str(f) and "vectorize" in func_str(f)
    (A, B), got, _ = _build_and_run(f, tmp_path)
    np.testing.assert_allclose(got.reshape(M, N), A @ B, rtol=1e-5, atol=1e-5)


def test_fuse_then_split(tmp_path):
    a, b, c = _matmul()
    f = lower([a, b, c], "mm_fused")
    i, j = c.op.axis
    s, ij = tsch.fuse(f.body, i, j)
    s, o, inner = tsch.split(s, ij, 16)       # 60 = 3*16 + 12: guarded
    f = flatten(f.with_body(s))
    (A, B), got, _ = _build_and_run(f, tmp_path)
    np.testing.assert_allclose(got.reshape(M, N), A @ B, rtol=1e-5, atol=1e-5)


def test_pack_layout_records_the_layout_and_reads_the_packed_array(tmp_path):
    """A constant stored in another layout: the function reads the packed array, and
    func.attrs says how to pack it (the executor applies it to the constant it links)."""
    a, b, c = _matmul()
    f = lower([a, b, c], "mm_packed")
    f.attrs["constants"] = (1,)
    i, j = c.op.axis
    s, jo, ji = tsch.split(f.body, j, 5)
    f = tsch.pack_layout(f.with_body(s), 1, 1, 5)     # B[K, N] -> [K, N/5, 5]
    layout = f.attrs["layouts"][1]
    assert f.params[1].shape == (K, 2, 5)
    f = flatten(f)
    A = RNG.standard_normal((M, K)).astype(np.float32)
    B = RNG.standard_normal((K, N)).astype(np.float32)
    # run with the packed B: feed it through the same driver
    (tmp_path / "k.c").write_text("#include <stdint.h>\n#include <math.h>\n" + CRenderer().function(f))
    driver = f"""
#include <stdio.h>
#include <stdint.h>
int32_t mm_packed(const float* restrict, const float* restrict, float* restrict);
int main(void) {{ static float a[{M * K}], b[{K * N}], c[{M * N}]; int i;
  for (i = 0; i < {M * K}; ++i) if (scanf("%f", &a[i]) != 1) return 1;
  for (i = 0; i < {K * N}; ++i) if (scanf("%f", &b[i]) != 1) return 1;
  mm_packed(a, b, c); for (i = 0; i < {M * N}; ++i) printf("%.9g\\n", c[i]); return 0; }}
"""
    (tmp_path / "m.c").write_text(driver)
    exe = str(tmp_path / "x")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsanitize=address,undefined",
                    str(tmp_path / "k.c"), str(tmp_path / "m.c"), "-o", exe, "-lm"], check=True)
    inp = " ".join(f"{v:.9g}" for v in np.concatenate([A.ravel(), layout.apply(B).ravel()]))
    out = subprocess.run([exe], input=inp, capture_output=True, text=True, check=True,
                         env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0")).stdout
    got = np.array([float(v) for v in out.split()], np.float32).reshape(M, N)
    np.testing.assert_allclose(got, A @ B, rtol=1e-5, atol=1e-5)


def test_primitives_refuse_what_they_cannot_do():
    a, b, c = _matmul()
    f = lower([a, b, c], "mm")
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    with pytest.raises(tsch.ScheduleError, match="perfect nest"):
        tsch.reorder(f.body, [k, i])                       # k is not directly inside i
    with pytest.raises(tsch.ScheduleError, match="unroll"):
        tsch.unroll(f.body, i, max_extent=4)               # 6 iterations
    with pytest.raises(tsch.ScheduleError, match="parallel"):
        tsch.parallel(f.body, k)                           # every k adds into the same accumulator... element
    with pytest.raises(tsch.ScheduleError, match="not a constant input"):
        tsch.pack_layout(f, 1, 1, 5)
    with pytest.raises(tsch.ScheduleError, match="thread tag"):
        tsch.bind(f.body, i, "threadIdx.w")


def test_c_renderer_refuses_gpu_constructs():
    from aot.errors import AotError
    a, b, c = _matmul()
    f = lower([a, b, c], "mm")
    s = tsch.bind(f.body, c.op.axis[0], "threadIdx.x")
    with pytest.raises(AotError, match="threadIdx.x.*no GPU threads"):
        CRenderer().function(flatten(f.with_body(s)))


def test_parallel_refuses_shared_output_element():
    from aot.tir.expr import Var
    from aot.tir.stmt import Buffer, For, Store
    i = Var("i")
    out = Buffer("o", "int32", (1,))
    with pytest.raises(tsch.ScheduleError, match="parallel"):
        tsch.parallel(For(i, 0, 4, Store(out, 0, i)), i)


def test_a_dialect_is_a_short_subclass():
    """Everything a GPU dialect changes is data on the renderer class: the loop-nest printing
    is inherited. (The real CUDA/OpenCL renderers are issue 12; this one exists to show the
    seams and that the base prints through them.)"""
    from aot.tir.expr import Load, Var
    from aot.tir.stmt import Allocate, Barrier, Buffer, For, PrimFunc, Seq, Store

    class ToyCuda(CRenderer):
        name = "toy-cuda"
        function_prefix = 'extern "C" __global__'
        return_value = None
        restrict = "__restrict__"
        shared_prefix = "__shared__"
        barrier_text = "__syncthreads();"
        thread_indices = {"blockIdx.x": "(int32_t)blockIdx.x", "threadIdx.x": "(int32_t)threadIdx.x"}

    src, dst = Buffer("src", "float32", (256,)), Buffer("dst", "float32", (256,))
    tile = Buffer("tile", "float32", (64,), "shared")
    i = Var("i")
    body = For(i, 0, 256, Store(dst, i, Load(src, i) * 2.0))
    s, bo, bi = tsch.split(body, i, 64)
    s = tsch.bind(tsch.bind(s, bo, "blockIdx.x"), bi, "threadIdx.x")
    staged = For(bo, 0, 4, For(bi, 0, 64, Allocate(tile, Seq([
        Store(tile, bi, Load(src, bo * 64 + bi)), Barrier(),
        Store(dst, bo * 64 + bi, Load(tile, 63 - bi) * 2.0)])), "thread_binding", "threadIdx.x"),
        "thread_binding", "blockIdx.x")
    text = ToyCuda().function(PrimFunc("k", [src, dst], staged, 1))
    assert text.startswith('extern "C" __global__ void k(const float* __restrict__ src, float* __restrict__ dst)')
    assert "const int32_t bo = (int32_t)blockIdx.x;" in text or "(int32_t)blockIdx.x;" in text
    assert "__shared__ float tile[64];" in text and "__syncthreads();" in text and "return" not in text
    assert "for (" not in text          # bound loops print as thread indices, not loops
    # the plain C renderer refuses what C cannot express, naming the construct
    from aot.errors import AotError
    with pytest.raises(AotError, match="no GPU threads"):
        CRenderer().function(PrimFunc("k", [src, dst], s, 1))


def test_cache_read_local_stages_each_chunk(tmp_path):
    """A user schedule: the reduction in chunks of 4, each chunk of A's row and B's column
    copied into local arrays first; the result matches numpy under ASan/UBSan."""
    a, b, c = _matmul()
    f = lower([a, b, c], "mm_cached")
    (k,) = c.op.reduce_axis
    s, ko, ki = tsch.split(f.body, k, 4)
    s, a_l = tsch.cache_read(s, f.params[0], ko, "local")
    s, b_l = tsch.cache_read(s, f.params[1], ko, "local")
    assert a_l.shape == (1, 4) and b_l.shape == (4, 1) and a_l.scope == "local"
    f = flatten(f.with_body(s))
    (A, B), got, src = _build_and_run(f, tmp_path)
    np.testing.assert_allclose(got.reshape(M, N), A @ B, rtol=1e-5, atol=1e-5)
    assert "A_local[4]" in src and "B_local[4]" in src


def test_cache_read_shared_spans_the_block_and_refuses_what_it_cannot_stage():
    from aot.tir.stmt import Allocate, Barrier, walk_stmts
    a, b, c = _matmul()
    f = lower([a, b, c], "mm_shared")
    i, j = c.op.axis
    (k,) = c.op.reduce_axis
    with pytest.raises(tsch.ScheduleError, match="inside a GPU block"):
        tsch.cache_read(f.body, f.params[0], k, "shared")
    with pytest.raises(tsch.ScheduleError, match="does not read C"):
        tsch.cache_read(f.body, f.params[2], i, "local")
    s = tsch.bind(tsch.bind(f.body, i, "threadIdx.y"), j, "threadIdx.x")
    s, ko, _ = tsch.split(s, k, 4)
    s, a_s = tsch.cache_read(s, f.params[0], ko, "shared")
    s, b_s = tsch.cache_read(s, f.params[1], ko, "shared")
    assert a_s.shape == (M, 4) and b_s.shape == (4, N)           # every row/column of the block's threads
    assert sum(isinstance(x, Barrier) for x in walk_stmts(s)) == 2  # one fill barrier, one end barrier, shared
    assert sum(isinstance(x, Allocate) and x.buffer.scope == "shared" for x in walk_stmts(s)) == 2
    with pytest.raises(tsch.ScheduleError, match="needs 24 bytes, more than the 16 of shared memory"):
        tsch.cache_read(tsch.bind(tsch.bind(f.body, i, "threadIdx.y"), j, "threadIdx.x"), f.params[0], k, "shared",
                        shared_max=16)      # A[:, k] of the block is 6 floats


def test_cache_write_computes_a_tile_locally_and_copies_it_out(tmp_path):
    """C's row tiles (j split by 4: 10 = 2*4 + 2, a guarded tail) accumulate in a local buffer,
    copied to C at the end of every i; under ASan/UBSan the tail is neither computed nor copied
    out of bounds, and the verifier proves every access."""
    a, b, c = _matmul()
    f = lower([a, b, c], "mm_wcache")
    i, j = c.op.axis
    s, jo, ji = tsch.split(f.body, j, 4)
    with pytest.raises(tsch.ScheduleError, match="scope 'shared' is not 'local'"):
        tsch.cache_write(s, f.params[2], i, "shared")
    with pytest.raises(tsch.ScheduleError, match="the loop does not write C"):
        tsch.cache_write(s, f.params[2], c.op.reduce_axis[0], "local")
    with pytest.raises(tsch.ScheduleError, match="the loop does not write A"):
        tsch.cache_write(s, f.params[0], i, "local")
    s, cache, copy_vars = tsch.cache_write(s, f.params[2], i, "local")
    assert cache.shape == (3, 4) and cache.scope == "local" and len(copy_vars) == 2
    f = flatten(f.with_body(s))
    assert verify_accesses(f).unproven == 0
    (A, B), got, src = _build_and_run(f, tmp_path)
    np.testing.assert_allclose(got.reshape(M, N), A @ B, rtol=1e-5, atol=1e-5)
    assert "C_local[12]" in src


def test_contract_fma_fuses_the_accumulations_and_leaves_vector_lanes(tmp_path):
    """acc = acc + a * b inside the loop becomes fma(a, b, acc) (rendered through aot_fma_f32);
    a loop marked for vectorizing keeps a * b + c; the result matches numpy."""
    from aot.tir.expr import Call
    from aot.tir.stmt import Store, walk_stmts
    a, b, c = _matmul()
    f = lower([a, b, c], "mm_fma")
    i, j = c.op.axis

    def fmas(s):
        return sum(isinstance(x, Store) and isinstance(x.value, Call) and x.value.fn == "fma" for x in walk_stmts(s))
    assert fmas(tsch.contract_fma(tsch.vectorize(f.body, j), i)) == 0
    s = tsch.contract_fma(f.body, i)
    assert fmas(s) == 1 and fmas(f.body) == 0          # the input is not mutated
    (A, B), got, src = _build_and_run(flatten(f.with_body(s)), tmp_path)
    assert "aot_fma_f32(" in src
    np.testing.assert_allclose(got.reshape(M, N), A @ B, rtol=1e-5, atol=1e-5)


def test_partition_splits_a_loop_into_consecutive_ranges(tmp_path):
    """partition(i, 1, 4): loops over [0, 1), [1, 4), [4, M) with the same body; the result
    matches numpy; a range outside the loop is refused."""
    from aot.tir.simplify import const_value
    from aot.tir.stmt import For, walk_stmts
    a, b, c = _matmul()
    f = lower([a, b, c], "mm_part")
    i, _ = c.op.axis
    s = tsch.partition(f.body, i, 1, 4)
    spans = [(const_value(x.min), const_value(x.extent)) for x in walk_stmts(s) if isinstance(x, For) and x.var is i.var]
    assert spans == [(0, 1), (1, 3), (4, M - 4)]
    (A, B), got, _ = _build_and_run(flatten(f.with_body(s)), tmp_path)
    np.testing.assert_allclose(got.reshape(M, N), A @ B, rtol=1e-5, atol=1e-5)
    with pytest.raises(tsch.ScheduleError):
        tsch.partition(f.body, i, 2, M + 1)
