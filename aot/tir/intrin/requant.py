"""TFLite's requantisation as the loop IR writes it, matched in one place for every Arm rule.

aot/ops/qnn.py's requant lowers an int32 accumulator to

  (int8)min(max(mbqm(acc + bias[c], mult, shift) + zp, lo), hi)

with mbqm (aot/ops/fixed_point.py) either per channel (mult and shift int32 loads:
rdbpot(srdhm((acc + bias) * (1 << max(shift, 0)), mult), max(-shift, 0)) with the shifts as
Selects) or per tensor (mult and shift Python ints folded into constants, a zero rounding shift
and a unit left factor left out). match_requant reads the parts off such an expression and
checks the middle by building mbqm again from them, so anything it accepts is exactly the
kernel's arithmetic; rescale_parts is the srdhm/rdbpot pair alone (an int8 ADD's rescalings:
aot/tir/intrin/arm_add.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..expr import Bin, Call, Cast, Const, Expr, Load, walk
from .arm import flat_index, step


@dataclass(frozen=True)
class Requant:
    """One requantisation found in an epilogue. mult and shift are int32 loads (per channel) or
    Python ints (per tensor); bias an int32 load; zp, lo, hi the output zero point and clamp."""
    node: Expr          # the int8 Cast that is the requantisation
    acc: Load           # its read of the accumulator
    bias: Load
    mult: Load | int
    shift: Load | int
    zp: int
    lo: int
    hi: int
    zp_added: bool      # the zero point is an add in the IR (simplification drops a zero one)

    @property
    def per_channel(self) -> bool:
        return not isinstance(self.mult, int)

    def parts(self) -> tuple:
        """(bias, mult, shift, zp, lo, hi): a micro-kernel call's requantisation arguments."""
        return self.bias, self.mult, self.shift, self.zp, self.lo, self.hi


def rescale_parts(e):
    """(inner, mult, right) when e is rdbpot(srdhm(inner, mult), right), or srdhm(inner, mult)
    (right a constant 0: a rounding shift by zero is left out); else None. Nothing is checked of
    the three: constant or not is the caller's question."""
    right = Const(0, "int32")
    if isinstance(e, Call) and e.fn == "rdbpot":
        e, right = e.args
    if not (isinstance(e, Call) and e.fn == "srdhm"):
        return None
    return e.args[0], e.args[1], right


def _one_apart(ld, oc):
    """ld moves by one element along the channel variable oc (not asked when oc is None)."""
    return oc is None or step(flat_index(ld), oc) == 1


def _mbqm_parts(x, acc, oc):
    """(acc load, bias, mult, shift) of x = mbqm(acc + bias[c], mult, shift), mult and shift int32
    loads (per channel) or Python ints (per tensor); Nones when x is not of that form (the
    caller checks the rest by building mbqm again)."""
    none = None, None, None, None
    got = rescale_parts(x)
    if got is None:
        return none
    scaled, mult, right = got
    if isinstance(right, Const) and isinstance(mult, Const):          # per tensor
        left = 0
        if isinstance(scaled, Bin) and scaled.op == "*" and isinstance(scaled.b, Const):
            left = int(scaled.b.value).bit_length() - 1
            scaled = scaled.a
        if not (isinstance(scaled, Bin) and scaled.op == "+"):
            return none
        acc_load, bias = scaled.a, scaled.b
        mult, shift = int(mult.value), left - int(right.value)
        if left and right.value:
            return none
    else:                                                              # per channel
        if not (isinstance(scaled, Bin) and scaled.op == "*" and isinstance(scaled.a, Bin) and scaled.a.op == "+"):
            return none
        acc_load, bias = scaled.a.a, scaled.a.b
        shift = getattr(getattr(right, "f", None), "b", None)       # shift > 0 ? 0 : 0 - shift
        if not all(isinstance(ld, Load) and ld.dtype == "int32" and _one_apart(ld, oc) for ld in (mult, shift)):
            return none
    if not (isinstance(acc_load, Load) and acc_load.buffer is acc and isinstance(bias, Load)
            and bias.dtype == "int32" and _one_apart(bias, oc)):
        return none
    return acc_load, bias, mult, shift


def match_requant(value, acc, oc=None) -> Requant | None:
    """The Requant that value is, when value is TFLite's requantisation of the accumulator buffer
    acc as lowering writes it; else None. With oc (the output channel loop's variable), bias,
    and per channel mult and shift, must be one element apart along it."""
    from ...ops.fixed_point import mbqm
    if not (isinstance(value, Cast) and value.dtype == "int8" and isinstance(value.a, Bin)):
        return None
    hi = value.a
    if hi.op != "min" or not isinstance(hi.b, Const) or not isinstance(hi.a, Bin) or hi.a.op != "max":
        return None
    lo, x = hi.a, hi.a.a
    if not isinstance(lo.b, Const):
        return None
    zp, added = 0, False
    if isinstance(x, Bin) and x.op == "+" and isinstance(x.b, Const):
        zp, x, added = int(x.b.value), x.a, True
    got, bias, mult, shift = _mbqm_parts(x, acc, oc)
    if got is None or mbqm(got + bias, mult, shift).key() != x.key():
        return None
    return Requant(value, got, bias, mult, shift, zp, int(lo.b.value), int(hi.b.value), added)


def find_requant(value, acc, oc=None) -> Requant | None:
    """The requantisation of the accumulator inside the epilogue `value` (all of it, or the int8
    operand of what follows: a fused residual add); None when there is none, or the
    accumulator is read outside it."""
    reads = sum(1 for e in walk(value) if isinstance(e, Load) and e.buffer is acc)
    for e in walk(value):
        if isinstance(e, Cast) and e.dtype == "int8":
            rq = match_requant(e, acc, oc)
            if rq and reads == sum(1 for x in walk(e) if isinstance(x, Load) and x.buffer is acc):
                return rq
    return None
