"""Loop IR: typed buffers, loops, stores and expressions; printers live elsewhere."""
from .expr import *  # noqa: F401,F403
from .stmt import *  # noqa: F401,F403
from .op import *  # noqa: F401,F403,E402  (tvm.tir.if_then_else, all, any, exp, ...)
from .schedule_api import PrimModule, Schedule  # noqa: F401,E402
