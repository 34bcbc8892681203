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


class Range:
    """An iteration domain [min, min + extent) (TVM: IterVar.dom)."""

    def __init__(self, min, extent):
        self.min, self.extent = wrap(min), wrap(extent)

    def __repr__(self):
        return f"range(min={self.min!r}, ext={self.extent!r})"


class IterVar:
    """A loop axis: its variable and domain (TVM's IterVar). In an expression it stands for its
    variable, so `A[i + di]` works with a reduce axis di."""
    DataPar, ThreadIndex, CommReduce, Ordered, DimInfo, Unrolled, Vectorized, Parallelized, Tensorized = range(9)

    def __init__(self, var: Var, min: Expr, extent: Expr, iter_type=0, thread_tag=""):
        self.var, self.min, self.extent = var, wrap(min), wrap(extent)
        self.iter_type, self.thread_tag = iter_type, thread_tag or None

    @property
    def dom(self):
        return Range(self.min, self.extent)

    @property
    def name(self):
        return self.var.name

    def __repr__(self):
        return f"iter_var({self.var.name}, {self.dom!r})"

    # arithmetic on the axis is arithmetic on its variable
    def __add__(self, o): return self.var + o
    def __radd__(self, o): return wrap(o, self.var.dtype) + self.var
    def __sub__(self, o): return self.var - o
    def __rsub__(self, o): return wrap(o, self.var.dtype) - self.var
    def __mul__(self, o): return self.var * o
    def __rmul__(self, o): return wrap(o, self.var.dtype) * self.var
    def __floordiv__(self, o): return self.var // o
    def __mod__(self, o): return self.var % o
    def __neg__(self): return -self.var

    def equal(self, o):
        return self.var.equal(o)


class PlaceholderOp:
    """What a placeholder's `.op` is (TVM: PlaceholderOp)."""

    def __init__(self, name="placeholder"):
        self.name = name
        self.input_tensors = []

    def output(self, index):
        if index != 0:
            raise InternalError(f"a placeholder has one output, not {index + 1}")
        return self.tensor


class _Op:
    """What every computing op answers with TVM's names: its output tensors by index (C.op.output(0))
    and how many there are; subclasses give `outputs`."""

    @property
    def num_outputs(self):
        return len(self.outputs)

    def output(self, index):
        outs = self.outputs
        if not 0 <= index < len(outs):
            raise InternalError(f"{self.name} has {len(outs)} outputs, not {index + 1}")
        return outs[index]


class ComputeOp(_Op):
    tag = ""                 # TVM's op tag (topi's kinds: "elemwise", "broadcast", ...)

    def __init__(self, axes, body, name="compute"):
        self.axes, self.body, self.name = axes, body, name
        self._axis = None

    @property
    def axis(self):
        """The output's axes, outermost first, as IterVars over [0, shape) (TVM: C.op.axis)."""
        if self._axis is None:
            self._axis = [IterVar(v, 0, d) for v, d in zip(self.axes, self.tensor.shape)]
        return list(self._axis)

    @property
    def reduce_axis(self):
        """The axes of the reduction, if the body is one (TVM: C.op.reduce_axis)."""
        return list(self.body.axes) if isinstance(self.body, Reduce) else []

    @property
    def input_tensors(self):
        from ..tir.expr import walk
        seen, out = set(), []
        for e in (x for b in self.bodies for x in walk(b)):
            if isinstance(e, TensorRef) and e.tensor.uid not in seen:
                seen.add(e.tensor.uid)
                out.append(e.tensor)
        return out

    @property
    def bodies(self):
        """One expression per output (an op of several outputs: te.compute returning a tuple)."""
        return getattr(self, "_bodies", None) or [self.body]

    @property
    def outputs(self):
        return getattr(self, "_outputs", None) or [self.tensor]

    def __repr__(self):
        return f"compute({self.name})"


