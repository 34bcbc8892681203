"""More of TFLite's int8 kernels: MUL, PRELU, MEAN and BATCH_MATMUL, each with TFLite Micro's
integer arithmetic (MultiplyByQuantizedMultiplier of an exact int32 value, the output zero point
added, then the clamp). The TFLite frontend computes the multipliers as TFLite Micro's Prepare
does; the numpy references below are written from TFLite's kernel definitions.
"""
from __future__ import annotations

import numpy as np

from ..te import tensor as te
from ..ir.graph import TensorType
from ..tir.expr import Bin, Cast, Const, Select, ge
from .conv import ConvTranspose, conv_transpose_sum
from .dense import MatMul
from .fixed_point import mbqm, mbqm64, mbqm64_np, mbqm_np
from .qnn import QUANT_ATTRS, QBinary, clamp_cast, i32, Requantised, acc_dtype, requant_channels_np, widen
from .reduce import Reduce
from .registry import Op, Pattern, register
from .window import split_index

QTYPES = ("int8",)


def _clamp_np(v, a):
    info = np.iinfo(a["out_dtype"])
    return np.clip(v, a.get("act_min", info.min), a.get("act_max", info.max)).astype(a["out_dtype"])


def _centred(t, idx, zp):
    return Cast("int32", t(*idx)) - i32(zp)


class _QBinary(QBinary):
    """The element function `element(attrs, x - x_zp, y - y_zp)`, clamped and cast."""
    dtypes = QTYPES

    def compute(self, node, x, y):
        shape = node.outputs[0].type.shape

        def body(*i):
            return clamp_cast(self.element(node.attrs,
                                            _centred(x, te.broadcast_index(list(i), x.shape), node.attrs["x_zp"]),
                                            _centred(y, te.broadcast_index(list(i), y.shape), node.attrs["y_zp"])),
                               node)
        return [te.compute(shape, body, self.name.lower())]


@register
class QMul(_QBinary):
    """TFLite MUL, int8: (x - x_zp) * (y - y_zp) requantised by multiplier/shift (the real
    multiplier x_scale * y_scale / out_scale), + out_zp, clamped to act_min..act_max; int16 too
    (zero points 0: the int32 product of two int16 values cannot overflow)."""
    name = "QMul"
    dtypes = ("int8", "int16")

    def reference(self, node, x, y):
        a = node.attrs
        prod = (x.astype(np.int64) - a["x_zp"]) * (y.astype(np.int64) - a["y_zp"])
        return [_clamp_np(mbqm_np(prod, a["multiplier"], a["shift"]) + a["out_zp"], a)]

    @staticmethod
    def element(a, x, y):
        return mbqm(x * y, int(a["multiplier"]), int(a["shift"])) + i32(a["out_zp"])


@register
class QPRelu(_QBinary):
    """TFLite PRELU, int8: x >= x_zp rescaled by (multiplier, shift) = x_scale / out_scale, else
    (x - x_zp) * (alpha - alpha_zp) rescaled by (alpha_multiplier, alpha_shift) = x_scale *
    alpha_scale / out_scale; the alpha zero point is attr y_zp."""
    name = "QPRelu"

    def reference(self, node, x, alpha):
        a = node.attrs
        xv = x.astype(np.int64) - a["x_zp"]
        av = alpha.astype(np.int64) - a["y_zp"]
        out = np.where(xv >= 0, mbqm_np(xv, a["multiplier"], a["shift"]),
                       mbqm_np(xv * av, a["alpha_multiplier"], a["alpha_shift"]))
        return [_clamp_np(out + a["out_zp"], a)]

    @staticmethod
    def element(a, x, alpha):
        pos = mbqm(x, int(a["multiplier"]), int(a["shift"]))
        neg = mbqm(x * alpha, int(a["alpha_multiplier"]), int(a["alpha_shift"]))
        return Select(ge(x, i32(0)), pos, neg) + i32(a["out_zp"])


