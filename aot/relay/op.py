"""Relay operators: each is a constructor with TVM's name and arguments, and its lowering onto
the registered graph ops (aot/ops/) with their canonical (ONNX) attributes, written together
(one relay op, one place). `param_shapes` gives the shape of an argument left untyped (a weight
declared as relay.var("weight")) from the typed ones, as TVM's type relations do.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from ..errors import AotError
from .expr import Call, Tuple, TupleWrapper, as_expr, const
from .printer import defaults


@dataclass
class RelayOp:
    lower: object                 # (builder, call, input values) -> value | list of values
    param_shapes: object = None   # (call, [shape or None per argument]) -> {argument index: shape}
    outputs: int = 1


OPS: dict = {}


def register(name, lower, param_shapes=None, outputs=1):
    OPS[name] = RelayOp(lower, param_shapes, outputs)


def make(name, args, _outputs=None, **attrs):
    """A call of relay op `name`; _outputs: the number of outputs of an op whose count depends on
    its attributes (split)."""
    call = Call(name, [as_expr(a) for a in args], attrs)
    n = _outputs or OPS[name].outputs
    return TupleWrapper(call, n) if n > 1 else call


def ints(v, n):
    """An int or a sequence as a list of n ints."""
    v = [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
    return v * n if len(v) == 1 else v


def pads_2d(padding):
    """TVM's padding: one int, (vertical, horizontal) or (top, left, bottom, right) -> ONNX pads."""
    p = ints(padding, 1)
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return [p[0], p[1], p[0], p[1]]
    if len(p) == 4:
        return p
    raise AotError(f"padding {padding} has {len(p)} values: give 1, 2 or 4")


def shape_const(b, values):
    return b.const("shape", np.asarray(values, np.int64))


# -- elementwise --------------------------------------------------------------------------------------
_BINARY = {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "power": "Pow",
           "maximum": "Max", "minimum": "Min", "equal": "Equal", "less": "Less", "greater": "Greater"}
_UNARY = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sigmoid": "Sigmoid", "tanh": "Tanh", "negative": "Neg",
          "abs": "Abs", "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "round": "Round", "sin": "Sin",
          "cos": "Cos", "nn.relu": "Relu"}


def same_shape(call, shapes):
    known = next((s for s in shapes if s is not None), None)
    return {k: known for k, s in enumerate(shapes) if s is None and known is not None}


for _name, _onnx in _BINARY.items():
    register(_name, lambda b, c, ins, _o=_onnx: b.op(_o, ins), same_shape)
for _name, _onnx in _UNARY.items():
    register(_name, lambda b, c, ins, _o=_onnx: b.op(_o, ins), same_shape)


def add(lhs, rhs):
    return make("add", [lhs, rhs])


def subtract(lhs, rhs):
    return make("subtract", [lhs, rhs])


def multiply(lhs, rhs):
    return make("multiply", [lhs, rhs])


def divide(lhs, rhs):
    return make("divide", [lhs, rhs])


def power(lhs, rhs):
    return make("power", [lhs, rhs])


def maximum(lhs, rhs):
    return make("maximum", [lhs, rhs])


def minimum(lhs, rhs):
    return make("minimum", [lhs, rhs])


def equal(lhs, rhs):
    return make("equal", [lhs, rhs])


def less(lhs, rhs):
    return make("less", [lhs, rhs])


def greater(lhs, rhs):
    return make("greater", [lhs, rhs])


def exp(x):
    return make("exp", [x])


def log(x):
    return make("log", [x])


def sqrt(x):
    return make("sqrt", [x])


def sigmoid(x):
    return make("sigmoid", [x])


def tanh(x):
    return make("tanh", [x])


def negative(x):
    return make("negative", [x])


def abs(x):        # noqa: A001  (TVM's name)
    return make("abs", [x])


def erf(x):
    return make("erf", [x])


def floor(x):
    return make("floor", [x])


def ceil(x):
    return make("ceil", [x])


def round(x):      # noqa: A001
    return make("round", [x])


def sin(x):
    return make("sin", [x])


def cos(x):
    return make("cos", [x])


def clip(a, a_min, a_max):
    return make("clip", [a], a_min=float(a_min), a_max=float(a_max))


