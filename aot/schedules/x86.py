"""Host CPU rules (a "c" target that is not a Cortex-M: x86-64 and other SIMD CPUs): a reduction
(conv, dense, pooling) computed in register blocks of output channels x pixels.

The output-channel loop is split into SIMD lanes that go innermost, each lane's constant
(weights) packed at compile time so the lanes read consecutive elements: the C compiler turns
the lane loop into vector multiply-adds. A window clipped by padding is partitioned along the
output loops into border pieces (clipped bounds kept: no im2col, no padded copy) and an
interior whose window is constant. In each piece another output loop (pixels where the window
does not depend on them, else more channels) is split into a short block around the lanes, so
one input element loaded (broadcast) feeds a whole block of channels and each weight vector
loaded feeds several pixels. Accumulators live in a small local array of block x lanes that the
compiler keeps in registers: up to MAX_ACC, twelve 256-bit vectors (eight leave the FMA units
waiting on their 4-cycle latency). Around a lane
loop that gcc keeps rolled (below) or does not unroll first (over 16 lanes), the block loop
stays a rolled C loop: gcc vectorizes the lane loop inside it, then unrolls it (one weight
vector load per block, no spills), and the code stays small enough to block the border pieces
too; around NCHW's 16 output-channel lanes the block is unrolled here (four of them). The reduce loop over input channels goes innermost (one block of multiply-adds per
iteration, the window's bounds outside), and the lane blocks outermost (a block's weights stay
in the L1 cache across the pixels).

The rule comes first in the host pipeline (pipelines.py). Depthwise NCHW, whose channel lanes would gather one
plane per channel, is partitioned first and its interior takes lanes along the output columns;
what they do not take falls to cpu.py's register tiles; its border pieces take rolled channel
lanes. Float kernels only (the host's speed target; int8 keeps cpu.py's code byte for byte),
and a kernel whose pieces and blocks would outgrow a budget of statements (each later pass and
the C compiler pay for them) is left to cpu.py whole. A heavy kernel (HEAVY_WORK multiply-adds
or more: ImageNet-sized convs, no MLPerf Tiny kernel) pays for more code: a budget of
HEAVY_GROWTH.

Lane loops of one vector (up to LANES channels-last) are 'simd' loops, kept rolled: gcc -O3 unrolls a loop of 16 or fewer
iterations completely before its loop vectorizer runs, and the straight-line vectorizer packs a
lane loop's unrolled copies badly (scalar multiply-adds, accumulators spilled). The activations
reach these rules channels-last on the host (aot/passes/layout.py), so the lanes are consecutive
in every tensor; the host family's staging_block (aot/targets/host.py) sizes the executor's
staged depthwise convs for that layout.
"""
from __future__ import annotations

from ..tir.expr import Bin, Const, Load, Var, is_float, substitute, walk
from ..tir.schedule import (ScheduleError, fission, hoist_allocate, pack_layout, reorder, split, unroll,
                            vectorize)
from ..tir.simplify import bounds, const_value, simplify, simplify_stmt
from ..tir.stmt import For, Seq, StmtMutator, own_exprs, stmt_children, walk_stmts
from ..tir.trace import mark, rollback
from .cpu import packable
from .nests import accumulation

LANES = 16          # lanes of one register block: two 256-bit float32 vectors (four 128-bit)
LONG_LANES = 32     # the lanes of a reduction of constant extent (see _lanes)
MAX_ACC = 96        # accumulators of a block: twelve 8-float vectors of the 16 registers
GROWTH = 9        # most statements of a kernel's scheduled code per statement of its nest
BLOCKED_GROWTH = 13  # the same with its border pieces blocked too
HEAVY_WORK = 1 << 23  # multiply-adds from which a kernel is heavy: ImageNet-sized convs, not the
                      # microcontroller-sized ones, whose code the larger budget would only grow
