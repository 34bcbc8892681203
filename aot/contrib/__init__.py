"""Helpers with TVM's tvm.contrib names: graph_executor, utils (tempdir), cc."""
from . import utils  # noqa: F401
