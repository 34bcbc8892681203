"""TFLite flatbuffers -> the graph IR.

The file is read with the `tflite` package (the flatbuffers code generated from TFLite's
schema), never by hand. Every table the import touches is checked first (file identifier,
one subgraph, tensor and buffer indices in range, buffer sizes matching the tensor shapes,
quantisation parameters where a quantised tensor needs them), so that a malformed file is a
clear error naming the element at fault and never a crash deep in the import.

Each operator becomes graph-IR nodes through its converter in tflite_ops.py; data stays NHWC
as TFLite stores it (Conv and the pools take layout="NHWC"), so no transpose is added around
any op. Every unsupported operator is listed at once, by operator index and name.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AotError, QuantRangeError, TFLiteError, UnsupportedError
from ..ops.quant_rules import zero_point_problem
from .builder import GraphBuilder
from .tflite_ops import CONVERTERS, INT8_OPS, Converter, quantised

IDENTIFIER = b"TFL3"
DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 6: "bool", 7: "int16", 9: "int8",
          10: "float64", 15: "uint32", 16: "uint16"}
QUANTISED = ("int8", "uint8", "int16")


def is_tflite(data) -> bool:
    return isinstance(data, (bytes, bytearray)) and len(data) >= 8 and bytes(data[4:8]) == IDENTIFIER


@dataclass
class TensorInfo:
    index: int
    name: str
    shape: tuple
    dtype: str
    data: np.ndarray = None           # the constant's value (from its buffer), else None
    scale: np.ndarray = None          # quantisation: real = scale * (q - zero_point)
    zero_point: np.ndarray = None
    axis: int = 0                     # the quantised dimension of per-channel parameters

    @property
    def quantised(self):
        return self.scale is not None

    def __str__(self):
        return f"tensor {self.index} '{self.name}'"


@dataclass
class OpInfo:
    index: int
    name: str                         # the builtin's name, CONV_2D
    inputs: list                      # TensorInfo or None (an omitted optional input, index -1)
    outputs: list
    options: object                   # the builtin options table (tflite.<Name>Options) or None

    def __str__(self):
        return f"operator {self.index} ({self.name})"

    def opt(self, field, default=None):
        """An option by its schema name (StrideH), or default when the op has no options table."""
        if self.options is None:
            return default
        return getattr(self.options, field)()


def _schema(name):
    """The class `name` of the tflite package (its package namespace binds the classes over
    the modules of the same name, so the module is taken from importlib)."""
    import importlib
    return getattr(importlib.import_module(f"tflite.{name}"), name)


def _builtin_names():
    return {v: k for k, v in vars(_schema("BuiltinOperator")).items() if not k.startswith("_")}


def _options_classes():
    import importlib
    out = {}
    for name, code in vars(_schema("BuiltinOptions")).items():
        if name.startswith("_") or name == "NONE":
            continue
        try:
            out[code] = getattr(importlib.import_module(f"tflite.{name}"), name)
        except (ImportError, AttributeError):
            continue
    return out


class _Reader:
    """The model's tables, each access checked: a flatbuffer with an offset out of range fails
    inside the generated accessors (struct.error, IndexError, ...) and becomes a TFLiteError
    naming what was being read."""

    def __init__(self, data):
        if not isinstance(data, (bytes, bytearray)):
            raise TFLiteError("a TFLite model is given as a path or bytes")
        self.data = bytes(data)
        if len(self.data) < 8:
            raise TFLiteError(f"not a TFLite file: {len(self.data)} bytes is too short for a flatbuffer")
        if self.data[4:8] != IDENTIFIER:
            raise TFLiteError(f"not a TFLite file: the file identifier is {self.data[4:8]!r}, not {IDENTIFIER!r}")
        model = _schema("Model")
        self.model = self.read("the model table", lambda: model.GetRootAs(self.data, 0))

    def read(self, what, fn):
        try:
            return fn()
        except AotError:
            raise
        except Exception as e:
            raise TFLiteError(f"malformed TFLite file: {what} cannot be read ({type(e).__name__}: {e}); "
                              "the file is truncated or its offsets are out of range") from None


def read_model(data):
    """(inputs, outputs, tensors, ops) of the model's only subgraph, every table checked."""
    r = _Reader(data)
    m = r.model
    version = r.read("the schema version", m.Version)
    if version != 3:
        raise TFLiteError(f"TFLite schema version {version} is not supported (version 3)")
    n_sub = r.read("the subgraph list", m.SubgraphsLength)
    if n_sub != 1:
        raise TFLiteError(f"the model has {n_sub} subgraphs; control flow (WHILE, IF, CALL_ONCE) is not supported, "
                          "one subgraph is")
    sg = r.read("subgraph 0", lambda: m.Subgraphs(0))
    n_buf = r.read("the buffer list", m.BuffersLength)
    n_t = r.read("the tensor list", sg.TensorsLength)
    tensors = [_tensor(r, m, sg, k, n_buf) for k in range(n_t)]
    names, options = _builtin_names(), _options_classes()
    n_codes = r.read("the operator codes", m.OperatorCodesLength)
    codes = []
    for k in range(n_codes):
        oc = r.read(f"operator code {k}", lambda: m.OperatorCodes(k))
        code = r.read(f"operator code {k}", lambda: max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode()))
        custom = r.read(f"operator code {k}", oc.CustomCode)
        codes.append(f"custom op '{custom.decode(errors='replace')}'" if code == 32 and custom else
                     names.get(code, f"builtin code {code}"))

    def index_list(what, fn, allow_missing):
        idx = [int(i) for i in r.read(what, fn)]
        for i in idx:
            if not (0 <= i < n_t or (allow_missing and i == -1)):
                raise TFLiteError(f"malformed TFLite file: {what} names tensor {i}, and the subgraph has {n_t}")
        return idx

    ops = []
    for k in range(r.read("the operator list", sg.OperatorsLength)):
        op = r.read(f"operator {k}", lambda: sg.Operators(k))
        ci = r.read(f"operator {k}", op.OpcodeIndex)
        if not 0 <= ci < len(codes):
            raise TFLiteError(f"malformed TFLite file: operator {k} names operator code {ci}, and there are {len(codes)}")
        ins = index_list(f"operator {k} ({codes[ci]}): its inputs", op.InputsAsNumpy if op.InputsLength() else
                         (lambda: []), True)
        outs = index_list(f"operator {k} ({codes[ci]}): its outputs", op.OutputsAsNumpy if op.OutputsLength() else
                          (lambda: []), False)
        table = None
        otype = r.read(f"operator {k}: its options type", op.BuiltinOptionsType)
        if otype and otype in options:
            raw = r.read(f"operator {k} ({codes[ci]}): its options", op.BuiltinOptions)
            if raw is not None:
                table = options[otype]()
                table.Init(raw.Bytes, raw.Pos)
        ops.append(OpInfo(k, codes[ci], [tensors[i] if i >= 0 else None for i in ins], [tensors[i] for i in outs],
                          table))
    inputs = index_list("the subgraph's inputs", sg.InputsAsNumpy if sg.InputsLength() else (lambda: []), False)
    outputs = index_list("the subgraph's outputs", sg.OutputsAsNumpy if sg.OutputsLength() else (lambda: []), False)
    if not outputs:
        raise TFLiteError("the model has no outputs")
    return [tensors[i] for i in inputs], [tensors[i] for i in outputs], tensors, ops


