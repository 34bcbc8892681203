"""Micro-kernels over gathered windows (aot/schedules/arm_gather.py): a first layer's output
pixels, each pixel's window copied into a local array.

- gconv_q15 (DSP): two pixels, every channel requantised, from int16 windows and int16 weights;
  widen_q15 gathers a window row into int16 with the input offset added;
- widen_q15w, gconv_ring, ring_q15x3 (DSP): a ring of widened input rows (widen_q15w a row),
  a row's pixel pairs of 3x3 windows over three channels straight from it (gconv_ring: assembly
  for two pixels by four channels a block and pw_s8's requantisation), or two pixels' windows
  copied from it into pw_s8's scratch for pw_s8x2 (ring_q15x3);
- gconv_s8 (Helium): two pixels, every channel requantised, from int8 windows; copy_s8 gathers a
  window row;
- dot_s8_g, dot_s8x2_g, dot_s8x4q_g, dot_s8x4qt_g: the bodies of dot_s8, dot_s8x2 and
  dot_s8x4q(t) (aot/tir/intrin/arm.py) under names of their own, for one pixel at a time. Each is
  a static inline function of its own, always inlined (GCC's attribute; not with Helium), so the
  call site a first layer makes gets its constant run length and weight-row stride, and the
  pointwise convs' calls of the shared kernels are compiled as before (a second call site of
  dot_s8x4q, or this body left to gcc's inlining limits, makes it stop inlining dot_s8x4q into
  KWS's pointwise convs on the M4).
"""
from __future__ import annotations

from .arm import DotS8, DotS8x2, DotS8x4Requant, DotS8x4RequantT
from ..expr import Const
from .base import TensorIntrin, register_intrin
from .arm_q15 import TABLE_HEAD, plain_requant, regs_requant, blocks_statement, quad_folded_asm, folded_fn
from .gemmlowp import clamp, mve_clamp, mve_left, mve_rdbpot, mve_srdhm, requantise_lines

SUFFIX = "_g"


def _c_source(self):
    """Always inlined where GCC's attribute is understood, except with Helium (there gcc's own
    choice runs fewer instructions on KWS's first layer): on the M4 gcc's unit-growth limit
    otherwise spends the budget on this function and stops inlining dot_s8x4q into the
    pointwise convs."""
    head, rest = super(type(self), self).c_source().split("\n", 1)
    base = self.name[:-len(SUFFIX)]
    head = head.replace(f" aot_{base}(", f" aot_{self.name}(", 1)       # (dot_s8's signature names itself)
    forced = head.replace("static inline ", "static inline __attribute__((always_inline)) ", 1)
    return "\n".join(["#if defined(__GNUC__) && !defined(__ARM_FEATURE_MVE)", forced, "#else", head, "#endif", rest])


def _named(base):
    return type(base.__name__ + "Gather", (base,), {
        "c_source": _c_source,
        "name": base.name + SUFFIX,
        "forced_inline": (),
        "__doc__": f"{base.name} over a gathered window (a call site of its own).",
        "match": lambda self, loop, acc: (None, f"{self.name} is put in place of {base.name} calls, not a loop"),
    })


GATHERED = {b.name: register_intrin(_named(b)).name for b in (DotS8, DotS8x2, DotS8x4Requant, DotS8x4RequantT)}


def _requant_fn(name):
    """The scalar requantisation as a C function `name`(x, mult, shift, zp, lo, hi) -> int8_t."""
    head = f"static inline int8_t {name}(int32_t x, int32_t mult, int32_t shift, int32_t zp, int32_t lo,"
    lines = [head, " " * 44 + "int32_t hi) {", "  int64_t ab;", "  int32_t e, mask;",
             *["  " + x for x in requantise_lines("x", "mult", "shift")],
             f"  return (int8_t)({clamp('x')});", "}"]
    return "\n".join(lines) + "\n"


@register_intrin
class _GatherBuilt(TensorIntrin):
    """An intrinsic that only the gather rule (aot/schedules/arm_gather.py) calls, never matched
    in a loop; its one DSP or Helium body where DotS8 takes that extension (FAST), else plain."""
    FAST = "dsp"

    def match(self, loop, acc=None):
        return None, f"{self.name} is built by the gather rule (aot/schedules/arm_gather.py), not matched"

    def variant_for(self, mcpu):
        return self.FAST if self.FAST is not None and DotS8().variant_for(mcpu) == self.FAST else "plain"


