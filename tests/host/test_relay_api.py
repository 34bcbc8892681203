"""aot.relay, the graph builder with TVM's names: TVM's tutorial programs run with the import
changed, and every relay op is checked against a numpy reference written here (not against the
op's own graph-IR reference)."""
import numpy as np
import pytest

import aot
from aot import relay
from aot.contrib import graph_executor
from aot.errors import AotError
from aot.relay import testing


# -- numpy references --------------------------------------------------------------------------------
def conv2d_nchw(x, w, pad, stride=1, groups=1):
    n, c, h, wd = x.shape
    o, ci, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    oh, ow = (xp.shape[2] - kh) // stride + 1, (xp.shape[3] - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * ci:(g + 1) * ci, i:i + stride * oh:stride, j:j + stride * ow:stride]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    return out


def batch_norm(x, gamma, beta, mean, var, eps, axis=1):
    sh = [1] * x.ndim
    sh[axis] = -1
    return (x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + eps) * gamma.reshape(sh) + beta.reshape(sh)


def _run(mod, params, feeds, target="c"):
    lib = relay.build(mod, target, params=params)
    m = graph_executor.GraphModule(lib["default"](aot.cpu(0)))
    for k, v in feeds.items():
        m.set_input(k, v)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())], lib


def _tutorial_net(out_channels=16, shape=(1, 3, 224, 224)):
    """TVM's "Quick start: conv -> batch_norm -> relu" network, as its tutorial writes it."""
    data = relay.var("data", relay.TensorType(shape, "float32"))
    weight = relay.var("weight")
    bn_gamma = relay.var("bn_gamma")
    bn_beta = relay.var("bn_beta")
    bn_mmean = relay.var("bn_mean")
    bn_mvar = relay.var("bn_var")
    simple_net = relay.nn.conv2d(data=data, weight=weight, kernel_size=(3, 3), channels=out_channels,
                                 padding=(1, 1))
    simple_net = relay.nn.batch_norm(simple_net, bn_gamma, bn_beta, bn_mmean, bn_mvar)[0]
    simple_net = relay.nn.relu(simple_net)
    return relay.Function(relay.analysis.free_vars(simple_net), simple_net)


def _bn_params(rng, c):
    return {"bn_gamma": rng.uniform(0.5, 1.5, c).astype(np.float32), "bn_beta": rng.normal(0, 0.3, c).astype(np.float32),
            "bn_mean": rng.normal(0, 0.3, c).astype(np.float32), "bn_var": rng.uniform(0.5, 2, c).astype(np.float32)}


def _tutorial_reference(x, p):
    p = {k: np.asarray(v) for k, v in p.items()}
    y = batch_norm(conv2d_nchw(x.astype(np.float64), p["weight"].astype(np.float64), [1, 1, 1, 1]),
                   p["bn_gamma"], p["bn_beta"], p["bn_mean"], p["bn_var"], 1e-5)
    return np.maximum(y, 0)


def test_tutorial_conv_bn_relu_for_c_matches_numpy():
    """The tutorial, unchanged but for the imports: create_workload's parameters, set_input/run/
    get_output(0, nd.empty(shape)) on a (1, 3, 224, 224) input."""
    net, params = testing.create_workload(_tutorial_net())
    assert {k: v.shape for k, v in params.items()} == {"weight": (16, 3, 3, 3), "bn_gamma": (16,), "bn_beta": (16,),
                                                       "bn_mean": (16,), "bn_var": (16,)}
    params.update(_bn_params(np.random.default_rng(1), 16))     # the default batch norm is an identity
    lib = relay.build(net, "c", params=params)
    x = np.random.default_rng(2).uniform(-1, 1, (1, 3, 224, 224)).astype("float32")
    module = graph_executor.GraphModule(lib["default"](aot.cpu(0)))
    module.set_input("data", x)
    module.run()
    out = module.get_output(0, aot.nd.empty((1, 16, 224, 224))).numpy()
    np.testing.assert_allclose(out, _tutorial_reference(x, params), rtol=1e-4, atol=1e-5)
    assert "tvmgen_default_run" in lib.get_source()
    # batch norm folded into the conv at build: one fused kernel
    assert [n.op for n in lib.result.graph.nodes] == ["Conv", "Relu"]


