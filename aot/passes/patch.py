"""Patch-based execution (MCUNetV2's idea, for any channels-last CNN): the first stage of a
network, from its input to a cut, runs strip by strip of the cut's rows. Each strip computes,
through every layer of the stage, only the rows its output rows read (the halos between strips
are computed twice), so the stage's large intermediates exist one strip at a time; the strips'
outputs are concatenated into the cut, which the layers after it read as before.

The rewrite is exact: a strip's window rows keep their padding only where the full tensor has
it (at its top and bottom edges), so every output element sees the same taps in the same order.
It works on the graph IR, before fusion, so every strip's layers are ordinary kernels to the
target's schedules (micro-kernels included), the in-bounds verifier and the memory planner:
a strip's input is a Slice of rows, which the planner lays over the rows it copies where the
source is in the workspace, and the concat's inputs are placed in their slices of the cut.

stage_cuts(graph) lists where a stage may end; patch(graph, cut, tiles) rewrites it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import AotError
from ..ir.graph import Node, TensorType, Value
from ..ops.registry import Pattern, get_op

# ops with a sliding window over the rows whose padding the rewrite adjusts per strip
WINDOW_OPS = ("Conv", "QConv", "MaxPool", "AveragePool", "QAvgPool", "LpPool")
ROW_AXIS = {"NHWC": 1, "NCHW": 2}


@dataclass(frozen=True)
class Cut:
    """A place a stage may end: `value` (its name) is the only tensor of the stage read after it."""
    value: str
    nodes: int          # the stage is the graph's first `nodes` nodes
    rows: int           # the cut's rows (most strips possible)
    nbytes: int         # the cut's bytes
    axis: int           # the row axis of the stage's tensors (its window layers' layout)
    pooled: bool = False    # the stage ends in a global average pool, summed strip by strip


@dataclass(frozen=True)
class Patched:
    """What patch() did: the stage's multiply-accumulates before and after (halos recomputed)."""
    cut: str
    tiles: int
    nodes: int
    macs_before: int
    macs_after: int

    @property
    def extra_macs(self):
        return self.macs_after - self.macs_before


def _window(n):
    """(kernel rows, stride, dilation, pad top, pad bottom) of a window op over the rows, or None."""
    a = n.attrs
    ks = a.get("kernel_shape")
    if ks is None or len(ks) != 2 or a.get("ceil_mode", 0) or a.get("auto_pad", "NOTSET") not in ("NOTSET", None):
        return None
    st, dl, pads = a.get("strides", [1, 1]), a.get("dilations", [1, 1]), a.get("pads", [0, 0, 0, 0])
    return int(ks[0]), int(st[0]), int(dl[0]), int(pads[0]), int(pads[2])


def _spatial(v):
    t = v.type
    return len(t.shape) == 4 and t.shape[0] == 1


def _rows_free(c, out_shape, axis):
    """A constant operand that is the same for every row (it broadcasts over the row axis)."""
    s = c.type.shape
    k = axis - (len(out_shape) - len(s))
    return k < 0 or s[k] == 1


def _patchable(n, inside, axis=1):
    """Why node n cannot be a layer of a stage (None: it can). inside(v): v is the stage's input
    or a value the stage made; axis: the stage's row axis."""
    if len(n.outputs) != 1 or not _spatial(n.outputs[0]):
        return "not one 4-D batch-1 output"
    acts = [v for v in n.inputs if v is not None and not v.is_const]
    if not acts or not all(inside(v) for v in acts):
        return "reads a tensor from outside the stage"
    out = n.outputs[0].type.shape
    if n.op in WINDOW_OPS:
        if ROW_AXIS[n.attrs.get("layout", "NCHW")] != axis or _window(n) is None or len(acts) != 1 \
                or n.inputs[0] is not acts[0]:
            return "not a 2-D window in the stage's layout"
        return None
    op = get_op(n.op)
    if op.pattern not in (Pattern.ELEMWISE, Pattern.BROADCAST) or op.alias:
        return "not elementwise"
    for v in n.inputs:
        if v is None:
            continue
        if v.is_const:
            if not _rows_free(v, out, axis):
                return "a constant that varies along the rows"
        elif v.type.shape != out:
            return "broadcasts a tensor"
    return None


