"""The host CPU rules (aot/schedules/x86.py): convolutions with clipped windows partitioned into
border and interior pieces, output channels split into packed SIMD lanes, pixel blocks around
them. Checked against onnxruntime, built warning-free under ASan/UBSan at the board's -O3; a
Cortex-M target keeps the CPU rules' code."""
import io
import os
import re
import tarfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import aot
from aot.schedules import pipelines, x86
from aot.target import Target
from conftest import is_shrunk, ort_run

RNG = np.random.default_rng(3)


def _conv_model(cin, cout, hw, k, stride=1, pad=1, group=1, gemm=False):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, hw, hw])
    w = numpy_helper.from_array(RNG.standard_normal((cout, cin // group, k, k)).astype(np.float32), "w")
    b = numpy_helper.from_array(RNG.standard_normal(cout).astype(np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], strides=[stride, stride],
                              pads=[pad] * 4, group=group), helper.make_node("Relu", ["c"], ["y"])]
    inits = [w, b]
    out = "y"
    if gemm:
        ho = (hw + 2 * pad - k) // stride + 1
        n = cout * ho * ho
        g = numpy_helper.from_array(RNG.standard_normal((n, 40)).astype(np.float32) / n, "g")
        nodes += [helper.make_node("Flatten", ["y"], ["f"]), helper.make_node("Gemm", ["f", "g"], ["z"])]
        inits.append(g)
        out = "z"
    y = helper.make_tensor_value_info(out, TensorProto.FLOAT, None)
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])
    return m


def _c_source(res):
    data = res.tar if isinstance(res.tar, (bytes, bytearray)) else open(res.tar, "rb").read()
    t = tarfile.open(fileobj=io.BytesIO(data))
    return "".join(t.extractfile(m).read().decode() for m in t.getmembers() if m.name.endswith("_lib1.c"))

def _matches_onnxruntime(res, m, x):
    """The compiled model's outputs on input x against onnxruntime's: under ASan+UBSan, then
    with the board's own flags (-O3 -ffp-contract=fast)."""
    ref = ort_run(m, {"x": x})
    for sanitize in (True, False):
        out = aot.run(res, {"x": x}, sanitize=sanitize)
        for name, r in ref.items():
            np.testing.assert_allclose(out[name], r, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(r).max())))



@pytest.mark.parametrize("cin,cout,hw,k,stride,pad,group,gemm", [
    (8, 16, 14, 3, 1, 1, 1, False),      # interior 12 pixels wide: blocks of 4 and a remainder
    (3, 32, 15, 3, 2, 1, 1, False),      # strided, odd size
    (16, 16, 9, 3, 1, 1, 16, False),     # depthwise
    (8, 64, 5, 1, 1, 0, 1, True),        # pointwise, then a dense layer
    (4, 48, 11, 5, 1, 2, 1, False),      # a wider window: two columns of border each side
])
def test_host_blocks_match_onnxruntime(cin, cout, hw, k, stride, pad, group, gemm):
    m = _conv_model(cin, cout, hw, k, stride, pad, group, gemm)
    x = RNG.standard_normal((1, cin, hw, hw)).astype(np.float32)
    res = aot.compile(m.SerializeToString())
    out = aot.run(res, {"x": x}, sanitize=True)
    ref = ort_run(m, {"x": x})
    for name, r in ref.items():
        np.testing.assert_allclose(out[name], r, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(r).max())))
    out = aot.run(res, {"x": x})                           # the board's own flags (-O3 -ffp-contract=fast)
    for name, r in ref.items():
        np.testing.assert_allclose(out[name], r, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(r).max())))


def test_interior_has_constant_windows_and_pixel_blocks():
    """A padded 3x3 conv over 14x14: the interior rows 1..12 loop over the whole window (no
    clipped bounds) with a block of 4 pixels x 16 lanes accumulators (NCHW's 16 output-channel
    lanes, which gcc unrolls itself: the block unrolled by the rule); the border keeps clipped
    windows."""
    src = _c_source(aot.compile(_conv_model(8, 16, 14, 3).SerializeToString()))
    interior = re.search(r"for \(int32_t (\w+) = 1; \1 < 13; \+\+\1\) \{(.*?)\n  \}\n", src, re.S)
    assert interior, src
    body = interior.group(2)
    assert "aot_max_i32" not in body and "aot_min_i32" not in body
    assert re.search(r"float \w+\[64\];", body)
    for r in ("rh", "rw"):
        assert re.search(r"for \(int32_t (%s\w*) = 0; \1 < 3; " % r, body)
    assert "aot_max_i32(" in src


