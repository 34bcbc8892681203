"""aot.script: TensorIR-style scripts with TVM's TVMScript names.

    from aot.script import tir as T

    @aot.script.ir_module
    class MyModule:
        @T.prim_func
        def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
            for i in range(8):
                with T.block("B"):
                    vi = T.axis.spatial(8, i)
                    B[vi] = A[vi] + 1.0

The decorators read the function's source (aot/tir/script.py); the body never runs. The T
names below are markers the parser recognises (T.Buffer and T.handle also serve as annotations).
"""
from __future__ import annotations

import inspect

from .ir.module import IRModule as PrimModule
from .tir.script import ScriptError, source_of, parse, parse_module


def _env(fn):
    env = dict(getattr(fn, "__globals__", {}))
    try:
        env.update(inspect.getclosurevars(fn).nonlocals)
    except (TypeError, ValueError):
        pass
    return env


class _Namespace:
    """T: the script's vocabulary. Only prim_func and the annotations run in Python."""

    handle = "handle"

    @staticmethod
    def Buffer(shape, dtype="float32", **kw):
        return ("Buffer", shape, dtype)

    @staticmethod
    def prim_func(fn=None, private=False, check_well_formed=True):
        """@T.prim_func, or @T.prim_func(private=True)."""
        if fn is None:
            return lambda f: _Namespace.prim_func(f, private, check_well_formed)
        return parse(source_of(fn), _env(fn), where=f"{fn.__module__}.{fn.__qualname__}")

    def __getattr__(self, name):
        raise ScriptError(f"T.{name} is script syntax: it is read by @T.prim_func, not run")


tir = _Namespace()


class _IrNamespace:
    """I: `@I.ir_module` as TVM prints a module."""

    @staticmethod
    def ir_module(cls):
        return ir_module(cls)

    def __getattr__(self, name):
        raise ScriptError(f"I.{name} is not supported (I.ir_module is)")


ir = _IrNamespace()


def ir_module(cls):
    """A PrimModule of the class's @T.prim_func methods (parsed from the class's source, so that
    the methods' names and module-level constants resolve)."""
    if not inspect.isclass(cls):
        raise ScriptError("@aot.script.ir_module decorates a class")
    from .tir.stmt import PrimFunc
    funcs = {k: v for k, v in vars(cls).items() if isinstance(v, PrimFunc)}
    if not funcs:
        funcs = parse_module(source_of(cls), dict(getattr(inspect.getmodule(cls), "__dict__", {})),
                             where=cls.__qualname__)
    return PrimModule(funcs)


def from_source(text, env=None):
    """A PrimModule from script text (what PrimModule.script() prints)."""
    import ast
    tree = ast.parse(text)
    funcs = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            f = parse(ast.get_source_segment(text, node), env)
            funcs[f.name] = f
        elif isinstance(node, ast.ClassDef):
            funcs.update(parse_module(ast.get_source_segment(text, node), env).items())
    return PrimModule(funcs)
