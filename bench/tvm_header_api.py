"""Check runtime_c/include against the public headers of TVM's standalone CRT, declaration by declaration.

    python bench/tvm_header_api.py --tvm PATH/TO/apache-tvm-git [--dlpack PATH/TO/dlpack-git] [--ours INCLUDE_DIR] [-v] [--pin tests/host/data/crt_header_api.json]

The headers are read from a TVM git repository at 513c2be (`fetch github:apache/tvm`, or any clone);
nothing of TVM's is kept in this project. Each public declaration of each header (function
prototypes, object-like and function-like macros, enumerators, typedefs, struct and union fields,
variables) is found with clang's JSON AST (macros with `gcc -E -dD`), and turns into a one-line C
probe compiled against ours with -std=c99 -Wall -Wextra -Werror -pedantic, after including the
header at TVM's path:

- a function: `__typeof__(&f)` is the type TVM declares (__builtin_types_compatible_p);
- an enumerator: it is not a macro, its type is int, its value is TVM's;
- a macro: it is defined; where TVM's expands to an integer constant, ours has TVM's value;
- a typedef: the same type; a struct or union: each field of the same type at TVM's offset
  (offsets measured on this host against TVM's headers, and ours);
- a variable: the same type.

It prints, per header, "present and compatible / total" and each declaration that is not,
then the totals of header files present and of declarations, over the headers a firmware built
against an AOT MLF uses (CLIENT: what TVM's own AOT and standalone clients include) and over all.
The rest (REFUSED) are the parts of TVM's CRT that aot does not ship, by design, said why.

`--pin FILE` writes the probes that hold, per header, for tests/host/test_crt_header_api.py (which
compiles them in CI without a TVM checkout, so that a declaration we claim cannot regress).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REF = "513c2be"
ROOT = Path(__file__).resolve().parent.parent
OURS = ROOT / "runtime_c" / "include"
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
# TVM's own headers are not -pedantic clean (kTvmErrorSystemErrorMask is 0xff000000, beyond int)
TVM_FLAGS = ["-std=gnu99", "-Werror"]

# header at its standalone-CRT path -> its path in TVM's tree (cmake/modules/StandaloneCrt.cmake's copy jobs)
_CRT = ["aot_executor.h", "aot_executor_module.h", "crt.h", "error_codes.h", "func_registry.h",
        "graph_executor.h", "graph_executor_module.h", "logging.h", "microtvm_rpc_server.h", "module.h",
        "packed_func.h", "page_allocator.h", "platform.h", "rpc_common/frame_buffer.h",
        "rpc_common/framing.h", "rpc_common/session.h", "rpc_common/write_stream.h", "stack_allocator.h"]
HEADERS = {
    "dlpack/dlpack.h": "include/dlpack/dlpack.h",   # in dlpack's repository, at TVM's submodule commit
    "tvm/runtime/c_runtime_api.h": "include/tvm/runtime/c_runtime_api.h",
    "tvm/runtime/c_backend_api.h": "include/tvm/runtime/c_backend_api.h",
    "tvm/runtime/metadata_types.h": "include/tvm/runtime/metadata_types.h",
    **{f"tvm/runtime/crt/{h}": f"include/tvm/runtime/crt/{h}" for h in _CRT},
}
# what a firmware over an AOT MLF includes: TVM's clients at 513c2be (apps/microtvm/cmsisnn, ethosu,
# zephyr_cmsisnn, zephyr/template_project/src/aot_standalone_demo and mlperftiny, the arduino
# example_project, python/tvm/testing/aot.py's generated main), the generated C (c_backend_api.h),
# and what those headers include
CLIENT = {
    "dlpack/dlpack.h": "the data headers of TVM's AOT harness, every platform.c",
    "tvm/runtime/c_runtime_api.h": "every AOT client's main",
    "tvm/runtime/c_backend_api.h": "the generated C",
    "tvm/runtime/crt/error_codes.h": "platform.c of the Zephyr and Arduino projects",
    "tvm/runtime/crt/logging.h": "aot_standalone_demo, mlperftiny",
    "tvm/runtime/crt/platform.h": "mlperftiny, the Arduino example project",
    "tvm/runtime/crt/stack_allocator.h": "every AOT client's main",
    "tvm/runtime/crt/module.h": "TVM's AOT harness main with debug_last_error",
    "tvm/runtime/crt/func_registry.h": "included by module.h",
    "tvm/runtime/crt/crt.h": "TVMInitializeRuntime, the CRT's one entry point",
    "tvm/runtime/metadata_types.h": "the types of the AOT metadata (--executor aot with metadata)",
}
REFUSED = {
    "tvm/runtime/crt/aot_executor.h": "TVM's run-time AOT executor over a metadata module; aot's executor is the "
    "generated tvmgen_<mod>_run, called directly",
    "tvm/runtime/crt/aot_executor_module.h": "the same executor's packed-function module",
    "tvm/runtime/crt/graph_executor.h": "the graph executor: aot has one executor, the AOT one",
    "tvm/runtime/crt/graph_executor_module.h": "the graph executor's module",
    "tvm/runtime/crt/microtvm_rpc_server.h": "microTVM's host-driven RPC server: aot runs firmware standalone",
    "tvm/runtime/crt/rpc_common/frame_buffer.h": "the RPC server's framing (C++)",
    "tvm/runtime/crt/rpc_common/framing.h": "the RPC server's framing (C++)",
    "tvm/runtime/crt/rpc_common/session.h": "the RPC server's session (C++)",
    "tvm/runtime/crt/rpc_common/write_stream.h": "the RPC server's write stream (C++)",
    "tvm/runtime/crt/packed_func.h": "the RPC runtime's packed-function calls over a global registry (and a "
    "heap); aot's executor is called by name",
    "tvm/runtime/crt/page_allocator.h": "a heap over pages; aot's runtime is heapless (stack_allocator.h)",
}
# declarations of client headers left out, and why
DECL_REFUSED = {}


def git_show(repo, path):
    return subprocess.run(["git", "-C", str(repo), "show", f"{REF}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def extract_tvm(repo, dlpack_repo, dest):
    """TVM's standalone-CRT include tree under dest (with our crt_config.h, which its template's names match).
    dlpack.h comes from dlpack's repository at the commit TVM's 3rdparty/dlpack submodule names."""
    for inc, src in HEADERS.items():
        p = Path(dest) / inc
        p.parent.mkdir(parents=True, exist_ok=True)
        if inc == "dlpack/dlpack.h":
            sub = subprocess.run(["git", "-C", str(repo), "ls-tree", REF, "3rdparty/dlpack"], check=True,
                                 capture_output=True, text=True).stdout.split()[2]
            p.write_text(subprocess.run(["git", "-C", str(dlpack_repo), "show", f"{sub}:{src}"], check=True,
                                        capture_output=True, text=True).stdout)
        else:
            p.write_text(git_show(repo, src))
    # the CRT's internal headers (src/runtime/crt/include), which aot_executor.h includes: parsed, not checked
    internal = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", REF,
                               "src/runtime/crt/include/"], check=True, capture_output=True, text=True).stdout
    for src in internal.split():
        p = Path(dest) / src[len("src/runtime/crt/include/"):]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(git_show(repo, src))
    (Path(dest) / "crt_config.h").write_text((OURS / "crt_config.h").read_text())
    # microtvm_rpc_server.h includes src/support/ssize.h by a path relative to the CRT's root
    ssize = Path(dest).parent / "src" / "support" / "ssize.h"
    ssize.parent.mkdir(parents=True, exist_ok=True)
    ssize.write_text(git_show(repo, "src/support/ssize.h"))


# -- declarations ------------------------------------------------------------------------------
def _ast(inc, incdir):
    lang = ["-x", "c++", "-std=c++17"] if inc.startswith("tvm/runtime/crt/rpc_common") else ["-x", "c", "-std=c99"]
    # microtvm_rpc_server.h uses uint8_t without including stdint.h: a firmware includes it first
    src = f"#include <stdint.h>\n#include <{inc}>\n"
    r = subprocess.run(["clang", *lang, "-fsyntax-only", "-Xclang", "-ast-dump=json", "-I", incdir, "-"],
                       input=src, capture_output=True, text=True)
    if r.returncode:
        return None, lang
    return json.loads(r.stdout), lang


def _decls_of_file(tu, path):
    """Top-level nodes of tu declared in path. clang writes a location's file only where it changes
    from the last one written, so the file is tracked through the dump in order."""
    cur = [None]

    def walk(node):
        if isinstance(node, dict):
            if "offset" in node and "file" in node:
                cur[0] = node["file"]
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    out = []
    for child in tu.get("inner", []):
        before = cur[0]
        loc = child.get("loc", {})
        # a macro-made declaration is where its macro is used (the expansion), else where it is spelt
        f0 = (loc.get("expansionLoc") or {}).get("file") or loc.get("file") or \
            (loc.get("spellingLoc") or {}).get("file")
        walk(child)
        f = f0 or before
        if f and os.path.realpath(f) == os.path.realpath(path) and not child.get("isImplicit"):
            out.append(child)
    return out


def _clean(t):
    """A clang type as C spells it: no attributes; a va_list parameter (which clang shows decayed) as va_list."""
    t = re.sub(r"\s*__attribute__\(\(\w+\)\)", "", t)
    return t.replace("struct __va_list_tag *", "va_list")


def _ptr_type(ftype):
    """'int (int, void *)' -> 'int (*)(int, void *)'."""
    ftype = _clean(ftype)
    i = ftype.index("(")
    return ftype[:i] + "(*)" + ftype[i:]


def declarations(inc, incdir):
    """[(kind, name, detail)] declared in inc, in TVM's tree under incdir."""
    tu, lang = _ast(inc, incdir)
    if tu is None or lang[1] != "c":
        return None   # a C++ header (the RPC server's): no C firmware includes it
    path = os.path.join(incdir, inc)
    decls = []
    seen = set()

    def add(kind, name, detail):
        if (kind, name) not in seen:
            seen.add((kind, name))
            decls.append((kind, name, detail))

    def record(node, tag_name):
        for f in node.get("inner", []):
            if f.get("kind") == "FieldDecl" and f.get("name"):
                add("field", f"{tag_name}.{f['name']}", f["type"]["qualType"])

    def visit(nodes):
        typedef_of = {}
        for n in nodes:
            k = n.get("kind")
            if k == "LinkageSpecDecl":
                visit(n.get("inner", []))
            elif k == "FunctionDecl":
                add("function", n["name"], n["type"]["qualType"])
            elif k == "VarDecl":
                add("variable", n["name"], n["type"]["qualType"])
            elif k == "EnumDecl":
                if not n.get("name"):
                    typedef_of[n["id"]] = n
                for e in n.get("inner", []):
                    if e.get("kind") == "EnumConstantDecl":
                        add("enumerator", e["name"], None)
            elif k == "RecordDecl" and n.get("completeDefinition"):
                if n.get("name"):
                    record(n, f"{n['tagUsed']} {n['name']}")
                else:
                    typedef_of[n["id"]] = n
            elif k == "TypedefDecl":
                qt = n["type"]["qualType"]
                anon = None
                for ch in n.get("inner", []):
                    decl = (ch.get("ownedTagDecl") or ch.get("decl") or {})
                    if decl.get("id") in typedef_of:
                        anon = typedef_of[decl["id"]]
                if anon is not None:
                    # an anonymous struct, union or enum: its fields or enumerators say the rest
                    add("typedef", n["name"], None)
                    record(anon, n["name"])
                elif "(unnamed" in qt or "(anonymous" in qt:
                    add("typedef", n["name"], None)
                else:
                    add("typedef", n["name"], qt)
    visit(_decls_of_file(tu, path))
    if lang[1] == "c":
        decls += macros(inc, incdir, path)
    return decls


