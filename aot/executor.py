"""The AOT executor: fused groups -> kernels called in order, with a static memory plan.

Graph inputs and outputs are the caller's buffers (never copied); constants are linked
arrays; every other tensor lives at a planned offset in one static workspace. Reshape-like
ops are aliases: their output is their input's storage.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .dtypes import BYTES as dtype_bytes_table
from .errors import AotError
from .liveness import lifetimes
from .te.lower import const_param_array, lower_group
from .schedules import schedule
from .memory_plan import Buf, clusters, lower_bound, plan, verify
from .names import sanitize
from .ops.registry import alias_root
from .passes.fuse import group_name
from .tir.launch import launch_shape
from .tir.flatten import flatten
from .tir.legalize import legalize
from .tir.stmt import PrimFunc
from .tir.structural import structural_key
from .tir.inplace import writes_over, writes_over_in_order, writes_over_staged
from .schedules.inplace_conv import stage_in_place, stage_rows
from .tir.verify import AccessReport, verify_accesses


@dataclass
class Arg:
    kind: str        # 'input' | 'output' | 'const' | 'workspace'
    index: int       # input/output/const index, or workspace byte offset
    dtype: str
    pool: int = 0    # which workspace pool (user pools; 0 for the internal workspace)
    size: int = 0    # elements (bytes for a kernel's scratch)


# -- the kernel protocol: what one step of the executor runs ----------------------------------
# Every kind has `symbol`, `args` (inputs, then outputs, then its scratch if it has any) and
# `num_inputs`; the emitter of each target knows how to call each kind (codegen_c/emit.py).
class _FromLoopIR:
    """A step whose code is a PrimFunc of ours: its name and parameters say how it is called."""

    @property
    def symbol(self):
        return self.func.name

    @property
    def num_inputs(self):
        return self.func.num_inputs


@dataclass
class GeneratedKernel(_FromLoopIR):
    """A kernel the compiler generated from loop IR: symbol(args...) -> int32 status."""
    func: object               # PrimFunc
    args: list
    no_alias: bool = True      # no two arguments share storage (its pointers may be restrict)
    scratch_bytes: int = 0     # a staged kernel's scratch: its last argument, planned in the workspace
    staged_over: int = None    # the input a staged kernel was proven to write over (writes_over_staged)
    staged_inside: int = 0     # ... lying this many bytes into the output's storage (a wider output)
    shrunk_over: int = None    # the larger input it was proven to write its output over (writes_over_in_order)


@dataclass(frozen=True)
class ExternCall:
    """One C call in an external function's body: symbol(args...) -> int32 status. Each arg is
    ("param", k): the function's k-th tensor (inputs, then outputs); ("scratch", byte offset,
    dtype): a place in its scratch; ("device",): its device context; or an int / float literal."""
    symbol: str
    args: tuple


@dataclass
class ExternalCall:
    """A call into a library or an accelerator's C API (a plug-in backend's lowering of one
    group): int32_t symbol(inputs..., outputs..., [scratch,] literals..., [device context]),
    0 on success.

    scratch_bytes: working memory the callee needs, planned in the workspace and live for
    this step only. sources: {file name: C text} the MLF ships (.c files are compiled with
    the model; .h files go to the include directory); includes: headers the executor
    includes to declare the callees (else the emitter declares symbol from the arguments).
    body: when not empty, symbol is a function the emitter defines (a partitioned region,
    tvmgen_<mod>_<compiler>_main_<N>) that makes these calls in order. device: the backend
    whose device context (TVM's device API) the call takes, or None."""
    symbol: str
    args: list
    num_inputs: int
    scratch_bytes: int = 0
    literals: tuple = ()       # trailing integer arguments: shapes, attributes
    sources: dict = field(default_factory=dict)
    includes: tuple = ()
    body: tuple = ()
    device: str = None
    device_setup: tuple = ()   # (create, destroy) symbols a GPU host makes the device context with
    init_body: tuple = ()      # ExternCalls (literals and the device context only) the host's init makes once


@dataclass
class DeviceLaunch(_FromLoopIR):
    """A generated kernel run on an accelerator device (CUDA, OpenCL): the host enqueues
    func over `grid` blocks of `block` threads, with device pointers for args."""
    func: object
    args: list
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)


