"""Relay-style expressions: what a Python user writes to build a network by hand, with TVM's
names (var, Call, Tuple, Function, IRModule). They are only a recipe: build() turns a Function
into the one graph IR (aot/ir/graph.py) through the same node builder the ONNX and TFLite
importers use (to_graph.py), so nothing below computes or types anything itself beyond what a
parameter's shape needs."""
from __future__ import annotations

import numpy as np

from ..errors import AotError


class Any:
    """relay.Any(): a dimension known only at run time, which this compiler does not take (its
    graphs are static); a type using it is refused by name."""

    def __repr__(self):
        return "?"


def _dim(d):
    if isinstance(d, (int, np.integer)):
        return int(d)
    if hasattr(d, "value") and isinstance(d.value, (int, np.integer)):    # an IntImm
        return int(d.value)
    raise AotError(f"relay.TensorType: dimension {d!r} is not a constant; shapes are static here (relay.Any and "
                   "symbolic sizes are not supported: give the size, or fix it with from_onnx(shape=...))")


class MissingName(AotError, AttributeError):
    """A TVM relay name this compiler does not have: refused by name, and still an AttributeError
    so that hasattr() and getattr(..., default) answer as for any missing attribute."""


def missing(module, name, what="operator"):
    if name.startswith("__"):
        return AttributeError(f"module '{module}' has no attribute '{name}'")
    return MissingName(f"{module}.{name} is not supported: no such relay {what} here (README lists the relay "
                       "ops; models with other ops come in through relay.frontend.from_onnx / from_tflite)")


class TensorType:
    """relay.TensorType(shape, dtype)."""

    def __init__(self, shape, dtype="float32"):
        self.shape = tuple(_dim(d) for d in shape)
        self.dtype = str(np.dtype(dtype))

    def __repr__(self):
        return f"TensorType({list(self.shape)}, {self.dtype})"


class Expr:
    def __add__(self, o):
        return Call("add", [self, as_expr(o)])

    def __sub__(self, o):
        return Call("subtract", [self, as_expr(o)])

    def __mul__(self, o):
        return Call("multiply", [self, as_expr(o)])

    def __truediv__(self, o):
        return Call("divide", [self, as_expr(o)])


class Var(Expr):
    def __init__(self, name_hint, type_annotation=None):
        self.name_hint = name_hint
        self.type_annotation = type_annotation

    def __repr__(self):
        t = self.type_annotation
        return f"Var({self.name_hint}" + (f", ty={t!r})" if t is not None else ")")


class Constant(Expr):
    def __init__(self, data):
        self.data = np.asarray(data)


class OpName(str):
    """An operator of a call: its name, a str (so calls compare and print by it), with TVM's Op
    attribute .name, which programs read (call.op.name)."""

    @property
    def name(self):
        return str(self)


class Call(Expr):
    """An operator (its name), a Function or a GlobalVar (another function of the module) applied
    to argument expressions, with TVM's attribute names."""

    def __init__(self, op, args, attrs=None, type_args=None, span=None):
        if hasattr(op, "name") and not isinstance(op, (str, Expr)):     # relay.op.get(name)
            op = op.name
        if not isinstance(op, (str, Function, GlobalVar)):
            raise AotError(f"relay.Call: the callee is an operator name, a Function or a GlobalVar, "
                           f"not {type(op).__name__}")
        if isinstance(op, str) and not isinstance(op, OpName):
            op = OpName(op)
        self.op, self.args, self.attrs = op, [as_expr(a) for a in args], dict(attrs or {})

    def __repr__(self):
        return f"Call({self.op}, {len(self.args)} args)"


class Tuple(Expr):
    def __init__(self, fields):
        self.fields = [as_expr(f) for f in fields]

    def __getitem__(self, i):
        return self.fields[i]

    def __len__(self):
        return len(self.fields)


class TupleGetItem(Expr):
    def __init__(self, tuple_value, index):
        self.tuple_value, self.index = tuple_value, int(index)


class TupleWrapper:
    """An op with several outputs (batch_norm): index it for one, astuple() for all."""

    def __init__(self, tuple_value, size):
        self.tuple_value, self.size = tuple_value, size

    def __getitem__(self, i):
        if not -self.size <= i < self.size:
            raise IndexError(f"{self.tuple_value.op} has {self.size} outputs")
        return TupleGetItem(self.tuple_value, i % self.size)

    def __len__(self):
        return self.size

    def astuple(self):
        return self.tuple_value