HEAVY_GROWTH = 40   # a heavy kernel's budget: its arithmetic pays for more code (a 3x3 conv over
                    # a small output is mostly border pieces, and blocked they beat cpu.py's tiles)
GATHER_LANES = 8    # channel lanes of a depthwise border piece
ROLLED_LANES = 8    # lane loops kept rolled: one 256-bit vector; up to LANES where they are the
                    # output's innermost axis (channels-last: consecutive in every tensor; NCHW's
                    # scattered 16 lanes run slower rolled than unrolled)
VECTOR = 8          # float lanes of one 256-bit vector
MAX_BLOCK = 6       # lane loops in a block
UNROLLED_ACC, UNROLLED_BLOCK = 64, 4   # the same for a block unrolled here (see host_blocks)
BORDER_SPLIT = 32   # fewer output channels: border rows split into corners and a blocked middle
                    # (faster for 16-channel 3x3 convs; for every kernel it costs more compile time)


def _divisor(n, most, least=2):
    """The largest divisor of n in [least, most], or None."""
    return next((t for t in range(min(most, n), least - 1, -1) if n % t == 0), None)


def _sub_nests(s):
    """The outermost accumulation nests inside s (a staged kernel holds one under its outer loops)."""
    if isinstance(s, For) and accumulation(s):
        return [s]
    return [x for c in stmt_children(s) for x in _sub_nests(c)]


class _Swap(StmtMutator):
    def __init__(self, old, new):
        self.old, self.new = old, new

    def visit_For(self, s):
        return self.new if s is self.old else super().visit_For(s)


def _interior(lp, red):
    """[lo, hi): the longest run of loop lp's values over which the reduce loops' bounds that
    depend on it stay the same (a padded window's unclipped middle), or None when that is all
    of lp or the bounds are not constants once lp's value is."""
    m, n = const_value(lp.min), const_value(lp.extent)
    exprs = [e for r in red for e in (r.min, r.extent) if any(v is lp.var for v in walk(e))]
    if m is None or n is None or not exprs:
        return None
    sigs = []
    for v in range(m, m + n):
        # interval arithmetic at a point: exact and much cheaper than substitute + simplify
        sig = tuple(bounds(e, {id(lp.var): (v, v)}) for e in exprs)
        if any(b is None or b[0] != b[1] for b in sig):
            return None
        sigs.append(sig)
    best, run, lo = (0, 0), 0, 0
    for i, sig in enumerate(sigs):
        run, lo = (run + 1, lo) if i and sig == sigs[i - 1] else (1, i)
        if run > best[1] - best[0]:
            best = (lo, lo + run)
    if best[1] - best[0] == n:
        return None
    return m + best[0], m + best[1]


def _restrict(loops, ranges):
    """The nest of `loops` with loop j over ranges[j] = (lo, hi) (the others as they are), its
    body simplified under those ranges (a window's clipped bounds become constants inside)."""
    env = {}
    for j, lp in enumerate(loops):
        m = const_value(lp.min)
        env[id(lp.var)] = ranges.get(j, (m, m + const_value(lp.extent)))
    body = simplify_stmt(loops[-1].body, {k: (a, b - 1) for k, (a, b) in env.items()})
    for lp in reversed(loops):
        a, b = env[id(lp.var)]
        body = lp.with_body(body, Const(a, lp.min.dtype), Const(b - a, lp.extent.dtype))
    return body


