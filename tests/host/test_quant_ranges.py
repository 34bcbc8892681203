"""Extreme quantisation parameters (issue 32): a sweep of scales from 1e-45 to 3e38 over the ops
that requantise, in TFLite and ONNX models. Each case is either refused (an AotError naming the
tensors and the limit, one line; exit 2 through the CLI) or compiles and runs under ASan+UBSan
with outputs bit-exact to TensorFlow Lite Micro (TFLite) or within onnxruntime's 1 LSB (ONNX).
The accepted cases of a sweep share one model, so one sanitised build runs them all."""
import math

import numpy as np
import pytest
from onnx import TensorProto, helper

from conftest import init, make_model, ort_run, vi
from test_cli_errors import assert_user_error, run_cli
from tflite_build import ModelBuilder
from tflm_oracle import run_tflm, tflm_available

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")

EXTREMES = [1e-45, 1e-38, 1e-30, 1e-10, 1e10, 1e30, 3e38]
W = np.array([[3, -5, 7, 1], [-127, 127, -1, 2], [0, 1, 0, -1]], np.int8)      # 3 output channels of 4
BIAS = np.array([100, -7, 0], np.int32)
WS = (0.02, 0.01, 0.5)


def _bias_scales(xs, ws):
    """input scale * filter scale, kept inside float32's normal range (no kernel reads it; a
    scale of 0 or inf is refused on its own)."""
    return [min(max(xs * s, 1e-30), 1e30) for s in ws]


# -- TFLite cases: each adds its op, with tensors named after the case, to a shared builder ------
def _conv(mb, n, xs=0.05, ws=WS, os_=0.1):
    x = mb.tensor(n("x"), [1, 2, 2, 4], "int8", scale=xs, zero_point=-3)
    w = mb.tensor(n("w"), [3, 1, 1, 4], "int8", data=W.reshape(3, 1, 1, 4), scale=list(ws), zero_point=[0] * 3,
                  quantized_dimension=0)
    b = mb.tensor(n("b"), [3], "int32", data=BIAS, scale=_bias_scales(xs, ws), zero_point=[0] * 3)
    y = mb.tensor(n("y"), [1, 2, 2, 3], "int8", scale=os_, zero_point=2)
    mb.op("CONV_2D", [x, w, b], [y], padding="VALID", stride_w=1, stride_h=1)
    return [x], y


def _depthwise(mb, n, xs=0.05, ws=WS, os_=0.1):
    x = mb.tensor(n("x"), [1, 2, 2, 3], "int8", scale=xs, zero_point=-3)
    w = mb.tensor(n("w"), [1, 1, 1, 3], "int8", data=np.array([100, -128, 5], np.int8).reshape(1, 1, 1, 3),
                  scale=list(ws), zero_point=[0] * 3, quantized_dimension=3)
    b = mb.tensor(n("b"), [3], "int32", data=np.array([-50, 3, 0], np.int32), scale=_bias_scales(xs, ws),
                  zero_point=[0] * 3)
    y = mb.tensor(n("y"), [1, 2, 2, 3], "int8", scale=os_, zero_point=2)
    mb.op("DEPTHWISE_CONV_2D", [x, w, b], [y], padding="VALID", stride_w=1, stride_h=1, depth_multiplier=1)
    return [x], y


def _dense(mb, n, xs=0.05, ws=WS, os_=0.1):
    x = mb.tensor(n("x"), [2, 4], "int8", scale=xs, zero_point=-3)
    w = mb.tensor(n("w"), [3, 4], "int8", data=W, scale=ws[0], zero_point=0)
    y = mb.tensor(n("y"), [2, 3], "int8", scale=os_, zero_point=2)
    mb.op("FULLY_CONNECTED", [x, w, None], [y])
    return [x], y


