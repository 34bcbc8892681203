"""relay.nn: the neural-network operators, TVM's names and attributes, each with its lowering
onto the graph ops and the shapes of the parameters it reads (op.py's registry)."""
from __future__ import annotations

import numpy as np

from ..errors import AotError
from .expr import Tuple
from .op import same_shape, ints, make, pads_2d, register, shape_const

_KERNEL_TO_OHWI = {"HWIO": (3, 0, 1, 2), "OHWI": None, "HWOI": (2, 0, 1, 3)}


def relu(data):
    return make("nn.relu", [data])


def leaky_relu(data, alpha=0.01):
    return make("nn.leaky_relu", [data], alpha=float(alpha))


register("nn.leaky_relu", lambda b, c, ins: b.op("LeakyRelu", ins, {"alpha": c.attrs["alpha"]}), same_shape)


def softmax(data, axis=-1):
    return make("nn.softmax", [data], axis=int(axis))


def log_softmax(data, axis=-1):
    return make("nn.log_softmax", [data], axis=int(axis))


register("nn.softmax", lambda b, c, ins: b.op("Softmax", ins, {"axis": c.attrs["axis"]}), same_shape)
register("nn.log_softmax", lambda b, c, ins: b.op("LogSoftmax", ins, {"axis": c.attrs["axis"]}), same_shape)


def conv2d(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, channels=None,
           kernel_size=None, data_layout="NCHW", kernel_layout="OIHW", out_layout="", out_dtype=""):
    if data_layout not in ("NCHW", "NHWC"):
        raise AotError(f"nn.conv2d: data_layout {data_layout!r} is not supported (NCHW or NHWC)")
    expected = ("OIHW",) if data_layout == "NCHW" else tuple(_KERNEL_TO_OHWI)
    if kernel_layout not in expected:
        raise AotError(f"nn.conv2d: kernel_layout {kernel_layout!r} does not go with data_layout {data_layout!r} "
                       f"(one of {', '.join(expected)})")
    if out_layout not in ("", data_layout) or out_dtype not in ("", "float32"):
        raise AotError("nn.conv2d: out_layout and out_dtype other than the input's are not supported")
    return make("nn.conv2d", [data, weight], strides=ints(strides, 2), padding=pads_2d(padding),
                dilation=ints(dilation, 2), groups=int(groups), channels=channels,
                kernel_size=None if kernel_size is None else ints(kernel_size, 2), data_layout=data_layout,
                kernel_layout=kernel_layout)


def _conv2d_params(c, shapes):
    x = shapes[0]
    a = c.attrs
    if shapes[1] is not None or x is None:
        return {}
    if a["channels"] is None or a["kernel_size"] is None:
        raise AotError("nn.conv2d: an untyped weight needs channels and kernel_size to have a shape")
    cin = x[1] if a["data_layout"] == "NCHW" else x[-1]
    o, i, (kh, kw) = int(a["channels"]), cin // a["groups"], a["kernel_size"]
    return {1: {"OIHW": (o, i, kh, kw), "HWIO": (kh, kw, i, o), "OHWI": (o, kh, kw, i), "HWOI": (kh, kw, o, i)}[
        a["kernel_layout"]]}


def _conv2d(b, c, ins):
    a = c.attrs
    x, w = ins
    if len(w.type.shape) != 4:
        raise AotError(f"nn.conv2d: the weight has shape {list(w.type.shape)}, not 4-D")
    attrs = {"strides": a["strides"], "pads": a["padding"], "dilations": a["dilation"], "group": a["groups"]}
    if a["data_layout"] == "NHWC":
        perm = _KERNEL_TO_OHWI[a["kernel_layout"]]
        if perm is not None:
            w = b.op("Transpose", [w], {"perm": list(perm)})     # folds when the weight is a parameter
        attrs["layout"] = "NHWC"
    return b.op("Conv", [x, w], attrs)


register("nn.conv2d", _conv2d, _conv2d_params)


def _channel_axis(c, shapes):
    return c.attrs["axis"] % len(shapes[0])


def _per_channel(call, shapes):
    if shapes[0] is None:
        return {}
    n = shapes[0][_channel_axis(call, shapes)]
    return {k: (n,) for k, s in enumerate(shapes) if k and s is None}


def _along(b, v, axis, rank):
    """A [C] vector shaped to broadcast along `axis` of a rank-`rank` tensor."""
    shape = [1] * rank
    shape[axis] = -1
    return b.op("Reshape", [v, shape_const(b, shape)])


