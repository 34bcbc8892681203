"""tvm.transform: the pass infrastructure (PassContext, Pass, module_pass, Sequential, PrintIR), which
lives in aot/ir/transform.py (tvm.ir.transform) so that the core layer's TIR passes share it."""
from .ir.transform import (CONFIG, ModulePass, Pass, PassContext, PassInfo, PrintIR, Sequential,  # noqa: F401
                           module_pass, run_instrumented)
