"""Reference outputs for testing.aot.generate_ref_data, computed without this compiler: a relay
function written by hand is evaluated op by op in numpy (float64 accumulation, TVM's op
semantics written out plainly); a module a frontend imported is run by the framework's own
runtime (onnxruntime for ONNX, TensorFlow Lite Micro for TFLite). An op with no numpy reference
here is refused by name: the compiler's own answer would be no check at all."""
from __future__ import annotations

import numpy as np

from ..errors import AotError


def _op_name(c):
    op = c.op
    return op if isinstance(op, str) else getattr(op, "name", str(op))


def _attr(c, name, default=None):
    a = c.attrs
    if isinstance(a, dict):
        return a.get(name, default)
    return getattr(a, name, default)


def _pads(p):
    p = [int(x) for x in (p if isinstance(p, (list, tuple)) else [p])]
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return [p[0], p[1], p[0], p[1]]
    return p


def _pair(v):
    v = [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
    return v * 2 if len(v) == 1 else v


def conv2d_nchw(x, w, strides, pads, dilation, groups):
    """x [N, C, H, W], w [O, C/groups, KH, KW] -> [N, O, OH, OW], accumulated in float64 (or int64)."""
    acc = np.float64 if x.dtype.kind == "f" else np.int64
    x = x.astype(acc)
    w = w.astype(acc)
    t, left, b, r = pads
    x = np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilation
    oh = (h - (kh - 1) * dh - 1) // sh + 1
    ow = (wd - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), acc)
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out


def _conv2d(c, x, w):
    layout, klayout = _attr(c, "data_layout", "NCHW"), _attr(c, "kernel_layout", "OIHW")
    if layout == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    elif layout != "NCHW":
        raise AotError(f"reference nn.conv2d: data_layout {layout} has no reference")
    perm = {"OIHW": None, "HWIO": (3, 2, 0, 1), "OHWI": (0, 3, 1, 2), "HWOI": (2, 3, 0, 1)}
    if klayout not in perm:
        raise AotError(f"reference nn.conv2d: kernel_layout {klayout} has no reference")
    if perm[klayout]:
        w = w.transpose(perm[klayout])
    y = conv2d_nchw(x, w, _pair(_attr(c, "strides", 1)), _pads(_attr(c, "padding", 0)),
                    _pair(_attr(c, "dilation", 1)), int(_attr(c, "groups", 1)))
    if layout == "NHWC":
        y = y.transpose(0, 2, 3, 1)
    return y


