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
from .stmt import (Allocate, Barrier, Buffer, For, IfThenElse, PrimFunc, Seq, Store, StmtMutator, StmtVisitor,
                   walk_stmts)


class ScriptError(AotError):
    pass


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
class _Printer(StmtVisitor):
    def __init__(self):
        self.lines, self.indent, self.names, self.taken = [], 1, {}, set()

    def name(self, obj, base):
        if id(obj) not in self.names:
            n, k = base if base.isidentifier() else "v", 1
            while n in self.taken:
                n, k = f"{base}_{k}", k + 1
            self.names[id(obj)] = n
            self.taken.add(n)
        return self.names[id(obj)]

    def emit(self, text):
        self.lines.append("    " * self.indent + text)

    def nested(self, s):
        self.indent += 1
        self.visit(s)
        self.indent -= 1

    def expr(self, e) -> str:
        if isinstance(e, Var):
            return self.name(e, e.name)
        if isinstance(e, Const):
            if e.dtype == "bool":
                return "True" if e.value else "False"
            if e.dtype == INDEX:
                return repr(e.value)
            return f"T.{e.dtype}({e.value!r})"
        if isinstance(e, Bin):
            a, b = self.expr(e.a), self.expr(e.b)
            if e.op in ("min", "max"):
                return f"T.{e.op}({a}, {b})"
            if e.op == "floordiv":
                return f"({a} // {b})"
            if e.op == "floormod":
                return f"({a} % {b})"
            if e.op == "/":
                return f"({a} / {b})" if is_float(e.dtype) else f"T.truncdiv({a}, {b})"
            if e.op == "%":
                return f"T.truncmod({a}, {b})"
            if e.op in ("&&", "||"):
                return f"T.{'And' if e.op == '&&' else 'Or'}({a}, {b})"
            return f"({a} {e.op} {b})"
        if isinstance(e, Unary):
            return {"neg": "(-{})", "not": "T.Not({})", "bnot": "(~{})"}[e.op].format(self.expr(e.a))
        if isinstance(e, Select):
            return f"T.if_then_else({self.expr(e.cond)}, {self.expr(e.t)}, {self.expr(e.f)})"
        if isinstance(e, Call):
            args = ", ".join(self.expr(a) for a in e.args)
            return f"T.{e.fn}({args})" if e.dtype == e.args[0].dtype else f'T.{e.fn}({args}, dtype="{e.dtype}")'
        if isinstance(e, Cast):
            return f'T.Cast("{e.dtype}", {self.expr(e.a)})'
        if isinstance(e, Load):
            return f"{self.name(e.buffer, e.buffer.name)}[{', '.join(self.expr(i) for i in e.indices)}]"
        raise ScriptError(f"the script has no form for {type(e).__name__}")

    def visit_For(self, s):
        v = self.name(s.var, s.var.name)
        lo, hi = self.expr(s.min), self.expr(simplify(s.min + s.extent))
        tag = f', thread="{s.thread_tag}"' if s.thread_tag else ""
        self.emit(f"for {v} in T.{_KIND_FN[s.kind]}({lo}, {hi}{tag}):")
        self.nested(s.body)

    def visit_Seq(self, s):
        if not s.stmts:
            self.emit("pass")
        for x in s.stmts:
            self.visit(x)

    def visit_Store(self, s):
        self.emit(f"{self.name(s.buffer, s.buffer.name)}[{self.expr(s.index)}] = {self.expr(s.value)}")

    def visit_Allocate(self, s):
        b = s.buffer
        self.emit(f'with T.allocate({list(b.shape)}, "{b.dtype}", "{b.scope}") as {self.name(b, b.name)}:')
        self.nested(s.body)

    def visit_IfThenElse(self, s):
        self.emit(f"if {self.expr(s.cond)}:")
        self.nested(s.then)
        if s.else_ is not None:
            self.emit("else:")
            self.nested(s.else_)

    def visit_Barrier(self, s):
        self.emit(f'T.barrier("{s.scope}")')


def script(func: PrimFunc) -> str:
    """The function as a script (decorated with @T.prim_func; parse() reads it back)."""
    p = _Printer()
    params = []
    for b in func.params:
        params.append(f'{p.name(b, b.name)}: T.Buffer({tuple(b.shape)!r}, "{b.dtype}")')
    p.emit(f"T.func_attr({{\"global_symbol\": \"{func.name}\", \"num_inputs\": {func.num_inputs}}})")
    p.visit(func.body)
    return "\n".join(["@T.prim_func", f"def {func.name}({', '.join(params)}):"] + p.lines) + "\n"


