"""Per-target schedule rules: the step between lowering (a plain loop nest) and rendering.

A rule is a function PrimFunc -> PrimFunc written with the primitives of aot/tir/schedule.py,
the same ones a user calls. Rules are registered under a target key (Target.keys: "cpu",
"arm_cpu", later "gpu"); `schedule(func, target)` applies the rules of the first of the
target's keys that has any, in registration order. A new target's schedule is a new module
here that registers its rules; lowering and the renderers do not change.
"""
from __future__ import annotations

from ..tir.flatten import flatten
from . import arm_gather  # noqa: F401,I001  registered first: a short-row conv before arm_dw and arm.py
from . import arm_dw, arm_add  # noqa: F401,I001  then these: their rules run before arm.py's
from . import arm_q15  # noqa: F401,I001  pointwise convs on DSP cores, before arm.py's dot products
# arm_float's float tiles run before the Arm rules (which then leave those tiles alone), its
# multiply-adds after them
from . import arm_float, arm, arm_copy, cpu, gpu, x86  # noqa: F401,I001  Arm float, int8, copies; CPU, GPU, host
from .registry import register, rules_for  # noqa: F401

register("arm_cpu")(arm_float.fuse_multiply_adds)


def schedule(func, target):
    """func (plain, from lowering) scheduled for target, with flat indices."""
    for rule in rules_for(target):
        func = rule(func, target) if getattr(rule, "wants_target", False) else rule(func)
    return func if func.attrs.get("flat") else flatten(func)
