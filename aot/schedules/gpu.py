"""Schedule rules for GPUs (CUDA, OpenCL): the outer loops whose iterations write disjoint
elements become one fused loop, split into blocks of threads (blockIdx.x x threadIdx.x).

Every kernel kind gets this rule today: elementwise and injective kernels get a thread per
element. Conv, dense and pooling get a thread per output element, with the reduction kept
serial in the thread's own accumulator. Softmax-like kernels, whose top-level statement is
not one loop, run as a single thread. The "parallel" primitive's check decides which loops
may be bound: a loop whose iterations could write one element stays serial inside the thread.
"""
from __future__ import annotations

from ..tir.flatten import flatten
from ..tir.launch import launch_shape
from ..tir.schedule import ScheduleError, bind, fuse, parallel, split
from ..tir.simplify import const_value, simplify_stmt
from ..tir.stmt import For
from .registry import register

THREADS_PER_BLOCK = 256     # a multiple of every vendor's warp/wavefront size; well under every limit
MAX_BLOCKS = 65535          # gridDim.x is larger on CUDA, but this also fits OpenCL's minimum guarantees


def _parallel_prefix(body):
    """The outermost loops, from the top, that may run as independent threads."""
    loops, x = [], body
    while isinstance(x, For) and const_value(x.min) == 0 and const_value(x.extent) is not None \
            and x.kind == "serial":
        try:
            parallel(x, x.var)
        except ScheduleError:
            break
        loops.append(x)
        x = x.body
    return loops


@register("gpu")
def bind_threads(func):
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
