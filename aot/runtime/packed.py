"""TVM's global function registry (tvm.register_func, tvm.get_global_func) and what a built host
module's tir.call_packed reaches: the C calls aot_packed_call(name, n, ptrs, vals, kinds), which
the in-process module (aot/module.py: PackedModule) routes here through a ctypes callback; the
function registered under that name gets aot.nd arrays viewing the module's own buffers (what it
writes into them is the result) and Python numbers for scalars."""
from __future__ import annotations

import re

import numpy as np

from ..errors import AotError

_REGISTRY = {}
_LAZY = {}          # name -> provider() -> the function or None: looked up at first use
VIEW = None         # aot.runtime sets it: NDArray over an array's own memory (this module never imports it back)


def register_func(func_name, f=None, override=False):
    """tvm.register_func("name", f) or as a decorator (@tvm.register_func("name"), or bare
    @tvm.register_func, which registers under the function's own name)."""
    if callable(func_name) and f is None:
        return register_func(func_name.__name__, func_name, override)
    if not isinstance(func_name, str):
        raise AotError(f"register_func: the name is a string, not {type(func_name).__name__}")

    def register(fn):
        if func_name in _REGISTRY and not override:
            raise AotError(f"register_func: '{func_name}' is already registered (override=True replaces it)")
        _LAZY.pop(func_name, None)
        _REGISTRY[func_name] = fn
        return fn
    return register(f) if f is not None else register


def register_lazy(func_name, provider):
    """Register `func_name` at its first lookup as what provider() returns, or not at all when
    that is None: a function backed by a system library (tvm.contrib.cblas) costs its search
    only when used, and is absent, as in a TVM built without it, where the library is."""
    _LAZY[func_name] = provider


def _resolve(name):
    provider = _LAZY.pop(name, None)
    if provider is not None and name not in _REGISTRY:
        fn = provider()
        if fn is not None:
            _REGISTRY[name] = fn
    return _REGISTRY.get(name)


def get_global_func(name, allow_missing=False):
    """The function registered under name; None (allow_missing) or a refusal when there is none."""
    f = _resolve(name)
    if f is None and not allow_missing:
        raise AotError(f"get_global_func: no function is registered as '{name}'")
    return f


def list_global_func_names():
    for name in list(_LAZY):
        _resolve(name)
    return sorted(_REGISTRY)


_KIND = re.compile(r"([a-z0-9_]+)\[([0-9,]*)\]$")


def call_from_c(name, n, ptrs, vals, kinds):
    """One tir.call_packed of a running module: the arguments as aot.nd arrays (buffers, viewing
    the module's memory) or numbers, then the registered function called with them."""
    import ctypes
    f = _resolve(name)
    if f is None:
        raise AotError(f"call_packed: no function is registered as '{name}' (aot.register_func)")
    args = []
    for k in range(n):
        kind = kinds[k].decode()
        m = _KIND.match(kind)
        if m:
            dtype = np.dtype(m.group(1))
            shape = tuple(int(x) for x in m.group(2).split(",") if x)
            count = int(np.prod(shape, dtype=np.int64))
            buf = (ctypes.c_byte * (count * dtype.itemsize)).from_address(ptrs[k])
            args.append(VIEW(np.frombuffer(buf, dtype=dtype).reshape(shape)))
        elif kind == "bool":
            args.append(bool(vals[k]))
        elif kind.startswith(("int", "uint")):
            args.append(int(vals[k]))
        else:
            args.append(float(vals[k]))
    r = f(*args)
    return 0 if r is None else int(r) if isinstance(r, (int, np.integer)) else 0
