"""relay with TVM's names, without a C compiler: dataflow patterns with relay op names over graphs
from relay and ONNX, PassContext / Executor / Runtime, the frontends, create_workload's
initialisation, InferType, the factory module and TVM 0.6's spellings (each warns once)."""
import json
import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import aot
from aot import relay
from aot.errors import AotError
from aot.frontend.onnx_import import import_onnx
from aot.relay import testing
from aot.relay.backend import Executor, Runtime
from aot.relay.dataflow_pattern import PatternError, find, is_constant, is_op, wildcard
from aot.relay.to_graph import to_graph


def _onnx_conv(bias=False, group=1, strides=(1, 1), cin=4):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(0, 1, (4, cin // group, 3, 3)).astype(np.float32), "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(np.arange(4, dtype=np.float32), "b"))
        ins.append("b")
    oh = 8 // strides[0]
    g = helper.make_graph([helper.make_node("Conv", ins, ["c"], pads=[1, 1, 1, 1], group=group, strides=list(strides)),
                           helper.make_node("Relu", ["c"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, oh, oh])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def _relay_conv(groups=1, strides=(1, 1)):
    x, w = relay.var("x", shape=(1, 4, 8, 8)), relay.var("weight")
    body = relay.nn.relu(relay.nn.conv2d(x, w, kernel_size=(3, 3), channels=4, padding=(1, 1), groups=groups,
                                         strides=strides))
    return relay.Function([x, w], body)


UMA_CONV = {"strides": [1, 1], "groups": 1}


# -- patterns with relay names ------------------------------------------------------------------------
def test_relay_conv2d_pattern_matches_relay_and_onnx_convs():
    pat = is_op("nn.conv2d")(wildcard(), wildcard()).has_attr(UMA_CONV)
    g, _ = to_graph(_relay_conv())
    (m,) = find(pat, g)
    assert [n.op for n in m.nodes] == ["Conv"] and [v.name for v in m.inputs] == ["x", "weight"]
    (m,) = find(pat, import_onnx(_onnx_conv()))
    assert [v.name for v in m.inputs] == ["x", "w"]
    # the attributes are relay's, checked: other strides or groups do not match
    assert not find(pat, to_graph(_relay_conv(groups=2))[0])
    assert not find(pat, import_onnx(_onnx_conv(group=2)))
    assert not find(pat, import_onnx(_onnx_conv(strides=(2, 2))))
    # the graph op's own name still works (an alias), with the node's attribute names
    assert find(is_op("Conv")(wildcard(), wildcard()).has_attr({"group": 1}), import_onnx(_onnx_conv()))


def test_a_biased_conv_is_bias_add_of_conv2d():
    g = import_onnx(_onnx_conv(bias=True))
    assert not find(is_op("nn.conv2d")(wildcard(), wildcard()), g)     # the bias would be left out
    (m,) = find(is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), is_constant()).has_attr({"channels": 4}),
                                     is_constant()), g)
    assert [n.op for n in m.nodes] == ["Conv"] and [v.name for v in m.inputs] == ["x", "w", "b"]
    assert not find(is_op("nn.bias_add")(wildcard(), wildcard()), g)   # the conv part is no value of its own


def test_relay_dense_and_bias_add_look_through_their_lowering():
    d, w, b = relay.var("d", shape=(2, 8)), relay.var("w"), relay.var("b")
    g, _ = to_graph(relay.Function([d, w, b], relay.nn.bias_add(relay.nn.dense(d, w, units=5), b)))
    (m,) = find(is_op("nn.bias_add")(is_op("nn.dense")(wildcard(), wildcard()).has_attr({"units": 5}), wildcard()), g)
    assert [v.name for v in m.inputs] == ["d", "w", "b"]          # relay's arguments, not the lowering's values
    assert sorted(n.op for n in m.nodes) == ["Add", "MatMul", "Reshape", "Transpose"]
    gm = helper.make_graph([helper.make_node("Gemm", ["a", "wt"], ["y"], transB=1)], "g",
                           [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 8])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])],
                           [numpy_helper.from_array(np.ones((5, 8), np.float32), "wt")])
    (m,) = find(is_op("nn.dense")(wildcard(), wildcard()).has_attr({"units": 5}),
                import_onnx(helper.make_model(gm, opset_imports=[helper.make_opsetid("", 18)])))
    assert [v.name for v in m.inputs] == ["a", "wt"]


