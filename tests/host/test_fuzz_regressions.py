"""Regressions for the wrong answers the differential fuzzer found (shared/fuzz_failures):
every stored model must match onnxruntime, or the ONNX reference where onnxruntime is wrong
(ORACLE below says which and why); plus a small hand-built reproducer per distinct cause
and NaN/inf semantics per op, so the regressions stay even if shared/ changes."""
import glob
import math
import os

import numpy as np
import pytest

from conftest import SHARED, init, make_model, ort_run, vi

FUZZ = os.path.join(SHARED, "fuzz_failures")
MODELS = sorted(glob.glob(os.path.join(FUZZ, "*.onnx")) + glob.glob(os.path.join(FUZZ, "minimal", "*.onnx")))

# Models whose expected outputs do not come from onnxruntime as they are, with the reason.
#   "ref":       onnx.reference.ReferenceEvaluator on the model, the ops in _ort_op run by
#                onnxruntime.
#   "ref_same":  the same, on the model with pooling auto_pad=SAME_* turned into the explicit
#                pads the spec defines (spec_pads): the reference's own SAME pooling is wrong
#                for dilated pools and returns float64 in some others (its MatMul then fails).
# All other models are compared with onnxruntime: there the reference is the one that is off
# (half_pixel_symmetric coordinates computed in float64 land 1 ulp above an integer and
# nearest_mode=ceil jumps a pixel, e.g. minimal/resize_nearest_half_pixel_symmetric_fractional,
# seed349, seed2035, seed2555; ConvTranspose/BatchNormalization as in _ort_op).
# Why onnxruntime is wrong for each cause:
#   RESIZE_AC   Resize coordinate_transformation_mode=align_corners with a fractional output
#               (scale * size not an integer): the ONNX backend test data
#               (test_resize_downsample_scales_{linear,cubic}_align_corners) divide by
#               output_width - 1 with output_width = scale * size, as the reference does;
#               onnxruntime divides by the integer output length - 1 (it excludes those
#               backend tests).
#   RESIZE_ID   Resize whose output length equals the input length while the scale is not 1
#               (e.g. 3 * 1.25 -> 3): onnxruntime copies the input, the spec still maps
#               coordinates through the scale ((x + 0.5) / 1.25 - 0.5 for half_pixel).
#   RESIZE_F32  Resize nearest whose source coordinate is an exact integer (e.g. sizes 13 -> 7,
#               half_pixel: x = 6 for output 3): onnxruntime computes it in float32, gets
#               5.9999995 and floors to 5.
#   POOL_SAME   MaxPool/AveragePool auto_pad=SAME_* with dilation > 1: the spec pads by
#               (out - 1) * stride + (kernel - 1) * dilation + 1 - size; onnxruntime uses the
#               undilated kernel (and so also a smaller output), the reference ignores
#               auto_pad for dilated MaxPool and uses the undilated kernel for AveragePool.
RESIZE_AC, RESIZE_ID, RESIZE_F32, POOL_SAME = "RESIZE_AC", "RESIZE_ID", "RESIZE_F32", "POOL_SAME"
ORACLE = {
    "resize_cubic_align_corners_fractional": ("ref_same", RESIZE_AC),
    "resize_linear_align_corners_fractional": ("ref_same", RESIZE_AC),
    "resize_nearest_align_corners_fractional": ("ref_same", RESIZE_AC),
    "maxpool_same_lower_dilated": ("ref_same", POOL_SAME),
    "averagepool_same_lower_dilated": ("ref_same", POOL_SAME),
    "seed3050": ("ref_same", POOL_SAME + "+" + RESIZE_AC),
    "seed3381": ("ref_same", RESIZE_ID),
    "seed3498": ("ref_same", RESIZE_ID),
    "seed6165": ("ref_same", RESIZE_F32),
    "seed1060": ("ref_same", RESIZE_AC), "seed1184": ("ref", RESIZE_AC),
    "seed1835": ("ref_same", RESIZE_AC), "seed1874": ("ref_same", RESIZE_AC),
    "seed2071": ("ref_same", RESIZE_AC), "seed2486": ("ref_same", RESIZE_AC),
    "seed2517": ("ref_same", RESIZE_AC), "seed2740": ("ref_same", RESIZE_AC),
    "seed361": ("ref_same", RESIZE_AC), "seed4036": ("ref_same", RESIZE_AC),
    "seed4058": ("ref_same", RESIZE_AC), "seed4150": ("ref_same", RESIZE_AC),
    "seed4299": ("ref_same", RESIZE_AC), "seed4343": ("ref_same", RESIZE_AC),
    "seed4504": ("ref_same", RESIZE_AC), "seed4775": ("ref_same", RESIZE_AC),
    "seed530": ("ref_same", RESIZE_AC), "seed5494": ("ref_same", RESIZE_AC),
    "seed5598": ("ref_same", RESIZE_AC), "seed5613": ("ref_same", RESIZE_AC),
    "seed6032": ("ref_same", RESIZE_AC), "seed6137": ("ref_same", RESIZE_AC),
    "seed6296": ("ref_same", RESIZE_AC), "seed6435": ("ref_same", RESIZE_AC),
    "seed6482": ("ref_same", RESIZE_AC), "seed6637": ("ref_same", RESIZE_AC),
    "seed6680": ("ref_same", RESIZE_AC), "seed6772": ("ref_same", RESIZE_AC),
    "seed6810": ("ref_same", RESIZE_AC), "seed6945": ("ref_same", RESIZE_AC),
    "seed7121": ("ref_same", RESIZE_AC), "seed87": ("ref_same", RESIZE_AC),
    "seed870": ("ref_same", RESIZE_AC),
}


