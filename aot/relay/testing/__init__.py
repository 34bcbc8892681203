"""relay.testing: create_workload, a network's parameters initialised as TVM's testing helper
does (init.py), for networks written by hand with relay."""
from __future__ import annotations

import numpy as np

from ..expr import IRModule
from ..to_graph import main_function, to_graph
from . import init  # noqa: F401
from .init import Constant, Initializer, Xavier  # noqa: F401


def create_workload(net, initializer=None, seed=0):
    """(IRModule, params) of a relay Function: every parameter but "data" gets an array of the
    type the network gives it (types are inferred, as relay.transform.InferType does), filled by
    `initializer(name, array)` (Xavier by default) after numpy's global random state is seeded
    with `seed`."""
    func = main_function(net)
    _, types = to_graph(func)
    np.random.seed(seed)
    initializer = initializer if initializer is not None else Xavier()
    params = {}
    from ...runtime import NDArray
    for p in func.params:
        if p.name_hint == "data":
            continue
        t = types[p.name_hint]
        arr = np.zeros(t.shape, t.dtype)
        initializer(p.name_hint, arr)
        params[p.name_hint] = NDArray(arr)
    return IRModule.from_expr(func), params
