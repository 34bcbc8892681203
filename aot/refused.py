"""TVM's packages this compiler does not offer (autotuning, RPC to devices, ...): importable, so
that a ported program gets past its imports, but any use is refused by name with the reason and
what to do instead (docs/from_tvm.md lists them)."""
from __future__ import annotations

import sys
import types

from .errors import AotError

# name under aot -> why, and what to use instead
REFUSED = {
    "autotvm": "autotuning is not offered: each target's schedules are chosen by its rule pipeline "
               "(aot/schedules/pipelines.py); write a te schedule by hand for your own kernels",
    "auto_scheduler": "auto-scheduling is not offered: each target's schedules are chosen by its rule pipeline "
                      "(aot/schedules/pipelines.py); write a te schedule by hand for your own kernels",
    "meta_schedule": "MetaSchedule tuning is not offered: each target's schedules are chosen by its rule pipeline "
                     "(aot/schedules/pipelines.py); schedule TensorIR by hand with aot.tir.Schedule",
    "rpc": "RPC to a remote device is not offered: build an MLF and run it with `aot run --board` (QEMU) or "
           "in your firmware",
    "driver": "tvmc's Python driver is not offered: use the `aot` command line (aot compile/run/size) or aot.compile",
}


class RefusedName(AotError, AttributeError):
    """Raised for any name of a refused package: an AotError with the reason, and an AttributeError,
    so that getattr(module, name, default) and hasattr still answer as for a missing name."""


class RefusedModule(types.ModuleType):
    def __init__(self, name, why):
        super().__init__(f"aot.{name}", f"Refused: tvm.{name}: {why}.")
        self._why = why

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise RefusedName(f"tvm.{self.__name__[4:]}.{attr}: {self._why}")


def install(package):
    """Each refused name as a module of `package` (aot), importable as aot.<name>."""
    for name, why in REFUSED.items():
        mod = sys.modules.setdefault(f"{package.__name__}.{name}", RefusedModule(name, why))
        setattr(package, name, mod)
