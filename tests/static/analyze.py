"""cppcheck and clang-tidy over C sources, at the levels set in this folder (cppcheck.args,
cppcheck-suppressions.txt, clang-tidy.yaml). Used by tests/static/test_static_analysis.py; also runs
alone on extracted MLFs:  python tests/static/analyze.py DIR...  (prints findings, exits 1 if any)."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
CLANG_TIDY_CONFIG = os.path.join(HERE, "clang-tidy.yaml")
# clang-tidy parses the sources as this compiler would: the flags the generated code is held to
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-pedantic"]
TABLE_ROWS_KEPT = 2

_CPPCHECK_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>\w+):(?P<id>[\w.-]+): (?P<msg>.*)$")
_TIDY_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>warning|error): (?P<msg>.*?)"
                        r"(?: \[(?P<id>[\w.,-]+)\])?$")
_TABLE = re.compile(r"(^static const [\w ]+\[\d+\](?: \w+)? = \{\n)(.*?)(\n\};$)", re.S | re.M)


def tools():
    """{'cppcheck': path or None, 'clang-tidy': path or None}."""
    return {t: shutil.which(t) for t in ("cppcheck", "clang-tidy")}


def cppcheck_args():
    with open(os.path.join(HERE, "cppcheck.args")) as f:
        lines = [ln.strip() for ln in f]
    return [ln.replace("{here}", HERE) for ln in lines if ln and not ln.startswith("#")]


def elide_tables(text):
    """Constant tables keep their first rows only. They are literal lists in one format (the first
    rows show it to the analyzers); the megabytes of them in MLPerf models cost cppcheck and
    clang-tidy minutes per model and can hold no finding the first rows do not."""
    def cut(m):
        rows = m.group(2).split("\n")
        if len(rows) <= TABLE_ROWS_KEPT:
            return m.group(0)
        return m.group(1) + "\n".join(rows[:TABLE_ROWS_KEPT]) + m.group(3)
    return _TABLE.sub(cut, text)


def prepare_mlf(root):
    """Elide the constant tables of an extracted MLF in place; its (sources, include dirs)."""
    srcs = sorted(glob.glob(os.path.join(root, "codegen", "host", "src", "*.c")))
    for s in srcs:
        with open(s) as f:
            text = f.read()
        short = elide_tables(text)
        if short != text:
            with open(s, "w") as f:
                f.write(short)
    return srcs, [os.path.join(root, "codegen", "host", "include"), os.path.join(root, "runtime", "include")]


def _where(path, root):
    path = os.path.normpath(path)
    return os.path.relpath(path, root) if root and path.startswith(root + os.sep) else path


def run_cppcheck(sources, includes, root=None, defines=()):
    cmd = ["cppcheck", *cppcheck_args(), "--quiet",
           "--template={file}:{line}:{column}: {severity}:{id}: {message}",
           *[f"-I{i}" for i in includes], *[f"-D{d}" for d in defines], *sources]
    r = subprocess.run(cmd, capture_output=True, text=True)
    found = []
    for ln in (r.stderr + r.stdout).splitlines():
        m = _CPPCHECK_LINE.match(ln)
        if m:
            found.append(f"cppcheck {_where(m['file'], root)}:{m['line']}: {m['id']}: {m['msg']}")
        elif ln.strip() and not ln.startswith(("Checking ", "nofile:0:0: information")):
            found.append(f"cppcheck: {ln}")
    if r.returncode != 0 and not found:
        found.append(f"cppcheck exited {r.returncode}: {r.stderr[-500:]}")
    return found


def run_clang_tidy(sources, includes, root=None, defines=()):
    cmd = ["clang-tidy", f"--config-file={CLANG_TIDY_CONFIG}", "--quiet", *sources, "--",
           *CFLAGS, *[f"-I{i}" for i in includes], *[f"-D{d}" for d in defines]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    found = []
    for ln in r.stdout.splitlines():
        m = _TIDY_LINE.match(ln)
        if m:
            item = f"clang-tidy {_where(m['file'], root)}:{m['line']}: {m['id'] or m['sev']}: {m['msg']}"
            if item not in found:        # a header included by two sources is reported twice
                found.append(item)
    if r.returncode != 0 and not found:
        found.append(f"clang-tidy exited {r.returncode}: {(r.stderr or r.stdout)[-500:]}")
    return found


def analyze(jobs, workers=None):
    """jobs: [(name, sources, includes, root, defines)]. {name: [finding]} (both tools)."""
    workers = workers or os.cpu_count() or 2
    tasks = []
    with ThreadPoolExecutor(workers) as pool:
        for name, srcs, incs, root, defs in jobs:
            tasks.append((name, pool.submit(run_cppcheck, srcs, incs, root, defs)))
            tasks.append((name, pool.submit(run_clang_tidy, srcs, incs, root, defs)))
        out = {name: [] for name, *_ in jobs}
        for name, fut in tasks:
            out[name].extend(fut.result())
    return out


def report(findings):
    """Findings as text, one per line under each job that has any."""
    lines = []
    for name, items in findings.items():
        if items:
            lines.append(f"{name}:")
            lines.extend("  " + i for i in items)
    return "\n".join(lines)


def main(argv):
    jobs = []
    for root in argv:
        root = os.path.abspath(root)
        srcs, incs = prepare_mlf(root)
        jobs.append((root, srcs, incs, root, ()))
    text = report(analyze(jobs))
    print(text or "no findings")
    return 1 if text else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
