"""Arm micro-kernel for TFLite's int8 depthwise convolution: one output pixel, every channel.

A depthwise conv in NHWC reads, at each window tap, the input's channels one after another, and
with the weights stored tap-major (HWC: the schedule packs TFLite's 1HWC/OHWI constant so) the
weights too. So the channel loop, with the window and the requantisation under it, is one call:

  dw_s8(out, a, b, bias, mult, shift, c, kh, kw, a_row, a_col, b_row, b_col, a_k, off, zp, lo, hi)
  out[k] = clamp(MBQM(bias[k] + sum over r < kh, s < kw of
                      ((int32)a[r*a_row + s*a_col + k*a_k] + off) * (int32)b[r*b_row + s*b_col + k],
                      mult[k], shift[k]) + zp, lo, hi)            for k < c

a_k is 1, or 0 for an input of one channel that every output channel reads (a conv whose input
has one channel, KWS's first layer: a depthwise conv with a depth multiplier of C).

MBQM is TFLite's MultiplyByQuantizedMultiplier with per-channel multiplier and shift; a clipped
window at a padded border only moves the pointers and shortens kh, kw. Bodies:
- Helium (MVE): eight channels a step, int8 loads widened to int16 (vldrb.s16, the offset added
  there), their products widened into two int32 vectors of the even and odd channels (vmullb,
  vmullt), which the bias, multipliers and shifts are loaded to match (de-interleaved by vld2,
  gathered in the last block, which is predicated: vctp); the requantisation vectorised too:
  vqrdmulh is
  gemmlowp's SaturatingRoundingDoublingHighMul exactly (floor((ab + 2^30) / 2^31), saturating
  only at INT32_MIN^2 as gemmlowp does), and RoundingDivideByPOT (half away from zero) is
  vrshl's half-up rounding after subtracting one from negative values when the shift is nonzero;
- DSP (SIMD32): four channels per 32-bit load, widened to int16 pairs (__sxtab16 adds the
  offset), each lane's product accumulated on its own with __smlabb/__smlatt; a whole 3x3 window
  in straight code (a compiler fence between taps keeps gcc from hoisting all 18 loads and
  spilling), clipped windows by rows of 3 or 2 taps; the requantisation without a branch
  (gemmlowp.mbqm_flat_lines; int8's own clamp one SSAT); scalar tails. GCC inlines this body at
  every call (forced_inline), so that the strides and the channel count are constants there;
- plain C: the loops.
"""
from __future__ import annotations

from ..expr import Bin, Cast, Const, Load, substitute, walk
from ..simplify import const_value, simplify
from ..stmt import Allocate, For, Seq, Store
from ...targets.cortex_m import core
from .arm import flat_index, int8_operand, step
from .base import TensorIntrin, register_intrin
from .arm_q15 import TABLE_HEAD, folded_fn
from .gemmlowp import (INT32_LITERALS, clamp, high_mul, mbqm_flat_lines, mbqm_folded_asm, mbqm_folded2_asm, mve_clamp, mve_left, mve_rdbpot_fixup, mve_rshl, mve_srdhm,
                       product, rdbpot_bit_lines, srdhm)
from .requant import match_requant

_WRAPPED = "\n            : "      # the helper's srdhm over two lines


def _i32(v):
    return Const(int(v), "int32")


def _taps(load_a, load_b):
    """The Helium window loop over one block of eight channels (the loads given)."""
    return ["    for (r = 0; r < kh; ++r) {",
            "      const int8_t* pa = a + r * a_row + k * a_k;",
            "      const int8_t* pb = b + r * b_row + k;",
            "      for (s = 0; s < kw; ++s, pa += a_col, pb += b_col) {",
            f"        int16x8_t xa = vaddq_n_s16({load_a}, (int16_t)off);",   # |x + off| <= 255
            f"        int16x8_t xb = {load_b};",
            "        acc.val[0] = vaddq_s32(acc.val[0], vmullbq_int_s16(xa, xb));",
            "        acc.val[1] = vaddq_s32(acc.val[1], vmulltq_int_s16(xa, xb));",
            "      }",
            "    }"]


def _tap4(pad, pa="pa", pb="pb", p="aot_dw_s8"):
    """The DSP body's step over one window tap for channels k .. k+3: a word of each operand (at
    pa, pb), widened to int16 lanes (the input offset added), each lane's product accumulated
    (p: the kernel's prefix of its helpers)."""
    return [pad + x for x in (
        f"memcpy(&xa, {pa}, 4);",
        f"memcpy(&xb, {pb}, 4);",
        "ea = __sxtab16(off2, (int32_t)xa);",           # channels 0, 2
        f"oa = {p}_odd(off2, xa);",                     # channels 1, 3
        "eb = __sxtb16((int32_t)xb);",
        f"ob = {p}_odd0(xb);",
        "a0 = __smlabb(ea, eb, a0);",
        "a2 = __smlatt(ea, eb, a2);",
        "a1 = __smlabb(oa, ob, a1);",
        "a3 = __smlatt(oa, ob, a3);")]


