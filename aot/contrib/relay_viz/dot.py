"""Relay drawn with Graphviz (DotPlotter): needs the `graphviz` Python package, refused by name
without it."""
from __future__ import annotations

from ...errors import AotError
from .interface import DefaultVizParser, Plotter, VizGraph


class DotVizParser(DefaultVizParser):
    pass


class DotGraph(VizGraph):
    def __init__(self, name, graph_attr=None, node_attr=None, edge_attr=None, get_node_attr=None):
        import graphviz
        self._name, self._get_node_attr = name, get_node_attr
        self._graph = graphviz.Digraph(name=name, graph_attr=graph_attr, node_attr=node_attr, edge_attr=edge_attr)

    def node(self, viz_node):
        attrs = self._get_node_attr(viz_node) if self._get_node_attr else {}
        self._graph.node(viz_node.identity, f"{viz_node.type_name}\n{viz_node.detail}", **attrs)

    def edge(self, viz_edge):
        self._graph.edge(viz_edge.start, viz_edge.end)


class DotPlotter(Plotter):
    def __init__(self, graph_attr=None, node_attr=None, edge_attr=None, get_node_attr=None, render_kwargs=None):
        try:
            import graphviz  # noqa: F401
        except ImportError:
            raise AotError("relay_viz.DotPlotter needs the graphviz package (pip install graphviz); "
                           "TermPlotter draws the same graphs as text") from None
        self._attrs = (graph_attr, node_attr, edge_attr, get_node_attr)
        self._render_kwargs = render_kwargs or {}
        self._graphs = {}

    def create_graph(self, name):
        self._graphs[name] = DotGraph(name, *self._attrs)
        return self._graphs[name]

    def render(self, filename=None):
        for g in self._graphs.values():
            g._graph.render(filename=filename or "plot", **self._render_kwargs)
