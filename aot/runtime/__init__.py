"""Devices and arrays with TVM's names (aot.cpu(0), aot.cuda(0), aot.nd.array): a numpy array is
the storage; a device says which runner executes a module (the host build, nvcc, OpenCL)."""
from __future__ import annotations

import numpy as np

from ..errors import AotError
from .ndarray import Device, cl, cpu, cuda, device, gpu, opencl  # noqa: F401 -- TVM's names, from tvm.runtime


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
