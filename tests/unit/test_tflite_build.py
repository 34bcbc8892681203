"""The .tflite test builder (tests/tflite_build.py) against its oracle, TFLM.

Every op the TFLite frontend starts with is built as a one-op model, float32 and (where TFLM has
an int8 kernel) int8, run on TFLM and compared with a numpy reference. The int8 reference runs
on the dequantised inputs and constants, so only TFLM's own rounding counts against the
tolerance (in output quantisation steps). If these pass, models the builder makes mean what
the frontend tests will assume they mean.
"""
from dataclasses import dataclass, field

import numpy as np
import pytest
from tflite.Conv2DOptions import Conv2DOptions
from tflite.FullyConnectedOptions import FullyConnectedOptions
from tflite.Model import Model
from tflite.ReshapeOptions import ReshapeOptions
from tflite.StridedSliceOptions import StridedSliceOptions

from tflite_build import DTYPES, ModelBuilder, builtin_code, truncated
from tflm_oracle import run_tflm, tflm_available

needs_tflm = pytest.mark.skipif(not tflm_available(), reason="tflite-micro not installed (pip install tflite-micro)")


# --- numpy references (NHWC activations, OHWI conv weights, TFLite's SAME padding) -----------

def _out_and_pad(n, k, stride, dilation, padding):
    eff = (k - 1) * dilation + 1
    if padding == "VALID":
        return (n - eff) // stride + 1, 0
    out = -(-n // stride)
    return out, max((out - 1) * stride + eff - n, 0) // 2


def _windows(x, kh, kw, sh, sw, padding, dh=1, dw=1, fill=0.0):
    """Yield (i, j, patch) with patch[n, oh, ow, c] = padded input under kernel tap (i, j)."""
    n, h, w, c = x.shape
    oh, pt = _out_and_pad(h, kh, sh, dh, padding)
    ow, pl = _out_and_pad(w, kw, sw, dw, padding)
    xp = np.full((n, h + (kh * dh + oh * sh), w + (kw * dw + ow * sw), c), fill, x.dtype)
    xp[:, pt:pt + h, pl:pl + w] = x
    for i in range(kh):
        for j in range(kw):
            yield i, j, xp[:, i * dh:i * dh + oh * sh:sh, j * dw:j * dw + ow * sw:sw]


def conv2d(x, w, b, padding="VALID", s=(1, 1), d=(1, 1)):
    out = sum(p @ w[:, i, j, :].T for i, j, p in _windows(x, w.shape[1], w.shape[2], *s, padding, *d))
    return out + (0 if b is None else b)


def depthwise(x, w, b, mult, padding="VALID", s=(1, 1)):
    out = sum(np.repeat(p, mult, axis=-1) * w[0, i, j] for i, j, p in _windows(x, w.shape[1], w.shape[2], *s, padding))
    return out + b


def pool(x, k, s, padding, reduce):
    # NaN padding: TFLite's pools look only at real elements (the average divides by their count)
    patches = np.stack([p for _, _, p in _windows(x, k, k, s, s, padding, fill=np.nan)])
    return reduce(patches, axis=0)


def transpose_conv(out_shape, w, x, b, padding, s):
    n, h, wd, _ = x.shape
    o, kh, kw, _ = w.shape
    oh, ow = out_shape[1], out_shape[2]
    pt = 0 if padding == "VALID" else max((h - 1) * s + kh - oh, 0) // 2
    pl = 0 if padding == "VALID" else max((wd - 1) * s + kw - ow, 0) // 2
    full = np.zeros((n, max((h - 1) * s + kh, pt + oh), max((wd - 1) * s + kw, pl + ow), o), x.dtype)
    for i in range(kh):
        for j in range(kw):
            full[:, i:i + (h - 1) * s + 1:s, j:j + (wd - 1) * s + 1:s] += x @ w[:, i, j, :].T
    return full[:, pt:pt + oh, pl:pl + ow] + (0 if b is None else b)


def softmax(x, beta=1.0):
    e = np.exp(beta * (x - x.max(axis=-1, keepdims=True)))
    return e / e.sum(axis=-1, keepdims=True)


relu = lambda x: np.maximum(x, 0)  # noqa: E731
relu6 = lambda x: np.clip(x, 0, 6)  # noqa: E731


# --- cases --------------------------------------------------------------------------------------

@dataclass
class Case:
    """One op. inputs are (role, float array) pairs; roles: "in" a graph input, "const" a constant
    activation, "w" / "w0" / "w3" weights (int8: symmetric, per tensor / per channel along that
    axis), "b" a bias (int8: int32 at input scale * weight scale), "int" an int32 parameter kept
    as is, None an optional input left out. ref maps the input arrays to the output(s)."""
    op: str
    inputs: list
    ref: object
    opts: dict = field(default_factory=dict)
    int8: bool = True  # TFLM has an int8 kernel for it
    same_q: bool = False  # the int8 kernel moves raw values: inputs and outputs share scale and zero point
    out_q: tuple = None  # int8 output (scale, zero point) TFLM insists on
    tol: float = 1.0  # int8 tolerance, in output quantisation steps


def _cases():
    rng = np.random.default_rng(20240611)

    def r(*shape, lo=-2.0, hi=2.0):
        return rng.uniform(lo, hi, shape).astype(np.float32)

    def i32(*v):
        return np.array(v, np.int32)

    def spread(w, axis):
        # channels of very different magnitude, so per-tensor weight scales would show
        return w * np.array([1.0, 0.2, 3.0, 0.5][:w.shape[axis]], np.float32).reshape(
            [-1 if d == axis else 1 for d in range(w.ndim)])

    c = {}
    c["conv_valid"] = Case("CONV_2D", [("in", r(1, 6, 6, 3)), ("w0", spread(r(4, 3, 3, 3), 0)), ("b", r(4))],
                           lambda x, w, b: conv2d(x, w, b), dict(padding="VALID"))
    c["conv_same_s2_relu"] = Case(
        "CONV_2D", [("in", r(1, 7, 7, 2)), ("w0", r(3, 3, 3, 2)), ("b", r(3))],
        lambda x, w, b: relu(conv2d(x, w, b, "SAME", (2, 2))),
        dict(padding="SAME", stride_w=2, stride_h=2, fused_activation_function="RELU"))
    c["conv_dilated"] = Case("CONV_2D", [("in", r(1, 7, 6, 2)), ("w0", r(2, 2, 3, 2)), ("b", r(2))],
                             lambda x, w, b: conv2d(x, w, b, "VALID", d=(2, 1)),
                             dict(padding="VALID", dilation_h_factor=2))
    c["depthwise"] = Case("DEPTHWISE_CONV_2D", [("in", r(1, 5, 5, 2)), ("w3", spread(r(1, 3, 3, 4), 3)), ("b", r(4))],
                          lambda x, w, b: depthwise(x, w, b, 2, "SAME"), dict(padding="SAME", depth_multiplier=2))
    c["depthwise_s2_relu6"] = Case(
        "DEPTHWISE_CONV_2D", [("in", r(1, 6, 6, 3)), ("w3", r(1, 3, 3, 3)), ("b", r(3))],
        lambda x, w, b: relu6(depthwise(x, w, b, 1, "VALID", (2, 2))),
        dict(padding="VALID", stride_w=2, stride_h=2, fused_activation_function="RELU6"))
    c["fully_connected"] = Case("FULLY_CONNECTED", [("in", r(2, 5)), ("w", r(3, 5)), ("b", r(3))],
                                lambda x, w, b: x @ w.T + b)
    c["fully_connected_keep_dims_no_bias"] = Case(
        "FULLY_CONNECTED", [("in", r(1, 2, 5)), ("w", r(3, 5)), (None, None)],
        lambda x, w, b: relu(x @ w.T), dict(keep_num_dims=True, fused_activation_function="RELU"))
    c["add_broadcast"] = Case("ADD", [("in", r(1, 3, 4)), ("in", r(1, 1, 4))], np.add)
    c["add_relu6"] = Case("ADD", [("in", r(2, 3, lo=-4, hi=6)), ("const", r(2, 3))],
                          lambda a, b: relu6(a + b), dict(fused_activation_function="RELU6"))
    c["sub"] = Case("SUB", [("in", r(2, 3, 2)), ("const", r(2, 3, 2))], np.subtract)
    c["sub_broadcast_relu"] = Case("SUB", [("in", r(2, 3, 4, lo=-1, hi=3)), ("in", r(1, 1, 4))],
                                   lambda a, b: relu(a - b), dict(fused_activation_function="RELU"))
    c["mul_broadcast"] = Case("MUL", [("in", r(1, 3, 4)), ("const", r(4, lo=-3, hi=1))], np.multiply)
    c["mul_relu"] = Case("MUL", [("in", r(2, 4)), ("in", r(2, 4))], lambda a, b: relu(a * b),
                         dict(fused_activation_function="RELU"))
    c["average_pool"] = Case("AVERAGE_POOL_2D", [("in", r(1, 6, 6, 2))],
                             lambda x: pool(x, 2, 2, "VALID", np.mean),
                             dict(filter_width=2, filter_height=2, stride_w=2, stride_h=2, padding="VALID"),
                             same_q=True)
    c["average_pool_same"] = Case("AVERAGE_POOL_2D", [("in", r(1, 5, 5, 3))],
                                  lambda x: pool(x, 3, 2, "SAME", np.nanmean),
                                  dict(filter_width=3, filter_height=3, stride_w=2, stride_h=2, padding="SAME"),
                                  same_q=True)
    c["max_pool"] = Case("MAX_POOL_2D", [("in", r(1, 5, 5, 3))], lambda x: pool(x, 3, 2, "SAME", np.nanmax),
                         dict(filter_width=3, filter_height=3, stride_w=2, stride_h=2, padding="SAME"), same_q=True)
    c["mean"] = Case("MEAN", [("in", r(1, 4, 4, 3, lo=-1, hi=3)), ("int", i32(1, 2))],
                     lambda x, ax: x.mean(axis=(1, 2), keepdims=True), dict(keep_dims=True))
    c["mean_last_axis"] = Case("MEAN", [("in", r(2, 3, 7)), ("int", i32(-1))], lambda x, ax: x.mean(axis=-1))
    c["mean_all_but_batch"] = Case("MEAN", [("in", r(2, 3, 5, 2, lo=-3, hi=1)), ("int", i32(1, 2, 3))],
                                   lambda x, ax: x.mean(axis=(1, 2, 3)))
    c["reshape"] = Case("RESHAPE", [("in", r(1, 2, 6)), ("int", i32(3, 4))], lambda x, s: x.reshape(3, 4),
                        dict(new_shape=[3, 4]), same_q=True)
    c["squeeze"] = Case("SQUEEZE", [("in", r(1, 3, 1, 4))], lambda x: x.reshape(3, 4),
                        dict(squeeze_dims=[0, 2]), same_q=True)
    c["expand_dims"] = Case("EXPAND_DIMS", [("in", r(3, 4)), ("int", i32(1))], lambda x, ax: x[:, None],
                            same_q=True)
    c["softmax"] = Case("SOFTMAX", [("in", r(2, 5))], lambda x: softmax(x, 0.5), dict(beta=0.5),
                        out_q=(1 / 256, -128))
    c["logistic"] = Case("LOGISTIC", [("in", r(2, 5, lo=-5, hi=5))], lambda x: 1 / (1 + np.exp(-x)),
                         out_q=(1 / 256, -128))
    c["tanh"] = Case("TANH", [("in", r(2, 5))], np.tanh, out_q=(1 / 128, 0))
    c["relu"] = Case("RELU", [("in", r(3, 4))], relu)
    c["relu6"] = Case("RELU6", [("in", r(3, 4, lo=-3, hi=8))], relu6, same_q=True)
    c["leaky_relu"] = Case("LEAKY_RELU", [("in", r(3, 4))], lambda x: np.where(x >= 0, x, 0.2 * x),
                           dict(alpha=0.2))
    c["hard_swish"] = Case("HARD_SWISH", [("in", r(3, 5, lo=-5, hi=5))], lambda x: x * relu6(x + 3) / 6)
    c["prelu"] = Case("PRELU", [("in", r(1, 3, 3, 2)), ("const", r(1, 1, 2, lo=0, hi=0.5))],
                      lambda x, a: np.where(x >= 0, x, a * x))
    paddings = i32([0, 0], [1, 1], [2, 0], [0, 0])
    c["pad"] = Case("PAD", [("in", r(1, 3, 3, 2)), ("int", paddings)], lambda x, p: np.pad(x, p), same_q=True)
    c["padv2"] = Case("PADV2", [("in", r(1, 3, 3, 2)), ("int", paddings), ("const", np.array([1.5], np.float32))],
                      lambda x, p, v: np.pad(x, p, constant_values=v[0]), same_q=True)
    c["concatenation"] = Case("CONCATENATION", [("in", r(1, 2, 3)), ("in", r(1, 2, 1)), ("const", r(1, 2, 2))],
                              lambda *xs: np.concatenate(xs, axis=2), dict(axis=2), same_q=True)
    c["split"] = Case("SPLIT", [("int", i32(1)), ("in", r(2, 6))], lambda ax, x: np.split(x, 3, axis=1),
                      dict(num_splits=3), same_q=True)
    c["strided_slice"] = Case(
        "STRIDED_SLICE", [("in", r(2, 5, 6)), ("int", i32(0, 1, 0)), ("int", i32(0, 5, 6)), ("int", i32(1, 2, 2))],
        lambda x, *_: x[:, 1:5:2, 0:6:2], dict(begin_mask=1, end_mask=1), same_q=True)
    c["strided_slice_shrink"] = Case(
        "STRIDED_SLICE", [("in", r(2, 5, 6)), ("int", i32(1, 0, 1)), ("int", i32(2, 0, 6)), ("int", i32(1, 1, 3))],
        lambda x, *_: x[1, :, 1::3], dict(shrink_axis_mask=1, end_mask=2), same_q=True)
    c["slice"] = Case("SLICE", [("in", r(3, 4, 5)), ("int", i32(1, 0, 2)), ("int", i32(2, -1, 3))],
                      lambda x, *_: x[1:3, :, 2:5], same_q=True)
    c["transpose"] = Case("TRANSPOSE", [("in", r(2, 3, 4)), ("int", i32(2, 0, 1))],
                          lambda x, p: x.transpose(p), same_q=True)
    c["transpose_conv"] = Case(
        "TRANSPOSE_CONV",
        [("int", i32(1, 6, 6, 2)), ("w0", spread(r(2, 3, 3, 3), 0)), ("in", r(1, 3, 3, 3)), ("b", r(2))],
        lambda s, w, x, b: transpose_conv(s, w, x, b, "SAME", 2), dict(padding="SAME", stride_w=2, stride_h=2))
    c["transpose_conv_same_odd"] = Case(
        "TRANSPOSE_CONV", [("int", i32(1, 5, 6, 3)), ("w0", spread(r(3, 3, 2, 2), 0)), ("in", r(1, 3, 3, 2)),
                           ("b", r(3))],
        lambda s, w, x, b: transpose_conv(s, w, x, b, "SAME", 2), dict(padding="SAME", stride_w=2, stride_h=2))
    c["transpose_conv_valid_no_bias"] = Case(
        "TRANSPOSE_CONV", [("int", i32(1, 5, 4, 3)), ("w0", r(3, 3, 2, 2)), ("in", r(1, 3, 3, 2)), (None, None)],
        lambda s, w, x, b: transpose_conv(s, w, x, b, "VALID", 1), dict(padding="VALID"))
    c["maximum"] = Case("MAXIMUM", [("in", r(2, 3, 4)), ("in", r(2, 3, 4))], np.maximum, same_q=True)
    c["minimum"] = Case("MINIMUM", [("in", r(2, 3, 4)), ("const", r(1, 1, 4))], np.minimum, same_q=True)
    c["batch_matmul"] = Case("BATCH_MATMUL", [("in", r(2, 3, 4)), ("in", r(2, 4, 5))], np.matmul)
    c["batch_matmul_broadcast"] = Case("BATCH_MATMUL", [("in", r(2, 1, 3, 4)), ("in", r(3, 4, 2))], np.matmul)
    c["prelu_scalar_alpha"] = Case("PRELU", [("in", r(2, 3, 4)), ("const", np.full((1,), 0.3, np.float32))],
                                   lambda x, a: np.where(x >= 0, x, a * x))
    c["batch_matmul_adj"] = Case("BATCH_MATMUL", [("in", r(2, 4, 3)), ("in", r(2, 5, 4))],
                                 lambda a, b: a.transpose(0, 2, 1) @ b.transpose(0, 2, 1),
                                 dict(adj_x=True, adj_y=True))
    # float-only elementwise and reduction ops (TFLM has no int8 kernel for them; it has no
    # REDUCE_PROD or RELU_N1_TO_1 at all: those are in CASES_WITHOUT_TFLM)
    c["abs"] = Case("ABS", [("in", r(2, 5))], np.abs, int8=False)
    c["neg"] = Case("NEG", [("in", r(3, 4))], np.negative, int8=False)
    c["exp"] = Case("EXP", [("in", r(2, 5, lo=-3, hi=3))], np.exp, int8=False)
    c["sqrt"] = Case("SQRT", [("in", r(2, 5, lo=0.01, hi=9))], np.sqrt, int8=False)
    c["div_broadcast"] = Case("DIV", [("in", r(2, 3, 4)), ("const", r(1, 1, 4, lo=0.5, hi=2))], np.divide, int8=False)
    c["sum_keep_dims"] = Case("SUM", [("in", r(2, 3, 4)), ("int", i32(1))], lambda x, ax: x.sum(axis=1, keepdims=True),
                              dict(keep_dims=True), int8=False)
    c["reduce_max"] = Case("REDUCE_MAX", [("in", r(2, 3, 4)), ("int", i32(0, 2))], lambda x, ax: x.max(axis=(0, 2)),
                           int8=False)
    c["reduce_min"] = Case("REDUCE_MIN", [("in", r(2, 3, 4)), ("int", i32(-1))], lambda x, ax: x.min(axis=-1),
                           int8=False)
    return c


CASES = _cases()


def _cases_without_tflm():
    """Converted ops that TFLite Micro has no kernel for: checked against their numpy reference."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    p = rng.uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    return {"relu_n1_to_1": Case("RELU_N1_TO_1", [("in", x)], lambda v: np.clip(v, -1, 1), int8=False),
            "reduce_prod": Case("REDUCE_PROD", [("in", p), ("int", np.array([1], np.int32))],
                                lambda v, ax: v.prod(axis=1), int8=False)}


CASES_WITHOUT_TFLM = _cases_without_tflm()


# --- int8 quantisation -------------------------------------------------------------------------

def qparams(a):
    """Asymmetric int8 (scale, zero point) covering a's range and 0."""
    lo, hi = min(float(np.min(a)), 0.0), max(float(np.max(a)), 0.0)
    scale = (hi - lo) / 255 or 1.0
    return scale, int(np.clip(round(-128 - lo / scale), -128, 127))


def quantize(a, scale, zp):
    return np.clip(np.round(a / scale) + zp, -128, 127).astype(np.int8)


def dequantize(q, scale, zp):
    return ((q.astype(np.float64) - zp) * scale).astype(np.float32)


def _sym_scales(w, axis):
    """Symmetric (zero point 0) weight scales: one, or one per channel along axis."""
    other = None if axis is None else tuple(d for d in range(w.ndim) if d != axis)
    m = np.max(np.abs(w), axis=other)
    return np.where(m > 0, m / 127, 1.0).astype(np.float32)


def build(case, dtype):
    """The case as a float32 or int8 model: (model, TFLM inputs, reference outputs, output qparams)."""
    mb = ModelBuilder()
    int8 = dtype == "int8"
    acts = [a for role, a in case.inputs if role in ("in", "const")]
    shared = qparams(np.concatenate([a.ravel() for a in acts])) if int8 and case.same_q else None
    ids, values, feeds, graph_inputs = [], [], [], []
    act_scale = w_scale = None
    for k, (role, a) in enumerate(case.inputs):
        name, t, v, feed = f"t{k}", None, a, a
        if role is None:
            pass
        elif role == "int":
            t = mb.tensor(name, a.shape, "int32", data=a)
        elif not int8:
            t = mb.tensor(name, a.shape, "float32", data=None if role == "in" else a)
        elif role in ("in", "const"):
            s, zp = shared or qparams(a)
            feed = quantize(a, s, zp)
            t = mb.tensor(name, a.shape, "int8", data=None if role == "in" else feed, scale=s, zero_point=zp)
            v = dequantize(feed, s, zp)
            act_scale = act_scale or s
        elif role and role[0] == "w":
            axis = int(role[1:]) if role[1:] else None
            w_scale = _sym_scales(a, axis)
            s = w_scale if axis is None else w_scale.reshape([-1 if d == axis else 1 for d in range(a.ndim)])
            q = np.clip(np.round(a / s), -127, 127).astype(np.int8)
            t = mb.tensor(name, a.shape, "int8", data=q, scale=w_scale, zero_point=0,
                          quantized_dimension=axis or 0)
            v = (q * s).astype(np.float32)
        elif role == "b":
            # TFLM requires bias scale = input scale * weight scale, per channel
            s = (act_scale * w_scale).astype(np.float32)
            q = np.round(a / s).astype(np.int32)
            t = mb.tensor(name, a.shape, "int32", data=q, scale=s, zero_point=0)
            v = (q * s).astype(np.float32)
        ids.append(t)
        values.append(v)
        if role == "in":
            graph_inputs.append(t)
            feeds.append(feed)
    ref = case.ref(*values)
    refs = [np.asarray(x, np.float32) for x in (ref if isinstance(ref, list) else [ref])]
    out_qs = [(case.out_q or shared or qparams(x)) if int8 else None for x in refs]
    outs = [mb.tensor(f"y{j}", x.shape, dtype, scale=q and q[0], zero_point=q and q[1])
            for j, (x, q) in enumerate(zip(refs, out_qs))]
    mb.op(case.op, ids, outs, **case.opts)
    return mb.finish(inputs=graph_inputs, outputs=outs), feeds, refs, out_qs


# --- TFLM runs ----------------------------------------------------------------------------------

PARAMS = [(n, d) for n, c in CASES.items() for d in ("float32", "int8") if d == "float32" or c.int8]


@needs_tflm
@pytest.mark.parametrize("name,dtype", PARAMS)
def test_op_matches_numpy(name, dtype):
    case = CASES[name]
    model, feeds, refs, out_qs = build(case, dtype)
    outs = run_tflm(model, feeds)
    assert len(outs) == len(refs)
    for out, ref, q in zip(outs, refs, out_qs):
        assert out.shape == ref.shape and out.dtype == DTYPES[dtype][1], (out.shape, out.dtype, ref.shape)
        if q is None:
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
        else:
            err = np.abs(dequantize(out, *q) - ref).max()
            assert err <= case.tol * q[0] * 1.001, f"off by {err / q[0]:.2f} steps (allowed {case.tol})"


def test_every_frontend_op_has_a_case():
    ops = {c.op for c in CASES.values()} | {"QUANTIZE", "DEQUANTIZE"}  # those two: tests below
    from aot.frontend.tflite_ops import CONVERTERS
    without = {c.op for c in CASES_WITHOUT_TFLM.values()}
    assert set(CONVERTERS) <= ops | without, set(CONVERTERS) - ops - without      # every converter is tested
    wanted = """CONV_2D DEPTHWISE_CONV_2D FULLY_CONNECTED ADD SUB MUL AVERAGE_POOL_2D MAX_POOL_2D MEAN
        RESHAPE SQUEEZE EXPAND_DIMS SOFTMAX LOGISTIC TANH RELU RELU6 LEAKY_RELU HARD_SWISH PRELU QUANTIZE
        DEQUANTIZE PAD PADV2 CONCATENATION SPLIT STRIDED_SLICE SLICE TRANSPOSE TRANSPOSE_CONV MAXIMUM
        MINIMUM BATCH_MATMUL ABS NEG EXP SQRT DIV SUM REDUCE_MAX REDUCE_MIN""".split()
    assert set(wanted) <= ops, set(wanted) - ops


@needs_tflm
def test_quantize_float_and_requantize():
    x = np.random.default_rng(1).uniform(-3, 3, (2, 7)).astype(np.float32)
    (s1, z1), (s2, z2) = qparams(x), (0.05, 10)
    mb = ModelBuilder()
    xf = mb.tensor("x", x.shape, "float32")
    q1 = mb.tensor("q1", x.shape, "int8", scale=s1, zero_point=z1)
    q2 = mb.tensor("q2", x.shape, "int8", scale=s2, zero_point=z2)
    mb.op("QUANTIZE", [xf], [q1])
    mb.op("QUANTIZE", [q1], [q2])  # int8 -> int8: a requantisation
    out1, out2 = run_tflm(mb.finish(inputs=[xf], outputs=[q1, q2]), [x])
    assert out1.dtype == out2.dtype == np.int8
    assert np.abs(out1.astype(int) - quantize(x, s1, z1)).max() <= 1  # ties may round either way
    assert np.abs(dequantize(out2, s2, z2) - np.clip(dequantize(out1, s1, z1), -138 * s2, 117 * s2)).max() <= s2


@needs_tflm
def test_dequantize():
    q = np.arange(-128, 128, dtype=np.int8).reshape(4, 64)
    mb = ModelBuilder()
    x = mb.tensor("x", q.shape, "int8", scale=0.03, zero_point=-7)
    y = mb.tensor("y", q.shape, "float32")
    mb.op("DEQUANTIZE", [x], [y])
    (out,) = run_tflm(mb.finish(inputs=[x], outputs=[y]), [q])
    np.testing.assert_allclose(out, dequantize(q, 0.03, -7), rtol=1e-6)


@needs_tflm
def test_two_op_graph_with_per_channel_conv():
    """The brief's example: int8 conv with per-channel weights feeding a float dequantize."""
    rng = np.random.default_rng(2)
    w = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    w_scales = rng.uniform(0.005, 0.02, 4).astype(np.float32)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 8, 8, 3], "int8", scale=0.05, zero_point=-3)
    wt = mb.tensor("w", w.shape, "int8", data=w, scale=w_scales, zero_point=np.zeros(4), quantized_dimension=0)
    b = mb.tensor("b", [4], "int32", data=rng.integers(-500, 500, 4), scale=0.05 * w_scales, zero_point=0)
    y = mb.tensor("y", [1, 8, 8, 4], "int8", scale=0.1, zero_point=2)
    yf = mb.tensor("yf", [1, 8, 8, 4], "float32")
    mb.op("CONV_2D", [x, wt, b], [y], padding="SAME", fused_activation_function="RELU")
    mb.op("DEQUANTIZE", [y], [yf])
    xq = rng.integers(-128, 128, (1, 8, 8, 3)).astype(np.int8)
    yq, yfo = run_tflm(mb.finish(inputs=[x], outputs=[y, yf]), [xq])
    assert yq.shape == (1, 8, 8, 4) and yq.dtype == np.int8 and yq.min() >= 2  # RELU: nothing below zero
    np.testing.assert_allclose(yfo, dequantize(yq, 0.1, 2), rtol=1e-6)


