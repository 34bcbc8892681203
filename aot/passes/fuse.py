"""FuseOps: partition the graph into groups that each become one kernel.

The rules follow TVM's pattern kinds: a group has at most one anchor (conv/dense/pool:
OUT_ELEMWISE_FUSABLE, or a reduction: COMM_REDUCE) plus the elementwise/broadcast ops that
consume its result at the same shape; elementwise/broadcast/injective chains fuse together
and into a following reduction. A lone Transpose or Slice also folds into the anchor it feeds
(the anchor reads through the permuted or offset index, and the copy's bytes are saved). A value
read by more than one node is never fused away, so every group has a single exit and can run
at its last node's position.

A group's longest chain of nodes is bounded (MAX_FUSE_DEPTH, TVM's max_fuse_depth): a fused
chain lowers to one expression tree, as deep as the chain, that every later stage walks. So is
the size of that tree (MAX_INLINE_SIZE): a stage that reads its input twice (x / (1 + |x|))
doubles the inlined producer, so a chain of such stages would grow exponentially.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ops import Pattern, get_op

MAX_FUSE_DEPTH = 32
MAX_INLINE_SIZE = 1024     # expression nodes of a group's output once every stage is inlined


@dataclass
class Group:
    nodes: list
    kind: Pattern
    anchor: object = None
    alias: bool = False
    inputs: list = field(default_factory=list)    # external values read (constants included)
    outputs: list = field(default_factory=list)   # values leaving the group
    depth: int = 1                                 # nodes on the longest chain inside
    size: int = 1                                  # estimated inlined expression size

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
    if pat == Pattern.OUT_ELEMWISE_FUSABLE:
        return _is_view(pg)
    return False


def _is_view(pg: Group):
    """A group that only re-indexes its input: a Transpose (an ONNX model's NHWC -> NCHW input)
    or a Slice (a patched tile's box of rows and columns, aot/passes/patch.py). It folds into the
    anchor reading it, which then reads the source tensor through the permuted or offset index,
    so the copy never exists: VWW's 110,592-byte transposed input lived beside the first conv
    (issue 16), and a tile's box of columns, which the planner cannot lay over its source as it
    does a band of whole rows, took 2 to 5 KB beside the whole input at a patched stage's peak.
    Anything more (a reshape, arithmetic) stays a kernel of its own: inlined, it would be
    recomputed for every reduction step."""
    return [n.op for n in pg.nodes] in (["Transpose"], ["Slice"])


def _inline_cost(node):
    """(own expression size, {input position: times the inlined input is read}) of a node's
    compute definition, its own non-reduction stages inlined as lowering will inline them."""
    from ..te import tensor as te
    from ..tir.expr import walk
    ins = [te.placeholder(v.type.shape, v.type.dtype, f"p{k}") if v is not None else None
           for k, v in enumerate(node.inputs)]
    pos = {t.uid: k for k, t in enumerate(ins) if t is not None}
    try:
        outs = get_op(node.op).compute(node, *ins)
    except Exception:       # lowering will report it; fusion only needs an estimate
        return 1, {}
    memo = {}

    def cost(t):
        if t.uid not in memo:
            size, reads = 0, {}
            for e in walk(t.op.body):
                size += 1
                if isinstance(e, te.TensorRef):
                    u = e.tensor
                    if u.uid in pos:
                        reads[pos[u.uid]] = reads.get(pos[u.uid], 0) + 1
                    elif not u.is_placeholder:
                        s2, r2 = cost(u)
                        size += s2
                        for k, c in r2.items():
                            reads[k] = reads.get(k, 0) + c
            memo[t.uid] = (min(size, 1 << 30), reads)
        return memo[t.uid]
    size, reads = 0, {}
    for t in outs:
        if not t.is_placeholder:
            s, r = cost(t)
            size += s
            for k, c in r.items():
                reads[k] = reads.get(k, 0) + c
    return max(size, 1), reads


def fuse_ops(graph, region=None):
    """Returns the list of groups in execution order. region: node -> the partition that takes
    it (aot/passes/partition.py claim_nodes) or None; nodes of different regions never fuse."""
    uses = graph.consumers()
    out_ids = {id(v) for v in graph.outputs}
    group_of, groups = {}, []
    for n in graph.nodes:
        op = get_op(n.op)
        if op.alias:
            g = Group([n], op.pattern, alias=True)
        else:
            g = Group([n], op.pattern, anchor=n if op.pattern >= Pattern.COMM_REDUCE else None)
            own, reads = _inline_cost(n)
            g.size = own
            merged = []
            for k, v in enumerate(n.inputs):
                if v is None or v.producer is None:
                    continue
                pg = group_of[id(v.producer)]
                if pg.alias or pg in merged or id(v) in out_ids or len(uses.get(id(v), [])) != 1:
                    continue
                if not _can_fuse(pg, n, v) or pg.depth >= MAX_FUSE_DEPTH:
                    continue
                if region is not None and region(pg.nodes[0]) != region(n):
                    continue
                if pg.anchor is not None and (g.anchor is not None or any(m.anchor for m in merged)):
                    continue
                grown = g.size + reads.get(k, 1) * pg.size
                if grown > MAX_INLINE_SIZE:
                    continue
                g.size = grown
                merged.append(pg)
            for pg in merged:
                groups.remove(pg)
                g.nodes = pg.nodes + g.nodes
                if pg.anchor is not None:
                    g.anchor = pg.anchor
                g.kind = max(g.kind, pg.kind)
                g.depth = max(g.depth, pg.depth + 1)
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
    parts = [re.sub(r"\W+", "_", snake(op)) for op in g.op_names]      # a custom op's key holds "::" and dots
    if len(parts) > 4:
        parts = parts[:4] + [f"and_{len(parts) - 4}_more"]
    return "fused_" + "_".join(parts)
