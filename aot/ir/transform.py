"""tvm.ir.transform: passes over an IRModule and the PassContext they run in (opt_level, config),
as TVM's TIR passes are written (tvm.tir.transform.prim_func_pass builds on Pass here)."""
from __future__ import annotations

import threading

from ..errors import AotError

_local = threading.local()


class PassContext:
    """with PassContext(opt_level=3, config={...}): the settings passes read (PassContext.current())."""

    def __init__(self, opt_level=2, required_pass=None, disabled_pass=None, instruments=None, config=None,
                 trace=None, trace_stack=None, make_traceable=None, num_evals=0, tuning_api_database=None):
        self.opt_level = opt_level
        self.required_pass = list(required_pass or [])
        self.disabled_pass = list(disabled_pass or [])
        self.instruments = list(instruments or [])
        self.config = dict(config or {})

    @staticmethod
    def current():
        st = getattr(_local, "stack", None)
        return st[-1] if st else _DEFAULT

    def __enter__(self):
        if not hasattr(_local, "stack"):
            _local.stack = []
        _local.stack.append(self)
        return self

    def __exit__(self, *exc):
        _local.stack.pop()


_DEFAULT = PassContext()


class PassInfo:
    def __init__(self, opt_level, name, required=None):
        self.opt_level, self.name, self.required = opt_level, name, list(required or [])


class Pass:
    """A pass: called on an IRModule, returns a new one (the input is never changed)."""

    info = PassInfo(0, "Pass")

    def __call__(self, mod):
        from .module import IRModule
        if not isinstance(mod, IRModule):
            raise AotError(f"pass {self.info.name}: takes an IRModule, not {type(mod).__name__}")
        ctx = PassContext.current()
        if self.info.name in ctx.disabled_pass or \
                (ctx.opt_level < self.info.opt_level and self.info.name not in ctx.required_pass):
            return mod
        return self.transform_module(mod, ctx)

    def transform_module(self, mod, ctx):
        raise NotImplementedError


class ModulePass(Pass):
    def __init__(self, fn, opt_level, name):
        self.fn, self.info = fn, PassInfo(opt_level, name)

    def transform_module(self, mod, ctx):
        return self.fn(mod, ctx)


def module_pass(pass_func=None, opt_level=None, name=None, required=None):
    def make(fn):
        return ModulePass(fn, opt_level or 0, name or getattr(fn, "__name__", "ModulePass"))
    return make(pass_func) if pass_func is not None else make


class Sequential(Pass):
    def __init__(self, passes=None, opt_level=0, name="sequential", required=None):
        self.passes, self.info = list(passes or []), PassInfo(opt_level, name, required)

    def transform_module(self, mod, ctx):
        for p in self.passes:
            mod = p(mod)
        return mod
