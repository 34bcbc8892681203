"""A Concat of very many inputs: its select over the inputs is built balanced (log2 deep), so no
expression walker recurses once per input (a chain of 490 gave a RecursionError), and the kernel,
the executor and the host harness of 1,000 inputs build warning-free and match onnxruntime."""
import numpy as np
import pytest
import onnxruntime as ort
from onnx import TensorProto, helper

import aot


def concat_model(n, axis=1):
    ins = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [1, 2, 3]) for k in range(n)]
    node = helper.make_node("Concat", [f"x{k}" for k in range(n)], ["y"], axis=axis)
    shape = [1, 2, 3]
    shape[axis] *= n
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    return helper.make_model(helper.make_graph([node], "wide_concat", ins, [out]),
                             opset_imports=[helper.make_opsetid("", 13)])


def test_onnx_concat_of_1000_inputs_matches_onnxruntime():
    m = concat_model(1000)
    rng = np.random.default_rng(0)
    feeds = {f"x{k}": rng.standard_normal((1, 2, 3)).astype(np.float32) for k in range(1000)}
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    res = aot.compile(m.SerializeToString())
    np.testing.assert_array_equal(aot.run(res, feeds)["y"], ref)


def test_onnx_concat_of_300_inputs_on_the_last_axis():
    m = concat_model(300, axis=2)
    rng = np.random.default_rng(1)
    feeds = {f"x{k}": rng.standard_normal((1, 2, 3)).astype(np.float32) for k in range(300)}
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_array_equal(aot.run(aot.compile(m.SerializeToString()), feeds)["y"], ref)


def test_topi_concatenate_of_700_tensors():
    from aot import te, topi
    ts = [te.placeholder((3,), name=f"a{k}") for k in range(700)]
    c = topi.concatenate(ts, 0)
    f = aot.build(te.create_schedule(c.op), ts + [c], target="c")
    rng = np.random.default_rng(2)
    arrs = [rng.standard_normal(3).astype("float32") for _ in range(700)]
    out = aot.nd.array(np.zeros(2100, "float32"))
    f(*[aot.nd.array(a) for a in arrs], out)
    np.testing.assert_array_equal(out.numpy(), np.concatenate(arrs))


@pytest.mark.parametrize("n,shape,axis", [(2, (3,), 0), (3, (2, 3), 1), (5, (2, 3), 0)])
def test_topi_concatenate_of_a_few_tensors(n, shape, axis):
    """The chain of a few inputs: each input's loads sit under a test of the range before its end,
    which the bounds check reads (a test of its start left the first input's loads unbounded)."""
    from aot import te, topi
    ts = [te.placeholder(shape, name=f"a{k}") for k in range(n)]
    c = topi.concatenate(ts, axis)
    f = aot.build(te.create_schedule(c.op), ts + [c], target="c")
    rng = np.random.default_rng(n)
    arrs = [rng.standard_normal(shape).astype("float32") for _ in range(n)]
    want = np.concatenate(arrs, axis)
    out = aot.nd.array(np.zeros(want.shape, "float32"))
    f(*[aot.nd.array(a) for a in arrs], out)
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("op", ["Sum", "Mean"])
def test_variadic_op_of_1000_inputs_matches_onnxruntime(op):
    """Sum/Mean of 1,000 inputs folded pairwise (a left fold was 1,000 deep: RecursionError). Float
    Max/Min name each operand three times (NaN propagation), so their expression still grows as
    n^2 here: not yet taken to 1,000."""
    n = 1000
    ins = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [2, 3]) for k in range(n)]
    node = helper.make_node(op, [f"x{k}" for k in range(n)], ["y"])
    m = helper.make_model(helper.make_graph([node], "wide_" + op, ins,
                                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]),
                          opset_imports=[helper.make_opsetid("", 13)])
    rng = np.random.default_rng(3)
    feeds = {f"x{k}": rng.integers(-8, 9, (2, 3)).astype(np.float32) for k in range(n)}   # sums exact in float32
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(aot.run(aot.compile(m.SerializeToString()), feeds)["y"], ref, rtol=1e-6)


def test_sum_of_1000_relu_outputs_compiles_and_matches_onnxruntime():
    """1,000 intermediate buffers live at once: the planner's random search is cut to its budget of
    pair visits (each trial was a second here), and the plan still keeps every buffer apart."""
    n = 1000
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("Relu" if k % 2 else "Neg", ["x"], [f"r{k}"]) for k in range(n)]
    nodes.append(helper.make_node("Sum", [f"r{k}" for k in range(n)], ["y"]))
    m = helper.make_model(helper.make_graph(nodes, "wide_sum", [x],
                                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]),
                          opset_imports=[helper.make_opsetid("", 13)])
    feeds = {"x": np.array([[-2, -1, 0], [1, 2, 3]], np.float32)}
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    res = aot.compile(m.SerializeToString())
    assert res.plan.workspace_size >= n * 24
    np.testing.assert_allclose(aot.run(res, feeds)["y"], ref, rtol=1e-6)
