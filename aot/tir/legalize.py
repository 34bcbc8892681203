"""Loop-IR legalisation before rendering: floor division on provably non-negative operands
becomes C's truncating division (renderers keep a helper only for the general case)."""
from __future__ import annotations

from .expr import Bin, transform
from .simplify import bounds, loop_ranges
from .stmt import PrimFunc, StmtMutator


class _Legalize(StmtMutator):
    def __init__(self):
        self.ranges = {}

    def mutate_expr(self, e):
        def f(x):
            if isinstance(x, Bin) and x.op in ("floordiv", "floormod"):
                a, b = bounds(x.a, self.ranges), bounds(x.b, self.ranges)
                if a is not None and b is not None and a[0] >= 0 and b[0] > 0:
                    return Bin("/" if x.op == "floordiv" else "%", x.a, x.b)
            return None
        return transform(e, f)

    def visit_For(self, s):
        mn, ext = self.mutate_expr(s.min), self.mutate_expr(s.extent)
        outer, self.ranges = self.ranges, loop_ranges(self.ranges, s)
        try:
            return s.with_body(self.visit(s.body), mn, ext)
        finally:
            self.ranges = outer


def legalize(func: PrimFunc) -> PrimFunc:
    return func.with_body(_Legalize().visit(func.body))
