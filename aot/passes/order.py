"""Execution order: among the topological orders of the fused kernels, pick one whose peak
of simultaneously live workspace bytes is smallest.

A branchy graph (Inception modules, DenseNet blocks, residual blocks) admits many orders,
and the order decides which intermediates are alive together. The search is exact (a
memoised search over the sets of kernels already run) for any stretch of the graph whose
state space is small, and a greedy choice (the ready kernel that leaves the fewest live
bytes) compared with the importer's order where it is not. Stretches are cut where few values
cross, which loses nothing when one value crosses. Every tie is broken by the importer's
order, so the result is deterministic, and the importer's order is kept unless strictly worse.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..liveness import lifetimes

EXACT_STATE_LIMIT = 20000


@dataclass
class _Val:
    size: int
    producer: int          # kernel index, -1 when it exists before the run
    consumers: int         # bitmask of kernel indices reading it
    persistent: bool       # lives to the end of the run (an output inside the workspace)


class _Problem:
    def __init__(self, graph, kernels, workspace_io):
        self.n = len(kernels)
        self.vals = {key: _Val(lt.nbytes, lt.producer, sum(1 << k for k in set(lt.consumers)), lt.persistent)
                     for key, lt in lifetimes(graph, kernels, workspace_io).items()}
        self.preds = [0] * self.n
        self.outs = [[] for _ in range(self.n)]
        for key, v in self.vals.items():
            if v.producer >= 0:
                self.outs[v.producer].append(v)
                for k in range(self.n):
                    if v.consumers >> k & 1:
                        self.preds[k] |= 1 << v.producer
        self.out_bytes = [sum(v.size for v in vs) for vs in self.outs]
        # values whose last reader is k, given the set run so far: computed on the fly
        self.reads = [[v for v in self.vals.values() if v.consumers >> k & 1] for k in range(self.n)]

    def live(self, done):
        return sum(v.size for v in self.vals.values()
                   if (v.producer < 0 or done >> v.producer & 1) and (v.persistent or v.consumers & ~done))

    def step(self, done, k):
        """Peak while k runs after `done`, and the bytes freed once it has run."""
        after = done | 1 << k
        freed = sum(v.size for v in self.reads[k] if not v.persistent and not v.consumers & ~after)
        freed += sum(v.size for v in self.outs[k] if not v.persistent and not v.consumers)
        return self.out_bytes[k], freed

    def ready(self, done, within):
        return [k for k in within if not done >> k & 1 and self.preds[k] & ~done == 0]

    def peak_of(self, order, done):
        live, peak = self.live(done), 0
        for k in order:
            add, freed = self.step(done, k)
            peak = max(peak, live + add)
            live += add - freed
            done |= 1 << k
        return peak

    # -- the searches ---------------------------------------------------------
    def exact(self, segment, done0):
        """Optimal order of `segment` (kernel indices) starting from `done0`, or None when the
        state space is larger than EXACT_STATE_LIMIT. A depth-first search over the sets of
        kernels run, memoised by set, on an explicit stack: a wide or long stretch is as deep as
        it has kernels, which Python's recursion would not take."""
        full = done0
        for k in segment:
            full |= 1 << k
        if done0 == full:
            return []
        memo = {}               # set run -> (peak from there on, the order that reaches it)
        inside = set(segment)
        succ = {k: [j for j in segment if self.preds[j] >> k & 1] for k in segment}

        def ready_after(ready, k, nxt):
            # the ready kernels once k has run, in the segment's order (as ready() lists them),
            # from the ones before: what k's run makes ready joins them
            new = [j for j in succ[k] if j in inside and self.preds[j] & ~nxt == 0]
            rest = [j for j in ready if j != k]
            return sorted(rest + new) if new else rest

        # a frame: [set run, live bytes, ready kernels, next one to try, best so far]
        stack = [[done0, self.live(done0), self.ready(done0, segment), 0, None]]
        while stack:
            frame = stack[-1]
            done, live, ready, i, res = frame
            if i == len(ready):
                memo[done] = res
                stack.pop()
                continue
            k = ready[i]
            add, freed = self.step(done, k)
            nxt = done | 1 << k
            sub = (0, ()) if nxt == full else memo.get(nxt)
            if sub is None:
                if len(memo) > EXACT_STATE_LIMIT:
                    return None
                stack.append([nxt, live + add - freed, ready_after(ready, k, nxt), 0, None])
                continue            # k is tried again once its subtree is known
            cand = max(live + add, sub[0])
            if res is None or cand < res[0]:
                frame[4] = (cand, (k,) + sub[1])
            frame[3] = i + 1
        return list(memo[done0][1])

    def greedy(self, segment, done):
        order = []
        live = self.live(done)
        while len(order) < len(segment):
            choice = None
            for k in self.ready(done, segment):
                add, freed = self.step(done, k)
                key = (live + add - freed, live + add)
                if choice is None or key < choice[0]:
                    choice = (key, k, add - freed)
            _, k, delta = choice
            order.append(k)
            live += delta
            done |= 1 << k
        return order

    def segments(self):
        """Cut the importer's order where at most one planned value crosses the cut."""
        segs, cur, done = [], [], 0
        for k in range(self.n):
            cur.append(k)
            done |= 1 << k
            crossing = sum(1 for v in self.vals.values() if v.size and (v.producer < 0 or done >> v.producer & 1)
                           and (v.persistent or v.consumers & ~done))
            if crossing <= 1:
                segs.append(cur)
                cur = []
        if cur:
            segs.append(cur)
        return segs


def order_for_memory(graph, groups, workspace_io=False, log=None):
    """The groups reordered (alias groups just before their first reader)."""
    kernels = [g for g in groups if not g.alias]
    if len(kernels) < 3:
        return groups
    p = _Problem(graph, kernels, workspace_io)
    order, done, searched = [], 0, {"exact": 0, "greedy": 0}
    for seg in p.segments():
        cand = [seg]
        ex = p.exact(seg, done) if len(seg) > 2 else None
        if ex is not None:
            cand.append(ex)
            searched["exact"] += 1
        elif len(seg) > 2:
            cand.append(p.greedy(seg, done))
            searched["greedy"] += 1
        best = min(cand, key=lambda o: p.peak_of(o, done))   # ties keep the importer's order
        order += best
        for k in best:
            done |= 1 << k
    before, after = p.peak_of(list(range(p.n)), 0), p.peak_of(order, 0)
    if after >= before:
        order, after = list(range(p.n)), before
    if log:
        moved = sum(1 for i, k in enumerate(order) if i != k)
        log(f"pass order_for_memory: {searched['exact']} stretches searched exactly, {searched['greedy']} greedily; "
            f"peak live bytes {before} -> {after}; {moved} kernels moved")
    return _with_aliases(groups, [kernels[k] for k in order])


def _with_aliases(groups, kernels):
    """Put each reshape-like alias just before the first kernel that reads it."""
    alias_of = {id(g.nodes[0].outputs[0]): g for g in groups if g.alias}
    out, placed = [], set()

    def need(v):
        chain = []              # the aliases v stands on, nearest first (a loop, not recursion)
        g = alias_of.get(id(v))
        while g is not None and id(g) not in placed:
            placed.add(id(g))
            chain.append(g)
            g = alias_of.get(id(g.nodes[0].inputs[0]))
        out.extend(reversed(chain))

    for g in kernels:
        for v in g.inputs:
            need(v)
        out.append(g)
    out += [g for g in groups if g.alias and id(g) not in placed]
    return out
