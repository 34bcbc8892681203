"""Loop-IR statements, buffers and PrimFunc, and the one visitor/mutator every pass walks with.

A new statement kind is added here: its class, and one method in StmtVisitor and StmtMutator.
Passes, the verifier, the printer and the renderers subclass those two and override only
the statements they care about.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import AotError, InternalError
from .expr import Const, Expr, Load, Var, preorder, walk, wrap

SCOPES = ("global", "local", "shared")
FOR_KINDS = ("serial", "unroll", "vectorize", "simd", "parallel", "thread_binding")
THREAD_TAGS = tuple(f"{a}.{x}" for a in ("blockIdx", "threadIdx") for x in "xyz")


class Buffer:
    """A typed memory region. scope: 'global' = a function parameter; 'local' = private to one
    thread of execution (a C local array); 'shared' = shared by the threads of one GPU block."""

    def __init__(self, name: str, dtype: str, shape, scope: str = "global"):
        if scope not in SCOPES:
            raise InternalError(f"buffer {name}: unknown storage scope {scope!r}")
        self.name, self.dtype, self.scope = name, dtype, scope
        # a dimension is an int, or an expression of te.var sizes until aot.build fixes them
        self.shape = tuple(s if isinstance(s, Expr) and not isinstance(s, Const) else int(getattr(s, "value", s))
                           for s in shape)

    @property
    def symbolic(self):
        return any(isinstance(s, Expr) for s in self.shape)

    @property
    def size(self):
        if self.symbolic:
            raise InternalError(f"buffer {self.name}: the size of {self!r} is not known before aot.build")
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def strides(self):
        """buf.strides: those decl_buffer declared (ints or te.vars), else a compact row-major
        buffer's."""
        got = self.__dict__.get("_strides")
        if got is not None:
            return list(got)
        out, acc = [], Const(1, "int32")
        for d in reversed(self.shape):
            out.append(acc)
            acc = Const(acc.value * d, "int32") if isinstance(acc, Const) and isinstance(d, int) else acc * d
        return list(reversed(out))

    @strides.setter
    def strides(self, v):
        self._strides = list(v)

    def access_ptr(self, access_mask, ptr_type="handle", content_lanes=1, offset=0, extent=None):
        """TVM's buffer.access_ptr("r" | "w" | "rw"): a pointer to the buffer's first element (at
        its elem_offset), which an external call takes."""
        mode = access_mask if isinstance(access_mask, str) else \
            ("r" if access_mask & 1 else "") + ("w" if access_mask & 2 else "")
        if not mode or set(mode) - set("rw"):
            raise AotError(f"access_ptr of {self.name}: the access mask is 'r', 'w' or 'rw', not {access_mask!r}")
        base = self.__dict__.get("elem_offset")
        zero = isinstance(offset, int) and offset == 0
        off = wrap(offset, "int32") if base is None else base if zero else base + offset
        # as TVM: what lies past the pointer, the whole buffer (its first dimension's stride times
        # its extent when strided), less offset=
        declared = self.__dict__.get("_strides")
        if extent is None and declared is not None and self.shape:
            extent = declared[0] * self.shape[0] if isinstance(declared[0], Expr) else \
                wrap(self.shape[0], "int32") * declared[0]
            extent = extent if zero else extent - offset
        elif extent is None and not self.symbolic:
            extent = int(np.prod(self.shape, dtype=np.int64)) - (0 if zero else offset)
        return AccessPtr(self.data, off, mode, extent)

    @property
    def data(self):
        """TVM's buffer.data: the pointer variable (a handle) that a call passes for the buffer."""
        d = self.__dict__.get("_data")
        if d is None:
            d = self._data = BufferData(self)
        return d

    def __repr__(self):
        return f"{self.name}:{self.dtype}{list(self.shape)}"


class BufferData(Var):
    """A buffer's data pointer (TVM's `buffer.data`, dtype "handle"): an argument of an external
    call (tir.call_extern) or a buffer view's `data=`. Not a loop variable, never stored."""
    __slots__ = ("buffer",)

    def __init__(self, buffer):
        super().__init__(buffer.name, "handle")
        self.buffer = buffer


