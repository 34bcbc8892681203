"""Quantisation parameters against what the integer kernels represent (aot/ops/quant_rules.py):
the rule on its own (expected values from the definition of TFLite's QuantizeMultiplier: real =
m * 2^(shift - 31), m in [2^30, 2^31)), and each frontend refusing out-of-range zero points and
scales by name, before any kernel is built (issue 32). The extreme-scale sweep under UBSan is
tests/host/test_quant_ranges.py."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import aot  # noqa: F401  (imported at collection: its import probes for a BLAS library with gcc)
from conftest import init, make_model, vi
from tflite_build import ModelBuilder


def _rules():
    from aot.ops import quant_rules
    return quant_rules


# -- the rule ---------------------------------------------------------------------------------
def test_multiplier_shift_limits():
    r = _rules()
    assert r.requant_multiplier(0.5, "s") == (1 << 30, 0)
    assert r.requant_multiplier(2.0 ** -32, "s") == (1 << 30, -31)      # the smallest shift kept
    assert r.requant_multiplier(2.0 ** -33, "s") == (0, 0)              # below: flushed to 0, as TFLite does
    assert r.requant_multiplier(1.5 * 2.0 ** 29, "s", bound=1) == (3 << 29, 30)
    with pytest.raises(r.QuantRangeError, match=r"^s = 1\.073742e\+09 makes a requantisation shift of 31, more "
                                                r"than the 30"):
        r.requant_multiplier(2.0 ** 30, "s", bound=1)
    for bad in (float("inf"), float("nan")):
        with pytest.raises(r.QuantRangeError, match="must be finite"):
            r.requant_multiplier(bad, "s")


def test_left_shift_must_keep_the_largest_accumulator_in_int32():
    r = _rules()
    # 3.0 = 0.75 * 2^2: a left shift of 2; 2^29 - 1 accumulators fit, 2^29 do not
    assert r.requant_multiplier(3.0, "s", bound=(1 << 29) - 1) == (3 << 29, 2)
    with pytest.raises(r.QuantRangeError, match=r"up to 536870912 left by 2 bits, beyond int32.*below 2\^1 fit"):
        r.requant_multiplier(3.0, "s", bound=1 << 29)
    assert r.requant_multiplier(0.75, "s", bound=(1 << 31) - 1) == (3 << 29, 0)     # no left shift: any bound


def test_int64_form_limits():
    r = _rules()
    assert r.requant_multiplier(1.5 * 2.0 ** 13, "s", wide=True) == (3 << 29, 14)
    with pytest.raises(r.QuantRangeError, match="shift of 15, more than the 14 the int64"):
        r.requant_multiplier(2.0 ** 14, "s", wide=True)
    assert r.requant_multiplier(0.5, "s", bound=1 << 47, wide=True) == (1 << 30, 0)
    with pytest.raises(r.QuantRangeError, match="2\\^47"):
        r.requant_multiplier(0.5, "s", bound=(1 << 47) + 1, wide=True)


def test_scales_and_zero_points():
    r = _rules()
    assert r.check_scale(np.float32(1e-45), "x") == np.float32(1e-45)      # subnormal but positive: kept
    for bad in (0.0, -0.5, float("inf"), float("nan")):
        with pytest.raises(r.QuantRangeError, match="is not a finite positive number"):
            r.check_scale(bad, "input 'x'")
    with pytest.raises(r.QuantRangeError, match=r"scale 0 \(channel 1\)"):
        r.check_scale(np.array([0.5, 0.0], np.float32), "filter 'w'")
    assert r.zero_point_problem(500, "int8", "y") == "y zero point 500 is outside int8's range -128..127"
    assert r.zero_point_problem([0, -1], "uint8", "w") == "w zero point -1 (channel 1) is outside uint8's range 0..255"
    assert r.zero_point_problem(40000, "int16", "y") is not None
    assert r.zero_point_problem(-128, "int8", "y") is None and r.zero_point_problem(1 << 40, "float32", "y") is None
    assert list(r.dot_bounds(np.array([[1, -2], [3, 4]]), 10, [5, -100])) == [35, 170]


# -- TFLite ---------------------------------------------------------------------------------------
def _import_tflite(data):
    from aot.frontend.tflite_import import import_tflite
    return import_tflite(data)


def _fc(mb, tag="", x_zp=-3, y_zp=2, os_=0.1, bias_zp=0, fused="NONE"):
    x = mb.tensor(f"x{tag}", [1, 4], "int8", scale=0.05, zero_point=x_zp)
    w = mb.tensor(f"w{tag}", [3, 4], "int8", data=np.ones((3, 4), np.int8), scale=0.02, zero_point=0)
    b = mb.tensor(f"b{tag}", [3], "int32", data=np.zeros(3, np.int32), scale=0.001, zero_point=bias_zp)
    y = mb.tensor(f"y{tag}", [1, 3], "int8", scale=os_, zero_point=y_zp)
    mb.op("FULLY_CONNECTED", [x, w, b], [y], fused_activation_function=fused)
    return x, y


def _one_fc(**kw):
    mb = ModelBuilder()
    x, y = _fc(mb, **kw)
    return mb.finish(inputs=[x], outputs=[y])


def test_tflite_zero_point_outside_its_type_is_refused_by_name():
    from aot.errors import TFLiteError, UnsupportedError
    with pytest.raises(TFLiteError, match=r"^tensor 3 'y' zero point 500 is outside int8's range -128\.\.127$"):
        _import_tflite(_one_fc(y_zp=500))
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 4], "uint8", scale=0.05, zero_point=300)
    y = mb.tensor("y", [4], "uint8", scale=0.05, zero_point=-1)
    mb.op("RESHAPE", [x], [y])
    with pytest.raises(UnsupportedError) as e:        # both, at once
        _import_tflite(mb.finish(inputs=[x], outputs=[y]))
    assert e.value.problems == ["tensor 0 'x' zero point 300 is outside uint8's range 0..255",
                                "tensor 1 'y' zero point -1 is outside uint8's range 0..255"]


def test_tflite_bias_zero_point_is_refused():
    from aot.errors import TFLiteError
    with pytest.raises(TFLiteError, match=r"^operator 0 \(FULLY_CONNECTED\): bias 'b' has zero point 7"):
        _import_tflite(_one_fc(bias_zp=7))


def test_tflite_multipliers_out_of_range_are_listed_at_once():
    from aot.errors import UnsupportedError
    mb = ModelBuilder()
    x1, y1 = _fc(mb, "1", os_=1e-45)
    x2, y2 = _fc(mb, "2")
    x3, y3 = _fc(mb, "3", os_=1e-10)
    with pytest.raises(UnsupportedError) as e:
        _import_tflite(mb.finish(inputs=[x1, x2, x3], outputs=[y1, y2, y3]))
    p = e.value.problems
    assert len(p) == 2, p
    assert p[0].startswith("operator 0 (FULLY_CONNECTED): input 'x1' scale 0.05 * filter 'w1' scale 0.02 / output "
                           "'y1' scale 1.401298e-45 = 7.136238e+41 makes a requantisation shift of 140"), p[0]
    assert p[1].startswith("operator 2 (FULLY_CONNECTED)") and "left by 24 bits, beyond int32" in p[1], p[1]


def test_tflite_fused_activation_bound_beyond_int32_is_refused():
    from aot.errors import TFLiteError
    # 6.0 / 1e-38 steps (inf in float32): TFLite converts the bound to int32, which it does not fit
    with pytest.raises(TFLiteError, match=r"output scale 9\.999999e-39 puts the fused activation's bound 6 at inf "
                                          "steps, beyond int32"):
        _import_tflite(_one_fc(os_=1e-38, fused="RELU6"))


# -- ONNX ---------------------------------------------------------------------------------------
def _import_onnx(model):
    from aot.frontend import import_model
    return import_model(model.SerializeToString())


def _q(scale, zp=np.int8(0), op="QuantizeLinear"):
    x_dtype = TensorProto.FLOAT if op == "QuantizeLinear" else TensorProto.INT8
    y_dtype = TensorProto.INT8 if op == "QuantizeLinear" else TensorProto.FLOAT
    node = helper.make_node(op, ["x", "s", "z"], ["y"], name="q1")
    return make_model([node], [vi("x", [4], x_dtype)], [vi("y", [4], y_dtype)],
                      [init("s", np.float32(scale)), init("z", zp)])


@pytest.mark.parametrize("scale", [0.0, -1.0, float("inf"), float("nan")])
def test_onnx_quantize_scale_not_finite_positive_is_refused_by_name(scale):
    from aot.errors import AotError
    with pytest.raises(AotError, match=r"node 'q1' \(QuantizeLinear\): input 1 \('s'\) scale .* is not a finite "
                                       "positive number"):
        _import_onnx(_q(scale))


def test_onnx_dequantize_beyond_float32_is_refused():
    from aot.errors import AotError
    _import_onnx(_q(1e30, op="DequantizeLinear"))           # 128e30: float32 holds it
    with pytest.raises(AotError, match=r"node 'q1' \(DequantizeLinear\): input 1 \('s'\) scale 3e\+38 dequantises "
                                       r"int8 values to 3\.84e\+40, beyond float32"):
        _import_onnx(_q(3e38, op="DequantizeLinear"))


def test_onnx_qlinear_conv_and_contrib_scales_are_checked():
    from aot.errors import AotError
    w = np.ones((2, 2, 1, 1), np.int8)
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="c1")
    m = make_model([node], [vi("x", [1, 2, 2, 2], TensorProto.INT8)], [vi("y", [1, 2, 2, 2], TensorProto.INT8)],
                   [init("xs", np.float32(0.1)), init("xz", np.int8(0)), init("w", w),
                    init("ws", np.array([0.1, -0.1], np.float32)), init("wz", np.zeros(2, np.int8)),
                    init("ys", np.float32(0.1)), init("yz", np.int8(0))])
    with pytest.raises(AotError, match=r"node 'c1' \(QLinearConv\): input 4 \('ws'\) scale -0\.1 \(channel 1\)"):
        _import_onnx(m)
    add = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], name="add1",
                           domain="com.microsoft")
    m = make_model([add], [vi("a", [4], TensorProto.INT8), vi("b", [4], TensorProto.INT8)],
                   [vi("y", [4], TensorProto.INT8)],
                   [init("as", np.float32(3e38)), init("az", np.int8(0)), init("bs", np.float32(0.1)),
                    init("bz", np.int8(0)), init("cs", np.float32(0.01)), init("cz", np.int8(0))])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    with pytest.raises(AotError, match=r"node 'add1' \(com.microsoft::QLinearAdd\): A_scale 3e\+38 / C_scale 0\.01 "
                                       "= inf overflows float32"):
        _import_onnx(m)


def test_tflite_dequantize_beyond_float32_is_refused_by_operator():
    from aot.errors import TFLiteError
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 4], "int8", scale=3e38, zero_point=0)
    y = mb.tensor("y", [1, 4], "float32")
    mb.op("DEQUANTIZE", [x], [y])
    with pytest.raises(TFLiteError, match=r"^operator 0 \(DEQUANTIZE\): input 'x' scale 3e\+38 dequantises int8 "
                                          r"values to 3\.84e\+40, beyond float32$"):
        _import_tflite(mb.finish(inputs=[x], outputs=[y]))
