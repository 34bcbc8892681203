"""tvm.tir.transform: prim_func_pass, a pass that rewrites each PrimFunc of a module, written as
a function or (as TVM's UMA templates write it) as a class with transform_function."""
from __future__ import annotations

import inspect

from ..errors import AotError
from ..ir.transform import Pass, PassContext, PassInfo


class PrimFuncPass(Pass):
    def __init__(self, fn, opt_level, name, required=None):
        super().__init__(PassInfo(opt_level, name, required))
        self.fn = fn

    def transform_module(self, mod, ctx):
        from ..ir.module import IRModule
        from .stmt import PrimFunc
        if not isinstance(mod, IRModule):
            raise AotError(f"pass {self.info.name}: takes an IRModule of TIR functions, not {type(mod).__name__}")
        out = {}
        for gname, f in mod.functions.items():
            r = self.fn(f, mod, ctx)
            if r is not None and not isinstance(r, PrimFunc):
                raise AotError(f"pass {self.info.name}: returned a {type(r).__name__} for {gname}, not a PrimFunc")
            if r is not None:
                out[gname] = r
        return IRModule(out, attrs=mod.attrs)


def prim_func_pass(pass_func=None, opt_level=None, name=None, required=None):
    """@prim_func_pass(opt_level=2) on fn(func, mod, ctx) -> PrimFunc gives a pass; on a class with
    transform_function(self, func, mod, ctx) gives a class whose instances are passes."""
    if opt_level is None:
        raise AotError("prim_func_pass: opt_level is required")

    def make(obj):
        if inspect.isclass(obj):
            if not hasattr(obj, "transform_function"):
                raise AotError(f"prim_func_pass: class {obj.__name__} has no transform_function(func, mod, ctx)")
            user = obj

            class _Wrapped(PrimFuncPass):
                def __init__(self, *args, **kwargs):
                    self._inst = user(*args, **kwargs)
                    super().__init__(self._inst.transform_function, opt_level, name or user.__name__, required)

                def __getattr__(self, item):
                    return getattr(self.__dict__["_inst"], item)
            _Wrapped.__name__ = _Wrapped.__qualname__ = user.__name__
            _Wrapped.__doc__ = user.__doc__
            return _Wrapped
        return PrimFuncPass(obj, opt_level, name or getattr(obj, "__name__", "PrimFuncPass"), required)
    return make(pass_func) if pass_func is not None else make


__all__ = ["PrimFuncPass", "prim_func_pass", "PassContext"]