# --- the builder's output, read back with the schema's own reader -------------------------------

def _tiny(**tensor_kw):
    mb = ModelBuilder()
    x = mb.tensor("x", [2, 3], "float32", **tensor_kw)
    y = mb.tensor("y", [2, 3], "float32")
    mb.op("RELU", [x], [y])
    return mb.finish(inputs=[x], outputs=[y])


def test_header_and_sentinel_buffer():
    data = _tiny()
    assert data[4:8] == b"TFL3"
    m = Model.GetRootAs(data, 0)
    assert m.Version() == 3 and m.SubgraphsLength() == 1 and m.Description() == b"aot tests/tflite_build.py"
    assert m.Buffers(0).DataLength() == 0
    sg = m.Subgraphs(0)
    assert list(sg.InputsAsNumpy()) == [0] and list(sg.OutputsAsNumpy()) == [1]


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_constant_round_trip(dtype):
    np_dtype = DTYPES[dtype][1]
    a = (np.arange(6) % 2 if dtype == "bool" else np.arange(6) - 2).astype(np_dtype).reshape(2, 3)
    mb = ModelBuilder()
    c = mb.tensor("c", a.shape, dtype, data=a)
    m = Model.GetRootAs(mb.finish(inputs=[], outputs=[c]), 0)
    t = m.Subgraphs(0).Tensors(0)
    assert t.Type() == DTYPES[dtype][0] and list(t.ShapeAsNumpy()) == [2, 3] and t.Buffer() == 1
    buf = m.Buffers(1)
    assert buf.DataAsNumpy().tobytes() == a.tobytes()
    # constants are 16-byte aligned in the file, as the converter writes them
    data_offset = buf._tab.Vector(buf._tab.Offset(4))
    assert data_offset % 16 == 0