def _at(x, r, s, base=None):
    """The DSP body's pointer to tap (r, s) of operand x ('a' or 'b') for channel k (from base,
    channel k's own pointer, where one is named)."""
    steps = [("" if n == 1 else f"{n} * ") + f"{x}_{w}" for n, w in ((r, "row"), (s, "col")) if n]
    return " + ".join([f"{x} + k" if base is None else base, *steps])


_FOUR = ("k", "k + 1", "k + 2", "k + 3")
# the windows the DSP body takes in straight code: a whole 3x3 and its clips at a padded border
# (a row or a column fewer)
_WINDOWS = ((3, 3), (3, 2), (2, 3), (2, 2))


def _straight_windows(p, cond, end, b_step, decls, tap, acc4, requant4):
    """C lines: the DSP body's windows of _WINDOWS in straight code, each an `if` of the chain
    (cond: what each also needs), channels k < end four a step, the input pointer 4 bytes a step
    and the weights' b_step; tap(pad, pa, pb, p) a tap's lines over the declared decls, a
    compiler fence after each so that its loads are not all hoisted (and spilled)."""
    return [x for n, (kr, kc) in enumerate(_WINDOWS) for x in (
        f"{'} else ' if n else ''}if ({cond}kh == {kr} && kw == {kc}) {{",
        "  const int8_t* pa = a;",                  # channel k's input and weights
        "  const int8_t* pb = b;",
        f"  for (k = 0; k < {end}; k += 4, pa += 4, pb += {b_step}) {{",
        "  " + acc4,
        *["    " + d for d in decls],
        *[y for r in range(kr) for t in range(kc) for y in tap(
            "    ", _at("a", r, t, "pa"), _at("b", r, t, "pb"), p) + [f"    {p.upper()}_FENCE();"]],
        *requant4,
        "  }")]


def flat_fn(name, ssat_macro=None):
    """C lines: static inline int32_t name(v, m, sh, zp, lo, hi): TFLite's requantisation without
    a branch (gemmlowp's flat form), the zero point added, clamped: int8's whole range one SSAT
    (inlined, a constant test), only where ssat_macro is defined if one is named."""
    ssat = ["  if (lo == -128 && hi == 127) {", "    return __ssat(q, 8);", "  }"]
    return [f"static inline int32_t {name}(int32_t v, int32_t m, int32_t sh, int32_t zp, int32_t lo, int32_t hi) {{",
            *["  " + x for x in mbqm_flat_lines("v", "m", "sh", "q", INT32_LITERALS)],
            "  q += zp;",
            *(ssat if ssat_macro is None else [f"#if defined({ssat_macro})", *ssat, "#endif"]),
            "  q = q < lo ? lo : q;",
            "  return q > hi ? hi : q;",
            "}"]


def odd_fn(name):
    """C lines: static inline int32_t name(off2, x): the odd bytes of word x sign-extended to two
    int16 lanes plus off2 (SXTAB16 rotating its operand itself, which neither compiler folds
    __sxtab16(a, ror(x, 8)) into)."""
    return [f"static inline int32_t {name}(int32_t off2, uint32_t x) {{",
            "#if defined(__GNUC__)",
            "  int32_t r;",
            '  __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(off2), "r"(x));',
            "  return r;",
            "#else",
            "  return __sxtab16(off2, (int32_t)((x >> 8) | (x << 24)));",
            "#endif",
            "}"]


def _odd_helpers(p, odd0=True):
    """C lines: the DSP body's helpers under prefix p (each kernel its own: a file may hold both):
    the odd bytes of a word sign-extended to two int16 lanes (plus off2): SXTAB16 rotates its
    operand itself, which neither compiler folds __sxtab16(a, ror(x, 8)) into; and the compiler
    fence between taps. odd0: the one without off2 too (the weights' widening: clang warns of it
    unused where they come widened)."""
    odd0_fn = [
        f"static inline int32_t {p}_odd0(uint32_t x) {{",
        "#if defined(__GNUC__)",
        "  int32_t r;",
        '  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));',
        "  return r;",
        "#else",
        "  return __sxtb16((int32_t)((x >> 8) | (x << 24)));",
        "#endif",
        "}"]
    return [
        "#if defined(__ARM_FEATURE_DSP) && !defined(__ARM_FEATURE_MVE)",
        "#if defined(__GNUC__)",
        f'#define {p.upper()}_FENCE() __asm__ volatile("" ::: "memory")',
        "#else",
        f"#define {p.upper()}_FENCE() ((void)0)",
        "#endif",
        *odd_fn(f"{p}_odd"),
        *(odd0_fn if odd0 else []),
        "#endif",
    ]


