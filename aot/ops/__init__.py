"""Importing this package registers every op."""
from . import compile_time, dft, einsum, elementwise, indexing, nn, quant, reduce, resize, rnn, topk, transform  # noqa: F401
from .registry import REGISTRY, ImportCtx, Op, Pattern, get_op  # noqa: F401