@dataclass
class ExternalKernel:
    """What an external backend's lowering returns for a group it takes (see build_plan's
    `external`): the symbol to call and what it needs; the executor supplies the arguments."""
    symbol: str
    scratch_bytes: int = 0
    literals: tuple = ()
    sources: dict = field(default_factory=dict)
    includes: tuple = ()
    body: tuple = ()           # ExternCalls of the function symbol names (see ExternalCall)
    device: str = None
    device_setup: tuple = ()
    init_body: tuple = ()


@dataclass
class ExecutorPlan:
    model_name: str
    inputs: list                 # (c_name, original name, TensorType)
    outputs: list
    constants: list              # (c_name, numpy array)
    calls: list
    workspace_size: int
    workspace_lower_bound: int
    tensors: list = field(default_factory=list)   # memory report rows
    notes: list = field(default_factory=list)
    io_offsets: dict = None      # ("input"|"output", index) -> workspace offset (use_workspace_io)
    pools: list = field(default_factory=list)   # user workspace pools: {name, c, size, hint}; [] = internal
    io_pools: dict = None        # ("input"|"output", index) -> the pool (index) holding it (workspace io + pools)
    io_quant: dict = field(default_factory=dict)   # ("input" | "output", k) -> (scale, zero point)

    @property
    def funcs(self):
        """The generated functions, in call order."""
        seen, out = set(), []
        for c in self.calls:
            f = getattr(c, "func", None)
            if f is not None and id(f) not in seen:
                seen.add(id(f))
                out.append(f)
        return out

    @property
    def sources(self):
        """{file name: text} that external calls bring."""
        out = {}
        for c in self.calls:
            for name, text in getattr(c, "sources", {}).items():
                if out.setdefault(name, text) != text:
                    raise AotError(f"two external backends ship different files named '{name}'")
        return out

    @property
    def devices(self):
        """The backends whose device context run takes, in order of first use."""
        out = []
        for c in self.calls:
            d = getattr(c, "device", None)
            if d and d not in out:
                out.append(d)
        return out

    @property
    def constants_size(self):
        return sum(a.nbytes for _, a in self.constants)


def _scheduled(func, target, memo):
    """legalize(schedule(func, target)), from memo when a kernel of the same structure (a
    repeated layer) was scheduled before in this compile: the same nest takes the same rules."""
    key = structural_key(func)
    hit = memo.get(key) if key is not None else None
    if hit is None:
        hit = legalize(schedule(func, target))
        if key is not None:
            memo[key] = hit
    return dataclasses.replace(hit, name=func.name)