def _tensor(r, m, sg, k, n_buf):
    t = r.read(f"tensor {k}", lambda: sg.Tensors(k))
    name = r.read(f"tensor {k}: its name", t.Name)
    name = name.decode(errors="replace") if name else f"tensor{k}"
    what = f"tensor {k} '{name}'"
    code = r.read(f"{what}: its type", t.Type)
    if code not in DTYPES:
        raise TFLiteError(f"{what}: element type {code} is not supported")
    dtype = DTYPES[code]
    shape = [int(d) for d in r.read(f"{what}: its shape", t.ShapeAsNumpy)] if t.ShapeLength() else []
    if any(d < 0 for d in shape):
        raise TFLiteError(f"{what}: shape {shape} has an unknown dimension; only static shapes are supported")
    if r.read(f"{what}: its sparsity", t.Sparsity) is not None:
        raise TFLiteError(f"{what}: sparse tensors are not supported")
    info = TensorInfo(k, name, tuple(shape), dtype)
    b = r.read(f"{what}: its buffer index", t.Buffer)
    if not 0 <= b < n_buf:
        raise TFLiteError(f"malformed TFLite file: {what} names buffer {b}, and the model has {n_buf}")
    if b > 0:
        buf = r.read(f"{what}: buffer {b}", lambda: m.Buffers(b))
        offset = r.read(f"{what}: buffer {b}", buf.Offset)
        if offset > 1:          # data stored after the flatbuffer (models over 2 GB)
            size = r.read(f"{what}: buffer {b}", buf.Size)
            if offset + size > len(r.data):
                raise TFLiteError(f"malformed TFLite file: {what}: buffer {b} spans bytes {offset}..{offset + size}, "
                                  f"past the end of the {len(r.data)}-byte file")
            raw = r.data[offset:offset + size]
        else:
            raw = r.read(f"{what}: buffer {b}", lambda: buf.DataAsNumpy().tobytes() if buf.DataLength() else b"")
        if raw:
            n = int(np.prod(shape, dtype=np.int64))
            want = n * np.dtype(dtype).itemsize
            if len(raw) != want:
                raise TFLiteError(f"malformed TFLite file: {what}: buffer {b} holds {len(raw)} bytes, and "
                                  f"{dtype}{shape} needs {want}")
            info.data = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    q = r.read(f"{what}: its quantisation", t.Quantization)
    if q is not None and r.read(f"{what}: its quantisation", q.ScaleLength) > 0:
        scale = r.read(f"{what}: its scales", q.ScaleAsNumpy).astype(np.float32)
        zp = r.read(f"{what}: its zero points", q.ZeroPointAsNumpy) if q.ZeroPointLength() else \
            np.zeros(len(scale), np.int64)
        if len(zp) != len(scale):
            raise TFLiteError(f"{what}: {len(scale)} scales and {len(zp)} zero points")
        axis = r.read(f"{what}: its quantised dimension", q.QuantizedDimension)
        if len(scale) > 1 and not (0 <= axis < len(shape) and shape[axis] == len(scale)):
            raise TFLiteError(f"{what}: {len(scale)} per-channel scales do not match dimension {axis} of {shape}")
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise TFLiteError(f"{what}: quantisation scales must be finite and positive")
        info.scale, info.zero_point, info.axis = scale, np.asarray(zp, np.int64), int(axis)
    return info


