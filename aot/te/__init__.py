"""aot.te: tensor expressions (tensor.py; every op's compute definition is written with them) and,
with TVM's names, schedules over them (schedule.py: create_schedule, s[T].split/bind/...;
schedule_lower.py: a schedule as one loop-IR PrimFunc, lower_schedule)."""
from .schedule import Schedule, Stage, create_schedule, thread_axis  # noqa: F401
from .schedule_lower import lower_schedule  # noqa: F401
from .tensor import (CommReducer, ExternOp, IterVar, Range, Reduce, Tensor, TensorIntrin, TensorRef,  # noqa: F401
                     broadcast_index, combine, comm_reducer, decl_tensor_intrin, extern, identity, max, max_value,
                     min, min_value, placeholder, prod, reduce_axis, scan, size_var, sum, var)
from .tensor import tvm_compute as compute  # noqa: F401
from ..tir.op import ceil, erf, exp, floor, if_then_else, log, sigmoid, sqrt, tanh  # noqa: F401,E402
from ..tir.expr import const, floordiv, floormod, indexdiv, indexmod  # noqa: F401,E402
from ..tir.from_te import create_prim_func  # noqa: F401,E402
