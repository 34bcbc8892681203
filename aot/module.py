"""aot.build / aot.runtime.load_module: a user's scheduled tensor expressions (aot.te) as a module
called on arrays, with TVM's call shapes (fadd(a, b, c), get_source, imported_modules,
export_library). The kernel becomes one PrimFuncCall node and goes through the same executor,
renderers and MLF as a model's kernels; the module runs it with the host compiler, nvcc or the
OpenCL platform (aot.run), and saves as that MLF."""
from __future__ import annotations

import io
import tarfile

import numpy as np

from .errors import AotError
from .ir.graph import Graph, Node, TensorType, Value


def build(inputs, args=None, target="c", target_host=None, name="default_function"):
    """aot.build(s, [A, B, C], target="c" | "cuda" | "opencl", name="myadd"): args are the
    placeholders, then the computed tensors, as the kernel takes them. Also a TensorIR module
    (@aot.script.ir_module), one of its functions, or an aot.tir.Schedule (its .mod)."""
    from .te.schedule import Schedule
    from .tir.schedule_api import PrimModule, Schedule as TirSchedule
    from .tir.stmt import PrimFunc
    if isinstance(inputs, TirSchedule):
        inputs = inputs.mod
    if isinstance(inputs, PrimModule):
        if len(inputs.functions) != 1:
            raise AotError(f"aot.build: the module has {len(inputs.functions)} functions; build one "
                           f"(mod['name']): {', '.join(inputs.functions)}")
        inputs = next(iter(inputs.functions.values()))
    if isinstance(inputs, PrimFunc):
        return _build_func(inputs, target, name if name != "default_function" else inputs.name)
    if not isinstance(inputs, Schedule):
        raise AotError(f"aot.build takes a te schedule, a TensorIR module or schedule, not {type(inputs).__name__}")
    sch = inputs
    args = list(args if args is not None else sch.inputs + sch.outputs)
    n_in = sum(1 for t in args if t.is_placeholder)
    if [t.is_placeholder for t in args] != [True] * n_in + [False] * (len(args) - n_in):
        raise AotError("aot.build: list the placeholders first, then the computed tensors")
    missing = [t.name for t in sch.inputs + sch.outputs if not any(t is a for a in args)]
    if missing:
        raise AotError(f"aot.build: args leave out {', '.join(missing)}, which the schedule reads or computes")
    names = [t.name for t in args]
    if len(set(names)) != len(names):
        raise AotError(f"aot.build: two tensors are named alike ({', '.join(names)}): names become the interface")
    func = sch.func.with_body(sch.func.body, params=[sch.buffer_of(t) for t in args])
    func.num_inputs = n_in
    return _build_func(func, target, name)


def _build_func(func, target, name):
    """One PrimFunc (params: inputs, then outputs) as a module."""
    from .compiler import Options, compile_model
    from .names import sanitize
    ins = [Value(b.name, TensorType(b.shape, b.dtype)) for b in func.inputs]
    outs = [Value(b.name, TensorType(b.shape, b.dtype)) for b in func.outputs]
    node = Node("PrimFuncCall", name, ins, outs, {"prim_func": func})
    graph = Graph(name, ins, outs, [node], 18)
    res = compile_model(graph, Options(model_name=sanitize(name) or "default", target=str(target)))
    return Module(res.tar)


def _members(tar):
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name.lstrip("./"): t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


class _DeviceModule:
    def __init__(self, text, kind):
        self.text, self.type_key = text, kind

    def get_source(self, fmt=""):
        return self.text


class Module:
    """Call it with the inputs then the outputs (numpy arrays or aot.nd arrays): the outputs are
    written in place, as a TVM module writes them."""

    def __init__(self, tar):
        self.tar = bytes(tar)
        from mlf import read_mlf
        files = _members(self.tar)
        info = read_mlf(self.tar).aot
        self.inputs = [(t["name"], tuple(t["shape"]), t["dtype"]) for t in info["inputs"]]
        self.outputs = [(t["name"], tuple(t["shape"]), t["dtype"]) for t in info["outputs"]]
        self.host_source = "\n".join(files[k].decode() for k in sorted(files)
                                     if k.startswith("codegen/host/src/") and k.endswith(".c"))
        dev = {k: v for k, v in files.items() if k.endswith((".cu", ".cl"))}
        self.imported_modules = [_DeviceModule("\n".join(v.decode() for _, v in sorted(dev.items())),
                                               "cuda" if any(k.endswith(".cu") for k in dev) else "opencl")] \
            if dev else []

    def get_source(self, fmt=""):
        return self.host_source

    def export_library(self, path):
        """Saves the module (its Model Library Format tarball, which load_module reads back)."""
        from .compiler import write_atomic
        write_atomic(path, self.tar)

    entry_name = "run"

    def time_evaluator(self, func_name=None, dev=None, number=10, repeat=1, min_repeat_ms=0):
        """TVM's module.time_evaluator(...)(a, b, c).mean: seconds per call, from the harness
        timing `number` back-to-back runs in one process (host C modules)."""
        from .host import run_host

        def evaluate(*arrays):
            means = []
            for _ in range(repeat):
                outs, latency_us = run_host(self.tar, self._feeds(arrays), repeat=max(int(number), 2))
                means.append(latency_us * 1e-6)
            self._store(outs, arrays)
            return ProfileResult(float(np.mean(means)), means)
        return evaluate

    def _feeds(self, arrays):
        if len(arrays) != len(self.inputs) + len(self.outputs):
            raise AotError(f"the module takes {len(self.inputs)} inputs and {len(self.outputs)} outputs, "
                           f"{len(arrays)} arrays given")
        feeds = {}
        for (name, shape, dtype), a in zip(self.inputs, arrays):
            v = np.asarray(a.numpy() if hasattr(a, "numpy") else a)
            if v.shape != shape or str(v.dtype) != dtype:
                raise AotError(f"argument {name} must be {dtype}{list(shape)}, not {v.dtype}{list(v.shape)}")
            feeds[name] = v
        return feeds

    def _store(self, outs, arrays):
        for (name, shape, dtype), a in zip(self.outputs, arrays[len(self.inputs):]):
            if hasattr(a, "copyfrom"):
                a.copyfrom(outs[name])
            else:
                a[...] = outs[name]

    def __call__(self, *arrays):
        from .host import run_host          # the module's own target: host C, CUDA or OpenCL
        self._store(run_host(self.tar, self._feeds(arrays)), arrays)


class ProfileResult:
    def __init__(self, mean, results):
        self.mean, self.results = mean, results


def load_module(path):
    """aot.runtime.load_module: a module saved by export_library."""
    from .host import _tar_bytes
    return Module(_tar_bytes(path))