def _clip(b, c, ins):
    dt = ins[0].type.dtype
    return b.op("Clip", [ins[0], b.const("min", np.asarray(c.attrs["a_min"], dt)),
                         b.const("max", np.asarray(c.attrs["a_max"], dt))])


register("clip", _clip, same_shape)


def fixed_point_multiply(x, multiplier, shift):
    """TVM's fixed_point_multiply: int32 x times multiplier * 2^(shift - 31) (multiplier a Q31
    number), rounded half up (aot/ops/qarith.py FixedPointMultiply)."""
    return make("fixed_point_multiply", [x], multiplier=int(multiplier), shift=int(shift))


def _fixed_point_multiply(b, c, ins):
    a = c.attrs
    if ins[0].type.dtype != "int32":
        raise AotError(f"fixed_point_multiply: the data is {ins[0].type.dtype}, not int32")
    if not -(1 << 31) <= a["multiplier"] < (1 << 31):
        raise AotError(f"fixed_point_multiply: multiplier {a['multiplier']} is not an int32")
    if not -31 <= a["shift"] <= 31:
        raise AotError(f"fixed_point_multiply: shift {a['shift']} is not in -31..31")
    return b.op("FixedPointMultiply", [ins[0]], {"multiplier": a["multiplier"], "shift": a["shift"]})


register("fixed_point_multiply", _fixed_point_multiply, same_shape)


# -- shapes and data movement -------------------------------------------------------------------------
def reshape(data, newshape):
    return make("reshape", [data], newshape=[int(d) for d in ints(newshape, 1)])


def _reshape(b, c, ins):
    shape = c.attrs["newshape"]
    if any(d < -1 for d in shape):
        raise AotError(f"reshape: the special values {sorted(d for d in shape if d < -1)} of TVM's newshape are "
                       "not supported (0 copies a dimension, -1 infers one)")
    return b.op("Reshape", [ins[0], shape_const(b, shape)])


register("reshape", _reshape)


def reshape_like(data, shape_like):
    """data with the shape of shape_like (the same number of elements)."""
    return make("reshape_like", [data, shape_like])


def _reshape_like(b, c, ins):
    src, like = ins[0].type.shape, ins[1].type.shape
    if int(np.prod(src)) != int(np.prod(like)):
        raise AotError(f"reshape_like: data of shape {list(src)} has {int(np.prod(src))} elements, shape_like "
                       f"{list(like)} has {int(np.prod(like))}")
    return b.op("Reshape", [ins[0], shape_const(b, list(like))])


register("reshape_like", _reshape_like)


def transpose(data, axes=None):
    return make("transpose", [data], axes=None if axes is None else [int(a) for a in axes])


register("transpose", lambda b, c, ins: b.op("Transpose", ins, {} if c.attrs["axes"] is None
                                             else {"perm": c.attrs["axes"]}))


def layout_transform(data, src_layout, dst_layout):
    """data laid out as src_layout (letters naming its axes, "NCHW") rearranged to dst_layout
    ("NHWC"). Layouts here are permutations of the same axes; a packed layout (NCHW4c, whose
    lower-case letters split an axis) is refused, as the graph IR has no such split."""
    for lay in (src_layout, dst_layout):
        if not (isinstance(lay, str) and lay.isalpha() and lay.isupper() and len(set(lay)) == len(lay)):
            raise AotError(f"layout_transform: layout {lay!r} is not supported: only permutations of whole axes "
                           "(\"NCHW\" to \"NHWC\", ...), not packed layouts such as NCHW4c")
    if sorted(src_layout) != sorted(dst_layout):
        raise AotError(f"layout_transform: {src_layout!r} and {dst_layout!r} do not name the same axes")
    return make("layout_transform", [data], src_layout=src_layout, dst_layout=dst_layout)


def layout_perm(src_layout, dst_layout):
    """The transpose axes taking src_layout to dst_layout."""
    return [src_layout.index(ax) for ax in dst_layout]


def _layout_transform(b, c, ins):
    src, dst = c.attrs["src_layout"], c.attrs["dst_layout"]
    if len(ins[0].type.shape) != len(src):
        raise AotError(f"layout_transform: layout {src!r} has {len(src)} axes, its data {len(ins[0].type.shape)}")
    return b.op("Transpose", ins, {"perm": layout_perm(src, dst)})


register("layout_transform", _layout_transform)


