"""TFLite builtin operators -> graph-IR nodes: one converter per builtin, registered by name.

A converter maps the TFLite op onto the registered ops (aot/ops/) with their canonical
attributes, as ONNX's canon() does; the op semantics stay in the op classes. NHWC data stays
NHWC: Conv and the pools take layout="NHWC", weights keep TFLite's OHWI order (a depthwise
filter [1, H, W, C*M] is re-ordered once at import, being a constant)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import QuantRangeError, TFLiteError
from ..ops import qlut, qsigmoid16, qsoftmax16
from ..ops.qarith import mean_multiplier
from ..ops.fixed_point import activation_range, quantize_multiplier, softmax_tables
from ..ops.quant_rules import centred_max, check_pair, dot_bounds, fmt, requant_multiplier, requant_multipliers

CONVERTERS: dict = {}
# ops that only move or compare int8 values: TFLite Micro requires their inputs and output to share
# one scale and zero point, and the float op computes them exactly on the raw integers
SAME_QUANT_OPS = {"RESHAPE", "SQUEEZE", "EXPAND_DIMS", "MAX_POOL_2D", "PAD", "PADV2", "CONCATENATION", "SPLIT",
                  "SLICE", "STRIDED_SLICE", "TRANSPOSE", "MAXIMUM", "MINIMUM", "RELU6"}
TABLE_OPS = {"LOGISTIC", "TANH", "RELU", "RELU6", "LEAKY_RELU", "HARD_SWISH"}     # int8: a 256-entry table
INT8_OPS = {"CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED", "ADD", "SUB", "MUL", "PRELU", "MEAN", "BATCH_MATMUL",
            "AVERAGE_POOL_2D", "SOFTMAX", "QUANTIZE", "DEQUANTIZE"} | SAME_QUANT_OPS | TABLE_OPS
# int16x8 (int16 activations of zero point 0, int8 weights, int64 bias): the ops whose TFLite Micro
# int16 kernel is the int8 one's arithmetic with other widths (conv and dense accumulate in int64);
# SOFTMAX, LOGISTIC and TANH are TFLite's table-interpolating int16 kernels (aot/ops/qsoftmax16.py,
# qsigmoid16.py); RELU a requantisation and a clamp, RELU6 a clamp, LEAKY_RELU two requantisations
# (qarith.QLeakyRelu); the other activations' int16 kernels are not supported yet
INT16_ARITH_OPS = {"CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED", "ADD", "SUB", "MUL",
                   "AVERAGE_POOL_2D", "MEAN", "RELU", "RELU6", "LEAKY_RELU", "BATCH_MATMUL"}
INT16_OPS = SAME_QUANT_OPS | INT16_ARITH_OPS | {"QUANTIZE", "DEQUANTIZE", "SOFTMAX", "LOGISTIC", "TANH"}
PADDING = {0: "SAME_UPPER", 1: "VALID"}      # TF's SAME puts the odd padding element at the end


def converts(*names):
    def deco(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn
    return deco


class Converter:
    """Graph values by TFLite tensor index, and what converters need to add nodes."""

    def __init__(self, builder, values):
        self.b, self.values = builder, values

    def convert(self, op):
        if quantised(op) and op.name not in INT8_OPS:
            raise TFLiteError(f"{op}: the integer (int8) kernel of {op.name} is not supported yet")
        if op.name not in INT16_OPS and any(t is not None and t.data is None and t.dtype == "int16"
                                            for t in op.inputs + op.outputs):
            raise TFLiteError(f"{op}: the int16 (int16x8) kernel of {op.name} is not supported yet")
        if op.name in INT16_ARITH_OPS:
            _check_int16x8(op)
        if quantised(op) and op.name in SAME_QUANT_OPS:
            acts = [t for t in op.inputs + op.outputs if t is not None and t.dtype in ("int8", "int16")]
            if len({qparams(t, op) for t in acts}) > 1:
                raise TFLiteError(f"{op}: its int8 inputs and outputs must share one scale and zero point "
                                  "(as TFLite Micro requires)")
        outs = CONVERTERS[op.name](self, op)
        if len(outs) != len(op.outputs):
            raise TFLiteError(f"{op}: makes {len(outs)} outputs, the model declares {len(op.outputs)}")
        for t, v in zip(op.outputs, outs):
            if tuple(v.type.shape) != t.shape or v.type.dtype != t.dtype:
                raise TFLiteError(f"{op}: {t} is declared {t.dtype}{list(t.shape)}, the operator computes "
                                  f"{v.type.dtype}{list(v.type.shape)}")
            self.values[t.index] = v

    def value(self, t, op):
        """The graph value of tensor t: computed by an earlier operator, or its constant (an int8
        weight of a float op, as a hybrid model has, is dequantised here)."""
        if t is None:
            return None
        if t.index in self.values:
            return self.values[t.index]
        if t.data is None:
            raise TFLiteError(f"{op}: reads {t}, which no earlier operator writes and which has no data")
        data = t.data
        if quantised(op):
            return self.b.const(t.name, data)           # an integer kernel reads it as stored
        if t.quantised and data.dtype.kind in "iu" and t.dtype != "int32":
            data = dequantise(t)
        elif data.dtype == np.float16:
            data = data.astype(np.float32)
        v = self.b.const(t.name, data)
        self.values[t.index] = v
        return v

    def raw(self, t, op):
        """A constant as stored (int8 weights of an integer kernel stay int8)."""
        if t is None or t.data is None:
            raise TFLiteError(f"{op}: {t} must be a constant")
        return self.b.const(t.name, t.data)

    def inputs(self, op, n=None):
        ins = [self.value(t, op) for t in op.inputs]
        return ins if n is None else (ins + [None] * n)[:n]

    def const(self, op, k, what):
        """Input k's constant value (an axis, a shape, paddings)."""
        t = op.inputs[k] if k < len(op.inputs) else None
        if t is None or t.data is None:
            raise TFLiteError(f"{op}: its {what} (input {k}) must be a constant")
        return t.data

    def node(self, op_type, inputs, attrs=None, name=None, **kw):
        return self.b.op(op_type, inputs, attrs, name=name, **kw)

    def ints(self, values):
        return self.b.const("shape", np.asarray(values, np.int64))

    def activation(self, v, op):
        """The op's fused activation after v (on quantised values: the clamp TFLite applies)."""
        code = op.opt("FusedActivationFunction", 0)
        name = f"{op.outputs[0].name}_act"
        if code == 0:
            return v
        if quantised(op):
            out = op.outputs[0]
            lo, hi = activation_range(code, *qparams(out, op), out.dtype)
            bounds = [self.b.const(k, np.asarray(b, out.dtype)) for k, b in (("lo", lo), ("hi", hi))]
            return self.node("Clip", [v] + bounds, name=name)
        if code == 1:
            return self.node("Relu", [v], name=name)
        if code in (2, 3):
            lo, hi = (-1.0, 1.0) if code == 2 else (0.0, 6.0)
            return self.node("Clip", [v, self.b.const("lo", np.float32(lo)), self.b.const("hi", np.float32(hi))],
                             name=name)
        if code == 4:
            return self.node("Tanh", [v], name=name)
        raise TFLiteError(f"{op}: fused activation {code} is not supported")

    def reshape(self, v, shape, name):
        if tuple(v.type.shape) == tuple(shape):
            return v
        return self.node("Reshape", [v, self.ints(list(shape))], name=name)


