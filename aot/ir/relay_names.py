"""TVM's relay operator names over the graph IR: the one table that says which graph op (the
ONNX-named ops of aot/ops/) a relay op is, with which arguments and attributes, so that a
dataflow pattern written for TVM (`is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"groups":
1})`) matches the same node whether the graph came from relay, ONNX or TFLite.

A relay op's view of a node gives:
  - whether the node is that relay op (a graph op can be several relay ops: Conv is nn.conv1d,
    nn.conv2d or nn.conv3d by its rank);
  - its relay arguments, in relay's order: graph inputs that are attributes in relay (Reshape's
    shape, Clip's bounds, a reduction's axes) are not arguments; a Transpose of dense's weight or a
    Reshape of bias_add's bias that the relay op implies is looked through (the node joins the match);
  - its attributes under relay's names and in relay's form (padding [top, left, bottom, right],
    groups, channels, kernel_size, data_layout, ...).

A graph node that does two relay ops at once (a Conv with a bias is nn.bias_add(nn.conv2d(x, w),
b); a Gemm with C is nn.bias_add(nn.dense(a, b), c)) matches the outer op, whose first argument
is the inner op's part of the same node (Part), matched by the inner op's pattern; the inner op
alone does not match such a node, since the bias would be left out of the match.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class Part:
    """The inner relay op of a node that does two (the conv of a biased Conv): a value that the
    graph does not hold, matched only by the inner op's pattern."""

    __slots__ = ("node", "op")

    def __init__(self, node, op):
        self.node, self.op = node, op

    is_const = False
    producer = None

    @property
    def type(self):
        return self.node.outputs[0].type

    def __repr__(self):
        return f"Part({self.op} of {self.node.name})"


def _const(v):
    return None if v is None or not v.is_const else v.const


def _rank(v):
    return len(v.type.shape)


@dataclass
class View:
    ops: tuple                          # graph ops this relay op can be
    n_args: int = None                  # leading graph inputs that are relay arguments (None: all)
    when: object = None                 # (node) -> bool: the node is this relay op
    attrs: object = None                # (node) -> {relay attribute: value}
    args: object = None                 # (node) -> ([argument values], [nodes looked through]) or None
    outer: str = None                   # a relay op this node is when it also does a second one (bias)

    def applies(self, node):
        return node.op in self.ops and (self.when is None or self.when(node))

    def arguments(self, node):
        if self.args is not None:
            return self.args(node)
        ins = list(node.inputs)
        while ins and ins[-1] is None:
            ins.pop()
        return (ins if self.n_args is None else ins[:self.n_args]), []

    def attributes(self, node):
        return self.attrs(node) if self.attrs is not None else {}


# -- convolutions -------------------------------------------------------------------------------------
_CONV_LAYOUTS = {3: ("NCW", "OIW", "NWC", "WIO"), 4: ("NCHW", "OIHW", "NHWC", "OHWI"),
                 5: ("NCDHW", "OIDHW", "NDHWC", "ODHWI")}


def _has_bias(node):
    return len(node.inputs) > 2 and node.inputs[2] is not None


def _conv_attrs(node):
    a = node.attrs
    rank = _rank(node.inputs[0])
    nchw, oihw, nhwc, ohwi = _CONV_LAYOUTS[rank]
    channels_last = a.get("layout") == "NHWC"
    nsp = rank - 2
    pads = list(a.get("pads") or [0] * 2 * nsp)
    return {"strides": list(a.get("strides") or [1] * nsp), "padding": pads, "dilation":
            list(a.get("dilations") or [1] * nsp), "groups": int(a.get("group", 1)),
            "channels": int(node.inputs[1].type.shape[0]), "kernel_size": list(a["kernel_shape"]),
            "data_layout": nhwc if channels_last else nchw, "kernel_layout": ohwi if channels_last else oihw,
            "out_layout": "", "out_dtype": ""}


def _conv_view(rank):
    return View(("Conv",), 2, when=lambda n: _rank(n.inputs[0]) == rank and not _has_bias(n), attrs=_conv_attrs,
                outer="nn.bias_add")


def _conv_transpose_attrs(node):
    a = _conv_attrs(node)
    a["kernel_layout"] = "IOHW"
    a["output_padding"] = list(node.attrs.get("output_padding") or [0] * (_rank(node.inputs[0]) - 2))
    a["channels"] = int(node.inputs[1].type.shape[1]) * a["groups"]
    return a


