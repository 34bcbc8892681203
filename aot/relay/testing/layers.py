"""relay.testing.layers: layers that make their own parameters, named after the layer (name +
"_weight", "_bias", "_gamma", "_beta", "_moving_mean", "_moving_var"), so that create_workload's
initialisers know them by their endings."""
from __future__ import annotations

from .. import nn
from ..expr import var


def batch_norm_infer(data, gamma=None, beta=None, moving_mean=None, moving_var=None, **kwargs):
    """The normalised output of nn.batch_norm (its [0]), parameters made when not given."""
    name = kwargs.pop("name")
    gamma = gamma if gamma is not None else var(name + "_gamma")
    beta = beta if beta is not None else var(name + "_beta")
    moving_mean = moving_mean if moving_mean is not None else var(name + "_moving_mean")
    moving_var = moving_var if moving_var is not None else var(name + "_moving_var")
    return nn.batch_norm(data, gamma, beta, moving_mean, moving_var, **kwargs)[0]


def conv2d(data, weight=None, **kwargs):
    name = kwargs.pop("name")
    return nn.conv2d(data, weight if weight is not None else var(name + "_weight"), **kwargs)


def conv2d_transpose(data, weight=None, **kwargs):
    name = kwargs.pop("name")
    return nn.conv2d_transpose(data, weight if weight is not None else var(name + "_weight"), **kwargs)


def dense_add_bias(data, weight=None, bias=None, units=None, **kwargs):
    name = kwargs.pop("name")
    weight = weight if weight is not None else var(name + "_weight")
    bias = bias if bias is not None else var(name + "_bias")
    return nn.bias_add(nn.dense(data, weight, units, **kwargs), bias, axis=-1)


def conv_kernel_layout(data_layout, is_depthwise=False):
    """The kernel layout that goes with a data layout (OIHW with NCHW, HWIO / HWOI with NHWC)."""
    table = {("NCHW", False): "OIHW", ("NCHW", True): "OIHW", ("NHWC", False): "HWIO", ("NHWC", True): "HWOI"}
    return table[(data_layout, bool(is_depthwise))]
