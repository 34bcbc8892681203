"""Convolutions: Conv and ConvTranspose (the int8 QLinearConv/ConvInteger reuse conv_sum, aot/ops/quant.py)."""
from __future__ import annotations

import itertools

import numpy as np

from ..te import tensor as te
from ..errors import OpError
from ..ir.graph import TensorType
from ..tir.expr import Const
from .registry import FLOATS, Op, Pattern, register
from .window import (channels, from_nchw, join_index, layout_of, nchw_shape, needs_no_clip, out_size, spatial,
                     spatial_ref_slices, split_index, to_nchw, valid_range, window_attrs)


def kernel_spatial(w_shape, layout):
    """The kernel's spatial extent: weights are OIHW with NCHW data, OHWI with NHWC data."""
    return list(w_shape[2:]) if layout == "NCHW" else list(w_shape[1:-1])


def weight_in_channels(w_shape, layout):
    return w_shape[1] if layout == "NCHW" else w_shape[-1]


@register
class Conv(Op):
    """ONNX's Conv; with layout="NHWC" (TFLite's CONV_2D and DEPTHWISE_CONV_2D) the data is
    channels-last and the weights OHWI, computed as stored."""
    name = "Conv"
    same_dtype = (1, 2)
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = FLOATS
    min_inputs = 2

    def canon(self, ctx):
        w = ctx.input(1)
        if len(w.type.shape) < 3:
            ctx.error("weight must have rank >= 3")
        ks = kernel_spatial(w.type.shape, ctx.attrs.get("layout", "NCHW"))
        kernel = ctx.attrs.get("kernel_shape") or ks
        if list(kernel) != ks:
            ctx.error("kernel_shape does not match the weight shape")
        attrs = window_attrs(ctx, kernel)
        attrs["group"] = int(ctx.attrs.get("group", 1))
        ctx.attrs = attrs

    def infer(self, node):
        x, w = node.inputs[0].type, node.inputs[1].type
        a, nsp = node.attrs, len(node.attrs["kernel_shape"])
        layout = a.get("layout", "NCHW")
        if len(x.shape) != nsp + 2:
            raise OpError(node, f"input rank {len(x.shape)} does not match the weight rank {len(w.shape)}")
        g = a["group"]
        cin = x.shape[1] if layout == "NCHW" else x.shape[-1]
        if cin != weight_in_channels(w.shape, layout) * g or w.shape[0] % g:
            raise OpError(node, f"channels do not match: input {cin}, weight {list(w.shape)}, group {g}")
        b = node.inputs[2] if len(node.inputs) > 2 else None
        if b is not None and tuple(b.type.shape) != (w.shape[0],):
            raise OpError(node, f"bias shape {list(b.type.shape)} must be [{w.shape[0]}]")
        size = spatial(x.shape, layout)
        sp = [out_size(node, size[d], a["kernel_shape"][d], a["strides"][d], a["dilations"][d],
                        a["pads"][d], a["pads"][d + nsp]) for d in range(nsp)]
        return [TensorType(join_index(x.shape[0], w.shape[0], sp, layout), x.dtype)]

    def reference(self, node, x, w, b=None):
        a, nsp = node.attrs, len(node.attrs["kernel_shape"])
        layout = a.get("layout", "NCHW")
        x, w = to_nchw(x, layout), to_nchw(w, layout)
        g, M = a["group"], w.shape[0]
        pads = [(0, 0), (0, 0)] + [(a["pads"][d], a["pads"][d + nsp]) for d in range(nsp)]
        xp = np.pad(x.astype(np.float64), pads)
        out_shape = nchw_shape(node.outputs[0].type.shape, layout)
        y = np.zeros(out_shape, np.float64)
        cg, mg = w.shape[1], M // g
        for gi in range(g):
            xs = xp[:, gi * cg:(gi + 1) * cg]
            ws = w[gi * mg:(gi + 1) * mg].astype(np.float64)
            for off in itertools.product(*[range(k) for k in a["kernel_shape"]]):
                start = [o * d for o, d in zip(off, a["dilations"])]
                sl = spatial_ref_slices(start, a["strides"], out_shape[2:])
                patch = xs[(slice(None), slice(None)) + sl]
                y[:, gi * mg:(gi + 1) * mg] += np.einsum("nc...,mc->nm...", patch, ws[(slice(None), slice(None)) + off])
        if b is not None:
            y += b.reshape((1, -1) + (1,) * nsp)
        return [from_nchw(y, layout).astype(x.dtype)]

    def compute(self, node, x, w, b=None):
        conv = conv_sum(node, x, w, lambda v: v, lambda v: v)
        if b is None:
            return [conv]
        names = [a.name for a in conv.op.axes]
        layout = node.attrs.get("layout", "NCHW")
        return [te.compute(conv.shape, lambda *i: conv(*i) + b(split_index(i, layout)[1]), "conv_bias", names)]


