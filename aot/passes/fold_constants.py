"""Constant folding: nodes whose inputs are all known are replaced by their values."""
from __future__ import annotations

import numpy as np

from ..ops import get_op
from . import graph_pass

# Beyond this many elements a folded result is kept only if it is a splat or broadcast view,
# so that exporters' shape helpers fold but nothing explodes the constant data.
MAX_DENSE_FOLD = 1 << 24


def compact(a: np.ndarray) -> np.ndarray:
    """A broadcast view of the smallest array holding a's data (splats cost one element)."""
    a = np.asarray(a)
    if a.ndim == 0 or a.size <= 1:
        return a
    if any(s == 0 for s in a.strides) or a.size > 4096:
        base = a[tuple(slice(0, 1) if st == 0 else slice(None) for st in a.strides)]
        if base.size > 1 and a.size > 4096:
            first = base.reshape(-1)[0]
            if np.all(base == first) and not (base.dtype.kind == "f" and np.isnan(first)):
                base = base.reshape(-1)[:1].reshape((1,) * a.ndim)
        if base.size < a.size:
            return np.broadcast_to(np.ascontiguousarray(base), a.shape)
    return a


def fold_node(node):
    """The node's output values if they can be known at compile time, else None."""
    op = get_op(node.op)
    if op is None:
        return None
    ins = [v for v in node.inputs if v is not None]
    if not op.fold_from_types and not all(v.is_const for v in ins):
        return None
    try:
        outs = op.reference(node, *[None if v is None else v.const for v in node.inputs])
    except NotImplementedError:
        return None
    result = []
    for o, val in zip(node.outputs, outs):
        val = np.asarray(val)
        if val.dtype != np.dtype(o.type.dtype):
            val = val.astype(o.type.dtype)
        val = compact(val.reshape(o.type.shape))
        if val.size > MAX_DENSE_FOLD and all(st != 0 for st in val.strides):
            return None
        result.append(val)
    return result


@graph_pass
def fold_constants(graph):
    """Replace every foldable node by constants; returns (graph, number folded)."""
    nodes, folded = [], 0
    for n in graph.nodes:
        vals = fold_node(n)
        if vals is None:
            nodes.append(n)
            continue
        for o, v in zip(n.outputs, vals):
            o.const = v
            o.producer = None
        folded += 1
    return graph.with_nodes(nodes), folded
