"""Run TVM's own tests of the Model Library Format and of the generated header / C against aot,
with only their imports changed, and count their assertions.

    python bench/tvm_mlf_tests.py --tvm PATH/TO/apache-tvm-git [--only NAME] [-v] [--json out.json]

The tests are read from a TVM git repository at 513c2be (`fetch github:apache/tvm`, or any clone);
nothing of TVM's is kept in this project. The import swap is bench/tvm_tutorials.py's (README's):
`import tvm` -> `import aot as tvm`, `from tvm.X import Y` -> `from aot.X import Y`, and the module
names given to pytest.importorskip. Nothing else of a test changes.

What is counted, per test and per parameter set (pytest.mark.parametrize, read from the marks the
test's own decorators leave, tvm.testing.parameter fixtures likewise):
- every `assert` statement of the test, and of the module's helper functions it calls: each is
  rewritten into a call that records pass or fail with file:line and goes on, so one failure does
  not hide the assertions after it. An assertion met is one that ran and held each time it ran;
- a `with pytest.raises(...)` block, as one assertion (the asserts inside it are dead code when the
  expected error comes, in TVM as here, and are not counted);
- a test with neither counts one assertion: that it runs to its end (test_name_sanitiser).
An assertion the test never reached counts as unmet, with the error that stopped the test, unless
the test ran to its end (a branch TVM does not take for that parameter set either); a branch whose
condition reads only the parameters is decided from them. A parameter set that is skipped (a skip
mark, pytest.skip, importorskip) or asks for a fixture this harness cannot supply is unmet, with
the reason: nothing is hidden. What the project refuses by design (the graph executor's JSON, the
LLVM backend's object files, downloads, the Corstone-300 reference system) is named in REFUSED and
counted as unmet with its reason too.

Two groups are reported: "MLF assertions" (tests/python/micro/test_micro_model_library_format.py,
every test) and "header tests" (the tests of tests/python/relay/aot that read the generated header,
C sources or function memory map; TESTS says which and why, and EXCLUDED why the others are not).
Besides the per-parameter-set count, each group gives the count of assertion statements (one per
`assert` / `pytest.raises` in its tests, met when met in every parameter set that reaches it).
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import itertools
import json
import linecache
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tvm_tutorials import ImportSwap, git_show, testdata_dir  # noqa: E402

REF = "513c2be"
MLF_FILE = "tests/python/micro/test_micro_model_library_format.py"
CRT_AOT = "tests/python/relay/aot/test_crt_aot.py"
FWD = "tests/python/relay/aot/test_crt_forward_declarations.py"

# group -> {file: {test: why it belongs here}}; a file's tests not named are not run (None: all)
TESTS = {
    "MLF assertions": {MLF_FILE: None},
    "header tests": {
        CRT_AOT: {
            "test_packed_global_variables": "reads every generated C file of the MLF for packed symbols",
            "test_io_size_definition": "the header's TVMGEN_<MOD>_<NAME>_SIZE macros",
            "test_name_sanitiser": "a header with sanitised member names compiles and runs",
            "test_name_sanitiser_name_clash": "a sanitised name clash is refused",
            "test_aot_codegen_backend_alloc_workspace_calls": "the executor C's TVMBackendAllocWorkspace calls",
            "test_constants_alignment": "the constants' section and alignment attribute in the C",
            "test_output_tensor_names": "the TFLite output names in the generated C",
            "test_workspace_calculation": "the main function's workspace size in the MLF memory map",
            "test_workspace_calculation_cmsis_nn": "the same, with CMSIS-NN partitions",
            "test_aot_codegen_checks_returns": "the executor's return checks in the generated C",
        },
        FWD: {
            "test_external_calls": "forward declarations of external (CMSIS-NN) calls in the executor C",
            "test_internal_calls": "declarations of the operator functions in the executor C",
            "test_tensorized_calls": "declarations of tensorized calls in the executor C",
        },
    },
}
# the other files of tests/python/relay/aot, and the tests of test_crt_aot.py left out, and why
EXCLUDED = {
    "test_crt_aot.py: run-only tests (test_conv_with_params, test_add_with_params, ...)":
        "check outputs against the reference only, not the header (tests/host run TVM's AOT harness)",
    "test_crt_aot.py: test_error_c_interface_with_packed_api, test_aot_uses_anf":
        "option validation and TVM's pass order (ToANormalForm before LowerTE), not the header",
    "test_crt_aot_usmp.py": "TVM's USMP planner algorithms (greedy_by_size, hill_climb) and their pool sizes",
    "test_c_device_api.py, test_pass_aot_lower_main.py": "the TIR of TVM's __tvm_main__, an internal IR",
    "test_aot_create_executor_metadata.py, test_aot_create_function_metadata.py": "TVM's internal metadata objects",
    "test_cpp_aot.py": "TVM's C++ AOT runtime over the LLVM backend",
    "test_aot_test_harness.py": "the Corstone-300 runner",
}
# (file, test, parameter id regex or None) -> why aot does not do it, by design
REFUSED = [
    (MLF_FILE, "test_export_model_library_format_c", r"graph", "the graph executor's MLF (graph JSON, sids): "
     "aot has one executor, the AOT one"),
    (MLF_FILE, "test_export_model_library_format_workspace", r"graph", "the graph executor's MLF"),
    (MLF_FILE, "test_export_model_library_format_llvm", None, "LLVM object files in the MLF: aot has no LLVM "
     "backend (llvm is its host C path)"),
    (MLF_FILE, "test_export_byoc_c_module", None, "BYOC's ccompiler codegen (relay.testing.byoc): aot's external "
     "code comes from plug-in backends (aot.uma)"),
    (MLF_FILE, "test_multiple_relay_modules_graph", None, "the graph executor's MLF"),
    (MLF_FILE, "test_multiple_relay_modules_aot_graph", None, "the graph executor's MLF (one of the modules)"),
    (CRT_AOT, "test_workspace_calculation_cmsis_nn", None, "a download (ML-zoo's cnn_s_quantized.tflite; aot "
     "downloads nothing), and TVM's planner's exact workspace (14256 bytes)"),
    (FWD, "test_external_calls", None, "the Corstone-300 runner, a download (ML-zoo's cnn_s_quantized.tflite), "
     "and TVM's own operator names and forward-declaration counts"),
    (FWD, "test_tensorized_calls", None, "the Corstone-300 reference system (TVM's arm_cpu DSP schedule)"),
]
# assertion (file:line) -> why aot differs there on purpose; counted unmet, with this reason
BY_DESIGN = {
    **{f"{MLF_FILE}:{line}": "export_datetime is SOURCE_DATE_EPOCH (1970 unless set), so that an MLF is "
       "byte-identical for the same model and options; TVM's test wants the time of the build"
       for line in (77, 200, 293, 384)},
    f"{CRT_AOT}:811": "aot plans every buffer at compile time: its executor calls no TVMBackendAllocWorkspace "
    "(and the test's relay text holds closures, which relay.fromtext does not read)",
}
TIMEOUT_S = 600


class _Timeout(Exception):
    pass


# -- the rewrite ------------------------------------------------------------------------------
class Swap(ImportSwap):
    """README's swap; `import tvm.testing` binds `tvm` in TVM, so it also binds aot as tvm here."""

    def visit_Import(self, node):
        out = super().visit_Import(node)
        bare = [a for a in node.names if a.asname is None and a.name.startswith("tvm.")]
        if bare:
            return [out, ast.copy_location(ast.Import([ast.alias("aot", "tvm")]), node)]
        return out