class Function(Expr):
    """relay.Function(params, body): params are the Vars the body reads (analysis.free_vars)."""

    def __init__(self, params, body, ret_type=None, type_params=None, attrs=None, span=None):
        self.params = list(params)
        self.body = body.astuple() if isinstance(body, TupleWrapper) else body
        self.ret_type = ret_type
        self.attrs = dict(attrs or {})
        for p in self.params:
            if not isinstance(p, Var):
                raise AotError(f"Function parameters must be relay Vars, not {type(p).__name__}")

    def with_attr(self, key, value):
        """A copy with one more attribute (Composite, Compiler, ...), as TVM's."""
        return Function(self.params, self.body, self.ret_type, attrs=dict(self.attrs, **{key: value}))

    def __call__(self, *args):
        return Call(self, list(args))

    def __str__(self):
        from .printer import function_text
        return function_text(self)


class GraphFunction(Expr):
    """The "main" of a module a frontend imported (relay.frontend.from_onnx / from_tflite): the
    graph IR of the model, and the model itself, which relay.build compiles as `aot compile`
    does (source None: a graph made by a pass, compiled as it is). Its params are the model's
    inputs, typed."""

    def __init__(self, graph, source=None, input_shapes=None, fmt="graph"):
        self.graph, self.source, self.input_shapes, self.format = graph, source, input_shapes, fmt
        self.params = [Var(v.name, TensorType(v.type.shape, v.type.dtype)) for v in graph.inputs]
        for p in self.params:
            p.checked_type = p.type_annotation
        outs = [TensorType(v.type.shape, v.type.dtype) for v in graph.outputs]
        self.ret_type = outs[0] if len(outs) == 1 else TupleType(outs)

    @property
    def attrs(self):
        """As TVM's frontends leave them: a TFLite main's output_tensor_names are the model's
        output tensors' names, sanitised as TVM does (an ONNX main has none)."""
        from ..ir.module import DictAttrs
        from ..names import tvm_sanitize
        if self.format == "tflite":
            return DictAttrs(output_tensor_names=[tvm_sanitize(n) for n in self.graph.output_names])
        return DictAttrs()

    def __str__(self):
        from ..ir.graph import print_graph
        return print_graph(self.graph)


class TupleType:
    def __init__(self, fields):
        self.fields = list(fields)

    def __repr__(self):
        return f"TupleType([{', '.join(repr(f) for f in self.fields)}])"


class FuncType:
    """A function's type after InferType: its parameters' types and its result's."""

    def __init__(self, arg_types, ret_type):
        self.arg_types, self.ret_type = list(arg_types), ret_type

    def __repr__(self):
        return f"FuncType([{', '.join(repr(a) for a in self.arg_types)}], {self.ret_type!r})"


class IRModule:
    """Functions by name, "main" the one relay.build builds (IRModule.from_expr); keys may be
    names or GlobalVars, as TVM's. TVM has one IRModule for relay and TIR: given TIR functions
    only, this makes the TIR module (aot.tir's, which aot.build and aot.lower take)."""

    def __new__(cls, functions=None, type_definitions=None):
        from ..tir.schedule_api import PrimModule
        from ..tir.stmt import PrimFunc
        fs = dict(functions or {})
        if fs and all(isinstance(f, PrimFunc) for f in fs.values()):
            return PrimModule({getattr(k, "name_hint", k): f for k, f in fs.items()})
        return super().__new__(cls)

    def __init__(self, functions=None, type_definitions=None):
        self.functions = {}
        self._gvars = {}
        for k, f in dict(functions or {}).items():
            self[k] = f

    @staticmethod
    def from_expr(expr, functions=None, type_defs=None):
        if isinstance(expr, TupleWrapper):
            expr = expr.astuple()
        if not isinstance(expr, (Function, GraphFunction)):
            expr = Function(free_vars(expr), expr)
        return IRModule({"main": expr})

    def __getitem__(self, name):
        name = getattr(name, "name_hint", name)
        if name not in self.functions:
            raise AotError(f"the module has no function '{name}' (its functions: {', '.join(self.functions)})")
        return self.functions[name]

    def __setitem__(self, name, func):
        key = getattr(name, "name_hint", name)
        if isinstance(name, GlobalVar):
            self._gvars[key] = name
        if isinstance(func, TupleWrapper):
            func = func.astuple()
        if isinstance(func, Expr) and not isinstance(func, (Function, GraphFunction)):
            func = Function(free_vars(func), func)
        self.functions[key] = func

    def __contains__(self, name):
        return getattr(name, "name_hint", name) in self.functions

    def get_global_vars(self):
        return [self.get_global_var(n) for n in self.functions]

    def get_global_var(self, name):
        if name not in self.functions:
            raise AotError(f"the module has no function '{name}'")
        return self._gvars.setdefault(name, GlobalVar(name))

    def astext(self, show_meta_data=True):
        return str(self)

    def __str__(self):
        from .printer import module_text
        return module_text(self)

    __repr__ = __str__


