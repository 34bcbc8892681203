"""The one dtype table (aot/dtypes.py) against numpy, onnx and the C headers' own idea of each type."""
import ml_dtypes
import numpy as np
import pytest
from onnx import helper

from aot import dtypes


@pytest.mark.parametrize("d", dtypes.TABLE, ids=lambda d: d.name)
def test_row_agrees_with_numpy_and_onnx(d):
    np_dtype = np.dtype(ml_dtypes.bfloat16) if d.name == "bfloat16" else np.dtype(d.name)
    assert np_dtype.itemsize == d.bytes
    assert helper.np_dtype_to_tensor_dtype(np_dtype) == d.onnx
    kind = {"f": "float", "V": "float", "i": "int", "u": "uint", "b": "bool"}[np_dtype.kind]
    assert kind == d.kind
    if d.kind != "float" or d.bytes > 2:
        # the C type holds the value itself (16-bit floats are stored as their bits)
        c_bytes = {"float": 4, "double": 8, "uint8_t": 1, "int8_t": 1, "int16_t": 2, "uint16_t": 2,
                   "int32_t": 4, "uint32_t": 4, "int64_t": 8, "uint64_t": 8}[d.c]
        assert c_bytes == d.bytes


def test_views_are_of_the_one_table():
    from aot.ops import registry
    from aot.tir import expr
    from codegen_c import c_renderer
    from mlf import schema
    assert registry.ONNX_DTYPES is dtypes.ONNX_DTYPES and registry.ALL is dtypes.ALL
    assert expr.FLOAT_TYPES is dtypes.FLOATS
    assert c_renderer.C_TYPES is dtypes.C_TYPES
    assert schema.DTYPE_BYTES is dtypes.BYTES
    assert len({d.name for d in dtypes.TABLE}) == len({d.onnx for d in dtypes.TABLE}) == len(dtypes.TABLE)
