"""Build small .tflite models in tests, without TensorFlow.

A thin, readable layer over the generated flatbuffer code in the `tflite` package:

    mb = ModelBuilder()
    x = mb.tensor("x", [1, 8, 8, 3], "int8", scale=0.05, zero_point=-3)
    w = mb.tensor("w", [4, 3, 3, 3], "int8", data=w_np, scale=w_scales, zero_point=0, quantized_dimension=0)
    b = mb.tensor("b", [4], "int32", data=b_np, scale=0.05 * w_scales, zero_point=0)
    y = mb.tensor("y", [1, 8, 8, 4], "int8", scale=0.1, zero_point=2)
    mb.op("CONV_2D", [x, w, b], [y], padding="SAME", fused_activation_function="RELU")
    model_bytes = mb.finish(inputs=[x], outputs=[y])

Operator options are keyword arguments named like the schema's fields in snake_case; enum
fields take the enum's name as a string. The options table is found from the operator's name
(CONV_2D -> Conv2DOptions), so ops beyond the ones the tests use work as long as their option
fields are scalars, enums or int32 vectors.

Deliberately malformed models, for tests of the frontend's error handling (never feed these
to TFLM, which may abort the process): `truncated()`, `mb.tensor(..., buffer=999)` for a bogus
buffer index, an int8 tensor given without `scale` (no quantization parameters), raw `bytes`
as `data` (not checked against the shape), bogus tensor indices in `mb.op()`, and
`finish(file_identifier=..., version=...)`.
"""
import importlib

import flatbuffers
import numpy as np

from tflite.ActivationFunctionType import ActivationFunctionType
from tflite.BuiltinOperator import BuiltinOperator
from tflite.BuiltinOptions import BuiltinOptions
from tflite.FullyConnectedOptionsWeightsFormat import FullyConnectedOptionsWeightsFormat
from tflite.MirrorPadMode import MirrorPadMode
from tflite.Padding import Padding
from tflite.TensorType import TensorType

# `import tflite.X as m` would give the class tflite/__init__.py re-exports, not the module
# holding the builder functions, hence import_module.
_Buffer = importlib.import_module("tflite.Buffer")
_Model = importlib.import_module("tflite.Model")
_Operator = importlib.import_module("tflite.Operator")
_OperatorCode = importlib.import_module("tflite.OperatorCode")
_Quant = importlib.import_module("tflite.QuantizationParameters")
_SubGraph = importlib.import_module("tflite.SubGraph")
_Tensor = importlib.import_module("tflite.Tensor")


# dtype name -> (TensorType, numpy dtype)
DTYPES = {
    "float32": (TensorType.FLOAT32, np.float32),
    "float16": (TensorType.FLOAT16, np.float16),
    "int8": (TensorType.INT8, np.int8),
    "uint8": (TensorType.UINT8, np.uint8),
    "int16": (TensorType.INT16, np.int16),
    "int32": (TensorType.INT32, np.int32),
    "int64": (TensorType.INT64, np.int64),
    "bool": (TensorType.BOOL, np.bool_),
}

# Options tables whose name does not follow from the operator's name.
_OPTIONS_BY_OP = {
    "AVERAGE_POOL_2D": "Pool2DOptions", "MAX_POOL_2D": "Pool2DOptions", "L2_POOL_2D": "Pool2DOptions",
    "MEAN": "ReducerOptions", "SUM": "ReducerOptions", "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions", "REDUCE_PROD": "ReducerOptions", "REDUCE_ANY": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions",
    "MAXIMUM": "MaximumMinimumOptions", "MINIMUM": "MaximumMinimumOptions",
}
# Everything else: CONV_2D -> conv2d -> Conv2DOptions, PADV2 -> padv2 -> PadV2Options, ...
_OPTIONS_BY_KEY = {name[:-len("Options")].lower(): name
                   for name in vars(BuiltinOptions) if name.endswith("Options")}

# Fields whose value is an enum: the enum class to look a string up in.
_ENUM_FIELDS = {
    "padding": Padding,
    "fused_activation_function": ActivationFunctionType,
    "weights_format": FullyConnectedOptionsWeightsFormat,
    "mode": MirrorPadMode,
    "quantized_bias_type": TensorType,
    "out_type": TensorType,
    "output_type": TensorType,
    "in_data_type": TensorType,
    "out_data_type": TensorType,
    "idx_out_type": TensorType,
}

