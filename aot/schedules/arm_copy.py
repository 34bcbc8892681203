"""Cortex-M rule (after the micro-kernel choice, pipelines.py): on Helium, a staged in-place
kernel's copy back from its scratch (aot/schedules/inplace_conv.py) as copy_s8 calls
(aot/tir/intrin/arm_copy.py), sixteen bytes a vector step, a row loop taken into the call. Only
copies between two of the parameters after the kernel's inputs (its outputs and scratch, all live at
once, so planned apart): the two runs never overlap. The in-place proof is made on the staged nest
before scheduling (aot/executor.py: writes_over_staged); the call copies the same bytes."""
from __future__ import annotations

from ..tir.intrin import get_intrin
from ..tir.schedule import ScheduleError, tensorize
from ..tir.expr import Load
from ..tir.stmt import For, Store, StmtMutator

COPY = "copy_s8"


def _is_copy_nest(x):
    while isinstance(x, For):
        x = x.body
    return isinstance(x, Store) and isinstance(x.value, Load)


class _Copies(StmtMutator):
    def __init__(self, scratch):
        self.scratch, self.done = scratch, 0

    def visit_For(self, s):
        if _is_copy_nest(s):
            inner = s
            while isinstance(inner, For):
                inner = inner.body
            if id(inner.value.buffer) in self.scratch:
                x = s
                while isinstance(x, For):       # the outermost loop the call takes (rows of a run)
                    try:
                        got = tensorize(s, x.var, COPY)
                        self.done += 1
                        return got
                    except ScheduleError:
                        x = x.body
        return super().visit_For(s)


def vector_copies(func, target):
    if get_intrin(COPY).variant_for(target.mcpu) != "mve":
        return None
    # the parameters after the inputs (outputs, scratch) are all live at once: planned apart
    scratch = {id(b) for b in func.params[func.num_inputs:]}
    m = _Copies(scratch)
    body = m.visit(func.body)
    return func.with_body(body) if m.done else None
