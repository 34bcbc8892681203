"""`aot compile --backend`: the C sources a plug-in backend ships in the MLF are compiled once,
syntax only, with the compiler and flags the target's build will use (the host build's, or the
Cortex-M board's for a core one matches), so that a broken source is refused at compile time,
naming the backend, rather than failing later as an internal error of `aot run`."""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile

from .errors import AotError

SRC = "codegen/host/src/"


def _board_for(core):
    """The emulated board whose core is `core` (board.json), or None."""
    from boards import BOARDS_DIR, load_board
    for name in sorted(os.listdir(BOARDS_DIR)):
        if os.path.isfile(os.path.join(BOARDS_DIR, name, "board.json")):
            b = load_board(name)
            if b.get("kind") == "qemu" and b.get("core") == core:
                return b
    return None


def build_compiler(target, tar):
    """(compiler, flags) that a build of the MLF `tar` (bytes) for `target` compiles its model
    sources with: a Cortex-M core's board (or arm-none-eabi-gcc for the core when no board has
    it), else the host build's."""
    core = target.core
    if core is not None:
        from .firmware import COMMON, STRICT
        b = _board_for(core.name)
        if b is not None:
            return b["cc"], [*STRICT, *b["cflags"], "-O2", *COMMON]
        return "arm-none-eabi-gcc", [*STRICT, f"-mcpu={core.name}", "-mthumb", "-O2", *COMMON]
    from boards import load_board

    from .host import host_cflags
    return os.environ.get("CC") or load_board("host")["cc"], host_cflags(tar)


def first_error(stderr, root):
    """The compiler's first error line, paths inside the scratch directory made relative."""
    lines = [ln.replace(root + os.sep, "") for ln in stderr.splitlines()]
    return next((ln for ln in lines if "error" in ln), next((ln for ln in lines if ln.strip()), "")).strip()


def check_backend_sources(tar, target, backends, warn):
    """Compile each .c file a backend put in the MLF `tar` (bytes) with -fsyntax-only: an
    AotError names the backend, the file and the compiler's first error. Without the compiler,
    warn(message) says the sources were not checked."""
    owned = []
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        members = {m.name.lstrip("./"): m for m in t.getmembers()}
        for b in backends:
            for name in sorted(getattr(b, "_sources", {})):
                if name.endswith(".c") and SRC + name in members:
                    owned.append((b, name))
        if not owned:
            return
        cc, flags = build_compiler(target, tar)
        if shutil.which(cc) is None:
            names = ", ".join(f"'{n}'" for _, n in owned)
            warn(f"C compiler '{cc}' not found: the backend source(s) {names} were not checked for target "
                 f"'{target}' (a broken one fails only when the MLF is built)")
            return
        with tempfile.TemporaryDirectory(prefix="aot-syntax-") as tmp:
            t.extractall(tmp, filter="data")
            incs = ["-I", os.path.join(tmp, "codegen/host/include"), "-I", os.path.join(tmp, "runtime/include")]
            for b, name in owned:
                cmd = [cc, "-fsyntax-only", *flags, *incs, os.path.join(tmp, SRC + name)]
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                except (OSError, subprocess.TimeoutExpired) as e:
                    warn(f"C compiler '{cc}' could not check backend source '{name}': {e}")
                    continue
                if r.returncode != 0:
                    line = re.sub(r"\s+", " ", first_error(r.stderr, tmp))[:300]
                    raise AotError(f"backend '{b.target_name}': its source '{name}' does not compile for target "
                                   f"'{target}' ({os.path.basename(cc)} {' '.join(flags)}): {line}")
