"""Cortex-M boards: build an MLF into firmware with arm-none-eabi-gcc, run it under QEMU with
semihosting for inputs/outputs, and report what it costs (flash, RAM, instructions).

Instruction counting: the harness reads SysTick (core clock) around tvmgen_<mod>_run while
QEMU runs with `-icount shift=0`, where every guest instruction advances virtual time by
exactly 1 ns; instructions = ticks * 1e9 / the board's SysTick clock. Repeatable to the
instruction count; resolution is one tick (40 instructions at 25 MHz, 50 at 20, 31.25 at 32).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

import numpy as np

from .errors import AotError, BuildError
from .stack_bound import FLAGS as STACK_FLAGS   # every object's frames and call edges, for the stack bound
from .host import (tar_bytes, label_of, cache_dir, cached_build, harness_params, read_valid_mlf, refuse_device,
                   refuse_instrumented, write_inputs)

STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
BOARD_CFLAGS = ["-std=gnu99", "-Wall", "-Wextra", "-Werror"]
COMMON = ["-ffunction-sections", "-fdata-sections", "-g"]
LINK = ["-nostartfiles", "--specs=nano.specs", "-Wl,--gc-sections"]
LIBS = ["-lm", "-lc", "-lgcc"]


def board_dir(name):
    from boards import BOARDS_DIR
    return os.path.join(BOARDS_DIR, name)


def load_qemu_board(name):
    from boards import load_board
    b = load_board(name)
    if b.get("kind") != "qemu":
        raise AotError(f"board '{name}' is not an emulated Cortex-M board")
    return b


def need_tool(tool, what):
    if shutil.which(tool) is None:
        raise AotError(f"{tool} not found: {what} (Debian: apt-get install --no-install-recommends "
                       "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)")


def board_for_core(mcpu) -> str:
    """The emulated board whose core is `mcpu` (its flags are the ones a bound is proven for)."""
    from boards import BOARDS_DIR, load_board
    for name in sorted(os.listdir(BOARDS_DIR)):
        if name.startswith("qemu-") and os.path.exists(os.path.join(BOARDS_DIR, name, "board.json")):
            if load_board(name).get("core") == mcpu:
                return name
    raise AotError(f"no emulated board has core '{mcpu}': a stack bound is proven for a board's flags "
                   "(boards/qemu-cortex-*)")


def toolchain_version(cc) -> str:
    need_tool(cc, "the stack bound is read off the Arm toolchain's build")
    r = subprocess.run([cc, "--version"], capture_output=True, text=True)
    return r.stdout.splitlines()[0].strip() if r.stdout else cc


def _board_files(b):
    """{file name: bytes} of a board's files (they are part of the build's cache key)."""
    out = {}
    for f in b["files"]:
        with open(os.path.join(board_dir(b["name"]), f), "rb") as fh:
            out[os.path.basename(f)] = fh.read()
    return out


@dataclass
class Firmware:
    elf: str
    map: str
    board: dict
    opt: str
    mlf: object = None                            # the parsed MLF it was built from
    objects: dict = field(default_factory=dict)   # object file name -> category


def build_firmware(tar, board="qemu-cortex-m4", opt="-O2", log=None, extra_sources=None) -> Firmware:
    """Firmware ELF built from the MLF for `board` (cached by content, board files and flags).
    extra_sources: {file name: C text} compiled in with the harness (the `aot debug` record hook)."""
    from codegen_c.emit import render_template
    if opt not in ("-O0", "-O1", "-O2", "-O3", "-Os", "-Oz"):
        raise AotError(f"optimisation '{opt}' is not one of -O0 -O1 -O2 -O3 -Os -Oz")
    b = load_qemu_board(board)
    data = tar_bytes(tar)
    m = read_valid_mlf(data, label_of(tar))
    refuse_device(m, board)
    need_tool(b["cc"], "the Arm embedded toolchain builds board firmware")
    files = _board_files(b)
    h = hashlib.sha256(data)
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name])
    extra_sources = dict(extra_sources or {})
    refuse_instrumented(m, extra_sources)
    main_c = render_template("firmware_main.c.j2", **harness_params(m))
    # keyed by everything the build reads: MLF, board files, the harness as rendered, flags
    h.update(json.dumps([b, opt, STRICT, BOARD_CFLAGS, COMMON, list(STACK_FLAGS), LINK, LIBS, main_c]).encode())
    for name in sorted(extra_sources):
        h.update(b"\0extra\0" + name.encode() + b"\0" + extra_sources[name].encode())
    out_dir = os.path.join(cache_dir(), "fw", board, h.hexdigest()[:24])
    srcs = m.aot["sources"]
    fw = Firmware(os.path.join(out_dir, "firmware.elf"), os.path.join(out_dir, "firmware.map"), b, opt, m)
    fw.objects = {os.path.basename(s)[:-2] + ".o": "model" for s in srcs}
    fw.objects.update({"main.o": "harness", "startup.o": "board", "semihost.o": "board"})
    fw.objects.update({name[:-2] + ".o": "harness" for name in extra_sources})

    def build(tmp):
        with open(os.path.join(tmp, "main.c"), "w") as f:
            f.write(main_c)
        common_dir = board_dir("cortex_m")
        incs = ["-I", os.path.join(tmp, "codegen/host/include"), "-I", os.path.join(tmp, "runtime/include"),
                "-I", common_dir]
        flags = list(b["cflags"]) + [opt] + COMMON
        jobs = [(os.path.join(tmp, s), STRICT) for s in srcs]
        for name, text in sorted(extra_sources.items()):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
            jobs.append((os.path.join(tmp, name), BOARD_CFLAGS))
        jobs += [(os.path.join(tmp, "main.c"), BOARD_CFLAGS), (os.path.join(common_dir, "startup.c"), BOARD_CFLAGS),
                 (os.path.join(common_dir, "semihost.c"), BOARD_CFLAGS)]
        objs = []
        for src, std in jobs:
            obj = os.path.join(tmp, os.path.basename(src)[:-2] + ".o")
            cmd = [b["cc"], *std, *flags, *STACK_FLAGS, *incs, "-c", src, "-o", obj]
            if log:
                log(" ".join(cmd))
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise BuildError(f"{board}: compiling {os.path.basename(src)} failed:\n{r.stderr[-4000:]}")
            objs.append(obj)
        cmd = [b["cc"], *b["cflags"], opt, *LINK,
               f"-Wl,-Map={os.path.join(tmp, 'firmware.map')}", "-L", board_dir(board), "-L", common_dir,
               "-T", "link.ld", *objs, *LIBS, "-o", os.path.join(tmp, "firmware.elf")]
        if log:
            log(" ".join(cmd))
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            over = re.findall(r"region `(\w+)' overflowed by (\d+) bytes", r.stderr)
            if over:
                raise AotError(f"the model does not fit {board}: " + "; ".join(
                    f"{reg} overflowed by {int(n):,} bytes" for reg, n in over))
            if "RAM overflow" in r.stderr:
                raise AotError(f"the model does not fit {board}: less than the minimum stack is left in RAM")
            raise BuildError(f"{board}: linking the firmware failed:\n{r.stderr[-4000:]}")

    cached_build(data, out_dir, "firmware.elf", build)
    return fw


FAULTS = {3: "HardFault", 4: "MemManage fault", 5: "BusFault", 6: "UsageFault", 7: "SecureFault", 11: "SVCall",
          12: "DebugMonitor", 14: "PendSV"}


def qemu_command(b, elf):
    q = b["qemu"]
    return [q["binary"], "-M", q["machine"], *q["args"], "-kernel", elf]


def run_firmware(tar, inputs: dict, board="qemu-cortex-m4", opt="-O2", timeout=300, log=None, fw=None, workdir=None,
                 cycles=None):
    """(outputs {name: array}, stats) of the MLF run once on the emulated board (fw: the
    firmware if already built; workdir: the semihosting directory to run in, kept afterwards;
    cycles: a cycle model (aot.cycles.board_model) to estimate cycles with, in stats['cycles'])."""
    fw = fw or build_firmware(tar, board, opt, log=log)
    b, m = fw.board, fw.mlf
    need_tool(b["qemu"]["binary"], "QEMU runs the firmware")
    info = m.aot
    with contextlib.nullcontext(workdir) if workdir else tempfile.TemporaryDirectory() as d:
        write_inputs(info, inputs, d)
        cmd = qemu_command(b, fw.elf)
        if cycles is not None:
            cmd[1:1] = cycles.qemu_args(fw, d, log=log)
        if log:
            log(" ".join(cmd))
        try:
            r = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise BuildError(f"{board}: the firmware did not finish within {timeout} s (hung?)")
        stats = {}
        for line in (r.stdout + "\n" + r.stderr).splitlines():   # semihosting console: QEMU's stderr
            mm = re.match(r"aot: (\w+) (\d+)$", line.strip())
            if mm:
                stats[mm.group(1)] = int(mm.group(2))
        if r.returncode != 0:
            rc = r.returncode
            if rc >= 100 and rc - 100 in FAULTS:
                what = f"{FAULTS[rc - 100]} (exception {rc - 100})"
            else:
                what = {2: "input/output through semihosting failed", 3: "tvmgen run returned an error"}.get(
                    rc, "unexpected exit")
            raise BuildError(f"{board}: firmware exited with status {rc}: {what}\n{(r.stdout + r.stderr)[-2000:]}")
        outs = {}
        for k, t in enumerate(info["outputs"]):
            p = os.path.join(d, f"out{k}.bin")
            n = int(np.prod(t["shape"], dtype=np.int64)) * np.dtype(t["dtype"]).itemsize
            if not os.path.exists(p) or os.path.getsize(p) != n:
                raise BuildError(f"{board}: output '{t['name']}' was not written in full")
            outs[t["name"]] = np.fromfile(p, dtype=t["dtype"]).reshape(t["shape"])
        estimate = None
        if cycles is not None:
            estimate = cycles.report(d)
    ticks = stats.get("ticks_lo", 0) + (stats.get("ticks_hi", 0) << 32)
    stats = {"ticks": ticks, "instructions": round(ticks * 1e9 / b["systick_hz"]),
             "resolution_instructions": 1e9 / b["systick_hz"], "stack_bytes": stats.get("stack_used")}
    if estimate is not None:
        stats["cycles"] = estimate
    return outs, stats


# -- size report ---------------------------------------------------------------------------
_OUT_SECTIONS = {".vectors": "text", ".text": "text", ".ARM.exidx": "text", ".rodata": "rodata",
                 ".data": "data", ".noinit": "bss", ".bss": "bss"}


def _map_entries(path):
    """(output section, input section, size, object) from a GNU ld map file."""
    out, cur, pending = [], None, None
    with open(path) as f:
        lines = f.read().split("Linker script and memory map", 1)[-1].splitlines()
    for line in lines:
        m = re.match(r"^(\.[\w.]+|/DISCARD/)\b", line)
        if m:
            cur = m.group(1)
            pending = None
            continue
        if cur not in _OUT_SECTIONS:
            continue
        m = re.match(r"^ (\.[^\s]+|COMMON)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(.+)$", line)
        if m:
            out.append((cur, m.group(1), int(m.group(3), 16), m.group(4).strip()))
            pending = None
            continue
        m = re.match(r"^ (\.[^\s]+|COMMON)$", line)
        if m:
            pending = m.group(1)
            continue
        m = re.match(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$", line)
        if m and pending:
            out.append((cur, pending, int(m.group(2), 16), m.group(3).strip()))
        pending = None
    return out


def stack_bounds(fw: Firmware) -> dict:
    """The firmware's proven stack bound (aot.stack_bound.firmware_bound: thread and exception
    levels) and the model's own, the tree under tvmgen_<mod>_run, from the build's
    -fstack-usage/-fcallgraph-info output and the linked ELF."""
    from .stack_bound import CallGraph, ci_files, firmware_bound
    objdump = fw.board["cc"].replace("gcc", "objdump")
    g = CallGraph(ci_files(os.path.dirname(fw.elf)), fw.elf, objdump)
    rep = firmware_bound(g, fw.elf, fw.board["cflags"], objdump)
    model = g.bound(f"tvmgen_{fw.mlf.module_name}_run")
    rep["model"] = dict(model.to_json(), frames=[list(x) for x in g.frames(model)])
    return rep


def size_report(fw: Firmware, stack_bytes=None, bound=None):
    """Flash and RAM by part: model constants, model code, workspace, I/O buffers, runtime
    (C library), board support, the stack: its proven bound where there is one (bound:
    stack_bounds), else what was measured."""
    parts = {}

    def add(part, kind, n):
        parts.setdefault(part, {"text": 0, "rodata": 0, "data": 0, "bss": 0})[kind] += n

    for osec, isec, size, obj in _map_entries(fw.map):
        kind = _OUT_SECTIONS[osec]
        base = os.path.basename(obj)
        cat = fw.objects.get(base)
        if cat == "model":
            part = ("model constants" if isec.startswith(".rodata.tvm") else
                    "workspace" if isec.startswith(".bss.noinit.tvm") else "model code")
        elif cat == "harness":
            part = "I/O buffers" if kind == "bss" else "board support"
        elif cat == "board":
            part = "board support"
        else:
            part = "runtime (libc, libm, libgcc)"
        add(part, kind, size)
    rows = []
    for part in ("model constants", "model code", "workspace", "I/O buffers", "runtime (libc, libm, libgcc)",
                 "board support"):
        p = parts.get(part, {"text": 0, "rodata": 0, "data": 0, "bss": 0})
        rows.append({"part": part, "flash": p["text"] + p["rodata"] + p["data"], "ram": p["data"] + p["bss"]})
    if bound is not None and bound["bytes"] is not None:
        rows.append({"part": "stack (bound)", "flash": 0, "ram": bound["bytes"]})
    elif stack_bytes is not None:
        rows.append({"part": "stack (measured)", "flash": 0, "ram": stack_bytes})
    rep = {"board": fw.board["name"], "opt": fw.opt, "rows": rows,
           "flash": sum(r["flash"] for r in rows), "ram": sum(r["ram"] for r in rows)}
    if bound is not None:
        rep["stack"] = dict(bound, measured=stack_bytes)
    return rep


def format_size(rep):
    lines = [f"{rep['board']} ({rep['opt']}):", f"  {'part':32s} {'flash B':>10s} {'RAM B':>10s}"]
    for r in rep["rows"]:
        lines.append(f"  {r['part']:32s} {r['flash']:10,d} {r['ram']:10,d}")
    lines.append(f"  {'total':32s} {rep['flash']:10,d} {rep['ram']:10,d}")
    st = rep.get("stack")
    if st is not None:
        measured = "" if st.get("measured") is None else f" (measured {st['measured']:,})"
        th = st["thread"]
        if st["bytes"] is None:
            lines.append(f"  stack bound: none proven ({st.get('why', '')}); measured {st.get('measured') or 0:,} B")
        else:
            ex = st["exceptions"]
            lines.append(f"  stack bound {st['bytes']:,} B = thread {th['bytes']:,}{measured} + exceptions "
                         + " + ".join(f"{k} {v['bytes']:,}" for k, v in ex.items())
                         + f" (each with its {st['exception_frame']} B hardware frame)")
            lines.append("  deepest path: " + " > ".join(th["path"]))
        m = st["model"]
        lines.append(f"  model's own bound (under its run function): "
                     + (f"{m['bytes']:,} B" if m["bytes"] is not None else f"none proven ({m.get('why', '')})"))
    return "\n".join(lines)


def measure(tar, board="qemu-cortex-m4", opt="-O2", inputs=None, log=None, cycles=None):
    """Size report with the measured stack and instruction count, from one run (zero inputs
    unless given); cycles: a cycle model (aot.cycles.board_model), for the estimated cycles (key
    'cycles', the total, and 'cycle_model': per kernel, the memory model)."""
    fw = build_firmware(tar, board, opt, log=log)
    if inputs is None:
        inputs = {t["name"]: np.zeros(t["shape"], t["dtype"]) for t in fw.mlf.aot["inputs"]}
    outs, stats = run_firmware(tar, inputs, board, opt, log=log, fw=fw, cycles=cycles)
    rep = size_report(fw, stats["stack_bytes"], stack_bounds(fw))
    rep["instructions"] = stats["instructions"]
    rep["resolution_instructions"] = stats["resolution_instructions"]
    if cycles is not None:
        rep["cycles"] = stats["cycles"]["cycles"]
        rep["cycle_model"] = stats["cycles"]
    return rep, outs
