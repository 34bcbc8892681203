"""The TFLite frontend: .tflite files -> the graph IR, NHWC kept, compared with TensorFlow Lite
Micro (the tflite-micro wheel) as the oracle.

- the MLPerf Tiny float models match TFLM to float tolerance;
- small models built here (tests/tflite_build.py, no TensorFlow) for each supported op;
- malformed files are refused: exit 2, the element at fault named, no traceback, no output.
"""
import os

import numpy as np
import pytest

from conftest import ROOT, ort_run  # noqa: F401
from test_cli_errors import assert_user_error, run_cli
from tflite_build import ModelBuilder, truncated
from tflm_oracle import run_tflm, tflm_available

MODELS = os.path.join(os.path.dirname(ROOT), "shared", "models", "mlperf_tiny")
FLOAT_MODELS = ["anomaly_detection/ad01_fp32.tflite", "keyword_spotting/kws_ref_model_fp32_savedmodel.tflite",
                "visual_wake_words/vww_96_float.tflite", "image_classification/pretrainedResnet.tflite"]
tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")


def _read(rel):
    with open(os.path.join(MODELS, rel), "rb") as f:
        return f.read()


def _compile_run(data, inputs):
    import aot
    res = aot.compile(data)
    outs = aot.run(res, {v.name: x for v, x in zip(res.graph.inputs, inputs)}, sanitize=True)
    return res, [outs[name] for name in res.graph.output_names]


# -- malformed files -----------------------------------------------------------------------------
def _small():
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 4, 4, 2], "float32")
    w = mb.tensor("w", [3, 1, 1, 2], "float32", data=np.ones((3, 1, 1, 2), np.float32))
    y = mb.tensor("y", [1, 4, 4, 3], "float32")
    mb.op("CONV_2D", [x, w, None], [y], padding="VALID", stride_w=1, stride_h=1)
    return mb, x, y


def test_malformed_tflite_files_are_refused_by_name(tmp_path):
    mb, x, y = _small()
    good = mb.finish(inputs=[x], outputs=[y])
    out = str(tmp_path / "m.tar")
    cases = {
        "truncated.tflite": (truncated(good, len(good) // 2), ["malformed TFLite file", "truncated"]),
        "magic.tflite": (good[:4] + b"XXXX" + good[8:], ["not a TFLite file", "file identifier"]),
        "tiny.tflite": (good[:6], ["not a TFLite file", "too short"]),
    }
    bad = ModelBuilder()
    bx = bad.tensor("x", [1, 4], "float32")
    bw = bad.tensor("w", [2, 4], "float32", data=np.ones((2, 4), np.float32), buffer=999)
    by = bad.tensor("y", [1, 2], "float32")
    bad.op("FULLY_CONNECTED", [bx, bw, None], [by])
    cases["buffer.tflite"] = (bad.finish(inputs=[bx], outputs=[by]), ["tensor 1 'w'", "names buffer 999"])
    short = ModelBuilder()
    sx = short.tensor("x", [1, 4], "float32")
    sw = short.tensor("w", [2, 4], "float32", data=np.ones(5, np.float32).tobytes())
    sy = short.tensor("y", [1, 2], "float32")
    short.op("FULLY_CONNECTED", [sx, sw, None], [sy])
    cases["size.tflite"] = (short.finish(inputs=[sx], outputs=[sy]), ["tensor 1 'w'", "holds 20 bytes", "needs 32"])
    noq = ModelBuilder()
    qx = noq.tensor("x", [1, 4], "int8", scale=0.1, zero_point=0)
    qw = noq.tensor("w", [2, 4], "int8", data=np.ones((2, 4), np.int8), scale=0.1, zero_point=0)
    qy = noq.tensor("y", [1, 2], "int8")                    # no quantisation parameters
    noq.op("FULLY_CONNECTED", [qx, qw, None], [qy])
    cases["noquant.tflite"] = (noq.finish(inputs=[qx], outputs=[qy]),
                               ["operator 0 (FULLY_CONNECTED)", "tensor 2 'y'", "without quantisation parameters"])
    for name, (data, needles) in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        assert_user_error(run_cli("compile", str(p), "-o", out), out, *needles)


def test_unsupported_tflite_ops_are_listed_at_once(tmp_path):
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 8], "float32")
    a = mb.tensor("a", [1, 8], "float32")
    b = mb.tensor("b", [1, 8], "float32")
    y = mb.tensor("y", [1, 8], "float32")
    mb.op("FLOOR", [x], [a])
    mb.op("RELU", [a], [b])
    mb.op("CUMSUM", [b, mb.tensor("axis", [], "int32", data=np.int32(1))], [y])
    p = tmp_path / "m.tflite"
    p.write_bytes(mb.finish(inputs=[x], outputs=[y]))
    out = str(tmp_path / "m.tar")
    assert_user_error(run_cli("compile", str(p), "-o", out), out, "operator 0 (FLOOR)", "operator 2 (CUMSUM)",
                      "2 unsupported")