def squeeze(data, axis=None):
    return make("squeeze", [data], axis=None if axis is None else [int(a) for a in ints(axis, 1)])


def _squeeze(b, c, ins):
    axes = c.attrs["axis"]
    if axes is None:
        axes = [d for d, n in enumerate(ins[0].type.shape) if n == 1]
    return b.op("Squeeze", [ins[0], shape_const(b, axes)])


register("squeeze", _squeeze)


def expand_dims(data, axis, num_newaxis=1):
    return make("expand_dims", [data], axis=int(axis), num_newaxis=int(num_newaxis))


def _expand_dims(b, c, ins):
    rank = len(ins[0].type.shape)
    a = c.attrs["axis"] + (rank + 1 if c.attrs["axis"] < 0 else 0)
    return b.op("Unsqueeze", [ins[0], shape_const(b, list(range(a, a + c.attrs["num_newaxis"])))])


register("expand_dims", _expand_dims)


def concatenate(data, axis):
    fields = data.fields if isinstance(data, Tuple) else list(data)
    return make("concatenate", fields, axis=int(axis))


register("concatenate", lambda b, c, ins: b.op("Concat", ins, {"axis": c.attrs["axis"]}))


def _reduce(onnx_op):
    def lower(b, c, ins):
        axis = c.attrs["axis"]
        rank = len(ins[0].type.shape)
        axes = list(range(rank)) if axis is None else [a % rank for a in axis]
        if c.attrs["exclude"]:
            axes = [d for d in range(rank) if d not in axes]
        return b.op(onnx_op, [ins[0], shape_const(b, axes)], {"keepdims": int(c.attrs["keepdims"])})
    return lower


for _name, _onnx in (("sum", "ReduceSum"), ("mean", "ReduceMean"), ("max", "ReduceMax"), ("min", "ReduceMin"),
                     ("prod", "ReduceProd")):
    register(_name, _reduce(_onnx))


def _reduction(name):
    def fn(data, axis=None, keepdims=False, exclude=False):
        return make(name, [data], axis=None if axis is None else ints(axis, 1), keepdims=bool(keepdims),
                    exclude=bool(exclude))
    fn.__name__ = name
    return fn


for _name in ("sum", "mean", "max", "min", "prod"):
    defaults(_name, keepdims=False, exclude=False)
defaults("expand_dims", num_newaxis=1)
defaults("take", mode="clip")
defaults("strided_slice", slice_mode="end")
defaults("argmax", keepdims=False, select_last_index=False)
defaults("argmin", keepdims=False, select_last_index=False)
sum = _reduction("sum")      # noqa: A001  (TVM's names)
mean = _reduction("mean")
max = _reduction("max")      # noqa: A001
min = _reduction("min")      # noqa: A001
prod = _reduction("prod")



# -- more of TVM's top-level ops ----------------------------------------------------------------------
def onnx_dtype_code(dtype):
    from ..ops.registry import ONNX_DTYPES
    want = str(np.dtype(dtype))
    code = next((k for k, v in ONNX_DTYPES.items() if v == want), None)
    if code is None:
        raise AotError(f"cast: dtype {want} is not supported")
    return code


def cast(data, dtype):
    return make("cast", [data], dtype=str(np.dtype(dtype)))


register("cast", lambda b, c, ins: b.op("Cast", ins, {"to": onnx_dtype_code(c.attrs["dtype"])}))


def rsqrt(x):
    return make("rsqrt", [x])


register("rsqrt", lambda b, c, ins: b.op("Reciprocal", [b.op("Sqrt", ins)]), same_shape)
for _name, _onnx in {"less_equal": "LessOrEqual", "greater_equal": "GreaterOrEqual", "logical_and": "And",
                     "logical_or": "Or", "logical_xor": "Xor"}.items():
    register(_name, lambda b, c, ins, _o=_onnx: b.op(_o, ins), same_shape)
register("not_equal", lambda b, c, ins: b.op("Not", [b.op("Equal", ins)]), same_shape)
register("logical_not", lambda b, c, ins: b.op("Not", ins), same_shape)
register("where", lambda b, c, ins: b.op("Where", ins))


def less_equal(lhs, rhs):
    return make("less_equal", [lhs, rhs])


def greater_equal(lhs, rhs):
    return make("greater_equal", [lhs, rhs])