def _pool(c, x, kind):
    layout = _attr(c, "layout", "NCHW")
    if layout == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    kh, kw = _pair(_attr(c, "pool_size", 1))
    sh, sw = _pair(_attr(c, "strides", 1))
    dh, dw = _pair(_attr(c, "dilation", 1))
    t, left, b, r = _pads(_attr(c, "padding", 0))
    if _attr(c, "ceil_mode", False):
        raise AotError(f"reference {_op_name(c)}: ceil_mode has no reference")
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (t, b), (left, r)), constant_values=fill)
    ones = np.pad(np.ones(x.shape[2:]), ((t, b), (left, r)))
    oh = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
    wins = [xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            for i in range(kh) for j in range(kw)]
    if kind == "max":
        y = np.max(wins, axis=0)
    else:
        count = (kh * kw if _attr(c, "count_include_pad", False) else
                 np.sum([ones[i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                         for i in range(kh) for j in range(kw)], axis=0))
        y = np.sum(wins, axis=0) / count
    return y.transpose(0, 2, 3, 1) if layout == "NHWC" else y


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _reduce(fn):
    def f(c, x):
        axis = _attr(c, "axis")
        axes = tuple(range(x.ndim)) if axis is None else tuple(int(a) % x.ndim for a in axis)
        if _attr(c, "exclude", False):
            axes = tuple(d for d in range(x.ndim) if d not in axes)
        return fn(x, axis=axes, keepdims=bool(_attr(c, "keepdims", False)))
    return f


def _reshape(c, x):
    shape = [int(d) for d in _attr(c, "newshape")]
    shape = [x.shape[k] if d == 0 else d for k, d in enumerate(shape)]
    return x.reshape(shape)


def _along(v, axis, ndim):
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return v.reshape(shape)


def _batch_norm(c, x, gamma, beta, mean, var):
    ax = int(_attr(c, "axis", 1)) % x.ndim
    g = gamma if _attr(c, "scale", True) else np.ones_like(gamma)
    b = beta if _attr(c, "center", True) else np.zeros_like(beta)
    y = (x - _along(mean, ax, x.ndim)) / np.sqrt(_along(var, ax, x.ndim) + float(_attr(c, "epsilon", 1e-5)))
    return [y * _along(g, ax, x.ndim) + _along(b, ax, x.ndim), mean, var]


def _expand_dims(c, x):
    a = int(_attr(c, "axis"))
    a = a + x.ndim + 1 if a < 0 else a
    for k in range(int(_attr(c, "num_newaxis", 1))):
        x = np.expand_dims(x, a + k)
    return x


def _squeeze(c, x):
    axis = _attr(c, "axis")
    return np.squeeze(x, axis=None if axis is None else tuple(int(a) for a in axis))


def _pad(c, x):
    if _attr(c, "pad_mode", "constant") != "constant":
        return np.pad(x, [tuple(p) for p in _attr(c, "pad_width")], mode=_attr(c, "pad_mode"))
    return np.pad(x, [tuple(p) for p in _attr(c, "pad_width")], constant_values=float(_attr(c, "pad_value", 0.0)))


def _erf(x):
    import math
    return np.vectorize(math.erf)(x)


OPS = {
    "nn.conv2d": _conv2d,
    "nn.dense": lambda c, x, w: x.astype(np.float64) @ w.astype(np.float64).T,
    "nn.bias_add": lambda c, x, b: x + _along(b, int(_attr(c, "axis", 1)), x.ndim),
    "nn.relu": lambda c, x: np.maximum(x, 0),
    "nn.leaky_relu": lambda c, x: np.where(x >= 0, x, x * float(_attr(c, "alpha", 0.01))),
    "nn.prelu": lambda c, x, a: np.where(x >= 0, x, x * _along(a, int(_attr(c, "axis", 1)), x.ndim)),
    "nn.softmax": lambda c, x: _softmax(x, int(_attr(c, "axis", -1))),
    "nn.log_softmax": lambda c, x: np.log(_softmax(x, int(_attr(c, "axis", -1)))),
    "nn.max_pool2d": lambda c, x: _pool(c, x, "max"),
    "nn.avg_pool2d": lambda c, x: _pool(c, x, "avg"),
    "nn.global_avg_pool2d": lambda c, x: x.mean(axis=(2, 3) if _attr(c, "layout", "NCHW") == "NCHW" else (1, 2),
                                                keepdims=True),
    "nn.global_max_pool2d": lambda c, x: x.max(axis=(2, 3) if _attr(c, "layout", "NCHW") == "NCHW" else (1, 2),
                                               keepdims=True),
    "nn.batch_flatten": lambda c, x: x.reshape(x.shape[0], -1),
    "nn.batch_norm": _batch_norm,
    "nn.dropout": lambda c, x: x,
    "nn.pad": _pad,
    "add": lambda c, a, b: a + b, "subtract": lambda c, a, b: a - b, "multiply": lambda c, a, b: a * b,
    "divide": lambda c, a, b: a / b, "power": lambda c, a, b: np.power(a, b),
    "maximum": lambda c, a, b: np.maximum(a, b), "minimum": lambda c, a, b: np.minimum(a, b),
    "equal": lambda c, a, b: a == b, "less": lambda c, a, b: a < b, "greater": lambda c, a, b: a > b,
    "exp": lambda c, x: np.exp(x), "log": lambda c, x: np.log(x), "sqrt": lambda c, x: np.sqrt(x),
    "sigmoid": lambda c, x: 1 / (1 + np.exp(-x)), "tanh": lambda c, x: np.tanh(x),
    "negative": lambda c, x: -x, "abs": lambda c, x: np.abs(x), "erf": lambda c, x: _erf(x),
    "floor": lambda c, x: np.floor(x), "ceil": lambda c, x: np.ceil(x), "round": lambda c, x: np.round(x),
    "sin": lambda c, x: np.sin(x), "cos": lambda c, x: np.cos(x),
    "clip": lambda c, x: np.clip(x, float(_attr(c, "a_min")), float(_attr(c, "a_max"))),
    "reshape": _reshape,
    "reshape_like": lambda c, x, like: x.reshape(like.shape),
    "transpose": lambda c, x: np.transpose(x, _attr(c, "axes")),
    "squeeze": _squeeze,
    "expand_dims": _expand_dims,
    "concatenate": lambda c, *xs: np.concatenate(xs, axis=int(_attr(c, "axis"))),
    "sum": _reduce(np.sum), "mean": _reduce(np.mean), "max": _reduce(np.max), "min": _reduce(np.min),
    "prod": _reduce(np.prod),
    "cast": lambda c, x: x.astype(_attr(c, "dtype")),
}


def _out_dtype(c, ins, value):
    """The dtype TVM's type relation gives the op's output: out_dtype where the op has one, else
    its first input's."""
    od = _attr(c, "out_dtype", "") or ""
    if _op_name(c) == "cast":
        return _attr(c, "dtype")
    if _op_name(c) in ("equal", "less", "greater"):
        return "bool"
    if od:
        return od
    return str(ins[0].dtype) if ins and hasattr(ins[0], "dtype") else str(np.asarray(value).dtype)


def evaluate_relay(func, inputs, params=None):
    """[outputs] of relay Function `func` on {name: array} (inputs and params)."""
    from ..relay.expr import Call, Constant, Function, Tuple, TupleGetItem, TupleWrapper, Var
    feed = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in dict(params or {}, **inputs).items()}
    memo = {}

    def visit(e):
        if isinstance(e, TupleWrapper):
            e = e.astuple()
        if id(e) in memo:
            return memo[id(e)]
        if isinstance(e, Var):
            if e.name_hint not in feed:
                raise AotError(f"generate_ref_data: no value for input '{e.name_hint}'")
            v = feed[e.name_hint]
        elif isinstance(e, Constant):
            v = np.asarray(e.data)
        elif isinstance(e, Tuple):
            v = [visit(f) for f in e.fields]
        elif isinstance(e, TupleGetItem):
            v = visit(e.tuple_value)[e.index]
        elif isinstance(e, Call):
            name = _op_name(e)
            fn = OPS.get(name)
            if fn is None:
                raise AotError(f"generate_ref_data: operator {name} has no numpy reference (its ops: "
                               f"{', '.join(sorted(OPS))})")
            args = [visit(a) for a in e.args]
            out = fn(e, *args)
            if isinstance(out, list):
                v = [np.asarray(o).astype(args[0].dtype) for o in out]
            else:
                v = np.asarray(out).astype(_out_dtype(e, args, out))
        elif isinstance(e, Function):
            raise AotError("generate_ref_data: a nested relay Function has no reference")
        else:
            raise AotError(f"generate_ref_data: a {type(e).__name__} expression has no reference")
        memo[id(e)] = v
        return v

    out = visit(func.body)
    return list(out) if isinstance(out, list) else [out]