def _nhwc_convs(hw, cin, cout):
    """Two padded 3x3 convs between an NHWC input and an NHWC output (channels-last throughout)."""
    def w(*shape):
        return RNG.standard_normal(shape).astype(np.float32) * 0.3
    inits = [numpy_helper.from_array(a, n) for n, a in [("w1", w(cout, cin, 3, 3)), ("b1", w(cout)),
                                                        ("w2", w(cout, cout, 3, 3))]]
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["xt", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["c2"], ["y"], perm=[0, 2, 3, 1])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, hw, hw, cin])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("hw,cin,cout,split", [
    (14, 8, 16, True),
    (11, 3, 12, False),      # 9-pixel rows (6 + 3) in every piece: over the budget, the border not split
    (9, 16, 32, False),      # channel blocks fill the border's registers
])
def test_channels_last_border_rows_blocked(hw, cin, cout, split):
    """Channels-last convs with fewer than x86.BORDER_SPLIT output channels have their border
    rows split too (corners, and a middle blocked by pixels: no clipped window anywhere); with
    32 the border pieces keep clipped windows (blocked by channels), as they do when the split
    pieces would outgrow the kernel's budget of statements. The pixel blocks stay C loops around
    the rolled lane loops (up to 6 pixels x 16 lanes). Outputs match onnxruntime."""
    m = _nhwc_convs(hw, cin, cout)
    res = aot.compile(m.SerializeToString())
    assert all(n.attrs.get("layout") == "NHWC" for n in res.graph.nodes if n.op == "Conv")
    src = _c_source(res)
    assert ("aot_max_i32(" not in src) == split
    blocks = re.findall(r"for \(int32_t \w+ = 0; \w+ < (\d+); \+\+\w+\) \{\n\s*#pragma GCC unroll 1\n\s*"
                        r"for \(int32_t \w+ = 0; \w+ < (\d+); ", src)
    assert blocks and max(int(b) * int(n) for b, n in blocks) >= 64
    x = RNG.standard_normal((1, hw, hw, cin)).astype(np.float32)
    _matches_onnxruntime(res, m, x)


def _without_host_rules(m, target):
    host = pipelines.HOST
    saved = list(host)
    host[:] = [s for s in host if s.rule is not x86.host_blocks]
    try:
        return _c_source(aot.compile(m, target=target))
    finally:
        host[:] = saved


def test_cortex_m_keeps_the_cpu_rules():
    """The host blocks are the host pipeline's alone: Cortex-M's runs the CPU rules without them."""
    assert x86.host_blocks in pipelines.rules_in(pipelines.HOST)
    assert x86.host_blocks not in pipelines.rules_in(pipelines.CORTEX_M)
    assert pipelines.pipeline_name(Target("c -mcpu=cortex-m4")) == "cortex_m"


def test_int8_kernels_keep_the_cpu_rules():
    """The host rules take float kernels only: an int8 model's C is the CPU rules' byte for byte."""
    p = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "models", "mlperf_tiny", "keyword_spotting",
                     "kws_ref_model.tflite")
    if not os.path.exists(p):
        pytest.skip(f"{p} not present")
    m = open(p, "rb").read()
    assert _c_source(aot.compile(m, target="c")) == _without_host_rules(m, "c")


def test_kernel_over_the_code_budget_keeps_the_cpu_rules(monkeypatch):
    """A kernel whose pieces and blocks would outgrow its budget of statements is left to the
    CPU rules whole (budgets cut to 1: every kernel that the rules would grow)."""
    m = _conv_model(8, 16, 14, 3, gemm=True).SerializeToString()
    assert _c_source(aot.compile(m)) != _without_host_rules(m, "c")
    monkeypatch.setattr(x86, "GROWTH", 1)
    monkeypatch.setattr(x86, "BLOCKED_GROWTH", 1)
    assert _c_source(aot.compile(m)) == _without_host_rules(m, "c")