def test_relay_names_are_checked():
    with pytest.raises(PatternError, match=r"is_op\('nn.conv2dd'\).*did you mean 'nn.conv2d'"):
        is_op("nn.conv2dd")
    with pytest.raises(PatternError, match="op nn.conv2d has no attribute 'group'.*groups"):
        find(is_op("nn.conv2d").has_attr({"group": 1}), import_onnx(_onnx_conv()))


def test_every_relay_op_that_is_one_graph_node_is_in_the_table():
    """The table and relay's own lowering agree: building op X and matching is_op(X) finds it."""
    from aot.ir.relay_names import RELAY_OPS
    a, b = relay.var("a", shape=(2, 3, 4, 4)), relay.var("b", shape=(2, 3, 4, 4))
    cases = {"add": relay.add(a, b), "multiply": relay.multiply(a, b), "maximum": relay.maximum(a, b),
             "exp": relay.exp(a), "sigmoid": relay.sigmoid(a), "nn.relu": relay.nn.relu(a),
             "nn.softmax": relay.nn.softmax(a), "clip": relay.clip(a, 0.0, 1.0),
             "reshape": relay.reshape(a, (2, 48)), "transpose": relay.transpose(a, (0, 2, 3, 1)),
             "mean": relay.mean(a, axis=(2, 3)), "nn.max_pool2d": relay.nn.max_pool2d(a, (2, 2), (2, 2)),
             "nn.avg_pool2d": relay.nn.avg_pool2d(a, (2, 2)), "nn.global_avg_pool2d": relay.nn.global_avg_pool2d(a),
             "nn.batch_flatten": relay.nn.batch_flatten(a), "concatenate": relay.concatenate([a, b], 1),
             "nn.leaky_relu": relay.nn.leaky_relu(a, 0.2)}
    for name, expr in cases.items():
        g, _ = to_graph(relay.Function(relay.analysis.free_vars(expr), expr))
        assert g.outputs[0].producer.op in RELAY_OPS[name].ops, name
        assert find(is_op(name), g), name
    g, _ = to_graph(relay.Function([a], relay.clip(a, 0.0, 6.0)))
    assert find(is_op("clip")(wildcard()).has_attr({"a_min": 0.0, "a_max": 6.0}), g)
    g, _ = to_graph(relay.Function([a], relay.nn.max_pool2d(a, (2, 2), (2, 2))))
    assert find(is_op("nn.max_pool2d").has_attr({"pool_size": [2, 2], "strides": [2, 2], "layout": "NCHW"}), g)


# -- PassContext, Executor, Runtime --------------------------------------------------------------------
def test_pass_context_is_a_nested_context_manager_and_warns_once_about_keys_it_does_not_have():
    outer = aot.transform.PassContext.current()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ctx = aot.transform.PassContext(opt_level=3, config={"tir.disable_vectorize": True, "relay.foo": 1,
                                                               "tir.bar": 2})
    assert len(w) == 1 and "'relay.foo', 'tir.bar' have no effect" in str(w[0].message)
    with ctx as c:
        assert c is ctx and aot.transform.PassContext.current() is ctx
        with aot.transform.PassContext(opt_level=1) as inner:
            assert aot.transform.PassContext.current() is inner
        assert aot.transform.PassContext.current().opt_level == 3
    assert aot.transform.PassContext.current() is outer
    with pytest.raises(AotError, match="'tir.disable_vectorize' takes a bool"):
        aot.transform.PassContext(config={"tir.disable_vectorize": "yes"})


def test_executor_and_runtime_take_tvms_attributes():
    ex = Executor("aot", {"interface-api": "c", "unpacked-api": True, "workspace-byte-alignment": 8})
    assert ex.name == "aot" and ex["interface-api"] == "c" and Runtime("crt", {"system-lib": True})["system-lib"]
    with pytest.raises(AotError, match="executor 'aot' has no attribute 'interface_api'"):
        Executor("aot", {"interface_api": "c"})
    with pytest.raises(AotError, match="executor 'vm' is not available"):
        Executor("vm")
    with pytest.raises(AotError, match="interface-api 'c' needs unpacked-api"):
        Executor("aot", {"interface-api": "c", "unpacked-api": False})
    with pytest.raises(AotError, match="runtime 'crt': attribute 'system-lib' takes a bool"):
        Runtime("crt", {"system-lib": "yes"})


def _metadata(lib):
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(lib.tar)) as t:
        return json.loads(t.extractfile("./metadata.json").read())["modules"]["default"]["aot"]