def _order_kept(n):
    """A Reshape, or a Transpose that moves only axes of extent 1: the elements keep their order."""
    if n.op == "Reshape":
        return True
    if n.op != "Transpose":
        return False
    shape = n.inputs[0].type.shape
    kept = [a for a in n.attrs["perm"] if shape[a] != 1]
    return kept == sorted(kept)


def drop_input_views(graph):
    """(graph, count): reshapes and unit-axis transposes of the graph's input that end in the
    input's own shape (an NHWC model exported through NCHW: Reshape [1, 1, H, W], Transpose back)
    are the input itself; their readers read it, so that a stage can start there. The chains'
    nodes no one reads any more are dropped."""
    g = graph.copy()
    inputs = {id(v) for v in g.inputs if not v.is_const}
    outs = {id(v) for v in g.outputs}
    root_of = {}                # id(view output) -> the input it reorders nothing of
    for n in g.nodes:
        src = n.inputs[0] if n.inputs else None
        if len(n.outputs) == 1 and src is not None and _order_kept(n):
            root = root_of.get(id(src), src if id(src) in inputs else None)
            if root is not None:
                root_of[id(n.outputs[0])] = root
    swap = {n.outputs[0]: root_of[id(n.outputs[0])] for n in g.nodes
            if id(n.outputs[0]) in root_of and n.outputs[0].type.shape == root_of[id(n.outputs[0])].type.shape
            and id(n.outputs[0]) not in outs}
    if not swap:
        return graph, 0
    by_id = {id(k): r for k, r in swap.items()}
    for n in g.nodes:
        n.inputs = [by_id.get(id(v), v) if v is not None else None for v in n.inputs]
    read = set(outs)
    keep, dropped = [], 0
    for n in reversed(g.nodes):        # a chain's nodes die from its end back
        if id(n.outputs[0]) in root_of and id(n.outputs[0]) not in read:
            dropped += 1
            continue
        keep.append(n)
        read |= {id(v) for v in n.inputs if v is not None}
    return g.with_nodes(keep[::-1]), dropped


def stage_input(graph):
    """The graph input a stage starts from: the one the first node reads (None: it reads none,
    or more than one, or one that is not 4-D batch-1). The graph's other inputs are read after
    the stage."""
    if not graph.nodes:
        return None
    ins = {id(v) for v in graph.inputs if not v.is_const}
    xs = [v for v in graph.nodes[0].inputs if v is not None and id(v) in ins]
    return xs[0] if len(xs) == 1 and _spatial(xs[0]) else None


def _global_average(n, y, axis):
    """Whether node n is a global average pool of y (no padding), whose strips can be summed
    apart: attrs for StripMean (the pixel count, TFLite's int8 rounding and range), else None."""
    shape = y.type.shape
    sp = (shape[1], shape[2]) if axis == 1 else (shape[2], shape[3])
    layout = "NHWC" if axis == 1 else "NCHW"
    if len(n.inputs) != 1 or n.inputs[0] is not y:
        return None
    if n.op == "GlobalAveragePool" and axis == 2:
        return {"count": sp[0] * sp[1]}
    if n.op not in ("AveragePool", "QAvgPool") or n.attrs.get("layout", "NCHW") != layout \
            or list(n.attrs.get("kernel_shape", ())) != list(sp) or any(n.attrs.get("pads", [0] * 4)) \
            or n.attrs.get("ceil_mode", 0) or n.attrs.get("requant") == "float":
        return None
    if n.op == "AveragePool":
        return {"count": sp[0] * sp[1]}
    return {"count": sp[0] * sp[1], "act_min": n.attrs["act_min"], "act_max": n.attrs["act_max"],
            "out_dtype": n.attrs["out_dtype"]}


