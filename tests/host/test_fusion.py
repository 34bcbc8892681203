"""FuseOps and the loop IR: the classic conv+bn+relu fusion, schedule primitives, the simplifier."""
import re

import numpy as np
import pytest
from onnx import helper

from conftest import check_model, init, make_model, vi

RNG = np.random.default_rng(7)


def conv_bn_relu_model():
    w = RNG.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.2
    inits = [init("w", w), init("s", RNG.uniform(0.5, 1.5, 16).astype(np.float32)),
             init("b", RNG.standard_normal(16).astype(np.float32)), init("m", RNG.standard_normal(16).astype(np.float32)),
             init("v", RNG.uniform(0.5, 2, 16).astype(np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], name="bn"),
             helper.make_node("Relu", ["bn"], ["y"], name="relu")]
    return make_model(nodes, [vi("x", [1, 3, 224, 224])], [vi("y", [1, 16, 224, 224])], inits)


def test_conv_bn_relu_is_one_kernel():
    m = conv_bn_relu_model()
    x = RNG.standard_normal((1, 3, 224, 224)).astype(np.float32)
    res, _ = check_model(m, {"x": x}, sanitize=False)
    lib1 = [v for k, v in _files(res).items() if k.endswith("lib1.c")][0]
    kernels = re.findall(r"^int32_t (tvmgen_default_fused_\w+)\(", lib1, re.M)
    assert kernels == ["tvmgen_default_fused_conv_relu"], kernels
    assert lib1.count("tvmgen_default_fused_conv_relu(") == 2   # definition + the call in main
    assert res.plan.workspace_size == 0                        # nothing between kernels to store


def _files(res):
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        return {m.name[2:]: t.extractfile(m).read().decode() for m in t.getmembers()
                if m.isfile() and m.name.endswith((".c", ".h", ".json"))}


def test_elementwise_chain_fuses_into_one_kernel():
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]), helper.make_node("Add", ["t", "b"], ["a"]),
             helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("Mul", ["s", "t2"], ["y"]),
             helper.make_node("Neg", ["x2"], ["t2"])]
    nodes = [nodes[4]] + nodes[:4]
    m = make_model(nodes, [vi("x", [4, 3]), vi("x2", [3, 4])], [vi("y", None)], [init("b", RNG.standard_normal(4).astype(np.float32))])
    res, _ = check_model(m, {"x": RNG.standard_normal((4, 3)).astype(np.float32), "x2": RNG.standard_normal((3, 4)).astype(np.float32)})
    assert len(res.plan.calls) == 1


def test_shared_value_is_not_fused_away():
    # c feeds two consumers: it must be materialised once, not recomputed
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Add", ["r", "s"], ["y"])]
    m = make_model(nodes, [vi("x", [1, 2, 5, 5])], [vi("y", None)], [init("w", RNG.standard_normal((3, 2, 3, 3)).astype(np.float32))])
    res, _ = check_model(m, {"x": RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)})
    assert len(res.plan.calls) == 2
    assert res.plan.workspace_size == 3 * 3 * 3 * 4   # one intermediate: exactly its bytes


def test_softmax_is_a_single_loop_nest_over_rows():
    from aot.tir.printer import func_str
    nodes = [helper.make_node("Softmax", ["x"], ["y"], axis=1)]
    m = make_model(nodes, [vi("x", [2, 5, 3])], [vi("y", None)])
    res, _ = check_model(m, {"x": RNG.standard_normal((2, 5, 3)).astype(np.float32)})
    text = func_str(res.plan.calls[0].func)
    # the axis being normalised is moved innermost; max and sum are scalars per (n, w)
    assert "max_acc" in text and "sum_acc" in text
    assert "allocate(float32, [1], local)" in text