class Tensor:
    value_index = 0          # which output of its op (an op of several outputs: te.compute of a tuple)
    def __init__(self, name, shape, dtype, op):
        # a dimension is an int or an expression of te.var sizes (fixed by aot.build)
        self.name, self.dtype, self.op = name, dtype, op
        self.shape = tuple(_dim(s, name) for s in shape)
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

    @property
    def axis(self):
        return self.op.axis

    def __getitem__(self, indices):
        """A[i, k] as TVM writes it (a reduce axis may be given as its IterVar)."""
        return self(*indices) if isinstance(indices, tuple) else self(indices)

    def flat(self, index):
        """Element `index` of the tensor in row-major order (reshape without index math)."""
        return TensorRef(self, [wrap(index)], flat=True)

    def __repr__(self):
        return f"Tensor(shape={list(self.shape)}, op.name={self.name})"

    # TVM's te.Tensor arithmetic: elementwise, numpy broadcasting (topi's add, multiply, ...)
    def __add__(self, o): return _binary(self, o, "+", "T_add")
    def __radd__(self, o): return _binary(o, self, "+", "T_add")
    def __sub__(self, o): return _binary(self, o, "-", "T_subtract")
    def __rsub__(self, o): return _binary(o, self, "-", "T_subtract")
    def __mul__(self, o): return _binary(self, o, "*", "T_multiply")
    def __rmul__(self, o): return _binary(o, self, "*", "T_multiply")
    def __truediv__(self, o): return _binary(self, o, "/", "T_divide")
    def __rtruediv__(self, o): return _binary(o, self, "/", "T_divide")
    def __neg__(self): return compute(self.shape, lambda *i: -self(*i), "T_negative")


def _dim(s, what):
    """A shape entry as an int or an expression of te.var sizes. A float that is a whole number
    (TVM's tutorials write N / bn) is that integer, as TVM's te takes it."""
    if isinstance(s, Expr) and not isinstance(s, Const):
        if s.dtype not in ("int32", "int64"):
            raise InternalError(f"{what}: a dimension is an integer expression, not {s.dtype}")
        return s
    v = getattr(s, "value", s)
    if isinstance(v, float):
        if not v.is_integer():
            from ..errors import AotError
            raise AotError(f"{what}: dimension {v} is not a whole number")
    return int(v)


def _binary(a, b, op, name):
    """a op b for tensors or scalars, broadcast as numpy does (right-aligned, size-1 dims stretch)."""
    from ..errors import AotError
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    dtype = a.dtype if ta else b.dtype
    sa, sb = (a.shape if ta else ()), (b.shape if tb else ())
    n = len(sa) if len(sa) >= len(sb) else len(sb)
    pa, pb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    shape = []
    for x, y in zip(pa, pb):
        if isinstance(x, int) and x == 1:
            shape.append(y)
        elif isinstance(y, int) and y == 1 or x is y or (isinstance(x, int) and isinstance(y, int) and x == y):
            shape.append(x)
        elif isinstance(x, Expr) and isinstance(y, Expr) and x.key() == y.key():
            shape.append(x)
        else:
            raise AotError(f"{name}: shapes {list(sa)} and {list(sb)} do not broadcast")

    def read(t, s, idx):
        if not isinstance(t, Tensor):
            return wrap(t, dtype)
        return t(*broadcast_index(idx, s)) if s else t()

    def f(*i):
        x, y = read(a, sa, list(i)), read(b, sb, list(i))
        from ..tir.expr import Bin
        return Bin(op, x, y)
    return compute(tuple(shape), f, name)


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

    def __repr__(self):
        return f"{self.tensor.name}[{', '.join(repr(i) for i in self.indices)}]"


COMBINERS = ("sum", "max", "min", "prod")


def combine(combiner):
    """The loop-IR combining function of a reduction: acc, element -> acc. max/min propagate NaN
    (numpy, the ONNX reference): `a > b ? a : b` would keep or drop a NaN depending on where it
    falls in the loop order."""
    if isinstance(combiner, CommReducer):
        return combiner.combine
    return {"sum": lambda a, b: a + b, "prod": lambda a, b: a * b, "max": max_nan, "min": min_nan}[combiner]