def build_plan(graph, groups, mod, in_names, out_names, align=16, log=None, workspace_io=False,
               in_place=True, pools=None, target=None, external=None) -> ExecutorPlan:
    """pools: user workspace pools [(name, size hint or None)], or None for one internal workspace.
    target: the Target whose schedule rules the kernels get (default: plain C).
    external: a function (group, symbol) -> ExternalKernel | None that hands a group to an
    external backend instead of generating its kernel (the seam partitioning plugs into)."""
    if target is None:
        from .target import Target
        target = Target("c")
    in_index = {id(v): k for k, v in enumerate(graph.inputs)}
    root = alias_root
    # graph outputs claim their root's storage (aliases of an output write into it)
    out_root = {id(root(v)): k for k, v in enumerate(graph.outputs)}
    kernels = [g for g in groups if not g.alias]
    lives = lifetimes(graph, kernels, workspace_io)     # the same model order_for_memory optimised
    worth_staging = _steps_worth_staging(kernels, lives) if in_place else set()
    worth_shrinking = _steps_worth_shrinking(kernels, lives) if in_place and not target.is_device else set()

    const_ids, constants = {}, []
    intervals = {}
    calls, used_names = [], {}
    access = AccessReport()
    scheduled = {}          # structural key -> the scheduled kernel: a repeated layer is scheduled once
    for step, g in enumerate(kernels):
        base = f"tvmgen_{mod}_{group_name(g)}"
        k = used_names.get(base, 0)
        used_names[base] = k + 1
        fname = base if k == 0 else f"{base}_{k}"
        ext = external(g, fname) if external is not None else None
        user = g.nodes[0].attrs["prim_func"] if g.nodes[0].op == "PrimFuncCall" else None
        staged = None             # only the compiler's own lowering is staged to write over an input
        shrunk = None
        if ext is None and user is not None:      # a user's kernel, scheduled as the user wrote it
            func, params = PrimFunc(fname, user.params, user.body, user.num_inputs, dict(user.attrs)), list(g.inputs)
            func = legalize(flatten(func))
            verify_accesses(func, access)
            layouts = {}
        elif ext is None:
            func, params = lower_group(g, fname)
            staged = (_staged_in_place(func, params, g, step, lives, len(kernels), set(in_index) | set(out_root),
                                       target.family.staging_block(target))
                      if in_place and not target.is_device and step in worth_staging else None)
            if staged:
                func = staged[0]
            plain, func = func, _scheduled(func, target, scheduled)
            if staged and staged[4] and not writes_over_in_order(func, [func.params[staged[1]]],
                                                                 func.params[len(params)]):
                func = legalize(flatten(plain))      # staged by rows: its schedule re-proven, else its proven nest
            if not staged and step in worth_shrinking:
                # the host's rules can keep the pieces of a padded window in the nest's order
                ordered = None if not target.family.in_order_shrink else \
                    (lambda f: legalize(schedule(f.with_body(f.body, attrs=dict(f.attrs, in_order=True)), target)))
                func, shrunk = _shrunk_in_place(func, plain, params, g, step, lives, len(kernels),
                                                set(in_index) | set(out_root), ordered)
            verify_accesses(func, access)
            layouts = func.attrs.get("layouts", {})
        else:
            params, layouts = [v for v in g.inputs if v is not None], {}
        if log:
            log(f"lower: {fname}: {' + '.join(g.op_names)}" if ext is None else
                f"lower: {ext.symbol}: external, calls {', '.join(c.symbol for c in ext.body) or ext.symbol}")
        args = []
        for k, v in enumerate(params + list(g.outputs)):
            r = root(v)
            size = v.type.size
            if workspace_io and (id(r) in in_index or id(r) in out_root):
                intervals.setdefault(id(r), [*lives[id(r)].interval(len(kernels)), r])
                args.append(Arg("workspace", id(r), v.type.dtype, size=size))
            elif id(r) in in_index:
                args.append(Arg("input", in_index[id(r)], v.type.dtype, size=size))
            elif id(r) in out_root:
                args.append(Arg("output", out_root[id(r)], v.type.dtype, size=size))
            elif r.is_const:
                layout = layouts.get(k)       # the schedule stores this constant in another layout
                # ... which makes it a constant of its own (one computed from other constants too)
                reads = [root(params[i]) for i in getattr(layout, "reads", ())]
                dense = ext is not None     # a library reads every element: no compact splat or broadcast
                key = (id(r), layout, dense, *map(id, reads))
                if key not in const_ids:
                    arr = const_param_array(r, dense) if layout is None else \
                        layout.apply(const_param_array(r), *map(const_param_array, reads))
                    const_ids[key] = len(constants)
                    constants.append((f"tvmgen_{mod}_const_{len(constants)}_{sanitize(r.name)}"[:80], arr))
                args.append(Arg("const", const_ids[key], v.type.dtype, size=size))
            else:
                intervals.setdefault(id(r), [*lives[id(r)].interval(len(kernels)), r])
                args.append(Arg("workspace", id(r), v.type.dtype, size=size))
        if ext is None:
            if target.is_device:     # the launch the bound loops ask for, checked (a user's schedule too)
                grid, block = launch_shape(func)
                func = func.with_body(func.body, attrs=dict(func.attrs, launch=(grid, block)))
                calls.append(DeviceLaunch(func, args, tuple(grid), tuple(block)))
            elif staged or func.attrs.get("scratch"):
                # the staging's scratch, or the schedule's own (its last parameter: in place of the
                # staging's where the schedule took that over, aot/schedules/arm_q15.py)
                _, over, nbytes, inside, _ = staged or (None, None, 0, 0, None)
                nbytes = func.attrs.get("scratch", nbytes)
                scratch = _Scratch(f"{fname} scratch", nbytes)
                intervals[id(scratch)] = [step, step, scratch]
                args.append(Arg("workspace", id(scratch), func.params[-1].dtype, size=nbytes))
                calls.append(GeneratedKernel(func, args, scratch_bytes=nbytes, staged_over=over, staged_inside=inside,
                                             shrunk_over=shrunk))
            else:
                calls.append(GeneratedKernel(func, args, shrunk_over=shrunk))
            continue
        if ext.scratch_bytes:
            scratch = _Scratch(f"{ext.symbol} scratch", ext.scratch_bytes)
            intervals[id(scratch)] = [step, step, scratch]
            args.append(Arg("workspace", id(scratch), "uint8", size=ext.scratch_bytes))
        calls.append(ExternalCall(ext.symbol, args, len(params), ext.scratch_bytes, tuple(ext.literals),
                                  dict(ext.sources), tuple(ext.includes), tuple(ext.body), ext.device,
                                  tuple(ext.device_setup), tuple(ext.init_body)))

    if workspace_io:   # inputs no kernel reads still need their place
        for v in graph.inputs:
            intervals.setdefault(id(v), [*lives[id(v)].interval(len(kernels)), v])
    io_keys = {id(v) for v in graph.inputs} | set(out_root) if workspace_io else set()
    storage = _write_in_place(calls, intervals, io_keys, log) if in_place else {}
    pins, placed = {}, {}     # pins: {key: (host key, byte offset)}, planned together (memory_plan.Buf.pin)
    if in_place:
        _place_inside_outputs(calls, intervals, storage, log, pins)
        _write_shrunk(calls, intervals, storage, io_keys, log, pins)
        placed.update(_place_concat_slices(kernels, calls, intervals, storage, io_keys, log, placed, pins))
    bufs = [Buf(key, r.type.nbytes, s, e, pin=pins.get(key)) for key, (s, e, r) in intervals.items()
            if key not in storage and key not in placed]
    pool_of, sizes = _assign_pools(bufs, pools or [("", None)], align)
    total = sum(sizes)
    offset = {b.key: b.offset for b in bufs}
    for key in intervals:
        if key in storage or key in placed:
            home, delta = _home(storage, placed, key)
            offset[key], pool_of[key] = offset[home] + delta, pool_of[home]
    for c in calls:
        for a in c.args:
            if a.kind == "workspace":
                a.pool = pool_of[a.index]
                a.index = offset[a.index]
        keys = [(a.kind, a.pool, a.index) for a in c.args]
        if isinstance(c, GeneratedKernel):
            # two parameters get the same address (aliases, or an empty tensor): no restrict
            c.no_alias = c.no_alias and len(set(keys)) == len(keys)
    rows = []
    for key, (s, e, r) in intervals.items():
        row = {"name": r.name, "bytes": r.type.nbytes, "first": s, "last": e, "offset": offset[key]}
        if pools:
            row["pool"] = pools[pool_of[key]][0]
        if key in storage:
            row["in_place_of"] = intervals[storage[key]][2].name
        inner = _find(storage, key)
        if inner in placed:       # placed in another tensor's storage, itself or the tensor it was written over
            row["slice_of"] = intervals[placed[inner][0]][2].name
        elif inner in pins:       # a smaller output over its input, or an input inside its wider output
            host = pins[inner][0]
            row["in_place_of" if intervals[inner][0] > intervals[host][0] else "slice_of"] = intervals[host][2].name
        rows.append(row)
    rows.sort(key=lambda r: (r.get("pool", ""), r["offset"], r["first"]))
    bound = lower_bound(bufs)
    if log:
        log(f"memory plan: {len(bufs)} intermediates, workspace {total} bytes (lower bound {bound}), "
            f"{len(constants)} constant arrays ({sum(a.nbytes for _, a in constants)} bytes)")
    ins = [(c, v.name, v.type) for c, v in zip(in_names, graph.inputs)]
    outs = [(c, n, v.type) for c, n, v in zip(out_names, graph.output_names, graph.outputs)]
    if log:
        log(f"verify: {access.checked} accesses proven in bounds, {access.guarded} guarded by a condition, "
            f"{access.data_dependent} data-dependent, {access.unproven} not proven; no overlap between live buffers")
    io_offsets = io_pools = None
    if workspace_io:
        io_offsets = {("input", k): offset[id(v)] for k, v in enumerate(graph.inputs)}
        io_offsets.update({("output", k): offset[id(root(v))] for k, v in enumerate(graph.outputs)})
        io_pools = {("input", k): pool_of[id(v)] for k, v in enumerate(graph.inputs)}
        io_pools.update({("output", k): pool_of[id(root(v))] for k, v in enumerate(graph.outputs)})
    pool_info = [{"name": n, "c": sanitize(n), "size": sz, "hint": h} for (n, h), sz in zip(pools or [], sizes)]
    if log and pools:
        log("workspace pools: " + ", ".join(f"{p['name']} {p['size']} bytes" + (f" (hint {p['hint']})" if p["hint"]
                                                                                  else "") for p in pool_info))
    return ExecutorPlan(mod, ins, outs, constants, calls, total, bound, rows, io_offsets=io_offsets, pools=pool_info,
                        io_pools=io_pools if pools else None)