def _partition(loops, red, borders=False, ordered=False):
    """The nest split along its output loops into border pieces (clipped windows) and the
    interior (constant windows: no bound computations, pixels free to block); None when the
    windows are never clipped. The interior is split again along the next loop, and with
    `borders` the border pieces too (a border row's middle then blocks its pixels as well);
    `ordered`: pieces split along an inner loop stay inside the outer loops (_nested)."""
    if any(const_value(lp.min) is None or const_value(lp.extent) is None for lp in loops):
        return None
    for j, lp in enumerate(loops):
        inner = _interior(lp, red)
        if inner is None:
            continue
        m, n = const_value(lp.min), const_value(lp.extent)
        pieces = []
        for lo, hi in ((m, inner[0]), inner, (inner[1], m + n)):
            if hi <= lo:
                continue
            piece = _restrict(loops, {j: (lo, hi)})
            if (lo, hi) == inner or borders:
                found = accumulation(piece)
                more = found and _partition(found[0], found[1], borders, ordered)
                if more:
                    pieces.extend(more)
                    continue
            pieces.append(piece)
        return _nested(loops, j, pieces) if ordered else pieces
    return None


def _nested(loops, j, pieces):
    """Pieces that split loop j of the nest `loops` (each a whole nest) as one nest: the loops
    outside j once, the pieces inside them, so that the outputs are written in the nest's order
    (a kernel writing its output over its input in program order: func.attrs["in_order"], asked
    for by the executor's in-place proof, aot/tir/inplace.py writes_over_in_order)."""
    inner = []
    for p in pieces:
        for _ in range(j):
            p = p.body
        inner.append(p)
    body = Seq(inner)
    for lp in reversed(loops[:j]):
        body = lp.with_body(body)
    return [body]


def _strided(red, var, constants):
    """Whether the reduction reads a non-constant buffer with `var` in other than its innermost
    dimension (lanes would gather: depthwise NCHW reads a plane per channel)."""
    for st in walk_stmts(red[0]):
        for e in own_exprs(st):
            for x in walk(e):
                if not isinstance(x, Load) or id(x.buffer) in constants:
                    continue
                dims = [d for d, i in enumerate(x.indices) if any(v is var for v in walk(i))]
                last = max((d for d, n in enumerate(x.buffer.shape) if n != 1), default=0)
                if any(d != last for d in dims):
                    return True
    return False


def _lanes(loops, red, constants):
    """(lane loop position, lanes) for an accumulation's output loops, or None. Lanes go along
    the output channels: the loop that does not bound the reduction, the channel axis of an
    N C ... nest first (as cpu.py's tiles); never one that makes the reduction's loads gather.
    A reduction of constant extent (dense, 1x1 and unpadded windows) takes up to LONG_LANES:
    gcc unrolls lane loops of 16 or fewer completely and then vectorizes the reduce loop
    instead of the lanes, many times slower; one with clipped windows
    LANES, its border pieces keep their bound computations and the interior its constant
    window, the reduce loop there reading one input plane per channel."""
    bound = {id(v) for r in red for e in (r.min, r.extent) for v in walk(e) if isinstance(v, Var)}
    free = [k for k, lp in enumerate(loops) if id(lp.var) not in bound and (const_value(lp.extent) or 0) > 1
            and const_value(lp.min) is not None]
    first = [1] if 1 in free and len(loops) >= 3 else []
    k = next((k for k in first + free[::-1] if not _strided(red, loops[k].var, constants)), None)
    if k is None:
        return None
    clipped = any(const_value(e) is None for r in red for e in (r.min, r.extent))
    lanes = _group_lanes(red, constants, loops[k], LANES if clipped else LONG_LANES)
    return (k, lanes) if lanes else None


def _group_lanes(red, constants, lp, most):
    """The lanes for output loop lp: the largest divisor of its extent up to `most` (a whole
    number of 8-float vectors where one divides it) such that no input read by the reduction
    picks its element by a division of the lane index. A grouped conv's input channel is
    (oc // (M/g)) * (C/g) + rc: lanes across two groups read from both (ShuffleNet's 544
    channels in groups of 136 as lanes of 32: every lane a gathered load); within one group
    the division is the outer index's and the lanes broadcast one input."""
    n = const_value(lp.extent)
    loads = [x for st in walk_stmts(red[0]) for e in own_exprs(st) for x in walk(e)
             if isinstance(x, Load) and id(x.buffer) not in constants]
    found = [t for t in range(min(most, n), 1, -1) if n % t == 0 and _lane_affine(loads, lp, t)]
    vectors = [t for t in found if t % VECTOR == 0]
    return (vectors or found or [None])[0]


