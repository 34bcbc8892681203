"""tvm.relay.op.contrib.cmsisnn: TVM's CMSIS-NN partitioner over aot's "cmsis-nn" partition
target (aot/targets/cmsis_nn.py). partition_for_cmsisnn marks the module; relay.build then hands
the int8 operators CMSIS-NN covers to that target, whatever code-generation target it is given,
as TVM's partitioned functions go to its CMSIS-NN codegen (the target's -mcpu, if any, is the
core the kernels are scheduled for)."""
from __future__ import annotations

from ..errors import AotError

KIND = "cmsis-nn"


def partition_for_cmsisnn(mod, params=None, mod_name="default", **opts):
    """The module, marked for the cmsis-nn partition (a copy: the argument is left as it was).
    params are bound by relay.build (params=...), as in TVM's flow; opts are TVM's
    PassContext options of the partitioner, which this one has none of."""
    del params, mod_name
    if opts:
        raise AotError(f"partition_for_cmsisnn: options {', '.join(sorted(opts))} are not supported (it takes none)")
    functions = getattr(mod, "functions", None)
    if not isinstance(functions, dict) or "main" not in {getattr(k, "name_hint", k) for k in functions}:
        raise AotError(f"partition_for_cmsisnn takes an IRModule with a main function, not {type(mod).__name__}")
    out = type(mod)(dict(functions))
    done = tuple(getattr(mod, "partitioned_for", ()))
    out.partitioned_for = done if KIND in done else done + (KIND,)
    return out
