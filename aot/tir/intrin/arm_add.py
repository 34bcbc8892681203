"""Arm micro-kernel for TFLite's int8 ADD: a run of elements of two int8 operands rescaled to a
common scale, summed and requantised to int8, stored through its output pointer.

  add_s8q(out, a, b, n, sa, ka, ma, ea, sb, kb, mb, eb, so, mo, eo, zp, lo, hi)
  out[k] = clamp(R(R(a[k] * sa + ka, ma, ea) + R(b[k] * sb + kb, mb, eb)) * so, mo, eo) + zp, lo, hi)
  for k < n, where R(x, m, e) = RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x, m), e)

sa, ka fold TFLite's input offset and left shift (x - zp) << 20 (and an input multiplier's left
shift) into one multiply-add; so is the output multiplier's left shift as a factor (1 when there
is none). The loop IR's QAdd (aot/ops/qnn.py) after simplification is the pattern: match reads
every constant off it and refuses anything else. A residual add fused into a conv's epilogue
gets the call too (aot/schedules/arm_pairs.py: the conv's requantised channels of one pixel
into a local run, then one call for the run).

The call reads a[k] and b[k] before it stores out[k] and never reads an element after storing
it, so out may be a or b itself (`elementwise`: aot/tir/inplace.py proves a write over an input
through it as through a store out[i] = f(in[i])). Bodies:
- Helium (MVE): four elements a step, int8 loads widened to int32 (vldrb.s32), the last step
  predicated (vctp32); vqrdmulh is gemmlowp's SaturatingRoundingDoublingHighMul exactly, and
  RoundingDivideByPOT (half away from zero) is vrshl's half-up rounding after subtracting one
  from negative values when the exponent is nonzero (the exponent's sign bit picks them);
- plain C: the scalar loop (every other core; the Helium rule is the only one that calls it).
"""
from __future__ import annotations

from ..expr import Bin, Call, Cast, Const, Load, substitute, walk
from ..simplify import const_value, simplify
from ..stmt import For, Store
from ...targets.cortex_m import core
from .arm import contiguous_in
from .base import TensorIntrin, register_intrin
from .gemmlowp import clamp, mve_clamp, mve_rdbpot, mve_srdhm, rdbpot_lines, srdhm_lines
from .requant import rescale_parts

_I32 = (-(1 << 31), (1 << 31) - 1)


def _fits(v):
    return _I32[0] <= v <= _I32[1]


def _affine(e):
    """(load, s, k) when e is (int32)load * s + k with load int8 and s, k int32 constants (sums,
    differences and constant factors in any nesting); else None."""
    if isinstance(e, Cast) and e.dtype == "int32" and isinstance(e.a, Load) and e.a.dtype == "int8":
        return e.a, 1, 0
    if not isinstance(e, Bin) or e.dtype != "int32":
        return None
    if e.op in ("+", "-") and isinstance(e.b, Const):
        got = _affine(e.a)
        if got is None:
            return None
        ld, s, k = got
        k = k + int(e.b.value) if e.op == "+" else k - int(e.b.value)
        return (ld, s, k) if _fits(k) else None
    if e.op == "*" and isinstance(e.b, Const):
        got = _affine(e.a)
        if got is None:
            return None
        ld, s, k = got
        s, k = s * int(e.b.value), k * int(e.b.value)
        return (ld, s, k) if _fits(s) and _fits(k) else None
    return None


def _scaled(e):
    """(inner, m, ex) when e is rdbpot(srdhm(inner, m), ex) or srdhm(inner, m) (ex 0), m and ex
    constants (ex 0..31); else None."""
    got = rescale_parts(e)
    if got is None:
        return None
    inner, m, ex = got
    if not (isinstance(ex, Const) and 0 <= int(ex.value) <= 31 and isinstance(m, Const)):
        return None
    return inner, int(m.value), int(ex.value)


def parse_qadd(value):
    """(a load, b load, [sa, ka, ma, ea, sb, kb, mb, eb, so, mo, eo, zp, lo, hi]) when value is
    TFLite's int8 ADD of two int8 loads as the loop IR writes it; else (None, None, why)."""
    if not (isinstance(value, Cast) and value.dtype == "int8" and isinstance(value.a, Bin)
            and value.a.op == "min" and isinstance(value.a.b, Const)):
        return None, None, "the value is not an int8 clamp"
    mx = value.a.a
    if not (isinstance(mx, Bin) and mx.op == "max" and isinstance(mx.b, Const)):
        return None, None, "the value is not an int8 clamp"
    lo, hi = int(mx.b.value), int(value.a.b.value)
    if not -128 <= lo <= hi <= 127:
        return None, None, "the clamp is not within int8"
    z, zp = mx.a, 0
    if isinstance(z, Bin) and z.op in ("+", "-") and isinstance(z.b, Const):
        zp = int(z.b.value) if z.op == "+" else -int(z.b.value)
        z = z.a
    out = _scaled(z)
    if out is None:
        return None, None, "the output is not rescaled by a constant multiplier"
    total, mo, eo = out
    so = 1
    if isinstance(total, Bin) and total.op == "*" and isinstance(total.b, Const):
        so, total = int(total.b.value), total.a
    if not (isinstance(total, Bin) and total.op == "+"):
        return None, None, "the rescaled value is not a sum of two operands"
    ops = []
    for x in (total.a, total.b):
        sc = _scaled(x)
        aff = _affine(sc[0]) if sc else None
        if aff is None:
            return None, None, "an operand is not an int8 load rescaled by constants"
        ops.append((aff, sc[1], sc[2]))
    (la, sa, ka), ma, ea = ops[0]
    (lb, sb, kb), mb, eb = ops[1]
    if not (_fits(so) and -255 <= zp <= 255):
        return None, None, "the output scale or zero point is out of range"
    return la, lb, [sa, ka, ma, ea, sb, kb, mb, eb, so, mo, eo, zp, lo, hi]