def quantised(op):
    """Whether op computes on quantised integers: an activation (a non-constant input or output)
    is int8/int16."""
    return any(t is not None and t.data is None and t.dtype in ("int8", "uint8", "int16")
               for t in op.inputs + op.outputs)


def _check_int16x8(op):
    """TFLite Micro's int16x8 kernels take int16 activations only, each of zero point 0."""
    acts = [t for t in op.inputs + op.outputs if t is not None and t.data is None]
    if not any(t.dtype == "int16" for t in acts):
        return
    for t in acts:
        if t.dtype != "int16":
            raise TFLiteError(f"{op}: {t} is {t.dtype}; an int16 (int16x8) {op.name} takes int16 activations only")
        if qparams(t, op)[1] != 0:
            raise TFLiteError(f"{op}: {t} has zero point {qparams(t, op)[1]}; int16 (int16x8) activations need "
                              "zero point 0 (as TFLite Micro requires)")


def _accumulator(op, x, bias):
    """{"acc_dtype": "int64"} where TFLite Micro accumulates an int16x8 conv or dense layer in
    int64: with an int64 bias (TRANSPOSE_CONV: or int16), or with none unless the op's
    quantized_bias_type is int32 (DEPTHWISE_CONV_2D and TRANSPOSE_CONV: always int64)."""
    if x.dtype != "int16":
        return {}
    always = op.name in ("DEPTHWISE_CONV_2D", "TRANSPOSE_CONV")
    if bias is None:
        int32 = not always and op.opt("QuantizedBiasType", 0) == 2      # TensorType.INT32
        return {} if int32 else {"acc_dtype": "int64"}
    allowed = {"DEPTHWISE_CONV_2D": ("int64",), "TRANSPOSE_CONV": ("int64", "int16")}.get(op.name, ("int32", "int64"))
    if bias.dtype not in allowed:
        need = " or ".join(allowed)
        raise TFLiteError(f"{op}: {bias} is {bias.dtype}; an int16 (int16x8) {op.name} needs an {need} bias")
    return {} if bias.dtype == "int32" else {"acc_dtype": "int64"}


def qparams(t, op):
    """(scale, zero point) of a per-tensor quantised tensor."""
    if not t.quantised:
        raise TFLiteError(f"{op}: {t} is {t.dtype} without quantisation parameters (scale, zero point)")
    if len(t.scale) != 1:
        raise TFLiteError(f"{op}: {t} has per-channel parameters where one scale is expected")
    return np.float32(t.scale[0]), int(t.zero_point[0])


def requant_attrs(op, x, out, reals, filt, rows=None, bias=None, wide=False):
    """The attributes (and per-channel constant inputs) of a requantising integer op: reals are
    the per-tensor or per-channel real multipliers, in float64 as TFLite Micro computes them, of
    input x, the weights filt and output out; rows (filt's values, one row per output channel)
    and bias bound each channel's accumulator, which the multiplier's left shift must keep
    inside int32 (quant_rules)."""
    xs, xz = qparams(x, op)
    os_, oz = qparams(out, op)
    lo, hi = activation_range(op.opt("FusedActivationFunction", 0), os_, oz, out.dtype)
    attrs = {"x_zp": xz, "out_zp": oz, "act_min": lo, "act_max": hi, "out_dtype": out.dtype}
    reals = np.atleast_1d(reals)
    bounds = None if rows is None else dot_bounds(rows, centred_max(xz, x.dtype), bias)
    if bounds is not None and len(reals) == 1:
        bounds = bounds.max(initial=0)              # one multiplier for every channel
    ws = filt.scale

    def what(k):
        ch = f" (channel {k})" if len(reals) > 1 else ""
        return (f"input '{x.name}' scale {fmt(xs)} * filter '{filt.name}' scale {fmt(ws[min(k, len(ws) - 1)])} / "
                f"output '{out.name}' scale {fmt(os_)}{ch}")
    pairs = requant_multipliers(reals, what, bounds, wide)
    if len(pairs) == 1:
        attrs["multiplier"], attrs["shift"] = pairs[0]
        return attrs, []
    return attrs, [np.array([p[0] for p in pairs], np.int32), np.array([p[1] for p in pairs], np.int32)]


def _ratio(x, xs, out, os_, extra=""):
    """The scales a requantisation multiplier comes from, as a refusal names them."""
    return f"input '{x.name}' scale {fmt(xs)}{extra} / output '{out.name}' scale {fmt(os_)}"


