"""The memory planner's choice of execution: layer by layer, or the first stage patch by patch
(aot/passes/patch.py) with the cut, strip count and column tiles that make the smallest
workspace, or, under a RAM budget, the one with the fewest multiply-accumulates that fits.

Every candidate is ranked by an estimate: the stage's live bytes strip by strip (counted as
the planner counts them before its in-place proofs) and, after the cut, the layer-by-layer
floor once every dying input is written over, which the rewrite leaves as it was. The best few are then planned for
real, and the choice is made on their planned workspaces, never on the estimate."""
from __future__ import annotations

from dataclasses import dataclass

from .errors import AotError
from .executor.inplace.input_rows import rows_read
from .executor.inplace.dying import dying_inputs, live_bytes
from .liveness import lifetimes
from .ops.registry import Pattern, get_op
from .passes.fuse import fuse_ops
from .passes.patch import macs, patch_at, stage_cuts, stage_input

PLANNED = 4         # candidates planned for real, best estimates first


@dataclass(frozen=True)
class Choice:
    """One execution and what it costs: its workspace, the RAM with the caller's I/O, and the
    multiply-accumulates it adds to layer by layer."""
    cut: str            # None: layer by layer
    tiles: int
    layers: int
    workspace: int
    ram: int
    extra_macs: int
    macs: int
    cols: int = 1       # column tiles a strip

    def describe(self):
        if self.cut is None:
            return f"layer by layer: workspace {self.workspace:,} B, RAM {self.ram:,} B"
        tiles = f"{self.tiles} strips of rows" + (f", {self.cols} tiles of columns each" if self.cols > 1 else "")
        return (f"the first {self.layers} layers in {tiles}: workspace {self.workspace:,} B, "
                f"RAM {self.ram:,} B, +{self.extra_macs:,} multiply-accumulates "
                f"(+{100 * self.extra_macs / max(self.macs, 1):.1f}%)")


def _floors(graph, workspace_io):
    """([the fewest bytes live at each kernel step of the graph's layer-by-layer plan, once the
    in-place strategies have written every dying input they may over its output], {value name:
    the step that makes it}): what the layers after a cut cost whichever cut is taken, as the
    strategies judge it (steps_worth_staging)."""
    kernels = [g for g in fuse_ops(graph) if not g.alias]
    lives = lifetimes(graph, kernels, workspace_io)
    live = live_bytes(kernels, lives)
    saving = [0] * len(kernels)
    for d in dying_inputs(kernels, lives):
        if 0 < d.src.nbytes <= d.dst.nbytes:
            saving[d.step] = d.src.nbytes
    step_of = {o.name: k for k, g in enumerate(kernels) for o in g.outputs}
    return [a - b for a, b in zip(live, saving)], step_of


def _stage_estimate(graph, n_nodes, workspace_io):
    """Most bytes live at once while the first n_nodes nodes run, one node a step: each node's
    output from its step to its last reader's; an elementwise node on a sole reader's output
    counted in place (it fuses into its producer); the input, inside the workspace, by the runs
    of rows a later node still reads (the planner frees the others: split_input_rows)."""
    nodes = graph.nodes[:n_nodes]
    last, size, first = {}, {}, {}
    users = {}
    for k, n in enumerate(graph.nodes):
        for v in n.inputs:
            if v is not None and not v.is_const:
                last[id(v)] = max(last.get(id(v), -1), k)
                users[id(v)] = users.get(id(v), 0) + 1
    x = stage_input(graph)
    x_reads = []
    if workspace_io:
        x_reads = [(*rows_read(n, x), k) for k, n in enumerate(nodes) if any(v is x for v in n.inputs)]
    for k, n in enumerate(nodes):
        o = n.outputs[0]
        acts = [v for v in n.inputs if v is not None and not v.is_const]
        fused = (get_op(n.op).pattern == Pattern.ELEMWISE and len(acts) == 1 and id(acts[0]) in first
                 and users.get(id(acts[0])) == 1)
        first[id(o)], size[id(o)] = k, o.type.nbytes
        if fused:
            size[id(o)], size[id(acts[0])] = size[id(acts[0])], 0
            first[id(o)] = first[id(acts[0])]
    edges = sorted({0, x.type.nbytes} | {e for lo, hi, _ in x_reads for e in (lo, hi)})
    x_runs = [(hi - lo, max([k for a, b, k in x_reads if a < hi and lo < b], default=-1))
              for lo, hi in zip(edges, edges[1:])] if x_reads else []
    steps = len(nodes)
    delta = [0] * (steps + 1)       # bytes that start (+) and stop (-) being live at each step
    for i, k in first.items():
        delta[k] += size[i]
        delta[min(last.get(i, len(graph.nodes)), steps - 1) + 1] -= size[i]
    for nb, end in x_runs:
        if end >= 0:
            delta[0] += nb
            delta[min(end, steps - 1) + 1] -= nb
    peak = live = 0
    for k in range(steps):
        live += delta[k]
        peak = max(peak, live)
    return peak


