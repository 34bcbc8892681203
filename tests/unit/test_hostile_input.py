"""Hostile input: every bad model, option, MLF or input file is refused with exit 2 and a message
naming the element at fault, without a traceback and without leaving an output file behind;
hostile names that are valid must compile and run correctly (compared with onnxruntime)."""
import io
import json
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import ROOT, init, make_model, vi


# -- helpers ----------------------------------------------------------------------------------
def cli(capsys, *argv):
    from aot.cli import main
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, argv, *needles, out_path=None, stream="err"):
    rc, out, err = cli(capsys, *argv)
    text = err if stream == "err" else out
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    if stream == "err":            # a warning the user asked for (--allow-target-mismatch) may come first
        assert "\n".join(l for l in err.splitlines() if not l.startswith("warning: ")).startswith("error: "), err
    for n in needles:
        assert n in text, (n, text)
    if out_path is not None:
        assert not os.path.exists(out_path), out_path
        leftovers = [f for f in os.listdir(os.path.dirname(str(out_path))) if ".tmp" in f]
        assert not leftovers, leftovers
    return text


def save(tmp_path, model, name="m.onnx"):
    p = tmp_path / name
    p.write_bytes(model if isinstance(model, bytes) else model.SerializeToString())
    return p


def compile_refused(tmp_path, capsys, model, *needles, extra=()):
    p = model if isinstance(model, (str, os.PathLike)) else save(tmp_path, model)
    out = tmp_path / "out.tar"
    return refused(capsys, ["compile", p, "-o", out, *extra], *needles, out_path=out)


def relu_model(in_shape=(2, 3), out_shape=None, **kw):
    return make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", list(in_shape))],
                      [vi("y", out_shape)], **kw)


def add_model():
    nodes = [helper.make_node("Add", ["x", "b"], ["t"], name="add"), helper.make_node("Relu", ["t"], ["y"], name="relu")]
    return make_model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])], [init("b", np.arange(3, dtype=np.float32))])


@pytest.fixture(scope="module")
def mlf_bytes():
    import aot
    return aot.compile(add_model().SerializeToString()).tar


def rebuild_tar(data, edit=None, add=()):
    """A copy of an MLF with metadata.json passed through edit(meta) and extra members added."""
    src = tarfile.open(fileobj=io.BytesIO(data))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as out:
        for m in src.getmembers():
            if m.isfile():
                raw = src.extractfile(m).read()
                if m.name == "./metadata.json" and edit is not None:
                    meta = json.loads(raw)
                    edit(meta)
                    raw = json.dumps(meta).encode()
                m.size = len(raw)
                out.addfile(m, io.BytesIO(raw))
            else:
                out.addfile(m)
        for info, raw in add:
            out.addfile(info, io.BytesIO(raw) if raw is not None else None)
    return buf.getvalue()