class _Scratch:
    """A kernel's scratch memory as the planner sees it: a buffer live for one step."""

    def __init__(self, name, nbytes):
        from .ir.graph import TensorType
        self.name, self.type = name, TensorType((nbytes,), "uint8")


def _live_bytes(kernels, lives):
    """Bytes live at each step."""
    n = len(kernels)
    live = [0] * n
    for lf in lives.values():
        first, last = lf.interval(n)
        for s in range(first, last + 1):
            live[s] += lf.nbytes
    return live


def _dying_inputs(kernels, lives):
    """(step, its one activation input's lifetime, its one output's lifetime) for each step whose
    one activation input dies there."""
    n = len(kernels)
    for s, g in enumerate(kernels):
        ins = {id(alias_root(v)) for v in g.inputs if v is not None and not alias_root(v).is_const}
        if len(g.outputs) != 1 or len(ins) != 1:
            continue
        src, dst = lives.get(ins.pop()), lives.get(id(alias_root(g.outputs[0])))
        if src is not None and dst is not None and src.interval(n)[1] == s:
            yield s, src, dst


def _steps_worth_staging(kernels, lives):
    """The steps whose kernel may be staged to write over its input: a staged kernel gives up
    the register tiles of the target's schedule (a staged pointwise conv keeps its dot_s8 calls,
    a depthwise one has none to keep), so only the kernels whose live bytes stand above
    what the peak can come down to are staged. A step can drop by its dying input's bytes when
    its one activation input dies there and is no larger than its output; the peak cannot fall
    below the highest step after such drops."""
    n, live = len(kernels), _live_bytes(kernels, lives)
    saving = [0] * n
    for s, src, dst in _dying_inputs(kernels, lives):
        if 0 < src.nbytes <= dst.nbytes:
            saving[s] = src.nbytes
    floor = max((live[s] - saving[s] for s in range(n)), default=0)
    chosen = {s for s in range(n) if saving[s] and live[s] > floor}
    # a wider output holds its input only if that input's producer wrote over its own input too
    # (else the region is live a step earlier): stage such producers back along the chain
    for k in sorted(chosen, reverse=True):
        while True:
            ins = [alias_root(v) for v in kernels[k].inputs if v is not None and not alias_root(v).is_const]
            k = lives[id(ins[0])].producer if len(ins) == 1 else -1
            if k < 0 or not saving[k] or k in chosen:
                break
            chosen.add(k)
    return chosen


