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


@pytest.mark.slow
@pytest.mark.parametrize("rel", [
    "anomaly_detection/ad01_int8_qdq.onnx",
    "keyword_spotting/kws_ref_model_int8_qdq.onnx",
    "image_classification/pretrainedResnet_ortq_int8_qdq.onnx",
    "image_classification/pretrainedResnet_quant_int8_qdq.onnx",
    "visual_wake_words/vww_96_int8_qdq.onnx",
])
def test_mlperf_tiny_qdq(rel):
    import aot
    path = _mlperf(rel)
    model = onnx.load(path)
    x = model.graph.input[0]
    if x.type.tensor_type.elem_type == onnx.TensorProto.INT8:
        shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
        feeds = {x.name: np.random.default_rng(0).integers(-128, 128, shape).astype(np.int8)}
    else:
        feeds = _inputs_for(path, model)
    ref = ort_run(model, feeds)
    out = aot.run(aot.compile(path), feeds, sanitize=True)
    for k, r in ref.items():
        assert out[k].dtype == r.dtype and out[k].shape == r.shape, k
        # one quantization step: onnxruntime requantizes in fixed point, aot in float, so a value
        # on a rounding boundary may land on either side
        step = 1.0 if r.dtype.kind in "iu" else _dequantize_step(model, k)
        np.testing.assert_allclose(out[k].astype(np.float64), r.astype(np.float64), rtol=0, atol=step * 1.0001, err_msg=k)
        assert int(np.argmax(out[k])) == int(np.argmax(r)), k
