"""tvm.contrib.relay_viz: draw a relay module, one graph per function ("main" first), through a
parser (expression -> VizNode and VizEdges) and a plotter (TermPlotter: text; DotPlotter: Graphviz)."""
from __future__ import annotations

from ...relay.analysis import post_order_visit
from .dot import DotPlotter, DotVizParser  # noqa: F401
from .interface import Plotter, VizEdge, VizGraph, VizNode, VizParser  # noqa: F401
from .terminal import TermPlotter, TermVizParser


class _Ids(dict):
    """expression -> id: expressions are keyed by identity (an operator name by its text)."""

    def _k(self, e):
        return ("op", e) if isinstance(e, str) else ("expr", id(e))

    def __init__(self):
        super().__init__()
        self._exprs = {}

    def __setitem__(self, e, v):
        self._exprs[self._k(e)] = e
        super().__setitem__(self._k(e), v)

    def __getitem__(self, e):
        return super().__getitem__(self._k(e))

    def __contains__(self, e):
        return super().__contains__(self._k(e))

    def get(self, e, default=None):
        return super().get(self._k(e), default)

    def __iter__(self):
        return (self._exprs[k] for k in super().__iter__())


class RelayVisualizer:
    """RelayVisualizer(mod, relay_param=None, plotter=TermPlotter(), parser=TermVizParser());
    render(filename=None)."""

    def __init__(self, relay_mod, relay_param=None, plotter=None, parser=None):
        self._plotter = plotter if plotter is not None else TermPlotter()
        self._relay_param = relay_param if relay_param is not None else {}
        self._parser = parser if parser is not None else TermVizParser()
        names = [gv.name_hint for gv in relay_mod.get_global_vars()]
        names.sort(key=lambda n: n != "main")                   # main on top
        offset = 0
        for name in names:
            ids = _Ids()

            def number(e, ids=ids, offset=offset):
                if e not in ids:
                    ids[e] = str(len(ids) + offset)
            post_order_visit(relay_mod[name], number)
            offset += len(ids)
            graph = self._plotter.create_graph(name)
            for e in ids:
                viz_node, viz_edges = self._parser.get_node_edges(e, self._relay_param, ids)
                if viz_node is not None:
                    graph.node(viz_node)
                for edge in viz_edges:
                    graph.edge(edge)

    def render(self, filename=None):
        return self._plotter.render(filename=filename)
