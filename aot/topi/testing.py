"""topi.testing: numpy references for checking topi's operators (TVM: conv2d_nchw_python,
softmax_python, ...), computed in float64 and returned in the input's dtype."""
from __future__ import annotations

import numpy as np

from .nn.conv2d import get_pad_tuple


def conv2d_nchw_python(a_np, w_np, stride, padding, groups=1):
    """a_np [batch, in_channel, h, w] convolved with w_np [num_filter, in_channel // groups, kh, kw]."""
    n, c, h, w = a_np.shape
    f, cg, kh, kw = w_np.shape
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    top, left, bottom, right = get_pad_tuple(padding, (kh, kw))
    xp = np.pad(a_np.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh, ow = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    out = np.zeros((n, f, oh, ow))
    fg = f // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w_np[g * fg:(g + 1) * fg].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
                out[:, g * fg:(g + 1) * fg] += np.einsum("nchw,fc->nfhw", patch, ws[:, :, i, j])
    return out.astype(a_np.dtype)


def softmax_python(a_np, axis=1):
    z = np.exp(a_np.astype(np.float64) - a_np.max(axis=axis, keepdims=True))
    return (z / z.sum(axis=axis, keepdims=True)).astype(a_np.dtype)


def log_softmax_python(a_np, axis=1):
    x = a_np.astype(np.float64)
    z = x - x.max(axis=axis, keepdims=True)
    return (z - np.log(np.exp(z).sum(axis=axis, keepdims=True))).astype(a_np.dtype)


def dense_python(a_np, w_np, b_np=None):
    out = a_np.astype(np.float64) @ w_np.astype(np.float64).T
    if b_np is not None:
        out = out + b_np
    return out.astype(a_np.dtype)