def test_create_workload_is_seeded_and_typed_vars_stay_inputs():
    net = _tutorial_net(4, (1, 3, 8, 8))
    _, p1 = testing.create_workload(net)
    after = np.random.uniform(size=3)          # numpy's global state, seeded by create_workload as TVM's is
    _, p2 = testing.create_workload(net)
    assert np.array_equal(np.random.uniform(size=3), after)
    _, p3 = testing.create_workload(net, seed=1)
    p1, p2, p3 = ({k: v.numpy() for k, v in p.items()} for p in (p1, p2, p3))
    assert np.array_equal(p1["weight"], p2["weight"]) and not np.array_equal(p1["weight"], p3["weight"])
    assert "data" not in p1 and np.all(p1["bn_var"] == 1) and np.all(p1["bn_beta"] == 0)
    # Xavier-uniform, factor the mean of fan in (3*3*3) and fan out (4*3*3), magnitude 3, drawn after seeding
    np.random.seed(0)
    scale = np.sqrt(3 / ((27 + 36) / 2))
    np.testing.assert_array_equal(p1["weight"], np.random.uniform(-scale, scale, (4, 3, 3, 3)).astype(np.float32))


def test_small_cnn_of_many_ops_matches_numpy():
    """conv (NHWC, HWIO weights, stride 2) -> bias_add -> batch_norm on axis 3 -> max_pool -> conv
    (grouped) -> avg_pool -> global_avg_pool -> batch_flatten -> dense -> bias_add -> softmax, with a
    second output through concatenate/reshape/reductions."""
    rng = np.random.default_rng(7)
    x = relay.var("x", shape=(1, 12, 12, 4))
    w1 = relay.var("w1")
    y = relay.nn.conv2d(x, w1, strides=(2, 2), padding=1, channels=8, kernel_size=3, data_layout="NHWC",
                        kernel_layout="HWIO")
    y = relay.nn.bias_add(y, relay.var("b1"), axis=3)
    y = relay.nn.batch_norm(y, relay.var("g"), relay.var("be"), relay.var("m"), relay.var("v"), axis=3,
                            epsilon=1e-3)[0]
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(1, 1), padding=(0, 0, 1, 1), layout="NHWC")
    y = relay.transpose(y, (0, 3, 1, 2))
    y = relay.nn.conv2d(y, relay.var("w2"), padding=(1, 1), channels=8, kernel_size=(3, 3), groups=2)
    y = relay.nn.leaky_relu(y, 0.1)
    y = relay.nn.avg_pool2d(y, pool_size=(3, 3), strides=(2, 2), padding=(1, 1), count_include_pad=False)
    g = relay.nn.global_avg_pool2d(y)
    f = relay.nn.batch_flatten(g)
    d = relay.nn.bias_add(relay.nn.dense(f, relay.var("wd"), units=5), relay.var("bd"))
    s = relay.nn.softmax(d)
    side = relay.concatenate([relay.reshape(relay.mean(y, axis=(2, 3)), (1, 8)), relay.sum(d, axis=1, keepdims=True),
                              relay.reshape(relay.clip(relay.max(y, axis=[1, 2, 3]), 0.0, 0.5), (1, 1))], axis=1)
    func = relay.Function(relay.analysis.free_vars(relay.Tuple([s, side])), relay.Tuple([s, side]))
    p = {"w1": rng.normal(0, 0.3, (3, 3, 4, 8)), "b1": rng.normal(0, 0.1, 8), "g": rng.uniform(0.5, 1.5, 8),
         "be": rng.normal(0, 0.1, 8), "m": rng.normal(0, 0.1, 8), "v": rng.uniform(0.5, 2, 8),
         "w2": rng.normal(0, 0.3, (8, 4, 3, 3)), "wd": rng.normal(0, 0.3, (5, 8)), "bd": rng.normal(0, 0.1, 5)}
    p = {k: v.astype(np.float32) for k, v in p.items()}
    xv = rng.normal(0, 1, (1, 12, 12, 4)).astype(np.float32)
    (out_s, out_side), _ = _run(func, p, {"x": xv})

    # numpy, in NCHW
    a = conv2d_nchw(xv.transpose(0, 3, 1, 2).astype(np.float64), p["w1"].transpose(3, 2, 0, 1), [1, 1, 1, 1], 2)
    a = a + p["b1"].reshape(1, -1, 1, 1)
    a = batch_norm(a, p["g"], p["be"], p["m"], p["v"], 1e-3)
    a = np.pad(a, ((0, 0), (0, 0), (0, 1), (0, 1)), constant_values=-np.inf)
    a = np.max([a[:, :, i:i + 6, j:j + 6] for i in range(2) for j in range(2)], axis=0)
    a = conv2d_nchw(a, p["w2"].astype(np.float64), [1, 1, 1, 1], groups=2)
    a = np.where(a >= 0, a, 0.1 * a)
    ap = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=np.nan)
    a = np.nanmean([ap[:, :, i:i + 6:2, j:j + 6:2] for i in range(3) for j in range(3)], axis=0)
    d_ref = a.mean(axis=(2, 3)) @ p["wd"].T.astype(np.float64) + p["bd"]
    e = np.exp(d_ref - d_ref.max())
    np.testing.assert_allclose(out_s, e / e.sum(), rtol=1e-4, atol=1e-6)
    side_ref = np.concatenate([a.mean(axis=(2, 3)), d_ref.sum(axis=1, keepdims=True),
                               np.clip(a.max(axis=(1, 2, 3)), 0, 0.5).reshape(1, 1)], axis=1)
    np.testing.assert_allclose(out_side, side_ref, rtol=1e-4, atol=1e-5)


