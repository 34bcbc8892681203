"""Loop-IR legalisation before rendering: floor division on provably non-negative operands
becomes C's truncating division (renderers keep a helper only for the general case)."""
from __future__ import annotations

from ..errors import InternalError
from .expr import Bin, transform
from .simplify import bounds
from .stmt import Allocate, For, IfThenElse, PrimFunc, Seq, Store


def _legal_expr(e, ranges):
    def f(x):
        if isinstance(x, Bin) and x.op in ("floordiv", "floormod"):
            a, b = bounds(x.a, ranges), bounds(x.b, ranges)
            if a is not None and b is not None and a[0] >= 0 and b[0] > 0:
                return Bin("/" if x.op == "floordiv" else "%", x.a, x.b)
        return None
    return transform(e, f)


def _legal_stmt(s, ranges):
    if isinstance(s, For):
        mn, ext = _legal_expr(s.min, ranges), _legal_expr(s.extent, ranges)
        lo, n = bounds(s.min, ranges), bounds(s.extent, ranges)
        inner = dict(ranges)
        if lo is not None and n is not None:
            inner[id(s.var)] = (lo[0], lo[1] + max(n[1], 1) - 1)
        return For(s.var, mn, ext, _legal_stmt(s.body, inner), s.kind)
    if isinstance(s, Store):
        return Store(s.buffer, _legal_expr(s.index, ranges), _legal_expr(s.value, ranges))
    if isinstance(s, Seq):
        return Seq([_legal_stmt(x, ranges) for x in s.stmts])
    if isinstance(s, Allocate):
        return Allocate(s.buffer, _legal_stmt(s.body, ranges))
    if isinstance(s, IfThenElse):
        return IfThenElse(_legal_expr(s.cond, ranges), _legal_stmt(s.then, ranges),
                          _legal_stmt(s.else_, ranges) if s.else_ is not None else None)
    raise InternalError(f"unknown statement {type(s).__name__}")


def legalize(func: PrimFunc) -> PrimFunc:
    return PrimFunc(func.name, func.params, _legal_stmt(func.body, {}), func.num_inputs, func.attrs)
