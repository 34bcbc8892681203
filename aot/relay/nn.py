"""relay.nn: the neural-network operators, TVM's names and attributes, each with its lowering
onto the graph ops and the shapes of the parameters it reads (op.py's registry)."""
from __future__ import annotations

import numpy as np

from ..errors import AotError
from .expr import Tuple
from .op import ints, make, onnx_dtype_code, pads_2d, register, same_shape, shape_const
from .printer import defaults

_POOL = dict(strides=[1, 1], dilation=[1, 1], padding=[0, 0, 0, 0], layout="NCHW", ceil_mode=False)
defaults("nn.conv2d", strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1, data_layout="NCHW",
         kernel_layout="OIHW")
defaults("nn.conv1d", strides=[1], padding=[0, 0], dilation=[1], groups=1)
defaults("nn.conv2d_transpose", strides=[1, 1], padding=[0, 0, 0, 0], dilation=[1, 1], groups=1,
         output_padding=[0, 0])
defaults("nn.batch_norm", axis=1, epsilon=1e-5, center=True, scale=True)
defaults("nn.bias_add", axis=1)
defaults("nn.softmax", axis=-1)
defaults("nn.log_softmax", axis=-1)
defaults("nn.max_pool2d", **_POOL)
defaults("nn.avg_pool2d", count_include_pad=False, **_POOL)
defaults("nn.global_avg_pool2d", layout="NCHW")
defaults("nn.global_max_pool2d", layout="NCHW")
defaults("nn.batch_matmul", transpose_a=False, transpose_b=True)
defaults("nn.matmul", transpose_a=False, transpose_b=False)
defaults("nn.instance_norm", axis=1, epsilon=1e-5, center=True, scale=True)
defaults("nn.layer_norm", axis=-1, epsilon=1e-5, center=True, scale=True)
defaults("nn.pad", pad_value=0.0, pad_mode="constant")

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
    if out_layout not in ("", data_layout) or out_dtype not in ("", "float32", "int32"):
        raise AotError("nn.conv2d: out_layout and out_dtype other than the input's (or int32 from int8 or int16) "
                       "are not supported")
    return make("nn.conv2d", [data, weight], strides=ints(strides, 2), padding=pads_2d(padding),
                dilation=ints(dilation, 2), groups=int(groups), channels=channels,
                kernel_size=None if kernel_size is None else ints(kernel_size, 2), data_layout=data_layout,
                kernel_layout=kernel_layout, **({"out_dtype": out_dtype} if out_dtype == "int32" else {}))


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
    if a.get("out_dtype") == "int32":
        if x.type.dtype == w.type.dtype == "int16":
            return b.op("Cast", [b.op("ConvInteger16", [x, w], attrs)], {"to": onnx_dtype_code("int32")})
        # int8/uint8 data and weight summed in int32: ONNX's ConvInteger (no zero points)
        if x.type.dtype not in ("int8", "uint8") or w.type.dtype not in ("int8", "uint8"):
            raise AotError(f"nn.conv2d: out_dtype int32 takes int8 or uint8 (or int16) data and weight, not "
                           f"{x.type.dtype} and {w.type.dtype}")
        return b.op("ConvInteger", [x, w], attrs)
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



# -- more of TVM's nn ops -----------------------------------------------------------------------------
def conv1d(data, weight, strides=1, padding=0, dilation=1, groups=1, channels=None, kernel_size=None,
           data_layout="NCW", kernel_layout="OIW", out_layout="", out_dtype=""):
    if data_layout != "NCW" or kernel_layout != "OIW" or out_layout not in ("", "NCW"):
        raise AotError(f"nn.conv1d: layouts {data_layout}/{kernel_layout} are not supported (NCW/OIW)")
    p = ints(padding, 1)
    return make("nn.conv1d", [data, weight], strides=ints(strides, 1)[:1], padding=p * 2 if len(p) == 1 else p,
                dilation=ints(dilation, 1)[:1], groups=int(groups), channels=channels,
                kernel_size=None if kernel_size is None else ints(kernel_size, 1)[:1])


