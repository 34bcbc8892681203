"""The MLPerf Tiny .tflite models (tests/host/test_tflite_frontend.py) against TFLite Micro: float to float
tolerance, int8 bit for bit; a hybrid model against the same model in ONNX."""
import os

import numpy as np
import pytest

from conftest import ort_run

from tflm_oracle import run_tflm

from test_tflite_frontend import FLOAT_MODELS, INT8_MODELS, MODELS, _compile_run, _int8_cases, _read, tflm  # noqa: F401


@tflm
@pytest.mark.slow
@pytest.mark.parametrize("rel", FLOAT_MODELS)
def test_mlperf_tiny_float_tflite_matches_tflm(rel):
    data = _read(rel)
    rng = np.random.default_rng(3)
    import aot
    res = aot.compile(data)
    assert not any(n.op == "Transpose" for n in res.graph.nodes)         # NHWC kept: no layout shuffles
    x = res.graph.inputs[0]
    for trial in range(3):
        feed = rng.standard_normal(x.type.shape).astype(np.float32)
        if "vww" in rel:
            feed = rng.random(x.type.shape, dtype=np.float32)              # images in [0, 1]
        got = aot.run(res, {x.name: feed})[res.graph.output_names[0]]
        (ref,) = run_tflm(data, [feed])
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(ref).max())))


@pytest.mark.slow
def test_hybrid_tflite_matches_the_same_model_in_onnx():
    """kws_ref_model_float32.tflite has int8 conv weights with float activations (TFLM refuses
    hybrid models): the weights are dequantised at import, and the result matches onnxruntime on
    the ONNX export of the same hybrid model."""
    import onnx
    data = _read("keyword_spotting/kws_ref_model_float32.tflite")
    x = np.random.default_rng(4).standard_normal((1, 49, 10, 1)).astype(np.float32)
    _, (got,) = _compile_run(data, [x])
    m = onnx.load(os.path.join(MODELS, "keyword_spotting/kws_ref_model_float32.onnx"))
    (ref,) = ort_run(m, {m.graph.input[0].name: x}).values()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


@tflm
@pytest.mark.slow
@pytest.mark.parametrize("rel", INT8_MODELS)
def test_mlperf_tiny_int8_tflite_is_bit_exact_with_tflm(rel):
    """100 random inputs and the real ones, on the host under ASan and UBSan: 0 LSB."""
    import aot
    res = aot.compile(_read(rel))
    x = res.graph.inputs[0]
    assert x.type.dtype == "int8" and all(n.op in ("QConv", "QDense", "QAdd", "QAvgPool", "QSoftmax", "Reshape")
                                          for n in res.graph.nodes), sorted({n.op for n in res.graph.nodes})
    out_name = res.graph.output_names[0]
    for k, (feed, ref) in enumerate(_int8_cases(rel, x)):
        got = aot.run(res, {x.name: feed}, sanitize=True)[out_name]
        assert got.dtype == ref.dtype == np.int8
        np.testing.assert_array_equal(got, ref, err_msg=f"input {k}")


@tflm
@pytest.mark.slow
@pytest.mark.parametrize("rel", INT8_MODELS)
def test_mlperf_tiny_int8_patched_is_bit_exact_with_tflm(rel):
    """Patch-based execution (--patch auto; forced where auto keeps layer by layer): every tenth
    of the same inputs, on the host under ASan and UBSan, 0 LSB."""
    import aot
    from mlf import read_mlf
    res = aot.compile(_read(rel), patch="auto")
    if read_mlf(res.tar).aot["execution"]["patch"] is None:
        res = aot.compile(_read(rel), patch="force")
    if read_mlf(res.tar).aot["execution"]["patch"] is None:
        pytest.skip("no stage to cut (AD's dense layers)")
    x = res.graph.inputs[0]
    for k, (feed, ref) in enumerate(_int8_cases(rel, x)[::10]):
        got = aot.run(res, {x.name: feed}, sanitize=True)[res.graph.output_names[0]]
        np.testing.assert_array_equal(got, ref, err_msg=f"input {k}")


@tflm
@pytest.mark.slow
@pytest.mark.parametrize("rel", [r for r in FLOAT_MODELS if "anomaly" not in r])    # AD: no stage
def test_mlperf_tiny_float_patched_matches_tflm(rel):
    import aot
    from mlf import read_mlf
    data = _read(rel)
    res = aot.compile(data, patch="force")
    assert read_mlf(res.tar).aot["execution"]["patch"] is not None
    x = res.graph.inputs[0]
    feed = np.random.default_rng(5).random(x.type.shape, dtype=np.float32)
    got = aot.run(res, {x.name: feed})[res.graph.output_names[0]]
    (ref,) = run_tflm(data, [feed])
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(ref).max())))
