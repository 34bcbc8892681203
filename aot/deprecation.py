"""Older TVM spellings kept as aliases (TVM 0.6's graph_runtime, relay.ir_pass, tvm.context, ...):
each warns once per process, naming today's spelling, so that old code runs and says what to
change without repeating itself on every call."""
from __future__ import annotations

import warnings

_warned = set()


def warn_once(key, message, stacklevel=2):
    """A DeprecationWarning the first time `key` is used; stacklevel as warnings.warn's, counted
    from the caller of warn_once."""
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel + 1)


def alias(key, func, message):
    """func, warning once (under key) when called."""
    def wrapper(*args, **kwargs):
        warn_once(key, message, stacklevel=2)
        return func(*args, **kwargs)
    wrapper.__name__ = getattr(func, "__name__", key)
    wrapper.__doc__ = f"Deprecated: {message}"
    return wrapper
