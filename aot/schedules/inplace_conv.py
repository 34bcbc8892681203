"""Staged convolutions that can write over their input (issue 16).

A depthwise conv reads, for output channel c, only input channel c; a pointwise (1x1) conv
reads, for output pixel p, only input pixel p. Scheduled with those loops outermost, each
iteration computes its slice (a channel plane, a pixel's output channels) into a small
scratch buffer and then copies it over the same slice of the output: the output can then
share the input's storage when the input dies at the kernel. The executor asks for this
only for such an input, and keeps it only when aot/tir/inplace.py's writes_over_staged proves
it; the scratch is a trailing parameter that the executor plans in the workspace.

A conv whose input rows are read only near the output row (a 3x3 depthwise conv at stride 1)
can instead be staged by rows (stage_rows): a ring of a few output rows, each copied back over
the input once no later row reads what it lands on, proven by writes_over_in_order; the
executor takes whichever proven staging has the smaller scratch.
"""
from __future__ import annotations

import math

from ..tir.expr import Const, Load, Var, substitute, walk
from ..tir.inplace import coords
from ..tir.simplify import const_value
from ..tir.stmt import Allocate, Buffer, For, Seq, Store, map_exprs, own_exprs, walk_stmts
from .nests import accumulation, nests

MAX_SCRATCH_SHARE = 4     # the scratch may take at most a quarter of the output: else nothing is saved


def _subst_stmt(s, mapping):
    return map_exprs(s, lambda e: substitute(e, mapping))


def _halved(block, min_block):
    return block // 2 if block // 2 >= min_block else 1


def _staged_nest(func, in_param, out_param):
    """What both stagings take apart: (the nest's top loop, its output loops, reduce loops,
    accumulator, (init, reduce, store) statements, input and output buffers, the values of its
    one-iteration loops, the store's output coordinates), or None unless the kernel is one accumulation nest of serial loops from 0 of
    constant extents, storing into the output, which has the input's dtype."""
    tops = nests(func.body)
    found = accumulation(tops[0]) if len(tops) == 1 else None
    if not found:
        return None
    loops, red, acc = found
    inb, outb = func.params[in_param], func.params[out_param]
    if inb.dtype != outb.dtype:
        return None
    if any(const_value(lp.min) != 0 or const_value(lp.extent) is None or lp.kind != "serial" for lp in loops):
        return None
    stmts = loops[-1].body.body.stmts
    if stmts[2].buffer is not outb:
        return None
    fixed = {id(x.var): x.min for x in walk_stmts(tops[0]) if isinstance(x, For) and const_value(x.extent) == 1
             and const_value(x.min) is not None}
    out_c = coords((stmts[2].index,), outb.shape, fixed)
    if out_c is None:
        return None
    return tops[0], loops, red, acc, tuple(stmts), inb, outb, fixed, out_c


def _bounded_by(red, loops):
    """Whether a reduce loop's bounds depend on one of `loops` (a clipped window along them)."""
    mine = {id(lp.var) for lp in loops}
    return any(isinstance(v, Var) and id(v) in mine for r in red for e in (r.min, r.extent) for v in walk(e))


