"""relay.build: a relay module through the same pipeline as an ONNX model (graph passes, fusion,
lowering, schedules, the AOT executor, MLF). This is a driver, like aot/compiler.py, not an IR
layer: it is the one relay module that reaches the code generators."""
from __future__ import annotations

from ..compiler import Options, compile_model
from .to_graph import to_graph


class ExecutorFactoryModule:
    """What relay.build returns: the compiled MLF (.tar, .result), `lib["default"](dev)` for the
    graph-executor-style runner (aot.contrib.graph_executor), export_library for the MLF."""

    def __init__(self, result, target, mod_name):
        self.result, self.target, self.module_name = result, target, mod_name

    @property
    def tar(self):
        return self.result.tar

    def __getitem__(self, name):
        if name != self.module_name:
            raise KeyError(f"the module is named '{self.module_name}', not '{name}'")
        from ..contrib.graph_executor import GraphRuntime
        return lambda dev=None: GraphRuntime(self, dev)

    def get_source(self):
        """The generated C (or CUDA/OpenCL host and device) sources, concatenated."""
        return source_text(self.result.tar)

    def export_library(self, path):
        """The Model Library Format tarball (what firmware builds against)."""
        self.result.save(path)


def build(ir_mod, target="c", target_host=None, params=None, mod_name="default", **options):
    """TVM's relay.build(mod, target, params=params); options are aot.compile's (use_workspace_io,
    workspace_pools, ...)."""
    graph, _ = to_graph(ir_mod, params, name=mod_name)
    res = compile_model(graph, Options(model_name=mod_name, target=str(target), **options))
    return ExecutorFactoryModule(res, str(target), mod_name)


def source_text(tar):
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        names = sorted(m.name for m in t.getmembers() if m.isfile() and m.name.startswith("./codegen/")
                       and m.name.endswith((".c", ".cu", ".cl", ".h")))
        return "\n".join(f"// {n}\n" + t.extractfile(n).read().decode() for n in names)
