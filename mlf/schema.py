"""The MLF metadata every consumer relies on, checked field by field before anything is built.

The harnesses paste module names, c_names and pool names into C, the builds compile `sources`,
and the runners size buffers from shapes and dtypes: each of those is checked here (identifiers
are C identifiers, sources are C files inside codegen/host/src, shapes are non-negative ints whose
byte sizes agree with metadata and with the header's size macros)."""
from __future__ import annotations

import math
import re

from aot import targets
from aot.dtypes import BYTES as DTYPE_BYTES

from .crosscheck import cross_problems, digest_problems

MLF_VERSION = 7
# The "aot" block is the contract between compile and build (run, size, project, debug). Bump it
# whenever a field is added, removed or changes meaning; a reader accepts only its own version.
AOT_BLOCK_VERSION = 2          # 2: aot.digests
MODULE_RE = re.compile(r"^[a-z0-9_]+$")
MAX_MODULE_NAME = 100           # same bound as --model-name (aot/names.py)
MAX_MODULES = 256               # each is checked over every member: bounded, as members are
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_IDENT = 255
SOURCE_RE = re.compile(r"^codegen/host/src/[A-Za-z0-9_][A-Za-z0-9_.-]*\.c$")
MAX_BYTES = (1 << 32) - 1       # sizes in a 32-bit address space
MAX_TENSOR_BYTES = (1 << 31) - 1


def _is_int(x, lo=0, hi=MAX_BYTES):
    return isinstance(x, int) and not isinstance(x, bool) and lo <= x <= hi


def _is_dtype(x):
    return isinstance(x, str) and x in DTYPE_BYTES


def _c_ident(x):
    from aot.names import C_KEYWORDS
    return isinstance(x, str) and len(x) <= MAX_IDENT and bool(IDENT_RE.match(x)) and x not in C_KEYWORDS


def _show(x):
    s = repr(x)
    return s if len(s) <= 80 else s[:77] + "..."