class AccessPtr(Expr):
    """TVM's buffer.access_ptr(mode): the address of the buffer's element at its element offset
    (plus offset=), as a pointer of its element type, for an external call; extent: the elements
    reachable from there (printed, as TVM's tvm_access_ptr). Its children are the buffer's data
    pointer, the offset and the extent, so that binding a buffer (a tensor intrinsic's, to a
    region of a real one) is substituting its data pointer, offset and stride variables."""
    __slots__ = ("ptr", "offset", "extent", "mode")

    def __init__(self, ptr, offset, mode="rw", extent=None):
        self.ptr, self.offset, self.mode, self.dtype, self._key = ptr, wrap(offset, "int32"), mode, "handle", None
        self.extent = wrap(extent, "int32") if extent is not None else None

    @property
    def buffer(self):
        return self.ptr.buffer

    def _make_key(self):
        return ("access_ptr", self.ptr.key(), self.offset.key(), self.extent.key() if self.extent is not None
                else None, self.mode)

    def _children(self):
        return (self.ptr, self.offset) + ((self.extent,) if self.extent is not None else ())

    def _rebuild(self, kids):
        return AccessPtr(kids[0], kids[1], self.mode, kids[2] if len(kids) > 2 else None)

    def script(self, fmt):
        b = self.buffer
        ext = fmt(self.extent) if self.extent is not None else str(int(np.prod(b.shape))) if not b.symbolic else "0"
        mask = (1 if "r" in self.mode else 0) | (2 if "w" in self.mode else 0)
        return f'T.tvm_access_ptr(T.type_annotation("{b.dtype}"), {fmt(self.ptr)}, {fmt(self.offset)}, {ext}, {mask})'

    def __repr__(self):
        return f"access_ptr({self.ptr.name}, {self.offset!r}, {self.mode!r})"


class Stmt:
    pass


class For(Stmt):
    """for var in [min, min+extent).

    kind: 'serial'; 'unroll' and 'vectorize' (hints: the C compiler unrolls/vectorizes it);
    'simd' (vectorize, kept rolled: the C compiler is told not to unroll it into scalars first);
    'parallel' (iterations are independent and may run on different cores); 'thread_binding'
    (one iteration per GPU thread or block: var is the thread index named by thread_tag)."""

    def __init__(self, var: Var, min, extent, body: Stmt, kind: str = "serial", thread_tag: str | None = None):
        if kind not in FOR_KINDS:
            raise InternalError(f"loop {var.name}: unknown loop kind {kind!r}")
        if (kind == "thread_binding") != (thread_tag is not None) or (thread_tag and thread_tag not in THREAD_TAGS):
            raise InternalError(f"loop {var.name}: kind {kind!r} with thread tag {thread_tag!r}")
        self.var, self.min, self.extent, self.body = var, wrap(min), wrap(extent), body
        self.kind, self.thread_tag = kind, thread_tag

    def with_body(self, body, min=None, extent=None):
        return For(self.var, self.min if min is None else min, self.extent if extent is None else extent, body,
                   self.kind, self.thread_tag)


class Store(Stmt):
    def __init__(self, buffer: Buffer, index, value: Expr):
        if value.dtype != buffer.dtype:
            raise InternalError(f"store of {value.dtype} into {buffer!r}")
        self.buffer, self.index, self.value = buffer, wrap(index), value


class Seq(Stmt):
    def __init__(self, stmts):
        flat = []
        for s in stmts:
            if isinstance(s, Seq):
                flat.extend(s.stmts)
            elif s is not None:
                flat.append(s)
        self.stmts = flat

    @property
    def seq(self):
        """TVM's SeqStmt.seq."""
        return self.stmts

    def __getitem__(self, k):
        return self.stmts[k]


class Allocate(Stmt):
    """A buffer (local or shared scope) live for `body`."""

    def __init__(self, buffer: Buffer, body: Stmt):
        self.buffer, self.body = buffer, body


class IfThenElse(Stmt):
    def __init__(self, cond: Expr, then: Stmt, else_: Stmt | None = None):
        self.cond, self.then, self.else_ = cond, then, else_


