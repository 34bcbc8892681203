"""Shrunk in place: a kernel whose output is smaller than its one input that dies there writes
the output over the start of the input when replaying its accesses proves no input element is
overwritten before its last read (aot/tir/inplace.py writes_over_in_order: a depthwise conv with
stride 2); the memory plan pins the output at byte 0 of the input."""
from __future__ import annotations

from typing import NamedTuple

from ...tir.flatten import flatten
from ...tir.inplace import writes_over_in_order
from ...tir.legalize import legalize
from ..kernels import SHRUNK, GeneratedKernel
from ..memory import pin
from .dying import dying_inputs, live_bytes, sole_activation


class Shrunk(NamedTuple):
    """The kernel proven to write its output over the start of its argument `input`."""
    func: object
    input: int


def steps_worth_shrinking(kernels, lives):
    """The steps whose output, smaller than its one activation input that dies there, may be
    written over the start of that input: those whose live bytes stand above what the peak can
    come down to when both wider and smaller outputs share their input's storage (a kernel so
    written may lose its target schedule: aot/tir/inplace.py proves the plain nest when the
    scheduled one, register tiles reading ahead, is not safe)."""
    n, live = len(kernels), live_bytes(kernels, lives)
    saving, smaller = [0] * n, set()
    for d in dying_inputs(kernels, lives):
        if not d.src.nbytes or not d.dst.nbytes:
            continue
        saving[d.step] = min(d.src.nbytes, d.dst.nbytes)
        if d.src.nbytes > d.dst.nbytes:
            smaller.add(d.step)
    floor = max((live[s] - saving[s] for s in range(n)), default=0)
    return {s for s in smaller if live[s] > floor}


def _dying_input(params, g, site, sizes):
    """The parameter index of the kernel's one activation input when it dies here and
    sizes(its bytes, the output's) holds, else None."""
    sole = sole_activation(params, g, site.io_ids)
    if sole is None or not sizes(sole.tensor.type.nbytes, sole.output.type.nbytes) or not site.dies_here(sole.tensor):
        return None
    return sole.index


def shrunk_in_place(func, plain, params, g, site, ordered=None):
    """Shrunk when writes_over_in_order proves the scheduled kernel may write its smaller output
    over its one input, else the plain nest scheduled by `ordered` (the schedule asked to keep
    the nest's order), else the plain nest itself; None when none is proven."""
    k = _dying_input(params, g, site, lambda n_in, n_out: n_in > n_out)
    if k is None:
        return None
    candidates = [lambda: func] + ([lambda: ordered(plain)] if ordered else []) + [lambda: legalize(flatten(plain))]
    for make in candidates:         # each built only when the one before is not proven
        f = make()
        if writes_over_in_order(f, [f.params[k]], f.params[len(params)], 0):
            return Shrunk(f, k)
    return None


def written_over_as_scheduled(func, params, g, site):
    """(func, the input) for a kernel whose output is as large as its one input that dies here,
    when writes_over_in_order proves the scheduled kernel itself may write over that input: a
    micro-kernel that orders its own reads (dw3_s8r's ring of rows, aot/tir/intrin/arm_dw3.py)
    needs no staging scratch; None otherwise (the executor stages it instead). Planned as
    ORDERED, the same storage as its input (write_over.py)."""
    k = _dying_input(params, g, site, lambda n_in, n_out: n_in == n_out)
    if k is not None and writes_over_in_order(func, [func.params[k]], func.params[len(params)], 0):
        return Shrunk(func, k)
    return None


def write_shrunk(calls, intervals, aliases, io_keys, log):
    """Pin each shrunk kernel's output at byte 0 of its input's storage, where the planner agrees."""
    for step, c in enumerate(calls):
        if not isinstance(c, GeneratedKernel) or c.in_place is None or c.in_place.kind != SHRUNK:
            continue
        a, b = c.args[c.func.num_inputs], c.args[c.in_place.input]
        if a.kind != "workspace" or b.kind != "workspace" or a.key in io_keys or b.key in io_keys \
                or a.key in aliases:
            continue
        home = aliases.find(b.key)
        if intervals[home].last != step or intervals[b.key].last != step \
                or not pin(aliases, intervals, a.key, home, 0):
            continue
        c.no_alias = False
        if log:
            log(f"memory plan: {c.func.name} writes {intervals[a.key].tensor.name} over the start of "
                f"{intervals[b.key].tensor.name}")
