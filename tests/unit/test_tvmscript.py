"""TVMScript printing as TVM prints TIR (513c2be's printer: headers, T.Buffer parameters, T.grid, flat
views declared where all their uses are, T.launch_thread, T.allocate, blocks with T.axis/T.reads/
T.writes/T.init, Python's precedence), parsing every printed form back to the same text, and the
TIR API a user's pass is written with (stmt_functor, ir_builder, prim_func_pass, call_extern).
The expected texts are written by hand in TVM's format."""
import textwrap

import pytest

import aot
from aot import te, tir
from aot.ir.module import IRModule
from aot.script import tir as T
from aot.tir.expr import Const, Load, Var, ge, lt, select
from aot.tir.script import ScriptError, parse, script
from aot.tir.stmt import Allocate, Block, Buffer, For, IterVar, PrimFunc, Seq, Store
from aot.tir.tvmscript import unflatten


def _text(s):
    return textwrap.dedent(s).strip("\n")


def _body(mod_text):
    """The lines after the function's signature, dedented."""
    lines = mod_text.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("def "))
    return textwrap.dedent("\n".join(lines[k + 1:]))


def _axis(t, k=0):
    a = t.op.axis[k]
    return getattr(a, "var", a).name


def _fixed_point(func):
    once = script(func)
    assert script(parse(once)) == once
    return once


