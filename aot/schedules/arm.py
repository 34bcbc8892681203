"""Schedule rules for Cortex-M ("arm_cpu" key): int8 dot products as ACLE micro-kernels, then
the CPU rules of cpu.py for everything else.

An integer convolution or fully connected layer lowers to an int32 accumulation whose
operands are int8 loads; in NHWC with OHWI weights (TFLite's layouts) the input-channel loop
reads both consecutively. That loop goes innermost and becomes one dot_s8 call
(aot/tir/intrin/arm.py), which the C compiler builds with Helium on cortex-m55/m85, with the
DSP extension's SIMD32 on cortex-m4/m7/m33, and as the plain loop elsewhere. A core without
either (cortex-m0/m3) keeps the CPU rules' register tiles, which serve it better than a call
per output. The choice is recorded in func.attrs["schedule"] for `aot info`.
"""
from __future__ import annotations

from ..tir.intrin import get_intrin
from ..tir.schedule import ScheduleError, reorder, tensorize
from ..tir.simplify import const_value
from ..tir.stmt import For, Seq
from . import cpu
from .nests import accumulation, nests as _nests, staged_compute
from .registry import register, rules_of

DOT = "dot_s8"
MIN_DOT = 4          # a shorter contiguous run is not worth a call (a 1-channel first layer)
DSP_TAPS_MIN = 32    # with DSP and a window of taps around the run: the shortest run worth a call


def _dot_run(red, variant):
    """(reorder, loop to tensorize at) for the longest run both int8 operands read
    consecutively: the channel loop innermost, with the window-row loop around it when the two
    make one run (NHWC input, OHWI weights, no dilation); None if no run is long enough to pay
    for a call. With DSP, a call per window tap costs more than the CPU rules' register tiles
    save until the run is DSP_TAPS_MIN long (measured on ResNet-8's 3x3 convs)."""
    it, body = get_intrin(DOT), red[-1].body
    for r in red:
        if not (const_value(r.extent) or 0) or it.match(For(r.var, r.min, r.extent, body), body.buffer)[0] is None:
            continue
        rest = [x for x in red if x is not r]
        # the row loop: one run with the channels under it (Helium only: on ResNet-8 the DSP body
        # ran 10-17% slower over rows of 32- and 64-channel taps than tap by tap)
        for outer in reversed(rest) if variant == "mve" else ():
            nest = For(outer.var, outer.min, outer.extent, For(r.var, r.min, r.extent, body))
            if it.match(nest, body.buffer)[0] is not None:
                others = [x for x in rest if x is not outer]
                run, head = (const_value(outer.extent) or 1) * const_value(r.extent), outer
                break
        else:
            others, run, head = rest, const_value(r.extent), r
        taps = any(const_value(x.extent) != 1 for x in others)
        if run < (DSP_TAPS_MIN if variant == "dsp" and taps else MIN_DOT):
            return None
        return [x.var for x in others] + ([head.var] if head is not r else []) + [r.var], head
    return None


def tensorize_dots(func, target):
    variant = get_intrin(DOT).variant_for(target.mcpu)
    if variant == "plain":
        return func
    nests, done = _nests(func.body), 0
    for n, top in enumerate(nests):
        nest, put_back = staged_compute(top)      # a staged kernel: its compute half
        found = accumulation(nest) if nest is not None else None
        if not found or found[2].dtype != "int32" or not found[1]:
            continue
        red = found[1]
        plan = _dot_run(red, variant)
        if plan is None:
            continue
        order, head = plan
        try:
            s = reorder(nest, order) if [x.var for x in red] != order else nest
            nests[n] = put_back(tensorize(s, head.var, DOT))
            done += 1
        except ScheduleError:
            continue
    if not done:
        return func
    attrs = dict(func.attrs, schedule=f"{DOT} ({variant})")
    return func.with_body(Seq(nests), attrs=attrs)


@register("arm_cpu")
def arm_rules(func, target):
    """The micro-kernels where they apply; the CPU rules for the rest (register tiles only in a
    kernel with no micro-kernel: packing the weights for the tiles would break the contiguous
    runs the calls read)."""
    func = tensorize_dots(func, target)
    for rule in rules_of("cpu"):
        if rule is cpu.register_tiles and "schedule" in func.attrs:
            continue
        func = rule(func, target) if getattr(rule, "wants_target", False) else rule(func)
    return func


arm_rules.wants_target = True
