"""Helpers with TVM's tvm.contrib names: graph_executor, utils (tempdir), cc, clang (C++ to LLVM IR), cblas
(the BLAS matmul as a te.extern)."""
from . import cblas, cc, clang, utils  # noqa: F401
