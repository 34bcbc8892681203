"""The structural key of a PrimFunc (aot/tir/structural.py) and the executor's use of it: a layer
repeated in a model is scheduled once per compile, and its kernels stay those it would get alone."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import aot
import aot.executor.lowering as executor
from aot import te
from aot.te.lower import lower
from aot.tir.structural import structural_key
from conftest import check_model


def _matmul(n=8, name="C", scale=1.0, k_name="k", shape_b=None):
    a = te.placeholder((n, n), name="A")
    b = te.placeholder(shape_b or (n, n), name="B")
    k = te.reduce_axis(n, name=k_name)
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j] * scale, axis=k), name=name)
    return lower([a, b, c], "f")


def test_the_same_nest_built_twice_has_one_key():
    one, two = _matmul(), _matmul()
    assert one.body is not two.body
    assert structural_key(one) is not None
    assert structural_key(one) == structural_key(two)
    assert hash(structural_key(one)) == hash(structural_key(two))


@pytest.mark.parametrize("other", [
    dict(scale=2.0),            # a constant
    dict(scale=-0.0),           # equal to 0.0 in Python, printed differently
    dict(k_name="r"),           # a loop variable's name (the C text differs)
    dict(name="D"),             # an output buffer's name
    dict(n=4),                  # shapes and extents
])
def test_keys_differ_where_the_code_would(other):
    base = dict(scale=0.0) if other.get("scale") == -0.0 else {}
    assert structural_key(_matmul(**base)) != structural_key(_matmul(**other))


def test_attributes_are_part_of_the_key():
    f = _matmul()
    g = f.with_body(f.body, attrs=dict(f.attrs, constants=(1,)))
    assert structural_key(f) != structural_key(g)
    h = f.with_body(f.body, attrs=dict(f.attrs, opaque=object()))
    assert structural_key(h) is None            # unknown attribute: no key, scheduled on its own


def _repeated_convs(c=8, hw=6, repeat=3):
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for k in range(repeat):
        w = numpy_helper.from_array(rng.standard_normal((c, c, 3, 3)).astype(np.float32) * 0.2, f"w{k}")
        b = numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), f"b{k}")
        inits += [w, b]
        nodes += [helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [f"c{k}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{k}"], [f"r{k}"])]
        x = f"r{k}"
    g = helper.make_graph(nodes, "rep", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c, hw, hw])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_a_repeated_layer_is_scheduled_once_and_gets_the_same_code(monkeypatch):
    m = _repeated_convs()
    calls = []
    real = executor.schedule

    def counting(func, target):
        calls.append(func.name)
        return real(func, target)

    monkeypatch.setattr(executor, "schedule", counting)
    res = aot.compile(m.SerializeToString(), target="c")
    kernels = res.plan.funcs
    assert len(kernels) == 3 and len(calls) == 1     # three identical conv+relu kernels
    # the reused schedule is the one each layer gets when scheduled on its own
    monkeypatch.setattr(executor, "structural_key", lambda f: None)
    calls.clear()
    alone = aot.compile(m.SerializeToString(), target="c")
    assert len(calls) == 3 and alone.tar == res.tar
    x = np.random.default_rng(1).standard_normal((1, 8, 6, 6)).astype(np.float32)
    check_model(m, {"x": x})
