"""The fuzzer's kernel-by-kernel oracle (tests/fuzz/local.py) must be able to say 'wrong': a kernel
whose output is corrupted is named, and its two allowances (QuantizeLinear rounding ties, exact
Resize-nearest coordinates) are checked against onnxruntime and the ONNX reference themselves."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # tests/: the fuzz package

from fuzz import local  # noqa: E402
from fuzz.oracle import load_case  # noqa: E402
from fuzz.run import run_case  # noqa: E402

REGRESSIONS = os.path.join(os.path.dirname(__file__), "..", "fuzz", "regressions")
QDQ_TIE = os.path.join(REGRESSIONS, "oracle_QuantizeLinear_Resize_s8019.onnx")
RESIZE_EXACT = os.path.join(REGRESSIONS, "oracle_Resize_s2678.onnx")


def _resize_node(ctm, nearest_mode, scales=None, sizes=None):
    from onnx import helper
    ins = ["x", "", "s"] if sizes is None else ["x", "", "", "sz"]
    return helper.make_node("Resize", ins, ["y"], mode="nearest", coordinate_transformation_mode=ctm,
                            nearest_mode=nearest_mode)


def _resize_case(ctm, nearest_mode, n, scale):
    from onnx import helper
    x = np.arange(2 * n, dtype=np.float32).reshape(1, 2, n)
    if scale is None:           # sizes: 2n + 1
        node = _resize_node(ctm, nearest_mode, sizes=True)
        ins = {"x": x, "sz": np.array([1, 2, 2 * n + 1], np.int64)}
    else:
        node = _resize_node(ctm, nearest_mode)
        ins = {"x": x, "s": np.array([1, 1, scale], np.float32)}
    model = helper.make_model(helper.make_graph([node], "g", [], []), opset_imports=[helper.make_opsetid("", 19)])
    return node, ins, model


CTMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


@pytest.mark.parametrize("ctm", CTMS)
@pytest.mark.parametrize("nearest_mode", NEAREST)
def test_exact_resize_nearest_agrees_with_an_oracle(ctm, nearest_mode):
    """The exact formula picks what onnxruntime or the ONNX reference picks, on every length and
    scale the generator uses, but for the one case both round off (next test)."""
    from onnx.reference import ReferenceEvaluator
    checked = 0
    for n in (1, 2, 3, 5, 7, 11):
        for scale in (0.5, 0.6, 0.75, 1.0, 1.5, 1.7, 2.0, 2.5, 3.0, None):
            if scale is not None and int(np.floor(n * np.float32(scale))) == 0:
                continue
            if (ctm, nearest_mode, n, scale) == ("half_pixel_symmetric", "floor", 11, 0.5):
                continue
            node, ins, model = _resize_case(ctm, nearest_mode, n, scale)
            got = local.exact_resize_nearest(node, ins)
            ort = local.run_node_ort(node, ins, model)["y"]
            ref = ReferenceEvaluator(local.single_node_model(node, ins, model)).run(None, ins)[0]
            assert np.array_equal(got, ort) or np.array_equal(got, ref), (n, scale, got[0, 0], ort[0, 0], ref[0, 0])
            checked += 1
    assert checked > 50


def test_exact_resize_nearest_where_both_oracles_round_off():
    """half_pixel_symmetric, 11 -> 5 (scale 0.5): offset = 5.5 * (1 - 5 / 5.5) = 1/2, so the source
    coordinate of output o is exactly 2o + 1. onnxruntime's float32 floors output 0 to pixel 0 and
    the reference's float64 output 1 to pixel 2."""
    node, ins, model = _resize_case("half_pixel_symmetric", "floor", 11, 0.5)
    got = local.exact_resize_nearest(node, ins)
    np.testing.assert_array_equal(got, ins["x"][:, :, [1, 3, 5, 7, 9]])


