"""Implicit GEMM for large accumulations on GPUs (convolutions, matrix products).

tile_accumulation (gpu.py) gives every thread one output: each multiply-add then costs two
shared-memory loads. Here every thread keeps a ry x rx tile of accumulators in registers, so
one reduction step loads ry + rx operands for ry * rx multiply-adds (4 x 4: 8 loads for 16),
and a block stages (ty * ry) output channels' weights and (tx * rx) positions' inputs per
reduction chunk. A thread's lanes are strided by the block's width, so that the threads of a
warp read consecutive staged inputs (no bank conflicts) and store consecutive outputs.

The tile sizes are chosen by shape: threads x lanes must divide each tiled axis, so no tail
guard separates a thread's lanes from its accumulators; a kernel with no such tiling, or too
small to gain from register tiles, is left to tile_accumulation.

A padded convolution's window loops are clipped by the output position (aot/ops/window.py),
which would give every lane its own loop bounds. Once its input is staged, the clipped-out
taps read the zeros the fill writes outside the input, so the loops run over the whole
window: allowed only where each clipped-out tap is proven (for every output position, by
enumeration) to read outside the input, and the tap's term is that input, or that input times
a factor a zero makes zero (any integer; a constant weight or a finite literal for floats). A
zero-point difference does not qualify, nor does a runtime float weight (inf x 0 is NaN).
"""
from __future__ import annotations

import math
from itertools import product

import numpy as np

from ..tir.expr import Bin, Cast, Const, Load, free_vars, is_float, substitute, walk
from ..tir.schedule import (ScheduleError, bind, cache_read, fission, fuse, hoist_allocate, reorder, split,
                            unroll)
from ..tir.simplify import const_value, simplify, simplify_stmt
from ..tir.stmt import For, StmtMutator, own_exprs, walk_stmts
from ..tir.trace import mark, rollback
from .gpu import launched, tileable

MAX_THREADS = (32, 16)      # (y, x) threads along each axis of a block
BLOCK = 256                 # threads a block at most
LANES = (4, 2, 1)           # accumulators per thread along each tiled axis, largest first
MIN_THREADS = (4, 7)        # fewer threads than this along an axis: a smaller lane count is preferred
CHUNKS = (16, 8, 4, 2, 1)   # reduction steps staged per fill, largest first, while the tiles fit
MIN_BLOCK = 32              # threads a block needs (one warp)
ENUMERATE = 4096            # output positions a clipped window's proof may enumerate


