"""relay.transform: the passes a user applies to a relay module by hand. InferType gives every
parameter and expression of main its type (checked_type), as the build would infer them, on a
copy: a pass never changes its input. The build's own passes run inside relay.build."""
from __future__ import annotations

from ..errors import AotError
from .expr import Call, Constant, Function, IRModule, Tuple, TupleGetItem, TupleType, \
    TupleWrapper, Var
from .to_graph import to_graph


def clone(expr, memo=None):
    """A structural copy of an expression (shared subexpressions stay shared)."""
    memo = {} if memo is None else memo

    def c(e):
        if isinstance(e, TupleWrapper):
            e = e.astuple()
        if id(e) in memo:
            return memo[id(e)]
        if isinstance(e, Var):
            out = Var(e.name_hint, e.type_annotation)
        elif isinstance(e, Constant):
            out = Constant(e.data)
        elif isinstance(e, Call):
            out = Call(e.op, [c(a) for a in e.args], dict(e.attrs))
        elif isinstance(e, Tuple):
            out = Tuple([c(f) for f in e.fields])
        elif isinstance(e, TupleGetItem):
            out = TupleGetItem(c(e.tuple_value), e.index)
        elif isinstance(e, Function):
            out = Function([c(p) for p in e.params], c(e.body), e.ret_type)
        else:
            return e
        memo[id(e)] = out
        return out
    return c(expr)


def _as_type(t):
    from .expr import TensorType
    if isinstance(t, list):
        return TupleType([_as_type(x) for x in t])
    return TensorType(t.shape, t.dtype)


class Pass:
    """A module pass: pass(mod) -> a new module."""

    name = "Pass"

    def __call__(self, mod):
        # any module holding its functions by name (TVM has one IRModule class for relay and TIR)
        if not isinstance(getattr(mod, "functions", None), dict):
            raise AotError(f"{self.name} takes an IRModule, not {type(mod).__name__} (IRModule.from_expr(f))")
        return self.transform_module(mod)

    def transform_module(self, mod):
        raise NotImplementedError


class _InferType(Pass):
    name = "InferType"

    def transform_module(self, mod):
        out = IRModule()
        for name, func in mod.functions.items():
            if not isinstance(func, Function):       # an imported model's main, a TIR function: as they are
                out[name] = func
                continue
            memo = {}
            new = clone(func, memo)
            types = {}
            to_graph(func, expr_types=types)
            for old_id, e in memo.items():
                if old_id in types:
                    e.checked_type = _as_type(types[old_id])
            new.ret_type = getattr(new.body, "checked_type", None)
            new.checked_type = None
            out[name] = new
        return out


def InferType():     # noqa: N802  (TVM's name)
    return _InferType()
