"""Neural-network anchor ops: convolution, dense/matmul, pooling, normalisation, softmax."""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Call, Cast, Const, call, max_, min_
from .registry import FLOATS, ImportCtx, Op, Pattern, broadcast_shapes, norm_axis, register, same_as_input


# ---------------------------------------------------------------- windows
def _window_attrs(ctx: ImportCtx, kernel, with_dilation=True):
    """Canonical strides/pads/dilations for conv and pooling, resolving auto_pad."""
    x = ctx.inputs[0]
    nsp = len(kernel)
    if x.type.shape and len(x.type.shape) != nsp + 2:
        ctx.error(f"input rank {len(x.type.shape)} does not match a {nsp}-D kernel")
    a = ctx.attrs
    strides = list(a.get("strides") or [1] * nsp)
    dil = list(a.get("dilations") or [1] * nsp) if with_dilation else [1] * nsp
    pads = list(a.get("pads") or [0] * (2 * nsp))
    if len(strides) != nsp or len(dil) != nsp or len(pads) != 2 * nsp:
        ctx.error("strides/dilations/pads do not match the kernel rank")
    if any(s < 1 for s in strides) or any(d < 1 for d in dil) or any(p < 0 for p in pads):
        ctx.error("strides and dilations must be >= 1 and pads >= 0")
    auto = a.get("auto_pad", "NOTSET")
    if isinstance(auto, bytes):
        auto = auto.decode()
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        for d in range(nsp):
            size = x.type.shape[2 + d]
            out = -(-size // strides[d])
            total = max((out - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1 - size, 0)
            small = total // 2
            pads[d], pads[d + nsp] = (small, total - small) if auto == "SAME_UPPER" else (total - small, small)
    elif auto == "VALID":
        pads = [0] * (2 * nsp)
    elif auto not in ("NOTSET", ""):
        ctx.error(f"auto_pad={auto} is not supported")
    return {"kernel_shape": list(kernel), "strides": strides, "pads": pads, "dilations": dil}


def _out_size(node, size, k, s, d, pb, pe, ceil_mode=False):
    span = (k - 1) * d + 1
    num = size + pb + pe - span
    if num < 0:
        raise OpError(node, f"kernel extent {span} is larger than the padded input {size + pb + pe}")
    if ceil_mode:
        out = -(-num // s) + 1
        if (out - 1) * s >= size + pb:   # the last window must start inside the input or left pad
            out -= 1
        return out
    return num // s + 1


def _valid_range(o, k, s, d, p, size, span_pad_ok):
    """Kernel taps r in [lo, lo+ext) whose input index o*s - p + r*d lies in [0, size)."""
    if span_pad_ok:
        return Const(0, "int32"), Const(k, "int32")
    base = o * s - p
    if d == 1:
        lo = max_(Const(0, "int32"), Const(p, "int32") - o * s)
        hi = min_(Const(k, "int32"), Const(size + p, "int32") - o * s)
    else:
        lo = max_(Const(0, "int32"), (Const(d - 1, "int32") - base) // d)
        hi = min_(Const(k, "int32"), (Const(size - 1, "int32") - base) // d + 1)
    return lo, hi - lo


def _needs_no_clip(out, k, s, d, pb, size):
    return pb == 0 and (out - 1) * s + (k - 1) * d < size


def _spatial_ref_slices(off, s, out_shape):
    return tuple(slice(o, o + (n - 1) * st + 1, st) for o, st, n in zip(off, s, out_shape))


@register
class Conv(Op):
    name = "Conv"
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = FLOATS
    min_inputs = 2

    def canon(self, ctx):
        w = ctx.input(1)
        if len(w.type.shape) < 3:
            ctx.error("weight must have rank >= 3")
        kernel = ctx.attrs.get("kernel_shape") or list(w.type.shape[2:])
        if list(kernel) != list(w.type.shape[2:]):
            ctx.error("kernel_shape does not match the weight shape")
        attrs = _window_attrs(ctx, kernel)
        attrs["group"] = int(ctx.attrs.get("group", 1))
        ctx.attrs = attrs

    def infer(self, node):
        x, w = node.inputs[0].type, node.inputs[1].type
        a, nsp = node.attrs, len(node.attrs["kernel_shape"])
        if len(x.shape) != nsp + 2:
            raise OpError(node, f"input rank {len(x.shape)} does not match the weight rank {len(w.shape)}")
        g = a["group"]
        if x.shape[1] != w.shape[1] * g or w.shape[0] % g:
            raise OpError(node, f"channels do not match: input {x.shape[1]}, weight {list(w.shape)}, group {g}")
        b = node.inputs[2] if len(node.inputs) > 2 else None
        if b is not None and tuple(b.type.shape) != (w.shape[0],):
            raise OpError(node, f"bias shape {list(b.type.shape)} must be [{w.shape[0]}]")
        sp = [_out_size(node, x.shape[2 + d], a["kernel_shape"][d], a["strides"][d], a["dilations"][d],
                        a["pads"][d], a["pads"][d + nsp]) for d in range(nsp)]
        return [TensorType((x.shape[0], w.shape[0], *sp), x.dtype)]

    def reference(self, node, x, w, b=None):
        a, nsp = node.attrs, len(node.attrs["kernel_shape"])
        g, M = a["group"], w.shape[0]
        pads = [(0, 0), (0, 0)] + [(a["pads"][d], a["pads"][d + nsp]) for d in range(nsp)]
        xp = np.pad(x.astype(np.float64), pads)
        out_shape = node.outputs[0].type.shape
        y = np.zeros(out_shape, np.float64)
        cg, mg = w.shape[1], M // g
        for gi in range(g):
            xs = xp[:, gi * cg:(gi + 1) * cg]
            ws = w[gi * mg:(gi + 1) * mg].astype(np.float64)
            for off in itertools.product(*[range(k) for k in a["kernel_shape"]]):
                start = [o * d for o, d in zip(off, a["dilations"])]
                sl = _spatial_ref_slices(start, a["strides"], out_shape[2:])
                patch = xs[(slice(None), slice(None)) + sl]
                y[:, gi * mg:(gi + 1) * mg] += np.einsum("nc...,mc->nm...", patch, ws[(slice(None), slice(None)) + off])
        if b is not None:
            y += b.reshape((1, -1) + (1,) * nsp)
        return [y.astype(x.dtype)]

    def compute(self, node, x, w, b=None):
        conv = conv_sum(node, x, w, lambda v: v, lambda v: v)
        if b is None:
            return [conv]
        names = [a.name for a in conv.op.axes]
        return [te.compute(conv.shape, lambda n, m, *o: conv(n, m, *o) + b(m), "conv_bias", names)]


def conv_sum(node, x, w, xload, wload):
    """The convolution reduction; xload/wload adapt the loaded values (zero points, widening)."""
    a = node.attrs
    nsp, g = len(a["kernel_shape"]), a["group"]
    out_shape = node.outputs[0].type.shape
    M, cg = w.shape[0], w.shape[1]
    mg = M // g
    names = ["n", "oc"] + ["oh", "ow", "od"][:nsp] if nsp <= 3 else None

    def body(n, m, *o):
        rc = te.reduce_axis(cg, "rc")
        rs, idx = [], []
        for d in range(nsp):
            k, s, dl, p = a["kernel_shape"][d], a["strides"][d], a["dilations"][d], a["pads"][d]
            size = x.shape[2 + d]
            lo, ext = _valid_range(o[d], k, s, dl, p, size, _needs_no_clip(out_shape[2 + d], k, s, dl, p, size))
            r = te.reduce_axis(ext, "r" + "hwd"[d] if nsp <= 3 else f"r{d}", min=lo)
            rs.append(r)
            idx.append(o[d] * s - p + r.var * dl)
        cin = rc.var if g == 1 else (m // mg) * cg + rc.var
        return te.sum(xload(x(n, cin, *idx)) * wload(w(m, rc.var, *[r.var for r in rs])), [rc] + rs)

    return te.compute(out_shape, body, "conv", names)


@register
class Gemm(Op):
    name = "Gemm"
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


class _Pool(Op):
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = FLOATS

    def canon(self, ctx):
        kernel = ctx.attrs.get("kernel_shape")
        if not kernel:
            ctx.error("kernel_shape is required")
        with_dil = ctx.op == "MaxPool" or ctx.opset >= 19 or (ctx.op == "LpPool" and ctx.opset >= 18)
        attrs = _window_attrs(ctx, kernel, with_dil)
        attrs["ceil_mode"] = int(ctx.attrs.get("ceil_mode", 0))
        if ctx.op == "AveragePool":
            attrs["count_include_pad"] = int(ctx.attrs.get("count_include_pad", 0))
        if ctx.op == "LpPool":
            attrs["p"] = float(ctx.attrs.get("p", 2))
        attrs["storage_order"] = int(ctx.attrs.get("storage_order", 0))
        ctx.attrs = attrs

    def infer(self, node):
        x, a = node.inputs[0].type, node.attrs
        nsp = len(a["kernel_shape"])
        if len(x.shape) != nsp + 2:
            raise OpError(node, f"input rank {len(x.shape)} does not match a {nsp}-D kernel")
        sp = [_out_size(node, x.shape[2 + d], a["kernel_shape"][d], a["strides"][d], a["dilations"][d],
                        a["pads"][d], a["pads"][d + nsp], a["ceil_mode"]) for d in range(nsp)]
        out = [TensorType((*x.shape[:2], *sp), x.dtype)]
        if len(node.outputs) > 1:      # MaxPool's Indices: flat positions in the input
            out.append(TensorType((*x.shape[:2], *sp), "int64"))
        return out

    def _windows(self, node):
        a = node.attrs
        nsp = len(a["kernel_shape"])
        return nsp, a["kernel_shape"], a["strides"], a["dilations"], a["pads"]

    def reference(self, node, x):
        nsp, ks, ss, ds, pads = self._windows(node)
        out_shape = node.outputs[0].type.shape
        is_max = node.op == "MaxPool"
        acc = np.full(out_shape, -np.inf if is_max else 0.0)
        cnt = np.zeros(out_shape[2:])
        cnt_pad = np.zeros(out_shape[2:])
        size = x.shape[2:]
        grids = np.meshgrid(*[np.arange(n) for n in out_shape[2:]], indexing="ij")
        for off in itertools.product(*[range(k) for k in ks]):
            pos = [g * s - p + o * d for g, s, p, o, d in zip(grids, ss, pads[:nsp], off, ds)]
            valid = np.ones(out_shape[2:], bool)
            in_pad = np.ones(out_shape[2:], bool)
            for dd, pp in enumerate(pos):
                valid &= (pp >= 0) & (pp < size[dd])
                in_pad &= (pp >= -pads[dd]) & (pp < size[dd] + pads[dd + nsp])
            clipped = [np.clip(pp, 0, n - 1) for pp, n in zip(pos, size)]
            vals = x[(slice(None), slice(None)) + tuple(clipped)].astype(np.float64)
            if node.op == "LpPool":
                vals = np.abs(vals) ** node.attrs["p"]
            if is_max:
                acc = np.where(valid, np.maximum(acc, vals), acc)
            else:
                acc = acc + np.where(valid, vals, 0.0)
            cnt += valid
            cnt_pad += in_pad
        if node.op == "LpPool":
            acc = acc ** (1.0 / node.attrs["p"])
        elif not is_max:
            acc = acc / (cnt_pad if node.attrs.get("count_include_pad") else cnt)
        if len(node.outputs) > 1:
            raise NotImplementedError   # Indices are never folded; computed by the kernel
        return [acc.astype(x.dtype)]

    def compute(self, node, x):
        nsp, ks, ss, ds, pads = self._windows(node)
        out_shape = node.outputs[0].type.shape
        is_max = node.op == "MaxPool"
        include_pad = node.attrs.get("count_include_pad", 0)

        def window(o):
            rs, idx, counts = [], [], []
            for d in range(nsp):
                k, s, dl, p, size = ks[d], ss[d], ds[d], pads[d], x.shape[2 + d]
                lo, ext = _valid_range(o[d], k, s, dl, p, size, _needs_no_clip(out_shape[2 + d], k, s, dl, p, size))
                r = te.reduce_axis(ext, f"r{d}", min=lo)
                rs.append(r)
                idx.append(o[d] * s - p + r.var * dl)
                if include_pad:
                    # taps inside [-pad_begin, size + pad_end)
                    base = o[d] * s - p
                    counts.append(min_(Const(k, "int32"), (Const(size + pads[d + nsp] + dl - 1, "int32") - base) // dl))
                else:
                    counts.append(ext)
            return rs, idx, counts

        names = ["n", "c"] + ["oh", "ow", "od"][:nsp] if nsp <= 3 else None

        lp = node.attrs.get("p")

        def body(n, c, *o):
            rs, idx, _ = window(o)
            src = x(n, c, *idx)
            if lp is not None:
                src = call("pow", call("fabs", src), Const(lp, x.dtype))
            return te.max(src, rs) if is_max else te.sum(src, rs)
        red = te.compute(out_shape, body, "pool", names)
        if is_max and len(node.outputs) > 1:
            return [red, self._argmax(node, x, red, window, names)]
        if is_max:
            return [red]
        if lp is not None:
            return [te.compute(out_shape, lambda *i: call("pow", red(*i), Const(1.0 / lp, x.dtype)), "lp_pool", names)]

        def avg(n, c, *o):
            _, _, counts = window(o)
            cnt = counts[0]
            for cc in counts[1:]:
                cnt = cnt * cc
            return red(n, c, *o) / Cast(x.dtype, cnt)
        return [te.compute(out_shape, avg, "avg", names)]


@register
class MaxPool(_Pool):
    name = "MaxPool"

    def _argmax(self, node, x, red, window, names):
        """The first window position holding the maximum, as a flat index into the input
        (row-major, or column-major over the spatial dims with storage_order=1)."""
        from ..tir.expr import holds_extreme, select
        out_shape = node.outputs[0].type.shape
        C, sp = x.shape[1], x.shape[2:]

        def body(n, c, *o):
            rs, idx, _ = window(o)
            if node.attrs.get("storage_order", 0):
                flat, stride = Const(0, "int32"), 1
                for d in range(len(sp)):
                    flat = flat + idx[d] * stride
                    stride *= sp[d]
                flat = flat + (n * C + c) * stride
            else:
                flat = n * C + c
                for d in range(len(sp)):
                    flat = flat * sp[d] + idx[d]
            miss = Const(np.iinfo(np.int32).max, "int32")
            return te.min(select(holds_extreme(x(n, c, *idx), red(n, c, *o)), flat, miss), rs)
        pos = te.compute(out_shape, body, "argmax", names)
        return te.compute(out_shape, lambda *i: Cast("int64", pos(*i)), "indices", names)


@register
class AveragePool(_Pool):
    name = "AveragePool"


@register
class LpPool(_Pool):
    name = "LpPool"


@register
class GlobalPool(Op):
    names = ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = FLOATS

    def infer(self, node):
        x = node.inputs[0].type
        if len(x.shape) < 3:
            raise OpError(node, "input must have rank >= 3")
        return [TensorType(x.shape[:2] + (1,) * (len(x.shape) - 2), x.dtype)]

    def reference(self, node, x):
        axes = tuple(range(2, x.ndim))
        if node.op == "GlobalLpPool":
            p = float(node.attrs.get("p", 2))
            return [((np.abs(x.astype(np.float64)) ** p).sum(axis=axes, keepdims=True) ** (1 / p)).astype(x.dtype)]
        f = np.max if node.op == "GlobalMaxPool" else np.mean
        return [f(x.astype(np.float64), axis=axes, keepdims=True).astype(x.dtype)]

    def compute(self, node, x):
        sp = x.shape[2:]
        out_shape = node.outputs[0].type.shape

        p = float(node.attrs.get("p", 2))

        def body(n, c, *_):
            rs = [te.reduce_axis(s, f"r{d}") for d, s in enumerate(sp)]
            src = x(n, c, *[r.var for r in rs])
            if node.op == "GlobalLpPool":
                src = call("pow", call("fabs", src), Const(p, x.dtype))
            return te.max(src, rs) if node.op == "GlobalMaxPool" else te.sum(src, rs)
        red = te.compute(out_shape, body, "global_pool")
        if node.op == "GlobalMaxPool":
            return [red]
        if node.op == "GlobalLpPool":
            return [te.compute(out_shape, lambda *i: call("pow", red(*i), Const(1 / p, x.dtype)), "global_lp")]
        count = float(np.prod(sp))
        return [te.compute(out_shape, lambda *i: red(*i) / Const(count, x.dtype), "global_avg")]


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
        return [te.compute(x.shape, lambda *i: x(*i) / call("pow", sq(*i) * k + a["bias"], Const(a["beta"], x.dtype)), "lrn")]


@register
class InstanceNormalization(Op):
    name = "InstanceNormalization"
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

    def infer(self, node):
        node.attrs["axis"] = norm_axis(node, node.attrs.get("axis", -1), len(node.inputs[0].type.shape))
        if node.attrs.get("p", 2) not in (1, 2):
            raise OpError(node, "p must be 1 or 2")
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


@register
class ConvTranspose(Op):
    """out[o] = sum over taps k and input channels of x[(o + pad - k*d) / s] * w[k], where the
    division is exact; taps that do not land on an input position contribute nothing."""
    name = "ConvTranspose"
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = FLOATS
    min_inputs = 2

    def canon(self, ctx):
        x, w = ctx.inputs[0].type, ctx.inputs[1].type
        nsp = len(w.shape) - 2
        a = ctx.attrs
        kernel = list(a.get("kernel_shape") or w.shape[2:])
        strides = list(a.get("strides") or [1] * nsp)
        dil = list(a.get("dilations") or [1] * nsp)
        opad = list(a.get("output_padding") or [0] * nsp)
        group = int(a.get("group", 1))
        auto = a.get("auto_pad", "NOTSET")
        pads = a.get("pads")
        out_shape = a.get("output_shape")
        full = [strides[d] * (x.shape[2 + d] - 1) + opad[d] + (kernel[d] - 1) * dil[d] + 1 for d in range(nsp)]
        if pads is None and auto in ("SAME_UPPER", "SAME_LOWER"):
            target = list(out_shape) if out_shape else [x.shape[2 + d] * strides[d] for d in range(nsp)]
            # A kernel narrower than the stride would need negative pads to reach in*stride;
            # pads are non-negative, so (as ONNX shape inference and onnxruntime do) the total
            # is clamped at 0 and the output keeps its natural size (in-1)*stride + kernel.
            total = [max(full[d] - target[d], 0) for d in range(nsp)]
            if auto == "SAME_UPPER":
                pads = [t // 2 for t in total] + [t - t // 2 for t in total]
            else:
                pads = [t - t // 2 for t in total] + [t // 2 for t in total]
            out = list(out_shape) if out_shape else [full[d] - total[d] for d in range(nsp)]
        elif out_shape:
            # The spec ignores pads when output_shape is given and splits the total crop itself:
            # the odd element goes to the start unless auto_pad is SAME_UPPER (handled above).
            out = [int(v) for v in list(out_shape)[-nsp:]]
            total = [full[d] - out[d] for d in range(nsp)]
            pads = [t - t // 2 for t in total] + [t // 2 for t in total]
        else:
            pads = list(pads or [0] * (2 * nsp))
            out = [full[d] - pads[d] - pads[d + nsp] for d in range(nsp)]
        if len(out) > nsp:        # output_shape may include N and C
            out = out[-nsp:]
        ctx.attrs = {"kernel_shape": kernel, "strides": strides, "dilations": dil, "pads": list(pads),
                     "group": group, "out_spatial": [int(v) for v in out]}

    def infer(self, node):
        x, w = node.inputs[0].type, node.inputs[1].type
        g = node.attrs["group"]
        if x.shape[1] != w.shape[0]:
            raise OpError(node, f"input channels {x.shape[1]} do not match weight {list(w.shape)}")
        return [TensorType((x.shape[0], w.shape[1] * g, *node.attrs["out_spatial"]), x.dtype)]

    def reference(self, node, x, w, b=None):
        a = node.attrs
        nsp, g = len(a["kernel_shape"]), a["group"]
        out_shape = node.outputs[0].type.shape
        y = np.zeros(out_shape, np.float64)
        cg, mg = x.shape[1] // g, w.shape[1]
        for gi in range(g):
            for pos in np.ndindex(*x.shape[2:]):
                for k in np.ndindex(*a["kernel_shape"]):
                    o = [pos[d] * a["strides"][d] - a["pads"][d] + k[d] * a["dilations"][d] for d in range(nsp)]
                    if any(not 0 <= o[d] < out_shape[2 + d] for d in range(nsp)):
                        continue
                    xs = x[(slice(None), slice(gi * cg, (gi + 1) * cg)) + pos].astype(np.float64)
                    ws = w[(slice(gi * cg, (gi + 1) * cg), slice(None)) + k].astype(np.float64)
                    y[(slice(None), slice(gi * mg, (gi + 1) * mg)) + tuple(o)] += xs @ ws
        if b is not None:
            y += b.reshape((1, -1) + (1,) * nsp)
        return [y.astype(x.dtype)]

    def compute(self, node, x, w, b=None):
        from ..tir.expr import Bin, and_, eq, ge, lt, select
        a = node.attrs
        nsp, g = len(a["kernel_shape"]), a["group"]
        out_shape = node.outputs[0].type.shape
        cg, mg = x.shape[1] // g, w.shape[1]

        def body(n, m, *o):
            rc = te.reduce_axis(cg, "rc")
            rs = [te.reduce_axis(k, f"r{d}") for d, k in enumerate(a["kernel_shape"])]
            idx, ok = [], None
            for d in range(nsp):
                s = a["strides"][d]
                num = o[d] + a["pads"][d] - rs[d].var * a["dilations"][d]
                cond = and_(ge(num, Const(0, "int32")), lt(num, Const(s * x.shape[2 + d], "int32")))
                if s > 1:
                    cond = and_(cond, eq(Bin("floormod", num, Const(s, "int32")), Const(0, "int32")))
                    num = Bin("floordiv", num, Const(s, "int32"))
                idx.append(num)
                ok = cond if ok is None else and_(ok, cond)
            cin = rc.var if g == 1 else (m // mg) * cg + rc.var
            wm = m if g == 1 else m % mg
            prod = x(n, cin, *idx) * w(cin, wm, *[r.var for r in rs])
            return te.sum(select(ok, prod, Const(0, x.dtype)), [rc] + rs)
        conv = te.compute(out_shape, body, "conv_transpose")
        if b is None:
            return [conv]
        return [te.compute(out_shape, lambda n, m, *o: conv(n, m, *o) + b(m), "conv_transpose_bias")]
