"""aot: an ahead-of-time compiler from ONNX models to C99 + a static AOT executor in TVM's
Model Library Format, for microcontrollers.

    import aot
    result = aot.compile("model.onnx", "model.tar")
    outputs = aot.run("model.tar", {"input": x})
"""
from __future__ import annotations

import sys

from .errors import AotError, OpError, UnsupportedError  # noqa: F401
# TVM's tests catch tvm.TVMError; aot's refusals are its AotErrors
TVMError = AotError
from .ops.custom import register_op  # noqa: F401
from . import contrib, runtime, target, te, testing, tir, transform  # noqa: F401  (tvm.target, tvm.te, ... as attributes)
from .runtime import Device, NDArray, cl, cpu, cuda, device, gpu, nd, opencl  # noqa: F401
from .runtime.packed import get_global_func, list_global_func_names, register_func  # noqa: F401,E402
from .runtime import executor as _runtime_executor  # noqa: F401,E402  tvm.runtime.executor.aot_executor as attributes
from . import instrument  # noqa: F401,E402  (tvm.instrument)
from .deprecation import alias as _alias  # noqa: E402

# TVM 0.6's spellings: each works and warns once, naming today's (aot/deprecation.py)
context = _alias("tvm.context", device, "tvm.context(dev, 0) is TVM 0.6's spelling: use tvm.device(dev, 0)")
create_schedule = _alias("tvm.create_schedule", te.create_schedule,
                         "tvm.create_schedule is TVM 0.6's spelling: use tvm.te.create_schedule")
placeholder = _alias("tvm.placeholder", te.placeholder, "tvm.placeholder is TVM 0.6's spelling: use tvm.te.placeholder")
compute = _alias("tvm.compute", te.compute, "tvm.compute is TVM 0.6's spelling: use tvm.te.compute")


from . import refused as _refused  # noqa: E402

_refused.install(sys.modules[__name__])


def __getattr__(name):
    """tvm.IRModule (relay's, which holds TIR functions as aot.tir's module), loaded when first
    reached; tvm.ndarray: TVM 0.6's name of tvm.nd (warns once when reached)."""
    if name == "support":           # tvm.support (aot/support.py), imported when first reached
        import importlib
        return importlib.import_module(".support", __name__)
    if name == "IRModule":
        from .relay.expr import IRModule
        return IRModule
    if name == "ndarray":
        from .deprecation import warn_once
        warn_once("tvm.ndarray", "tvm.ndarray is TVM 0.6's spelling: use tvm.nd", stacklevel=2)
        return nd
    raise AttributeError(f"module 'aot' has no attribute '{name}'")


def build(inputs, args=None, target="c", target_host=None, name="default_function", sizes=None, runtime=None,
          binds=None):
    """aot.build(s, [A, B, C], target="c" | "cuda" | "opencl", name=...): a te schedule as a module
    callable on arrays (aot/module.py); sizes={n: 1024} fixes te.var sizes (else the first call does).
    runtime= (TVM's Runtime("crt", {"system-lib": True}), ...) is taken: the module is the same."""
    from .module import build as _build
    if binds is not None:
        raise AotError("build: binds= (buffers bound to tensors) is not supported; the arguments get their own buffers")
    return _build(inputs, args, target, target_host, name, sizes)



def lower(inputs, args=None, name="main", binds=None, simple_mode=False):
    """TVM's tvm.lower(s, [A, B, C], simple_mode=True): the scheduled function as a module of one
    PrimFunc, which prints as TVMScript. Also a TensorIR module or function (returned as a module)."""
    from .te import Schedule, lower_schedule
    from .tir.schedule_api import PrimModule
    from .tir.stmt import PrimFunc
    if binds:
        raise AotError("lower: binds= (buffers bound to tensors) is not supported; the arguments get their own buffers")
    from .tir.blocks import lowered
    if isinstance(inputs, PrimModule):      # TensorIR lowers to its loops (blocks erased), as TVM's does
        return PrimModule({k: lowered(f) for k, f in inputs.functions.items()})
    if isinstance(inputs, PrimFunc):
        return PrimModule({name: lowered(inputs)})
    if not isinstance(inputs, Schedule):
        raise AotError(f"lower takes a te schedule or a TensorIR module/function, not {type(inputs).__name__}")
    return PrimModule({name: lower_schedule(inputs, args, name)})


