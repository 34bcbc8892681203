"""Plan assembly: fused groups -> kernels called in order, with a static memory plan.

Graph inputs and outputs are the caller's buffers (never copied) unless they live in the
workspace; constants are linked arrays; every other tensor lives at a planned offset in the
workspace pools. Reshape-like ops are aliases: their output is their input's storage.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import AotError
from ..liveness import lifetimes
from ..names import sanitize
from ..ops.registry import alias_root
from ..passes.fuse import group_name
from ..te.lower import const_param_array
from ..tir.launch import launch_shape
from .inplace.concat import place_concat_slices
from .inplace.input_rows import block_lives, split_input_rows
from .inplace.shrunk import write_shrunk
from .inplace.staged import place_inside_outputs
from .inplace.write_over import write_in_place
from .kernels import Arg, DeviceLaunch, ExecutorPlan, ExternalCall, GeneratedKernel
from .lowering import Lowering
from .memory import IN_PLACE, PIN, SLICE, Aliases, Interval, Scratch, plan_memory


@dataclass
class PlanOptions:
    """align: byte alignment of planned buffers. workspace_io: graph inputs and outputs live in
    the workspace. in_place: kernels may write over their inputs (aot/executor/inplace/).
    pools: user workspace pools [(name, size hint or None)], or None for one internal workspace.
    target: the Target whose schedule rules the kernels get (None: plain C). external: a function
    (group, symbol) -> ExternalKernel | None that hands a group to an external backend instead of
    generating its kernel (the seam partitioning plugs into). log: a function taking a line, or None."""
    align: int = 16
    workspace_io: bool = False
    in_place: bool = True
    pools: list = None
    target: object = None
    external: object = None
    log: object = None
    modules: dict = None     # {id(group): (module, symbol, Target)}: a kernel of a partitioned module
                             # (aot/passes/partition.py partition_groups), named and scheduled as it says


class _Operands:
    """The arguments of the steps: the graph's inputs and outputs by index, constants linked once
    per layout, and every workspace tensor's Interval under its key."""

    def __init__(self, graph, mod, lives, n_kernels, workspace_io):
        self.mod, self.lives, self.n, self.workspace_io = mod, lives, n_kernels, workspace_io
        self.in_index = {id(v): k for k, v in enumerate(graph.inputs)}
        # graph outputs claim their root's storage (aliases of an output write into it)
        self.out_root = {id(alias_root(v)): k for k, v in enumerate(graph.outputs)}
        self.intervals = {}
        self.constants, self._const_ids = [], {}

    def io_ids(self):
        return set(self.in_index) | set(self.out_root)

    def workspace(self, r, dtype, size):
        self.intervals.setdefault(id(r), Interval(*self.lives[id(r)].interval(self.n), r))
        return Arg("workspace", None, dtype, size=size, key=id(r))

    def arg(self, k, v, params, layouts, dense):
        """The argument for parameter k, value v. A constant the schedule stores in another layout
        (layouts[k]) is a constant of its own, and so is one computed from other constants too;
        dense: a library reads every element (no compact splat or broadcast)."""
        r = alias_root(v)
        size, dtype = v.type.size, v.type.dtype
        if self.workspace_io and (id(r) in self.in_index or id(r) in self.out_root):
            return self.workspace(r, dtype, size)
        if id(r) in self.in_index:
            return Arg("input", self.in_index[id(r)], dtype, size=size)
        if id(r) in self.out_root:
            return Arg("output", self.out_root[id(r)], dtype, size=size)
        if r.is_const:
            layout = layouts.get(k)
            reads = [alias_root(params[i]) for i in getattr(layout, "reads", ())]
            key = (id(r), layout, dense, *map(id, reads))
            if key not in self._const_ids:
                arr = const_param_array(r, dense) if layout is None else \
                    layout.apply(const_param_array(r), *map(const_param_array, reads))
                self._const_ids[key] = len(self.constants)
                self.constants.append((f"tvmgen_{self.mod}_const_{len(self.constants)}_{sanitize(r.name)}"[:80], arr))
            return Arg("const", self._const_ids[key], dtype, size=size)
        return self.workspace(r, dtype, size)

    def scratch(self, step, name, nbytes, dtype):
        """A kernel's scratch: workspace live for its step only."""
        s = Scratch(name, nbytes)
        self.intervals[id(s)] = Interval(step, step, s)
        return Arg("workspace", None, dtype, size=nbytes, key=id(s))


def _symbols(kernels, mod):
    """Each kernel's function name: tvmgen_<mod>_<group name>, numbered from the second of a name."""
    used, out = {}, []
    for g in kernels:
        base = f"tvmgen_{mod}_{group_name(g)}"
        k = used.get(base, 0)
        used[base] = k + 1
        out.append(base if k == 0 else f"{base}_{k}")
    return out


