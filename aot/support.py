"""tvm.support's FrontendTestModule: a module whose member functions are Python callables (TVM's
tests build one to stand for a module that has no C: export_model_library_format refuses it)."""
from __future__ import annotations

from .errors import AotError


class FrontendTestModule:
    """mod.add_function(name, f) or mod[name] = f; mod[name] / mod.get_function(name) returns f;
    calling the module calls its entry function (entry_name)."""

    type_key = "ffi_testing"        # TVM's key for this module kind, which its errors name

    def __init__(self, entry_name=None):
        self.functions = {}
        self.entry_name = entry_name

    def add_function(self, name, func):
        if not callable(func):
            raise AotError(f"FrontendTestModule.add_function: '{name}' is a {type(func).__name__}, not a function")
        self.functions[name] = func

    def __setitem__(self, key, value):
        self.add_function(key, value)

    def get_function(self, name, query_imports=False):
        if name not in self.functions:
            raise AotError(f"the module has no function '{name}' (its functions: {', '.join(self.functions) or 'none'})")
        return self.functions[name]

    def __getitem__(self, name):
        return self.get_function(name)

    def __call__(self, *args):
        if self.entry_name is None:
            raise AotError("the module has no entry function: give FrontendTestModule(entry_name=...)")
        return self.get_function(self.entry_name)(*args)
