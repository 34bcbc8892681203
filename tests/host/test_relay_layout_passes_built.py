"""relay.transform.ConvertLayout, FoldScaleAxis (with SimplifyInference) and CanonicalizeOps, as
use_pass_instrument applies them to relay.testing.resnet: each transformed module built for "c"
and run gives what a numpy pre-activation ResNet written here gives."""
import numpy as np
import pytest

import aot
from aot import relay
from aot.contrib import graph_executor
from aot.relay import testing
from aot.relay.build_module import bind_params_by_name


def _conv(x, w, pad, stride):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    o, _, kh, kw = w.shape
    oh, ow = (xp.shape[2] - kh) // stride + 1, (xp.shape[3] - kw) // stride + 1
    out = np.zeros((x.shape[0], o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


def _reference(p, x):
    def bn(a, name, scale=True):
        g = p[name + "_gamma"] if scale else np.ones_like(p[name + "_beta"])
        sh = (1, -1, 1, 1)
        return (a - p[name + "_moving_mean"].reshape(sh)) / np.sqrt(p[name + "_moving_var"].reshape(sh) + 2e-5) \
            * g.reshape(sh) + p[name + "_beta"].reshape(sh)

    def conv(a, name, pad, stride=1):
        return _conv(a, p[name + "_weight"].astype(np.float64), pad, stride)

    a = conv(bn(x.astype(np.float64), "bn_data", scale=False), "conv0", 1)
    for stage, stride in ((1, 1), (2, 2), (3, 2)):
        u = f"stage{stage}_unit1"
        act = np.maximum(bn(a, u + "_bn1"), 0)
        y = conv(np.maximum(bn(conv(act, u + "_conv1", 1, stride), u + "_bn2"), 0), u + "_conv2", 1)
        a = y + conv(act, u + "_sc", 0, stride)
    a = np.maximum(bn(a, "bn1"), 0).mean(axis=(2, 3))
    logits = a @ p["fc1_weight"].T + p["fc1_bias"]
    e = np.exp(logits - logits.max())
    return e / e.sum()


@pytest.fixture(scope="module")
def workload():
    mod, params = testing.resnet.get_workload(num_layers=8, batch_size=1, image_shape=(3, 28, 28), num_classes=10)
    rng = np.random.default_rng(7)
    p = {k: v.numpy() for k, v in params.items()}
    for k, v in p.items():
        if k.endswith("_gamma") or k.endswith("_moving_var"):
            p[k] = rng.uniform(0.5, 1.5, v.shape).astype(np.float32)
        elif k.endswith(("_beta", "_moving_mean")):
            p[k] = rng.normal(0, 0.2, v.shape).astype(np.float32)
    x = rng.uniform(-1, 1, (1, 3, 28, 28)).astype(np.float32)
    mod["main"] = bind_params_by_name(mod["main"], p)
    return mod, x, _reference(p, x)


def _run(mod, x):
    lib = relay.build(mod, "c")
    m = graph_executor.GraphModule(lib["default"](aot.cpu(0)))
    m.set_input("data", x)
    m.run()
    return m.get_output(0).numpy()


def _ops(mod):
    n = {}

    def visit(e):
        if isinstance(e, relay.Call) and isinstance(e.op, str):
            n[e.op] = n.get(e.op, 0) + 1
    relay.analysis.post_order_visit(mod["main"], visit)
    return n


def test_convert_layout_to_nhwc_matches_numpy(workload):
    mod, x, ref = workload
    seq = aot.transform.Sequential([relay.transform.FoldConstant(),
                                    relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "HWIO"]}),
                                    relay.transform.FoldConstant()])
    with aot.transform.PassContext(opt_level=3):
        out_mod = seq(mod)
    ops = _ops(out_mod)
    # the data enters NHWC once and leaves once (before batch_flatten); the weights' transforms fold
    assert ops["layout_transform"] == 2, ops
    convs = []
    relay.analysis.post_order_visit(out_mod["main"], lambda e: convs.append(e) if isinstance(e, relay.Call)
                                    and e.op == "nn.conv2d" else None)
    assert {(c.attrs["data_layout"], c.attrs["kernel_layout"]) for c in convs} == {("NHWC", "HWIO")}
    assert "nn.bias_add" not in ops          # CanonicalizeOps ran first, as ConvertLayout requires
    np.testing.assert_allclose(_run(out_mod, x), ref, rtol=1e-4, atol=1e-6)
    assert _ops(mod).get("layout_transform", 0) == 0          # the input module is unchanged
    np.testing.assert_allclose(_run(mod, x), ref, rtol=1e-4, atol=1e-6)