def test_build_honours_executor_attributes_and_pass_context_config():
    f = _relay_conv()
    w = np.ones((4, 4, 3, 3), np.float32)
    lib = relay.build(f, "c", params={"weight": w}, executor=Executor("aot", {"interface-api": "packed"}))
    assert _metadata(lib)["interface_api"] == "packed" and lib.executor.name == "aot"
    with aot.transform.PassContext(opt_level=3, config={"tir.usmp.use_workspace_io": True}):
        lib = relay.build(f, target="c", params={"weight": w}, runtime=Runtime("crt", {"system-lib": True}),
                          executor=Executor("aot", {"interface-api": "c", "unpacked-api": True}))
    md = _metadata(lib)
    assert md["use_workspace_io"] is True and md["interface_api"] == "c" and lib.runtime.name == "crt"


# -- frontends -----------------------------------------------------------------------------------------
def test_from_onnx_builds_the_mlf_aot_compile_builds():
    model = _onnx_conv(bias=True)
    mod, params = relay.frontend.from_onnx(model, shape={"x": (1, 4, 8, 8)})
    assert params == {} and [(p.name_hint, p.type_annotation.shape) for p in mod["main"].params] == \
        [("x", (1, 4, 8, 8))]
    assert relay.build(mod, "c").tar == aot.compile(model).tar
    with pytest.raises(AotError, match="from_onnx: shape given for 'nope'"):
        relay.frontend.from_onnx(model, shape={"nope": (1,)})
    with pytest.raises(AotError, match="from_onnx: input 'x' has dtype float32 in the model, not int8"):
        relay.frontend.from_onnx(model, dtype={"x": "int8"})


def test_from_tflite_takes_the_tflite_package_model_and_bytes():
    from tflite.Model import Model
    from tflite_build import ModelBuilder
    mb = ModelBuilder()
    x = mb.tensor("input_1", [1, 4, 4, 2], "float32")
    y = mb.tensor("y", [1, 4, 4, 2], "float32")
    mb.op("RELU", [x], [y])
    data = mb.finish(inputs=[x], outputs=[y])
    mod, params = relay.frontend.from_tflite(Model.GetRootAsModel(data, 0), shape_dict={"input_1": (1, 4, 4, 2)},
                                            dtype_dict={"input_1": "float32"})
    assert params == {} and mod["main"].params[0].name_hint == "input_1"
    assert relay.build(mod, "c").tar == aot.compile(data).tar
    assert relay.frontend.from_tflite(data)[0]["main"].params[0].type_annotation.dtype == "float32"
    with pytest.raises(AotError, match=r"input 'input_1' has shape \[1, 4, 4, 2\] in the model, not \[1, 8, 8, 2\]"):
        relay.frontend.from_tflite(data, shape_dict={"input_1": (1, 8, 8, 2)})
    with pytest.raises(AotError, match="not an input of the model"):
        relay.frontend.from_tflite(data, dtype_dict={"x": "int8"})


# -- create_workload, InferType, printing ---------------------------------------------------------------
def _tutorial_net():
    data = relay.var("data", relay.TensorType((1, 3, 8, 8), "float32"))
    net = relay.nn.conv2d(data=data, weight=relay.var("weight"), kernel_size=(3, 3), channels=4, padding=(1, 1))
    net = relay.nn.batch_norm(net, *[relay.var(n) for n in ("bn_gamma", "bn_beta", "bn_mean", "bn_var")])[0]
    net = relay.nn.relu(net)
    return relay.Function(relay.analysis.free_vars(net), net)


def test_create_workload_initialises_as_tvm_and_seeds_numpy():
    mod, params = testing.create_workload(_tutorial_net())
    drawn = np.random.uniform(size=4)
    np.random.seed(0)
    s = np.sqrt(3 / ((3 * 9 + 4 * 9) / 2))          # Xavier "avg", magnitude 3
    np.testing.assert_array_equal(params["weight"].numpy(), np.random.uniform(-s, s, (4, 3, 3, 3)).astype("float32"))
    np.testing.assert_array_equal(drawn, np.random.uniform(size=4))     # the draws after it: the same
    assert [params[k].numpy().tolist() for k in ("bn_gamma", "bn_beta", "bn_mean", "bn_var")] == \
        [[1.0] * 4, [0.0] * 4, [0.0] * 4, [1.0] * 4]
    _, p = testing.create_workload(_tutorial_net(), initializer=testing.init.Constant())
    np.testing.assert_allclose(p["weight"].numpy(), 1 / 108)
    x = relay.var("data", shape=(1, 4))
    with pytest.raises(AotError, match="no initialisation for parameter 'mystery'"):
        testing.create_workload(relay.Function([x, relay.var("mystery", shape=(4,))],
                                               relay.add(x, relay.var("mystery", shape=(4,)))))