def member(name, kind=tarfile.REGTYPE, data=b"", linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, (data if kind == tarfile.REGTYPE else None)


# -- files ------------------------------------------------------------------------------------
def test_empty_random_png_tar_files(tmp_path, capsys):
    rng = np.random.default_rng(1)
    png = b"\x89PNG\r\n\x1a\n" + bytes(rng.integers(0, 256, 200, dtype=np.uint8))
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as t:
        info, raw = member("./a.txt", data=b"hello")
        t.addfile(info, io.BytesIO(raw))
    for name, data in [("empty.onnx", b""), ("random.onnx", bytes(rng.integers(0, 256, 4096, dtype=np.uint8))),
                       ("image.png", png), ("archive.tar", tar.getvalue())]:
        p = tmp_path / name
        p.write_bytes(data)
        compile_refused(tmp_path, capsys, p, name)


def test_truncated_at_many_points(tmp_path, capsys):
    data = add_model().SerializeToString()
    cuts = sorted(set(int(len(data) * f) for f in np.linspace(0.02, 0.98, 10)))
    for cut in cuts:
        p = tmp_path / f"cut{cut}.onnx"
        p.write_bytes(data[:cut])
        compile_refused(tmp_path, capsys, p, f"cut{cut}.onnx")


# -- graph structure ----------------------------------------------------------------------------
def test_cycle_and_dangling_input(tmp_path, capsys):
    cyc = make_model([helper.make_node("Add", ["x", "b"], ["a"], name="first"),
                      helper.make_node("Relu", ["a"], ["b"], name="second")], [vi("x", [2])], [vi("a", [2])])
    compile_refused(tmp_path, capsys, cyc, "cycle", "'b'")
    dangling = make_model([helper.make_node("Add", ["x", "ghost"], ["y"], name="adder")], [vi("x", [2])], [vi("y", [2])])
    compile_refused(tmp_path, capsys, dangling, "adder", "'ghost'", "not produced")


def test_names_defined_twice(tmp_path, capsys):
    """Static single assignment, as onnx.checker and onnxruntime require it."""
    two_writers = make_model([helper.make_node("Relu", ["x"], ["y"], name="one"),
                              helper.make_node("Neg", ["x"], ["y"], name="two")], [vi("x", [2])], [vi("y", [2])])
    compile_refused(tmp_path, capsys, two_writers, "node 'two'", "'y'")
    dup_in = make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2]), vi("x", [2])], [vi("y", [2])])
    compile_refused(tmp_path, capsys, dup_in, "graph input 'x'", "twice")
    shadow = make_model([helper.make_node("Relu", ["x"], ["x"], name="sh")], [vi("x", [2])], [vi("x", [2])])
    compile_refused(tmp_path, capsys, shadow, "node 'sh'", "graph input 'x'")
    shadow_init = make_model([helper.make_node("Relu", ["x"], ["b"], name="shi"), helper.make_node("Add", ["b", "x"], ["y"])],
                             [vi("x", [2])], [vi("y", [2])], [init("b", np.zeros(2, np.float32))])
    compile_refused(tmp_path, capsys, shadow_init, "node 'shi'", "initializer 'b'")
    dup_init = make_model([helper.make_node("Add", ["x", "b"], ["y"])], [vi("x", [2])], [vi("y", [2])],
                          [init("b", np.zeros(2, np.float32)), init("b", np.ones(2, np.float32))])
    compile_refused(tmp_path, capsys, dup_init, "initializer 'b'", "twice")
    dup_out = make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", [2]), vi("y", [2])])
    compile_refused(tmp_path, capsys, dup_out, "graph output 'y'", "twice")


def test_zero_nodes(tmp_path, capsys):
    g = helper.make_graph([], "empty", [], [])
    compile_refused(tmp_path, capsys, helper.make_model(g), "no graph")
    no_out = make_model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [])
    compile_refused(tmp_path, capsys, no_out, "no outputs")


def test_declared_output_contradicts_inference(tmp_path, capsys):
    compile_refused(tmp_path, capsys, relu_model(out_shape=[2, 4]), "graph output 'y'", "[2, 4]", "[2, 3]")
    compile_refused(tmp_path, capsys, relu_model(out_shape=[2, 3, 1]), "graph output 'y'", "[2, 3, 1]")
    m = relu_model(out_shape=[2, 3])
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.INT64
    compile_refused(tmp_path, capsys, m, "graph output 'y'", "int64", "float32")


def test_versions(tmp_path, capsys):
    m = relu_model(out_shape=[2, 3])
    m.ir_version = 99
    compile_refused(tmp_path, capsys, m, "ir_version 99")
    for opset in (1, 99):
        m = relu_model(out_shape=[2, 3])
        m.opset_import[0].version = opset
        compile_refused(tmp_path, capsys, m, f"opset {opset}")


# -- shapes and data ------------------------------------------------------------------------------
def test_negative_dims(tmp_path, capsys):
    compile_refused(tmp_path, capsys, relu_model((2, -3)), "input 'x'", "dimension 1", "negative")
    sym = make_model([helper.make_node("Relu", ["x"], ["y"])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])], [vi("y", None)])
    compile_refused(tmp_path, capsys, sym, "input 'x'", "dimension 0", "negative", extra=["--input-shape", "x=-2,3"])


def test_symbolic_without_input_shape(tmp_path, capsys):
    sym = make_model([helper.make_node("Relu", ["x"], ["y"])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])], [vi("y", None)])
    compile_refused(tmp_path, capsys, sym, "input 'x'", "'batch'", "--input-shape")