class Site:
    def __init__(self, key, kind, conds):
        self.key, self.kind, self.conds = key, kind, conds     # conds: [(test expr source, branch taken)]


def _is_raises(item):
    f = item.context_expr.func if isinstance(item.context_expr, ast.Call) else None
    return isinstance(f, ast.Attribute) and f.attr == "raises"


class CountAsserts(ast.NodeTransformer):
    """assert c, m -> __mlf_assert__("file:line", lambda: (c)); with pytest.raises(E) ->
    with __mlf_raises__("file:line", E); pytest.importorskip("tvm.x") -> ("aot.x")."""

    def __init__(self, path, src):
        self.path, self.src, self.conds, self.in_raises = path, src, [], 0
        self.sites = {}        # function name (module level) -> [Site]
        self.decorators = {}   # function name (module level) -> its decorator expressions
        self.calls = {}        # function name (module level) -> [(callee name, conditions at the call)]
        self.func = None

    def _site(self, node, kind):
        key = f"{self.path}:{node.lineno}"
        if self.func is not None:
            self.sites.setdefault(self.func, []).append(Site(key, kind, list(self.conds)))
        return key

    def visit_FunctionDef(self, node):
        top = self.func is None
        if top:
            self.func, self.conds = node.name, []
            self.decorators[node.name] = list(node.decorator_list)
        self.generic_visit(node)
        if top:
            self.func = None
        return node

    def visit_If(self, node):
        test = ast.get_source_segment(self.src, node.test) or ast.unparse(node.test)
        node.test = self.visit(node.test)
        self.conds.append((test, True))
        node.body = [self.visit(s) for s in node.body]
        self.conds[-1] = (test, False)
        node.orelse = [self.visit(s) for s in node.orelse]
        self.conds.pop()
        return node

    def visit_Assert(self, node):
        if self.in_raises:
            return node                     # dead once the expected error comes: not counted
        key = self._site(node, "assert")
        call = ast.Call(ast.Name("__mlf_assert__", ast.Load()),
                        [ast.Constant(key), ast.Lambda(ast.arguments([], [], None, [], [], None, []), node.test)],
                        [])
        return ast.copy_location(ast.Expr(call), node)

    def visit_With(self, node):
        raises = [it for it in node.items if _is_raises(it)]
        for it in raises:
            key = self._site(node, "raises")
            c = it.context_expr
            it.context_expr = ast.Call(ast.Name("__mlf_raises__", ast.Load()), [ast.Constant(key), *c.args], c.keywords)
        self.in_raises += bool(raises)
        self.generic_visit(node)
        self.in_raises -= bool(raises)
        return node

    def visit_Call(self, node):
        if self.func is not None and isinstance(node.func, ast.Name):
            self.calls.setdefault(self.func, []).append((node.func.id, list(self.conds)))
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "importorskip" and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            node.args[0] = ast.Constant(ImportSwap._mod(node.args[0].value))
        return node


