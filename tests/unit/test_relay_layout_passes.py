"""relay.transform.ConvertLayout, FoldScaleAxis, CanonicalizeOps, SimplifyInference and
relay.layout_transform, structurally: which ops a pass leaves, with which layouts, that the input
module is unchanged, and what is refused by name. (tests/host/test_relay_layout_passes.py builds
and runs them against numpy.)"""
import numpy as np
import pytest

from aot import relay
from aot.errors import AotError
from aot.transform import PassContext


def _calls(mod, op=None):
    out = []
    relay.analysis.post_order_visit(mod["main"], lambda e: out.append(e) if isinstance(e, relay.Call) and
                                    isinstance(e.op, str) and (op is None or e.op == op) else None)
    return out


def _two_convs():
    x = relay.var("x", shape=(1, 4, 8, 8))
    w1 = relay.const(np.ones((6, 4, 3, 3), np.float32))
    w2 = relay.const(np.ones((5, 6, 1, 1), np.float32))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, padding=(1, 1)))
    y = relay.nn.conv2d(y, w2)
    return relay.IRModule.from_expr(relay.Function([x], relay.nn.batch_flatten(y)))


def test_convert_layout_transforms_once_at_each_end():
    mod = _two_convs()
    with PassContext(opt_level=3):
        out = relay.transform.FoldConstant()(relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "HWIO"]})(mod))
    lts = _calls(out, "layout_transform")
    assert sorted((c.attrs["src_layout"], c.attrs["dst_layout"]) for c in lts) == [("NCHW", "NHWC"), ("NHWC", "NCHW")]
    convs = _calls(out, "nn.conv2d")
    assert [(c.attrs["data_layout"], c.attrs["kernel_layout"]) for c in convs] == [("NHWC", "HWIO")] * 2
    assert convs[0].args[1].data.shape == (3, 3, 4, 6)          # the weight folded into HWIO
    np.testing.assert_array_equal(convs[0].args[1].data, np.ones((3, 3, 4, 6)))
    assert [c.attrs["data_layout"] for c in _calls(mod, "nn.conv2d")] == ["NCHW", "NCHW"]   # input unchanged


def test_convert_layout_refuses_what_it_cannot_do():
    with pytest.raises(AotError, match="nn.dense"):
        relay.transform.ConvertLayout({"nn.dense": ["NC"]})
    with pytest.raises(AotError, match="NCHW4c"):
        relay.transform.ConvertLayout({"nn.conv2d": ["NCHW4c", "OIHW4o"]})
    with pytest.raises(AotError, match="packed"):
        relay.layout_transform(relay.var("x", shape=(1, 4, 2, 2)), "NCHW", "NCHW4c")


def test_backward_fold_moves_a_channel_scale_into_the_weights():
    x = relay.var("x", shape=(1, 2, 5, 5))
    w = relay.const(np.arange(2 * 2 * 3 * 3, dtype=np.float32).reshape(2, 2, 3, 3))
    s = relay.const(np.array([2.0, 3.0], np.float32).reshape(2, 1, 1))
    b = relay.const(np.array([1.0, -1.0], np.float32))
    y = relay.multiply(relay.nn.bias_add(relay.nn.conv2d(x, w), b), s)
    mod = relay.IRModule.from_expr(relay.Function([x], y))
    with PassContext(opt_level=3):
        out = relay.transform.FoldScaleAxis()(mod)
    assert not _calls(out, "multiply")
    conv, = _calls(out, "nn.conv2d")
    ref = np.arange(36, dtype=np.float32).reshape(2, 2, 3, 3) * np.array([2.0, 3.0]).reshape(2, 1, 1, 1)
    np.testing.assert_array_equal(conv.args[1].data, ref)
    bias, = _calls(out, "nn.bias_add")
    np.testing.assert_array_equal(bias.args[1].data, [2.0, -3.0])


def test_forward_fold_and_a_shared_value_left_alone():
    x = relay.var("x", shape=(1, 2, 5, 5))
    w = relay.const(np.ones((3, 2, 1, 1), np.float32))
    s = relay.const(np.array([2.0, 4.0], np.float32).reshape(1, 2, 1, 1))
    scaled = relay.multiply(x, s)
    mod = relay.IRModule.from_expr(relay.Function([x], relay.nn.conv2d(scaled, w)))
    with PassContext(opt_level=3):
        out = relay.transform.FoldScaleAxis()(mod)
    conv, = _calls(out, "nn.conv2d")
    np.testing.assert_array_equal(conv.args[1].data[:, :, 0, 0], [[2.0, 4.0]] * 3)
    shared = relay.IRModule.from_expr(relay.Function([x], relay.Tuple([relay.nn.conv2d(scaled, w), scaled])))
    with PassContext(opt_level=3):
        kept = relay.transform.FoldScaleAxis()(shared)
    assert len(_calls(kept, "multiply")) == 1


def test_canonicalize_ops_and_simplify_inference():
    x = relay.var("x", shape=(1, 3, 4, 4))
    g, b, m, v = (relay.const(np.full(3, k, np.float32)) for k in (2.0, 1.0, 0.5, 3.0))
    y = relay.nn.bias_add(relay.nn.batch_norm(x, g, b, m, v, epsilon=1.0)[0], relay.const(np.ones(3, np.float32)))
    mod = relay.IRModule.from_expr(relay.Function([x], y))
    out = relay.transform.FoldConstant()(relay.transform.SimplifyInference()(relay.transform.CanonicalizeOps()(mod)))
    ops = sorted(c.op for c in _calls(out))
    assert ops == ["add", "add", "multiply"]
    mul, = _calls(out, "multiply")
    np.testing.assert_allclose(mul.args[1].data.reshape(-1), [1.0] * 3)       # 2 / sqrt(3 + 1)