@pytest.mark.parametrize("shape", [[1 << 20, 1 << 20], [1 << 31, 1 << 31], [1 << 40, 1 << 40], [1 << 29, 5]])
def test_huge_dims_refused(tmp_path, capsys, shape):
    compile_refused(tmp_path, capsys, relu_model(shape), "input 'x'", "elements", "int32_t")


def test_huge_input_shape_flag_and_huge_intermediate(tmp_path, capsys):
    sym = make_model([helper.make_node("Relu", ["x"], ["y"])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])], [vi("y", None)])
    compile_refused(tmp_path, capsys, sym, "input 'x'", "int32_t", extra=["--input-shape", "x=1099511627776,4"])
    # each input fits, their broadcast sum does not: the node and its output are named
    big = make_model([helper.make_node("Add", ["a", "b"], ["y"], name="outer")],
                     [vi("a", [1 << 16, 1]), vi("b", [1, 1 << 16])], [vi("y", None)])
    compile_refused(tmp_path, capsys, big, "node 'outer'", "output 'y'", "int32_t")


def test_initializer_wrong_byte_length(tmp_path, capsys):
    t = numpy_helper.from_array(np.arange(3, dtype=np.float32), "b")
    t.raw_data = t.raw_data[:7]
    m = make_model([helper.make_node("Add", ["x", "b"], ["y"])], [vi("x", [3])], [vi("y", [3])], [t])
    compile_refused(tmp_path, capsys, m, "initializer 'b'")


# -- external data ----------------------------------------------------------------------------------
def external_model(location):
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "24")):
        e = t.external_data.add()
        e.key, e.value = k, v
    return make_model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])], [t])


# -- options ----------------------------------------------------------------------------------------------
def test_output_is_the_input_model(tmp_path, capsys):
    p = save(tmp_path, add_model())
    before = p.read_bytes()
    refused(capsys, ["compile", p, "-o", p], "is the input model")
    assert p.read_bytes() == before


def test_model_name_too_long(tmp_path, capsys):
    p = save(tmp_path, add_model())
    out = tmp_path / "o.tar"
    refused(capsys, ["compile", p, "-o", out, "--model-name", "m" * 247], "--model-name", "255", out_path=out)
    refused(capsys, ["compile", p, "-o", out, "--model-name", "x" * 10000], "--model-name", out_path=out)
    for bad in ("", '"', "/"):
        refused(capsys, ["compile", p, "-o", out, "--model-name", bad], "--model-name", out_path=out)


def test_info_into_closed_pipe(tmp_path, monkeypatch, mlf_bytes):
    """`aot info ... | head`: the reader leaving is not an error worth a traceback."""
    from aot.cli import main
    tar = tmp_path / "m.tar"
    tar.write_bytes(mlf_bytes)

    class ClosedPipe(io.StringIO):
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["info", str(tar)]) == 141
    assert main(["info", str(tar), "--memory"]) == 141
    monkeypatch.undo()
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run(f"{sys.executable} -m aot info {tar} --json | head -c 1", shell=True,
                       capture_output=True, text=True, env=env)
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr


# -- hostile names: they compile and run correctly ---------------------------------------------------------
HOSTILE = ["*/", '"', "a\nb", "#define X 1", "%s%n", "int", "return", "x" * 10000, "x" * 9999 + "y", "in:0",
           "in.0", "WORKSPACE", "", " ", "é∂", "__LINE__", "a\\", "a??/"]


# -- long chains (item 1) ----------------------------------------------------------------------------------------
def chain_model(n, ops=("Relu", "Neg", "Abs", "Sigmoid")):
    nodes, prev = [], "x"
    for k in range(n):
        out = "y" if k == n - 1 else f"t{k}"
        nodes.append(helper.make_node(ops[k % len(ops)], [prev], [out], name=f"n{k}"))
        prev = out
    return make_model(nodes, [vi("x", [4, 8])], [vi("y", [4, 8])])


# -- MLF tarballs ----------------------------------------------------------------------------------------
def mlf_refused(tmp_path, capsys, data, *needles):
    """`aot info` says invalid (exit 2) and `aot run` refuses (exit 2), naming the problem."""
    tar = tmp_path / "bad.tar"
    tar.write_bytes(data)
    np.savez(tmp_path / "in.npz", x=np.zeros((2, 3), np.float32))
    rc, out, err = cli(capsys, "info", tar)
    assert rc == 2 and "Traceback" not in err, (rc, out, err)
    text = out + err
    assert "valid" not in out.replace("invalid", ""), out
    for n in needles:
        assert n in text, (n, text)
    out_npz = tmp_path / "o.npz"
    text = refused(capsys, ["run", tar, "--inputs", tmp_path / "in.npz", "--outputs", out_npz], out_path=out_npz)
    for n in needles:
        assert n in text, (n, text)


