"""Newcomer rough edges of the CLI (issue 32): targets checked against the CPUs and features the
target families know, `aot size` needs its board and explains its options, and an MLF built for
another core than the board's is refused by name (or run with a warning when asked)."""
import os

import numpy as np
import aot  # noqa: F401  (imported at collection: its first import looks for a BLAS with the linker)
import pytest
from onnx import helper

from conftest import make_model, vi
from test_hostile_input import cli, refused


def _relu(tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 4])], [vi("y", None)])
                  .SerializeToString())
    return str(p)


@pytest.mark.parametrize("target,needles", [
    ("c -mcpu=pentium", ["-mcpu=pentium", "cortex-m4", "core-avx2"]),
    ("c -mattr=+evil", ["'+evil'", "dsp", "neon"]),
    ("c -mcpu=cortex-m4 -mattr=+evil", ["'+evil'"]),
    ("llvm -mcpu=pentium", ["-mcpu=pentium", "kind 'llvm'", "skylake-avx512"]),
    ("c -mcpu=cortex-mx", ["-mcpu=cortex-mx"]),
])
def test_unknown_cpu_or_feature_refused(tmp_path, capsys, target, needles):
    out = tmp_path / "m.tar"
    refused(capsys, ["compile", _relu(tmp_path), "-o", str(out), "--target", target], *needles, out_path=out)


def test_empty_target_refused(tmp_path, capsys):
    out = tmp_path / "m.tar"
    refused(capsys, ["compile", _relu(tmp_path), "-o", str(out), "--target", ""], "--target ''", out_path=out)
    refused(capsys, ["compile", _relu(tmp_path), "-o", str(out), "--target", "  "], "--target ''", out_path=out)


@pytest.mark.parametrize("target", [
    # what the repository, its boards and docs, TVM's tutorials and TVM's own tests name
    "c -mcpu=cortex-m0", "c -mcpu=cortex-m0plus", "c -mcpu=cortex-m0+", "c -mcpu=cortex-m3", "c -mcpu=cortex-m4",
    "c -mcpu=cortex-m4+nodsp", "c -mcpu=cortex-m7", "c -mcpu=cortex-m33", "c -mcpu=cortex-m52",
    "c -mcpu=cortex-m55", "c -mcpu=cortex-m85", "c -keys=arm_cpu,cpu,dsp -mattr=+dsp,+mve",
    "llvm -mcpu=core-avx2", "llvm -mcpu=skylake-avx512", "llvm -mcpu=cascadelake", "llvm -mcpu=broadwell",
    "c -mcpu=cortex-a72 -mattr=+neon,+vfp4,+thumb2", "llvm -mattr=+neon,+crc,+lse", "c -mcpu=cortex-a53",
    "c -mcpu=native", "llvm -mcpu=skylake -mattr=+avx2,-avx512f",
    # what TVM's own tests name (513c2be: tests/python, python/tvm)
    "llvm -mcpu=knl", "llvm -mcpu=sapphirerapids", "llvm -mcpu=x86-64-v4", "llvm -mcpu=tremont",
    "llvm -mcpu=bdver4", "llvm -mattr=+v9.2a,+sme", "llvm -mattr=+v8.2a,+dotprod,+i8mm", "llvm -mattr=+sve",
    "llvm -mattr=-f16c,-avx512f", "llvm -mattr=+sse4.1,+avx2", "c -mcpu=cortex-m55 -mattr=+fp,+mve",
    "c -mcpu=sifive-u74",
])
def test_known_cpus_and_features_stay_accepted(target):
    from aot.target import Target
    assert Target(target).short_str() == target     # as written (str() prints it as TVM does: with its keys)


def test_size_needs_a_board_and_explains_its_options(capsys):
    with pytest.raises(SystemExit) as e:
        cli(capsys, "size", "m.tar")
    assert e.value.code == 2
    assert "--board" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli(capsys, "size", "--help")
    text = capsys.readouterr().out.split("positional arguments:")[1]
    for opt in ("model", "--board", "--opt", "--json", "--allow-target-mismatch"):
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(opt))
        rest = text.split(line, 1)[1].splitlines()[1:]
        helped = len(line.split()) > 1 + ("BOARD" in line or "OPT" in line) or (rest and rest[0].startswith(" " * 10))
        assert helped, f"{opt} has no help: {line!r}"