def test_operator_codes_dedup_and_large_codes():
    mb = ModelBuilder()
    x = mb.tensor("x", [4], "float32")
    y, z, u, v = (mb.tensor(n, [4], "float32") for n in "yzuv")
    mb.op("RELU", [x], [y])
    mb.op("GELU", [y], [z])  # builtin code 150: deprecated_builtin_code saturates at 127
    mb.op("RELU", [z], [u])
    mb.op("RELU", [u], [v], version=2)  # another version is another OperatorCode
    m = Model.GetRootAs(mb.finish(inputs=[x], outputs=[v]), 0)
    codes = [(m.OperatorCodes(i).DeprecatedBuiltinCode(), m.OperatorCodes(i).BuiltinCode(),
              m.OperatorCodes(i).Version()) for i in range(m.OperatorCodesLength())]
    relu, gelu = builtin_code("RELU"), builtin_code("GELU")
    assert codes == [(relu, relu, 1), (127, gelu, 1), (relu, relu, 2)]
    assert [m.Subgraphs(0).Operators(i).OpcodeIndex() for i in range(4)] == [0, 1, 0, 2]


def _options(data, cls):
    op = Model.GetRootAs(data, 0).Subgraphs(0).Operators(0)
    table, opts = op.BuiltinOptions(), cls()
    opts.Init(table.Bytes, table.Pos)
    return op.BuiltinOptionsType(), opts