# -- running ----------------------------------------------------------------------------------
class Recorder:
    def __init__(self):
        self.results = {}          # key -> [ok, ...], with the first failure's text

    def record(self, key, ok, why=""):
        r = self.results.setdefault(key, {"runs": 0, "ok": True, "why": ""})
        r["runs"] += 1
        if not ok and r["ok"]:
            r["ok"], r["why"] = False, why


REC = Recorder()


def _mlf_assert(key, thunk):
    try:
        v = thunk()
        REC.record(key, bool(v), "" if v else "assertion false")
    except Exception as e:  # noqa: BLE001 -- an assertion's expression may raise anything
        REC.record(key, False, f"{type(e).__name__}: {_first(e)}")


class _mlf_raises:
    def __init__(self, key, expected=Exception, match=None, **_):
        self.key, self.expected, self.match = key, expected, match
        self.value = None

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            REC.record(self.key, False, f"no {getattr(self.expected, '__name__', self.expected)} raised")
            return False
        if et is _Timeout or et is KeyboardInterrupt:
            return False
        self.value = self.exception = ev
        if not isinstance(ev, self.expected):
            REC.record(self.key, False, f"{et.__name__} raised, not {getattr(self.expected, '__name__', self.expected)}:"
                                        f" {_first(ev)}")
        elif self.match is not None and not re.search(self.match, str(ev)):
            REC.record(self.key, False, f"message {_first(ev)!r} does not match {self.match!r}")
        else:
            REC.record(self.key, True)
        return True


def _first(e):
    s = str(e).strip()
    return (s.splitlines()[0] if s else "")[:240]


def load_module(repo, path, verbose):
    """The test file rewritten and its top-level statements run one by one (a failing one is
    recorded and the next still runs). -> (namespace, rewrite, tree, {def name: error})"""
    src = git_show(repo, REF, path)
    tree = Swap().visit(ast.parse(src))
    rw = CountAsserts(path, src)
    tree = rw.visit(tree)
    ast.fix_missing_locations(tree)
    ns = {"__name__": Path(path).stem, "__file__": path, "__mlf_assert__": _mlf_assert, "__mlf_raises__": _mlf_raises}
    linecache.cache[path] = (len(src), None, src.splitlines(True), path)
    errors = {}
    for st in tree.body:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(ast.Module([st], type_ignores=[]), path, "exec"), ns)
        except BaseException as e:  # noqa: BLE001 -- a module statement may raise anything (Skipped too)
            if isinstance(e, KeyboardInterrupt):
                raise
            why = f"{type(e).__name__}: {_first(e)}"
            names = [st.name] if isinstance(st, (ast.FunctionDef, ast.ClassDef)) else \
                [n.id for t in getattr(st, "targets", []) for n in ast.walk(t) if isinstance(n, ast.Name)] or ["*"]
            for n in names:
                errors[n] = f"line {st.lineno}: {why}"
            if verbose:
                print(f"   module statement line {st.lineno} failed: {why}", flush=True)
    return ns, rw, tree, errors


def _marks(func):
    return list(getattr(func, "pytestmark", []))


