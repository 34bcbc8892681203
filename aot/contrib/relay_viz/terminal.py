"""Relay drawn as text for a terminal, an AST dump: each function a tree from its root, a
node's operands below it ("|--" for all but the last, "`--" for the last)."""
from __future__ import annotations

from ...relay.expr import Call, Function, GlobalVar
from .interface import DefaultVizParser, Plotter, VizEdge, VizGraph, VizNode, VizParser


class TermVizParser(VizParser):
    """Calls point to their callee and arguments; operators and GlobalVars are nodes of their own."""

    def __init__(self):
        self._default_parser = DefaultVizParser()

    def get_node_edges(self, node, relay_param, node_to_id):
        nid = node_to_id.get(node) if not isinstance(node, str) else node_to_id[node]
        if isinstance(node, Call):
            return VizNode(nid, "Call", ""), [VizEdge(node_to_id[x], nid) for x in [node.op] + list(node.args)]
        if isinstance(node, GlobalVar):
            return VizNode(nid, "GlobalVar", node.name_hint), []
        if isinstance(node, str):                # an operator, by name
            return VizNode(nid, node, ""), []
        if isinstance(node, Function):
            return VizNode(nid, "Func", str(node.params)), [VizEdge(node_to_id[node.body], nid)]
        return self._default_parser.get_node_edges(node, relay_param, node_to_id)


class TermNode:
    def __init__(self, viz_node):
        self.type = viz_node.type_name
        self.other_info = viz_node.detail.replace("\n", ", ")      # one line per node


class TermGraph(VizGraph):
    """A function as a tree: edges are drawn from the consumer to its operands (the reverse of the
    parser's direction, operands -> consumer), the root is the node added last."""

    def __init__(self, name):
        self._name = name
        self._graph = {}             # node id -> the ids drawn below it
        self._id_to_term_node = {}
        self._order = []             # ids as added (post-order)

    def node(self, viz_node):
        self._order.append(viz_node.identity)
        self._graph.setdefault(viz_node.identity, [])
        self._id_to_term_node[viz_node.identity] = TermNode(viz_node)

    def edge(self, viz_edge):
        self._graph.setdefault(viz_edge.end, []).append(viz_edge.start)

    def render(self):
        root = self._order[-1]
        lines = [f"@{self._name}({self._id_to_term_node[root].other_info})"]
        done = set()

        def below(indent, nid):
            if (indent, nid) in done:
                return
            done.add((indent, nid))
            kids = self._graph.get(nid, [])
            for k, kid in enumerate(kids):
                last = k == len(kids) - 1
                n = self._id_to_term_node[kid]
                lines.append(f"{indent}{'`--' if last else '|--'}{n.type} {n.other_info}")
                below(indent + ("   " if last else "|  "), kid)
        below("", root)
        return "\n".join(lines)


class TermPlotter(Plotter):
    def __init__(self):
        self._name_to_graph = {}

    def create_graph(self, name):
        self._name_to_graph[name] = TermGraph(name)
        return self._name_to_graph[name]

    def render(self, filename=None):
        """Print the graphs, or write them to filename."""
        text = "\n".join(g.render() for g in self._name_to_graph.values())
        if filename is None:
            print(text)
        else:
            with open(filename, "w") as f:
                f.write(text)
