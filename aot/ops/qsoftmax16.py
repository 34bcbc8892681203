"""TFLite's int16 SOFTMAX (int16x8 models), TFLite Micro's algorithm: per row, each input's
distance below the row's maximum is rescaled so that [-65535, 0] spans [-10, 0] and looked up in
a 513-entry exp table with linear interpolation (Q0.15); the exps are summed, the sum normalised
by its leading zeros and looked up in a 513-entry 1 / (1 + x) table; each output is an exp times
that reciprocal, shifted back. Both tables are what TFLite Micro's Prepare computes (LUTPopulate:
float samples with a midpoint-error correction), computed here once at compile time.
"""
from __future__ import annotations

import math

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Bin, Cast, Const
from .fixed_point import leading_zeros, mbqm, mbqm_np
from .qnn import row_local, row_max
from .registry import Op, Pattern, register

I16 = np.iinfo(np.int16)
F = np.float32


def _round(v):
    """TfLiteRound on a float32: half away from zero."""
    return F(np.sign(v) * np.floor(np.abs(v) + F(0.5)))


def _lut(fn, in_scale, in_zp, out_scale, out_zp):
    """TFLite's int16 LUTPopulate in float32: 512 samples of fn over the int16 input range, each
    nudged by half the error of linear interpolation at the segment's midpoint, and the end."""
    in_scale, out_scale = F(in_scale), F(out_scale)
    in_min, in_max = in_scale * F(I16.min - in_zp), in_scale * F(I16.max - in_zp)
    out_min, out_max = out_scale * F(I16.min - out_zp), out_scale * F(I16.max - out_zp)
    step = (in_max - in_min) / F(512)
    half = step / F(2)
    inv = F(65536) / (out_max - out_min)
    lut = np.empty(513, np.int16)
    for i in range(512):
        val, mid, nxt = fn(in_min + F(i) * step), fn(in_min + F(i) * step + half), fn(in_min + F(i + 1) * step)
        sample = _round(val * inv)
        interp = _round((nxt * inv + _round(val * inv)) / F(2))
        bias = _round((interp - _round(mid * inv)) / F(2))
        lut[i] = int(min(max(sample - bias, F(I16.min)), F(I16.max)))
    lut[512] = int(min(max(_round(fn(in_max) * inv), F(I16.min)), F(I16.max)))
    return lut


def softmax16_tables():
    """(exp table over [-10, 0], 1 / (1 + x) table over [0, 1]), each int16[513], Q0.15."""
    span = I16.max - I16.min

    def exp(v):
        return F(math.exp(float(v)))

    def recip(v):
        return F(1) / (F(1) + v)
    return (_lut(exp, F(10.0) / F(span), I16.max, F(2.0) / F(span), 0),
            _lut(recip, F(1.0) / F(span), I16.min, F(2.0) / F(span), 0))


def lut_lookup_np(v, lut):
    """An int16 value through a 513-entry table: the top 9 bits index, the low 7 interpolate."""
    v = np.asarray(v, np.int64)
    idx = 256 + (v >> 7)
    base = lut.astype(np.int64)[idx]
    slope = (lut.astype(np.int64)[idx + 1] - base).astype(np.int16).astype(np.int64)
    return (base + ((slope * (v & 0x7F) + 64) >> 7)).astype(np.int16).astype(np.int64)


def softmax16_np(x, exp_lut, recip_lut, multiplier, shift):
    x = x.astype(np.int64)
    diff = x - x.max(axis=-1, keepdims=True)
    e = lut_lookup_np(np.clip(mbqm_np(diff, multiplier, shift) + 32767, I16.min, I16.max), exp_lut)
    total = e.sum(axis=-1, keepdims=True)
    clz = np.array([[32 - int(t).bit_length()] for t in total.reshape(-1)]).reshape(total.shape)
    shifted = ((total << (clz - 1)) + (1 << 13)) >> 14
    recip = lut_lookup_np(np.clip(shifted - ((1 << 15) + (1 << 16)), I16.min, I16.max), recip_lut)
    right = 31 - clz
    out = (e * recip + (np.int64(1) << (right - 1))) >> right
    return np.clip(out, 0, I16.max).astype(np.int16)


def _i32(v):
    return Const(int(v), "int32")


def _i64(v):
    return Const(int(v), "int64")


def _clamp16(v):
    return Bin("min", Bin("max", v, _i32(I16.min)), _i32(I16.max))


def _lookup(lut, v):
    """lut_lookup_np on an int32 expression already inside the int16 range."""
    idx = Bin(">>", v, _i32(7)) + _i32(256)
    base = Cast("int32", lut(idx))
    slope = Cast("int32", Cast("int16", Cast("int32", lut(idx + _i32(1))) - base))
    return Cast("int32", Cast("int16", base + Bin(">>", slope * Bin("&", v, _i32(0x7F)) + _i32(64), _i32(7))))


@register
class QSoftmax16(Op):
    """TFLite SOFTMAX, int16 in and out (zero points 0, output scale 1/32768), over the last
    axis: inputs x and the two int16[513] tables (softmax16_tables); attrs multiplier and shift,
    the input rescale (input scale * beta / (10 / 65535))."""
    name = "QSoftmax16"
    internal = True
    pattern = Pattern.OPAQUE
    dtypes = ("int16",)
    min_inputs = 3

    def check(self, node):
        super().check(node)
        for t in node.inputs[1:3]:
            if not t.is_const or t.type.shape != (513,) or t.type.dtype != "int16":
                raise OpError(node, "the exp and reciprocal tables must be int16 constants of 513 values")

    def infer(self, node):
        return [TensorType(node.inputs[0].type.shape, "int16")]

    def reference(self, node, x, exp_lut, recip_lut):
        return [softmax16_np(x, exp_lut, recip_lut, int(node.attrs["multiplier"]), int(node.attrs["shift"]))]

    def compute(self, node, x, exp_lut, recip_lut):
        a = node.attrs
        shape = x.shape
        rows, depth = shape[:-1], shape[-1]

        xi, mx = row_max(x)

        def exp_body(*i):
            scaled = mbqm(xi(*i) - mx(*i[:-1]), int(a["multiplier"]), int(a["shift"]))
            return _lookup(exp_lut, _clamp16(scaled + _i32(I16.max)))
        e = te.compute(shape, exp_body, "exp16")

        def total_body(*r):
            k = te.reduce_axis(depth, "rs")
            return te.sum(e(*r, k.var), k)
        total = te.compute(rows, total_body, "exp_sum")
        clz = row_local(rows, lambda *r: leading_zeros(total(*r)), "clz")

        def recip_body(*r):
            wide = Bin("<<", Cast("int64", total(*r)), Cast("int64", clz(*r) - _i32(1)))
            shifted = Cast("int32", Bin(">>", wide + _i64(1 << 13), _i64(14)))
            return _lookup(recip_lut, _clamp16(shifted - _i32((1 << 15) + (1 << 16))))
        recip = row_local(rows, recip_body, "recip")

        def body(*i):
            r = i[:-1]
            right = Cast("int64", _i32(31) - clz(*r))
            prod = Cast("int64", e(*i)) * Cast("int64", recip(*r)) + Bin("<<", _i64(1), right - _i64(1))
            v = Cast("int32", Bin(">>", prod, right))
            return Cast("int16", Bin("min", Bin("max", v, _i32(0)), _i32(I16.max)))
        return [te.compute(shape, body, "qsoftmax16")]
