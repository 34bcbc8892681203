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


_CUTLASS = ("CUTLASS offload (NVIDIA's CUDA template library of GEMM and convolution kernels, built by nvcc and "
            "profiled on the GPU) is not offered: this compiler makes its own kernels from te schedules; build for "
            "\"cuda\" with relay.build, or schedule the kernel with te")
_PIPELINE = ("the pipeline executor (a model split into subgraphs that run as a pipeline of modules on several "
             "devices, each in its own thread) is not offered: this compiler has one executor, which runs a model "
             "as one ahead-of-time function; build the model whole with relay.build, or build each subgraph and "
             "feed one module's outputs to the next yourself")

# dotted name under aot -> (why, the names TVM's module has: importable, refused when used)
REFUSED_SUBMODULES = {
    "contrib.cutlass": (_CUTLASS, ("finalize_modules", "finalize_modules_vm", "build_cutlass_kernels",
                                   "build_cutlass_kernels_vm", "tune_cutlass_kernels", "has_cutlass")),
    "relay.op.contrib.cutlass": (_CUTLASS, ("partition_for_cutlass",)),
    "contrib.pipeline_executor": (_PIPELINE, ("PipelineModule", "pipeline_executor_enabled")),
    "contrib.pipeline_executor_build": (_PIPELINE, ("PipelineConfig", "PipelineExecutorFactoryModule", "build",
                                                    "pipeline_executor_build_enabled")),
}


class RefusedStandIn:
    """A name of a refused module, importable (`from tvm.contrib.cutlass import finalize_modules`)
    so that a program gets past its imports; calling it or reading its attributes is refused."""

    def __init__(self, qualname, why):
        self._qualname, self._why = qualname, why

    def __call__(self, *args, **kwargs):
        if self._qualname.endswith("_enabled"):
            return False            # the question "is it built in?" has an honest answer: no
        raise RefusedName(f"tvm.{self._qualname}: {self._why}")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise RefusedName(f"tvm.{self._qualname}.{attr}: {self._why}")

    def __repr__(self):
        return f"<refused tvm.{self._qualname}>"


def submodule(package_name, dotted):
    """The refused module aot.<dotted> (made once, in sys.modules), with its stand-in names."""
    full = f"{package_name}.{dotted}"
    if full not in sys.modules:
        why, names = REFUSED_SUBMODULES[dotted]
        mod = RefusedModule(dotted, why)
        for n in names:
            setattr(mod, n, RefusedStandIn(f"{dotted}.{n}", why))
        sys.modules[full] = mod
    return sys.modules[full]


def install(package):
    """Each refused name as a module of `package` (aot), importable as aot.<name>; each refused
    dotted name as an attribute of its parent module, now if that is loaded, else when it loads
    (a module that is no package, as aot.relay.op, holds its refused children in namespace())."""
    for name, why in REFUSED.items():
        mod = sys.modules.setdefault(f"{package.__name__}.{name}", RefusedModule(name, why))
        setattr(package, name, mod)
    for dotted in REFUSED_SUBMODULES:
        parent_name, _, leaf = f"{package.__name__}.{dotted}".rpartition(".")
        if parent_name in sys.modules:
            setattr(sys.modules[parent_name], leaf, submodule(package.__name__, dotted))


def namespace(name):
    """The plain module `name` (made once, in sys.modules) holding the refused modules under it:
    the parent of refused modules under a module that is no package (aot.relay.op.contrib), which
    that module takes as its attribute, so that the dotted import finds them."""
    if name not in sys.modules:
        ns = sys.modules[name] = types.ModuleType(name, f"Refused TVM packages under tvm{name[3:]}.")
        package, _, under = name.partition(".")
        for dotted in REFUSED_SUBMODULES:
            parent, _, leaf = dotted.rpartition(".")
            if parent == under:
                setattr(ns, leaf, submodule(package, dotted))
    return sys.modules[name]
