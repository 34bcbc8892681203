"""Einsum: each output letter is a loop, each other letter a reduction axis."""
from __future__ import annotations

import string

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Const
from .registry import NUMERIC, Op, Pattern, register


def parse(eq, shapes, node):
    """(input letter lists, output letters, letter -> size) with '...' expanded."""
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise OpError(node, f"equation '{eq}' has {len(terms)} operands, the node has {len(shapes)}")
    free = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in eq]
    ell_rank = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = free[:ell_rank]
    letters, sizes = [], {}
    for t, s in zip(terms, shapes):
        if "..." in t:
            pre, _, post = t.partition("...")
            n = len(s) - len(pre) - len(post)
            t = list(pre) + ell[ell_rank - n:] + list(post)
        else:
            t = list(t)
        if len(t) != len(s):
            raise OpError(node, f"operand '{''.join(t)}' does not match rank {len(s)}")
        for c, d in zip(t, s):
            if c in sizes and sizes[c] != d and d != 1 and sizes[c] != 1:
                raise OpError(node, f"letter '{c}' has sizes {sizes[c]} and {d}")
            sizes[c] = max(sizes.get(c, 1), d)
        letters.append(t)
    if arrow:
        out = list(rhs.replace("...", "".join(ell)))
    else:
        counts = {}
        for t in letters:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, k in counts.items() if k == 1 and c not in ell)
    return letters, out, sizes


@register
class Einsum(Op):
    name = "Einsum"
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = NUMERIC

    def infer(self, node):
        letters, out, sizes = parse(node.attrs["equation"], [v.type.shape for v in node.inputs], node)
        return [TensorType(tuple(sizes[c] for c in out), node.inputs[0].type.dtype)]

    def reference(self, node, *xs):
        return [np.einsum(node.attrs["equation"], *xs).astype(xs[0].dtype)]

    def compute(self, node, *xs):
        letters, out, sizes = parse(node.attrs["equation"], [x.shape for x in xs], node)
        red = [c for c in sizes if c not in out]

        def body(*o):
            env = dict(zip(out, o))
            rs = [te.reduce_axis(sizes[c], f"r_{c}") for c in red]
            env.update({c: r.var for c, r in zip(red, rs)})
            prod = None
            for x, t in zip(xs, letters):
                v = x(*[Const(0, "int32") if d == 1 and sizes[c] != 1 else env[c] for c, d in zip(t, x.shape)])
                prod = v if prod is None else prod * v
            return te.sum(prod, rs) if rs else prod
        return [te.compute(tuple(sizes[c] for c in out), body, "einsum")]
