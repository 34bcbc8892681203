"""Frontends: a model file -> the one graph IR (aot/ir/graph.py). The format is told by content."""
from __future__ import annotations

import dataclasses
import os

from ..errors import AotError


def read_tflite(model):
    """The bytes of a TFLite model given as a path or bytes, or None when it is not one."""
    from .tflite_import import is_tflite
    if isinstance(model, (bytes, bytearray)):
        return bytes(model) if is_tflite(model) else None
    if isinstance(model, (str, os.PathLike)):
        try:
            with open(model, "rb") as f:
                head = f.read(8)
                if not is_tflite(head) and not str(model).endswith(".tflite"):
                    return None
                return head + f.read()
        except OSError as e:
            raise AotError(f"cannot read model '{model}': {e.strerror}")
    return None


def import_model(model, input_shapes=None, name="default", log=None, bind_inputs=None):
    """The graph of an ONNX model (path, bytes or ModelProto) or a TFLite model (path or bytes);
    a graph already built (aot.relay) passes through, renamed to the module."""
    from ..ir.graph import Graph
    if isinstance(model, Graph):
        if input_shapes or bind_inputs:
            raise AotError("--input-shape and --bind-input are for ONNX models: a built graph's shapes are static")
        return dataclasses.replace(model, name=name)
    data = read_tflite(model)
    if data is None:
        from .onnx_import import import_onnx
        return import_onnx(model, input_shapes, name=name, log=log, bind_inputs=bind_inputs)
    if input_shapes or bind_inputs:
        raise AotError("--input-shape and --bind-input are for ONNX models: a TFLite model's shapes are static")
    from .tflite_import import import_tflite
    return import_tflite(data, name=name, log=log)
