"""TVM's tir call intrinsics for code a TIR pass builds: tir.call_extern (a C function called with
buffer pointers and scalars, as UMA's passes emit), tir.call_packed (a function registered with
aot.register_func, reached from a module run in-process), and tir.decl_buffer."""
from __future__ import annotations

import re

from ..errors import AotError
from .expr import Expr, Var, wrap
from .stmt import AccessPtr, Buffer, BufferData  # noqa: F401  (AccessPtr: tvm.tir's name)


class ExternCall(Expr):
    """A call of an external function (TVM's Call of tir.call_extern / tir.call_packed): name, the
    result's dtype, arguments that are expressions (ints, floats) or buffer data pointers
    (Buffer.data). It is a statement's value (tir.Evaluate); what a backend renders it as is the
    backend's (aot/uma: a call_extern kernel)."""
    __slots__ = ("name", "args", "packed")

    def __init__(self, dtype, name, args, packed=False):
        # a packed function is found by its registered name (dotted, as "tvm.contrib.cblas.matmul")
        pattern = r"[A-Za-z_][A-Za-z0-9_.]*" if packed else r"[A-Za-z_][A-Za-z0-9_]*"
        if not isinstance(name, str) or not re.fullmatch(pattern, name):
            raise AotError(f"{'call_packed' if packed else 'call_extern'}: {name!r} is not "
                           f"{'a function name' if packed else 'a C identifier'}")
        self.dtype, self.name, self.packed, self._key = dtype, name, packed, None
        self.args = tuple(_arg(a, name) for a in args)

    def _make_key(self):
        return ("extern", self.name, self.dtype, self.packed, tuple(a.key() for a in self.args))

    def _children(self):
        return self.args

    def _rebuild(self, kids):
        return ExternCall(self.dtype, self.name, kids, self.packed)

    @property
    def op(self):
        return "tir.call_packed" if self.packed else "tir.call_extern"

    def script(self, fmt):
        args = ", ".join(fmt(a) for a in self.args)
        if self.packed:
            return f'T.call_packed("{self.name}"{", " if args else ""}{args})'
        return f'T.call_extern("{self.dtype}", "{self.name}"{", " if args else ""}{args})'

    def __repr__(self):
        return f"{'call_packed' if self.packed else 'call_extern'}({self.name}, {list(self.args)})"


class CheckReturn(Expr):
    """TVM's tir.tvm_check_return(expected, error, call): the call's int32 status compared with
    `expected`; on a mismatch the function returns `error` at once (C: if (call != expected)
    return error;). The AOT executor's main wraps every operator call in one."""
    __slots__ = ("expected", "error", "call")

    def __init__(self, expected, error, call):
        self.expected, self.error, self.call = wrap(expected, "int32"), wrap(error, "int32"), call
        self.dtype, self._key = "int32", None

    def _make_key(self):
        return ("check_return", self.expected.key(), self.error.key(), self.call.key())

    def _children(self):
        return (self.expected, self.error, self.call)

    def _rebuild(self, kids):
        return CheckReturn(*kids)

    @property
    def op(self):
        return "tir.tvm_check_return"

    @property
    def args(self):
        return [self.expected, self.error, self.call]

    def script(self, fmt):
        return f"T.tvm_check_return({fmt(self.expected)}, {fmt(self.error)}, {fmt(self.call)})"

    def __repr__(self):         # as TVM's repr of an expression: its TVMScript
        return self.script(_plain)


def _plain(e):
    """An expression's TVMScript outside a function's printer: a variable by its name, an int32
    by its value, what has a script form by it."""
    if isinstance(e, Var):
        return e.name
    if getattr(e, "dtype", None) == "int32" and isinstance(getattr(e, "value", None), int):
        return str(e.value)
    text = getattr(e, "script", None)
    return text(_plain) if text is not None else repr(e)


def _arg(a, fn):
    if isinstance(a, Buffer):
        return a.data
    if isinstance(a, Expr):
        return a
    if isinstance(a, bool):
        return wrap(a)
    if isinstance(a, int):
        return wrap(a, "int32")
    if isinstance(a, float):
        return wrap(a, "float32")
    raise AotError(f"call_extern('{fn}'): argument {a!r} is not an expression, a number or a buffer")


def call_extern(dtype, func_name, *args, span=None):
    """tvm.tir.call_extern("int32", "my_kernel", A.data, B.data, 16)."""
    return ExternCall(str(dtype), func_name, args)


def call_packed(func_name, *args, span=None):
    """tvm.tir.call_packed("name", A, B, 1.0): a call of the function registered under name
    (aot.register_func); a module calling one runs in this process (aot/module.py)."""
    return ExternCall("int32", func_name, args, packed=True)