def test_elementwise_and_shape_ops_match_numpy():
    rng = np.random.default_rng(3)
    a = relay.var("a", shape=(2, 3, 4))
    b = relay.var("b", shape=(3, 1))
    y = relay.add(relay.multiply(relay.exp(relay.negative(a)), b), relay.const(0.5))
    y = relay.maximum(relay.sigmoid(y) - relay.tanh(a) / relay.const(2.0), relay.sqrt(relay.abs(a)))
    y = relay.squeeze(relay.expand_dims(relay.transpose(y, (2, 0, 1)), 0), axis=[0])
    y = relay.nn.pad(y, ((0, 0), (1, 0), (0, 2)), pad_value=-1.0)
    av, bv = rng.normal(0, 1, (2, 3, 4)).astype(np.float32), rng.normal(0, 1, (3, 1)).astype(np.float32)
    (out,), _ = _run(relay.Function([a, b], y), None, {"a": av, "b": bv})
    ref = 1 / (1 + np.exp(-(np.exp(-av) * bv + 0.5))) - np.tanh(av) / 2
    ref = np.maximum(ref, np.sqrt(np.abs(av))).transpose(2, 0, 1)
    np.testing.assert_allclose(out, np.pad(ref, ((0, 0), (1, 0), (0, 2)), constant_values=-1), rtol=1e-5, atol=1e-6)


def test_build_gives_the_same_mlf_as_the_equivalent_onnx_model():
    """One graph IR: the relay network and the ONNX model of the same ops compile to the same C."""
    from onnx import TensorProto, helper, numpy_helper
    w = np.random.default_rng(0).normal(0, 1, (4, 3, 3, 3)).astype(np.float32)
    x = relay.var("x", shape=(1, 3, 8, 8))
    func = relay.Function([x], relay.nn.relu(relay.nn.conv2d(x, relay.const(w), padding=1)))
    lib = relay.build(func, "c")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["c"], ["output"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [numpy_helper.from_array(w, "w")])
    onnx_res = aot.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString())

    def kernels(tar):
        from aot.relay.build_module import source_text
        return [line for line in source_text(tar).splitlines() if "for (" in line or "+=" in line]
    assert kernels(lib.tar) == kernels(onnx_res.tar)


def test_errors_name_the_element_at_fault():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w")
    with pytest.raises(AotError, match="nn.conv2d: an untyped weight needs channels and kernel_size"):
        relay.build(relay.Function([x, w], relay.nn.conv2d(x, w)), "c")
    lonely = relay.var("lonely")
    with pytest.raises(AotError, match="variable 'lonely' has no type"):
        relay.build(relay.Function([x, lonely], relay.nn.relu(x)), "c")
    with pytest.warns(UserWarning, match="params nope name no parameter of main; they bind nothing"):
        relay.build(relay.Function([x], relay.nn.relu(x)), "c", params={"nope": np.zeros(1)})
    with pytest.raises(AotError, match="special values"):
        relay.build(relay.Function([x], relay.reshape(x, (-2,))), "c")
    with pytest.raises(AotError, match="kernel_layout 'HWIO' does not go with data_layout 'NCHW'"):
        relay.nn.conv2d(x, w, kernel_layout="HWIO")
    lib = relay.build(relay.Function([x], relay.nn.relu(x)), "c")
    m = graph_executor.GraphModule(lib["default"](aot.cpu(0)))
    with pytest.raises(AotError, match="no input named 'y'"):
        m.set_input("y", np.zeros((1, 3, 8, 8), np.float32))
    with pytest.raises(AotError, match=r"input 'x' has shape \[1, 3, 8, 8\], the value \[2\]"):
        m.set_input("x", np.zeros(2, np.float32))
    with pytest.raises(AotError, match="set_input first"):
        m.run()


