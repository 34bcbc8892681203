"""The Arm micro-kernels' shared parts: the one requantisation matcher
(aot/tir/intrin/requant.py) and the one C emitter of gemmlowp's arithmetic
(aot/tir/intrin/gemmlowp.py).

- the matcher finds the requantisation of every int8 MLPerf Tiny kernel that the Cortex-M rules
  give a requantising micro-kernel, with the zero point and clamp the call passes;
- every form of SaturatingRoundingDoublingHighMul, RoundingDivideByPOT and
  MultiplyByQuantizedMultiplier the emitter writes, compiled by gcc and run on edge values, is
  gemmlowp's arithmetic as written out here in Python (not aot/ops/fixed_point.py's);
- no other module writes that C.
"""
import io
import os
import shutil
import subprocess
import tempfile
import tokenize

import numpy as np
import pytest

from conftest import ROOT, SHARED

MLPERF = os.path.join(SHARED, "models", "mlperf_tiny")
INT8_MODELS = ["keyword_spotting/kws_ref_model.tflite", "visual_wake_words/vww_96_int8.tflite",
               "image_classification/pretrainedResnet_quant.tflite", "anomaly_detection/ad01_int8.tflite"]
TARGETS = ["c -mcpu=cortex-m4", "c -mcpu=cortex-m55"]
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]

# the micro-kernels that take a requantisation: where its zero point and clamp sit in their arguments
ZP_LO_HI = {"dot_s8x4q": slice(-3, None), "dot_s8x4qt": slice(-3, None), "dot_s8xq": slice(-3, None),
            "dot_s8xqt": slice(-3, None), "dw_s8": slice(-3, None), "pw_s8": slice(-3, None),
            "pw_s8t": slice(-3, None), "gconv_q15": slice(8, 11), "gconv_s8": slice(8, 11),
            "dot_s8x4q_g": slice(-3, None), "dot_s8x4qt_g": slice(-3, None), "dw_s8f": slice(-3, None), "dw_s8w": slice(-3, None),
            "pw_s8x2": slice(-3, None), "fc_s8x4": slice(-3, None), "fc_s8x4t": slice(-3, None)}
PER_TENSOR = {"dot_s8x4qt", "dot_s8xqt", "pw_s8t", "dot_s8x4qt_g", "fc_s8x4t"}

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


# -- the matcher -------------------------------------------------------------------------------
def _scheduled_with_requants(monkeypatch, model, target):
    """[(scheduled PrimFunc, [the Requants the matcher returned while the rules scheduled it])] of
    every kernel the Cortex-M rules schedule: the matcher wrapped wherever a module holds it."""
    import sys

    import aot
    from aot.schedules import pipelines
    from aot.tir.intrin import requant
    kernels, found = [], []
    match = requant.match_requant

    def recorded(*args, **kwargs):
        rq = match(*args, **kwargs)
        if rq is not None:
            found.append(rq)
        return rq
    for name, mod in list(sys.modules.items()):
        if name.startswith("aot.") and getattr(mod, "match_requant", None) is match:
            monkeypatch.setattr(mod, "match_requant", recorded)

    def first(func, target):
        found.clear()
        return func

    def last(func, target):
        kernels.append((func, list(found)))
        return func
    probe = [pipelines.step(first, "probe: before the Cortex-M rules")]
    monkeypatch.setitem(pipelines.PIPELINES, "cortex_m", probe + pipelines.PIPELINES["cortex_m"]
                        + [pipelines.step(last, "probe: after them")])
    aot.compile(os.path.join(MLPERF, model), target=target)
    return kernels


def _calls(func):
    from aot.tir.expr import Call, walk
    from aot.tir.stmt import own_exprs, walk_stmts
    return [x for s in walk_stmts(func.body) for e in own_exprs(s) for x in walk(e)
            if isinstance(x, Call) and x.fn in ZP_LO_HI]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", INT8_MODELS)
