"""TVM's tir operators that build expressions by name (tvm.tir.if_then_else, tvm.tir.all, ...;
te re-exports the math ones as te.exp, ...)."""
from __future__ import annotations

import builtins

from .expr import Call, Select, all_of, or_, wrap


def if_then_else(cond, t, f):
    """cond ? t : f (the branch not taken is not evaluated, as TVM's if_then_else)."""
    t = wrap(t, getattr(f, "dtype", "float32"))
    return Select(wrap(cond, "bool"), t, wrap(f, t.dtype))


def all(*conds):          # noqa: A001  (TVM's name)
    return all_of([wrap(c, "bool") for c in conds])


def any(*conds):          # noqa: A001  (TVM's name)
    out = None
    for c in conds:
        out = wrap(c, "bool") if out is None else or_(out, wrap(c, "bool"))
    return out if out is not None else wrap(False)


def _math(fn):
    def f(x):
        return Call(fn, [wrap(x, "float32")])
    f.__name__ = fn
    f.__doc__ = f"TVM's {fn}(x)."
    return f


exp, log, sqrt, tanh, erf, floor, ceil, round = (_math(n) for n in
                                                  ("exp", "log", "sqrt", "tanh", "erf", "floor", "ceil", "round"))
abs = _math("fabs")       # noqa: A001


def sigmoid(x):
    x = wrap(x, "float32")
    return 1.0 / (1.0 + exp(-x))


__all__ = ["if_then_else", "all", "any", "exp", "log", "sqrt", "tanh", "erf", "floor", "ceil", "round", "abs",
           "sigmoid"]
del builtins