def test_free_vars_order_and_tuple_outputs():
    a, b, c = relay.var("a", shape=(2,)), relay.var("b", shape=(2,)), relay.var("c", shape=(2,))
    body = relay.Tuple([relay.add(b, a), relay.multiply(a, c)])
    assert [v.name_hint for v in relay.analysis.free_vars(body)] == ["b", "a", "c"]
    outs, _ = _run(relay.Function(relay.analysis.free_vars(body), body), None,
                   {"a": np.array([1, 2], np.float32), "b": np.array([3, 4], np.float32),
                    "c": np.array([5, 6], np.float32)})
    np.testing.assert_array_equal(outs[0], [4, 6])
    np.testing.assert_array_equal(outs[1], [5, 12])



def test_quickstart_example_runs():
    import subprocess
    import sys
    from conftest import ROOT
    r = subprocess.run([sys.executable, f"{ROOT}/examples/python_api/relay_quickstart.py"], capture_output=True,
                       text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "max |error| vs numpy" in r.stdout


def test_tvm_06_flow_runs_and_matches_numpy():
    """TVM 0.6's spelling of the tutorial: (graph, lib, params) from build, graph_runtime.create,
    set_input(**params), tvm.context, asnumpy; the numbers are numpy's."""
    import warnings
    from aot.contrib import graph_runtime
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        net, params = testing.create_workload(_tutorial_net(8, (1, 3, 16, 16)))
        bn = _bn_params(np.random.default_rng(4), 8)
        params.update(bn)
        graph, lib, params = relay.build_module.build(net, "c", params=params)
        ctx = aot.context("c", 0)
        x = np.random.uniform(-1, 1, size=(1, 3, 16, 16)).astype("float32")
        module = graph_runtime.create(graph, lib, ctx)
        module.set_input(**params)
        module.set_input("data", x)
        module.run()
        out = module.get_output(0, aot.nd.empty((1, 8, 16, 16))).asnumpy()
    np.testing.assert_allclose(out, _tutorial_reference(x, params), rtol=1e-4, atol=1e-5)


def test_from_onnx_create_executor_matches_onnxruntime():
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(5)
    w, b = rng.normal(0, 0.5, (6, 3, 3, 3)).astype(np.float32), rng.normal(0, 0.5, 6).astype(np.float32)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                           helper.make_node("Sigmoid", ["c"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 10, 10])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 6, 10, 10])],
                          [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.normal(0, 1, (2, 3, 10, 10)).astype(np.float32)
    mod, params = relay.frontend.from_onnx(model, {"x": x.shape})
    with aot.transform.PassContext(opt_level=1):
        run = relay.build_module.create_executor("graph", mod, aot.cpu(0), "llvm", params).evaluate()
    out = run(aot.nd.array(x)).numpy()
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_sparse_dense_of_a_csr_constant_matches_numpy():
    """build_gcn's layer: dense, then sparse_dense by a constant CSR adjacency, bias_add on the last axis."""
    rng = np.random.default_rng(6)
    adj = (rng.uniform(size=(7, 7)) < 0.3) * rng.uniform(1, 2, (7, 7))
    indptr = np.concatenate([[0], np.cumsum((adj != 0).sum(axis=1))]).astype(np.int32)
    indices = np.concatenate([np.nonzero(r)[0] for r in adj]).astype(np.int32)
    vals = adj[adj != 0].astype(np.float32)
    feats = relay.var("feats", shape=(7, 5))
    weight = relay.var("w", shape=(5, 4))
    dense = relay.nn.dense(relay.transpose(weight), feats)                 # [4, 7]
    out = relay.transpose(relay.nn.sparse_dense(dense, (relay.const(vals), relay.const(indices),
                                                       relay.const(indptr))))
    out = relay.nn.bias_add(out, relay.var("bias", shape=(4,)), axis=-1)
    wv, bv = rng.normal(0, 1, (5, 4)).astype(np.float32), rng.normal(0, 1, 4).astype(np.float32)
    func = relay.build_module.bind_params_by_name(relay.Function(relay.analysis.free_vars(out), out),
                                                  {"w": wv, "bias": bv})
    mod = relay.IRModule()
    mod["main"] = func
    fv = rng.normal(0, 1, (7, 5)).astype(np.float32)
    (got,), _ = _run(mod, None, {"feats": fv}, target="llvm")
    ref = ((wv.T.astype(np.float64) @ fv.T) @ adj.T).T + bv
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_benchmark_and_time_evaluator_time_the_generated_code():
    x = relay.var("x", shape=(16, 16))
    w = np.random.default_rng(8).normal(0, 1, (16, 16)).astype(np.float32)
    lib = relay.build(relay.Function([x], relay.nn.dense(x, relay.const(w))), "llvm")
    m = graph_executor.GraphModule(lib["default"](aot.device("llvm", 0)))
    xv = np.random.default_rng(9).normal(0, 1, (16, 16)).astype(np.float32)
    m.set_input("x", xv)
    r = m.benchmark(aot.cpu(0), repeat=2, number=3)
    assert len(r.results) == 2 and 0 < r.min <= r.mean <= r.max and "Execution time summary" in str(r)
    np.testing.assert_allclose(m.get_output(0).numpy(), xv @ w.T, rtol=1e-5, atol=1e-5)
    assert len(m.module.time_evaluator("run", aot.cpu(0), number=2, repeat=3)().results) == 3


def test_a_module_calling_its_own_functions_runs():
    kw = {"shape": (3,)}
    data, bias = relay.var("data", **kw), relay.var("bias", **kw)
    scale = relay.GlobalVar("scale_add")
    i0, i1, i2 = (relay.var(f"input{k}", **kw) for k in range(3))
    inner = relay.Function([data, bias], relay.add(relay.multiply(data, relay.const(2.0)), bias))
    body = relay.Call(scale, [i2, relay.Call(scale, [i0, i1])])
    mod = relay.IRModule({"main": relay.Function([i0, i1, i2], body), scale: inner})
    a, b, c = (np.arange(3, dtype=np.float32) + k for k in range(3))
    (out,), _ = _run(mod, None, {"input0": a, "input1": b, "input2": c})
    np.testing.assert_allclose(out, 2 * c + (2 * a + b))


def test_more_tvm_ops_match_numpy():
    """cast, rsqrt, comparisons and logic, where, take (clip/wrap), argmax, stack, split,
    strided_slice, tile, full/zeros_like, and nn's conv1d, conv2d_transpose, batch_matmul, matmul,
    upsampling, adaptive pools, instance_norm, layer_norm, l2_normalize, depth_to_space,
    space_to_depth: one module, every output against numpy."""
    rng = np.random.default_rng(11)
    xa = rng.normal(0, 1, (2, 4, 6)).astype(np.float32)
    xi = rng.normal(0, 1, (1, 8, 4, 4)).astype(np.float32)
    x = relay.var("x", shape=xa.shape)
    img = relay.var("img", shape=xi.shape)
    ind = relay.const(np.array([[0, 5], [-1, 9]], np.int32))
    outs, refs = [], []

    def case(expr, ref):
        outs.append(expr)
        refs.append(ref)

    case(relay.cast(relay.greater_equal(x, relay.const(0.0)), "int32"), (xa >= 0).astype(np.int32))
    case(relay.rsqrt(relay.abs(x) + relay.const(1.0)), 1 / np.sqrt(np.abs(xa) + 1))
    case(relay.cast(relay.logical_and(relay.less_equal(x, relay.const(0.5)), relay.not_equal(x, relay.const(0.0))),
                    "float32"), ((xa <= 0.5) & (xa != 0)).astype(np.float32))
    case(relay.where(relay.less(x, relay.const(0.0)), relay.negative(x), x), np.abs(xa))
    case(relay.take(x, ind, axis=2), np.take(xa, np.clip([[0, 5], [-1, 9]], 0, 5), axis=2))
    case(relay.take(x, ind, axis=2, mode="wrap"), np.take(xa, np.mod([[0, 5], [-1, 9]], 6), axis=2))
    case(relay.argmax(x, axis=2), np.argmax(xa, axis=2).astype(np.int32))
    case(relay.stack([x, relay.negative(x)], axis=1), np.stack([xa, -xa], axis=1))
    parts = relay.split(x, (1, 4), axis=2)
    case(relay.add(parts[2], parts[2]), 2 * xa[:, :, 4:])
    case(parts[1], xa[:, :, 1:4])
    case(relay.strided_slice(x, [0, 1], [2, 4], strides=[1, 2]), xa[0:2, 1:4:2])
    case(relay.tile(x, (2, 1, 1)), np.tile(xa, (2, 1, 1)))
    case(relay.add(relay.zeros_like(x), relay.full(relay.const(3.0), (2, 4, 6))), np.full((2, 4, 6), 3.0))
    w1 = rng.normal(0, 0.5, (5, 4, 3)).astype(np.float32)
    c1 = np.stack([sum(w1[o, c, k] * np.pad(xa, ((0, 0), (0, 0), (1, 1)))[:, c, k:k + 6]
                       for c in range(4) for k in range(3)) for o in range(5)], axis=1)
    case(relay.nn.conv1d(x, relay.const(w1), padding=1), c1)
    bm = rng.normal(0, 1, (2, 5, 6)).astype(np.float32)
    case(relay.nn.batch_matmul(x, relay.const(bm)), xa @ bm.transpose(0, 2, 1))
    case(relay.nn.matmul(relay.reshape(x, (8, 6)), relay.const(bm[0].T)), xa.reshape(8, 6) @ bm[0].T)
    wt = rng.normal(0, 0.5, (8, 3, 2, 2)).astype(np.float32)
    tconv = np.zeros((1, 3, 8, 8))
    for i in range(4):
        for j in range(4):
            tconv[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2] += np.einsum("nc,cokl->nokl", xi[:, :, i, j], wt)
    case(relay.nn.conv2d_transpose(img, relay.const(wt), strides=(2, 2), kernel_size=(2, 2), channels=3), tconv)
    case(relay.nn.upsampling(img, 2, 2), xi.repeat(2, axis=2).repeat(2, axis=3))
    case(relay.nn.adaptive_avg_pool2d(img, (2, 2)), xi.reshape(1, 8, 2, 2, 2, 2).mean(axis=(3, 5)))
    case(relay.nn.adaptive_max_pool2d(img), xi.max(axis=(2, 3), keepdims=True))
    g, be = rng.uniform(0.5, 1.5, 8).astype(np.float32), rng.normal(0, 1, 8).astype(np.float32)
    mu, var = xi.mean(axis=(2, 3), keepdims=True), xi.var(axis=(2, 3), keepdims=True)
    case(relay.nn.instance_norm(img, relay.const(g), relay.const(be)),
         (xi - mu) / np.sqrt(var + 1e-5) * g.reshape(1, 8, 1, 1) + be.reshape(1, 8, 1, 1))
    g6, b6 = rng.uniform(0.5, 1.5, 6).astype(np.float32), rng.normal(0, 1, 6).astype(np.float32)
    mu, var = xa.mean(axis=-1, keepdims=True), xa.var(axis=-1, keepdims=True)
    case(relay.nn.layer_norm(x, relay.const(g6), relay.const(b6)), (xa - mu) / np.sqrt(var + 1e-5) * g6 + b6)
    case(relay.nn.l2_normalize(x, 1e-12, axis=[2]), xa / np.sqrt((xa * xa).sum(axis=2, keepdims=True)))
    d2s = xi.reshape(1, 2, 2, 2, 4, 4).transpose(0, 3, 4, 1, 5, 2).reshape(1, 2, 8, 8)
    case(relay.nn.depth_to_space(img, 2), d2s)
    case(relay.nn.space_to_depth(relay.nn.depth_to_space(img, 2), 2), xi)
    body = relay.Tuple(outs)
    got, _ = _run(relay.Function([x, img], body), None, {"x": xa, "img": xi}, target="llvm")
    for k, (o, r) in enumerate(zip(got, refs)):
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-5, err_msg=f"output {k}")
        assert o.dtype == np.asarray(r).dtype or np.asarray(r).dtype == np.float64, k


