"""Cross-checks of an MLF whose metadata is well formed: the header against the metadata, the
listed sources against the members, the memory plan against the workspace, and every member
against the digest aot recorded when it wrote the MLF.

Each consumer builds from two witnesses that must agree: the harness is generated from the
metadata, the model from the header and the sources. A contradiction between them compiles into
a wrong answer or a crash, so it is refused here, naming both sides, before any compiler starts."""
from __future__ import annotations

import hashlib
import re

import numpy as np

from aot.dtypes import BYTES as DTYPE_BYTES, quant_literals

SRC_DIR = "codegen/host/src/"
COMPILED = (".c", ".cc", ".cpp", ".cu")       # what a build compiles, where it is listed
INCLUDE_DIRS = ("codegen/host/include/", "runtime/include/")
# headers a consumer's compiler takes from the C library: a member that would stand in for one
# (found first on the -I path or next to a source) changes what every source means
STD_HEADERS = frozenset("""assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h limits.h
locale.h math.h setjmp.h signal.h stdarg.h stdbool.h stddef.h stdint.h stdio.h stdlib.h string.h tgmath.h
time.h wchar.h wctype.h omp.h""".split())
# includes that name what an MLF itself provides: each must resolve to a member
OWN_INCLUDE = re.compile(r"^(tvm/|dlpack/|tvmgen_|crt_config\.h$)")
DEFINE_RE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?:\(|[ \t]*)(.*?)[ \t]*$", re.M)
INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]*)[>"]', re.M)


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def digests_of(files: dict) -> dict:
    """{member path: sha256 hex} of every member but metadata.json (which records them)."""
    return {p: digest(raw) for p, raw in sorted(files.items()) if p != "metadata.json"}


def _text(files, path):
    return files[path].decode("utf-8", "replace")


def _struct_members(header, name):
    """The members of `struct name { ... };` in order, or None where the header has no such struct."""
    m = re.search(r"struct\s+" + re.escape(name) + r"\s*\{(.*?)\}\s*;", header, re.S)
    if m is None:
        return None
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    return re.findall(r"(\w+)\s*;", body)


def _prototype(header, fname):
    """The parameter list of the declaration of `fname`, or None."""
    m = re.search(r"\b" + re.escape(fname) + r"\s*\(([^)]*)\)\s*;", header)
    return None if m is None else " ".join(m.group(1).split())


def cross_problems(mod, info, aot, main, files, render_header=None) -> list:
    """render_header(mod, aot, main): the header the metadata gives (codegen_c.emit's
    header_from_metadata, which a driver passes: this layer does not reach the code printer)."""
    p = []
    MOD = mod.upper()
    hdr = f"codegen/host/include/tvmgen_{mod}.h"
    if hdr in files:
        n = len(p)
        _header(_text(files, hdr), mod, MOD, hdr, aot, main, p)
        if len(p) == n and render_header is not None:     # nothing named: compare it whole
            _header_whole(_text(files, hdr), mod, hdr, aot, main, p, render_header)
    _io_sizes(aot, main, p)
    _members(aot, files, p)
    _build_lists(aot, files, p)
    _includes(files, p)
    _plan(aot, main, p)
    _kernels(mod, info, aot, files, p)
    _graph(mod, aot, files, p)
    return p


def _expected_macros(mod, MOD, aot, main):
    """{macro: (value text, what in the metadata gives it)}."""
    want = {f"TVMGEN_{MOD}_H_": ("", "the include guard")}
    for kind in ("inputs", "outputs"):
        for k, t in enumerate(aot[kind]):
            n = DTYPE_BYTES[t["dtype"]] * int(np.prod(t["shape"], dtype=np.int64))
            C = t["c_name"].upper()
            want[f"TVMGEN_{MOD}_{C}_SIZE"] = (str(n), f"aot.{kind}[{k}] {t['dtype']}{t['shape']}")
            if "scale" in t and not aot.get("device"):     # a device module's header has no quantisation macros
                s, z = quant_literals(t["scale"], t["zero_point"])
                want[f"TVMGEN_{MOD}_{C}_SCALE"] = (s, f"aot.{kind}[{k}].scale {t['scale']!r}")
                want[f"TVMGEN_{MOD}_{C}_ZERO_POINT"] = (z, f"aot.{kind}[{k}].zero_point {t['zero_point']!r}")
    want[f"TVMGEN_{MOD}_WORKSPACE_SIZE"] = (str(main["workspace_size_bytes"]),
                                           "memory.functions.main[0].workspace_size_bytes")
    for k, q in enumerate(aot.get("workspace_pools") or []):
        want[f"TVMGEN_{MOD}_{q['c'].upper()}_WORKSPACE_POOL_SIZE"] = (str(q["size"]),
                                                                      f"aot.workspace_pools[{k}].size")
    return want


def _header(text, mod, MOD, hdr, aot, main, p):
    got = {}
    for m in DEFINE_RE.finditer(text):
        if m.group(1) in got:
            p.append(f"the header ./{hdr} defines {m.group(1)} twice")
        got[m.group(1)] = m.group(2)
    want = _expected_macros(mod, MOD, aot, main)
    for name, (value, source) in want.items():
        if name not in got:
            p.append(f"the header ./{hdr} lacks {name}, which metadata {source} implies")
        elif got[name] != value:
            verb = "gives" if "[" in source.split()[0] and " " in source else "is"
            p.append(f"the header's {name} is {got[name] or 'empty'}, metadata {source} {verb} {value}")
    for name in got:
        if name not in want:
            p.append(f"the header ./{hdr} defines {name}, which its metadata does not account for")
    # the harness fills the structs by the metadata's C names and calls run as the metadata says
    wsio, pools, devices = bool(aot.get("use_workspace_io")), aot.get("workspace_pools") or [], aot.get("devices") or []
    for kind in ("inputs", "outputs"):
        names = [t["c_name"] for t in aot[kind]] or (["unused_"] if kind == "inputs" else [])
        have = _struct_members(text, f"tvmgen_{mod}_{kind}")
        if have is None:
            p.append(f"the header ./{hdr} lacks struct tvmgen_{mod}_{kind}")
        elif have != names:
            p.append(f"the header's struct tvmgen_{mod}_{kind} has members {have}, metadata aot.{kind} "
                     f"gives the C names {names}")
    for what, lst in (("workspace_pools", [q["c"] for q in pools]), ("devices", list(devices))):
        have = _struct_members(text, f"tvmgen_{mod}_{what}")
        if (have or []) != lst:
            p.append(f"the header's struct tvmgen_{mod}_{what} has members {have or []}, metadata aot.{what} "
                     f"gives {lst}")
    run = _prototype(text, f"tvmgen_{mod}_run")
    api = aot.get("interface_api", "c")
    if run is None:
        p.append(f"the header ./{hdr} does not declare tvmgen_{mod}_run")
    else:
        packed = "TVMValue" in run
        if packed != (api == "packed"):
            p.append(f"the header declares tvmgen_{mod}_run({run}), the {'packed' if packed else 'c'} entry "
                     f"point; metadata aot.interface_api is '{api}'")
        elif not packed:
            params = [] if (wsio and pools) else [f"struct tvmgen_{mod}_inputs* inputs",
                                                  f"struct tvmgen_{mod}_outputs* outputs"]
            params += [f"struct tvmgen_{mod}_workspace_pools* workspace_pools"] if pools else []
            params += [f"struct tvmgen_{mod}_devices* devices"] if devices else []
            if run != ", ".join(params):
                p.append(f"the header declares tvmgen_{mod}_run({run}); metadata (aot.use_workspace_io "
                         f"{str(wsio).lower()}, {len(pools)} workspace pools, {len(devices)} devices) "
                         f"gives tvmgen_{mod}_run({', '.join(params)})")
    mapped = _prototype(text, f"tvmgen_{mod}_map_inputs") is not None
    if mapped != wsio:
        p.append(f"the header {'declares' if mapped else 'lacks'} tvmgen_{mod}_map_inputs, metadata "
                 f"aot.use_workspace_io is {str(wsio).lower()}")
    init = _prototype(text, f"tvmgen_{mod}_init") is not None
    if init != bool(aot.get("device")):
        p.append(f"the header {'declares' if init else 'lacks'} tvmgen_{mod}_init (a device module's), metadata "
                 f"aot.device is {'absent' if not aot.get('device') else repr(aot['device'].get('api'))}")


def _header_whole(text, mod, hdr, aot, main, p, render_header):
    want = render_header(mod, aot, main)
    if text == want:
        return
    a, b = text.split("\n"), want.split("\n")
    k = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    got_line = repr(a[k][:100]) if k < len(a) else "the end of the file"
    want_line = repr(b[k][:100]) if k < len(b) else "the end of the file"
    p.append(f"the header ./{hdr} differs from the one its metadata gives: line {k + 1} is {got_line}, "
             f"the metadata gives {want_line}")


def _io_sizes(aot, main, p):
    total = sum(DTYPE_BYTES[t["dtype"]] * int(np.prod(t["shape"], dtype=np.int64))
                for kind in ("inputs", "outputs") for t in aot[kind])
    if main["io_size_bytes"] != total:
        p.append(f"memory.functions.main[0].io_size_bytes is {main['io_size_bytes']}, the inputs and outputs of "
                 f"aot.inputs/aot.outputs add up to {total}")


def _members(aot, files, p):
    listed = set(aot["sources"])
    dev = aot.get("device")
    if isinstance(dev, dict):
        listed |= set(dev.get("sources") or [])
    for path in sorted(files):
        if path.startswith(SRC_DIR) and path.endswith(COMPILED) and path not in listed:
            p.append(f"member ./{path} is not listed in metadata aot.sources"
                     + (" or aot.device.sources" if dev else "") + ": a build would leave it out")
    for path in sorted(files):
        name = None
        for d in INCLUDE_DIRS + (SRC_DIR,):
            if path.startswith(d):
                name = path[len(d):]
        if name in STD_HEADERS:
            p.append(f"member ./{path} would stand in for the C library's <{name}>")


def _build_lists(aot, files, p):
    """The Make and CMake fragments list the sources a build compiles, as aot.sources does."""
    listed = set(aot["sources"]) | set((aot.get("device") or {}).get("sources") or [])
    listed = {s for s in listed if s.endswith(COMPILED)}
    for frag in ("mlf.mk", "mlf.cmake"):
        if frag in files:
            named = set(re.findall(r"codegen/host/src/[\w.-]+\.(?:c|cc|cpp|cu)\b", _text(files, frag)))
            if named != listed:
                p.append(f"member ./{frag} compiles {sorted(named)}, metadata aot.sources lists {sorted(listed)}")


def _includes(files, p):
    """Every include of an MLF's own headers, from its C and headers, names a member."""
    for path in sorted(files):
        if not (path.endswith((".c", ".h")) and (path.startswith(SRC_DIR) or path.startswith(INCLUDE_DIRS))):
            continue
        here = path.rsplit("/", 1)[0] + "/"
        for m in INCLUDE_RE.finditer(_text(files, path)):
            inc = m.group(2)
            if not OWN_INCLUDE.match(inc):
                continue
            cands = ([here + inc] if m.group(1) == '"' else []) + [d + inc for d in INCLUDE_DIRS]
            found = [c for c in cands if c in files]
            if len(found) > 1 and m.group(1) == '"' and found[0] == here + inc:
                p.append(f"member ./{found[0]} would stand in for ./{found[1]} (included by ./{path})")
            if not found:
                p.append(f"member ./{path} includes {m.group(1)}{inc}{'>' if m.group(1) == '<' else chr(34)}, "
                         f"which is not a member (./{INCLUDE_DIRS[0]}{inc} or ./{INCLUDE_DIRS[1]}{inc})")


def _plan(aot, main, p):
    ws = main["workspace_size_bytes"]
    pools = {q["name"]: q["size"] for q in aot.get("workspace_pools") or []}
    if pools and sum(pools.values()) != ws:
        p.append(f"metadata aot.workspace_pools add up to {sum(pools.values())} bytes, "
                 f"memory.functions.main[0].workspace_size_bytes is {ws}")
    lb = aot.get("workspace_lower_bound_bytes")
    if lb is not None and lb > ws:
        p.append(f"metadata aot.workspace_lower_bound_bytes {lb} is above memory.functions.main[0]."
                 f"workspace_size_bytes {ws}")
    for k, r in enumerate(aot.get("workspace_tensors", [])):
        pool = r.get("pool")
        if pool is not None and pool not in pools:
            p.append(f"metadata aot.workspace_tensors[{k}] ('{r['name'][:60]}') is in pool '{pool}', which "
                     f"aot.workspace_pools does not list")
            continue
        size, where = (pools[pool], f"aot.workspace_pools '{pool}' size") if pool is not None else \
            (ws, "memory.functions.main[0].workspace_size_bytes")
        if r["offset"] + r["bytes"] > size:
            p.append(f"metadata aot.workspace_tensors[{k}] ('{r['name'][:60]}') ends at byte "
                     f"{r['offset'] + r['bytes']}, past {where} {size}")
        if r["first"] > r["last"]:
            p.append(f"metadata aot.workspace_tensors[{k}] ('{r['name'][:60]}') is first used at step "
                     f"{r['first']}, after its last use {r['last']}")


def _kernels(mod, info, aot, files, p):
    ops = [f["function_name"] for f in info["memory"]["functions"]["operator_functions"]]
    kernels = aot.get("kernels", [])
    if list(dict.fromkeys(kernels)) != ops:
        p.append(f"metadata aot.kernels {_short(kernels)} are not memory.functions.operator_functions "
                 f"{_short(ops)}")
    sched = aot.get("kernel_schedules", {})
    if set(sched) - set(kernels):
        p.append(f"metadata aot.kernel_schedules names {sorted(set(sched) - set(kernels))[:3]}, which "
                 f"aot.kernels does not list")
    # an instrumented module calls the debug hook, which only `aot debug` links
    hook = f"tvmgen_{mod}_debug_record(".encode()
    if aot.get("debug_records") is None and any(hook in raw for path, raw in files.items()
                                                           if path.startswith(SRC_DIR)):
        p.append(f"the sources call tvmgen_{mod}_debug_record (an aot debug build), metadata has no "
                 f"aot.debug_records")


def _show(x):
    return _short(x)


def _short(x):
    s = repr(x)
    return s if len(s) <= 80 else s[:77] + "..."


def _graph(mod, aot, files, p):
    """The graph's inputs and outputs (src/<mod>.graph or .relay, printed at compile time) against
    aot.inputs/aot.outputs, by position: the shapes a harness gives and reads back."""
    # a relay build's src/<mod>.relay is the relay text (TVM's); the graph is src/<mod>.graph then
    rel = f"src/{mod}.graph" if f"src/{mod}.graph" in files else f"src/{mod}.relay"
    if rel not in files:
        return
    names = [t.get("name") for t in aot["inputs"] + aot["outputs"]]
    if any(not isinstance(n, str) or "\n" in n or "\r" in n for n in names):
        return          # the printer writes names raw: a line break in one leaves nothing to parse by line
    text = _text(files, rel)
    end = text.find("\n}\n")
    body = text[:end if end >= 0 else len(text)]
    ins = [(m.group(2), m.group(3)) for m in
           re.finditer(r"^  input %(.*): (\w+)\[([0-9, ]*)\]$", body, re.M)]
    ret = re.search(r"^  return (.*)$", body, re.M)
    if ret is None:
        p.append(f"member ./{rel} has no return line: the graph's outputs are unknown")
        return
    outs = []
    for entry in ret.group(1).split(", "):
        name = entry.split("=%", 1)[1] if "=%" in entry else entry[1:]
        found = re.findall(r"%" + re.escape(name) + r": (\w+)\[([0-9, ]*)\]", body)
        if len(found) != 1:
            return          # a name the printer's text does not delimit, or gives twice: nothing to compare with
        outs.append(found[0])
    for kind, got in (("inputs", ins), ("outputs", outs)):
        lst = aot[kind]
        if len(got) != len(lst):
            p.append(f"metadata aot.{kind} lists {len(lst)}, the graph in ./{rel} has {len(got)}")
            continue
        for k, (t, (dt, shape)) in enumerate(zip(lst, got)):
            gshape = [int(d) for d in shape.split(", ")] if shape else []
            if t["dtype"] != dt or t["shape"] != gshape:
                p.append(f"metadata aot.{kind}[{k}] ('{t['name']}') is {t['dtype']}{t['shape']}, the graph in "
                         f"./{rel} has {dt}{gshape}")


def digest_problems(aot, files) -> list:
    """Members that differ from, lack, or add to the ones aot wrote (aot.digests)."""
    d = aot.get("digests")
    if not (isinstance(d, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in d.items())):
        return ["metadata aot.digests is not {member path: sha256}: the MLF was not written by this aot release; "
                "compile the model again"]
    p = []
    for path in sorted(files):
        if path == "metadata.json":
            continue
        if path not in d:
            p.append(f"member ./{path} is not one aot wrote (metadata aot.digests does not list it)")
            continue
        h = digest(files[path])
        if h != d[path]:
            p.append(f"member ./{path} differs from the one aot wrote (sha256 {h}, metadata aot.digests "
                     f"records {_show(d[path])})")
    for path in sorted(set(d) - set(files)):
        p.append(f"member ./{path} that aot wrote is missing (metadata aot.digests lists it)")
    return p
