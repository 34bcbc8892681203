"""aot.topi's operators as TVM's intro_topi uses them: each one a te stage with TVM's name, tag and
shape; the conv2d compute as TVM's (a pad stage pad_temp, then conv2d_nchw over nn, ff, yy, xx,
rc, ry, rx); the generic schedules for host targets and the cuda ones for GPU targets, which bind
threads. No C compiler here: schedules are checked in their lowered form (aot.lower)."""
import pytest

import aot
from aot import te, topi
from aot.errors import AotError


def _names(ivs):
    return [getattr(a, "var", a).name for a in ivs]


def _inputs(t):
    return topi.utils.input_tensors(t.op)


def test_sum_over_every_axis_is_rank_0_named_after_its_input():
    A = te.placeholder((4, 5), name="A")
    C = topi.sum(A)
    assert C.shape == () and C.name == "A_red" and C.op.tag == "comm_reduce"
    assert _names(C.op.reduce_axis) == ["k0", "k1"]


@pytest.mark.parametrize("axis,keepdims,shape", [
    (1, False, (4, 6)), (-1, False, (4, 5)), ((0, 2), False, (5,)), ((0, 2), True, (1, 5, 1)), (None, True, (1, 1, 1)),
])
def test_reduction_shapes_follow_numpy(axis, keepdims, shape):
    A = te.placeholder((4, 5, 6), name="A")
    for fn in (topi.sum, topi.max, topi.min, topi.prod, topi.argmax):
        assert fn(A, axis=axis, keepdims=keepdims).shape == shape


def test_reduction_axis_out_of_range_is_refused_by_name():
    A = te.placeholder((4, 5), name="A")
    with pytest.raises(AotError, match="topi.sum: axis 2 is out of range"):
        topi.sum(A, axis=2)


def test_tensor_arithmetic_broadcasts_as_numpy():
    a = te.placeholder((100, 10, 10), name="a")
    b = te.placeholder((10, 10), name="b")
    c, d = a + b, a * b
    assert c.shape == d.shape == (100, 10, 10)
    e = topi.elemwise_sum([c, d])
    assert e.name == "T_elemwise_sum" and e.op.tag == "elemwise"
    f = e / 2.0
    assert f.shape == (100, 10, 10) and f.dtype == "float32"
    assert topi.add(a, b).name == "T_add" and topi.add(a, b).op.tag == "broadcast"
    assert topi.multiply(a, 3.0).op.tag == "elemwise"
    assert topi.broadcast_add is topi.add


def test_broadcast_mismatch_names_the_shapes():
    a = te.placeholder((3, 4), name="a")
    b = te.placeholder((5,), name="b")
    with pytest.raises(AotError, match=r"topi.add: shapes \[3, 4\] and \[1, 5\] do not broadcast"):
        topi.add(a, b)


def test_conv2d_nchw_is_a_pad_stage_then_seven_loops():
    data = te.placeholder((1, 3, 224, 224), name="data")
    kernel = te.placeholder((10, 3, 5, 5), name="kernel")
    conv = topi.nn.conv2d_nchw(data, kernel, 1, 2, 1)
    assert conv.name == "conv2d_nchw" and conv.op.tag == "conv2d_nchw"
    assert conv.shape == (1, 10, 224, 224)
    assert _names(conv.op.axis) == ["nn", "ff", "yy", "xx"]
    assert _names(conv.op.reduce_axis) == ["rc", "ry", "rx"]
    pad, w = _inputs(conv)
    assert pad.name == "pad_temp" and pad.shape == (1, 3, 228, 228) and w is kernel
    assert topi.tag.is_injective(pad.op.tag) and _inputs(pad) == [data]
    # the same compute under the cuda name, stride/dilation as pairs, padding as 4 sizes
    c2 = topi.cuda.conv2d_nchw(data, kernel, (2, 2), (1, 1, 2, 2), (1, 1))
    assert c2.name == "conv2d_nchw" and c2.shape == (1, 10, 112, 112)


def test_conv2d_without_padding_keeps_its_pad_stage():
    data = te.placeholder((1, 3, 8, 8), name="data")
    kernel = te.placeholder((4, 3, 3, 3), name="kernel")
    conv = topi.nn.conv2d_nchw(data, kernel, 1, 0, 1)
    assert conv.shape == (1, 4, 6, 6) and _inputs(conv)[0].name == "pad_temp"


