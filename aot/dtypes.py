"""The one dtype table: every element type the compiler knows, with what each layer needs of it
(the importer its ONNX code, the renderer its C type and helper tag, the MLF schema its size).
The tuples and maps below are views of it, in its order."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    name: str        # numpy's name, used throughout the IRs and in metadata.json
    bytes: int
    kind: str        # "float", "int", "uint" or "bool"
    c: str           # the C type a buffer of it has (16-bit floats are stored as their bits)
    tag: str         # suffix of the C helper functions specialised per type (aot_min_f32, ...)
    onnx: int        # TensorProto.DataType


TABLE = (
    DType("float32", 4, "float", "float", "f32", 1),
    DType("float64", 8, "float", "double", "f64", 11),
    DType("float16", 2, "float", "uint16_t", "f16", 10),
    DType("bfloat16", 2, "float", "uint16_t", "bf16", 16),
    DType("int8", 1, "int", "int8_t", "i8", 3),
    DType("uint8", 1, "uint", "uint8_t", "u8", 2),
    DType("int16", 2, "int", "int16_t", "i16", 5),
    DType("uint16", 2, "uint", "uint16_t", "u16", 4),
    DType("int32", 4, "int", "int32_t", "i32", 6),
    DType("uint32", 4, "uint", "uint32_t", "u32", 12),
    DType("int64", 8, "int", "int64_t", "i64", 7),
    DType("uint64", 8, "uint", "uint64_t", "u64", 13),
    DType("bool", 1, "bool", "uint8_t", "b", 9),
)
BY_NAME = {d.name: d for d in TABLE}

FLOATS = tuple(d.name for d in TABLE if d.kind == "float")
INTS = tuple(d.name for d in TABLE if d.kind in ("int", "uint"))
NUMERIC = FLOATS + INTS
ALL = tuple(d.name for d in TABLE)

BYTES = {d.name: d.bytes for d in TABLE}
C_TYPES = {d.name: d.c for d in TABLE}
C_TAGS = {d.name: d.tag for d in TABLE}
ONNX_DTYPES = {d.onnx: d.name for d in sorted(TABLE, key=lambda d: d.onnx)}


def quant_literals(scale, zero_point):
    """The header's SCALE and ZERO_POINT macro texts: a float literal that reads back as the
    model's float32 scale, and the zero point (parenthesised when negative)."""
    import numpy as np
    zp = int(zero_point)
    return f"{float(np.float32(scale)):.9g}f", f"({zp})" if zp < 0 else str(zp)