def _bias_data(op, t):
    """The int32/int64 bias of a requantising op as stored (TFLite's kernels add it raw: a zero
    point other than 0 would be ignored, so it is refused), or None."""
    if t is None:
        return None
    if t.quantised and np.any(t.zero_point != 0):
        raise QuantRangeError(f"bias '{t.name}' has zero point {int(t.zero_point[np.argmax(t.zero_point != 0)])}; "
                              "TFLite's integer kernels add the bias as stored (zero point 0)")
    return t.data


def _weights_scales(w, op):
    if not w.quantised:
        raise TFLiteError(f"{op}: {w} is {w.dtype} without quantisation parameters")
    if np.any(w.zero_point != 0):
        raise TFLiteError(f"{op}: {w} has a non-zero zero point; TFLite's int8 kernels take symmetric weights")
    return w.scale


def dequantise(t):
    """real = scale * (q - zero_point), per tensor or along t.axis."""
    sh = [1] * t.data.ndim
    if len(t.scale) > 1:
        sh[t.axis] = -1
    q = t.data.astype(np.float32) - t.zero_point.astype(np.float32).reshape(sh)
    return (q * t.scale.reshape(sh)).astype(np.float32)


def _out(op):
    return op.outputs[0].name


# -- convolutions and dense -----------------------------------------------------------------
def _window(op):
    return {"layout": "NHWC", "strides": [op.opt("StrideH"), op.opt("StrideW")], "auto_pad": PADDING[op.opt("Padding")]}


def _conv_node(cx, op, x, w, b, attrs):
    """A float Conv + activation, or on int8 a QConv with TFLite's per-channel multipliers:
    real = double(input scale) * double(filter scale[c]) / double(output scale)."""
    if not quantised(op):
        y = cx.node("Conv", [x, w] + ([b] if b is not None else []), attrs, name=_out(op))
        return [cx.activation(y, op)]
    xs = qparams(op.inputs[0], op)[0]
    ws = _weights_scales(op.inputs[1], op)
    os_ = qparams(op.outputs[0], op)[0]
    reals = np.float64(xs) * ws.astype(np.float64) / np.float64(os_)
    acc = _accumulator(op, op.inputs[0], op.inputs[2] if len(op.inputs) > 2 else None)
    wq = op.inputs[1].data
    rows = wq.reshape(-1, wq.shape[-1]).T if op.name == "DEPTHWISE_CONV_2D" and wq is not None else wq  # per channel
    qa, extra = requant_attrs(op, op.inputs[0], op.outputs[0], reals, op.inputs[1], rows,
                              _bias_data(op, op.inputs[2] if len(op.inputs) > 2 else None), bool(acc))
    qa.update(acc)
    ins = [x, w, b] + [cx.b.const(f"{_out(op)}_{k}", a) for k, a in zip(("multiplier", "shift"), extra)]
    while ins and ins[-1] is None:
        ins.pop()
    return [cx.node("QConv", ins, dict(attrs, **qa), name=_out(op))]


