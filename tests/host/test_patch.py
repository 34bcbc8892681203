"""Patch-based execution (aot/passes/patch.py, aot/patch_search.py): a CNN's first stage run
strip by strip of rows, or tile by tile of rows and columns, gives TFLite Micro's int8 outputs
bit for bit and onnxruntime's float outputs, its workspace is exact under ASan, and --ram-budget
picks, refuses and names the smallest RAM it reaches."""
import subprocess

import numpy as np
import pytest

import aot
from aot.errors import AotError
from tflite_build import ModelBuilder
from tflm_oracle import run_tflm, tflm_available
from test_memory import _run_with_workspace_bytes


def int8_cnn(h=20, w=14, seed=0):
    """conv 3x3 s2 (SAME: pads 0 top, 1 bottom) -> depthwise 3x3 -> pointwise -> residual add ->
    depthwise 3x3 s2 -> avg pool -> fully connected: the shape of VWW's and IC's first stages."""
    r = np.random.default_rng(seed)
    mb = ModelBuilder()

    def act(name, shape, zp=-128, scale=0.05):
        return mb.tensor(name, shape, "int8", scale=scale, zero_point=zp)

    def conv(x, xs, cin, cout, k, stride, name, depthwise=False, relu=True, oshape=None, scale=0.05):
        shape = [1 if depthwise else cout, k, k, cout if depthwise else cin]
        ws = r.uniform(0.005, 0.02, cout)
        wt = mb.tensor(name + "_w", shape, "int8", data=r.integers(-127, 128, shape).astype(np.int8),
                       scale=ws, zero_point=np.zeros(cout, np.int64), quantized_dimension=3 if depthwise else 0)
        b = mb.tensor(name + "_b", [cout], "int32", data=r.integers(-2000, 2000, cout).astype(np.int32),
                      scale=xs * ws, zero_point=np.zeros(cout, np.int64))
        y = act(name, oshape, scale=scale)
        fa = "RELU" if relu else "NONE"
        if depthwise:
            mb.op("DEPTHWISE_CONV_2D", [x, wt, b], [y], padding="SAME", stride_w=stride, stride_h=stride,
                  depth_multiplier=1, fused_activation_function=fa)
        else:
            mb.op("CONV_2D", [x, wt, b], [y], padding="SAME", stride_w=stride, stride_h=stride,
                  fused_activation_function=fa)
        return y

    h2, w2 = (h + 1) // 2, (w + 1) // 2
    h4, w4 = (h2 + 1) // 2, (w2 + 1) // 2
    x = act("x", [1, h, w, 3], zp=3, scale=0.04)
    c1 = conv(x, 0.04, 3, 8, 3, 2, "c1", oshape=[1, h2, w2, 8])
    d1 = conv(c1, 0.05, 8, 8, 3, 1, "d1", depthwise=True, oshape=[1, h2, w2, 8])
    p1 = conv(d1, 0.05, 8, 8, 1, 1, "p1", relu=False, oshape=[1, h2, w2, 8], scale=0.07)
    s = act("s", [1, h2, w2, 8], zp=-100, scale=0.08)
    mb.op("ADD", [p1, c1], [s], fused_activation_function="RELU")
    d2 = conv(s, 0.08, 8, 8, 3, 2, "d2", depthwise=True, oshape=[1, h4, w4, 8])
    pool = act("pool", [1, 1, 1, 8])
    mb.op("AVERAGE_POOL_2D", [d2], [pool], padding="VALID", stride_w=1, stride_h=1, filter_width=w4,
          filter_height=h4)
    flat = act("flat", [1, 8])
    mb.op("RESHAPE", [pool, mb.tensor("shape", [2], "int32", data=np.array([1, 8], np.int32))], [flat])
    fw = mb.tensor("fw", [4, 8], "int8", data=r.integers(-127, 128, (4, 8)).astype(np.int8), scale=0.01, zero_point=0)
    fb = mb.tensor("fb", [4], "int32", data=r.integers(-500, 500, 4).astype(np.int32), scale=0.05 * 0.01,
                   zero_point=0)
    out = act("out", [1, 4], zp=0, scale=0.1)
    mb.op("FULLY_CONNECTED", [flat, fw, fb], [out])
    return mb.finish(inputs=[x], outputs=[out]), r.integers(-128, 128, (1, h, w, 3)).astype(np.int8)


def _stages(model):
    from aot.compiler import run_passes
    from aot.frontend import import_model
    from aot.passes.patch import stage_cuts
    return stage_cuts(run_passes(import_model(model, None, name="m", log=lambda m: None), lambda m: None))


