"""Per-op tests against onnxruntime, built with ASan+UBSan, over shapes and attribute sets."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from conftest import check_model, init, make_model, vi

RNG = np.random.default_rng(1234)


def rnd(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def single(op, in_shapes, out_shape=None, attrs=None, inits=(), opset=13, x=None, n_out=1, dtypes=None):
    names = [f"x{k}" for k in range(len(in_shapes))]
    ins = [vi(n, s, (dtypes or {}).get(n)) for n, s in zip(names, in_shapes)]
    init_names = [i.name for i in inits]
    outs = [helper.make_empty_tensor_value_info(f"y{k}") for k in range(n_out)]
    node = helper.make_node(op, names + init_names, [o.name for o in outs], name=f"{op}_node", **(attrs or {}))
    m = make_model([node], ins, outs, inits, opset)
    feeds = {n: (x[k] if x is not None else rnd(*s)) for k, (n, s) in enumerate(zip(names, in_shapes))}
    return m, feeds


UNARY = ["Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Erf", "Floor", "Ceil", "Softsign", "Sin", "Cos"]


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("shape", [[7], [2, 3, 5]])
def test_unary(op, shape):
    check_model(*single(op, [shape]))


@pytest.mark.parametrize("op", ["Log", "Sqrt", "Reciprocal"])
def test_unary_positive(op):
    check_model(*single(op, [[3, 4]], x=[rnd(3, 4, lo=0.1, hi=3)]))


@pytest.mark.parametrize("op,attrs", [
    ("LeakyRelu", {"alpha": 0.1}), ("LeakyRelu", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
    ("HardSigmoid", {}), ("HardSwish", {}), ("Elu", {"alpha": 0.5}), ("Softplus", {}),
    ("Selu", {}), ("Selu", {"alpha": 2.0, "gamma": 3.0}),    # opset 13: no function body to inline
])
def test_unary_attrs(op, attrs):
    opset = 14 if op == "HardSwish" else 13
    check_model(*single(op, [[2, 9]], attrs=attrs, opset=opset))


@pytest.mark.parametrize("opset,lo,hi", [(13, -0.5, 0.7), (13, None, 0.3), (13, -1.0, None), (9, -0.5, 0.5)])
def test_clip(opset, lo, hi):
    if opset >= 11:
        names, inits = ["x0"], []
        if lo is not None:
            inits.append(init("lo", np.float32(lo)))
        names.append("lo" if lo is not None else "")
        if hi is not None:
            inits.append(init("hi", np.float32(hi)))
        names.append("hi" if hi is not None else "")
        node = helper.make_node("Clip", names, ["y0"])
        m = make_model([node], [vi("x0", [4, 5])], [vi("y0", None)], inits, opset)
    else:
        node = helper.make_node("Clip", ["x0"], ["y0"], min=lo, max=hi)
        m = make_model([node], [vi("x0", [4, 5])], [vi("y0", None)], [], opset)
    check_model(m, {"x0": rnd(4, 5)})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
@pytest.mark.parametrize("sa,sb", [([2, 3, 4], [2, 3, 4]), ([2, 3, 4], [4]), ([1, 3, 1], [2, 1, 5]), ([3, 1, 1], [])])
def test_binary_broadcast(op, sa, sb):
    xb = rnd(*sb, lo=0.5, hi=2.0) if op == "Div" else rnd(*sb)
    check_model(*single(op, [sa, sb], x=[rnd(*sa), xb]))


def test_pow():
    check_model(*single("Pow", [[3, 4], [4]], x=[rnd(3, 4, lo=0.1, hi=2), rnd(4, lo=-2, hi=2)]))


@pytest.mark.parametrize("op", ["Sum", "Max", "Min", "Mean"])
def test_variadic(op):
    check_model(*single(op, [[2, 3], [3], [1, 3]]))


def test_int_div_truncates():
    a = np.array([[7, -7, 7, -7, 0, 5]], np.int32)
    b = np.array([[2, 2, -2, -2, 3, -5]], np.int32)
    check_model(*single("Div", [[1, 6], [1, 6]], x=[a, b],
                        dtypes={"x0": TensorProto.INT32, "x1": TensorProto.INT32}), atol=0)


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_compare(op):
    a = np.round(rnd(3, 4)).astype(np.float32)
    b = np.round(rnd(4)).astype(np.float32)
    check_model(*single(op, [[3, 4], [4]], x=[a, b]))


def test_where():
    c = RNG.random((3, 4)) > 0.5
    m, feeds = single("Where", [[3, 4], [3, 4], [4]], x=[c, rnd(3, 4), rnd(4)], dtypes={"x0": TensorProto.BOOL})
    check_model(m, feeds)


# ------------------------------------------------------------------ conv
CONV_CASES = [
    # x shape, w shape, attrs
    ([1, 3, 9, 9], [8, 3, 3, 3], {}),
    ([1, 3, 9, 9], [8, 3, 3, 3], {"pads": [1, 1, 1, 1]}),
    ([2, 4, 10, 7], [6, 4, 3, 2], {"pads": [1, 0, 2, 1], "strides": [2, 1]}),
    ([1, 4, 11, 11], [4, 1, 3, 3], {"group": 4, "pads": [1, 1, 1, 1]}),            # depthwise
    ([1, 6, 8, 8], [9, 2, 3, 3], {"group": 3, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ([1, 3, 12, 12], [5, 3, 3, 3], {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    ([1, 3, 12, 12], [5, 3, 3, 3], {"dilations": [2, 3], "strides": [2, 2], "pads": [1, 0, 3, 2]}),
    ([1, 3, 10, 9], [4, 3, 3, 3], {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ([1, 3, 10, 9], [4, 3, 4, 4], {"auto_pad": "SAME_LOWER", "strides": [3, 2]}),
    ([1, 3, 10, 9], [4, 3, 3, 3], {"auto_pad": "VALID"}),
    ([1, 8, 5, 5], [16, 8, 1, 1], {}),                                              # pointwise
    ([1, 3, 20], [4, 3, 5], {"pads": [2, 1], "strides": [2]}),                      # 1-D
    ([2, 4, 17], [4, 2, 3], {"group": 2, "dilations": [2]}),
]


@pytest.mark.parametrize("xs,ws,attrs", CONV_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv(xs, ws, attrs, bias):
    inits = [init("w", rnd(*ws))] + ([init("b", rnd(ws[0]))] if bias else [])
    check_model(*single("Conv", [xs], attrs=attrs, inits=inits))


@pytest.mark.parametrize("ta,tb,alpha,beta,cshape", [
    (0, 0, 1.0, 1.0, [5]), (1, 0, 0.5, 2.0, [3, 5]), (0, 1, 1.0, 1.0, None), (1, 1, 2.0, 0.5, [1, 5]), (0, 0, 1.0, 1.0, [3, 1]),
])
def test_gemm(ta, tb, alpha, beta, cshape):
    a = [4, 3] if ta else [3, 4]
    b = [5, 4] if tb else [4, 5]
    inits = [init("b", rnd(*b))] + ([init("c", rnd(*cshape))] if cshape else [])
    check_model(*single("Gemm", [a], attrs={"transA": ta, "transB": tb, "alpha": alpha, "beta": beta}, inits=inits))


@pytest.mark.parametrize("sa,sb", [([3, 4], [4, 5]), ([2, 3, 4], [4, 5]), ([2, 1, 3, 4], [3, 4, 2]), ([4], [4, 3]),
                                   ([3, 4], [4]), ([5, 2, 3], [5, 3, 2])])
def test_matmul(sa, sb):
    check_model(*single("MatMul", [sa, sb]))


POOL_CASES = [
    ([1, 3, 8, 8], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ([1, 2, 9, 7], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ([2, 2, 9, 7], {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}),
    ([1, 2, 10, 10], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ([1, 2, 11, 10], {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ([1, 2, 11, 10], {"kernel_shape": [2, 3], "strides": [3, 2], "auto_pad": "SAME_LOWER"}),
    ([1, 3, 16], {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
]


@pytest.mark.parametrize("xs,attrs", POOL_CASES)
def test_maxpool(xs, attrs):
    check_model(*single("MaxPool", [xs], attrs=attrs, opset=12))


def test_maxpool_dilation():
    check_model(*single("MaxPool", [[1, 2, 12, 12]], attrs={"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [2, 2, 2, 2]}, opset=12))


@pytest.mark.parametrize("xs,attrs", POOL_CASES)
@pytest.mark.parametrize("include_pad", [0, 1])
def test_avgpool(xs, attrs, include_pad):
    if include_pad and attrs.get("auto_pad", "").startswith("SAME") and attrs.get("ceil_mode"):
        pytest.skip("not a distinct combination")
    check_model(*single("AveragePool", [xs], attrs=dict(attrs, count_include_pad=include_pad), opset=11))


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [[1, 4, 5, 6], [2, 3, 7]])
def test_global_pool(op, shape):
    check_model(*single(op, [shape]))


@pytest.mark.parametrize("shape,eps", [([2, 3, 4, 5], 1e-5), ([1, 4, 6], 1e-3)])
def test_batchnorm(shape, eps):
    c = shape[1]
    inits = [init("s", rnd(c)), init("b", rnd(c)), init("m", rnd(c)), init("v", rnd(c, lo=0.5, hi=2))]
    check_model(*single("BatchNormalization", [shape], attrs={"epsilon": eps}, inits=inits))


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape,axis,opset", [([3, 10], -1, 13), ([2, 3, 4], 1, 13), ([2, 3, 4], 1, 11), ([2, 3, 4, 5], 2, 9),
                                               ([2, 5], 0, 13)])
def test_softmax(op, shape, axis, opset):
    check_model(*single(op, [shape], attrs={"axis": axis}, opset=opset))


@pytest.mark.parametrize("size", [1, 3, 5])  # onnxruntime accepts odd sizes only
@pytest.mark.parametrize("beta", [0.75, 0.5, 1.0, 0.6])   # square roots, a square root, none, pow
def test_lrn(size, beta):
    check_model(*single("LRN", [[1, 7, 4, 4]], attrs={"size": size, "alpha": 0.5, "beta": beta, "bias": 2.0}))


# ------------------------------------------------------------------ shape ops
def test_transpose():
    check_model(*single("Transpose", [[2, 3, 4, 5]], attrs={"perm": [0, 2, 3, 1]}))
    check_model(*single("Transpose", [[3, 4]]))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    shapes = [[s if d != (axis % 3) else s + k for d, s in enumerate(sh)] for k, sh in enumerate(shapes)]
    check_model(*single("Concat", shapes, attrs={"axis": axis}))


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_split(opset):
    if opset >= 13:
        inits = [init("split", np.array([1, 3, 2], np.int64))]
        attrs = {"axis": 1}
    else:
        inits, attrs = [], {"axis": 1, "split": [1, 3, 2]}
    if opset == 18:
        inits, attrs = [], {"axis": 1, "num_outputs": 3}
    check_model(*single("Split", [[2, 6, 3]], attrs=attrs, inits=inits, n_out=3, opset=opset))


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1], [3], [0], [1]), ([0, 1], [-1, 100], [1, 2], [2, 1]), ([3], [0], [1], [-1]), ([-1], [-100], [2], [-2]),
])
def test_slice(starts, ends, axes, steps):
    inits = [init("s", np.array(starts, np.int64)), init("e", np.array(ends, np.int64)),
             init("a", np.array(axes, np.int64)), init("st", np.array(steps, np.int64))]
    check_model(*single("Slice", [[4, 5, 6]], inits=inits))


@pytest.mark.parametrize("pads,value", [([0, 1, 2, 0, 2, 1], 0.0), ([1, 0, 0, 0, 0, 3], -1.5)])
def test_pad(pads, value):
    inits = [init("p", np.array(pads, np.int64)), init("v", np.float32(value))]
    check_model(*single("Pad", [[2, 3, 4]], inits=inits))


@pytest.mark.parametrize("axis,ind", [(0, [[0, 2], [1, -1]]), (1, [3, 0, 0]), (2, 1)])
def test_gather(axis, ind):
    inits = [init("i", np.array(ind, np.int64))]
    check_model(*single("Gather", [[3, 4, 5]], attrs={"axis": axis}, inits=inits))


def test_gather_runtime_indices():
    idx = np.array([[2, 0], [-1, 1]], np.int64)
    m, feeds = single("Gather", [[3, 4], [2, 2]], attrs={"axis": 0}, x=[rnd(3, 4), idx], dtypes={"x1": TensorProto.INT64})
    check_model(m, feeds)


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
                                "ReduceL1", "ReduceL2", "ReduceLogSumExp"])
@pytest.mark.parametrize("axes,keep", [([1], 1), ([0, 2], 0), (None, 1)])
def test_reduce(op, axes, keep):
    opset = 13
    attrs = {"keepdims": keep}
    inits = []
    if op == "ReduceSum":
        if axes is not None:
            inits = [init("axes", np.array(axes, np.int64))]
    elif axes is not None:
        attrs["axes"] = axes
    check_model(*single(op, [[3, 4, 5]], attrs=attrs, inits=inits, opset=opset), rtol=1e-4, atol=1e-4)


def test_reduce_opset18_axes_input():
    check_model(*single("ReduceMean", [[3, 4, 5]], attrs={"keepdims": 0}, inits=[init("axes", np.array([-1], np.int64))], opset=18))


@pytest.mark.parametrize("op,attrs,inits,opset", [
    ("Reshape", {}, [init("shape", np.array([0, -1], np.int64))], 13),
    ("Flatten", {"axis": 2}, [], 13),
    ("Squeeze", {}, [init("axes", np.array([1], np.int64))], 13),
    ("Unsqueeze", {}, [init("axes", np.array([0, 4], np.int64))], 13),
    ("Squeeze", {"axes": [1]}, [], 11),
])
def test_reshape_like_as_output(op, attrs, inits, opset):
    # a reshape of an input that is a graph output needs a real copy
    check_model(*single(op, [[2, 1, 3, 4]], attrs=attrs, inits=inits, opset=opset))


def test_reshape_alias_between_kernels():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Reshape", ["r", "shape"], ["f"]),
             helper.make_node("Sigmoid", ["f"], ["y"])]
    m = make_model(nodes, [vi("x", [2, 3, 4])], [vi("y", None)], [init("shape", np.array([6, 4], np.int64))])
    res, _ = check_model(m, {"x": rnd(2, 3, 4)})
    assert len(res.plan.calls) == 2    # the reshape is an alias, not a kernel


def test_cast():
    m, feeds = single("Cast", [[3, 4]], attrs={"to": TensorProto.INT32}, x=[rnd(3, 4, lo=-5, hi=5)])
    check_model(m, feeds)


def test_expand():
    check_model(*single("Expand", [[3, 1]], inits=[init("s", np.array([2, 3, 4], np.int64))]))


def test_dequantize_linear_runtime():
    x = RNG.integers(-128, 127, (2, 3, 4)).astype(np.int8)
    inits = [init("s", np.array([0.1, 0.2, 0.3], np.float32)), init("z", np.array([1, -2, 3], np.int8))]
    m, feeds = single("DequantizeLinear", [[2, 3, 4]], attrs={"axis": 1}, inits=inits, x=[x], dtypes={"x0": TensorProto.INT8})
    check_model(m, feeds)


@pytest.mark.parametrize("zp", [np.uint8(128), np.int8(-3)], ids=["uint8", "int8"])
def test_quantize_linear_rounds_ties_to_even(zp):
    """Exact .5 ties round half to even, saturating at the type's range: numpy's rint is the
    independent reference (the fuzzer's QDQ allowance cannot see a rounding-mode bug)."""
    import aot
    scale = np.float32(0.25)
    steps = np.array([-300.5, -129.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 126.5, 127.5, 300.5], np.float32)
    x = (steps * scale).astype(np.float32)          # exact: the scale is a power of two
    m, feeds = single("QuantizeLinear", [[steps.size]], inits=[init("s", scale), init("z", zp)], x=[x])
    info = np.iinfo(zp.dtype)
    want = np.clip(np.rint(steps.astype(np.float64)) + int(zp), info.min, info.max).astype(zp.dtype)
    got = aot.run(aot.compile(m), feeds, sanitize=True)["y0"]
    np.testing.assert_array_equal(got, want)


def test_infer_never_writes_node_attrs():
    """Type inference is read-only: attribute normalisation belongs in canon(), which only the
    importer calls. Scan every `infer` in aot/ops for writes to some `.attrs` (assignment,
    augmented assignment, del, or a mutating dict method)."""
    import ast
    import pathlib

    def is_attrs(t):
        if isinstance(t, (ast.Tuple, ast.List)):
            return any(is_attrs(e) for e in t.elts)
        if isinstance(t, ast.Subscript):
            t = t.value
        return isinstance(t, ast.Attribute) and t.attr == "attrs"

    mutators = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
    ops_dir = pathlib.Path(__file__).resolve().parents[2] / "aot" / "ops"
    files = sorted(ops_dir.glob("*.py"))
    assert files
    bad = []
    for path in files:
        for fn in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name != "infer":
                continue
            for n in ast.walk(fn):
                if isinstance(n, (ast.Assign, ast.Delete)):
                    hit = any(is_attrs(t) for t in n.targets)
                elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                    hit = is_attrs(n.target)
                elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                    hit = n.func.attr in mutators and is_attrs(n.func.value)
                else:
                    hit = False
                if hit:
                    bad.append(f"{path.name}:{n.lineno}: {ast.unparse(n).splitlines()[0]}")
    assert not bad, "infer() writes node attributes (move it to canon()):\n" + "\n".join(bad)
