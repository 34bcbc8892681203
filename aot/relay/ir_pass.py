"""relay.ir_pass: TVM 0.6's home of the analyses and passes that today are relay.analysis and
relay.transform. Each name works and warns once, naming today's spelling."""
from __future__ import annotations

from ..deprecation import warn_once
from .expr import IRModule
from .expr import free_vars as today_free_vars
from .transform import InferType


def free_vars(expr):
    warn_once("relay.ir_pass.free_vars", "relay.ir_pass.free_vars is TVM 0.6's spelling: use "
              "relay.analysis.free_vars", stacklevel=2)
    return today_free_vars(expr)


def infer_type(expr, mod=None):
    """The expression (a Function, or an expression over its free variables) with its types
    inferred: InferType over a module of it, and its main back."""
    warn_once("relay.ir_pass.infer_type", "relay.ir_pass.infer_type is TVM 0.6's spelling: use "
              "relay.transform.InferType()(mod)", stacklevel=2)
    return InferType()(IRModule.from_expr(expr))["main"]