def _header_macros(text):
    """{macro: its value as written} of the header's #defines."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^#define (\w+)[ \t]*(.*?)[ \t]*$", text, re.M)}


def metadata_problems(meta, files, render_header=None) -> list:
    p = []
    if not isinstance(meta, dict):
        return ["metadata.json is not a JSON object"]
    if meta.get("version") != MLF_VERSION:
        p.append(f"metadata version is {_show(meta.get('version'))}, expected {MLF_VERSION}")
    mods = meta.get("modules")
    if mods is None and meta.get("style") == "operator":
        return p + [f"an operator MLF (style 'operator': the C of one function, '{_show(meta.get('model_name'))[1:-1]}')"
                    " has no executor to build or run; export the module aot.build made with export_library "
                    "for its full MLF"]
    if isinstance(mods, dict) and len(mods) > MAX_MODULES:
        return p + [f"metadata has {len(mods):,} modules, more than any MLF holds (limit {MAX_MODULES})"]
    if isinstance(mods, dict) and len(mods) > 1:
        return p + _modules_problems(meta, mods, files, render_header)
    if not isinstance(mods, dict) or len(mods) != 1:
        return p + ["metadata must have at least one module"]
    mod, info = next(iter(mods.items()))
    if not MODULE_RE.match(mod) or len(mod) > MAX_MODULE_NAME:
        return p + [f"module name {_show(mod)} is not [a-z0-9_]+ of at most {MAX_MODULE_NAME} characters"]
    if not isinstance(info, dict):
        return p + [f"module '{mod}' metadata is not an object"]
    for key in ("executors", "style", "target", "export_datetime", "external_dependencies", "memory"):
        if key not in info:
            p.append(f"module '{mod}' metadata lacks '{key}'")
    if info.get("executors") != ["aot"]:
        p.append("executors must be ['aot']")
    tgt = info.get("target")
    if not (isinstance(tgt, list) and tgt and all(isinstance(t, str) for t in tgt)):
        p.append(f"target {_show(tgt)} is not a list of strings")
    for key in ("style", "export_datetime"):
        if key in info and not isinstance(info[key], str):
            p.append(f"'{key}' {_show(info[key])} is not a string")
    deps = info.get("external_dependencies", [])
    if not (isinstance(deps, list) and all(isinstance(d, dict) and isinstance(d.get("short_name"), str)
                                           and isinstance(d.get("url"), str) for d in deps)):
        p.append(f"external_dependencies {_show(deps)} is not a list of {{short_name, url, ...}}")
    main = _main_memory(info, p)
    aot = info.get("aot")
    if not isinstance(aot, dict):
        return p + [f"module '{mod}' metadata lacks the 'aot' object (inputs, outputs, sources)"]
    if aot.get("version") != AOT_BLOCK_VERSION:
        return p + [f"aot.version is {_show(aot.get('version'))}, this aot reads version {AOT_BLOCK_VERSION}: "
                    "the MLF was written by another aot release; compile the model again"]
    hdr_name = f"codegen/host/include/tvmgen_{mod}.h"
    macros = _header_macros(files[hdr_name].decode("utf-8", "replace")) if hdr_name in files else {}
    c_seen = {"WORKSPACE"}
    for kind in ("inputs", "outputs"):
        _tensors(aot, kind, main, macros, mod, c_seen, p)
    _pools(aot, macros, mod, p)
    _sources(aot, files, mod, p)
    _plan_rows(aot, p)
    for key in ("use_workspace_io",):
        if key in aot and not isinstance(aot[key], bool):
            p.append(f"aot.{key} {_show(aot[key])} is not true/false")
    for key, allowed in (("interface_api", ("c", "packed")), ("io_names", ("model", "tvm"))):
        if key in aot and aot[key] not in allowed:
            p.append(f"aot.{key} {_show(aot[key])} is not one of {', '.join(allowed)}")
    if aot.get("interface_api") == "packed" and (aot.get("use_workspace_io") or aot.get("workspace_pools")):
        p.append("aot.interface_api 'packed' cannot go with workspace pools or use_workspace_io")
    if "stack_bytes" in aot and not (aot["stack_bytes"] is None or _is_int(aot["stack_bytes"])):
        p.append(f"aot.stack_bytes {_show(aot['stack_bytes'])} is not a byte count or null")
    if "stack_bound" in aot and not (isinstance(aot["stack_bound"], dict) and "stack_bytes" in aot):
        p.append("aot.stack_bound is not {board, opt, cflags, compiler, path, frames} beside aot.stack_bytes")
    lb = aot.get("workspace_lower_bound_bytes")
    if lb is not None and not _is_int(lb):
        p.append(f"aot.workspace_lower_bound_bytes {_show(lb)} is not a byte count")
    kernels = aot.get("kernels", [])
    if not (isinstance(kernels, list) and all(isinstance(k, str) for k in kernels)):
        p.append("aot.kernels is not a list of names")
    device = aot.get("device")
    # the kernels are in lib1.c, or in the lib1 file a device compiler builds (lib1.cu for nvcc)
    lib1 = f"codegen/host/src/{mod}_lib1.c"
    compiled = device.get("sources") if isinstance(device, dict) else None
    if isinstance(compiled, list):
        lib1 = next((s for s in compiled if isinstance(s, str) and s.startswith(lib1[:-1])), lib1)
    if device is not None:
        apis = [f.kind for f in targets.FAMILIES if f.is_device]
        family = targets.device_family(device.get("api")) if isinstance(device, dict) else None
        if not (family is not None
                and isinstance(device.get("sources"), list) and isinstance(device.get("libs"), list)
                and all(isinstance(x, str) and x.startswith("-l") and _c_ident(x[2:]) for x in device["libs"])):
            p.append(f"aot.device is not {{api: {'|'.join(apis)}, sources: [...], libs: [-lNAME, ...]}}")
        else:
            for src in device["sources"]:
                if not (isinstance(src, str) and src.startswith("codegen/host/src/")
                        and src.endswith(family.device_sources) and ".." not in src and src in files):
                    p.append(f"aot.device.sources names {_show(src)}, which is not a "
                             f"{'/'.join(family.device_sources) or 'device source'} member of codegen/host/src")
    for f in (hdr_name, f"codegen/host/src/{mod}_lib0.c", lib1,
              f"parameters/{mod}.params", f"src/{mod}.relay", "runtime/include/tvm/runtime/c_runtime_api.h"):
        if f not in files:
            p.append(f"missing member ./{f}")
    _info_fields(aot, p)
    if not p:       # the cross-checks read the fields checked above
        p += cross_problems(mod, info, aot, main, files, render_header)
    # after the contradictions, which name what disagrees: the digests only say what changed
    return p + digest_problems(aot, files)


# members that every module of an MLF may share (the CRT and its templates); any other member
# (its C, header, parameters, relay text) belongs to one module
SHARED_DIRS = ("runtime/", "templates/")


def _modules_problems(meta, mods, files, render_header):
    """An MLF of several modules (TVM's export of a list of relay.build results): each module is
    checked as an MLF of its own, over the members its aot.digests lists, and every member is
    some module's; a member outside runtime/ and templates/ is one module's only."""
    p, owner = [], {}
    for mod, info in mods.items():
        aot = info.get("aot") if isinstance(info, dict) else None
        digests = aot.get("digests") if isinstance(aot, dict) else None
        if not isinstance(digests, dict):
            p.append(f"module {_show(mod)}: metadata aot.digests is not {{member path: sha256}}: the MLF was not "
                     "written by this aot release; compile the model again")
            continue
        for path in digests:
            if path in owner and not path.startswith(SHARED_DIRS):
                p.append(f"member ./{path} is listed by modules '{owner[path]}' and {_show(mod)}: only the CRT "
                         "(runtime/, templates/) is shared")
            owner.setdefault(path, mod)
        own = {f: files[f] for f in files if f in digests or f == "metadata.json"}
        sub = {"version": MLF_VERSION, "modules": {mod: info}}   # the version is checked once, above
        p += [f"module {_show(mod)}: {q}" for q in metadata_problems(sub, own, render_header)]
    if not p:
        p += [f"member ./{f} is not one aot wrote (no module's aot.digests lists it)"
              for f in sorted(files) if f != "metadata.json" and f not in owner]
    return p


def _info_fields(aot, p):
    """The fields only `aot info` reads, so that it prints any MLF that passes."""
    ext = aot.get("external_functions", [])
    ok = isinstance(ext, list) and all(
        isinstance(f, dict) and isinstance(f.get("name"), str) and isinstance(f.get("compiler"), str)
        and isinstance(f.get("calls"), list) and all(isinstance(c, str) for c in f["calls"])
        and _is_int(f.get("scratch_bytes")) and isinstance(f.get("nodes"), list)
        and all(isinstance(n, dict) and isinstance(n.get("name"), str) and isinstance(n.get("op"), str)
                and isinstance(n.get("composite", ""), str) for n in f["nodes"]) for f in ext)
    if not ok:
        p.append("aot.external_functions is not a list of {name, compiler, nodes: [{name, op}], calls, scratch_bytes}")
    sched = aot.get("kernel_schedules", {})
    if not (isinstance(sched, dict) and all(isinstance(v, str) for v in sched.values())):
        p.append("aot.kernel_schedules is not {kernel: schedule}")
    traces = aot.get("schedule_traces", {})
    if not isinstance(traces, dict):
        p.append("aot.schedule_traces is not {kernel: trace}")
    else:
        from aot.tir.trace import format_trace, from_json
        for k, t in traces.items():
            try:
                format_trace(from_json(t), "")
            except Exception:           # noqa: BLE001 -- any failure means the record is not a trace
                p.append(f"aot.schedule_traces['{_show(k)[1:-1]}'] is not a schedule trace")
                break
    devices = aot.get("devices", [])
    if not (isinstance(devices, list) and all(_c_ident(d) for d in devices) and len(set(devices)) == len(devices)):
        p.append(f"aot.devices {_show(devices)} is not a list of distinct C identifiers")
    notes = aot.get("name_notes", [])
    if not (isinstance(notes, list) and all(isinstance(n, str) for n in notes)):
        p.append("aot.name_notes is not a list of strings")


def _main_memory(info, p):
    try:
        main = info["memory"]["functions"]["main"][0]
        ops = info["memory"]["functions"]["operator_functions"]
    except (KeyError, IndexError, TypeError):
        p.append("memory.functions.main[0] / operator_functions missing")
        return {}
    if not isinstance(main, dict):
        p.append("memory.functions.main[0] is not an object")
        return {}
    for key in ("workspace_size_bytes", "constants_size_bytes", "io_size_bytes", "device", "inputs", "outputs"):
        if key not in main:
            p.append(f"memory.functions.main[0] lacks '{key}'")
    for key in ("workspace_size_bytes", "constants_size_bytes", "io_size_bytes"):
        if key in main and not _is_int(main[key]):
            p.append(f"memory.functions.main[0].{key} {_show(main[key])} is not a byte count up to {MAX_BYTES:,}")
    if "device" in main and not _is_int(main["device"], 0, 1 << 16):
        p.append(f"memory.functions.main[0].device {_show(main['device'])} is not a device number")
    for kind in ("inputs", "outputs"):
        d = main.get(kind)
        if d is None:
            continue
        if not isinstance(d, dict) or not all(isinstance(v, dict) and _is_dtype(v.get("dtype"))
                                              and _is_int(v.get("size")) for v in d.values()):
            p.append(f"memory.functions.main[0].{kind} is not {{name: {{dtype, size}}}}")
    if not (isinstance(ops, list) and all(isinstance(f, dict) and _c_ident(f.get("function_name")) for f in ops)):
        p.append("operator_functions is not a list of {function_name: C identifier}")
    return main


def _tensors(aot, kind, main, macros, mod, c_seen, p):
    lst = aot.get(kind)
    if not isinstance(lst, list) or (kind == "outputs" and not lst):
        p.append(f"aot.{kind} is not a {'non-empty ' if kind == 'outputs' else ''}list")
        return
    declared = main.get(kind) if isinstance(main.get(kind), dict) else None
    names, keys = set(), set()
    for k, t in enumerate(lst):
        where = f"aot.{kind}[{k}]"
        if not isinstance(t, dict):
            p.append(f"{where} is not an object")
            continue
        name, c, shape, dtype = t.get("name"), t.get("c_name"), t.get("shape"), t.get("dtype")
        if not isinstance(name, str) or not name:
            p.append(f"{where}.name {_show(name)} is not a non-empty string")
            continue
        where = f"{kind[:-1]} '{name}'"
        if name in names:
            p.append(f"{where} is listed twice")
        names.add(name)
        key = t.get("tvm_name", name)      # --io-names tvm: TVM's key in memory.functions.main[0]
        if not isinstance(key, str) or not key:
            p.append(f"{where}: tvm_name {_show(key)} is not a non-empty string")
            continue
        keys.add(key)
        if not _c_ident(c):
            p.append(f"{where}: c_name {_show(c)} is not a C identifier")
        elif c.upper() in c_seen:
            p.append(f"{where}: c_name '{c}' collides with another tensor's (case-insensitively)")
        else:
            c_seen.add(c.upper())
        if not _is_dtype(dtype):
            p.append(f"{where}: dtype {_show(dtype)} is not one of {', '.join(sorted(DTYPE_BYTES))}")
            continue
        if ("scale" in t) != ("zero_point" in t):
            p.append(f"{where}: a quantised tensor has both a scale and a zero point")
        elif "scale" in t and not (isinstance(t["scale"], (int, float)) and not isinstance(t["scale"], bool)
                                   and math.isfinite(t["scale"]) and t["scale"] > 0 and _is_int(t["zero_point"],
                                                                                                 -(1 << 31), 1 << 31)):
            p.append(f"{where}: scale {_show(t['scale'])} and zero point {_show(t['zero_point'])} are not a positive "
                     "number and an integer")
        if not (isinstance(shape, list) and len(shape) <= 32 and all(_is_int(d, 0, MAX_TENSOR_BYTES) for d in shape)):
            p.append(f"{where}: shape {_show(shape)} is not a list of non-negative integers")
            continue
        nbytes = DTYPE_BYTES[dtype]
        for d in shape:
            nbytes *= d
        if nbytes > MAX_TENSOR_BYTES:
            p.append(f"{where}: shape {shape} of {dtype} is {nbytes:,} bytes, more than {MAX_TENSOR_BYTES:,}")
            continue
        if declared is not None:
            e = declared.get(key)
            if not isinstance(e, dict):
                p.append(f"{where} is missing from memory.functions.main[0].{kind}")
            elif e.get("dtype") != dtype or e.get("size") != nbytes:
                p.append(f"{where}: memory.functions.main[0] says {_show(e.get('dtype'))} of {_show(e.get('size'))} "
                         f"bytes, aot says {dtype}{shape} ({nbytes} bytes)")
        if isinstance(c, str) and _c_ident(c):
            macro = f"TVMGEN_{mod.upper()}_{c.upper()}_SIZE"
            if macros.get(macro) != str(nbytes):
                p.append(f"{where}: the header's {macro} is {macros.get(macro, 'missing')}, "
                         f"not {nbytes} ({dtype}{shape})")
    if declared is not None and set(declared) != keys:
        p.append(f"memory.functions.main[0].{kind} names {sorted(declared)} differ from aot.{kind} {sorted(keys)}")


def _pools(aot, macros, mod, p):
    pools = aot.get("workspace_pools") or []
    if not isinstance(pools, list):
        p.append("aot.workspace_pools is not a list")
        return
    for k, q in enumerate(pools):
        if not (isinstance(q, dict) and _c_ident(q.get("c")) and isinstance(q.get("name"), str)
                and _is_int(q.get("size"))):
            p.append(f"aot.workspace_pools[{k}] is not {{name, c: C identifier, size: bytes}}")
            continue
        macro = f"TVMGEN_{mod.upper()}_{q['c'].upper()}_WORKSPACE_POOL_SIZE"
        if macros.get(macro) != str(q["size"]):
            p.append(f"workspace pool '{q['name']}': the header's {macro} is {macros.get(macro, 'missing')}, "
                     f"not {q['size']}")


def _sources(aot, files, mod, p):
    srcs = aot.get("sources")
    if not (isinstance(srcs, list) and srcs and all(isinstance(s, str) for s in srcs)):
        p.append("aot.sources is not a non-empty list of paths")
        return
    for s in srcs:
        if not SOURCE_RE.match(s) or ".." in s.split("/"):
            p.append(f"source {_show(s)} is not a .c file inside codegen/host/src")
        elif s not in files:
            p.append(f"source '{s}' is not a member of the MLF")
    if len(set(srcs)) != len(srcs):
        p.append("aot.sources lists a file twice")


def _plan_rows(aot, p):
    rows = aot.get("workspace_tensors", [])
    if not isinstance(rows, list):
        p.append("aot.workspace_tensors is not a list")
        return
    for k, r in enumerate(rows):
        ok = (isinstance(r, dict) and isinstance(r.get("name"), str)
              and all(_is_int(r.get(f)) for f in ("bytes", "first", "last", "offset"))
              and all(isinstance(r.get(f), str) for f in ("pool", "in_place_of") if r.get(f) is not None))
        if not ok:
            p.append(f"aot.workspace_tensors[{k}] is not {{name, bytes, first, last, offset}}")
            return
