"""QDQ folding: QuantizeLinear(op(DequantizeLinear(...))) becomes the op's integer kernel
(aot/ops/qnn.py), as onnxruntime's QDQ transformer and TVM's QNN canonicalisation do, so that an
int8 QDQ model runs int8 weights and int8 or uint8 activations end to end instead of float kernels between
quantise/dequantise pairs.

The kernels use TFLite's fixed-point requantisation (the same ones the TFLite frontend makes);
onnxruntime requantises in float with round-half-to-even, so an output can differ by 1 where the
real value falls within rounding error of a half step. Anything the pass does not recognise
keeps its float form (the dequantise/quantise pairs around it), which stays correct.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorType, Value
from ..ops.fixed_point import tflite_round
from ..ops.quant_rules import centred_max, dot_bounds
from . import graph_pass

MOVES = ("Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "MaxPool")   # exact on raw integers


class _Match:
    def __init__(self, graph):
        self.graph = graph
        self.uses = graph.consumers()
        self.outs = {id(v) for v in graph.outputs}
        self.count = 0

    def single_use(self, v):
        return id(v) not in self.outs and len(self.uses.get(id(v), [])) == 1

    def dq(self, v, per_tensor=True):
        """(int value, scale array, zero point array, axis) when v = DequantizeLinear(int, const...)."""
        n = v.producer if v is not None else None
        if n is None or n.op != "DequantizeLinear" or not n.inputs[1].is_const:
            return None
        if n.inputs[0].type.dtype not in ("int8", "uint8", "int32"):   # activations, weights, int32 bias
            return None
        zp = n.inputs[2] if len(n.inputs) > 2 else None
        if zp is not None and not zp.is_const:
            return None
        s = np.asarray(n.inputs[1].const, np.float32).reshape(-1)
        z = np.zeros(s.shape, np.int64) if zp is None else np.asarray(zp.const, np.int64).reshape(-1)
        if (per_tensor and s.size != 1) or not _scales_ok(s):
            return None             # a bad scale: the DequantizeLinear stays, and its check refuses it
        return n.inputs[0], s, z, n.attrs.get("axis", 1)


QDTYPES = ("int8", "uint8")     # activations: onnxruntime's quantizer makes either (s8s8, u8s8)


def _q_out(node):
    """(scale, zero point, dtype) of a per-tensor QuantizeLinear to int8 or uint8."""
    s, z = node.inputs[1], node.inputs[2] if len(node.inputs) > 2 else None
    if not s.is_const or s.type.size != 1 or z is None or not z.is_const or z.type.dtype not in QDTYPES:
        return None
    if not _scales_ok(s.const):
        return None
    return np.float32(np.asarray(s.const).reshape(())), int(np.asarray(z.const).reshape(())), z.type.dtype


def _scales_ok(s):
    s = np.asarray(s, np.float64)
    return bool(np.all(np.isfinite(s)) and np.all(s > 0))


# the float requantisations convert nearbyint(acc * scale) to int32 before clamping: every
# product must stay inside int32 (a margin for float32's rounding of acc and the product)
FLOAT_REQUANT_LIMIT = float(2 ** 31) * (1 - 2.0 ** -20)


def _fits_int32(bounds, scales):
    """Whether |acc| <= bounds times the float32 scales stays below int32's limit (per channel)."""
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.asarray(bounds, np.float64) * np.abs(np.asarray(scales, np.float32).astype(np.float64))
    return bool(np.all(np.isfinite(v)) and np.all(v < FLOAT_REQUANT_LIMIT))


def _finite32(values):
    """Whether float32 holds each value (float64 magnitudes) without overflowing to inf."""
    return bool(np.all(np.abs(np.asarray(values, np.float64)) < float(np.finfo(np.float32).max) / 2))


def _dtype_range(dtype):
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _act_range(act, scale, zp, dtype):
    """The clamp of an activation between the op and its QuantizeLinear, in the output's integers."""
    lo, hi = _dtype_range(dtype)

    def q(v):        # saturated in float first: a tiny scale puts the bound beyond any integer
        with np.errstate(over="ignore"):
            steps = np.float32(v) / scale
        return zp + int(np.clip(tflite_round(steps), lo - zp - 1, hi - zp + 1))
    if act is None:
        return lo, hi
    if act.op == "Relu":
        return max(lo, q(0.0)), hi
    a, b = (act.inputs[1] if len(act.inputs) > 1 else None), (act.inputs[2] if len(act.inputs) > 2 else None)
    vmin = float(np.asarray(a.const)) if a is not None and a.is_const else -np.inf
    vmax = float(np.asarray(b.const)) if b is not None and b.is_const else np.inf
    return (max(lo, q(vmin)) if np.isfinite(vmin) else lo), (min(hi, q(vmax)) if np.isfinite(vmax) else hi)


def _clip_const(act):
    return act.op == "Relu" or (act.op == "Clip" and all(v is None or v.is_const for v in act.inputs[1:]))


