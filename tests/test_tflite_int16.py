"""TFLite int16x8 models (int16 activations of zero point 0, int8 weights, int64 bias): each
supported op bit for bit with TensorFlow Lite Micro (the tflite-micro wheel) on random inputs over
the whole int16 range; the ops without a supported int16 kernel refused by name."""
import numpy as np
import pytest

from tflite_build import ModelBuilder
from tflm_oracle import run_tflm, tflm_available

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")
I16 = np.iinfo(np.int16)


def _feed(rng, shape):
    return rng.integers(I16.min, I16.max + 1, shape).astype(np.int16)


def _assert_bit_exact(model, shapes, trials=3, integer_ops=None, oracle=None, **compile_kw):
    """Compile once; on `trials` random int16 inputs (the first under ASan/UBSan) the outputs
    equal TFLM's (on `oracle`, an equivalent model TFLM runs, where given). Returns the compile
    result."""
    import aot
    res = aot.compile(model, **compile_kw)
    assert all(n.outputs[0].type.dtype != "float32" for n in res.graph.nodes if n.op != "DequantizeLinear"), \
        [(n.op, n.outputs[0].type.dtype) for n in res.graph.nodes]              # integer-only
    if integer_ops is not None:
        assert {n.op for n in res.graph.nodes} == set(integer_ops), sorted({n.op for n in res.graph.nodes})
    for trial in range(trials):
        rng = np.random.default_rng(100 + trial)
        feeds = [_feed(rng, s) for s in shapes]
        refs = run_tflm(oracle or model, feeds)
        outs = aot.run(res, {v.name: f for v, f in zip(res.graph.inputs, feeds)}, sanitize=trial == 0)
        for name, ref in zip(res.graph.output_names, refs):
            got = outs[name]
            assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, got.shape, ref.dtype, ref.shape)
            assert len(np.unique(ref)) > min(8, ref.size // 4), "degenerate: TFLM computes (nearly) constants"
            np.testing.assert_array_equal(got, ref, err_msg=f"trial {trial}")
    return res


# -- convolutions and dense ----------------------------------------------------------------------
def _weighted(op, x_shape, w_shape, out_shape, opts, per_channel=True, bias="int64", seed=0, zero_bias=False):
    """A one-op int16x8 model: int8 weights (per output channel or per tensor), a bias of the
    given dtype (or None; or all zeros); the scales make the real outputs' spread about 4 (RELU6 clamps some)
    and keep most outputs inside int16."""
    rng = np.random.default_rng(seed)
    axis = 3 if op == "DEPTHWISE_CONV_2D" else 0
    channels = w_shape[axis]
    w = rng.integers(-127, 128, w_shape).astype(np.int8)
    w_scale = rng.uniform(0.002, 0.02, channels if per_channel else 1).astype(np.float32)
    taps = int(np.prod(w_shape)) // channels
    # the accumulator's spread: sqrt(taps) * (32768 / sqrt(3)) * (127 / sqrt(3)) in integer steps
    spread = float(np.sqrt(taps) * 32768 * 127 / 3)
    x_scale = np.float32(4 / (spread * float(w_scale.mean())))
    out_scale = np.float32(4 * 3 / 32767)
    mb = ModelBuilder()
    x = mb.tensor("x", x_shape, "int16", scale=x_scale, zero_point=0)
    wt = mb.tensor("w", w_shape, "int8", data=w, scale=w_scale, zero_point=np.zeros(w_scale.size),
                   quantized_dimension=axis)
    b = None
    bq = rng.integers(-(1 << 20), 1 << 20, channels)
    if bias is not None:
        b = mb.tensor("b", [channels], bias, data=bq if not zero_bias else np.zeros(channels), scale=x_scale * np.broadcast_to(w_scale, channels),
                      zero_point=np.zeros(channels))
    y = mb.tensor("y", out_shape, "int16", scale=out_scale, zero_point=0)
    mb.op(op, [x, wt, b], [y], **opts)
    return mb.finish(inputs=[x], outputs=[y])


CONV_CASES = {
    "conv_same_relu": ("CONV_2D", [1, 7, 7, 3], [5, 3, 3, 3], [1, 7, 7, 5],
                       dict(padding="SAME", fused_activation_function="RELU"), {}),
    "conv_valid_s2_relu6": ("CONV_2D", [1, 9, 8, 4], [3, 3, 2, 4], [1, 4, 4, 3],
                            dict(padding="VALID", stride_h=2, stride_w=2, fused_activation_function="RELU6"), {}),
    "conv_same_s2_dilated_per_tensor": ("CONV_2D", [2, 8, 7, 2], [4, 3, 3, 2], [2, 4, 4, 4],
                                        dict(padding="SAME", stride_h=2, stride_w=2, dilation_w_factor=2),
                                        dict(per_channel=False)),
    "conv_int32_bias": ("CONV_2D", [1, 5, 5, 3], [3, 2, 2, 3], [1, 5, 5, 3], dict(padding="SAME"),
                        dict(bias="int32")),
    "conv_no_bias": ("CONV_2D", [1, 6, 6, 1], [7, 3, 3, 1], [1, 4, 4, 7], dict(padding="VALID"), dict(bias=None)),
    "depthwise_same_m2": ("DEPTHWISE_CONV_2D", [1, 6, 6, 3], [1, 3, 3, 6], [1, 6, 6, 6],
                          dict(padding="SAME", depth_multiplier=2), {}),
    "depthwise_valid_s2_relu6": ("DEPTHWISE_CONV_2D", [1, 9, 7, 5], [1, 3, 3, 5], [1, 4, 3, 5],
                                 dict(padding="VALID", stride_h=2, stride_w=2, fused_activation_function="RELU6"),
                                 {}),
    "depthwise_no_bias_per_tensor": ("DEPTHWISE_CONV_2D", [1, 5, 5, 3], [1, 2, 2, 3], [1, 5, 5, 3],
                                     dict(padding="SAME"), dict(bias=None, per_channel=False)),
    "fully_connected": ("FULLY_CONNECTED", [3, 37], [5, 37], [3, 5], {}, {}),
    "fully_connected_relu_per_tensor": ("FULLY_CONNECTED", [4, 16], [7, 16], [4, 7],
                                        dict(fused_activation_function="RELU"), dict(per_channel=False)),
    "fully_connected_int32_bias": ("FULLY_CONNECTED", [2, 20], [5, 20], [2, 5], {}, dict(bias="int32")),
    "fully_connected_no_bias": ("FULLY_CONNECTED", [4, 9], [6, 9], [4, 6], {}, dict(bias=None)),
}


@tflm
@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_int16x8_conv_and_dense_are_bit_exact_with_tflm(name):
    op, xs, ws, ys, opts, kw = CONV_CASES[name]
    model = _weighted(op, xs, ws, ys, opts, **kw)
    oracle = None
    if op == "DEPTHWISE_CONV_2D" and kw.get("bias", "int64") is None:
        # TFLM's int16 depthwise kernel crashes without a bias: the same model with a zero one
        oracle = _weighted(op, xs, ws, ys, opts, **dict(kw, bias="int64", zero_bias=True))
    kernel = "QDense" if op == "FULLY_CONNECTED" else "QConv"
    res = _assert_bit_exact(model, [xs], oracle=oracle)
    (node,) = [n for n in res.graph.nodes if n.op == kernel]
    wide = kw.get("bias", "int64") != "int32"
    assert node.attrs.get("acc_dtype", "int32") == ("int64" if wide else "int32")
