"""An input in the workspace dies row by row: where the kernels reading a graph input inside the
workspace (--use-workspace-io) take it as Slices of consecutive rows (a patched stage's strips,
aot/passes/patch.py), each run of rows is free once the last strip reading it has run. The input
is then planned as blocks pinned end to end (one buffer to the caller, who writes it whole
before the run), each live until its own last reader, so the strips' tensors and the stage's
output can take the rows already consumed."""
from __future__ import annotations

from ...liveness import Lifetime
from ...ops.registry import alias_root
from ..memory import PIN, Interval, Scratch


def rows_read(node, x):
    """(first byte, end byte) of x that node reads: a Slice of consecutive leading rows reads
    their bytes (of a box of their columns too, the rows' bytes hold all it reads); anything
    else reads all of x."""
    shape = x.type.shape
    whole = (0, x.type.nbytes)
    if node.op != "Slice" or node.inputs[0] is not x:
        return whole
    begin, count, step = node.attrs["begin"], node.attrs["count"], node.attrs["step"]
    cut = [d for d in range(len(shape)) if (begin[d], count[d]) != (0, shape[d])]
    if not cut or step[cut[0]] != 1 or any(shape[d] != 1 for d in range(cut[0])):
        return whole
    row = x.type.nbytes // shape[cut[0]]
    return begin[cut[0]] * row, (begin[cut[0]] + count[cut[0]]) * row


def row_segments(kernels, x, first, align):
    """[(first byte, end byte, last step reading it)] of graph input x, runs of bytes with the
    same last reader (edges on `align` bytes, as the planner's offsets are); one run when its
    readers do not take it in slices of rows."""
    reads = []
    for step, g in enumerate(kernels):
        for n in g.nodes:
            for v in n.inputs:
                if v is not None and alias_root(v) is x:
                    reads.append((*(rows_read(n, x) if v is x else (0, x.type.nbytes)), step))
    edges = sorted({0, x.type.nbytes} | {e for lo, hi, _ in reads for e in (lo, hi) if e % align == 0})
    segs = []
    for lo, hi in zip(edges, edges[1:]):
        end = max([st for a, b, st in reads if a < hi and lo < b] + [first])
        if segs and segs[-1][2] == end:
            segs[-1] = (segs[-1][0], hi, end)
        else:
            segs.append((lo, hi, end))
    return segs


def block_lives(kernels, lives, inputs, align):
    """lives (aot/liveness.py) with each such input's lifetime cut into its runs of bytes: the
    liveness the in-place strategies judge their steps by."""
    out = dict(lives)
    for x in inputs:
        life = lives.get(id(x))
        if life is None or not life.nbytes:
            continue
        segs = row_segments(kernels, x, 0, align)
        if len(segs) < 2:
            continue
        for k, (lo, hi, end) in enumerate(segs):
            part = Lifetime(x, hi - lo, life.producer, [end], life.persistent)
            out[id(x) if k == 0 else (id(x), k)] = part
    return out


def split_input_rows(kernels, intervals, aliases, inputs, align, log):
    """For each graph input whose readers take it in slices of rows, its interval cut into its
    runs of bytes by last reader: the input keeps the first run; each later one is a Scratch
    pinned at its byte offset into it."""
    for x in inputs:
        key = id(x)
        iv = intervals.get(key)
        if iv is None or key in aliases:
            continue
        segs = row_segments(kernels, x, iv.first, align)
        if len(segs) < 2:
            continue
        for k, (lo, hi, end) in enumerate(segs):
            s = Scratch(f"{x.name} bytes {lo}-{hi}", hi - lo)
            if k == 0:
                intervals[key] = Interval(iv.first, end, s)
            else:
                intervals[id(s)] = Interval(iv.first, end, s)
                aliases.add(id(s), key, lo, PIN)
        if log:
            log(f"memory plan: {x.name} freed in {len(segs)} runs of bytes, each after the last strip reading it")