def _requant(m, scales, x_zp, out, act, extra_name):
    """attrs and the per-channel scale constant of a kernel that requantises as onnxruntime does:
    acc * float32(x scale * w scale / y scale), rounded half to even."""
    scale, zp, dtype = out
    lo, hi = _act_range(act, scale, zp, dtype)
    attrs = {"x_zp": int(x_zp), "out_zp": zp, "act_min": lo, "act_max": hi, "out_dtype": dtype, "requant": "float"}
    scales = np.atleast_1d(np.asarray(scales, np.float32))
    if np.all(scales == scales[0]):
        attrs["scale"] = float(scales[0])
        return attrs, []
    return attrs, [Value(f"{extra_name}_scale", TensorType((len(scales),), "float32"), scales)]


def _bias(m, v, xs, ws, n_out):
    """An int32 bias at scale xs * ws from the core's bias value (DequantizeLinear of int32 or a
    float constant), or None when it cannot be had exactly enough."""
    if v is None:
        return None
    d = m.dq(v, per_tensor=False)
    real = None
    if d is not None and d[0].is_const:
        real = (np.asarray(d[0].const, np.float64) - d[2]) * d[1].astype(np.float64)
    elif v.is_const:
        real = np.asarray(v.const, np.float64)
    if real is None:
        return None
    real = np.broadcast_to(real.reshape(-1), (n_out,)) if real.size in (1, n_out) else None
    if real is None:
        return None
    q = np.rint(real / (np.float64(xs) * ws.astype(np.float64)))
    if np.any(np.abs(q) > 2 ** 31 - 1):
        return None
    return Value(f"{v.name}_int32", TensorType((n_out,), "int32"), q.astype(np.int32))


def _core(m, qnode):
    """(activation node or None, core node) under a QuantizeLinear."""
    n = qnode.inputs[0].producer
    if n is None or not m.single_use(qnode.inputs[0]):
        return None, None
    if n.op in ("Relu", "Clip") and _clip_const(n):
        core = n.inputs[0].producer
        if core is None or not m.single_use(n.inputs[0]):
            return None, None
        return n, core
    return None, n


def _int8_weights(dw):
    """Constant symmetric int8 weights (the kernels take no weight zero point)."""
    return dw is not None and dw[0].is_const and dw[0].type.dtype == "int8" and not np.any(dw[2] != 0)


def _fold_conv(m, q, out, act, conv):
    dx = m.dq(conv.inputs[0])
    dw = m.dq(conv.inputs[1], per_tensor=False)
    if dx is None or not _int8_weights(dw) or conv.attrs.get("layout", "NCHW") != "NCHW":
        return None
    x, xs, xz, _ = dx
    w, ws = dw[0], dw[1]
    n_out = w.type.shape[0]
    if ws.size not in (1, n_out) or (ws.size > 1 and dw[3] != 0):
        return None
    ws = np.broadcast_to(ws, (n_out,))
    b = _bias(m, conv.inputs[2] if len(conv.inputs) > 2 else None, xs[0], ws, n_out)
    if len(conv.inputs) > 2 and conv.inputs[2] is not None and b is None:
        return None
    scales = np.float32(xs[0]) * ws.astype(np.float32) / out[0]
    if not _fits_int32(dot_bounds(w.const, centred_max(xz[0], x.type.dtype), None if b is None else b.const), scales):
        return None
    attrs, extra = _requant(m, scales, xz[0], out, act, q.name)
    attrs.update({k: v for k, v in conv.attrs.items() if k in ("kernel_shape", "strides", "pads", "dilations",
                                                                 "group", "layout")})
    ins = [x, w, b] + extra
    while ins and ins[-1] is None:
        ins.pop()
    return Node("QConv", q.name, ins, [q.outputs[0]], attrs)


def _fold_dense(m, q, out, act, core):
    """MatMul (+ Add of a bias) or Gemm without transposes of A, on [N, K] int8 rows."""
    bias, mm = None, core
    if core.op == "Add":
        for a, b in ((0, 1), (1, 0)):
            p = core.inputs[a].producer
            if p is not None and p.op == "MatMul" and m.single_use(core.inputs[a]):
                mm, bias = p, core.inputs[b]
                break
        else:
            return None
    if mm.op == "Gemm":
        if mm.attrs.get("transA", 0) or float(mm.attrs.get("alpha", 1.0)) != 1.0 or \
                float(mm.attrs.get("beta", 1.0)) != 1.0:
            return None
        bias = mm.inputs[2] if len(mm.inputs) > 2 else None
    elif mm.op != "MatMul":
        return None
    dx, dw = m.dq(mm.inputs[0]), m.dq(mm.inputs[1], per_tensor=False)
    if dx is None or not _int8_weights(dw) or len(dx[0].type.shape) != 2:
        return None
    x, xs, xz, _ = dx
    wq = np.asarray(dw[0].const)
    if len(wq.shape) != 2:
        return None
    if not (mm.op == "Gemm" and mm.attrs.get("transB", 0)):
        wq = wq.T                                     # [K, N] -> [N, K]: one row per output
    n_out = wq.shape[0]
    ws = dw[1]
    if ws.size not in (1, n_out) or (ws.size > 1 and dw[3] != (0 if mm.op == "Gemm" and mm.attrs.get("transB", 0)
                                                                 else 1)):
        return None
    ws = np.broadcast_to(ws, (n_out,))
    b = _bias(m, bias, xs[0], ws, n_out)
    if bias is not None and b is None:
        return None
    scales = np.float32(xs[0]) * ws.astype(np.float32) / out[0]
    if not _fits_int32(dot_bounds(wq, centred_max(xz[0], x.type.dtype), None if b is None else b.const), scales):
        return None
    w = Value(f"{dw[0].name}_rows", TensorType(wq.shape, "int8"), np.ascontiguousarray(wq).astype(np.int8))
    attrs, extra = _requant(m, scales, xz[0], out, act, q.name)
    ins = [x, w, b] + extra
    while ins and ins[-1] is None:
        ins.pop()
    return Node("QDense", q.name, ins, [q.outputs[0]], attrs)


