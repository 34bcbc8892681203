"""Quantisation ops with exact integer semantics: the int32 accumulations are exact, and the
requantisation follows ONNX's definition (round half to even, saturate)."""
from __future__ import annotations

import numpy as np

from ..te import tensor as te
from ..errors import OpError, QuantRangeError
from ..ir.graph import TensorType
from ..tir.expr import Cast, Const, call, max_, min_
from .conv import Conv, conv_sum
from .quant_rules import centred_max, check_scale
from .registry import ONNX_DTYPES, Op, Pattern, norm_axis, register

QTYPES = ("int8", "uint8", "int16", "uint16")


def per_axis(t, scale_shape, axis, i, block=0):
    """Index into a scale/zero point that is a scalar, a per-axis vector, or blocked (the input's
    shape with the axis divided into blocks of `block` elements)."""
    if len(scale_shape) == 0:
        return []
    if int(np.prod(scale_shape)) == 1:
        return [Const(0, "int32")] * len(scale_shape)
    if block:
        return [v // block if d == axis else v for d, v in enumerate(i)]
    return [i[axis]]


def check_scale_shape(node, x_shape, s_shape, axis, block):
    """A scale (and zero point) per tensor, per axis, or per block of `block` along the axis."""
    if int(np.prod(s_shape)) == 1 and not block:
        return
    if block:
        want = tuple(-(-d // block) if k == axis else d for k, d in enumerate(x_shape))
        if tuple(s_shape) != want:
            raise OpError(node, f"blocked scale shape {list(s_shape)} must be {list(want)}")
    elif tuple(s_shape) != (x_shape[axis],):
        raise OpError(node, f"per-axis scale shape {list(s_shape)} must be [{x_shape[axis]}]")


def expand_scale(p, x_shape, axis, block):
    """A scale/zero point array broadcastable against the input."""
    if p.size == 1 and not block:
        return p.reshape(())
    if block:
        return np.repeat(p, block, axis=axis).take(range(x_shape[axis]), axis=axis)
    sh = [1] * len(x_shape)
    sh[axis] = -1
    return p.reshape(sh)


def scale_attrs(ctx, rank):
    """Canonical axis and block_size of Quantize/DequantizeLinear."""
    axis = int(ctx.attrs.get("axis", 1))
    block = int(ctx.attrs.get("block_size", 0) or 0)
    if block < 0:
        ctx.error("block_size must be positive")
    if ctx.input(1).type.size > 1 or block:      # the axis only matters for per-axis or blocked scales
        axis = norm_axis(ctx, axis, max(rank, 1))
    return axis, block


def check_const_scales(ctx, ks, dequantise=None):
    """In canon: constant scales among inputs ks are finite and positive (quant_rules.check_scale);
    with dequantise=(data input, zero point input), the dequantised values must stay finite in
    float32 too. A scale computed at run time is the model's to keep in range."""
    for k in ks:
        v = ctx.inputs[k] if k < len(ctx.inputs) else None
        if v is None or not v.is_const:
            continue
        try:
            check_scale(v.const, f"input {k} ('{v.name}')")
        except QuantRangeError as e:
            ctx.error(str(e))
        if dequantise is not None:
            x = ctx.inputs[dequantise[0]]
            zp = ctx.inputs[dequantise[1]] if len(ctx.inputs) > dequantise[1] else None
            if x.type.dtype not in ("int8", "uint8", "int16", "uint16") or (zp is not None and not zp.is_const):
                continue
            z = np.zeros(1, np.int64) if zp is None else np.asarray(zp.const, np.int64).reshape(-1)
            s = np.asarray(v.const, np.float64).reshape(-1)
            reach = max(centred_max(int(zz), x.type.dtype) for zz in z) * s.max()
            if reach >= float(np.finfo(np.float32).max):
                ctx.error(f"input {k} ('{v.name}') scale {s.max():.7g} dequantises {x.type.dtype} values to "
                          f"{reach:.3g}, beyond float32")


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
        axis, block = scale_attrs(ctx, len(ctx.input(0).type.shape))
        zp = ctx.input(2)
        out = zp.type.dtype if zp is not None else ONNX_DTYPES.get(ctx.attrs.get("output_dtype", 2) or 2, "uint8")
        if out not in QTYPES:
            ctx.error(f"quantising to {out} is not supported")
        ctx.attrs = {"axis": axis, "out": out, "block": block}
        check_const_scales(ctx, (1,))

    def infer(self, node):
        x = node.inputs[0].type
        for k in (1, 2):
            if len(node.inputs) > k and node.inputs[k] is not None:
                check_scale_shape(node, x.shape, node.inputs[k].type.shape, node.attrs["axis"],
                                  node.attrs.get("block", 0))
        return [TensorType(x.shape, node.attrs["out"])]

    def reference(self, node, x, s, zp=None):
        a, b = node.attrs["axis"], node.attrs.get("block", 0)
        y = np.rint(x.astype(np.float32) / expand_scale(s, x.shape, a, b).astype(np.float32))
        if zp is not None:
            y = y + expand_scale(zp, x.shape, a, b).astype(np.float32)
        info = np.iinfo(node.attrs["out"])
        return [np.clip(y, info.min, info.max).astype(node.attrs["out"])]

    def compute(self, node, x, s, zp=None):
        a, out, blk = node.attrs["axis"], node.attrs["out"], node.attrs.get("block", 0)

        def body(*i):
            si = per_axis(x, s.shape, a, i, blk)
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
        # inputs 2 and 3 are zero points, not Conv's bias
        t = Conv.infer(self, _without_bias(node))[0]
        for k, what in ((2, "x_zero_point"), (3, "w_zero_point")):
            if len(node.inputs) > k and node.inputs[k] is not None and node.inputs[k].type.size != 1:
                if k == 2 or node.inputs[k].type.shape != (node.inputs[1].type.shape[0],):
                    raise OpError(node, f"{what} shape {list(node.inputs[k].type.shape)} is not supported")
        return [TensorType(t.shape, "int32")]

    def reference(self, node, x, w, xzp=None, wzp=None):
        xz = x.astype(np.int64) - (0 if xzp is None else xzp.astype(np.int64))
        wz = w.astype(np.int64) - (0 if wzp is None else wzp.astype(np.int64).reshape((-1,) + (1,) * (w.ndim - 1)))
        return [Conv.reference(self, node, xz.astype(np.float64), wz.astype(np.float64))[0].astype(np.int32)]

    def compute(self, node, x, w, xzp=None, wzp=None):
        xz = (lambda v: Cast("int32", v) - _zp_load(xzp, [Const(0, "int32")] * len(xzp.shape))) if xzp is not None \
            else (lambda v: Cast("int32", v))
        return [conv_sum(node, x, w, xz, _weight_zp_load(wzp), wload_channel=True)]


def _weight_zp_load(wzp):
    """w - w_zero_point, the zero point per tensor or per output channel."""
    if wzp is None:
        return lambda v, m: Cast("int32", v)
    if wzp.shape and int(np.prod(wzp.shape)) > 1:
        return lambda v, m: Cast("int32", v) - Cast("int32", wzp(m))
    return lambda v, m: Cast("int32", v) - Cast("int32", wzp(*[Const(0, "int32")] * len(wzp.shape)))


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

    def canon(self, ctx):
        super().canon(ctx)
        check_const_scales(ctx, (1, 4, 6))

    def infer(self, node):
        a, b = node.inputs[0].type, node.inputs[3].type
        if len(a.shape) < 2 or len(b.shape) < 2 or a.shape[-1] != b.shape[-2]:
            raise OpError(node, f"inner dimensions of {list(a.shape)} and {list(b.shape)} do not match")
        if any(node.inputs[k].type.size != 1 for k in (1, 2, 6, 7)):
            raise OpError(node, "a's and y's scales and zero points must be per-tensor")
        for k in (4, 5):        # b's may be per column (the output's last axis)
            t = node.inputs[k].type
            if t.size != 1 and (len(b.shape) != 2 or t.shape != (b.shape[-1],)):
                raise OpError(node, f"b's scale/zero point shape {list(t.shape)} must be [] or [{b.shape[-1]}] "
                                    "(per column, 2-D b)")
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        return [TensorType(batch + (a.shape[-2], b.shape[-1]), node.inputs[7].type.dtype)]

    def reference(self, node, a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp):
        A = a.astype(np.int32) - a_zp.astype(np.int32).reshape(())
        col = (lambda p: p.reshape(-1) if p.size > 1 else p.reshape(()))  # noqa: E731
        B = b.astype(np.int32) - col(b_zp).astype(np.int32)
        scale = (a_s.astype(np.float32).reshape(()) * col(b_s).astype(np.float32)) / y_s.astype(np.float32).reshape(())
        D = np.rint(np.matmul(A, B).astype(np.float32) * scale) + y_zp.reshape(())
        info = np.iinfo(y_zp.dtype)
        return [np.clip(D, info.min, info.max).astype(y_zp.dtype)]

    def compute(self, node, a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp):
        K = a.shape[-1]
        z = lambda t: [Const(0, "int32")] * len(t.shape)  # noqa: E731
        shape = node.outputs[0].type.shape
        nb = len(shape) - 2

        def per_col(t, j):
            return t(j) if int(np.prod(t.shape)) > 1 else t(*z(t))

        def body(*o):
            r = te.reduce_axis(K, "rk")
            bi = list(o[:nb])
            av = Cast("int32", a(*te.broadcast_index(bi, a.shape[:-2]), o[nb], r.var)) - Cast("int32", a_zp(*z(a_zp)))
            bv = Cast("int32", b(*te.broadcast_index(bi, b.shape[:-2]), r.var, o[nb + 1])) - \
                Cast("int32", per_col(b_zp, o[nb + 1]))
            return te.sum(av * bv, r)
        acc = te.compute(shape, body, "qmatmul")
        out = node.outputs[0].type.dtype

        def requant(*o):
            scale = Cast("float32", a_s(*z(a_s))) * Cast("float32", per_col(b_s, o[nb + 1])) / \
                Cast("float32", y_s(*z(y_s)))
            return _requant(acc(*o), scale, y_zp(*z(y_zp)), out)
        return [te.compute(shape, requant, "requant")]


@register
class QLinearConv(Conv):
    name = "QLinearConv"
    dtypes = ("int8", "uint8")
    min_inputs = 8

    def canon(self, ctx):
        check_const_scales(ctx, (1, 4, 6))
        x, w = ctx.inputs[0], ctx.inputs[3]
        ctx.inputs = [x, w] + ctx.inputs[1:3] + ctx.inputs[4:]
        Conv.canon(self, ctx)

    def infer(self, node):
        # after canon the inputs are x, w, x_s, x_zp, w_s, w_zp, y_s, y_zp[, bias]: only input 8 is a bias
        t = Conv.infer(self, _without_bias(node))[0]
        m = node.inputs[1].type.shape[0]
        b = node.inputs[8] if len(node.inputs) > 8 else None
        if b is not None and (tuple(b.type.shape) != (m,) or b.type.dtype != "int32"):
            raise OpError(node, f"bias must be int32 of shape [{m}], got {b.type.dtype}{list(b.type.shape)}")
        for k in (2, 3, 6, 7):
            if node.inputs[k].type.size != 1:
                raise OpError(node, f"input {k} must be a per-tensor scale or zero point")
        for k in (4, 5):
            if node.inputs[k].type.size not in (1, m):
                raise OpError(node, f"per-channel weight scale/zero point must have {m} elements")
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
        acc = conv_sum(_without_bias(node), x, w, lambda v: Cast("int32", v) - Cast("int32", x_zp(*z(x_zp))),
                       _weight_zp_load(w_zp), wload_channel=True)
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