# The schema's defaults for these are 0, which no real model has and TFLM divides by.
_OPTION_DEFAULTS = {
    "Conv2DOptions": {"stride_w": 1, "stride_h": 1},
    "DepthwiseConv2DOptions": {"stride_w": 1, "stride_h": 1, "depth_multiplier": 1},
    "Pool2DOptions": {"stride_w": 1, "stride_h": 1, "filter_width": 1, "filter_height": 1},
    "TransposeConvOptions": {"stride_w": 1, "stride_h": 1},
    "SoftmaxOptions": {"beta": 1.0},
}


def builtin_code(op):
    """The BuiltinOperator code of an op name such as "CONV_2D" (ints pass through)."""
    if isinstance(op, (int, np.integer)):
        return int(op)
    try:
        return getattr(BuiltinOperator, op)
    except AttributeError:
        raise ValueError(f"unknown TFLite builtin operator {op!r}") from None


def options_table(op):
    """Name of the builtin options table for an op name, or None when the schema has none."""
    return _OPTIONS_BY_OP.get(op) or _OPTIONS_BY_KEY.get(op.replace("_", "").lower())


def _camel(snake):
    return "".join(part.capitalize() for part in snake.split("_"))


def truncated(model_bytes, n):
    """The first n bytes of a model (negative n drops |n| bytes from the end)."""
    return bytes(model_bytes[:n])


