"""Table-driven int8 activations: an int8 (or uint8) input has 256 values, so any elementwise
function of it is a 256-entry table computed once at compile time, and the kernel is one load
per element: no arithmetic at run time, and exactly the output the table's author defines.

The table builders below are TFLite Micro's int8 kernels for LOGISTIC, TANH, RELU, RELU6,
LEAKY_RELU and HARD_SWISH, emulated on every input value with their exact integer arithmetic
(gemmlowp's fixed-point logistic and tanh, MultiplyByQuantizedMultiplier, the 16-bit
hard-swish pipeline) and the multipliers their Prepare computes, float divisions included.
A table entry is the kernel's output for that input, so the op is bit-exact with TFLite Micro
by construction; tests/host/test_tflite_frontend.py checks every entry against the tflite-micro wheel.
"""
from __future__ import annotations

import math

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Cast, Const
from .fixed_point import logistic_raw, mbqm_np, quantize_multiplier, rdbpot_np, tanh_raw, tflite_round
from .registry import Op, Pattern, register

INT8 = np.iinfo(np.int8)


@register
class QLookup(Op):
    """y[i] = table[x[i] - min(x's dtype)]: inputs x (int8 or uint8) and table (256 values of the
    output dtype, a constant)."""
    name = "QLookup"
    internal = True
    pattern = Pattern.ELEMWISE
    dtypes = ("int8", "uint8")
    min_inputs = 2

    def check(self, node):
        super().check(node)
        t = node.inputs[1]
        if not t.is_const or t.type.shape != (256,):
            raise OpError(node, "the lookup table must be a constant of 256 values")

    def infer(self, node):
        return [TensorType(node.inputs[0].type.shape, node.inputs[1].type.dtype)]

    def reference(self, node, x, table):
        return [table[x.astype(np.int64) - np.iinfo(x.dtype).min]]

    def compute(self, node, x, table):
        offset = Const(-int(np.iinfo(x.dtype).min), "int32")
        return [te.compute(x.shape, lambda *i: table(Cast("int32", x(*i)) + offset), "lookup")]


def _inputs(dtype="int8"):
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1, dtype=np.int64)


def float_ratio(a, b):
    """double(a / b) with the division in float32, as TFLite Micro's Prepare writes it."""
    return float(np.float32(a) / np.float32(b))


# -- TFLite Micro's int8 kernels, one table each ---------------------------------------------------
def _sigmoid_input(q, in_scale, in_zp):
    """LOGISTIC's and TANH's common input stage: (input - zp, the Q4.27 raw value, the radius
    beyond which the output saturates)."""
    q_, shift = math.frexp(float(np.float64(in_scale) * (1 << 27)))
    mult = int(tflite_round(q_ * (1 << 31)))
    radius = int(math.floor(15.0 * (1 << 27) / 2.0 ** shift))
    v = q - in_zp
    return v, mbqm_np(np.clip(v, -radius + 1, radius - 1), mult, shift), radius


def logistic_table(in_scale, in_zp):
    """LOGISTIC (output scale 1/256, zero point -128)."""
    v, raw, radius = _sigmoid_input(_inputs(), in_scale, in_zp)
    out = np.array([int(rdbpot_np(logistic_raw(int(r), 4), 23)) for r in raw]) - 128
    out = np.where(v <= -radius, INT8.min, np.where(v >= radius, INT8.max, out))
    return np.clip(out, INT8.min, INT8.max).astype(np.int8)


def tanh_table(in_scale, in_zp):
    """TANH (output scale 1/128, zero point 0)."""
    v, raw, radius = _sigmoid_input(_inputs(), in_scale, in_zp)
    out = np.array([int(rdbpot_np(tanh_raw(int(r), 4), 24)) for r in raw])
    out = np.where(v <= -radius, INT8.min, np.where(v >= radius, INT8.max, out))
    return np.clip(out, INT8.min, INT8.max).astype(np.int8)


