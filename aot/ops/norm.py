"""Normalisation: BatchNormalization, Softmax, LRN, InstanceNormalization, LpNormalization."""
from __future__ import annotations

import math

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..tir.expr import Call, Const, call, max_, min_
from .registry import FLOATS, Op, Pattern, norm_axis, register, same_as_input


@register
class BatchNormalization(Op):
    name = "BatchNormalization"
    pattern = Pattern.BROADCAST
    dtypes = FLOATS
    min_inputs = 5

    def canon(self, ctx):
        if ctx.n_outputs > 1 or int(ctx.attrs.get("training_mode", 0)):
            ctx.error("training-mode BatchNormalization (extra outputs) is not supported")
        ctx.attrs = {"epsilon": float(ctx.attrs.get("epsilon", 1e-5))}

    def infer(self, node):
        x = node.inputs[0].type
        if len(x.shape) < 2:
            raise OpError(node, "input must have rank >= 2")
        for v in node.inputs[1:5]:
            if tuple(v.type.shape) != (x.shape[1],):
                raise OpError(node, f"parameter {v.name} must have shape [{x.shape[1]}]")
        return same_as_input(node)

    def reference(self, node, x, scale, b, mean, var):
        sh = (1, -1) + (1,) * (x.ndim - 2)
        f = lambda v: v.astype(np.float64).reshape(sh)  # noqa: E731
        y = (x - f(mean)) / np.sqrt(f(var) + node.attrs["epsilon"]) * f(scale) + f(b)
        return [y.astype(x.dtype)]

    def compute(self, node, x, scale, b, mean, var):
        eps = node.attrs["epsilon"]
        return [te.compute(x.shape, lambda n, c, *r: (x(n, c, *r) - mean(c)) / call("sqrt", var(c) + eps)
                           * scale(c) + b(c), "batch_norm")]


@register
class Softmax(Op):
    names = ("Softmax", "LogSoftmax")
    pattern = Pattern.OPAQUE
    dtypes = FLOATS

    def canon(self, ctx):
        rank = len(ctx.inputs[0].type.shape)
        if ctx.opset < 13:   # coerce-to-2D semantics: normalise over all dims from axis on
            axis = norm_axis(ctx, int(ctx.attrs.get("axis", 1)), rank)
            ctx.attrs = {"axes": list(range(axis, rank))}
        else:
            ctx.attrs = {"axes": [norm_axis(ctx, int(ctx.attrs.get("axis", -1)), rank)]}

    def infer(self, node):
        return same_as_input(node)

    def reference(self, node, x):
        axes = tuple(node.attrs["axes"])
        x64 = x.astype(np.float64)
        z = x64 - x64.max(axis=axes, keepdims=True)
        lse = np.log(np.exp(z).sum(axis=axes, keepdims=True))
        y = z - lse if node.op == "LogSoftmax" else np.exp(z - lse)
        return [y.astype(x.dtype)]

    def compute(self, node, x):
        axes = node.attrs["axes"]
        red_shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))

        def over(i, rs):
            it = iter(rs)
            return [next(it).var if d in axes else i[d] for d in range(len(x.shape))]

        def red_idx(i):
            return [Const(0, "int32") if d in axes else i[d] for d in range(len(x.shape))]

        def fmax(*i):
            rs = [te.reduce_axis(x.shape[d], f"r{d}") for d in axes]
            return te.max(x(over(i, rs)), rs)
        mx = te.compute(red_shape, fmax, "max")

        # float16 is computed in float; like a float16 runtime, round the values it would store
        rnd = {"float16": "f16round", "bfloat16": "bf16round"}.get(x.dtype)
        h = (lambda e: Call(rnd, [e], x.dtype)) if rnd else (lambda e: e)

        def fsum(*i):
            rs = [te.reduce_axis(x.shape[d], f"r{d}") for d in axes]
            return te.sum(h(call("exp", h(x(over(i, rs)) - mx(red_idx(i))))), rs)
        sm = te.compute(red_shape, fsum, "sum")
        if node.op == "Softmax":
            return [te.compute(x.shape, lambda *i: h(call("exp", h(x(*i) - mx(red_idx(i))))) / h(sm(red_idx(i))),
                               "softmax")]
        return [te.compute(x.shape, lambda *i: h(x(*i) - mx(red_idx(i))) - h(call("log", h(sm(red_idx(i))))), "log_softmax")]