def check_tflite_graph(inputs, outputs, tensors, ops):
    """The graph rules ONNX models keep (aot/frontend/graph_rules.py), on the subgraph: inputs and
    outputs listed once, one producer per tensor, operators in execution order."""
    from .graph_rules import RuleNode, check_graph
    by_index = {t.index: t for t in tensors}
    check_graph([t.index for t in inputs], [t.index for t in tensors if t.data is not None],
                [RuleNode(f"operator {op.index} ({op.name})", [t.index if t is not None else None for t in op.inputs],
                          [t.index for t in op.outputs]) for op in ops],
                [t.index for t in outputs], name_of=lambda i: str(by_index[i]), ordered=True, error=TFLiteError)


def _refusal(problems):
    """Quantisation parameters out of range: one line for one, all of them listed for more."""
    return TFLiteError(problems[0]) if len(problems) == 1 else UnsupportedError(problems)


def import_tflite(data, name="default", log=None):
    """The graph IR of a TFLite model (bytes)."""
    inputs, outputs, tensors, ops = read_model(data)
    check_tflite_graph(inputs, outputs, tensors, ops)
    problems = [f"{op}: operator {op.name} is not supported" if op.name not in CONVERTERS else
                f"{op}: the integer (int8) kernel of {op.name} is not supported yet"
                for op in ops if op.name not in CONVERTERS or (quantised(op) and op.name not in INT8_OPS)]
    refused = [p for p in (zero_point_problem(t.zero_point, t.dtype, str(t)) for t in tensors if t.quantised) if p]
    if problems:
        raise UnsupportedError(problems + refused)
    if refused:
        raise _refusal(refused)
    b = GraphBuilder(name)
    values, graph_inputs = {}, []
    for t in inputs:
        if t.data is not None:
            raise TFLiteError(f"{t}: a subgraph input with a constant buffer is not supported")
        v = b.input(t.name, t.shape, t.dtype)
        values[t.index] = v
        graph_inputs.append(v)
    cx = Converter(b, values)
    for op in ops:
        try:
            cx.convert(op)
        except QuantRangeError as e:
            # listed with the others; the op's outputs stand in as inputs so later ops still convert
            refused.append(f"{op}: {e}")
            for t in op.outputs:
                values.setdefault(t.index, b.input(f"refused_{t.index}", t.shape, t.dtype))
    if refused:
        raise _refusal(refused)
    missing = [t for t in outputs if t.index not in values]
    if missing:
        raise TFLiteError(f"{missing[0]}: a subgraph output that no operator produces")
    io_quant = {(kind, k): (float(t.scale[0]), int(t.zero_point[0]))
                for kind, lst in (("input", inputs), ("output", outputs)) for k, t in enumerate(lst)
                if t.quantised and len(t.scale) == 1 and t.dtype in ("int8", "uint8", "int16")}
    graph = b.graph(graph_inputs, [values[t.index] for t in outputs], [t.name for t in outputs], io_quant)
    if log:
        log(f"import: TFLite, {len(ops)} operators -> {len(graph.nodes)} graph nodes "
            f"({b.folded} folded to constants)")
    return graph
