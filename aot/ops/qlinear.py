"""onnxruntime's QOperator contrib kernels (domain com.microsoft) that the other integer kernels do
not already cover, int8 and uint8, per-tensor. The arithmetic is onnxruntime's CPU kernels': the
zero points subtracted in int32, the scales combined in float32 at compile time, float32
multiplies, round half to even (C's nearbyint), saturation to the output type. Where the output
zero point joins matters on a value near a half step, and follows each kernel: before the
rounding, in float32 (QLinearAdd, QLinearMul, QLinearAveragePool), or after it, in integers
(MLAS's requantisation: QLinearGlobalAveragePool, QLinearSoftmax).

- QLinearBinary: QLinearAdd ((a - za) * (sa / sc) + (b - zb) * (sb / sc)) and QLinearMul
  ((a - za) * (b - zb) * (sa * sb / sc)), with broadcasting. onnxruntime's Add on x86 (AVX2)
  folds the zero points into one float32 constant and uses fused multiply-adds in an order that
  depends on its broadcast loop, so its last bit can differ from this fixed formula on a value
  within float32 error of a rounding boundary (a few in a million); its Mul is matched exactly.
- QLinearGlobalAvgPool: QLinearGlobalAveragePool (and QLinearAveragePool whose window is the
  whole unpadded image, as onnxruntime also does), the int32 sum minus zp * count, requantised
  by sx / (sy * count).
- QLinearSoftmax: onnxruntime's table of float32 exps indexed by max - x (built here), a float32
  row sum in row order, nearbyint(e * floor(1 / sy) / sum) + zp, saturated.
- QLinearAvgPool: QLinearAveragePool, which onnxruntime computes in float: each tap dequantised
  (float32), summed in window order, divided by the count, divided by sy; the window order and
  every rounding are kept, so it is bit-exact too.

The elementwise ones (QLinearSigmoid, QLinearLeakyRelu, and QLinearConcat's requantisation of an
input whose quantisation differs from the output's) are 256-entry tables built here, at compile
time, as onnxruntime builds them: every input value dequantised in float32, the function applied,
quantised again; the kernel is qlut.QLookup.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Cast, Const, call, max_, min_
from .pool import AveragePool
from .registry import Op, Pattern, broadcast_shapes, register
from .window import from_nchw, join_index, nchw_shape, split_index, to_nchw

QLINEAR_TYPES = ("int8", "uint8")


def _f32(v):
    return Const(float(np.float32(v)), "float32")


def _i32(v):
    return Const(int(v), "int32")


def _saturate_np(q, dtype):
    info = np.iinfo(dtype)
    return np.clip(q, info.min, info.max).astype(dtype)


def _requant(v, zp, dtype):
    """nearbyint(v + zp) saturated to dtype, v float32: the zero point joins before the rounding,
    in float32, as onnxruntime's QLinearAdd, QLinearMul and QLinearAveragePool add it (the sum's
    rounding can decide a tie). v is clamped first (to the range's bounds less zp, integers, so
    no result changes) so the conversion to int32 is always defined."""
    info = np.iinfo(dtype)
    v = min_(max_(v, _f32(info.min - zp)), _f32(info.max - zp))
    return Cast(dtype, Cast("int32", call("nearbyint", v + _f32(zp))))


def _requant_np(v, zp, dtype):
    return _saturate_np(np.rint(np.asarray(v, np.float32) + np.float32(zp)).astype(np.int64), dtype)


def _round_then_zp(v, zp, dtype):
    """nearbyint(v) + zp saturated to dtype: MLAS's requantisation of an int32 result (the zero
    point added after the rounding, in integers); clamped first as _requant is."""
    info = np.iinfo(dtype)
    v = min_(max_(v, _f32(info.min - zp)), _f32(info.max - zp))
    return Cast(dtype, Cast("int32", call("nearbyint", v)) + _i32(zp))


def _round_then_zp_np(v, zp, dtype):
    return _saturate_np(np.rint(np.asarray(v, np.float32)).astype(np.int64) + int(zp), dtype)


# -- compile-time tables ---------------------------------------------------------------------------
def quantize_np(v, scale, zp, dtype):
    """onnxruntime's MlasQuantizeLinear: v / scale in float32, rounded half to even, + zp, saturated
    (the quotient bounded before its conversion, so a tiny scale's inf saturates too)."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        f = np.rint(np.asarray(v, np.float32) / np.float32(scale))
    q = np.clip(np.nan_to_num(f), -2.0 ** 40, 2.0 ** 40).astype(np.int64) + int(zp)
    return _saturate_np(q, dtype)


def dequantized_inputs(scale, zp, dtype):
    """Every value of the dtype, from its minimum up, dequantised in float32."""
    info = np.iinfo(dtype)
    q = np.arange(info.min, info.max + 1, dtype=np.int64)
    return np.float32(scale) * (q - int(zp)).astype(np.float32)


def requant_table(x_scale, x_zp, y_scale, y_zp, dtype):
    """An input re-expressed in the output's quantisation (QLinearConcat's differing inputs)."""
    return quantize_np(dequantized_inputs(x_scale, x_zp, dtype), y_scale, y_zp, dtype)


def leaky_relu_table(x_scale, x_zp, y_scale, y_zp, alpha, dtype):
    v = dequantized_inputs(x_scale, x_zp, dtype)
    return quantize_np(np.where(v >= 0, v, np.float32(alpha) * v), y_scale, y_zp, dtype)


def sigmoid_table(x_scale, x_zp, y_scale, y_zp, dtype):
    """onnxruntime evaluates the logistic with MLAS's float32 approximation; this one is computed
    in float64 and rounded to float32 once, so an entry whose value lies within that
    approximation's error of a rounding boundary can differ by 1."""
    v = dequantized_inputs(x_scale, x_zp, dtype).astype(np.float64)
    return quantize_np((1.0 / (1.0 + np.exp(-v))).astype(np.float32), y_scale, y_zp, dtype)


# -- kernels ---------------------------------------------------------------------------------------
@register
class QLinearBinary(Op):
    """kind="add": nearbyint((a - a_zp) * a_ratio + (b - b_zp) * b_ratio + out_zp), the ratios
    sa / sc and sb / sc in float32; kind="mul": nearbyint(float((a - a_zp) * (b - b_zp)) * ratio
    + out_zp), ratio = sa * sb / sc. Saturated to out_dtype. Inputs broadcast together."""
    name = "QLinearBinary"
    internal = True
    pattern = Pattern.BROADCAST
    dtypes = QLINEAR_TYPES
    min_inputs = 2

    def infer(self, node):
        a, b = node.inputs[0].type, node.inputs[1].type
        if a.dtype != b.dtype:
            raise OpError(node, f"input dtypes {a.dtype} and {b.dtype} differ")
        return [TensorType(broadcast_shapes(node, a.shape, b.shape), node.attrs["out_dtype"])]

    def reference(self, node, a, b):
        t = node.attrs
        da = a.astype(np.int64) - t["a_zp"]
        db = b.astype(np.int64) - t["b_zp"]
        if t["kind"] == "add":
            v = da.astype(np.float32) * np.float32(t["a_ratio"]) + db.astype(np.float32) * np.float32(t["b_ratio"])
        else:
            v = (da * db).astype(np.float32) * np.float32(t["ratio"])
        return [_requant_np(v, t["out_zp"], t["out_dtype"])]

    def compute(self, node, a, b):
        t = node.attrs

        def load(x, i, zp):
            return Cast("int32", x(*te.broadcast_index(list(i), x.shape))) - _i32(zp)

        def body(*i):
            da, db = load(a, i, t["a_zp"]), load(b, i, t["b_zp"])
            if t["kind"] == "add":
                v = Cast("float32", da) * _f32(t["a_ratio"]) + Cast("float32", db) * _f32(t["b_ratio"])
            else:
                v = Cast("float32", da * db) * _f32(t["ratio"])
            return _requant(v, t["out_zp"], t["out_dtype"])
        return [te.compute(node.outputs[0].type.shape, body, "qlinear_" + t["kind"])]


@register
class QLinearGlobalAvgPool(Op):
    """The mean over every spatial position (NCHW, or NHWC with channels_last): the int32 sum
    minus x_zp * count, times scale = sx / (sy * count) in float32, rounded half to even, then
    + out_zp (MLAS's requantisation), saturated. Spatial dimensions are kept as 1."""
    name = "QLinearGlobalAvgPool"
    internal = True
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = QLINEAR_TYPES
    min_inputs = 1

    def _spatial(self, node, rank):
        return list(range(1, rank - 1)) if node.attrs.get("channels_last") else list(range(2, rank))

    def infer(self, node):
        x = node.inputs[0].type
        if len(x.shape) < 3:
            raise OpError(node, f"input rank {len(x.shape)} is below 3")
        sp = self._spatial(node, len(x.shape))
        return [TensorType(tuple(1 if d in sp else n for d, n in enumerate(x.shape)), node.attrs["out_dtype"])]

    def reference(self, node, x):
        t = node.attrs
        sp = tuple(self._spatial(node, x.ndim))
        count = int(np.prod([x.shape[d] for d in sp]))
        acc = x.astype(np.int64).sum(axis=sp, keepdims=True) - t["x_zp"] * count
        return [_round_then_zp_np(acc.astype(np.float32) * np.float32(t["scale"]), t["out_zp"], t["out_dtype"])]

    def compute(self, node, x):
        t = node.attrs
        sp = self._spatial(node, len(x.shape))
        count = int(np.prod([x.shape[d] for d in sp]))
        out_shape = node.outputs[0].type.shape

        def total(*i):
            rs = [te.reduce_axis(x.shape[d], f"r{d}") for d in sp]
            idx = list(i)
            for d, r in zip(sp, rs):
                idx[d] = r.var
            return te.sum(Cast("int32", x(*idx)), rs)
        acc = te.compute(out_shape, total, "qgap_sum")

        def body(*i):
            a = acc(*i) - _i32(t["x_zp"] * count)
            return _round_then_zp(Cast("float32", a) * _f32(t["scale"]), t["out_zp"], t["out_dtype"])
        return [te.compute(out_shape, body, "qgap")]


@register
class QLinearAvgPool(AveragePool):
    """onnxruntime's QLinearAveragePool (AveragePool's window attributes, layout NCHW or NHWC):
    y = nearbyint(sum(float(x - x_zp) * x_scale over the window's taps inside the input, in
    window order) / count / y_scale + out_zp), saturated. count is the kernel's size with
    count_include_pad, else the taps inside the input."""
    name = "QLinearAvgPool"
    internal = True
    dtypes = QLINEAR_TYPES
    QATTRS = ("x_zp", "x_scale", "y_scale", "out_zp", "out_dtype")

    def canon(self, ctx):
        keep = {k: ctx.attrs.pop(k) for k in self.QATTRS if k in ctx.attrs}
        if any(int(d) != 1 for d in ctx.attrs.get("dilations") or []):
            ctx.error("dilations are not supported")
        layout = ctx.attrs.get("layout", "NCHW")
        include_pad = int(ctx.attrs.get("count_include_pad", 0))
        AveragePool.canon(self, ctx)
        ctx.attrs.update(keep, layout=layout, count_include_pad=include_pad)

    def infer(self, node):
        return [TensorType(AveragePool.infer(self, node)[0].shape, node.attrs["out_dtype"])]

    def reference(self, node, x):
        a = node.attrs
        nsp = len(a["kernel_shape"])
        xf = to_nchw((x.astype(np.int64) - a["x_zp"]).astype(np.float32) * np.float32(a["x_scale"]), a["layout"])
        out_shape = nchw_shape(node.outputs[0].type.shape, a["layout"])
        total = np.zeros(out_shape, np.float32)
        count = np.zeros(out_shape[2:], np.int64)
        grids = np.meshgrid(*[np.arange(n) for n in out_shape[2:]], indexing="ij")
        for off in itertools.product(*[range(k) for k in a["kernel_shape"]]):     # window order
            pos = [g * s - p + o for g, s, p, o in zip(grids, a["strides"], a["pads"][:nsp], off)]
            inside = np.ones(out_shape[2:], bool)
            for d, pp in enumerate(pos):
                inside &= (pp >= 0) & (pp < xf.shape[2 + d])
            vals = xf[(slice(None), slice(None)) + tuple(np.clip(pp, 0, n - 1) for pp, n in zip(pos, xf.shape[2:]))]
            total = np.where(inside, total + vals, total).astype(np.float32)
            count += inside
        if a.get("count_include_pad"):
            count = np.full_like(count, int(np.prod(a["kernel_shape"])))
        v = (total / count.astype(np.float32)) / np.float32(a["y_scale"])
        return [from_nchw(_requant_np(v, a["out_zp"], a["out_dtype"]), a["layout"])]

    def compute(self, node, x):
        a = node.attrs
        layout = a["layout"]
        out_shape = node.outputs[0].type.shape

        def total(*i):
            n, c, o = split_index(i, layout)
            rs, idx, _ = self.taps(node, x, o)
            v = Cast("float32", Cast("int32", x(*join_index(n, c, idx, layout))) - _i32(a["x_zp"]))
            return te.sum(v * _f32(a["x_scale"]), rs)
        acc = te.compute(out_shape, total, "qlinear_pool_sum")

        def body(*i):
            if a.get("count_include_pad"):
                cnt = _f32(int(np.prod(a["kernel_shape"])))
            else:
                _, _, counts = self.taps(node, x, split_index(i, layout)[2])
                c = counts[0]
                for cc in counts[1:]:
                    c = c * cc
                cnt = Cast("float32", c)
            return _requant(acc(*i) / cnt / _f32(a["y_scale"]), a["out_zp"], a["out_dtype"])
        return [te.compute(out_shape, body, "qlinear_pool")]


def softmax_exp_table(x_scale, row_len):
    """onnxruntime's QLinearSoftmax exps, indexed here by d = max - x (0..255): exp((bias - d) *
    x_scale) in double, stored as float32, the bias keeping a row's sum below float32's maximum."""
    shift = np.log(np.float32(np.finfo(np.float32).max) / np.float32(row_len))
    bias = max(0.0, float(shift) - 5.0) / float(np.float32(x_scale))
    d = np.arange(256, dtype=np.float64)
    return np.exp((-d + bias) * float(np.float32(x_scale))).astype(np.float32)


@register
class QLinearSoftmax(Op):
    """Inputs x (int8/uint8) and the exp table (softmax_exp_table); attrs axes (the dims a row
    spans), scale (floor(1 / y_scale), float32), out_zp, out_dtype. Per row: m = max(x), e =
    table[m - x], s = the float32 sum of e in row order, q = nearbyint(e * scale / s) + out_zp,
    saturated (e <= s, so q is at most floor(1 / y_scale) + out_zp)."""
    name = "QLinearSoftmax"
    internal = True
    pattern = Pattern.OPAQUE
    dtypes = QLINEAR_TYPES
    min_inputs = 2

    def check(self, node):
        super().check(node)
        t = node.inputs[1]
        if not t.is_const or t.type.shape != (256,) or t.type.dtype != "float32":
            raise OpError(node, "the exp table must be a float32 constant of 256 values")

    def infer(self, node):
        return [TensorType(node.inputs[0].type.shape, node.attrs["out_dtype"])]


    def reference(self, node, x, table):
        t = node.attrs
        axes = tuple(t["axes"])
        xi = x.astype(np.int64)
        e = table[xi.max(axis=axes, keepdims=True) - xi]
        # the row sum in row order, one float32 addition at a time
        rows = np.moveaxis(e, axes, tuple(range(x.ndim - len(axes), x.ndim)))
        flat = rows.reshape(rows.shape[:x.ndim - len(axes)] + (-1,))
        total = np.zeros(flat.shape[:-1], np.float32)
        for k in range(flat.shape[-1]):
            total = (total + flat[..., k]).astype(np.float32)
        total = np.expand_dims(total, tuple(range(total.ndim, x.ndim)))
        total = np.moveaxis(total, tuple(range(x.ndim - len(axes), x.ndim)), axes)
        q = np.rint((e * np.float32(t["scale"])).astype(np.float32) / total).astype(np.int64) + t["out_zp"]
        return [_saturate_np(q, t["out_dtype"])]      # q: rounded, then the zero point added

    def compute(self, node, x, table):
        t = node.attrs
        axes = list(t["axes"])
        shape = x.shape
        row_shape = tuple(1 if d in axes else n for d, n in enumerate(shape))

        def over_row(i, rs):
            idx = list(i)
            for d, r in zip(axes, rs):
                idx[d] = r.var
            return idx

        def row_of(i):
            return [Const(0, "int32") if d in axes else v for d, v in enumerate(i)]

        def rmax(*i):
            rs = [te.reduce_axis(shape[d], f"r{d}") for d in axes]
            return te.max(Cast("int32", x(*over_row(i, rs))), rs)
        xmax = te.compute(row_shape, rmax, "qsoftmax_max")

        def exp_of(i, m):
            return table(m - Cast("int32", x(*i)))

        def rsum(*i):
            rs = [te.reduce_axis(shape[d], f"r{d}") for d in axes]
            return te.sum(exp_of(over_row(i, rs), xmax(*i)), rs)
        total = te.compute(row_shape, rsum, "qsoftmax_sum")

        def body(*i):
            r = row_of(i)
            e = exp_of(list(i), xmax(*r))
            return _round_then_zp(e * _f32(t["scale"]) / total(*r), t["out_zp"], t["out_dtype"])
        return [te.compute(shape, body, "qsoftmax")]
