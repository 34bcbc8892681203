"""topi.nn: neural-network operators as tensor-expression stages, with TVM's names."""
from .conv2d import (conv, conv2d, conv2d_hwcn, conv2d_nchw, conv2d_nhwc, depthwise_conv2d_nchw,  # noqa: F401
                     get_pad_tuple, group_conv2d_nchw)
from .dense import bias_add, dense, matmul  # noqa: F401
from .elemwise import leaky_relu, prelu, relu  # noqa: F401
from .flatten import flatten  # noqa: F401
from .pad import pad  # noqa: F401
from .pooling import global_pool, pool2d  # noqa: F401
from .softmax import log_softmax, softmax  # noqa: F401
