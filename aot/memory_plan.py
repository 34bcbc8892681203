"""Static workspace planning: offsets for intermediates so that buffers live at the same
time never overlap, reusing memory between buffers whose lifetimes are disjoint."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Buf:
    key: object
    size: int
    start: int       # first step it is live (written)
    end: int         # last step it is read (inclusive)
    offset: int = -1


def align_up(n, a):
    return (n + a - 1) // a * a


def lower_bound(bufs, align=16):
    """Largest total of aligned sizes live at one step: no plan can use less."""
    steps = sorted({b.start for b in bufs} | {b.end for b in bufs})
    best = 0
    for t in steps:
        best = max(best, sum(align_up(b.size, align) for b in bufs if b.start <= t <= b.end))
    return best


def plan(bufs, align=16):
    """Greedy best-fit by decreasing size: each buffer takes the lowest gap that fits among
    already placed buffers whose lifetimes overlap its own. Returns the total size."""
    order = sorted(bufs, key=lambda b: (-b.size, b.start, b.end))
    placed = []
    for b in order:
        size = align_up(max(b.size, 1), align)
        busy = sorted((p.offset, p.offset + align_up(max(p.size, 1), align)) for p in placed
                      if not (p.end < b.start or b.end < p.start))
        best, cur = None, 0
        for lo, hi in busy:
            if lo - cur >= size and (best is None or lo - cur < best[1]):
                best = (cur, lo - cur)
            cur = max(cur, hi)
        b.offset = best[0] if best is not None else cur
        placed.append(b)
    return max((p.offset + align_up(max(p.size, 1), align) for p in placed), default=0)


def verify(bufs):
    """No two simultaneously live buffers overlap (raises AssertionError)."""
    for i, a in enumerate(bufs):
        for b in bufs[i + 1:]:
            if a.end < b.start or b.end < a.start:
                continue
            if a.offset < b.offset + b.size and b.offset < a.offset + a.size:
                raise AssertionError(f"planner overlap: {a.key} and {b.key}")
