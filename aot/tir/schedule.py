"""Schedule primitives on loop IR.

Each primitive is a function Stmt -> Stmt (or PrimFunc -> PrimFunc for a buffer's layout)
that addresses loops by their variable and computes the same values in another iteration
order, structure or memory layout. A primitive that cannot apply raises ScheduleError and
says why. Lowering keeps the tensor expression's loop variables (reduce axes included), so
the axes a user names in `te.compute`/`te.reduce_axis` are the ones scheduled here; the
compiler's own per-target rules (aot/schedules/) are lists of these same calls.

A loop variable may head several loops (after `fission`, or when a reduction is computed
for two outputs); loop-addressed primitives apply to every loop over that variable.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AotError
from ..targets.base import GpuFamily
from .expr import INDEX, Bin, Call, Const, Load, Unary, Var, all_of, ge, is_float, lt, substitute, substituter, transform, walk
from .simplify import const_value, from_linear, linear_form, loop_ranges, simplify
from .stmt import (THREAD_TAGS, Allocate, Barrier, Buffer, Evaluate, For, IfThenElse, PrimFunc, Seq, Stmt, StmtMutator,
                   StmtVisitor, Store, map_exprs, own_exprs, walk_stmts)
from .trace import traced


class ScheduleError(AotError):
    pass


def as_var(x) -> Var:
    """A loop variable from what a user holds: a Var, a te.IterVar (reduce axis) or a For."""
    v = getattr(x, "var", x)
    if not isinstance(v, Var):
        raise ScheduleError(f"{x!r} is not a loop variable")
    return v


def find_loops(s: Stmt, var: Var):
    var = as_var(var)
    return [x for x in walk_stmts(s) if isinstance(x, For) and x.var is var]


def _loops_of(s, var, what):
    loops = find_loops(s, var)
    if not loops:
        raise ScheduleError(f"{what}: no loop over {var.name}")
    return loops


class _ReplaceLoops(StmtMutator):
    """Replace every loop matched by `match` (pre-order: the replacement is not visited)."""

    def __init__(self, match, fn):
        self.match, self.fn = match, fn

    def visit_For(self, s):
        if self.match(s):
            return self.fn(s)
        return super().visit_For(s)


def _replace(s, var, fn):
    return _ReplaceLoops(lambda x: x.var is var, fn).visit(s)


def _subst(s, var, value):
    return map_exprs(s, substituter({id(var): value}))


# -- loop structure -------------------------------------------------------------------------
@traced
def split(s: Stmt, var: Var, factor: int):
    """Split loop `var` into (outer, inner) with inner extent `factor`; returns (stmt, outer, inner).

    A factor that does not divide the extent guards the tail with a condition. So does any
    factor of a symbolic extent (a te.var size): the guard folds away at aot.build if it divides."""
    var = as_var(var)
    factor = int(factor)
    if factor < 1:
        raise ScheduleError(f"split {var.name}: factor {factor} is not positive")
    loops = _loops_of(s, var, "split")
    if len({x.extent.key() for x in loops}) != 1:
        raise ScheduleError(f"split needs one extent for {var.name}")
    ext = const_value(loops[0].extent)
    sym = loops[0].extent if ext is None else None
    if sym is not None and any(isinstance(n, Load) for n in walk(sym)):
        raise ScheduleError(f"split {var.name}: the extent depends on data")
    outer, inner = Var(var.name + "_o"), Var(var.name + "_i")

    def fn(x: For):
        body = _subst(x.body, var, x.min + outer * factor + inner)
        if sym is not None:
            body = _guard_innermost(body, lt(outer * factor + inner, sym))
            return For(outer, 0, Bin("floordiv", sym + (factor - 1), Const(factor, INDEX)),
                       For(inner, 0, factor, body, x.kind, x.thread_tag))
        if ext % factor:
            body = _guard_innermost(body, lt(outer * factor + inner, Const(ext, inner.dtype)))
        return For(outer, 0, (ext + factor - 1) // factor, For(inner, 0, factor, body, x.kind, x.thread_tag))

    return _replace(s, var, fn), outer, inner


def _guard_innermost(body, cond):
    """The tail guard of a split, inside the loops directly nested in the split loop (as TVM
    places it): the nest stays perfect, so it can still be reordered, and the loops of a tail
    iteration merely run empty."""
    if isinstance(body, For):
        return body.with_body(_guard_innermost(body.body, cond))
    return IfThenElse(cond, body)


@traced
def fuse(s: Stmt, outer: Var, inner: Var):
    """Fuse a loop and the loop directly inside it into one; returns (stmt, fused)."""
    outer, inner = as_var(outer), as_var(inner)
    fused = Var(f"{outer.name}_{inner.name}_f")

    def fn(x: For):
        y = x.body
        if not isinstance(y, For) or y.var is not inner:
            raise ScheduleError(f"fuse: {inner.name} is not directly inside {outer.name}")
        n_in, n_out = const_value(y.extent), const_value(x.extent)
        if n_in is None or n_out is None or const_value(x.min) is None or const_value(y.min) is None:
            raise ScheduleError(f"fuse needs constant bounds for {outer.name} and {inner.name}")
        if any(v is outer for e in (y.min, y.extent) for v in walk(e)):
            raise ScheduleError(f"fuse: the bounds of {inner.name} depend on {outer.name}")
        body = _subst(_subst(y.body, outer, x.min + fused // n_in), inner, y.min + fused % n_in)
        return For(fused, 0, n_out * n_in, body)

    _loops_of(s, outer, "fuse")
    return _replace(s, outer, fn), fused


@traced
def reorder(s: Stmt, order):
    """Reorder a perfect nest of loops, given outermost-first in the new order. The nest is the
    first chain of directly nested loops over exactly these variables."""
    order = [as_var(v) for v in order]
    ids = {id(v) for v in order}
    if len(ids) != len(order):
        raise ScheduleError("reorder: a loop is named twice")

    def chain(x):
        loops = []
        while isinstance(x, For) and id(x.var) in ids and len(loops) < len(order):
            loops.append(x)
            x = x.body
        return loops, x

    head = next((x for x in walk_stmts(s) if isinstance(x, For) and len(chain(x)[0]) == len(order)), None)
    if head is None:
        raise ScheduleError("reorder needs a perfect nest of the loops " + ", ".join(v.name for v in order))
    loops, body = chain(head)
    for lp in loops:
        if any(isinstance(n, Var) and id(n) in ids for e in (lp.min, lp.extent) for n in walk(e)):
            raise ScheduleError(f"reorder: the bounds of {lp.var.name} depend on a reordered loop")
    by_var = {id(lp.var): lp for lp in loops}
    for v in reversed(order):
        body = by_var[id(v)].with_body(body)
    return _ReplaceLoops(lambda x: x is head, lambda x: body).visit(s)


@traced
def fission(s: Stmt, var: Var):
    """Distribute loop `var` over the statements of its body: for v {a; b} -> for v {a}; for v {b}.

    Valid when no statement reads what another writes in a different iteration: every buffer
    one part writes and another touches is indexed by exactly `var` (a per-iteration slot)."""
    var = as_var(var)

    def fn(x: For):
        if not isinstance(x.body, Seq):
            return x
        parts = x.body.stmts
        touched = [_accesses(p) for p in parts]
        inner = {id(lp.var): const_value(lp.extent) for lp in walk_stmts(x.body) if isinstance(lp, For)}
        for i, (w, _) in enumerate(touched):
            for j, (_, every) in enumerate(touched):
                if i == j:
                    continue
                for b in w:
                    if b in every and not _per_iteration(every[b] + touched[i][1][b], var, inner):
                        raise ScheduleError(f"fission {var.name}: {w[b].name} is shared between iterations")
        return Seq([x.with_body(p) for p in parts])

    _loops_of(s, var, "fission")
    return _replace(s, var, fn)


@traced
def decompose_reduction(s: Stmt, var: Var):
    """Accumulate the reduction over loop `var` in its output instead of a local accumulator:
    allocate acc {acc = init; for var ... {acc = acc + x}; out[i] = acc} becomes
    out[i] = init; for var ... {out[i] = out[i] + x}. The output loops then hold an init
    statement and an update nest; after `fission` of those loops the reduction loops can be
    reordered among them (TVM's decompose_reduction). Only a plain reduction qualifies: the
    final store must copy the accumulator, with no epilogue applied to it."""
    var = as_var(var)
    what = f"decompose_reduction {var.name}"
    found = []

    class _Find(StmtVisitor):
        def visit_Allocate(self, a):
            if any(isinstance(x, For) and x.var is var for x in walk_stmts(a.body)):
                found.append(a)
            self.generic(a)

    _Find().visit(s)
    if not found:
        raise ScheduleError(f"{what}: {var.name} is not a reduction loop computed into an accumulator")
    alloc = found[-1]                          # the innermost allocation around the loop
    acc, body = alloc.buffer, alloc.body
    parts = body.stmts if isinstance(body, Seq) else [body]
    if acc.size != 1 or len(parts) != 3 or not isinstance(parts[0], Store) or parts[0].buffer is not acc \
            or not isinstance(parts[2], Store) or not isinstance(parts[2].value, Load) \
            or parts[2].value.buffer is not acc:
        raise ScheduleError(f"{what}: the accumulator {acc.name} is not init; reduce; copy out (an epilogue "
                            "such as a bias or an activation reads it)")
    out, out_index = parts[2].buffer, parts[2].index
    if out.dtype != acc.dtype:
        raise ScheduleError(f"{what}: the output {out.name} is {out.dtype}, the accumulator {acc.dtype}")

    class _ToOut(StmtMutator):
        def visit_Store(self, st):
            value = transform(st.value, lambda e: Load(out, out_index) if isinstance(e, Load) and e.buffer is acc
                              else None)
            return Store(out if st.buffer is acc else st.buffer, out_index if st.buffer is acc else st.index, value)

    init = Store(out, out_index, parts[0].value)
    new = Seq([init, _ToOut().visit(parts[1])])
    return _ReplaceAlloc(alloc, new).visit(s)


class _ReplaceAlloc(StmtMutator):
    def __init__(self, old, new):
        self.old, self.new = old, new

    def visit_Allocate(self, a):
        return self.new if a is self.old else StmtMutator.visit_Allocate(self, a)


def _per_iteration(indices, var, inner):
    """Whether every access is at one index that is a different element in each iteration of
    `var`: all the same expression, affine, var's stride larger than the span the loops inside
    (`inner`: {id(var): constant extent}) cover. Then distributing the loop reorders no two
    accesses to an element."""
    keys = {tuple(i.key() for i in idx) for idx in indices}
    if len(keys) != 1:
        return False
    idx = indices[0]
    if len(idx) == 1 and idx[0] is var:
        return True
    form = linear_form(idx[0]) if len(idx) == 1 else None
    if form is None:
        return False
    stride, span = 0, 0
    for atom, k in form[0].values():
        if atom is var:
            stride += k
        elif id(atom) in inner:
            if inner[id(atom)] is None:
                return False
            span += abs(k) * (inner[id(atom)] - 1)
        elif any(isinstance(n, Var) and (n is var or id(n) in inner) for n in walk(atom)):
            return False                 # var or an inner loop inside a non-affine term
    return abs(stride) > span


def _accesses(s):
    """({id(buffer): buffer} written, {id(buffer): [indices, ...]} every access) in s."""
    written, every = {}, {}
    for x in walk_stmts(s):
        if isinstance(x, Store):
            written[id(x.buffer)] = x.buffer
            every.setdefault(id(x.buffer), []).append((x.index,))
        for e in own_exprs(x):
            for n in walk(e):
                if isinstance(n, Load):
                    every.setdefault(id(n.buffer), []).append(n.indices)
    return written, every


@traced
def hoist_allocate(s: Stmt, var: Var):
    """for v { allocate b[m] {body} } -> allocate b[n*m] { for v {body with b[i] -> b[(v-min)*m + i]} }:
    every iteration keeps its own slot, so the loop can then be split up (fission) or
    interchanged with the loops inside it."""
    var = as_var(var)

    def fn(x: For):
        if not isinstance(x.body, Allocate):
            raise ScheduleError(f"hoist_allocate: the body of {var.name} is not an allocation")
        n, mn = const_value(x.extent), const_value(x.min)
        if n is None or mn is None:
            raise ScheduleError(f"hoist_allocate needs constant bounds for {var.name}")
        old = x.body.buffer
        new = Buffer(old.name, old.dtype, (n,) + tuple(old.shape), old.scope)
        slot = (var - mn) * old.size if mn else var * old.size
        body = _Rebase(old, new, slot).visit(x.body.body)
        return Allocate(new, x.with_body(body))

    _loops_of(s, var, "hoist_allocate")
    return _replace(s, var, fn)


class _Rebase(StmtMutator):
    def __init__(self, old, new, offset):
        self.old, self.new, self.offset = old, new, offset

    def mutate_expr(self, e):
        def f(x):
            if isinstance(x, Load) and x.buffer is self.old:
                if len(x.indices) != 1:
                    raise ScheduleError(f"hoist_allocate: {self.old.name} is read with one index per dimension")
                return Load(self.new, simplify(self.offset + x.indices[0]))
            return None
        from .expr import transform
        return transform(e, f)

    def visit_Store(self, s):
        idx, val = self.mutate_expr(s.index), self.mutate_expr(s.value)
        if s.buffer is self.old:
            return Store(self.new, simplify(self.offset + idx), val)
        return Store(s.buffer, idx, val)


@traced
def unroll(s: Stmt, var: Var, max_extent: int = 16):
    """Replicate the body of a constant-extent loop (the renderer then sees straight-line code)."""
    var = as_var(var)
    for loop in _loops_of(s, var, "unroll"):
        ext, mn = const_value(loop.extent), const_value(loop.min)
        if ext is None or mn is None or ext > max_extent:
            raise ScheduleError(f"unroll needs a constant extent of at most {max_extent} for {var.name}")

    def fn(x: For):
        mn = const_value(x.min)
        return Seq([_subst(x.body, var, Const(mn + i, var.dtype)) for i in range(const_value(x.extent))])

    return _replace(s, var, fn)


@traced
def partition(s: Stmt, var: Var, lo: int, hi: int):
    """Loop `var` as up to three consecutive loops over [min, lo), [lo, hi), [hi, min + extent),
    each with the same body: a window clamped at the borders gets constant bounds in the
    middle one once simplified under its range (simplify_stmt)."""
    var = as_var(var)
    for loop in _loops_of(s, var, "partition"):
        mn, ext = const_value(loop.min), const_value(loop.extent)
        if mn is None or ext is None or not mn <= lo <= hi <= mn + ext:
            raise ScheduleError(f"partition {var.name}: [{lo}, {hi}) is not inside a constant range")

    def fn(x: For):
        mn, end = const_value(x.min), const_value(x.min) + const_value(x.extent)
        parts = [For(x.var, a, b - a, x.body, x.kind, x.thread_tag)
                 for a, b in ((mn, lo), (lo, hi), (hi, end)) if b > a]
        return parts[0] if len(parts) == 1 else Seq(parts)

    return _replace(s, var, fn)


def _set_kind(s, var, kind, tag=None):
    return _replace(s, var, lambda x: For(x.var, x.min, x.extent, x.body, kind, tag))


@traced
def vectorize(s: Stmt, var: Var, rolled: bool = False):
    """Mark loop `var` for the C compiler to vectorize (kept as a loop with independent iterations).
    rolled: kind 'simd', printed with a hint that the loop is not to be unrolled: gcc -O3 unrolls
    a loop of 16 or fewer iterations completely before its loop vectorizer runs, and its
    straight-line vectorizer then packs a register block's copies poorly (VWW's first conv 8.8x
    slower on the host, its 8 channel lanes unrolled)."""
    var = as_var(var)
    _loops_of(s, var, "vectorize")
    return _set_kind(s, var, "simd" if rolled else "vectorize")


@traced
def parallel(s: Stmt, var: Var):
    """Mark loop `var` as parallel: its iterations write disjoint elements and may run on
    different cores. Checked: every store inside is indexed by the loop variable, and no
    buffer written inside is read at another index."""
    var = as_var(var)
    for loop in _loops_of(s, var, "parallel"):
        written, every = _accesses(loop.body)
        private = {id(x.buffer) for x in walk_stmts(loop.body) if isinstance(x, Allocate)}
        for key, buf in written.items():
            if key in private:
                continue          # allocated inside: each iteration has its own
            stores = [x.index for x in walk_stmts(loop.body) if isinstance(x, Store) and x.buffer is buf]
            if not all(any(v is var for v in walk(i)) for i in stores) or \
                    len({tuple(i.key() for i in idx) for idx in every[key]}) != 1:
                raise ScheduleError(f"parallel {var.name}: iterations may write the same element of {buf.name}")
    return _set_kind(s, var, "parallel")


@traced
def bind(s: Stmt, var: Var, thread_tag: str):
    """Bind loop `var` to a GPU thread index (blockIdx.x ... threadIdx.z): one iteration per thread."""
    var = as_var(var)
    if thread_tag not in THREAD_TAGS:
        raise ScheduleError(f"bind {var.name}: unknown thread tag {thread_tag!r} (one of {', '.join(THREAD_TAGS)})")
    loop_vars = {id(x.var) for x in walk_stmts(s) if isinstance(x, For)}
    for loop in _loops_of(s, var, "bind"):
        # an extent of te.var sizes becomes constant at aot.build, before the launch is sized
        sizes_only = not any(isinstance(n, Load) or (isinstance(n, Var) and id(n) in loop_vars)
                             for n in walk(loop.extent))
        if const_value(loop.min) != 0 or (const_value(loop.extent) is None and not sizes_only):
            raise ScheduleError(f"bind {var.name}: a bound loop needs min 0 and a constant extent")
    return _set_kind(s, var, "thread_binding", thread_tag)


@traced
def tensorize(s: Stmt, var: Var, intrin):
    """Replace every loop over var, an accumulation acc = acc + f(k) (or a perfect nest of them
    under var), by one call of the tensor intrinsic (aot/tir/intrin/; a name or the object) that
    computes the whole sum: acc = acc + intrin(args). Refused unless the nest is exactly the
    intrinsic's pattern (its own check: operand types, contiguity along the nest's loops)
    accumulating into a one-element buffer. An intrinsic with written_args (dw_s8) replaces the
    whole loop over var, its stores included, by one call statement (Evaluate)."""
    from .expr import Call
    from .intrin import TensorIntrin, get_intrin
    var = as_var(var)
    it = intrin if isinstance(intrin, TensorIntrin) else get_intrin(intrin)
    if it is None:
        raise ScheduleError(f"tensorize: no tensor intrinsic named {intrin!r}")

    def fn(x: For):
        if x.kind != "serial":
            raise ScheduleError(f"tensorize: loop {var.name} is {x.kind}, not serial")
        if it.written_args:      # an intrinsic that stores its results itself: the loop becomes the call
            args, why = it.match(x)
            if args is None:
                raise ScheduleError(f"tensorize: loop {var.name} is not {it.name}: {why}")
            return Evaluate(Call(it.name, args, it.dtype))
        inner = x.body
        while isinstance(inner, For):      # a perfect nest under var may be one run (the intrinsic says)
            inner = inner.body
        acc = inner.buffer if isinstance(inner, Store) else None
        if acc is None or acc.size != 1:
            raise ScheduleError(f"tensorize: loop {var.name} does not accumulate into one scalar")
        args, why = it.match(x, acc)
        if args is None:
            raise ScheduleError(f"tensorize: loop {var.name} is not {it.name}: {why}")
        return Store(acc, inner.index, Bin("+", Load(acc, inner.index), Call(it.name, args, it.dtype)))
    _loops_of(s, var, "tensorize")
    return _replace(s, var, fn)


# -- memory hierarchy -------------------------------------------------------------------------


def _enclosing(s, target):
    """The loops around statement `target` in s, outermost first."""
    path = []

    def go(x, acc):
        if x is target:
            path.extend(acc)
            return True
        kids = [x.body] if isinstance(x, (For, Allocate)) else \
            list(x.stmts) if isinstance(x, Seq) else \
            [x.then] + ([x.else_] if x.else_ is not None else []) if isinstance(x, IfThenElse) else []
        return any(go(k, acc + [x] if isinstance(x, For) else acc) for k in kids)

    go(s, [])
    return path


class _Reads(StmtVisitor):
    """Every read of `buffer` in a statement, with the loop ranges in force there."""

    def __init__(self, buffer, ranges):
        self.buffer, self.ranges, self.found = buffer, ranges, []

    def visit_expr(self, e):
        self.found.extend((x, self.ranges) for x in walk(e) if isinstance(x, Load) and x.buffer is self.buffer)

    def visit_For(self, s):
        self.generic_exprs(s)
        outer, self.ranges = self.ranges, loop_ranges(self.ranges, s)
        self.visit(s.body)
        self.ranges = outer

    def generic_exprs(self, s):
        for e in own_exprs(s):
            self.visit_expr(e)


def _box(index, varying, ranges, what):
    """(fixed terms, lowest offset, highest offset) of an index over the varying loops: the
    index is fixed + sum(coeff * var) + c, and every var's range is known."""
    form = linear_form(simplify(index))
    if form is None:
        raise ScheduleError(f"{what}: an index is not an integer expression")
    fixed, lo, hi = {}, form[1], form[1]
    for key, (atom, c) in form[0].items():
        if isinstance(atom, Var) and id(atom) in varying:
            r = ranges.get(id(atom))
            if r is None:
                raise ScheduleError(f"{what}: the range of loop {atom.name} is not known")
            lo, hi = lo + min(c * r[0], c * r[1]), hi + max(c * r[0], c * r[1])
        elif any(isinstance(v, Var) and id(v) in varying for v in walk(atom)):
            raise ScheduleError(f"{what}: an index is not affine in the loops the cache spans: {atom.key()}")
        else:
            fixed[key] = (atom, c)
    return fixed, lo, hi


