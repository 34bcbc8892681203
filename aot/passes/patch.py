"""Patch-based execution (MCUNetV2's idea, for any CNN in one layout): the first stage of a
network, from its input to a cut, runs strip by strip of the cut's rows, and each strip, where
asked, tile by tile of its columns (MCUNetV2's 2-D patches). Each tile computes, through every
layer of the stage, only the box of rows and columns its output box reads (the halos between
tiles are computed twice), so the stage's large intermediates exist one tile at a time; the
tiles' outputs are concatenated, columns within a strip and then the strips, into the cut, which
the layers after it read as before. Columns shrink what a strip of a wide map holds, at the
price of halos on four sides instead of two.

The rewrite is exact: a tile's windows keep their padding only where the full tensor has it (at
its edges), so every output element sees the same taps in the same order.
It works on the graph IR, before fusion, so every strip's layers are ordinary kernels to the
target's schedules (micro-kernels included), the in-bounds verifier and the memory planner:
a tile's input is a Slice of its box, which fusion folds into the first layer reading it (that
layer reads the box where it lies in the source, aot/passes/fuse.py), and the concat's inputs
are placed in their slices of the cut.

stage_cuts(graph) lists where a stage may end; patch(graph, cut, tiles, cols) rewrites it.
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
    cols: int = 1           # the cut's columns (most column tiles possible)


@dataclass(frozen=True)
class Patched:
    """What patch() did: the stage's multiply-accumulates before and after (halos recomputed)."""
    cut: str
    tiles: int
    nodes: int
    macs_before: int
    macs_after: int
    cols: int = 1

    @property
    def extra_macs(self):
        return self.macs_after - self.macs_before


def _window(n, d=0):
    """(kernel extent, stride, dilation, pad before, pad after) of a window op along spatial
    dimension d (0 the rows, 1 the columns), or None."""
    a = n.attrs
    ks = a.get("kernel_shape")
    if ks is None or len(ks) != 2 or a.get("ceil_mode", 0) or a.get("auto_pad", "NOTSET") not in ("NOTSET", None):
        return None
    st, dl, pads = a.get("strides", [1, 1]), a.get("dilations", [1, 1]), a.get("pads", [0, 0, 0, 0])
    return int(ks[d]), int(st[d]), int(dl[d]), int(pads[d]), int(pads[d + 2])


def _spatial(v):
    t = v.type
    return len(t.shape) == 4 and t.shape[0] == 1


def _rows_free(c, out_shape, axis):
    """A constant operand that is the same for every row and column (it broadcasts over both)."""
    s = c.type.shape
    ks = [a - (len(out_shape) - len(s)) for a in (axis, axis + 1)]
    return all(k < 0 or s[k] == 1 for k in ks)


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
                return "a constant that varies along the rows or columns"
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
            cuts.append(Cut(n.outputs[0].name, k + 1, t.shape[axis], t.nbytes, axis, False, t.shape[axis + 1]))
            readers = uses.get(id(n.outputs[0]), [])
            if len(readers) == 1 and pos[id(readers[0])] == k + 1 and id(readers[0].outputs[0]) not in outs \
                    and _global_average(readers[0], n.outputs[0], axis) is not None:
                p = readers[0].outputs[0]
                cuts.append(Cut(p.name, k + 2, t.shape[axis], p.type.nbytes, axis, True, t.shape[axis + 1]))
    return cuts


def _in_span(n, a, b, h_in, d=0):
    """Input rows [lo, hi) that output rows [a, b) of node n read, and the strip's pads at top
    and bottom (the part of the window outside the input); d=1: the same along the columns."""
    w = _window(n, d) if n.op in WINDOW_OPS else None
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


def patch(graph, cut, tiles, cols=1):
    """(graph with the stage ending at value `cut` run in `tiles` strips of rows, each in `cols`
    tiles of columns, Patched). The input graph is not changed."""
    found = [c for c in stage_cuts(graph) if c.value == cut]
    if not found:
        names = ", ".join(c.value for c in stage_cuts(graph)) or "none"
        raise AotError(f"--patch: '{cut}' is not where a patchable stage ends (the cuts of this model: {names})")
    return patch_at(graph, found[0], tiles, cols)


