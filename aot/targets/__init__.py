"""Target families: one object per family (aot/targets/<family>.py) holding what the stages ask
of a target: the core's features, layout and staging preferences, the schedule pipeline, the
renderer dialect and GPU host template, the shared-memory limit, the libraries -libs= may name.

`family_for(kind, mcpu)` is the first family that claims a target; families added with
`add_family` are asked before the built-in ones (a family of its own for some -mcpu of kind "c",
or a new kind: a new GPU API is one such module, tests/unit/test_target_families.py shows one).
"""
from __future__ import annotations

from .base import Family, GpuFamily  # noqa: F401
from .cmsis_nn import CMSIS_NN
from .cortex_m import CORTEX_M
from .cuda import CUDA
from .host import HOST, LLVM
from .opencl import OPENCL

FAMILIES = [CORTEX_M, HOST, LLVM, CUDA, OPENCL, CMSIS_NN]


def add_family(family: Family):
    """Make a family known, ahead of the built-in ones (or in place of an equal-named one)."""
    FAMILIES[:] = [family] + [f for f in FAMILIES if f.name != family.name]
    return family


def family_for(kind, mcpu=None):
    """The family of a target of `kind` with -mcpu=mcpu, or None for a kind no family serves."""
    return next((f for f in FAMILIES if f.claims(kind, mcpu)), None)


def kind_attrs(kind):
    """The options target kind `kind` takes (name -> "str" | "list"), or None for an unknown kind."""
    return next((f.attrs for f in FAMILIES if f.kind == kind), None)


def kinds():
    """The target kinds the families serve, in the order they were made known."""
    out = []
    for f in reversed(FAMILIES):
        if f.kind not in out:
            out.append(f.kind)
    return out


def runtime_devices():
    """The device names aot.runtime.Device takes (TVM's tvm.cpu(), tvm.cuda(), ...): the host's,
    then each GPU API's."""
    return [HOST.device] + sorted(f.kind for f in FAMILIES if f.is_device)


def device_family(api):
    """The GPU family an MLF's device.api names (metadata.json), or None."""
    return next((f for f in FAMILIES if f.is_device and f.kind == api), None)
