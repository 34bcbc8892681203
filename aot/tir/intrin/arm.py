"""Arm micro-kernels (ACLE): the int8 dot product at the heart of TFLite's integer
convolutions and fully connected layers.

dot_s8(a, b, n, off) = sum over k < n of ((int32)a[k] + off) * (int32)b[k], a and b int8 and
contiguous. `off` is TFLite's input offset (minus the input zero point), so the call replaces
the accumulation loop as lowering writes it, padded borders included (a clipped window only
shortens the loops around the call). dot_s8_rows(a, b, rows, n, sa, sb, off) is the same over
`rows` such runs sa and sb apart (a conv's window rows: one call per output). Bodies:
- Helium (MVE): 16 lanes per step in a counted loop with post-incremented loads, the tail (n
  not a multiple of 16) predicated with vctp8q; sum(a*b) by vmladavaq, plus off * sum(b) by
  vaddvaq (exact: both are int32 sums of the same terms), skipped when off is 0 (where the
  schedule folds the offset into the bias: aot/schedules/arm_fold.py);
- DSP (SIMD32): two 32-bit words of each operand per step, widened to int16 pairs with
  sxtab16 (which adds the offset in the same instruction) and sxtb16, the odd bytes through
  their rotated forms, four __smlad; then one word, then a scalar tail;
- plain C: the loop itself.
dot_s8x2 and dot_s8x4q are the same over two or four weight rows sw apart (output channels),
each input vector or word loaded and widened once for all of them; dot_s8x4q also requantises
its four sums (TFLite's MultiplyByQuantizedMultiplier, zero point, clamp: per channel, or per
tensor as dot_s8x4qt).
"""
from __future__ import annotations

from ..expr import Bin, Cast, Const, Load, substitute, walk
from ..simplify import const_value, simplify
from ..stmt import For, Store
from ...targets.cortex_m import core
from .base import TensorIntrin, per_tensor, register_intrin
from .gemmlowp import clamp, mve_clamp, mve_left, mve_rdbpot, mve_srdhm, requantise_lines


def step(index, var):
    """How far index moves when var grows by one (None unless a constant)."""
    return const_value(simplify(substitute(index, {id(var): var + 1}) - index))


def flat_index(load):
    """load's element offset in its buffer (row-major), from its per-dimension indices."""
    flat, stride = None, 1
    for i, n in zip(reversed(load.indices), reversed(load.buffer.shape)):
        term = i if stride == 1 else i * stride
        flat = term if flat is None else term + flat
        stride *= n
    return flat


def contiguous_in(load, loops):
    """load reads one consecutive run over the perfect nest `loops` (outermost first): the
    innermost moves it by one element, each outer loop by the constant extent of the run inside."""
    flat, run = flat_index(load), 1
    for lp in reversed(loops):
        if step(flat, lp.var) != run:
            return False
        n = const_value(lp.extent)
        if lp is not loops[0] and n is None:
            return False
        run = run * n if n is not None else None
    return True


def int8_operand(e):
    """(load, offset) of (int32)load, (int32)load - c or (int32)load + c, load int8."""
    off = 0
    if isinstance(e, Bin) and e.op in ("+", "-") and isinstance(e.b, Const):
        off = int(e.b.value) if e.op == "+" else -int(e.b.value)
        e = e.a
    if isinstance(e, Cast) and e.dtype == "int32" and isinstance(e.a, Load) and e.a.dtype == "int8":
        return e.a, off
    return None, None


def _dsp_words(a, b):
    """The DSP body's step over one 32-bit word of each operand (bytes 0 and 2, then 1 and 3: the
    rotation folded into the extend, which the ACLE intrinsics cannot say)."""
    return [f"memcpy(&xa, {a}, 4);", f"memcpy(&xb, {b}, 4);",
            "acc = __smlad(__sxtab16(off2, (int32_t)xa), __sxtb16((int32_t)xb), acc);",
            '__asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(ta) : "r"(off2), "r"(xa));',
            '__asm__("sxtb16 %0, %1, ror #8" : "=r"(tb) : "r"(xb));',
            "acc = __smlad(ta, tb, acc);"]