def relu_table(in_scale, in_zp, out_scale, out_zp):
    """RELU: requantised to the output's scale, clamped below at the output's real zero."""
    m, s = quantize_multiplier(float_ratio(in_scale, out_scale))
    out = out_zp + mbqm_np(_inputs() - in_zp, m, s)
    return np.clip(out, max(INT8.min, out_zp), INT8.max).astype(np.int8)


def relu6_table(in_scale, in_zp):
    """RELU6: the raw input clamped to [zero, six] in the input's quantisation."""
    six = int(np.clip(tflite_round(np.float32(6.0) / np.float32(in_scale)) + in_zp, INT8.min, INT8.max))
    return np.clip(_inputs(), in_zp, six).astype(np.int8)


def leaky_relu_table(in_scale, in_zp, out_scale, out_zp, alpha):
    m_id, s_id = quantize_multiplier(float_ratio(in_scale, out_scale))
    m_a, s_a = quantize_multiplier(float(np.float32(in_scale) * np.float32(alpha) / np.float32(out_scale)))
    v = _inputs() - in_zp
    neg = mbqm_np(v, abs(m_a), s_a)
    out = out_zp + np.where(v >= 0, mbqm_np(v, m_id, s_id), -neg if m_a < 0 else neg)
    return np.clip(out, INT8.min, INT8.max).astype(np.int8)


def _i16(v):
    """A C store to int16_t (two's-complement wrap, as gcc and clang define it)."""
    return (int(v) + (1 << 15)) % (1 << 16) - (1 << 15)


def _srdhm16(a, b, rounding=True):
    if a == b == -(1 << 15):
        return (1 << 15) - 1
    ab = a * b
    nudge = (1 << 14 if ab >= 0 else 1 - (1 << 14)) if rounding else 0
    return _i16(math.trunc((ab + nudge) / (1 << 15)))       # exact: |ab| < 2^31


def _sat_shift16(v, amount):
    return int(np.clip(v * (1 << amount), -(1 << 15), (1 << 15) - 1))


def _to_int16_multiplier(m):
    return (1 << 15) - 1 if m >= (1 << 31) - 1 - (1 << 15) else (m + (1 << 15)) >> 16


def hard_swish_table(in_scale, in_zp, out_scale, out_zp):
    """HARD_SWISH: TFLite's 16-bit fixed-point x * relu6(x + 3) / 6."""
    hires = np.float32(1.0 / 128.0) * np.float32(in_scale)
    with np.errstate(over="ignore"):
        ratios = [float(hires / np.float32(out_scale)), float(hires / np.float32(3.0 / 32768.0))]
    if not all(map(math.isfinite, ratios)):
        raise ValueError(f"input scale {float(in_scale):g} / output scale {float(out_scale):g} overflows float32 in "
                         "TFLite's int8 hard-swish")
    (m_out, e_out), (m_rel, e_rel) = (quantize_multiplier(r) for r in ratios)
    if e_out > 0:
        raise ValueError(f"the output scale is too small for TFLite's int8 hard-swish: an output shift of {e_out}, "
                         "more than the 0 it takes")
    if e_rel > 16:          # its int16 reluish value is shifted left by e_rel - 1 in int32
        raise ValueError(f"input scale {float(in_scale):g} makes a reluish shift of {e_rel}, more than the 16 TFLite's "
                         "int8 hard-swish takes")
    m_out, m_rel = _to_int16_multiplier(m_out), _to_int16_multiplier(m_rel)
    out = []
    for q in _inputs():
        v = _i16(_i16(q - in_zp) * 128)
        pre_out = _srdhm16(v, m_out)
        r = v
        if e_rel > 0:
            r = _sat_shift16(r, e_rel - 1)
        r = _srdhm16(r, m_rel)
        if e_rel > 0:
            r = _sat_shift16(r, 1)
        if e_rel < 0:
            r = int(rdbpot_np(r, -e_rel))
        r = _i16((r + (1 << 15)) >> 1)
        y = int(rdbpot_np(_srdhm16(r, pre_out, rounding=False), -e_out))
        out.append(_i16(y + out_zp))
    return np.clip(np.array(out), INT8.min, INT8.max).astype(np.int8)
