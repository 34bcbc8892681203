"""Integer kernels: int8 in, int32 accumulation, requantisation, the fused activation as a
clamp, int8 out; or TFLite's int16x8 (int16 activations, int8 weights), whose convolutions and
dense layers accumulate in int64 (attr acc_dtype="int64", with an int64 bias) and requantise
with the int64 MultiplyByQuantizedMultiplier. Two requantisations, by the model's origin:

- requant="fixed" (the default; the TFLite frontend): TFLite's fixed-point arithmetic
  (fixed_point.py), every multiplier precomputed exactly as TFLite Micro's Prepare does; outputs
  match TFLite Micro's reference kernels bit for bit, with no float arithmetic in the kernel.
- requant="float" (the QDQ folding of ONNX models, aot/passes/qdq.py): onnxruntime's QLinear
  kernels' float32 scale and round-half-to-even, which keeps a deep QDQ model within 1 LSB of
  onnxruntime (fixed point drifts a step further with each layer).

Per-tensor multipliers are attributes; per-channel ones are int32 constant inputs (one per
output channel), loaded by the kernel; a float scale is the attribute `scale` (per tensor) or a
float32 constant input (per channel).
"""
from __future__ import annotations

import itertools

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Bin, Cast, Const, Select, call, gt, max_, min_
from .conv import Conv, conv_sum
from .fixed_point import (ACCUMULATION_INTEGER_BITS, leading_zeros, mbqm, mbqm64, mbqm64_np, mbqm_np, newton_step,
                          rdbpot, reciprocal_half, sat_mul_pot, softmax_np, srdhm, tflite_round)
from .pool import AveragePool
from .registry import Op, Pattern, broadcast_shapes, register
from .window import from_nchw, join_index, nchw_shape, split_index, to_nchw

QTYPES = ("int8", "uint8", "int16")   # uint8: activations of ONNX u8s8 QDQ models
# the quantisation attributes a frontend gives these ops (the canonical window attributes come
# from Conv's and AveragePool's canon)
QUANT_ATTRS = ("x_zp", "w_zp", "out_zp", "act_min", "act_max", "out_dtype", "multiplier", "shift", "requant", "scale",
               "acc_dtype")


def i32(v):
    return Const(int(v), "int32")


def clamp_cast(v, node):
    """v clamped to the activation range (the output dtype's range when the op has none), cast."""
    a = node.attrs
    info = np.iinfo(a["out_dtype"])
    lo, hi = a.get("act_min", int(info.min)), a.get("act_max", int(info.max))
    return Cast(a["out_dtype"], min_(max_(v, i32(lo)), i32(hi)))


def _requant_np(acc, mult, shift, node):
    """mult is the float32 scale (shift unused) with requant="float"."""
    a = node.attrs
    if a.get("requant") == "float":
        out = np.rint(acc.astype(np.float32) * np.asarray(mult, np.float32)).astype(np.int64) + a["out_zp"]
    elif acc_dtype(node) == "int64":
        out = mbqm64_np(acc, mult, shift) + a["out_zp"]
    else:
        out = mbqm_np(acc, mult, shift) + a["out_zp"]
    return np.clip(out, a["act_min"], a["act_max"]).astype(a["out_dtype"])


def requant_channels_np(node, acc, bias):
    """A float64 accumulation holding exact integers (in the node's layout) + bias, requantised
    per output channel: the tail of every conv-like integer kernel's reference."""
    layout = node.attrs.get("layout", "NCHW")
    acc = np.rint(to_nchw(acc, layout)).astype(np.int64)
    if bias is not None:
        acc = acc + bias.astype(np.int64).reshape(1, -1, *([1] * (acc.ndim - 2)))
    m, s = _channel_params(node, 3)
    if np.ndim(m):
        sh = (1, -1) + (1,) * (acc.ndim - 2)
        m, s = m.reshape(sh), (s.reshape(sh) if s is not None else None)
    return from_nchw(_requant_np(acc, m, s, node), layout)


def _channel_params(node, k):
    """(multiplier, shift) of per-channel inputs k, k+1, or of the per-tensor attributes; with
    requant="float", (scale, None) from input k or the attribute."""
    if node.attrs.get("requant") == "float":
        if len(node.inputs) > k and node.inputs[k] is not None:
            return node.inputs[k].const.astype(np.float32), None
        return np.float32(node.attrs["scale"]), None
    if len(node.inputs) > k and node.inputs[k] is not None:
        return node.inputs[k].const.astype(np.int64), node.inputs[k + 1].const.astype(np.int64)
    return np.int64(node.attrs["multiplier"]), np.int64(node.attrs["shift"])