def test_passes_keep_the_numbers():
    """FoldConstant, EliminateCommonSubexpr and FuseOps change the module, not what it computes."""
    rng = np.random.default_rng(12)
    c = relay.const(rng.normal(0, 1, (1, 4, 6, 6)).astype(np.float32))
    weight = relay.var("weight", shape=(4, 4, 3, 3))
    x = relay.var("x", shape=(1, 4, 8, 8))
    y = relay.add(relay.nn.conv2d(x, weight), relay.multiply(relay.add(c, c), relay.const(2.0)))
    mod = relay.IRModule.from_expr(relay.Function([x, weight], relay.add(relay.add(y, c), relay.nn.relu(y))))
    with aot.transform.PassContext(opt_level=3):
        fused = aot.transform.Sequential([relay.transform.FoldConstant(), relay.transform.EliminateCommonSubexpr(),
                                          relay.transform.FuseOps(fuse_opt_level=2)])(mod)
    feeds = {"x": rng.normal(0, 1, (1, 4, 8, 8)).astype(np.float32),
             "weight": rng.normal(0, 1, (4, 4, 3, 3)).astype(np.float32)}
    (a,), _ = _run(mod, None, feeds)
    (b,), _ = _run(fused, None, feeds)
    cv = np.asarray(c.data, np.float64)
    yv = conv2d_nchw(feeds["x"].astype(np.float64), feeds["weight"], [0, 0, 0, 0]) + 4 * cv
    np.testing.assert_allclose(a, yv + cv + np.maximum(yv, 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)


def test_resnet_workload_matches_numpy_and_survives_export_and_load(tmp_path):
    """relay.testing.resnet's 8-layer CIFAR-style network (batch norms with random statistics)
    against a numpy pre-activation ResNet; then the relay_quick_start deploy path: export_library,
    runtime.load_module, lib["default"](dev)."""
    mod, params = testing.resnet.get_workload(num_layers=8, batch_size=1, image_shape=(3, 28, 28), num_classes=10)
    rng = np.random.default_rng(13)
    p = {k: v.numpy() for k, v in params.items()}
    for k in p:
        n = p[k].shape
        if k.endswith("_gamma"):
            p[k] = rng.uniform(0.5, 1.5, n).astype(np.float32)
        elif k.endswith(("_beta", "_moving_mean")):
            p[k] = rng.normal(0, 0.2, n).astype(np.float32)
        elif k.endswith("_moving_var"):
            p[k] = rng.uniform(0.5, 1.5, n).astype(np.float32)
    lib = relay.build(mod, "llvm", params=p)
    x = rng.uniform(-1, 1, (1, 3, 28, 28)).astype(np.float32)

    def bn(a, name, scale=True):
        g = p[name + "_gamma"] if scale else np.ones_like(p[name + "_beta"])
        return batch_norm(a, g, p[name + "_beta"], p[name + "_moving_mean"], p[name + "_moving_var"], 2e-5)

    def conv(a, name, pad, stride=1):
        return conv2d_nchw(a, p[name + "_weight"].astype(np.float64), [pad] * 4, stride)

    a = conv(bn(x.astype(np.float64), "bn_data", scale=False), "conv0", 1)
    for stage, stride in ((1, 1), (2, 2), (3, 2)):
        u = f"stage{stage}_unit1"
        act = np.maximum(bn(a, u + "_bn1"), 0)
        y = conv(np.maximum(bn(conv(act, u + "_conv1", 1, stride), u + "_bn2"), 0), u + "_conv2", 1)
        a = y + conv(act, u + "_sc", 0, stride)
    a = np.maximum(bn(a, "bn1"), 0).mean(axis=(2, 3))
    logits = a @ p["fc1_weight"].T + p["fc1_bias"]
    ref = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    m = graph_executor.GraphModule(lib["default"](aot.cpu(0)))
    m.set_input("data", x)
    m.run()
    out = m.get_output(0, aot.nd.empty((1, 10))).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-6)
    path = str(tmp_path / "deploy_lib.tar")
    lib.export_library(path)
    loaded = graph_executor.GraphModule(aot.runtime.load_module(path)["default"](aot.cpu(0)))
    loaded.run(data=x)
    np.testing.assert_array_equal(loaded.get_output(0).numpy(), out)
