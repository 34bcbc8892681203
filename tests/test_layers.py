"""Imports point one way (docs/architecture.md, "Layers"): the IR layers never reach codegen_c or mlf,
codegen_c and mlf use only the IR layers, and no module imports itself back through others. Every
import counts, function-level ones included: a lazy import is still a dependency."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("aot", "codegen_c", "mlf")
IR_LAYERS = ("aot.ir", "aot.tir", "aot.te", "aot.ops", "aot.passes", "aot.frontend", "aot.names", "aot.errors",
             "aot.dtypes", "aot.target", "aot.lower", "aot.schedules", "aot.liveness", "aot.executor",
             "aot.memory_plan", "aot.uma",
             # relay's builder and patterns; the package's build() and build_module.py are drivers, like aot.compiler
             "aot.relay.expr", "aot.relay.op", "aot.relay.nn", "aot.relay.analysis", "aot.relay.testing",
             "aot.relay.to_graph", "aot.relay.dataflow_pattern")


def _modules():
    """{module name: path} of every module of the three packages."""
    out = {}
    for pkg in PACKAGES:
        for d, _, files in os.walk(os.path.join(ROOT, pkg)):
            for f in files:
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(d, f), ROOT)[:-3].replace(os.sep, ".")
                    out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(d, f)
    return out


def import_graph():
    """{module: set of our modules it imports}. `from a import b` names module a.b where b is one,
    else module a."""
    mods = _modules()
    graph = {}
    for me, path in mods.items():
        pkg = me if path.endswith("__init__.py") else me.rpartition(".")[0]
        deps = set()
        with open(path) as f:
            tree = ast.parse(f.read())
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                deps.update(a.name for a in n.names)
            elif isinstance(n, ast.ImportFrom):
                if n.level:
                    parts = pkg.split(".")
                    base = ".".join(parts[:len(parts) - n.level + 1] + ([n.module] if n.module else []))
                else:
                    base = n.module
                for a in n.names:
                    deps.add(f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base)
        graph[me] = {d for d in deps if d in mods and d != me}
    return graph


def _in(mod, layers):
    return any(mod == x or mod.startswith(x + ".") for x in layers)


def _reach(graph, start):
    seen, todo = set(), [start]
    while todo:
        for d in graph[todo.pop()]:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def test_ir_layers_never_reach_codegen_or_mlf():
    graph = import_graph()
    bad = {m: sorted(d for d in _reach(graph, m) if _in(d, ("codegen_c", "mlf")))
           for m in graph if _in(m, IR_LAYERS)}
    assert not {m: d for m, d in bad.items() if d}


def test_codegen_and_mlf_use_only_the_ir_layers():
    graph = import_graph()
    bad = {m: sorted(d for d in deps if not _in(d, IR_LAYERS) and d.split(".")[0] != m.split(".")[0])
           for m, deps in graph.items() if _in(m, ("codegen_c", "mlf"))}
    assert not {m: d for m, d in bad.items() if d}


def test_no_import_cycles():
    """Strongly connected components of the module graph are single modules (a package's
    __init__ re-exporting its own submodules is not a cycle: submodules never import it back)."""
    graph = import_graph()
    cyclic = sorted(m for m in graph if m in _reach(graph, m))
    assert not cyclic


def test_the_graph_is_real():
    """The checks above see the imports that exist (so they can fail)."""
    graph = import_graph()
    assert "aot.tir.expr" in graph["codegen_c.c_renderer"]
    assert "aot.te.tensor" in graph["aot.ops.conv"]
    assert "codegen_c.emit" in graph["aot.compiler"]
