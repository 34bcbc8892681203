"""The GPU schedule for few, long reductions (softmax over a row of classes, a dense layer with
a long inner dimension, a reduction to a scalar): one block per row, the row's reductions
shared by the block's threads.

Each thread folds a strided slice of the reduction into its own accumulator; the partial
results meet in shared memory and are combined pairwise in log2(threads) steps, with a
barrier after each; every thread then reads the total. Loops over the row's elements after
a reduction (softmax's normalisation) are spread over the same threads; a single result is
stored by thread 0. This changes the order of a floating-point sum (as every GPU library
does), so results match a serial sum to rounding, not bit for bit.
"""
from __future__ import annotations

from ..te import tensor as te
from ..tir.expr import INDEX, Bin, Const, Load, Select, Var, eq, lt, substitute, walk
from ..tir.schedule import ScheduleError, bind, fuse, parallel, split
from ..tir.simplify import const_value
from ..tir.stmt import Allocate, Barrier, Buffer, For, IfThenElse, Seq, Store, map_exprs, walk_stmts
from ..tir.trace import untraced

THREADS = 256
MIN_LENGTH = 64       # shorter reductions stay serial in one thread per output
MAX_ROWS = 2048       # more rows than this keep the GPU busy with a thread (or tile) per output



def combiner(store: Store, acc: Buffer):
    """(combine, element) when store is acc[0] = combine(acc[0], element) for one of the
    associative combiners lowering emits; else None."""
    cur, v = Load(acc, Const(0, INDEX)), store.value
    for fn in (te.combine(c) for c in te.COMBINERS):
        elem = v.f if isinstance(v, Select) else v.b if isinstance(v, Bin) else None
        if elem is not None and fn(cur, elem).key() == v.key() and \
                not any(isinstance(x, Load) and x.buffer is acc for x in walk(elem)):
            return fn, elem
    return None


def _reduction(s):
    """(acc, init, nest, rest) when s is Allocate(acc[1]) { acc = init; nest of constant loops
    ending in acc = combine(acc, element); rest }; else None."""
    if not isinstance(s, Allocate) or s.buffer.size != 1 or s.buffer.scope != "local" or \
            not isinstance(s.body, Seq) or len(s.body.stmts) < 2:
        return None
    acc, (init, nest, *rest) = s.buffer, s.body.stmts
    loops, x = [], nest
    while isinstance(x, For):
        loops.append(x)
        x = x.body
    if not (isinstance(init, Store) and init.buffer is acc and loops and isinstance(x, Store) and x.buffer is acc
            and combiner(x, acc) and all(const_value(lp.min) is not None and const_value(lp.extent) is not None
                                         for lp in loops)):
        return None
    return acc, init, nest, rest


def longest_reduction(s):
    best = 0
    for x in walk_stmts(s):
        r = _reduction(x)
        if r is not None:
            n = 1
            for lp in walk_stmts(r[2]):
                if isinstance(lp, For):
                    n *= const_value(lp.extent)
            best = max(best, n)
    return best


class _Spread:
    """Rewrites a row's body for `t`, the thread index of a block of `n` threads."""

    def __init__(self, t, n):
        self.t, self.n = t, n

    def stmt(self, s):
        r = _reduction(s)
        if r is not None:
            return self.reduce(*r)
        if isinstance(s, Seq):
            return Seq([self.stmt(x) for x in s.stmts])
        if isinstance(s, For):          # an elementwise loop over the row: a strided slice per thread
            with untraced():            # a check, refused unless its iterations write disjoint elements
                parallel(s, s.var)
            return self.slice(s, s.var)
        if isinstance(s, Allocate):
            return Allocate(s.buffer, self.stmt(s.body))
        if isinstance(s, Store) and s.buffer.scope == "global":
            return IfThenElse(eq(self.t, Const(0, INDEX)), s)       # one result: thread 0 stores it
        raise ScheduleError(f"a row's {type(s).__name__} cannot be spread over threads")

    def slice(self, s, var):
        """Loop `var` split into slices of n, the inner loop replaced by the thread index: thread
        t takes iterations t, t+n, t+2n, ... (the split guards the last slice)."""
        s, _, inner = split(s, var, self.n)

        def lift(x):
            if isinstance(x, For) and x.var is inner:
                return x.body
            return x.with_body(lift(x.body)) if isinstance(x, For) else x
        return map_exprs(lift(s), lambda e: substitute(e, {id(inner): self.t}))

    def reduce(self, acc, init, nest, rest):
        loops, x = [], nest
        while isinstance(x, For):
            loops.append(x)
            x = x.body
        combine, _ = combiner(x, acc)
        s, v = nest, loops[0].var
        for lp in loops[1:]:
            s, v = fuse(s, v, lp.var)
        s = self.slice(s, v)
        red = Buffer(f"{acc.name}_red", acc.dtype, (self.n,), "shared")
        zero = Const(0, INDEX)
        steps = [Store(red, self.t, Load(acc, zero)), Barrier("shared")]
        half = self.n // 2
        while half >= 1:
            h = Const(half, INDEX)
            steps += [IfThenElse(lt(self.t, h), Store(red, self.t, combine(Load(red, self.t), Load(red, self.t + h)))),
                      Barrier("shared")]
            half //= 2
        # every thread takes the total; the barrier after keeps red intact until all have read it
        steps += [Store(acc, zero, Load(red, zero)), Barrier("shared")]
        tail = [self.stmt(x) for x in rest]
        return Allocate(acc, Seq([init, s, Allocate(red, Seq(steps))] + tail))


def reduce_rows(body, prefix):
    """body with its outer parallel loops (`prefix`) fused into one block per row and the row's
    reductions spread over up to THREADS threads; None when the rule does not apply."""
    rows = 1
    for lp in prefix:
        rows *= const_value(lp.extent)
    inner_body = prefix[-1].body if prefix else body
    n = longest_reduction(inner_body)
    if n < MIN_LENGTH or rows > MAX_ROWS:
        return None
    threads = 1
    while threads < n and threads < THREADS:
        threads *= 2
    t = Var("tx")
    spread = _Spread(t, threads)
    try:
        body = spread.stmt(inner_body)
    except ScheduleError:
        return None
    body = For(t, 0, threads, body, "thread_binding", "threadIdx.x")
    if prefix:
        s = body
        for lp in reversed(prefix):
            s = lp.with_body(s)
        var = prefix[0].var
        for lp in prefix[1:]:
            s, var = fuse(s, var, lp.var)
        s = bind(s, var, "blockIdx.x")
    else:
        s = body            # one row: a grid of one block
    return s
