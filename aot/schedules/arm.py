"""Cortex-M rule (pipelines.py: "cortex_m"): int8 dot products as ACLE micro-kernels; a kernel
it does not take gets the CPU rules of cpu.py.

An integer convolution or fully connected layer lowers to an int32 accumulation whose
operands are int8 loads; in NHWC with OHWI weights (TFLite's layouts) the input-channel loop
reads both consecutively. That loop goes innermost (with the window row's taps when they make
one run) and becomes one dot_s8 call (aot/tir/intrin/arm.py), or with the window's rows
around it one dot_s8_rows call; a staged kernel's nest (aot/schedules/inplace_conv.py) gets
the same inside its staging. Then the output channels go four to a dot_s8x4q call with
their requantisation, or two to a dot_s8x2 call (aot/schedules/arm_pairs.py). The C compiler
builds the calls with Helium on cortex-m55/m85, with the DSP extension's SIMD32 on
cortex-m4/m7/m33, and as the plain loop elsewhere. A core without either (cortex-m0/m3) keeps the CPU rules' register tiles, which serve it better than a call
per output. The choice is recorded in func.attrs["schedule"] for `aot info`.
"""
from __future__ import annotations

from ..tir.intrin import get_intrin
from ..tir.schedule import ScheduleError, reorder, tensorize
from ..tir.simplify import bounds, const_value, loop_ranges
from ..tir.stmt import For, Seq
from ..tir.trace import mark, rollback
from .arm_fold import fold_offset
from .arm_pairs import pair_channels
from .nests import accumulation, map_staged_parts, nests as _nests

DOT = "dot_s8"
ROWS = "dot_s8_rows"
MIN_DOT = 4          # a shorter contiguous run is not worth a call (a 1-channel first layer)
DSP_TAPS_MIN = 32    # with DSP and a window of taps around the run: the shortest run worth a call


def _longest(lp, ranges):
    """The most iterations loop lp makes (a window row clipped at the border: its full width)."""
    b = bounds(lp.extent, ranges)
    return b[1] if b is not None else 1


def _dot_run(red, variant, ranges=None):
    """(reorder, loop to tensorize at) for the longest run both int8 operands read
    consecutively: the channel loop innermost, with the window-row loop around it when the two
    make one run (NHWC input, OHWI weights, no dilation; a row clipped at the border counts
    its full width); None if no run is long enough to pay for a call. With DSP and a window of
    rows around the run, the call costs more than the CPU rules' register tiles save until the
    run is DSP_TAPS_MIN long (measured on ResNet-8's 3x3 convs: rows of 16-channel taps, 48
    bytes, are 17% fewer instructions as calls; 9-byte rows of a 3-channel conv are not)."""
    it, body = get_intrin(DOT), red[-1].body
    ranges = ranges or {}
    for r in red:
        if _longest(r, ranges) < 1 or it.match(For(r.var, r.min, r.extent, body), body.buffer)[0] is None:
            continue
        rest = [x for x in red if x is not r]
        # the row loop: one run with the channels under it
        for outer in reversed(rest):
            nest = For(outer.var, outer.min, outer.extent, For(r.var, r.min, r.extent, body))
            if it.match(nest, body.buffer)[0] is not None:
                others = [x for x in rest if x is not outer]
                run, head = _longest(outer, ranges) * _longest(r, ranges), outer
                break
        else:
            others, run, head = rest, _longest(r, ranges), r
        taps = any(const_value(x.extent) != 1 for x in others)
        if run < (DSP_TAPS_MIN if variant == "dsp" and taps else MIN_DOT):
            return None
        return [x.var for x in others] + ([head.var] if head is not r else []) + [r.var], head
    return None


def _tensorize_nest(nest, variant, ranges):
    """nest with its int32 accumulation's run as one dot_s8 call, or None. A nest that is not
    one accumulation may be a staged kernel's (aot/schedules/inplace_conv.py: loops over the
    pixels around computing one pixel into scratch, then copying it back): its parts are tried
    in turn, each with the ranges of the loops around it."""
    found = accumulation(nest)
    if not found:
        def part(p, loops):
            inner = ranges
            for lp in loops:
                inner = loop_ranges(inner, lp)
            return _tensorize_nest(p, variant, inner)
        return map_staged_parts(nest, part)
    if found[2].dtype != "int32" or not found[1]:
        return None
    for lp in found[0]:
        ranges = loop_ranges(ranges, lp)
    red = found[1]
    plan = _dot_run(red, variant, ranges)
    if plan is None:
        return None
    order, head = plan
    at = mark()             # the reorder stays out of the trace when no call follows
    try:
        s = reorder(nest, order) if [x.var for x in red] != order else nest
    except ScheduleError:
        return None
    # the window rows around the run in the same call (dot_s8_rows: one call per output)
    around = len(order) - (1 if head.var is order[-1] else 2) - 1
    rows = [x for x in red if around >= 0 and x.var is order[around]]
    if rows and const_value(rows[0].extent) != 1:
        try:
            return tensorize(s, rows[0].var, ROWS)
        except ScheduleError:
            pass
    try:
        return tensorize(s, head.var, DOT)
    except ScheduleError:
        rollback(at)
        return None


def tensorize_dots(func, target):
    variant = get_intrin(DOT).variant_for(target.mcpu)
    if variant == "plain":
        return None
    nests, done, folds, params = _nests(func.body), 0, {}, list(func.params)
    for n, nest in enumerate(nests):
        got = _tensorize_nest(nest, variant, {})
        if got is not None:
            if variant == "mve":          # (the DSP body adds the offset for free: sxtab16)
                new, got, fold = fold_offset(func, got)
                params = [b if b is not o else x for b, o, x in zip(params, func.params, new)]
                folds.update(fold)
            nests[n] = pair_channels(got, quads=True, helium=variant == "mve") or got
            done += 1
    if not done:
        return None
    attrs = dict(func.attrs, schedule=f"{DOT} ({variant})")
    if folds:
        attrs["layouts"] = {**func.attrs.get("layouts", {}), **folds}
    return func.with_body(Seq(nests), params, attrs=attrs)

