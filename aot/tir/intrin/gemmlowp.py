"""gemmlowp's fixed-point arithmetic as C text: the one place the micro-kernels (and the C
renderer's aot_srdhm / aot_rdbpot helpers) get SaturatingRoundingDoublingHighMul,
RoundingDivideByPOT and TFLite's requantisation step from.

Each function returns an expression or a list of statement lines, parametrised by what the call
sites write differently (variable names, C type names of a dialect, the spelling of INT32_MIN,
where the rounding's sign correction comes from), so that each kernel keeps its own text.
The arithmetic they write:

- srdhm(a, b) = INT32_MAX when a == b == INT32_MIN, else floor((a * b + 2^30) / 2^31): gemmlowp's
  nudge (2^30, or 1 - 2^30 below zero, then a truncating division) is that floor for every
  product, one add and one arithmetic shift of the int64 product;
- rdbpot(x, e) = x / 2^e rounded half away from zero: (x >> e) plus one when the remainder
  (x & mask) is above half of 2^e, or is half with x non-negative. The other forms here
  are the same value: half up of x - 1 when x < 0 (the remainder test on the bit below the
  shift, or an add of 2^(e-1) before the shift);
- Helium: vqrdmulh is srdhm exactly; vrshl by -e rounds half up, so x - 1 first for negative x
  (and e > 0) rounds half away from zero.
`>>` on a negative int32 is the arithmetic shift gcc and clang define (and the kernels assume).
"""
from __future__ import annotations

INT32_NAMES = ("INT32_MIN", "INT32_MAX")              # <stdint.h>'s
INT32_LITERALS = ("(-2147483647 - 1)", "2147483647")   # where the text names no macro


# -- scalar: expressions ---------------------------------------------------------------------
def product(a, b, i64="int64_t", widen_b=True) -> str:
    """a * b as an int64 product (b widened too, or left to C's conversions)."""
    return f"({i64}){a} * ({i64}){b}" if widen_b else f"({i64}){a} * {b}"


def high_mul(prod, i32="int32_t", i64="int64_t") -> str:
    """floor((prod + 2^30) / 2^31) of an int64 product: srdhm short of its one saturating case
    (enough where the multiplier is known not to be INT32_MIN)."""
    return f"({i32})(({prod} + (({i64})1 << 30)) >> 31)"


def srdhm(a, b, high, limits=INT32_NAMES, both_min=False, sep=" : ") -> str:
    """SaturatingRoundingDoublingHighMul(a, b), `high` being high_mul of their product: INT32_MAX
    for INT32_MIN * INT32_MIN, tested as a == b == INT32_MIN (or with both_min as a == INT32_MIN
    and b == INT32_MIN); sep goes between the saturated value and `high`."""
    lo, hi = limits
    guard = f"({a} == {lo} && {b} == {lo})" if both_min else f"({a} == {b} && {a} == {lo})"
    return f"{guard} ? {hi}{sep}{high}"


def low_mask(e, i32="int32_t", u32="uint32_t", one="1u") -> str:
    """2^e - 1 (e in 0..31, through uint32: 1 << 31 overflows int32)."""
    return f"({i32})((({u32})1 << {e}) - {one})"


def round_threshold(x, half="(mask >> 1)", sign_shift=False) -> str:
    """The remainder rdbpot rounds up beyond: half of 2^e, one more for negative x (x < 0, or with
    sign_shift minus x's sign word x >> 31)."""
    return f"{half} - ({x} >> 31)" if sign_shift else f"{half} + ({x} < 0)"


def rdbpot(x, e, threshold) -> str:
    """RoundingDivideByPOT(x, e) as (x >> e) plus the remainder (x & mask, mask = low_mask(e))
    passing `threshold` (round_threshold)."""
    return f"({x} >> {e}) + (({x} & mask) > {threshold})"


def left_of(shift) -> str:
    """MBQM's left shift: the shift where positive, else 0."""
    return f"{shift} > 0 ? {shift} : 0"


def right_of(shift) -> str:
    """MBQM's rounding right shift: minus the shift where not positive, else 0."""
    return f"{shift} > 0 ? 0 : -{shift}"


def right_from_left(left, shift) -> str:
    """MBQM's rounding right shift from its left one (left_of(shift) in `left`): left - shift,
    which is max(-shift, 0) without a second select."""
    return f"{left} - {shift}"


def srdhm_of_wrapped(q, limits=INT32_NAMES) -> str:
    """srdhm's saturation applied to the int32 `q` that high_mul of a full int32 product gives:
    that high word is INT32_MIN only for INT32_MIN * INT32_MIN (2^62, whose high word 2^31
    wraps to it: every other product's lies in [-2^31 + 1, 2^31 - 1]), where srdhm is INT32_MAX.
    One compare of the result, where srdhm's guard compares both operands."""
    lo, hi = limits
    return f"{q} == {lo} ? {hi} : {q}"


