"""Staged in place: a kernel whose output is no smaller than its one input, rewritten to compute
a block of output into a small scratch and copy it back over input it no longer reads
(aot/schedules/inplace_conv.py), kept when aot/tir/inplace.py proves the staged kernel safe. A
wider output holds its input at its end: the memory plan pins the input there."""
from __future__ import annotations

from typing import NamedTuple

from ...dtypes import BYTES as dtype_bytes_table
from ...ops.registry import alias_root
from ...schedules.inplace_conv import stage_in_place, stage_rows
from ...tir.inplace import writes_over_in_order, writes_over_staged
from ..kernels import STAGED, GeneratedKernel
from ..memory import IN_PLACE, pin
from .dying import dying_inputs, live_bytes, sole_activation


class Staging(NamedTuple):
    """A kernel staged to write over its input `input`: its scratch and the bytes the input lies
    into the (wider) output; by_rows: staged by rows into a ring (proven in program order)."""
    func: object
    input: int
    scratch_bytes: int
    inside: int
    by_rows: bool


class _Proven(NamedTuple):
    elements: int       # scratch elements
    func: object
    delta: int          # elements the input lies into the output, None when they are the same size
    by_rows: bool


def steps_worth_staging(kernels, lives):
    """The steps whose kernel may be staged to write over its input: a staged kernel gives up
    the register tiles of the target's schedule (a staged pointwise conv keeps its dot_s8 calls,
    a depthwise one has none to keep), so only the kernels whose live bytes stand above
    what the peak can come down to are staged. A step can drop by its dying input's bytes when
    its one activation input dies there and is no larger than its output; the peak cannot fall
    below the highest step after such drops."""
    n, live = len(kernels), live_bytes(kernels, lives)
    saving = [0] * n
    for d in dying_inputs(kernels, lives):
        if 0 < d.src.nbytes <= d.dst.nbytes:
            saving[d.step] = d.src.nbytes
    floor = max((live[s] - saving[s] for s in range(n)), default=0)
    chosen = {s for s in range(n) if saving[s] and live[s] > floor}
    # a wider output holds its input only if that input's producer wrote over its own input too
    # (else the region is live a step earlier): stage such producers back along the chain
    for k in sorted(chosen, reverse=True):
        while True:
            ins = [alias_root(v) for v in kernels[k].inputs if v is not None and not alias_root(v).is_const]
            k = lives[id(ins[0])].producer if len(ins) == 1 else -1
            if k < 0 or not saving[k] or k in chosen:
                break
            chosen.add(k)
    return chosen


def staged_in_place(func, params, g, site, block=(1, 1)):
    """The Staging of func over its one input that dies here, when aot/schedules/inplace_conv.py
    can stage the kernel and aot/tir/inplace.py proves the staged kernel safe (the smaller
    scratch of the two stagings); else None. block: the target's (block, min_block[, pixels])."""
    sole = sole_activation(params, g, site.io_ids)
    if sole is None or sole.tensor.type.nbytes > sole.output.type.nbytes or not site.dies_here(sole.tensor):
        return None
    k = sole.index
    proven = []
    got = stage_in_place(func, k, len(params), block=block[0], min_block=block[1],
                         pixels=block[2] if len(block) > 2 else 1)
    if got is not None:
        staged, n = got
        inb, outb = staged.params[k], staged.params[len(params)]
        # a wider output holds its input at its end (delta elements in)
        delta = None if inb.size == outb.size else outb.size - inb.size
        if writes_over_staged(staged, [inb], outb, delta):
            proven.append(_Proven(n, staged, delta, False))
    got = stage_rows(func, k, len(params))      # a ring of rows, when smaller than the blocks
    if got is not None and writes_over_in_order(got[0], [got[0].params[k]], got[0].params[len(params)], 0):
        proven.append(_Proven(got[1], got[0], None, True))
    if not proven:
        return None
    best = min(proven, key=lambda c: c.elements)
    size = dtype_bytes_table[best.func.params[len(params)].dtype]
    return Staging(best.func, k, best.elements * size, (best.delta or 0) * size, best.by_rows)


def place_inside_outputs(calls, intervals, aliases, log):
    """A staged kernel whose output is wider than the input it was proven to write over
    (writes_over_staged with delta) gets that input's storage pinned at the end of its output."""
    for step, c in enumerate(calls):
        if not isinstance(c, GeneratedKernel) or c.in_place is None or c.in_place.kind != STAGED \
                or not c.in_place.offset:
            continue
        p = c.in_place
        b, a = c.args[p.input], c.args[c.func.num_inputs]
        home = aliases.find(b.key)
        if aliases.pin(home) is not None or intervals[home].last != step or intervals[a.key].first != step \
                or aliases.get(a.key, IN_PLACE) is not None:
            continue
        if not pin(aliases, intervals, home, a.key, p.offset):
            continue
        c.no_alias = False
        if log:
            log(f"memory plan: {intervals[home].tensor.name} placed at byte {p.offset} of "
                f"{intervals[a.key].tensor.name}")