def test_the_matcher_finds_the_requantisation_the_rules_use(monkeypatch, model, target):
    if not os.path.exists(os.path.join(MLPERF, model)):
        pytest.skip(f"{model} is not in the shared models")
    from aot.tir.expr import Load
    used = 0
    for func, found in _scheduled_with_requants(monkeypatch, model, target):
        calls = _calls(func)
        if not calls:
            continue
        used += 1
        assert found, func.attrs.get("schedule")
        for rq in found:
            assert -128 <= rq.lo <= rq.hi <= 127 and rq.bias.dtype == "int32"
            assert rq.node.dtype == "int8" and isinstance(rq.acc, Load)
            assert rq.per_channel == isinstance(rq.mult, Load) == isinstance(rq.shift, Load)
        for call in calls:
            got = [int(a.value) for a in call.args[ZP_LO_HI[call.fn]]]
            assert any(got == [rq.zp, rq.lo, rq.hi] and rq.per_channel == (call.fn not in PER_TENSOR)
                       for rq in found), (call.fn, got, found)
    assert used, "no kernel of the model took a requantising micro-kernel"


def test_the_matcher_refuses_what_is_not_the_requantisation():
    from aot.ops.fixed_point import mbqm, srdhm
    from aot.tir.expr import Bin, Cast, Const, Load, max_, min_
    from aot.tir.intrin.requant import match_requant, rescale_parts
    from aot.tir.stmt import Buffer
    acc = Buffer("acc", "int32", (1,), "local")
    bias, mult, shift = (Buffer(n, "int32", (8,)) for n in ("bias", "mult", "shift"))
    c = Const(3, "int32")
    a, b, m, s = Load(acc, (Const(0, "int32"),)), Load(bias, (c,)), Load(mult, (c,)), Load(shift, (c,))

    def requant(x, zp=5, lo=-128, hi=127):
        return Cast("int8", min_(max_(x + Const(zp, "int32"), Const(lo, "int32")), Const(hi, "int32")))
    rq = match_requant(requant(mbqm(a + b, m, s)), acc)
    assert rq is not None and rq.per_channel and (rq.zp, rq.lo, rq.hi) == (5, -128, 127) and rq.zp_added
    assert rq.parts() == (rq.bias, rq.mult, rq.shift, 5, -128, 127)
    rq = match_requant(requant(mbqm(a + b, 1 << 30, -3)), acc)
    assert rq is not None and not rq.per_channel and (rq.mult, rq.shift) == (1 << 30, -3)
    rq = match_requant(requant(mbqm(a + b, 1 << 30, 2)), acc)
    assert rq is not None and (rq.mult, rq.shift) == (1 << 30, 2)
    # another accumulator, the bias not added, a left factor not a power of two: not it
    other = Buffer("other", "int32", (1,), "local")
    assert match_requant(requant(mbqm(a + b, m, s)), other) is None
    assert match_requant(requant(mbqm(a, m, s)), acc) is None
    assert match_requant(requant(srdhm((a + b) * Const(3, "int32"), 1 << 30)), acc) is None
    assert match_requant(Cast("int16", requant(mbqm(a + b, m, s)).a), acc) is None
    assert rescale_parts(Bin("+", a, b)) is None


# -- the emitter, run -------------------------------------------------------------------------
def _srdhm_ref(a, b):
    """gemmlowp's SaturatingRoundingDoublingHighMul, as its source writes it."""
    if a == b == I32_MIN:
        return I32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    q = abs(ab + nudge) // (1 << 31)           # C's division truncates toward zero
    return q if ab + nudge >= 0 else -q


def _rdbpot_ref(x, e):
    """gemmlowp's RoundingDivideByPOT."""
    mask = (1 << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if remainder > threshold else 0)


def _wrap32(v):
    return (v + (1 << 31)) % (1 << 32) - (1 << 31)


