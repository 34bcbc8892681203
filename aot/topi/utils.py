"""What topi's operators and schedules share: tagged computes (TVM's te.compute(..., tag=, attrs=)),
an op's input tensors, constant shapes, numpy-style broadcasting and TVM's traverse_inline."""
from __future__ import annotations

import math
from functools import reduce as _fold

from .. import te
from ..te.tensor import compute as te_compute
from ..errors import AotError
from ..tir.expr import Const, Expr, wrap
from ..tir.simplify import const_value
from . import tag as _tag


class TopiError(AotError):
    """A topi operator or schedule that cannot apply; the message names it and why."""


def compute(shape, fcompute, name="compute", tag="", attrs=None, axis_names=None):
    """te.compute with TVM's tag and attrs: they say what kind of stage this is (tag.py), which
    is how the generic schedules pick what to inline and what to schedule. axis_names: the
    output axes' names (TVM's varargs_names; i0, i1, ... otherwise)."""
    t = te_compute(tuple(shape), fcompute, name=name, axis_names=list(axis_names) if axis_names else None)
    t.op.tag = tag
    t.op.attrs = dict(attrs or {})
    return t


def op_tag(op):
    return getattr(op, "tag", "") or ""


def input_tensors(op):
    """The tensors a compute op reads, in order of first reading (TVM: op.input_tensors)."""
    if hasattr(op, "input_tensors"):
        return list(op.input_tensors)
    body = getattr(op, "body", None)
    if body is None:
        return []
    from ..tir.expr import walk
    seen, out = set(), []
    for b in body if isinstance(body, (list, tuple)) else [body]:
        for e in walk(b):
            t = getattr(e, "tensor", None)
            if isinstance(e, te.TensorRef) and id(t) not in seen:
                seen.add(id(t))
                out.append(t)
    return out


def is_placeholder(t):
    return t.is_placeholder if isinstance(t, te.Tensor) else not hasattr(getattr(t, "op", None), "body")


def get_const_int(x):
    """An int from an int or a constant expression; a symbolic size is refused by name."""
    if isinstance(x, (int, bool)):
        return int(x)
    v = const_value(wrap(x))
    if v is None:
        raise TopiError(f"expected a constant integer, got the expression {x}")
    return int(v)


def get_const_tuple(shape):
    """A shape's constant dimensions as ints; symbolic ones are kept as expressions."""
    out = []
    for d in shape:
        v = d if isinstance(d, int) else const_value(wrap(d))
        out.append(int(v) if v is not None else d)
    return tuple(out)


def prod(xs):
    return _fold(lambda a, b: a * b, xs, 1)


def is_const_shape(shape):
    return all(isinstance(d, int) for d in get_const_tuple(shape))


def dims_equal(a, b):
    a, b = get_const_tuple([a, b])
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return not isinstance(a, int) and not isinstance(b, int) and wrap(a).key() == wrap(b).key()


def broadcast_shape(sa, sb, what):
    """numpy's broadcast of two shapes (aligned at the right; a 1 stretches)."""
    sa, sb = get_const_tuple(sa), get_const_tuple(sb)
    n = max(len(sa), len(sb))
    sa = (1,) * (n - len(sa)) + tuple(sa)
    sb = (1,) * (n - len(sb)) + tuple(sb)
    out = []
    for k, (x, y) in enumerate(zip(sa, sb)):
        if dims_equal(x, y) or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise TopiError(f"{what}: shapes {list(sa)} and {list(sb)} do not broadcast (dimension {k}: {x} vs {y})")
    return tuple(out)


def broadcast_read(t, out_idx):
    """t's element for output index out_idx under numpy broadcasting (a size-1 dimension of t is
    read at 0)."""
    shape = get_const_tuple(t.shape)
    off = len(out_idx) - len(shape)
    return t(*[Const(0, "int32") if d == 1 else out_idx[off + k] for k, d in enumerate(shape)])


def is_tensor(x):
    return isinstance(x, te.Tensor)


def scalar(x, dtype):
    """An int/float/expression as an expression of `dtype` (a rank-0 tensor is read at ())."""
    if is_tensor(x):
        return x()
    if isinstance(x, Expr):
        return x
    if isinstance(x, float) and not dtype.startswith(("float", "bfloat")):
        dtype = "float32"
    return Const(x, dtype)


def normalize_axis(axis, ndim, what):
    """axis None | int | tuple -> sorted list of non-negative axes, each checked."""
    if axis is None:
        return list(range(ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise TopiError(f"{what}: axis {a} is out of range for rank {ndim}")
        a = a % ndim if ndim else a
        if a in out:
            raise TopiError(f"{what}: axis {a} is given twice")
        out.append(a)
    return sorted(out)


def schedule_outputs(s):
    """The tensors a te schedule computes as its outputs."""
    outs = getattr(s, "outputs", [])
    return [o.output(0) if hasattr(o, "output") and not isinstance(o, te.Tensor) else o for o in outs]


def is_output(s, op):
    return any(o.op is op for o in schedule_outputs(s))


def traverse_inline(s, final_op, callback):
    """TVM's traverse_inline: from final_op back through its inputs, each injective stage that
    is not an output is inlined (computed where it is read), and callback(op) sees every compute op
    once, producers first."""
    visited = set()

    def go(op):
        if id(op) in visited:
            return
        visited.add(id(op))
        if _tag.is_injective(op_tag(op)):
            if not is_output(s, op):
                s[op].compute_inline()
        for t in input_tensors(op):
            if not is_placeholder(t):
                go(t.op)
        callback(op)
    go(final_op)


def compute_ops(outs):
    """Every compute op the outputs depend on, outputs last (producers before consumers)."""
    seen, order = set(), []

    def go(t):
        if id(t.op) in seen or is_placeholder(t):
            return
        seen.add(id(t.op))
        for x in input_tensors(t.op):
            go(x)
        order.append(t.op)
    for t in outs:
        go(t)
    return order


def auto_inline_injective(s, outs):
    """TVM's te.schedule.AutoInlineInjective: every stage without a reduction that is not an
    output is computed where it is read."""
    for op in compute_ops(outs):
        if not is_output(s, op) and not list(getattr(op, "reduce_axis", [])):
            s[op].compute_inline()


def ceil_div(a, b):
    return -(-a // b)


def log2_floor(n):
    return int(math.log2(n)) if n > 0 else 0