def test_the_stages_of_a_cnn():
    model, _ = int8_cnn()
    # conv, depthwise, pointwise, add (the residual's two reads keep the conv's output alive until
    # it), depthwise s2; then the global pool, summed strip by strip (a pooled stage)
    assert [(c.nodes, c.rows, c.cols, c.pooled) for c in _stages(model)] == [
        (4, 10, 7, False), (5, 5, 4, False), (6, 5, 4, True)]


# (layers, strips, column tiles): strips of whole rows; tiles of rows and columns, the SAME
# padding's right column and bottom row in the last tiles, one column a tile, a pooled stage's
# tiles summed; one strip of columns only
TILINGS = [(4, 2, 1), (4, 3, 1), (4, 10, 1), (5, 2, 1), (5, 5, 1), (6, 2, 1), (6, 5, 1),
           (4, 2, 2), (4, 3, 7), (4, 1, 3), (5, 5, 4), (5, 2, 3), (6, 2, 2), (6, 5, 4), (6, 1, 4)]


@pytest.mark.skipif(not tflm_available(), reason="tflite-micro wheel not installed")
@pytest.mark.parametrize("layers,strips,cols", TILINGS)
def test_patched_int8_matches_tflm_bit_for_bit(layers, strips, cols):
    model, x = int8_cnn()
    (want,) = run_tflm(model, [x])
    res = aot.compile(model, patch=(layers, strips, cols) if cols > 1 else (layers, strips))
    got = aot.run(res, {"x": x}, sanitize=True)
    np.testing.assert_array_equal(got["out"], want)
    entry = _execution(res)
    assert (entry["layers"], entry["strips"], entry["columns"]) == (layers, strips, cols) and entry["extra_macs"] > 0


def test_column_tiles_cost_their_halos():
    """A tile's halo is computed again by its neighbour: the same strips cut into columns too
    add multiply-accumulates, and hold less of the stage at once."""
    from aot.compiler import run_passes
    from aot.frontend import import_model
    from aot.passes.patch import patch
    model, _ = int8_cnn(h=40, w=40)
    g = run_passes(import_model(model, None, name="m", log=lambda m: None), lambda m: None)
    cut = [c for c in _stages(model) if c.nodes == 4][0]
    _, rows = patch(g, cut.value, 4)
    g2, tiles = patch(g, cut.value, 4, 4)
    assert tiles.macs_before == rows.macs_before and tiles.macs_after > rows.macs_after > rows.macs_before
    # every tile's first conv reads a box of the input: a Slice of rows and columns
    boxes = [n for n in g2.nodes if n.op == "Slice" and n.inputs[0].name == "x"]
    assert len(boxes) == 16 and all(b.outputs[0].type.shape[2] < 40 for b in boxes)
    assert len({tuple(b.attrs["begin"]) for b in boxes}) == 16


@pytest.mark.parametrize("tiling", [(5, 5), (5, 2, 3), (4, 3, 2)])
def test_patched_workspace_is_exact_under_asan(tiling):
    """The patched plan's workspace, one byte short, overflows; at its size it runs clean."""
    model, x = int8_cnn()
    for io_in in (False, True):
        res = aot.compile(model, patch=tiling, use_workspace_io=io_in)
        if io_in:
            continue        # the workspace-I/O client is another harness; the plan is verified the same way
        size = res.plan.workspace_size
        rc, err = _run_with_workspace_bytes(res.tar, {"x": x}, size)
        assert rc == 0, err[-2000:]
        rc, err = _run_with_workspace_bytes(res.tar, {"x": x}, size - 1)
        assert rc != 0 and "global-buffer-overflow" in err, "a workspace one byte smaller went unnoticed"


def test_auto_patching_shrinks_the_workspace_and_budgets():
    model, x = int8_cnn(h=40, w=28)
    plain = aot.compile(model)
    auto = aot.compile(model, patch="auto")
    io = 40 * 28 * 3 + 4
    assert auto.plan.workspace_size < plain.plan.workspace_size
    # above what layer by layer needs: layer by layer, no extra work
    above = aot.compile(model, ram_budget=plain.plan.workspace_size + io)
    assert _execution(above) is None and above.plan.workspace_size == plain.plan.workspace_size
    # exactly the smallest the search reaches: patched, and within it
    at = aot.compile(model, ram_budget=auto.plan.workspace_size + io)
    assert _execution(at) is not None and at.plan.workspace_size + io <= auto.plan.workspace_size + io
    # one byte below it: refused, naming the smallest RAM found
    with pytest.raises(AotError, match=rf"smallest RAM found is {auto.plan.workspace_size + io:,} bytes"):
        aot.compile(model, ram_budget=auto.plan.workspace_size + io - 1)
    np.testing.assert_array_equal(aot.run(at, {"x": x}, sanitize=True)["out"], aot.run(plain, {"x": x})["out"])


