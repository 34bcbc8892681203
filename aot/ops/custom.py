"""A user's operator: its compute written with aot.te, registered under an ONNX domain and op
type, so that an ONNX node of that custom op imports as a graph node like any other and is
lowered, scheduled for the target, planned and rendered with the rest of the model.

    def my_scale(x, alpha=1.0):
        return te.compute(x.shape, lambda *i: x(*i) * alpha + 1.0, name="my_scale")
    aot.register_op("com.example", "MyScale", my_scale, reference=lambda x, alpha=1.0: x * alpha + 1)

compute(*inputs, **attrs) takes te placeholders (one per ONNX input) and the node's attributes
as keyword arguments, and returns a tensor (or a list, one per output). Output shapes and
dtypes come from running it on the input types; `reference` (numpy, optional) lets constant
inputs fold at compile time and lets tests compare the kernel with it.
"""
from __future__ import annotations

from ..errors import AotError, OpError
from ..ir.graph import TensorType
from ..te import tensor as te
from .registry import REGISTRY, Op, Pattern


def custom_key(domain, op_type):
    """The registry name of a custom op (ONNX's standard ops are registered by op type alone)."""
    return f"{domain}::{op_type}"


class CustomOp(Op):
    internal = True           # named by its domain-qualified key, never by a bare ONNX op type
    min_inputs = 0

    def __init__(self, key, compute_fn, reference_fn, pattern):
        self.name, self.compute_fn, self.reference_fn, self.pattern = key, compute_fn, reference_fn, pattern

    def _outputs(self, node, ins):
        try:
            out = self.compute_fn(*ins, **node.attrs)
        except AotError:
            raise
        except Exception as e:        # the user's function: say which op failed and how
            raise OpError(node, f"the custom op's compute raised {type(e).__name__}: {e}") from None
        outs = out if isinstance(out, (list, tuple)) else [out]
        if not outs or not all(isinstance(t, te.Tensor) for t in outs):
            raise OpError(node, "the custom op's compute must return an aot.te tensor (or a list of them)")
        return list(outs)

    def check(self, node):
        pass

    def infer(self, node):
        ins = [te.placeholder(v.type.shape, v.type.dtype, f"in{k}") for k, v in enumerate(node.inputs)]
        outs = self._outputs(node, ins)
        if len(outs) != len(node.outputs):
            raise OpError(node, f"the custom op computes {len(outs)} outputs, the node has {len(node.outputs)}")
        return [TensorType(t.shape, t.dtype) for t in outs]

    def reference(self, node, *xs):
        if self.reference_fn is None:
            raise NotImplementedError
        out = self.reference_fn(*xs, **node.attrs)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    def compute(self, node, *ins):
        return self._outputs(node, list(ins))


def register_op(domain, op_type, compute, reference=None, pattern=Pattern.OPAQUE):
    """Register a te compute as the custom ONNX op domain::op_type (see the module docstring);
    registering the same op again replaces it. pattern: how fusion may combine it (OPAQUE keeps it
    a kernel of its own; ELEMWISE lets its neighbours fuse into it)."""
    if not domain or domain in ("ai.onnx",) or not op_type:
        raise AotError("register_op: give a custom domain (not the standard ONNX one) and an op type")
    key = custom_key(domain, op_type)
    REGISTRY[key] = CustomOp(key, compute, reference, pattern)
    return REGISTRY[key]