def _steps_worth_shrinking(kernels, lives):
    """The steps whose output, smaller than its one activation input that dies there, may be
    written over the start of that input: those whose live bytes stand above what the peak can
    come down to when both wider and smaller outputs share their input's storage (a kernel so
    written may lose its target schedule: aot/tir/inplace.py proves the plain nest when the
    scheduled one, register tiles reading ahead, is not safe)."""
    n, live = len(kernels), _live_bytes(kernels, lives)
    saving, smaller = [0] * n, set()
    for s, src, dst in _dying_inputs(kernels, lives):
        if not src.nbytes or not dst.nbytes:
            continue
        saving[s] = min(src.nbytes, dst.nbytes)
        if src.nbytes > dst.nbytes:
            smaller.add(s)
    floor = max((live[s] - saving[s] for s in range(n)), default=0)
    return {s for s in smaller if live[s] > floor}


def _shrunk_in_place(func, plain, params, g, step, lives, n_kernels, io_ids, ordered=None):
    """(the kernel, the index of the input it may write its smaller output over) when
    writes_over_in_order proves it on the scheduled kernel, else on the plain nest scheduled by
    `ordered` (the schedule asked to keep the nest's order), else on the plain nest (which then
    replaces it); (func, None) when none is proven."""
    if len(g.outputs) != 1 or id(alias_root(g.outputs[0])) in io_ids:
        return func, None
    out = alias_root(g.outputs[0])
    act = [k for k, v in enumerate(params) if v is not None and not alias_root(v).is_const]
    if len(act) != 1:
        return func, None
    k = act[0]
    r = alias_root(params[k])
    if id(r) in io_ids or r.type.nbytes <= out.type.nbytes or lives[id(r)].interval(n_kernels)[1] != step:
        return func, None
    candidates = [lambda: func] + ([lambda: ordered(plain)] if ordered else []) + [lambda: legalize(flatten(plain))]
    for make in candidates:         # each built only when the one before is not proven
        f = make()
        if writes_over_in_order(f, [f.params[k]], f.params[len(params)], 0):
            return f, k
    return func, None


