"""The host rules' heavy kernels (aot/schedules/x86.py, HEAVY_*): a conv of at least HEAVY_WORK
multiply-adds gets a larger statement budget, register blocks of up to 6 pixels x 16 lanes and
its reduce loops ordered along the input's layout (channels innermost). Checked against
onnxruntime (ASan/UBSan and the board's -O3), structurally, and that light kernels (every
MLPerf Tiny one) keep their code."""
import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import aot
from aot.schedules import x86
from conftest import ort_run
from test_x86_schedule import RNG, _c_source, _conv_model, _matches_onnxruntime, _without_host_rules


def _bottleneck(hw, cin, c1, c2, stride):
    """ResNet's bottleneck on an NHWC input (made NCHW, then back): 1x1 conv, padded 3x3 conv
    (strided), 1x1 conv added to the shortcut (a strided 1x1 projection), relu; channels-last
    on the host."""
    def w(*shape):
        return (RNG.standard_normal(shape) * (2.0 / np.prod(shape[1:])) ** 0.5).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("wa", w(c1, cin, 1, 1)), ("ba", w(c1)), ("wb", w(c1, c1, 3, 3)), ("bb", w(c1)),
        ("wc", w(c2, c1, 1, 1)), ("bc", w(c2)), ("ws", w(c2, cin, 1, 1))]]
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["xt", "wa", "ba"], ["a"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("Conv", ["ar", "wb", "bb"], ["b"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              strides=[stride, stride]),
             helper.make_node("Relu", ["b"], ["br"]),
             helper.make_node("Conv", ["br", "wc", "bc"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("Conv", ["xt", "ws"], ["sc"], kernel_shape=[1, 1], strides=[stride, stride]),
             helper.make_node("Sum", ["c", "sc"], ["s"]),
             helper.make_node("Relu", ["s"], ["sr"]),
             helper.make_node("Transpose", ["sr"], ["y"], perm=[0, 2, 3, 1])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, hw, hw, cin])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("hw,cin,c1,c2,stride", [
    (13, 24, 40, 56, 1),     # lanes of 10 (clipped) and 20 / 28 (pointwise); interior 11: 6 + 5
    (15, 7, 16, 48, 2),      # strided, odd input channels, a 8x8 output
    (7, 32, 32, 64, 1),      # a 7x7 output: mostly border
])
def test_heavy_bottleneck_matches_onnxruntime(monkeypatch, hw, cin, c1, c2, stride):
    """The channels-last chain with every kernel heavy (HEAVY_WORK cut to 1)."""
    monkeypatch.setattr(x86, "HEAVY_WORK", 1)
    m = _bottleneck(hw, cin, c1, c2, stride)
    x = RNG.standard_normal((1, hw, hw, cin)).astype(np.float32)
    res = aot.compile(m.SerializeToString())
    assert all(n.attrs.get("layout") == "NHWC" for n in res.graph.nodes if n.op == "Conv")
    _matches_onnxruntime(res, m, x)


def _check(m, cin, hw, sanitize):
    x = RNG.standard_normal((1, cin, hw, hw)).astype(np.float32)
    res = aot.compile(m.SerializeToString())
    out = aot.run(res, {"x": x}, sanitize=sanitize)
    for name, r in ort_run(m, {"x": x}).items():
        np.testing.assert_allclose(out[name], r, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(r).max())))


@pytest.mark.parametrize("cin,cout,hw,k,stride,pad,gemm", [
    (8, 40, 13, 3, 1, 1, False),     # 40 channels: lanes of 10; interior 11 wide: a block of 6, then 5
    (5, 32, 15, 3, 2, 1, False),     # strided, odd input and channel counts
    (12, 48, 9, 1, 1, 0, True),      # pointwise (32 lanes do not divide 48: 16), then a dense layer
    (3, 16, 19, 7, 2, 3, False),     # a first layer: 7x7 stride 2 over 3 channels
    (16, 24, 7, 3, 1, 1, False),     # a 7x7 output: mostly border
])
def test_heavy_blocks_match_onnxruntime(monkeypatch, cin, cout, hw, k, stride, pad, gemm):
    """Small shapes made heavy (HEAVY_WORK cut to 1) for the tails: channels the lanes do not
    divide, pixel counts the block does not divide, border pieces."""
    monkeypatch.setattr(x86, "HEAVY_WORK", 1)
    m = _conv_model(cin, cout, hw, k, stride, pad, gemm=gemm)
    _check(m, cin, hw, sanitize=True)
    _check(m, cin, hw, sanitize=False)       # the board's own flags (-O3 -ffp-contract=fast)


