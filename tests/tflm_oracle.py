"""TensorFlow Lite Micro (the `tflite-micro` Python wheel) as the oracle for .tflite models.

    if tflm_available(): outputs = run_tflm(model_bytes, [x0, x1])

With AOT_REQUIRE_TFLM=1 (meant for CI) a missing wheel is a failure, not a skip:
tflm_available() raises instead of returning False.

Only feed well-formed models to TFLM: on some malformed ones it aborts the whole process.
"""
import os

import numpy as np
from tflite.Model import Model

from tflite_build import DTYPES

_ITEMSIZE = {ttype: np.dtype(np_dtype).itemsize for ttype, np_dtype in DTYPES.values()}


def tflm_available():
    """Whether the TFLM wheel imports; raises if it does not and AOT_REQUIRE_TFLM=1."""
    try:
        from tflite_micro.python.tflite_micro import runtime  # noqa: F401
        return True
    except ImportError as e:
        if os.environ.get("AOT_REQUIRE_TFLM") == "1":
            raise RuntimeError(f"AOT_REQUIRE_TFLM=1 but the tflite-micro wheel is missing ({e})") from e
        return False


def _arena_size(model):
    # The wheel's default (10x the model size) is too small for models that are mostly
    # activations; all tensors at once, twice over, plus room for TFLM's own bookkeeping (which
    # grows with the operators: a sweep's model holds a few hundred).
    sg = model.Subgraphs(0)
    total = 0
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        total += int(np.prod(t.ShapeAsNumpy() if t.ShapeLength() else [1])) * _ITEMSIZE.get(t.Type(), 8)
    return 64 * 1024 + 2 * total + 2048 * sg.OperatorsLength()


def run_tflm(model_bytes, inputs, arena_size=None):
    """Run subgraph 0 once on the given inputs (in the model's input order) and return
    copies of all outputs. A fresh interpreter per call: no state carries between calls."""
    from tflite_micro.python.tflite_micro import runtime
    model = Model.GetRootAs(model_bytes, 0)
    sg = model.Subgraphs(0)
    if len(inputs) != sg.InputsLength():
        raise ValueError(f"model has {sg.InputsLength()} inputs, got {len(inputs)}")
    it = runtime.Interpreter.from_bytes(bytes(model_bytes), arena_size=arena_size or _arena_size(model))
    for i, x in enumerate(inputs):
        it.set_input(np.ascontiguousarray(x), i)
    it.invoke()
    return [np.array(it.get_output(i), copy=True) for i in range(sg.OutputsLength())]