# -------------------------------------------------------------- schedule primitives
def _kernel_and_check(transform):
    """Lower a dense op, apply a schedule transform, render, compile and compare with numpy."""
    import subprocess
    import tempfile

    from aot import te
    from aot.te.lower import lower
    from aot.tir.flatten import flatten
    from codegen_c.c_renderer import CRenderer

    a = te.placeholder((6, 10), "float32", "A")
    b = te.placeholder((10, 7), "float32", "B")

    def body(i, j):
        r = te.reduce_axis(10, "k")
        return te.sum(a(i, r.var) * b(r.var, j), r)
    c = te.compute((6, 7), body, "C", ["i", "j"])
    f = lower([a, b, c], "kernel")
    f = flatten(f.with_body(transform(f.body, c.op.axis)))
    src = "#include <stdint.h>\n#include <math.h>\n" + CRenderer().function(f)
    A = RNG.standard_normal((6, 10)).astype(np.float32)
    B = RNG.standard_normal((10, 7)).astype(np.float32)
    main = """
#include <stdio.h>
#include <stdint.h>
int32_t kernel(const float* restrict, const float* restrict, float* restrict);
int main(void) { float a[60], b[70], c[42]; int i;
  for (i = 0; i < 60; ++i) if (scanf("%f", &a[i]) != 1) return 1;
  for (i = 0; i < 70; ++i) if (scanf("%f", &b[i]) != 1) return 1;
  kernel(a, b, c); for (i = 0; i < 42; ++i) printf("%.9g\\n", c[i]); return 0; }
"""
    with tempfile.TemporaryDirectory() as d:
        r = CRenderer()
        with open(f"{d}/k.c", "w") as fh:
            fh.write(src)
        with open(f"{d}/m.c", "w") as fh:
            fh.write(main)
        subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"{d}/k.c", f"{d}/m.c",
                        "-o", f"{d}/x", "-lm"], check=True)
        inp = " ".join(f"{v:.9g}" for v in np.concatenate([A.ravel(), B.ravel()]))
        outp = subprocess.run([f"{d}/x"], input=inp, capture_output=True, text=True, check=True).stdout
    got = np.array([float(v) for v in outp.split()], np.float32).reshape(6, 7)
    np.testing.assert_allclose(got, A @ B, rtol=1e-5, atol=1e-5)
    return src, r


def test_schedule_identity():
    _kernel_and_check(lambda s, axes: s)


def test_schedule_split_with_tail():
    from aot.tir.schedule import split
    src, _ = _kernel_and_check(lambda s, axes: split(s, axes[1], 4)[0])   # 7 = 4 + 3: guarded tail
    assert "j_o" in src and "j_i" in src and "if (" in src


def test_schedule_reorder():
    from aot.tir.schedule import reorder
    src, _ = _kernel_and_check(lambda s, axes: reorder(s, [axes[1], axes[0]]))
    assert src.index("for (int32_t j") < src.index("for (int32_t i")


def test_schedule_unroll():
    from aot.tir.schedule import split, unroll

    def sched(s, axes):
        s, o, i = split(s, axes[0], 2)
        return unroll(s, i)
    src, _ = _kernel_and_check(sched)
    assert "i_i" not in src   # the inner loop is gone: its body appears twice


def test_reorder_refuses_dependent_bounds():
    from aot import te
    from aot.tir.expr import Var
    from aot.tir.schedule import ScheduleError, reorder
    from aot.tir.stmt import Buffer, For, Store
    i, j = Var("i"), Var("j")
    buf = Buffer("o", "int32", (4, 4))
    s = For(i, 0, 4, For(j, i, 4 - i, Store(buf, i * 4 + j, i)))
    with pytest.raises(ScheduleError):
        reorder(s, [j, i])
    assert te is not None


# -------------------------------------------------------------- simplifier
def test_simplifier_linearises_flattened_indices():
    from aot.tir.expr import Const, Var
    from aot.tir.printer import expr_str
    from aot.tir.simplify import simplify
    n, c, h, w = Var("n"), Var("c"), Var("h"), Var("w")
    e = ((n * 3 + c) * 8 + (h + 1)) * 8 + (w - 1)
    s = simplify(e)
    assert expr_str(s) == "(((((n * 192) + (c * 64)) + (h * 8)) + w) + 7)"
    r = {id(w): (0, 7)}
    assert expr_str(simplify((w * 4 + Const(3, "int32")) // 4, r)) == "w"
    assert expr_str(simplify((w * 4 + Const(3, "int32")) % 4, r)) == "3"
    assert expr_str(simplify(w // 8, r)) == "0"


def test_simplifier_keeps_float_identities_exact():
    from aot.tir.expr import Const, Var
    from aot.tir.simplify import simplify
    x = Var("x", "float32")
    # x + 0.0 is not x for x = -0.0, so it must stay
    assert simplify(x + Const(0.0, "float32")) is not x