def test_heavy_conv_at_its_own_size_matches_onnxruntime():
    """A conv heavy as it stands (25x25 output, 32 -> 48 channels, 3x3: 8.6M multiply-adds)."""
    m = _conv_model(32, 48, 25, 3)
    _check(m, 32, 25, sanitize=False)


def test_work_counts_multiply_adds(monkeypatch):
    """_work of each kernel as lowered: an unpadded conv's exactly; a padded one's as if its
    windows were never clipped."""
    import aot.executor.lowering as ex
    seen, schedule = [], ex.schedule

    def recording(func, target):
        seen.append(x86._work(func.body))
        return schedule(func, target)
    monkeypatch.setattr(ex, "schedule", recording)
    for (cin, cout, hw, k, pad), want in (((8, 16, 10, 1, 0), 10 * 10 * 16 * 8),
                                          ((8, 16, 10, 3, 1), 10 * 10 * 16 * 8 * 9),
                                          ((8, 16, 11, 3, 0), 9 * 9 * 16 * 8 * 9)):
        seen.clear()
        aot.compile(_conv_model(cin, cout, hw, k, pad=pad).SerializeToString())
        assert max(seen) == want


def test_conv_gets_six_pixel_blocks_and_channels_innermost():
    """A bottleneck's 3x3 conv over 26x26 (interior 24 wide): accumulators of 6 pixels x 16
    lanes, the window's channel loop inside its row and column loops (channels-last: along
    consecutive input)."""
    src = _c_source(aot.compile(_bottleneck(26, 16, 16, 32, 1).SerializeToString()))
    assert re.search(r"float \w+\[96\];", src)
    nest = re.search(r"for \(int32_t (rh\w*) = 0; \1 < 3; \+\+\1\) \{\s*for \(int32_t (rw\w*) = 0; \2 < 3; \+\+\2\) "
                     r"\{\s*for \(int32_t (rc\w*) = 0; \3 < 16; ", src)
    assert nest, src


def _kernels(src):
    """{kernel name: its C function} of a lib1.c."""
    return {m.group(1): m.group(0) for m in re.finditer(r"^int32_t (tvmgen_default_fused_\w+)\(.*?^}\n", src, re.S | re.M)}


def test_heavy_kernel_past_the_light_budget_keeps_the_host_rules(monkeypatch):
    """A 7x7 stride-2 first conv over a 16x16 input (an 8x8 output, mostly border) outgrows
    the light budgets: light, it keeps the CPU rules' tiles; heavy, the host rules' pieces and
    blocks."""
    m = _conv_model(3, 16, 16, 7, stride=2, pad=3).SerializeToString()
    plain = _kernels(_without_host_rules(m, "c"))
    name = next(k for k, v in plain.items() if "rh" in v)          # the 7x7 conv
    monkeypatch.setattr(x86, "HEAVY_WORK", 1 << 40)
    assert _kernels(_c_source(aot.compile(m)))[name] == plain[name]
    monkeypatch.setattr(x86, "HEAVY_WORK", 1)
    heavy = _kernels(_c_source(aot.compile(m)))[name]
    assert heavy != plain[name] and re.search(r"float \w+\[64\];", heavy)      # 4 pixels x 16 lanes


def test_light_kernels_ignore_the_heavy_settings(monkeypatch):
    """Below HEAVY_WORK (every MLPerf Tiny kernel) the heavy settings change nothing."""
    m = _conv_model(8, 16, 14, 3, gemm=True).SerializeToString()
    before = _c_source(aot.compile(m))
    monkeypatch.setattr(x86, "HEAVY_GROWTH", 1000)
    assert _c_source(aot.compile(m)) == before