def test_fold_scale_axis_folds_batch_norm_scales_into_convs(workload):
    mod, x, ref = workload
    with aot.transform.PassContext(opt_level=3):
        simple = relay.transform.FoldConstant()(relay.transform.SimplifyInference()(mod))
        folded = relay.transform.FoldScaleAxis()(simple)
    before, after = _ops(simple), _ops(folded)
    # every conv is followed by a batch norm's multiply (conv0's and the units' second convs after an add
    # are not: the add of the shortcut stands between), so some multiplies go
    assert after["multiply"] < before["multiply"], (before, after)
    assert after["nn.conv2d"] == before["nn.conv2d"]
    np.testing.assert_allclose(_run(folded, x), ref, rtol=1e-4, atol=1e-6)


def test_fold_scale_axis_below_opt_level_3_only_folds_constants(workload):
    mod, _, _ = workload
    simple = relay.transform.SimplifyInference()(mod)
    with aot.transform.PassContext(opt_level=2):
        out = relay.transform.FoldScaleAxis()(simple)
    assert _ops(out) == _ops(relay.transform.FoldConstant()(simple))


@pytest.mark.parametrize("kernel_layout", ["HWIO", "default", "OHWI", "HWOI"])
def test_grouped_convs_pool_and_broadcast_constants_convert_alike(kernel_layout):
    """Depthwise and grouped convs, a per-channel scale between them (ForwardFold / BackwardFold
    candidates), a pool and a broadcast add: converted to NHWC and folded, the same outputs as the
    module built as it was."""
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(1, 4, 6, 6))
    y = relay.nn.conv2d(x, relay.const(rng.normal(size=(4, 1, 3, 3)).astype(np.float32)), padding=(1, 1), groups=4,
                        channels=4, kernel_size=(3, 3))
    y = relay.nn.relu(y * relay.const(rng.normal(size=(4, 1, 1)).astype(np.float32)))
    y = relay.nn.conv2d(y, relay.const(rng.normal(size=(6, 2, 3, 3)).astype(np.float32)), padding=(1, 1), groups=2,
                        channels=6, kernel_size=(3, 3))
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
    y = relay.add(y, relay.const(rng.normal(size=(6, 1, 1)).astype(np.float32)))
    mod = relay.IRModule.from_expr(relay.Function([x], y))
    data = rng.normal(size=(1, 4, 6, 6)).astype(np.float32)

    def run(m):
        lib = relay.build(m, "c")
        g = graph_executor.GraphModule(lib["default"](aot.cpu(0)))
        g.set_input("x", data)
        g.run()
        return g.get_output(0).numpy()
    ref = run(mod)
    with aot.transform.PassContext(opt_level=3):
        converted = aot.transform.Sequential([relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", kernel_layout]}),
                                              relay.transform.FoldConstant(), relay.transform.FoldScaleAxis()])(mod)
    assert {c.attrs["data_layout"] for c in _calls_of(converted, "nn.conv2d")} == {"NHWC"}
    np.testing.assert_allclose(run(converted), ref, rtol=1e-5, atol=1e-5)


def _calls_of(mod, op):
    out = []
    relay.analysis.post_order_visit(mod["main"], lambda e: out.append(e) if isinstance(e, relay.Call)
                                    and e.op == op else None)
    return out
