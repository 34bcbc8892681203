"""TensorIR-style script of the loop IR: Python syntax that prints from a PrimFunc and parses back
into one, with TVM's TVMScript names (`@T.prim_func`, `T.Buffer`, `T.match_buffer`, `T.serial`,
`T.grid`, `T.block`, `T.axis.spatial/reduce/remap`, `T.init`), so a TVM user's script module is
read as written. Parsing is from the source text (Python's ast), never by running it.

Blocks are TVM's unit of scheduling; the loop IR has none: a block's axes become the expressions
they are bound to, its `T.init()` becomes the statement guarded by "every reduction axis at its
first value", and the block's name is kept (func.attrs["blocks"]: name -> buffer written) so that
aot.tir.Schedule.get_block finds it. The printer writes the loop IR as it is (no blocks), so
print -> parse -> print is a fixed point.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np

from ..errors import AotError
from .expr import (INDEX, MATH_FUNCS, Bin, Call, Cast, Const, Expr, Load, Select, Unary, Var, and_, is_float, not_,
                   or_, transform)
from .flatten import flat_index
from .simplify import simplify
from .stmt import (Allocate, Barrier, Block, Buffer, Evaluate, For, IfThenElse, IterVar, PrimFunc, Seq, Store,
                   StmtMutator, walk_stmts)


from .tvmscript import ScriptError  # noqa: E402  (raised by the printer and the parser alike)


_KIND_FN = {"serial": "serial", "parallel": "parallel", "vectorize": "vectorized", "unroll": "unroll",
            "thread_binding": "thread_binding"}
_FN_KIND = {v: k for k, v in _KIND_FN.items()}
_KIND_FN["simd"] = "vectorized"     # TVMScript has no rolled-vector kind: printed as vectorized
_PY_BIN = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "<<": ast.LShift, ">>": ast.RShift, "&": ast.BitAnd,
           "|": ast.BitOr, "^": ast.BitXor}
_PY_CMP = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE, "==": ast.Eq, "!=": ast.NotEq}
_BIN_SYM = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&",
            ast.BitOr: "|", ast.BitXor: "^", ast.FloorDiv: "floordiv", ast.Mod: "floormod"}
_CMP_SYM = {v: k for k, v in _PY_CMP.items()}


# -- printing -------------------------------------------------------------------------------------------
def script(func: PrimFunc) -> str:
    """The function as TVM prints a PrimFunc (aot/tir/tvmscript.py; parse() reads it back)."""
    from .tvmscript import prim_func_script
    return prim_func_script(func) + "\n"


# -- parsing --------------------------------------------------------------------------------------------
class _Parser:
    def __init__(self, source, env, where):
        self.src, self.env, self.where = source, env, where
        self.scopes = [{}]
        self.block_axes = None
        self.n_blocks = 0
        self.lowered = False     # the text is in the lowered style (flat views, T.launch_thread)
        self.loops = {}          # id(loop var) -> (min, extent), for T.axis.remap

    def fail(self, node, msg):
        line = getattr(node, "lineno", None)
        raise ScriptError(f"{self.where}{f', line {line}' if line else ''}: {msg}")

    # names
    def lookup(self, node, name):
        for sc in reversed(self.scopes):
            if name in sc:
                return sc[name]
        v = self.env.get(name)
        if isinstance(v, (bool, int, float)) and not isinstance(v, np.ndarray):
            return Const(v, "bool" if isinstance(v, bool) else INDEX if isinstance(v, int) else "float32")
        self.fail(node, f"unknown name '{name}'")

    def bind(self, name, value):
        self.scopes[-1][name] = value

    def is_T(self, node, *attrs):
        """node is T.<attrs...> (the T namespace by any alias the script imported it as)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        return isinstance(node, ast.Name) and node.id in ("T", "tir") and tuple(reversed(parts)) == attrs

    def t_call(self, node):
        """('attr.path', call node) for a call of T.<path>(...), else None."""
        if not isinstance(node, ast.Call):
            return None
        f, parts = node.func, []
        while isinstance(f, ast.Attribute):
            parts.append(f.attr)
            f = f.value
        if isinstance(f, ast.Name) and f.id in ("T", "tir") and parts:
            return ".".join(reversed(parts))
        return None

    def literal(self, node):
        if isinstance(node, ast.Dict):
            return {self.literal(k): self.literal(v) for k, v in zip(node.keys, node.values)}
        if isinstance(node, (ast.List, ast.Tuple)):
            vals = [self.literal(e) for e in node.elts]
            return vals if isinstance(node, ast.List) else tuple(vals)
        try:
            return ast.literal_eval(node)
        except ValueError:
            v = self.expr(node)
            if isinstance(v, Const):
                return v.value
            self.fail(node, "expected a constant")

    # functions
    def function(self, fn: ast.FunctionDef):
        params, handles = [], {}
        for a in fn.args.args:
            ann = a.annotation
            if ann is not None and self.t_call(ann) == "Buffer":
                b = self.buffer_decl(ann, a.arg)
                params.append(b)
                self.bind(a.arg, b)
            elif ann is not None and (self.is_T(ann, "handle") or self.t_call(ann) == "handle"):
                handles[a.arg] = len(params)
                params.append(None)
                self.bind(a.arg, _Handle(a.arg))
            else:
                self.fail(a, f"parameter '{a.arg}' must be annotated T.Buffer(shape, dtype) or T.handle")
        attrs, body = {}, []
        for st in fn.body:
            if isinstance(st, ast.Expr) and self.t_call(st.value) == "func_attr":
                attrs.update(self.literal(st.value.args[0]))
                continue
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                continue        # a docstring
            if isinstance(st, ast.Assign) and self.t_call(st.value) == "match_buffer":
                c = st.value
                h = c.args[0].id if isinstance(c.args[0], ast.Name) else None
                if h not in handles or len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
                    self.fail(st, "T.match_buffer(handle, shape, dtype) binds a T.handle parameter to a name")
                b = self.buffer_decl(c, st.targets[0].id, skip=1)
                if b.symbolic:      # printed as a handle again, whose name the printer takes from the buffer's
                    b.name = h
                params[handles.pop(h)] = b
                self.bind(st.targets[0].id, b)
                continue
            if isinstance(st, ast.Assign) and self.size_var(st):
                continue
            body.append(st)
        if handles:
            self.fail(fn, f"handle(s) {', '.join(handles)} have no T.match_buffer")
        stmt = self.stmts(body)
        written = {id(s.buffer) for s in walk_stmts(stmt) if isinstance(s, Store)}
        stmt = _FlatReads(written).visit(stmt)
        n_in = attrs.get("num_inputs")
        if n_in is None:
            flags = [id(b) in written for b in params]
            n_in = flags.index(True) if True in flags else len(params)
            if any(not f for f in flags[n_in:]):
                self.fail(fn, "list the buffers the function only reads before those it writes (or give "
                              "T.func_attr({'num_inputs': n}))")
        if not written & {id(b) for b in params[n_in:]}:
            self.fail(fn, "the function writes none of its output buffers")
        name = attrs.get("global_symbol", fn.name)
        shown = {k: (bool(v) if k in ("tir.noalias", "from_legacy_te_schedule") else v) for k, v in attrs.items()
                 if k not in ("global_symbol", "num_inputs")}
        fattrs = {"func_attr": shown}
        if shown.get("from_legacy_te_schedule"):
            fattrs = {}             # printed in the lowered style again
        elif self.lowered:
            fattrs["lowered"] = True
        return PrimFunc(name, params, stmt, int(n_in), fattrs)

    def size_var(self, st):
        """`n = T.int32()`: a symbolic size the buffers' shapes use."""
        c = self.t_call(st.value)
        if c in ("int32", "int64") and not st.value.args and len(st.targets) == 1 and \
                isinstance(st.targets[0], ast.Name):
            self.bind(st.targets[0].id, Var(st.targets[0].id))
            return True
        return False

    def buffer_decl(self, call, name, skip=0, scope="global"):
        args = call.args[skip:]
        kw = {k.arg: k.value for k in call.keywords}
        shape_node = args[0] if args else kw["shape"]
        elts = shape_node.elts if isinstance(shape_node, (ast.Tuple, ast.List)) else [shape_node]
        shape = []
        for e in elts:
            v = self.expr(e)
            shape.append(v.value if isinstance(v, Const) else v)
        dtype = self.literal(args[1]) if len(args) > 1 else self.literal(kw["dtype"]) if "dtype" in kw else "float32"
        if "scope" in kw:
            scope = self.literal(kw["scope"])
        return Buffer(name, str(np.dtype(dtype)), tuple(shape), scope)

    # statements
    def stmts(self, body):
        out = []
        for k, st in enumerate(body):
            scoping = self.concise(st, body[k + 1:])
            if scoping is not None:
                if scoping is not _VIEW:
                    out.append(scoping)
                    break
                continue
            s = self.stmt(st)
            if s is not None:
                out.append(s)
        return out[0] if len(out) == 1 else Seq(out)

    def concise(self, st, rest):
        """TVM's concise scoping (`x = T.launch_thread(...)`, `x = T.allocate(...)`,
        `x = T.alloc_buffer(...)`: the rest of the scope is the body), and buffer views
        (`A_1 = T.Buffer(shape, data=A.data)`). None when st is an ordinary statement."""
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
            return None
        name, call = st.targets[0].id, self.t_call(st.value)
        c = st.value
        if call == "launch_thread":
            self.lowered = True
            return self.launch(c, name, lambda: self.scoped(rest, {}), st)
        if call == "allocate":
            b = self.allocation(c, name, st)
            return Allocate(b, self.scoped(rest, {name: b}))
        if call == "alloc_buffer":
            b = self.buffer_decl(c, name)
            return Allocate(b, self.scoped(rest, {name: b}))
        if call == "Buffer":
            kw = {k.arg: k.value for k in c.keywords}
            if "data" not in kw:
                self.fail(st, "a buffer view is T.Buffer(shape, dtype, data=...)")
            d = kw["data"]
            if isinstance(d, ast.Attribute) and d.attr == "data" and isinstance(d.value, ast.Name):
                target = self.lookup(d, d.value.id)
            elif isinstance(d, ast.Name):
                target = self.lookup(d, d.id)
            else:
                target = None
            if not isinstance(target, Buffer):
                self.fail(st, "T.Buffer(..., data=X): X must be a buffer's data or an allocation")
            self.bind(name, target)          # the view reads and writes the buffer's own elements
            if target.scope == "global":
                self.lowered = True             # flat views of parameters: the lowered style
            return _VIEW
        return None

    def launch(self, c, name, body_fn, node):
        tag = self.literal(c.args[0]) if isinstance(c.args[0], ast.Constant) else None
        if tag is None:
            self.fail(node, 'T.launch_thread("threadIdx.x", extent)')
        ext = self.expr(c.args[1])
        v = Var(name)
        self.scopes.append({name: v})
        try:
            body = body_fn()
        finally:
            self.scopes.pop()
        try:
            return For(v, 0, ext, body, "thread_binding", tag)
        except AotError as e:
            self.fail(node, str(e))

    def allocation(self, c, name, node):
        shape = self.literal(c.args[0])
        dtype = self.literal(c.args[1])
        scope = self.literal(c.args[2]) if len(c.args) > 2 else "global"
        if scope == "global":
            scope = "local"          # a function's own array: a C local
        return Buffer(name, str(np.dtype(dtype)), shape if isinstance(shape, (list, tuple)) else [shape], scope)

    def scoped(self, body, names=None):
        self.scopes.append(dict(names or {}))
        try:
            return self.stmts(body)
        finally:
            self.scopes.pop()

    def stmt(self, st):
        if isinstance(st, ast.Pass):
            return None
        if isinstance(st, ast.For):
            return self.loop(st)
        if isinstance(st, ast.Assign):
            return self.assign(st)
        if isinstance(st, ast.AugAssign):
            tgt = st.target
            value = ast.BinOp(left=ast.Subscript(value=tgt.value, slice=tgt.slice, ctx=ast.Load()), op=st.op,
                              right=st.value)
            return self.assign(ast.Assign(targets=[tgt], value=value, lineno=st.lineno))
        if isinstance(st, ast.If):
            return IfThenElse(self.cond(st.test), self.scoped(st.body), self.scoped(st.orelse) if st.orelse else None)
        if isinstance(st, ast.With):
            return self.with_(st)
        call = self.t_call(st.value) if isinstance(st, ast.Expr) else None
        if call in ("barrier", "tvm_storage_sync"):
            return Barrier(self.literal(st.value.args[0]) if st.value.args else "shared")
        if call in ("reads", "writes", "block_attr"):
            return None         # access regions are derived, not declared
        if call == "evaluate" and st.value.args and isinstance(st.value.args[0], ast.Constant):
            return None         # T.evaluate(0): an empty statement
        if call == "evaluate":
            return Evaluate(self.expr(st.value.args[0]))
        self.fail(st, f"statement {type(st).__name__} has no loop-IR form")

    def loop(self, st):
        it = st.iter
        kind = self.t_call(it)
        if kind == "grid":
            if not isinstance(st.target, ast.Tuple):
                self.fail(st, "for i, j in T.grid(n, m): one name per extent")
            names = [t.id for t in st.target.elts]
            exts = [self.expr(a) for a in it.args]
            if len(names) != len(exts):
                self.fail(st, "T.grid: as many names as extents")
            vars_ = [Var(n) for n in names]
            for v, e in zip(vars_, exts):
                self.loops[id(v)] = (Const(0, INDEX), e)
            body = self.scoped(st.body, dict(zip(names, vars_)))
            for v, e in reversed(list(zip(vars_, exts))):
                body = For(v, 0, e, body)
            return body
        if kind is None and isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            kind = "serial"
        if kind not in _FN_KIND:
            self.fail(st, "a loop iterates over T.serial / T.parallel / T.vectorized / T.unroll / "
                          "T.thread_binding / T.grid / range")
        if not isinstance(st.target, ast.Name):
            self.fail(st, "one loop variable per loop")
        args = [self.expr(a) for a in it.args]
        lo, hi = (Const(0, INDEX), args[0]) if len(args) == 1 else (args[0], args[1])
        kw = {k.arg: k.value for k in it.keywords}
        tag = self.literal(kw["thread"]) if "thread" in kw else None
        v = Var(st.target.id)
        self.loops[id(v)] = (lo, simplify(hi - lo))
        body = self.scoped(st.body, {st.target.id: v})
        try:
            return For(v, lo, simplify(hi - lo), body, _FN_KIND[kind], tag)
        except AotError as e:
            self.fail(st, str(e))

    def assign(self, st):
        if len(st.targets) != 1:
            self.fail(st, "one target per assignment")
        tgt = st.targets[0]
        if isinstance(tgt, ast.Subscript):
            buf = self.lookup(tgt, tgt.value.id) if isinstance(tgt.value, ast.Name) else None
            if not isinstance(buf, Buffer):
                self.fail(st, "stores go to a buffer: B[i] = ...")
            idx = self.indices(tgt.slice)
            index = idx[0] if len(idx) == 1 else flat_index(idx, buf.shape)
            if len(idx) not in (1, len(buf.shape)):
                self.fail(st, f"{buf.name} has {len(buf.shape)} dimensions, the store gives {len(idx)} indices")
            value = self.expr(st.value, buf.dtype)
            if value.dtype != buf.dtype:
                self.fail(st, f"storing {value.dtype} into {buf.name} ({buf.dtype}): cast with T.Cast")
            return Store(buf, index, value)
        call = self.t_call(st.value)
        if call in ("axis.spatial", "axis.reduce", "axis.S", "axis.R") and isinstance(tgt, ast.Name):
            kind = "R" if call in ("axis.reduce", "axis.R") else "S"
            self.axis(tgt.id, kind, st.value.args[0], self.expr(st.value.args[1]))
            return None
        if call == "axis.remap" and isinstance(tgt, (ast.Tuple, ast.Name)):
            kinds = self.literal(st.value.args[0])
            srcs = st.value.args[1].elts
            targets = tgt.elts if isinstance(tgt, ast.Tuple) else [tgt]
            if len(kinds) != len(srcs) or len(srcs) != len(targets):
                self.fail(st, "T.axis.remap: one kind letter and one loop per block axis")
            for t, k, src in zip(targets, kinds, srcs):
                v = self.expr(src)
                loop = self.loops.get(id(v))
                if loop is None:
                    self.fail(st, f"T.axis.remap: {t.id} is bound to {ast.unparse(src)}, which is not a loop")
                self.axis(t.id, k, loop, v)
            return None
        if isinstance(tgt, ast.Name):       # a scalar let: the name stands for the expression
            self.bind(tgt.id, self.expr(st.value))
            return None
        self.fail(st, "unsupported assignment")

    def axis(self, name, kind, dom, value):
        """A block iterator: dom is an extent, a (min, max) pair, or (from remap) the loop's (min, extent)."""
        if self.block_axes is None:
            self.fail(None, f"T.axis for {name} outside a T.block")
        if isinstance(dom, tuple):
            lo, ext = dom
        elif isinstance(dom, (ast.Tuple, ast.List)):
            lo, hi = self.expr(dom.elts[0]), self.expr(dom.elts[1])
            lo, ext = lo, simplify(hi - lo)
        else:
            lo, ext = Const(0, INDEX), self.expr(dom)
        v = Var(name)
        self.block_axes.append((IterVar(v, ext, kind, lo), value))
        self.bind(name, v)

    def with_(self, st):
        item = st.items[0]
        call = self.t_call(item.context_expr)
        if call == "block":
            name = self.literal(item.context_expr.args[0]) if item.context_expr.args else ""
            return self.block(st, name)
        if call == "allocate":
            if not isinstance(item.optional_vars, ast.Name):
                self.fail(st, "with T.allocate(shape, dtype, scope) as name:")
            b = self.allocation(item.context_expr, item.optional_vars.id, st)
            return Allocate(b, self.scoped(st.body, {b.name: b}))
        if call == "launch_thread":
            if not isinstance(item.optional_vars, ast.Name):
                self.fail(st, "with T.launch_thread(tag, extent) as name:")
            return self.launch(item.context_expr, item.optional_vars.id, lambda: self.stmts(st.body), st)
        self.fail(st, "with-statements are T.block(name), T.init(), T.allocate(...) or T.launch_thread(...)")

    def block(self, st, name):
        self.n_blocks += 1
        self.scopes.append({})
        outer_axes, self.block_axes = self.block_axes, []
        init, pred, body, init_ast, pred_ast = None, None, [], None, None
        try:
            for s in st.body:
                if isinstance(s, ast.With) and self.t_call(s.items[0].context_expr) == "init":
                    init_ast = s.body
                    continue
                if isinstance(s, ast.Expr) and self.t_call(s.value) == "where":
                    pred_ast = s.value.args[0]
                    continue
                body.append(s)
            stmt = self.stmts(body)            # binds the block's axes, which init and where read
            if init_ast is not None:
                init = self.scoped(init_ast)
            if pred_ast is not None:
                pred = self.cond(pred_ast)
            axes = self.block_axes
        finally:
            self.scopes.pop()
            self.block_axes = outer_axes
        if init is not None and not any(iv.kind == "R" for iv, _ in axes):
            self.fail(st, f"block {name}: T.init() needs a reduction axis (T.axis.reduce or 'R' in remap)")
        return Block(name, [iv for iv, _ in axes], [v for _, v in axes], stmt, init, pred)

    # expressions
    def indices(self, sl):
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        return [self.expr(e) for e in elts]

    def cond(self, node):
        e = self.expr(node)
        if e.dtype != "bool":
            self.fail(node, "a condition must be a comparison")
        return e

    def expr(self, node, hint=None) -> Expr:
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return Const(v, "bool")
            if isinstance(v, int):
                return Const(v, INDEX)
            if isinstance(v, float):
                return Const(v, hint if hint and is_float(hint) else "float32")
            self.fail(node, f"constant {v!r} has no loop-IR type")
        if isinstance(node, ast.Name):
            v = self.lookup(node, node.id)
            if isinstance(v, Buffer):
                self.fail(node, f"buffer {node.id} used as a value: index it")
            return v
        if isinstance(node, ast.Subscript):
            buf = self.lookup(node, node.value.id) if isinstance(node.value, ast.Name) else None
            if not isinstance(buf, Buffer):
                self.fail(node, "only buffers are indexed")
            idx = self.indices(node.slice)
            if len(idx) not in (1, len(buf.shape)):
                self.fail(node, f"{buf.name} has {len(buf.shape)} dimensions, {len(idx)} indices given")
            return Load(buf, tuple(idx) if len(idx) > 1 else idx[0])
        if isinstance(node, ast.BinOp):
            a, b = self.expr(node.left, hint), self.expr(node.right, hint)
            a, b = self.unify(node, a, b)
            if isinstance(node.op, ast.Div):
                return Bin("/", a, b)
            op = _BIN_SYM.get(type(node.op))
            if op is None:
                self.fail(node, f"operator {type(node.op).__name__} has no loop-IR form")
            return Bin(op, a, b)
        if isinstance(node, ast.UnaryOp):
            a = self.expr(node.operand, hint)
            if isinstance(node.op, ast.USub):
                return Unary("neg", a) if not isinstance(a, Const) else Const(-a.value, a.dtype)
            if isinstance(node.op, ast.Invert):
                return Unary("bnot", a)
            if isinstance(node.op, ast.Not):
                return not_(a)
            return a
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                self.fail(node, "one comparison at a time (combine with T.And)")
            a, b = self.unify(node, self.expr(node.left), self.expr(node.comparators[0]))
            return Bin(_CMP_SYM[type(node.ops[0])], a, b)
        if isinstance(node, ast.BoolOp):
            vals = [self.cond(v) for v in node.values]
            out = vals[0]
            for v in vals[1:]:
                out = and_(out, v) if isinstance(node.op, ast.And) else or_(out, v)
            return out
        if isinstance(node, ast.IfExp):
            t, f = self.unify(node, self.expr(node.body, hint), self.expr(node.orelse, hint))
            return Select(self.cond(node.test), t, f)
        fn = self.t_call(node)
        if fn is not None:
            return self.t_expr(node, fn, hint)
        self.fail(node, f"expression {type(node).__name__} has no loop-IR form")

    def unify(self, node, a, b):
        """A Python literal takes the other side's type (2 * x for a float x is a float 2)."""
        if a.dtype == b.dtype:
            return a, b
        if isinstance(b, Const) and b.dtype in (INDEX, "float32"):
            return a, Const(b.value, a.dtype)
        if isinstance(a, Const) and a.dtype in (INDEX, "float32"):
            return Const(a.value, b.dtype), b
        self.fail(node, f"operands of types {a.dtype} and {b.dtype}: cast one with T.Cast")

    def t_expr(self, node, fn, hint):
        args = node.args
        kw = {k.arg: k.value for k in node.keywords}
        try:
            np.dtype(fn)
            is_type = fn not in MATH_FUNCS
        except TypeError:
            is_type = False
        if is_type and len(args) == 1:          # T.float32(1.5), T.int64(3)
            v = self.expr(args[0], fn)
            return Const(v.value, fn) if isinstance(v, Const) else Cast(fn, v)
        if fn == "Cast":
            return Cast(str(np.dtype(self.literal(args[0]))), self.expr(args[1]))
        if fn in ("min", "max"):
            a, b = self.unify(node, self.expr(args[0], hint), self.expr(args[1], hint))
            return Bin(fn, a, b)
        if fn in ("truncdiv", "truncmod", "floordiv", "floormod", "Div", "FloorDiv", "FloorMod"):
            a, b = self.unify(node, self.expr(args[0]), self.expr(args[1]))
            return Bin({"truncdiv": "/", "truncmod": "%", "Div": "/", "FloorDiv": "floordiv",
                        "FloorMod": "floormod"}.get(fn, fn), a, b)
        if fn == "likely":
            return self.cond(args[0])
        if fn in ("And", "Or"):
            return (and_ if fn == "And" else or_)(self.cond(args[0]), self.cond(args[1]))
        if fn == "Not":
            return not_(self.cond(args[0]))
        if fn in ("if_then_else", "Select"):
            t, f = self.unify(node, self.expr(args[1], hint), self.expr(args[2], hint))
            return Select(self.cond(args[0]), t, f)
        if fn in MATH_FUNCS:
            vals = [self.expr(a, hint) for a in args]
            dtype = self.literal(kw["dtype"]) if "dtype" in kw else None
            return Call(fn, vals, dtype)
        self.fail(node, f"T.{fn} is not supported in expressions")