def macros(inc, incdir, path):
    r = subprocess.run(["gcc", "-E", "-dD", "-x", "c", "-std=c99", "-I", incdir, "-"],
                       input=f"#include <stdint.h>\n#include <{inc}>\n", capture_output=True, text=True, check=True)
    cur, out = None, []
    for line in r.stdout.splitlines():
        m = re.match(r'# \d+ "([^"]+)"', line)
        if m:
            cur = m.group(1)
            continue
        m = re.match(r"#define (\w+)(\([^)]*\))?\s*(.*)", line)
        if m and cur and os.path.realpath(cur) == os.path.realpath(path):
            name, params, body = m.groups()
            if re.fullmatch(r"TVM_RUNTIME_\w+_H_|DLPACK_DLPACK_H_", name):
                continue    # the include guard
            out.append(("macro", name, "function-like" if params else body))
    return out


# -- values measured against TVM's headers ---------------------------------------------------------
INT_EXPR = re.compile(r"[\s0-9a-fA-FxXuUlL()+\-*/<>|&~^]+")


def measure(decls_by_inc, incdir):
    """{key: integer} for enumerators, integer macros and field offsets, compiled against TVM's headers."""
    lines, keys = [], []
    for inc, decls in decls_by_inc.items():
        if decls is None:
            continue
        for kind, name, detail in decls:
            expr = None
            if kind == "enumerator":
                expr = name
            elif kind == "macro" and detail != "function-like" and detail and INT_EXPR.fullmatch(detail) \
                    and re.search(r"\d", detail):
                expr = f"({name})"
            elif kind == "field":
                tag, field = name.rsplit(".", 1)
                expr = f"offsetof({tag}, {field})"
            if expr:
                keys.append((inc, kind, name))
                lines.append(f'  printf("%lld\\n", (long long)({expr}));')
    incs = "".join(f"#include <{i}>\n" for i in decls_by_inc if decls_by_inc[i] is not None)
    src = "#include <stdio.h>\n#include <stddef.h>\n#include <stdint.h>\n" + incs + "int main(void) {\n" + "\n".join(lines) + "\n  return 0;\n}\n"
    with tempfile.TemporaryDirectory() as d:
        c, exe = os.path.join(d, "m.c"), os.path.join(d, "m")
        Path(c).write_text(src)
        subprocess.run(["gcc", "-std=gnu99", "-w", "-I", incdir, c, "-o", exe], check=True)
        vals = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.split()
    return {k: int(v) for k, v in zip(keys, vals)}


