"""relay.testing.synthetic: TVM's small synthetic test network, with the shapes of a real one's
parts: a dense layer over the last axis and a 3x3 conv with softmax, summed, then bias, batch
norm, and the same pair again. Every parameter is initialised to a constant (init.Constant)."""
from __future__ import annotations

from .. import nn
from ..analysis import free_vars
from ..expr import Function, var
from ..op import add, reshape, reshape_like
from . import layers
from .init import Constant, create_workload


def get_net(input_shape=(1, 3, 24, 12), dtype="float32", wtype=None):
    """The network as a relay Function of "data" (input_shape, NCHW) and its parameters; wtype:
    the parameters' dtype (dtype's by default)."""
    wtype = wtype or dtype
    data = var("data", shape=input_shape, dtype=dtype)
    width = input_shape[3]
    rows = [-1, width]
    conv_shape = [input_shape[1], input_shape[1], 3, 3]

    def dense_relu(x, name):
        w = var(name, shape=[width, width], dtype=wtype)
        return reshape_like(nn.relu(nn.dense(reshape(x, rows), w)), data)

    def conv_softmax(x, name):
        return nn.softmax(nn.conv2d(x, var(name, shape=conv_shape, dtype=wtype), padding=1, kernel_size=3))

    added = add(dense_relu(data, "dense_weight"), conv_softmax(data, "conv_weight"))
    biased = layers.batch_norm_infer(nn.bias_add(added, var("bias", dtype=wtype)), name="batch_norm")
    out = add(dense_relu(biased, "dense2_weight"), conv_softmax(biased, "conv2_weight"))
    return Function(free_vars(out), out)


def get_workload(input_shape=(1, 3, 24, 12), dtype="float32", wtype=None):
    """(IRModule, params) of the synthetic network, every parameter a constant."""
    return create_workload(get_net(input_shape, dtype, wtype), initializer=Constant())
