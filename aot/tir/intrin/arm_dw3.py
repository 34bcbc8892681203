"""Arm micro-kernel for a whole 3x3 int8 depthwise convolution, four channels a call, row by row
through a ring of widened input rows (the DSP cores'):

  dw3_s8r(out, a, b, bias, mult, shift, scratch, h, w, oh, ow, stride, pt, pl, off, zp, lo, hi,
          a_row, a_col, o_row, o_col)
  out[y*o_row + x*o_col + q] = requant(bias[2q] + sum over r, t < 3 of
                                       (a[i*a_row + j*a_col + q] + off) * W[q][r][t])
      for q < 4, y < oh, x < ow, i = y*stride - pt + r < h, j = x*stride - pl + t < w (both >= 0)

The "rows" are the ring's: the input's rows (a_row = W*C, a_col = C), or its columns on a map
taller than wide (a_row = C, a_col = W*C, the weights transposed too), so that a row is the
longer side. out, a and b point at the call's channel group, b at its weights laid out at
compile time (Dw3Wide, aot/schedules/arm_dw.py: each channel's rows as the int16 pairs (w0, w1)
and (w1, w2), doubled, 96 bytes a group), so that a call builds no weight words: the four
channels' assembly copies them as they are, the other paths halve them; the requantisation comes from
the table (requant_table.py, per channel: a channel whose folded form does not hold, c = 0,
takes the exact one).

dw_s8f (arm_dw.py) runs a pixel's channels a call and widens every input word at each of the
nine taps that read it. This kernel widens each input row once: its four channels become four
planes of int16 (the offset added, the padding columns 0) in ring slot i % 3 of the scratch, so
that an output row reads its three input rows from the ring. In a plane two neighbouring columns
are one word, and a weight row's taps (w0, w1) and (w1, w2) two more (packed at compile time), so
two output pixels take four DSP MACs a row:
  stride 1: y0 = smlad(c01, w01) + c2 * w2,     y1 = c1 * w0 + smlad(c23, w12)
  stride 2: y0 = smlad(c01, w01) + c2 * w2,     y1 = smlad(c23, w01) + c4 * w2
(c01 the word of columns 0 and 1 from the pair's first; the single products smlabt/smlatb). A
clipped window is a whole one whose rows outside the input weigh 0 (the ring zeroed first).

At stride 1, where GCC optimises and the folded form clamps to int8's whole range, four
neighbours are computed at a time in assembly (three words a slot shared by four outputs, the
weights and bias doubled so that SMMLAR takes the sum as it is); where every one of the four
channels folds and a row is whole fours, one piece of assembly takes the four channels' rows
(one of three, by the ring slot of the window's top row), its weights one table a call: a
window row below the input is then a zero row of the ring rather than a zero weight. The
stride-2 convs call the same kernel as dw3_s8r2, whose four channels' assembly is stride 2's:
four outputs read five words a slot (output j the word of columns 2j, 2j + 1 and the first
column of the next), each input row widened once for the one or two output rows that read it.

Rows are widened just before the first output row that reads them, so at output row y the
input rows read are those below y*stride - pt + 3 and the rows overwritten (in place) those of
output rows up to y: with pt + stride <= 3 an output row never lands on an input row the ring
has not taken yet. ordered_accesses says so for aot/tir/inplace.py's replay, which proves the
kernel in place without a staging copy.
"""
from __future__ import annotations

from ..expr import Const
from ...targets.cortex_m import core
from .arm_dw import flat_fn, odd_fn
from .arm_q15 import folded_fn
from .gemmlowp import mbqm_folded2_asm, mbqm_folded_asm
from .base import TensorIntrin, register_intrin


def _i32(v):
    return Const(int(v), "int32")


# a call's weights (Dw3Wide, aot/schedules/arm_dw.py): four channels' three rows, (w0, w1) and
# (w1, w2) each, doubled int16 pairs
WEIGHT_BYTES = 96