def _dsp_run(a, b, n):
    """The DSP body's loop over n bytes at a and b: two words a step, then one, then bytes."""
    two = _dsp_words(a, b) + _dsp_words(f"{a} + 4", f"{b} + 4")
    return ["uint32_t xa, xb;", "int32_t ta, tb;",
            f"for (; {n} >= 8; {n} -= 8, {a} += 8, {b} += 8) {{", *["  " + x for x in two], "}",
            f"if ({n} >= 4) {{", *["  " + x for x in _dsp_words(a, b)], f"  {n} -= 4;", f"  {a} += 4;",
            f"  {b} += 4;", "}",
            f"for (; {n} > 0; --{n}, ++{a}, ++{b}) {{", f"  acc += ((int32_t)*{a} + off) * (int32_t)*{b};", "}"]


def _dsp_multi_word(at, accs):
    """The DSP step over one 32-bit word of the input at pa + at for len(accs) weight rows sw
    apart: the input widened once (the offset added by sxtab16), each row's word then widened
    and multiplied into its accumulator."""
    w = [f"memcpy(&xa, pa{at}, 4);",
         "lo = __sxtab16(off2, (int32_t)xa);",                                      # bytes 0, 2 (+ off)
         '__asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(hi) : "r"(off2), "r"(xa));']   # bytes 1, 3
    for j, acc in enumerate(accs):
        w += [f"memcpy(&xb, pb{f' + {j} * sw' if j else ''}{at}, 4);",
              f"{acc} = __smlad(lo, __sxtb16((int32_t)xb), {acc});",
              '__asm__("sxtb16 %0, %1, ror #8" : "=r"(tb) : "r"(xb));',
              f"{acc} = __smlad(hi, tb, {acc});"]
    return w


def _mve_rows(m, sums):
    """The Helium loop over `rows` window rows for m weight rows sw apart (acc0.., and with
    sums the weight sums bsum0.. the offset multiplies; without, the offset is folded into the
    bias: aot/schedules/arm_fold.py), each input vector loaded once for all of them; the tail
    (n not a multiple of 16) predicated by p, its lanes past n loaded as zeros."""
    rows_ = ["pb"] + [f"pb{j}" for j in range(1, m)]

    def lanes(load):
        x = [f"int8x16_t va = {load('pa')};"]
        x += [f"int8x16_t vb{j} = {load(q)};" for j, q in enumerate(rows_)]
        x += [f"acc{j} = vmladavaq_s8(acc{j}, va, vb{j});" for j in range(m)]
        return x + ([f"bsum{j} = vaddvaq_s8(bsum{j}, vb{j});" for j in range(m)] if sums else [])
    # every pointer opaque to gcc each step (an empty asm): each its own post-incremented pointer,
    # not one plus offsets past a load's immediate range (an add before each load)
    return ["for (; rows > 0; --rows, a += sa, b += sb) {",
            "  const int8_t* pa = a;",
            "  const int8_t* pb = b;",
            *[f"  const int8_t* pb{j} = b + {j} * sw;" for j in range(1, m)],
            "  int32_t k;",
            f"  for (k = n >> 4; k > 0; --k, pa += 16{''.join(f', {q} += 16' for q in rows_)}) {{",
            '    __asm__("" : ' + ", ".join(f'"+r"({q})' for q in ["pa"] + rows_) + ");",
            *["    " + x for x in lanes(lambda q: f"vld1q_s8({q})")],
            "  }",
            "  if ((n & 15) != 0) {",
            *["    " + x for x in lanes(lambda q: f"vldrbq_z_s8({q}, p)")],
            "  }",
            "}"]


def _mve_rows_off(m):
    """_mve_rows with the weight sums only when the offset is not folded away (off != 0)."""
    return ["if (off != 0) {", *["  " + x for x in _mve_rows(m, True)], "} else {",
            *["  " + x for x in _mve_rows(m, False)], "}"]


