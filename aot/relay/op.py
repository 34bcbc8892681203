"""Relay operators: each is a constructor with TVM's name and arguments, and its lowering onto
the registered graph ops (aot/ops/) with their canonical (ONNX) attributes, written together
(one relay op, one place). `param_shapes` gives the shape of an argument left untyped (a weight
declared as relay.var("weight")) from the typed ones, as TVM's type relations do.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AotError
from .expr import Call, Tuple, TupleWrapper, as_expr


@dataclass
class RelayOp:
    lower: object                 # (builder, call, input values) -> value | list of values
    param_shapes: object = None   # (call, [shape or None per argument]) -> {argument index: shape}
    outputs: int = 1


OPS: dict = {}


def register(name, lower, param_shapes=None, outputs=1):
    OPS[name] = RelayOp(lower, param_shapes, outputs)


def make(name, args, **attrs):
    call = Call(name, [as_expr(a) for a in args], attrs)
    n = OPS[name].outputs
    return TupleWrapper(call, n) if n > 1 else call


def ints(v, n):
    """An int or a sequence as a list of n ints."""
    v = [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
    return v * n if len(v) == 1 else v


def pads_2d(padding):
    """TVM's padding: one int, (vertical, horizontal) or (top, left, bottom, right) -> ONNX pads."""
    p = ints(padding, 1)
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return [p[0], p[1], p[0], p[1]]
    if len(p) == 4:
        return p
    raise AotError(f"padding {padding} has {len(p)} values: give 1, 2 or 4")


def shape_const(b, values):
    return b.const("shape", np.asarray(values, np.int64))


# -- elementwise --------------------------------------------------------------------------------------
_BINARY = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "power": "Pow",
           "maximum": "Max", "minimum": "Min", "equal": "Equal", "less": "Less", "greater": "Greater"}
_UNARY = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sigmoid": "Sigmoid", "tanh": "Tanh", "negative": "Neg",
          "abs": "Abs", "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "round": "Round", "sin": "Sin",
          "cos": "Cos", "nn.relu": "Relu"}


def same_shape(call, shapes):
    known = next((s for s in shapes if s is not None), None)
    return {k: known for k, s in enumerate(shapes) if s is None and known is not None}


for _name, _onnx in _BINARY.items():
    register(_name, lambda b, c, ins, _o=_onnx: b.op(_o, ins), same_shape)
for _name, _onnx in _UNARY.items():
    register(_name, lambda b, c, ins, _o=_onnx: b.op(_o, ins), same_shape)


def add(lhs, rhs):
    return make("add", [lhs, rhs])


def subtract(lhs, rhs):
    return make("subtract", [lhs, rhs])


def multiply(lhs, rhs):
    return make("multiply", [lhs, rhs])


def divide(lhs, rhs):
    return make("divide", [lhs, rhs])


def power(lhs, rhs):
    return make("power", [lhs, rhs])


def maximum(lhs, rhs):
    return make("maximum", [lhs, rhs])


def minimum(lhs, rhs):
    return make("minimum", [lhs, rhs])


def equal(lhs, rhs):
    return make("equal", [lhs, rhs])


def less(lhs, rhs):
    return make("less", [lhs, rhs])


def greater(lhs, rhs):
    return make("greater", [lhs, rhs])


def exp(x):
    return make("exp", [x])


def log(x):
    return make("log", [x])


def sqrt(x):
    return make("sqrt", [x])


def sigmoid(x):
    return make("sigmoid", [x])


def tanh(x):
    return make("tanh", [x])


def negative(x):
    return make("negative", [x])


def abs(x):        # noqa: A001  (TVM's name)
    return make("abs", [x])


def erf(x):
    return make("erf", [x])


def floor(x):
    return make("floor", [x])


def ceil(x):
    return make("ceil", [x])


def round(x):      # noqa: A001
    return make("round", [x])


def sin(x):
    return make("sin", [x])


def cos(x):
    return make("cos", [x])


def clip(a, a_min, a_max):
    return make("clip", [a], a_min=float(a_min), a_max=float(a_max))


def _clip(b, c, ins):
    dt = ins[0].type.dtype
    return b.op("Clip", [ins[0], b.const("min", np.asarray(c.attrs["a_min"], dt)),
                         b.const("max", np.asarray(c.attrs["a_max"], dt))])


register("clip", _clip, same_shape)


# -- shapes and data movement -------------------------------------------------------------------------
def reshape(data, newshape):
    return make("reshape", [data], newshape=[int(d) for d in ints(newshape, 1)])


def _reshape(b, c, ins):
    shape = c.attrs["newshape"]
    if any(d < -1 for d in shape):
        raise AotError(f"reshape: the special values {sorted(d for d in shape if d < -1)} of TVM's newshape are "
                       "not supported (0 copies a dimension, -1 infers one)")
    return b.op("Reshape", [ins[0], shape_const(b, shape)])


register("reshape", _reshape)


def transpose(data, axes=None):
    return make("transpose", [data], axes=None if axes is None else [int(a) for a in axes])


register("transpose", lambda b, c, ins: b.op("Transpose", ins, {} if c.attrs["axes"] is None
                                             else {"perm": c.attrs["axes"]}))


def squeeze(data, axis=None):
    return make("squeeze", [data], axis=None if axis is None else [int(a) for a in ints(axis, 1)])


def _squeeze(b, c, ins):
    axes = c.attrs["axis"]
    if axes is None:
        axes = [d for d, n in enumerate(ins[0].type.shape) if n == 1]
    return b.op("Squeeze", [ins[0], shape_const(b, axes)])


register("squeeze", _squeeze)


def expand_dims(data, axis, num_newaxis=1):
    return make("expand_dims", [data], axis=int(axis), num_newaxis=int(num_newaxis))


def _expand_dims(b, c, ins):
    rank = len(ins[0].type.shape)
    a = c.attrs["axis"] + (rank + 1 if c.attrs["axis"] < 0 else 0)
    return b.op("Unsqueeze", [ins[0], shape_const(b, list(range(a, a + c.attrs["num_newaxis"])))])


register("expand_dims", _expand_dims)


def concatenate(data, axis):
    fields = data.fields if isinstance(data, Tuple) else list(data)
    return make("concatenate", fields, axis=int(axis))


register("concatenate", lambda b, c, ins: b.op("Concat", ins, {"axis": c.attrs["axis"]}))


def _reduce(onnx_op):
    def lower(b, c, ins):
        axis = c.attrs["axis"]
        rank = len(ins[0].type.shape)
        axes = list(range(rank)) if axis is None else [a % rank for a in axis]
        if c.attrs["exclude"]:
            axes = [d for d in range(rank) if d not in axes]
        return b.op(onnx_op, [ins[0], shape_const(b, axes)], {"keepdims": int(c.attrs["keepdims"])})
    return lower


for _name, _onnx in (("sum", "ReduceSum"), ("mean", "ReduceMean"), ("max", "ReduceMax"), ("min", "ReduceMin"),
                     ("prod", "ReduceProd")):
    register(_name, _reduce(_onnx))


def _reduction(name):
    def fn(data, axis=None, keepdims=False, exclude=False):
        return make(name, [data], axis=None if axis is None else ints(axis, 1), keepdims=bool(keepdims),
                    exclude=bool(exclude))
    fn.__name__ = name
    return fn


sum = _reduction("sum")      # noqa: A001  (TVM's names)
mean = _reduction("mean")
max = _reduction("max")      # noqa: A001
min = _reduction("min")      # noqa: A001
prod = _reduction("prod")