# -- the lowered style (tvm.lower of a te schedule) ---------------------------------------------------
def test_lower_prints_a_module_with_simplified_split_indices():
    A = te.placeholder((1024,), name="A")
    B = te.compute((1024,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=2)
    s[B].split(xo, factor=2)
    mod = aot.lower(s, [A, B], simple_mode=True)
    text = str(mod)
    assert text.startswith(_text("""
        # from tvm.script import ir as I
        # from tvm.script import tir as T

        @I.ir_module
        class Module:
            @T.prim_func
            def main(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32")):
                T.func_attr({"from_legacy_te_schedule": T.bool(True), "tir.noalias": T.bool(True)})
        """))
    loop = text.splitlines()[-2].strip()
    names = loop[len("for "):loop.index(" in ")].split(", ")
    assert loop == f"for {', '.join(names)} in T.grid(256, 2, 2):"
    o, m, i = names
    assert text.splitlines()[-1].strip() == f"B[{o} * 4 + {m} * 2 + {i}] = A[{o} * 4 + {m} * 2 + {i}] * T.float32(2.0)"
    assert mod.script() == text and "main" in mod.functions and mod["main"].name == "main"
    _fixed_point(mod["main"])


def test_symbolic_sizes_are_handles_with_match_buffer():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    mod = aot.lower(te.create_schedule(C.op), [A, B, C], simple_mode=True)
    i = _axis(C)
    assert _body(str(mod)) == _text(f"""
        T.func_attr({{"from_legacy_te_schedule": T.bool(True), "tir.noalias": T.bool(True)}})
        n = T.int32()
        A_1 = T.match_buffer(A, (n,))
        B_1 = T.match_buffer(B, (n,))
        C_1 = T.match_buffer(C, (n,))
        for {i} in range(n):
            C_1[{i}] = A_1[{i}] + B_1[{i}]""")
    _fixed_point(mod["main"])


def _matmul_loops():
    """A lowered matmul as TVM's te lowering gives it: C zeroed then accumulated in place."""
    A, B, C = (Buffer(n, "float32", (64, 64)) for n in "ABC")
    x, y, k = Var("x"), Var("y"), Var("k")
    idx = x * 64 + y
    upd = Store(C, idx, Load(C, idx) + Load(A, (x, k)) * Load(B, (k, y)))
    body = For(x, 0, 64, For(y, 0, 64, Seq([Store(C, idx, Const(0.0, "float32")), For(k, 0, 64, upd)])))
    return PrimFunc("main", [A, B, C], body, 2)


def test_flat_views_are_declared_in_the_innermost_scope_of_their_uses():
    text = aot.lower(_matmul_loops()).script()
    assert _body(text) == _text("""
        T.func_attr({"from_legacy_te_schedule": T.bool(True), "tir.noalias": T.bool(True)})
        for x, y in T.grid(64, 64):
            C_1 = T.Buffer((4096,), data=C.data)
            C_1[x * 64 + y] = T.float32(0.0)
            for k in range(64):
                A_1 = T.Buffer((4096,), data=A.data)
                B_1 = T.Buffer((4096,), data=B.data)
                C_1[x * 64 + y] = C_1[x * 64 + y] + A_1[x * 64 + k] * B_1[k * 64 + y]""")
    _fixed_point(_matmul_loops())


def test_thread_bindings_print_as_launch_thread_and_allocations_as_allocate():
    A, B = Buffer("A", "float32", (256,)), Buffer("B", "float32", (256,))
    acc = Buffer("acc", "float32", (1,), "local")
    bx, tx = Var("bx"), Var("tx")
    inner = Allocate(acc, Seq([Store(acc, 0, Load(A, bx * 64 + tx) * Const(2.0, "float32")),
                               Store(B, bx * 64 + tx, Load(acc, 0))]))
    body = For(bx, 0, 4, For(tx, 0, 64, inner, "thread_binding", "threadIdx.x"), "thread_binding", "blockIdx.x")
    f = PrimFunc("main", [A, B], body, 1)
    assert _body(aot.lower(f).script()) == _text("""
        T.func_attr({"from_legacy_te_schedule": T.bool(True), "tir.noalias": T.bool(True)})
        blockIdx_x = T.launch_thread("blockIdx.x", 4)
        threadIdx_x = T.launch_thread("threadIdx.x", 64)
        acc = T.allocate([1], "float32", "local")
        acc_1 = T.Buffer((1,), data=acc, scope="local")
        acc_1[0] = A[blockIdx_x * 64 + threadIdx_x] * T.float32(2.0)
        B[blockIdx_x * 64 + threadIdx_x] = acc_1[0]""")
    _fixed_point(f)


def test_loop_kinds_and_a_with_form_where_the_scope_goes_on():
    A, B = Buffer("A", "float32", (16,)), Buffer("B", "float32", (16,))
    i, j, u, w = Var("i"), Var("j"), Var("u"), Var("w")
    tmp = Buffer("t", "float32", (4,), "local")
    body = Seq([
        For(i, 0, 4, For(j, 0, 4, Store(B, i * 4 + j, Load(A, i * 4 + j)), "vectorize"), "parallel"),
        Allocate(tmp, For(u, 0, 4, Store(tmp, u, Load(A, u)), "unroll")),
        For(w, 2, 3, Store(B, w, Load(A, w) + Const(1.5, "float32"))),
    ])
    f = PrimFunc("main", [A, B], body, 1)
    assert _body(aot.lower(f).script()) == _text("""
        T.func_attr({"from_legacy_te_schedule": T.bool(True), "tir.noalias": T.bool(True)})
        for i in T.parallel(4):
            for j in T.vectorized(4):
                B[i * 4 + j] = A[i * 4 + j]
        with T.allocate([4], "float32", "local") as t:
            for u in T.unroll(4):
                t_1 = T.Buffer((4,), data=t, scope="local")
                t_1[u] = A[u]
        for w in range(2, 5):
            B[w] = A[w] + T.float32(1.5)""")
    _fixed_point(f)


@pytest.mark.parametrize("build,expected", [
    (lambda a, b, c: (a + b) * c, "(a + b) * c"),
    (lambda a, b, c: a - (b + c), "a - (b + c)"),
    (lambda a, b, c: a - b - c, "a - b - c"),
    (lambda a, b, c: a * b + c * a, "a * b + c * a"),
    (lambda a, b, c: (a + b) // c % a, "(a + b) // c % a"),
    (lambda a, b, c: select(lt(a, b), -(a + c), b), "T.if_then_else(a < b, -(a + c), b)"),
])
def test_operators_print_with_pythons_precedence(build, expected):
    from aot.tir.tvmscript import Printer
    a, b, c = Var("a"), Var("b"), Var("c")
    p = Printer(PrimFunc("f", [], Seq([]), 0))
    assert p._expr(build(a, b, c))[0] == expected          # as built, without simplification


def test_float_literals_print_as_tvm_prints_them():
    from aot.tir.tvmscript import Printer
    p = Printer(PrimFunc("f", [], Seq([]), 0))
    assert p.expr(Const(1.0, "float32")) == "T.float32(1.0)"
    assert p.expr(Const(0.5, "float16")) == "T.float16(0.5)"
    assert p.expr(Const(3, "int64")) == "T.int64(3)"
    assert p.expr(Const(True, "bool")) == "T.bool(True)"


def test_unflatten_recovers_per_dimension_indices():
    i, j = Var("i"), Var("j")
    got = unflatten(i * 34 + j - 35, (10, 34))
    assert [str(g) for g in got] == ["(i - 1)", "(j - 1)"]
    assert [str(g) for g in unflatten(i * 3, (10, 34))] == ["0", "(i * 3)"]
    assert [str(g) for g in unflatten(i * 68 + 1, (10, 34))] == ["(i * 2)", "1"]


# -- the TensorIR style --------------------------------------------------------------------------------
BLITZ = '''
@T.prim_func
def main(a: T.handle, b: T.handle):
    T.func_attr({"global_symbol": "main", "tir.noalias": True})
    A = T.match_buffer(a, (8,), dtype="float32")
    B = T.match_buffer(b, (8,), dtype="float32")
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + 1.0
'''

BLOCK_BODY = """
    B[vi] = A[vi] + T.float32(1.0)"""


def test_a_tensorir_module_prints_its_blocks():
    mod = IRModule({"main": parse(BLITZ)})
    assert mod.script() == _text('''
        # from tvm.script import ir as I
        # from tvm.script import tir as T

        @I.ir_module
        class Module:
            @T.prim_func
            def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
                T.func_attr({"tir.noalias": T.bool(True)})
                # with T.block("root"):
                for i in range(8):
                    with T.block("B"):
                        vi = T.axis.spatial(8, i)
                        T.reads(A[vi])
                        T.writes(B[vi])
                        B[vi] = A[vi] + T.float32(1.0)''')
    _fixed_point(mod["main"])


def test_tensorir_schedule_split_reorder_bind_rebind_the_block():
    sch = tir.Schedule(IRModule({"main": parse(BLITZ)}))
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, i1, i2 = sch.split(i, factors=[2, 2, 2])
    assert [lp.var.name for lp in (i0, i1, i2)] == ["i_0", "i_1", "i_2"]
    text = sch.mod.script()
    assert "for i_0, i_1, i_2 in T.grid(2, 2, 2):" in text
    assert "vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)" in text
    sch.reorder(i0, i2, i1)
    assert "for i_0, i_2, i_1 in T.grid(2, 2, 2):" in sch.mod.script()
    sch.bind(i0, "blockIdx.x")
    sch.bind(i2, "threadIdx.x")
    assert _body(sch.mod.script()) == _text('''
        T.func_attr({"tir.noalias": T.bool(True)})
        # with T.block("root"):
        for i_0 in T.thread_binding(2, thread="blockIdx.x"):
            for i_2 in T.thread_binding(2, thread="threadIdx.x"):
                for i_1 in range(2):
                    with T.block("B"):
                        vi = T.axis.spatial(8, i_0 * 4 + i_1 * 2 + i_2)
                        T.reads(A[vi])
                        T.writes(B[vi])
                        B[vi] = A[vi] + T.float32(1.0)''')
    _fixed_point(sch.mod["main"])
    assert isinstance(sch.get(i1), For) and isinstance(sch.get(sch.get_block("B")), Block)


def test_create_prim_func_gives_a_block_per_stage_with_init_and_remap():
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), "k")
    C = te.compute((16, 16), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")
    f = te.create_prim_func([A, B, C])
    x, y = _axis(C, 0), _axis(C, 1)
    assert _body(f.script()) == _text(f'''
        T.func_attr({{"tir.noalias": T.bool(True)}})
        # with T.block("root"):
        for {x}, {y}, k in T.grid(16, 16, 16):
            with T.block("C"):
                v_{x}, v_{y}, v_k = T.axis.remap("SSR", [{x}, {y}, k])
                T.reads(A[v_{x}, v_k], B[v_k, v_{y}])
                T.writes(C[v_{x}, v_{y}])
                with T.init():
                    C[v_{x}, v_{y}] = T.float32(0.0)
                C[v_{x}, v_{y}] = C[v_{x}, v_{y}] + A[v_{x}, v_k] * B[v_k, v_{y}]''')
    _fixed_point(f)


def _conv_with_pad():
    """topi's conv2d_nchw shape: a padding stage, then the convolution (7 loops)."""
    data = te.placeholder((1, 2, 6, 6), name="data")
    kernel = te.placeholder((3, 2, 3, 3), name="kernel")
    pad = te.compute((1, 2, 8, 8), lambda n, c, h, w: select(
        aot.tir.all(ge(h, 1), lt(h, 7), ge(w, 1), lt(w, 7)), data[n, c, h - 1, w - 1], Const(0.0, "float32")),
        name="pad_temp")
    rc, ry, rx = te.reduce_axis((0, 2), "rc"), te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    rcv, ryv, rxv = (getattr(r, "var", r) for r in (rc, ry, rx))
    conv = te.compute((1, 3, 6, 6), lambda n, f, y, x: te.sum(
        pad[n, rcv, y + ryv, x + rxv] * kernel[f, rcv, ryv, rxv], axis=[rc, ry, rx]), name="conv2d_nchw")
    return data, kernel, conv


def test_intermediate_stages_are_root_block_buffers():
    data, kernel, conv = _conv_with_pad()
    text = te.create_prim_func([data, kernel, conv]).script()
    assert '# with T.block("root"):\n    pad_temp = T.alloc_buffer((1, 2, 8, 8))' in text
    assert 'with T.block("pad_temp"):' in text and 'with T.block("conv2d_nchw"):' in text
    assert "T.reads(data[" in text and "- 1, " in text


# -- the TIR API of a user's pass ----------------------------------------------------------------------
@tir.transform.prim_func_pass(opt_level=2)
class _ReplaceConvByCall:
    """The shape of UMA's vanilla template pass: find the block, read its loops, replace the
    padding and the nest by one external call."""

    def transform_function(self, func, mod, ctx):
        found = []
        tir.stmt_functor.post_order_visit(func.body, lambda op: found.append(op.name_hint)
                                          if isinstance(op, tir.Block) else None)
        if "conv2d_nchw" not in found:
            return func
        sch = tir.Schedule(func)
        loops = sch.get_loops(sch.get_block("conv2d_nchw"))
        assert len(loops) == 7
        entry = sch.get(loops[1])
        extents = [sch.get(lp).extent.value for lp in loops[1:]]
        assert all(sch.get(lp).min.value == 0 for lp in loops)
        handles = func.buffer_map.items()

        def post(op):
            if op == entry:
                ib = tir.ir_builder.create()
                ib.emit(tir.call_extern("int32", "my_conv", *[b.data for _, b in handles], *extents))
                return ib.get()
            if isinstance(op, tir.SeqStmt):
                return op.seq[1]
            return op
        return func.with_body(tir.stmt_functor.ir_transform(func.body, None, post, ["tir.For", "tir.SeqStmt"]))


def test_a_prim_func_pass_class_rewrites_a_conv_into_an_extern_call():
    data, kernel, conv = _conv_with_pad()
    mod = IRModule({"main": te.create_prim_func([data, kernel, conv])})
    with aot.ir.transform.PassContext(opt_level=2):
        out = _ReplaceConvByCall()(mod)
    text = out.script()
    assert 'T.evaluate(T.call_extern("int32", "my_conv", data.data, kernel.data, conv2d_nchw.data, 3, 6, 6, 2, 3, 3))' \
        in text
    assert "pad_temp" not in text.split("T.evaluate")[1] and 'T.block("pad_temp")' not in text
    assert 'T.block("conv2d_nchw")' in mod.script()          # the input module is unchanged
    # as TVM's: a Sequential skips a pass above the context's opt_level; a pass called alone runs
    with aot.ir.transform.PassContext(opt_level=1):
        assert aot.ir.transform.Sequential([_ReplaceConvByCall()])(mod).script() == mod.script()
        assert _ReplaceConvByCall()(mod).script() == text
    assert aot.ir.transform.PassContext is aot.transform.PassContext


def test_ir_builder_allocates_loops_and_branches():
    ib = tir.ir_builder.create()
    buf = ib.allocate("int32", (4,), name="arr", scope="global")
    with ib.for_range(0, 4, name="i") as i:
        with ib.if_scope(lt(i, 2)):
            buf[i] = i
        with ib.else_scope():
            buf[i] = i * 2
    stmt = ib.get()
    assert isinstance(stmt, Allocate) and stmt.buffer.name == "arr"
    assert tir.decl_buffer((4,), "int32", data=buf.data) is stmt.buffer


def test_stmt_functor_visits_statements_and_expressions_children_first():
    f = parse(BLITZ)
    seen = []
    tir.stmt_functor.post_order_visit(f.body, lambda op: seen.append(type(op).__name__))
    assert seen.index("Load") < seen.index("Store") < seen.index("Block") < seen.index("For") == len(seen) - 1
    with pytest.raises(aot.AotError, match="unknown node types tir.Whatever"):
        tir.stmt_functor.ir_transform(f.body, None, lambda op: op, ["tir.Whatever"])


def test_refusals_name_what_is_wrong():
    with pytest.raises(ScriptError, match="T.axis.remap: vk is bound to k \\+ 1, which is not a loop"):
        parse('''
@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for k in range(3):
        with T.block("B"):
            vk = T.axis.remap("S", [k + 1])
            B[vk] = A[vk]
''')
    with pytest.raises(aot.AotError, match="call_extern: '1abc' is not a C identifier"):
        tir.call_extern("int32", "1abc")
    with pytest.raises(aot.AotError, match="IRModule: function 'main' is a int"):
        IRModule({"main": 3})


def test_iter_var_and_block_basics():
    v = Var("v")
    iv = IterVar(v, 8, "R")
    assert iv.dom[1].value == 8 and iv.kind == "R"
    with pytest.raises(aot.AotError):
        IterVar(v, 8, "X")
    assert T.Buffer((8,), "float32")[0] == "Buffer"


def test_lower_of_a_tensorir_module_gives_its_loops_in_the_lowered_style():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda x, y: A[x, y] + 1.0, name="B")
    sch = tir.Schedule(IRModule({"main": te.create_prim_func([A, B])}))
    i, j = sch.get_loops(sch.get_block("B"))
    fused = sch.fuse(i, j)
    assert fused.var.name == f"{i.var.name}_{j.var.name}_fused"
    text = aot.lower(sch.mod).script()
    f = fused.var.name
    assert _body(text) == _text(f"""
        T.func_attr({{"tir.noalias": T.bool(True)}})
        for {f} in range(64):
            A_1 = T.Buffer((64,), data=A.data)
            B_1 = T.Buffer((64,), data=B.data)
            B_1[{f}] = A_1[{f}] + T.float32(1.0)""")
    assert 'T.block("B")' in sch.mod.script()         # lowering made a new module
    _fixed_point(aot.lower(sch.mod)["main"])