def _one_op(op, n_inputs=1, **opts):
    mb = ModelBuilder()
    ins = [mb.tensor(f"x{i}", [1, 4, 4, 2], "float32") for i in range(n_inputs)]
    y = mb.tensor("y", [1, 4, 4, 2], "float32")
    mb.op(op, ins + [None], [y], **opts)
    return mb.finish(inputs=ins, outputs=[y])


def test_options_are_written():
    kind, o = _options(_one_op("CONV_2D", padding="VALID", stride_w=2, fused_activation_function="RELU6"),
                       Conv2DOptions)
    assert (kind, o.Padding(), o.StrideW(), o.StrideH(), o.FusedActivationFunction()) == (1, 1, 2, 1, 3)
    kind, o = _options(_one_op("RESHAPE", new_shape=[2, -1]), ReshapeOptions)
    assert kind == 17 and list(o.NewShapeAsNumpy()) == [2, -1]
    kind, o = _options(_one_op("FULLY_CONNECTED", keep_num_dims=True, weights_format="SHUFFLED4x16INT8"),
                       FullyConnectedOptions)
    assert kind == 8 and o.KeepNumDims() and o.WeightsFormat() == 1
    kind, o = _options(_one_op("STRIDED_SLICE", begin_mask=5, shrink_axis_mask=2, offset=True), StridedSliceOptions)
    assert (kind, o.BeginMask(), o.ShrinkAxisMask(), o.Offset()) == (32, 5, 2, True)
    op = Model.GetRootAs(_one_op("EXPAND_DIMS"), 0).Subgraphs(0).Operators(0)
    assert op.BuiltinOptionsType() == 52  # ExpandDimsOptions: no fields, but the type is set
    op = Model.GetRootAs(_one_op("LOGISTIC"), 0).Subgraphs(0).Operators(0)
    assert op.BuiltinOptionsType() == 0 and list(op.InputsAsNumpy()) == [0, -1]  # None input -> -1