def _mbqm_ref(x, m, shift):
    """TFLite's MultiplyByQuantizedMultiplier (the left shift wrapping, as the kernels' C does)."""
    left, right = max(shift, 0), max(-shift, 0)
    return _rdbpot_ref(_srdhm_ref(_wrap32(x << left), m), right)


EDGES = [I32_MIN, I32_MIN + 1, -(1 << 30) - 1, -(1 << 30), -65537, -256, -3, -2, -1, 0, 1, 2, 3, 255,
         65536, (1 << 30) - 1, 1 << 30, I32_MAX - 1, I32_MAX]


def _values(n=200, seed=0):
    rng = np.random.default_rng(seed)
    return EDGES + [int(v) for v in rng.integers(I32_MIN, I32_MAX, n, endpoint=True)]


def _c_program():
    """A C program applying each emitted form to the (op, a, b) triples on its stdin."""
    from aot.tir.intrin import gemmlowp as fx
    ind = lambda lines: "\n".join("  " + x for x in lines)     # noqa: E731
    parts = [
        "#include <stdint.h>", "#include <stdio.h>",
        # the statement forms (dot_s8x4q, gconv, add_s8q)
        "static int32_t srdhm_lines(int32_t x, int32_t m) {", "  int64_t ab;", ind(fx.srdhm_lines("x", "m")),
        "  return x;", "}",
        "static int32_t rdbpot_lines(int32_t x, int32_t e) {", "  int32_t mask;", ind(fx.rdbpot_lines("x", "e")),
        "  return x;", "}",
        "static int32_t mbqm_lines(int32_t x, int32_t mult, int32_t shift) {", "  int64_t ab;", "  int32_t e, mask;",
        ind(fx.mbqm_lines("x", "mult", "shift")), "  return x;", "}",
        # pw_s8's forms: both operands tested, the product of an unwidened multiplier
        "static int32_t srdhm_both(int32_t r, int32_t m) {",
        f"  return {fx.srdhm('r', 'm', fx.high_mul(fx.product('r', 'm', widen_b=False)), both_min=True)};", "}",
        "static int32_t rdbpot_thr(int32_t r, int32_t e) {",
        f"  int32_t mask = {fx.low_mask('e')};", "  int32_t thr = mask >> 1;",
        f"  return {fx.rdbpot('r', 'e', fx.round_threshold('r', 'thr', sign_shift=True))};", "}",
        # dw_s8's forms: the literals, over two lines; the bit below the shift
        "static int32_t srdhm_literal(int32_t x, int32_t m) {",
        f"  return {fx.srdhm('x', 'm', fx.high_mul(fx.product('x', 'm')), fx.INT32_LITERALS, sep=chr(10) + ' ' * 12 + ': ')};",
        "}",
        "static int32_t rdbpot_bit(int32_t q, int32_t e) {", ind(fx.rdbpot_bit_lines("q", "y", "e")),
        "  return q;", "}",
        # dw_s8's DSP form: no branch (rdbpot over every shift 0..31 with the sign word telling
        # a shift from none; the whole MBQM)
        "static int32_t rdbpot_flat(int32_t q, int32_t e) {", "  int32_t sh = -e;",
        ind(fx.rdbpot_flat_lines("q", "e", "sh")), "  return q;", "}",
        "static int32_t mbqm_flat(int32_t x, int32_t mult, int32_t shift) {",
        ind(fx.mbqm_flat_lines("x", "mult", "shift", "q", fx.INT32_LITERALS)), "  return q;", "}",
        # pw_s8's DSP forms: the rounding shift by halving (keep and r1 from the shift e as the
        # kernel derives them from MBQM's), the whole MBQM with it
        "static int32_t rdbpot_halving(int32_t q, int32_t e) {",
        "  int32_t keep = e > 0 ? -1 : 0, r1 = e > 0 ? e - 1 : 0;",
        ind(fx.rdbpot_halving_lines("q", "r1", "keep")), "  return q;", "}",
        "static int32_t mbqm_halving(int32_t x, int32_t mult, int32_t shift) {",
        ind(fx.mbqm_halving_lines("x", "mult", "shift", "q", fx.INT32_LITERALS)), "  return q;", "}",
        # the renderer's helpers
        "static int32_t srdhm_helper(int32_t a, int32_t b) {",
        f"  int64_t ab = {fx.product('a', 'b')};",
        f"  return {fx.srdhm('a', 'b', fx.high_mul('ab'), fx.INT32_LITERALS)};", "}",
        "static int32_t rdbpot_helper(int32_t a, int32_t b) {",
        f"  int32_t mask = {fx.low_mask('b', one='(uint32_t)1')};",
        f"  int32_t threshold = {fx.round_threshold('a')};", f"  return {fx.rdbpot('a', 'b', 'threshold')};", "}",
        "int main(void) {",
        "  long op, a, b;",
        "  while (scanf(\"%ld %ld %ld\", &op, &a, &b) == 3) {",
        "    int32_t x = (int32_t)a, y = (int32_t)b, r = 0;",
        "    switch (op) {",
    ]
    names = ["srdhm_lines", "rdbpot_lines", "srdhm_both", "rdbpot_thr", "srdhm_literal",
             "rdbpot_bit", "srdhm_helper", "rdbpot_helper", "rdbpot_flat", "rdbpot_halving"]
    parts += [f"      case {k}: r = {n}(x, y); break;" for k, n in enumerate(names)]
    # mbqm takes three operands: op 164 + its shift (mbqm_flat: 264, mbqm_halving: 364 + its
    # shift), the multiplier in a, x in b
    parts += ["      default:", "        if (op < 100) {", "          return 1;", "        }",
              "        r = op >= 300 ? mbqm_halving(y, x, (int32_t)(op - 364))",
              "            : op >= 200 ? mbqm_flat(y, x, (int32_t)(op - 264)) : mbqm_lines(y, x, (int32_t)(op - 164));",
              "    }",
              "    printf(\"%ld\\n\", (long)r);", "  }", "  return 0;", "}"]
    return "\n".join(parts) + "\n", names


