"""tvm.transform: the same module as tvm.ir.transform (PassContext, Pass, Sequential, module_pass),
which lives with the IR (aot/ir/transform.py) so that the TIR passes use it too."""
from .ir.transform import (CONFIG, ModulePass, Pass, PassContext, PassInfo, PrintIR, Sequential,  # noqa: F401
                           get_pass, module_pass, register_pass, run_instrumented)