@register_intrin
class DotS8(TensorIntrin):
    name = "dot_s8"
    headers = {"mve": ("arm_mve.h",), "dsp": ("arm_acle.h", "string.h")}
    pointer_args = (0, 1)
    extent_arg = 2

    def match(self, loop, acc):
        """loop, or a perfect nest under it whose loops read both operands as one run (a conv's
        taps along a window row and its channels, in NHWC with OHWI weights)."""
        loops, s = [loop], loop.body
        while isinstance(s, For):
            loops.append(s)
            s = s.body
        if not isinstance(s, Store) or s.buffer is not acc:
            return None, "the loop body is not one store to the accumulator"
        v = s.value
        if not (isinstance(v, Bin) and v.op == "+" and isinstance(v.a, Load) and v.a.buffer is acc
                and isinstance(v.b, Bin) and v.b.op == "*"):
            return None, "the store is not acc = acc + x * y"
        (xa, ox), (xb, ob) = int8_operand(v.b.a), int8_operand(v.b.b)
        if xa is None or xb is None:
            return None, "the product's operands are not int8 loads widened to int32"
        if ox and ob:
            return None, "both operands carry an offset"
        if ob:                                     # the offset operand goes first
            (xa, ox), (xb, ob) = (xb, ob), (xa, ox)
        if not (-255 <= ox <= 255):
            return None, f"the offset {ox} does not fit the int16 lanes"
        names = ", ".join(lp.var.name for lp in loops)
        for lp in loops[1:]:
            if any(x is o.var for e in (lp.min, lp.extent) for o in loops for x in walk(e)):
                return None, f"the bounds of {lp.var.name} depend on the run's loops"
        for ld in (xa, xb):
            if ld.buffer is acc or not contiguous_in(ld, loops):
                return None, f"{ld.buffer.name} is not read contiguously along {names}"
        at_min = {id(lp.var): lp.min for lp in loops}
        base = [Load(ld.buffer, tuple(simplify(substitute(i, at_min)) for i in ld.indices)) for ld in (xa, xb)]
        n = loop.extent
        for lp in loops[1:]:
            n = n * lp.extent
        n = simplify(n)
        return [base[0], base[1], Cast("int32", n) if n.dtype != "int32" else n, Const(ox, "int32")], None

    def variant_for(self, mcpu):
        return core(mcpu).variant

    def signature(self):
        return "int32_t aot_dot_s8(const int8_t* a, const int8_t* b, int32_t n, int32_t off)"

    def bodies(self):
        mve = ["int32_t acc0 = 0, bsum0 = 0, rows = 1, sa = 0, sb = 0;", "mve_pred16_t p;",
               "if (n <= 0) {", "  return 0;", "}",
               "p = vctp8q((uint32_t)(n & 15));",
               *_mve_rows_off(1),          # one row of the loop dot_s8_rows makes
               "return acc0 + off * bsum0;"]
        dsp = ["int32_t acc = 0;",
               "int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) * 0x10001u);",   # off in both halfwords
               *_dsp_run("a", "b", "n"),
               "return acc;"]
        plain = ["int32_t acc = 0;", "int32_t k;",
                 "for (k = 0; k < n; ++k) {",
                 "  acc += ((int32_t)a[k] + off) * (int32_t)b[k];",
                 "}",
                 "return acc;"]
        return {"mve": mve, "dsp": dsp, "plain": plain}