class GlobalVar(Expr):
    """A function of the module, by name: relay.Call(gv, args) (or gv(*args)) calls it."""

    def __init__(self, name_hint, type_annot=None):
        self.name_hint = name_hint

    def __call__(self, *args):
        return Call(self, list(args))

    def __repr__(self):
        return f"GlobalVar({self.name_hint})"


def free_vars(expr):
    """The variables expr reads and does not bind, in the order they first appear (depth first,
    arguments left to right), as TVM lists them (relay.analysis.free_vars)."""
    seen, order, bound = set(), [], set()

    def visit(e):
        if isinstance(e, TupleWrapper):
            e = e.astuple()
        if id(e) in seen:
            return
        seen.add(id(e))
        if isinstance(e, Var):
            if id(e) not in bound:
                order.append(e)
        elif isinstance(e, Call):
            if isinstance(e.op, Function):
                visit(e.op)
            for a in e.args:
                visit(a)
        elif isinstance(e, Tuple):
            for f in e.fields:
                visit(f)
        elif isinstance(e, TupleGetItem):
            visit(e.tuple_value)
        elif isinstance(e, Function):
            bound.update(id(p) for p in e.params)
            visit(e.body)
    visit(expr)
    return order


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
            out = Call(c(e.op) if isinstance(e.op, Function) else e.op, [c(a) for a in e.args], dict(e.attrs))
        elif isinstance(e, Tuple):
            out = Tuple([c(f) for f in e.fields])
        elif isinstance(e, TupleGetItem):
            out = TupleGetItem(c(e.tuple_value), e.index)
        elif isinstance(e, Function):
            out = Function([c(p) for p in e.params], c(e.body), e.ret_type, attrs=e.attrs)
        else:
            return e
        memo[id(e)] = out
        return out
    return c(expr)


def as_expr(x):
    if isinstance(x, TupleWrapper):
        return x.astuple()
    if isinstance(x, Expr):
        return x
    if isinstance(x, (list, tuple)):
        return Tuple(x)
    return Constant(np.asarray(x, np.float32) if isinstance(x, float) else np.asarray(x))


def var(name_hint, type_annotation=None, shape=None, dtype="float32"):
    """relay.var(name, TensorType(...)) or relay.var(name, shape=..., dtype=...); a Var without a
    type is a parameter whose shape build() infers from the op that reads it."""
    if type_annotation is None and shape is not None:
        type_annotation = TensorType(shape, dtype)
    elif isinstance(type_annotation, str):
        type_annotation = TensorType((), type_annotation) if shape is None else TensorType(shape, type_annotation)
    return Var(name_hint, type_annotation)


def const(value, dtype=None):
    a = np.asarray(value)
    if dtype is not None:
        a = a.astype(dtype)
    elif a.dtype == np.float64:
        a = a.astype(np.float32)          # as TVM: a Python float is float32
    elif a.dtype == np.int64 and a.ndim == 0:
        a = a.astype(np.int32)
    return Constant(a)


def _register_with_ir():
    """tvm.ir.IRModule takes relay functions too: aot.ir's module hands them to this one."""
    from ..ir import module as ir_module
    ir_module.RELAY_MODULE[:] = [IRModule, Expr]


_register_with_ir()