@register_intrin
class DwS8(TensorIntrin):
    name = "dw_s8"
    prefix = "aot_dw_s8"       # its C helpers'

    def bias_of(self, k):
        return f"bias[{k}]"

    def table_head(self):
        return []

    def requant1(self, v="v", k="k"):
        """The statement storing channel k's sum v requantised."""
        return f"out[{k}] = (int8_t)aot_dw_s8_requant({v}, mult[{k}], shift[{k}], zp, lo, hi);"

    def requant4(self):
        return [self.requant1(f"a{j}", i) for j, i in enumerate(_FOUR)]

    headers = {"mve": ("arm_mve.h",), "dsp": ("arm_acle.h", "string.h")}
    pointer_args = (0, 1, 2, 3, 4, 5)
    written_args = (0,)
    # the DSP body inlined at each call: its strides and channel count become constants there
    # (immediate load offsets, no stride registers to spill in the window loop)
    forced_inline = ("defined(__ARM_FEATURE_DSP) && !defined(__ARM_FEATURE_MVE)",)

    def last_offsets(self, args):
        """The output and per-channel arrays: c elements; input and weights: the window's far corner
        (the strides are non-negative, so every access lies between the first and that one)."""
        c, kh, kw, a_row, a_col, b_row, b_col, a_k = args[6:14]
        one = _i32(1)
        last_c = c - one
        return [(0, last_c), (3, last_c), (4, last_c), (5, last_c),
                (1, (kh - one) * a_row + (kw - one) * a_col + last_c * a_k),
                (2, (kh - one) * b_row + (kw - one) * b_col + last_c)]

    def ordered_accesses(self, args):
        """What one call touches, in an order every body keeps, for aot/tir/inplace.py's replay:
        (steps, [(kind, argument, [(extent, stride), ...], stride per step)]). Step k is channel
        k: it reads a's window of channel k (a + k*a_k + r*a_row + s*a_col for r < kh, s < kw),
        b's, bias[k], mult[k] and shift[k], then writes out[k]. The bodies take channels in
        groups (4 DSP lanes, 8 Helium lanes, scalar tails) in increasing order and store a
        group after reading all of it, so a read of channel j comes before the write of channel
        k whenever j <= k, and no other pair of them is ordered. None when a_k is neither 0 nor
        1 (every body reads consecutive channels, or one for all)."""
        c, kh, kw, a_row, a_col, b_row, b_col, a_k = args[6:14]
        if const_value(a_k) not in (0, 1):
            return None
        one = _i32(1)
        return c, [("read", 1, ((kh, a_row), (kw, a_col)), a_k), ("read", 2, ((kh, b_row), (kw, b_col)), one),
                   ("read", 3, (), one), ("read", 4, (), one), ("read", 5, (), one), ("write", 0, (), one)]

    def match(self, loop, acc=None):
        """loop (the output channels of one pixel) around: acc = 0; the window's loops
        accumulating ((int32)a + off) * (int32)b; out[..] = requant(acc). Every operand moves by
        one element per channel, by a constant per window row and column."""
        body = loop.body
        if not (isinstance(body, Allocate) and body.buffer.size == 1 and isinstance(body.body, Seq)
                and len(body.body.stmts) == 3):
            return None, "the channel loop's body is not one accumulation and its store"
        acc = body.buffer
        init, red, out = body.body.stmts
        if not (isinstance(init, Store) and init.buffer is acc and const_value(init.value) == 0):
            return None, "the accumulator does not start at 0"
        loops, s = [], red
        while isinstance(s, For):
            loops.append(s)
            s = s.body
        if not isinstance(s, Store) or s.buffer is not acc or not loops:
            return None, "the window is not a nest of loops accumulating into one scalar"
        v = s.value
        if not (isinstance(v, Bin) and v.op == "+" and isinstance(v.a, Load) and v.a.buffer is acc
                and isinstance(v.b, Bin) and v.b.op == "*"):
            return None, "the store is not acc = acc + x * y"
        (xa, ox), (xb, ob) = int8_operand(v.b.a), int8_operand(v.b.b)
        if xa is None or xb is None:
            return None, "the product's operands are not int8 loads widened to int32"
        if ox and ob:
            return None, "both operands carry an offset"
        if ob:
            (xa, ox), (xb, ob) = (xb, ob), (xa, ox)
        own = {id(lp.var) for lp in loops} | {id(loop.var)}
        for lp in loops:
            if any(id(x) in own for e in (lp.min, lp.extent) for x in walk(e)):
                return None, f"the bounds of {lp.var.name} depend on the window or channel loops"
        window = [lp for lp in loops if const_value(lp.extent) != 1]
        if len(window) > 2:
            return None, "the window has more than two loops"
        window = [None] * (2 - len(window)) + window
        rq = match_requant(out.value, acc)
        if rq is None or not rq.per_channel or not rq.zp_added:
            return None, "the store is not TFLite's per-channel requantisation to int8 (its zero point added)"
        bias, mult, shift, zp, lo, hi = rq.parts()
        if any(x.buffer is acc for x in (xa, xb)) or any(isinstance(x, Load) and x.buffer is acc for x in walk(out.index)):
            return None, "an operand is the accumulator"
        c = loop.extent
        many = const_value(c) != 1
        strides = []
        a_k = step(flat_index(xa), loop.var) if many else 1
        for ld in (xa, xb):
            flat = flat_index(ld)
            if many and step(flat, loop.var) != 1 and not (ld is xa and a_k == 0):
                return None, f"{ld.buffer.name} is not contiguous along the channels"
            for lp in window:
                st = 0 if lp is None else step(flat, lp.var)
                if st is None or st < 0:
                    return None, f"{ld.buffer.name} does not move by a constant along {lp.var.name}"
                strides.append(_i32(st))
        stores = Load(out.buffer, (out.index,))
        for ld in (stores, bias, mult, shift):
            if many and step(flat_index(ld), loop.var) != 1:
                return None, f"{ld.buffer.name} is not contiguous along the channels"
        at_min = {id(lp.var): lp.min for lp in loops}
        at_min[id(loop.var)] = loop.min

        def base(ld):
            return Load(ld.buffer, tuple(simplify(substitute(i, at_min)) for i in ld.indices))
        ext = [_i32(1) if lp is None else (lp.extent if lp.extent.dtype == "int32" else Cast("int32", lp.extent))
               for lp in window]
        return [base(stores), base(xa), base(xb), base(bias), base(mult), base(shift),
                c if c.dtype == "int32" else Cast("int32", c), *ext, strides[0], strides[1], strides[2], strides[3],
                _i32(a_k), _i32(ox), _i32(zp), _i32(lo), _i32(hi)], None

    def variant_for(self, mcpu):
        return core(mcpu).variant

    def signature(self):
        return ("int32_t aot_dw_s8(int8_t* out, const int8_t* a, const int8_t* b, const int32_t* bias, "
                "const int32_t* mult, const int32_t* shift, int32_t c, int32_t kh, int32_t kw, int32_t a_row, "
                "int32_t a_col, int32_t b_row, int32_t b_col, int32_t a_k, int32_t off, int32_t zp, int32_t lo, int32_t hi)")

    def c_source(self):
        # the scalar requantisation the DSP and plain bodies share (gemmlowp's two steps, as the
        # renderer's aot_srdhm and aot_rdbpot compute them)
        # each helper only where a body that uses it is the one compiled (clang warns of unused ones)
        helper = [
            "#if !defined(__ARM_FEATURE_MVE) && !defined(__ARM_FEATURE_DSP)",
            "static inline int32_t aot_dw_s8_requant(int32_t v, int32_t m, int32_t sh, int32_t zp, int32_t lo, "
            "int32_t hi) {",
            "  int32_t x = sh > 0 ? (int32_t)((uint32_t)v << sh) : v;",
            f"  int32_t q = {srdhm('x', 'm', high_mul(product('x', 'm')), INT32_LITERALS, sep=_WRAPPED)};",
            "  if (sh < 0) {",
            # half away from zero is half up of q - 1 for negative q (q > INT32_MIN here: |x m| < 2^62)
            *["    " + x for x in rdbpot_bit_lines("q", "y", "-sh")],
            "  }",
            "  q += zp;",
            f"  return {clamp('q')};",
            "}",
            "#endif",
        ]
        # the DSP body's: the same value without a branch (gemmlowp's flat form), straight code
        # in the epilogue's four channels
        flat = ["#if defined(__ARM_FEATURE_DSP) && !defined(__ARM_FEATURE_MVE)", *flat_fn("aot_dw_s8_requant"), "#endif"]
        odd = _odd_helpers(self.prefix)
        return "\n".join(helper + flat + odd) + "\n" + super().c_source()

    def bodies(self):
        mve = ["int32_t k, r, s;",
               "const int32x4_t z = vdupq_n_s32(0);",
               "const uint32x4_t even = vmulq_n_u32(vidupq_n_u32(0, 1), 2);",     # word offsets 0, 2, 4, 6
               "for (k = 0; k < c; k += 8) {",
               "  uint32_t n = (uint32_t)(c - k);",
               "  mve_pred16_t p = vctp16q(n);",                  # the last block: lanes past c off
               "  int32x4x2_t acc, m2, sh2;",                     # [0]: channels 0, 2, 4, 6; [1]: 1, 3, 5, 7
               "  int16x8_t v16 = vdupq_n_s16(0);",
               "  if (n >= 8) {",                                 # a whole block: de-interleaving loads
               "    acc = vld2q_s32(bias + k);",
               "    m2 = vld2q_s32(mult + k);",
               "    sh2 = vld2q_s32(shift + k);",
               "  } else {",
               "    mve_pred16_t pe = vctp32q((n + 1) / 2), po = vctp32q(n / 2);",
               "    acc.val[0] = vldrwq_gather_shifted_offset_z_s32(bias + k, even, pe);",
               "    acc.val[1] = vldrwq_gather_shifted_offset_z_s32(bias + k + 1, even, po);",
               "    m2.val[0] = vldrwq_gather_shifted_offset_z_s32(mult + k, even, pe);",
               "    m2.val[1] = vldrwq_gather_shifted_offset_z_s32(mult + k + 1, even, po);",
               "    sh2.val[0] = vldrwq_gather_shifted_offset_z_s32(shift + k, even, pe);",
               "    sh2.val[1] = vldrwq_gather_shifted_offset_z_s32(shift + k + 1, even, po);",
               "  }",
               "  if (a_k == 0 && n >= 8) {",                     # one input channel for all
               *_taps("vdupq_n_s16((int16_t)*pa)", "vldrbq_s16(pb)"),
               "  } else if (a_k == 0) {",
               *_taps("vdupq_n_s16((int16_t)*pa)", "vldrbq_z_s16(pb, p)"),
               "  } else if (n >= 8) {",                          # a whole block: no predicate to keep
               *_taps("vldrbq_s16(pa)", "vldrbq_s16(pb)"),
               "  } else {",
               *_taps("vldrbq_z_s16(pa, p)", "vldrbq_z_s16(pb, p)"),
               "  }",
               "  for (r = 0; r < 2; ++r) {",                     # lanes past c: zeros, not stored
               "    int32x4_t right = vminq_s32(sh2.val[r], z);",
               f"    int32x4_t v = {mve_srdhm(mve_left('acc.val[r]', 'vmaxq_s32(sh2.val[r], z)'), 'm2.val[r]')};",
               # half away from zero: one less for a negative value, where a right shift follows
               f"    v = {mve_rdbpot_fixup('v', 'right')};",
               f"    v = {mve_rshl('v', 'right')};",
               f"    v = {mve_clamp('v')};",
               "    v16 = r ? vmovntq_s32(v16, v) : vmovnbq_s32(v16, v);",      # back in channel order
               "  }",
               "  vstrbq_p_s16(out + k, v16, p);",
               "}",
               "return 0;"]
        p = self.prefix
        acc4 = "  int32_t " + ", ".join(f"a{j} = {self.bias_of(i)}" for j, i in enumerate(_FOUR)) + ";"
        requant4 = ["  " + x for x in self.requant4()]
        dsp = ["int32_t k, r, s;",
               "int32_t whole = c - c % 4;",                      # channels in whole words
               "int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) * 0x10001u);",
               # a whole 3x3 window (every pixel off the border) and its clips: straight code
               *_straight_windows(p, "a_k != 0 && ", "whole", 4, ["uint32_t xa, xb;", "int32_t ea, oa, eb, ob;"],
                                  _tap4, acc4, requant4),
               "} else if (a_k != 0) {",
               "  for (k = 0; k < whole; k += 4) {",
               "  " + acc4,
               "    uint32_t xa, xb;",
               "    int32_t ea, oa, eb, ob;",
               "    for (r = 0; r < kh; ++r) {",
               "      const int8_t* pa = a + r * a_row + k;",
               "      const int8_t* pb = b + r * b_row + k;",
               "      if (kw == 3) {",                               # a 3-wide window's row unrolled
               *_tap4("        ", p=p),
               *_tap4("        ", "pa + a_col", "pb + b_col", p),
               *_tap4("        ", "pa + 2 * a_col", "pb + 2 * b_col", p),
               "      } else if (kw == 2) {",                        # clipped at the left or right border
               *_tap4("        ", p=p),
               *_tap4("        ", "pa + a_col", "pb + b_col", p),
               "      } else {",
               "        for (s = 0; s < kw; ++s, pa += a_col, pb += b_col) {",
               *_tap4("          ", p=p),
               "        }",
               "      }",
               "    }",
               *requant4,
               "  }",
               "} else {",
               "  for (k = 0; k < whole; k += 4) {",              # one input value for all channels
               "  " + acc4,
               "    for (r = 0; r < kh; ++r) {",
               "      const int8_t* pa = a + r * a_row;",
               "      const int8_t* pb = b + r * b_row + k;",
               "      for (s = 0; s < kw; ++s, pa += a_col, pb += b_col) {",
               "        int32_t v = (int32_t)*pa + off;",            # in the bottom int16 lane
               "        uint32_t xb;",
               "        int32_t eb, ob;",
               "        memcpy(&xb, pb, 4);",
               "        eb = __sxtb16((int32_t)xb);",
               f"        ob = {p}_odd0(xb);",
               "        a0 = __smlabb(v, eb, a0);",
               "        a2 = __smlabt(v, eb, a2);",
               "        a1 = __smlabb(v, ob, a1);",
               "        a3 = __smlabt(v, ob, a3);",
               "      }",
               "    }",
               *requant4,
               "  }",
               "}",
               "for (k = whole; k < c; ++k) {",
               f"  int32_t v = {self.bias_of('k')};",
               "  for (r = 0; r < kh; ++r) {",
               "    for (s = 0; s < kw; ++s) {",
               "      v += ((int32_t)a[r * a_row + s * a_col + k * a_k] + off) * (int32_t)b[r * b_row + s * b_col + k];",
               "    }",
               "  }",
               f"  {self.requant1()}",
               "}",
               "return 0;"]
        plain = ["int32_t k, r, s;",
                 *self.table_head(),
                 "for (k = 0; k < c; ++k) {",
                 f"  int32_t v = {self.bias_of('k')};",
                 "  for (r = 0; r < kh; ++r) {",
                 "    for (s = 0; s < kw; ++s) {",
                 "      v += ((int32_t)a[r * a_row + s * a_col + k * a_k] + off) * (int32_t)b[r * b_row + s * b_col + k];",
                 "    }",
                 "  }",
                 f"  {self.requant1()}",
                 "}",
                 "return 0;"]
        dsp[1:1] = self.table_head()
        return {"mve": mve, "dsp": dsp, "plain": plain}