class CommReducer:
    """te.comm_reducer(fcombine, fidentity, name): a commutative reduction of the user's own;
    called like te.sum (expr, axis, where=None, init=None)."""

    def __init__(self, fcombine, fidentity, name="reduce"):
        self.fcombine, self.fidentity, self.name = fcombine, fidentity, name

    def combine(self, a, b):
        r = self.fcombine(a, b)
        if isinstance(r, (tuple, list)):
            from ..errors import AotError
            raise AotError(f"comm_reducer {self.name}: a reducer of several values (a tuple) is not supported")
        return wrap(r, a.dtype)

    def identity(self, dtype):
        return wrap(self.fidentity(dtype), dtype)

    def __call__(self, expr, axis, where=None, init=None):
        if isinstance(expr, (tuple, list)):           # a reducer of several values: one Reduce each
            axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
            srcs = [wrap(e, "float32") for e in expr]
            if where is not None:
                from ..tir.expr import Select
                ids = self.fidentity(*[x.dtype for x in srcs])
                srcs = [Select(wrap(where, "bool"), x, wrap(i, x.dtype)) for x, i in zip(srcs, ids)]
            inits = list(init) if init is not None else [None] * len(srcs)
            return tuple(Reduce(self, x, axes, i, srcs, k) for k, (x, i) in enumerate(zip(srcs, inits)))
        return _reduce(self, expr, axis, where, init)

    def combine_all(self, xs, ys):
        """The new values of a reducer of several values, from the old ones and the elements."""
        r = self.fcombine(tuple(xs), tuple(ys))
        return [wrap(v, x.dtype) for v, x in zip(r, xs)]

    def __repr__(self):
        return f"comm_reducer({self.name})"


def comm_reducer(fcombine, fidentity, name="reduce"):
    return CommReducer(fcombine, fidentity, name)


class Reduce(Expr):
    """A reduction over `axes`. A reducer of several values (te.comm_reducer over a tuple, as
    argmax) gives one Reduce per value, each with all the sources and its value_index."""
    __slots__ = ("combiner", "sources", "value_index", "axes", "init")

    def __init__(self, combiner, source: Expr, axes, init=None, sources=None, value_index=0):
        if not isinstance(combiner, CommReducer) and combiner not in COMBINERS:
            raise InternalError(f"unknown combiner {combiner!r}")
        self.combiner, self.axes = combiner, list(axes)
        self.sources, self.value_index = tuple(sources) if sources is not None else (source,), value_index
        self.dtype = source.dtype
        if init is not None:
            self.init = wrap(init, source.dtype)
        elif len(self.sources) > 1:
            self.init = wrap(combiner.fidentity(*[x.dtype for x in self.sources])[value_index], source.dtype)
        else:
            self.init = identity(combiner, source.dtype)
        self._key = None

    @property
    def source(self):
        return self.sources[self.value_index]

    def _make_key(self):
        c = self.combiner if isinstance(self.combiner, str) else ("comm", id(self.combiner))
        return ("reduce", c, tuple(x.key() for x in self.sources), self.value_index, tuple(id(a.var) for a in self.axes))

    def __repr__(self):
        c = self.combiner if isinstance(self.combiner, str) else self.combiner.name
        axes = ", ".join(repr(a) for a in self.axes)
        src = ", ".join(repr(x) for x in self.sources)
        return (f"reduce(combiner={c}, source=[{src}], init=[], axis=[{axes}], where=(bool)1, "
                f"value_index={self.value_index})")

    def _children(self):
        return self.sources

    def _rebuild(self, kids):
        return Reduce(self.combiner, kids[self.value_index], self.axes, self.init, kids, self.value_index)


def identity(combiner, dtype):
    import numpy as np
    from ..tir.expr import is_float
    if isinstance(combiner, CommReducer):
        return combiner.identity(dtype)
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


