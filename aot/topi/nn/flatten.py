"""topi.nn.flatten: [batch, d1, d2, ...] -> [batch, d1 * d2 * ...] in row-major order."""
from __future__ import annotations

from ...tir.expr import Const
from .. import tag
from ..utils import TopiError, compute, get_const_tuple, prod


def flatten(data):
    shape = get_const_tuple(data.shape)
    if not all(isinstance(d, int) for d in shape[1:]):
        raise TopiError(f"topi.nn.flatten: {data.name}'s dimensions after the first must be constant, not "
                        f"{list(data.shape)}")
    inner = prod(shape[1:])
    return compute((shape[0], inner), lambda i, j: data.flat(i * Const(inner, "int32") + j), "compute",
                   tag.INJECTIVE)
