"""Graph passes: constant folding of exporter shape chains, identity removal, BN folding, DCE."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from conftest import check_model, init, make_model, vi

RNG = np.random.default_rng(11)


def test_shape_gather_concat_reshape_chain_folds():
    # the flatten pattern PyTorch exporters emit: reshape(x, [shape(x)[0], -1])
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Shape", ["r"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
             helper.make_node("Unsqueeze", ["b", "ax0"], ["bu"]),
             helper.make_node("Concat", ["bu", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["r", "shape"], ["f"]),
             helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
             helper.make_node("Range", ["start", "limit", "delta"], ["rng"]),
             helper.make_node("ConstantOfShape", ["shape2"], ["ones"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
             helper.make_node("Mul", ["f", "ones"], ["m"]),
             helper.make_node("Add", ["m", "rng"], ["a"]),
             helper.make_node("Mul", ["a", "bf"], ["y"])]
    inits = [init("zero", np.array(0, np.int64)), init("ax0", np.array([0], np.int64)),
             init("minus1", np.array([-1], np.int64)), init("shape2", np.array([2, 60], np.int64)),
             init("start", np.float32(0)), init("limit", np.float32(60)), init("delta", np.float32(1))]
    m = make_model(nodes, [vi("x", [2, 3, 4, 5])], [vi("y", None)], inits)
    res, _ = check_model(m, {"x": RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)})
    ops = sorted(n.op for n in res.graph.nodes)
    assert ops == ["Add", "Mul", "Mul", "Relu", "Reshape"], ops     # Shape/Gather/Concat/Cast/Range folded
    assert len(res.plan.calls) == 2                                  # relu | reshape alias | mul+add+mul


def test_identity_dropout_removed_and_dead_code_eliminated():
    nodes = [helper.make_node("Identity", ["x"], ["i"]),
             helper.make_node("Dropout", ["i"], ["d", "mask"]),
             helper.make_node("Exp", ["d"], ["unused"]),
             helper.make_node("Tanh", ["d"], ["y"])]
    m = make_model(nodes, [vi("x", [3, 4])], [vi("y", None)], opset=11)
    res, _ = check_model(m, {"x": RNG.standard_normal((3, 4)).astype(np.float32)})
    assert [n.op for n in res.graph.nodes] == ["Tanh"]


def test_identity_output_keeps_its_name():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Identity", ["r"], ["out_name"])]
    m = make_model(nodes, [vi("x", [5])], [vi("out_name", None)])
    res, out = check_model(m, {"x": RNG.standard_normal(5).astype(np.float32)})
    assert list(out) == ["out_name"]


def test_passthrough_and_constant_outputs_are_copied():
    nodes = [helper.make_node("Identity", ["x"], ["same"]), helper.make_node("Identity", ["c"], ["const_out"]),
             helper.make_node("Relu", ["x"], ["y"])]
    m = make_model(nodes, [vi("x", [2, 3])], [vi("same", None), vi("const_out", None), vi("y", None)],
                   [init("c", RNG.standard_normal((2, 2)).astype(np.float32))])
    res, _ = check_model(m, {"x": RNG.standard_normal((2, 3)).astype(np.float32)})
    assert sum(n.op == "Copy" for n in res.graph.nodes) == 2


def test_standalone_batchnorm_becomes_fused_epilogue():
    c = 4
    inits = [init("s", RNG.uniform(0.5, 1.5, c).astype(np.float32)), init("b", RNG.standard_normal(c).astype(np.float32)),
             init("m", RNG.standard_normal(c).astype(np.float32)), init("v", RNG.uniform(0.5, 2, c).astype(np.float32))]
    nodes = [helper.make_node("Concat", ["x1", "x2"], ["cat"], axis=1),
             helper.make_node("BatchNormalization", ["cat", "s", "b", "m", "v"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["y"])]
    m = make_model(nodes, [vi("x1", [1, 2, 3, 3]), vi("x2", [1, 2, 3, 3])], [vi("y", None)], inits)
    res, _ = check_model(m, {"x1": RNG.standard_normal((1, 2, 3, 3)).astype(np.float32),
                             "x2": RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)})
    assert "BatchNormalization" not in [n.op for n in res.graph.nodes]
    assert len(res.plan.calls) == 1     # concat + scale + shift + relu in one kernel


def test_splat_weights_stay_compact():
    # ConstantOfShape weights (as in the ONNX light models) cost one element, not a dense array
    nodes = [helper.make_node("ConstantOfShape", ["wshape"], ["w"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.01])),
             helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])]
    m = make_model(nodes, [vi("x", [1, 64, 8, 8])], [vi("y", None)], [init("wshape", np.array([128, 64, 3, 3], np.int64))])
    res, _ = check_model(m, {"x": RNG.standard_normal((1, 64, 8, 8)).astype(np.float32)}, rtol=1e-4, atol=1e-4)
    assert res.plan.constants_size == 0     # inlined as a literal


def test_numpy_references_match_onnxruntime():
    """Constant folding trusts the registry's numpy references: check a few against onnxruntime."""
    from aot.ir.graph import Node, TensorType, Value
    from aot.ops import get_op
    from conftest import ort_run
    cases = [
        ("Conv", [RNG.standard_normal((1, 4, 7, 7)).astype(np.float32), RNG.standard_normal((6, 2, 3, 3)).astype(np.float32)],
         {"kernel_shape": [3, 3], "strides": [2, 1], "pads": [1, 0, 1, 2], "dilations": [1, 1], "group": 2}),
        ("AveragePool", [RNG.standard_normal((1, 2, 7, 6)).astype(np.float32)],
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "dilations": [1, 1], "ceil_mode": 1, "count_include_pad": 1}),
        ("Softmax", [RNG.standard_normal((2, 3, 4)).astype(np.float32)], {"axes": [1]}),
        ("LRN", [RNG.standard_normal((1, 5, 2, 2)).astype(np.float32)], {"size": 3, "alpha": 1e-2, "beta": 0.75, "bias": 1.0}),
    ]
    onnx_attrs = {"Conv": {"strides": [2, 1], "pads": [1, 0, 1, 2], "group": 2},
                  "AveragePool": {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1},
                  "Softmax": {"axis": 1}, "LRN": {"size": 3, "alpha": 1e-2, "beta": 0.75, "bias": 1.0}}
    for op, xs, attrs in cases:
        ins = [Value(f"i{k}", TensorType(x.shape, "float32")) for k, x in enumerate(xs)]
        node = Node(op, "n", ins, [Value("o", TensorType((), "float32"))], attrs)
        node.outputs[0].type = get_op(op).infer(node)[0]
        got = get_op(op).reference(node, *xs)[0]
        names = [f"i{k}" for k in range(len(xs))]
        m = make_model([helper.make_node(op, names, ["o"], **onnx_attrs[op])], [vi(n, x.shape) for n, x in zip(names, xs)],
                       [helper.make_empty_tensor_value_info("o")])
        ref = ort_run(m, dict(zip(names, xs)))["o"]
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5, err_msg=op)