@register_intrin
class DwS8F(DwS8):
    """dw_s8 on the DSP cores with its requantisation from the table the schedule lays out
    (aot/schedules/requant_table.py): `bias` holds FoldedBias's wide table, (bias, c,
    multiplier, shift) a channel, so that a group's whole requantisation walks one pointer (with
    three arrays the interior window's loop spilled its pointers); `mult` and `shift` are not read. The DSP body is dw_s8's, its sums starting from the table's biases and
    each group of four channels requantised by gemmlowp.mbqm_folded_lines where the table says
    fast (one test a group), else by the exact flat form; the plain body the same, the folded
    form in int64."""
    name = "dw_s8f"
    prefix = "aot_dw_s8f"
    headers = {"dsp": ("arm_acle.h", "string.h")}

    def bias_of(self, k):
        return f"bt[4 * ({k})]"

    def table_head(self):
        return [*TABLE_HEAD, "(void)mult;", "(void)shift;"]

    folded_asm = staticmethod(mbqm_folded_asm)

    def _requant(self, form, v, k):
        if form == "fast":
            return f"aot_dw_s8f_fast({v}, bt[4 * ({k}) + 2], bt[4 * ({k}) + 3], bt[4 * ({k}) + 1], lo, hi)"
        return f"aot_dw_s8f_exact({v}, bt[4 * ({k}) + 2], bt[4 * ({k}) + 3], zp, lo, hi)"

    def requant1(self, v="v", k="k"):
        return f"out[{k}] = (int8_t)(fast ? {self._requant('fast', v, k)} : {self._requant('exact', v, k)});"

    def requant4(self):
        fast, exact = ([f"  out[{i}] = (int8_t){self._requant(form, f'a{j}', i)};" for j, i in enumerate(_FOUR)]
                       for form in ("fast", "exact"))
        # the fast form laid out to fall through after the taps (no taken branch to it a group);
        # into int8's whole range in assembly: the four channels' constants off the one table
        # pointer, each channel's three loads side by side (C kept the group's pointers and
        # sums in registers no better than it kept the taps')
        asm = []
        for j in range(4):
            asm += [f'"ldr %[c], [%[t], #{16 * j + 4}]\\n"', f'"ldr %[m], [%[t], #{16 * j + 8}]\\n"',
                    f'"ldr %[e], [%[t], #{16 * j + 12}]\\n"', *self.folded_asm(f"a{j}", "x", "m", "c", "e"),
                    f'"ssat %[a{j}], #8, %[a{j}]\\n"', f'"strb %[a{j}], [%[o], #{j}]\\n"']
        # (single-issue cores only: on the M7 gcc's schedule of the C pairs better)
        return ["if (__builtin_expect(fast, 1)) {",
                "#if defined(__GNUC__) && defined(__OPTIMIZE__) && defined(AOT_CORTEX_M_SINGLE_ISSUE)",
                "  if (lo == -128 && hi == 127) {",
                "    const int32_t* tq = bt + 4 * k;",
                "    int8_t* oq = out + k;",
                "    int32_t x, cq, mq, eq;",
                "    __asm__ volatile(",
                *["      " + x for x in asm],
                '      : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x), [c] "=&r"(cq), '
                '[m] "=&r"(mq), [e] "=&r"(eq)',
                '      : [t] "r"(tq), [o] "r"(oq)',
                '      : "memory");',
                "    (void)x; (void)cq; (void)mq; (void)eq;",
                "  } else {",
                *["  " + x for x in fast],
                "  }",
                "#else",
                *fast,
                "#endif",
                "} else {", *exact, "}"]

    def last_offsets(self, args):
        c = args[6]
        return [(k, _i32(4) * c - _i32(1)) if k == 3 else (k, v) for k, v in super().last_offsets(args)]

    def ordered_accesses(self, args):
        """dw_s8's, the table's four words of channel k read at step k (mult and shift said
        read as dw_s8's, which is only more than the body does)."""
        got = super().ordered_accesses(args)
        if got is None:
            return None
        n, accesses = got
        four = _i32(4)
        return n, [(kind, k, ((four, _i32(1)),), four) if k == 3 else (kind, k, ext, st)
                   for kind, k, ext, st in accesses]

    def match(self, loop, acc=None):
        return None, "dw_s8f is made of dw_s8 calls by the depthwise rule (aot/schedules/arm_dw.py), not matched"

    def variant_for(self, mcpu):
        return "dsp" if core(mcpu).variant == "dsp" else "plain"

    def signature(self):
        return super().signature().replace(" aot_dw_s8(", " aot_dw_s8f(", 1)

    def c_source(self):
        helpers = [*folded_fn("aot_dw_s8f_fast"), *flat_fn("aot_dw_s8f_exact", "__ARM_FEATURE_DSP")]
        return "\n".join(helpers + _odd_helpers(self.prefix)) + "\n" + TensorIntrin.c_source(self)

    def bodies(self):
        got = super().bodies()
        return {"dsp": got["dsp"], "plain": got["plain"]}


