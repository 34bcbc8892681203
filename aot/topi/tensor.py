"""topi's tensor builders (TVM: topi.elemwise_sum, topi.full, topi.full_like)."""
from __future__ import annotations

from ..tir.expr import Const
from . import tag
from .utils import TopiError, compute, dims_equal


def elemwise_sum(xs):
    """The elementwise sum of tensors of one shape and dtype: one stage, T_elemwise_sum."""
    xs = list(xs)
    if not xs:
        raise TopiError("topi.elemwise_sum: takes at least one tensor")
    first = xs[0]
    for x in xs[1:]:
        if x.dtype != first.dtype or len(x.shape) != len(first.shape) or \
                not all(dims_equal(a, b) for a, b in zip(x.shape, first.shape)):
            raise TopiError(f"topi.elemwise_sum: {x.name} is {x.dtype}{list(x.shape)}, not "
                            f"{first.dtype}{list(first.shape)} as {first.name}")

    def body(*i):
        acc = xs[0](*i)
        for x in xs[1:]:
            acc = acc + x(*i)
        return acc
    return compute(first.shape, body, "T_elemwise_sum", tag.ELEMWISE)


def full(shape, dtype, fill_value):
    """A tensor of `shape` holding fill_value everywhere."""
    v = Const(fill_value, dtype)
    return compute(tuple(shape), lambda *i: v, "T_full", tag.ELEMWISE)


def full_like(x, fill_value):
    v = Const(fill_value, x.dtype)
    return compute(x.shape, lambda *i: v, "T_full_like", tag.ELEMWISE)
