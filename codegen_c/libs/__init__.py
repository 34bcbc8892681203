"""The external libraries a target's -libs names (TVM's cuda -libs=cudnn,cublas): built-in
plug-in backends (aot.uma), so they partition, plan and call exactly as a user's accelerator does.
Each is one module here with the C wrapper it ships in the MLF."""
from __future__ import annotations

from aot.errors import AotError


def lib_backends(target):
    """The backends of target.libs, in the order given."""
    from . import cublas, cudnn
    known = {"cublas": cublas.CublasBackend, "cudnn": cudnn.CudnnBackend}
    out = []
    for lib in target.libs:
        if lib not in known:
            raise AotError(f"target '{target}': library '{lib}' has no backend")
        out.append(known[lib]())
    return out