@traced
def cache_read(s: Stmt, buffer: Buffer, at: Var, scope: str = "shared", shared_max: int | None = None):
    """Stage what the body of loop `at` reads of `buffer` in a buffer of `scope`, filled at the
    start of every iteration of `at`; returns (stmt, cache buffer).

    The cache holds the bounding box of the elements read, over the loops inside `at` and, for
    "shared", over the block's threads (the threadIdx loops around `at`): those threads fill it
    together, a barrier follows the fill, and another ends the iteration so that no thread
    refills it while another still reads it. Elements of the box outside `buffer` are
    zero-filled and never read. Every read must be affine in the loops the box spans. A shared
    cache may take shared_max bytes: the target family's shared_max, by default the GPU
    families' (aot/targets/base.py)."""
    at = as_var(at)
    what = f"cache_read {buffer.name} at {at.name}"
    if scope not in ("shared", "local"):
        raise ScheduleError(f"{what}: scope {scope!r} is not 'shared' or 'local'")
    if buffer.symbolic:
        raise ScheduleError(f"{what}: {buffer!r} has a symbolic size (te.var): a cache needs constant bounds")
    loops = _loops_of(s, at, "cache_read")
    if len(loops) != 1:
        raise ScheduleError(f"{what}: {at.name} heads {len(loops)} loops")
    target = loops[0]
    path = _enclosing(s, target)
    ranges = {}
    for lp in path + [target]:
        ranges = loop_ranges(ranges, lp)
    threads = [lp for lp in path if lp.kind == "thread_binding" and lp.thread_tag.startswith("threadIdx")] \
        if scope == "shared" else []
    if scope == "shared" and not threads and not any(lp.kind == "thread_binding" for lp in path):
        raise ScheduleError(f"{what}: a shared cache needs the loop inside a GPU block (bind the loops around it)")
    reads = _Reads(buffer, ranges)
    reads.visit(target.body)
    if not reads.found:
        raise ScheduleError(f"{what}: the loop does not read {buffer.name}")
    if any(isinstance(x, Store) and x.buffer is buffer for x in walk_stmts(target.body)):
        raise ScheduleError(f"{what}: the loop writes {buffer.name}")
    inner = {id(x.var) for x in walk_stmts(target.body) if isinstance(x, For)}
    varying = inner | {id(lp.var) for lp in threads}
    ndim = {len(ld.indices) for ld, _ in reads.found}
    if len(ndim) != 1:
        raise ScheduleError(f"{what}: {buffer.name} is read both flat and by dimension")
    ndim = ndim.pop()
    shape = buffer.shape if ndim == len(buffer.shape) else (buffer.size,)
    start, extent = [], []
    for d in range(ndim):
        boxes = [_box(ld.indices[d], varying, r, what) for ld, r in reads.found]
        keys = {frozenset((k, c) for k, (_, c) in b[0].items()) for b in boxes}
        if len(keys) != 1:
            raise ScheduleError(f"{what}: the reads of dimension {d} are not at constant distances")
        lo, hi = min(b[1] for b in boxes), max(b[2] for b in boxes)
        start.append(simplify(from_linear(boxes[0][0], lo, INDEX)))
        extent.append(hi - lo + 1)
    cache = Buffer(f"{buffer.name}_{scope}", buffer.dtype, extent, scope)
    nbytes = cache.size * np.dtype(buffer.dtype if buffer.dtype != "bfloat16" else "uint16").itemsize
    limit = GpuFamily.shared_max if shared_max is None else shared_max
    if scope == "shared" and nbytes > limit:
        raise ScheduleError(f"{what}: the cache needs {nbytes} bytes, more than the {limit} of shared "
                            "memory a block may use")

    class Redirect(StmtMutator):
        def mutate_expr(self, e):
            def f(x):
                if isinstance(x, Load) and x.buffer is buffer:
                    return Load(cache, tuple(simplify(i - st) for i, st in zip(x.indices, start)))
                return None
            return transform(e, f)

    # the fill: element `flat` of the box, spread over the block's threads
    nthreads, tid = 1, Const(0, INDEX)
    for lp in sorted(threads, key=lambda lp: lp.thread_tag, reverse=True):      # z, y, x: x varies fastest
        tid, nthreads = tid * const_value(lp.extent) + lp.var, nthreads * const_value(lp.extent)
    e = Var(f"{buffer.name}_fill")
    flat = e * nthreads + tid
    # the trailing dimensions the box covers whole are, with the last one it covers in part,
    # one run that is contiguous both in the buffer and in the cache: an element of the run
    # is found without a division per dimension and checked once
    run = ndim - 1
    while run > 0 and const_value(start[run]) == 0 and extent[run] == shape[run]:
        run -= 1
    gstride = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(ndim)]
    src, inside, stride = [], [], cache.size
    for d in range(run + 1):
        stride //= extent[d]
        whole = stride if d == run else 1       # the run: its elements, not its rows
        if d == 0:
            pos = Bin("floordiv", flat, Const(stride // whole, INDEX)) if stride // whole > 1 else flat
        elif stride // whole > 1:
            pos = Bin("floormod", Bin("floordiv", flat, Const(stride // whole, INDEX)),
                      Const(extent[d] * whole, INDEX))
        else:
            pos = Bin("floormod", flat, Const(extent[d] * whole, INDEX))
        first = simplify(start[d] * whole + pos) if d == run else simplify(start[d] + pos)
        src.append(first)
        inside += [ge(first, Const(0, INDEX)), lt(first, Const(shape[d] * whole, INDEX))]
    if run == ndim - 1:
        value = Load(buffer, tuple(src))
    else:
        value = Load(buffer, simplify(sum((src[d] * gstride[d] for d in range(run)), Const(0, INDEX))
                                      + src[run]))
    copy = IfThenElse(all_of(inside), Store(cache, flat, value), Store(cache, flat, Const(0, buffer.dtype)))
    if cache.size % nthreads:
        copy = IfThenElse(lt(flat, Const(cache.size, INDEX)), copy)
    fill = For(e, 0, -(-cache.size // nthreads), copy)

    def fn(x: For):
        body = Redirect().visit(x.body)
        if scope == "local":
            return x.with_body(Allocate(cache, Seq([fill, body])))
        caches = []            # the shared caches staged here before: their fills and barriers are shared
        while isinstance(body, Allocate) and body.buffer.scope == "shared":
            caches.append(body.buffer)
            body = body.body
        parts = body.stmts if isinstance(body, Seq) else [body]
        fills = next((k for k, p in enumerate(parts) if isinstance(p, Barrier)), None)
        if fills and isinstance(parts[-1], Barrier) and all(
                isinstance(q, Store) and q.buffer.scope == "shared" for p in parts[:fills] for q in walk_stmts(p)
                if isinstance(q, Store)):
            new = Seq([fill] + parts)         # another cache's fill and barriers are there: share them
        else:
            new = Seq([fill, Barrier("shared")] + parts + [Barrier("shared")])
        new = Allocate(cache, new)
        for b in reversed(caches):
            new = Allocate(b, new)
        return x.with_body(new)

    return _ReplaceLoops(lambda x: x is target, fn).visit(s), cache


class _Writes(StmtVisitor):
    """Every store to `buffer` in a statement, with the loop ranges and the branch conditions in
    force there."""

    def __init__(self, buffer, ranges):
        self.buffer, self.ranges, self.conds, self.found, self.loads = buffer, ranges, [], [], []

    def visit_Store(self, s):
        if s.buffer is self.buffer:
            self.found.append((s, self.ranges, list(self.conds)))
        self.visit_expr(s.value)
        self.visit_expr(s.index)

    def visit_expr(self, e):
        self.loads.extend((x, list(self.conds)) for x in walk(e) if isinstance(x, Load) and x.buffer is self.buffer)

    def visit_For(self, s):
        outer, self.ranges = self.ranges, loop_ranges(self.ranges, s)
        self.visit(s.body)
        self.ranges = outer

    def visit_IfThenElse(self, s):
        self.visit_expr(s.cond)
        self.conds.append(s.cond)
        self.visit(s.then)
        self.conds.pop()
        if s.else_ is not None:
            self.conds.append(Unary("not", s.cond))
            self.visit(s.else_)
            self.conds.pop()


@traced
def cache_write(s: Stmt, buffer: Buffer, at: Var, scope: str = "local"):
    """Compute what the body of loop `at` stores to `buffer` into a `scope` buffer of the tile it
    covers, then copy the tile out at the end of every iteration of `at` (TVM's cache_write placed
    by compute_at); returns (stmt, cache buffer, the copy's loop variables).

    The tile is the box of the loops inside `at` that the store index is affine in, one
    dimension per loop (outermost the loop with the largest stride): the body must store at one
    index pattern, under the same conditions (a split's tail guard; the copies keep them). A body
    that also reads `buffer` (it accumulates there: TensorIR's T.init form) reads it at that
    index, from the cache, which is then filled from `buffer` first."""
    at = as_var(at)
    what = f"cache_write {buffer.name} at {at.name}"
    if scope != "local":
        raise ScheduleError(f"{what}: scope {scope!r} is not 'local' (a write cache is private to a thread)")
    loops = _loops_of(s, at, what)
    if len(loops) != 1:
        raise ScheduleError(f"{what}: {at.name} heads {len(loops)} loops")
    target = loops[0]
    ranges = {}
    for lp in _enclosing(s, target) + [target]:
        ranges = loop_ranges(ranges, lp)
    writes = _Writes(buffer, ranges)
    writes.visit(target.body)
    if not writes.found:
        raise ScheduleError(f"{what}: the loop does not write {buffer.name} (compute_at a loop around its stores)")
    inner = {id(x.var): x for x in walk_stmts(target.body) if isinstance(x, For)}
    def pattern(index):
        form = linear_form(simplify(index))
        if form is None:
            raise ScheduleError(f"{what}: an index of {buffer.name} is not an integer expression")
        return tuple(sorted((k, c) for k, (_, c) in form[0].items())), form[1]

    if len({pattern(st.index) for st, _, _ in writes.found}) != 1:
        raise ScheduleError(f"{what}: the stores to {buffer.name} are not at one index")
    st = writes.found[0][0]
    for ld, _ in writes.loads:
        if len(ld.indices) != 1 or pattern(ld.indices[0]) != pattern(st.index):
            raise ScheduleError(f"{what}: the loop reads {buffer.name} elsewhere than where it stores it")
    terms, const = linear_form(simplify(st.index))
    dims = []
    for key, (atom, c) in terms.items():
        if isinstance(atom, Var) and id(atom) in inner:
            lp = inner[id(atom)]
            if const_value(lp.min) is None or const_value(lp.extent) is None or c <= 0:
                raise ScheduleError(f"{what}: loop {atom.name} needs constant bounds and a positive stride")
            dims.append((c, atom, const_value(lp.min), const_value(lp.extent)))
        elif any(isinstance(v, Var) and id(v) in inner for v in walk(atom)):
            raise ScheduleError(f"{what}: the store index is not affine in the loops inside {at.name}")
    dims.sort(key=lambda d: -d[0])
    for k, (c, v, _, _) in enumerate(dims):          # distinct iterations store distinct elements
        if c <= sum(c2 * (n2 - 1) for c2, _, _, n2 in dims[k + 1:]):
            raise ScheduleError(f"{what}: two iterations may store the same element of {buffer.name}")
    dim_ids = {id(v) for _, v, _, _ in dims}

    def on_dims(c):         # a guard of the tile: on its loops (and those around `at`), no others inside
        vs = [v for v in walk(c) if isinstance(v, Var)]
        return any(id(v) in dim_ids for v in vs) and all(id(v) in dim_ids for v in vs if id(v) in inner)
    # the tile's guard: the conditions on its own loops (a split's tail), the same at every store
    guards = {tuple(c.key() for c in cs if on_dims(c)) for _, _, cs in writes.found}
    if len(guards) != 1:
        raise ScheduleError(f"{what}: the stores to {buffer.name} are under different conditions on its index")
    conds = [c for c in writes.found[0][2] if on_dims(c)]
    # an element not certainly stored (under another condition, in a loop that may not run) or
    # read before it is stored keeps the buffer's value: the cache starts as a copy of the tile
    needs_fill = bool(writes.loads) or any(len(cs) != len(conds) for _, _, cs in writes.found) or any(
        (const_value(lp.extent) or 0) < 1 for lp in inner.values() if id(lp.var) not in dim_ids)
    shape = [n for _, _, _, n in dims] or [1]
    cache = Buffer(f"{buffer.name}_{scope}", buffer.dtype, shape, scope)
    strides, acc = [], 1
    for n in reversed(shape[:len(dims)]):
        strides.insert(0, acc)
        acc *= n
    local = Const(0, INDEX)
    for (_, v, mn, _), st_ in zip(dims, strides):
        local = local + (v - mn) * st_
    local = simplify(local)

    class Redirect(StmtMutator):
        def mutate_expr(self, e):
            return transform(e, lambda x: Load(cache, local) if isinstance(x, Load) and x.buffer is buffer else None)

        def visit_Store(self, x):
            x = StmtMutator.visit_Store(self, x)
            return Store(cache, local, x.value) if x.buffer is buffer else x

    copy_vars = [Var(f"{v.name}_c") for _, v, _, _ in dims]
    to_copy = {id(v): cv + mn for (_, v, mn, _), cv in zip(dims, copy_vars)}
    src = substitute(local, to_copy)
    dst = substitute(st.index, to_copy)

    def tile_loop(stmt, names):
        if conds:
            stmt = IfThenElse(all_of([substitute(c, to_copy) for c in conds]), stmt)
        for cv, (_, _, _, n) in reversed(list(zip(names, dims))):
            stmt = For(cv, 0, n, stmt)
        return substitute_vars(stmt, dict(zip(map(id, copy_vars), names)))

    def substitute_vars(stmt, m):
        return map_exprs(stmt, substituter(m)) if m else stmt

    copy = tile_loop(Store(buffer, simplify(dst), Load(cache, simplify(src))), copy_vars)
    fill = None
    if needs_fill:
        fill_vars = [Var(f"{v.name}_f") for _, v, _, _ in dims]
        fill = tile_loop(Store(cache, simplify(src), Load(buffer, simplify(dst))), fill_vars)
    new = _ReplaceLoops(lambda x: x is target,
                        lambda x: x.with_body(Allocate(cache, Seq([fill, Redirect().visit(x.body), copy])))).visit(s)
    return new, cache, copy_vars


# -- buffer layout ----------------------------------------------------------------------------
@dataclass(frozen=True)
class PackLayout:
    """A row-major array with dimension `dim` split into blocks of `factor`, the position
    inside a block moved innermost: [.., N, ..] -> [.., N/factor, .., factor]. Constants are
    stored this way so that the `factor` lanes of a register tile read consecutive elements."""
    dim: int
    factor: int

    def shape(self, shape):
        d, f = self.dim, self.factor
        return tuple(shape[:d]) + (shape[d] // f,) + tuple(shape[d + 1:]) + (f,)

    def apply(self, a: np.ndarray) -> np.ndarray:
        d, f = self.dim, self.factor
        split = a.reshape(a.shape[:d] + (a.shape[d] // f, f) + a.shape[d + 1:])
        return np.ascontiguousarray(np.moveaxis(split, d + 1, -1))

    def indices(self, idx):
        """Where element idx of the logical array lives in the packed one."""
        d, f = self.dim, self.factor
        return list(idx[:d]) + [idx[d] // f] + list(idx[d + 1:]) + [idx[d] % f]


def _divmods(e):
    return sum(1 for x in walk(e) if isinstance(x, Bin) and x.op in ("floordiv", "floormod"))


class _Relayout(StmtMutator):
    def __init__(self, old, new, layout):
        self.old, self.new, self.layout, self.ranges, self.failed = old, new, layout, {}, None

    def mutate_expr(self, e):
        def f(x):
            if isinstance(x, Load) and x.buffer is self.old:
                if len(x.indices) != len(self.old.shape):
                    self.failed = self.failed or x
                    return None
                new = [simplify(i, self.ranges) for i in self.layout.indices(x.indices)]
                if sum(map(_divmods, new)) > sum(_divmods(simplify(i, self.ranges)) for i in x.indices):
                    self.failed = self.failed or x
                return Load(self.new, tuple(new))
            return None
        from .expr import transform
        return transform(e, f)

    def visit_For(self, s):
        outer, self.ranges = self.ranges, loop_ranges(self.ranges, s)
        try:
            return s.with_body(self.visit(s.body), self.mutate_expr(s.min), self.mutate_expr(s.extent))
        finally:
            self.ranges = outer


@traced
def pack_layout(func: PrimFunc, param: int, dim: int, factor: int) -> PrimFunc:
    """Store input parameter `param` (a constant) in PackLayout(dim, factor). The caller must
    pass the array in that layout: the layout is recorded in func.attrs["layouts"][param], and
    the executor applies it to the constant it links. Refused when a read of the buffer does
    not become a plain index in the new layout."""
    old = func.params[param]
    if param >= func.num_inputs or param not in func.attrs.get("constants", ()):
        raise ScheduleError(f"pack_layout: parameter {old.name} is not a constant input")
    if not 0 <= dim < len(old.shape) or factor < 2 or old.shape[dim] % factor:
        raise ScheduleError(f"pack_layout: dimension {dim} of {old!r} is not a whole number of {factor}-blocks")
    layout = PackLayout(dim, factor)
    new = Buffer(old.name, old.dtype, layout.shape(old.shape), old.scope)
    mut = _Relayout(old, new, layout)
    body = mut.visit(func.body)
    if mut.failed is not None:
        raise ScheduleError(f"pack_layout: a read of {old.name} does not map to a plain index in the packed layout")
    if any(isinstance(x, Store) and x.buffer is old for x in walk_stmts(func.body)):
        raise ScheduleError(f"pack_layout: {old.name} is written")
    params = [new if k == param else b for k, b in enumerate(func.params)]
    layouts = dict(func.attrs.get("layouts", {}))
    if param in layouts:
        raise ScheduleError(f"pack_layout: {old.name} already has a layout")
    layouts[param] = layout
    return func.with_body(body, params, dict(func.attrs, layouts=layouts))


__all__ = ["ScheduleError", "as_var", "find_loops", "split", "fuse", "reorder", "fission",
           "hoist_allocate", "unroll", "partition", "vectorize", "parallel", "bind", "cache_read", "cache_write", "pack_layout", "PackLayout"]


@traced
def contract_fma(s: Stmt, var: Var):
    """Inside loop `var`: every float accumulation into a local buffer, `a[i] = a[i] + x * y`,
    becomes one fused multiply-add, fma(x, y, a[i]) (one rounding instead of two: C compilers contract only when
    told to, and -std=c99 tells them not to). Only accumulator updates change, so the values
    differ from the unfused ones by the rounding of the product alone. Loops marked for the C
    compiler to vectorize keep a * b + c."""
    var = as_var(var)

    def fused(st):
        v = st.value
        if not (st.buffer.scope == "local" and is_float(st.buffer.dtype) and isinstance(v, Bin) and v.op == "+"):
            return None
        for acc, prod in ((v.a, v.b), (v.b, v.a)):
            if isinstance(acc, Load) and acc.buffer is st.buffer and acc.index.key() == st.index.key() and \
                    isinstance(prod, Bin) and prod.op == "*" and prod.dtype == st.buffer.dtype:
                return Store(st.buffer, st.index, Call("fma", [prod.a, prod.b, acc], st.buffer.dtype))
        return None

    class _Fuse(StmtMutator):
        def visit_Store(self, st):
            return fused(st) or st

        def visit_For(self, x):      # the C compiler vectorizes a * b + c better than fmaf (Helium)
            return x if x.kind in ("vectorize", "simd") else super().visit_For(x)

    return _replace(s, var, lambda x: _Fuse().visit(x))
