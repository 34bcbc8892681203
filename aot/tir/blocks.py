"""TensorIR blocks (aot/tir/stmt.py: Block) made transparent: erase_blocks turns each block into
the statements it stands for, so that every pass after it sees the plain loop IR.

A block's iterators become the expressions they are bound to; its init runs where every
reduction iterator is at its first value (before the update, in the same iteration); its
predicate guards it; an allocation of "global" scope (a root block's T.alloc_buffer) becomes the
function's own array.
"""
from __future__ import annotations

from .expr import Bin, Load, and_, substituter, transform
from .stmt import Allocate, Block, Buffer, IfThenElse, PrimFunc, Seq, StmtMutator, Store, map_exprs, walk_stmts


class _Erase(StmtMutator):
    def __init__(self):
        self.renamed = {}          # id(global-scope allocated buffer) -> its local twin

    def visit_Block(self, s):
        body = self.visit(s.body)
        init = self.visit(s.init) if s.init is not None else None
        sub = substituter({id(iv.var): v for iv, v in zip(s.iter_vars, s.values)})
        if init is not None:
            first = None
            for iv, v in zip(s.iter_vars, s.values):
                if iv.kind == "R":
                    c = Bin("==", v, iv.dom_min)
                    first = c if first is None else and_(first, c)
            body = Seq([IfThenElse(first, init), body]) if first is not None else Seq([init, body])
        out = map_exprs(body, sub)
        if s.predicate is not None:
            out = IfThenElse(sub(s.predicate), out)
        return out

    def visit_Allocate(self, s):
        if s.buffer.scope != "global":
            return super().visit_Allocate(s)
        b = s.buffer
        local = Buffer(b.name, b.dtype, b.shape, "local")
        self.renamed[id(b)] = local
        body = self.visit(s.body)
        return Allocate(local, _Rebuffer(self.renamed).visit(body))


class _Rebuffer(StmtMutator):
    def __init__(self, renamed):
        self.renamed = renamed

    def mutate_expr(self, e):
        return transform(e, lambda x: Load(self.renamed[id(x.buffer)], x.indices if len(x.indices) > 1
                                           else x.indices[0])
                         if isinstance(x, Load) and id(x.buffer) in self.renamed else None)

    def visit_Store(self, s):
        s = super().visit_Store(s)
        b = self.renamed.get(id(s.buffer))
        return Store(b, s.index, s.value) if b is not None else s

    def visit_Allocate(self, s):
        body = self.visit(s.body)
        b = self.renamed.get(id(s.buffer), s.buffer)
        return s if body is s.body and b is s.buffer else Allocate(b, body)


def erase_blocks(s):
    return _Erase().visit(s)


def has_blocks(s) -> bool:
    return any(isinstance(x, Block) for x in walk_stmts(s))


def without_blocks(func: PrimFunc) -> PrimFunc:
    """func with its blocks erased (func itself when it has none)."""
    if not has_blocks(func.body):
        return func
    attrs = {k: v for k, v in func.attrs.items() if k != "func_attr"}
    return func.with_body(erase_blocks(func.body), attrs=attrs)



def lowered(func: PrimFunc) -> PrimFunc:
    """What tvm.lower makes of a TensorIR function: its loops, blocks erased, printed in the
    lowered style (flat views) with the function's own attributes."""
    if not has_blocks(func.body):
        return func
    return func.with_body(erase_blocks(func.body), attrs=dict(func.attrs, lowered=True))
