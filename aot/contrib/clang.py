"""TVM's tvm.contrib.clang: C/C++ source compiled to LLVM IR text with the clang on this machine,
which a te schedule links into a built function with s[T].pragma(axis, "import_llvm", ll_code)
(the host build compiles that IR with clang to an object and links it)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from ..errors import AotError, BuildError


def find_clang(required=True):
    """The clang executables found ($CLANG first), as TVM's find_clang lists them."""
    found = [c for c in (os.environ.get("CLANG"), "clang") if c and shutil.which(c)]
    if required and not found:
        raise AotError("contrib.clang: no clang on PATH (set $CLANG): LLVM IR cannot be made here")
    return found


def create_llvm(inputs, output=None, options=None, cc=None):
    """LLVM IR (text) of the C++ source(s) `inputs` (code text, or paths of existing files), as
    TVM's create_llvm: each compiled with clang -S -emit-llvm -O2, the results concatenated;
    written to `output` too when given."""
    cc = cc or find_clang()[0]
    inputs = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    texts = []
    with tempfile.TemporaryDirectory(prefix="aot_clang_") as tmp:
        for k, src in enumerate(inputs):
            if isinstance(src, str) and not os.path.isfile(src):
                path = os.path.join(tmp, f"input{k}.cc")
                with open(path, "w") as f:
                    f.write(src)
            else:
                path = str(src)
            out = os.path.join(tmp, f"output{k}.ll")
            cmd = [cc, "-S", "-emit-llvm", "-O2", "-fPIC", *(options or []), "-o", out, path]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                raise BuildError(f"contrib.clang.create_llvm: {cc} failed:\n{r.stderr[-4000:]}")
            with open(out) as f:
                texts.append(f.read())
    code = "\n".join(texts)
    if output is not None:
        with open(output, "w") as f:
            f.write(code)
    return code
