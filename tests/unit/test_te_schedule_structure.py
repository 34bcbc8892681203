"""aot.te schedules, as TVM's te has them, by their structure (no compiler): the primitives are
recorded on stages (leaf order, relations, attach points) and aot.te.lower_schedule builds the
loop nests from them. Values are checked in tests/host/test_te_schedules.py."""
import pytest

import aot
from aot import te
from aot.tir.expr import Var
from aot.tir.schedule import ScheduleError
from aot.tir.simplify import const_value
from aot.tir.stmt import Allocate, Barrier, For, IfThenElse, Store, walk_stmts


def _matmul(n=64, name="C"):
    k = te.reduce_axis((0, n), "k")
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = te.compute((n, n), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name=name)
    return A, B, C


def _loops(stmt):
    return [(x.var.name, const_value(x.extent), x.kind) for x in walk_stmts(stmt) if isinstance(x, For)]


def test_axes_are_itervars_with_domains_named_after_the_lambda():
    A, B, C = _matmul(32)
    x, y = C.op.axis
    (k,) = C.op.reduce_axis
    assert isinstance(x.var, Var) and x.var.name == "x" and y.var.name == "y"
    assert const_value(x.dom.min) == 0 and const_value(x.dom.extent) == 32
    assert k.var.name == "k" and const_value(k.dom.extent) == 32
    s = te.create_schedule(C.op)
    assert s[C].op.reduce_axis[0] is k and s[C.op] is s[C]
    assert [st.op.name for st in s.stages] == ["C"]


def test_tile_then_reorder_with_the_reduction_in_the_middle():
    """TVM's blocking: C is initialised once per tile just outside the reduction loops, which
    stand between the tile loops and the element loops."""
    A, B, C = _matmul()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 32, 32)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, ki, xi, yi)
    s[C].vectorize(yi)
    assert [v.name for v in s[C].leaf_iter_vars] == ["x.outer", "y.outer", "k.outer", "k.inner", "x.inner", "y.inner"]
    f = te.lower_schedule(s, [A, B, C])
    assert _loops(f.body) == [("x.outer", 2, "serial"), ("y.outer", 2, "serial"),
                              ("x.inner.init", 32, "serial"), ("y.inner.init", 32, "vectorize"),   # the init
                              ("k.outer", 16, "serial"), ("k.inner", 4, "serial"),
                              ("x.inner", 32, "serial"), ("y.inner", 32, "vectorize")]
    assert not any(isinstance(x, IfThenElse) for x in walk_stmts(f.body))        # 64 = 2 * 32: no tails


def test_a_split_that_does_not_divide_is_guarded():
    A, B, C = _matmul(10)
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    f = te.lower_schedule(s, [A, B, C])
    assert ("x.outer", 3, "serial") in _loops(f.body)
    assert sum(isinstance(x, IfThenElse) for x in walk_stmts(f.body)) == 2       # the init and the update


def test_compute_at_infers_the_tile_a_stage_computes():
    A, B, C = _matmul()
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 8)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    assert (xc.var.name, yc.var.name) == ("x.c", "y.c")
    f = te.lower_schedule(s, [A, B, C])
    (alloc,) = [x for x in walk_stmts(f.body) if isinstance(x, Allocate)]
    assert alloc.buffer.name == "C.global" and alloc.buffer.shape == (16, 8)
    assert [n for n, _, _ in _loops(alloc)] == ["x.c", "y.c", "k", "x.inner", "y.inner"]


