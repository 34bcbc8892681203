"""Readable text form of loop IR (for --verbose, debugging and tests); not C."""
from __future__ import annotations

from .expr import Bin, Call, Cast, Const, Load, Select, Unary, Var
from .stmt import PrimFunc, StmtVisitor


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
        return f"{e.buffer.name}[{', '.join(expr_str(i) for i in e.indices)}]"
    return repr(e)


class _Lines(StmtVisitor):
    def __init__(self, indent):
        self.indent, self.lines = indent, []

    def emit(self, text):
        self.lines.append("  " * self.indent + text)

    def nested(self, s):
        self.indent += 1
        self.visit(s)
        self.indent -= 1

    def visit_For(self, s):
        hint = "" if s.kind == "serial" else f" {s.kind}" + (f"({s.thread_tag})" if s.thread_tag else "")
        self.emit(f"for {s.var.name} in range({expr_str(s.min)}, {expr_str(s.min)} + {expr_str(s.extent)}){hint}:")
        self.nested(s.body)

    def visit_Store(self, s):
        self.emit(f"{s.buffer.name}[{expr_str(s.index)}] = {expr_str(s.value)}")

    def visit_Allocate(self, s):
        b = s.buffer
        self.emit(f"{b.name} = allocate({b.dtype}, {list(b.shape)}, {b.scope})")
        self.visit(s.body)

    def visit_IfThenElse(self, s):
        self.emit(f"if {expr_str(s.cond)}:")
        self.nested(s.then)
        if s.else_ is not None:
            self.emit("else:")
            self.nested(s.else_)

    def visit_Barrier(self, s):
        self.emit(f"barrier({s.scope})")

    def visit_Evaluate(self, s):
        self.emit(expr_str(s.call))

    def visit_Block(self, s):
        binds = ", ".join(f"{iv.var.name}:{iv.kind}={expr_str(v)}" for iv, v in zip(s.iter_vars, s.values))
        self.emit(f"block {s.name}({binds})" + (f" where {expr_str(s.predicate)}" if s.predicate is not None else "")
                  + ":")
        if s.init is not None:
            self.emit("  init:")
            self.indent += 1
            self.nested(s.init)
            self.indent -= 1
        self.nested(s.body)


def stmt_lines(s, indent=0):
    p = _Lines(indent)
    p.visit(s)
    return p.lines


def func_str(f: PrimFunc) -> str:
    params = ", ".join(f"{b.name}: {b.dtype}{list(b.shape)}" for b in f.params)
    return "\n".join([f"primfn {f.name}({params}):"] + list(stmt_lines(f.body, 1))) + "\n"
