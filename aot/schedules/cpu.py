"""Schedule rules for CPUs (host and Cortex-M): register tiles for reductions, constants
packed for them, short loops unrolled."""
from __future__ import annotations

from ..tir.expr import Var, walk
from ..tir.flatten import flatten
from ..tir.schedule import (ScheduleError, fission, hoist_allocate, pack_layout, reorder, split, unroll,
                            vectorize)
from ..tir.simplify import const_value, simplify, simplify_stmt
from ..tir.stmt import For, Seq, own_exprs, walk_stmts
from .nests import accumulation as _accumulation, nests as _nests

MAX_TILE = 8          # accumulators kept in registers per output tile


def _tile_axis(loops, red, max_tile=MAX_TILE):
    """(position, tile): the output loop to keep `tile` accumulators along. It must not bound
    the reduction (conv: output channels; dense: columns); the channel axis of NC... layouts
    first, then the innermost such loop; the largest tile up to max_tile dividing its extent."""
    bound = {id(v) for r in red for e in (r.min, r.extent) for v in walk(e) if isinstance(v, Var)}
    cands = [k for k, lp in enumerate(loops) if id(lp.var) not in bound and (const_value(lp.extent) or 0) > 1
             and const_value(lp.min) == 0]
    if not cands:
        return None
    k = 1 if 1 in cands and len(loops) >= 3 else cands[-1]
    ext = const_value(loops[k].extent)
    for tile in range(max_tile, 1, -1):
        if ext % tile == 0:
            return k, tile
    return None


def packable(func, buf, lane_index):
    """The dimension of constant `buf` indexed by the tiled axis (lane_index), when every read
    uses it as the whole index of one dimension before the innermost and nowhere else."""
    key, dims = lane_index.key(), set()
    lane_vars = {id(v) for v in walk(lane_index) if isinstance(v, Var)}
    for s in walk_stmts(func.body):
        for e in own_exprs(s):
            for x in walk(e):
                if getattr(x, "buffer", None) is not buf:
                    continue
                if len(x.indices) != len(buf.shape):
                    return None
                hit = [d for d, i in enumerate(x.indices) if simplify(i).key() == key]
                if len(hit) != 1 or any(id(v) in lane_vars for d, i in enumerate(x.indices)
                                        if d != hit[0] for v in walk(i)):
                    return None
                dims.add(hit[0])
    if len(dims) != 1:
        return None
    d = dims.pop()
    return d if d != len(buf.shape) - 1 else None


def register_tiles(func, target=None, max_tile=MAX_TILE):
    """Keep `tile` accumulators of a reduction along one output axis (split it, move the lanes
    inside the reduction), store the constants the lanes read so they are consecutive, and
    leave the lane loops for the C compiler to vectorize when they read consecutive weights
    over one reduce loop (pointwise conv, dense); else unroll them into scalars that stay in
    registers."""
    for n in range(len(_nests(func.body))):
        nests = _nests(func.body)      # afresh: packing a constant rewrites every nest reading it
        nest = nests[n]
        found = _accumulation(nest)
        plan = found and _tile_axis(found[0], found[1], max_tile)
        if not plan:
            continue
        loops, red, _ = found
        k, tile = plan
        s, outer, lane = split(nest, loops[k].var, tile)
        if k + 1 < len(loops):
            s = reorder(s, [lp.var for lp in loops[k + 1:]] + [lane])
        s = fission(hoist_allocate(s, lane), lane)
        if red:
            s = reorder(s, [r.var for r in red] + [lane])
        nests[n] = s
        func = func.with_body(Seq(nests))
        packed = False
        for p in func.attrs.get("constants", ()):
            shape = func.params[p].shape
            d = packable(func, func.params[p], simplify(outer * tile + lane))
            if d is None or shape[d] % tile or p in func.attrs.get("layouts", {}):
                continue
            if all(x == 1 for x in shape[d + 1:]):
                packed = True       # the lanes read consecutive elements as it is stored
                continue
            try:
                func = pack_layout(func, p, d, tile)
                packed = True
            except ScheduleError:
                continue
        nests = _nests(func.body)
        contiguous = packed or k == len(loops) - 1
        one_loop = all(const_value(r.extent) == 1 for r in red[1:])
        nests[n] = vectorize(nests[n], lane) if contiguous and one_loop else unroll(nests[n], lane, max_tile)
        func = func.with_body(Seq(nests))
    return func


def flatten_indices(func, target):
    """Flat indices, simplified (extent-1 loops gone) for the loop rules after it."""
    return flatten(func)


def unroll_short_loops(func, target):
    """Unroll constant innermost loops of at most 4 iterations (3x3 taps without padding,
    small channel counts)."""
    def short(lp):
        return (lp.kind == "serial" and const_value(lp.min) is not None and (const_value(lp.extent) or 5) <= 4
                and not any(isinstance(x, For) for x in walk_stmts(lp.body)))
    loops = [x for x in walk_stmts(func.body) if isinstance(x, For)]
    targets = []
    for lp in loops:
        if short(lp) and all(v is not lp.var for v in targets) and all(short(x) for x in loops if x.var is lp.var):
            targets.append(lp.var)
    if not targets:
        return None
    body = func.body
    for v in targets:
        body = unroll(body, v)
    return func.with_body(simplify_stmt(body) or Seq([]))
