"""A relay Function -> the graph IR, through the node builder every frontend uses: the relay
layer is one more frontend, not a second IR. Parameters bound in `params` become constants
(so batch-norm and weight transposes fold at build); the other free variables are the graph's
inputs. An untyped variable takes the shape its first reader's op gives it (op.param_shapes)."""
from __future__ import annotations

import numpy as np

from ..errors import AotError
from ..frontend.builder import GraphBuilder, check_tensor_size
from ..ir.graph import TensorType, Value
from .expr import (Call, Constant, Expr, Function, GlobalVar, GraphFunction, IRModule, Tuple, TupleGetItem,
                   TupleWrapper, Var, clone, free_vars)
from .op import OPS


def main_function(mod):
    """The function to build: a module's "main" (relay's IRModule, or any module holding a relay
    function under "main", as TVM's one IRModule class does), or a function or expression."""
    if isinstance(mod, IRModule) or (not isinstance(mod, (Expr, TupleWrapper)) and hasattr(mod, "__getitem__")):
        try:
            mod = mod["main"]
        except (KeyError, AotError):
            raise AotError("the module has no function 'main' to build") from None
    if isinstance(mod, TupleWrapper):
        mod = mod.astuple()
    if not isinstance(mod, (Function, GraphFunction)):
        mod = Function(free_vars(mod), mod)
    return mod


def _array(v):
    return np.asarray(v.numpy() if hasattr(v, "numpy") else v)


def to_graph(mod, params=None, name="default", expr_types=None):
    """(graph, {var name: TensorType of every free variable, bound or not}). expr_types, a dict,
    receives {id(expression): its TensorType, or a list of them for a tuple} (relay.transform.InferType)."""
    module = mod if isinstance(getattr(mod, "functions", None), dict) else None
    inlining, kept = [], []
    func = main_function(mod)
    if isinstance(func, GraphFunction):
        if params:
            raise AotError("a module a frontend imported takes its params at relay.build")
        return func.graph, {v.name: v.type for v in func.graph.inputs}
    params = {k: _array(v) for k, v in (params or {}).items()}
    by_name = {}
    for p in func.params:
        if p.name_hint in by_name and by_name[p.name_hint] is not p:
            raise AotError(f"two function parameters are named '{p.name_hint}'")
        by_name[p.name_hint] = p
    params = {k: v for k, v in params.items() if k in by_name}     # others bind nothing, as in TVM
    b = GraphBuilder(name)
    b.reserve(by_name)                # inputs keep their names: no node may take one
    values, var_types = {}, {}

    def var_value(v, shape=None):
        if id(v) in values:
            return values[id(v)]
        t = v.type_annotation
        if v.name_hint in params:
            a = params[v.name_hint]
            if t is not None and (tuple(a.shape) != t.shape or str(a.dtype) != t.dtype):
                raise AotError(f"param '{v.name_hint}' is {a.dtype}{list(a.shape)}, the variable is declared "
                               f"{t.dtype}{list(t.shape)}")
            val = b.const(v.name_hint, a)
        else:
            if t is None and shape is None:
                return None
            shape, dtype = (t.shape, t.dtype) if t is not None else (tuple(shape), "float32")
            check_tensor_size(f"input '{v.name_hint}'", shape, dtype)
            val = Value(v.name_hint, TensorType(shape, dtype))
        var_types[v.name_hint] = val.type
        values[id(v)] = val
        return val

    def visit(e):
        if id(e) in values:
            return values[id(e)]
        if isinstance(e, Var):
            if id(e) not in {id(p) for p in func.params}:
                raise AotError(f"variable '{e.name_hint}' is not a parameter of the function")
            val = var_value(e)
            if val is None:
                raise AotError(f"variable '{e.name_hint}' has no type, and no operator gives it a shape")
            return val
        if isinstance(e, Constant):
            val = b.const("const", e.data)
        elif isinstance(e, Tuple):
            val = [visit(f) for f in e.fields]
        elif isinstance(e, TupleGetItem):
            val = visit(e.tuple_value)[e.index]
        elif isinstance(e, Call):
            val = lower_call(e)
        else:
            raise AotError(f"cannot build a {type(e).__name__} expression")
        values[id(e)] = val
        return val

    def inline(c):
        """A call of a function (a Function, or a GlobalVar of the module): its body, with its
        parameters the call's arguments."""
        callee = c.op
        if isinstance(callee, GlobalVar):
            if module is None or callee.name_hint not in module:
                raise AotError(f"call of @{callee.name_hint}: no such function in the module")
            callee = module[callee.name_hint]
            if not isinstance(callee, Function):
                raise AotError(f"call of @{c.op.name_hint}: it is not a relay function")
        if len(c.args) != len(callee.params):
            raise AotError(f"call of a function of {len(callee.params)} parameters with {len(c.args)} arguments")
        if len(inlining) > 64:
            raise AotError("function calls nest more than 64 deep (recursion is not supported)")
        inlining.append(callee)
        body = clone(callee.body, {id(p): a for p, a in zip(callee.params, c.args)})
        kept.append(body)          # values are keyed by id(): the copy must outlive the walk
        out = visit(body)
        inlining.pop()
        return out

    def lower_call(c):
        if isinstance(c.op, (Function, GlobalVar)):
            return inline(c)
        op = OPS.get(c.op)
        if op is None:
            raise AotError(f"relay operator {c.op} is not supported")
        args = [a.astuple() if isinstance(a, TupleWrapper) else a for a in c.args]
        ins = [None if isinstance(a, Var) and var_value(a) is None else visit(a) for a in args]
        if any(v is None for v in ins):
            shapes = [None if v is None else tuple(v.type.shape) for v in ins]
            inferred = op.param_shapes(c, shapes) if op.param_shapes else {}
            for k, a in enumerate(args):
                if ins[k] is None:
                    if k not in inferred:
                        raise AotError(f"{c.op}: argument {k} ('{a.name_hint}') has no type and the operator "
                                       "cannot infer its shape")
                    ins[k] = var_value(a, inferred[k])
        try:
            return op.lower(b, c, ins)
        except AotError as err:
            raise AotError(f"relay {c.op}: {err}") from None

    out = visit(func.body)
    if expr_types is not None:
        expr_types.update({k: [x.type for x in _flat(v)] if isinstance(v, list) else v.type
                           for k, v in values.items() if v is not None})
    outs = _flat(out) if isinstance(out, list) else [out]     # nested tuples: their leaves, in order
    for p in func.params:          # parameters no operator reads still are inputs (or bound)
        if id(p) not in values and var_value(p) is None:
            raise AotError(f"variable '{p.name_hint}' has no type, and no operator gives it a shape")
    inputs = [values[id(p)] for p in func.params if p.name_hint not in params]
    given = func.attrs.get("output_tensor_names")
    if given is not None:       # TVM's attribute: main's outputs named by the caller, in order
        given = [str(n) for n in given]
        if len(given) != len(outs):
            raise AotError(f"output_tensor_names names {len(given)} outputs ({', '.join(given)}); main has "
                           f"{len(outs)}")
        if len(set(given)) != len(given):
            raise AotError(f"output_tensor_names names an output twice ({', '.join(given)})")
        names = given
    else:
        names = ["output"] if len(outs) == 1 else [f"output{k}" for k in range(len(outs))]
    return b.graph(inputs, outs, names), var_types


def _flat(v):
    """The leaves of a (nested) tuple's values, in order."""
    if not isinstance(v, list):
        return [v]
    return [leaf for x in v for leaf in _flat(x)]
