"""relay.transform.ConvertLayout's rewrite: the convolutions named in desired_layouts take the
data / kernel layouts asked for, with layout_transform ops where values change layout, as TVM's.
A converted value keeps its new layout through the ops that can take it (elementwise ops, batch
norm, pooling, further converted convolutions) and goes back to its original layout only where an
op needs that (dense, batch_flatten, softmax, the function's result), so a chain of convolutions
transforms its data once at each end; kernel transforms of constant weights fold away under
FoldConstant. The rewrite builds new expressions (the input function is not changed)."""
from __future__ import annotations

from ..errors import AotError
from .expr import Call, Constant, Function, Tuple, TupleGetItem, TupleWrapper
from .op import expand_dims, layout_transform

# ops whose output has the layout of their (one) tensor input, whatever it is
_UNARY = {"nn.relu", "nn.leaky_relu", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "negative", "abs", "erf",
          "floor", "ceil", "round", "sin", "cos", "clip", "cast", "nn.dropout", "copy"}
# elementwise ops on two broadcast operands
_BINARY = {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum"}
_POOLS = {"nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d"}
_DEFAULT_KERNEL = {"NCHW": "OIHW", "NHWC": "HWIO"}


def desired_layouts_of(desired_layouts):
    out = {}
    for op, lays in dict(desired_layouts).items():
        if op != "nn.conv2d":
            raise AotError(f"ConvertLayout: op {op!r} is not supported (this compiler converts nn.conv2d only)")
        lays = list(lays)
        if not 1 <= len(lays) <= 2:
            raise AotError(f"ConvertLayout: {op} takes [data_layout, kernel_layout], not {lays!r}")
        data = lays[0]
        kernel = lays[1] if len(lays) == 2 and lays[1] != "default" else _DEFAULT_KERNEL.get(data)
        if (data, kernel) not in (("NCHW", "OIHW"), ("NHWC", "HWIO"), ("NHWC", "OHWI"), ("NHWC", "HWOI")):
            raise AotError(f"ConvertLayout: nn.conv2d in layouts {data}/{kernel} is not supported (NCHW/OIHW, or "
                           "NHWC with HWIO, OHWI or HWOI)")
        out[op] = (data, kernel)
    return out


def convert_layout(func, desired_layouts):
    want = desired_layouts_of(desired_layouts)
    memo = {}
    layout = {}      # id(new expr) -> (its layout now, the layout the original expression had)
    norm_layout = {}  # id(converted batch norm) -> the layouts of its [0]

    def original(new):
        """new in the layout the original program expects."""
        if id(new) not in layout:
            return new
        now, orig = layout[id(new)]
        if now == "tuple0":         # a batch norm's whole tuple: the norm as it was
            return orig
        return layout_transform(new, now, orig)

    def to_layout(new, old_layout, target):
        if id(new) in layout:
            now, _ = layout[id(new)]
            return new if now == target else layout_transform(new, now, target)
        return new if old_layout == target else layout_transform(new, old_layout, target)

    def rank(e):
        t = getattr(e, "checked_type", None)
        return len(t.shape) if t is not None and hasattr(t, "shape") else None

    def tag(new, now, orig):
        if now != orig:
            layout[id(new)] = (now, orig)
        return new

    def call(e, args):
        op, a = e.op, dict(e.attrs)
        tagged = [id(x) in layout for x in args]
        if op == "nn.conv2d" and op in want:
            data_l, kern_l = want[op]
            x = to_layout(args[0], a["data_layout"], data_l)
            w = to_layout(args[1], a["kernel_layout"], kern_l)
            a.update(data_layout=data_l, kernel_layout=kern_l)
            return tag(Call(op, [x, w], a), data_l, e.attrs["data_layout"])
        if not any(tagged):
            return Call(op, args, a)
        if op in _UNARY and len(args) == 1:
            return tag(Call(op, args, a), *layout[id(args[0])])
        if op in _BINARY and len(args) == 2:
            k = tagged.index(True)
            now, orig = layout[id(args[k])]
            other, old_other = args[1 - k], e.args[1 - k]
            r = rank(old_other)
            if id(other) in layout and layout[id(other)] == (now, orig):
                pass
            elif isinstance(other, Constant) and other.data.ndim <= len(orig):
                if other.data.size > 1:      # a scalar broadcasts alike in any layout; others move with it
                    if other.data.ndim < len(orig):     # numpy broadcasting aligns from the right: full rank first
                        other = expand_dims(other, 0, len(orig) - other.data.ndim)
                    other = layout_transform(other, orig, now)
            elif r == len(orig) and id(other) not in layout:
                other = layout_transform(other, orig, now)
            else:
                return Call(op, [original(x) for x in args], a)
            new_args = [args[k], other] if k == 0 else [other, args[k]]
            return tag(Call(op, new_args, a), now, orig)
        if op == "nn.batch_norm" and tagged[0] and not any(tagged[1:]):
            now, orig = layout[id(args[0])]
            if a["axis"] % len(orig) == orig.index("C"):
                a["axis"] = now.index("C")
                new = Call(op, args, a)
                layout[id(new)] = ("tuple0", Call(op, [original(args[0])] + args[1:], dict(e.attrs)))
                norm_layout[id(new)] = (now, orig)
                return new
        if op in _POOLS and a.get("layout") == layout[id(args[0])][1]:
            now, orig = layout[id(args[0])]
            if sorted(now) == sorted("NCHW"):
                a["layout"] = now
                return tag(Call(op, args, a), now, orig)
        return Call(op, [original(x) for x in args], a)

    def walk(e):
        if isinstance(e, TupleWrapper):
            e = e.astuple()
        if id(e) in memo:
            return memo[id(e)]
        if isinstance(e, Call) and isinstance(e.op, str):
            new = call(e, [walk(x) for x in e.args])
        elif isinstance(e, Call):
            new = Call(e.op, [original(walk(x)) for x in e.args], dict(e.attrs))
        elif isinstance(e, Tuple):
            new = Tuple([original(walk(f)) for f in e.fields])
        elif isinstance(e, TupleGetItem):
            t = walk(e.tuple_value)
            new = TupleGetItem(t, e.index)
            if id(t) in layout and layout[id(t)][0] == "tuple0" and e.index == 0:
                layout[id(new)] = norm_layout[id(t)]
        else:
            new = e
        memo[id(e)] = new
        return new
    body = original(walk(func.body))
    return Function(func.params, body, func.ret_type, attrs=func.attrs)
