"""Float32 schedule rules for Cortex-M ("arm_cpu" key), run before arm.py's rules.

The CPU rules keep a register tile of accumulators as a loop for the C compiler to vectorize.
With Helium (cortex-m55/m85) gcc does; a core whose FPU is scalar only (cortex-m4/m7/m33)
keeps the loop, and its accumulators live on the stack: a load and a store per multiply-add.
There the lanes are unrolled into scalars, 16 of them (half the FPU's 32 registers: each
input value loaded is used 16 times; 8 leave ResNet-8 and AD 10-20% slower). Accumulations
become fused multiply-adds on cores whose FPU has them (-std=c99 forbids the C compiler to
contract a * b + c itself), except in the loops left to Helium, which vectorizes a * b + c
better (AD: 4.6x fewer instructions than with fmaf)."""
from __future__ import annotations

from ..tir.schedule import contract_fma, unroll
from ..tir.simplify import simplify_stmt
from ..tir.stmt import For, Seq, walk_stmts
from . import cpu
from .nests import accumulation, nests as _nests
from .registry import register

FLOAT_SIMD = ("cortex-m55", "cortex-m85")          # Helium: gcc vectorizes the lane loops
FMA = ("cortex-m4", "cortex-m7", "cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85")  # FPv4, FPv5, M-profile FPU
SCALAR_TILE = 16


def _float_accumulation(func):
    return any((found := accumulation(n)) and found[2].dtype == "float32" for n in _nests(func.body))


@register("arm_cpu")
def float_tiles(func, target):
    """Register tiles for a float kernel on Cortex-M; func.attrs["schedule"] tells arm.py's
    rules that the tiles are done."""
    mcpu = target.mcpu or ""
    if not mcpu.startswith("cortex-m") or "schedule" in func.attrs or not _float_accumulation(func):
        return func
    simd = mcpu in FLOAT_SIMD
    func = cpu.register_tiles(func, cpu.MAX_TILE if simd else SCALAR_TILE)
    nests, vector = _nests(func.body), False
    for n, nest in enumerate(nests):
        lanes = {id(x.var): x.var for x in walk_stmts(nest) if isinstance(x, For) and x.kind == "vectorize"}
        vector |= simd and bool(lanes)
        for v in () if simd else lanes.values():
            nests[n] = simplify_stmt(unroll(nests[n], v, SCALAR_TILE))
    how = f"float tiles ({'vector' if vector else 'scalar'} lanes)"
    return func.with_body(Seq(nests), attrs=dict(func.attrs, schedule=how))


def fuse_multiply_adds(func, target):
    """Every float accumulation of the kernel as fma (registered after arm.py's rules: the
    short loops they unroll included)."""
    if (target.mcpu or "") not in FMA:
        return func
    nests = _nests(func.body)
    done = [contract_fma(s, s.var) if isinstance(s, For) else s for s in nests]
    if all(a is b for a, b in zip(done, nests)):
        return func
    attrs = dict(func.attrs, schedule=func.attrs.get("schedule", "loop nest") + ", fma")
    return func.with_body(Seq(done), attrs=attrs)


float_tiles.wants_target = fuse_multiply_adds.wants_target = True
