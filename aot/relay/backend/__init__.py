"""tvm.relay.backend's Executor and Runtime: which executor and runtime relay.build targets, with
TVM's attribute names. Every build here makes the same AOT executor and C runtime interface; an
attribute changes the build where this compiler has the matching option (build_module.py reads
them), and an attribute TVM does not define for that executor or runtime is refused by name."""
from __future__ import annotations

from ...errors import AotError

# name -> {attribute: type}, as TVM registers them
_EXECUTORS = {
    "aot": {"link-params": bool, "unpacked-api": bool, "interface-api": str, "workspace-byte-alignment": int,
            "constant-byte-alignment": int},
    "graph": {"link-params": bool},
}
_RUNTIMES = {"crt": {"system-lib": bool}, "cpp": {"system-lib": bool}}
_INTERFACE_APIS = ("packed", "c")


def _checked(what, name, attrs, table):
    if name not in table:
        raise AotError(f"{what} '{name}' is not available (one of {', '.join(sorted(table))})")
    attrs = dict(attrs or {})
    kinds = table[name]
    for k, v in attrs.items():
        if k not in kinds:
            raise AotError(f"{what} '{name}' has no attribute '{k}' (its attributes: {', '.join(sorted(kinds))})")
        t = kinds[k]
        if t is bool and isinstance(v, int) or t is int and isinstance(v, int) and not isinstance(v, bool):
            attrs[k] = t(v)
        elif not isinstance(v, t):
            raise AotError(f"{what} '{name}': attribute '{k}' takes a {t.__name__}, not {v!r}")
    return attrs


class Executor:
    """Executor("graph") (relay.build's default) or Executor("aot", {"interface-api": "c",
    "unpacked-api": True, "workspace-byte-alignment": 16, ...})."""

    def __init__(self, name="graph", options=None):
        self.name = str(name)
        self.attrs = _checked("executor", self.name, options, _EXECUTORS)
        if self.name == "aot":
            api = self.attrs.get("interface-api", "packed")
            if api not in _INTERFACE_APIS:
                raise AotError(f"executor 'aot': interface-api '{api}' is not one of {', '.join(_INTERFACE_APIS)}")
            if api == "c" and self.attrs.get("unpacked-api") is False:
                raise AotError("executor 'aot': interface-api 'c' needs unpacked-api (the C interface passes "
                               "tensors as plain pointers)")
            for k in ("workspace-byte-alignment", "constant-byte-alignment"):
                n = self.attrs.get(k)
                if n is not None and (n <= 0 or n & (n - 1)):
                    raise AotError(f"executor 'aot': {k} {n} is not a power of two")

    def __getitem__(self, key):
        return self.attrs[key]

    def get(self, key, default=None):
        return self.attrs.get(key, default)

    def __eq__(self, other):
        return isinstance(other, Executor) and (self.name, self.attrs) == (other.name, other.attrs)

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"Executor({self.name!r}, {self.attrs})" if self.attrs else f"Executor({self.name!r})"

    @staticmethod
    def list_registered():
        return sorted(_EXECUTORS)

    @staticmethod
    def list_registered_options(executor):
        if executor not in _EXECUTORS:
            raise AotError(f"executor '{executor}' is not available (one of {', '.join(sorted(_EXECUTORS))})")
        return {k: t.__name__ for k, t in _EXECUTORS[executor].items()}


class Runtime:
    """Runtime("cpp") (relay.build's default) or Runtime("crt", {"system-lib": True}): both name the
    same C runtime interface here; the attribute is recorded."""

    def __init__(self, name="cpp", options=None):
        self.name = str(name)
        self.attrs = _checked("runtime", self.name, options, _RUNTIMES)

    def __getitem__(self, key):
        return self.attrs[key]

    def get(self, key, default=None):
        return self.attrs.get(key, default)

    def __eq__(self, other):
        return isinstance(other, Runtime) and (self.name, self.attrs) == (other.name, other.attrs)

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"Runtime({self.name!r}, {self.attrs})" if self.attrs else f"Runtime({self.name!r})"

    @staticmethod
    def list_registered():
        return sorted(_RUNTIMES)

    @staticmethod
    def list_registered_options(runtime):
        if runtime not in _RUNTIMES:
            raise AotError(f"runtime '{runtime}' is not available (one of {', '.join(sorted(_RUNTIMES))})")
        return {k: t.__name__ for k, t in _RUNTIMES[runtime].items()}
