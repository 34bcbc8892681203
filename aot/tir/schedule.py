"""Schedule primitives on loop IR: split, reorder, unroll.

Each primitive is a function Stmt -> Stmt addressing a loop by its variable; the result
computes the same values in a different iteration order or structure.
"""
from __future__ import annotations

from .expr import Const, Var, lt, substitute
from .simplify import const_value
from .stmt import Allocate, For, IfThenElse, Seq, Stmt, map_stmt


class ScheduleError(Exception):
    pass


def find_loop(s: Stmt, var: Var):
    if isinstance(s, For):
        if s.var is var:
            return s
        return find_loop(s.body, var)
    if isinstance(s, Seq):
        for x in s.stmts:
            r = find_loop(x, var)
            if r is not None:
                return r
    if isinstance(s, Allocate):
        return find_loop(s.body, var)
    if isinstance(s, IfThenElse):
        return find_loop(s.then, var) or (find_loop(s.else_, var) if s.else_ is not None else None)
    return None


def _replace_loop(s: Stmt, var: Var, fn):
    def f(x):
        if isinstance(x, For) and x.var is var:
            return fn(x)
        return None
    return map_stmt(s, fstmt=f)


def split(s: Stmt, var: Var, factor: int):
    """Split loop `var` into (outer, inner) with inner extent `factor`; returns (stmt, outer, inner).

    A non-dividing factor guards the tail with a condition."""
    loop = find_loop(s, var)
    if loop is None:
        raise ScheduleError(f"no loop over {var.name}")
    ext = const_value(loop.extent)
    if ext is None:
        raise ScheduleError(f"split needs a constant extent for {var.name}")
    outer, inner = Var(var.name + "_o"), Var(var.name + "_i")

    def fn(x: For):
        idx = x.min + outer * factor + inner
        body = map_stmt(x.body, fexpr=lambda e: substitute(e, {id(var): idx}))
        if ext % factor:
            body = IfThenElse(lt(outer * factor + inner, Const(ext, inner.dtype)), body)
        n_outer = (ext + factor - 1) // factor
        return For(outer, 0, n_outer, For(inner, 0, factor, body, x.kind))

    return _replace_loop(s, var, fn), outer, inner


def reorder(s: Stmt, order):
    """Reorder a perfect nest of loops (given outermost-first in the new order)."""
    ids = {id(v) for v in order}
    first = None

    def outermost(x):
        if isinstance(x, For) and id(x.var) in ids:
            return x
        if isinstance(x, For):
            return outermost(x.body)
        if isinstance(x, (Seq,)):
            for y in x.stmts:
                r = outermost(y)
                if r is not None:
                    return r
        if isinstance(x, Allocate):
            return outermost(x.body)
        return None

    first = outermost(s)
    if first is None:
        raise ScheduleError("reorder: loops not found")
    loops, cur = [], first
    while isinstance(cur, For) and id(cur.var) in ids and len(loops) < len(order):
        loops.append(cur)
        cur = cur.body
    if len(loops) != len(order):
        raise ScheduleError("reorder needs a perfect nest of the named loops")
    bound = {id(l.var) for l in loops}
    for l in loops:
        for e in (l.min, l.extent):
            from .expr import walk
            if any(isinstance(n, Var) and id(n) in bound for n in walk(e)):
                raise ScheduleError("reorder: loop bounds depend on reordered loops")
    by_var = {id(l.var): l for l in loops}
    body = cur
    for v in reversed(order):
        l = by_var[id(v)]
        body = For(l.var, l.min, l.extent, body, l.kind)
    return _replace_loop(s, first.var, lambda x: body)


def unroll(s: Stmt, var: Var, max_extent: int = 16):
    """Replicate the body of a constant-extent loop (the renderer then sees straight-line code)."""
    loop = find_loop(s, var)
    if loop is None:
        raise ScheduleError(f"no loop over {var.name}")
    ext, mn = const_value(loop.extent), const_value(loop.min)
    if ext is None or mn is None or ext > max_extent:
        raise ScheduleError(f"unroll needs a small constant extent for {var.name}")

    def fn(x: For):
        return Seq([map_stmt(x.body, fexpr=lambda e, i=i: substitute(e, {id(var): Const(mn + i, var.dtype)}))
                    for i in range(ext)])

    return _replace_loop(s, var, fn)
