"""TVM's tvm.contrib.cc: the host C compiler, to link saved modules into shared libraries."""
from __future__ import annotations

import os
import shutil
import subprocess

from ..errors import AotError, BuildError


def _cc(cc=None):
    cc = cc or os.environ.get("CC") or "gcc"
    if shutil.which(cc) is None:
        raise AotError(f"contrib.cc: the C compiler '{cc}' is not on PATH")
    return cc


def create_shared(output, objects, options=None, cc=None, cwd=None, ccache_env=None):
    """Link object files (module.save("x.o")) into a shared library runtime.load_module reads."""
    objects = [objects] if isinstance(objects, (str, os.PathLike)) else list(objects)
    missing = [str(o) for o in objects if not os.path.isfile(o)]
    if missing:
        raise AotError(f"create_shared: no such object file: {', '.join(missing)}")
    cmd = [_cc(cc), "-shared", "-fPIC", "-o", str(output), *map(str, objects), *(options or []), "-lm"]
    if any(_uses_openmp(o) for o in objects):
        cmd.append("-fopenmp")
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if r.returncode:
        raise BuildError(f"create_shared: {' '.join(cmd[:3])} ... failed:\n{r.stderr[-4000:]}")


def create_executable(output, objects, options=None, cc=None, cwd=None, ccache_env=None):
    objects = [objects] if isinstance(objects, (str, os.PathLike)) else list(objects)
    cmd = [_cc(cc), "-o", str(output), *map(str, objects), *(options or []), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if r.returncode:
        raise BuildError(f"create_executable failed:\n{r.stderr[-4000:]}")


def _uses_openmp(obj):
    with open(obj, "rb") as f:
        return b"GOMP_" in f.read()