@register_intrin
class DotS8Rows(TensorIntrin):
    """dot_s8 over `rows` runs of n: row r starts sa elements of a and sb of b after row r-1 (a
    conv's window rows: one call per output instead of one per row, the row loop's bookkeeping
    inside the kernel). dot_s8_rows(a, b, rows, n, sa, sb, off)."""
    name = "dot_s8_rows"
    headers = DotS8.headers
    pointer_args = (0, 1)
    extent_arg = 3

    def last_offsets(self, args):
        rows, n, sa, sb = args[2], args[3], args[4], args[5]
        return [(k, (rows - Const(1, rows.dtype)) * s + n - Const(1, n.dtype)) for k, s in ((0, sa), (1, sb))]

    def match(self, loop, acc):
        if not isinstance(loop.body, For):
            return None, "no run under the row loop"
        args, why = _DOT.match(loop.body, acc)
        if args is None:
            return None, why
        x = loop.body
        while isinstance(x, For):
            if any(v is loop.var for e in (x.min, x.extent) for v in walk(e)):
                return None, f"the bounds of {x.var.name} depend on {loop.var.name}"
            x = x.body
        steps = [step(flat_index(ld), loop.var) for ld in args[:2]]
        if any(s is None or s < 0 for s in steps):
            return None, f"a row does not start a constant step after the previous along {loop.var.name}"
        at_min = {id(loop.var): loop.min}
        base = [Load(ld.buffer, tuple(simplify(substitute(i, at_min)) for i in ld.indices)) for ld in args[:2]]
        rows = loop.extent if loop.extent.dtype == "int32" else Cast("int32", loop.extent)
        return base + [rows, args[2], Const(steps[0], "int32"), Const(steps[1], "int32"), args[3]], None

    def variant_for(self, mcpu):
        return _DOT.variant_for(mcpu)

    def signature(self):
        return ("int32_t aot_dot_s8_rows(const int8_t* a, const int8_t* b, int32_t rows, int32_t n, "
                "int32_t sa, int32_t sb, int32_t off)")

    def bodies(self):
        # each body: the rows around the run of dot_s8's body of the same extension
        mve = ["int32_t acc0 = 0;", "int32_t bsum0 = 0;", "mve_pred16_t p;",
               "if (n <= 0) {", "  return 0;", "}",
               "p = vctp8q((uint32_t)(n & 15));",                  # the tail's lanes, the same every row
               *_mve_rows_off(1),
               "return acc0 + off * bsum0;"]
        dsp = ["int32_t acc = 0;",
               "int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) * 0x10001u);",
               "for (; rows > 0; --rows, a += sa, b += sb) {",
               "  const int8_t* pa = a;",
               "  const int8_t* pb = b;",
               "  int32_t k = n;",
               *["  " + x for x in _dsp_run("pa", "pb", "k")],
               "}",
               "return acc;"]
        plain = ["int32_t acc = 0;", "int32_t r, k;",
                 "for (r = 0; r < rows; ++r) {",
                 "  for (k = 0; k < n; ++k) {",
                 "    acc += ((int32_t)a[r * sa + k] + off) * (int32_t)b[r * sb + k];",
                 "  }",
                 "}",
                 "return acc;"]
        return {"mve": mve, "dsp": dsp, "plain": plain}


_DOT = DotS8()


@register_intrin
class DotS8x2(TensorIntrin):
    """Two output channels from one pass over the input: dot_s8x2(a, b, rows, n, sa, sb, sw, off)
    is dot_s8_rows(a, b, ...) in its low 32 bits and dot_s8_rows(a, b + sw, ...) in its high
    32 bits (each input vector or word loaded and widened once for both weight rows). The
    schedule puts it in place of two outputs' dot_s8 or dot_s8_rows calls
    (aot/schedules/arm_pairs.py); it has no loop pattern of its own."""
    name = "dot_s8x2"
    headers = DotS8.headers
    dtype = "uint64"
    pointer_args = (0, 1)
    extent_arg = 3

    def last_offsets(self, args):
        rows, n, sa, sb, sw = args[2], args[3], args[4], args[5], args[6]
        one = Const(1, rows.dtype)
        return [(0, (rows - one) * sa + n - one), (1, (rows - one) * sb + sw + n - one)]

    def match(self, loop, acc):
        return None, "dot_s8x2 replaces two calls, not a loop"

    def variant_for(self, mcpu):
        return _DOT.variant_for(mcpu)

    def signature(self):
        return ("uint64_t aot_dot_s8x2(const int8_t* a, const int8_t* b, int32_t rows, int32_t n, "
                "int32_t sa, int32_t sb, int32_t sw, int32_t off)")

    def bodies(self):
        pack = "return ((uint64_t)(uint32_t)acc1 << 32) | (uint64_t)(uint32_t)acc0;"
        mve = ["int32_t acc0 = 0, acc1 = 0, bsum0 = 0, bsum1 = 0;", "mve_pred16_t p;",
               "if (n <= 0) {", "  return 0;", "}",
               "p = vctp8q((uint32_t)(n & 15));",
               *_mve_rows_off(2),
               "acc0 += off * bsum0;", "acc1 += off * bsum1;", pack]
        word = lambda at: _dsp_multi_word(at, ["acc0", "acc1"])  # noqa: E731
        dsp = ["int32_t acc0 = 0, acc1 = 0;",
               "int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) * 0x10001u);",
               "for (; rows > 0; --rows, a += sa, b += sb) {",
               "  const int8_t* pa = a;",
               "  const int8_t* pb = b;",
               "  int32_t k;",
               "  uint32_t xa, xb;",
               "  int32_t lo, hi, tb;",
               "  for (k = n; k >= 4; k -= 4, pa += 4, pb += 4) {",     # (two words a step spill on M4)
               *["    " + x for x in word("")],
               "  }",
               "  for (; k > 0; --k, ++pa, ++pb) {",
               "    acc0 += ((int32_t)*pa + off) * (int32_t)*pb;",
               "    acc1 += ((int32_t)*pa + off) * (int32_t)pb[sw];",
               "  }",
               "}", pack]
        plain = ["int32_t acc0 = 0, acc1 = 0;", "int32_t r, k;",
                 "for (r = 0; r < rows; ++r) {",
                 "  for (k = 0; k < n; ++k) {",
                 "    acc0 += ((int32_t)a[r * sa + k] + off) * (int32_t)b[r * sb + k];",
                 "    acc1 += ((int32_t)a[r * sa + k] + off) * (int32_t)b[r * sb + sw + k];",
                 "  }",
                 "}", pack]
        return {"mve": mve, "dsp": dsp, "plain": plain}


