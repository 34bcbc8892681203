"""The dataflow pattern language and the partition passes on their own: each pass's output
graph is checked (which nodes went where, each function's inputs, outputs and body), not
only the outputs of a compiled model."""
import numpy as np
import pytest
from onnx import helper

from conftest import init, make_model, vi

from aot.errors import AotError
from aot.frontend.onnx_import import import_onnx
from aot.ir.graph import print_graph
from aot.ops import get_op
from aot.passes.partition import (annotate_target, merge_composite, merge_compiler_regions, partition_graph,
                                  renumber_functions)
from aot.relay.dataflow_pattern import (PatternError, find, is_constant, is_op, is_tuple_get_item, is_var,
                                        match, match_value, wildcard)

RNG = np.random.default_rng(0)


def graph_of(nodes, inputs, outputs, inits=()):
    return import_onnx(make_model(nodes, inputs, outputs, inits).SerializeToString(), {})


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=outs[0], **attrs)


def value(g, name):
    for n in g.nodes:
        for o in n.outputs:
            if o.name == name:
                return o
    raise KeyError(name)


def claim(*ops, compiler="acc"):
    return (compiler, lambda n: n.op in ops)


def partition(g, *backends):
    g, _ = annotate_target(g, list(backends))
    g, _ = merge_compiler_regions(g)
    g, _ = partition_graph(g, "default")
    return g


def functions(g):
    return [n for n in g.nodes if n.op == "Function"]


def evaluate(g, feeds):
    """The graph run through each op's numpy reference (a Function through its body)."""
    env = {id(v): feeds[v.name] for v in g.inputs}
    for n in g.nodes:
        args = [None if v is None else (v.const if v.is_const else env[id(v)]) for v in n.inputs]
        for o, val in zip(n.outputs, get_op(n.op).reference(n, *args)):
            env[id(o)] = np.asarray(val)
    return [env[id(v)] for v in g.outputs]


# -- patterns ---------------------------------------------------------------------------------------
def conv_relu_graph():
    nodes = [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"]),
             node("Conv", ["r", "w2"], ["c2"], strides=[2, 2]), node("Sigmoid", ["c2"], ["y"])]
    inits = [init("w", RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)),
             init("b", RNG.standard_normal(4).astype(np.float32)),
             init("w2", RNG.standard_normal((4, 4, 1, 1)).astype(np.float32))]
    return graph_of(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 4, 4])], inits)


def test_call_patterns_match_by_op_arity_and_leaf_kind():
    g = conv_relu_graph()
    c, c2 = value(g, "c"), value(g, "c2")
    assert match(is_op("Conv")(wildcard(), is_constant(), is_constant()), c)
    assert not match(is_op("Conv")(wildcard(), is_constant()), c)          # arity counts
    assert match(is_op("Conv")(wildcard(), is_constant()), c2)
    assert match(is_op("Conv"), c) and match(is_op("Conv"), c2)            # uncalled: any inputs
    assert match(is_op("Conv")(is_var("x"), wildcard(), wildcard()), c)
    assert not match(is_op("Conv")(is_constant(), wildcard(), wildcard()), c)
    assert not match(is_op("Conv")(is_var("z"), wildcard(), wildcard()), c)
    assert match(is_op("Relu", "Sigmoid")(wildcard()), value(g, "r"))
    assert match(is_tuple_get_item(is_op("Relu"), 0), value(g, "r"))


def test_has_attr_alternatives_and_types():
    g = conv_relu_graph()
    c, c2 = value(g, "c"), value(g, "c2")
    s1 = is_op("Conv").has_attr({"strides": [1, 1]})
    assert match(s1, c) and not match(s1, c2)
    assert match(s1 | is_op("Conv").has_attr({"strides": (2, 2)}), c2)
    assert match(is_op("Conv").has_dtype("float32").has_shape([1, 4, 8, 8]), c)
    assert not match(is_op("Conv").has_shape([1, 4, 8, 8]), c2)


def test_unknown_op_and_attribute_are_errors_not_silent_misses():
    with pytest.raises(PatternError, match="no such op.*did you mean 'Conv'"):
        is_op("Conv2")
    with pytest.raises(PatternError, match="no such op"):
        is_op("Function")                     # the compiler's own op is not a pattern target
    g = conv_relu_graph()
    with pytest.raises(PatternError, match="Conv has no attribute 'stride'.*strides"):
        match(is_op("Conv").has_attr({"stride": [1, 1]}), value(g, "c"))
    assert isinstance(PatternError("x"), AotError)


