"""topi.nn's activations (TVM: relu, leaky_relu, prelu): elementwise stages."""
from __future__ import annotations

from ...tir.expr import Const, lt, select
from .. import tag
from ..utils import TopiError, compute, get_const_tuple


def relu(x):
    """max(x, 0) elementwise."""
    zero = Const(0, x.dtype)
    return compute(x.shape, lambda *i: select(lt(x(*i), zero), zero, x(*i)), "compute", tag.ELEMWISE)


def leaky_relu(x, alpha):
    """x where x > 0, else alpha * x."""
    zero, a = Const(0, x.dtype), Const(float(alpha), x.dtype)
    return compute(x.shape, lambda *i: select(lt(x(*i), zero), x(*i) * a, x(*i)), "compute", tag.ELEMWISE)


def prelu(x, slope, axis=1):
    """x where x > 0, else slope[c] * x, c the index along `axis`."""
    if slope.ndim != 1 or get_const_tuple(slope.shape)[0] != get_const_tuple(x.shape)[axis]:
        raise TopiError(f"topi.nn.prelu: slope {list(slope.shape)} must be 1-D with dimension {axis} of "
                        f"{list(x.shape)}")
    zero = Const(0, x.dtype)
    return compute(x.shape, lambda *i: select(lt(x(*i), zero), x(*i) * slope(i[axis]), x(*i)), "compute",
                   tag.BROADCAST)
