"""runtime.executor.aot_executor.AotModule with TVM's names: set_input / get_input / run /
get_output over an AOT executor, either a micro Session's (session.create_aot_executor()) or a
local one (relay.build(...)["default"](dev))."""
from __future__ import annotations

import numpy as np

from ...errors import AotError
from .. import NDArray


class AotModule:
    """AotModule(session.create_aot_executor()) or AotModule(lib["default"](dev))."""

    def __init__(self, module):
        # duck-typed: the micro session and the graph executor sit on top of this runtime package
        if hasattr(module, "session") and hasattr(module, "input_info"):       # session.create_aot_executor()
            self._ex = module
        elif hasattr(module, "factory") and hasattr(module, "input_names"):     # lib["default"](dev)
            self._ex = _LocalExecutor(module)
        else:
            raise AotError("AotModule takes session.create_aot_executor() or relay.build(...)['default'](dev), "
                           f"not {type(module).__name__}")
        self.module = module

    def set_input(self, key=None, value=None, **params):
        items = ([(key, value)] if key is not None else []) + list(params.items())
        for k, v in items:
            self.get_input(k).copyfrom(v)

    def run(self, **input_dict):
        if input_dict:
            self.set_input(**input_dict)
        self._ex.run()

    def get_num_inputs(self):
        return len(self._ex.inputs)

    def get_num_outputs(self):
        return len(self._ex.outputs)

    def get_input(self, index, out=None):
        """The executor's own input array: copyfrom on it sets the input."""
        a = self._ex.inputs[self._ex.input_index(index)]
        if out is not None:
            out.copyfrom(a)
            return out
        return a

    def get_input_index(self, name):
        """The index of input `name`, -1 when there is none (as TVM)."""
        names = [t["name"] for t in self._ex.input_info]
        return names.index(name) if name in names else -1

    def get_input_name(self, index):
        return self._ex.input_info[self._ex.input_index(index)]["name"]

    def get_input_info(self):
        """({name: shape}, {name: dtype}) of the inputs."""
        return ({t["name"]: tuple(t["shape"]) for t in self._ex.input_info},
                {t["name"]: t["dtype"] for t in self._ex.input_info})

    def get_output(self, index, out=None):
        n = len(self._ex.outputs)
        if not isinstance(index, (int, np.integer)) or not 0 <= int(index) < n:
            raise AotError(f"output index {index} out of range: the model has {n} output(s)")
        if not self._ex.has_run:
            raise AotError("get_output: run() first, there is no output yet")
        a = self._ex.outputs[int(index)]
        if out is not None:
            out.copyfrom(a)
            return out
        return NDArray(a.numpy(), a.device)


class ExecutorState:
    """What an executor behind AotModule holds: the model's inputs and outputs as arrays it owns
    (input_info: [{"name", "shape", "dtype"}]; outputs: [(shape, dtype)]), and input lookup by
    name or index. Subclasses give run()."""

    def __init__(self, input_info, outputs):
        self.input_info = list(input_info)
        self.inputs = [NDArray(np.zeros(t["shape"], t["dtype"])) for t in self.input_info]
        self.outputs = [NDArray(np.zeros(shape, dtype)) for shape, dtype in outputs]
        self.has_run = False

    def input_index(self, key):
        names = [t["name"] for t in self.input_info]
        if isinstance(key, (int, np.integer)):
            if not 0 <= int(key) < len(names):
                raise AotError(f"input index {key} out of range: the model has {len(names)} input(s)")
            return int(key)
        if key not in names:
            raise AotError(f"the model has no input named '{key}' (its inputs: {', '.join(names)})")
        return names.index(key)


class _LocalExecutor(ExecutorState):
    """A relay.build module (lib["default"](dev)) run as an AOT executor: each run() builds (once,
    cached) and runs its MLF with the host runner, or on the GPU its device names."""

    def __init__(self, rt):
        self._rt = rt
        super().__init__([{"name": n, "shape": list(rt.input_types[n].shape), "dtype": rt.input_types[n].dtype}
                          for n in rt.input_names], [(t.shape, t.dtype) for t in rt.output_types])

    def run(self):
        from ...host import run_host
        from ...targets import device_family
        rt = self._rt
        kind = getattr(rt.dev, "kind", "cpu")
        outs = run_host(rt.factory.result.tar, {t["name"]: a.numpy() for t, a in zip(self.input_info, self.inputs)},
                        device=kind if device_family(kind) else None)
        for name, a in zip(rt.output_names, self.outputs):
            a.copyfrom(outs[name])
        self.has_run = True
