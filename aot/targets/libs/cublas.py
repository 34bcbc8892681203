"""-libs=cublas: MatMul (2-D, or batched with equal batch dims, or a batch of rows times one
matrix) and Gemm without a bias input, through cublasSgemmStridedBatched. A bias add or an
activation after it stays a generated kernel (TVM's fusion boundary for library calls). Float32
math, or TF32 tensor cores with the target's -tf32 (set once at init, aot_cublas_math). The
handle works in a workspace of its own made with it, so that its calls only enqueue on the
module's stream and a CUDA graph may record them."""
from __future__ import annotations

import numpy as np

from ...uma import UMABackend, call_extern


def _mkn(node):
    """(batch, m, n, k, stride_a, stride_b, trans_a, trans_b, alpha) of a MatMul or 2-input Gemm,
    or None when cuBLAS cannot take it in one strided-batched call."""
    a, b = (v.type.shape for v in node.inputs[:2])
    if any(v.type.dtype != "float32" for v in node.inputs[:2]) or len(node.inputs) > 2 and node.inputs[2] is not None:
        return None
    if node.op == "Gemm":
        ta, tb = int(node.attrs.get("transA", 0)), int(node.attrs.get("transB", 0))
        m, k = (a[1], a[0]) if ta else a
        n = b[0] if tb else b[1]
        return 1, m, n, k, 0, 0, ta, tb, float(node.attrs.get("alpha", 1.0))
    if len(a) < 2 or len(b) < 2:
        return None                      # vectors: leave to the generated kernel
    m, k, n = a[-2], a[-1], b[-1]
    if len(b) == 2:                      # [..., m, k] x [k, n]: the rows of every batch at once
        return 1, int(np.prod(a[:-1])), n, k, 0, 0, 0, 0, 1.0
    if tuple(a[:-2]) != tuple(b[:-2]):
        return None                      # broadcast batches
    return int(np.prod(a[:-2])), m, n, k, m * k, k * n, 0, 0, 1.0


def lower(call, tf32):
    batch, m, n, k, sa, sb, ta, tb, alpha = _mkn(call.nodes[0])
    x, w = call.inputs[0], call.inputs[1]
    call.at_init(call_extern("aot_cublas_math", call.device, tf32))
    return call_extern("aot_cublas_matmul", call.device, x, w, call.outputs[0], batch, m, n, k, sa, sb, ta, tb,
                       float(alpha))


class CublasBackend(UMABackend):
    target_name = "cublas"

    def __init__(self):
        super().__init__(merge_compiler_regions=False)     # one library call per function
        self._register_op("MatMul", predicate=lambda n: _mkn(n) is not None)
        self._register_op("Gemm", predicate=lambda n: _mkn(n) is not None)
        self._register_lowering("MatMul", self._lower)
        self._register_lowering("Gemm", self._lower)
        self._register_device_context(create="aot_cublas_create", destroy="aot_cublas_destroy", graph_safe=True)
        self._register_codegen(fmt="c", includes=["aot_cublas.h"], sources=["aot_cublas.c", "aot_cublas.h"])

    def _lower(self, call):
        return lower(call, 1 if self.target is not None and self.target.get("tf32") else 0)


BACKEND = CublasBackend
