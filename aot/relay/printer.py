"""Relay text, as TVM prints a module: `def @main(%data: Tensor[(1, 3, 224, 224), float32], ...) {`,
one `%n = op(args, attr=value);` per call used more than once or not last, the body's value last.
Types show where they are known (annotations, or InferType's checked_type).

The expression classes (expr.py) print themselves through this module, so it tells them apart
by class name rather than importing them back."""
from __future__ import annotations

import numpy as np


def _kind(x):
    return type(x).__name__


def type_text(t):
    if t is None:
        return None
    if _kind(t) == "TupleType":
        return "(" + ", ".join(type_text(f) for f in t.fields) + ")"
    dims = ", ".join(str(d) for d in t.shape)
    return f"Tensor[({dims}{',' if len(t.shape) == 1 else ''}), {t.dtype}]"


def _attr_text(v):
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_attr_text(x) for x in v) + "]"
    if isinstance(v, float):
        return f"{v:g}f"
    return str(v)


def function_text(func, name="main"):
    if _kind(func) == "GraphFunction":
        return str(func)
    lines, names, counter, metas = [], {}, [0], {}

    def var_decl(v):
        t = type_text(getattr(v, "checked_type", None) or v.type_annotation)
        return f"%{v.name_hint}" + (f": {t}" if t else "")

    def text(e):
        if _kind(e) == "TupleWrapper":
            e = e.astuple()
        if id(e) in names:
            return names[id(e)]
        kind = _kind(e)
        if kind == "Var":
            return f"%{e.name_hint}"
        if kind == "Constant":
            a = e.data
            if a.ndim == 0:
                return f"{a.item():g}f" if a.dtype == np.float32 else str(a.item())
            if id(e) not in metas:
                metas[id(e)] = len(metas)
            return f"meta[relay.Constant][{metas[id(e)]}]"
        if kind == "Tuple":
            s = "(" + ", ".join(text(f) for f in e.fields) + ("," if len(e.fields) == 1 else "") + ")"
        elif kind == "TupleGetItem":
            s = f"{text(e.tuple_value)}.{e.index}"
        elif kind == "Call":
            args = [text(a) for a in e.args]
            attrs = [f"{k}={_attr_text(v)}" for k, v in e.attrs.items() if v is not None]
            callee = e.op if isinstance(e.op, str) else f"@{e.op.name_hint}" if _kind(e.op) == "GlobalVar" \
                else text(e.op)
            s = f"{callee}({', '.join(args + attrs)})"
        elif kind == "Function":
            return "fn (" + ", ".join(var_decl(p) for p in e.params) + ") {...}"
        else:
            return f"<{type(e).__name__}>"
        ref = f"%{counter[0]}"
        counter[0] += 1
        lines.append(f"  {ref} = {s};")
        names[id(e)] = ref
        return ref

    body = func.body.astuple() if _kind(func.body) == "TupleWrapper" else func.body
    last = text(body)
    if lines and lines[-1].startswith(f"  {last} = "):      # the body's own value is written bare
        lines[-1] = "  " + lines[-1].split(" = ", 1)[1].rstrip(";")
    else:
        lines.append(f"  {last}")
    ret = type_text(getattr(func, "ret_type", None))
    head = f"def @{name}(" + ", ".join(var_decl(p) for p in func.params) + ")" + (f" -> {ret}" if ret else "")
    return head + " {\n" + "\n".join(lines) + "\n}"


def module_text(mod):
    return "\n".join(function_text(f, n) for n, f in mod.functions.items())
