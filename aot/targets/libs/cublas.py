"""-libs=cublas: MatMul (2-D, or batched with equal batch dims, or a batch of rows times one
matrix) and Gemm through cuBLAS (cublasSgemm, cublasSgemmStridedBatched), transposes passed as
cuBLAS's op flags (no copies). A Gemm's bias C (one row broadcast over the rows, or a whole
[m, n]) is copied into the output on the stream, device to device, and the product added onto it
(beta = Gemm's beta): one call for the classifier layers of resnet50 and vgg19. A bias add or an
activation after a MatMul stays a generated kernel (TVM's fusion boundary for library calls).
Float32 math, or TF32 tensor cores with the target's -tf32 (set once at init, aot_cublas_math). The
handle works in a workspace of its own made with it, so that its calls only enqueue on the
module's stream and a CUDA graph may record them."""
from __future__ import annotations

import numpy as np

from ...uma import UMABackend, call_extern
from . import tf32


# rows of a Gemm whose bias is one broadcast row: a device-to-device copy each, so a large batch
# of rows stays with the generated kernel, which reads the bias in place
BIAS_ROWS_MAX = 64


def _mkn(node):
    """(batch, m, n, k, stride_a, stride_b, trans_a, trans_b, alpha, bias) of a MatMul or Gemm,
    bias None, "row" (C is [n] or [1, n]) or "full" (C is [m, n]) with Gemm's beta; or None when
    cuBLAS cannot take it in one call."""
    a, b = (v.type.shape for v in node.inputs[:2])
    if any(v.type.dtype != "float32" for v in node.inputs[:2]):
        return None
    c = node.inputs[2] if len(node.inputs) > 2 else None
    if node.op == "Gemm":
        ta, tb = int(node.attrs.get("transA", 0)), int(node.attrs.get("transB", 0))
        m, k = (a[1], a[0]) if ta else a
        n = b[0] if tb else b[1]
        bias = None
        if c is not None:
            shape = tuple(c.type.shape)
            if c.type.dtype != "float32":
                return None
            beta = float(node.attrs.get("beta", 1.0))
            if shape in ((n,), (1, n)) and m <= BIAS_ROWS_MAX:
                bias = ("row", beta)
            elif shape == (m, n):
                bias = ("full", beta)
            else:
                return None              # a column or scalar broadcast: the generated kernel's
        return 1, m, n, k, 0, 0, ta, tb, float(node.attrs.get("alpha", 1.0)), bias
    if c is not None or len(a) < 2 or len(b) < 2:
        return None                      # vectors: leave to the generated kernel
    m, k, n = a[-2], a[-1], b[-1]
    if len(b) == 2:                      # [..., m, k] x [k, n]: the rows of every batch at once
        return 1, int(np.prod(a[:-1])), n, k, 0, 0, 0, 0, 1.0, None
    if tuple(a[:-2]) != tuple(b[:-2]):
        return None                      # broadcast batches
    return int(np.prod(a[:-2])), m, n, k, m * k, k * n, 0, 0, 1.0, None


def lower(call, tf32):
    batch, m, n, k, sa, sb, ta, tb, alpha, bias = _mkn(call.nodes[0])
    x, w, y = call.inputs[0], call.inputs[1], call.outputs[0]
    call.at_init(call_extern("aot_cublas_math", call.device, tf32))
    if bias is not None:
        kind, beta = bias
        return call_extern("aot_cublas_gemm_bias", call.device, x, w, call.inputs[2], y, m, n, k, ta, tb,
                           float(alpha), float(beta), 1 if kind == "row" else 0)
    return call_extern("aot_cublas_matmul", call.device, x, w, y, batch, m, n, k, sa, sb, ta, tb, float(alpha))


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
        return lower(call, tf32(self))


BACKEND = CublasBackend
