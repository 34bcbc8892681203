"""Partitioning for external backends, TVM's BYOC passes on the graph IR:

  merge_composite        matched patterns -> one Function node each (attrs Composite, body)
  annotate_target        each node a backend claims gets attrs["@compiler"] (first backend wins)
  merge_compiler_regions adjacent claimed nodes of one backend share attrs["@region"], unless
                         the merged region would reach itself through an unclaimed node
  partition_graph        each region -> one Function node (attrs Compiler, global_symbol, body)

Each is Graph -> (Graph, count) and never changes its input. The "@" attributes are
annotations between these passes (no ONNX attribute starts with "@"); partition_graph removes
them. Functions are named tvmgen_<mod>_<compiler>_main_<N>, N dense per backend in graph order;
renumber_functions makes N follow the execution order once the executor has chosen it.
"""
from __future__ import annotations

import heapq

from ..ir.graph import Graph, Node
from ..names import sanitize
from . import graph_pass

COMPILER, REGION = "@compiler", "@region"


def _region_io(nodes, graph):
    """(inputs, outputs) of a set of nodes: values read from outside (constants included, in
    first-use order) and values the rest of the graph reads or returns."""
    inside = {id(n) for n in nodes}
    made = {id(o) for n in nodes for o in n.outputs}
    ins, seen = [], set()
    for n in nodes:
        for x in n.inputs:
            if x is not None and id(x) not in made and id(x) not in seen:
                seen.add(id(x))
                ins.append(x)
    uses = graph.consumers()
    out_ids = {id(v) for v in graph.outputs}
    outs = [o for n in nodes for o in n.outputs
            if id(o) in out_ids or any(id(c) not in inside for c in uses.get(id(o), []))]
    return ins, outs


