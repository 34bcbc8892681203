"""relay.testing: create_workload, a network's parameters initialised as TVM's testing initialiser
does (seeded): Xavier-uniform weights, zero biases, betas and means, unit gammas and variances."""
from __future__ import annotations

import numpy as np

from .expr import IRModule
from .to_graph import main_function, to_graph


def _init(name, shape, dtype, rng):
    if name.endswith(("bias", "beta", "mean")):
        return np.zeros(shape, dtype)
    if name.endswith(("gamma", "var")):
        return np.ones(shape, dtype)
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
    fan_out = int(shape[0]) * (int(np.prod(shape[2:])) if len(shape) > 2 else 1)
    bound = np.sqrt(6.0 / max(fan_in + fan_out, 1))           # Xavier, uniform
    return rng.uniform(-bound, bound, shape).astype(dtype)


def create_workload(net, initializer=None, seed=0):
    """(IRModule, params): every free variable but "data" gets a value of the shape the network
    gives it. initializer(name, shape, dtype) -> array replaces the default."""
    func = main_function(net)
    _, types = to_graph(func)
    rng = np.random.default_rng(seed)
    params = {}
    for p in func.params:
        if p.name_hint == "data":
            continue
        t = types[p.name_hint]
        params[p.name_hint] = (initializer(p.name_hint, t.shape, t.dtype) if initializer
                               else _init(p.name_hint, t.shape, t.dtype, rng))
    return IRModule.from_expr(func), params
