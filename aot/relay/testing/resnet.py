"""relay.testing.resnet: the pre-activation ResNet ("Identity Mappings in Deep Residual Networks",
He et al. 2016) that TVM's tutorials build, with the same layer names and depths: get_workload
-> (IRModule, params) initialised by create_workload."""
from __future__ import annotations

from ...errors import AotError
from .. import nn
from ..analysis import free_vars
from ..expr import Function, var
from ..op import add
from . import layers
from .init import create_workload

# depth -> units per stage (ImageNet-sized inputs)
_IMAGENET_UNITS = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3],
                   200: [3, 24, 36, 3], 269: [3, 30, 48, 8]}


def residual_unit(data, num_filter, stride, dim_match, name, bottle_neck=True, data_layout="NCHW",
                  kernel_layout="OIHW"):
    """bn -> relu -> conv, twice (or three times, 1x1 / 3x3 / 1x1 with a bottleneck of a quarter
    of the channels), plus the shortcut: the input, or a strided 1x1 conv of the first activation."""
    axis = data_layout.index("C")

    def bn_relu(x, tag):
        return nn.relu(layers.batch_norm_infer(data=x, epsilon=2e-5, axis=axis, name=f"{name}_{tag}"))

    def conv(x, tag, channels, kernel, strides, padding):
        return layers.conv2d(data=x, channels=channels, kernel_size=kernel, strides=strides, padding=padding,
                             name=f"{name}_{tag}", data_layout=data_layout, kernel_layout=kernel_layout)

    act1 = bn_relu(data, "bn1")
    if bottle_neck:
        quarter = int(num_filter * 0.25)
        y = conv(act1, "conv1", quarter, (1, 1), stride, (0, 0))
        y = conv(bn_relu(y, "bn2"), "conv2", quarter, (3, 3), (1, 1), (1, 1))
        y = conv(bn_relu(y, "bn3"), "conv3", num_filter, (1, 1), (1, 1), (0, 0))
    else:
        y = conv(act1, "conv1", num_filter, (3, 3), stride, (1, 1))
        y = conv(bn_relu(y, "bn2"), "conv2", num_filter, (3, 3), (1, 1), (1, 1))
    shortcut = data if dim_match else conv(act1, "sc", num_filter, (1, 1), stride, (0, 0))
    return add(y, shortcut)


def resnet(units, num_stages, filter_list, num_classes, data_shape, bottle_neck=True, layout="NCHW",
           dtype="float32"):
    if len(units) != num_stages:
        raise AotError(f"resnet: {len(units)} unit counts for {num_stages} stages")
    if layout not in ("NCHW", "NHWC"):
        raise AotError(f"resnet: layout {layout!r} is not NCHW or NHWC")
    kernel_layout = "OIHW" if layout == "NCHW" else "HWIO"
    axis = layout.index("C")
    height = data_shape[layout.index("H")]
    data = var("data", shape=data_shape, dtype=dtype)
    body = layers.batch_norm_infer(data=data, epsilon=2e-5, axis=axis, scale=False, name="bn_data")
    if height <= 32:            # CIFAR-sized: one 3x3 conv, no pooling
        body = layers.conv2d(data=body, channels=filter_list[0], kernel_size=(3, 3), strides=(1, 1), padding=(1, 1),
                             name="conv0", data_layout=layout, kernel_layout=kernel_layout)
    else:                       # ImageNet-sized: 7x7 / 2 conv, bn, relu, 3x3 / 2 max pool
        body = layers.conv2d(data=body, channels=filter_list[0], kernel_size=(7, 7), strides=(2, 2), padding=(3, 3),
                             name="conv0", data_layout=layout, kernel_layout=kernel_layout)
        body = nn.relu(layers.batch_norm_infer(data=body, epsilon=2e-5, axis=axis, name="bn0"))
        body = nn.max_pool2d(body, pool_size=(3, 3), strides=(2, 2), padding=(1, 1), layout=layout)
    for i in range(num_stages):
        stride = (1, 1) if i == 0 else (2, 2)
        body = residual_unit(body, filter_list[i + 1], stride, False, f"stage{i + 1}_unit1", bottle_neck, layout,
                             kernel_layout)
        for j in range(units[i] - 1):
            body = residual_unit(body, filter_list[i + 1], (1, 1), True, f"stage{i + 1}_unit{j + 2}", bottle_neck,
                                 layout, kernel_layout)
    body = nn.relu(layers.batch_norm_infer(data=body, epsilon=2e-5, axis=axis, name="bn1"))
    body = nn.batch_flatten(nn.global_avg_pool2d(body, layout=layout))
    net = nn.softmax(layers.dense_add_bias(data=body, units=num_classes, name="fc1"))
    return Function(free_vars(net), net)


def get_net(batch_size, num_classes, num_layers=50, image_shape=(3, 224, 224), layout="NCHW", dtype="float32",
            **kwargs):
    height = image_shape[0] if layout == "NHWC" else image_shape[1]
    data_shape = (batch_size,) + tuple(image_shape)
    if height <= 28:
        if (num_layers - 2) % 9 == 0 and num_layers >= 164:
            units, filters, bottle = [(num_layers - 2) // 9] * 3, [16, 64, 128, 256], True
        elif (num_layers - 2) % 6 == 0 and num_layers < 164:
            units, filters, bottle = [(num_layers - 2) // 6] * 3, [16, 16, 32, 64], False
        else:
            raise AotError(f"resnet: no {num_layers}-layer ResNet for {height}-pixel images")
        stages = 3
    else:
        if num_layers not in _IMAGENET_UNITS:
            raise AotError(f"resnet: num_layers {num_layers} is not one of {sorted(_IMAGENET_UNITS)}")
        units, stages = _IMAGENET_UNITS[num_layers], 4
        bottle = num_layers >= 50
        filters = [64, 256, 512, 1024, 2048] if bottle else [64, 64, 128, 256, 512]
    return resnet(units, stages, filters, num_classes, data_shape, bottle, layout, dtype)


def get_workload(batch_size=1, num_classes=1000, num_layers=18, image_shape=(3, 224, 224), layout="NCHW",
                 dtype="float32", **kwargs):
    """(IRModule, params) of a ResNet of num_layers for batch_size images of image_shape."""
    return create_workload(get_net(batch_size, num_classes, num_layers, image_shape, layout, dtype, **kwargs))
