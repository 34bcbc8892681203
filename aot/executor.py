"""The AOT executor: fused groups -> kernels called in order, with a static memory plan.

Graph inputs and outputs are the caller's buffers (never copied); constants are linked
arrays; every other tensor lives at a planned offset in one static workspace. Reshape-like
ops are aliases: their output is their input's storage.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .lower import const_param_array, lower_group
from .memory_plan import Buf, lower_bound, plan, verify
from .names import sanitize
from .ops import get_op
from .passes.fuse import group_name
from .tir.legalize import legalize
from .tir.verify import AccessReport, verify_accesses


@dataclass
class Arg:
    kind: str        # 'input' | 'output' | 'const' | 'workspace'
    index: int       # input/output/const index, or workspace byte offset
    dtype: str


@dataclass
class Call:
    func: object     # PrimFunc
    args: list       # Arg per parameter


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

    @property
    def funcs(self):
        seen, out = set(), []
        for c in self.calls:
            if id(c.func) not in seen:
                seen.add(id(c.func))
                out.append(c.func)
        return out

    @property
    def constants_size(self):
        return sum(a.nbytes for _, a in self.constants)


def build_plan(graph, groups, mod, in_names, out_names, align=16, log=None, workspace_io=False) -> ExecutorPlan:
    in_index = {id(v): k for k, v in enumerate(graph.inputs)}

    def root(v):
        while v.producer is not None and get_op(v.producer.op).alias:
            v = v.producer.inputs[0]
        return v

    # graph outputs claim their root's storage (aliases of an output write into it)
    out_root = {id(root(v)): k for k, v in enumerate(graph.outputs)}
    kernels = [g for g in groups if not g.alias]

    const_ids, constants = {}, []
    intervals = {}
    calls, used_names = [], {}
    access = AccessReport()
    for step, g in enumerate(kernels):
        base = f"tvmgen_{mod}_{group_name(g)}"
        k = used_names.get(base, 0)
        used_names[base] = k + 1
        fname = base if k == 0 else f"{base}_{k}"
        func, params = lower_group(g, fname)
        func = legalize(func)
        verify_accesses(func, access)
        if log:
            log(f"lower: {fname}: {' + '.join(g.op_names)}")
        args = []
        for v, stored in params + [(o, None) for o in g.outputs]:
            r = root(v)
            if workspace_io and (id(r) in in_index or id(r) in out_root):
                # inputs are live from the start, outputs until the end of the run
                iv = intervals.setdefault(id(r), [0 if id(r) in in_index else step, step, r])
                iv[0], iv[1] = min(iv[0], step), max(iv[1], step)
                if id(r) in out_root:
                    iv[1] = len(kernels) - 1
                args.append(Arg("workspace", id(r), v.type.dtype))
            elif id(r) in in_index:
                args.append(Arg("input", in_index[id(r)], v.type.dtype))
            elif id(r) in out_root:
                args.append(Arg("output", out_root[id(r)], v.type.dtype))
            elif r.is_const:
                arr = const_param_array(r) if stored is None else stored
                key = (id(r), arr.shape)      # a packed layout is a constant of its own
                if key not in const_ids:
                    const_ids[key] = len(constants)
                    constants.append((f"tvmgen_{mod}_const_{len(constants)}_{sanitize(r.name)}"[:80], arr))
                args.append(Arg("const", const_ids[key], v.type.dtype))
            else:
                iv = intervals.setdefault(id(r), [step, step, r])
                iv[0], iv[1] = min(iv[0], step), max(iv[1], step)
                args.append(Arg("workspace", id(r), v.type.dtype))
        calls.append(Call(func, args))

    if workspace_io:   # inputs no kernel reads still need their place
        for v in graph.inputs:
            intervals.setdefault(id(v), [0, 0, v])
    bufs = [Buf(key, r.type.nbytes, s, e) for key, (s, e, r) in intervals.items()]
    total = plan(bufs, align)
    verify(bufs, total, align)
    offset = {b.key: b.offset for b in bufs}
    for c in calls:
        for a in c.args:
            if a.kind == "workspace":
                a.index = offset[a.index]
        keys = [(a.kind, a.index) for a in c.args]
        if len(set(keys)) != len(keys):
            # two parameters get the same address (aliases, or an empty tensor): no restrict
            c.func.attrs["no_restrict"] = True
    rows = sorted(({"name": intervals[b.key][2].name, "bytes": b.size, "first": b.start, "last": b.end,
                    "offset": b.offset} for b in bufs), key=lambda r: (r["offset"], r["first"]))
    bound = lower_bound(bufs)
    if log:
        log(f"memory plan: {len(bufs)} intermediates, workspace {total} bytes (lower bound {bound}), "
            f"{len(constants)} constant arrays ({sum(a.nbytes for _, a in constants)} bytes)")
    ins = [(c, v.name, v.type) for c, v in zip(in_names, graph.inputs)]
    outs = [(c, n, v.type) for c, n, v in zip(out_names, graph.output_names, graph.outputs)]
    if log:
        log(f"verify: {access.checked} accesses proven in bounds, {access.guarded} guarded by a condition, "
            f"{access.data_dependent} data-dependent, {access.unproven} not proven; no overlap between live buffers")
    io_offsets = None
    if workspace_io:
        io_offsets = {("input", k): offset[id(v)] for k, v in enumerate(graph.inputs)}
        io_offsets.update({("output", k): offset[id(root(v))] for k, v in enumerate(graph.outputs)})
    return ExecutorPlan(mod, ins, outs, constants, calls, total, bound, rows, io_offsets=io_offsets)
