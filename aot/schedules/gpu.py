"""Schedule rules for GPUs (CUDA, OpenCL), by the shape of the lowered nest:

- few long reductions (softmax rows, a scalar, a dense layer with a long inner dimension):
  one block per row, its reductions shared by the threads (gpu_reduce.py);
- an accumulation (conv, dense, matmul, pooling and reductions with a constant outer reduce
  loop): a 2-D tile of outputs per block, one per thread, the reduction in chunks whose
  inputs the block first stages in shared memory (cache_read), between barriers;
- everything else (elementwise, injective, softmax rows, depthwise convs whose reduce loops
  are clipped by padding): the outer loops whose iterations write disjoint elements fuse
  into one loop, split into blocks of threads (blockIdx.x x threadIdx.x). The "parallel"
  primitive's check decides which loops may be bound; the rest stays serial in the thread.
"""
from __future__ import annotations

from ..tir.flatten import flatten
from ..tir.launch import launch_shape
from ..tir.expr import Load, all_of, walk
from ..tir.schedule import ScheduleError, bind, cache_read, fuse, parallel, reorder, split
from ..tir.simplify import const_value, simplify_stmt
from ..tir.stmt import Allocate, For, IfThenElse, Seq, Store, own_exprs, walk_stmts
from ..tir.trace import mark, rollback, untraced
from .gpu_reduce import reduce_rows
from .nests import accumulation

THREADS_PER_BLOCK = 256     # a multiple of every vendor's warp/wavefront size; well under every limit
MAX_BLOCKS = 65535          # gridDim.x is larger on CUDA, but this also fits OpenCL's minimum guarantees


TILE = 16                   # outputs per block along each of the two tiled axes
CHUNKS = (16, 8, 4, 2, 1)   # reduce-loop chunk sizes to try, largest first, until the tiles fit in shared memory


def _pow2_at_least(n, cap):
    p = 1
    while p < n and p < cap:
        p *= 2
    return p


def tiled_axes(loops, red):
    """(y, x): the output loops to tile over the block's threads. x is the innermost loop with
    more than one iteration; y the channel loop of an NC... layout (output channels share the
    input tile, positions share the weight tile), else the loop before x; None when none."""
    cand = [k for k, lp in enumerate(loops) if const_value(lp.extent) > 1]
    if not cand:
        return None, None
    x = cand[-1]
    y = 1 if len(loops) >= 3 and 1 in cand and x != 1 else next((k for k in reversed(cand) if k < x), None)
    return y, x


def _guard_stores(nest):
    """Move the split tails' guards from around a thread's accumulation onto its final store.
    A barrier inside the reduction must be reached by every thread of the block, including
    those past the edge; their reduction reads only the staged tiles (in range for every
    thread of the block by construction) and their result is dropped."""
    def go(x):
        if isinstance(x, For):
            return x.with_body(go(x.body))
        conds = []
        while isinstance(x, IfThenElse) and x.else_ is None:
            conds.append(x.cond)
            x = x.then
        if not conds:
            return x
        if not isinstance(x, Allocate) or not isinstance(x.body, Seq):
            raise ScheduleError("a split tail guards more than one accumulation")
        *work, store = x.body.stmts
        for part in work:       # the tile fills read global memory, each read guarded by the buffer's bounds
            for st in walk_stmts(part):
                if isinstance(st, Store) and st.buffer.scope == "local" and \
                        any(isinstance(ld, Load) and ld.buffer.scope == "global" for ld in walk(st.value)):
                    raise ScheduleError("the reduction reads global memory outside the staged tiles")
        return Allocate(x.buffer, Seq(work + [IfThenElse(all_of(conds), store)]))
    return go(nest)


def single(body):
    return body.stmts[0] if isinstance(body, Seq) and len(body.stmts) == 1 else body


def launched(func, body):
    """func with `body`, flat, its launch shape recorded; None when the binding cannot launch."""
    out = flatten(func.with_body(body))
    try:
        return out.with_body(out.body, attrs=dict(out.attrs, launch=launch_shape(out)))
    except ScheduleError:
        return None


def reduce_across_threads(func, target):
    body = single(func.body)
    at = mark()
    s = reduce_rows(body, _parallel_prefix(body))
    out = s is not None and launched(func, s)
    if not out:
        rollback(at)
    return out or None