def conv_sum(node, x, w, xload, wload, wload_channel=False, product=None):
    """The convolution reduction; xload/wload adapt the loaded values (zero points, widening).
    With wload_channel, wload(value, output_channel) (a per-channel weight zero point); product
    is the tap's product before it is summed (an int32 product into an int64 sum)."""
    a = node.attrs
    nsp, g = len(a["kernel_shape"]), a["group"]
    layout = a.get("layout", "NCHW")
    out_shape = node.outputs[0].type.shape
    M, cg = w.shape[0], weight_in_channels(w.shape, layout)
    mg = M // g
    sp_names = ["oh", "ow", "od"][:nsp]
    names = list(join_index("n", "oc", sp_names, layout)) if nsp <= 3 else None
    in_size, out_sp = spatial(x.shape, layout), spatial(out_shape, layout)

    def body(*i):
        n, m, o = split_index(i, layout)
        rc = te.reduce_axis(cg, "rc")
        rs, idx = [], []
        for d in range(nsp):
            k, s, dl, p = a["kernel_shape"][d], a["strides"][d], a["dilations"][d], a["pads"][d]
            size = in_size[d]
            lo, ext = valid_range(o[d], k, s, dl, p, size, needs_no_clip(out_sp[d], k, s, dl, p, size))
            r = te.reduce_axis(ext, "r" + "hwd"[d] if nsp <= 3 else f"r{d}", min=lo)
            rs.append(r)
            idx.append(o[d] * s - p + r.var * dl)
        cin = rc.var if g == 1 else (m // mg) * cg + rc.var
        taps = [r.var for r in rs]
        wi = (m, rc.var, *taps) if layout == "NCHW" else (m, *taps, rc.var)
        wv = wload(w(*wi), m) if wload_channel else wload(w(*wi))
        tap = xload(x(*join_index(n, cin, idx, layout))) * wv
        return te.sum(product(tap) if product else tap, [rc] + rs)

    return te.compute(out_shape, body, "conv", names)


@register
class ConvTranspose(Op):
    """out[o] = sum over taps k and input channels of x[(o + pad - k*d) / s] * w[k], where the
    division is exact; taps that do not land on an input position contribute nothing. Weights
    are ONNX's [C_in, C_out / group, k...] in either data layout; layout="NHWC" (TFLite's
    TRANSPOSE_CONV, whose OHWI filter the frontend re-orders once) keeps the data channels-last."""
    name = "ConvTranspose"
    same_dtype = (1, 2)
    pattern = Pattern.OUT_ELEMWISE_FUSABLE
    dtypes = FLOATS
    min_inputs = 2

    def canon(self, ctx):
        layout = layout_of(ctx)
        x, w = ctx.inputs[0].type, ctx.inputs[1].type
        nsp = len(w.shape) - 2
        xs = spatial(x.shape, layout)
        a = ctx.attrs
        kernel = list(a.get("kernel_shape") or w.shape[2:])
        strides = list(a.get("strides") or [1] * nsp)
        dil = list(a.get("dilations") or [1] * nsp)
        opad = list(a.get("output_padding") or [0] * nsp)
        group = int(a.get("group", 1))
        auto = a.get("auto_pad", "NOTSET")
        pads = a.get("pads")
        out_shape = a.get("output_shape")
        full = [strides[d] * (xs[d] - 1) + opad[d] + (kernel[d] - 1) * dil[d] + 1 for d in range(nsp)]
        if pads is None and auto in ("SAME_UPPER", "SAME_LOWER"):
            target = list(out_shape) if out_shape else [xs[d] * strides[d] for d in range(nsp)]
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
        if layout != "NCHW":
            ctx.attrs["layout"] = layout

    def infer(self, node):
        x, w = node.inputs[0].type, node.inputs[1].type
        g, layout = node.attrs["group"], node.attrs.get("layout", "NCHW")
        if channels(x.shape, layout) != w.shape[0]:
            raise OpError(node, f"input channels {channels(x.shape, layout)} do not match weight {list(w.shape)}")
        return [TensorType(join_index(x.shape[0], w.shape[1] * g, node.attrs["out_spatial"], layout), x.dtype)]

    def reference(self, node, x, w, b=None):
        a = node.attrs
        layout = a.get("layout", "NCHW")
        x = to_nchw(x, layout)
        nsp, g = len(a["kernel_shape"]), a["group"]
        out_shape = nchw_shape(node.outputs[0].type.shape, layout)
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
        return [from_nchw(y, layout).astype(x.dtype)]

    def compute(self, node, x, w, b=None):
        conv = conv_transpose_sum(node, x, w, lambda v: v, lambda v: v)
        if b is None:
            return [conv]
        layout = node.attrs.get("layout", "NCHW")
        return [te.compute(conv.shape, lambda *i: conv(*i) + b(split_index(i, layout)[1]), "conv_transpose_bias")]


def conv_transpose_sum(node, x, w, xload, wload, product=None):
    """The transposed convolution's reduction (gather form: each output sums the taps that land
    on an input position); xload/wload adapt the loaded values (zero points, widening)."""
    from ..tir.expr import Bin, and_, eq, ge, lt, select
    a = node.attrs
    layout = a.get("layout", "NCHW")
    nsp, g = len(a["kernel_shape"]), a["group"]
    cg, mg = channels(x.shape, layout) // g, w.shape[1]
    in_size = spatial(x.shape, layout)

    def body(*i):
        n, m, o = split_index(i, layout)
        rc = te.reduce_axis(cg, "rc")
        rs = [te.reduce_axis(k, f"r{d}") for d, k in enumerate(a["kernel_shape"])]
        idx, ok = [], None
        for d in range(nsp):
            s = a["strides"][d]
            num = o[d] + a["pads"][d] - rs[d].var * a["dilations"][d]
            cond = and_(ge(num, Const(0, "int32")), lt(num, Const(s * in_size[d], "int32")))
            if s > 1:
                cond = and_(cond, eq(Bin("floormod", num, Const(s, "int32")), Const(0, "int32")))
                num = Bin("floordiv", num, Const(s, "int32"))
            idx.append(num)
            ok = cond if ok is None else and_(ok, cond)
        cin = rc.var if g == 1 else (m // mg) * cg + rc.var
        wm = m if g == 1 else m % mg
        prod = xload(x(*join_index(n, cin, idx, layout))) * wload(w(cin, wm, *[r.var for r in rs]))
        prod = product(prod) if product else prod
        return te.sum(select(ok, prod, Const(0, prod.dtype)), [rc] + rs)
    return te.compute(node.outputs[0].type.shape, body, "conv_transpose")