def test_infer_type_types_a_copy_and_the_printer_shows_it():
    mod = relay.IRModule.from_expr(_tutorial_net())
    typed = relay.transform.InferType()(mod)
    assert mod["main"].params[1].type_annotation is None                 # the input is unchanged
    assert [tuple(p.checked_type.shape) for p in typed["main"].params] == \
        [(1, 3, 8, 8), (4, 3, 3, 3), (4,), (4,), (4,), (4,)]
    text = str(typed)
    assert text.startswith("def @main(%data: Tensor[(1, 3, 8, 8), float32], %weight: Tensor[(4, 3, 3, 3), float32]")
    assert "-> Tensor[(1, 4, 8, 8), float32] {" in text and "%2 = %1.0;" in text and text.rstrip().endswith("}")


def test_bind_params_by_name_makes_constants():
    f = _relay_conv()
    bound = relay.build_module.bind_params_by_name(f, {"weight": np.ones((4, 4, 3, 3), np.float32)})
    assert [p.name_hint for p in bound.params] == ["x"] and [p.name_hint for p in f.params] == ["x", "weight"]
    assert [p.name_hint for p in relay.build_module.bind_params_by_name(f, {"nope": np.ones(1)}).params] == \
        ["x", "weight"]                              # as TVM's: a name that is no parameter binds nothing


# -- the factory module and TVM 0.6's spellings ---------------------------------------------------------
def _deprecations(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(x.message) for x in w if issubclass(x.category, DeprecationWarning)]


def test_the_factory_unpacks_into_tvm_06s_triple_and_warns_once():
    from aot import deprecation
    deprecation._warned.discard("relay.build tuple")
    f, params = testing.create_workload(_tutorial_net())
    lib = relay.build_module.build(f, "c", params=params)
    (graph, lib2, params2), msgs = _deprecations(lambda: tuple(lib))
    assert len(msgs) == 1 and "lib = relay.build(...)" in msgs[0]
    assert _deprecations(lambda: tuple(lib))[1] == []                      # once
    assert lib2 is lib and sorted(params2) == sorted(params)
    g = json.loads(graph)
    assert g == json.loads(lib.get_graph_json()) and g["nodes"][0] == {"op": "null", "name": "data", "inputs": []}
    assert [n["op"] for n in g["nodes"]].count("tvm_op") == len(lib.result.plan.calls)
    assert g["attrs"]["shape"][1][g["node_row_ptr"][g["heads"][0][0]]] == [1, 4, 8, 8]


def test_old_spellings_work_and_each_warns_once_naming_todays():
    from aot import deprecation
    for k in ("tvm.context", "tvm.ndarray", "tvm.create_schedule", "tvm.placeholder", "tvm.compute",
              "NDArray.asnumpy", "relay.ir_pass.free_vars", "relay.ir_pass.infer_type", "contrib.graph_runtime"):
        deprecation._warned.discard(k)
    dev, msgs = _deprecations(lambda: aot.context("llvm", 0))
    assert dev == aot.cpu(0) and msgs == ["tvm.context(dev, 0) is TVM 0.6's spelling: use tvm.device(dev, 0)"]
    assert _deprecations(lambda: aot.context("cpu", 0))[1] == []
    a, msgs = _deprecations(lambda: aot.ndarray.array(np.ones(3)))
    assert msgs == ["tvm.ndarray is TVM 0.6's spelling: use tvm.nd"]
    assert _deprecations(a.asnumpy)[1] == ["NDArray.asnumpy() is TVM 0.6's spelling: use .numpy()"]
    A, msgs = _deprecations(lambda: aot.placeholder((4,), name="A"))
    assert msgs == ["tvm.placeholder is TVM 0.6's spelling: use tvm.te.placeholder"]
    B, msgs = _deprecations(lambda: aot.compute((4,), lambda i: A[i] * 2, name="B"))
    assert "use tvm.te.compute" in msgs[0]
    assert "use tvm.te.create_schedule" in _deprecations(lambda: aot.create_schedule(B.op))[1][0]
    net = _tutorial_net()
    fv, msgs = _deprecations(lambda: relay.ir_pass.free_vars(net.body))
    assert [v.name_hint for v in fv] == ["data", "weight", "bn_gamma", "bn_beta", "bn_mean", "bn_var"]
    assert msgs == ["relay.ir_pass.free_vars is TVM 0.6's spelling: use relay.analysis.free_vars"]
    typed, msgs = _deprecations(lambda: relay.ir_pass.infer_type(net))
    assert typed.params[1].checked_type.shape == (4, 3, 3, 3) and "relay.transform.InferType" in msgs[0]
    from aot.contrib import graph_runtime
    f, params = testing.create_workload(net)
    lib = relay.build(f, "c", params=params)
    m, msgs = _deprecations(lambda: graph_runtime.create(lib.get_graph_json(), lib, aot.cpu(0)))
    assert msgs == ["tvm.contrib.graph_runtime is TVM 0.6's spelling: use tvm.contrib.graph_executor"]
    assert m.get_num_outputs() == 1 and m.get_input_index("data") == 0
    m.set_input(**lib.get_params())                  # the bound parameters, as built: accepted
    with pytest.raises(AotError, match="'weight' is a parameter bound at relay.build"):
        m.set_input(weight=np.zeros((4, 3, 3, 3), np.float32))
    with pytest.raises(AotError, match="not the one this lib was built with"):
        graph_runtime.create(json.dumps({"nodes": []}), lib, aot.cpu(0))


