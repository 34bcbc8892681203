"""onnxruntime's QOperator models of MLPerf Tiny networks (tests/host/test_onnx_qoperator.py) end to end."""
import numpy as np
import onnxruntime as ort
import pytest

import aot

from test_onnx_qoperator import _ort_qoperator  # noqa: F401


@pytest.mark.slow
def test_resnet_qoperator_end_to_end(tmp_path):
    """ResNet-8 (MLPerf Tiny, onnxruntime-quantised QDQ) in onnxruntime's own QOperator form:
    QLinearConv, QLinearMatMul (per-column weight scales), com.microsoft QLinearAdd,
    QLinearAveragePool and QLinearSoftmax, and QDQ pairs left around float ops. The output (the
    dequantised int8 softmax) must match onnxruntime running the same file to one output step
    (a QLinearAdd tie, see test_qlinear_add, could move it by one); it matched exactly on every
    input tried."""
    import onnx
    path = _ort_qoperator("image_classification/pretrainedResnet_ortq_int8_qdq.onnx", tmp_path)
    model = onnx.load(path)
    contrib = {n.op_type for n in model.graph.node if n.domain == "com.microsoft"}
    assert {"QLinearAdd", "QLinearAveragePool", "QLinearSoftmax"} <= contrib, contrib
    res = aot.compile(path)
    kernels = {n.op for n in res.graph.nodes}
    assert {"QLinearBinary", "QLinearSoftmax"} <= kernels, kernels
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x, y = sess.get_inputs()[0], sess.get_outputs()[0]
    step = 1.0 / 256
    rng = np.random.default_rng(0)
    exact = 0
    for trial in range(5):
        feed = rng.random(x.shape).astype(np.float32)
        want = sess.run(None, {x.name: feed})[0]
        got = aot.run(res, {x.name: feed}, sanitize=trial == 0)[y.name]
        assert np.abs(got.astype(np.float64) - want).max() <= step * 1.001
        exact += bool(np.array_equal(got, want))
    assert exact >= 4


@pytest.mark.slow
def test_anomaly_qoperator_qgemm_refused_by_name(tmp_path):
    """AD01 in QOperator form uses com.microsoft QGemm, which is not supported: refused by name."""
    path = _ort_qoperator("anomaly_detection/ad01_int8_qdq.onnx", tmp_path)
    with pytest.raises(aot.errors.UnsupportedError, match="com.microsoft::QGemm"):
        aot.compile(path)
