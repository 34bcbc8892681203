"""OpenCL 1.2: kernels in OpenCL C built at init from a string table (lib1.c, the same text as
kernels.cl), host C on the OpenCL runtime."""
from __future__ import annotations

import os

from .base import GpuFamily


class OpenCL(GpuFamily):
    name = "opencl"
    kind = "opencl"
    attrs = {"keys": "list", "device": "str", "model": "str"}
    keys = ("opencl", "gpu")
    dialect = "opencl"
    host_template = "opencl_lib0.c.j2"
    build_fragments = {"mk": "mlf_opencl.mk.j2", "cmake": "mlf_opencl.cmake.j2"}
    runtime_libs = ("-lOpenCL",)
    absent = "no OpenCL platform on this machine (on a CPU: apt-get install pocl-opencl-icd ocl-icd-opencl-dev)"

    def present(self):
        import ctypes.util
        vendors = "/etc/OpenCL/vendors"
        return ctypes.util.find_library("OpenCL") is not None and os.path.isdir(vendors) and bool(os.listdir(vendors))


OPENCL = OpenCL()
