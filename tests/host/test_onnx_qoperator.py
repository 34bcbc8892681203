"""onnxruntime's QOperator contrib ops (domain com.microsoft) against onnxruntime itself: small
models built with onnx.helper, int8 and uint8, run by onnxruntime and by the compiled C (built
with ASan+UBSan)."""
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import aot
from conftest import ROOT, SHARED

RNG = np.random.default_rng(20261124)
ONNX_T = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}
DTYPES = [np.int8, np.uint8]


def _model(nodes, inputs, inits):
    g = helper.make_graph(nodes, "qop", [helper.make_tensor_value_info(n, ONNX_T[dt], s) for n, dt, s in inputs],
                          [helper.make_empty_tensor_value_info("y")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    return m.SerializeToString()


def _scale(name, v):
    return numpy_helper.from_array(np.array(v, np.float32), name)


def _zp(name, v, dt):
    return numpy_helper.from_array(np.array(v, dt), name)


def _data(dt, shape):
    info = np.iinfo(dt)
    return RNG.integers(info.min, info.max + 1, size=shape).astype(dt)


def _both(model, feeds):
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = aot.run(aot.compile(model), feeds, sanitize=True)
    got = got[0] if isinstance(got, (list, tuple)) else next(iter(got.values())) if isinstance(got, dict) else got
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    return got.astype(np.int64), want.astype(np.int64)


def _binary(op, dt, sa, sb, scales, zps):
    info = np.iinfo(dt)
    a, b = _data(dt, sa), _data(dt, sb)
    za, zb, zc = zps
    inits = [_scale("sa", scales[0]), _zp("za", za, dt), _scale("sb", scales[1]), _zp("zb", zb, dt),
             _scale("sc", scales[2]), _zp("zc", zc, dt)]
    node = helper.make_node(op, ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["y"], domain="com.microsoft")
    assert info.min <= min(zps) and max(zps) <= info.max
    return _both(_model([node], [("a", dt, sa), ("b", dt, sb)], inits), {"a": a, "b": b})


SHAPES = [((2, 3, 5), (2, 3, 5)), ((2, 3, 5), (5,)), ((1,), (4, 7)), ((3, 1, 5), (1, 4, 1)), ((17,), (1,))]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_qlinear_add(dt, sa, sb):
    """Within 1 LSB, rarely off: onnxruntime's result depends on the CPU and on how its broadcast
    loop splits the inputs (AVX2: the zero points folded into a float32 constant and fused
    multiply-adds, in an order that differs for a scalar operand; SSE2 and NEON differ again).
    Ours is one float32 formula, (a - za) * (sa / sc) + (b - zb) * (sb / sc), rounded half to
    even; an output on a rounding boundary within float32 error can go either way."""
    zmid = 0 if dt == np.int8 else 128
    got, want = _binary("QLinearAdd", dt, sa, sb, (0.05, 0.07, 0.09), (zmid + 3, zmid - 10, zmid + 1))
    assert np.abs(got - want).max() <= 1
    assert np.mean(got != want) < 0.01


@pytest.mark.parametrize("dt", DTYPES)
def test_qlinear_add_saturates(dt):
    """A small output scale: most sums saturate at both ends (same 1-LSB bound as above)."""
    got, want = _binary("QLinearAdd", dt, (4, 33), (4, 33), (0.2, 0.3, 0.01), (0, 0, 0))
    info = np.iinfo(dt)
    assert (want == info.max).any() and (dt == np.uint8 or (want == info.min).any())
    assert np.abs(got - want).max() <= 1


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_qlinear_mul(dt, sa, sb):
    zmid = 0 if dt == np.int8 else 128
    got, want = _binary("QLinearMul", dt, sa, sb, (0.05, 0.07, 0.02), (zmid + 3, zmid - 10, zmid + 1))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", DTYPES)
def test_qlinear_mul_saturates(dt):
    got, want = _binary("QLinearMul", dt, (5, 31), (5, 31), (0.2, 0.3, 0.001), (0, 0, 0))
    assert (want == np.iinfo(dt).max).any()
    np.testing.assert_array_equal(got, want)


def _unary(op, dt, shape, xq, yq, attrs=None):
    x = _data(dt, shape)
    inits = [_scale("xs", xq[0]), _zp("xz", xq[1], dt), _scale("ys", yq[0]), _zp("yz", yq[1], dt)]
    node = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft", **(attrs or {}))
    return _both(_model([node], [("x", dt, shape)], inits), {"x": x})


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("alpha", [0.1, 0.01, -0.5])
def test_qlinear_leaky_relu(dt, alpha):
    zmid = 0 if dt == np.int8 else 128
    got, want = _unary("QLinearLeakyRelu", dt, (3, 5, 7), (0.05, zmid + 5), (0.03, zmid - 20), {"alpha": alpha})
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("xq,yq", [((0.05, 0), (1 / 256, -128)), ((0.1, 7), (0.004, 3))])
def test_qlinear_sigmoid(dt, xq, yq):
    """Within 1 LSB: onnxruntime evaluates the logistic with MLAS's float32 approximation, ours
    is float64 rounded once; a table entry within that error of a rounding boundary differs."""
    off = 0 if dt == np.int8 else 128
    x = np.arange(np.iinfo(dt).min, np.iinfo(dt).max + 1).astype(dt).reshape(16, 16)
    inits = [_scale("xs", xq[0]), _zp("xz", xq[1] + off, dt), _scale("ys", yq[0]), _zp("yz", yq[1] + off, dt)]
    node = helper.make_node("QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft")
    got, want = _both(_model([node], [("x", dt, (16, 16))], inits), {"x": x})
    assert np.abs(got - want).max() <= 1
    assert np.mean(got != want) < 0.02


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("axis", [1, -1])
def test_qlinear_concat(dt, axis):
    """The first input is quantised as the output (copied), the others are not (requantised)."""
    zmid = 0 if dt == np.int8 else 128
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    qs = [(0.05, zmid + 2), (0.02, zmid - 7), (0.5, zmid + 40)]
    inits = [_scale("ys", 0.05), _zp("yz", zmid + 2, dt)]
    names = ["ys", "yz"]
    feeds = {}
    for k, (s, (sc, z)) in enumerate(zip(shapes, qs)):
        inits += [_scale(f"s{k}", sc), _zp(f"z{k}", z, dt)]
        names += [f"x{k}", f"s{k}", f"z{k}"]
        feeds[f"x{k}"] = _data(dt, s)
    node = helper.make_node("QLinearConcat", names, ["y"], domain="com.microsoft", axis=axis)
    got, want = _both(_model([node], [(f"x{k}", dt, s) for k, s in enumerate(shapes)], inits), feeds)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,last", [((1, 8, 5, 5), 0), ((2, 3, 7, 9), 0), ((1, 5, 5, 8), 1), ((2, 3, 3, 5), 1),
                                        ((1, 4, 13), 0)])
