"""Bad input: one clear message naming the culprit, exit code 2, no traceback, no output file."""
import os
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper

from conftest import ROOT, init, make_model, vi


def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "aot", *args], capture_output=True, text=True, env=env)


def assert_user_error(r, out_path, *needles):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("error: ")
    for n in needles:
        assert n in r.stderr, (n, r.stderr)
    assert not os.path.exists(out_path)
    assert not [f for f in os.listdir(os.path.dirname(out_path)) if ".tmp" in f]


def test_unsupported_ops_listed_at_once(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("NonMaxSuppression", ["a"], ["b"], name="nms_1"),
             helper.make_node("Relu", ["b"], ["c"]),
             helper.make_node("FancyOp", ["c"], ["y"], name="fancy", domain="com.vendor")]
    m = make_model(nodes, [vi("x", [2, 3])], [vi("y", None)])
    p = tmp_path / "m.onnx"
    p.write_bytes(m.SerializeToString())
    out = str(tmp_path / "m.tar")
    r = run_cli("compile", str(p), "-o", out)
    assert_user_error(r, out, "nms_1", "NonMaxSuppression", "fancy", "com.vendor", "2 unsupported")


def test_weights_of_another_dtype_are_a_user_error(tmp_path):
    """float64 weights under a float32 input (ONNX types both as one T): named, not an internal error."""
    for op, w, x in [("Conv", np.ones((4, 3, 3, 3)), [1, 3, 8, 8]), ("MatMul", np.ones((4, 5)), [2, 4]),
                     ("Gemm", np.ones((4, 5)), [2, 4]), ("ConvTranspose", np.ones((3, 4, 3, 3)), [1, 3, 8, 8])]:
        m = make_model([helper.make_node(op, ["x", "w"], ["y"], name=f"{op.lower()}_f64")], [vi("x", x)],
                       [vi("y", None)], [init("w", w)])
        p = tmp_path / f"{op}.onnx"
        p.write_bytes(m.SerializeToString())
        out = str(tmp_path / f"{op}.tar")
        assert_user_error(run_cli("compile", str(p), "-o", out), out, f"{op.lower()}_f64", "float64", "float32")


def test_truncated_model(tmp_path):
    from test_c_client import small_cnn
    data = small_cnn().SerializeToString()
    p = tmp_path / "t.onnx"
    p.write_bytes(data[: len(data) // 2])
    out = str(tmp_path / "t.tar")
    assert_user_error(run_cli("compile", str(p), "-o", out), out, "t.onnx")


def test_not_onnx(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("this is not a model\n" * 20)
    out = str(tmp_path / "n.tar")
    assert_user_error(run_cli("compile", str(p), "-o", out), out, "not a valid ONNX model")
    out2 = str(tmp_path / "missing.tar")
    assert_user_error(run_cli("compile", str(tmp_path / "nope.onnx"), "-o", out2), out2, "nope.onnx")


def symbolic_model():
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])], [vi("y", None)])


def test_missing_input_shape_then_given(tmp_path):
    p = tmp_path / "s.onnx"
    p.write_bytes(symbolic_model().SerializeToString())
    out = str(tmp_path / "s.tar")
    assert_user_error(run_cli("compile", str(p), "-o", out), out, "input 'x'", "'N'", "--input-shape")
    r = run_cli("compile", str(p), "-o", out, "--input-shape", "x=3,4")
    assert r.returncode == 0, r.stderr
    assert os.path.exists(out)
    bad = str(tmp_path / "s2.tar")
    assert_user_error(run_cli("compile", str(p), "-o", bad, "--input-shape", "x=3,5"), bad, "dimension 1 is 4")
    assert_user_error(run_cli("compile", str(p), "-o", bad, "--input-shape", "z=3,4"), bad, "unknown input")


def test_bad_target_and_shape_error(tmp_path):
    from test_c_client import small_cnn
    p = tmp_path / "m.onnx"
    p.write_bytes(small_cnn().SerializeToString())
    out = str(tmp_path / "m.tar")
    assert_user_error(run_cli("compile", str(p), "-o", out, "--target", "rocm"), out, "target kind 'rocm'")
    assert_user_error(run_cli("compile", str(p), "-o", out, "--target", "c -foo=1"), out, "'-foo'", "-mcpu")
    assert_user_error(run_cli("compile", str(p), "-o", out, "--target", "c -mcpu=cortex-m4 -libs=cudnn"), out,
                      "library 'cudnn'")
    assert_user_error(run_cli("compile", str(p), "-o", out, "--board", "qemu-cortex-m4", "--target", "c"), out,
                      "contradicts board 'qemu-cortex-m4'", "c -mcpu=cortex-m4")
    assert_user_error(run_cli("compile", str(p), "-o", out, "--board", "nope"), out, "unknown board 'nope'")
    assert_user_error(run_cli("compile", str(p), "-o", out, "--input-shape", "x"), out,
                      "--input-shape 'x' must look like NAME=D0,D1,...")
    assert_user_error(run_cli("compile", str(p), "-o", out, "--bind-input", "=b.npy"), out,
                      "--bind-input '=b.npy' must look like NAME=FILE.npy")
    # a node whose shapes do not fit names the node and op
    nodes = [helper.make_node("Add", ["x", "b"], ["y"], name="bad_add")]
    m = make_model(nodes, [vi("x", [2, 3])], [vi("y", None)], [init("b", np.zeros(4, np.float32))])
    p2 = tmp_path / "b.onnx"
    p2.write_bytes(m.SerializeToString())
    assert_user_error(run_cli("compile", str(p2), "-o", out), out, "bad_add", "Add", "broadcast")


