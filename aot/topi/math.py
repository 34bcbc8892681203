"""topi's elementwise math (TVM: topi.exp, topi.sqrt, ...): one "elemwise" stage T_<name> each."""
from __future__ import annotations

from ..tir.expr import Const, Unary, call, cast as _cast, is_float, lt, select
from . import tag
from .utils import TopiError, compute


def _unary(name, fn, floats_only=True):
    def op(x):
        if floats_only and not is_float(x.dtype):
            raise TopiError(f"topi.{name}: takes a float tensor, not {x.dtype} (cast it first)")
        return compute(x.shape, lambda *i: fn(x(*i)), f"T_{name}", tag.ELEMWISE)
    op.__name__ = name
    op.__doc__ = f"topi.{name}(x): elementwise."
    return op


exp = _unary("exp", lambda v: call("exp", v))
log = _unary("log", lambda v: call("log", v))
sqrt = _unary("sqrt", lambda v: call("sqrt", v))
rsqrt = _unary("rsqrt", lambda v: Const(1.0, v.dtype) / call("sqrt", v))
tanh = _unary("tanh", lambda v: call("tanh", v))
erf = _unary("erf", lambda v: call("erf", v))
floor = _unary("floor", lambda v: call("floor", v))
ceil = _unary("ceil", lambda v: call("ceil", v))
round = _unary("round", lambda v: call("round", v))
sigmoid = _unary("sigmoid", lambda v: Const(1.0, v.dtype) / (Const(1.0, v.dtype) + call("exp", Unary("neg", v))))
negative = _unary("negative", lambda v: Unary("neg", v), floats_only=False)
abs = _unary("abs", lambda v: select(lt(v, Const(0, v.dtype)), Unary("neg", v), v), floats_only=False)
identity = _unary("identity", lambda v: v, floats_only=False)


def cast(x, dtype):
    """x converted to dtype (a tensor: a T_cast stage; a scalar: the expression)."""
    from .utils import is_tensor, scalar
    if not is_tensor(x):
        return _cast(dtype, scalar(x, dtype))
    return compute(x.shape, lambda *i: _cast(dtype, x(*i)), "T_cast", tag.ELEMWISE)


def clip(x, a_min, a_max):
    """x limited to [a_min, a_max]."""
    lo, hi = Const(a_min, x.dtype), Const(a_max, x.dtype)
    return compute(x.shape, lambda *i: select(lt(x(*i), lo), lo, select(lt(hi, x(*i)), hi, x(*i))), "T_clip",
                   tag.ELEMWISE)
