"""Reductions over axes (ReduceSum, ReduceMean, ...)."""
from __future__ import annotations

import numpy as np

from ..te import tensor as te
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
        if node.op in FLOAT_ONLY and node.inputs[0].type.dtype not in ("float32", "float64"):
            from ..errors import OpError
            raise OpError(node, f"{node.op} needs a float input")

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
                from ..tir.expr import is_float, lt, select
                src = call("fabs", src) if is_float(x.dtype) else select(lt(src, Const(0, x.dtype)), -src, src)
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


# ----------------------------------------------------------------- arg reductions
class _ArgBase(Op):
    """The position of the extreme value: a max/min reduction, then the first (or last)
    position holding it, both kept in registers at the same loop depth."""
    pattern = Pattern.COMM_REDUCE
    dtypes = NUMERIC

    def _axes(self, node):
        return node.attrs["axes"]

    def _extreme_and_position(self, node, x, last):
        from ..tir.expr import holds_extreme, select
        axes = self._axes(node)
        keep = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
        is_max = node.op in ("ArgMax", "Hardmax")

        def over(i, rs):
            it = iter(rs)
            return [next(it).var if d in axes else i[d] for d in range(len(x.shape))]

        def fext(*i):
            rs = [te.reduce_axis(x.shape[d], f"r{d}") for d in axes]
            return te.Reduce("max" if is_max else "min", x(over(i, rs)), rs)
        ext = te.compute(keep, fext, "extreme")

        def fpos(*i):
            rs = [te.reduce_axis(x.shape[d], f"r{d}") for d in axes]
            flat = Const(0, "int32")
            for r, d in zip(rs, axes):
                flat = flat * x.shape[d] + r.var
            miss = Const(-1 if last else np.iinfo(np.int32).max, "int32")
            return te.Reduce("max" if last else "min", select(holds_extreme(x(over(i, rs)), ext(*i)), flat, miss), rs)
        return keep, te.compute(keep, fpos, "position")


class ArgReduce(_ArgBase):
    names = ("ArgMax", "ArgMin")

    def canon(self, ctx):
        rank = len(ctx.inputs[0].type.shape)
        ctx.attrs = {"axes": [norm_axis(ctx, int(ctx.attrs.get("axis", 0)), rank)],
                     "keepdims": int(ctx.attrs.get("keepdims", 1)),
                     "last": int(ctx.attrs.get("select_last_index", 0))}

    def infer(self, node):
        x = node.inputs[0].type
        a = node.attrs["axes"][0]
        shape = tuple(1 if d == a else s for d, s in enumerate(x.shape)) if node.attrs["keepdims"] \
            else tuple(s for d, s in enumerate(x.shape) if d != a)
        return [TensorType(shape, "int64")]

    def reference(self, node, x):
        a = node.attrs["axes"][0]
        f = np.argmax if node.op == "ArgMax" else np.argmin
        if node.attrs["last"]:
            y = x.shape[a] - 1 - f(np.flip(x, a), axis=a)
        else:
            y = f(x, axis=a)
        return [np.asarray(y, np.int64).reshape(node.outputs[0].type.shape)]

    def compute(self, node, x):
        from ..tir.expr import Cast
        keep, pos = self._extreme_and_position(node, x, node.attrs["last"])
        a = node.attrs["axes"][0]
        out = node.outputs[0].type.shape

        def body(*o):
            if node.attrs["keepdims"]:
                idx = list(o)
            else:
                idx = list(o[:a]) + [Const(0, "int32")] + list(o[a:])
            return Cast("int64", pos(*idx))
        return [te.compute(out, body, node.op.lower())]


register(ArgReduce)


@register
class Hardmax(_ArgBase):
    name = "Hardmax"
    dtypes = ("float32", "float64")

    def canon(self, ctx):
        rank = len(ctx.inputs[0].type.shape)
        if ctx.opset < 13:
            axis = norm_axis(ctx, int(ctx.attrs.get("axis", 1)), rank)
            ctx.attrs = {"axes": list(range(axis, rank))}
        else:
            ctx.attrs = {"axes": [norm_axis(ctx, int(ctx.attrs.get("axis", -1)), rank)]}

    def infer(self, node):
        return [node.inputs[0].type]

    def reference(self, node, x):
        axes = node.attrs["axes"]
        lead = [s for d, s in enumerate(x.shape) if d not in axes]
        moved = np.moveaxis(x, axes, list(range(len(x.shape) - len(axes), len(x.shape))))
        flat = moved.reshape(int(np.prod(lead)) if lead else 1, -1)
        y = np.zeros_like(flat)
        y[np.arange(flat.shape[0]), flat.argmax(axis=1)] = 1
        y = y.reshape(moved.shape)
        return [np.moveaxis(y, list(range(len(x.shape) - len(axes), len(x.shape))), axes)]

    def compute(self, node, x):
        from ..tir.expr import eq, select
        axes = node.attrs["axes"]
        _, pos = self._extreme_and_position(node, x, False)

        def body(*i):
            flat = Const(0, "int32")
            for d in axes:
                flat = flat * x.shape[d] + i[d]
            key = [Const(0, "int32") if d in axes else i[d] for d in range(len(x.shape))]
            return select(eq(flat, pos(*key)), Const(1, x.dtype), Const(0, x.dtype))
        return [te.compute(x.shape, body, "hardmax")]


# ----------------------------------------------------------------- scans
@register
class CumSum(Op):
    """out[i] = x[0] + ... + x[i] along the axis: a reduction whose extent depends on i."""
    names = ("CumSum", "CumProd")
    pattern = Pattern.COMM_REDUCE
    dtypes = NUMERIC
    min_inputs = 2

    def canon(self, ctx):
        rank = len(ctx.inputs[0].type.shape)
        axis = ctx.ints_input(1, "axis", required=True)[0]
        ctx.attrs = {"axis": norm_axis(ctx, axis, rank), "exclusive": int(ctx.attrs.get("exclusive", 0)),
                     "reverse": int(ctx.attrs.get("reverse", 0))}
        ctx.drop_inputs_from(1)

    def infer(self, node):
        return [node.inputs[0].type]

    def reference(self, node, x):
        a, ex, rev = node.attrs["axis"], node.attrs["exclusive"], node.attrs["reverse"]
        f = np.cumsum if node.op == "CumSum" else np.cumprod
        ident = 0 if node.op == "CumSum" else 1
        y = np.flip(x, a) if rev else x
        y = f(y, axis=a, dtype=x.dtype)
        if ex:
            y = np.concatenate([np.full_like(np.take(y, [0], axis=a), ident), np.delete(y, -1, axis=a)], axis=a)
        return [np.flip(y, a) if rev else y]

    def compute(self, node, x):
        a, ex, rev = node.attrs["axis"], node.attrs["exclusive"], node.attrs["reverse"]
        n = x.shape[a]

        def body(*i):
            p = i[a]
            if not rev:
                lo, hi = Const(0, "int32"), (p if ex else p + 1)
            else:
                lo, hi = ((p + 1) if ex else p), Const(n, "int32")
            r = te.reduce_axis(hi - lo, "r", min=lo)
            src = list(i)
            src[a] = r.var
            return te.Reduce("sum" if node.op == "CumSum" else "prod", x(*src), [r])
        return [te.compute(x.shape, body, node.op.lower())]