def decl_buffer(shape, dtype="float32", name="buffer", data=None, strides=None, elem_offset=None, scope="",
                data_alignment=-1, offset_factor=0, buffer_type="", axis_separators=None, span=None):
    """tvm.tir.decl_buffer: a new buffer, or (data=) a view of the memory another buffer or an
    allocation holds, which is that buffer itself here (one buffer per memory).

    strides= and offset_factor= declare a buffer that a tensor intrinsic
    (te.decl_tensor_intrin) binds to a region of a larger one: its strides (ints or te.vars, bound
    to the region's when tensorize matches) and its element offset (a variable when offset_factor
    is given, as TVM makes it) are what access_ptr and buf.strides give the intrinsic's body."""
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    if data is not None:
        if strides or elem_offset is not None:
            raise AotError(f"decl_buffer {name}: a view (data=) with strides or elem_offset is not supported "
                           "(a view is the whole buffer it views)")
        target = data.buffer if isinstance(data, BufferData) else getattr(data, "buffer", None)
        if target is None:
            raise AotError(f"decl_buffer {name}: data= must be a buffer's .data or an allocation")
        return target
    b = Buffer(name, str(dtype), shape, scope or "global")
    if strides:
        if len(strides) != len(shape):
            raise AotError(f"decl_buffer {name}: {len(strides)} strides for {len(shape)} dimensions")
        b.strides = [s if isinstance(s, Expr) else wrap(int(s), "int32") for s in strides]
    if elem_offset is not None:
        b.elem_offset = elem_offset if isinstance(elem_offset, Expr) else wrap(int(elem_offset), "int32")
    elif offset_factor:
        b.elem_offset = Var(f"{name}_elem_offset", "int32")
    b.offset_factor = int(offset_factor or 0)
    return b


def handle_var(name):
    return Var(name, "handle")


# -- TVM's expression helpers (tvm.tir.const, indexmod, if_then_else, all, ...) -----------------------
def const(value, dtype=None, span=None):
    """tvm.tir.const(1, "float32"): a constant; without a dtype, int32 for an int, float32 for a float."""
    from .expr import Const
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
    return Const(value, str(dtype))


def _bin(op):
    def f(a, b, span=None):
        from .expr import Bin
        a, b = wrap(a, getattr(b, "dtype", "int32")), wrap(b, getattr(a, "dtype", "int32"))
        return Bin(op, a, b)
    f.__name__ = op
    return f


indexdiv = floordiv = _bin("floordiv")
indexmod = floormod = _bin("floormod")
truncdiv = _bin("/")
truncmod = _bin("%")


def if_then_else(cond, t, f, span=None):
    from .expr import Select
    return Select(cond, t, f)


def all(*conds, span=None):  # noqa: A001  (TVM's name)
    from .expr import all_of
    return all_of(conds)


def any(*conds, span=None):  # noqa: A001  (TVM's name)
    from .expr import Const, or_
    out = None
    for c in conds:
        out = c if out is None else or_(out, c)
    return out if out is not None else Const(False, "bool")


def likely(cond, span=None):
    return cond


def min_value(dtype):
    import numpy as np
    from .expr import Const, is_float
    return Const(float("-inf") if is_float(dtype) else np.iinfo(dtype).min, dtype)


def max_value(dtype):
    import numpy as np
    from .expr import Const, is_float
    return Const(float("inf") if is_float(dtype) else np.iinfo(dtype).max, dtype)


class _ConstKind(type):
    def __instancecheck__(cls, x):
        from .expr import Const, is_float
        return isinstance(x, Const) and (is_float(x.dtype) == cls._float) and x.dtype != "bool"


class IntImm(metaclass=_ConstKind):
    """tvm.tir.IntImm("int32", 3): an integer constant (isinstance works on the loop IR's constants)."""
    _float = False

    def __new__(cls, dtype, value, span=None):
        from .expr import Const
        return Const(int(value), str(dtype))


class FloatImm(metaclass=_ConstKind):
    _float = True

    def __new__(cls, dtype, value, span=None):
        from .expr import Const
        return Const(float(value), str(dtype))


class ForKind:
    """tvm.tir.ForKind: the loop kinds, as the loop IR's For.kind strings."""
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorize"
    UNROLLED = "unroll"
    THREAD_BINDING = "thread_binding"


def _math(fn):
    def f(x, span=None):
        from .expr import Call
        return Call(fn, [wrap(x, "float32")])
    f.__name__ = fn
    f.__doc__ = f"TVM's tir.{fn}(x) (te re-exports it)."
    return f


exp, log, sqrt, tanh, erf, floor, ceil = (_math(n) for n in ("exp", "log", "sqrt", "tanh", "erf", "floor", "ceil"))


def sigmoid(x, span=None):
    x = wrap(x, "float32")
    return 1.0 / (1.0 + exp(-x))

