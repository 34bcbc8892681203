"""Structural identity of a PrimFunc, its name aside: two functions with the same key have the
same parameters, statements, expressions and attributes, variable for variable and buffer for
buffer, so anything computed from one (its schedule, its C text) holds for the other.

Why: a network repeats layers (MobileNet's five 6x6x128 depthwise/pointwise pairs, a ResNet
stage's blocks), and each lowers to the same loop nest. The executor schedules such a nest once
per compile (TVM's compile engine caches lowered functions by structural hash the same way).

Variables and buffers are numbered by first appearance (parameters first) and keep their
names and types, so equal keys print equal text. A node this module does not know makes the
function keyless (None): it is then scheduled on its own, as before.
"""
from __future__ import annotations

import numpy as np

from .expr import Bin, Call, Cast, Const, Load, Select, Unary, Var
from .stmt import Allocate, Barrier, Buffer, Evaluate, For, IfThenElse, PrimFunc, Seq, Store


class _NoKey(Exception):
    pass


class _Keyer:
    def __init__(self):
        self.vars, self.bufs, self.memo = {}, {}, {}
        self.buf_info, self.held = [], []      # held: keeps ids from being reused while keying

    def buffer(self, b):
        k = self.bufs.get(id(b))
        if k is None:
            if not isinstance(b, Buffer):
                raise _NoKey
            info = (b.name, b.dtype, b.scope, tuple(self.dim(d) for d in b.shape))
            k = self.bufs[id(b)] = len(self.buf_info)
            self.held.append(b)
            self.buf_info.append(info)
        return k

    def dim(self, d):
        return self.expr(d) if not isinstance(d, int) else d

    def var(self, v):
        k = self.vars.get(id(v))
        if k is None:
            k = self.vars[id(v)] = ("v", len(self.vars), v.name, v.dtype)
        return k

    def expr(self, e):
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit[1]
        t = type(e)
        if t is Var:
            return self.var(e)
        elif t is Const:
            # repr: -0.0 and 0.0 (or 1 and True) compare equal but print differently
            k = ("c", e.dtype, type(e.value).__name__, repr(e.value))
        elif t is Bin:
            k = ("b", e.op, e.dtype, self.expr(e.a), self.expr(e.b))
        elif t is Unary:
            k = ("u", e.op, e.dtype, self.expr(e.a))
        elif t is Cast:
            k = ("cast", e.dtype, self.expr(e.a))
        elif t is Select:
            k = ("sel", e.dtype, self.expr(e.cond), self.expr(e.t), self.expr(e.f))
        elif t is Call:
            k = ("call", e.fn, e.dtype, tuple(self.expr(a) for a in e.args))
        elif t is Load:
            k = ("ld", self.buffer(e.buffer), tuple(self.expr(i) for i in e.indices))
        else:
            raise _NoKey
        self.memo[id(e)] = (e, k)
        return k

    def stmt(self, s):
        t = type(s)
        if t is For:
            return ("for", self.var(s.var), self.expr(s.min), self.expr(s.extent), s.kind, s.thread_tag,
                    self.stmt(s.body))
        if t is Store:
            return ("st", self.buffer(s.buffer), self.expr(s.index), self.expr(s.value))
        if t is Seq:
            return ("seq",) + tuple(self.stmt(x) for x in s.stmts)
        if t is Allocate:
            return ("alloc", self.buffer(s.buffer), self.stmt(s.body))
        if t is IfThenElse:
            return ("if", self.expr(s.cond), self.stmt(s.then), None if s.else_ is None else self.stmt(s.else_))
        if t is Barrier:
            return ("barrier", s.scope)
        if t is Evaluate:
            return ("eval", self.expr(s.call))
        raise _NoKey

    def value(self, x):
        """An attribute's value: plain data, buffers and expressions only."""
        if x is None or isinstance(x, (bool, int, float, str)):
            return (type(x).__name__, repr(x))
        if isinstance(x, (tuple, list)):
            return (type(x).__name__,) + tuple(self.value(y) for y in x)
        if isinstance(x, dict):
            items = [(self.value(k), self.value(v)) for k, v in x.items()]
            return ("dict",) + tuple(sorted(items, key=repr))
        if isinstance(x, Buffer):
            return ("buf", self.buffer(x))
        if isinstance(x, (np.integer, np.floating)):
            return (str(x.dtype), repr(x.item()))
        if isinstance(x, np.ndarray):
            return ("nd", str(x.dtype), x.shape, x.tobytes())
        return ("expr", self.expr(x))       # _NoKey for anything else


def structural_key(func: PrimFunc):
    """A hashable key of func without its name, or None when func holds a node not known here."""
    k = _Keyer()
    try:
        params = tuple(k.buffer(b) for b in func.params)
        body, attrs = k.stmt(func.body), k.value(func.attrs)
        return (params, func.num_inputs, body, attrs, tuple(k.buf_info))
    except _NoKey:
        return None
