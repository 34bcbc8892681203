"""Arm micro-kernel: a run of output channels of an int8 conv or fully connected layer, four at a
time, requantised and stored through the output pointer:

  dot_s8xq(out, a, b, m, rows, n, sa, sb, sw, off, bias, mult, shift, zp, lo, hi)
  out[j] = the int8 byte j of dot_s8x4q for channel j (weights b + j * sw, bias[j], mult[j],
           shift[j]), for j < m (m a multiple of 4)

(dot_s8xqt: one multiplier and shift for every channel, per tensor). It is dot_s8x4q's loop
(aot/tir/intrin/arm.py) taken into the kernel: one call per pixel instead of one per four
channels, the requantised four stored by one vstrb.32 (not packed into a returned word and
stored byte by byte), bias, multipliers and shifts read by post-incremented vector loads, and
each weight row its own post-incremented pointer (no address arithmetic in the inner loop).
Helium only (aot/schedules/arm_pairs.py makes it for cortex-m55/m85); the plain body is the
loops, for the host.
"""
from __future__ import annotations

from ..expr import Const
from ...targets.cortex_m import core
from .arm import requant_c
from .base import TensorIntrin, per_tensor, register_intrin
from .gemmlowp import mve_clamp, mve_left, mve_rdbpot, mve_srdhm


def _mve_taps(sums):
    """The window rows of four weight rows, each input vector loaded once for the four (with
    sums: the weight sums the offset multiplies)."""
    def step(load):
        x = [f"int8x16_t va = {load('pa')};"] + [f"int8x16_t vb{j} = {load(f'pb{j}')};" for j in range(4)]
        x += [f"acc{j} = vmladavaq_s8(acc{j}, va, vb{j});" for j in range(4)]
        return x + ([f"bsum{j} = vaddvaq_s8(bsum{j}, vb{j});" for j in range(4)] if sums else [])
    return ["for (r = rows; r > 0; --r, ra += sa, rb += sb) {",
            "  const int8_t* pa = ra;",
            *[f"  const int8_t* pb{j} = rb{f' + {j} * sw' if j else ''};" for j in range(4)],
            "  int32_t k;",
            "  for (k = n >> 4; k > 0; --k) {",
            # the rows' pointers opaque to the compiler each step: four post-incremented pointers,
            # not one plus offsets past a load's immediate range (an add a load)
            # (a single step, n = 16, is left to the compiler: it drops the loop and the pointers)
            '    if (n > 16) {',
            '      __asm__("" : "+r"(pa), "+r"(pb0), "+r"(pb1), "+r"(pb2), "+r"(pb3));',
            '    }',
            *["    " + x for x in step(lambda q: f"vld1q_s8({q})")],
            "    pa += 16;", *[f"    pb{j} += 16;" for j in range(4)],
            "  }",
            "  if ((n & 15) != 0) {",
            *["    " + x for x in step(lambda q: f"vldrbq_z_s8({q}, p)")],
            "  }",
            "}"]


@register_intrin
class DotS8xRequant(TensorIntrin):
    name = "dot_s8xq"
    headers = {"mve": ("arm_mve.h",)}
    written_args = (0,)
    pointer_args = (0, 1, 2, 10, 11, 12)
    scale_args = (11, 12)      # mult, shift: arrays per channel (per_tensor: values)
    extent_arg = 3
    per_channel = True

    def last_offsets(self, args):
        m, rows, n, sa, sb, sw = args[3], args[4], args[5], args[6], args[7], args[8]
        one = Const(1, m.dtype)
        return [(0, m - one), (1, (rows - one) * sa + n - one), (2, (m - one) * sw + (rows - one) * sb + n - one)] + \
            [(k, m - one) for k in self.pointer_args[3:]]

    def match(self, loop, acc=None):
        return None, f"{self.name} replaces a channel loop of dot_s8x4q calls, not a loop"

    def variant_for(self, mcpu):
        return "mve" if core(mcpu).mve else "plain"

    def signature(self):
        ms = "const int32_t* mult, const int32_t* shift" if self.per_channel else "int32_t mult, int32_t shift"
        return (f"int32_t aot_{self.name}(int8_t* out, const int8_t* a, const int8_t* b, int32_t m, int32_t rows, "
                f"int32_t n, int32_t sa, int32_t sb, int32_t sw, int32_t off, const int32_t* bias, {ms}, "
                "int32_t zp, int32_t lo, int32_t hi)")

    def bodies(self):
        pc = self.per_channel
        mve = ["const mve_pred16_t p = vctp8q((uint32_t)(n & 15));",
               "const int32x4_t zero = vdupq_n_s32(0), vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);",
               *([] if pc else ["const int32x4_t sh = vdupq_n_s32(shift), left = vmaxq_s32(sh, zero), "
                                "right = vminq_s32(sh, zero);"]),
               "if (n <= 0) {",
               "  rows = 0;",
               "}",
               f"for (; m > 0; m -= 4, out += 4, b += 4 * sw, bias += 4{', mult += 4, shift += 4' if pc else ''}) {{",
               "  int32_t acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;",
               "  int32_t bsum0 = 0, bsum1 = 0, bsum2 = 0, bsum3 = 0;",
               "  const int8_t* ra = a;",
               "  const int8_t* rb = b;",
               "  int32_t r;",
               "  int32x4_t v;",
               *(["  int32x4_t sh, left, right;"] if pc else []),
               "  if (off != 0) {",
               *["    " + x for x in _mve_taps(True)],
               "  } else {",
               *["    " + x for x in _mve_taps(False)],
               "  }",
               "  v = vdupq_n_s32(acc0 + off * bsum0);",
               *[f"  v = vsetq_lane_s32(acc{j} + off * bsum{j}, v, {j});" for j in range(1, 4)],
               "  v = vaddq_s32(v, vld1q_s32(bias));",
               *(["  sh = vld1q_s32(shift);", "  left = vmaxq_s32(sh, zero);", "  right = vminq_s32(sh, zero);"]
                 if pc else []),
               f"  v = {mve_left('v', 'left')};",
               f"  v = {mve_srdhm('v', 'vld1q_s32(mult)' if pc else 'vdupq_n_s32(mult)')};",
               # half away from zero: minus one first on a negative value when right shifts (its sign bit)
               f"  v = {mve_rdbpot('v', 'right')};",
               f"  v = {mve_clamp('v', 'vlo', 'vhi')};",
               "  vstrbq_s32(out, v);",
               "}",
               "return 0;"]
        req = requant_c("s", "j", "mult[j]" if pc else "mult", "shift[j]" if pc else "shift")[:-1]
        plain = ["int32_t j, r, k, s, x, e, mask;", "int64_t ab;",
                 "for (j = 0; j < m; ++j) {",
                 "  s = 0;",
                 "  for (r = 0; r < rows; ++r) {",
                 "    for (k = 0; k < n; ++k) {",
                 "      s += ((int32_t)a[r * sa + k] + off) * (int32_t)b[j * sw + r * sb + k];",
                 "    }",
                 "  }",
                 *["  " + x for x in req],
                 "  out[j] = (int8_t)x;",
                 "}",
                 "return 0;"]
        return {"mve": mve, "plain": plain}


DotS8xRequantT = per_tensor(DotS8xRequant, """dot_s8xq with one multiplier and shift (int32 values) for every
    channel: per tensor.""")