class GConvQ15(_GatherBuilt):
    """Two output pixels of a gathered conv, every channel requantised (the DSP extension's SIMD32):
    gconv_q15(a0, a1, w, n, channels, bias, mult, shift, zp, lo, hi, y0, y1). a0 and a1 are the
    pixels' windows as n int16 values with the input offset already added (n even: a pad value
    0); w holds each channel's weights as n little-endian int16 (2n bytes a channel, the pad
    weight 0), widened at compile time; bias is the requantisation's table and shift its shifts
    (aot/schedules/requant_table.py: the folded form where it says fast). Each __smlad multiplies two taps of one pixel by two of
    one channel: two pixels by two channels per step, so every 32-bit load serves two products
    and no value is widened in the loop. y0[c] and y1[c] get TFLite's per-channel
    requantisation of the sums (bias, MultiplyByQuantizedMultiplier, zero point, clamp): the
    sums start from the table's biases, and a block of two pixels by four channels that the
    table says fast, clamped to int8's whole range, is requantised by pw_s8's assembly
    (arm_q15.quad_folded_asm) where the compiler optimises. The same pixel twice (a1 == a0,
    y1 == y0: an odd row's last) stores the same bytes twice."""
    name = "gconv_q15"
    headers = {"dsp": ("arm_acle.h", "string.h")}
    pointer_args = (0, 1, 2, 5, 6, 7, 11, 12)
    written_args = (11, 12)

    def last_offsets(self, args):
        n, c = args[3], args[4]
        one = Const(1, "int32")
        two = Const(2, "int32")
        return [(0, n - one), (1, n - one), (2, c * n * two - one), (5, c + c - one)] + \
            [(k, c - one) for k in (6, 7, 11, 12)]


    def signature(self):
        return ("int32_t aot_gconv_q15(const int16_t* a0, const int16_t* a1, const int8_t* w, int32_t n, "
                "int32_t channels, const int32_t* bias, const int32_t* mult, const int32_t* shift, int32_t zp, "
                "int32_t lo, int32_t hi, int8_t* y0, int8_t* y1)")

    def c_source(self):
        return _requant_fn("aot_gconv_q15_requant") + "\n".join(folded_fn("aot_gconv_q15_fast")) + "\n" + \
            super().c_source()

    def bodies(self):
        q = "aot_gconv_q15_requant"

        def out(y, s, c):          # (the sums start from the table's biases)
            return (f"{y}[{c}] = (int8_t)(fast ? aot_gconv_q15_fast({s}, mult[{c}], shift[{c}], bt[2 * ({c}) + 1], lo, hi)"
                    f" : {q}({s}, mult[{c}], shift[{c}], zp, lo, hi));")
        def step(pixels, chans, second=False):
            ka, kw = ("k + 2", "2 * k + 4") if second else ("k", "2 * k")
            x = [f"memcpy(&x{p}, a{p} + {ka}, 4);" for p in range(pixels)]
            x += [f"memcpy(&v{j}, w{j} + {kw}, 4);" for j in range(chans)]
            return x + [f"s{p}{j} = __smlad((int32_t)x{p}, (int32_t)v{j}, s{p}{j});"
                        for p in range(pixels) for j in range(chans)]

        def block(pixels, chans):
            """The loop over the window for `pixels` pixels and `chans` channels: two taps a
            step, two steps an iteration (n even; a last single step when n % 4 is 2)."""
            sums = ", ".join(f"s{p}{j} = bt[2 * (c + {j})]" for p in range(pixels) for j in range(chans))
            lines = [f"int32_t {sums};", "uint32_t " + ", ".join(
                [f"x{p}" for p in range(pixels)] + [f"v{j}" for j in range(chans)]) + ";",
                "const int8_t* w0 = w;"] + [f"const int8_t* w{j} = w + {2 * j} * n;" for j in range(1, chans)]
            if pixels * chans >= 8:          # eight sums: one step an iteration (two spill on the M4)
                lines += ["for (k = 0; k < n; k += 2) {", *["  " + x for x in step(pixels, chans)], "}"]
            else:
                lines += ["for (k = 0; k + 4 <= n; k += 4) {", *["  " + x for x in step(pixels, chans)],
                          *["  " + x for x in step(pixels, chans, True)], "}",
                          "if (k < n) {", *["  " + x for x in step(pixels, chans)], "}"]
            stores = []
            for j in range(chans):
                c = f"c + {j}" if j else "c"
                for p in range(pixels):
                    stores.append(out(f"y{p}", f"s{p}{j}", c))
                if pixels == 1:
                    stores.append(f"y1[{c}] = y0[{c}];")
            if (pixels, chans) != (2, 4):
                return lines + stores
            # the common case's requantisation as pw_s8's assembly where the compiler optimises
            # (the sums through memory: gcc otherwise reloads the block's pointers every channel)
            acc = "int32_t acc[8] = {" + ", ".join(f"s{p}{j}" for j in range(4) for p in range(2)) + "};"
            return lines + ["#if defined(__OPTIMIZE__)", "if (fast && full) {", "  " + acc,
                            '  __asm__("" : "+m"(acc));',
                            *["  " + y for y in quad_folded_asm(True, ("y0", "y1"))],
                            "} else", "#endif", "{", *["  " + y for y in stores], "}"]

        def loops(pixels):
            return ["for (c = 0; c + 3 < channels; c += 4, w += 8 * n) {", *["  " + x for x in block(pixels, 4)], "}",
                    "for (; c + 1 < channels; c += 2, w += 4 * n) {", *["  " + x for x in block(pixels, 2)], "}",
                    "if (c < channels) {", *["  " + x for x in block(pixels, 1)], "}"]
        # the same pixel twice (an odd row's last): one pixel's sums, stored to both outputs
        dsp = ["int32_t c = 0, k;",
               "#if defined(__OPTIMIZE__)",
               "int32_t full = lo == -128 && hi == 127;",
               "#endif",
               *TABLE_HEAD,
               "if (a1 == a0) {", *["  " + x for x in loops(1)], "  return 0;", "}",
               *loops(2),
               "return 0;"]
        plain = ["int32_t c, k;",
                 *TABLE_HEAD,
                 "for (c = 0; c < channels; ++c, w += 2 * n) {",
                 "  int32_t s0 = bt[2 * c], s1 = s0;",
                 "  for (k = 0; k < n; ++k) {",
                 "    int32_t v = (int32_t)(int16_t)(uint16_t)((uint32_t)(uint8_t)w[2 * k]"
                 " | ((uint32_t)(uint8_t)w[2 * k + 1] << 8));",
                 "    s0 += (int32_t)a0[k] * v;",
                 "    s1 += (int32_t)a1[k] * v;",
                 "  }",
                 "  " + out("y0", "s0", "c"), "  " + out("y1", "s1", "c"),
                 "}",
                 "return 0;"]
        return {"dsp": dsp, "plain": plain}


