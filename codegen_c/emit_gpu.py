"""ExecutorPlan of a GPU target -> the MLF's sources: the TVM-style header (plus init/deinit),
host C that drives the device (lib0.c, from the family's host template), and the device code as
the dialect's renderer packages it (CUDARenderer.device_sources, OpenCLRenderer.device_sources)."""
from __future__ import annotations

import numpy as np

from aot.errors import AotError
from aot.names import comment_safe

from .c_renderer import C_TYPES
from .dialects import host_template, renderer_for
from .emit import CMain, format_values, device_member, render_template, with_external_sources

CONST_ALIGN = 256        # every constant starts at a multiple of this in the device's constant buffer


SPLAT_MIN = 64          # elements: a uniform constant this long is one value in the host C, filled at init


def uniform(a):
    """Whether every element of a has the same bytes (a ConstantOfShape's weights): the host C
    then holds one value, which init fills across the device buffer (the GPU host templates)."""
    if a.size < SPLAT_MIN:
        return False
    flat = a.reshape(-1).view(np.uint8).reshape(a.size, -1)
    return bool((flat == flat[0]).all())


def graph_plan(plan, target):
    """Whether the host may record the whole run as one graph at init (the family's
    graph_replay), and if not, why: an external call whose backend did not declare that its calls
    only enqueue device work (graph_safe) would run once, while recording, and never again.
    {"ok", "why", "macro"} for the host template; metadata.json's device.graph."""
    macro = f"TVMGEN_{plan.model_name.upper()}_CUDA_GRAPH"
    if not target.family.graph_replay:
        return {"ok": False, "why": f"the {target.kind} host has no graphs", "macro": macro}
    blockers = sorted({c.symbol for c in plan.calls if type(c).__name__ == "ExternalCall" and not c.graph_safe})
    if blockers:
        return {"ok": False, "macro": macro,
                "why": f"{', '.join(blockers)} may do host work between launches (its backend does not declare "
                       "_register_device_context(graph_safe=True))"}
    return {"ok": True, "why": "", "macro": macro}


def emit_gpu(plan, target, graph=None):
    """{relative path: text} for a GPU target (a target whose family is a GpuFamily); graph: its
    graph_plan, where the caller already made it."""
    mod, MOD = plan.model_name, plan.model_name.upper()
    family = target.family
    if plan.pools or plan.io_offsets is not None:
        raise AotError(f"target '{target}': workspace pools and --use-workspace-io are for C targets")
    for c in plan.calls:
        if type(c).__name__ == "ExternalCall":
            if not family.external_calls or not c.body:
                raise AotError(f"target '{target}': {c.symbol} is an external call, which only the cuda target's "
                               "backends (-libs, or a plug-in backend's function) can make")
            if c.device and not c.device_setup:
                raise AotError(f"target '{target}': backend '{c.device}' has a device context but no create/destroy "
                               "functions for a GPU host (_register_device_context(create=..., destroy=...))")
    n_in = len(plan.inputs)
    offsets, at = [], 0
    for _, a in plan.constants:
        offsets.append(at)
        at += -(-max(a.nbytes, 1) // CONST_ALIGN) * CONST_ALIGN
    constants = []
    for (name, a), off in zip(plan.constants, offsets):
        splat = uniform(a)
        constants.append({"name": name, "ctype": C_TYPES[str(a.dtype)], "size": 1 if splat else max(a.size, 1),
                          "offset": off, "count": a.size, "splat": splat, "nbytes": a.nbytes,
                          "comment": comment_safe(f"{list(a.shape)} {a.dtype}" + (", every element this value"
                                                                                  if splat else "")),
                          "body": format_values(a.reshape(-1)[:1] if splat else a) if a.size else "  0"})

    def mem(a):
        if a.kind == "input":
            return family.io_pointer % a.index, 0
        if a.kind == "output":
            return family.io_pointer % (n_in + a.index), 0
        if a.kind == "const":
            return "DEV.constants", offsets[a.index]
        return "DEV.workspace", a.offset

    renderer = renderer_for(family)
    launches = [c for c in plan.calls if type(c).__name__ == "DeviceLaunch"]
    externals = [c for c in plan.calls if type(c).__name__ == "ExternalCall"]
    kernels, index, bodies, firsts = [], {}, [], []
    for c in launches:
        if c.symbol not in index:
            index[c.symbol] = len(kernels)
            kernels.append(c.symbol)
            firsts.append(c)
            bodies.append(renderer.function(c.func, False))
    steps = []
    for c in plan.calls:
        args = [dict(zip(("mem", "offset"), mem(a)), ctype=C_TYPES[a.dtype],
                     const="const " if j < c.num_inputs else "") for j, a in enumerate(c.args)]
        if type(c).__name__ == "ExternalCall":
            if c.scratch_bytes:
                args[-1]["ctype"] = "uint8_t"
            steps.append({"symbol": c.symbol, "external": True, "args": args,
                          "device": f"DEV.ctx_{device_member(c.device)}" if c.device else None})
            continue
        steps.append({"symbol": c.symbol, "external": False, "kernel": index[c.symbol], "args": args,
                      "grid": list(c.grid), "block": list(c.block), "launcher": f"{c.symbol}_launch"})
    main = CMain(plan)
    ext_defs = [main.external_function(c) for c in externals]
    contexts, seen = [], set()
    for c in externals:
        if c.device and c.device not in seen:
            seen.add(c.device)
            contexts.append({"member": f"ctx_{device_member(c.device)}", "create": c.device_setup[0],
                             "destroy": c.device_setup[1]})
    init_calls = [CMain.init_call(i, f"DEV.ctx_{device_member(c.device)}" if c.device else "0")
                  for c in externals for i in c.init_body]
    includes = sorted({h for c in externals for h in c.includes})
    io = [{"c": cn, "nbytes": t.nbytes, "io": k} for k, (cn, _, t) in enumerate(plan.inputs)]
    outs = [{"c": cn, "nbytes": t.nbytes, "io": n_in + k} for k, (cn, _, t) in enumerate(plan.outputs)]
    common = dict(mod=mod, MOD=MOD, target=comment_safe(target.short_str()), devices=[], devices_param="", packed=False)
    header = render_template("model.h.j2", inputs=io, outputs=outs, workspace_size=plan.workspace_size,
                             workspace_io=False, pools=[], device_api=target.kind,
                             device_entry=family.device_entry, **common)
    out = {f"codegen/host/include/tvmgen_{mod}.h": header}
    files, extra = renderer.device_sources(mod, comment_safe(target.short_str()), firsts, bodies)
    out.update(files)
    values = {"launchers": [], "n_source_lines": 0, **extra}
    out[f"codegen/host/src/{mod}_lib0.c"] = host_template(family).render(
        api=target.kind, constants=constants, kernels=kernels, steps=steps, inputs=io, outputs=outs,
        io=io + outs, n_io=len(io) + len(outs), workspace_size=plan.workspace_size, constants_size=at,
        externals=ext_defs, contexts=contexts, includes=includes, init_calls=init_calls,
        graph=graph or graph_plan(plan, target), **values, **common)
    return with_external_sources(out, plan)
