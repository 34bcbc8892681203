"""Reductions over axes (ReduceSum, ReduceMean, ...)."""
from __future__ import annotations

import numpy as np

from .. import te
from ..ir.graph import TensorType
from ..tir.expr import Const, call
from .registry import NUMERIC, Op, Pattern, norm_axis, register

# name: (combiner, map source, finish(acc, count), numpy)
REDUCE = {
    "ReduceSum": ("sum", None, None, lambda x, ax: np.sum(x, axis=ax, keepdims=True)),
    "ReduceMean": ("sum", None, "mean", lambda x, ax: np.mean(x, axis=ax, keepdims=True)),
    "ReduceMax": ("max", None, None, lambda x, ax: np.max(x, axis=ax, keepdims=True)),
    "ReduceMin": ("min", None, None, lambda x, ax: np.min(x, axis=ax, keepdims=True)),
    "ReduceProd": ("prod", None, None, lambda x, ax: np.prod(x, axis=ax, keepdims=True)),
    "ReduceSumSquare": ("sum", "square", None, lambda x, ax: np.sum(x * x, axis=ax, keepdims=True)),
    "ReduceL1": ("sum", "abs", None, lambda x, ax: np.sum(np.abs(x), axis=ax, keepdims=True)),
    "ReduceL2": ("sum", "square", "sqrt", lambda x, ax: np.sqrt(np.sum(x * x, axis=ax, keepdims=True))),
    "ReduceLogSum": ("sum", None, "log", lambda x, ax: np.log(np.sum(x, axis=ax, keepdims=True))),
    "ReduceLogSumExp": ("sum", "exp", "log", lambda x, ax: np.log(np.sum(np.exp(x), axis=ax, keepdims=True))),
}
FLOAT_ONLY = ("ReduceMean", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp")


class Reduce(Op):
    names = tuple(REDUCE)
    pattern = Pattern.COMM_REDUCE
    dtypes = NUMERIC

    def canon(self, ctx):
        rank = len(ctx.inputs[0].type.shape)
        axes_from_input = ctx.opset >= 18 or (ctx.op == "ReduceSum" and ctx.opset >= 13)
        axes = ctx.attrs.get("axes")
        if axes_from_input:
            axes = ctx.ints_input(1, "axes") or None     # an empty list means "not given"
            ctx.drop_inputs_from(1)
        noop = int(ctx.attrs.get("noop_with_empty_axes", 0))
        if axes is None:
            axes = [] if noop else list(range(rank))
        ctx.attrs = {"axes": sorted({norm_axis(ctx, int(a), rank) for a in axes}),
                     "keepdims": int(ctx.attrs.get("keepdims", 1))}

    def check(self, node):
        super().check(node)
        if node.op in FLOAT_ONLY and node.inputs[0].type.dtype != "float32":
            from ..errors import OpError
            raise OpError(node, f"{node.op} needs float32 input")

    def _shapes(self, node):
        x = node.inputs[0].type
        axes = node.attrs["axes"]
        keep = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
        out = keep if node.attrs["keepdims"] else tuple(s for d, s in enumerate(x.shape) if d not in axes)
        return keep, out

    def infer(self, node):
        return [TensorType(self._shapes(node)[1], node.inputs[0].type.dtype)]

    def reference(self, node, x):
        axes = tuple(node.attrs["axes"])
        if not axes:
            y = REDUCE[node.op][3](x, ()) if node.op in ("ReduceSumSquare", "ReduceL1", "ReduceL2",
                                                           "ReduceLogSum", "ReduceLogSumExp") else x
        else:
            y = REDUCE[node.op][3](x.astype(np.float64) if x.dtype.kind == "f" else x, axes)
        return [np.asarray(y).astype(x.dtype).reshape(self._shapes(node)[1])]

    def compute(self, node, x):
        comb, pre, post, _ = REDUCE[node.op]
        axes = node.attrs["axes"]
        keep, out = self._shapes(node)
        count = int(np.prod([x.shape[d] for d in axes])) if axes else 1

        def to_keep(i):
            if node.attrs["keepdims"]:
                return list(i)
            it = iter(i)
            return [None if d in axes else next(it) for d in range(len(x.shape))]

        def body(*i):
            full = to_keep(i)
            rs = [te.reduce_axis(x.shape[d], f"r{d}") for d in axes]
            it = iter(rs)
            src = x(*[next(it).var if d in axes else full[d] for d in range(len(x.shape))])
            if pre == "square":
                src = src * src
            elif pre == "abs":
                src = call("fabs", src) if x.dtype == "float32" else src * src / src
            elif pre == "exp":
                src = call("exp", src)
            if not axes:
                return src
            return te.Reduce(comb, src, rs)
        red = te.compute(out, body, node.op.lower())
        if post is None:
            return [red]
        fin = {"mean": lambda v: v / Const(float(count), x.dtype), "sqrt": lambda v: call("sqrt", v),
               "log": lambda v: call("log", v)}[post]
        return [te.compute(out, lambda *i: fin(red(*i)), node.op.lower() + "_finish")]


register(Reduce)