def _conv1d_params(c, shapes):
    if shapes[1] is not None or shapes[0] is None:
        return {}
    a = c.attrs
    if a["channels"] is None or a["kernel_size"] is None:
        raise AotError("nn.conv1d: an untyped weight needs channels and kernel_size to have a shape")
    return {1: (int(a["channels"]), shapes[0][1] // a["groups"], a["kernel_size"][0])}


register("nn.conv1d", lambda b, c, ins: b.op("Conv", ins, {"strides": c.attrs["strides"], "pads": c.attrs["padding"],
                                                           "dilations": c.attrs["dilation"],
                                                           "group": c.attrs["groups"]}), _conv1d_params)


def conv2d_transpose(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, channels=None,
                     kernel_size=None, data_layout="NCHW", kernel_layout="IOHW", out_layout="", output_padding=(0, 0),
                     out_dtype=""):
    if data_layout != "NCHW" or kernel_layout != "IOHW" or out_layout not in ("", "NCHW"):
        raise AotError(f"nn.conv2d_transpose: layouts {data_layout}/{kernel_layout} are not supported (NCHW/IOHW)")
    return make("nn.conv2d_transpose", [data, weight], strides=ints(strides, 2), padding=pads_2d(padding),
                dilation=ints(dilation, 2), groups=int(groups), channels=channels,
                kernel_size=None if kernel_size is None else ints(kernel_size, 2),
                output_padding=ints(output_padding, 2))


def _conv2d_transpose_params(c, shapes):
    if shapes[1] is not None or shapes[0] is None:
        return {}
    a = c.attrs
    if a["channels"] is None or a["kernel_size"] is None:
        raise AotError("nn.conv2d_transpose: an untyped weight needs channels and kernel_size to have a shape")
    return {1: (shapes[0][1], int(a["channels"]) // a["groups"], *a["kernel_size"])}


register("nn.conv2d_transpose", lambda b, c, ins: b.op("ConvTranspose", ins, {
    "strides": c.attrs["strides"], "pads": c.attrs["padding"], "dilations": c.attrs["dilation"],
    "group": c.attrs["groups"], "output_padding": c.attrs["output_padding"]}), _conv2d_transpose_params)


def batch_matmul(tensor_a, tensor_b, out_dtype="", transpose_a=False, transpose_b=True):
    """x y^T per batch by default, as TVM's (transpose_b=True)."""
    return make("nn.batch_matmul", [tensor_a, tensor_b], transpose_a=bool(transpose_a),
                transpose_b=bool(transpose_b))


def matmul(tensor_a, tensor_b, units=None, out_dtype="", transpose_a=False, transpose_b=False):
    return make("nn.matmul", [tensor_a, tensor_b], transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))


def _matmul(b, c, ins):
    x, y = ins

    def t(v):
        r = len(v.type.shape)
        return b.op("Transpose", [v], {"perm": list(range(r - 2)) + [r - 1, r - 2]})
    return b.op("MatMul", [t(x) if c.attrs["transpose_a"] else x, t(y) if c.attrs["transpose_b"] else y])


register("nn.batch_matmul", _matmul)
register("nn.matmul", _matmul)


def upsampling(data, scale_h=1, scale_w=1, layout="NCHW", method="nearest_neighbor", align_corners=False):
    if layout != "NCHW":
        raise AotError(f"nn.upsampling: layout {layout!r} is not supported (NCHW)")
    modes = {"nearest_neighbor": "nearest", "bilinear": "linear"}
    if method not in modes:
        raise AotError(f"nn.upsampling: method {method!r} is not one of {', '.join(modes)}")
    return make("nn.upsampling", [data], scale_h=float(scale_h), scale_w=float(scale_w), method=method,
                align_corners=bool(align_corners))


def _upsampling(b, c, ins):
    a = c.attrs
    mode = "nearest" if a["method"] == "nearest_neighbor" else "linear"
    ctm = "align_corners" if a["align_corners"] else ("asymmetric" if mode == "nearest" else "half_pixel")
    scales = np.asarray([1, 1, a["scale_h"], a["scale_w"]], np.float32)
    return b.op("Resize", [ins[0], None, b.const("scales", scales)],
                {"mode": mode, "coordinate_transformation_mode": ctm, "nearest_mode": "floor"})


register("nn.upsampling", _upsampling)


def _adaptive(name, global_op, pool_op):
    def fn(data, output_size=None, layout="NCHW", out_layout=""):
        if layout != "NCHW":
            raise AotError(f"{name}: layout {layout!r} is not supported (NCHW)")
        size = None if output_size is None else ints(output_size, 2)
        return make(name, [data], output_size=size)

    def lower(b, c, ins):
        x = ins[0]
        size = c.attrs["output_size"] or [1, 1]
        h, w = x.type.shape[2:]
        if list(size) == [1, 1]:
            return b.op(global_op, ins)
        if h % size[0] or w % size[1]:
            raise AotError(f"{name}: output size {size} does not divide the input's {[h, w]} (windows would "
                           "overlap unevenly)")
        k = [h // size[0], w // size[1]]
        return b.op(pool_op, ins, {"kernel_shape": k, "strides": k})
    register(name, lower)
    return fn


adaptive_avg_pool2d = _adaptive("nn.adaptive_avg_pool2d", "GlobalAveragePool", "AveragePool")
adaptive_max_pool2d = _adaptive("nn.adaptive_max_pool2d", "GlobalMaxPool", "MaxPool")


def lrn(data, size=5, axis=1, bias=2, alpha=0.00001, beta=0.75):
    if axis != 1:
        raise AotError(f"nn.lrn: axis {axis} is not supported (1, the channels of NCHW)")
    return make("nn.lrn", [data], size=int(size), bias=float(bias), alpha=float(alpha), beta=float(beta))


register("nn.lrn", lambda b, c, ins: b.op("LRN", ins, {k: c.attrs[k] for k in ("size", "bias", "alpha", "beta")}),
         same_shape)


def instance_norm(data, gamma, beta, axis=1, epsilon=1e-5, center=True, scale=True):
    if axis != 1:
        raise AotError(f"nn.instance_norm: axis {axis} is not supported (1)")
    return make("nn.instance_norm", [data, gamma, beta], axis=1, epsilon=float(epsilon), center=bool(center),
                scale=bool(scale))


def _instance_norm(b, c, ins):
    x, gamma, beta = ins
    if not c.attrs["scale"]:
        gamma = b.const("ones", np.ones(gamma.type.shape, gamma.type.dtype))
    if not c.attrs["center"]:
        beta = b.const("zeros", np.zeros(beta.type.shape, beta.type.dtype))
    return b.op("InstanceNormalization", [x, gamma, beta], {"epsilon": c.attrs["epsilon"]})


register("nn.instance_norm", _instance_norm, _per_channel)


def layer_norm(data, gamma, beta, axis=-1, epsilon=1e-5, center=True, scale=True):
    return make("nn.layer_norm", [data, gamma, beta], axis=int(axis), epsilon=float(epsilon), center=bool(center),
                scale=bool(scale))


def _layer_norm(b, c, ins):
    """(x - mean) / sqrt(var + eps) * gamma + beta over one axis, from the graph's reductions."""
    x, gamma, beta = ins
    rank = len(x.type.shape)
    axis = c.attrs["axis"] % rank
    axes = shape_const(b, [axis])
    mean = b.op("ReduceMean", [x, axes], {"keepdims": 1})
    d = b.op("Sub", [x, mean])
    var = b.op("ReduceMean", [b.op("Mul", [d, d]), axes], {"keepdims": 1})
    eps = b.const("epsilon", np.asarray(c.attrs["epsilon"], x.type.dtype))
    y = b.op("Div", [d, b.op("Sqrt", [b.op("Add", [var, eps])])])
    if c.attrs["scale"]:
        y = b.op("Mul", [y, _along(b, gamma, axis, rank)])
    if c.attrs["center"]:
        y = b.op("Add", [y, _along(b, beta, axis, rank)])
    return y


register("nn.layer_norm", _layer_norm, _per_channel)


def l2_normalize(data, eps, axis=None):
    return make("nn.l2_normalize", [data], eps=float(eps), axis=None if axis is None else ints(axis, 1))


def _l2_normalize(b, c, ins):
    x = ins[0]
    rank = len(x.type.shape)
    axes = list(range(rank)) if c.attrs["axis"] is None else [a % rank for a in c.attrs["axis"]]
    ss = b.op("ReduceSum", [b.op("Mul", [x, x]), shape_const(b, axes)], {"keepdims": 1})
    eps = b.const("eps", np.asarray(c.attrs["eps"], x.type.dtype))
    return b.op("Div", [x, b.op("Sqrt", [b.op("Max", [ss, eps])])])


register("nn.l2_normalize", _l2_normalize, same_shape)


def depth_to_space(data, block_size, layout="NCHW", mode="DCR"):
    if layout != "NCHW" or mode not in ("DCR", "CRD"):
        raise AotError(f"nn.depth_to_space: layout {layout!r} / mode {mode!r} are not supported (NCHW; DCR or CRD)")
    return make("nn.depth_to_space", [data], block_size=int(block_size), mode=mode)


def space_to_depth(data, block_size, layout="NCHW"):
    if layout != "NCHW":
        raise AotError(f"nn.space_to_depth: layout {layout!r} is not supported (NCHW)")
    return make("nn.space_to_depth", [data], block_size=int(block_size))


register("nn.depth_to_space", lambda b, c, ins: b.op("DepthToSpace", ins, {"blocksize": c.attrs["block_size"],
                                                                           "mode": c.attrs["mode"]}))
register("nn.space_to_depth", lambda b, c, ins: b.op("SpaceToDepth", ins, {"blocksize": c.attrs["block_size"]}))


def __getattr__(name):
    from .expr import missing
    raise missing("relay.nn", name)