# -- scalar: statements -----------------------------------------------------------------------
def srdhm_lines(x, m) -> list:
    """C lines: x = srdhm(x, m) through the int64 `ab` the caller declares."""
    return [f"ab = {product(x, m)};", f"{x} = {srdhm(x, m, high_mul('ab'))};"]


def rdbpot_lines(x, e) -> list:
    """C lines: x = rdbpot(x, e) through the int32 `mask` the caller declares."""
    return [f"mask = {low_mask(e)};", f"{x} = {rdbpot(x, e, '(' + round_threshold(x) + ')')};"]


def rdbpot_bit_lines(q, y, e) -> list:
    """C lines: q = rdbpot(q, e) for e >= 1 as half up of y = q - 1 for negative q (its bit below
    the shift added: no mask); y declared here. q must not be INT32_MIN."""
    return [f"int32_t {y} = {q} - (int32_t)((uint32_t){q} >> 31);",
            f"{q} = ({y} >> {e}) + (({y} >> ({e} - 1)) & 1);"]


def mbqm_lines(x, mult, shift) -> list:
    """C lines: x = MultiplyByQuantizedMultiplier(x, mult, shift) (TFLite): x shifted left by the
    positive shift, srdhm by mult, rdbpot by the negative shift; int64 ab and int32 e, mask
    declared by the caller."""
    return [f"{x} = (int32_t)((uint32_t){x} << ({left_of(shift)}));",
            *srdhm_lines(x, mult),
            f"e = {right_of(shift)};",
            *rdbpot_lines(x, "e")]


def rdbpot_flat_lines(q, e, sign, y="y") -> list:
    """C lines: q = rdbpot(q, e) for every e in 0..31 with no branch and no mask: y = q less one
    where q and `sign` are both negative (`sign` is negative exactly when e > 0: MBQM's shift),
    then y / 2^e rounded half up, the bit below the shift being bit e of 2y (through uint32; 0
    for e = 0, where y is q). y declared here; q must not be INT32_MIN."""
    return [f"int32_t {y} = {q} + (({q} & {sign}) >> 31);",
            f"{q} = ({y} >> {e}) + (int32_t)((((uint32_t){y} << 1) >> {e}) & 1u);"]


def mbqm_flat_lines(x, mult, shift, q="q", limits=INT32_NAMES) -> list:
    """C lines: int32 `q` = MultiplyByQuantizedMultiplier(x, mult, shift) (TFLite) with no branch
    on the shift's sign, for a compiler to schedule as straight code (a conditional move at
    most). They declare int32 left, right and y: left = max(shift, 0), right = max(-shift, 0)
    (right_from_left); x shifted left through uint32 (no signed overflow); srdhm as high_mul of
    the int64 product (a multiply-accumulate onto the 2^30 nudge) with the saturation tested on
    the wrapped result (srdhm_of_wrapped); rdbpot by `right` in its flat form
    (rdbpot_flat_lines, the shift's sign telling right > 0), exact for every right in 0..31.
    High_mul's int64 -> int32 conversion of 2^31 (INT32_MIN * INT32_MIN) is gcc's and clang's
    modulo conversion, as the left shift's."""
    return [f"int32_t left = {left_of(shift)};",
            f"int32_t right = {right_from_left('left', shift)};",
            f"int32_t {q} = (int32_t)((uint32_t){x} << left);",
            f"{q} = {high_mul(product(q, mult))};",
            f"{q} = {srdhm_of_wrapped(q, limits)};",
            *rdbpot_flat_lines(q, "right", shift)]


def rdbpot_halving_lines(q, r1, keep) -> list:
    """C lines: q = rdbpot(q, e) for every e in 0..31 in four operations and no mask, given
    keep = -1 where e > 0 (else 0) and r1 = e - 1 where e > 0 (else 0): q less one where q is
    negative and e > 0 (half away from zero is half up of q - 1), t = that >> r1, then half up
    of t / 2 as t - (t >> 1) (floor((t + 1) / 2), which cannot overflow) where e > 0, t itself
    where not. q must not be INT32_MIN."""
    return [f"{q} += ({q} & {keep}) >> 31;",
            f"{q} >>= {r1};",
            f"{q} -= ({q} >> 1) & {keep};"]