# -- dense and bias -----------------------------------------------------------------------------------
def _is_transpose_2d(v):
    n = v.producer
    return n is not None and n.op == "Transpose" and list(n.attrs.get("perm", [1, 0])) == [1, 0] \
        and _rank(n.inputs[0]) == 2


def _dense_when(node):
    if node.op == "MatMul":
        return _rank(node.inputs[1]) == 2
    a = node.attrs
    return (not a.get("transA", 0) and a.get("alpha", 1.0) == 1.0 and
            (len(node.inputs) < 3 or node.inputs[2] is None))


def _dense_args(node):
    a, b = node.inputs[0], node.inputs[1]
    if node.op == "MatMul" and _is_transpose_2d(b):      # relay's dense lowers to MatMul(x, w^T)
        return [a, b.producer.inputs[0]], [b.producer]
    return [a, b], []


def _dense_attrs(node):
    b = node.inputs[1]
    if node.op == "Gemm" and node.attrs.get("transB", 0):
        units = b.type.shape[0]
    elif node.op == "MatMul" and _is_transpose_2d(b):
        units = b.producer.inputs[0].type.shape[0]
    else:
        units = b.type.shape[-1]
    return {"units": int(units), "out_dtype": ""}


def _bias_axis(x, b):
    """The axis a bias broadcasts along (one non-unit dimension equal to x's there), or None."""
    bs, xs = tuple(b.type.shape), tuple(x.type.shape)
    if len(bs) == 1:
        return len(xs) - 1 if bs[0] == xs[-1] else None
    if len(bs) != len(xs):
        return None
    big = [d for d, n in enumerate(bs) if n != 1]
    if len(big) != 1 or bs[big[0]] != xs[big[0]]:
        return None
    return big[0]


def _bias_when(node):
    if node.op in ("Conv", "Gemm"):
        return _has_bias(node) and (node.op == "Conv" or (not node.attrs.get("transA", 0)
                                                          and node.attrs.get("alpha", 1.0) == 1.0
                                                          and node.attrs.get("beta", 1.0) == 1.0))
    return _bias_axis(node.inputs[0], node.inputs[1]) is not None and node.inputs[0].type.shape == \
        node.outputs[0].type.shape


def _bias_args(node):
    if node.op in ("Conv", "Gemm"):
        inner = {3: "nn.conv1d", 4: "nn.conv2d", 5: "nn.conv3d"}.get(_rank(node.inputs[0])) if node.op == "Conv" \
            else "nn.dense"
        return [Part(node, inner), node.inputs[2]], []
    x, b = node.inputs
    n = b.producer
    if n is not None and n.op == "Reshape" and _rank(n.inputs[0]) == 1:    # relay's [C] bias, shaped to broadcast
        return [x, n.inputs[0]], [n]
    return [x, b], []


def _bias_attrs(node):
    if node.op == "Conv":
        return {"axis": -1 if node.attrs.get("layout") == "NHWC" else 1}
    if node.op == "Gemm":
        return {"axis": 1}
    return {"axis": _bias_axis(node.inputs[0], node.inputs[1])}


# -- ops whose relay attributes are graph inputs ------------------------------------------------------
def _axes_input(node, k, default_all=True):
    if len(node.inputs) > k and node.inputs[k] is not None:
        c = _const(node.inputs[k])
        return None if c is None else [int(x) for x in np.asarray(c).reshape(-1)]
    axes = node.attrs.get("axes")
    return [int(x) for x in axes] if axes is not None else None


def _reduce_attrs(node):
    return {"axis": _axes_input(node, 1), "keepdims": bool(node.attrs.get("keepdims", 1)), "exclude": False}


def _reshape_attrs(node):
    if "shape" in node.attrs:
        return {"newshape": [int(x) for x in node.attrs["shape"]]}
    c = _const(node.inputs[1]) if len(node.inputs) > 1 else None
    return {"newshape": None if c is None else [int(x) for x in np.asarray(c).reshape(-1)]}


def _clip_attrs(node):
    def bound(k, name, default):       # canon keeps constant bounds as attributes, else they are inputs
        if name in node.attrs:
            return float(node.attrs[name])
        c = _const(node.inputs[k]) if len(node.inputs) > k and node.inputs[k] is not None else None
        return float(c) if c is not None else default
    return {"a_min": bound(1, "min", float("-inf")), "a_max": bound(2, "max", float("inf"))}


