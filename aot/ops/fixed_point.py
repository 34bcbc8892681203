"""TFLite's integer requantisation, exactly: a real multiplier as a Q31 significand and a
power-of-two shift (QuantizeMultiplier), applied with gemmlowp's saturating rounding doubling
high multiply and rounding divide by a power of two (MultiplyByQuantizedMultiplier, the
double-rounding form TFLite Micro builds by default).

Each function exists twice: on numpy arrays, for the ops' reference semantics (written from
the definitions, not from the kernels), and on tensor expressions, for the kernels. The
kernels use `>>` and `&` on negative int32 values as TFLite Micro and CMSIS-NN do: an
arithmetic shift, which gcc, clang and arm-none-eabi-gcc define it to be.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import QuantRangeError
from ..tir.expr import Bin, Call, Cast, Const, Select, ge, gt, lt

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def quantize_multiplier(real: float):
    """(significand, shift) with real ~= significand * 2^(shift - 31), significand in [2^30, 2^31)."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    fixed = int(math.floor(abs(q) * (1 << 31) + 0.5)) * (1 if q > 0 else -1)     # std::round: half away from 0
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def tflite_round(x):
    """TfLiteRound / std::round: half away from zero."""
    x = np.asarray(x)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def activation_range(code, scale, zero_point, dtype="int8"):
    """(min, max) of a quantised output after a fused activation (0 none, 1 RELU, 2 RELU_N1_TO_1,
    3 RELU6), as TFLite computes it: the bound quantised with a float division, rounded half away."""
    info = np.iinfo(dtype)

    def q(v):
        steps = np.float32(v) / np.float32(scale)
        if not np.isfinite(steps) or abs(float(steps)) >= 2.0 ** 31:     # TFLite converts it to int32
            raise QuantRangeError(f"output scale {float(scale):.7g} puts the fused activation's bound {v:g} at "
                                  f"{float(steps):.3g} steps, beyond int32")
        return int(zero_point) + int(tflite_round(steps))
    if code == 1:
        return max(int(info.min), q(0.0)), int(info.max)
    if code == 3:
        return max(int(info.min), q(0.0)), min(int(info.max), q(6.0))
    if code == 2:
        return max(int(info.min), q(-1.0)), min(int(info.max), q(1.0))
    return int(info.min), int(info.max)


# -- numpy ---------------------------------------------------------------------------------------
def srdhm_np(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul on int32 arrays."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    s = ab + nudge
    q = np.abs(s) // (1 << 31) * np.sign(s)           # C's truncating division
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, q).astype(np.int64)


