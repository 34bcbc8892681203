"""Cortex-M boards under QEMU: firmware built from the MLF with arm-none-eabi-gcc matches
onnxruntime; sizes, instruction counts and the exported Makefile project work.

CI installs the toolchain and QEMU and sets AOT_REQUIRE_BOARDS=1, so there a missing tool is a
failure, not a skip."""
import os
import shutil
import subprocess

import numpy as np
import pytest
from onnx import helper

from conftest import init, make_model, ort_run, vi

TOOLS = ("arm-none-eabi-gcc", "qemu-system-arm")
MISSING = [t for t in TOOLS if shutil.which(t) is None]
if MISSING and os.environ.get("AOT_REQUIRE_BOARDS") == "1":
    raise RuntimeError(f"AOT_REQUIRE_BOARDS=1 but {', '.join(MISSING)} not found")
pytestmark = [pytest.mark.board,
              pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not installed (CI installs them)")]

MAIN_BOARDS = ["qemu-cortex-m4", "qemu-cortex-m55"]
OTHER_BOARDS = ["qemu-cortex-m3", "qemu-cortex-m7", "qemu-cortex-m33"]


def _mlp():
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Tanh", ["h"], ["t"]),
             helper.make_node("Gemm", ["t", "w2", "b2"], ["l"], transB=1),
             helper.make_node("Softmax", ["l"], ["y"], axis=1)]
    inits = [init("w1", rng.standard_normal((32, 20)).astype(np.float32) * 0.3),
             init("b1", rng.standard_normal(32).astype(np.float32)),
             init("w2", rng.standard_normal((5, 32)).astype(np.float32) * 0.3),
             init("b2", rng.standard_normal(5).astype(np.float32))]
    m = make_model(nodes, [vi("x", [2, 20])], [vi("y", [2, 5])], inits)
    return m, {"x": rng.standard_normal((2, 20)).astype(np.float32)}


def _small_models():
    from test_c_client import small_cnn
    from test_memory import _residual_model, _two_branch_model
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    return {"small_cnn": (small_cnn(), {"x": x}), "residual": _residual_model(), "two_branch": _two_branch_model(),
            "mlp_softmax": _mlp()}


def _check(model, feeds, board, rtol=1e-4, atol=1e-5, **compile_kw):
    import aot
    res = aot.compile(model.SerializeToString(), **compile_kw)
    outs, stats = aot.run(res, feeds, board=board, profile=True)
    for k, r in ort_run(model, feeds).items():
        assert outs[k].shape == r.shape and outs[k].dtype == r.dtype
        np.testing.assert_allclose(outs[k], r, rtol=rtol, atol=atol * max(1.0, float(np.abs(r).max())), err_msg=k)
    assert stats["instructions"] > 0 and stats["stack_bytes"] > 0
    return res, stats


@pytest.mark.parametrize("board", MAIN_BOARDS)
@pytest.mark.parametrize("name", ["small_cnn", "residual", "two_branch", "mlp_softmax"])
def test_small_models(board, name):
    m, feeds = _small_models()[name]
    _check(m, feeds, board)


@pytest.mark.parametrize("board", OTHER_BOARDS)
def test_smoke_other_boards(board):
    m, feeds = _small_models()["small_cnn"]
    _check(m, feeds, board)


@pytest.mark.slow
@pytest.mark.parametrize("board", MAIN_BOARDS)
@pytest.mark.parametrize("rel", ["keyword_spotting/kws_ref_model_fp32_savedmodel.onnx",
                                 "anomaly_detection/ad01_fp32.onnx"])
def test_mlperf_models(board, rel):
    from test_memory import _mlperf
    m, feeds = _mlperf(rel, lambda rng, shape: rng.uniform(0, 1, shape))
    _check(m, feeds, board)


def test_pools_and_workspace_io_on_board():
    m, feeds = _small_models()["residual"]
    _check(m, feeds, "qemu-cortex-m4", use_workspace_io=True)
    _check(m, feeds, "qemu-cortex-m4", workspace_pools=[("sram", 2048), ("ext", None)])


def test_instruction_count_is_repeatable_and_size_adds_up():
    import aot
    from aot.firmware import build_firmware, size_report
    m, feeds = _small_models()["small_cnn"]
    res = aot.compile(m.SerializeToString())
    _, s1 = aot.run(res, feeds, board="qemu-cortex-m4", profile=True)
    _, s2 = aot.run(res, feeds, board="qemu-cortex-m4", profile=True)
    assert s1 == s2
    _, small = aot.run(res, feeds, board="qemu-cortex-m4", profile=True, opt="-Os")
    assert small["instructions"] != s1["instructions"]
    rep = aot.size(res, "qemu-cortex-m4")
    parts = {r["part"]: r for r in rep["rows"]}
    assert parts["workspace"]["ram"] == res.plan.workspace_size
    consts = sum(a.nbytes for _, a in res.plan.constants)
    assert consts <= parts["model constants"]["flash"] < consts + 16 * len(res.plan.constants)
    io_bytes = sum(t.nbytes for _, _, t in res.plan.inputs) + sum(t.nbytes for _, _, t in res.plan.outputs)
    assert io_bytes <= parts["I/O buffers"]["ram"] < io_bytes + 64
    # the stack's RAM is its proven bound, which covers what the run used
    assert parts["model code"]["flash"] > 0 and parts["stack (bound)"]["ram"] >= rep["stack"]["measured"] > 0
    # the map-file split accounts for every allocated byte the ELF's own headers report
    fw = build_firmware(res.tar, "qemu-cortex-m4")
    out = subprocess.run(["arm-none-eabi-size", "-A", fw.elf], capture_output=True, text=True, check=True).stdout
    sec = {ln.split()[0]: int(ln.split()[1]) for ln in out.splitlines()[2:] if ln.strip() and ln.split()[0].startswith(".")}
    alloc = sum(sec.get(k, 0) for k in (".vectors", ".text", ".ARM.exidx", ".rodata", ".data", ".noinit", ".bss"))
    r = size_report(fw)
    assert r["flash"] + r["ram"] - sec.get(".data", 0) <= alloc
    assert alloc - (r["flash"] + r["ram"] - sec.get(".data", 0)) < 256    # only alignment padding is unattributed