class Barrier(Stmt):
    """Every thread of a block waits here until all have arrived and their writes to `scope`
    memory are visible (__syncthreads, barrier(CLK_LOCAL_MEM_FENCE))."""

    def __init__(self, scope: str = "shared"):
        if scope not in ("shared", "global"):
            raise InternalError(f"barrier over {scope!r} memory")
        self.scope = scope


class Evaluate(Stmt):
    """A tensor intrinsic called for what it writes (aot/tir/intrin/: its `written_args` are
    loads of the first elements it stores to); the call's value is discarded."""

    def __init__(self, call: Expr):
        self.call = call

    @property
    def value(self):
        """TVM's Evaluate.value: the expression evaluated."""
        return self.call


class IterVar:
    """A block iterator (TVM's tir.IterVar of a Block): var ranges over [dom_min, dom_min + extent),
    kind "S" (spatial: one output element per value) or "R" (reduction: values folded together)."""

    def __init__(self, var: Var, extent, kind: str = "S", dom_min=0):
        if kind not in ("S", "R"):
            raise AotError(f"block iterator {var.name}: kind {kind!r} is not 'S' (spatial) or 'R' (reduction)")
        self.var, self.extent, self.kind, self.dom_min = var, wrap(extent), kind, wrap(dom_min)

    @property
    def dom(self):
        return (self.dom_min, self.extent)

    def __repr__(self):
        return f"IterVar({self.var.name}, {self.kind})"


class Block(Stmt):
    """TensorIR's unit of computation (TVM's BlockRealize + Block), kept for scripts,
    te.create_prim_func and aot.tir.Schedule: the body is written over the block's own iterators,
    each bound to an expression of the enclosing loops (values); init (a reduction's first
    value) runs where every reduction iterator is at its first value; predicate guards the block
    (a split's tail). Lowering erases it (aot/tir/blocks.py: erase_blocks) before any pass that
    reasons about loop variables, so for everything but the printer and the TensorIR schedule a
    block is transparent."""

    def __init__(self, name: str, iter_vars, values, body: Stmt, init: Stmt | None = None, predicate=None):
        if len(iter_vars) != len(values):
            raise InternalError(f"block {name}: {len(iter_vars)} iterators, {len(values)} bound values")
        self.name, self.iter_vars, self.values = name, list(iter_vars), [wrap(v) for v in values]
        self.body, self.init, self.predicate = body, init, predicate

    @property
    def name_hint(self):
        return self.name

    def replace(self, values=None, body=None, init=False, predicate=False):
        return Block(self.name, self.iter_vars, self.values if values is None else values,
                     self.body if body is None else body, self.init if init is False else init,
                     self.predicate if predicate is False else predicate)


@dataclass(eq=False)
class PrimFunc:
    name: str
    params: list            # list[Buffer], inputs first, then outputs
    body: Stmt
    num_inputs: int
    attrs: dict = field(default_factory=dict)

    @property
    def inputs(self):
        return self.params[:self.num_inputs]

    @property
    def outputs(self):
        return self.params[self.num_inputs:]

    def with_body(self, body, params=None, attrs=None, span=None):
        return PrimFunc(self.name, list(self.params if params is None else params), body, self.num_inputs,
                        dict(self.attrs if attrs is None else attrs))

    @property
    def buffer_map(self):
        """TVM's func.buffer_map: each parameter's data handle -> its buffer, in parameter order."""
        return {b.data: b for b in self.params}

    # script(), show() and str(): TVMScript, attached by aot/tir/tvmscript.py (the printer sits above
    # this module)


# -- the one walker -----------------------------------------------------------------------
class StmtVisitor:
    """Pre-order walk. Override visit_<Kind> for the statements a pass cares about; call
    self.generic(s) to go on into the children, self.visit_expr for each expression held."""

    def visit(self, s):
        return getattr(self, "visit_" + type(s).__name__, self._unknown)(s)

    def _unknown(self, s):
        raise InternalError(f"unknown statement {type(s).__name__}")

    def visit_expr(self, e):
        pass

    def generic(self, s):
        for e in own_exprs(s):
            self.visit_expr(e)
        for c in stmt_children(s):
            self.visit(c)

    visit_For = visit_Store = visit_Seq = visit_Allocate = visit_IfThenElse = visit_Barrier = visit_Evaluate = generic
    visit_Block = generic


