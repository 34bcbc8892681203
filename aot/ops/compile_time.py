"""Ops whose results are known at compile time (shape arithmetic, constant generators).

They have a numpy reference but no compute: if one cannot be folded, the compiler refuses it.
"""
from __future__ import annotations

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Cast, Const
from .registry import Op, Pattern, norm_axis, register


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
    dtypes = ("int8", "uint8", "int16", "int32")        # int16: ONNX opset 21, TFLite's int16x8 models
    min_inputs = 2

    def canon(self, ctx):
        axis = int(ctx.attrs.get("axis", 1))
        if ctx.input(1).type.size > 1:      # the axis only matters for per-axis scales
            axis = norm_axis(ctx, axis, len(ctx.input(0).type.shape))
        ctx.attrs = {"axis": axis}

    def infer(self, node):
        x, s = node.inputs[0].type, node.inputs[1].type
        if s.size > 1:
            if s.shape != (x.shape[node.attrs["axis"]],):
                raise OpError(node, "per-axis scale must match the axis size")
        if len(node.inputs) > 2 and node.inputs[2] is not None and node.inputs[2].type.dtype != x.dtype:
            raise OpError(node, "zero point dtype must match the input dtype")
        return [TensorType(x.shape, s.dtype)]

    def _bshape(self, node, x):
        if np.size(node.inputs[1].type.size) and node.inputs[1].type.size > 1:
            sh = [1] * x.ndim if hasattr(x, "ndim") else [1] * len(x.shape)
            sh[node.attrs["axis"]] = -1
            return sh
        return None

    def reference(self, node, x, s, zp=None):
        sh = self._bshape(node, x)
        s = s.reshape(sh) if sh else s.reshape(())
        z = np.zeros((), np.int64) if zp is None else (zp.reshape(sh) if sh else zp.reshape(())).astype(np.int64)
        return [((x.astype(np.int64) - z).astype(np.float32) * s).astype(s.dtype)]

    def compute(self, node, x, s, zp=None):
        axis = node.attrs["axis"]
        per_axis = node.inputs[1].type.size > 1

        def body(*i):
            si = [i[axis]] if per_axis else [Const(0, "int32")] * len(s.shape)
            q = Cast("int32", x(*i))
            if zp is not None:
                q = q - Cast("int32", zp(*si))
            return Cast(s.dtype, q) * s(*si)
        return [te.compute(x.shape, body, "dequantize")]