def ring_words(ow: int, stride: int) -> int:
    """int32 words of scratch one call needs: four int16 planes, each the column pairs the output
    pairs read, a word of each of the three ring slots a pair."""
    return 12 * (stride * ((ow + 1) // 2) + 1)


P = "aot_dw3_s8r"


def _requant(v):
    return f"(int8_t)(cc != 0 ? {P}_fast({v}, m, e, cc, lo, hi) : {P}_exact({v}, m, e, zp, lo, hi))"


def _asm_pairs(stride):
    """C lines: the whole-window row's pairs in Thumb-2 assembly (13 registers: the pair pointer,
    the output pointer and its stride, slots 0 and 1's weight words, two sums, three temporaries
    and the row's constants rq: bias, multiplier, cc, shift, slot 2's weight words, the output's
    end), both pixels requantised by the folded form into int8's whole range."""
    nxt = 12 * stride             # bytes from a pair's first column pair to the next pair's

    def row(slot, wa, wb):
        lo, hi = 4 * slot, 4 * slot + 12
        lines = [f'"ldr %[t0], [%[p], #{lo}]\\n"', f'"ldr %[t1], [%[p], #{hi}]\\n"']
        if stride == 2:
            lines.append(f'"ldr %[x], [%[p], #{hi + 12}]\\n"')
            mac = [f'"smlad %[a0], %[t0], {wa}, %[a0]\\n"', f'"smlabt %[a0], %[t1], {wb}, %[a0]\\n"',
                   f'"smlad %[a1], %[t1], {wa}, %[a1]\\n"', f'"smlabt %[a1], %[x], {wb}, %[a1]\\n"']
        else:
            mac = [f'"smlad %[a0], %[t0], {wa}, %[a0]\\n"', f'"smlabt %[a0], %[t1], {wb}, %[a0]\\n"',
                   f'"smlatb %[a1], %[t0], {wa}, %[a1]\\n"', f'"smlad %[a1], %[t1], {wb}, %[a1]\\n"']
        return lines + mac
    # slot 2's weights come from rq: w2a into a1's place is not free, so two temporaries load them
    slot2 = ['"ldr %[t0], [%[p], #8]\\n"', '"ldr %[t1], [%[p], #20]\\n"']
    if stride == 2:
        slot2 += ['"ldr %[x], [%[rq], #16]\\n"',
                  '"smlad %[a0], %[t0], %[x], %[a0]\\n"',
                  '"smlad %[a1], %[t1], %[x], %[a1]\\n"',
                  '"ldr %[t0], [%[p], #32]\\n"',
                  '"ldr %[x], [%[rq], #20]\\n"',
                  '"smlabt %[a0], %[t1], %[x], %[a0]\\n"',
                  '"smlabt %[a1], %[t0], %[x], %[a1]\\n"']
    else:
        slot2 += ['"ldr %[x], [%[rq], #16]\\n"',
                  '"smlad %[a0], %[t0], %[x], %[a0]\\n"',
                  '"smlatb %[a1], %[t0], %[x], %[a1]\\n"',
                  '"ldr %[x], [%[rq], #20]\\n"',
                  '"smlabt %[a0], %[t1], %[x], %[a0]\\n"',
                  '"smlad %[a1], %[t1], %[x], %[a1]\\n"']
    # loads side by side where they can be (a load after a load pipelines on these cores)
    first = row(0, "%[w0a]", "%[w0b]")
    body = ['".p2align 2\\n"', '"1:\\n"',
            *first[:2], '"ldr %[a0], [%[rq]]\\n"',            # slot 0's words, the bias
            '"mov %[a1], %[a0]\\n"',
            *first[2:], *row(1, "%[w1a]", "%[w1b]"), *slot2,
            f'"add %[p], %[p], #{nxt}\\n"',
            '"ldrd %[t0], %[t1], [%[rq], #4]\\n"',            # m, cc
            *mbqm_folded_asm("a0", "x", "t0", "t1", None)[:3],
            *mbqm_folded_asm("a1", "x", "t0", "t1", None)[:3],
            '"ldr %[t0], [%[rq], #12]\\n"',                   # e, and the end of the pairs
            '"ldr %[t1], [%[rq], #24]\\n"',
            mbqm_folded_asm("a0", "x", "t0", "t1", "t0")[3],
            mbqm_folded_asm("a1", "x", "t0", "t1", "t0")[3],
            '"ssat %[a0], #8, %[a0]\\n"',
            '"ssat %[a1], #8, %[a1]\\n"',
            '"strb %[a0], [%[o]]\\n"',
            '"strb %[a1], [%[o], %[c]]\\n"',
            '"add %[o], %[o], %[c], lsl #1\\n"',
            '"cmp %[o], %[t1]\\n"',
            '"bne 1b\\n"']
    return ["__asm__ volatile(",
            *["  " + x for x in body],
            "  : [p] \"+r\"(pp), [o] \"+r\"(o), [a0] \"=&r\"(acc0), [a1] \"=&r\"(acc1), [t0] \"=&r\"(t0), "
            "[t1] \"=&r\"(t1), [x] \"=&r\"(tx)",
            "  : [c] \"r\"(o_col), [w0a] \"r\"(wr[0]), [w0b] \"r\"(wr[1]), [w1a] \"r\"(wr[2]), [w1b] \"r\"(wr[3]), "
            "[rq] \"r\"(rq)",
            "  : \"cc\", \"memory\");"]


def _asm_quads(row=False, rot=0, stride=1):
    """C lines: a stride-1 whole-window row's outputs four at a time in Thumb-2 assembly. Four
    neighbours read three words of each slot (columns 0-1, 2-3, 4-5), against two for each of two
    pairs; their sums start from the bias in one register (the first MACs accumulate onto it, no
    copies). The weights and bias in rq are doubled, so that the sums are the folded form's
    doubled sum (|sum| < 2^30 where it holds: doubling keeps its sign, and |2w| <= 256 an int16
    lane): no shift before each SMMLAR. rq: 2*bias, m, cc, e, the three slots' doubled weight
    words (w01, w12 each), the output's end. row: the four channels' rows in one go, rq's entry
    of 16 words a channel, which also holds the moves to the next channel's plane and output
    (plane bytes less the row's, 1 less the row's output bytes) and the end of the entries: no
    C between the channels. rot: the ring slot of the window's top row (the row's words at
    4 * ((rot + r) % 3) for window row r, rq's weights in window-row order: one table a call,
    not one rotated a row). stride 2 (row only): the four read five words of each slot (columns
    0-1 .. 8-9), output j the words j (w01) and j + 1's first column (w2): a third sum starts
    from the bias loaded twice, the first three from the first copy before its MACs."""
    def slot2(k):
        at = 4 * ((rot + k) % 3)
        lines = [f'"ldr %[t0], [%[p], #{at}]\\n"', f'"ldr %[t1], [%[p], #{at + 12}]\\n"',
                 f'"ldr %[t2], [%[p], #{at + 24}]\\n"',
                 f'"ldr %[w0], [%[rq], #{16 + 8 * k}]\\n"', f'"ldr %[w1], [%[rq], #{20 + 8 * k}]\\n"']
        if k == 0:
            lines[:0] = ['"ldr %[a0], [%[rq]]\\n"', '"ldr %[a3], [%[rq]]\\n"']
            first = ['"smlad %[a1], %[t1], %[w0], %[a0]\\n"', '"smlad %[a2], %[t2], %[w0], %[a0]\\n"',
                     '"smlad %[a0], %[t0], %[w0], %[a0]\\n"', '"smlabt %[a0], %[t1], %[w1], %[a0]\\n"']
        else:
            first = ['"smlad %[a0], %[t0], %[w0], %[a0]\\n"', '"smlabt %[a0], %[t1], %[w1], %[a0]\\n"',
                     '"smlad %[a1], %[t1], %[w0], %[a1]\\n"', '"smlad %[a2], %[t2], %[w0], %[a2]\\n"']
        return lines + first + [f'"ldr %[t0], [%[p], #{at + 36}]\\n"', f'"ldr %[t1], [%[p], #{at + 48}]\\n"',
                                '"smlabt %[a1], %[t2], %[w1], %[a1]\\n"', '"smlabt %[a2], %[t0], %[w1], %[a2]\\n"',
                                '"smlad %[a3], %[t0], %[w0], %[a3]\\n"', '"smlabt %[a3], %[t1], %[w1], %[a3]\\n"']

    def slot(k):
        if stride == 2:
            return slot2(k)
        at = 4 * ((rot + k) % 3)
        lines = [f'"ldr %[t0], [%[p], #{at}]\\n"', f'"ldr %[t1], [%[p], #{at + 12}]\\n"',
                 f'"ldr %[t2], [%[p], #{at + 24}]\\n"',
                 f'"ldr %[w0], [%[rq], #{16 + 8 * k}]\\n"', f'"ldr %[w1], [%[rq], #{20 + 8 * k}]\\n"']
        if k == 0:      # every sum from the bias (a0's, loaded with the slot's words)
            lines.insert(0, '"ldr %[a0], [%[rq]]\\n"')
            first = ['"smlatb %[a1], %[t0], %[w0], %[a0]\\n"', '"smlad %[a2], %[t1], %[w0], %[a0]\\n"',
                     '"smlatb %[a3], %[t1], %[w0], %[a0]\\n"', '"smlad %[a0], %[t0], %[w0], %[a0]\\n"']
        else:
            first = ['"smlad %[a0], %[t0], %[w0], %[a0]\\n"', '"smlatb %[a1], %[t0], %[w0], %[a1]\\n"',
                     '"smlad %[a2], %[t1], %[w0], %[a2]\\n"', '"smlatb %[a3], %[t1], %[w0], %[a3]\\n"']
        return lines + first + ['"smlabt %[a0], %[t1], %[w1], %[a0]\\n"', '"smlad %[a1], %[t1], %[w1], %[a1]\\n"',
                                '"smlabt %[a2], %[t2], %[w1], %[a2]\\n"', '"smlad %[a3], %[t2], %[w1], %[a3]\\n"']
    acc = ("a0", "a1", "a2", "a3")
    folded = [mbqm_folded2_asm(a, "w0", "t0", "t1", "t2") for a in acc]
    body = ['".p2align 2\\n"', '"1:\\n"', *slot(0), *slot(1), *slot(2),
            f'"add %[p], %[p], #{24 * stride}\\n"',
            # the requantisation's constants and the output's end side by side (loads pipeline)
            '"ldr %[t0], [%[rq], #4]\\n"', '"ldr %[t1], [%[rq], #8]\\n"', '"ldr %[t2], [%[rq], #12]\\n"',
            '"ldr %[w1], [%[rq], #40]\\n"',
            *[x for i in range(4) for x in folded[i][:2]],
            *[folded[i][2] for i in range(4)],
            *[f'"ssat %[{a}], #8, %[{a}]\\n"' for a in acc],
            '"strb %[a0], [%[o]]\\n"', '"strb %[a1], [%[o], %[c]]\\n"', '"add %[o], %[o], %[c], lsl #1\\n"',
            '"strb %[a2], [%[o]]\\n"', '"strb %[a3], [%[o], %[c]]\\n"', '"add %[o], %[o], %[c], lsl #1\\n"',
            '"cmp %[o], %[w1]\\n"',
            '"bne 1b\\n"']
    if row:
        body += ['"ldr %[t0], [%[rq], #44]\\n"', '"ldr %[t1], [%[rq], #48]\\n"', '"ldr %[t2], [%[rq], #52]\\n"',
                 '"add %[p], %[p], %[t0]\\n"', '"add %[o], %[o], %[t1]\\n"', '"add %[rq], %[rq], #64\\n"',
                 '"cmp %[rq], %[t2]\\n"', '"bne 1b\\n"']
    rq_out, rq_in = (', [rq] \"+l\"(rq)', "") if row else ("", ', [rq] \"r\"(rq)')
    return ["__asm__ volatile(",
            *["  " + x for x in body],
            "  : [p] \"+l\"(pp), [o] \"+r\"(o), [a0] \"=&r\"(acc0), [a1] \"=&r\"(acc1), [a2] \"=&r\"(acc2), "
            "[a3] \"=&r\"(acc3), [t0] \"=&r\"(t0), [t1] \"=&r\"(t1), [t2] \"=&r\"(t2), [w0] \"=&r\"(w0), "
            f"[w1] \"=&r\"(w1){rq_out}",
            f"  : [c] \"r\"(o_col){rq_in}",
            "  : \"cc\", \"memory\");"]


def _asm_widen():
    """C lines: the column pairs (s, s + 1) from s to hi2 (at least one), both columns inside
    the row, widened into the four planes at d in Thumb-2 assembly: the words of planes 0 and 1
    (the even and odd channels' first columns' halves) by PKHBT, 2 and 3 by PKHTB, where GCC's
    C takes two instructions a half and spills the strides. Two pairs a loop (an odd count
    enters at the second), the plane pointers stepped by the stores' post-increments: two
    instructions of loop a pair of pairs rather than four a pair (VWW on the M4 -26 K)."""
    one = ['"ldr %[x0], [%[ar]]\\n"', '"ldr %[x1], [%[ar], %[ac]]\\n"',
           '"add %[ar], %[ar], %[ac], lsl #1\\n"',
           '"sxtab16 %[e0], %[off2], %[x0]\\n"', '"sxtab16 %[e1], %[off2], %[x1]\\n"',
           '"sxtab16 %[x0], %[off2], %[x0], ror #8\\n"', '"sxtab16 %[x1], %[off2], %[x1], ror #8\\n"',
           '"pkhbt %[t], %[e0], %[e1], lsl #16\\n"', '"pkhtb %[e1], %[e1], %[e0], asr #16\\n"',
           '"pkhbt %[e0], %[x0], %[x1], lsl #16\\n"', '"pkhtb %[x1], %[x1], %[x0], asr #16\\n"',
           '"str %[e0], [%[d], %[pl]]\\n"', '"str %[t], [%[d]], #12\\n"',
           '"str %[x1], [%[d2], %[pl]]\\n"', '"str %[e1], [%[d2]], #12\\n"']
    # an odd count of pairs: their bytes 12 n, bit 2 set
    body = ['"sub %[t], %[de], %[d]\\n"', '"tst %[t], #4\\n"', '"bne 2f\\n"',
            '".p2align 2\\n"', '"1:\\n"', *one, '"2:\\n"', *one,
            '"cmp %[d], %[de]\\n"', '"bne 1b\\n"']
    return ["{",
            "  const int8_t* pa = ar + (s - pl) * a_col;",
            "  unsigned char* pd = d;",
            "  unsigned char* pd2 = d + 2 * plane;",
            "  int32_t x0, x1, e0, e1, t;",
            "  __asm__ volatile(",
            *["    " + x for x in body],
            "    : [ar] \"+r\"(pa), [d] \"+r\"(pd), [d2] \"+r\"(pd2), [x0] \"=&r\"(x0), [x1] \"=&r\"(x1), "
            "[e0] \"=&r\"(e0), [e1] \"=&r\"(e1), [t] \"=&r\"(t)",
            "    : [ac] \"r\"(a_col), [off2] \"r\"(off2), [pl] \"r\"(plane), [de] \"r\"(d + 6 * (hi2 - s))",
            "    : \"cc\", \"memory\");",
            "  (void)pa; (void)pd; (void)pd2; (void)x0; (void)x1; (void)e0; (void)e1; (void)t;",
            "}"]


def _pair_c(stride, ptr_of, rows):
    """C lines: a pair's sums acc0, acc1 over `rows` (each: the byte offset of its slot in a
    column pair, its weight words)."""
    out = []
    for slot, a, b in rows:
        out.append(f"q0 = {P}_ld({ptr_of} + {slot}); q1 = {P}_ld({ptr_of} + {slot} + 12);")
        if stride == 1:
            out += [f"acc0 = __smlad(q0, {a}, acc0); acc0 = __smlabt(q1, {b}, acc0);",
                    f"acc1 = __smlatb(q0, {a}, acc1); acc1 = __smlad(q1, {b}, acc1);"]
        else:
            out += [f"q2 = {P}_ld({ptr_of} + {slot} + 24);",
                    f"acc0 = __smlad(q0, {a}, acc0); acc0 = __smlabt(q1, {b}, acc0);",
                    f"acc1 = __smlad(q1, {a}, acc1); acc1 = __smlabt(q2, {b}, acc1);"]
    return out


def _one_c(stride, ptr_of, rows):
    """C lines: the sum acc0 of a row's last pixel (an odd width) over `rows`, as _pair_c."""
    return [f"acc0 = __smlad({P}_ld({ptr_of} + {slot}), {a}, acc0); "
            f"acc0 = __smlabt({P}_ld({ptr_of} + {slot} + 12), {b}, acc0);" for slot, a, b in rows]


def _row_dsp(stride):
    """C lines: channel q's output row over the three ring slots, wr the weight words of the
    window rows they hold: its whole pairs by assembly where GCC optimises and the folded form
    clamps to int8's whole range (the constants in rq), else by C; an odd width's last pixel
    alone."""
    rows = [(f"{4 * k}", f"wr[{2 * k}]", f"wr[{2 * k + 1}]") for k in range(3)]
    q2 = [] if stride == 2 else ["(void)q2;"]
    return [
        "p = done;",
        "#if defined(__GNUC__) && defined(__OPTIMIZE__)",
        *(["if (asm_ok && cc != 0 && p == 0 && full >= 2) {",        # whole quads of outputs
           "  int32_t* rq = rqq + 16 * q;",
           "  int32_t acc0, acc1, acc2, acc3, t0, t1, t2, w0, w1;",
           *[f"  rq[{4 + j}] = __sadd16(wr[{j}], wr[{j}]);" for j in range(6)],
           "  rq[10] = (int32_t)(intptr_t)(o + 4 * (full / 2) * o_col);",
           *["  " + x for x in _asm_quads()],
           "  (void)acc0; (void)acc1; (void)acc2; (void)acc3; (void)t0; (void)t1; (void)t2; (void)w0; (void)w1;",
           "  p = full & ~1;",
           "}"] if stride == 1 else []),
        "if (asm_ok && cc != 0 && p < full) {",
        "  int32_t* rq = rqs + 8 * q;",
        "  int32_t acc0, acc1, t0, t1, tx;",
        "  rq[4] = wr[4]; rq[5] = wr[5];",
        "  rq[6] = (int32_t)(intptr_t)(o + 2 * (full - p) * o_col);",
        *["  " + x for x in _asm_pairs(stride)],
        "  (void)acc0; (void)acc1; (void)t0; (void)t1; (void)tx;",
        "  p = full;",
        "}",
        "#endif",
        f"for (; p < full; ++p, pp += {12 * stride}, o += 2 * o_col) {{",
        "  int32_t acc0 = b0, acc1 = b0, q0, q1, q2 = 0;",
        *["  " + x for x in _pair_c(stride, "pp", rows) + q2],
        f"  o[0] = {_requant('acc0')};",
        f"  o[o_col] = {_requant('acc1')};",
        "}",
        "if (ow & 1) {",
        "  int32_t acc0 = b0;",
        *["  " + x for x in _one_c(stride, "pp", rows)],
        f"  o[0] = {_requant('acc0')};",
        "}",
    ]


@register_intrin
class Dw3S8R(TensorIntrin):
    name = "dw3_s8r"
    ring_stride = 1         # the stride its four channels' assembly takes (rows4)
    headers = {"dsp": ("arm_acle.h", "string.h")}
    pointer_args = (0, 1, 2, 3, 4, 5, 6)
    written_args = (0, 6)

    def variant_for(self, mcpu):
        return "dsp" if core(mcpu).variant == "dsp" else "plain"

    def signature(self):
        return ("int32_t aot_dw3_s8r(int8_t* out, const int8_t* a, const int8_t* b, const int32_t* bias, "
                "const int32_t* mult, const int32_t* shift, int32_t* scratch, int32_t h, int32_t w, int32_t oh, "
                "int32_t ow, int32_t stride, int32_t pt, int32_t pl, int32_t off, int32_t zp, int32_t lo, int32_t hi, "
                "int32_t a_row, int32_t a_col, int32_t o_row, int32_t o_col)")

    def match(self, loop, acc=None):
        return None, "dw3_s8r is made by the depthwise rows rule (aot/schedules/arm_dw.py), not matched"

    def last_offsets(self, args):
        """The input's and output's last pixel's fourth channel, the nine taps', the table's
        eight words, the scratch's ring."""
        h, w, oh, ow, stride = args[7:12]
        a_row, a_col, o_row, o_col = args[18:22]
        one, three = _i32(1), _i32(3)
        ring = _i32(ring_words(_const(ow), _const(stride)) - 1)
        return [(0, (oh - one) * o_row + (ow - one) * o_col + three), (1, (h - one) * a_row + (w - one) * a_col + three),
                (2, _i32(WEIGHT_BYTES - 1)), (3, _i32(7)), (4, three), (5, three), (6, ring)]

    def ordered_accesses(self, args):
        """(steps, accesses) for aot/tir/inplace.py: step y is output row y. It reads input rows
        y*stride .. y*stride + stride - 1, and at every step the rows below the last output
        row's (a VALID conv's last two), all nine taps, the table and the constants, then
        writes the row's pixels, four channels each. The ring takes row i at the first output
        row whose window reaches it, which is no later than step i // stride when pt + stride
        <= 3 (the rule's condition): every read comes no later than said."""
        h, w, oh, ow, stride = args[7:12]
        a_row, a_col, o_row, o_col = args[18:22]
        one, three, four, zero = _i32(1), _i32(3), _i32(4), _i32(0)
        rest = _i32(max(_const(h) - _const(oh) * _const(stride), 0))
        cols = ((w, a_col), (four, one))
        return oh, [("read", 1, ((stride, a_row), *cols), stride * a_row),
                    ("read", 1, ((rest, a_row), *cols), zero, oh * stride * a_row),
                    ("read", 2, ((_i32(WEIGHT_BYTES), one),), zero),
                    ("read", 3, ((_i32(8), one),), zero), ("read", 4, ((four, one),), zero),
                    ("read", 5, ((four, one),), zero),
                    ("write", 0, ((ow, o_col), (four, one)), o_row)]

    def c_source(self):
        helpers = [*folded_fn(f"{P}_fast"), *flat_fn(f"{P}_exact", "__ARM_FEATURE_DSP"),
                   # the scratch is bytes: its int16 planes read and written through memcpy
                   "#if defined(__ARM_FEATURE_DSP)",
                   f"static inline int32_t {P}_ld(const unsigned char* p) {{",
                   "  int32_t v;", "  memcpy(&v, p, 4);", "  return v;", "}",
                   *odd_fn(f"{P}_odd"),
                   "#else",
                   f"static inline int32_t {P}_h(const unsigned char* p) {{",
                   "  int16_t v;", "  memcpy(&v, p, 2);", "  return v;", "}",
                   "#endif"]
        # once for both (a model may call dw3_s8r and dw3_s8r2 from one file)
        guard = ["#ifndef AOT_DW3_S8R_HELPERS", "#define AOT_DW3_S8R_HELPERS", *helpers, "#endif"]
        return "\n".join(["#include <string.h>", *guard]) + "\n" + super().c_source()

    def _head(self):
        return ["int32_t np = (ow + 1) / 2;",                      # output pairs, the last maybe half
                "int32_t ncp = stride * np + 1;",                  # the column pairs they read
                "int32_t plane = 12 * ncp;",                       # a plane's bytes: 3 slots a column pair
                "int32_t k, q, r, p, next = 0;",
                "unsigned char* ring = (unsigned char*)scratch;",
                "const int32_t* bt = bias;"]

    def bodies(self):
        def widen_pair(pad, guarded):
            """a column pair (s, s + 1) into the four planes at d (guarded: columns outside the
            row are 0)."""
            load = []
            for k, (j, e, o) in enumerate((("j", "e0", "o0"), ("j + 1", "e1", "o1"))):
                get = [f"memcpy(&x, ar + ({j}) * a_col, 4);",
                       f"{e} = __sxtab16(off2, (int32_t)x); {o} = {P}_odd(off2, x);"]
                load += ([f"if ({j} >= 0 && {j} < w) {{", *["  " + y for y in get], "}"] if guarded else get)
            return [pad + y for y in [
                "int32_t j = s - pl, e0 = 0, o0 = 0, e1 = 0, o1 = 0, v;",
                "uint32_t x;",
                *load,
                "v = (int32_t)(((uint32_t)e0 & 0xFFFFu) | ((uint32_t)e1 << 16));",        # PKHBT
                "memcpy(d, &v, 4);",
                "v = (int32_t)(((uint32_t)o0 & 0xFFFFu) | ((uint32_t)o1 << 16));",
                "memcpy(d + plane, &v, 4);",
                "v = (int32_t)(((uint32_t)e1 & 0xFFFF0000u) | ((uint32_t)e0 >> 16));",    # PKHTB
                "memcpy(d + 2 * plane, &v, 4);",
                "v = (int32_t)(((uint32_t)o1 & 0xFFFF0000u) | ((uint32_t)o0 >> 16));",
                "memcpy(d + 3 * plane, &v, 4);"]]
        widen = [
            # input row `next` into ring slot next % 3: column s of a plane holds input column
            # s - pl, the offset added (|x + off| <= 255), 0 outside the row; a column pair is
            # one word of each plane, the three slots' words side by side. The pairs with both
            # columns inside go without a test.
            "for (; next <= top + 2 && next < h; ++next) {",
            "  unsigned char* d0 = ring + 4 * (next % 3);",
            "  const int8_t* ar = a + next * a_row;",
            "  int32_t s;",
            # at most one padding column on the left: the row's pairs in a known order, without
            # the generic pair's tests (a left pair of (pad, 0), the inside ones, then (w - 1,
            # pad) or none of the row). Single-issue cores only: VWW on the M4 -10 K, on the M33
            # -27 K; on the M7 VWW -18 K but KWS +13 K
            "#if defined(__GNUC__) && defined(__OPTIMIZE__) && defined(AOT_CORTEX_M_SINGLE_ISSUE)",
            "  if (lo2 < hi2 && pl <= 1) {",
            "    unsigned char* d = d0;",
            "    uint32_t x, v;",
            "    int32_t e0, o0;",
            "    if (pl == 1) {",                                 # (pad, column 0): the pairs' top halves
            "      memcpy(&x, ar, 4);",
            f"      e0 = __sxtab16(off2, (int32_t)x); o0 = {P}_odd(off2, x);",
            "      v = (uint32_t)e0 << 16; memcpy(d, &v, 4);",
            "      v = (uint32_t)o0 << 16; memcpy(d + plane, &v, 4);",
            "      v = (uint32_t)e0 & 0xFFFF0000u; memcpy(d + 2 * plane, &v, 4);",
            "      v = (uint32_t)o0 & 0xFFFF0000u; memcpy(d + 3 * plane, &v, 4);",
            "    }",
            "    s = lo2;",
            "    d = d0 + 6 * s;",
            *["    " + x for x in _asm_widen()],
            "    s = hi2;",
            "    d = d0 + 6 * s;",
            "    if (s < 2 * ncp && s - pl == w - 1) {",         # (w - 1, pad): the bottom halves
            "      memcpy(&x, ar + (w - 1) * a_col, 4);",
            f"      e0 = __sxtab16(off2, (int32_t)x); o0 = {P}_odd(off2, x);",
            "      v = (uint32_t)e0 & 0xFFFFu; memcpy(d, &v, 4);",
            "      v = (uint32_t)o0 & 0xFFFFu; memcpy(d + plane, &v, 4);",
            "      v = (uint32_t)e0 >> 16; memcpy(d + 2 * plane, &v, 4);",
            "      v = (uint32_t)o0 >> 16; memcpy(d + 3 * plane, &v, 4);",
            "      s += 2;",
            "      d += 12;",
            "    }",
            "    for (v = 0; s < 2 * ncp; s += 2, d += 12) {",     # pairs right of the row
            "      memcpy(d, &v, 4); memcpy(d + plane, &v, 4); memcpy(d + 2 * plane, &v, 4); memcpy(d + 3 * plane, &v, 4);",
            "    }",
            "    continue;",
            "  }",
            "#endif",
            "  for (s = 0; s < 2 * ncp; s += 2) {",
            "    unsigned char* d = d0 + 6 * s;",
            "    if (s == lo2 && lo2 < hi2) {",
            "#if defined(__GNUC__) && defined(__OPTIMIZE__)",
            *["      " + x for x in _asm_widen()],
            "      d += 6 * (hi2 - s);",
            "      s = hi2;",
            "#else",
            "      for (; s < hi2; s += 2, d += 12) {",
            *widen_pair("        ", False),
            "      }",
            "#endif",
            "      if (s >= 2 * ncp) {",
            "        break;",
            "      }",
            "    }",
            *widen_pair("    ", True),
            "  }",
            "}",
            # a window row below the input: a zero row in its slot (the ones above the input are
            # the memset's), which the four channels' assembly weighs as any other
            "#if defined(__GNUC__) && defined(__OPTIMIZE__)",
            "for (; rows4 && next <= top + 2; ++next) {",
            "  unsigned char* d0 = ring + 4 * (next % 3);",
            "  unsigned char* de = d0 + 4 * plane;",       # the four planes one after another
            "  for (; d0 != de; d0 += 12) {",
            "    memset(d0, 0, 4);",
            "  }",
            "}",
            "#endif",
        ]
        dsp = [*self._head(),
               "int32_t full = ow / 2;",                            # the whole pairs
               "int32_t lo2 = pl + (pl & 1), hi2 = (w + pl) & ~1;",  # the column pairs inside a row
               "int32_t done;",                                     # a row's pairs the four channels' assembly did
               "int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) * 0x10001u);",
               # each channel's weight rows as (w0, w1) and (w1, w2) int16 pairs (wq: b's words
               # halved), and as the ring's slots hold them when the top row lies in slot t:
               # ws[24 t + 6 q + 2 sl]
               "int32_t wq[24], ws[72], wz[24];",
               # the folded form into int8's whole range: the assembly's; its constants a channel
               "#if defined(__GNUC__) && defined(__OPTIMIZE__)",
               "int32_t asm_ok = lo == -128 && hi == 127;",
               "int32_t rqs[32], rqq[64];",
               # every channel's folded form: the four channels' rows in one piece of assembly
               "int32_t asm4 = asm_ok && bt[1] != 0 && bt[3] != 0 && bt[5] != 0 && bt[7] != 0;",
               # (an odd width's last pixels take the channels' own path anyway: its setup a
               # channel would then be paid twice)
               f"int32_t rows4 = asm4 && stride == {self.ring_stride} && full >= 2 && (ow & 3) == 0;",
               "for (q = 0; q < 4; ++q) {",
               "  rqs[8 * q] = bt[2 * q]; rqs[8 * q + 1] = mult[q]; rqs[8 * q + 2] = bt[2 * q + 1];",
               "  rqs[8 * q + 3] = shift[q];",
               # the quads' doubled bias (unsigned: a channel of the exact form may not fit, unused)
               "  rqq[16 * q] = (int32_t)((uint32_t)bt[2 * q] << 1); rqq[16 * q + 1] = mult[q];",
               "  rqq[16 * q + 2] = bt[2 * q + 1]; rqq[16 * q + 3] = shift[q];",
               f"  rqq[16 * q + 11] = plane - {24 * self.ring_stride} * (full / 2);",
               "  rqq[16 * q + 12] = 1 - 4 * (full / 2) * o_col;",
               "  rqq[16 * q + 13] = (int32_t)(intptr_t)(rqq + 64);",
               # the doubled weights in window-row order, b's own (a window's rows outside the
               # input are zero rows of the ring, so that a clipped window needs no weights of its own)
               "  if (rows4) {",
               "    memcpy(rqq + 16 * q + 4, b + 24 * q, 24);",
               "  }",
               "}",
               "#endif",
               # the halved weights and the rotated table only for the channels' own path (not
               # run where the four channels' assembly takes whole rows)
               "#if defined(__GNUC__) && defined(__OPTIMIZE__)",
               "if (!rows4)",
               "#endif",
               "{",
               "  for (k = 0; k < 24; ++k) {",
               "    int32_t v;",
               "    memcpy(&v, b + 4 * k, 4);",
               "    wq[k] = __shadd16(v, 0);",                     # exact: the words' halves are even
               "  }",
               "  for (k = 0; k < 3; ++k) {",
               "    for (q = 0; q < 4; ++q) {",
               "      for (r = 0; r < 3; ++r) {",                   # slot r holds window row (r - k) mod 3
               "        ws[24 * k + 6 * q + 2 * r] = wq[6 * q + 2 * ((r - k + 3) % 3)];",
               "        ws[24 * k + 6 * q + 2 * r + 1] = wq[6 * q + 2 * ((r - k + 3) % 3) + 1];",
               "      }",
               "    }",
               "  }",
               "}",
               "memset(ring, 0, (size_t)(4 * plane));",            # a slot no row reached yet is read, weighed 0
               "for (k = 0; k < oh; ++k, out += o_row) {",
               "  int32_t top = k * stride - pt;",
               "  const int32_t* wk;",
               *["  " + x for x in widen],
               "  if (top >= 0 && top + 3 <= h) {",
               "    wk = ws + 24 * (top % 3);",
               "#if defined(__GNUC__) && defined(__OPTIMIZE__)",
               "  } else if (rows4) {",                            # the four channels' assembly reads no wk
               "    wk = wq;",
               "#endif",
               "  } else {",                                        # a clipped window: its missing rows weigh 0
               "    int32_t sl;",
               "    for (sl = 0; sl < 3; ++sl) {",
               "      int32_t row = (sl - top % 3 + 3) % 3, in = top + row >= 0 && top + row < h;",
               "      for (q = 0; q < 4; ++q) {",
               "        wz[6 * q + 2 * sl] = in ? wq[6 * q + 2 * row] : 0;",
               "        wz[6 * q + 2 * sl + 1] = in ? wq[6 * q + 2 * row + 1] : 0;",
               "      }",
               "    }",
               "    wk = wz;",
               "  }",
               "  done = 0;",
               "#if defined(__GNUC__) && defined(__OPTIMIZE__)",
               "  if (rows4) {",
               "    int32_t* rq = rqq;",
               "    const unsigned char* pp = ring;",
               "    int8_t* o = out;",
               "    int32_t acc0, acc1, acc2, acc3, t0, t1, t2, w0, w1;",
               "    int32_t rot = top % 3;",
               "    rot += rot < 0 ? 3 : 0;",
               *[f"    rqq[{16 * q + 10}] = (int32_t)(intptr_t)(out + {q} + 4 * (full / 2) * o_col);" for q in range(4)],
               "    if (rot == 0) {",
               *["      " + x for x in _asm_quads(row=True, rot=0, stride=self.ring_stride)],
               "    } else if (rot == 1) {",
               *["      " + x for x in _asm_quads(row=True, rot=1, stride=self.ring_stride)],
               "    } else {",
               *["      " + x for x in _asm_quads(row=True, rot=2, stride=self.ring_stride)],
               "    }",
               "    (void)acc0; (void)acc1; (void)acc2; (void)acc3; (void)t0; (void)t1; (void)t2; (void)w0; (void)w1;",
               "    (void)rq; (void)pp; (void)o;",
               "    done = full & ~1;",
               "  }",
               "#endif",
               "  for (q = 0; q < 4 && (done < full || (ow & 1)); ++q) {",
               "    const int32_t* wr = wk + 6 * q;",
               "    int32_t m = mult[q], e = shift[q], cc = bt[2 * q + 1], b0 = bt[2 * q];",
               "    int8_t* o = out + q + 2 * done * o_col;",
               "    const unsigned char* pp = ring + q * plane + 12 * stride * done;",
               "    if (stride == 1) {",
               *["      " + x for x in _row_dsp(1)],
               "    } else {",
               *["      " + x for x in _row_dsp(2)],
               "    }",
               "  }",
               "}",
               "return 0;"]
        plain = [*self._head(),
                 "for (k = 0; k < oh; ++k, out += o_row) {",
                 "  int32_t top = k * stride - pt;",
                 "  int32_t r0 = top < 0 ? -top : 0, r1 = top + 3 > h ? h - top : 3;",
                 "  for (; next <= top + 2 && next < h; ++next) {",
                 "    int32_t s;",
                 "    for (s = 0; s < 2 * ncp; ++s) {",
                 "      int32_t j = s - pl;",
                 "      for (q = 0; q < 4; ++q) {",
                 "        int16_t v = (int16_t)(j >= 0 && j < w ? (int32_t)a[next * a_row + j * a_col + q] + off : 0);",
                 "        memcpy(ring + q * plane + 12 * (s / 2) + 4 * (next % 3) + 2 * (s % 2), &v, 2);",
                 "      }",
                 "    }",
                 "  }",
                 "  for (q = 0; q < 4; ++q) {",
                 "    int32_t m = mult[q], e = shift[q], cc = bt[2 * q + 1];",
                 "    for (p = 0; p < ow; ++p) {",
                 "      int32_t v = bt[2 * q], t;",
                 "      for (r = r0; r < r1; ++r) {",
                 "        for (t = 0; t < 3; ++t) {",
                 "          int32_t col = p * stride + t;",
                 f"          v += {P}_h(ring + q * plane + 12 * (col / 2) + 4 * ((top + r) % 3) + 2 * (col % 2))"
                 f" * ({P}_h((const unsigned char*)b + 24 * q + 8 * r + 2 * (t + (t == 2))) / 2);",
                 "        }",
                 "      }",
                 f"      out[p * o_col + q] = {_requant('v')};",
                 "    }",
                 "  }",
                 "}",
                 "return 0;"]
        return {"dsp": dsp, "plain": plain}


@register_intrin
class Dw3S8R2(Dw3S8R):
    """dw3_s8r for the stride-2 convs under its own name, the four channels' assembly of its
    stride (dw3_s8r's is stride 1's; either takes the other stride by its C): GCC clones a
    kernel for the constants its calls share, which one function for both strides would no
    longer have (VWW's stride-1 layers measured 1-2% slower where its stride-2 layers called it
    too; one function testing the stride for two inlined bodies, KWS's 1.6% slower)."""
    name = "dw3_s8r2"
    ring_stride = 2

    def signature(self):
        return super().signature().replace(f" {P}(", f" {P}2(", 1)


def _const(e):
    from ..simplify import const_value
    v = const_value(e)
    if v is None:
        raise ValueError("dw3_s8r takes its shape as constants")
    return v
