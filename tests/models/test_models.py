"""Whole models: the ONNX light models inside the onnx wheel and the MLPerf Tiny float and int8 QDQ
models, each built and run once with ASan+UBSan and compared with onnxruntime."""
import glob
import os

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from conftest import SHARED, ort_run

LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
LIGHT = sorted(os.path.basename(p)[len("light_"):-len(".onnx")] for p in glob.glob(os.path.join(LIGHT_DIR, "light_*.onnx")))
MLPERF = os.path.join(SHARED, "models", "mlperf_tiny")


def runner_input(model):
    """The input onnx's own backend test runner generates for light models (arange / n)."""
    inits = {i.name for i in model.graph.initializer}
    x = [i for i in model.graph.input if i.name not in inits][0]
    shape = [d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim]
    n = int(np.prod(shape))
    return x.name, (np.arange(n).reshape(shape) / n).astype(np.float32)


def with_intermediates(model):
    """Also expose the pre-softmax logits and a mid-network tensor as outputs: the light models'
    weights are constant fills, so their softmax outputs are uniform and prove little alone."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    nodes = list(m.graph.node)
    extra = []
    soft = [n for n in nodes if n.op_type == "Softmax"]
    if soft:
        extra.append(soft[-1].input[0])
    convs = [n for n in nodes if n.op_type in ("Conv", "Concat", "Sum", "Add")]
    if convs:
        extra.append(convs[len(convs) // 2].output[0])
    names = {o.name for o in m.graph.output}
    for e in extra:
        if e not in names:
            m.graph.output.append(helper.make_empty_tensor_value_info(e))
    return m, extra


@pytest.mark.slow
@pytest.mark.parametrize("name", LIGHT)
def test_light_model(name):
    import aot
    path = os.path.join(LIGHT_DIR, f"light_{name}.onnx")
    model = onnx.load(path)
    model, extra = with_intermediates(model)
    xname, x = runner_input(model)
    res = aot.compile(model.SerializeToString())
    out = aot.run(res, {xname: x}, sanitize=True)   # the one run of each light model is under ASan+UBSan
    expected = numpy_helper.to_array(onnx.load_tensor(os.path.join(LIGHT_DIR, f"light_{name}_output_0.pb")))
    final = model.graph.output[0].name
    np.testing.assert_allclose(out[final], expected, rtol=1e-3, atol=1e-7)   # the suite's default tolerances
    ref = ort_run(model, {xname: x})
    for e in extra:
        scale = max(float(np.abs(ref[e]).max()), 1e-6)
        np.testing.assert_allclose(out[e], ref[e], rtol=1e-3, atol=1e-4 * scale, err_msg=e)


def _mlperf(rel):
    p = os.path.join(MLPERF, rel)
    if not os.path.exists(p):
        pytest.skip(f"{p} not present")
    return p


def _inputs_for(path, model):
    rng = np.random.default_rng(0)
    x = model.graph.input[0]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    if "keyword_spotting" in path:
        q = np.load(os.path.join(MLPERF, "keyword_spotting", "inputs", "kws_input_int8_1x49x10x1.npy"))
        return {x.name: ((q.astype(np.float32) - 83) * np.float32(0.584702909)).reshape(shape)}
    if "anomaly_detection" in path:
        raw = np.fromfile(os.path.join(MLPERF, "anomaly_detection", "inputs", "normal_id_01_00000000_hist_librosa.bin"),
                          dtype="<f4")
        return {x.name: raw[:640].reshape(shape).astype(np.float32)}
    lo, hi = (0.0, 255.0) if "image_classification" in path else (0.0, 1.0)
    return {x.name: rng.uniform(lo, hi, shape).astype(np.float32)}


@pytest.mark.slow
@pytest.mark.parametrize("rel", [
    "anomaly_detection/ad01_fp32.onnx",
    "keyword_spotting/kws_ref_model_float32.onnx",
    "keyword_spotting/kws_ref_model_fp32_savedmodel.onnx",
    "image_classification/pretrainedResnet.onnx",
    "visual_wake_words/vww_96_float.onnx",
])
def test_mlperf_tiny_float(rel):
    import aot
    path = _mlperf(rel)
    model = onnx.load(path)
    feeds = _inputs_for(path, model)
    ref = ort_run(model, feeds)
    out = aot.run(aot.compile(path), feeds, sanitize=True)
    for k, r in ref.items():
        np.testing.assert_allclose(out[k], r, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(r).max())), err_msg=k)
    if "keyword_spotting" in rel:
        assert int(np.argmax(out[model.graph.output[0].name])) == 5   # the README's known class


def _dequantize_step(model, name):
    """The scale of the DequantizeLinear that produces `name` (0 if another op does)."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for n in model.graph.node:
        if name in n.output and n.op_type == "DequantizeLinear":
            return float(np.max(inits[n.input[1]]))
    return 0.0


