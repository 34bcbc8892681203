"""Building the graph IR node by node, the way every frontend does: an op's canon() turns the
attributes into its canonical set, infer() types the outputs, and a node whose inputs are all
constants folds to constants at once. The ONNX importer adds its nodes through add_node; the
TFLite importer through a GraphBuilder (which names values and constants for it)."""
from __future__ import annotations

import numpy as np

from ..errors import AotError
from ..ir.graph import Graph, Node, TensorType, Value
from ..ops.registry import ImportCtx, get_op
from ..passes.fold_constants import compact, fold_node

# The generated code indexes every tensor with int32_t and 32-bit targets address at most 4 GiB:
# a tensor with more elements or bytes than int32_t holds cannot be compiled correctly.
MAX_TENSOR_ELEMENTS = (1 << 31) - 1
MAX_TENSOR_BYTES = (1 << 31) - 1


def check_tensor_size(what, shape, dtype):
    """Refuse a tensor the generated code's int32_t indexing cannot address."""
    n = 1
    for d in shape:
        n *= int(d)
    nbytes = n * np.dtype(dtype).itemsize
    if n > MAX_TENSOR_ELEMENTS or nbytes > MAX_TENSOR_BYTES:
        raise AotError(f"{what} has shape {list(shape)}: {n:,} elements of {dtype} ({nbytes:,} bytes), more than "
                       f"the generated code can index (int32_t indices, at most {MAX_TENSOR_BYTES:,} bytes a tensor)")


def add_node(nodes, op_type, name, attrs, inputs, opset, out_names):
    """Type (and fold, when every input is constant) one node of `op_type`; append it to nodes
    unless folded. Returns (output values, folded)."""
    op = get_op(op_type)
    ctx = ImportCtx(name, op_type, attrs, inputs, opset, len(out_names))
    if len([v for v in inputs if v is not None]) < op.min_inputs:
        ctx.error(f"needs at least {op.min_inputs} input(s)")
    op.canon(ctx)
    outs = [Value(o or f"{name}_unused{j}", TensorType((), "float32")) for j, o in enumerate(out_names)]
    node = Node(op_type, name, ctx.inputs, outs, ctx.attrs)
    for o, t in zip(outs, op.infer(node)):
        check_tensor_size(f"node '{name}' ({op_type}): output '{o.name}'", t.shape, t.dtype)
        o.type = t
    vals = fold_node(node) if getattr(op, "fold_at_import", True) else None
    if vals is not None:
        for o, val in zip(outs, vals):
            o.const, o.producer = val, None
        return outs, True
    nodes.append(node)
    return outs, False


class GraphBuilder:
    """Nodes in the order added (a frontend adds them in a valid order), with unique names."""

    OPSET = 18          # the ONNX opset whose op signatures the builder's callers use

    def __init__(self, name):
        self.name, self.nodes, self.folded = name, [], 0
        self._names = set()

    def unique(self, base):
        name = base or "v"
        while name in self._names:
            name += "_"
        self._names.add(name)
        return name

    def reserve(self, names):
        """Keep these names for values the caller makes itself (no node or constant takes one)."""
        self._names.update(names)

    def input(self, name, shape, dtype):
        check_tensor_size(f"input '{name}'", shape, dtype)
        return Value(self.unique(name), TensorType(tuple(shape), dtype))

    def const(self, name, array):
        a = np.asarray(array)
        return Value(self.unique(name), TensorType(a.shape, str(a.dtype)), compact(a))

    def op(self, op_type, inputs, attrs=None, name=None, n_outputs=1, out_names=None):
        """The output values of one node of op_type (a list when n_outputs > 1)."""
        name = self.unique(name or op_type)
        outs = out_names or ([name] if n_outputs == 1 else [f"{name}_{k}" for k in range(n_outputs)])
        values, folded = add_node(self.nodes, op_type, name, dict(attrs or {}), list(inputs), self.OPSET,
                                  [self.unique(o) if o != name else o for o in outs])
        self.folded += folded
        return values[0] if n_outputs == 1 else values

    def graph(self, inputs, outputs, output_names=None, io_quant=None):
        return Graph(self.name, list(inputs), list(outputs), list(self.nodes), self.OPSET,
                     list(output_names) if output_names else None, dict(io_quant or {}))