def test_qlinear_global_average_pool(dt, shape, last):
    zmid = 0 if dt == np.int8 else 128
    x = _data(dt, shape)
    inits = [_scale("xs", 0.07), _zp("xz", zmid + 3, dt), _scale("ys", 0.03), _zp("yz", zmid - 5, dt)]
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                            domain="com.microsoft", channels_last=last)
    got, want = _both(_model([node], [("x", dt, shape)], inits), {"x": x})
    np.testing.assert_array_equal(got, want)


def test_unsupported_contrib_op_refused_by_name(tmp_path):
    """Any com.microsoft op outside the supported list is refused by name (exit 2), listed with
    every other unsupported op."""
    dt = np.uint8
    inits = [_scale("s", 0.1), _zp("z", 128, dt)]
    nodes = [helper.make_node("QLinearReduceMean", ["x", "s", "z", "s", "z"], ["t"], domain="com.microsoft",
                              axes=[1], keepdims=1),
             helper.make_node("FancyNewOp", ["t"], ["y"], domain="com.microsoft")]
    path = tmp_path / "m.onnx"
    path.write_bytes(_model(nodes, [("x", dt, (2, 3))], inits))
    r = subprocess.run([sys.executable, "-m", "aot", "compile", str(path), "-o", str(tmp_path / "m.tar")],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 2, r.stderr
    assert "com.microsoft::QLinearReduceMean" in r.stderr and "com.microsoft::FancyNewOp" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "m.tar").exists()


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("op,scales", [("QLinearAdd", (0.5, 0.25, 1.0)), ("QLinearAdd", (0.3, 0.1, 0.2)),
                                       ("QLinearMul", (0.5, 0.25, 2.0)), ("QLinearMul", (0.05, 0.07, 0.9))])
def test_qlinear_binary_every_pair(dt, op, scales):
    """Every (a, b) pair, with scales whose ratios put many results exactly on a half step: the
    output zero point must join before the rounding, as onnxruntime adds it. Mul is bit-exact;
    Add within 1 LSB (see test_qlinear_add)."""
    info = np.iinfo(dt)
    zps = (info.min + 100, info.min + 17, info.min + 140)
    a = np.arange(info.min, info.max + 1).astype(dt)
    inits = [_scale("sa", scales[0]), _zp("za", zps[0], dt), _scale("sb", scales[1]), _zp("zb", zps[1], dt),
             _scale("sc", scales[2]), _zp("zc", zps[2], dt)]
    node = helper.make_node(op, ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["y"], domain="com.microsoft")
    got, want = _both(_model([node], [("a", dt, (256, 1)), ("b", dt, (1, 256))], inits),
                      {"a": a.reshape(256, 1), "b": a.reshape(1, 256)})
    if op == "QLinearMul":
        np.testing.assert_array_equal(got, want)
    else:
        assert np.abs(got - want).max() <= 1 and np.sum(got != want) <= 8