def _tap4w(pad, pa, pb, p):
    """dw_s8w's step over one window tap for channels k .. k+3: the input's word widened as
    _tap4's, the weights' two words already int16 (channels 0, 2 then 1, 3: DwWide), so a tap is
    three loads, two widenings and four MACs (the M4 pipelines the weights' loads behind the
    input's: one cycle each, where a widening costs one too and the loads save two)."""
    return [pad + x for x in (
        f"memcpy(&xa, {pa}, 4);",
        f"memcpy(&w0, {pb}, 4);",
        f"memcpy(&w1, {pb} + 4, 4);",
        "ea = __sxtab16(off2, (int32_t)xa);",
        f"oa = {p}_odd(off2, xa);",
        "a0 = __smlabb(ea, w0, a0);",
        "a2 = __smlatt(ea, w0, a2);",
        "a1 = __smlabb(oa, w1, a1);",
        "a3 = __smlatt(oa, w1, a3);")]


# the int16 weight (little-endian, its two bytes at q) without a pointer cast or an
# implementation-defined conversion
_W16 = "((int32_t)(q)[1] * 256 + (int32_t)(uint8_t)(q)[0])"


@register_intrin
class DwS8W(DwS8F):
    """dw_s8f with its weights widened at compile time (aot/schedules/arm_dw.py DwWide): b, b_row
    and b_col count bytes of int16 weights, each group of four channels a tap stored as the words
    (w0, w2), (w1, w3) the DSP body's lanes read, so that a tap widens only its input. The
    weights are doubled, and so is the table's bias where it says fast (FoldedBias.doubled): the
    folded form's SMMLAR then takes the sum as it is (mbqm_folded2_asm). For calls
    of whole groups of four channels (c % 4 == 0), one input channel per output channel (a_k ==
    1); the requantisation dw_s8f's. The plain body reads the same layout."""
    name = "dw_s8w"
    prefix = "aot_dw_s8w"

    def last_offsets(self, args):
        kh, kw, b_row, b_col = args[7], args[8], args[11], args[12]
        one = _i32(1)
        return [(k, (kh - one) * b_row + (kw - one) * b_col + _i32(2) * args[6] - one) if k == 2 else (k, v)
                for k, v in super().last_offsets(args)]

    def ordered_accesses(self, args):
        """dw_s8f's, channel k's weights the two bytes of its int16 at each tap (said read as
        bytes 2k and 2k + 1 of the tap: the group's permutation reads them within the group, whose
        four channels are read before any is written)."""
        got = super().ordered_accesses(args)
        if got is None:
            return None
        n, accesses = got
        two = _i32(2)
        return n, [(kind, k, (*ext, (two, _i32(1))), two) if k == 2 else (kind, k, ext, st)
                   for kind, k, ext, st in accesses]

    def match(self, loop, acc=None):
        return None, "dw_s8w is made of dw_s8f calls by the depthwise rule (aot/schedules/arm_dw.py), not matched"

    def signature(self):
        return super().signature().replace(" aot_dw_s8f(", " aot_dw_s8w(", 1)

    def c_source(self):
        helpers = [*folded_fn("aot_dw_s8w_fast"), *flat_fn("aot_dw_s8w_exact", "__ARM_FEATURE_DSP")]
        return "\n".join(helpers + _odd_helpers(self.prefix, odd0=False)) + "\n" + TensorIntrin.c_source(self)

    # its weights and its table's biases doubled where the table says fast (DwWide, FoldedBias
    # doubled): the sums are the folded form's doubled sum, no shift before each SMMLAR
    folded_asm = staticmethod(mbqm_folded2_asm)

    def _requant(self, form, v, k):
        # the sum halved back: exactly (it is even) where fast; where not, the table's bias is
        # undoubled, so the sum is bias + 2 S (S the products' sum, far inside int32)
        half = f"{v} / 2" if form == "fast" else \
            f"bt[4 * ({k})] + (int32_t)((uint32_t){v} - (uint32_t)bt[4 * ({k})]) / 2"
        return super()._requant(form, half, k).replace("aot_dw_s8f_", "aot_dw_s8w_")

    def bodies(self):
        p = self.prefix
        acc4 = "  int32_t " + ", ".join(f"a{j} = {self.bias_of(i)}" for j, i in enumerate(_FOUR)) + ";"
        requant4 = ["  " + x for x in self.requant4()]
        slot = "(k & ~3) + ((k & 1) << 1) + ((k >> 1) & 1)"     # channel k's int16 in its group
        scalar = ["for (k = 0; k < c; ++k) {",
                  f"  int32_t v = {self.bias_of('k')};",
                  f"  int32_t at = 2 * ({slot});",
                  "  for (r = 0; r < kh; ++r) {",
                  "    for (s = 0; s < kw; ++s) {",
                  "      const int8_t* q = b + r * b_row + s * b_col + at;",
                  f"      v += ((int32_t)a[r * a_row + s * a_col + k] + off) * {_W16};",
                  "    }",
                  "  }",
                  f"  {self.requant1()}",
                  "}"]
        dsp = ["int32_t k, r, s;",
               *self.table_head(),
               "int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) * 0x10001u);",
               "(void)a_k;",
               *_straight_windows(p, "", "c", 8, ["uint32_t xa;", "int32_t ea, oa, w0, w1;"], _tap4w, acc4, requant4),
               "} else {",
               "  for (k = 0; k < c; k += 4) {",
               "  " + acc4,
               "    uint32_t xa;",
               "    int32_t ea, oa, w0, w1;",
               "    for (r = 0; r < kh; ++r) {",
               "      const int8_t* pa = a + r * a_row + k;",
               "      const int8_t* pb = b + r * b_row + 2 * k;",
               "      for (s = 0; s < kw; ++s, pa += a_col, pb += b_col) {",
               *_tap4w("        ", "pa", "pb", p),
               "      }",
               "    }",
               *requant4,
               "  }",
               "}",
               "return 0;"]
        plain = ["int32_t k, r, s;", *self.table_head(), "(void)a_k;", *scalar, "return 0;"]
        return {"dsp": dsp, "plain": plain}
