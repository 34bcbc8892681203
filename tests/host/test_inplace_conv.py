"""Staged in-place convolutions (issue 16): a depthwise conv plane by plane and a pointwise conv
pixel by pixel write over their input through a scratch planned in the workspace, only when
aot/tir/inplace.py proves it; outputs match onnxruntime / TFLite Micro and the workspace is
exact under ASan."""
import numpy as np
import pytest

from conftest import check_model, init, is_staged, make_model, vi
from test_memory import _run_with_workspace_bytes


@pytest.fixture
def nchw(monkeypatch):
    """These tests place NCHW planes and channel slices: the host's channels-last rewrite
    (aot/passes/layout.py) is left out, as on the targets that keep the imported layout."""
    import aot.compiler
    monkeypatch.setattr(aot.compiler, "channels_last", lambda g: (g, 0))


def _ds_block_model():
    """conv -> a DS-CNN block (depthwise 3x3, pointwise 8->8, both with relu) -> mean: the block's
    two convs can each write over their input."""
    from onnx import helper
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["t0"], pads=[1, 1, 1, 1], name="stem"),
             helper.make_node("Relu", ["t0"], ["a"], name="stem_relu"),
             helper.make_node("Conv", ["a", "wd"], ["t1"], pads=[1, 1, 1, 1], group=8, name="dw"),
             helper.make_node("Relu", ["t1"], ["b"], name="dw_relu"),
             helper.make_node("Conv", ["b", "wp"], ["t2"], name="pw"),
             helper.make_node("Relu", ["t2"], ["c"], name="pw_relu"),
             helper.make_node("ReduceMean", ["c"], ["y"], axes=[2, 3], keepdims=0, name="pool")]
    inits = [init("w0", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)),
             init("wd", (rng.standard_normal((8, 1, 3, 3)) * 0.3).astype(np.float32)),
             init("wp", (rng.standard_normal((8, 8, 1, 1)) * 0.3).astype(np.float32))]
    m = make_model(nodes, [vi("x", [1, 3, 10, 6])], [vi("y", [1, 8])], inits)
    return m, {"x": rng.standard_normal((1, 3, 10, 6)).astype(np.float32)}


def test_depthwise_and_pointwise_convs_write_in_place():
    from aot.compiler import Options, compile_model
    m, feeds = _ds_block_model()
    res, _ = check_model(m, feeds)
    plan = res.plan
    staged = [c for c in plan.calls if is_staged(c)]
    assert len(staged) == 2
    # the depthwise conv's scratch is one channel plane, the pointwise conv's one pixel's channels
    assert sorted(c.scratch_bytes for c in staged) == [8 * 4, 10 * 6 * 4]
    tensor = 8 * 10 * 6 * 4
    rows = {r["name"]: r for r in plan.tensors}
    assert sum(1 for r in plan.tensors if r.get("in_place_of")) == 2
    assert all(rows[f"{c.symbol} scratch"]["bytes"] == c.scratch_bytes for c in staged)
    # one tensor and one scratch at a time, where two tensors were live without in-place writes
    ref = compile_model(m.SerializeToString(), Options(in_place=False))
    assert ref.plan.workspace_lower_bound == 2 * tensor
    assert plan.workspace_lower_bound == tensor + 10 * 6 * 4
    assert plan.workspace_size == plan.workspace_lower_bound
    rc, err = _run_with_workspace_bytes(res.tar, feeds, plan.workspace_size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, plan.workspace_size - 1)
    assert rc != 0 and "global-buffer-overflow" in err


def _group_func(m, op_name):
    """The plain loop nest of the fused group holding node op_name."""
    from aot.compiler import Options, fuse_and_order, run_passes
    from aot.frontend import import_model
    from aot.te.lower import lower_group
    graph = run_passes(import_model(m.SerializeToString(), None, name="default", log=None, bind_inputs=None),
                       lambda msg: None)
    groups = fuse_and_order(graph, Options(), lambda msg: None)
    g = next(g for g in groups if any(n.name == op_name for n in g.nodes))
    return lower_group(g, "k")[0]


