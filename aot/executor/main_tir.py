"""The executor's main as TIR (TVM's lowered __tvm_main__): one checked call per step, in the
order the C main makes them, each argument what the C passes. It is a view of the plan, for
tools that read the lowered module (relay.build's lowered_ir_mods); the C main is printed from
the plan itself (codegen_c), not from this."""
from __future__ import annotations

import numpy as np

from ..tir.op import CheckReturn, ExternCall
from ..tir.stmt import AccessPtr, Buffer, Evaluate, PrimFunc, Seq

MAIN = "__tvm_main__"


def main_prim_func(plan) -> PrimFunc:
    """PrimFunc __tvm_main__(inputs..., outputs...): each step's call wrapped in
    tvm_check_return(0, -1, ...): a step that does not return 0 makes main return -1."""
    io = {(kind, k): Buffer(f"{c}_buffer_var", t.dtype, t.shape)
          for kind, lst in (("input", plan.inputs), ("output", plan.outputs)) for k, (c, _, t) in enumerate(lst)}
    consts = [Buffer(name, str(a.dtype), a.shape) for name, a in plan.constants]
    pools = {}

    def pool(p):
        if p not in pools:
            name = f"workspace_{p}" if p else "workspace"
            size = plan.pools[p]["size"] if plan.pools else plan.workspace_size
            pools[p] = Buffer(name, "uint8", (max(int(size), 1),))
        return pools[p]

    def arg(a):
        if a.kind in ("input", "output"):
            return io[(a.kind, a.index)].data
        if a.kind == "const":
            return consts[a.index].data
        return AccessPtr(pool(a.pool).data, a.offset, "rw", a.size * np.dtype(a.dtype).itemsize)

    steps = []
    for c in plan.calls:
        args = [arg(a) for a in c.args] + [int(x) for x in getattr(c, "literals", ())]
        steps.append(Evaluate(CheckReturn(0, -1, ExternCall("int32", c.symbol, args))))
    body = steps[0] if len(steps) == 1 else Seq(steps)
    params = [io[("input", k)] for k in range(len(plan.inputs))] + \
        [io[("output", k)] for k in range(len(plan.outputs))]
    return PrimFunc(MAIN, params, body, len(plan.inputs), {"global_symbol": f"tvmgen_{plan.model_name}_{MAIN}"})