def not_equal(lhs, rhs):
    return make("not_equal", [lhs, rhs])


def logical_and(lhs, rhs):
    return make("logical_and", [lhs, rhs])


def logical_or(lhs, rhs):
    return make("logical_or", [lhs, rhs])


def logical_xor(lhs, rhs):
    return make("logical_xor", [lhs, rhs])


def logical_not(data):
    return make("logical_not", [data])


def where(condition, x, y):
    return make("where", [condition, x, y])


def take(data, indices, axis=None, batch_dims=0, mode="clip"):
    """Elements of data at indices along axis (the flattened data when axis is None). TVM's modes:
    "clip" clamps an index into range, "wrap" takes it modulo the size, "fast" trusts it."""
    if batch_dims:
        raise AotError("take: batch_dims is not supported")
    if mode not in ("clip", "wrap", "fast"):
        raise AotError(f"take: mode {mode!r} is not one of clip, wrap, fast")
    return make("take", [data, indices], axis=None if axis is None else int(axis), mode=mode)


def _take(b, c, ins):
    x, ind = ins
    axis = c.attrs["axis"]
    if axis is None:
        x = b.op("Reshape", [x, shape_const(b, [-1])])
        axis = 0
    n = x.type.shape[axis % len(x.type.shape)]
    dt = ind.type.dtype
    if c.attrs["mode"] == "clip":
        ind = b.op("Clip", [ind, b.const("lo", np.asarray(0, dt)), b.const("hi", np.asarray(n - 1, dt))])
    elif c.attrs["mode"] == "wrap":
        ind = b.op("Mod", [ind, b.const("n", np.asarray(n, dt))], {"fmod": 0})
    return b.op("Gather", [x, ind], {"axis": axis})


register("take", _take)


def _arg(name, onnx_op):
    def fn(data, axis=None, keepdims=False, exclude=False, select_last_index=False):
        if exclude:
            raise AotError(f"{name}: exclude=True is not supported")
        axes = None if axis is None else ints(axis, 1)
        if axes is not None and len(axes) != 1:
            raise AotError(f"{name}: one axis at a time (axis={axis})")
        return make(name, [data], axis=None if axes is None else axes[0], keepdims=bool(keepdims),
                    select_last_index=bool(select_last_index))
    fn.__name__ = name

    def lower(b, c, ins):
        x = ins[0]
        axis = c.attrs["axis"]
        if axis is None:          # over all elements: the flattened tensor
            x = b.op("Reshape", [x, shape_const(b, [-1])])
            axis = 0
        y = b.op(onnx_op, [x], {"axis": axis, "keepdims": int(c.attrs["keepdims"]),
                                "select_last_index": int(c.attrs["select_last_index"])})
        if c.attrs["axis"] is None and c.attrs["keepdims"]:
            y = b.op("Reshape", [y, shape_const(b, [1] * len(ins[0].type.shape))])
        return b.op("Cast", [y], {"to": onnx_dtype_code("int32")})      # TVM's index type
    register(name, lower)
    return fn


argmax = _arg("argmax", "ArgMax")
argmin = _arg("argmin", "ArgMin")


def stack(data, axis):
    fields = data.fields if isinstance(data, Tuple) else list(data)
    return make("stack", fields, axis=int(axis))


def _stack(b, c, ins):
    rank = len(ins[0].type.shape) + 1
    axis = c.attrs["axis"] % rank
    return b.op("Concat", [b.op("Unsqueeze", [x, shape_const(b, [axis])]) for x in ins], {"axis": axis})


register("stack", _stack)


def split(data, indices_or_sections, axis=0):
    """A tuple of parts: `indices_or_sections` equal sections, or the indices where parts start."""
    if isinstance(indices_or_sections, int):
        n, points = int(indices_or_sections), None
    else:
        points = [int(i) for i in indices_or_sections]
        n = len(points) + 1
    return make("split", [data], _outputs=n, sections=n if points is None else None, indices=points, axis=int(axis))


