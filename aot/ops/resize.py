"""Resize / Upsample. Every coordinate mapping is static, so each resized axis becomes a
constant table of source taps (index, weight) computed here at compile time; the kernel is
a small weighted gather over the taps of each axis (separable, as ONNX defines it)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..te import tensor as te
from ..errors import InternalError
from ..ir.graph import TensorType, Value
from ..tir.expr import Cast, Const, all_of, call, is_float, max_, min_, ne, select
from .registry import NUMERIC, Op, Pattern, register


def _source_coord(o, I, O, scale, ctm, roi_lo, roi_hi):
    """Position in the input that output index o maps to (None: outside, extrapolate).

    Exact rational arithmetic (scale and roi are binary floats or, from `sizes`, ratios of
    integers, so Fractions hold them exactly): nearest rounding and the integer test below
    must not depend on round-off, e.g. half_pixel_symmetric lands exactly on integers that
    float64 misses by one ulp. `out_w` = scale * I is the spec's possibly fractional
    output_width: align_corners and tf_crop_and_resize divide by out_w - 1, not by the
    integer length O - 1, as the ONNX backend test data (resize_downsample_scales_*_
    align_corners) and the reference implementation do; onnxruntime uses O - 1."""
    scale, roi_lo, roi_hi = Fraction(scale), Fraction(roi_lo), Fraction(roi_hi)
    out_w = scale * I
    half = Fraction(1, 2)
    if ctm == "align_corners":
        return Fraction(0) if out_w == 1 else o * (I - 1) / (out_w - 1)
    if ctm == "asymmetric":
        return o / scale
    if ctm == "tf_crop_and_resize":
        x = (roi_hi - roi_lo) * (I - 1) / 2 if out_w == 1 else o * (roi_hi - roi_lo) * (I - 1) / (out_w - 1)
        x += roi_lo * (I - 1)
        return None if x < 0 or x > I - 1 else x
    if ctm == "pytorch_half_pixel":
        return -half if out_w == 1 else (o + half) / scale - half
    if ctm == "half_pixel":
        return (o + half) / scale - half
    if ctm == "half_pixel_symmetric":
        adj = O / out_w
        return Fraction(I, 2) * (1 - adj) + (o + half) / scale - half
    raise InternalError(f"coordinate transformation mode {ctm!r} passed canon()")


def _coeffs(mode, ratio, scale, a, antialias, nearest_mode):
    if mode == "nearest":
        if float(ratio).is_integer():
            return [0.0, 1.0]
        lo_wins = {"round_prefer_floor": ratio <= 0.5, "round_prefer_ceil": ratio < 0.5,
                   "floor": True, "ceil": False}[nearest_mode]
        return [1.0, 0.0] if lo_wins else [0.0, 1.0]
    if mode == "linear":
        if not antialias:
            return [1 - ratio, ratio]
        s = min(scale, 1.0)
        start = int(math.floor(-1 / s) + 1)
        c = [min(max(1 - abs((i - ratio) * s), 0.0), 1.0) for i in range(start, 2 - start)]
        return [v / sum(c) for v in c]
    if not antialias:
        r, q = ratio, 1 - ratio
        return [((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                ((a + 2) * r - (a + 3)) * r * r + 1,
                ((a + 2) * q - (a + 3)) * q * q + 1,
                ((a * (q + 1) - 5 * a) * (q + 1) + 8 * a) * (q + 1) - 4 * a]
    s = min(scale, 1.0)

    def k(x):
        x = abs(x)
        if x <= 1:
            return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
        return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a if x < 2 else 0.0
    start = int(math.floor(-2 / s) + 1)
    c = [k(s * (i - ratio)) for i in range(start, 2 - start)]
    return [v / sum(c) for v in c]


def _neighbours(x, n, I):
    """The n indices nearest to x (ties to the smaller), over the input padded by edge copies."""
    pad = math.ceil(n / 2)
    base = math.floor(x)
    cands = range(max(-pad, base - n - 1), min(I + pad, base + n + 2))
    return sorted(sorted(cands, key=lambda i: (abs(x - i), i))[:n])


def axis_taps(I, O, scale, attrs, roi_lo, roi_hi):
    """(indices [O, T] clamped into the input, weights [O, T], inside [O]) for one axis."""
    mode, ctm = attrs["mode"], attrs["ctm"]
    rows = []
    for o in range(O):
        x = _source_coord(o, I, O, scale, ctm, roi_lo, roi_hi)
        if x is None:
            rows.append(None)
            continue
        frac = x - math.floor(x)          # kept exact for nearest's tie tests (round_prefer_*)
        ratio = 1.0 if frac == 0 else frac if mode == "nearest" else float(frac)
        c = _coeffs(mode, ratio, scale, attrs["cubic_coeff_a"], attrs["antialias"], attrs["nearest_mode"])
        idx = _neighbours(x, len(c), I)
        if attrs["exclude_outside"]:
            c = [0.0 if not 0 <= i < I else v for v, i in zip(c, idx)]
            total = sum(c)
            c = [v / total for v in c]
        taps = [(min(max(i, 0), I - 1), v) for i, v in zip(idx, c)]
        if mode == "nearest":
            taps = [t for t in taps if t[1] == 1.0][:1]
        rows.append(taps)
    T = max((len(r) for r in rows if r is not None), default=1)
    ind = np.zeros((O, T), np.int32)
    w = np.zeros((O, T), np.float64)
    inside = np.ones(O, np.uint8)
    for o, r in enumerate(rows):
        if r is None:
            inside[o] = 0
            continue
        for t, (i, v) in enumerate(r):
            ind[o, t], w[o, t] = i, v
    return ind, w, inside


def _const(name, arr):
    return Value(name, TensorType(arr.shape, str(arr.dtype)), arr)


@register
class Resize(Op):
    names = ("Resize", "Upsample")
    pattern = Pattern.OPAQUE
    dtypes = NUMERIC

    def canon(self, ctx):
        x = ctx.inputs[0]
        shape, r = x.type.shape, len(x.type.shape)
        a = ctx.attrs
        if ctx.op == "Upsample" or ctx.opset < 11:
            scales = a.get("scales") if ctx.op == "Upsample" and ctx.opset < 9 else ctx.const_input(1, "scales")
            roi, sizes = None, None
            attrs = {"mode": a.get("mode", "nearest"), "ctm": "asymmetric", "nearest_mode": "floor"}
        else:
            roi, scales, sizes = ctx.const_input(1, "roi"), ctx.const_input(2, "scales"), ctx.const_input(3, "sizes")
            attrs = {"mode": a.get("mode", "nearest"), "ctm": a.get("coordinate_transformation_mode", "half_pixel"),
                     "nearest_mode": a.get("nearest_mode", "round_prefer_floor")}
        attrs.update(cubic_coeff_a=float(a.get("cubic_coeff_a", -0.75)), exclude_outside=int(a.get("exclude_outside", 0)),
                     antialias=int(a.get("antialias", 0)), extrapolation_value=float(a.get("extrapolation_value", 0.0)))
        if attrs["mode"] not in ("nearest", "linear", "cubic"):
            ctx.error(f"mode '{attrs['mode']}' is not supported")
        axes = a.get("axes")
        axes = list(range(r)) if axes is None else [int(v) % r for v in axes]
        scales = None if scales is None or np.size(scales) == 0 else [float(v) for v in np.reshape(scales, -1)]
        sizes = None if sizes is None or np.size(sizes) == 0 else [int(v) for v in np.reshape(sizes, -1)]
        roi = None if roi is None or np.size(roi) == 0 else [float(v) for v in np.reshape(roi, -1)]
        full_scale, out = [1.0] * r, list(shape)
        if sizes is not None:
            for k, d in enumerate(axes):
                full_scale[d] = Fraction(sizes[k], shape[d])   # exact: see _source_coord
                out[d] = sizes[k]
            policy = a.get("keep_aspect_ratio_policy", "stretch")
            if policy != "stretch":
                pick = min if policy == "not_larger" else max
                s = pick(full_scale[d] for d in axes)
                for d in axes:
                    full_scale[d], out[d] = s, int(s * shape[d] + Fraction(1, 2))
        elif scales is not None:
            for k, d in enumerate(axes):
                full_scale[d] = scales[k]
                out[d] = int(math.floor(scales[k] * shape[d]))
        else:
            ctx.error("one of scales or sizes is required")
        rois = [(0.0, 1.0)] * r
        if roi is not None:
            n = len(axes)
            for k, d in enumerate(axes):
                rois[d] = (roi[k], roi[n + k])
        resized = [d for d in range(r) if out[d] != shape[d] or full_scale[d] != 1.0 or attrs["ctm"] == "tf_crop_and_resize"]
        tables = []
        wdt = "float64" if x.type.dtype == "float64" else "float32"
        for d in resized:
            ind, w, inside = axis_taps(shape[d], out[d], full_scale[d], attrs, *rois[d])
            tables += [_const(f"{ctx.name}_idx{d}", ind), _const(f"{ctx.name}_w{d}", w.astype(wdt)),
                       _const(f"{ctx.name}_in{d}", inside)]
        ctx.inputs = [x] + tables
        ctx.attrs = {"out": out, "resized": resized, "extrapolation_value": attrs["extrapolation_value"],
                     "mode": attrs["mode"]}

    def infer(self, node):
        return [TensorType(tuple(node.attrs["out"]), node.inputs[0].type.dtype)]

    def reference(self, node, x, *tables):
        y = x.astype(np.float64)
        valid = np.ones(node.attrs["out"], bool)
        for k, d in enumerate(node.attrs["resized"]):
            ind, w, inside = tables[3 * k:3 * k + 3]
            g = np.take(y, ind.reshape(-1), axis=d).reshape(y.shape[:d] + ind.shape + y.shape[d + 1:])
            wsh = (1,) * d + w.shape + (1,) * (y.ndim - d - 1)
            y = (g * w.reshape(wsh)).sum(axis=d + 1)
            ish = (1,) * d + inside.shape + (1,) * (y.ndim - d - 1)
            valid = valid & inside.reshape(ish).astype(bool)
        y = np.where(valid, y, node.attrs["extrapolation_value"])
        return [_to_dtype(y, x.dtype)]

    def compute(self, node, x, *tables):
        out, resized = node.attrs["out"], node.attrs["resized"]
        acc_dt = "float64" if x.dtype == "float64" else "float32"

        def body(*o):
            src, weight, rs = list(o), None, []
            for k, d in enumerate(resized):
                ind, w = tables[3 * k], tables[3 * k + 1]
                r = te.reduce_axis(ind.shape[1], f"t{d}")
                rs.append(r)
                src[d] = ind(o[d], r.var)
                weight = w(o[d], r.var) if weight is None else weight * w(o[d], r.var)
            v = Cast(acc_dt, x(*src))
            v = v if weight is None else v * weight
            return te.sum(v, rs) if rs else v
        red = te.compute(tuple(out), body, "resize")
        ex = node.attrs["extrapolation_value"]
        needs_mask = any(not np.all(node.inputs[1 + 3 * k + 2].const) for k in range(len(resized)))

        def fin(*o):
            v = red(*o)
            if needs_mask:
                inside = all_of([ne(tables[3 * k + 2](o[d]), Const(0, "uint8")) for k, d in enumerate(resized)])
                v = select(inside, v, Const(ex, acc_dt))
            if is_float(x.dtype):
                return Cast(x.dtype, v)
            info = np.iinfo(x.dtype)   # integer images: round half to even, saturate
            v = call("nearbyint", v)
            return Cast(x.dtype, min_(max_(v, Const(float(info.min), acc_dt)), Const(float(info.max), acc_dt)))
        return [te.compute(tuple(out), fin, "resize_out")]


def _to_dtype(y, dtype):
    if np.dtype(dtype).kind == "f":
        return y.astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.rint(y), info.min, info.max).astype(dtype)
