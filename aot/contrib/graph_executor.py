"""graph_executor.GraphModule: set_input / run / get_output over a relay.build result, as TVM's
graph executor is driven. Each run builds (once, cached by content) and runs the AOT module: the
host compiler for C, nvcc or the OpenCL platform for a GPU module on the device `dev` names.

The parameters relay.build bound are constants of the generated code: set_input accepts them
(TVM 0.6's `set_input(**params)` with build's params) when their values are the ones built in,
and refuses a different value by name, since it cannot take effect without a rebuild."""
from __future__ import annotations

import json

import numpy as np

from ..errors import AotError
from ..runtime import Device, NDArray
from ..targets import device_family


def _array(v):
    return np.asarray(v.numpy() if hasattr(v, "numpy") else v)


class GraphRuntime:
    """lib["default"](dev): the compiled module on a device, its inputs and outputs. `module` is
    anything holding the MLF (.tar): relay.build's factory, or a module loaded back; the names and
    types come from the MLF's metadata, the bound parameters from the factory when it has them."""

    def __init__(self, module, dev):
        from ..host import read_valid_mlf
        from ..ir.graph import TensorType
        self.factory = module
        self.tar = module.tar
        self.dev = _device(dev)
        info = read_valid_mlf(self.tar).aot
        self.input_names = [t["name"] for t in info["inputs"]]
        self.input_types = {t["name"]: TensorType(t["shape"], t["dtype"]) for t in info["inputs"]}
        self.output_types = [TensorType(t["shape"], t["dtype"]) for t in info["outputs"]]
        self.output_names = [t["name"] for t in info["outputs"]]
        self.params = dict(getattr(module, "params", None) or {})
        self.inputs, self.outputs = {}, None

    def run_timed(self, number):
        """Outputs of `number` back-to-back runs in one process, and the seconds one run took (mean)."""
        from ..host import run_host
        missing = [n for n in self.input_names if n not in self.inputs]
        if missing:
            raise AotError(f"set_input first: no value for {', '.join(missing)}")
        device = self.dev.kind if device_family(self.dev.kind) else None
        outs, latency_us = run_host(self.tar, dict(self.inputs), repeat=max(int(number), 2),
                                    device=device)
        self.outputs = [outs[n] for n in self.output_names]
        return latency_us * 1e-6

    def time_evaluator(self, func_name="run", dev=None, number=10, repeat=1, min_repeat_ms=0, **_):
        """TVM's module.time_evaluator("run", dev, number, repeat)() -> .mean / .results in seconds."""
        if func_name != "run":
            raise AotError(f"time_evaluator times 'run', the module's one function, not '{func_name}'")
        return lambda *args: BenchmarkResult([self.run_timed(number) for _ in range(max(int(repeat), 1))])


def _device(dev):
    if dev is None:
        return Device("cpu", 0)
    if isinstance(dev, (list, tuple)):
        if len(dev) != 1:
            raise AotError(f"the module runs on one device, {len(dev)} given")
        dev = dev[0]
    if not hasattr(dev, "kind"):
        raise AotError(f"a device is aot.cpu(0), aot.cuda(0), ... (aot.device(...)), not {dev!r}")
    return dev