POOLS = [((1, 3, 7, 7), dict(kernel_shape=[3, 3]), 0),
         ((2, 4, 8, 9), dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1]), 0),
         ((2, 4, 8, 9), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1), 0),
         ((1, 6, 6, 5), dict(kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER"), 1),
         ((1, 9, 9, 4), dict(kernel_shape=[3, 3], ceil_mode=1, strides=[2, 2]), 1),
         ((1, 5, 11), dict(kernel_shape=[4], strides=[3]), 0),
         ((1, 3, 5, 5), dict(kernel_shape=[5, 5]), 0),        # the whole image: onnxruntime's global kernel
         ((1, 5, 5, 3), dict(kernel_shape=[5, 5]), 1)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,attrs,last", POOLS)
def test_qlinear_average_pool(dt, shape, attrs, last):
    zmid = 0 if dt == np.int8 else 128
    x = _data(dt, shape)
    inits = [_scale("xs", 0.07), _zp("xz", zmid + 3, dt), _scale("ys", 0.03), _zp("yz", zmid - 5, dt)]
    node = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                            domain="com.microsoft", channels_last=last, **attrs)
    got, want = _both(_model([node], [("x", dt, shape)], inits), {"x": x})
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,attrs", [((3, 10), dict(opset=13)), ((2, 5, 7), dict(opset=13, axis=1)),
                                         ((2, 3, 4), dict(opset=12)), ((2, 3, 4), dict(opset=11, axis=2)),
                                         ((4, 33), dict(opset=13, axis=-1))])
@pytest.mark.parametrize("ys", [1 / 256, 0.0037])
def test_qlinear_softmax(dt, shape, attrs, ys):
    """Bit-exact; y_scale 1/256 with zero point -128 makes a peaked row's largest output
    saturate (128 - 128 + 255 ... clamped to the type's maximum)."""
    off = 0 if dt == np.int8 else 128
    x = _data(dt, shape)
    inits = [_scale("xs", 0.15), _zp("xz", off + 2, dt), _scale("ys", ys), _zp("yz", off - 128, dt)]
    node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft", **attrs)
    got, want = _both(_model([node], [("x", dt, shape)], inits), {"x": x})
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", DTYPES)
def test_qoperator_chain(dt):
    """Every contrib op in one graph, each feeding the next (a scalar-scale zoo: the tensors'
    quantisations are reused across roles), bit-exact end to end."""
    off = 0 if dt == np.int8 else 128
    inits = [_scale("xs", 0.15), _zp("xz", off + 2, dt), _scale("ys", 1 / 256), _zp("yz", off - 128, dt)]
    ms = "com.microsoft"
    nodes = [helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["s"], domain=ms, opset=13),
             helper.make_node("QLinearSigmoid", ["s", "xs", "xz", "ys", "yz"], ["t"], domain=ms),
             helper.make_node("QLinearMul", ["t", "xs", "xz", "s", "ys", "yz", "xs", "xz"], ["u"], domain=ms),
             helper.make_node("QLinearAdd", ["u", "xs", "xz", "x", "ys", "yz", "xs", "xz"], ["v"], domain=ms),
             helper.make_node("QLinearLeakyRelu", ["v", "xs", "xz", "xs", "xz"], ["l"], domain=ms, alpha=0.2),
             helper.make_node("QLinearAveragePool", ["l", "xs", "xz", "ys", "yz"], ["w"], domain=ms,
                              kernel_shape=[2, 2], pads=[1, 1, 0, 0]),
             helper.make_node("QLinearGlobalAveragePool", ["w", "xs", "xz", "ys", "yz"], ["g"], domain=ms),
             helper.make_node("QLinearConcat", ["xs", "xz", "g", "ys", "yz", "g", "xs", "xz"], ["y"], domain=ms,
                              axis=1)]
    got, want = _both(_model(nodes, [("x", dt, (1, 3, 5, 7))], inits), {"x": _data(dt, (1, 3, 5, 7))})
    np.testing.assert_array_equal(got, want)


def _ort_qoperator(rel, tmp_path):
    """onnxruntime's offline optimizer (ORT_ENABLE_EXTENDED) turns a QDQ model into QOperator form."""
    src = os.path.join(SHARED, "models", "mlperf_tiny", rel)
    if not os.path.exists(src):
        pytest.skip(f"{src} not present")
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    opts.optimized_model_filepath = str(tmp_path / "qop.onnx")
    ort.InferenceSession(src, opts, providers=["CPUExecutionProvider"])
    return opts.optimized_model_filepath


def test_runtime_scale_refused():
    """The requantisation constants are computed at compile time: a scale that is a model input
    is refused with the node and the input named."""
    dt = np.uint8
    inits = [_zp("za", 128, dt), _scale("sb", 0.1), _zp("zb", 128, dt), _scale("sc", 0.2), _zp("zc", 128, dt)]
    node = helper.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["y"], name="add0",
                            domain="com.microsoft")
    g = helper.make_graph([node], "qop", [helper.make_tensor_value_info("a", TensorProto.UINT8, (4,)),
                                          helper.make_tensor_value_info("sa", TensorProto.FLOAT, ()),
                                          helper.make_tensor_value_info("b", TensorProto.UINT8, (4,))],
                          [helper.make_empty_tensor_value_info("y")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(aot.errors.AotError, match=r"node 'add0' \(com.microsoft::QLinearAdd\).*A_scale.*constant"):
        aot.compile(m.SerializeToString())
