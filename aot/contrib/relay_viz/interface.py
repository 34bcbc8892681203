"""The pieces a relay visualisation is made of, with TVM's names: VizNode / VizEdge (what a
parser makes of one expression), VizParser (expression -> node and edges), VizGraph (collects
them), Plotter (makes graphs, renders them). DefaultVizParser knows every relay expression kind."""
from __future__ import annotations

import abc

from ...relay.expr import Call, Constant, Function, GlobalVar, Tuple, TupleGetItem, Var

UNKNOWN_TYPE = "unknown"


class VizNode:
    def __init__(self, node_id: str, node_type: str, node_detail: str):
        self._id, self._type, self._detail = node_id, node_type, node_detail

    @property
    def identity(self):
        return self._id

    @property
    def type_name(self):
        return self._type

    @property
    def detail(self):
        return self._detail

    def __repr__(self):
        return f"VizNode(identity: {self._id}, type_name: {self._type}, detail: {self._detail.replace(chr(10), ', ')}"


class VizEdge:
    """An edge from the node start_node to end_node (by identity)."""

    def __init__(self, start_node: str, end_node: str):
        self._start, self._end = start_node, end_node

    @property
    def start(self):
        return self._start

    @property
    def end(self):
        return self._end


class VizParser(abc.ABC):
    @abc.abstractmethod
    def get_node_edges(self, node, relay_param, node_to_id):
        """(VizNode or None, [VizEdge]) for one expression; node_to_id gives every expression's id."""


class VizGraph(abc.ABC):
    @abc.abstractmethod
    def node(self, viz_node):
        """Add a node (they come in post-order: operands first)."""

    @abc.abstractmethod
    def edge(self, viz_edge):
        """Add an edge."""


class Plotter(abc.ABC):
    @abc.abstractmethod
    def create_graph(self, name):
        """A new VizGraph for the function `name`."""

    @abc.abstractmethod
    def render(self, filename):
        """Render every graph made (to filename, or as the plotter chooses when None)."""


def _attr_lines(attrs):
    return [f"{k}: {v}" for k, v in (attrs or {}).items() if v is not None]


class DefaultVizParser(VizParser):
    """Every relay expression kind: a call's arguments point to it, a function's body to it; a
    GlobalVar or an operator name is no node of its own (its call shows it)."""

    def get_node_edges(self, node, relay_param, node_to_id):
        if isinstance(node, Function):
            name = node.attrs.get("Composite", "")
            return (VizNode(node_to_id[node], f"Func {name}", "\n".join(_attr_lines(node.attrs))),
                    [VizEdge(node_to_id[node.body], node_to_id[node])])
        if isinstance(node, Call):
            return self._call(node, node_to_id)
        if isinstance(node, Var):
            detail = f"name_hint: {node.name_hint}"
            t = node.type_annotation
            if t is not None:
                detail += f"\nshape: {tuple(int(d) for d in t.shape)}\ndtype: {t.dtype}"
            kind = "Var(Param)" if node.name_hint in relay_param else "Var(Input)"
            return VizNode(node_to_id[node], kind, detail), []
        if isinstance(node, Tuple):
            return (VizNode(node_to_id[node], "Tuple", ""),
                    [VizEdge(node_to_id[f], node_to_id[node]) for f in node.fields])
        if isinstance(node, TupleGetItem):
            return (VizNode(node_to_id[node], "TupleGetItem", f"idx: {node.index}"),
                    [VizEdge(node_to_id[node.tuple_value], node_to_id[node])])
        if isinstance(node, Constant):
            return VizNode(node_to_id[node], "Const", f"shape: {node.data.shape}, dtype: {node.data.dtype}"), []
        if isinstance(node, (GlobalVar, str)):
            return None, []
        return VizNode(node_to_id[node], UNKNOWN_TYPE, f"don't know how to parse {type(node)}"), []

    def _call(self, node, node_to_id):
        op = node.op
        if isinstance(op, str):
            name, detail = op, _attr_lines(node.attrs)
        elif isinstance(op, Function):
            name, detail = op.attrs.get("Composite", "Anonymous Func"), _attr_lines(op.attrs)
        else:
            name, detail = "GlobalVar", [f"GlobalVar.name_hint: {op.name_hint}"]
        nid = node_to_id[node]
        return VizNode(nid, f"Call {name}", "\n".join(detail)), [VizEdge(node_to_id[a], nid) for a in node.args]
