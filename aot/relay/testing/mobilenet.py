"""relay.testing.mobilenet: MobileNet v1 ("MobileNets: Efficient Convolutional Neural Networks for
Mobile Vision Applications", Howard et al. 2017) as TVM's testing workload builds it: a strided
3x3 conv, thirteen depthwise-separable blocks (3x3 depthwise, 1x1 pointwise, each followed by
batch norm and relu), global average pooling and a dense classifier with softmax. Parameter names
are the layers' (conv_block_1_conv_weight, separable_conv_block_<k>_..., fc_weight, fc_bias), so
that create_workload initialises them as TVM does."""
from __future__ import annotations

from ...errors import AotError
from .. import nn
from ..analysis import free_vars
from ..expr import Function, var
from . import layers
from .init import create_workload

# (depthwise channels, pointwise channels, downsample) of each separable block, at alpha 1
_BLOCKS = [(32, 64, False), (64, 128, True), (128, 128, False), (128, 256, True), (256, 256, False),
           (256, 512, True)]
_DEEP = [(512, 512, False)] * 5 + [(512, 1024, True), (1024, 1024, False)]
_SHALLOW = [(512, 1024, True), (1024, 1024, True)]


def _layout_check(layout):
    if layout not in ("NCHW", "NHWC"):
        raise AotError(f"mobilenet: layout {layout!r} is not NCHW or NHWC")


def conv_block(data, name, channels, kernel_size=(3, 3), strides=(1, 1), padding=(1, 1), epsilon=1e-5,
               layout="NCHW"):
    """conv -> batch norm -> relu."""
    _layout_check(layout)
    y = layers.conv2d(data=data, channels=channels, kernel_size=kernel_size, strides=strides, padding=padding,
                      data_layout=layout, kernel_layout=layers.conv_kernel_layout(layout), name=name + "_conv")
    # the batch norm of the first block normalises along axis 1 whatever the layout, as TVM's does
    return nn.relu(layers.batch_norm_infer(data=y, epsilon=epsilon, name=name + "_bn"))


def separable_conv_block(data, name, depthwise_channels, pointwise_channels, kernel_size=(3, 3), downsample=False,
                         padding=(1, 1), epsilon=1e-5, layout="NCHW", dtype="float32"):
    """A depthwise conv (stride 2 when downsample), batch norm, relu, then a 1x1 conv to
    pointwise_channels, batch norm, relu."""
    _layout_check(layout)
    kernel_size = tuple(kernel_size)
    wshape = (depthwise_channels, 1) + kernel_size if layout == "NCHW" else kernel_size + (depthwise_channels, 1)
    axis = layout.index("C")
    weight = var(name + "_weight", shape=wshape, dtype=dtype)
    y = layers.conv2d(data=data, weight=weight, channels=depthwise_channels, groups=depthwise_channels,
                      kernel_size=kernel_size, strides=(2, 2) if downsample else (1, 1), padding=padding,
                      data_layout=layout, kernel_layout=layers.conv_kernel_layout(layout, True),
                      name=name + "_depthwise_conv1")
    y = nn.relu(layers.batch_norm_infer(data=y, epsilon=epsilon, axis=axis, name=name + "_bn1"))
    y = layers.conv2d(data=y, channels=pointwise_channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                      data_layout=layout, kernel_layout=layers.conv_kernel_layout(layout), name=name + "_conv2")
    return nn.relu(layers.batch_norm_infer(data=y, epsilon=epsilon, axis=axis, name=name + "_bn2"))


def mobile_net(num_classes=1000, data_shape=(1, 3, 224, 224), dtype="float32", alpha=1.0, is_shallow=False,
               layout="NCHW"):
    """The network as a relay Function of "data" and its parameters; alpha scales every width."""
    data = var("data", shape=data_shape, dtype=dtype)
    body = conv_block(data, "conv_block_1", int(32 * alpha), strides=(2, 2), layout=layout)
    for k, (dw, pw, down) in enumerate(_BLOCKS + (_SHALLOW if is_shallow else _DEEP), start=1):
        body = separable_conv_block(body, f"separable_conv_block_{k}", int(dw * alpha), int(pw * alpha),
                                    downsample=down, layout=layout, dtype=dtype)
    flat = nn.batch_flatten(nn.global_avg_pool2d(body, layout=layout))
    fc = nn.bias_add(nn.dense(flat, var("fc_weight"), units=num_classes), var("fc_bias"))
    out = nn.softmax(fc)
    return Function(free_vars(out), out)


def get_workload(batch_size=1, num_classes=1000, image_shape=(3, 224, 224), dtype="float32", layout="NCHW"):
    """(IRModule, params) of MobileNet v1 (alpha 1) for batch_size images of image_shape, the
    parameters initialised by create_workload (Xavier, numpy seeded with 0)."""
    data_shape = (batch_size,) + tuple(image_shape)
    return create_workload(mobile_net(num_classes, data_shape, dtype, 1.0, False, layout))
