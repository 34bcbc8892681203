"""Loop-IR statements, buffers and PrimFunc."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InternalError
from .expr import Expr, Var, wrap


class Buffer:
    """A typed memory region. scope 'global' = a function parameter, 'local' = a local array."""

    def __init__(self, name: str, dtype: str, shape, scope: str = "global"):
        self.name, self.dtype, self.shape, self.scope = name, dtype, tuple(int(s) for s in shape), scope

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self):
        return f"{self.name}:{self.dtype}{list(self.shape)}"


class Stmt:
    pass


class For(Stmt):
    """for var in [min, min+extent); kind is 'serial', 'unroll' or 'vectorize' (hints for renderers
    and later schedules: a 'vectorize' loop is kept as a loop for the C compiler to vectorize)."""

    def __init__(self, var: Var, min, extent, body: Stmt, kind: str = "serial"):
        self.var, self.min, self.extent, self.body, self.kind = var, wrap(min), wrap(extent), body, kind


class Store(Stmt):
    def __init__(self, buffer: Buffer, index, value: Expr):
        if value.dtype != buffer.dtype:
            raise InternalError(f"store of {value.dtype} into {buffer!r}")
        self.buffer, self.index, self.value = buffer, wrap(index), value


class Seq(Stmt):
    def __init__(self, stmts):
        flat = []
        for s in stmts:
            if isinstance(s, Seq):
                flat.extend(s.stmts)
            elif s is not None:
                flat.append(s)
        self.stmts = flat


class Allocate(Stmt):
    """A local buffer live for `body`."""

    def __init__(self, buffer: Buffer, body: Stmt):
        self.buffer, self.body = buffer, body


class IfThenElse(Stmt):
    def __init__(self, cond: Expr, then: Stmt, else_: Stmt | None = None):
        self.cond, self.then, self.else_ = cond, then, else_


@dataclass
class PrimFunc:
    name: str
    params: list            # list[Buffer], inputs first, then outputs
    body: Stmt
    num_inputs: int
    attrs: dict = field(default_factory=dict)

    @property
    def inputs(self):
        return self.params[:self.num_inputs]

    @property
    def outputs(self):
        return self.params[self.num_inputs:]


def map_stmt(s: Stmt, fstmt=None, fexpr=None) -> Stmt:
    """Rebuild a statement tree, applying fexpr to every expression and fstmt post-order."""
    fe = fexpr or (lambda e: e)
    if isinstance(s, For):
        r = For(s.var, fe(s.min), fe(s.extent), map_stmt(s.body, fstmt, fexpr), s.kind)
    elif isinstance(s, Store):
        r = Store(s.buffer, fe(s.index), fe(s.value))
    elif isinstance(s, Seq):
        r = Seq([map_stmt(x, fstmt, fexpr) for x in s.stmts])
    elif isinstance(s, Allocate):
        r = Allocate(s.buffer, map_stmt(s.body, fstmt, fexpr))
    elif isinstance(s, IfThenElse):
        r = IfThenElse(fe(s.cond), map_stmt(s.then, fstmt, fexpr),
                       map_stmt(s.else_, fstmt, fexpr) if s.else_ is not None else None)
    else:
        raise InternalError(f"unknown statement {type(s).__name__}")
    if fstmt is not None:
        r2 = fstmt(r)
        return r if r2 is None else r2
    return r


def stmt_children(s: Stmt):
    """The statements directly inside s."""
    if isinstance(s, Seq):
        return list(s.stmts)
    if isinstance(s, (Allocate, For)):
        return [s.body]
    if isinstance(s, IfThenElse):
        return [s.then] + ([s.else_] if s.else_ is not None else [])
    return []


def walk_stmts(s: Stmt):
    yield s
    for c in stmt_children(s):
        yield from walk_stmts(c)


def stmt_exprs(s: Stmt):
    """Every top-level expression in a statement tree."""
    if isinstance(s, For):
        yield s.min
        yield s.extent
        yield from stmt_exprs(s.body)
    elif isinstance(s, Store):
        yield s.index
        yield s.value
    elif isinstance(s, Seq):
        for x in s.stmts:
            yield from stmt_exprs(x)
    elif isinstance(s, Allocate):
        yield from stmt_exprs(s.body)
    elif isinstance(s, IfThenElse):
        yield s.cond
        yield from stmt_exprs(s.then)
        if s.else_ is not None:
            yield from stmt_exprs(s.else_)
