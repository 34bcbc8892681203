"""Sliding-window arithmetic shared by convolutions and pools: attributes, output sizes, valid ranges."""
from __future__ import annotations

import numpy as np

from ..errors import OpError
from ..tir.expr import Const, max_, min_
from .registry import ImportCtx


LAYOUTS = ("NCHW", "NHWC")


def layout_of(ctx) -> str:
    """The data layout attribute: "NCHW" (ONNX: channels before the spatial dims) or "NHWC"
    (TFLite: channels last, kept as it is stored so that no transpose surrounds the op)."""
    layout = ctx.attrs.get("layout", "NCHW")
    if layout not in LAYOUTS:
        ctx.error(f"layout {layout!r} is not supported (one of {', '.join(LAYOUTS)})")
    return layout


def spatial(shape, layout):
    """The spatial dimensions of a shape in `layout`."""
    return tuple(shape[2:]) if layout == "NCHW" else tuple(shape[1:-1])


def channels(shape, layout):
    return shape[1] if layout == "NCHW" else shape[-1]


def split_index(idx, layout):
    """(n, c, spatial indices) of an index tuple in `layout`."""
    return (idx[0], idx[1], list(idx[2:])) if layout == "NCHW" else (idx[0], idx[-1], list(idx[1:-1]))


def join_index(n, c, sp, layout):
    """The index tuple in `layout` of batch n, channel c, spatial position sp."""
    return (n, c, *sp) if layout == "NCHW" else (n, *sp, c)


def nchw_shape(shape, layout):
    return tuple(shape) if layout == "NCHW" else (shape[0], shape[-1], *shape[1:-1])


def to_nchw(a, layout):
    return a if layout == "NCHW" else np.moveaxis(a, -1, 1)


def from_nchw(a, layout):
    return a if layout == "NCHW" else np.moveaxis(a, 1, -1)


def window_attrs(ctx: ImportCtx, kernel, with_dilation=True):
    """Canonical strides/pads/dilations (and the layout) for conv and pooling, resolving auto_pad."""
    x = ctx.inputs[0]
    nsp = len(kernel)
    layout = layout_of(ctx)
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
            size = spatial(x.type.shape, layout)[d]
            out = -(-size // strides[d])
            total = max((out - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1 - size, 0)
            small = total // 2
            pads[d], pads[d + nsp] = (small, total - small) if auto == "SAME_UPPER" else (total - small, small)
    elif auto == "VALID":
        pads = [0] * (2 * nsp)
    elif auto not in ("NOTSET", ""):
        ctx.error(f"auto_pad={auto} is not supported")
    attrs = {"kernel_shape": list(kernel), "strides": strides, "pads": pads, "dilations": dil}
    if layout != "NCHW":
        attrs["layout"] = layout
    return attrs


def out_size(node, size, k, s, d, pb, pe, ceil_mode=False):
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


def valid_range(o, k, s, d, p, size, span_pad_ok):
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


def needs_no_clip(out, k, s, d, pb, size):
    return pb == 0 and (out - 1) * s + (k - 1) * d < size


def spatial_ref_slices(off, s, out_shape):
    return tuple(slice(o, o + (n - 1) * st + 1, st) for o, st, n in zip(off, s, out_shape))