# -- every op, one small model each, against TFLM ----------------------------------------------------
def _op_cases():
    from test_tflite_build import CASES
    return CASES


@tflm
@pytest.mark.parametrize("name", sorted(_op_cases()))
def test_float_op_matches_tflm(name):
    import aot
    from test_tflite_build import build
    case = _op_cases()[name]
    model, feeds, _, _ = build(case, "float32")
    refs = run_tflm(model, feeds)
    res = aot.compile(model)
    assert not any(n.op == "Transpose" for n in res.graph.nodes) or case.op in ("TRANSPOSE", "BATCH_MATMUL")
    outs = aot.run(res, {v.name: x for v, x in zip(res.graph.inputs, feeds)})
    for out_name, ref in zip(res.graph.output_names, refs):
        got = outs[out_name]
        assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, got.dtype, ref.shape, ref.dtype)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(ref).max())))


@pytest.mark.parametrize("name", sorted(__import__("test_tflite_build").CASES_WITHOUT_TFLM))
def test_float_op_without_a_tflm_kernel_matches_numpy(name):
    """RELU_N1_TO_1 and REDUCE_PROD convert (full TFLite has them) but TFLite Micro has no kernel to
    compare with: their numpy reference is the oracle."""
    import aot
    from test_tflite_build import CASES_WITHOUT_TFLM, build
    model, feeds, refs, _ = build(CASES_WITHOUT_TFLM[name], "float32")
    res = aot.compile(model)
    outs = aot.run(res, {v.name: x for v, x in zip(res.graph.inputs, feeds)}, sanitize=True)
    for out_name, ref in zip(res.graph.output_names, refs):
        np.testing.assert_allclose(outs[out_name], ref, rtol=1e-5, atol=1e-6)


# -- int8: bit for bit with TFLM -----------------------------------------------------------------------
INT8_MODELS = ["anomaly_detection/ad01_int8.tflite", "keyword_spotting/kws_ref_model.tflite",
               "visual_wake_words/vww_96_int8.tflite", "image_classification/pretrainedResnet_quant.tflite"]


def _real_inputs(rel, x):
    """The real inputs shipped with the models, as the model's int8 input."""
    if "kws" in rel:
        return [np.load(os.path.join(MODELS, "keyword_spotting/inputs/kws_input_int8_1x49x10x1.npy"))
                .astype(np.int8).reshape(x.type.shape)]
    if "ad01" in rel:
        frames = np.fromfile(os.path.join(MODELS, "anomaly_detection/inputs/normal_id_01_00000000_hist_librosa.bin"),
                             "<f4")
        windows = [frames[k * 128:k * 128 + 640] for k in range(0, 196, 20)]       # 10 of the 196 windows
        return [np.clip(np.round(w / 0.391015232) + 89, -128, 127).astype(np.int8).reshape(x.type.shape)
                for w in windows]
    return []


_REFS = {}


def _int8_cases(rel, x):
    """100 random inputs and the real ones, with TFLM's outputs (computed once per model and shared
    by the host and board tests)."""
    if rel not in _REFS:
        rng = np.random.default_rng(13)
        feeds = [rng.integers(-128, 128, x.type.shape).astype(np.int8) for _ in range(100)] + _real_inputs(rel, x)
        data = _read(rel)
        _REFS[rel] = [(feed, run_tflm(data, [feed])[0]) for feed in feeds]
    return _REFS[rel]


def _int8_supported():
    from aot.frontend.tflite_ops import INT8_OPS
    return INT8_OPS


@tflm
@pytest.mark.parametrize("name", sorted(n for n, c in _op_cases().items() if c.int8))
def test_int8_op_is_bit_exact_with_tflm_or_refused_by_name(name):
    import aot
    from aot.errors import AotError
    from test_tflite_build import build
    case = _op_cases()[name]
    model, feeds, _, _ = build(case, "int8")
    if case.op not in _int8_supported():
        with pytest.raises(AotError, match=f"operator 0 \\({case.op}\\): (the integer \\(int8\\) kernel of )?"
                                           f"(operator )?{case.op} is not supported"):
            aot.compile(model)
        return
    refs = run_tflm(model, feeds)
    res = aot.compile(model)
    assert not any(n.op in ("QuantizeLinear", "DequantizeLinear") or n.outputs[0].type.dtype == "float32"
                   for n in res.graph.nodes)                   # integer-only
    for trial in range(3):
        if trial:
            rng = np.random.default_rng(trial)
            feeds = [rng.integers(-128, 128, f.shape).astype(np.int8) for f in feeds]
            refs = run_tflm(model, feeds)
        outs = aot.run(res, {v.name: f for v, f in zip(res.graph.inputs, feeds)}, sanitize=trial == 0)
        for out_name, ref in zip(res.graph.output_names, refs):
            np.testing.assert_array_equal(outs[out_name], ref, err_msg=f"trial {trial}")


