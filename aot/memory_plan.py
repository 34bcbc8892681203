"""Static workspace planning: offsets for intermediates so that buffers live at the same
time never overlap, reusing memory between buffers whose lifetimes are disjoint.

plan() tries several greedy orders (TFLite Micro's and TVM's heuristics among them), keeps
the best, then improves it by a deterministic local search over the placement order. The
size reported is exact: the end of the last byte any buffer occupies.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from .errors import InternalError


@dataclass
class Buf:
    key: object
    size: int
    start: int       # first step it is live (written)
    end: int         # last step it is read (inclusive)
    offset: int = -1


def align_up(n, a):
    return (n + a - 1) // a * a


def lower_bound(bufs):
    """Most bytes simultaneously live at one step: no plan can use less."""
    steps = sorted({b.start for b in bufs} | {b.end for b in bufs})
    return max((sum(b.size for b in bufs if b.start <= t <= b.end) for t in steps), default=0)


def _overlaps(a, b):
    return not (a.end < b.start or b.end < a.start)


def _place(order, conflicts, align):
    """Best-fit: each buffer takes the smallest gap (lowest offset on ties) among the already
    placed buffers it conflicts with; returns {index: offset} and the total size."""
    offsets, total = {}, 0
    for i, b in order:
        busy = sorted((offsets[j], offsets[j] + bj.size) for j, bj in conflicts[i] if j in offsets)
        best, cur = None, 0
        for lo, hi in busy:
            if lo - cur >= b.size and (best is None or lo - cur < best[1]):
                best = (cur, lo - cur)
            cur = max(cur, align_up(hi, align))
        off = best[0] if best is not None else cur
        offsets[i] = off
        total = max(total, off + b.size)
    return offsets, total


def plan(bufs, align=16, search_iters=200, seed=0):
    """Assign offsets (multiples of `align`); returns the total bytes (exact end)."""
    if not bufs:
        return 0
    idx = list(enumerate(bufs))
    conflicts = {i: [(j, c) for j, c in idx if j != i and _overlaps(b, c)] for i, b in idx}
    heuristics = [
        lambda e: (-e[1].size, e[1].start, e[0]),                                  # by size (TFLM)
        lambda e: (-(e[1].size * (e[1].end - e[1].start + 1)), e[0]),                # by size x lifetime
        lambda e: (-sum(c.size for _, c in conflicts[e[0]]), -e[1].size, e[0]),      # by conflicts (TVM)
        lambda e: (e[1].start, -e[1].size, e[0]),                                   # by first use
    ]
    best_order, best = None, None
    for h in heuristics:
        order = sorted(idx, key=h)
        offs, total = _place(order, conflicts, align)
        if best is None or total < best[1]:
            best_order, best = order, (offs, total)
    lb = lower_bound(bufs)
    rng = random.Random(seed)
    order = list(best_order)
    for _ in range(search_iters if best[1] > lb else 0):
        i, j = rng.randrange(len(order)), rng.randrange(len(order))
        if i == j:
            continue
        cand = list(order)
        cand[i], cand[j] = cand[j], cand[i]
        offs, total = _place(cand, conflicts, align)
        if total <= best[1]:
            order, best = cand, (offs, total)
            if total <= lb:
                break
    for i, b in idx:
        b.offset = best[0][i]
    return best[1]


def verify(bufs, total=None, align=16):
    """No two simultaneously live buffers overlap; all lie inside the pool and are aligned."""
    for i, a in enumerate(bufs):
        if a.offset < 0 or a.offset % align or (total is not None and a.offset + a.size > total):
            raise InternalError(f"planner: {a.key} at {a.offset} (+{a.size}) is misplaced")
        for b in bufs[i + 1:]:
            if _overlaps(a, b) and a.offset < b.offset + b.size and b.offset < a.offset + a.size:
                raise InternalError(f"planner overlap: {a.key} and {b.key}")