@register
class LRN(Op):
    name = "LRN"
    pattern = Pattern.OPAQUE
    dtypes = FLOATS

    def canon(self, ctx):
        if "size" not in ctx.attrs:
            ctx.error("attribute 'size' is required")
        ctx.attrs = {"size": int(ctx.attrs["size"]), "alpha": float(ctx.attrs.get("alpha", 1e-4)),
                     "beta": float(ctx.attrs.get("beta", 0.75)), "bias": float(ctx.attrs.get("bias", 1.0))}

    def infer(self, node):
        if len(node.inputs[0].type.shape) < 3:
            raise OpError(node, "input must have rank >= 3")
        return same_as_input(node)

    def _half(self, size):
        return (size - 1) // 2, math.ceil((size - 1) / 2)

    def reference(self, node, x):
        a = node.attrs
        lo, hi = self._half(a["size"])
        C = x.shape[1]
        x64 = x.astype(np.float64)
        sq = np.zeros_like(x64)
        for c in range(C):
            sq[:, c] = (x64[:, max(0, c - lo):min(C, c + hi + 1)] ** 2).sum(axis=1)
        return [(x64 / (a["bias"] + a["alpha"] / a["size"] * sq) ** a["beta"]).astype(x.dtype)]

    def compute(self, node, x):
        a = node.attrs
        lo, hi = self._half(a["size"])
        C = x.shape[1]

        def fsq(n, c, *sp):
            start = max_(Const(0, "int32"), c - lo)
            end = min_(Const(C, "int32"), c + (hi + 1))
            r = te.reduce_axis(end - start, "rc", min=start)
            v = x(n, r.var, *sp)
            return te.sum(v * v, r)
        sq = te.compute(x.shape, fsq, "lrn_sqsum")
        k = a["alpha"] / a["size"]
        return [te.compute(x.shape, lambda *i: x(*i) / _power(sq(*i) * k + a["bias"], a["beta"], x.dtype), "lrn")]


def _power(d, beta, dtype):
    """d ** beta; the usual LRN exponents by square roots (a pow call per element is most of an
    LRN kernel's time), the others by pow."""
    if beta == 0.75:
        r = call("sqrt", d)
        return r * call("sqrt", r)
    if beta == 0.5:
        return call("sqrt", d)
    if beta == 1.0:
        return d
    return call("pow", d, Const(beta, dtype))


@register
class InstanceNormalization(Op):
    name = "InstanceNormalization"
    same_dtype = (1, 2)
    pattern = Pattern.OPAQUE
    dtypes = FLOATS
    min_inputs = 3

    def infer(self, node):
        x = node.inputs[0].type
        if len(x.shape) < 3:
            raise OpError(node, "input must have rank >= 3")
        return same_as_input(node)

    def reference(self, node, x, scale, b):
        axes = tuple(range(2, x.ndim))
        sh = (1, -1) + (1,) * (x.ndim - 2)
        x64 = x.astype(np.float64)
        m = x64.mean(axis=axes, keepdims=True)
        v = ((x64 - m) ** 2).mean(axis=axes, keepdims=True)
        eps = node.attrs.get("epsilon", 1e-5)
        return [((x64 - m) / np.sqrt(v + eps) * scale.reshape(sh) + b.reshape(sh)).astype(x.dtype)]

    def compute(self, node, x, scale, b):
        sp = x.shape[2:]
        count = float(np.prod(sp))
        eps = node.attrs.get("epsilon", 1e-5)
        keep = x.shape[:2] + (1,) * len(sp)
        zeros = [Const(0, "int32")] * len(sp)

        def fsum(n, c, *_):
            rs = [te.reduce_axis(s, f"r{d}") for d, s in enumerate(sp)]
            return te.sum(x(n, c, *[r.var for r in rs]), rs)
        s1 = te.compute(keep, fsum, "sum")

        def fvar(n, c, *_):
            rs = [te.reduce_axis(s, f"r{d}") for d, s in enumerate(sp)]
            dv = x(n, c, *[r.var for r in rs]) - s1(n, c, *zeros) / Const(count, x.dtype)
            return te.sum(dv * dv, rs)
        s2 = te.compute(keep, fvar, "sqsum")

        def out(n, c, *sp_i):
            mean = s1(n, c, *zeros) / Const(count, x.dtype)
            inv = Const(1.0, x.dtype) / call("sqrt", s2(n, c, *zeros) / Const(count, x.dtype) + Const(eps, x.dtype))
            return (x(n, c, *sp_i) - mean) * inv * scale(c) + b(c)
        return [te.compute(x.shape, out, "instance_norm")]


@register
class LpNormalization(Op):
    name = "LpNormalization"
    pattern = Pattern.OPAQUE
    dtypes = FLOATS

    def canon(self, ctx):
        ctx.attrs["axis"] = norm_axis(ctx, ctx.attrs.get("axis", -1), len(ctx.input(0).type.shape))
        if ctx.attrs.get("p", 2) not in (1, 2):
            ctx.error("p must be 1 or 2")

    def infer(self, node):
        return same_as_input(node)

    def reference(self, node, x):
        a, p = node.attrs["axis"], node.attrs.get("p", 2)
        n = np.abs(x).sum(axis=a, keepdims=True) if p == 1 else np.sqrt((x * x).sum(axis=a, keepdims=True))
        with np.errstate(invalid="ignore", divide="ignore"):
            return [np.where(n == 0, 0, x / n).astype(x.dtype)]

    def compute(self, node, x):
        from ..tir.expr import eq, select
        a, p = node.attrs["axis"], node.attrs.get("p", 2)
        keep = tuple(1 if d == a else s for d, s in enumerate(x.shape))

        def fnorm(*i):
            r = te.reduce_axis(x.shape[a], "r")
            src = list(i)
            src[a] = r.var
            v = x(*src)
            return te.sum(call("fabs", v) if p == 1 else v * v, r)
        s1 = te.compute(keep, fnorm, "norm")

        def out(*i):
            key = list(i)
            key[a] = Const(0, "int32")
            n = s1(*key) if p == 1 else call("sqrt", s1(*key))
            return select(eq(n, Const(0, x.dtype)), Const(0, x.dtype), x(*i) / n)
        return [te.compute(x.shape, out, "lp_norm")]