class _Handle:
    """A T.handle parameter before its T.match_buffer."""

    def __init__(self, name):
        self.name = name


_VIEW = object()        # a statement that only names a view of a buffer


class _FlatReads(StmtMutator):
    """Reads of a written buffer take the flat form its stores have, so that a read and a store of
    one element are one index expression (what parallel's and fission's checks compare)."""

    def __init__(self, written):
        self.written = written

    def mutate_expr(self, e):
        return transform(e, lambda x: Load(x.buffer, flat_index(x.indices, x.buffer.shape))
                         if isinstance(x, Load) and id(x.buffer) in self.written and len(x.indices) > 1 else None)


def source_of(fn):
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        raise ScriptError(f"the source of {getattr(fn, '__name__', fn)} cannot be read (define it in a file)")


def parse(source: str, env=None, where="script") -> PrimFunc:
    """A PrimFunc from the text of one @T.prim_func function."""
    tree = ast.parse(textwrap.dedent(source))
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not fns:     # a module's text (@I.ir_module class Module:) with one function
        fns = [n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body if isinstance(n, ast.FunctionDef)]
    if len(fns) != 1:
        raise ScriptError(f"{where}: expected one function definition")
    return _Parser(source, env or {}, f"{where} ({fns[0].name})").function(fns[0])


def parse_module(cls_source: str, env=None, where="module") -> dict:
    """{name: PrimFunc} of the @T.prim_func methods of an ir_module class's source."""
    tree = ast.parse(textwrap.dedent(cls_source))
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    if cls is None:
        raise ScriptError(f"{where}: expected a class")
    out = {}
    for fn in cls.body:
        if isinstance(fn, ast.FunctionDef):
            f = _Parser(cls_source, env or {}, f"{where}.{fn.name}").function(fn)
            out[fn.name] = f
    if not out:
        raise ScriptError(f"{where}: the class defines no @T.prim_func")
    return out