# -- parsing --------------------------------------------------------------------------------------------
class _Parser:
    def __init__(self, source, env, where):
        self.src, self.env, self.where = source, env, where
        self.scopes = [{}]
        self.blocks = {}

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
            elif ann is not None and self.is_T(ann, "handle"):
                handles[a.arg] = len(params)
                params.append(None)
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
                params[handles.pop(h)] = b
                self.bind(st.targets[0].id, b)
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
        return PrimFunc(name, params, stmt, int(n_in), {"blocks": dict(self.blocks)} if self.blocks else {})

    def buffer_decl(self, call, name, skip=0):
        args = call.args[skip:]
        kw = {k.arg: k.value for k in call.keywords}
        shape = self.literal(args[0] if args else kw["shape"])
        dtype = self.literal(args[1]) if len(args) > 1 else self.literal(kw["dtype"]) if "dtype" in kw else "float32"
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return Buffer(name, str(np.dtype(dtype)), shape)

    # statements
    def stmts(self, body):
        out = []
        for st in body:
            s = self.stmt(st)
            if s is not None:
                out.append(s)
        return out[0] if len(out) == 1 else Seq(out)

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
        if isinstance(st, ast.Expr) and self.t_call(st.value) == "barrier":
            return Barrier(self.literal(st.value.args[0]) if st.value.args else "shared")
        if isinstance(st, ast.Expr) and self.t_call(st.value) in ("reads", "writes", "block_attr"):
            return None         # access regions are derived, not declared
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
            self.bind(tgt.id, self.expr(st.value.args[1]))
            return None
        if call == "axis.remap" and isinstance(tgt, ast.Tuple):
            kinds = self.literal(st.value.args[0])
            srcs = st.value.args[1].elts
            if len(kinds) != len(srcs) or len(srcs) != len(tgt.elts):
                self.fail(st, "T.axis.remap: one kind letter and one loop per block axis")
            for t, s in zip(tgt.elts, srcs):
                self.bind(t.id, self.expr(s))
            return None
        if isinstance(tgt, ast.Name):       # a scalar let: the name stands for the expression
            self.bind(tgt.id, self.expr(st.value))
            return None
        self.fail(st, "unsupported assignment")

    def with_(self, st):
        item = st.items[0]
        call = self.t_call(item.context_expr)
        if call == "block":
            name = self.literal(item.context_expr.args[0]) if item.context_expr.args else f"block{len(self.blocks)}"
            return self.block(st, name)
        if call == "allocate":
            c = item.context_expr
            shape = self.literal(c.args[0])
            dtype = self.literal(c.args[1])
            scope = self.literal(c.args[2]) if len(c.args) > 2 else "local"
            if not isinstance(item.optional_vars, ast.Name):
                self.fail(st, "with T.allocate(shape, dtype, scope) as name:")
            b = Buffer(item.optional_vars.id, str(np.dtype(dtype)), shape if isinstance(shape, (list, tuple))
                       else [shape], scope)
            return Allocate(b, self.scoped(st.body, {b.name: b}))
        self.fail(st, "with-statements are T.block(name), T.init() or T.allocate(...)")

    def block(self, st, name):
        self.scopes.append({})
        reduce_axes, init, body = [], None, []
        try:
            for s in st.body:
                c = self.t_call(s.value) if isinstance(s, (ast.Assign, ast.Expr)) else None
                if isinstance(s, ast.Assign) and c in ("axis.reduce", "axis.R"):
                    reduce_axes.append(self.expr(s.value.args[1]))
                if isinstance(s, ast.Assign) and c == "axis.remap":
                    kinds = self.literal(s.value.args[0])
                    reduce_axes += [self.expr(a) for k, a in zip(kinds, s.value.args[1].elts) if k == "R"]
                if isinstance(s, ast.With) and self.t_call(s.items[0].context_expr) == "init":
                    init = self.scoped(s.body)
                    continue
                r = self.stmt(s)
                if r is not None:
                    body.append(r)
        finally:
            self.scopes.pop()
        upd = body[0] if len(body) == 1 else Seq(body)
        written = [s.buffer for s in walk_stmts(upd) if isinstance(s, Store)]
        if written:
            self.blocks[name] = written[-1].name
        if init is None:
            return upd
        if not reduce_axes:
            self.fail(st, f"block {name}: T.init() needs a reduction axis (T.axis.reduce or 'R' in remap)")
        first = None
        for a in reduce_axes:        # the first iteration of every reduction axis (loops start at 0 here)
            c = Bin("==", a, Const(0, a.dtype))
            first = c if first is None else and_(first, c)
        return Seq([IfThenElse(first, init), upd])

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
        if fn in ("truncdiv", "truncmod", "floordiv", "floormod"):
            a, b = self.unify(node, self.expr(args[0]), self.expr(args[1]))
            return Bin({"truncdiv": "/", "truncmod": "%"}.get(fn, fn), a, b)
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