def build_plan(graph, groups, mod, in_names, out_names, options: PlanOptions = None, **overrides) -> ExecutorPlan:
    """The plan of the fused groups: each lowered (or handed to options.external), then the
    in-place strategies, then the memory plan. overrides: PlanOptions fields by keyword."""
    opts = dataclasses.replace(options or PlanOptions(), **overrides)
    target, log = opts.target, opts.log
    if target is None:
        from ..target import Target
        target = Target("c")
    kernels = [g for g in groups if not g.alias]
    lives = lifetimes(graph, kernels, opts.workspace_io)     # the same model order_for_memory optimised
    ops = _Operands(graph, mod, lives, len(kernels), opts.workspace_io)
    # an input in the workspace that its strips read row by row frees its rows as they go
    # (split_input_rows): the strategies judge which steps are worth rewriting by that liveness
    ins = [v for v in graph.inputs if id(v) not in ops.out_root]
    judged = block_lives(kernels, lives, ins, opts.align) if opts.workspace_io else lives
    lowering = Lowering(kernels, judged, ops.io_ids(), target, opts.in_place)
    calls = []
    modules = opts.modules or {}
    for step, (g, fname) in enumerate(zip(kernels, _symbols(kernels, mod))):
        module, fname, kernel_target = modules.get(id(g), (None, fname, target))
        call = _step(g, fname, step, opts.external, lowering, ops, kernel_target, log)
        if module is not None:
            call.module = module
        calls.append(call)

    intervals = ops.intervals
    if opts.workspace_io:   # inputs no kernel reads still need their place
        for v in graph.inputs:
            intervals.setdefault(id(v), Interval(*lives[id(v)].interval(len(kernels)), v))
    io_keys = {id(v) for v in graph.inputs} | set(ops.out_root) if opts.workspace_io else set()
    aliases = Aliases()
    if opts.in_place:
        if opts.workspace_io:
            split_input_rows(kernels, intervals, aliases, ins, opts.align, log)
        write_in_place(calls, intervals, aliases, io_keys, log)
        place_inside_outputs(calls, intervals, aliases, log)
        write_shrunk(calls, intervals, aliases, io_keys, log)
        before = {k: Interval(iv.first, iv.last, iv.tensor) for k, iv in intervals.items()}, aliases.copy()
        place_concat_slices(kernels, calls, intervals, aliases, io_keys, log)
    layout = plan_memory(intervals, aliases, opts.pools or [("", None)], opts.align)
    if opts.in_place and any([n.op for n in g.nodes] == ["Concat"] for g in kernels):
        # the concats' inputs pinned at their slices instead: each held from its own first step,
        # where a slice holds the whole output from the first; the smaller plan is kept
        ivs, als = before
        restrict = [getattr(c, "no_alias", None) for c in calls]
        place_concat_slices(kernels, calls, ivs, als, io_keys, None, pinned_first=True)
        try:
            other = plan_memory(ivs, als, opts.pools or [("", None)], opts.align)
        except AotError:        # a pool's size hint it passes: keep the first
            other = None
        if other is not None and sum(other.sizes) < sum(layout.sizes):
            intervals, aliases, layout = ivs, als, other
            if log:
                log("memory plan: the concats' inputs pinned at their slices (a smaller plan)")
        else:
            for c, r in zip(calls, restrict):
                if r is not None:
                    c.no_alias = r
    _place_args(calls, layout)
    rows = _report(intervals, aliases, layout, opts.pools)
    constants = ops.constants
    if log:
        log(f"memory plan: {sum(1 for k in intervals if aliases.planned(k))} intermediates, workspace "
            f"{sum(layout.sizes)} bytes (lower bound {layout.bound}), "
            f"{len(constants)} constant arrays ({sum(a.nbytes for _, a in constants)} bytes)")
    ins = [(c, v.name, v.type) for c, v in zip(in_names, graph.inputs)]
    outs = [(c, n, v.type) for c, n, v in zip(out_names, graph.output_names, graph.outputs)]
    if log:
        a = lowering.access
        log(f"verify: {a.checked} accesses proven in bounds, {a.guarded} guarded by a condition, "
            f"{a.data_dependent} data-dependent, {a.unproven} not proven; no overlap between live buffers")
    io_offsets = io_pools = None
    if opts.workspace_io:
        io = [(("input", k), id(v)) for k, v in enumerate(graph.inputs)] + \
             [(("output", k), id(alias_root(v))) for k, v in enumerate(graph.outputs)]
        io_offsets = {name: layout.offset[key] for name, key in io}
        io_pools = {name: layout.pool[key] for name, key in io}
    pools = opts.pools
    pool_info = [{"name": n, "c": sanitize(n), "size": sz, "hint": h} for (n, h), sz in zip(pools or [], layout.sizes)]
    if log and pools:
        log("workspace pools: " + ", ".join(f"{p['name']} {p['size']} bytes" + (f" (hint {p['hint']})" if p["hint"]
                                                                                  else "") for p in pool_info))
    return ExecutorPlan(mod, ins, outs, constants, calls, sum(layout.sizes), layout.bound, rows, io_offsets=io_offsets,
                        pools=pool_info, io_pools=io_pools if pools else None)


