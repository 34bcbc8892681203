"""tvm.relay.frontend: from_onnx and from_tflite -> (IRModule, params). The model is imported once
here, by the same importer `aot compile` uses, so that a shape or dtype the call names is checked
now; the module keeps the model itself, and relay.build compiles it as `aot compile` would (the
same MLF). The weights stay constants of the model, so params is empty: relay.build takes it
as TVM's does, and there is nothing in it to bind."""
from __future__ import annotations

import numpy as np

from ...errors import AotError
from ..expr import GraphFunction, IRModule


def _tflite_bytes(model):
    """The flatbuffer of a TFLite model given as bytes, a path, or the `tflite` package's Model."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    tab = getattr(model, "_tab", None)           # a flatbuffers table: the `tflite` package's Model
    if tab is not None and hasattr(tab, "Bytes"):
        buf = bytes(tab.Bytes)
        return buf
    if isinstance(model, str):
        try:
            with open(model, "rb") as f:
                return f.read()
        except OSError as e:
            raise AotError(f"from_tflite: cannot read '{model}': {e.strerror}")
    raise AotError(f"from_tflite takes a tflite.Model (tflite.Model.GetRootAsModel(buf, 0)), the model's bytes "
                   f"or its path, not {type(model).__name__}")


def _check_inputs(graph, what, shapes, dtypes):
    """The shapes and dtypes a call gives must be the model's: its shapes are fixed in the file."""
    by_name = {v.name: v for v in graph.inputs}
    for kind, table in (("shape", shapes), ("dtype", dtypes)):
        for name, want in (table or {}).items():
            v = by_name.get(name)
            if v is None:
                raise AotError(f"{what}: {kind} given for '{name}', which is not an input of the model "
                               f"(its inputs: {', '.join(by_name) or 'none'})")
            have = tuple(v.type.shape) if kind == "shape" else v.type.dtype
            want = tuple(int(d) for d in want) if kind == "shape" else str(np.dtype(want))
            if have != want:
                raise AotError(f"{what}: input '{name}' has {kind} {list(have) if kind == 'shape' else have} in the "
                               f"model, not {list(want) if kind == 'shape' else want}")


def from_tflite(model, shape_dict=None, dtype_dict=None, op_converter=None):
    """(IRModule, params) of a TFLite model: a tflite.Model object, its bytes, or its path.
    shape_dict / dtype_dict are checked against the model's inputs."""
    from ...frontend.tflite_import import import_tflite, is_tflite
    if op_converter is not None:
        raise AotError("from_tflite: op_converter (a custom TVM OperatorConverter) is not supported; "
                       "custom operators register with aot.register_op")
    data = _tflite_bytes(model)
    if not is_tflite(data):
        raise AotError("from_tflite: the data is not a TFLite flatbuffer (no 'TFL3' identifier)")
    graph = import_tflite(data, name="main")
    _check_inputs(graph, "from_tflite", shape_dict, dtype_dict)
    return IRModule({"main": GraphFunction(graph, data, None, "tflite")}), {}


def _onnx_input_names(model):
    """The runtime inputs an ONNX model declares (initializers listed as inputs are not)."""
    import onnx
    try:
        if isinstance(model, onnx.ModelProto):
            m = model
        elif isinstance(model, (bytes, bytearray)):
            m = onnx.load_model_from_string(bytes(model))
        else:
            m = onnx.load(str(model), load_external_data=False)
    except Exception:  # noqa: BLE001 -- the importer names what is wrong with the file
        return None
    inits = {t.name for t in m.graph.initializer}
    return [v.name for v in m.graph.input if v.name not in inits]


def from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=True, convert_config=None,
              export_node_renamed_model_path=None):
    """(IRModule, params) of an ONNX model (ModelProto, bytes or path). shape {input: shape} fixes
    the inputs' free dimensions; a dtype dict is checked against the model's input types (a single
    dtype string is TVM's default for untyped inputs, which ONNX inputs never are). The operator
    set is the model's own (opset= is TVM's override for models that declare none)."""
    from ...frontend.onnx_import import import_onnx
    if export_node_renamed_model_path is not None:
        raise AotError("from_onnx: export_node_renamed_model_path is not supported (nodes keep their names)")
    shapes = {k: [int(d) for d in v] for k, v in (shape or {}).items()}
    names = _onnx_input_names(model)
    unknown = sorted(set(shapes) - set(names or shapes))
    if unknown:
        raise AotError(f"from_onnx: shape given for {', '.join(repr(n) for n in unknown)}, which "
                       f"{'is' if len(unknown) == 1 else 'are'} not an input of the model (its inputs: "
                       f"{', '.join(names) or 'none'})")
    graph = import_onnx(model, shapes, name="main")
    _check_inputs(graph, "from_onnx", None, dtype if isinstance(dtype, dict) else None)
    return IRModule({"main": GraphFunction(graph, model, shapes, "onnx")}), {}


def _not_here(name, hint):
    def refuse(*args, **kwargs):
        raise AotError(f"relay.frontend.{name} is not available: this compiler imports ONNX and TFLite models only; "
                       f"{hint}, then relay.frontend.from_onnx / from_tflite")
    refuse.__name__ = name
    refuse.__doc__ = f"Refused: {hint}, then from_onnx / from_tflite."
    return refuse


# TVM's other frontends, refused by name with the way round them (each framework exports ONNX or TFLite)
from_pytorch = _not_here("from_pytorch", "export the model with torch.onnx.export")
from_keras = _not_here("from_keras", "convert the model with tf.lite.TFLiteConverter or tf2onnx")
from_tensorflow = _not_here("from_tensorflow", "convert the model with tf.lite.TFLiteConverter or tf2onnx")
from_mxnet = _not_here("from_mxnet", "export the model with mxnet.onnx.export_model")
from_paddle = _not_here("from_paddle", "export the model with paddle2onnx")
from_caffe = _not_here("from_caffe", "convert the model to ONNX (caffe2onnx)")
from_caffe2 = _not_here("from_caffe2", "convert the model to ONNX (caffe2.python.onnx)")
from_coreml = _not_here("from_coreml", "convert the model to ONNX (onnxmltools)")
from_darknet = _not_here("from_darknet", "convert the model to ONNX")
from_oneflow = _not_here("from_oneflow", "export the model to ONNX (oneflow_onnx)")
