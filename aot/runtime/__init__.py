"""Devices and arrays with TVM's names (aot.cpu(0), aot.cuda(0), aot.nd.array): a numpy array is
the storage; a device says which runner executes a module (the host build, nvcc, OpenCL)."""
from __future__ import annotations

import numpy as np

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


class NDArray:
    def __init__(self, data, device=None):
        self._data = np.array(data, copy=True)
        self.device = device or cpu()

    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return str(self._data.dtype)

    def numpy(self):
        return self._data.copy()

    def asnumpy(self):
        from ..deprecation import warn_once
        warn_once("NDArray.asnumpy", "NDArray.asnumpy() is TVM 0.6's spelling: use .numpy()", stacklevel=2)
        return self._data.copy()

    def __array__(self, dtype=None, copy=None):
        return self._data.astype(dtype) if dtype is not None else self._data.copy()

    @classmethod
    def _view(cls, array):
        """An NDArray over `array`'s memory itself (a running module's buffer handed to a packed
        function), not a copy: what is written into it is written there."""
        out = cls.__new__(cls)
        out._data, out.device = array, cpu()
        return out

    def copyto(self, target):
        """TVM's copyto: into another array (its memory), or onto a device as a new array."""
        if isinstance(target, NDArray):
            target.copyfrom(self)
            return target
        return NDArray(self._data, target)

    def copyfrom(self, source):
        a = np.asarray(source.numpy() if hasattr(source, "numpy") else source)
        if a.shape != self._data.shape:
            raise AotError(f"copyfrom: shape {list(a.shape)} into an array of shape {list(self._data.shape)}")
        self._data[...] = a
        return self

    def __repr__(self):
        return f"<aot.NDArray {list(self.shape)} {self.dtype} @{self.device}>\n{self._data!r}"


class _Nd:
    """aot.nd: array(), empty()."""

    @staticmethod
    def array(data, device=None):
        return NDArray(data.numpy() if hasattr(data, "numpy") else data, device)

    @staticmethod
    def empty(shape, dtype="float32", device=None):
        return NDArray(np.zeros(shape, dtype), device)


nd = _Nd()

from . import packed as _packed  # noqa: E402
_packed.VIEW = NDArray._view


def load_module(path):
    """A module saved with export_library (aot.build's result), ready to call."""
    from ..module import load_module as _load
    return _load(path)
