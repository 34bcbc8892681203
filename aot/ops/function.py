"""Function: a call of a nested graph, TVM's relay Function as partitioning uses it.

attrs["body"] is a self-contained Graph: body.inputs[k] stands for the node's inputs[k] (a
constant input's Value carries the constant, so a backend sees the weights it is given) and
body.outputs[k] for outputs[k]. The other attributes are TVM's:
  Composite      the pattern a matched subgraph came from ("vanilla_accelerator.conv2d")
  Compiler       the external backend the function is handed to ("vanilla_accelerator")
  global_symbol  the C symbol of that function (tvmgen_<mod>_<compiler>_main_<N>)

A Function with a Compiler runs as one external call (aot/executor/). Without one it is an
ordinary op: its reference and compute are its body's, node by node.
"""
from __future__ import annotations

from ..errors import OpError
from .registry import Op, Pattern, get_op, register


def body_env(node, inputs):
    """{id(body value): x} for the body's inputs bound to `inputs` (None for omitted ones)."""
    body = node.attrs["body"]
    return {id(b): x for b, x in zip(body.inputs, inputs)}


def _run_body(node, inputs, method):
    body = node.attrs["body"]
    env = body_env(node, inputs)
    for v in body.constants():
        env.setdefault(id(v), v.const if method == "reference" else None)
    for n in body.nodes:
        op = get_op(n.op)
        args = [None if v is None else env[id(v)] for v in n.inputs]
        outs = getattr(op, method)(n, *args)
        for o, val in zip(n.outputs, outs):
            env[id(o)] = val
    return [env[id(o)] for o in body.outputs]


@register
class Function(Op):
    name = "Function"
    internal = True          # made by partitioning, never read from a model
    pattern = Pattern.OPAQUE
    min_inputs = 0

    def infer(self, node):
        return [o.type for o in node.attrs["body"].outputs]

    def reference(self, node, *xs):
        return _run_body(node, xs, "reference")

    def compute(self, node, *tensors):
        body = node.attrs["body"]
        missing = [v.name for v in body.constants() if all(v is not b for b in body.inputs)]
        if missing:
            raise OpError(node, f"its body reads constants that are not its inputs: {', '.join(missing)}")
        return _run_body(node, tensors, "compute")

    def check(self, node):
        if node.attrs.get("Compiler"):
            return           # the backend that claimed it decides what it can run
        for n in node.attrs["body"].nodes:
            get_op(n.op).check(n)