def _execution(res):
    from mlf import read_mlf
    return read_mlf(res.tar).aot["execution"]["patch"]


def test_patch_options_are_checked(tmp_path):
    model, _ = int8_cnn()
    with pytest.raises(AotError, match=r"no stage of 3 layers .*stages of this model: 4, 5, 6\)"):
        aot.compile(model, patch=(3, 2))
    with pytest.raises(AotError, match=r"5 rows and 4 columns: give 1 to 5 strips and 1 to 4 column tiles"):
        aot.compile(model, patch=(6, 6))
    with pytest.raises(AotError, match=r"give 1 to 10 strips and 1 to 7 column tiles"):
        aot.compile(model, patch=(4, 11))
    with pytest.raises(AotError, match=r"give 1 to 10 strips and 1 to 7 column tiles"):
        aot.compile(model, patch=(4, 2, 8))
    with pytest.raises(AotError, match=r"2 tiles or more"):
        aot.compile(model, patch=(4, 1, 1))
    with pytest.raises(AotError, match=r"give \(layers, strips\) or \(layers, strips, column tiles\)"):
        aot.compile(model, patch=(4, 2, 2, 2))
    with pytest.raises(AotError, match=r"positive"):
        aot.compile(model, ram_budget=0)
    with pytest.raises(AotError, match=r"--patch is for C targets"):
        aot.compile(model, target="cuda", patch="auto")
    p = tmp_path / "m.tflite"
    p.write_bytes(model)
    for bad in ("4", "x:2", "4:2:1", "4:2x", "4:2x0", "4:1"):
        r = subprocess.run(["python", "-m", "aot", "compile", str(p), "-o", str(tmp_path / "o.tar"), "--patch", bad],
                           capture_output=True, text=True)
        assert r.returncode == 2 and "--patch" in r.stderr and "Traceback" not in r.stderr
        assert not (tmp_path / "o.tar").exists()


def test_input_views_are_dropped_for_a_stage():
    """An NHWC input of one channel reshaped to NCHW [1, 1, H, W] (KWS's ONNX export), which the
    host's channels-last pass transposes back, is the input itself: the stage starts there, and
    the outputs stay onnxruntime's."""
    import onnx
    from onnx import TensorProto, helper
    from conftest import ort_run
    from aot.passes.patch import drop_input_views
    r = np.random.default_rng(1)
    inits, nodes, prev, cin = [helper.make_tensor("s", TensorProto.INT64, [4], [1, 1, 12, 9])], [], "c", 1
    nodes.append(helper.make_node("Reshape", ["x", "s"], ["c"]))
    for k, stride in enumerate([1, 2] + [1] * 6):   # eight convs: the host makes the chain channels-last
        inits.append(helper.make_tensor(f"w{k}", TensorProto.FLOAT, [4, cin, 3, 3], r.standard_normal(36 * cin)))
        nodes.append(helper.make_node("Conv", [prev, f"w{k}"], [f"y{k}"], pads=[1, 1, 1, 1], strides=[stride] * 2))
        nodes.append(helper.make_node("Relu", [f"y{k}"], [f"a{k}"]))
        prev, cin = f"a{k}", 4
    nodes += [helper.make_node("GlobalAveragePool", [prev], ["p"]), helper.make_node("Flatten", ["p"], ["out"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 12, 9, 1])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    x = r.standard_normal((1, 12, 9, 1)).astype(np.float32)
    (want,) = ort_run(m, {"x": x}).values()
    from aot.compiler import run_passes
    from aot.frontend import import_model
    from aot.passes.layout import channels_last
    from aot.passes.patch import stage_cuts
    graph = run_passes(import_model(m.SerializeToString(), None, name="m", log=lambda s: None), lambda s: None)
    graph, _ = channels_last(graph)
    dropped, n = drop_input_views(graph)
    assert [v.op for v in graph.nodes[:2]] == ["Reshape", "Transpose"]
    assert n == 2 and stage_cuts(dropped) and not stage_cuts(graph)
    res = aot.compile(m, patch="force")
    assert _execution(res) is not None
    np.testing.assert_allclose(aot.run(res, {"x": x}, sanitize=True)["out"], want, rtol=1e-5, atol=1e-5)
