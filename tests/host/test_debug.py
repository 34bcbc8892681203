"""aot debug: the instrumented build records every kernel's output, and the debugger names the
first kernel whose output diverges from onnxruntime.

The divergent kernel is made by corrupting that kernel's final store in the generated C of the
instrumented MLF (the comparison itself is never touched): the debugger must name exactly that
kernel, the kernels before it must match and the ones after it must diverge."""
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest
from onnx import helper

import aot
from aot.compiler import Options, compile_model
from aot.debug import debug_mlf, instrument
from mlf.writer import reseal, write_tar
from conftest import ROOT, init, make_model, vi

BOARD_TOOLS = ("arm-none-eabi-gcc", "qemu-system-arm")
MISSING = [t for t in BOARD_TOOLS if shutil.which(t) is None]
if MISSING and os.environ.get("AOT_REQUIRE_BOARDS") == "1":
    raise RuntimeError(f"AOT_REQUIRE_BOARDS=1 but {', '.join(MISSING)} not found")

# execution order of the kernels FuseOps makes of the model below (checked by test_all_match)
KERNEL_NODES = [["conv1", "relu1"], ["pool1"], ["conv2", "add"], ["conv3"], ["gemm"], ["softmax"]]


def six_kernel_model():
    """conv -> relu -> pool -> conv -> add (residual from the pool) -> 1x1 conv -> gemm -> softmax."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Add", ["c2", "p1"], ["a"], name="add"),
             helper.make_node("Conv", ["a", "w3"], ["c3"], name="conv3"),
             helper.make_node("Flatten", ["c3"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "wg", "bg"], ["g"], transB=1, name="gemm"),
             helper.make_node("Softmax", ["g"], ["y"], axis=1, name="softmax")]
    inits = [init("w1", rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3),
             init("b1", rng.standard_normal(8).astype(np.float32) * 0.1),
             init("w2", rng.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.2),
             init("w3", rng.standard_normal((4, 8, 1, 1)).astype(np.float32) * 0.3),
             init("wg", rng.standard_normal((10, 4 * 6 * 6)).astype(np.float32) * 0.1),
             init("bg", rng.standard_normal(10).astype(np.float32) * 0.1)]
    m = make_model(nodes, [vi("x", [1, 3, 12, 12])], [vi("y", [1, 10])], inits)
    return m, {"x": rng.standard_normal((1, 3, 12, 12)).astype(np.float32)}


def _members(tar):
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name[2:]: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def corrupt_kernel(tar, kernel, wrong="({v}) * 1.5f + 0.5f"):
    """The instrumented MLF with kernel `kernel`'s last store to its output rewritten: value v
    becomes `wrong` (not a constant shift, which the softmax after the gemm would undo)."""
    files = _members(tar)
    meta = json.loads(files["metadata.json"])
    (mod,) = meta["modules"]
    fname = next(r["function"] for r in meta["modules"][mod]["aot"]["debug_records"] if r["kernel"] == kernel)
    path = f"codegen/host/src/{mod}_lib1.c"
    src = files[path].decode()
    start = src.index(f"int32_t {fname}(")
    end = src.index("\n}\n", start)
    body = src[start:end]
    out = re.match(r"int32_t \w+\(.*?(\w+)\) \{", body).group(1)        # the last parameter is the output
    stores = list(re.finditer(rf"^(\s+{out}\[.*\] = )(.*);$", body, re.M))
    assert stores, f"no store to {out} in {fname}"
    s = stores[-1]
    body = body[:s.start()] + s.group(1) + wrong.format(v=s.group(2)) + ";" + body[s.end():]
    files[path] = (src[:start] + body + src[end:]).encode()
    return reseal(write_tar(files))     # the corruption is the test's own: its digest is recorded


@pytest.fixture(scope="module")
def model():
    m, feeds = six_kernel_model()
    return m, feeds, instrument(m).tar


def _statuses(rep):
    return [r["status"] for r in rep.rows]


def test_instrumented_compile_keeps_the_plan(model, monkeypatch):
    """Same kernels, memory plan and kernel code as the normal compile; only main gains records.
    (The host's channels-last rewrite is the one pass an instrumented build leaves out: its
    kernels' outputs must be onnxruntime's tensors. It is left out of the normal compile here.)"""
    import aot.compiler
    monkeypatch.setattr(aot.compiler, "channels_last", lambda g: (g, 0))
    m, feeds, tar = model
    with pytest.raises(aot.AotError, match="instrumented for aot debug: run it with 'aot debug --mlf'"):
        aot.run(tar, feeds)     # only the debug harness defines the record hook
    normal = compile_model(m.SerializeToString(), Options())
    a, b = _members(normal.tar), _members(tar)
    meta_a = json.loads(a["metadata.json"])["modules"]["default"]["aot"]
    meta_b = json.loads(b["metadata.json"])["modules"]["default"]["aot"]
    for key in ("kernels", "workspace_tensors", "workspace_pools", "inputs", "outputs"):
        assert meta_a[key] == meta_b[key], key
    assert "debug_records" not in meta_a
    lib1_a, lib1_b = a["codegen/host/src/default_lib1.c"].decode(), b["codegen/host/src/default_lib1.c"].decode()
    assert "debug_record" not in lib1_a
    assert lib1_b.count("tvmgen_default_debug_record(") == len(KERNEL_NODES) + 1   # + the declaration
    stripped = re.sub(r"\n#include <stddef.h>\n\n/\* aot debug:[^\n]*\*/\nvoid tvmgen_default_debug_record\([^;]*\);",
                      "", lib1_b)
    assert re.sub(r"\n  tvmgen_default_debug_record\([^;]*\);", "", stripped) == lib1_a
    for f in a:
        if f not in ("metadata.json", "codegen/host/src/default_lib1.c"):
            assert a[f] == b[f], f


def test_all_match_on_host(model):
    m, feeds, tar = model
    rep = debug_mlf(tar, m, feeds)
    assert [[n["name"] for n in r["nodes"]] for r in rep.rows] == KERNEL_NODES
    assert [r["tensor"] for r in rep.rows] == ["r1", "p1", "a", "c3", "g", "y"]
    assert _statuses(rep) == ["ok"] * len(KERNEL_NODES), rep.table()
    assert rep.ok and rep.first_divergent is None and rep.failure is None
    assert all(r["max_abs"] < 1e-4 for r in rep.rows)
    assert "all 6 compared kernel outputs match" in rep.summary()


@pytest.mark.parametrize("kernel", [1, 2, 4])
def test_corrupted_kernel_is_named_on_host(model, kernel):
    m, feeds, tar = model
    rep = debug_mlf(corrupt_kernel(tar, kernel), m, feeds)
    st = _statuses(rep)
    assert st[:kernel] == ["ok"] * kernel, rep.table()
    assert st[kernel:] == ["DIVERGES"] * (len(st) - kernel), rep.table()
    bad = rep.first_divergent
    assert bad["kernel"] == kernel and [n["name"] for n in bad["nodes"]] == KERNEL_NODES[kernel]
    assert bad["max_abs"] > 0.1
    assert not rep.ok
    assert f"first divergent kernel: {kernel} {bad['function']}" in rep.summary()


def test_kernel_that_crashes_is_named_on_host(model):
    """A kernel that faults leaves the records of the kernels before it; it is the one named."""
    m, feeds, tar = model
    rep = debug_mlf(corrupt_kernel(tar, 3, wrong="({v}) + (float)*(volatile int*)0"), m, feeds)
    assert _statuses(rep) == ["ok"] * 3 + ["not recorded"] * 3, rep.table()
    assert rep.first_divergent["kernel"] == 3 and rep.failure and not rep.ok
    assert rep.summary().startswith("first failing kernel: 3 tvmgen_default_fused_conv (nodes conv3 (Conv))")


def test_api_compiles_with_the_given_options(model):
    """aot.debug compiles itself (model name, workspace I/O) and still matches."""
    m, feeds, _ = model
    rep = aot.debug(m, feeds, model_name="net", use_workspace_io=True)
    assert rep.module == "net" and rep.ok, rep.table()
    assert all(r["function"].startswith("tvmgen_net_") for r in rep.rows)


def test_integer_kernels_compare_exactly():
    """int32 kernels are compared exactly: an error of 1 diverges."""
    nodes = [helper.make_node("Mul", ["x", "k"], ["m"], name="mul"),
             helper.make_node("ReduceSum", ["m", "axes"], ["s"], keepdims=1, name="sum")]
    mdl = make_model(nodes, [vi("x", [2, 5], 6)], [vi("s", [2, 1], 6), vi("m", [2, 5], 6)],
                     [init("k", np.int32([3])), init("axes", np.int64([1]))])
    feeds = {"x": np.arange(10, dtype=np.int32).reshape(2, 5) - 4}
    tar = instrument(mdl).tar
    rep = debug_mlf(tar, mdl, feeds)
    assert [r["tensor"] for r in rep.rows] == ["m", "s"] and _statuses(rep) == ["ok", "ok"], rep.table()
    assert all(r["dtype"] == "int32" and r["max_abs"] == 0 for r in rep.rows)
    assert "integers and bool: exact" in rep.table()
    bad = debug_mlf(corrupt_kernel(tar, 1, wrong="({v}) + 1"), mdl, feeds)
    assert _statuses(bad) == ["ok", "DIVERGES"] and bad.first_divergent["max_abs"] == 1, bad.table()


def test_kernel_without_onnx_tensor_has_no_reference():
    """A kernel whose tensor the reference ONNX graph does not compute (as for values the importer
    makes up, e.g. inside an expanded ONNX function) is 'no reference', not a divergence. Here the
    reference model is the same computation with its intermediate tensor renamed."""
    def net(mid):
        nodes = [helper.make_node("Exp", ["x"], [mid], name="exp"),
                 helper.make_node("ReduceMax", [mid], ["r"], axes=[1], keepdims=1, name="max"),
                 helper.make_node("Sub", [mid, "r"], ["y"], name="sub")]
        return make_model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])])
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)}
    tar = instrument(net("e")).tar
    assert _statuses(debug_mlf(tar, net("e"), feeds)) == ["ok"] * 3
    rep = debug_mlf(tar, net("renamed"), feeds)
    assert [r["tensor"] for r in rep.rows] == ["e", "r", "y"]
    assert _statuses(rep) == ["no reference", "ok", "ok"], rep.table()
    assert rep.rows[0]["max_abs"] is None
    assert rep.ok and "all 2 compared kernel outputs match onnxruntime (1 without a reference)" == rep.summary()


def test_cli_exit_codes_and_table(model, tmp_path, capsys):
    from aot.cli import main
    m, feeds, tar = model
    onnx_path, inputs, saved = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "dbg.tar"
    onnx_path.write_bytes(m.SerializeToString())
    np.savez(inputs, **feeds)
    base = ["debug", str(onnx_path), "--inputs", str(inputs)]
    assert main(base + ["--save-mlf", str(saved)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["#", "kernel", "nodes", "fused"]
    assert [ln.split()[-1] for ln in lines[1:7]] == ["ok"] * 6
    assert lines[-1].startswith("all 6 compared kernel outputs match")
    assert saved.read_bytes() == tar          # the instrumented compile is deterministic

    bad = tmp_path / "bad.tar"
    bad.write_bytes(corrupt_kernel(tar, 3))
    assert main(base + ["--mlf", str(bad), "--json"]) == 1
    js = json.loads(capsys.readouterr().out)
    assert js["first_divergent"] == 3 and not js["all_match"]
    assert [k["status"] for k in js["kernels"]] == ["ok"] * 3 + ["DIVERGES"] * 3

    # the real process: exit status 1 and the verdict on the last line
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "aot", *base, "--mlf", str(bad)], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines()[-1].startswith("first divergent kernel: 3 tvmgen_default_fused_conv (nodes conv3")

    normal, other = tmp_path / "normal.tar", tmp_path / "other.tar"
    aot.compile(m.SerializeToString(), str(normal))
    nodes = [helper.make_node("Relu", ["a"], ["b"])]
    other.write_bytes(instrument(make_model(nodes, [vi("a", [2])], [vi("b", [2])])).tar)
    files = _members(tar)
    meta = json.loads(files["metadata.json"])
    del meta["modules"]["default"]["aot"]["debug_records"][2]["shape"]
    files["metadata.json"] = json.dumps(meta).encode()
    malformed = tmp_path / "malformed.tar"
    malformed.write_bytes(write_tar(files))
    np.savez(tmp_path / "wrong.npz", x=np.zeros((1, 3, 4, 4), np.float32))
    cases = [(base + ["--mlf", str(malformed)], "aot.debug_records[2] is malformed"),
             (base + ["--mlf", str(normal)], "not instrumented for aot debug"),
             (base + ["--mlf", str(other)], "was not compiled from this model"),
             (base + ["--board", "qemu-cortex-m99"], "unknown board 'qemu-cortex-m99'"),
             (base + ["--mlf", str(bad), "--model-name", "x"], "drop --model-name"),
             (["debug", str(tmp_path / "m.tflite"), "--inputs", str(inputs)], "m.tflite"),
             (["debug", str(onnx_path), "--inputs", str(tmp_path / "missing.npz")], "cannot read inputs"),
             (["run", str(saved), "--inputs", str(inputs)], "instrumented for aot debug"),
             (["project", str(saved), "--board", "qemu-cortex-m4", "--allow-target-mismatch", "-o", str(tmp_path / "proj")], "instrumented for aot debug"),
             (["debug", str(onnx_path), "--inputs", str(tmp_path / "wrong.npz"), "--save-mlf", str(tmp_path / "o.tar")],
              "input 'x' has shape [1, 3, 4, 4]")]
    for argv, needle in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.splitlines()[-1].startswith("error: ") and needle in err, (argv, err)
    assert not (tmp_path / "o.tar").exists()
    with pytest.raises(SystemExit):
        main(["debug", "--help"])
    assert "0 when every kernel matches, 1 when a kernel diverges" in " ".join(capsys.readouterr().out.split())
