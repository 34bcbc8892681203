"""A user's te compute registered as a custom ONNX op (aot.register_op): a model using it imports,
compiles and runs like any other, checked against onnxruntime for the standard ops around it and
against numpy for the custom op (onnxruntime does not know the op, so the reference is numpy)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import aot
from aot import te
from aot.errors import AotError


@pytest.fixture(autouse=True)
def _registered():
    def compute(x, alpha=1.0):
        return te.compute(x.shape, lambda *i: x(*i) * float(alpha) + 1.0, name="scale_add")

    def rowsum(x):
        k = te.reduce_axis((0, x.shape[-1]), "k")
        return te.compute(x.shape[:-1], lambda *i: te.sum(x[i + (k,)], axis=k), name="rowsum")
    aot.register_op("com.example", "ScaleAdd", compute, reference=lambda x, alpha=1.0: x * np.float32(alpha) + 1)
    aot.register_op("com.example", "RowSum", rowsum)
    yield
    from aot.ops.registry import REGISTRY
    for key in [k for k in REGISTRY if k.startswith("com.example::")]:
        del REGISTRY[key]           # other tests see the registry as the compiler ships it


def _model(nodes, out_shape):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.example", 1)])


def test_custom_ops_import_compile_and_run():
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("ScaleAdd", ["r"], ["s"], domain="com.example", alpha=0.5),
             helper.make_node("RowSum", ["s"], ["t"], domain="com.example"),
             helper.make_node("Sigmoid", ["t"], ["y"])]
    res = aot.compile(_model(nodes, [2, 3]).SerializeToString())
    x = np.random.default_rng(0).normal(0, 1, (2, 3, 8)).astype(np.float32)
    out = aot.run(res, {"x": x}, sanitize=True)["y"]
    ref = 1 / (1 + np.exp(-(np.maximum(x, 0) * 0.5 + 1).sum(axis=-1)))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_a_custom_op_with_constant_inputs_folds_through_its_reference():
    c = helper.make_tensor("c", TensorProto.FLOAT, [2, 3, 8], np.full(48, 2.0, np.float32))
    nodes = [helper.make_node("ScaleAdd", ["c"], ["s"], domain="com.example", alpha=3.0),
             helper.make_node("Add", ["x", "s"], ["y"])]
    m = _model(nodes, [2, 3, 8])
    m.graph.initializer.append(c)
    res = aot.compile(m.SerializeToString())
    assert [n.op for n in res.graph.nodes] == ["Add"]
    x = np.ones((2, 3, 8), np.float32)
    np.testing.assert_allclose(aot.run(res, {"x": x})["y"], x + 7.0)


def test_unregistered_custom_ops_are_listed_and_bad_computes_named():
    nodes = [helper.make_node("Nope", ["x"], ["a"], domain="com.example"),
             helper.make_node("AlsoNope", ["a"], ["y"], domain="org.other")]
    with pytest.raises(AotError) as e:
        aot.compile(_model(nodes, [2, 3, 8]).SerializeToString())
    assert "Nope" in str(e.value) and "AlsoNope" in str(e.value) and "org.other" in str(e.value)
    aot.register_op("com.example", "Broken", lambda x: 1 / 0)
    with pytest.raises(AotError, match=r"Broken.*compute raised ZeroDivisionError"):
        aot.compile(_model([helper.make_node("Broken", ["x"], ["y"], domain="com.example")],
                           [2, 3, 8]).SerializeToString())
    with pytest.raises(AotError, match="custom domain"):
        aot.register_op("", "X", lambda x: x)
