"""relay.transform: the passes a user applies to a relay module by hand. InferType gives every
parameter and expression of main its type (checked_type), as the build would infer them, on a
copy: a pass never changes its input. The build's own passes run inside relay.build."""
from __future__ import annotations

from ..errors import AotError
from .expr import Function, IRModule, TupleType, clone  # noqa: F401  (clone: relay.transform's too)
from .to_graph import to_graph


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
            whole = IRModule(dict(mod.functions))
            whole["main"] = func                 # each function typed as if it were main (calls resolve in mod)
            to_graph(whole, expr_types=types)
            for old_id, e in memo.items():
                if old_id in types:
                    e.checked_type = _as_type(types[old_id])
            new.ret_type = getattr(new.body, "checked_type", None)
            new.checked_type = None
            out[name] = new
        return out


def InferType():     # noqa: N802  (TVM's name)
    return _InferType()
