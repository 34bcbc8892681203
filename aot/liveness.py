"""When each tensor occupies workspace memory: the one liveness model that the execution
order search (aot/passes/order.py) optimises and the memory plan (aot/executor/memory.py) plans.

A tensor's bytes belong to its alias root (a reshape's output is its input's storage).
Constants are linked arrays and take no workspace; graph inputs and outputs are the
caller's buffers unless they live in the workspace (use_workspace_io)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .ops.registry import alias_root


@dataclass
class Lifetime:
    value: object               # the root Value owning the bytes
    nbytes: int                 # workspace bytes it takes (0: caller-owned I/O)
    producer: int               # the kernel writing it; -1 when it exists before the run
    consumers: list = field(default_factory=list)    # the kernels reading it, in order
    persistent: bool = False    # kept to the end of the run (an output inside the workspace)

    def interval(self, n_kernels: int) -> tuple:
        """(first, last) kernel steps during which its bytes are in use."""
        first = max(self.producer, 0)
        last = n_kernels - 1 if self.persistent else max([first] + self.consumers)
        return first, last


def lifetimes(graph, kernels, workspace_io=False) -> dict:
    """{id(root value): Lifetime} for every non-constant tensor the kernels read or write
    (and, with workspace_io, every graph input), in first-use order."""
    in_ids = {id(v) for v in graph.inputs}
    out_ids = {id(alias_root(v)) for v in graph.outputs}
    producer = {id(o): k for k, g in enumerate(kernels) for o in g.outputs}
    lives = {}

    def life(r):
        key = id(r)
        if key not in lives:
            planned = workspace_io or (key not in in_ids and key not in out_ids)
            lives[key] = Lifetime(r, r.type.nbytes if planned else 0, producer.get(key, -1),
                                  persistent=workspace_io and key in out_ids)
        return lives[key]

    for k, g in enumerate(kernels):
        for v in g.inputs:
            if v is None:
                continue
            r = alias_root(v)
            if not r.is_const:
                life(r).consumers.append(k)
        for o in g.outputs:
            life(alias_root(o))
    if workspace_io:
        for v in graph.inputs:
            life(v)
    return lives
