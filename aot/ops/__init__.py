"""Importing this package registers every op."""
from . import (compile_time, conv, custom, dense, dft, einsum, elementwise, function, indexing,  # noqa: F401
               norm, pool, prim_func, qarith, qlinear, qlut, qnn, qsigmoid16,
               qsoftmax16, quant, reduce, resize, rnn, topk, transform,
               window)
from .registry import REGISTRY, ImportCtx, Op, Pattern, get_op  # noqa: F401
