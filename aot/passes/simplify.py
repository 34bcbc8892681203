"""Algebraic simplification: identities, batch-norm folding, dead code, explicit output copies."""
from __future__ import annotations

import numpy as np

from ..ir.graph import Node, TensorType, Value
from . import graph_pass
from .fold_constants import compact


def _rewire(graph, mapping):
    """Replace uses of values (by id) with others, in nodes and graph outputs."""
    def m(v):
        while v is not None and id(v) in mapping:
            v = mapping[id(v)]
        return v
    for n in graph.nodes:
        n.inputs = [m(v) for v in n.inputs]
    graph.outputs = [m(v) for v in graph.outputs]


@graph_pass
def remove_identities(graph):
    """Identity and (inference) Dropout are no-ops."""
    mapping, nodes = {}, []
    for n in graph.nodes:
        if n.op in ("Identity", "Dropout"):
            mapping[id(n.outputs[0])] = n.inputs[0]
            for extra in n.outputs[1:]:      # Dropout's mask in inference mode
                extra.const, extra.producer = np.broadcast_to(np.True_, extra.type.shape), None
        else:
            nodes.append(n)
    g = graph.with_nodes(nodes)
    _rewire(g, mapping)
    return g, len(graph.nodes) - len(nodes)


def _const(name, arr):
    arr = compact(np.asarray(arr))
    return Value(name, TensorType(arr.shape, str(arr.dtype)), arr)


def _bn_affine(bn):
    scale, b, mean, var = (v.const.astype(np.float64) for v in bn.inputs[1:5])
    a = scale / np.sqrt(var + bn.attrs["epsilon"])
    return a, b - mean * a


def _scale_rows(w, a):
    """w * a[m] per output channel, keeping a splat/broadcast w compact (no dense copy)."""
    base = w
    if any(st == 0 for st in w.strides):
        base = np.ascontiguousarray(w[tuple(slice(0, 1) if st == 0 else slice(None) for st in w.strides)])
    scaled = base.astype(np.float64) * a.reshape((-1,) + (1,) * (w.ndim - 1))
    return np.broadcast_to(scaled.astype(w.dtype), w.shape)


@graph_pass
def fold_batchnorm(graph):
    """Conv -> BatchNorm becomes one Conv with scaled weights; other constant BatchNorms become Mul+Add."""
    uses = graph.consumers()
    out_ids = {id(v) for v in graph.outputs}
    nodes, removed, count = [], set(), 0
    for n in graph.nodes:
        if n.op != "BatchNormalization" or not all(v.is_const for v in n.inputs[1:5]):
            continue
        x = n.inputs[0]
        prod = x.producer
        a, c = _bn_affine(n)
        if (prod is not None and prod.op == "Conv" and prod.inputs[1].is_const
                and (len(prod.inputs) < 3 or prod.inputs[2] is None or prod.inputs[2].is_const)
                and len(uses.get(id(x), [])) == 1 and id(x) not in out_ids):
            w = prod.inputs[1].const
            new_w = _scale_rows(w, a)
            b0 = prod.inputs[2].const.astype(np.float64) if len(prod.inputs) > 2 and prod.inputs[2] is not None else 0.0
            new_b = (b0 * a + c).astype(w.dtype)
            conv = Node("Conv", prod.name, [prod.inputs[0], _const(prod.inputs[1].name + "_bn", new_w),
                                            _const(n.name + "_bias", new_b)], [n.outputs[0]], prod.attrs)
            removed.add(id(prod))
            removed.add(id(n))
            nodes.append((id(n), [conv]))
            count += 1
        else:
            rank = len(x.type.shape)
            sh = (-1,) + (1,) * (rank - 2)
            t = Value(n.name + "_scaled", x.type)
            mul = Node("Mul", n.name + "_mul", [x, _const(n.name + "_a", a.astype(np.float32).reshape(sh))], [t])
            add = Node("Add", n.name + "_add", [t, _const(n.name + "_c", c.astype(np.float32).reshape(sh))],
                       [n.outputs[0]])
            removed.add(id(n))
            nodes.append((id(n), [mul, add]))
            count += 1
    if not count:
        return graph, 0
    repl = dict(nodes)
    out = []
    for n in graph.nodes:
        if id(n) in repl:
            out.extend(repl[id(n)])
        elif id(n) not in removed:
            out.append(n)
    return graph.with_nodes(out), count


@graph_pass
def eliminate_dead_code(graph):
    live = {id(v) for v in graph.outputs}
    keep = []
    for n in reversed(graph.nodes):
        if any(id(o) in live for o in n.outputs):
            keep.append(n)
            live.update(id(v) for v in n.inputs if v is not None)
    keep.reverse()
    return graph.with_nodes(keep), len(graph.nodes) - len(keep)


@graph_pass
def materialize_outputs(graph):
    """Each graph output must be written by a kernel into the user's own buffer.

    An output that is a constant, a graph input, another output, or reaches another output
    or an input only through aliases (reshape) gets an explicit Copy."""
    from ..ops.registry import alias_root as root
    nodes = list(graph.nodes)
    seen_roots, new_outputs, copies = set(), [], 0
    in_ids = {id(v) for v in graph.inputs}

    for v, name in zip(graph.outputs, graph.output_names):
        r = root(v)
        if v.is_const or id(r) in in_ids or r.is_const or id(r) in seen_roots:
            out = Value(name, v.type)
            nodes.append(Node("Copy", f"copy_{name}", [v], [out]))
            v = out
            copies += 1
        seen_roots.add(id(root(v)))
        new_outputs.append(v)
    return graph.with_nodes(nodes, new_outputs), copies