__version__ = "0.1.0"


def compile(model, output=None, model_name="default", input_shapes=None, target="c", verbose=False,
            use_workspace_io=False, bind_inputs=None, workspace_pools=None, in_place=True, interface_api="c",
            io_names="model", trace=False, patch=None, ram_budget=None, stack_bound=False):
    """Compile an ONNX model (path, bytes or ModelProto); returns a CompileResult (.tar bytes).
    trace: metadata.json records each kernel's schedule trace (`aot info` prints them).
    patch: patch-based execution of the first stage: "auto" (the smallest workspace), "force" (the
    best patched stage, even when layer by layer is smaller), (layers, strips) or (layers, strips,
    column tiles); ram_budget:
    bytes of workspace + caller-owned I/O the execution must fit (docs/memory.md)."""
    from .compiler import Options, compile_model, stderr_log
    opts = Options(model_name=model_name, input_shapes=dict(input_shapes or {}), target=target,
                   use_workspace_io=use_workspace_io, bind_inputs=dict(bind_inputs or {}),
                   workspace_pools=list(workspace_pools) if workspace_pools else None, in_place=in_place,
                   interface_api=interface_api, io_names=io_names, trace=trace, patch=patch, ram_budget=ram_budget,
                   stack_bound=stack_bound)
    res = compile_model(model, opts, log=stderr_log if verbose else None)
    if output is not None:
        res.save(output)
    return res


def run(mlf, inputs, board="host", sanitize=False, opt=None, profile=False, device=None):
    """Build an MLF (path, bytes or CompileResult) for `board`, run it on `inputs` {name: array},
    return outputs. On a QEMU board, profile=True returns (outputs, stats) with the instructions
    per inference and the stack used. device: "cuda" or "opencl" to run a GPU module on the
    host's GPU (nvcc builds the kernels) or OpenCL platform; checked against the MLF's target
    (by default the MLF's own), refused by name when this machine has no such device."""
    from .host import run_host
    if hasattr(mlf, "tar"):
        mlf = mlf.tar
    if board == "host":
        if profile:
            raise AotError("profile is for emulated boards (qemu-cortex-*); the host reports latency instead")
        return run_host(mlf, inputs, sanitize=sanitize, opt=opt, device=device)
    if device is not None:
        raise AotError(f"device '{device}' is for the host board; '{board}' runs C")
    from .firmware import run_firmware
    if sanitize:
        raise AotError("sanitize is for the host board")
    outs, stats = run_firmware(mlf, inputs, board, opt or "-O2")
    return (outs, stats) if profile else outs


def size(mlf, board="qemu-cortex-m4", opt="-O2"):
    """Flash and RAM of the firmware for `board`, by part, with the stack and instruction count
    measured by one run on zero inputs."""
    from .firmware import measure
    if hasattr(mlf, "tar"):
        mlf = mlf.tar
    return measure(mlf, board, opt)[0]


from . import debug as _debug_impl  # noqa: E402  loaded now so that the function below keeps the name


def debug(model, inputs, board="host", model_name="default", input_shapes=None, mlf=None, sanitize=False,
          opt=None, verbose=False, **compile_options):
    """Name the first kernel whose output diverges from onnxruntime: compile `model` instrumented
    (same plan as aot.compile with the same options), run it on `board` with `inputs`, compare
    every kernel's output. Returns a DebugReport (.ok, .first_divergent, .table(), .summary();
    `from aot.debug import DebugReport`). See docs/debug.md."""
    from .compiler import Options, stderr_log
    opts = Options(model_name=model_name, input_shapes=dict(input_shapes or {}), **compile_options)
    return _debug_impl.debug(model, inputs, board, options=opts, mlf=mlf, sanitize=sanitize, opt=opt,
                             log=stderr_log if verbose else None)