def _dense16(mb, n, xs=0.05, ws=WS, os_=0.1):
    """int16x8: int16 activations (zero point 0), an int64 bias, the int64 requantisation."""
    x = mb.tensor(n("x"), [2, 4], "int16", scale=xs, zero_point=0)
    w = mb.tensor(n("w"), [3, 4], "int8", data=W, scale=ws[0], zero_point=0)
    b = mb.tensor(n("b"), [3], "int64", data=np.array([1000, -5, 0], np.int64), scale=_bias_scales(xs, ws[:1])[0],
                  zero_point=0)
    y = mb.tensor(n("y"), [2, 3], "int16", scale=os_, zero_point=0)
    mb.op("FULLY_CONNECTED", [x, w, b], [y])
    return [x], y


def _transpose_conv(mb, n, xs=0.05, ws=WS, os_=0.1):
    shape = mb.tensor(n("shape"), [4], "int32", data=np.array([1, 3, 3, 3], np.int32))
    w = mb.tensor(n("w"), [3, 2, 2, 4], "int8", data=np.repeat(np.repeat(W[:, None, None, :], 2, 1), 2, 2),
                  scale=list(ws), zero_point=[0] * 3, quantized_dimension=0)
    x = mb.tensor(n("x"), [1, 2, 2, 4], "int8", scale=xs, zero_point=-3)
    y = mb.tensor(n("y"), [1, 3, 3, 3], "int8", scale=os_, zero_point=2)
    mb.op("TRANSPOSE_CONV", [shape, w, x], [y], padding="VALID", stride_w=1, stride_h=1)
    return [x], y


def _batch_matmul(mb, n, xs=0.05, ys=0.07, os_=0.1):
    a = mb.tensor(n("a"), [1, 2, 4], "int8", scale=xs, zero_point=-3)
    b = mb.tensor(n("b"), [1, 4, 3], "int8", scale=ys, zero_point=0)
    y = mb.tensor(n("y"), [1, 2, 3], "int8", scale=os_, zero_point=2)
    mb.op("BATCH_MATMUL", [a, b], [y])
    return [a, b], y


def _binary(op):
    def add(mb, n, xs=0.05, ys=0.07, os_=0.1):
        x = mb.tensor(n("x"), [1, 6], "int8", scale=xs, zero_point=-3)
        x2 = mb.tensor(n("x2"), [1, 6], "int8", scale=ys, zero_point=5)
        y = mb.tensor(n("y"), [1, 6], "int8", scale=os_, zero_point=2)
        mb.op(op, [x, x2], [y])
        return [x, x2], y
    return add


def _mean(mb, n, xs=0.05, os_=0.1):
    x = mb.tensor(n("x"), [1, 2, 2, 3], "int8", scale=xs, zero_point=-3)
    axes = mb.tensor(n("axes"), [2], "int32", data=np.array([1, 2], np.int32))
    y = mb.tensor(n("y"), [1, 1, 1, 3], "int8", scale=os_, zero_point=2)
    mb.op("MEAN", [x, axes], [y], keep_dims=True)
    return [x], y


def _unary(op, out_q=None, **opts):
    def add(mb, n, xs=0.05, os_=0.1):
        x = mb.tensor(n("x"), [1, 6], "int8", scale=xs, zero_point=-3)
        s, z = out_q or (os_, 2)
        y = mb.tensor(n("y"), [1, 6], "int8", scale=s, zero_point=z)
        mb.op(op, [x], [y], **opts)
        return [x], y
    return add


def _prelu(mb, n, xs=0.05, ys=0.07, os_=0.1):
    x = mb.tensor(n("x"), [1, 6], "int8", scale=xs, zero_point=-3)
    a = mb.tensor(n("alpha"), [6], "int8", data=np.array([1, 2, 3, -4, 5, 127], np.int8), scale=ys, zero_point=0)
    y = mb.tensor(n("y"), [1, 6], "int8", scale=os_, zero_point=2)
    mb.op("PRELU", [x, a], [y])
    return [x], y