def test_quantize_allowance():
    """One step either way only where onnxruntime's float input is within RTIE of a .5 boundary."""
    from onnx import helper
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"])
    scale = np.float32(0.25)
    x = np.array([12.5 * 0.25 * (1 + 2e-7), 12.3 * 0.25, -3.5 * 0.25 * (1 - 1e-7), 2.5 * 0.25], np.float32)
    ins = {"x": x, "s": scale, "z": np.uint8(128)}
    ort = np.array([141, 140, 125, 130], np.uint8)         # round half to even, + 128
    assert local.quantize_allowance(node, ins, ort, ort) == (0, 0)
    assert local.quantize_allowance(node, ins, ort, np.array([140, 140, 124, 130], np.uint8)) == (2, 0)
    assert local.quantize_allowance(node, ins, ort, np.array([141, 141, 125, 130], np.uint8)) == (0, 1)
    assert local.quantize_allowance(node, ins, ort, np.array([142, 140, 125, 130], np.uint8)) == (0, 1)
    # an exact tie is within the allowance: rounding half to even is held exactly by the ONNX
    # node tests and tests/host/test_ops.py::test_quantize_linear_rounds_ties_to_even, not by the fuzzer
    assert local.quantize_allowance(node, ins, ort, np.array([141, 140, 125, 131], np.uint8)) == (1, 0)


def test_quantize_allowance_saturates():
    from onnx import helper
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"])
    ins = {"x": np.array([100.0, -100.0], np.float32), "s": np.float32(0.5), "z": np.int8(0)}
    ort = np.array([127, -128], np.int8)
    assert local.quantize_allowance(node, ins, ort, ort) == (0, 0)
    assert local.quantize_allowance(node, ins, ort, np.array([126, -128], np.int8)) == (0, 1)


def test_regressions_pass_only_through_their_allowance():
    """Seed 8019 (QDQ tie) and seed 2678 (exact Resize coordinate) differ from onnxruntime and pass
    by the kernel-by-kernel oracle, each for its own reason."""
    for path, why in ((QDQ_TIE, "QuantizeLinear rounding tie"), (RESIZE_EXACT, "Resize nearest exact coordinate")):
        model, feeds = load_case(path)
        r = run_case(model, feeds, sanitize=False)
        assert (r.cls, r.reason) == ("pass-by-reference", why), r.detail


@pytest.mark.parametrize("path,corrupt", [
    (QDQ_TIE, "q_q38"),           # the QuantizeLinear kernel, two steps off on one element
    (QDQ_TIE, "t10_f_q35"),       # the Resize kernel, 0.05 off on one element
    (RESIZE_EXACT, "t28"),        # the Resize kernel, 0.05 off on one element
])
def test_local_judge_names_a_corrupted_kernel(monkeypatch, path, corrupt):
    model, feeds = load_case(path)
    real = local.aot_kernel_outputs(model, feeds)
    assert corrupt in real

    def corrupted(model, feeds):
        out = dict(real)
        a = out[corrupt].copy()
        flat = a.reshape(-1)
        flat[5] = flat[5] + (2 if a.dtype.kind in "iu" else 0.05)
        out[corrupt] = a
        return out
    assert local.local_judge(model, feeds, {})[0] == "pass-by-reference"
    monkeypatch.setattr(local, "aot_kernel_outputs", corrupted)
    cls, why = local.local_judge(model, feeds, {})
    assert cls == "wrong" and f"output '{corrupt}'" in why, why


def test_local_judge_keeps_a_float_model_wrong_without_an_allowance(monkeypatch):
    """A float model whose every kernel matches but whose outputs differ is not excused."""
    from onnx import helper
    node, ins, model = _resize_case("asymmetric", "floor", 4, 2.0)
    model.graph.input.extend([helper.make_tensor_value_info("x", 1, [1, 2, 4])])
    model.graph.output.extend([helper.make_tensor_value_info("y", 1, None)])
    monkeypatch.setattr(local, "aot_kernel_outputs", lambda m, f: {})
    feeds = {"x": ins["x"]}
    model.graph.initializer.extend([__import__("onnx").numpy_helper.from_array(ins["s"], "s")])
    y = local.run_node_ort(node, ins, model)["y"]
    cls, why = local.local_judge(model, feeds, {"y": y})
    assert cls == "wrong" and "every kernel matches" in why
    cls, why = local.local_judge(model, feeds, {"y": y + 1})
    assert cls == "wrong" and "output 'y'" in why