def test_failed_compile_keeps_existing_output(tmp_path):
    out = tmp_path / "m.tar"
    out.write_bytes(b"previous")
    p = tmp_path / "bad.onnx"
    p.write_bytes(b"\x00\x01garbage")
    r = run_cli("compile", str(p), "-o", str(out))
    assert r.returncode == 2 and out.read_bytes() == b"previous"


def test_run_cli_roundtrip(tmp_path):
    from test_c_client import small_cnn
    p = tmp_path / "m.onnx"
    p.write_bytes(small_cnn().SerializeToString())
    tar = tmp_path / "m.tar"
    assert run_cli("compile", str(p), "-o", str(tar)).returncode == 0
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    r = run_cli("run", str(tar), "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz"))
    assert r.returncode == 0, r.stderr
    from conftest import ort_run
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_allclose(z["y"], ort_run(small_cnn(), {"x": x})["y"], rtol=1e-5, atol=1e-6)
    np.savez(tmp_path / "bad.npz", x=x[:, :2])
    r = run_cli("run", str(tar), "--inputs", str(tmp_path / "bad.npz"))
    assert r.returncode == 2 and "shape" in r.stderr and "Traceback" not in r.stderr


def test_outputs_never_overwrite_an_input(tmp_path):
    """--outputs naming the MLF or the inputs (directly, or through a link), or a directory, is
    refused before anything is written: the files keep their bytes."""
    from test_c_client import small_cnn
    p = tmp_path / "m.onnx"
    p.write_bytes(small_cnn().SerializeToString())
    tar = tmp_path / "m.tar"
    assert run_cli("compile", str(p), "-o", str(tar)).returncode == 0
    np.savez(tmp_path / "in.npz", x=np.zeros((1, 3, 16, 16), np.float32))
    os.symlink(tar, tmp_path / "link.tar")
    (tmp_path / "outdir").mkdir()
    before = {f: (tmp_path / f).read_bytes() for f in ("m.tar", "in.npz")}
    for out, needle in (("m.tar", "is the MLF itself"), ("in.npz", "is the --inputs file itself"),
                        ("link.tar", "is the MLF itself"), ("outdir", "is a directory")):
        r = run_cli("run", str(tar), "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / out))
        assert r.returncode == 2 and r.stderr.startswith("error: ") and needle in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    assert before == {f: (tmp_path / f).read_bytes() for f in ("m.tar", "in.npz")}
    assert os.listdir(tmp_path / "outdir") == []
    r = run_cli("compile", str(p), "-o", str(p))
    assert r.returncode == 2 and "is the input model itself" in r.stderr


def test_compile_into_a_directory_and_version(tmp_path):
    from test_c_client import small_cnn
    p = tmp_path / "net.onnx"
    p.write_bytes(small_cnn().SerializeToString())
    (tmp_path / "out").mkdir()
    r = run_cli("compile", str(p), "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert os.listdir(tmp_path / "out") == ["net.tar"]
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("aot ")
    r = run_cli("--help")
    assert "TFLite" in r.stdout


def _npy_bytes(shape, payload, descr="<f4"):
    header = repr({"descr": descr, "fortran_order": False, "shape": tuple(shape)}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + payload


def test_npz_inputs_are_checked_before_their_data_is_read(tmp_path):
    """An .npy header claiming 4 TiB over 64 bytes, and a zip bomb (about 1 MB inflating to 1 GiB),
    are refused from the header and the zip directory, quickly and without the memory."""
    import time
    import zipfile
    from test_c_client import small_cnn
    p = tmp_path / "m.onnx"
    p.write_bytes(small_cnn().SerializeToString())
    tar = tmp_path / "m.tar"
    assert run_cli("compile", str(p), "-o", str(tar)).returncode == 0
    with zipfile.ZipFile(tmp_path / "huge_header.npz", "w") as z:
        z.writestr("x.npy", _npy_bytes((1 << 40,), b"\0" * 64))
    with zipfile.ZipFile(tmp_path / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("x.npy", "w", force_zip64=True) as f:
            f.write(_npy_bytes((1, 3, 16, 16), b""))
            chunk = b"\0" * (1 << 24)
            for _ in range(64):
                f.write(chunk)
    assert os.path.getsize(tmp_path / "bomb.npz") < 4 << 20
    for name, needle in (("huge_header.npz", "claims shape [1099511627776]"), ("bomb.npz", "declares 1,073,")):
        t0 = time.time()
        r = run_cli("run", str(tar), "--inputs", str(tmp_path / name), "--outputs", str(tmp_path / "o.npz"))
        assert r.returncode == 2 and r.stderr.startswith("error: ") and needle in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and not os.path.exists(tmp_path / "o.npz")
        assert time.time() - t0 < 30


def test_npz_with_a_name_twice_or_a_directory_is_refused(tmp_path):
    """Two members of one name: which array is the input cannot be told (numpy takes the last)."""
    import warnings
    import zipfile
    from test_c_client import small_cnn
    p = tmp_path / "m.onnx"
    p.write_bytes(small_cnn().SerializeToString())
    tar = tmp_path / "m.tar"
    assert run_cli("compile", str(p), "-o", str(tar)).returncode == 0
    x = _npy_bytes((1, 3, 16, 16), b"\0" * (3 * 256 * 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(tmp_path / "twice.npz", "w") as z:
            z.writestr("x.npy", x)
            z.writestr("x.npy", x)
    with zipfile.ZipFile(tmp_path / "dir.npz", "w") as z:
        z.writestr("x.npy/", b"")
    for name, needle in (("twice.npz", "member 'x.npy' appears twice"), ("dir.npz", "is a directory")):
        r = run_cli("run", str(tar), "--inputs", str(tmp_path / name), "--outputs", str(tmp_path / "o.npz"))
        assert r.returncode == 2 and r.stderr.startswith("error: ") and needle in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and not os.path.exists(tmp_path / "o.npz")


KWS = os.path.join(ROOT, "..", "shared", "models", "mlperf_tiny", "keyword_spotting", "kws_ref_model.tflite")


def _retar(src, dst, edit):
    """The MLF `src` extracted, one member edited (edit(path, bytes) -> bytes) and tarred again as
    `tar cf dst ./` does, keeping the './' prefixes."""
    import io
    import tarfile
    with tarfile.open(src) as t, tarfile.open(dst, "w") as out:
        for m in t.getmembers():
            raw = t.extractfile(m).read() if m.isfile() else None
            if raw is not None:
                raw = edit(m.name, raw)
                m.size = len(raw)
            out.addfile(m, io.BytesIO(raw) if raw is not None else None)


def _kws_mlf(tmp_path):
    mlf = str(tmp_path / "kws.tar")
    r = run_cli("compile", KWS, "-o", mlf)
    assert r.returncode == 0, r.stderr
    np.savez(tmp_path / "in.npz", input_1=np.zeros((1, 49, 10, 1), np.int8))
    return mlf


def test_header_workspace_contradicting_metadata_is_refused(tmp_path):
    """Issue 32, class 1: TVMGEN_DEFAULT_WORKSPACE_SIZE edited from 8640 to 16. info said 'valid',
    run segfaulted (an internal error), size reported 1.4e18 instructions."""
    mlf = _kws_mlf(tmp_path)
    bad = str(tmp_path / "ws16.tar")
    _retar(mlf, bad, lambda name, raw: raw.replace(b"WORKSPACE_SIZE 8640", b"WORKSPACE_SIZE 16")
           if name.endswith("tvmgen_default.h") else raw)
    both = ("TVMGEN_DEFAULT_WORKSPACE_SIZE is 16", "workspace_size_bytes is 8640")
    r = run_cli("info", bad)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "valid" not in r.stdout.replace("invalid", "")
    assert all(n in r.stdout for n in both), r.stdout
    out = str(tmp_path / "o.npz")
    r = run_cli("run", bad, "--inputs", str(tmp_path / "in.npz"), "--outputs", out)
    assert_user_error(r, out, "ws16.tar", *both)
    assert len(r.stderr.strip().splitlines()) == 1
    r = run_cli("size", bad, "--board", "qemu-cortex-m4")
    assert r.returncode == 2 and "Traceback" not in r.stderr and all(n in r.stderr for n in both), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not r.stdout


def test_sources_without_lib1_are_refused_before_gcc(tmp_path):
    """Issue 32, class 1: metadata aot.sources without default_lib1.c passed info, then failed in
    gcc as an internal error."""
    import json
    mlf = _kws_mlf(tmp_path)
    bad = str(tmp_path / "nolib1.tar")

    def edit(name, raw):
        if name != "./metadata.json":
            return raw
        meta = json.loads(raw)
        meta["modules"]["default"]["aot"]["sources"].remove("codegen/host/src/default_lib1.c")
        return json.dumps(meta).encode()
    _retar(mlf, bad, edit)
    r = run_cli("info", bad)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "default_lib1.c" in r.stdout, r.stdout
    out = str(tmp_path / "o.npz")
    r = run_cli("run", bad, "--inputs", str(tmp_path / "in.npz"), "--outputs", out)
    assert_user_error(r, out, "./codegen/host/src/default_lib1.c is not listed in metadata aot.sources")
    assert len(r.stderr.strip().splitlines()) == 1
    proj = str(tmp_path / "proj")
    r = run_cli("project", bad, "--board", "qemu-cortex-m4", "-o", proj)
    assert_user_error(r, proj, "default_lib1.c")
