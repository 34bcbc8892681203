"""The MLPerf Tiny int8 models with their staged in-place convs (tests/host/test_inplace_conv.py): the
workspace is exact under ASan and the outputs match TFLite Micro."""
import os

import numpy as np
import pytest

from conftest import is_staged, SHARED
from test_memory import _run_with_workspace_bytes


@pytest.mark.slow
@pytest.mark.parametrize("rel,staged,slices", [("keyword_spotting/kws_ref_model.tflite", 8, 0),
                                                ("visual_wake_words/vww_96_int8.tflite", 2, 2)])
def test_int8_workspace_is_exact_with_staged_convs(rel, staged, slices):
    """NHWC: the depthwise planes are strided, the pointwise pixels contiguous. Only the kernels
    at the peak are staged (a staged kernel loses the target's register tiles):
    every layer of KWS, whose layers are all the same size; in VWW the first widening pointwise
    conv, holding its input at the end of its output, and the depthwise conv before it."""
    import aot
    path = os.path.join(SHARED, "models", "mlperf_tiny", rel)
    if not os.path.exists(path):
        pytest.skip("MLPerf Tiny models not present")
    res = aot.compile(path)
    assert sum(1 for c in res.plan.calls if is_staged(c)) == staged
    assert sum(1 for r in res.plan.tensors if r.get("slice_of")) == slices
    (_, name, t), = res.plan.inputs
    feeds = {name: np.random.default_rng(0).integers(-128, 128, t.shape).astype(np.int8)}
    size = res.plan.workspace_size
    rc, err = _run_with_workspace_bytes(res.tar, feeds, size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, size - 1)
    assert rc != 0 and "global-buffer-overflow" in err
