"""What a backend's lowering sees and returns.

A lowering is called once per claimed unit of a partitioned function (a composite, or a
single op the backend claims per op) with a Call view, and returns call_extern(...) or a
list of them: the C calls, in order, that compute the unit's outputs from its inputs.

    def lower_conv(call):
        x, w = call.inputs
        oc, ic, kh, kw = w.shape
        return call_extern("vanilla_conv2dnchw", x, w, call.outputs[0], oc, x.shape[3], x.shape[2], ic, kh, kw)

Arguments of call_extern: a Tensor (passed as a pointer to its first element), a Python int
(an integer literal), a float (a float literal), or call.device (the backend's device context,
TVM's device API). Every call returns int32 0 on success; the executor stops at the first
non-zero status and run returns -1.
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import AotError
from ..names import C_KEYWORDS
from ..executor.kernels import ExternCall


class Tensor:
    """An operand of a lowered unit: its type, and its value when it is a constant."""

    def __init__(self, value, key):
        self.name = value.name
        self.shape = tuple(value.type.shape)
        self.dtype = value.type.dtype
        self.value = value.const          # numpy array for a constant, else None
        self.key = key                    # where it lives: ("param", k) or ("scratch", id)

    @property
    def is_constant(self):
        return self.value is not None

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self):
        return self.size * np.dtype(self.dtype).itemsize

    def __repr__(self):
        return f"Tensor({self.name}: {self.dtype}{list(self.shape)})"


class DeviceToken:
    def __repr__(self):
        return "device"


DEVICE = DeviceToken()


def call_extern(symbol: str, *args) -> ExternCall:
    """TVM's tir.call_extern: a call of a C function with tensor pointers and literals."""
    if not isinstance(symbol, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", symbol) or symbol in C_KEYWORDS:
        raise AotError(f"call_extern: {symbol!r} is not a C identifier")
    if symbol.startswith("tvmgen_") or symbol.startswith("TVMDevice"):
        raise AotError(f"call_extern: '{symbol}' is in the namespace of the generated code (tvmgen_*, TVMDevice*)")
    for a in args:
        if not isinstance(a, (Tensor, DeviceToken, int, float, np.integer, np.floating)) or isinstance(a, bool):
            raise AotError(f"call_extern('{symbol}'): argument {a!r} is not a tensor, an int, a float or "
                           "call.device")
    return ExternCall(symbol, tuple(int(a) if isinstance(a, np.integer) else
                                    float(a) if isinstance(a, np.floating) else a for a in args))


class Call:
    """The unit a lowering lowers: `name` is the composite's pattern name (without the backend
    prefix) or the op's name; `nodes` the graph nodes inside (ops and attrs); `inputs` and
    `outputs` Tensors in the order the pattern bound them (for a single op: the op's)."""

    def __init__(self, name, nodes, inputs, outputs, device, scratch=None):
        self.name, self.nodes, self.inputs, self.outputs = name, list(nodes), list(inputs), list(outputs)
        self._device = device
        self._scratch = scratch
        self.init_calls = []

    def at_init(self, *calls):
        """Calls the host makes once, in tvmgen_<mod>_init after the device contexts exist, not on
        every run: a library's per-call-site setup (descriptors, algorithm choice). They take
        literals and call.device only (no tensor exists yet). A GPU host makes them; a C target,
        whose interface has no init entry point, refuses a backend that asks for them."""
        for c in calls:
            if not isinstance(c, ExternCall):
                raise AotError(f"call.at_init: {c!r} is not a call_extern(...)")
            bad = [a for a in c.args if isinstance(a, Tensor)]
            if bad:
                raise AotError(f"call.at_init: {c.symbol} passes {bad[0]!r}; an init call takes literals and "
                               "call.device only")
        self.init_calls.extend(calls)

    def scratch(self, nbytes):
        """A uint8 Tensor of nbytes working memory for this unit's calls, planned in the workspace
        (16-byte aligned) and live while the unit runs."""
        return self._scratch(nbytes)

    @property
    def device(self):
        if not self._device:
            raise AotError("call.device: the backend has no device context "
                           "(call self._register_device_context() in its __init__)")
        return DEVICE

    def node(self, op):
        """The (first) node of op in this unit."""
        for n in self.nodes:
            if n.op == op:
                return n
        raise AotError(f"this {self.name} unit has no {op} node (it has: {', '.join(n.op for n in self.nodes)})")

    def has(self, op):
        return any(n.op == op for n in self.nodes)

    @property
    def attrs(self):
        """The attributes of the unit's first node (a single op's own)."""
        return dict(self.nodes[0].attrs)
