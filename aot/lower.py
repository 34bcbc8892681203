"""Lower a fused group to one loop-IR PrimFunc.

Each node's compute definition contributes tensor-expression stages. Stages without a
reduction are inlined into their readers. A reduction read by the output at indices that
are plain output loop variables is computed into a scalar accumulator placed inside just
those loops (the loops it depends on are moved outermost), so conv + bias + relu, softmax's
max/sum/normalise, and pooling's divide all become a single loop nest.
"""
from __future__ import annotations

import itertools

import numpy as np

from . import te
from .errors import AotError
from .ops import get_op
from .tir.expr import Bin, Const, Load, Var, max_, min_, substitute, transform, walk
from .tir.simplify import simplify_stmt
from .tir.stmt import Allocate, Buffer, For, PrimFunc, Seq, Store


class LowerError(AotError):
    pass


def const_param_array(v):
    """The array a constant is stored as: broadcast dims dropped (a splat is one element)."""
    a = v.const
    if a.ndim and any(st == 0 for st in a.strides):
        a = a[tuple(slice(0, 1) if st == 0 else slice(None) for st in a.strides)]
    return np.ascontiguousarray(a)


def is_scalar_const(v):
    return v.is_const and const_param_array(v).size == 1


class _Lowering:
    def __init__(self, group, name):
        self.group, self.name = group, name
        self.params = {}         # tensor uid -> (Buffer, stored shape) | ("scalar", Const)
        self.param_bufs = []
        self.counter = itertools.count()

    # -- building stages ------------------------------------------------------
    def build(self):
        vt = {}
        for k, v in enumerate(self.group.inputs):
            t = te.placeholder(v.type.shape, v.type.dtype, f"p{k}")
            vt[id(v)] = t
            if is_scalar_const(v):
                self.params[t.uid] = ("scalar", Const(const_param_array(v).reshape(-1)[0].item(), v.type.dtype))
            else:
                stored = const_param_array(v).shape if v.is_const else v.type.shape
                buf = Buffer(f"p{k}", v.type.dtype, stored)
                self.params[t.uid] = (buf, stored)
                self.param_bufs.append((v, buf))
        for n in self.group.nodes:
            op = get_op(n.op)
            ins = [vt[id(v)] if v is not None else None for v in n.inputs]
            outs = op.compute(n, *ins)
            for o, t in zip(n.outputs, outs):
                vt[id(o)] = t
        return [vt[id(o)] for o in self.group.outputs]

    # -- expression expansion ---------------------------------------------------
    def load_param(self, ref):
        entry = self.params[ref.tensor.uid]
        if entry[0] == "scalar":
            return entry[1]
        buf, stored = entry
        full = ref.tensor.shape
        idx = list(ref.indices)
        if ref.flat:
            if tuple(stored) == tuple(full):
                return Load(buf, idx[0])
            # un-flatten for a compact constant read in row-major order
            rem, multi = idx[0], []
            for s in reversed(full):
                multi.append(rem % s)
                rem = rem // s
            idx = multi[::-1]
        flat = Const(0, "int32")
        for i, s in zip(idx, stored):
            flat = flat * s + (i if s != 1 else Const(0, "int32"))
        return Load(buf, flat)

    def expand(self, expr, scalars):
        """Inline injective stages and resolve param/reduction reads."""
        def f(e):
            if not isinstance(e, te.TensorRef):
                return None
            t = e.tensor
            if t.uid in self.params:
                return self.load_param(e)
            if t.uid in scalars:
                return Load(scalars[t.uid], Const(0, "int32"))
            body = t.op.body
            if isinstance(body, te.Reduce):
                return None     # left in place; attach() decides where it is computed
            idx = e.indices
            if e.flat:
                rem, multi = idx[0], []
                for s in reversed(t.shape):
                    multi.append(rem % s)
                    rem = rem // s
                idx = multi[::-1]
            inlined = substitute(body, {id(a): i for a, i in zip(t.op.axes, idx)})
            return self.expand(inlined, scalars)
        return transform(expr, f)

    @staticmethod
    def reduction_refs(expr):
        return [e for e in walk(expr) if isinstance(e, te.TensorRef) and not e.tensor.is_placeholder
                and isinstance(e.tensor.op.body, te.Reduce)]

    # -- loop nests -----------------------------------------------------------------
    def lower_output(self, t, out_buf):
        axes = list(t.op.axes) if isinstance(t.op, te.ComputeOp) else []
        value = te.TensorRef(t, axes) if isinstance(t.op.body, te.Reduce) else t.op.body
        value = self.expand(value, {})
        order = []           # reductions in dependency order with their index tuple
        seen = {}

        def collect(expr):
            for r in self.reduction_refs(expr):
                uid = r.tensor.uid
                key = tuple(i.key() for i in r.indices)
                if uid in seen:
                    if seen[uid] != key:
                        raise LowerError(f"{self.name}: reduction {r.tensor.name} is read at different indices")
                    continue
                red = r.tensor.op.body
                src = substitute(red.source, {id(a): i for a, i in zip(r.tensor.op.axes, r.indices)})
                collect(self.expand(src, {}))
                seen[uid] = key
                order.append(r)
        collect(value)

        axis_ids = {id(a): k for k, a in enumerate(axes)}
        used = set()
        for r in order:
            for d, i in enumerate(r.indices):
                if isinstance(i, Var) and id(i) in axis_ids:
                    used.add(axis_ids[id(i)])
                elif not (isinstance(i, Const) and i.value == 0 and r.tensor.shape[d] == 1):
                    raise LowerError(f"{self.name}: reduction {r.tensor.name} is read at a computed index")
        outer = [a for k, a in enumerate(axes) if k in used]
        inner = [a for k, a in enumerate(axes) if k not in used]

        scalars = {r.tensor.uid: Buffer(f"{r.tensor.name}_acc{next(self.counter)}", r.dtype, (1,), "local")
                   for r in order}
        flat = Const(0, "int32")
        for a, s in zip(axes, t.shape):
            flat = flat * s + a
        body = Store(out_buf, flat, self.expand(value, scalars))
        for a in reversed(inner):
            body = For(a, 0, t.shape[axes.index(a)], body)
        # each reduction is computed before (outside) everything that reads it
        for r in reversed(order):
            body = self.reduction_at(r, scalars, body)
        for a in reversed(outer):
            body = For(a, 0, t.shape[axes.index(a)], body)
        return body

    def reduction_at(self, ref, scalars, rest):
        red = ref.tensor.op.body
        mapping = {id(a): i for a, i in zip(ref.tensor.op.axes, ref.indices)}
        acc = scalars[ref.tensor.uid]
        zero = Const(0, "int32")
        src = self.expand(substitute(red.source, mapping), scalars)
        cur = Load(acc, zero)
        comb = {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b,
                "max": max_, "min": min_}[red.combiner](cur, src)
        loop = Store(acc, zero, comb)
        for ax in reversed(red.axes):
            v = Var(ax.var.name)
            loop = For(v, substitute(ax.min, mapping), substitute(ax.extent, mapping),
                       _rename(loop, ax.var, v))
        return Allocate(acc, Seq([Store(acc, zero, red.init), loop, rest]))


