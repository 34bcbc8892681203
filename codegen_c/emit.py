"""ExecutorPlan -> the C sources of an MLF (header, lib0.c, lib1.c) through the templates."""
from __future__ import annotations

import math
import os
import re

import jinja2
import numpy as np

from aot.dtypes import BYTES as DTYPE_BYTES, quant_literals
from aot.errors import AotError
from aot.names import comment_safe, sanitize
from aot import targets
from aot.target import Target

from .c_renderer import C_TYPES, CRenderer

ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.join(os.path.dirname(__file__), "templates")),
                          keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def render_template(name, **kw):
    return ENV.get_template(name).render(**kw)


def format_values(a: np.ndarray, per_line=8):
    flat = a.reshape(-1)
    if str(a.dtype) in ("float16", "bfloat16"):     # stored as 16-bit patterns (uint16_t)
        return format_values(a.view(np.uint16), per_line)
    if a.dtype.kind == "f":
        dig = "%.9g" if a.dtype == np.float32 else "%.17g"
        vals = []
        if a.dtype == np.float32 and bool(np.isfinite(flat).all()):
            return _format_float32(flat, per_line)
        for x in (() if vals else flat.tolist()):
            if math.isnan(x):
                vals.append("NAN")
            elif math.isinf(x):
                vals.append("INFINITY" if x > 0 else "-INFINITY")
            elif a.dtype == np.float32:     # a float literal: no double -> float conversion
                t = dig % x
                vals.append(t + ("f" if any(c in t for c in ".eE") else ".0f"))
            else:
                vals.append(dig % x)
    elif a.dtype == np.bool_:
        vals = ["1" if x else "0" for x in flat.tolist()]
    elif a.dtype == np.int64:
        vals = [f"INT64_C({x})" if not -(1 << 31) < x < (1 << 31) else str(x) for x in flat.tolist()]
    elif a.dtype == np.uint64:
        vals = [f"UINT64_C({x})" for x in flat.tolist()]
    else:
        vals = list(map(str, flat.tolist()))
    lines = [", ".join(vals[i:i + per_line]) for i in range(0, len(vals), per_line)]
    return ",\n".join(map("  ".__add__, lines))


def _format_float32(flat, per_line):
    """format_values' text for finite float32 values (weights: most of a float model's C),
    with one %-format per array instead of one per value: a value that "%.9g" prints as an
    integer ("3", "-0") takes "%.1f" ("3.0", "-0.0"), the others "%.9g", each then "f"."""
    whole = (flat == np.trunc(flat)) & (np.abs(flat) < 1e9)
    if whole.any():
        fmts = np.where(whole, "%.1ff", "%.9gf").tolist()
    else:
        fmts = ["%.9gf"] * len(flat)
    lines = [", ".join(fmts[i:i + per_line]) for i in range(0, len(fmts), per_line)]
    return ("  " + ",\n  ".join(lines)) % tuple(flat.tolist()) if lines else ""


def _main_prototype(plan):
    mod = plan.model_name
    params = []
    if plan.io_offsets is None:
        params += [f"{C_TYPES[t.dtype]}* {c}_buffer_var" for c, _, t in plan.inputs]
        params += [f"{C_TYPES[t.dtype]}* {c}_buffer_var" for c, _, t in plan.outputs]
    params += ["const void* const* constants", "uint8_t* workspace"]
    params += [f"uint8_t* workspace_{k}" for k in range(1, len(plan.pools))]
    params += [f"void* {device_param(d)}" for d in plan.devices]
    return f"int32_t tvmgen_{mod}___tvm_main__({', '.join(params)})"


def _arg_text(plan, a, is_input):
    ctype = C_TYPES[a.dtype]
    const = "const " if is_input else ""
    if a.kind == "input":
        return f"{plan.inputs[a.index][0]}_buffer_var"
    if a.kind == "output":
        return f"{plan.outputs[a.index][0]}_buffer_var"
    if a.kind == "const":
        return f"(const {ctype}*)constants[{a.index}]"
    pool = f"workspace_{a.pool}" if a.pool else "workspace"
    return f"({const}{ctype}*)({pool} + {a.offset})"