class GraphModule:
    """GraphModule(lib["default"](dev))."""

    def __init__(self, module):
        if not isinstance(module, GraphRuntime) and hasattr(module, "tar") and hasattr(module, "dev"):
            module = GraphRuntime(module, module.dev)          # a loaded module's lib["default"](dev)
        if not isinstance(module, GraphRuntime):
            raise AotError("GraphModule takes lib['default'](dev), lib being what relay.build returned "
                           "(or runtime.load_module read back)")
        self.module = module

    def _name(self, key):
        m = self.module
        if isinstance(key, int):
            if not 0 <= key < len(m.input_names):
                raise AotError(f"input index {key} out of range: the module has {len(m.input_names)} inputs")
            return m.input_names[key]
        if key not in m.input_types:
            raise AotError(f"no input named '{key}' (inputs: {', '.join(m.input_names)}; parameters given to "
                           "relay.build are constants of the module)")
        return key

    def _set(self, name, value):
        m = self.module
        a = _array(value)
        t = m.input_types[name]
        if tuple(a.shape) != tuple(t.shape):
            raise AotError(f"input '{name}' has shape {list(t.shape)}, the value {list(a.shape)}")
        m.inputs[name] = a.astype(t.dtype, copy=False)

    def _set_param(self, name, value):
        """A bound parameter: accepted when it is the value built in."""
        have, a = self.module.params[name], _array(value)
        if a.shape != have.shape or not np.array_equal(a.astype(have.dtype, copy=False), have):
            raise AotError(f"set_input: '{name}' is a parameter bound at relay.build, a constant of the generated "
                           "code; a different value needs a new build (relay.build(..., params={...}))")

    def set_input(self, key=None, value=None, **params):
        """set_input(name or index, value), and set_input(**params): names of inputs set them;
        names of the parameters bound at build are checked against the built-in values; other
        names are passed over, as TVM's executor passes over weights it does not hold."""
        m = self.module
        if key is not None:
            if isinstance(key, str) and key in m.params and key not in m.input_types:
                self._set_param(key, value)
            else:
                self._set(self._name(key), value)
        for k, v in params.items():
            if k in m.input_types:
                self._set(k, v)
            elif k in m.params:
                self._set_param(k, v)

    def run(self, **inputs):
        from .. import run as run_module
        m = self.module
        if inputs:
            self.set_input(**inputs)
        missing = [n for n in m.input_names if n not in m.inputs]
        if missing:
            raise AotError(f"set_input first: no value for {', '.join(missing)}")
        device = m.dev.kind if device_family(m.dev.kind) else None     # a GPU API's, else the host's
        outs = run_module(m.tar, dict(m.inputs), device=device)
        m.outputs = [outs[n] for n in m.output_names]

    def get_num_outputs(self):
        return len(self.module.output_names)

    def get_num_inputs(self):
        return len(self.module.input_names)

    def get_input_index(self, name):
        names = self.module.input_names
        return names.index(name) if name in names else -1

    def get_input_info(self):
        """({name: shape}, {name: dtype}) of the inputs."""
        m = self.module
        return ({n: tuple(m.input_types[n].shape) for n in m.input_names},
                {n: m.input_types[n].dtype for n in m.input_names})

    def get_input(self, key, out=None):
        name = self._name(key)
        if name not in self.module.inputs:
            raise AotError(f"input '{name}' has no value yet (set_input first)")
        a = self.module.inputs[name]
        return out.copyfrom(a) if out is not None else NDArray(a)

    def get_output(self, index, out=None):
        m = self.module
        if m.outputs is None:
            raise AotError("run() first: there is no output yet")
        if not isinstance(index, int) or not 0 <= index < len(m.outputs):
            raise AotError(f"output index {index} out of range: the module has {len(m.outputs)} outputs")
        if out is not None:
            out.copyfrom(m.outputs[index])
            return out
        return NDArray(m.outputs[index])

    def benchmark(self, device=None, func_name="run", repeat=5, number=5, min_repeat_ms=None, end_to_end=False,
                  **kwargs):
        """TVM's GraphModule.benchmark: `repeat` measurements, each the mean of `number` back-to-back
        runs in one process of the generated code (inputs as set); a BenchmarkResult in seconds."""
        if end_to_end:
            raise AotError("benchmark(end_to_end=True) is not supported: the runs time the generated code with "
                           "its inputs already in place")
        return self.module.time_evaluator(func_name, device, number, repeat)()

    def __getitem__(self, name):
        fns = {"set_input": self.set_input, "run": self.run, "get_output": self.get_output,
               "get_num_outputs": self.get_num_outputs, "get_num_inputs": self.get_num_inputs,
               "get_input": self.get_input, "get_input_index": self.get_input_index}
        if name not in fns:
            raise AotError(f"the graph executor has no function '{name}' (it has: {', '.join(fns)})")
        return fns[name]


class BenchmarkResult:
    """Seconds per run of each measurement (.results) and their mean, median, max, min and std."""

    def __init__(self, results):
        self.results = [float(r) for r in results]
        a = np.asarray(self.results)
        self.mean, self.median, self.max, self.min, self.std = (float(f(a)) for f in
                                                                 (np.mean, np.median, np.max, np.min, np.std))

    def __str__(self):
        head = "".join(f"{h:>13}" for h in ("mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)"))
        row = "".join(f"{v * 1e3:>13.4f}" for v in (self.mean, self.median, self.max, self.min, self.std))
        return f"Execution time summary:\n{head}\n{row}\n"

    def __repr__(self):
        return (f"BenchmarkResult(min={self.min}, mean={self.mean}, median={self.median}, max={self.max}, "
                f"std={self.std}, {len(self.results)} results)")


def create(graph_json_str, libmod, device):
    """GraphModule from (graph JSON, lib, device) as TVM's graph_executor.create takes them: lib is
    what relay.build returned (its graph JSON is the one given)."""
    if not (hasattr(libmod, "get_graph_json") and hasattr(libmod, "tar")):     # relay.build's factory
        raise AotError("graph_executor.create takes the lib relay.build returned (graph, lib, params = "
                       "relay.build(...)), not " + type(libmod).__name__)
    if not isinstance(graph_json_str, str):
        raise AotError("graph_executor.create: the graph is the JSON string relay.build returned")
    try:
        given = json.loads(graph_json_str)
    except ValueError:
        raise AotError("graph_executor.create: the graph is not JSON") from None
    if given != json.loads(libmod.get_graph_json()):
        raise AotError("graph_executor.create: the graph JSON is not the one this lib was built with; the "
                       "compiled module runs only its own graph (rebuild with relay.build to change it)")
    return GraphModule(GraphRuntime(libmod, device))