def test_a_split_tail_prints_as_t_where_and_reads_back():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    o, n = sch.split(i, factors=[None, 4])
    text = sch.mod.script()
    assert f"for {o.var.name}, {n.var.name} in T.grid(3, 4):" in text
    assert f"T.where({o.var.name} * 4 + {n.var.name} < 10)" in text
    once = _fixed_point(sch.mod["main"])
    assert "T.where(" in once


def test_an_unnamed_block_and_augmented_assignment_read_as_tvm_writes_them():
    f = parse('''
@T.prim_func
def dw(A: T.Buffer((7, 8), "float32"), B: T.Buffer((7, 2), "float32"), C: T.Buffer((7, 7), "float32")) -> None:
    for j, i, k in T.grid(7, 7, 2):
        with T.block():
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vj, vi] = T.float32(0)
            C[vj, vi] += B[vj, vk] * A[vj, vi + vk]
''')
    text = _fixed_point(f)
    assert 'with T.block(""):' in text and "T.reads(B[vj, vk], A[vj, vi + vk])" in text
    assert "C[vj, vi] = C[vj, vi] + B[vj, vk] * A[vj, vi + vk]" in text


def test_a_split_guard_in_the_lowered_style_is_t_likely():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    text = str(aot.lower(s, [A, B], simple_mode=True))
    o, i = (getattr(v, "var", v).name.replace(".", "_") for v in (xo, xi))     # TVM's printer: i.outer -> i_outer
    assert f"for {o}, {i} in T.grid((n + 31) // 32, 32):" in text
    assert f"if T.likely({o} * 32 + {i} < n):" in text
    _fixed_point(aot.lower(s, [A, B], simple_mode=True)["main"])