def quant_macros(plan, kind, k):
    """The scale (a float literal that reads back as the model's float32) and zero point of a
    quantised input or output, for the header's macros."""
    q = plan.io_quant.get((kind, k))
    if q is None:
        return {}
    scale, zero_point = quant_literals(q[0], q[1])
    return {"scale": scale, "zero_point": zero_point}


def header_from_metadata(mod, aot, main):
    """The header aot writes for an MLF's metadata (its aot block and main function's memory):
    the MLF cross-check compares a header with it, line by line."""
    dev = aot.get("device")

    def io(kind):
        out = []
        for t in aot[kind]:
            e = {"c": t["c_name"], "nbytes": DTYPE_BYTES[t["dtype"]] * int(np.prod(t["shape"], dtype=np.int64))}
            if "scale" in t and not dev:        # a device module's header has no quantisation macros
                e["scale"], e["zero_point"] = quant_literals(t["scale"], t["zero_point"])
            out.append(e)
        return out
    devices = list(aot.get("devices") or [])
    return render_template("model.h.j2", inputs=io("inputs"), outputs=io("outputs"), mod=mod, MOD=mod.upper(),
                           workspace_size=main["workspace_size_bytes"], workspace_io=bool(aot.get("use_workspace_io")),
                           pools=[dict(q, C=q["c"].upper()) for q in aot.get("workspace_pools") or []],
                           device_api=dev["api"] if dev else None, devices=devices,
                           device_entry=bool(dev) and getattr(targets.device_family(dev.get("api")), "device_entry", False),
                           packed=aot.get("interface_api") == "packed", target="",
                           devices_param=f", struct tvmgen_{mod}_devices* devices" if devices else "")


def device_member(backend):
    """The backend's member of struct tvmgen_<mod>_devices (TVM: 'ethos-u' -> ethos_u)."""
    return sanitize(backend)


def device_param(backend):
    return f"device_context_{device_member(backend)}"


def device_hook(backend, what):
    """TVMDevice<Name><what>: TVM's device API ('ethos-u' -> TVMDeviceEthosUActivate)."""
    camel = "".join(w[:1].upper() + w[1:] for w in re.split(r"[^A-Za-z0-9]+", backend) if w)
    return f"TVMDevice{camel}{what}"


def _literal(x):
    if isinstance(x, float):
        if not math.isfinite(x):
            raise AotError(f"call_extern literal {x} is not a finite number")
        t = "%.9g" % x
        return t + ("f" if any(c in t for c in ".eE") else ".0f")
    x = int(x)
    if -(1 << 31) < x < (1 << 31):
        return str(x)
    if 0 <= x < (1 << 32):
        return f"{x}u"
    raise AotError(f"call_extern literal {x} does not fit 32 bits")