def test_unsafe_staging_is_refused():
    from aot.schedules.inplace_conv import stage_in_place
    from aot.tir.inplace import writes_over, writes_over_staged
    from aot.tir.stmt import Seq
    m, _ = _ds_block_model()
    for op, safe_dims, unsafe_dims in (("dw", {0, 1}, {0, 2}), ("pw", {0, 2, 3}, {0, 1})):
        func = _group_func(m, op)
        out = len(func.params) - 1
        assert not writes_over(func, [func.params[0]], func.params[out])   # not elementwise
        staged, _ = stage_in_place(func, 0, out)
        assert writes_over_staged(staged, [staged.params[0]], staged.params[out])
        forced, _ = stage_in_place(func, 0, out, outer_dims=safe_dims)
        assert writes_over_staged(forced, [forced.params[0]], forced.params[out])
        # by rows, a depthwise conv's next row reads the row written back; by channels, a
        # pointwise conv's next channel reads every input channel
        bad, _ = stage_in_place(func, 0, out, outer_dims=unsafe_dims)
        assert not writes_over_staged(bad, [bad.params[0]], bad.params[out])
        # the write-back before the reads
        nest, loops = staged.body, []
        while not isinstance(nest, Seq):
            loops.append(nest)
            nest = nest.body
        swapped = Seq(list(reversed(nest.stmts)))
        for lp in reversed(loops):
            swapped = lp.with_body(swapped)
        assert not writes_over_staged(staged.with_body(swapped), [staged.params[0]], staged.params[out])


def _concat_model():
    """Two branches concatenated on channels: each branch's conv can write into its slice."""
    from onnx import helper
    rng = np.random.default_rng(7)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], pads=[1, 1, 1, 1], name="stem"),
             helper.make_node("Conv", ["a", "w1"], ["b1"], pads=[1, 1, 1, 1], name="branch1"),
             helper.make_node("Conv", ["a", "w2"], ["t2"], name="branch2"),
             helper.make_node("Relu", ["t2"], ["b2"], name="branch2_relu"),
             helper.make_node("Concat", ["b1", "b2"], ["c"], axis=1, name="cat"),
             helper.make_node("Conv", ["c", "w3"], ["d"], name="mix"),
             helper.make_node("ReduceMean", ["d"], ["y"], axes=[2, 3], keepdims=0, name="pool")]
    inits = [init("w0", (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)),
             init("w1", (rng.standard_normal((6, 4, 3, 3)) * 0.3).astype(np.float32)),
             init("w2", (rng.standard_normal((2, 4, 1, 1)) * 0.3).astype(np.float32)),
             init("w3", (rng.standard_normal((5, 8, 1, 1)) * 0.3).astype(np.float32))]
    m = make_model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 5])], inits)
    return m, {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)}


def test_concat_inputs_are_placed_in_their_slices(nchw):
    from aot.compiler import Options, compile_model
    from aot.memory_report import svg, table
    m, feeds = _concat_model()
    res, _ = check_model(m, feeds)
    plan = res.plan
    rows = {r["name"]: r for r in plan.tensors}
    cat = rows["c"]
    assert rows["b1"].get("slice_of") == "c" and rows["b1"]["offset"] == cat["offset"]
    assert rows["b2"].get("slice_of") == "c" and rows["b2"]["offset"] == cat["offset"] + 6 * 64 * 4
    # b1 and b2 were live beside c at the concat; now c (holding them) and then c and d are the peak
    ref = compile_model(m.SerializeToString(), Options(in_place=False))
    assert ref.plan.workspace_lower_bound == (6 + 2 + 8) * 64 * 4
    assert plan.workspace_size == plan.workspace_lower_bound == (8 + 5) * 64 * 4
    assert "slice of c" in table(plan.tensors, plan.workspace_size, plan.workspace_lower_bound, ["k"] * 6)
    assert "placed in its slice of c" in svg(plan.tensors, plan.workspace_size, plan.workspace_lower_bound, ["k"] * 6)
    rc, err = _run_with_workspace_bytes(res.tar, feeds, plan.workspace_size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, plan.workspace_size - 1)
    assert rc != 0 and "global-buffer-overflow" in err