def requant_c(x, j, mult, shift):
    """C lines: TFLite's requantisation of int32 `x` with channel j's bias and the multiplier and
    shift named (mult[j] or one for all), then the output zero point and clamp, packed as byte j
    of u."""
    return [f"x = {x} + bias[{j}];", *requantise_lines("x", mult, shift), f"x = {clamp('x')};",
            f"u |= (uint32_t)(uint8_t)x << {8 * j};"]


@register_intrin
class DotS8x4Requant(TensorIntrin):
    """Four output channels of a per-channel-quantised conv, requantised: dot_s8x4q(a, b, rows, n,
    sa, sb, sw, off, bias, mult, shift, zp, lo, hi) is, for j < 4, dot_s8_rows(a, b + j * sw, rows,
    n, sa, sb, off) + bias[j] scaled by mult[j] and shift[j] (TFLite's MultiplyByQuantizedMultiplier),
    plus zp and clamped to [lo, hi], as the int8 byte j of the result. Helium: each input vector
    loaded once for four weight rows, and the requantisation one vector for the four channels
    (vqrdmulhq, then a rounding shift with gemmlowp's round-half-away fixup). The schedule puts it
    in place of four outputs' dot calls and epilogues (aot/schedules/arm_pairs.py)."""
    name = "dot_s8x4q"
    headers = {"mve": ("arm_mve.h", "string.h"), "dsp": ("arm_acle.h", "string.h")}
    dtype = "uint32"
    # Helium: with a first layer's gconv_s8 in the file, gcc's inlining budget runs out before IC's
    # 3x3 convs (a call per four channels, its run length no longer a constant)
    forced_inline = ("__ARM_FEATURE_MVE",)
    pointer_args = (0, 1, 8, 9, 10)
    scale_args = (9, 10)       # mult, shift: arrays per channel (per_tensor: values)
    extent_arg = 3
    per_channel = True

    def last_offsets(self, args):
        rows, n, sa, sb, sw = args[2], args[3], args[4], args[5], args[6]
        one, three = Const(1, rows.dtype), Const(3, rows.dtype)
        return [(0, (rows - one) * sa + n - one), (1, (rows - one) * sb + sw * three + n - one)] + \
            [(k, three) for k in self.pointer_args[2:]]

    def match(self, loop, acc):
        return None, f"{self.name} replaces four outputs' calls and requantisation, not a loop"

    def variant_for(self, mcpu):
        return _DOT.variant_for(mcpu)

    def signature(self):
        ms = "const int32_t* mult, const int32_t* shift" if self.per_channel else "int32_t mult, int32_t shift"
        return (f"uint32_t aot_{self.name}(const int8_t* a, const int8_t* b, int32_t rows, int32_t n, int32_t sa, "
                f"int32_t sb, int32_t sw, int32_t off, const int32_t* bias, {ms}, int32_t zp, int32_t lo, int32_t hi)")

    def bodies(self):
        mult = (lambda j: f"mult[{j}]") if self.per_channel else (lambda j: "mult")
        shift = (lambda j: f"shift[{j}]") if self.per_channel else (lambda j: "shift")
        vec = (lambda name: f"vld1q_s32({name})") if self.per_channel else (lambda name: f"vdupq_n_s32({name})")
        mve = ["int32_t acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;",
               "int32_t bsum0 = 0, bsum1 = 0, bsum2 = 0, bsum3 = 0;",
               "int8_t o[4];", "uint32_t u;",
               "mve_pred16_t p = vctp8q((uint32_t)(n & 15));",
               "int32x4_t v, sh, r, zero = vdupq_n_s32(0);",
               "if (n <= 0) {",
               "  rows = 0;",
               "}",
               *_mve_rows_off(4),
               # the sums into lanes by register moves (not through memory)
               "v = vdupq_n_s32(acc0 + off * bsum0);",
               *[f"v = vsetq_lane_s32(acc{j} + off * bsum{j}, v, {j});" for j in range(1, 4)],
               "v = vaddq_s32(v, vld1q_s32(bias));",
               f"sh = {vec('shift')};",
               f"v = {mve_left('v', 'vmaxq_s32(sh, zero)')};",
               f"v = {mve_srdhm('v', vec('mult'))};",
               # a rounding shift right by -r rounds half up; minus one first on a negative value
               # makes it round half away from zero (r is 0 or negative: its sign bit picks them)
               "r = vminq_s32(sh, zero);",
               f"v = {mve_rdbpot('v', 'r')};",
               f"v = {mve_clamp('v')};",
               "vstrbq_s32(o, v);",
               "memcpy(&u, o, 4);",
               "return u;"]
        word = lambda at: _dsp_multi_word(at, ["s0", "s1", "s2", "s3"])  # noqa: E731
        dsp = ["int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;", "int32_t x, e, mask;", "int64_t ab;", "uint32_t u = 0;",
               "int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) * 0x10001u);",
               "for (; rows > 0; --rows, a += sa, b += sb) {",
               "  const int8_t* pa = a;",
               "  const int8_t* pb = b;",
               "  int32_t k;",
               "  uint32_t xa, xb;",
               "  int32_t lo, hi, tb;",
               "  for (k = n; k >= 4; k -= 4, pa += 4, pb += 4) {",     # (two words a step spill on M4)
               *["    " + x for x in word("")],
               "  }",
               "  for (; k > 0; --k, ++pa, ++pb) {",
               "    x = (int32_t)*pa + off;",
               *[f"    s{j} += x * (int32_t)pb[{j} * sw];" for j in range(4)],
               "  }",
               "}"]
        for j in range(4):
            dsp += requant_c(f"s{j}", j, mult(j), shift(j))
        dsp.append("return u;")
        plain = ["int32_t s[4] = {0, 0, 0, 0};", "int32_t r, k, j, x, e, mask;", "int64_t ab;", "uint32_t u = 0;",
                 "for (r = 0; r < rows; ++r) {",
                 "  for (j = 0; j < 4; ++j) {",
                 "    for (k = 0; k < n; ++k) {",
                 "      s[j] += ((int32_t)a[r * sa + k] + off) * (int32_t)b[r * sb + j * sw + k];",
                 "    }",
                 "  }",
                 "}"]
        for j in range(4):
            plain += requant_c(f"s[{j}]", j, mult(j), shift(j))
        plain.append("return u;")
        return {"mve": mve, "dsp": dsp, "plain": plain}


DotS8x4RequantT = per_tensor(DotS8x4Requant, """dot_s8x4q with one multiplier and shift (int32 values) for
    the four channels: a per-tensor-quantised fully connected layer or conv.""")
