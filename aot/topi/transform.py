"""topi's index-moving operators (TVM: topi.reshape, transpose, expand_dims, squeeze, concatenate,
strided_slice): "injective" stages, each output element a copy of one input element."""
from __future__ import annotations

from ..tir.expr import Const, Select, ge, lt
from . import tag
from .utils import TopiError, compute, get_const_tuple, normalize_axis, prod


def reshape(data, newshape):
    """data with the same elements in row-major order and shape newshape (one -1 may stand for
    the rest)."""
    dshape = get_const_tuple(data.shape)
    if not all(isinstance(d, int) for d in dshape):
        raise TopiError(f"topi.reshape: {data.name} has a symbolic shape {list(data.shape)}")
    new = [int(d) for d in newshape]
    total = prod(dshape)
    if new.count(-1) > 1:
        raise TopiError(f"topi.reshape: at most one -1 in {new}")
    if -1 in new:
        rest = prod(d for d in new if d != -1)
        new[new.index(-1)] = total // rest if rest else 0
    if prod(new) != total:
        raise TopiError(f"topi.reshape: {list(dshape)} ({total} elements) cannot become {new}")

    def body(*i):
        flat = Const(0, "int32")
        for v, d in zip(i, new):
            flat = flat * Const(d, "int32") + v
        return data.flat(flat)
    return compute(tuple(new), body, "T_reshape", tag.INJECTIVE)


def transpose(data, axes=None):
    """data with its axes permuted (reversed when axes is None), as numpy.transpose."""
    n = data.ndim
    perm = list(range(n))[::-1] if axes is None else [int(a) % n for a in axes]
    if sorted(perm) != list(range(n)):
        raise TopiError(f"topi.transpose: {list(axes)} is not a permutation of the {n} axes")
    shape = tuple(data.shape[p] for p in perm)

    def body(*i):
        idx = [None] * n
        for k, p in enumerate(perm):
            idx[p] = i[k]
        return data(*idx)
    return compute(shape, body, "T_transpose", tag.INJECTIVE)


def expand_dims(a, axis, num_newaxis=1):
    n = a.ndim
    if not -n - 1 <= axis <= n:
        raise TopiError(f"topi.expand_dims: axis {axis} is out of range for rank {n}")
    axis = axis % (n + 1)
    shape = tuple(a.shape[:axis]) + (1,) * num_newaxis + tuple(a.shape[axis:])
    return compute(shape, lambda *i: a(*(i[:axis] + i[axis + num_newaxis:])), "T_expand_dims", tag.BROADCAST)


def squeeze(a, axis=None):
    shape = get_const_tuple(a.shape)
    axes = [d for d, s in enumerate(shape) if s == 1] if axis is None else normalize_axis(axis, a.ndim, "topi.squeeze")
    bad = [d for d in axes if shape[d] != 1]
    if bad:
        raise TopiError(f"topi.squeeze: dimension {bad[0]} has size {shape[bad[0]]}, not 1")
    keep = [d for d in range(a.ndim) if d not in axes]

    def body(*i):
        it = iter(i)
        return a(*[next(it) if d in keep else Const(0, "int32") for d in range(a.ndim)])
    return compute(tuple(shape[d] for d in keep), body, "T_squeeze", tag.INJECTIVE)


def concatenate(tensors, axis=0):
    tensors = list(tensors)
    n = tensors[0].ndim
    axis = axis % n
    sizes = [get_const_tuple(t.shape)[axis] for t in tensors]
    shape = list(tensors[0].shape)
    shape[axis] = sum(sizes)

    starts = [sum(sizes[:k]) for k in range(len(sizes))]

    def load(k, i):
        idx = list(i)
        idx[axis] = i[axis] - Const(starts[k], "int32")
        return tensors[k](*idx)

    def body(*i):
        if len(tensors) > BALANCED_CONCAT:
            # a chain as deep as the inputs are many would overflow every expression walker's
            # recursion: halving the range keeps the depth at log2
            def pick(lo, hi):
                if hi - lo == 1:
                    return load(lo, i)
                mid = (lo + hi) // 2
                return Select(ge(i[axis], Const(starts[mid], "int32")), pick(mid, hi), pick(lo, mid))
            return pick(0, len(tensors))
        out = None
        for k in reversed(range(len(tensors))):
            v = load(k, i)
            out = v if out is None else Select(lt(i[axis], Const(starts[k] + sizes[k], "int32")), v, out)
        return out
    return compute(tuple(shape), body, "T_concat", tag.INJECTIVE)


BALANCED_CONCAT = 64     # more inputs than this: selected by halving the range, not by a chain


def strided_slice(a, begin, end, strides=None):
    shape = get_const_tuple(a.shape)
    strides = list(strides or [1] * len(begin))
    b2, sizes = [], []
    for d in range(a.ndim):
        if d >= len(begin):
            b2.append(0)
            sizes.append(shape[d])
            continue
        s = int(strides[d])
        lo, hi = slice(int(begin[d]), int(end[d]), s).indices(shape[d])[:2]
        b2.append(lo)
        sizes.append(len(range(lo, hi, s)))
    st = list(strides) + [1] * (a.ndim - len(strides))
    return compute(tuple(sizes), lambda *i: a(*[Const(b, "int32") + v * Const(int(s), "int32")
                                               for b, v, s in zip(b2, i, st)]), "T_strided_slice", tag.INJECTIVE)


