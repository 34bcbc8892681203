"""Estimated cycles of board firmware: QEMU counts instructions, so a TCG plugin of ours
(boards/cortex_m/qemu_cycles_plugin.c) prices each executed instruction from the core's timing
table (aot/targets/cortex_m_timing.py) and adds them up between aot_profile_start and
aot_profile_stop, in total and per kernel (a kernel's callees count as its own).

The plugin is built at first use with the host C compiler against the qemu-plugin.h of the installed
QEMU, and cached by content. That header is not in Debian's binary packages; its source package has
it: `python -m aot.cycles --fetch-header` extracts it (apt-get source, deb-src lines needed), or
AOT_QEMU_PLUGIN_H names one.
"""
from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

from .errors import AotError

PLUGIN_SOURCE = "qemu_cycles_plugin.c"
PLUGIN_CFLAGS = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"]


def _plugin_source():
    from boards import BOARDS_DIR
    return os.path.join(BOARDS_DIR, "cortex_m", PLUGIN_SOURCE)


def qemu_version(binary="qemu-system-arm"):
    """'7.2.22' of the QEMU that runs the boards."""
    try:
        r = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    except OSError:
        raise AotError(f"{binary} not found: the cycle model runs under QEMU")
    m = re.search(r"version (\d+\.\d+(?:\.\d+)?)", r.stdout)
    if not m:
        raise AotError(f"cannot read the version of {binary} from: {r.stdout.strip()[:200]}")
    return m.group(1)


def _header_cache(version):
    """Where the fetched header is kept: with the user's data, not the build cache (which tests and
    users clear), per QEMU release (its plugin API does not change within one)."""
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    release = version.rsplit(".", 1)[0] if version.count(".") == 2 else version
    return os.path.join(data, "aot", "qemu-plugin", release, "qemu-plugin.h")


def plugin_header(binary="qemu-system-arm"):
    """The qemu-plugin.h to build against: AOT_QEMU_PLUGIN_H, the one extracted for this QEMU's
    release (~/.local/share/aot/qemu-plugin/<release>/), or an installed one."""
    env = os.environ.get("AOT_QEMU_PLUGIN_H")
    if env:
        path = os.path.join(env, "qemu-plugin.h") if os.path.isdir(env) else env
        if not os.path.isfile(path):
            raise AotError(f"AOT_QEMU_PLUGIN_H={env}: no qemu-plugin.h there")
        return path
    version = qemu_version(binary)
    for path in (_header_cache(version), "/usr/include/qemu-plugin.h", "/usr/include/qemu/qemu-plugin.h"):
        if os.path.isfile(path):
            return path
    raise AotError(f"the cycle model needs the qemu-plugin.h of QEMU {version}, which Debian ships only in "
                   "its qemu source package: run 'python -m aot.cycles --fetch-header' (it needs deb-src "
                   "lines in apt's sources), or set AOT_QEMU_PLUGIN_H to the header")


def fetch_header(binary="qemu-system-arm", log=print):
    """Extract qemu-plugin.h from the Debian source package of the installed QEMU into the cache."""
    version = qemu_version(binary)
    dest = _header_cache(version)
    if os.path.isfile(dest):
        log(f"{dest}: already there")
        return dest
    if shutil.which("apt-get") is None:
        raise AotError("apt-get not found: fetch QEMU's source and set AOT_QEMU_PLUGIN_H to "
                       "include/qemu/qemu-plugin.h in it")
    pkg = subprocess.run(["dpkg-query", "-W", "-f=${source:Version}", "qemu-system-arm"],
                         capture_output=True, text=True)
    wanted = [f"qemu={pkg.stdout.strip()}"] if pkg.returncode == 0 and pkg.stdout.strip() else []
    with tempfile.TemporaryDirectory() as d:
        r = None
        for spec in wanted + ["qemu"]:
            r = subprocess.run(["apt-get", "source", "--download-only", spec], cwd=d, capture_output=True,
                               text=True)
            if r.returncode == 0:
                break
        if r is None or r.returncode != 0:
            raise AotError("apt-get source qemu failed (are there deb-src lines in apt's sources?): "
                           + (r.stderr.strip().splitlines() or ["no output"])[-1])
        tars = glob.glob(os.path.join(d, "qemu_*.orig.tar.*"))
        if not tars:
            raise AotError("apt-get source qemu gave no upstream tarball")
        with tarfile.open(tars[0]) as t:
            member = next((m for m in t.getmembers() if m.name.endswith("/include/qemu/qemu-plugin.h")), None)
            if member is None:
                raise AotError(f"{os.path.basename(tars[0])} has no include/qemu/qemu-plugin.h")
            data = t.extractfile(member).read()
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = dest + f".{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, dest)
    log(f"{dest}: extracted from QEMU's source package")
    return dest


