"""TVM's tvm.contrib.cblas: matmul as a te.extern calling the packed function
"tvm.contrib.cblas.matmul", which is registered when this machine has a CBLAS library (found by
ctypes.util.find_library("blas" / "cblas" / "openblas"), at the name's first lookup: the search
runs compilers) and calls its cblas_sgemm / cblas_dgemm on the module's buffers. Without one it
is not registered, as a TVM built without cblas has none (tvm.get_global_func(...,
allow_missing=True) is then None)."""
from __future__ import annotations

import ctypes
import ctypes.util

from ..errors import AotError
from ..runtime.packed import register_lazy
from ..te import extern
from ..tir.op import call_packed

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


def _load_blas():
    for name in ("cblas", "blas", "openblas"):
        path = ctypes.util.find_library(name)
        if not path:
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if hasattr(lib, "cblas_sgemm") and hasattr(lib, "cblas_dgemm"):
            return lib
    return None


def _gemm(blas, a, b, c, transa, transb):
    import numpy as np
    A, B, C = a._data, b._data, c._data          # the module's own buffers (aot.nd views)
    if A.ndim != 2 or B.ndim != 2 or C.ndim != 2 or not (A.dtype == B.dtype == C.dtype):
        raise AotError("cblas.matmul: takes three 2-d arrays of one dtype")
    m, k = (A.shape[1], A.shape[0]) if transa else A.shape
    k2, n = (B.shape[1], B.shape[0]) if transb else B.shape
    if k != k2 or C.shape != (m, n):
        raise AotError(f"cblas.matmul: shapes {A.shape} x {B.shape} -> {C.shape} do not agree")
    if A.dtype == np.float32:
        fn, scalar = blas.cblas_sgemm, ctypes.c_float
    elif A.dtype == np.float64:
        fn, scalar = blas.cblas_dgemm, ctypes.c_double
    else:
        raise AotError(f"cblas.matmul: BLAS multiplies float32 or float64, not {A.dtype}")
    p = ctypes.c_void_p
    i = ctypes.c_int
    fn.argtypes = [i, i, i, i, i, i, scalar, p, i, p, i, scalar, p, i]
    fn.restype = None
    fn(_ROW_MAJOR, _TRANS if transa else _NO_TRANS, _TRANS if transb else _NO_TRANS, m, n, k, 1.0,
       A.ctypes.data, A.shape[1], B.ctypes.data, B.shape[1], 0.0, C.ctypes.data, C.shape[1])


def _provide():
    blas = _load_blas()
    return None if blas is None else (lambda a, b, c, transa, transb: _gemm(blas, a, b, c, transa, transb))


register_lazy("tvm.contrib.cblas.matmul", _provide)


def matmul(lhs, rhs, transa=False, transb=False, **kwargs):
    """C = op(lhs) . op(rhs) computed by the BLAS, as TVM's cblas.matmul."""
    n = lhs.shape[1] if transa else lhs.shape[0]
    m = rhs.shape[0] if transb else rhs.shape[1]
    return extern((n, m), [lhs, rhs],
                  lambda ins, outs: call_packed("tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], transa, transb),
                  name="C", **kwargs)
