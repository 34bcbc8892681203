"""tvm.ir.IRModule: a module of TIR functions (PrimFuncs) by global name, as TVM's tutorials make
and print it (`IRModule({"main": func})`, `mod["main"]`, `mod.script()`, `print(mod)`).

The graph IR (aot/ir/graph.py) is the compiler's; relay's IRModule (aot/relay/expr.py) holds relay
functions. This one holds the loop IR's PrimFuncs, which print as TVMScript
(aot/tir/tvmscript.py) and build with aot.build.
"""
from __future__ import annotations

from ..errors import AotError


# TVM has one IRModule for relay and TIR (tvm.ir.module.IRModule): relay functions given to this one
# go to relay's, which aot.relay registers here when it is imported (the IR layers cannot import it):
# [relay's IRModule class, relay's expression base class]
RELAY_MODULE = []


def _relay_module(functions):
    """relay's IRModule class when a function given is a relay expression, else None."""
    if RELAY_MODULE and any(isinstance(f, RELAY_MODULE[1]) for f in dict(functions or {}).values()):
        return RELAY_MODULE[0]
    return None


class IRModule:
    def __new__(cls, functions=None, type_definitions=None, attrs=None):
        relay_module = _relay_module(functions)
        if relay_module is not None:
            return relay_module(functions)
        return super().__new__(cls)

    def __init__(self, functions=None, type_definitions=None, attrs=None):
        from ..tir.stmt import PrimFunc
        self.functions = {}
        for k, f in dict(functions or {}).items():
            name = getattr(k, "name_hint", k)
            if not isinstance(f, PrimFunc):
                raise AotError(f"IRModule: function {name!r} is a {type(f).__name__}; this module holds TIR "
                               "functions (relay functions go in aot.relay's IRModule)")
            self.functions[str(name)] = f
        self.attrs = dict(attrs or {})

    @staticmethod
    def from_expr(func):
        relay_module = _relay_module({"main": func})
        if relay_module is not None:
            return relay_module.from_expr(func)
        return IRModule({"main": func})

    def __getitem__(self, name):
        name = getattr(name, "name_hint", name)
        if name not in self.functions:
            raise AotError(f"the module has no function '{name}' (it has {', '.join(self.functions) or 'none'})")
        return self.functions[name]

    def __setitem__(self, name, func):
        self.functions[getattr(name, "name_hint", name)] = func

    def __contains__(self, name):
        return getattr(name, "name_hint", name) in self.functions

    def __iter__(self):
        return iter(self.functions.items())

    def __len__(self):
        return len(self.functions)

    def update_func(self, name, func):
        self[name] = func

    def get_global_vars(self):
        return [GlobalVar(k) for k in self.functions]

    def get_global_var(self, name):
        if name not in self.functions:
            raise AotError(f"the module has no function '{name}'")
        return GlobalVar(name)

    def with_attr(self, key, value):
        out = IRModule(self.functions, attrs=dict(self.attrs, **{key: value}))
        return out

    def script(self, **kwargs):
        from ..tir.tvmscript import module_script
        return module_script(self.functions)

    def show(self, **kwargs):
        print(self.script(**kwargs))

    def astext(self, **kwargs):
        return self.script(**kwargs)

    def __str__(self):
        return self.script()

    def __repr__(self):
        return self.script()


class GlobalVar:
    """A function's global name in a module (TVM's GlobalVar: .name_hint)."""

    def __init__(self, name_hint):
        self.name_hint = name_hint

    def __repr__(self):
        return f"I.GlobalVar(\"{self.name_hint}\")"

    def __eq__(self, other):
        return isinstance(other, GlobalVar) and other.name_hint == self.name_hint

    def __hash__(self):
        return hash(("GlobalVar", self.name_hint))


class DictAttrs(dict):
    """TVM's DictAttrs: a function's attributes by name (relay.Function(..., attrs=)), e.g.
    output_tensor_names, which name main's outputs in the MLF and the header."""


def make_node(type_key, **fields):
    """TVM's tvm.ir.make_node, for the node the tests and frontends build by name: DictAttrs."""
    if type_key != "DictAttrs":
        raise AotError(f"make_node: node type '{type_key}' is not supported (DictAttrs is)")
    return DictAttrs(fields)
