"""An MLF of several modules, as TVM's export_model_library_format writes a list of relay.build
results (its test_multiple_relay_modules_c): metadata "modules" holds each, each module keeps its
<module>_lib*.c, tvmgen_<module>.h, parameters and relay text, the CRT is written once; two
modules of one name are TVM's AssertionError. Each module is checked as an MLF of its own, and
the consumers that build one module refuse the MLF by name unless told which (--module)."""
import io
import json
import tarfile

import numpy as np
import pytest

import aot as tvm
from aot import micro, relay
from aot.cli import main
from aot.errors import AotError
from aot.host import mlf_problems
from aot.relay.backend import Executor, Runtime
from mlf import read_mlf, select_module
from mlf.writer import reseal, write_tar


def _factory(name, k=2.0):
    x = relay.var("x", shape=(4,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.nn.relu(x) * relay.const(np.float32(k)))
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target="c", executor=Executor("aot", {"unpacked-api": True, "interface-api": "c"}),
                           runtime=Runtime("crt"), mod_name=name)


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    path = tmp_path_factory.mktemp("m") / "lib.tar"
    micro.export_model_library_format([_factory("mod1"), _factory("mod2", 3.0)], path)
    return path


def _files(path_or_bytes):
    data = path_or_bytes if isinstance(path_or_bytes, bytes) else open(path_or_bytes, "rb").read()
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        return {m.name[2:]: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def test_two_modules_are_laid_out_as_tvm_lays_them_out(two):
    files = _files(two)
    for mod in ("mod1", "mod2"):
        for f in (f"codegen/host/src/{mod}_lib0.c", f"codegen/host/src/{mod}_lib1.c",
                  f"codegen/host/include/tvmgen_{mod}.h", f"parameters/{mod}.params", f"src/{mod}.relay"):
            assert f in files, f
    meta = json.loads(files["metadata.json"])
    assert meta["version"] == 7 and sorted(meta["modules"]) == ["mod1", "mod2"]
    assert [meta["modules"][m]["model_name"] for m in ("mod1", "mod2")] == ["mod1", "mod2"]
    assert "runtime/include/tvm/runtime/c_runtime_api.h" in files
    assert mlf_problems(read_mlf(str(two))) == []


def test_each_module_is_the_one_it_was_alone(two):
    alone = _factory("mod2", 3.0).tar
    one = select_module(open(two, "rb").read(), "mod2")
    mine, theirs = _files(one), _files(alone)
    # the same members (the Make and CMake fragments, one per module, are left out of a shared MLF)
    assert {p: d for p, d in theirs.items() if p not in ("mlf.mk", "mlf.cmake", "metadata.json")} == \
        {p: d for p, d in mine.items() if p != "metadata.json"}
    assert mlf_problems(read_mlf(one)) == []


def test_a_list_of_one_module_is_that_modules_mlf(tmp_path):
    f = _factory("mod1")
    micro.export_model_library_format([f], tmp_path / "a.tar")
    assert (tmp_path / "a.tar").read_bytes() == f.tar


def test_two_modules_of_one_name_are_refused_as_tvm_refuses_them(tmp_path):
    with pytest.raises(AssertionError, match="Multiple modules should have unique names") as e:
        micro.export_model_library_format([_factory("mod"), _factory("mod", 3.0)], tmp_path / "lib.tar")
    assert isinstance(e.value, AotError) and "'mod'" in str(e.value)
    assert not (tmp_path / "lib.tar").exists()


def test_a_consumer_of_one_module_names_the_modules(two, capsys):
    m = read_mlf(str(two))
    with pytest.raises(AotError, match=r"2 modules \(mod1, mod2\).*--module"):
        m.module_name
    assert m.select("mod2").module_name == "mod2"
    with pytest.raises(AotError, match="no module 'mod3'.*mod1, mod2"):
        m.select("mod3")
    assert main(["info", str(two)]) == 0        # info reads every module; it names them
    assert capsys.readouterr().out == "2 modules (mod1, mod2), MLF version 7, valid; --module NAME for one's details\n"
    assert main(["info", str(two), "--memory"]) == 2
    assert "2 modules (mod1, mod2)" in capsys.readouterr().err
    assert main(["info", str(two), "--module", "mod2"]) == 0
    assert capsys.readouterr().out.startswith("module mod2 ")


def _mutated(two, edit):
    files = _files(two)
    edit(files)
    return read_mlf(write_tar(files))


def test_each_module_is_checked_and_every_member_is_one_modules(two):
    def change_kernel(files):
        files["codegen/host/src/mod2_lib1.c"] += b"\n"
    p = mlf_problems(_mutated(two, change_kernel))
    assert p and all(x.startswith("module 'mod2': ") for x in p) and "mod2_lib1.c differs" in p[0]

    def stray(files):
        files["codegen/host/src/other_lib0.c"] = b"int x;\n"
    assert "member ./codegen/host/src/other_lib0.c is not one aot wrote (no module's aot.digests lists it)" in \
        mlf_problems(_mutated(two, stray))

    def claim(files):           # mod1 claims mod2's kernel file as well
        meta = json.loads(files["metadata.json"])
        meta["modules"]["mod1"]["aot"]["digests"]["codegen/host/src/mod2_lib1.c"] = \
            meta["modules"]["mod2"]["aot"]["digests"]["codegen/host/src/mod2_lib1.c"]
        files["metadata.json"] = json.dumps(meta).encode()
    assert any("listed by modules 'mod1' and 'mod2'" in x for x in mlf_problems(_mutated(two, claim)))


def test_reseal_of_one_module_still_reads(two):
    # an MLF of one module, edited and resealed, is what it was: the shared-MLF path is not taken
    one = select_module(open(two, "rb").read(), "mod1")
    assert mlf_problems(read_mlf(reseal(one))) == []


def test_an_mlf_of_too_many_modules_is_refused_before_each_is_checked(two):
    from mlf.schema import MAX_MODULES

    def many(files):
        meta = json.loads(files["metadata.json"])
        info = meta["modules"]["mod1"]
        meta["modules"] = {f"m{k}": info for k in range(MAX_MODULES + 1)}
        files["metadata.json"] = json.dumps(meta).encode()
    assert mlf_problems(_mutated(two, many)) == [f"metadata has {MAX_MODULES + 1:,} modules, more than any MLF "
                                                 f"holds (limit {MAX_MODULES})"]
