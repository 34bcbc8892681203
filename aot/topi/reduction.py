"""topi's reductions (TVM: topi.sum, max, min, prod, argmax, argmin): axis None (all), an int or
a tuple; keepdims keeps the reduced dimensions as size 1. The stage is named after its input
(<input>_red), its reduce axes k<dimension>, and tagged comm_reduce."""
from __future__ import annotations

import builtins

from .. import te
from ..tir.expr import Const, and_, eq, ne, or_, select
from . import tag
from .utils import TopiError, compute, get_const_tuple, normalize_axis


def _target_shape(shape, axes, keepdims):
    return tuple(1 if d in axes else s for d, s in enumerate(shape) if keepdims or d not in axes)


def _input_index(i, axes, ndim, keepdims, ks):
    """The input index for output index i and the reduce axes ks (one per reduced dimension)."""
    out, it, kit = [], iter(i), iter(ks)
    for d in range(ndim):
        if d in axes:
            out.append(next(kit))
            if keepdims:
                next(it)
        else:
            out.append(next(it))
    return out


def _reduce_axes(data, axes):
    shape = get_const_tuple(data.shape)
    return [te.reduce_axis((0, shape[d]), f"k{d}") for d in axes]


def _comm_reduce(name, reducer):
    def op(data, axis=None, keepdims=False):
        axes = normalize_axis(axis, data.ndim, f"topi.{name}")
        shape = _target_shape(get_const_tuple(data.shape), axes, keepdims)

        def body(*i):
            ks = _reduce_axes(data, axes)
            return reducer(data(*_input_index(i, axes, data.ndim, keepdims, ks)), axis=ks)
        return compute(shape, body, f"{data.name}_red", tag.COMM_REDUCE)
    op.__name__ = name
    op.__doc__ = (f"topi.{name}(data, axis=None, keepdims=False): the {name} over `axis` (every axis when None); "
                  f"a reduction over every axis without keepdims is a rank-0 tensor, as numpy.{name} gives.")
    return op


sum = _comm_reduce("sum", te.sum)
max = _comm_reduce("max", te.max)
min = _comm_reduce("min", te.min)
prod = _comm_reduce("prod", te.prod)


def _arg_reduce(name, reducer):
    def op(data, axis=None, keepdims=False, select_last_index=False):
        """The index of the first extreme along the reduced axes (flattened over them, as numpy's
        argmax over every axis gives), int32. Two stages: the extreme (<input>_red_temp), then the
        first index that holds it (a NaN counts as the extreme, as in numpy)."""
        axes = normalize_axis(axis, data.ndim, f"topi.{name}")
        dshape = get_const_tuple(data.shape)
        if not builtins.all(isinstance(dshape[d], int) for d in axes):
            raise TopiError(f"topi.{name}: the reduced dimensions must be constant, not {[dshape[d] for d in axes]}")
        shape = _target_shape(dshape, axes, keepdims)
        inner = _target_shape(dshape, axes, False)

        def extreme(*i):
            ks = _reduce_axes(data, axes)
            return reducer(data(*_input_index(i, axes, data.ndim, False, ks)), axis=ks)
        ext = compute(inner, extreme, f"{data.name}_red_temp", tag.COMM_REDUCE_IDX)
        strides, acc = [], 1
        for d in reversed(axes):
            strides.append(acc)
            acc *= dshape[d]
        strides = strides[::-1]

        def body(*i):
            ks = _reduce_axes(data, axes)
            outer = [v for d, v in enumerate(i) if not keepdims or d not in axes]
            v = data(*_input_index(i, axes, data.ndim, keepdims, ks))
            m = ext(*outer)
            flat = Const(0, "int32")
            for k, st in zip(ks, strides):
                flat = flat + k.var * Const(st, "int32")
            hit = eq(v, m)
            if data.dtype.startswith(("float", "bfloat")):
                hit = or_(hit, and_(ne(m, m), ne(v, v)))
            if select_last_index:
                return te.max(select(hit, flat, Const(-1, "int32")), axis=ks)
            return te.min(select(hit, flat, Const(acc, "int32")), axis=ks)
        return compute(shape, body, f"{data.name}_red", tag.COMM_REDUCE_IDX)
    op.__name__ = name
    return op


argmax = _arg_reduce("argmax", te.max)
argmin = _arg_reduce("argmin", te.min)


def all(data, axis=None, keepdims=False):
    """Whether every element along `axis` is nonzero (a bool tensor)."""
    from .math import cast
    return cast(min(cast(cast(data, "bool"), "int32"), axis, keepdims), "bool")


def any(data, axis=None, keepdims=False):
    """Whether some element along `axis` is nonzero (a bool tensor)."""
    from .math import cast
    return cast(max(cast(cast(data, "bool"), "int32"), axis, keepdims), "bool")