# op -> (builder, the scales swept)
OPS = {
    "CONV_2D": (_conv, ("xs", "ws", "os_")),
    "DEPTHWISE_CONV_2D": (_depthwise, ("xs", "ws", "os_")),
    "FULLY_CONNECTED": (_dense, ("xs", "ws", "os_")),
    "FULLY_CONNECTED int16x8": (_dense16, ("xs", "ws", "os_")),
    "TRANSPOSE_CONV": (_transpose_conv, ("xs", "ws", "os_")),
    "BATCH_MATMUL": (_batch_matmul, ("xs", "ys", "os_")),
    "ADD": (_binary("ADD"), ("xs", "ys", "os_")),
    "SUB": (_binary("SUB"), ("xs", "ys", "os_")),
    "MUL": (_binary("MUL"), ("xs", "ys", "os_")),
    "MEAN": (_mean, ("xs", "os_")),
    "QUANTIZE": (_unary("QUANTIZE"), ("xs", "os_")),
    "RELU": (_unary("RELU"), ("xs", "os_")),
    "LEAKY_RELU": (_unary("LEAKY_RELU", alpha=0.2), ("xs", "os_")),
    "PRELU": (_prelu, ("xs", "ys", "os_")),
    "SOFTMAX": (_unary("SOFTMAX", (1 / 256, -128), beta=1.0), ("xs",)),
    "LOGISTIC": (_unary("LOGISTIC", (1 / 256, -128)), ("xs",)),
    "TANH": (_unary("TANH", (1 / 128, 0)), ("xs",)),
    "HARD_SWISH": (_unary("HARD_SWISH"), ("xs", "os_")),
}


def _sweep_cases():
    cases = []
    for op, (_, params) in OPS.items():
        for p in params:
            for v in EXTREMES:
                cases.append((op, {p: (v, 0.01, 0.5) if p == "ws" else v}))
    # per-channel mixes: one channel extreme, the others ordinary (or extreme the other way)
    for op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        for ws in [(1e-45, 0.01, 0.5), (0.02, 3e38, 0.5), (1e-38, 1e-10, 1e10), (1e-30, 0.02, 1e-30)]:
            cases.append((op, {"ws": ws}))
    return cases


def _model(cases):
    """One .tflite holding every case (each its own inputs and output); with it, the cases' tags."""
    mb = ModelBuilder()
    ins, outs = [], []
    for k, (op, kw) in enumerate(cases):
        i, y = OPS[op][0](mb, lambda s, k=k: f"c{k}_{s}", **kw)
        ins += i
        outs.append(y)
    return mb.finish(inputs=ins, outputs=outs)


def _classify(cases):
    """(refusals [(case, message)], accepted cases), each case compiled on its own."""
    import aot
    from aot.errors import AotError
    refused, accepted = [], []
    for case in cases:
        try:
            aot.compile(_model([case]))
        except AotError as e:
            refused.append((case, str(e)))
            continue
        accepted.append(case)
    return refused, accepted


def _run_all(cases, seed=0):
    """The accepted cases in one model: outputs under ASan+UBSan against TFLite Micro's."""
    import aot
    model = _model(cases)
    res = aot.compile(model)
    rng = np.random.default_rng(seed)
    feeds = [rng.integers(np.iinfo(v.type.dtype).min, np.iinfo(v.type.dtype).max + 1, v.type.shape).astype(v.type.dtype)
             for v in res.graph.inputs]
    refs = run_tflm(model, feeds)
    outs = aot.run(res, {v.name: f for v, f in zip(res.graph.inputs, feeds)}, sanitize=True)
    return [(case, outs[name], ref) for case, name, ref in zip(cases, res.graph.output_names, refs)]