def spec_pads(model):
    """The model with pooling auto_pad=SAME_* replaced by the explicit pads the spec defines:
    (out - 1) * stride + (kernel - 1) * dilation + 1 - size, out = ceil(size / stride)."""
    import onnx
    from onnx import helper, shape_inference
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inferred = shape_inference.infer_shapes(m)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(inferred.graph.value_info) + list(inferred.graph.input)}
    for n in m.graph.node:
        a = {x.name: helper.get_attribute_value(x) for x in n.attribute}
        auto = a.get("auto_pad", b"NOTSET").decode()
        if n.op_type not in ("MaxPool", "AveragePool") or auto not in ("SAME_UPPER", "SAME_LOWER"):
            continue
        size = shapes[n.input[0]][2:]
        nsp = len(size)
        k, s, d = a["kernel_shape"], a.get("strides", [1] * nsp), a.get("dilations", [1] * nsp)
        pads = [0] * (2 * nsp)
        for i in range(nsp):
            total = max((math.ceil(size[i] / s[i]) - 1) * s[i] + (k[i] - 1) * d[i] + 1 - size[i], 0)
            small = total // 2
            pads[i], pads[i + nsp] = (small, total - small) if auto == "SAME_UPPER" else (total - small, small)
        keep = [x for x in n.attribute if x.name not in ("auto_pad", "ceil_mode")]
        del n.attribute[:]
        n.attribute.extend(keep + [helper.make_attribute("pads", pads)])
    return m


def _ort_op(op_type, opset):
    """op_type for the reference evaluator, run by onnxruntime, where the reference's own is
    wrong: ConvTranspose fails on grouped or batched inputs ("cannot reshape array") and pads
    negatively for SAME with kernel < stride (see test_conv_transpose_same_kernel_below_stride),
    and
    BatchNormalization-9 uses batch statistics whenever the momentum attribute is present,
    though opsets 9-13 define inference only."""
    from onnx import helper
    from onnx.reference.op_run import OpRun

    def _run(self, *args, **_attrs):
        node = self.onnx_node
        names = [n for n in node.input if n]
        m = make_model([node], [vi(n, list(a.shape)) for n, a in zip(names, args)],
                       [helper.make_empty_tensor_value_info(node.output[0])], opset=opset)
        return (ort_run(m, dict(zip(names, args)))[node.output[0]],)
    return type(op_type, (OpRun,), {"op_domain": "", "_run": _run})


def expected(model, feeds, oracle):
    if oracle is None:
        return ort_run(model, feeds)
    from onnx.reference import ReferenceEvaluator
    m = spec_pads(model) if oracle == "ref_same" else model   # "ref": as it is (seed1184: the
    # reference's MaxPool fails on the explicit pads, "zero-size array to reduction")
    opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    ev = ReferenceEvaluator(m, new_ops=[_ort_op("ConvTranspose", opset), _ort_op("BatchNormalization", opset)])
    return dict(zip([o.name for o in m.graph.output], ev.run(None, feeds)))


def compare(out, ref, rtol=1e-3, atol=1e-4):
    assert set(out) == set(ref)
    for k, r in ref.items():
        r = np.asarray(r)
        assert out[k].shape == r.shape, (k, out[k].shape, r.shape)
        assert out[k].dtype == r.dtype, (k, out[k].dtype, r.dtype)
        np.testing.assert_allclose(out[k], r, rtol=rtol, atol=atol, err_msg=k)