MAX_TILES = 64      # tiles of one stage the search tries (each is a copy of the stage's kernels)


def _strip_counts(rows):
    ts = sorted({t for t in (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64) if t <= rows} | {rows} - {1})
    return [t for t in ts if t >= 2]


def _tilings(c):
    """(strips, column tiles) the search tries for cut c: strips of whole rows, and each strip
    count with 2, 3 or 4 tiles of columns (a wide map's strip is what columns shrink; more
    tiles than that pay halos on every side for little)."""
    out = [(t, 1) for t in _strip_counts(c.rows)]
    out += [(t, u) for t in [1] + _strip_counts(c.rows) for u in (2, 3, 4) if u <= c.cols and t * u <= MAX_TILES]
    return out


def choose(graph, plan_of, io_bytes, workspace_io=False, budget=None, log=None, force=False, cuts=True):
    """(graph, Choice, plan): the execution with the smallest workspace (budget None), or the one
    with the fewest multiply-accumulates whose RAM (workspace + io_bytes, the caller's I/O outside
    it) fits `budget`. plan_of(graph) -> the executor plan. A budget nothing reaches is refused
    with the smallest RAM found. force: the best patched stage even where layer by layer is
    smaller (tests and the fuzzer exercise patching so). cuts=False: layer by layer only (the
    budget still checked)."""
    log = log or (lambda m: None)
    total = macs([n for n in graph.nodes if len(n.outputs) == 1 and n.outputs[0] is not None
                  and len(n.outputs[0].type.shape) == 4])
    base_plan = plan_of(graph)
    base = Choice(None, 1, 0, base_plan.workspace_size, base_plan.workspace_size + io_bytes, 0, total)
    if budget is not None and base.ram <= budget:
        return graph, base, base_plan
    floor, step_of = _floors(graph, workspace_io)
    cands, by_value = [], {}
    for c in stage_cuts(graph) if cuts else []:
        by_value[c.value] = c
        post = max(floor[step_of[c.value] + 1:], default=0) if c.value in step_of else max(floor, default=0)
        for t, u in _tilings(c):
            g2, info = patch_at(graph, c, t, u)
            est = max(_stage_estimate(g2, len(g2.nodes) - (len(graph.nodes) - c.nodes), workspace_io), post)
            cands.append((est, info.extra_macs, c.nodes, (t, u), c.value))
    cands.sort()
    if budget is not None:      # the cheapest whose estimate fits, then the smallest estimates
        fits = sorted((m, e, n, t, v) for e, m, n, t, v in cands if e + io_bytes <= budget)
        order = [(e, m, n, t, v) for m, e, n, t, v in fits][:PLANNED] + cands[:PLANNED]
    else:
        order = cands[:PLANNED]
    best, best_plan, best_graph, seen = base, base_plan, graph, set()
    tried = [base]
    for est, extra, n, (t, u), v in order:
        if (v, t, u) in seen:
            continue
        seen.add((v, t, u))
        g2, info = patch_at(graph, by_value[v], t, u)     # made again: not every candidate is kept
        p = plan_of(g2)
        ch = Choice(v, t, n, p.workspace_size, p.workspace_size + io_bytes, info.extra_macs, total, u)
        tried.append(ch)
        log(f"patch search: {ch.describe()} (estimate {est:,} B)")
        if budget is not None:
            if ch.ram <= budget and (best.ram > budget or ch.extra_macs < best.extra_macs):
                best, best_plan, best_graph = ch, p, g2
        elif ch.workspace < best.workspace or (force and best.cut is None):
            best, best_plan, best_graph = ch, p, g2
    if budget is not None and best.ram > budget:
        low = min(tried, key=lambda ch: ch.ram)
        raise AotError(f"--ram-budget {budget:,} bytes: the smallest RAM found is {low.ram:,} bytes "
                       f"({low.describe()}); the caller's inputs and outputs outside the workspace are "
                       f"{io_bytes:,} of them")
    return best_graph, best, best_plan
