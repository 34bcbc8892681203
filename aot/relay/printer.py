"""Relay text, as TVM prints a module: `def @main(%data: Tensor[(1, 3, 224, 224), float32], ...) {`,
one `%n = op(args, attr=value);` per call used more than once or not last, the body's value last.
Types show where they are known (annotations, or InferType's checked_type).

The expression classes (expr.py) print themselves through this module, so it tells them apart
by class name rather than importing them back."""
from __future__ import annotations

import numpy as np


# op -> {attribute: its default}: an attribute at its default is not printed, as in TVM's text
# (filled by op.py and nn.py beside each op's constructor)
DEFAULT_ATTRS: dict = {}


def defaults(op, **attrs):
    DEFAULT_ATTRS[op] = attrs


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
    names, counter, metas = {}, [0], {}
    out = [[]]                 # the lines of the function being printed (a stack: nested functions)

    def var_decl(v):
        t = type_text(getattr(v, "checked_type", None) or v.type_annotation)
        return f"%{v.name_hint}" + (f": {t}" if t else "")

    def emit(ref, s):
        out[-1].append(f"{ref} = {s};")

    def body_lines(f):
        """The lines of f's body, its own value written bare last."""
        out.append([])
        b = f.body.astuple() if _kind(f.body) == "TupleWrapper" else f.body
        last = text(b)
        lines = out.pop()
        if lines and lines[-1].startswith(f"{last} = "):
            lines[-1] = lines[-1].split(" = ", 1)[1][:-1]
            counter[0] -= 1            # a value written bare takes no number
            names.pop(id(b), None)
        else:
            lines.append(last)
        return lines

    def function_ref(f):
        """A function used as a value (a fused primitive function): printed as %n = fn (...) {...};"""
        if id(f) in names:
            return names[id(f)]
        inner = body_lines(f)
        params = [var_decl(p) for p in f.params] + [f"{k}={_attr_text(v)}" for k, v in f.attrs.items()]
        ret = type_text(getattr(f, "ret_type", None))
        ref = f"%{counter[0]}"
        counter[0] += 1
        out[-1].append(f"{ref} = fn ({', '.join(params)})" + (f" -> {ret}" if ret else "") + " {")
        out[-1].extend("  " + line for line in inner)
        out[-1].append("};")
        names[id(f)] = ref
        return ref

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
            callee = e.op if isinstance(e.op, str) else f"@{e.op.name_hint}" if _kind(e.op) == "GlobalVar" \
                else function_ref(e.op)
            dflt = DEFAULT_ATTRS.get(e.op, {}) if isinstance(e.op, str) else {}
            attrs = [f"{k}={_attr_text(v)}" for k, v in e.attrs.items()
                     if v is not None and not (k in dflt and dflt[k] == v)]
            s = f"{callee}({', '.join(args + attrs)})"
        elif kind == "Function":
            return function_ref(e)
        else:
            return f"<{type(e).__name__}>"
        ref = f"%{counter[0]}"
        counter[0] += 1
        emit(ref, s)
        names[id(e)] = ref
        return ref

    lines = body_lines(func)
    ret = type_text(getattr(func, "ret_type", None))
    head = f"def @{name}(" + ", ".join(var_decl(p) for p in func.params) + ")" + (f" -> {ret}" if ret else "")
    return head + " {\n" + "\n".join("  " + line for line in lines) + "\n}"


def module_text(mod):
    return "\n".join(function_text(f, n) for n, f in mod.functions.items())
