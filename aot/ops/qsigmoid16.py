"""TFLite's int16 LOGISTIC and TANH (int16x8 models): an int16 input has 65536 values, too many
for a table a microcontroller keeps, so the kernel is TFLite Micro's algorithm itself. The input
is rescaled to Q3.12 times 3 (x * multiplier + round, shifted right), its magnitude indexes a
256-entry table of sigmoid(i / 24) in Q0.16 with linear interpolation between neighbours (tanh
reads the same table at twice the rate: tanh(x) = 2 * sigmoid(2x) - 1), and the sign picks the
branch. The table and the multipliers are computed here at compile time; tests/host/test_tflite_int16.py
checks all 65536 inputs of several scales against the tflite-micro wheel.
"""
from __future__ import annotations

import math

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Bin, Cast, Const, Select, ge, lt, min_
from .registry import Op, Pattern, register

# the branch constants of each function: bits of the interpolation fraction, the saturated table
# value (shifted), the positive and negative branch offsets, the final shift
_KINDS = {
    "logistic": dict(frac=9, sat=0x7FFF << 10, pos=1 << 9, neg=(1 << 25) + (1 << 9) - 1, shift=10),
    "tanh": dict(frac=8, sat=0xFFFF << 8, pos=(1 << 7) - (1 << 23), neg=(1 << 23) + (1 << 7) - 1, shift=8),
}


def sigmoid_table():
    """sigmoid(i / 24) for i in 0..254 in Q0.16, each raised by half the linear interpolation's
    error at the segment's midpoint (sigmoid is concave there: the chords run below it), rounded;
    the last entry is the limit, 1.0, clamped to 16 bits."""
    def s(v):
        return 65536.0 / (1.0 + np.exp(-v / 24.0))
    i = np.arange(256, dtype=np.float64)
    table = np.floor(s(i) + (s(i + 0.5) - (s(i) + s(i + 1)) / 2) / 2 + 0.5)
    table[255] = 65535
    return table.astype(np.uint16)


def checked_log2(x):
    """(whether x is a power of two within 1e-3 in log2, the rounded log2), in float32 as TFLite."""
    v = np.float32(np.log(np.float32(x))) * np.float32(1.0 / np.float32(np.log(np.float32(2.0))))
    r = np.float32(np.sign(v) * np.floor(np.abs(v) + np.float32(0.5)))
    return bool(abs(np.float32(v - r)) < np.float32(1e-3)), int(r)


def input_rescale(kind, in_scale):
    """(multiplier, right shift) taking the input to the table's scale, as TFLite Micro's
    Prepare and the kernel's power-of-two case compute them; ValueError if the input scale is
    too large for the 16-bit multiplier."""
    pot, log2 = checked_log2(in_scale)
    shift = 12 + log2
    if pot and (shift == 0 or (kind == "tanh" and shift == 1)):
        return 3 << shift, 0
    m, shift = float(np.float64(np.float32(in_scale))) * 4096.0 * 3.0, 0
    while m <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        m *= 2.0
    if int(m) > 32767:
        raise ValueError(f"input scale {float(in_scale):g} is too large for TFLite's int16 kernel "
                         "(at most about 2.67, 32767 / (3 * 4096))")
    return int(m), shift


def sigmoid16_np(kind, x, table, multiplier, shift):
    """The kernel on numpy values (int16 x -> int16)."""
    k = _KINDS[kind]
    rnd = (1 << (shift - 1)) if shift > 0 else 0
    v = (x.astype(np.int64) * multiplier + rnd) >> shift
    a = np.abs(v)
    uh, ut = a >> k["frac"], a & ((1 << k["frac"]) - 1)
    lo = table.astype(np.int64)[np.minimum(uh, 254)]
    hi = table.astype(np.int64)[np.minimum(uh, 254) + 1]
    r = np.where(uh >= 255, k["sat"], (lo << k["frac"]) + ut * (hi - lo))
    out = np.where(v >= 0, r + k["pos"], k["neg"] - r) >> k["shift"]
    return out.astype(np.int16)


@register
class QSigmoid16(Op):
    """TFLite LOGISTIC or TANH on int16 (attr kind), output scale 2^-15, zero points 0: inputs x
    (int16) and the sigmoid table (uint16[256], a constant); attrs multiplier and shift, the
    input rescale (input_rescale)."""
    name = "QSigmoid16"
    internal = True
    pattern = Pattern.ELEMWISE
    dtypes = ("int16",)
    min_inputs = 2

    def check(self, node):
        super().check(node)
        t = node.inputs[1]
        if not t.is_const or t.type.shape != (256,) or t.type.dtype != "uint16":
            raise OpError(node, "the sigmoid table must be a uint16 constant of 256 values")
        if node.attrs.get("kind") not in _KINDS:
            raise OpError(node, f"kind must be one of {sorted(_KINDS)}")

    def infer(self, node):
        return [TensorType(node.inputs[0].type.shape, "int16")]

    def reference(self, node, x, table):
        a = node.attrs
        return [sigmoid16_np(a["kind"], x, table, int(a["multiplier"]), int(a["shift"]))]

    def compute(self, node, x, table):
        a = node.attrs
        k = _KINDS[a["kind"]]
        shift = int(a["shift"])

        def i32(v):
            return Const(int(v), "int32")

        def body(*i):
            v = Cast("int32", x(*i)) * i32(a["multiplier"])
            if shift:
                v = Bin(">>", v + i32(1 << (shift - 1)), i32(shift))
            mag = Select(lt(v, i32(0)), i32(0) - v, v)
            uh = Bin(">>", mag, i32(k["frac"]))
            at = min_(uh, i32(254))             # in bounds; uh >= 255 saturates below
            lo, hi = Cast("int32", table(at)), Cast("int32", table(at + i32(1)))
            frac = Bin("&", mag, i32((1 << k["frac"]) - 1))
            r = Select(ge(uh, i32(255)), i32(k["sat"]), Bin("<<", lo, i32(k["frac"])) + frac * (hi - lo))
            out = Select(ge(v, i32(0)), r + i32(k["pos"]), i32(k["neg"]) - r)
            return Cast("int16", Bin(">>", out, i32(k["shift"])))
        return [te.compute(x.shape, body, f"q{a['kind']}16")]