@tflm
def test_extreme_tflite_scales_are_refused_by_name_or_bit_exact_with_tflm():
    cases = _sweep_cases()
    refused, accepted = _classify(cases)
    for (op, kw), msg in refused:
        assert "\n" not in msg, msg
        assert msg.startswith("operator 0 (") and op.split()[0] in msg, msg
        assert "'c0_" in msg, msg                  # names the tensors the scales belong to
        assert any(w in msg for w in ("shift", "int32", "exceed", "outside", "finite", "overflows")), msg
    wrong = [(case, got, ref) for case, got, ref in _run_all(accepted) if not np.array_equal(got, ref)]
    assert not wrong, wrong[:3]
    # each op keeps its ordinary-scale cases, and each refuses some extreme one
    assert len(refused) >= 60 and len(accepted) >= 100, (len(refused), len(accepted))
    for op in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "FULLY_CONNECTED int16x8", "TRANSPOSE_CONV",
               "BATCH_MATMUL", "ADD", "MUL", "MEAN", "QUANTIZE", "PRELU", "SOFTMAX", "LOGISTIC"):
        assert any(c[0] == op for c, _ in refused), op


def _dense_limit():
    """The largest left shift FULLY_CONNECTED's accumulators take: |x - zp| <= 130 (zero point -3)
    times the largest row sum of |w|, inside int32 (TFLite's MultiplyByQuantizedMultiplier contract)."""
    bound = 130 * int(np.abs(W.astype(np.int64)).sum(axis=1).max())
    return int(math.floor(math.log2(((1 << 31) - 1) / bound)))


@tflm
def test_multipliers_at_the_representable_limit():
    """Just inside the limits: accepted and bit-exact with TFLite Micro; just outside: refused.
    Large: FULLY_CONNECTED's real multiplier just below and at 2^limit (limit from its
    accumulator bound). Small: CONV_2D's multipliers around 2^-32, where TFLite flushes them to 0."""
    xs, ws = 0.05, 0.02
    left = _dense_limit()
    inside, outside = [], []
    for scale_factor, side in ((1 - 1e-4, inside), (1 + 1e-4, outside)):
        os_ = float(np.float32(xs * ws / (2.0 ** left * scale_factor)))
        side.append(("FULLY_CONNECTED", {"xs": xs, "ws": (ws,) * 3, "os_": os_}))
    for factor in (0.99, 1.01, 0.5, 2.0):                    # around 2^-32, both sides: all run
        os_ = float(np.float32(xs * WS[0] / (2.0 ** -32 * factor)))
        inside.append(("CONV_2D", {"xs": xs, "os_": os_}))
    refused, accepted = _classify(inside + outside)
    assert accepted == inside, refused
    assert [c for c, _ in refused] == outside and "left by" in refused[0][1], refused
    wrong = [(case, got, ref) for case, got, ref in _run_all(accepted, seed=3) if not np.array_equal(got, ref)]
    assert not wrong, wrong


def test_cli_refuses_an_extreme_scale_in_one_line(tmp_path):
    src = tmp_path / "m.tflite"
    src.write_bytes(_model([("CONV_2D", {"os_": 1e-45})]))
    before = src.read_bytes()
    out = tmp_path / "m.tar"
    r = run_cli("compile", str(src), "-o", str(out))
    assert_user_error(r, str(out), "operator 0 (CONV_2D)", "output 'c0_y' scale 1.401298e-45", "shift of 140",
                      "more than the 30")
    assert r.stderr.count("\n") == 1, r.stderr
    assert src.read_bytes() == before


# -- ONNX: QDQ (folded to the integer kernels where the products fit int32) and QOperator -------
def _qdq_conv(k, xs=0.05, ws=0.02, ys=0.1):
    p = f"q{k}_"
    w = np.array([[[[3]], [[-5]]], [[[127]], [[-128]]]], np.int8)          # [2, 2, 1, 1]
    nodes = [helper.make_node("QuantizeLinear", [p + "x", p + "xs", p + "xz"], [p + "xq"]),
             helper.make_node("DequantizeLinear", [p + "xq", p + "xs", p + "xz"], [p + "xd"]),
             helper.make_node("DequantizeLinear", [p + "w", p + "ws"], [p + "wd"]),
             helper.make_node("Conv", [p + "xd", p + "wd"], [p + "c"]),
             helper.make_node("QuantizeLinear", [p + "c", p + "ys", p + "yz"], [p + "yq"]),
             helper.make_node("DequantizeLinear", [p + "yq", p + "ys", p + "yz"], [p + "y"])]
    inits = [init(p + "xs", np.float32(xs)), init(p + "xz", np.int8(1)), init(p + "w", w),
             init(p + "ws", np.float32(ws)), init(p + "ys", np.float32(ys)), init(p + "yz", np.int8(-2))]
    return nodes, inits, [vi(p + "x", [1, 2, 3, 3])], [vi(p + "y", [1, 2, 3, 3])]