def acc_dtype(node):
    """The accumulator's dtype: int32, or int64 where TFLite's int16x8 kernels take one (the
    frontend decides, from the bias's dtype)."""
    return node.attrs.get("acc_dtype", "int32")


def widen(node):
    """An int32 product as the accumulator's dtype (TFLite multiplies in int32, sums in int64)."""
    return (lambda p: Cast("int64", p)) if acc_dtype(node) == "int64" else None


class Requantised(Op):
    """acc (int32 or int64, from the op's own reduction) + bias -> requantised, clamped output."""
    internal = True            # made by the TFLite frontend, never named by an ONNX model
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = QTYPES
    min_inputs = 2

    def requant(self, node, acc, bias, mult, shift, channel_axis):
        """The output compute of an accumulation `acc` whose channel is index channel_axis."""
        a = node.attrs

        def body(*i):
            c = i[channel_axis]
            v = acc(*i)
            if bias is not None:
                b = bias(c)
                v = v + (b if b.dtype == v.dtype else Cast(v.dtype, b))
            if a.get("requant") == "float":
                s = mult(c) if mult is not None else Const(float(np.float32(a["scale"])), "float32")
                r = Cast("int32", call("nearbyint", Cast("float32", v) * s))
            else:
                scale = mbqm64 if v.dtype == "int64" else mbqm
                r = scale(v, int(a["multiplier"]), int(a["shift"])) if mult is None else scale(v, mult(c), shift(c))
            return clamp_cast(r + i32(a["out_zp"]), node)
        return te.compute(acc.shape, body, "requant", [ax.name for ax in acc.op.axes])


@register
class QDense(Requantised):
    """TFLite FULLY_CONNECTED, int8 or int16x8: inputs x [N, K], w [O, K], bias [O] int32 (int64
    with acc_dtype="int64"; or None), then optionally per-channel multiplier [O] and shift [O]
    (int32 constants)."""
    name = "QDense"

    def infer(self, node):
        x, w = node.inputs[0].type, node.inputs[1].type
        if len(x.shape) != 2 or len(w.shape) != 2 or x.shape[1] != w.shape[1]:
            raise OpError(node, f"input {list(x.shape)} and weights {list(w.shape)} do not match")
        return [TensorType((x.shape[0], w.shape[0]), node.attrs["out_dtype"])]

    def reference(self, node, x, w, bias=None, mult=None, shift=None):
        a = node.attrs
        acc = (x.astype(np.int64) - a["x_zp"]) @ (w.astype(np.int64) - a.get("w_zp", 0)).T
        if bias is not None:
            acc = acc + bias.astype(np.int64)
        m, s = _channel_params(node, 3)
        return [_requant_np(acc, m, s, node)]

    def compute(self, node, x, w, bias=None, mult=None, shift=None):
        a = node.attrs
        K = x.shape[1]
        xz, wz = i32(a["x_zp"]), i32(a.get("w_zp", 0))

        wide = widen(node) or (lambda p: p)

        def body(i, j):
            r = te.reduce_axis(K, "rk")
            return te.sum(wide((Cast("int32", x(i, r.var)) - xz) * (Cast("int32", w(j, r.var)) - wz)), r)
        acc = te.compute(node.outputs[0].type.shape, body, "qdense", ["i", "j"])
        return [self.requant(node, acc, bias, mult, shift, 1)]


@register
class QConv(Requantised, Conv):
    """TFLite CONV_2D and DEPTHWISE_CONV_2D, int8 or int16x8, NHWC: inputs x, w (OHWI; a
    depthwise filter re-ordered to [C*M, H, W, 1] with group C), bias [O] int32 (int64 with
    acc_dtype="int64"; or None), then optionally per-channel multiplier and shift. Padded taps
    are skipped, as TFLite does."""
    name = "QConv"

    def canon(self, ctx):
        keep = {k: ctx.attrs[k] for k in QUANT_ATTRS if k in ctx.attrs}
        Conv.canon(self, ctx)
        ctx.attrs.update(keep)

    def infer(self, node):
        t = Conv.infer(self, node)[0]
        return [TensorType(t.shape, node.attrs["out_dtype"])]

    def check(self, node):
        Op.check(self, node)

    def reference(self, node, x, w, bias=None, mult=None, shift=None):
        xz = x.astype(np.float64) - node.attrs["x_zp"]
        acc = Conv.reference(self, node, xz, w.astype(np.float64))[0]        # exact: integers well below 2^53
        return [requant_channels_np(node, acc, bias)]

    def compute(self, node, x, w, bias=None, mult=None, shift=None):
        xz = i32(node.attrs["x_zp"])
        acc = conv_sum(node, x, w, lambda v: Cast("int32", v) - xz, lambda v: Cast("int32", v),
                       product=widen(node))
        layout = node.attrs.get("layout", "NCHW")
        return [self.requant(node, acc, bias, mult, shift, 1 if layout == "NCHW" else len(acc.shape) - 1)]


