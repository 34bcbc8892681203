"""cppcheck and clang-tidy find nothing in the C that aot ships or generates: runtime_c/, the
generated code of every model the suite compiles (tests/model_corpus.py: the op models of
test_ops, template-branch variants, the ONNX light models, every MLPerf Tiny .onnx, float and
QDQ) and the rendered host/firmware/project harnesses. Levels and the reason for every
exception: tests/static/ and docs/static_analysis.md.

CI installs both tools and sets AOT_REQUIRE_STATIC=1, so there a missing tool is a failure,
not a skip."""
import io
import os
import sys
import tarfile
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "static"))
import analyze  # noqa: E402
import model_corpus  # noqa: E402

MISSING = [t for t, path in analyze.tools().items() if path is None]
if MISSING and os.environ.get("AOT_REQUIRE_STATIC") == "1":
    raise RuntimeError(f"AOT_REQUIRE_STATIC=1 but {', '.join(MISSING)} not found")
pytestmark = [pytest.mark.static, pytest.mark.xdist_group("static"),
              pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not installed (CI installs them)")]

RUNTIME_C = os.path.join(ROOT, "runtime_c")
BOARD_COMMON = os.path.join(ROOT, "boards", "cortex_m")


class Compiled:
    """MLFs compiled once per session (in parallel), each extracted under its own folder."""

    def __init__(self, base):
        self.base, self.tars, self.roots = base, {}, {}

    def get(self, cases):
        todo = [c for c in cases if c.name not in self.tars]
        if todo:
            with ProcessPoolExecutor(os.cpu_count() or 2) as pool:
                futs = [(c, pool.submit(model_corpus.compile_case, c.source(), c.options)) for c in todo]
                for c, f in futs:
                    self.tars[c.name] = f.result()
        return {c.name: self.tars[c.name] for c in cases}

    def extracted(self, cases):
        """{name: extracted MLF root} with constant tables elided for the analyzers."""
        out = {}
        for name, tar in self.get(cases).items():
            if name not in self.roots:
                root = os.path.join(self.base, name.replace("/", "__").replace("[", "_").replace("]", ""))
                with tarfile.open(fileobj=io.BytesIO(tar)) as t:
                    t.extractall(root, filter="data")
                self.roots[name] = root
            out[name] = self.roots[name]
        return out


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    return Compiled(str(tmp_path_factory.mktemp("static-mlf")))


def assert_clean(jobs):
    findings = analyze.analyze(jobs)
    text = analyze.report(findings)
    assert not text, f"{sum(len(v) for v in findings.values())} static analysis findings:\n{text}"


def check_models(compiled, cases):
    assert cases
    jobs = []
    for name, root in compiled.extracted(cases).items():
        srcs, incs = analyze.prepare_mlf(root)
        jobs.append((name, srcs, incs, root, ()))
    assert_clean(jobs)


SEEDED = """#include <stdint.h>
static const float table[2] = {
  0.1, 0.2
};
int32_t seeded(const float* restrict p0, float* restrict out) {
  float acc;
  float half = 0.5;
  int32_t i;
  for (i = 0; i < 2; ++i) {
    acc = acc + p0[i] * table[i] * half;
  }
  out[0] = acc;
  return 0;
}
"""


def test_analyzers_see_a_seeded_bug(tmp_path):
    """The driver is no silent pass: each tool reports the uninitialized accumulator and the
    double -> float narrowing, in a table as in a kernel (generated code suffixes float literals)."""
    src = tmp_path / "seeded.c"
    src.write_text(SEEDED)
    found = analyze.analyze([("seeded", [str(src)], [], str(tmp_path), ())])["seeded"]
    assert any(f.startswith("cppcheck seeded.c:10: uninitvar") for f in found), found
    assert any(f.startswith("clang-tidy seeded.c:10: clang-analyzer-core.UndefinedBinaryOperatorResult") for f in found), found
    assert any(f.startswith("clang-tidy seeded.c:7: bugprone-narrowing-conversions") for f in found), found
    assert any(f.startswith("clang-tidy seeded.c:3: bugprone-narrowing-conversions") for f in found), found


def test_runtime_c():
    srcs = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(RUNTIME_C, "src")) for f in fs if f.endswith(".c"))
    inc = os.path.join(RUNTIME_C, "include")
    headers = sorted(os.path.relpath(os.path.join(d, f), inc) for d, _, fs in os.walk(inc) for f in fs if f.endswith(".h"))
    # headers are analyzed through the sources that include them; make sure that is every header
    text = ""
    for p in srcs + [os.path.join(inc, h) for h in headers]:
        with open(p) as f:
            text += f.read()
    assert srcs and headers and [h for h in headers if f"<{h}>" not in text and f'"{h}"' not in text] == []
    assert_clean([("runtime_c", srcs, [inc], ROOT, ())])