def _widening_model():
    """stem conv -> depthwise -> pointwise 4 -> 8 channels: the pointwise conv's output holds its
    input in its second half."""
    from onnx import helper
    rng = np.random.default_rng(9)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], pads=[1, 1, 1, 1], name="stem"),
             helper.make_node("Conv", ["a", "wd"], ["b"], pads=[1, 1, 1, 1], group=4, name="dw"),
             helper.make_node("Conv", ["b", "wp"], ["t"], name="pw"),
             helper.make_node("Relu", ["t"], ["c"], name="pw_relu"),
             helper.make_node("ReduceMean", ["c"], ["y"], axes=[2, 3], keepdims=0, name="pool")]
    inits = [init("w0", (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)),
             init("wd", (rng.standard_normal((4, 1, 3, 3)) * 0.3).astype(np.float32)),
             init("wp", (rng.standard_normal((8, 4, 1, 1)) * 0.3).astype(np.float32))]
    m = make_model(nodes, [vi("x", [1, 3, 10, 6])], [vi("y", [1, 8])], inits)
    return m, {"x": rng.standard_normal((1, 3, 10, 6)).astype(np.float32)}


def test_wider_pointwise_output_holds_its_input(nchw):
    from aot.schedules.inplace_conv import stage_in_place
    from aot.tir.inplace import writes_over_staged
    m, feeds = _widening_model()
    res, _ = check_model(m, feeds)
    plan = res.plan
    rows = {r["name"]: r for r in plan.tensors}
    plane = 10 * 6 * 4
    assert rows["a"].get("slice_of") == "c" and rows["a"]["offset"] == rows["c"]["offset"] + 4 * plane
    # + the pointwise conv's scratch (one pixel's 8 channels); the depthwise conv's scratch plane lies
    # in c's first half, which nothing holds before the pointwise conv writes c
    assert plan.workspace_size == plan.workspace_lower_bound == 8 * plane + 8 * 4
    (dw_scratch,) = [r for n, r in rows.items() if n.endswith(" scratch") and r["bytes"] == plane]
    assert rows["c"]["offset"] <= dw_scratch["offset"] and dw_scratch["offset"] + plane <= rows["a"]["offset"]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, plan.workspace_size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, plan.workspace_size - 1)
    assert rc != 0 and "global-buffer-overflow" in err
    # the proof: in NCHW, output element (c, p) lands on input element (c - 4, p), read by pixel p
    # before it is written back; one element short of a plane, it would land on pixel p + 1
    func = _group_func(m, "pw")
    out = len(func.params) - 1
    staged, _ = stage_in_place(func, 0, out)
    i, o = staged.params[0], staged.params[out]
    assert writes_over_staged(staged, [i], o, o.size - i.size)
    assert writes_over_staged(staged, [i], o, 0)
    assert not writes_over_staged(staged, [i], o, 10 * 6 - 1)
    assert not writes_over_staged(staged, [i], o)      # the shapes differ: not over the same elements


def _strided_depthwise_model():
    """stem conv -> depthwise 3x3 stride 2 -> pointwise -> mean: the strided depthwise conv's
    output, a quarter of its input, can be written over the start of that input."""
    from onnx import helper
    rng = np.random.default_rng(11)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], pads=[1, 1, 1, 1], name="stem"),
             helper.make_node("Conv", ["a", "wd"], ["t"], pads=[1, 1, 1, 1], strides=[2, 2], group=8, name="dw"),
             helper.make_node("Relu", ["t"], ["b"], name="dw_relu"),
             helper.make_node("Conv", ["b", "wp"], ["c"], name="pw"),
             helper.make_node("ReduceMean", ["c"], ["y"], axes=[2, 3], keepdims=0, name="pool")]
    inits = [init("w0", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)),
             init("wd", (rng.standard_normal((8, 1, 3, 3)) * 0.3).astype(np.float32)),
             init("wp", (rng.standard_normal((4, 8, 1, 1)) * 0.3).astype(np.float32))]
    m = make_model(nodes, [vi("x", [1, 3, 12, 8])], [vi("y", [1, 4])], inits)
    return m, {"x": rng.standard_normal((1, 3, 12, 8)).astype(np.float32)}


