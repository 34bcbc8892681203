"""Parameter initialisers, as TVM's relay.testing.init: a parameter's name says how it starts
(by its ending: weight, bias, gamma, beta, mean, var); weights are Xavier-initialised from
numpy's global random state, which create_workload seeds, so that a workload and the random
data drawn right after it are the same on every run, as a TVM user expects."""
from __future__ import annotations

import numpy as np

from ...errors import AotError
from ..expr import IRModule
from ..to_graph import main_function, to_graph


class Initializer:
    """initializer(name, arr) fills the numpy array arr in place."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def __call__(self, desc, arr):
        for ending, fill in (("weight", self._init_weight), ("bias", self._init_bias), ("gamma", self._init_gamma),
                             ("beta", self._init_beta), ("mean", self._init_mean), ("var", self._init_var)):
            if desc.endswith(ending):
                fill(desc, arr)
                return
        self._init_default(desc, arr)

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_mean(self, _, arr):
        arr[:] = 0.0

    def _init_var(self, _, arr):
        arr[:] = 1.0

    def _init_weight(self, name, arr):
        raise AotError(f"{type(self).__name__} does not initialise weights ('{name}')")

    def _init_default(self, name, _):
        raise AotError(f"no initialisation for parameter '{name}': a name ending in weight, bias, gamma, beta, "
                       "mean or var says how a parameter starts")


class Xavier(Initializer):
    """Uniform in [-s, s], s = sqrt(magnitude / factor), the factor from the fans in and out
    (the receptive field counts in both): their mean ("avg"), or one of them ("in", "out")."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type != "uniform":
            raise AotError(f"Xavier: rnd_type '{rnd_type}' is not supported (uniform)")
        if factor_type not in ("avg", "in", "out"):
            raise AotError(f"Xavier: factor_type '{factor_type}' is not one of avg, in, out")
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise AotError(f"Xavier: weight '{name}' has shape {list(shape)}; it needs at least 2 dimensions")
        field = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * field, shape[0] * field
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        if "depthwise" in name:      # one input channel per filter: only the window connects
            factor = field
        scale = np.sqrt(self.magnitude / factor)
        arr[:] = np.random.uniform(-scale, scale, size=shape)


class Constant(Initializer):
    """Every weight element 1/size (a weight sums to 1)."""

    def _init_weight(self, name, arr):
        arr[:] = 1.0 / arr.size


def create_workload(net, initializer=None, seed=0):
    """(IRModule, params) of a relay Function, the module typed (relay.transform.InferType): every
    parameter but "data" gets an array of the type the network gives it, filled by
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
    from ..transform import InferType
    return InferType()(IRModule.from_expr(func)), params      # typed, as TVM's