def stage_cuts(graph):
    """Every Cut of the graph: a prefix of its nodes, all of them row-local layers reading the
    graph's one batch-1 4-D input and each other, in one layout, of which exactly one value (not
    a graph output) is read after the prefix. Only cuts after at least two window layers are
    listed: one layer alone gains nothing."""
    x = stage_input(graph)
    if x is None:
        return []
    windows = [n for n in graph.nodes if n.op in WINDOW_OPS]
    if not windows or windows[0].attrs.get("layout", "NCHW") not in ROW_AXIS:
        return []
    axis = ROW_AXIS[windows[0].attrs.get("layout", "NCHW")]
    made = {id(x)}
    outs = {id(v) for v in graph.outputs}
    uses = graph.consumers()
    pos = {id(n): k for k, n in enumerate(graph.nodes)}
    cuts, windows = [], 0
    for k, n in enumerate(graph.nodes):
        if _patchable(n, lambda v: id(v) in made, axis) is not None:
            break
        made.add(id(n.outputs[0]))
        windows += n.op in WINDOW_OPS
        crossing = [n2.outputs[0] for n2 in graph.nodes[:k + 1]
                    if any(pos[id(u)] > k for u in uses.get(id(n2.outputs[0]), [])) or id(n2.outputs[0]) in outs]
        if windows >= 2 and n.outputs[0].type.shape[axis] >= 2 and len(crossing) == 1 \
                and crossing[0] is n.outputs[0] and id(n.outputs[0]) not in outs:
            t = n.outputs[0].type
            cuts.append(Cut(n.outputs[0].name, k + 1, t.shape[axis], t.nbytes, axis))
            readers = uses.get(id(n.outputs[0]), [])
            if len(readers) == 1 and pos[id(readers[0])] == k + 1 and id(readers[0].outputs[0]) not in outs \
                    and _global_average(readers[0], n.outputs[0], axis) is not None:
                p = readers[0].outputs[0]
                cuts.append(Cut(p.name, k + 2, t.shape[axis], p.type.nbytes, axis, True))
    return cuts


def _in_rows(n, a, b, h_in):
    """Input rows [lo, hi) that output rows [a, b) of node n read, and the strip's pads at top
    and bottom (the part of the window outside the input)."""
    w = _window(n) if n.op in WINDOW_OPS else None
    if w is None:
        return a, b, 0, 0
    k, s, d, pt, _ = w
    first, last = a * s - pt, (b - 1) * s - pt + d * (k - 1) + 1
    lo, hi = max(first, 0), min(last, h_in)
    return lo, hi, lo - first, last - hi


def macs(nodes):
    """Multiply-accumulates of the window layers (elementwise layers cost one per element)."""
    total = 0
    for n in nodes:
        out = n.outputs[0].type
        if n.op in ("Conv", "QConv"):
            w = n.inputs[1].type.shape          # OHWI for channels-last
            total += out.size * w[1] * w[2] * w[3]
        elif n.op in WINDOW_OPS:
            k = n.attrs["kernel_shape"]
            total += out.size * k[0] * k[1]
        else:
            total += out.size
    return total