def test_strided_depthwise_writes_over_its_input(nchw):
    from aot.compiler import Options, compile_model
    from aot.tir.inplace import writes_over_in_order
    m, feeds = _strided_depthwise_model()
    res, _ = check_model(m, feeds)
    plan = res.plan
    rows = {r["name"]: r for r in plan.tensors}
    big, small = 8 * 12 * 8 * 4, 8 * 6 * 4 * 4
    assert rows["b"].get("in_place_of") == "a" and rows["b"]["offset"] == rows["a"]["offset"]
    ref = compile_model(m.SerializeToString(), Options(in_place=False))
    assert ref.plan.workspace_lower_bound == big + small
    assert plan.workspace_size == plan.workspace_lower_bound < big + small
    rc, err = _run_with_workspace_bytes(res.tar, feeds, plan.workspace_size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, plan.workspace_size - 1)
    assert rc != 0 and "global-buffer-overflow" in err
    # the proof, on the plain nest: output (c, y, x) lands on input elements channel c reads no
    # more, or a channel already done; at the end of the input it would land on channels not yet read
    func = _group_func(m, "dw")
    i, o = func.params[0], func.params[len(func.params) - 1]
    assert writes_over_in_order(func, [i], o, 0)
    assert not writes_over_in_order(func, [i], o, i.size - o.size)
    assert not writes_over_in_order(func, [o], i, 0)        # the larger buffer never fits over the smaller


def _lrn_model(width):
    """conv 3 -> 12 channels -> LRN over 5 channels -> mean: the LRN's input dies at it, at the
    peak of live bytes, so it is staged to write over that input."""
    from onnx import helper
    rng = np.random.default_rng(11)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], pads=[1, 1, 1, 1], name="stem"),
             helper.make_node("LRN", ["a"], ["b"], size=5, alpha=0.5, beta=0.75, bias=2.0, name="lrn"),
             helper.make_node("ReduceMean", ["b"], ["y"], axes=[2, 3], keepdims=0, name="pool")]
    inits = [init("w0", (rng.standard_normal((12, 3, 3, 3)) * 0.5).astype(np.float32))]
    m = make_model(nodes, [vi("x", [1, 3, 6, width])], [vi("y", [1, 12])], inits)
    return m, {"x": rng.standard_normal((1, 3, 6, width)).astype(np.float32)}


@pytest.mark.parametrize("width,run", [(20, 10), (7, 7), (17, 1)])
def test_nchw_lrn_is_staged_by_runs_of_pixels(width, run):
    """An NCHW LRN's clipped channel window leaves its channels no SIMD lanes: on the host it is
    staged a run of pixels along the row at a time (the largest divisor of the width up to
    STAGE_PIXELS: 10 of 20, a whole row of 7, one pixel of a prime 17), every channel of each,
    and still matches onnxruntime writing over its input (ASan build)."""
    from aot.targets.host import STAGE_PIXELS
    assert STAGE_PIXELS == 16
    m, feeds = _lrn_model(width)
    res, _ = check_model(m, feeds)
    (lrn,) = [c for c in res.plan.calls if is_staged(c)]
    assert "lrn" in lrn.symbol
    assert lrn.scratch_bytes == 12 * run * 4
    rc, err = _run_with_workspace_bytes(res.tar, feeds, res.plan.workspace_size)
    assert rc == 0, err[-2000:]
