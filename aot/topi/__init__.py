"""aot.topi: TVM's operator inventory (`from tvm import topi`): numpy-style operators as
tensor-expression stages (aot.te) with TVM's names and tags, and schedules for them
(topi.generic for host targets, topi.cuda for GPU targets) written with te's schedule
primitives. Importing it gives te.Tensor numpy-style `+ - * /` where te does not already
(TVM's topi installs the same operators)."""
from . import cuda, generic, nn, tag, testing, utils  # noqa: F401
from .broadcast import (add, broadcast_add, broadcast_div, broadcast_maximum, broadcast_minimum,  # noqa: F401
                        broadcast_mul, broadcast_sub, broadcast_to, divide, equal, floor_divide, greater,
                        greater_equal, less, less_equal, logical_and, logical_or, maximum, minimum, mod,
                        multiply, not_equal, power, subtract)
from .math import (abs, cast, ceil, clip, erf, exp, floor, identity, log, negative, round, rsqrt,  # noqa: F401
                   sigmoid, sqrt, tanh)
from .reduction import all, any, argmax, argmin, max, min, prod, sum  # noqa: F401
from .tensor import elemwise_sum, full, full_like  # noqa: F401
from .transform import concatenate, expand_dims, reshape, squeeze, strided_slice, transpose  # noqa: F401


def _bind_tensor_operators():
    """te.Tensor `+ - * /` as topi's broadcasting operators, unless te defines them itself."""
    from .. import te
    ops = {"__add__": lambda a, b: add(a, b), "__radd__": lambda a, b: add(b, a),
           "__sub__": lambda a, b: subtract(a, b), "__rsub__": lambda a, b: subtract(b, a),
           "__mul__": lambda a, b: multiply(a, b), "__rmul__": lambda a, b: multiply(b, a),
           "__truediv__": lambda a, b: divide(a, b), "__rtruediv__": lambda a, b: divide(b, a),
           "__neg__": lambda a: negative(a)}
    for name, fn in ops.items():
        if name not in vars(te.Tensor):
            setattr(te.Tensor, name, fn)


_bind_tensor_operators()