def strips(rows, tiles):
    """Row boundaries of `tiles` strips as even as they can be."""
    return [rows * t // tiles for t in range(tiles + 1)]


def patch(graph, cut, tiles):
    """(graph with the stage ending at value `cut` run in `tiles` strips, Patched). The input
    graph is not changed."""
    found = [c for c in stage_cuts(graph) if c.value == cut]
    if not found:
        names = ", ".join(c.value for c in stage_cuts(graph)) or "none"
        raise AotError(f"--patch: '{cut}' is not where a patchable stage ends (the cuts of this model: {names})")
    c = found[0]
    if not 2 <= tiles <= c.rows:
        raise AotError(f"--patch: {tiles} strips for '{cut}', which has {c.rows} rows: give 2 to {c.rows}")
    g = graph.copy()
    stage, rest = g.nodes[:c.nodes], g.nodes[c.nodes:]
    pool = stage.pop() if c.pooled else None        # summed strip by strip, not run on the whole map
    x, y, ax = stage_input(g), stage[-1].outputs[0], c.axis
    nodes, parts = [], []
    bounds = strips(c.rows, tiles)
    for t in range(tiles):
        need = {id(y): (bounds[t], bounds[t + 1])}
        for n in reversed(stage):
            a, b = need[id(n.outputs[0])]
            for v in n.inputs:
                if v is None or v.is_const:
                    continue
                lo, hi, _, _ = _in_rows(n, a, b, v.type.shape[ax])
                old = need.get(id(v))
                need[id(v)] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
        have = {id(x): (x, 0)}      # value -> (this strip's version of it, its first row)

        def rows_of(v, lo, hi, n):
            src, first = have[id(v)]
            if (lo - first, hi - first) == (0, src.type.shape[ax]):
                return src
            shape = list(src.type.shape)
            begin = [0] * 4
            begin[ax], shape[ax] = lo - first, hi - lo
            out = Value(f"{v.name}@rows{lo}_{hi}@patch{t}", TensorType(shape, src.type.dtype))
            nodes.append(Node("Slice", f"{n.name}@patch{t}/rows", [src],
                              [out], {"begin": begin, "step": [1] * 4, "count": shape}))
            return out

        for n in stage:
            a, b = need[id(n.outputs[0])]
            attrs = dict(n.attrs)
            ins = []
            for v in n.inputs:
                if v is None or v.is_const:
                    ins.append(v)
                    continue
                lo, hi, top, bottom = _in_rows(n, a, b, v.type.shape[ax])
                ins.append(rows_of(v, lo, hi, n))
                if n.op in WINDOW_OPS:
                    p = list(attrs["pads"])
                    p[0], p[2] = top, bottom
                    attrs["pads"] = p
            node = Node(n.op, f"{n.name}@patch{t}", ins, [], attrs)
            (typ,) = get_op(n.op).infer(node)
            if typ.shape[ax] != b - a:
                raise AotError(f"--patch: strip {t} of '{n.name}' would make {typ.shape[ax]} rows, not {b - a}")
            out = Value(f"{n.outputs[0].name}@patch{t}", typ)
            node.outputs = [out]
            out.producer = node
            nodes.append(node)
            have[id(n.outputs[0])] = (out, a)
        part = have[id(y)][0]
        if pool is not None:        # a running sum: the strips before's total in, this strip's added
            node = Node("StripSum", f"{pool.name}@patch{t}", [part] + parts[-1:], [],
                        {"layout": "NHWC" if ax == 1 else "NCHW"})
            (typ,) = get_op("StripSum").infer(node)
            part = Value(f"{pool.outputs[0].name}@patch{t}", typ)
            node.outputs, part.producer = [part], node
            nodes.append(node)
            parts = [part]          # the running sum so far
        else:
            parts.append(part)
    done = pool.outputs[0] if pool is not None else y
    joined = Value(done.name, done.type)
    if pool is not None:
        nodes.append(Node("StripMean", f"{pool.name}@patches", parts, [joined], _global_average(pool, y, ax)))
    else:
        nodes.append(Node("Concat", f"{stage[-1].name}@patches", parts, [joined], {"axis": ax}))
    for n in rest:
        n.inputs = [joined if v is done else v for v in n.inputs]
    out = g.with_nodes(nodes + rest)
    new_stage = [n for n in nodes[:-1] if n.op not in ("Slice", "StripSum")]
    return out, Patched(cut, tiles, c.nodes, macs(stage), macs(new_stage))
