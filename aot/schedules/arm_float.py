"""Float32 schedule rules for Cortex-M ("arm_cpu" key), after arm.py's rules.

The CPU rules keep a register tile of accumulators as a loop for the C compiler to vectorize.
With Helium (cortex-m55/m85) gcc does; a core whose FPU is scalar only (cortex-m4/m7/m33)
keeps the loop, and its accumulators live on the stack: a load and a store per multiply-add.
There the lanes are unrolled into scalars. Accumulations become fused multiply-adds on cores
whose FPU has them (-std=c99 forbids the C compiler to contract a * b + c itself)."""
from __future__ import annotations

from ..tir.expr import is_float
from ..tir.schedule import contract_fma, unroll
from ..tir.simplify import simplify_stmt
from ..tir.stmt import For, Seq, walk_stmts
from .cpu import MAX_TILE
from .nests import nests as _nests
from .registry import register

FLOAT_SIMD = ("cortex-m55", "cortex-m85")                  # Helium: gcc vectorizes the lane loops
FMA = ("cortex-m4", "cortex-m7", "cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85")   # FPv4/FPv5/M-profile FPU


def _floats(func):
    return any(is_float(p.dtype) for p in func.params)


@register("arm_cpu")
def float_tiles(func, target):
    mcpu = target.mcpu or ""
    if not mcpu.startswith("cortex-m") or not _floats(func):
        return func
    nests, changed = _nests(func.body), False
    for n, nest in enumerate(nests):
        s = nest
        if mcpu not in FLOAT_SIMD:
            lanes = {id(x.var): x.var for x in walk_stmts(s) if isinstance(x, For) and x.kind == "vectorize"
                     and x.body is not None}
            for v in lanes.values():
                s = unroll(s, v, MAX_TILE)
        if mcpu in FMA and isinstance(s, For):
            s = contract_fma(s, s.var)
        if s is not nest:
            nests[n], changed = simplify_stmt(s), True
    if not changed:
        return func
    return func.with_body(Seq(nests), attrs=dict(func.attrs, schedule=func.attrs.get("schedule", "float tiles")))


float_tiles.wants_target = True
