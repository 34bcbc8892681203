"""aot.te: tensor expressions (tensor.py; every op's compute definition is written with them) and,
with TVM's names, schedules over them (schedule.py: create_schedule, s[T].split/bind/...)."""
from .schedule import Schedule, Stage, create_schedule, lower_schedule, thread_axis  # noqa: F401
from .tensor import (IterVar, Reduce, Tensor, TensorRef, broadcast_index, combine, compute, identity,  # noqa: F401
                     max, min, placeholder, prod, reduce_axis, size_var, sum, var)
from ..tir.from_te import create_prim_func  # noqa: F401,E402
