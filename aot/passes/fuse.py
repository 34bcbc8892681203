"""FuseOps: partition the graph into groups that each become one kernel.

The rules follow TVM's pattern kinds: a group has at most one anchor (conv/dense/pool:
OUT_ELEMWISE_FUSABLE, or a reduction: COMM_REDUCE) plus the elementwise/broadcast ops that
consume its result at the same shape; elementwise/broadcast/injective chains fuse together
and into a following reduction. A value read by more than one node is never fused away,
so every group has a single exit and can run at its last node's position.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ops import Pattern, get_op


@dataclass
class Group:
    nodes: list
    kind: Pattern
    anchor: object = None
    alias: bool = False
    inputs: list = field(default_factory=list)    # external values read (constants included)
    outputs: list = field(default_factory=list)   # values leaving the group

    @property
    def op_names(self):
        return [n.op for n in self.nodes]


def snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _can_fuse(pg: Group, node, v):
    pat = get_op(node.op).pattern
    if pg.kind == Pattern.OPAQUE or len(pg.outputs) != 1:
        return False
    if pat <= Pattern.BROADCAST:
        if pg.kind <= Pattern.INJECTIVE:
            return True
        return (pg.kind in (Pattern.OUT_ELEMWISE_FUSABLE, Pattern.COMM_REDUCE)
                and len(node.outputs) == 1 and v.type.shape == node.outputs[0].type.shape)
    if pat in (Pattern.INJECTIVE, Pattern.COMM_REDUCE):
        return pg.kind <= Pattern.INJECTIVE
    return False


def fuse_ops(graph):
    """Returns the list of groups in execution order."""
    uses = graph.consumers()
    out_ids = {id(v) for v in graph.outputs}
    group_of, groups = {}, []
    for n in graph.nodes:
        op = get_op(n.op)
        if op.alias:
            g = Group([n], op.pattern, alias=True)
        else:
            g = Group([n], op.pattern, anchor=n if op.pattern >= Pattern.COMM_REDUCE else None)
            merged = []
            for v in n.inputs:
                if v is None or v.producer is None:
                    continue
                pg = group_of[id(v.producer)]
                if pg.alias or pg in merged or id(v) in out_ids or len(uses.get(id(v), [])) != 1:
                    continue
                if not _can_fuse(pg, n, v):
                    continue
                if pg.anchor is not None and (g.anchor is not None or any(m.anchor for m in merged)):
                    continue
                merged.append(pg)
            for pg in merged:
                groups.remove(pg)
                g.nodes = pg.nodes + g.nodes
                if pg.anchor is not None:
                    g.anchor = pg.anchor
                g.kind = max(g.kind, pg.kind)
            g.nodes.sort(key=graph.nodes.index)
        for m in g.nodes:
            group_of[id(m)] = g
        g.outputs = list(n.outputs)
        groups.append(g)
    for g in groups:
        inside = {id(o) for m in g.nodes for o in m.outputs}
        seen = set()
        for m in g.nodes:
            for v in m.inputs:
                if v is not None and id(v) not in inside and id(v) not in seen:
                    seen.add(id(v))
                    g.inputs.append(v)
    return groups


def group_name(g: Group) -> str:
    parts = [snake(op) for op in g.op_names]
    if len(parts) > 4:
        parts = parts[:4] + [f"and_{len(parts) - 4}_more"]
    return "fused_" + "_".join(parts)