def test_mlf_valid_baseline(tmp_path, capsys, mlf_bytes):
    tar = tmp_path / "m.tar"
    tar.write_bytes(rebuild_tar(mlf_bytes))     # the rebuild itself keeps it valid
    assert cli(capsys, "info", tar)[0] == 0


@pytest.mark.parametrize("kind,needle", [
    (("../evil.c", tarfile.REGTYPE, b"int x;"), "escapes"),
    (("/etc/evil.c", tarfile.REGTYPE, b"int x;"), "escapes"),
    (("./codegen/host/src/link.c", tarfile.SYMTYPE, b"", "/etc/passwd"), "symbolic link"),
    (("./codegen/host/src/hard.c", tarfile.LNKTYPE, b"", "./metadata.json"), "hard link"),
    (("./dev0", tarfile.CHRTYPE, b""), "device"),
    (("./fifo", tarfile.FIFOTYPE, b""), "FIFO"),
])
def test_mlf_hostile_members(tmp_path, capsys, mlf_bytes, kind, needle):
    name, typ, data, *link = kind
    bad = rebuild_tar(mlf_bytes, add=[member(name, typ, data, link[0] if link else "")])
    mlf_refused(tmp_path, capsys, bad, needle, name.lstrip("."))


def test_mlf_truncated(tmp_path, capsys, mlf_bytes):
    with tarfile.open(fileobj=io.BytesIO(mlf_bytes)) as t:
        last = t.getmembers()[-1]
    end = last.offset_data + last.size          # after it only end-of-archive zeros
    for cut in (100, 600, len(mlf_bytes) // 3, end - 10, end + 20):
        tar = tmp_path / "cut.tar"
        tar.write_bytes(mlf_bytes[:cut])
        refused(capsys, ["info", tar], "cut.tar")
        np.savez(tmp_path / "in.npz", x=np.zeros((2, 3), np.float32))
        refused(capsys, ["run", tar, "--inputs", tmp_path / "in.npz"], "cut.tar")


def test_mlf_sparse_huge_member(tmp_path, capsys, mlf_bytes):
    """A small tar claiming a multi-GB (sparse) member is refused before anything is read."""
    info = tarfile.TarInfo("./codegen/host/src/huge.c")
    info.size = 3 << 30
    data = rebuild_tar(mlf_bytes)
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        last = t.getmembers()[-1]
        end = last.offset_data + (last.size + 511) // 512 * 512    # where the end-of-archive blocks start
    tar = tmp_path / "huge.tar"
    tar.write_bytes(data[:end] + info.tobuf(tarfile.GNU_FORMAT) + b"\0" * 4096)
    assert tar.stat().st_size < 200_000
    text = refused(capsys, ["info", tar], "huge.c")
    assert "bytes" in text


def _set(path, value):
    def edit(meta):
        mod = meta["modules"]["default"]
        obj = mod
        keys = path.split(".")
        for k in keys[:-1]:
            obj = obj[int(k)] if isinstance(obj, list) else obj[k]
        last = int(keys[-1]) if isinstance(obj, list) else keys[-1]
        if value is KeyError:
            del obj[last]
        else:
            obj[last] = value
    return edit


TAMPER = [
    ("aot.inputs.0.c_name", "x; } evil; struct { void* x", "c_name"),
    ("aot.inputs.0.c_name", 7, "c_name"),
    ("aot.inputs.0.c_name", "int", "c_name"),
    ("aot.outputs.0.c_name", "x", "collides"),
    ("aot.inputs.0.dtype", "float128", "dtype"),
    ("aot.inputs.0.dtype", None, "dtype"),
    ("aot.inputs.0.shape", [2, -3], "shape"),
    ("aot.inputs.0.shape", [2, 0], "TVMGEN_DEFAULT_X_SIZE"),
    ("aot.inputs.0.shape", "2,3", "shape"),
    ("aot.inputs.0.shape", [2, 3.5], "shape"),
    ("aot.inputs.0.shape", [4, 3], "TVMGEN_DEFAULT_X_SIZE"),
    ("aot.inputs.0.shape", [1 << 20, 1 << 20], "shape"),
    ("aot.inputs.0.name", None, "name"),
    ("aot.inputs.0", "x", "aot.inputs[0]"),
    ("aot.inputs", {"x": 1}, "aot.inputs"),
    ("aot.outputs", [], "aot.outputs"),
    ("aot.sources", ["/etc/passwd"], "/etc/passwd"),
    ("aot.sources", ["codegen/host/src/../../../etc/passwd.c"], "passwd"),
    ("aot.sources", ["codegen/host/src/missing.c"], "missing.c"),
    ("aot.sources", "codegen/host/src/default_lib0.c", "aot.sources"),
    ("aot.workspace_pools", [{"name": "p", "c": "a b", "size": 4}], "workspace_pools"),
    ("aot.workspace_pools", [{"name": "p", "c": "pool", "size": 4}], "POOL_SIZE"),
    ("aot.workspace_tensors", [{"name": "t"}], "workspace_tensors"),
    ("aot.use_workspace_io", "yes", "use_workspace_io"),
    ("aot.interface_api", "cpp", "interface_api"),
    ("aot.io_names", 1, "io_names"),
    ("aot", KeyError, "'aot'"),
    ("aot.version", 1, "aot.version is 1, this aot reads version 2"),
    ("aot.version", KeyError, "compile the model again"),
    ("memory.functions.main.0.workspace_size_bytes", -1, "workspace_size_bytes"),
    ("memory.functions.main.0.workspace_size_bytes", "big", "workspace_size_bytes"),
    ("memory.functions.main.0.inputs", {"x": {"dtype": "float32", "size": 99}}, "99"),
    ("memory.functions.main.0", KeyError, "main"),
    ("memory.functions.operator_functions", [{"function_name": "f(); system"}], "operator_functions"),
    ("executors", ["graph"], "executors"),
    ("target", "c", "target"),
]


@pytest.mark.parametrize("path,value,needle", TAMPER, ids=[f"{p}={str(v)[:20]}" for p, v, _ in TAMPER])
def test_mlf_tampered_metadata(tmp_path, capsys, mlf_bytes, path, value, needle):
    mlf_refused(tmp_path, capsys, rebuild_tar(mlf_bytes, _set(path, value)), needle)


@pytest.mark.parametrize("edit,needle", [
    (lambda m: m.update(version=8), "version"),
    (lambda m: m.update(modules={}), "one module"),
    (lambda m: m.update(modules={"a/../b": {}}), "module name"),
    (lambda m: m.update(modules=[1]), "one module"),
    (lambda m: m.clear() or m.update(version=7, modules={"default": 3}), "not an object"),
])
def test_mlf_tampered_top_level(tmp_path, capsys, mlf_bytes, edit, needle):
    mlf_refused(tmp_path, capsys, rebuild_tar(mlf_bytes, edit), needle)


def test_mlf_metadata_not_json_or_not_object(tmp_path, capsys, mlf_bytes):
    for raw in (b"{not json", b"[1, 2]", b"null", b"[" * 100000):
        src = tarfile.open(fileobj=io.BytesIO(mlf_bytes))
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as out:
            for m in src.getmembers():
                data = raw if m.name == "./metadata.json" else (src.extractfile(m).read() if m.isfile() else None)
                if data is not None:
                    m.size = len(data)
                out.addfile(m, io.BytesIO(data) if data is not None else None)
        tar = tmp_path / "j.tar"
        tar.write_bytes(buf.getvalue())
        rc, out, err = cli(capsys, "info", tar)
        assert rc == 2 and "Traceback" not in err and "metadata" in out + err, (raw[:10], out, err)


def test_mlf_project_and_size_validate_first(tmp_path, capsys, mlf_bytes):
    bad = tmp_path / "bad.tar"
    bad.write_bytes(rebuild_tar(mlf_bytes, _set("aot.sources", ["/etc/passwd"])))
    refused(capsys, ["project", bad, "-o", tmp_path / "proj", "--board", "qemu-cortex-m4"], "/etc/passwd",
            out_path=tmp_path / "proj")
    import aot
    with pytest.raises(aot.AotError, match="passwd"):
        aot.run(bad.read_bytes(), {"x": np.zeros((2, 3), np.float32)})


# -- the access verifier and int32_t overflow (item 2) ------------------------------------------------------
def test_verifier_does_not_prove_overflowing_indices():
    """An index whose int32_t terms can overflow is not 'proven in bounds', even when the exact
    (unbounded) arithmetic says it is: in C it wraps."""
    from aot.tir.expr import Load, Var
    from aot.tir.stmt import Buffer, For, PrimFunc, Store
    from aot.tir.verify import verify_accesses
    i = Var("i")
    src, dst = Buffer("src", "float32", (8,)), Buffer("dst", "float32", (8,))
    # (i * 2^30 * 4) / 2^32 is i in exact arithmetic, and overflows int32_t for i >= 1
    wraps = ((i * (1 << 30)) * 4) // (1 << 32)
    rep = verify_accesses(PrimFunc("f", [src, dst], For(i, 0, 8, Store(dst, i, Load(src, wraps))), 1))
    assert rep.unproven == 1 and rep.checked == 1
    big = Buffer("big", "float32", (1 << 20, 1 << 12))        # more elements than int32_t counts
    rep = verify_accesses(PrimFunc("g", [big, dst], For(i, 0, 8, Store(dst, i, Load(big, i))), 1))
    assert rep.unproven == 1 and rep.checked == 1


def test_end_to_end_without_traceback(tmp_path, mlf_bytes):
    """The same refusals through `python -m aot`: exit 2, one error line, no traceback."""
    env = dict(os.environ, PYTHONPATH=ROOT)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "aot", *map(str, args)], capture_output=True, text=True, env=env)
    bad = tmp_path / "bad.tar"
    bad.write_bytes(rebuild_tar(mlf_bytes, add=[member("./codegen/host/src/l.c", tarfile.SYMTYPE, linkname="/etc/passwd")]))
    np.savez(tmp_path / "in.npz", x=np.zeros((2, 3), np.float32))
    huge = save(tmp_path, relu_model((1 << 40, 1 << 40)))
    for r, needle in [(run("run", bad, "--inputs", tmp_path / "in.npz"), "symbolic link"),
                      (run("info", bad), "symbolic link"),
                      (run("compile", huge, "-o", tmp_path / "h.tar"), "int32_t")]:
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert needle in r.stdout + r.stderr
    assert not (tmp_path / "h.tar").exists()


