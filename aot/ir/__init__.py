"""aot.ir: the graph IR (graph.py) and its pattern language (pattern.py); module.py is TVM's
tvm.ir.IRModule of TIR functions, transform.py its passes (tvm.ir.transform) and instrument.py the
hooks around them (tvm.ir.instrument)."""
from . import instrument, module, transform  # noqa: F401,E402  (tvm.ir.instrument, .module, .transform)
from .module import DictAttrs, GlobalVar, IRModule, make_node  # noqa: F401,E402
