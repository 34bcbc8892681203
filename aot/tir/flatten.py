"""Flatten multi-dimensional buffer reads to row-major element indices: the last step of
scheduling, after which only flat accesses reach the verifier and the renderers."""
from __future__ import annotations

from .expr import Const, Load, transform
from .simplify import simplify_stmt
from .stmt import PrimFunc, Seq, StmtMutator


def flat_index(indices, shape):
    flat = Const(0, "int32")
    for i, n in zip(indices, shape):
        flat = flat * n + i
    return flat


def _flat_load(x):
    if isinstance(x, Load) and len(x.indices) != 1:
        return Load(x.buffer, flat_index(x.indices, x.buffer.shape))
    return None


class _Flatten(StmtMutator):
    def __init__(self):
        self.memo = {}          # the unrolled bodies share most sub-expressions: each flattened once

    def mutate_expr(self, e):
        return transform(e, _flat_load, self.memo)


def flatten(func: PrimFunc) -> PrimFunc:
    """func with flat indices everywhere, simplified. After this no buffer's layout can
    change; loop transformations still can."""
    return func.with_body(simplify_stmt(_Flatten().visit(func.body)) or Seq([]), attrs=dict(func.attrs, flat=True))
