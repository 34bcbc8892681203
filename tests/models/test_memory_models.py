"""Memory planning on whole models (tests/host/test_memory.py): the workspace is exact for ONNX light models
and MLPerf Tiny models, and workspace I/O works on MLPerf Tiny models."""
import numpy as np

import pytest

from test_memory import _check_exact, _check_exact_io, _light, _mlperf  # noqa: F401


@pytest.mark.slow
@pytest.mark.parametrize("name", ["inception_v1", "densenet121", "squeezenet"])
def test_workspace_is_exact_light_models(name):
    m, feeds = _light(name)
    _check_exact(m.SerializeToString(), feeds)


@pytest.mark.slow
@pytest.mark.parametrize("rel", ["keyword_spotting/kws_ref_model_fp32_savedmodel.onnx",
                                 "image_classification/pretrainedResnet.onnx", "visual_wake_words/vww_96_float.onnx"])
def test_workspace_is_exact_mlperf(rel):
    import aot
    from conftest import ort_run
    m, feeds = _mlperf(rel, lambda rng, shape: rng.standard_normal(shape))
    res = _check_exact(m.SerializeToString(), feeds)
    out = aot.run(res, feeds)
    for k, r in ort_run(m, feeds).items():
        np.testing.assert_allclose(out[k], r, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(r).max())))


@pytest.mark.slow
@pytest.mark.parametrize("rel", ["anomaly_detection/ad01_fp32.onnx", "visual_wake_words/vww_96_float.onnx"])
def test_workspace_io_mlperf(rel):
    import aot
    from conftest import ort_run
    m, feeds = _mlperf(rel, lambda rng, shape: rng.uniform(0, 1, shape))
    res = _check_exact_io(m.SerializeToString(), feeds)
    out = aot.run(res, feeds)
    for k, r in ort_run(m, feeds).items():
        np.testing.assert_allclose(out[k], r, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(r).max())))