def var(name="tindex", dtype="int32", span=None) -> Var:
    """te.var("n"): a size left symbolic in shapes, extents and indices; aot.build makes a module
    that takes it from its arguments' shapes at each call. te.var("bias", dtype="float32"): a
    scalar that a built function takes as an argument of its own (aot.build(s, [A, B, D, bias]))."""
    from ..tir.expr import is_float
    if dtype in ("int32", "int64"):
        return Var(name, INDEX)
    if is_float(str(dtype)):
        return Var(name, str(dtype))
    from ..errors import AotError
    raise AotError(f"te.var {name}: a variable is a size (int32, int64) or a float scalar, not {dtype}")


size_var = var


def placeholder(shape, dtype="float32", name="placeholder") -> Tensor:
    shape = shape if isinstance(shape, (tuple, list)) else (shape,)
    op = PlaceholderOp(name)
    op.tensor = Tensor(name, shape, dtype or "float32", op)
    return op.tensor


def compute(shape, fcompute, name="compute", axis_names=None) -> Tensor:
    shape = shape if isinstance(shape, (tuple, list)) else (shape,)
    names = axis_names or [f"i{k}" for k in range(len(shape))]
    axes = [Var(n, INDEX) for n in names]
    res = fcompute(*axes)
    if isinstance(res, (tuple, list)):          # several outputs over the same axes (TVM: B.v0, B.v1)
        bodies = [wrap(b, "float32") for b in res]
        op = ComputeOp(axes, bodies[0], name)
        op._bodies = bodies
        op._outputs = [Tensor(f"{name}.v{k}", shape, b.dtype, op) for k, b in enumerate(bodies)]
        for k, t in enumerate(op._outputs):
            t.value_index = k
        op.tensor = op._outputs[0]
        return list(op._outputs)
    body = wrap(res, "float32")
    op = ComputeOp(axes, body, name)
    op.tensor = Tensor(name, shape, body.dtype, op)
    return op.tensor


def min_value(dtype):
    """The smallest value of dtype (TVM: te.min_value): -inf for floats."""
    return identity("max", dtype)


def max_value(dtype):
    return identity("min", dtype)


def tvm_compute(shape, fcompute, name="compute", tag="", attrs=None):
    """TVM's te.compute: the axes are named after fcompute's parameters (i0, i1, ... for *args).
    (A list in tag's place names the axes, as this module's own compute takes them.)"""
    import inspect
    shape = shape if isinstance(shape, (tuple, list)) else (shape,)
    if isinstance(tag, (list, tuple)):
        return compute(shape, fcompute, name, list(tag))
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if params and all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) \
            and len(params) == len(shape):
        names = [p.name for p in params]
    else:
        names = [f"i{k}" for k in range(len(shape))]
    out = compute(shape, fcompute, name, names)
    op = (out[0] if isinstance(out, list) else out).op
    op.tag, op.attrs = tag, dict(attrs or {})
    return out


def reduce_axis(extent, name="rv", min=0) -> IterVar:
    """reduce_axis(extent, name) or, as TVM writes it, reduce_axis((lo, hi), name)."""
    if isinstance(extent, (tuple, list)):
        lo, hi = extent
        ext = hi - lo if isinstance(lo, int) and isinstance(hi, int) else wrap(hi) - wrap(lo)
        return IterVar(Var(name, INDEX), lo, ext, IterVar.CommReduce)
    return IterVar(Var(name, INDEX), min, extent, IterVar.CommReduce)


def _reduce(combiner, expr, axis, where=None, init=None):
    from ..tir.expr import Select
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    expr = wrap(expr, "float32")
    if where is not None:
        expr = Select(wrap(where, "bool"), expr, identity(combiner, expr.dtype))
    return Reduce(combiner, expr, axes, init)


def sum(expr, axis, where=None, init=None):
    return _reduce("sum", expr, axis, where, init)


def max(expr, axis, where=None, init=None):
    return _reduce("max", expr, axis, where, init)


def min(expr, axis, where=None, init=None):
    return _reduce("min", expr, axis, where, init)


def prod(expr, axis, where=None, init=None):
    return _reduce("prod", expr, axis, where, init)


