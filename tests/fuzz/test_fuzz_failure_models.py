"""The fuzz tier: every model of ../shared/fuzz_failures/ (what the fuzzer found, before shrinking), compiled,
run under ASan/UBSan and compared with onnxruntime or, where onnxruntime is the one that is off,
onnx.reference (the ORACLE table, and a hand-built reproducer per cause: tests/host/test_fuzz_regressions.py)."""
import os

import numpy as np
import pytest

from test_fuzz_regressions import MODELS, ORACLE, _id, compare, expected  # noqa: F401


@pytest.mark.skipif(not MODELS, reason="shared/fuzz_failures is not available")
@pytest.mark.parametrize("path", [pytest.param(p, id=_id(p), marks=[pytest.mark.slow] if "minimal" not in p else [])
                                  for p in MODELS])
def test_fuzz_model(path):
    import onnx

    import aot
    model = onnx.load(path)
    z = np.load(path[:-5] + ".npz")
    feeds = {k: z[k] for k in z.files}
    oracle = ORACLE.get(os.path.basename(path)[:-5], (None, None))[0]
    ref = expected(model, feeds, oracle)
    out = aot.run(aot.compile(model.SerializeToString()), feeds, sanitize=True)
    compare(out, ref)
