"""Dense anchors: Gemm and MatMul."""
from __future__ import annotations

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from .registry import FLOATS, Op, Pattern, broadcast_shapes, register


@register
class Gemm(Op):
    name = "Gemm"
    same_dtype = (1, 2)
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = FLOATS
    min_inputs = 2

    def canon(self, ctx):
        ctx.attrs = {"alpha": float(ctx.attrs.get("alpha", 1.0)), "beta": float(ctx.attrs.get("beta", 1.0)),
                     "transA": int(ctx.attrs.get("transA", 0)), "transB": int(ctx.attrs.get("transB", 0))}

    def _mkn(self, node):
        a, b = node.inputs[0].type.shape, node.inputs[1].type.shape
        if len(a) != 2 or len(b) != 2:
            raise OpError(node, f"Gemm needs 2-D inputs, got {list(a)} and {list(b)}")
        m, k = (a[1], a[0]) if node.attrs["transA"] else a
        k2, n = (b[1], b[0]) if node.attrs["transB"] else b
        if k != k2:
            raise OpError(node, f"inner dimensions differ: {k} vs {k2}")
        return m, k, n

    def infer(self, node):
        m, k, n = self._mkn(node)
        if len(node.inputs) > 2 and node.inputs[2] is not None:
            broadcast_shapes(node, node.inputs[2].type.shape, (m, n))
        return [TensorType((m, n), node.inputs[0].type.dtype)]

    def reference(self, node, a, b, c=None):
        at = a.T if node.attrs["transA"] else a
        bt = b.T if node.attrs["transB"] else b
        y = node.attrs["alpha"] * (at.astype(np.float64) @ bt.astype(np.float64))
        if c is not None:
            y = y + node.attrs["beta"] * c
        return [y.astype(a.dtype)]

    def compute(self, node, a, b, c=None):
        m, k, n = self._mkn(node)
        ta, tb, alpha, beta = node.attrs["transA"], node.attrs["transB"], node.attrs["alpha"], node.attrs["beta"]

        def body(i, j):
            r = te.reduce_axis(k, "rk")
            av = a(r.var, i) if ta else a(i, r.var)
            bv = b(j, r.var) if tb else b(r.var, j)
            return te.sum(av * bv, r)
        mm = te.compute((m, n), body, "dense", ["i", "j"])
        if alpha == 1.0 and (c is None or beta == 0.0):
            return [mm]

        def epi(i, j):
            y = mm(i, j) if alpha == 1.0 else mm(i, j) * alpha
            if c is not None and beta != 0.0:
                cv = c(te.broadcast_index((i, j), c.shape))
                y = y + (cv if beta == 1.0 else cv * beta)
            return y
        return [te.compute((m, n), epi, "dense_epilogue", ["i", "j"])]


@register
class MatMul(Op):
    name = "MatMul"
    same_dtype = (1,)
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    # bfloat16 is left out: numpy/ml_dtypes (the ONNX reference) accumulate it in a way we
    # have not reproduced, and an 8-bit mantissa makes any difference visible
    dtypes = ("float32", "float64", "float16", "int32", "int64")
    min_inputs = 2

    def _shapes(self, node):
        a, b = list(node.inputs[0].type.shape), list(node.inputs[1].type.shape)
        if not a or not b:
            raise OpError(node, "MatMul inputs must have rank >= 1")
        a2 = [1] + a if len(a) == 1 else a
        b2 = b + [1] if len(b) == 1 else b
        if a2[-1] != b2[-2]:
            raise OpError(node, f"inner dimensions differ: {a2[-1]} vs {b2[-2]}")
        batch = broadcast_shapes(node, tuple(a2[:-2]), tuple(b2[:-2]))
        out = list(batch) + ([a2[-2]] if len(a) > 1 else []) + ([b2[-1]] if len(b) > 1 else [])
        return a2, b2, batch, out

    def infer(self, node):
        return [TensorType(tuple(self._shapes(node)[3]), node.inputs[0].type.dtype)]

    def reference(self, node, a, b):
        return [np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)]

    def compute(self, node, a, b):
        a2, b2, batch, out = self._shapes(node)
        ra, rb, nb = len(a.shape), len(b.shape), len(batch)
        K = a2[-1]

        def body(*o):
            bidx = list(o[:nb])
            i = o[nb] if ra > 1 else None
            j = o[-1] if rb > 1 else None
            r = te.reduce_axis(K, "rk")
            ai = te.broadcast_index(bidx, a2[:-2]) + ([i] if ra > 1 else []) + [r.var]
            bi = te.broadcast_index(bidx, b2[:-2]) + [r.var] + ([j] if rb > 1 else [])
            return te.sum(a(ai) * b(bi), r)
        return [te.compute(tuple(out), body, "matmul")]