def test_op_models(compiled):
    check_models(compiled, model_corpus.op_cases() + model_corpus.option_cases() + model_corpus.debug_cases())


def test_mlperf_tiny_models(compiled):
    cases = model_corpus.mlperf_cases()
    if not cases:
        pytest.skip(f"no models under {model_corpus.MLPERF_DIR}")
    check_models(compiled, cases)


def test_light_models(compiled):
    check_models(compiled, model_corpus.light_cases())


def _render_harnesses(tar, root, out):
    """host main.c, firmware main.c and an exported project's src/ for one MLF, under `out`."""
    from aot.host import harness_params, read_valid_mlf
    from aot.project import export_project
    from codegen_c.emit import render_template
    m = read_valid_mlf(tar)
    params = harness_params(m)
    os.makedirs(out, exist_ok=True)
    host, fw = os.path.join(out, "host_main.c"), os.path.join(out, "firmware_main.c")
    with open(host, "w") as f:
        f.write(render_template("host_main.c.j2", **params))
    with open(fw, "w") as f:
        f.write(render_template("firmware_main.c.j2", **params))
    proj = os.path.join(out, "project")
    rng = np.random.default_rng(0)

    def values(t):     # real float literals in test_data.h, no host run needed
        dt = np.dtype(t["dtype"])
        return rng.standard_normal(t["shape"]).astype(dt) if dt.kind == "f" else np.ones(t["shape"], dt)
    export_project(tar, "qemu-cortex-m4", proj, inputs={t["name"]: values(t) for t in m.aot["inputs"]},
                   expected={t["name"]: values(t) for t in m.aot["outputs"]})
    incs = [os.path.join(root, "codegen", "host", "include"), os.path.join(root, "runtime", "include")]
    return [(host, incs), (fw, incs + [BOARD_COMMON]),
            (os.path.join(proj, "src", "main.c"), incs + [os.path.join(proj, "src"), os.path.join(proj, "board")])]


def test_harnesses(compiled, tmp_path):
    """The harness templates rendered for every branch they have (plain, workspace I/O, user
    pools, a module name, no constants)."""
    cases = model_corpus.option_cases()
    roots = compiled.extracted(cases)
    tars = compiled.get(cases)
    jobs = []
    for c in cases:
        for path, incs in _render_harnesses(tars[c.name], roots[c.name], str(tmp_path / c.name)):
            jobs.append((os.path.relpath(path, str(tmp_path)), [path], incs, str(tmp_path), ()))
    assert_clean(jobs)


def test_partitioned_models_and_their_harnesses(tmp_path):
    """The code plug-in backends bring: external functions, TVM's device API (devices struct,
    hooks, the harnesses' NULL contexts) and the example backends' own sources."""
    import aot
    from test_uma import EXAMPLES, MODELS, backend, conv_model
    cases = {"vanilla": ("vanilla", "vanilla_accelerator, c", conv_model().SerializeToString()),
             "conv_bias_relu": ("conv_bias_relu", "conv_bias_relu, c", conv_model().SerializeToString()),
             "npu_ad": ("npu", "npu, c", os.path.join(MODELS, "anomaly_detection", "ad01_fp32.onnx"))}
    jobs = []
    for name, (example, target, model) in cases.items():
        assert os.path.isdir(os.path.join(EXAMPLES, example))
        backend(example)
        tar = aot.compile(model, target=target).tar
        root = str(tmp_path / name)
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            t.extractall(root, filter="data")
        srcs, incs = analyze.prepare_mlf(root)
        jobs.append((name, srcs, incs, root, ()))
        for path, hincs in _render_harnesses(tar, root, str(tmp_path / "harness" / name)):
            jobs.append((os.path.relpath(path, str(tmp_path)), [path], hincs, str(tmp_path), ()))
    assert_clean(jobs)
