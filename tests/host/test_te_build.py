"""aot.te schedules and aot.build, with TVM's call shapes: TVM's vector-add and matmul programs
run with the import changed. Every valid use of a schedule primitive gives numpy's values; every
invalid one is refused with a ScheduleError that says why."""
import numpy as np
import pytest

import aot
from aot import te
from aot.tir.schedule import ScheduleError

N = 1024


def _vector_add():
    A = te.placeholder((N,), name="A")
    B = te.placeholder((N,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    return A, B, C


def _bound_schedule(C):
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return s


def _arrays(rng=np.random.default_rng(0)):
    a = aot.nd.array(rng.uniform(size=N).astype("float32"))
    b = aot.nd.array(rng.uniform(size=N).astype("float32"))
    return a, b, aot.nd.array(np.zeros(N, "float32"))


def _matmul(n=64):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), "k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, k


def _check(s, tensors, ref_fn, n=64):
    f = aot.build(s, tensors, target="c", name="k")
    rng = np.random.default_rng(2)
    ins = [rng.random(t.shape).astype("float32") for t in tensors if t.is_placeholder]
    out = np.zeros(tensors[-1].shape, "float32")
    f(*ins, out)
    np.testing.assert_allclose(out, ref_fn(*ins), rtol=1e-5, atol=1e-5)
    return f


PRIMITIVES = {
    "none": lambda s, C, k: None,
    "split": lambda s, C, k: s[C].split(C.op.axis[0], factor=5),          # 64 = 12*5 + 4: a tail guard
    "split_nparts": lambda s, C, k: s[C].split(C.op.axis[1], nparts=4),
    "split_reduce": lambda s, C, k: s[C].split(k, factor=16),
    "fuse": lambda s, C, k: s[C].fuse(*C.op.axis),
    "reorder": lambda s, C, k: s[C].reorder(C.op.axis[1], C.op.axis[0]),
    "unroll": lambda s, C, k: s[C].unroll(s[C].split(C.op.axis[1], factor=4)[1]),
    "vectorize": lambda s, C, k: s[C].vectorize(s[C].split(C.op.axis[1], factor=8)[1]),
    "parallel": lambda s, C, k: s[C].parallel(C.op.axis[0]),
    "tile_parallel": lambda s, C, k: _tile(s, C),
    "reorder_reduction": lambda s, C, k: _tutorial_cpu(s, C, k),
    "cache_write_tile": lambda s, C, k: _cache_write_tutorial(s, C, 16),
    "cache_write_tail": lambda s, C, k: _cache_write_tutorial(s, C, 24),   # 64 = 2*24 + 16: guarded tiles
    "cache_write_unplaced": lambda s, C, k: s.cache_write(C, "local"),
    "cache_write_shared_unplaced": lambda s, C, k: s.cache_write(C, "shared"),
    "cache_write_placed_twice": lambda s, C, k: [s[cc].compute_at(s[C], C.op.axis[i]) for cc in [s.cache_write(C, "local")]
                                                 for i in (0, 1)],     # the last placement holds
    "reorder_reduction_outermost": lambda s, C, k: s[C].reorder(k, C.op.axis[0]),
    "cache_read_at_tile": lambda s, C, k: _cache_read_at(s, C, k),
}


def _cache_read_at(s, C, k):
    """A's rows copied into a local cache per row block, B's k-slices per k step."""
    A, B = C.op.input_tensors
    AA = s.cache_read(A, "local", [C])
    BB = s.cache_read(B, "global", [C])
    io, ii = s[C].split(C.op.axis[0], factor=8)
    ko, ki = s[C].split(k, factor=8)
    s[C].reorder(io, ko, ii, C.op.axis[1], ki)
    s[AA].compute_at(s[C], io)
    s[BB].compute_at(s[C], ko)


def _split_after_attach(s, C):
    CC = s.cache_write(C, "local")
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[CC].compute_at(s[C], xo)
    s[C].split(xo, factor=2)
    te.lower_schedule(s)


def _cache_write_tutorial(s, C, bn):
    """TVM's CPU matmul tutorial, "write cache" step: a tile accumulated in a local buffer,
    written back to C at the tile's loop."""
    CC = s.cache_write(C, "local")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    s[C].parallel(xo)


def _tutorial_cpu(s, C, k):
    """TVM's CPU matmul schedule: k split and moved among the output tiles, j vectorised."""
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=16)
    jo, ji = s[C].split(j, factor=16)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)