def test_softmax_is_tvms_four_stages():
    x = te.placeholder((512, 512), name="x")
    out = topi.nn.softmax(x)
    assert out.name == "T_softmax_norm" and out.op.tag == "softmax_output" and out.op.attrs["axis"] == 1
    exp, expsum = _inputs(out)
    assert (exp.name, expsum.name) == ("T_softmax_exp", "T_softmax_expsum")
    assert [t.name for t in _inputs(exp)] == ["x", "T_softmax_maxelem"]


def test_nn_operators_shapes():
    x = te.placeholder((2, 3, 9, 9), name="x")
    assert topi.nn.relu(x).shape == x.shape
    assert topi.nn.pad(x, (0, 0, 1, 1), (0, 0, 2, 2)).shape == (2, 3, 12, 12)
    assert topi.nn.pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max").shape == (2, 3, 5, 5)
    assert topi.nn.pool2d(x, (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), "avg", ceil_mode=True).shape == (2, 3, 5, 5)
    d = te.placeholder((8, 16), name="d")
    w = te.placeholder((4, 16), name="w")
    b = te.placeholder((4,), name="b")
    assert topi.nn.dense(d, w, b).shape == (8, 4)
    assert topi.reshape(x, (6, -1)).shape == (6, 81)
    assert topi.transpose(x, (0, 2, 3, 1)).shape == (2, 9, 9, 3)


def _intro_topi_reduction():
    a = te.placeholder((100, 10, 10), name="a")
    b = te.placeholder((10, 10), name="b")
    g = topi.sum(topi.elemwise_sum([a + b, a * b]) / 2.0)
    return a, b, g


def test_cuda_schedule_reduce_lowers_under_a_cuda_target():
    a, b, g = _intro_topi_reduction()
    with aot.target.cuda():
        sg = topi.cuda.schedule_reduce(g)
        text = str(aot.lower(sg, [a, b, g], simple_mode=True))
    assert "T_divide_red" in text
    assert isinstance(sg.topi_refused, list)


def test_cuda_schedule_reduce_binds_the_outputs_of_a_row_sum():
    A = te.placeholder((300, 40), name="A")
    B = topi.sum(A, axis=1)
    with aot.target.Target("cuda"):
        s = topi.cuda.schedule_reduce(B)
        text = str(aot.lower(s, [A, B], simple_mode=True))
    assert "blockIdx.x" in text and "threadIdx" in text


def test_cuda_schedule_softmax_puts_rows_on_blocks():
    x = te.placeholder((512, 512), name="x")
    out = topi.nn.softmax(x)
    with aot.target.Target("cuda"):
        s = topi.cuda.schedule_softmax(out)
        text = str(aot.lower(s, [x, out], simple_mode=True))
    assert "blockIdx.x" in text and "threadIdx.x" in text


def test_cuda_schedule_conv2d_binds_a_3d_grid():
    data = te.placeholder((1, 3, 32, 32), name="data")
    kernel = te.placeholder((10, 3, 5, 5), name="kernel")
    with aot.target.Target("cuda"):
        out = topi.nn.relu(topi.cuda.conv2d_nchw(data, kernel, 1, 2, 1))
        s = topi.cuda.schedule_conv2d_nchw([out])
        text = str(aot.lower(s, [data, kernel, out], simple_mode=True))
    for axis in ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y"):
        assert axis in text


def test_cuda_schedule_injective_binds_the_fused_output():
    a = te.placeholder((64, 33), name="a")
    b = te.placeholder((33,), name="b")
    c = topi.nn.relu(a + b)
    with aot.target.Target("cuda"):
        s = topi.cuda.schedule_injective(c)
        text = str(aot.lower(s, [a, b, c], simple_mode=True))
    assert "blockIdx.x" in text and "threadIdx.x" in text


def test_generic_schedules_refuse_a_gpu_target_naming_the_cuda_one():
    a, b, g = _intro_topi_reduction()
    with aot.target.Target("cuda"):
        with pytest.raises(AotError, match="topi.cuda.schedule_reduce"):
            topi.generic.schedule_reduce(g)


def test_generic_schedules_take_host_targets():
    a, b, g = _intro_topi_reduction()
    for t in ("llvm", "c"):
        with aot.target.Target(t):
            s = topi.generic.schedule_reduce(g)
        assert "T_divide_red" in str(aot.lower(s, [a, b, g], simple_mode=True))
