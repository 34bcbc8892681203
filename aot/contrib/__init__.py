"""Helpers with TVM's tvm.contrib names: graph_executor, utils (tempdir), cc."""
from . import cc, utils  # noqa: F401