def bias_add(data, bias, axis=1):
    return make("nn.bias_add", [data, bias], axis=int(axis))


def _bias_add(b, c, ins):
    rank = len(ins[0].type.shape)
    return b.op("Add", [ins[0], _along(b, ins[1], c.attrs["axis"] % rank, rank)])


register("nn.bias_add", _bias_add, _per_channel)


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, center=True, scale=True):
    """A 3-tuple as TVM's: [0] the normalised data, [1] and [2] the moving mean and variance."""
    return make("nn.batch_norm", [data, gamma, beta, moving_mean, moving_var], axis=int(axis),
                epsilon=float(epsilon), center=bool(center), scale=bool(scale))


def _batch_norm(b, c, ins):
    x, gamma, beta, mean, var = ins
    a = c.attrs
    rank = len(x.type.shape)
    axis = a["axis"] % rank
    if not a["scale"]:
        gamma = b.const("ones", np.ones(gamma.type.shape, gamma.type.dtype))
    if not a["center"]:
        beta = b.const("zeros", np.zeros(beta.type.shape, beta.type.dtype))
    if axis == 1:
        y = b.op("BatchNormalization", [x, gamma, beta, mean, var], {"epsilon": a["epsilon"]})
    else:      # (x - mean) * gamma / sqrt(var + eps) + beta along another axis: folds to a scale and shift
        eps = b.const("epsilon", np.asarray(a["epsilon"], var.type.dtype))
        k = b.op("Div", [gamma, b.op("Sqrt", [b.op("Add", [var, eps])])])
        shift = b.op("Sub", [beta, b.op("Mul", [mean, k])])
        y = b.op("Add", [b.op("Mul", [x, _along(b, k, axis, rank)]), _along(b, shift, axis, rank)])
    return [y, mean, var]


register("nn.batch_norm", _batch_norm, _per_channel, outputs=3)


def dense(data, weight, units=None, out_dtype=""):
    return make("nn.dense", [data, weight], units=units)


def _dense_params(c, shapes):
    if shapes[1] is not None or shapes[0] is None:
        return {}
    if c.attrs["units"] is None:
        raise AotError("nn.dense: an untyped weight needs units to have a shape")
    return {1: (int(c.attrs["units"]), shapes[0][-1])}


register("nn.dense", lambda b, c, ins: b.op("MatMul", [ins[0], b.op("Transpose", [ins[1]], {"perm": [1, 0]})]),
         _dense_params)


def batch_flatten(data):
    return make("nn.batch_flatten", [data])


register("nn.batch_flatten", lambda b, c, ins: b.op("Flatten", ins, {"axis": 1}))


def _pool(onnx_op):
    def lower(b, c, ins):
        a = c.attrs
        attrs = {"kernel_shape": a["pool_size"], "strides": a["strides"], "pads": a["padding"],
                 "ceil_mode": int(a["ceil_mode"])}
        if onnx_op == "MaxPool":
            attrs["dilations"] = a["dilation"]
        elif a["dilation"] != [1, 1]:
            raise AotError("nn.avg_pool2d: dilation is not supported")
        else:
            attrs["count_include_pad"] = int(a["count_include_pad"])
        if a["layout"] == "NHWC":
            attrs["layout"] = "NHWC"
        return b.op(onnx_op, ins, attrs)
    return lower


def _pool_args(name, data, pool_size, strides, dilation, padding, layout, ceil_mode, **extra):
    if layout not in ("NCHW", "NHWC"):
        raise AotError(f"{name}: layout {layout!r} is not supported (NCHW or NHWC)")
    return make(name, [data], pool_size=ints(pool_size, 2), strides=ints(strides, 2), dilation=ints(dilation, 2),
                padding=pads_2d(padding), layout=layout, ceil_mode=bool(ceil_mode), **extra)


def max_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0), layout="NCHW",
               out_layout="", ceil_mode=False):
    return _pool_args("nn.max_pool2d", data, pool_size, strides, dilation, padding, layout, ceil_mode)


def avg_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0), layout="NCHW",
               out_layout="", ceil_mode=False, count_include_pad=False):
    return _pool_args("nn.avg_pool2d", data, pool_size, strides, dilation, padding, layout, ceil_mode,
                      count_include_pad=bool(count_include_pad))


register("nn.max_pool2d", _pool("MaxPool"))
register("nn.avg_pool2d", _pool("AveragePool"))