def param_sets(func, ns):
    """[(id, {name: value}, skip reason or None)] from the test's parametrize marks (the last
    decorator's mark first, as pytest orders ids) and fixtures made by tvm.testing.parameter."""
    axes, skip = [], None
    for m in _marks(func):
        if m.name == "parametrize":
            names, values = m.args[0], m.args[1]
            names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
            rows = []
            for v in values:
                marks = list(getattr(v, "marks", ()))
                v = v.values if hasattr(v, "values") and hasattr(v, "marks") else v
                v = (v,) if len(names) == 1 else tuple(v)
                why = None
                for mk in marks:
                    if mk.name == "skipif" and (mk.args[0] if mk.args else mk.kwargs.get("condition")):
                        why = "skipped: " + str(mk.kwargs.get("reason", ""))
                    elif mk.name == "skip":
                        why = "skipped: " + str(mk.kwargs.get("reason", ""))
                rows.append((dict(zip(names, v)), why))
            axes.append(rows)
        elif m.name == "skipif" and (m.args[0] if m.args else m.kwargs.get("condition")):
            skip = "skipped: " + str(m.kwargs.get("reason", ""))
        elif m.name == "skip":
            skip = "skipped: " + str(m.kwargs.get("reason", m.args[0] if m.args else ""))
    out = []
    for combo in itertools.product(*reversed(axes)) if axes else [()]:
        params, why = {}, skip
        for values, w in combo:
            params.update(values)
            why = why or w
        pid = "-".join(_pid(v) for v in params.values())
        out.append((pid, params, why))
    ids = [p for p, _, _ in out]
    # two runners print alike (both corstone300): numbered, as pytest does
    return [(f"{p}#{ids[:k].count(p)}" if ids.count(p) > 1 else p, q, w) for k, (p, q, w) in enumerate(out)]


def _pid(v):
    if isinstance(v, (str, int, float, bool)) or v is None:
        return str(v)
    name = getattr(v, "name", None) or getattr(v, "makefile", None)
    return str(name) if isinstance(name, str) else type(v).__name__


def stand_in(name, rw, ns):
    """A function carrying the marks that the test's decorators leave, for a test whose definition
    failed: each decorator is applied alone (innermost first) and one that fails is passed over."""
    def f():
        pass
    for d in reversed(rw.decorators.get(name, [])):
        try:
            g = eval(compile(ast.Expression(d), "<decorator>", "eval"), ns)   # noqa: S307 -- TVM's decorator
            f = g(f) or f
        except Exception:  # noqa: BLE001 -- the decorator aot lacks
            continue
    return f


def sites_of(test, rw):
    """The test's assertion sites and those of the module's functions it calls (a helper's sites
    carry the conditions under which the test calls it)."""
    seen, todo, sites = set(), [(test, [])], []
    while todo:
        f, conds = todo.pop(0)
        if f in seen:
            continue
        seen.add(f)
        sites += [Site(s.key, s.kind, conds + s.conds) for s in rw.sites.get(f, [])]
        todo += [(callee, conds + c) for callee, c in rw.calls.get(f, ()) if callee in rw.sites or callee in rw.calls]
    return sites


def _branch_not_taken(site, scope):
    for test, taken in site.conds:
        try:
            v = eval(test, dict(scope))        # noqa: S307 -- TVM's own test expression, over its parameters
        except Exception:  # noqa: BLE001 -- reads a local: undecided
            continue
        if bool(v) != taken:
            return True
    return False


def _refused(path, test, pid):
    for f, t, rx, why in REFUSED:
        if f == path and t == test and (rx is None or re.search(rx, pid)):
            return why
    return None