def _rename(stmt, old, new):
    from .tir.stmt import map_stmt
    return map_stmt(stmt, fexpr=lambda e: substitute(e, {id(old): new}))


def lower_group(group, name) -> tuple:
    """(PrimFunc, [input Values in parameter order]) for one fused group."""
    lw = _Lowering(group, name)
    out_tensors = lw.build()
    out_bufs = [Buffer(f"T_{t.name}" if len(out_tensors) == 1 else f"T_{t.name}_{k}", t.dtype, t.shape)
                for k, t in enumerate(out_tensors)]
    nests = []
    for t, b in zip(out_tensors, out_bufs):
        if t.is_placeholder:
            raise LowerError(f"{name}: output is an unmodified input")
        nests.append(lw.lower_output(t, b))
    body = simplify_stmt(Seq(nests)) or Seq([])
    in_values = [v for v, _ in lw.param_bufs]
    func = PrimFunc(name, [b for _, b in lw.param_bufs] + out_bufs, body, len(lw.param_bufs))
    return default_schedule(func), in_values


def default_schedule(func: PrimFunc) -> PrimFunc:
    """Unroll short constant innermost loops (3x3 taps without padding, small channel counts)."""
    from .tir.schedule import unroll
    from .tir.simplify import const_value
    from .tir.stmt import For as _For

    targets = []

    def visit(s):
        if isinstance(s, _For):
            if not any(isinstance(x, _For) for x in _iter_stmts(s.body)):
                if const_value(s.extent) is not None and const_value(s.min) is not None and const_value(s.extent) <= 4:
                    targets.append(s.var)
            else:
                visit(s.body)
        else:
            for c in _children_stmts(s):
                visit(c)
    visit(func.body)
    body = func.body
    for v in targets:
        body = unroll(body, v)
    body = simplify_stmt(body) or Seq([])
    return PrimFunc(func.name, func.params, body, func.num_inputs, func.attrs)


def _children_stmts(s):
    from .tir.stmt import IfThenElse
    if isinstance(s, Seq):
        return s.stmts
    if isinstance(s, (Allocate, For)):
        return [s.body]
    if isinstance(s, IfThenElse):
        return [s.then] + ([s.else_] if s.else_ is not None else [])
    return []


def _iter_stmts(s):
    yield s
    for c in _children_stmts(s):
        yield from _iter_stmts(c)


__all__ = ["lower_group", "Bin"]
