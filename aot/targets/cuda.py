"""CUDA: kernels in CUDA C compiled by nvcc (lib1.cu, with a launch wrapper each), host C on
the CUDA runtime; -libs=cudnn,cublas call the libraries (aot/targets/libs/)."""
from __future__ import annotations

from .base import GpuFamily


class Cuda(GpuFamily):
    name = "cuda"
    kind = "cuda"
    # tf32: the libraries may use TF32 tensor cores for float32 (cuDNN's default math, cuBLAS's
    # TF32 mode), as PyTorch's cuDNN convolutions do by default; off, they keep float32's FMA math
    attrs = {"keys": "list", "arch": "str", "model": "str", "libs": "list", "tf32": "bool"}
    keys = ("cuda", "gpu")
    dialect = "cuda"
    host_template = "cuda_lib0.c.j2"
    build_fragments = {"mk": "mlf_cuda.mk.j2", "cmake": "mlf_cuda.cmake.j2"}
    libraries = ("cudnn", "cublas")
    external_calls = True
    io_pointer = "io[%d]"     # the steps take the I/O buffers: the module's own, or run_device's
    device_entry = True
    graph_replay = True
    runtime_libs = ("-lcudart",)
    device_sources = (".cu",)
    absent = ("no CUDA GPU on this machine: the CUDA MLF compiles and links here "
              "(aot.host.build_host), but its kernels run only where the CUDA driver sees a GPU")

    def present(self):
        return device_count() > 0


def device_count():
    """CUDA GPUs the driver sees (0 without a driver): nvcc builds anywhere, a kernel runs only here."""
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    n = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(n)) != 0:
        return 0
    return n.value


CUDA = Cuda()