def _qlinear_add(k, xs=0.05, ys=0.07, os_=0.1, op="QLinearAdd"):
    p = f"q{k}_"
    nodes = [helper.make_node(op, [p + "a", p + "as", p + "az", p + "b", p + "bs", p + "bz", p + "cs", p + "cz"],
                              [p + "y"], domain="com.microsoft")]
    inits = [init(p + "as", np.float32(xs)), init(p + "az", np.int8(3)), init(p + "bs", np.float32(ys)),
             init(p + "bz", np.int8(-1)), init(p + "cs", np.float32(os_)), init(p + "cz", np.int8(4))]
    return nodes, inits, [vi(p + "a", [1, 8], TensorProto.INT8), vi(p + "b", [1, 8], TensorProto.INT8)], \
        [vi(p + "y", [1, 8], TensorProto.INT8)]


def _qlinear_conv(k, xs=0.05, ws=0.02, ys=0.1):
    p = f"q{k}_"
    w = np.array([[[[3]], [[-5]]], [[[127]], [[-128]]]], np.int8)
    nodes = [helper.make_node("QLinearConv", [p + "x", p + "xs", p + "xz", p + "w", p + "ws", p + "wz", p + "ys",
                                              p + "yz"], [p + "y"])]
    inits = [init(p + "xs", np.float32(xs)), init(p + "xz", np.int8(1)), init(p + "w", w),
             init(p + "ws", np.float32(ws)), init(p + "wz", np.int8(0)), init(p + "ys", np.float32(ys)),
             init(p + "yz", np.int8(-2))]
    return nodes, inits, [vi(p + "x", [1, 2, 3, 3], TensorProto.INT8)], [vi(p + "y", [1, 2, 3, 3], TensorProto.INT8)]


ONNX_OPS = {"QDQ Conv": (_qdq_conv, ("xs", "ws", "ys")), "QLinearConv": (_qlinear_conv, ("xs", "ws", "ys")),
            "QLinearAdd": (_qlinear_add, ("xs", "ys", "os_")),
            "QLinearMul": (lambda k, **kw: _qlinear_add(k, op="QLinearMul", **kw), ("xs", "ys", "os_"))}


def _onnx_model(cases):
    nodes, inits, ins, outs = [], [], [], []
    for k, (op, kw) in enumerate(cases):
        n, i, x, y = ONNX_OPS[op][0](k, **kw)
        nodes += n
        inits += i
        ins += x
        outs += y
    m = make_model(nodes, ins, outs, inits, opset=13)
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def _expected(case, ref, feeds, k):
    """onnxruntime's output; for QLinearAdd/Mul the op's definition in float64 instead:
    onnxruntime folds the zero points into one float32 constant, which a huge scale ratio swamps
    (QLinearAdd with B_scale 1e10 gives -64 for an exact -62), and converts values beyond int32
    to INT32_MIN (x86) where they should saturate."""
    op, kw = case
    if op not in ("QLinearAdd", "QLinearMul"):
        return ref
    sa, sb, sc = (np.float64(np.float32(kw.get(n, d))) for n, d in (("xs", 0.05), ("ys", 0.07), ("os_", 0.1)))
    da = feeds[f"q{k}_a"].astype(np.float64) - 3
    db = feeds[f"q{k}_b"].astype(np.float64) + 1
    v = (da * sa + db * sb) / sc if op == "QLinearAdd" else da * db * sa * sb / sc
    return np.clip(np.rint(v) + 4, -128, 127)