def mbqm_halving_lines(x, mult, shift, q="q", limits=INT32_NAMES) -> list:
    """C lines: int32 `q` = MultiplyByQuantizedMultiplier(x, mult, shift) (TFLite) as
    mbqm_flat_lines with no branch, its rounding shift rdbpot_halving_lines (two operations fewer
    a value). They declare int32 left (max(shift, 0)), keep (shift >> 31: -1 where MBQM shifts
    right) and r1 (the right shift less one where there is one: right_from_left plus keep), the
    shift's part a compiler shares between values of one channel."""
    return [f"int32_t left = {left_of(shift)};",
            f"int32_t keep = {shift} >> 31;",
            f"int32_t r1 = {right_from_left('left', shift)} + keep;",
            f"int32_t {q} = (int32_t)((uint32_t){x} << left);",
            f"{q} = {high_mul(product(q, mult))};",
            f"{q} = {srdhm_of_wrapped(q, limits)};",
            *rdbpot_halving_lines(q, "r1", "keep")]


def mbqm_folded_lines(x, mult, c, e, q="q", asm=True, lsl="1") -> list:
    """C lines: int32 `q` = MultiplyByQuantizedMultiplier(x, mult, -e) + zp (TFLite), the zero
    point folded into c = 2^(e-1) + zp * 2^e (folded_requant, which also proves the bounds this
    form needs: e in 1..31, mult >= 0, x in [-2^30, 2^30), |c| < 2^30 and c + srdhm in int32).
    srdhm(x, m) is the high word of 2 x m + 2^31 (Arm's SMMULR of the doubled value, exact there),
    and SMMLAR adds c to it in the same instruction; rdbpot(y, e) + zp is then floor((y - [y < 0]
    + c) / 2^e), where [x < 0] stands for [y < 0] (they differ only where y is 0, whose quotient is
    0 either way for e >= 1). asm: SMMLAR itself (DSP cores), else its definition in int64. lsl:
    the doubling's shift (0 for a sum already doubled: its sign is x's, "1 - dbl" where a
    kernel's flag tells)."""
    first = (f'__asm__("smmlar %0, %1, %2, %3" : "=r"({q}) : "r"({q}), "r"({mult}), "r"({c}));' if asm else
             f"{q} = (int32_t)(((int64_t){q} * {mult} + (int64_t){c} * 4294967296 + 2147483648) >> 32);")
    return [f"int32_t {q} = (int32_t)((uint32_t){x} << {lsl});",
            first,
            f"{q} += {x} >> 31;",
            f"{q} >>= {e};"]


def mbqm_folded_asm(x, t, mult, c, e) -> list:
    """Thumb-2 assembly lines (an __asm__ template's strings, operands by name: %[x]) of
    mbqm_folded_lines on register x in place (t a scratch register), for a kernel's hand-written
    loop: x = (SMMLAR(2x, mult, c) + [x < 0]) >> e."""
    return [f'"lsl %[{t}], %[{x}], #1\\n"',
            f'"smmlar %[{t}], %[{t}], %[{mult}], %[{c}]\\n"',
            f'"add %[{x}], %[{t}], %[{x}], asr #31\\n"',
            f'"asr %[{x}], %[{x}], %[{e}]\\n"']


def mbqm_folded2_asm(x, t, mult, c, e) -> list:
    """mbqm_folded_asm's lines for register x holding the sum already doubled (a kernel whose
    weights and bias are doubled): no shift first. Where the folded form holds |sum| < 2^30, so
    2 * sum keeps its sign: x = (SMMLAR(x, mult, c) + [x < 0]) >> e."""
    return [f'"smmlar %[{t}], %[{x}], %[{mult}], %[{c}]\\n"',
            f'"add %[{x}], %[{t}], %[{x}], asr #31\\n"',
            f'"asr %[{x}], %[{x}], %[{e}]\\n"']


