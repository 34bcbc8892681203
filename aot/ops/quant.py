"""Quantisation ops with exact integer semantics: the int32 accumulations are exact, and the
requantisation follows ONNX's definition (round half to even, saturate)."""
from __future__ import annotations

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Cast, Const, call, max_, min_
from .conv import Conv, conv_sum
from .registry import ONNX_DTYPES, Op, Pattern, norm_axis, register

QTYPES = ("int8", "uint8", "int16", "uint16")


def _per_axis(t, scale_shape, axis, i):
    """Index into a scale/zero point that is a scalar or per-axis vector."""
    if len(scale_shape) == 0:
        return []
    if int(np.prod(scale_shape)) == 1:
        return [Const(0, "int32")] * len(scale_shape)
    return [i[axis]]


def _saturate(v, dtype):
    info = np.iinfo(dtype)
    return Cast(dtype, min_(max_(v, Const(float(info.min), v.dtype)), Const(float(info.max), v.dtype)))


@register
class QuantizeLinear(Op):
    name = "QuantizeLinear"
    pattern = Pattern.ELEMWISE
    dtypes = ("float32", "float64", "int32")
    min_inputs = 2

    def canon(self, ctx):
        if int(ctx.attrs.get("block_size", 0) or 0):
            ctx.error("blocked quantisation (block_size) is not supported")
        zp = ctx.input(2)
        out = zp.type.dtype if zp is not None else ONNX_DTYPES.get(ctx.attrs.get("output_dtype", 2) or 2, "uint8")
        if out not in QTYPES:
            ctx.error(f"quantising to {out} is not supported")
        axis = int(ctx.attrs.get("axis", 1))
        if ctx.input(1).type.size > 1:      # the axis only matters for per-axis scales
            axis = norm_axis(ctx, axis, max(len(ctx.input(0).type.shape), 1))
        ctx.attrs = {"axis": axis, "out": out}

    def infer(self, node):
        return [TensorType(node.inputs[0].type.shape, node.attrs["out"])]

    def reference(self, node, x, s, zp=None):
        sh = [1] * x.ndim
        if s.size > 1:
            sh[node.attrs["axis"]] = -1
        y = np.rint(x.astype(np.float32) / s.reshape(sh).astype(np.float32))
        if zp is not None:
            y = y + zp.reshape(sh).astype(np.float32)
        info = np.iinfo(node.attrs["out"])
        return [np.clip(y, info.min, info.max).astype(node.attrs["out"])]

    def compute(self, node, x, s, zp=None):
        a, out = node.attrs["axis"], node.attrs["out"]

        def body(*i):
            si = _per_axis(x, s.shape, a, i)
            v = call("nearbyint", Cast("float32", x(*i)) / Cast("float32", s(*si)))
            if zp is not None:
                v = v + Cast("float32", zp(*si))
            return _saturate(v, out)
        return [te.compute(x.shape, body, "quantize")]


def _zp_load(zp, idx):
    return Cast("int32", zp(*idx)) if zp is not None else Const(0, "int32")


@register
class MatMulInteger(Op):
    name = "MatMulInteger"
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = ("int8", "uint8")
    min_inputs = 2

    def infer(self, node):
        a, b = node.inputs[0].type, node.inputs[1].type
        if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
            raise OpError(node, "only 2-D MatMulInteger is supported")
        return [TensorType((a.shape[0], b.shape[1]), "int32")]

    def reference(self, node, a, b, azp=None, bzp=None):
        A = a.astype(np.int32) - (0 if azp is None else azp.astype(np.int32).reshape(-1, 1) if azp.size > 1 else azp.astype(np.int32))
        B = b.astype(np.int32) - (0 if bzp is None else bzp.astype(np.int32).reshape(1, -1) if bzp.size > 1 else bzp.astype(np.int32))
        return [(A @ B).astype(np.int32)]

    def compute(self, node, a, b, azp=None, bzp=None):
        K = a.shape[1]

        def body(i, j):
            r = te.reduce_axis(K, "rk")
            av = Cast("int32", a(i, r.var)) - (_zp_load(azp, _vec_idx(azp, i)) if azp is not None else Const(0, "int32"))
            bv = Cast("int32", b(r.var, j)) - (_zp_load(bzp, _vec_idx(bzp, j)) if bzp is not None else Const(0, "int32"))
            return te.sum(av * bv, r)
        return [te.compute(node.outputs[0].type.shape, body, "matmul_integer", ["i", "j"])]


