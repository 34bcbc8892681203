"""TFLite int16x8 models (int16 activations of zero point 0, int8 weights, int64 bias): each
supported op bit for bit with TensorFlow Lite Micro (the tflite-micro wheel) on random inputs over
the whole int16 range; the ops without a supported int16 kernel refused by name."""
import shutil

import numpy as np
import pytest

from tflite_build import ModelBuilder
from tflm_oracle import run_tflm, tflm_available

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")
I16 = np.iinfo(np.int16)


def _feed(rng, shape):
    return rng.integers(I16.min, I16.max + 1, shape).astype(np.int16)


def _assert_bit_exact(model, shapes, trials=3, integer_ops=None, oracle=None, feeds=None, **compile_kw):
    """Compile once; on `trials` random int16 inputs (or the given `feeds`; the first trial under
    ASan/UBSan) the outputs equal TFLM's (on `oracle`, an equivalent model TFLM runs, where
    given). Returns the compile result."""
    import aot
    res = aot.compile(model, **compile_kw)
    assert all(n.outputs[0].type.dtype != "float32" for n in res.graph.nodes if n.op != "DequantizeLinear"), \
        [(n.op, n.outputs[0].type.dtype) for n in res.graph.nodes]              # integer-only
    if integer_ops is not None:
        assert {n.op for n in res.graph.nodes} == set(integer_ops), sorted({n.op for n in res.graph.nodes})
    for trial in range(trials):
        rng = np.random.default_rng(100 + trial)
        given = feeds if feeds is not None else [_feed(rng, s) for s in shapes]
        refs = run_tflm(oracle or model, given)
        outs = aot.run(res, {v.name: f for v, f in zip(res.graph.inputs, given)}, sanitize=trial == 0)
        for name, ref in zip(res.graph.output_names, refs):
            got = outs[name]
            assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, got.shape, ref.dtype, ref.shape)
            assert len(np.unique(ref)) > min(8, ref.size // 4), "degenerate: TFLM computes (nearly) constants"
            np.testing.assert_array_equal(got, ref, err_msg=f"trial {trial}")
    return res


# -- convolutions and dense ----------------------------------------------------------------------
def _weighted(op, x_shape, w_shape, out_shape, opts, per_channel=True, bias="int64", seed=0, zero_bias=False,
              big_bias=False):
    """A one-op int16x8 model: int8 weights (per output channel or per tensor), a bias of the
    given dtype (or None; or all zeros; or beyond int32, big_bias); the scales make the real
    outputs' spread about 4 (RELU6 clamps some) and keep most outputs inside int16."""
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
    if big_bias:            # the bias dominates: the output scale follows it
        bq = rng.integers(-(1 << 36), 1 << 36, channels)
        out_scale = np.float32(np.abs(bq * x_scale * w_scale.astype(np.float64)).max() / 30000)
    if bias is not None:
        b = mb.tensor("b", [channels], bias, data=np.zeros(channels) if zero_bias else bq,
                      scale=x_scale * np.broadcast_to(w_scale, channels),
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
    "conv_bias_beyond_int32": ("CONV_2D", [1, 4, 4, 8], [5, 3, 3, 8], [1, 4, 4, 5], dict(padding="SAME"),
                               dict(big_bias=True)),
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
    "fully_connected_bias_beyond_int32": ("FULLY_CONNECTED", [3, 300], [4, 300], [3, 4], {}, dict(big_bias=True)),
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


# -- elementwise --------------------------------------------------------------------------------
BINARY_CASES = {
    "add": ("ADD", [2, 3, 5], [2, 3, 5], (3e-4, 5e-4, 6e-4), {}),
    "add_broadcast_relu6": ("ADD", [1, 4, 3, 6], [1, 1, 6], (1e-4, 2e-4, 4e-4),
                            dict(fused_activation_function="RELU6")),
    "sub": ("SUB", [3, 7], [3, 7], (5e-4, 1e-4, 7e-4), {}),
    "sub_broadcast_relu": ("SUB", [2, 3, 8], [8], (2e-4, 3e-4, 5e-4), dict(fused_activation_function="RELU")),
    "mul": ("MUL", [4, 9], [4, 9], (1e-3, 2e-3, 0.04), {}),
    "mul_broadcast_relu": ("MUL", [2, 3, 5], [1, 5], (5e-4, 1e-3, 0.01), dict(fused_activation_function="RELU")),
}


def _binary(op, a_shape, b_shape, scales, opts):
    out_shape = np.broadcast_shapes(tuple(a_shape), tuple(b_shape))
    mb = ModelBuilder()
    a = mb.tensor("a", a_shape, "int16", scale=scales[0], zero_point=0)
    b = mb.tensor("b", b_shape, "int16", scale=scales[1], zero_point=0)
    y = mb.tensor("y", out_shape, "int16", scale=scales[2], zero_point=0)
    mb.op(op, [a, b], [y], **opts)
    return mb.finish(inputs=[a, b], outputs=[y])


@tflm
@pytest.mark.parametrize("name", sorted(BINARY_CASES))
def test_int16_add_sub_mul_are_bit_exact_with_tflm(name):
    op, a_shape, b_shape, scales, opts = BINARY_CASES[name]
    _assert_bit_exact(_binary(op, a_shape, b_shape, scales, opts), [a_shape, b_shape],
                      integer_ops=["QMul" if op == "MUL" else "QAdd"])


# -- pooling and data movement (one scale in and out) -------------------------------------------
def _i32(*v):
    return np.array(v, np.int32)


MOVE_CASES = {
    "average_pool_valid": ("AVERAGE_POOL_2D", [[1, 6, 6, 3]], [],
                           dict(filter_width=2, filter_height=2, stride_w=2, stride_h=2, padding="VALID")),
    "average_pool_same_relu": ("AVERAGE_POOL_2D", [[2, 5, 7, 5]], [],
                               dict(filter_width=3, filter_height=3, stride_w=2, stride_h=2, padding="SAME",
                                    fused_activation_function="RELU")),
    "max_pool_same_relu6": ("MAX_POOL_2D", [[1, 7, 5, 3]], [],
                            dict(filter_width=3, filter_height=2, stride_w=2, stride_h=2, padding="SAME",
                                 fused_activation_function="RELU6")),
    "reshape": ("RESHAPE", [[1, 2, 6]], [_i32(3, 4)], dict(new_shape=[3, 4])),
    "concatenation": ("CONCATENATION", [[1, 2, 3], [1, 2, 5]], [], dict(axis=2)),
    "pad": ("PAD", [[1, 3, 3, 2]], [_i32([0, 0], [1, 1], [2, 0], [0, 0])], {}),
    "strided_slice": ("STRIDED_SLICE", [[2, 5, 6]], [_i32(0, 1, 0), _i32(0, 5, 6), _i32(1, 2, 2)],
                      dict(begin_mask=1, end_mask=1)),
    "transpose": ("TRANSPOSE", [[2, 3, 4]], [_i32(2, 0, 1)], {}),
    "split": ("SPLIT", [[2, 6]], [_i32(1)], dict(num_splits=3)),
    "maximum": ("MAXIMUM", [[2, 3, 4], [2, 3, 4]], [], {}),
}


def _same_scale(op, shapes, params, opts, scale=6 / 32767):
    """A one-op int16 model whose inputs and outputs share one scale; the output shapes come
    from the float op on zeros (numpy), so the builder needs no shape rules of its own."""
    mb = ModelBuilder()
    ins = [mb.tensor(f"x{k}", s, "int16", scale=scale, zero_point=0) for k, s in enumerate(shapes)]
    consts = [mb.tensor(f"p{k}", p.shape, "int32", data=p) for k, p in enumerate(params)]
    if op == "SPLIT":
        outs = [mb.tensor(f"y{k}", [2, 2], "int16", scale=scale, zero_point=0) for k in range(3)]
        mb.op(op, consts + ins, outs, **opts)
        return mb.finish(inputs=ins, outputs=outs)
    x = np.zeros(shapes[0], np.float32)
    out_shape = {
        "AVERAGE_POOL_2D": None, "MAX_POOL_2D": None, "RESHAPE": (3, 4), "MAXIMUM": x.shape,
        "CONCATENATION": (1, 2, 8), "PAD": (1, 5, 5, 2), "STRIDED_SLICE": (2, 2, 3), "TRANSPOSE": (4, 2, 3),
    }[op]
    if out_shape is None:       # the pools: TFLite's output size rule
        n, h, w, c = shapes[0]
        kh, kw, sh, sw = opts["filter_height"], opts["filter_width"], opts["stride_h"], opts["stride_w"]
        size = (lambda i, k, s: -(-i // s)) if opts["padding"] == "SAME" else (lambda i, k, s: (i - k) // s + 1)
        out_shape = (n, size(h, kh, sh), size(w, kw, sw), c)
    y = mb.tensor("y", out_shape, "int16", scale=scale, zero_point=0)
    mb.op(op, ins + consts, [y], **opts)
    return mb.finish(inputs=ins, outputs=[y])


@tflm
@pytest.mark.parametrize("name", sorted(MOVE_CASES))
def test_int16_pools_and_data_movement_are_bit_exact_with_tflm(name):
    op, shapes, params, opts = MOVE_CASES[name]
    _assert_bit_exact(_same_scale(op, shapes, params, opts), shapes)


# -- the boundaries: QUANTIZE (from float, requantising between int8 and int16), DEQUANTIZE ----------
@tflm
def test_int16_quantize_requantize_dequantize_are_bit_exact_with_tflm():
    """float -> int16 -> int8 -> int16 -> int16 (another scale) -> float, with float inputs on
    rounding ties and beyond the int16 range (clamped)."""
    import aot
    rng = np.random.default_rng(7)
    s16 = 1 / 8192
    ties = (np.arange(-20, 20) + 0.5) * s16
    x = np.concatenate([rng.uniform(-5, 5, 80), ties, [-4.5, 4.5, 0.0]]).astype(np.float32).reshape(3, 41)
    mb = ModelBuilder()
    xf = mb.tensor("x", x.shape, "float32")
    q1 = mb.tensor("q1", x.shape, "int16", scale=s16, zero_point=0)
    q2 = mb.tensor("q2", x.shape, "int8", scale=0.03, zero_point=-5)
    q3 = mb.tensor("q3", x.shape, "int16", scale=1 / 6000, zero_point=0)
    q4 = mb.tensor("q4", x.shape, "int16", scale=1 / 5000, zero_point=0)
    y = mb.tensor("y", x.shape, "float32")
    mb.op("QUANTIZE", [xf], [q1])
    mb.op("QUANTIZE", [q1], [q2])
    mb.op("QUANTIZE", [q2], [q3])
    mb.op("QUANTIZE", [q1], [q4])
    mb.op("DEQUANTIZE", [q4], [y])
    model = mb.finish(inputs=[xf], outputs=[q1, q2, q3, q4, y])
    refs = run_tflm(model, [x])
    res = aot.compile(model)
    assert {n.op for n in res.graph.nodes} == {"QQuantize", "DequantizeLinear"}
    outs = aot.run(res, {res.graph.inputs[0].name: x}, sanitize=True)
    assert refs[0].min() == I16.min and refs[0].max() == I16.max            # clamped at both ends
    for name, ref in zip(res.graph.output_names, refs):
        assert outs[name].dtype == ref.dtype
        np.testing.assert_array_equal(outs[name], ref, err_msg=name)


# -- a small int16x8 network, on the host and on a Cortex-M4 -----------------------------------------
def _int16_net():
    """int16 input -> CONV_2D (per-channel, RELU6) -> DEPTHWISE_CONV_2D (stride 2) -> TANH ->
    AVERAGE_POOL_2D -> RESHAPE -> FULLY_CONNECTED -> ADD (a constant) -> SOFTMAX -> int16 output."""
    rng = np.random.default_rng(11)
    mb = ModelBuilder()
    act = 12 / 32767                     # every activation: real spread about 4 inside +-12

    def t(name, shape):
        return mb.tensor(name, shape, "int16", scale=act, zero_point=0)

    def weights(name, shape, axis, taps, x_spread=4, x_scale=act):
        spread = np.sqrt(taps) * x_spread * 127 / np.sqrt(3)          # the accumulator's, in weight steps
        w_scale = (4 / spread * rng.uniform(0.5, 1.5, shape[axis])).astype(np.float32)
        w = mb.tensor(name, shape, "int8", data=rng.integers(-127, 128, shape), scale=w_scale,
                      zero_point=np.zeros(shape[axis]), quantized_dimension=axis)
        b = mb.tensor(f"{name}_b", [shape[axis]], "int64", data=rng.integers(-3000, 3000, shape[axis]),
                      scale=np.float32(x_scale) * w_scale, zero_point=np.zeros(shape[axis]))
        return w, b

    x = t("x", [1, 12, 12, 3])
    c1 = t("conv", [1, 12, 12, 6])
    mb.op("CONV_2D", [x, *weights("w1", [6, 3, 3, 3], 0, 27)], [c1], padding="SAME",
          fused_activation_function="RELU6")
    c2 = t("dw", [1, 6, 6, 6])
    mb.op("DEPTHWISE_CONV_2D", [c1, *weights("w2", [1, 3, 3, 6], 3, 9)], [c2], padding="SAME", stride_h=2,
          stride_w=2)
    th = mb.tensor("tanh", [1, 6, 6, 6], "int16", scale=2 ** -15, zero_point=0)
    mb.op("TANH", [c2], [th])
    p = mb.tensor("pool", [1, 3, 3, 6], "int16", scale=2 ** -15, zero_point=0)
    mb.op("AVERAGE_POOL_2D", [th], [p], filter_width=2, filter_height=2, stride_w=2, stride_h=2, padding="SAME")
    r = mb.tensor("flat", [1, 54], "int16", scale=2 ** -15, zero_point=0)
    mb.op("RESHAPE", [p, mb.tensor("shape", [2], "int32", data=_i32(1, 54))], [r], new_shape=[1, 54])
    f = t("fc", [1, 10])
    mb.op("FULLY_CONNECTED", [r, *weights("w3", [10, 54], 0, 54, x_spread=0.5, x_scale=2 ** -15)], [f])
    s = mb.tensor("sum", [1, 10], "int16", scale=act, zero_point=0)
    mb.op("ADD", [f, mb.tensor("offset", [10], "int16", data=rng.integers(-9000, 9000, 10), scale=act,
                               zero_point=0)], [s])
    y = mb.tensor("y", [1, 10], "int16", scale=1 / 32768, zero_point=0)
    mb.op("SOFTMAX", [s], [y])
    return mb.finish(inputs=[x], outputs=[y])


@tflm
def test_int16x8_network_is_bit_exact_with_tflm():
    _assert_bit_exact(_int16_net(), [[1, 12, 12, 3]], trials=5)


# -- what is refused, by name -------------------------------------------------------------------
@pytest.mark.parametrize("op,opts", [("HARD_SWISH", {}), ("PRELU", {})])
def test_int16_kernels_without_support_are_refused_by_name(op, opts):
    import aot
    from aot.errors import AotError
    mb = ModelBuilder()
    x = mb.tensor("x", [2, 4], "int16", scale=1 / 4096, zero_point=0)
    alpha = [mb.tensor("alpha", [4], "int16", data=np.ones(4), scale=0.01, zero_point=0)] if op == "PRELU" else []
    y = mb.tensor("y", [2, 4], "int16", scale=1 / 32768, zero_point=0)
    mb.op(op, [x] + alpha, [y], **opts)
    with pytest.raises(AotError, match=rf"operator 0 \({op}\): the int16 \(int16x8\) kernel of {op} is not supported"):
        aot.compile(mb.finish(inputs=[x], outputs=[y]))


def test_int16x8_models_tflm_would_reject_are_refused_by_name():
    """A non-zero int16 zero point, an int32 bias on a depthwise convolution (TFLM reads it as
    int64), int8 and int16 activations mixed in one arithmetic op."""
    import aot
    from aot.errors import AotError
    mb = ModelBuilder()
    a = mb.tensor("a", [4], "int16", scale=0.01, zero_point=3)
    b = mb.tensor("b", [4], "int16", scale=0.01, zero_point=0)
    y = mb.tensor("y", [4], "int16", scale=0.02, zero_point=0)
    mb.op("ADD", [a, b], [y])
    with pytest.raises(AotError, match=r"operator 0 \(ADD\): tensor 0 'a' has zero point 3; int16 \(int16x8\) "
                                       "activations need zero point 0"):
        aot.compile(mb.finish(inputs=[a, b], outputs=[y]))
    dw = _weighted("DEPTHWISE_CONV_2D", [1, 4, 4, 2], [1, 3, 3, 2], [1, 4, 4, 2], dict(padding="SAME"), bias="int32")
    with pytest.raises(AotError, match=r"operator 0 \(DEPTHWISE_CONV_2D\): tensor 2 'b' is int32; an int16 "
                                       r"\(int16x8\) DEPTHWISE_CONV_2D needs an int64 bias"):
        aot.compile(dw)
    mb = ModelBuilder()
    a = mb.tensor("a", [4], "int16", scale=0.01, zero_point=0)
    b = mb.tensor("b", [4], "int8", scale=0.01, zero_point=0)
    y = mb.tensor("y", [4], "int16", scale=0.02, zero_point=0)
    mb.op("MUL", [a, b], [y])
    with pytest.raises(AotError, match=r"operator 0 \(MUL\): tensor 1 'b' is int8; an int16 \(int16x8\) MUL "
                                       "takes int16 activations only"):
        aot.compile(mb.finish(inputs=[a, b], outputs=[y]))


# -- SOFTMAX ----------------------------------------------------------------------------------------
SOFTMAX_CASES = [((4, 10), 1 / 4096, 1.0), ((2, 3, 17), 1 / 2000, 0.7), ((3, 64), 3e-4, 2.0), ((5, 1000), 1e-4, 1.0),
                 ((2, 7), 1 / 32768, 1.0)]


@tflm
@pytest.mark.parametrize("shape,scale,beta", SOFTMAX_CASES, ids=[f"{c[0]}-{c[1]:.2g}-{c[2]}" for c in SOFTMAX_CASES])
def test_int16_softmax_is_bit_exact_with_tflm(shape, scale, beta):
    mb = ModelBuilder()
    x = mb.tensor("x", shape, "int16", scale=scale, zero_point=0)
    y = mb.tensor("y", shape, "int16", scale=1 / 32768, zero_point=0)
    mb.op("SOFTMAX", [x], [y], beta=beta)
    _assert_bit_exact(mb.finish(inputs=[x], outputs=[y]), [shape], integer_ops=["QSoftmax16"])


MEAN_CASES = {"spatial_keepdims": ([1, 5, 6, 3], _i32(1, 2), True, (1e-3, 4e-4)),
              "last_axis": ([3, 4, 37], _i32(-1), False, (2e-3, 1e-4)),
              "all_but_batch": ([2, 3, 5, 7], _i32(1, 2, 3), False, (5e-4, 2e-5))}


@tflm
@pytest.mark.parametrize("name", sorted(MEAN_CASES))
def test_int16_mean_is_bit_exact_with_tflm(name):
    shape, axes, keep, (s_in, s_out) = MEAN_CASES[name]
    out_shape = np.zeros(shape).mean(axis=tuple(int(a) for a in axes), keepdims=keep).shape
    mb = ModelBuilder()
    x = mb.tensor("x", shape, "int16", scale=s_in, zero_point=0)
    y = mb.tensor("y", out_shape, "int16", scale=s_out, zero_point=0)
    mb.op("MEAN", [x, mb.tensor("axes", axes.shape, "int32", data=axes)], [y], keep_dims=keep)
    _assert_bit_exact(mb.finish(inputs=[x], outputs=[y]), [shape], integer_ops=["QMean"])


def _transpose_conv(x_shape, w_shape, out_shape, opts, bias="int64", per_channel=True, seed=1):
    """An int16x8 TRANSPOSE_CONV: OHWI int8 weights, a bias of the given dtype (or None)."""
    rng = np.random.default_rng(seed)
    o = w_shape[0]
    w_scale = rng.uniform(0.002, 0.02, o if per_channel else 1).astype(np.float32)
    taps = w_shape[1] * w_shape[2] * w_shape[3] / (opts.get("stride_h", 1) * opts.get("stride_w", 1))
    x_scale = np.float32(4 / (np.sqrt(taps) * 32768 * 127 / 3 * float(w_scale.mean())))
    mb = ModelBuilder()
    shape = mb.tensor("shape", [4], "int32", data=np.array(out_shape, np.int32))
    wt = mb.tensor("w", w_shape, "int8", data=rng.integers(-127, 128, w_shape), scale=w_scale,
                   zero_point=np.zeros(w_scale.size), quantized_dimension=0)
    x = mb.tensor("x", x_shape, "int16", scale=x_scale, zero_point=0)
    b = None
    if bias is not None:
        b = mb.tensor("b", [o], bias, data=rng.integers(-3000, 3000, o), scale=x_scale * np.broadcast_to(w_scale, o),
                      zero_point=np.zeros(o))
    y = mb.tensor("y", out_shape, "int16", scale=np.float32(12 / 32767), zero_point=0)
    mb.op("TRANSPOSE_CONV", [shape, wt, x, b], [y], **opts)
    return mb.finish(inputs=[x], outputs=[y])


TRANSPOSE_CASES = {
    "same_s2": ([1, 3, 3, 3], [4, 3, 3, 3], [1, 6, 6, 4], dict(padding="SAME", stride_w=2, stride_h=2), {}),
    "same_odd_int16_bias": ([1, 3, 4, 2], [3, 3, 2, 2], [1, 5, 8, 3], dict(padding="SAME", stride_w=2, stride_h=2),
                            dict(bias="int16")),
    "valid_no_bias_per_tensor": ([2, 3, 3, 5], [3, 2, 3, 5], [2, 4, 5, 3], dict(padding="VALID"),
                                 dict(bias=None, per_channel=False)),
}


@tflm
@pytest.mark.parametrize("name", sorted(TRANSPOSE_CASES))
def test_int16x8_transpose_conv_is_bit_exact_with_tflm(name):
    xs, ws, ys, opts, kw = TRANSPOSE_CASES[name]
    res = _assert_bit_exact(_transpose_conv(xs, ws, ys, opts, **kw), [xs], integer_ops=["QConvTranspose"])
    assert res.graph.nodes[-1].attrs["acc_dtype"] == "int64"


# -- LOGISTIC and TANH: every int16 input, several input scales ---------------------------------------
SIGMOID_SCALES = [2 ** -12, 2 ** -11, 2 ** -12 * 1.0003, 1 / 3000, 1 / 10000, 3e-6, 5e-4, 2 ** -10]


@tflm
@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_int16_logistic_and_tanh_are_bit_exact_with_tflm_on_every_input(op):
    """All 65536 inputs, with power-of-two input scales (TFLite's shift-free path, and a scale
    within its 1e-3 tolerance of one) and others (a 16-bit multiplier): every output equals TFLM's."""
    import aot
    feed = np.arange(I16.min, I16.max + 1, dtype=np.int16).reshape(256, 256)
    for k, scale in enumerate(SIGMOID_SCALES):
        mb = ModelBuilder()
        x = mb.tensor("x", feed.shape, "int16", scale=scale, zero_point=0)
        y = mb.tensor("y", feed.shape, "int16", scale=2 ** -15, zero_point=0)
        mb.op(op, [x], [y])
        model = mb.finish(inputs=[x], outputs=[y])
        (ref,) = run_tflm(model, [feed])
        res = aot.compile(model)
        assert [n.op for n in res.graph.nodes] == ["QSigmoid16"]
        got = aot.run(res, {res.graph.inputs[0].name: feed}, sanitize=k == 0)[res.graph.output_names[0]]
        assert len(np.unique(ref)) > 1000
        np.testing.assert_array_equal(got, ref, err_msg=f"{op} input scale {scale}")


@tflm
@pytest.mark.parametrize("op,scales", [("RELU", (1e-3, 1e-3)), ("RELU", (4e-4, 1e-3)), ("RELU", (1e-3, 3e-4)),
                                       ("RELU6", (1e-4, 1e-4)), ("RELU6", (3e-4, 3e-4))])
def test_int16_relu_and_relu6_are_bit_exact_with_tflm_on_every_input(op, scales):
    feed = np.arange(I16.min, I16.max + 1, dtype=np.int16).reshape(256, 256)
    mb = ModelBuilder()
    x = mb.tensor("x", feed.shape, "int16", scale=scales[0], zero_point=0)
    y = mb.tensor("y", feed.shape, "int16", scale=scales[1], zero_point=0)
    mb.op(op, [x], [y])
    _assert_bit_exact(mb.finish(inputs=[x], outputs=[y]), [feed.shape], trials=1, feeds=[feed])


BATCH_MATMUL_CASES = {"plain": ([2, 3, 40], [2, 40, 5], {}, (3e-4, 2e-4, 0.3)),
                      "broadcast": ([2, 1, 3, 8], [3, 8, 4], {}, (1e-3, 1e-3, 0.01)),
                      "adjoint": ([2, 16, 3], [2, 5, 16], dict(adj_x=True, adj_y=True), (1e-3, 5e-4, 0.02))}


@tflm
@pytest.mark.parametrize("name", sorted(BATCH_MATMUL_CASES))
def test_int16_batch_matmul_is_bit_exact_with_tflm(name):
    """Two int16 activations: products summed in int64 (a row of 40 full-range products passes
    int32's range)."""
    a_shape, b_shape, opts, (sa, sb, so) = BATCH_MATMUL_CASES[name]
    a = np.zeros(a_shape, np.float32)
    b = np.zeros(b_shape, np.float32)
    if opts:
        a, b = a.swapaxes(-1, -2), b.swapaxes(-1, -2)
    out_shape = np.matmul(a, b).shape
    mb = ModelBuilder()
    x = mb.tensor("a", a_shape, "int16", scale=sa, zero_point=0)
    y = mb.tensor("b", b_shape, "int16", scale=sb, zero_point=0)
    z = mb.tensor("y", out_shape, "int16", scale=so, zero_point=0)
    mb.op("BATCH_MATMUL", [x, y], [z], **opts)
    res = _assert_bit_exact(mb.finish(inputs=[x, y], outputs=[z]), [a_shape, b_shape])
    assert [n.attrs["acc_dtype"] for n in res.graph.nodes if n.op == "QBatchMatMul"] == ["int64"]


@pytest.mark.parametrize("cc,extra", [("gcc", []), ("clang", []),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mthumb"])])
def test_int16x8_generated_c_is_warning_free(tmp_path, cc, extra):
    """The int16x8 network's C (int64 accumulators, the int16 softmax and tanh) compiles under
    -std=c99 -Wall -Wextra -Werror -pedantic with gcc, clang and arm-none-eabi-gcc (-O2)."""
    import io
    import subprocess
    import tarfile

    import aot
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed")
    with tarfile.open(fileobj=io.BytesIO(aot.compile(_int16_net(), target="c -mcpu=cortex-m4").tar)) as tar:
        tar.extractall(tmp_path, filter="data")
    src = tmp_path / "codegen" / "host" / "src"
    incs = ["-I", str(tmp_path / "codegen" / "host" / "include"), "-I", str(tmp_path / "runtime" / "include")]
    sources = sorted(src.iterdir())
    assert any(c.name.endswith("lib1.c") for c in sources), sources              # the kernels
    for c in sources:
        r = subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2", *extra, *incs, "-c",
                            str(c), "-o", str(tmp_path / (c.name + ".o"))], capture_output=True, text=True)
        assert r.returncode == 0 and not r.stderr, (c.name, r.stderr)


@tflm
@pytest.mark.parametrize("alpha,scales", [(0.2, (1e-3, 1e-3)), (0.01, (4e-4, 1e-3)), (1.7, (1e-3, 6e-4)),
                                          (-0.3, (1e-3, 1e-3))])
def test_int16_leaky_relu_is_bit_exact_with_tflm_on_every_input(alpha, scales):
    """Every int16 input; alphas below and above 1 and a negative one (its sign applied after the
    rescale)."""
    feed = np.arange(I16.min, I16.max + 1, dtype=np.int16).reshape(256, 256)
    mb = ModelBuilder()
    x = mb.tensor("x", feed.shape, "int16", scale=scales[0], zero_point=0)
    y = mb.tensor("y", feed.shape, "int16", scale=scales[1], zero_point=0)
    mb.op("LEAKY_RELU", [x], [y], alpha=alpha)
    _assert_bit_exact(mb.finish(inputs=[x], outputs=[y]), [feed.shape], trials=1, integer_ops=["QLeakyRelu"],
                      feeds=[feed])