def _global_pool(onnx_op, reduce_op):
    def lower(b, c, ins):
        if c.attrs["layout"] == "NCHW":
            return b.op(onnx_op, ins)
        return b.op(reduce_op, [ins[0], shape_const(b, [1, 2])], {"keepdims": 1})
    return lower


def global_avg_pool2d(data, layout="NCHW", out_layout=""):
    return make("nn.global_avg_pool2d", [data], layout=layout)


def global_max_pool2d(data, layout="NCHW", out_layout=""):
    return make("nn.global_max_pool2d", [data], layout=layout)


register("nn.global_avg_pool2d", _global_pool("GlobalAveragePool", "ReduceMean"))
register("nn.global_max_pool2d", _global_pool("GlobalMaxPool", "ReduceMax"))


def pad(data, pad_width, pad_value=0.0, pad_mode="constant"):
    return make("nn.pad", [data], pad_width=[ints(p, 2) for p in pad_width], pad_value=float(pad_value),
                pad_mode=pad_mode)


def _pad(b, c, ins):
    pw = c.attrs["pad_width"]
    mode = {"constant": "constant", "edge": "edge", "reflect": "reflect"}.get(c.attrs["pad_mode"])
    if mode is None:
        raise AotError(f"nn.pad: pad_mode {c.attrs['pad_mode']!r} is not supported")
    return b.op("Pad", [ins[0], shape_const(b, [p[0] for p in pw] + [p[1] for p in pw]),
                        b.const("value", np.asarray(c.attrs["pad_value"], ins[0].type.dtype))], {"mode": mode})


register("nn.pad", _pad)


def dropout(data, rate=0.5):
    """Inference: the identity (as TVM's build removes it)."""
    return make("nn.dropout", [data], rate=float(rate))


register("nn.dropout", lambda b, c, ins: b.op("Identity", ins), same_shape)


def prelu(data, alpha, axis=1):
    return make("nn.prelu", [data, alpha], axis=int(axis))


def _prelu(b, c, ins):
    rank = len(ins[0].type.shape)
    return b.op("PRelu", [ins[0], _along(b, ins[1], c.attrs["axis"] % rank, rank)])


register("nn.prelu", _prelu, _per_channel)


def sparse_dense(data, weight, sparse_lhs=False):
    """data x W^T with W a CSR matrix (w_data, w_indices, w_indptr), as TVM's. The graph IR has
    no sparse tensors: a constant W becomes a dense weight at build (numerically the same product)."""
    if sparse_lhs:
        raise AotError("nn.sparse_dense: sparse_lhs=True is not supported (the sparse matrix is the weight)")
    parts = weight.fields if isinstance(weight, Tuple) else list(weight)
    if len(parts) != 3:
        raise AotError(f"nn.sparse_dense: the weight is (data, indices, indptr), not {len(parts)} arrays")
    return make("nn.sparse_dense", [data] + parts)


def _sparse_dense(b, c, ins):
    x, w_data, w_indices, w_indptr = ins
    if any(v.const is None for v in (w_data, w_indices, w_indptr)):
        raise AotError("nn.sparse_dense: the sparse weight must be constants (relay.Constant or params bound "
                       "at build): the graph IR has no sparse tensors, so a sparse weight is made dense at build")
    vals, idx, ptr = (np.asarray(v.const) for v in (w_data, w_indices, w_indptr))
    if vals.ndim != 1:
        raise AotError(f"nn.sparse_dense: block-sparse (BSR) weights are not supported; the data has shape "
                       f"{list(vals.shape)}, CSR's is 1-D")
    rows, cols = len(ptr) - 1, x.type.shape[-1]
    if len(idx) != len(vals) or rows < 0 or (len(idx) and (idx.min() < 0 or idx.max() >= cols)) \
            or np.any(np.diff(ptr) < 0) or (len(ptr) and (ptr[0] != 0 or ptr[-1] != len(vals))):
        raise AotError(f"nn.sparse_dense: (data, indices, indptr) is not a CSR matrix of {cols} columns")
    dense = np.zeros((rows, cols), vals.dtype)
    for i in range(rows):
        for k in range(int(ptr[i]), int(ptr[i + 1])):
            dense[i, int(idx[k])] += vals[k]
    return b.op("MatMul", [x, b.const("sparse_weight", np.ascontiguousarray(dense.T))])


register("nn.sparse_dense", _sparse_dense)
