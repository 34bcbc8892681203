"""Arm micro-kernel for TFLite's int8 pointwise (1x1) convolution on the DSP extension: each input
pixel widened once to int16 pairs (q15, the input offset added) in a scratch buffer, the weights
widened at compile time, then two pixels by four output channels at a time.

  pw_s8(out, a, w, bias, mult, shift, buf, npix, cin, cout, sa, so, sw, off, zp, lo, hi)
  out[p*so + c] = clamp(MBQM(B[c] + sum over k < cin of ((int32)a[p*sa + k] + off) * W[c][k],
                             mult[c], S[c]) + zp, lo, hi)
                  for p < npix, c < cout

MBQM is TFLite's MultiplyByQuantizedMultiplier (gemmlowp's two roundings, exactly). `w` holds the
weights W in the Q15Quads layout (aot/schedules/arm_q15.py): int16, the channels in blocks of
four, sw bytes (8 * cin) a block; in a block, each 4-byte group of the input channels as the
four channels' words of its values 0 and 2, then of its values 1 and 3, and the cin % 4
leftovers the four channels' int16 a value. `bias` is the requantisation's table that the
schedule lays out at compile time (aot/schedules/requant_table.py): each channel's B[c] and
c[c] = 2^(e-1) + zp * 2^e where the folded form holds for the channel (fast), else B[c] and 0;
`shift` holds e = -S[c] where fast (FoldedShift), else S[c]. In pw_s8 (per channel) the weights
and the table's biases are doubled where the layouts prove every doubled sum fits (FoldedBias
doubles, the table's word 2 * cout then 1: dbl): the sums are then 2v, which SMMLAR takes with no
shift before it (gemmlowp.mbqm_folded2_asm: one operation fewer a value), so the assembly's
requantisations take that case only (dbl 0: the C paths); the C paths shift by 1 - dbl before
SMMLAR and halve the sum back for the exact form (it is even). pw_s8t is the same with one
multiplier and shift (int32 values) for every channel (e = -shift there). `buf` is int32
scratch of buf_words(cin) elements that the executor plans in the workspace: two pixels'
inputs, interleaved a 4-byte group at a time (pixel 0's bytes 0 and 2, its bytes 1 and 3, then
pixel 1's: __sxtab16 and its rotated form, the offset added by the same instruction), then the
cin % 4 leftover values one word each, pixel by pixel. Both pixels of a pair are read into the
scratch before any output of the pair is written, so the call may write its output over its
input when pixel p's outputs land only on input pixels up to p (a staged in-place conv:
aot/schedules/inplace_conv.py; the order of reads and writes per pixel is the one
aot/tir/inplace.py proves on the staged nest).

DSP body: per half of a 4-byte group, both pixels' words and the four channels' weight words,
eight __smlad: no widening in the loop, each word loaded once a block. Under gcc with
optimisation the block's loop over the groups is Thumb-2 assembly, four groups a step (then one
a step): 14 registers, its loads in runs of two or four, which pipeline on a single-issue core
(on the dual-issue M7 too it measured faster than gcc's schedule of the C form, which spills:
docs/cycles.md); elsewhere two C passes of two channels. A last partial block takes its channels
one at a time. The requantisation, channel by channel: where the table says fast for the channel,
gemmlowp.mbqm_folded_lines (one SMMLAR adding the channel's c, the sign, one shift: four
operations a value); else the exact halving form (mbqm_halving_lines); the clamp is __ssat for
int8's whole range. An odd last pixel is paired with itself (its outputs written twice, the
same). The blocks' constants and outputs walk by pointer (post-indexed in the assembly). With 8
input channels (16k output channels, every channel folded, int8's whole range, gcc optimising) one pixel
at a time instead: its two words widened into four registers (no scratch), then per channel its
bias and four weight words, four __smlad and the folded requantisation in assembly, the sum never
leaving its register; a pixel's inputs are read before its outputs are written. To 16 output
channels (output stride 16, per channel) whole blocks of PIX8_BLOCK pixels go channel by channel
first (aot_pw_s8_cols8, a function of its own): the block's inputs widened into the scratch
(pw_buf_words: larger for this case), then each channel's eight words of the table's tail
(FoldedBias cols8: its weight words and bias doubled, multiplier, c, e) held in registers over the
block's pixels, so that a channel's constants are loaded once a block and SMMLAR takes the doubled
sum with no shift (mbqm_folded2_asm). Plain body: the same through the scratch, one pixel at a
time, the folded form in int64 where fast.
"""
from __future__ import annotations

from ..expr import Const
from ...targets.cortex_m import core
from .base import TensorIntrin, per_tensor, register_intrin
from .gemmlowp import (INT32_LITERALS, clamp, high_mul, left_of, low_mask, mbqm_folded_asm, mbqm_folded2_asm,
                       mbqm_folded_lines, mbqm_halving_lines, product, rdbpot, right_of, round_threshold, srdhm)




# the table's reading (aot/schedules/requant_table.py FoldedBias: (bias, c) a channel, c 0 in
# every channel where the exact form is to be taken, never 0 where the folded one holds)
TABLE_HEAD = ["const int32_t* bt = bias;", "int32_t fast = bt[1] != 0;"]
# pw_s8's, pw_s8x2's and fc_s8x4's: each channel's c tells its form (requant_table's fold_each),
# the pair after the channels whether every channel is folded (_dsp_requant then tests none)
TABLE_EACH = ["const int32_t* bt = bias;", "int32_t fast = bt[2 * cout + 1];"]
TABLE_EACH_PLAIN = ["const int32_t* bt = bias;"]


def folded_fn(name) -> list:
    """C lines: static inline int32_t name(v, m, e, cc, lo, hi): v requantised by the folded form
    (gemmlowp.mbqm_folded_lines: SMMLAR on DSP cores, its definition in int64 elsewhere) with the
    table's cc and the shift e, clamped (int8's whole range one SSAT on DSP cores)."""
    return [f"static inline int32_t {name}(int32_t v, int32_t m, int32_t e, int32_t cc, int32_t lo, int32_t hi) {{",
            "#if defined(__ARM_FEATURE_DSP)",
            *["  " + x for x in mbqm_folded_lines("v", "m", "cc", "e", "q")],
            "  if (lo == -128 && hi == 127) {",
            "    return __ssat(q, 8);",
            "  }",
            "#else",
            *["  " + x for x in mbqm_folded_lines("v", "m", "cc", "e", "q", asm=False)],
            "#endif",
            "  q = q < lo ? lo : q;",
            "  return q > hi ? hi : q;",
            "}"]