@register
class QLeakyRelu(Op):
    """TFLite LEAKY_RELU on int16 (int8 is a table, aot/ops/qlut.py): x - x_zp >= 0 rescaled by
    (multiplier, shift) = x_scale / out_scale, else by (alpha_multiplier, alpha_shift) = x_scale *
    alpha / out_scale, whose sign (a negative alpha) is applied after the magnitude's rescale, as
    TFLite Micro does; + out_zp, clamped to the output dtype."""
    name = "QLeakyRelu"
    internal = True
    pattern = Pattern.ELEMWISE
    dtypes = ("int8", "int16")

    def infer(self, node):
        return [TensorType(node.inputs[0].type.shape, node.attrs["out_dtype"])]

    def reference(self, node, x):
        a = node.attrs
        v = x.astype(np.int64) - a["x_zp"]
        am = int(a["alpha_multiplier"])
        neg = mbqm_np(v, abs(am), a["alpha_shift"])
        out = np.where(v >= 0, mbqm_np(v, a["multiplier"], a["shift"]), -neg if am < 0 else neg)
        return [_clamp_np(out + a["out_zp"], a)]

    def compute(self, node, x):
        a = node.attrs
        am = int(a["alpha_multiplier"])

        def body(*i):
            v = Cast("int32", x(*i)) - i32(a["x_zp"])
            neg = mbqm(v, abs(am), int(a["alpha_shift"]))
            pos = mbqm(v, int(a["multiplier"]), int(a["shift"]))
            out = Select(ge(v, i32(0)), pos, i32(0) - neg if am < 0 else neg)
            return clamp_cast(out + i32(a["out_zp"]), node)
        return [te.compute(x.shape, body, "qleaky_relu")]


@register
class FixedPointMultiply(Op):
    """Relay's fixed_point_multiply (TVM's q_multiply_shift with 31 fractional bits): int32 x
    times multiplier * 2^(shift - 31), rounded half up, as int32. The product x * multiplier is
    exact in int64 (both factors are int32); a positive shift only shortens the right shift that
    divides by 2^31, which gives TVM's value (it shifts x left first) without a shift of a
    negative value to the left."""
    name = "FixedPointMultiply"
    internal = True             # made by relay's fixed_point_multiply, never named by an ONNX model
    pattern = Pattern.ELEMWISE
    dtypes = ("int32",)

    def infer(self, node):
        return [TensorType(node.inputs[0].type.shape, "int32")]

    @staticmethod
    def _right_shift(node):
        return 31 - int(node.attrs["shift"])

    def reference(self, node, x):
        n = self._right_shift(node)
        p = x.astype(np.int64) * np.int64(node.attrs["multiplier"])
        if n > 0:
            p = (p + (np.int64(1) << np.int64(n - 1))) >> np.int64(n)
        return [p.astype(np.int32)]

    def compute(self, node, x):
        n = self._right_shift(node)
        m = Const(int(node.attrs["multiplier"]), "int64")

        def body(*i):
            p = Cast("int64", x(*i)) * m
            if n > 0:
                p = Bin(">>", p + Const(1 << (n - 1), "int64"), Const(n, "int64"))
            return Cast("int32", p)
        return [te.compute(x.shape, body, "fixed_point_multiply")]


@register
class QMean(Reduce):
    """TFLite MEAN, int8: the int32 sum over `axes`, minus x_zp times the count, requantised by
    (multiplier, shift) = x_scale / out_scale with 1/count folded in as TFLite does
    (mean_multiplier), + out_zp, clamped; int16 too (zero points 0)."""
    name = "QMean"
    names = ()
    internal = True
    dtypes = ("int8", "int16")

    def canon(self, ctx):
        Op.canon(self, ctx)

    def check(self, node):
        Op.check(self, node)

    def infer(self, node):
        return [TensorType(self._shapes(node)[1], node.attrs["out_dtype"])]

    def reference(self, node, x):
        a = node.attrs
        axes = tuple(a["axes"])
        n = int(np.prod([x.shape[d] for d in axes]))
        total = x.astype(np.int64).sum(axis=axes, keepdims=True) - a["x_zp"] * n
        out = mbqm_np(total, a["multiplier"], a["shift"]) + a["out_zp"]
        return [_clamp_np(out, a).reshape(self._shapes(node)[1])]

    def compute(self, node, x):
        a = node.attrs
        axes = a["axes"]
        n = int(np.prod([x.shape[d] for d in axes]))
        _, out = self._shapes(node)

        def body(*i):
            # with keepdims the reduced axes are output axes of extent 1: skipped
            it = iter([v for d, v in enumerate(i) if d not in axes] if a["keepdims"] else i)
            rs = [te.reduce_axis(x.shape[d], f"r{d}") for d in axes]
            rit = iter(rs)
            return te.sum(Cast("int32", x(*[next(rit).var if d in axes else next(it) for d in range(len(x.shape))])), rs)
        total = te.compute(out, body, "qmean_sum")

        def finish(*i):
            v = total(*i) - i32(a["x_zp"] * n)
            return clamp_cast(mbqm(v, int(a["multiplier"]), int(a["shift"])) + i32(a["out_zp"]), node)
        return [te.compute(out, finish, "qmean")]


