"""Cortex-M rule for an int8 ADD kernel of its own (a micro-kernel choice of pipelines.py): on Helium, the loop nest
out[i] = qadd(a[i], b[i]) as one add_s8q call (aot/tir/intrin/arm_add.py) over the longest run
the three read consecutively (the whole tensor when neither operand is broadcast), four lanes a
step instead of ~40 scalar instructions an element. A residual add fused into a conv's epilogue
gets the same call from aot/schedules/arm_pairs.py.
"""
from __future__ import annotations

from ..tir.intrin import get_intrin
from ..tir.schedule import ScheduleError, tensorize
from ..tir.stmt import For, Seq
from .nests import nests as _nests

ADD = "add_s8q"


def _tensorize_add(nest):
    """nest with its outermost loop that add_s8q matches as one call, or None."""
    x, loops = nest, []
    while isinstance(x, For):
        loops.append(x)
        x = x.body
    for lp in loops:
        try:
            return tensorize(nest, lp.var, ADD)
        except ScheduleError:
            continue
    return None


def tensorize_adds(func, target):
    variant = get_intrin(ADD).variant_for(target.mcpu)
    if variant != "mve":
        return None
    parts = _nests(func.body)
    got = [_tensorize_add(n) for n in parts]
    if all(g is None for g in got):
        return None
    body = Seq([g if g is not None else n for g, n in zip(got, parts)])
    return func.with_body(body, attrs=dict(func.attrs, schedule=f"{ADD} ({variant})"))