@pytest.fixture(scope="module")
def emitted(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    src, names = _c_program()
    d = tmp_path_factory.mktemp("gemmlowp")
    (d / "f.c").write_text(src)
    cmd = ["gcc", *STRICT, "-O2", "-fsanitize=undefined", "-fno-sanitize-recover", str(d / "f.c"), "-o", str(d / "f")]
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode and "sanitize" in got.stderr:
        cmd = [c for c in cmd if "sanitize" not in c]
        got = subprocess.run(cmd, capture_output=True, text=True)
    assert got.returncode == 0, got.stderr

    def run(triples):
        out = subprocess.run([str(d / "f")], input="".join(f"{o} {a} {b}\n" for o, a, b in triples),
                             capture_output=True, text=True, check=True)
        return [int(v) for v in out.stdout.split()]
    return {n: k for k, n in enumerate(names)}, run


def _check(emitted, form, cases, ref):
    ops, run = emitted
    got = run([(ops[form], a, b) for a, b in cases])
    want = [ref(a, b) for a, b in cases]
    bad = [(a, b, g, w) for (a, b), g, w in zip(cases, got, want) if g != w]
    assert not bad, f"{form}: (a, b, got, want) {bad[:5]}"


def _filter_program(params, body):
    """A C program applying the int32 function of `params` whose lines `body` leave its value in
    q to each line of its input (the parameters' values), printing one value a line."""
    args = ", ".join(f"int32_t {p}" for p in params)
    return "\n".join(["#include <stdint.h>", "#include <stdio.h>", f"static int32_t f({args}) {{",
                      *["  " + y for y in body], "  return q;", "}", "int main(void) {",
                      "  long v[%d];" % len(params),
                      '  while (scanf("%s", %s) == %d) {' % (" ".join(["%ld"] * len(params)),
                                                             ", ".join(f"&v[{k}]" for k in range(len(params))),
                                                             len(params)),
                      '    printf("%%ld\\n", (long)f(%s));' % ", ".join(f"(int32_t)v[{k}]" for k in range(len(params))),
                      "  }", "  return 0;", "}"]) + "\n"


def _run_c(src, stdin):
    """The stdout of C program src (built by gcc with STRICT, -O2 and UBSan where it links) fed stdin."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "f.c"), "w") as f:
            f.write(src)
        cmd = ["gcc", *STRICT, "-O2", "-fsanitize=undefined", "-fno-sanitize-recover", os.path.join(d, "f.c"),
               "-o", os.path.join(d, "f")]
        got = subprocess.run(cmd, capture_output=True, text=True)
        if got.returncode and "sanitize" in got.stderr:
            got = subprocess.run([c for c in cmd if "sanitize" not in c], capture_output=True, text=True)
        assert got.returncode == 0, got.stderr
        return subprocess.run([os.path.join(d, "f")], input=stdin, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("form", ["srdhm_lines", "srdhm_both", "srdhm_literal", "srdhm_helper"])
def test_the_emitted_rounding_multiply_is_gemmlowps(emitted, form):
    vs = _values(60)
    _check(emitted, form, [(a, b) for a in vs for b in vs], _srdhm_ref)


@pytest.mark.parametrize("form", ["rdbpot_lines", "rdbpot_thr", "rdbpot_helper"])
def test_the_emitted_rounding_shift_is_gemmlowps(emitted, form):
    _check(emitted, form, [(x, e) for x in _values() for e in range(32)], _rdbpot_ref)


def test_the_bit_form_of_the_rounding_shift_is_gemmlowps(emitted):
    # dw_s8's: a shift of 1..31 of a value above INT32_MIN (a product's high word, |x m| < 2^62)
    _check(emitted, "rdbpot_bit", [(x, e) for x in _values() if x != I32_MIN for e in range(1, 32)], _rdbpot_ref)


def test_the_flat_form_of_the_rounding_shift_is_gemmlowps(emitted):
    # dw_s8's DSP form: every shift 0..31 (0: no rounding at all), no mask; x above INT32_MIN
    _check(emitted, "rdbpot_flat", [(x, e) for x in _values() if x != I32_MIN for e in range(32)], _rdbpot_ref)


def test_the_halving_form_of_the_rounding_shift_is_gemmlowps(emitted):
    # pw_s8's DSP form: every shift 0..31, four operations; x above INT32_MIN
    _check(emitted, "rdbpot_halving", [(x, e) for x in _values() if x != I32_MIN for e in range(32)], _rdbpot_ref)


def test_smmulr_of_the_doubled_value_is_the_rounding_multiply_within_its_bound():
    """mbqm_doubled_lines' identity, on which pw_s8's fast path rests: for x in [-2^30, 2^30) and
    every int32 m, Arm's SMMULR of 2x and m (the high word of 2 x m + 2^31) is gemmlowp's
    SaturatingRoundingDoublingHighMul(x, m). SMMULR's definition (Armv7-M ARM) written in Python,
    checked against the reference on random and edge values."""
    rng = np.random.default_rng(11)
    xs = [-(1 << 30) + 1, -65537, -1, 0, 1, 65535, (1 << 30) - 1] + \
        [int(v) for v in rng.integers(-(1 << 30), 1 << 30, 400)]
    ms = [I32_MIN, I32_MIN + 1, -1, 0, 1, 1 << 30, I32_MAX] + [int(v) for v in rng.integers(I32_MIN, I32_MAX, 60)]
    for x in xs:
        for m in ms:
            smmulr = ((2 * x) * m + (1 << 31)) >> 32
            assert smmulr == _srdhm_ref(x, m), (x, m)


@pytest.mark.parametrize("base", [164, 264, 364], ids=["lines", "flat", "halving"])
def test_the_emitted_requantisation_is_tflites(emitted, base):
    ops, run = emitted
    xs, ms = _values(40, seed=1), [I32_MIN, -(1 << 30), 1, 1 << 30, 1518500250, I32_MAX] + _values(10, seed=2)
    cases = [(x, m, s) for x in xs for m in ms for s in range(-31, 31)]
    got = run([(base + s, m, x) for x, m, s in cases])
    bad = [(c, g) for c, g in zip(cases, got) if g != _mbqm_ref(*c)]
    assert not bad, bad[:5]


def test_the_flat_requantisation_is_the_numpy_reference():
    """mbqm_flat_lines against aot/ops/fixed_point.py's mbqm_np (TFLite's arithmetic written from its
    definitions) on random and edge accumulators, multipliers and every shift of the contract
    (aot/ops/quant_rules.py: -31..30), where the left shift keeps x in int32 as the contract asks."""
    from aot.ops.fixed_point import mbqm_np
    from aot.ops.quant_rules import MAX_SHIFT
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    rng = np.random.default_rng(7)
    xs = EDGES + [int(v) for v in rng.integers(I32_MIN, I32_MAX, 60, endpoint=True)] + \
        [int(v) for v in rng.integers(-(1 << 20), 1 << 20, 60)]
    ms = [I32_MIN, -(1 << 30), 0, 1, 1 << 30, (1 << 31) - 1, 1518500250] + \
        [int(v) for v in rng.integers(1 << 30, 1 << 31, 20)]
    cases = [(x, m, s) for x in xs for m in ms for s in range(-31, MAX_SHIFT + 1)
             if I32_MIN <= x * (1 << max(s, 0)) <= I32_MAX]
    from aot.tir.intrin import gemmlowp as fx
    src = _filter_program(["x", "mult", "shift"], fx.mbqm_flat_lines("x", "mult", "shift", "q", fx.INT32_LITERALS))
    out = _run_c(src, "".join(f"{x} {m} {s}\n" for x, m, s in cases))
    got = np.array([int(v) for v in out.split()], np.int64)
    x, m, s = (np.array(v, np.int64) for v in zip(*cases))
    want = mbqm_np(x, m, s)
    bad = np.nonzero(got != want)[0]
    assert not len(bad), [(cases[i], int(got[i]), int(want[i])) for i in bad[:5]]


def _folded_cases(seed=5):
    """(x, m, shift, zp) inside mbqm_folded_lines' conditions, as folded_requant checks them: edge
    and random accumulators in (-2^30, 2^30), multipliers 0 and [2^30, 2^31), every right shift
    1..31 and zero points across int8 (and beyond: the form does not need them in int8)."""
    from aot.tir.intrin.gemmlowp import folded_requant
    rng = np.random.default_rng(seed)
    xs = [-(1 << 30) + 1, -65537, -4097, -4096, -2049, -2048, -3, -2, -1, 0, 1, 2, 3, 2047, 2048,
          4096, (1 << 30) - 1] + [int(v) for v in rng.integers(-(1 << 30) + 1, 1 << 30, 40)] + \
        [int(v) for v in rng.integers(-5000, 5000, 40)]
    ms = [0, 1 << 30, 1518500250, I32_MAX] + [int(v) for v in rng.integers(1 << 30, 1 << 31, 8)]
    cases = []
    for s in range(-31, 0):
        for zp in (-128, -1, 0, 5, 127, -1000):
            for m in ms:
                fast, c, e = folded_requant([0], [m], [s], zp, [max(abs(v) for v in xs)])
                if fast:
                    cases += [(x, m, s, zp, int(c[0])) for x in xs]
    return cases


def test_the_folded_requantisation_is_tflites():
    """mbqm_folded_lines (pw_s8's table form) in its portable spelling (SMMLAR's definition in
    int64), compiled with UBSan, against TFLite's MBQM plus the zero point written here, on
    every case folded_requant accepts; the board tests run the SMMLAR spelling."""
    from aot.tir.intrin import gemmlowp as fx
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    cases = _folded_cases()
    assert len(cases) > 10000
    src = _filter_program(["x", "m", "c", "e"], fx.mbqm_folded_lines("x", "m", "c", "e", "q", asm=False))
    got = [int(v) for v in _run_c(src, "".join(f"{x} {m} {c} {-s}\n" for x, m, s, zp, c in cases)).split()]
    bad = [(cs, g) for cs, g in zip(cases, got) if g != _mbqm_ref(cs[0], cs[1], cs[2]) + cs[3]]
    assert not bad, bad[:5]


def test_folded_requant_refuses_what_the_form_cannot_hold():
    """The exact form is kept (fast False, the shifts as they were) for a left shift or none, a
    negative multiplier, an accumulator bound of 2^30 or more, and a zero point whose folded
    constant leaves int32's room."""
    from aot.tir.intrin.gemmlowp import folded_requant
    ok = ([100], [1 << 30], [-7], 3, [1000])
    assert folded_requant(*ok)[0]
    fast, c, e = folded_requant(*ok)
    assert (int(c[0]), int(e[0])) == ((1 << 6) + 3 * (1 << 7), 7)
    for bias, m, s, zp, bound in [([100], [1 << 30], [0], 3, [1000]), ([100], [1 << 30], [2], 3, [1000]),
                                  ([100], [-5], [-7], 3, [1000]), ([1 << 29], [1 << 30], [-7], 3, [1 << 29]),
                                  ([0], [1 << 30], [-24], 127, [10])]:
        fast, c, e = folded_requant(bias, m, s, zp, bound)
        assert not fast and list(e) == s and not c.any(), (bias, m, s, zp, bound)


