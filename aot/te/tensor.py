"""A small tensor-expression layer: each op's compute definition is written with it.

`compute(shape, f)` describes out[i...] = f(i...); f may return a Reduce over reduce axes
whose bounds may depend on the output indices (that is how convolution and pooling skip
padding without a branch in the inner loop). Lowering (aot/te/lower.py) turns a fused group
of these stages into one loop-IR PrimFunc.
"""
from __future__ import annotations

import itertools

from ..errors import InternalError
from ..tir.expr import INDEX, Const, Expr, Var, max_nan, min_nan, wrap

_uid = itertools.count()


class IterVar:
    def __init__(self, var: Var, min: Expr, extent: Expr):
        self.var, self.min, self.extent = var, wrap(min), wrap(extent)


class PlaceholderOp:
    pass


class ComputeOp:
    def __init__(self, axes, body):
        self.axes, self.body = axes, body

    @property
    def axis(self):
        """The output's loop variables, outermost first (TVM: C.op.axis)."""
        return list(self.axes)

    @property
    def reduce_axis(self):
        """The loop variables of the reduction, if the body is one (TVM: C.op.reduce_axis)."""
        return [a.var for a in self.body.axes] if isinstance(self.body, Reduce) else []

    def output(self, index):
        """The tensor this op computes (TVM: C.op.output(0))."""
        if index != 0:
            raise InternalError(f"a compute op has one output, not {index + 1}")
        return self.tensor


class Tensor:
    def __init__(self, name, shape, dtype, op):
        # a dimension is an int or an expression of te.var sizes (fixed by aot.build)
        self.name, self.dtype, self.op = name, dtype, op
        self.shape = tuple(s if isinstance(s, Expr) and not isinstance(s, Const) else int(getattr(s, "value", s))
                           for s in shape)
        self.uid = next(_uid)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def is_placeholder(self):
        return isinstance(self.op, PlaceholderOp)

    def __call__(self, *indices):
        if len(indices) == 1 and isinstance(indices[0], (list, tuple)):
            indices = tuple(indices[0])
        if len(indices) != len(self.shape):
            raise IndexError(f"{self.name}: {len(indices)} indices for rank {len(self.shape)}")
        return TensorRef(self, [wrap(i.var if isinstance(i, IterVar) else i) for i in indices])

    def __getitem__(self, indices):
        """A[i, k] as TVM writes it (a reduce axis may be given as its IterVar)."""
        return self(*indices) if isinstance(indices, tuple) else self(indices)

    def flat(self, index):
        """Element `index` of the tensor in row-major order (reshape without index math)."""
        return TensorRef(self, [wrap(index)], flat=True)

    def __repr__(self):
        return f"Tensor({self.name}, {list(self.shape)}, {self.dtype})"


class TensorRef(Expr):
    __slots__ = ("tensor", "indices", "flat")

    def __init__(self, tensor: Tensor, indices, flat=False):
        self.tensor, self.indices, self.flat = tensor, tuple(indices), flat
        self.dtype, self._key = tensor.dtype, None

    def _make_key(self):
        return ("tref", self.tensor.uid, self.flat, tuple(i.key() for i in self.indices))

    def _children(self):
        return self.indices

    def _rebuild(self, kids):
        return TensorRef(self.tensor, kids, self.flat)


COMBINERS = ("sum", "max", "min", "prod")


def combine(combiner):
    """The loop-IR combining function of a reduction: acc, element -> acc. max/min propagate NaN
    (numpy, the ONNX reference): `a > b ? a : b` would keep or drop a NaN depending on where it
    falls in the loop order."""
    return {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b, "max": max_nan, "min": min_nan}[combiner]


class Reduce(Expr):
    __slots__ = ("combiner", "source", "axes", "init")

    def __init__(self, combiner, source: Expr, axes, init=None):
        if combiner not in COMBINERS:
            raise InternalError(f"unknown combiner {combiner!r}")
        self.combiner, self.source, self.axes = combiner, source, list(axes)
        self.dtype = source.dtype
        self.init = wrap(init, source.dtype) if init is not None else identity(combiner, source.dtype)
        self._key = None

    def _make_key(self):
        return ("reduce", self.combiner, self.source.key(), tuple(id(a.var) for a in self.axes))

    def _children(self):
        return (self.source,)

    def _rebuild(self, kids):
        return Reduce(self.combiner, kids[0], self.axes, self.init)


def identity(combiner, dtype):
    import numpy as np
    from ..tir.expr import is_float
    if combiner == "sum":
        return Const(0, dtype)
    if combiner == "prod":
        return Const(1, dtype)
    if is_float(dtype):
        return Const(float("-inf") if combiner == "max" else float("inf"), dtype)
    info = np.iinfo(dtype) if dtype != "bool" else None
    if info is None:
        return Const(combiner == "min", "bool")
    return Const(info.min if combiner == "max" else info.max, dtype)


def var(name="tindex", dtype="int32") -> Var:
    """te.var("n"): a size left symbolic in shapes, extents and indices until aot.build fixes it
    (from its sizes= argument, or from the arrays of the module's first call)."""
    if dtype not in ("int32", "int64"):
        raise InternalError(f"te.var {name}: a size is int32 or int64, not {dtype}")
    return Var(name, INDEX)


size_var = var


def placeholder(shape, dtype="float32", name="placeholder") -> Tensor:
    return Tensor(name, shape, dtype or "float32", PlaceholderOp())


def compute(shape, fcompute, name="compute", axis_names=None) -> Tensor:
    names = axis_names or [f"i{k}" for k in range(len(shape))]
    axes = [Var(n, INDEX) for n in names]
    body = wrap(fcompute(*axes), "float32")
    op = ComputeOp(axes, body)
    op.tensor = Tensor(name, shape, body.dtype, op)
    return op.tensor


def reduce_axis(extent, name="rv", min=0) -> IterVar:
    """reduce_axis(extent, name) or, as TVM writes it, reduce_axis((lo, hi), name)."""
    if isinstance(extent, tuple):
        lo, hi = extent
        ext = hi - lo if isinstance(lo, int) and isinstance(hi, int) else wrap(hi) - wrap(lo)
        return IterVar(Var(name, INDEX), lo, ext)
    return IterVar(Var(name, INDEX), min, extent)


def sum(expr, axis, init=None):
    return Reduce("sum", expr, axis if isinstance(axis, (list, tuple)) else [axis], init)


def max(expr, axis, init=None):
    return Reduce("max", expr, axis if isinstance(axis, (list, tuple)) else [axis], init)


def min(expr, axis, init=None):
    return Reduce("min", expr, axis if isinstance(axis, (list, tuple)) else [axis], init)


def prod(expr, axis, init=None):
    return Reduce("prod", expr, axis if isinstance(axis, (list, tuple)) else [axis], init)


def broadcast_index(out_idx, in_shape):
    """Indices into an input of shape in_shape for numpy-style broadcasting to out_idx."""
    off = len(out_idx) - len(in_shape)
    return [Const(0, INDEX) if d == 1 else out_idx[off + k] for k, d in enumerate(in_shape)]

