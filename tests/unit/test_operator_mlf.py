"""export_model_library_format of what aot.build made from one function: TVM's operator layout
(python/tvm/micro/model_library_format.py's operator branch, as its MLF tests read it):
metadata.json with no "modules" (model_name, style "operator", executors [], memory keyed by
function with one row per parameter buffer), src/tir-<device type>.txt holding the TIR as the
module prints, codegen/host/src/lib0.c and lib1.c; a list of operators is refused."""
import io
import json
import tarfile

import numpy as np
import pytest

import aot as tvm
from aot import micro
from mlf import read_mlf, validate


def _add(name="add"):
    A = tvm.te.placeholder((2,), dtype="int8")
    B = tvm.te.placeholder((1,), dtype="int8")
    C = tvm.te.compute(A.shape, lambda i: A[i] + B[0], name="C")
    s = tvm.te.create_schedule(C.op)
    return tvm.build(s, [A, B, C], tvm.target.Target("c"), name=name), (A, B, C)


def _members(path):
    with tarfile.open(path) as t:
        return {m.name: (t.extractfile(m).read() if m.isfile() else None) for m in t.getmembers()}


def test_operator_mlf_has_tvms_operator_layout(tmp_path):
    mod, tensors = _add()
    path = micro.export_model_library_format(mod, tmp_path / "lib.tar")
    files = _members(path)
    meta = json.loads(files["./metadata.json"])
    assert "modules" not in meta
    assert meta["version"] == 7 and meta["model_name"] == "add" and meta["style"] == "operator"
    assert meta["executors"] == [] and meta["target"] == [str(tvm.target.Target("c"))]
    rows = meta["memory"]["add"]
    assert [(r["dtype"], r["shape"], r["size_bytes"]) for r in rows] == [
        (t.dtype, [int(d) for d in t.shape], int(np.prod([int(d) for d in t.shape])) * np.dtype(t.dtype).itemsize)
        for t in tensors]
    assert "./codegen/host/src/lib0.c" in files and "./codegen/host/src/lib1.c" in files
    assert not any(n.startswith("./codegen/host/src/add_") for n in files)
    ((target, ir_mod),) = mod.ir_module_by_target.items()
    assert int(tvm.runtime.ndarray.device(str(target)).device_type) == 1
    assert files["./src/tir-1.txt"].decode() == str(ir_mod)
    # byte-identical for the same function
    again = micro.export_model_library_format(_add()[0], tmp_path / "again.tar")
    assert open(again, "rb").read() == open(path, "rb").read()


def test_a_list_with_an_operator_is_refused_as_tvm_does(tmp_path):
    mod, _ = _add()
    with pytest.raises(RuntimeError, match="^Multiple operator is not supported.$"):
        micro.export_model_library_format([mod, mod], tmp_path / "lib.tar")
    assert not (tmp_path / "lib.tar").exists()


def test_an_operator_mlf_is_named_when_aot_is_asked_to_build_it(tmp_path):
    mod, _ = _add()
    path = micro.export_model_library_format(mod, tmp_path / "lib.tar")
    problems = validate(read_mlf(str(path)))
    assert len(problems) == 1 and "operator MLF" in problems[0] and "'add'" in problems[0]
    # the module's own MLF (what it runs from) is unchanged: one full-model module
    full = read_mlf(io.BytesIO(mod.tar).getvalue())
    assert full.module["style"] == "full-model" and validate(full) == []


def test_a_built_functions_mlf_is_byte_identical_from_run_to_run():
    # src/<mod>.relay printed the PrimFunc's repr, with its statements' object addresses
    import subprocess
    import sys
    code = ("import hashlib, aot as tvm\n"
            "A = tvm.te.placeholder((2,), dtype='int8'); B = tvm.te.placeholder((1,), dtype='int8')\n"
            "C = tvm.te.compute(A.shape, lambda i: A[i] + B[0], name='C')\n"
            "m = tvm.build(tvm.te.create_schedule(C.op), [A, B, C], name='add')\n"
            "print(hashlib.sha256(m.tar).hexdigest())\n")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)}
    assert len(runs) == 1


def test_populate_codegen_dir_writes_each_modules_c_under_tvms_names(tmp_path):
    from aot.micro import model_library_format as mlf_mod
    from aot.relay.backend import Executor, Runtime
    op, _ = _add()
    x = tvm.relay.var("x", shape=(4,), dtype="float32")
    with tvm.transform.PassContext(opt_level=3):
        fac = tvm.relay.build(tvm.IRModule.from_expr(tvm.relay.nn.relu(x)), target="c", executor=Executor("aot"),
                              runtime=Runtime("crt"), mod_name="net")
    mlf_mod._populate_codegen_dir([op], tmp_path / "a")
    mlf_mod._populate_codegen_dir([fac], tmp_path / "b")
    assert sorted(p.name for p in (tmp_path / "a/host/src").iterdir()) == ["lib0.c", "lib1.c"]
    assert sorted(p.name for p in (tmp_path / "b/host/src").iterdir()) == ["net_lib0.c", "net_lib1.c"]
    files = _members(micro.export_model_library_format(op, tmp_path / "op.tar"))
    assert (tmp_path / "a/host/src/lib1.c").read_bytes() == files["./codegen/host/src/lib1.c"]


def test_a_module_of_python_functions_has_no_c_to_export(tmp_path):
    from aot.micro import model_library_format as mlf_mod
    m = tvm.support.FrontendTestModule("f")
    m["f"] = lambda a: a + 1
    assert m(2) == 3 and m.get_function("f")(1) == 2
    # TVM asserts: the module is neither C nor LLVM
    with pytest.raises(AssertionError, match="non-c or non-llvm modules; found: ffi_testing"):
        mlf_mod._populate_codegen_dir([m], tmp_path / "codegen")
    with pytest.raises(micro.UnsupportedInModelLibraryFormatError):
        micro.export_model_library_format(m, tmp_path / "m.tar")
    assert not (tmp_path / "codegen").exists() and not (tmp_path / "m.tar").exists()