class ModelBuilder:
    """Collects tensors, buffers and operators of one subgraph; finish() serialises them."""

    def __init__(self):
        self._tensors = []
        self._buffers = [b""]  # buffer 0: the empty sentinel TFLite requires
        self._ops = []
        self._opcodes = {}  # (builtin code, version) -> index into operator_codes

    def tensor(self, name, shape, dtype, data=None, scale=None, zero_point=None,
               quantized_dimension=0, buffer=None):
        """Add a tensor and return its index.

        dtype is a name from DTYPES. data makes it a constant in its own buffer: an array (cast
        to dtype, must match shape) or raw bytes (taken as is). scale/zero_point are scalars or
        per-channel sequences; without scale the tensor has no quantization parameters.
        buffer overrides the buffer index, e.g. with a bogus one.
        """
        ttype, np_dtype = DTYPES[dtype]
        if data is not None:
            if not isinstance(data, (bytes, bytearray)):
                arr = np.asarray(data)
                if arr.size != int(np.prod(shape, dtype=np.int64)):
                    raise ValueError(f"tensor {name!r}: data has {arr.size} elements, shape {list(shape)}")
                data = arr.astype(np.dtype(np_dtype).newbyteorder("<")).tobytes()  # TFLite is little-endian
            self._buffers.append(bytes(data))
            if buffer is None:
                buffer = len(self._buffers) - 1
        quant = None
        if scale is not None:
            scales = np.atleast_1d(np.asarray(scale, np.float32))
            zps = np.atleast_1d(np.asarray(0 if zero_point is None else zero_point, np.int64))
            if zps.size == 1 and scales.size > 1:
                zps = np.repeat(zps, scales.size)
            quant = (scales, zps, int(quantized_dimension))
        self._tensors.append(dict(name=name, shape=[int(d) for d in shape], type=ttype,
                                  buffer=0 if buffer is None else int(buffer), quant=quant))
        return len(self._tensors) - 1

    def op(self, op, inputs, outputs, version=1, **options):
        """Add an operator (name such as "CONV_2D", or a builtin code); None inputs are
        optional ones left out. Options are the schema's fields in snake_case."""
        code = builtin_code(op)
        name = op if isinstance(op, str) else None
        table = options_table(name) if name else None
        if table is None:
            if options:
                raise TypeError(f"{op} takes no options, got {', '.join(sorted(options))}")
        else:
            mod = importlib.import_module(f"tflite.{table}")
            unknown = [k for k in options if not hasattr(mod, f"{table}Add{_camel(k)}")]
            if unknown:
                raise TypeError(f"{op} ({table}) has no option(s) {', '.join(sorted(unknown))}")
            options = {**_OPTION_DEFAULTS.get(table, {}), **options}
            for key, value in options.items():
                if isinstance(value, str):
                    enum = _ENUM_FIELDS.get(key)
                    if enum is None or not hasattr(enum, value):
                        raise ValueError(f"{op}: bad value {value!r} for option {key}")
        key = (code, int(version))
        if key not in self._opcodes:
            self._opcodes[key] = len(self._opcodes)
        self._ops.append(dict(opcode=self._opcodes[key], table=table, options=options,
                              inputs=[-1 if t is None else int(t) for t in inputs],
                              outputs=[int(t) for t in outputs]))
        return len(self._ops) - 1

    def finish(self, inputs, outputs, description="aot tests/tflite_build.py", version=3,
               file_identifier=b"TFL3"):
        """Serialise the model: one subgraph with the given input and output tensor indices."""
        b = flatbuffers.Builder(1024)
        buffers = [self._buffer(b, data) for data in self._buffers]
        tensors = [self._tensor(b, t) for t in self._tensors]
        operators = [self._operator(b, o) for o in self._ops]
        codes = []
        for code, ver in self._opcodes:  # dicts keep insertion order, i.e. opcode index order
            _OperatorCode.Start(b)
            _OperatorCode.AddDeprecatedBuiltinCode(b, min(code, BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES))
            _OperatorCode.AddBuiltinCode(b, code)
            _OperatorCode.AddVersion(b, ver)
            codes.append(_OperatorCode.End(b))

        tensors_vec, ops_vec = _offsets(b, tensors), _offsets(b, operators)
        in_vec, out_vec = _ints(b, inputs), _ints(b, outputs)
        sg_name = b.CreateString("main")
        _SubGraph.Start(b)
        _SubGraph.AddTensors(b, tensors_vec)
        _SubGraph.AddInputs(b, in_vec)
        _SubGraph.AddOutputs(b, out_vec)
        _SubGraph.AddOperators(b, ops_vec)
        _SubGraph.AddName(b, sg_name)
        subgraph = _SubGraph.End(b)

        codes_vec, sg_vec, buf_vec = _offsets(b, codes), _offsets(b, [subgraph]), _offsets(b, buffers)
        desc = b.CreateString(description)
        _Model.Start(b)
        _Model.AddVersion(b, version)
        _Model.AddOperatorCodes(b, codes_vec)
        _Model.AddSubgraphs(b, sg_vec)
        _Model.AddDescription(b, desc)
        _Model.AddBuffers(b, buf_vec)
        b.Finish(_Model.End(b), file_identifier=file_identifier)
        return bytes(b.Output())

    @staticmethod
    def _buffer(b, data):
        vec = None
        if data:
            # 16-byte alignment, like the converter's force_align: kernels read constants in place
            b.StartVector(1, len(data), 16)
            b.head -= len(data)
            b.Bytes[b.head:b.head + len(data)] = data
            vec = b.EndVector()
        _Buffer.Start(b)
        if vec is not None:
            _Buffer.AddData(b, vec)
        return _Buffer.End(b)

    @staticmethod
    def _tensor(b, t):
        quant = None
        if t["quant"] is not None:
            scales, zps, dim = t["quant"]
            scale_vec, zp_vec = b.CreateNumpyVector(scales), b.CreateNumpyVector(zps)
            _Quant.Start(b)
            _Quant.AddScale(b, scale_vec)
            _Quant.AddZeroPoint(b, zp_vec)
            _Quant.AddQuantizedDimension(b, dim)
            quant = _Quant.End(b)
        shape, name = _ints(b, t["shape"]), b.CreateString(t["name"])
        _Tensor.Start(b)
        _Tensor.AddShape(b, shape)
        _Tensor.AddType(b, t["type"])
        _Tensor.AddBuffer(b, t["buffer"])
        _Tensor.AddName(b, name)
        if quant is not None:
            _Tensor.AddQuantization(b, quant)
        return _Tensor.End(b)

    @staticmethod
    def _operator(b, o):
        table, opts = o["table"], None
        if table is not None:
            opts = _options(b, table, o["options"])
        ins, outs = _ints(b, o["inputs"]), _ints(b, o["outputs"])
        _Operator.Start(b)
        _Operator.AddOpcodeIndex(b, o["opcode"])
        _Operator.AddInputs(b, ins)
        _Operator.AddOutputs(b, outs)
        if table is not None:
            _Operator.AddBuiltinOptionsType(b, getattr(BuiltinOptions, table))
            _Operator.AddBuiltinOptions(b, opts)
        return _Operator.End(b)


def _options(b, table, options):
    mod = importlib.import_module(f"tflite.{table}")
    # vectors must be written before the table that refers to them is started
    values = {}
    for key, value in options.items():
        if hasattr(mod, f"{table}Start{_camel(key)}Vector"):
            value = _ints(b, value)
        elif isinstance(value, str):
            value = getattr(_ENUM_FIELDS[key], value)
        elif isinstance(value, np.generic):
            value = value.item()
        values[key] = value
    getattr(mod, f"{table}Start")(b)
    for key, value in values.items():
        getattr(mod, f"{table}Add{_camel(key)}")(b, value)
    return getattr(mod, f"{table}End")(b)


def _ints(b, values):
    return b.CreateNumpyVector(np.asarray(values, np.int32).reshape(-1))


def _offsets(b, offsets):
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()
