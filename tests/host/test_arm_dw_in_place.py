"""Depthwise convs written over their input keep the dw_s8 micro-kernel (issues 15 and 16).

- A stride-2 depthwise conv whose smaller output lands on the start of its dying input is proven
  by aot/tir/inplace.py's replay in program order, which models each dw_s8 call from its
  arguments: channel k reads its window, then writes out[k] (the intrinsic's ordered_accesses).
- A stride-1 depthwise conv written over its input is staged by rows (aot/schedules/
  inplace_conv.py stage_rows): output row y computed into a ring of two rows, row y - 1 copied
  back over the input, where staging by channel blocks needs whole planes.

Outputs are compared bit for bit with the tflite-micro wheel (host, ASan/UBSan; emulated
Cortex-M4 and M55) and with the plain loop nest; the workspace is exact under ASan; unsafe
variants (an offset landing on what a later channel or row still reads) are refused.
"""
import numpy as np
import pytest

from test_arm_dw_microkernel import _check, _feeds, dw_schedule
from test_memory import _run_with_workspace_bytes
from tflite_build import ModelBuilder
from tflm_oracle import tflm_available
from conftest import is_shrunk, is_staged

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")


def dw_net(H, W, C, strides=(1, 1, 1), seed=5):
    """3x3 SAME depthwise convs of C channels in a row, then a 1x1 conv to 4 channels: each but the
    first has an input that dies there (written over: by rows at stride 1, by the output's start
    at stride 2)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    t = x = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=-3)
    h, w_ = H, W
    for k, s in enumerate(strides):
        ws = (10.0 ** rng.uniform(-3, 0.5, C)).astype(np.float32)
        w = mb.tensor(f"w{k}", [1, 3, 3, C], "int8", data=rng.integers(-127, 128, (1, 3, 3, C)).astype(np.int8),
                      scale=ws, zero_point=[0] * C, quantized_dimension=3)
        b = mb.tensor(f"b{k}", [C], "int32", data=rng.integers(-3000, 3000, C).astype(np.int32), scale=0.05 * ws,
                      zero_point=[0] * C)
        h, w_ = -(-h // s), -(-w_ // s)
        y = mb.tensor(f"y{k}", [1, h, w_, C], "int8", scale=0.05, zero_point=-3 + k)
        mb.op("DEPTHWISE_CONV_2D", [t, w, b], [y], padding="SAME", stride_h=s, stride_w=s, depth_multiplier=1,
              fused_activation_function="RELU6" if k == 1 else "NONE")
        t = y
    ws = (10.0 ** rng.uniform(-3, -1, 4)).astype(np.float32)
    w = mb.tensor("wp", [4, 1, 1, C], "int8", data=rng.integers(-127, 128, (4, 1, 1, C)).astype(np.int8),
                  scale=ws, zero_point=[0] * 4, quantized_dimension=0)
    b = mb.tensor("bp", [4], "int32", data=rng.integers(-3000, 3000, 4).astype(np.int32), scale=0.05 * ws,
                  zero_point=[0] * 4)
    y = mb.tensor("y", [1, h, w_, 4], "int8", scale=0.2, zero_point=1)
    mb.op("CONV_2D", [t, w, b], [y], padding="SAME", stride_h=1, stride_w=1, fused_activation_function="NONE")
    return mb.finish(inputs=[x], outputs=[y]), (1, H, W, C)


def _group_func(model, k):
    """The plain loop nest of the model's k-th kernel."""
    from aot.compiler import Options, fuse_and_order, run_passes
    from aot.frontend import import_model
    from aot.te.lower import lower_group
    graph = run_passes(import_model(model), lambda msg: None)
    groups = [g for g in fuse_and_order(graph, Options(), lambda msg: None) if not g.alias]
    return lower_group(groups[k], "k")[0]


def _exact_workspace(res, model, shape):
    feed = _feeds(shape, 1)[0]
    feeds = {res.graph.inputs[0].name: feed}
    rc, err = _run_with_workspace_bytes(res.tar, feeds, res.plan.workspace_size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, res.plan.workspace_size - 1)
    assert rc != 0 and "global-buffer-overflow" in err


# --- the replay's model of a dw_s8 call

