"""The quantisation parameters the integer kernels can represent: one rule, checked where the
parameters enter the graph (the TFLite converters, the ONNX QDQ folding and QOperator ops).

- a scale is a finite float32 above zero;
- a zero point lies in its storage type's range (int8 -128..127, uint8 0..255, ...);
- a requantisation multiplier (a ratio of scales) becomes TFLite's (Q31 significand, shift) and
  must keep TFLite Micro's contract for MultiplyByQuantizedMultiplier: the shift at most 30
  (the int64 form of the int16x8 kernels: at most 14, its rounding shift 15 - shift being at
  least 1), and the largest accumulator the op can make, shifted left by a positive shift,
  still an int32 (at most 2^47 for the int64 form). A multiplier below 2^-32 flushes to zero, as
  TFLite's QuantizeMultiplier flushes it. Beyond these limits the kernels would shift by 32 or
  more or overflow a signed integer (undefined in C), and TFLite Micro's own kernels return
  wrapped garbage: such a model is refused, naming the scales and the limit.

QuantRangeError carries the message without the operator; each frontend prefixes its own name
for the operator (TFLite: "operator 3 (CONV_2D)", ONNX: "node 'conv1' (QLinearAdd)").
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import QuantRangeError
from .fixed_point import quantize_multiplier

INT32_MAX = (1 << 31) - 1
MAX_SHIFT = 30             # TFLite's MultiplyByQuantizedMultiplier: shift in [-31, 30]
MAX_SHIFT_WIDE = 14        # its int64 form: x * (Q15 multiplier) >> (15 - shift), 15 - shift >= 1
MAX_WIDE_ACC = 1 << 47     # its int64 form's accumulator range (TFLite's DCHECK)
STORAGE = ("int8", "uint8", "int16", "uint16", "int32")

__all__ = ["QuantRangeError", "check_scale", "check_zero_point", "zero_point_problem", "requant_multiplier",
           "requant_multipliers", "check_pair", "centred_max", "dot_bounds"]


def fmt(v) -> str:
    """A scale or ratio as the message shows it: float32-exact short form."""
    return f"{float(v):.7g}"


def check_scale(scale, what):
    """scale (float, or an array of per-channel scales) is finite and above zero; returns it."""
    a = np.asarray(scale, np.float64).reshape(-1)
    bad = [k for k, s in enumerate(a) if not (math.isfinite(s) and s > 0)]
    if bad:
        k = bad[0]
        where = f" (channel {k})" if a.size > 1 else ""
        raise QuantRangeError(f"{what} scale {fmt(a[k])}{where} is not a finite positive number")
    return scale


def zero_point_problem(zp, dtype, what):
    """The refusal of a zero point (or per-channel zero points) outside dtype's range, or None."""
    if dtype not in STORAGE:
        return None
    info = np.iinfo(dtype)
    a = np.asarray(zp, np.int64).reshape(-1)
    bad = [k for k, z in enumerate(a) if not info.min <= int(z) <= info.max]
    if not bad:
        return None
    where = f" (channel {bad[0]})" if a.size > 1 else ""
    return f"{what} zero point {int(a[bad[0]])}{where} is outside {dtype}'s range {info.min}..{info.max}"


def check_zero_point(zp, dtype, what):
    p = zero_point_problem(zp, dtype, what)
    if p:
        raise QuantRangeError(p)
    return zp


def _pair_problem(real, m, shift, bound, wide):
    """Why (m, shift), the multiplier of `real`, is outside the kernels' contract for
    accumulators up to `bound` in magnitude, or None."""
    limit = MAX_SHIFT_WIDE if wide else MAX_SHIFT
    if shift > limit:
        kind = "int64 (int16x8) " if wide else ""
        return (f"makes a requantisation shift of {shift}, more than the {limit} the {kind}integer kernels take "
                f"(TFLite's MultiplyByQuantizedMultiplier)")
    if m == 0 or bound <= 0:
        return None
    if wide:
        if bound > MAX_WIDE_ACC:
            return f"is applied to int64 accumulators up to {bound}, beyond the 2^47 the int16x8 kernels take"
        return None
    left = max(shift, 0)
    if bound * (1 << left) > INT32_MAX:
        most = max(INT32_MAX // bound, 1).bit_length() - 1          # the largest left shift that fits
        return (f"shifts accumulators of up to {bound} left by {left} bits, beyond int32 (TFLite's "
                f"MultiplyByQuantizedMultiplier overflows; multipliers below 2^{most} fit here)")
    return None


def requant_multiplier(real, what, bound=0, wide=False):
    """TFLite's (Q31 significand, shift) of the real multiplier `real`, checked: `what` names the
    scales it comes from, `bound` is the largest accumulator magnitude it is applied to (0: not
    checked), wide selects the int64 (int16x8) form."""
    r = float(real)
    if not math.isfinite(r):
        raise QuantRangeError(f"{what} = {fmt(r)} overflows: the requantisation multiplier must be finite")
    m, shift = quantize_multiplier(r)
    p = _pair_problem(r, m, shift, int(bound), wide)
    if p:
        raise QuantRangeError(f"{what} = {fmt(r)} {p}")
    return m, shift


def check_pair(m, shift, real, what, bound=0, wide=False):
    """An already derived (significand, shift) pair (MEAN's, with 1/count folded in) checked."""
    p = _pair_problem(float(real), int(m), int(shift), int(bound), wide)
    if p:
        raise QuantRangeError(f"{what} = {fmt(real)} {p}")
    return m, shift


def requant_multipliers(reals, what_of, bounds=None, wide=False):
    """Per-channel pairs: what_of(k) names channel k's scales, bounds[k] its accumulator bound."""
    reals = np.atleast_1d(np.asarray(reals, np.float64))
    bounds = np.broadcast_to(np.asarray(0 if bounds is None else bounds, np.int64), reals.shape)
    return [requant_multiplier(r, what_of(k), int(b), wide) for k, (r, b) in enumerate(zip(reals, bounds))]


def centred_max(zp, dtype) -> int:
    """The largest |q - zp| over the storage type's values q."""
    info = np.iinfo(dtype)
    return max(int(info.max) - int(zp), int(zp) - int(info.min))



def dot_bounds(w, x_max, bias=None):
    """The largest |sum_k (x_k - x_zp) * w[c, k] + bias[c]| per output channel c, for weights
    w [C, ...] (the reduction over the rest) and |x - x_zp| <= x_max; in float64 (exact below
    2^53), capped at 2^62."""
    w = np.asarray(w, np.float64).reshape(np.shape(w)[0], -1)
    b = 0.0 if bias is None else np.abs(np.asarray(bias, np.float64).reshape(-1))
    total = np.abs(w).sum(axis=1) * float(x_max) + np.broadcast_to(b, (w.shape[0],))
    return np.minimum(total, 2.0 ** 62).astype(np.int64)