@converts("CONV_2D")
def conv_2d(cx, op):
    x, w, b = cx.inputs(op, 3)          # an int8 kernel's weights as stored, a float one's dequantised
    cin, wc = x.type.shape[-1], w.type.shape[-1]
    if len(w.type.shape) != 4 or cin % wc:
        raise TFLiteError(f"{op}: filter {list(w.type.shape)} does not fit {cin} input channels")
    attrs = dict(_window(op), dilations=[op.opt("DilationHFactor"), op.opt("DilationWFactor")], group=cin // wc)
    return _conv_node(cx, op, x, w, b, attrs)


@converts("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(cx, op):
    x, _, b = cx.inputs(op, 3)
    wt = op.inputs[1]
    if wt.data is None or len(wt.shape) != 4 or wt.shape[0] != 1:
        raise TFLiteError(f"{op}: the filter must be a constant [1, H, W, C*M]")
    c = x.type.shape[-1]
    if wt.shape[-1] % c:
        raise TFLiteError(f"{op}: filter {list(wt.shape)} is not a multiple of {c} input channels")
    w = cx.value(wt, op)
    # [1, H, W, C*M] -> OHWI with I = 1: output channel c*M + m reads input channel c (group c)
    w = cx.b.const(wt.name, np.ascontiguousarray(np.transpose(w.const, (3, 1, 2, 0))))
    attrs = dict(_window(op), dilations=[op.opt("DilationHFactor"), op.opt("DilationWFactor")], group=c)
    return _conv_node(cx, op, x, w, b, attrs)


@converts("TRANSPOSE_CONV")
def transpose_conv(cx, op):
    """NHWC kept; the OHWI filter becomes ConvTranspose's [I, O, kh, kw] once at import. The
    output is cropped as TFLite pads: (the output size the input implies - 1) * stride + kernel
    - declared output, halved, at the top and left."""
    shape = [int(v) for v in np.asarray(cx.const(op, 0, "output shape")).reshape(-1)]
    wt, xt = op.inputs[1], op.inputs[2]
    bt = op.inputs[3] if len(op.inputs) > 3 else None
    if wt.data is None or len(wt.shape) != 4:
        raise TFLiteError(f"{op}: the filter must be a constant [O, H, W, I]")
    x = cx.value(xt, op)
    if len(x.type.shape) != 4 or len(shape) != 4 or x.type.shape[-1] != wt.shape[-1] or shape[-1] != wt.shape[0] \
            or shape[0] != x.type.shape[0]:
        raise TFLiteError(f"{op}: input {list(x.type.shape)}, filter {list(wt.shape)} and output shape {shape} "
                          "do not fit together")
    strides = [op.opt("StrideH"), op.opt("StrideW")]
    begin, end = [], []
    for d in range(2):
        out, k, s, n = shape[1 + d], wt.shape[1 + d], strides[d], x.type.shape[1 + d]
        implied = -(-out // s) if op.opt("Padding") == 0 else (out - k + s) // s
        pad = max((implied - 1) * s + k - out, 0) // 2
        extra = (n - 1) * s + k - out - pad
        if extra < 0:
            raise TFLiteError(f"{op}: output size {out} is beyond what a {k}-tap, stride-{s} transposed "
                              f"convolution of {n} positions reaches")
        begin.append(pad)
        end.append(extra)
    w = cx.value(wt, op).const
    w = cx.b.const(wt.name, np.ascontiguousarray(np.transpose(w, (3, 0, 1, 2))))
    attrs = {"layout": "NHWC", "strides": strides, "pads": begin + end, "kernel_shape": list(wt.shape[1:3])}
    b = cx.value(bt, op) if bt is not None else None
    if not quantised(op):
        y = cx.node("ConvTranspose", [x, w] + ([b] if b is not None else []), attrs, name=_out(op))
        return [cx.activation(y, op)]
    xs = qparams(xt, op)[0]
    ws = _weights_scales(wt, op)
    os_ = qparams(op.outputs[0], op)[0]
    acc = _accumulator(op, xt, bt)
    qa, extra = requant_attrs(op, xt, op.outputs[0], np.float64(xs) * ws.astype(np.float64) / np.float64(os_),
                              wt, wt.data, _bias_data(op, bt), bool(acc))
    qa.update(acc)
    ins = [x, w, b] + [cx.b.const(f"{_out(op)}_{k}", a) for k, a in zip(("multiplier", "shift"), extra)]
    while ins and ins[-1] is None:
        ins.pop()
    return [cx.node("QConvTranspose", ins, dict(attrs, **qa), name=_out(op))]


@converts("FULLY_CONNECTED")
def fully_connected(cx, op):
    x, w, b = cx.inputs(op, 3)
    if op.opt("WeightsFormat", 0) != 0:
        raise TFLiteError(f"{op}: shuffled weight formats are not supported")
    k = w.type.shape[-1]
    if x.type.size % k:
        raise TFLiteError(f"{op}: input {list(x.type.shape)} does not divide into rows of {k}")
    rows = cx.reshape(x, (x.type.size // k, k), f"{_out(op)}_rows")
    if quantised(op):
        # double(input scale) * double(filter scale) / double(output scale): with the product taken
        # in float instead, 3 of 64,000 AD01 outputs on random inputs are 1 LSB off TFLite Micro
        w = cx.raw(op.inputs[1], op)
        ws = _weights_scales(op.inputs[1], op)
        xs, os_ = qparams(op.inputs[0], op)[0], qparams(op.outputs[0], op)[0]
        reals = np.float64(xs) * ws.astype(np.float64) / np.float64(os_)
        bt = op.inputs[2] if len(op.inputs) > 2 else None
        acc = _accumulator(op, op.inputs[0], bt)
        qa, extra = requant_attrs(op, op.inputs[0], op.outputs[0], reals, op.inputs[1], op.inputs[1].data,
                                  _bias_data(op, bt), bool(acc))
        qa.update(acc)
        ins = [rows, w, b] + [cx.b.const(f"{_out(op)}_{k}", a) for k, a in zip(("multiplier", "shift"), extra)]
        while ins and ins[-1] is None:
            ins.pop()
        y = cx.node("QDense", ins, qa, name=_out(op))
    else:
        y = cx.activation(cx.node("Gemm", [rows, w] + ([b] if b is not None else []), {"transB": 1}, name=_out(op)),
                          op)
    return [cx.reshape(y, op.outputs[0].shape, f"{_out(op)}_shape")]


@converts("BATCH_MATMUL")
def batch_matmul(cx, op):
    a, b = cx.inputs(op, 2)

    def adj(v, flag, what):
        if not flag:
            return v
        perm = list(range(len(v.type.shape)))
        perm[-2:] = perm[-2:][::-1]
        return cx.node("Transpose", [v], {"perm": perm}, name=f"{_out(op)}_{what}")
    ins = [adj(a, op.opt("AdjX"), "adj_x"), adj(b, op.opt("AdjY"), "adj_y")]
    if quantised(op):
        (s1, z1), (s2, z2) = qparams(op.inputs[0], op), qparams(op.inputs[1], op)
        so, zo = qparams(op.outputs[0], op)
        ta, tb = op.inputs[0], op.inputs[1]
        depth = ta.shape[-2] if op.opt("AdjX") else ta.shape[-1]
        m, sh = requant_multiplier(float(s1 * s2) / np.float64(so),         # the scale product in float
                                   f"input '{ta.name}' scale {fmt(s1)} * input '{tb.name}' scale {fmt(s2)} / output "
                                   f"'{op.outputs[0].name}' scale {fmt(so)}",
                                   depth * centred_max(z1, ta.dtype) * centred_max(z2, tb.dtype),
                                   wide=op.outputs[0].dtype == "int16")
        attrs = {"x_zp": z1, "y_zp": z2, "out_zp": zo, "multiplier": m, "shift": sh, "out_dtype": op.outputs[0].dtype}
        if op.outputs[0].dtype == "int16":
            attrs["acc_dtype"] = "int64"            # TFLite Micro sums int16 products in int64
        return [cx.node("QBatchMatMul", ins, attrs, name=_out(op))]
    return [cx.node("MatMul", ins, name=_out(op))]


# -- elementwise ------------------------------------------------------------------------------
def _qadd(cx, op):
    """TFLite's int8 ADD and SUB: both inputs to twice the larger scale with 20 bits of headroom
    (int16: 15), the scale ratios divided in double by both Prepares (the tflite-micro wheel's SUB
    agrees with ADD on every tie; dividing in float, as older SUBs did, is 1 LSB off on some)."""
    (s1, z1), (s2, z2) = qparams(op.inputs[0], op), qparams(op.inputs[1], op)
    so, zo = qparams(op.outputs[0], op)
    left = 20 if op.outputs[0].dtype == "int8" else 15
    twice = 2.0 * np.float64(max(s1, s2))
    r1, r2, ro = np.float64(s1) / twice, np.float64(s2) / twice, twice / ((1 << left) * np.float64(so))
    a, b, out = op.inputs[0], op.inputs[1], op.outputs[0]
    x1, x2 = centred_max(z1, a.dtype) << left, centred_max(z2, b.dtype) << left
    (m1, sh1), (m2, sh2) = (requant_multiplier(r, f"input '{t.name}' scale {fmt(s)} / twice the larger input scale",
                                               bound) for r, t, s, bound in ((r1, a, s1, x1), (r2, b, s2, x2)))
    total = int(np.ceil(x1 * r1)) + int(np.ceil(x2 * r2)) + 2           # the rescaled inputs' sum, rounding included
    mo, sho = requant_multiplier(ro, f"twice the larger input scale {fmt(max(s1, s2))} / 2^{left} / output "
                                     f"'{out.name}' scale {fmt(so)}", total)
    lo, hi = activation_range(op.opt("FusedActivationFunction", 0), so, zo, op.outputs[0].dtype)
    attrs = {"x_zp": z1, "y_zp": z2, "out_zp": zo, "left_shift": left, "x_multiplier": m1, "x_shift": sh1,
             "y_multiplier": m2, "y_shift": sh2, "multiplier": mo, "shift": sho, "act_min": lo, "act_max": hi,
             "out_dtype": op.outputs[0].dtype}
    if op.name == "SUB":
        attrs["subtract"] = 1
    return [cx.node("QAdd", _int_inputs(cx, op, 2), attrs, name=_out(op))]


def _int_inputs(cx, op, n):
    return [cx.raw(t, op) if t.data is not None else cx.value(t, op) for t in op.inputs[:n]]


def _qmul(cx, op):
    """TFLite's int8 MUL: real multiplier double(s1) * double(s2) / double(out scale)."""
    (s1, z1), (s2, z2) = qparams(op.inputs[0], op), qparams(op.inputs[1], op)
    so, zo = qparams(op.outputs[0], op)
    a, b = op.inputs[0], op.inputs[1]
    m, sh = requant_multiplier(np.float64(s1) * np.float64(s2) / np.float64(so),
                               f"input '{a.name}' scale {fmt(s1)} * input '{b.name}' scale {fmt(s2)} / output "
                               f"'{op.outputs[0].name}' scale {fmt(so)}",
                               centred_max(z1, a.dtype) * centred_max(z2, b.dtype))
    lo, hi = activation_range(op.opt("FusedActivationFunction", 0), so, zo, op.outputs[0].dtype)
    attrs = {"x_zp": z1, "y_zp": z2, "out_zp": zo, "multiplier": m, "shift": sh, "act_min": lo, "act_max": hi,
             "out_dtype": op.outputs[0].dtype}
    return [cx.node("QMul", _int_inputs(cx, op, 2), attrs, name=_out(op))]


def _binary(onnx_op, fused=True):
    def conv(cx, op):
        if onnx_op in ("Add", "Sub") and quantised(op):
            return _qadd(cx, op)
        if onnx_op == "Mul" and quantised(op):
            return _qmul(cx, op)
        a, b = cx.inputs(op, 2)
        y = cx.node(onnx_op, [a, b], name=_out(op))
        return [cx.activation(y, op) if fused else y]
    return conv


for _name, _onnx, _fused in (("ADD", "Add", True), ("SUB", "Sub", True), ("MUL", "Mul", True), ("DIV", "Div", True),
                             ("MAXIMUM", "Max", False), ("MINIMUM", "Min", False)):
    converts(_name)(_binary(_onnx, _fused))


def _unary(onnx_op):
    def conv(cx, op):
        if quantised(op) and op.name in ("LOGISTIC", "TANH") and op.inputs[0].dtype == "int16":
            return _sigmoid16(cx, op)
        if quantised(op) and op.name in TABLE_OPS:
            return _lookup(cx, op)
        return [cx.node(onnx_op, cx.inputs(op, 1), name=_out(op))]
    return conv


def _sigmoid16(cx, op):
    """TFLite Micro's int16 LOGISTIC and TANH: zero points 0, an output scale of 2^-15."""
    x, out = op.inputs[0], op.outputs[0]
    (si, zi), (so, zo) = qparams(x, op), qparams(out, op)
    if out.dtype != "int16" or zi or zo:
        raise TFLiteError(f"{op}: an int16 {op.name} takes int16 in and out with zero points 0 (as TFLite Micro "
                          "requires)")
    pot, log2 = qsigmoid16.checked_log2(so)
    if not pot or log2 != -15:
        raise TFLiteError(f"{op}: an int16 {op.name} needs an output scale of 2^-15 (what TFLite Micro computes), "
                          f"not {float(so):g}")
    kind = "tanh" if op.name == "TANH" else "logistic"
    try:
        m, sh = qsigmoid16.input_rescale(kind, si)
    except ValueError as e:
        raise TFLiteError(f"{op}: {e}") from None
    table = cx.b.const(f"{_out(op)}_sigmoid", qsigmoid16.sigmoid_table())
    return [cx.node("QSigmoid16", [cx.value(x, op), table], {"kind": kind, "multiplier": m, "shift": sh},
                    name=_out(op))]


def _relu16(cx, op):
    """TFLite Micro's int16 RELU (the input requantised to the output's scale, clamped below at
    zero) and RELU6 (the raw input clamped to [zero, six] of its own scale)."""
    x, out = op.inputs[0], op.outputs[0]
    (si, _), (so, zo) = qparams(x, op), qparams(out, op)
    v = cx.value(x, op)
    if op.name == "RELU":
        m, s = requant_multiplier(float(np.float32(si) / np.float32(so)),      # the ratio in float
                                  _ratio(x, si, out, so), centred_max(0, "int16"))
        v = cx.node("QQuantize", [v], {"x_zp": 0, "out_zp": zo, "multiplier": m, "shift": s, "out_dtype": "int16"},
                    name=f"{_out(op)}_requant")
    lo, hi = activation_range(1 if op.name == "RELU" else 3, so, zo, "int16")
    return [cx.node("Clip", [v] + [cx.b.const(k, np.asarray(b, np.int16)) for k, b in (("lo", lo), ("hi", hi))],
                    name=_out(op))]


def _leaky_relu16(cx, op):
    """TFLite Micro's int16 LEAKY_RELU: two multipliers, their real ratios computed in float."""
    (si, zi), (so, zo) = qparams(op.inputs[0], op), qparams(op.outputs[0], op)
    x, out = op.inputs[0], op.outputs[0]
    m, s = requant_multiplier(float(np.float32(si) / np.float32(so)), _ratio(x, si, out, so), centred_max(zi, x.dtype))
    am, ash = requant_multiplier(float(np.float32(si) * np.float32(op.opt("Alpha")) / np.float32(so)),
                                 _ratio(x, si, out, so, f" * alpha {fmt(op.opt('Alpha'))}"), centred_max(zi, x.dtype))
    attrs = {"x_zp": zi, "out_zp": zo, "multiplier": m, "shift": s, "alpha_multiplier": am, "alpha_shift": ash,
             "out_dtype": "int16"}
    return [cx.node("QLeakyRelu", [cx.value(op.inputs[0], op)], attrs, name=_out(op))]


def _lookup(cx, op):
    """An int8 activation as TFLite Micro's kernel computes it, tabulated for the 256 inputs."""
    x, out = op.inputs[0], op.outputs[0]
    if x.dtype == "int16" and op.name in ("RELU", "RELU6"):
        return _relu16(cx, op)
    if x.dtype == "int16" and op.name == "LEAKY_RELU":
        return _leaky_relu16(cx, op)
    if x.dtype != "int8" or out.dtype != "int8":
        raise TFLiteError(f"{op}: the integer kernel takes int8 in and out, not {x.dtype} -> {out.dtype}")
    (si, zi), (so, zo) = qparams(x, op), qparams(out, op)
    fixed = {"LOGISTIC": (1 / 256, -128), "TANH": (1 / 128, 0)}.get(op.name)
    if fixed and (so, zo) != (np.float32(fixed[0]), fixed[1]):
        raise TFLiteError(f"{op}: an int8 {op.name} needs an output of scale 1/{round(1 / fixed[0])} and zero point "
                          f"{fixed[1]} (what TFLite Micro computes)")
    if fixed:
        # TFLite Micro's Prepare shifts 1LL by frexp's exponent of scale * 2^27 (CalculateInputRadius):
        # defined for 0..62 only
        shift = math.frexp(float(np.float64(si) * (1 << 27)))[1]
        if not 0 <= shift <= 62:
            raise QuantRangeError(f"input '{x.name}' scale {fmt(si)} * 2^27 makes an input shift of {shift} for "
                                  f"TFLite's int8 {op.name}, outside the 0..62 it takes (scales 2^-28..2^35)")
    if op.name == "LOGISTIC":
        table = qlut.logistic_table(si, zi)
    elif op.name == "TANH":
        table = qlut.tanh_table(si, zi)
    elif op.name == "RELU":
        requant_multiplier(qlut.float_ratio(si, so), _ratio(x, si, out, so), centred_max(zi, "int8"))
        table = qlut.relu_table(si, zi, so, zo)
    elif op.name == "RELU6":
        table = qlut.relu6_table(si, zi)
    elif op.name == "LEAKY_RELU":
        alpha = np.float32(op.opt("Alpha"))
        requant_multiplier(qlut.float_ratio(si, so), _ratio(x, si, out, so), centred_max(zi, "int8"))
        requant_multiplier(float(np.float32(si) * alpha / np.float32(so)),
                           _ratio(x, si, out, so, f" * alpha {fmt(alpha)}"), centred_max(zi, "int8"))
        table = qlut.leaky_relu_table(si, zi, so, zo, alpha)
    else:
        try:
            table = qlut.hard_swish_table(si, zi, so, zo)
        except ValueError as e:
            raise QuantRangeError(f"{_ratio(x, si, out, so)}: {e}") from None
    return [cx.node("QLookup", [cx.value(x, op), cx.b.const(f"{_out(op)}_table", table)], name=_out(op))]


for _name, _onnx in (("LOGISTIC", "Sigmoid"), ("TANH", "Tanh"), ("RELU", "Relu"), ("HARD_SWISH", "HardSwish"),
                     ("ABS", "Abs"), ("EXP", "Exp"), ("SQRT", "Sqrt"), ("NEG", "Neg")):
    converts(_name)(_unary(_onnx))


@converts("RELU6", "RELU_N1_TO_1")
def relu_clip(cx, op):
    if quantised(op):
        return _lookup(cx, op)
    lo, hi = (0.0, 6.0) if op.name == "RELU6" else (-1.0, 1.0)
    (x,) = cx.inputs(op, 1)
    return [cx.node("Clip", [x, cx.b.const("lo", np.float32(lo)), cx.b.const("hi", np.float32(hi))], name=_out(op))]


@converts("LEAKY_RELU")
def leaky_relu(cx, op):
    if quantised(op):
        return _lookup(cx, op)
    return [cx.node("LeakyRelu", cx.inputs(op, 1), {"alpha": float(op.opt("Alpha"))}, name=_out(op))]


@converts("PRELU")
def prelu(cx, op):
    if quantised(op):
        (si, zi), (sa, za) = qparams(op.inputs[0], op), qparams(op.inputs[1], op)
        so, zo = qparams(op.outputs[0], op)
        x, al, out = op.inputs[0], op.inputs[1], op.outputs[0]
        xm = centred_max(zi, x.dtype)
        m1, s1 = requant_multiplier(np.float64(si) / np.float64(so), _ratio(x, si, out, so), xm)
        m2, s2 = requant_multiplier(np.float64(si) * np.float64(sa) / np.float64(so),
                                    _ratio(x, si, out, so, f" * alpha '{al.name}' scale {fmt(sa)}"),
                                    xm * centred_max(za, al.dtype))
        attrs = {"x_zp": zi, "y_zp": za, "out_zp": zo, "multiplier": m1, "shift": s1, "alpha_multiplier": m2,
                 "alpha_shift": s2, "out_dtype": op.outputs[0].dtype}
        return [cx.node("QPRelu", _int_inputs(cx, op, 2), attrs, name=_out(op))]
    return [cx.node("PRelu", cx.inputs(op, 2), name=_out(op))]


@converts("SOFTMAX")
def softmax(cx, op):
    (x,) = cx.inputs(op, 1)
    beta = float(op.opt("Beta", 1.0))
    if quantised(op) and op.inputs[0].dtype == "int16":
        return _softmax16(cx, op, x, beta)
    if quantised(op):
        si, _ = qparams(op.inputs[0], op)
        so, zo = qparams(op.outputs[0], op)
        if op.inputs[0].dtype != "int8" or op.outputs[0].dtype != "int8" or so != np.float32(1 / 256) or zo != -128:
            raise TFLiteError(f"{op}: an int8 softmax needs an int8 input and an int8 output of scale 1/256 and "
                              "zero point -128 (what TFLite Micro supports)")
        real = np.float64(np.float32(beta)) * np.float64(si) * (1 << 26)
        if not real > 1.0:          # TFLite Micro's Prepare stops there (QuantizeMultiplierGreaterThanOne)
            raise QuantRangeError(f"input '{op.inputs[0].name}' scale {fmt(si)} * beta {fmt(beta)} * 2^26 = "
                                  f"{fmt(real)} must exceed 1 for TFLite's int8 softmax")
        exp_t, sum_t, _ = softmax_tables(np.float32(beta), si)
        return [cx.node("QSoftmax", [x, cx.b.const(f"{_out(op)}_exp", exp_t), cx.b.const(f"{_out(op)}_sum", sum_t)],
                        {"out_dtype": "int8"}, name=_out(op))]
    if beta != 1.0:
        x = cx.node("Mul", [x, cx.b.const("beta", np.float32(beta))], name=f"{_out(op)}_beta")
    return [cx.node("Softmax", [x], {"axis": -1}, name=_out(op))]


def _softmax16(cx, op, x, beta):
    """TFLite Micro's int16 softmax: zero points 0, an output scale of 1/32768 (within 0.1%)."""
    (si, zi), (so, zo) = qparams(op.inputs[0], op), qparams(op.outputs[0], op)
    if op.outputs[0].dtype != "int16" or zi or zo or abs(so - np.float32(1 / 32768)) > np.float32(0.001 / 32768):
        raise TFLiteError(f"{op}: an int16 softmax needs an int16 output of scale 1/32768 and zero points 0 (what "
                          "TFLite Micro supports)")
    m, sh = requant_multiplier(float(np.float64(si) * np.float64(np.float32(beta)) / (10.0 / 65535.0)),
                               f"input '{op.inputs[0].name}' scale {fmt(si)} * beta {fmt(beta)} / (10 / 65535)", 65535)
    exp_t, recip_t = qsoftmax16.softmax16_tables()
    return [cx.node("QSoftmax16", [x, cx.b.const(f"{_out(op)}_exp", exp_t), cx.b.const(f"{_out(op)}_recip", recip_t)],
                    {"multiplier": m, "shift": sh}, name=_out(op))]


@converts("DEQUANTIZE")
def dequantize(cx, op):
    t = op.inputs[0]
    if t.data is not None:
        data = dequantise(t) if t.quantised else t.data.astype(np.float32)      # float16 weights in a float model
        return [cx.b.const(_out(op), data)]
    s, z = qparams(t, op)           # (q - zero point) * scale in float32, as TFLite Micro rounds it
    reach = centred_max(z, t.dtype) * float(s)
    if reach >= float(np.finfo(np.float32).max):
        raise QuantRangeError(f"input '{t.name}' scale {fmt(s)} dequantises {t.dtype} values to {reach:.3g}, "
                              "beyond float32")
    return [cx.node("DequantizeLinear", [cx.value(t, op), cx.b.const("scale", np.float32(s)),
                                         cx.b.const("zero_point", np.asarray(z, t.dtype))], name=_out(op))]


@converts("QUANTIZE")
def quantize(cx, op):
    (x,) = cx.inputs(op, 1)
    t, out = op.inputs[0], op.outputs[0]
    so, zo = qparams(out, op)
    attrs = {"out_zp": zo, "out_dtype": out.dtype}
    if t.dtype == "float32":
        attrs["scale"] = float(so)
    else:
        si, zi = qparams(t, op)
        m, s = requant_multiplier(float(np.float64(si) / np.float64(so)), _ratio(t, si, out, so),
                                  centred_max(zi, t.dtype))
        attrs.update(x_zp=zi, multiplier=m, shift=s)
    return [cx.node("QQuantize", [x], attrs, name=_out(op))]


# -- pooling and reductions --------------------------------------------------------------------
@converts("AVERAGE_POOL_2D", "MAX_POOL_2D")
def pool_2d(cx, op):
    (x,) = cx.inputs(op, 1)
    attrs = dict(_window(op), kernel_shape=[op.opt("FilterHeight"), op.opt("FilterWidth")])
    if quantised(op) and op.name == "AVERAGE_POOL_2D":
        (si, zi), (so, zo) = qparams(op.inputs[0], op), qparams(op.outputs[0], op)
        if si != so or zi != zo:
            raise TFLiteError(f"{op}: input and output quantisation differ; TFLite's int8 pool keeps them equal")
        lo, hi = activation_range(op.opt("FusedActivationFunction", 0), so, zo, op.outputs[0].dtype)
        return [cx.node("QAvgPool", [x], dict(attrs, act_min=lo, act_max=hi, out_dtype=op.outputs[0].dtype),
                        name=_out(op))]
    y = cx.node("AveragePool" if op.name == "AVERAGE_POOL_2D" else "MaxPool", [x], attrs, name=_out(op))
    return [cx.activation(y, op)]


@converts("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD")
def reduce(cx, op):
    (x,) = cx.inputs(op, 1)
    axes = [int(a) for a in np.asarray(cx.const(op, 1, "axes")).reshape(-1)]
    if quantised(op):               # MEAN (the only reduction with an int8 path here)
        rank = len(x.type.shape)
        axes = sorted({a % rank for a in axes})
        (si, zi), (so, zo) = qparams(op.inputs[0], op), qparams(op.outputs[0], op)
        count = int(np.prod([x.type.shape[a] for a in axes]))
        ratio = np.float64(si) / np.float64(so)
        what = _ratio(op.inputs[0], si, op.outputs[0], so, f" / count {count}")
        requant_multiplier(ratio, what)                                 # finite
        m, sh = check_pair(*mean_multiplier(*quantize_multiplier(ratio), count), ratio / count, what,
                           count * centred_max(zi, op.inputs[0].dtype))
        attrs = {"axes": axes, "keepdims": int(bool(op.opt("KeepDims", False))), "x_zp": zi, "out_zp": zo,
                 "multiplier": m, "shift": sh, "out_dtype": op.outputs[0].dtype}
        return [cx.node("QMean", [x], attrs, name=_out(op))]
    onnx_op = {"MEAN": "ReduceMean", "SUM": "ReduceSum", "REDUCE_MAX": "ReduceMax", "REDUCE_MIN": "ReduceMin",
               "REDUCE_PROD": "ReduceProd"}[op.name]
    return [cx.node(onnx_op, [x, cx.ints(axes)], {"keepdims": int(bool(op.opt("KeepDims", False)))},
                    name=_out(op))]


# -- shapes and data movement ------------------------------------------------------------------
@converts("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def reshape(cx, op):
    """The declared output shape is the new shape: no -1 to resolve, and it is checked against
    what the model's own shape option or input say."""
    (x,) = cx.inputs(op, 1)
    shape = op.outputs[0].shape
    if int(np.prod(shape, dtype=np.int64)) != x.type.size:
        raise TFLiteError(f"{op}: cannot reshape {list(x.type.shape)} to {list(shape)}")
    return [cx.node("Reshape", [x, cx.ints(list(shape))], name=_out(op))]


@converts("TRANSPOSE")
def transpose(cx, op):
    (x,) = cx.inputs(op, 1)
    perm = [int(p) for p in np.asarray(cx.const(op, 1, "permutation")).reshape(-1)]
    return [cx.node("Transpose", [x], {"perm": perm}, name=_out(op))]


@converts("CONCATENATION")
def concatenation(cx, op):
    ins = cx.inputs(op)
    y = cx.node("Concat", ins, {"axis": int(op.opt("Axis"))}, name=_out(op))
    return [cx.activation(y, op)]


@converts("PAD", "PADV2")
def pad(cx, op):
    x = cx.value(op.inputs[0], op)
    p = np.asarray(cx.const(op, 1, "paddings"), np.int64).reshape(-1, 2)
    ins = [x, cx.ints(list(p[:, 0]) + list(p[:, 1]))]
    if op.name == "PADV2" and len(op.inputs) > 2 and op.inputs[2] is not None:
        ins.append(cx.b.const("pad_value", np.asarray(cx.const(op, 2, "constant value"), x.type.dtype).reshape(())))
    elif quantised(op):          # PAD pads with the real value 0: the zero point
        ins.append(cx.b.const("pad_value", np.asarray(qparams(op.inputs[0], op)[1], x.type.dtype).reshape(())))
    return [cx.node("Pad", ins, name=_out(op))]


@converts("SPLIT")
def split(cx, op):
    axis = int(np.asarray(cx.const(op, 0, "axis")).reshape(()))
    x = cx.value(op.inputs[1], op)
    n = int(op.opt("NumSplits"))
    return list(cx.node("Split", [x], {"axis": axis, "num_outputs": n}, name=_out(op), n_outputs=n)) if n > 1 \
        else [cx.node("Identity", [x], name=_out(op))]


@converts("SLICE")
def slice_(cx, op):
    (x,) = cx.inputs(op, 1)
    begin = [int(v) for v in np.asarray(cx.const(op, 1, "begin")).reshape(-1)]
    size = [int(v) for v in np.asarray(cx.const(op, 2, "size")).reshape(-1)]
    end = [d if s == -1 else b + s for b, s, d in zip(begin, size, x.type.shape)]
    return [cx.node("Slice", [x, cx.ints(begin), cx.ints(end)], name=_out(op))]


@converts("STRIDED_SLICE")
def strided_slice(cx, op):
    (x,) = cx.inputs(op, 1)
    if op.opt("EllipsisMask", 0) or op.opt("NewAxisMask", 0):
        raise TFLiteError(f"{op}: ellipsis and new-axis masks are not supported")
    begin = [int(v) for v in np.asarray(cx.const(op, 1, "begin")).reshape(-1)]
    end = [int(v) for v in np.asarray(cx.const(op, 2, "end")).reshape(-1)]
    strides = [int(v) for v in np.asarray(cx.const(op, 3, "strides")).reshape(-1)] if len(op.inputs) > 3 \
        else [1] * len(begin)
    bm, em, sm = op.opt("BeginMask", 0), op.opt("EndMask", 0), op.opt("ShrinkAxisMask", 0)
    big = np.iinfo(np.int64).max
    for d in range(len(begin)):
        if op.opt("Offset", False):
            end[d] = begin[d] + end[d]
        if bm >> d & 1:
            begin[d] = 0 if strides[d] > 0 else big
        if em >> d & 1:
            end[d] = big if strides[d] > 0 else -big
        if sm >> d & 1:
            end[d] = begin[d] + 1 if begin[d] != -1 else big
            strides[d] = 1
    y = cx.node("Slice", [x, cx.ints(begin), cx.ints(end), cx.ints(list(range(len(begin)))), cx.ints(strides)],
                name=f"{_out(op)}_slice" if sm else _out(op))
    return [cx.reshape(y, op.outputs[0].shape, _out(op))]
