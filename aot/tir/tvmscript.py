"""The loop IR printed as TVM prints TIR (TVMScript): `# from tvm.script import tir as T` headers,
`@I.ir_module class Module:`, `@T.prim_func def main(A: T.Buffer((n,), "float32"), ...)`, loops as
`range` / `T.grid` / `T.parallel` / `T.vectorized` / `T.unroll` / `T.thread_binding`, blocks with
`T.axis.*`, `T.reads` / `T.writes` / `T.init`, and Python's operator precedence.

Two styles, as TVM has them:
- TensorIR (a function holding Blocks, or a parsed script): buffers indexed per dimension, the
  implicit root block as a comment with its `T.alloc_buffer`s, thread-bound loops as
  `T.thread_binding`;
- lowered (what tvm.lower gives for a te schedule): buffers flattened, each multi-dimensional
  buffer read and written through a flat view `A_1 = T.Buffer((size,), data=A.data)` declared in
  the innermost scope holding all its uses, thread-bound loops as `T.launch_thread`, allocations
  as `T.allocate` plus a view, and `T.func_attr({"from_legacy_te_schedule": ...})`.
Indices are simplified before printing. aot/tir/script.py parses both styles back.
"""
from __future__ import annotations

from ..errors import AotError
from .expr import (INDEX, Bin, Call, Cast, Const, Load, Select, Unary, Var, free_vars, is_float, walk)
from .flatten import flat_index
from .simplify import const_value, linear_form, simplify, simplify_display
from .stmt import (Allocate, Block, BufferData, For, IfThenElse, PrimFunc, Seq, Store, own_exprs,
                   stmt_children, walk_stmts)

IND = "    "


class ScriptError(AotError):
    """A script that cannot be read, or a node that has no script form."""

# Python's precedence, lowest first
_PREC = {"or": 1, "and": 2, "not": 3, "cmp": 4, "|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9,
         "*": 10, "/": 10, "//": 10, "%": 10, "neg": 11, "~": 11, "atom": 20}
_CMP = ("<", "<=", ">", ">=", "==", "!=")
_SUGAR = {"+": "+", "-": "-", "*": "*", "floordiv": "//", "floormod": "%", "&&": "and", "||": "or",
          "<<": "<<", ">>": ">>", "&": "&", "|": "|", "^": "^"}


def has_blocks(body) -> bool:
    return any(isinstance(s, Block) for s in walk_stmts(body))


def _float_literal(v: float) -> str:
    if v != v or v in (float("inf"), float("-inf")):
        return f'"{v}"'
    if float(v).is_integer() and abs(v) < 1e16:
        return f"{v:.1f}"
    return f"{v:.17g}"


