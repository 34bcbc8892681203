"""aot: an ahead-of-time compiler from ONNX models to C99 + a static AOT executor in TVM's
Model Library Format, for microcontrollers.

    import aot
    result = aot.compile("model.onnx", "model.tar")
    outputs = aot.run("model.tar", {"input": x})
"""
from __future__ import annotations

from .errors import AotError, OpError, UnsupportedError  # noqa: F401

__version__ = "0.1.0"


def compile(model, output=None, model_name="default", input_shapes=None, target="c", verbose=False,
            use_workspace_io=False, bind_inputs=None):
    """Compile an ONNX model (path, bytes or ModelProto); returns a CompileResult (.tar bytes)."""
    from .compiler import Options, compile_model, stderr_log
    opts = Options(model_name=model_name, input_shapes=dict(input_shapes or {}), target=target,
                   use_workspace_io=use_workspace_io, bind_inputs=dict(bind_inputs or {}))
    res = compile_model(model, opts, log=stderr_log if verbose else None)
    if output is not None:
        res.save(output)
    return res


def run(mlf, inputs, board="host", sanitize=False):
    """Build an MLF (path or bytes) for `board`, run it on `inputs` {name: array}, return outputs."""
    from .host import run_host
    if board != "host":
        raise AotError(f"board '{board}' is not supported yet (supported: host)")
    if hasattr(mlf, "tar"):
        mlf = mlf.tar
    return run_host(mlf, inputs, sanitize=sanitize)
