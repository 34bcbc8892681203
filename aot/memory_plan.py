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
    # (key of another Buf, bytes >= 0): this buffer lies that many bytes into the other's storage,
    # overlapping it at the one step they share (a kernel proven to write its output over its input)
    pin: tuple = None


def align_up(n, a):
    return (n + a - 1) // a * a


def clusters(bufs):
    """{index: (index of its cluster's root, byte offset from the root)}: buffers pinned to
    one another (Buf.pin) move together; a pin to a buffer not in `bufs` is ignored."""
    at = {b.key: i for i, b in enumerate(bufs)}
    out = {}

    def find(i, seen=()):
        if i not in out:
            p = bufs[i].pin
            if p is None or p[0] not in at or at[p[0]] in seen:
                out[i] = (i, 0)
            else:
                root, rel = find(at[p[0]], seen + (i,))
                out[i] = (root, rel + p[1])
        return out[i]
    for i in range(len(bufs)):
        find(i)
    return out


def lower_bound(bufs):
    """Most bytes simultaneously live at one step: no plan can use less (buffers pinned together
    count the span their live members cover)."""
    steps = sorted({b.start for b in bufs} | {b.end for b in bufs})
    cl = clusters(bufs)

    def live(t):
        spans = {}
        for i, b in enumerate(bufs):
            if b.start <= t <= b.end:
                root, rel = cl[i]
                lo, hi = spans.get(root, (rel, rel + b.size))
                spans[root] = (min(lo, rel), max(hi, rel + b.size))
        return sum(hi - lo for lo, hi in spans.values())
    return max((live(t) for t in steps), default=0)


def _overlaps(a, b):
    return not (a.end < b.start or b.end < a.start)


def _place_cluster(members, conflicts, offsets, align):
    """The lowest aligned origin at which every member (index, buffer, offset from the origin)
    clears the placed buffers it conflicts with outside its cluster."""
    mine = {i for i, _, _ in members}
    forbidden = sorted((offsets[j] - rel - b.size + 1, offsets[j] + c.size - rel - 1)
                       for i, b, rel in members for j, c in conflicts[i] if j in offsets and j not in mine)
    x, moved = 0, True
    while moved:
        moved = False
        for lo, hi in forbidden:
            if lo <= x <= hi:
                x, moved = align_up(hi + 1, align), True
    return x


def _place(order, conflicts, align, cl=None):
    """Best-fit: each buffer takes the smallest gap (lowest offset on ties) among the already
    placed buffers it conflicts with; returns {index: offset} and the total size. Buffers
    pinned together (cl: clusters()) are placed as one, at the lowest origin that fits."""
    offsets, total = {}, 0
    groups = {}
    for i, (root, rel) in (cl or {}).items():
        groups.setdefault(root, []).append((i, rel))
    buf_of = dict(order)
    for i, b in order:
        if i in offsets:
            continue
        if cl and len(groups[cl[i][0]]) > 1:
            members = [(j, buf_of[j], rel) for j, rel in groups[cl[i][0]]]
            x = _place_cluster(members, conflicts, offsets, align)
            for j, bj, rel in members:
                offsets[j] = x + rel
                total = max(total, x + rel + bj.size)
            continue
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


SEARCH_BUDGET = 5_000_000


def plan(bufs, align=16, search_iters=200, seed=0):
    """Assign offsets (multiples of `align`); returns the total bytes (exact end)."""
    if not bufs:
        return 0
    idx = list(enumerate(bufs))
    conflicts = {i: [(j, c) for j, c in idx if j != i and _overlaps(b, c)] for i, b in idx}
    cl = clusters(bufs)
    life, span, lo_hi = {}, {}, {}
    for i, (root, rel) in cl.items():
        b = bufs[i]
        s0, e0, lo, hi = lo_hi.get(root, (b.start, b.end, rel, rel + b.size))
        lo_hi[root] = (min(s0, b.start), max(e0, b.end), min(lo, rel), max(hi, rel + b.size))
    for root, (s0, e0, lo, hi) in lo_hi.items():
        life[root], span[root] = e0 - s0, hi - lo
    heuristics = [
        lambda e: (-e[1].size, e[1].start, e[0]),                                  # by size (TFLM)
        lambda e: (-(e[1].size * (e[1].end - e[1].start + 1)), e[0]),                # by size x lifetime
        lambda e: (-sum(c.size for _, c in conflicts[e[0]]), -e[1].size, e[0]),      # by conflicts (TVM)
        lambda e: (e[1].start, -e[1].size, e[0]),                                   # by first use
        # longest-lived clusters first: a patched stage's whole input and its cut, pinned runs of
        # bytes that live across every strip, packed before the strips' short-lived tiles
        lambda e: (-(life[cl[e[0]][0]]), -span[cl[e[0]][0]], e[1].start, e[0]),
    ]
    best_order, best = None, None
    for h in heuristics:
        order = sorted(idx, key=h)
        offs, total = _place(order, conflicts, align, cl)
        if best is None or total < best[1]:
            best_order, best = order, (offs, total)
    lb = lower_bound(bufs)
    rng = random.Random(seed)
    order = list(best_order)
    # each trial places every buffer against its conflicts: past SEARCH_BUDGET pair visits in all
    # (a thousand buffers live at once), fewer trials, so a wide graph still compiles in seconds
    pairs = max(1, sum(len(c) for c in conflicts.values()))
    for _ in range(min(search_iters, SEARCH_BUDGET // pairs) if best[1] > lb else 0):
        i, j = rng.randrange(len(order)), rng.randrange(len(order))
        if i == j:
            continue
        cand = list(order)
        cand[i], cand[j] = cand[j], cand[i]
        offs, total = _place(cand, conflicts, align, cl)
        if total <= best[1]:
            order, best = cand, (offs, total)
            if total <= lb:
                break
    for i, b in idx:
        b.offset = best[0][i]
    return best[1]


def verify(bufs, total=None, align=16):
    """No two simultaneously live buffers overlap, but a pinned pair at the one step they share;
    pins hold; all lie inside the pool and unpinned ones are aligned."""
    by_key = {b.key: b for b in bufs}
    for i, a in enumerate(bufs):
        pinned = a.pin is not None and a.pin[0] in by_key
        if a.offset < 0 or (a.offset % align and not pinned) or (total is not None and a.offset + a.size > total):
            raise InternalError(f"planner: {a.key} at {a.offset} (+{a.size}) is misplaced")
        if pinned and a.offset != by_key[a.pin[0]].offset + a.pin[1]:
            raise InternalError(f"planner: {a.key} is not where its pin puts it")
        for b in bufs[i + 1:]:
            if _overlaps(a, b) and a.offset < b.offset + b.size and b.offset < a.offset + a.size:
                pair = (a.pin is not None and a.pin[0] == b.key) or (b.pin is not None and b.pin[0] == a.key)
                if not (pair and max(a.start, b.start) == min(a.end, b.end)):
                    raise InternalError(f"planner overlap: {a.key} and {b.key}")
