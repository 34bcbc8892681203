"""topi's binary operators with numpy broadcasting (TVM: topi.add, topi.broadcast_add, ...): two
tensors make a "broadcast" stage named T_<op>; a tensor and a scalar (int, float, expression or
rank-0 tensor) an "elemwise" one; two scalars give the expression itself."""
from __future__ import annotations

from ..tir.expr import Expr, cast, eq, ge, gt, le, lt, max_, min_, ne, and_, or_
from . import tag
from .utils import TopiError, broadcast_read, broadcast_shape, compute, is_tensor, scalar


def _promote(x, y):
    """The dtype of x op y: a tensor's dtype wins over a Python scalar's."""
    for v in (x, y):
        if is_tensor(v) and v.ndim:
            return v.dtype
    for v in (x, y):
        if is_tensor(v) or isinstance(v, Expr):
            return v.dtype
    return "float32" if isinstance(x, float) or isinstance(y, float) else "int32"


def _binary(name, fn, out_dtype=None):
    def op(lhs, rhs):
        lt_, rt_ = is_tensor(lhs) and lhs.ndim > 0, is_tensor(rhs) and rhs.ndim > 0
        dtype = _promote(lhs, rhs)
        if not lt_ and not rt_:
            if is_tensor(lhs) or is_tensor(rhs):        # rank-0 tensors: still a stage
                return compute((), lambda: fn(scalar(lhs, dtype), scalar(rhs, dtype)), f"T_{name}", tag.ELEMWISE)
            return fn(scalar(lhs, dtype), scalar(rhs, dtype))
        if lt_ and rt_:
            if lhs.dtype != rhs.dtype:
                raise TopiError(f"topi.{name}: operands of dtypes {lhs.dtype} and {rhs.dtype}; cast one "
                                f"(topi.cast) first")
            shape = broadcast_shape(lhs.shape, rhs.shape, f"topi.{name}")
            return compute(shape, lambda *i: fn(broadcast_read(lhs, i), broadcast_read(rhs, i)),
                           f"T_{name}", tag.BROADCAST)
        if lt_:
            r = scalar(rhs, dtype)
            return compute(lhs.shape, lambda *i: fn(lhs(*i), r), f"T_{name}", tag.ELEMWISE)
        le_ = scalar(lhs, dtype)
        return compute(rhs.shape, lambda *i: fn(le_, rhs(*i)), f"T_{name}", tag.ELEMWISE)
    op.__name__ = name
    op.__doc__ = f"topi.{name}(lhs, rhs): elementwise with numpy broadcasting; a scalar operand is broadcast."
    return op


add = _binary("add", lambda a, b: a + b)
subtract = _binary("subtract", lambda a, b: a - b)
multiply = _binary("multiply", lambda a, b: a * b)
divide = _binary("divide", lambda a, b: a / b)
floor_divide = _binary("floor_divide", lambda a, b: a // b)
mod = _binary("mod", lambda a, b: a % b)
maximum = _binary("maximum", lambda a, b: max_(a, b))
minimum = _binary("minimum", lambda a, b: min_(a, b))
power = _binary("power", lambda a, b: _pow(a, b))
less = _binary("less", lt)
greater = _binary("greater", gt)
less_equal = _binary("less_equal", le)
greater_equal = _binary("greater_equal", ge)
equal = _binary("equal", eq)
not_equal = _binary("not_equal", ne)
logical_and = _binary("logical_and", and_)
logical_or = _binary("logical_or", or_)


def _pow(a, b):
    from ..tir.expr import call
    return call("pow", a, cast(a.dtype, b) if isinstance(b, Expr) else b)


# TVM's older names for the same operators
broadcast_add = add
broadcast_sub = subtract
broadcast_mul = multiply
broadcast_div = divide
broadcast_maximum = maximum
broadcast_minimum = minimum


def broadcast_to(data, shape):
    """data broadcast to `shape` (numpy.broadcast_to)."""
    shape = tuple(shape)
    out = broadcast_shape(data.shape, shape, "topi.broadcast_to")
    if len(out) != len(shape) or any(not _same(a, b) for a, b in zip(out, shape)):
        raise TopiError(f"topi.broadcast_to: shape {list(data.shape)} cannot be broadcast to {list(shape)}")
    return compute(shape, lambda *i: broadcast_read(data, i), "T_broadcast_to", tag.BROADCAST)


def _same(a, b):
    from .utils import dims_equal
    return dims_equal(a, b)