def evaluate_imported(func, inputs):
    """[outputs] of a module a frontend imported (relay.frontend.from_onnx / from_tflite), by the
    framework's own runtime."""
    fmt, src = getattr(func, "format", None), getattr(func, "source", None)
    names = [p.name_hint for p in func.params]
    missing = [n for n in names if n not in inputs]
    if missing:
        raise AotError(f"generate_ref_data: no value for input(s) {', '.join(missing)}")
    if fmt == "onnx":
        import onnxruntime as ort
        model = src if isinstance(src, (bytes, bytearray)) else src.SerializeToString()
        sess = ort.InferenceSession(bytes(model), providers=["CPUExecutionProvider"])
        return sess.run(None, {n: np.asarray(inputs[n]) for n in names})
    if fmt == "tflite":
        from tflite_micro.python.tflite_micro import runtime
        model = bytes(src) if isinstance(src, (bytes, bytearray)) else bytes(src._tab.Bytes)
        it = runtime.Interpreter.from_bytes(model, arena_size=max(len(model) * 10, 1 << 20))
        for k, n in enumerate(names):
            it.set_input(np.ascontiguousarray(inputs[n]), k)
        it.invoke()
        return [np.array(it.get_output(k), copy=True) for k in range(len(func.graph.outputs))]
    raise AotError(f"generate_ref_data: an imported module of format {fmt!r} has no reference runtime")