def _tiling(ext, max_threads, min_threads):
    """(threads, lanes) along an axis of `ext` outputs: threads * lanes divides ext, the most
    lanes with at least min_threads threads (else the most threads), then the most threads."""
    best = None
    for lanes in LANES:
        if ext % lanes:
            continue
        threads = next((t for t in range(min(max_threads, ext // lanes), 0, -1) if ext % (t * lanes) == 0), 0)
        if threads >= min(min_threads, ext // lanes):
            return threads, lanes
        best = best or (threads, lanes)
    return best


def _value(e, env):
    v = const_value(simplify(substitute(e, env)))
    if v is None:
        raise ScheduleError("a clipped window bound is not a constant at a given output position")
    return v


def _input_factor(update, acc, constants):
    """The loads of `acc = acc + term` whose zero makes the term zero: term is that load, or a
    product with it as one factor (through a cast). A float product qualifies only with a
    constant weight or a finite literal as the other factor: a runtime infinity there would turn
    a padded zero into NaN, where the clipped loop never reads it."""
    if not (isinstance(update, Bin) and update.op == "+" and isinstance(update.a, Load) and update.a.buffer is acc):
        return []

    def plain(x):
        x = x.a if isinstance(x, Cast) else x
        return x if isinstance(x, Load) and len(x.indices) > 1 else None

    def finite(other):
        other = other.a if isinstance(other, Cast) else other
        if isinstance(other, Const):
            return math.isfinite(other.value)
        return isinstance(other, Load) and any(other.buffer is c for c in constants)
    t = update.b
    if not (isinstance(t, Bin) and t.op == "*"):
        return [x for x in (plain(t),) if x is not None]
    return [plain(x) for x, other in ((t.a, t.b), (t.b, t.a))
            if plain(x) is not None and (not is_float(t.dtype) or finite(other))]


def _unclip(nest, loops, red, acc, constants):
    """The nest with every clipped reduce loop over its whole window, each clipped-out tap proven
    to read outside the input it multiplies; (nest, the inputs that must be staged)."""
    clipped = [r for r in red if const_value(r.min) is None or const_value(r.extent) is None]
    if not clipped:
        return nest, set()
    out = {id(lp.var): lp for lp in loops}
    upd = next(s for s in walk_stmts(red[-1]) if getattr(s, "buffer", None) is acc)
    cands = _input_factor(upd.value, acc, constants)
    whole = {}
    for r in clipped:
        deps = set(free_vars(r.min)) | set(free_vars(r.extent))
        if not deps <= out.keys():
            raise ScheduleError(f"the window loop {r.var.name} is clipped by another reduce loop")
        dvars = [out[k].var for k in sorted(deps, key=lambda k: [id(lp.var) for lp in loops].index(k))]
        spans = [range(const_value(out[id(v)].min), const_value(out[id(v)].min) + const_value(out[id(v)].extent))
                 for v in dvars]
        if int(np.prod([len(s) for s in spans])) > ENUMERATE:
            raise ScheduleError(f"the window loop {r.var.name} has too many output positions to prove")
        taps = []
        for point in product(*spans):
            env = {id(v): Const(x, v.dtype) for v, x in zip(dvars, point)}
            lo = _value(r.min, env)
            taps.append((env, lo, lo + max(_value(r.extent, env), 0)))
        first, end = min(t[1] for t in taps), max(t[2] for t in taps)
        known = set(map(id, dvars)) | {id(r.var)}
        for x in cands:     # the input every clipped-out tap reads outside of
            dims = [(d, i) for d, i in enumerate(x.indices) if id(r.var) in free_vars(i) and free_vars(i) <= known]
            if dims and all(any(not 0 <= _value(i, {**env, id(r.var): Const(k, r.var.dtype)}) < x.buffer.shape[d]
                                for d, i in dims)
                            for env, lo, hi in taps for k in range(first, end) if not lo <= k < hi):
                whole[id(r.var)] = (first, end, x.buffer)
                break
        else:
            raise ScheduleError(f"the clipped window loop {r.var.name} cannot be shown to read only padding "
                                "outside its clip")

    class Whole(StmtMutator):
        def visit_For(self, s):
            body = self.visit(s.body)
            if id(s.var) not in whole:
                return s.with_body(body)
            first, end, _ = whole[id(s.var)]
            return s.with_body(body, Const(first, s.var.dtype), Const(end - first, s.var.dtype))
    return Whole().visit(nest), {id(w[2]) for w in whole.values()}


def _global_reads(s):
    return [ld for st in walk_stmts(s) for e in own_exprs(st) for ld in walk(e)
            if isinstance(ld, Load) and ld.buffer.scope == "global"]


def implicit_gemm(func, target):
    """Register-tiled, shared-memory-staged accumulation for one large accumulation nest with
    constant output loops; None for other kernels (tile_accumulation takes them)."""
    found = tileable(func)
    if found is None or found[4] is None:
        return None
    body, loops, red, acc, y, x = found
    tx, rx = _tiling(const_value(loops[x].extent), MAX_THREADS[1], MIN_THREADS[1])
    # the channels take what the positions leave of a block: 17 x 4 of 272 channels beside 7 positions
    ty, ry = _tiling(const_value(loops[y].extent), min(MAX_THREADS[0], BLOCK // tx), MIN_THREADS[0])
    if ry * rx < 4 or ty * tx < MIN_BLOCK:
        return None                 # too few lanes to repay the registers, or too few threads to fill a warp
    inputs = {id(b) for b in func.inputs}
    others = [lp.var for k, lp in enumerate(loops) if k not in (x, y)]
    k_ext = const_value(red[0].extent)
    at = mark()
    try:
        s, staged = _unclip(body, loops, red, acc, [func.params[p] for p in func.attrs.get("constants", ())])
        s = reorder(s, others + [loops[y].var, loops[x].var])
        s, y_o, y_i = split(s, loops[y].var, ty * ry)
        s, y_r, y_t = split(s, y_i, ty)
        s, x_o, x_i = split(s, loops[x].var, tx * rx)
        s, x_r, x_t = split(s, x_i, tx)
        s = reorder(s, others + [y_o, x_o, y_t, x_t, y_r, x_r])
        z = others[0] if others else None
        for v in others[1:]:
            s, z = fuse(s, z, v)
        bound = [(y_o, "blockIdx.y"), (x_o, "blockIdx.x"), (y_t, "threadIdx.y"), (x_t, "threadIdx.x")]
        for v, tag in bound + ([(z, "blockIdx.z")] if z is not None else []):
            s = bind(s, v, tag)
        # the lanes' accumulators side by side, the lane loops inside the reduction
        s = fission(fission(hoist_allocate(hoist_allocate(s, x_r), y_r), x_r), y_r)
        s = reorder(s, [r.var for r in red] + [y_r, x_r])
    except ScheduleError:
        rollback(at)
        return None
    # the whole reduction in one stage where it is short; a tail chunk reads the fill's zeros
    for chunk in sorted({min(c, k_ext) for c in CHUNKS}, reverse=True):
        inner = mark()
        try:
            t, k_o, k_i = split(s, red[0].var, chunk)
            k_loop = next(lp for lp in walk_stmts(t) if isinstance(lp, For) and lp.var is k_o)
            read = []
            for ld in _global_reads(k_loop.body):
                if id(ld.buffer) in inputs and ld.buffer not in read:
                    read.append(ld.buffer)
            nbytes = 0
            for b in read:
                t, cache = cache_read(t, b, k_o, "shared", shared_max=target.family.shared_max)
                nbytes += cache.size * np.dtype("uint16" if cache.dtype == "bfloat16" else cache.dtype).itemsize
            if nbytes > target.family.shared_max:
                raise ScheduleError(f"the staged tiles need {nbytes} bytes of shared memory")
            k_inner = next(lp for lp in walk_stmts(t) if isinstance(lp, For) and lp.var is k_i)
            left = {id(ld.buffer) for ld in _global_reads(k_inner)}
            if left & staged:
                raise ScheduleError("a whole window reads an input that is not staged")
            t = unroll(unroll(t, x_r), y_r)
            out = launched(func, simplify_stmt(t))
        except ScheduleError:
            rollback(inner)
            continue
        if out is not None:
            how = f"implicit gemm: {ty * ry}x{tx * rx} outputs a block, {ry}x{rx} a thread, {chunk} of {k_ext} a stage"
            return out.with_body(out.body, attrs=dict(out.attrs, schedule=how))
        rollback(inner)
    rollback(at)
    return None
