"""A proven stack bound for Cortex-M firmware: the deepest call path's frames, added up.

Where each frame comes from:
- functions the build compiled (the model, the runtime, the board's harness): the compiler's own
  `-fstack-usage` figures and call edges (`-fcallgraph-info=su`), for the board's flags, library
  calls (memcpy, expf, __aeabi_ldivmod) included as the compiler emitted them;
- functions linked from libraries (newlib, libm, libgcc): read off the linked ELF's code, each
  prologue's pushes and stack adjustments, its calls and tail calls.

A bound exists only where the graph is a finite tree of known frames: recursion, an indirect
call, a variable-sized frame (alloca, VLAs) or a callee found nowhere leave it unproven, with
the reason and the path that reaches it. Exceptions add their hardware frame and their handler's
tree once per priority level that can preempt (firmware_bound); the model's own bound
(CallGraph.bound) is the tree under tvmgen_<mod>_run, which firmware adds to its own stack.
"""
from __future__ import annotations

import glob
import os
import re
import subprocess
from dataclasses import dataclass, field

from .errors import AotError

# the compiler flags that make the figures; they do not change the code generated
FLAGS = ("-fstack-usage", "-fcallgraph-info=su")

# the hardware's exception entry: 8 words (r0-r3, r12, lr, pc, xPSR), 18 more with a live FP
# context (s0-s15, FPSCR, and a reserved word or VPR), plus the word that realigns sp to 8 bytes
BASIC_FRAME = 8 * 4 + 4
FP_FRAME = 26 * 4 + 4


@dataclass
class Func:
    name: str
    frame: int | None          # bytes; None: variable-sized (dynamic, unbounded)
    calls: list = field(default_factory=list)    # keys of callees
    indirect: bool = False     # calls through a pointer
    origin: str = "compiler"   # "compiler" (-fstack-usage) or "binary" (read off the ELF)


@dataclass
class Bound:
    bytes: int | None          # None: no bound proven (why says what stops it)
    path: list                 # the deepest path (function names), or the path to what stops it
    why: str = ""
    keys: list = field(default_factory=list, repr=False)     # the path's nodes, for CallGraph.frames

    def to_json(self):
        return {"bytes": self.bytes, "path": self.path, **({"why": self.why} if self.why else {})}


class StackBoundError(AotError):
    pass


# -- the compiler's call graph ------------------------------------------------------------------
_NODE = re.compile(r'^node: \{ title: "((?:[^"\\]|\\.)*)" label: "((?:[^"\\]|\\.)*)"')
_EDGE = re.compile(r'^edge: \{ sourcename: "((?:[^"\\]|\\.)*)" targetname: "((?:[^"\\]|\\.)*)"')
_USAGE = re.compile(r"\\n(\d+) bytes \(([a-z,]+)\)$")


def read_callgraph(ci_files) -> tuple[dict, dict]:
    """({key: Func} of the functions defined in the .ci files, {global name: key}). A static
    function's title is "file:name" in its own unit: its key is prefixed with the unit's path so
    that two units' statics of one name stay apart."""
    funcs, globals_, pending = {}, {}, []
    for unit, path in enumerate(sorted(ci_files)):
        local = {}
        edges = []
        with open(path) as f:
            for line in f:
                m = _NODE.match(line)
                if m:
                    title, label = m.group(1), m.group(2)
                    u = _USAGE.search(label)
                    if u is None:          # declared here, defined elsewhere (or a library's)
                        continue
                    name = label.split("\\n", 1)[0]
                    key = f"{unit}:{title}" if ":" in title else title
                    dynamic = u.group(2) == "dynamic"     # "dynamic,bounded" is a bound already
                    funcs[key] = Func(name, None if dynamic else int(u.group(1)))
                    local[title] = key
                    if ":" not in title:
                        globals_[title] = key
                    continue
                m = _EDGE.match(line)
                if m:
                    edges.append((m.group(1), m.group(2)))
        pending.append((local, edges))
    for local, edges in pending:
        for src, dst in edges:
            fn = funcs[local[src]]
            if dst == "__indirect_call":
                fn.indirect = True
            else:
                fn.calls.append(("local", local[dst]) if dst in local else ("name", dst))
    for fn in funcs.values():
        fn.calls = [globals_.get(v, "sym:" + v) if kind == "name" else v for kind, v in fn.calls]
    return funcs, globals_


# -- a linked ELF's code ------------------------------------------------------------------------
_FUNC_HDR = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(?:[0-9a-f]{4}(?: [0-9a-f]{4})?\s+)?([a-z][\w.]*)\s*(.*)$")
_TARGET = re.compile(r"^([0-9a-f]+) <([^>+]+)(\+0x[0-9a-f]+)?>")
_REGS = re.compile(r"\{([^}]*)\}")


def _reg_bytes(text):
    """Bytes a register list stores: 4 per core or s register, 8 per d register."""
    n = 0
    for part in _REGS.search(text).group(1).split(","):
        part = part.strip()
        m = re.match(r"([sd])(\d+)-[sd](\d+)$", part)
        if m:
            n += (int(m.group(3)) - int(m.group(2)) + 1) * (8 if m.group(1) == "d" else 4)
        elif m := re.match(r"r(\d+)-r(\d+)$", part):
            n += (int(m.group(2)) - int(m.group(1)) + 1) * 4
        elif part:
            n += 8 if part.startswith("d") else 4
    return n