def folded_requant(bias, mult, shift, zp, bound, per_channel=False, dead=False, fixed=None):
    """(fast, c, e) for mbqm_folded_lines over channels with int32 arrays bias, mult and shift
    (TFLite's: MBQM shifts left by a positive shift, right by minus a negative one) and each
    channel's bound on |sum - bias| (its accumulator without the bias): fast when every channel
    meets the form's conditions, with c = 2^(e-1) + zp * 2^e and e = -shift; (False, zeros, shift)
    otherwise (the exact form then). per_channel: each channel on its own, c = 0 and its shift as
    it is where it does not meet them (fast: whether any does). dead: a channel whose multiplier
    is 0 (its value is zp whatever its sum: SMMLAR gives c itself) takes e = 1 and holds, for a
    table whose shifts are laid out per channel. fixed: (mask, values) for such a table, the
    channels whose sum is their bias whatever the input (all weights 0) and their requantised
    values (clamped to int8's range): each holds with e = 2 or 3 and the c that gives its
    value from the form's own arithmetic on that sum (fixed_c)."""
    import numpy as np
    b, m, sh = (np.asarray(v, dtype=np.int64).reshape(-1) for v in (bias, mult, shift))
    acc = np.abs(b) + np.asarray(bound, dtype=np.int64).reshape(-1)
    e = -sh
    free = (m == 0) & dead               # its value zp for any e and any sum
    e = np.where(free, 1, e)
    ok = (e >= 1) & (e <= 31) & (m >= 0) & ((acc < (1 << 30)) | free)
    c = np.where(ok, (np.int64(1) << np.clip(e - 1, 0, 62)) + np.int64(zp) * (np.int64(1) << np.clip(e, 0, 62)), 0)
    high = ((2 * np.minimum(acc, 1 << 30) * m) >> 32) + 1    # |srdhm(sum, m)| at most (where acc holds)
    ok &= (np.abs(c) < (1 << 30)) & (np.abs(c) + high + 1 < (1 << 31))
    c = np.where(ok, c, 0)
    if fixed is not None:
        for k in np.flatnonzero(fixed[0]):
            got = fixed_c(int(b[k]), int(m[k]), int(fixed[1][k]))
            if got is not None:
                ok[k], c[k], e[k] = True, got[0], got[1]
    if per_channel:
        return bool(np.any(ok)), c, np.where(ok, e, sh)
    return (True, c, e) if bool(np.all(ok)) else (False, np.zeros_like(e), sh)


def fixed_c(x, m, v):
    """(c, e) with e in 2..3 for which the folded form (mbqm_folded_lines: SMMLAR of x doubled in
    uint32, the sign of x, the shift by e) gives v from the sum x and the multiplier m, worked out
    from the same operations on the host: SMMLAR's high word is c plus k = floor((2x m + 2^31) /
    2^32) (2x wrapped to int32, as the kernels' shift does), so c = v 2^e + 2^(e-1) - k + [x < 0]
    (e = 3 where e = 2 would give the c 0 that means the exact form: then c = 4v + 2, never 0).
    With e >= 2 the value is v whichever sign is added, so a kernel that doubles the sum itself
    (its weights and bias doubled: the sign then that of the wrapped 2x) gets it too; None where
    c leaves int32 or m < 0."""
    t = ((2 * x + (1 << 31)) % (1 << 32)) - (1 << 31)
    k = (t * m + (1 << 31)) >> 32
    for e in (2, 3):
        c = (v << e) + (1 << (e - 1)) - k + (1 if x < 0 else 0)
        if c != 0 and m >= 0 and abs(c) < (1 << 31) - (1 << 8):
            return c, e
    return None


def requantise_lines(x, mult, shift, zp="zp") -> list:
    """C lines: TFLite's requantisation of x short of its clamp: mbqm, then the zero point."""
    return mbqm_lines(x, mult, shift) + [f"{x} += {zp};"]


def clamp(x, lo="lo", hi="hi") -> str:
    """x clamped to [lo, hi]."""
    return f"{x} < {lo} ? {lo} : ({x} > {hi} ? {hi} : {x})"


# -- Helium (MVE) -----------------------------------------------------------------------------
def mve_srdhm(v, m, scalar=False) -> str:
    """srdhm lane by lane: vqrdmulh (m a vector, or with scalar one int32 for every lane)."""
    return f"vqrdmulhq_n_s32({v}, {m})" if scalar else f"vqrdmulhq_s32({v}, {m})"


def mve_left(v, left) -> str:
    """v shifted left by `left` (a vector of non-negative shifts)."""
    return f"vshlq_s32({v}, {left})"


def mve_rshl(v, r) -> str:
    """v shifted by r lanes (r = -e <= 0: a right shift rounding half up)."""
    return f"vrshlq_s32({v}, {r})"


def mve_rdbpot(v, r) -> str:
    """rdbpot lane by lane, r = -e (0 or negative): vrshl after adding the sign bit of v & r (one
    less for a negative v where a right shift follows: half away from zero), saturating."""
    return mve_rshl(f"vqaddq_s32({v}, vshrq_n_s32(vandq_s32({v}, {r}), 31))", r)


def mve_rdbpot_fixup(v, r) -> str:
    """mve_rdbpot's correction on its own, through the two sign words: v minus one in the lanes
    where v and r (= -e) are both negative; mve_rshl(.., r) completes the division."""
    return f"vqaddq_s32({v}, vandq_s32(vshrq_n_s32({v}, 31), vshrq_n_s32({r}, 31)))"


def mve_clamp(v, lo="vdupq_n_s32(lo)", hi="vdupq_n_s32(hi)", zp="zp") -> str:
    """v plus the zero point, clamped to [lo, hi] (vectors)."""
    return f"vminq_s32(vmaxq_s32(vaddq_n_s32({v}, {zp}), {lo}), {hi})"