class CMain:
    """The C executor's main: one status-checked call per step, by kernel kind. A target whose
    main does more (a GPU host launching kernels) subclasses this and adds its kinds."""

    def __init__(self, plan):
        self.plan = plan

    def call(self, k) -> str:
        method = getattr(self, "call_" + type(k).__name__, None)
        if method is None:
            raise AotError(f"{k.symbol}: a {type(k).__name__} step cannot run from the C executor "
                           "(it needs a device host, not a C main)")
        return method(k)

    def args(self, k):
        return [_arg_text(self.plan, a, j < k.num_inputs) for j, a in enumerate(k.args)]

    def call_GeneratedKernel(self, k):
        return f"{k.symbol}({', '.join(self.args(k))})"

    def call_ExternalCall(self, k):
        lits = [f"INT32_C({int(x)})" for x in k.literals]
        dev = [device_param(k.device)] if k.device else []
        return f"{k.symbol}({', '.join(self.args(k) + lits + dev)})"

    @staticmethod
    def init_call(c, context) -> str:
        """An at_init call as a C statement of the host's init: literals and the device context."""
        args = [context if isinstance(a, tuple) and a[0] == "device" else _literal(a) for a in c.args]
        return f"if ({c.symbol}({', '.join(args)}) != 0) {{\n    return -1;\n  }}"

    def external_function(self, k) -> str:
        """The definition of a partitioned region's function: its calls in order, each checked."""
        params = [(("const " if j < k.num_inputs else "") + f"{C_TYPES[a.dtype]}*", f"p{j}")
                  for j, a in enumerate(k.args)]
        if k.scratch_bytes:
            params[-1] = ("uint8_t*", "scratch")
        if k.device:
            params.append(("void*", device_param(k.device)))
        n_tensors = len(k.args) - (1 if k.scratch_bytes else 0)
        used, lines = set(), []
        for c in k.body:
            args = []
            for a in c.args:
                if isinstance(a, tuple) and a[0] == "param":
                    if not 0 <= a[1] < n_tensors:
                        raise AotError(f"{k.symbol}: call {c.symbol} names parameter {a[1]} of {n_tensors}")
                    used.add(f"p{a[1]}")
                    args.append(f"({C_TYPES[k.args[a[1]].dtype]}*)p{a[1]}")
                elif isinstance(a, tuple) and a[0] == "scratch":
                    used.add("scratch")
                    args.append(f"({C_TYPES[a[2]]}*)(scratch + {a[1]})")
                elif isinstance(a, tuple) and a[0] == "device":
                    used.add(device_param(k.device))
                    args.append(device_param(k.device))
                else:
                    args.append(_literal(a))
            lines.append(f"  if ({c.symbol}({', '.join(args)}) != 0) {{\n    return -1;\n  }}")
        unused = [name for _, name in params if name not in used]
        head = f"int32_t {k.symbol}({', '.join(f'{t} {name}' for t, name in params) or 'void'}) {{"
        return "\n".join([head] + [f"  (void){u};" for u in unused] + lines + ["  return 0;", "}"])

    def declarations(self) -> list:
        """Prototypes of the external symbols that no shipped header declares."""
        out, seen = [], set()
        for k in self.plan.calls:
            if type(k).__name__ != "ExternalCall" or k.includes or k.symbol in seen or k.prim_func is not None:
                continue
            if k.body:
                raise AotError(f"{k.symbol}: its calls ({', '.join(sorted({c.symbol for c in k.body}))}) need a "
                               "header that declares them: give the backend's header in _register_codegen(includes=...)")
            seen.add(k.symbol)
            params = [("const " if j < k.num_inputs else "") + f"{C_TYPES[a.dtype]}*" for j, a in enumerate(k.args)]
            params += ["int32_t"] * len(k.literals)
            params += ["void*"] if k.device else []
            out.append(f"int32_t {k.symbol}({', '.join(params) or 'void'});")
        return out

    def includes(self, exclude=()) -> list:
        """The headers the calls need, but those of functions defined in a module of `exclude`
        (that module's file includes them: a header that defines code must be included once)."""
        return sorted({h for k in self.plan.calls if getattr(k, "module", None) not in exclude
                       for h in getattr(k, "includes", ())})


def with_external_sources(out, plan):
    """out plus the C files external calls bring: headers to include/, sources to src/."""
    for name, text in sorted(plan.sources.items()):
        # .c files are compiled with the model; anything else (headers, a UMA backend's included
        # conv2dnchw.cc) is included, so it goes where the include path points
        path = f"codegen/host/{'src' if name.endswith('.c') else 'include'}/{name}"
        if path in out:
            raise AotError(f"external source '{name}' would replace a generated file")
        out[path] = text
    return out