def test_passes_never_change_their_input_graph():
    """Every pass works on its own copy: the graph handed in prints the same, and its values
    keep their producers and constants, after the pass ran."""
    from aot.compiler import run_passes
    from aot.frontend.onnx_import import import_onnx
    from aot.ir.graph import print_graph
    from aot.passes.fold_constants import fold_constants
    from aot.passes.simplify import (eliminate_dead_code, fold_batchnorm, materialize_outputs,
                                     remove_identities)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])
    w = numpy_helper.from_array(np.ones((2, 2, 1, 1), np.float32), "w")
    bn = [numpy_helper.from_array(np.full(2, v, np.float32), n) for n, v in
          (("s", 2.0), ("b", 0.5), ("m", 0.1), ("v", 1.0))]
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    nodes = [helper.make_node("Identity", ["x"], ["i"]),
             helper.make_node("Conv", ["i", "w"], ["c"]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"]),
             helper.make_node("Shape", ["n"], ["sh"]),
             helper.make_node("Relu", ["n"], ["dead"]),
             helper.make_node("Reshape", ["n", "shape"], ["y"])]
    g = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                            helper.make_tensor_value_info("sh", TensorProto.INT64, None)],
                          [w, shape] + bn)
    graph = import_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString(), {})

    def snapshot(gr):
        vals = [v for n in gr.nodes for v in n.inputs + n.outputs if v is not None] + gr.outputs
        return (print_graph(gr), [(id(v), id(v.producer), id(v.const) if v.const is not None else None)
                                  for v in vals], [(id(n), list(map(id, n.inputs)), dict(n.attrs)) for n in gr.nodes])
    for p in (remove_identities, fold_batchnorm, fold_constants, eliminate_dead_code, materialize_outputs):
        before = snapshot(graph)
        out, _ = p(graph)
        assert snapshot(graph) == before, p.__name__
        graph = out
    assert len(run_passes(graph, lambda m: None).nodes) == len(graph.nodes)
