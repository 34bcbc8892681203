"""Pooling: MaxPool, AveragePool, LpPool and the global pools."""
from __future__ import annotations

import itertools

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Bin, Cast, Const, Select, call, gt, max_, min_
from .registry import FLOATS, Op, Pattern, register
from .window import (from_nchw, join_index, nchw_shape, needs_no_clip, out_size, spatial, split_index, to_nchw,
                     valid_range, window_attrs)


class _Pool(Op):
    """With layout="NHWC" (TFLite's pools) the data is channels-last, pooled as stored."""
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = FLOATS

    def canon(self, ctx):
        kernel = ctx.attrs.get("kernel_shape")
        if not kernel:
            ctx.error("kernel_shape is required")
        with_dil = ctx.op == "MaxPool" or ctx.opset >= 19 or (ctx.op == "LpPool" and ctx.opset >= 18)
        attrs = window_attrs(ctx, kernel, with_dil)
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
        layout = a.get("layout", "NCHW")
        if len(x.shape) != nsp + 2:
            raise OpError(node, f"input rank {len(x.shape)} does not match a {nsp}-D kernel")
        size = spatial(x.shape, layout)
        sp = [out_size(node, size[d], a["kernel_shape"][d], a["strides"][d], a["dilations"][d],
                        a["pads"][d], a["pads"][d + nsp], a["ceil_mode"]) for d in range(nsp)]
        c = x.shape[1] if layout == "NCHW" else x.shape[-1]
        out = [TensorType(join_index(x.shape[0], c, sp, layout), x.dtype)]
        if len(node.outputs) > 1:      # MaxPool's Indices: flat positions in the input
            if layout != "NCHW":
                raise OpError(node, "MaxPool's Indices output is for NCHW data")
            out.append(TensorType((*x.shape[:2], *sp), "int64"))
        return out

    def _windows(self, node):
        a = node.attrs
        nsp = len(a["kernel_shape"])
        return nsp, a["kernel_shape"], a["strides"], a["dilations"], a["pads"]

    def reference(self, node, x):
        nsp, ks, ss, ds, pads = self._windows(node)
        layout = node.attrs.get("layout", "NCHW")
        x = to_nchw(x, layout)
        out_shape = nchw_shape(node.outputs[0].type.shape, layout)
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
        return [from_nchw(acc, layout).astype(x.dtype)]

    def taps(self, node, x, o):
        """(reduce axes, input spatial indices, tap counts per dim) of the window at output
        position o: the taps inside the input (counts include the padding with count_include_pad)."""
        nsp, ks, ss, ds, pads = self._windows(node)
        layout = node.attrs.get("layout", "NCHW")
        in_size, out_sp = spatial(x.shape, layout), spatial(node.outputs[0].type.shape, layout)
        rs, idx, counts = [], [], []
        for d in range(nsp):
            k, s, dl, p, size = ks[d], ss[d], ds[d], pads[d], in_size[d]
            lo, ext = valid_range(o[d], k, s, dl, p, size, needs_no_clip(out_sp[d], k, s, dl, p, size))
            r = te.reduce_axis(ext, f"r{d}", min=lo)
            rs.append(r)
            idx.append(o[d] * s - p + r.var * dl)
            if node.attrs.get("count_include_pad", 0):
                # taps inside [-pad_begin, size + pad_end)
                base = o[d] * s - p
                counts.append(min_(Const(k, "int32"), (Const(size + pads[d + nsp] + dl - 1, "int32") - base) // dl))
            else:
                counts.append(ext)
        return rs, idx, counts

    def compute(self, node, x):
        nsp = len(node.attrs["kernel_shape"])
        layout = node.attrs.get("layout", "NCHW")
        out_shape = node.outputs[0].type.shape
        is_max = node.op == "MaxPool"

        def window(o):
            return self.taps(node, x, o)

        names = list(join_index("n", "c", ["oh", "ow", "od"][:nsp], layout)) if nsp <= 3 else None

        lp = node.attrs.get("p")

        def body(*i):
            n, c, o = split_index(i, layout)
            rs, idx, _ = window(o)
            src = x(*join_index(n, c, idx, layout))
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

        def avg(*i):
            _, _, counts = window(split_index(i, layout)[2])
            cnt = counts[0]
            for cc in counts[1:]:
                cnt = cnt * cc
            return red(*i) / Cast(x.dtype, cnt)
        return [te.compute(out_shape, avg, "avg", names)]


@register
class MaxPool(_Pool):
    name = "MaxPool"
    dtypes = FLOATS + ("int8", "uint8", "int16")    # a max is exact on quantised values (TFLite's int8 pool)

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


def _strip_layout(node):
    return node.attrs.get("layout", "NCHW")


@register
class StripSum(Op):
    """A strip of a global average pool run patch by patch (aot/passes/patch.py): each channel's
    sum over the strip's pixels, in int32 for an integer strip (exact, as TFLite's pool sums),
    else in its float type, plus the sum of the strips before (the optional second input), so
    that one running sum is live, not one per strip."""
    name = "StripSum"
    internal = True
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = FLOATS + ("int8", "uint8", "int16")

    def infer(self, node):
        x = node.inputs[0].type
        if len(x.shape) != 4:
            raise OpError(node, "input must have rank 4")
        n, c = (x.shape[0], x.shape[3]) if _strip_layout(node) == "NHWC" else x.shape[:2]
        shape = (n, 1, 1, c) if _strip_layout(node) == "NHWC" else (n, c, 1, 1)
        return [TensorType(shape, x.dtype if x.dtype in FLOATS else "int32")]

    def reference(self, node, x, before=None):
        axes = (1, 2) if _strip_layout(node) == "NHWC" else (2, 3)
        acc = np.int64 if x.dtype.kind in "iu" else np.float64
        total = x.astype(acc).sum(axis=axes, keepdims=True)
        if before is not None:
            total = total + before
        return [total.astype(node.outputs[0].type.dtype)]

    def compute(self, node, x, before=None):
        nhwc = _strip_layout(node) == "NHWC"
        shape = node.inputs[0].type.shape
        rows, cols = (shape[1], shape[2]) if nhwc else (shape[2], shape[3])
        dt = node.outputs[0].type.dtype
        same = node.inputs[0].type.dtype == dt

        def body(n, a, b, c):
            rh, rw = te.reduce_axis(rows, "rh"), te.reduce_axis(cols, "rw")
            v = x(n, rh.var, rw.var, c) if nhwc else x(n, a, rh.var, rw.var)
            return te.sum(v if same else Cast(dt, v), [rh, rw])
        total = te.compute(node.outputs[0].type.shape, body, "strip_sum")
        if before is None:
            return [total]
        return [te.compute(node.outputs[0].type.shape, lambda *i: total(*i) + before(*i), "strip_total")]


@register
class StripMean(Op):
    """The global average pool of a patched stage: the strips' running sum (StripSum) divided by
    the pool's pixel count `count` as the pool divides: in float, or, given out_dtype, as
    TFLite's int8 average pool (rounded half away from zero, clamped to act_min..act_max)."""
    name = "StripMean"
    internal = True
    pattern = Pattern.ELEMWISE
    dtypes = FLOATS + ("int32",)

    def infer(self, node):
        x = node.inputs[0].type
        return [TensorType(x.shape, node.attrs.get("out_dtype", x.dtype))]

    def reference(self, node, total):
        a = node.attrs
        n = int(a["count"])
        if "out_dtype" not in a:
            return [(total.astype(np.float64) / n).astype(total.dtype)]
        s = total.astype(np.int64)
        q = np.where(s > 0, (s + n // 2) // n, -((n // 2 - s) // n))      # C's division truncates toward 0
        return [np.clip(q, a["act_min"], a["act_max"]).astype(a["out_dtype"])]

    def compute(self, node, x):
        a = node.attrs
        dt = node.inputs[0].type.dtype

        def body(*i):
            total = x(*i)
            if "out_dtype" not in a:
                return total / Const(float(a["count"]), dt)
            cnt, half = Const(int(a["count"]), "int32"), Const(int(a["count"]) // 2, "int32")
            q = Select(gt(total, Const(0, "int32")), Bin("/", total + half, cnt), Bin("/", total - half, cnt))
            return Cast(a["out_dtype"], min_(max_(q, Const(int(a["act_min"]), "int32")),
                                            Const(int(a["act_max"]), "int32")))
        return [te.compute(node.outputs[0].type.shape, body, "strip_mean")]