def _pad_attrs(node):
    c = node.attrs.get("pads")
    if c is None:
        c = _const(node.inputs[1]) if len(node.inputs) > 1 else None
    v = node.attrs.get("value")
    if v is None:
        v = _const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] is not None else None
    r = _rank(node.inputs[0])
    width = None if c is None else [[int(c[d]), int(c[d + r])] for d in range(r)]
    return {"pad_width": width, "pad_value": 0.0 if v is None else float(v),
            "pad_mode": node.attrs.get("mode", "constant")}


def _pool_attrs(node):
    a = node.attrs
    nsp = len(a["kernel_shape"])
    out = {"pool_size": list(a["kernel_shape"]), "strides": list(a.get("strides") or [1] * nsp),
           "dilation": list(a.get("dilations") or [1] * nsp), "padding": list(a.get("pads") or [0] * 2 * nsp),
           "layout": "NHWC" if a.get("layout") == "NHWC" else "NCHW", "out_layout": "",
           "ceil_mode": bool(a.get("ceil_mode", 0))}
    if node.op == "AveragePool":
        out["count_include_pad"] = bool(a.get("count_include_pad", 0))
    return out


def _axis_attr(default):
    return lambda n: {"axis": int(n.attrs.get("axis", default))}


def _rank_is(k, r):
    return lambda n: _rank(n.inputs[k]) == r


def _simple(op, n_args=None, attrs=None, when=None):
    return View((op,), n_args, when=when, attrs=attrs)