@register_intrin
class WidenQ15(_GatherBuilt):
    """One window row gathered for gconv_q15: widen_q15(dst, src, n, off) stores (int16)(src[k] +
    off) to dst[k] for k < n. The DSP body widens four bytes a step: sxtab16 adds the offset to
    bytes 0 and 2, and (rotated) 1 and 3, and two halfword packs put them back in order."""
    name = "widen_q15"
    headers = {"dsp": ("arm_acle.h", "string.h")}
    pointer_args = (0, 1)
    written_args = (0,)
    extent_arg = 2


    def signature(self):
        return "int32_t aot_widen_q15(int16_t* dst, const int8_t* src, int32_t n, int32_t off)"

    def bodies(self):
        tail = ["for (; n > 0; --n, ++src, ++dst) {", "  *dst = (int16_t)((int32_t)*src + off);", "}", "return 0;"]
        dsp = ["int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) * 0x10001u);",
               "uint32_t x, lo, hi;",
               "int32_t e, o;",
               "for (; n >= 4; n -= 4, src += 4, dst += 4) {",
               "  memcpy(&x, src, 4);",
               "  e = __sxtab16(off2, (int32_t)x);",                                     # bytes 0, 2
               '  __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(o) : "r"(off2), "r"(x));',  # bytes 1, 3
               "  lo = ((uint32_t)e & 0xFFFFu) | ((uint32_t)o << 16);",                    # (0, 1): pkhbt
               "  hi = ((uint32_t)o & 0xFFFF0000u) | ((uint32_t)e >> 16);",                # (2, 3): pkhtb
               "  memcpy(dst, &lo, 4);",
               "  memcpy(dst + 2, &hi, 4);",
               "}", *tail]
        return {"dsp": dsp, "plain": tail}