def _staged_in_place(func, params, g, step, lives, n_kernels, io_ids, block=(1, 1)):
    """(func staged to write over an input that dies here, that input's index, scratch bytes,
    bytes the input lies into the output, whether staged by rows) when aot/schedules/inplace_conv.py
    can stage the kernel and aot/tir/inplace.py proves the staged kernel safe (the smaller
    scratch of the two stagings); else None."""
    if len(g.outputs) != 1 or id(alias_root(g.outputs[0])) in io_ids:
        return None
    out = alias_root(g.outputs[0])
    if sum(1 for v in params if v is not None and not alias_root(v).is_const) != 1:
        return None     # e.g. a conv with a residual add: that one writes over the residual (writes_over)
    for k, v in enumerate(params):
        r = alias_root(v) if v is not None else None
        if r is None or r.is_const or id(r) in io_ids or r.type.nbytes > out.type.nbytes \
                or lives[id(r)].interval(n_kernels)[1] != step \
                or sum(x is not None and alias_root(x) is r for x in params) != 1:
            continue
        proven = []       # (scratch elements, staged func, delta, proven in program order)
        got = stage_in_place(func, k, len(params), block=block[0], min_block=block[1],
                             pixels=block[2] if len(block) > 2 else 1)
        if got is not None:
            staged, n = got
            inb, outb = staged.params[k], staged.params[len(params)]
            # a wider output holds its input at its end (delta elements in)
            delta = None if inb.size == outb.size else outb.size - inb.size
            if writes_over_staged(staged, [inb], outb, delta):
                proven.append((n, staged, delta, False))
        got = stage_rows(func, k, len(params))      # a ring of rows, when smaller than the blocks
        if got is not None and writes_over_in_order(got[0], [got[0].params[k]], got[0].params[len(params)], 0):
            proven.append((got[1], got[0], None, True))
        if proven:
            n, staged, delta, in_order = min(proven, key=lambda c: c[0])
            size = dtype_bytes_table[staged.params[len(params)].dtype]
            return staged, k, n * size, (delta or 0) * size, in_order
    return None


def _find(storage, key):
    while key in storage:
        key = storage[key]
    return key


def _write_in_place(calls, intervals, io_keys, log):
    """Let a kernel's output take the storage of an input that dies at that kernel, when the
    kernel reads each input element only in the statement that writes the same output element.
    Returns {output key: input key}; the input's interval is stretched over the output's."""
    storage = {}
    for step, c in enumerate(calls):
        if not isinstance(c, GeneratedKernel):
            continue          # only a generated kernel's loop IR can prove an in-place write safe
        n_in = c.func.num_inputs
        for j, a in enumerate(c.args[n_in:len(c.args) - (1 if c.scratch_bytes else 0)], n_in):
            if a.kind != "workspace" or a.index in io_keys or intervals[a.index][0] != step:
                continue
            out_val = intervals[a.index][2]
            for i, b in enumerate(c.args[:n_in]):
                if b.kind != "workspace" or b.index in io_keys or b.index == a.index:
                    continue
                home = _find(storage, b.index)
                if intervals[home][1] != step or intervals[b.index][1] != step \
                        or intervals[b.index][2].type.nbytes != out_val.type.nbytes:
                    continue
                views = [c.func.params[k] for k, x in enumerate(c.args[:n_in]) if x.kind == "workspace"
                         and x.index == b.index]
                if c.staged_over != i and not writes_over(c.func, views, c.func.params[j]):
                    continue
                storage[a.index] = b.index
                intervals[home][1] = intervals[a.index][1]
                if log:
                    log(f"memory plan: {c.func.name} writes {out_val.name} in place of {intervals[b.index][2].name}")
                break
    return storage