def test_extreme_onnx_scales_are_refused_by_name_or_run_under_ubsan():
    """Positive finite scales whose ratios and dequantised values stay finite in float32 are
    accepted (a QDQ group whose integer products could overflow int32 keeps its float form, the
    rest fold to the integer kernels) and run within 1 step of onnxruntime; the others are
    refused, naming the scale."""
    import aot
    from aot.errors import AotError
    cases = [(op, {p: v}) for op, (_, params) in ONNX_OPS.items() for p in params for v in EXTREMES]
    refused, accepted = [], []
    for case in cases:
        try:
            aot.compile(_onnx_model([case]).SerializeToString())
        except AotError as e:
            refused.append((case, str(e)))
            continue
        accepted.append(case)
    for case, msg in refused:
        assert "\n" not in msg and "'q0_" in msg and any(w in msg for w in ("float32", "finite")), msg
    model = _onnx_model(accepted)
    rng = np.random.default_rng(2)
    feeds = {}
    for v in model.graph.input:
        shape = [d.dim_value for d in v.type.tensor_type.shape.dim]
        if v.type.tensor_type.elem_type == TensorProto.INT8:
            feeds[v.name] = rng.integers(-128, 128, shape).astype(np.int8)
        else:
            feeds[v.name] = rng.uniform(-4, 4, shape).astype(np.float32)
    ref = ort_run(model, feeds)
    res = aot.compile(model.SerializeToString())
    out = aot.run(res, feeds, sanitize=True)
    far = []
    for k, case in enumerate(accepted):
        name = f"q{k}_y"
        want = _expected(case, ref[name], feeds, k).astype(np.float64)
        diff = np.abs(out[name].astype(np.float64) - want)
        step = float(np.float32(case[1].get("ys", 0.1))) if case[0] == "QDQ Conv" else 1.0    # one output step
        if np.any(diff > step * 1.0001):
            far.append((case, out[name].ravel()[:6], want.ravel()[:6]))
    assert not far, far[:4]
    assert len(refused) >= 6 and len(accepted) >= 70, (len(refused), len(accepted))


@tflm
def test_sub_rounds_a_tie_as_tflite_micro():
    """(-4 - -3) * 0.05 - (70 - 5) * 0.02 = -1.35 = -13.5 output steps: a tie, which TFLite Micro
    rounds to -14 (+2 = -12) only when the scale ratios are divided in double; random scales add
    ties of their own. Every element bit-exact with the wheel."""
    import aot
    mb = ModelBuilder()
    rng = np.random.default_rng(3)
    ins, outs = [], []
    scales = [(0.05, 0.02, 0.1)] + [tuple(float(np.float32(10 ** rng.uniform(-3, 0))) for _ in range(3))
                                    for _ in range(30)]
    for k, (s1, s2, so) in enumerate(scales):
        x = mb.tensor(f"x{k}", [1, 256], "int8", scale=s1, zero_point=-3)
        y = mb.tensor(f"y{k}", [1, 256], "int8", scale=s2, zero_point=5)
        o = mb.tensor(f"o{k}", [1, 256], "int8", scale=so, zero_point=2)
        mb.op("SUB", [x, y], [o])
        ins += [x, y]
        outs.append(o)
    model = mb.finish(inputs=ins, outputs=outs)
    feeds = [rng.integers(-128, 128, (1, 256)).astype(np.int8) for _ in ins]
    feeds[0][0, 0], feeds[1][0, 0] = -4, 70
    refs = run_tflm(model, feeds)
    assert refs[0][0, 0] == -12
    res = aot.compile(model)
    got = aot.run(res, {v.name: f for v, f in zip(res.graph.inputs, feeds)})
    for name, ref in zip(res.graph.output_names, refs):
        np.testing.assert_array_equal(got[name], ref, err_msg=name)
