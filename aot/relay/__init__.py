"""The graph-level Python layer, with TVM's relay names: a network built by hand (var, nn.conv2d,
Function, ...; expr.py, op.py, nn.py) becomes the same graph IR an ONNX model does (to_graph.py)
and builds through the same pipeline (build, build_module.py); frontend.from_onnx / from_tflite
import a model file; dataflow patterns (used by partitioning and plug-in backends) match on that
graph IR with TVM's op names (ops_table.py)."""
from . import analysis, backend, build_module, frontend, ir_pass, nn, op, testing, transform  # noqa: F401
from .backend import Executor, Runtime  # noqa: F401
from .build_module import create_executor  # noqa: F401
from .parser import fromtext  # noqa: F401
from .param_dict import load_param_dict, save_param_dict  # noqa: F401
from .expr_functor import ExprMutator, ExprVisitor  # noqa: F401
from .expr import (Any, Call, Constant, Expr, FuncType, Function, GlobalVar, IRModule, TensorType, Tuple,  # noqa: F401
                   TupleGetItem, TupleType, TupleWrapper, Var, const, var)
from .op import (abs, add, argmax, argmin, cast, ceil, clip, concatenate, cos, divide, equal, erf,  # noqa: F401
                 exp, expand_dims, fixed_point_multiply, floor, full, full_like, greater, greater_equal, layout_transform, less,
                 less_equal, log,
                 logical_and, logical_not, logical_or, logical_xor, max, maximum, mean, min, minimum,
                 multiply, negative, not_equal, ones, ones_like, power, prod, reshape, reshape_like, round,
                 rsqrt, sigmoid, sin, split, sqrt, squeeze, stack, strided_slice, subtract, sum, take, tanh, tile,
                 transpose, where, zeros, zeros_like)


def build(ir_mod, target=None, target_host=None, executor=None, runtime=None, workspace_memory_pools=None,
          constant_memory_pools=None, params=None, mod_name="default", **options):
    """relay.build(mod, target, params=params, executor=Executor("aot"), runtime=Runtime("crt"))
    -> the executor factory module (lib["default"](dev), get_source, export_library); see
    build_module.py."""
    return build_module.build(ir_mod, target, target_host, executor, runtime, workspace_memory_pools,
                              constant_memory_pools, params, mod_name, **options)


def __getattr__(name):
    from .expr import missing
    raise missing("relay", name, "name")
