"""The op registry: everything about one op lives in one class.

An op class gives
  - pattern:   its fusion pattern kind (TVM's OpPatternKind values),
  - canon():   ONNX attributes/inputs of any supported opset -> one canonical attribute set,
  - infer():   output TensorTypes from input types and attributes,
  - reference(): numpy semantics (used by constant folding, written independently of compute),
  - compute(): the tensor-expression definition lowered to loop IR (None: compile-time only).
"""
from __future__ import annotations

import enum

import ml_dtypes  # noqa: F401  (imported for its effect: registers bfloat16 with numpy)
import numpy as np

from ..dtypes import ALL, FLOATS, INTS, NUMERIC, ONNX_DTYPES  # noqa: F401  (the ops import them from here)
from ..errors import NeedsConstantError, OpError
from ..ir.graph import TensorType


class Pattern(enum.IntEnum):
    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    OPAQUE = 8


REGISTRY: dict = {}


def register(cls):
    inst = cls()
    for name in (cls.names if getattr(cls, "names", None) else (cls.name,)):
        REGISTRY[name] = inst
    return cls


def get_op(name):
    return REGISTRY.get(name)


def alias_root(v):
    """The value whose storage `v` shares: through every alias op (Reshape, Flatten, ...) that
    produces it, back to the first value that owns bytes."""
    while v.producer is not None and get_op(v.producer.op).alias:
        v = v.producer.inputs[0]
    return v


class ImportCtx:
    """What canon() sees of one ONNX node: mutable attrs and inputs."""

    def __init__(self, node_name, op_type, attrs, inputs, opset, n_outputs):
        self.name, self.op, self.attrs, self.inputs = node_name, op_type, attrs, list(inputs)
        self.opset, self.n_outputs = opset, n_outputs

    def error(self, msg):
        raise OpError(self, msg)

    def input(self, i):
        return self.inputs[i] if i < len(self.inputs) else None

    def const_input(self, i, what):
        """The compile-time value of optional input i (None when omitted)."""
        v = self.input(i)
        if v is None:
            return None
        if not v.is_const:
            raise NeedsConstantError(self, f"input '{what}' ({v.name}) must be a compile-time constant "
                                           f"(bind it with --bind-input {v.name}=FILE.npy)", v.name)
        return np.asarray(v.const)

    def ints_input(self, i, what, required=False):
        """A constant integer-list input as a Python list (None when omitted and optional)."""
        v = self.const_input(i, what)
        if v is None:
            if required:
                self.error(f"the {what} input is required")
            return None
        return [int(x) for x in v.reshape(-1)]

    def drop_inputs_from(self, i):
        self.inputs = self.inputs[:i]


class Op:
    name = ""
    names: tuple = ()
    pattern = Pattern.OPAQUE
    alias = False            # output aliases input 0's memory (reshape-like)
    fold_from_types = False  # output known from input types alone (Shape, Size)
    dtypes = ALL             # dtypes accepted for input 0 at run time
    min_inputs = 1
    same_dtype = ()          # positions of inputs ONNX types as input 0's T (Conv's W and B)

    def canon(self, ctx: ImportCtx):
        pass

    def infer(self, node) -> list:
        raise NotImplementedError

    def reference(self, node, *xs) -> list:
        raise NotImplementedError

    compute = None           # def compute(self, node, *tensors) -> list[te.Tensor]
    # An op may instead define expand_onnx(node_proto, values, opset, named) -> [NodeProto]:
    # the importer replaces the node by those (a composition of other ops).

    def check(self, node):
        """Raise OpError if this node cannot be compiled to C (after shapes are known)."""
        x = node.inputs[0] if node.inputs else None
        if x is not None and x.type.dtype not in self.dtypes:
            raise OpError(node, f"input dtype {x.type.dtype} is not supported (supported: {', '.join(self.dtypes)})")
        # (float kernels only: the integer and quantised convs subclassing these mix dtypes by design)
        for k in self.same_dtype if x is not None and x.type.dtype in FLOATS else ():
            v = node.inputs[k] if k < len(node.inputs) else None
            if x is not None and v is not None and v.type.dtype != x.type.dtype:
                raise OpError(node, f"input {k} ({v.name}) is {v.type.dtype}, input 0 ({x.name}) {x.type.dtype}: "
                                    "they must have one type")


class AxisOp(Op):
    """An op with one `axis` attribute (default 0) into its first input: canon() checks it and
    makes it non-negative, so infer, reference and compute read a plain index."""

    def canon(self, ctx):
        ctx.attrs["axis"] = norm_axis(ctx, ctx.attrs.get("axis", 0), len(ctx.input(0).type.shape))


def broadcast_shapes(node, *shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise OpError(node, f"shapes {', '.join(str(list(s)) for s in shapes)} do not broadcast")


def same_as_input(node, i=0):
    return [TensorType(node.inputs[i].type.shape, node.inputs[i].type.dtype)]


def norm_axis(node, axis, rank):
    if not -rank <= axis < max(rank, 1):
        raise OpError(node, f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0
