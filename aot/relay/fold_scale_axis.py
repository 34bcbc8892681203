"""relay.transform.FoldScaleAxis's rewrites: a multiplication by a constant that scales each
channel of a convolution's output (backward) or input (forward) moves into the convolution's
weights, so that it costs nothing at run time once FoldConstant has folded the weights:
  backward: conv2d(x, w) * s            -> conv2d(x, w * s on w's O axis)
            (conv2d(x, w) + b) * s      -> conv2d(x, w * s) + b * s   (b per channel, add or bias_add)
  forward:  conv2d(x * s, w)            -> conv2d(x, w * s on w's I axis)   (groups = 1)
s must be a constant whose only non-1 axis is the channel one. A value read by other expressions
as well is left as it is (the others need it unscaled). TVM's forward folding also goes through
relu with a positive scale; this one folds the direct forms above only."""
from __future__ import annotations

from .analysis import consumers
from .expr import Call, Constant
from .expr_functor import rewrite_calls


def _channel_scale(const, layout):
    """The per-channel vector of a constant broadcast against a value of `layout` (channel axis
    C), or None if it scales along any other axis."""
    if not isinstance(const, Constant) or const.data.ndim > len(layout):
        return None
    d = const.data.reshape((1,) * (len(layout) - const.data.ndim) + const.data.shape)
    c = layout.index("C")
    if any(n != 1 for i, n in enumerate(d.shape) if i != c):
        return None
    return d.reshape(-1)


def _along(vec, layout, axis_letter):
    """vec shaped to broadcast along axis_letter of a value laid out as layout."""
    shape = [1] * len(layout)
    shape[layout.index(axis_letter)] = vec.size
    return Constant(vec.reshape(shape))


def _uses(body):
    """id(value) -> how many operand slots read it."""
    return {k: len(v) for k, v in consumers(body)[1].items()}


def _is_conv(e):
    return isinstance(e, Call) and e.op == "nn.conv2d"


def _scaled_conv(conv, args, vec, axis_letter):
    """conv (its new args) with its weight multiplied by vec along the weight's axis_letter."""
    w = Call("multiply", [args[1], _along(vec, conv.attrs["kernel_layout"], axis_letter)])
    return Call("nn.conv2d", [args[0], w], dict(conv.attrs))


def backward_fold(func):
    uses = _uses(func.body)

    def on_call(e, args):
        if e.op != "multiply":
            return None
        for k in (0, 1):
            inner, scale = e.args[k], e.args[1 - k]
            if uses.get(id(inner), 0) != 1:
                continue
            new_inner = args[k]
            if _is_conv(inner):
                vec = _channel_scale(scale, inner.attrs["data_layout"])
                if vec is not None:
                    return _scaled_conv(inner, new_inner.args, vec, "O")
            if isinstance(inner, Call) and inner.op in ("add", "nn.bias_add"):
                conv, bias = inner.args
                if not _is_conv(conv) or uses.get(id(conv), 0) != 1 or not isinstance(bias, Constant):
                    continue
                lay = conv.attrs["data_layout"]
                vec = _channel_scale(scale, lay)
                if vec is None:
                    continue
                if inner.op == "nn.bias_add":
                    if inner.attrs.get("axis", 1) % len(lay) != lay.index("C") or bias.data.ndim != 1:
                        continue
                    new_bias = Constant(bias.data * vec)
                else:
                    if _channel_scale(bias, lay) is None:
                        continue
                    new_bias = Call("multiply", [bias, scale])
                return Call(inner.op, [_scaled_conv(conv, new_inner.args[0].args, vec, "O"), new_bias],
                            dict(inner.attrs))
        return None
    return rewrite_calls(func, on_call)


def forward_fold(func):
    uses = _uses(func.body)

    def on_call(e, args):
        if not _is_conv(e) or e.attrs.get("groups", 1) != 1:
            return None
        x = e.args[0]
        if not (isinstance(x, Call) and x.op == "multiply" and uses.get(id(x), 0) == 1):
            return None
        for k in (0, 1):
            vec = _channel_scale(x.args[1 - k], e.attrs["data_layout"])
            if vec is not None:
                return _scaled_conv(e, [args[0].args[k], args[1]], vec, "I")
        return None
    return rewrite_calls(func, on_call)

