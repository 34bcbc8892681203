"""TVM's tvm.contrib.cc, for the modules aot.build makes: a module saved with .save() is already
the whole module (its Model Library Format tarball, or a symbolic module's file), so
create_shared of that one file makes the library load_module reads; object files of a C
compiler's own are linked with the host compiler, as TVM does."""
from __future__ import annotations

import os
import shutil
import subprocess

from ..errors import AotError


def _is_aot_module(path):
    import tarfile
    try:
        return tarfile.is_tarfile(path)
    except OSError:
        return False


def create_shared(output, objects, options=None, cc=None, cwd=None, ccache_env=None):
    objects = [objects] if isinstance(objects, (str, os.PathLike)) else list(objects)
    ours = [o for o in objects if _is_aot_module(o)]
    if ours:
        if len(objects) != 1:
            raise AotError("create_shared: an aot module (saved by .save) is a library by itself; "
                           "give it alone, not with other objects")
        shutil.copyfile(objects[0], output)
        return
    cmd = [cc or os.environ.get("CC") or "gcc", "-shared", "-fPIC", "-o", str(output), *map(str, objects),
           *(options or [])]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if r.returncode != 0:
        raise AotError(f"create_shared: {' '.join(cmd)} failed:\n{r.stderr}")


def create_executable(output, objects, options=None, cc=None, cwd=None, ccache_env=None):
    objects = [objects] if isinstance(objects, (str, os.PathLike)) else list(objects)
    cmd = [cc or os.environ.get("CC") or "gcc", "-o", str(output), *map(str, objects), *(options or [])]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if r.returncode != 0:
        raise AotError(f"create_executable: {' '.join(cmd)} failed:\n{r.stderr}")