def _rescale_c(v, m, e):
    """C lines: v = RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(v, m), e) (gemmlowp)."""
    return srdhm_lines(v, m) + rdbpot_lines(v, e)


def _mve_rescale(v, m, r, e):
    """Helium: v rescaled by scalar m, then divided by 2^e (r = -e as a vector) rounding half
    away from zero; the division left out where e is 0 (a constant once the call is inlined)."""
    return [f"{v} = {mve_srdhm(v, m, scalar=True)};",
            f"if ({e} != 0) {{",
            f"  {v} = {mve_rdbpot(v, r)};",
            "}"]


@register_intrin
class AddS8Requant(TensorIntrin):
    name = "add_s8q"
    headers = {"mve": ("arm_mve.h",)}
    written_args = (0,)
    pointer_args = (0, 1, 2)
    extent_arg = 3
    elementwise = True     # out[k] from a[k] and b[k] alone, each read before out[k] is stored

    def match(self, loop, acc=None):
        """loop, or a perfect nest under it, around out[i] = qadd(a[i], b[i]) with out, a and b
        each one consecutive run over the nest."""
        loops, s = [loop], loop.body
        while isinstance(s, For):
            loops.append(s)
            s = s.body
        if not isinstance(s, Store) or s.buffer.dtype != "int8":
            return None, "the loop body is not one int8 store"
        la, lb, consts = parse_qadd(s.value)
        if la is None:
            return None, consts
        out = Load(s.buffer, (s.index,))
        for ld in (out, la, lb):
            if not contiguous_in(ld, loops):
                return None, f"{ld.buffer.name} is not one consecutive run along the loops"
        for lp in loops[1:]:
            if any(x is o.var for e in (lp.min, lp.extent) for o in loops for x in walk(e)):
                return None, f"the bounds of {lp.var.name} depend on the run's loops"
        at_min = {id(lp.var): lp.min for lp in loops}
        base = [Load(ld.buffer, tuple(simplify(substitute(i, at_min)) for i in ld.indices)) for ld in (out, la, lb)]
        n = loop.extent
        for lp in loops[1:]:
            n = n * lp.extent
        n = simplify(n)
        n = Cast("int32", n) if n.dtype != "int32" else n
        if const_value(n) is not None and const_value(n) <= 0:
            return None, "the run is empty"
        return base + [n] + [Const(c, "int32") for c in consts], None

    def variant_for(self, mcpu):
        return "mve" if core(mcpu).mve else "plain"

    def signature(self):
        return ("int32_t aot_add_s8q(int8_t* out, const int8_t* a, const int8_t* b, int32_t n, "
                "int32_t sa, int32_t ka, int32_t ma, int32_t ea, int32_t sb, int32_t kb, int32_t mb, int32_t eb, "
                "int32_t so, int32_t mo, int32_t eo, int32_t zp, int32_t lo, int32_t hi)")

    def bodies(self):
        mve = ["const int32x4_t ra = vdupq_n_s32(-ea), rb = vdupq_n_s32(-eb), ro = vdupq_n_s32(-eo);",
               "const int32x4_t vsa = vdupq_n_s32(sa), vsb = vdupq_n_s32(sb);",
               "const int32x4_t vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);",
               "for (; n > 0; n -= 4, out += 4, a += 4, b += 4) {",
               "  mve_pred16_t p = vctp32q((uint32_t)n);",
               "  int32x4_t x = vldrbq_z_s32(a, p);",
               "  int32x4_t y = vldrbq_z_s32(b, p);",
               "  x = vmlasq_n_s32(x, vsa, ka);",           # x * sa + ka
               "  y = vmlasq_n_s32(y, vsb, kb);",
               *["  " + ln for ln in _mve_rescale("x", "ma", "ra", "ea") + _mve_rescale("y", "mb", "rb", "eb")],
               "  x = vaddq_s32(x, y);",
               "  if (so != 1) {",
               "    x = vmulq_n_s32(x, so);",
               "  }",
               *["  " + ln for ln in _mve_rescale("x", "mo", "ro", "eo")],
               f"  x = {mve_clamp('x', 'vlo', 'vhi')};",
               "  vstrbq_p_s32(out, x, p);",
               "}",
               "return 0;"]
        plain = ["int32_t k, x, y, mask;", "int64_t ab;",
                 "for (k = 0; k < n; ++k) {",
                 "  x = (int32_t)a[k] * sa + ka;",
                 "  y = (int32_t)b[k] * sb + kb;",
                 *["  " + ln for ln in _rescale_c("x", "ma", "ea") + _rescale_c("y", "mb", "eb")],
                 "  x = (x + y) * so;",
                 *["  " + ln for ln in _rescale_c("x", "mo", "eo")],
                 "  x += zp;",
                 f"  out[k] = (int8_t)({clamp('x')});",
                 "}",
                 "return 0;"]
        return {"mve": mve, "plain": plain}


ADD = AddS8Requant()


def add_call(loop):
    """The Evaluate of one add_s8q call in place of loop (or None with the reason)."""
    from ..stmt import Evaluate
    args, why = ADD.match(loop)
    if args is None:
        return None, why
    return Evaluate(Call(ADD.name, args, ADD.dtype)), None
