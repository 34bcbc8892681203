"""Per-target schedule rules: the step between lowering (a plain loop nest) and rendering.

A rule is a function rule(func, target) -> PrimFunc | None written with the primitives of
aot/tir/schedule.py, the same ones a user calls; None means it does not apply. Each target
family has one ordered list of rules, its pipeline (pipelines.py, every step with the reason
for its place); `schedule(func, target)` runs the target's pipeline and records the trace: the
rules that applied and the primitives each applied (aot/tir/trace.py), in func.attrs["trace"].
`replay(plain, trace)` schedules the plain kernel again from the trace. A new target's schedule
is a new pipeline there; lowering and the renderers do not change.
"""
from __future__ import annotations

from ..errors import AotError
from ..tir.flatten import flatten
from ..tir.trace import format_trace, recording
from .pipelines import FirstOf, find_rule, members, pipeline_for, pipeline_name, rule_name

__all__ = ["schedule", "replay", "format_trace", "TraceMismatch"]


class TraceMismatch(AotError):
    pass


def _finish(func, target, steps):
    func = func if func.attrs.get("flat") else flatten(func)
    trace = {"target": target.short_str(), "pipeline": pipeline_name(target), "steps": tuple(steps)}
    return func.with_body(func.body, attrs=dict(func.attrs, trace=trace))


def schedule(func, target):
    """func (plain, from lowering) scheduled for target, with flat indices and its trace."""
    steps = []
    with recording() as rec:
        for x in pipeline_for(target):
            for s in members(x):
                del rec.calls[:]
                out = s.rule(func, target)
                if out is None:
                    continue
                if out is not func:
                    steps.append((rule_name(s.rule), tuple(rec.calls)))
                func = out
                if isinstance(x, FirstOf):
                    break        # claimed: the group's other rules are not tried
    return _finish(func, target, steps)


def replay(plain, trace, target=None):
    """The kernel `trace` (func.attrs["trace"] of a scheduled kernel) describes, from the plain
    kernel it was scheduled from: each recorded rule applied again in order, the primitives it
    applies checked against the recorded ones (TraceMismatch where they differ: the trace was
    made by another compiler or for another kernel)."""
    from ..target import Target
    target = Target(trace["target"]) if target is None else target
    func, steps = plain, []
    with recording() as rec:
        for name, calls in trace["steps"]:
            rule = find_rule(name)
            if rule is None:
                raise TraceMismatch(f"replay: no schedule rule named {name}")
            del rec.calls[:]
            out = rule(func, target)
            if out is None or tuple(rec.calls) != tuple(calls):
                raise TraceMismatch(f"replay: rule {name} applies other primitives to {plain.name} than the trace says")
            steps.append((name, tuple(calls)))
            func = out
    return _finish(func, target, steps)