def _id(path):
    return os.path.relpath(path, FUZZ)[:-5]


# ------------------------------------------------------------ one reproducer per cause
def _run(model, feeds):
    import aot
    return aot.run(aot.compile(model.SerializeToString()), feeds, sanitize=True)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("auto", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("k,s,d,group", [(1, 2, 1, 1), (2, 3, 1, 2), (1, 3, 2, 1), (2, 4, 2, 2), (3, 2, 1, 1)])
def test_conv_transpose_same_kernel_below_stride(auto, k, s, d, group):
    """A dilated kernel narrower than the stride would need negative pads to give in * stride:
    the total pad clamps at 0 and the output is (in - 1) * stride + kernel, as onnxruntime and
    ONNX shape inference have it (the reference evaluator pads negatively instead)."""
    from onnx import helper, shape_inference
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], auto_pad=auto, strides=[s, 1], dilations=[d, 1],
                            group=group)
    m = make_model([node], [vi("x", [1, 2, 5, 3])], [vi("y", None)], [init("w", _rand(2, 3, k, 2, seed=1))], opset=17)
    out = _run(m, {"x": _rand(1, 2, 5, 3)})
    compare(out, ort_run(m, {"x": _rand(1, 2, 5, 3)}), rtol=1e-4, atol=1e-5)
    dims = [x.dim_value for x in shape_inference.infer_shapes(m).graph.output[0].type.tensor_type.shape.dim]
    assert list(out["y"].shape) == dims


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("auto", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("n,k,s,d,ceil", [(8, 2, 3, 2, 1), (6, 3, 1, 2, 0), (7, 2, 2, 2, 0), (9, 3, 1, 3, 0)])
def test_pool_same_dilated(op, auto, n, k, s, d, ceil):
    """SAME pads with the dilated kernel extent and gives ceil(in / stride) outputs (spec text
    and ONNX shape inference); compared with the same pool given those pads explicitly."""
    from onnx import helper, shape_inference
    node = helper.make_node(op, ["x"], ["y"], auto_pad=auto, strides=[s, 1], dilations=[d, 2], kernel_shape=[k, 2],
                            ceil_mode=ceil)
    m = make_model([node], [vi("x", [1, 2, n, 6])], [vi("y", None)], opset=19)
    feeds = {"x": _rand(1, 2, n, 6)}
    out = _run(m, feeds)
    compare(out, expected(m, feeds, "ref_same"), rtol=1e-5, atol=1e-6)
    dims = [x.dim_value for x in shape_inference.infer_shapes(m).graph.output[0].type.tensor_type.shape.dim]
    assert list(out["y"].shape) == dims == [1, 2, math.ceil(n / s), 6]


def _resize(I, ctm, mode, scale=None, size=None, nearest="round_prefer_floor", opset=19):
    from onnx import helper
    attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
    if mode == "nearest":
        attrs["nearest_mode"] = nearest
    if size is not None:
        node = helper.make_node("Resize", ["x", "", "", "sz"], ["y"], **attrs)
        inits = [init("sz", np.array([1, 2, size], np.int64))]
    else:
        node = helper.make_node("Resize", ["x", "", "sc"], ["y"], **attrs)
        inits = [init("sc", np.array([1, 1, scale], np.float32))]
    return make_model([node], [vi("x", [1, 2, I])], [vi("y", None)], inits, opset=opset), {"x": _rand(1, 2, I)}


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("I,scale", [(9, 1.5), (11, 0.75), (10, 0.5)])
def test_resize_align_corners_fractional(mode, I, scale):
    """align_corners divides by scale * size - 1 (the ONNX backend test data and the reference;
    onnxruntime uses the integer output length)."""
    m, feeds = _resize(I, "align_corners", mode, scale)
    compare(_run(m, feeds), expected(m, feeds, "ref_same"), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("I,scale,size,ctm,nearest", [
    (7, 1.5, None, "half_pixel_symmetric", "ceil"),    # x = 2o/3: exact integers at o = 0, 3, 6, 9
    (11, 0.5, None, "half_pixel_symmetric", "ceil"),   # x = 2o + 1
    (13, None, 15, "half_pixel", "ceil"),              # x = 6 at o = 7 (scale 15/13 from sizes)
])
def test_resize_nearest_integer_coordinate(I, scale, size, ctm, nearest):
    """Source coordinates that are exact integers must round as integers: computed exactly, as
    onnxruntime does here (the reference's float64 lands 1 ulp above and ceil jumps a pixel)."""
    m, feeds = _resize(I, ctm, "nearest", scale, size, nearest)
    compare(_run(m, feeds), ort_run(m, feeds), rtol=0, atol=0)


def test_resize_nearest_integer_coordinate_float32_in_ort():
    """sizes 13 -> 7 half_pixel: x = (o + 0.5) * 13 / 7 - 0.5 is exactly 6 at o = 3, floor 6;
    onnxruntime's float32 gives 5.9999995 and picks 5, the reference picks 6."""
    m, feeds = _resize(13, "half_pixel", "nearest", size=7, nearest="floor")
    out = _run(m, feeds)
    compare(out, expected(m, feeds, "ref_same"), rtol=0, atol=0)
    np.testing.assert_array_equal(out["y"][0, :, 3], feeds["x"][0, :, 6])


def test_resize_nearest_integer_coordinate_missed_by_both_oracles():
    """11 * 0.75, half_pixel_symmetric, floor (fuzz seed 2678): x = 5.5 * (1 - 8 / 8.25) + (o + 0.5)
    / 0.75 - 0.5 is exactly 3 at o = 2. The reference's float64 gives 2.9999999999999996 and
    onnxruntime's float32 another pixel again, so neither can arbitrate: the expected gather is the
    spec's formula evaluated in exact rationals here."""
    from fractions import Fraction as F
    I, scale = 11, 0.75
    m, feeds = _resize(I, "half_pixel_symmetric", "nearest", scale, nearest="floor")
    O = math.floor(I * scale)
    width = F(scale) * I
    src = [min(max(math.floor(F(I, 2) * (1 - O / width) + (o + F(1, 2)) / F(scale) - F(1, 2)), 0), I - 1)
           for o in range(O)]
    assert src[2] == 3
    np.testing.assert_array_equal(_run(m, feeds)["y"], feeds["x"][:, :, src])


@pytest.mark.parametrize("I,ctm", [(3, "half_pixel"), (2, "pytorch_half_pixel")])
def test_resize_same_length_scale_not_one(I, ctm):
    """floor(I * 1.25) == I, yet the coordinates still go through the scale (onnxruntime
    copies the input instead)."""
    m, feeds = _resize(I, ctm, "linear", 1.25)
    out = _run(m, feeds)
    compare(out, expected(m, feeds, "ref_same"), rtol=1e-5, atol=1e-6)
    assert not np.allclose(out["y"], feeds["x"])


def test_softplus_large_inputs():
    """log(1 + exp(x)) overflowed to inf for x > ~88 (seed4198, seed5713)."""
    from onnx import helper
    x = np.array([-200, -90, -20, -1, 0, 1, 20, 80, 90, 200, 1e30, np.inf, -np.inf, np.nan], np.float32)
    m = make_model([helper.make_node("Softplus", ["x"], ["y"])], [vi("x", [14])], [vi("y", None)])
    out = _run(m, {"x": x})
    compare(out, ort_run(m, {"x": x}), rtol=1e-6, atol=1e-30)


# ------------------------------------------------------------ NaN / inf semantics
SPECIAL = np.array([np.nan, 1.0, -2.0, np.inf, -np.inf, 3.0, 0.0, -0.5], np.float32)
OTHER = np.array([2.0, np.nan, np.nan, 1.0, 5.0, np.inf, -np.inf, np.nan], np.float32)


def _elementwise_cases():
    from onnx import helper
    lo, hi = init("lo", np.float32(0)), init("hi", np.float32(1))
    return {
        "Relu": ([helper.make_node("Relu", ["x"], ["y"])], []),
        "Clip": ([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], [lo, hi]),
        "Clip_min": ([helper.make_node("Clip", ["x", "lo"], ["y"])], [lo]),
        "Clip_max": ([helper.make_node("Clip", ["x", "", "hi"], ["y"])], [hi]),
        "Max": ([helper.make_node("Max", ["x", "z"], ["y"])], []),
        "Min": ([helper.make_node("Min", ["x", "z"], ["y"])], []),
        "Max3": ([helper.make_node("Max", ["z", "x", "z"], ["y"])], []),
        "Min3": ([helper.make_node("Min", ["z", "x", "z"], ["y"])], []),
    }


@pytest.mark.parametrize("case", list(_elementwise_cases()))
def test_nan_inf_elementwise(case):
    """NaN stays NaN through Relu, Clip, Max, Min (onnxruntime), and inf is kept."""
    nodes, inits = _elementwise_cases()[case]
    uses_z = any("z" in n.input for n in nodes)
    ins = [vi("x", [8])] + ([vi("z", [8])] if uses_z else [])
    m = make_model(nodes, ins, [vi("y", None)], inits)
    feeds = {"x": SPECIAL, **({"z": OTHER} if uses_z else {})}
    ref = ort_run(m, feeds)
    out = _run(m, feeds)
    if case in ("Clip_min", "Clip_max"):   # onnxruntime clamps +-inf to +-FLT_MAX when a bound is
        # absent; the spec's function body (Where(Less(x, min), min, x)) and the reference keep it
        ref["y"] = expected(m, feeds, "ref_same")["y"]
    compare(out, ref, rtol=0, atol=0)
    assert np.isnan(out["y"]).sum() == np.isnan(ref["y"]).sum() > 0


def _reduce_model(op, shape, **attrs):
    from onnx import helper
    outs = [vi("y", None, 7 if op.startswith("Arg") else None)] + ([vi("i", None, 7)] if attrs.pop("indices", False) else [])
    node = helper.make_node(op, ["x"], [o.name for o in outs], **attrs)
    return make_model([node], [vi("x", list(shape))], outs, opset=13)


REDUCE_CASES = {
    "ReduceMax": dict(axes=[3], keepdims=0), "ReduceMin": dict(axes=[3], keepdims=0),
    "ReduceMax_all": dict(keepdims=0), "GlobalMaxPool": {}, "MaxPool": dict(kernel_shape=[1, 2], strides=[1, 2]),
    "MaxPool_idx": dict(kernel_shape=[1, 2], strides=[1, 2], indices=True), "ArgMax": dict(axis=3, keepdims=0),
    "ArgMin": dict(axis=3, keepdims=0),
}


def _special_grid():
    x = np.array([[np.inf, 3.0, 1.0, 2.0], [-1.0, 1.0, 5.0, np.inf], [1.0, 7.0, -np.inf, 2.0],
                  [-np.inf, -np.inf, -np.inf, -np.inf]], np.float32)
    return x.reshape(1, 1, 4, 4)


@pytest.mark.parametrize("case", list(REDUCE_CASES))
def test_inf_reductions(case):
    """A max/min over values including +-inf gives the inf (and all -inf gives -inf)."""
    op = case.split("_")[0]
    m = _reduce_model(op, (1, 1, 4, 4), **REDUCE_CASES[case])
    feeds = {"x": _special_grid()}
    ref = ort_run(m, feeds)
    if op == "GlobalMaxPool":  # onnxruntime starts from -FLT_MAX: all -inf gives -FLT_MAX
        ref = expected(m, feeds, "ref_same")
    compare(_run(m, feeds), ref, rtol=0, atol=0)


@pytest.mark.parametrize("case", list(REDUCE_CASES))
def test_nan_reductions(case):
    """A NaN anywhere in a max/min reduction gives NaN (numpy and the reference's np.max);
    onnxruntime's kernels keep or drop it depending on its position, so numpy decides.
    Arg positions point at the first NaN; MaxPool indices must stay inside the input."""
    op = case.split("_")[0]
    attrs = dict(REDUCE_CASES[case])
    m = _reduce_model(op, (1, 1, 4, 4), **attrs)
    x = _special_grid()
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = x[0, 0, 2, 3] = np.nan
    out = _run(m, {"x": x})
    rows = x.reshape(4, 4)
    if op in ("ReduceMax", "ReduceMin", "ArgMax", "ArgMin"):
        f = {"ReduceMax": np.max, "ReduceMin": np.min, "ArgMax": np.argmax, "ArgMin": np.argmin}[op]
        want = f(x) if case == "ReduceMax_all" else f(x, axis=3)
    elif op == "GlobalMaxPool":
        want = np.max(rows).reshape(1, 1, 1, 1)
    else:
        want = rows.reshape(4, 2, 2).max(axis=2).reshape(1, 1, 4, 2)
    np.testing.assert_array_equal(out["y"], np.asarray(want).astype(out["y"].dtype))
    if "i" in out:
        idx = rows.reshape(4, 2, 2)
        first = np.where(np.isnan(idx).any(axis=2), np.isnan(idx).argmax(axis=2), idx.argmax(axis=2))
        want_i = (np.arange(4)[:, None] * 4 + np.arange(2)[None, :] * 2 + first).reshape(1, 1, 4, 2)
        np.testing.assert_array_equal(out["i"], want_i)
