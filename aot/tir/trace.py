"""Schedule traces: which rule ran on a kernel and the primitives it applied.

While a recorder is active (aot/schedules: `schedule()`), every primitive of schedule.py
decorated with `traced` reports its call: its name and its arguments but the statement or
function it applies to, in plain data (a loop variable by name, a buffer by name, a tensor
intrinsic by its registered name, a layout as its fields, constants as values). A call made
inside another primitive is the outer one's business and is not reported; a rule's trial
calls whose result it throws away are dropped with `mark`/`rollback` or made `untraced`.

The trace is plain data (tuples, strings, numbers), so it is kept in func.attrs["trace"],
travels with the kernel (a repeated layer's copy included) and prints as JSON.
"""
from __future__ import annotations

import contextvars
import functools
import inspect
import numbers
from contextlib import contextmanager

_ACTIVE = contextvars.ContextVar("aot_schedule_trace", default=None)


class Recorder:
    def __init__(self):
        self.calls = []


@contextmanager
def recording():
    """A fresh recorder for the primitives applied inside the block."""
    rec = Recorder()
    token = _ACTIVE.set(rec)
    try:
        yield rec
    finally:
        _ACTIVE.reset(token)


@contextmanager
def untraced():
    """Primitives applied as a check (their result unused) are not part of the trace."""
    token = _ACTIVE.set(None)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def mark():
    """Where the trace stands now, for `rollback` when a trial's result is thrown away."""
    rec = _ACTIVE.get()
    return len(rec.calls) if rec is not None else 0


def rollback(at):
    rec = _ACTIVE.get()
    if rec is not None:
        del rec.calls[at:]


def plain(x):
    """An argument as plain data that names what it refers to."""
    from .expr import Var
    from .stmt import Buffer
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, numbers.Integral):        # numpy's too
        return int(x)
    if isinstance(x, numbers.Real):
        return float(x)
    v = getattr(x, "var", x)                   # a For, a te.IterVar: its loop variable
    if isinstance(v, Var):
        return ("var", v.name)
    if isinstance(x, Buffer):
        return ("buffer", x.name)
    if isinstance(x, (list, tuple)):
        return ("list",) + tuple(plain(y) for y in x)
    from .intrin import TensorIntrin
    if isinstance(x, TensorIntrin):
        return ("intrin", x.name)
    fields = getattr(x, "__dataclass_fields__", None)
    if fields:                                  # a layout: its class and fields
        return (type(x).__name__,) + tuple(plain(getattr(x, f)) for f in fields)
    return ("repr", repr(x))


def show(x) -> str:
    """An argument as printed in a trace."""
    if isinstance(x, tuple):
        if x[0] in ("var", "buffer"):
            return x[1]
        if x[0] == "intrin":
            return repr(x[1])
        if x[0] == "list":
            return "[" + ", ".join(show(y) for y in x[1:]) + "]"
        if x[0] == "repr":
            return x[1]
        return f"{x[0]}(" + ", ".join(show(y) for y in x[1:]) + ")"
    return repr(x)


def show_call(call) -> str:
    name, args = call
    return f"{name}(" + ", ".join(show(v) if k is None else f"{k}={show(v)}" for k, v in args) + ")"


def traced(fn):
    """Report each call of primitive fn to the active recorder (first parameter, the statement or
    function it applies to, left out; a parameter left at its default, too)."""
    sig = inspect.signature(fn)
    params = list(sig.parameters)[1:]
    positional = {p for p in params if sig.parameters[p].default is inspect.Parameter.empty}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        rec = _ACTIVE.get()
        if rec is None:
            return fn(*args, **kwargs)
        token = _ACTIVE.set(None)
        try:
            out = fn(*args, **kwargs)
        finally:
            _ACTIVE.reset(token)
        bound = sig.bind(*args, **kwargs).arguments
        rec.calls.append((fn.__name__, tuple((None if p in positional else p, plain(bound[p]))
                                             for p in params if p in bound)))
        return out

    return wrapper


def format_trace(trace, indent="") -> list:
    """The lines of a trace (func.attrs["trace"]): each rule, then its primitives."""
    lines = []
    for rule, calls in trace["steps"]:
        lines.append(f"{indent}{rule}" + (": " + "; ".join(show_call(c) for c in calls) if calls else ""))
    return lines


def to_json(x):
    """A trace as JSON data (tuples as lists)."""
    if isinstance(x, dict):
        return {k: to_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_json(y) for y in x]
    return x


def from_json(x):
    """The inverse of to_json (lists as tuples), for replaying a trace read from metadata.json."""
    if isinstance(x, dict):
        return {k: from_json(v) for k, v in x.items()}
    if isinstance(x, list):
        return tuple(from_json(y) for y in x)
    return x