def _replace(graph, groups):
    """graph with each group of nodes replaced by its Function node (groups: [(nodes, node)]),
    in a topological order that keeps the original order wherever it can."""
    rank = {id(n): k for k, n in enumerate(graph.nodes)}
    owner = {}
    units = []
    for nodes, fn in groups:
        for n in nodes:
            owner[id(n)] = len(units)
        units.append((min(rank[id(n)] for n in nodes), fn))
    for n in graph.nodes:
        if id(n) not in owner:
            owner[id(n)] = len(units)
            units.append((rank[id(n)], n))
    producer = {id(o): owner[id(n)] for n in graph.nodes for o in n.outputs}
    preds = [set() for _ in units]
    for n in graph.nodes:
        for x in n.inputs:
            if x is not None and id(x) in producer and producer[id(x)] != owner[id(n)]:
                preds[owner[id(n)]].add(producer[id(x)])
    succs = [[] for _ in units]
    for u, ps in enumerate(preds):
        for p in ps:
            succs[p].append(u)
    waiting = [len(p) for p in preds]
    ready = [(units[u][0], u) for u in range(len(units)) if not waiting[u]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(units[u][1])
        for s in succs[u]:
            waiting[s] -= 1
            if not waiting[s]:
                heapq.heappush(ready, (units[s][0], s))
    assert len(order) == len(units), "partitioning made a cycle"
    return graph.with_nodes(order)


def _function_node(name, nodes, graph, attrs, inputs=None):
    ins, outs = _region_io(nodes, graph)
    if inputs is not None:          # a composite's inputs in the order its pattern bound them
        assert {id(x) for x in inputs} == {id(x) for x in ins}, "a match's inputs are not its region's"
        ins = list(inputs)
    body = graph.extract(attrs.get("global_symbol", name), nodes, ins, outs)
    fn = Node("Function", name, ins, [], dict(attrs, body=body))
    fn.outputs = list(outs)          # the outer graph's values: its consumers read them unchanged
    for o in outs:
        o.producer = fn
    return fn


@graph_pass
def merge_composite(graph, patterns):
    """patterns: [(name, pattern, predicate or None)] in priority order. Every match (that the
    predicate accepts) becomes a Function node with attrs Composite=name."""
    from ..ir.pattern import find
    claimed, groups = set(), []
    for name, pattern, predicate in patterns:
        for m in find(pattern, graph, claimed):
            if predicate is not None and not predicate(m):
                continue
            claimed.update(id(n) for n in m.nodes)
            groups.append((m, name))
    if not groups:
        return graph, 0
    made = [(m.nodes, _function_node(f"{name}_{m.nodes[-1].name}", m.nodes, graph, {"Composite": name}, m.inputs))
            for m, name in groups]
    return _replace(graph, made), len(made)


@graph_pass
def annotate_target(graph, backends):
    """backends: [(compiler name, claims(node) -> bool)] in priority order; a node goes to the
    first backend that claims it. Returns (graph, nodes annotated)."""
    count = 0
    for n in graph.nodes:
        n.attrs.pop(COMPILER, None)
        for name, claims in backends:
            if claims(n):
                n.attrs[COMPILER] = name
                count += 1
                break
    return graph, count


def _reach(starts, edges, stop=frozenset()):
    seen, todo = set(), list(starts)
    while todo:
        u = todo.pop()
        for w in edges.get(u, ()):
            if w not in seen and w not in stop:
                seen.add(w)
                todo.append(w)
    return seen


@graph_pass
def merge_compiler_regions(graph, compilers=None):
    """Give claimed nodes region ids: a node joins the region of a producer claimed by the
    same backend unless some path leaves the two regions and comes back (the merged region
    would then have to run both before and after that outside node). compilers: the backends
    whose regions merge (default: all; the others get a region per node). Returns (graph, regions)."""
    nodes = graph.nodes
    prod = {id(o): n for n in nodes for o in n.outputs}
    succ, pred = {}, {}
    for n in nodes:
        for x in n.inputs:
            if x is not None and id(x) in prod:
                succ.setdefault(id(prod[id(x)]), set()).add(id(n))
                pred.setdefault(id(n), set()).add(id(prod[id(x)]))
    region = {}                 # id(node) -> region key (id of its first node)
    members = {}                # region key -> set of node ids
    for n in nodes:
        if COMPILER not in n.attrs:
            continue
        region[id(n)] = id(n)
        members[id(n)] = {id(n)}
        for x in n.inputs:
            p = prod.get(id(x)) if x is not None else None
            if p is None or p.attrs.get(COMPILER) != n.attrs[COMPILER] or region[id(p)] == region[id(n)] \
                    or (compilers is not None and n.attrs[COMPILER] not in compilers):
                continue
            a, b = members[region[id(p)]], members[region[id(n)]]
            both = a | b
            # an outside node reachable from the union that reaches back into it: a cycle
            out = _reach(both, succ) - both
            back = _reach(both, pred) - both
            if out & back:
                continue
            keep, gone = region[id(p)], region[id(n)]
            for m in members.pop(gone):
                region[m] = keep
            members[keep] |= b
    ids, count = {}, 0
    for n in nodes:
        n.attrs.pop(REGION, None)
        if id(n) in region:
            key = region[id(n)]
            if key not in ids:
                ids[key] = count
                count += 1
            n.attrs[REGION] = ids[key]
    return graph, count


def function_name(mod, compiler, k):
    return f"tvmgen_{mod}_{sanitize(compiler)}_main_{k}"


@graph_pass
def partition_graph(graph, mod="default"):
    """Each region (nodes sharing @region; a claimed node without one is a region of its own)
    becomes a Function node with Compiler and global_symbol. Returns (graph, functions)."""
    regions = {}
    for n in graph.nodes:
        if COMPILER in n.attrs:
            key = ("r", n.attrs[REGION]) if REGION in n.attrs else ("n", id(n))
            regions.setdefault(key, []).append(n)
    counters, groups = {}, []
    for nodes in regions.values():          # in graph order of their first node
        compiler = nodes[0].attrs[COMPILER]
        k = counters.get(compiler, 0)
        counters[compiler] = k + 1
        sym = function_name(mod, compiler, k)
        groups.append((nodes, _function_node(sym, nodes, graph, {"Compiler": compiler, "global_symbol": sym})))
    for n in graph.nodes:
        n.attrs.pop(COMPILER, None)
        n.attrs.pop(REGION, None)
    if not groups:
        return graph, 0
    return _replace(graph, groups), len(groups)


def external_functions(graph):
    return [n for n in graph.nodes if n.op == "Function" and n.attrs.get("Compiler")]


@graph_pass
def renumber_functions(graph, order, mod="default"):
    """Rename the external functions so that N counts each backend's functions in `order`
    (their node names in execution order). Returns (graph, functions renamed)."""
    by_name = {n.name: n for n in external_functions(graph)}
    counters, renamed = {}, 0
    for name in order:
        n = by_name[name]
        compiler = n.attrs["Compiler"]
        k = counters.get(compiler, 0)
        counters[compiler] = k + 1
        sym = function_name(mod, compiler, k)
        if sym != n.attrs["global_symbol"]:
            renamed += 1
            n.attrs["global_symbol"] = sym
            n.name = sym
            body = n.attrs["body"]
            n.attrs["body"] = Graph(sym, body.inputs, body.outputs, body.nodes, body.opset, body.output_names)
    return graph, renamed


def claim_nodes(graph, backends):
    """TVM's annotate_target for partition targets whose functions are the compiler's own kernels
    (a family's `partition`, cmsis-nn): {id(node): the first backend (priority order) claiming it}.
    FuseOps keeps the claimed nodes of one backend apart from the rest (fuse_ops' region)."""
    out = {}
    for n in graph.nodes:
        for b in backends:
            if b.claims(n):
                out[id(n)] = b.target_name
                break
    return out


def partition_groups(groups, claims, mod="default"):
    """partition_graph for those backends: each fused kernel of claimed nodes (one backend's, as
    FuseOps keeps them) becomes that backend's function, named as partition_graph names them, N in
    execution order (groups: in that order). Returns {id(group): (compiler, symbol)}."""
    out, counters = {}, {}
    for g in groups:
        owners = {claims.get(id(n)) for n in g.nodes}
        if g.alias or len(owners) != 1 or None in owners:
            continue
        compiler = owners.pop()
        k = counters.get(compiler, 0)
        counters[compiler] = k + 1
        out[id(g)] = (compiler, function_name(mod, compiler, k))
    return out