def test_optional_epilogue_and_binding_order():
    g = conv_relu_graph()
    pat = is_op("Conv")(wildcard(), is_constant(), is_constant()).optional(lambda x: is_op("Relu")(x))
    m = match_value(pat, value(g, "r"))
    assert [n.name for n in m.nodes] == ["r", "c"]            # in the order the pattern visits them
    assert [v.name for v in m.inputs] == ["x", "w", "b"]
    assert match_value(pat, value(g, "c")) is not None          # without the epilogue too
    found = find(pat, g)
    assert len(found) == 1 and [n.name for n in found[0].nodes] == ["c", "r"]   # the longer match wins


def test_same_pattern_object_binds_one_value():
    nodes = [node("Sigmoid", ["x"], ["s"]), node("Mul", ["x", "s"], ["y"]),
             node("Sigmoid", ["z"], ["t"]), node("Mul", ["x", "t"], ["y2"])]
    g = graph_of(nodes, [vi("x", [4]), vi("z", [4])], [vi("y", [4]), vi("y2", [4])])
    x = wildcard()
    swish = is_op("Mul")(x, is_op("Sigmoid")(x))
    assert match(swish, value(g, "y")) and not match(swish, value(g, "y2"))


def test_find_skips_matches_whose_inner_values_escape():
    nodes = [node("Conv", ["x", "w"], ["c"]), node("Relu", ["c"], ["r"]), node("Abs", ["c"], ["a"]),
             node("Add", ["r", "a"], ["y"])]
    g = graph_of(nodes, [vi("x", [1, 2, 4, 4])], [vi("y", [1, 2, 4, 4])],
                 [init("w", RNG.standard_normal((2, 2, 1, 1)).astype(np.float32))])
    pat = is_op("Relu")(is_op("Conv")(wildcard(), wildcard()))
    assert match(pat, value(g, "r"))
    assert find(pat, g) == []              # c is also read by Abs: the composite would hide it


# -- partition cases --------------------------------------------------------------------------------
def test_diamond_does_not_merge_into_a_cycle():
    # a -> s (cpu) -> d, and a -> d: {a, d} as one region would run before and after s
    nodes = [node("Relu", ["x"], ["a"]), node("Sigmoid", ["a"], ["s"]), node("Add", ["a", "s"], ["y"])]
    g = graph_of(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])])
    before = print_graph(g)
    ann, _ = annotate_target(g, [claim("Relu", "Add")])
    merged, n = merge_compiler_regions(ann)
    assert n == 2 and [m.attrs.get("@region") for m in merged.nodes] == [0, None, 1]
    p = partition(g, claim("Relu", "Add"))
    assert [m.op for m in p.nodes] == ["Function", "Sigmoid", "Function"]
    f0, f1 = functions(p)
    assert f0.attrs["global_symbol"] == "tvmgen_default_acc_main_0" and f1.name == "tvmgen_default_acc_main_1"
    assert [v.name for v in f1.inputs] == ["a", "s"] and [m.op for m in f1.attrs["body"].nodes] == ["Add"]
    assert print_graph(g) == before                      # the passes never change their input
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(evaluate(p, {"x": x})[0], evaluate(g, {"x": x})[0], rtol=1e-6)


def test_chain_merges_and_a_cpu_op_separates_regions():
    nodes = [node("Relu", ["x"], ["a"]), node("Neg", ["a"], ["b"]), node("Sigmoid", ["b"], ["s"]),
             node("Relu", ["s"], ["c"]), node("Abs", ["c"], ["y"])]
    g = graph_of(nodes, [vi("x", [5])], [vi("y", [5])])
    p = partition(g, claim("Relu", "Neg", "Abs"))
    assert [m.op for m in p.nodes] == ["Function", "Sigmoid", "Function"]
    f0, f1 = functions(p)
    assert [m.name for m in f0.attrs["body"].nodes] == ["a", "b"] and [v.name for v in f0.outputs] == ["b"]
    assert [m.name for m in f1.attrs["body"].nodes] == ["c", "y"] and f1.outputs[0] is p.outputs[0]
    assert value(p, "s").producer.op == "Sigmoid" and f1.inputs == [value(p, "s")]


