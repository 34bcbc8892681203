"""Loop IR: typed buffers, loops, stores and expressions; printers live elsewhere. With TVM's
tir names for what a user's TIR pass or schedule touches (Block, For, SeqStmt, PrimFunc, Schedule,
stmt_functor, ir_builder, transform.prim_func_pass, call_extern, decl_buffer)."""
from .expr import *  # noqa: F401,F403
from .stmt import *  # noqa: F401,F403
from .schedule_api import PrimModule, Schedule  # noqa: F401,E402
# tvm.tir.transform is the pass module, not expr.transform (the star import's expression rewriter)
del transform  # noqa: F821
from . import ir_builder, stmt_functor, transform  # noqa: F401,E402
from .op import (ExternCall, FloatImm, ForKind, IntImm, all, any, call_extern, call_packed, const,  # noqa: F401,E402,A004
                 decl_buffer, floordiv, floormod, if_then_else, indexdiv, indexmod, likely, max_value, min_value,
                 truncdiv, truncmod)
from .op import ceil, erf, exp, floor, log, sigmoid, sqrt, tanh  # noqa: F401,E402
from .expr import Load as BufferLoad  # noqa: F401,E402
from .stmt import Seq as SeqStmt, Store as BufferStore, Block as BlockRealize  # noqa: F401,E402
from . import tvmscript  # noqa: F401,E402  (PrimFunc.script and str(func) print TVMScript)