def broadcast_index(out_idx, in_shape):
    """Indices into an input of shape in_shape for numpy-style broadcasting to out_idx."""
    off = len(out_idx) - len(in_shape)
    return [Const(0, INDEX) if isinstance(d, int) and d == 1 else out_idx[off + k] for k, d in enumerate(in_shape)]


class ScanOp(_Op):
    """te.scan(init, update, state_placeholder): state[t] for t from init's length on is update's
    value at t, which may read state at earlier steps; init gives the first steps. Each output is
    one state (init, update and the state placeholder all stand for its buffer)."""

    def __init__(self, name, init, update, states, inputs):
        self.name, self.init, self.update, self.states, self.inputs = name, init, update, states, inputs
        steps, first = states[0].shape[0], init[0].shape[0]
        ext = steps - first if isinstance(steps, int) and isinstance(first, int) else wrap(steps) - first
        self.scan_axis = IterVar(Var(f"{name}.idx", INDEX), first, ext, IterVar.Ordered)
        self._outputs = [Tensor(name if len(states) == 1 else f"{name}.v{k}", s.shape, s.dtype, self)
                         for k, s in enumerate(states)]
        for k, t in enumerate(self._outputs):
            t.value_index = k
        self.tensor = self._outputs[0]

    axis, reduce_axis, bodies, axes = [], [], [], []

    @property
    def outputs(self):
        return list(self._outputs)

    @property
    def input_tensors(self):
        return list(self.init) + list(self.update) + list(self.inputs)

    def __repr__(self):
        return f"scan({self.name})"


def scan(init, update, state_placeholder, inputs=None, name="scan", tag="", attrs=None):
    """TVM's te.scan: a tensor (a list of them for lists) computed step by step along its first axis."""
    from ..errors import AotError
    many = isinstance(init, (list, tuple))
    init, update = (list(init), list(update)) if many else ([init], [update])
    states = list(state_placeholder) if many else [state_placeholder]
    if not (len(init) == len(update) == len(states)):
        raise AotError(f"scan {name}: init, update and state_placeholder differ in number")
    for i, u, s in zip(init, update, states):
        if u.shape[1:] != s.shape[1:] or i.shape[1:] != s.shape[1:] or u.dtype != s.dtype or i.dtype != s.dtype:
            raise AotError(f"scan {name}: init {i.name}, update {u.name} and state {s.name} differ in shape or type "
                           "past the scan axis")
    op = ScanOp(name, init, update, states, list(inputs or []))
    return op.outputs if many else op.outputs[0]


class ExternOp(_Op):
    """te.extern's op: its outputs are written by a statement of the user's (typically a
    tir.call_packed or call_extern of the buffers), built once with buffers of its own for the
    inputs and outputs, which lowering binds to the tensors' real buffers (TVM's ExternOp)."""
    axis, reduce_axis, bodies, axes = [], [], [], []

    def __init__(self, name, inputs, input_placeholders, output_placeholders, body, shapes, dtypes, tag="",
                 attrs=None):
        self.name, self.inputs, self.tag, self.attrs = name, list(inputs), tag, dict(attrs or {})
        self.input_placeholders, self.output_placeholders = list(input_placeholders), list(output_placeholders)
        self.body = body
        self._outputs = [Tensor(name if len(shapes) == 1 else f"{name}.v{k}", sh, dt, self)
                         for k, (sh, dt) in enumerate(zip(shapes, dtypes))]
        for k, t in enumerate(self._outputs):
            t.value_index = k
        self.tensor = self._outputs[0]

    @property
    def outputs(self):
        return list(self._outputs)

    @property
    def input_tensors(self):
        return list(self.inputs)

    def __repr__(self):
        return f"extern({self.name})"