def test_region_fed_by_a_graph_input_whose_output_is_also_a_graph_output():
    nodes = [node("Relu", ["x"], ["a"]), node("Neg", ["a"], ["b"]), node("Sigmoid", ["b"], ["y"])]
    g = graph_of(nodes, [vi("x", [3])], [vi("a", [3]), vi("y", [3])])
    p = partition(g, claim("Relu", "Neg"))
    (f,) = functions(p)
    assert f.inputs == [p.inputs[0]]                           # the graph input itself
    assert [v.name for v in f.outputs] == ["a", "b"]           # a leaves as a graph output, b to Sigmoid
    assert p.outputs[0] is f.outputs[0] and p.output_names == ["a", "y"]
    body = f.attrs["body"]
    assert [v.name for v in body.outputs] == ["a", "b"] and body.inputs[0] is not f.inputs[0]


def test_constants_inside_a_region_become_constant_inputs():
    c1, c2 = RNG.standard_normal(4).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
    nodes = [node("Add", ["x", "k1"], ["a"]), node("Mul", ["a", "k2"], ["m"]), node("Tanh", ["m"], ["y"])]
    g = graph_of(nodes, [vi("x", [4])], [vi("y", [4])], [init("k1", c1), init("k2", c2)])
    p = partition(g, claim("Add", "Mul"))
    (f,) = functions(p)
    assert [v.name for v in f.inputs] == ["x", "k1", "k2"] and [v.is_const for v in f.inputs] == [False, True, True]
    body = f.attrs["body"]
    np.testing.assert_array_equal(body.inputs[2].const, c2)
    assert {id(v) for v in body.constants()} <= {id(v) for v in body.inputs}   # no constant hides in the body
    x = RNG.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(evaluate(p, {"x": x})[0], np.tanh((x + c1) * c2), rtol=1e-6)


def test_priority_and_dense_numbering_per_backend():
    nodes = [node("Relu", ["x"], ["a"]), node("Neg", ["a"], ["b"]), node("Relu", ["b"], ["c"]),
             node("Neg", ["c"], ["y"])]
    g = graph_of(nodes, [vi("x", [3])], [vi("y", [3])])
    # both claim Relu: the first in the list (the target list's order) wins
    p = partition(g, claim("Relu", compiler="npu"), claim("Relu", "Neg", compiler="dsp"))
    assert [f.attrs["global_symbol"] for f in functions(p)] == [
        "tvmgen_default_npu_main_0", "tvmgen_default_dsp_main_0", "tvmgen_default_npu_main_1",
        "tvmgen_default_dsp_main_1"]
    r, _ = renumber_functions(p, ["tvmgen_default_npu_main_1", "tvmgen_default_dsp_main_0",
                                  "tvmgen_default_npu_main_0", "tvmgen_default_dsp_main_1"])
    assert [f.attrs["global_symbol"] for f in functions(r)] == [
        "tvmgen_default_npu_main_1", "tvmgen_default_dsp_main_0", "tvmgen_default_npu_main_0",
        "tvmgen_default_dsp_main_1"]
    assert functions(p)[0].attrs["global_symbol"] == "tvmgen_default_npu_main_0"     # input unchanged


def test_merge_composite_then_partition_keeps_composites_in_the_body():
    g = conv_relu_graph()
    pat = is_op("Conv")(wildcard(), is_constant(), is_constant()).optional(lambda x: is_op("Relu")(x))
    c, n = merge_composite(g, [("acc.conv_relu", pat, None)])
    assert n == 1 and [m.op for m in c.nodes] == ["Function", "Conv", "Sigmoid"]
    comp = c.nodes[0]
    assert comp.attrs["Composite"] == "acc.conv_relu" and [v.name for v in comp.inputs] == ["x", "w", "b"]
    p = partition(c, ("acc", lambda m: m.attrs.get("Composite", "").startswith("acc.")))
    (f,) = functions(p)
    assert [m.attrs.get("Composite") for m in f.attrs["body"].nodes] == ["acc.conv_relu"]
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(evaluate(p, {"x": x})[0], evaluate(g, {"x": x})[0], rtol=1e-5)


def test_per_backend_merging_can_be_turned_off():
    nodes = [node("Relu", ["x"], ["a"]), node("Neg", ["a"], ["y"])]
    g = graph_of(nodes, [vi("x", [3])], [vi("y", [3])])
    ann, _ = annotate_target(g, [claim("Relu", "Neg")])
    merged, n = merge_compiler_regions(ann, compilers=set())
    assert n == 2
    p, k = partition_graph(merged, "default")
    assert k == 2


def test_function_op_is_not_readable_from_a_model():
    from aot.errors import UnsupportedError
    m = make_model([helper.make_node("Function", ["x"], ["y"])], [vi("x", [2])], [vi("y", [2])])
    with pytest.raises(UnsupportedError, match="operator Function is not supported"):
        import_onnx(m.SerializeToString(), {})
