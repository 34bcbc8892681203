"""Float32 schedule rules for Cortex-M: float tiles (a micro-kernel choice) and fma (the last step).

The CPU rules keep a register tile of accumulators as a loop for the C compiler to vectorize.
With Helium (core.mve: cortex-m55/m85) gcc does; a core whose FPU is scalar only (cortex-m4/m7/m33)
keeps the loop, and its accumulators live on the stack: a load and a store per multiply-add.
There the lanes are unrolled into scalars, 16 of them (half the FPU's 32 registers: each
input value loaded is used 16 times; 8 leave ResNet-8 and AD 10-20% slower). Accumulations
become fused multiply-adds on cores whose FPU has them (core.fma; -std=c99 forbids the C compiler to
contract a * b + c itself), except in the loops left to Helium, which vectorizes a * b + c
better (AD: 4.6x fewer instructions than with fmaf). Output loops are partitioned at the
padding, so that the windows inside have constant bounds."""
from __future__ import annotations

from ..tir.expr import Const, Var, substitute, walk
from ..tir.schedule import contract_fma, partition, unroll
from ..tir.simplify import const_value, simplify, simplify_stmt
from ..tir.stmt import Allocate, For, Seq, StmtMutator, own_exprs, walk_stmts
from . import cpu
from .nests import accumulation, nests as _nests

SCALAR_TILE = 16


def _inner_nests(nest):
    """A staged kernel's accumulation nests (aot/schedules/inplace_conv.py: outer loops around
    [the nest computing a slice into scratch, the copy back])."""
    x = nest
    while isinstance(x, For):
        x = x.body
    return [s for s in x.stmts if accumulation(s)] if isinstance(x, Seq) else []


def _float_accumulation(func):
    return any((found := accumulation(s)) and found[2].dtype == "float32"
               for n in _nests(func.body) for s in [n] + _inner_nests(n))


class _Graft(StmtMutator):
    def __init__(self, old, new):
        self.old, self.new = old, new

    def visit_For(self, s):
        return self.new if s is self.old else super().visit_For(s)


def _staged_tiles(func, tile):
    """The register tiles of each staged slice (a pointwise conv staged per pixel: the pixel's
    output channels), the constants it reads packed for them; only where no statement outside
    the slice reads a constant (register_tiles sees the slice alone, so a packed layout would
    not reach the other reads)."""
    consts = {id(func.params[p]) for p in func.attrs.get("constants", ())}
    for nest in _nests(func.body):
        for sub in _inner_nests(nest):
            inside = {id(x) for x in walk_stmts(sub)}
            if any(id(getattr(e, "buffer", None)) in consts for x in walk_stmts(func.body) if id(x) not in inside
                   for top in own_exprs(x) for e in walk(top)):
                continue
            tiled = cpu.register_tiles(func.with_body(sub), max_tile=tile)
            if tiled.body is not sub:
                func = tiled.with_body(_Graft(sub, tiled.body).visit(func.body))
    return func


def _interior(loop, inner):
    """[lo, hi): the values of `loop`'s variable around its middle for which every bound of the
    inner loops that depends on it alone has the value it has at the middle (the windows that
    are not clamped); None when no inner bound depends on it alone."""
    mn, ext = const_value(loop.min), const_value(loop.extent)
    deps = [e for x in inner for e in (x.min, x.extent)
            if {id(v) for v in walk(e) if isinstance(v, Var)} == {id(loop.var)}]
    if mn is None or ext is None or not deps:
        return None

    def at(i):
        return tuple(const_value(simplify(substitute(e, {id(loop.var): Const(i, loop.var.dtype)}))) for e in deps)

    lo = hi = mn + ext // 2
    mid = at(lo)
    while lo > mn and at(lo - 1) == mid:
        lo -= 1
    while hi + 1 < mn + ext and at(hi + 1) == mid:
        hi += 1
    return lo, hi + 1


def _unclamped(nest):
    """nest with its output loops partitioned at the borders of the padding: the windows inside
    have constant bounds (short loops, unrolled by the CPU rules; a register tile's taps in
    straight-line code), not max/min clamps evaluated per tap. Up to 9 copies of a 2-d
    window's body, so only kernels without register tiles (a staged depthwise conv's plane)."""
    if any(isinstance(x, Allocate) and x.buffer.size > 1 for x in walk_stmts(nest)):
        # register tiles: a copy of the unrolled tile per border piece costs far more flash and
        # compile time than the instructions it saves
        return nest
    spans, seen = [], set()
    for loop in (x for x in walk_stmts(nest) if isinstance(x, For)):
        if id(loop.var) not in seen:
            seen.add(id(loop.var))
            span = _interior(loop, [x for x in walk_stmts(loop.body) if isinstance(x, For)])
            if span and span != (const_value(loop.min), const_value(loop.min) + const_value(loop.extent)):
                spans.append((loop.var, span))
    for var, span in spans:      # a window's bounds depend on its own output loop alone
        nest = partition(nest, var, *span)
    return simplify_stmt(nest) if spans else nest


def float_tiles(func, target):
    """Register tiles for a float kernel on Cortex-M."""
    core = target.core
    if core is None or not _float_accumulation(func):
        return None
    simd = core.mve          # Helium: gcc vectorizes the lane loops
    tile = cpu.MAX_TILE if simd else SCALAR_TILE
    func = _staged_tiles(cpu.register_tiles(func, max_tile=tile), tile)
    nests, vector = _nests(func.body), False
    for n, nest in enumerate(nests):
        lanes = {id(x.var): x.var for x in walk_stmts(nest) if isinstance(x, For) and x.kind == "vectorize"}
        vector |= simd and bool(lanes)
        for v in () if simd else lanes.values():
            nests[n] = simplify_stmt(unroll(nests[n], v, SCALAR_TILE))
        nests[n] = _unclamped(nests[n])
    how = f"float tiles ({'vector' if vector else 'scalar'} lanes)"
    return func.with_body(Seq(nests), attrs=dict(func.attrs, schedule=how))


def fuse_multiply_adds(func, target):
    """Every float accumulation of the kernel as fma (the short loops unrolled before included)."""
    if target.core is None or not target.core.fma:
        return None
    nests = _nests(func.body)
    done = [contract_fma(s, s.var) if isinstance(s, For) else s for s in nests]
    if all(a is b for a, b in zip(done, nests)):
        return None
    attrs = dict(func.attrs, schedule=func.attrs.get("schedule", "loop nest") + ", fma")
    return func.with_body(Seq(done), attrs=attrs)

