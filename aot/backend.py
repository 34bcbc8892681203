"""ONNX backend adapter (onnx.backend.base.Backend): lets onnx's own test machinery, and
users, drive the compiler as a runtime. Each prepared model is compiled to an MLF, built
with the host compiler and run in a subprocess.

Inputs that parameterise shapes (Reshape's shape, Slice's starts, ...) must be known at
compile time; the adapter compiles on the first run() and binds exactly the inputs the
compiler names, with the values given to that run (and recompiles if they change).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from .compiler import Options, compile_model
from .errors import AotError, NeedsConstantError
from .host import run_host


def as_array(v):
    if isinstance(v, onnx.TensorProto):
        from onnx import numpy_helper
        return numpy_helper.to_array(v)
    a = np.asarray(v)
    if a.dtype == object:
        raise AotError("only numeric and bool tensors are supported (got a sequence, map or string)")
    return a


class AotRep(BackendRep):
    def __init__(self, model: onnx.ModelProto, opt="-O0", target="c"):
        for vi in list(model.graph.input) + list(model.graph.output):
            if not vi.type.HasField("tensor_type"):
                kind = vi.type.WhichOneof("value")
                raise AotError(f"'{vi.name}' is a {kind.replace('_type', '')}; only tensor inputs and outputs are supported")
        self.model = model
        self.opt = opt
        self.target = target
        inits = {i.name for i in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in inits]
        self.output_names = [o.name for o in model.graph.output]
        self.bound = {}
        self.result = None

    def compile(self, feeds):
        """Compile, binding inputs the compiler says must be constant; returns the result."""
        binds = {}
        data = self.model.SerializeToString()
        for _ in range(len(self.input_names) + 2):
            # declared dims may be symbolic: the values at hand give them
            shapes = {n: tuple(feeds[n].shape) for n in self.input_names if n not in binds and n in feeds}
            try:
                return compile_model(data, Options(bind_inputs=binds, input_shapes=shapes, target=self.target)), binds
            except NeedsConstantError as e:
                if e.value_name in feeds and e.value_name not in binds:
                    binds[e.value_name] = feeds[e.value_name]
                    continue
                # a value computed from inputs inside the model (e.g. in a function body):
                # bind the integer inputs, which are what parameterises shapes
                ints = [n for n in self.input_names if n not in binds and n in feeds and feeds[n].dtype.kind in "iu"]
                if not ints:
                    raise
                for n in ints:
                    binds[n] = feeds[n]
        raise AotError("too many inputs must be bound at compile time")

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            feeds = {k: as_array(v) for k, v in inputs.items()}
        else:
            feeds = {n: as_array(v) for n, v in zip(self.input_names, inputs)}
        if self.result is None or any(not np.array_equal(feeds[k], v) for k, v in self.bound.items()):
            self.result, self.bound = self.compile(feeds)
        runtime = {n: feeds[n] for n in self.input_names if n not in self.bound}
        outs = run_host(self.result.tar, runtime, opt=self.opt)
        return [outs[n] for n in self.output_names]


class AotBackend(Backend):
    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        return device == "CPU"

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        super().prepare(model, device, **kwargs)
        return AotRep(model, kwargs.get("opt", "-O0"), kwargs.get("target", "c"))

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device):
        return device == "CPU"


prepare = AotBackend.prepare
run_model = AotBackend.run_model
supports_device = AotBackend.supports_device