def test_folded_requant_per_channel_folds_each_channel_that_holds():
    """per_channel (dw3_s8r's table): the channels that meet the form get their c and e, the others
    c = 0 and their shift as it is; the whole-table form refuses the same channels all together."""
    from aot.tir.intrin.gemmlowp import folded_requant
    bias, m, s, bound = [100, 100, 100, 0], [1 << 30, 1 << 30, -5, 1 << 30], [-7, 2, -7, -24], [1000] * 4
    fast, c, e = folded_requant(bias, m, s, 3, bound, per_channel=True)
    assert fast and [int(x) for x in e] == [7, 2, -7, 24]
    assert [int(x) for x in c] == [(1 << 6) + 3 * (1 << 7), 0, 0, (1 << 23) + 3 * (1 << 24)]
    fast, c, e = folded_requant(bias, m, s, 3, bound)
    assert not fast and list(e) == s and not c.any()
    assert not folded_requant([100], [1 << 30], [2], 3, [1000], per_channel=True)[0]


# -- one copy ---------------------------------------------------------------------------------
# fragments only gemmlowp's arithmetic writes: the nudge, the remainder test, the Helium
# rounding multiply and rounding shift, the SMMLAR rounding multiply
ROUNDING = ("<< 30))", "& mask)", "vqrdmulhq_", "vrshlq_", '"smmlar ')


def _c_text(path):
    """The strings of a Python module (its C text, docstrings too); a C file's whole text."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    if not path.endswith(".py"):
        return src
    return "\n".join(t.string for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.STRING)


def test_no_second_copy_of_the_rounding_c():
    emitter = os.path.join(ROOT, "aot", "tir", "intrin", "gemmlowp.py")
    copies = []
    for top in ("aot", "codegen_c", "runtime_c"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                path = os.path.join(d, f)
                if f.endswith((".py", ".c", ".h", ".j2")) and path != emitter:
                    text = _c_text(path)
                    copies += [(os.path.relpath(path, ROOT), frag) for frag in ROUNDING if frag in text]
    assert not copies, copies
    assert all(frag in _c_text(emitter) for frag in ROUNDING)
