"""TopK as two kernels: each element's rank along the axis, then a gather by rank."""
from __future__ import annotations

import numpy as np
from onnx import helper

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Cast, Const, and_, eq, gt, lt, or_, select
from .registry import NUMERIC, Op, Pattern, norm_axis, register


@register
class TopK(Op):
    name = "TopK"

    def expand_onnx(self, pn, values, opset, named):
        attrs = {a.name: helper.get_attribute_value(a) for a in pn.attribute}
        x = values[pn.input[0]]
        if opset >= 10:
            kv = values.get(pn.input[1])
            if kv is None or not kv.is_const:
                from ..errors import NeedsConstantError
                raise NeedsConstantError(named, f"input 'K' ({pn.input[1]}) must be a compile-time constant", pn.input[1])
            k = int(np.asarray(kv.const).reshape(-1)[0])
        else:
            k = int(attrs["k"])
        axis = norm_axis(named, int(attrs.get("axis", -1)), len(x.type.shape))
        largest = int(attrs.get("largest", 1))
        base = (pn.name or pn.output[0]) + "/"
        rank = base + "rank"
        outs = list(pn.output) + [""] * (2 - len(pn.output))
        return [helper.make_node("AotTopKRank", [pn.input[0]], [rank], name=rank, axis=axis, largest=largest),
                helper.make_node("AotTopKSelect", [pn.input[0], rank], [outs[0] or base + "values", outs[1] or base + "indices"],
                                 name=base + "select", axis=axis, k=k)]


@register
class TopKRank(Op):
    """rank(i) = how many elements along the axis come before x[i] (ties: the lower index first)."""
    name = "AotTopKRank"
    pattern = Pattern.OPAQUE
    dtypes = NUMERIC

    def infer(self, node):
        return [TensorType(node.inputs[0].type.shape, "int32")]

    def reference(self, node, x):
        a, largest = node.attrs["axis"], node.attrs["largest"]
        order = np.argsort(-x if largest else x, axis=a, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(x.shape[a]).reshape([-1 if d == a else 1 for d in range(x.ndim)]), axis=a)
        return [rank.astype(np.int32)]

    def compute(self, node, x):
        a, largest = node.attrs["axis"], node.attrs["largest"]

        def body(*i):
            r = te.reduce_axis(x.shape[a], "r")
            other = list(i)
            other[a] = r.var
            xo, xi = x(*other), x(*i)
            before = gt(xo, xi) if largest else lt(xo, xi)
            before = or_(before, and_(eq(xo, xi), lt(r.var, i[a])))
            return te.sum(select(before, Const(1, "int32"), Const(0, "int32")), r)
        return [te.compute(x.shape, body, "rank")]


@register
class TopKSelect(Op):
    name = "AotTopKSelect"
    pattern = Pattern.OPAQUE
    min_inputs = 2

    def infer(self, node):
        x = node.inputs[0].type
        a, k = node.attrs["axis"], node.attrs["k"]
        if not 0 <= k <= x.shape[a]:
            raise OpError(node, f"K={k} is larger than the axis ({x.shape[a]})")
        shape = x.shape[:a] + (k,) + x.shape[a + 1:]
        return [TensorType(shape, x.dtype), TensorType(shape, "int64")]

    def reference(self, node, x, rank):
        a, k = node.attrs["axis"], node.attrs["k"]
        order = np.argsort(rank, axis=a)
        idx = np.take(order, np.arange(k), axis=a)
        return [np.take_along_axis(x, idx, axis=a), idx.astype(np.int64)]

    def compute(self, node, x, rank):
        a = node.attrs["axis"]
        shape = node.outputs[0].type.shape

        def pick(value):
            def body(*o):
                r = te.reduce_axis(x.shape[a], "r")
                src = list(o)
                src[a] = r.var
                hit = eq(rank(*src), o[a])
                v = value(src, r.var)
                return te.sum(select(hit, v, Const(0, v.dtype)), r)
            return body
        vals = te.compute(shape, pick(lambda src, r: x(*src)), "topk_values")
        idx = te.compute(shape, pick(lambda src, r: Cast("int64", r)), "topk_indices")
        return [vals, idx]
