"""onnxruntime's QOperator contrib ops (domain com.microsoft) -> the integer kernels.

CONTRIB_OPS is the whole list of com.microsoft ops the ONNX importer takes; any other op of that
domain is refused by name. Scales and zero points must be per-tensor compile-time constants (the
kernels' requantisation constants are computed from them here).
"""
from __future__ import annotations

import numpy as np

from ..errors import OpError, QuantRangeError
from ..ir.graph import TensorType, Value
from ..ops.quant_rules import centred_max, check_scale
from ..ops.qlinear import QLINEAR_TYPES, leaky_relu_table, requant_table, sigmoid_table, softmax_exp_table

DOMAIN = "com.microsoft"


class _Conv:
    """One contrib node's conversion: its inputs' constants, and the nodes it adds."""

    def __init__(self, pn, ins, attrs, add):
        self.pn, self.ins, self.attrs, self._add = pn, ins, attrs, add
        self.name = pn.name or pn.output[0]
        self.op = f"{DOMAIN}::{pn.op_type}"

    def error(self, msg):
        raise OpError(self, msg)

    def data(self, i, what):
        v = self.ins[i] if i < len(self.ins) else None
        if v is None:
            self.error(f"input {i} ({what}) is required")
        if v.type.dtype not in QLINEAR_TYPES:
            self.error(f"input {i} ({what}) has dtype {v.type.dtype} (supported: int8, uint8)")
        return v

    def scale(self, i, what):
        v = self.ins[i] if i < len(self.ins) else None
        if v is None or not v.is_const:
            self.error(f"{what} (input {i}) must be a compile-time constant")
        a = np.asarray(v.const)
        if a.size != 1 or a.dtype != np.float32:
            self.error(f"{what} (input {i}) must be one float32 value (per-tensor), got {a.dtype}{list(a.shape)}")
        try:
            return check_scale(np.float32(a.reshape(())), f"{what} (input {i})")
        except QuantRangeError as e:
            self.error(str(e))

    def ratio(self, value, what):
        """A float32 ratio of scales the kernel multiplies by: finite (0 * inf would be NaN)."""
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.float32(value)
        if not np.isfinite(r):
            self.error(f"{what} = {float(r)} overflows float32: the requantisation ratio must be finite")
        return r

    def zero_point(self, i, what, dtype):
        """A per-tensor zero point; an omitted one is 0 (of the data's dtype, as onnxruntime reads it)."""
        v = self.ins[i] if i < len(self.ins) else None
        if v is None:
            return 0
        if not v.is_const:
            self.error(f"{what} (input {i}) must be a compile-time constant")
        a = np.asarray(v.const)
        if a.size != 1 or str(a.dtype) != dtype:
            self.error(f"{what} (input {i}) must be one {dtype} value (per-tensor), got {a.dtype}{list(a.shape)}")
        return int(a.reshape(()))

    def add(self, op, inputs, attrs, out=None):
        return self._add(op, inputs, attrs, [out] if out else None)[0]

    def const(self, tag, array):
        return Value(f"{self.name}_{tag}", TensorType(array.shape, str(array.dtype)), array)


def _binary(kind):
    def convert(c):
        a, b = c.data(0, "A"), c.data(3, "B")
        dt = a.type.dtype
        sa, sb, sc = c.scale(1, "A_scale"), c.scale(4, "B_scale"), c.scale(6, "C_scale")
        attrs = {"kind": kind, "a_zp": c.zero_point(2, "A_zero_point", dt), "b_zp": c.zero_point(5, "B_zero_point", dt),
                 "out_zp": c.zero_point(7, "C_zero_point", dt), "out_dtype": dt}
        if kind == "add":
            attrs.update(a_ratio=float(c.ratio(sa / sc, f"A_scale {sa:.7g} / C_scale {sc:.7g}")),
                         b_ratio=float(c.ratio(sb / sc, f"B_scale {sb:.7g} / C_scale {sc:.7g}")))
        else:
            attrs["ratio"] = float(c.ratio(c.ratio(sa * sb, f"A_scale {sa:.7g} * B_scale {sb:.7g}") / sc,
                                           f"A_scale {sa:.7g} * B_scale {sb:.7g} / C_scale {sc:.7g}"))
        return c.add("QLinearBinary", [a, b], attrs, c.pn.output[0])
    return convert


def _lookup(table_fn):
    def convert(c):
        x = c.data(0, "X")
        dt = x.type.dtype
        table = table_fn(c, c.scale(1, "X_scale"), c.zero_point(2, "X_zero_point", dt),
                         c.scale(3, "Y_scale"), c.zero_point(4, "Y_zero_point", dt), dt)
        return c.add("QLookup", [x, c.const("table", table)], {}, c.pn.output[0])
    return convert


def _sigmoid(c, xs, xz, ys, yz, dt):
    return sigmoid_table(xs, xz, ys, yz, dt)


def _leaky_relu(c, xs, xz, ys, yz, dt):
    return leaky_relu_table(xs, xz, ys, yz, float(c.attrs.get("alpha", 0.01)), dt)


def _concat(c):
    """Inputs Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per tensor: an input quantised
    as the output is is copied, any other re-quantised by a table first."""
    if len(c.ins) < 5 or (len(c.ins) - 2) % 3:
        c.error(f"{len(c.ins)} inputs: expected Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples")
    ys = c.scale(0, "Y_scale")
    parts = []
    dt = c.data(2, "X").type.dtype
    yz = c.zero_point(1, "Y_zero_point", dt)
    for k in range(2, len(c.ins), 3):
        x = c.data(k, "X")
        xs, xz = c.scale(k + 1, "X_scale"), c.zero_point(k + 2, "X_zero_point", x.type.dtype)
        if x.type.dtype != dt:
            c.error(f"input {k} has dtype {x.type.dtype}, the first has {dt}")
        if xs != ys or xz != yz:
            x = c.add("QLookup", [x, c.const(f"table{k}", requant_table(xs, xz, ys, yz, dt))], {})
        parts.append(x)
    if "axis" not in c.attrs:
        c.error("the axis attribute is required")
    return c.add("Concat", parts, {"axis": int(c.attrs["axis"])}, c.pn.output[0])