@register_intrin
class GConvS8(_GatherBuilt):
    """Two output pixels of a gathered conv on Helium, every channel requantised:
    gconv_s8(a0, a1, w, n, channels, bias, mult, shift, zp, lo, hi, y0, y1). a0 and a1 are the
    pixels' int8 windows (n bytes, the padding holding the input's zero point), w the OHWI int8
    weights (n bytes a channel), bias with the input offset x weight-row sum already folded in
    (aot/schedules/arm_fold.py's OffsetFold): the sums are plain int8 dot products. Four channels
    a block: each 16-byte step loads the two windows' vectors once and each weight vector once
    for both pixels (eight vmladavaq), the tail predicated; then the block's four sums of each
    pixel are requantised as one vector (as dot_s8x4q does) and stored four bytes at once, a last
    block of fewer channels predicated (its missing weight rows read as the last real one)."""
    name = "gconv_s8"
    FAST = "mve"
    headers = {"mve": ("arm_mve.h",)}
    pointer_args = (0, 1, 2, 5, 6, 7, 11, 12)
    written_args = (11, 12)

    def last_offsets(self, args):
        n, c = args[3], args[4]
        one = Const(1, "int32")
        return [(0, n - one), (1, n - one), (2, c * n - one)] + [(k, c - one) for k in (5, 6, 7, 11, 12)]


    def signature(self):
        return ("int32_t aot_gconv_s8(const int8_t* a0, const int8_t* a1, const int8_t* w, int32_t n, "
                "int32_t channels, const int32_t* bias, const int32_t* mult, const int32_t* shift, int32_t zp, "
                "int32_t lo, int32_t hi, int8_t* y0, int8_t* y1)")

    def c_source(self):
        # the scalar requantisation only for the plain body (clang warns of an unused static function)
        helper = _requant_fn("aot_gconv_s8_requant")
        return "#if !defined(__ARM_FEATURE_MVE)\n" + helper + "#endif\n" + super().c_source()

    def bodies(self):
        def requant(p):
            return [f"v = vdupq_n_s32(s{p}0);",
                    *[f"v = vsetq_lane_s32(s{p}{j}, v, {j});" for j in range(1, 4)],
                    "v = vaddq_s32(v, vb);",
                    f"v = {mve_left('v', 'vmaxq_s32(sh, zero)')};",
                    f"v = {mve_srdhm('v', 'vm')};",
                    # a rounding shift right by -r rounds half up; minus one first on a negative
                    # value rounds half away from zero (r is 0 or negative: its sign bit picks them)
                    f"v = {mve_rdbpot('v', 'r')};",
                    f"v = {mve_clamp('v')};",
                    f"vstrbq_p_s32(y{p} + c, v, pc);"]
        mve = ["int32_t c, k;",
               "int32x4_t v, vb, vm, sh, r, zero = vdupq_n_s32(0);",
               "for (c = 0; c < channels; c += 4) {",
               "  int32_t m = channels - c;",
               "  mve_pred16_t pc = vctp32q((uint32_t)m);",
               "  const int8_t* w0 = w + c * n;",
               "  const int8_t* w1 = w0 + (m > 1 ? n : 0);",
               "  const int8_t* w2 = w0 + (m > 2 ? 2 * n : 0);",
               "  const int8_t* w3 = w0 + (m > 3 ? 3 * n : 0);",
               "  int32_t s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;",
               # two channels a pass over the windows: four sums accumulate at a time (eight
               # spill: vmladavaq wants even registers)
               *[x for pair in ((0, 1), (2, 3)) for x in (
                   "  for (k = 0; k < n; k += 16) {",
                   "    mve_pred16_t p = vctp8q((uint32_t)(n - k));",
                   "    int8x16_t x0 = vldrbq_z_s8(a0 + k, p);",
                   "    int8x16_t x1 = vldrbq_z_s8(a1 + k, p);",
                   *[f"    int8x16_t v{j} = vldrbq_z_s8(w{j} + k, p);\n"
                     f"    s0{j} = vmladavaq_s8(s0{j}, x0, v{j});\n"
                     f"    s1{j} = vmladavaq_s8(s1{j}, x1, v{j});" for j in pair],
                   "  }")],
               "  vb = vldrwq_z_s32(bias + c, pc);",
               "  vm = vldrwq_z_s32(mult + c, pc);",
               "  sh = vldrwq_z_s32(shift + c, pc);",
               "  r = vminq_s32(sh, zero);",
               *["  " + x for x in requant(0) + requant(1)],
               # (the stores are predicated: gcc 12 takes them for 4-byte stores, copy_s8 says more)
               '  __asm__ volatile("" : : "r"(y0), "r"(y1) : "memory");',
               "}",
               "return 0;"]
        q = "aot_gconv_s8_requant"
        plain = ["int32_t c, k;",
                 "for (c = 0; c < channels; ++c, w += n) {",
                 "  int32_t s0 = 0, s1 = 0;",
                 "  for (k = 0; k < n; ++k) {",
                 "    s0 += (int32_t)a0[k] * (int32_t)w[k];",
                 "    s1 += (int32_t)a1[k] * (int32_t)w[k];",
                 "  }",
                 f"  y0[c] = {q}(s0 + bias[c], mult[c], shift[c], zp, lo, hi);",
                 f"  y1[c] = {q}(s1 + bias[c], mult[c], shift[c], zp, lo, hi);",
                 "}",
                 "return 0;"]
        return {"mve": mve, "plain": plain}