@tflm
def test_quantize_requantize_dequantize_are_bit_exact_with_tflm():
    """A float model boundary: float -> QUANTIZE -> int8 -> QUANTIZE (requantise) -> DEQUANTIZE -> float,
    with values on rounding ties (half away from zero, as TFLite rounds)."""
    import aot
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-4, 4, 60), (np.arange(-10, 10) + 0.5) * 0.05]).astype(np.float32).reshape(2, 40)
    mb = ModelBuilder()
    xf = mb.tensor("x", x.shape, "float32")
    q1 = mb.tensor("q1", x.shape, "int8", scale=0.05, zero_point=3)
    q2 = mb.tensor("q2", x.shape, "int8", scale=0.07, zero_point=-9)
    y = mb.tensor("y", x.shape, "float32")
    mb.op("QUANTIZE", [xf], [q1])
    mb.op("QUANTIZE", [q1], [q2])
    mb.op("DEQUANTIZE", [q2], [y])
    model = mb.finish(inputs=[xf], outputs=[q1, q2, y])
    refs = run_tflm(model, [x])
    res = aot.compile(model)
    assert {n.op for n in res.graph.nodes} == {"QQuantize", "DequantizeLinear"}
    outs = aot.run(res, {res.graph.inputs[0].name: x}, sanitize=True)
    for name, ref in zip(res.graph.output_names, refs):
        np.testing.assert_array_equal(outs[name], ref, err_msg=name)


# every int8 input value, several input quantisations: each table entry (aot/ops/qlut.py) checked
TABLE_CASES = [("LOGISTIC", (1 / 256, -128), {}), ("TANH", (1 / 128, 0), {}), ("RELU", (0.03, -128), {}),
               ("RELU6", None, {}), ("LEAKY_RELU", (0.04, 10), {"alpha": 0.2}), ("HARD_SWISH", (0.03, -50), {}),
               ("HARD_SWISH", (0.3, 7), {})]


@tflm
@pytest.mark.parametrize("op,out_q,opts", TABLE_CASES, ids=[f"{c[0]}-{k}" for k, c in enumerate(TABLE_CASES)])
def test_int8_activation_tables_are_bit_exact_with_tflm(op, out_q, opts):
    """The int8 activations are 256-entry tables computed at compile time: all 256 inputs, with input
    scales on both sides of the kernels' internal thresholds (hard-swish's reluish shift changes sign
    near 0.0117; logistic and tanh saturate at a radius that depends on the scale)."""
    import aot
    feed = np.arange(-128, 128, dtype=np.int8)
    for in_q in [(0.05, 3), (0.0313, -20), (0.1, 0), (0.01, 100), (0.25, -128)]:
        mb = ModelBuilder()
        x = mb.tensor("x", [256], "int8", scale=in_q[0], zero_point=in_q[1])
        q = out_q or in_q
        y = mb.tensor("y", [256], "int8", scale=q[0], zero_point=q[1])
        mb.op(op, [x], [y], **opts)
        model = mb.finish(inputs=[x], outputs=[y])
        ref = run_tflm(model, [feed])[0]
        res = aot.compile(model)
        assert [n.op for n in res.graph.nodes] == ["QLookup"]
        out = aot.run(res, {res.graph.inputs[0].name: feed}, sanitize=in_q[0] == 0.05)[res.graph.output_names[0]]
        np.testing.assert_array_equal(out, ref, err_msg=f"{op} input quantisation {in_q}")


@tflm
def test_int16_kernels_are_refused_by_name():
    import aot
    from aot.errors import AotError
    mb = ModelBuilder()
    x = mb.tensor("x", [4], "int16", scale=1 / 4096, zero_point=0)
    y = mb.tensor("y", [4], "int16", scale=1 / 32768, zero_point=0)
    mb.op("HARD_SWISH", [x], [y])
    with pytest.raises(AotError, match=r"operator 0 \(HARD_SWISH\): the int16 \(int16x8\) kernel of HARD_SWISH is "
                                       "not supported yet"):
        aot.compile(mb.finish(inputs=[x], outputs=[y]))