# -- modules of several functions, and drawing them ------------------------------------------------------
def _two_function_module(typed=False):
    kw = {"shape": (2,)} if typed else {}
    data, bias = relay.var("data", **kw), relay.var("bias", **kw)
    add_gvar = relay.GlobalVar("AddFunc")
    i0, i1, i2 = (relay.var(f"input{k}", **kw) for k in range(3))
    main = relay.Function([i0, i1, i2], relay.Call(add_gvar, [i2, relay.Call(add_gvar, [i0, i1])]))
    return relay.IRModule({relay.GlobalVar("main"): main, add_gvar: relay.Function([data, bias],
                                                                                    relay.add(data, bias))})


def test_relay_viz_draws_each_function_as_a_tree(capsys):
    from aot.contrib import relay_viz
    relay_viz.RelayVisualizer(_two_function_module()).render()
    assert capsys.readouterr().out.splitlines() == [
        "@main([Var(input0), Var(input1), Var(input2)])",
        "`--Call ",
        "   |--GlobalVar AddFunc",
        "   |--Var(Input) name_hint: input2",
        "   `--Call ",
        "      |--GlobalVar AddFunc",
        "      |--Var(Input) name_hint: input0",
        "      `--Var(Input) name_hint: input1",
        "@AddFunc([Var(data), Var(bias)])",
        "`--Call ",
        "   |--add ",
        "   |--Var(Input) name_hint: data",
        "   `--Var(Input) name_hint: bias"]


def test_calls_between_functions_print_and_type():
    typed = relay.transform.InferType()(_two_function_module(typed=True))
    text = str(typed)
    assert "%0 = @AddFunc(%input0, %input1);" in text and "  @AddFunc(%input2, %0)" in text
    assert typed["main"].ret_type.shape == (2,) and [gv.name_hint for gv in typed.get_global_vars()] == \
        ["main", "AddFunc"]
    order = []
    relay.analysis.post_order_visit(typed["main"], lambda e: order.append(e if isinstance(e, str) else
                                                                          type(e).__name__))
    assert order == ["Var", "Var", "Var", "GlobalVar", "Call", "Call", "Function"]


def test_pass_infrastructure_sequential_fold_constant_and_cse():
    x = relay.var("x", shape=(2, 2))
    c = relay.add(relay.const(np.ones((2, 2), np.float32)), relay.const(np.full((2, 2), 2.0, np.float32)))
    mod = relay.IRModule.from_expr(relay.Function([x], relay.add(relay.multiply(x, c), relay.multiply(x, c))))
    seq = aot.transform.Sequential([relay.transform.FoldConstant(), relay.transform.EliminateCommonSubexpr()])
    with aot.transform.PassContext(opt_level=3):
        out = seq(mod)
    body = out["main"].body
    assert body.op == "add" and body.args[0] is body.args[1]                    # one multiply left
    np.testing.assert_array_equal(body.args[0].args[1].data, np.full((2, 2), 3.0))    # 1 + 2, folded
    assert str(mod).count("multiply") == 2                                      # the input is unchanged
    with aot.transform.PassContext(opt_level=2):                                # CSE is level 3: skipped
        assert str(seq(mod)).count("multiply") == 2
    with aot.transform.PassContext(opt_level=3, disabled_pass=["FoldConstant"]):
        assert "add(meta" in str(seq(mod))

    @relay.transform.function_pass(opt_level=1)
    def negate(func, mod, ctx):
        return relay.Function(func.params, relay.negative(func.body))
    assert negate.info.name == "negate" and str(negate(mod)).rstrip().endswith("negative(%3)\n}".rstrip())

    @aot.transform.module_pass(opt_level=1, name="Keep")
    class Keep:
        def __init__(self, tag):
            self.tag = tag

        def transform_module(self, mod, ctx):
            return mod
    k = Keep("t")
    assert k(mod) is mod and k.tag == "t" and k.info.name == "Keep"


