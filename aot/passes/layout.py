"""Channels-last layout for float 2-D conv chains (host CPUs): NCHW Conv and pools become their
NHWC form, elementwise ops between them follow, and Transposes stand only where a chain meets
a node that stays NCHW (or a graph output).

Why: the host rules put output channels in SIMD lanes. In NCHW the lanes of one pixel are a
plane apart, so every kernel's results are stored (and a residual Add's operand read) one
element per plane, 4 KB apart for a 32x32 plane (cache-set conflicts); a depthwise conv's
channel lanes read one plane each. Channels-last makes the lanes consecutive in every
activation: vector stores, vector loads for depthwise, and a model imported from TensorFlow
(NHWC input, then an NCHW Transpose) loses its input Transpose as well.

The pass is a graph rewrite only: each converted node is the same op with attr layout="NHWC"
(the ops compute both layouts), its weights transposed to [M, kh, kw, C/g] at compile time.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorType, Value
from ..ops.registry import get_op
from . import graph_pass
from .fold_constants import compact

TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]
UNARY = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Selu",
         "Softplus", "Exp", "Neg", "Abs", "Sqrt", "Erf", "Identity", "PRelu"}
BINARY = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum"}     # Sum: of two inputs
POOLS = {"MaxPool", "AveragePool"}
MAX_COPIES_PER_CONV = 4     # a Transpose kernel left standing per this many NHWC convs, at most


def _float4(v):
    return v is not None and len(v.type.shape) == 4 and v.type.dtype == "float32"


def _convertible(n):
    """A node whose NHWC form computes the same tensor (transposed)."""
    if n.attrs.get("layout", "NCHW") != "NCHW" or not n.inputs or not _float4(n.inputs[0]) or len(n.outputs) != 1:
        return False
    if n.op == "Conv":
        w = n.inputs[1]
        return w.is_const and len(w.type.shape) == 4 and all(v is None or v.is_const for v in n.inputs[2:])
    return n.op in POOLS


def _worth(graph):
    """Whether the rewrite pays for its Transposes: a chain of two or more convs/pools, or one
    reading an NHWC input made NCHW (that Transpose goes away). A lone NCHW conv would gain a
    Transpose kernel back to NCHW and save nothing."""
    conv = [n for n in graph.nodes if _convertible(n)]
    from_nhwc = any(n.inputs[0].producer is not None and n.inputs[0].producer.op == "Transpose"
                    and list(n.inputs[0].producer.attrs["perm"]) == TO_NCHW for n in conv)
    return len(conv) >= 2 or from_nhwc


class _Rewrite:
    def __init__(self, graph):
        self.graph, self.nodes, self.count = graph, [], 0
        self.nhwc = {}       # id(NCHW value) -> the same tensor channels-last
        self.names = {v.name for n in graph.nodes for v in n.inputs + n.outputs if v is not None}

    def value(self, base, type_):
        name = base
        while name in self.names:
            name += "_"
        self.names.add(name)
        return Value(name, type_)

    def const(self, base, arr):
        arr = compact(np.ascontiguousarray(arr))
        v = self.value(base, TensorType(arr.shape, str(arr.dtype)))
        v.const = arr
        return v

    def node(self, op, name, inputs, attrs, out=None):
        """A typed node appended in order; its output value (`out`, re-typed, or a new one)."""
        out = out or self.value(name, TensorType((), "float32"))
        n = Node(op, name, inputs, [out], attrs)
        out.type = get_op(op).infer(n)[0]
        out.producer = n
        self.nodes.append(n)
        return out

    def last(self, v):
        """v channels-last: known, or a Transpose added."""
        if id(v) not in self.nhwc:
            self.nhwc[id(v)] = self.node("Transpose", v.name + "_nhwc", [v], {"perm": TO_NHWC})
        return self.nhwc[id(v)]

    def operand(self, v, shape):
        """A binary op's other operand channels-last: a converted value of the same shape, or a
        constant broadcast to it (a per-channel [1, C, 1, 1] bias); else None."""
        if id(v) in self.nhwc and v.type.shape == shape:
            return self.nhwc[id(v)]
        if v.is_const and len(v.type.shape) <= 4:
            c = np.asarray(v.const).reshape((1,) * (4 - v.const.ndim) + v.const.shape)
            if all(d in (1, s) for d, s in zip(c.shape, shape)):
                return self.const(v.name + "_nhwc", np.transpose(c, TO_NHWC))
        return None

    def converted(self, n, ins, attrs=None):
        """n's NHWC form on channels-last inputs; n's own output becomes a Transpose back (dead
        code when every consumer takes the channels-last value)."""
        y = n.outputs[0]
        last = self.node(n.op, n.name, ins, dict(n.attrs, **(attrs or {})),
                         out=self.value(y.name + "_nhwc", y.type))
        self.nhwc[id(y)] = last
        self.node("Transpose", y.name + "_nchw", [last], {"perm": TO_NCHW}, out=y)
        self.count += 1

    def shuffle(self, n):
        """A channel shuffle (ShuffleNet: Reshape [N, g, C/g, H, W], Transpose [0, 2, 1, 3, 4],
        Reshape [N, C, H, W]) ending at n, of a channels-last tensor: the same permutation of
        the channels on the NHWC form (Reshape [N, H, W, g, C/g], Transpose [0, 1, 2, 4, 3],
        Reshape), so the chain stays channels-last; else False."""
        t = n.inputs[0].producer if n.op == "Reshape" and n.inputs[0] is not None else None
        r = t.inputs[0].producer if t is not None and t.op == "Transpose" else None
        if r is None or r.op != "Reshape" or list(t.attrs["perm"]) != [0, 2, 1, 3, 4]:
            return False
        x, y = r.inputs[0], n.outputs[0]
        if not _float4(x) or id(x) not in self.nhwc or y.type.shape != x.type.shape:
            return False
        nn, c, h, w = x.type.shape
        _, g, cg, h2, w2 = r.outputs[0].type.shape
        if (h2, w2) != (h, w) or g * cg != c:
            return False
        split = self.node("Reshape", r.name + "_nhwc", [self.nhwc[id(x)]], {"shape": [nn, h, w, g, cg]})
        swapped = self.node("Transpose", t.name + "_nhwc", [split], {"perm": [0, 1, 2, 4, 3]})
        self.converted(n, [swapped], {"shape": [nn, h, w, c]})
        return True

    def visit(self, n):
        x = n.inputs[0] if n.inputs else None
        if self.shuffle(n):
            return
        if n.op == "Transpose" and _float4(x) and list(n.attrs["perm"]) == TO_NCHW:
            # a tensor made NCHW (an imported NHWC input): its channels-last form is its input
            self.nodes.append(n)
            self.nhwc[id(n.outputs[0])] = x
            return
        if _convertible(n):
            ins = [self.last(x)]
            if n.op == "Conv":
                w = n.inputs[1]
                ins.append(self.const(w.name + "_ohwi", np.transpose(np.asarray(w.const), TO_NHWC)))
                ins += n.inputs[2:]
            self.converted(n, ins, {"layout": "NHWC"})
            return
        # a Concat stays NCHW: channels-last, its inputs would no longer be slices of it written
        # in place but copies, which measured slower on concat-heavy networks (commit 21ced54)
        if _float4(x) and id(x) in self.nhwc and len(n.outputs) == 1 and n.outputs[0].type.shape == x.type.shape:
            if n.op in UNARY and all(v is None or v.is_const and v.const.size == 1 for v in n.inputs[1:]):
                self.converted(n, [self.nhwc[id(x)]] + n.inputs[1:])
                return
            if n.op in BINARY and len(n.inputs) == 2:
                other = self.operand(n.inputs[1], x.type.shape)
                if other is not None:
                    self.converted(n, [self.nhwc[id(x)], other])
                    return
        if n.op in BINARY and len(n.inputs) == 2 and _float4(n.inputs[1]) and id(n.inputs[1]) in self.nhwc \
                and n.outputs[0].type.shape == n.inputs[1].type.shape:
            other = self.operand(x, n.inputs[1].type.shape)
            if other is not None:
                self.converted(n, [other, self.nhwc[id(n.inputs[1])]])
                return
        self.nodes.append(n)


def _eliminate_dead(nodes, outputs):
    live = {id(v) for v in outputs}
    keep = []
    for n in reversed(nodes):
        if any(id(o) in live for o in n.outputs):
            keep.append(n)
            live.update(id(v) for v in n.inputs if v is not None)
    return keep[::-1]


def channels_last(graph):
    """Float NCHW Conv/pool chains rewritten channels-last (see the module docstring); the
    count is the nodes converted (none: the graph as it was)."""
    if not _worth(graph):
        return graph, 0
    out = _rewritten(graph)
    return (out, sum(n.attrs.get("layout") == "NHWC" for n in out.nodes)) if out is not None else (graph, 0)


@graph_pass
def _rewritten(graph):
    """The rewrite on the pass's own copy of the graph; None where it does not pay."""
    r = _Rewrite(graph)
    for n in graph.nodes:
        r.visit(n)
    if not r.count:
        return None
    nodes = _eliminate_dead(r.nodes, graph.outputs)
    # each Transpose left standing is a copy kernel: where the chains keep leaving NHWC (a
    # ShuffleNet's channel shuffles reshape NCHW data) the copies cost more than the layout saves
    added = sum(n.op == "Transpose" for n in nodes) - sum(n.op == "Transpose" for n in graph.nodes)
    convs = sum(n.op == "Conv" for n in nodes if n.attrs.get("layout") == "NHWC")
    if added > max(1, convs // MAX_COPIES_PER_CONV):
        return None
    return graph.with_nodes(nodes)