def rdbpot_np(x, exponent):
    """gemmlowp RoundingDivideByPOT: x / 2^exponent, rounded half away from zero."""
    x, e = np.asarray(x, np.int64), np.asarray(exponent, np.int64)
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def mbqm_np(x, multiplier, shift):
    """MultiplyByQuantizedMultiplier(x, multiplier, shift), double rounding."""
    shift = np.asarray(shift, np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    return rdbpot_np(srdhm_np(np.asarray(x, np.int64) * (np.int64(1) << left), multiplier), right)


def reduced_multiplier_np(multiplier):
    """The Q31 significand rounded to Q15 (half up), saturating at 0x7FFF."""
    m = np.asarray(multiplier, np.int64)
    return np.minimum((m + (1 << 15)) >> 16, 0x7FFF)


def mbqm64_np(x, multiplier, shift):
    """TFLite's MultiplyByQuantizedMultiplier of an int64 accumulator (the int16x8 kernels):
    x * (the significand in Q15) + half, arithmetic shift right by 15 - shift, one rounding;
    the result taken as int32 (it fits whenever the scales are sane, as TFLite assumes)."""
    total = 15 - np.asarray(shift, np.int64)
    r = (np.asarray(x, np.int64) * reduced_multiplier_np(multiplier) + (np.int64(1) << (total - 1))) >> total
    return (r + (1 << 31)) % (1 << 32) - (1 << 31)


# -- tensor expressions ----------------------------------------------------------------------------
def _i32(v):
    return Const(int(v), "int32")


def _i64(v):
    return Const(int(v), "int64")


def srdhm(a, b):
    return Call("srdhm", [a, b if not isinstance(b, int) else _i32(b)], "int32")


def rdbpot(x, exponent):
    """exponent: a Python int (a constant shift) or an int32 expression (0..31)."""
    if isinstance(exponent, int):
        if exponent == 0:
            return x
        exponent = _i32(exponent)
    return Call("rdbpot", [x, exponent], "int32")


def mbqm(x, multiplier, shift):
    """MultiplyByQuantizedMultiplier on int32 expressions; multiplier and shift are Python ints
    (per-tensor) or int32 expressions (per-channel loads)."""
    if isinstance(shift, int):
        left, right = max(shift, 0), max(-shift, 0)
        scaled = x * _i32(1 << left) if left else x
        mul = multiplier if not isinstance(multiplier, int) else _i32(multiplier)
        return rdbpot(srdhm(scaled, mul), right)
    left = Select(gt(shift, _i32(0)), shift, _i32(0))
    right = Select(gt(shift, _i32(0)), _i32(0), _i32(0) - shift)
    return rdbpot(srdhm(x * Cast("int32", _pow2_u32(left)), multiplier), right)


def mbqm64(x, multiplier, shift):
    """mbqm64_np on an int64 expression -> int32; multiplier and shift are Python ints
    (per-tensor: the Q15 significand and the shift folded here) or int32 expressions
    (per-channel loads: the significand reduced in the kernel, without an overflowing add)."""
    if isinstance(shift, int):
        total = 15 - shift
        reduced = int(reduced_multiplier_np(multiplier))
        return Cast("int32", Bin(">>", x * _i64(reduced) + _i64(1 << (total - 1)), _i64(total)))
    # (m + 2^15) >> 16 == (m >> 16) + bit 15 of m, for m >= 0
    half_up = Bin(">>", multiplier, _i32(16)) + Bin("&", Bin(">>", multiplier, _i32(15)), _i32(1))
    reduced = Cast("int64", Select(lt(half_up, _i32(0x7FFF)), half_up, _i32(0x7FFF)))
    total = Cast("int64", _i32(15) - shift)
    return Cast("int32", Bin(">>", x * reduced + Bin("<<", _i64(1), total - _i64(1)), total))


def _pow2_u32(e):
    """2^e as uint32 (1 << 31 overflows int32)."""
    return Bin("<<", Const(1, "uint32"), Cast("uint32", e))


# -- softmax (TFLite's int8 algorithm: gemmlowp fixed-point exp and reciprocal) --------------------
SCALED_DIFF_INTEGER_BITS = 5        # exp's input is Q5.26
ACCUMULATION_INTEGER_BITS = 12      # the sum of exps is Q12.19


def _sat_mul_pot(x, e):
    """gemmlowp SaturatingRoundingMultiplyByPOT<e> for e > 0 on a Python int."""
    threshold = (1 << (31 - e)) - 1
    return INT32_MAX if x > threshold else INT32_MIN if x < -threshold else x * (1 << e)


def _srdhm(a, b):
    return int(srdhm_np(a, b))


def _rdbpot(x, e):
    return int(rdbpot_np(x, e))


def exp_on_negative_values(a, integer_bits=SCALED_DIFF_INTEGER_BITS):
    """gemmlowp exp_on_negative_values: a (raw, Q<integer_bits>) <= 0 -> exp(a) as raw Q0.31."""
    frac = 31 - integer_bits
    quarter = 1 << (frac - 2)
    mask = quarter - 1
    a_mod = (a & mask) - quarter
    # exp on [-1/4, 0): a Taylor expansion around -1/8 in Q0.31
    x = _rescale_to_q0(a_mod, integer_bits) + (1 << 28)
    x2 = _srdhm(x, x)
    x3 = _srdhm(x2, x)
    x4 = _srdhm(x2, x2)
    x4_over_4 = _rdbpot(x4, 2)
    poly = _rdbpot(_srdhm(x4_over_4 + x3, 715827883) + x2, 1)
    result = 1895147668 + _srdhm(1895147668, x + poly)
    remainder = a_mod - a
    for exponent, mult in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
                           (3, 720401), (4, 242)):
        if integer_bits > exponent and remainder & (1 << (frac + exponent)):
            result = _srdhm(result, mult)
    if integer_bits > 5 and a < -(1 << (36 - integer_bits)):
        result = 0
    return INT32_MAX if a == 0 else result


def _rescale_to_q0(x, integer_bits):
    """gemmlowp Rescale<0> of a Q<integer_bits> raw value: multiply by 2^integer_bits, saturating."""
    return _sat_mul_pot(x, integer_bits) if integer_bits > 0 else x


def softmax_tables(beta, input_scale):
    """(exp table, sum table, diff_min) of TFLite's int8 softmax: for d = max - x in [0, 255],
    exp[d] is exp(-d * scale * beta) in Q0.31 as gemmlowp computes it and sum[d] its Q12.19 term;
    both 0 below diff_min (TFLite skips those inputs and outputs -128 for them)."""
    real = min(float(np.float64(beta) * np.float64(input_scale) * (1 << (31 - SCALED_DIFF_INTEGER_BITS))),
               float((1 << 31) - 1))
    mult, left_shift = quantize_multiplier(real)
    radius = ((1 << SCALED_DIFF_INTEGER_BITS) - 1) * (1 << (31 - SCALED_DIFF_INTEGER_BITS)) / (1 << left_shift)
    diff_min = -int(math.floor(radius))
    exp_t, sum_t = np.zeros(256, np.int32), np.zeros(256, np.int32)
    for d in range(256):
        if -d >= diff_min:
            raw = exp_on_negative_values(_srdhm(-d * (1 << left_shift), mult))
            exp_t[d], sum_t[d] = raw, _rdbpot(raw, ACCUMULATION_INTEGER_BITS)
    return exp_t, sum_t, diff_min