def test_depthwise_interior_takes_pixel_lanes():
    """Depthwise NCHW: channel lanes would gather a plane per channel, so the interior's output
    columns take the lanes (a local array of accumulators); the border pieces take rolled
    channel lanes (not the CPU rules' unrolled tiles, one per piece)."""
    src = _c_source(aot.compile(_conv_model(16, 16, 12, 3, group=16).SerializeToString()))
    assert re.search(r"float \w+\[(\d+)\];", src) and "aot_max_i32" in src
    assert max(int(n) for n in re.findall(r"float \w+\[(\d+)\];", src)) >= 10     # 10 interior columns


def _nhwc_chain_model(hw, cin, c1, c2, stride=2):
    """An NHWC input made NCHW (as the MLPerf Tiny ONNX models are), then a padded strided conv,
    a depthwise conv, a pointwise conv with a residual add, a max pool and a global pool into a dense layer: odd widths and channel counts through the channels-last chain."""
    def w(*shape):
        return RNG.standard_normal(shape).astype(np.float32) * 0.3
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("w1", w(c1, cin, 3, 3)), ("b1", w(c1)), ("wd", w(c1, 1, 3, 3)), ("bd", w(c1)),
        ("wp", w(c1, c1, 1, 1)), ("w2", w(c2, c1, 3, 3)), ("b2", w(c2)), ("wg", w(c2, 5)),
        ("lo", np.array(0.0, np.float32)), ("hi", np.array(0.6, np.float32))]]
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["xt", "w1", "b1"], ["c1"], kernel_shape=[3, 3], strides=[stride, stride],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd", "bd"], ["d"], kernel_shape=[3, 3], pads=[0, 0, 2, 2], group=c1),
             helper.make_node("Clip", ["d", "lo", "hi"], ["r2"]),
             helper.make_node("Conv", ["r2", "wp"], ["p"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["p", "r1"], ["s"]),
             helper.make_node("Conv", ["s", "w2", "b2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c2"], ["m"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["m"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("MatMul", ["f", "wg"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, hw, hw, cin])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("hw,cin,c1,c2,stride", [
    (17, 3, 8, 16, 2),       # odd width, stride 2, 8 lanes
    (12, 5, 12, 24, 1),      # channels not a power of two
    (9, 1, 16, 7, 2),        # odd output channels
])
def test_channels_last_chain_matches_onnxruntime(hw, cin, c1, c2, stride):
    m = _nhwc_chain_model(hw, cin, c1, c2, stride)
    x = RNG.standard_normal((1, hw, hw, cin)).astype(np.float32)
    res = aot.compile(m.SerializeToString())
    convs = [n for n in res.graph.nodes if n.op in ("Conv", "MaxPool")]
    assert convs and all(n.attrs.get("layout") == "NHWC" for n in convs)
    # the input's Transpose is gone; one Transpose back to NCHW, before the global pool
    assert [n.op for n in res.graph.nodes].count("Transpose") == 1
    _matches_onnxruntime(res, m, x)


def test_channels_last_left_out_where_it_does_not_pay():
    """A lone NCHW conv would gain a Transpose back and save nothing: left as imported. Cortex-M
    targets keep the imported layout too."""
    res = aot.compile(_conv_model(8, 16, 14, 3).SerializeToString())
    assert all(n.attrs.get("layout", "NCHW") == "NCHW" for n in res.graph.nodes if n.op == "Conv")
    m = _nhwc_chain_model(12, 3, 8, 16).SerializeToString()
    res = aot.compile(m, target="c -mcpu=cortex-m4")
    assert "Transpose" in [n.op for n in res.graph.nodes]
    assert all(n.attrs.get("layout", "NCHW") == "NCHW" for n in res.graph.nodes if n.op == "Conv")


def test_lane_loops_stay_rolled():
    """Lane loops of a padded conv (16 or fewer lanes) are 'simd' loops, printed with the
    no-unroll hint that keeps gcc from unrolling them into scalars before vectorising; the C
    stays warning-free under gcc and clang (-Wall -Wextra -pedantic: both know the pragma)."""
    import shutil
    import subprocess
    src = _c_source(aot.compile(_nhwc_chain_model(12, 3, 8, 16).SerializeToString()))
    assert re.search(r"#pragma GCC unroll 1\n\s*for \(int32_t \w+ = 0; \w+ < (8|16); ", src)
    # channels-last, the pixel block around the lanes stays a C loop too (up to 6 pixels x 16
    # lanes, twelve 256-bit accumulators: gcc unrolls it after vectorising the lanes)
    blocks = re.findall(r"for \(int32_t \w+ = 0; \w+ < (\d+); \+\+\w+\) \{\n\s*#pragma GCC unroll 1\n\s*"
                        r"for \(int32_t \w+ = 0; \w+ < (\d+); ", src)
    assert blocks and max(int(b) * int(n) for b, n in blocks) >= 48
    for cc in ("gcc", "clang"):
        if shutil.which(cc) is None:
            continue
        r = subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2", "-x", "c", "-c", "-",
                            "-o", os.devnull], input=src.replace('#include "tvmgen_default.h"', ""),
                           capture_output=True, text=True)
        assert r.returncode == 0, (cc, r.stderr[:2000])


def _mobilenet_head(hw, c1, c2, c3):
    """VWW's first layers at odd sizes: an NHWC input, a strided 3x3 conv, a depthwise conv, a
    pointwise conv, then a stride-2 depthwise conv padded only after (TF's SAME) whose input dies
    there, a pointwise conv, a global pool and a dense layer."""
    def w(*shape):
        return RNG.standard_normal(shape).astype(np.float32) * 0.3
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("w1", w(c1, 3, 3, 3)), ("b1", w(c1)), ("wd", w(c1, 1, 3, 3)), ("bd", w(c1)), ("wp", w(c2, c1, 1, 1)),
        ("w2", w(c2, 1, 3, 3)), ("b2", w(c2)), ("wq", w(c3, c2, 1, 1)), ("wg", w(c3, 5))]]
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["xt", "w1", "b1"], ["c1"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd", "bd"], ["d1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=c1),
             helper.make_node("Relu", ["d1"], ["r2"]),
             helper.make_node("Conv", ["r2", "wp"], ["p1"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["p1"], ["r3"]),
             helper.make_node("Conv", ["r3", "w2", "b2"], ["d2"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[0, 0, 1, 1], group=c2),
             helper.make_node("Relu", ["d2"], ["r4"]),
             helper.make_node("Conv", ["r4", "wq"], ["p2"], kernel_shape=[1, 1]),
             helper.make_node("GlobalAveragePool", ["p2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("MatMul", ["f", "wg"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, hw, hw, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("hw,c1,c2,c3", [
    (28, 8, 16, 24),         # 14x14 -> 7x7: the last row and column clipped
    (36, 5, 12, 7),          # 18x18 -> 9x9: a remainder block in each row; channels not a multiple of 8
])
def test_strided_depthwise_written_over_its_input_keeps_host_blocks(hw, c1, c2, c3):
    """The stride-2 depthwise conv writes its smaller output over the start of its dying input,
    proven by replaying the accesses in program order: the host rules, asked to keep the nest's
    order (func.attrs["in_order"]), partition its padded window inside the row loop, so the
    kernel keeps its lanes and pixel blocks (not the plain nest); outputs match onnxruntime."""
    from aot.executor import GeneratedKernel
    from aot.tir.printer import func_str
    m = _mobilenet_head(hw, c1, c2, c3)
    res = aot.compile(m.SerializeToString())
    shrunk = [c for c in res.plan.calls if isinstance(c, GeneratedKernel) and is_shrunk(c)]
    assert len(shrunk) == 1
    text = func_str(shrunk[0].func)
    assert " simd:" in text and "min(" not in text          # lanes, no clipped window left
    x = RNG.standard_normal((1, hw, hw, 3)).astype(np.float32)
    _matches_onnxruntime(res, m, x)
