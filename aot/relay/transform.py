"""relay.transform: the passes a user applies to a relay module by hand, each on a copy (a pass
never changes its input): InferType gives every parameter and expression its type (checked_type)
as the build infers them; FoldConstant evaluates calls of constants through the graph builder, as
the build does; EliminateCommonSubexpr merges equal calls; function_pass makes a pass of a
function. The build runs its own passes inside relay.build whatever is applied here."""
from __future__ import annotations

import numpy as np

from .. import transform as tvm_transform
from ..errors import AotError
from .expr import (Call, Constant, Function, IRModule, Tuple, TupleGetItem, TupleType, TupleWrapper,  # noqa: F401
                   clone)
from .to_graph import to_graph


def _as_type(t):
    from .expr import TensorType
    if isinstance(t, list):
        return TupleType([_as_type(x) for x in t])
    return TensorType(t.shape, t.dtype)


class Pass(tvm_transform.Pass):
    """A relay module pass: pass(mod) -> a new module."""

    name = "Pass"

    def __init__(self, opt_level=0):
        super().__init__(tvm_transform.PassInfo(opt_level, self.name))

    def __call__(self, mod):
        # any module holding its functions by name (TVM has one IRModule class for relay and TIR)
        if not isinstance(getattr(mod, "functions", None), dict):
            raise AotError(f"{self.name} takes an IRModule, not {type(mod).__name__} (IRModule.from_expr(f))")
        return self.transform_module(mod)

    def transform_module(self, mod, ctx=None):
        raise NotImplementedError


class _InferType(Pass):
    name = "InferType"

    def transform_module(self, mod, ctx=None):
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
    return _InferType(0)


def _rebuild(mod, fn):
    """A new module with fn(function) for each relay function (others as they are)."""
    out = IRModule()
    for name, func in mod.functions.items():
        out[name] = fn(func) if isinstance(func, Function) else func
    if hasattr(mod, "_gvars"):
        out._gvars.update(mod._gvars)
    return out


class _FoldConstant(Pass):
    """Every call whose operands are all constants becomes the constant it computes (the graph
    builder evaluates it, as the build would)."""
    name = "FoldConstant"

    def transform_module(self, mod, ctx=None):
        return _rebuild(mod, fold_constant)


def fold_constant(func):
    memo = {}

    def fold(e):
        if isinstance(e, TupleWrapper):
            e = e.astuple()
        if id(e) in memo:
            return memo[id(e)]
        if isinstance(e, Call) and isinstance(e.op, str):
            args = [fold(a) for a in e.args]
            new = Call(e.op, args, dict(e.attrs))
            if all(isinstance(a, Constant) for a in args):
                try:
                    g, _ = to_graph(Function([], new))
                except AotError:
                    g = None
                if g is not None and len(g.outputs) == 1 and g.outputs[0].is_const:
                    new = Constant(np.asarray(g.outputs[0].const))
        elif isinstance(e, Tuple):
            new = Tuple([fold(f) for f in e.fields])
        elif isinstance(e, TupleGetItem):
            t = fold(e.tuple_value)
            new = t.fields[e.index] if isinstance(t, Tuple) else TupleGetItem(t, e.index)
        elif isinstance(e, Call):
            new = Call(e.op, [fold(a) for a in e.args], dict(e.attrs))
        else:
            new = e
        memo[id(e)] = new
        return new
    return Function(func.params, fold(func.body), func.ret_type, attrs=func.attrs)


def FoldConstant(fold_qnn=False):     # noqa: N802
    return _FoldConstant(2)


class _EliminateCommonSubexpr(Pass):
    """Calls of the same op on the same operands with the same attributes become one."""
    name = "EliminateCommonSubexpr"

    def transform_module(self, mod, ctx=None):
        def cse(func):
            memo, seen = {}, {}

            def walk(e):
                if isinstance(e, TupleWrapper):
                    e = e.astuple()
                if id(e) in memo:
                    return memo[id(e)]
                if isinstance(e, Call):
                    args = [walk(a) for a in e.args]
                    op_key = e.op if isinstance(e.op, str) else id(e.op)
                    key = (op_key, tuple(id(a) for a in args), repr(sorted(e.attrs.items())))
                    new = seen.get(key)
                    if new is None:
                        new = seen[key] = Call(e.op, args, dict(e.attrs))
                elif isinstance(e, Tuple):
                    new = Tuple([walk(f) for f in e.fields])
                elif isinstance(e, TupleGetItem):
                    new = TupleGetItem(walk(e.tuple_value), e.index)
                else:
                    new = e
                memo[id(e)] = new
                return new
            return Function(func.params, walk(func.body), func.ret_type, attrs=func.attrs)
        return _rebuild(mod, cse)


def EliminateCommonSubexpr(fskip=None):     # noqa: N802
    if fskip is not None:
        raise AotError("EliminateCommonSubexpr: fskip is not supported")
    return _EliminateCommonSubexpr(3)


class _DeadCodeElimination(Pass):
    """The identity: relay here has no let-bindings, so nothing in a function is ever dead."""
    name = "DeadCodeElimination"

    def transform_module(self, mod, ctx=None):
        return _rebuild(mod, lambda f: f)


def DeadCodeElimination(inline_once=False, ignore_impurity=False):     # noqa: N802
    return _DeadCodeElimination(1)


def function_pass(pass_func=None, opt_level=None, name=None, required=None, traceable=False):
    """@function_pass(opt_level=1) over fn(func, mod, ctx) -> func, applied to each relay function
    of the module; or over a class whose transform_function(func, mod, ctx) does it."""
    if opt_level is None:
        raise AotError("function_pass: opt_level is needed")

    def create(arg):
        pname = name or arg.__name__

        def module_fn(fn):
            def run(mod, ctx):
                return _rebuild(mod, lambda f: fn(f, mod, ctx))
            return tvm_transform.ModulePass(run, tvm_transform.PassInfo(opt_level, pname, required, traceable))
        if isinstance(arg, type):
            def make(*args, **kwargs):
                inst = arg(*args, **kwargs)
                return module_fn(inst.transform_function)
            return make
        return module_fn(arg)
    return create(pass_func) if pass_func is not None else create