def extern(shape, inputs, fcompute, name="extern", dtype=None, in_buffers=None, out_buffers=None, tag="",
           attrs=None):
    """TVM's te.extern: output tensor(s) of `shape` (a list of shapes for several) computed by
    fcompute(ins, outs) -> a statement (or a call, evaluated), ins and outs being buffers."""
    from ..errors import AotError
    from ..tir.expr import Expr as _Expr
    from ..tir.op import decl_buffer
    from ..tir.stmt import Evaluate, Stmt
    many = isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple))
    shapes = [tuple(x) for x in shape] if many else [tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)]
    inputs = list(inputs)
    if any(not isinstance(t, Tensor) for t in inputs):
        raise AotError(f"te.extern {name}: inputs are tensors")
    dtypes = dtype if isinstance(dtype, (list, tuple)) else [dtype or (inputs[0].dtype if inputs else "float32")] \
        * len(shapes)
    ins = list(in_buffers) if in_buffers is not None else \
        [decl_buffer(t.shape, t.dtype, t.name) for t in inputs]
    outs = list(out_buffers) if out_buffers is not None else \
        [decl_buffer(sh, dt, name if len(shapes) == 1 else f"{name}.v{k}")
         for k, (sh, dt) in enumerate(zip(shapes, dtypes))]
    if len(ins) != len(inputs) or len(outs) != len(shapes):
        raise AotError(f"te.extern {name}: {len(ins)} in_buffers for {len(inputs)} inputs, "
                       f"{len(outs)} out_buffers for {len(shapes)} outputs")
    body = fcompute(ins, outs)
    if isinstance(body, _Expr):
        body = Evaluate(body)
    if not isinstance(body, Stmt):
        raise AotError(f"te.extern {name}: fcompute returns a statement or a call, not {type(body).__name__}")
    op = ExternOp(name, inputs, ins, outs, body, shapes, dtypes, tag, attrs)
    return op.outputs if many else op.outputs[0]


class TensorIntrin:
    """te.decl_tensor_intrin's result: the computation `op` it replaces, the buffers its inputs and
    output are bound through (binds=, else compact ones), and the statements intrin_func gave: the
    body alone, or (body, reduce_reset, reduce_update)."""

    def __init__(self, op, buffers, body, reset, update, name):
        self.op, self.buffers, self.body, self.reduce_init, self.reduce_update = op, buffers, body, reset, update
        self.name = name

    def __repr__(self):
        return f"TensorIntrin({self.name})"


def decl_tensor_intrin(op, fcompute, name="tensor_intrin", binds=None, scalar_params=None, default_buffer_params=None):
    """TVM's te.decl_tensor_intrin(c.op, intrin_func, binds={a: Ab, ...})."""
    from ..errors import AotError
    from ..tir.expr import Expr as _Expr
    from ..tir.op import decl_buffer
    from ..tir.stmt import Evaluate, Stmt
    if not isinstance(op, ComputeOp) or len(op.outputs) != 1:
        raise AotError(f"decl_tensor_intrin {name}: the op is a te.compute of one output")
    if scalar_params:
        raise AotError(f"decl_tensor_intrin {name}: scalar_params are not supported")
    binds = dict(binds or {})
    tensors = list(op.input_tensors) + [op.tensor]
    bufs = []
    for t in tensors:
        b = next((v for k, v in binds.items() if k is t), None)
        bufs.append(b if b is not None else decl_buffer(t.shape, t.dtype, t.name, offset_factor=1))
    got = fcompute(bufs[:-1], bufs[-1:])

    def stmt(x, what):
        if x is None:
            return None
        if isinstance(x, _Expr):
            return Evaluate(x)
        if not isinstance(x, Stmt):
            raise AotError(f"decl_tensor_intrin {name}: its {what} is a statement, not {type(x).__name__}")
        return x
    if isinstance(got, (list, tuple)):
        if len(got) != 3:
            raise AotError(f"decl_tensor_intrin {name}: intrin_func returns a body or (body, reset, update), "
                           f"not {len(got)} statements")
        body, reset, update = (stmt(x, w) for x, w in zip(got, ("body", "reset", "update")))
    else:
        body, reset, update = stmt(got, "body"), None, None
    return TensorIntrin(op, bufs, body, reset, update, name)