def _split(b, c, ins):
    x = ins[0]
    axis = c.attrs["axis"] % len(x.type.shape)
    size = x.type.shape[axis]
    if c.attrs["indices"] is None:
        n = c.attrs["sections"]
        if size % n:
            raise AotError(f"split: {size} elements along axis {axis} do not make {n} equal sections")
        sizes = [size // n] * n
    else:
        bounds = [0] + c.attrs["indices"] + [size]
        sizes = [hi - lo for lo, hi in zip(bounds, bounds[1:])]
        if any(s < 0 for s in sizes):
            raise AotError(f"split: indices {c.attrs['indices']} do not increase within {size}")
    outs = b.op("Split", [x, shape_const(b, sizes)], {"axis": axis}, n_outputs=len(sizes))
    return outs if isinstance(outs, list) else [outs]


register("split", _split)


def strided_slice(data, begin, end, strides=None, axes=None, slice_mode="end"):
    if slice_mode not in ("end", "size"):
        raise AotError(f"strided_slice: slice_mode {slice_mode!r} is not one of end, size")
    begin, end = [int(v) for v in begin], [int(v) for v in end]
    return make("strided_slice", [data], begin=begin, end=end,
                strides=None if strides is None else [int(v) for v in strides],
                axes=None if axes is None else [int(a) for a in axes], slice_mode=slice_mode)


def _strided_slice(b, c, ins):
    a = c.attrs
    rank = len(ins[0].type.shape)
    axes = a["axes"] if a["axes"] is not None else list(range(len(a["begin"])))
    steps = list(a["strides"] or [1]) if a["strides"] is not None else [1]
    steps = steps * len(axes) if len(steps) == 1 else steps
    ends = list(a["end"])
    if a["slice_mode"] == "size":       # end holds sizes; -1: to the end
        ends = [np.iinfo(np.int64).max if e < 0 else s + e for s, e in zip(a["begin"], ends)]
    return b.op("Slice", [ins[0], shape_const(b, a["begin"]), shape_const(b, ends),
                          shape_const(b, [x % rank for x in axes]), shape_const(b, steps)])


register("strided_slice", _strided_slice)


def tile(data, reps):
    return make("tile", [data], reps=[int(r) for r in reps])


def _tile(b, c, ins):
    reps = list(c.attrs["reps"])
    x = ins[0]
    rank = len(x.type.shape)
    if len(reps) > rank:           # TVM prepends unit dimensions to the data
        x = b.op("Reshape", [x, shape_const(b, [1] * (len(reps) - rank) + list(x.type.shape))])
    reps = [1] * (len(x.type.shape) - len(reps)) + reps
    return b.op("Tile", [x, shape_const(b, reps)])


register("tile", _tile)


def full(fill_value, shape=None, dtype="float32"):
    return make("full", [fill_value], shape=[int(d) for d in shape], dtype=str(np.dtype(dtype)))


def zeros(shape, dtype="float32"):
    return const(np.zeros(tuple(int(d) for d in shape), dtype))


def ones(shape, dtype="float32"):
    return const(np.ones(tuple(int(d) for d in shape), dtype))


def _full(b, c, ins):
    shape, dt = c.attrs["shape"], c.attrs["dtype"]
    return b.op("Expand", [b.op("Cast", ins, {"to": onnx_dtype_code(dt)}), shape_const(b, shape)])


register("full", _full)


def _like(name, fill):
    def fn(data):
        return make(name, [data])
    fn.__name__ = name
    register(name, lambda b, c, ins: b.const(name, np.full(ins[0].type.shape, fill, ins[0].type.dtype)))
    return fn


zeros_like = _like("zeros_like", 0)
ones_like = _like("ones_like", 1)


def full_like(data, fill_value):
    return make("full_like", [data, fill_value])


register("full_like", lambda b, c, ins: b.op("Expand", [b.op("Cast", [ins[1]], {"to": onnx_dtype_code(
    ins[0].type.dtype)}), shape_const(b, list(ins[0].type.shape))]))


# tvm.relay.op.contrib: TVM's BYOC partitioners; those this compiler refuses (cutlass) are
# installed there by aot/refused.py, importable as aot.relay.op.contrib.<name>
from ..refused import namespace  # noqa: E402

contrib = namespace(__name__ + ".contrib")
# what it holds that this compiler does: the CMSIS-NN partitioner (aot/relay/contrib_cmsisnn.py)
from . import contrib_cmsisnn as _cmsisnn  # noqa: E402

contrib.cmsisnn = sys.modules.setdefault(contrib.__name__ + ".cmsisnn", _cmsisnn)