def reciprocal_np(total):
    """TFLite's GetReciprocal(total, 12): (Q0.31 of 1/(total as 1.x * 2^n), n) on Python ints."""
    clz = 32 - int(total).bit_length()
    shifted = ((int(total) << clz) & 0xFFFFFFFF) - (1 << 31)
    shifted = shifted - (1 << 32) if shifted >= (1 << 31) else shifted
    half = _half_sum(shifted, INT32_MAX)
    x = 1515870810 + _srdhm(half, -1010580540)
    for _ in range(3):
        x = x + _sat_mul_pot(_srdhm(x, (1 << 29) - _srdhm(half, x)), 2)
    return _sat_mul_pot(x, 1), ACCUMULATION_INTEGER_BITS - clz


def _half_sum(a, b):
    s = a + b
    q = abs(s + (1 if s >= 0 else -1)) // 2
    return q if s + (1 if s >= 0 else -1) >= 0 else -q


def softmax_np(x, exp_t, sum_t, out_dtype="int8"):
    """TFLite's int8 softmax over the last axis, from the tables."""
    x = x.astype(np.int64)
    d = x.max(axis=-1, keepdims=True) - x
    totals = sum_t[d].astype(np.int64).sum(axis=-1)
    out = np.empty(x.shape, np.int64)
    for row in np.ndindex(*x.shape[:-1]):
        scale, nbits = reciprocal_np(int(totals[row]))
        exponent = nbits + 31 - 8 * np.dtype(out_dtype).itemsize
        for c in range(x.shape[-1]):
            out[row + (c,)] = _rdbpot(_srdhm(scale, int(exp_t[d[row + (c,)]])), exponent)
    info = np.iinfo(out_dtype)
    return np.clip(out + info.min, info.min, info.max).astype(out_dtype)


# -- the same on tensor expressions: the per-row reciprocal in the kernel ----------------------------
def sat_mul_pot(x, e):
    threshold = (1 << (31 - e)) - 1
    return Select(gt(x, _i32(threshold)), _i32(INT32_MAX),
                  Select(lt(x, _i32(-threshold)), _i32(INT32_MIN), x * _i32(1 << e)))


def leading_zeros(total):
    """Leading zeros of 0 < total < 2^31 as int32: #{k <= 31 : total < 2^k} (no clz builtin)."""
    clz = _i32(1)
    for k in range(1, 31):
        clz = clz + Cast("int32", lt(total, _i32(1 << k)))
    return clz


def reciprocal_half(total, clz):
    """GetReciprocal's start: RoundingHalfSum(total as 1.x in Q0.31 minus one, One)."""
    shifted = Cast("int32", Bin("<<", Cast("uint32", total), Cast("uint32", clz)) - Const(1 << 31, "uint32"))
    s = Cast("int64", shifted) + _i64(INT32_MAX)
    return Cast("int32", Bin("/", s + Select(ge(s, _i64(0)), _i64(1), _i64(-1)), _i64(2)))


def newton_step(x, half):
    """One Newton-Raphson step of gemmlowp's one_over_one_plus_x_for_x_in_0_1 (Q2.29)."""
    return x + sat_mul_pot(srdhm(x, _i32(1 << 29) - srdhm(half, x)), 2)


# -- gemmlowp's logistic and tanh on one raw value (TFLite's int8 LOGISTIC and TANH) ---------------
def _reciprocal_newton(half_denominator):
    """Three Newton-Raphson steps towards 1 / (2 * half_denominator) in Q2.29 (raw)."""
    x = 1515870810 + _srdhm(half_denominator, -1010580540)
    for _ in range(3):
        x = x + _sat_mul_pot(_srdhm(x, (1 << 29) - _srdhm(half_denominator, x)), 2)
    return x


def logistic_raw(a, integer_bits):
    """gemmlowp logistic of a raw Q<integer_bits> value -> raw Q0.31."""
    if a == 0:
        return 1 << 30
    e = exp_on_negative_values(-abs(a), integer_bits)
    positive = _sat_mul_pot(_reciprocal_newton(_half_sum(e, INT32_MAX)), 1)      # 1 / (1 + e)
    return positive if a > 0 else INT32_MAX - positive


def tanh_raw(a, integer_bits):
    """gemmlowp tanh of a raw Q<integer_bits> value -> raw Q0.31."""
    if a == 0:
        return 0
    e = exp_on_negative_values(-abs(a), integer_bits + 1)           # exp(-2|a|): the same raw, one more integer bit
    t = _sat_mul_pot(_reciprocal_newton(_half_sum(e, INT32_MAX)) - (1 << 29), 2)      # (1 - e) / (1 + e)
    return -t if a < 0 else t
