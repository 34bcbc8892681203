"""topi.nn.conv2d_hwcn, as the tedd tutorial builds it (conv + bias + relu under the generic
schedule, then s.normalize()), built for the host and run: numpy's values, the convolution
written here tap by tap over the padded HWCN input."""
import numpy as np
import pytest

import aot
from aot import te, topi


def _conv_hwcn(x, w, stride, pad, dil):
    """x [H, W, C, N], w [KH, KW, C, F] -> [OH, OW, F, N]."""
    kh, kw, _, f = w.shape
    xp = np.pad(x, ((pad[0], pad[2]), (pad[1], pad[3]), (0, 0), (0, 0)))
    oh = (xp.shape[0] - (kh - 1) * dil - 1) // stride + 1
    ow = (xp.shape[1] - (kw - 1) * dil - 1) // stride + 1
    out = np.zeros((oh, ow, f, x.shape[3]))
    for i in range(kh):
        for j in range(kw):
            patch = xp[i * dil:i * dil + stride * oh:stride, j * dil:j * dil + stride * ow:stride]
            out += np.einsum("hwcn,cf->hwfn", patch, w[i, j])
    return out


@pytest.mark.parametrize("stride,padding,dilation,pads", [(1, "SAME", 1, (1, 1, 1, 1)), (2, "VALID", 1, (0, 0, 0, 0)),
                                                          (1, 2, 2, (2, 2, 2, 2))])
def test_conv2d_hwcn_bias_relu_matches_numpy(stride, padding, dilation, pads):
    rng = np.random.default_rng(3)
    A = te.placeholder((9, 9, 4, 2), name="A")
    W = te.placeholder((3, 3, 4, 5), name="W")
    B = te.placeholder((1, 5, 1), name="bias")
    with aot.target.Target("llvm"):
        conv = topi.nn.conv2d_hwcn(A, W, stride, padding, dilation)
        out = topi.nn.relu(topi.add(conv, B))
        s = topi.generic.schedule_conv2d_hwcn([out])
    s = s.normalize()
    f = aot.build(s, [A, W, B, out], "llvm")
    a = rng.uniform(-1, 1, (9, 9, 4, 2)).astype("float32")
    w = rng.uniform(-1, 1, (3, 3, 4, 5)).astype("float32")
    b = rng.uniform(-1, 1, (1, 5, 1)).astype("float32")
    res = np.zeros([int(d) for d in out.shape], "float32")
    f(a, w, b, res)
    ref = np.maximum(_conv_hwcn(a.astype(np.float64), w.astype(np.float64), stride, pads, dilation) + b, 0)
    assert res.shape == ref.shape
    np.testing.assert_allclose(res, ref, rtol=1e-5, atol=1e-5)