def _diamond():
    c = relay.const(np.ones((1, 4, 6, 6), np.float32))
    weight = relay.var("weight", shape=(4, 4, 3, 3))
    x = relay.var("x", relay.TensorType((1, 4, 8, 8), "float32"))
    y = relay.add(relay.nn.conv2d(x, weight), relay.multiply(relay.add(c, c), relay.const(2, "float32")))
    return relay.IRModule.from_expr(relay.Function([x, weight], relay.add(relay.add(y, c), relay.nn.relu(y))))


def test_fuse_ops_groups_as_tvm_and_prints_primitive_functions():
    mod = _diamond()
    assert str(mod).splitlines()[1] == "  %0 = nn.conv2d(%x, %weight);"       # defaults left out, as TVM prints
    each = relay.transform.FuseOps(fuse_opt_level=0)(mod)
    assert str(each).count("Primitive=1") == 7                                 # every op in its own function
    with aot.transform.PassContext(opt_level=3):
        fused = aot.transform.Sequential([relay.transform.FoldConstant(), relay.transform.FuseOps()])(mod)
    text = str(fused)
    # conv + add + the diamond of add / relu / add: one function; the constant sum folded beforehand
    assert text.count("Primitive=1") == 1 and "nn.conv2d(%p0, %p1)" in text and "nn.relu(" in text
    assert text.rstrip().endswith("  %4(%x, %weight, meta[relay.Constant][0], meta[relay.Constant][1])\n}")
    body = fused["main"].body
    assert body.op.attrs == {"Primitive": 1} and len(body.args) == 4


def test_resnet_workload_has_tvms_layers_names_and_types():
    mod, params = testing.resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 224, 224))
    main = mod["main"]
    assert main.params[0].name_hint == "data" and tuple(main.params[0].checked_type.shape) == (1, 3, 224, 224)
    assert tuple(main.ret_type.shape) == (1, 1000)
    shapes = {k: v.shape for k, v in params.items()}
    assert shapes["conv0_weight"] == (64, 3, 7, 7) and shapes["fc1_weight"] == (1000, 512)
    assert shapes["stage4_unit1_sc_weight"] == (512, 256, 1, 1) and "stage1_unit1_sc_weight" in shapes
    # conv0 64*3*7*7; per stage the 3x3 convs of two units and the 1x1 shortcut of the first; fc 512*1000
    convs = 64 * 3 * 49 + sum(c * ci * 9 + 3 * c * c * 9 + c * ci for ci, c in ((64, 64), (64, 128), (128, 256),
                                                                               (256, 512)))
    assert sum(int(np.prod(s)) for k, s in shapes.items() if k.endswith("_weight")) == convs + 512 * 1000
    assert np.all(params["bn0_moving_var"].numpy() == 1) and np.all(params["fc1_bias"].numpy() == 0)
    _, small = testing.resnet.get_workload(num_layers=20, image_shape=(3, 28, 28), num_classes=10)
    assert small["conv0_weight"].shape == (16, 3, 3, 3) and small["fc1_weight"].shape == (10, 64)
    with pytest.raises(AotError, match="num_layers 19 is not one of"):
        testing.resnet.get_workload(num_layers=19)


def test_names_relay_does_not_have_are_refused_by_name():
    with pytest.raises(AotError, match=r"relay\.nn\.conv3d is not supported"):
        relay.nn.conv3d
    assert not hasattr(relay, "ScopeBuilder") and getattr(relay.nn, "nope", None) is None
    with pytest.raises(AotError, match="dimension \\? is not a constant"):
        relay.var("x", shape=(relay.Any(), 3))
    with pytest.raises(AotError, match="from_pytorch is not available.*torch.onnx.export"):
        relay.frontend.from_pytorch(None, [])
