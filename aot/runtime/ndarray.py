"""tvm.runtime.ndarray's devices (TVM defines device, cpu, cuda... there, and tvm.runtime
re-exports them): a device says which runner executes a module (the host build, nvcc, OpenCL)."""
from __future__ import annotations

from ..errors import AotError
from ..targets import runtime_devices


class Device:
    def __init__(self, kind, index=0):
        if kind not in runtime_devices():
            raise AotError(f"device '{kind}' is not one of {', '.join(runtime_devices())}")
        self.kind, self.index = kind, int(index)

    def __repr__(self):
        return f"{self.kind}({self.index})"

    def __eq__(self, other):
        return isinstance(other, Device) and (self.kind, self.index) == (other.kind, other.index)

    def __hash__(self):
        return hash((self.kind, self.index))

    @property
    def device_type(self):
        """TVM's DLPack device type code (kDLCPU 1, kDLCUDA 2, kDLOpenCL 4)."""
        return {"cpu": 1, "cuda": 2, "opencl": 4}.get(self.kind, 1)

    @property
    def device_id(self):
        return self.index

    @property
    def exist(self):
        """Whether this machine has the device (the host CPU always does)."""
        if self.kind == "cpu":
            return True
        from ..targets import device_family
        family = device_family(self.kind)      # its API's own test (a CUDA driver, an OpenCL platform)
        return family is not None and family.present()

    def sync(self):
        """Runs are synchronous: nothing to wait for."""


# TVM's device names (tvm.device("llvm"), tvm.device("cuda -libs=cudnn")) -> ours; the first
# word of a target string names its device
_DEVICE_ALIASES = {"llvm": "cpu", "c": "cpu", "stackvm": "cpu", "ext_dev": "cpu", "gpu": "cuda", "nvptx": "cuda",
                   "cl": "opencl"}


def device(dev_type, index=0):
    """TVM's tvm.device(name, index): a Device for a device name, a target kind or a target string."""
    if isinstance(dev_type, Device):
        return dev_type
    if hasattr(dev_type, "kind"):                   # a Target
        dev_type = str(dev_type.kind)
    if not isinstance(dev_type, str) or not dev_type.split():
        raise AotError(f"device: expected a device name such as 'cpu' or 'cuda', not {dev_type!r}")
    name = dev_type.split()[0]
    return Device(_DEVICE_ALIASES.get(name, name), index)


def cpu(index=0):
    return Device("cpu", index)


def cuda(index=0):
    return Device("cuda", index)


def opencl(index=0):
    return Device("opencl", index)


cl = opencl
gpu = cuda