# -- probes ---------------------------------------------------------------------------------------
def probes(inc, decls, values):
    """[(kind, name, probe line)]: each line compiles against a header that declares it compatibly."""
    out = []
    for i, (kind, name, detail) in enumerate(decls):
        chk = f"typedef char p{i}_"
        if kind == "function" and "noreturn" in detail:
            # gcc makes noreturn part of a function's type: the probe's pointer type carries it too
            p = (f"typedef {_ptr_type(detail).replace('(*)', f'(*p{i}_t)', 1)} __attribute__((noreturn)); "
                 f"{chk}[__builtin_types_compatible_p(__typeof__(&{name}), p{i}_t) ? 1 : -1];")
        elif kind == "function":
            p = f"{chk}[__builtin_types_compatible_p(__typeof__(&{name}), {_ptr_type(detail)}) ? 1 : -1];"
        elif kind == "variable":
            p = f"{chk}[__builtin_types_compatible_p(__typeof__({name}), {_clean(detail)}) ? 1 : -1];"
        elif kind == "enumerator":
            v = values.get((inc, kind, name))
            p = (f"#ifdef {name}\n#error {name} is a macro\n#endif\n"
                 f"{chk}[__builtin_types_compatible_p(__typeof__({name}), int) && ({name}) == ({v}) ? 1 : -1];")
        elif kind == "macro":
            v = values.get((inc, kind, name))
            p = f"#ifndef {name}\n#error {name} missing\n#endif"
            if v is not None:
                p += f"\n{chk}[({name}) == ({v}) ? 1 : -1];"
        elif kind == "typedef":
            p = (f"{chk}[__builtin_types_compatible_p({name}, {_clean(detail)}) ? 1 : -1];" if detail
                 else f"{chk}[sizeof({name}) > 0 ? 1 : -1];")
        elif kind == "field":
            tag, field = name.rsplit(".", 1)
            v = values.get((inc, kind, name))
            p = (f"{chk}[__builtin_types_compatible_p(__typeof__((({tag} *)0)->{field}), {_clean(detail)})"
                 + (f" && offsetof({tag}, {field}) == {v}" if v is not None else "") + " ? 1 : -1];")
        else:
            continue
        out.append((kind, name, p))
    return out


