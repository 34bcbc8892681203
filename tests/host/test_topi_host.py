"""aot.topi's computes built for the host ("llvm" / "c", the generic schedules) give numpy's values:
intro_topi's sum of (a + b + a * b) / 2, softmax, conv2d_nchw + relu, and the other operators. The
references are numpy (a convolution written here with np.pad and a loop over the kernel taps)."""
import numpy as np
import pytest

import aot
from aot import te, topi

RNG = np.random.default_rng(7)


def _run(outs, ins, arrays, target="llvm", schedule=None):
    outs = outs if isinstance(outs, list) else [outs]
    with aot.target.Target(target):
        s = (schedule or topi.generic.schedule_injective)(outs)
        f = aot.build(s, ins + outs, target)
    res = [np.zeros(tuple(int(d) for d in o.shape), o.dtype) for o in outs]
    f(*arrays, *res)
    return res if len(res) > 1 else res[0]


def _uniform(*shape):
    return RNG.uniform(-1, 1, size=shape).astype("float32")


@pytest.mark.parametrize("target", ["llvm", "c"])
def test_intro_topi_sum_of_broadcast_ops(target):
    x, y = 100, 10
    a = te.placeholder((x, y, y), name="a")
    b = te.placeholder((y, y), name="b")
    g = topi.sum(topi.elemwise_sum([a + b, a * b]) / 2.0)
    a_np = RNG.uniform(size=(x, y, y)).astype("float32")
    b_np = RNG.uniform(size=(y, y)).astype("float32")
    out = _run(g, [a, b], [a_np, b_np], target, topi.generic.schedule_reduce)
    np.testing.assert_allclose(out, np.sum(np.add(a_np + b_np, a_np * b_np) / 2.0), rtol=1e-5)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_reductions_match_numpy(axis, keepdims):
    A = te.placeholder((3, 4, 5), name="A")
    a = _uniform(3, 4, 5)
    for fn, ref in ((topi.sum, np.sum), (topi.max, np.max), (topi.min, np.min), (topi.prod, np.prod)):
        out = _run(fn(A, axis=axis, keepdims=keepdims), [A], [a], schedule=topi.generic.schedule_reduce)
        np.testing.assert_allclose(out, ref(a, axis=axis, keepdims=keepdims), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_argmax_argmin_take_the_first_extreme(axis):
    A = te.placeholder((6, 5), name="A")
    a = RNG.integers(0, 3, size=(6, 5)).astype("float32")         # many ties
    for fn, ref in ((topi.argmax, np.argmax), (topi.argmin, np.argmin)):
        out = _run(fn(A, axis=axis), [A], [a], schedule=topi.generic.schedule_reduce)
        np.testing.assert_array_equal(out, ref(a, axis=axis))


def _softmax_ref(x, axis):
    z = np.exp(x - x.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_and_log_softmax(axis):
    X = te.placeholder((16, 24), name="X")
    x = _uniform(16, 24) * 5
    out = _run(topi.nn.softmax(X, axis), [X], [x], schedule=topi.generic.schedule_softmax)
    np.testing.assert_allclose(out, _softmax_ref(x, axis), rtol=1e-5, atol=1e-7)
    out = _run(topi.nn.log_softmax(X, axis), [X], [x], schedule=topi.generic.schedule_softmax)
    np.testing.assert_allclose(out, np.log(_softmax_ref(x, axis)), rtol=1e-5, atol=1e-5)


def _conv2d_nchw_ref(x, w, stride, pad, dil):
    """Direct convolution: pad, then for each kernel tap add the strided input slice times the tap."""
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    t, l, b, r = pad
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    oh = (h + t + b - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (wd + l + r - (kw - 1) * dil[1] - 1) // stride[1] + 1
    out = np.zeros((n, f, oh, ow), np.float64)
    for i in range(kh):
        for j in range(kw):
            y0, x0 = i * dil[0], j * dil[1]
            patch = xp[:, :, y0:y0 + stride[0] * (oh - 1) + 1:stride[0], x0:x0 + stride[1] * (ow - 1) + 1:stride[1]]
            out += np.einsum("nchw,fc->nfhw", patch, w[:, :, i, j])
    return out.astype("float32")


@pytest.mark.parametrize("stride,padding,dilation,pads", [
    (1, 2, 1, (2, 2, 2, 2)), (2, 1, 1, (1, 1, 1, 1)), ((1, 2), (0, 1, 2, 1), (2, 1), (0, 1, 2, 1)),
])
def test_conv2d_nchw_relu_matches_a_direct_convolution(stride, padding, dilation, pads):
    data = te.placeholder((2, 3, 11, 12), name="data")
    kernel = te.placeholder((5, 3, 3, 3), name="kernel")
    out = topi.nn.relu(topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation))
    x, w = _uniform(2, 3, 11, 12), _uniform(5, 3, 3, 3)
    got = _run(out, [data, kernel], [x, w], schedule=topi.generic.schedule_conv2d_nchw)
    st = (stride, stride) if isinstance(stride, int) else stride
    dl = (dilation, dilation) if isinstance(dilation, int) else dilation
    np.testing.assert_allclose(got, np.maximum(_conv2d_nchw_ref(x, w, st, pads, dl), 0), rtol=1e-4, atol=1e-5)


def test_dense_bias_and_pools():
    d = te.placeholder((8, 16), name="d")
    w = te.placeholder((4, 16), name="w")
    b = te.placeholder((4,), name="b")
    dv, wv, bv = _uniform(8, 16), _uniform(4, 16), _uniform(4)
    out = _run(topi.nn.dense(d, w, b), [d, w, b], [dv, wv, bv], schedule=topi.generic.schedule_dense)
    np.testing.assert_allclose(out, dv @ wv.T + bv, rtol=1e-5, atol=1e-6)

    X = te.placeholder((1, 2, 7, 7), name="X")
    x = _uniform(1, 2, 7, 7)
    got = _run(topi.nn.pool2d(X, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max"), [X], [x],
               schedule=topi.generic.schedule_pool)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    ref = np.stack([np.stack([xp[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(2, 3)) for j in range(4)], -1)
                    for i in range(4)], -2)
    np.testing.assert_allclose(got, ref)
    got = _run(topi.nn.pool2d(X, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "avg", count_include_pad=False), [X], [x],
               schedule=topi.generic.schedule_pool)
    xz = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ones = np.pad(np.ones_like(x), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.stack([np.stack([xz[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].sum(axis=(2, 3)) /
                              ones[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].sum(axis=(2, 3)) for j in range(4)], -1)
                    for i in range(4)], -2)
    # a window's mean of values in [-1, 1] can cancel to ~1e-4, where float32 sums in another
    # order differ by ~5e-9: relative error alone is no measure there (the inputs follow the
    # module's RNG, so which windows cancel depends on the tests run before in the worker)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_injective_operators():
    X = te.placeholder((2, 3, 4), name="X")
    Y = te.placeholder((3, 1), name="Y")
    x, y = _uniform(2, 3, 4), _uniform(3, 1)
    cases = [
        (topi.transpose(X, (2, 0, 1)), [X], np.transpose(x, (2, 0, 1))),
        (topi.nn.flatten(X), [X], x.reshape(2, 12)),
        (topi.nn.relu(topi.nn.flatten(X)), [X], np.maximum(x.reshape(2, 12), 0)),
        (topi.reshape(X, (4, -1)), [X], x.reshape(4, -1)),
        (topi.nn.pad(X, (0, 1, 2), (1, 0, 1), 0.5), [X], np.pad(x, ((0, 1), (1, 0), (2, 1)), constant_values=0.5)),
        (topi.exp(X) - Y, [X, Y], np.exp(x) - y),
        (topi.maximum(X, Y) * 2.0, [X, Y], np.maximum(x, y) * 2.0),
        (1.0 - topi.sigmoid(X), [X], 1.0 - 1 / (1 + np.exp(-x))),
    ]
    for t, ins, ref in cases:
        got = _run(t, ins, [x, y][:len(ins)])
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_topi_testing_references_agree_with_the_direct_convolution():
    x, w = _uniform(1, 4, 9, 9), _uniform(6, 2, 3, 3)
    ref = topi.testing.conv2d_nchw_python(x, w, 2, 1, groups=2)
    for g in range(2):
        np.testing.assert_allclose(ref[:, 3 * g:3 * g + 3], _conv2d_nchw_ref(x[:, 2 * g:2 * g + 2], w[3 * g:3 * g + 3],
                                                                             (2, 2), (1, 1, 1, 1), (1, 1)), rtol=1e-5,
                                   atol=1e-6)
    data = te.placeholder((1, 4, 9, 9), name="data")
    kernel = te.placeholder((6, 2, 3, 3), name="kernel")
    got = _run(topi.nn.group_conv2d_nchw(data, kernel, 2, 1, 1, 2), [data, kernel], [x, w],
               schedule=topi.generic.schedule_group_conv2d_nchw)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_symbolic_sizes_stay_symbolic():
    """intro_topi's first example: topi.sum over te.var sizes; one module, sized by its first call."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    C = topi.sum(A, axis=1)
    f = aot.build(te.create_schedule(C.op), [A, C], "llvm")
    a = _uniform(5, 7)
    c = np.zeros(5, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a.sum(axis=1), rtol=1e-5, atol=1e-6)