def tileable(func):
    """(nest, output loops, reduce loops, accumulator, y, x: tiled_axes) of a kernel that is one
    accumulation nest with constant output loops and a constant outer reduce loop; else None."""
    body = single(func.body)
    found = accumulation(body)
    if found is None:
        return None
    loops, red, acc = found
    if not red or const_value(red[0].min) != 0 or const_value(red[0].extent) is None or \
            any(const_value(lp.min) != 0 or const_value(lp.extent) is None for lp in loops):
        return None
    y, x = tiled_axes(loops, red)
    return None if x is None else (body, loops, red, acc, y, x)


def tile_accumulation(func, target):
    """The tiled shared-memory schedule, for a kernel that is one accumulation nest whose outer
    reduce loop has constant bounds; other kernels are left to bind_threads."""
    found = tileable(func)
    if found is None:
        return None
    body, loops, red, _, y, x = found
    tx = _pow2_at_least(const_value(loops[x].extent), TILE if y is not None else 128)
    ty = _pow2_at_least(const_value(loops[y].extent), TILE) if y is not None else 1
    others = [lp.var for k, lp in enumerate(loops) if k not in (x, y)]
    tiled = ([loops[y].var] if y is not None else []) + [loops[x].var]
    inputs = {id(b) for b in func.inputs}
    for chunk in CHUNKS:
        at = mark()         # a chunk size that does not fit leaves no primitives in the trace
        try:
            s = reorder(body, others + tiled) if len(loops) > 1 else body
            bound = []
            if y is not None:
                s, y_o, y_t = split(s, loops[y].var, ty)
            s, x_o, x_t = split(s, loops[x].var, tx)
            if y is not None:
                s = reorder(s, others + [y_o, x_o, y_t, x_t])
                bound += [(y_o, "blockIdx.y"), (y_t, "threadIdx.y")]
            bound += [(x_o, "blockIdx.x"), (x_t, "threadIdx.x")]
            z = others[0] if others else None
            for v in others[1:]:
                s, z = fuse(s, z, v)
            if z is not None:
                bound.append((z, "blockIdx.z"))
            for v, tag in bound:
                s = bind(s, v, tag)
            s, k_o, _ = split(s, red[0].var, min(chunk, const_value(red[0].extent)))
            k_loop = next(lp for lp in walk_stmts(s) if isinstance(lp, For) and lp.var is k_o)
            read = []
            for st in walk_stmts(k_loop.body):
                for e in own_exprs(st):
                    read += [ld.buffer for ld in walk(e) if isinstance(ld, Load) and id(ld.buffer) in inputs
                             and ld.buffer not in read]
            for b in read:
                s, _ = cache_read(s, b, k_o, "shared", shared_max=target.family.shared_max)
            s = simplify_stmt(_guard_stores(s))
        except ScheduleError:
            rollback(at)
            continue
        out = launched(func, s)
        if out is not None:
            return out
        rollback(at)
    return None


def _parallel_prefix(body):
    """The outermost loops, from the top, that may run as independent threads."""
    loops, x = [], body
    while isinstance(x, For) and const_value(x.min) == 0 and const_value(x.extent) is not None \
            and x.kind == "serial":
        try:
            with untraced():        # a check: the loop stays serial until bound
                parallel(x, x.var)
        except ScheduleError:
            break
        loops.append(x)
        x = x.body
    return loops


def bind_threads(func, target):
    func = flatten(func)
    loops = _parallel_prefix(func.body)
    if not loops:
        return func.with_body(func.body, attrs=dict(func.attrs, launch=((1, 1, 1), (1, 1, 1))))
    body, var = func.body, loops[0].var
    for lp in loops[1:]:
        body, var = fuse(body, var, lp.var)
    total = 1
    for lp in loops:
        total *= const_value(lp.extent)
    threads = min(THREADS_PER_BLOCK, total)
    blocks = -(-total // threads)
    if blocks > MAX_BLOCKS:
        raise ScheduleError(f"{func.name}: {total} threads need {blocks} blocks of {threads}, more than the "
                            f"{MAX_BLOCKS} this schedule launches")
    body, outer, inner = split(body, var, threads)
    body = simplify_stmt(bind(bind(body, outer, "blockIdx.x"), inner, "threadIdx.x"))
    func = func.with_body(body)
    return func.with_body(body, attrs=dict(func.attrs, launch=launch_shape(func)))