def check(inc, plist, incdir=None, flags=STRICT):
    """{name: None if the probe holds, else gcc's first message} for each probe, compiled against incdir."""
    incdir = incdir or str(OURS)
    head = f"#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <{inc}>\n"
    body, line_of = [], []
    n = head.count("\n") + 1
    for kind, name, p in plist:
        for ln in p.split("\n"):
            body.append(ln)
            line_of.append((n, name))
            n += 1
    src = head + "\n".join(body) + "\n"
    with tempfile.TemporaryDirectory() as d:
        c = os.path.join(d, "probe.c")
        Path(c).write_text(src)
        r = subprocess.run(["gcc", *flags, "-fsyntax-only", "-fmax-errors=0", "-I", incdir, c],
                           capture_output=True, text=True)
    res = {name: None for _, name, _ in plist}
    if r.returncode == 0:
        return res
    by_line = dict(line_of)
    header_error = None
    for m in re.finditer(r"^(.*?):(\d+):\d+: (?:error|fatal error): (.*)$", r.stderr, re.M):
        f, ln, msg = m.group(1), int(m.group(2)), m.group(3)
        if f == c and ln in by_line:
            if res[by_line[ln]] is None:
                res[by_line[ln]] = msg
        elif header_error is None:
            header_error = msg
    if header_error is not None:   # the header itself does not compile (or is missing): nothing holds
        return {name: header_error for name in res}
    if all(v is None for v in res.values()):
        return {name: r.stderr.strip().splitlines()[0] for name in res}
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tvm", required=True, help="a TVM git repository holding 513c2be")
    ap.add_argument("--dlpack", help="a dlpack git repository (fetch github:dmlc/dlpack; default: "
                    "dmlc+dlpack/repo beside the TVM one)")
    ap.add_argument("--ours", help="the include tree to check (default: runtime_c/include)")
    ap.add_argument("-v", action="store_true", help="list every declaration")
    ap.add_argument("--pin", help="write the probes that hold, per header, to this JSON file")
    ap.add_argument("--json", help="write the results as JSON")
    a = ap.parse_args()
    global OURS
    if a.ours:
        OURS = Path(a.ours).resolve()
    with tempfile.TemporaryDirectory() as tvm_root:
        tvm_inc = os.path.join(tvm_root, "include")   # the standalone CRT's include/ (src/ beside it)
        dl = a.dlpack or str(Path(a.tvm).resolve().parent.parent / "dmlc+dlpack" / "repo")
        if not (Path(dl) / "HEAD").exists() and not (Path(dl) / ".git").exists():
            sys.exit(f"error: no dlpack git repository at {dl} (fetch github:dmlc/dlpack, or pass --dlpack): TVM's "
                     "3rdparty/dlpack is a submodule, not in TVM's own repository")
        extract_tvm(a.tvm, dl, tvm_inc)
        decls = {inc: declarations(inc, tvm_inc) for inc in HEADERS}
        values = measure(decls, tvm_inc)
        # the probes are checked against TVM's own headers first: a probe TVM fails is this tool's bug
        results, pinned = {}, {}
        for inc in HEADERS:
            if decls[inc] is None:
                results[inc] = None
                continue
            pl = probes(inc, decls[inc], values)
            if inc in CLIENT or inc in REFUSED:
                self_check = check(inc, pl, tvm_inc, TVM_FLAGS)
                bad = {k: v for k, v in self_check.items() if v}
                if bad:
                    print(f"probe error against TVM's own {inc}: {bad}", file=sys.stderr)
            ours_present = (OURS / inc).is_file()
            res = check(inc, pl) if ours_present else {n: "header missing" for _, n, _ in pl}
            results[inc] = (ours_present, pl, res)
            good = [(k, n, p) for k, n, p in pl if res[n] is None]
            if good:
                pinned[inc] = [{"kind": k, "name": n, "probe": p} for k, n, p in good]
    totals = {"client": [0, 0, 0, 0], "all": [0, 0, 0, 0]}
    report = {}
    for group, incs in (("client", list(CLIENT)), ("refused", list(REFUSED))):
        print(f"\n== {'headers a firmware over an AOT MLF uses' if group == 'client' else 'refused by design'}")
        for inc in incs:
            r = results.get(inc)
            if r is None:
                print(f"{inc}: C++ only, not counted in declarations ({REFUSED.get(inc)})")
                totals["all"][1] += 1
                totals["all"][0] += (OURS / inc).is_file()
                continue
            present, pl, res = r
            ok = sum(v is None for v in res.values())
            why = CLIENT.get(inc) or REFUSED.get(inc)
            print(f"{inc}: {'present' if present else 'MISSING'}, {ok}/{len(pl)} declarations ({why})")
            report[inc] = {"present": present, "ok": ok, "total": len(pl),
                           "missing": {n: v for n, v in res.items() if v}}
            for kind, name, _ in pl:
                if res[name] is not None and (present or a.v):
                    print(f"    {kind} {name}: {res[name]}" + (f" [{DECL_REFUSED[name]}]" if name in DECL_REFUSED else ""))
                elif a.v:
                    print(f"    ok {kind} {name}")
            for key in (("client", "all") if group == "client" else ("all",)):
                t = totals[key]
                t[0] += present
                t[1] += 1
                t[2] += ok
                t[3] += len(pl)
    for key, t in totals.items():
        print(f"\n{key}: header files present {t[0]}/{t[1]}, declarations present and compatible {t[2]}/{t[3]}")
    if a.pin:
        Path(a.pin).parent.mkdir(parents=True, exist_ok=True)
        Path(a.pin).write_text(json.dumps({"ref": REF, "headers": {k: v for k, v in pinned.items() if k in CLIENT}},
                                          indent=1) + "\n")
    if a.json:
        Path(a.json).write_text(json.dumps({"totals": totals, "headers": report}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
