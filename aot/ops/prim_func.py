"""PrimFuncCall: a kernel a user wrote and scheduled (aot.te with a schedule, or a loop-IR
function), called as one node of the graph IR so that it goes through the same executor,
memory plan, renderers and MLF as every other kernel. attrs["prim_func"] is the PrimFunc; the
node's inputs and outputs are its parameters in order. Lowering does not recompute it and no
target rule reschedules it (aot/executor/lowering.py takes it as written)."""
from __future__ import annotations

from ..errors import OpError
from ..ir.graph import TensorType
from ..dtypes import ALL
from .registry import Op, Pattern, register


@register
class PrimFuncCall(Op):
    name = "PrimFuncCall"
    internal = True
    pattern = Pattern.OPAQUE
    dtypes = ALL
    min_inputs = 0

    def infer(self, node):
        f = node.attrs["prim_func"]
        if len(node.inputs) != f.num_inputs:
            raise OpError(node, f"{f.name} takes {f.num_inputs} inputs, the node gives {len(node.inputs)}")
        for v, b in zip(node.inputs, f.inputs):
            if tuple(v.type.shape) != tuple(b.shape) or v.type.dtype != b.dtype:
                raise OpError(node, f"{f.name}: parameter {b.name} is {b.dtype}{list(b.shape)}, the argument "
                                    f"{v.type.dtype}{list(v.type.shape)}")
        return [TensorType(tuple(b.shape), b.dtype) for b in f.outputs]

    def reference(self, node, *xs):
        raise NotImplementedError      # never folded: it runs as the user wrote it
