"""tvm.tir.ir_builder: statements built imperatively (TVM's IRBuilder), as a TIR pass writes its
replacement code: emit, allocate, for_range, if_scope / else_scope, get."""
from __future__ import annotations

import contextlib

from ..errors import AotError
from .expr import Expr, Load, Var, wrap
from .stmt import Allocate, Buffer, Evaluate, For, IfThenElse, Seq, Stmt, Store


class BufferVar:
    """What allocate returns: x[i] reads, x[i] = v writes the allocated buffer."""

    def __init__(self, builder, buffer):
        self._builder, self.buffer = builder, buffer

    @property
    def data(self):
        return self.buffer.data

    def __getitem__(self, i):
        return Load(self.buffer, wrap(i))

    def __setitem__(self, i, value):
        self._builder.emit(Store(self.buffer, wrap(i), wrap(value, self.buffer.dtype)))

    def asobject(self):
        return self.buffer


class IRBuilder:
    def __init__(self):
        self._seq = [[]]

    def emit(self, stmt):
        """A statement, or an expression evaluated for its effect (a call)."""
        if isinstance(stmt, Expr):
            stmt = Evaluate(stmt)
        if not isinstance(stmt, Stmt):
            raise AotError(f"ir_builder.emit takes a statement or a call, not {type(stmt).__name__}")
        self._seq[-1].append(stmt)

    def allocate(self, dtype, shape, name="buf", axis_separators=None, scope=""):
        """An array live for the rest of the current scope."""
        shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
        scope = {"": "local", "global": "local"}.get(scope, scope)
        b = Buffer(name, str(dtype), shape, scope)
        self._seq[-1].append(("alloc", b))
        return BufferVar(self, b)

    def pointer(self, content_type, name="ptr", scope=""):
        raise AotError("ir_builder.pointer: raw pointers are not supported; allocate a buffer")

    def buffer_ptr(self, buf, shape=None):
        return BufferVar(self, buf)

    @contextlib.contextmanager
    def for_range(self, begin, end, name="i", dtype="int32", kind="serial"):
        kinds = {"serial": "serial", "parallel": "parallel", "vectorize": "vectorize", "unroll": "unroll"}
        if kind not in kinds:
            raise AotError(f"for_range: loop kind {kind!r} is not one of {', '.join(kinds)}")
        v = Var(name)
        self._seq.append([])
        yield v
        body = self._pop()
        self.emit(For(v, wrap(begin), wrap(end) - wrap(begin) if not (isinstance(begin, int) and begin == 0)
                      else wrap(end), body, kinds[kind]))

    @contextlib.contextmanager
    def if_scope(self, cond):
        self._seq.append([])
        yield
        self.emit(IfThenElse(cond, self._pop()))

    @contextlib.contextmanager
    def else_scope(self):
        prev = self._seq[-1][-1] if self._seq[-1] else None
        if not isinstance(prev, IfThenElse) or prev.else_ is not None:
            raise AotError("else_scope must follow an if_scope")
        self._seq[-1].pop()
        self._seq.append([])
        yield
        self.emit(IfThenElse(prev.cond, prev.then, self._pop()))

    def _pop(self):
        return _fold(self._seq.pop())

    def get(self):
        """The statement built so far."""
        if len(self._seq) != 1:
            raise AotError("ir_builder.get inside an open scope")
        return _fold(self._seq[0])


def _fold(items):
    out = []
    for k, it in enumerate(items):
        if isinstance(it, tuple) and it[0] == "alloc":
            rest = _fold(items[k + 1:])
            out.append(Allocate(it[1], rest))
            break
        out.append(it)
    return out[0] if len(out) == 1 else Seq(out)


def create():
    return IRBuilder()
