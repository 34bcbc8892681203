"""topi.nn.conv2d and its layouts (TVM: conv2d_nchw, conv2d_nhwc, conv): a pad stage named pad_temp
(kept even without padding, as TVM keeps it), then the convolution, one stage named
conv2d_<layout> (tag the same) whose loops are the output axes (nn, ff, yy, xx) then the reduce
axes (rc, ry, rx): the names and order a TIR pass matching TVM's conv2d_nchw block relies on."""
from __future__ import annotations

from ... import te
from ...tir.expr import Const, cast
from ..utils import TopiError, compute, get_const_int, get_const_tuple
from .pad import pad


def get_pad_tuple(padding, kernel):
    """(top, left, bottom, right) from an int, (h, w), (top, left, bottom, right), "VALID" or
    "SAME" for a kernel of (kh, kw)."""
    if isinstance(padding, (tuple, list)):
        if len(padding) == 2:
            ph, pw = int(padding[0]) * 2, int(padding[1]) * 2
        elif len(padding) == 4:
            return tuple(int(p) for p in padding)
        else:
            raise TopiError(f"padding {list(padding)}: give 1, 2 or 4 sizes")
    elif isinstance(padding, int):
        ph = pw = padding * 2
    elif padding == "VALID":
        ph = pw = 0
    elif padding == "SAME":
        ph, pw = kernel[0] - 1, kernel[1] - 1
    else:
        raise TopiError(f"padding {padding!r}: an int, a tuple, 'VALID' or 'SAME'")
    top, left = (ph + 1) // 2, (pw + 1) // 2
    return top, left, ph - top, pw - left


def _pair(v, what):
    if isinstance(v, int):
        return v, v
    v = [get_const_int(x) for x in v]
    if len(v) != 2:
        raise TopiError(f"conv2d: {what} {v} must be one int or two")
    return v[0], v[1]


def conv(inp, filt, stride, padding, dilation, groups, data_layout, kernel_layout="", out_dtype=None):
    """A 2-D convolution in NCHW (kernel OIHW) or NHWC (kernel HWIO) layout, grouped or not."""
    if data_layout not in ("NCHW", "NHWC"):
        raise TopiError(f"conv2d: data layout {data_layout!r} is not NCHW or NHWC")
    kernel_layout = kernel_layout or ("OIHW" if data_layout == "NCHW" else "HWIO")
    if sorted(kernel_layout) != sorted("OIHW"):
        raise TopiError(f"conv2d: kernel layout {kernel_layout!r} is not a permutation of OIHW")
    if inp.ndim != 4 or filt.ndim != 4:
        raise TopiError(f"conv2d: data and kernel must be 4-D, not {list(inp.shape)} and {list(filt.shape)}")
    out_dtype = out_dtype or inp.dtype
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    dshape = get_const_tuple(inp.shape)
    kshape = get_const_tuple(filt.shape)
    if not all(isinstance(d, int) for d in dshape + kshape):
        raise TopiError(f"conv2d: shapes must be constant, not {list(inp.shape)} and {list(filt.shape)}")
    pos = {c: data_layout.index(c) for c in "NCHW"}
    kpos = {c: kernel_layout.index(c) for c in "OIHW"}
    batch, cin, ih, iw = (dshape[pos[c]] for c in "NCHW")
    cout, cig, kh, kw = (kshape[kpos[c]] for c in "OIHW")
    if cin % groups or cout % groups or cin // groups != cig:
        raise TopiError(f"conv2d: {cin} input channels in {groups} group(s) do not match a kernel of "
                        f"{cig} input channels per group and {cout} filters")
    top, left, bottom, right = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1))
    oh = (ih + top + bottom - (kh - 1) * dh - 1) // sh + 1
    ow = (iw + left + right - (kw - 1) * dw - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise TopiError(f"conv2d: the kernel {kh}x{kw} (dilation {dh}, {dw}) is larger than the padded input "
                        f"{ih + top + bottom}x{iw + left + right}")
    before = [0] * 4
    after = [0] * 4
    before[pos["H"]], before[pos["W"]], after[pos["H"]], after[pos["W"]] = top, left, bottom, right
    temp = pad(inp, before, after, name="pad_temp")
    ci_per_group, co_per_group = cin // groups, cout // groups

    def body(*i):
        n, f, y, x = (i[pos[c]] for c in "NCHW")
        rc = te.reduce_axis((0, ci_per_group), name="rc")
        ry = te.reduce_axis((0, kh), name="ry")
        rx = te.reduce_axis((0, kw), name="rx")
        ch = rc.var if groups == 1 else f // Const(co_per_group, "int32") * Const(ci_per_group, "int32") + rc.var
        d = {"N": n, "C": ch, "H": y * Const(sh, "int32") + ry.var * Const(dh, "int32"),
             "W": x * Const(sw, "int32") + rx.var * Const(dw, "int32")}
        k = {"O": f, "I": rc.var, "H": ry.var, "W": rx.var}
        return te.sum(cast(out_dtype, temp(*(d[c] for c in data_layout))) *
                      cast(out_dtype, filt(*(k[c] for c in kernel_layout))), axis=[rc, ry, rx])
    shape = [0] * 4
    for c, v in zip("NCHW", (batch, cout, oh, ow)):
        shape[pos[c]] = v
    names = {"N": "nn", "C": "ff", "H": "yy", "W": "xx"}
    label = f"{'group_' if groups > 1 else ''}conv2d_{data_layout.lower()}"
    return compute(tuple(shape), body, label, label, axis_names=[names[c] for c in data_layout])


def conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None):
    """Convolution of Input [batch, in_channel, height, width] by Filter [num_filter, in_channel,
    kh, kw]: stride, padding and dilation an int or a pair (padding also 4 sizes or VALID/SAME)."""
    return conv(Input, Filter, stride, padding, dilation, 1, "NCHW", "OIHW", out_dtype)


