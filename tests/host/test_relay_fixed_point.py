"""relay's fixed_point_multiply and nn.conv2d of int16 data and weight into int32 (the quantised
depthwise convolution of TVM's MLF workspace test), built to C and run, against numpy written from
TVM's definitions: q_multiply_shift(x, m, 31, s) = ((x << max(s, 0)) * m + 2^(30 + max(-s, 0)))
>> (31 + max(-s, 0)) in 64 bits, and an int32 accumulation that keeps the low 32 bits."""
import numpy as np
import pytest

import aot as tvm
from aot import relay
from aot.relay.backend import Executor, Runtime


def _run(func, inputs):
    mod = tvm.IRModule.from_expr(func)
    with tvm.transform.PassContext(opt_level=3, config={"tir.disable_vectorize": True}):
        fac = relay.build(mod, target="c", executor=Executor("aot"), runtime=Runtime("crt"))
    out = tvm.run(fac.tar, inputs, sanitize=True)
    return next(iter(out.values()))


def _q_multiply_shift(x, m, s):
    ls, rs = max(s, 0), max(-s, 0)
    return np.array([(((int(v) << ls) * m + (1 << (30 + rs))) >> (31 + rs)) for v in x.ravel()],
                    dtype=np.int64).astype(np.int32).reshape(x.shape)


@pytest.mark.parametrize("m,s", [(2080045879, -4), (1 << 30, 0), (1518500250, 3), (-1073741824, -1), (2080045879, -31)])
def test_fixed_point_multiply_is_tvms_q_multiply_shift(m, s):
    rng = np.random.default_rng(7)
    big = 1 << (31 - max(s, 0) - 1)       # inputs whose exact result fits int32
    x = np.concatenate([rng.integers(-big, big, 60), [0, 1, -1, 7, -7, big - 1, -big]]).astype(np.int32)
    v = relay.var("x", shape=x.shape, dtype="int32")
    got = _run(relay.Function([v], relay.fixed_point_multiply(v, m, s)), {"x": x})
    np.testing.assert_array_equal(got, _q_multiply_shift(x, m, s))


def _depthwise_nhwc_hwoi(x, w):
    """x [1, H, W, C] int16, w [3, 3, C, 1] (HWOI), padding 1: the int64 sum, then its low 32 bits."""
    _, H, W, C = x.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    acc = np.zeros((1, H, W, C), np.int64)
    for kh in range(3):
        for kw in range(3):
            acc += xp[:, kh:kh + H, kw:kw + W, :] * w[kh, kw, :, 0].astype(np.int64)
    return acc.astype(np.int32)           # numpy keeps the low 32 bits


@pytest.mark.parametrize("lo,hi,bias", [(-2000, 2000, True), (-32768, 32768, False)])
def test_int16_depthwise_conv_into_int32_then_requantised(lo, hi, bias):
    rng = np.random.default_rng(3)
    x = rng.integers(lo, hi, (1, 6, 5, 4)).astype(np.int16)
    w = rng.integers(lo, hi, (3, 3, 4, 1)).astype(np.int16)
    b = (rng.integers(-1000, 1000, (1, 1, 1, 4)) if bias else np.zeros((1, 1, 1, 4))).astype(np.int32)
    p0 = relay.var("p0", shape=x.shape, dtype="int16")
    p1 = relay.var("p1", shape=w.shape, dtype="int16")
    p2 = relay.var("p2", shape=b.shape, dtype="int32")
    conv = relay.nn.conv2d(p0, p1, padding=[1, 1, 1, 1], groups=4, channels=4, kernel_size=[3, 3],
                           data_layout="NHWC", kernel_layout="HWOI", out_dtype="int32")
    y = relay.cast(relay.clip(relay.fixed_point_multiply(relay.add(conv, p2), 2080045879, -4), 0, 255), "uint8")
    got = _run(relay.Function([p0, p1, p2], y), {"p0": x, "p1": w, "p2": b})
    acc = _depthwise_nhwc_hwoi(x, w)
    if bias:
        acc = acc + b
    want = np.clip(_q_multiply_shift(acc, 2080045879, -4), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(got, want)