def _home(storage, placed, key):
    """(the planned buffer holding key's bytes, key's byte offset inside it)."""
    delta = 0
    while key in storage or key in placed:
        if key in storage:
            key = storage[key]
        else:
            key, d = placed[key]
            delta += d
    return key, delta


def _bound(intervals, storage, placed, pins=None):
    return lower_bound(_bufs(intervals, storage, placed, pins or {}))


def _bufs(intervals, storage, placed, pins):
    return [Buf(key, r.type.nbytes, s, e, pin=pins.get(key)) for key, (s, e, r) in intervals.items()
            if key not in storage and key not in placed]


def _pin(pins, key, host, delta, intervals, storage, placed):
    """Pin key's storage `delta` bytes into host's (they share one step, at which the kernel was
    proven to write the one over the other), unless two members of the cluster this makes would
    then overlap elsewhere, or the peak of live bytes rises. Returns whether it did."""
    before = _bound(intervals, storage, placed, pins)
    pins[key] = (host, delta)
    bufs = _bufs(intervals, storage, placed, pins)
    cl = clusters(bufs)
    at = {b.key: i for i, b in enumerate(bufs)}
    root = cl[at[key]][0]
    mine = [(b, cl[i][1]) for i, b in enumerate(bufs) if cl[i][0] == root]
    for k, (a, ra) in enumerate(mine):
        for b, rb in mine[k + 1:]:
            shared = min(a.end, b.end) - max(a.start, b.start)
            pair = (a.pin and a.pin[0] == b.key) or (b.pin and b.pin[0] == a.key)
            if shared >= 0 and ra < rb + b.size and rb < ra + a.size and not (pair and shared == 0):
                del pins[key]
                return False
    if _bound(intervals, storage, placed, pins) > before:
        del pins[key]
        return False
    return True


def _place(placed, home, out, delta, intervals, storage):
    """Put home's bytes `delta` bytes into out's storage, out's interval stretched over home's,
    unless that raises the peak of live bytes (out's other bytes are then held from home's
    first step on). Returns whether it did."""
    before, span = _bound(intervals, storage, placed), list(intervals[out][:2])
    placed[home] = (out, delta)
    intervals[out][0] = min(span[0], intervals[home][0])
    intervals[out][1] = max(span[1], intervals[home][1])
    if _bound(intervals, storage, placed) <= before:
        return True
    del placed[home]
    intervals[out][:2] = span
    return False


def _place_inside_outputs(calls, intervals, storage, log, pins):
    """A staged kernel whose output is wider than the input it was proven to write over
    (writes_over_staged with delta) gets that input's storage pinned at the end of its output
    (pins: {input home key: (output key, byte offset)})."""
    for step, c in enumerate(calls):
        if not isinstance(c, GeneratedKernel) or c.staged_over is None or not c.staged_inside:
            continue
        b, a = c.args[c.staged_over], c.args[c.func.num_inputs]
        home = _find(storage, b.index)
        if home in pins or intervals[home][1] != step or intervals[a.index][0] != step or a.index in storage:
            continue
        if not _pin(pins, home, a.index, c.staged_inside, intervals, storage, {}):
            continue
        c.no_alias = False
        if log:
            log(f"memory plan: {intervals[home][2].name} placed at byte {c.staged_inside} of {intervals[a.index][2].name}")


def _write_shrunk(calls, intervals, storage, io_keys, log, pins):
    """A kernel whose output is smaller than an input that dies there writes it over the start of
    that input when replaying its accesses proves no input element is overwritten before its last
    read (writes_over_in_order: a depthwise conv with stride 2); the output is pinned at byte 0
    of the input's storage."""
    for step, c in enumerate(calls):
        if not isinstance(c, GeneratedKernel) or c.shrunk_over is None:
            continue
        a, b = c.args[c.func.num_inputs], c.args[c.shrunk_over]
        if a.kind != "workspace" or b.kind != "workspace" or a.index in io_keys or b.index in io_keys \
                or a.index in storage or a.index in pins:
            continue
        home = _find(storage, b.index)
        if intervals[home][1] != step or intervals[b.index][1] != step \
                or not _pin(pins, a.index, home, 0, intervals, storage, {}):
            continue
        c.no_alias = False
        if log:
            log(f"memory plan: {c.func.name} writes {intervals[a.index][2].name} over the start of "
                f"{intervals[b.index][2].name}")