def _global_avg_pool(c):
    x = c.data(0, "X")
    dt = x.type.dtype
    last = int(c.attrs.get("channels_last", 0))
    shape = x.type.shape
    if len(shape) < 3:
        c.error(f"input rank {len(shape)} is below 3")
    count = int(np.prod(shape[1:-1] if last else shape[2:]))
    xs, ys = c.scale(1, "x_scale"), c.scale(3, "y_scale")
    scale = c.ratio(xs / c.ratio(ys * np.float32(count), f"y_scale {ys:.7g} * {count}"),
                    f"x_scale {xs:.7g} / (y_scale {ys:.7g} * {count})")
    attrs = {"x_zp": c.zero_point(2, "x_zero_point", dt), "out_zp": c.zero_point(4, "y_zero_point", dt),
             "scale": float(scale), "out_dtype": dt, "channels_last": last}
    return c.add("QLinearGlobalAvgPool", [x], attrs, c.pn.output[0])


def _avg_pool(c):
    """The window is the whole unpadded image: onnxruntime's global-pool kernel (integer sums),
    else its float pool."""
    x = c.data(0, "X")
    dt = x.type.dtype
    last = int(c.attrs.get("channels_last", 0))
    sp = list(x.type.shape[1:-1] if last else x.type.shape[2:])
    kernel = [int(k) for k in c.attrs.get("kernel_shape", [])]
    pads = [int(p) for p in c.attrs.get("pads", [])]
    xs, ys = c.scale(1, "x_scale"), c.scale(3, "y_scale")
    xz, yz = c.zero_point(2, "x_zero_point", dt), c.zero_point(4, "y_zero_point", dt)
    if kernel == sp and not any(pads) and c.attrs.get("auto_pad", "NOTSET") in ("NOTSET", "VALID"):
        count = int(np.prod(sp))
        scale = c.ratio(xs / c.ratio(ys * np.float32(count), f"y_scale {ys:.7g} * {count}"),
                        f"x_scale {xs:.7g} / (y_scale {ys:.7g} * {count})")
        attrs = {"x_zp": xz, "out_zp": yz, "scale": float(scale),
                 "out_dtype": dt, "channels_last": last}
        return c.add("QLinearGlobalAvgPool", [x], attrs, c.pn.output[0])
    attrs = {k: v for k, v in c.attrs.items() if k != "channels_last"}
    c.ratio(xs * np.float32(centred_max(xz, dt)) * np.float32(np.prod(kernel or [1])),
            f"x_scale {xs:.7g} * the window's largest sum")       # dequantised window sums stay finite
    attrs.update(x_zp=xz, out_zp=yz, x_scale=float(xs), y_scale=float(ys), out_dtype=dt,
                 layout="NHWC" if last else "NCHW")
    return c.add("QLinearAvgPool", [x], attrs, c.pn.output[0])


def _softmax(c):
    """opset (required) < 13: a row is every dim from axis on; else the axis alone. The axis
    defaults to -1 either way (the contrib schema's default, which onnxruntime reads)."""
    x = c.data(0, "X")
    dt = x.type.dtype
    rank = len(x.type.shape)
    if "opset" not in c.attrs:
        c.error("the opset attribute is required")
    old = int(c.attrs["opset"]) < 13
    axis = int(c.attrs.get("axis", -1))
    if not -rank <= axis < rank:
        c.error(f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    axes = list(range(axis, rank)) if old else [axis]
    row_len = int(np.prod([x.type.shape[d] for d in axes]))
    xs, ys = c.scale(1, "X_scale"), c.scale(3, "Y_scale")
    attrs = {"axes": axes, "scale": float(np.floor(c.ratio(np.float32(1.0) / ys, f"1 / Y_scale {ys:.7g}"))),
             "out_zp": c.zero_point(4, "Y_zero_point", dt), "out_dtype": dt}
    c.zero_point(2, "X_zero_point", dt)     # checked; a shift of every x cancels in a softmax
    return c.add("QLinearSoftmax", [x, c.const("exp", softmax_exp_table(xs, row_len))], attrs, c.pn.output[0])


CONTRIB_OPS = {
    "QLinearSoftmax": _softmax,
    "QLinearAveragePool": _avg_pool,
    "QLinearAdd": _binary("add"),
    "QLinearMul": _binary("mul"),
    "QLinearSigmoid": _lookup(_sigmoid),
    "QLinearLeakyRelu": _lookup(_leaky_relu),
    "QLinearConcat": _concat,
    "QLinearGlobalAveragePool": _global_avg_pool,
}


def unsupported_reason(op_type):
    """None when a com.microsoft op is supported, else the refusal naming it."""
    if op_type in CONTRIB_OPS:
        return None
    return (f"operator {DOMAIN}::{op_type} is not supported (supported {DOMAIN} ops: "
            f"{', '.join(sorted(CONTRIB_OPS))})")


def convert(pn, ins, attrs, add):
    """Add the nodes of one com.microsoft node; returns its output value."""
    return CONTRIB_OPS[pn.op_type](_Conv(pn, ins, attrs, add))
