"""The AOT executor: fused groups -> kernels called in order, with a static memory plan.

kernels.py: the kernel protocol (what one step runs) and the plan; lowering.py: one group's
kernel; inplace/: the strategies that let a kernel write over an input; memory.py: intervals,
the alias relation and the pools; plan.py: build_plan, those steps in order."""
from .kernels import Arg, DeviceLaunch, ExecutorPlan, ExternalCall, ExternalKernel, ExternCall, GeneratedKernel
from .plan import PlanOptions, build_plan, debug_table

__all__ = ["Arg", "DeviceLaunch", "ExecutorPlan", "ExternalCall", "ExternalKernel", "ExternCall", "GeneratedKernel",
           "PlanOptions", "build_plan", "debug_table"]