def conv2d_nhwc(Input, Filter, stride, padding, dilation, out_dtype="float32"):
    """Convolution of Input [batch, height, width, in_channel] by Filter [kh, kw, in_channel, num_filter]."""
    return conv(Input, Filter, stride, padding, dilation, 1, "NHWC", "HWIO", out_dtype)


def conv2d(input, filter, strides, padding, dilation, data_layout="NCHW", kernel_layout="", out_dtype=None):
    return conv(input, filter, strides, padding, dilation, 1, data_layout, kernel_layout, out_dtype)


def group_conv2d_nchw(Input, Filter, stride, padding, dilation, groups, out_dtype=None):
    return conv(Input, Filter, stride, padding, dilation, groups, "NCHW", "OIHW", out_dtype)


def depthwise_conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None):
    """Filter [in_channel, multiplier, kh, kw], as TVM's depthwise layout."""
    cin, mult, kh, kw = get_const_tuple(Filter.shape)
    w = compute((cin * mult, 1, kh, kw), lambda o, i, y, x: Filter(o // Const(mult, "int32"),
                                                                    o % Const(mult, "int32"), y, x),
                "depthwise_filter", "injective")
    return conv(Input, w, stride, padding, dilation, cin, "NCHW", "OIHW", out_dtype)


def conv2d_hwcn(Input, Filter, stride, padding, dilation, out_dtype=None):
    """Convolution of Input [height, width, in_channel, batch] by Filter [kh, kw, in_channel,
    num_filter] -> [out_height, out_width, num_filter, batch]: a pad stage PaddedInput, then
    Conv2dOutput (tag conv2d_hwcn) over output axes yy, xx, ff, nn and reduce axes ry, rx, rc,
    as TVM names them."""
    if Input.ndim != 4 or Filter.ndim != 4:
        raise TopiError(f"conv2d_hwcn: data and kernel must be 4-D, not {list(Input.shape)} and {list(Filter.shape)}")
    out_dtype = out_dtype or Input.dtype
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    ih, iw, cin, batch = get_const_tuple(Input.shape)
    kh, kw, kcin, cout = get_const_tuple(Filter.shape)
    if not all(isinstance(d, int) for d in (ih, iw, cin, batch, kh, kw, kcin, cout)):
        raise TopiError(f"conv2d_hwcn: shapes must be constant, not {list(Input.shape)} and {list(Filter.shape)}")
    if kcin != cin:
        raise TopiError(f"conv2d_hwcn: {cin} input channels but a kernel for {kcin}")
    top, left, bottom, right = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1))
    oh = (ih + top + bottom - (kh - 1) * dh - 1) // sh + 1
    ow = (iw + left + right - (kw - 1) * dw - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise TopiError(f"conv2d_hwcn: the kernel {kh}x{kw} is larger than the padded input")
    temp = pad(Input, [top, left, 0, 0], [bottom, right, 0, 0], name="PaddedInput")

    def body(yy, xx, ff, nn):
        ry = te.reduce_axis((0, kh), name="ry")
        rx = te.reduce_axis((0, kw), name="rx")
        rc = te.reduce_axis((0, cin), name="rc")
        return te.sum(cast(out_dtype, temp(yy * Const(sh, "int32") + ry.var * Const(dh, "int32"),
                                           xx * Const(sw, "int32") + rx.var * Const(dw, "int32"), rc.var, nn)) *
                      cast(out_dtype, Filter(ry.var, rx.var, rc.var, ff)), axis=[ry, rx, rc])
    return compute((oh, ow, cout, batch), body, "Conv2dOutput", "conv2d_hwcn", axis_names=["yy", "xx", "ff", "nn"])
