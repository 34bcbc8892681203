"""Lower a fused group to one loop-IR PrimFunc: the plain loop nest of its tensor expressions.

Each node's compute definition contributes tensor-expression stages. Stages without a
reduction are inlined into their readers. A reduction read by the output at indices that
are plain output loop variables is computed into a scalar accumulator placed inside just
those loops (the loops it depends on are moved outermost), so conv + bias + relu, softmax's
max/sum/normalise, and pooling's divide all become a single loop nest.

The nest keeps the tensor expressions' own loop variables, reduce axes included, and reads
parameters with one index per dimension, so that a schedule (aot/schedules/ per target, or
a user's own calls to aot/tir/schedule.py) can split, reorder and re-lay-out them. Nothing
here is target-specific; aot/tir/flatten.py makes the indices flat afterwards.
"""
from __future__ import annotations

import itertools

import numpy as np

from . import tensor as te
from ..errors import AotError
from ..ops import get_op
from ..tir.expr import Const, Load, Var, substitute, transform, walk
from ..tir.flatten import flat_index
from ..tir.stmt import Allocate, Buffer, For, PrimFunc, Seq, Store


class LowerError(AotError):
    pass


def const_param_array(v, dense=False):
    """The array a constant is stored as: broadcast dims dropped (a splat is one element), unless
    dense (an external library's operand, whose every element it reads)."""
    a = v.const
    if not dense and a.ndim and any(st == 0 for st in a.strides):
        a = a[tuple(slice(0, 1) if st == 0 else slice(None) for st in a.strides)]
    return np.ascontiguousarray(a)


def is_scalar_const(v):
    return v.is_const and const_param_array(v).size == 1


class _Lowering:
    def __init__(self, group, name):
        self.group, self.name = group, name
        self.params = {}         # tensor uid -> (Buffer, stored shape) | ("scalar", Const)
        self.param_bufs = []     # (Value, Buffer)
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
        # a dimension a constant is broadcast along is stored once
        return Load(buf, tuple(i if s != 1 else Const(0, "int32") for i, s in zip(idx, stored)))

    def expand(self, expr, scalars):
        """Inline injective stages and resolve param/reduction reads."""
        def f(e):
            if not isinstance(e, te.TensorRef):
                return None
            t = e.tensor
            if t.uid in self.params:
                return self.load_param(e)
            if t.uid in scalars:
                return scalars[t.uid]
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
            return _f16_boundary(self.expand(inlined, scalars))
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
                elif isinstance(i, Const) and i.value == 0 and r.tensor.shape[d] == 1:
                    if d < len(axes) and t.shape[d] == 1:
                        used.add(d)      # a unit axis: outside the accumulator like the others
                else:
                    raise LowerError(f"{self.name}: reduction {r.tensor.name} is read at a computed index")
        outer = [a for k, a in enumerate(axes) if k in used]
        inner = [a for k, a in enumerate(axes) if k not in used]

        accs = {r.tensor.uid: Buffer(f"{r.tensor.name}_acc{next(self.counter)}", r.dtype, (1,), "local")
                for r in order}
        scalars = {uid: Load(b, Const(0, "int32")) for uid, b in accs.items()}
        body = Store(out_buf, flat_index(axes, t.shape), self.expand(value, scalars))
        for a in reversed(inner):
            body = For(a, 0, t.shape[axes.index(a)], body)
        # each reduction is computed before (outside) everything that reads it
        for r in reversed(order):
            body = self.reduction_at(r, accs[r.tensor.uid], scalars, body)
        for a in reversed(outer):
            body = For(a, 0, t.shape[axes.index(a)], body)
        return body

    def reduction_at(self, ref, acc, scalars, rest):
        red = ref.tensor.op.body
        mapping = {id(a): i for a, i in zip(ref.tensor.op.axes, ref.indices)}
        zero = Const(0, "int32")
        src = self.expand(substitute(red.source, mapping), scalars)
        cur = Load(acc, zero)
        comb = te.combine(red.combiner)(cur, src)
        loop = Store(acc, zero, comb)
        for ax in reversed(red.axes):
            loop = For(ax.var, substitute(ax.min, mapping), substitute(ax.extent, mapping), loop)
        return Allocate(acc, Seq([Store(acc, zero, red.init), loop, rest]))


def _f16_boundary(e):
    """float16 values are computed in float; each op's result is rounded to half precision,
    as a float16 runtime stores it, so fused groups give the same numbers as op-by-op ones."""
    from ..tir.expr import Call
    fn = {"float16": "f16round", "bfloat16": "bf16round"}.get(e.dtype)
    if fn and not (isinstance(e, Call) and e.fn == fn) and not isinstance(e, Const):
        return Call(fn, [e], e.dtype)
    return e


def lower_group(group, name) -> tuple:
    """(PrimFunc, [input Value per input parameter]) for one fused group: the plain loop nest,
    unscheduled. func.attrs["constants"] lists the input parameters that are constants (a
    schedule may store those in another layout; see aot/tir/schedule.py pack_layout)."""
    lw = _Lowering(group, name)
    out_tensors = lw.build()
    out_bufs = [Buffer(f"T_{t.name}" if len(out_tensors) == 1 else f"T_{t.name}_{k}", t.dtype, t.shape)
                for k, t in enumerate(out_tensors)]
    nests = []
    for t, b in zip(out_tensors, out_bufs):
        if t.is_placeholder:
            raise LowerError(f"{name}: output is an unmodified input")
        nests.append(lw.lower_output(t, b))
    consts = tuple(k for k, (v, _) in enumerate(lw.param_bufs) if v.is_const)
    func = PrimFunc(name, [b for _, b in lw.param_bufs] + out_bufs, Seq(nests), len(lw.param_bufs),
                    {"constants": consts})
    return func, [v for v, _ in lw.param_bufs]


def lower(args, name: str = "main") -> PrimFunc:
    """The plain loop nest computing tensor expressions (TVM's `lower` without a schedule):
    args are the placeholders, in parameter order, then the computed tensors. The result keeps
    the expressions' loop variables (`C.op.axis`, `C.op.reduce_axis`) for aot.tir.schedule;
    aot.tir.flatten.flatten then makes it ready to render."""
    ins = [t for t in args if t.is_placeholder]
    outs = [t for t in args if not t.is_placeholder]
    if [t.is_placeholder for t in args] != [True] * len(ins) + [False] * len(outs) or not outs:
        raise LowerError(f"{name}: lower takes the placeholders first, then at least one computed tensor")
    lw = _Lowering(None, name)
    in_bufs = [Buffer(t.name, t.dtype, t.shape) for t in ins]
    for t, b in zip(ins, in_bufs):
        lw.params[t.uid] = (b, t.shape)
    out_bufs = [Buffer(t.name, t.dtype, t.shape) for t in outs]
    body = Seq([lw.lower_output(t, b) for t, b in zip(outs, out_bufs)])
    return PrimFunc(name, in_bufs + out_bufs, body, len(ins))