def mean_multiplier(multiplier, shift, count):
    """TFLite's QuantizedMeanOrSum folds 1/count into the output multiplier: shifted up by
    floor(log2(count)) (at most 32, and at most 31 + shift), divided by count in int64."""
    k = min(int(count).bit_length() - 1, 32, 31 + shift)
    return int((multiplier << k) // count), shift - k


@register
class QBatchMatMul(MatMul):
    """TFLite BATCH_MATMUL, int8: sum_k (a - a_zp)(b - b_zp) over [..., M, K] x [..., K, N] with
    broadcast batch dimensions, requantised by (multiplier, shift) = float(a_scale * b_scale) /
    out_scale, + out_zp, clamped; int16 summed in int64 (acc_dtype="int64") and requantised with
    the int64 MultiplyByQuantizedMultiplier, as TFLite Micro does."""
    name = "QBatchMatMul"
    internal = True
    dtypes = ("int8", "int16")

    def infer(self, node):
        return [TensorType(tuple(self._shapes(node)[3]), node.attrs["out_dtype"])]

    def reference(self, node, a, b):
        at = node.attrs
        acc = np.matmul(a.astype(np.int64) - at["x_zp"], b.astype(np.int64) - at["y_zp"])
        scale = mbqm64_np if acc_dtype(node) == "int64" else mbqm_np
        return [_clamp_np(scale(acc, at["multiplier"], at["shift"]) + at["out_zp"], at)]

    def compute(self, node, a, b):
        at = node.attrs
        a2, b2, batch, out = self._shapes(node)
        nb = len(batch)
        wide = widen(node) or (lambda p: p)
        scale = mbqm64 if acc_dtype(node) == "int64" else mbqm

        def body(*o):
            bidx = list(o[:nb])
            r = te.reduce_axis(a2[-1], "rk")
            ai = te.broadcast_index(bidx, a2[:-2]) + [o[nb], r.var]
            bi = te.broadcast_index(bidx, b2[:-2]) + [r.var, o[-1]]
            return te.sum(wide(_centred(a, ai, at["x_zp"]) * _centred(b, bi, at["y_zp"])), r)
        acc = te.compute(tuple(out), body, "qbatch_matmul")

        def finish(*i):
            return clamp_cast(scale(acc(*i), int(at["multiplier"]), int(at["shift"])) + i32(at["out_zp"]), node)
        return [te.compute(tuple(out), finish, "requant")]


@register
class QConvTranspose(Requantised, ConvTranspose):
    """TFLite TRANSPOSE_CONV, int8 or int16x8, NHWC: sum over the taps of (x - x_zp) * w (w as
    ONNX's [C_in, C_out, kh, kw], symmetric int8), + bias (int32 or None; int16x8: int64 or int16
    with acc_dtype="int64"), requantised per output channel (int32 multiplier and shift constants,
    or the per-tensor attributes) as CONV_2D is."""
    name = "QConvTranspose"

    def canon(self, ctx):
        keep = {k: ctx.attrs[k] for k in QUANT_ATTRS if k in ctx.attrs}
        ConvTranspose.canon(self, ctx)
        ctx.attrs.update(keep)

    def infer(self, node):
        return [TensorType(ConvTranspose.infer(self, node)[0].shape, node.attrs["out_dtype"])]

    def check(self, node):
        Op.check(self, node)

    def reference(self, node, x, w, bias=None, mult=None, shift=None):
        acc = ConvTranspose.reference(self, node, x.astype(np.float64) - node.attrs["x_zp"], w.astype(np.float64))[0]
        return [requant_channels_np(node, acc, bias)]

    def compute(self, node, x, w, bias=None, mult=None, shift=None):
        xz = i32(node.attrs["x_zp"])
        acc = conv_transpose_sum(node, x, w, lambda v: Cast("int32", v) - xz, lambda v: Cast("int32", v), widen(node))
        layout = node.attrs.get("layout", "NCHW")
        return [self.requant(node, acc, bias, mult, shift, split_index(tuple(range(len(acc.shape))), layout)[1])]
