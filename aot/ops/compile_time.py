"""Ops whose results are known at compile time (shape arithmetic, constant generators).

They have a numpy reference but no compute: if one cannot be folded, the compiler refuses it.
"""
from __future__ import annotations

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Cast, Const
from .quant import check_const_scales, check_scale_shape, expand_scale, per_axis, scale_attrs
from .registry import Op, Pattern, register


class _CompileTime(Op):
    pattern = Pattern.OPAQUE

    def check(self, node):
        raise OpError(node, "must be computable at compile time, but its inputs are not constants")


@register
class Shape(_CompileTime):
    name = "Shape"
    fold_from_types = True

    def canon(self, ctx):
        r = len(ctx.input(0).type.shape)
        s, e = ctx.attrs.get("start", 0), ctx.attrs.get("end", r)
        s, e = (s + r if s < 0 else s), (e + r if e < 0 else e)
        ctx.attrs["start"], ctx.attrs["end"] = max(0, min(s, r)), max(0, min(e, r))

    def infer(self, node):
        return [TensorType((max(0, node.attrs["end"] - node.attrs["start"]),), "int64")]

    def reference(self, node, x=None):
        shape = node.inputs[0].type.shape
        return [np.array(shape[node.attrs["start"]:node.attrs["end"]], np.int64)]


@register
class Size(_CompileTime):
    name = "Size"
    fold_from_types = True

    def infer(self, node):
        return [TensorType((), "int64")]

    def reference(self, node, x=None):
        return [np.array(node.inputs[0].type.size, np.int64)]


@register
class ConstantOfShape(_CompileTime):
    name = "ConstantOfShape"

    def canon(self, ctx):
        v = ctx.attrs.get("value")
        ctx.attrs["value"] = np.zeros(1, np.float32) if v is None else np.asarray(v).reshape(-1)[:1]
        ctx.attrs["shape"] = ctx.ints_input(0, "input", required=True)

    def infer(self, node):
        return [TensorType(tuple(node.attrs["shape"]), str(node.attrs["value"].dtype))]

    def reference(self, node, shape=None):
        # a broadcast view: a large splat constant costs one element of memory
        return [np.broadcast_to(node.attrs["value"].reshape(()), tuple(node.attrs["shape"]))]


@register
class Range(_CompileTime):
    name = "Range"

    def canon(self, ctx):
        start, limit, delta = (ctx.const_input(i, n) for i, n in enumerate(("start", "limit", "delta")))
        ctx.attrs["values"] = np.arange(start.item(), limit.item(), delta.item()).astype(start.dtype)

    def infer(self, node):
        v = node.attrs["values"]
        return [TensorType(v.shape, str(v.dtype))]

    def reference(self, node, *xs):
        return [node.attrs["values"]]


@register
class DequantizeLinear(Op):
    name = "DequantizeLinear"
    pattern = Pattern.ELEMWISE
    fold_at_import = False     # a weight's int8 form and scale stay visible to the QDQ folding pass
    dtypes = ("int8", "uint8", "int16", "uint16", "int32")   # int16/uint16: ONNX opset 21, TFLite int16x8
    min_inputs = 2

    def canon(self, ctx):
        axis, block = scale_attrs(ctx, len(ctx.input(0).type.shape))
        ctx.attrs = {"axis": axis, "block": block} if block else {"axis": axis}
        check_const_scales(ctx, (1,), dequantise=(0, 2))

    def infer(self, node):
        x, s = node.inputs[0].type, node.inputs[1].type
        check_scale_shape(node, x.shape, s.shape, node.attrs["axis"], node.attrs.get("block", 0))
        if len(node.inputs) > 2 and node.inputs[2] is not None:
            if node.inputs[2].type.dtype != x.dtype:
                raise OpError(node, "zero point dtype must match the input dtype")
            if node.inputs[2].type.size != s.size or (s.size > 1 and node.inputs[2].type.shape != s.shape):
                raise OpError(node, "zero point shape must match the scale shape")
        return [TensorType(x.shape, s.dtype)]

    def reference(self, node, x, s, zp=None):
        a, b = node.attrs["axis"], node.attrs.get("block", 0)
        s = expand_scale(s, x.shape, a, b)
        z = np.zeros((), np.int64) if zp is None else expand_scale(zp, x.shape, a, b).astype(np.int64)
        return [((x.astype(np.int64) - z).astype(np.float32) * s).astype(s.dtype)]

    def compute(self, node, x, s, zp=None):
        axis, blk = node.attrs["axis"], node.attrs.get("block", 0)

        def body(*i):
            si = per_axis(x, s.shape, axis, i, blk)
            q = Cast("int32", x(*i))
            if zp is not None:
                q = q - Cast("int32", zp(*si))
            return Cast(s.dtype, q) * s(*si)
        return [te.compute(x.shape, body, "dequantize")]