def test_internal_error_is_exit_1_and_blames_aot(tmp_path, capsys, monkeypatch):
    """A broken invariant of aot's own IRs (here the planner's placement check) is an InternalError:
    exit 1 and "please report", no traceback, no output file -- never the user's exit 2."""
    import aot.memory_plan
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["t"], name="mm1"),
             helper.make_node("MatMul", ["t", "w2"], ["y"], name="mm2")]
    m = make_model(nodes, [vi("x", [2, 3])], [vi("y", None)],
                   [init("w1", np.ones((3, 4), np.float32)), init("w2", np.ones((4, 2), np.float32))])
    p, out = save(tmp_path, m), tmp_path / "out.tar"
    assert cli(capsys, "compile", p, "-o", out)[0] == 0 and os.path.exists(out)
    os.remove(out)
    # a placement bug: every buffer one byte off its alignment
    monkeypatch.setattr(aot.memory_plan, "_place", lambda order, conflicts, align, *clusters: ({i: 1 for i, _ in order}, 64))
    rc, _, err = cli(capsys, "compile", p, "-o", out)
    assert rc == 1 and err.startswith("internal error (please report): planner: "), (rc, err)
    assert "Traceback" not in err and not os.path.exists(out)


def test_ir_invariants_hold_under_python_O():
    """The loop IR's constructor checks raise InternalError, which `python -O` keeps (asserts go)."""
    code = ("from aot.tir.expr import Bin, Const\nfrom aot.errors import InternalError\n"
            "try:\n    Bin('pow', Const(1, 'int32'), Const(2, 'int32'))\nexcept InternalError as e:\n    print('ok', e)\n")
    r = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.stdout.startswith("ok unknown binary op 'pow'"), r.stdout + r.stderr