def _vec_idx(t, i):
    if len(t.shape) == 0:
        return []
    return [i] if t.shape[0] > 1 else [Const(0, "int32")] * len(t.shape)


@register
class ConvInteger(Conv):
    name = "ConvInteger"
    dtypes = ("int8", "uint8")

    def infer(self, node):
        t = Conv.infer(self, node)[0]
        return [TensorType(t.shape, "int32")]

    def reference(self, node, x, w, xzp=None, wzp=None):
        xz = x.astype(np.int64) - (0 if xzp is None else xzp.astype(np.int64))
        wz = w.astype(np.int64) - (0 if wzp is None else wzp.astype(np.int64).reshape((-1,) + (1,) * (w.ndim - 1)))
        return [Conv.reference(self, node, xz.astype(np.float64), wz.astype(np.float64))[0].astype(np.int32)]

    def compute(self, node, x, w, xzp=None, wzp=None):
        if wzp is not None and wzp.shape and int(np.prod(wzp.shape)) > 1:
            raise OpError(node, "per-channel weight zero points are not supported")
        xz = (lambda v: Cast("int32", v) - _zp_load(xzp, [Const(0, "int32")] * len(xzp.shape))) if xzp is not None \
            else (lambda v: Cast("int32", v))
        wz = (lambda v: Cast("int32", v) - _zp_load(wzp, [Const(0, "int32")] * len(wzp.shape))) if wzp is not None \
            else (lambda v: Cast("int32", v))
        return [conv_sum(node, x, w, xz, wz)]


def _requant(acc, scale, yzp, out_dtype):
    v = call("nearbyint", Cast("float32", acc) * scale)
    if yzp is not None:
        v = v + Cast("float32", yzp)
    return _saturate(v, out_dtype)


@register
class QLinearMatMul(Op):
    name = "QLinearMatMul"
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = ("int8", "uint8")
    min_inputs = 8

    def infer(self, node):
        a, b = node.inputs[0].type, node.inputs[3].type
        if len(a.shape) < 2 or len(b.shape) < 2 or a.shape[-1] != b.shape[-2]:
            raise OpError(node, f"inner dimensions of {list(a.shape)} and {list(b.shape)} do not match")
        if any(node.inputs[k].type.size != 1 for k in (1, 2, 4, 5, 6, 7)):
            raise OpError(node, "per-channel scales or zero points are not supported")
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        return [TensorType(batch + (a.shape[-2], b.shape[-1]), node.inputs[7].type.dtype)]

    def reference(self, node, a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp):
        A = a.astype(np.int32) - a_zp.astype(np.int32)
        B = b.astype(np.int32) - b_zp.astype(np.int32)
        D = np.matmul(A, B) * (a_s * b_s / y_s) + y_zp
        info = np.iinfo(y_zp.dtype)
        return [np.clip(np.rint(D), info.min, info.max).astype(y_zp.dtype)]

    def compute(self, node, a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp):
        K = a.shape[-1]
        z = lambda t: [Const(0, "int32")] * len(t.shape)  # noqa: E731
        shape = node.outputs[0].type.shape
        nb = len(shape) - 2

        def body(*o):
            r = te.reduce_axis(K, "rk")
            bi = list(o[:nb])
            av = Cast("int32", a(*te.broadcast_index(bi, a.shape[:-2]), o[nb], r.var)) - Cast("int32", a_zp(*z(a_zp)))
            bv = Cast("int32", b(*te.broadcast_index(bi, b.shape[:-2]), r.var, o[nb + 1])) - Cast("int32", b_zp(*z(b_zp)))
            return te.sum(av * bv, r)
        acc = te.compute(shape, body, "qmatmul")
        scale = Cast("float32", a_s(*z(a_s))) * Cast("float32", b_s(*z(b_s))) / Cast("float32", y_s(*z(y_s)))
        out = node.outputs[0].type.dtype
        return [te.compute(shape, lambda *o: _requant(acc(*o), scale, y_zp(*z(y_zp)), out), "requant")]


