"""aot.ir: the graph IR (graph.py) and its pattern language (pattern.py); module.py is TVM's
tvm.ir.IRModule of TIR functions and transform.py its passes (tvm.ir.transform)."""
from . import module, transform  # noqa: F401,E402  (tvm.ir.module, tvm.ir.transform as attributes)
from .module import GlobalVar, IRModule  # noqa: F401,E402
