"""Grouped convs and channel shuffles channels-last on the host (ShuffleNet's units): the layout
pass keeps a channel shuffle NHWC (aot/passes/layout.py), the host rules pick lanes that stay
inside one group (aot/schedules/x86.py), and the simplifier takes the group index apart
(aot/tir/simplify.py). Every case is checked against onnxruntime."""
import re

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import aot
from aot.tir.expr import Bin, Const, Var
from aot.tir.simplify import simplify
from test_x86_schedule import _c_source, _matches_onnxruntime

RNG = np.random.default_rng(7)


def _w(*shape):
    return RNG.standard_normal(shape).astype(np.float32) * 0.3


def _shuffle_unit(hw, c, groups, mid_groups=None):
    """ShuffleNet's unit: grouped 1x1 conv, ReLU, channel shuffle (Reshape, Transpose,
    Reshape), depthwise 3x3, grouped 1x1 conv, residual Sum, ReLU; twice, so the chain is
    channels-last from a conv in front to a global pool at the end."""
    inits = [numpy_helper.from_array(_w(c, 3, 3, 3), "w0")]
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),       # an NHWC input, as from TF
             helper.make_node("Conv", ["xt", "w0"], ["h0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    x = "h0"
    for u in range(2):
        inits += [numpy_helper.from_array(a, f"{n}{u}") for n, a in [
            ("wa", _w(c, c // groups, 1, 1)), ("ba", _w(c)), ("wd", _w(c, 1, 3, 3)), ("wb", _w(c, c // groups, 1, 1)),
            ("s1", np.array([1, groups, c // groups, hw, hw], np.int64)), ("s2", np.array([1, c, hw, hw], np.int64))]]
        nodes += [helper.make_node("Conv", [x, f"wa{u}", f"ba{u}"], [f"a{u}"], kernel_shape=[1, 1], group=groups),
                  helper.make_node("Relu", [f"a{u}"], [f"r{u}"]),
                  helper.make_node("Reshape", [f"r{u}", f"s1{u}"], [f"q{u}"]),
                  helper.make_node("Transpose", [f"q{u}"], [f"t{u}"], perm=[0, 2, 1, 3, 4]),
                  helper.make_node("Reshape", [f"t{u}", f"s2{u}"], [f"sh{u}"]),
                  helper.make_node("Conv", [f"sh{u}", f"wd{u}"], [f"d{u}"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                   group=c),
                  helper.make_node("Conv", [f"d{u}", f"wb{u}"], [f"b{u}"], kernel_shape=[1, 1],
                                   group=mid_groups or groups),
                  helper.make_node("Sum", [f"b{u}", x], [f"s{u}"]),
                  helper.make_node("Relu", [f"s{u}"], [f"o{u}"])]
        x = f"o{u}"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["y"]))
    g = helper.make_graph(nodes, "shuffle", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, hw, hw, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("hw,c,groups", [
    (9, 24, 3),      # 8 channels a group: one vector of lanes
    (7, 40, 4),      # 10 a group: lanes of 10 or 5, never across two groups
    (6, 36, 2),      # 18 a group, odd width
])
def test_shuffle_units_stay_channels_last_and_match_onnxruntime(hw, c, groups):
    m = _shuffle_unit(hw, c, groups)
    res = aot.compile(m.SerializeToString())
    convs = [n for n in res.graph.nodes if n.op == "Conv"]
    assert len(convs) == 7 and all(n.attrs.get("layout") == "NHWC" for n in convs)
    perms = [list(n.attrs["perm"]) for n in res.graph.nodes if n.op == "Transpose"]
    assert perms.count([0, 1, 2, 4, 3]) == 2 and [0, 2, 1, 3, 4] not in perms     # the shuffles, NHWC
    x = RNG.standard_normal((1, hw, hw, 3)).astype(np.float32)
    _matches_onnxruntime(res, m, x)


def test_grouped_conv_lanes_stay_in_one_group():
    """544 channels in 4 groups of 136 (light ShuffleNet's last stage): lanes of 8 (a vector,
    dividing 136), the input read once per lane loop, no division by the group size inside."""
    res = aot.compile(_shuffle_unit(5, 544, 4).SerializeToString())
    src = _c_source(res)
    divided = re.findall(r"(\([^()]*\)|\w+) / \d+\)", src)
    assert divided and not [d for d in divided if re.search(r"_i_\d+", d)]     # no lane index divided
    lanes = {int(n) for _, n in re.findall(r"for \(int32_t (\w+_i_\d+) = 0; \1 < (\d+);", src)}
    assert 8 in lanes                               # the grouped convs' lanes: one vector within a group


def test_group_index_splits_by_the_lane_factor():
    a, b = Var("a"), Var("b")
    ranges = {id(a): (0, 15), id(b): (0, 16)}
    e = simplify(Bin("floordiv", a * 17 + b, Const(68, "int32")), ranges)
    assert str(e) == "(a floordiv 4)"
    e = simplify(Bin("floormod", a * 17 + b, Const(68, "int32")), ranges)
    for av in range(16):                     # exact against Python's floor semantics
        for bv in range(17):
            from aot.tir.expr import substitute
            v = simplify(substitute(e, {id(a): Const(av, "int32"), id(b): Const(bv, "int32")}))
            assert v.value == (av * 17 + bv) % 68
    # b reaching 17 would carry into a: no split
    assert "floordiv 68" in str(simplify(Bin("floordiv", a * 17 + b, Const(68, "int32")), {id(a): (0, 15), id(b): (0, 17)}))
