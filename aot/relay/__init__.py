"""The graph-level Python layer, with TVM's relay names: a network built by hand (var, nn.conv2d,
Function, ...; expr.py, op.py, nn.py) becomes the same graph IR an ONNX model does (to_graph.py)
and builds through the same pipeline (build, build_module.py); dataflow patterns (used by
partitioning and plug-in backends) match on that graph IR."""
from . import analysis, nn, op, testing  # noqa: F401
from .expr import (Call, Constant, Function, IRModule, TensorType, Tuple, TupleGetItem,  # noqa: F401
                   TupleWrapper, Var, const, var)
from .op import (abs, add, ceil, clip, concatenate, cos, divide, equal, erf, exp, expand_dims,  # noqa: F401
                 floor, greater, less, log, max, maximum, mean, min, minimum, multiply, negative, power,
                 prod, reshape, round, sigmoid, sin, sqrt, squeeze, subtract, sum, tanh, transpose)


def build(ir_mod, target="c", target_host=None, params=None, mod_name="default", **options):
    """relay.build(mod, target, params=params) -> a factory module (lib["default"](dev), get_source,
    export_library); see build_module.py."""
    from .build_module import build as _build
    return _build(ir_mod, target, target_host, params, mod_name, **options)
