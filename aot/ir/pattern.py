"""Dataflow patterns over the graph IR, with TVM's names and meaning (tvm.relay.dataflow_pattern).

    conv = is_op("Conv")(wildcard(), is_constant(), is_constant()).has_attr({"strides": [1, 1]})
    pat = conv.optional(lambda x: is_op("Relu")(x))       # conv, or conv followed by Relu
    pat = is_op("MatMul")(wildcard(), is_constant()) | is_op("Gemm")

A pattern matches a Value: a call pattern matches the value a node of that op produces, its
argument patterns matching the node's inputs position by position (an op pattern that is not
called matches whatever the inputs are). `match(pattern, value)` says whether it matches;
`find(pattern, graph)` returns every match as a Match: the matched nodes (the subgraph), the
values that feed it from outside (its inputs, in the order the pattern binds them), and the
values it produces for the rest of the graph.

Op names are TVM's relay names (nn.conv2d, nn.dense, nn.bias_add, add, ...; relay_names.py says
which graph node each is, with which arguments and attributes) or the graph IR's own (the ONNX
operator names: Conv, MatMul, Relu, ...). has_attr uses the names of the op the pattern names:
relay's (strides, padding, groups, ...) for a relay name, the node's for a graph op. A has_attr
key that the matched op does not have is an error, not a silent mismatch: a pattern written
against another IR's attribute names would otherwise never match.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import numpy as np

from ..errors import AotError
from ..ops import REGISTRY
from .relay_names import RELAY_OPS, Part


class PatternError(AotError):
    """A pattern that cannot mean anything for this IR (an unknown op or attribute)."""


class DFPattern:
    def __call__(self, *args):
        raise PatternError(f"only an op pattern can be called with arguments, not {self!r}")

    def __or__(self, other):
        return AltPattern(self, other)

    def has_attr(self, attrs: dict):
        return AttrPattern(self, dict(attrs))

    def has_dtype(self, dtype):
        return TypePattern(self, dtype=str(dtype))

    def has_shape(self, shape):
        return TypePattern(self, shape=tuple(int(d) for d in shape))

    def optional(self, option_constructor):
        """self, or option_constructor(self) when that matches (an optional epilogue)."""
        return AltPattern(option_constructor(self), self)

    def match(self, value) -> bool:
        return match(self, value)


class WildcardPattern(DFPattern):
    def __repr__(self):
        return "*"


class ConstantPattern(DFPattern):
    def __repr__(self):
        return "const"


class VarPattern(DFPattern):
    def __init__(self, name=""):
        self.name = name

    def __repr__(self):
        return f"%{self.name}" if self.name else "var"


class OpPattern(DFPattern):
    """is_op(name): matches any node of that op; called with argument patterns, a CallPattern."""

    def __init__(self, *ops):
        for op in ops:
            if op in RELAY_OPS:
                continue
            if op not in REGISTRY or getattr(REGISTRY[op], "internal", False):
                names = [k for k in REGISTRY if not k.startswith("_")] + list(RELAY_OPS)
                close = difflib.get_close_matches(op, names, 1)
                raise PatternError(f"is_op('{op}'): no such op, neither a relay op nor one of the graph IR"
                                   + (f" (did you mean '{close[0]}'?)" if close else ""))
        self.ops = tuple(ops)

    def __call__(self, *args):
        return CallPattern(self, [_as_pattern(a) for a in args])

    def __repr__(self):
        return "|".join(self.ops)


class CallPattern(DFPattern):
    def __init__(self, op: OpPattern, args):
        self.op, self.args = op, None if args is None else list(args)   # None: any inputs

    def __repr__(self):
        return f"{self.op!r}({', '.join(repr(a) for a in self.args)})"


class TupleGetItemPattern(DFPattern):
    """Output `index` of a multi-output node (a plain op pattern matches output 0)."""

    def __init__(self, tuple_pattern, index: int):
        self.tuple, self.index = tuple_pattern, int(index)

    def __repr__(self):
        return f"{self.tuple!r}.{self.index}"


class AltPattern(DFPattern):
    def __init__(self, left, right):
        self.left, self.right = _as_pattern(left), _as_pattern(right)

    def __repr__(self):
        return f"({self.left!r} | {self.right!r})"


class AttrPattern(DFPattern):
    def __init__(self, pattern, attrs):
        self.pattern, self.attrs = pattern, attrs

    def __repr__(self):
        return f"{self.pattern!r}.has_attr({self.attrs})"


class TypePattern(DFPattern):
    def __init__(self, pattern, dtype=None, shape=None):
        self.pattern, self.dtype, self.shape = pattern, dtype, shape

    def __repr__(self):
        return f"{self.pattern!r}:{self.dtype or ''}{list(self.shape) if self.shape else ''}"


def _as_pattern(p):
    if isinstance(p, DFPattern):
        return p
    raise PatternError(f"{p!r} is not a pattern (use wildcard(), is_constant(), is_op(...)(...))")


def is_op(*ops) -> OpPattern:
    return OpPattern(*ops)


def wildcard() -> WildcardPattern:
    return WildcardPattern()


def is_constant() -> ConstantPattern:
    return ConstantPattern()


def is_var(name: str = "") -> VarPattern:
    return VarPattern(name)


def is_tuple_get_item(tuple_pattern, index: int) -> TupleGetItemPattern:
    return TupleGetItemPattern(tuple_pattern, index)


@dataclass
class Match:
    """One match of a pattern: a connected subgraph with one root."""
    root: object                                  # the Value the pattern matched
    nodes: list                                   # matched nodes, in graph order
    inputs: list = field(default_factory=list)    # values bound by leaves (constants included)
    outputs: list = field(default_factory=list)   # values the rest of the graph reads (filled by find)


class _State:
    def __init__(self):
        self.nodes, self.inputs = [], []
        self.bound = {}            # id(pattern) -> the value it matched: one pattern object, one value
        self.named = {}            # id(value) -> the op name its call pattern matched it as

    def copy(self):
        s = _State()
        s.nodes, s.inputs, s.bound, s.named = list(self.nodes), list(self.inputs), dict(self.bound), dict(self.named)
        return s


def _attr_equal(have, want):
    if isinstance(have, (list, tuple, np.ndarray)) or isinstance(want, (list, tuple, np.ndarray)):
        try:
            return np.array_equal(np.asarray(have), np.asarray(want))
        except (ValueError, TypeError):
            return False
    return have == want


def _match(p, v, st: _State) -> _State | None:
    """The state after matching p against value v (None: no match). Leaves bind inputs."""
    if id(p) in st.bound:
        return st if st.bound[id(p)] is v else None
    st = _match_new(p, v, st)
    if st is not None:
        st.bound[id(p)] = v
    return st


def _node_args(op, node):
    """(the node's arguments as op takes them, nodes looked through) when node is op, else None."""
    view = RELAY_OPS.get(op)
    if view is not None:
        return view.arguments(node) if view.applies(node) else None
    if node.op != op:
        return None
    ins = list(node.inputs)
    while ins and ins[-1] is None:
        ins.pop()
    return ins, []


def _part_args(part):
    """The inner op's arguments of a node that does two relay ops: its inputs but the bias."""
    return list(part.node.inputs[:2])


def _attrs_of(name, node):
    view = RELAY_OPS.get(name)
    return view.attributes(node) if view is not None else node.attrs


def _match_call(p, index, v, st):
    if isinstance(v, Part):         # the inner op of a node an outer pattern already took
        if v.op not in p.op.ops:
            return None
        candidates = [(v.op, _part_args(v), [])]
        node = v.node
    else:
        if v is None or v.producer is None:
            return None
        node = v.producer
        if index >= len(node.outputs) or node.outputs[index] is not v or any(n is node for n in st.nodes):
            return None
        candidates = []
        for op in p.op.ops:
            found = _node_args(op, node)
            if found is not None:
                candidates.append((op, found[0], found[1]))
    for op, args, extra in candidates:
        if any(n is x for x in extra for n in st.nodes):
            continue
        s2 = st.copy() if len(candidates) > 1 else st
        if not isinstance(v, Part):
            s2.nodes.append(node)
            s2.nodes.extend(extra)
        s2.named[id(v)] = op
        if p.args is None:
            for a in args:
                s2.inputs.extend(_part_args(a) if isinstance(a, Part) else [a] if a is not None else [])
            return s2
        if len(args) != len(p.args):
            continue
        for a, x in zip(p.args, args):
            s2 = _match(a, x, s2)
            if s2 is None:
                break
        if s2 is not None:
            return s2
    return None


def _match_new(p, v, st: _State) -> _State | None:
    if isinstance(v, Part) and not isinstance(p, (OpPattern, CallPattern, AltPattern, AttrPattern, TypePattern)):
        return None          # a node's inner op is matched by that op's pattern only
    if isinstance(p, WildcardPattern):
        st.inputs.append(v)
        return st
    if isinstance(p, ConstantPattern):
        if v is None or not v.is_const:
            return None
        st.inputs.append(v)
        return st
    if isinstance(p, VarPattern):
        if v is None or v.is_const or v.producer is not None or (p.name and v.name != p.name):
            return None
        st.inputs.append(v)
        return st
    if isinstance(p, AltPattern):
        return _match(p.left, v, st.copy()) or _match(p.right, v, st)
    if isinstance(p, TypePattern):
        if v is None or (p.dtype and v.type.dtype != p.dtype) or (p.shape is not None and v.type.shape != p.shape):
            return None
        return _match(p.pattern, v, st)
    if isinstance(p, AttrPattern):
        st2 = _match(p.pattern, v, st)
        if st2 is None:
            return None
        node = v.node if isinstance(v, Part) else v.producer
        name = st2.named.get(id(v), node.op)
        attrs = _attrs_of(name, node)
        for k, want in p.attrs.items():
            if k not in attrs:
                raise PatternError(f"has_attr: op {name} has no attribute '{k}' (node '{node.name}' as {name} has: "
                                   f"{', '.join(sorted(attrs)) or 'none'})")
            if not _attr_equal(attrs[k], want):
                return None
        return st2
    index = 0
    if isinstance(p, TupleGetItemPattern):
        p, index = p.tuple, p.index
    if isinstance(p, OpPattern):
        p = CallPattern(p, None)
    if not isinstance(p, CallPattern):
        raise PatternError(f"{p!r} is not a pattern")
    return _match_call(p, index, v, st)


def match(pattern: DFPattern, value) -> bool:
    return _match(_as_pattern(pattern), value, _State()) is not None


def match_value(pattern: DFPattern, value) -> Match | None:
    """The Match of pattern rooted at value, or None."""
    st = _match(_as_pattern(pattern), value, _State())
    if st is None or not st.nodes:
        return None
    inputs, seen = [], set()
    for x in st.inputs:
        if id(x) not in seen:
            seen.add(id(x))
            inputs.append(x)
    return Match(value, st.nodes, inputs)


def find(pattern: DFPattern, graph, claimed=frozenset()) -> list:
    """Every non-overlapping match in graph, in graph order of their roots, taking the latest
    root first (so that an optional epilogue is included rather than left over). A match is
    kept only when nothing outside it reads a value from inside it other than its root, and no
    node of it is in `claimed` (ids of nodes already taken)."""
    uses = graph.consumers()
    out_ids = {id(v) for v in graph.outputs}
    taken = set(claimed)
    found = []
    for node in reversed(graph.nodes):
        if id(node) in taken:
            continue
        for v in node.outputs:
            m = match_value(pattern, v)
            if m is None or any(id(n) in taken for n in m.nodes):
                continue
            inside = {id(n) for n in m.nodes}
            leaks = [o for n in m.nodes for o in n.outputs if o is not m.root
                     and (id(o) in out_ids or any(id(c) not in inside for c in uses.get(id(o), [])))]
            if leaks:
                continue
            order = {id(n): k for k, n in enumerate(graph.nodes)}
            m.nodes.sort(key=lambda n: order[id(n)])
            m.outputs = [m.root]
            taken.update(inside)
            found.append(m)
            break
    found.reverse()
    return found