def run_test(path, name, ns, rw, errors, verbose):
    rows = []
    func = ns.get(name)
    sites = sites_of(name, rw)
    if not sites:
        sites = [Site(f"{path}:{name}:runs to its end", "completes", [])]
    if not callable(func):      # its definition failed (a decorator aot lacks): each parameter set owes its sites
        why = errors.get(name) or errors.get("*") or "not defined"
        return [{"test": name, "id": pid, "sites": [dict(key=s.key, ok=False, why=f"test not defined: {why}")
                                                    for s in sites if not _branch_not_taken(s, {**ns, **params})],
                 "error": why, "refused": _refused(path, name, pid)} for pid, params, _ in param_sets(stand_in(name, rw, ns), ns)]
    for pid, params, skip in param_sets(func, ns):
        REC.results = {}
        import inspect
        wanted = [p for p in inspect.signature(func).parameters]
        missing = [p for p in wanted if p not in params]
        refused = _refused(path, name, pid)
        error, done, t0 = None, False, time.time()
        if skip:
            error = skip
        elif missing:
            error = f"fixture {', '.join(missing)} cannot be supplied"
        else:
            cwd = tempfile.mkdtemp(prefix="aot_tvmtest_")
            old = os.getcwd()
            os.chdir(cwd)
            signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(_Timeout(f"over {TIMEOUT_S} s")))
            signal.alarm(TIMEOUT_S)
            buf = io.StringIO()
            try:
                with contextlib.redirect_stdout(buf):
                    func(**params)
                done = True
            except BaseException as e:  # noqa: BLE001 -- a test may raise anything (pytest's Skipped too)
                if isinstance(e, KeyboardInterrupt):
                    raise
                kind = "skipped" if type(e).__name__ in ("Skipped", "SkipTest") else type(e).__name__
                error = f"{kind}: {_first(e)}"
                if verbose > 1:
                    traceback.print_exc()
            finally:
                signal.alarm(0)
                os.chdir(old)
        scope = {**ns, **params}
        out = []
        for s in sites:
            r = REC.results.get(s.key)
            if r is not None:
                out.append(dict(key=s.key, ok=r["ok"], why=r["why"]))
            elif done or _branch_not_taken(s, scope):
                continue          # a branch not taken: TVM does not check it for these parameters either
            else:
                out.append(dict(key=s.key, ok=False, why=f"not reached: {error}"))
        if sites[0].kind == "completes":
            out = [dict(key=sites[0].key, ok=done, why="" if done else f"did not run to its end: {error}")]
        rows.append({"test": name, "id": pid, "sites": out, "error": error, "refused": refused,
                     "s": round(time.time() - t0, 1)})
        if verbose:
            met = sum(x["ok"] for x in out)
            print(f"   {name}[{pid}] {met}/{len(out)}" + (f"  ({error})" if error else ""), flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tvm", default=os.environ.get("TVM_REPO", "/work/.mirror/apache+tvm/repo"),
                    help="a git repository of apache/tvm (bare or not)")
    ap.add_argument("--only", action="append", help="a test name (repeatable)")
    ap.add_argument("-v", "--verbose", action="count", default=0)
    ap.add_argument("--json", help="write the per-assertion results here")
    args = ap.parse_args(argv)
    probe = subprocess.run(["git", "-C", str(args.tvm), "cat-file", "-e", f"{REF}^{{commit}}"], capture_output=True)
    if probe.returncode:
        print(f"error: no TVM git repository with commit {REF} at {args.tvm} (fetch github:apache/tvm, or --tvm PATH)",
              file=sys.stderr)
        return 2
    os.environ.setdefault("AOT_TESTDATA_DIR", str(testdata_dir()))
    report, lines = {}, []
    for group, files in TESTS.items():
        rows = []
        print(f"== {group}", flush=True)
        for path, chosen in files.items():
            ns, rw, tree, errors = load_module(args.tvm, path, args.verbose)
            names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
            for name in names:
                if chosen is not None and name not in chosen:
                    continue
                if args.only and name not in args.only:
                    continue
                for r in run_test(path, name, ns, rw, errors, args.verbose):
                    r["file"] = path
                    rows.append(r)
        report[group] = rows
        met = sum(s["ok"] for r in rows for s in r["sites"])
        total = sum(len(r["sites"]) for r in rows)
        # per assertion statement: met when met in every parameter set that reached or owed it
        by_key = {}
        for r in rows:
            for s in r["sites"]:
                by_key[s["key"]] = by_key.get(s["key"], True) and s["ok"]
        refused = [s for r in rows for s in r["sites"] if r["refused"] or BY_DESIGN.get(s["key"])]
        r_total = len(refused)
        r_met = sum(s["ok"] for s in refused)
        for r in rows:
            m = sum(s["ok"] for s in r["sites"])
            print(f"   {m:3d}/{len(r['sites']):<3d} {r['test']}[{r['id']}]" +
                  (f"  -- refused by design: {r['refused']}" if r["refused"] else ""))
            for s in r["sites"]:
                if not s["ok"]:
                    s["by_design"] = BY_DESIGN.get(s["key"])
                    note = f"  -- by design: {s['by_design']}" if s["by_design"] else ""
                    print(f"           unmet {s['key'].split('/')[-1]}: {s['why']}{note}")
        line = (f"{group}: {met}/{total} assertions met (per parameter set); {sum(by_key.values())}/{len(by_key)} "
                f"assertion statements; without what aot refuses by design: {met - r_met}/{total - r_total}")
        lines.append(line)
    print()
    for line in lines:
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