def unflatten(index, shape):
    """A flat row-major index of a buffer of `shape` as one index per dimension, when its linear
    form splits by the strides (how the script's multi-dimensional accesses were flattened);
    None when it does not."""
    if len(shape) <= 1:
        return [index]
    if any(not isinstance(n, int) for n in shape):
        return None
    lin = linear_form(index)
    if lin is None:
        return None
    strides, acc = [], 1
    for n in reversed(shape):
        strides.insert(0, acc)
        acc *= n
    parts = [[] for _ in shape]
    for atom, c in lin[0].values():
        if c == 0:
            continue
        d = next((k for k, st in enumerate(strides) if c % st == 0), None)
        if d is None:
            return None
        parts[d].append((atom, c // strides[d]))
    # the constant by truncation toward zero: a window's -1 stays -1 in each dimension
    rem, consts = lin[1], []
    for st in strides:
        q = abs(rem) // st * (1 if rem >= 0 else -1)
        consts.append(q)
        rem -= q * st
    out = []
    for terms, c in zip(parts, consts):
        e = None
        for atom, k in terms:
            t = atom if k == 1 else atom * k
            e = t if e is None else e + t
        if e is None:
            e = Const(c, INDEX)
        elif c:
            e = e + c if c > 0 else e - (-c)
        out.append(simplify(e))
    return out


class _Frame:
    def __init__(self, key):
        self.key, self.lines = key, []


class Printer:
    def __init__(self, func: PrimFunc):
        self.func = func
        self.blocks = has_blocks(func.body)
        self.legacy = not self.blocks and ("func_attr" not in func.attrs or bool(func.attrs.get("lowered")))
        self.names, self.taken = {}, set()
        self.frames = []
        self.views = {}           # id(buffer) -> (view name, declared?) in the lowered style
        self.lca = {}             # id(buffer) -> frame key where its view is declared
        self.allocated = {}       # id(buffer) -> the allocation's data-pointer name
        self.ranges = {}
        self._loops = {}          # id(loop var) -> (min, extent) of every loop, for T.axis.remap

    # -- names ---------------------------------------------------------------------------------------
    def fresh(self, base):
        base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in base) or "v"
        if base[0].isdigit():
            base = "v" + base
        n, k = base, 1
        while n in self.taken:
            n, k = f"{base}_{k}", k + 1
        self.taken.add(n)
        return n

    def name(self, obj, base):
        key = obj if isinstance(obj, tuple) else id(obj)
        n = self.names.get(key)
        if n is None:
            n = self.names[key] = self.fresh(base)
        return n

    # -- expressions ---------------------------------------------------------------------------------
    def expr(self, e) -> str:
        return self._expr(e)[0]

    def index(self, e) -> str:
        """An index, extent or bound: simplified, as TVM's arith leaves them."""
        return self._expr(simplify_display(e, self.ranges))[0]

    def _expr(self, e):
        """(text, precedence)."""
        if isinstance(e, BufferData):
            if id(e.buffer) in self.allocated:
                return self.allocated[id(e.buffer)], 20
            return f"{self.name(e.buffer, e.buffer.name)}.data", 20
        if isinstance(e, Var):
            return self.name(e, e.name), 20
        if isinstance(e, Const):
            if e.dtype == "bool":
                return f"T.bool({e.value})", 20
            if is_float(e.dtype):
                return f"T.{e.dtype}({_float_literal(e.value)})", 20
            if e.dtype == INDEX:
                return (str(e.value), 20) if e.value >= 0 else (str(e.value), 11)
            return f"T.{e.dtype}({e.value})", 20
        if isinstance(e, Bin):
            return self._bin(e)
        if isinstance(e, Unary):
            if e.op == "neg":
                a, p = self._expr(e.a)
                return "-" + (a if p >= 11 else f"({a})"), 11
            if e.op == "bnot":
                a, p = self._expr(e.a)
                return "~" + (a if p >= 11 else f"({a})"), 11
            a, p = self._expr(e.a)
            return "not " + (a if p > 3 else f"({a})"), 3
        if isinstance(e, Select):
            return f"T.if_then_else({self.expr(e.cond)}, {self.expr(e.t)}, {self.expr(e.f)})", 20
        if isinstance(e, Call):
            args = ", ".join(self.expr(a) for a in e.args)
            if e.args and e.dtype != e.args[0].dtype:
                return f'T.{e.fn}({args}, dtype="{e.dtype}")', 20
            return f"T.{e.fn}({args})", 20
        if isinstance(e, Cast):
            return f'T.Cast("{e.dtype}", {self.expr(e.a)})', 20
        if isinstance(e, Load):
            return self.access(e.buffer, e.indices), 20
        text = getattr(e, "script", None)
        if text is not None:                  # expression kinds of the TIR API (extern calls)
            return text(self.expr), 20
        raise ScriptError(f"the script has no form for {type(e).__name__}")

    def _bin(self, e):
        op = e.op
        if op in ("min", "max"):
            return f"T.{op}({self.expr(e.a)}, {self.expr(e.b)})", 20
        if op == "/" and not is_float(e.dtype):
            return f"T.Div({self.expr(e.a)}, {self.expr(e.b)})", 20
        if op == "%":
            return f"T.truncmod({self.expr(e.a)}, {self.expr(e.b)})", 20
        sym = "/" if op == "/" else op if op in _CMP else _SUGAR[op]
        prec = _PREC["cmp"] if op in _CMP else _PREC[sym]
        ea, eb = e.a, e.b
        if op in _CMP and ea.dtype.startswith(("int", "uint")):    # the compared indices, simplified
            ea, eb = simplify_display(ea, self.ranges), simplify_display(eb, self.ranges)
        a, pa = self._expr(ea)
        b, pb = self._expr(eb)
        if op in _CMP:
            a = a if pa > prec else f"({a})"
            b = b if pb > prec else f"({b})"
        else:
            a = a if pa >= prec else f"({a})"
            b = b if pb > prec else f"({b})"
        return f"{a} {sym} {b}", prec

    # -- buffers ------------------------------------------------------------------------------------
    def buffer_ref(self, buf):
        """The name the body uses for a buffer (its flat view in the lowered style)."""
        if id(buf) in self.views:
            return self.view(buf)
        return self.name(buf, buf.name)

    def view(self, buf):
        name, declared = self.views[id(buf)]
        if not declared:
            frame = next((f for f in reversed(self.frames) if f.key == self.lca.get(id(buf))), self.frames[-1])
            size = simplify(flat_size(buf.shape))
            data = self.allocated.get(id(buf)) or f"{self.name(buf, buf.name)}.data"
            extra = f', scope="{buf.scope}"' if buf.scope != "global" else ""
            dt = "" if buf.dtype == "float32" else f', "{buf.dtype}"'
            frame.lines.append(f"{name} = T.Buffer(({self.expr(size)},){dt}, data={data}{extra})")
            self.views[id(buf)] = (name, True)
        return name

    def access(self, buf, indices):
        indices = list(indices)
        if id(buf) in self.views:
            idx = indices[0] if len(indices) == 1 else flat_index(indices, buf.shape)
            return f"{self.view(buf)}[{self.index(idx)}]"
        if not self.legacy and len(indices) == 1 and len(buf.shape) > 1:
            multi = unflatten(simplify_display(indices[0], self.ranges), buf.shape)
            if multi is not None:
                indices = multi
        return f"{self.name(buf, buf.name)}[{', '.join(self.index(i) for i in indices)}]"

    # -- statements ---------------------------------------------------------------------------------
    def emit(self, text):
        self.frames[-1].lines.append(text)

    def open(self, key):
        f = _Frame(key)
        self.frames.append(f)
        return f

    def close(self):
        return self.frames.pop().lines

    def body(self, s, key):
        """Print s in a new frame; returns its lines (indented by the caller)."""
        self.open(key)
        self.stmt(s, last=True)
        lines = self.close()
        return lines or ["pass"]

    def stmt(self, s, last=False):
        if isinstance(s, Seq):
            if not s.stmts:
                self.emit("T.evaluate(0)")
            for k, x in enumerate(s.stmts):
                self.stmt(x, last=last and k == len(s.stmts) - 1)
            return
        getattr(self, "s_" + type(s).__name__)(s, last)

    def nested(self, header, s, key):
        lines = self.body(s, key)
        self.emit(header)
        for ln in lines:
            self.emit(IND + ln)

    def s_For(self, s, last):
        outer = self.ranges
        if s.kind == "thread_binding" and self.legacy:
            self.ranges = _with_range(outer, s)
            name = self.name(s.var, s.thread_tag.replace(".", "_"))
            call = f'T.launch_thread("{s.thread_tag}", {self.index(s.extent)})'
            self.scoped(f"{name} = {call}", f"with {call} as {name}:", s.body, id(s), last)
            self.ranges = outer
            return
        grid = grid_loops(s)
        for lp in grid:
            self.ranges = _with_range(self.ranges, lp)
        names = [self.name(lp.var, lp.var.name) for lp in grid]
        if len(grid) > 1:
            header = f"for {', '.join(names)} in T.grid({', '.join(self.index(lp.extent) for lp in grid)}):"
        else:
            lo = const_value(s.min)
            rng = self.index(s.extent) if lo == 0 else f"{self.index(s.min)}, {self.index(s.min + s.extent)}"
            fn = {"serial": "range", "parallel": "T.parallel", "vectorize": "T.vectorized", "simd": "T.vectorized",
                  "unroll": "T.unroll", "thread_binding": "T.thread_binding"}[s.kind]
            tag = f', thread="{s.thread_tag}"' if s.thread_tag else ""
            header = f"for {names[0]} in {fn}({rng}{tag}):"
        self.nested(header, grid[-1].body, id(s))
        self.ranges = outer

    def scoped(self, concise, with_form, body, key, last):
        """TVM's concise scoping: the last statement of a scope binds its name and the rest of the
        scope is its body, at the same indentation; elsewhere a with-block."""
        if last:
            self.emit(concise)
            self.open(key)
            self.stmt(body, last=True)
            for ln in self.close():
                self.emit(ln)
        else:
            self.nested(with_form, body, key)

    def s_Allocate(self, s, last):
        b = s.buffer
        if self.blocks or (not self.legacy and b.scope == "global"):
            self.emit(f"{self.name(b, b.name)} = T.alloc_buffer({self.shape(b)}{self.dtype_arg(b)}"
                      f"{'' if b.scope == 'global' else f', scope={chr(34)}{b.scope}{chr(34)}'})")
            self.stmt(s.body, last)
            return
        data = self.name(("data", id(b)), b.name)
        self.allocated[id(b)] = data
        self.views[id(b)] = (self.fresh(b.name), False)
        shape = ", ".join(self.expr(n) if not isinstance(n, int) else str(n) for n in
                          ([simplify(flat_size(b.shape))] if self.legacy else b.shape))
        call = f'T.allocate([{shape}], "{b.dtype}", "{b.scope}")'
        self.scoped(f"{data} = {call}", f"with {call} as {data}:", s.body, id(s), last)

    def shape(self, b):
        dims = [self.expr(n) if not isinstance(n, int) else str(n) for n in b.shape]
        return f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"

    @staticmethod
    def dtype_arg(b):
        return "" if b.dtype == "float32" else f', "{b.dtype}"'

    def s_Store(self, s, last):
        value = self.expr(s.value)
        self.emit(f"{self.access(s.buffer, [s.index])} = {value}")

    def s_IfThenElse(self, s, last):
        if self.blocks and s.else_ is None and isinstance(s.then, Block) and s.then.predicate is None:
            self.s_Block(s.then.replace(predicate=s.cond), last)     # a split's tail guard: TVM's T.where
            return
        cond = self.expr(simplify(s.cond, self.ranges))
        if self.legacy and s.else_ is None and isinstance(s.cond, Bin) and s.cond.op == "<":
            cond = f"T.likely({cond})"        # a split's tail guard, as te lowering marks it
        self.nested(f"if {cond}:", s.then, (id(s), "then"))
        if s.else_ is not None:
            self.nested("else:", s.else_, (id(s), "else"))

    def s_Barrier(self, s, last):
        self.emit(f'T.tvm_storage_sync("{s.scope}")')

    def s_Evaluate(self, s, last):
        self.emit(f"T.evaluate({self.expr(s.call)})")

    def s_Block(self, s, last):
        if s.name == "root" and not s.iter_vars:
            self.stmt(s.body, last)
            return
        self.open(id(s))
        pending = []        # iterators bound to a loop with the same bounds: printed as one T.axis.remap

        def flush():
            if len(pending) == 1:
                single(*pending[0])
            elif pending:
                lhs = ", ".join(self.name(iv.var, iv.var.name) for iv, _ in pending)
                kinds = "".join(iv.kind for iv, _ in pending)
                vals = ", ".join(self.expr(v) for _, v in pending)
                self.emit(f'{lhs} = T.axis.remap("{kinds}", [{vals}])')
            pending.clear()

        def single(iv, v):
            dom = self.expr(iv.extent) if const_value(iv.dom_min) == 0 else \
                f"({self.expr(iv.dom_min)}, {self.expr(simplify(iv.dom_min + iv.extent))})"
            kind = "spatial" if iv.kind == "S" else "reduce"
            self.emit(f"{self.name(iv.var, iv.var.name)} = T.axis.{kind}({dom}, {self.index(v)})")
        loops = self._loops
        for iv, v in zip(s.iter_vars, s.values):
            lp = loops.get(id(v)) if isinstance(v, Var) else None
            if lp is not None and lp[0].key() == iv.dom_min.key() and lp[1].key() == iv.extent.key():
                pending.append((iv, v))
            else:
                flush()
                single(iv, v)
        flush()
        if s.predicate is not None:
            self.emit(f"T.where({self.expr(simplify(s.predicate, self.ranges))})")
        reads, writes = block_regions(s)
        self.emit(f"T.reads({', '.join(self.region(b, r) for b, r in reads)})")
        self.emit(f"T.writes({', '.join(self.region(b, r) for b, r in writes)})")
        if s.init is not None:
            lines = self.body(s.init, (id(s), "init"))
            self.emit("with T.init():")
            for ln in lines:
                self.emit(IND + ln)
        self.stmt(s.body, last=True)
        lines = self.close()
        self.emit(f'with T.block("{s.name}"):')
        for ln in lines:
            self.emit(IND + ln)

    def region(self, buf, dims):
        parts = []
        for lo, hi in dims:
            if hi is None:
                parts.append(self.expr(lo))
            else:
                parts.append(f"{self.expr(lo)}:{self.expr(hi)}")
        return f"{self.name(buf, buf.name)}[{', '.join(parts)}]"

    # -- the function ------------------------------------------------------------------------------
    def function(self, in_module=False):
        f = self.func
        self._loops = {id(lp.var): (lp.min, lp.extent) for lp in walk_stmts(f.body) if isinstance(lp, For)}
        if self.legacy:
            self.views = {id(b): (None, False) for b in f.params if len(b.shape) > 1}
        allocs = {id(a.buffer): None for a in walk_stmts(f.body) if isinstance(a, Allocate)}
        self.lca = _view_frames(f.body, {**self.views, **allocs})
        root = self.open("root")
        size_vars = []
        for b in f.params:
            for n in b.shape:
                for x in walk(n) if not isinstance(n, int) else ():
                    if isinstance(x, Var) and all(x is not y for y in size_vars):
                        size_vars.append(x)
        args, matched = [], []
        for b in f.params:
            if any(not isinstance(n, int) for n in b.shape):
                h = self.name(("handle", id(b)), b.name)
                args.append(f"{h}: T.handle")
                matched.append((b, h))
            else:
                args.append(f"{self.name(b, b.name)}: T.Buffer({self.shape(b)}, \"{b.dtype}\")")
        attrs = dict(f.attrs.get("func_attr", {}))
        if self.legacy and "func_attr" not in f.attrs:
            attrs = {"from_legacy_te_schedule": True, "tir.noalias": True}
        elif "func_attr" not in f.attrs:
            attrs = {"tir.noalias": True}
        n_in = _written_first(f)
        if n_in != f.num_inputs:
            attrs["num_inputs"] = f.num_inputs
        if attrs:
            self.emit(f"T.func_attr({_dict(attrs)})")
        for v in size_vars:
            self.emit(f"{self.name(v, v.name)} = T.int32()")
        for b, h in matched:
            dt = "" if b.dtype == "float32" else f', "{b.dtype}"'
            self.emit(f"{self.name(b, b.name)} = T.match_buffer({h}, {self.shape(b)}{dt})")
        for b in f.params:               # names of the flat views come after the parameters'
            if id(b) in self.views:
                self.views[id(b)] = (self.fresh(b.name), False)
        if self.blocks and not (isinstance(f.body, Block) and f.body.name == "root"):
            self.emit('# with T.block("root"):')
        self.stmt(f.body, last=True)
        self.close()
        head = ["@T.prim_func", f"def {f.name}({', '.join(args)}):"]
        return head + [IND + ln for ln in root.lines]


def flat_size(shape):
    n = Const(1, INDEX)
    for d in shape:
        n = n * d
    return n


def _with_range(ranges, lp):
    lo, ext = const_value(lp.min), const_value(lp.extent)
    if lo is None or ext is None:
        return ranges
    out = dict(ranges)
    out[id(lp.var)] = (lo, lo + max(ext, 1) - 1)
    return out


def _dict(d):
    def lit(v):
        if isinstance(v, bool):
            return f"T.bool({v})"
        if isinstance(v, str):
            return f'"{v}"'
        return repr(v)
    return "{" + ", ".join(f'"{k}": {lit(v)}' for k, v in sorted(d.items())) + "}"


def _written_first(f):
    written = {id(s.buffer) for s in walk_stmts(f.body) if isinstance(s, Store)}
    flags = [id(b) in written for b in f.params]
    return flags.index(True) if True in flags else len(f.params)


def _view_frames(body, views):
    """id(buffer) -> the key of the innermost frame holding every use of the buffer (TVM declares a
    flat view there)."""
    chains = {}

    def use(buf, chain):
        if id(buf) not in views:
            return
        old = chains.get(id(buf))
        if old is None:
            chains[id(buf)] = list(chain)
        else:
            k = 0
            while k < len(old) and k < len(chain) and old[k] == chain[k]:
                k += 1
            del old[k:]

    def go(s, chain):
        if isinstance(s, Store):
            use(s.buffer, chain)
        for e in _own(s):
            for x in walk(e):
                if isinstance(x, Load):
                    use(x.buffer, chain)
        if isinstance(s, For):
            go(grid_loops(s)[-1].body, chain + [id(s)])      # a grid of loops is one frame
        elif isinstance(s, Allocate):
            go(s.body, chain + [id(s)])
        elif isinstance(s, IfThenElse):
            go(s.then, chain + [(id(s), "then")])
            if s.else_ is not None:
                go(s.else_, chain + [(id(s), "else")])
        else:
            for c in stmt_children(s):
                go(c, chain)
    go(body, ["root"])
    return {k: (v[-1] if v else "root") for k, v in chains.items()}


def grid_loops(s: For):
    """The loops TVM prints as one `T.grid`: directly nested serial loops from 0 whose extents do
    not depend on each other."""
    grid = [s]
    if s.kind == "serial" and const_value(s.min) == 0:
        inner, loop_vars = s.body, {id(s.var)}
        while isinstance(inner, For) and inner.kind == "serial" and const_value(inner.min) == 0 and \
                not (free_vars(inner.extent) & loop_vars):
            grid.append(inner)
            loop_vars.add(id(inner.var))
            inner = inner.body
    return grid


def _own(s):
    return own_exprs(s)


def block_regions(b: Block):
    """(reads, writes) of a block: [(buffer, [(lo, hi or None) per dimension])], in order of first
    access; a reduction's read of what it writes is left out (TVM's regions)."""
    stores, loads = [], []
    for s in walk_stmts(b.body):
        if isinstance(s, Store):
            stores.append((s.buffer, [s.index]))
        for e in _own(s):
            for x in walk(e):
                if isinstance(x, Load):
                    loads.append((x.buffer, list(x.indices)))
    written = {id(buf) for buf, _ in stores}
    reads = [(buf, idx) for buf, idx in loads if not (b.init is not None and id(buf) in written)]
    return _regions(reads), _regions(stores)


def _regions(accesses):
    by = {}
    for buf, idx in accesses:
        if len(idx) == 1 and len(buf.shape) > 1:
            idx = unflatten(simplify(idx[0]), buf.shape) or idx
        by.setdefault(id(buf), (buf, []))[1].append([simplify(i) for i in idx])
    out = []
    for buf, all_idx in by.values():
        dims = []
        if any(len(i) != len(all_idx[0]) for i in all_idx):
            out.append((buf, [(Const(0, INDEX), flat_size(buf.shape))]))
            continue
        for d in range(len(all_idx[0])):
            es = [i[d] for i in all_idx]
            if all(e.key() == es[0].key() for e in es):
                dims.append((es[0], None))
                continue
            offs = [_const_offset(e, es[0]) for e in es]
            if all(o is not None for o in offs):
                lo, hi = min(offs), max(offs)
                dims.append((simplify(es[0] + lo), simplify(es[0] + hi + 1)))
            else:
                n = buf.shape[d] if d < len(buf.shape) else None
                dims.append((Const(0, INDEX), n if not isinstance(n, int) else Const(n, INDEX)))
        out.append((buf, dims))
    return out


def _const_offset(e, base):
    d = simplify(e - base)
    return const_value(d)


def func_script(func: PrimFunc) -> list:
    return Printer(func).function()


def module_script(funcs: dict, name="Module") -> str:
    """An IRModule's script: the functions sorted as TVM sorts them (main last)."""
    order = sorted(funcs.items(), key=lambda kv: (kv[0] == "main", kv[0]))
    lines = ["# from tvm.script import ir as I", "# from tvm.script import tir as T", "", "@I.ir_module",
             f"class {name}:"]
    for k, (gname, f) in enumerate(order):
        if k:
            lines.append("")
        fl = func_script(f)
        if f.name != gname:
            fl[1] = fl[1].replace(f"def {f.name}(", f"def {gname}(", 1)
        lines += [IND + ln for ln in fl]
    return "\n".join(lines)


def prim_func_script(func: PrimFunc) -> str:
    return "\n".join(["# from tvm.script import tir as T", ""] + func_script(func))


def _script_method(self, **kwargs):
    """func.script(): the function as TVMScript."""
    return prim_func_script(self)


def _show_method(self, **kwargs):
    print(prim_func_script(self))


# TVM's PrimFunc prints as TVMScript (func.script(), print(func)); stmt.py sits below the printer
PrimFunc.script = _script_method
PrimFunc.show = _show_method
PrimFunc.__str__ = _script_method