def _pack(lo, hi):
    """C: the int32 word of two int16 lanes, lo's low half then hi's low half (PKHBT)."""
    return f"(int32_t)(((uint32_t){lo} & 0xFFFFu) | ((uint32_t){hi} << 16))"


@register_intrin
class WidenQ15w(_GatherBuilt):
    """One input row widened into a ring row of the workspace (aot/schedules/arm_gather.py's
    ring_pairs): widen_q15w(dst, src, n, off), n even, stores the int16 values src[k] + off in
    their natural order, two a word (dst[k / 2]'s low half the even k). The DSP body widens
    sixteen bytes a step (the loop's test and steps once per eight words stored): per word of
    src, SXTAB16 adds the offset to bytes 0 and 2 and (rotated) to 1 and 3, PKHBT and PKHTB put
    them back in order."""
    name = "widen_q15w"
    headers = {"dsp": ("arm_acle.h", "string.h")}
    pointer_args = (0, 1)
    written_args = (0,)

    def last_offsets(self, args):
        n = int(args[2].value)
        return [(0, Const(n // 2 - 1, "int32")), (1, Const(n - 1, "int32"))]


    def signature(self):
        return "int32_t aot_widen_q15w(int32_t* dst, const int8_t* src, int32_t n, int32_t off)"

    def bodies(self):
        tail = ["for (; n > 0; n -= 2, src += 2, ++dst) {",
                f"  *dst = {_pack('((int32_t)src[0] + off)', '((int32_t)src[1] + off)')};",
                "}", "return 0;"]

        def word(at):
            return [f"memcpy(&x, src + {4 * at}, 4);",
                    "e = __sxtab16(off2, (int32_t)x);",                                     # bytes 0, 2
                    '__asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(o) : "r"(off2), "r"(x));',  # bytes 1, 3
                    '__asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(lo) : "r"(e), "r"(o));',     # (0, 1)
                    '__asm__("pkhtb %0, %1, %2, asr #16" : "=r"(hi) : "r"(o), "r"(e));',     # (2, 3)
                    f"dst[{2 * at}] = lo;", f"dst[{2 * at + 1}] = hi;"]
        dsp = ["int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) * 0x10001u);",
               "uint32_t x;",
               "int32_t e, o, lo, hi;",
               "for (; n >= 16; n -= 16, src += 16, dst += 8) {", *["  " + y for k in range(4) for y in word(k)], "}",
               "for (; n >= 4; n -= 4, src += 4, dst += 2) {", *["  " + y for y in word(0)], "}",
               *tail]
        return {"dsp": dsp, "plain": tail}


@register_intrin
class RingQ15x3(_GatherBuilt):
    """Two pixels' windows of three rows of nine taps into pw_s8's scratch, from the ring of
    widened input rows (widen_q15w's: int16 in natural order, two a word): ring_q15x3(buf, r0,
    r1, r2, d), r0..r2 each row's first word for pixel 0 (its taps 0 to 8 at halves 0 to 8, the
    half after them the next column's), pixel 1's d words on. pw_s8x2's groups of the pixels'
    words: rows 0..2's taps 0-3 and 4-7 as two groups each (the ring's words as they are: the
    weights are laid out to the scratch's pairs, RingQuads), then one group of the taps 8: row
    0's and row 1's packed into one word (PKHBT), row 2's word as it is (its other half times a
    zero weight). Plain word copies on every core: no widening per pixel."""
    name = "ring_q15x3"
    FAST = None         # its copy has no DSP body
    headers = {}
    pointer_args = (0, 1, 2, 3)
    written_args = (0,)

    def last_offsets(self, args):
        d = args[4]
        return [(0, Const(27, "int32"))] + [(k, d + Const(4, "int32")) for k in (1, 2, 3)]


    def signature(self):
        return ("int32_t aot_ring_q15x3(int32_t* buf, const int32_t* r0, const int32_t* r1, const int32_t* r2, "
                "int32_t d)")

    def bodies(self):
        body = ["int32_t a, b, c, e;"]
        for r in range(3):
            for i in range(2):
                g = 4 * (2 * r + i)
                body += [f"a = r{r}[{2 * i}];", f"b = r{r}[{2 * i + 1}];", f"c = r{r}[d + {2 * i}];",
                         f"e = r{r}[d + {2 * i + 1}];",
                         f"buf[{g}] = a;", f"buf[{g + 1}] = b;", f"buf[{g + 2}] = c;", f"buf[{g + 3}] = e;"]
        body += ["a = r0[4];", "b = r1[4];", "c = r0[d + 4];", "e = r1[d + 4];",
                 f"buf[24] = {_pack('a', 'b')};", "buf[25] = r2[4];",
                 f"buf[26] = {_pack('c', 'e')};", "buf[27] = r2[d + 4];",
                 "return 0;"]
        return {"plain": body}


RING_BLOCK = 224        # gconv_ring's weights: 14 words of four channels a block (RingQuads)


def _ring_mac(first=False):
    """gconv_ring's MAC of one block of four channels over both pixels as Thumb-2 assembly lines
    (operands by name): per row (its pointer from memory, rp: rows 0 to 2 of the ring, then the
    packed taps 8) each word of pixel 0 and the same of pixel 1 three words on, the four
    channels' weight words in two pairs, eight SMLADs a word; the weights advanced a block.
    first: pixel 0's sums hold the biases and pixel 1's are set by the first word's SMLADs."""
    g = []
    for r, words in enumerate((4, 4, 4, 2)):
        g.append(f"ldr %[q], %[rp{r}]")
        for k in range(words):
            at = 16 * (4 * r + k)
            g += [f"ldr %[x0], [%[q], #{4 * k}]", f"ldr %[x1], [%[q], #{12 + 4 * k}]"]
            for pair in range(2):
                j0, j1 = 2 * pair, 2 * pair + 1
                g += [f"ldr %[wa], [%[w0], #{at + 8 * pair}]", f"ldr %[wb], [%[w0], #{at + 8 * pair + 4}]"]
                for j, wr in ((j0, "wa"), (j1, "wb")):
                    if first and (r, k) == (0, 0):      # pixel 1's sum from pixel 0's bias, before it moves
                        g += [f"smlad %[s{j}1], %[x1], %[{wr}], %[s{j}0]", f"smlad %[s{j}0], %[x0], %[{wr}], %[s{j}0]"]
                    else:
                        g += [f"smlad %[s{j}0], %[x0], %[{wr}], %[s{j}0]", f"smlad %[s{j}1], %[x1], %[{wr}], %[s{j}1]"]
    return g + [f"add %[w0], %[w0], #{RING_BLOCK}"]


# _ring_asm's state words (memory operands): the rows' pointers (walking a pair at a time), the
# packed taps' words, the walking pointers of the multipliers, shifts, the table's c values,
# both outputs and the weights (each pair's blocks walk them from their starts, the pair's end
# back), the pair's outputs' end, row 2's end; then the two words channel 3's sums are parked
# in (GCC's limit of 30 operands: 14 registers, the frame in and out, 14 of its words)
_RING_FRAME = ("rp0", "rp1", "rp2", "rp3", "rm", "re", "rt", "ro", "ro1", "w", "roend", "end")


def _ring_asm():
    """C lines: every pixel pair of the call and every block of four output channels of each as
    one Thumb-2 assembly statement (every channel folded, int8's whole range, whole blocks, at
    least one block and one pair): per pair the taps 8 packed (PKHBT) into `tail`; per block its
    biases from the table, _ring_mac, pw_s8's register requantisation (arm_q15's regs_requant,
    its pointers in the MAC's registers), the loop over the blocks; the outputs and rows a pair
    on, the blocks' pointers back to their starts, the loop over the pairs. Its state is locals
    passed as memory operands and every register operand an early-clobber output with no
    input, as arm_q15._blocks_asm's (the form that builds at -O1 and -Os too): between the
    phases the 14 registers are the statement's own (gcc's loops around the MAC's and the
    requantisation's statements reloaded and stored their pointers and re-copied the sums,
    about 20 cycles a block and 30 a pair on the M4)."""
    ptr = {"%[rm]": "%[q]", "%[re]": "%[w0]", "%[rt]": "%[x0]", "%[ro]": "%[x1]", "%[ro1]": "%[wa]"}
    park = {f"%[park{k}]": f"%[f_park{k}]" for k in range(2)}
    rq = []
    for x in regs_requant("wb"):
        for a, b in {**park, **ptr}.items():
            x = x.replace(a, b)
        rq.append(x)
    mac = [x.replace("%[rp", "%[f_rp") for x in _ring_mac(first=True)]
    walk = ("rm", "re", "rt", "ro", "ro1")
    g = [".p2align 2", "4:",
         # the taps 8 of both pixels: rows 0's and 1's packed, row 2's word (pixel 1's three on);
         # the loads in one run, the free sums' registers their values (no load's value used by
         # the next instruction: the M7 stalls there)
         "ldr %[q], %[f_rp0]", "ldr %[w0], %[f_rp1]", "ldr %[x1], %[f_rp2]", "ldr %[wa], %[f_rp3]",
         "ldr %[s00], [%[q], #16]", "ldr %[s01], [%[w0], #16]", "ldr %[s10], [%[q], #28]",
         "ldr %[s11], [%[w0], #28]", "ldr %[s20], [%[x1], #16]", "ldr %[s21], [%[x1], #28]",
         "pkhbt %[s00], %[s00], %[s01], lsl #16", "pkhbt %[s10], %[s10], %[s11], lsl #16",
         "str %[s00], [%[wa]]", "str %[s20], [%[wa], #4]", "str %[s10], [%[wa], #12]", "str %[s21], [%[wa], #16]",
         ".p2align 2", "3:",
         "ldr %[x0], %[f_rt]",        # (the table's c of the block's first channel: its bias a word before)
         *[f"ldr %[s{j}0], [%[x0], #{8 * j - 4}]" for j in range(4)],
         "ldr %[w0], %[f_w]",
         *mac,
         "str %[w0], %[f_w]",
         *[f"ldr {ptr['%[' + n + ']']}, %[f_{n}]" for n in walk],
         *rq,
         *[f"str {ptr['%[' + n + ']']}, %[f_{n}]" for n in walk],
         "ldr %[wb], %[f_roend]", "cmp %[x1], %[wb]", "bne 3b",
         # the next pair: its pixel 0's outputs where pixel 1's ended, pixel 1's (and pixel 0's
         # end) a row of channels on (the channels: the pixels' outputs' distance, wb); the
         # constants' and weights' pointers back a pair's blocks (4, 4, 8 and 56 bytes a
         # channel), the rows a pair on (the free sums' registers, the loads in one run)
         "sub %[wb], %[wa], %[x1]", "add %[x1], %[wa], %[wb]",
         "str %[wa], %[f_ro]", "str %[x1], %[f_ro1]", "str %[x1], %[f_roend]",
         "ldr %[s00], %[f_rm]", "ldr %[s01], %[f_re]", "ldr %[s10], %[f_rt]", "ldr %[s11], %[f_w]",
         "ldr %[s20], %[f_rp0]", "ldr %[s21], %[f_rp1]", "ldr %[q], %[f_rp2]", "ldr %[s30], %[f_end]",
         "sub %[s00], %[s00], %[wb], lsl #2", "sub %[s01], %[s01], %[wb], lsl #2",
         "sub %[s10], %[s10], %[wb], lsl #3", "sub %[s11], %[s11], %[wb], lsl #6",
         "add %[s11], %[s11], %[wb], lsl #3",
         "add %[s20], %[s20], #24", "add %[s21], %[s21], #24", "add %[q], %[q], #24",
         "str %[s00], %[f_rm]", "str %[s01], %[f_re]", "str %[s10], %[f_rt]", "str %[s11], %[f_w]",
         "str %[s20], %[f_rp0]", "str %[s21], %[f_rp1]", "str %[q], %[f_rp2]",
         "cmp %[q], %[s30]", "bne 4b"]
    ins = {"rp0": "r0", "rp1": "r1", "rp2": "r2", "rp3": "tail", "rm": "mult", "re": "shift", "rt": "bt + 1",
           "ro": "out", "ro1": "out + cout", "w": "w", "roend": "out + cout", "end": "r2 + 6 * npairs"}
    return blocks_statement(g, _RING_FRAME, ins, '__asm__ volatile(')


@register_intrin
class GConvRing(_GatherBuilt):
    """A row's pixel pairs of 3x3 windows over three channels (each window row nine taps) straight
    from the ring of widened input rows (aot/schedules/arm_gather.py's ring_pairs), every channel
    requantised: gconv_ring(out, r0, r1, r2, w, bias, mult, shift, cout, npairs, zp, lo, hi)
    writes pixel p's cout outputs at out + p * cout for p < 2 npairs; r0..r2 pixel 0's first word
    in each ring row (widen_q15w's int16 pairs, the input offset added), pixel p's 3p words on
    (stride 2 over three channels). A window as fourteen words: each row's words 0 to 3 (taps 0
    to 7) where they lie, then (packed once a pair, PKHBT) rows 0's and 1's taps 8 and row 2's
    word 4 (its high half the next column's, times a zero weight): the words ring_q15x3 copies
    into pw_s8's scratch, in its order, so that the weights are RingQuads (w: 224 bytes a block
    of four channels, word k's four channels' words at 16k); bias, mult and shift pw_s8x2's
    flagged table and shifts (requant_table.py). Under gcc's optimisation, where the table says
    every channel is folded, at int8's whole range and with whole blocks of four channels, the
    call is one Thumb-2 assembly statement (_ring_asm: two pixels by four channels a block,
    eight SMLADs to six loads, and pw_s8's register requantisation); otherwise C over the same
    words, each channel as the table says (arm_q15's plain requantisation)."""
    name = "gconv_ring"
    headers = {"dsp": ("arm_acle.h", "string.h"), "plain": ("string.h",)}
    pointer_args = (0, 1, 2, 3, 4, 5, 6, 7)
    written_args = (0,)

    def last_offsets(self, args):
        c, n = int(args[8].value), int(args[9].value)
        blocks = (c + 3) // 4
        return [(0, Const(2 * n * c - 1, "int32"))] + [(k, Const(6 * (n - 1) + 7, "int32")) for k in (1, 2, 3)] + \
            [(4, Const(RING_BLOCK * blocks - 1, "int32")), (5, Const(2 * c + 1, "int32")),
             (6, Const(c - 1, "int32")), (7, Const(c - 1, "int32"))]


    def signature(self):
        return ("int32_t aot_gconv_ring(int8_t* out, const int32_t* r0, const int32_t* r1, const int32_t* r2, "
                "const int8_t* w, const int32_t* bias, const int32_t* mult, const int32_t* shift, int32_t cout, "
                "int32_t npairs, int32_t zp, int32_t lo, int32_t hi)")

    def bodies(self):
        head = ["const int32_t* bt = bias;",
                "int32_t tail[5];",
                "int32_t c, i;",
                "tail[2] = 0;"]
        sums = []
        for p in range(2):
            sums += ["s = bt[2 * c];",
                     "for (k = 0; k < 14; ++k) {",
                     f"  uint32_t x = (uint32_t)rp[k >> 2][{3 * p} + (k & 3)];",
                     "  int16_t wl, wh;",
                     "  memcpy(&wl, wc + 16 * k, 2);",
                     "  memcpy(&wh, wc + 16 * k + 2, 2);",
                     "  s += (int32_t)(int16_t)(uint16_t)(x & 0xFFFFu) * wl"
                     " + (int32_t)(int16_t)(uint16_t)(x >> 16) * wh;",
                     "}",
                     *plain_requant("s", "mult[{}]", "shift[{}]", "shift[{}]", ("out", "o1")[p])]
        plain = ["for (i = 0; i < npairs; ++i, r0 += 6, r1 += 6, r2 += 6, out += 2 * cout) {",
                 "  const int32_t* rp[4];",
                 "  int8_t* o1 = out + cout;",
                 f"  tail[0] = {_pack('r0[4]', 'r1[4]')};",
                 "  tail[1] = r2[4];",
                 f"  tail[3] = {_pack('r0[7]', 'r1[7]')};",
                 "  tail[4] = r2[7];",
                 "  rp[0] = r0;", "  rp[1] = r1;", "  rp[2] = r2;", "  rp[3] = tail;",
                 "  for (c = 0; c < cout; ++c) {",
                 "    const int8_t* wc = w + (c >> 2) * %d + 4 * (c & 3);" % RING_BLOCK,
                 "    int32_t k, s, r, m, sh, left, e, mask, thr;",
                 *["    " + y for y in sums],
                 "  }",
                 "}",
                 "return 0;"]
        asm = ["if (__builtin_expect(bt[2 * cout + 1] != 0 && lo == -128 && hi == 127 && (cout & 3) == 0 && cout > 0"
               " && npairs > 0, 1)) {",
               *["  " + y for y in _ring_asm()],
               "  return 0;",
               "}"]
        dsp = head + ["#if defined(__OPTIMIZE__) && !defined(__clang__)", *asm, "#endif", *plain]
        return {"dsp": dsp, "plain": head + plain}
