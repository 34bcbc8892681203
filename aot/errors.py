"""User-facing errors: raised for bad models or options, printed without a traceback."""


class AotError(RuntimeError):
    """An error caused by the user's input (model, options); the CLI prints it and exits 2.
    A RuntimeError, as TVM's TVMError (aot.TVMError is this class), so TVM's callers catch it."""


class UnsupportedError(AotError):
    """One or more model elements cannot be compiled; `problems` lists every one of them."""

    def __init__(self, problems):
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} unsupported element(s) in the model:\n{lines}")


class OpError(AotError):
    """A problem with one node: carries its name and op type so the message names it."""

    def __init__(self, node, message):
        self.node_name = getattr(node, "name", "?")
        self.op_type = getattr(node, "op", "?")
        super().__init__(f"node '{self.node_name}' ({self.op_type}): {message}")


class NeedsConstantError(OpError):
    """An input that parameterises shapes (shape, axes, pads, ...) is not known at compile time.

    `value_name` names the tensor; binding it (Options.bind_inputs, --bind-input) resolves it."""

    def __init__(self, node, message, value_name):
        self.value_name = value_name
        super().__init__(node, message)


class InternalError(Exception):
    """An invariant of the compiler's own IRs broke: a bug in aot, never the user's input. The
    CLI prints "internal error (please report)" and exits 1 (an AotError would blame the model)."""


class BuildError(Exception):
    """Generated code failed to build or run: a compiler bug, never a user error."""


class QuantRangeError(AotError):
    """A quantisation parameter (scale, zero point, requantisation multiplier) outside what the
    integer kernels represent (aot/ops/quant_rules.py); the message names the tensors, not the
    operator, which the frontend prefixes."""


class TFLiteError(AotError):
    """A .tflite file the frontend cannot read: malformed, or outside what it supports."""