def _u8s8_qdq(rel, tmp_path):
    """The float model quantised by onnxruntime's own tool (onnxruntime.quantization, QDQ format,
    uint8 activations and per-channel int8 weights: its u8s8 default for CNNs), calibrated on 8
    seeded random inputs."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    src = os.path.join(MLPERF, rel)
    x = onnx.load(src).graph.input[0]
    shape = [d.dim_value or 1 for d in x.type.tensor_type.shape.dim]
    rng = np.random.default_rng(1)
    feeds = iter([{x.name: rng.random(shape).astype(np.float32)} for _ in range(8)])

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(feeds, None)
    out = str(tmp_path / "u8s8.onnx")
    quantize_static(src, out, Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("rel", [
    "anomaly_detection/ad01_int8_qdq.onnx",
    "keyword_spotting/kws_ref_model_int8_qdq.onnx",
    "image_classification/pretrainedResnet_ortq_int8_qdq.onnx",
    "image_classification/pretrainedResnet_quant_int8_qdq.onnx",
    "visual_wake_words/vww_96_int8_qdq.onnx",
    "u8s8:anomaly_detection/ad01_fp32.onnx",
    "u8s8:keyword_spotting/kws_ref_model_float32.onnx",
    "u8s8:image_classification/pretrainedResnet.onnx",
    "u8s8:visual_wake_words/vww_96_float.onnx",
])
def test_mlperf_tiny_qdq(rel, tmp_path):
    """The QDQ models run integer kernels end to end (aot/passes/qdq.py) and stay within 1 LSB of
    onnxruntime on 100 random inputs: the shared int8 (s8s8) exports, and u8s8 models that
    onnxruntime's quantizer makes from the float models. onnxruntime runs with its graph
    optimisations off, so it computes the QDQ graph as written (float ops between dequantise and
    quantise): with them on, its fused u8s8 QLinearConv saturates 16-bit pair sums on x86 CPUs
    without VNNI (a known MLAS limitation) and is up to 21 LSB off the exact result on KWS.

    A value differs by exactly 1 where the real result lies within float rounding of a half step:
    onnxruntime sums dequantised products in float32, the kernels sum the integers exactly. In
    ResNet-8 (pretrainedResnet_quant) such a tie at the first convolution, where onnxruntime's
    float32 sum lands on the wrong side of the half step (-97.5000019 exactly, onnxruntime gives
    -97), is carried through three residual blocks and reaches a logit as 2 steps on 1 input of
    100. In onnxruntime's u8s8 models, whose activations have finer scales, near-ties come at most
    layers of ResNet-8 and of VWW's 27 convolutions, and reach the logits as up to 3 steps on a few
    inputs. The test allows that there and counts it (issue 13's 1-LSB line, blocked: meeting it means
    reproducing MLAS's float summation order instead of integer kernels).

    A model whose output is a float softmax is compared on the integer logits the softmax reads:
    the softmax itself is onnxruntime's float one, and one step in a logit can move its quantised
    output by more than one step."""
    import aot
    import onnxruntime as ort
    from onnx import helper
    path = _u8s8_qdq(rel[len("u8s8:"):], tmp_path) if rel.startswith("u8s8:") else _mlperf(rel)
    model = onnx.load(path)
    # the integer logits a final softmax reads (through its DequantizeLinear) are an output too
    sm = next((n for n in model.graph.node if n.op_type == "Softmax"), None)
    logits = None
    if sm is not None:
        dq = next(n for n in model.graph.node if sm.input[0] in n.output)
        assert dq.op_type == "DequantizeLinear"
        logits = dq.input[0]
        zp = next(i for i in model.graph.initializer if i.name == dq.input[2])
        model.graph.output.append(helper.make_tensor_value_info(logits, zp.data_type, None))
    res = aot.compile(model.SerializeToString())
    kernels = {n.op for n in res.graph.nodes} - {"Reshape", "Transpose", "QuantizeLinear", "DequantizeLinear",
                                                  "Softmax"}
    assert kernels <= {"QConv", "QDense", "QAdd", "QAvgPool"}, kernels        # integer kernels (and float softmax)
    assert sum(n.op in ("QuantizeLinear", "DequantizeLinear") for n in res.graph.nodes) <= 2 + 2 * (sm is not None)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts)
    x = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in x.shape]
    rng = np.random.default_rng(0)
    ones = twos = total = 0
    softmax_worst = 0.0
    # (most steps, share of values off) allowed: a tie is carried on through the layers after it
    # (see above); in the u8s8 models a conv output within 1e-5 of a half step comes about 0.3
    # times per 16k outputs, so most inputs meet one somewhere
    allowed, share = {"image_classification/pretrainedResnet_quant_int8_qdq.onnx": (2, 0.05),
                      "u8s8:image_classification/pretrainedResnet.onnx": (3, 0.15),
                      "u8s8:visual_wake_words/vww_96_float.onnx": (3, 0.15)}.get(rel, (1, 0.05))
    for trial in range(100):
        feed = rng.integers(-128, 128, shape).astype(np.int8) if x.type == "tensor(int8)" else \
            rng.random(shape).astype(np.float32)
        refs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {x.name: feed})))
        out = aot.run(res, {x.name: feed}, sanitize=trial == 0)
        for k, r in refs.items():
            if k != logits and sm is not None:
                softmax_worst = max(softmax_worst, float(np.abs(out[k].astype(np.float64) - r).max()))
                continue
            d = np.abs(out[k].astype(np.int64) - r.astype(np.int64)) if r.dtype.kind in "iu" else \
                np.rint(np.abs(out[k].astype(np.float64) - r) / _dequantize_step(model, k)).astype(np.int64)
            assert d.max() <= allowed, (k, trial, int(d.max()))
            ones, total = ones + int((d == 1).sum()), total + d.size
            twos += int((d >= 2).sum())
    assert ones + twos <= share * total, (ones, twos, total)
    print(f"{rel}: {ones} of {total} values differ by 1 step from onnxruntime, {twos} by 2 or 3; after the float "
          f"softmax, at most {softmax_worst:g}")
