"""One validator of the graph rules (aot/frontend/graph_rules.py) for both importers: a TFLite
subgraph breaking a rule ONNX enforces is refused by name, as the ONNX model is."""
import pytest
from onnx import TensorProto, helper

import aot
from aot.errors import AotError
from tflite_build import ModelBuilder


def _tflite(case):
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 4], "float32")
    a = mb.tensor("a", [1, 4], "float32")
    y = mb.tensor("y", [1, 4], "float32")
    if case == "two_writers":
        mb.op("RELU", [x], [a])
        mb.op("TANH", [x], [a])
        mb.op("RELU", [a], [y])
        return mb.finish(inputs=[x], outputs=[y])
    if case == "input_twice":
        mb.op("ADD", [x, x], [y])
        return mb.finish(inputs=[x, x], outputs=[y])
    if case == "writes_input":
        mb.op("RELU", [a], [x])
        mb.op("RELU", [x], [y])
        return mb.finish(inputs=[x, a], outputs=[y])
    if case == "out_of_order":
        mb.op("RELU", [a], [y])
        mb.op("RELU", [x], [a])
        return mb.finish(inputs=[x], outputs=[y])
    if case == "output_twice":
        mb.op("RELU", [x], [y])
        return mb.finish(inputs=[x], outputs=[y, y])
    raise ValueError(case)


@pytest.mark.parametrize("case,message", [
    ("two_writers", "operator 1 (TANH) writes tensor 1 'a', which operator 0 (RELU) already defines "
                    "(each tensor must have one producer)"),
    ("input_twice", "graph input tensor 0 'x' is listed twice"),
    ("writes_input", "operator 0 (RELU) writes tensor 0 'x', which graph input tensor 0 'x' already defines "
                     "(each tensor must have one producer)"),
    ("out_of_order", "operator 0 (RELU) reads tensor 1 'a', which only a later node produces: the operators are "
                     "not in execution order, or form a cycle"),
    ("output_twice", "graph output tensor 2 'y' is listed twice"),
])
def test_tflite_graphs_keep_the_onnx_rules(case, message):
    with pytest.raises(AotError) as e:
        aot.compile(_tflite(case))
    assert str(e.value) == message


def test_onnx_and_tflite_say_the_same_of_a_second_writer():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"), helper.make_node("Tanh", ["x"], ["a"], name="t1"),
             helper.make_node("Relu", ["a"], ["y"], name="r2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(AotError, match="each tensor must have one producer"):
        aot.compile(m.SerializeToString())
    with pytest.raises(AotError, match="each tensor must have one producer"):
        aot.compile(_tflite("two_writers"))
