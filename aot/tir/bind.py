"""Fix the symbolic sizes of a PrimFunc (te.var): every size variable becomes a constant in the
buffers' shapes, the loops' extents and the indices, then the function is simplified, so a
split's tail guard over a size that the factor divides folds away. What comes out is the same
loop IR as a function written with constant shapes: the bounds verifier proves it as usual."""
from __future__ import annotations

from ..errors import AotError
from .expr import Const, Load, Var, substitute, transform, walk
from .simplify import simplify, simplify_stmt
from .stmt import Allocate, Buffer, PrimFunc, Seq, StmtMutator, Store, stmt_exprs


def size_vars(func: PrimFunc):
    """The size variables of func, in order of first appearance: those of the parameters'
    shapes, then any other variable that no loop binds (a reduce extent of its own)."""
    out, seen = [], set()

    def add(e):
        for v in walk(e):
            if isinstance(v, Var) and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    for b in func.params:
        for d in b.shape:
            if not isinstance(d, int):
                add(d)
    from .stmt import For, walk_stmts
    bound = {id(x.var) for x in walk_stmts(func.body) if isinstance(x, For)}
    for e in stmt_exprs(func.body):
        for v in walk(e):
            # a buffer's data pointer (an external call's argument) is no size
            if isinstance(v, Var) and v.dtype != "handle" and id(v) not in bound and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


def shape_of(buf: Buffer, values: dict):
    """buf's shape with the sizes {id(var): int} put in."""
    dims = []
    for d in buf.shape:
        if isinstance(d, int):
            dims.append(d)
            continue
        v = simplify(substitute(d, {k: Const(n, "int32") for k, n in values.items()}))
        if not isinstance(v, Const):
            raise AotError(f"{buf.name}: dimension {d!r} is not fixed by the sizes given")
        dims.append(int(v.value))
    return tuple(dims)


def bind_sizes(func: PrimFunc, values: dict) -> PrimFunc:
    """func with the size variables {id(var): int} replaced by constants."""
    consts = {k: Const(int(n), "int32") for k, n in values.items()}
    new = {}
    for b in func.params:
        new[id(b)] = Buffer(b.name, b.dtype, shape_of(b, values), b.scope) if b.symbolic else b
        if any(d < 0 for d in new[id(b)].shape):
            raise AotError(f"{b.name}: the sizes give it the negative shape {list(new[id(b)].shape)}")

    class Bind(StmtMutator):
        def mutate_expr(self, e):
            e = substitute(e, consts)
            return transform(e, lambda x: Load(new[id(x.buffer)], x.indices)
                             if isinstance(x, Load) and id(x.buffer) in new and new[id(x.buffer)] is not x.buffer
                             else None)

        def visit_Store(self, s):
            idx, val = self.mutate_expr(s.index), self.mutate_expr(s.value)
            return Store(new.get(id(s.buffer), s.buffer), idx, val)

        def visit_Allocate(self, s):
            b = s.buffer
            if b.symbolic:          # a te stage's intermediate sized by the sizes
                new[id(b)] = Buffer(b.name, b.dtype, shape_of(b, values), b.scope)
            return Allocate(new.get(id(b), b), self.visit(s.body) or Seq([]))

    body = simplify_stmt(Bind().visit(func.body)) or Seq([])
    return func.with_body(body, params=[new[id(b)] for b in func.params])
