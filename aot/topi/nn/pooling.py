"""topi.nn.pool2d and global_pool (TVM's stages: pad_temp, then pool_max, or pool_sum and pool_avg)."""
from __future__ import annotations

import numpy as np

from ... import te
from ...tir.expr import Const, Select, and_, cast, ge, is_float, lt
from .. import tag
from ..reduction import max as _max, sum as _sum
from ..utils import TopiError, compute, get_const_tuple
from .pad import pad


def _lowest(dtype):
    return float("-inf") if is_float(dtype) else int(np.iinfo(dtype).min)


def pool2d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCHW",
           count_include_pad=True):
    """Max or average pooling over the H and W of `layout` (NCHW or NHWC); padding is
    (top, left, bottom, right)."""
    if pool_type not in ("max", "avg"):
        raise TopiError(f"topi.nn.pool2d: pool_type {pool_type!r} is not 'max' or 'avg'")
    if layout not in ("NCHW", "NHWC"):
        raise TopiError(f"topi.nn.pool2d: layout {layout!r} is not NCHW or NHWC")
    kh, kw = (int(k) for k in kernel)
    sh, sw = (int(s) for s in stride)
    dh, dw = (int(d) for d in dilation)
    top, left, bottom, right = (int(p) for p in padding)
    shape = get_const_tuple(data.shape)
    hd, wd = layout.index("H"), layout.index("W")
    ih, iw = shape[hd], shape[wd]
    ekh, ekw = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    if ceil_mode:
        oh = -(-(ih - ekh + top + bottom) // sh) + 1
        ow = -(-(iw - ekw + left + right) // sw) + 1
        bottom = max(bottom, (oh - 1) * sh + ekh - ih - top)
        right = max(right, (ow - 1) * sw + ekw - iw - left)
    else:
        oh = (ih - ekh + top + bottom) // sh + 1
        ow = (iw - ekw + left + right) // sw + 1
    before, after = [0] * 4, [0] * 4
    before[hd], before[wd], after[hd], after[wd] = top, left, bottom, right
    padded = any(before + after)
    fill = _lowest(data.dtype) if pool_type == "max" else 0
    temp = pad(data, before, after, fill, name="pad_temp") if padded else data
    out_shape = list(shape)
    out_shape[hd], out_shape[wd] = oh, ow

    def window(i, ry, rx):
        idx = list(i)
        idx[hd] = i[hd] * Const(sh, "int32") + ry.var * Const(dh, "int32")
        idx[wd] = i[wd] * Const(sw, "int32") + rx.var * Const(dw, "int32")
        return temp(*idx)

    def red(fn):
        def body(*i):
            ry, rx = te.reduce_axis((0, kh), name="rv0"), te.reduce_axis((0, kw), name="rv1")
            return fn(window(i, ry, rx), axis=[ry, rx])
        return body
    if pool_type == "max":
        return compute(tuple(out_shape), red(te.max), "pool_max", "pool_max")
    total = compute(tuple(out_shape), red(te.sum), "pool_sum", "pool_sum")
    if count_include_pad:
        return compute(tuple(out_shape), lambda *i: total(*i) / Const(kh * kw, data.dtype), "pool_avg",
                       tag.ELEMWISE)

    def count(i, d, k, s, dil, lo, size):
        start = i * Const(s, "int32") - Const(lo, "int32")
        n = Const(0, "int32")
        for t in range(k):
            pos = start + Const(t * dil, "int32")
            n = n + Select(and_(ge(pos, Const(0, "int32")), lt(pos, Const(size, "int32"))),
                           Const(1, "int32"), Const(0, "int32"))
        return n
    return compute(tuple(out_shape), lambda *i: total(*i) / cast(data.dtype, count(i[hd], hd, kh, sh, dh, top, ih) *
                                                                  count(i[wd], wd, kw, sw, dw, left, iw)),
                   "pool_avg", tag.ELEMWISE)


def global_pool(data, pool_type, layout="NCHW"):
    """The max or mean over H and W, kept as size 1."""
    axes = (layout.index("H"), layout.index("W"))
    if pool_type == "max":
        return _max(data, axes, keepdims=True)
    if pool_type != "avg":
        raise TopiError(f"topi.nn.global_pool: pool_type {pool_type!r} is not 'max' or 'avg'")
    shape = get_const_tuple(data.shape)
    s = _sum(data, axes, keepdims=True)
    return compute(s.shape, lambda *i: s(*i) / Const(shape[axes[0]] * shape[axes[1]], data.dtype), "T_divide",
                   tag.ELEMWISE)
