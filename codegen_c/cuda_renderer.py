"""CUDA C: the C renderer with CUDA's kernel prefix, restrict, shared memory, barrier and
thread indices. Kernels are void and extern "C" (the host calls them through launch wrappers
compiled in the same .cu file)."""
from __future__ import annotations

from .c_renderer import CRenderer


class CUDARenderer(CRenderer):
    name = "CUDA"
    function_prefix = 'extern "C" __global__'
    return_value = None
    restrict = "__restrict__"
    shared_prefix = "__shared__"
    barrier_text = "__syncthreads();"
    helper_prefix = "static __device__ inline"
    openmp = False
    thread_indices = {f"{k}.{a}": f"(int32_t){k}.{a}" for k in ("blockIdx", "threadIdx") for a in "xyz"}

    def signature(self, func, restrict=True):
        threads = func.attrs.get("launch", ((1, 1, 1), (1, 1, 1)))[1]
        head = super().signature(func, restrict)
        n = threads[0] * threads[1] * threads[2]
        return head.replace("__global__ void ", f"__global__ void __launch_bounds__({n}) ", 1)