class QBinary(Op):
    """Two int8 inputs broadcast together, one requantised output (QAdd; qarith's QMul, QPRelu)."""
    internal = True
    pattern = Pattern.BROADCAST
    dtypes = QTYPES
    min_inputs = 2

    def infer(self, node):
        return [TensorType(broadcast_shapes(node, node.inputs[0].type.shape, node.inputs[1].type.shape),
                           node.attrs["out_dtype"])]


@register
class QAdd(QBinary):
    """TFLite ADD (and SUB, attr subtract=1), int8: both inputs rescaled to a common scale with 20
    bits of headroom, added, rescaled to the output (attrs: zero points, three multiplier/shift
    pairs, left_shift). requant="float": each input times its float32 scale ratio to the output,
    summed, rounded half to even (onnxruntime's QLinearAdd); with out_scale, the inputs' own
    scales instead and the sum divided by out_scale, as onnxruntime computes a QDQ Add
    (dequantise, float add, quantise), so a QDQ model's adds round exactly as there."""
    name = "QAdd"

    def reference(self, node, x, y):
        a = node.attrs
        if a.get("requant") == "float":
            v = (x.astype(np.float32) - np.float32(a["x_zp"])) * np.float32(a["x_scale"]) + \
                (y.astype(np.float32) - np.float32(a["y_zp"])) * np.float32(a["y_scale"])
            if "out_scale" in a:
                v = v / np.float32(a["out_scale"])
            out = np.rint(v).astype(np.int64) + a["out_zp"]
            return [np.clip(out, a["act_min"], a["act_max"]).astype(a["out_dtype"])]
        sx = (x.astype(np.int64) - a["x_zp"]) * (1 << a["left_shift"])
        sy = (y.astype(np.int64) - a["y_zp"]) * (1 << a["left_shift"])
        sign = -1 if a.get("subtract") else 1           # TFLite SUB: the same rescaling, then a difference
        total = mbqm_np(sx, a["x_multiplier"], a["x_shift"]) + sign * mbqm_np(sy, a["y_multiplier"], a["y_shift"])
        return [_requant_np(total, a["multiplier"], a["shift"], node)]

    def compute(self, node, x, y):
        a = node.attrs
        shape = node.outputs[0].type.shape

        def load(t, i):
            return t(*te.broadcast_index(list(i), t.shape))

        def body(*i):
            if a.get("requant") == "float":
                def f(t, key):
                    return (Cast("float32", load(t, i)) - Const(float(a[f"{key}_zp"]), "float32")) * \
                        Const(float(np.float32(a[f"{key}_scale"])), "float32")
                v = f(x, "x") + f(y, "y")
                if "out_scale" in a:
                    v = v / Const(float(np.float32(a["out_scale"])), "float32")
                r = Cast("int32", call("nearbyint", v))
                return clamp_cast(r + i32(a["out_zp"]), node)
            sx = (Cast("int32", load(x, i)) - i32(a["x_zp"])) * i32(1 << a["left_shift"])
            sy = (Cast("int32", load(y, i)) - i32(a["y_zp"])) * i32(1 << a["left_shift"])
            ty = mbqm(sy, int(a["y_multiplier"]), int(a["y_shift"]))
            total = mbqm(sx, int(a["x_multiplier"]), int(a["x_shift"])) + (i32(0) - ty if a.get("subtract") else ty)
            return clamp_cast(mbqm(total, int(a["multiplier"]), int(a["shift"])) + i32(a["out_zp"]), node)
        return [te.compute(shape, body, "qadd")]