def test_bad_options_are_refused():
    mb = ModelBuilder()
    with pytest.raises(TypeError, match="strid_w.*zzz|zzz.*strid_w"):
        mb.op("CONV_2D", [0], [1], strid_w=2, zzz=1)
    with pytest.raises(TypeError, match="alpha"):
        mb.op("RELU", [0], [1], alpha=0.1)
    with pytest.raises(ValueError, match="padding"):
        mb.op("CONV_2D", [0], [1], padding="FULL")
    with pytest.raises(ValueError, match="NOT_AN_OP"):
        mb.op("NOT_AN_OP", [0], [1])


def test_malformed_helpers():
    good = _tiny()
    assert truncated(good, 20) == good[:20] and truncated(good, -4) == good[:-4]
    t = Model.GetRootAs(_tiny(buffer=999), 0).Subgraphs(0).Tensors(0)
    assert t.Buffer() == 999
    mb = ModelBuilder()
    x = mb.tensor("x", [4], "int8")  # no scale: an int8 tensor without quantization parameters
    t = Model.GetRootAs(mb.finish(inputs=[x], outputs=[x]), 0).Subgraphs(0).Tensors(0)
    assert t.Quantization() is None
    mb = ModelBuilder()
    c = mb.tensor("c", [4], "float32", data=b"\0" * 7)  # raw bytes: too short for the shape, on purpose
    m = Model.GetRootAs(mb.finish(inputs=[], outputs=[c]), 0)
    assert m.Buffers(1).DataLength() == 7
    with pytest.raises(ValueError, match="elements"):
        ModelBuilder().tensor("c", [4], "float32", data=np.zeros(3))
    odd = ModelBuilder().finish([], [], file_identifier=b"XXXX", version=2)
    assert odd[4:8] == b"XXXX" and Model.GetRootAs(odd, 0).Version() == 2