def build_plugin(binary="qemu-system-arm", log=None):
    """The plugin's shared object, built once per source, header and compiler."""
    from .host import cache_dir
    header = plugin_header(binary)
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise AotError("no host C compiler (gcc) to build the cycle model's QEMU plugin")
    with open(_plugin_source(), "rb") as f:
        src = f.read()
    with open(header, "rb") as f:
        hdr = f.read()
    h = hashlib.sha256(src + b"\0" + hdr + b"\0" + cc.encode() + b"\0" + " ".join(PLUGIN_CFLAGS).encode())
    out = os.path.join(cache_dir(), "qemu-plugin", f"cycles-{h.hexdigest()[:20]}.so")
    if os.path.isfile(out):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = f"{out}.{os.getpid()}.tmp"
    cmd = [cc, *PLUGIN_CFLAGS, "-I", os.path.dirname(header), _plugin_source(), "-o", tmp]
    if log:
        log(" ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise AotError(f"building the cycle model's QEMU plugin failed:\n{r.stderr[-3000:]}")
    os.replace(tmp, out)
    return out


def _symbols(fw):
    """{name: (start, end)} of the firmware's function symbols (Thumb bit cleared)."""
    nm = fw.board["cc"][:-3] + "nm" if fw.board["cc"].endswith("gcc") else "arm-none-eabi-nm"
    r = subprocess.run([nm, "-S", "--defined-only", fw.elf], capture_output=True, text=True)
    if r.returncode != 0:
        raise AotError(f"{nm} failed on the firmware: {r.stderr.strip()[-500:]}")
    out = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "Tt":
            start = int(parts[0], 16) & ~1
            out[parts[3]] = (start, start + int(parts[1], 16), parts[2] == "T")
    return out


def board_timing(board, flash_wait_states=None):
    """The timing table of the board's core, with the board's memory model (or the one given)."""
    from .targets.cortex_m_timing import timing
    t = timing(board.get("core", ""))
    mem = board.get("cycle_model") or {}
    ws = mem.get("flash_wait_states", 0) if flash_wait_states is None else flash_wait_states
    if not isinstance(ws, int) or isinstance(ws, bool) or not 0 <= ws <= 15:
        raise AotError(f"flash wait states {ws!r}: an integer 0 to 15")
    region = mem.get("flash_region", "flash")
    flash = board.get("memory", {}).get(region)
    if not flash:
        raise AotError(f"board {board.get('name')}: its cycle model's flash region '{region}' is not in its memory map")
    start = int(flash["origin"], 16)
    return t.with_memory(ws, start, start + int(flash["bytes"]))


class CycleModel:
    """What aot.firmware runs a firmware with to estimate its cycles: the plugin's QEMU arguments
    and the report it leaves (the firmware layer knows nothing of the model)."""

    def __init__(self, timing):
        self.timing = timing

    def qemu_args(self, fw, workdir, log=None):
        return ["-plugin", plugin_argument(fw, workdir, self.timing, log=log)]

    def report(self, workdir):
        return read_report(workdir, self.timing)


def board_model(board, flash_wait_states=None):
    """The cycle model of a board's core with its memory model (or the wait states given)."""
    return CycleModel(board_timing(board, flash_wait_states))


def _call_sites(fw, executor_ranges, prefix, executor_names=()):
    """[(start, end, kernel)]: the executor's code by the kernel call it belongs to, from the
    firmware's line tables: an address whose line in the executor's own source is the statement
    calling kernel K belongs to K, whatever the compiler did there (inlined K, or called a body it
    folded K into with other kernels of the same code)."""
    tool = fw.board["cc"][:-3] + "addr2line" if fw.board["cc"].endswith("gcc") else "arm-none-eabi-addr2line"
    addrs = [a for start, end in executor_ranges for a in range(start, end, 2)]
    if not addrs or shutil.which(tool) is None:
        return []
    r = subprocess.run([tool, "-a", "-f", "-i", "-e", fw.elf], input="\n".join(f"0x{a:x}" for a in addrs),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return []
    sources = {}
    call = re.compile(r"\b" + re.escape(prefix) + r"(\w+)\s*\(")

    def kernel_at(loc):
        path, _, line = loc.rpartition(":")
        line = line.split()[0] if line else ""
        if not line.isdigit():
            return None
        base = os.path.basename(path)
        if base not in sources:
            text = next((v for k, v in fw.mlf.files.items() if os.path.basename(k) == base), b"")
            sources[base] = text.decode("utf-8", "replace").splitlines()
        lines = sources[base]
        n = int(line)
        found = [k for k in (call.findall(lines[n - 1]) if 0 < n <= len(lines) else [])
                 if prefix + k not in executor_names]
        return found[0] if found else None

    owner, addr, chain = {}, None, []

    def close():
        if addr is not None and len(chain) >= 2:
            k = kernel_at(chain[-1])         # outermost: the executor's own line
            if k is not None:
                owner[addr] = k

    for line in r.stdout.splitlines():
        if re.match(r"^0x[0-9a-f]+$", line.strip()):
            close()
            addr, chain = int(line, 16), []
        else:
            chain.append(line.strip())
    close()
    ranges = []
    for a in addrs:
        k = owner.get(a)
        if k is not None and ranges and ranges[-1][2] == k and ranges[-1][1] == a:
            ranges[-1][1] = a + 2
        elif k is not None:
            ranges.append([a, a + 2, k])
    return [tuple(x) for x in ranges]


def plugin_argument(fw, workdir, timing, log=None):
    """The '-plugin' value that runs the cycle model over fw in workdir (the files it reads
    written there). Kernels are the model's exported functions other than its executor's; the
    executor's code is attributed to the kernel whose call statement it compiles."""
    so = build_plugin(fw.board["qemu"]["binary"], log=log)
    shutil.copy(so, os.path.join(workdir, "aot_cycles.so"))
    syms = _symbols(fw)
    for need in ("aot_profile_start", "aot_profile_stop"):
        if need not in syms:
            raise AotError(f"the firmware has no {need}: it was not built by aot's board harness")
    mod = fw.mlf.module_name
    executor = {f"tvmgen_{mod}_run", f"tvmgen_{mod}___tvm_main__"}
    prefix = f"tvmgen_{mod}_"
    lines, entries = [], {}
    for name, (start, end, glob_) in sorted(syms.items(), key=lambda kv: kv[1][0]):
        if name in executor:
            lines.append(f"0x{start:x} 0x{end:x} e {name}")
        elif glob_ and name.startswith(prefix) and not name.startswith(prefix + "map_"):
            # kernels the linker folded into one body share it: named together
            entries.setdefault((start, end), []).append(name[len(prefix):])
    for (start, end), names in sorted(entries.items()):
        lines.append(f"0x{start:x} 0x{end:x} k {'+'.join(sorted(names))}")
    for start, end, k in _call_sites(fw, [v[:2] for n, v in syms.items() if n in executor], prefix, executor):
        lines.append(f"0x{start:x} 0x{end:x} i {k}")
    with open(os.path.join(workdir, "aot_cycles.funcs"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(workdir, "aot_cycles.table"), "w") as f:
        f.write(timing.text())
    # AOT_CYCLES_BLOCKS=PATH: every block's executions and cycles written there (a kernel's hot
    # loop found by address: arm-none-eabi-objdump of the firmware)
    blocks = os.environ.get("AOT_CYCLES_BLOCKS")
    return (f"./aot_cycles.so,table=aot_cycles.table,out=aot_cycles.report,funcs=aot_cycles.funcs,"
            f"start=0x{syms['aot_profile_start'][0]:x},stop=0x{syms['aot_profile_stop'][0]:x}"
            + (f",blocks={os.path.abspath(blocks)}" if blocks else ""))


def run_program(board_name, c_source, timing=None, opt="-O2", timeout=120):
    """The cycle report of a bare program on an emulated board: `c_source` (C, with a main that
    calls aot_profile_start() and aot_profile_stop() around the code to price, from
    "semihost.h") built with the board's startup code, flags and link script. The cycle model's
    own tests and calibration run micro-benchmarks of known cost through it."""
    from .firmware import LINK, LIBS, board_dir, load_qemu_board, need_tool
    b = load_qemu_board(board_name)
    need_tool(b["cc"], "the Arm embedded toolchain builds the program")
    common = board_dir("cortex_m")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "bench.c")
        with open(src, "w") as f:
            f.write(c_source)
        elf = os.path.join(d, "bench.elf")
        cmd = [b["cc"], *b["cflags"], opt, "-g", "-std=gnu99", "-I", common, src,
               os.path.join(common, "startup.c"), os.path.join(common, "semihost.c"), *LINK,
               "-L", board_dir(board_name), "-L", common, "-T", "link.ld", *LIBS, "-o", elf]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise AotError(f"{board_name}: building the program failed:\n{r.stderr[-3000:]}")
        return run_elf(board_name, elf, timing, timeout=timeout, workdir=d)


def run_elf(board_name, elf, timing=None, timeout=600, workdir=None):
    """The cycle report of any firmware ELF for an emulated board that calls aot_profile_start()
    and aot_profile_stop() (boards/cortex_m/semihost.c) around what it prices: another runtime's
    build, for one (docs/cycles.md's calibration runs TFLite Micro's that way). Run in `workdir`
    (its semihosting files), or a scratch directory."""
    from .firmware import load_qemu_board, qemu_command, need_tool
    from types import SimpleNamespace
    b = load_qemu_board(board_name)
    need_tool(b["qemu"]["binary"], "QEMU runs the firmware")
    timing = timing or board_timing(b)
    with tempfile.TemporaryDirectory() as scratch:
        d = workdir or scratch
        fw = SimpleNamespace(elf=elf, board=b, mlf=SimpleNamespace(module_name="bench"))
        qemu = qemu_command(b, elf)
        qemu[1:1] = ["-plugin", plugin_argument(fw, d, timing)]
        try:
            r = subprocess.run(qemu, cwd=d, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AotError(f"{board_name}: the program did not finish within {timeout} s")
        if r.returncode != 0:
            raise AotError(f"{board_name}: the program exited with status {r.returncode}: "
                           f"{(r.stdout + r.stderr)[-1000:]}")
        return read_report(d, timing)


def read_report(workdir, timing):
    """{'cycles', 'instructions', 'kernels': [{name, cycles, instructions, calls}], ...} of the run
    the plugin reported on in workdir."""
    path = os.path.join(workdir, "aot_cycles.report")
    if not os.path.exists(path):
        raise AotError("the cycle model wrote no report (did QEMU load the plugin?)")
    rep = {"core": timing.core, "memory_model": timing.memory, "source": timing.source, "kernels": []}
    with open(path) as f:
        for line in f:
            p = line.split()
            if p[0] == "total":
                rep["cycles"], rep["instructions_counted"], rep["wait_cycles"] = int(p[1]), int(p[2]), int(p[3])
            elif p[0] == "executor":
                rep["executor"] = {"cycles": int(p[1]), "instructions": int(p[2])}
            elif p[0] == "kernel":      # a kernel inlined in several pieces is reported once
                k = next((k for k in rep["kernels"] if k["name"] == p[5]), None)
                if k is None:
                    k = {"name": p[5], "cycles": 0, "instructions": 0, "calls": 0}
                    rep["kernels"].append(k)
                k["cycles"] += int(p[1])
                k["instructions"] += int(p[2])
                k["calls"] += int(p[3])
    if "cycles" not in rep:
        raise AotError("the cycle model's report has no total")
    return rep


def format_cycles(rep, instructions=None):
    """The cycle report as `aot size` and `aot run --profile` print it."""
    ins = rep["instructions_counted"]
    lines = [f"  estimated cycles per inference: {rep['cycles']:,} ({rep['core']} timing model, "
             f"{rep['memory_model']}; {ins:,} instructions, {rep['cycles'] / max(ins, 1):.2f} cycles each)"]
    if rep["kernels"]:
        lines.append(f"  {'kernel':44s} {'cycles':>12s} {'instructions':>13s} {'cyc/instr':>9s} {'share':>6s}")
        rows = sorted(rep["kernels"], key=lambda k: -k["cycles"])
        if rep.get("executor", {}).get("cycles"):
            rows.append({"name": "(executor, harness)", **rep["executor"]})
        for k in rows:
            lines.append(f"  {k['name'][:44]:44s} {k['cycles']:12,d} {k['instructions']:13,d} "
                         f"{k['cycles'] / max(k['instructions'], 1):9.2f} {k['cycles'] / max(rep['cycles'], 1):6.1%}")
    return "\n".join(lines)


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python -m aot.cycles", description=__doc__.split("\n\n")[0])
    ap.add_argument("--fetch-header", action="store_true",
                    help="extract qemu-plugin.h from the installed QEMU's Debian source package")
    ap.add_argument("--build", action="store_true", help="build the plugin (and say where it is)")
    a = ap.parse_args(argv)
    try:
        if a.fetch_header:
            fetch_header()
        if a.build or not a.fetch_header:
            print(build_plugin())
    except AotError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
