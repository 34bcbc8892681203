"""Arm micro-kernel for a byte copy: copy_s8(out, a, rows, n, so, sa) copies `rows` runs of n
bytes, row r from a + r * sa to out + r * so (a staged in-place kernel's copy back from its
scratch: aot/schedules/inplace_conv.py; a gathered window's row: aot/schedules/arm_gather.py).
Bodies:
- Helium (MVE): sixteen bytes a step, a shorter last step predicated (vctp8), instead of the three
  instructions a byte of the scalar loop the C compiler makes of it (it cannot vectorise the
  loop at -O2: the scratch and the output are not restrict);
- DSP: four bytes a step;
- plain C: the loops.
The two runs must not overlap (the rule copies only from a kernel's own scratch).
"""
from __future__ import annotations

from ..expr import Cast, Const, Load, substitute, walk
from ..simplify import const_value, simplify
from ..stmt import For, Store
from ...targets.cortex_m import core
from .arm import contiguous_in, flat_index, step
from .base import TensorIntrin, register_intrin


def _i32(e):
    return Cast("int32", e) if e.dtype != "int32" else e


@register_intrin
class CopyS8(TensorIntrin):
    name = "copy_s8"
    headers = {"mve": ("arm_mve.h",), "dsp": ("string.h",)}
    written_args = (0,)
    pointer_args = (0, 1)
    extent_arg = 3

    def last_offsets(self, args):
        rows, n, so, sa = args[2], args[3], args[4], args[5]
        one = Const(1, rows.dtype)
        return [(0, (rows - one) * so + n - one), (1, (rows - one) * sa + n - one)]

    def ordered_accesses(self, args):
        """What one call touches, in an order every body keeps, for aot/tir/inplace.py's replay
        (a row-staged kernel's copy back lands on its input): element k of the run read at step
        k, then written. Every body copies in increasing order and stores a group (16 bytes, 4, 1)
        after reading it, so a read of element j comes before the write of element k whenever
        j <= k. Only for one run (one row, or rows end to end in both operands); else None."""
        rows, n, so, sa = args[2:6]
        r, m = const_value(rows), const_value(n)
        if not (r == 1 or (m is not None and const_value(so) == m and const_value(sa) == m)):
            return None
        one = Const(1, "int32")
        return rows * n, [("read", 1, (), one), ("write", 0, (), one)]

    def match(self, loop, acc=None):
        """loop around one run of out[i] = a[j] (both one consecutive run of bytes under it), or
        a row loop around such a run, each operand a constant step further a row."""
        loops, s = [loop], loop.body
        while isinstance(s, For):
            loops.append(s)
            s = s.body
        if not (isinstance(s, Store) and isinstance(s.value, Load) and s.buffer.dtype in ("int8", "uint8")
                and s.value.dtype == s.buffer.dtype and s.value.buffer is not s.buffer):
            return None, "the loop body is not one byte copied from another buffer"
        for lp in loops[1:]:
            if any(x is o.var for e in (lp.min, lp.extent) for o in loops for x in walk(e)):
                return None, f"the bounds of {lp.var.name} depend on the copy's loops"
        out, src = Load(s.buffer, (s.index,)), s.value
        for run in (loops, loops[1:]):
            if run and all(contiguous_in(ld, run) for ld in (out, src)):
                break
        else:
            return None, "the copy is not one run, nor rows of one run"
        rows, steps = Const(1, "int32"), [Const(0, "int32"), Const(0, "int32")]
        if run is not loops:
            steps = [step(flat_index(ld), loop.var) for ld in (out, src)]
            if any(x is None or x < 0 for x in steps):
                return None, f"a row does not start a constant step after the previous along {loop.var.name}"
            rows, steps = _i32(loop.extent), [Const(x, "int32") for x in steps]
        at_min = {id(lp.var): lp.min for lp in loops}
        base = [Load(ld.buffer, tuple(simplify(substitute(i, at_min)) for i in ld.indices)) for ld in (out, src)]
        n = run[0].extent
        for lp in run[1:]:
            n = n * lp.extent
        return base + [rows, _i32(simplify(n))] + steps, None

    def variant_for(self, mcpu):
        return core(mcpu).variant

    def signature(self):
        return "int32_t aot_copy_s8(int8_t* out, const int8_t* a, int32_t rows, int32_t n, int32_t so, int32_t sa)"

    def bodies(self):
        # the empty asm statements that take the destination keep the stores before a predicated
        # store (and reload what it wrote): arm-none-eabi-gcc 12 models vstrbq_p as a store of all
        # 16 lanes, so a gathered window's zero-point fill beside it was dropped as dead
        mve = ['__asm__ volatile("" : : "r"(out) : "memory");',
               "for (; rows > 0; --rows, out += so, a += sa) {",
               "  int8_t* o = out;",
               "  const int8_t* i = a;",
               "  int32_t k;",
               "  for (k = n; k >= 16; k -= 16, o += 16, i += 16) {",
               "    vst1q_s8(o, vld1q_s8(i));",
               "  }",
               "  if (k > 0) {",
               "    mve_pred16_t p = vctp8q((uint32_t)k);",
               "    vstrbq_p_s8(o, vldrbq_z_s8(i, p), p);",
               '    __asm__ volatile("" : : "r"(o) : "memory");',
               "  }",
               "}",
               "return 0;"]
        # DSP cores: a 32-bit word at a time (memcpy of 4: one unaligned load and store), then bytes
        dsp = ["for (; rows > 0; --rows, out += so, a += sa) {",
               "  int8_t* o = out;",
               "  const int8_t* i = a;",
               "  int32_t k;",
               "  for (k = n; k >= 4; k -= 4, o += 4, i += 4) {",
               "    memcpy(o, i, 4);",
               "  }",
               "  for (; k > 0; --k) {",
               "    *o++ = *i++;",
               "  }",
               "}",
               "return 0;"]
        plain = ["int32_t r, k;",
                 "for (r = 0; r < rows; ++r) {",
                 "  for (k = 0; k < n; ++k) {",
                 "    out[r * so + k] = a[r * sa + k];",
                 "  }",
                 "}",
                 "return 0;"]
        return {"mve": mve, "dsp": dsp, "plain": plain}
