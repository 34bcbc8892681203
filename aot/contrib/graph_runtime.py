"""tvm.contrib.graph_runtime: TVM 0.6's name of the graph executor (aot.contrib.graph_executor).
create and GraphModule work and warn once, naming today's module."""
from __future__ import annotations

from ..deprecation import warn_once
from . import graph_executor

_MESSAGE = "tvm.contrib.graph_runtime is TVM 0.6's spelling: use tvm.contrib.graph_executor"


def create(graph_json_str, libmod, device):
    warn_once("contrib.graph_runtime", _MESSAGE, stacklevel=2)
    return graph_executor.create(graph_json_str, libmod, device)


class GraphModule(graph_executor.GraphModule):
    def __init__(self, module):
        warn_once("contrib.graph_runtime", _MESSAGE, stacklevel=2)
        super().__init__(module)