def _dw_call_func(pixels, window, x_size, a_k=1):
    """`pixels` dw_s8 calls of 4 channels, call p reading `window` pixels from pixel p of x and
    writing pixel p of o."""
    import aot.tir.intrin  # noqa: F401  registers dw_s8
    from aot.tir.expr import Call, Const, Load, Var
    from aot.tir.stmt import Buffer, Evaluate, For, PrimFunc
    x, o = Buffer("x", "int8", (x_size,)), Buffer("o", "int8", (4 * pixels,))
    w = Buffer("w", "int8", (4 * window,))
    bias, m, s = (Buffer(n, "int32", (4,)) for n in ("bias", "m", "s"))
    p = Var("p")
    i = [Const(v, "int32") for v in (4, 1, window, 4 * window, 4, 4 * window, 4, a_k, 0, 0, -128, 127)]
    call = Call("dw_s8", [Load(o, p * 4), Load(x, p * 4), Load(w, 0), Load(bias, 0), Load(m, 0), Load(s, 0), *i],
                "int32")
    return PrimFunc("f", [x, w, bias, m, s, o], For(p, Const(0, "int32"), Const(pixels, "int32"), Evaluate(call)), 5)


def test_the_replay_takes_a_dw_call_channel_by_channel():
    """out[k] may land on the input element channel k itself reads (read before written), not on
    one a later channel of the same call, or a later call, still reads; a channel stride other
    than 0 or 1 is not modelled and refused."""
    from aot.tir.inplace import writes_over_in_order
    f = _dw_call_func(1, 1, 5)
    x, o = f.params[0], f.params[-1]
    assert writes_over_in_order(f, [x], o, 0)
    assert not writes_over_in_order(f, [x], o, 1)      # out[k] lands on x[k + 1], which channel k + 1 reads next
    f = _dw_call_func(2, 2, 12)                        # call p reads pixels p, p + 1 and writes pixel p
    x, o = f.params[0], f.params[-1]
    assert writes_over_in_order(f, [x], o, 0)
    assert not writes_over_in_order(f, [x], o, 4)      # pixel 0's output lands on pixel 1, which call 1 reads
    f = _dw_call_func(2, 2, 12, a_k=2)
    assert not writes_over_in_order(f, [f.params[0]], f.params[-1], 0)


# --- a stride-2 depthwise conv over the start of its input

@pytest.mark.parametrize("mcpu,variant", [("cortex-m4", "dsp"), ("cortex-m55", "mve")])
def test_a_strided_depthwise_conv_over_its_input_keeps_dw_s8(mcpu, variant):
    import aot
    from aot.tir.inplace import writes_over_in_order
    model, _ = dw_net(12, 8, 16, strides=(1, 2))
    res = aot.compile(model, target=f"c -mcpu={mcpu}")
    shrunk = [c for c in res.plan.calls if is_shrunk(c)]
    assert [c.func.attrs.get("schedule") for c in shrunk] == [dw_schedule(variant)]
    f = shrunk[0].func
    i, o = f.params[0], f.params[f.num_inputs]
    assert writes_over_in_order(f, [i], o, 0)
    assert not writes_over_in_order(f, [i], o, i.size - o.size)     # its end: over channels not yet read
    rows = {r["name"]: r for r in res.plan.tensors}
    assert rows["y1"].get("in_place_of") == "y0" and rows["y1"]["offset"] == rows["y0"]["offset"]


@tflm
def test_a_strided_depthwise_conv_over_its_input_is_exact_on_the_host():
    import aot
    model, shape = dw_net(12, 8, 16, strides=(1, 2))
    res = aot.compile(model, target="c -mcpu=cortex-m55")
    _check(res, _feeds(shape), model, sanitize=True)
    _exact_workspace(res, model, shape)


# --- a stride-1 depthwise conv staged by rows

@pytest.mark.parametrize("mcpu,variant", [("cortex-m4", "dsp"), ("cortex-m55", "mve"), (None, None)])
def test_a_depthwise_conv_over_its_input_is_staged_by_rows(mcpu, variant):
    """20 rows of 6 pixels of 8 channels: a ring of two rows (96 bytes) where planes take 120
    (cortex-m4, plain C) and blocks of 2 channels 240 (Helium); the workspace is one tensor and
    the ring."""
    import aot
    model, _ = dw_net(20, 6, 8)
    res = aot.compile(model, target=f"c -mcpu={mcpu}" if mcpu else "c")
    staged = [c for c in res.plan.calls if is_staged(c) and c.scratch_bytes > 8]
    assert [c.scratch_bytes for c in staged] == [2 * 6 * 8, 2 * 6 * 8]
    assert all(c.func.params[-1].name.endswith("_rows") for c in staged)
    assert all(c.func.attrs.get("schedule") == (dw_schedule(variant) if variant else None) for c in staged)
    assert res.plan.workspace_lower_bound == 20 * 6 * 8 + 2 * 6 * 8