def test_board_target_mismatch_refused_by_name(tmp_path, capsys, monkeypatch):
    tar = tmp_path / "m.tar"
    rc, _, err = cli(capsys, "compile", _relu(tmp_path), "-o", str(tar))
    assert rc == 0, err
    np.savez(tmp_path / "in.npz", x=np.ones((1, 4), np.float32))
    outs = tmp_path / "o.npz"
    refused(capsys, ["run", str(tar), "--inputs", str(tmp_path / "in.npz"), "--board", "qemu-cortex-m4",
                     "--outputs", str(outs)],
            "target 'c' (host)", "board qemu-cortex-m4 has a cortex-m4", "--board qemu-cortex-m4",
            "--target 'c -mcpu=cortex-m4'", "--allow-target-mismatch", out_path=outs)
    refused(capsys, ["size", str(tar), "--board", "qemu-cortex-m55"], "target 'c' (host)",
            "board qemu-cortex-m55 has a cortex-m55", "--target 'c -mcpu=cortex-m55'")
    m4 = tmp_path / "m4.tar"
    rc, _, err = cli(capsys, "compile", _relu(tmp_path), "-o", str(m4), "--board", "qemu-cortex-m4")
    assert rc == 0, err
    refused(capsys, ["size", str(m4), "--board", "qemu-cortex-m55"], "target 'c -mcpu=cortex-m4'",
            "board qemu-cortex-m55 has a cortex-m55")

    # asked for: a warning, then the build goes on (stopped here, where a unit test may not build)
    import aot.firmware as fw

    def stop(*a, **k):
        raise SystemExit(77)
    monkeypatch.setattr(fw, "measure", stop)
    with pytest.raises(SystemExit) as e:
        cli(capsys, "size", str(tar), "--board", "qemu-cortex-m55", "--allow-target-mismatch")
    assert e.value.code == 77
    err = capsys.readouterr().err
    assert err.startswith("warning: the MLF was built for target 'c' (host), board qemu-cortex-m55 has a cortex-m55")
    assert os.path.exists(tar)


def test_debug_on_a_board_compiles_for_its_core(tmp_path, capsys, monkeypatch):
    import sys

    import aot.debug  # noqa: F401
    from aot.host import read_valid_mlf
    mod = sys.modules["aot.debug"]
    seen = []

    def fake_debug(model, inputs, board, options=None, mlf=None, **kw):
        seen.append((board, read_valid_mlf(mlf).aot["target"]["str"]))
        raise SystemExit(77)         # the run itself needs QEMU: tests/board
    monkeypatch.setattr(mod, "debug", fake_debug)
    np.savez(tmp_path / "in.npz", x=np.ones((1, 4), np.float32))
    with pytest.raises(SystemExit):
        cli(capsys, "debug", _relu(tmp_path), "--inputs", str(tmp_path / "in.npz"), "--board", "qemu-cortex-m55")
    assert seen == [("qemu-cortex-m55", "c -mcpu=cortex-m55")]

    # an instrumented MLF given with --mlf is checked against the board like aot run's
    saved = tmp_path / "dbg.tar"
    saved.write_bytes(mod.instrument(_relu(tmp_path)).tar)
    refused(capsys, ["debug", _relu(tmp_path), "--inputs", str(tmp_path / "in.npz"), "--board", "qemu-cortex-m4",
                     "--mlf", str(saved)], "target 'c' (host)", "board qemu-cortex-m4 has a cortex-m4")


@pytest.mark.parametrize("mcpu", ["cortex-m99", "cortex-m5", "cortex-m4plusplus"])
def test_an_arm_m_core_that_does_not_exist_is_refused(mcpu):
    """Only Arm's M-profile cores are M cores: a made-up cortex-m<N> is not compiled as plain C."""
    from aot.target import Target
    from aot.errors import AotError
    with pytest.raises(AotError, match=f"-mcpu={mcpu} is not a CPU aot knows"):
        Target(f"c -mcpu={mcpu}")


@pytest.mark.parametrize("mcpu", ["cortex-m0+", "cortex-m0plus", "cortex-m1", "cortex-m23", "cortex-m52",
                                  "cortex-m4+nodsp", "cortex-m85"])
def test_every_arm_m_core_is_known(mcpu):
    from aot.target import Target
    assert Target(f"c -mcpu={mcpu}").mcpu == mcpu