def test_generated_code_is_warning_free_for_every_board(tmp_path):
    """-std=c99 -Wall -Wextra -Werror -pedantic with each board's CPU flags, on a model with many op kinds."""
    import aot
    from boards import load_board
    from test_c_client import extract
    m, _ = _small_models()["residual"]
    extract(aot.compile(m.SerializeToString()).tar, tmp_path)
    srcs = sorted((tmp_path / "codegen/host/src").glob("*.c"))
    for board in MAIN_BOARDS + OTHER_BOARDS:
        b = load_board(board)
        for s in srcs:
            subprocess.run(["arm-none-eabi-gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O2",
                            *b["cflags"], "-I", str(tmp_path / "codegen/host/include"), "-c", str(s),
                            "-o", str(tmp_path / "x.o")], check=True, capture_output=True, text=True)


def test_too_big_for_the_board_is_refused():
    import aot
    from aot.errors import AotError
    m = make_model([helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Sigmoid", ["t"], ["y"])],
                   [vi("x", [1, 64, 64, 64])], [vi("y", [1, 64, 64, 64])])
    res = aot.compile(m.SerializeToString())
    with pytest.raises(AotError, match=r"does not fit qemu-cortex-m55: DTCM overflowed by [\d,]+ bytes"):
        aot.run(res, {"x": np.zeros((1, 64, 64, 64), np.float32)}, board="qemu-cortex-m55")


def test_exported_project_builds_and_runs_with_make(tmp_path):
    import aot
    from aot.project import export_project
    m, feeds = _small_models()["small_cnn"]
    res = aot.compile(m.SerializeToString())
    ref = ort_run(m, feeds)
    d = tmp_path / "proj"
    export_project(res.tar, "qemu-cortex-m4", str(d), inputs=feeds, expected=ref)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    subprocess.run(["make", "-C", str(d)], check=True, capture_output=True, text=True, env=env)
    r = subprocess.run(["make", "-C", str(d), "run"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout + r.stderr and "mismatches 0" in r.stdout + r.stderr
    # the check in main.c can fail: a wrong expected output is caught
    bad = {k: v + 1.0 for k, v in ref.items()}
    d2 = tmp_path / "proj_bad"
    export_project(res.tar, "qemu-cortex-m4", str(d2), inputs=feeds, expected=bad)
    subprocess.run(["make", "-C", str(d2)], check=True, capture_output=True, text=True, env=env)
    r = subprocess.run(["make", "-C", str(d2), "run"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode != 0 and "FAIL" in r.stdout + r.stderr


def test_cli_size_run_and_project(tmp_path):
    from test_cli_errors import run_cli
    m, feeds = _small_models()["small_cnn"]
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    np.savez(tmp_path / "in.npz", **feeds)
    tar = str(tmp_path / "m.tar")
    assert run_cli("compile", str(tmp_path / "m.onnx"), "-o", tar).returncode == 0
    r = run_cli("size", tar, "--board", "qemu-cortex-m55", "--allow-target-mismatch")   # a host MLF: warned
    assert r.returncode == 0, r.stderr
    assert "warning: the MLF was built for target 'c' (host), board qemu-cortex-m55 has a cortex-m55" in r.stderr
    assert "model constants" in r.stdout and "stack (bound)" in r.stdout and "stack bound" in r.stdout and "instructions" in r.stdout
    r = run_cli("run", tar, "--board", "qemu-cortex-m4", "--inputs", str(tmp_path / "in.npz"), "--profile",
                "--outputs", str(tmp_path / "out.npz"), "--allow-target-mismatch")
    assert r.returncode == 0, r.stderr
    assert "instructions per inference" in r.stdout
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_allclose(z["y"], ort_run(m, feeds)["y"], rtol=1e-4, atol=1e-5)
    r = run_cli("run", tar, "--board", "qemu-cortex-m99", "--inputs", str(tmp_path / "in.npz"))
    assert r.returncode == 2 and "unknown board 'qemu-cortex-m99'" in r.stderr
    r = run_cli("project", tar, "--board", "qemu-cortex-m4", "--allow-target-mismatch", "-o", str(tmp_path / "p"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p" / "Makefile").exists()