@register
class QLinearConv(Conv):
    name = "QLinearConv"
    dtypes = ("int8", "uint8")
    min_inputs = 8

    def canon(self, ctx):
        x, w = ctx.inputs[0], ctx.inputs[3]
        ctx.inputs = [x, w] + ctx.inputs[1:3] + ctx.inputs[4:]
        Conv.canon(self, ctx)

    def infer(self, node):
        t = Conv.infer(self, node)[0] if len(node.inputs) < 9 else Conv.infer(self, _without_bias(node))[0]
        return [TensorType(t.shape, node.inputs[7].type.dtype)]

    def reference(self, node, x, w, x_s, x_zp, w_s, w_zp, y_s, y_zp, b=None):
        xz = x.astype(np.float64) - x_zp.astype(np.float64)
        wsh = (-1,) + (1,) * (w.ndim - 1)
        wz = w.astype(np.float64) - (w_zp.astype(np.float64).reshape(wsh) if w_zp.size > 1 else w_zp.astype(np.float64))
        acc = Conv.reference(self, _without_bias(node), xz, wz)[0].astype(np.float64)
        sh = (1, -1) + (1,) * (x.ndim - 2)
        if b is not None:
            acc = acc + b.astype(np.float64).reshape(sh)
        ws = w_s.astype(np.float32).reshape(sh) if w_s.size > 1 else w_s.astype(np.float32)
        D = acc * (x_s.astype(np.float32) * ws / y_s.astype(np.float32)) + y_zp
        info = np.iinfo(y_zp.dtype)
        return [np.clip(np.rint(D), info.min, info.max).astype(y_zp.dtype)]

    def compute(self, node, x, w, x_s, x_zp, w_s, w_zp, y_s, y_zp, b=None):
        z = lambda t: [Const(0, "int32")] * len(t.shape)  # noqa: E731
        if w_zp.shape and int(np.prod(w_zp.shape)) > 1:
            if np.any(node.inputs[5].const != 0) if node.inputs[5].is_const else True:
                raise OpError(node, "per-channel weight zero points must be 0")
        acc = conv_sum(_without_bias(node), x, w, lambda v: Cast("int32", v) - Cast("int32", x_zp(*z(x_zp))),
                       lambda v: Cast("int32", v) - (Cast("int32", w_zp(*z(w_zp))) if not w_zp.shape or int(np.prod(w_zp.shape)) == 1 else Const(0, "int32")))
        per_ch = w_s.shape and int(np.prod(w_s.shape)) > 1
        out = node.outputs[0].type.dtype

        def body(n, m, *o):
            ws = Cast("float32", w_s(m) if per_ch else w_s(*z(w_s)))
            scale = Cast("float32", x_s(*z(x_s))) * ws / Cast("float32", y_s(*z(y_s)))
            a = acc(n, m, *o)
            if b is not None:
                a = a + b(m)
            return _requant(a, scale, y_zp(*z(y_zp)), out)
        return [te.compute(acc.shape, body, "requant")]


def _without_bias(node):
    class _N:
        pass
    n = _N()
    n.name, n.op, n.attrs, n.outputs = node.name, node.op, node.attrs, node.outputs
    n.inputs = node.inputs[:2]
    return n
