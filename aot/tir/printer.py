"""Readable text form of loop IR (for --verbose, debugging and tests); not C."""
from __future__ import annotations

from .expr import Bin, Call, Cast, Const, Load, Select, Unary, Var
from .stmt import Allocate, For, IfThenElse, PrimFunc, Seq, Store


def expr_str(e) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Bin):
        if e.op in ("min", "max", "floordiv", "floormod"):
            return f"{e.op}({expr_str(e.a)}, {expr_str(e.b)})"
        return f"({expr_str(e.a)} {e.op} {expr_str(e.b)})"
    if isinstance(e, Unary):
        return {"neg": "-", "not": "!", "bnot": "~"}[e.op] + expr_str(e.a)
    if isinstance(e, Select):
        return f"select({expr_str(e.cond)}, {expr_str(e.t)}, {expr_str(e.f)})"
    if isinstance(e, Call):
        return f"{e.fn}(" + ", ".join(expr_str(a) for a in e.args) + ")"
    if isinstance(e, Cast):
        return f"{e.dtype}({expr_str(e.a)})"
    if isinstance(e, Load):
        return f"{e.buffer.name}[{expr_str(e.index)}]"
    return repr(e)


def stmt_lines(s, indent=0):
    pad = "  " * indent
    if isinstance(s, For):
        hint = "" if s.kind == "serial" else f" {s.kind}"
        yield f"{pad}for {s.var.name} in range({expr_str(s.min)}, {expr_str(s.min)} + {expr_str(s.extent)}){hint}:"
        yield from stmt_lines(s.body, indent + 1)
    elif isinstance(s, Store):
        yield f"{pad}{s.buffer.name}[{expr_str(s.index)}] = {expr_str(s.value)}"
    elif isinstance(s, Seq):
        for x in s.stmts:
            yield from stmt_lines(x, indent)
    elif isinstance(s, Allocate):
        yield f"{pad}{s.buffer.name} = allocate({s.buffer.dtype}, {list(s.buffer.shape)}, local)"
        yield from stmt_lines(s.body, indent)
    elif isinstance(s, IfThenElse):
        yield f"{pad}if {expr_str(s.cond)}:"
        yield from stmt_lines(s.then, indent + 1)
        if s.else_ is not None:
            yield f"{pad}else:"
            yield from stmt_lines(s.else_, indent + 1)


def func_str(f: PrimFunc) -> str:
    params = ", ".join(f"{b.name}: {b.dtype}{list(b.shape)}" for b in f.params)
    return "\n".join([f"primfn {f.name}({params}):"] + list(stmt_lines(f.body, 1))) + "\n"