def stage_in_place(func, in_param: int, out_param: int, outer_dims=None, block=1, min_block=4, pixels=1):
    """(func staged over the loops whose output coordinates the input reads share, with the
    scratch buffer appended to its parameters, the scratch's element count), or None when the
    kernel is not one accumulation nest with such loops. outer_dims: stage over the loops of
    these output dimensions instead, unchecked (the tests build unsafe schedules with it).
    block: when the one staged loop runs over the innermost dimension (a depthwise conv's
    channels), stage `block` of its values at a time (a depthwise micro-kernel needs a run of
    channels per pixel), the block's loop innermost; halved while the scratch would pass its
    share of the output, the extent is no multiple or the block would be every value, down to
    min_block, else one. pixels: when the innermost dimension is the last of several staged
    loops and the reduction's bounds depend on the loops left to the scratch (an NCHW LRN
    staged by pixels: its channel window is clipped, so its channels cannot be SIMD lanes),
    stage a run of up to `pixels` of its values at a time (the largest divisor of its extent):
    the compute into the scratch then has consecutive pixels for lanes. A pointwise conv keeps
    one pixel a time: its output channels are the lanes, and by runs of pixels it measured
    several times slower."""
    found = _staged_nest(func, in_param, out_param)
    if found is None:
        return None
    top, loops, red, acc, (init, reduce_, store), inb, outb, fixed, out_c = found
    if len(inb.shape) != len(outb.shape):
        return None
    dim_of = {id(e): d for d, e in enumerate(out_c) if isinstance(e, Var)}
    keep = [lp for lp in loops if const_value(lp.extent) > 1]
    if any(id(lp.var) not in dim_of for lp in keep):
        return None
    shared = set(dim_of.values())
    for s in walk_stmts(top):
        for held in own_exprs(s):
            for e in walk(held):
                if isinstance(e, Load) and e.buffer is inb:
                    c = coords(e.indices, inb.shape, fixed)
                    if c is None:
                        return None
                    shared = {d for d in shared if c[d].key() == out_c[d].key()}
    shared = {d for d in shared if inb.shape[d] == outb.shape[d]}
    if outer_dims is not None:
        shared = set(outer_dims)
    outer = [lp for lp in keep if dim_of[id(lp.var)] in shared]
    inner = [lp for lp in keep if dim_of[id(lp.var)] not in shared]
    if not outer or not inner:
        return None
    while block > 1 and (const_value(outer[0].extent) % block or const_value(outer[0].extent) <= block):
        block = _halved(block, min_block)      # a block of every channel would be no staging at all
    last = dim_of[id(outer[-1].var)] == len(outb.shape) - 1
    run = None
    if block > 1 and len(outer) == 1 and last and const_value(outer[0].extent) > block:
        run = block
    elif pixels > 1 and len(outer) > 1 and last and _bounded_by(red, inner):
        run = next((b for b in range(min(pixels, const_value(outer[-1].extent)), 1, -1)
                    if const_value(outer[-1].extent) % b == 0), None)
    if run is not None:        # the innermost staged loop split: its inner part joins the scratch
        whole = outer[-1]
        ob, oi = Var(whole.var.name + "_o", whole.var.dtype), Var(whole.var.name + "_i", whole.var.dtype)
        split = {id(whole.var): ob * Const(run, whole.var.dtype) + oi}
        outer = outer[:-1] + [For(ob, Const(0, "int32"), Const(const_value(whole.extent) // run, "int32"), whole.body)]
        inner = inner + [For(oi, Const(0, "int32"), Const(run, "int32"), whole.body)]
        loops = [outer[-1] if lp is whole else lp for lp in loops] + [inner[-1]]
        keep = [outer[-1] if lp is whole else lp for lp in keep] + [inner[-1]]
        init, reduce_, store = (_subst_stmt(x, split) for x in (init, reduce_, store))
    n = math.prod(const_value(lp.extent) for lp in inner)
    if n * MAX_SCRATCH_SHARE > outb.size:
        return stage_in_place(func, in_param, out_param, outer_dims, _halved(block, min_block), min_block) \
            if block > 1 else stage_in_place(func, in_param, out_param, outer_dims, 1, min_block, pixels // 2) \
            if run is not None and pixels > 1 else None
    scratch = Buffer(f"{outb.name}_stage", outb.dtype, (n,))

    def slot(vars_):
        idx = Const(0, "int32")
        for v, lp in zip(vars_, inner):
            idx = idx * const_value(lp.extent) + v
        return idx

    body = Allocate(acc, Seq([init, reduce_, Store(scratch, slot([lp.var for lp in inner]), store.value)]))
    for lp in reversed(inner):
        body = For(lp.var, lp.min, lp.extent, body)
    fresh = [Var(lp.var.name + "_w", lp.var.dtype) for lp in inner]
    back = Store(outb, substitute(store.index, {id(lp.var): v for lp, v in zip(inner, fresh)}),
                 Load(scratch, slot(fresh)))
    for lp, v in zip(reversed(inner), reversed(fresh)):
        back = For(v, lp.min, lp.extent, back)
    staged = Seq([body, back])
    for lp in reversed([lp for lp in loops if lp not in keep] + outer):
        staged = For(lp.var, lp.min, lp.extent, staged)
    return func.with_body(staged, params=list(func.params) + [scratch]), n


def _fresh(s, mapping, tag):
    """s with every loop it holds given a variable of its own (a second copy of a nest)."""
    if isinstance(s, For):
        v = Var(s.var.name + tag, s.var.dtype)
        inner = {**mapping, id(s.var): v}
        return For(v, substitute(s.min, mapping), substitute(s.extent, mapping), _fresh(s.body, inner, tag), s.kind)
    if isinstance(s, Seq):
        return Seq([_fresh(x, mapping, tag) for x in s.stmts])
    if isinstance(s, Allocate):
        return Allocate(s.buffer, _fresh(s.body, mapping, tag))
    return _subst_stmt(s, mapping)


def stage_rows(func, in_param: int, out_param: int, lag=None):
    """(func computing its output a row at a time into a ring of k + 1 rows, each output row
    copied back over the input k rows later, with the ring appended to its parameters, the
    ring's element count), or None. k is how far below an output row the input rows it reads
    reach (a 3x3 stride-1 conv padded by one: 1), so the copy-back of output row y - k lands on
    input row y - k once no later output row reads it: the scratch is k + 1 rows where staging
    by channel blocks needs whole planes. The kernel must be one accumulation nest whose
    outermost loop of more than one iteration runs over the output's rows, input and output of
    one shape; aot/tir/inplace.py's writes_over_in_order is the proof (the executor asks it).
    lag: copy back this many rows behind instead, unchecked (the tests build unsafe schedules)."""
    from ..tir.simplify import bounds, from_linear, linear_form, loop_ranges
    found = _staged_nest(func, in_param, out_param)
    if found is None:
        return None
    top, loops, red, acc, (init, reduce_, store), inb, outb, fixed, out_c = found
    if inb.shape != outb.shape:
        return None
    keep = [k for k, lp in enumerate(loops) if const_value(lp.extent) > 1]
    if len(keep) < 2:
        return None
    row, inner = loops[keep[0]], loops[keep[0] + 1:]
    dims = [d for d, e in enumerate(out_c) if e is row.var]
    if len(dims) != 1:
        return None
    d, R = dims[0], const_value(row.extent)
    ranges = {}
    for lp in loops + red:
        ranges = loop_ranges(ranges, lp)
    given, lag = lag, 0
    for s in walk_stmts(top):
        for held in own_exprs(s):
            for e in walk(held):
                if isinstance(e, Load) and e.buffer is inb:
                    c = coords(e.indices, inb.shape, fixed)
                    form = linear_form(c[d]) if c is not None else None
                    if form is None:
                        return None
                    own = [k for a, k in form[0].values() if isinstance(a, Var) and a is row.var]
                    rest = from_linear({key: t for key, t in form[0].items() if t[0] is not row.var}, form[1],
                                       c[d].dtype)
                    span = bounds(rest, ranges)
                    if own != [1] or span is None:
                        return None
                    lag = max(lag, -span[0])
    lag = lag if given is None else given
    width = math.prod(const_value(lp.extent) for lp in inner)
    n = (lag + 1) * width
    if lag + 1 >= R or n * MAX_SCRATCH_SHARE > outb.size:
        return None
    scratch = Buffer(f"{outb.name}_rows", outb.dtype, (n,))

    def slot(r, vars_):
        idx = (r % Const(lag + 1, "int32")) if lag else Const(0, "int32")
        for v, lp in zip(vars_, inner):
            idx = idx * const_value(lp.extent) + v
        return idx

    compute = Allocate(acc, Seq([init, reduce_, Store(scratch, slot(row.var, [lp.var for lp in inner]), store.value)]))
    for lp in reversed(inner):
        compute = For(lp.var, lp.min, lp.extent, compute, lp.kind)

    def copy(r, tag):
        fresh = [Var(lp.var.name + tag, lp.var.dtype) for lp in inner]
        at = {id(lp.var): v for lp, v in zip(inner, fresh)}
        at[id(row.var)] = r
        back = Store(outb, substitute(store.index, at), Load(scratch, slot(r, fresh)))
        for lp, v in zip(reversed(inner), reversed(fresh)):
            back = For(v, lp.min, lp.extent, back)
        return back
    k = Const(lag, "int32")
    parts = [For(row.var, k, Const(R - lag, "int32"), Seq([compute, copy(row.var - k, "_w")]))]
    if lag:
        first, last = Var(row.var.name + "_p", row.var.dtype), Var(row.var.name + "_e", row.var.dtype)
        parts.insert(0, For(first, Const(0, "int32"), k, _fresh(_subst_stmt(compute, {id(row.var): first}), {}, "_p")))
        parts.append(For(last, Const(R - lag, "int32"), k, copy(last, "_e")))
    body = Seq(parts)
    for lp in reversed(loops[:keep[0]]):
        body = For(lp.var, lp.min, lp.extent, body, lp.kind)
    return func.with_body(body, params=list(func.params) + [scratch]), n