def test_row_staging_copying_back_too_early_is_refused():
    """Copied back on the row just computed (lag 0), output row y lands on input row y, which row
    y + 1 still reads: refused, on the plain nest and on the dw_s8 schedule; the lag the
    reads ask for (1) is proven on both."""
    from aot.schedules import schedule
    from aot.schedules.inplace_conv import stage_rows
    from aot.target import Target
    from aot.tir.inplace import writes_over_in_order
    from aot.tir.legalize import legalize
    model, _ = dw_net(20, 6, 8)
    func = _group_func(model, 1)
    out = len(func.params) - 1
    for lag, ok in ((None, True), (1, True), (0, False)):
        staged, n = stage_rows(func, 0, out, lag=lag)
        assert n == ((lag if lag is not None else 1) + 1) * 6 * 8
        for f in (staged, legalize(schedule(staged, Target("c -mcpu=cortex-m55")))):
            assert writes_over_in_order(f, [f.params[0]], f.params[out], 0) == ok
        assert f.attrs.get("schedule") == "dw_s8 (mve)"
    assert stage_rows(_group_func(dw_net(6, 6, 8)[0], 1), 0, out) is None       # the ring would pass a quarter


@tflm
@pytest.mark.parametrize("mcpu", ["cortex-m55", "cortex-m4"])
def test_row_staging_is_exact_on_the_host(mcpu):
    import aot
    model, shape = dw_net(20, 6, 8, strides=(1, 1, 2))
    res = aot.compile(model, target=f"c -mcpu={mcpu}")
    assert any(c.func.params[-1].name.endswith("_rows") for c in res.plan.calls
               if is_staged(c))
    assert any(is_shrunk(c) for c in res.plan.calls)
    _check(res, _feeds(shape), model, sanitize=True)
    _exact_workspace(res, model, shape)


def float_dw_net(H, W, C, seed=7):
    """float32 TFLite (NHWC): two 3x3 SAME depthwise convs of C channels, then a 1x1 conv to 4."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    t = x = mb.tensor("x", [1, H, W, C], "float32")
    for k in range(2):
        w = mb.tensor(f"w{k}", [1, 3, 3, C], "float32", data=(rng.standard_normal((1, 3, 3, C)) * 0.3))
        b = mb.tensor(f"b{k}", [C], "float32", data=rng.standard_normal(C) * 0.1)
        y = mb.tensor(f"y{k}", [1, H, W, C], "float32")
        mb.op("DEPTHWISE_CONV_2D", [t, w, b], [y], padding="SAME", stride_h=1, stride_w=1, depth_multiplier=1,
              fused_activation_function="RELU" if k else "NONE")
        t = y
    w = mb.tensor("wp", [4, 1, 1, C], "float32", data=rng.standard_normal((4, 1, 1, C)) * 0.3)
    b = mb.tensor("bp", [4], "float32", data=np.zeros(4))
    y = mb.tensor("y", [1, H, W, 4], "float32")
    mb.op("CONV_2D", [t, w, b], [y], padding="SAME", stride_h=1, stride_w=1, fused_activation_function="NONE")
    return mb.finish(inputs=[x], outputs=[y]), (1, H, W, C)


@tflm
def test_a_float_depthwise_conv_is_staged_by_rows_too():
    """The float NHWC conv on the host (plain C): a ring of 2 * 6 * 8 floats where a plane takes
    20 * 6; against TFLM, the workspace exact under ASan. (An NCHW conv's outer loop is its
    channels: a ring of one plane, no smaller than planes, so planes stay.)"""
    import aot
    from tflm_oracle import run_tflm
    model, shape = float_dw_net(20, 6, 8)
    res = aot.compile(model, target="c")
    rows = [c for c in res.plan.calls if is_staged(c)
            and c.func.params[-1].name.endswith("_rows")]
    assert [c.scratch_bytes for c in rows] == [2 * 6 * 8 * 4]
    feed = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    got = aot.run(res, {res.graph.inputs[0].name: feed}, sanitize=True)[res.graph.output_names[0]]
    np.testing.assert_allclose(got, run_tflm(model, [feed])[0], rtol=1e-4, atol=1e-5)
    feeds = {res.graph.inputs[0].name: feed}
    rc, err = _run_with_workspace_bytes(res.tar, feeds, res.plan.workspace_size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, res.plan.workspace_size - 1)
    assert rc != 0 and "global-buffer-overflow" in err