def _lane_affine(loads, lp, lanes):
    mo, mi = Var(lp.var.name + "_o", lp.var.dtype), Var(lp.var.name + "_i", lp.var.dtype)
    sub = {id(lp.var): lp.min + mo * lanes + mi}
    ranges = {id(mi): (0, lanes - 1), id(mo): (0, const_value(lp.extent) // lanes - 1)}
    for x in loads:
        for i in x.indices:
            if not any(v is lp.var for v in walk(i)):
                continue
            for y in walk(simplify(substitute(i, sub), ranges)):
                if isinstance(y, Bin) and y.op in ("floordiv", "floormod") and any(v is mi for v in walk(y)):
                    return False
    return True


def _gather_lanes(loops):
    """(channel loop position, lanes) of an N C H W nest's channel loop, or None."""
    if len(loops) < 3 or const_value(loops[1].min) is None:
        return None
    lanes = _divisor(const_value(loops[1].extent) or 0, GATHER_LANES)
    return (1, lanes) if lanes else None


def _block_plan(loops, red, mo, mi, lanes, kept=True):
    """(block loop position or None, block) for a piece whose lane loop is mi: `block`
    iterations of another output loop around the lanes (pixels where they are free, else more
    output channels), so that each input element loaded feeds block x lanes accumulators and
    each weight vector loaded feeds `block` pixels."""
    bound = {id(v) for r in red for e in (r.min, r.extent) for v in walk(e) if isinstance(v, Var)}
    most = _most(lanes, kept)
    for j in reversed(range(len(loops))):
        lp = loops[j]
        if lp.var is mo or lp.var is mi or id(lp.var) in bound or const_value(lp.min) is None:
            continue
        if (const_value(lp.extent) or 0) > 1:
            return j, min(const_value(lp.extent), most)
    j = next(j for j, lp in enumerate(loops) if lp.var is mo)
    ext = const_value(loops[j].extent) or 0
    return (j, min(ext, most)) if ext > 1 else (None, 1)


def _most(lanes, kept=True):
    """The block for `lanes`: the block loop kept rolled (twelve vectors), or unrolled here."""
    if not kept:
        return max(1, min(UNROLLED_ACC // lanes, UNROLLED_BLOCK))
    return max(1, min(MAX_ACC // lanes, MAX_BLOCK))


def _remainder(loops, plan):
    """Loop plan[0]'s range cut in two, a multiple of the block and the rest, when the block
    does not divide it (14 pixels: 12 in blocks of 4, then a block of 2); else None."""
    b, block = plan
    if b is None:
        return None
    m, n = const_value(loops[b].min), const_value(loops[b].extent)
    if n % block == 0:
        return None
    cut = m + n // block * block
    return [(m, cut), (cut, m + n)]


def _block(nest, loops, red, mi, plan, mo=None):
    """The piece as register blocks: (stmt, block var or None); mi innermost, a block of
    `block` iterations of loop plan[0] around it, both inside the reduction; mo (the lanes'
    outer loop) outermost."""
    b, block = plan
    order = [lp.var for lp in loops if lp.var is not mi]
    if mo is not None and any(v is mo for v in order):
        order = [mo] + [v for v in order if v is not mo]
    bi, s = None, nest
    if b is not None:
        target = loops[b].var
        s, bo, bi = split(nest, target, block)
        order = [bo if v is target else v for v in order]
    inner = ([bi] if bi is not None else []) + [mi]
    s = reorder(s, order + inner)
    for v in reversed(inner):
        s = fission(hoist_allocate(s, v), v)
    if red:
        s = reorder(s, [r.var for r in _reduce_order(red)] + inner)
    return s, bi


def _reduce_order(red):
    """The reduce loops with those indexing an input's innermost axis innermost (a channels-last
    window's input channels): the loop body is then one block of multiply-adds over
    consecutive inputs, the window loops' bounds and addresses outside it."""
    body = red[-1].body

    def innermost(r):
        return any(isinstance(x, Load) and len(x.indices) > 1 and any(v is r.var for v in walk(x.indices[-1]))
                   for st in walk_stmts(body) for e in own_exprs(st) for x in walk(e))
    return sorted(red, key=innermost)


def _pack(func, lane_index, lanes, nest):
    """Constants the lanes read stored so that the lanes are consecutive (cpu.py's rule, judged
    on the nest just split: a staged kernel's other nests, a first row and the rows after it,
    read them with lane variables of their own, which the packed layout serves as well)."""
    for p in func.attrs.get("constants", ()):
        shape = func.params[p].shape
        d = packable(func.with_body(nest), func.params[p], lane_index)
        if d is None or shape[d] % lanes or p in func.attrs.get("layouts", {}):
            continue
        if all(x == 1 for x in shape[d + 1:]):
            continue
        try:
            func = pack_layout(func, p, d, lanes)
        except ScheduleError:
            continue
    return func


def host_blocks(func, target):
    """Each accumulation: the lane split of its output channels and the constants packed for
    it, then its clipped windows partitioned, then each piece blocked around the lanes."""
    # the pieces and unrolled blocks multiply a kernel's code (and the compile time of every
    # later pass): past a budget (small outputs under wide windows: many pieces, few pixels
    # each, then cpu.py's tiles unrolled in each) the kernel keeps cpu.py's tiles alone
    # border pieces blocked as the interior when the budget allows (a small output under a
    # wide window is mostly border: KWS's first conv), else left as plain lane loops
    # (and border rows split for few channels first, see BORDER_SPLIT)
    size, heavy = _size(func.body), _work(func.body) >= HEAVY_WORK
    for blocked, borders in ((True, True), (True, False), (False, False)):
        at = mark()
        out = _host_blocks(func, (HEAVY_GROWTH if heavy else BLOCKED_GROWTH if blocked else GROWTH) * size,
                           blocked, borders)
        if out is not None:
            return out
        rollback(at)        # over budget: this try's primitives are not the kernel's
    return None


def _size(s):
    return sum(1 for _ in walk_stmts(s))


def _work(body):
    """Multiply-adds of a kernel as lowered: per accumulation, its output points x its reduction's
    points (a clipped window counted whole)."""
    total = 0
    for nest in _sub_nests(body):
        loops, red, _ = accumulation(nest)
        env, n = {}, 1
        for lp in loops:
            m, ext = const_value(lp.min), const_value(lp.extent)
            if m is None or ext is None:
                return 0
            env[id(lp.var)] = (m, m + ext - 1)
            n *= ext
        for r in red:
            b = bounds(r.extent, env)
            if b is None:
                return 0
            env[id(r.var)] = (0, max(b[1] - 1, 0))
            n *= max(b[1], 0)
        total += n
    return total


def _host_blocks(func, most, blocked, borders=True):
    """host_blocks' rewrite, or None as soon as the kernel outgrows its budget (`most`
    statements)."""
    ordered = bool(func.attrs.get("in_order"))
    lane_vars = {}          # id(lane var) -> (outer var, lane var, lanes) of the nests split so far
    parted = set()          # id(first reduce var) of the nests partitioned before any lane split
    unblocked = set()       # id(lane var) of the lanes never blocked (gathering channel lanes)
    last = set()            # id(lane var) of the lanes along the output's innermost axis (channels-last)
    n = 0
    while True:
        consts = {id(func.params[p]) for p in func.attrs.get("constants", ())}
        subs = _sub_nests(func.body)     # afresh: packing a constant rewrites every nest reading it
        if _size(func.body) > most:
            return None
        if n >= len(subs):
            return func
        nest = subs[n]
        loops, red, acc = accumulation(nest)
        if not is_float(acc.dtype):
            n += 1          # integer kernels keep cpu.py's rules (the host's speed target is float)
            continue
        split_at = next((lane_vars[id(lp.var)] for lp in loops if id(lp.var) in lane_vars), None)
        if split_at is None:
            plan = _lanes(loops, red, consts) if red else None
            if plan is None:
                # no lanes over the whole nest (depthwise NCHW: channels gather, pixels bound
                # the window): the interior's pixels may take them
                pieces = None
                if red and id(red[0].var) not in parted:
                    parted.add(id(red[0].var))
                    pieces = _partition(loops, red, ordered=ordered)
                if pieces:
                    func = func.with_body(_Swap(nest, Seq(pieces)).visit(func.body))
                    continue
                gather = _gather_lanes(loops) if red and id(red[0].var) in parted else None
                if gather is None:
                    n += 1      # left to cpu.py
                    continue
                # a border piece of a partitioned nest: one rolled loop of channel lanes (they
                # gather, but cpu.py's tiles unrolled in each of the pieces are far more code)
                s, mo, mi = split(nest, loops[gather[0]].var, gather[1])
                lane_vars[id(mi)] = (mo, mi, gather[1])
                unblocked.add(id(mi))
                func = func.with_body(_Swap(nest, s).visit(func.body))
                continue
            k, lanes = plan
            s, mo, mi = split(nest, loops[k].var, lanes)
            lane_vars[id(mi)] = (mo, mi, lanes)
            if k == len(loops) - 1:
                last.add(id(mi))
            found = accumulation(s)
            # few channels (fewer than BORDER_SPLIT): a border row has no channel blocks to fill
            # its registers, so it is split as well, its middle blocked by pixels (where blocks
            # stay rolled loops: unrolled, its pieces outgrow the budget)
            kept = lanes <= ROLLED_LANES or lanes > LANES or k == len(loops) - 1
            pieces = _partition(found[0], found[1], borders and kept and const_value(loops[k].extent) < BORDER_SPLIT,
                                ordered)
            s = Seq(pieces) if pieces else s
            func = func.with_body(_Swap(nest, s).visit(func.body))
            func = _pack(func, simplify(loops[k].min + mo * lanes + mi), lanes, s)
            continue        # the same position is now the first piece
        mo, mi, lanes = split_at
        # unblocked, a border piece (its window clipped) keeps the plain lane loop: blocked, its
        # unrolled copies multiply the code for the few pixels it holds
        clipped = any(const_value(e) is None for r in red for e in (r.min, r.extent))
        rolled = lanes <= ROLLED_LANES or (lanes <= LANES and id(mi) in last)
        # the block loop stays a C loop around a lane loop that gcc does not unroll before
        # vectorising it (a rolled one, or one of more than 16 lanes); around one it does (NCHW
        # output channels), gcc's straight-line vectorizer takes the unrolled block better
        # (light squeezenet's 1x1 convs: 0.13 ms unrolled here, 4.9 ms rolled)
        kept = rolled or lanes > LANES
        plan = (None, 1) if (clipped and not blocked) or id(mi) in unblocked else \
            _block_plan(loops, red, mo, mi, lanes, kept)
        rest = _remainder(loops, plan)
        if rest is not None:
            pieces = [_restrict(loops, {plan[0]: r}) for r in rest]
            pieces = _nested(loops, plan[0], pieces) if ordered else pieces
            func = func.with_body(_Swap(nest, Seq(pieces)).visit(func.body))
            continue
        at = mark()
        try:
            s, bi = _block(nest, loops, red, mi, plan, mo)
        except ScheduleError:
            rollback(at)
            n += 1
            continue
        body = vectorize(_Swap(nest, s).visit(func.body), mi, rolled=rolled)
        func = func.with_body(unroll(body, bi, UNROLLED_ACC) if bi is not None and not kept else body)