class StmtMutator:
    """Rebuild a statement tree. visit_<Kind> returns the new statement (or None to drop it);
    the defaults rebuild with mutate_expr applied to every held expression and the children
    visited, and return the same object when nothing changed."""

    def visit(self, s):
        return getattr(self, "visit_" + type(s).__name__, self._unknown)(s)

    def _unknown(self, s):
        raise InternalError(f"unknown statement {type(s).__name__}")

    def mutate_expr(self, e):
        return e

    def visit_For(self, s):
        mn, ext, body = self.mutate_expr(s.min), self.mutate_expr(s.extent), self.visit(s.body)
        if mn is s.min and ext is s.extent and body is s.body:
            return s
        return s.with_body(body if body is not None else Seq([]), mn, ext)

    def visit_Store(self, s):
        idx, val = self.mutate_expr(s.index), self.mutate_expr(s.value)
        return s if idx is s.index and val is s.value else Store(s.buffer, idx, val)

    def visit_Seq(self, s):
        parts = [self.visit(x) for x in s.stmts]
        if all(p is x for p, x in zip(parts, s.stmts)):
            return s
        return Seq(parts)

    def visit_Allocate(self, s):
        body = self.visit(s.body)
        return s if body is s.body else Allocate(s.buffer, body if body is not None else Seq([]))

    def visit_IfThenElse(self, s):
        c, t = self.mutate_expr(s.cond), self.visit(s.then)
        e = self.visit(s.else_) if s.else_ is not None else None
        if c is s.cond and t is s.then and e is s.else_:
            return s
        return IfThenElse(c, t if t is not None else Seq([]), e)

    def visit_Barrier(self, s):
        return s

    def visit_Evaluate(self, s):
        c = self.mutate_expr(s.call)
        return s if c is s.call else Evaluate(c)

    def visit_Block(self, s):
        values = [self.mutate_expr(v) for v in s.values]
        pred = self.mutate_expr(s.predicate) if s.predicate is not None else None
        init = self.visit(s.init) if s.init is not None else None
        body = self.visit(s.body)
        if all(a is b for a, b in zip(values, s.values)) and pred is s.predicate and init is s.init and \
                body is s.body:
            return s
        return s.replace(values, body if body is not None else Seq([]), init, pred)


def own_exprs(s):
    """The expressions a statement holds itself (not those of its children)."""
    if isinstance(s, For):
        return [s.min, s.extent]
    if isinstance(s, Store):
        return [s.index, s.value]
    if isinstance(s, IfThenElse):
        return [s.cond]
    if isinstance(s, Evaluate):
        return [s.call]
    if isinstance(s, Block):
        return list(s.values) + ([s.predicate] if s.predicate is not None else [])
    return []


def stmt_children(s: Stmt):
    """The statements directly inside s."""
    if isinstance(s, Seq):
        return list(s.stmts)
    if isinstance(s, (Allocate, For)):
        return [s.body]
    if isinstance(s, IfThenElse):
        return [s.then] + ([s.else_] if s.else_ is not None else [])
    if isinstance(s, Block):
        return ([s.init] if s.init is not None else []) + [s.body]
    return []


class _Exprs(StmtMutator):
    def __init__(self, fexpr):
        self.mutate_expr = fexpr


def map_exprs(s: Stmt, fexpr) -> Stmt:
    """s with fexpr applied to every expression it holds."""
    return _Exprs(fexpr).visit(s)


def walk_stmts(s: Stmt):
    """Every statement of s, pre-order."""
    return preorder(s, stmt_children)


def uses_buffer(s: Stmt, buf) -> bool:
    """Whether a statement tree stores into, loads from or passes on buffer `buf` (a pointer to
    it as a call's argument: a Load of it, or its data pointer to an external call)."""
    if any(isinstance(st, Store) and st.buffer is buf for st in walk_stmts(s)):
        return True
    return any(isinstance(e, (Load, BufferData)) and e.buffer is buf for x in stmt_exprs(s) for e in walk(x))


def stmt_exprs(s: Stmt):
    """Every top-level expression in a statement tree."""
    for x in walk_stmts(s):
        yield from own_exprs(x)
