"""ExecutorPlan of a GPU target -> the MLF's sources: the TVM-style header (plus init/deinit),
host C that drives the device (lib0.c), and the device code as its own files: the CUDA kernels
with their launch wrappers (lib1.cu), or the OpenCL kernels (kernels.cl, and the same text as a
C string table in lib1.c that init builds the program from)."""
from __future__ import annotations

from aot.errors import AotError
from aot.names import comment_safe

from .c_renderer import C_TYPES
from .cuda_renderer import CUDARenderer
from .emit import CMain, _format_values, device_member, render_template, with_external_sources
from .opencl_renderer import FP64, PREAMBLE, OpenCLRenderer

CONST_ALIGN = 256        # every constant starts at a multiple of this in the device's constant buffer


def _c_string_lines(text, chunk=1000):
    """text as C string literals, one per line or per `chunk` characters of a longer line (ISO C
    guarantees string literals of 4095 characters; OpenCL joins the pieces back)."""
    out = []
    for line in text.splitlines(keepends=True):
        for k in range(0, len(line), chunk):
            piece = line[k:k + chunk]
            esc = piece.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            out.append(f'"{esc}"')
    return out


def emit_gpu(plan, target):
    """{relative path: text} for a cuda or opencl target."""
    mod, MOD = plan.model_name, plan.model_name.upper()
    api = target.kind
    if plan.pools or plan.io_offsets is not None:
        raise AotError(f"target '{target}': workspace pools and --use-workspace-io are for C targets")
    for c in plan.calls:
        if type(c).__name__ == "ExternalCall":
            if api != "cuda" or not c.body:
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
    constants = [{"name": name, "ctype": C_TYPES[str(a.dtype)], "size": max(a.size, 1), "offset": off,
                  "comment": comment_safe(f"{list(a.shape)} {a.dtype}"),
                  "body": _format_values(a) if a.size else "  0"} for (name, a), off in zip(plan.constants, offsets)]

    def mem(a):
        if a.kind == "input":
            return "DEV.io[%d]" % a.index, 0
        if a.kind == "output":
            return "DEV.io[%d]" % (n_in + a.index), 0
        if a.kind == "const":
            return "DEV.constants", offsets[a.index]
        return "DEV.workspace", a.offset

    renderer = CUDARenderer() if api == "cuda" else OpenCLRenderer()
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
    common = dict(mod=mod, MOD=MOD, target=comment_safe(str(target)), devices=[], devices_param="", packed=False)
    header = render_template("model.h.j2", inputs=io, outputs=outs, workspace_size=plan.workspace_size,
                             workspace_io=False, pools=[], device_api=api, **common)
    out = {f"codegen/host/include/tvmgen_{mod}.h": header}
    helpers = renderer.helper_definitions()
    launchers, n_lines = [], 0
    if api == "opencl":
        uses_fp64 = any("double" in b for b in bodies) or "double" in helpers
        source = (FP64 if uses_fp64 else "") + PREAMBLE + (helpers + "\n" if helpers else "") + "\n".join(bodies)
        lines = _c_string_lines(source)
        out[f"codegen/host/src/{mod}_kernels.cl"] = source
        out[f"codegen/host/src/{mod}_lib1.c"] = (
            f'/* Generated by aot for module "{mod}": the OpenCL C of {mod}_kernels.cl, line by line. */\n'
            f"extern const char* const tvmgen_{mod}_opencl_source[{len(lines)}];\n"
            f"const char* const tvmgen_{mod}_opencl_source[{len(lines)}] = {{\n  "
            + ",\n  ".join(lines) + "\n};\n")
        n_lines = len(lines)
    else:
        wrappers = []
        for c in firsts:
            params = [("const " if k < c.func.num_inputs else "") + f"{C_TYPES[b.dtype]}* p{k}"
                      for k, b in enumerate(c.func.params)]
            launchers.append({"launcher": f"{c.symbol}_launch", "params": params})
            g, b = c.grid, c.block
            wrappers.append(
                f'extern "C" int32_t {c.symbol}_launch(void* stream' + "".join(", " + p for p in params) + ") {\n"
                f"  {c.symbol}<<<dim3({g[0]}u, {g[1]}u, {g[2]}u), dim3({b[0]}u, {b[1]}u, {b[2]}u), 0, "
                f"(cudaStream_t)stream>>>({', '.join(f'p{k}' for k in range(len(params)))});\n"
                "  return cudaPeekAtLastError() == cudaSuccess ? 0 : -1;\n}\n")
        out[f"codegen/host/src/{mod}_lib1.cu"] = (
            f'/* Generated by aot for module "{mod}" (target: {comment_safe(str(target))}). Do not edit. */\n'
            "#include <stdint.h>\n#include <math.h>\n#include <cuda_runtime.h>\n\n"
            + (helpers + "\n\n" if helpers else "") + "\n".join(bodies) + "\n" + "\n".join(wrappers))
    out[f"codegen/host/src/{mod}_lib0.c"] = render_template(
        "gpu_lib0.c.j2", api=api, constants=constants, kernels=kernels, steps=steps, inputs=io, outputs=outs,
        io=io + outs, n_io=len(io) + len(outs), workspace_size=plan.workspace_size, constants_size=at,
        n_source_lines=n_lines, launchers=launchers, externals=ext_defs, contexts=contexts, includes=includes,
        init_calls=init_calls,
        **common)
    return with_external_sources(out, plan)