def _step(g, fname, step, external, lowering, ops, target, log):
    """The call of one kernel, its arguments' tensors registered with ops."""
    ext = external(g, fname) if external is not None else None
    if ext is not None:
        params, low = [v for v in g.inputs if v is not None], None
    elif g.nodes[0].op == "PrimFuncCall":
        low = lowering.user(g, fname)
    else:
        low = lowering.generated(g, fname, step, target)
    if low is not None:
        params = low.params
    if log:
        log(f"lower: {fname}: {' + '.join(g.op_names)}" if ext is None else
            f"lower: {ext.symbol}: external, calls {', '.join(c.symbol for c in ext.body) or ext.symbol}")
    layouts = low.layouts if low is not None else {}
    args = [ops.arg(k, v, params, layouts, ext is not None) for k, v in enumerate(params + list(g.outputs))]
    if ext is not None:
        if ext.scratch_bytes:
            # a UMA TIR-route function's scratch is its last parameter, typed (tir_route.hoist_allocations)
            dtype = ext.prim_func.params[-1].dtype if ext.prim_func is not None else "uint8"
            args.append(ops.scratch(step, f"{ext.symbol} scratch", ext.scratch_bytes, dtype))
        return ExternalCall.of(ext, args, len(params))
    func = low.func
    if target.is_device:     # the launch the bound loops ask for, checked (a user's schedule too)
        grid, block = launch_shape(func)
        func = func.with_body(func.body, attrs=dict(func.attrs, launch=(grid, block)))
        return DeviceLaunch(func, args, tuple(grid), tuple(block))
    if low.staging or func.attrs.get("scratch"):
        # the staging's scratch, or the schedule's own (its last parameter: in place of the
        # staging's where the schedule took that over, aot/schedules/arm_q15.py)
        nbytes = func.attrs.get("scratch", low.staging.scratch_bytes if low.staging else 0)
        args.append(ops.scratch(step, f"{fname} scratch", nbytes, func.params[-1].dtype))
        return GeneratedKernel(func, args, scratch_bytes=nbytes, in_place=low.proof)
    return GeneratedKernel(func, args, in_place=low.proof)


def _place_args(calls, layout):
    """Each workspace argument's pool and offset; a generated kernel two of whose arguments share
    an address (aliases, or an empty tensor) loses its restrict pointers."""
    for c in calls:
        for a in c.args:
            if a.kind == "workspace":
                a.pool, a.offset = layout.pool[a.key], layout.offset[a.key]
        places = [a.place for a in c.args]
        if isinstance(c, GeneratedKernel):
            c.no_alias = c.no_alias and len(set(places)) == len(places)


def _report(intervals, aliases, layout, pools):
    """The memory report's rows (aot/memory_report.py): each tensor's bytes, steps, place, and
    the tensor it lives in."""
    rows = []
    for key, iv in intervals.items():
        row = {"name": iv.tensor.name, "bytes": iv.tensor.type.nbytes, "first": iv.first, "last": iv.last,
               "offset": layout.offset[key]}
        if pools:
            row["pool"] = pools[layout.pool[key]][0]
        written = aliases.get(key, IN_PLACE)
        if written is not None:
            row["in_place_of"] = intervals[written.host].tensor.name
        inner = aliases.find(key)
        sliced, pinned = aliases.get(inner, SLICE), aliases.get(inner, PIN)
        if sliced is not None:      # placed in another tensor's storage, itself or the tensor it was written over
            row["slice_of"] = intervals[sliced.host].tensor.name
        elif pinned is not None:    # a smaller output over its input, or an input inside its wider output
            host = pinned.host
            row["in_place_of" if intervals[inner].first > intervals[host].first else "slice_of"] = \
                intervals[host].tensor.name
        rows.append(row)
    rows.sort(key=lambda r: (r.get("pool", ""), r["offset"], r["first"]))
    return rows


def debug_table(kernels, plan) -> list:
    """One row per kernel output, in execution order, for `aot debug`: the record ids main
    passes to tvmgen_<mod>_debug_record, and what to compare each record with (the graph
    value's name is the ONNX tensor's name unless a pass made the value up)."""
    rows = []
    for k, (g, c) in enumerate(zip(kernels, plan.calls)):
        nodes = [{"name": n.name, "op": n.op} for n in g.nodes]
        for j, v in enumerate(g.outputs):
            rows.append({"kernel": k, "output": j, "function": c.symbol, "nodes": nodes, "tensor": v.name,
                         "dtype": v.type.dtype, "shape": list(v.type.shape), "nbytes": v.type.nbytes})
    return rows