def _fold_add(m, q, out, act, add):
    da, db = m.dq(add.inputs[0]), m.dq(add.inputs[1])
    if da is None or db is None:
        return None
    (a, s1, z1, _), (b, s2, z2, _) = da, db
    terms = [centred_max(z1[0], a.type.dtype) * np.float64(s1[0]), centred_max(z2[0], b.type.dtype) * np.float64(s2[0])]
    if not (_finite32(terms) and _fits_int32([sum(terms)], [1 / np.float64(out[0])])):
        return None                         # each dequantised input, and their sum requantised
    lo, hi = _act_range(act, out[0], out[1], out[2])
    attrs = {"x_zp": int(z1[0]), "y_zp": int(z2[0]), "out_zp": out[1], "x_scale": float(np.float32(s1[0])),
             "y_scale": float(np.float32(s2[0])), "out_scale": float(out[0]), "act_min": lo, "act_max": hi,
             "out_dtype": out[2], "requant": "float"}
    return Node("QAdd", q.name, [a, b], [q.outputs[0]], attrs)


def _same(d, out):
    return d is not None and np.float32(d[1][0]) == out[0] and int(d[2][0]) == out[1]


def _fold_pool(m, q, out, act, pool):
    d = m.dq(pool.inputs[0])
    if act is not None or not _same(d, out):
        return None
    x = d[0]
    if not _finite32([centred_max(d[2][0], x.type.dtype) * int(np.prod(x.type.shape[2:])) * np.float64(d[1][0])]):
        return None                         # the window's dequantised sum, in float32
    if pool.op == "GlobalAveragePool":
        sp = list(x.type.shape[2:])
        attrs = {"kernel_shape": sp, "strides": [1] * len(sp), "pads": [0] * (2 * len(sp)),
                 "dilations": [1] * len(sp)}
    elif pool.attrs.get("count_include_pad", 0) or pool.attrs.get("ceil_mode", 0):
        return None
    else:
        attrs = {k: pool.attrs[k] for k in ("kernel_shape", "strides", "pads", "dilations")}
    lo, hi = _dtype_range(out[2])
    attrs.update({"ceil_mode": 0, "count_include_pad": 0, "storage_order": 0, "act_min": lo, "act_max": hi,
                  "out_dtype": out[2], "requant": "float", "x_zp": int(d[2][0]), "scale": float(d[1][0])})
    return Node("QAvgPool", q.name, [x], [q.outputs[0]], attrs)


def _fold_move(m, q, out, act, mv):
    d = m.dq(mv.inputs[0])
    if act is not None or not _same(d, out):
        return None
    return Node(mv.op, q.name, [d[0]] + list(mv.inputs[1:]), [q.outputs[0]], dict(mv.attrs))


# Softmax stays onnxruntime's float softmax between its dequantise and quantise: TFLite's
# fixed-point softmax (QSoftmax) is up to 2 LSB from it, more than the 1 LSB a QDQ model keeps
FOLDS = {"Conv": _fold_conv, "MatMul": _fold_dense, "Gemm": _fold_dense, "AveragePool": _fold_pool,
         "GlobalAveragePool": _fold_pool, **{k: _fold_move for k in MOVES}}


def _types_agree(node):
    """The kernel computes exactly the QuantizeLinear's output type (else the fold is not made)."""
    from ..errors import OpError
    from ..ops import get_op
    try:
        return get_op(node.op).infer(node)[0] == node.outputs[0].type
    except (OpError, KeyError, IndexError):
        return False


@graph_pass
def fold_qdq(graph):
    """Each QuantizeLinear whose input an integer kernel can compute from dequantised int8 values
    becomes that kernel; the float nodes it replaces are left for dead-code elimination."""
    m = _Match(graph)
    nodes = []
    for n in graph.nodes:
        new = None
        if n.op == "QuantizeLinear":
            out = _q_out(n)
            act, core = _core(m, n) if out else (None, None)
            if core is not None:
                if core.op == "Add":            # an elementwise add, or a dense layer's bias
                    new = _fold_add(m, n, out, act, core) or _fold_dense(m, n, out, act, core)
                elif core.op in FOLDS:
                    new = FOLDS[core.op](m, n, out, act, core)
        if new is not None and _types_agree(new):
            m.count += 1
            nodes.append(new)
        else:
            nodes.append(n)
    return graph.with_nodes(nodes), m.count