def _sp_decrement(op, args):
    """(bytes this instruction moves sp down by, dynamic?)."""
    base = op.split(".")[0]
    if base == "push" or (base in ("stmdb", "stmfd") and args.startswith("sp!")):
        return _reg_bytes(args), False
    if base == "vpush" or (base in ("vstmdb",) and args.startswith("sp!")):
        return _reg_bytes(args), False
    if base in ("sub", "subw", "subs") and re.match(r"sp, (sp, )?", args):
        rest = re.sub(r"^sp, (sp, )?", "", args)
        m = re.match(r"#(\d+)", rest)
        return (int(m.group(1)), False) if m else (0, True)
    if base in ("str", "strd", "strb", "strh") and (m := re.search(r"\[sp, #-(\d+)\]!", args)):
        return int(m.group(1)), False
    return 0, False


def read_binary(elf, objdump="arm-none-eabi-objdump") -> tuple[dict, dict]:
    """({address: Func}, {name: address}) of every function in the ELF's code, read off its
    instructions: what the prologue pushes and subtracts from sp (all of it, as if every path
    ran every push), its calls (bl, blx to a label) and tail calls (a branch to another
    function's start)."""
    r = subprocess.run([objdump, "-d", "--no-show-raw-insn", elf], capture_output=True, text=True)
    if r.returncode != 0:
        raise StackBoundError(f"{objdump} could not read {os.path.basename(elf)}: {r.stderr.strip()[-500:]}")
    funcs, names, cur = {}, {}, None
    last = ""
    fp_frames = set()
    for line in r.stdout.splitlines():
        m = _FUNC_HDR.match(line)
        if m:
            addr = int(m.group(1), 16)
            cur = Func(m.group(2), 0, origin="binary")
            funcs[addr] = cur
            names.setdefault(m.group(2), addr)
            last = ""
            continue
        m = _INSN.match(line)
        if not m or cur is None:
            continue
        op, args = m.group(2), m.group(3).split(";")[0].split("@")[0].strip()
        if op.startswith("."):        # .word / .short: a literal pool
            continue
        dec, dynamic = _sp_decrement(op, args)
        if cur.frame is not None:
            cur.frame = None if dynamic else cur.frame + dec
        base = op.split(".")[0]
        if base in ("mov", "movs") and re.match(r"r7, sp$|fp, sp$", args):
            fp_frames.add(id(cur))
        if base == "mov" and re.match(r"sp, r\d+$|sp, (ip|fp)$", args) and id(cur) not in fp_frames:
            cur.frame = None                                   # sp set from a computed value
        t = _TARGET.match(args)
        if base in ("bl", "blx") and t:
            cur.calls.append(int(t.group(1), 16))
        elif base in ("blx",) or (base == "bx" and args != "lr" and not re.match(r"pop", last)):
            cur.indirect = True
        elif base.startswith("b") and t and t.group(3) is None and t.group(2) != cur.name and base not in ("bkpt", "bic", "bfi", "bfc"):
            cur.calls.append(int(t.group(1), 16))                # a tail call
        last = op
    # a function's other names (libgcc's __aeabi_fadd is __addsf3's alias): objdump labels a
    # start with one of them only
    r = subprocess.run([objdump, "-t", elf], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        m = re.match(r"^([0-9a-f]+) [^\t]*F \S+\s+[0-9a-f]+\s+(?:\.hidden\s+)?(\S+)$", line)
        if m and (int(m.group(1), 16) & ~1) in funcs:
            names.setdefault(m.group(2), int(m.group(1), 16) & ~1)
    return funcs, names


# -- the bound ----------------------------------------------------------------------------------
class CallGraph:
    """The compiler's functions, falling back on the ELF's for everything they call that the
    build did not compile."""

    def __init__(self, ci_files, elf=None, objdump="arm-none-eabi-objdump"):
        self.funcs, self.globals = read_callgraph(ci_files)
        self.bin, self.bin_names = read_binary(elf, objdump) if elf else ({}, {})
        # the ELF's functions the build compiled: their edges are the compiler's
        self.compiled_at = {a: self.globals.get(fn.name) for a, fn in self.bin.items() if fn.name in self.globals}
        self._memo = {}

    def _node(self, key):
        """(name, Func or None) of a key: a compiled function's, a library's by address or name."""
        key = self._canon(key)
        if isinstance(key, int):
            fn = self.bin.get(key)
            return (fn.name if fn else f"0x{key:x}"), fn
        if key.startswith("sym:"):          # a name neither the build nor the ELF defines
            return key[4:], None
        fn = self.funcs.get(key)
        return (fn.name if fn else key), fn

    def _canon(self, key):
        """One key per function: a compiled function's own key wherever the ELF or a name
        reaches it, else its ELF address."""
        if isinstance(key, int) and self.compiled_at.get(key):
            return self.compiled_at[key]
        if isinstance(key, str) and key.startswith("sym:"):
            name = key[4:]
            if name in self.globals:
                return self.globals[name]
            if name in self.bin_names:
                return self._canon(self.bin_names[name])
        return key

    def bound(self, root) -> Bound:
        """The bound of the tree under `root` (a function name)."""
        if root not in self.globals and root not in self.bin_names:
            return Bound(None, [root], f"function '{root}' is not in the build")
        return self._bound(self._canon("sym:" + root), ())

    def _bound(self, key, stack) -> Bound:
        if key in self._memo:
            return self._memo[key]
        name, fn = self._node(key)
        if key in stack:
            raise StackBoundError("recursion, so no stack bound: " + " -> ".join(
                [self._node(k)[0] for k in stack[stack.index(key):]] + [name]))
        if fn is None:
            b = Bound(None, [name], f"'{name}' is called but defined nowhere the build can read", [key])
        elif fn.frame is None:
            b = Bound(None, [name], f"'{name}' has a variable-sized stack frame", [key])
        elif fn.indirect:
            b = Bound(None, [name], f"'{name}' calls through a function pointer", [key])
        else:
            b = Bound(fn.frame, [name], keys=[key])
            for c in fn.calls:
                sub = self._bound(self._canon(c), stack + (key,))
                if sub.bytes is None:
                    b = Bound(None, [name] + sub.path, sub.why, [key] + sub.keys)
                    break
                if fn.frame + sub.bytes > b.bytes:
                    b = Bound(fn.frame + sub.bytes, [name] + sub.path, keys=[key] + sub.keys)
        self._memo[key] = b
        return b

    def frames(self, bound: Bound) -> list:
        """[(name, frame bytes, origin)] along a bound's path."""
        out = []
        for key in bound.keys:
            name, fn = self._node(key)
            out.append((name, fn.frame if fn else None, fn.origin if fn else "unknown"))
        return out


def vector_handlers(elf, objdump="arm-none-eabi-objdump") -> dict:
    """{exception number: handler address} from the ELF's .vectors section (entry 0 is the
    initial sp, not a handler)."""
    r = subprocess.run([objdump, "-s", "-j", ".vectors", elf], capture_output=True, text=True)
    words = []
    for line in r.stdout.splitlines():
        m = re.match(r"^ [0-9a-f]+ ((?:[0-9a-f]{8} ?){1,4})", line)
        if m:
            words += [int.from_bytes(bytes.fromhex(w), "little") for w in m.group(1).split()]
    return {k: w & ~1 for k, w in enumerate(words) if k >= 1 and w}


def has_fp_context(cflags) -> bool:
    """Whether code built with these flags may leave an FP context live at an exception."""
    abi = next((f.split("=", 1)[1] for f in cflags if f.startswith("-mfloat-abi=")), "soft")
    fpu = next((f.split("=", 1)[1] for f in cflags if f.startswith("-mfpu=")), "auto")
    return abi in ("hard", "softfp") and fpu != "none"


# exception numbers by the priority level they run at out of reset: NMI (-2) and HardFault (-1)
# are fixed above every other; MemManage, BusFault, UsageFault and SecureFault are disabled at
# reset and escalate to HardFault; the rest (SVCall, DebugMonitor, PendSV, SysTick, interrupts)
# are configurable and reset to priority 0, so at most one of them is active at a time
def _level(exc):
    return "nmi" if exc == 2 else "hardfault" if 3 <= exc <= 7 else "configurable"


def firmware_bound(graph: CallGraph, elf, cflags, objdump="arm-none-eabi-objdump") -> dict:
    """The whole firmware's bound: the reset handler's tree (the thread), then for each
    priority level that can preempt it, the deepest handler of that level with its hardware
    frame (a handler can preempt only a lower level, so the levels stack once each)."""
    handlers = vector_handlers(elf, objdump)
    if 1 not in handlers:
        return {"bytes": None, "why": "the ELF has no reset vector"}
    frame = FP_FRAME if has_fp_context(cflags) else BASIC_FRAME
    thread = graph._bound(graph._canon(handlers[1]), ())
    levels = {}
    for exc, addr in sorted(handlers.items()):
        if exc == 1:
            continue
        level = _level(exc)
        b = graph._bound(graph._canon(addr), ())
        cost = None if b.bytes is None else b.bytes + frame
        have = levels.get(level)
        if have is None or (have["bytes"] is not None and (cost is None or cost > have["bytes"])):
            levels[level] = {"bytes": cost, "path": b.path, **({"why": b.why} if b.why else {})}
    parts = [thread.bytes] + [v["bytes"] for v in levels.values()]
    unknown = next((x for x in [thread.to_json()] + list(levels.values()) if x["bytes"] is None), None)
    return {"bytes": None if unknown else sum(parts), "thread": thread.to_json(), "exceptions": levels,
            "exception_frame": frame, **({"why": unknown.get("why", "")} if unknown else {})}


def ci_files(build_dir):
    return glob.glob(os.path.join(build_dir, "*.ci"))
