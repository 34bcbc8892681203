"""graph_executor.GraphModule: set_input / run / get_output over a relay.build result, as TVM's
graph executor is driven. Each run builds (once, cached by content) and runs the AOT module: the
host compiler for C, nvcc or the OpenCL platform for a GPU module on the device `dev` names."""
from __future__ import annotations

import numpy as np

from ..errors import AotError
from ..runtime import Device, NDArray
from ..targets import device_family


class GraphRuntime:
    def __init__(self, factory, dev):
        self.factory = factory
        self.dev = dev if dev is not None else Device("cpu", 0)
        g = factory.result.graph
        self.input_names = [v.name for v in g.inputs]
        self.input_types = {v.name: v.type for v in g.inputs}
        self.output_types = [v.type for v in g.outputs]
        self.output_names = list(g.output_names)
        self.inputs, self.outputs = {}, None


class GraphModule:
    """GraphModule(lib["default"](dev))."""

    def __init__(self, module):
        if not isinstance(module, GraphRuntime):
            raise AotError("GraphModule takes lib['default'](dev), lib being what relay.build returned")
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

    def set_input(self, key=None, value=None, **params):
        m = self.module
        items = ([(key, value)] if key is not None else []) + list(params.items())
        for k, v in items:
            name = self._name(k)
            a = np.asarray(v.numpy() if hasattr(v, "numpy") else v)
            t = m.input_types[name]
            if tuple(a.shape) != tuple(t.shape):
                raise AotError(f"input '{name}' has shape {list(t.shape)}, the value {list(a.shape)}")
            m.inputs[name] = a.astype(t.dtype, copy=False)

    def run(self, **inputs):
        from .. import run as run_module
        m = self.module
        if inputs:
            self.set_input(**inputs)
        missing = [n for n in m.input_names if n not in m.inputs]
        if missing:
            raise AotError(f"set_input first: no value for {', '.join(missing)}")
        device = m.dev.kind if device_family(m.dev.kind) else None     # a GPU API's, else the host's
        outs = run_module(m.factory.result, dict(m.inputs), device=device)
        m.outputs = [outs[n] for n in m.output_names]

    def get_num_outputs(self):
        return len(self.module.output_names)

    def get_num_inputs(self):
        return len(self.module.input_names)

    def get_input(self, key):
        return NDArray(self.module.inputs[self._name(key)])

    def get_output(self, index, out=None):
        m = self.module
        if m.outputs is None:
            raise AotError("run() first: there is no output yet")
        if not 0 <= index < len(m.outputs):
            raise AotError(f"output index {index} out of range: the module has {len(m.outputs)} outputs")
        if out is not None:
            out.copyfrom(m.outputs[index])
            return out
        return NDArray(m.outputs[index])
