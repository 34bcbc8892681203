"""Memory planning: the workspace size is exact (every byte inside is touched by some kernel
run, no byte outside ever is), the planner's invariants hold, and its report is consistent."""
import os
import subprocess
import tempfile

import numpy as np
import onnx
import pytest

from conftest import SHARED

LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def _run_with_workspace_bytes(tar, feeds, nbytes):
    """Build with ASan and a workspace array of `nbytes`; returns (exit code, stderr)."""
    from aot.host import build_host
    from mlf import read_mlf
    info = read_mlf(tar).aot
    exe = build_host(tar, sanitize=True, extra_cflags=[f"-DTVMGEN_DEFAULT_WORKSPACE_BYTES={nbytes}"])
    with tempfile.TemporaryDirectory() as d:
        args = []
        for k, t in enumerate(info["inputs"]):
            p = os.path.join(d, f"in{k}.bin")
            np.ascontiguousarray(feeds[t["name"]]).tofile(p)
            args.append(p)
        args += [os.path.join(d, f"out{k}.bin") for k in range(len(info["outputs"]))]
        r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=1200)
    return r.returncode, r.stderr


def _check_exact(model_bytes, feeds):
    import aot
    res = aot.compile(model_bytes)
    size = res.plan.workspace_size
    assert size > 0
    rc, err = _run_with_workspace_bytes(res.tar, feeds, size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, size - 1)
    assert rc != 0 and "global-buffer-overflow" in err, "a workspace one byte smaller went unnoticed"
    return res


def _small_models():
    from test_c_client import small_cnn
    yield "small_cnn", small_cnn(), {"x": np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)}


@pytest.mark.parametrize("name,model,feeds", list(_small_models()))
def test_workspace_is_exact_small(name, model, feeds):
    _check_exact(model.SerializeToString(), feeds)


def _light(name):
    m = onnx.load(os.path.join(LIGHT_DIR, f"light_{name}.onnx"))
    inits = {i.name for i in m.graph.initializer}
    x = [i for i in m.graph.input if i.name not in inits][0]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    return m, {x.name: np.random.default_rng(0).uniform(0, 1, shape).astype(np.float32)}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["inception_v1", "densenet121", "squeezenet"])
def test_workspace_is_exact_light_models(name):
    m, feeds = _light(name)
    _check_exact(m.SerializeToString(), feeds)


@pytest.mark.slow
@pytest.mark.parametrize("rel", ["keyword_spotting/kws_ref_model_fp32_savedmodel.onnx",
                                 "image_classification/pretrainedResnet.onnx"])
def test_workspace_is_exact_mlperf(rel):
    m, feeds = _mlperf(rel, lambda rng, shape: rng.standard_normal(shape))
    _check_exact(m.SerializeToString(), feeds)


def _mlperf(rel, draw):
    """An MLPerf Tiny model (read in place) and random feeds for its input."""
    path = os.path.join(SHARED, "models", "mlperf_tiny", rel)
    if not os.path.exists(path):
        pytest.skip("MLPerf Tiny models not present")
    m = onnx.load(path)
    x = m.graph.input[0]
    shape = [d.dim_value for d in x.type.tensor_type.shape.dim]
    return m, {x.name: draw(np.random.default_rng(0), shape).astype(np.float32)}


def test_planner_invariants_and_bound():
    from aot.memory_plan import Buf, lower_bound, plan, verify
    rng = np.random.default_rng(5)
    for trial in range(30):
        bufs = []
        for k in range(int(rng.integers(2, 25))):
            s = int(rng.integers(0, 20))
            bufs.append(Buf(k, int(rng.integers(1, 5000)), s, s + int(rng.integers(0, 6))))
        total = plan(bufs, align=16)
        verify(bufs, total, 16)
        lb = lower_bound(bufs)
        assert total >= lb
        assert plan(list(bufs), align=16) == total          # deterministic
    # buffers with disjoint lifetimes share memory; overlapping ones cannot
    a, b, c = Buf("a", 100, 0, 1), Buf("b", 100, 2, 3), Buf("c", 50, 1, 2)
    assert plan([a, b, c]) == 100 + 50 + 12   # c sits between a/b's reuse, after 16-byte alignment


def test_verifier_rejects_out_of_bounds():
    from aot.tir.expr import Var
    from aot.tir.stmt import Buffer, For, PrimFunc, Store
    from aot.tir.verify import AccessError, verify_accesses
    from aot.tir.expr import Load
    i = Var("i")
    src, dst = Buffer("src", "float32", (8,)), Buffer("dst", "float32", (8,))
    ok = PrimFunc("ok", [src, dst], For(i, 0, 8, Store(dst, i, Load(src, i))), 1)
    assert verify_accesses(ok).checked == 2
    bad = PrimFunc("bad", [src, dst], For(i, 0, 8, Store(dst, i, Load(src, i + 1))), 1)
    with pytest.raises(AccessError, match="src"):
        verify_accesses(bad)


WS_IO_CLIENT = r"""
#include <stdio.h>
#include <string.h>
#include "tvmgen_default.h"
#include "input_data.h"
int main(void) {
  struct tvmgen_default_inputs in = tvmgen_default_map_inputs();
  struct tvmgen_default_outputs out = tvmgen_default_map_outputs();
  struct tvmgen_default_outputs wrong;
  float elsewhere[10];
  size_t i;
  memcpy(in.x, input_data, sizeof input_data);
  wrong.y = elsewhere;
  if (tvmgen_default_run(&in, &wrong) != -1) return 3;      /* foreign pointers are refused */
  if (tvmgen_default_run(&in, &out) != 0) return 1;
  for (i = 0; i < 10; ++i) printf("%.9g\n", (double)((const float*)out.y)[i]);
  return 0;
}
"""


@pytest.mark.parametrize("extra", [["-O2"], ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                                              "-DTVMGEN_DEFAULT_WORKSPACE_ATTRIBUTE=__attribute__((aligned(16)))"]])
def test_workspace_io_client(tmp_path, extra):
    import aot
    from conftest import ort_run
    from test_c_client import build, extract, small_cnn
    m = small_cnn()
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    res = aot.compile(m.SerializeToString(), use_workspace_io=True)
    plain = aot.compile(m.SerializeToString())
    assert res.plan.workspace_size < plain.plan.workspace_size + 3 * 16 * 16 * 4 + 40   # the input's bytes are reused
    extract(res.tar, tmp_path / "mlf")
    (tmp_path / "input_data.h").write_text("static const float input_data[] = {" + ", ".join(f"{v:.9g}" for v in x.ravel()) + "};\n")
    (tmp_path / "client.c").write_text(WS_IO_CLIENT)
    got = build("gcc", str(tmp_path), [str(tmp_path / "mlf")], extra)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})["y"].ravel(), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("rel", ["anomaly_detection/ad01_fp32.onnx", "visual_wake_words/vww_96_float.onnx"])
def test_workspace_io_mlperf(rel):
    import aot
    from conftest import ort_run
    m, feeds = _mlperf(rel, lambda rng, shape: rng.uniform(0, 1, shape))
    res = _check_exact_io(m.SerializeToString(), feeds)
    out = aot.run(res, feeds)
    for k, r in ort_run(m, feeds).items():
        np.testing.assert_allclose(out[k], r, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(r).max())))


def _check_exact_io(model_bytes, feeds):
    import aot
    res = aot.compile(model_bytes, use_workspace_io=True)
    size = res.plan.workspace_size
    rc, err = _run_with_workspace_bytes(res.tar, feeds, size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, size - 1)
    assert rc != 0 and "global-buffer-overflow" in err
    return res