def buf_words(cin: int) -> int:
    """int32 words of scratch pw_s8 needs for cin input channels (two pixels)."""
    return 2 * (2 * (cin // 4) + cin % 4)


def cols8(cin: int, cout: int, per_channel: bool = True) -> bool:
    """Whether pw_s8 over cin to cout channels may take its channel-major blocks (aot_pw_s8_cols8, cols8_fn):
    the table's cols8 tail is laid out for it and its scratch holds a block's pixels."""
    return per_channel and cin == 8 and cout == 16


def pw_buf_words(cin: int, cout: int, per_channel: bool = True) -> int:
    """int32 words of scratch a pw_s8 call needs: buf_words, or an aot_pw_s8_cols8 block's pixels (four
    words each) where it may take that path."""
    return max(buf_words(cin), 4 * PIX8_BLOCK if cols8(cin, cout, per_channel) else 0)


def _requant(v):
    """C lines: r = TFLite's requantisation of the int32 sum `v` (bias included) plus the zero
    point (gemmlowp's two roundings, exactly), with the constants _channel_consts worked out."""
    return [f"r = (int32_t)((uint32_t){v} << left);",
            f"r = {srdhm('r', 'm', high_mul(product('r', 'm', widen_b=False)), both_min=True)};",
            f"r = {rdbpot('r', 'e', round_threshold('r', 'thr', sign_shift=True))};",
            "r += zp;"]


def _channel_consts(mult, shift):
    """C lines: a channel's requantisation constants: left (the shift if positive), e (minus the
    shift if not), mask (2^e - 1), thr (mask / 2)."""
    return [f"m = {mult};", f"sh = {shift};",
            f"left = {left_of('sh')};",
            f"e = {right_of('sh')};",
            f"mask = {low_mask('e')};",
            "thr = mask >> 1;"]


def plain_requant(v, mult, shift, fast_shift, out):
    """C lines: channel c's sum v (its bias included) requantised as the table says for it (the
    folded form in int64 where its c is not 0, else the exact one), clamped and stored to out[c];
    the plain bodies' (r, m, sh, left, e, mask, thr declared)."""
    return ["if (bt[2 * c + 1] != 0) {",
            f"  int32_t ef = {fast_shift.format('c')};",
            *["  " + y for y in mbqm_folded_lines(v, mult.format("c"), "bt[2 * c + 1]", "ef", "q", asm=False)],
            "  r = q;",
            "} else {",
            *["  " + y for y in _channel_consts(mult.format("c"), shift.format("c")) + _requant(v)],
            "}",
            "r = r < lo ? lo : r;",
            "r = r > hi ? hi : r;",
            f"{out}[c] = (int8_t)r;"]


def quad_folded_asm(per_channel, outs=("out", "o1")):
    """C lines: the four-channel block's eight sums (acc, in memory: channel j's pixels at 2j and
    2j + 1) requantised by the folded form and stored with __ssat, as Thumb-2 assembly: per
    channel its multiplier, shift, c and both sums loaded in one run (pipelined), then
    gemmlowp.mbqm_folded_asm and SSAT and STRB a value. gcc's allocation of the C form reloads
    the block's pointers from the stack for every channel. Per tensor, the one multiplier and
    shift are registers. outs: the two pixels' output pointers (channel c's at element c)."""
    g = []
    for j in range(4):
        if per_channel:
            g += [f'"ldr %[m], [%[mp], #{4 * j}]\\n"', f'"ldr %[e], [%[ep], #{4 * j}]\\n"']
        g += [f'"ldr %[cc], [%[tp], #{8 * j + 4}]\\n"', f'"ldr %[v0], [%[acc], #{8 * j}]\\n"',
              f'"ldr %[v1], [%[acc], #{8 * j + 4}]\\n"']
        for v, dst in (("v0", "op"), ("v1", "o1p")):
            g += [*mbqm_folded_asm(v, "t", "m", "cc", "e"), f'"ssat %[{v}], #8, %[{v}]\\n"',
                  f'"strb %[{v}], [%[{dst}], #{j}]\\n"']
    regs = '[m] "=&r"(m), [e] "=&r"(e), ' if per_channel else ""
    ins = ('[mp] "r"(mult + c), [ep] "r"(shift + c), ' if per_channel else '[m] "r"(mult), [e] "r"(-shift), ')
    return ["int32_t " + ("m, e, " if per_channel else "") + "cc, v0, v1, t;",
            "__asm__ volatile(", *["    " + x for x in g],
            f'    : {regs}[cc] "=&r"(cc), [v0] "=&r"(v0), [v1] "=&r"(v1), [t] "=&r"(t)',
            f'    : {ins}[tp] "r"(bt + 2 * c), [acc] "r"(acc), [op] "r"({outs[0]} + c), [o1p] "r"({outs[1]} + c)',
            '    : "memory");']


def quad_folded_walk(per_channel):
    """C lines: quad_folded_asm's requantisation of the block's eight sums (acc) over walking
    pointers instead of the block's index: the channels' multipliers (rm), shifts (re), the
    table's c values (rt, at bt + 1) and both pixels' outputs (ro, ro1), each read or written
    post-indexed, so that each pointer leaves the asm at the next block's channels (the block
    loop then keeps no index arithmetic for them: gcc otherwise holds five pointers on the stack
    and updates each with a load, an add and a store a block). Per tensor, the one multiplier
    and shift are registers."""
    g = []
    for j in range(4):
        if per_channel:
            g += ['"ldr %[m], [%[rm]], #4\\n"', '"ldr %[e], [%[re]], #4\\n"']
        g += ['"ldr %[cc], [%[rt]], #8\\n"', f'"ldr %[v0], [%[acc], #{8 * j}]\\n"',
              f'"ldr %[v1], [%[acc], #{8 * j + 4}]\\n"']
        for v, dst in (("v0", "ro"), ("v1", "ro1")):
            g += [*mbqm_folded_asm(v, "t", "m", "cc", "e"), f'"ssat %[{v}], #8, %[{v}]\\n"',
                  f'"strb %[{v}], [%[{dst}]], #1\\n"']
    regs = '[m] "=&r"(m), [e] "=&r"(e), ' if per_channel else ""
    walk = '[rm] "+r"(rm), [re] "+r"(re), ' if per_channel else ""
    ins = "" if per_channel else '[m] "r"(mult), [e] "r"(-shift), '
    return ["int32_t " + ("m, e, " if per_channel else "") + "cc, v0, v1, t;",
            "__asm__ volatile(", *["    " + x for x in g],
            f'    : {regs}[cc] "=&r"(cc), [v0] "=&r"(v0), [v1] "=&r"(v1), [t] "=&r"(t),',
            f'      {walk}[rt] "+r"(rt), [ro] "+r"(ro), [ro1] "+r"(ro1)',
            f'    : {ins}[acc] "r"(acc)',
            '    : "memory");']


def regs_requant(t=None, dbl=False):
    """quad_folded_regs' instructions (operands by name, unquoted). t: a 14th register free for a
    temporary (_blocks_asm's own): channel 3's sums alone parked (%[park0], %[park1]), channel 0's
    multiplier and c in their registers, its shift in t once its first SMMLAR is done. dbl: the
    sums are doubled (the weights and bias doubled: mbqm_folded2_asm, no shift first)."""
    folded = mbqm_folded2_asm if dbl else mbqm_folded_asm
    if t is not None:
        g = ['str %[s30], %[park0]', 'str %[s31], %[park1]']
        v0, v1, m, cc = "s00", "s01", "s30", "s31"
        free = ["s30", "s31", t, "s00", "s01"]
    else:
        g = ['str %[s21], %[park0]', 'str %[s30], %[park1]', 'str %[s31], %[park2]']
        v0, v1, m, cc, t = "s00", "s01", "s30", "s31", "s21"
        free = ["s30", "s31", "s21", "s00", "s01"]
    fourteen = t not in ("s21",)
    fold = [x[1:-3] for x in folded(v0, t, m, cc, t)]
    g += [f'ldr %[{m}], [%[rm]], #4', f'ldr %[{cc}], [%[rt]], #8', *fold[:-1],
          f'ldr %[{t}], [%[re]], #4', fold[-1], f'ssat %[{v0}], #8, %[{v0}]', f'strb %[{v0}], [%[ro]], #1',
          *[x[1:-3] for x in folded(v1, v0, m, cc, t)], f'ssat %[{v1}], #8, %[{v1}]',
          f'strb %[{v1}], [%[ro1]], #1']
    for j in (1, 2, 3):
        m, cc, e, tmp = free[:4]
        loads = []
        if j < 3 and (fourteen or j == 1):
            v0, v1 = f"s{j}0", f"s{j}1"
        elif j == 2:            # s21 back from the stack in the run of the constants' loads
            v0, v1 = "s20", free[4]
            loads = [f'ldr %[{v1}], %[park0]']
        else:                   # channel 3's sums back from the stack
            v0, v1 = free[4:6] if fourteen else free[5:7]
            p0, p1 = ("park0", "park1") if fourteen else ("park1", "park2")
            loads = [f'ldr %[{v0}], %[{p0}]', f'ldr %[{v1}], %[{p1}]']
        g += [*loads, f'ldr %[{m}], [%[rm]], #4', f'ldr %[{cc}], [%[rt]], #8', f'ldr %[{e}], [%[re]], #4']
        for v, dst in ((v0, "ro"), (v1, "ro1")):
            g += [*[x[1:-3] for x in folded(v, tmp, m, cc, e)], f'ssat %[{v}], #8, %[{v}]',
                  f'strb %[{v}], [%[{dst}]], #1']
        free += [v0, v1] if j < 3 else []
        if j == 2 and not fourteen:
            free = [r for r in free if r != v1] + [v1]      # (the reloaded s21's register: free again)
    return g


def quad_folded_regs(dbl=False):
    """C lines: the four-channel block's eight sums, still in their registers s00 to s31 (channel
    j's pixels at sj0, sj1), requantised by the folded form and stored with SSAT, as Thumb-2
    assembly over the walking pointers of quad_folded_walk (rm, re, rt, ro, ro1, post-indexed).
    Against quad_folded_walk, the sums never go through memory (gcc's spill of them to acc and
    their reloads: about 20 cycles a block on the M4). 13 registers, the eight sums and the five
    pointers (gcc inlined into some kernels gives no 14th: 'impossible constraints'): s21, s30
    and s31 are parked in three stack words first, their registers then channel 0's multiplier,
    c and a temporary (its shift loaded into the temporary once its first value's SMMLAR is
    done), and each channel's freed sums serve the next ones' constants and reloads."""
    g = [f'"{x}\\n"' for x in regs_requant(dbl=dbl)]
    sums = ", ".join(f'[s{j}{p}] "+r"(s{j}{p})' for j in range(4) for p in range(2))
    return ["int32_t park[3];",
            "__asm__ volatile(", *["    " + x for x in g],
            f'    : {sums}, [park0] "=m"(park[0]), [park1] "=m"(park[1]), [park2] "=m"(park[2]),',
            '      [rm] "+r"(rm), [re] "+r"(re), [rt] "+r"(rt), [ro] "+r"(ro), [ro1] "+r"(ro1)',
            '    :',
            '    : "memory");']


def _dsp_requant(chans, mult, shift, fast_shift, fast_full=None, tab="bt[2 * ({}) + 1]", outs=("out", "o1"),
                 advance=(), asm_if="defined(__OPTIMIZE__)", dbl=False):
    """C lines: each (channel, pixel 0's sum, pixel 1's sum or None) requantised and stored channel
    by channel (each channel's constants loaded once for its values, no value kept past its
    store): where the table's flag says every channel is folded, all by the folded form with no
    test; else where the table's c of the channel is not 0, gemmlowp.mbqm_folded_lines (SMMLAR
    adding c, its shift e = fast_shift), else mbqm_halving_lines; int8's whole range one __ssat
    a value (full: one test for the call's channels), else clamped to [lo, hi]. tab: a channel's
    c in the table; outs: the two pixels' outputs; advance: C lines after every path but the
    assembly's (fast_full, which advances its walking pointers itself). dbl: the sums are
    doubled where the kernel's dbl is 1 (the folded form then shifts by 1 - dbl, the exact one
    takes the sum halved back: exact, it is even)."""
    def channels(full, each):
        out = []
        for ch, a, b in chans:
            vals = [(f"y{j}", v, dst) for j, (v, dst) in enumerate((x, d) for x, d in ((a, outs[0]), (b, outs[1]))
                                                                     if x is not None)]
            out += ["{", f"  int32_t m = {mult.format(ch)}, cc = {tab.format(ch)}, "
                         + ", ".join(r for r, _, _ in vals) + ";",
                    "  if (cc != 0) {" if each else "  {", f"    int32_t e = {fast_shift.format(ch)};"]
            for r, v, _ in vals:
                out += ["    {", *["      " + y for y in mbqm_folded_lines(v, "m", "cc", "e", "q",
                                                                  lsl="(1 - dbl)" if dbl else "1")],
                        f"      {r} = q;", "    }"]
            if each:
                out += ["  } else {", f"    int32_t sh = {shift.format(ch)};"]
                for r, v, _ in vals:
                    half = f"({v} >> dbl)" if dbl else v
                    out += ["    {", *["      " + y for y in mbqm_halving_lines(half, "m", "sh", "q", INT32_LITERALS)],
                            f"      {r} = q + zp;", "    }"]
            out.append("  }")
            out += [f"  {dst}[{ch}] = (int8_t)({f'__ssat({r}, 8)' if full else clamp(r)});" for r, _, dst in vals]
            out.append("}")
        return out
    advance = list(advance)
    first = channels(True, False) + advance
    if fast_full is not None:       # the common case as assembly where the compiler optimises
        first = [f"#if {asm_if}", *fast_full, "#else", *first, "#endif"]
    # (the common case laid out to fall through: no taken branch to it a block)
    return ["if (__builtin_expect(fast && full, 1)) {", *["  " + y for y in first],
            "} else if (fast) {", *["  " + y for y in channels(False, False) + advance],
            "} else if (full) {", *["  " + y for y in channels(True, True) + advance],
            "} else {", *["  " + y for y in channels(False, True) + advance], "}"]


def _quad_mac(groups):
    """_quad_asm's instructions over `groups` 4-byte groups (operands by name), q and w0 advanced
    past them."""
    g = []
    for at in range(groups):
        b, o = 16 * at, 32 * at
        for half in range(2):
            g += [f"ldr %[x0], [%[q], #{b + 4 * half}]", f"ldr %[x1], [%[q], #{b + 8 + 4 * half}]"]
            for pair in range(2):
                wo = o + 16 * half + 8 * pair
                g += [f"ldr %[wa], [%[w0], #{wo}]", f"ldr %[wb], [%[w0], #{wo + 4}]"]
                j0, j1 = 2 * pair, 2 * pair + 1
                g += [f"smlad %[s{j0}0], %[x0], %[wa], %[s{j0}0]", f"smlad %[s{j0}1], %[x1], %[wa], %[s{j0}1]",
                      f"smlad %[s{j1}0], %[x0], %[wb], %[s{j1}0]", f"smlad %[s{j1}1], %[x1], %[wb], %[s{j1}1]"]
    return g + [f"add %[q], %[q], #{16 * groups}", f"add %[w0], %[w0], #{32 * groups}"]


# _blocks_asm's state words (memory operands), then the two words channel 3's sums are parked in
_FRAME = ("rm", "re", "rt", "ro", "ro1", "w", "buf", "end", "has4", "roend")


def _blocks_asm(dbl=False):
    """C lines: every whole block of four output channels of both pixels in the scratch as one
    Thumb-2 assembly statement, for the common case (per channel, every channel folded, int8's
    whole range, cin a multiple of 16, blocks of 8 * cin bytes, at least one block): the bias
    loads, _quad_mac's groups (eight a step, an odd four entering the first step halfway), the
    registers' requantisation
    (quad_folded_regs), the loop over the blocks. Between the phases the 14 registers are the
    statement's own: gcc's block loop around the assembly reloaded and stored its pointers,
    tested the table's flags and re-copied the sums, about 50 cycles a block on the M4. Its state
    (the walking pointers of the multipliers, shifts, the table's c values, both outputs and the
    weights; the scratch, its end, whether an odd four is left, the outputs' end)
    and the parked sums are locals passed as memory operands, and every register operand is an
    early-clobber output with no input: register inputs beside the 14 outputs left gcc at -O1
    and -Os 'impossible constraints' (760edf2), while a local's memory operand is sp-relative
    and takes no register (so the statement must not move sp)."""
    park = {f"%[park{k}]": f"%[f_park{k}]" for k in range(2)}
    ptr = {"%[rm]": "%[q]", "%[re]": "%[w0]", "%[rt]": "%[x0]", "%[ro]": "%[x1]", "%[ro1]": "%[wa]"}
    rq = []
    for x in regs_requant("wb", dbl):
        for a, b in {**park, **ptr}.items():
            x = x.replace(a, b)
        rq.append(x)
    # the groups eight a step, an odd four first and out of line (then into the loop where it
    # has steps): one test a block where a pre-test of the loop and an odd four's test after it
    # took two, and no branch taken for it where there is no odd four (VWW's 32 to 256 channels)
    mac = _quad_mac(8)
    g = ["ldr %[x0], %[f_rt]",
         ".p2align 2", "3:",      # (x0: the table's c values of the block, rt walked there by the requantisation)
         "ldr %[q], %[f_buf]", "ldr %[w0], %[f_w]",
         *[f"ldr %[s{j}0], [%[x0], #{8 * j - 4}]" for j in range(4)],
         *[f"mov %[s{j}1], %[s{j}0]" for j in range(4)],
         "ldr %[x0], %[f_has4]", "cmp %[x0], #0", "bne 7f",
         ".p2align 2", "1:", *mac, "ldr %[x0], %[f_end]", "cmp %[q], %[x0]", "bne 1b",
         "6:", "str %[w0], %[f_w]",
         *[f"ldr {ptr['%[' + n + ']']}, %[f_{n}]" for n in ("rm", "re", "rt", "ro", "ro1")],
         *rq,
         *[f"str {ptr['%[' + n + ']']}, %[f_{n}]" for n in ("rm", "re", "rt", "ro", "ro1")],
         "ldr %[wb], %[f_roend]", "cmp %[x1], %[wb]", "bne 3b",
         "b 8f",
         "7:", *_quad_mac(4), "ldr %[x0], %[f_end]", "cmp %[q], %[x0]", "beq 6b", "b 1b",
         "8:"]
    ins = {"rm": "mult", "re": "shift", "rt": "bt + 1", "ro": "out", "ro1": "o1", "w": "w", "buf": "buf",
           "end": "buf + 4 * words", "has4": "words & 4", "roend": "out + (cout & ~3)"}
    return blocks_statement(g, _FRAME, ins, '__asm__ volatile(".p2align 2\\n\\t"')


def blocks_statement(g, frame, ins, head):
    """C lines: the whole-block assembly g as one statement: its fourteen registers all
    early-clobber outputs (eight sums, q, w0, x0, x1, wa, wb), its state the memory frame `frame`
    (each name's value ins[name]) and two parking words (register inputs beside fourteen outputs
    fail at -O1 and -Os). head: the statement's opening line."""
    outs = ", ".join(f'[s{j}{p}] "=&r"(s{j}{p})' for j in range(4) for p in range(2))
    names = frame + ("park0", "park1")
    return ["int32_t " + ", ".join(f"s{j}{p}" for j in range(4) for p in range(2)) + ", q, w0, x0, x1, wa, wb;",
            f"uintptr_t fr[{len(names)}];",
            *[f"fr[{k}] = (uintptr_t)({ins[n]});" for k, n in enumerate(frame)],
            head, *[f'    "{x}\\n\\t"' for x in g],
            f'    : {outs},',
            '      [q] "=&r"(q), [w0] "=&r"(w0), [x0] "=&r"(x0), [x1] "=&r"(x1), [wa] "=&r"(wa), [wb] "=&r"(wb),',
            f'      [fr] "+m"(*(uintptr_t(*)[{len(names)}])fr)',
            "    : " + ", ".join(f'[f_{n}] "m"(fr[{k}])' for k, n in enumerate(names)),
            '    : "cc", "memory");',
            "(void)s00; (void)s01; (void)s10; (void)s11; (void)s20; (void)s21; (void)s30; (void)s31;",
            "(void)q; (void)w0; (void)x0; (void)x1; (void)wa; (void)wb;"]


def _quad_asm(groups, loop=True):
    """C lines: the four-channel block's loop over `groups` 4-byte groups a step (q != its end on
    entry: end4) as Thumb-2 assembly: per half of a group both pixels' words and each channel
    pair's two widened weight words, loaded in runs (a run pipelines on a single-issue core; on
    the dual-issue M7 the loads moved between the multiplies measured slower), then four SMLADs
    a pair; 14 registers (the eight sums, x0, x1, wa, wb, q, w0), the loop's end read from
    memory. loop=False: the groups once, straight (the whole groups after the loop's, four, two
    or one: no end test, no branch), q and w0 advanced past them."""
    g = _quad_mac(groups)
    if loop:
        g += ["ldr %[x0], %[end]", "cmp %[q], %[x0]", "bne 1b"]
    sums = ", ".join(f'[s{j}{p}] "+r"(s{j}{p})' for j in range(4) for p in range(2))
    return ([f'__asm__({chr(34) + ".p2align 2" + chr(92) + "n1:" + chr(92) + "n" + chr(92) + "t" + chr(34) if loop else ""}']
            + [f'        "{x}\\n\\t"' for x in g] +
            [f'        : {sums},',
             '          [q] "+r"(q), [w0] "+r"(w0), [x0] "=&r"(x0), [x1] "=&r"(x1), [wa] "=&r"(wa), [wb] "=&r"(wb)',
             '        : [end] "m"(end4)' if loop else '        :',
             '        : "cc", "memory");'])


def _pix8_asm(n=16, dbl=False):
    """C lines: pw_s8's one-pixel loop body for cin 8 (two 4-byte groups) as Thumb-2 assembly over
    the output channels, n a step (op != end on entry): the pixel's four widened words in
    registers (x0 to x3: group 0's values 0 and 2, 1 and 3, then group 1's), per channel its
    bias and its four weight words of the Q15Quads block (wp: the block, channel j's words at
    4j, 16 + 4j, 32 + 4j and 48 + 4j) in one run of loads, four SMLADs, then its multiplier,
    shift and the table's c, gemmlowp.mbqm_folded_asm, SSAT and STRB. The sum never leaves its
    register and every pointer is a register (14: x0-x3, wp, bp, mp, ep, op, w0-w3, s), every one
    an early-clobber output loaded from a frame in memory first (register inputs beside them
    left gcc 'impossible constraints' on the M7 once pw_s8's other paths grew). Sixteen
    channels (four blocks) a step: the five pointer steps and the end test, about ten cycles on
    the M4, once per sixteen channels (VWW's 8 -> 16 layer 951,641 -> 884,825 cycles); one copy
    only (a second one, for four a step, left gcc 13 registers for either on the M33)."""
    g = []
    for j in range(n):
        wo = 64 * (j >> 2) + 4 * (j & 3)
        g += [f"ldr %[s], [%[bp], #{8 * j}]", f"ldr %[w0], [%[wp], #{wo}]", f"ldr %[w1], [%[wp], #{16 + wo}]",
              f"ldr %[w2], [%[wp], #{32 + wo}]", f"ldr %[w3], [%[wp], #{48 + wo}]",
              "smlad %[s], %[x0], %[w0], %[s]", "smlad %[s], %[x1], %[w1], %[s]",
              "smlad %[s], %[x2], %[w2], %[s]", "smlad %[s], %[x3], %[w3], %[s]",
              f"ldr %[w0], [%[mp], #{4 * j}]", f"ldr %[w1], [%[ep], #{4 * j}]", f"ldr %[w2], [%[bp], #{8 * j + 4}]",
              *[x[1:-3] for x in (mbqm_folded2_asm if dbl else mbqm_folded_asm)("s", "w3", "w0", "w2", "w1")],
              "ssat %[s], #8, %[s]", f"strb %[s], [%[op], #{j}]"]
    g += [f"add %[wp], %[wp], #{16 * n}", f"add %[bp], %[bp], #{8 * n}", f"add %[mp], %[mp], #{4 * n}",
          f"add %[ep], %[ep], #{4 * n}", f"add %[op], %[op], #{n}", "ldr %[w0], %[f_end]", "cmp %[op], %[w0]", "bne 1b"]
    regs = ("x0", "x1", "x2", "x3", "wp", "bp", "mp", "ep", "op", "w0", "w1", "w2", "w3", "s")
    names = ("x0", "x1", "x2", "x3", "wp", "bp", "mp", "ep", "op", "end")
    head = [f"ldr %[{r}], %[f_{r}]" for r in names[:-1]]
    return ([f"int32_t {', '.join(regs)};", f"uintptr_t fr[{len(names)}];",
             *[f"fr[{k}] = (uintptr_t)({v});" for k, v in
               enumerate(("xw[0]", "xw[1]", "xw[2]", "xw[3]", "w", "bt", "mult", "shift", "out", "out + cout"))],
             '__asm__ volatile('] + [f'        "{x}\\n\\t"' for x in head + [".p2align 2", "1:"] + g] +
            ["        : " + ", ".join(f'[{r}] "=&r"({r})' for r in regs) + ",",
             f'          [fr] "+m"(*(uintptr_t(*)[{len(names)}])fr)',
             "        : " + ", ".join(f'[f_{r}] "m"(fr[{k}])' for k, r in enumerate(names)),
             '        : "cc", "memory");',
             *[f"(void){r};" for r in regs]])


# pixels a block of aot_pw_s8_cols8 (their widened inputs in the scratch, 4 words each: pw_buf_words)
PIX8_BLOCK = 32


def _pix8_cols_asm(n=PIX8_BLOCK):
    """C lines: aot_pw_s8_cols8's block of n pixels by 16 output channels (so 16) as one Thumb-2
    assembly statement, channel by channel: its eight words of the table's tail (FoldedBias
    cols8: the four weight words and the bias doubled, multiplier, c, e) into registers in one
    run of loads, then for each pixel its four widened words (xb at 16k), four SMLADs onto the
    doubled bias, SMMLAR with no shift first (mbqm_folded2_asm: the doubled sum), the sign, the
    shift, SSAT and STRB at byte 16k of the channel's column. 14 registers (the channel's eight,
    the pixel's four, xb and the outputs), every one an early-clobber output with no register
    inputs ('impossible constraints' at -O1/-Os otherwise), the table's walking pointer and the
    end in memory operands."""
    g = ["ldr %[op], %[f_out]", "ldr %[ip], %[f_xb]", ".p2align 2", "1:", "ldr %[x0], %[f_t]",
         *[f"ldr %[{r}], [%[x0], #{4 * i}]" for i, r in enumerate(("w0", "w1", "w2", "w3", "b", "m", "c", "e"))],
         "add %[x0], %[x0], #32", "str %[x0], %[f_t]"]
    for k in range(n):
        g += [*[f"ldr %[x{i}], [%[ip], #{16 * k + 4 * i}]" for i in range(4)],
              "smlad %[x0], %[x0], %[w0], %[b]", *[f"smlad %[x0], %[x{i}], %[w{i}], %[x0]" for i in (1, 2, 3)],
              *[x[1:-3] for x in mbqm_folded2_asm("x0", "x1", "m", "c", "e")],
              "ssat %[x0], #8, %[x0]", f"strb %[x0], [%[op], #{16 * k}]"]
    g += ["add %[op], %[op], #1", "ldr %[x0], %[f_end]", "cmp %[op], %[x0]", "bne 1b"]
    regs = ["w0", "w1", "w2", "w3", "b", "m", "c", "e", "x0", "x1", "x2", "x3", "ip", "op"]
    names = ("t", "out", "xb", "end")
    return ["int32_t " + ", ".join(regs) + ";",
            f"uintptr_t fr[{len(names)}];",
            *[f"fr[{k}] = (uintptr_t)({v});" for k, v in enumerate(("bt + 34", "out", "buf", "out + 16"))],
            '__asm__ volatile(', *[f'    "{x}\\n\\t"' for x in g],
            "    : " + ", ".join(f'[{r}] "=&r"({r})' for r in regs) + ",",
            f'      [fr] "+m"(*(uintptr_t(*)[{len(names)}])fr)',
            "    : " + ", ".join(f'[f_{n}] "m"(fr[{k}])' for k, n in enumerate(names)),
            '    : "cc", "memory");',
            *[f"(void){r};" for r in regs]]


COLS8_IF = "defined(__ARM_FEATURE_DSP) && defined(__OPTIMIZE__) && !defined(__clang__)"


def cols8_fn(n=PIX8_BLOCK):
    """C lines: aot_pw_s8_cols8(out, a, bt, buf, npix, sa, off2), pw_s8 over 8 input channels to
    16 (so 16: the outputs' bytes at immediate offsets), every channel folded, int8's whole
    range, n pixels a block, channel by channel over the block (_pix8_cols_asm): a channel's
    constants are loaded once per n pixels where _pix8 loads them per pixel (VWW's 8 -> 16
    layer: 882 K cycles on the M4 there, 590 K here). The block's inputs are widened into the
    scratch first (read whole before any of its outputs is written: pixel p's outputs land on
    input pixels up to p in place). Returns the pixels it took (whole blocks), the rest
    _pix8's. A function of its own, not inlined: in pw_s8's body it changed gcc's allocation of
    the other paths (the M7's other pointwise layers about 2% slower)."""
    return [f"#if {COLS8_IF}",
            "static __attribute__((noinline)) int32_t aot_pw_s8_cols8(int8_t* out, const int8_t* a, const int32_t* bt,"
            " int32_t* buf, int32_t npix, int32_t sa, int32_t off2) {",
            "  int32_t done = 0, k;",
            f"  for (; npix - done >= {n}; done += {n}, a += {n} * sa, out += {16 * n}) {{",
            f"    for (k = 0; k < {n}; ++k) {{",
            "      uint32_t u0, u1;",
            "      memcpy(&u0, a + k * sa, 4);",
            "      memcpy(&u1, a + k * sa + 4, 4);",
            "      buf[4 * k] = __sxtab16(off2, (int32_t)u0);",
            "      buf[4 * k + 2] = __sxtab16(off2, (int32_t)u1);",
            '      __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(buf[4 * k + 1]) : "r"(off2), "r"(u0));',
            '      __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(buf[4 * k + 3]) : "r"(off2), "r"(u1));',
            "    }",
            "    {",
            *["      " + y for y in _pix8_cols_asm(n)],
            "    }",
            "  }",
            "  return done;",
            "}",
            "#endif"]


def _pix8(indent, dbl=False):
    """C lines: pw_s8 over 8 input channels, the case that takes it (output channels a multiple
    of 16, every channel folded, int8's whole range, under gcc's optimisation), one pixel at
    a time: its two words widened into registers (no scratch), then _pix8_asm over every output
    channel; returns. A pixel's inputs are read before any of its outputs is written (the order
    an in-place call needs: pixel p's outputs on input pixels up to p only)."""
    pad = " " * indent
    return [pad + y for y in [
        "#if defined(__OPTIMIZE__) && !defined(__clang__)",
        "if (cin == 8 && sw == 64 && cout > 0 && (cout & 15) == 0 && fast && full) {",
        "  if (cout == 16 && so == 16) {",       # (the table's cols8 tail: requant_table's)
        "    int32_t done = aot_pw_s8_cols8(out, a, bt, buf, npix, sa, off2);",
        "    npix -= done;",
        "    a += done * sa;",
        "    out += done * 16;",
        "  }",
        # (the weights and bias doubled: the folded form's doubled sum; else the pairs' paths)
        *(["  if (dbl)"] if dbl else []),
        "  for (p = 0; p < npix; ++p, a += sa, out += so) {",
        "    uint32_t u0, u1;",
        "    int32_t xw[4];",
        "    memcpy(&u0, a, 4);",
        "    memcpy(&u1, a + 4, 4);",
        "    xw[0] = __sxtab16(off2, (int32_t)u0);",
        "    xw[2] = __sxtab16(off2, (int32_t)u1);",
        '    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(xw[1]) : "r"(off2), "r"(u0));',
        '    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(xw[3]) : "r"(off2), "r"(u1));',
        *["    " + y for y in _pix8_asm(16, dbl)],
        "  }",
        *(["  if (dbl || npix == 0) {", "    return 0;", "  }"] if dbl else ["  return 0;"]),
        "}",
        "#endif"]]


def _word(p, at):
    """C: the int32 word at byte offset `at` of int8 pointer p (memcpy: no alignment or type assumed)."""
    return f"memcpy(&{p}, w0 + {at}, 4);" if at else f"memcpy(&{p}, w0, 4);"


def _quad_pass(h):
    """C lines: the block's channels 2h and 2h + 1 over every whole group of the scratch (q from
    buf to end, w0 the block's weights): both pixels' four words, each channel's low and high
    widened weight word, eight __smlad."""
    j0, j1 = 2 * h, 2 * h + 1
    return ["for (q = buf, w0 = blk; q != end; q += 4, w0 += 32) {",
            "  " + _word("wa", 8 * h), "  " + _word("wb2", 8 * h + 4),
            "  " + _word("wc", 16 + 8 * h), "  " + _word("wd", 20 + 8 * h),
            f"  s{j0}0 = __smlad(q[0], wa, s{j0}0);", f"  s{j0}0 = __smlad(q[1], wc, s{j0}0);",
            f"  s{j0}1 = __smlad(q[2], wa, s{j0}1);", f"  s{j0}1 = __smlad(q[3], wc, s{j0}1);",
            f"  s{j1}0 = __smlad(q[0], wb2, s{j1}0);", f"  s{j1}0 = __smlad(q[1], wd, s{j1}0);",
            f"  s{j1}1 = __smlad(q[2], wb2, s{j1}1);", f"  s{j1}1 = __smlad(q[3], wd, s{j1}1);",
            "}"]


def _dsp_quad(mult, shift, fast_shift, dbl=False):
    """C lines: output channels c to c + 3 (one block of the widened weights, Q15Quads) for both
    pixels in the scratch: under gcc with optimisation on a single-issue core the groups as
    assembly (eight a step, then the four, two and one left straight), elsewhere two C passes of two channels; the
    cin % 4 leftovers; then the eight values requantised."""
    out = ["const int8_t* blk = rw;",
           "const int8_t* w0 = blk;",
           "const int32_t* q = buf;",
           *[f"int32_t s{j}0 = rt[{2 * j - 1}], s{j}1 = s{j}0;" for j in range(4)],
           # the assembly takes 14 registers: gcc with optimisation gives them (clang and -O0 not)
           "#if defined(__OPTIMIZE__) && !defined(__clang__)",
           "{",
           # eight groups a step (the loop's end test and pointer steps, about 8 cycles on the
           # M4, once per 256 MACs instead of per 128)
           "  const int32_t* end4 = buf + 32 * (words >> 3);",
           "  int32_t x0, x1, wa, wb;",
           "  if (q != end4) {", *["    " + y for y in _quad_asm(8)], "  }",
           "  if (q != end) {",
           "    if (words & 4) {", *["      " + y for y in _quad_asm(4, loop=False)], "    }",
           "    if (words & 2) {", *["      " + y for y in _quad_asm(2, loop=False)], "    }",
           "    if (words & 1) {", *["      " + y for y in _quad_asm(1, loop=False)], "    }",
           "  }",
           "}",
           "#else",
           "{",
           "  int32_t wa, wb2, wc, wd;",
           *["  " + y for h in range(2) for y in _quad_pass(h)],
           "  q = end;",
           "  w0 = blk + 32 * words;",
           "}",
           "#endif",
           "for (k = 0; k < rest; ++k, q += 2, w0 += 8) {",
           "  int16_t wr[4];",
           "  memcpy(wr, w0, 8);",
           *[f"  s{j}{p} += q[{p}] * (int32_t)wr[{j}];" for j in range(4) for p in range(2)],
           "}"]
    # the sums through memory: the requantisation then has the registers for its pointers and
    # constants (gcc otherwise spills the pointers, reloading them for each channel)
    acc = ["int32_t acc[8] = {" + ", ".join(f"s{j}{p}" for j in range(4) for p in range(2)) + "};",
           '__asm__("" : "+m"(acc));']
    # the block's constants and outputs through the walking pointers of _dsp_blocks (the
    # assembly advances them itself, the C paths after their stores)
    per_channel = mult != "mult"
    if per_channel:
        mult, shift, fast_shift = "rm[{}]", "re[{}]", "re[{}]"
    advance = (["rm += 4;", "re += 4;"] if per_channel else []) + ["rt += 8;", "ro += 4;", "ro1 += 4;"]
    # per channel under gcc's optimisation the common case takes the sums from their registers
    # (quad_folded_regs: the 14 registers gcc gives the block's assembly); elsewhere through acc
    regs = per_channel
    # (dbl: the C paths take the doubled sums, clang's too: quad_folded_walk's assembly shifts)
    rq = acc + _dsp_requant([(str(j), f"acc[{2 * j}]", f"acc[{2 * j + 1}]") for j in range(4)],
                            mult, shift, fast_shift, None if dbl else quad_folded_walk(per_channel),
                            tab="rt[2 * ({})]", outs=("ro", "ro1"), advance=advance,
                            asm_if="defined(__OPTIMIZE__) && defined(__clang__)" if regs else "defined(__OPTIMIZE__)",
                            dbl=dbl)
    if not regs:
        return out + ["rw += sw;"] + rq
    return out + ["rw += sw;", "#if defined(__OPTIMIZE__) && !defined(__clang__)",
                  f"if (__builtin_expect(fast && full{' && dbl' if dbl else ''}, 1)) {{",
                  *["  " + y for y in quad_folded_regs(dbl)], "} else",
                  "#endif", "{", *["  " + y for y in rq], "}"]


def _dsp_single(mult, shift, fast_shift, dbl=False):
    """C lines: output channel c alone (j = c % 4 of the last, partial block) for both pixels: its
    low and high weight words of each group, two __smlad a pixel; the leftovers; requantised."""
    return ["const int8_t* blk = w + (c >> 2) * sw;",
            "const int8_t* w0 = blk + 4 * (c & 3);",
            "const int32_t* q = buf;",
            "int32_t s0 = bt[2 * c], s1 = s0;",
            "for (; q != end; q += 4, w0 += 32) {",
            "  int32_t wl, wh;",
            "  " + _word("wl", 0),
            "  " + _word("wh", 16),
            "  s0 = __smlad(q[0], wl, s0);",
            "  s0 = __smlad(q[1], wh, s0);",
            "  s1 = __smlad(q[2], wl, s1);",
            "  s1 = __smlad(q[3], wh, s1);",
            "}",
            "w0 = blk + 32 * words;      /* the leftovers: four int16 a value */",
            "for (k = 0; k < rest; ++k, q += 2, w0 += 8) {",
            "  int16_t wr;",
            "  memcpy(&wr, w0 + 2 * (c & 3), 2);",
            "  s0 += q[0] * (int32_t)wr;",
            "  s1 += q[1] * (int32_t)wr;",
            "}",
            *_dsp_requant([("c", "s0", "s1")], mult, shift, fast_shift, dbl=dbl)]


def _dsp_blocks(mult, shift, fast_shift, indent, asm_blocks=False, dbl=False):
    """C lines: every output channel of both pixels in the scratch, four a block, then the last
    partial block's one at a time; asm_blocks (per channel): the whole blocks of the common case
    one assembly statement (_blocks_asm) under gcc's optimisation."""
    pad = " " * indent
    per_channel = mult != "mult"
    # the blocks' walking pointers (_dsp_quad): weights, multipliers, shifts, the table's c
    # values, outputs, each one block on after a block
    walk = [*(["const int32_t* rm = mult;", "const int32_t* re = shift;"] if per_channel else []),
            "const int8_t* rw = w;",
            "const int32_t* rt = bt + 1;",
            "int8_t* ro = out;",
            "int8_t* ro1 = o1;"]
    blocks = ["for (c = 0; c + 3 < cout; c += 4) {", *["  " + y for y in _dsp_quad(mult, shift, fast_shift, dbl)], "}"]
    if asm_blocks and per_channel:
        blocks = ["#if defined(__OPTIMIZE__) && !defined(__clang__)",
                  "if (__builtin_expect(fast && full && (cin & 15) == 0 && sw == 8 * cin && cout >= 4"
                  f"{' && dbl' if dbl else ''}, 1)) {{",
                  *["  " + y for y in _blocks_asm(dbl)],
                  "  c = cout & ~3;",
                  "} else",
                  "#endif",
                  "{", *["  " + y for y in blocks], "}"]
    return [pad + y for y in [*walk, *blocks,
                              # (at most three: a count gcc's loop analysis sees bounded)
                              "for (int32_t n1 = cout & 3; n1 > 0; --n1, ++c) {",
                              *["  " + y for y in _dsp_single(mult, shift, fast_shift, dbl)],
                              "}"]]


# the widened weight of output channel c, input channel k in Q15Quads' layout (the plain bodies):
# its int16's index in the block of c: group k / 4's low words (bytes 0, 2) then high words
# (1, 3), channel c % 4's in each; then the leftovers, four channels a value
Q15_AT = ("(k < 4 * words ? 2 * (8 * (k >> 2) + 4 * (k & 1) + (c & 3)) + ((k >> 1) & 1)"
          " : 16 * words + 4 * (k - 4 * words) + (c & 3))")


def _weights_last(cin, cout, sw):
    """The last byte of Q15Quads' weights the call reads: its last block's, sw bytes a block."""
    blocks = (int(cout.value) + 3) // 4
    return Const(blocks - 1, "int32") * sw + Const(8 * int(cin.value) - 1, "int32")


def _plain_weight():
    """C lines: wv = the widened weight of channel c, input k (Q15_AT), read from w's block."""
    return ["int16_t wv;",
            f"memcpy(&wv, w + (c >> 2) * sw + 2 * {Q15_AT}, 2);"]


@register_intrin
class PwS8(TensorIntrin):
    name = "pw_s8"
    headers = {"dsp": ("arm_acle.h", "string.h"), "plain": ("string.h",)}
    written_args = (0,)
    pointer_args = (0, 1, 2, 3, 4, 5, 6)
    scale_args = (4, 5)        # mult, shift: arrays per channel (per_tensor: values)
    per_channel = True

    def last_offsets(self, args):
        npix, cin, cout, sa, so, sw = args[7:13]
        one = Const(1, "int32")
        last_c = cout - one
        words = Const(pw_buf_words(int(cin.value), int(cout.value), self.per_channel) - 1, "int32")
        # (the table's cols8 tail: requant_table's)
        tail = Const(8 * 16 if cols8(int(cin.value), int(cout.value), self.per_channel) else 0, "int32")
        return [(0, (npix - one) * so + last_c), (1, (npix - one) * sa + cin - one), (2, _weights_last(cin, cout, sw)),
                (3, cout + cout + one + tail), (6, words)] + [(k, last_c) for k in self.pointer_args[4:-1]]

    def match(self, loop, acc=None):
        return None, f"{self.name} replaces a pointwise conv's pixel loops (aot/schedules/arm_q15.py), not a loop"

    def variant_for(self, mcpu):
        return "dsp" if core(mcpu).variant == "dsp" else "plain"     # Helium cores take the dot-product calls

    def signature(self):
        ms = "const int32_t* mult, const int32_t* shift" if self.per_channel else "int32_t mult, int32_t shift"
        return (f"int32_t aot_{self.name}(int8_t* out, const int8_t* a, const int8_t* w, const int32_t* bias, {ms}, "
                "int32_t* buf, int32_t npix, int32_t cin, int32_t cout, int32_t sa, int32_t so, int32_t sw, "
                "int32_t off, int32_t zp, int32_t lo, int32_t hi)")

    def c_source(self):
        own = TensorIntrin.c_source(self)
        return "\n".join(cols8_fn()) + "\n" + own if self.per_channel else own

    def bodies(self):
        pc = self.per_channel
        mult, shift = ("mult[{}]", "shift[{}]") if pc else ("mult", "shift")
        fast_shift = shift if pc else "-shift"     # FoldedShift's e per channel; minus the one shift
        head = TABLE_EACH
        dsp = ["int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) * 0x10001u);",
               "int32_t words = cin >> 2, rest = cin & 3, full = lo == -128 && hi == 127;",
               "int32_t p, c, k;",
               "const int32_t* end = buf + 4 * words;",
               *head,
               # (per channel the weights and bias doubled where requant_table's proof holds)
               *(["int32_t dbl = bt[2 * cout];"] if pc else []),
               *(_pix8(0, dbl=True) if pc else []),
               "for (p = 0; p < npix; p += 2, a += 2 * sa, out += 2 * so) {",
               "  int8_t* o1 = npix - p > 1 ? out + so : out;",
               "  const int8_t* s1 = npix - p > 1 ? a + sa : a;",
               "  const int8_t* s0 = a;",
               "  int32_t* d = buf;",
               # both pixels into the scratch (the second a copy of the first on an odd last pixel)
               "  for (k = words; k > 0; --k, s0 += 4, s1 += 4, d += 4) {",
               "    uint32_t u0, u1;",
               "    int32_t h0, h1;",
               "    memcpy(&u0, s0, 4);",
               "    memcpy(&u1, s1, 4);",
               '    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(h0) : "r"(off2), "r"(u0));',
               '    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(h1) : "r"(off2), "r"(u1));',
               "    d[0] = __sxtab16(off2, (int32_t)u0);",
               "    d[1] = h0;",
               "    d[2] = __sxtab16(off2, (int32_t)u1);",
               "    d[3] = h1;",
               "  }",
               "  for (k = rest; k > 0; --k, d += 2) {",
               "    d[0] = (int32_t)*s0++ + off;",
               "    d[1] = (int32_t)*s1++ + off;",
               "  }",
               *_dsp_blocks(mult, shift, fast_shift, 2, asm_blocks=True, dbl=pc),
               "}",
               "return 0;"]
        # one pixel at a time through the scratch (its inputs read whole before its outputs written)
        plain = ["int32_t words = cin >> 2, p, c, k;",
                 "int32_t r, m, sh, left, e, mask, thr;",
                 *TABLE_EACH_PLAIN,
                 *(["int32_t dbl = bt[2 * cout];"] if pc else []),
                 "for (p = 0; p < npix; ++p, a += sa, out += so) {",
                 "  for (k = 0; k < cin; ++k) {",
                 "    buf[k] = (int32_t)a[k] + off;",
                 "  }",
                 "  for (c = 0; c < cout; ++c) {",
                 "    int32_t s = bt[2 * c];",
                 "    for (k = 0; k < cin; ++k) {",
                 *["      " + y for y in _plain_weight()],
                 "      s += buf[k] * (int32_t)wv;",
                 "    }",
                 *(["    s >>= dbl;      /* (even where doubled: exact) */"] if pc else []),
                 *["    " + y for y in plain_requant("s", mult, shift, fast_shift, "out")],
                 "  }",
                 "}",
                 "return 0;"]
        return {"dsp": dsp, "plain": plain}


PwS8T = per_tensor(PwS8, """pw_s8 with one multiplier and shift (int32 values) for every channel: a
    per-tensor quantised pointwise conv.""")


@register_intrin
class PwS8Pair(TensorIntrin):
    """pw_s8's channel blocks over two pixels already in its scratch (gathered windows:
    aot/schedules/arm_gather.py), every channel requantised from the table (FoldedBias,
    FoldedShift):

      pw_s8x2(out, o1, buf, w, bias, mult, shift, cin, cout, sw, zp, lo, hi)
      out[c], o1[c] = clamp(MBQM(B[c] + sum over k < cin of x0[k] (x1[k]) * (int32)w[c*sw + k],
                            mult[c], S[c]) + zp, lo, hi)            for c < cout

    where x0 and x1 are the pixels' values in pw_s8's scratch layout (4-byte groups as two int16
    pair words, pixel 0's then pixel 1's, then the cin % 4 leftovers a word each, pixel by pixel;
    the input offset already added). The same bodies as pw_s8's blocks (the DSP assembly loop
    and the whole blocks' one statement, _blocks_asm, included); the plain body reads the
    scratch's halves."""
    name = "pw_s8x2"
    headers = {"dsp": ("arm_acle.h", "string.h"), "plain": ("string.h",)}
    written_args = (0, 1)
    pointer_args = (0, 1, 2, 3, 4, 5, 6)

    def last_offsets(self, args):
        cin, cout, sw = args[7:10]
        one = Const(1, "int32")
        last_c = cout - one
        return [(0, last_c), (1, last_c), (2, Const(buf_words(int(cin.value)) - 1, "int32")),
                (3, _weights_last(cin, cout, sw)), (4, cout + cout + one), (5, last_c), (6, last_c)]

    def match(self, loop, acc=None):
        return None, f"{self.name} is built by the gather rule (aot/schedules/arm_gather.py), not matched"

    def variant_for(self, mcpu):
        return "dsp" if core(mcpu).variant == "dsp" else "plain"

    def signature(self):
        return ("int32_t aot_pw_s8x2(int8_t* out, int8_t* o1, const int32_t* buf, const int8_t* w, const int32_t* bias, "
                "const int32_t* mult, const int32_t* shift, int32_t cin, int32_t cout, int32_t sw, int32_t zp, "
                "int32_t lo, int32_t hi)")

    def bodies(self):
        mult, shift = "mult[{}]", "shift[{}]"
        head = TABLE_EACH
        dsp = ["int32_t words = cin >> 2, rest = cin & 3, full = lo == -128 && hi == 127;",
               "int32_t c, k;",
               "const int32_t* end = buf + 4 * words;",
               *head,
               *_dsp_blocks(mult, shift, shift, 0, asm_blocks=True),
               "return 0;"]
        plain = ["int32_t words = cin >> 2, p, c, k;",
                 "int32_t r, m, sh, left, e, mask, thr;",
                 *TABLE_EACH_PLAIN,
                 "for (p = 0; p < 2; ++p, out = o1) {",
                 "  for (c = 0; c < cout; ++c) {",
                 "    int32_t s = bt[2 * c];",
                 "    for (k = 0; k < cin; ++k) {",
                 # group k / 4: words 4g + 2p (bytes 0, 2) and 4g + 2p + 1 (1, 3); a leftover: its own word
                 "      uint32_t word = (uint32_t)(k < 4 * words ? buf[4 * (k >> 2) + 2 * p + (k & 1)]"
                 " : buf[4 * words + 2 * (k - 4 * words) + p]);",
                 "      int32_t x = k < 4 * words ? (int32_t)(int16_t)(uint16_t)((word >> (8 * (k & 2))) & 0xFFFFu)"
                 " : (int32_t)word;",
                 *["      " + y for y in _plain_weight()],
                 "      s += x * (int32_t)wv;",
                 "    }",
                 *["    " + y for y in plain_requant("s", mult, shift, shift, "out")],
                 "  }",
                 "}",
                 "return 0;"]
        return {"dsp": dsp, "plain": plain}


@register_intrin
class WidenQ15x(TensorIntrin):
    """One window row run into pw_s8's scratch layout for one pixel: widen_q15x(dst, src, n, off)
    with n a multiple of 4 stores, for each 4-byte group g of src, bytes 0 and 2 plus off as
    int16 pairs to dst[4g], bytes 1 and 3 to dst[4g + 1] (the other pixel's pair of words
    between groups). The DSP body is two __sxtab16 a group, no repacking."""
    name = "widen_q15x"
    headers = {"dsp": ("arm_acle.h", "string.h")}
    pointer_args = (0, 1)
    written_args = (0,)

    def last_offsets(self, args):
        n = args[2]
        return [(0, n - Const(3, "int32")), (1, n - Const(1, "int32"))]

    def match(self, loop, acc=None):
        return None, f"{self.name} is built by the gather rule (aot/schedules/arm_gather.py), not matched"

    def variant_for(self, mcpu):
        return "dsp" if core(mcpu).variant == "dsp" else "plain"

    def signature(self):
        return "int32_t aot_widen_q15x(int32_t* dst, const int8_t* src, int32_t n, int32_t off)"

    def bodies(self):
        dsp = ["int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) * 0x10001u);",
               "uint32_t x;",
               "int32_t o;",
               "for (; n > 0; n -= 4, src += 4, dst += 4) {",
               "  memcpy(&x, src, 4);",
               '  __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(o) : "r"(off2), "r"(x));',
               "  dst[0] = __sxtab16(off2, (int32_t)x);",
               "  dst[1] = o;",
               "}",
               "return 0;"]
        plain = ["for (; n > 0; n -= 4, src += 4, dst += 4) {",
                 "  uint32_t v[4];",
                 "  int32_t j;",
                 "  for (j = 0; j < 4; ++j) {",
                 "    v[j] = (uint32_t)((int32_t)src[j] + off) & 0xFFFFu;",
                 "  }",
                 "  dst[0] = (int32_t)(v[0] | (v[2] << 16));",
                 "  dst[1] = (int32_t)(v[1] | (v[3] << 16));",
                 "}",
                 "return 0;"]
        return {"dsp": dsp, "plain": plain}


def _fc_asm(groups):
    """C lines: fc_s8x4's loop over `groups` 4-byte input groups a step (pa != end4 on entry) as
    Thumb-2 assembly: per group the input word and the four rows' words loaded together (five
    loads pipelined), the input and each weight word widened by sxtb16 and its rotated form,
    eight SMLADs; 14 registers (the four sums, pa, wp, the input's two halves, four weight words,
    one temporary), the loop's end read from memory."""
    g = []
    for at in range(groups):
        g += ["ldr %[x], [%[pa]], #4", f"ldr %[w0], [%[wp], #{16 * at}]", f"ldr %[w1], [%[wp], #{16 * at + 4}]",
              f"ldr %[w2], [%[wp], #{16 * at + 8}]", f"ldr %[w3], [%[wp], #{16 * at + 12}]",
              "sxtb16 %[xl], %[x]", "sxtb16 %[x], %[x], ror #8"]
        for j in range(4):
            g += [f"sxtb16 %[t], %[w{j}], ror #8", f"smlad %[s{j}], %[x], %[t], %[s{j}]",
                  f"sxtb16 %[w{j}], %[w{j}]", f"smlad %[s{j}], %[xl], %[w{j}], %[s{j}]"]
    g += [f"adds %[wp], %[wp], #{16 * groups}", "ldr %[t], %[end]", "cmp %[pa], %[t]", "bne 1b"]
    return (["uint32_t x, xl, w0, w1, w2, w3, t;",
             '__asm__(".p2align 2\\n1:\\n\\t"'] + [f'        "{y}\\n\\t"' for y in g] +
            ['        : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [pa] "+r"(pa), [wp] "+r"(wp),',
             '          [x] "=&r"(x), [xl] "=&r"(xl), [w0] "=&r"(w0), [w1] "=&r"(w1), [w2] "=&r"(w2),',
             '          [w3] "=&r"(w3), [t] "=&r"(t)',
             '        : [end] "m"(end4)',
             '        : "cc", "memory");'])


def _fc_step(at=0):
    """The C loop's step over one 4-byte input group: the input word and the four rows' words
    (the RowQuads layout: consecutive), eight __smlad."""
    lines = [f"memcpy(&x, pa{f' + {4 * at}' if at else ''}, 4);",
             "xl = __sxtb16((int32_t)x);",
             '__asm__("sxtb16 %0, %1, ror #8" : "=r"(xh) : "r"(x));']
    for j in range(4):
        lines += [f"memcpy(&v, wp + {16 * at + 4 * j}, 4);",
                  f"s{j} = __smlad(xl, __sxtb16((int32_t)v), s{j});",
                  '__asm__("sxtb16 %0, %1, ror #8" : "=r"(t) : "r"(v));',
                  f"s{j} = __smlad(xh, t, s{j});"]
    return lines


@register_intrin
class FcS8x4(TensorIntrin):
    """Arm micro-kernel for TFLite's int8 fully connected layer of one row on the DSP extension:
    four output channels a block, every channel requantised from the table.

      fc_s8x4(out, a, w, bias, mult, shift, cin, cout, zp, lo, hi)
      out[c] = clamp(MBQM(B[c] + sum over k < cin of (int32)a[k] * W(c, k), mult[c], S[c]) + zp, lo, hi)

    cin and cout are multiples of 4. w holds the weights in the RowQuads layout (the schedule's,
    aot/schedules/arm_q15.py): for each block of four rows, each 4-byte group of the input is
    the four rows' words one after another, so one pointer walks a block's weights in the order
    the loop reads them. `bias` is the requantisation's table (aot/schedules/requant_table.py)
    with the input offset folded into its biases (B[c] = bias[c] + off * sum of row c), so the
    input is widened without it; `shift` FoldedShift's. fc_s8x4t: one multiplier and shift
    (int32 values). DSP body: per group one input word widened by __sxtb16 and its rotated form,
    each row's word the same, eight __smlad: 16 multiply-accumulates; under gcc with
    optimisation, on a single-issue core (AOT_CORTEX_M_SINGLE_ISSUE) and word-aligned weights,
    Thumb-2 assembly over four groups a step (the C loop's pairs and single group after it);
    the requantisation the folded form where the table's c of the
    channel is not 0 (mbqm_folded_lines), else the exact halving form. Plain body: the same sums read
    through the layout."""
    name = "fc_s8x4"
    headers = {"dsp": ("arm_acle.h", "string.h")}
    written_args = (0,)
    pointer_args = (0, 1, 2, 3, 4, 5)
    scale_args = (4, 5)
    per_channel = True

    def last_offsets(self, args):
        cin, cout = args[6:8]
        one = Const(1, "int32")
        last_c = cout - one
        return [(0, last_c), (1, cin - one), (2, cout * cin - one), (3, cout + cout + one)] + \
            [(k, last_c) for k in self.pointer_args[4:]]

    def match(self, loop, acc=None):
        return None, f"{self.name} replaces a one-row fully connected layer (aot/schedules/arm_q15.py), not a loop"

    def variant_for(self, mcpu):
        return "dsp" if core(mcpu).variant == "dsp" else "plain"

    def signature(self):
        ms = "const int32_t* mult, const int32_t* shift" if self.per_channel else "int32_t mult, int32_t shift"
        return (f"int32_t aot_{self.name}(int8_t* out, const int8_t* a, const int8_t* w, const int32_t* bias, {ms}, "
                "int32_t cin, int32_t cout, int32_t zp, int32_t lo, int32_t hi)")

    def bodies(self):
        pc = self.per_channel
        mult, shift = ("mult[{}]", "shift[{}]") if pc else ("mult", "shift")
        fast_shift = shift if pc else "-shift"
        chans = [("c" if j == 0 else f"c + {j}", f"s{j}", None) for j in range(4)]
        step2 = ["for (; pa != end2; pa += 8, wp += 32) {", *["  " + y for y in _fc_step() + _fc_step(1)], "}"]
        dsp = ["int32_t full = lo == -128 && hi == 127, c;",
               *TABLE_EACH,
               "for (c = 0; c < cout; c += 4) {",
               "  int32_t s0 = bt[2 * c], s1 = bt[2 * c + 2], s2 = bt[2 * c + 4], s3 = bt[2 * c + 6];",
               "  const int8_t* pa = a;",
               "  const int8_t* wp = w + c * cin;",
               "  const int8_t* end2 = a + (cin & ~7);",
               "  uint32_t x, v;",
               "  int32_t xl, xh, t;",
               "#if defined(__OPTIMIZE__) && !defined(__clang__) && defined(AOT_CORTEX_M_SINGLE_ISSUE)",
               "  const int8_t* end4 = a + (cin & ~15);",
               "  if (pa != end4 && ((uintptr_t)wp & 3u) == 0) {",
               *["    " + y for y in _fc_asm(4)],
               "  }",
               "#endif",
               *["  " + y for y in step2],
               "  if (cin & 4) {",
               *["    " + y for y in _fc_step()],
               "  }",
               *["  " + y for y in _dsp_requant(chans, mult, shift, fast_shift)],
               "}",
               "return 0;"]
        plain = ["int32_t c, k;",
                 "int32_t r, m, sh, left, e, mask, thr;",
                 *TABLE_EACH_PLAIN,
                 "for (c = 0; c < cout; ++c) {",
                 "  int32_t s = bt[2 * c];",
                 "  for (k = 0; k < cin; ++k) {",
                 # row c's element k: block c / 4, group k / 4, row c % 4, byte k % 4
                 "    s += (int32_t)a[k] * (int32_t)w[((c >> 2) * (cin >> 2) + (k >> 2)) * 16 + (c & 3) * 4 + (k & 3)];",
                 "  }",
                 *["  " + y for y in plain_requant("s", mult, shift, fast_shift, "out")],
                 "}",
                 "return 0;"]
        return {"dsp": dsp, "plain": plain}


FcS8x4T = per_tensor(FcS8x4, """fc_s8x4 with one multiplier and shift (int32 values) for every channel: a
    per-tensor quantised fully connected layer.""")