RELAY_OPS = {
    "nn.conv1d": _conv_view(3),
    "nn.conv2d": _conv_view(4),
    "nn.conv3d": _conv_view(5),
    "nn.conv2d_transpose": View(("ConvTranspose",), 2, when=lambda n: _rank(n.inputs[0]) == 4 and not _has_bias(n),
                                attrs=_conv_transpose_attrs, outer="nn.bias_add"),
    "nn.dense": View(("MatMul", "Gemm"), 2, when=_dense_when, args=_dense_args, attrs=_dense_attrs,
                     outer="nn.bias_add"),
    "nn.batch_matmul": View(("MatMul",), 2, when=lambda n: _rank(n.inputs[0]) == 3 and _rank(n.inputs[1]) == 3,
                            attrs=lambda n: {"transpose_a": False, "transpose_b": False, "out_dtype": ""}),
    "nn.matmul": View(("MatMul",), 2, attrs=lambda n: {"transpose_a": False, "transpose_b": False, "units": None}),
    "nn.bias_add": View(("Add", "Conv", "Gemm"), when=_bias_when, args=_bias_args, attrs=_bias_attrs),
    "nn.relu": _simple("Relu"),
    "nn.leaky_relu": _simple("LeakyRelu", attrs=lambda n: {"alpha": float(n.attrs.get("alpha", 0.01))}),
    "nn.prelu": _simple("PRelu", attrs=lambda n: {"axis": 1}),
    "nn.softmax": _simple("Softmax", attrs=_axis_attr(-1)),
    "nn.log_softmax": _simple("LogSoftmax", attrs=_axis_attr(-1)),
    "nn.max_pool2d": _simple("MaxPool", when=_rank_is(0, 4), attrs=_pool_attrs),
    "nn.avg_pool2d": _simple("AveragePool", when=_rank_is(0, 4), attrs=_pool_attrs),
    "nn.max_pool1d": _simple("MaxPool", when=_rank_is(0, 3), attrs=_pool_attrs),
    "nn.avg_pool1d": _simple("AveragePool", when=_rank_is(0, 3), attrs=_pool_attrs),
    "nn.global_avg_pool2d": _simple("GlobalAveragePool", attrs=lambda n: {"layout": "NCHW", "out_layout": ""}),
    "nn.global_max_pool2d": _simple("GlobalMaxPool", attrs=lambda n: {"layout": "NCHW", "out_layout": ""}),
    "nn.batch_flatten": _simple("Flatten", when=lambda n: n.attrs.get("axis", 1) == 1),
    "nn.batch_norm": _simple("BatchNormalization", 5, attrs=lambda n: {"axis": 1, "epsilon": float(n.attrs.get(
        "epsilon", 1e-5)), "center": True, "scale": True}),
    "nn.pad": _simple("Pad", 1, attrs=_pad_attrs),
    "nn.dropout": _simple("Dropout", 1, attrs=lambda n: {"rate": float(n.attrs.get("ratio", 0.5))}),
    "nn.lrn": _simple("LRN", attrs=lambda n: {"size": int(n.attrs["size"]), "axis": 1,
                                              "alpha": float(n.attrs.get("alpha", 1e-4)),
                                              "beta": float(n.attrs.get("beta", 0.75)),
                                              "bias": float(n.attrs.get("bias", 1.0))}),
    "nn.depth_to_space": _simple("DepthToSpace", attrs=lambda n: {
        "block_size": int(n.attrs["blocksize"]), "layout": "NCHW", "mode": n.attrs.get("mode", "DCR")}),
    "nn.space_to_depth": _simple("SpaceToDepth", attrs=lambda n: {"block_size": int(n.attrs["blocksize"]),
                                                                  "layout": "NCHW"}),
    "add": _simple("Add"), "subtract": _simple("Sub"), "multiply": _simple("Mul"), "divide": _simple("Div"),
    "power": _simple("Pow"), "maximum": _simple("Max", when=lambda n: len(n.inputs) == 2),
    "minimum": _simple("Min", when=lambda n: len(n.inputs) == 2), "equal": _simple("Equal"),
    "less": _simple("Less"), "greater": _simple("Greater"), "less_equal": _simple("LessOrEqual"),
    "greater_equal": _simple("GreaterOrEqual"), "logical_and": _simple("And"), "logical_or": _simple("Or"),
    "logical_not": _simple("Not"), "where": _simple("Where"),
    "exp": _simple("Exp"), "log": _simple("Log"), "sqrt": _simple("Sqrt"), "sigmoid": _simple("Sigmoid"),
    "tanh": _simple("Tanh"), "negative": _simple("Neg"), "abs": _simple("Abs"), "erf": _simple("Erf"),
    "floor": _simple("Floor"), "ceil": _simple("Ceil"), "round": _simple("Round"), "sin": _simple("Sin"),
    "cos": _simple("Cos"), "sign": _simple("Sign"),
    "clip": _simple("Clip", 1, attrs=_clip_attrs),
    "cast": _simple("Cast", attrs=lambda n: {"dtype": n.outputs[0].type.dtype}),
    "reshape": _simple("Reshape", 1, attrs=_reshape_attrs),
    "transpose": _simple("Transpose", attrs=lambda n: {"axes": None if n.attrs.get("perm") is None
                                                       else list(n.attrs["perm"])}),
    "squeeze": _simple("Squeeze", 1, attrs=lambda n: {"axis": _axes_input(n, 1)}),
    "expand_dims": _simple("Unsqueeze", 1, attrs=lambda n: {"axis": (_axes_input(n, 1) or [0])[0],
                                                            "num_newaxis": len(_axes_input(n, 1) or [0])}),
    "concatenate": _simple("Concat", attrs=_axis_attr(0)),
    "take": _simple("Gather", attrs=_axis_attr(0)),
    "sum": _simple("ReduceSum", 1, attrs=_reduce_attrs), "mean": _simple("ReduceMean", 1, attrs=_reduce_attrs),
    "max": _simple("ReduceMax", 1, attrs=_reduce_attrs), "min": _simple("ReduceMin", 1, attrs=_reduce_attrs),
    "prod": _simple("ReduceProd", 1, attrs=_reduce_attrs),
    "argmax": _simple("ArgMax", attrs=lambda n: {"axis": [int(n.attrs.get("axis", 0))],
                                                 "keepdims": bool(n.attrs.get("keepdims", 1))}),
    "argmin": _simple("ArgMin", attrs=lambda n: {"axis": [int(n.attrs.get("axis", 0))],
                                                 "keepdims": bool(n.attrs.get("keepdims", 1))}),
    "image.resize2d": _simple("Resize", 1),
    "qnn.quantize": _simple("QuantizeLinear"),
    "qnn.dequantize": _simple("DequantizeLinear"),
    "qnn.conv2d": _simple("QLinearConv", when=_rank_is(0, 4)),
    "qnn.dense": _simple("QLinearMatMul"),
}


def views_of(node):
    """The relay names that a node is (its graph op's table entries that apply)."""
    return [name for name, v in RELAY_OPS.items() if v.applies(node)]


def graph_ops_of(name):
    """The graph ops a relay name can be."""
    return RELAY_OPS[name].ops