def emit_c(plan, target="c", const_section=".rodata.tvm", workspace_section=".bss.noinit.tvm", debug=False,
           interface_api="c"):
    """{relative path: text} for the codegen/host tree. debug: main hands every kernel output
    to tvmgen_<mod>_debug_record(kernel, output, data, nbytes) right after the kernel (aot debug).
    Each constant array is aligned to plan.const_align bytes (TVM's constants-byte-alignment)."""
    mod, MOD = plan.model_name, plan.model_name.upper()
    for c in plan.calls:
        if getattr(c, "init_body", ()):
            raise AotError(f"target '{target}': backend '{c.device or c.symbol}' asks for calls at init "
                           f"({', '.join(sorted({i.symbol for i in c.init_body}))}), which need a target whose "
                           "host has an init entry point (cuda)")
    renderer = CRenderer()
    renderer.openmp = Target(target).family.openmp
    # only a generated kernel's call site is known alias-free; anything else prints without restrict
    restrict = {id(c.func): getattr(c, "no_alias", False) for c in plan.calls if hasattr(c, "func")}
    # a partitioned module's functions (a partition target's kernels, a plug-in backend's regions)
    # go to a file of their own, lib2, lib3, ... numbered by the module's first call
    module_of = {id(c.func): getattr(c, "module", None) for c in plan.calls if hasattr(c, "func")}
    modules = {}
    for c in plan.calls:
        defines = hasattr(c, "func") or getattr(c, "body", ()) or getattr(c, "prim_func", None) is not None
        if getattr(c, "module", None) and defines and c.module not in modules:
            r = CRenderer()
            r.openmp = renderer.openmp
            modules[c.module] = {"renderer": r, "functions": [], "includes": set()}
    module_decls, functions = [], []

    def define(module, comment, render, declare, includes=()):
        """The function in lib1 (module None) or in its module's file, declared in lib1."""
        if module is None:
            functions.append({"comment": comment, "text": render(renderer)})
            return
        m = modules[module]
        m["functions"].append({"comment": comment, "text": render(m["renderer"])})
        m["includes"].update(includes)
        module_decls.append(declare(m["renderer"]) + ";")
    for f in plan.funcs:
        define(module_of[id(f)], comment_safe(f.name), lambda r, f=f: r.function(f, restrict[id(f)]),
               lambda r, f=f: r.signature(f, restrict[id(f)]))
    main = CMain(plan)
    for c in plan.calls:
        if getattr(c, "body", ()):
            text = main.external_function(c)
            define(getattr(c, "module", None),
                   comment_safe(f"{c.symbol}: external function (" + ", ".join(e.symbol for e in c.body) + ")"),
                   lambda r, text=text: text, lambda r, text=text: text.split("\n", 1)[0][:-2], c.includes)
    # UMA's TIR route: the region's function is the PrimFunc its backend's TIR passes left
    for c in plan.calls:
        if getattr(c, "prim_func", None) is not None:
            define(getattr(c, "module", None),
                   comment_safe(f"{c.symbol}: external function, lowered through its backend TIR passes"),
                   lambda r, c=c: r.function(c.prim_func, restrict=False),
                   lambda r, c=c: r.signature(c.prim_func, restrict=False), c.includes)
    devices = plan.devices
    clash = [d for d in devices if [device_member(e) for e in devices].count(device_member(d)) > 1]
    if clash:
        raise AotError(f"backends {', '.join(repr(d) for d in clash)} have the same C name in struct "
                       f"tvmgen_{mod}_devices: rename one")
    hooks = [device_hook(d, w) for d in devices for w in ("Open", "Activate", "Deactivate", "Close")]
    opens = [f"{device_hook(d, 'Open')}({device_param(d)})" for d in devices]
    closes = [f"{device_hook(d, 'Close')}({device_param(d)})" for d in reversed(devices)]
    activate = [[f"{device_hook(c.device, 'Activate')}({device_param(c.device)})"] if getattr(c, "device", None)
                else [] for c in plan.calls]
    deactivate = [[f"{device_hook(c.device, 'Deactivate')}({device_param(c.device)})"] if getattr(c, "device", None)
                  else [] for c in plan.calls]
    calls, used, records = [], set(), []
    for c in plan.calls:
        n_in = c.num_inputs
        calls.append(main.call(c))
        used.update((a.kind, a.index if a.kind in ("input", "output") else a.pool) for a in c.args)
        outs = c.args[n_in:len(c.args) - (1 if getattr(c, "scratch_bytes", 0) else 0)]
        records.append([{"output": j, "ptr": _arg_text(plan, a, False), "size": a.size, "ctype": C_TYPES[a.dtype]}
                        for j, a in enumerate(outs)] if debug else [])
    unused = []
    if plan.io_offsets is None:
        unused += [f"{cn}_buffer_var" for k, (cn, _, _) in enumerate(plan.inputs) if ("input", k) not in used]
        unused += [f"{cn}_buffer_var" for k, (cn, _, _) in enumerate(plan.outputs) if ("output", k) not in used]
    if ("const", 0) not in used:
        unused.append("constants")
    for k in range(max(1, len(plan.pools))):
        if ("workspace", k) not in used:
            unused.append(f"workspace_{k}" if k else "workspace")
    proto = _main_prototype(plan)
    def io(lst, kind):
        return [dict({"c": c, "nbytes": t.nbytes,
                      "offset": plan.io_offsets[(kind, k)] if plan.io_offsets is not None else None,
                      "pool": plan.pools[plan.io_pools[(kind, k)]]["c"] if plan.io_pools else None},
                     **quant_macros(plan, kind, k))
                for k, (c, _, t) in enumerate(lst)]
    constants = [{"name": name, "ctype": C_TYPES[str(a.dtype)], "size": max(a.size, 1),
                  "comment": comment_safe(f"{list(a.shape)} {a.dtype}"),
                  "body": format_values(a) if a.size else "  0"} for name, a in plan.constants]
    packed = interface_api == "packed"
    if packed and (devices or plan.pools or plan.io_offsets is not None):
        raise AotError("--interface-api packed takes only the inputs and outputs: devices, workspace pools and "
                       "--use-workspace-io need --interface-api c")
    defines = sorted(Target(target).family.c_defines(Target(target)).items())
    common = dict(mod=mod, MOD=MOD, target=comment_safe(target), devices=[device_member(d) for d in devices], packed=packed,
                  devices_param=f", struct tvmgen_{mod}_devices* devices" if devices else "")
    ws_io = plan.io_offsets is not None
    pools = [dict(p, C=p["c"].upper()) for p in plan.pools]
    header = render_template("model.h.j2", inputs=io(plan.inputs, "input"), outputs=io(plan.outputs, "output"),
                             workspace_size=plan.workspace_size, workspace_io=ws_io, pools=pools, device_api=None,
                             **common)
    lib0 = render_template("lib0.c.j2", inputs=io(plan.inputs, "input"), outputs=io(plan.outputs, "output"),
                           constants=constants, workspace_io=ws_io, pools=pools,
                           workspace_size=plan.workspace_size, main_prototype=proto,
                           const_section=const_section, workspace_section=workspace_section,
                           const_align=int(plan.const_align), **common)
    lib1 = render_template("lib1.c.j2", functions=functions, helpers=renderer.helper_definitions(),
                           externs=main.declarations(), includes=main.includes(exclude=modules),
                           main_prototype=proto, main_unused=unused, calls=calls, debug=debug, hooks=hooks,
                           opens=opens, closes=closes, activate=activate, deactivate=deactivate,
                           records=records, module_decls=module_decls, defines=defines, **common)
    out = {
        f"codegen/host/include/tvmgen_{mod}.h": header,
        f"codegen/host/src/{mod}_lib0.c": lib0,
        f"codegen/host/src/{mod}_lib1.c": lib1,
    }
    for k, (name, m) in enumerate(modules.items()):
        out[f"codegen/host/src/{mod}_lib{k + 2}.c"] = render_template(
            "lib_module.c.j2", mod=mod, module=comment_safe(name), functions=m["functions"],
            helpers=m["renderer"].helper_definitions(), includes=sorted(m["includes"]))
    return with_external_sources(out, plan)
