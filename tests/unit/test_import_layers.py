"""Imports point one way (docs/architecture.md, "Layers"): the IR layers never reach codegen_c or mlf,
codegen_c and mlf use only the IR layers, and no module imports itself back through others. Every
import counts, function-level ones included: a lazy import is still a dependency."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("aot", "codegen_c", "mlf")
# the layers, lowest first: a module imports only modules of its own layer or lower ones. A module
# prefix names a package and everything in it; "aot" alone is the package's __init__.
TIERS = (
    ("core", ("aot.errors", "aot.dtypes", "aot.names", "aot.target", "aot.targets", "aot.ir", "aot.tir", "aot.te",
              "aot.ops", "aot.passes", "aot.frontend", "aot.schedules", "aot.topi", "aot.liveness", "aot.executor",
              "aot.memory_plan", "aot.uma", "aot.deprecation")),
    ("printers", ("codegen_c", "mlf")),
    ("driver", ("aot.compiler", "aot.patch_search", "aot.cli", "aot.host", "aot.firmware", "aot.stack_bound", "aot.project", "aot.debug", "aot.backend", "aot.source_check",
                "aot.conformance", "aot.memory_report", "aot.cycles", "aot.__main__")),
    # TVM's Python API over the driver: relay (its build calls aot.compiler.compile_model), the
    # graph executor, aot.build's modules, TVMScript, and the package's own names
    ("api", ("aot.relay", "aot.contrib", "aot.module", "aot.runtime", "aot.script", "aot.testing", "aot.micro",
             "aot.transform", "aot.instrument", "aot.refused", "aot.support", "aot")),
)
IR_LAYERS = TIERS[0][1]


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


def tier_of(mod):
    """The index in TIERS of the layer a module belongs to (its longest matching prefix), or None."""
    best = None
    for k, (_, prefixes) in enumerate(TIERS):
        for p in prefixes:
            hit = mod == p if p == "aot" else (mod == p or mod.startswith(p + "."))
            if hit and (best is None or len(p) > best[1]):
                best = (k, len(p))
    return best[0] if best else None


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


def test_every_module_has_a_layer():
    assert not sorted(m for m in import_graph() if tier_of(m) is None)


def test_no_module_imports_a_higher_layer():
    """No exceptions: relay.build reaches the driver because relay sits above it."""
    graph = import_graph()
    up = sorted(f"{m} ({TIERS[tier_of(m)][0]}) -> {d} ({TIERS[tier_of(d)][0]})"
                for m, deps in graph.items() for d in deps if tier_of(d) > tier_of(m))
    assert not up


def test_the_pattern_language_and_lowering_sit_in_the_core():
    graph = import_graph()
    assert "aot.ir.pattern" in graph["aot.passes.partition"]
    assert "aot.te.lower" in graph["aot.executor.lowering"]
    assert tier_of("aot.relay.dataflow_pattern") == 3 and tier_of("aot.ir.pattern") == 0


def private_imports():
    """(module, name) for each underscored name one of our modules imports from another."""
    mods = _modules()
    out = []
    for me, path in sorted(mods.items()):
        with open(path) as f:
            tree = ast.parse(f.read())
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").split(".")[0] in PACKAGES):
                out += [(me, a.name) for a in n.names if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_no_private_name_crosses_a_module():
    """What one module takes from another is public: a leading underscore means 'this module only'."""
    assert not private_imports()
