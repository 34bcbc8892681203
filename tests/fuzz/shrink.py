"""Delta debugging on an ONNX graph: make a failing model as small as possible while a predicate
(the failure is still there) holds.

Reductions, tried greedily and repeated to a fixpoint:
  - drop a graph output (one stays);
  - cut a node: its outputs become graph inputs fed with the values onnxruntime computes for them
    (so the data the rest of the graph sees is unchanged), and what fed only it goes away;
  - bypass a node: its consumers read one of its inputs of the same shape and dtype instead;
  - make an intermediate tensor the only output (what comes after it goes away);
and after each accepted step the dead nodes, unused inputs, initializers and feeds are removed.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference


def copy(model):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    return m


def cleanup(model, feeds):
    """Without the nodes no output depends on, and the unused inputs, initializers and feeds."""
    m = copy(model)
    g = m.graph
    need = {o.name for o in g.output}
    keep = []
    for n in reversed(list(g.node)):
        if any(o in need for o in n.output):
            keep.append(n)
            need.update(i for i in n.input if i)
    keep.reverse()
    del g.node[:]
    g.node.extend(keep)
    inputs = [i for i in g.input if i.name in need]
    del g.input[:]
    g.input.extend(inputs)
    inits = [i for i in g.initializer if i.name in need]
    del g.initializer[:]
    g.initializer.extend(inits)
    return m, {k: v for k, v in feeds.items() if k in {i.name for i in inputs}}


def value_types(model):
    """{tensor name: TypeProto} for every tensor whose type onnx shape inference knows."""
    inf = shape_inference.infer_shapes(model)
    g = inf.graph
    types = {v.name: v.type for v in list(g.value_info) + list(g.input) + list(g.output)}
    for i in g.initializer:
        types[i.name] = helper.make_tensor_type_proto(i.data_type, list(i.dims))
    return types


def intermediates(model, feeds):
    """{tensor name: value} of every node output, computed by onnxruntime (no optimisation)."""
    from .gen import ort_session
    from .oracle import is_qdq  # noqa: F401
    m = copy(model)
    types = value_types(m)
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in have and o in types and types[o].tensor_type.HasField("shape"):
                m.graph.output.append(helper.make_value_info(o, types[o]))
                have.add(o)
    sess = ort_session(m, optimize=False)
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def drop_output(model, feeds, k):
    m = copy(model)
    del m.graph.output[k]
    return cleanup(m, feeds)


def cut(model, feeds, idx, values):
    """Node idx removed; its outputs (those still needed) become graph inputs fed with `values`."""
    m = copy(model)
    node = m.graph.node[idx]
    new_feeds = dict(feeds)
    for o in node.output:
        if not o:
            continue
        if o not in values:
            return None
        v = np.asarray(values[o])
        m.graph.input.append(helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)))
        new_feeds[o] = v
    del m.graph.node[idx]
    return cleanup(m, new_feeds)


def bypass(model, feeds, idx, types):
    """Candidates: node idx removed, the readers of its output read a same-typed input instead."""
    out = []
    node = model.graph.node[idx]
    if len([o for o in node.output if o]) != 1:
        return out
    o = node.output[0]
    for i in node.input:
        if not i or i not in types or o not in types or types[i] != types[o] or i == o:
            continue
        m = copy(model)
        del m.graph.node[idx]
        for n in m.graph.node:
            for k, x in enumerate(n.input):
                if x == o:
                    n.input[k] = i
        for g_out in m.graph.output:
            if g_out.name == o:
                if i in {t.name for t in m.graph.initializer}:
                    break                   # an initializer cannot be an output: skip
                g_out.name = i
        else:
            if len({g.name for g in m.graph.output}) == len(m.graph.output):
                out.append(cleanup(m, feeds))
    return out


def retarget(model, feeds, name, types):
    """The graph up to tensor `name`, which becomes the only output."""
    m = copy(model)
    del m.graph.output[:]
    m.graph.output.append(helper.make_value_info(name, types[name]))
    return cleanup(m, feeds)


def candidates(model, feeds):
    """Smaller variants of (model, feeds), the most promising first."""
    for k in range(len(model.graph.output)):
        if len(model.graph.output) > 1:
            yield drop_output(model, feeds, k)
    try:
        values = intermediates(model, feeds)
    except Exception:
        values = {}
    n = len(model.graph.node)
    # cutting late nodes first removes the most
    for idx in reversed(range(n)):
        c = cut(model, feeds, idx, values)
        if c is not None:
            yield c
    try:
        types = value_types(model)
    except Exception:
        types = {}
    for idx in reversed(range(n)):
        yield from bypass(model, feeds, idx, types)
    # an intermediate tensor as the only output: the earliest one that still fails is where a
    # wrong value first appears
    outs = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for o in node.output:
            if o and o not in outs and o in types and types[o].tensor_type.HasField("shape"):
                yield retarget(model, feeds, o, types)


def shrink(model, feeds, still_fails, max_tries=400, log=None):
    """The smallest (model, feeds) found that still_fails(model, feeds) (greedy, to a fixpoint
    or max_tries predicate calls)."""
    model, feeds = cleanup(model, feeds)
    tries = 0
    progress = True
    while progress and tries < max_tries:
        progress = False
        for m, f in candidates(model, feeds):
            if len(m.graph.node) == len(model.graph.node) and len(m.graph.output) == len(model.graph.output):
                continue
            tries += 1
            try:
                onnx.checker.check_model(m)
                ok = still_fails(m, f)
            except Exception:
                ok = False
            if ok:
                model, feeds = m, f
                progress = True
                if log:
                    log(f"shrink: {len(model.graph.node)} nodes, {len(model.graph.output)} outputs")
                break
            if tries >= max_tries:
                break
    return model, feeds


def save(model, feeds, directory, name, line):
    """<directory>/<name>.onnx, .npz (the feeds) and .txt (one line: seed, class, what differed)."""
    import os
    os.makedirs(directory, exist_ok=True)
    base = os.path.join(directory, name)
    onnx.save(model, base + ".onnx")
    np.savez_compressed(base + ".npz", **feeds)
    with open(base + ".txt", "w") as f:
        f.write(line.replace("\n", " ")[:600] + "\n")
    return base


def initializer_bytes(model):
    return sum(numpy_helper.to_array(i).nbytes for i in model.graph.initializer)