def _tile(s, C):
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=16)
    jo, ji = s[C].split(j, factor=16)
    s[C].reorder(io, jo, ii, ji)
    s[C].parallel(s[C].fuse(io, jo))


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_every_valid_primitive_keeps_the_values(name):
    A, B, C, k = _matmul()
    s = te.create_schedule(C.op)
    PRIMITIVES[name](s, C, k)
    _check(s, [A, B, C], lambda a, b: a @ b)


INVALID = {
    "split_both": (lambda s, C, k: s[C].split(C.op.axis[0], factor=4, nparts=4), "give factor or nparts"),
    "split_zero": (lambda s, C, k: s[C].split(C.op.axis[0], factor=0), "factor 0 is not positive"),
    "split_gone": (lambda s, C, k: (s[C].split(C.op.axis[0], factor=4), s[C].split(C.op.axis[0], factor=2)),
                   "axis i of stage C was already split or fused"),
    "fuse_one": (lambda s, C, k: s[C].fuse(C.op.axis[0]), "two or more axes"),
    "fuse_not_nested": (lambda s, C, k: s[C].fuse(C.op.axis[1], C.op.axis[0]), "is not directly inside"),
    "reorder_twice": (lambda s, C, k: s[C].reorder(C.op.axis[0], C.op.axis[0]), "named twice"),
    "unroll_unknown_axis": (lambda s, C, k: s[C].unroll(te.reduce_axis(3, "nowhere")),
                            "nowhere is not an axis of stage C"),
    "fuse_reduce_and_data": (lambda s, C, k: s[C].fuse(C.op.axis[1], k), "one is a reduction axis"),
    "bind_not_thread": (lambda s, C, k: s[C].bind(C.op.axis[0], C.op.axis[1]), "thread_axis"),
    "thread_tag": (lambda s, C, k: te.thread_axis("warp.x"), "unknown thread tag"),
    "parallel_reduce": (lambda s, C, k: s[C].parallel(k), "may write the same element"),
    "compute_at_itself": (lambda s, C, k: s[C].compute_at(s[C], C.op.axis[0]), "cannot be computed inside itself"),
    "cache_write_scope": (lambda s, C, k: s.cache_write(C, "texture"), "scope 'texture' is not"),
    "cache_write_input": (lambda s, C, k: s.cache_write(C.op.body.source.a.tensor, "local"),
                          "not a computed tensor"),
    "cache_write_at_reduction": (lambda s, C, k: s[s.cache_write(C, "local")].compute_at(s[C], k),
                                 "k is not an axis of stage C"),     # C became the copy out of the cache
    "cache_read_not_read": (lambda s, C, k: s.cache_read(C.op.output(0), "global", [C]), "C does not read C"),
    "cache_scope": (lambda s, C, k: s.cache_read(C.op.input_tensors[0], "texture", [C]), "scope 'texture'"),
    "rfactor_data_axis": (lambda s, C, k: s.rfactor(C, C.op.axis[0]), "is not a reduction axis"),
    "split_after_attach": (lambda s, C, k: _split_after_attach(s, C), "was split or fused after compute_at"),
    "inline_output": (lambda s, C, k: s[C].compute_inline(), "cannot be inlined"),
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_every_invalid_primitive_use_is_refused_with_a_reason(name):
    A, B, C, k = _matmul(8)
    s = te.create_schedule(C.op)
    fn, msg = INVALID[name]
    with pytest.raises((ScheduleError, aot.AotError), match=msg):
        fn(s, C, k)


def test_compute_at_of_an_intermediate_stage_computes_its_tile_there():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((64,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    s[B].compute_at(s[C], xo)
    f = te.lower_schedule(s, [A, C])
    from aot.tir.stmt import Allocate, walk_stmts
    (alloc,) = [x for x in walk_stmts(f.body) if isinstance(x, Allocate)]
    assert alloc.buffer.shape == (16,)                 # one tile of B per iteration of xo
    _check(s, [A, C], lambda a: (a + 1) * 2)


def test_a_reduction_read_by_an_epilogue_is_scheduled_in_its_own_stage():
    A, B, C, k = _matmul(8)
    D = te.compute(C.shape, lambda i, j: C[i, j] * 2.0, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match="k is not an axis of stage D"):
        s[D].reorder(k, D.op.axis[1])
    s[C].reorder(k, C.op.axis[1])
    _check(s, [A, B, D], lambda a, b: (a @ b) * 2)


def test_bound_loops_on_the_c_target_are_refused_by_name():
    A, B, C = _vector_add()
    with pytest.raises(aot.AotError, match="bound to blockIdx.x, but the C target has no GPU threads"):
        aot.build(_bound_schedule(C), [A, B, C], target="c", name="myadd")


def test_build_checks_its_arguments():
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    with pytest.raises(aot.AotError, match="placeholders first"):
        aot.build(s, [A, C, B])
    with pytest.raises(aot.AotError, match="leave out B"):
        aot.build(s, [A, C])
    f = aot.build(s, [A, B, C], name="add")
    with pytest.raises(aot.AotError, match=r"argument A must be float32\[1024\]"):
        f(np.zeros(3, "float32"), np.zeros(N, "float32"), np.zeros(N, "float32"))
    with pytest.raises(aot.AotError, match="takes 2 inputs and 1 outputs"):
        f(np.zeros(N, "float32"))


def test_time_evaluator_reports_a_mean():
    A, B, C = _vector_add()
    f = aot.build(te.create_schedule(C.op), [A, B, C], name="add")
    a, b, c = _arrays()
    r = f.time_evaluator(f.entry_name, aot.cpu(0), number=3)(a, b, c)
    assert r.mean > 0
    np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())


def test_tir_example_runs():
    import subprocess
    import sys
    from conftest import ROOT
    r = subprocess.run([sys.executable, f"{ROOT}/examples/python_api/tir_vector_add.py"], capture_output=True,
                       text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "vector add after split/reorder" in r.stdout


def _compile_c(tmp_path, tar, cc, extra):
    import io
    import subprocess
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(tmp_path)
    srcs = sorted(str(p) for p in (tmp_path / "codegen/host/src").glob("*.c"))
    cmd = [cc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", *extra,
           "-I", str(tmp_path / "codegen/host/include"), "-I", str(tmp_path / "runtime/include"), "-c", *srcs]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, " ".join(cmd) + "\n" + r.stderr


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_a_parallel_loop_is_openmp_guarded_c99_with_and_without_fopenmp(tmp_path, cc):
    import shutil
    if not shutil.which(cc):
        pytest.skip(f"no {cc}")
    A, B, C, k = _matmul(64)
    s = te.create_schedule(C.op)
    _tutorial_cpu(s, C, k)
    f = aot.build(s, [A, B, C], target="c", name="mm")
    src = f.get_source()
    assert "#ifdef _OPENMP\n#pragma omp parallel for" in src
    # the loop body is a function of its own whose pointers keep restrict
    assert "static void tvmgen_mm_fused_prim_func_call_parallel_0(const float* restrict A" in src
    for extra in ([], ["-fopenmp"]):
        _compile_c(tmp_path / ("omp" if extra else "plain"), f.tar, cc, extra)


def test_a_parallel_loop_on_a_microcontroller_stays_a_plain_loop():
    A, B, C, k = _matmul(16)
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    src = aot.build(s, [A, B, C], target="c -mcpu=cortex-m4", name="mm").get_source()
    assert "#pragma omp" not in src and "_parallel_" not in src


def test_the_host_build_links_openmp_for_parallel_loops():
    from aot.host import uses_openmp
    A, B, C, k = _matmul(64)
    s = te.create_schedule(C.op)
    plain = aot.build(s, [A, B, C], target="c", name="mm")
    s[C].parallel(C.op.axis[0])
    par = _check(s, [A, B, C], lambda a, b: a @ b)          # built with -fopenmp and run on every core
    assert uses_openmp(par.tar) and not uses_openmp(plain.tar)