@register
class QAvgPool(AveragePool):
    """TFLite AVERAGE_POOL_2D, int8, NHWC: the sum of the window's valid taps divided by their
    count, rounded half away from zero, clamped to the activation range (same scale in and out)."""
    name = "QAvgPool"
    internal = True
    dtypes = QTYPES

    def canon(self, ctx):
        keep = {k: ctx.attrs[k] for k in QUANT_ATTRS if k in ctx.attrs}
        AveragePool.canon(self, ctx)
        ctx.attrs.update(keep)

    def infer(self, node):
        return [TensorType(AveragePool.infer(self, node)[0].shape, node.attrs["out_dtype"])]

    def reference(self, node, x):
        a = node.attrs
        s = np.rint(_window_sums(node, x.astype(np.float64))).astype(np.int64)
        n = np.rint(_window_sums(node, np.ones(x.shape))).astype(np.int64)
        if a.get("requant") == "float":
            # onnxruntime on a QDQ pool: dequantised values summed in float32 in window order, the
            # mean quantised again; a mean within float error of a half step rounds as it does
            sc = np.float32(a["scale"])
            total = _window_sums(node, (x.astype(np.float32) - np.float32(a["x_zp"])) * sc, np.float32)
            q = np.rint((total / n.astype(np.float32)) / sc).astype(np.int64) + a["x_zp"]
        else:
            q = np.where(s > 0, (s + n // 2) // n, -((n // 2 - s) // n))    # C's division truncates toward 0
        return [np.clip(q, a["act_min"], a["act_max"]).astype(a["out_dtype"])]

    def compute(self, node, x):
        layout = node.attrs.get("layout", "NCHW")
        out_shape = node.outputs[0].type.shape

        def body(*i):
            n, c, o = split_index(i, layout)
            rs, idx, _ = self.taps(node, x, o)
            return te.sum(Cast("int32", x(*join_index(n, c, idx, layout))), rs)
        total = te.compute(out_shape, body, "qpool")

        def fbody(*i):
            n, c, o = split_index(i, layout)
            rs, idx, _ = self.taps(node, x, o)
            v = Cast("float32", x(*join_index(n, c, idx, layout))) - Const(float(node.attrs.get("x_zp", 0)), "float32")
            return te.sum(v * Const(float(np.float32(node.attrs.get("scale", 1.0))), "float32"), rs)
        ftotal = te.compute(out_shape, fbody, "qpool_f") if node.attrs.get("requant") == "float" else None

        def avg(*i):
            _, _, counts = self.taps(node, x, split_index(i, layout)[2])
            cnt = counts[0]
            for cc in counts[1:]:
                cnt = cnt * cc
            if node.attrs.get("requant") == "float":
                sc = Const(float(np.float32(node.attrs["scale"])), "float32")
                mean = ftotal(*i) / Cast("float32", cnt)
                return clamp_cast(Cast("int32", call("nearbyint", mean / sc)) + i32(node.attrs["x_zp"]), node)
            s, half = total(*i), Bin("/", cnt, i32(2))
            return clamp_cast(Select(gt(s, i32(0)), Bin("/", s + half, cnt), Bin("/", s - half, cnt)), node)
        return [te.compute(out_shape, avg, "qavg")]


def _window_sums(node, x, dtype=np.float64):
    """The sum over each pooling window's taps inside the input, in the node's layout (numpy),
    accumulated in `dtype` in window order."""
    a = node.attrs
    layout = a.get("layout", "NCHW")
    x = to_nchw(x, layout)
    nsp = len(a["kernel_shape"])
    out_shape = nchw_shape(node.outputs[0].type.shape, layout)
    acc = np.zeros(out_shape, dtype)
    grids = np.meshgrid(*[np.arange(n) for n in out_shape[2:]], indexing="ij")
    for off in itertools.product(*[range(k) for k in a["kernel_shape"]]):
        pos = [g * s - p + o * d for g, s, p, o, d in zip(grids, a["strides"], a["pads"][:nsp], off, a["dilations"])]
        valid = np.ones(out_shape[2:], bool)
        for dd, pp in enumerate(pos):
            valid &= (pp >= 0) & (pp < x.shape[2 + dd])
        clipped = [np.clip(pp, 0, n - 1) for pp, n in zip(pos, x.shape[2:])]
        acc = (acc + np.where(valid, x[(slice(None), slice(None)) + tuple(clipped)], 0.0)).astype(dtype)
    return from_nchw(acc, layout)


def row_local(shape, fn, name):
    """A per-row value the kernel keeps in a local (a one-step reduction), so that the
    expressions that read it several times do not repeat its computation."""
    def body(*i):
        one = te.reduce_axis(1, f"{name}_k")
        return te.sum(fn(*i), one)
    return te.compute(shape, body, name)


def row_max(x):
    """(x widened to int32, the max of each row over the last axis): where every integer softmax
    starts (QSoftmax, qsoftmax16's QSoftmax16)."""
    def xi(*i):
        return Cast("int32", x(*i))

    def max_body(*r):
        k = te.reduce_axis(x.shape[-1], "rc")
        return te.max(xi(*r, k.var), k)
    return xi, te.compute(x.shape[:-1], max_body, "row_max")


@register
class QSoftmax(Op):
    """TFLite SOFTMAX, int8 in and out (scale 1/256, zero point -128), over the last axis:
    inputs x and two int32[256] constants, TFLite's exp(-d * scale * beta) in Q0.31 and its
    Q12.19 term of the sum for each d = row max - x (fixed_point.softmax_tables, computed once
    at compile time with gemmlowp's fixed-point exp); the kernel sums the terms and takes the
    reciprocal with gemmlowp's Newton-Raphson iteration, as TFLite does per row."""
    name = "QSoftmax"
    internal = True
    pattern = Pattern.OPAQUE
    dtypes = ("int8",)
    min_inputs = 3

    def infer(self, node):
        return [TensorType(node.inputs[0].type.shape, node.attrs.get("out_dtype", "int8"))]

    def reference(self, node, x, exp_t, sum_t):
        return [softmax_np(x, exp_t, sum_t, node.attrs.get("out_dtype", "int8"))]

    def compute(self, node, x, exp_t, sum_t):
        shape = x.shape
        rows, depth = shape[:-1], shape[-1]
        out_dtype = node.attrs.get("out_dtype", "int8")
        info = np.iinfo(out_dtype)

        xi, mx = row_max(x)

        def total_body(*r):
            k = te.reduce_axis(depth, "rs")
            return te.sum(sum_t(mx(*r) - xi(*r, k.var)), k)
        total = te.compute(rows, total_body, "exp_sum")
        clz = row_local(rows, lambda *r: leading_zeros(total(*r)), "clz")
        half = row_local(rows, lambda *r: reciprocal_half(total(*r), clz(*r)), "half")
        xs = row_local(rows, lambda *r: Const(1515870810, "int32") + srdhm(half(*r), Const(-1010580540, "int32")), "x0")
        for step in range(3):
            prev = xs
            xs = row_local(rows, lambda *r, p=prev: newton_step(p(*r), half(*r)), f"x{step + 1}")
        scale = row_local(rows, lambda *r, p=xs: sat_mul_pot(p(*r), 1), "recip")

        def body(*i):
            r = i[:-1]
            exponent = i32(ACCUMULATION_INTEGER_BITS + 31 - 8 * np.dtype(out_dtype).itemsize) - clz(*r)
            v = rdbpot(srdhm(scale(*r), exp_t(mx(*r) - xi(*i))), exponent) + i32(int(info.min))
            return Cast(out_dtype, min_(max_(v, i32(int(info.min))), i32(int(info.max))))
        return [te.compute(shape, body, "qsoftmax")]


@register
class QQuantize(Op):
    """TFLite QUANTIZE: float -> int8 as TFLite Micro's AffineQuantize computes it (the float
    quotient rounded half away from zero, plus the zero point, clamped), or int8 -> int8 as its
    Requantize (MultiplyByQuantizedMultiplier of the scale ratio). attrs: out_zp, out_dtype, and
    scale (from float) or x_zp, multiplier, shift (from int8)."""
    name = "QQuantize"
    internal = True
    pattern = Pattern.ELEMWISE
    dtypes = ("float32", "int8", "int16")

    def infer(self, node):
        return [TensorType(node.inputs[0].type.shape, node.attrs["out_dtype"])]

    def reference(self, node, x):
        a = node.attrs
        info = np.iinfo(a["out_dtype"])
        if x.dtype.kind == "f":
            v = tflite_round(x.astype(np.float32) / np.float32(a["scale"])) + a["out_zp"]
        else:
            v = mbqm_np(x.astype(np.int64) - a["x_zp"], a["multiplier"], a["shift"]) + a["out_zp"]
        return [np.clip(v, info.min, info.max).astype(a["out_dtype"])]

    def compute(self, node, x):
        a = node.attrs
        info = np.iinfo(a["out_dtype"])

        def body(*i):
            if x.dtype == "float32":
                v = call("round", x(*i) / Const(float(np.float32(a["scale"])), "float32")) + \
                    Const(float(a["out_zp"]), "float32")
                lo, hi = Const(float(info.min), "float32"), Const(float(info.max), "float32")
                return Cast(a["out_dtype"], min_(max_(v, lo), hi))         # clamped before the cast
            v = mbqm(Cast("int32", x(*i)) - i32(a["x_zp"]), int(a["multiplier"]), int(a["shift"]))
            return Cast(a["out_dtype"], min_(max_(v + i32(a["out_zp"]), i32(int(info.min))), i32(int(info.max))))
        return [te.compute(x.shape, body, "qquantize")]