def _place_concat_slices(kernels, calls, intervals, storage, io_keys, log, placed=None, pins=None):
    """Concatenation in place: a concat whose slices are contiguous in its output (every axis
    before the concat axis has extent 1) gets each input's storage placed at that input's
    slice of the output, so the producer writes straight into it and the concat's copy of that
    slice is a copy onto itself. Returns {input home key: (output key, byte offset)}; the
    output's interval is stretched over its placed inputs'. An input is left where it is
    when its bytes are written again after the concat (a later kernel writing in place of it),
    when it already sits in another concat's output, or when it is a graph input or output."""
    placed, pins = dict(placed or {}), pins or {}
    pinned = set(pins) | {h for h, _ in pins.values()}      # their intervals may not stretch
    for step, (g, c) in enumerate(zip(kernels, calls)):
        if not isinstance(c, GeneratedKernel) or [n.op for n in g.nodes] != ["Concat"] or c.scratch_bytes:
            continue
        node, n_in = g.nodes[0], c.func.num_inputs
        out = c.args[n_in]
        axis = node.attrs["axis"] % len(node.outputs[0].type.shape)
        if out.kind != "workspace" or out.index in io_keys or _home(storage, placed, out.index)[0] != out.index \
                or out.index in pinned \
                or any(x != 1 for x in node.outputs[0].type.shape[:axis]) or len(c.args) != n_in + 1:
            continue
        delta, done = 0, set()
        for v in node.inputs:
            nbytes, key = v.type.nbytes, id(alias_root(v))
            home = _find(storage, key) if key in intervals else None
            later = home is not None and any(_find(storage, k) == home and intervals[k][0] > step
                                             for k in intervals if k in storage)
            if home is not None and home not in io_keys and home not in placed and home not in done \
                    and home not in pinned \
                    and not later and intervals[home][2].type.nbytes == nbytes and home != out.index:
                if not _place(placed, home, out.index, delta, intervals, storage):
                    delta += nbytes
                    continue
                done.add(home)
                if log:
                    log(f"memory plan: {intervals[home][2].name} placed at byte {delta} of {intervals[out.index][2].name}")
            delta += nbytes
        if done:
            c.no_alias = False      # each placed slice is copied onto itself
    return placed


def _assign_pools(bufs, pools, align):
    """Plan the buffers into the pools in order: a pool whose size hint the plan exceeds gives
    its topmost buffers to the next pool until it fits. Returns ({key: pool index}, [pool bytes])."""
    pool_of, sizes, todo = {}, [], list(bufs)
    rank = {id(b): i for i, b in enumerate(bufs)}     # spilled buffers keep their original order
    for k, (name, hint) in enumerate(pools):
        mine, moved = list(todo), []
        total = plan(mine, align)
        last = k == len(pools) - 1
        while hint is not None and total > hint and not last and mine:
            top = max(range(len(mine)), key=lambda i: (mine[i].offset + mine[i].size, mine[i].size, -i))
            moved.append(mine.pop(top))
            total = plan(mine, align)
        if hint is not None and total > hint:
            need = f"{total} bytes (lower bound {lower_bound(mine)})"
            if len(pools) == 1:
                raise AotError(f"workspace pool '{name}' is too small: the model needs {need}, "
                               f"but its size hint is {hint} bytes")
            raise AotError(f"workspace pools are too small: after filling the others, pool '{name}' needs {need}, "
                           f"but its size hint is {hint} bytes (pools: "
                           + ", ".join(f"'{n}' {h if h is not None else 'unbounded'}" for n, h in pools) + ")")
        verify(mine, total, align)
        for b in mine:
            pool_of[b.key] = k
        sizes.append(total)
        todo = sorted(moved, key=lambda b: rank[id(b)])
    return pool_of, sizes


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
