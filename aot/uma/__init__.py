"""Plug-in accelerators and kernel libraries (TVM's UMA names): see docs/uma.md.

    from aot.uma import UMABackend, call_extern
    from aot.relay.dataflow_pattern import is_op, wildcard, is_constant
"""
from .backend import BackendError, UMABackend, external_lowering, get_backend, partition_for, registered  # noqa: F401
from .lowering import Call, Tensor, call_extern  # noqa: F401
from .api.utils import uma_available  # noqa: F401,E402  (TVM's uma package exports it)