def patch_at(graph, c, tiles, cols=1):
    """patch() at Cut c, one of stage_cuts(graph) (the search's candidates reuse them)."""
    cut = c.value
    if not 1 <= tiles <= c.rows or not 1 <= cols <= c.cols or tiles * cols < 2:
        raise AotError(f"--patch: {tiles} strips of {cols} columns for '{cut}', which has {c.rows} rows and "
                       f"{c.cols} columns: give 1 to {c.rows} strips and 1 to {c.cols} column tiles, 2 tiles or more")
    g = graph.copy()
    stage, rest = g.nodes[:c.nodes], g.nodes[c.nodes:]
    pool = stage.pop() if c.pooled else None        # summed tile by tile, not run on the whole map
    x, y, ax = stage_input(g), stage[-1].outputs[0], c.axis
    axes = (ax, ax + 1)
    nodes, parts, strip_parts = [], [], []
    rb, cb = strips(c.rows, tiles), strips(c.cols, cols)

    def spans(n, box, v):
        """(lo, hi, pad before, pad after) of v's rows and columns that n's output box reads;
        strips of whole rows read every column, their windows' pads as they were."""
        out = [_in_span(n, *box[0], v.type.shape[ax])]
        if cols == 1:
            w = _window(n, 1) if n.op in WINDOW_OPS else None
            return out + [(0, v.type.shape[ax + 1], *((w[3], w[4]) if w else (0, 0)))]
        return out + [_in_span(n, *box[1], v.type.shape[ax + 1], 1)]

    for t, u in ((t, u) for t in range(tiles) for u in range(cols)):
        tag = f"{t}" if cols == 1 else f"{t}_{u}"
        # the box of every value this tile reads: rows [lo, hi) and columns [lo, hi)
        need = {id(y): ((rb[t], rb[t + 1]), (cb[u], cb[u + 1]))}
        for n in reversed(stage):
            box = need[id(n.outputs[0])]
            for v in n.inputs:
                if v is None or v.is_const:
                    continue
                got = tuple(sp[:2] for sp in spans(n, box, v))
                old = need.get(id(v))
                need[id(v)] = got if old is None else tuple((min(o[0], e[0]), max(o[1], e[1]))
                                                            for o, e in zip(old, got))
        have = {id(x): (x, (0, 0))}      # value -> (this tile's version of it, its first row and column)

        def box_of(v, box, n):
            src, first = have[id(v)]
            shape = list(src.type.shape)
            if all((lo - f, hi - f) == (0, shape[a]) for (lo, hi), f, a in zip(box, first, axes)):
                return src
            begin = [0] * 4
            for (lo, hi), f, a in zip(box, first, axes):
                begin[a], shape[a] = lo - f, hi - lo
            (r0, r1), (c0, c1) = box
            where = f"rows{r0}_{r1}" if cols == 1 else f"rows{r0}_{r1}_cols{c0}_{c1}"
            out = Value(f"{v.name}@{where}@patch{tag}", TensorType(shape, src.type.dtype))
            nodes.append(Node("Slice", f"{n.name}@patch{tag}/rows", [src],
                              [out], {"begin": begin, "step": [1] * 4, "count": shape}))
            return out

        for n in stage:
            box = need[id(n.outputs[0])]
            attrs = dict(n.attrs)
            ins = []
            for v in n.inputs:
                if v is None or v.is_const:
                    ins.append(v)
                    continue
                sp = spans(n, box, v)
                ins.append(box_of(v, [e[:2] for e in sp], n))
                if n.op in WINDOW_OPS:
                    p = list(attrs["pads"])
                    (_, _, p[0], p[2]), (_, _, p[1], p[3]) = sp
                    attrs["pads"] = p
            node = Node(n.op, f"{n.name}@patch{tag}", ins, [], attrs)
            (typ,) = get_op(n.op).infer(node)
            made = tuple(typ.shape[a] for a in axes)
            if made != tuple(b - a for a, b in box):
                raise AotError(f"--patch: tile {tag} of '{n.name}' would make {made[0]} rows and {made[1]} "
                               f"columns, not {box[0][1] - box[0][0]} and {box[1][1] - box[1][0]}")
            out = Value(f"{n.outputs[0].name}@patch{tag}", typ)
            node.outputs = [out]
            out.producer = node
            nodes.append(node)
            have[id(n.outputs[0])] = (out, (box[0][0], box[1][0]))
        part = have[id(y)][0]
        if pool is not None:        # a running sum: the tiles before's total in, this tile's added
            node = Node("StripSum", f"{pool.name}@patch{tag}", [part] + parts[-1:], [],
                        {"layout": "NHWC" if ax == 1 else "NCHW"})
            (typ,) = get_op("StripSum").infer(node)
            part = Value(f"{pool.outputs[0].name}@patch{tag}", typ)
            node.outputs, part.producer = [part], node
            nodes.append(node)
            parts = [part]          # the running sum so far
        elif cols == 1:
            parts.append(part)
        else:
            strip_parts.append(part)
            if u == cols - 1:       # the strip's tiles side by side, then the strips one above the other
                shape = list(part.type.shape)
                shape[ax + 1] = y.type.shape[ax + 1]
                row = Value(f"{y.name}@patch{t}", TensorType(shape, part.type.dtype))
                nodes.append(Node("Concat", f"{stage[-1].name}@patch{t}/cols", strip_parts, [row],
                                  {"axis": ax + 1}))
                row.producer = nodes[-1]
                parts.append(row)
                strip_parts = []
    done = pool.outputs[0] if pool is not None else y
    joined = Value(done.name, done.type)
    if pool is not None:
        nodes.append(Node("StripMean", f"{pool.name}@patches", parts, [joined], _global_average(pool, y, ax)))
    elif len(parts) == 1:           # one strip of column tiles: its concat is the cut
        last = nodes.pop()
        nodes.append(Node("Concat", f"{stage[-1].name}@patches", last.inputs, [joined], last.attrs))
    else:
        nodes.append(Node("Concat", f"{stage[-1].name}@patches", parts, [joined], {"axis": ax}))
    for n in rest:
        n.inputs = [joined if v is done else v for v in n.inputs]
    out = g.with_nodes(nodes + rest)
    new_stage = [n for n in nodes[:-1] if n.op not in ("Slice", "StripSum", "Concat")]
    return out, Patched(cut, tiles, c.nodes, macs(stage), macs(new_stage), cols)