def test_compute_root_undoes_compute_at_and_inline_substitutes():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((16,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    at = te.lower_schedule(s, [A, C])
    assert [(n, e) for n, e, _ in _loops(at.body)] == [("i", 16)]        # B's one-element loop is gone
    s[B].compute_root()
    root = te.lower_schedule(s, [A, C])
    assert isinstance(root.body, Allocate) and root.body.buffer.shape == (16,)
    s[B].compute_inline()
    inl = te.lower_schedule(s, [A, C])
    assert not any(isinstance(x, Allocate) for x in walk_stmts(inl.body))


def test_rfactor_makes_a_stage_over_the_factored_axis():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    assert BF.name == "B.rf" and BF.shape[0] == 16 and BF.shape[1] is n
    assert [x.var.name for x in s[B].op.reduce_axis] == ["k.inner.v"]
    assert [x.var.name for x in BF.op.reduce_axis] == ["k.outer"]
    assert [st.op.name for st in s.stages] == ["B.rf", "B"]
    assert "k.inner.v" in repr(s[B].op.body)


def test_rfactor_across_threads_with_a_store_predicate_builds_for_cuda():
    """reduction.py's last schedule: partial sums per thread, combined through shared memory,
    one thread of each row storing."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    f = te.lower_schedule(s, [A, B])
    assert sum(isinstance(x, Barrier) for x in walk_stmts(f.body)) == 2
    scopes = {x.buffer.name: x.buffer.scope for x in walk_stmts(f.body) if isinstance(x, Allocate)}
    assert scopes["B.rf"] == "local" and scopes["red_buf0"] == "shared"
    mod = aot.build(s, [A, B], "cuda")
    preview = mod.imported_modules[0].get_source()       # before a call: the sizes as parameters
    assert "int32_t n, int32_t m)" in preview and "__syncthreads();" in preview
    fixed = aot.build(s, [A, B], "cuda", sizes={"n": 128, "m": 128})
    src = fixed.imported_modules[0].get_source()
    assert "if ((threadIdx_x == 0))" in src and "dim3(4u, 1u, 1u), dim3(16u, 32u, 1u)" in src


def test_tensor_arithmetic_broadcasts_as_topi_does():
    a = te.placeholder((100, 10, 10), name="a")
    b = te.placeholder((10, 10), name="b")
    c = a + b
    assert c.shape == (100, 10, 10) and c.op.name == "T_add"
    assert (a * b).op.name == "T_multiply" and (c / 2.0).dtype == "float32"
    with pytest.raises(aot.AotError, match="do not broadcast"):
        a + te.placeholder((3, 10), name="z")


def test_comm_reducer_and_float_shapes():
    product = te.comm_reducer(lambda x, y: x * y, lambda t: aot.tir.const(1, dtype=t), name="product")
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    B = te.compute((4,), lambda i: product(A[i, k], axis=k), name="B")
    assert const_value(B.op.body.init) == 1.0
    P = te.compute((64 / 32, 5), lambda x, y: A[x, y], name="P")        # TVM's tutorials write N / bn
    assert P.shape == (2, 5)
    with pytest.raises(aot.AotError, match="not a whole number"):
        te.compute((2.5,), lambda x: A[0, 0], name="Q")


REFUSED = {
    "split_twice": (lambda s, C: (s[C].split(C.op.axis[0], factor=4), s[C].split(C.op.axis[0], factor=2)),
                    "split: axis x of stage C was already split"),
    "fuse_apart": (lambda s, C: s[C].fuse(C.op.axis[1], C.op.axis[0]), "is not directly inside"),
    "parallel_reduction": (lambda s, C: s[C].parallel(C.op.reduce_axis[0]), "a reduction axis"),
    "bind_reduction_to_block": (lambda s, C: s[C].bind(C.op.reduce_axis[0], te.thread_axis("blockIdx.x")),
                                "bound to threads"),
    "inline_reduction": (lambda s, C: s[C].compute_inline(), "an output of the schedule cannot be inlined"),
    "rfactor_data_axis": (lambda s, C: s.rfactor(C, C.op.axis[0]), "not a reduction axis"),
    "placeholder_stage": (lambda s, C: s[C.op.input_tensors[0]], "a placeholder has no stage"),
    "attach_unread": (lambda s, C: _attach_unread(s, C), "does not read"),
    "attach_with_a_reader_outside": (lambda s, C: _reader_outside(C), "is also read outside C's loop"),
}


def _reader_outside(C):
    A = C.op.input_tensors[0]
    P = te.compute(A.shape, lambda i, j: A[i, j] + 1.0, name="P")
    C2 = te.compute(A.shape, lambda i, j: P[i, j] * 2.0, name="C")
    D = te.compute(A.shape, lambda i, j: P[i, j] * 3.0, name="D")
    s = te.create_schedule([C2.op, D.op])
    s[P].compute_at(s[C2], C2.op.axis[0])
    te.lower_schedule(s)


def _attach_unread(s, C):
    """A stage attached inside a loop of one that does not read it: nothing tells its region."""
    A = C.op.input_tensors[0]
    D = te.compute(A.shape, lambda i, j: A[i, j] + 1.0, name="D")
    E = te.compute(A.shape, lambda i, j: D[i, j] * 2.0, name="E")
    s2 = te.create_schedule([C.op, E.op])
    s2[D].compute_at(s2[C], C.op.axis[0])
    te.lower_schedule(s2)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_each_refusal_names_the_primitive_and_why(name):
    A, B, C = _matmul(8)
    s = te.create_schedule(C.op)
    fn, msg = REFUSED[name]
    with pytest.raises(ScheduleError, match=msg):
        fn(s, C)


def test_every_store_of_a_tile_reads_inside_its_region():
    """cache_read at a tile: the cache holds just the rows the tile reads."""
    A, B, C = _matmul(32)
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[AA].compute_at(s[C], xo)
    f = te.lower_schedule(s, [A, B, C])
    (alloc,) = [x for x in walk_stmts(f.body) if isinstance(x, Allocate)]
    assert alloc.buffer.name == "A.local" and alloc.buffer.shape == (8, 32) and alloc.buffer.scope == "local"
    assert any(isinstance(x, Store) and x.buffer is alloc.buffer for x in walk_stmts(alloc))


def test_a_store_predicate_on_bound_axes_reads_the_thread_variables():
    """set_store_predicate over axes later bound to threads: the stored predicate names the thread
    variables, so nothing of the schedule's own axes is left free in the lowered function."""
    from aot.te import lower_schedule
    from aot.tir.bind import size_vars
    A = te.placeholder((300, 70), name="A")
    k = te.reduce_axis((0, 70), name="k")
    B = te.compute((300,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=32)
    BF = s.rfactor(B, ki)
    bo, bi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s[B].bind(bi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(aot.tir.all(tx.var.equal(0), bo.var * 32 + bi.var < 300))
    func = lower_schedule(s, [A, B], "main")
    assert size_vars(func) == []
